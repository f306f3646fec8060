"""The wall-time budget of ``python -m benchmarks.peers_learning`` inside each library's process:
training seconds (the summed time of its steps, generation and update; never loading or
saving) against the spec's ``minutes``, and the marks (every ``mark_minutes``) where the side
keeps its adapters for the learning curve. Imports nothing but ``trainers.clock`` (torch-free),
so the peers' virtualenv can use it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from trainers.clock import marks_passed, minute_marks

__all__ = ["Budget"]


class Budget:
    """A side's training clock; ``kept`` lists the weights it saved: {"minutes" (the mark),
    "step", "trained_s" (when that step ended), "adapters" (a directory)}."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.minutes = float(spec.get("minutes", 0.0))
        self.marks = minute_marks(self.minutes, float(spec["mark_minutes"])) if self.minutes else []
        self.seconds = 0.0
        self.kept: list[dict[str, Any]] = []

    def after_step(self, step: int, step_seconds: float, save: Callable[[Path], None], out: Path) -> bool:
        """Counts one step; at each mark it passed, ``save(directory)`` keeps the adapters (one
        directory per step); whether the budget is spent (never without one)."""
        before, self.seconds = self.seconds, self.seconds + step_seconds
        passed = marks_passed(self.marks, before, self.seconds)
        if passed:
            directory = out / "marks" / f"step_{step:06d}"
            save(directory)
            for mark in passed:
                self.kept.append(
                    {"minutes": mark, "step": step, "trained_s": self.seconds, "adapters": str(directory)}
                )
        return bool(self.minutes) and self.seconds >= self.minutes * 60
