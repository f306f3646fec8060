"""Held-out evaluation of a team, and the metrics training and benchmarks report.

Evaluation plays held-out tasks with the training rollout code (``plain_rollout``:
K = 1 per episode, no selection) under a fixed sampler seed, so two evaluations of the
same weights agree. It never plays a training task: ``check_eval_tasks`` refuses any task
whose split or seed is not ``test`` (or, where asked, in the validation slice, which no
trainer draws), before a single env is made.

* ``evaluate``: the trainers' evaluation: one episode on each of the first N tasks of the
  train split's validation slice (``split="validation"``; ``envs.splits``: train-split seeds
  no trainer draws), where every choice is made, or of the protocol's held-out test block
  (``split="test"``: test tasks from ``envs.HELDOUT_TEST_START`` on, ``heldout_tasks``).
* ``evaluate_tasks`` + ``benchmark_metrics``: what ``python -m benchmarks.evaluate``
  runs per (team, env, seed): k episodes per task, then success, avg@k, pass@k, returns
  per role, invalid-action rate, turns to success and tokens per episode.
* ``pass_at_k``: the unbiased pass@k estimator.
* ``task_success_se``: the standard error of a success rate over the tasks it was measured
  on, reported beside every evaluated success (``success_se``).
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
from trainers.records import Episode, RolloutBatch, TaskKey, Turn
from trainers.rollout import RolloutRequest, plain_rollout, play

__all__ = [
    "plays_test",
    "EvalResult",
    "benchmark_metrics",
    "check_eval_tasks",
    "episode_metrics",
    "evaluate",
    "evaluate_tasks",
    "eval_result",
    "evaluation_request",
    "heldout_tasks",
    "held_out_line",
    "pass_at_k",
    "pass_at_k_values",
    "sample_metrics",
    "seat_outcomes",
    "task_success_se",
    "OUTCOME_TERM",
    "test_tasks",
    "validation_tasks",
]

EVAL_SEED = 1234  # sampler seed of evaluations (only matters when eval temperature > 0)


@dataclass(frozen=True)
class EvalResult:
    """Metrics (success, invalid_rate, mean return per role, ...) and the played episodes."""

    metrics: dict[str, float]
    episodes: tuple[Episode, ...]


def test_tasks(env_id: str, n: int, start: int = 0) -> list[TaskKey]:
    """Held-out tasks ``start .. start + n - 1`` of ``env_id`` (test-split seeds, never
    trained on); ``start=0`` gives the first ``n``."""
    return [TaskKey(env_id, "test", seed) for seed in envs.split_seeds("test", n, start=start)]


test_tasks.__test__ = False  # a helper, not a pytest test


def heldout_tasks(env_id: str, n: int, start: int = 0) -> list[TaskKey]:
    """The held-out protocol's test tasks ``start .. start + n - 1`` of ``env_id``: test-split
    tasks from ``envs.HELDOUT_TEST_START`` on, which no choice was ever made on
    (``envs.splits``); every reported test number plays these."""
    return [TaskKey(env_id, "test", seed) for seed in envs.heldout_seeds(n, start=start)]


def task_success_se(episodes: Sequence[Episode]) -> float:
    """Standard error of the success rate over tasks: the sample standard deviation of the
    per-task success (the mean over that task's episodes) divided by sqrt(number of tasks).
    With one episode per task this is the binomial s.e. sqrt(p (1 - p) / (n - 1)). 0 for a
    single task or none."""
    by_task: dict[TaskKey, list[float]] = defaultdict(list)
    for episode in episodes:
        by_task[episode.task].append(float(episode.success))
    if len(by_task) < 2:
        return 0.0
    per_task = np.array([np.mean(values) for values in by_task.values()])
    return float(per_task.std(ddof=1) / np.sqrt(len(per_task)))


def plays_test(config: Any) -> bool:
    """Whether a run (training or warm start: any config with ``test_tasks`` and ``eval_split``)
    plays a separate held-out test evaluation before and after training."""
    return bool(config.test_tasks) and config.eval_split != "test"


def held_out_line(before: Mapping[str, float], after: Mapping[str, float]) -> str:
    """A run's test number for its summary, e.g. ``held-out test success 0.312 +- 0.058 ->
    0.406 +- 0.062 (64 tasks from test index 1000000; +- s.e. over tasks)``, from two
    evaluation records (``success``, ``success_se``, ``tasks``, ``first_task_seed``)."""

    def rate(record: Mapping[str, float]) -> str:
        return f"{record['success']:.3f} +- {record.get('success_se', float('nan')):.3f}"

    first = after.get("first_task_seed")
    where = f" from test index {int(first) - envs.TEST_SEED_START}" if first is not None else ""
    tasks = int(after.get("tasks", 0))
    return f"held-out test success {rate(before)} -> {rate(after)} ({tasks} tasks{where}; +- s.e. over tasks)"


def validation_tasks(env_id: str, n: int, start: int = 0) -> list[TaskKey]:
    """Tasks ``start .. start + n - 1`` of the validation slice: train-split seeds that
    trainers never train on (``envs.splits``), for choosing hyperparameters."""
    return [TaskKey(env_id, "train", seed) for seed in envs.validation_seeds(n, start=start)]


def check_eval_tasks(tasks: Sequence[TaskKey], *, validation: bool = False) -> None:
    """Refuse to evaluate on anything but held-out tasks (with ``validation``, also the
    validation slice's train-split tasks, which no trainer draws).

    Raises:
        ValueError: A task is marked ``train`` or its seed lies in the training seed space
            (``0 .. envs.TEST_SEED_START - 1``); the message names the task and the fix.
    """
    for task in tasks:
        seed_split = envs.split_of(task.seed) if isinstance(task.seed, int) and task.seed >= 0 else None
        in_slice = task.split == "train" and seed_split == "train" and envs.is_validation_seed(task.seed)
        if validation and in_slice:
            continue
        if task.split != "test" or seed_split != "test":
            raise ValueError(
                f"evaluation never plays training tasks, got {task} (task seed {task.seed!r} is "
                f"{'a ' + repr(seed_split) + ' seed' if seed_split else 'not a task seed'}). "
                f"Held-out seeds start at envs.TEST_SEED_START = {envs.TEST_SEED_START}; "
                "envs.split_seeds('test', n) gives the first n."
            )


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one task with ``c`` successes among ``n`` samples:
    ``1 - C(n - c, k) / C(n, k)``, the chance that k of the n samples drawn without
    replacement contain a success (Chen et al., 2021), computed as a stable product.

    Raises:
        ValueError: Not ``0 <= c <= n`` and ``1 <= k <= n``.
    """
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"pass_at_k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    # C(n-c, k) / C(n, k) = prod_{i = n-c+1}^{n} (1 - k / i)
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def pass_at_k_values(n: int) -> list[int]:
    """The k reported for ``n`` samples per task: powers of two below ``n``, and ``n``."""
    values = [1 << i for i in range(n.bit_length()) if (1 << i) < n]
    return values + [n]


OUTCOME_TERM = "seat/outcome"
"""The reward term a game pays each seat at its end (+1 win, -1 loss, 0 draw)."""


def seat_outcomes(episode: Episode) -> dict[str, float]:
    """Each agent's summed ``seat/outcome`` terms along the episode ({} for envs without)."""
    totals: dict[str, float] = {}
    for turn in episode.turns:
        for agent, terms in turn.agent_reward_terms.items():
            if OUTCOME_TERM in terms:
                totals[agent] = totals.get(agent, 0.0) + float(terms[OUTCOME_TERM])
    return totals


def episode_metrics(episodes: Sequence[Episode]) -> dict[str, float]:
    """success, mean episode length, mean return per role (``return/<role>``) and, for games
    that pay ``seat/outcome``, each role's ``win/<role>``, ``draw/<role>`` and ``loss/<role>``
    rates (a game cut off before its end counts as none of them)."""
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
    outcomes = [seat_outcomes(e) for e in episodes]
    for agent in sorted({agent for found in outcomes for agent in found}):
        role = role_of(agent)
        results = [found.get(agent) for found in outcomes]  # None: the game did not end
        out[f"win/{role}"] = float(np.mean([r is not None and r > 0 for r in results]))
        out[f"draw/{role}"] = float(np.mean([r is not None and r == 0 for r in results]))
        out[f"loss/{role}"] = float(np.mean([r is not None and r < 0 for r in results]))
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


def node_zero_variance(samples: Sequence[Turn]) -> dict[str, float]:
    """``zero_variance/<role>``: the share of a role's tree nodes (its K candidates at one
    (task, turn) of a tree rollout) whose candidates all earned the same reward, so AT-GRPO gives
    that node no signal: e.g. an executor whose K candidates all copy the planner's plan. Nothing
    for plain rollouts (every sample its own node)."""
    rewards: dict[tuple, list[float]] = defaultdict(list)
    for turn in samples:
        rewards[(turn.role, turn.task, turn.episode, turn.tree_node, turn.turn)].append(turn.reward)
    flat: dict[str, list[bool]] = defaultdict(list)
    for (role, *_), values in rewards.items():
        if len(values) > 1:
            flat[role].append(len(set(values)) == 1)
    return {f"zero_variance/{role}": float(np.mean(same)) for role, same in sorted(flat.items())}


def benchmark_metrics(episodes: Sequence[Episode]) -> dict[str, float]:
    """The metrics of one benchmark cell, from its played episodes (k per task).

    * ``success``: mean over every episode (= ``avg@k``, = ``pass@1``), with
      ``success_se``, its standard error over the ``tasks`` played (``task_success_se``);
    * ``pass@j``: the unbiased estimator per task, averaged over tasks, for j in
      ``pass_at_k_values(k)`` (k = episodes per task; every task must have the same k);
    * ``return/<role>``: mean episode return of each role;
    * ``invalid_rate``: share of all played turns the env judged invalid;
    * ``turns_to_success``: mean turns (cycles of the turn order) of the solved episodes,
      NaN when none was solved;
    * ``tokens_per_episode``: mean generated tokens per episode (0 for scripted teams);
    * ``episode_length`` (responses per episode) and ``truncated`` (share that hit
      ``max_cycles``).

    Raises:
        ValueError: No episodes, or tasks with different numbers of episodes.
    """
    if not episodes:
        raise ValueError("benchmark_metrics needs at least one episode")
    by_task: dict[TaskKey, list[bool]] = defaultdict(list)
    for episode in episodes:
        by_task[episode.task].append(bool(episode.success))
    counts = {len(successes) for successes in by_task.values()}
    if len(counts) != 1:
        raise ValueError(
            f"every task needs the same number of episodes for pass@k, got counts {sorted(counts)}"
        )
    k = counts.pop()
    turns = [turn for episode in episodes for turn in episode.turns]
    solved = [e for e in episodes if e.success]
    out = episode_metrics(episodes)
    out["success_se"] = task_success_se(episodes)
    out["tasks"] = float(len(by_task))
    out[f"avg@{k}"] = out["success"]
    for j in pass_at_k_values(k):
        out[f"pass@{j}"] = float(np.mean([pass_at_k(k, sum(s), j) for s in by_task.values()]))
    out["invalid_rate"] = float(np.mean([t.invalid for t in turns])) if turns else 0.0
    out["turns_to_success"] = (
        float(np.mean([e.turns[-1].turn + 1 for e in solved])) if solved else float("nan")
    )
    out["tokens_per_episode"] = float(np.mean([sum(len(t.token_ids) for t in e.turns) for e in episodes]))
    return out


def evaluate_tasks(
    team: Team,
    tasks: Sequence[TaskKey],
    *,
    episodes_per_task: int = 1,
    sampling: SamplingParams,
    env_kwargs: Mapping[str, Any] | None = None,
    seed: int = EVAL_SEED,
    validation: bool = False,
    role_sampling: Mapping[str, SamplingParams] | None = None,
) -> RolloutBatch:
    """Play ``episodes_per_task`` independent episodes (K = 1, no selection) on each held-out
    task (with ``validation``, validation-slice tasks are allowed too), batched across all of
    them; ``seed`` seeds the sampler.

    Raises:
        ValueError: A task is not a held-out (test) task (``check_eval_tasks``).
    """
    check_eval_tasks(tasks, validation=validation)
    return plain_rollout(
        tasks,
        team,
        episodes_per_task=episodes_per_task,
        sampling=sampling,
        env_kwargs=env_kwargs,
        seed=seed,
        role_sampling=role_sampling,
    )


def evaluation_request(
    env_id: str,
    *,
    num_tasks: int,
    sampling: SamplingParams,
    env_kwargs: Mapping[str, Any] | None = None,
    split: str = "test",
    role_sampling: Mapping[str, SamplingParams] | None = None,
) -> RolloutRequest:
    """What ``evaluate`` plays, as a request any runtime can play (``trainers.runtime``): one
    episode on each of the first ``num_tasks`` tasks of the held-out protocol's test block
    (``split="test"``: ``heldout_tasks``) or of the validation slice (``split="validation"``),
    under the evaluation sampler seed; ``role_sampling`` gives some roles their own sampling
    (e.g. a longer reply for a role that writes programs)."""
    if split == "test":
        tasks = heldout_tasks(env_id, num_tasks)
        check_eval_tasks(tasks)
    elif split == "validation":
        tasks = validation_tasks(env_id, num_tasks)
    else:
        raise ValueError(f"split={split!r}; evaluate plays 'test' or 'validation' tasks")
    return RolloutRequest(
        tasks=tuple(tasks),
        sampling=sampling,
        env_kwargs=dict(env_kwargs or {}),
        seed=EVAL_SEED,
        role_sampling=dict(role_sampling or {}),
    )


def eval_result(batch: RolloutBatch) -> EvalResult:
    """An evaluation's metrics (success with its task-level ``success_se``, the number of
    ``tasks``, invalid rate, returns per role, seconds) and episodes."""
    metrics = {**episode_metrics(batch.episodes), **sample_metrics(batch.samples)}
    metrics["success_se"] = task_success_se(batch.episodes)
    metrics["tasks"] = float(len({episode.task for episode in batch.episodes}))
    metrics["time/eval"] = float(batch.stats.get("time/rollout", 0.0))
    return EvalResult(metrics, batch.episodes)


def evaluate(
    team: Team,
    env_id: str,
    *,
    num_tasks: int,
    sampling: SamplingParams,
    env_kwargs: Mapping[str, Any] | None = None,
    split: str = "test",
    role_sampling: Mapping[str, SamplingParams] | None = None,
) -> EvalResult:
    """Play one episode on each of the first ``num_tasks`` held-out protocol test tasks
    (``split="test"``) or validation-slice tasks (``split="validation"``) with ``team``
    (``evaluation_request``)."""
    request = evaluation_request(
        env_id,
        num_tasks=num_tasks,
        sampling=sampling,
        env_kwargs=env_kwargs,
        split=split,
        role_sampling=role_sampling,
    )
    return eval_result(play(request, team))
