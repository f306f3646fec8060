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

import functools
import math
import os
import selectors
import shutil
import signal
import site
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import PurePosixPath

__all__ = [
    "REASONS",
    "ExecResult",
    "SandboxJob",
    "SandboxLimits",
    "SandboxPool",
    "isolation_layers",
    "run_python",
]

REASONS = ("ok", "error", "timeout", "memory", "output_limit", "killed", "crashed")
LAYERS = ("userns", "netns", "pidns", "rofs", "nobody", "nocaps", "rlimits", "nproc", "audit")
NOBODY = 65534
MAIN_FILE = "main.py"  # the program's file name in the working directory (and in tracebacks)
NAMESPACES_ENV = "TEAMGYM_SANDBOX_NAMESPACES"
PYTHON_ENV = "TEAMGYM_SANDBOX_PYTHON"

_DRAIN_S = 2.0  # after the program ended: how long to wait for its pipes to close
_STATUS_CAP = 16_384  # bytes of status messages kept (the program could spam the pipe)


@dataclass(frozen=True)
class SandboxLimits:
    """Per-run limits. ``timeout_s`` is wall clock for the whole run (startup included)."""

    timeout_s: float = 5.0
    cpu_s: int = 5
    memory_mb: int = 1024
    max_output_bytes: int = 65_536
    max_file_mb: int = 16
    max_processes: int = 64
    network: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.timeout_s, bool) or not isinstance(self.timeout_s, (int, float)):
            raise ValueError(f"SandboxLimits.timeout_s must be a number of seconds, got {self.timeout_s!r}")
        if not (math.isfinite(self.timeout_s) and self.timeout_s > 0):
            raise ValueError(
                f"SandboxLimits.timeout_s must be a positive finite number of seconds, got "
                f"{self.timeout_s!r}; pass e.g. timeout_s=5.0"
            )
        minimum = {"cpu_s": 1, "memory_mb": 64, "max_output_bytes": 1, "max_file_mb": 1, "max_processes": 1}
        for name, low in minimum.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                hint = " (Python needs ~40 MB of address space, numpy ~150)" if name == "memory_mb" else ""
                raise ValueError(
                    f"SandboxLimits.{name} must be an int >= {low}, got {value!r}{hint}; "
                    f"pass e.g. {name}={getattr(SandboxLimits, name)}"
                )
        if not isinstance(self.network, bool):
            raise ValueError(f"SandboxLimits.network must be True or False, got {self.network!r}")


@dataclass(frozen=True)
class ExecResult:
    stdout: str
    stderr: str
    exit_code: int | None  # None: killed by the host before it exited; -N: died of signal N
    duration_s: float
    reason: str  # one of REASONS
    isolation: tuple[str, ...]  # the layers this run had (see the module docstring)

    @property
    def ok(self) -> bool:
        return self.reason == "ok"


FileSpec = Mapping[str, "str | bytes"] | Iterable[tuple[str, "str | bytes"]]


@dataclass(frozen=True)
class SandboxJob:
    """One program for ``SandboxPool``. ``files`` is stored as a sorted tuple of
    ``(name, content)`` pairs, so jobs stay hashable; a mapping is accepted."""

    code: str
    stdin: str = ""
    limits: SandboxLimits | None = None
    files: tuple[tuple[str, str | bytes], ...] | None = None

    def __post_init__(self) -> None:
        if self.files is not None:
            object.__setattr__(self, "files", _normalize_files(self.files))


# ---------------------------------------------------------------------------------------
# Public entry points


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
    pairs = _normalize_files(files) if files is not None else ()
    return _run(code, stdin, limits, pairs, _current_plan())


def isolation_layers() -> tuple[str, ...]:
    """The layers a run gets on this machine under the current ``TEAMGYM_SANDBOX_NAMESPACES``
    setting (a probe run, cached per interpreter and mode)."""
    plan = _current_plan()
    key = ("layers", plan)
    with _probe_lock:
        if key not in _probes:
            _probes[key] = _run("pass", "", SandboxLimits(), (), plan).isolation
        return _probes[key]


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


# ---------------------------------------------------------------------------------------
# Plans: which layers to set up, decided once per interpreter and mode


@dataclass(frozen=True)
class _Plan:
    python: str
    namespaces: bool
    userns: bool  # unshare --user --map-root-user (when not switching to nobody)
    drop_to: int | None  # uid/gid to switch to (root hosts only)
    drop_caps: bool  # the program would otherwise keep uid 0's capabilities
    nproc_uid: int | None  # the uid whose existing tasks count toward RLIMIT_NPROC; None: no base
    nproc: bool  # whether the kernel enforces RLIMIT_NPROC for the program at all


_probe_lock = threading.RLock()
_probes: dict[tuple, object] = {}


