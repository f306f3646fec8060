"""The progress display keeps the latest metrics visible while the next phase runs."""

from __future__ import annotations

import io

from trainers.progress import RunProgress, format_metrics


def _last_drawn(text: str) -> str:
    """The last line as a terminal would show it (each redraw starts with a carriage return)."""
    return text.replace("\n", "\r").rstrip("\r").split("\r")[-1]


def test_metrics_stay_visible_while_the_next_step_runs():
    out = io.StringIO()
    with RunProgress(10, desc="at_grpo sokoban", file=out, two_lines=False) as progress:
        progress.phase("loading model")
        assert "loading model" in _last_drawn(out.getvalue())  # shown before any step is done
        progress.show("step 1: reward -0.100  success 0.25  invalid 0.80")
        progress.advance()
        progress.phase("step 2: rolling out")
        line = _last_drawn(out.getvalue())
        assert "step 2: rolling out" in line and "step 1: reward -0.100  success 0.25  invalid 0.80" in line
        assert "1/10" in line and "|#" in line
        progress.phase("step 2: updating")
        assert "success 0.25" in _last_drawn(out.getvalue())


def test_on_two_lines_the_bar_keeps_its_width_and_the_metrics_their_own_line():
    out = io.StringIO()
    progress = RunProgress(10, desc="at_grpo sokoban", file=out, two_lines=True, tick_seconds=0)
    progress.show({"reward": 0.5, "success": 1.0})
    progress.advance(5)
    progress.phase("step 6: rolling out 4 tasks x K=4")
    progress.close()
    text = out.getvalue()
    bars = [part for part in text.replace("\n", "\r").split("\r") if part.startswith("at_grpo sokoban")]
    assert "|#####     |" in bars[-1] and "step 6: rolling out" in bars[-1]  # a 10-character bar
    assert "reward" not in bars[-1]
    assert "  reward 0.500  success 1.000" in text
    assert progress.line() == "step 6: rolling out 4 tasks x K=4 || reward 0.500  success 1.000"


def test_disabled_shows_nothing_but_messages_still_print():
    out = io.StringIO()
    with RunProgress(3, file=out, enabled=False) as progress:
        progress.phase("working")
        progress.write("run dir: runs/x")
        progress.advance()
    assert out.getvalue() == "run dir: runs/x\n"


def test_resume_counts_from_the_steps_already_done():
    out = io.StringIO()
    with RunProgress(10, file=out, two_lines=False) as progress:
        progress.resume_at(4)
        progress.phase("step 5: rolling out")
    assert "4/10" in _last_drawn(out.getvalue())


def test_format_metrics():
    assert format_metrics({"reward": 0.12345, "step": 3, "note": "ok"}) == "reward 0.123  step 3  note ok"


def test_a_run_only_its_minutes_end_counts_steps_without_a_bar():
    from trainers.clock import UNCAPPED_STEPS, bar_total

    assert bar_total(12) == 12 and bar_total(UNCAPPED_STEPS) is None
    out = io.StringIO()
    total = bar_total(UNCAPPED_STEPS)
    with RunProgress(total, desc="at_grpo plan_path", file=out, two_lines=False) as progress:
        progress.show("step 1: success 0.50  3.2/10 train min")
        progress.advance()
        line = _last_drawn(out.getvalue())
    assert "1/?" in line and "3.2/10 train min" in line and str(UNCAPPED_STEPS) not in line
