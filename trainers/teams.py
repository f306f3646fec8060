"""The team a config describes: which backend's policies play the roles, and how the
trained weights are shared among them.

Used by the training command (``trainers.at_grpo``), the rollout benchmark and the
evaluation harness (``benchmarks.evaluate``), so a team is built the same way everywhere.

* ``build_team(config, env)``: the trainable team of ``config.policy`` / ``config.lora``:
  one shared adapter, one adapter per role, one shared full model, or one model per role.
* ``served_policies`` / ``sync_served_weights``: the policies that sample from their own
  copy of the weights (vLLM engines) and the call that pushes new weights to them.

The team a training run trained, with its checkpoint's weights loaded, is
``trainers.run.trained_team.load_trained_team``.
"""

from __future__ import annotations

from typing import Any

from agents.base import ServedPolicy
from agents.hf import LoraSettings
from agents.scripted import SCRIPTED_POLICIES, RandomPolicy
from agents.team import RoleBinding, Team
from trainers.config import scripted_roles

__all__ = [
    "build_team",
    "served_policies",
    "sync_served_weights",
]


def build_team(config: Any, env: Any) -> Team:
    """The trainable team ``config.policy`` / ``config.lora`` describe, on ``config.model``
    (``config``: a ``trainers.config.TrainConfig`` or ``trainers.sft_config.SFTConfig``; its
    ``policy_factory()`` builds the backend's policies), with the roles ``config.roles``
    names played by scripted policies (a game's fixed opponent)."""
    team = _model_team(config, env)
    scripted = scripted_roles(getattr(config, "roles", ()))
    if not scripted:
        return team

    def make(kind: str) -> Any:
        cls = SCRIPTED_POLICIES[kind]
        return cls(seed=config.seed) if cls is RandomPolicy else cls()

    bindings = {
        role: RoleBinding(make(scripted[role])) if role in scripted else b
        for role, b in team.bindings.items()
    }
    return Team(team.roles, bindings)


def _model_team(config: Any, env: Any) -> Team:
    lora = LoraSettings(r=config.lora_rank, alpha=config.lora_alpha)
    prefix, roles = config.response_prefix, env.roles
    make_policy = config.policy_factory()
    if config.policy == "shared" and config.lora:  # one adapter every role trains
        policy = make_policy(adapters=("shared",), lora=lora)
        return Team(env, {role: RoleBinding(policy, "shared", None, prefix) for role in roles})
    if config.policy == "shared":
        return Team.shared(env, make_policy(), response_prefix=prefix)
    if config.lora:  # one adapter per role on one base model
        return Team.per_role(env, make_policy(adapters=roles, lora=lora), response_prefix=prefix)
    models = {role: make_policy(name=f"{role}-model") for role in roles}  # vLLM: one engine each
    return Team.per_role_models(env, models, response_prefix=prefix)


def served_policies(team: Team) -> list[Any]:
    """The team's policies that sample from their own copy of the trained weights (vLLM
    engines): they must be synced after every update to stay on-policy."""
    return [policy for policy in team.policies if isinstance(policy, ServedPolicy)]


def sync_served_weights(team: Team) -> float:
    """Push the trained weights to every engine of the team; the seconds it took."""
    return sum(policy.sync_weights() for policy in served_policies(team))
