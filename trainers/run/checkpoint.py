"""Atomic, pickle-free training checkpoints: trainable weights, optimiser states, RNG states
and step, each checkpoint sealed by a manifest so that a broken one is noticed and skipped.
What the files of ``<run dir>/checkpoints/step_<N>/`` hold and how they are encoded:
``trainers.run.checkpoint_files``.

Saving writes a temporary sibling directory (``.tmp-step_<N>-<pid>``, always ignored), fsyncs
every file, then writes and fsyncs the manifest, and renames the directory into place. A run
killed at any moment leaves either the previous checkpoints or the new one complete.

Loading (``resume_checkpoint`` for ``--resume``, ``latest_checkpoint``, ``load_checkpoint``)
verifies the manifest and loads every file. If the newest checkpoint is broken (no or a
mismatched manifest, a truncated, empty or missing file, a file that does not parse), a
``RuntimeWarning`` names the directory and the reason and the next newest intact checkpoint is
used; saving keeps the newest ``keep`` (default 2) complete checkpoints so that there is one to
fall back to. With checkpoints but none intact, ``resume_checkpoint`` raises ``ConfigError``
naming the run and what to do.

The old format (``optimizer.pt`` and ``rng.pt``, no manifest) needs pickle, which can run any
code a file carries, so it is never loaded for resuming: such a run cannot be resumed (start
afresh, or start a new run from its weights with ``--init``). Its ``weights.safetensors``
still serves weights-only uses (evaluating the run, ``--init``), which need no pickle.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from trainers.errors import ConfigError
from trainers.run.checkpoint_files import (
    FILES,
    LEGACY_REASON,
    MANIFEST,
    STATE,
    WEIGHTS,
    CheckpointError,
    fsync_dir,
    fsync_file,
    is_legacy,
    load_part,
    read_tree,
    verify_manifest,
    write_manifest,
    write_tree,
)

__all__ = [
    "CheckpointError",
    "save_checkpoint",
    "load_checkpoint",
    "load_weights",
    "find_checkpoint",
    "latest_checkpoint",
    "checkpoint_step",
    "checkpoint_dir",
    "resume_checkpoint",
    "list_checkpoints",
    "unit_models_of",
    "unit_tensors",
    "UNIT_MODELS",
]

_PREFIX = "step_"
UNIT_MODELS = "unit_models"  # the weights file's metadata key: {unit: model}
_TMP = ".tmp-"


def checkpoint_dir(run_dir: Path, step: int) -> Path:
    """Where step ``step``'s checkpoint of ``run_dir`` lives (``checkpoints/step_<N>``)."""
    return run_dir / "checkpoints" / f"{_PREFIX}{step:06d}"


def unit_models_of(learner: Any) -> dict[str, str]:
    """Unit -> the model it trains (``HFPolicy.model_id``), kept in the weights file's metadata
    (``UNIT_MODELS``) so that ``--init`` matches a team of several models unit by unit."""
    return {name: getattr(unit.policy, "model_id", unit.policy.name) for name, unit in learner.units.items()}


def unit_tensors(learner: Any) -> dict[str, torch.Tensor]:
    """``"<unit>/<parameter name>" -> tensor`` for every trainable parameter of every unit."""
    tensors: dict[str, torch.Tensor] = {}
    for name, unit in learner.units.items():
        names = {id(p): n for n, p in unit.policy.model.named_parameters()}
        for parameter in unit.parameters:
            tensors[f"{name}/{names[id(parameter)]}"] = parameter.detach().cpu().contiguous()
    return tensors


# --- RNG states ------------------------------------------------------------------------------


def _rng_states() -> dict[str, Any]:
    numpy_state = np.random.get_state(legacy=False)
    # The MT19937 key is a uint32 array: a list of ints in JSON (exact), an array again on load.
    numpy_state["state"] = {**numpy_state["state"], "key": numpy_state["state"]["key"].tolist()}
    return {"python": random.getstate(), "numpy": numpy_state, "torch": torch.get_rng_state()}


