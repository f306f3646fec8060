"""Team building and loading a trained run back for evaluation (``trainers.teams``), and a run
on a local model directory seeding another (``--init``)."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from safetensors.torch import load_file

import envs
from agents.base import SamplingParams
from agents.team import Team
from trainers.at_grpo import main
from trainers.config import TrainConfig
from trainers.evaluation import evaluate
from trainers.run.checkpoint import find_checkpoint, list_checkpoints
from trainers.run.files import read_jsonl
from trainers.run.trained_team import load_trained_team
from trainers.teams import build_team

TEST_ENV = "tests.trainers.conftest:test/even_plan"


def train_tiny(out, *extra):
    args = (
        f"--env {TEST_ENV} --model tiny-test --steps 1 --eval-tasks 4 --tasks-per-step 4 -K 4 "
        "--max-new-tokens 1 --lr 5e-2 --run-name run --no-progress --no-plots --no-tensorboard"
    ).split()
    args += ["--response-prefix", "", "--output-dir", str(out), *extra]
    main(args)
    return out / "run"


@pytest.fixture(scope="module")
def per_role_run(tmp_path_factory):
    return train_tiny(tmp_path_factory.mktemp("per_role"))


def test_build_team_shapes():
    env = envs.make(TEST_ENV)
    config = TrainConfig(env=TEST_ENV, model="tiny-test")
    per_role = build_team(config, env)
    assert [per_role.binding(a).adapter for a in env.possible_agents] == ["planner", "executor"]
    shared = build_team(dataclasses.replace(config, policy="shared"), env)
    assert {shared.binding(a).adapter for a in env.possible_agents} == {"shared"}
    full = build_team(dataclasses.replace(config, policy="shared", lora=False), env)
    assert {full.binding(a).adapter for a in env.possible_agents} == {None}


def test_loaded_weights_are_the_checkpoint(per_role_run):
    trained = load_trained_team(per_role_run)
    assert trained.step == 1 and trained.checkpoint == list_checkpoints(per_role_run)[-1]
    saved = load_file(str(trained.checkpoint / "weights.safetensors"))
    policy = trained.binding("planner").policy
    params = dict(policy.model.named_parameters())
    for key, tensor in saved.items():
        unit, name = key.split("/", 1)
        assert unit in ("tiny-test:planner", "tiny-test:executor")
        assert torch.equal(params[name], tensor), key
    trained_b = [t for k, t in saved.items() if "lora_B" in k]
    assert any(t.abs().sum() > 0 for t in trained_b)  # LoRA B starts at zero: training moved it


def test_loaded_team_reproduces_the_runs_final_evaluation(per_role_run):
    """Same weights, tasks, sampler seed and settings: the metrics the trainer logged."""
    trained = load_trained_team(per_role_run)
    config = trained.config
    env = envs.make(config.env, team=config.team)
    team = Team(env, dict(trained.bindings))
    sampling = SamplingParams(temperature=config.eval_temperature, max_new_tokens=1, stop=config.stop)
    result = evaluate(team, config.env, num_tasks=4, sampling=sampling, env_kwargs={"team": config.team})
    before, logged = read_jsonl(per_role_run / "test.jsonl")  # the held-out test evaluations
    assert before["success"] != logged["success"]  # the untrained weights would be told apart
    for key, value in result.metrics.items():
        if not key.startswith("time/"):
            assert logged[key] == pytest.approx(value), key


def test_per_role_run_has_no_weights_for_other_roles(per_role_run):
    trained = load_trained_team(per_role_run)
    with pytest.raises(ValueError, match=r"no weights for role 'solver'.*--roles solver=base"):
        trained.binding("solver")


def test_shared_run_plays_any_role(tmp_path):
    trained = load_trained_team(train_tiny(tmp_path, "--policy", "shared"))
    assert trained.binding("solver") == trained.binding("planner")
    assert trained.binding("solver").adapter == "shared"


def test_find_checkpoint(per_role_run, tmp_path):
    newest = list_checkpoints(per_role_run)[-1]
    assert find_checkpoint(per_role_run) == (per_role_run, newest)
    assert find_checkpoint(newest) == (per_role_run, newest)
    with pytest.raises(FileNotFoundError, match="not a training run"):
        find_checkpoint(tmp_path)
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="no complete checkpoint yet"):
        find_checkpoint(tmp_path)


def test_a_run_on_a_local_model_directory_seeds_another_run(tmp_path):
    """A model given as a path names its units after it ("<dir>:planner"), so a unit's name
    holds "/" in the weights file: --init still finds each unit's weights there."""
    from agents.models import load_model
    from trainers.learner import Learner
    from trainers.run.checkpoint import unit_tensors
    from trainers.run.init_weights import load_initial_weights

    model, tokenizer = load_model("tiny-test")
    local = tmp_path / "models" / "tiny"
    model.save_pretrained(local)
    tokenizer.save_pretrained(local)
    run = train_tiny(tmp_path, "--model", str(local))
    trained = load_file(str(list_checkpoints(run)[-1] / "weights.safetensors"))
    assert any(key.startswith(f"{local}:planner/") for key in trained)
    learner = Learner(build_team(TrainConfig(env=TEST_ENV, model=str(local)), envs.make(TEST_ENV)))
    load_initial_weights(run, learner)
    started = unit_tensors(learner)
    assert sorted(started) == sorted(trained) and any(
        "lora_B" in k and t.abs().sum() > 0 for k, t in trained.items()
    )
    assert all(torch.equal(started[key], trained[key]) for key in trained)
