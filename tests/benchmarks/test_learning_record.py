"""The learning benchmark's results file: a rerun resumes it only under the same protocol (the
env's version included), cells recorded by older versions of the benchmark still report, and an
arm cut off before its first checkpoint keeps its step-0 evaluations."""

from __future__ import annotations

import argparse
import json

import pytest

import envs
from benchmarks import learning
from benchmarks.learning_record import pinned_env_id, resume_record, step0_left_in
from benchmarks.learning_report import summarise


def test_each_seed_is_generalised_from_its_own_warm_start_and_old_cells_from_the_teams_first(tmp_path):
    """A warm start trained again on a new checkout may play the other difficulties differently:
    the generalisation "before" averages each cell's own warm start, and cells recorded before
    it was kept per cell fall back to the team's first warm start."""

    def cell(seed, before, after, **extra):
        general = {"hard": {"success": after, "success_se": 0.0}}
        return {
            "arm": "grpo-tool", "seed": seed, "curve": {"0": 0.5}, "before": 0.5, "after": 0.5,
            "after_task_se": 0.0, "test_tasks": 8, "samples": 4, "wall_s": 60.0, "steps": 1,
            "phases": {"time/step": 60.0}, "general": general, **extra,
        }  # fmt: skip

    record = {
        "initial": {"tool": {"general": {"hard": {"success": 0.25}}}},
        "runs": [cell(0, 0.25, 0.5), cell(1, 0.75, 0.75, general_before={"hard": {"success": 0.75}})],
    }
    path = tmp_path / "learning.json"
    path.write_text(json.dumps(record))
    runs = resume_record(path, argparse.Namespace(), learning.ARM_TEAMS)["runs"]
    assert [r["general_before"]["hard"]["success"] for r in runs] == [0.25, 0.75]
    hard = summarise(runs, {"grpo-tool": "tool"}, 0.0)["grpo-tool"]["general"]["hard"]
    assert hard["before"] == pytest.approx((0.5, 0.25)) and hard["after"] == pytest.approx((0.625, 0.125))


def test_the_env_version_is_pinned_and_a_file_that_named_none_is_not_resumed_on_a_newer_one(tmp_path):
    assert pinned_env_id("plan_path") == f"plan_path-v{envs.spec('plan_path').version}"
    assert pinned_env_id("tests.trainers.conftest:test/one_token") == (
        "tests.trainers.conftest:test/one_token-v0"
    )  # the module prefix stays: it registers the env
    results = tmp_path / "old.json"
    results.write_text(json.dumps({"runs": [], "initial": {}, "args": {"env": "plan_path"}}))
    args = argparse.Namespace(env=pinned_env_id("plan_path"))
    with pytest.raises(SystemExit, match="resolves to another version now.*args.env"):
        resume_record(results, args, learning.ARM_TEAMS)
    results.write_text(json.dumps({"runs": [], "initial": {}, "args": {"env": args.env}}))
    assert resume_record(results, args, learning.ARM_TEAMS)["runs"] == []  # the same pinned version resumes


def test_an_arm_cut_off_before_its_first_checkpoint_keeps_only_its_step0_evaluations(tmp_path):
    import dataclasses

    from trainers.config import TrainConfig

    config = TrainConfig(env="alfworld-v1", init="runs/warm", team="single", eval_tasks=16, test_tasks=256,
                         max_new_tokens=24, env_kwargs={"max_cycles": 20})  # fmt: skip
    saved = json.loads(json.dumps(dataclasses.asdict(config)))
    saved["env_kwargs"] = {"max_cycles": 20, "subgoal_reward": 0.1}  # the preset's added on the way
    (tmp_path / "config.json").write_text(json.dumps(saved))
    assert step0_left_in(tmp_path, config) == {}  # nothing evaluated yet
    (tmp_path / "eval.jsonl").write_text(json.dumps({"step": 0, "success": 0.25}) + "\n")
    assert step0_left_in(tmp_path, config) == {"validation": {"step": 0, "success": 0.25}}
    rows = [{"step": 0, "success": 0.375, "tasks": 256}, {"step": 3, "success": 0.5, "tasks": 256}]
    (tmp_path / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert step0_left_in(tmp_path, config)["test"] == rows[0]
    # another protocol's run dir: its evaluations are not this one's
    for change in ({"init": "runs/other"}, {"test_tasks": 128}, {"env_kwargs": {"max_cycles": 12}}):
        assert step0_left_in(tmp_path, dataclasses.replace(config, **change)) == {}, change
