"""One training step: collect rollouts, compute advantages, update every trained unit,
publish the new weights to the engines; and the step's metrics (``metrics.jsonl``'s line).

``train_step`` is the training script's use of the ``Runtime``'s three verbs, so the same
step runs in-process and on a Ray cluster; the training command (``trainers.at_grpo``) loops
over it, and the runtime benchmark calls it directly.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from trainers.advantages import ADVANTAGE_ESTIMATORS, compute_advantages
from trainers.config import TrainConfig, estimator_options
from trainers.evaluation import episode_metrics, node_zero_variance, sample_metrics
from trainers.records import Episode, RolloutBatch
from trainers.rollout import step_request, training_sampling
from trainers.runtime import Runtime
from trainers.runtime.machine_load import MACHINE_PREFIX, MachineLoad
from trainers.runtime.peak_memory import PhasePeaks

__all__ = ["LEARNER_KEYS", "MACHINE_METRICS", "train_step"]

MACHINE_METRICS = ("time/", "tokens_per_s", "memory/", MACHINE_PREFIX)
"""Prefixes of the step metrics that depend on the machine and its load, not on the run:
two runs of one config (a resumed one, a Ray one) log the same values for every other key."""

LEARNER_KEYS = (
    "loss",
    "pg_loss",
    "kl",
    "entropy",
    "clip_fraction",
    "approx_kl_old",
    "ratio_mean",
    "grad_norm",
    "optimizer_steps",
    "old_logprobs_recomputed",
    "old_logprob_gap_mean",
)


def _learner_metrics(per_unit: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """Per-unit learner metrics under ``learner/<unit>/``, plus their mean over the units
    that trained (``loss``, ``kl``, ``clip_fraction``, ``grad_norm``, ...)."""
    out: dict[str, float] = {}
    trained = [m for m in per_unit.values() if m.get("samples", 0) > 0 and "loss" in m]
    per_pass = sorted({k for m in trained for k in m if k.startswith("pass")})
    for key in (*LEARNER_KEYS, *per_pass):
        values = [m[key] for m in trained if key in m]
        if values:
            out[key] = float(np.mean(values))
    out["samples_trained"] = float(sum(m.get("samples", 0) for m in per_unit.values()))
    for key in ("dropped_zero_advantage", "zero_advantage_kept"):
        out[key] = float(sum(m.get(key, 0) for m in per_unit.values()))
    for unit, metrics in per_unit.items():
        out.update({f"learner/{unit}/{k}": float(v) for k, v in metrics.items()})
    return out


def _no_phase(text: str) -> None:
    """A ``phase`` callback that shows nothing."""


def train_step(
    config: TrainConfig,
    runtime: Runtime,
    step: int,
    phase: Callable[[str], None] = _no_phase,
    estimator_state: dict[str, Any] | None = None,
    on_advantages: Callable[[RolloutBatch, np.ndarray], None] | None = None,
) -> tuple[dict[str, float], tuple[Episode, ...]]:
    """Collect, advantages, update, publish (``runtime``'s verbs); the step's metrics and the
    episodes it played. ``phase`` is told what the step is doing (the progress display shows it).
    ``estimator_state``: ``{"state": ...}`` a stateful estimator (``rae``) reads and updates
    in place; the caller saves it in checkpoints. ``on_advantages(batch, advantages)`` sees
    the rollouts and their advantages before the update (the run records trees with it)."""
    started = time.perf_counter()
    peaks, load = PhasePeaks(), MachineLoad()
    phase(f"step {step}: rolling out {config.tasks_per_step} tasks x K={config.num_generations}")
    batch = runtime.collect(step_request(config, step, training_sampling(config)))
    peaks.end("rollout")
    advantage_start = time.perf_counter()
    options = estimator_options(config)
    stateful = ADVANTAGE_ESTIMATORS[config.estimator].stateful
    if stateful:
        options["state"] = (estimator_state or {}).get("state")
    result = compute_advantages(batch.samples, config.estimator, **options)
    if stateful and estimator_state is not None:
        estimator_state["state"] = result.state
    if on_advantages is not None:
        on_advantages(batch, result.advantages)
    learner_start = time.perf_counter()
    phase(f"step {step}: updating on {len(batch.samples)} samples")
    per_unit = runtime.update(batch.samples, result, seed=config.seed * 1_000_003 + step)
    peaks.end("update")
    sync_start = time.perf_counter()
    if runtime.serves_copies:
        phase(f"step {step}: syncing weights to the engine")
    sync_seconds = runtime.publish()  # the next rollout samples from the new weights
    if runtime.serves_copies:
        peaks.end("publish")
    done = time.perf_counter()
    stats = batch.stats
    diagnostics = {f"adv/{k}": float(v) for k, v in result.diagnostics.items() if isinstance(v, int | float)}
    metrics = {
        **episode_metrics(batch.episodes),
        **sample_metrics(batch.samples),
        **node_zero_variance(batch.samples),
        **diagnostics,
        **_learner_metrics(per_unit),
        "advantage_abs_mean": float(np.mean(np.abs(result.advantages))) if len(result.advantages) else 0.0,
        "tokens_per_s": stats["generated_tokens"] / max(stats["time/generate"], 1e-9),
        "time/generate": stats["time/generate"],
        "time/env": stats["time/env"],
        **_sandbox_metrics(stats),
        "time/advantages": learner_start - advantage_start,
        "time/learner": sync_start - learner_start,
        **({"time/sync": sync_seconds} if runtime.serves_copies else {}),
        "time/step": done - started,
        **peaks.metrics(),
        **load.metrics(),
    }
    return metrics, batch.episodes


def _sandbox_metrics(stats: dict[str, float]) -> dict[str, float]:
    """Programs the rollout ran in the sandbox (a tool team's turns) and how many per second of
    the wall time those runs took; nothing for envs that run none."""
    runs = stats.get("sandbox_runs", 0.0)
    if not runs:
        return {}
    seconds = stats.get("time/sandbox", 0.0)
    return {"sandbox_runs": runs, "time/sandbox": seconds, "sandbox_runs_per_s": runs / max(seconds, 1e-9)}
