"""Advantage estimators: hand-computed cases for every estimator and the array layer."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from trainers.advantages import (
    ADVANTAGE_ESTIMATORS,
    AdvantageResult,
    compute_advantages,
    gigpo,
    grpo,
    matpo,
    per_agent,
    rae,
    register_estimator,
    rloo,
    tree,
)
from trainers.records import TaskKey, Turn

ESTIMATOR_NAMES = ["grpo", "rloo", "at_grpo", "per_agent", "gigpo", "matpo", "tree", "rae"]
S3 = math.sqrt(1.5)  # |r - mean| / std for (1, 2, 3) scaled: 1 / sqrt(2/3)


def turn(
    task_seed: int,
    episode: int,
    agent: str,
    turn: int,
    reward: float,
    step: int | None = None,
    state_key: object = None,
    tree_node: tuple[int, ...] = (),
    candidate: int = 0,
    invalid: bool = False,
    role: str | None = None,
    selected: bool = True,
) -> Turn:
    """A Turn with only the fields estimators read; step defaults to turn, state_key to a unique one."""
    step = turn if step is None else step
    return Turn(
        task=TaskKey("toy", "train", task_seed),
        episode=episode,
        agent=agent,
        role=agent if role is None else role,
        policy="shared",
        turn=turn,
        step=step,
        prompt="",
        response="",
        prompt_token_ids=(),
        token_ids=(),
        logprobs=(),
        reward=reward,
        reward_terms={},
        invalid=invalid,
        state_key=("unique", task_seed, episode, step, tree_node, candidate)
        if state_key is None
        else state_key,
        tree_node=tree_node,
        candidate=candidate,
        selected=selected,
    )


def close(got, expected, tol: float = 1e-5) -> bool:
    return np.allclose(np.asarray(got, dtype=float), np.asarray(expected, dtype=float), atol=tol, rtol=0)


def grpo_batch() -> list[Turn]:
    """Task 0: episodes with returns 2 and 0 (K = 2). Task 1: returns 100, 200, 300 (another
    scale). Task 2: one episode. Task 3: two episodes with equal returns. Interleaved."""
    return [
        turn(0, 0, "a", 0, 1.0),
        turn(1, 0, "a", 0, 100.0),
        turn(0, 1, "a", 0, 0.0),
        turn(0, 0, "a", 1, 1.0),
        turn(1, 1, "a", 0, 150.0),
        turn(1, 1, "a", 1, 50.0),
        turn(0, 1, "a", 1, 0.0),
        turn(1, 2, "a", 0, 300.0),
        turn(2, 0, "a", 0, 5.0),
        turn(3, 0, "a", 0, 0.5),
        turn(3, 1, "a", 0, 0.25),
        turn(3, 1, "a", 1, 0.25),
    ]


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


# ------------------------------------------------------------------------------------- Dr. MAS


def test_per_agent_turn_base_normalises_each_agent_separately():
    samples = [
        turn(0, 0, "a", 0, 1.0),
        turn(0, 0, "b", 0, 10.0),
        turn(0, 1, "a", 0, 3.0),
        turn(0, 1, "b", 0, 30.0),
        turn(0, 2, "b", 0, 20.0),
        turn(1, 0, "a", 0, 7.0),  # same agent, other task: singleton
    ]
    result = per_agent(samples)
    assert close(result.advantages, [-1, -S3, 1, S3, 0, 0])
    assert result.diagnostics["num_groups"] == 3


def test_per_agent_episode_base_uses_the_agents_episode_return():
    samples = [
        turn(0, 0, "a", 0, 1.0),
        turn(0, 0, "a", 1, 2.0),  # agent a returns: episode 0 -> 3, episode 1 -> 1
        turn(0, 1, "a", 0, 1.0),
        turn(0, 0, "b", 0, 5.0),  # agent b returns: 5 and 5: all equal
        turn(0, 1, "b", 0, 2.0),
        turn(0, 1, "b", 1, 3.0),
    ]
    result = compute_advantages(samples, "per_agent", base="episode")
    assert close(result.advantages, [1, 1, -1, 0, 0, 0])
    assert result.diagnostics["zero_variance_groups"] == 1
    with pytest.raises(ValueError, match="base"):
        per_agent(samples, base="trajectory")


# --------------------------------------------------------------------------------------- GiGPO


def gigpo_batch(invalid: bool = False) -> list[Turn]:
    """Task 0, agent a, gamma 0.5. Episode 0: states s0 s1 s2, rewards 0 0 1 (R = 1).
    Episode 1: states s0 s2, rewards 0 0 (R = 0): s2 is met at step 2 and at step 1."""
    return [
        turn(0, 0, "a", 0, 0.0, state_key="s0"),
        turn(0, 1, "a", 0, 0.0, state_key="s0", invalid=invalid),
        turn(0, 0, "a", 2, 1.0, state_key="s2"),  # given out of time order on purpose
        turn(0, 0, "a", 1, 0.0, state_key="s1"),
        turn(0, 1, "a", 1, 0.0, state_key="s2"),
    ]


def test_gigpo_by_hand():
    result = gigpo(gigpo_batch(), gamma=0.5)
    # A^E = +1 (episode 0), -1 (episode 1). Discounted: ep0 0.25, 0.5, 1; ep1 0, 0.
    # anchors: s0 {0.25, 0} -> +-1; s1 singleton -> 0; s2 {1, 0} across steps 2 and 1 -> +-1
    assert close(result.advantages, [1 + 1, -1 - 1, 1 + 1, 1 + 0, -1 - 1])
    d = result.diagnostics
    assert d["anchor/group_size_histogram"] == {1: 1, 2: 2}
    assert d["anchor/singleton_share"] == pytest.approx(1 / 3)
    assert d["episode/num_groups"] == 1
    half = compute_advantages(gigpo_batch(), "gigpo", gamma=0.5, omega=0.5).advantages
    assert close(half, [1.5, -1.5, 1.5, 1.0, -1.5])


def test_gigpo_mean_norm_and_gamma():
    result = gigpo(gigpo_batch(), gamma=0.5, norm="mean_norm")
    # A^E = R - mean = +-0.5; s0: 0.25 - 0.125; s2: 1 - 0.5
    assert close(result.advantages, [0.5 + 0.125, -0.5 - 0.125, 0.5 + 0.5, 0.5, -0.5 - 0.5])
    gamma_one = gigpo(gigpo_batch(), gamma=1.0, norm="mean_norm").advantages
    # undiscounted returns-to-go of episode 0 are all 1: s0 {1, 0} -> +-0.5
    assert close(gamma_one[:2], [1.0, -1.0])


def test_gigpo_episode_stats_step_pools_over_samples():
    traj = gigpo(gigpo_batch(), omega=0.0, episode_stats="trajectory").advantages
    step = gigpo(gigpo_batch(), omega=0.0, episode_stats="step").advantages
    assert close(traj, [1, -1, 1, 1, -1])
    # five samples carry R = 1, 0, 1, 1, 0: mean 0.6, std sqrt(0.24)
    std = math.sqrt(0.24)
    assert close(step, [0.4 / std, -0.6 / std, 0.4 / std, 0.4 / std, -0.6 / std])
    with pytest.raises(ValueError, match="episode_stats"):
        gigpo(gigpo_batch(), episode_stats="episode")


def test_gigpo_invalid_penalty_applies_to_both_levels():
    default = gigpo(gigpo_batch(invalid=True), gamma=0.5).advantages
    assert close(default, gigpo(gigpo_batch(), gamma=0.5).advantages)  # default 0: reward has it
    result = gigpo(gigpo_batch(invalid=True), gamma=0.5, norm="mean_norm", invalid_penalty=0.1)
    # R = 1, -0.1 -> A^E = +-0.55; s0: 0.25 vs -0.1 -> +-0.175
    assert result.advantages[1] == pytest.approx(-0.55 - 0.175)
    assert result.advantages[0] == pytest.approx(0.55 + 0.175)


def test_gigpo_anchors_need_same_task_and_agent():
    samples = gigpo_batch() + [
        turn(1, 0, "a", 0, 5.0, state_key="s0"),  # same state, other task
        turn(0, 0, "b", 3, 0.0, state_key="s0"),  # same state and task, other agent
    ]
    result = gigpo(samples, gamma=0.5, omega=1.0, norm="mean_norm")
    assert result.advantages[5] == 0.0  # task 1: one episode, singleton anchor
    assert result.diagnostics["anchor/group_size_histogram"] == {1: 3, 2: 2}
    with pytest.raises(ValueError, match="plain episodes"):
        gigpo([turn(0, 0, "a", 0, 1.0, candidate=0), turn(0, 0, "a", 0, 0.0, candidate=1)])


# --------------------------------------------------------------------------------------- MATPO


def matpo_batch() -> list[Turn]:
    """Episode 0: planner delegates to three workers, final answer scores 1 (score 1).
    Episode 1: planner answers alone, scores 0. Task 1: a single episode."""
    return [
        turn(0, 0, "p", 0, 0.0, role="planner"),
        turn(0, 0, "w", 0, 0.5, step=1, role="worker"),
        turn(0, 0, "w", 0, 0.5, step=2, role="worker"),
        turn(0, 1, "p", 0, 0.0, role="planner"),
        turn(0, 0, "w", 0, 0.5, step=3, role="worker"),
        turn(0, 0, "p", 1, 1.0, step=4, role="planner"),
        turn(1, 0, "p", 0, 1.0, role="planner"),
    ]


def test_matpo_broadcasts_planner_episode_advantage_to_workers():
    result = matpo(matpo_batch())
    # worker rewards do not enter the score: scores 1 and 0 -> +-1; task 1 singleton -> 0
    assert close(result.advantages, [1, 1, 1, -1, 1, 1, 0])
    assert result.diagnostics["num_groups"] == 2


def test_matpo_weights_count_every_episode_equally():
    samples = matpo_batch()
    w = matpo(samples).weights
    # 7 samples, 3 episodes: each episode's weights sum to 7/3; episode 0 has 5 samples
    assert close(w, [7 / 15, 7 / 15, 7 / 15, 7 / 3, 7 / 15, 7 / 15, 7 / 3])
    assert w.sum() == pytest.approx(len(samples))
    by_episode = {}
    for s, weight in zip(samples, w, strict=True):
        by_episode[(s.task, s.episode)] = by_episode.get((s.task, s.episode), 0.0) + weight
    assert close(list(by_episode.values()), [7 / 3] * 3)
    # the many-worker episode (+1) and the lone planner (-1) cancel in the weighted sum
    assert float(np.sum((w * matpo(samples).advantages)[:6])) == pytest.approx(0.0, abs=1e-5)


def test_matpo_planner_role_option_and_missing_planner():
    samples = [
        turn(0, 0, "lead", 0, 1.0, role="lead"),
        turn(0, 0, "w", 0, 9.0, step=1, role="worker"),
        turn(0, 1, "lead", 0, 0.0, role="lead"),
    ]
    assert close(matpo(samples, planner_role="lead").advantages, [1, 1, -1])
    with pytest.raises(ValueError, match="planner"):
        matpo(samples)


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


# ------------------------------------------------------------------------------------ registry


def test_registry_has_exactly_the_eight_estimators():
    assert list(ADVANTAGE_ESTIMATORS) == ESTIMATOR_NAMES


def test_typo_raises_key_error_listing_the_names():
    with pytest.raises(KeyError) as info:
        compute_advantages(grpo_batch(), "gipgo")
    assert "gipgo" in str(info.value)
    assert all(name in str(info.value) for name in ESTIMATOR_NAMES)


def test_unknown_option_raises_type_error_naming_it():
    with pytest.raises(TypeError, match="omgea"):
        compute_advantages(gigpo_batch(), "gigpo", omgea=2.0)
    with pytest.raises(TypeError, match="scale"):
        compute_advantages(grpo_batch(), "rloo", scale="none")


def test_estimators_declare_rollouts_roles_and_scales():
    assert ADVANTAGE_ESTIMATORS["gigpo"].rollouts == ("plain",)
    assert ADVANTAGE_ESTIMATORS["at_grpo"].rollouts == ("tree",)
    assert ADVANTAGE_ESTIMATORS["gigpo"].scale_kwargs("none") == {"norm": "mean_norm"}
    rloo_spec = ADVANTAGE_ESTIMATORS["rloo"]
    assert rloo_spec.scales == ("none",) and rloo_spec.scale_kwargs("none") == {}
    matpo_spec = ADVANTAGE_ESTIMATORS["matpo"]
    assert matpo_spec.required_role({}) == "planner"
    assert matpo_spec.required_role({"planner_role": "boss"}) == "boss"
    assert ADVANTAGE_ESTIMATORS["grpo"].required_role({}) is None


def test_register_estimator_refuses_a_declared_option_the_function_lacks():
    def mine(samples, *, scale: str = "group"):
        return grpo(samples, scale=scale)

    with pytest.raises(ValueError, match="planner_role"):
        register_estimator("mine", mine, role_option="planner_role")
    with pytest.raises(ValueError, match="rollouts"):
        register_estimator("mine", mine, rollouts=("beam",))
    assert "mine" not in ADVANTAGE_ESTIMATORS
    with pytest.raises(ValueError, match="already registered"):
        register_estimator("grpo", mine)


def test_compute_advantages_passes_options():
    got = compute_advantages(grpo_batch(), "grpo", scale="none").advantages
    assert np.array_equal(got, grpo(grpo_batch(), scale="none").advantages)


@pytest.mark.parametrize("name", ESTIMATOR_NAMES)
def test_every_estimator_handles_an_empty_batch(name):
    result = compute_advantages([], name)
    assert result.advantages.shape == (0,) and result.weights.shape == (0,)
    assert result.diagnostics["num_samples"] == 0


# ---------------------------------------------------------------------------------- properties


# ------------------------------------------------ who is paid what: team terms on other turns


def paid(sample: Turn, **rewards: float) -> Turn:
    """``sample`` with ``agent_rewards`` recorded: its own reward plus what the others got."""
    return dataclasses.replace(sample, agent_rewards={sample.agent: sample.reward, **rewards})


def planner_executor_episode(seed: int, episode: int, success: bool) -> list[Turn]:
    """The audit's scenario: an oracle planner (its own reward, plan progress, is the same in
    every episode), then the executor, whose step pays the team success bonus (1.0) to both."""
    team = 1.0 if success else 0.0
    return [
        paid(turn(seed, episode, "planner_0", 0, 0.5, role="planner"), executor_0=0.0),
        paid(turn(seed, episode, "executor_0", 0, team, step=1, role="executor"), planner_0=team),
    ]


def test_matpo_scores_the_team_outcome_paid_on_the_executor_step():
    successes = [False, True, True, True]
    samples = [t for e, s in enumerate(successes) for t in planner_executor_episode(0, e, s)]
    result = matpo(samples)
    grpo_adv = grpo(samples).advantages  # GRPO gives [-1.73, 0.58, 0.58, 0.58] per episode
    assert close(grpo_adv[::2], [-math.sqrt(3), 1 / math.sqrt(3), 1 / math.sqrt(3), 1 / math.sqrt(3)])
    assert close(result.advantages, grpo_adv)  # same outcome ranking, credited to both roles
    assert result.diagnostics["zero_variance_groups"] == 0


def test_matpo_counts_the_planners_own_terms_but_not_the_workers():
    # Episode 0: the executor errs (its own -0.1) and the team fails; the planner's reply was
    # invalid in episode 1 (-0.1), the team succeeds there.
    samples = [
        paid(turn(0, 0, "planner_0", 0, 0.0, role="planner"), executor_0=0.0),
        paid(turn(0, 0, "executor_0", 0, -0.1, step=1, role="executor"), planner_0=0.0),
        paid(turn(0, 1, "planner_0", 0, -0.1, role="planner"), executor_0=0.0),
        paid(turn(0, 1, "executor_0", 0, 1.0, step=1, role="executor"), planner_0=1.0),
    ]
    scores = matpo(samples, scale="none").advantages  # r - mean, scores 0.0 and 0.9
    assert close(scores, [-0.45, -0.45, 0.45, 0.45])


def test_per_agent_episode_return_includes_team_terms_paid_on_other_turns():
    samples = [t for e, s in enumerate([False, True]) for t in planner_executor_episode(0, e, s)]
    result = per_agent(samples, base="episode")
    # planner returns 0.5 and 1.5, executor returns 0 and 1: each +-1
    assert close(result.advantages, [-1, -1, 1, 1])


def gigpo_team_batch() -> list[Turn]:
    """Two episodes of planner (p) / executor (x) / planner / executor. In episode 0 the
    executor's first reply is invalid (-0.1, its own term) and its second solves the task
    (team 1.0, paid to both); episode 1 never solves. Every planner step starts from state s0
    and the executor's from s0 too (nothing moved), except after the success."""
    return [
        paid(turn(0, 0, "p", 0, 0.0, step=0, state_key="s0", role="planner"), x=0.0),
        paid(turn(0, 0, "x", 0, -0.1, step=1, state_key="s0", role="executor", invalid=True), p=0.0),
        paid(turn(0, 0, "p", 1, 0.0, step=2, state_key="s0", role="planner"), x=0.0),
        paid(turn(0, 0, "x", 1, 1.0, step=3, state_key="s0", role="executor"), p=1.0),
        paid(turn(0, 1, "p", 0, 0.0, step=0, state_key="s0", role="planner"), x=0.0),
        paid(turn(0, 1, "x", 0, 0.0, step=1, state_key="s0", role="executor"), p=0.0),
        paid(turn(0, 1, "p", 1, 0.0, step=2, state_key="s0", role="planner"), x=0.0),
        paid(turn(0, 1, "x", 1, 0.0, step=3, state_key="s0", role="executor"), p=0.0),
    ]


