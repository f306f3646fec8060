"""How many CPUs this process may use, and how many of them other work keeps busy.

Standard library only (the sandbox pool sizes itself with it, and ``envs`` never imports
torch); ``agents.threads`` turns the numbers into a thread count for torch.

* :func:`allotted_cpus`: the CPUs the scheduler lets this process run on (its affinity mask,
  ``os.sched_getaffinity``) capped by a CPU quota of its cgroup (``cpu.max`` in cgroup v2,
  ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` in v1, as Docker's ``--cpus`` and Kubernetes
  CPU limits set them). ``os.cpu_count()`` counts neither: in a container limited to 2 CPUs
  on a 64-core host it says 64.
* :func:`busy_cpus`: how many of those CPUs *other* processes keep busy, from two reads of
  ``/proc/stat`` a moment apart minus this process's own CPU time in that moment (elsewhere:
  the 1-minute load average).

Why by hand rather than psutil: psutil reads neither cgroup quotas nor the affinity of every
platform either, and these are two small file reads the tests can point at fake files.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CpuAllotment", "allotted_cpus", "cgroup_cpu_quota", "busy_cpus"]


@dataclass(frozen=True)
class CpuAllotment:
    """The CPUs a process may use: ``count`` of them, which ones (``cpus``, by id; empty
    where the platform does not say) and what limited the count (``source``)."""

    count: int
    cpus: tuple[int, ...]
    source: str
    """'affinity' (the scheduler's CPU mask), 'cgroup quota' (a CPU limit of the container or
    service, which rounds down to whole CPUs, at least 1) or 'cpu_count' (no mask on this OS)."""

    def describe(self) -> str:
        """E.g. '2 CPUs (affinity)'."""
        return f"{self.count} CPU{'s' if self.count != 1 else ''} ({self.source})"


def _own_cgroup_paths(proc_cgroup: Path) -> dict[str, str]:
    """Controller -> path of this process's cgroup ('' for the v2 unified hierarchy)."""
    paths: dict[str, str] = {}
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        return paths
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        for controller in controllers.split(",") if controllers else [""]:
            paths[controller] = path
    return paths


def _read_quota_v2(directory: Path) -> float | None:
    try:
        quota, period = (directory / "cpu.max").read_text().split()[:2]
    except (OSError, ValueError):
        return None
    return None if quota == "max" else int(quota) / int(period)


def _read_quota_v1(directory: Path) -> float | None:
    try:
        quota = int((directory / "cpu.cfs_quota_us").read_text())
        period = int((directory / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return None if quota <= 0 or period <= 0 else quota / period


def cgroup_cpu_quota(
    cgroup_root: str | os.PathLike = "/sys/fs/cgroup", proc_cgroup: str | os.PathLike = "/proc/self/cgroup"
) -> float | None:
    """The CPU quota (in CPUs, e.g. 1.5) of this process's cgroup, or None when there is none.

    Looks in the process's own cgroup directory and each parent up to the root (a limit set on
    a parent applies too; the smallest wins), in cgroup v2 (``cpu.max``) and v1 (``cpu`` or
    ``cpu,cpuacct`` controller). Paths are parameters so that tests can point at fake files.
    """
    root, paths = Path(cgroup_root), _own_cgroup_paths(Path(proc_cgroup))
    hierarchies = []  # (mount directory, this process's path under it, quota reader)
    if "" in paths:
        hierarchies.append((root, paths[""], _read_quota_v2))
    if "cpu" in paths:
        hierarchies += [(root / mount, paths["cpu"], _read_quota_v1) for mount in ("cpu", "cpu,cpuacct")]
    quotas = []
    for mount, own_path, read_quota in hierarchies:
        parts = Path(own_path).relative_to("/").parts if own_path.startswith("/") else Path(own_path).parts
        # The own directory and each parent up to the mount: a container's limit often sits on a parent.
        for depth in range(len(parts), -1, -1):
            quota = read_quota(mount.joinpath(*parts[:depth]))
            if quota is not None:
                quotas.append(quota)
    return min(quotas) if quotas else None


def allotted_cpus(
    affinity: set[int] | None = None,
    *,
    cgroup_root: str | os.PathLike = "/sys/fs/cgroup",
    proc_cgroup: str | os.PathLike = "/proc/self/cgroup",
) -> CpuAllotment:
    """The CPUs this process may use: its affinity mask, capped by its cgroup's CPU quota.

    Args:
        affinity: The CPU ids to assume as the affinity mask (None: ``os.sched_getaffinity(0)``
            where the OS has it, else ``os.cpu_count()`` CPUs).
        cgroup_root, proc_cgroup: Where to read the cgroup quota (tests pass fake files).
    """
    if affinity is None and hasattr(os, "sched_getaffinity"):
        affinity = os.sched_getaffinity(0)
    if affinity is None:
        count = os.cpu_count() or 1
        cpus, source = tuple(range(count)), "cpu_count"
    else:
        cpus, source = tuple(sorted(affinity)), "affinity"
        count = max(1, len(cpus))
    quota = cgroup_cpu_quota(cgroup_root, proc_cgroup)
    if quota is not None and quota < count:
        count, source = max(1, math.floor(quota)), "cgroup quota"
    return CpuAllotment(count=count, cpus=cpus, source=source)


def _cpu_times(proc_stat: Path, cpus: tuple[int, ...]) -> tuple[float, float] | None:
    """(busy, total) clock ticks summed over ``cpus`` (all CPUs when empty), from /proc/stat."""
    try:
        lines = proc_stat.read_text().splitlines()
    except OSError:
        return None
    wanted = {f"cpu{i}" for i in cpus}
    busy = total = 0.0
    found = False
    for line in lines:
        fields = line.split()
        if not fields or not fields[0].startswith("cpu") or fields[0] == "cpu":
            continue
        if wanted and fields[0] not in wanted:
            continue
        ticks = [float(x) for x in fields[1:]]
        # user nice system idle iowait irq softirq steal [guest guest_nice: already in user/nice]
        idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0.0)
        all_ticks = sum(ticks[:8])
        busy += all_ticks - idle
        total += all_ticks
        found = True
    return (busy, total) if found else None


def _own_cpu_seconds() -> float:
    """CPU seconds used so far by this process (all its threads)."""
    times = os.times()
    return times.user + times.system


def busy_cpus(
    cpus: tuple[int, ...] = (),
    *,
    interval: float = 0.3,
    proc_stat: str | os.PathLike = "/proc/stat",
) -> float:
    """How many of ``cpus`` (all CPUs when empty) processes other than this one keep busy,
    averaged over ``interval`` seconds (e.g. 1.0: one CPU's worth of other work).

    Where ``/proc/stat`` cannot be read (not Linux), the 1-minute load average stands in
    (0.0 where there is none either).
    """
    path = Path(proc_stat)
    first, own_first, started = _cpu_times(path, cpus), _own_cpu_seconds(), time.monotonic()
    if first is None:
        try:
            return float(os.getloadavg()[0])
        except (AttributeError, OSError):
            return 0.0
    time.sleep(interval)
    second, own_second, elapsed = _cpu_times(path, cpus), _own_cpu_seconds(), time.monotonic() - started
    if second is None or second[1] <= first[1] or elapsed <= 0:
        return 0.0
    n_cpus = max(1, len(cpus) or (os.cpu_count() or 1))
    busy_share = (second[0] - first[0]) / (second[1] - first[1])  # of all ticks of these CPUs
    own = (own_second - own_first) / elapsed  # CPUs' worth this process used meanwhile
    return max(0.0, busy_share * n_cpus - own)
