"""Group-relative advantages by hand: GRPO, RLOO, AT-GRPO (per tree node) and Tree-GRPO."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.trainers.advantages_helpers import S3, close, grpo_batch, turn
from trainers.advantages import AdvantageResult, compute_advantages, grpo, rloo, tree
from trainers.records import Turn


def test_grpo_episode_returns_per_task_broadcast_to_turns():
    result = grpo(grpo_batch())
    assert isinstance(result, AdvantageResult)
    # task 0: 2-GRPO, +-1; task 1: (-100, 0, 100) / sqrt(20000/3) = (-S3, 0, S3) despite the scale
    expected = [1, -S3, -1, 1, 0, 0, -1, S3, 0, 0, 0, 0]
    assert close(result.advantages, expected)
    assert result.weights.tolist() == [1.0] * 12
    d = result.diagnostics
    assert d["num_samples"] == 12 and d["num_groups"] == 4
    assert d["zero_variance_groups"] == 1 and d["zero_variance_share"] == pytest.approx(1 / 3)
    assert d["singleton_share"] == 0.25
    assert d["group_size_histogram"] == {1: 1, 2: 2, 3: 1}


def test_grpo_never_mixes_tasks():
    batch = grpo_batch()
    alone = grpo([s for s in batch if s.task.seed == 0]).advantages
    together = grpo(batch).advantages
    assert close(together[[0, 2, 3, 6]], alone)


def test_grpo_scales():
    none = grpo(grpo_batch(), scale="none").advantages
    assert close(none[[0, 1, 4, 7]], [1, -100, 0, 100])
    batch = grpo(grpo_batch(), scale="batch").advantages
    returns = np.array([2, 0, 100, 200, 300, 5, 0.5, 0.5])  # one value per episode
    assert close(batch[[0, 1]], [1 / returns.std(), -100 / returns.std()])


def test_grpo_episode_return_counts_only_the_executed_path():
    # tree rollouts: returns 1 + 1 = 2 and 1 + 0 = 1 from the selected samples; every sample of
    # the episode, unselected candidates included, gets the episode's advantage
    assert close(grpo(tree_batch()).advantages, [1, 1, 1, 1, -1, -1, -1, -1])


def test_rloo_is_k_over_k_minus_one_times_centred_return():
    result = rloo(grpo_batch())
    # task 0: K = 2, 2 * (2 - 1) = 2; task 1: 3/2 * (-100, 0, 100)
    assert close(result.advantages, [2, -150, -2, 2, 0, 0, -2, 150, 0, 0, 0, 0])
    assert result.diagnostics["zero_variance_groups"] == 1


# ------------------------------------------------------------------------------------- AT-GRPO


def test_at_grpo_candidates_of_one_node():
    samples = [
        # task 0 tree 0: node (turn 0, a): K = 3 rewards 1, 0, 0
        turn(0, 0, "a", 0, 1.0, candidate=0),
        turn(0, 0, "a", 0, 0.0, candidate=1),
        turn(0, 0, "a", 0, 0.0, candidate=2),
        # node (turn 0, b) after candidate 0 was selected: all equal
        turn(0, 0, "b", 0, 0.5, step=1, tree_node=(0,), candidate=0),
        turn(0, 0, "b", 0, 0.5, step=1, tree_node=(0,), candidate=1),
        # task 0 tree 1 has a node with the same (turn, agent, tree_node): its own group
        turn(0, 1, "a", 0, 0.3, candidate=0),
        turn(0, 1, "a", 0, 0.7, candidate=1),
        # task 1, same keys otherwise, other reward scale
        turn(1, 0, "a", 0, 10.0, candidate=0),
        turn(1, 0, "a", 0, 30.0, candidate=1),
        # an unbranched node: singleton
        turn(1, 0, "b", 0, 4.0, step=1, tree_node=(1,)),
    ]
    result = compute_advantages(samples, "at_grpo")
    two = math.sqrt(2)  # (2/3) / sqrt(2/9)
    assert close(result.advantages, [two, -two / 2, -two / 2, 0, 0, -1, 1, -1, 1, 0])
    d = result.diagnostics
    assert d["num_groups"] == 5 and d["zero_variance_groups"] == 1 and d["singleton_share"] == 0.2
    none = compute_advantages(samples, "at_grpo", scale="none").advantages
    assert close(none[:3], [2 / 3, -1 / 3, -1 / 3]) and close(none[7:9], [-10, 10])


# ---------------------------------------------------------------------------------- Tree-GRPO


def test_tree_on_plain_rollouts_equals_grpo():
    batch = grpo_batch()
    result = tree(batch)
    assert close(result.advantages, grpo(batch).advantages)
    assert result.diagnostics["intra/singleton_share"] == 1.0


def tree_batch() -> list[Turn]:
    """Task 0, two trees, K = 2, two levels. Tree 0: root candidates r = 1 (selected), 0; then
    under candidate 0 r = 1, 0. Tree 1: root r = 0, 1 (selected); then under candidate 1 r = 0, 0.
    Leaves (path returns): tree 0 (1,) 0, (0,0) 2, (0,1) 1; tree 1 (0,) 0, (1,0) 1, (1,1) 1."""
    return [
        turn(0, 0, "a", 0, 1.0, candidate=0),
        turn(0, 0, "a", 0, 0.0, candidate=1, selected=False),
        turn(0, 0, "a", 1, 1.0, tree_node=(0,), candidate=0),
        turn(0, 0, "a", 1, 0.0, tree_node=(0,), candidate=1, selected=False),
        turn(0, 1, "a", 0, 0.0, candidate=0, selected=False),
        turn(0, 1, "a", 0, 1.0, candidate=1),
        turn(0, 1, "a", 1, 0.0, tree_node=(1,), candidate=0),
        turn(0, 1, "a", 1, 0.0, tree_node=(1,), candidate=1, selected=False),
    ]


def test_tree_inter_plus_intra_by_hand():
    result = tree(tree_batch(), scale="none")
    # inter: mean of all six leaves 5/6. intra: tree 0 mean 1, tree 1 mean 2/3.
    leaf_02, leaf_01 = (2 - 5 / 6) + (2 - 1), (1 - 5 / 6) + 0
    leaf_11 = (1 - 5 / 6) + (1 - 2 / 3)
    expected = [
        (leaf_02 + leaf_01) / 2,  # inner node: mean over the leaves below it
        (0 - 5 / 6) + (0 - 1),
        leaf_02,
        leaf_01,
        (0 - 5 / 6) + (0 - 2 / 3),
        leaf_11,  # both leaves below have the same advantage
        leaf_11,
        leaf_11,
    ]
    assert close(result.advantages, expected)
    d = result.diagnostics
    assert d["num_leaves"] == 6 and d["inter/num_groups"] == 1 and d["intra/num_groups"] == 2
    grouped = tree(tree_batch()).advantages
    assert grouped[1] < 0 < grouped[2]


def test_tree_rejects_malformed_trees():
    batch = tree_batch()
    with pytest.raises(ValueError, match="two samples"):
        tree(batch + [batch[2]])
    with pytest.raises(ValueError, match="ancestor"):
        tree([s for i, s in enumerate(batch) if i != 0])
