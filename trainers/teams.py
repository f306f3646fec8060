"""The team a config describes: which backend's policies play the roles, and how the
trained weights are shared among them.

Used by the training command (``trainers.at_grpo``), the rollout benchmark and the
evaluation harness (``benchmarks.evaluate``), so a team is built the same way everywhere.

* ``build_team(config, env)``: the trainable team of ``config.policy`` / ``config.lora``:
  one shared adapter, one adapter per role, one shared full model, or one model per role;
  with ``--model ROLE=NAME`` that layout on each model for the roles it plays (a planner on
  one model and a worker on another train separately, each with its own tokenizer).
* ``served_policies`` / ``sync_served_weights``: the policies that sample from their own
  copy of the weights (vLLM engines) and the call that pushes new weights to them.

The team a training run trained, with its checkpoint's weights loaded, is
``trainers.run.trained_team.load_trained_team``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agents.base import ServedPolicy
from agents.hf import LoraSettings
from agents.scripted import SCRIPTED_POLICIES, RandomPolicy
from agents.team import RoleBinding, Team, close_policies
from trainers.errors import ConfigError
from trainers.role_flags import frozen_roles, scripted_roles

__all__ = [
    "build_team",
    "served_policies",
    "sync_served_weights",
]


def build_team(config: Any, env: Any, load_run: Callable[[str], Any] | None = None) -> Team:
    """The trainable team ``config.policy`` / ``config.lora`` describe, each role on its model
    (``config.model_for``; ``config``: a ``trainers.config.TrainConfig`` or
    ``trainers.sft_config.SFTConfig``; its ``policy_factory(model)`` builds the backend's
    policies), with the roles ``config.roles`` names played by scripted policies (a game's
    fixed opponent) and those ``config.frozen`` names by frozen copies (``frozen_binding``;
    ``load_run(path)`` loads a run's trained team for them: ``trainers.run.trained_team``'s
    ``build_run_team`` passes it)."""
    frozen = frozen_roles(getattr(config, "frozen", ()))
    scripted = scripted_roles(getattr(config, "roles", ()))
    bindings = _model_bindings_by_model(config, [role for role in env.roles if role not in frozen])

    def make(kind: str) -> Any:
        cls = SCRIPTED_POLICIES[kind]
        return cls(seed=config.seed) if cls is RandomPolicy else cls()

    bindings.update({role: RoleBinding(make(kind)) for role, kind in scripted.items()})
    bindings.update({role: frozen_binding(config, role, run, load_run) for role, run in frozen.items()})
    return Team(env, {role: bindings[role] for role in env.roles})


def frozen_binding(
    config: Any, role: str, run: str | None, load_run: Callable[[str], Any] | None
) -> RoleBinding:
    """``role`` played by weights that never train: those run ``run`` (a run dir or checkpoint)
    trained for it, else ``--init``'s, else its base model. The policy is a copy of its own,
    named ``frozen-<role>``, so the learner never routes its turns to a trained unit."""
    source = run or getattr(config, "init", None)
    if source is None:
        policy, adapter = config.policy_factory(config.model_for(role))(name=f"frozen-{role}"), None
        return RoleBinding(policy, adapter, None, config.response_prefix, trains=False)
    if load_run is None:
        raise ConfigError(
            f"frozen: {role} plays the weights of {source}: build the team with "
            "trainers.run.trained_team.build_run_team, which loads them"
        )
    try:
        loaded = load_run(source)
        trained = loaded.binding(role)
    except (FileNotFoundError, ValueError) as err:
        raise ConfigError(f"frozen: {role}={source}: {err}") from None
    policy, adapter = trained.policy, trained.adapter
    close_policies(b.policy for b in loaded.bindings.values() if b.policy is not policy)  # engines
    policy.name = f"frozen-{role}"  # this copy only: loaded for this role alone
    return RoleBinding(policy, adapter, None, config.response_prefix, trains=False)


def _model_bindings_by_model(config: Any, roles: list[str]) -> dict[str, RoleBinding]:
    """The bindings of the model ``roles``: the roles of each model (``config.model_for``) in
    the layout ``--policy`` / ``--lora`` name, on that model's own policy (so its own tokenizer
    and, for a served backend, its own engine)."""
    by_model: dict[str, list[str]] = {}
    for role in roles:
        by_model.setdefault(config.model_for(role), []).append(role)
    bindings: dict[str, RoleBinding] = {}
    for model, model_roles in by_model.items():
        bindings.update(_model_bindings(config, model, tuple(model_roles)))
    return bindings


def _model_bindings(config: Any, model: str, roles: tuple[str, ...]) -> dict[str, RoleBinding]:
    """``roles`` on ``model``: one adapter they all train (--policy shared --lora), one model
    they all train (shared, --no-lora), an adapter each (per_role --lora), or a copy each."""
    lora = LoraSettings(r=config.lora_rank, alpha=config.lora_alpha)
    prefix = config.response_prefix
    make_policy = config.policy_factory(model)
    if config.policy == "shared" and config.lora:
        policy = make_policy(adapters=("shared",), lora=lora)
        return {role: RoleBinding(policy, "shared", None, prefix) for role in roles}
    if config.policy == "shared":
        policy = make_policy()
        return {role: RoleBinding(policy, None, None, prefix) for role in roles}
    if config.lora:
        policy = make_policy(adapters=roles, lora=lora)
        return {role: RoleBinding(policy, role, None, prefix) for role in roles}
    # one full copy each, named by role (vLLM: one engine each)
    return {role: RoleBinding(make_policy(name=f"{role}-model"), None, None, prefix) for role in roles}


def served_policies(team: Team) -> list[Any]:
    """The team's policies that sample from their own copy of the trained weights (vLLM
    engines): they must be synced after every update to stay on-policy."""
    return [policy for policy in team.policies if isinstance(policy, ServedPolicy)]


def sync_served_weights(team: Team) -> float:
    """Push the trained weights to every engine of the team; the seconds it took."""
    return sum(policy.sync_weights() for policy in served_policies(team))
