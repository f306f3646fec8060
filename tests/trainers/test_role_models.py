"""Teams of different models (``--model ROLE=NAME``): each role samples from and trains its own
model, with that model's tokenizer, checkpoints name each model's weights, and a resumed run
repeats the uninterrupted one. Two real models: the default SmolLM2 and ``tiny-test``."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from safetensors.torch import load_file, save_file

import envs
from agents.base import SamplingParams
from agents.models import DEFAULT_MODEL
from tests.trainers.at_grpo_runs import TEST_ENV, run_module, tiny_args, without_timings
from trainers.cli import parse_overrides
from trainers.config import ConfigError, TrainConfig
from trainers.records import TaskKey
from trainers.rollout import plain_rollout
from trainers.run.checkpoint import list_checkpoints
from trainers.run.files import read_jsonl
from trainers.teams import build_team

pytestmark = pytest.mark.memory(gb=2.5)  # SmolLM2 (fp32, ~0.6 GB) beside the tiny model, twice over in resume

PLANNER_ON_SMOLLM = ("--model", "tiny-test", "--model", f"planner={DEFAULT_MODEL}")


def test_model_role_equals_name_sets_that_roles_model_and_the_rest_keep_the_default():
    given = parse_overrides(TrainConfig, list(PLANNER_ON_SMOLLM), prog="x", description="")
    config = TrainConfig(**given)
    assert (config.model, config.role_model) == ("tiny-test", {"planner": DEFAULT_MODEL})
    assert (config.model_for("planner"), config.model_for("executor")) == (DEFAULT_MODEL, "tiny-test")
    assert config.models == ("tiny-test", DEFAULT_MODEL)
    with pytest.raises(ConfigError, match=r"role_model\['planner'\]=.*--model planner=tiny-test"):
        TrainConfig(role_model={"planner": ""})


def test_a_model_for_a_role_the_team_lacks_or_a_missing_model_names_the_role(tmp_path):
    from tests.trainers.at_grpo_runs import tiny_config
    from trainers.at_grpo import train

    with pytest.raises(
        ConfigError, match=r"--model names \['solver'\].*its roles are \['planner', 'executor'\]"
    ):
        train(tiny_config(tmp_path, role_model={"solver": DEFAULT_MODEL}))
    missing = str(tmp_path / "no-such-model")
    with pytest.raises(ConfigError, match=rf"--model executor={missing}: .*--model executor={DEFAULT_MODEL}"):
        train(tiny_config(tmp_path, role_model={"executor": missing}))


def test_each_role_samples_from_its_own_model_in_its_own_vocabulary():
    env = envs.make(TEST_ENV)
    config = TrainConfig(env=TEST_ENV, model="tiny-test", role_model={"planner": DEFAULT_MODEL})
    team = build_team(config, env)
    planner, executor = team.binding("planner").policy, team.binding("executor").policy
    assert planner is not executor and (planner.model_id, executor.model_id) == (DEFAULT_MODEL, "tiny-test")
    tiny_vocabulary = len(executor.tokenizer)
    assert len(planner.tokenizer) > tiny_vocabulary
    torch.manual_seed(0)
    tasks = [TaskKey(env.spec.id, "train", seed) for seed in range(4)]
    batch = plain_rollout(
        tasks, team, episodes_per_task=2, sampling=SamplingParams(temperature=1.0, max_new_tokens=6)
    )
    by_role = {role: [t for e in batch.episodes for t in e.turns if t.role == role] for role in team.roles}
    assert {t.policy for t in by_role["planner"]} == {f"{DEFAULT_MODEL}:planner"}
    assert {t.policy for t in by_role["executor"]} == {"tiny-test:executor"}
    for role, policy in (("planner", planner), ("executor", executor)):
        for turn in by_role[role]:  # the reply is the text of its own tokens, in its model's vocabulary
            assert policy.tokenizer.decode(turn.token_ids, skip_special_tokens=True) in turn.response
    assert all(max(t.token_ids) < tiny_vocabulary for t in by_role["executor"])
    assert any(max(t.token_ids) >= tiny_vocabulary for t in by_role["planner"])  # tiny-test has no such token


@pytest.mark.slow
def test_a_two_model_run_trains_each_model_and_resumes_exactly(tmp_path):
    steps = ("--steps", "2", "--keep-checkpoints", "2", *PLANNER_ON_SMOLLM)
    whole = run_module("trainers.at_grpo", tiny_args(tmp_path / "whole", *steps), cwd=tmp_path)
    assert whole.returncode == 0, whole.stderr[-3000:]
    run = tmp_path / "whole" / "run"
    weights = load_file(str(list_checkpoints(run)[-1] / "weights.safetensors"))
    units = {key.rpartition("/")[0] for key in weights}
    assert units == {f"{DEFAULT_MODEL}:planner", "tiny-test:executor"}
    page = (run / "report.html").read_text()  # which role ran which model, and that both trained
    assert f"planner: {DEFAULT_MODEL} (trained), executor: tiny-test (trained)" in page
    for unit in units:  # LoRA B starts at zero: each model's adapter moved
        assert any(
            "lora_B" in k and t.abs().sum() > 0 for k, t in weights.items() if k.startswith(unit + "/")
        )

    first = run_module(
        "trainers.at_grpo", tiny_args(tmp_path / "cut", *steps[:1], "1", *steps[2:]), cwd=tmp_path
    )
    assert first.returncode == 0, first.stderr[-3000:]
    resumed = run_module("trainers.at_grpo", ["--resume", str(tmp_path / "cut" / "run"), "--steps", "2",
                                              "--no-progress"], cwd=tmp_path)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    for name in ("metrics.jsonl", "eval.jsonl"):
        expected = without_timings(read_jsonl(run / name))
        assert without_timings(read_jsonl(tmp_path / "cut" / "run" / name)) == expected, name
    again = load_file(str(list_checkpoints(tmp_path / "cut" / "run")[-1] / "weights.safetensors"))
    assert sorted(again) == sorted(weights) and all(torch.equal(again[k], weights[k]) for k in weights)


def test_init_seeds_the_units_of_the_models_the_warm_start_trained_and_names_the_rest(tmp_path):
    from tests.trainers.test_teams import train_tiny
    from trainers.learner import Learner
    from trainers.run.checkpoint import unit_tensors
    from trainers.run.init_weights import initialise_learner, unit_models

    warm = train_tiny(tmp_path / "warm", "--policy", "shared")  # one adapter on tiny-test
    checkpoint = list_checkpoints(warm)[-1]
    assert unit_models(checkpoint) == {"tiny-test:shared": "tiny-test"}
    older = tmp_path / "older" / "checkpoints" / checkpoint.name  # weights saved before the metadata
    older.mkdir(parents=True)
    (older.parent.parent / "config.json").write_bytes((warm / "config.json").read_bytes())
    save_file(load_file(str(checkpoint / "weights.safetensors")), str(older / "weights.safetensors"))
    assert unit_models(older) == {"tiny-test:shared": "tiny-test"}  # from its config.json's --model
    config = TrainConfig(env=TEST_ENV, model="tiny-test", role_model={"planner": DEFAULT_MODEL})
    learner = Learner(build_team(config, envs.make(TEST_ENV)))
    line = initialise_learner(learner, warm)
    assert line.endswith(f"; {DEFAULT_MODEL}:planner: base weights (that run trained none on this model)")
    saved = load_file(str(list_checkpoints(warm)[-1] / "weights.safetensors"))
    seeded = unit_tensors(learner)
    for key, tensor in saved.items():  # the executor's adapter is the shared warm start's
        executor = key.replace("tiny-test:shared/", "tiny-test:executor/").replace(".shared.", ".executor.")
        assert torch.equal(seeded[executor], tensor)
    assert all(t.abs().sum() == 0 for k, t in seeded.items() if k.startswith(DEFAULT_MODEL) and "lora_B" in k)


def test_init_refuses_a_unit_trained_on_another_model_and_a_run_of_none_of_this_runs_models(tmp_path):
    from tests.trainers.test_teams import train_tiny
    from trainers.learner import Learner
    from trainers.run.init_weights import load_initial_weights

    full = train_tiny(tmp_path / "full", "--policy", "per_role", "--no-lora")  # planner-model, executor-model
    config = TrainConfig(
        env=TEST_ENV, model="tiny-test", role_model={"planner": DEFAULT_MODEL}, policy="per_role", lora=False
    )
    with pytest.raises(ValueError, match=r"planner-model trained model 'tiny-test' there but plays 'smollm2"):
        load_initial_weights(full, Learner(build_team(config, envs.make(TEST_ENV))))
    others = dataclasses.replace(config, model=DEFAULT_MODEL, role_model={}, policy="shared", lora=True)
    with pytest.raises(ValueError, match="was trained on model 'tiny-test'.*pass --model tiny-test"):
        load_initial_weights(full, Learner(build_team(others, envs.make(TEST_ENV))))