def step_level(samples, **options) -> np.ndarray:
    """GiGPO's step-level term alone: omega = 1 minus the episode-level term (omega = 0)."""
    both = gigpo(samples, gamma=0.5, norm="mean_norm", **options).advantages
    return both - gigpo(samples, gamma=0.5, norm="mean_norm", omega=0.0, **options).advantages


def test_gigpo_step_return_agent_counts_what_later_steps_paid_the_agent():
    samples = gigpo_team_batch()
    agent = step_level(samples)  # default step_return="agent"
    # Planner at step 0 of episode 0: 0 + .5*0 (x's own -0.1 is not the planner's) + .25*0 + .125*1
    # planner anchor (p, s0): 0.125, 0.5, 0, 0 -> mean 0.15625
    assert agent[0] == pytest.approx(0.125 - 0.15625)
    assert agent[2] == pytest.approx(0.5 - 0.15625)
    path = step_level(samples, step_return="path")
    # "path": the executor's -0.1 counts for the planner: 0 - .05 + 0 + .125 = 0.075; step 2: 0.5
    assert path[0] == pytest.approx(0.075 - (0.075 + 0.5) / 4)
    # The executor's own stream is the same under both readings (only its own terms and team terms)
    executor = [1, 3, 5, 7]
    assert close(agent[executor], path[executor])
    with pytest.raises(ValueError, match="step_return"):
        gigpo(samples, step_return="team")


