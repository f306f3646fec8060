"""``EvalConfig``: everything ``python -m benchmarks.evaluate`` needs, one frozen dataclass.

Every field has a docstring (``--help`` is built from them by ``trainers.cli``); validation
errors name the field and the fix. Fields left at ``None`` are filled per env from the
env's training preset (``TRAINING``, ``envs.TrainingPreset``), so a trained team is evaluated
with the reply length it trained with.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from agents.models import DEFAULT_MODEL
from benchmarks.suites import registered_suites
from envs.splits import TEST_SEED_COUNT, TEST_SEED_START
from trainers.backends import BackendConfig, check_model_backend
from trainers.config import ConfigError
from trainers.config_fields import (
    OutputFields,
    PerRoleModels,
    ReplyFields,
    SamplingFields,
    TeamFields,
    check_env_kwargs,
    check_role_models,
    parse_role_policies,
)

__all__ = ["EvalConfig", "ConfigError", "POLICY_KINDS", "BASELINES"]

POLICY_KINDS = ("model", "base", "oracle", "heuristic", "random")
BASELINES = ("random", "oracle", "single", "mas")


@dataclass(frozen=True)
class EvalConfig(PerRoleModels, OutputFields, SamplingFields, ReplyFields, TeamFields, BackendConfig):
    """One evaluation: teams (rows) x envs (columns) x seeds (``python -m benchmarks.evaluate --help``);
    the backend fields of model policies come from ``trainers.backends.BackendConfig``, the reply
    and output fields it shares with training from ``trainers.config_fields``."""

    # --- envs ---
    env: tuple[str, ...] = ()
    """Env id(s) to evaluate, e.g. sokoban plan_path-v0 (module:id imports your env's module first)."""
    suite: str | None = None
    """Evaluate every registered env of a suite: planning, math, code, ... (metadata['suite']), or all."""
    imports: tuple[str, ...] = ()
    """Modules to import first, e.g. guess_env: the envs they register join --suite (on the Python path:
    the working directory or PYTHONPATH)."""
    difficulty: tuple[str, ...] = ()
    """Difficulty presets per env (e.g. easy medium) or all; one column each (none: the env's default)."""
    env_kwargs: dict = field(default_factory=dict)
    """Extra envs.make() arguments as JSON for every env, e.g. '{"max_cycles": 4}'."""
    split: str = "test"
    """'test': the held-out protocol's test tasks (docs/evaluation.md: Held-out protocol); 'validation':
    the train split's validation slice (never trained on), where every choice is made before a test
    number."""

    # --- team ---
    model: str = DEFAULT_MODEL
    """The 'model' policy: a built-in name, a local HF dir, a hub id, or a training run / checkpoint dir."""
    role_model: dict = field(default_factory=dict)
    """Per-role base model of the 'model' and 'base' policies, given as --model ROLE=NAME (repeatable), e.g.
    --model executor=tiny-test; roles not named play --model (a training run carries its own)."""
    adapters: str | None = None
    """A training run (or checkpoint) dir whose trained LoRA adapters go on --model."""
    policy: Literal["shared", "per_role"] | None = None
    """How the checkpoint's weights are shared by roles; checked against the run (None: the run's)."""
    roles: tuple[str, ...] = ()
    """Main-row overrides ROLE=POLICY, POLICY in model, base, oracle, heuristic, random; e.g. first=oracle."""
    baselines: tuple[str, ...] = BASELINES
    """Extra rows: random, oracle (scripted, main variant), single, mas (the model as that team)."""
    ladder: tuple[str, ...] = ()
    """Competitive two-seat games: a 'ladder' row where the model plays these opponents (random, heuristic,
    oracle, base: the untrained model, pool: the snapshots of a run trained with --opponent-pool) in both
    seats, with win/draw/loss per opponent and Elo ratings (benchmarks.ladder)."""
    response_prefix: str = "<answer>"
    """Start of each base-model reply, parsed with it, as in training (a checkpoint uses its run's)."""

    # --- sampling ---
    episodes: int = 16
    """Held-out tasks per seed (seed s plays tasks s*N .. s*N+N-1 of the protocol's test block, which
    starts at test index envs.HELDOUT_TEST_START); a headline number needs >= 256 tasks in all."""
    samples: int = 1
    """k: independent episodes per task (avg@k, pass@k); > 1 needs temperature > 0."""
    seeds: tuple[int, ...] = (0, 1, 2)
    """Evaluation seeds; each has its own block of test tasks and sampler seed (mean +- s.e. over them)."""
    task_seeds: tuple[int, ...] = ()
    """Play exactly these test-split task seeds under every seed instead of the seed's block."""
    temperature: float | None = None
    """Sampling temperature (None: 0 = greedy for --samples 1, else the env preset's)."""

    # --- output ---
    output_dir: str = "runs/eval"
    """Where evaluation directories are created."""
    transcripts: int = 1
    """Episodes per cell written to transcripts/ (0: none)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        _validate(self)


def _validate(config: EvalConfig) -> None:
    if bool(config.env) == bool(config.suite):
        raise ConfigError(  # registered_suites() makes every env: only on this error
            f"pass exactly one of --env ID [ID ...] or --suite NAME ({', '.join(registered_suites())})"
        )
    if config.split not in ("test", "validation"):
        raise ConfigError(
            f"split={config.split!r}: evaluation only plays held-out tasks, so the split is 'test' "
            "(or 'validation', the train split's slice no trainer draws; training tasks would measure "
            "memorisation); drop --split or pass --split test"
        )
    if config.split == "validation" and config.task_seeds:
        raise ConfigError(
            "task_seeds are test-split seeds; with --split validation each seed plays its block of the "
            "validation slice: drop --task-seeds or --split validation"
        )
    for name in ("episodes", "samples"):
        if getattr(config, name) < 1:
            raise ConfigError(f"{name}={getattr(config, name)} must be >= 1; pass e.g. --{name} 4")
    if not config.seeds:
        raise ConfigError("seeds is empty; pass at least one, e.g. --seeds 0 1 2")
    if len(set(config.seeds)) != len(config.seeds) or min(config.seeds) < 0:
        raise ConfigError(f"seeds={list(config.seeds)} must be distinct ints >= 0, e.g. --seeds 0 1 2")
    if len(set(config.task_seeds)) != len(config.task_seeds):
        raise ConfigError(f"task_seeds={list(config.task_seeds)} has repeats; list each task once")
    training = [
        seed for seed in config.task_seeds if not TEST_SEED_START <= seed < TEST_SEED_START + TEST_SEED_COUNT
    ]
    if training:
        raise ConfigError(
            f"task_seeds {training[:5]} are not held-out test seeds: evaluation never plays training tasks. "
            f"Test seeds start at {TEST_SEED_START} (envs.split_seeds('test', n)), "
            f"e.g. --task-seeds {TEST_SEED_START}"
        )
    if config.temperature is not None and config.temperature < 0:
        raise ConfigError(f"temperature={config.temperature} must be >= 0 (0 is greedy)")
    if config.samples > 1 and config.temperature == 0:
        raise ConfigError(
            f"samples={config.samples} with temperature=0 would play {config.samples} identical greedy "
            "episodes per task; pass --temperature 0.7 (or --samples 1)"
        )
    if config.transcripts < 0:
        raise ConfigError(f"transcripts={config.transcripts} must be >= 0")
    unknown = sorted(set(config.baselines) - set(BASELINES))
    if unknown:
        raise ConfigError(
            f"baselines {unknown} are unknown; choose from {list(BASELINES)} (or none: --baselines)"
        )
    parse_role_policies(config.roles, POLICY_KINDS, "--roles planner=oracle executor=model")
    from benchmarks.ladder import LADDER_OPPONENTS

    if bad := [kind for kind in config.ladder if kind not in LADDER_OPPONENTS]:
        raise ConfigError(f"ladder: {bad} are not ladder opponents; choose from {list(LADDER_OPPONENTS)}")
    if len(set(config.ladder)) != len(config.ladder):
        raise ConfigError(f"ladder: each opponent may be named once, got {list(config.ladder)}")
    check_env_kwargs(
        config.env_kwargs,
        {"split": "evaluation always uses 'test'", "team": "use --team", "difficulty": "use --difficulty"},
    )
    check_role_models(config.role_model)
    for model in config.models:
        check_model_backend(config.backend, model)
