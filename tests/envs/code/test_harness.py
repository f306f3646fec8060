"""The code harness: per-test outcomes from the sandbox, robust to adversarial solutions."""

from __future__ import annotations

import pytest

from envs.code.harness import (
    TestOutcome,
    TestReport,
    normalize_output,
    run_check_program,
    run_function_tests,
    run_io_tests,
)
from envs.sandbox import SandboxLimits, SandboxPool

ADD = "def add(a, b):\n    return a + b\n"
ADD_TESTS = ["assert add(1, 2) == 3", "assert add(-1, 1) == 0", "assert add(2, 2) == 4"]


def errors(report: TestReport) -> list[str]:
    return [o.error for o in report.outcomes]


def test_correct_solution_passes_every_test():
    report = run_function_tests(ADD, ADD_TESTS)
    assert report.status == "ok" and report.compile_error is None
    assert (report.passed, report.total, report.pass_rate, report.all_passed) == (3, 3, 1.0, True)
    assert report.outcomes[0] == TestOutcome("assert add(1, 2) == 3", True, "")


def test_wrong_solution_fails_with_the_error_of_each_test():
    report = run_function_tests(
        "def add(a, b):\n    return a - b\n",
        [
            "assert add(1, 2) == 3",
            "assert add(1, 0) == 1",
            "assert foo(1) == 2",
            "assert add(1) == 1",
            "x = (",
        ],
    )
    assert [o.passed for o in report.outcomes] == [False, True, False, False, False]
    assert report.outcomes[0].error == "AssertionError: got -1"
    assert report.outcomes[2].error == "NameError: name 'foo' is not defined"
    assert report.outcomes[3].error.startswith("TypeError: add() missing 1 required positional argument")
    assert report.outcomes[4].error.startswith("invalid test: SyntaxError")
    assert report.passed == 1 and report.pass_rate == pytest.approx(0.2)


def test_plain_asserts_and_messages():
    report = run_function_tests(
        ADD,
        ["assert add(1, 1) == 3, 'one plus one'", "assert add(0, 0)", "assert not add(1, 0)", "assert 1 < 0"],
    )
    assert errors(report) == [
        "AssertionError: got 2 (one plus one)",
        "AssertionError: got 0",
        "AssertionError: got 1",
        "AssertionError",
    ]


def test_empty_test_list_and_empty_solution():
    assert run_function_tests(ADD, []).pass_rate == 0.0
    report = run_function_tests("", ADD_TESTS)
    assert report.compile_error is None and report.passed == 0
    assert all(e == "NameError: name 'add' is not defined" for e in errors(report))


def test_syntax_error_and_import_error_are_compile_errors():
    report = run_function_tests("def add(a, b)\n    return a + b\n", ADD_TESTS)
    assert report.compile_error.startswith("SyntaxError") and report.passed == 0
    assert all(e == "not run: the solution did not load" for e in errors(report))
    report = run_function_tests("1 / 0\n" + ADD, ADD_TESTS)
    assert report.compile_error == "ZeroDivisionError: division by zero" and report.passed == 0
    report = run_function_tests("\x00", ADD_TESTS)
    assert report.compile_error and report.passed == 0


def test_setup_runs_before_the_solution():
    solution = "def root(x):\n    return math.isqrt(x)\n"
    assert run_function_tests(solution, ["assert root(16) == 4"], setup="import math").all_passed
    assert run_function_tests(solution, ["assert root(16) == 4"]).passed == 0


def test_infinite_loop_times_out_per_test_and_the_others_still_run():
    solution = "def f(x):\n    while x:\n        pass\n    return 1\n"
    report = run_function_tests(solution, ["assert f(1) == 1", "assert f(0) == 1"], test_timeout_s=0.5)
    assert errors(report) == ["timeout", ""]
    assert report.status == "ok"


def test_infinite_loop_while_loading():
    report = run_function_tests(
        "while True:\n    pass\n", ADD_TESTS, limits=SandboxLimits(timeout_s=2, cpu_s=2)
    )
    assert "timeout" in report.compile_error and report.passed == 0


def test_endless_loop_that_swallows_the_alarm_hits_the_run_limit():
    solution = (
        "def add(a, b):\n    while True:\n        try:\n            while True:\n                pass\n"
        "        except BaseException:\n            pass\n"
    )
    report = run_function_tests(
        solution, ADD_TESTS, limits=SandboxLimits(timeout_s=2, cpu_s=2), test_timeout_s=0.3
    )
    assert report.passed == 0 and report.status == "timeout"
    assert all(e == "timeout" for e in errors(report))


@pytest.mark.parametrize(
    "solution",
    [
        "import sys\nsys.exit(0)\n",
        "import os\nos._exit(0)\n",
        "raise SystemExit(0)\n",
        "raise KeyboardInterrupt\n",
        "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
    ],
)
def test_exiting_while_loading_passes_nothing(solution):
    report = run_function_tests(solution + ADD, ADD_TESTS)
    assert report.passed == 0 and report.compile_error


