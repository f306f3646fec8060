"""Which phase of a training step raised this process's peak resident memory.

Where a step's memory goes is the first question when a run does not fit a machine: the
rollout (engines, env clones, transcripts) or the update (the learner's activations). The
kernel keeps each process's peak resident set (``VmHWM``, the ``ru_maxrss`` of
``resource.getrusage``); reading it at the end of each phase shows which phase raised it.
The peak is not reset between phases: Linux could (``/proc/self/clear_refs``), but that would
also rewrite the ``ru_maxrss`` every outside tool reads (``/usr/bin/time``,
``benchmarks.footprint``). Memory a phase frees mostly stays with the process (the allocator
keeps it for the next step), so a later phase's reading is never below what the process holds.

Only this process is measured: a Ray worker's or a vLLM engine's own process is not in it
(``benchmarks.footprint`` measures the whole process tree from outside).
"""

from __future__ import annotations

import resource
import sys

__all__ = ["PEAK_PREFIX", "PhasePeaks", "peak_rss_mb"]

PEAK_PREFIX = "memory/peak_mb/"


def peak_rss_mb() -> float:
    """This process's peak resident set since it started, in MB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024  # bytes on macOS, KiB on Linux


class PhasePeaks:
    """``end(name)`` after each phase of a step; ``metrics()`` gives ``memory/peak_mb/<phase>``:
    the process's peak since it started, read when that phase ended."""

    def __init__(self) -> None:
        self.peaks: dict[str, float] = {}

    def end(self, phase: str) -> None:
        self.peaks[phase] = peak_rss_mb()

    def metrics(self) -> dict[str, float]:
        return {f"{PEAK_PREFIX}{phase}": round(mb, 1) for phase, mb in self.peaks.items()}
