"""envs.sandbox's isolation: the layers per mode, and what hostile programs cannot reach or leave behind."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from envs import sandbox
from envs.sandbox import SandboxLimits, run_python
from tests.conftest import SUBPROCESS_TIMEOUT_S
from tests.envs.sandbox_helpers import (
    HOSTILE,
    _system_python_for_nobody,
    assert_cleaned_up,
    hostile,
    processes_with,
)

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox targets Linux")


@pytest.fixture
def bystander():
    """A process of the test's own uid that hostile programs try to kill."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield proc
    proc.kill()
    proc.wait()


# ---------------------------------------------------------------------------------------
# The layers per mode, and the network a run may ask for


def test_isolation_layers_per_mode(mode, request):
    assert "budget" in mode
    if request.node.callspec.params["mode"].startswith("isolated"):
        assert {"bwrap", "pidns", "netns", "ipcns", "minfs", "nproc"} <= set(mode)
        assert "nobody" in mode or {"userns", "nocaps"} <= set(mode)
    else:
        assert not {"bwrap", "userns", "pidns", "netns", "ipcns", "minfs"} & set(mode)
    if os.geteuid() == 0:  # root never runs the program with its capabilities
        assert "nobody" in mode or "nocaps" in mode


def test_network_can_be_enabled():
    code = "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\nprint('created')"
    assert run_python(code).reason == "error"
    assert run_python(code, limits=SandboxLimits(network=True)).stdout == "created\n"


# ---------------------------------------------------------------------------------------
# Hostile programs, in every mode


def test_cannot_write_outside_the_working_directory(mode, marker):
    targets = [Path(tempfile.gettempdir()) / marker, REPO / "envs" / f"{marker}.py", Path.home() / marker]
    body = f"""
import subprocess
for target in {[str(t) for t in targets]!r}:
    for how in ("open", "os.open", "rename", "shell"):
        try:
            if how == "open":
                open(target, "w").write("pwned")
            elif how == "os.open":
                os.close(os.open(target, os.O_CREAT | os.O_WRONLY))
            elif how == "rename":
                open("here.txt", "w").write("pwned")
                os.rename("here.txt", target)
            else:
                subprocess.run(["sh", "-c", "echo pwned > " + target], check=True, capture_output=True)
            print("WROTE", how, target)
        except (OSError, subprocess.CalledProcessError) as err:
            print("refused", how, type(err).__name__)
open("inside.txt", "w").write("fine")
print("inside ok")
"""
    try:
        result = run_python(hostile(body, marker), limits=HOSTILE)
        assert result.ok, result
        assert "inside ok" in result.stdout
        assert not any(target.exists() for target in targets)  # what matters: the host has none
        # the isolated program may write to its private /tmp (a tmpfs the host never sees)
        private_tmp = "bwrap" in mode and str(targets[0])
        wrote = [line for line in result.stdout.splitlines() if "WROTE" in line]
        assert [line for line in wrote if private_tmp not in line] == []
        assert result.stdout.count("refused") >= 4 * (len(targets) - 1)
        assert_cleaned_up(result, marker)
    finally:
        for target in targets:
            target.unlink(missing_ok=True)


def test_cannot_read_secrets_from_the_environment(mode, marker, monkeypatch):
    secret = f"s3cr3t-{uuid.uuid4().hex}"
    monkeypatch.setenv("TEAMGYM_TEST_SECRET", secret)
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    bystander_proc = subprocess.Popen(sleeper, env={**os.environ, "TEAMGYM_TEST_SECRET": secret})
    body = f"""
print(dict(os.environ))
for pid in (os.getppid(), {os.getpid()}, {bystander_proc.pid}):
    try:
        print(open("/proc/%d/environ" % pid).read())
    except OSError as err:
        print("refused", pid, type(err).__name__)
"""
    try:
        result = run_python(hostile(body, marker), limits=HOSTILE)
    finally:
        bystander_proc.kill()
        bystander_proc.wait()
    assert result.ok, result
    assert "TEAMGYM_TEST_SECRET" not in result.stdout and secret not in result.stdout + result.stderr
    assert "'HOME': " in result.stdout  # the program did print its (minimal) environment
    assert_cleaned_up(result, marker)


