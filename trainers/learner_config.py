"""``LearnerConfig``: the learner's optimisation settings (``trainers.learner`` uses them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from trainers.losses import DEFAULT_LOSS_PRESETS

__all__ = ["LearnerConfig", "OLD_LOGPROBS"]

OLD_LOGPROBS = ("auto", "sampler", "recompute")


@dataclass(frozen=True)
class LearnerConfig:
    """Optimisation settings.

    Attributes:
        lr: AdamW learning rate.
        weight_decay: AdamW weight decay.
        max_grad_norm: Gradient-norm clip per unit (``None``: no clipping).
        loss: Loss preset (``grpo``, ``dapo``, ``dr_grpo``) giving eps_low/eps_high/aggregation.
        eps_low: Override of the preset's lower clip range.
        eps_high: Override of the preset's upper clip range (clip-higher).
        aggregation: Override of the preset's token aggregation mode.
        max_response_length: Constant divisor of ``seq-mean-token-sum-norm`` (Dr. GRPO): the
            generation budget in tokens. Required by that aggregation.
        kl_coef: Weight of the k3 KL to the frozen reference (the base model with adapters
            off for LoRA units, a frozen copy of the initial weights otherwise); 0 disables.
        entropy_coef: Weight of the entropy bonus.
        micro_batch_tokens: Token budget per forward/backward: rows x longest sequence for a
            padded micro-batch, P + K x longest response for a shared-prefix group. Peak memory
            grows with it (the activations kept for the backward pass); on CPU a larger budget
            buys no speed, so the default is small. Raise it on a GPU.
        recompute_long: A padded micro-batch over the budget (one sequence longer than it)
            recomputes its activations in the backward pass (``trainers.activations``), so
            the peak stays near the budget's at about a third more compute for that sequence.
        shared_prefix: Encode each group's shared prompt once (``trainers.prefix``): same
            logprobs and gradients, far fewer token-forwards. Off: plain padded forwards.
        dynamic_sampling: Drop zero-advantage samples before the update (``None``: on for the
            ``dapo`` loss, off otherwise, as the papers define them).
        old_logprobs: pi_old: ``"sampler"`` (trust the sampler's logprobs), ``"recompute"``
            (the learner's forward before any update) or ``"auto"`` (recompute when the
            trained weights are not float32/float64, where sampler and learner numerics differ).
        passes: Passes over each rollout batch (TRL ``num_iterations``, verl ``ppo_epochs``).
        mini_batches: Optimiser steps per pass: the batch is split into this many mini-batches
            of whole prompt groups (verl ``ppo_mini_batch_size`` = batch / mini_batches).
        temperature: The sampler's temperature (log pi is computed under it).
        role_temperature: Role -> the sampler's temperature for that role's samples, where it
            differs from ``temperature`` (a sample's role is ``Turn.role``).
        top_p: The sampler's top-p.
    """

    lr: float = 1e-5
    weight_decay: float = 0.0
    max_grad_norm: float | None = 1.0
    loss: str = "grpo"
    eps_low: float | None = None
    eps_high: float | None = None
    aggregation: str | None = None
    max_response_length: int | None = None
    kl_coef: float = 0.0
    entropy_coef: float = 0.0
    micro_batch_tokens: int = 512
    recompute_long: bool = True
    shared_prefix: bool = True
    dynamic_sampling: bool | None = None
    old_logprobs: str = "auto"
    passes: int = 1
    mini_batches: int = 1
    temperature: float = 1.0
    role_temperature: Mapping[str, float] = field(default_factory=dict)
    top_p: float = 1.0

    def __post_init__(self) -> None:
        if self.loss not in DEFAULT_LOSS_PRESETS:
            raise ValueError(
                f"LearnerConfig.loss={self.loss!r}; choose one of {sorted(DEFAULT_LOSS_PRESETS)}"
            )
        if self.lr <= 0:
            raise ValueError(f"LearnerConfig.lr must be > 0, got {self.lr}")
        if self.micro_batch_tokens < 1:
            raise ValueError(f"LearnerConfig.micro_batch_tokens must be >= 1, got {self.micro_batch_tokens}")
        if self.temperature <= 0 or any(t <= 0 for t in self.role_temperature.values()):
            raise ValueError(
                "LearnerConfig.temperature (and role_temperature) must be the sampler's temperature "
                "(> 0; greedy can't train)"
            )
        if self.old_logprobs not in OLD_LOGPROBS:
            raise ValueError(
                f"LearnerConfig.old_logprobs={self.old_logprobs!r}; choose one of {OLD_LOGPROBS}"
            )
        for name in ("passes", "mini_batches"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"LearnerConfig.{name} must be an int >= 1, got {getattr(self, name)!r}")
        kwargs = self.loss_kwargs()
        budget = kwargs.get("max_response_length") or 0
        if kwargs["aggregation"] == "seq-mean-token-sum-norm" and not budget > 0:
            raise ValueError(
                "LearnerConfig: aggregation 'seq-mean-token-sum-norm' (the dr_grpo loss) divides by a "
                "constant max_response_length; set it to the generation budget (max_new_tokens), got "
                f"{self.max_response_length!r}"
            )

    @property
    def drops_zero_advantage(self) -> bool:
        """Whether dynamic sampling is on (``dynamic_sampling``, or its default for ``loss``)."""
        return self.loss == "dapo" if self.dynamic_sampling is None else self.dynamic_sampling

    def loss_kwargs(self) -> dict[str, Any]:
        kwargs = dict(DEFAULT_LOSS_PRESETS[self.loss])
        for name in ("eps_low", "eps_high", "aggregation", "max_response_length"):
            if getattr(self, name) is not None:
                kwargs[name] = getattr(self, name)
        kwargs["kl_coef"] = self.kl_coef
        kwargs["entropy_coef"] = self.entropy_coef
        return kwargs
