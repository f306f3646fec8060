"""Which phase of a training step raised this process's peak resident memory.

Where a step's memory goes is the first question when a run does not fit a machine: the
rollout (engines, env clones, transcripts) or the update (the learner's activations). The
kernel keeps each process's peak resident set (``VmHWM``); reading it at the end of each
phase shows which phase raised it. The peak is not reset between phases: Linux could
(``/proc/self/clear_refs``), but that would also rewrite the ``ru_maxrss`` outside tools read
(``/usr/bin/time``, ``benchmarks.footprint``). Memory a phase frees mostly stays with the
process (the allocator keeps it for the next step), so a later phase's reading is never below
what the process holds.

Only this process is measured: a Ray worker's or a vLLM engine's own process is not in it
(``benchmarks.footprint`` measures the whole process tree from outside).
"""

from __future__ import annotations

import resource
import sys
from pathlib import Path

__all__ = ["PEAK_PREFIX", "PhasePeaks", "peak_rss_mb"]

PEAK_PREFIX = "memory/peak_mb/"
_STATUS = Path("/proc/self/status")


def peak_rss_mb() -> float:
    """This process's peak resident set since it started, in MB.

    Linux: ``VmHWM`` of ``/proc/self/status``, the high-water mark of this program's own memory.
    Not ``ru_maxrss``: the kernel carries that across ``exec``, so a command started from a
    large process (a test worker, a notebook) would report its parent's size."""
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    except (OSError, ValueError, IndexError):
        pass
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
