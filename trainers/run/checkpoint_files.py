"""The files of one training checkpoint: how optimiser and RNG states become pickle-free
files, and the manifest that proves a checkpoint directory whole.

Layout of ``<run dir>/checkpoints/step_<N>/`` (tensors in safetensors, the rest in JSON;
nothing is unpickled, so loading a run directory someone else made runs none of its code):

* ``weights.safetensors``: every learner unit's trainable parameters, keyed
  ``"<unit name>/<parameter name>"`` (the LoRA parameters of an adapter unit, all
  parameters of a full-model unit); its metadata ``unit_models`` (JSON) names the model each
  unit trains, so ``--init`` matches a team of several models unit by unit;
* ``optimizer.safetensors`` + ``optimizer.json``: each unit's optimiser ``state_dict``. The
  tensors (AdamW's moments and its 0-dim ``step`` counters) are in the safetensors file under
  their path in the state dict, e.g. ``"<unit name>/state/<param index>/exp_avg"``; the JSON
  holds the rest (``param_groups``, plain state entries) with ``{"__tensor__": "<path>"}`` in
  each tensor's place, ``{"__tuple__": [...]}`` for tuples and ``{"__items__": [[key, value],
  ...]}`` for dicts with non-string keys, so the reloaded ``state_dict`` is identical (types,
  dtypes and all);
* ``rng.safetensors`` + ``rng.json``: the global RNG states in the same encoding: Python's
  ``random.getstate()``, NumPy's ``np.random.get_state(legacy=False)`` (its uint32 key as a
  list of ints) and torch's CPU generator state (a uint8 tensor);
* ``state.json``: the step and whatever the trainer adds;
* ``manifest.json``: the size and SHA-256 of each file above; written last.

When to write, which checkpoint to trust and how a run resumes: ``trainers.run.checkpoint``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save, save_file

from trainers.errors import ConfigError

__all__ = [
    "CheckpointError", "FILES", "LEGACY_REASON", "MANIFEST", "STATE", "WEIGHTS", "fsync_dir", "fsync_file",
    "is_legacy", "load_part", "read_tree", "verify_manifest", "weights_file_checksum", "write_manifest",
    "write_tree",
]  # fmt: skip

MANIFEST = "manifest.json"
_FORMAT = 1
WEIGHTS = "weights.safetensors"
STATE = "state.json"
# Every file of a checkpoint but the manifest; all of them are in the manifest.
FILES = (WEIGHTS, "optimizer.safetensors", "optimizer.json", "rng.safetensors", "rng.json", STATE)
_LEGACY_FILES = ("optimizer.pt", "rng.pt")  # the old format's pickles: never opened
_TENSOR, _TUPLE, _ITEMS = "__tensor__", "__tuple__", "__items__"
_TAGS = (_TENSOR, _TUPLE, _ITEMS)
LEGACY_REASON = (
    "old checkpoint format (optimizer.pt, rng.pt): it needs pickle to load, and unpickling can run "
    "any code the file carries, so it is no longer loaded"
)


class CheckpointError(ConfigError):
    """A checkpoint directory is broken or of the old pickle format; the message says why."""


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_file(path: Path) -> None:
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def weights_file_checksum(path: Path) -> str:
    """A short checksum of the trained weights in a ``weights.safetensors`` file: the SHA-256 of
    its tensors serialised alone, without the file's metadata.

    Results files key step-0 evaluations and name checkpoints by it. Metadata (``unit_models``,
    added after some results were recorded) says nothing about the weights, so it stays out:
    the same weights give the same checksum whatever the saving code wrote beside them, and a
    checksum recorded from a file without metadata (the file's own SHA-256) still matches."""
    return hashlib.sha256(save(load_file(str(path)))).hexdigest()[:16]


# --- tensors + plain data: the encoding of optimiser and RNG states -------------------------


def _child(key: str, part: Any) -> str:
    return f"{key}/{part}" if key else str(part)


def _encode(value: Any, key: str, tensors: dict[str, torch.Tensor]) -> Any:
    """JSON-able form of ``value``; its tensors go into ``tensors`` under their path ``key``.

    JSON alone would turn tuples into lists and int dict keys into strings, which
    ``load_state_dict`` and ``random.setstate`` do not all forgive, so both are tagged.
    """
    if isinstance(value, torch.Tensor):
        if key in tensors:
            raise ValueError(f"two tensors of a checkpoint would share the key {key!r}")
        tensors[key] = value.detach().cpu().contiguous()
        return {_TENSOR: key}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, tuple):
        return {_TUPLE: [_encode(v, _child(key, i), tensors) for i, v in enumerate(value)]}
    if isinstance(value, list):
        return [_encode(v, _child(key, i), tensors) for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        if all(isinstance(k, str) and k not in _TAGS for k in value):
            return {k: _encode(v, _child(key, k), tensors) for k, v in value.items()}
        pairs = [[_encode(k, "", {}), _encode(v, _child(key, k), tensors)] for k, v in value.items()]
        return {_ITEMS: pairs}
    # Fail at save time, not at resume time: anything else would need pickle.
    raise TypeError(f"checkpoint entry {key!r} is a {type(value).__name__}: only tensors and plain data")


def _decode(value: Any, tensors: Mapping[str, torch.Tensor]) -> Any:
    """Inverse of :func:`_encode`."""
    if isinstance(value, list):
        return [_decode(v, tensors) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1 and next(iter(value)) in _TAGS:
        tag, inner = next(iter(value.items()))
        if tag == _TENSOR:
            return tensors[inner]
        if tag == _TUPLE:
            return tuple(_decode(v, tensors) for v in inner)
        return {_decode(k, tensors): _decode(v, tensors) for k, v in inner}
    return {k: _decode(v, tensors) for k, v in value.items()}


def write_tree(directory: Path, stem: str, tree: Any) -> None:
    """``tree`` as ``<stem>.safetensors`` (its tensors) and ``<stem>.json`` (everything else)."""

    tensors: dict[str, torch.Tensor] = {}
    plain = _encode(tree, "", tensors)
    save_file(tensors, str(directory / f"{stem}.safetensors"))
    (directory / f"{stem}.json").write_text(json.dumps(plain))


def load_part(path: Path, load: Callable[[Path], Any]) -> Any:
    """``load(path)``, any failure reported as a broken checkpoint naming the file."""
    try:
        return load(path)
    except Exception as err:  # whatever a damaged file makes a parser raise: the file is broken
        raise CheckpointError(f"{path.name} does not load ({type(err).__name__}: {err})") from err


def read_tree(directory: Path, stem: str) -> Any:

    tensors = load_part(directory / f"{stem}.safetensors", lambda p: load_file(str(p)))
    plain = load_part(directory / f"{stem}.json", lambda p: json.loads(p.read_text()))
    return load_part(directory / f"{stem}.json", lambda _: _decode(plain, tensors))


# --- manifest --------------------------------------------------------------------------------


def write_manifest(directory: Path) -> None:
    files = {
        name: {"size": (directory / name).stat().st_size, "sha256": _sha256(directory / name)}
        for name in FILES
    }
    (directory / MANIFEST).write_text(json.dumps({"format": _FORMAT, "files": files}, indent=2))


def is_legacy(path: Path) -> bool:
    return not (path / MANIFEST).exists() and any((path / name).exists() for name in _LEGACY_FILES)


def verify_manifest(path: Path, names: tuple[str, ...] = FILES) -> None:
    """Check files ``names`` of checkpoint ``path`` against its manifest (size, then SHA-256).

    Raises:
        CheckpointError: No manifest, an unreadable one, or a file missing or not as recorded.
    """
    if not (path / MANIFEST).is_file():
        raise CheckpointError(
            LEGACY_REASON if is_legacy(path) else "no manifest.json (the save never finished)"
        )
    manifest = load_part(path / MANIFEST, lambda p: json.loads(p.read_text()))
    try:
        if manifest["format"] != _FORMAT:
            raise ValueError(f"format {manifest['format']!r}, this version reads format {_FORMAT}")
        recorded = {
            name: (int(manifest["files"][name]["size"]), str(manifest["files"][name]["sha256"]))
            for name in names
        }
    except (KeyError, TypeError, ValueError) as err:
        raise CheckpointError(f"manifest.json is not a valid manifest ({type(err).__name__}: {err})") from err
    for name, (size, sha256) in recorded.items():
        file = path / name
        if not file.is_file():
            raise CheckpointError(f"{name} is missing")
        if file.stat().st_size != size:
            raise CheckpointError(
                f"{name} has {file.stat().st_size} bytes, the manifest says {size} (truncated?)"
            )
        if _sha256(file) != sha256:
            raise CheckpointError(f"{name} does not match its SHA-256 in manifest.json (corrupted)")
