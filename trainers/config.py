"""The training command's configuration: one frozen dataclass, its validation and resolution.

Fields left at ``None`` are filled by :func:`resolve_config` from two presets
(``trainers.presets``):

* ``ALGO_PRESETS``: what ``--algo`` means (rollout mode + advantage estimator);
* the env's own ``TRAINING`` preset (``envs.TrainingPreset``: reply length, temperature,
  horizon, tasks per step, sizes), which every env class declares or inherits; the
  built-in ones fit a 2-core laptop CPU with the default 135M model.

Every field has a docstring; ``trainers.cli`` turns them into ``--help``. Validation
errors name the field and the fix.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import envs
from trainers.advantages import ADVANTAGE_ESTIMATORS, EstimatorSpec
from trainers.backends import (
    AUTO,
    BackendConfig,
    PolicyFactory,
    ServingOptions,
    check_model_backend,
    choose_backend,
    policy_factory,
    trains_on_cuda,
)
from trainers.clock import UNCAPPED_STEPS
from trainers.config_fields import (
    CheckpointFields,
    EnvFields,
    HeldOutFields,
    ModelFields,
    OutputFields,
    ReplyFields,
    SamplingFields,
    TeamFields,
    check_at_least,
)
from trainers.env_setup import EnvSetup
from trainers.errors import ConfigError
from trainers.presets import (
    ALGO_PRESETS,
    LOSS_ADVANTAGE_SCALE,
    LOSS_DYNAMIC_SAMPLING,
    check_team,
    effective_algo,
    env_name,
    env_preset,
    preset_role_lengths,
)
from trainers.role_flags import check_scripted_roles, frozen_roles, scripted_roles

if TYPE_CHECKING:
    from trainers.learner import LearnerConfig  # imported when used: it brings torch

__all__ = [
    "TrainConfig",
    "resolve_config",
    "estimator_options",
    "check_required_role",
    "ConfigError",
]


@dataclass(frozen=True)
class TrainConfig(
    CheckpointFields,
    OutputFields,
    HeldOutFields,
    SamplingFields,
    ReplyFields,
    ModelFields,
    TeamFields,
    EnvFields,
    BackendConfig,
):
    """Everything one training run needs (``python -m trainers.at_grpo --help``); the backend
    fields (``--backend``, ``--device``, ``--vllm-*``) come from ``trainers.backends.BackendConfig``,
    those the warm start and the evaluation share from ``trainers.config_fields``."""

    # --- env ---
    roles: tuple[str, ...] = ()
    """Roles a scripted policy plays instead of the trained model, ROLE=POLICY with POLICY in oracle,
    heuristic, random; e.g. second=random trains the first seat of a game against a fixed opponent."""
    frozen: tuple[str, ...] = ()
    """Roles that play but never train, ROLE or ROLE=RUN: RUN (a run dir or checkpoint, e.g. the warm
    start) gives the weights it plays for that role, a bare ROLE plays --init's (else its base model);
    e.g. --frozen executor=runs/warm trains the planner beside a fixed executor. Its turns are
    recorded and shown in the report, never in the loss."""

    # --- team ---
    policy: Literal["shared", "per_role"] | None = None
    """'per_role': each role has its own trainable weights; 'shared': every role trains the same ones
    (None: the env preset's if it declares one (games: shared, self-play), else the algo's: shared
    for matpo, per_role otherwise)."""
    init: str | None = None
    """Start from the trained weights of this run dir or checkpoint: a warm start (python -m trainers.sft)
    or an earlier run; a --policy shared warm start can seed per-role adapters. Same --model needed."""
    opponent_pool: int = 0
    """Two-seat games: self-play against a pool of the last N snapshots of the trained weights (the
    starting weights first): each step one seat plays a snapshot drawn from it, frozen (0: plain
    self-play, the trained policy in both seats)."""
    pool_every: int = 1
    """--opponent-pool: add a snapshot to the pool every this many steps."""

    # --- runtime ---
    runtime: Literal["local", "ray"] = "local"
    """Where the work runs: 'local' (this process) or 'ray' (rollout workers, engine servers and a
    learner worker on a Ray cluster; pip install 'teamgym[ray]'; docs/ray.md)."""
    ray_address: str | None = None
    """--runtime ray: the cluster to join ('auto', or host:port of `ray start --head`) (None: a
    private cluster started for this run, never one already running on the machine)."""
    rollout_workers: int = 1
    """--runtime ray: processes that play the envs (a step's tasks are split among them)."""
    engine_replicas: int = 1
    """--runtime ray: copies of the model that generate (each serves every role's adapter)."""
    learner_ranks: int = 1
    """--runtime ray: learner processes, data parallel over a torch.distributed group (gloo on CPU, NCCL
    on GPU): each forwards its share of every mini-batch, and they sum gradients before each step."""
    ray_resources: dict = field(default_factory=dict)
    """--runtime ray: custom Ray resources each kind of actor asks for, which places it, as JSON, e.g.
    '{"engine": {"gpu_box": 1}, "learner": {"gpu_box": 1}}' for nodes started with
    `ray start --resources '{"gpu_box": 2}'` (kinds: rollout, engine, learner)."""

    # --- backend ---
    vllm_sleep: bool = False
    """vLLM on GPU: offload the engine's weights and free its KV cache while the learner trains."""
    vllm_sync: Literal["memory", "disk"] = "memory"
    """vLLM: how new full weights reach the engine after each update: in memory, or via a safetensors file."""

    # --- sampling ---
    algo: Literal["at_grpo", "grpo", "gigpo", "matpo", "spiral"] | None = None
    """Algorithm preset: sets rollout and estimator (at_grpo: tree + at_grpo; grpo, gigpo, matpo: plain;
    spiral: plain + rae, shared) (None: the env preset's (zero-sum games: spiral), else at_grpo)."""
    rollout: Literal["tree", "plain"] | None = None
    """'tree': K candidates per node, best continues; 'plain': K independent episodes (None: algo's)."""
    estimator: str | None = None
    """Advantage estimator registered in trainers.advantages (grpo, rloo, at_grpo, per_agent, gigpo,
    matpo, tree, rae: per-seat baselines for self-play, or your own) (None: the algo's)."""
    estimator_kwargs: dict = field(default_factory=dict)
    """The estimator's options as JSON, e.g. '{"omega": 0.5, "gamma": 0.9}' for gigpo (its keyword-only
    parameters in trainers/advantages.py; the scale comes from --advantage-scale)."""
    num_generations: int = 4
    """K: candidates per (task, turn, agent) node in tree rollouts, episodes per task in plain ones."""
    tasks_per_step: int | None = None
    """Training tasks (seeded env instances) per step (None: the env preset's)."""
    temperature: float | None = None
    """Sampling temperature of training rollouts, > 0, the loss uses the same one (None: the env preset's)."""
    selection: Literal["greedy", "softmax"] = "greedy"
    """Tree rollouts: which candidate continues the episode (best reward, or sampled by softmax)."""

    # --- optimisation ---
    steps: int | None = None
    """Training steps (rollout + update) (None: the env preset's; with --train-minutes, no cap)."""
    train_minutes: float = 0.0
    """Training-time budget: stop after the first step at which the steps' summed time (rollout +
    update; loading, evaluations and checkpoints excluded) reaches N minutes, --steps still capping
    the run (0: none). For comparisons at equal wall time (benchmarks.learning --minutes)."""
    lr: float | None = None
    """AdamW learning rate (None: 5e-4 with LoRA, 1e-4 with LoRA from --init, 1e-5 for full weights)."""
    loss: Literal["grpo", "dapo", "dr_grpo"] = "grpo"
    """Loss preset: clip range and token aggregation (trainers.losses.DEFAULT_LOSS_PRESETS); dr_grpo
    also means --advantage-scale none, dapo --dynamic-sampling."""
    advantage_scale: Literal["group", "batch", "none"] | None = None
    """Advantage normalisation: 'group' (r - mean) / group std, 'batch' (r - mean) / batch std,
    'none' r - mean (None: 'none' for --loss dr_grpo, else 'group'). gigpo: group = mean_std_norm,
    none = mean_norm; rloo takes none."""
    dynamic_sampling: bool | None = None
    """Drop zero-advantage samples (all-equal or singleton groups) before the update; off keeps them
    in the loss's denominators (None: on for --loss dapo only, as the papers define them)."""
    passes: int = 1
    """Passes over each rollout batch, pi_old fixed at the sampling policy (TRL num_iterations, verl
    ppo_epochs); more optimiser steps per rollout, and the clip range acts from the second on."""
    mini_batches: int = 1
    """Optimiser steps per pass: each batch is split into this many mini-batches of whole prompt
    groups, in a seeded order (verl ppo_mini_batch_size = batch / N)."""
    old_logprobs: Literal["auto", "sampler", "recompute"] = "auto"
    """pi_old: the sampler's logprobs, or recomputed by the learner before any update ('auto':
    recompute when the weights are not float32, e.g. bfloat16 on CUDA; logged per step as
    old_logprobs_recomputed, with the sampler's gap old_logprob_gap_mean)."""
    eps_low: float | None = None
    """Lower clip range: the ratio is clipped at 1 - eps_low (None: the --loss preset's, 0.2)."""
    eps_high: float | None = None
    """Upper clip range: the ratio is clipped at 1 + eps_high (None: the --loss preset's, 0.28 for dapo's
    clip-higher, else 0.2)."""
    aggregation: Literal["token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm"] | None = None
    """How token losses become one loss (None: the --loss preset's: seq-mean-token-mean for grpo,
    token-mean for dapo, seq-mean-token-sum-norm (divided by --max-new-tokens) for dr_grpo)."""
    kl_coef: float = 0.0
    """Weight of the KL penalty to the initial policy (0: off, no reference forward)."""
    entropy_coef: float = 0.0
    """Weight of the entropy bonus (0: off)."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    max_grad_norm: float = 1.0
    """Gradient-norm clip per trained unit."""
    micro_batch_tokens: int = 512
    """Token budget of one forward/backward: peak memory grows with it (lower it if the update runs
    out of memory; raise it on a GPU, where larger batches are faster)."""
    recompute_long: bool = True
    """A sequence longer than --micro-batch-tokens (a long prompt cannot be split) recomputes its
    activations in the backward pass (gradient checkpointing): the update's memory stays near the
    budget's, at about a third more compute for that sequence."""
    shared_prefix: bool | None = None
    """Encode each group's shared prompt once in the update (same gradients, fewer token-forwards,
    less memory; trainers/prefix.py); off: plain padded forwards. None: on when training on the
    CPU, off on CUDA, where the plain forward measured 2x faster (benchmarks.learner on an H100:
    0.60 s against 1.21 s per update; the shared prefix took 2.8x less GPU memory). config.json
    records the choice (with Ray, made on the driver's machine: pass the flag when the learner's
    device differs)."""
    seed: int = 0
    """Seeds the training tasks, the sampler and candidate selection (same seed, same run)."""

    # --- evaluation ---
    eval_every: int | None = None
    """Evaluate on --eval-split tasks every N steps, before training and at the end (0: only those two)
    (None: the env preset's)."""
    eval_every_minutes: float = 0.0
    """Also evaluate (and checkpoint) after the first step past every N minutes of training time
    (as --train-minutes counts it), for curves at fixed wall-time marks (0: off)."""
    eval_temperature: float = 0.0
    """Sampling temperature of evaluations (0: greedy)."""
    report_trees: int = 2
    """Tasks per training step whose AT-GRPO trees (every node's K candidates with reward and
    advantage) are written to trees/ and shown in report.html (0: none; tree rollouts only)."""
    save_episodes: bool = True
    """Write every training episode's replies and outcome to episodes/ (demonstrations for
    python -m trainers.sft --demos <this run>)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        _validate(self)

    @property
    def serving(self) -> ServingOptions:
        """How a served policy (vLLM engine) follows this run's learner."""
        return ServingOptions(seed=self.seed, sleep=self.vllm_sleep, sync=self.vllm_sync)

    def policy_factory(self, model: str | None = None) -> PolicyFactory:
        """A constructor of this run's backend policy on ``model`` (None: ``--model``)."""
        return policy_factory(self, model or self.model, self.serving)

    @property
    def env_setup(self) -> EnvSetup:
        """The env this run plays (id, team variant, env kwargs): the one way to build it."""
        return EnvSetup(self.env, self.team, dict(self.env_kwargs))

    def learner_config(self) -> LearnerConfig:
        """The learner's settings (a resolved config: ``lr``, ``temperature`` and
        ``shared_prefix`` filled in)."""
        from trainers.learner import LearnerConfig  # brings torch: --help and --print-config stay without it

        if self.shared_prefix is None:
            raise ValueError("learner_config() needs a resolved config (trainers.config.resolve_config)")

        return LearnerConfig(
            lr=self.lr,
            weight_decay=self.weight_decay,
            max_grad_norm=self.max_grad_norm,
            loss=self.loss,
            eps_low=self.eps_low,
            eps_high=self.eps_high,
            aggregation=self.aggregation,
            # Dr. GRPO's constant divisor: the longest reply any role may write
            max_response_length=max([self.max_new_tokens, *self.role_max_new_tokens.values()]),
            kl_coef=self.kl_coef,
            entropy_coef=self.entropy_coef,
            micro_batch_tokens=self.micro_batch_tokens,
            recompute_long=self.recompute_long,
            shared_prefix=self.shared_prefix,
            dynamic_sampling=self.dynamic_sampling,
            old_logprobs=self.old_logprobs,
            passes=self.passes,
            mini_batches=self.mini_batches,
            temperature=self.temperature,
            role_temperature=dict(self.role_temperature),
            top_p=self.top_p,
        )


# Fields a resumed run may change; everything else must match the saved config.
RESUMABLE_OVERRIDES = frozenset(
    {"steps", "progress", "tensorboard", "plots", "resume", "eval_every", "threads", "report_trees"}
    | {"train_minutes", "eval_every_minutes"}
    | {"runtime", "ray_address", "rollout_workers", "engine_replicas", "ray_resources"}  # where, not what
)


RAY_ACTOR_KINDS = ("rollout", "engine", "learner")


def _check_ray_resources(resources: Any) -> None:
    example = 'e.g. --ray-resources \'{"engine": {"gpu_box": 1}}\''
    if not isinstance(resources, Mapping):
        raise ConfigError(f"ray_resources must be a JSON object of actor kind -> resources, {example}")
    for kind, wanted in resources.items():
        if kind not in RAY_ACTOR_KINDS:
            raise ConfigError(
                f"ray_resources: unknown actor kind {kind!r}; kinds: {', '.join(RAY_ACTOR_KINDS)}"
            )
        if not isinstance(wanted, Mapping) or not all(
            isinstance(name, str)
            and isinstance(amount, int | float)
            and not isinstance(amount, bool)
            and amount > 0
            for name, amount in wanted.items()
        ):
            raise ConfigError(f"ray_resources[{kind!r}] must map resource names to amounts > 0, {example}")


def _validate(config: TrainConfig) -> None:
    for name in ("num_generations", "tasks_per_step", "steps", "micro_batch_tokens"):
        check_at_least(config, name)
    check_at_least(config, "passes")
    check_at_least(config, "mini_batches")
    for name in ("rollout_workers", "engine_replicas", "learner_ranks"):
        check_at_least(config, name)
    if config.runtime == "local":
        given = [
            f"--{name.replace('_', '-')}"
            for name, default in (
                ("ray_address", None),
                ("rollout_workers", 1),
                ("engine_replicas", 1),
                ("learner_ranks", 1),
                ("ray_resources", {}),
            )
            if getattr(config, name) != default
        ]
        if given:
            raise ConfigError(
                f"{', '.join(given)} only apply to --runtime ray; add --runtime ray or drop them"
            )
    _check_ray_resources(config.ray_resources)

    check_at_least(config, "eval_every", 0)
    check_at_least(config, "train_minutes", 0)
    check_at_least(config, "eval_every_minutes", 0)
    check_at_least(config, "report_trees", 0)
    check_at_least(config, "opponent_pool", 0)
    check_at_least(config, "pool_every")
    for model in config.models:
        check_model_backend(config.backend, model)
    if config.temperature is not None and config.temperature <= 0:
        raise ConfigError(
            f"temperature={config.temperature} must be > 0: training samples must come from a distribution "
            "the loss can evaluate; pass e.g. --temperature 1.0 (use --eval-temperature 0 for greedy evals)"
        )
    if config.eval_temperature < 0:
        raise ConfigError(f"eval_temperature={config.eval_temperature} must be >= 0 (0 is greedy)")
    if config.lr is not None and config.lr <= 0:
        raise ConfigError(f"lr={config.lr} must be > 0; pass e.g. --lr 1e-3")
    if config.kl_coef < 0:
        raise ConfigError(f"kl_coef={config.kl_coef} must be >= 0; pass e.g. --kl-coef 0")
    if config.max_grad_norm <= 0:
        raise ConfigError(f"max_grad_norm={config.max_grad_norm} must be > 0; pass e.g. --max-grad-norm 1.0")
    for name in ("eps_low", "eps_high"):
        value = getattr(config, name)
        if value is not None and not 0 < value < 1:
            raise ConfigError(f"{name}={value} must be in (0, 1); pass e.g. --{name.replace('_', '-')} 0.2")
    for name in ("entropy_coef", "weight_decay"):
        check_at_least(config, name, 0)
    _check_estimator(config)


def _estimator_spec(config: TrainConfig) -> tuple[str, EstimatorSpec]:
    """The estimator the run will use once the algo preset fills ``estimator``, and its spec."""
    name = config.estimator or ALGO_PRESETS[effective_algo(config)]["estimator"]
    if name not in ADVANTAGE_ESTIMATORS:
        raise ConfigError(f"estimator={name!r} is unknown; choose one of {', '.join(ADVANTAGE_ESTIMATORS)}")
    return name, ADVANTAGE_ESTIMATORS[name]


def _check_estimator(config: TrainConfig) -> None:
    """The config against what its estimator declared (``register_estimator``): rollout,
    scale, options, and the role it needs where the env declares its team variants."""
    name, spec = _estimator_spec(config)
    rollout = config.rollout or ALGO_PRESETS[effective_algo(config)]["rollout"]
    if rollout not in spec.rollouts:
        preset = ALGO_PRESETS.get(name, {}).get("rollout") in spec.rollouts
        raise ConfigError(
            f"estimator {name!r} works on {' or '.join(spec.rollouts)} rollouts, not {rollout}; pass "
            f"--rollout {spec.rollouts[0]}" + (f" (or --algo {name}, which sets it)" if preset else "")
        )
    if config.advantage_scale is not None and config.advantage_scale not in spec.scales:
        raise ConfigError(
            f"estimator {name!r} takes --advantage-scale {' or '.join(spec.scales)}, not "
            f"{config.advantage_scale!r}; pass one of those or drop --advantage-scale"
        )
    options = config.estimator_kwargs
    example = "--estimator-kwargs '{\"omega\": 0.5}'"
    if not isinstance(options, Mapping):
        raise ConfigError(f"estimator_kwargs must be a JSON object, e.g. {example}")
    if spec.scale_option in options:
        raise ConfigError(f"estimator_kwargs may not set {spec.scale_option!r}; use --advantage-scale")
    accepted = [option for option in spec.options if option != spec.scale_option]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise ConfigError(
            f"estimator_kwargs {unknown} are not options of estimator {name!r}; "
            f"its options: {', '.join(accepted) or '(none)'}"
        )
    try:
        spec.fn([], **options)  # the estimator's own checks of its option values, on an empty batch
    except (TypeError, ValueError) as err:
        raise ConfigError(f"estimator_kwargs of {name!r}: {err}") from None
    scripted = scripted_roles(config.roles)
    frozen = frozen_roles(config.frozen)
    try:
        teams = envs.spec(config.env).teams
    except (KeyError, ValueError, ImportError):
        return  # an unknown env id or module: resolve_config names it
    if teams is not None and config.team in teams:
        check_required_role(config, teams[config.team], teams)
        check_scripted_roles(scripted, teams[config.team], frozen)


def check_required_role(
    config: TrainConfig, roles: tuple[str, ...], teams: Mapping[str, tuple[str, ...]] | None = None
) -> None:
    """Raise ``ConfigError`` when the estimator needs a role that ``roles`` (the team variant's)
    lacks; ``teams`` (variant -> roles) lets the message name a variant that has it."""
    name, spec = _estimator_spec(config)
    role = spec.required_role(config.estimator_kwargs)
    if role is None or role in roles:
        return
    variants = [variant for variant, its_roles in (teams or {}).items() if role in its_roles]
    fixes = [f"use --team {variants[0]}"] if variants else []
    fixes.append(f'name one of its roles: --estimator-kwargs \'{{"{spec.role_option}": "{roles[0]}"}}\'')
    raise ConfigError(
        f"estimator {name!r} needs a {role!r} role; {config.env} team {config.team!r} has roles "
        f"{list(roles)}; " + ", or ".join(fixes)
    )


def resolve_config(config: TrainConfig) -> TrainConfig:
    """Fill every ``None`` preset field from the algo and env presets (explicit values win;
    ``env_kwargs`` is merged over the preset's)."""
    name = env_name(config.env)
    check_team(name, config.team)
    env_values = env_preset(name)
    algo = effective_algo(config)
    preset = {**env_values, **ALGO_PRESETS[algo], "algo": algo}
    if env_values["policy"] is not None:  # the env knows its structure: a game's seats share one policy
        preset["policy"] = env_values["policy"]
    merged = ("env_kwargs", "role_max_new_tokens")  # the user's entries over the preset's
    updates: dict[str, Any] = {
        key: value for key, value in preset.items() if key not in merged and getattr(config, key) is None
    }
    preset["role_max_new_tokens"] = preset_role_lengths(name, [config.team])
    updates.update({key: {**preset[key], **getattr(config, key)} for key in merged})
    if config.steps is None and config.train_minutes:  # the time budget ends the run
        updates["steps"] = UNCAPPED_STEPS
    if config.test_tasks is None:
        eval_tasks = config.eval_tasks if config.eval_tasks is not None else env_values["eval_tasks"]
        updates["test_tasks"] = eval_tasks
    if config.lr is None:
        # From a warm start the policy is already good and a large step undoes it: 1e-4 was
        # picked on the validation slice from the default warm start (docs/results.md).
        updates["lr"] = (1e-4 if config.init else 5e-4) if config.lora else 1e-5
    if config.advantage_scale is None:  # the loss preset's, where the estimator takes it
        scales = _estimator_spec(dataclasses.replace(config, algo=algo))[1].scales
        preferred = LOSS_ADVANTAGE_SCALE[config.loss]
        updates["advantage_scale"] = preferred if preferred in scales else scales[0]
    if config.dynamic_sampling is None:
        updates["dynamic_sampling"] = LOSS_DYNAMIC_SAMPLING[config.loss]
    if config.shared_prefix is None:  # the forward that measured faster on the device
        updates["shared_prefix"] = not trains_on_cuda(config.device)
    if config.backend == AUTO:  # the generation path that measured faster, where it is installed
        updates["backend"] = choose_backend(AUTO, config.model, config.device).name
    return dataclasses.replace(config, **updates)


def estimator_options(config: TrainConfig) -> dict[str, Any]:
    """The keyword options of ``compute_advantages`` a resolved config implies: its
    ``advantage_scale`` under the keyword the estimator declared (gigpo: ``norm``; rloo:
    none), then ``estimator_kwargs``."""
    spec = _estimator_spec(config)[1]
    return {**spec.scale_kwargs(config.advantage_scale), **config.estimator_kwargs}
