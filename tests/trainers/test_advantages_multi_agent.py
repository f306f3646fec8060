"""Per-agent (Dr. MAS) and MATPO advantages: by hand, with team terms, and on real rollouts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.trainers.advantages_helpers import S3, close, paid, turn
from trainers.advantages import compute_advantages, grpo, matpo, per_agent
from trainers.records import TaskKey, Turn

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


# ------------------------------------------------ who is paid what: team terms on other turns


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
