"""Arms that take turns: equal wall time is a fair budget only at equal machine speed, and a
shared VM's speed drifts (one arm's first step took 345 s, the same samples 179 s an hour
earlier), so the equal-wall-time benchmarks (``benchmarks.learning``, ``benchmarks.selfplay``,
``--chunk-minutes``) train the arms of a seed in turns: each to the first mark, then each to
the next, ... each pausing at a checkpoint (``trainers.at_grpo.train(pause_minutes=...)``)
that its next turn resumes as if it had never stopped."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from trainers.clock import minute_marks

__all__ = ["take_turns", "trained_minutes"]


def trained_minutes(run_dir: Path) -> float:
    """The training minutes of a run up to its last checkpoint (where it resumes; 0: none)."""
    from trainers.run.checkpoint import checkpoint_step, latest_checkpoint
    from trainers.run.files import trained_seconds

    checkpoint = latest_checkpoint(run_dir)
    return trained_seconds(run_dir, checkpoint_step(checkpoint)) / 60 if checkpoint else 0.0


def take_turns(
    arms: Sequence[str],
    minutes: float,
    chunk: float,
    run_dir_of: Callable[[str], Path],
    train_to: Callable[[str, float], object],
    label: Callable[[str], str] = str,
) -> None:
    """Train every arm to each mark (every ``chunk`` minutes, the last at ``minutes``) in
    turn: ``train_to(arm, mark)`` pauses the arm's run there. A turn an earlier invocation
    already trained (the run's checkpoint is past the mark) is skipped. The caller then
    finishes each run (its final evaluations) without a pause. ``label(arm)``: how the
    progress line names the arm."""
    for mark in minute_marks(minutes, chunk):
        for arm in arms:
            if trained_minutes(run_dir_of(arm)) >= mark:
                continue
            print(f"{label(arm)}: training to {mark:g} of {minutes:g} minutes", flush=True)
            train_to(arm, mark)
