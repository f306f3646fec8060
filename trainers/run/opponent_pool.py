"""Self-play against a pool of past selves (``--opponent-pool N``): the zero-sum games' remedy
for a policy that chases its own latest strategy round in circles.

The run keeps the last N snapshots of its trained weights, one every ``--pool-every`` steps
(the weights it starts from are the first), in ``<run dir>/pool/step_<S>.safetensors``
(older ones are deleted at each checkpoint). Each
training step plays one seat with the trained policy and the other with a snapshot drawn
uniformly from the pool, loaded into a frozen copy of the policy (``pool``; its turns are
recorded, never trained). The trained seat alternates with the step (odd steps: the first
seat), so both seats learn. The draw is a function of (seed, step), and the snapshots are
files, so a resumed run draws and plays what the uninterrupted one did: on resume, snapshots
newer than the checkpoint are removed (the steps that made them are played again).

Evaluations play the plain self-play team (the trained policy in every seat);
``benchmarks.evaluate --ladder ... pool`` plays a run's pool as opponents.

Why a pool: against only its newest self, a policy can forget how to beat strategies it left
behind (and the two seats can cycle); a uniform draw over recent snapshots is the simplest
fictitious-play-style fix (as in the self-play leagues of game RL).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from agents.base import ServedPolicy
from agents.team import RoleBinding, Team
from trainers.errors import ConfigError
from trainers.run.checkpoint import unit_tensors

__all__ = ["POOL_DIR", "OpponentPool", "check_opponent_pool", "pool_opponents", "pool_snapshots"]

POOL_DIR = "pool"
_SNAPSHOT = re.compile(r"step_(\d+)\.safetensors")


def pool_snapshots(run_dir: str | Path) -> dict[int, Path]:
    """A run's pool: step -> snapshot file, oldest first."""
    folder = Path(run_dir) / POOL_DIR
    found = {int(m[1]): p for p in folder.glob("step_*.safetensors") if (m := _SNAPSHOT.fullmatch(p.name))}
    return dict(sorted(found.items()))


def check_opponent_pool(config: Any, env: Any) -> None:
    """``--opponent-pool`` needs a competitive two-seat game (``metadata["competitive"]``)
    trained as one shared policy, in this process.

    Raises:
        ConfigError: Naming what to change.
    """
    if not config.opponent_pool:
        return
    if not env.metadata.get("competitive") or len(env.roles) != 2:
        raise ConfigError(
            f"opponent_pool: {config.env} is not a competitive two-seat game; a pool opponent takes the "
            "other seat of one (tictactoe, kuhn_poker): drop --opponent-pool"
        )
    if config.policy != "shared":
        raise ConfigError("opponent_pool: self-play trains one policy for both seats; pass --policy shared")
    fixed = [flag for flag, given in (("--roles", config.roles), ("--frozen", config.frozen)) if given]
    if fixed or config.role_model:
        named = " and ".join(fixed) or "--model ROLE=NAME"
        raise ConfigError(
            f"opponent_pool: the pool takes a seat each step, so {named} cannot fix one; drop either"
        )
    if config.runtime != "local":
        raise ConfigError("opponent_pool runs with --runtime local (the default); drop --runtime ray")


