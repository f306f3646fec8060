"""Held-out evaluation of a team, and the episode/sample metrics training logs.

Evaluation plays one episode per test-split task (K = 1, no selection; ALGORITHMS.md
section 2) with a fixed sampler seed, so two evaluations of the same weights agree.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import envs
from agents.base import SamplingParams
from agents.team import Team
from envs.core import role_of
from trainers.records import Episode, TaskKey, Turn
from trainers.rollout import plain_rollout

__all__ = ["EvalResult", "evaluate", "episode_metrics", "sample_metrics", "test_tasks"]

EVAL_SEED = 1234  # sampler seed of evaluations (only matters when eval temperature > 0)


@dataclass(frozen=True)
class EvalResult:
    """Metrics (success, invalid_rate, mean return per role, ...) and the played episodes."""

    metrics: dict[str, float]
    episodes: tuple[Episode, ...]


def test_tasks(env_id: str, n: int) -> list[TaskKey]:
    """The first ``n`` held-out tasks of ``env_id`` (test-split seeds, never trained on)."""
    return [TaskKey(env_id, "test", seed) for seed in envs.split_seeds("test", n)]


test_tasks.__test__ = False  # a helper, not a pytest test


def episode_metrics(episodes: Sequence[Episode]) -> dict[str, float]:
    """success, mean episode length, and mean return per role (``return/<role>``)."""
    if not episodes:
        return {}
    returns: dict[str, list[float]] = defaultdict(list)
    for episode in episodes:
        for agent, value in episode.returns.items():
            returns[role_of(agent)].append(value)
    out = {
        "success": float(np.mean([e.success for e in episodes])),
        "episode_length": float(np.mean([e.length for e in episodes])),
        "truncated": float(np.mean([e.truncated for e in episodes])),
    }
    out.update({f"return/{role}": float(np.mean(values)) for role, values in sorted(returns.items())})
    return out


def sample_metrics(samples: Sequence[Turn]) -> dict[str, float]:
    """invalid_rate, mean reward per role (``reward/<role>``), reply lengths, finish reasons."""
    if not samples:
        return {}
    rewards: dict[str, list[float]] = defaultdict(list)
    for turn in samples:
        rewards[turn.role].append(turn.reward)
    out = {
        "invalid_rate": float(np.mean([t.invalid for t in samples])),
        "response_tokens": float(np.mean([len(t.token_ids) for t in samples])),
        "truncated_replies": float(np.mean([t.finish_reason == "length" for t in samples])),
        "samples": float(len(samples)),
    }
    out.update({f"reward/{role}": float(np.mean(values)) for role, values in sorted(rewards.items())})
    return out


def evaluate(
    team: Team,
    env_id: str,
    *,
    num_tasks: int,
    sampling: SamplingParams,
    env_kwargs: Mapping[str, Any] | None = None,
) -> EvalResult:
    """Play one episode on each of the first ``num_tasks`` test tasks."""
    batch = plain_rollout(
        test_tasks(env_id, num_tasks),
        team,
        episodes_per_task=1,
        sampling=sampling,
        env_kwargs=env_kwargs,
        seed=EVAL_SEED,
    )
    metrics = {**episode_metrics(batch.episodes), **sample_metrics(batch.samples)}
    metrics["time/eval"] = float(batch.stats.get("time/rollout", 0.0))
    return EvalResult(metrics, batch.episodes)