def _namespaces_setting() -> str:
    value = os.environ.get(NAMESPACES_ENV, "").strip().lower()
    if value in ("0", "false", "no", "off"):
        return "off"
    if value in ("1", "true", "yes", "on"):
        return "required"
    return "auto"


def _current_plan() -> _Plan:
    python = os.environ.get(PYTHON_ENV) or sys.executable
    setting = _namespaces_setting()
    with _probe_lock:
        key = ("plan", python, setting)
        if key not in _probes:
            _probes[key] = _choose_plan(python, setting)
        return _probes[key]


def _choose_plan(python: str, setting: str) -> _Plan:
    root = os.geteuid() == 0
    nobody = root and _probe_ok(_fallback_plan(python, root, nobody=True))
    fallback = _fallback_plan(python, root, nobody)
    if setting == "off":
        return fallback
    unshare = _unshare_path()
    if unshare is not None:
        plan = _namespace_plan(python, root, nobody)
        if _probe_ok(plan):
            return plan
    if setting == "required":
        raise RuntimeError(
            f"{NAMESPACES_ENV}=1 but namespaces cannot be used here "
            f"({'no unshare on PATH' if unshare is None else 'unshare --pid/--net/--mount failed'}); "
            f"unset it to accept the fallback layers, or enable unprivileged user namespaces"
        )
    return fallback


def _fallback_plan(python: str, root: bool, nobody: bool) -> _Plan:
    if nobody:
        return _Plan(python, False, False, NOBODY, False, NOBODY, True)
    if root:
        return _Plan(python, False, False, None, True, None, False)
    return _Plan(python, False, False, None, False, os.getuid(), True)


def _namespace_plan(python: str, root: bool, nobody: bool) -> _Plan:
    if nobody:  # real root sets up the namespaces; no user namespace needed
        return _Plan(python, True, False, NOBODY, False, NOBODY, True)
    # Linux >= 5.14 counts RLIMIT_NPROC per user namespace; older kernels per host uid.
    per_namespace = _kernel_version() >= (5, 14)
    return _Plan(python, True, True, None, True, None if per_namespace else os.getuid(), not root)


def _probe_ok(plan: _Plan) -> bool:
    """Run a program that imports from every sys.path entry under ``plan``."""
    probe = "import sys, os, json, decimal\nfor p in sys.path:\n    os.path.isdir(p) and os.listdir(p)\n"
    probe += "print('ok')"
    result = _run(probe, "", SandboxLimits(timeout_s=30), (), plan)
    return result.ok and result.stdout == "ok\n"


@functools.lru_cache(maxsize=1)
def _unshare_path() -> str | None:
    return shutil.which("unshare")


def _kernel_version() -> tuple[int, ...]:
    numbers = []
    for part in os.uname().release.split(".")[:2]:
        digits = "".join(ch for ch in part if ch.isdigit()) or "0"
        numbers.append(int(digits))
    return tuple(numbers)


@functools.lru_cache(maxsize=8)
def _site_packages(python: str) -> list[str]:
    """The host interpreter's site-packages (the child runs with -S); none for another
    interpreter, whose layout we do not know."""
    if os.path.realpath(python) != os.path.realpath(sys.executable):
        return []
    return [path for path in site.getsitepackages() if os.path.isdir(path)]


# ---------------------------------------------------------------------------------------
# One run


def _normalize_files(files: FileSpec) -> tuple[tuple[str, str | bytes], ...]:
    pairs = files.items() if isinstance(files, Mapping) else files
    normalized = []
    for name, content in pairs:
        path = PurePosixPath(name) if isinstance(name, str) else None
        if path is None or not name or path.is_absolute() or ".." in path.parts or name.endswith("/"):
            raise ValueError(f"files: {name!r} must be a relative file path without '..'")
        if path.parts == (MAIN_FILE,):
            raise ValueError(f"files: {MAIN_FILE!r} is reserved for the program itself")
        if not isinstance(content, (str, bytes)):
            raise ValueError(f"files[{name!r}] must be str or bytes, got {type(content).__name__}")
        normalized.append((str(path), content))
    return tuple(sorted(normalized))


def _run(code: str, stdin: str, limits: SandboxLimits, files: tuple, plan: _Plan) -> ExecResult:
    start = time.monotonic()
    try:
        workdir = _make_workdir(code, files, plan.drop_to)
    except OSError as err:
        return _crashed(f"sandbox: could not create the working directory: {err}", start)
    try:
        return _Session(workdir, stdin, limits, plan).run()
    finally:
        _remove_tree(workdir)


def _crashed(message: str, start: float, stdout: str = "", isolation: tuple[str, ...] = ()) -> ExecResult:
    return ExecResult(stdout, message, None, time.monotonic() - start, "crashed", isolation)


