"""What the warm start's test modules share: a training config on the tiny model."""

from __future__ import annotations

from trainers.config import TrainConfig


def team_config(**changes) -> TrainConfig:
    """A config whose team the tests build directly: the tiny model, one shared LoRA policy,
    replies after ``<answer>``; ``changes`` override any field."""
    fields = dict(
        model="tiny-test",
        backend="hf",
        device="cpu",
        policy="shared",
        lora=True,
        lora_rank=4,
        lora_alpha=8,
        response_prefix="<answer>",
    )
    return TrainConfig(**{**fields, **changes})
