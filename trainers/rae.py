"""SPIRAL's role-conditioned advantage estimation (RAE) for self-play: a moving baseline per
(env, seat). Registered as ``rae`` in ``trainers.advantages``; kept apart because it is the one
stateful estimator (its baselines carry from batch to batch and into checkpoints).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

import numpy as np

from trainers.estimator_registry import AdvantageResult
from trainers.records import Turn
from trainers.sample_returns import advantage_result, episode_agent_returns, episode_members

__all__ = ["rae"]


def rae(
    samples: Sequence[Turn], *, decay: float = 0.95, debias: bool = True, state: Mapping | None = None
) -> AdvantageResult:
    """Role-conditioned advantage estimation (SPIRAL's RAE) for self-play: a baseline per seat.

    Every sample an agent played in an episode gets ``A = R - b``: ``R`` is that agent's return
    in the episode (``Episode.returns[agent]``) and ``b`` the exponential moving average of the
    returns of ``(env, agent)`` so far, read before this batch updates it. After the batch, each
    key's average moves once towards the batch's mean return of that key:
    ``m <- decay * m + (1 - decay) * mean``, from ``m = 0``. No std scaling (SPIRAL's).
    Seats have different expected returns (X's first-move edge, Kuhn's second-player edge),
    and a shared-policy baseline would credit a seat for where it sits; per-seat baselines do
    not, and unlike a group mean they need no K episodes of the same task.

    ``debias`` (default): the baseline is the average without its pull towards the zero it
    starts from, ``b = m / (1 - decay ** n)`` after ``n`` batches (Adam's bias correction: a
    weighted mean of the past batch means), and a seat's first batch is measured against that
    batch's own mean return of the seat. Why: at decay 0.95, ``m`` is still 74% zero after 6
    batches, so a short run's advantages are its raw returns (all negative while the policy
    loses): under it, 6 steps against random failed the tic-tac-toe CI learning test. ``debias=False``
    is SPIRAL's zero-started baseline (``b = m``).

    ``state``: ``{"baselines": {"<env id>|<agent>": m}, "batches": {key: n}}`` from the previous
    call (``AdvantageResult.state``); None: no history. A state without ``batches`` (saved
    before ``debias`` existed) continues as ``debias=False``, so an old run resumes exactly.
    Diagnostics: ``rae/<env>|<agent>``, the baselines after the update.

    Raises:
        ValueError: ``decay`` outside [0, 1).
    """
    if not 0.0 <= decay < 1.0:
        raise ValueError(f"rae: decay must be in [0, 1), got {decay!r}")
    state = dict(state or {})
    averages = {str(k): float(v) for k, v in dict(state.get("baselines", {})).items()}
    batches = {str(k): int(v) for k, v in dict(state.get("batches", {})).items()}
    debias = debias and ("batches" in state or not averages)  # a state from before debias: as then
    ep, _ = episode_members(samples)
    n = int(ep.max()) + 1 if len(ep) else 0
    agent_returns = episode_agent_returns(samples, ep, n)
    episode_key = [None] * n
    for s, e in zip(samples, ep.tolist(), strict=True):
        episode_key[e] = s.task.env_id
    batch: dict[str, list[float]] = defaultdict(list)
    for e in range(n):
        for agent, value in agent_returns[e].items():
            batch[f"{episode_key[e]}|{agent}"].append(value)
    batch_mean = {key: float(np.mean(values)) for key, values in batch.items()}

    def baseline(key: str) -> float:
        if not debias:
            return averages.get(key, 0.0)
        if batches.get(key, 0) == 0:
            return batch_mean[key]  # no history: this batch's mean return of the seat
        return averages[key] / (1.0 - decay ** batches[key])

    advantages = np.array(
        [
            agent_returns[e][s.agent] - baseline(f"{episode_key[e]}|{s.agent}")
            for s, e in zip(samples, ep.tolist(), strict=True)
        ],
        dtype=np.float64,
    )
    for key, mean in batch_mean.items():
        averages[key] = decay * averages.get(key, 0.0) + (1.0 - decay) * mean
        batches[key] = batches.get(key, 0) + 1
    diagnostics = {f"rae/{key}": baseline(key) for key in sorted(averages)}
    result = advantage_result(advantages, diagnostics)
    new_state = {"baselines": averages, "batches": batches} if debias else {"baselines": averages}
    return AdvantageResult(result.advantages, result.weights, result.diagnostics, new_state)
