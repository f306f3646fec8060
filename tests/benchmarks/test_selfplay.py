"""The self-play benchmark (pool vs plain self-play at equal training time): one smoke run of
both arms on the tiny model (one arm's run cut off before its first checkpoint), the results
file, a rerun that skips finished cells, and a rerun with another protocol refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import selfplay

pytestmark = pytest.mark.memory(gb=1.5)


def test_both_arms_train_for_the_same_minutes_in_turns_and_a_rerun_resumes_the_file(tmp_path, capsys):
    tiny = "--model tiny-test --envs tictactoe --seeds 0 --minutes 0.01 --max-new-tokens 2 --eval-tasks 2"
    args = [*tiny.split(), "--chunk-minutes", "0.005", "--no-progress", "--output-dir", str(tmp_path)]
    cut_off = tmp_path / "pool-vs-selfplay" / "tictactoe-selfplay-seed0"  # killed before its first checkpoint
    cut_off.mkdir(parents=True)
    (cut_off / "metrics.jsonl").write_text('{"step": 1}\n')
    record = selfplay.main(args)
    turns = [line for line in capsys.readouterr().out.splitlines() if "training to" in line]
    assert turns[:2] == [  # each arm's first turn, then the next mark's
        "tictactoe selfplay seed 0: training to 0.005 of 0.01 minutes",
        "tictactoe pool seed 0: training to 0.005 of 0.01 minutes",
    ]
    results = tmp_path / "pool-vs-selfplay.json"
    assert json.loads(results.read_text()) == json.loads(json.dumps(record))
    cells = {cell["arm"]: cell for cell in record["cells"]}
    assert set(cells) == {"selfplay", "pool"} and all(c["steps"] >= 1 for c in cells.values())
    assert all(c["tokens_per_s"] > 0 for c in cells.values())  # the machine's speed as each trained
    assert all(c["chunk_minutes"] == 0.005 and c["train_minutes"] >= 0.01 for c in cells.values())
    for cell in cells.values():
        assert {"vs/random/win", "vs/base/win", "elo/model"} <= set(cell["after"])
    # the untrained model's step-0 validation was played by the first run only, and logged by both
    step0 = [[json.loads(line) for line in open(f"{c['run_dir']}/eval.jsonl")][0] for c in cells.values()]
    assert step0[0] == step0[1] and step0[0]["step"] == 0 and step0[0]["tasks"] == 2
    assert record["untrained_validation"]["tictactoe"]["success"] == step0[0]["success"]
    played = [len(list(Path(c["run_dir"], "episodes").glob("eval_step_000000*"))) for c in cells.values()]
    assert sorted(played) == [0, 1]
    pool_steps = [json.loads(line) for line in open(f"{cells['pool']['run_dir']}/metrics.jsonl")]
    assert all("pool/opponent_step" in step for step in pool_steps)
    assert set(record["summary"]["tictactoe"]) == {"untrained", "selfplay", "pool", "pool - selfplay"}
    capsys.readouterr()
    selfplay.main(args)
    assert capsys.readouterr().out.count("done (in") == 2  # nothing trained again
    with pytest.raises(SystemExit):
        selfplay.main([*args, "--pool", "8"])
    assert "measured with --pool 4, not 8" in capsys.readouterr().err