@pytest.mark.parametrize(
    "body, later_test_runs",
    [
        ("import sys; sys.exit(0)", True),  # caught like any exception
        ("raise SystemExit(0)", True),
        ("import os; os._exit(0)", False),  # the process is gone: no result, not passed
        ("import os; os.abort()", False),
    ],
)
def test_exiting_inside_a_test_fails_that_test(body, later_test_runs):
    solution = f"def add(a, b):\n    if a == -1:\n        {body}\n    return a + b\n"
    report = run_function_tests(solution, ADD_TESTS)
    assert [o.passed for o in report.outcomes] == [True, False, later_test_runs]
    if not later_test_runs:
        assert report.outcomes[2].error.startswith("no result")


def test_forged_result_lines_do_not_count():
    forgeries = [
        # the result format with a guessed nonce, on stdout, stderr and every open fd
        "import os, sys\n"
        "lines = ''.join(f'{n} T {i} 1 \\n' for n in ('0' * 32, 'nonce', '') for i in range(3)) + 'D\\n'\n"
        "print(lines); sys.stderr.write(lines)\n"
        "for fd in range(3, 20):\n"
        "    try:\n        os.write(fd, lines.encode())\n    except OSError:\n        pass\n",
        # read the nonce from stdin (already consumed) and from every file in the cwd
        "import os, sys\nstolen = sys.stdin.read()\n"
        "stolen += ''.join(open(p, errors='replace').read() for p in os.listdir('.') if os.path.isfile(p))\n"
        "for line in stolen.splitlines():\n    print(line.split(' ')[0] + ' T 0 1')\n",
    ]
    for forged in forgeries:
        report = run_function_tests(forged + "def add(a, b):\n    return 99\n", ADD_TESTS)
        assert report.passed == 0, report


def test_tests_are_not_readable_by_the_solution():
    solution = (
        "import os, sys\n"
        "seen = sys.stdin.read()\n"
        "for name in os.listdir('.'):\n"
        "    if os.path.isfile(name) and name != 'solution.py':\n"
        "        seen += open(name, errors='replace').read()\n"
        "def leaked():\n    return seen\n"
    )
    assert run_function_tests(solution, ["assert 'SECRET_MARK' not in leaked()"]).all_passed


def test_deleting_files_in_the_working_directory_changes_nothing():
    solution = "import os\nfor name in os.listdir('.'):\n    os.remove(name)\n" + ADD
    assert run_function_tests(solution, ADD_TESTS).all_passed


def test_always_equal_objects_and_builtin_patches_pass_nothing():
    tricks = {
        "class Eq:\n    def __eq__(self, other):\n        return True\n    __bool__ = lambda self: True\n"
        "def add(a, b):\n    return Eq()\n": "TypeError: cannot compare a value of type Eq",
        "class Int(int):\n    def __eq__(self, other):\n        return True\n"
        "def add(a, b):\n    return Int(7)\n": "AssertionError: got 7",
        "class L(list):\n    def __eq__(self, other):\n        return True\n"
        "def add(a, b):\n    return L([7])\n": "AssertionError: got [7]",
        "import operator\nclass Eq:\n    __eq__ = operator.is_not\n"
        "def add(a, b):\n    return Eq()\n": "TypeError: cannot compare a value of type Eq",
    }
    for solution, error in tricks.items():
        report = run_function_tests(solution, ADD_TESTS)
        assert report.passed == 0, solution
        assert report.outcomes[0].error.startswith(error), report.outcomes[0]
    # monkeypatching builtins, at import or during the call, and shadowing them
    close = [
        "assert abs(add(1, 2) - 3) < 1e-9",
        "assert all([add(1, 2) == 3])",
        "assert values_match(add(1, 2), 3)",
    ]
    patches = [
        "import builtins\nbuiltins.abs = lambda x: 0\nbuiltins.all = lambda x: True\n"
        "def add(a, b):\n    return 99\n",
        "import builtins\ndef add(a, b):\n    builtins.abs = lambda x: 0\n    builtins.all = lambda x: True\n"
        "    builtins.isinstance = lambda *a: True\n    builtins.len = lambda x: 0\n    return 99\n",
        "def abs(x):\n    return 0\ndef all(x):\n    return True\ndef values_match(a, b):\n    return True\n"
        "def add(a, b):\n    return 99\n",
        "import builtins\nbuiltins.AssertionError = type('Fake', (Exception,), {})\n"
        "def add(a, b):\n    return 99\n",
    ]
    for solution in patches:
        report = run_function_tests(solution, close + ADD_TESTS)
        assert report.passed == 0, (solution, report)


