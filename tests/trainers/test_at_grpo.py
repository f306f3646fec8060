"""The training command: --help, presets, config errors, the run directory of every algo,
and the bare command with the real default model (stopping and resuming:
test_at_grpo_resume.py)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import envs
from tests.trainers.at_grpo_runs import TEST_ENV, run_module, tiny_args, tiny_config
from trainers.at_grpo import main
from trainers.cli import field_docs
from trainers.config import ConfigError, TrainConfig, resolve_config
from trainers.run.files import read_jsonl

pytestmark = pytest.mark.memory(gb=2)  # measured 1.1-1.7 GB added (the bare command's training subprocess)


# ------------------------------------------------------------------------- help / config
def test_help_lists_every_field_with_its_doc(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    docs = field_docs(TrainConfig)
    for field in dataclasses.fields(TrainConfig):
        option = field.name.replace("_", "-")
        assert f"--{option}" in text or f"--[no-]{option}" in text  # one spelling per flag
        # the doc is shown; a "(None: rule)" part moves behind the default it gives
        assert " ".join(docs[field.name].doc.split("(None:")[0].replace("``", "").split()[:3]) in text
    for group in ("env", "team", "sampling", "optimisation", "evaluation", "logging"):
        assert f"{group}:" in text
    assert "-K" in text


def test_unknown_env_and_bad_cli_values_are_clear_errors(capsys):
    with pytest.raises(ConfigError, match="sokoban"):
        resolve_config(TrainConfig(env="sokobann"))
    with pytest.raises(SystemExit) as exit_info:
        main(["--env", "sokobann"])
    assert exit_info.value.code == 2 and "sokoban" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["--num-generations", "many"])
    assert exit_info.value.code == 2 and "--num-generations" in capsys.readouterr().err


def test_per_role_sampling_flags_set_their_roles_and_leave_the_others_to_the_plain_flag():
    from trainers.at_grpo import parse_train_args

    given = parse_train_args(
        ["--temperature", "executor=1.5", "--temperature", "0.8", "--temperature=planner=0.5"]
        + ["--max-new-tokens", "executor=3", "--max-new-tokens", "12"]
    )
    assert given["temperature"] == 0.8 and given["max_new_tokens"] == 12
    assert given["role_temperature"] == {"executor": 1.5, "planner": 0.5}
    assert given["role_max_new_tokens"] == {"executor": 3}
    config = resolve_config(TrainConfig(**given))
    learner = config.learner_config()
    assert learner.role_temperature == {"executor": 1.5, "planner": 0.5}
    assert learner.max_response_length == 12  # the longest any role may write
    # the env preset's program length reaches the tool team, and nothing else
    assert resolve_config(TrainConfig(env="plan_path", team="tool")).role_max_new_tokens == {"tool": 384}
    assert resolve_config(TrainConfig(env="plan_path")).role_max_new_tokens == {}
    given = TrainConfig(env="sudoku", team="tool", role_max_new_tokens={"tool": 500, "plan": 64})
    assert resolve_config(given).role_max_new_tokens == {"tool": 500, "plan": 64}


def test_a_recorded_run_keeps_its_per_role_sampling_and_its_samples_obey_it(tmp_path):
    args = ["--steps", "1", "--max-new-tokens", "4", "--max-new-tokens", "executor=1"]
    main(tiny_args(tmp_path, *args, "--temperature", "planner=1.5", "--test-tasks", "0"))
    run = tmp_path / "run"
    config = json.loads((run / "config.json").read_text())
    assert config["role_temperature"] == {"planner": 1.5} and config["role_max_new_tokens"] == {"executor": 1}
    lengths = {"planner": set(), "executor": set()}  # a tiny-test token decodes to one character
    for line in (run / "episodes" / "train_step_000001.jsonl").open():
        for turn in json.loads(line)["turns"]:
            lengths[turn["role"]].add(len(turn["response"]))
    assert max(lengths["executor"]) <= 1 < max(lengths["planner"]) <= 4


# Mistakes that used to end in a traceback; each is one line naming the field, before any model loads.
MISTAKES = {
    "unknown env kwarg": (["--env-kwargs", '{"nope": 1}'], ["--env-kwargs", "'nope'", "difficulty, "]),
    "bad env kwarg value": (["--env-kwargs", '{"difficulty": "bogus"}'], ["--env-kwargs", "difficulty"]),
    "env kwarg of a wrong type": (["--env-kwargs", '{"width": "big"}'], ["--env-kwargs", "width", "integer"]),
    "negative max_cycles": (["--env-kwargs", '{"max_cycles": -1}'], ["max_cycles", "--env-kwargs"]),
    "output dir under a file": (["--output-dir", "{file}/sub"], ["--output-dir", "is a file"]),
    "nonexistent model path": (["--model", "/nonexistent/model"], ["--model", "no such directory"]),
    "hub id not in the cache": (["--model", "teamgym-tests/nope"], ["--model", "not available offline"]),
    "unknown output option": (["--output-dri", "x"], ["--output-dri"]),
    "per-role value of a role the team lacks": (
        ["--temperature", "exec=1.5"],
        ["--temperature", "['exec']", "'planner', 'executor'"],
    ),
    "per-role temperature <= 0": (["--temperature", "executor=0"], ["role_temperature", "--temperature"]),
    "a team the env lacks": (["--env", "tictactoe", "--team", "single"], ["team='single'", "--team mas"]),
    "per-role reply length not an int": (["--max-new-tokens", "tool=1.5"], ["role_max_new_tokens"]),
}


def mistake_args(tmp_path: Path, args: list[str]) -> list[str]:
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    args = [arg.replace("{file}", str(a_file)) for arg in args]
    base = ["--env", "sokoban", "--model", "tiny-test", "--no-progress"]
    return [*base, "--output-dir", str(tmp_path / "runs"), *args]  # later options win


@pytest.mark.parametrize("name", list(MISTAKES))
def test_command_line_mistakes_are_one_line_naming_the_field(tmp_path, capsys, monkeypatch, name):
    args, needles = MISTAKES[name]
    monkeypatch.delenv("TEAMGYM_DEBUG", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the hub id check must not wait for a network
    with pytest.raises(SystemExit) as exit_info:
        main(mistake_args(tmp_path, args))
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert len(error.strip().splitlines()) == 1, error
    assert error.startswith("python -m trainers.at_grpo: error: ")
    for needle in needles:
        assert needle in error, (needle, error)
    if "--output-dir" not in args:
        assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())  # no run dir left


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc")
def test_an_output_dir_that_cannot_be_created_is_one_line(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--env", "sokoban", "--model", "tiny-test", "--output-dir", "/proc/teamgym-no"])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert len(error.strip().splitlines()) == 1 and "--output-dir /proc/teamgym-no" in error


def test_the_command_shows_a_traceback_only_with_debug(tmp_path, monkeypatch):
    monkeypatch.delenv("TEAMGYM_DEBUG", raising=False)
    args = mistake_args(tmp_path, ["--env-kwargs", '{"nope": 1}'])
    quiet = run_module("trainers.at_grpo", args, tmp_path)
    assert quiet.returncode == 2 and "Traceback" not in quiet.stderr
    assert quiet.stderr.count("\n") == 1 and "'nope'" in quiet.stderr
    loud = run_module("trainers.at_grpo", [*args, "--debug"], tmp_path)
    assert loud.returncode == 1 and "Traceback" in loud.stderr and "ConfigError" in loud.stderr
    monkeypatch.setenv("TEAMGYM_DEBUG", "1")
    by_env = run_module("trainers.at_grpo", args, tmp_path)
    assert by_env.returncode == 1 and "Traceback" in by_env.stderr


# ------------------------------------------------------------------------- the run directory
REQUIRED_STEP_KEYS = (
    "success",
    "invalid_rate",
    "reward/planner",
    "reward/executor",
    "return/planner",
    "loss",
    "approx_kl_old",
    "clip_fraction",
    "grad_norm",
    "tokens_per_s",
    "time/generate",
    "time/env",
    "time/learner",
    "time/step",
    "memory/peak_mb/rollout",
    "memory/peak_mb/update",
)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("module", "algo_args", "algo"),
    [
        ("trainers.at_grpo", [], "at_grpo"),
        ("trainers.at_grpo", ["--algo", "grpo"], "grpo"),
        ("trainers.gigpo", [], "gigpo"),
        ("trainers.matpo", [], "matpo"),
    ],
)
def test_cli_writes_every_artefact(tmp_path, module, algo_args, algo):
    done = run_module(module, tiny_args(tmp_path, *algo_args), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    run = tmp_path / "run"
    config = json.loads((run / "config.json").read_text())
    assert config["algo"] == algo and config["rollout"] == ("tree" if algo == "at_grpo" else "plain")
    steps = read_jsonl(run / "metrics.jsonl")
    assert [r["step"] for r in steps] == [1, 2]
    for key in REQUIRED_STEP_KEYS:
        assert any(key in r for r in steps), f"{key} missing from metrics.jsonl"
    assert steps[-1]["memory/peak_mb/update"] >= steps[0]["memory/peak_mb/rollout"] > 100  # MB: a model
    assert "peak memory of this process, as each phase ended: rollout " in done.stdout
    # Group diagnostics: adv/group_size_mean etc.; GiGPO has two levels (adv/episode/..., adv/anchor/...).
    for stat in ("group_size_mean", "zero_variance_share", "singleton_share"):
        assert any(k.startswith("adv/") and k.endswith(stat) for k in steps[0]), stat
    evals = read_jsonl(run / "eval.jsonl")
    assert [r["step"] for r in evals] == [0, 1, 2]
    assert {"success", "invalid_rate", "return/planner", "return/executor"} <= set(evals[0])
    assert list((run / "tensorboard").glob("events.out.tfevents.*"))
    for png in ("train_reward.png", "train_success.png", "eval.png"):
        assert (run / "plots" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    transcript = (run / "transcripts" / "eval_step_000002.md").read_text()
    assert "planner_0" in transcript and "executor_0" in transcript
    checkpoint = run / "checkpoints" / "step_000002"
    assert sorted(p.name for p in checkpoint.iterdir()) == [
        "manifest.json",
        "optimizer.json",
        "optimizer.safetensors",
        "rng.json",
        "rng.safetensors",
        "state.json",
        "weights.safetensors",
    ]
    assert json.loads((checkpoint / "state.json").read_text())["step"] == 2
    assert "validation eval" in done.stdout and str(run) in done.stdout  # the end-of-run summary
    # The held-out protocol: in-run evaluations on the validation slice, the test number on the
    # protocol's test block before training and after the last step, with its task-level s.e.
    played = [json.loads(line)["task"] for line in (run / "episodes" / "eval_step_000002.jsonl").open()]
    assert [task["seed"] for task in played] == envs.validation_seeds(4)
    assert all(task["split"] == "train" for task in played)
    tests = read_jsonl(run / "test.jsonl")
    assert [r["step"] for r in tests] == [0, 2]
    assert not (run / "test_parts").exists()  # a finished test's parts are deleted
    assert tests[-1]["first_task_seed"] == envs.heldout_seeds(1)[0] and tests[-1]["tasks"] == 4
    assert 0 <= tests[-1]["success_se"] <= 0.5 + 1e-9
    assert "held-out test success" in done.stdout and "4 tasks from test index 1000000" in done.stdout


def test_eval_split_test_puts_the_curve_on_the_held_out_block_and_plays_no_extra_test(tmp_path):
    args = tiny_args(tmp_path, "--steps", "1", "--eval-split", "test", "--no-plots", "--no-tensorboard")
    assert main(args) == 0
    run = tmp_path / "run"
    episodes = run / "episodes" / "eval_step_000001.jsonl"
    played = [json.loads(line)["task"]["seed"] for line in episodes.open()]
    assert played == envs.heldout_seeds(4)
    assert not (run / "test.jsonl").exists()  # the in-run evaluations are the test number


@pytest.mark.slow
def test_the_readme_env_trains_with_its_own_preset_from_its_directory(tmp_path):
    from tests.envs.conftest import EXAMPLE_MODULE, readme_example_source

    (tmp_path / f"{EXAMPLE_MODULE}.py").write_text(readme_example_source())
    args = ["--env", "guess_env:mylab/guess", "--model", "tiny-test", "--steps", "1", "--eval-tasks", "2"]
    done = run_module("trainers.at_grpo", [*args, "--no-progress", "--run-name", "guess"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    config = json.loads((tmp_path / "runs" / "guess" / "config.json").read_text())
    # GuessEnv.TRAINING: 8-token replies, easy secrets; TrainingPreset's defaults for the rest.
    assert config["max_new_tokens"] == 8 and config["temperature"] == 0.7
    assert config["env_kwargs"] == {"difficulty": "easy", "max_cycles": 2}
    (step,) = read_jsonl(tmp_path / "runs" / "guess" / "metrics.jsonl")
    assert step["samples"] > 0


@pytest.mark.slow
def test_bare_training_command_runs_with_the_default_model(tmp_path):
    # One step and 2-task evaluations: what the bare command does, at a small part of its
    # evaluations' cost (an untrained team plays every cycle of every task with full-length
    # replies; 4-task evaluations made this the suite's slowest test after the learning tests).
    args = ["--env", "sokoban", "--steps", "1", "--eval-tasks", "2", "--test-tasks", "2"]
    done = run_module("trainers.at_grpo", args, cwd=tmp_path, auto_threads=True)
    assert done.returncode == 0, done.stderr[-3000:]
    (run,) = (tmp_path / "runs").iterdir()
    config = json.loads((run / "config.json").read_text())
    assert config["model"] == "smollm2-135m-instruct" and config["env_kwargs"]["difficulty"] == "easy"
    # the thread count the command chose for itself is said and recorded
    assert f"threads: {config['threads']} (auto: " in done.stderr and config["threads"] >= 1
    (step,) = read_jsonl(run / "metrics.jsonl")
    assert step["samples"] > 0 and step["time/generate"] > 0
    assert [r["step"] for r in read_jsonl(run / "eval.jsonl")] == [0, 1]
    assert (run / "checkpoints" / "step_000001" / "weights.safetensors").is_file()


@pytest.mark.slow
def test_the_training_command_learns_when_the_model_can(tmp_path):
    """End to end (config -> rollouts -> learner -> checkpoints -> held-out eval) on a task a
    random tiny model can learn: held-out success (sampled at T = 1) from chance to ~1."""
    from trainers.at_grpo import train
    from trainers.config import TrainConfig

    summary = train(
        TrainConfig(
            env=TEST_ENV, model="tiny-test", policy="shared", lora=False, lr=1e-2, steps=30, tasks_per_step=8,
            max_new_tokens=1, response_prefix="", temperature=1.0, eval_temperature=1.0, eval_tasks=64,
            eval_every=0, output_dir=str(tmp_path), run_name="learns",
            progress=False, plots=False, tensorboard=False, checkpoint_every=30,
        )
    )  # fmt: skip
    # judged on the held-out test block (test.jsonl), not the validation curve
    before, after = summary.test_before["success"], summary.test_after["success"]
    print(f"\n[training command] held-out test success {before:.2f} -> {after:.2f}")
    assert before < 0.3 and after >= 0.9
    assert summary.after["success"] >= 0.9  # the validation slice agrees


# ------------------------------------------------------------------ loss presets end to end
def test_dr_grpo_trains_with_r_minus_mean_advantages(tmp_path, monkeypatch):
    """The audit's repro (--loss dr_grpo crashed once an advantage was non-zero): one step on the
    tiny model, with Dr. GRPO's A = r - mean (no std) reaching the learner."""
    import numpy as np

    import trainers.runtime.step as step_module
    from trainers.at_grpo import train

    seen = []
    real = step_module.compute_advantages

    def spy(samples, estimator, **options):
        seen.append((samples, real(samples, estimator, **options)))
        return seen[-1][1]

    monkeypatch.setattr(step_module, "compute_advantages", spy)
    summary = train(
        TrainConfig(
            env=TEST_ENV, model="tiny-test", loss="dr_grpo", response_prefix="", steps=1, tasks_per_step=4,
            num_generations=4, eval_tasks=1, max_new_tokens=2, output_dir=str(tmp_path), run_name="dr",
            progress=False, plots=False, tensorboard=False,
        )
    )  # fmt: skip
    ((samples, result),) = seen
    groups: dict = {}
    for s in samples:
        groups.setdefault((s.task, s.episode, s.tree_node, s.turn, s.agent), []).append(s.reward)
    expected = [
        s.reward - np.mean(groups[(s.task, s.episode, s.tree_node, s.turn, s.agent)]) for s in samples
    ]
    assert np.allclose(result.advantages, expected, atol=1e-9)
    assert np.abs(result.advantages).max() > 0  # the case that crashed
    (step,) = read_jsonl(summary.run_dir / "metrics.jsonl")
    assert step["samples_trained"] > 0 and np.isfinite(step["loss"])
    config = json.loads((summary.run_dir / "config.json").read_text())
    assert config["advantage_scale"] == "none" and config["dynamic_sampling"] is False


