"""Members and returns built from training samples (``Sequence[Turn]``), shared by the
advantage estimators (``trainers.advantages``, ``trainers.rae``).

A *member* is a set of samples that gets one value in its group: an episode (equal task and
episode), or one agent's part of an episode. Returns sum the rewards of a member's
``selected`` samples (all of a plain rollout; the executed path of a tree rollout).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

import numpy as np

from trainers.estimator_registry import AdvantageResult
from trainers.grouping import group_ids
from trainers.records import Turn

__all__ = [
    "advantage_result",
    "episode_agent_returns",
    "episode_members",
    "member_sums",
    "members",
    "prefixed",
    "sample_rewards",
]


def advantage_result(
    adv: np.ndarray, diagnostics: dict[str, float | dict], weights: np.ndarray | None = None
) -> AdvantageResult:
    adv = np.asarray(adv, dtype=np.float64)
    w = np.ones_like(adv) if weights is None else np.asarray(weights, dtype=np.float64)
    return AdvantageResult(adv, w, {"num_samples": len(adv), **diagnostics})


def prefixed(prefix: str, stats: dict[str, float | dict]) -> dict[str, float | dict]:
    return {f"{prefix}/{k}": v for k, v in stats.items()}


def sample_rewards(samples: Sequence[Turn]) -> np.ndarray:
    return np.array([float(s.reward) for s in samples], dtype=np.float64)


def members(
    samples: Sequence[Turn], member: Callable[[Turn], Hashable], group: Callable[[Turn], Hashable]
) -> tuple[np.ndarray, np.ndarray]:
    """Members made of several samples (an episode, an agent's part of one): the member id of
    every sample and the group id of every member."""
    of_sample = group_ids([member(s) for s in samples])
    group_of: list[Hashable] = [None] * (int(of_sample.max()) + 1 if len(of_sample) else 0)
    for s, m in zip(samples, of_sample.tolist(), strict=True):
        group_of[m] = group(s)
    return of_sample, group_ids(group_of)


def member_sums(samples: Sequence[Turn], values: np.ndarray, of_sample: np.ndarray, n: int) -> np.ndarray:
    """Sum of ``values`` over the selected samples of each member (the path return)."""
    selected = np.array([s.selected for s in samples], dtype=np.float64)
    return np.bincount(of_sample, weights=values * selected, minlength=n)


def episode_members(samples: Sequence[Turn]) -> tuple[np.ndarray, np.ndarray]:
    return members(samples, lambda s: (s.task, s.episode), lambda s: s.task)


def episode_agent_returns(samples: Sequence[Turn], episode_of: np.ndarray, n: int) -> list[dict[str, float]]:
    """Per episode, the return of every agent that acts in it: the sum over the selected samples
    of what each step paid that agent (``Turn.reward_of``), i.e. ``Episode.returns[agent]``."""
    returns: list[dict[str, float]] = [{} for _ in range(n)]
    for s, e in zip(samples, episode_of.tolist(), strict=True):
        returns[e][s.agent] = 0.0
    for s, e in zip(samples, episode_of.tolist(), strict=True):
        if s.selected:
            for agent in returns[e]:
                returns[e][agent] += s.reward_of(agent)
    return returns
