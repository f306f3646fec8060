"""Checkpoints: exact round trip of weights, optimiser and RNG; atomic layout; retention;
clear errors for a checkpoint of another model."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

import envs
from agents.base import SamplingParams
from agents.hf import HFPolicy
from agents.team import Team
from tests.trainers.conftest import EVEN_PLAN_ID, EVEN_TEAM_ID
from trainers.advantages import at_grpo
from trainers.checkpoint import latest_checkpoint, list_checkpoints, load_checkpoint, save_checkpoint
from trainers.learner import Learner, LearnerConfig
from trainers.records import TaskKey
from trainers.rollout import tree_rollout


def trained_learner(env_id=EVEN_TEAM_ID, steps=2):
    env = envs.make(env_id)
    torch.manual_seed(0)
    team = Team.per_role(env, HFPolicy("tiny-test", adapters=env.roles))
    learner = Learner(team, LearnerConfig(lr=1e-2))
    for step in range(steps):
        tasks = [TaskKey(env.spec.id, "train", step * 4 + i) for i in range(4)]
        batch = tree_rollout(
            tasks, team, num_candidates=4, sampling=SamplingParams(max_new_tokens=1), seed=step
        )
        learner.step(batch.samples, at_grpo(batch.samples))
    return learner


def unit_state(learner):
    params = {n: [p.detach().clone() for p in u.parameters] for n, u in learner.units.items()}
    moments = {
        n: [s["exp_avg"].clone() for s in u.optimizer.state.values()] for n, u in learner.units.items()
    }
    return params, moments


def assert_same(a, b):
    for name in a:
        assert len(a[name]) == len(b[name]) > 0
        assert all(torch.equal(x, y) for x, y in zip(a[name], b[name], strict=True))


def test_round_trip_restores_weights_optimiser_and_rngs(tmp_path):
    learner = trained_learner()
    random.seed(1), np.random.seed(2), torch.manual_seed(3)
    path = save_checkpoint(tmp_path, 7, learner, {"note": "x"})
    saved = unit_state(learner)
    expected_draws = (random.random(), np.random.rand(), torch.rand(1).item())
    for unit in learner.units.values():  # clobber everything the checkpoint should bring back
        for parameter in unit.parameters:
            parameter.data.normal_()
        for state in unit.optimizer.state.values():
            state["exp_avg"].zero_()
    state = load_checkpoint(path, learner)
    assert state == {"note": "x", "step": 7}
    params, moments = unit_state(learner)
    assert_same(params, saved[0])
    assert_same(moments, saved[1])
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == expected_draws
    assert sorted(p.name for p in path.iterdir()) == [
        "optimizer.pt",
        "rng.pt",
        "state.json",
        "weights.safetensors",
    ]


def test_retention_and_incomplete_directories_are_ignored(tmp_path):
    learner = trained_learner(steps=1)
    for step in range(1, 5):
        save_checkpoint(tmp_path, step, learner, {}, keep=2)
    assert [p.name for p in list_checkpoints(tmp_path)] == ["step_000003", "step_000004"]
    # What a kill in the middle of a save leaves behind: never picked up.
    (tmp_path / "checkpoints" / ".tmp-step_000005-999").mkdir()
    (tmp_path / "checkpoints" / "step_000006").mkdir()  # no state.json: incomplete
    assert latest_checkpoint(tmp_path).name == "step_000004"
    assert latest_checkpoint(tmp_path / "nowhere") is None


def test_checkpoint_of_another_team_is_a_clear_error(tmp_path):
    path = save_checkpoint(tmp_path, 1, trained_learner(steps=1), {})
    other = trained_learner(EVEN_PLAN_ID, steps=0)  # planner/executor adapters, not leader/follower
    with pytest.raises(ValueError, match="config.json"):
        load_checkpoint(path, other)
