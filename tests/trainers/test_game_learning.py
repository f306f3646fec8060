"""Games learn on CI, with the default model (SmolLM2-135M-Instruct):

* tic-tac-toe: trained against a random opponent with the preset's algorithm (spiral:
  plain episodes, RAE's per-seat baseline), the first seat's held-out non-loss rate against
  that opponent rises. Measured (2-core CPU at one thread, as here, 2026-11-25): 6 steps of
  `python -m trainers.at_grpo --env tictactoe --roles second=random` (9.1 min) took the
  first seat's held-out win / draw / loss from 0.03 / 0.00 / 0.94 to 0.59 / 0.03 / 0.38 and
  its invalid replies from 0.32 (share of all turns) to 0.00. (`--algo at_grpo`: 0.72 / 0.03
  / 0.25 in 3 min; spiral with SPIRAL's zero-started baseline, `debias=false`, failed this
  test.)
* the referential game: a warm start on the oracle's turns (`python -m trainers.sft --env
  referential`) takes held-out accuracy from chance (1/4) to >= 0.9. RL alone does not learn
  it at CI's budget, and RL from this warm start changes nothing: its listener is nearly
  deterministic, so every group of K replies has zero variance (README, Games). Steps and
  schedule were chosen on the validation slice (`--eval-split validation`, 64 tasks: accuracy
  0.33 at step 0; a constant lr 0.48 / 0.86 / 0.94 / 0.92 after 30 / 60 / 90 / 120 steps; the
  cosine schedule with 10 warm-up steps 0.91 / 0.94 after 60 / 120).
"""

from __future__ import annotations

import pytest

from trainers import sft
from trainers.at_grpo import main
from trainers.run_log import read_jsonl

QUIET = ["--no-progress", "--no-tensorboard", "--no-plots", "--transcripts", "0"]


@pytest.mark.slow
def test_tictactoe_against_random_raises_the_held_out_non_loss_rate(tmp_path):
    args = "--env tictactoe --roles second=random --steps 6 --eval-every 6 --eval-tasks 32 --no-progress"
    main([*args.split(), "--output-dir", str(tmp_path), "--run-name", "run"])
    before, after = read_jsonl(tmp_path / "run" / "eval.jsonl")
    assert (before["step"], after["step"]) == (0, 6)

    def non_loss(record):
        return record["win/first"] + record["draw/first"]

    assert non_loss(after) >= non_loss(before) + 0.3, (before, after)
    assert after["invalid_rate"] < before["invalid_rate"]


@pytest.mark.slow
def test_referential_warm_start_takes_the_team_from_chance_to_90_percent(tmp_path):
    warm = (
        "--env referential --steps 120 --lr-schedule cosine --warmup-steps 10 --train-tasks 1000 "
        "--eval-every 0 --eval-tasks 64 --val-every 120"
    )
    assert sft.main([*warm.split(), *QUIET, "--output-dir", str(tmp_path), "--run-name", "warm"]) == 0
    untrained, trained = read_jsonl(tmp_path / "warm" / "eval.jsonl")
    assert (untrained["step"], trained["step"]) == (0, 120)
    chance = 1 / 4
    assert untrained["success"] <= chance + 0.1, untrained  # the default model: about chance
    assert trained["success"] >= 0.9, (untrained, trained)
    assert trained["invalid_rate"] == 0.0