def test_a_given_initial_evaluation_is_logged_as_step_0_instead_of_re_evaluating(tmp_path):
    from trainers.at_grpo import train

    given = {"success": 0.125, "invalid_rate": 0.5}
    summary = train(tiny_config(tmp_path, steps=1), initial_eval=given)
    evals = read_jsonl(summary.run_dir / "eval.jsonl")
    assert [record["step"] for record in evals] == [0, 1]
    assert evals[0]["success"] == 0.125 and evals[0]["invalid_rate"] == 0.5
    assert summary.before == given
    assert not (summary.run_dir / "transcripts" / "eval_step_000000.md").exists()  # not re-evaluated


def test_evaluations_of_weights_no_update_changed_are_reused_and_marked(tmp_path):
    from trainers.at_grpo import train

    # Every reply is right: every group is zero-variance, no step changes the weights.
    config = tiny_config(
        tmp_path, env="tests.trainers.conftest:test/always_right", steps=2, eval_every=1, test_tasks=4
    )
    summary = train(config)
    steps = read_jsonl(summary.run_dir / "metrics.jsonl")
    skipped = [v for r in steps for k, v in r.items() if k.endswith("/skipped_zero_weight")]
    assert len(skipped) == 4 and set(skipped) == {1.0}  # two units, two steps
    assert not any("optimizer_steps" in r for r in steps)
    evals = read_jsonl(summary.run_dir / "eval.jsonl")
    assert [r["step"] for r in evals] == [0, 1, 2]
    assert "same_weights_as_step" not in evals[0]
    assert [r["same_weights_as_step"] for r in evals[1:]] == [0, 0]
    assert all(r["success"] == evals[0]["success"] == 1.0 for r in evals)
    assert not (summary.run_dir / "transcripts" / "eval_step_000001.md").exists()  # not played
    episodes = summary.run_dir / "episodes"
    shown = [(episodes / f"eval_step_{s:06d}.jsonl").read_text() for s in (0, 1, 2)]
    assert shown[0] and shown[1] == shown[2] == shown[0]  # the report shows them at every step
    tests = read_jsonl(summary.run_dir / "test.jsonl")
    assert [r["step"] for r in tests] == [0, 2] and tests[1]["same_weights_as_step"] == 0
    # Weights that changed are evaluated again (the even task's rewards vary).
    changed = train(tiny_config(tmp_path / "b", steps=2, eval_every=1, test_tasks=4, lr=1e-2))
    assert all("optimizer_steps" in r for r in read_jsonl(changed.run_dir / "metrics.jsonl"))
    assert not any("same_weights_as_step" in r for r in read_jsonl(changed.run_dir / "eval.jsonl"))
    assert not any("same_weights_as_step" in r for r in read_jsonl(changed.run_dir / "test.jsonl"))


def test_a_scripted_opponent_plays_its_seat_and_only_the_model_trains(tmp_path):
    args = [
        *tiny_args(tmp_path, "--env", "tictactoe", "--steps", "1", "--max-new-tokens", "2"),
        *("--roles", "second=random"),
    ]
    main(args)
    run = tmp_path / "run"
    assert json.loads((run / "config.json").read_text())["roles"] == ["second=random"]
    turns = [
        turn
        for episode in read_jsonl(run / "episodes" / "train_step_000001.jsonl")
        for turn in episode["turns"]
    ]
    second = [turn for turn in turns if turn["agent"] == "second_0"]
    assert second and all(not turn["invalid"] for turn in second)  # random legal cells, never invalid
    assert all(turn["response"].startswith("<answer>") and turn["response"][8].isdigit() for turn in second)
    assert any(turn["agent"] == "first_0" for turn in turns)  # the tiny model played the first seat
