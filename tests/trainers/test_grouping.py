"""The grouping engine (trainers/grouping.py): hand-computed cases and a hypothesis property."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainers.grouping import (
    EPS,
    discounted_returns,
    group_ids,
    group_stats,
    normalize_in_groups,
    rloo_in_groups,
)


def close(got, expected, tol: float = 1e-5) -> bool:
    return np.allclose(np.asarray(got, dtype=float), np.asarray(expected, dtype=float), atol=tol, rtol=0)


def test_group_ids_dense_in_first_seen_order():
    assert group_ids(["b", "a", "b", ("c", 1), "a"]).tolist() == [0, 1, 0, 2, 1]
    assert group_ids([]).tolist() == []


def test_normalize_group_batch_none_scales():
    values, groups = [0.0, 2.0, 4.0, 6.0], ["a", "a", "b", "b"]
    # group: each group has mean +-1 deviations and population std 1
    assert close(normalize_in_groups(values, groups, "group"), [-1, 1, -1, 1])
    assert normalize_in_groups(values, groups, "group")[1] == pytest.approx(1 / (1 + EPS), abs=1e-12)
    # batch: group mean, std of all four values = sqrt(5)
    assert close(normalize_in_groups(values, groups, "batch"), np.array([-1, 1, -1, 1]) / math.sqrt(5))
    # none: Dr. GRPO, no division
    assert normalize_in_groups(values, groups, "none").tolist() == [-1, 1, -1, 1]
    with pytest.raises(ValueError, match="scale"):
        normalize_in_groups(values, groups, "groups")


@pytest.mark.parametrize("scale", ["group", "batch", "none"])
def test_singleton_and_all_equal_groups_get_zero(scale):
    values = [1.0, 2.0, 3.0, 0.1 + 0.2, 0.3, 0.3, 7.0]
    groups = ["a", "a", "a", "eq", "eq", "eq", "single"]
    adv = normalize_in_groups(values, groups, scale)
    assert adv[3:].tolist() == [0.0, 0.0, 0.0, 0.0]  # exactly zero, float rounding tolerated
    assert adv[0] < 0 < adv[2] and adv[1] == 0  # group a: mean 2


def test_two_members_give_exactly_plus_minus_one():
    adv = normalize_in_groups([0.3, 0.7, 5.0, -5.0, 1.0, 1.0], [0, 0, 1, 1, 2, 2])
    assert close(adv, [-1, 1, 1, -1, 0, 0], tol=1e-5)
    assert adv[4] == adv[5] == 0.0


def test_rloo_in_groups_leave_one_out():
    adv = rloo_in_groups([1.0, 2.0, 6.0, 4.0, 9.0, 9.0], ["g", "g", "g", "single", "eq", "eq"])
    # 1 - (2 + 6)/2 = -3, 2 - 3.5 = -1.5, 6 - 1.5 = 4.5 ; = K/(K-1) (r - mean) with mean 3
    assert adv.tolist() == [-3.0, -1.5, 4.5, 0.0, 0.0, 0.0]
    assert close(adv[:3], 3 / 2 * (np.array([1, 2, 6]) - 3))


def test_discounted_returns_by_hand_in_time_order():
    # episode e: time-ordered rewards 1, 0, 2 given shuffled; episode f: 3 alone
    rewards, groups, order = [2.0, 1.0, 3.0, 0.0], ["e", "e", "f", "e"], [2, 0, 0, 1]
    got = discounted_returns(rewards, groups, gamma=0.5, order=order)
    # R2 = 2, R1 = 0 + 0.5 * 2 = 1, R0 = 1 + 0.5 * 1 = 1.5
    assert got.tolist() == [2.0, 1.5, 3.0, 1.0]
    assert discounted_returns([1.0, 1.0], [0, 0], gamma=1.0).tolist() == [2.0, 1.0]
    with pytest.raises(ValueError, match="gamma"):
        discounted_returns([1.0], [0], gamma=1.5)


def test_group_stats_counts_zero_variance_among_groups_of_size_above_one():
    stats = group_stats(["a", "a", "b", "b", "b", "c", "d", "d"], [1, 2, 5, 5, 5, 9, 0, 0])
    assert stats["num_groups"] == 4
    assert stats["group_size_min"] == 1 and stats["group_size_max"] == 3
    assert stats["group_size_mean"] == 2.0
    assert stats["singleton_share"] == 0.25
    assert stats["zero_variance_groups"] == 2  # b and d; the singleton c is not counted
    assert stats["zero_variance_share"] == pytest.approx(2 / 3)
    assert stats["group_size_histogram"] == {1: 1, 2: 2, 3: 1}
    empty = group_stats([], [])
    assert empty["num_groups"] == 0 and empty["zero_variance_share"] == 0.0


# ------------------------------------------------------------------------------ GRPO and RLOO


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 4), st.floats(-100, 100, allow_nan=False, width=32)),
        min_size=1,
        max_size=30,
    )
)
def test_group_normalised_advantages_have_zero_mean_and_unit_std_per_group(members):
    groups = [g for g, _ in members]
    values = np.array([v for _, v in members], dtype=np.float64)
    adv = normalize_in_groups(values, groups)
    loo = rloo_in_groups(values, groups)
    for g in set(groups):
        mask = np.array(groups) == g
        spread, size = np.ptp(values[mask]), np.abs(values[mask]).max()
        if mask.sum() == 1 or spread <= 1e-12 * max(1.0, size):  # the module's "all equal" rule
            assert np.all(adv[mask] == 0) and np.all(loo[mask] == 0)
            continue
        assert abs(adv[mask].mean()) < 1e-9
        std = values[mask].std()
        assert adv[mask].std() == pytest.approx(std / (std + EPS), rel=1e-9)
        for i in np.flatnonzero(mask):
            others = values[mask & (np.arange(len(values)) != i)]
            assert loo[i] == pytest.approx(values[i] - others.mean(), abs=1e-9)
