"""Checkpoints: exact round trip of weights, optimiser and RNG with no pickle; atomic layout
and its manifest; retention; fallback past a broken newest checkpoint (down to resuming a real
run); the old pickle format never loaded; clear errors for a checkpoint of another model."""

from __future__ import annotations

import hashlib
import json
import math
import pickle
import random
import re
from pathlib import Path

import numpy as np
import pytest
import torch

import envs
from agents.base import SamplingParams
from agents.hf import HFPolicy
from agents.team import Team
from tests.trainers.conftest import EVEN_PLAN_ID, EVEN_TEAM_ID, ONE_TOKEN_ID
from trainers.advantages import at_grpo
from trainers.errors import ConfigError
from trainers.learner import Learner, LearnerConfig
from trainers.records import TaskKey
from trainers.rollout import tree_rollout
from trainers.run.checkpoint import (
    CheckpointError,
    find_checkpoint,
    latest_checkpoint,
    list_checkpoints,
    load_checkpoint,
    load_weights,
    resume_checkpoint,
    save_checkpoint,
)
from trainers.run.checkpoint_files import read_tree, weights_file_checksum, write_manifest, write_tree
from trainers.runtime.step import MACHINE_METRICS
from trainers.sft import train_sft
from trainers.sft_config import SFTConfig

FILES = [
    "manifest.json",
    "optimizer.json",
    "optimizer.safetensors",
    "rng.json",
    "rng.safetensors",
    "state.json",
    "weights.safetensors",
]


def trained_learner(env_id=EVEN_TEAM_ID, steps=2):
    env = envs.make(env_id)
    torch.manual_seed(0)
    team = Team.per_role(env, HFPolicy("tiny-test", adapters=env.roles))
    learner = Learner(team, LearnerConfig(lr=1e-2))
    for step in range(steps):
        tasks = [TaskKey(env.spec.id, "train", step * 4 + i) for i in range(4)]
        batch = tree_rollout(
            tasks, team, num_candidates=4, sampling=SamplingParams(max_new_tokens=1), seed=step
        )
        learner.step(batch.samples, at_grpo(batch.samples))
    return learner


@pytest.fixture(scope="module")
def learner():
    return trained_learner(steps=1)


def unit_state(learner):
    params = {n: [p.detach().clone() for p in u.parameters] for n, u in learner.units.items()}
    moments = {
        n: [s["exp_avg"].clone() for s in u.optimizer.state.values()] for n, u in learner.units.items()
    }
    return params, moments


def assert_same(a, b):
    for name in a:
        assert len(a[name]) == len(b[name]) > 0
        assert all(torch.equal(x, y) for x, y in zip(a[name], b[name], strict=True))


def assert_identical(a, b, where="root"):
    """Same types all the way down (tuple is not list, 0-dim tensors stay 0-dim), same
    dtypes, same values, same dict key order."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, torch.Tensor):
        assert (a.dtype, a.shape) == (b.dtype, b.shape), where
        assert torch.equal(a, b), where
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and np.array_equal(a, b), where
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for key in a:
            assert_identical(a[key], b[key], f"{where}/{key}")
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_identical(x, y, f"{where}/{i}")
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b), where
    else:
        assert a == b, where


def optimizer_states(learner):
    """A deep copy of every unit's optimiser ``state_dict``."""
    copy = lambda v: v.clone() if isinstance(v, torch.Tensor) else v  # noqa: E731
    states = {}
    for name, unit in learner.units.items():
        state = unit.optimizer.state_dict()
        states[name] = {
            "state": {i: {k: copy(v) for k, v in s.items()} for i, s in state["state"].items()},
            "param_groups": [dict(group) for group in state["param_groups"]],
        }
    return states


def rng_states():
    return random.getstate(), np.random.get_state(), torch.get_rng_state()


