"""The math env's protocol with the real sandbox and checker: what ends an episode, who is
rewarded for what, what each role sees (the conformance suite covers the API)."""

from __future__ import annotations

import json

import pytest

import envs
from tests.envs.conftest import play_oracle

GSM8K_FIRST = envs.TEST_SEED_START  # test seed 0 plays the first GSM8K test item


def make(team="mas", **kwargs):
    env = envs.make("math", team=team, split="test", **kwargs)
    env.reset(seed=GSM8K_FIRST)
    return env


def terms(env, agent):
    return env.infos[agent]["reward_terms"]


def program(expression: str) -> str:
    return f"```python\nprint({expression})\n```"


def test_sources_by_split():
    env = make()
    assert env.task.id.startswith("gsm8k/") and env.task.question in env.observe("tool_0")["prompt"]
    train = envs.make("math")
    train.reset(seed=0)
    assert train.task.source in {"gsm_style", "arithmetic", "algebra"}
    champ = envs.make("math", split="test", test_source="champ")
    champ.reset(seed=GSM8K_FIRST)
    assert champ.task.id.startswith("champ/")


def test_agreement_on_the_right_answer_ends_the_episode_with_success():
    env = make()
    gold = env.task.answer
    env.step(program(gold))
    assert terms(env, "tool_0") == {"local/correct": 0.5}
    assert f"It printed:\n{gold}" in env.observe("reasoner_0")["prompt"]
    env.step(f"The tool is right. \\boxed{{{gold}}}")
    assert terms(env, "reasoner_0") == {"team/agreement": 0.1, "team/correct": 1.0, "local/correct": 0.5}
    assert env.success and all(env.terminations.values())


def test_disagreement_goes_on_and_the_last_turn_judges_the_reasoner():
    env = make(max_cycles=2)
    gold = env.task.answer
    env.step(program(f"{gold} + 1"))  # the tool is wrong
    env.step(f"\\boxed{{{gold}}}")
    assert "team/agreement" not in terms(env, "reasoner_0") and not any(env.terminations.values())
    assert "local/correct" not in terms(env, "tool_0")
    assert f"The reasoner's answer so far: {gold}" in env.observe("tool_0")["prompt"]
    env.step(program(f"{gold} + 2"))
    env.step("I keep my answer. <answer>" + gold + "</answer>")  # the answer-block form counts too
    assert terms(env, "reasoner_0")["team/correct"] == 1.0 and env.success
    assert all(env.terminations.values())  # solved on the last turn: terminated, not truncated


def test_agreeing_on_a_wrong_answer_ends_without_success():
    env = make()
    wrong = str(int(float(env.task.answer)) + 7)
    env.step(program(wrong))
    env.step(f"\\boxed{{{wrong}}}")
    assert terms(env, "reasoner_0") == {"team/agreement": 0.1}
    assert all(env.terminations.values()) and not env.success


@pytest.mark.parametrize(
    "code,why",
    [
        ("raise ValueError('boom')", "error"),
        ("while True: pass", "timeout"),
        ("x = 1", "printed nothing"),
    ],
)
def test_tool_failures_are_penalised_and_shown(code, why):
    env = make(sandbox_timeout_s=1.0) if why == "timeout" else make()  # a busy machine may be slow to start
    env.step(f"```python\n{code}\n```")
    assert terms(env, "tool_0") == {"local/exec_error": -0.5}
    assert why in env.infos["tool_0"]["feedback"]
    assert "It failed:" in env.observe("reasoner_0")["prompt"]


def test_tool_code_runs_only_in_the_sandbox(tmp_path, monkeypatch):
    marker = tmp_path / "pwned"
    monkeypatch.setenv("TEAMGYM_SECRET_FOR_TEST", "hunter2")
    env = make()
    code = f"import os, json\nopen({str(marker)!r}, 'w').write('x')\nprint(json.dumps(sorted(os.environ)))\n"
    env.step(f"```python\n{code}```")
    assert not marker.exists()
    env = make()
    env.step("```python\nimport os, json\nprint(json.dumps(sorted(os.environ)))\n```")
    assert "TEAMGYM_SECRET_FOR_TEST" not in json.loads(env.answers["tool"])


def test_format_errors_are_invalid():
    env = make()
    env.step("I would compute it in my head.")
    assert terms(env, "tool_0") == {"local/invalid": -0.1}
    env.step("The answer is probably large.")
    assert terms(env, "reasoner_0") == {"local/invalid": -0.1}


def test_single_solver_answers_once():
    env = make(team="single")
    env.step("\\boxed{-12345}")
    assert all(env.terminations.values()) and not env.success
    env = make(team="single")
    env.step(f"so \\boxed{{{env.task.answer}}}")
    assert env.success and terms(env, "solver_0")["team/correct"] == 1.0


@pytest.mark.parametrize("split,source", [("train", "mixed"), ("test", "gsm8k"), ("test", "champ")])
@pytest.mark.parametrize("team", ["mas", "single"])
def test_oracle_solves_every_task_it_is_given(split, source, team):
    kwargs = {"train_source" if split == "train" else "test_source": source}
    for seed in envs.split_seeds(split, 6):
        env = play_oracle(envs.make("math", team=team, split=split, **kwargs), seed)
        assert env.success, f"{source} seed {seed}: {env.task.id} gold {env.task.answer!r}"


def test_an_answer_block_counts_only_when_it_holds_just_the_answer():
    env = make(team="single")
    env.step("<answer>\nLet me think. First the shark is 10 feet long, so in inches that is")  # cut reply
    assert terms(env, "solver_0") == {"local/invalid": -0.1}
    assert "only the answer" in env.infos["solver_0"]["feedback"]
    env.step(f"<answer> {env.task.answer} </answer>")
    assert env.success
