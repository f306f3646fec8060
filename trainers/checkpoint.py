"""Atomic training checkpoints: trainable weights, optimiser states, RNG states and step.

Layout of ``<run dir>/checkpoints/step_<N>/``:

* ``weights.safetensors``: every learner unit's trainable parameters, keyed
  ``"<unit name>/<parameter name>"`` (the LoRA parameters of an adapter unit, all
  parameters of a full-model unit);
* ``optimizer.pt``: each unit's optimiser ``state_dict``;
* ``rng.pt``: Python, NumPy and torch global RNG states;
* ``state.json``: the step and whatever the trainer adds (its written last, so a
  directory with ``state.json`` is complete).

A checkpoint is written into a temporary sibling directory, fsynced, then renamed into
place, so a run killed at any moment leaves either the previous checkpoint or the new one,
never a half-written one. ``latest_checkpoint`` ignores temporary directories.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

__all__ = [
    "save_checkpoint",
    "load_checkpoint",
    "load_weights",
    "load_initial_weights",
    "init_checkpoint",
    "find_checkpoint",
    "latest_checkpoint",
    "list_checkpoints",
]

_PREFIX = "step_"
_TMP = ".tmp-"


def _checkpoint_dir(run_dir: Path, step: int) -> Path:
    return run_dir / "checkpoints" / f"{_PREFIX}{step:06d}"


def _unit_tensors(learner: Any) -> dict[str, torch.Tensor]:
    """``"<unit>/<parameter name>" -> tensor`` for every trainable parameter of every unit."""
    tensors: dict[str, torch.Tensor] = {}
    for name, unit in learner.units.items():
        names = {id(p): n for n, p in unit.policy.model.named_parameters()}
        for parameter in unit.parameters:
            tensors[f"{name}/{names[id(parameter)]}"] = parameter.detach().cpu().contiguous()
    return tensors


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_file(path: Path) -> None:
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def save_checkpoint(
    run_dir: str | Path, step: int, learner: Any, state: Mapping[str, Any], keep: int = 2
) -> Path:
    """Write ``checkpoints/step_<step>`` atomically and keep only the newest ``keep``.

    Args:
        run_dir: The run directory.
        step: Completed training steps.
        learner: A ``trainers.learner.Learner`` (its units' parameters and optimisers).
        state: JSON-serialisable trainer state stored in ``state.json`` (plus ``step``).
        keep: How many checkpoints to keep (older ones are deleted after the new one is
            complete); at least 1.
    """
    from safetensors.torch import save_file

    run_dir = Path(run_dir)
    final = _checkpoint_dir(run_dir, step)
    tmp = final.with_name(f"{_TMP}{final.name}-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    save_file(_unit_tensors(learner), str(tmp / "weights.safetensors"))
    torch.save(
        {name: unit.optimizer.state_dict() for name, unit in learner.units.items()}, tmp / "optimizer.pt"
    )
    torch.save(
        {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()},
        tmp / "rng.pt",
    )
    (tmp / "state.json").write_text(json.dumps({**state, "step": step}, indent=2))
    for child in tmp.iterdir():
        _fsync_file(child)
    _fsync_dir(tmp)
    if final.exists():  # a redone step after resume: replace the old one
        shutil.rmtree(final)
    os.replace(tmp, final)
    _fsync_dir(final.parent)
    for old in list_checkpoints(run_dir)[: -max(1, keep)]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def list_checkpoints(run_dir: str | Path) -> list[Path]:
    """Complete checkpoints of a run, oldest first."""
    root = Path(run_dir) / "checkpoints"
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if p.name.startswith(_PREFIX) and (p / "state.json").is_file()]
    return sorted(found, key=lambda p: int(p.name[len(_PREFIX) :]))


def find_checkpoint(path: str | Path) -> tuple[Path, Path]:
    """``(run dir, checkpoint dir)`` for a run directory (its newest complete checkpoint) or
    for one checkpoint directory (``<run dir>/checkpoints/step_<N>``).

    Raises:
        FileNotFoundError: ``path`` is neither, or the run has no complete checkpoint yet;
            the message says what was expected there.
    """
    path = Path(path).expanduser()
    if (path / "state.json").is_file() and path.parent.name == "checkpoints":
        return path.parent.parent, path
    if (path / "config.json").is_file():
        checkpoint = latest_checkpoint(path)
        if checkpoint is None:
            raise FileNotFoundError(
                f"run {path} has no complete checkpoint yet (checkpoints/step_<N>/state.json); "
                "train it for at least one step first"
            )
        return path, checkpoint
    raise FileNotFoundError(
        f"{path} is not a training run (no config.json) nor one of its checkpoints "
        "(checkpoints/step_<N>/ with state.json); pass the run directory python -m trainers.at_grpo printed"
    )


def latest_checkpoint(run_dir: str | Path) -> Path | None:
    """The newest complete checkpoint, or ``None``."""
    checkpoints = list_checkpoints(run_dir)
    return checkpoints[-1] if checkpoints else None


def load_weights(path: str | Path, learner: Any) -> None:
    """Copy the trained parameters of checkpoint ``path`` into the learner's units (weights
    only: what evaluation needs; :func:`load_checkpoint` also restores optimisers and RNGs).

    Raises:
        ValueError: The checkpoint does not match the learner (other units or parameters);
            the message names what differs.
    """
    from safetensors.torch import load_file

    path = Path(path)
    saved = load_file(str(path / "weights.safetensors"))
    current = _unit_tensors(learner)
    if set(saved) != set(current):
        missing, unexpected = sorted(set(current) - set(saved)), sorted(set(saved) - set(current))
        raise ValueError(
            f"checkpoint {path} does not match this run's model: missing {missing[:3]}, unexpected "
            f"{unexpected[:3]}; load it into the team its run trained (the run's config.json)"
        )
    with torch.no_grad():
        for name, unit in learner.units.items():
            names = {id(p): n for n, p in unit.policy.model.named_parameters()}
            for parameter in unit.parameters:
                parameter.copy_(saved[f"{name}/{names[id(parameter)]}"].to(parameter.device))


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
    from safetensors.torch import load_file

    checkpoint = init_checkpoint(path, model=model)
    by_unit: dict[str, dict[str, torch.Tensor]] = {}
    for key, tensor in load_file(str(checkpoint / "weights.safetensors")).items():
        unit_name, _, parameter_name = key.partition("/")
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


def load_checkpoint(path: str | Path, learner: Any) -> dict[str, Any]:
    """Restore the learner's parameters and optimisers and the global RNGs from ``path``.

    Returns:
        The ``state.json`` contents (``step`` included).

    Raises:
        ValueError: The checkpoint does not match the learner (other units or parameters);
            the message names what differs.
    """
    path = Path(path)
    load_weights(path, learner)
    optimizers = torch.load(path / "optimizer.pt", weights_only=False)
    for name, unit in learner.units.items():
        unit.optimizer.load_state_dict(optimizers[name])
    rng = torch.load(path / "rng.pt", weights_only=False)
    random.setstate(rng["python"])
    np.random.set_state(rng["numpy"])
    torch.set_rng_state(rng["torch"])
    return json.loads((path / "state.json").read_text())
