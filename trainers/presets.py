"""What a training run's presets mean: the algorithm presets (``--algo``) and an env's own
``TRAINING`` preset as ``TrainConfig`` field values.

``trainers.config.resolve_config`` fills the fields a user left at ``None`` from these; the
warm start (``trainers.sft_config``) and the evaluation read the env presets too. Kept apart
from the config dataclass so those readers do not need its validation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import envs
from trainers.errors import ConfigError

__all__ = [
    "ALGO_PRESETS",
    "LOSS_ADVANTAGE_SCALE",
    "LOSS_DYNAMIC_SAMPLING",
    "check_team",
    "effective_algo",
    "env_name",
    "env_preset",
    "preset_role_lengths",
]

ALGO_PRESETS: dict[str, dict[str, Any]] = {
    # AT-GRPO: K candidates per (task, turn, agent) node from one selected state; per-role
    # weights (the paper's default regime; --policy shared is its one-model regime).
    "at_grpo": {"rollout": "tree", "estimator": "at_grpo", "policy": "per_role"},
    # Plain GRPO: K independent episodes per task, one group per task.
    "grpo": {"rollout": "plain", "estimator": "grpo", "policy": "per_role"},
    # GiGPO: K independent episodes, episode groups + anchor-state step groups.
    "gigpo": {"rollout": "plain", "estimator": "gigpo", "policy": "per_role"},
    # MATPO: K planner-rooted episodes per task, the team's outcome credited to every turn. One
    # model plays planner and worker (the paper's setting); --policy per_role trains one each.
    "matpo": {"rollout": "plain", "estimator": "matpo", "policy": "shared"},
    # SPIRAL: self-play of zero-sum games. K independent episodes per task, every turn a seat
    # played credited with that seat's episode return minus a per-(env, seat) moving baseline
    # (RAE); one model plays every seat. The zero-sum games' presets pick it.
    "spiral": {"rollout": "plain", "estimator": "rae", "policy": "shared"},
}

# What each loss preset means for the advantages (``advantage_scale``) and for dynamic sampling
# when those fields are left at None: Dr. GRPO drops the std (A = r - mean), DAPO drops
# zero-advantage groups; GRPO does neither.
LOSS_ADVANTAGE_SCALE: dict[str, str] = {"grpo": "group", "dapo": "group", "dr_grpo": "none"}
LOSS_DYNAMIC_SAMPLING: dict[str, bool] = {"grpo": False, "dapo": True, "dr_grpo": False}


def check_team(env_name: str, team: str) -> None:
    """Refuse a team variant the env does not have (an env that declares no TEAMS takes any)."""
    teams = envs.spec(env_name).teams
    if teams and team not in teams:
        fix = f"pass e.g. --team {next(iter(teams))}"
        raise ConfigError(f"team={team!r}: {env_name} has the teams {', '.join(teams)}; {fix}")


def preset_role_lengths(env_id: str, variants: Sequence[str]) -> dict[str, int]:
    """The env preset's per-role reply lengths for the roles of team ``variants`` (a planning
    env's ``tool`` entry means nothing to its ``mas`` team, and must not set its loss divisor)."""
    roles = {role for variant in variants for role in (envs.spec(env_id).teams or {}).get(variant, ())}
    return {role: n for role, n in env_preset(env_id)["role_max_new_tokens"].items() if role in roles}


def env_preset(env_id: str) -> dict[str, Any]:
    """The training preset of an env (``envs.spec(env_id).training``) as ``TrainConfig`` field
    values: ``env_kwargs`` (sizes and the training horizon), ``tasks_per_step``,
    ``max_new_tokens``, ``role_max_new_tokens``, ``temperature``, ``steps``, ``eval_every``, ``eval_tasks``,
    ``policy`` (None: the env leaves it to the algo preset) and ``algo`` (None: at_grpo)."""
    spec = envs.spec(env_id)
    preset = spec.training
    return {
        "env_kwargs": preset.make_kwargs(spec.default_max_cycles),
        "tasks_per_step": preset.tasks_per_step,
        "max_new_tokens": preset.max_new_tokens,
        "role_max_new_tokens": dict(preset.role_max_new_tokens),
        "temperature": preset.temperature,
        "steps": preset.steps,
        "eval_every": preset.eval_every,
        "eval_tasks": preset.eval_tasks,
        "policy": preset.policy,
        "algo": preset.algo,
    }


def effective_algo(config: Any) -> str:
    """The algorithm preset a config (a ``TrainConfig``) runs: ``--algo``, else the env
    preset's, else at_grpo."""
    if config.algo is not None:
        return config.algo
    try:
        preset = envs.spec(config.env).training.algo
    except (KeyError, ImportError):  # an unknown env is reported by resolve_config, naming the fix
        preset = None
    if preset is not None and preset not in ALGO_PRESETS:
        raise ConfigError(
            f"env {config.env!r}: its TrainingPreset.algo={preset!r} is not an algorithm preset "
            f"({', '.join(ALGO_PRESETS)}); fix the env's TRAINING, or pass --algo"
        )
    return preset or "at_grpo"


def env_name(env_id: str) -> str:
    try:
        return envs.spec(env_id).name
    except KeyError as err:
        raise ConfigError(f"env={env_id!r} is not registered: {err.args[0]}") from None
    except ImportError as err:  # envs.EnvModuleError: "module:id" names a module that cannot be imported
        raise ConfigError(f"env={env_id!r}: {err}") from None
