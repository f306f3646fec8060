"""Transformers backend: ``HFPolicy`` samples with exact token ids and logprobs, on CPU or GPU.

Why a hand-written decode loop instead of ``model.generate``: RL needs, per sampled
token, its log-probability under the distribution it was drawn from (temperature and
top-p applied; see ``agents.sampling``), stop strings with known token boundaries, and
K samples of one prompt sharing a single prompt forward pass. The loop here does exactly
that over transformers' own KV cache:

1. prompts are rendered with the chat template (per-prompt system prompt) and left-padded;
2. one forward over the unique prompts fills the cache, which is then repeated K times;
3. each step samples one token per live row, records its logprob, and drops rows that
   finished (end-of-sequence token, stop string, or ``max_new_tokens``) from the cache.

Multi-policy: ``adapters=("planner", "executor")`` puts one LoRA adapter per role on the
shared base model (PEFT); ``generate(..., adapter="planner")`` samples with that adapter,
``adapter=None`` with the base model (adapters disabled). A fresh LoRA adapter is the
identity (its B matrix starts at zero), so roles start equal to the base model and only
diverge through training. Separate full models per role are separate ``HFPolicy``
objects (see ``agents.team``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

from agents.base import Generation, Prompt, SamplingParams, as_prompt, check_num_samples
from agents.models import DEFAULT_MODEL, load_model
from agents.sampling import find_stop, sample_next

__all__ = ["HFPolicy", "LoraSettings"]


@dataclass(frozen=True)
class LoraSettings:
    """LoRA adapter shape for per-role adapters.

    Attributes:
        r: Rank of the update.
        alpha: Scaling numerator (update scaled by alpha / r).
        dropout: Dropout on the adapter input during training.
        target_modules: Module names to adapt, or ``"all-linear"`` (every linear layer
            except the output head).
    """

    r: int = 8
    alpha: int = 16
    dropout: float = 0.0
    target_modules: str | tuple[str, ...] = "all-linear"


class HFPolicy:
    """A transformers causal LM as a teamgym ``Policy``.

    Args:
        model: A built-in name (``"smollm2-135m-instruct"``, ``"tiny-test"``), a local HF
            directory, or a hub id (see ``agents.models``).
        adapters: Names of per-role LoRA adapters to create on the base model.
        lora: Shape of those adapters.
        dtype: Weight dtype; default float32 on CPU, bfloat16 on CUDA.
        device: ``"cpu"``, ``"cuda"``...; default CUDA when available.
        max_batch_rows: Most sequences (prompts x samples) decoded together; larger
            requests are split into chunks of whole prompts.
        name: Policy name used in logs and records (default: the model name).
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
        max_batch_rows: int = 64,
        name: str | None = None,
    ) -> None:
        import torch

        if max_batch_rows < 1:
            raise ValueError(f"HFPolicy: max_batch_rows must be >= 1, got {max_batch_rows}")
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.model, self.tokenizer = load_model(model, dtype=dtype, device=self.device)
        self.name = name or model
        self.model_id = model  # what it was loaded from (``name`` may be a role's label)
        self.max_batch_rows = max_batch_rows
        self.adapter_names: tuple[str, ...] = ()
        if adapters:
            self._add_lora_adapters(tuple(adapters), lora or LoraSettings())
        self.end_token_ids = self._end_token_ids()

    # ------------------------------------------------------------------ adapters
    def _add_lora_adapters(self, names: tuple[str, ...], lora: LoraSettings) -> None:
        try:
            from peft import LoraConfig, get_peft_model
        except ImportError as err:
            raise ImportError(
                'Per-role LoRA adapters need peft: pip install -e ".[dev]" (or pip install peft)'
            ) from err
        if len(set(names)) != len(names) or not all(isinstance(n, str) and n for n in names):
            raise ValueError(f"HFPolicy: adapter names must be distinct non-empty strings, got {names!r}")
        config = LoraConfig(
            r=lora.r,
            lora_alpha=lora.alpha,
            lora_dropout=lora.dropout,
            target_modules=lora.target_modules,
            task_type="CAUSAL_LM",
        )
        self.model = get_peft_model(self.model, config, adapter_name=names[0])
        for name in names[1:]:
            self.model.add_adapter(name, config)
        self.model.eval()
        self.adapter_names = names

    @contextmanager
    def using_adapter(self, adapter: str | None) -> Iterator[None]:
        """Run the model as role ``adapter`` (``None``: the base model, adapters off)."""
        if adapter is None:
            with self.model.disable_adapter() if self.adapter_names else nullcontext():
                yield
            return
        if adapter not in self.adapter_names:
            raise ValueError(
                f"HFPolicy {self.name!r} has no adapter {adapter!r}; adapters: {list(self.adapter_names)}. "
                "Create them with HFPolicy(..., adapters=('planner', 'executor'))."
            )
        self.model.set_adapter(adapter)
        yield

    # ------------------------------------------------------------------ prompts
    def prompt_token_ids(self, prompt: str | Prompt) -> list[int]:
        """The prompt as the model sees it: chat template, optional system message, the
        assistant generation header, and the reply prefix if any."""
        prompt = as_prompt(prompt)
        messages = ([{"role": "system", "content": prompt.system}] if prompt.system else []) + [
            {"role": "user", "content": prompt.text}
        ]
        text = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        text += prompt.prefix
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def _end_token_ids(self) -> frozenset[int]:
        ids = {self.tokenizer.eos_token_id}
        configured = getattr(getattr(self.model, "generation_config", None), "eos_token_id", None)
        ids |= set(configured) if isinstance(configured, (list, tuple)) else {configured}
        return frozenset(i for i in ids if i is not None)

    # ------------------------------------------------------------------ generation
    def generate(
        self,
        prompts: Sequence[str | Prompt],
        *,
        num_samples: int = 1,
        sampling: SamplingParams | None = None,
        adapter: str | None = None,
    ) -> list[list[Generation]]:
        import torch

        check_num_samples(num_samples)
        sampling = sampling or SamplingParams()
        prompts = [as_prompt(p) for p in prompts]
        prompt_ids = [self.prompt_token_ids(p) for p in prompts]
        generator = torch.Generator(device=self.device)
        # Without a seed, draw one from torch's global generator rather than torch.seed(): that
        # would reseed the global generator from the OS and make everything after it (LoRA
        # initialisation, dropout) irreproducible for a process seeded with seed_everything.
        seed = sampling.seed if sampling.seed is not None else int(torch.randint(2**62, (1,)).item())
        generator.manual_seed(seed)
        # Prompts with their own seed sample from their own generator (Prompt.seed), so their
        # samples do not depend on the other prompts of the call.
        own_seeds = any(p.seed is not None for p in prompts)
        per_chunk = max(1, self.max_batch_rows // num_samples)
        results: list[list[Generation]] = []
        with torch.inference_mode(), self.using_adapter(adapter):
            for start in range(0, len(prompt_ids), per_chunk):
                chunk = prompt_ids[start : start + per_chunk]
                generators = (
                    [self._prompt_generator(p, generator) for p in prompts[start : start + per_chunk]]
                    if own_seeds
                    else generator
                )
                results += self._generate_chunk(chunk, num_samples, sampling, generators)
        return results

    def _prompt_generator(self, prompt: Prompt, shared: Any) -> Any:
        """A generator for one prompt's samples: seeded by ``prompt.seed``, or by a draw from
        the call's generator for a prompt without one."""
        import torch

        seed = prompt.seed
        if seed is None:
            seed = int(torch.randint(2**62, (1,), generator=shared, device=self.device).item())
        generator = torch.Generator(device=self.device)
        generator.manual_seed(seed % 2**63)
        return generator

    def _generate_chunk(
        self, prompt_ids: list[list[int]], num_samples: int, sampling: SamplingParams, generator: Any
    ) -> list[list[Generation]]:
        import torch
        from transformers import DynamicCache

        pad = self.tokenizer.pad_token_id
        width = max(len(ids) for ids in prompt_ids)
        input_ids = torch.tensor([[pad] * (width - len(ids)) + ids for ids in prompt_ids], device=self.device)
        mask = torch.tensor(
            [[0] * (width - len(ids)) + [1] * len(ids) for ids in prompt_ids], device=self.device
        )
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        cache = DynamicCache()
        # One forward per unique prompt; the K samples share it through the repeated cache.
        # logits_to_keep=1: only the last position's vocabulary logits are needed (the full
        # prompt x vocab logits cost more than the rest of the prefill on a small model).
        logits = self.model(
            input_ids=input_ids,
            attention_mask=mask,
            position_ids=positions,
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=1,
        ).logits[:, -1, :]
        if num_samples > 1:
            cache.batch_repeat_interleave(num_samples)
            logits = logits.repeat_interleave(num_samples, dim=0)
            mask = mask.repeat_interleave(num_samples, dim=0)
            positions = positions.repeat_interleave(num_samples, dim=0)
        next_position = positions[:, -1:] + 1
        rows = len(prompt_ids) * num_samples
        tokens: list[list[int]] = [[] for _ in range(rows)]
        logprobs: list[list[float]] = [[] for _ in range(rows)]
        texts = [""] * rows
        finish: list[str | None] = [None] * rows
        live = list(range(rows))  # row ids, in cache order
        longest_stop = max((len(s) for s in sampling.stop), default=0)

        for step in range(sampling.max_new_tokens):
            sampled, sampled_logprobs = _sample_rows(logits, sampling, generator, live, num_samples)
            for row, token, logprob in zip(live, sampled.tolist(), sampled_logprobs.tolist(), strict=True):
                tokens[row].append(token)
                logprobs[row].append(logprob)
                if token in self.end_token_ids:
                    finish[row] = "eos"
                    continue
                if sampling.stop:
                    before = len(texts[row])
                    texts[row] = self.tokenizer.decode(tokens[row], skip_special_tokens=True)
                    cut = find_stop(texts[row], sampling.stop, max(0, before - longest_stop))
                    if cut is not None:
                        texts[row] = texts[row][:cut]
                        finish[row] = "stop"
                        continue
                if step + 1 == sampling.max_new_tokens:
                    finish[row] = "length"
            keep = [i for i, row in enumerate(live) if finish[row] is None]
            if not keep:
                break
            if len(keep) < len(live):
                index = torch.tensor(keep, device=self.device)
                cache.batch_select_indices(index)
                sampled, mask, next_position = sampled[index], mask[index], next_position[index]
                live = [live[i] for i in keep]
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=-1)
            logits = self.model(
                input_ids=sampled.unsqueeze(-1),
                attention_mask=mask,
                position_ids=next_position,
                past_key_values=cache,
                use_cache=True,
            ).logits[:, -1, :]
            next_position = next_position + 1

        out: list[list[Generation]] = []
        for i, ids in enumerate(prompt_ids):
            group = []
            for row in range(i * num_samples, (i + 1) * num_samples):
                text = (
                    texts[row]
                    if finish[row] == "stop"
                    else self.tokenizer.decode(tokens[row], skip_special_tokens=True)
                )
                group.append(
                    Generation(
                        text=text,
                        prompt_token_ids=tuple(ids),
                        token_ids=tuple(tokens[row]),
                        logprobs=tuple(logprobs[row]),
                        finish_reason=finish[row] or "length",
                    )
                )
            out.append(group)
        return out


def _sample_rows(
    logits: Any, sampling: SamplingParams, generator: Any, live: list[int], num_samples: int
) -> tuple[Any, Any]:
    """``sample_next`` for the live rows; ``generator`` is one for all rows, or a list with one
    per prompt (row ``r`` belongs to prompt ``r // num_samples``), each drawing for its rows."""
    if not isinstance(generator, list) or sampling.greedy:
        return sample_next(logits, sampling, None if isinstance(generator, list) else generator)
    import torch

    owners: dict[int, list[int]] = {}
    for position, row in enumerate(live):
        owners.setdefault(row // num_samples, []).append(position)
    order, tokens, logprobs = [], [], []
    for prompt, positions in owners.items():
        index = torch.tensor(positions, device=logits.device)
        sampled, sampled_logprobs = sample_next(logits[index], sampling, generator[prompt])
        order += positions
        tokens.append(sampled)
        logprobs.append(sampled_logprobs)
    back = torch.argsort(torch.tensor(order, device=logits.device))  # rows back in live order
    return torch.cat(tokens)[back], torch.cat(logprobs)[back]
