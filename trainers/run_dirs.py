"""Run directories shared by the training command and the warm start: making a fresh one,
and reading a saved config back for ``--resume``."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from trainers.cli import config_from_dict
from trainers.config import ConfigError

__all__ = ["new_run_dir", "load_saved_config"]

_Config = TypeVar("_Config")


def new_run_dir(output_dir: str | Path, run_name: str | None, stem: str) -> Path:
    """``output_dir / run_name`` (None: ``<stem>-<date>-<time>``), created; refuses a
    non-empty one (a run would be overwritten).

    Raises:
        ConfigError: The directory holds files already; names ``--run-name`` and ``--resume``.
    """
    name = run_name or f"{stem.replace('/', '_')}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    run_dir = Path(output_dir) / name
    if run_dir.exists() and any(run_dir.iterdir()):
        raise ConfigError(
            f"run directory {run_dir} exists and is not empty; pass --run-name or --resume {run_dir}"
        )
    run_dir.mkdir(parents=True, exist_ok=True)
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