def test_plain_data_conversions_keep_legitimate_answers():
    solution = (
        "import collections, numpy as np\n"
        "P = collections.namedtuple('P', 'x y')\n"
        "def counts(s):\n    return collections.Counter(s)\n"
        "def point():\n    return P(1, 2)\n"
        "def big():\n    return np.int64(3)\n"
        "def half():\n    return np.float64(0.5)\n"
        "def yes():\n    return np.bool_(True)\n"
    )
    tests = [
        "assert counts('aab') == {'a': 2, 'b': 1}",
        "assert point() == (1, 2)",
        "assert big() == 3",
        "assert half() == 0.5",
        "assert yes()",
        "assert values_match(point(), [1, 2.0000000001])",
        "assert values_match({1: 2.0, False: None}, {'1': 2, 'false': None})",
        "assert not values_match(True, 1)",
        "assert not values_match([1, 2], [1, 2, 3])",
        "assert type(point()).__mro__[1] == tuple",  # classes compare by identity
        "assert type(half()) != float",
    ]
    report = run_function_tests(solution, tests)
    assert report.all_passed, report


def test_huge_solution_and_output_do_not_break_the_parent():
    filler = "x = 1\n" * 20_000  # 120 kB
    assert run_function_tests(filler + ADD, ADD_TESTS).all_passed
    spam = "import sys\nfor _ in range(200000):\n    print('T 0 1 spam'); sys.stderr.write('x' * 100)\n" + ADD
    report = run_function_tests(spam, ADD_TESTS)
    assert isinstance(report, TestReport) and len(report.stderr_tail) <= 1000
    # text that is not valid UTF-8 (a lone surrogate) in the solution and in a test
    report = run_function_tests("s = '\ud800'\n" + ADD, [*ADD_TESTS, "assert add('\ud800', '') == 1"])
    assert report.passed == 3 and report.outcomes[3].error.startswith("AssertionError")


def test_check_program_is_one_outcome():
    check = "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(2, 2) == 4\n"
    report = run_check_program(ADD, check, "add")
    assert report.outcomes == (TestOutcome("check(add)", True, ""),)
    report = run_check_program("def add(a, b):\n    return 3\n", check, "add")
    assert report.outcomes == (TestOutcome("check(add)", False, "AssertionError: got 3"),)
    with pytest.raises(ValueError, match="identifier"):
        run_check_program(ADD, check, "add; import os")


SUM_PROGRAM = "a, b = map(int, input().split())\nprint(a + b)\n"


def test_normalize_output():
    assert normalize_output("3  \r\n4\t\n\n\n") == "3\n4"
    assert normalize_output("  3\n\n4") == "  3\n\n4"
    assert normalize_output("") == normalize_output("\n \n") == ""


def test_io_tests_pass_fail_and_whitespace():
    cases = [("1 2\n", "3\n"), ("5 5", "10   \n\n"), ("1 1\n", "3"), ("x y\n", "0")]
    report = run_io_tests(SUM_PROGRAM, cases)
    assert [o.passed for o in report.outcomes] == [True, True, False, False]
    assert report.outcomes[2].error == "wrong output: expected '3', got '2'"
    assert report.outcomes[3].error.startswith("ValueError: invalid literal for int()")
    assert report.status == "error" and report.outcomes[0].test == "1 2\n"
    # leading whitespace and inner lines count
    assert not run_io_tests("print(' 3')", [("", "3")]).all_passed
    assert run_io_tests("print('a')\nprint()\nprint('b')", [("", "a\n\nb\n")]).all_passed


def test_io_tests_with_a_pool_and_adversarial_programs():
    with SandboxPool(workers=2) as pool:
        report = run_io_tests(SUM_PROGRAM, [("1 2", "3"), ("2 2", "4"), ("3 2", "6")], pool=pool)
        assert [o.passed for o in report.outcomes] == [True, True, False]
        report = run_io_tests("print(", [("1 2", "3"), ("2 2", "4")], pool=pool)
        assert report.compile_error.startswith("SyntaxError") and report.passed == 0
    limits = SandboxLimits(timeout_s=1, cpu_s=1)
    report = run_io_tests("while True:\n    pass\n", [("", "")], limits=limits)
    assert report.status == "timeout" and report.outcomes[0].error == "timeout"
    assert run_io_tests("import sys\nprint(3)\nsys.exit(1)", [("", "3")]).passed == 0  # must exit 0
    assert (
        run_io_tests("print(", [("", ""), ("", "")])
        .outcomes[1]
        .error.startswith("compile error: SyntaxError")
    )
    assert run_io_tests("raise SyntaxError('mine')", [("", "")]).compile_error is None
    assert run_io_tests("", [("", "")]).all_passed  # empty program, empty expected output
    assert run_io_tests(SUM_PROGRAM, []).total == 0
