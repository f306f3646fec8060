"""How the machine spent its CPU time during a training step (``machine/*`` in metrics.jsonl).

Equal-wall-time comparisons (``benchmarks.learning``, ``benchmarks.selfplay``) assume the
machine runs at one speed. A shared or virtual machine does not always: on this project's 2-core
VM one arm's cell generated 8-14 tokens/s where the arm before it, on the same rollouts, made
17-21. These readings say afterwards where a slow step's time went: the machine-wide shares of
CPU time spent in user code, in the kernel, waiting for disk, idle, and stolen by the hypervisor
(Linux's ``/proc/stat``), this process's share of the machine's CPUs, and its major page faults
(pages read back from disk, e.g. model weights the kernel had evicted). A hypervisor that slows
the whole VM shows in none of them (the guest sees its CPUs busy, only slower): there,
``tokens_per_s`` falls while these stay put.

Only this process is counted in the process share and the page faults: a Ray worker's or a
vLLM engine's own process is not; the machine-wide shares include everything.
"""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path

__all__ = ["MACHINE_PREFIX", "MachineLoad"]

MACHINE_PREFIX = "machine/"
_STAT = Path("/proc/stat")
# /proc/stat's aggregate "cpu" line: user nice system idle iowait irq softirq steal (jiffies)
_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def _cpu_times() -> dict[str, int] | None:
    """The machine's summed CPU times by kind since boot, or None where there is no /proc/stat."""
    try:
        first = _STAT.read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    if not first or first[0] != "cpu":
        return None
    return {name: int(value) for name, value in zip(_FIELDS, first[1:], strict=False)}


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


class MachineLoad:
    """Made when a step starts; ``metrics()`` when it ends."""

    def __init__(self) -> None:
        self.wall = time.perf_counter()
        self.cpu = _cpu_times()
        self.usage = resource.getrusage(resource.RUSAGE_SELF)

    def metrics(self) -> dict[str, float]:
        wall = time.perf_counter() - self.wall
        usage = resource.getrusage(resource.RUSAGE_SELF)
        process_cpu = (usage.ru_utime - self.usage.ru_utime) + (usage.ru_stime - self.usage.ru_stime)
        out = {
            f"{MACHINE_PREFIX}process_cpu_share": round(process_cpu / max(wall * _cpus(), 1e-9), 4),
            f"{MACHINE_PREFIX}major_faults": float(usage.ru_majflt - self.usage.ru_majflt),
        }
        now = _cpu_times()
        if self.cpu is None or now is None:
            return out
        spent = {k: now[k] - self.cpu.get(k, 0) for k in now}
        total = sum(spent.values())
        if total <= 0:  # a step shorter than one clock tick
            return out
        shares = {
            "user": spent.get("user", 0) + spent.get("nice", 0),
            "system": spent.get("system", 0) + spent.get("irq", 0) + spent.get("softirq", 0),
            "iowait": spent.get("iowait", 0),
            "idle": spent.get("idle", 0),
            "steal": spent.get("steal", 0),
        }
        out.update({f"{MACHINE_PREFIX}cpu_{k}": round(v / total, 4) for k, v in shares.items()})
        return out
