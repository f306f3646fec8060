"""One writer per run directory: a second process that trains in a run directory (a second
``--resume`` of a run still training, or two runs given the same ``--run-name`` at once) would
interleave its metrics, evaluations and checkpoints with the first's.

The lock is an advisory ``flock`` on ``<run dir>/run.lock``. The kernel drops it when the holding
process ends, however it ends (a crash or ``kill -9`` leaves no stale lock to clean up by hand,
which a pid file would); the file keeps the holder's pid so the refusal can name it. POSIX only,
as the sandbox is.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO

from trainers.config import ConfigError

__all__ = ["LOCK_FILE", "RunLock"]

LOCK_FILE = "run.lock"


class RunLock:
    """The exclusive right to write one run directory, held until ``release`` (or the process ends)."""

    def __init__(self, handle: IO[str]) -> None:
        self._handle: IO[str] | None = handle

    @classmethod
    def acquire(cls, run_dir: str | Path) -> RunLock:
        """Take ``run_dir``'s lock (the directory must exist).

        Raises:
            ConfigError: Another process holds it; names its pid and what to do.
        """
        path = Path(run_dir) / LOCK_FILE
        handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - held open while the lock lives
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            handle.close()
            raise ConfigError(
                f"run directory {run_dir} is being written by another process (pid {holder}); "
                f"wait for it to end or stop it (kill {holder}), then --resume {run_dir}, "
                "or pass another --run-name"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        return cls(handle)

    @property
    def held(self) -> bool:
        return self._handle is not None

    def release(self) -> None:
        """Let another process write the directory; closing the file drops the lock. The file
        stays (removing it could race a process that has just opened it)."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None
