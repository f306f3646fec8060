"""The learning benchmark: warm starts, arms x seeds, mean +- s.e., at equal samples or equal
wall time (the figures themselves are not asserted: they are what the benchmark measures)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

import envs
from benchmarks import learning, learning_arms
from benchmarks.learning_report import comparison_line
from trainers.run.files import read_jsonl

# measured 0.55 GB added (the smoke benchmark runs five times in the test process)
pytestmark = pytest.mark.memory(gb=1)


def test_a_run_dir_left_by_a_benchmark_with_other_settings_is_refused_not_resumed(tmp_path):
    import dataclasses

    from trainers.config import TrainConfig

    (tmp_path / "config.json").write_text(json.dumps({"init": "runs/old-warm-start", "seed": 0}))
    config = TrainConfig(init="runs/new-warm-start", seed=0)
    with pytest.raises(SystemExit, match="init='runs/old-warm-start'.*--run-name"):
        learning_arms._check_same_run(tmp_path, config)
    same = dataclasses.replace(config, init="runs/old-warm-start")
    learning_arms._check_same_run(tmp_path, same)  # the same settings: resumed


def test_a_missing_init_is_a_usage_error_naming_the_fix_before_any_work(tmp_path, capsys):
    missing = tmp_path / "runs" / "cut-warm-start" / "checkpoints" / "step_000013"
    results = tmp_path / "learning.json"
    with pytest.raises(SystemExit) as exit_info:
        learning.main(["--init", str(missing), "--output-dir", str(tmp_path), "--results", str(results)])
    assert exit_info.value.code == 2
    assert "train that warm start again first" in capsys.readouterr().err
    assert not results.exists()  # nothing was written


@pytest.mark.slow
def test_smoke_run_prints_every_arm_and_a_rerun_resumes_it(tmp_path, capsys):
    args = [
        "--model", "tiny-test", "--env", "tests.trainers.conftest:test/one_token", "--env-kwargs", "{}",
        "--sft-steps", "2", "--sft-train-tasks", "8", "--steps", "1", "--seeds", "0", "1",
        "--tasks-per-step", "2", "-K", "2", "--max-new-tokens", "1", "--response-prefix", "",
        "--eval-tasks", "4", "--eval-every", "1", "--test-tasks", "8", "--no-progress",
        "--output-dir", str(tmp_path), "--arms", "at_grpo-mas", "grpo-mas", "grpo-single",
    ]  # fmt: skip
    summary = learning.main(args)
    out = capsys.readouterr().out
    assert list(summary) == ["at_grpo-mas", "grpo-mas", "grpo-single"]
    for name, arm in summary.items():
        assert arm["seeds"] == [0, 1] and sorted(arm["curve"]) == [0, 1]
        assert arm["test_tasks"] == 8 and 0 <= arm["after_task_se"] <= 0.5
        # seeds, steps, samples, success before
        assert re.search(rf"{name}\s+2\s+[\d.]+\s+\d+\s+[\d.]+ \+- [\d.]+", out), name
    # Equal budgets are printed, not assumed: the single team gets twice the tasks.
    assert summary["grpo-single"]["samples"] == summary["grpo-mas"]["samples"] > 0
    assert "at_grpo-mas - grpo-mas:" in out and "at_grpo-mas - grpo-single:" in out
    assert "held-out test success on 8 tasks from test index 1000000" in out
    (result,) = tmp_path.glob("*/learning.json")
    record = json.loads(result.read_text())
    assert len(record["runs"]) == 6 and (result.parent / "learning.png").is_file()
    # one warm start per team, each arm from its team's
    assert sorted(record["warm_start"]) == ["mas", "single"]
    assert all(json.loads((result.parent / f"{r['arm']}-seed{r['seed']}" / "config.json").read_text())["init"]
               == record["warm_start"][r["arm"].split("-")[1]] for r in record["runs"])  # fmt: skip
    assert {r["first_test_seed"] for r in record["runs"]} == {envs.heldout_seeds(1)[0]}
    # The same command again: every (arm, seed) is in the results file, nothing is retrained.
    again = learning.main(args)
    assert "grpo-single seed 1: done" in capsys.readouterr().out
    assert again["at_grpo-mas"]["after"] == summary["at_grpo-mas"]["after"]
    assert len(json.loads(result.read_text())["runs"]) == 6
    # Cells missing from the file are run again: from the run's checkpoint where it has one
    # (a finished run resumes to the same numbers), from scratch where it has none.
    record = json.loads(result.read_text())
    old = {(r["arm"], r["seed"]): r for r in record["runs"]}
    kept = [r for r in record["runs"] if (r["arm"], r["seed"]) not in {("grpo-mas", 1), ("grpo-single", 1)}]
    result.write_text(json.dumps({**record, "runs": kept}))
    shutil.rmtree(result.parent / "grpo-single-seed1" / "checkpoints")
    mixed = learning.main(args)
    # runs read back from the file (curve steps as JSON strings) and new ones average together
    assert all(sorted(arm["curve"]) == [0, 1] for arm in mixed.values())
    rerun = {(r["arm"], r["seed"]): r for r in json.loads(result.read_text())["runs"]}
    assert len(rerun) == 6
    assert rerun["grpo-mas", 1]["after"] == old["grpo-mas", 1]["after"]  # resumed: its own test.jsonl
    assert (result.parent / "grpo-single-seed1" / "checkpoints").is_dir()  # trained again
    # --report-only: the table of the finished cells; a cell not run yet is named, not trained.
    seed2 = [*args[: args.index("--seeds") + 1], "0", "1", "2", *args[args.index("--seeds") + 3 :]]
    reported = learning.main([*seed2, "--report-only"])
    assert "grpo-mas seed 2: not run yet" in capsys.readouterr().out
    assert reported["grpo-mas"]["seeds"] == [0, 1] and len(json.loads(result.read_text())["runs"]) == 6
    assert "report_only" not in json.loads(result.read_text())["args"]
    # A new checkout: the results file is there, a warm start's run dir is not. The warm start
    # is trained again for its recorded steps; on the same machine its weights are bit for bit
    # the first ones, so its arms reuse the step-0 evaluations kept under their checksum.
    record = json.loads(result.read_text())
    assert record["warm_start_steps"] == {"mas": 2, "single": 2}
    (first,) = {r["warm_start_weights"] for r in record["runs"] if r["arm"] == "grpo-single"}

    def forget_single_cells(record):
        result.write_text(
            json.dumps({**record, "runs": [r for r in record["runs"] if r["arm"] != "grpo-single"]})
        )
        for gone in ("grpo-single-seed0", "grpo-single-seed1"):
            shutil.rmtree(result.parent / gone)

    forget_single_cells(record)
    shutil.rmtree(result.parent / "warm_start-single")
    learning.main(args)
    assert "warm start single: " in capsys.readouterr().out
    steps = [r["step"] for r in read_jsonl(result.parent / "warm_start-single" / "metrics.jsonl")]
    assert steps == [1, 2]
    record = json.loads(result.read_text())
    assert {r["warm_start_weights"] for r in record["runs"] if r["arm"] == "grpo-single"} == {first}
    assert not any("warm_start_check" in r for r in record["runs"])
    # Weights trained again that the file has not seen (here: their evaluations forgotten) are
    # evaluated by their first arm, which compares them with the first warm start's; the next
    # arm reuses them.
    del record["step0_by_weights"][first]
    forget_single_cells(record)
    shutil.rmtree(result.parent / "warm_start-single")
    learning.main(args)
    checked = [r for r in json.loads(result.read_text())["runs"] if "warm_start_check" in r]
    assert [(r["arm"], r["seed"]) for r in checked] == [("grpo-single", 0)]
    assert checked[0]["warm_start_check"]["same"]  # the same weights play the same episodes
    assert "warm start trained again: validation success" in capsys.readouterr().out
    # Other settings would mix two measurements in one file: refused, naming the flag.
    with pytest.raises(SystemExit, match="--lr"):
        learning.main([*args, "--lr", "0.5"])


@pytest.mark.slow
def test_equal_wall_time_arms_stop_on_their_minutes_and_play_the_other_difficulties(tmp_path, capsys):
    """--minutes: each arm trains until its minutes are spent (a tiny budget: one step each,
    whatever the machine), evaluates at its minute marks, and --general plays the difficulty
    presets never trained on, before (per team) and after (per arm)."""
    args = [
        "--model", "tiny-test", "--env", "tests.trainers.conftest:test/graded_one_token",
        "--warm-minutes", "0.000001", "--sft-train-tasks", "8", "--minutes", "0.000001",
        "--seeds", "0", "--tasks-per-step", "2", "-K", "2", "--max-new-tokens", "1",
        "--response-prefix", "", "--eval-tasks", "4", "--test-tasks", "8", "--general", "medium", "hard",
        "--general-tasks", "4", "--no-progress", "--output-dir", str(tmp_path),
    ]  # fmt: skip
    summary = learning.main(args)
    out = capsys.readouterr().out
    assert set(summary) == set(learning.DEFAULT_ARMS)
    (result,) = tmp_path.glob("*/learning.json")
    record = json.loads(result.read_text())
    assert sorted(record["warm_start"]) == ["mas", "single", "tool"]
    for team, run_dir in record["warm_start"].items():
        steps = [r["step"] for r in read_jsonl(Path(run_dir) / "metrics.jsonl")]
        assert steps == [1], (team, steps)  # the warm start's minutes ended it after one update
        assert record["warm_start_min"][team] > 0
    for run in record["runs"]:
        assert run["steps"] == 1  # the budget, not a step count, ended the arm
        assert [step for step, _, _ in run["curve_minutes"]] == [0, 1]
        assert set(run["general"]) == {"medium", "hard"} and run["general"]["hard"]["tasks"] == 4
        # "before" is the cell's own warm start, kept under its weights' checksum
        assert run["general_before"] == record["step0_by_weights"][run["warm_start_weights"]]["general"]
    for team in ("mas", "single", "tool"):
        assert set(record["initial"][team]["general"]) == {"medium", "hard"}
    assert "1e-06 training minutes per arm" in out and "Generalisation" in out
    assert "at_grpo-tool - grpo-tool:" in out and "at_grpo-tool - grpo-single:" in out
    assert (result.parent / "learning.png").is_file()
    # The tiny model's one-token replies all fail: every group is zero-variance, nothing updates.
    assert any(run["weights_never_updated"] for run in record["runs"])
    for run in record["runs"]:  # a cell whose every update was skipped keeps its warm start's
        if run["weights_never_updated"]:
            assert run["general"] == run["general_before"]
            assert not (result.parent / f"general-{run['arm']}-seed0").exists()  # not played again
    # Cut off after the single warm start's generalisation evaluation but before the file
    # recorded it, and in the middle of the tool warm start's (its directory written, its
    # summary not): the rerun reuses the finished evaluation and plays the cut-off one again.
    weights = {r["arm"]: r["warm_start_weights"] for r in record["runs"]}
    for arm in ("grpo-single", "grpo-tool"):
        del record["step0_by_weights"][weights[arm]]["general"]
    record["runs"] = [r for r in record["runs"] if r["arm"] not in ("grpo-single", "grpo-tool")]
    result.write_text(json.dumps(record))
    finished = result.parent / f"general-single-warm-{weights['grpo-single']}" / "general.json"
    cut_off = result.parent / f"general-tool-warm-{weights['grpo-tool']}" / "general.json"
    stamp = finished.stat().st_mtime_ns
    cut_off.unlink()
    learning.main(args)
    assert finished.stat().st_mtime_ns == stamp and cut_off.is_file()
    record = json.loads(result.read_text())
    for arm in ("grpo-single", "grpo-tool"):
        assert set(record["step0_by_weights"][weights[arm]]["general"]) == {"medium", "hard"}


def test_chunk_minutes_needs_an_equal_wall_time_budget(tmp_path, capsys):
    with pytest.raises(SystemExit):
        learning.main(["--chunk-minutes", "5", "--output-dir", str(tmp_path)])
    assert "--chunk-minutes" in capsys.readouterr().err and not any(tmp_path.iterdir())


@pytest.mark.slow
def test_arms_taking_turns_each_train_their_budget_and_record_their_turns(tmp_path, capsys):
    """--chunk-minutes: the arms of a seed train in turns (each pauses at a checkpoint and
    resumes; a tiny budget: one step each, whatever the machine), then each finishes alone."""
    args = [
        "--model", "tiny-test", "--env", "tests.trainers.conftest:test/one_token", "--sft-steps", "1",
        "--sft-train-tasks", "8", "--minutes", "0.000002", "--chunk-minutes", "0.000001", "--seeds", "0",
        "--tasks-per-step", "2", "-K", "2", "--max-new-tokens", "1", "--response-prefix", "",
        "--eval-tasks", "4", "--test-tasks", "4", "--no-progress", "--output-dir", str(tmp_path),
        "--arms", "gigpo-single", "grpo-single-1x",
    ]  # fmt: skip
    summary = learning.main(args)
    out = capsys.readouterr().out
    turns = re.findall(r"(\S+) seed 0: training to (\S+) of 2e-06 minutes", out)
    # the first turn's step passes both marks: no arm trains a second turn
    assert turns == [("gigpo-single", "1e-06"), ("grpo-single-1x", "1e-06")]
    assert set(summary) == {"gigpo-single", "grpo-single-1x"}
    (result,) = tmp_path.glob("*/learning.json")
    record = json.loads(result.read_text())
    for run in record["runs"]:
        assert run["chunk_minutes"] == 1e-6 and run["steps"] == 1
        assert [step for step, _, _ in run["curve_minutes"]] == [0, 1]  # the paused step's evaluation
        assert run["test_tasks"] == 4


def test_a_comparison_says_when_its_standard_error_means_nothing():
    def arm(seeds, after):
        return {"seeds": seeds, "after": after}

    summary = {
        "tool": arm([0, 1, 2], (1.0, 0.0)),
        "tool_grpo": arm([0, 1, 2], (1.0, 0.0)),
        "single": arm([0, 1, 2], (0.456, 0.026)),
        "mas": arm([0], (0.109, 0.0)),
    }
    assert comparison_line(summary, "tool", "single") == "tool - single: +0.544 +- 0.026 (s.e.; +20.9 s.e.)"
    equal = comparison_line(summary, "tool", "tool_grpo")
    assert equal.endswith("(s.e. 0: every seed of both arms ended equal)")
    assert comparison_line(summary, "mas", "single").endswith("(no s.e. over seeds: an arm has one seed)")


def _finished_cell(arm: str, seed: int, after: float) -> dict:
    return {
        "arm": arm, "seed": seed, "curve": {"0": 0.0, "4": after},
        "curve_minutes": [[0, 0.0, 0.0], [4, 10.2, after]], "steps": 4, "general": {}, "general_before": {},
        "before": 0.0, "after": after, "before_task_se": 0.0, "after_task_se": 0.0,
        "test_tasks": 8, "samples": 64, "wall_s": 900.0,
        "phases": {"time/step": 612.0, "time/generate": 400.0, "time/learner": 200.0},
    }  # fmt: skip


def test_a_command_that_runs_one_cell_reports_every_finished_cell_of_the_file(tmp_path, capsys):
    # A long protocol is finished one cell per command (--arms ARM --seeds S): the file's
    # summary, its curves and its args must stay the whole protocol's, not the last cell's.
    results = tmp_path / "rlshare.json"
    cells = [_finished_cell("at_grpo-tool", 0, 1.0), _finished_cell("grpo-tool", 0, 0.5)]
    recorded_args = {"arms": ["at_grpo-tool"], "seeds": [0]}
    results.write_text(json.dumps({"runs": cells, "initial": {}, "args": recorded_args}))
    summary = learning.main(["--report-only", "--arms", "grpo-tool", "--seeds", "0", "1", "--minutes", "30",
                             "--eval-every-minutes", "10", "--results", str(results),
                             "--output-dir", str(tmp_path)])  # fmt: skip
    assert list(summary) == ["at_grpo-tool", "grpo-tool"]
    assert "at_grpo-tool - grpo-tool: +0.500" in capsys.readouterr().out
    record = json.loads(results.read_text())
    assert list(record["summary"]) == ["at_grpo-tool", "grpo-tool"]
    assert record["args"]["arms"] == ["at_grpo-tool", "grpo-tool"] and record["args"]["seeds"] == [0, 1]


def test_report_only_with_no_finished_cell_says_so_and_writes_nothing(tmp_path):
    results = tmp_path / "none.json"
    with pytest.raises(SystemExit, match="has no finished cell of --arms grpo-single x --seeds 0"):
        learning.main(["--report-only", "--arms", "grpo-single", "--seeds", "0", "--results", str(results),
                       "--output-dir", str(tmp_path)])  # fmt: skip
    assert not results.exists()