def _make_workdir(code: str, files: tuple, owner: int | None) -> str:
    workdir = os.path.realpath(tempfile.mkdtemp(prefix="teamgym-sandbox-"))
    try:
        for name, content in ((MAIN_FILE, code), *files):
            path = os.path.join(workdir, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            data = content.encode("utf-8", "surrogatepass") if isinstance(content, str) else content
            with open(path, "wb") as handle:
                handle.write(data)
        if owner is not None:  # the program runs as nobody: its directory must be its own
            for directory, _, filenames in os.walk(workdir):
                os.chown(directory, owner, owner)
                for name in filenames:
                    os.chown(os.path.join(directory, name), owner, owner)
    except BaseException:
        _remove_tree(workdir)
        raise
    return workdir


def _remove_tree(path: str) -> None:
    """Delete the working directory even if the program chmod-ed parts of it to 000."""

    def make_writable_and_retry(function, failed_path, _exc_info):
        try:
            os.chmod(os.path.dirname(failed_path), 0o700)
            if os.path.isdir(failed_path) and not os.path.islink(failed_path):
                os.chmod(failed_path, 0o700)
            function(failed_path)
        except OSError:
            pass

    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=make_writable_and_retry)
    else:
        shutil.rmtree(path, onerror=make_writable_and_retry)
    shutil.rmtree(path, ignore_errors=True)


def _environment(workdir: str, python: str) -> dict[str, str]:
    return {
        "PATH": os.pathsep.join([os.path.dirname(python), "/usr/local/bin", "/usr/bin", "/bin"]),
        "LANG": "C.UTF-8",
        "HOME": workdir,
        "TMPDIR": workdir,
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "PYTHONIOENCODING": "utf-8",
        "PYTHONUTF8": "1",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "MALLOC_ARENA_MAX": "2",  # glibc reserves 64 MB of address space per arena (RLIMIT_AS)
    }


def _count_tasks(uid: int) -> int:
    """Tasks (threads) whose real uid is ``uid``: what RLIMIT_NPROC compares against."""
    total = 0
    wanted = b"\t%d\t" % uid
    for name in _proc_entries():
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", "rb") as handle:
                status = handle.read()
            uid_line = status[status.index(b"\nUid:") + 5 :]
            if uid_line.startswith(wanted):  # the first field is the real uid
                threads = status[status.index(b"\nThreads:") + 9 :]
                total += int(threads[: threads.index(b"\n")])
        except (OSError, ValueError):
            continue
    return total


