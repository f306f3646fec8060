"""The training command's configuration: one frozen dataclass, algorithm and env presets.

Fields left at ``None`` are filled by :func:`resolve_config` from two presets:

* ``ALGO_PRESETS``: what ``--algo`` means (rollout mode + advantage estimator);
* ``ENV_PRESETS``: sizes that fit a 2-core laptop CPU with the default 135M model for each
  built-in env (smallest difficulty, a short horizon, short replies). Envs without a
  preset (your own) get ``GENERIC_PRESET``.

Every field has a docstring; ``trainers.cli`` turns them into ``--help``. Validation
errors name the field and the fix.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from agents.models import DEFAULT_MODEL
from trainers.backends import (
    BackendConfig,
    PolicyFactory,
    ServingOptions,
    check_model_backend,
    policy_factory,
)
from trainers.errors import ConfigError

__all__ = [
    "TrainConfig",
    "ALGO_PRESETS",
    "ENV_PRESETS",
    "GENERIC_PRESET",
    "resolve_config",
    "estimator_options",
    "ConfigError",
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
}

# What each loss preset means for the advantages (``advantage_scale``) and for dynamic sampling
# when those fields are left at None: Dr. GRPO drops the std (A = r - mean), DAPO drops
# zero-advantage groups; GRPO does neither.
LOSS_ADVANTAGE_SCALE: dict[str, str] = {"grpo": "group", "dapo": "group", "dr_grpo": "none"}
LOSS_DYNAMIC_SAMPLING: dict[str, bool] = {"grpo": False, "dapo": True, "dr_grpo": False}
# GiGPO names the same choice by its normalisation mode.
_GIGPO_NORM_OF_SCALE = {"group": "mean_std_norm", "none": "mean_norm"}

# Sized for a 2-core CPU and SmolLM2-135M: under a minute per step, one to two per eval.
# Temperature 0.7 and 16-token replies: at 1.0 the 135M model's replies are ~98% invalid
# (all-invalid groups carry no advantage), and longer replies mostly add junk after the moves.
ENV_PRESETS: dict[str, dict[str, Any]] = {
    "sokoban": {
        "env_kwargs": {"difficulty": "easy", "max_cycles": 2},
        "tasks_per_step": 4,
        "max_new_tokens": 16,
        "temperature": 0.7,
        "steps": 10,
        "eval_every": 5,
        "eval_tasks": 16,
    },
    "plan_path": {
        "env_kwargs": {"difficulty": "easy", "max_cycles": 2},
        "tasks_per_step": 4,
        "max_new_tokens": 16,
        "temperature": 0.7,
        "steps": 10,
        "eval_every": 5,
        "eval_tasks": 16,
    },
    "sudoku": {
        "env_kwargs": {"difficulty": "easy", "max_cycles": 2},
        "tasks_per_step": 4,
        "max_new_tokens": 48,
        "temperature": 0.7,
        "steps": 10,
        "eval_every": 5,
        "eval_tasks": 16,
    },
}
# Reasoning envs: replies hold a program or a worked answer, so they get more tokens; the
# sandbox runs each program in a separate process (about 0.1 s on top of generation).
ENV_PRESETS["math"] = {
    "env_kwargs": {"max_cycles": 2},
    "tasks_per_step": 4,
    "max_new_tokens": 96,
    "temperature": 0.7,
    "steps": 10,
    "eval_every": 5,
    "eval_tasks": 16,
}
ENV_PRESETS["code"] = {**ENV_PRESETS["math"], "max_new_tokens": 192}
GENERIC_PRESET: dict[str, Any] = {
    "env_kwargs": {},
    "tasks_per_step": 4,
    "max_new_tokens": 64,
    "temperature": 1.0,
    "steps": 10,
    "eval_every": 5,
    "eval_tasks": 16,
}


@dataclass(frozen=True)
class TrainConfig(BackendConfig):
    """Everything one training run needs (``python -m trainers.at_grpo --help``); the backend
    fields (``--backend``, ``--device``, ``--vllm-*``) come from ``trainers.backends.BackendConfig``."""

    # --- env ---
    env: str = "sokoban"
    """Registered env id (sokoban, plan_path-v0, ...), or module:id to import your env's module first."""
    env_kwargs: dict = field(default_factory=dict)
    """Extra envs.make() arguments as JSON, merged over the env preset's, e.g. '{"difficulty": "medium"}'."""
    team: Literal["mas", "single"] = "mas"
    """Team variant: 'mas' (one role per agent, e.g. planner + executor) or 'single' (one role does all)."""

    # --- team ---
    policy: Literal["shared", "per_role"] | None = None
    """'per_role': each role has its own trainable weights; 'shared': every role trains the same ones
    (None: the algo's: shared for matpo, per_role otherwise)."""
    model: str = DEFAULT_MODEL
    """Model: a built-in name (smollm2-135m-instruct, tiny-test), a local HF directory or a hub id."""
    lora: bool = True
    """Train LoRA adapters (one per role, or one shared) instead of the full weights."""
    lora_rank: int = 8
    """LoRA rank r."""
    lora_alpha: int = 16
    """LoRA alpha (scale = alpha / r)."""
    response_prefix: str = "<answer>"
    """Text written as the start of every reply (not trained); the env parses prefix + reply."""
    init: str | None = None
    """Start from the trained weights of this run dir or checkpoint: a warm start (python -m trainers.sft)
    or an earlier run; a --policy shared warm start can seed per-role adapters. Same --model needed."""

    # --- backend ---
    vllm_sleep: bool = False
    """vLLM on GPU: offload the engine's weights and free its KV cache while the learner trains."""
    vllm_sync: Literal["memory", "disk"] = "memory"
    """vLLM: how new full weights reach the engine after each update: in memory, or via a safetensors file."""

    # --- sampling ---
    algo: Literal["at_grpo", "grpo", "gigpo", "matpo"] = "at_grpo"
    """Algorithm preset: sets rollout and estimator (at_grpo: tree + at_grpo, grpo/gigpo/matpo: plain)."""
    rollout: Literal["tree", "plain"] | None = None
    """'tree': K candidates per node, best continues; 'plain': K independent episodes (None: algo's)."""
    estimator: str | None = None
    """Advantage estimator in trainers.advantages.ADVANTAGE_ESTIMATORS (None: the algo's)."""
    num_generations: int = 4
    """K: candidates per (task, turn, agent) node in tree rollouts, episodes per task in plain ones."""
    tasks_per_step: int | None = None
    """Training tasks (seeded env instances) per step (None: the env preset's)."""
    temperature: float | None = None
    """Sampling temperature of training rollouts, > 0, the loss uses the same one (None: the env preset's)."""
    top_p: float = 1.0
    """Nucleus sampling threshold of training rollouts."""
    max_new_tokens: int | None = None
    """Longest reply in tokens (None: the env preset's)."""
    stop: tuple[str, ...] = ("</answer>",)
    """Stop strings: generation of a reply ends at the first one."""
    selection: Literal["greedy", "softmax"] = "greedy"
    """Tree rollouts: which candidate continues the episode (best reward, or sampled by softmax)."""

    # --- optimisation ---
    steps: int | None = None
    """Training steps (rollout + update) (None: the env preset's)."""
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
    kl_coef: float = 0.0
    """Weight of the KL penalty to the initial policy (0: off, no reference forward)."""
    max_grad_norm: float = 1.0
    """Gradient-norm clip per trained unit."""
    micro_batch_tokens: int = 4096
    """Token budget of one forward/backward (lower it if the update runs out of memory)."""
    seed: int = 0
    """Seeds the training tasks, the sampler and candidate selection (same seed, same run)."""

    # --- evaluation ---
    eval_every: int | None = None
    """Evaluate on held-out test tasks every N steps, before training and at the end (0: only those two)."""
    eval_tasks: int | None = None
    """Held-out test tasks per evaluation (one episode each, K = 1) (None: the env preset's)."""
    eval_temperature: float = 0.0
    """Sampling temperature of evaluations (0: greedy)."""
    eval_split: Literal["test", "validation"] = "test"
    """Where evaluations play: held-out 'test' tasks, or the train split's 'validation' slice (never
    trained on) when choosing hyperparameters, so the test split is only ever evaluated."""
    transcripts: int = 3
    """Episodes written to transcripts/ at each evaluation."""
    save_episodes: bool = True
    """Write every training episode's replies and outcome to episodes/ (demonstrations for
    python -m trainers.sft --demos <this run>)."""

    # --- logging ---
    output_dir: str = "runs"
    """Where run directories are created."""
    run_name: str | None = None
    """Run directory name (None: <env>-<algo>-<team>-<date>-<time>)."""
    checkpoint_every: int = 1
    """Write a checkpoint every N steps (and after the last one)."""
    keep_checkpoints: int = 2
    """Newest checkpoints kept on disk."""
    tensorboard: bool = True
    """Write TensorBoard events to <run dir>/tensorboard when tensorboard is installed."""
    plots: bool = True
    """Write PNG plots to <run dir>/plots when matplotlib is installed."""
    progress: bool = True
    """Show a live progress bar."""
    resume: str | None = None
    """Continue the run in this directory from its last complete checkpoint."""

    def __post_init__(self) -> None:
        super().__post_init__()
        _validate(self)

    @property
    def serving(self) -> ServingOptions:
        """How a served policy (vLLM engine) follows this run's learner."""
        return ServingOptions(seed=self.seed, sleep=self.vllm_sleep, sync=self.vllm_sync)

    def policy_factory(self) -> PolicyFactory:
        """A constructor of this run's backend policy on ``model``."""
        return policy_factory(self, self.model, self.serving)