def refuse_pickle(monkeypatch):
    """Make every unpickling entry point fail the test."""

    def refuse(*args, **kwargs):
        raise AssertionError("a checkpoint was unpickled")

    for module, name in ((pickle, "load"), (pickle, "loads"), (pickle, "Unpickler"), (torch, "load")):
        monkeypatch.setattr(module, name, refuse)


def test_round_trip_restores_weights_optimiser_and_rngs(tmp_path, monkeypatch):
    learner = trained_learner()
    random.seed(1), np.random.seed(2), torch.manual_seed(3)
    path = save_checkpoint(tmp_path, 7, learner, {"note": "x"})
    saved = unit_state(learner)
    expected_draws = (random.random(), np.random.rand(), torch.rand(1).item())
    for unit in learner.units.values():  # clobber everything the checkpoint should bring back
        for parameter in unit.parameters:
            parameter.data.normal_()
        for state in unit.optimizer.state.values():
            state["exp_avg"].zero_()
    refuse_pickle(monkeypatch)
    state = load_checkpoint(path, learner)
    assert state == {"note": "x", "step": 7}
    params, moments = unit_state(learner)
    assert_same(params, saved[0])
    assert_same(moments, saved[1])
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == expected_draws
    assert sorted(p.name for p in path.iterdir()) == FILES


def test_optimizer_and_rng_states_reload_identical_into_a_fresh_learner(tmp_path, monkeypatch):
    trained = trained_learner()
    random.seed(4), np.random.seed(5), torch.manual_seed(6)
    rngs = rng_states()
    expected = optimizer_states(trained)
    path = save_checkpoint(tmp_path, 2, trained, {})
    fresh = trained_learner(steps=0)  # its optimisers have no state yet
    random.seed(0), np.random.seed(0), torch.manual_seed(0)
    refuse_pickle(monkeypatch)
    load_checkpoint(path, fresh)
    assert_identical(optimizer_states(fresh), expected)
    steps = [s["step"] for u in fresh.units.values() for s in u.optimizer.state.values()]
    assert steps and all(s.dim() == 0 and s.dtype == torch.float32 and s.item() == 2 for s in steps)
    assert_identical(rng_states(), rngs)
    assert json.loads((path / "manifest.json").read_text())["files"].keys() == set(FILES) - {"manifest.json"}


def test_the_encoding_keeps_types_dtypes_and_odd_values(tmp_path):
    tree = {
        "tuple": (1, (2.5, None), [True, "s"]),
        "int keys": {0: torch.tensor(1.0), 3: {"a": torch.zeros(2, 3, dtype=torch.bfloat16)}},
        "floats": [float("inf"), -0.0, float("nan"), 1e-300, 0.1 + 0.2],
        "dtypes": [torch.arange(3), torch.ones(2, dtype=torch.bool), torch.zeros(4, dtype=torch.uint8)],
        "__tensor__": "a plain key that looks like a tag",
        (1, "x"): "tuple key",
        "big": 2**80,
    }
    write_tree(tmp_path, "tree", tree)
    assert_identical(read_tree(tmp_path, "tree"), tree)
    with pytest.raises(TypeError, match="odd.*only tensors and plain data"):
        write_tree(tmp_path, "bad", {"odd": object()})


def test_the_weights_checksum_is_of_the_tensors_not_the_files_metadata(tmp_path):
    # Results files key step-0 evaluations by it: the same weights saved with the metadata
    # checkpoints now carry, or without it as before, must keep one checksum (that of the plain
    # file, so keys recorded then still match), and any other value must change it.
    from safetensors.torch import save_file

    tensors = {"unit/b": torch.arange(6.0).reshape(2, 3), "unit/a": torch.ones(4, dtype=torch.bfloat16)}
    save_file(tensors, str(tmp_path / "plain.safetensors"))
    save_file(tensors, str(tmp_path / "meta.safetensors"), metadata={"unit_models": '{"unit": "m"}'})
    plain = hashlib.sha256((tmp_path / "plain.safetensors").read_bytes()).hexdigest()[:16]
    assert weights_file_checksum(tmp_path / "plain.safetensors") == plain
    assert weights_file_checksum(tmp_path / "meta.safetensors") == plain
    tensors["unit/b"][1, 2] += 1e-6
    save_file(tensors, str(tmp_path / "other.safetensors"))
    assert weights_file_checksum(tmp_path / "other.safetensors") != plain