class _Session:
    """Spawn the bootstrap, feed stdin, read stdout/stderr/status incrementally, enforce
    the deadline and the caps, kill and reap everything, classify the outcome."""

    def __init__(self, workdir: str, stdin: str, limits: SandboxLimits, plan: _Plan) -> None:
        self.workdir = workdir
        self.stdin = stdin.encode("utf-8", "surrogatepass")
        self.limits = limits
        self.plan = plan
        self.proc: subprocess.Popen | None = None
        self.pidfd: int | None = None
        self.selector = selectors.DefaultSelector()
        # stdout/stderr: the program's (capped at max_output_bytes, past it the run is
        # killed); status: the bootstrap's messages; diagnostics: unshare's/bootstrap's stderr
        self.output = {name: bytearray() for name in ("stdout", "stderr", "status", "diagnostics")}
        self.killed_for: str | None = None  # "timeout" / "output_limit": the host killed the run
        self.capped = False  # some stream passed max_output_bytes
        self.exited = False
        self.usage_cpu = 0.0

    # -- spawning

    def _command(self, status_fd: int, stderr_fd: int) -> list[str]:
        limits, plan = self.limits, self.plan
        nproc = None
        if plan.nproc:
            base = _count_tasks(plan.nproc_uid) if plan.nproc_uid is not None else 0
            nproc = limits.max_processes + base
        config = {
            "workdir": self.workdir,
            "status_fd": status_fd,
            "stderr_fd": stderr_fd,
            "namespaces": plan.namespaces,
            "drop_to": plan.drop_to,
            "drop_caps": plan.drop_caps,
            "host_pid": os.getpid(),
            "cpu": limits.cpu_s,
            "as_bytes": limits.memory_mb * 1024 * 1024,
            "fsize": limits.max_file_mb * 1024 * 1024,
            "nproc": nproc,
            "max_forks": limits.max_processes,
            "network": limits.network,
            "shm_mb": limits.max_file_mb,
            "site": _site_packages(plan.python),
        }
        # compiled as "<sandbox>" so that tracebacks can leave the bootstrap's frames out
        source = f"C = {config!r}\n{_BOOTSTRAP}"
        bootstrap = f"exec(compile({source!r}, '<sandbox>', 'exec'))"
        python = [plan.python, "-S", "-s", "-B", "-u", "-c", bootstrap, self.workdir]
        if not plan.namespaces:
            return python
        unshare = [_unshare_path() or "unshare"]
        if plan.userns:
            unshare += ["--user", "--map-root-user"]
        if not limits.network:
            unshare.append("--net")
        return [*unshare, "--pid", "--fork", "--kill-child", "--mount-proc", "--", *python]

    def _host_layers(self) -> tuple[str, ...]:
        if not self.plan.namespaces:
            return ()
        layers = ["pidns"]
        if self.plan.userns:
            layers.append("userns")
        if not self.limits.network:
            layers.append("netns")
        return tuple(layers)

    def run(self) -> ExecResult:
        start = time.monotonic()
        # The child's own stderr (fd 2) carries only unshare's and the bootstrap's
        # diagnostics; the program's stderr is a separate pipe the bootstrap moves onto
        # fd 2 just before the program starts, so "unshare: ..." noise never reaches it.
        status_r, status_w = os.pipe()
        stderr_r, stderr_w = os.pipe()
        try:
            try:
                self.proc = subprocess.Popen(
                    self._command(status_w, stderr_w),
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    cwd=self.workdir,
                    env=_environment(self.workdir, self.plan.python),
                    pass_fds=(status_w, stderr_w),
                    start_new_session=True,  # own session and process group: killpg reaches it all
                )
            except OSError as err:
                return _crashed(f"sandbox: could not start the interpreter: {err}", start)
            finally:
                os.close(status_w)
                os.close(stderr_w)
            deadline = start + self.limits.timeout_s
            try:
                self._open_pidfd()
                self._register({"status": status_r, "stderr": stderr_r})
                self._pump(deadline)
                if self.killed_for is None:
                    self._kill_leftovers()
                self._drain(time.monotonic() + _DRAIN_S)
            finally:
                self._finish()
            return self._result(time.monotonic() - start)
        finally:
            self.selector.close()
            os.close(status_r)
            os.close(stderr_r)

    def _open_pidfd(self) -> None:
        try:  # readable once the child exits: no polling (Linux >= 5.3)
            self.pidfd = os.pidfd_open(self.proc.pid)
        except (AttributeError, OSError):
            self.pidfd = None
        else:
            self.selector.register(self.pidfd, selectors.EVENT_READ, "exit")

    def _register(self, pipes: dict[str, int]) -> None:
        proc = self.proc
        pipes = {"stdout": proc.stdout.fileno(), "diagnostics": proc.stderr.fileno(), **pipes}
        for name, fd in pipes.items():
            os.set_blocking(fd, False)
            self.selector.register(fd, selectors.EVENT_READ, name)
        if self.stdin:
            os.set_blocking(proc.stdin.fileno(), False)
            self.selector.register(proc.stdin.fileno(), selectors.EVENT_WRITE, "stdin")
            self.stdin_view = memoryview(self.stdin)
        else:
            proc.stdin.close()  # the program reads EOF at once

    # -- the event loop

    def _pump(self, deadline: float) -> None:
        while not self.exited:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._kill("timeout")
                return
            wait = remaining if self.pidfd is not None else min(remaining, 0.01)
            for key, _ in self.selector.select(wait):
                self._handle(key)
                if self.killed_for:
                    return
            if self.pidfd is None and not self.exited:
                self.exited = self._has_exited()

    def _handle(self, key: selectors.SelectorKey) -> None:
        what = key.data
        if what == "exit":
            self.exited = True
            self.selector.unregister(key.fd)
        elif what == "stdin":
            self._write_stdin(key.fd)
        elif self._read(key) and what in ("stdout", "stderr"):
            self.capped = True
            self._kill("output_limit")

    def _write_stdin(self, fd: int) -> None:
        try:
            written = os.write(fd, self.stdin_view[:65_536])
        except BlockingIOError:
            return
        except OSError:  # BrokenPipeError: the program exited or closed stdin; fine
            written = len(self.stdin_view)
        self.stdin_view = self.stdin_view[written:]
        if not self.stdin_view:
            self.selector.unregister(fd)
            self.proc.stdin.close()

    def _read(self, key: selectors.SelectorKey) -> bool | None:
        """Read one chunk into its buffer; unregister at EOF. True when the buffer passed
        its cap (it is cut to the cap), None when a full chunk came (there may be more)."""
        fd, buffer = key.fd, self.output[key.data]
        cap = self.limits.max_output_bytes if key.data in ("stdout", "stderr") else _STATUS_CAP
        try:
            data = os.read(fd, 65_536)
        except BlockingIOError:
            return False
        except OSError:
            data = b""
        if not data:
            self.selector.unregister(fd)
            return False
        buffer += data
        if len(buffer) > cap:
            del buffer[cap:]
            return True
        return None if len(data) == 65_536 else False

    def _drain(self, until: float) -> None:
        """After the program ended (and everything was killed): read what is left in the
        pipes until EOF, never past ``until`` (a process we could not kill may hold them)."""
        for key in list(self.selector.get_map().values()):
            if key.data in ("exit", "stdin"):
                self.selector.unregister(key.fd)
        while self.selector.get_map() and time.monotonic() < until:
            for key, _ in self.selector.select(until - time.monotonic()):
                if self._read(key):
                    self.selector.unregister(key.fd)  # capped: nothing is left to kill
                    self.capped = self.capped or key.data in ("stdout", "stderr")

    # -- killing and reaping

    def _has_exited(self) -> bool:
        """Exited but not reaped yet (WNOWAIT keeps its pid and process group reserved)."""
        if not hasattr(os, "waitid"):  # not Linux: reaps it (then the process group may go)
            return self.proc.poll() is not None
        try:
            info = os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        return info is not None

    def _wait_exit(self, timeout: float) -> bool:
        until = time.monotonic() + timeout
        while not self._has_exited():
            if time.monotonic() >= until:
                return False
            time.sleep(0.005)
        return True

    def _kill(self, reason: str) -> None:
        self.killed_for = reason
        pid = self.proc.pid
        if self.plan.namespaces:
            # Kill the namespace's init (unshare's child): the kernel then kills everything in
            # the namespace and unshare, having reaped init, exits; no zombie is left behind.
            inits = _children_of(pid)
            for child in inits:
                _signal(child, signal.SIGKILL)
            if inits and self._wait_exit(5.0):
                return
        _signal_group(pid, signal.SIGKILL)  # unshare's --kill-child then kills init
        if not self.plan.namespaces:
            _kill_marked(self.workdir)

    def _kill_leftovers(self) -> None:
        """The program exited by itself. In a pid namespace nothing survives it; in the
        fallback kill its process group (the leader is an unreaped zombie, so the id cannot
        have been reused) and every process still carrying its marker (setsid daemons).
        Always: whether it forked cannot be told reliably, and the scan costs ~1 ms."""
        if not self.plan.namespaces:
            _signal_group(self.proc.pid, signal.SIGKILL)
            _kill_marked(self.workdir)

    def _finish(self) -> None:
        """Make sure the child is dead, reap it (keeping its CPU time), close everything."""
        proc = self.proc
        if not self._has_exited():  # only after an unexpected error in the host loop
            self._kill(self.killed_for or "timeout")
        try:
            if proc.returncode is not None:  # reaped by poll() (no waitid)
                raise ChildProcessError
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            self.usage_cpu = usage.ru_utime + usage.ru_stime
        except ChildProcessError:
            proc.returncode = proc.returncode if proc.returncode is not None else -signal.SIGKILL
        if self.pidfd is not None:
            os.close(self.pidfd)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            try:
                stream.close()
            except (OSError, ValueError):
                pass

    # -- the outcome

    def _status_lines(self) -> list[list[str]]:
        text = self.output["status"].decode("ascii", "replace")
        return [line.split() for line in text.splitlines() if line.strip()]

    def _result(self, duration: float) -> ExecResult:
        lines = self._status_lines()
        ready = next((line for line in lines if line[0] == "ready"), None)
        layers = set(self._host_layers())
        if ready is not None:
            layers.update(word for word in ready[1:] if word in LAYERS)
        isolation = tuple(layer for layer in LAYERS if layer in layers)
        stdout = self.output["stdout"].decode("utf-8", "replace")
        stderr = self.output["stderr"].decode("utf-8", "replace")
        exit_code, cpu = self.proc.returncode, self.usage_cpu
        if self.plan.namespaces:  # unshare's status is init's; init reports the program's
            for line in lines:  # the last one is init's
                if line[0] == "exit" and len(line) == 3:
                    try:
                        exit_code, cpu = os.waitstatus_to_exitcode(int(line[1])), float(line[2])
                    except ValueError:
                        pass
        if self.killed_for is not None:
            reason, exit_code = self.killed_for, None
        elif self.capped:
            reason = "output_limit"
        elif ready is None:
            reason = "crashed"
            stderr += self.output["diagnostics"].decode("utf-8", "replace")
        else:
            reason = self._classify(exit_code, cpu, memory=any(line[0] == "memory" for line in lines))
        return ExecResult(stdout, stderr, exit_code, duration, reason, isolation)

    def _classify(self, exit_code: int, cpu: float, memory: bool) -> str:
        if memory:
            return "memory"
        if exit_code == 0:
            return "ok"
        if exit_code > 0:
            return "error"
        if -exit_code == signal.SIGXCPU or (-exit_code == signal.SIGKILL and cpu >= self.limits.cpu_s - 0.05):
            return "timeout"
        return "killed"