# Fields a resumed run may change; everything else must match the saved config.
RESUMABLE_OVERRIDES = frozenset({"steps", "progress", "tensorboard", "plots", "resume", "eval_every"})


def _positive(config: TrainConfig, name: str, minimum: int | float = 1, hint: str = "") -> None:
    value = getattr(config, name)
    if value is not None and value < minimum:
        flag = "--" + name.replace("_", "-")
        raise ConfigError(f"{name}={value!r} must be >= {minimum}; pass e.g. {flag} {max(minimum, 1)}{hint}")


def _validate(config: TrainConfig) -> None:
    for name in ("num_generations", "tasks_per_step", "max_new_tokens", "steps", "eval_tasks"):
        _positive(config, name)
    for name in ("checkpoint_every", "keep_checkpoints", "lora_rank", "lora_alpha", "micro_batch_tokens"):
        _positive(config, name)
    _positive(config, "passes")
    _positive(config, "mini_batches")
    _positive(config, "eval_every", 0)
    _positive(config, "transcripts", 0)
    check_model_backend(config.backend, config.model)
    if config.temperature is not None and config.temperature <= 0:
        raise ConfigError(
            f"temperature={config.temperature} must be > 0: training samples must come from a distribution "
            "the loss can evaluate; pass e.g. --temperature 1.0 (use --eval-temperature 0 for greedy evals)"
        )
    if not 0 < config.top_p <= 1:
        raise ConfigError(f"top_p={config.top_p} must be in (0, 1]; pass e.g. --top-p 1.0")
    if config.eval_temperature < 0:
        raise ConfigError(f"eval_temperature={config.eval_temperature} must be >= 0 (0 is greedy)")
    if config.lr is not None and config.lr <= 0:
        raise ConfigError(f"lr={config.lr} must be > 0; pass e.g. --lr 1e-3")
    if config.kl_coef < 0:
        raise ConfigError(f"kl_coef={config.kl_coef} must be >= 0; pass e.g. --kl-coef 0")
    if config.max_grad_norm <= 0:
        raise ConfigError(f"max_grad_norm={config.max_grad_norm} must be > 0; pass e.g. --max-grad-norm 1.0")
    if not isinstance(config.env_kwargs, Mapping):
        raise ConfigError('env_kwargs must be a JSON object, e.g. --env-kwargs \'{"difficulty": "easy"}\'')
    for reserved in ("split", "team"):
        if reserved in config.env_kwargs:
            fix = "use --team" if reserved == "team" else "training uses train seeds, evaluation test seeds"
            raise ConfigError(f"env_kwargs may not set {reserved!r}; {fix}")
    if config.estimator is not None:
        from trainers.advantages import ADVANTAGE_ESTIMATORS

        if config.estimator not in ADVANTAGE_ESTIMATORS:
            raise ConfigError(
                f"estimator={config.estimator!r} is unknown; choose one of {', '.join(ADVANTAGE_ESTIMATORS)}"
            )
    # What the run will use once the algo preset fills the None fields.
    estimator = config.estimator or ALGO_PRESETS[config.algo]["estimator"]
    rollout = config.rollout or ALGO_PRESETS[config.algo]["rollout"]
    if estimator in ("gigpo", "matpo") and rollout == "tree":
        raise ConfigError(
            f"estimator {estimator!r} needs plain (un-branched) episodes; pass --rollout plain "
            f"(or --algo {estimator}, which sets it)"
        )
    if estimator == "matpo" and config.team == "single":
        raise ConfigError("algo/estimator 'matpo' needs a planner role; use --team mas")
    if config.advantage_scale not in (None, "none") and estimator == "rloo":
        raise ConfigError(
            "estimator 'rloo' is never std-normalised (A = r - mean of the others); drop --advantage-scale"
        )
    if config.advantage_scale == "batch" and estimator == "gigpo":
        raise ConfigError("gigpo normalises per group or not at all; pass --advantage-scale group or none")


