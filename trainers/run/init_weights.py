"""``--init``: a new run starts from another run's trained weights (a warm start from
``trainers.sft``, or an earlier training run): which checkpoint, whether it fits this run's
models, and copying its weights into the learner's units. Optimiser states and RNGs are not
taken (``trainers.run.checkpoint`` restores those when a run resumes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

from trainers.errors import ConfigError
from trainers.run.checkpoint import find_checkpoint

__all__ = ["init_checkpoint", "initialise_learner", "load_initial_weights"]


def init_checkpoint(path: str | Path, *, model: str) -> Path:
    """The checkpoint ``--init path`` names, checked (cheaply, before any model loads) to
    come from a run on ``model``.

    Raises:
        FileNotFoundError: ``path`` is no run or checkpoint.
        ValueError: The run trained another base model.
    """
    run_dir, checkpoint = find_checkpoint(path)
    source_model = json.loads((run_dir / "config.json").read_text()).get("model")
    if source_model != model:
        raise ValueError(
            f"init={str(path)!r} was trained on model {source_model!r}, but this run uses model {model!r}; "
            f"pass --model {source_model} (weights only fit the model they were trained on)"
        )
    return checkpoint


def load_initial_weights(path: str | Path, learner: Any, *, model: str) -> Path:
    """Start a new run from another run's trained weights (``--init``): a warm start
    (``trainers.sft``) or an earlier training run, whole run directory or one checkpoint.

    Units are matched by name (same layout); a source with a single unit (one shared
    adapter or model) initialises every unit of the new run, so one shared warm start can
    seed per-role adapters. Optimiser state and RNGs are not taken: the new run starts fresh.

    Returns:
        The checkpoint directory the weights came from.

    Raises:
        FileNotFoundError: ``path`` is no run or checkpoint.
        ValueError: Another base model, LoRA against full weights, another LoRA rank, or a
            layout with no weights for one of the new run's units; the message names the fix.
    """

    checkpoint = init_checkpoint(path, model=model)
    by_unit: dict[str, dict[str, torch.Tensor]] = {}
    for key, tensor in load_file(str(checkpoint / "weights.safetensors")).items():
        # A unit is named after its model, which may be a local path ("runs/x:shared"); parameter
        # names hold no "/", so the last one ends the unit's name.
        unit_name, _, parameter_name = key.rpartition("/")
        by_unit.setdefault(unit_name, {})[parameter_name] = tensor
    with torch.no_grad():
        for name, unit in learner.units.items():
            source = name if name in by_unit else (next(iter(by_unit)) if len(by_unit) == 1 else None)
            if source is None:
                raise ValueError(
                    f"init={str(path)!r} holds weights for {sorted(by_unit)}, none of them {name!r}; start "
                    "from a run with the same --policy and --team, or from a --policy shared warm start "
                    "(one set of weights that can seed every role)"
                )
            source_adapter = source.partition(":")[2] or None
            if (source_adapter is None) != (unit.adapter is None):
                kind = "LoRA adapters" if source_adapter else "full weights"
                flag = "--lora" if source_adapter else "--no-lora"
                raise ValueError(f"init={str(path)!r} holds {kind}; pass {flag} to start from them")
            names = {id(p): n for n, p in unit.policy.model.named_parameters()}
            for parameter in unit.parameters:
                key = names[id(parameter)]
                if unit.adapter is not None:
                    key = key.replace(f".{unit.adapter}.", f".{source_adapter}.")
                saved = by_unit[source].get(key)
                if saved is None or saved.shape != parameter.shape:
                    found = None if saved is None else tuple(saved.shape)
                    raise ValueError(
                        f"init={str(path)!r}: parameter {key} is {found} there but {tuple(parameter.shape)} "
                        "here; pass the --lora-rank / --lora-alpha the warm start used"
                    )
                parameter.copy_(saved.to(parameter.device, parameter.dtype))
    return checkpoint


def initialise_learner(learner: Any, init: str | Path, *, model: str) -> str:
    """``--init``: load another run's trained weights into ``learner`` (``load_initial_weights``),
    and make them the KL reference of full-weight units too; the line that says where they
    came from.

    Raises:
        ConfigError: ``init`` is no usable run or checkpoint for this learner (the message
            names the fix).
    """
    try:
        source = load_initial_weights(init, learner, model=model)
    except (FileNotFoundError, ValueError) as err:
        raise ConfigError(str(err)) from None
    for unit in learner.units.values():
        if unit.reference is not None:  # LoRA units keep the base model (adapters off) as reference
            unit.reference.load_state_dict(unit.policy.model.state_dict())
    return f"init: weights from {source}"