def _proc_entries() -> list[str]:
    try:
        return os.listdir("/proc")
    except OSError:  # not Linux: nothing to scan
        return []


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _children_of(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as handle:
            return [int(child) for child in handle.read().split()]
    except OSError:  # kernel without CONFIG_PROC_CHILDREN: scan every process's parent
        children = []
        for name in _proc_entries():
            if name.isdigit() and _parent_of(int(name)) == pid:
                children.append(int(name))
        return children


def _parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
        return int(stat.rsplit(b")", 1)[1].split()[1])  # the name may contain spaces and ')'
    except (OSError, ValueError, IndexError):
        return None


def _kill_marked(marker: str, rounds: int = 50) -> None:
    """SIGKILL every process whose command line contains ``marker`` (a run's working
    directory path, present in every process the fallback bootstrap forked), until none
    is left. Reap those that were reparented to us (when this process is a subreaper)."""
    needle = marker.encode()
    me = os.getpid()
    for _ in range(rounds):
        found = []
        for name in _proc_entries():
            if not name.isdigit() or int(name) == me:
                continue
            try:
                with open(f"/proc/{name}/cmdline", "rb") as handle:
                    if needle not in handle.read():
                        continue
            except OSError:
                continue
            found.append(int(name))
            _signal(int(name), signal.SIGKILL)
        if not found:
            return
        for pid in found:
            if _parent_of(pid) == me:
                try:
                    os.waitpid(pid, 0)
                except ChildProcessError:
                    pass


# ---------------------------------------------------------------------------------------
# The bootstrap: runs in the child interpreter (``python -S -s -B -u -c``), preceded by a
# ``C = {...}`` line with the run's configuration. Without namespaces it sets up the
# limits and runs the program in the same process. In a pid namespace it is pid 1: it
# sets up the read-only mounts, forks the program's process and reports its status.

_BOOTSTRAP = r'''
import os, sys

W = C["workdir"]


def say(*words):
    """One line on the private status pipe to the host."""
    try:
        os.write(C["status_fd"], (" ".join(map(str, words)) + "\n").encode())
    except OSError:
        pass


def libc():
    import ctypes
    return ctypes, ctypes.CDLL(None, use_errno=True)


def check(ctypes, result, what):
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, what + ": " + os.strerror(err))


def read_only_mounts():
    """Every mount read-only except the working directory (a writable bind mount) and a
    fresh /dev/shm. Returns (done, private_shm)."""
    ctypes, lib = libc()
    L = ctypes.c_long

    class MountAttr(ctypes.Structure):
        _fields_ = [(n, ctypes.c_uint64) for n in ("attr_set", "attr_clr", "propagation", "userns_fd")]

    path = W.encode()
    # open_tree(OPEN_TREE_CLONE): a detached writable copy, taken before "/" turns read-only
    clone = lib.syscall(L(428), L(-100), path, L(1 | os.O_CLOEXEC))
    if clone < 0:
        return False, False
    attr = MountAttr(1 | 2, 0, 0, 0)  # MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID
    if lib.syscall(L(442), L(-100), b"/", L(0x8000), ctypes.byref(attr), L(ctypes.sizeof(attr))) != 0:
        os.close(clone)  # mount_setattr(AT_RECURSIVE) failed: nothing changed
        return False, False
    # move_mount(MOVE_MOUNT_F_EMPTY_PATH); failing now would leave the program a read-only
    # working directory: raise, the host reports "crashed"
    check(ctypes, lib.syscall(L(429), L(clone), b"", L(-100), path, L(4)), "move_mount")
    os.close(clone)
    os.chdir(W)  # the old cwd is on the read-only mount
    options = ("size=%dm,mode=1777" % C["shm_mb"]).encode()
    shm = lib.mount(b"tmpfs", b"/dev/shm", b"tmpfs", L(2 | 4 | 8), options) == 0  # nosuid,nodev,noexec
    return True, shm


def become_init():
    """pid 1 of the namespace: fork the program, reap orphans, report the program's wait
    status and CPU time, exit (the kernel then kills what is left in the namespace)."""
    os.setsid()  # the program's kill(0) stays inside the namespace
    child = os.fork()
    if child == 0:
        return
    import _signal
    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)  # pid 1 ignores what has no handler; SIGINT had one
    for fd in (0, 1, 2, C["stderr_fd"]):
        os.close(fd)
    while True:
        pid, status, usage = os.wait4(-1, 0)
        if pid == child:
            say("exit", status, usage.ru_utime + usage.ru_stime)
            os._exit(0)


def drop_privileges():
    ctypes, lib = libc()
    L = ctypes.c_long
    layers = []
    if C["drop_to"] is not None:
        os.setgroups([])
        os.setgid(C["drop_to"])
        os.setuid(C["drop_to"])
        layers.append("nobody")
    elif C["drop_caps"]:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            last = int(f.read())
        for cap in range(last + 1):
            lib.prctl(L(24), L(cap), L(0), L(0), L(0))  # PR_CAPBSET_DROP

        class Header(ctypes.Structure):
            _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

        class Data(ctypes.Structure):
            _fields_ = [(n, ctypes.c_uint32) for n in ("effective", "permitted", "inheritable")]

        check(ctypes, lib.capset(ctypes.byref(Header(0x20080522, 0)), (Data * 2)()), "capset")
        layers.append("nocaps")
    if not hasattr(lib, "prctl"):  # not Linux
        return layers
    check(ctypes, lib.prctl(L(38), L(1), L(0), L(0), L(0)), "PR_SET_NO_NEW_PRIVS")
    if not C["namespaces"]:  # die with the host thread (setuid cleared any earlier setting)
        lib.prctl(L(1), L(9), L(0), L(0), L(0))  # PR_SET_PDEATHSIG, SIGKILL
        if os.getppid() != C["host_pid"]:
            os._exit(70)
    return layers


def limit_resources():
    import resource, _signal  # not `signal`: it imports enum, several ms per run

    def limit(kind, soft, hard):
        _, current = resource.getrlimit(kind)
        if current != resource.RLIM_INFINITY:
            soft, hard = min(soft, current), min(hard, current)
        resource.setrlimit(kind, (soft, hard))

    limit(resource.RLIMIT_CPU, C["cpu"], C["cpu"] + 1)  # SIGXCPU, then SIGKILL a second later
    limit(resource.RLIMIT_FSIZE, C["fsize"], C["fsize"])
    limit(resource.RLIMIT_CORE, 0, 0)
    layers = ["rlimits"]
    if C["nproc"] is not None:
        limit(resource.RLIMIT_NPROC, C["nproc"], C["nproc"])
        layers.append("nproc")
    _signal.signal(_signal.SIGXFSZ, _signal.SIG_IGN)  # a too-big write fails with EFBIG instead
    return layers


def limit_memory():
    import resource
    _, current = resource.getrlimit(resource.RLIMIT_AS)
    value = C["as_bytes"] if current == resource.RLIM_INFINITY else min(C["as_bytes"], current)
    resource.setrlimit(resource.RLIMIT_AS, (value, value))


def install_audit_hook(shm, contained):
    import mmap
    from os.path import realpath, isdir, isabs, join, dirname, basename

    inside_prefix = W + "/"
    fsdecode = os.fsdecode
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    forks = mmap.mmap(-1, 8)  # shared with every forked child: a run-wide counter

    def deny(why):
        raise PermissionError(1, "sandbox: " + why)

    def resolve(path, dir_fd=None, follow=True):
        path = fsdecode(path)
        if dir_fd not in (None, -1, -100) and not isabs(path):
            path = join(os.readlink("/proc/self/fd/%d" % dir_fd), path)
        if follow:
            return realpath(path)
        return join(realpath(dirname(path) or "."), basename(path))

    def allowed(path):
        return (
            path == W
            or path.startswith(inside_prefix)
            or path == "/dev/null"
            or (shm and path.startswith("/dev/shm/"))
        )

    def other_process(path):
        if not path.startswith("/proc/"):
            return False
        head = path[6:].split("/", 1)[0]
        return head.isdigit() and int(head) != os.getpid()

    def on_open(args):
        path, mode, flags = args
        if isinstance(path, int):
            return
        real = resolve(path)
        if other_process(real):
            deny("cannot read other processes' /proc files: %s" % fsdecode(path))
        if allowed(real):
            return
        if (flags or 0) & write_flags or (isinstance(mode, str) and any(c in mode for c in "wax+")):
            deny("cannot write outside the working directory: %s" % fsdecode(path))
        if mode is None and isdir(real):  # os.open of a directory: dir_fd= calls could escape
            deny("cannot open directories outside the working directory: %s" % fsdecode(path))

    def paths(*specs):  # (path index, dir_fd index or None, follow symlinks)
        def check_paths(args):
            for index, fd_index, follow in specs:
                path = args[index]
                if isinstance(path, int):
                    continue
                dir_fd = args[fd_index] if fd_index is not None else None
                if not allowed(resolve(path, dir_fd, follow)):
                    deny("cannot modify files outside the working directory: %s" % fsdecode(path))
        return check_paths

    def on_sqlite(args):
        database = args[0]
        if isinstance(database, (str, bytes, os.PathLike)) and fsdecode(database) not in (":memory:", ""):
            if not allowed(resolve(database)):
                deny("cannot open databases outside the working directory")

    def on_kill(args):
        pid = args[0]
        if pid in (0, os.getpid()):
            return
        if pid == -1:
            deny("cannot signal every process")
        try:
            group = -pid if pid < 0 else os.getpgid(pid)
        except OSError:
            group = None
        if group != os.getpgrp():
            deny("cannot signal processes outside the sandbox")

    def on_killpg(args):
        if args[0] not in (0, os.getpgrp()):
            deny("cannot signal processes outside the sandbox")

    def on_fork(args):
        count = int.from_bytes(forks[:8], "little") + 1
        forks[:8] = count.to_bytes(8, "little")
        if count > C["max_forks"]:
            raise BlockingIOError(11, "sandbox: process limit reached")

    def refuse(why):
        def handler(*args, **kwargs):
            deny(why)
        return handler

    handlers = {
        "open": on_open,
        "os.mkdir": paths((0, 2, False)),
        "os.rmdir": paths((0, 1, False)),
        "os.remove": paths((0, 1, False)),
        "os.rename": paths((0, 2, False), (1, 3, False)),
        "os.link": paths((0, 2, True), (1, 3, False)),
        "os.symlink": paths((1, 2, False)),
        "os.chmod": paths((0, 2, True)),
        "os.chown": paths((0, 3, True)),
        "os.utime": paths((0, 3, True)),
        "os.truncate": paths((0, None, True)),
        "os.setxattr": paths((0, None, True)),
        "os.removexattr": paths((0, None, True)),
        "os.chflags": paths((0, None, True)),
        "sqlite3.connect": on_sqlite,
        "os.kill": on_kill,
        "os.killpg": on_killpg,
        "os.fork": on_fork,
        "os.forkpty": on_fork,
    }
    if not C["network"]:
        no_network = refuse("network access is disabled")

        def on_socket(args):
            if args[1] != 1:  # AF_UNIX socketpairs (asyncio, multiprocessing) keep working
                no_network()

        def on_send(args):
            if args[1] is not None:
                no_network()

        handlers["socket.__new__"] = on_socket
        handlers["socket.sendto"] = on_send
        handlers["socket.sendmsg"] = on_send
        for event in ("socket.connect", "socket.bind", "socket.getaddrinfo", "socket.gethostbyname",
                      "socket.gethostbyname_ex", "socket.gethostbyaddr", "socket.getnameinfo"):
            handlers[event] = no_network
    if not contained:  # a new program would run without this hook and outside any wall
        no_exec = refuse("cannot start other programs in this sandbox (no namespaces)")
        for event in ("os.exec", "os.posix_spawn", "os.spawn", "os.system", "subprocess.Popen",
                      "ctypes.dlsym", "ctypes.cdata"):
            handlers[event] = no_exec

        def on_dlopen(args):
            if args[0] is not None:  # `import ctypes` itself opens the main program
                no_exec()

        handlers["ctypes.dlopen"] = on_dlopen
        import _posixsubprocess, _signal  # entry points without an audit event
        _posixsubprocess.fork_exec = no_exec
        _signal.pidfd_send_signal = no_exec  # `signal` copies it from _signal when imported
        os.pidfd_open = no_exec

    def hook(event, args):
        handler = handlers.get(event)
        if handler is not None:
            handler(args)

    sys.addaudithook(hook)


def run_program():
    import site
    site.setquit()  # -S skipped site: define exit() and quit() as usual
    site.sethelper()
    sys.argv[:] = ["main.py"]
    sys.path[:] = [W] + [p for p in sys.path if p] + C["site"]
    main = type(sys)("__main__")
    main.__file__ = "main.py"
    main.__builtins__ = __builtins__
    sys.modules["__main__"] = main
    with open("main.py", "rb") as f:
        source = f.read()
    exec(compile(source, "main.py", "exec"), main.__dict__)


def report(exc):
    """Print an uncaught exception as Python would, without the bootstrap's frames (the
    -c line first, then "<sandbox>" ones: run_program, the audit hook's)."""
    if isinstance(exc, MemoryError):
        say("memory")
    kept = []
    tb = exc.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name != "<sandbox>" and (kept or name != "<string>"):
            kept.append(tb)
        tb = tb.tb_next
    tb = None
    for frame in reversed(kept):
        tb = type(frame)(tb, frame.tb_frame, frame.tb_lasti, frame.tb_lineno)
    sys.excepthook(type(exc), exc.with_traceback(tb), tb)  # it prints exc.__traceback__


try:
    os.chdir(W)
    layers, shm = [], False
    if C["namespaces"]:
        done, shm = read_only_mounts()
        if done:
            layers.append("rofs")
        become_init()
    layers += limit_resources()
    layers += drop_privileges()
    limit_memory()
    install_audit_hook(shm, contained=C["namespaces"] and "rofs" in layers)
    layers.append("audit")
except BaseException:
    import traceback
    traceback.print_exc()
    sys.stderr.write("sandbox: setup failed\n")
    os._exit(70)

os.dup2(C["stderr_fd"], 2)  # from here on fd 2 is the program's stderr pipe
os.close(C["stderr_fd"])
say("ready", *layers)
try:
    run_program()
except SystemExit:
    raise
except BaseException as exc:
    report(exc)
    sys.exit(1)
'''
