"""The learning benchmark runs both arms at the same sample budget and prints its table
(the figures themselves are not asserted: they are what the benchmark measures)."""

from __future__ import annotations

import re

import pytest

from benchmarks import learning


@pytest.mark.slow
def test_smoke_run_prints_both_arms(tmp_path, capsys):
    arms = learning.main([
        "--model", "tiny-test", "--env", "tests.trainers.conftest:test/even_plan", "--steps", "2",
        "--max-new-tokens", "1", "--response-prefix", "", "--eval-tasks", "4", "--eval-every", "1",
        "--temperature", "1.0", "--output-dir", str(tmp_path),
    ])  # fmt: skip
    out = capsys.readouterr().out
    assert [arm["arm"] for arm in arms] == ["at_grpo-mas", "grpo-single"]
    assert [arm["team"] for arm in arms] == ["mas", "single"]
    # Same sample budget: the single-role team gets twice the tasks for half the turns.
    assert arms[0]["samples"] == arms[1]["samples"] > 0
    for name in ("at_grpo-mas", "grpo-single"):
        assert re.search(rf"{name}\s+\d+\s+\d+\s+[\d.]+->[\d.]+", out), name
    assert "team-return gain" in out and "seconds per training step" in out
