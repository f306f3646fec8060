"""The code env's protocol on real tasks and the real sandbox: who runs what, who is
rewarded for what, what each role sees next (the conformance suite covers the API)."""

from __future__ import annotations

from pathlib import Path

import pytest

import envs
from envs.code.env import parse_assert_tests, parse_io_tests
from envs.parsing import MAX_PARSED_CHARS
from tests.envs.conftest import assert_linear_time, hostile_text, play_oracle, timed

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "code"
HUMANEVAL_0 = envs.TEST_SEED_START  # test seed 0 plays HumanEval/0 (has_close_elements)

BUGGY_HAS_CLOSE = """```python
def has_close_elements(numbers, threshold):
    return False
```"""
GOOD_HAS_CLOSE = """```python
def has_close_elements(numbers, threshold):
    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1:])
```"""
RIGHT_TESTS = """```python
assert has_close_elements([1.0, 2.0, 2.1], 0.2) == True
assert has_close_elements([1.0, 5.0], 0.5) == False
```"""


def make(team="mas", **kwargs):
    env = envs.make("code", team=team, split="test", **kwargs)
    env.reset(seed=HUMANEVAL_0)
    return env


def terms(env, agent):
    return env.infos[agent]["reward_terms"]


def test_test_split_plays_humaneval_and_train_split_codeio():
    env = make()
    assert env.task.id == "HumanEval/0" and env.task.entry_point == "has_close_elements"
    assert "def has_close_elements" in env.observe("coder_0")["prompt"]
    train = envs.make("code")
    train.reset(seed=0)
    assert train.task.id.startswith("codeio/") and train.task.tests


def test_buggy_code_is_caught_by_valid_tests_and_failures_feed_the_coder():
    env = make()
    env.step(BUGGY_HAS_CLOSE)
    assert 0 < terms(env, "coder_0")["local/hidden_pass"] < 1  # some hidden asserts expect False
    env.step(RIGHT_TESTS)
    tester = terms(env, "tester_0")
    assert tester["local/valid_tests"] == pytest.approx(0.5)  # both tests agree with the reference
    assert tester["local/catches_bug"] == 0.5  # a valid test fails on the buggy code
    assert not env.success and not any(env.terminations.values())
    prompt = env.observe("coder_0")["prompt"]
    assert "Your code failed the tester's tests:" in prompt
    assert "has_close_elements([1.0, 2.0, 2.1], 0.2) == True" in prompt and "AssertionError" in prompt
    env.step(GOOD_HAS_CLOSE)  # passes the tester's standing tests: agreement ends the episode
    assert terms(env, "coder_0")["local/hidden_pass"] == 1.0
    assert terms(env, "coder_0")["team/success"] == 1.0
    assert env.success and all(env.terminations.values())


def test_wrong_tests_earn_nothing_and_do_not_end_the_episode():
    env = make()
    env.step(GOOD_HAS_CLOSE)
    env.step("```python\nassert has_close_elements([1.0, 2.0], 5.0) == False\n```")  # wrong: True
    tester = terms(env, "tester_0")
    assert tester["local/valid_tests"] == 0.0 and "local/catches_bug" not in tester
    assert not any(env.terminations.values())
    assert "-> AssertionError" in env.observe("coder_0")["prompt"]


def test_last_turn_judges_the_final_code():
    env = make(max_cycles=1)
    env.step(GOOD_HAS_CLOSE)
    env.step("no tests at all")  # invalid, but the episode's last step: the code is judged
    assert terms(env, "tester_0")["local/invalid"] == -0.1
    assert terms(env, "tester_0")["team/success"] == 1.0 and env.success


def test_single_coder_submits_once():
    env = make(team="single")
    env.step(BUGGY_HAS_CLOSE)
    assert all(env.terminations.values()) and not env.success
    env = make(team="single")
    body = "    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1 :])"
    env.step(f"```python\n{body}\n```")
    assert env.success  # a body without `def` continues the task's signature (completion style)


def test_hostile_code_is_contained_and_scored_zero(tmp_path):
    marker = tmp_path / "pwned"
    env = make(team="single")
    env.step(f"```python\nimport os\nopen({str(marker)!r}, 'w').write('x')\nos.system('touch {marker}')\n```")
    assert not marker.exists()
    assert terms(env, "coder_0")["local/hidden_pass"] == 0.0 and not env.success


