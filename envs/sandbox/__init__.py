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

The package: ``jobs.py`` (limits, jobs, plans, results, reasons), ``plans.py`` (which layers this
machine allows, probed once), ``bwrap.py`` (the isolated mode's bubblewrap command line),
``budget.py`` (the host's run-wide memory and process watchdog), ``session.py`` (one run:
spawn, stream, enforce, reap, classify), ``processes.py`` (``/proc`` helpers),
``bootstrap.py`` (the child side: a real module, standard library only, run by the child
interpreter from its source) and this file's entry points.

Modes
-----
* **isolated** (the default; needs bubblewrap, ``bwrap``): the program sees a minimal
  filesystem built for it (``/usr``, the loader cache, the interpreter's own trees and
  site-packages, all read-only; its working directory; a private ``/tmp`` and
  ``/dev/shm``; its own ``/proc``), never the host's ``/root``, ``/home``, ``/run``,
  ``/var/run``, ``/etc/shadow`` or socket files; fresh pid, IPC and UTS namespaces, and a
  network namespace unless ``network``; and an unprivileged identity: as root the program
  is switched to ``nobody`` on the host, otherwise it is uid 65534 of a user namespace
  without capabilities (``bwrap.py`` says why bubblewrap and how).
* **fallback** (no usable bwrap, or ``TEAMGYM_SANDBOX_NAMESPACES=0``): rlimits, the audit
  hook, the watchdog, and ``nobody`` or dropped capabilities as root. It hides nothing from
  a program that gets past the hook (see the residual risks), so it runs only when the user
  opts in with ``TEAMGYM_SANDBOX_ALLOW_HOST_ACCESS=1``; otherwise every run raises
  ``SandboxUnavailableError``, whose message says how to install bubblewrap.
  ``TEAMGYM_SANDBOX_NAMESPACES=1`` refuses the fallback even with the opt-in.

``isolation_layers()`` reports what this machine gives a run under the current settings
(probed once per interpreter and mode, then cached).

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
  RLIMIT_AS (``memory_mb``, per process), RLIMIT_FSIZE (``max_file_mb``; SIGXFSZ is
  ignored so a big write fails with EFBIG), RLIMIT_CORE = 0. ``nproc``: RLIMIT_NPROC at
  exactly ``max_processes``, the program itself included (a fork loop through ``ctypes`` is
  faster than the watchdog's samples, so the kernel's cap is the bound, not a backstop).
  The kernel never applies it to uid 0, so it is listed only when the program runs under
  another uid (``nobody``, a non-root host user, or 65534 of bwrap's user
  namespace, where Linux >= 5.14 counts per namespace); for ``nobody`` the tasks that uid
  already had are added (counted in ``/proc`` at spawn), so beside other ``nobody`` sandboxes
  that end while it runs a program can fork past ``max_processes`` until the watchdog's next
  sample (reason ``processes``).
* ``budget``: the host's watchdog (``budget.py``) walks the run's process tree every 20 ms
  and kills the run when its tasks (processes and threads) pass ``max_processes``
  (reason ``processes``) or the summed proportional set size of its processes passes
  ``memory_mb`` (reason ``memory``): a total for the whole program, which per-process
  rlimits are not. It works for any user on any Linux; cgroup v2 is not used (it needs a
  delegated subtree that containers and CI runners rarely give).
* ``audit``: a ``sys.addaudithook`` hook installed by the bootstrap just before the
  program runs. It refuses (``PermissionError``) writes, renames, deletes, chmods, links
  and ``sqlite3`` files outside the working directory (``/dev/null``, and in the isolated
  mode the private ``/tmp`` and ``/dev/shm``, excepted) and opening directories outside
  it with ``os.open`` (a directory fd would let ``dir_fd=`` calls escape the path check);
  reading other processes' ``/proc/<pid>`` files (their environment); signalling any
  process outside the program's own process group (``os.kill``, ``os.killpg``); creating
  non-``AF_UNIX`` sockets, connecting or sending to an address, and name lookups when
  ``network`` is off; and ``os.fork`` calls past ``max_processes - 1`` in total for the
  run (a counter in shared memory; the program itself is one of its processes). In the
  fallback it also refuses to start other programs (``os.exec*``, ``os.system``,
  ``subprocess``, ``os.posix_spawn``; a new interpreter would run without the hook) and
  resolving or calling C functions with ``ctypes``, and ``pidfd`` signalling.
* ``nobody`` (host runs as root): the program runs as uid/gid 65534 with no
  supplementary groups, and the working directory is chowned to it. Root's files and
  processes are then out of reach and ``nproc`` applies. In the fallback it is used only
  when nobody can read the interpreter (a probe run checks; a Python installed under
  ``/root`` is not), otherwise the program stays uid 0 and ``nocaps`` is used instead;
  in the isolated mode the interpreter's trees are bound where nobody can reach them.
* ``nocaps``: every capability dropped (bounding set too); with ``no_new_privs``, which
  every run sets, setuid binaries cannot give them back.

Isolated mode only: ``bwrap`` (bubblewrap built the run), ``pidns`` (a fresh pid namespace
with its own ``/proc``: the program cannot see or signal any outside process; the
bootstrap's pid 1 reaps orphans and, when the program ends, exits, upon which the kernel
kills everything left in the namespace, daemons included), ``ipcns`` (System V IPC and
POSIX message queues of its own), ``netns`` (only a down loopback, when ``network`` is
off: no TCP, no abstract Unix sockets of the host), ``minfs`` (the minimal filesystem
above), ``userns`` (a non-root host: bwrap's user namespace, in which the program may not
create another). With them the program may start other programs: they are contained too.

Fallback only: the child sets ``PR_SET_PDEATHSIG`` so it dies with the host thread that
started it, and after the program ends the host kills its process group and then every
process whose command line still carries the run's unique working-directory path.

Reasons (``ExecResult.reason``), decided by the host in this order
--------------------------------------------------------------------
* ``timeout``: the host's wall-clock deadline passed; it sent SIGKILL (``exit_code``
  None). ``output_limit``: stdout or stderr passed ``max_output_bytes``; the host sent
  SIGKILL (``exit_code`` None), or the program had already exited (its exit code is
  kept). The stream is kept up to the cap. ``processes`` / ``memory``: the watchdog saw
  the run's tasks or memory pass the budget and sent SIGKILL (``exit_code`` None).
