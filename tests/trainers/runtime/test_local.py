"""trainers.runtime: the three verbs and LocalRuntime, the in-process default (the Ray
runtime's parity tests compare against it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import envs
from agents.base import SamplingParams
from agents.scripted import RandomPolicy
from agents.team import Team
from tests.conftest import SUBPROCESS_TIMEOUT_S
from trainers.advantages import AdvantageResult
from trainers.records import TaskKey
from trainers.rollout import RolloutRequest, plain_rollout, play, tree_rollout
from trainers.runtime import LocalRuntime, Runtime, StaleWeightsError

REPO = Path(__file__).resolve().parents[3]


def random_team(env_id):
    env = envs.make(env_id)
    return Team(env, {role: RandomPolicy(seed=i) for i, role in enumerate(env.roles)})


class CountingLearner:
    """Records the updates it is asked for (the runtime's bookkeeping, without a model)."""

    def __init__(self):
        self.calls = []

    def step(self, samples, result, *, seed=0):
        self.calls.append((len(samples), seed))
        return {"unit": {"samples": float(len(samples))}}


def _tasks(n=3):
    return tuple(TaskKey("plan_path-v0", "train", seed) for seed in envs.split_seeds("train", n))


@pytest.mark.parametrize("mode", ["tree", "plain"])
def test_a_request_plays_what_the_rollout_functions_play(mode):
    sampling = SamplingParams(max_new_tokens=8)
    request = RolloutRequest(_tasks(), sampling, mode=mode, per_task=3, seed=7)
    if mode == "tree":
        expected = tree_rollout(
            _tasks(), random_team("plan_path"), num_candidates=3, sampling=sampling, seed=7
        )
    else:
        expected = plain_rollout(
            _tasks(), random_team("plan_path"), episodes_per_task=3, sampling=sampling, seed=7
        )
    got = LocalRuntime(random_team("plan_path"), CountingLearner()).collect(request)
    assert got.samples == expected.samples and got.episodes == expected.episodes
    assert play(request, random_team("plan_path")).samples == expected.samples


def test_collect_refuses_stale_weights_until_publish():
    learner = CountingLearner()
    runtime = LocalRuntime(random_team("plan_path"), learner)
    assert isinstance(runtime, Runtime) and runtime.version == 0 and not runtime.serves_copies
    batch = runtime.collect(RolloutRequest(_tasks(1), SamplingParams(max_new_tokens=8)))
    advantages = AdvantageResult(np.zeros(len(batch.samples)), np.ones(len(batch.samples)))
    assert runtime.update(batch.samples, advantages, seed=3) == {
        "unit": {"samples": float(len(batch.samples))}
    }
    assert learner.calls == [(len(batch.samples), 3)]
    with pytest.raises(StaleWeightsError, match="publish"):
        runtime.collect(RolloutRequest(_tasks(1), SamplingParams(max_new_tokens=8)))
    assert runtime.publish() == 0.0 and runtime.version == 1  # HF-style policies: nothing to move
    runtime.collect(RolloutRequest(_tasks(1), SamplingParams(max_new_tokens=8)))


def test_a_request_names_a_bad_mode():
    with pytest.raises(ValueError, match="mode must be 'tree' or 'plain'"):
        RolloutRequest(_tasks(1), SamplingParams(), mode="beam")


def test_the_training_command_does_not_import_ray():
    code = "import sys, trainers.at_grpo, trainers.runtime; assert 'ray' not in sys.modules, 'ray imported'"
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, timeout=SUBPROCESS_TIMEOUT_S)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"rollout_workers": 2}, "--rollout-workers only apply to --runtime ray"),
        ({"ray_address": "auto"}, "--ray-address only apply to --runtime ray"),
        ({"runtime": "ray", "engine_replicas": 0}, "engine_replicas=0 must be >= 1"),
        ({"learner_ranks": 2}, "--learner-ranks only apply to --runtime ray"),
        ({"ray_resources": {"engine": {"gpu_box": 1}}}, "--ray-resources only apply"),
        ({"runtime": "ray", "ray_resources": {"gpu": {"a": 1}}}, "unknown actor kind 'gpu'"),
        ({"runtime": "ray", "ray_resources": {"engine": {"a": 0}}}, r"ray_resources\['engine'\] must map"),
    ],
)
def test_runtime_flags_are_checked_before_anything_starts(fields, message):
    from trainers.config import TrainConfig
    from trainers.errors import ConfigError

    with pytest.raises(ConfigError, match=message):
        TrainConfig(env="plan_path", model="tiny-test", **fields)


def test_the_ray_runtime_without_ray_names_the_extra(monkeypatch):
    from trainers.errors import ConfigError
    from trainers.runtime.ray import import_ray

    monkeypatch.setitem(sys.modules, "ray", None)  # makes `import ray` fail
    with pytest.raises(ConfigError, match=r"pip install 'teamgym\[ray\]'"):
        import_ray()


def test_close_releases_the_team_only_when_the_runtime_built_it():
    closed = []

    class EnginePolicy(RandomPolicy):  # stands in for a vLLM policy, whose close() stops engines
        def close(self):
            closed.append(self)

    env = envs.make("plan_path")
    policy = EnginePolicy(seed=0)
    team = Team(env, {role: policy for role in env.roles})
    LocalRuntime(team, CountingLearner()).close()
    assert closed == []  # the caller's team: the caller closes it
    LocalRuntime(team, CountingLearner(), owns_team=True).close()
    assert closed == [policy]  # make_runtime's: the runtime is its only owner
