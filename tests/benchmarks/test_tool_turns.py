"""The tool-turn benchmark measures both ways on the same candidates (real sandbox runs)."""

from __future__ import annotations

from benchmarks.tool_turns import main


def test_both_ways_give_the_same_rewards_and_the_rollout_way_runs_each_program_once(capsys):
    sequential, prefetched = main(["--env", "sudoku", "--tasks", "2", "--k", "4"])
    assert sequential["rewards"] == prefetched["rewards"]
    assert sequential["runs"] == sequential["programs"] == 8
    assert prefetched["runs"] == 2 * 3  # per task: the reference program once, two distinct wrong ones
    assert "speed-up" in capsys.readouterr().out
