"""Recompute a forward's activations in the backward pass (gradient checkpointing), for one
forward at a time.

The learners split an update into micro-batches under a token budget, so the activations kept
for the backward pass (about 1.4 MB per token for the default 135M model in float32) stay
near the budget's. A single sequence longer than the budget cannot be split: ALFWorld's and
the code env's prompts run to thousands of tokens. For such a forward only, each decoder layer
keeps its input and recomputes the rest during the backward pass (transformers' gradient
checkpointing, non-reentrant): about a third more compute for that sequence, and memory that
grows with one layer's activations instead of all of them. Forwards within the budget run as
before. The shared-prefix forward cannot recompute (a recompute would write its key/value
cache twice), so the learner gives it only the groups that fit the budget: a prompt too long
for two of its responses goes the padded way, one sequence per forward, recomputed (before
that rule the code env's update peaked near 3.6 GB).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["recomputed_activations"]


@contextmanager
def recomputed_activations(model: Any, enabled: bool = True) -> Iterator[None]:
    """Gradient checkpointing on ``model``'s decoder layers for the forwards run inside (the
    backward pass may run after the block: the recompute is bound to the forward). A model
    without transformers' checkpointing support (or ``enabled=False``) runs unchanged."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    if not enabled or not getattr(base, "supports_gradient_checkpointing", False):
        yield
        return
    base.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    try:
        yield
    finally:
        base.gradient_checkpointing_disable()
