"""The team a config describes: which backend's policies play the roles, and how the
trained weights are shared among them.

Used by the training command (``trainers.at_grpo``), the rollout benchmark and the
evaluation harness (``benchmarks.evaluate``), so a team is built the same way everywhere.

* ``build_team(config, env)``: the trainable team of ``config.policy`` / ``config.lora``:
  one shared adapter, one adapter per role, one shared full model, or one model per role.
* ``served_policies`` / ``sync_served_weights``: the policies that sample from their own
  copy of the weights (vLLM engines) and the call that pushes new weights to them.
* ``load_trained_team(path)``: the team a training run trained, with its checkpoint's
  weights loaded (for evaluation).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.base import ServedPolicy
from agents.hf import LoraSettings
from agents.team import RoleBinding, Team
from trainers.backends import BackendConfig
from trainers.config import scripted_roles

__all__ = [
    "build_team",
    "served_policies",
    "sync_served_weights",
    "TrainedTeam",
    "load_trained_team",
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
    from agents.scripted import SCRIPTED_POLICIES, RandomPolicy

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


@dataclass(frozen=True)
class TrainedTeam:
    """The policies a training run trained, with a checkpoint's weights loaded.

    Attributes:
        config: The run's ``TrainConfig`` (its ``config.json``; backend as loaded).
        run_dir: The run directory.
        checkpoint: The checkpoint directory the weights came from.
        step: Training steps done at that checkpoint.
        bindings: Role -> ``RoleBinding`` of the team the run trained.
    """

    config: Any
    run_dir: Path
    checkpoint: Path
    step: int
    bindings: Mapping[str, RoleBinding]

    def binding(self, role: str) -> RoleBinding:
        """What plays ``role``: its trained binding; a shared run's weights play any role.

        Raises:
            ValueError: A per-role run has no weights for ``role``.
        """
        if role in self.bindings:
            return self.bindings[role]
        if self.config.policy == "shared":
            return next(iter(self.bindings.values()))
        raise ValueError(
            f"run {self.run_dir} trained one policy per role for roles {sorted(self.bindings)} "
            f"({self.config.env}, team {self.config.team!r}); it has no weights for role {role!r}. "
            "Evaluate the team it trained, or give that role another policy (e.g. --roles "
            f"{role}=base)"
        )


def load_trained_team(path: str | Path, *, backend_config: BackendConfig | None = None) -> TrainedTeam:
    """Rebuild the team a run trained and load its weights.

    Args:
        path: A run directory (its newest checkpoint) or one checkpoint directory.
        backend_config: The backend to serve it with (None: the run's own; a ``device`` of
            None keeps the run's device).

    Raises:
        FileNotFoundError: ``path`` is no run or checkpoint (``find_checkpoint``).
        ValueError: The checkpoint does not fit the team its config describes.
    """
    from trainers.checkpoint import find_checkpoint, load_weights
    from trainers.cli import config_from_dict
    from trainers.config import TrainConfig
    from trainers.learner import Learner
    from trainers.sft_config import SFTConfig, as_train_config, is_sft_config

    run_dir, checkpoint = find_checkpoint(path)
    data = json.loads((run_dir / "config.json").read_text())
    if is_sft_config(data):  # a warm start: the team it trained, as a training run describes it
        config = as_train_config(config_from_dict(SFTConfig, data))
    else:
        config = config_from_dict(TrainConfig, data)
    overrides: dict[str, Any] = {}
    if backend_config is not None:
        overrides = {f.name: getattr(backend_config, f.name) for f in dataclasses.fields(BackendConfig)}
        overrides["device"] = backend_config.device or config.device
    config = dataclasses.replace(config, resume=None, **overrides)
    team = build_team(config, config.env_setup.make())
    load_weights(checkpoint, Learner(team))  # the learner only names the trained parameters
    sync_served_weights(team)
    step = int(json.loads((checkpoint / "state.json").read_text())["step"])
    return TrainedTeam(config, run_dir, checkpoint, step, dict(team.bindings))
