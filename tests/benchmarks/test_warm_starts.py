"""benchmarks.warm_starts: the minutes an ``--init`` warm start stands for, for a whole run and
for one of its checkpoints (a warm start cut short)."""

from __future__ import annotations

import argparse
import json

import envs
from agents.hf import HFPolicy
from agents.team import Team
from benchmarks.warm_starts import init_minutes
from tests.trainers.conftest import EVEN_TEAM_ID
from trainers.learner import Learner, LearnerConfig
from trainers.run.checkpoint import save_checkpoint


def test_init_minutes_of_a_run_and_of_one_of_its_checkpoints(tmp_path):
    env = envs.make(EVEN_TEAM_ID)
    learner = Learner(Team.per_role(env, HFPolicy("tiny-test", adapters=env.roles)), LearnerConfig(lr=1e-2))
    run = tmp_path / "warm"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"model": "tiny-test"}))
    # steps of 1, 2, 3 and 4 minutes; checkpoints after steps 2 and 3 (step 4 never saved)
    (run / "metrics.jsonl").write_text(
        "".join(json.dumps({"step": s, "time/step": 60.0 * s}) + "\n" for s in (1, 2, 3, 4))
    )
    for step in (2, 3):
        save_checkpoint(run, step, learner, {}, keep=2)

    assert init_minutes(argparse.Namespace(init=str(run))) == 6.0  # up to its newest checkpoint
    cut = run / "checkpoints" / "step_000002"
    assert init_minutes(argparse.Namespace(init=str(cut))) == 3.0
