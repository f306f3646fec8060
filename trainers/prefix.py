"""Shared-prefix forward (Prefix Grouper, docs/algorithms.md section 8).

The K samples of an AT-GRPO group answer one identical prompt, and prompts are much longer
than responses. Instead of K forwards over prompt + response, run

1. one forward over the prompt (with gradients, ``use_cache=True``): its key/value cache and
   its last logit, which predicts every sample's first response token;
2. one forward over the K responses as a batch, attending to the prompt's keys/values (the
   cache expanded to K rows, a view, not a copy), with positions continuing after the prompt.

Log-probabilities and gradients equal those of K separate forwards (the gradients of the K
rows flow back into the one prompt forward and add up, exactly as K copies of it would),
at a cost of P + K*R token-forwards instead of K*(P + R).

Responses are right-padded: a pad sits only after a row's real tokens, so causal attention
already hides it from them and no attention mask is needed (the fast unmasked path).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

__all__ = ["shared_prefix_logits", "prefix_cost"]


def prefix_cost(prompt_length: int, response_lengths: Sequence[int]) -> int:
    """Token-forwards of one shared-prefix group: P + K * R_max (what micro-batching counts)."""
    return prompt_length + len(response_lengths) * max(response_lengths, default=0)


def shared_prefix_logits(model: Any, prompt_ids: torch.Tensor, response_ids: torch.Tensor) -> torch.Tensor:
    """Logits predicting each response token, response-aligned: ``out[k, t]`` is the
    distribution of ``response_ids[k, t]`` given the prompt and ``response_ids[k, :t]``.

    Args:
        model: A causal LM (transformers / PEFT) accepting ``past_key_values``.
        prompt_ids: (P,) the shared prompt token ids.
        response_ids: (K, R) right-padded responses (padding positions give unused logits).

    Returns:
        (K, R, V) logits.
    """
    from transformers import DynamicCache

    num_samples, longest = response_ids.shape
    prompt_length = prompt_ids.shape[0]
    cache = DynamicCache()
    prompt_out = model(
        input_ids=prompt_ids.unsqueeze(0), past_key_values=cache, use_cache=True, logits_to_keep=1
    )
    first = prompt_out.logits[:, -1:, :].expand(num_samples, 1, -1)  # predicts each response's token 0
    if longest == 1:
        return first
    for layer in cache.layers:  # K rows that view the one prompt's keys/values (no copy)
        layer.keys = layer.keys.expand(num_samples, -1, -1, -1)
        layer.values = layer.values.expand(num_samples, -1, -1, -1)
    positions = torch.arange(prompt_length, prompt_length + longest - 1, device=response_ids.device)
    rest = model(
        input_ids=response_ids[:, :-1],  # the last token predicts nothing we sampled
        position_ids=positions.unsqueeze(0).expand(num_samples, -1),
        past_key_values=cache,
        use_cache=True,
    ).logits
    return torch.cat([first, rest], dim=1)
