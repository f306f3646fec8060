"""``python -m benchmarks.evaluate`` on a training run's checkpoint (its adapters, base roles,
mismatches) and on a team of two base models."""

from __future__ import annotations

import json

import pytest

from benchmarks.evaluate import main
from tests.benchmarks.test_evaluate import per_seed
from tests.trainers.test_teams import TEST_ENV, train_tiny
from trainers.run.files import read_jsonl

pytestmark = pytest.mark.memory(gb=1)


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    return train_tiny(tmp_path_factory.mktemp("train"))


def checkpoint_args(tmp_path, *args, name="run"):
    base = f"--env {TEST_ENV} --episodes 4 --seeds 0 --max-new-tokens 1 --no-progress --run-name {name}"
    return [*base.split(), "--response-prefix", "", "--output-dir", str(tmp_path), *args]


def test_a_checkpoint_reproduces_the_runs_held_out_evaluation(trained_run, tmp_path):
    """Seed 0 plays the trainer's held-out test tasks with its sampler seed: the same numbers."""
    results = main(checkpoint_args(tmp_path, "--model", str(trained_run), "--baselines"))
    assert results.rows == ["run mas"]
    mean = results.cell("run mas", TEST_ENV.split(":")[1]).mean
    logged = read_jsonl(trained_run / "test.jsonl")[-1]
    for key in ("success", "invalid_rate", "return/planner", "return/executor", "episode_length"):
        assert mean[key] == pytest.approx(logged[key]), key
    identity = json.loads((results.out_dir / "results.json").read_text())["models"]
    assert identity["model"]["step"] == 1 and len(identity["model"]["weights_sha256"]) == 16
    assert identity["model"]["trained"]["policy"] == "per_role" and identity["base"]["name"] == "tiny-test"
    via_adapters = main(checkpoint_args(tmp_path, "--model", "tiny-test", "--adapters", str(trained_run),
                                        "--baselines", name="adapters"))  # fmt: skip
    assert per_seed(via_adapters) == per_seed(results)


def test_base_role_switches_the_adapters_off(trained_run, tmp_path):
    args = ("--model", str(trained_run), "--baselines", "mas", "--roles", "planner=base", "executor=base")
    results = main(checkpoint_args(tmp_path, *args))
    base = main(checkpoint_args(tmp_path, "--model", "tiny-test", "--baselines", name="base"))
    env_id = TEST_ENV.split(":")[1]
    assert (
        results.cell("run mas (executor=base, planner=base)", env_id).per_seed
        == base.cell("tiny-test mas", env_id).per_seed
    )
    before = read_jsonl(trained_run / "test.jsonl")[0]  # the run's test evaluation of its initial weights
    assert base.cell("tiny-test mas", env_id).mean["success"] == pytest.approx(before["success"])


def test_checkpoint_mismatches_are_config_errors(trained_run, tmp_path, capsys):
    for args, message in [
        (("--model", str(trained_run), "--policy", "shared"), "trained policy='per_role'"),
        (("--model", "smollm2-135m-instruct", "--adapters", str(trained_run)), "--model tiny-test"),
        (("--model", str(trained_run), "--team", "single", "--baselines"), None),
    ]:
        if message is None:  # a per-role run has no solver weights: the cell is n/a, not a crash
            results = main(checkpoint_args(tmp_path, *args, name="single"))
            assert "no weights for role 'solver'" in results.cells[0].skipped
            continue
        with pytest.raises(SystemExit):
            main(checkpoint_args(tmp_path, *args, name="bad"))
        assert message in capsys.readouterr().err


def test_a_run_without_checkpoints_is_a_clear_error(trained_run, tmp_path, capsys):
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "config.json").write_text((trained_run / "config.json").read_text())
    with pytest.raises(SystemExit):
        main(checkpoint_args(tmp_path, "--model", str(fresh)))
    assert "has no complete checkpoint yet" in capsys.readouterr().err


def test_adapters_of_a_full_weight_run_are_refused(tmp_path, capsys):
    run = train_tiny(tmp_path / "train", "--no-lora", "--policy", "shared")
    with pytest.raises(SystemExit):
        main(checkpoint_args(tmp_path, "--model", "tiny-test", "--adapters", str(run)))
    assert "trained full weights" in capsys.readouterr().err
    results = main(checkpoint_args(tmp_path, "--model", str(run), "--baselines", name="full"))
    assert results.cells[0].skipped is None


def test_a_team_of_two_base_models_names_both_and_a_run_carries_its_own(tmp_path, trained_run, capsys):
    two_models = ("--model", "tiny-test", "--model", "planner=smollm2-135m-instruct", "--baselines")
    results = main(checkpoint_args(tmp_path, *two_models))
    assert results.rows == ["tiny-test [planner=smollm2-135m-instruct] mas"]
    models = json.loads((results.out_dir / "results.json").read_text())["models"]
    assert models["model"]["name"] == "tiny-test"
    assert models["role_models"]["planner"]["path"].endswith("smollm2-135m-instruct")
    solver = main(
        checkpoint_args(tmp_path, "--model", "solver=smollm2-135m-instruct", "--baselines", name="x")
    )
    assert "not a role of this env team" in solver.cell(solver.rows[0], TEST_ENV.split(":")[1]).skipped
    with pytest.raises(SystemExit) as exit_info:
        main(checkpoint_args(tmp_path, "--model", str(trained_run), "--model", "planner=tiny-test", name="y"))
    assert (
        exit_info.value.code == 2 and "a training run plays the models it trained" in capsys.readouterr().err
    )
