"""The thread policy: how many CPU threads torch (and the processes we start) may use.

torch's default is one thread per core. On a machine where other work already keeps a core
busy that default collapses: its threads wait for each other at every parallel region, and a
thread that shares its core with another process makes all of them wait. On this project's
2-core machines with one core busy, generation ran 2.75x slower with 2 threads than with 1
(``python -m benchmarks.generation``, docs/training.md, "CPU threads"; a user's report saw 14-16x).

So every command of the project picks its thread count itself, before torch does any work:

    choice = configure_threads(config.threads)   # None: automatic
    print(choice.describe())

Automatic means: the CPUs this process is allotted (affinity mask, cgroup quota;
``envs.cpus``) minus the CPUs other processes keep busy right now (measured for 0.3 s),
rounded down, at least 1. The choice is applied to torch (``torch.set_num_threads``) and to
the environment that child processes inherit (``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``, ...:
vLLM workers, Ray workers), and the commands record it in their run's config, so a resumed
run keeps the thread count its metrics were computed with.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from envs.cpus import CpuAllotment, allotted_cpus, busy_cpus

__all__ = [
    "THREADS_ENV",
    "THREAD_ENV_VARS",
    "ThreadChoice",
    "choose_threads",
    "configure_threads",
    "thread_env",
]

THREADS_ENV = "TEAMGYM_THREADS"
"""Environment variable that sets the count where no ``--threads`` is given (the test suite
pins it, so that runs compared for exact equality use the same count whatever the load)."""

THREAD_ENV_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS")
# Other work below this many CPUs' worth leaves a core usable (a shell, a monitor, an editor).
_IDLE_SLACK = 0.25


@dataclass(frozen=True)
class ThreadChoice:
    """A thread count and why: ``threads`` for torch, of ``allotted`` CPUs with ``busy`` of
    them kept busy by other processes; ``requested`` is the user's ``--threads`` (None: auto)."""

    threads: int
    allotted: CpuAllotment
    busy: float
    requested: int | None = None

    @property
    def free(self) -> float:
        """CPUs' worth left to this process."""
        return max(0.0, self.allotted.count - self.busy)

    @property
    def oversubscribed(self) -> bool:
        """More threads than the CPUs other work leaves free (each thread then waits for a core)."""
        return self.threads > math.floor(self.free + _IDLE_SLACK) or self.free < 1 - _IDLE_SLACK

    def describe(self) -> str:
        """One line for the console, e.g. 'threads: 1 (auto: 2 CPUs (affinity), 1.0 busy with
        other work; --threads N to choose)'."""
        how = "as configured" if self.requested is not None else "auto"  # --threads, a config, the variable
        line = (
            f"threads: {self.threads} ({how}: {self.allotted.describe()}, "
            f"{self.busy:.1f} busy with other work"
            + ("" if self.requested is not None else "; --threads N to choose")
            + ")"
        )
        return line

    def warning(self) -> str | None:
        """What to tell the user when the machine is oversubscribed, else None."""
        if not self.oversubscribed:
            return None
        if self.requested is not None and self.threads > math.floor(self.free + _IDLE_SLACK):
            return (
                f"warning: {self.threads} threads (--threads, {THREADS_ENV} or a resumed run's config) but "
                f"other processes keep {self.busy:.1f} of "
                f"{self.allotted.count} CPUs busy: threads will wait for cores and every step slows down, "
                "often several times over (python -m benchmarks.generation measures it); pass --threads "
                f"{max(1, math.floor(self.free + _IDLE_SLACK))} or leave --threads unset"
            )
        return (
            f"warning: the machine is oversubscribed: other processes keep {self.busy:.1f} of "
            f"{self.allotted.count} CPUs busy, so this run gets less than one core and runs slower"
        )


def choose_threads(
    requested: int | None = None, allotted: CpuAllotment | None = None, busy: float | None = None
) -> ThreadChoice:
    """The thread count to use (see the module docstring); measures what it is not given.

    Args:
        requested: The user's choice (``--threads``), used as given; None: ``$TEAMGYM_THREADS``
            if set, else automatic.
        allotted: The CPUs to assume (None: ``envs.cpus.allotted_cpus()``).
        busy: CPUs' worth of other work to assume (None: measured for 0.3 s).

    Raises:
        ValueError: ``requested`` (or ``$TEAMGYM_THREADS``) is not an int >= 1.
    """
    if requested is None and os.environ.get(THREADS_ENV, "").strip():
        text = os.environ[THREADS_ENV].strip()
        if not text.isdigit() or int(text) < 1:
            raise ValueError(f"{THREADS_ENV}={text!r} must be an integer >= 1 (or unset: automatic)")
        requested = int(text)
    if requested is not None and (
        isinstance(requested, bool) or not isinstance(requested, int) or requested < 1
    ):
        raise ValueError(f"threads={requested!r} must be an integer >= 1 (or None: automatic)")
    allotted = allotted or allotted_cpus()
    busy = busy_cpus(allotted.cpus) if busy is None else busy
    if requested is not None:
        threads = requested
    else:
        threads = max(1, min(allotted.count, math.floor(allotted.count - busy + _IDLE_SLACK)))
    return ThreadChoice(threads=threads, allotted=allotted, busy=busy, requested=requested)


def thread_env(threads: int) -> dict[str, str]:
    """Environment variables that cap the native thread pools of a child process."""
    return {name: str(threads) for name in THREAD_ENV_VARS}


def configure_threads(requested: int | None = None, *, choice: ThreadChoice | None = None) -> ThreadChoice:
    """Choose (or take ``choice``) and apply: torch's intra-op threads in this process, and the
    thread variables that child processes inherit. Call it before torch does any work."""
    choice = choice or choose_threads(requested)
    os.environ.update(thread_env(choice.threads))
    try:
        import torch
    except ImportError:  # scripted teams only (e.g. an oracle evaluation): nothing to set
        return choice
    torch.set_num_threads(choice.threads)
    return choice