def test_gigpo_anchor_observation_separates_prompts_of_one_state():
    samples = [
        dataclasses.replace(s, prompt=f"plan {s.episode}") if s.role == "executor" else s
        for s in gigpo_team_batch()
    ]
    state = gigpo(samples, anchor="state").diagnostics
    observed = gigpo(samples, anchor="observation").diagnostics
    assert state["anchor/num_groups"] == 2  # (p, s0) and (x, s0), four members each
    assert observed["anchor/num_groups"] == 3  # the executor's two plans are two groups
    assert observed["anchor/group_size_histogram"] == {2: 2, 4: 1}
    with pytest.raises(ValueError, match="anchor"):
        gigpo(samples, anchor="prompt")


# ------------------------------------------- real rollouts: the returns the env itself defines


def played(team_of, episodes_per_task=4, n_tasks=6, max_cycles=2):
    """Plain rollouts of easy Plan-Path by a scripted team (no model needed)."""
    import envs
    from agents.team import Team
    from trainers.rollout import plain_rollout

    env = envs.make("plan_path", max_cycles=max_cycles)
    team = Team(env, team_of(env))
    tasks = [TaskKey(env.spec.id, "train", seed) for seed in envs.split_seeds("train", n_tasks)]
    sampling_params = __import__("agents.base", fromlist=["SamplingParams"]).SamplingParams(temperature=1.0)
    return plain_rollout(
        tasks,
        team,
        episodes_per_task=episodes_per_task,
        sampling=sampling_params,
        env_kwargs={"max_cycles": 2},
    )


