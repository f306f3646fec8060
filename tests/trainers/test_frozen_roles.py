"""Frozen roles (``--frozen ROLE[=RUN]``): a role that plays but never trains. Its turns are
recorded, never in the loss; its weights are the named run's (else ``--init``'s, else the base
model's) before and after training; the report says so; mistakes name the fix."""

from __future__ import annotations

import pytest
import torch

import envs
from agents.base import SamplingParams
from tests.trainers.at_grpo_runs import tiny_config
from tests.trainers.conftest import EVEN_TEAM_ID
from tests.trainers.test_teams import train_tiny
from trainers.advantages import at_grpo
from trainers.config import ConfigError, TrainConfig
from trainers.learner import Learner, LearnerConfig
from trainers.records import TaskKey
from trainers.rollout import tree_rollout
from trainers.run.checkpoint import list_checkpoints
from trainers.run.trained_team import build_run_team, load_trained_team

pytestmark = pytest.mark.memory(gb=1.5)


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    """A shared-adapter run of the tiny model: the weights a frozen role plays."""
    return train_tiny(tmp_path_factory.mktemp("warm"), "--policy", "shared")


def parameters(policy) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in policy.model.named_parameters()}


def test_updates_move_the_trained_role_and_never_the_frozen_one(warm):
    env = envs.make(EVEN_TEAM_ID)  # each role's reply is rewarded at once: both roles' groups vary
    config = TrainConfig(
        env=EVEN_TEAM_ID, model="tiny-test", response_prefix="", frozen=(f"follower={warm}",)
    )
    team = build_run_team(config, env)
    executor, planner = team.binding("follower"), team.binding("leader")
    assert not executor.trains and executor.policy.name == "frozen-follower" and executor.adapter == "shared"
    assert executor.policy is not planner.policy
    learner = Learner(team, LearnerConfig(lr=5e-2))
    assert list(learner.units) == ["tiny-test:leader"]
    frozen_before, trained_before = parameters(executor.policy), parameters(planner.policy)
    torch.manual_seed(0)
    played = {}
    for step in range(2):
        tasks = [TaskKey(env.spec.id, "train", step * 4 + i) for i in range(4)]
        batch = tree_rollout(
            tasks, team, num_candidates=4, sampling=SamplingParams(max_new_tokens=1), seed=step
        )
        for sample in batch.samples:
            played[sample.policy] = played.get(sample.policy, 0) + 1
        learner.step(batch.samples, at_grpo(batch.samples))
    assert played["frozen-follower:shared"] == played["tiny-test:leader"]  # it played every executor turn
    assert all(torch.equal(p, frozen_before[n]) for n, p in executor.policy.model.named_parameters())
    assert any(not torch.equal(p, trained_before[n]) for n, p in planner.policy.model.named_parameters())


def test_a_frozen_role_plays_the_weights_of_init_and_the_run_saves_only_the_trained_ones(tmp_path, warm):
    run = train_tiny(tmp_path, "--frozen", "executor", "--init", str(warm))
    from safetensors.torch import load_file

    saved = load_file(str(list_checkpoints(run)[-1] / "weights.safetensors"))
    assert {key.rpartition("/")[0] for key in saved} == {"tiny-test:planner"}
    trained = load_trained_team(run)  # the executor plays --init's shared adapter again
    source = load_trained_team(warm).binding("executor")
    frozen = trained.binding("executor")
    assert not frozen.trains and frozen.adapter == "shared"
    assert all(torch.equal(p, dict(source.policy.model.named_parameters())[n])
               for n, p in frozen.policy.model.named_parameters())  # fmt: skip
    page = (run / "report.html").read_text()
    assert f"executor: frozen, weights of {warm}" in page and "planner: tiny-test (trained)" in page


def test_frozen_mistakes_name_the_fix(tmp_path, warm):
    from trainers.at_grpo import train

    for frozen, message in [
        (("solver",), r"frozen: \['solver'\] not in the team's roles"),
        (("planner", "executor"), "every role .* is scripted or frozen, so nothing would train"),
        (("executor=",), "is not ROLE or ROLE=RUN"),
        (("executor", "executor=x"), "each role may be named once"),
        ((f"executor={tmp_path / 'nothing'}",), r"frozen: executor=.*nothing: .*not a training run"),
    ]:
        with pytest.raises(ConfigError, match=message):
            train(tiny_config(tmp_path, frozen=frozen))
    with pytest.raises(ConfigError, match="a role is played by one or the other"):
        train(tiny_config(tmp_path, frozen=("executor",), roles=("executor=oracle",)))
