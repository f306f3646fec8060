"""The rows of an evaluation table: which policy plays each role, and where models come from.

A row is a ``RowSpec``: a team variant (``mas`` / ``single``) and a policy kind per role:

* ``model``: the evaluated model (``--model``; a training run's trained weights when
  ``--model`` or ``--adapters`` names a run or checkpoint);
* ``base``: the untrained base model (same as ``model`` unless weights were loaded);
* ``oracle``: the env's exact solver (``agents.scripted.OraclePolicy``), the ceiling;
* ``heuristic``: a game's rule of thumb (``agents.scripted.HeuristicPolicy``), between them;
* ``random``: a uniformly random legal move (``agents.scripted.RandomPolicy``), the floor.

``team_rows`` turns the command line into rows: the baselines (random, oracle, the model
as a single agent and as the multi-agent team) and the main row, which may mix kinds per
role (``--roles planner=oracle``: an ablation in one flag). ``PolicyBank`` loads each
model once and binds it to any env's roles.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.models import TINY_TEST_MODEL, resolve_model
from agents.scripted import HeuristicPolicy, OraclePolicy, RandomPolicy
from agents.team import RoleBinding, Team, close_policies
from benchmarks.eval_config import ConfigError, EvalConfig

__all__ = ["RowSpec", "team_rows", "PolicyBank", "NotApplicable", "is_training_run", "base_model_of"]


class NotApplicable(Exception):
    """A row cannot play an env (no such team variant, no exact solver...): the cell is n/a."""


@dataclass(frozen=True)
class RowSpec:
    """One row: a team variant and the policy kind of each role (``default`` for the rest)."""

    name: str
    variant: str
    default: str = "model"
    overrides: tuple[tuple[str, str], ...] = ()
    ladder: tuple[str, ...] = ()  # a ladder row: the model against these opponents in both seats

    def kind(self, role: str) -> str:
        """The policy kind that plays ``role``."""
        return dict(self.overrides).get(role, self.default)

    def kinds(self, roles: tuple[str, ...]) -> dict[str, str]:
        return {role: self.kind(role) for role in roles}

    @property
    def uses_model(self) -> bool:
        return self.default in ("model", "base") or any(k in ("model", "base") for _, k in self.overrides)


def _model_label(config: EvalConfig) -> str:
    trained = config.adapters or (config.model if is_training_run(config.model) else None)
    if trained is None:
        per_role = ", ".join(f"{role}={model}" for role, model in config.role_model.items())
        return f"{config.model} [{per_role}]" if per_role else config.model
    path = Path(trained)
    return path.parent.parent.name + "@" + path.name if path.parent.name == "checkpoints" else path.name


def team_rows(config: EvalConfig, roles: Iterable[str] = ()) -> list[RowSpec]:
    """Baseline rows first (random, oracle, model single, model mas), then the main row;
    a baseline identical to the main row is not repeated.

    ``roles``: the main team's roles on the evaluated envs. The main row's label names what
    plays each role: ``--roles`` overrides in brackets, prefixed with the model when the model
    plays any role (no model name when scripted policies play them all)."""
    label = _model_label(config)
    overrides = tuple(sorted(tuple(item.split("=", 1)) for item in config.roles))
    kinds = {role: dict(overrides).get(role, "model") for role in roles}
    model_plays = not kinds or any(kind in ("model", "base") for kind in kinds.values())
    main_name = f"{label} {config.team}" if model_plays else config.team
    if overrides:
        main_name += " (" + ", ".join(f"{role}={kind}" for role, kind in overrides) + ")"
    main = RowSpec(main_name, config.team, "model", overrides)
    candidates = {
        "random": RowSpec(f"random {config.team}", config.team, "random"),
        "oracle": RowSpec(f"oracle {config.team}", config.team, "oracle"),
        "single": RowSpec(f"{label} single", "single", "model"),
        "mas": RowSpec(f"{label} mas", "mas", "model"),
    }
    rows = [candidates[name] for name in ("random", "oracle", "single", "mas") if name in config.baselines]
    rows = [
        row for row in rows if (row.variant, row.default, row.overrides) != (main.variant, "model", overrides)
    ]
    ladder = (
        [RowSpec(f"{label} ladder", config.team, "model", (), tuple(config.ladder))] if config.ladder else []
    )
    return rows + [main] + ladder


def is_training_run(path: str) -> bool:
    """``path`` is a teamgym training run directory or one of its checkpoints."""
    p = Path(path).expanduser()
    if (p / "state.json").is_file() and p.parent.name == "checkpoints":
        return True
    try:  # a run's config.json has "algo" (training) or "demos" (a warm start); a HF model's has neither
        data = json.loads((p / "config.json").read_text())
        return "algo" in data or "demos" in data
    except (OSError, ValueError, TypeError):
        return False


def base_model_of(config: EvalConfig) -> str:
    """The base model an evaluation's model policies run on: ``--model``, or the model the
    training run it names (``--model RUN`` or ``--adapters RUN``) started from, read from the
    run's config.json without loading anything (a run that does not read is reported by the
    bank when it loads it)."""
    path = PolicyBank.checkpoint_of(config)
    if path is None:
        return config.model
    p = Path(path).expanduser()
    run = p.parent.parent if p.parent.name == "checkpoints" else p
    try:
        return str(json.loads((run / "config.json").read_text())["model"])
    except (OSError, ValueError, TypeError, KeyError):
        return config.model


def _sha256_of(files: list[Path]) -> str:
    digest = hashlib.sha256()
    for file in sorted(files):
        with open(file, "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()[:16]


def base_model_identity(model: str) -> dict[str, Any]:
    """Name, local path and a hash of the weights of a base model (what a result was measured on)."""
    if model == TINY_TEST_MODEL:
        return {"name": model, "source": "built in-process by agents.models.tiny_test_model (fixed weights)"}
    path = Path(resolve_model(model)).expanduser()
    if not path.is_dir():
        return {"name": model, "source": "model hub id (weights not hashed)"}
    weights = list(path.glob("*.safetensors")) or list(path.glob("*.bin"))
    return {"name": model, "path": str(path), "weights_sha256": _sha256_of(weights) if weights else None}


class PolicyBank:
    """Builds every policy an evaluation needs once, and binds them to the roles of any env.

    Models load lazily on first use: a table of scripted rows never imports torch.
    """

    def __init__(self, config: EvalConfig) -> None:
        self.config = config
        self.checkpoint_path = self.checkpoint_of(config)
        if config.role_model and self.checkpoint_path:
            raise ConfigError(
                "role_model: a training run plays the models it trained per role (its config.json); drop "
                "--model ROLE=NAME, or pass base models only"
            )
        self._trained: Any = None
        self._bases: dict[str, Any] = {}  # model -> its base policy
        self._pool: dict[str, RoleBinding] | None = None
        self._oracle = OraclePolicy()
        self._random = RandomPolicy(seed=0)
        self._heuristic = HeuristicPolicy()

    @staticmethod
    def checkpoint_of(config: EvalConfig) -> str | None:
        """The training run (or checkpoint) whose weights the evaluation plays, if any."""
        if config.adapters is not None:
            return config.adapters
        return config.model if is_training_run(config.model) else None

    # ------------------------------------------------------------------ models
    def trained(self) -> Any:
        """The ``trainers.teams.TrainedTeam`` of the checkpoint (loaded once)."""
        if self._trained is None:
            from trainers.run.trained_team import load_trained_team

            try:
                trained = load_trained_team(self.checkpoint_path, backend_config=self.config)
            except FileNotFoundError as err:
                raise ConfigError(str(err)) from None
            self._check_run(trained.config)
            self._trained = trained
        return self._trained

    def _check_run(self, run: Any) -> None:
        c = self.config
        if c.adapters is not None and not run.lora:
            raise ConfigError(
                f"adapters={c.adapters!r}: that run trained full weights (lora=False), not adapters; "
                f"pass it as --model {c.adapters}"
            )
        if c.adapters is not None and c.model != run.model:
            raise ConfigError(
                f"adapters={c.adapters!r} were trained on model {run.model!r}, but --model is {c.model!r}; "
                f"pass --model {run.model}"
            )
        if c.policy is not None and c.policy != run.policy:
            raise ConfigError(
                f"policy={c.policy!r}, but run {self.checkpoint_path} trained policy={run.policy!r}; "
                f"pass --policy {run.policy} (or drop --policy)"
            )

    @property
    def base_model_name(self) -> str:
        return base_model_of(self.config)

    def base_model_for(self, role: str) -> str:
        """The base model ``role`` plays on: ``--model ROLE=NAME`` / ``--model``, or the model a
        training run trained for it."""
        if self.checkpoint_path:
            return self.trained().config.model_for(role)
        return self.config.model_for(role)

    def base(self, model: str | None = None) -> Any:
        """The untrained base ``model`` (None: ``base_model_name``) as one shared policy, loaded once."""
        model = model or self.base_model_name
        if model not in self._bases:
            from trainers.backends import policy_factory

            self._bases[model] = policy_factory(self.config, model)()  # EvalConfig is a BackendConfig
        return self._bases[model]

    def pool_opponents(self) -> dict[str, RoleBinding]:
        """The evaluated run's opponent pool as ladder players (``trainers.run.opponent_pool``),
        loaded once.

        Raises:
            ConfigError: ``--model`` names no training run, or one without a pool.
        """
        if self._pool is None:
            if not self.checkpoint_path:
                raise ConfigError(
                    "ladder pool: --model names no training run; pass the run trained with --opponent-pool"
                )
            from trainers.run.opponent_pool import pool_opponents

            self._pool = pool_opponents(self.trained())
        return self._pool

    def close(self) -> None:
        """Release the loaded models (``agents.team.close_policies``): an evaluation in a
        process that goes on (a notebook, a test) leaves no vLLM engine behind."""
        policies = list(self._bases.values()) + [b.policy for b in (self._pool or {}).values()]
        if self._trained is not None:
            policies += [binding.policy for binding in self._trained.bindings.values()]
        close_policies(policies)
        self._bases, self._trained, self._pool = {}, None, None

    # ------------------------------------------------------------------ binding
    def _binding(self, kind: str, role: str) -> RoleBinding:
        prefix = self.config.response_prefix
        if kind == "oracle":
            return RoleBinding(self._oracle)
        if kind == "random":
            return RoleBinding(self._random)
        if kind == "heuristic":
            return RoleBinding(self._heuristic)
        if kind == "model" and self.checkpoint_path:
            try:
                return self.trained().binding(role)
            except ValueError as err:
                raise NotApplicable(str(err)) from None
        if kind == "base" and self.checkpoint_path and self._trained_base_shares_weights():
            # LoRA runs: the trained policy with its adapters switched off is the base model.
            return RoleBinding(self.trained().binding(role).policy, None, None, prefix)
        return RoleBinding(self.base(self.base_model_for(role)), None, None, prefix)

    def _trained_base_shares_weights(self) -> bool:
        binding = next(iter(self.trained().bindings.values()))
        policy = binding.policy
        # vLLM merged serving cannot serve the base weights next to the merged ones.
        return self.trained().config.lora and not getattr(policy, "merged", False)

    def team(self, spec: RowSpec, env: Any) -> Team:
        """``spec``'s team on ``env``'s roles.

        Raises:
            NotApplicable: The env lacks what a policy needs (an exact solver for ``oracle``,
                trained weights for a role).
        """
        kinds = spec.kinds(env.roles)
        unknown = sorted(set(dict(spec.overrides)) - set(env.roles))
        if unknown:
            raise NotApplicable(f"roles {unknown} are not roles of this env team ({list(env.roles)})")
        unknown = sorted(set(self.config.role_model) - set(env.roles))
        if unknown and spec.variant == self.config.team:  # other variants play --model alone
            raise NotApplicable(f"--model {unknown[0]}=...: not a role of this env team ({list(env.roles)})")
        if "oracle" in kinds.values() and not callable(getattr(env, "oracle_response", None)):
            raise NotApplicable(f"{type(env).__name__} has no exact solver (oracle_response)")
        return Team(env, {role: self._binding(kind, role) for role, kind in kinds.items()})

    # ------------------------------------------------------------------ provenance
    def identity(self) -> dict[str, Any]:
        """What the ``model`` and ``base`` policies are, for the results file."""
        if not self.checkpoint_path:
            config = self.config
            return {"model": base_model_identity(config.model), **_role_identities(config.role_model)}
        from trainers.run.checkpoint_files import WEIGHTS, weights_file_checksum

        trained = self.trained()
        run = trained.config
        return {
            "model": {
                "run_dir": str(trained.run_dir),
                "checkpoint": str(trained.checkpoint),
                "step": trained.step,
                "weights_sha256": weights_file_checksum(trained.checkpoint / WEIGHTS),
                "trained": {k: getattr(run, k) for k in ("env", "team", "algo", "policy", "lora", "seed")},
            },
            "base": base_model_identity(run.model),
            **_role_identities(run.role_model),
        }


def _role_identities(role_model: dict[str, str]) -> dict[str, Any]:
    """The per-role models' identities (``--model ROLE=NAME``), when there are any."""
    if not role_model:
        return {}
    return {"role_models": {role: base_model_identity(model) for role, model in role_model.items()}}
