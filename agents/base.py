"""What every policy speaks: ``Prompt`` in, ``Generation`` out, under ``SamplingParams``.

A policy turns prompts into text for a role. It is stateless and batched: one call takes
many prompts and returns ``num_samples`` generations for each (AT-GRPO asks for K samples
of one prompt in one call, so the prompt is encoded once). The env owns the conversation;
the policy never sees the env unless the rollout attaches it to the prompt for a
scripted policy (oracle, random), which needs the game state rather than the text.

RL correctness depends on ``Generation``: the exact token ids that were sampled and their
log-probabilities *under the distribution they were sampled from* (after temperature and
top-p), so that a learner can use them as pi_old without recomputing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "SamplingParams",
    "Prompt",
    "Generation",
    "Policy",
    "ServedPolicy",
    "as_prompt",
    "check_num_samples",
    "distinct_prompts",
    "prompt_key",
    "reads_text_only",
    "FINISH_REASONS",
]

FINISH_REASONS = ("stop", "eos", "length")


@dataclass(frozen=True)
class SamplingParams:
    """How to sample.

    Attributes:
        temperature: Softmax temperature; 0 means greedy decoding (logprobs are then
            those of the untempered model, and every sample of a prompt is the same).
        top_p: Nucleus mass in (0, 1]; 1 disables it. Logprobs are renormalised over the
            nucleus, i.e. exactly the distribution the token was drawn from.
        max_new_tokens: Most tokens generated per sample.
        stop: Strings that end a sample; the text is cut before the stop string and the
            tokens after the one that completed it are dropped (finish_reason "stop").
        seed: Seed of the sampler; the same seed, prompts and model give the same samples.
    """

    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 128
    stop: tuple[str, ...] = ()
    seed: int | None = None

    def __post_init__(self) -> None:
        if not (isinstance(self.temperature, (int, float)) and math.isfinite(self.temperature)):
            raise ValueError(f"SamplingParams.temperature must be a finite number, got {self.temperature!r}")
        if self.temperature < 0:
            raise ValueError(f"SamplingParams.temperature must be >= 0 (0 = greedy), got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"SamplingParams.top_p must be in (0, 1], got {self.top_p}")
        if not isinstance(self.max_new_tokens, int) or self.max_new_tokens < 1:
            raise ValueError(
                f"SamplingParams.max_new_tokens must be an int >= 1, got {self.max_new_tokens!r}"
            )
        if isinstance(self.stop, str):
            raise ValueError("SamplingParams.stop must be a tuple of strings, e.g. stop=('</answer>',)")
        if any(not isinstance(s, str) or not s for s in self.stop):
            raise ValueError(f"SamplingParams.stop must hold non-empty strings, got {self.stop!r}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


@dataclass(frozen=True)
class Prompt:
    """One request: the user text, an optional system prompt (per role), and for scripted
    policies only, the env and agent the text was observed from.

    Attributes:
        text: What the env's observation says (``observation["prompt"]``).
        system: System prompt of the role (applied through the chat template).
        env: The env, at the state ``text`` describes (scripted policies read it; model
            policies ignore it). Never mutated by a policy.
        agent: The PettingZoo agent id that acts on this prompt.
        prefix: Start of the assistant's reply, written after the generation header so the
            model continues it (e.g. ``"<answer>"``: small models then answer in the env's
            grammar far more often). Its tokens belong to the prompt, not to the sampled
            response; the full reply is ``prefix + generation.text``.
        seed: This prompt's own sampler seed (None: the call's ``SamplingParams.seed``). Its
            samples then depend on the prompt, the seed and the model only, not on which
            other prompts share the call: a rollout split over workers samples what one
            process would (``trainers.runtime``).
    """

    text: str
    system: str | None = None
    env: Any = None
    agent: str | None = None
    prefix: str = ""
    seed: int | None = None


def check_num_samples(num_samples: object) -> int:
    """Validate ``generate``'s ``num_samples`` (every backend accepts the same values)."""
    if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 1:
        raise ValueError(f"num_samples must be an int >= 1, got {num_samples!r}")
    return num_samples


