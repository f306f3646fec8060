"""benchmarks.warm_starts: the minutes an ``--init`` warm start stands for, for a whole run and
for one of its checkpoints (a warm start cut short), and for the same weights made again."""

from __future__ import annotations

import argparse
import json

import envs
from agents.hf import HFPolicy
from agents.team import Team
from benchmarks.warm_starts import init_minutes, prepare_warm_start, weights_checksum
from tests.trainers.conftest import EVEN_TEAM_ID
from trainers.learner import Learner, LearnerConfig
from trainers.run.checkpoint import save_checkpoint


def make_warm_run(tmp_path):
    """A run dir whose steps took 1, 2, 3 and 4 minutes, with checkpoints after steps 2 and 3
    (step 4 never saved)."""
    env = envs.make(EVEN_TEAM_ID)
    learner = Learner(Team.per_role(env, HFPolicy("tiny-test", adapters=env.roles)), LearnerConfig(lr=1e-2))
    run = tmp_path / "warm"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"model": "tiny-test"}))
    (run / "metrics.jsonl").write_text(
        "".join(json.dumps({"step": s, "time/step": 60.0 * s}) + "\n" for s in (1, 2, 3, 4))
    )
    for step in (2, 3):
        save_checkpoint(run, step, learner, {}, keep=2)
    return run


def test_init_minutes_of_a_run_and_of_one_of_its_checkpoints(tmp_path):
    run = make_warm_run(tmp_path)
    assert init_minutes(argparse.Namespace(init=str(run))) == 6.0  # up to its newest checkpoint
    cut = run / "checkpoints" / "step_000002"
    assert init_minutes(argparse.Namespace(init=str(cut))) == 3.0


def test_the_same_init_weights_made_again_keep_the_minutes_the_file_recorded(tmp_path):
    # A new checkout rebuilds the --init warm start; on a loaded machine its updates took longer
    # (here 6 minutes), but its weights are the same: the file keeps the 2 minutes it recorded.
    run = make_warm_run(tmp_path)
    args = argparse.Namespace(init=str(run))
    checksum = weights_checksum(run)

    def record_of(weights: str) -> dict:  # a results file whose cells started from ``weights``
        return {
            "warm_start": {},
            "warm_start_min": {"tool": 2.0},
            "warm_start_steps": {},
            "initial": {},
            "step0_by_weights": {weights: {}},
        }

    record = record_of(checksum)
    assert prepare_warm_start(args, tmp_path, "tool", record, lambda: None) == (str(run), checksum)
    assert record["warm_start_min"] == {"tool": 2.0}
    assert record["warm_start_min_by_weights"] == {checksum: 6.0}  # these weights' own minutes
    # Other weights from the same --init recipe: the file's budget (what its report prints) stays
    # the first warm start's; these weights' 6 minutes are kept under their checksum.
    record = record_of("other weights")
    prepare_warm_start(args, tmp_path, "tool", record, lambda: None)
    assert record["warm_start_min"] == {"tool": 2.0}
    assert record["warm_start_min_by_weights"] == {checksum: 6.0}


def test_other_init_weights_are_evaluated_again_not_given_the_first_ones_step0(tmp_path):
    # The file's cells started from other weights (a rebuild on another checkout): the step-0
    # evaluations of the first warm start must not be copied onto these, or an arm would report
    # a "before" its weights never played. A file from before the checksums (its cells carry
    # none) did start from these weights, and keeps its evaluations.
    run = make_warm_run(tmp_path)
    args = argparse.Namespace(init=str(run))
    checksum = weights_checksum(run)
    played = {"validation": {"success": 0.25}, "test": {"success": 0.5}}

    def record_of(cell: dict) -> dict:
        return {
            "warm_start": {},
            "warm_start_min": {"tool": 2.0},
            "warm_start_steps": {},
            "initial": {"tool": played},
            "step0_by_weights": {},
            "runs": [{"arm": "at_grpo-tool", "seed": 0, **cell}],
        }

    record = record_of({"warm_start_weights": "the first weights"})
    prepare_warm_start(args, tmp_path, "tool", record, lambda: None)
    assert checksum not in record["step0_by_weights"]  # run_arm plays them
    record = record_of({})  # from before the checksums
    prepare_warm_start(args, tmp_path, "tool", record, lambda: None)
    assert record["step0_by_weights"][checksum] == played