class OpponentPool:
    """The pool of one run (module docstring).

    Args:
        config: The run's resolved ``TrainConfig`` (``opponent_pool``, ``pool_every``, ``seed``).
        runtime: Its ``LocalRuntime`` (its ``team`` plays; its learner's single unit is the
            trained policy).
        run_dir: The run directory (the snapshots live in its ``pool/``).
        start: The step the run starts after (0, or the resumed checkpoint's step).
    """

    def __init__(self, config: Any, runtime: Any, run_dir: Path, start: int) -> None:
        self.size, self.every, self.seed = config.opponent_pool, config.pool_every, config.seed
        self.runtime = runtime
        self.folder = Path(run_dir) / POOL_DIR
        self.selfplay = runtime.team
        binding = next(iter(self.selfplay.bindings.values()))
        policy, prefix = _copy_policy(config, binding), binding.response_prefix
        self.opponent = RoleBinding(policy, binding.adapter, None, prefix, trains=False)
        for step, path in pool_snapshots(run_dir).items():
            if step > start:  # made by a step the resumed run plays again
                path.unlink()
        if not pool_snapshots(run_dir):
            self._snapshot(start)  # the starting weights are the first opponent

    @contextmanager
    def seat(self, step: int) -> Iterator[dict[str, float]]:
        """Step ``step`` plays the trained policy in one seat and a drawn snapshot in the other;
        yields the step's pool metrics. The self-play team is back afterwards (evaluations)."""
        members = self._members()
        rng = np.random.default_rng([self.seed, step])
        drawn = list(members)[int(rng.integers(len(members)))]
        self._load(members[drawn])
        roles = self.selfplay.roles
        trained = roles[(step + 1) % 2]  # odd steps: the first seat
        seats = {role: self.selfplay.bindings[role] if role == trained else self.opponent for role in roles}
        self.runtime.team = Team(roles, seats)
        try:
            yield {"pool/size": float(len(members)), "pool/opponent_step": float(drawn),
                   "pool/trained_seat": float(roles.index(trained))}  # fmt: skip
        finally:
            self.runtime.team = self.selfplay

    def after_step(self, step: int) -> None:
        """Snapshot the updated weights every ``pool_every`` steps."""
        if step % self.every == 0:
            self._snapshot(step)

    def prune(self) -> None:
        """Delete the snapshots no later draw can pick (older than the newest ``size``). Called
        after each checkpoint, not after each snapshot: a run resumed from that checkpoint
        must find the pool its next step drew from."""
        members = pool_snapshots(self.folder.parent)
        for old in list(members)[: max(0, len(members) - self.size)]:
            members[old].unlink()

    def _members(self) -> dict[int, Path]:
        """The pool a step draws from: the newest ``size`` snapshots."""
        members = pool_snapshots(self.folder.parent)
        return dict(list(members.items())[-self.size :])

    def _snapshot(self, step: int) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        tensors = {key.rpartition("/")[2]: t for key, t in unit_tensors(self.runtime.learner).items()}
        tmp = self.folder / f".tmp-step_{step:06d}.safetensors"
        save_file(tensors, str(tmp))
        tmp.replace(self.folder / f"step_{step:06d}.safetensors")  # whole or absent

    def _load(self, path: Path) -> None:
        """The snapshot's weights into the opponent's policy (and its engine, if served)."""
        _copy_into(self.opponent.policy, load_file(str(path)))


def _copy_policy(config: Any, binding: RoleBinding) -> Any:
    """A second policy on the trained one's model and adapter layout, named ``pool``."""
    from agents.hf import LoraSettings

    make = config.policy_factory(config.model)
    if binding.adapter is None:
        return make(name="pool")
    lora = LoraSettings(r=config.lora_rank, alpha=config.lora_alpha)
    return make(adapters=(binding.adapter,), lora=lora, name="pool")


def pool_opponents(trained: Any) -> dict[str, RoleBinding]:
    """A trained run's pool as frozen players, ``"pool@<step>"`` -> binding, for the evaluation's
    ladder (``benchmarks.evaluate --ladder pool``). ``trained``: its ``load_trained_team`` (the
    snapshots go on copies of its policy: one policy with an adapter per snapshot for a LoRA
    run, a copy of the model each for full weights).

    Raises:
        ConfigError: The run kept no pool (it trained without ``--opponent-pool``).
    """
    snapshots = pool_snapshots(trained.run_dir)
    if not snapshots:
        raise ConfigError(
            f"ladder pool: run {trained.run_dir} has no pool/ (it trained without --opponent-pool); "
            "drop pool from --ladder"
        )
    binding = next(iter(trained.bindings.values()))
    config = trained.config
    make = config.policy_factory(config.model)
    players: dict[str, RoleBinding] = {}
    if binding.adapter is None:  # full weights: a copy per snapshot
        for step, path in snapshots.items():
            policy = make(name=f"pool@{step}")
            _copy_into(policy, load_file(str(path)))
            players[f"pool@{step}"] = RoleBinding(policy, None, None, binding.response_prefix, trains=False)
        return players
    from agents.hf import LoraSettings

    names = tuple(f"pool{step}" for step in snapshots)
    lora = LoraSettings(r=config.lora_rank, alpha=config.lora_alpha)
    policy = make(adapters=names, lora=lora, name="pool")
    for name, path in zip(names, snapshots.values(), strict=True):
        saved = load_file(str(path))
        _copy_into(policy, {key.replace(f".{binding.adapter}.", f".{name}."): t for key, t in saved.items()})
    for step, name in zip(snapshots, names, strict=True):
        players[f"pool@{step}"] = RoleBinding(policy, name, None, binding.response_prefix, trains=False)
    return players


def _copy_into(policy: Any, saved: dict[str, torch.Tensor]) -> None:
    """The tensors ``saved`` (parameter name -> tensor) into ``policy``'s model (its engine too)."""
    model = (policy.trainable if isinstance(policy, ServedPolicy) else policy).model
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name in saved:
                parameter.copy_(saved[name].to(parameter.device, parameter.dtype))
    if isinstance(policy, ServedPolicy):
        policy.sync_weights()
