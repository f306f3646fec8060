"""A trained team read back from its run directory: the config the run saved, the team it
describes, a checkpoint's weights loaded into it (evaluation, benchmarks, ``--roles ROLE=RUN``)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.team import RoleBinding
from trainers.backends import BackendConfig
from trainers.cli import config_from_dict
from trainers.config import TrainConfig
from trainers.errors import ConfigError
from trainers.learner import Learner
from trainers.role_flags import check_scripted_roles, frozen_roles, scripted_roles
from trainers.run.checkpoint import find_checkpoint, load_weights
from trainers.sft_config import SFTConfig, as_train_config, is_sft_config
from trainers.teams import build_team, sync_served_weights

__all__ = ["TrainedTeam", "build_run_team", "check_fixed_roles", "load_trained_team"]


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
    team = build_run_team(config, config.env_setup.make())
    load_weights(checkpoint, Learner(team))  # the learner only names the trained parameters
    sync_served_weights(team)
    step = int(json.loads((checkpoint / "state.json").read_text())["step"])
    return TrainedTeam(config, run_dir, checkpoint, step, dict(team.bindings))


def build_run_team(config: Any, env: Any) -> Any:
    """``trainers.teams.build_team`` with its frozen roles' weights loaded from the runs they
    name (``--frozen ROLE=RUN``, or ``--init``'s)."""
    return build_team(config, env, load_run=lambda path: load_trained_team(path, backend_config=config))


def check_fixed_roles(config: Any, roles: Sequence[str]) -> None:
    """The scripted and frozen roles fit the team (``check_scripted_roles``) and every
    ``--frozen ROLE=RUN`` names a run with a checkpoint (before any model loads)."""
    frozen = frozen_roles(config.frozen)
    check_scripted_roles(scripted_roles(config.roles), roles, frozen)
    for role, run in frozen.items():
        if run is not None:
            try:
                find_checkpoint(run)
            except FileNotFoundError as err:
                raise ConfigError(f"frozen: {role}={run}: {err}") from None