* ``crashed``: the sandbox could not run the program: spawning failed, or the bootstrap
  never reported "ready" on its private status pipe (bwrap refused, a setup step
  failed). Then ``stderr`` ends with the diagnostics of bwrap and the bootstrap,
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
Isolated mode: the kernel is shared (a kernel exploit escapes any namespace sandbox; no
seccomp filter narrows the system calls); the program can read everything under ``/usr``
and the interpreter's trees (read-only), and write as much into its working directory as
RLIMIT_FSIZE allows per file (disk use as a whole is not capped; ``/tmp`` and
``/dev/shm`` are size-capped tmpfs); CPU spread over many processes is bounded only by the
wall-clock timeout; the budget is sampled every 20 ms, so a shorter spike can pass it
(each process is still under RLIMIT_AS); as root, the namespace's init keeps
CAP_SETUID/SETGID/DAC_OVERRIDE inside the namespaces (it runs only the bootstrap); with
``network`` the host's network and its abstract Unix sockets are reachable.

Fallback (opt-in): the audit hook is a speed bump, not a wall. Python code gets past it
with ``ctypes`` (refused only at its obvious entry points), with ``_posixsubprocess``
re-imported, by tampering with the hook's state through ``gc``, or through a C
extension; calls without an audit event are not checked at all. A red-team battery
(``tests/envs/test_sandbox_battery.py``) shows what that means in practice: the program
can read every file its uid can read (as root without ``nobody``: ``/etc/shadow`` and
``/root``); connect to the host's Unix-domain sockets (Docker, ssh-agent, X11) and TCP
ports once past the hook; create files outside its directory through routes the hook
does not see (``os.mknod``, a directory fd obtained after ``os.chdir``, POSIX shared
memory in the host's ``/dev/shm``, a symlink swapped between the hook's check and the
open); signal any process of its uid through ``ctypes`` (including the trainer that
started it); leave a daemon behind by calling ``setsid``, forking twice and wiping its
command line (the host's cleanup looks for the working directory there); and exceed
``max_processes`` for uid 0 between watchdog samples (RLIMIT_NPROC does not apply to
root). As a non-root user in the fallback the program can do anything that user can do
once it gets past the hook.

The status pipe is open in the program (it reports ``MemoryError`` through it), so a
program can mislabel its own outcome; it could do as much by choosing its exit code. The
layers reported come from the first "ready" line, written before the program starts.

Linux only in full: elsewhere there are no namespaces, no ``/proc`` scan for escaped
daemons or for the budget, and the Linux-only ``prctl`` steps are skipped.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor

from .jobs import (
    ALLOW_HOST_ACCESS_ENV,
    NAMESPACES_ENV,
    PYTHON_ENV,
    REASONS,
    ExecResult,
    FileSpec,
    SandboxJob,
    SandboxLimits,
    SandboxUnavailableError,
    normalize_files,
)
from .plans import current_plan, isolation_layers
from .session import run_in_sandbox

__all__ = [
    "REASONS",
    "ALLOW_HOST_ACCESS_ENV",
    "NAMESPACES_ENV",
    "PYTHON_ENV",
    "ExecResult",
    "SandboxJob",
    "SandboxLimits",
    "SandboxPool",
    "SandboxUnavailableError",
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
    ``reason == "crashed"``. Raises ``ValueError`` for bad ``files`` names, and
    ``SandboxUnavailableError`` when no isolation is available and the user has not opted
    in to running without it (see Modes).
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
        if workers is None:  # one per CPU this process may use (affinity, cgroup quota), not per host CPU
            from envs.cpus import allotted_cpus  # here: the package also runs copied out of envs

            workers = allotted_cpus().count
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