def _env_name(env_id: str) -> str:
    import envs

    try:
        return envs.spec(env_id).name
    except KeyError as err:
        raise ConfigError(f"env={env_id!r} is not registered: {err.args[0]}") from None


def resolve_config(config: TrainConfig) -> TrainConfig:
    """Fill every ``None`` preset field from the algo and env presets (explicit values win;
    ``env_kwargs`` is merged over the preset's)."""
    name = _env_name(config.env)
    preset = {**ENV_PRESETS.get(name, GENERIC_PRESET), **ALGO_PRESETS[config.algo]}
    updates: dict[str, Any] = {
        key: value for key, value in preset.items() if key != "env_kwargs" and getattr(config, key) is None
    }
    updates["env_kwargs"] = {**preset["env_kwargs"], **config.env_kwargs}
    if config.lr is None:
        # From a warm start the policy is already good and a large step undoes it: 1e-4 was
        # picked on the validation slice from the default warm start (README, Results).
        updates["lr"] = (1e-4 if config.init else 5e-4) if config.lora else 1e-5
    if config.advantage_scale is None:
        estimator = updates.get("estimator", config.estimator)
        updates["advantage_scale"] = "none" if estimator == "rloo" else LOSS_ADVANTAGE_SCALE[config.loss]
    if config.dynamic_sampling is None:
        updates["dynamic_sampling"] = LOSS_DYNAMIC_SAMPLING[config.loss]
    return dataclasses.replace(config, **updates)


def estimator_options(config: TrainConfig) -> dict[str, Any]:
    """The keyword options of ``compute_advantages`` a resolved config implies: its
    ``advantage_scale`` as the estimator's ``scale`` (gigpo: ``norm``; rloo: none)."""
    from trainers.advantages import ADVANTAGE_ESTIMATORS

    parameters = inspect.signature(ADVANTAGE_ESTIMATORS[config.estimator]).parameters
    if "scale" in parameters:
        return {"scale": config.advantage_scale}
    if "norm" in parameters:
        return {"norm": _GIGPO_NORM_OF_SCALE[config.advantage_scale]}
    return {}