def test_retention_and_incomplete_directories(tmp_path, learner):
    for step in range(1, 5):
        save_checkpoint(tmp_path, step, learner, {}, keep=2)
    assert [p.name for p in list_checkpoints(tmp_path)] == ["step_000003", "step_000004"]
    # What a kill in the middle of a save leaves behind is never picked up.
    (tmp_path / "checkpoints" / ".tmp-step_000005-999").mkdir()
    assert latest_checkpoint(tmp_path).name == "step_000004"
    (tmp_path / "checkpoints" / "step_000006").mkdir()  # renamed into place with no manifest: broken
    with pytest.warns(RuntimeWarning, match=r"step_000006 is broken.*no manifest"):
        assert latest_checkpoint(tmp_path).name == "step_000004"
    assert latest_checkpoint(tmp_path / "nowhere") is None
    assert resume_checkpoint(tmp_path / "nowhere") is None  # killed before its first checkpoint


def test_retention_keeps_a_complete_checkpoint_to_fall_back_to(tmp_path, learner):
    for step in (1, 2, 3):
        save_checkpoint(tmp_path, step, learner, {}, keep=2)
    (tmp_path / "checkpoints" / "step_000003" / "manifest.json").unlink()  # step 3 is broken
    with pytest.warns(RuntimeWarning, match="step_000003"):
        assert resume_checkpoint(tmp_path).name == "step_000002"
    # The resumed run redoes step 3; step 2 stays as the one to fall back to.
    save_checkpoint(tmp_path, 3, learner, {}, keep=2)
    assert [p.name for p in list_checkpoints(tmp_path)] == ["step_000002", "step_000003"]
    # A broken checkpoint after the step being saved is a leftover of what the resume skipped.
    save_checkpoint(tmp_path, 5, learner, {}, keep=2)
    (tmp_path / "checkpoints" / "step_000005" / "weights.safetensors").write_bytes(b"")
    save_checkpoint(tmp_path, 4, learner, {}, keep=2)
    assert [p.name for p in list_checkpoints(tmp_path)] == ["step_000003", "step_000004"]


def test_checkpoint_of_another_team_is_a_clear_error(tmp_path, learner):
    path = save_checkpoint(tmp_path, 1, learner, {})
    other = trained_learner(EVEN_PLAN_ID, steps=0)  # planner/executor adapters, not leader/follower
    with pytest.raises(ValueError, match="config.json"):
        load_checkpoint(path, other)


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def resealed(damage):
    """``damage``, then a manifest that matches it: only loading the files can tell."""

    def apply(checkpoint: Path) -> None:
        damage(checkpoint)
        write_manifest(checkpoint)

    return apply


def edit_manifest(checkpoint: Path) -> None:
    manifest = json.loads((checkpoint / "manifest.json").read_text())
    manifest["files"]["optimizer.json"]["sha256"] = "0" * 64
    (checkpoint / "manifest.json").write_text(json.dumps(manifest))


