"""The generation benchmark runs on the tiny model and reports consistent rows."""

from __future__ import annotations

from benchmarks import generation


def test_smoke_run_on_tiny_model(capsys):
    rows = generation.main(
        ["--model", "tiny-test", "--max-new-tokens", "8", "--prompts", "2", "--samples", "2"]
        + ["--threads", "1", "2", "--load", "0", "1"]
    )
    batching, threads = rows[:3], rows[3:]
    assert [r["setting"] for r in batching] == ["1 x 1", "2 x 2", "2 x 2 transformers generate"]
    # EOS is ignored, so every sequence generates exactly max_new_tokens tokens.
    assert [r["tokens"] for r in batching] == [8, 32, 32]
    assert batching[0]["ratio"] == 1.0
    # threads x load: every (load, threads) pair measured once, the auto pick recorded
    assert [(r["load"], r["threads"]) for r in threads] == [(0, 1), (0, 2), (1, 1), (1, 2)]
    assert all(r["tokens"] == 8 and r["auto"] >= 1 for r in threads)
    out = capsys.readouterr().out
    assert "tokens/s" in out and "Threads x competing load" in out and "auto picks" in out