@pytest.mark.parametrize("name", ["apps.jsonl", "mbpp.jsonl", "codecontests.jsonl"])
def test_file_sources_play_with_their_references(name):
    env = play_oracle(envs.make("code", split="test", test_source=str(FIXTURES / name)), HUMANEVAL_0)
    assert env.success, f"{name}: the reference solution did not pass its own tests"


def test_parsers_take_only_what_they_should():
    code = "import os\nassert f(1) == 2\nx = 3\nassert f(\n  2) == 4\n"
    assert parse_assert_tests(code, max_tests=8) == ["assert f(1) == 2", "assert f(\n  2) == 4"]
    assert parse_assert_tests("assert f(1) == 2\nassert f(", max_tests=8) == ["assert f(1) == 2"]
    assert parse_assert_tests("assert a\n" * 20, max_tests=3) == ["assert a"] * 3
    text = "<input>1 2\n</input> <output>3</output>\n<INPUT>5</INPUT><Output> 5 </Output>"
    assert parse_io_tests(text, max_tests=8) == [("1 2", "3"), ("5", "5")]
    assert parse_io_tests("<input>a</input> x <input>b</input>\n<output>c</output>", 8) == [("b", "c")]
    assert parse_io_tests("<input>a</input><output>b", 8) == []  # never closed


def test_parsers_read_only_the_first_max_parsed_chars():
    pair = "<input>1</input><output>2</output>"
    assert parse_io_tests("x" * (MAX_PARSED_CHARS - len(pair)) + pair, 8) == [("1", "2")]
    assert parse_io_tests("x" * (MAX_PARSED_CHARS - len(pair) + 1) + pair, 8) == []
    test = "\nassert y"
    assert parse_assert_tests("#" * (MAX_PARSED_CHARS - len(test)) + test, 8) == ["assert y"]
    assert parse_assert_tests("#" * (MAX_PARSED_CHARS - len(test) + 1) + test, 8) == []


# Replies a tester could send to make parsing slow: tags repeated without their partner (a
# lazy regex for the pair backtracked cubically: 16 kB took 9 s), thousands of asserts
# (ast.get_source_segment re-split the source per statement: quadratic, 1,777 lines took
# 1.8 s), statements too long to keep or not asserts at all (looked at, never kept). The
# sizes stay under MAX_PARSED_CHARS, so all of each reply is parsed.
@pytest.mark.parametrize(
    ("parse", "unit"),
    [
        (parse_io_tests, "<input></input><output>"),
        (parse_io_tests, "<input>"),
        (parse_io_tests, "<input>1</input> \n<output>2</output>"),
        (parse_io_tests, "<input>" + "1" * 2000 + "</input><output>2</output>"),
        (parse_assert_tests, "assert x\n"),
        (parse_assert_tests, "assert x==1;"),
        (parse_assert_tests, "assert (\n"),  # does not parse: the line-by-line fallback
        (parse_assert_tests, "x = 1\n"),
        (parse_assert_tests, "assert " + "x" * 2000 + "\n"),
    ],
    ids=lambda value: value.__name__ if callable(value) else repr(value[:24]),
)
def test_test_parsers_take_time_linear_in_the_reply(parse, unit):
    sizes = (1_000, 4_000, 16_000, 64_000)
    assert sizes[-1] <= MAX_PARSED_CHARS
    assert_linear_time(lambda size: timed(parse, hostile_text(unit, size), 8), parse.__name__, sizes=sizes)


@pytest.mark.parametrize("split", ["train", "test"])
@pytest.mark.parametrize("team", ["mas", "single"])
def test_oracle_solves_every_task_it_is_given(split, team):
    for seed in envs.split_seeds(split, 4, start=10):
        env = play_oracle(envs.make("code", team=team, split=split), seed)
        assert env.success, f"seed {seed}: {env.task.id}"


def test_a_stuck_solution_costs_about_one_test_budget_per_test():
    env = make(test_timeout_s=0.5)
    env.step("```python\ndef has_close_elements(numbers, threshold):\n    while True:\n        pass\n```")
    assert terms(env, "coder_0")["local/hidden_pass"] == 0.0
    assert env.failures == []  # nothing from the tester yet
    env.step(RIGHT_TESTS)
    assert "timeout" in env.observe("coder_0")["prompt"]
