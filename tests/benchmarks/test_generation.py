"""The generation benchmark runs on the tiny model and reports consistent rows."""

from __future__ import annotations

from benchmarks import generation


def test_smoke_run_on_tiny_model(capsys):
    rows = generation.main(
        ["--model", "tiny-test", "--max-new-tokens", "8", "--prompts", "2", "--samples", "2"]
    )
    assert [r["setting"] for r in rows] == ["1 x 1", "2 x 2", "2 x 2 transformers generate"]
    # EOS is ignored, so every sequence generates exactly max_new_tokens tokens.
    assert [r["tokens"] for r in rows] == [8, 32, 32]
    assert rows[0]["ratio"] == 1.0
    assert "tokens/s" in capsys.readouterr().out
