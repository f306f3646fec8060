"""Run untrusted code against tests in the sandbox and report each test's outcome.

Three ways to test a solution, all through ``envs.sandbox`` (nothing here executes the
solution or the tests in this process):

* ``run_function_tests(solution, tests)``: function tasks. ONE sandbox process runs a small
  harness program (``envs/code/function_harness.py``) that loads the task's ``setup`` and the
  solution (from ``solution.py`` in the sandbox's temp dir), then runs each test (a Python
  statement, usually ``assert f(1) == 2``) on its own, with a per-test time budget
  (``signal.setitimer``), catching every exception, and reports one result line per test.
* ``run_check_program(solution, check_program, entry_point)``: HumanEval's authoritative
  ``def check(candidate)`` program, run as one test: ``check(entry_point)``.
* ``run_io_tests(solution, io_tests)``: stdin/stdout tasks, one sandbox run per case; the
  output is compared after normalising whitespace (``normalize_output``).

``run_task(task, solution)`` picks the right one for an ``envs.code.task.CodeTask``.

Adversarial solutions. Any text is accepted (empty, huge, syntax errors, endless loops,
``sys.exit``/``os._exit``, printing, deleting files) without raising here; a test counts as
passed only when the harness reported it passed. How results are protected:

* A random nonce is sent on the harness's stdin with the tests (never in a file or argv);
  the harness reads all of stdin before the solution loads, points fd 0 at ``/dev/null``,
  keeps a private duplicate of stdout for its result lines (each prefixed with the nonce)
  and points fd 1 at ``/dev/null``: what the solution prints is discarded, and a line it
  writes elsewhere without the nonce is ignored. A test with no result line failed (so
  ``sys.exit(0)`` or ``os._exit(0)`` before or during the tests passes nothing). The tests
  are never on disk, so a solution cannot read them to hard-code answers.
* ``SystemExit``/``KeyboardInterrupt`` raised by the solution are caught like any error.
  The harness's functions and the test code look builtins up in private copies, the
  ``builtins`` module and the recursion limit are restored before every test, and each
  test runs in a fresh copy of the solution's namespace without names that shadow
  builtins: neither ``builtins.abs = ...`` (at import or during the call) nor a
  solution's own ``abs`` can fool ``assert abs(f(x) - y) < 1e-6``.
* ``__eq__`` tricks: ``assert A == B``, ``assert f(x)``, ``assert not f(x)`` and
  ``assert values_match(A, B)`` are rewritten (inside the sandbox, by AST) to calls that
  first convert both sides to plain data through the builtin types' own methods: exact
  ``bool``/``int``/``float``/``complex``/``str``/``bytes``/``None``/``Decimal``/``range``,
  classes (metaclass exactly ``type``: compared by identity), lists, tuples, dicts, sets,
  ``deque`` (a ``Counter`` or ``OrderedDict`` becomes a ``dict``, a numpy scalar an
  ``int``/``float``/``bool``, a namedtuple a ``tuple``); any other object fails the test
  with ``TypeError``. An object whose ``__eq__`` always returns True passes nothing, and a
  failed comparison reports ``AssertionError: got <value>``.
* ``values_match(actual, expected)`` (for tests whose expected value came from JSON, e.g.
  CodeI/O) compares floats with ``math.isclose(rel_tol=1e-6, abs_tol=1e-9)``, lists and
  tuples alike, and dict keys as JSON writes them.

Residual risk: the solution runs in the same interpreter as the harness, so a solution
that deliberately introspects it (``sys._getframe``, ``gc``, patching the ``__code__`` of
harness or stdlib functions) can find the nonce and forge results; comparisons the
rewrite does not cover (``assert abs(f(x) - y) < 1e-6``, ``<``, ``in``) still call the
returned object's methods. The sandbox bounds what such code can do to the machine; the
risk is to the reward, and it needs deliberate interpreter hacking, not printing.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # envs.sandbox is imported when code first runs: importing this module stays light
    from envs.code.task import CodeTask
    from envs.sandbox import ExecResult, SandboxLimits, SandboxPool

__all__ = [
    "TestOutcome",
    "TestReport",
    "normalize_output",
    "run_function_tests",
    "run_check_program",
    "run_io_tests",
    "run_task",
]

DEFAULT_TEST_TIMEOUT_S = 3.0  # per test of a function task
DEFAULT_LOAD_TIMEOUT_S = 10.0  # setup + loading the solution
DEFAULT_CHECK_TIMEOUT_S = 15.0  # a whole HumanEval check() program
_MAX_ERROR = 200
_STDERR_TAIL = 1000


@dataclass(frozen=True)
class TestOutcome:
    """One test's result. ``error`` is short ASCII ("" when passed): ``"AssertionError"``,
    ``"AssertionError: got 4"``, ``"NameError: name 'foo' is not defined"``, ``"timeout"``,
    ``"wrong output: expected '3', got '4'"``."""

    __test__ = False  # not a pytest test class

    test: str
    passed: bool
    error: str = ""


@dataclass(frozen=True)
class TestReport:
    """The outcomes of one solution on a list of tests.

    Attributes:
        outcomes: One per test, in the order given.
        status: The sandbox's reason for the run (``ok``, ``error``, ``timeout``, ``memory``,
            ``output_limit``, ``killed``, ``crashed``); for stdin/stdout tests the first
            case's reason that is not ``ok``, else ``ok``.
        compile_error: Why the solution could not be loaded (syntax error, exception or
            exit while importing), ``None`` when it loaded; then every test failed.
        stderr_tail: The end of the sandbox's stderr (ASCII), for debugging.
        duration_s: Sandbox wall time, summed over runs.
    """

    __test__ = False

    outcomes: tuple[TestOutcome, ...]
    status: str
    compile_error: str | None = None
    stderr_tail: str = ""
    duration_s: float = 0.0

    @property
    def passed(self) -> int:
        return sum(o.passed for o in self.outcomes)

    @property
    def total(self) -> int:
        return len(self.outcomes)

    @property
    def pass_rate(self) -> float:
        return self.passed / self.total if self.outcomes else 0.0

    @property
    def all_passed(self) -> bool:
        return bool(self.outcomes) and self.passed == self.total


def _ascii(text: str, max_chars: int) -> str:
    text = " ".join(str(text).encode("ascii", "backslashreplace").decode("ascii").split())
    return text if len(text) <= max_chars else text[: max_chars - 3] + "..."


def _tail(text: str) -> str:
    text = str(text).encode("ascii", "backslashreplace").decode("ascii")
    return text[-_STDERR_TAIL:]


def _utf8(text: str) -> str:
    """Text that can be written as UTF-8 (lone surrogates replaced)."""
    return str(text).encode("utf-8", "replace").decode("utf-8")


def _sandbox() -> Any:
    from envs import sandbox

    return sandbox


def _execute(job: Any, pool: SandboxPool | None) -> ExecResult:
    if pool is not None:
        return pool.submit(job).result()
    return _sandbox().run_python(job.code, stdin=job.stdin, limits=job.limits, files=job.files)


def _default_limits(n_tests: int, per_test_s: float, load_s: float) -> SandboxLimits:
    timeout = min(120.0, load_s + per_test_s * max(n_tests, 1) + 2.0)
    return _sandbox().SandboxLimits(
        timeout_s=timeout, cpu_s=int(timeout) + 1, max_output_bytes=max(65536, 512 * n_tests + 4096)
    )


def _missing_error(result: ExecResult) -> str:
    reason = result.reason
    if reason == "timeout":
        return "timeout"
    if reason == "memory":
        return "memory limit exceeded"
    if reason == "output_limit":
        return "output limit exceeded"
    if reason in ("ok", "error"):
        return f"no result: the process exited early (exit code {result.exit_code})"
    return f"no result: the process ended early ({reason})"


# --------------------------------------------------------------------------- function tests
def run_function_tests(
    solution: str,
    tests: Sequence[str],
    *,
    setup: str = "",
    limits: SandboxLimits | None = None,
    test_timeout_s: float | None = None,
    pool: SandboxPool | None = None,
) -> TestReport:
    """Run ``setup``, then ``solution``, then each test statement, in one sandbox process.

    Args:
        solution: Untrusted Python source defining the function(s) under test.
        tests: Python statements (usually one ``assert``) run one by one in a copy of the
            solution's namespace; a test passes when it raises nothing.
        setup: Trusted code run before the solution in the same namespace (imports).
        limits: Limits of the whole run (default: enough for loading plus every test's
            budget, at most 120 s).
        test_timeout_s: Time budget of one test (default 3 s, at most 3/4 of ``limits.timeout_s``).
        pool: Run on this ``SandboxPool`` (else ``run_python``).
    """
    tests = [_utf8(t) for t in tests]
    per_test = float(test_timeout_s or DEFAULT_TEST_TIMEOUT_S)
    if limits is None:
        limits = _default_limits(len(tests), per_test, DEFAULT_LOAD_TIMEOUT_S)
    per_test = min(per_test, 0.75 * float(limits.timeout_s))  # the harness reports before the sandbox kills
    nonce = secrets.token_hex(16)
    spec = {
        "setup": _utf8(setup),
        "tests": tests,
        "test_timeout": per_test,
        # the harness's own alarm fires before the sandbox's limit, so it can report
        "load_timeout": min(DEFAULT_LOAD_TIMEOUT_S, 0.75 * float(limits.timeout_s)),
    }
    job = _sandbox().SandboxJob(
        code=_FUNCTION_HARNESS,
        stdin=nonce + "\n" + json.dumps(spec),
        limits=limits,
        files={"solution.py": _utf8(solution)},
    )
    return _parse_harness_run(_execute(job, pool), nonce, tests)


def _parse_harness_run(result: ExecResult, nonce: str, tests: Sequence[str]) -> TestReport:
    errors: dict[int, tuple[bool, str]] = {}
    compile_error: str | None = None
    loaded = False
    prefix = nonce + " "
    for line in result.stdout.splitlines():
        if not line.startswith(prefix):
            continue  # not the harness's (cannot happen unless the solution found the fd)
        kind, _, rest = line[len(prefix) :].partition(" ")
        if kind == "L":
            loaded = True
        elif kind == "C" and compile_error is None and not loaded:
            compile_error = _ascii(rest, 300) or "the solution failed to load"
        elif kind == "T":
            index, ok, error = (rest.split(" ", 2) + ["", ""])[:3]
            if index.isdigit() and int(index) < len(tests) and int(index) not in errors:
                errors[int(index)] = (ok == "1", _ascii(error, _MAX_ERROR))
    if compile_error is None and not loaded:
        compile_error = f"the solution did not finish loading ({_missing_error(result)})"
    outcomes = []
    for i, test in enumerate(tests):
        if compile_error is not None:
            outcomes.append(TestOutcome(test, False, "not run: the solution did not load"))
        elif i in errors:
            ok, error = errors[i]
            outcomes.append(TestOutcome(test, ok, "" if ok else (error or "failed")))
        else:
            outcomes.append(TestOutcome(test, False, _missing_error(result)))
    return TestReport(
        outcomes=tuple(outcomes),
        status=result.reason,
        compile_error=compile_error,
        stderr_tail=_tail(result.stderr),
        duration_s=float(result.duration_s or 0.0),
    )


def run_check_program(
    solution: str,
    check_program: str,
    entry_point: str,
    limits: SandboxLimits | None = None,
    *,
    setup: str = "",
    pool: SandboxPool | None = None,
) -> TestReport:
    """HumanEval style: run ``check_program`` (defines ``check(candidate)``) then
    ``check(entry_point)`` as ONE test; the report has one outcome, labelled
    ``check(<entry_point>)``. Default limits: 15 s for the whole check."""
    if not re.fullmatch(r"[A-Za-z_]\w*", entry_point or ""):
        raise ValueError(f"entry_point must be a Python identifier, got {entry_point!r}")
    if limits is None:
        limits = _default_limits(1, DEFAULT_CHECK_TIMEOUT_S, DEFAULT_LOAD_TIMEOUT_S)
    test = f"{check_program}\n\ncheck({entry_point})\n"
    report = run_function_tests(
        solution, [test], setup=setup, limits=limits, test_timeout_s=float(limits.timeout_s), pool=pool
    )
    label = f"check({entry_point})"
    outcomes = tuple(TestOutcome(label, o.passed, o.error) for o in report.outcomes)
    return TestReport(outcomes, report.status, report.compile_error, report.stderr_tail, report.duration_s)


# --------------------------------------------------------------------------- stdin/stdout tests
def normalize_output(text: str) -> str:
    """Output as compared: ``\\r\\n`` -> ``\\n``, trailing whitespace stripped from every
    line, trailing empty lines dropped (leading whitespace and inner blank lines count)."""
    lines = [line.rstrip() for line in str(text).replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


_SYNTAX_LINE = re.compile(r"^(SyntaxError|IndentationError|TabError)\b.*$", re.M)


def _syntax_error(result: ExecResult) -> str | None:
    """The SyntaxError of a program that did not compile: the error's location is the
    program file itself (``File "main.py", line N`` without ``, in <frame>``) and no frame
    of the program ran. A SyntaxError raised while running (``exec``) does not count."""
    if result.reason != "error":
        return None
    lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
    main = re.escape(getattr(_sandbox(), "MAIN_FILE", "main.py"))
    location = re.compile(rf'^\s*File "(?:.*/)?{main}", line \d+$')
    frame = re.compile(rf'^\s*File "(?:.*/)?{main}", line \d+, in ')
    if not lines or not _SYNTAX_LINE.match(lines[-1]) or any(frame.match(line) for line in lines):
        return None
    if not any(location.match(line) for line in lines):
        return None
    return _ascii(lines[-1], 300)


def _last_error_line(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    return _ascii(lines[-1], _MAX_ERROR) if lines else ""


def run_io_tests(
    solution: str,
    io_tests: Sequence[tuple[str, str]],
    *,
    limits: SandboxLimits | None = None,
    pool: SandboxPool | None = None,
) -> TestReport:
    """Run the program once per ``(stdin, expected stdout)`` case and compare outputs
    (``normalize_output``). A case passes when the run ends ``ok`` (exit code 0) and the
    outputs match. Without a pool the cases run one after another and stop early on a
    syntax error. Outcome labels are the stdin text."""
    sandbox = _sandbox()
    limits = limits or sandbox.SandboxLimits()
    solution = _utf8(solution)
    cases = [(_utf8(i), _utf8(o)) for i, o in io_tests]
    jobs = [sandbox.SandboxJob(code=solution, stdin=i, limits=limits) for i, _ in cases]
    results: list[ExecResult] = []
    compile_error = None
    if pool is not None:
        results = pool.map(jobs)
    else:
        for job in jobs:
            results.append(sandbox.run_python(job.code, stdin=job.stdin, limits=job.limits))
            compile_error = _syntax_error(results[-1])
            if compile_error:
                break
    if results and compile_error is None:
        compile_error = _syntax_error(results[0])
    outcomes = []
    for index, (stdin, expected) in enumerate(cases):
        if compile_error is not None:
            outcomes.append(TestOutcome(stdin, False, f"compile error: {compile_error}"))
            continue
        result = results[index]
        if result.reason == "ok":
            got, want = normalize_output(result.stdout), normalize_output(expected)
            if got == want:
                outcomes.append(TestOutcome(stdin, True, ""))
            else:
                error = f"wrong output: expected {_ascii(repr(want), 80)}, got {_ascii(repr(got), 80)}"
                outcomes.append(TestOutcome(stdin, False, error))
        elif result.reason == "error":
            detail = _last_error_line(result.stderr) or f"exit code {result.exit_code}"
            outcomes.append(TestOutcome(stdin, False, _ascii(detail, _MAX_ERROR)))
        else:
            outcomes.append(TestOutcome(stdin, False, _missing_error(result)))
    status = next((r.reason for r in results if r.reason != "ok"), "ok")
    return TestReport(
        outcomes=tuple(outcomes),
        status=status,
        compile_error=compile_error,
        stderr_tail=_tail(
            next((r.stderr for r in results if r.reason != "ok"), results[0].stderr if results else "")
        ),
        duration_s=float(sum(r.duration_s or 0.0 for r in results)),
    )


def run_task(
    task: CodeTask,
    solution: str,
    *,
    authoritative: bool = True,
    limits: SandboxLimits | None = None,
    pool: SandboxPool | None = None,
) -> TestReport:
    """Judge ``solution`` on a task's hidden tests: stdin/stdout cases, or for a function
    task its ``check_program`` when it has one and ``authoritative`` (HumanEval's pass@1
    verdict, one outcome), else its per-test asserts."""
    if task.kind == "stdio":
        return run_io_tests(solution, task.io_tests, limits=limits, pool=pool)
    if authoritative and task.check_program and task.entry_point:
        return run_check_program(
            solution, task.check_program, task.entry_point, setup=task.setup, limits=limits, pool=pool
        )
    return run_function_tests(solution, task.tests, setup=task.setup, limits=limits, pool=pool)


# --------------------------------------------------------------------------- the sandboxed harness
# The program the sandbox runs for function tests (its protocol: its docstring).
_FUNCTION_HARNESS = (Path(__file__).parent / "function_harness.py").read_text(encoding="utf-8")
