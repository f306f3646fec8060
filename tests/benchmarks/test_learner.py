"""The learner benchmark runs end to end on the tiny model: plain and shared-prefix steps
agree on the loss, and the shared prefix computes fewer token-forwards."""

from __future__ import annotations

import pytest

from benchmarks import learner


@pytest.mark.slow
def test_smoke_run_on_tiny_model(capsys):
    rows = learner.main(
        ["--model", "tiny-test", "--k", "2", "--max-new-tokens", "4", "--envs", "plan_path-v0"]
    )
    plain, shared, summary = rows
    assert plain["loss"] == pytest.approx(shared["loss"], abs=1e-5)
    assert shared["prefix_groups"] > 0 and plain["prefix_groups"] == 0
    assert shared["token_forwards"] < plain["token_forwards"]
    assert summary["bound"] > 1
    assert "bound K(P+R)/(P+K*R)" in capsys.readouterr().out
