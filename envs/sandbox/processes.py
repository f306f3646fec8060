"""Process helpers over ``/proc``: signal a process or group without raising, walk the
process tree, and kill whatever still carries a run's marker (its working directory)."""

from __future__ import annotations

import os
import signal

__all__ = ["proc_entries", "signal_pid", "signal_group", "children_of", "parent_of", "kill_marked"]


def proc_entries() -> list[str]:
    try:
        return os.listdir("/proc")
    except OSError:  # not Linux: nothing to scan
        return []


def signal_pid(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def children_of(pid: int, tid: int | None = None) -> list[int]:
    """The children that ``pid``'s thread ``tid`` (default: its main thread) started."""
    try:
        with open(f"/proc/{pid}/task/{tid or pid}/children") as handle:
            return [int(child) for child in handle.read().split()]
    except OSError:  # kernel without CONFIG_PROC_CHILDREN: scan every process's parent
        children = []
        if tid not in (None, pid):  # the scan below finds every thread's children at once
            return children
        for name in proc_entries():
            if name.isdigit() and parent_of(int(name)) == pid:
                children.append(int(name))
        return children


def parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
        return int(stat.rsplit(b")", 1)[1].split()[1])  # the name may contain spaces and ')'
    except (OSError, ValueError, IndexError):
        return None


def kill_marked(marker: str, rounds: int = 50) -> None:
    """SIGKILL every process whose command line contains ``marker`` (a run's working
    directory path, present in every process the fallback bootstrap forked), until none
    is left. Reap those that were reparented to us (when this process is a subreaper)."""
    needle = marker.encode()
    me = os.getpid()
    for _ in range(rounds):
        found = []
        for name in proc_entries():
            if not name.isdigit() or int(name) == me:
                continue
            try:
                with open(f"/proc/{name}/cmdline", "rb") as handle:
                    if needle not in handle.read():
                        continue
            except OSError:
                continue
            found.append(int(name))
            signal_pid(int(name), signal.SIGKILL)
        if not found:
            return
        for pid in found:
            if parent_of(pid) == me:
                try:
                    os.waitpid(pid, 0)
                except ChildProcessError:
                    pass
