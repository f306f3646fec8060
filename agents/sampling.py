"""Next-token sampling with exact log-probabilities (pure torch, backend independent).

The log-probability returned for a sampled token is taken under the distribution the
token was drawn from: ``softmax(logits / T)`` restricted to the top-p nucleus and
renormalised. A learner that recomputes ``log pi(token)`` with ``sampling_logprobs`` on
the same logits gets the same number, which is what makes the sampler's logprobs usable
as pi_old (docs/algorithms.md section 3). Greedy decoding (T = 0) reports the untempered
model's log-probability of the argmax token.
"""

from __future__ import annotations

import torch

from agents.base import SamplingParams

__all__ = ["sampling_logprobs", "sample_next", "find_stop"]


def sampling_logprobs(logits: torch.Tensor, temperature: float, top_p: float = 1.0) -> torch.Tensor:
    """Log-probabilities of the sampling distribution over the vocabulary (last dim).

    Tokens outside the top-p nucleus get ``-inf``. ``temperature == 0`` means greedy; the
    untempered distribution is returned (and top-p is irrelevant).
    """
    logits = logits.float()
    if temperature > 0:
        logits = logits / temperature
    logprobs = torch.log_softmax(logits, dim=-1)
    if temperature == 0 or top_p >= 1.0:
        return logprobs
    sorted_logprobs, order = torch.sort(logprobs, dim=-1, descending=True)
    mass_before = torch.cumsum(sorted_logprobs.exp(), dim=-1) - sorted_logprobs.exp()
    outside = mass_before >= top_p  # the first token always stays: its mass_before is 0
    sorted_logprobs = sorted_logprobs.masked_fill(outside, float("-inf"))
    nucleus = torch.full_like(logprobs, float("-inf")).scatter(-1, order, sorted_logprobs)
    return torch.log_softmax(nucleus, dim=-1)  # renormalise over the nucleus


def sample_next(
    logits: torch.Tensor, sampling: SamplingParams, generator: torch.Generator | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw one token per row of ``logits`` (rows x vocab).

    Returns:
        (token ids, their log-probabilities under the sampling distribution), both of
        shape (rows,).
    """
    logprobs = sampling_logprobs(logits, sampling.temperature, sampling.top_p)
    if sampling.greedy:
        tokens = logprobs.argmax(dim=-1)
    else:
        tokens = torch.multinomial(logprobs.exp(), num_samples=1, generator=generator).squeeze(-1)
    return tokens, logprobs.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)


def find_stop(text: str, stops: tuple[str, ...], search_from: int = 0) -> int | None:
    """Index of the earliest stop string in ``text`` at or after ``search_from`` (None if
    none). ``search_from`` lets callers rescan only the tail that new tokens added."""
    hits = [i for i in (text.find(stop, search_from) for stop in stops) if i >= 0]
    return min(hits) if hits else None