CORRUPTIONS = {
    "truncated weights": (
        lambda c: truncate(c / "weights.safetensors"),
        r"weights.safetensors has \d+ bytes",
    ),
    "empty weights": (
        lambda c: (c / "weights.safetensors").write_bytes(b""),
        "weights.safetensors has 0 bytes",
    ),
    "missing weights": (lambda c: (c / "weights.safetensors").unlink(), "weights.safetensors is missing"),
    "truncated optimizer": (lambda c: truncate(c / "optimizer.safetensors"), "optimizer.safetensors has"),
    "truncated RNG": (lambda c: truncate(c / "rng.json"), "rng.json has"),
    "bad state.json": (lambda c: (c / "state.json").write_text("{"), "state.json has"),
    "missing manifest": (lambda c: (c / "manifest.json").unlink(), "no manifest.json"),
    "mismatched manifest": (edit_manifest, "optimizer.json does not match its SHA-256"),
    "garbled manifest": (lambda c: (c / "manifest.json").write_text("]"), "manifest.json does not load"),
    # The same damage under a manifest written after it: caught by loading, not by the manifest.
    "resealed truncated weights": (
        resealed(lambda c: truncate(c / "weights.safetensors")),
        "weights.safetensors does not load",
    ),
    "resealed truncated optimizer": (
        resealed(lambda c: truncate(c / "optimizer.safetensors")),
        "optimizer.safetensors does not load",
    ),
    "resealed truncated RNG": (
        resealed(lambda c: truncate(c / "rng.safetensors")),
        "rng.safetensors does not load",
    ),
    "resealed bad RNG state": (
        resealed(lambda c: (c / "rng.json").write_text('{"python": 1}')),
        "rng.json does not load",
    ),
    "resealed state.json with no step": (
        resealed(lambda c: (c / "state.json").write_text("{}")),
        "no integer step",
    ),
}


@pytest.mark.parametrize("kind", list(CORRUPTIONS))
def test_a_broken_newest_checkpoint_falls_back_to_the_previous_one(tmp_path, learner, kind):
    damage, reason = CORRUPTIONS[kind]
    older = save_checkpoint(tmp_path, 1, learner, {}, keep=2)
    newest = save_checkpoint(tmp_path, 2, learner, {}, keep=2)
    damage(newest)
    before = unit_state(learner)
    with pytest.raises(CheckpointError, match=reason):
        load_checkpoint(newest, learner)
    assert_same(unit_state(learner)[0], before[0])  # a broken checkpoint changes nothing
    warning = f"{re.escape(str(newest))} is broken, falling back to an older one: .*{reason}"
    with pytest.warns(RuntimeWarning, match=warning):
        assert resume_checkpoint(tmp_path) == older
    assert load_checkpoint(older, learner)["step"] == 1


def test_with_no_intact_checkpoint_resume_is_a_clear_error(tmp_path, learner):
    for step in (1, 2):
        (save_checkpoint(tmp_path, step, learner, {}) / "weights.safetensors").unlink()
    with pytest.warns(RuntimeWarning), pytest.raises(ConfigError) as error:
        resume_checkpoint(tmp_path)
    message = str(error.value)
    assert str(tmp_path) in message and "no intact checkpoint" in message and "without --resume" in message
    assert "step_000001: weights.safetensors is missing" in message


def sft_config(tmp_path, **changes) -> SFTConfig:
    """A tiny warm start: 8 steps, checkpoints after steps 4 and 8."""
    fields = dict(
        env=ONE_TOKEN_ID,
        model="tiny-test",
        response_prefix="",
        train_tasks=16,
        val_tasks=4,
        eval_tasks=8,
        steps=8,
        batch_size=8,
        lr=1e-2,
        val_every=4,
        eval_every=0,
        max_new_tokens=1,
        output_dir=str(tmp_path),
        progress=False,
        tensorboard=False,
        plots=False,
        transcripts=0,
        checkpoint_every=4,
        device="cpu",
    )
    return SFTConfig(**{**fields, **changes})


TIMINGS = (*MACHINE_METRICS, "seconds", "wall_seconds")  # differ between any two runs


def without_timings(run: Path, name: str) -> list[dict]:
    records = [json.loads(line) for line in (run / name).read_text().splitlines()]
    return [{k: v for k, v in r.items() if not k.startswith(TIMINGS)} for r in records]


