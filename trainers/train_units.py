"""The learner's units: what one optimiser trains (a whole model, or one role's LoRA adapter),
found from a ``Team``'s bindings and named like ``Turn.policy``."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from agents.base import ServedPolicy
from agents.hf import HFPolicy
from agents.team import Team
from trainers.learner_config import LearnerConfig

__all__ = ["TrainUnit", "holding", "units_from_team"]


@dataclass
class TrainUnit:
    """One optimiser's worth of parameters: a model, or one adapter of a model."""

    name: str
    policy: HFPolicy
    adapter: str | None
    parameters: list[torch.nn.Parameter]
    optimizer: torch.optim.Optimizer
    # The KL term's reference (--kl-coef): a full-weight unit's frozen copy of its starting
    # weights; a LoRA unit's adapter tensors to start from (--init's, in the order of
    # ``parameters``; None: the base model with adapters off, where a fresh adapter starts).
    reference: Any = None
    reference_adapter: list[torch.Tensor] | None = None


def units_from_team(team: Team, config: LearnerConfig) -> dict[str, TrainUnit]:
    units: dict[str, TrainUnit] = {}
    frozen = {binding.policy_id for binding in team.bindings.values() if not binding.trains}
    for binding in team.bindings.values():
        if not binding.trains:
            continue  # a frozen role: plays, never trains (its turns are not routed to any unit)
        if binding.policy_id in frozen:
            raise ValueError(
                f"{binding.policy_id!r} plays a frozen role and a trained one; give the frozen role its own "
                "policy (trainers.teams.build_team does) so that its turns stay out of the loss"
            )
        # A served policy (agents.vllm.VLLMPolicy) samples with an engine and is trained
        # through its HF copy, ``.trainable``; the trainer syncs the engine after each step.
        served = isinstance(binding.policy, ServedPolicy)
        policy, adapter = (binding.policy.trainable if served else binding.policy), binding.adapter
        if not isinstance(policy, HFPolicy):
            continue  # scripted policies have nothing to train
        name = binding.policy_id
        if name in units:
            if units[name].policy is not policy:  # samples are routed to units by this name
                raise ValueError(
                    f"two different policies are both named {policy.name!r}; samples could not tell them "
                    "apart. Name each per-role model: HFPolicy(..., name='planner-model')"
                )
            continue
        if adapter is None and policy.adapter_names:
            raise ValueError(
                f"role bound to {policy.name!r} without an adapter, but that policy has adapters "
                f"{list(policy.adapter_names)}; bind each role to its adapter (Team.per_role)"
            )
        if adapter is None:
            parameters = list(policy.model.parameters())
            reference = _frozen_copy(policy.model) if config.kl_coef > 0 else None
        else:
            parameters = [
                p for n, p in policy.model.named_parameters() if "lora_" in n and f".{adapter}." in n
            ]
            reference = None  # a fresh adapter starts at the base model: adapters off
        for parameter in parameters:
            parameter.requires_grad_(True)
        optimizer = torch.optim.AdamW(parameters, lr=config.lr, weight_decay=config.weight_decay)
        units[name] = TrainUnit(name, policy, adapter, parameters, optimizer, reference)
    if not units:
        raise ValueError("the team has no trainable policy (only scripted ones); bind an HFPolicy to a role")
    return units


def _frozen_copy(model: torch.nn.Module) -> torch.nn.Module:
    reference = copy.deepcopy(model).eval()
    for parameter in reference.parameters():
        parameter.requires_grad_(False)
    return reference


@contextmanager
def holding(parameters: Sequence[torch.nn.Parameter], values: Sequence[torch.Tensor]) -> Iterator[None]:
    """``parameters`` hold ``values`` (their storage, not a copy) inside the block, their own after."""
    kept = [parameter.data for parameter in parameters]
    try:
        for parameter, value in zip(parameters, values, strict=True):
            parameter.data = value
        yield
    finally:
        for parameter, data in zip(parameters, kept, strict=True):
            parameter.data = data
