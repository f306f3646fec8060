"""RAE's advantages: a per-seat moving baseline, carried from batch to batch in the estimator's state."""

from __future__ import annotations

import dataclasses

import pytest

from tests.trainers.advantages_helpers import turn
from trainers.advantages import ADVANTAGE_ESTIMATORS, rae
from trainers.records import Turn


# ---------------------------------------------------------------------------- rae
def _game(task_seed: int, episode: int, first: float, second: float) -> list[Turn]:
    """Two seats that each act once; the outcome is paid on the second seat's move to both
    (the first seat's part comes through agent_rewards, as a real game's seat terms do)."""
    opening = turn(task_seed, episode, "first_0", 0, 0.0, role="first")
    ending = dataclasses.replace(
        turn(task_seed, episode, "second_0", 0, second, step=1, role="second"),
        agent_rewards={"first_0": first, "second_0": second},
    )
    return [opening, ending]


def test_rae_subtracts_a_per_seat_moving_baseline_read_before_the_update():
    batch = _game(0, 0, 1.0, -1.0) + _game(1, 0, 0.0, 0.0)  # X wins, then a draw
    first = rae(batch, decay=0.5, debias=False)  # SPIRAL's zero-started baseline
    # baselines start at 0: A = the seat's episode return, on every sample the seat played
    assert list(first.advantages) == [1.0, -1.0, 0.0, 0.0]
    # each seat's baseline moves once towards the batch mean: 0.5 * 0 + 0.5 * mean
    assert first.state == {"baselines": {"toy|first_0": 0.25, "toy|second_0": -0.25}}
    assert first.diagnostics["rae/toy|first_0"] == 0.25
    second = rae(_game(2, 0, 1.0, -1.0), decay=0.5, state=first.state)
    assert list(second.advantages) == [0.75, -0.75]  # 1 - 0.25 and -1 + 0.25
    assert second.state["baselines"] == {"toy|first_0": 0.625, "toy|second_0": -0.625}


def test_rae_debiased_starts_from_the_first_batch_mean_then_averages_past_batches():
    batch = _game(0, 0, 1.0, -1.0) + _game(1, 0, 0.0, 0.0)  # X wins, then a draw
    first = rae(batch, decay=0.5)
    # no history: each seat against this batch's mean return (first 0.5, second -0.5)
    assert list(first.advantages) == [0.5, -0.5, -0.5, 0.5]
    assert first.state == {
        "baselines": {"toy|first_0": 0.25, "toy|second_0": -0.25},  # the zero-started average
        "batches": {"toy|first_0": 1, "toy|second_0": 1},
    }
    assert first.diagnostics["rae/toy|first_0"] == 0.5  # 0.25 / (1 - 0.5): the first batch's mean
    second = rae(_game(2, 0, 1.0, -1.0), decay=0.5, state=first.state)
    assert list(second.advantages) == [0.5, -0.5]  # 1 - 0.5 and -1 + 0.5
    # after two batches: (0.25 * 0.5 + 0.5 * 1) / (1 - 0.25), the weighted mean of the batch means
    assert second.diagnostics["rae/toy|first_0"] == pytest.approx(0.625 / 0.75)


def test_rae_continues_a_state_saved_before_debias_as_it_was():
    legacy = {"baselines": {"toy|first_0": 0.25, "toy|second_0": -0.25}}  # no "batches"
    result = rae(_game(2, 0, 1.0, -1.0), decay=0.5, state=legacy)
    assert list(result.advantages) == [0.75, -0.75]  # b = the raw average, as before
    assert result.state == {"baselines": {"toy|first_0": 0.625, "toy|second_0": -0.625}}


def test_rae_is_registered_as_a_stateful_plain_rollout_estimator():
    spec = ADVANTAGE_ESTIMATORS["rae"]
    assert spec.stateful and spec.rollouts == ("plain",) and spec.scales == ("none",)
    assert "state" not in spec.options and "decay" in spec.options  # state is not a user option
    assert rae([]).state == {"baselines": {}, "batches": {}}
    assert "debias" in spec.options
    with pytest.raises(ValueError, match="decay"):
        rae([], decay=1.0)
    assert not ADVANTAGE_ESTIMATORS["grpo"].stateful
