"""``--init``: a new run starts from another run's trained weights (a warm start from
``trainers.sft``, or an earlier training run): which checkpoint, whether it fits this run's
models, and copying its weights into the learner's units, whose KL reference they become (on a
resumed run too). Optimiser states and RNGs are not taken (``trainers.run.checkpoint`` restores
those when a run resumes)."""

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

__all__ = [
    "init_checkpoint",
    "initial_unit_weights",
    "initialise_learner",
    "load_initial_weights",
    "set_kl_reference",
    "trained_models",
    "unit_models",
]


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
    checkpoint, fresh, initial = initial_unit_weights(path, learner)
    _copy_into_units(learner, initial)
    return checkpoint, fresh


def initial_unit_weights(
    path: str | Path, learner: Any
) -> tuple[Path, list[str], dict[str, list[torch.Tensor]]]:
    """``--init``'s weights for each unit of ``learner``, checked to fit, without touching the
    learner: the checkpoint they come from, the units the source has no weights for (they start
    from their base model), and unit -> tensors in the order of ``unit.parameters`` (on their
    device and dtype). Raises as ``load_initial_weights``."""
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
    initial: dict[str, list[torch.Tensor]] = {}
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
        adapter = source.rpartition(":")[2] if ":" in source else None
        initial[name] = _unit_tensors(path, unit, by_unit[source], adapter)
    return checkpoint, fresh, initial


def _copy_into_units(learner: Any, initial: dict[str, list[torch.Tensor]]) -> None:
    with torch.no_grad():
        for name, tensors in initial.items():
            for parameter, tensor in zip(learner.units[name].parameters, tensors, strict=True):
                parameter.copy_(tensor)


def _model_of(unit: Any) -> str:
    return getattr(unit.policy, "model_id", unit.policy.name)


def _unit_tensors(
    path: str | Path, unit: Any, saved: dict[str, torch.Tensor], source_adapter: str | None
) -> list[torch.Tensor]:
    """One source unit's tensors (``saved``: parameter name -> tensor; its adapter
    ``source_adapter``) in the order of ``unit.parameters``, checked to be the same kind and
    shapes."""
    if (source_adapter is None) != (unit.adapter is None):
        kind = "LoRA adapters" if source_adapter else "full weights"
        flag = "--lora" if source_adapter else "--no-lora"
        raise ValueError(f"init={str(path)!r} holds {kind}; pass {flag} to start from them")
    names = {id(p): n for n, p in unit.policy.model.named_parameters()}
    out = []
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
        out.append(tensor.to(parameter.device, parameter.dtype))
    return out


def initialise_learner(learner: Any, init: str | Path, *, resumed: bool = False) -> str:
    """``--init``: load another run's trained weights into ``learner`` and make them its units'
    KL reference (``set_kl_reference``); the line that says where they came from (and which
    units start from their base model). A ``resumed`` run takes its weights from its own
    checkpoint: only the reference is set, so that its KL term is the uninterrupted run's.

    Raises:
        ConfigError: ``init`` is no usable run or checkpoint for this learner (the message
            names the fix).
    """
    try:
        source, fresh, initial = initial_unit_weights(init, learner)
    except (FileNotFoundError, ValueError) as err:
        raise ConfigError(str(err)) from None
    if not resumed:
        _copy_into_units(learner, initial)
    set_kl_reference(learner, initial)
    base = f"; {', '.join(fresh)}: base weights (that run trained none on this model)" if fresh else ""
    what = "KL reference" if resumed else "weights"
    return f"init: {what} from {source}{base}"


def set_kl_reference(learner: Any, initial: dict[str, list[torch.Tensor]]) -> None:
    """Make the ``--init`` weights (``initial_unit_weights``) the KL reference (``--kl-coef``:
    the term pulls toward the policy the run started from, not toward the base model the warm
    start left behind). A full-weight unit's reference is its frozen copy; a LoRA unit's is its
    adapter holding these tensors (``TrainUnit.reference_adapter``). Units the source has no
    weights for keep their base model as reference, which is where they start."""
    for name, tensors in initial.items():
        unit = learner.units[name]
        if unit.adapter is not None:
            unit.reference_adapter = [tensor.detach().clone() for tensor in tensors]
        elif unit.reference is not None:  # None: no KL term, no frozen copy to keep
            names = {id(p): n for n, p in unit.policy.model.named_parameters()}
            frozen = dict(unit.reference.named_parameters())
            with torch.no_grad():
                for parameter, tensor in zip(unit.parameters, tensors, strict=True):
                    frozen[names[id(parameter)]].copy_(tensor)