def random_roles(env):
    from agents.scripted import RandomPolicy

    return {role: RandomPolicy(seed=i) for i, role in enumerate(env.roles)}


def test_per_agent_episode_returns_equal_the_rollouts_episode_returns():
    batch = played(random_roles)
    result = per_agent(batch.samples, base="episode", scale="none")
    returns = {(e.task, e.index): e.returns for e in batch.episodes}
    by_group: dict = {}
    for (task, _), r in returns.items():
        for agent, value in r.items():
            by_group.setdefault((task, agent), []).append(value)
    expected = [
        returns[(s.task, s.episode)][s.agent] - np.mean(by_group[(s.task, s.agent)]) for s in batch.samples
    ]
    assert close(result.advantages, expected, tol=1e-9)
    assert any(r["planner_0"] != 0 for r in returns.values())


class SometimesFollows:
    """An executor that plays the solver's moves with probability 1/2, else a random legal move."""

    name = "sometimes"

    def __init__(self):
        from agents.scripted import OraclePolicy, RandomPolicy

        self.oracle, self.random, self.rng = OraclePolicy(), RandomPolicy(seed=5), np.random.default_rng(7)

    def generate(self, prompts, *, num_samples=1, sampling=None, adapter=None):
        good = self.oracle.generate(prompts, num_samples=num_samples)
        bad = self.random.generate(prompts, num_samples=num_samples)
        return [
            [g if self.rng.random() < 0.5 else b for g, b in zip(gs, bs, strict=True)]
            for gs, bs in zip(good, bad, strict=True)
        ]


