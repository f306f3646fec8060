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
    record = record_of("other weights")  # not the file's: measured afresh
    prepare_warm_start(args, tmp_path, "tool", record, lambda: None)
    assert record["warm_start_min"] == {"tool": 6.0}
