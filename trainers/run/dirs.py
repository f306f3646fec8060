"""Run directories shared by the training command and the warm start: making a fresh one,
and reading a saved config back for ``--resume``."""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from trainers.cli import config_from_dict
from trainers.config import ConfigError
from trainers.run.lock import LOCK_FILE

__all__ = ["check_writable_dir", "new_run_dir", "load_saved_config"]

_Config = TypeVar("_Config")


def _not_writable(path: Path, err: OSError) -> str:
    """Why ``path`` could not be made or written, in words: the ancestor that is a file, or
    the system's reason."""
    reason = err.strerror or str(err)
    try:
        existing = next(parent for parent in (path, *path.parents) if parent.exists())
    except (OSError, StopIteration):  # an ancestor we may not even look at
        return reason
    if not existing.is_dir():
        return f"{existing} is a file, not a directory"
    if existing != path:
        return f"cannot create directories in {existing} ({reason})"
    return f"cannot write files in it ({reason})"


def check_writable_dir(path: str | Path, option: str) -> None:
    """Create directory ``path`` (and its parents) if needed and write and delete a probe file
    there, so that a command that will write into it fails at once, not after loading a model.

    Raises:
        ConfigError: It cannot be created or written; names ``option`` and the fix.
    """
    directory = Path(path).expanduser()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        handle, probe = tempfile.mkstemp(prefix=".teamgym-write-probe-", dir=directory)
        os.close(handle)
        os.unlink(probe)
    except OSError as err:
        raise ConfigError(
            f"{option} {path}: {_not_writable(directory, err)}; pass {option} a directory you can write to"
        ) from None


def new_run_dir(output_dir: str | Path, run_name: str | None, stem: str) -> Path:
    """``output_dir / run_name`` (None: ``<stem>-<date>-<time>``), created; refuses a
    non-empty one (a run would be overwritten).

    Raises:
        ConfigError: The directory holds files already (names ``--run-name`` and ``--resume``),
            or it cannot be created.
    """
    name = run_name or f"{stem.replace('/', '_')}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    run_dir = Path(output_dir) / name
    # The writer lock alone (a run that failed before writing anything) is no run to protect.
    if run_dir.exists() and any(p.name != LOCK_FILE for p in run_dir.iterdir()):
        raise ConfigError(
            f"run directory {run_dir} exists and is not empty; pass --run-name or --resume {run_dir}"
        )
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError(
            f"cannot create run directory {run_dir}: {_not_writable(run_dir, err)}; "
            "pass --output-dir a directory you can write to (and --run-name a plain name)"
        ) from None
    return run_dir


def load_saved_config(
    cls: type[_Config],
    run_dir: str | Path,
    overrides: Mapping[str, Any] | None,
    resumable: frozenset[str],
    defaults: Mapping[str, Any] | None = None,
) -> _Config:
    """The ``cls`` config saved in ``run_dir/config.json`` with the overrides a resumed run may
    change (``resumable``), and ``resume`` set. ``defaults`` fill fields the saved file lacks
    (a run saved before they existed keeps the behaviour it had).

    Raises:
        ConfigError: No config.json there, or an override of a field a resume cannot change.
    """
    path = Path(run_dir) / "config.json"
    if not path.is_file():
        raise ConfigError(f"resume={str(run_dir)!r}: no config.json there; pass the run directory of a run")
    saved = config_from_dict(cls, {**(defaults or {}), **json.loads(path.read_text())})
    overrides = dict(overrides or {})
    changed = sorted(
        name for name, value in overrides.items() if name not in resumable and value != getattr(saved, name)
    )
    if changed:
        raise ConfigError(
            f"a resumed run keeps its config; cannot change {changed} (only {sorted(resumable)}). "
            "Start a new run instead (drop --resume)."
        )
    allowed = {k: v for k, v in overrides.items() if k in resumable}
    return dataclasses.replace(saved, **{**allowed, "resume": str(run_dir)})
