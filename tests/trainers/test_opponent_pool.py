"""Self-play against a pool of past snapshots (``--opponent-pool N``): each step one seat plays
a drawn snapshot, frozen, the other the trained policy, alternating; the pool keeps the newest
N snapshot files; a resumed run repeats the uninterrupted one; mistakes name the fix."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file

from tests.trainers.at_grpo_runs import tiny_config, without_timings
from trainers.at_grpo import train
from trainers.config import ConfigError
from trainers.run.checkpoint import list_checkpoints
from trainers.run.files import read_jsonl
from trainers.run.opponent_pool import pool_snapshots

pytestmark = pytest.mark.memory(gb=1.5)

POOL = dict(env="tictactoe", opponent_pool=2, pool_every=1, max_new_tokens=2, eval_tasks=2, test_tasks=0,
            tasks_per_step=2, num_generations=2, keep_checkpoints=3, response_prefix="<answer>")  # fmt: skip


def test_each_step_trains_one_seat_against_a_drawn_snapshot_and_the_pool_keeps_the_newest(tmp_path):
    summary = train(tiny_config(tmp_path, steps=3, **POOL))
    steps = read_jsonl(summary.run_dir / "metrics.jsonl")
    assert [r["pool/size"] for r in steps] == [1, 2, 2]  # the starting weights, then one per step, 2 kept
    assert [r["pool/trained_seat"] for r in steps] == [0, 1, 0]  # odd steps: the first seat
    assert all(r["pool/opponent_step"] < r["step"] for r in steps)  # always a past self
    for r in steps:  # only the trained seat's turns reach the learner
        seat = ("first", "second")[int(r["pool/trained_seat"])]
        episodes = read_jsonl(summary.run_dir / "episodes" / f"train_step_{r['step']:06d}.jsonl")
        assert r["samples_trained"] == sum(t["role"] == seat for e in episodes for t in e["turns"]) > 0
    assert list(pool_snapshots(summary.run_dir)) == [2, 3]
    snapshot = load_file(str(pool_snapshots(summary.run_dir)[3]))
    weights = load_file(str(list_checkpoints(summary.run_dir)[-1] / "weights.safetensors"))
    assert sorted(snapshot) == sorted(key.rpartition("/")[2] for key in weights)
    assert all(torch.equal(snapshot[key.rpartition("/")[2]], tensor) for key, tensor in weights.items())


def test_a_resumed_pool_run_repeats_the_uninterrupted_one(tmp_path):
    whole = train(tiny_config(tmp_path / "whole", steps=3, **POOL)).run_dir
    cut = train(tiny_config(tmp_path / "cut", steps=2, **POOL)).run_dir
    (cut / "pool" / "step_000003.safetensors").write_bytes(b"made by a step the resume plays again")
    from trainers.at_grpo import load_run_config

    train(load_run_config(cut, {"resume": str(cut), "steps": 3, "progress": False}))
    assert without_timings(read_jsonl(cut / "metrics.jsonl")) == without_timings(
        read_jsonl(whole / "metrics.jsonl")
    )
    for step, path in pool_snapshots(whole).items():
        again, first = load_file(str(pool_snapshots(cut)[step])), load_file(str(path))
        assert all(torch.equal(again[k], first[k]) for k in first)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            dict(env="tests.trainers.conftest:test/even_plan", opponent_pool=2),
            "not a competitive two-seat game",
        ),
        (dict(POOL, policy="per_role"), "pass --policy shared"),
        (dict(POOL, roles=("second=random",)), "--roles cannot fix one"),
        (dict(POOL, frozen=("second",)), "--frozen cannot fix one"),
        (dict(POOL, opponent_pool=-1), "opponent_pool=-1 must be >= 0"),
        (dict(POOL, pool_every=0), "pool_every=0 must be >= 1"),
    ],
)
def test_pool_mistakes_name_the_fix(tmp_path, fields, message):
    with pytest.raises(ConfigError, match=message):
        train(tiny_config(tmp_path, **fields))


def test_the_ladder_plays_the_runs_pool_and_the_untrained_model(tmp_path, capsys):
    from benchmarks.evaluate import main

    run = train(tiny_config(tmp_path, steps=2, **POOL)).run_dir
    args = ["--env", "tictactoe", "--episodes", "2", "--seeds", "0", "--max-new-tokens", "2", "--baselines",
            "--no-progress", "--output-dir", str(tmp_path / "eval")]  # fmt: skip
    results = main([*args, "--model", str(run), "--ladder", "random", "base", "pool"])
    (row,) = [r for r in results.rows if r.endswith("ladder")]
    mean = results.cell(row, "tictactoe").mean
    for player in ("random", "base", "pool@1", "pool@2"):  # the pool keeps 2: steps 1 and 2
        assert 0.0 <= mean[f"vs/{player}/win"] <= 1.0 and f"elo/{player}" in mean
    assert "vs/pool@0/win" not in mean
    plain = train(tiny_config(tmp_path / "plain", steps=1, **dict(POOL, opponent_pool=0))).run_dir
    with pytest.raises(SystemExit) as exit_info:
        main([*args, "--model", str(plain), "--ladder", "pool"])
    assert exit_info.value.code == 2 and "trained without --opponent-pool" in capsys.readouterr().err
