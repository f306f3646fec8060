"""The referential game learns on CI, with the default model (SmolLM2-135M-Instruct): the
supervised warm start from the oracle's turns (`python -m trainers.sft`; RL alone does not
learn this game at CI's budget: docs/games.md) takes held-out test accuracy with 3 objects
(chance 1/3) from chance to >= 0.75.

The schedule was chosen on the validation slice (`--eval-split validation`, one thread, 64
tasks): 60 cosine steps of 16 turns with 10 warm-up steps took validation accuracy from 0.20
to 0.80 at step 30 and 0.98 at step 60 (2026-11-25). Cheaper schedules (2026-11-27): 50 steps
(5 warm-up) 0.89; 40 steps 0.88; 30 steps at lr 4e-3 0.39; 60 steps of 8 turns 0.64; 40 steps
with 7 warm-up 0.844 +- 0.046 (2026-11-28), whose bar (0.70) would leave one standard error of
room if the test block again scored ~0.09 under validation. The test ran 60 x 16 until
2026-12-06, when the machine lost AVX-512 and it took 1,031 s of CI's 33-minute test run (a
30-minute budget); it now runs 50 x 16 with 5 warm-up steps (~13 s a step at one thread). It
runs first on its own worker under `-n` (LONG_MODULES in tests/memory_scheduler.py). With 4
objects, 120 steps reached only 0.89 on the test tasks in 24.5 min, which is why the test plays 3.

Threshold, derived from validation alone: 0.89 there for this schedule, minus 3 standard errors
of a 64-task rate near 0.9 (3 x 0.039) = 0.77, rounded down to 0.75 (chance is 1/3). The held-
out protocol's 64 test tasks (from index 1,000,000) gave 0.891 in CI on 2026-11-27 under the
60-step schedule (validation 0.98 there; the issue's old bar of 0.9, never derived from
validation, failed). This block has been seen by this test: a recipe change must be judged on
validation.

The validation loss (before and after training; it steers nothing) is taken on 8 validation
tasks, not the default 64: 64 cost 77 s of the test's 15.5 min at one thread (2026-11-28).
"""

from __future__ import annotations

import pytest

from trainers import sft
from trainers.run.files import read_jsonl

pytestmark = pytest.mark.memory(gb=4)  # measured 3.3 GB added


@pytest.mark.slow
def test_referential_warm_start_goes_from_chance_to_at_least_0_75(tmp_path):
    args = (
        "--env referential --steps 50 --train-tasks 1000 --lr-schedule cosine --warmup-steps 5 "
        "--eval-every 0 --val-every 50 --val-tasks 8 --eval-tasks 4 --test-tasks 64 --no-progress"
    )
    sft.main(
        [
            *args.split(),
            "--env-kwargs",
            '{"num_objects": 3}',
            "--output-dir",
            str(tmp_path),
            "--run-name",
            "run",
        ]
    )
    # Asserted on 64 held-out test tasks of the protocol's block (the schedule was chosen on
    # the validation slice; the in-run validation evaluations here are only 4 tasks).
    before, after = read_jsonl(tmp_path / "run" / "test.jsonl")
    assert (before["step"], after["step"]) == (0, 50) and after["tasks"] == 64
    assert before["success"] <= 1 / 3 + 0.1, before  # chance (or below: invalid replies) before
    assert after["success"] >= 0.75, after  # validation 0.89 - 3 s.e. (module docstring)
