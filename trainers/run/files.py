"""The files of a run directory and how they are written: their names, JSON lines that
survive a kill, atomic rewrites. The bottom of ``trainers.run``: it imports nothing of it.

JSONL metric values: nested mappings are flattened with ``"/"`` (``{"reward": {"planner": 0.5}}``
becomes ``"reward/planner": 0.5``); numpy (and other 0-d array) scalars become Python scalars;
non-finite floats are written as ``null`` (JSON has no NaN; TensorBoard still gets the NaN, a
diverging loss should show there); everything that is not a number, bool, string or ``None``
(lists, arrays, arbitrary objects) is dropped. A ``"step"`` key inside the metrics is dropped too:
the ``step`` argument is the record's step.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "METRICS_FILE",
    "EVAL_FILE",
    "TEST_FILE",
    "TENSORBOARD_DIR",
    "PLOTS_DIR",
    "TRANSCRIPTS_DIR",
    "Scalar",
    "atomic_write_text",
    "flatten_metrics",
    "json_value",
    "read_jsonl",
    "trained_seconds",
    "truncate_jsonl",
]

METRICS_FILE = "metrics.jsonl"
EVAL_FILE = "eval.jsonl"
TEST_FILE = "test.jsonl"
TENSORBOARD_DIR = "tensorboard"
PLOTS_DIR = "plots"
TRANSCRIPTS_DIR = "transcripts"

_DROP = object()  # "not loggable" marker (None is a loggable value)

Scalar = bool | int | float | str | None


def flatten_metrics(metrics: Mapping[str, Any], prefix: str = "") -> dict[str, Scalar]:
    """Flattens nested mappings into ``"a/b"`` keys and keeps only loggable scalars.

    Args:
        metrics: Metric values, possibly nested mappings.
        prefix: Key prefix of this level (used by the recursion).

    Returns:
        Keys to Python ``bool``/``int``/``float``/``str``/``None`` values. Numpy scalars and 0-d
        arrays/tensors are converted with ``.item()``; non-finite floats are kept (see
        :func:`json_value`); other values (lists, arrays, objects) are dropped.
    """
    flat: dict[str, Scalar] = {}
    for key, value in metrics.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten_metrics(value, prefix=f"{name}/"))
            continue
        scalar = _to_scalar(value)
        if scalar is not _DROP:
            flat[name] = scalar
    return flat


def _to_scalar(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    elif getattr(value, "shape", None) == () and hasattr(value, "item"):
        # 0-d numpy arrays and torch tensors (torch.Size(()) == ()).
        value = value.item()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return _DROP


def json_value(value: Scalar) -> Scalar:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _parse_lines(text: str) -> tuple[list[dict[str, Any]], list[int]]:
    """Parses JSONL text; returns the JSON objects and the 1-based numbers of the bad lines."""
    records: list[dict[str, Any]] = []
    bad: list[int] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            bad.append(number)
            continue
        if isinstance(record, dict):
            records.append(record)
        else:
            bad.append(number)
    return records, bad


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Reads a JSONL file of objects, skipping lines that are not valid JSON objects.

    A corrupt last line is what a killed run leaves behind and is skipped silently; a corrupt
    line anywhere else is skipped with a ``RuntimeWarning``, since nothing here writes one.

    Args:
        path: The file. A missing file reads as no records.

    Returns:
        The records, in file order.
    """
    path = Path(path)
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8", errors="replace")
    records, bad = _parse_lines(text)
    last = len(text.splitlines())
    inner = [number for number in bad if number != last]
    if inner:
        warnings.warn(
            f"{path}: skipped {len(inner)} corrupt line(s) (line {inner[0]} first)",
            RuntimeWarning,
            stacklevel=2,
        )
    return records


def _umask() -> int:
    """This process's umask, read without changing it (``os.umask`` can only set it, and
    setting it back and forth races with other threads creating files)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # no /proc (not Linux): the only portable way, briefly
    os.umask(mask)
    return mask


def atomic_write_text(path: Path, text: str) -> None:
    """Writes ``text`` to a temp file in ``path``'s dir, fsyncs it and renames it over ``path``.

    The file gets the permissions a plain ``open(path, "w")`` would give it (0666 less the
    umask), not the temp file's private 0600: a run's report and logs are for colleagues and
    web servers to read as much as any other output."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace", newline="\n") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def truncate_jsonl(path: Path, max_step: int) -> None:
    """Keeps the records with ``step <= max_step`` (and drops corrupt lines), atomically."""
    if not path.exists():
        return
    records, _ = _parse_lines(path.read_text(encoding="utf-8", errors="replace"))
    kept = [r for r in records if isinstance(r.get("step"), int) and r["step"] <= max_step]
    atomic_write_text(path, "".join(json.dumps(r, allow_nan=False) + "\n" for r in kept))


def trained_seconds(run_dir: str | Path, step: int) -> float:
    """Training time (summed ``time/step``) of a run's logged steps up to ``step``: where a
    resumed run's clock starts."""
    records = read_jsonl(Path(run_dir) / METRICS_FILE)
    return float(sum(r.get("time/step", 0.0) for r in records if r["step"] <= step))
