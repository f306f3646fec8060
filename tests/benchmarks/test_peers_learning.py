"""benchmarks/peers_learning.py: every library from one warm start for the same training
minutes, its weights kept at each mark and evaluated on held-out tasks; resumable per cell.
teamgym's arms run here; TRL's and CoMLRL's need the peers' virtualenv (CI does not install
it), and without it a peer says why and is left for a later run."""

from __future__ import annotations

import json

import pytest

from benchmarks import peers, peers_learning

# 1,106 MB measured with the peers' sides, where their virtualenv is installed
pytestmark = pytest.mark.memory(gb=1.5)


@pytest.fixture(scope="module")
def warm_start(tmp_path_factory):
    from trainers.sft import train_sft
    from trainers.sft_config import SFTConfig

    out = tmp_path_factory.mktemp("warm")
    return train_sft(
        SFTConfig(
            env="plan_path", model="tiny-test", train_tasks=8, val_tasks=2, eval_tasks=2, steps=2,
            batch_size=4, lr=1e-2, eval_every=0, output_dir=str(out), run_name="warm",
            progress=False, plots=False, tensorboard=False,
        )
    ).run_dir  # fmt: skip


@pytest.mark.slow
def test_each_arm_keeps_its_marks_and_a_rerun_finishes_only_what_is_left(tmp_path, warm_start, capsys):
    out = tmp_path / "out"
    args = [
        "--init", str(warm_start), "--model", "tiny-test", "--tasks", "single",
        "--arms", "teamgym", "teamgym-at_grpo", "trl", "--seeds", "0",
        # any step takes more than a millionth of a minute: step 1 passes both marks
        "--minutes", "0.000002", "--mark-minutes", "0.000001",
        "--tasks-per-step", "2", "--num-generations", "2", "--max-new-tokens", "4", "--eval-tasks", "2",
        "--threads", "1", "--peers-python", str(tmp_path / "none" / "python"), "--out", str(out),
    ]  # fmt: skip
    summary = peers_learning.main(args)
    printed = capsys.readouterr().out
    assert "trl seed 0: not run: no peers virtualenv at" in printed
    results = out / "peers-learning.json"
    record = json.loads(results.read_text())
    cells = {cell["arm"]: cell for cell in record["cells"]}
    assert set(cells) == {"teamgym", "teamgym-at_grpo"}  # trl: left for a run with its virtualenv
    for cell in cells.values():
        assert cell["steps"] == 1 and cell["trained_s"] > 0
        assert [(m["minutes"], m["step"]) for m in cell["marks"]] == [(1e-6, 1), (2e-6, 1)]
        assert all(0 <= m["success"] <= 1 and m["tasks"] == 2 for m in cell["marks"])
    algos = {
        arm: json.loads((out / "single" / arm / "seed0" / "spec.json").read_text())["teamgym"]["algo"]
        for arm in cells
    }
    assert algos == {"teamgym": "grpo", "teamgym-at_grpo": "at_grpo"}
    assert record["before"]["single"]["tasks"] == 2
    assert len(summary["single"]["teamgym"]["mean"]) == 3  # minute 0, then the two marks
    assert results.with_suffix(".png").is_file()
    assert "mean of 1" in printed
    # Cut off while evaluating: the rerun keeps the cell's training and plays only the evaluation.
    trained = out / "single" / "teamgym-at_grpo" / "seed0" / "trained.json"
    stamp = trained.stat().st_mtime_ns
    (trained.parent / "marks.json").unlink()
    results.write_text(json.dumps({**record, "cells": [cells["teamgym"]]}))
    peers_learning.main(args)
    printed = capsys.readouterr().out
    assert "teamgym seed 0: done" in printed and "teamgym-at_grpo seed 0: evaluating step 1" in printed
    assert trained.stat().st_mtime_ns == stamp
    again = {cell["arm"]: cell for cell in json.loads(results.read_text())["cells"]}
    assert again["teamgym-at_grpo"]["marks"] == cells["teamgym-at_grpo"]["marks"]  # greedy: the same
    # Another budget would mix two measurements in one file: refused, naming the flag.
    with pytest.raises(SystemExit, match="--minutes"):
        peers_learning.main(
            [*args[: args.index("--minutes") + 1], "0.5", *args[args.index("--minutes") + 2 :]]
        )


def test_a_missing_warm_start_names_the_command_that_makes_one(tmp_path, capsys):
    with pytest.raises(SystemExit):
        peers_learning.main(["--init", str(tmp_path / "missing"), "--out", str(tmp_path)])
    assert "python -m trainers.sft --env plan_path-v1" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.skipif(
    not peers.DEFAULT_PEERS_PYTHON.exists(),
    reason=f"the peers' virtualenv is not installed ({peers.INSTALL_HINT}); CI does not install it",
)
def test_trl_and_comlrl_stop_on_the_budget_and_keep_their_marks(tmp_path, warm_start):
    out = tmp_path / "out"
    args = [
        "--init", str(warm_start), "--model", "tiny-test", "--arms", "trl", "comlrl", "--seeds", "0",
        "--minutes", "0.000002", "--mark-minutes", "0.000001", "--tasks-per-step", "2",
        "--num-generations", "2", "--max-new-tokens", "4", "--eval-tasks", "2", "--threads", "1",
        "--out", str(out),
    ]  # fmt: skip
    peers_learning.main(args)
    cells = {cell["arm"]: cell for cell in json.loads((out / "peers-learning.json").read_text())["cells"]}
    assert set(cells) == {"trl", "comlrl"}
    for cell in cells.values():
        assert cell["steps"] == 1  # the budget, not the step cap, ended it
        assert [(m["minutes"], m["step"]) for m in cell["marks"]] == [(1e-6, 1), (2e-6, 1)]
        assert all(0 <= m["success"] <= 1 for m in cell["marks"])
    assert (out / "team" / "comlrl" / "seed0" / "marks" / "step_000001" / "executor").is_dir()
