"""What a process tree holds in memory: the one reading that the footprint benchmark and the
test suite's memory guard (tests/memory.py) both take."""

from __future__ import annotations

__all__ = ["tree_pss"]


def tree_pss(pid: int) -> int:
    """Bytes: PSS of process ``pid`` plus that of every descendant (a process that vanished
    between listing and reading counts 0; where PSS cannot be read, RSS stands in).

    PSS splits a page shared by several processes among them, so the sum is what the machine
    holds for the whole tree; a sum of RSS would count a shared page (the model's weights
    mapped by a forked worker, the libraries) once per process."""
    import psutil  # a dependency of the dev extra, Ray and vLLM

    try:
        root = psutil.Process(pid)
        members = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for member in members:
        try:
            total += getattr(member.memory_full_info(), "pss", None) or member.memory_info().rss
        except psutil.Error:
            pass
    return total
