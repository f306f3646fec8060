"""The training command stopped and continued: a resume keeps the saved config, repeats the
uninterrupted run after a kill or a broken checkpoint, ends at a time budget, and evaluates
the weights a stop left behind."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import SUBPROCESS_TIMEOUT_S
from tests.trainers.at_grpo_runs import REPO, run_module, tiny_args, tiny_config, without_timings
from trainers.at_grpo import load_run_config
from trainers.cli import config_to_dict
from trainers.config import ConfigError, TrainConfig, resolve_config
from trainers.run.files import read_jsonl

pytestmark = pytest.mark.memory(gb=1.5)  # as test_at_grpo.py: the tiny model, in process and in subprocesses


def test_resume_keeps_the_saved_config(tmp_path):
    saved = resolve_config(TrainConfig(env="sokoban", run_name="x"))
    (tmp_path / "config.json").write_text(json.dumps(config_to_dict(saved)))
    resumed = load_run_config(tmp_path, {"resume": str(tmp_path), "steps": 40})
    assert resumed.steps == 40 and resumed.resume == str(tmp_path)
    assert dataclasses.replace(resumed, steps=saved.steps, resume=None) == saved
    with pytest.raises(ConfigError, match="lr"):
        load_run_config(tmp_path, {"lr": 0.5})
    with pytest.raises(ConfigError, match="no config.json"):
        load_run_config(tmp_path / "missing")


def test_resuming_a_run_saved_before_the_update_fields_keeps_its_old_behaviour(tmp_path):
    saved = config_to_dict(resolve_config(TrainConfig(env="sokoban", run_name="x")))
    for name in ("dynamic_sampling", "old_logprobs", "advantage_scale", "passes", "mini_batches"):
        del saved[name]
    (tmp_path / "config.json").write_text(json.dumps(saved))
    resumed = resolve_config(load_run_config(tmp_path, {"resume": str(tmp_path)}))
    assert (resumed.dynamic_sampling, resumed.old_logprobs) == (True, "sampler")
    assert (resumed.passes, resumed.mini_batches, resumed.advantage_scale) == (1, 1, "group")


@pytest.mark.slow
def test_resume_after_kill_gives_the_uninterrupted_metrics(tmp_path):
    # Two passes over two mini-batches per step: the seeded split must repeat on resume too.
    steps = [
        "--steps",
        "5",
        "--eval-every",
        "2",
        "--keep-checkpoints",
        "5",
        "--passes",
        "2",
        "--mini-batches",
        "2",
    ]
    reference = run_module("trainers.at_grpo", tiny_args(tmp_path / "a", *steps), cwd=tmp_path)
    assert reference.returncode == 0, reference.stderr[-3000:]

    # Start the same run, kill it (SIGKILL: no clean-up) once step 2's checkpoint is complete.
    run = tmp_path / "b" / "run"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        [sys.executable, "-m", "trainers.at_grpo", *tiny_args(tmp_path / "b", *steps)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + SUBPROCESS_TIMEOUT_S  # a hang guard, not a speed check
    while not (run / "checkpoints" / "step_000002" / "state.json").exists():
        assert process.poll() is None and time.monotonic() < deadline, "run ended before its 2nd checkpoint"
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not (run / "checkpoints" / "step_000005").exists()  # it really was cut short

    resumed = run_module("trainers.at_grpo", ["--resume", str(run), "--no-progress"], cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resuming after step" in resumed.stderr
    for name in ("metrics.jsonl", "eval.jsonl"):
        expected = without_timings(read_jsonl(tmp_path / "a" / "run" / name))
        assert without_timings(read_jsonl(run / name)) == expected, name
    records = read_jsonl(run / "metrics.jsonl")
    assert any(r.get("samples_trained", 0) > 0 for r in records)  # it did learn
    assert any(r.get("optimizer_steps", 0) > 2 and "pass2/clip_fraction" in r for r in records)


@pytest.mark.slow
def test_resume_past_a_truncated_optimizer_file_gives_the_uninterrupted_metrics(tmp_path):
    steps = ["--steps", "3", "--eval-every", "2"]
    reference = run_module("trainers.at_grpo", tiny_args(tmp_path / "a", *steps), cwd=tmp_path)
    assert reference.returncode == 0, reference.stderr[-3000:]
    run = tmp_path / "b" / "run"
    done = run_module("trainers.at_grpo", tiny_args(tmp_path / "b", *steps), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    optimizer = run / "checkpoints" / "step_000003" / "optimizer.safetensors"
    optimizer.write_bytes(optimizer.read_bytes()[:100])  # the newest checkpoint is broken

    resumed = run_module("trainers.at_grpo", ["--resume", str(run), "--no-progress"], cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "step_000003 is broken" in resumed.stderr
    assert "optimizer.safetensors has 100 bytes" in resumed.stderr
    assert "resuming after step 2" in resumed.stderr  # the checkpoint before it
    for name in ("metrics.jsonl", "eval.jsonl"):
        expected = without_timings(read_jsonl(tmp_path / "a" / "run" / name))
        assert without_timings(read_jsonl(run / name)) == expected, name


def test_a_training_time_budget_ends_the_run_and_a_resume_past_it_adds_no_step(tmp_path):
    from trainers.at_grpo import train
    from trainers.clock import UNCAPPED_STEPS
    from trainers.run.checkpoint import latest_checkpoint

    # Any step takes more than a millionth of a minute: the budget is spent by step 1, whatever
    # the machine, and without --steps nothing else would end the run.
    config = tiny_config(tmp_path, train_minutes=1e-6, test_tasks=0)
    assert resolve_config(config).steps == UNCAPPED_STEPS
    summary = train(config)
    assert summary.steps == 1
    assert [r["step"] for r in read_jsonl(summary.run_dir / "metrics.jsonl")] == [1]
    assert [r["step"] for r in read_jsonl(summary.run_dir / "eval.jsonl")] == [0, 1]
    assert latest_checkpoint(summary.run_dir).name == "step_000001"
    resumed = train(load_run_config(summary.run_dir, {"resume": str(summary.run_dir), "progress": False}))
    assert resumed.steps == 1
    assert [r["step"] for r in read_jsonl(summary.run_dir / "metrics.jsonl")] == [1]


def test_a_paused_run_stops_at_a_checkpoint_before_its_evaluation_and_resumes_as_if_never_paused(tmp_path):
    from trainers.at_grpo import train
    from trainers.run.checkpoint import latest_checkpoint
    from trainers.run.files import trained_seconds

    def config(name):
        return tiny_config(tmp_path / name, steps=3, eval_every=2, test_tasks=4)

    reference = train(config("a"))
    run = tmp_path / "b" / "run"

    def resume(pause_minutes=0.0):
        resumed = load_run_config(run, {"resume": str(run), "progress": False})
        return train(resumed, pause_minutes=pause_minutes)

    def logged(name):
        return [r["step"] for r in read_jsonl(run / name)]

    # A millionth of a minute: passed by the first step, whatever the machine.
    first = train(config("b"), pause_minutes=1e-6)
    assert first.paused and first.steps == 1 and first.test_after is None
    assert latest_checkpoint(run).name == "step_000001"
    assert (logged("metrics.jsonl"), logged("eval.jsonl"), logged("test.jsonl")) == ([1], [0], [0])
    assert resume(pause_minutes=1e-6).steps == 1 and logged("metrics.jsonl") == [1]  # there already
    # A mark step 2 passes: step 2's evaluation is due, and the pause comes before it.
    second = resume(pause_minutes=trained_seconds(run, 1) / 60 + 1e-9)
    assert second.paused and second.steps == 2 and logged("eval.jsonl") == [0]
    finished = resume()
    assert not finished.paused and finished.steps == 3 and logged("eval.jsonl") == [0, 2, 3]
    for name in ("metrics.jsonl", "eval.jsonl", "test.jsonl"):
        expected = without_timings(read_jsonl(reference.run_dir / name))
        assert without_timings(read_jsonl(run / name)) == expected, name


def test_minute_marks_evaluate_and_checkpoint_after_the_step_that_passes_them(tmp_path):
    from trainers.at_grpo import train

    # Marks a millionth of a minute apart: every step passes one.
    config = tiny_config(tmp_path, steps=3, eval_every_minutes=1e-6, checkpoint_every=10, test_tasks=0)
    summary = train(config)
    assert [r["step"] for r in read_jsonl(summary.run_dir / "eval.jsonl")] == [0, 1, 2, 3]
    checkpoints = sorted(p.name for p in (summary.run_dir / "checkpoints").iterdir())
    assert checkpoints[-1] == "step_000003" and len(checkpoints) >= 2  # keep_checkpoints=2 newest


@pytest.mark.slow
def test_the_rae_seat_baselines_are_checkpointed_and_a_resume_continues_them(tmp_path):
    rae = [
        "--algo",
        "grpo",
        "--estimator",
        "rae",
        "--estimator-kwargs",
        '{"decay": 0.5}',
        "--eval-every",
        "0",
    ]
    reference = run_module("trainers.at_grpo", tiny_args(tmp_path / "a", *rae, "--steps", "3"), cwd=tmp_path)
    assert reference.returncode == 0, reference.stderr[-3000:]
    run = tmp_path / "b" / "run"
    first = run_module("trainers.at_grpo", tiny_args(tmp_path / "b", *rae, "--steps", "2"), cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    state = json.loads((run / "checkpoints" / "step_000002" / "state.json").read_text())
    baselines = state["estimator_state"]["baselines"]
    assert baselines and all(key.startswith("test/even_plan") for key in baselines)
    resumed = run_module(
        "trainers.at_grpo", ["--resume", str(run), "--steps", "3", "--no-progress"], cwd=tmp_path
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    expected = without_timings(read_jsonl(tmp_path / "a" / "run" / "metrics.jsonl"))
    got = without_timings(read_jsonl(run / "metrics.jsonl"))
    assert got == expected  # step 3's advantages used the baselines saved after step 2
    assert any(key.startswith("adv/rae/") and value != 0 for key, value in got[-1].items())


def test_ending_a_run_early_at_its_last_checkpoint_evaluates_those_weights(tmp_path, monkeypatch, capsys):
    # The warm start always did this; the RL trainer reported its step-0 evaluation as "after".
    import trainers.at_grpo as at_grpo
    import trainers.runtime.step as step_module

    real = step_module.step_request

    def interrupt_at_step_3(config, step, sampling):
        if step == 3:  # after step 2's checkpoint, before the run's last-step evaluation
            raise KeyboardInterrupt
        return real(config, step, sampling)

    monkeypatch.setattr(step_module, "step_request", interrupt_at_step_3)
    with pytest.raises(KeyboardInterrupt):
        at_grpo.train(tiny_config(tmp_path, steps=6, checkpoint_every=1, test_tasks=0))
    assert f"continue with: python -m trainers.at_grpo --resume {tmp_path / 'run'}" in capsys.readouterr().err
    monkeypatch.setattr(step_module, "step_request", real)
    overrides = {"resume": str(tmp_path / "run"), "steps": 2, "progress": False}
    summary = at_grpo.train(load_run_config(tmp_path / "run", overrides))
    evals = read_jsonl(summary.run_dir / "eval.jsonl")
    assert [e["step"] for e in evals] == [0, 2]  # the step-2 weights, evaluated on resume
    assert summary.steps == 2 and summary.after["success"] == evals[-1]["success"]


def test_stopping_an_evaluation_keeps_its_step_and_the_resume_plays_it_first(tmp_path, monkeypatch):
    import trainers.at_grpo as at_grpo

    real = at_grpo.evaluate_unless_unchanged

    def interrupt_step_2s_evaluation(config, runtime, run, step, test=False):
        if step == 2:  # a tool team's evaluation can run for many minutes
            raise KeyboardInterrupt
        return real(config, runtime, run, step, test=test)

    monkeypatch.setattr(at_grpo, "evaluate_unless_unchanged", interrupt_step_2s_evaluation)
    config = tiny_config(tmp_path, steps=4, eval_every=2, checkpoint_every=2, test_tasks=0)
    with pytest.raises(KeyboardInterrupt):
        at_grpo.train(config)
    assert (tmp_path / "run" / "checkpoints" / "step_000002").is_dir()  # saved before evaluating
    monkeypatch.setattr(at_grpo, "evaluate_unless_unchanged", real)
    overrides = {"resume": str(tmp_path / "run"), "progress": False}
    summary = at_grpo.train(load_run_config(tmp_path / "run", overrides))
    assert [r["step"] for r in read_jsonl(summary.run_dir / "metrics.jsonl")] == [1, 2, 3, 4]
    assert [r["step"] for r in read_jsonl(summary.run_dir / "eval.jsonl")] == [0, 2, 4]


def test_a_test_stopped_in_a_later_part_keeps_its_finished_parts(tmp_path, monkeypatch):
    # A 256-task test of a household team runs for an hour: a stop in its last part must not
    # play the first parts again, and the resumed test gives the uninterrupted run's number.
    import trainers.at_grpo as at_grpo
    import trainers.runtime.evaluate as evaluate_module
    from trainers.runtime.local import LocalRuntime

    monkeypatch.setattr(evaluate_module, "PART_TASKS", 2)
    config = dict(steps=2, checkpoint_every=1, test_tasks=6)
    whole = at_grpo.train(tiny_config(tmp_path / "whole", **config))
    real = LocalRuntime.collect
    test_parts_played = []

    def stop_in_step_2s_last_part(self, request):
        if request.tasks[0].split == "test":
            test_parts_played.append(request.tasks)
            if len(test_parts_played) == 6:  # step 0: parts 1-3; step 2: parts 4, 5, then a stop
                raise KeyboardInterrupt
        return real(self, request)

    monkeypatch.setattr(LocalRuntime, "collect", stop_in_step_2s_last_part)
    with pytest.raises(KeyboardInterrupt):
        at_grpo.train(tiny_config(tmp_path / "stopped", **config))
    parts = tmp_path / "stopped" / "run" / "test_parts" / "step_000002"
    assert sorted(p.name for p in parts.glob("part_*")) == ["part_0000.json", "part_0001.json"]
    test_parts_played.clear()
    overrides = {"resume": str(tmp_path / "stopped" / "run"), "progress": False}
    resumed = at_grpo.train(load_run_config(tmp_path / "stopped" / "run", overrides))
    assert len(test_parts_played) == 1  # the missing part only
    runs = (resumed.test_after, whole.test_after)
    got, expected = ({k: v for k, v in r.items() if k != "time/eval"} for r in runs)
    assert got == expected and resumed.test_after["tasks"] == 6
    assert not (tmp_path / "stopped" / "run" / "test_parts").exists()
