"""``--init``: a new run starts from another run's trained weights (a warm start from
``trainers.sft``, or an earlier training run): which checkpoint, whether it fits this run's
models, and copying its weights into the learner's units. Optimiser states and RNGs are not
taken (``trainers.run.checkpoint`` restores those when a run resumes)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import load_file

from trainers.errors import ConfigError
from trainers.run.checkpoint import UNIT_MODELS, find_checkpoint
from trainers.run.checkpoint_files import WEIGHTS

__all__ = ["init_checkpoint", "initialise_learner", "load_initial_weights", "trained_models", "unit_models"]


def trained_models(run_dir: Path) -> tuple[str, ...]:
    """The models run ``run_dir`` trained: its ``--model`` and its per-role ones (config.json)."""
    saved = json.loads((run_dir / "config.json").read_text())
    return tuple(dict.fromkeys((saved.get("model"), *(saved.get("role_model") or {}).values())))


def init_checkpoint(path: str | Path, *, models: Sequence[str]) -> Path:
    """The checkpoint ``--init path`` names, checked (cheaply, before any model loads) to
    come from a run that trained at least one of ``models`` (this run's).

    Raises:
        FileNotFoundError: ``path`` is no run or checkpoint.
        ValueError: The run trained none of them.
    """
    run_dir, checkpoint = find_checkpoint(path)
    trained = trained_models(run_dir)
    if not set(trained) & set(models):
        source = trained[0] if len(trained) == 1 else list(trained)
        this = models[0] if len(set(models)) == 1 else list(dict.fromkeys(models))
        raise ValueError(
            f"init={str(path)!r} was trained on model {source!r}, but this run uses model {this!r}; "
            f"pass --model {trained[0]} (weights only fit the model they were trained on)"
        )
    return checkpoint


def unit_models(checkpoint: Path) -> dict[str, str]:
    """Unit -> the model it trained, as the checkpoint's weights file records it (a run saved
    before it did: every unit on its config.json's ``--model``)."""
    with safe_open(str(checkpoint / WEIGHTS), "pt") as weights:
        recorded = (weights.metadata() or {}).get(UNIT_MODELS)
        if recorded is not None:
            return json.loads(recorded)
        units = {key.rpartition("/")[0] for key in weights.keys()}
    model = trained_models(checkpoint.parent.parent)[0]
    return dict.fromkeys(units, model)


def load_initial_weights(path: str | Path, learner: Any) -> tuple[Path, list[str]]:
    """Start a new run from another run's trained weights (``--init``): a warm start
    (``trainers.sft``) or an earlier training run, whole run directory or one checkpoint.

    Units are matched by name (same layout) and model; a source with a single unit on a model
    (one shared adapter or model) initialises every unit of the new run on that model, so one
    shared warm start can seed per-role adapters. A unit whose model the source never trained
    (``--model ROLE=NAME`` added a model) keeps its base weights. Optimiser state and RNGs are
    not taken: the new run starts fresh.

    Returns:
        The checkpoint directory the weights came from, and the units left at base weights.

    Raises:
        FileNotFoundError: ``path`` is no run or checkpoint.
        ValueError: Another base model, LoRA against full weights, another LoRA rank, or a
            layout with no weights for one of the new run's units; the message names the fix.
    """
    models = {name: _model_of(unit) for name, unit in learner.units.items()}
    checkpoint = init_checkpoint(path, models=tuple(models.values()))
    source_models = unit_models(checkpoint)
    by_unit: dict[str, dict[str, torch.Tensor]] = {}
    for key, tensor in load_file(str(checkpoint / WEIGHTS)).items():
        # A unit is named after its model, which may be a local path ("runs/x:shared"); parameter
        # names hold no "/", so the last one ends the unit's name.
        unit_name, _, parameter_name = key.rpartition("/")
        by_unit.setdefault(unit_name, {})[parameter_name] = tensor
    fresh: list[str] = []
    with torch.no_grad():
        for name, unit in learner.units.items():
            model = models[name]
            on_model = [source for source in by_unit if source_models.get(source) == model]
            if name in by_unit and source_models.get(name) != model:
                raise ValueError(
                    f"init={str(path)!r}: {name} trained model {source_models.get(name)!r} there but plays "
                    f"{model!r} here; give its roles the model it trained (--model ROLE=NAME)"
                )
            if not on_model:
                fresh.append(name)
                continue
            source = name if name in by_unit else (on_model[0] if len(on_model) == 1 else None)
            if source is None:
                raise ValueError(
                    f"init={str(path)!r} holds weights for {sorted(by_unit)}, none of them {name!r}; start "
                    "from a run with the same --policy and --team, or from a --policy shared warm start "
                    "(one set of weights that can seed every role)"
                )
            _copy_unit(path, unit, by_unit[source], source.rpartition(":")[2] if ":" in source else None)
    return checkpoint, fresh


def _model_of(unit: Any) -> str:
    return getattr(unit.policy, "model_id", unit.policy.name)


def _copy_unit(
    path: str | Path, unit: Any, saved: dict[str, torch.Tensor], source_adapter: str | None
) -> None:
    """Copy one source unit's tensors (``saved``: parameter name -> tensor; its adapter
    ``source_adapter``) into ``unit``, checked to be the same kind and shapes."""
    if (source_adapter is None) != (unit.adapter is None):
        kind = "LoRA adapters" if source_adapter else "full weights"
        flag = "--lora" if source_adapter else "--no-lora"
        raise ValueError(f"init={str(path)!r} holds {kind}; pass {flag} to start from them")
    names = {id(p): n for n, p in unit.policy.model.named_parameters()}
    for parameter in unit.parameters:
        key = names[id(parameter)]
        if unit.adapter is not None:
            key = key.replace(f".{unit.adapter}.", f".{source_adapter}.")
        tensor = saved.get(key)
        if tensor is None or tensor.shape != parameter.shape:
            found = None if tensor is None else tuple(tensor.shape)
            raise ValueError(
                f"init={str(path)!r}: parameter {key} is {found} there but {tuple(parameter.shape)} "
                "here; pass the --lora-rank / --lora-alpha the warm start used"
            )
        parameter.copy_(tensor.to(parameter.device, parameter.dtype))


def initialise_learner(learner: Any, init: str | Path) -> str:
    """``--init``: load another run's trained weights into ``learner`` (``load_initial_weights``),
    and make them the KL reference of full-weight units too; the line that says where they
    came from (and which units start from their base model).

    Raises:
        ConfigError: ``init`` is no usable run or checkpoint for this learner (the message
            names the fix).
    """
    try:
        source, fresh = load_initial_weights(init, learner)
    except (FileNotFoundError, ValueError) as err:
        raise ConfigError(str(err)) from None
    for unit in learner.units.values():
        if unit.reference is not None:  # LoRA units keep the base model (adapters off) as reference
            unit.reference.load_state_dict(unit.policy.model.state_dict())
    base = f"; {', '.join(fresh)}: base weights (that run trained none on this model)" if fresh else ""
    return f"init: weights from {source}{base}"
