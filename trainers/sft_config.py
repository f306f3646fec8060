"""``SFTConfig``: everything one supervised warm-start run needs (``python -m trainers.sft --help``).

The team fields (model, policy layout, LoRA shape, response prefix) mean what they mean in
``trainers.config.TrainConfig``, so a warm start builds the very team a training run builds
and ``python -m trainers.at_grpo --init <sft run>`` can start from its weights.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import envs
from trainers.backends import BackendConfig, PolicyFactory, policy_factory
from trainers.config import ConfigError, TrainConfig
from trainers.config_fields import (
    CheckpointFields,
    DeviceFields,
    EnvFields,
    HeldOutFields,
    ModelFields,
    OutputFields,
    ReplyFields,
    check_at_least,
)
from trainers.env_setup import EnvSetup
from trainers.presets import env_name, env_preset, preset_role_lengths

__all__ = [
    "SFTConfig",
    "sft_config_from_flags",
    "warm_start_preset",
    "SFT_RESUMABLE_OVERRIDES",
    "resolve_sft_config",
    "as_train_config",
    "is_sft_config",
]


@dataclass(frozen=True)
class SFTConfig(
    CheckpointFields, OutputFields, HeldOutFields, ReplyFields, ModelFields, EnvFields, DeviceFields
):
    """A supervised warm start on demonstrations (``python -m trainers.sft --help``); the fields it
    shares with training and evaluation come from ``trainers.config_fields`` (same meaning, same
    checks; the defaults redeclared here are the warm start's)."""

    # --- env ---
    env: str = "plan_path"
    """Registered env id (plan_path, sokoban-v1, ...), or module:id to import your env's module first."""
    teams: tuple[str, ...] = ("mas",)
    """Team variants whose roles are demonstrated, e.g. mas single (more than one needs --policy shared)."""

    # --- team ---
    policy: Literal["shared", "per_role"] = "shared"
    """'shared': one set of weights learns every role; 'per_role': each role its own (as in training)."""

    # --- data ---
    demos: tuple[str, ...] = ("oracle",)
    """Demonstrations: 'oracle' (the env's exact solver plays every role), and/or run directories
    of python -m trainers.at_grpo whose successful training episodes are replayed (rejection sampling)."""
    train_tasks: int = 2000
    """Training tasks (train-split seeds 0..N-1) the oracle plays once each."""
    val_tasks: int = 64
    """Validation tasks (the train split's validation slice, never trained on) the oracle plays for
    the validation loss; without 'oracle' in --demos, every 10th task of the runs' episodes is held out."""

    # --- optimisation ---
    steps: int = 240
    """Optimiser steps (the cap, with --train-minutes)."""
    train_minutes: float = 0.0
    """Training-time budget: stop after the first step at which the updates' summed time (validation,
    evaluations and checkpoints excluded) reaches N minutes (0: none; --steps still caps the run, and
    a cosine schedule still spans --steps). For warm starts of equal minutes (benchmarks.learning)."""
    batch_size: int = 16
    """Demonstrations (turns) per step, drawn in a seeded order, epoch after epoch."""
    lr: float | None = None
    """AdamW learning rate (None: 2e-3 with LoRA, 1e-5 for full weights); the peak of --lr-schedule."""
    lr_schedule: Literal["constant", "cosine"] = "constant"
    """'constant', or 'cosine': linear warm-up over --warmup-steps, then cosine decay towards 0 at --steps."""
    warmup_steps: int = 0
    """Steps of linear warm-up from lr/warmup_steps to lr (both schedules)."""
    max_grad_norm: float = 1.0
    """Gradient-norm clip per trained unit."""
    micro_batch_tokens: int = 512
    """Token budget of one forward/backward: peak memory grows with it (lower it if a step runs out
    of memory; raise it on a GPU, where larger batches are faster)."""
    seed: int = 0
    """Seeds the demonstration order and LoRA initialisation."""

    # --- evaluation ---
    val_every: int = 40
    """Validation loss every N steps (and before and after training)."""
    eval_every: int = 120
    """Success of each team of --teams on --eval-split tasks every N steps, before and after training
    (0: only those two)."""
    eval_tasks: int | None = 64
    """Tasks per in-run evaluation (one greedy episode each)."""

    # --- logging ---
    checkpoint_every: int = 50
    """Write a checkpoint every N steps (and after the last one)."""

    @property
    def team(self) -> str:
        """The team variant a checkpoint's team is rebuilt with (the first of ``teams``)."""
        return self.teams[0]

    @property
    def backend(self) -> str:
        return "hf"  # the warm start trains and evaluates with transformers

    def env_setup(self, variant: str) -> EnvSetup:
        """The env team variant ``variant`` of this warm start plays."""
        return EnvSetup(self.env, variant, dict(self.env_kwargs))

    def policy_factory(self, model: str | None = None) -> PolicyFactory:
        """A constructor of the transformers policy on ``model`` (None: ``--model``;
        ``trainers.teams.build_team``)."""
        return policy_factory(BackendConfig(backend=self.backend, device=self.device), model or self.model)

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("train_tasks", "val_tasks", "steps", "batch_size", "micro_batch_tokens", "val_every"):
            check_at_least(self, name)
        check_at_least(self, "eval_every", 0)
        check_at_least(self, "train_minutes", 0)
        if isinstance(self.demos, str):  # config.json of runs saved before demos was a tuple
            object.__setattr__(self, "demos", (self.demos,))
        object.__setattr__(self, "demos", tuple(self.demos))
        if not self.demos:
            raise ConfigError("demos=() names no demonstrations; pass --demos oracle, or --demos runs/<run>")
        if not self.teams or len(set(self.teams)) != len(self.teams):
            raise ConfigError(
                f"teams={self.teams!r} must name distinct team variants; pass e.g. --teams mas single"
            )
        if len(self.teams) > 1 and self.policy != "shared":
            raise ConfigError(
                f"teams={list(self.teams)} with policy='per_role': each team has its own roles, so one "
                "run cannot hold per-role weights for several; pass --policy shared or one --teams"
            )
        if len(self.teams) > 1 and self.role_model:
            raise ConfigError(
                f"teams={list(self.teams)} with --model ROLE=NAME: the other variants' roles would have no "
                "model of their own; pass one --teams, or drop the per-role models"
            )
        if self.lr is not None and self.lr <= 0:
            raise ConfigError(f"lr={self.lr} must be > 0; pass e.g. --lr 1e-3")
        if not 0 <= self.warmup_steps < self.steps:
            raise ConfigError(
                f"warmup_steps={self.warmup_steps} must be >= 0 and below steps={self.steps}; "
                f"pass e.g. --warmup-steps {self.steps // 20}"
            )
        if self.max_grad_norm <= 0:
            raise ConfigError(
                f"max_grad_norm={self.max_grad_norm} must be > 0; pass e.g. --max-grad-norm 1.0"
            )


# Fields a resumed warm start may change; everything else must match the saved config.
SFT_RESUMABLE_OVERRIDES = frozenset(
    {"steps", "progress", "tensorboard", "plots", "resume", "eval_every", "val_every", "threads"}
    | {"train_minutes"}
)


def warm_start_preset(env_id: str) -> dict[str, Any]:
    """The env's warm-start values (``TrainingPreset.warm_start``), checked against the fields."""
    name = env_name(env_id)
    values = dict(envs.spec(name).training.warm_start)
    unknown = sorted(set(values) - {f.name for f in dataclasses.fields(SFTConfig)})
    if unknown:
        raise ConfigError(
            f"env={name!r}: its TrainingPreset.warm_start names {unknown}, which are not fields of "
            "the warm start (python -m trainers.sft --help lists them)"
        )
    if "teams" in values:
        values["teams"] = tuple(values["teams"])
    return values


def sft_config_from_flags(given: Mapping[str, Any]) -> SFTConfig:
    """The warm start a command line asks for: the fields' defaults, then the env's warm-start
    preset (``warm_start_preset``), then the flags ``given``. A preset's warm-up that a
    shorter ``--steps`` leaves no room for shrinks to fit (``--steps 3`` on a 5-step warm-up:
    2); a warm-up given as a flag is checked as given."""
    values = {**warm_start_preset(given.get("env", SFTConfig.env)), **given}
    if "warmup_steps" not in given and "steps" in given:
        values["warmup_steps"] = min(values.get("warmup_steps", 0), max(given["steps"] - 1, 0))
    return SFTConfig(**values)


def resolve_sft_config(config: SFTConfig) -> SFTConfig:
    """Fill the preset fields: the env's training preset (``envs.TrainingPreset``:
    env_kwargs and max_new_tokens, so demonstrations have the shape of its rollouts) and the lr
    default."""
    preset = env_preset(env_name(config.env))
    updates: dict[str, Any] = {
        "env_kwargs": {**preset["env_kwargs"], **config.env_kwargs},
        "role_max_new_tokens": {
            **preset_role_lengths(env_name(config.env), config.teams),
            **config.role_max_new_tokens,
        },
    }
    if config.max_new_tokens is None:
        updates["max_new_tokens"] = preset["max_new_tokens"]
    if config.test_tasks is None:
        updates["test_tasks"] = config.eval_tasks
    if config.lr is None:
        updates["lr"] = 2e-3 if config.lora else 1e-5
    return dataclasses.replace(config, **updates)


def is_sft_config(data: Mapping[str, Any]) -> bool:
    """Whether a run's saved ``config.json`` is a warm start's (it names its demonstrations)."""
    return "demos" in data and "algo" not in data


def as_train_config(config: SFTConfig) -> TrainConfig:
    """The ``TrainConfig`` of the team a warm start trained (its first team variant), so
    evaluation and ``load_trained_team`` rebuild it the way they rebuild a training run's."""
    shared = (EnvFields, ModelFields, ReplyFields, DeviceFields)  # the groups both configs are built from
    values = {f.name: getattr(config, f.name) for group in shared for f in dataclasses.fields(group)}
    return TrainConfig(**values, team=config.team, policy=config.policy, seed=config.seed)
