"""The run-wide budget: the host's watchdog over everything the program started.

RLIMIT_AS and RLIMIT_NPROC are per process and per uid; neither bounds a program that
forks 64 children of 1 GiB each. The host therefore walks the run's process tree in
``/proc`` a few times a second and sums the tasks (processes and threads) and the memory
of the program's processes. Memory is the proportional set size (``Pss`` of
``/proc/<pid>/smaps_rollup``): pages a forked child still shares with its parent count
once, not once per process; where the file is missing, the resident set size is used.
Why not cgroups: cgroup v2 needs a delegated subtree, which containers and CI runners
rarely give (this project's own machines mount cgroup v1), and the watchdog works for any
user on any Linux. What it cannot do: stop a spike shorter than one interval (the per
process limits still apply), or see a fallback-mode daemon that left the tree with
``setsid`` and a double fork (in the isolated mode the pid namespace keeps it in)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from .processes import children_of

__all__ = ["Usage", "tree_usage", "INTERVAL_S"]

INTERVAL_S = 0.02  # how often the host checks the budget while the program runs
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclass(frozen=True)
class Usage:
    tasks: int  # processes and threads of the program
    memory_bytes: int  # their summed proportional set size


def tree_usage(root: int, skip_levels: int) -> Usage:
    """Tasks and memory of ``root``'s descendants, leaving out the first ``skip_levels``
    levels of the tree (bwrap's monitor and the namespace's init are not the program)."""
    tasks = memory = 0
    level, frontier, seen = 0, [root], set()
    while frontier:
        following = []
        for pid in frontier:
            if pid in seen:  # a reused pid cannot form a cycle in a real tree; be safe anyway
                continue
            seen.add(pid)
            threads = _threads(pid)
            if level >= skip_levels and threads:
                tasks += len(threads)
                memory += _memory(pid)
            for tid in threads or [pid]:
                following += children_of(pid, tid)
        frontier, level = following, level + 1
    return Usage(tasks, memory)


def _threads(pid: int) -> list[int]:
    try:
        return [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]
    except (OSError, ValueError):
        return []


def _memory(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as handle:
            rollup = handle.read()
        start = rollup.index(b"\nPss:") + 5
        return int(rollup[start : rollup.index(b"kB", start)]) * 1024
    except (OSError, ValueError):
        pass
    try:
        with open(f"/proc/{pid}/statm", "rb") as handle:
            return int(handle.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0
