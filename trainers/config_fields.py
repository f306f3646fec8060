"""The config fields several commands share, each group with its own checks, once.

``TrainConfig`` (``trainers.at_grpo``), ``SFTConfig`` (``trainers.sft``) and ``EvalConfig``
(``benchmarks.evaluate``) are built from these groups plus their own fields, so a flag that
means the same thing is declared, documented and checked in one place:

==================  ==============================================  ======================
group               fields                                          used by
==================  ==============================================  ======================
``DeviceFields``    device, threads                                 all (through
                                                                    ``BackendConfig`` for
                                                                    training, evaluation)
``EnvFields``       env, env_kwargs                                 training, warm start
``TeamFields``      team                                            training, evaluation
``ModelFields``     model, role_model, lora, lora_rank, lora_alpha,  training, warm start
                    response_prefix
``ReplyFields``     max_new_tokens, role_max_new_tokens, stop       all three
``SamplingFields``  top_p, role_temperature                         training, evaluation
``HeldOutFields``   eval_tasks, eval_split, test_tasks, transcripts  training, warm start
``OutputFields``    output_dir, run_name, plots, progress           all three
``CheckpointFields`` checkpoint_every, keep_checkpoints,            training, warm start
                    tensorboard, resume
==================  ==============================================  ======================

A command's config may redeclare a field to change its default (the warm start checkpoints
every 50 steps, training every step); its docstring and checks stay the group's. Every group's
``__post_init__`` runs (each calls the next in the method resolution order), so a config checks
all of its groups. Field docstrings are the ``--help`` text (``trainers.cli``); the
``# --- section ---`` comments are its headings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from agents.models import DEFAULT_MODEL
from trainers.errors import ConfigError

__all__ = [
    "DeviceFields",
    "EnvFields",
    "TeamFields",
    "ModelFields",
    "ReplyFields",
    "SamplingFields",
    "HeldOutFields",
    "OutputFields",
    "CheckpointFields",
    "check_at_least",
    "check_env_kwargs",
    "check_max_cycles",
    "check_role_models",
    "check_role_values",
    "PerRoleModels",
    "parse_role_policies",
]


def check_at_least(config: Any, name: str, minimum: int | float = 1, hint: str = "") -> None:
    """Refuse ``config.<name>`` below ``minimum`` (None passes: a preset fills it)."""
    value = getattr(config, name)
    if value is not None and value < minimum:
        flag = "--" + name.replace("_", "-")
        raise ConfigError(f"{name}={value!r} must be >= {minimum}; pass e.g. {flag} {max(minimum, 1)}{hint}")


def check_role_values(values: Any, name: str, kind: type, example: str) -> None:
    """Refuse per-role values (``role_<name>``) that are not a mapping of role names to positive
    numbers of ``kind``."""
    flag = "--" + name.replace("_", "-")
    fix = f"pass e.g. {flag} executor={example}"
    if not isinstance(values, Mapping):
        raise ConfigError(f"role_{name} must map role names to values; {fix}")
    for role, value in values.items():
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number or (kind is int and not isinstance(value, int)) or value <= 0:
            what = "an int" if kind is int else "a number"
            raise ConfigError(f"role_{name}[{role!r}]={value!r} must be {what} > 0; {fix}")


def parse_role_policies(items: Sequence[str], kinds: Sequence[str], example: str) -> dict[str, str]:
    """``--roles`` items ``ROLE=POLICY`` as role -> policy kind, checked: both parts given, the
    kind one of ``kinds``, each role named once (``example``: a command line that works).

    Raises:
        ConfigError: Naming the item and the fix.
    """
    found: dict[str, str] = {}
    for item in items:
        role, sep, kind = item.partition("=")
        if not sep or not role or kind not in kinds:
            raise ConfigError(
                f"roles: {item!r} is not ROLE=POLICY with POLICY one of {list(kinds)}; e.g. {example}"
            )
        if role in found:
            raise ConfigError(f"roles: each role may be named once, got {list(items)}")
        found[role] = kind
    return found


def check_max_cycles(env_kwargs: Mapping[str, Any]) -> None:
    """Refuse a ``max_cycles`` in ``env_kwargs`` that is not an int >= 1 (None: the env's own).

    Raises:
        ConfigError: Naming ``--env-kwargs`` and a value that works.
    """
    value = env_kwargs.get("max_cycles")
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ConfigError(
            f"env_kwargs max_cycles={value!r} must be an integer >= 1 (full turn cycles before an episode "
            "is cut off); pass e.g. --env-kwargs '{\"max_cycles\": 4}'"
        )


def check_env_kwargs(env_kwargs: Any, reserved: Mapping[str, str]) -> None:
    """Refuse ``--env-kwargs`` that is not a JSON object, or that sets a key a command owns
    (``reserved``: key -> the fix), then check its ``max_cycles``.

    Raises:
        ConfigError: Naming the key and the flag to use instead.
    """
    if not isinstance(env_kwargs, Mapping):
        example = '--env-kwargs \'{"difficulty": "easy"}\''
        raise ConfigError(f"env_kwargs must be a JSON object, e.g. {example}")
    for key, fix in reserved.items():
        if key in env_kwargs:
            raise ConfigError(f"env_kwargs may not set {key!r}: {fix}")
    check_max_cycles(env_kwargs)


class _Checked:
    """Runs every group's checks: each ``__post_init__`` calls the next one in the MRO."""

    def __post_init__(self) -> None:
        pass


@dataclass(frozen=True)
class DeviceFields(_Checked):
    # --- backend ---
    device: str | None = None
    """Torch device (None: cuda when available, else cpu)."""
    threads: int | None = None
    """CPU threads for torch and the processes it starts (None: the CPUs this process is allotted, by
    affinity and cgroup quota, minus those other work keeps busy at start; agents.threads). Recorded in
    the run's config."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.threads is not None and (
            isinstance(self.threads, bool) or not isinstance(self.threads, int) or self.threads < 1
        ):
            raise ConfigError(f"threads={self.threads!r} must be an integer >= 1; pass e.g. --threads 1")


@dataclass(frozen=True)
class EnvFields(_Checked):
    # --- env ---
    env: str = "sokoban"
    """Registered env id (sokoban, plan_path-v0, ...), or module:id to import your env's module first."""
    env_kwargs: dict = field(default_factory=dict)
    """Extra envs.make() arguments as JSON, merged over the env preset's, e.g. '{"difficulty": "medium"}'."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_env_kwargs(
            self.env_kwargs,
            {
                "team": "pass the team variant with --team (the warm start: --teams)",
                "split": "training plays train seeds, evaluations the validation slice and the test block",
            },
        )


@dataclass(frozen=True)
class TeamFields(_Checked):
    # --- env ---
    team: str = "mas"
    """Team variant (the env's TEAMS): 'mas' (one role per agent, e.g. planner + executor), 'single' (one
    role does all), or 'tool' (planning envs: a tool agent writes a solver program, a plan agent moves).
    An evaluation plays it in its main row (n/a for an env without it)."""


def check_role_models(values: Any) -> None:
    """Refuse per-role models (``role_model``) that are not a mapping of roles to model names."""
    if not isinstance(values, Mapping):
        raise ConfigError("role_model must map roles to models; pass e.g. --model executor=tiny-test")
    for role, model in values.items():
        if not isinstance(model, str) or not model.strip():
            raise ConfigError(
                f"role_model[{role!r}]={model!r} must be a model name; pass e.g. --model {role}=tiny-test"
            )


class PerRoleModels:
    """What a config with ``model`` and ``role_model`` fields (``--model M --model ROLE=NAME``)
    answers about its models; a mixin of ``ModelFields`` and the evaluation's config."""

    model: str
    role_model: dict

    def model_for(self, role: str) -> str:
        """The model that plays ``role`` (``--model ROLE=NAME``, else ``--model``)."""
        return self.role_model.get(role, self.model)

    @property
    def model_flags(self) -> str:
        """The ``--model`` flags that give the same models: ``--model M [--model ROLE=NAME ...]``."""
        return " ".join([f"--model {self.model}", *(f"--model {r}={m}" for r, m in self.role_model.items())])

    @property
    def models(self) -> tuple[str, ...]:
        """Every model this config names: ``--model`` first, then the per-role ones."""
        return tuple(dict.fromkeys((self.model, *self.role_model.values())))


@dataclass(frozen=True)
class ModelFields(PerRoleModels, _Checked):
    # --- team ---
    model: str = DEFAULT_MODEL
    """Model: a built-in name (smollm2-135m-instruct, tiny-test), a local HF directory or a hub id."""
    role_model: dict = field(default_factory=dict)
    """Per-role model, given as --model ROLE=NAME (repeatable), e.g. --model executor=tiny-test; roles
    not named play --model. Each model trains its own weights (its roles' LoRA adapters, or its full
    weights) with its own tokenizer and chat template, and a served backend runs an engine per model."""
    lora: bool = True
    """Train LoRA adapters (one per role, or one shared) instead of the full weights."""
    lora_rank: int = 8
    """LoRA rank r."""
    lora_alpha: int = 16
    """LoRA alpha (scale = alpha / r)."""
    response_prefix: str = "<answer>"
    """Text written as the start of every reply (not trained); the env parses prefix + reply."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_at_least(self, "lora_rank")
        check_at_least(self, "lora_alpha")
        check_role_models(self.role_model)


@dataclass(frozen=True)
class ReplyFields(_Checked):
    # --- sampling ---
    max_new_tokens: int | None = None
    """Longest reply in tokens (None: the env preset's)."""
    role_max_new_tokens: dict = field(default_factory=dict)
    """Per-role longest reply, given as --max-new-tokens ROLE=N (repeatable), e.g. --max-new-tokens
    tool=320 (a program needs more tokens than a move list), merged over the env preset's (the
    planning envs': tool=384). Roles not named use --max-new-tokens."""
    stop: tuple[str, ...] = ("</answer>",)
    """Stop strings: generation of a reply ends at the first one."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_at_least(self, "max_new_tokens")
        check_role_values(self.role_max_new_tokens, "max_new_tokens", int, "320")


@dataclass(frozen=True)
class SamplingFields(_Checked):
    # --- sampling ---
    top_p: float = 1.0
    """Nucleus sampling threshold."""
    role_temperature: dict = field(default_factory=dict)
    """Per-role sampling temperature, given as --temperature ROLE=T (repeatable), e.g. --temperature
    executor=1.5 so that an executor's K candidates differ (training: the loss evaluates each role's
    samples under its own). Roles not named use --temperature."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0 < self.top_p <= 1:
            raise ConfigError(f"top_p={self.top_p} must be in (0, 1]; pass e.g. --top-p 1.0")
        check_role_values(self.role_temperature, "temperature", float, "1.5")


@dataclass(frozen=True)
class HeldOutFields(_Checked):
    # --- evaluation ---
    eval_tasks: int | None = None
    """Tasks per in-run evaluation (one greedy episode each) (None: the env preset's)."""
    eval_split: Literal["test", "validation"] = "validation"
    """Where the in-run evaluations play: the train split's 'validation' slice (never trained on), where
    every choice (steps, lr, recipe) is made; 'test' puts the curve itself on held-out test tasks."""
    test_tasks: int | None = None
    """Held-out test tasks (the protocol's block, docs/evaluation.md: Held-out protocol) played before
    training and after the last step, for the run's test number with its task-level standard error
    (None: --eval-tasks; 0: none). With --eval-split test the in-run evaluations are the test number."""
    transcripts: int = 3
    """Episodes written to transcripts/ at each evaluation (episodes/eval_step_<N>.jsonl keeps
    all of them for report.html)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_at_least(self, "eval_tasks")
        check_at_least(self, "test_tasks", 0)
        check_at_least(self, "transcripts", 0)


@dataclass(frozen=True)
class OutputFields(_Checked):
    # --- logging ---
    output_dir: str = "runs"
    """Where run directories are created."""
    run_name: str | None = None
    """Run directory name (None: the env, the command's kind, the date and time)."""
    plots: bool = True
    """Write PNG plots to <run dir>/plots when matplotlib is installed."""
    progress: bool = True
    """Show a live progress bar."""


@dataclass(frozen=True)
class CheckpointFields(_Checked):
    # --- logging ---
    checkpoint_every: int = 1
    """Write a checkpoint every N steps (and after the last one)."""
    keep_checkpoints: int = 2
    """Newest checkpoints kept on disk."""
    tensorboard: bool = True
    """Write TensorBoard events to <run dir>/tensorboard when tensorboard is installed."""
    resume: str | None = None
    """Continue the run in this directory from its last complete checkpoint."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_at_least(self, "checkpoint_every")
        check_at_least(self, "keep_checkpoints")
