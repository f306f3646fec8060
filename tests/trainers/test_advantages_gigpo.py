"""GiGPO's advantages by hand: the episode and anchor-state levels, its options, team terms."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from tests.trainers.advantages_helpers import close, gigpo_batch, paid, turn
from trainers.advantages import compute_advantages, gigpo
from trainers.records import Turn

# --------------------------------------------------------------------------------------- GiGPO


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


# ------------------------------------------------ who is paid what: team terms on other turns


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