def _numpy_state(saved: Mapping[str, Any]) -> dict[str, Any]:
    return {**saved, "state": {**saved["state"], "key": np.asarray(saved["state"]["key"], dtype=np.uint32)}}


def _check_rng(rng: Mapping[str, Any]) -> None:
    """Set the states on private generators: a bad state fails here, before any global changes."""
    random.Random().setstate(rng["python"])
    np.random.RandomState().set_state(_numpy_state(rng["numpy"]))
    torch.Generator().set_state(rng["torch"])


def _set_rng(rng: Mapping[str, Any]) -> None:
    random.setstate(rng["python"])
    np.random.set_state(_numpy_state(rng["numpy"]))
    torch.set_rng_state(rng["torch"])


# --- saving ----------------------------------------------------------------------------------


def save_checkpoint(
    run_dir: str | Path, step: int, learner: Any, state: Mapping[str, Any], keep: int = 2
) -> Path:
    """Write ``checkpoints/step_<step>`` atomically and keep only the newest ``keep``.

    Args:
        run_dir: The run directory.
        step: Completed training steps.
        learner: A ``trainers.learner.Learner`` (its units' parameters and optimisers).
        state: JSON-serialisable trainer state stored in ``state.json`` (plus ``step``).
        keep: How many complete checkpoints to keep (older ones are deleted after the new one
            is complete); at least 1. With 2 or more there is an older one to fall back to
            when the newest turns out broken.

    Raises:
        TypeError: An optimiser state entry is neither a tensor nor plain data (it would
            need pickle).
    """

    run_dir = Path(run_dir)
    final = checkpoint_dir(run_dir, step)
    tmp = final.with_name(f"{_TMP}{final.name}-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    models = {UNIT_MODELS: json.dumps(unit_models_of(learner))}
    save_file(unit_tensors(learner), str(tmp / WEIGHTS), metadata=models)
    write_tree(tmp, "optimizer", {name: unit.optimizer.state_dict() for name, unit in learner.units.items()})
    write_tree(tmp, "rng", _rng_states())
    (tmp / STATE).write_text(json.dumps({**state, "step": step}, indent=2))
    for name in FILES:
        fsync_file(tmp / name)
    # The manifest last, once everything it vouches for is on disk: a manifest that matches
    # means the checkpoint is whole.
    write_manifest(tmp)
    fsync_file(tmp / MANIFEST)
    fsync_dir(tmp)
    if final.exists():  # a redone step after resume: replace the old one
        shutil.rmtree(final)
    os.replace(tmp, final)
    fsync_dir(final.parent)
    _prune(run_dir, step, keep)
    return final


def _prune(run_dir: Path, step: int, keep: int) -> None:
    """Keep the newest ``keep`` complete checkpoints up to ``step``; delete the rest.

    Complete means the save finished (a manifest): a checkpoint that lost its manifest does
    not count, so the one to fall back to survives. Checkpoints after ``step`` are left from
    the attempt a resume fell back from (broken, or the run would have resumed from them):
    the run redoes those steps, so they go too.
    """
    checkpoints = list_checkpoints(run_dir)
    complete = [p for p in checkpoints if checkpoint_step(p) <= step and (p / MANIFEST).is_file()]
    kept = set(complete[-max(1, keep) :])
    for old in checkpoints:
        if old not in kept:
            shutil.rmtree(old, ignore_errors=True)


# --- finding and checking checkpoints --------------------------------------------------------


def checkpoint_step(path: Path) -> int:
    """The training step a checkpoint directory (``step_<N>``) holds."""
    return int(path.name[len(_PREFIX) :])


def list_checkpoints(run_dir: str | Path) -> list[Path]:
    """A run's checkpoint directories, oldest first: those renamed into place (not the
    temporary ones of an unfinished save), intact or not."""
    root = Path(run_dir) / "checkpoints"
    if not root.is_dir():
        return []
    found = [
        p
        for p in root.iterdir()
        if p.is_dir() and p.name.startswith(_PREFIX) and p.name[len(_PREFIX) :].isdigit()
    ]
    return sorted(found, key=checkpoint_step)


def _read_state(path: Path) -> dict[str, Any]:
    state = load_part(path / STATE, lambda p: json.loads(p.read_text()))
    if not isinstance(state, dict) or not isinstance(state.get("step"), int):
        raise CheckpointError(f"{STATE} holds no integer step")
    return state


def _check_legacy(path: Path) -> None:
    """An old-format checkpoint's weights and step are readable (its pickles stay unopened)."""

    def header(file: Path) -> None:
        with safe_open(str(file), "pt") as weights:  # checks the header covers the whole file
            weights.keys()

    load_part(path / WEIGHTS, header)
    _read_state(path)


def _problem(path: Path, full: bool) -> str | None:
    """Why checkpoint ``path`` cannot be used, or ``None``: all of it for resuming, or only
    its weights and step (evaluation, ``--init``), which an old-format checkpoint still has."""
    try:
        if full:
            _read(path)
        elif is_legacy(path):
            _check_legacy(path)
        else:
            verify_manifest(path, (WEIGHTS, STATE))
    except CheckpointError as err:
        return str(err)
    return None


def _scan(run_dir: str | Path, full: bool) -> tuple[Path | None, dict[Path, str]]:
    """The newest usable checkpoint (or ``None``) and why each newer one is not, warning
    about each of those as it is skipped."""
    problems: dict[Path, str] = {}
    for path in reversed(list_checkpoints(run_dir)):
        problem = _problem(path, full)
        if problem is None:
            return path, problems
        problems[path] = problem
        warnings.warn(
            f"checkpoint {path} is broken, falling back to an older one: {problem}",
            RuntimeWarning,
            stacklevel=3,
        )
    return None, problems


def latest_checkpoint(run_dir: str | Path, *, weights_only: bool = False) -> Path | None:
    """The newest intact checkpoint, or ``None``; each newer broken one is skipped with a
    ``RuntimeWarning`` that names it and says why.

    Args:
        run_dir: The run directory.
        weights_only: Only its weights and step are needed (evaluation, ``--init``): the
            optimiser and RNG files are not checked, and an old-format checkpoint will do.
    """
    return _scan(run_dir, full=not weights_only)[0]


def resume_checkpoint(run_dir: str | Path) -> Path | None:
    """The checkpoint ``--resume`` continues from: the newest intact one, warning about each
    newer broken one; ``None`` when the run has no checkpoint yet (it restarts at step 0).

    Raises:
        ConfigError: The run has checkpoints but none is intact, or only old-format ones
            (they need pickle); the message names the run and what to do.
    """
    found, problems = _scan(run_dir, full=True)
    if found is not None or not problems:
        return found
    if all(is_legacy(path) for path in problems):
        raise ConfigError(
            f"run {run_dir} cannot be resumed: its checkpoints are in the {LEGACY_REASON}. Start it "
            f"afresh (the same command without --resume), or start a new run from its trained weights "
            f"with --init {run_dir} (they are safetensors, no pickle)"
        )
    reasons = "; ".join(f"{path.name}: {problem}" for path, problem in problems.items())
    raise ConfigError(
        f"run {run_dir} has no intact checkpoint to resume from ({reasons}). Start the run afresh "
        f"(the same command without --resume), after deleting {run_dir} if you no longer need it"
    )


def find_checkpoint(path: str | Path) -> tuple[Path, Path]:
    """``(run dir, checkpoint dir)`` for a run directory (its newest intact checkpoint) or for
    one checkpoint directory (``<run dir>/checkpoints/step_<N>``), for weights-only use.

    Raises:
        FileNotFoundError: ``path`` is neither, or the run has no checkpoint yet; the message
            says what was expected there.
        ConfigError: The checkpoint (or every checkpoint of the run) is broken.
    """
    path = Path(path).expanduser()
    if path.is_dir() and path.parent.name == "checkpoints" and path.name.startswith(_PREFIX):
        problem = _problem(path, full=False)
        if problem is not None:
            raise CheckpointError(
                f"checkpoint {path} is broken: {problem}; pass its run directory to use the newest intact one"
            )
        return path.parent.parent, path
    if (path / "config.json").is_file():
        checkpoint, problems = _scan(path, full=False)
        if checkpoint is None and problems:
            raise CheckpointError(f"run {path} has no intact checkpoint ({'; '.join(problems.values())})")
        if checkpoint is None:
            raise FileNotFoundError(
                f"run {path} has no complete checkpoint yet (checkpoints/step_<N>/); "
                "train it for at least one step first"
            )
        return path, checkpoint
    raise FileNotFoundError(
        f"{path} is not a training run (no config.json) nor one of its checkpoints "
        "(checkpoints/step_<N>/); pass the run directory python -m trainers.at_grpo printed"
    )


# --- loading ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Contents:
    """Everything a checkpoint holds, read and checked, not yet applied to a learner."""

    weights: dict[str, torch.Tensor]
    optimizers: dict[str, Any]
    rng: dict[str, Any]
    state: dict[str, Any]


def _read(path: Path) -> _Contents:
    """Read checkpoint ``path`` whole, verified against its manifest.

    Raises:
        CheckpointError: Anything that keeps it from loading; the message names the file.
    """

    verify_manifest(path)
    state = _read_state(path)
    weights = load_part(path / WEIGHTS, lambda p: load_file(str(p)))
    optimizers = read_tree(path, "optimizer")
    if not isinstance(optimizers, dict):
        raise CheckpointError("optimizer.json holds no per-unit optimiser states")
    rng = read_tree(path, "rng")
    load_part(path / "rng.json", lambda _: _check_rng(rng))
    return _Contents(weights, optimizers, rng, state)


def _copy_weights(saved: Mapping[str, torch.Tensor], learner: Any, path: Path) -> None:
    """Copy ``saved`` (``"<unit>/<parameter name>" -> tensor``) into the learner's units."""
    current = unit_tensors(learner)
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


def load_weights(path: str | Path, learner: Any) -> None:
    """Copy the trained parameters of checkpoint ``path`` into the learner's units (weights
    only: what evaluation needs; :func:`load_checkpoint` also restores optimisers and RNGs).

    Raises:
        ValueError: The checkpoint does not match the learner (other units or parameters);
            the message names what differs.
    """

    path = Path(path)
    _copy_weights(load_file(str(path / WEIGHTS)), learner, path)


def load_checkpoint(path: str | Path, learner: Any) -> dict[str, Any]:
    """Restore the learner's parameters and optimisers and the global RNGs from ``path``.

    The whole checkpoint is read and checked first, so a broken one changes nothing.

    Returns:
        The ``state.json`` contents (``step`` included).

    Raises:
        CheckpointError: The checkpoint is broken or of the old pickle format (a
            ``ConfigError``); :func:`resume_checkpoint` picks one that is not.
        ValueError: The checkpoint does not match the learner (other units or parameters);
            the message names what differs.
    """
    path = Path(path)
    contents = _read(path)
    if set(contents.optimizers) != set(learner.units):
        raise ValueError(
            f"checkpoint {path} holds optimiser states of {sorted(contents.optimizers)}, this run trains "
            f"{sorted(learner.units)}; load it into the team its run trained (the run's config.json)"
        )
    _copy_weights(contents.weights, learner, path)
    for name, unit in learner.units.items():
        unit.optimizer.load_state_dict(contents.optimizers[name])
    _set_rng(contents.rng)
    return contents.state
