"""Run untrusted (model-written) Python in a separate, locked-down process.

Project rule: model-written code never runs in-process. ``run_python(code)`` writes the
code to ``main.py`` in a fresh temporary working directory, runs it under a small
bootstrap in a child interpreter and returns an ``ExecResult`` (stdout, stderr, exit code,
duration, a ``reason`` and the isolation ``layers`` that were active). ``SandboxPool``
runs many programs concurrently (one thread drives each child process).

>>> from envs.sandbox import run_python
>>> result = run_python("print(sum(range(10)))")
>>> result.ok, result.stdout
(True, '45\\n')

The package: ``jobs.py`` (limits, jobs, results, reasons), ``plans.py`` (which layers this
machine allows, probed once), ``session.py`` (one run: spawn, stream, enforce, reap,
classify), ``processes.py`` (``/proc`` helpers), ``bootstrap.py`` (the child side: a real
module, standard library only, run by the child interpreter from its source) and this
file's entry points.

Isolation layers (``ExecResult.isolation`` names the ones a run actually had)
-----------------------------------------------------------------------------
Always, in both modes:

* separate process in its own session and process group, a wall-clock timeout after
  which every process of the run is SIGKILLed, output caps (each stream is read
  incrementally; past ``max_output_bytes`` the run is killed), a temporary working
  directory that is deleted afterwards, and a minimal environment: nothing of
  ``os.environ`` is inherited, only ``PATH``, ``LANG=C.UTF-8``, ``HOME`` and ``TMPDIR``
  (both the working directory), ``PYTHONHASHSEED=0`` (reproducible ``set`` order),
  ``PYTHONDONTWRITEBYTECODE``, ``PYTHONUNBUFFERED``, ``PYTHONIOENCODING=utf-8``,
  ``PYTHONUTF8`` and ``*_NUM_THREADS=1``.
* the interpreter runs with ``-S -s -B -u``: no ``site`` processing (so no ``.pth``
  hooks of the host environment, e.g. editable installs, run first; ``exit()``/``quit()``
  are still defined), no user site, no bytecode files, unbuffered output (what a program
  printed before a timeout is kept). ``-I`` is not used: it would ignore
  ``PYTHONHASHSEED``, and the environment is built from scratch anyway. ``sys.path`` is
  the working directory (so ``files`` such as a test harness import as in
  ``python main.py``), the standard library and the host interpreter's site-packages
  (numpy etc. import as usual). ``__file__`` and ``sys.argv[0]`` are ``main.py``, so
  tracebacks read ``File "main.py", line N`` (the bootstrap's frames are left out).
  ``TEAMGYM_SANDBOX_PYTHON`` picks another interpreter (then without the host's
  site-packages).
* ``rlimits``: RLIMIT_CPU (``cpu_s``; SIGXCPU, then SIGKILL one second later),
  RLIMIT_AS (``memory_mb``), RLIMIT_FSIZE (``max_file_mb``; SIGXFSZ is ignored so a big
  write fails with EFBIG), RLIMIT_CORE = 0. ``nproc``: RLIMIT_NPROC caps processes and
  threads. The kernel never applies it to uid 0, so it is listed only when the program
  runs under another uid (``nobody``, or a non-root host user): then the limit is
  ``max_processes`` over the tasks that uid already had (counted in ``/proc``), or exactly
  ``max_processes`` in a user namespace, where Linux >= 5.14 counts per namespace.
* ``audit``: a ``sys.addaudithook`` hook installed by the bootstrap just before the
  program runs. It refuses (``PermissionError``) writes, renames, deletes, chmods, links
  and ``sqlite3`` files outside the working directory (``/dev/null`` and the private
  ``/dev/shm`` excepted) and opening directories outside it with ``os.open`` (a
  directory fd would let ``dir_fd=`` calls escape the path check); reading other
  processes' ``/proc/<pid>`` files (their environment); signalling any process outside
  the program's own process group (``os.kill``, ``os.killpg``); creating non-``AF_UNIX``
  sockets, connecting or sending to an address, and name lookups when ``network`` is
  off; and more than ``max_processes`` ``os.fork`` calls in total for the run (a counter
  in shared memory). Without a read-only filesystem it also refuses to start other
  programs (``os.exec*``, ``os.system``, ``subprocess``, ``os.posix_spawn``; a new
  interpreter would run without the hook) and resolving or calling C functions with
  ``ctypes``, and ``pidfd`` signalling.
* ``nobody`` (host runs as root): the program runs as uid/gid 65534 with no
  supplementary groups, and the working directory is chowned to it. Root's files and
  processes are then out of reach and ``nproc`` applies. It is used only when nobody
  can read the interpreter (a probe run checks; a Python installed under ``/root`` is
  not), otherwise the program stays uid 0 and ``nocaps`` is used instead.
* ``nocaps``: every capability dropped (bounding set too); with ``no_new_privs``, which
  every run sets, setuid binaries cannot give them back.

With namespaces (``unshare`` works; the default when it does):

* ``userns``: ``unshare --user --map-root-user`` when the program does not switch to
  nobody (the host uid appears as root inside, without capabilities once the program
  starts). ``netns``: a fresh network namespace (only a down loopback) when ``network``
  is off (creating one takes a few ms, at times tens while the kernel still cleans up
  earlier ones). ``pidns``: a fresh pid namespace with its own ``/proc``: the program cannot see
  or signal any outside process; the bootstrap's pid 1 reaps orphans and, when the
  program ends, exits, upon which the kernel kills everything left in the namespace
  (daemons included). ``rofs``: a private mount namespace in which every mount is
  read-only (``mount_setattr(AT_RECURSIVE)``) except the working directory (a writable
  bind mount) and a fresh size-capped tmpfs on ``/dev/shm``. With ``rofs`` and a pid
  namespace the program may start other programs: they are contained too.

Fallback (no namespaces: ``unshare`` missing or refused, e.g. Ubuntu's AppArmor
restriction of unprivileged user namespaces, or ``TEAMGYM_SANDBOX_NAMESPACES=0``): the
layers above minus ``userns``/``netns``/``pidns``/``rofs``. The child sets
``PR_SET_PDEATHSIG`` so it dies with the host thread that started it, and after the
program ends the host kills its process group and then every process whose command line
still carries the run's unique working-directory path (a daemon that called
``setsid()`` left the group but, as exec is refused, not that command line).

``TEAMGYM_SANDBOX_NAMESPACES``: ``0`` (or ``false``/``no``/``off``) forces the fallback;
``1`` requires namespaces (``RuntimeError`` when they cannot be used, instead of silently
falling back); unset means use them when available. ``isolation_layers()`` reports what
this machine gives a run under the current setting (probed once per interpreter and
mode, then cached).

Reasons (``ExecResult.reason``), decided by the host in this order
--------------------------------------------------------------------
* ``timeout``: the host's wall-clock deadline passed; it sent SIGKILL (``exit_code``
  None). ``output_limit``: stdout or stderr passed ``max_output_bytes``; the host sent
  SIGKILL (``exit_code`` None), or the program had already exited (its exit code is
  kept). The stream is kept up to the cap.
* ``crashed``: the sandbox could not run the program: spawning failed, or the bootstrap
  never reported "ready" on its private status pipe (``unshare`` refused, a setup step
  failed). Then ``stderr`` ends with the diagnostics of ``unshare`` and the bootstrap,
  which are otherwise kept apart from the program's stderr.
* ``memory``: the program's uncaught exception was a ``MemoryError`` (the bootstrap's
  top-level handler reports it on the status pipe); under RLIMIT_AS that is what running
  out of address space raises.
* Otherwise the exit status: ``ok``: exit code 0. ``error``: a positive exit code (an
  uncaught exception, a failed ``assert``, ``sys.exit(3)``). ``timeout`` again: death by
  SIGXCPU, or by SIGKILL after at least ``cpu_s`` seconds of CPU (the hard RLIMIT_CPU).
  ``killed``: any other death by a signal (``exit_code`` is ``-signal``: the program
  killed itself, SIGSEGV, SIGABRT...).

Residual risks (read before trusting it with more than model-written code)
---------------------------------------------------------------------------
The audit hook is a speed bump, not a wall: Python code can bypass it with ``ctypes``
(refused only in the fallback, and only its obvious entry points), with
``_posixsubprocess`` re-imported, by tampering with the hook's state through ``gc``, or
through a C extension. The real walls are the namespaces, ``rofs``, ``nobody``/``nocaps``
and the rlimits. Hence, in the fallback as a non-root user the program can do anything
that user can do once it gets past the hook (including killing the host process or
reading its files); as root in the fallback without ``nobody`` it is root without
capabilities (it can still write root-owned files and signal root's processes).
Neither mode limits disk usage inside the working directory beyond RLIMIT_FSIZE per
file, nor memory used through ``/dev/shm`` beyond its tmpfs size, nor CPU spread over
many processes beyond the wall-clock timeout; there are no cgroups. With ``userns`` the
program can read every file the host user can read (read-only). RLIMIT_NPROC counts per
uid: concurrent runs as nobody share it (the per-run base is counted at spawn), and a
program running as uid 0 has no process cap but the audit counter. The status pipe is
open in the program (it reports ``MemoryError`` through it), so a program can mislabel
its own outcome; it could do as much by choosing its exit code. The layers reported come
from the first "ready" line, written before the program starts.

Linux only in full: elsewhere there are no namespaces, no ``/proc`` scan for escaped
daemons, and the Linux-only ``prctl`` steps are skipped.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor

from .jobs import (
    NAMESPACES_ENV,
    PYTHON_ENV,
    REASONS,
    ExecResult,
    FileSpec,
    SandboxJob,
    SandboxLimits,
    normalize_files,
)
from .plans import current_plan, isolation_layers
from .session import run_in_sandbox

__all__ = [
    "REASONS",
    "NAMESPACES_ENV",
    "PYTHON_ENV",
    "ExecResult",
    "SandboxJob",
    "SandboxLimits",
    "SandboxPool",
    "isolation_layers",
    "run_python",
]


def run_python(
    code: str,
    *,
    stdin: str = "",
    limits: SandboxLimits | None = None,
    files: FileSpec | None = None,
) -> ExecResult:
    """Run ``code`` as ``main.py`` in a sandbox (see the module docstring) and wait for it.

    ``files`` (name -> text or bytes) are written into the working directory first, e.g.
    a test harness the program imports. Names are relative paths without ``..``; ``main.py``
    is reserved. Never raises because of what the program does; a broken sandbox gives
    ``reason == "crashed"``. Raises ``ValueError`` for bad ``files`` names.
    """
    if not isinstance(code, str) or not isinstance(stdin, str):
        raise TypeError("run_python: code and stdin must be str")
    limits = limits or SandboxLimits()
    pairs = normalize_files(files) if files is not None else ()
    return run_in_sandbox(code, stdin, limits, pairs, current_plan())


class SandboxPool:
    """Run many programs concurrently: ``workers`` threads, each driving one child process.

    >>> with SandboxPool(workers=2) as pool:
    ...     results = pool.map([SandboxJob("print(1)"), SandboxJob("print(2)")])
    """

    def __init__(self, workers: int | None = None, limits: SandboxLimits | None = None) -> None:
        if workers is None:
            workers = os.cpu_count() or 1
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"SandboxPool(workers=...) must be an int >= 1 or None (cpus), got {workers!r}")
        self.workers = workers
        self.limits = limits
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sandbox")

    def submit(self, job: SandboxJob | str) -> Future[ExecResult]:
        """Schedule one job (a ``SandboxJob`` or just the code); the job's own limits win
        over the pool's."""
        if isinstance(job, str):
            job = SandboxJob(job)
        return self._executor.submit(
            run_python, job.code, stdin=job.stdin, limits=job.limits or self.limits, files=job.files
        )

    def map(self, jobs: Iterable[SandboxJob | str]) -> list[ExecResult]:
        """Run all jobs concurrently; results in job order."""
        futures = [self.submit(job) for job in jobs]
        return [future.result() for future in futures]

    def close(self) -> None:
        self._executor.shutdown(wait=True)

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
