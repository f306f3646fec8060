"""Behaviour cloning on the learner's units: the negative log-likelihood of reply tokens.

``SupervisedLearner`` is a ``trainers.learner.Learner`` (same units: a shared model, a shared
adapter, one adapter or one model per role; same micro-batching under a token budget, same
shared-prefix forward, same checkpoints) with a different objective:

    loss(unit) = - sum over the unit's reply tokens of log pi(token | prompt, earlier reply)
                 / number of those tokens

Only reply tokens are scored: the prompt (chat template, system prompt, response prefix)
is context, never a target. Log-probabilities are those of the model itself (temperature 1,
no top-p), whatever the rollouts later sample with.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import torch

from agents.team import Team
from trainers.learner import Learner, LearnerConfig, TrainUnit
from trainers.records import Turn

__all__ = ["SupervisedLearner"]


class SupervisedLearner(Learner):
    """Trains every HF policy of ``team`` to reproduce demonstration replies (module docstring).

    Args:
        team: Whose policies are trained; each demonstration ``Turn.policy`` names its unit.
        lr: AdamW learning rate.
        max_grad_norm: Gradient-norm clip per unit (``None``: none).
        micro_batch_tokens: Token budget of one forward/backward.
        weight_decay: AdamW weight decay.
    """

    def __init__(
        self,
        team: Team,
        *,
        lr: float,
        max_grad_norm: float | None = 1.0,
        micro_batch_tokens: int = 512,
        weight_decay: float = 0.0,
    ) -> None:
        config = LearnerConfig(
            lr=lr,
            weight_decay=weight_decay,
            max_grad_norm=max_grad_norm,
            micro_batch_tokens=micro_batch_tokens,
            temperature=1.0,
            top_p=1.0,
        )
        super().__init__(team, config)

    def set_lr(self, lr: float) -> None:
        """The learning rate every unit's next optimiser step uses (a schedule's value)."""
        for unit in self.units.values():
            for group in unit.optimizer.param_groups:
                group["lr"] = lr

    def _by_unit(self, samples: Sequence[Turn]) -> dict[str, list[int]]:
        by_unit: dict[str, list[int]] = defaultdict(list)
        for i, turn in enumerate(samples):
            if turn.policy not in self.units:
                raise ValueError(
                    f"demonstration {i} belongs to policy {turn.policy!r}, which this learner does not "
                    f"train (units: {sorted(self.units)}); make demonstrations with the trained team"
                )
            if turn.token_ids:
                by_unit[turn.policy].append(i)
        return by_unit

    def _token_nll(self, unit: TrainUnit, samples: Sequence[Turn], indices: list[int], *, train: bool):
        """Summed reply-token NLL of ``indices`` (backpropagated, scaled by 1 / tokens, when
        ``train``) and the token count."""
        tokens = sum(len(samples[i].token_ids) for i in indices)
        zeros, ones = np.zeros(len(samples)), np.ones(len(samples))
        total = 0.0
        for batch in self._micro_batches(unit, samples, indices, zeros, ones):
            logprobs, _ = self._logprobs(unit.policy.model, batch)
            nll = -(logprobs * batch.response_mask).sum()
            if train:
                (nll / tokens).backward()
            total += float(nll.detach())
        return total, tokens

    def step(self, samples: Sequence[Turn], result=None, *, seed: int = 0) -> dict[str, dict[str, float]]:  # noqa: ARG002
        """One optimiser step per unit on its demonstrations; metrics per unit: ``nll`` (mean
        per reply token, before the step), ``tokens``, ``samples``, ``grad_norm``."""
        metrics: dict[str, dict[str, float]] = {}
        for name, indices in self._by_unit(samples).items():
            unit = self.units[name]
            unit.policy.model.train()
            unit.optimizer.zero_grad(set_to_none=True)
            with unit.policy.using_adapter(unit.adapter):
                total, tokens = self._token_nll(unit, samples, indices, train=True)
            grad_norm = float(
                torch.nn.utils.clip_grad_norm_(unit.parameters, self.config.max_grad_norm or float("inf"))
            )
            unit.optimizer.step()
            unit.optimizer.zero_grad(set_to_none=True)
            unit.policy.model.eval()
            metrics[name] = {
                "nll": total / tokens,
                "tokens": float(tokens),
                "samples": float(len(indices)),
                "grad_norm": grad_norm,
            }
        return metrics

    @torch.no_grad()
    def nll(self, samples: Sequence[Turn]) -> dict[str, float]:
        """Mean reply-token NLL per unit (no update), and ``all``: over every token."""
        out: dict[str, float] = {}
        grand, count = 0.0, 0
        for name, indices in self._by_unit(samples).items():
            unit = self.units[name]
            with unit.policy.using_adapter(unit.adapter):
                total, tokens = self._token_nll(unit, samples, indices, train=False)
            out[name] = total / max(tokens, 1)
            grand, count = grand + total, count + tokens
        out["all"] = grand / max(count, 1)
        return out