def test_no_network_not_even_localhost(mode, marker):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    connect = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=1); print('CONNECTED')"
    body = f"""
import socket, subprocess
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=1)
    print("CONNECTED")
except OSError as err:
    print("refused", type(err).__name__)
try:
    socket.getaddrinfo("localhost", {port})
    print("resolved")
except OSError as err:
    print("no lookup", type(err).__name__)
try:  # a fresh interpreter (no audit hook), where starting programs is allowed
    print(subprocess.run([sys.executable, "-c", {connect!r}], capture_output=True, text=True).stdout)
except OSError as err:
    print("no subprocess", type(err).__name__)
"""
    try:
        result = run_python(hostile(body, marker), limits=HOSTILE)
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody connected
    finally:
        listener.close()
    assert result.ok, result
    assert "CONNECTED" not in result.stdout and "refused" in result.stdout
    assert_cleaned_up(result, marker)


def test_cannot_kill_the_parent_or_the_test_process(mode, marker, bystander):
    pgid = os.getpgrp()
    body = f"""
import signal
for target in (os.getppid(), {os.getpid()}, {bystander.pid}, -{pgid}):
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(target, sig)
            print("sent", target)
        except OSError as err:
            print("refused", target, type(err).__name__)
try:
    os.killpg({pgid}, signal.SIGKILL)
except OSError as err:
    print("refused group", type(err).__name__)
try:
    os.kill(-1, signal.SIGKILL)  # everything it may signal
except OSError as err:
    print("refused all", type(err).__name__)
print("still here")
"""
    result = run_python(hostile(body, marker), limits=HOSTILE)
    time.sleep(0.2)  # a signal that got through would have landed by now
    assert bystander.poll() is None, "the sandbox killed a bystander process"
    assert result.ok, result  # and this test process is evidently alive
    assert "still here" in result.stdout
    assert_cleaned_up(result, marker)


def test_daemon_does_not_survive_the_run(mode, marker):
    body = """
import time
os.closerange(3, 256)  # no status pipe: the host must find the daemon without its help
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        try:  # a fresh program carrying only the marker, where exec is allowed
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(60)", MARKER])
        except OSError:
            time.sleep(60)
    os._exit(0)
time.sleep(0.3)
print("parent done")
"""
    result = run_python(hostile(body, marker), limits=HOSTILE)
    assert result.ok and "parent done" in result.stdout, result
    assert result.duration_s < HOSTILE.timeout_s  # the run did not wait for the daemon
    assert_cleaned_up(result, marker)


# ---------------------------------------------------------------------------------------
# Unprivileged host user (as root: run a small battery as nobody through setpriv)

UNPRIVILEGED_SCRIPT = r"""
import importlib.util, json, os, subprocess, sys
package = sys.argv[1]  # a copy of the envs/sandbox package, imported on its own
spec = importlib.util.spec_from_file_location(
    "sandbox", os.path.join(package, "__init__.py"), submodule_search_locations=[package]
)
sb = importlib.util.module_from_spec(spec); sys.modules["sandbox"] = sb; spec.loader.exec_module(sb)
try:
    layers = sb.isolation_layers()
except sb.SandboxUnavailableError as err:
    print(json.dumps({"unavailable": str(err)})); sys.exit(0)
bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
limits = sb.SandboxLimits(timeout_s=30, cpu_s=10, memory_mb=256, max_processes=8)  # never the clock
bomb_limits = sb.SandboxLimits(timeout_s=1.5, cpu_s=2, memory_mb=256, max_processes=8)  # may end on it
programs = {
    "kill": "import os\nfor pid in (os.getppid(), %d):\n    try: os.kill(pid, 9)\n    except OSError: pass\n"
            "print('alive')" % bystander.pid,
    "forkbomb": "import os\nwhile True:\n    try: os.fork()\n    except OSError: pass",
    "daemon": "import os, time\nprint(os.getcwd())\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)",
    "write": "open('/tmp/%s', 'w').write('x')" % sys.argv[2],
    "memory": "x = bytearray(4 * 1024**3)",
}
out = {"layers": layers}
for name, code in programs.items():
    result = sb.run_python(code, limits=bomb_limits if name == "forkbomb" else limits)
    out[name] = [result.reason, result.stdout]
out["bystander_alive"] = bystander.poll() is None
workdir = out["daemon"][1].strip().encode()
out["daemon_survivors"] = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        if workdir in open("/proc/%s/cmdline" % pid, "rb").read():
            out["daemon_survivors"].append(pid)
    except OSError:
        pass
bystander.kill()
print(json.dumps(out))
"""


