"""Held-out evaluation: test-split tasks only, one episode each, repeatable; metric helpers."""

from __future__ import annotations

import pytest

import envs
from agents.base import SamplingParams
from agents.hf import HFPolicy
from agents.scripted import OraclePolicy
from agents.team import Team
from trainers.evaluation import episode_metrics, evaluate, sample_metrics, test_tasks
from trainers.records import Episode, TaskKey, Turn


def turn(role, reward, invalid=False, tokens=(1, 2)):
    return Turn(
        task=TaskKey("x-v0", "train", 0), episode=0, agent=f"{role}_0", role=role, policy="p", turn=0, step=0,
        prompt="", response="", prompt_token_ids=(), token_ids=tokens, logprobs=(0.0,) * len(tokens),
        reward=reward, reward_terms={}, invalid=invalid, state_key=0,
    )  # fmt: skip


def test_metric_helpers():
    samples = [turn("planner", 1.0), turn("planner", 0.0, invalid=True), turn("executor", -0.5, tokens=(1,))]
    metrics = sample_metrics(samples)
    assert metrics["invalid_rate"] == pytest.approx(1 / 3)
    assert metrics["reward/planner"] == 0.5 and metrics["reward/executor"] == -0.5
    assert metrics["response_tokens"] == pytest.approx(5 / 3)
    key = TaskKey("x-v0", "test", 1)
    episodes = [
        Episode(key, 0, tuple(samples), True, {"planner_0": 1.0, "executor_0": -0.5}, False),
        Episode(key, 1, (), False, {"planner_0": 0.0, "executor_0": 0.5}, True),
    ]
    metrics = episode_metrics(episodes)
    assert metrics["success"] == 0.5 and metrics["truncated"] == 0.5
    assert metrics["return/planner"] == 0.5 and metrics["return/executor"] == 0.0
    assert sample_metrics([]) == {} and episode_metrics([]) == {}


def test_evaluate_plays_each_test_task_once():
    env = envs.make("plan_path")
    result = evaluate(Team(env, {r: OraclePolicy() for r in env.roles}), "plan_path", num_tasks=5,
                      sampling=SamplingParams(temperature=0.0))  # fmt: skip
    assert [e.task for e in result.episodes] == test_tasks("plan_path", 5)
    assert all(e.task.split == "test" for e in result.episodes)
    assert result.metrics["success"] == 1.0 and result.metrics["invalid_rate"] == 0.0


def test_evaluation_of_a_model_is_repeatable():
    env = envs.make("plan_path")
    team = Team.per_role(env, HFPolicy("tiny-test", adapters=env.roles), response_prefix="<answer>")
    sampling = SamplingParams(temperature=1.0, max_new_tokens=4)  # sampled, yet seeded
    first, second = (
        evaluate(team, "plan_path", num_tasks=3, sampling=sampling, env_kwargs={"max_cycles": 1})
        for _ in range(2)
    )
    assert [t.response for e in first.episodes for t in e.turns] == [
        t.response for e in second.episodes for t in e.turns
    ]
