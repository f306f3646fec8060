"""--init: the weights a run starts from are also its KL reference (--kl-coef pulls toward the
warm start, not toward the base model it left), for LoRA adapters and full weights, and a
resumed run keeps that reference."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import envs
from agents.base import SamplingParams
from tests.trainers.at_grpo_runs import tiny_config, without_timings
from tests.trainers.conftest import EVEN_PLAN_ID
from trainers.advantages import AdvantageResult
from trainers.at_grpo import load_run_config, train
from trainers.config import resolve_config
from trainers.learner import Learner
from trainers.records import TaskKey
from trainers.rollout import tree_rollout
from trainers.run.checkpoint import unit_tensors
from trainers.run.files import read_jsonl
from trainers.run.init_weights import initialise_learner, load_initial_weights
from trainers.teams import build_team

pytestmark = pytest.mark.memory(gb=1.5)  # the tiny model, in process

KL = 0.1


def _warm_start(tmp_path, **fields):
    """A one-step run at a large learning rate: weights clearly away from the base model."""
    return train(tiny_config(tmp_path / "warm", steps=1, lr=5e-2, **fields)).run_dir


def _first_step_kl(team, learner) -> dict[str, float]:
    """Each unit's KL term on its first update (measured before the update moves the weights)."""
    tasks = [TaskKey(EVEN_PLAN_ID, "train", seed) for seed in range(4)]
    sampling = SamplingParams(temperature=1.0, max_new_tokens=1, seed=0)
    batch = tree_rollout(tasks, team, num_candidates=4, sampling=sampling, seed=0)
    rng = np.random.default_rng(0)
    advantages = AdvantageResult(rng.normal(size=len(batch.samples)), np.ones(len(batch.samples)), {})
    return {name: metrics["kl"] for name, metrics in learner.step(batch.samples, advantages).items()}


@pytest.mark.parametrize("layout", [{}, {"lora": False, "policy": "shared"}], ids=["lora", "full"])
def test_the_kl_reference_of_an_init_run_is_its_init_weights(tmp_path, layout):
    warm = _warm_start(tmp_path, **layout)
    config = resolve_config(tiny_config(tmp_path / "new", kl_coef=KL, **layout))

    def learner():
        team = build_team(config, envs.make(config.env))
        return team, Learner(team, config.learner_config())

    base_weights = unit_tensors(learner()[1])
    team, started = learner()
    initialise_learner(started, warm)
    moved = unit_tensors(started)
    assert any(not torch.equal(moved[key], base_weights[key]) for key in moved)  # a real warm start
    assert all(abs(kl) < 1e-7 for kl in _first_step_kl(team, started).values())  # its own reference
    # The same weights against the base model (what the reference was before): a KL a test sees.
    team, weights_only = learner()
    load_initial_weights(warm, weights_only)
    assert all(kl > 1e-6 for kl in _first_step_kl(team, weights_only).values())


def test_a_resumed_init_run_with_a_kl_term_repeats_the_uninterrupted_one(tmp_path):
    warm = _warm_start(tmp_path)

    def config(name):
        return tiny_config(tmp_path / name, steps=3, init=str(warm), kl_coef=KL, lr=5e-2)

    reference = train(config("a"))
    run = tmp_path / "b" / "run"
    first = train(config("b"), pause_minutes=1e-6)  # a millionth of a minute: stops after step 1
    assert first.paused and first.steps == 1
    resumed = train(load_run_config(run, {"resume": str(run), "progress": False}))
    assert resumed.steps == 3
    expected = read_jsonl(reference.run_dir / "metrics.jsonl")
    kl = [value for record in expected for key, value in record.items() if key.split("/")[0] == "kl"]
    assert kl and kl[0] == pytest.approx(0.0, abs=1e-7) and max(kl) > 0  # from the warm start, and moving
    assert without_timings(read_jsonl(run / "metrics.jsonl")) == without_timings(expected)