def test_resume_past_a_truncated_checkpoint_repeats_the_uninterrupted_run(tmp_path):
    whole = train_sft(sft_config(tmp_path, run_name="whole"))
    split = train_sft(sft_config(tmp_path, run_name="split")).run_dir
    truncate(split / "checkpoints" / "step_000008" / "weights.safetensors")
    with pytest.warns(RuntimeWarning, match=r"step_000008 is broken.*weights.safetensors has"):
        resumed = train_sft(sft_config(tmp_path, run_name="split", resume=str(split)))
    for name in ("metrics.jsonl", "eval.jsonl"):
        assert without_timings(split, name) == without_timings(whole.run_dir, name), name
    assert [r["step"] for r in without_timings(split, "metrics.jsonl")] == list(range(1, 9))
    assert resumed.after["success"] == whole.after["success"]
    # The redone step 8 is a whole checkpoint again, with the uninterrupted run's weights.
    assert resume_checkpoint(split).name == "step_000008"
    a = (whole.run_dir / "checkpoints" / "step_000008" / "weights.safetensors").read_bytes()
    assert (split / "checkpoints" / "step_000008" / "weights.safetensors").read_bytes() == a


class Payload:
    """Unpickling this creates ``marker``: what a hostile ``optimizer.pt`` could do instead."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def make_legacy(checkpoint: Path, marker: Path) -> None:
    """Turn a checkpoint into the old format, its pickles rigged to create ``marker``."""
    for name in FILES:
        if name not in ("weights.safetensors", "state.json"):
            (checkpoint / name).unlink()
    for name in ("optimizer.pt", "rng.pt"):
        (checkpoint / name).write_bytes(pickle.dumps(Payload(marker)))


def test_the_payload_is_live(tmp_path):
    """The control: unpickling the rigged file does run its code."""
    pickle.loads(pickle.dumps(Payload(tmp_path / "control")))
    assert (tmp_path / "control").exists()


def test_an_old_format_run_is_refused_without_unpickling(tmp_path, learner):
    marker = tmp_path / "pwned"
    (tmp_path / "config.json").write_text("{}")
    make_legacy(save_checkpoint(tmp_path, 3, learner, {}), marker)
    checkpoint = tmp_path / "checkpoints" / "step_000003"
    with pytest.warns(RuntimeWarning, match="pickle"), pytest.raises(ConfigError) as error:
        resume_checkpoint(tmp_path)
    message = str(error.value)
    assert "old checkpoint format" in message and "pickle" in message and "without --resume" in message
    assert f"--init {tmp_path}" in message
    with pytest.raises(CheckpointError, match="pickle"):
        load_checkpoint(checkpoint, learner)
    # Weights-only uses (evaluation, --init) still read its safetensors weights.
    assert find_checkpoint(tmp_path) == (tmp_path, checkpoint)
    load_weights(checkpoint, learner)
    assert not marker.exists()


def test_an_old_format_newest_checkpoint_is_skipped_and_a_stray_pickle_ignored(tmp_path, learner):
    marker = tmp_path / "pwned"
    older = save_checkpoint(tmp_path, 1, learner, {})
    (older / "optimizer.pt").write_bytes(pickle.dumps(Payload(marker)))  # not in the manifest: never read
    make_legacy(save_checkpoint(tmp_path, 2, learner, {}), marker)
    with pytest.warns(RuntimeWarning, match=r"step_000002 is broken.*pickle"):
        assert resume_checkpoint(tmp_path) == older
    assert load_checkpoint(older, learner)["step"] == 1
    assert not marker.exists()


def test_resuming_a_real_old_format_run_is_a_clear_error_and_runs_no_pickle(tmp_path):
    marker = tmp_path / "pwned"
    run = train_sft(sft_config(tmp_path, run_name="old", steps=4)).run_dir
    make_legacy(run / "checkpoints" / "step_000004", marker)
    with pytest.warns(RuntimeWarning), pytest.raises(ConfigError, match="pickle"):
        train_sft(sft_config(tmp_path, run_name="old", resume=str(run)))
    assert not marker.exists()
