"""envs.sandbox's limits: wall clock, CPU, memory, processes, output and file size, and their validation."""

from __future__ import annotations

import signal
import sys

import pytest

from envs import sandbox
from envs.sandbox import SandboxLimits, run_python
from tests.envs.sandbox_helpers import HOSTILE, assert_cleaned_up, hostile

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox targets Linux")

# ---------------------------------------------------------------------------------------
# Benign programs that reach a limit


def test_cpu_limit_is_a_timeout():
    # The wall clock is far off (a busy machine may give the loop a fraction of a core):
    # SIGXCPU, not the host's kill (exit code None), shows that RLIMIT_CPU ended it.
    result = run_python("while True: pass", limits=SandboxLimits(timeout_s=300, cpu_s=1))
    assert result.reason == "timeout" and result.exit_code == -signal.SIGXCPU
    # SIGXCPU ignored: the hard limit's SIGKILL a second later is still the CPU limit
    stubborn = "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True: pass"
    result = run_python(stubborn, limits=SandboxLimits(timeout_s=300, cpu_s=1))
    assert result.reason == "timeout" and result.exit_code == -signal.SIGKILL


def test_file_size_limit():
    result = run_python("open('big', 'wb').write(b'x' * 3_000_000)", limits=SandboxLimits(max_file_mb=1))
    assert result.reason == "error" and "File too large" in result.stderr


# ---------------------------------------------------------------------------------------
# Hostile programs, in every mode


# The wall-clock limits below leave a loaded machine seconds to start the program and print its
# working directory (assert_cleaned_up reads it): at 0.5 s a CI run under load killed the sandboxed
# Python before its first line.
def test_infinite_loop_times_out(mode, marker):
    limits = SandboxLimits(timeout_s=5.0, cpu_s=10)
    result = run_python(hostile("while True:\n    pass", marker), limits=limits)
    assert result.reason == "timeout" and result.exit_code is None  # the host's kill, not RLIMIT_CPU
    assert result.duration_s < 30  # a hang guard; the exit code already shows the wall clock ended it
    assert_cleaned_up(result, marker)


def test_sleeping_program_times_out(marker):
    result = run_python(hostile("import time\ntime.sleep(60)", marker), limits=SandboxLimits(timeout_s=5.0))
    assert result.reason == "timeout" and result.duration_s < 30  # did not wait out the 60 s sleep
    assert_cleaned_up(result, marker)


def test_fork_bomb_is_contained(mode, marker):
    body = "while True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    limits = SandboxLimits(timeout_s=5.0, cpu_s=2, max_processes=8)
    result = run_python(hostile(body, marker), limits=limits)
    assert result.reason in ("processes", "timeout", "error", "killed"), result
    assert result.duration_s < 30  # a hang guard: the bomb was stopped
    assert_cleaned_up(result, marker)
    assert run_python("print('machine still fine')").stdout == "machine still fine\n"


def test_memory_hog_is_memory(mode, marker):
    hog = "hog = []\nwhile True:\n    hog.append(bytearray(10**7))"
    result = run_python(hostile(hog, marker), limits=HOSTILE)
    assert result.reason == "memory" and result.exit_code == 1, result
    assert "MemoryError" in result.stderr
    assert_cleaned_up(result, marker)
    huge = run_python("x = bytearray(8 * 1024**3)", limits=HOSTILE)
    assert huge.reason == "memory"


def test_huge_output_is_capped(mode, marker):
    cap = HOSTILE.max_output_bytes
    result = run_python(hostile("while True:\n    sys.stdout.write('x' * 1000)", marker), limits=HOSTILE)
    assert result.reason == "output_limit" and result.exit_code is None
    assert len(result.stdout.encode()) <= cap and result.stdout.endswith("x" * 100)
    assert_cleaned_up(result, marker)
    flood = run_python("import sys\nwhile True:\n    sys.stderr.write('e' * 1000)", limits=HOSTILE)
    assert flood.reason == "output_limit" and 0 < len(flood.stderr) <= cap


# ---------------------------------------------------------------------------------------
# The process cap


FORK_LOOP = (
    "import ctypes, os, time\nlibc = ctypes.CDLL(None, use_errno=True)\nalive = 1\n"
    "for _ in range(FORKS):\n    try:\n        pid = FORK\n    except OSError:\n        pid = -1\n"
    "    if pid == 0:\n        time.sleep(10)\n        os._exit(0)\n    alive += pid > 0\n"
    "print(alive, flush=True)\n"
)  # forks until refused (children live 10 s, longer than the loop); prints how many were alive


@pytest.mark.parametrize("fork", ["os.fork()", "libc.fork()"])
def test_the_issue_s_case_64_processes_under_bwrap_is_exact(fork):
    # bubblewrap, a ctypes fork loop, max_processes=64: 65 were alive (issue 52, item 2). In the
    # isolated mode the kernel's cap is the bound, so the program ends "ok" with at most 64 (63
    # when a task of the sandbox's own, e.g. a thread, holds one of the 64 at that moment).
    if "bwrap" not in sandbox.isolation_layers():
        pytest.skip("needs the isolated (bubblewrap) mode")
    program = FORK_LOOP.replace("FORKS", "70").replace("FORK", fork)
    # The cap is max_processes on top of the tasks nobody already runs at spawn: a sandbox of
    # another test worker that ends meanwhile frees its share (one run under `pytest -n 2` forked
    # to 71, the watchdog ended it; another forked all 70 and ended "ok" with 71 alive). Exactness
    # is the claim for a program alone: a run beside another worker's sandboxes is tried again,
    # and a cap that does not hold fails all three tries.
    for _ in range(3):
        result = run_python(program, limits=SandboxLimits(timeout_s=30.0, max_processes=64))
        if result.reason == "ok" and int(result.stdout.split()[0]) <= 64:
            break
    assert result.reason == "ok", result
    assert 56 <= int(result.stdout.split()[0]) <= 64, result.stdout  # refused at the cap, not before


@pytest.mark.parametrize("fork", ["os.fork()", "libc.fork()"])
def test_a_program_never_has_more_processes_than_max_processes(mode, fork):
    # 65 processes were alive at once under max_processes=64 (issue 52, item 2): the kernel's
    # cap sat 2 above the budget as a backstop, and a fork loop through ctypes (which the audit
    # hook does not see) outran the watchdog. The program itself is one of its processes.
    program = FORK_LOOP.replace("FORKS", "64").replace("FORK", fork)
    result = run_python(program, limits=SandboxLimits(timeout_s=20.0, max_processes=8))
    alive = [int(line) for line in result.stdout.split() if line.isdigit()]
    # every fork beyond the budget was refused (modes without a process cap may refuse them
    # all), or the watchdog ended the run for it
    assert (result.reason == "ok" and len(alive) == 1 and alive[0] <= 8) or result.reason == "processes", (
        result
    )


# ---------------------------------------------------------------------------------------
# The limits' validation


@pytest.mark.parametrize(
    "field, value", [("timeout_s", 0), ("timeout_s", float("inf")), ("cpu_s", 0), ("cpu_s", 1.5),
                     ("memory_mb", 10), ("max_output_bytes", -1), ("max_file_mb", 0), ("max_processes", True),
                     ("network", "no")]
)  # fmt: skip
def test_limits_validation_names_the_field(field, value):
    with pytest.raises(ValueError, match=f"SandboxLimits.{field}"):
        SandboxLimits(**{field: value})