def test_matpo_on_real_rollouts_credits_the_success_an_oracle_planner_enables():
    """The audit's case end to end: an oracle planner and a random executor that sometimes
    follows through. The planner's score is its episode return, success included."""
    from agents.scripted import OraclePolicy

    batch = played(lambda env: {"planner": OraclePolicy(), "executor": SometimesFollows()}, n_tasks=8)
    result = matpo(batch.samples, scale="none")
    score = {(e.task, e.index): e.returns["planner_0"] for e in batch.episodes}
    by_task: dict = {}
    for (task, _), value in score.items():
        by_task.setdefault(task, []).append(value)
    expected = [score[(s.task, s.episode)] - np.mean(by_task[s.task]) for s in batch.samples]
    assert close(result.advantages, expected, tol=1e-9)
    mixed = [t for t in by_task if len({e.success for e in batch.episodes if e.task == t}) == 2]
    assert mixed, "no task with both a success and a failure: pick other seeds"
    success = {(e.task, e.index): e.success for e in batch.episodes}
    for task in mixed:  # the planner is credited for the success it enabled
        pairs = zip(batch.samples, result.advantages, strict=True)
        planner = [
            (a, success[(s.task, s.episode)]) for s, a in pairs if s.task == task and s.role == "planner"
        ]
        won = np.mean([a for a, ok in planner if ok])
        lost = np.mean([a for a, ok in planner if not ok])
        assert won > 0 > lost, (task, planner)


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
