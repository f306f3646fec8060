"""Remembered sandbox runs: an env step that runs a program can have its run started earlier,
together with the runs of its sibling candidates, on a process-wide ``SandboxPool``.

Why: in AT-GRPO's tree sampling every tool turn is K candidate programs on K clones of one
env, and a training step plays many tasks at once. Stepping the clones one after another
would run those programs one at a time. Instead the rollout hands the programs of a whole
turn to ``prefetch`` (every candidate of every live task), which runs the distinct ones
concurrently; each env step then finds its result with ``run_remembered`` and runs nothing.
Identical programs on identical inputs (K candidates that agree, a program that solves every
board run on the same board again) run once.

A result is remembered by the whole job (code, stdin, limits, files), at most
``MAX_REMEMBERED`` of them, the oldest forgotten first. A program whose output changes from
run to run (it reads the clock or an unseeded random stream) gives the first result it gave
for the rest of the process: for an env that is what makes a turn replayable.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Iterable

from .jobs import ExecResult, SandboxJob

__all__ = ["MAX_REMEMBERED", "prefetch", "run_remembered", "remembered_stats", "forget_all"]

MAX_REMEMBERED = 4096

_results: OrderedDict[SandboxJob, ExecResult] = OrderedDict()
_counts = {"runs": 0, "reused": 0, "seconds": 0.0}
_lock = threading.Lock()
_pool = None  # SandboxPool, made on first use (one worker per allotted CPU)


def _shared_pool():
    global _pool
    if _pool is None:
        from . import SandboxPool  # here: the package's __init__ imports this module's users

        _pool = SandboxPool()
    return _pool


def _remember(job: SandboxJob, result: ExecResult) -> None:
    with _lock:
        _results[job] = result
        _results.move_to_end(job)
        while len(_results) > MAX_REMEMBERED:
            _results.popitem(last=False)


def _recall(job: SandboxJob) -> ExecResult | None:
    with _lock:
        result = _results.get(job)
        if result is not None:
            _results.move_to_end(job)
            _counts["reused"] += 1
        return result


def _run_all(jobs: list[SandboxJob]) -> list[ExecResult]:
    started = time.perf_counter()
    results = _shared_pool().map(jobs)
    with _lock:
        _counts["runs"] += len(jobs)
        _counts["seconds"] += time.perf_counter() - started
    for job, result in zip(jobs, results, strict=True):
        _remember(job, result)
    return results


def prefetch(jobs: Iterable[SandboxJob]) -> int:
    """Run the distinct jobs not yet remembered, concurrently, and remember their results.
    Returns how many ran."""
    with _lock:
        todo = list(dict.fromkeys(job for job in jobs if job not in _results))
    if todo:
        _run_all(todo)
    return len(todo)


def run_remembered(job: SandboxJob) -> ExecResult:
    """The result of ``job``: remembered from an earlier run or ``prefetch``, else run now."""
    result = _recall(job)
    return result if result is not None else _run_all([job])[0]


def remembered_stats() -> dict[str, float]:
    """Runs made, lookups answered from memory, and the wall seconds the runs took (summed over
    ``prefetch`` calls, so concurrent runs count once)."""
    with _lock:
        return dict(_counts)


def forget_all() -> None:
    """Drop every remembered result (tests; a program whose environment changed)."""
    with _lock:
        _results.clear()