def as_prompt(prompt: str | Prompt) -> Prompt:
    """Accept plain strings wherever a ``Prompt`` is expected."""
    if isinstance(prompt, Prompt):
        return prompt
    if isinstance(prompt, str):
        return Prompt(text=prompt)
    raise TypeError(f"a prompt must be a str or agents.base.Prompt, got {type(prompt).__name__}")


@dataclass(frozen=True)
class Generation:
    """One sampled response.

    Attributes:
        text: Decoded response (cut before a stop string).
        prompt_token_ids: The prompt as the model saw it (chat template applied).
        token_ids: The sampled response tokens (after the last one, nothing was sampled).
        logprobs: ``log p(token)`` of each sampled token under the sampling distribution
            (temperature and top-p applied), same length as ``token_ids``.
        finish_reason: ``"stop"`` (a stop string), ``"eos"`` (end-of-sequence token) or
            ``"length"`` (``max_new_tokens`` reached).
    """

    text: str
    prompt_token_ids: tuple[int, ...]
    token_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    finish_reason: str

    def __post_init__(self) -> None:
        if len(self.token_ids) != len(self.logprobs):
            raise ValueError(f"{len(self.token_ids)} token ids but {len(self.logprobs)} logprobs")
        if self.finish_reason not in FINISH_REASONS:
            raise ValueError(f"finish_reason must be one of {FINISH_REASONS}, got {self.finish_reason!r}")


@runtime_checkable
class Policy(Protocol):
    """Anything that plays roles: ``generate`` returns, for each prompt, ``num_samples``
    generations (``result[i][k]`` is sample ``k`` of prompt ``i``).

    ``adapter`` names a per-role LoRA adapter (or per-role model) of a multi-policy backend;
    ``None`` is the base/shared policy. Policies without adapters raise on a non-None one.
    """

    name: str

    def generate(
        self,
        prompts: Sequence[str | Prompt],
        *,
        num_samples: int = 1,
        sampling: SamplingParams | None = None,
        adapter: str | None = None,
    ) -> list[list[Generation]]: ...


@runtime_checkable
class ServedPolicy(Policy, Protocol):
    """A policy that samples from its own copy of trainable weights (an inference engine,
    e.g. ``agents.vllm.VLLMPolicy``).

    The learner trains ``trainable`` (an ``agents.hf.HFPolicy``: full weights or LoRA
    adapters); after each update the trainer calls ``sync_weights`` so the engine samples
    from the new weights (on-policy), and ``sleep`` before the update so the engine can give
    its accelerator memory to the learner (a no-op where it cannot).
    """

    trainable: Any

    def sync_weights(self) -> float:
        """Make the engine serve the trainable weights; the seconds it took."""
        ...

    def sleep(self) -> None:
        """Free what the engine holds while the learner trains; the next call wakes it."""
        ...


def reads_text_only(policy: Any) -> bool:
    """Whether ``policy``'s replies depend on a prompt's text, system prompt and prefix alone
    (and the sampler), never on the env attached to it. Model policies declare it with a class
    attribute ``text_only = True``; scripted ones read the game state (an oracle can answer
    two deals that read the same differently), and a policy that says nothing is assumed to.
    A greedy reply of such a policy holds for every identical prompt."""
    return getattr(policy, "text_only", False) is True


def prompt_key(prompt: Prompt) -> tuple[str, str | None, str]:
    """What a text-only policy reads of a prompt (``reads_text_only``): two prompts with the
    same key get the same greedy reply."""
    return (prompt.text, prompt.system, prompt.prefix)


def distinct_prompts(prompts: Sequence[Prompt]) -> tuple[list[Prompt], list[int]]:
    """The first of each group of identical prompts (``prompt_key``), and for every prompt the
    index of its group's among them."""
    asked: list[Prompt] = []
    slot: list[int] = []
    index: dict[tuple[str, str | None, str], int] = {}
    for prompt in prompts:
        key = prompt_key(prompt)
        if key not in index:
            index[key] = len(asked)
            asked.append(prompt)
        slot.append(index[key])
    return asked, slot
