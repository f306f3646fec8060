"""One sandbox run: write the program into a fresh working directory, spawn the bootstrap
(``bootstrap.py``, inside ``bwrap`` when the plan is isolated), feed stdin, read
stdout/stderr/status incrementally, enforce the deadline, the output caps and the run-wide
memory and process budget, kill and reap everything the program started, and classify the
outcome."""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .budget import INTERVAL_S, tree_usage
from .bwrap import bwrap_command, site_packages
from .jobs import LAYERS, MAIN_FILE, ExecResult, Plan, SandboxLimits
from .processes import children_of, kill_marked, proc_entries, signal_group, signal_pid

__all__ = ["run_in_sandbox"]

_DRAIN_S = 2.0  # after the program ended: how long to wait for its pipes to close
_STATUS_CAP = 16_384  # bytes of status messages kept (the program could spam the pipe)
# The bootstrap runs in the child as ``python -S -s -B -u -c <its source>``, compiled under the
# name "<sandbox>" so that tracebacks can leave its frames out; read once, it is a real module
# (linted and tested) rather than a string.
_BOOTSTRAP_SOURCE = (Path(__file__).parent / "bootstrap.py").read_text()


def run_in_sandbox(code: str, stdin: str, limits: SandboxLimits, files: tuple, plan: Plan) -> ExecResult:
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
    for name in proc_entries():
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

    def __init__(self, workdir: str, stdin: str, limits: SandboxLimits, plan: Plan) -> None:
        self.workdir = workdir
        self.stdin = stdin.encode("utf-8", "surrogatepass")
        self.limits = limits
        self.plan = plan
        self.proc: subprocess.Popen | None = None
        self.pidfd: int | None = None
        self.selector = selectors.DefaultSelector()
        # stdout/stderr: the program's (capped at max_output_bytes, past it the run is
        # killed); status: the bootstrap's messages; diagnostics: bwrap's/bootstrap's stderr
        self.output = {name: bytearray() for name in ("stdout", "stderr", "status", "diagnostics")}
        self.killed_for: str | None = None  # "timeout" / "output_limit": the host killed the run
        self.capped = False  # some stream passed max_output_bytes
        self.exited = False
        self.usage_cpu = 0.0

    # -- spawning

    def _command(self, status_fd: int, stderr_fd: int) -> list[str]:
        limits, plan = self.limits, self.plan
        nproc = None
        if plan.nproc:  # the kernel's cap: the program's own tasks, itself included, on top of what
            # its uid already runs (the watchdog samples every INTERVAL_S; a fork loop through ctypes
            # is faster, so the cap itself must be exact, not a backstop above the budget)
            base = _count_tasks(plan.nproc_uid) if plan.nproc_uid is not None else 0
            nproc = limits.max_processes + base
        config = {
            "workdir": self.workdir,
            "status_fd": status_fd,
            "stderr_fd": stderr_fd,
            "isolated": plan.isolated,
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
            "site": site_packages(plan.python),
        }
        # compiled as "<sandbox>" so that tracebacks can leave the bootstrap's frames out
        source = f"{_BOOTSTRAP_SOURCE}\nmain({config!r})\n"
        bootstrap = f"exec(compile({source!r}, '<sandbox>', 'exec'))"
        python = [plan.python, "-S", "-s", "-B", "-u", "-c", bootstrap, self.workdir]
        if not plan.isolated:
            return python
        wall = bwrap_command(
            workdir=self.workdir,
            trees=plan.trees,
            as_root=not plan.userns,
            network=limits.network,
            tmpfs_bytes=limits.max_file_mb * 1024 * 1024,
        )
        return [*wall, *python]

    def _host_layers(self) -> tuple[str, ...]:
        layers = ["budget"]
        if self.plan.isolated:
            layers += ["bwrap", "pidns", "ipcns", "minfs"]
            if self.plan.userns:
                layers.append("userns")
            if not self.limits.network:
                layers.append("netns")
        return tuple(layers)

    def run(self) -> ExecResult:
        start = time.monotonic()
        # The child's own stderr (fd 2) carries only bwrap's and the bootstrap's
        # diagnostics; the program's stderr is a separate pipe the bootstrap moves onto
        # fd 2 just before the program starts, so "bwrap: ..." noise never reaches it.
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
        next_check = time.monotonic() + INTERVAL_S
        while not self.exited:
            now = time.monotonic()
            remaining = deadline - now
            if remaining <= 0:
                self._kill("timeout")
                return
            if now >= next_check:
                if self._over_budget():
                    return
                next_check = now + INTERVAL_S
            wait = min(remaining, next_check - now)
            if self.pidfd is None:
                wait = min(wait, 0.01)
            for key, _ in self.selector.select(max(wait, 0.0)):
                self._handle(key)
                if self.killed_for:
                    return
            if self.pidfd is None and not self.exited:
                self.exited = self._has_exited()

    def _over_budget(self) -> bool:
        """Kill the run when the program's processes together pass the memory or process
        budget (``budget.py``); bwrap's monitor and the namespace's init are not counted."""
        usage = tree_usage(self.proc.pid, skip_levels=2 if self.plan.isolated else 0)
        if usage.tasks > self.limits.max_processes:
            self._kill("processes")
        elif usage.memory_bytes > self.limits.memory_mb * 1024 * 1024:
            self._kill("memory")
        return self.killed_for is not None

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
        if self.plan.isolated:
            # Kill the namespace's init (bwrap's child): the kernel then kills everything in
            # the namespace and bwrap, having reaped init, exits; no zombie is left behind.
            inits = children_of(pid)
            for child in inits:
                signal_pid(child, signal.SIGKILL)
            if inits and self._wait_exit(5.0):
                return
        signal_group(pid, signal.SIGKILL)  # bwrap's --die-with-parent then kills init
        if not self.plan.isolated:
            kill_marked(self.workdir)

    def _kill_leftovers(self) -> None:
        """The program exited by itself. In a pid namespace nothing survives it; in the
        fallback kill its process group (the leader is an unreaped zombie, so the id cannot
        have been reused) and every process still carrying its marker (setsid daemons).
        Always: whether it forked cannot be told reliably, and the scan costs ~1 ms."""
        if not self.plan.isolated:
            signal_group(self.proc.pid, signal.SIGKILL)
            kill_marked(self.workdir)

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
        if self.plan.isolated:  # bwrap's status is init's; init reports the program's
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