@pytest.mark.parametrize("namespaces", ["1", "0"])
def test_unprivileged_host_user(namespaces, marker):
    python = _system_python_for_nobody()
    if python is None:
        pytest.skip("needs root, setpriv and a system python3 that nobody can run")
    copy_dir = tempfile.mkdtemp()
    try:
        os.chmod(copy_dir, 0o755)
        module = shutil.copytree(os.path.dirname(sandbox.__file__), os.path.join(copy_dir, "sandbox"))
        proc = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, "-c", UNPRIVILEGED_SCRIPT,
             module, marker],
            env={"PATH": os.environ["PATH"], sandbox.NAMESPACES_ENV: namespaces,
                 sandbox.ALLOW_HOST_ACCESS_ENV: "1"},
            capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT_S, cwd=copy_dir,
        )  # fmt: skip
    finally:
        shutil.rmtree(copy_dir)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    if "unavailable" in out:
        pytest.skip(out["unavailable"])
    layers = set(out["layers"])
    assert "nproc" in layers and "nobody" not in layers  # the kernel caps a non-root uid's processes
    # in bwrap's user namespace the program is uid 65534 there, without capabilities
    assert ({"bwrap", "userns", "pidns", "minfs", "nocaps"} <= layers) == (namespaces == "1")
    assert out["kill"] == ["ok", "alive\n"] or out["kill"][0] == "error"
    assert out["bystander_alive"]
    assert out["forkbomb"][0] in ("processes", "timeout", "error", "killed")
    assert out["daemon"][0] == "ok" and "teamgym-sandbox-" in out["daemon"][1]
    assert out["daemon_survivors"] == []
    # isolated: /tmp is the program's own tmpfs (the write succeeds there, never on the host)
    assert out["write"][0] == ("ok" if namespaces == "1" else "error")
    assert not os.path.exists(f"/tmp/{marker}")
    assert out["memory"][0] == "memory"
    assert processes_with(marker) == []


# ---------------------------------------------------------------------------------------
# The interpreter the isolated mode runs


def test_an_interpreter_reached_through_a_symlinked_folder_runs_isolated(tmp_path):
    # A venv whose folder is a symlink (managed venv folders) failed every run with "bwrap:
    # execvp <link>/bin/python: No such file or directory ... Install bubblewrap" (issue 52,
    # item 1): the trees are bound at their real paths, the interpreter was run by the link's.
    bin_dir = os.path.dirname(sys.executable)
    if shutil.which("bwrap") is None or os.path.realpath(bin_dir) != os.path.realpath(sys.prefix + "/bin"):
        pytest.skip("needs bwrap and an interpreter in <prefix>/bin (a venv, as a user's)")
    link = tmp_path / "linked-venv"
    link.symlink_to(os.path.realpath(sys.prefix), target_is_directory=True)
    program = (
        "from envs.sandbox import run_python\n"
        "r = run_python('import numpy, sys; print(numpy.__name__)')\n"
        "print(r.reason, r.stdout.strip(), 'bwrap' in r.isolation, r.stderr[-300:])\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in (sandbox.NAMESPACES_ENV, sandbox.PYTHON_ENV)}
    env[sandbox.NAMESPACES_ENV] = "1"  # isolated or nothing: the fallback would hide the failure
    out = subprocess.run(
        [str(link / "bin" / os.path.basename(sys.executable)), "-c", program],
        cwd=Path(__file__).resolve().parents[2],  # the repository, where envs imports from
        env=env,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT_S,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[:3] == ["ok", "numpy", "True"], out.stdout


def test_an_interpreter_bwrap_cannot_start_is_not_blamed_on_a_missing_bwrap(monkeypatch, tmp_path):
    # the message told users with bubblewrap installed to install it (issue 52, item 1)
    if shutil.which("bwrap") is None:
        pytest.skip("needs bwrap")
    monkeypatch.setenv(sandbox.PYTHON_ENV, str(tmp_path / "no-such-python"))
    monkeypatch.setenv(sandbox.NAMESPACES_ENV, "1")
    with pytest.raises(sandbox.SandboxUnavailableError) as raised:
        sandbox.isolation_layers()
    message = str(raised.value)
    assert "bubblewrap is installed" in message and "no-such-python" in message
    assert "Install bubblewrap" not in message
