"""Games learn on CI: the default model, trained against a random opponent in tic-tac-toe,
raises its held-out non-loss rate against that opponent.

Measured (2-core CPU, 2026-11-25): 6 steps of `python -m trainers.at_grpo --env tictactoe
--roles second=random` took the first seat's held-out win / draw / loss from 0.03 / 0.00 /
0.94 to 0.72 / 0.03 / 0.25 and its invalid replies from 0.32 (share of all turns) to 0.00.
"""

from __future__ import annotations

import pytest

from trainers.at_grpo import main
from trainers.run_log import read_jsonl


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
