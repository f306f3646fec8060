"""envs.sandbox on benign programs: output, errors and exit codes, stdin and files, the pool, the API."""

from __future__ import annotations

import signal
import sys

import pytest

from envs import sandbox
from envs.sandbox import REASONS, SandboxJob, SandboxLimits, SandboxPool, run_python

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox targets Linux")

# ---------------------------------------------------------------------------------------
# Benign programs


def test_benign_program_output_and_layers(mode):
    result = run_python("import math\nprint(math.factorial(5))\nprint('ünïcode')")
    assert result.ok and result.reason == "ok"
    assert result.stdout == "120\nünïcode\n" and result.stderr == "" and result.exit_code == 0
    assert result.isolation == mode
    assert {"rlimits", "audit"} <= set(mode)
    assert 0 < result.duration_s < 10


def test_stdin_is_passed():
    result = run_python("import sys\nprint(sys.stdin.read()[::-1])", stdin="abc\n" * 3 + "end")
    assert result.ok, result
    assert result.stdout == "dne" + "\ncba" * 3 + "\n"


def test_large_stdin_to_a_program_that_ignores_it():
    result = run_python("print('done')", stdin="x" * 1_000_000)  # more than a pipe holds
    assert result.ok and result.stdout == "done\n"


def test_files_are_importable_like_a_harness():
    harness = "def check(candidate):\n    assert candidate(2) == 4, 'square is wrong'\n    print('passed')\n"
    files = {"harness.py": harness, "data/input.txt": "21"}
    code = "from harness import check\ncheck(lambda x: x * x)\nprint(int(open('data/input.txt').read()) * 2)"
    result = run_python(code, files=files)
    assert result.ok, result
    assert result.stdout == "passed\n42\n"
    failing = run_python("from harness import check\ncheck(lambda x: x + 1)", files=files)
    assert failing.reason == "error" and "AssertionError: square is wrong" in failing.stderr


def test_exception_is_an_error_with_a_clean_traceback():
    result = run_python("def f():\n    raise ValueError('boom')\nf()")
    assert result.reason == "error" and result.exit_code == 1 and not result.ok
    assert result.stderr.startswith("Traceback (most recent call last):\n")
    assert 'File "main.py", line 3, in <module>' in result.stderr
    assert 'File "main.py", line 2, in f' in result.stderr
    assert result.stderr.endswith("ValueError: boom\n")
    assert "<sandbox>" not in result.stderr and "<string>" not in result.stderr


def test_syntax_error_and_exit_codes():
    syntax = run_python("def f(:\n    pass")
    assert syntax.reason == "error" and "SyntaxError" in syntax.stderr and "main.py" in syntax.stderr
    assert run_python("import sys; sys.exit(3)").exit_code == 3
    assert run_python("exit(0)").ok  # -S skips site, exit() must still exist
    assert run_python("raise SystemExit('bye')").stderr == "bye\n"


def test_killed_by_its_own_signal():
    result = run_python("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)")
    assert result.reason == "killed" and result.exit_code == -signal.SIGSEGV
    aborted = run_python("import os; os.abort()")
    assert aborted.reason == "killed" and aborted.exit_code == -signal.SIGABRT


def test_undecodable_output_is_replaced():
    result = run_python("import sys\nsys.stdout.buffer.write(b'ok \\xff\\xfe end\\n')")
    assert result.ok and result.stdout == "ok \ufffd\ufffd end\n"


def test_interpreter_that_cannot_start_is_crashed_not_raised(monkeypatch):
    monkeypatch.setenv(sandbox.NAMESPACES_ENV, "0")
    monkeypatch.setenv(sandbox.ALLOW_HOST_ACCESS_ENV, "1")
    monkeypatch.setenv(sandbox.PYTHON_ENV, "/nonexistent/python3")
    result = run_python("print(1)")
    assert result.reason == "crashed" and result.exit_code is None
    assert "could not start the interpreter" in result.stderr


# ---------------------------------------------------------------------------------------
# The pool and the API


def test_pool_map_keeps_job_order():
    code = "import time, random\ntime.sleep(random.random() / 10)\nprint({i} * {i})"
    jobs = [SandboxJob(code.format(i=i)) for i in range(7)]
    jobs.append(SandboxJob("import sys\nprint(sys.stdin.read() + '!')", stdin="last"))
    with SandboxPool(workers=3) as pool:
        results = pool.map(jobs)
    assert [r.stdout for r in results] == [f"{i * i}\n" for i in range(7)] + ["last!\n"]
    assert all(r.ok for r in results)


def test_pool_runs_concurrently_and_mixes_outcomes():
    # Each sleeper prints when it started and when it woke: run concurrently, every one starts
    # before any wakes (one at a time, each would start after the previous one woke). No
    # bound on the total time, so a busy machine that is slow to start them passes too.
    sleeper = "import time; print(time.time()); time.sleep(3); print(time.time())"
    jobs = [SandboxJob(sleeper) for _ in range(4)]
    jobs += [SandboxJob("raise RuntimeError('x')"), "print('plain code')"]
    with SandboxPool(workers=4, limits=SandboxLimits(timeout_s=60)) as pool:
        futures = [pool.submit(job) for job in jobs]
        results = [future.result() for future in futures]
    assert [r.reason for r in results] == ["ok"] * 4 + ["error", "ok"]
    starts, wakes = zip(*(map(float, r.stdout.split()) for r in results[:4]), strict=True)
    assert max(starts) < min(wakes)
    assert results[-1].stdout == "plain code\n"


def test_pool_uses_job_limits_over_pool_limits():
    slow = SandboxJob("import time; time.sleep(5)", limits=SandboxLimits(timeout_s=0.5))
    with SandboxPool(workers=2, limits=SandboxLimits(timeout_s=30)) as pool:
        result = pool.submit(slow).result()
    assert result.reason == "timeout"  # under the pool's 30 s the 5 s sleep would have ended "ok"


def test_job_files_are_hashable_and_sorted():
    job = SandboxJob("import a", files={"b.py": "", "a.py": "print(1)"})
    assert job.files == (("a.py", "print(1)"), ("b.py", ""))
    assert hash(job) == hash(SandboxJob("import a", files=[("a.py", "print(1)"), ("b.py", "")]))
    assert run_python(job.code, files=job.files).stdout == "1\n"


@pytest.mark.parametrize("name", ["../escape.py", "/etc/passwd", "main.py", "", "dir/"])
def test_bad_file_names_are_refused(name):
    with pytest.raises(ValueError, match="files"):
        run_python("pass", files={name: "x"})


def test_reasons_are_the_documented_set():
    assert REASONS == ("ok", "error", "timeout", "memory", "processes", "output_limit", "killed", "crashed")
    for reason in REASONS:
        assert f"``{reason}``" in sandbox.__doc__
