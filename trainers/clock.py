"""Training time as a budget: the summed time of a run's steps (the update, and for RL the
rollout; never loading, evaluations or checkpoints), against ``--train-minutes`` (when the run
stops) and ``--eval-every-minutes`` (its evaluation marks). Shared by the RL trainer and the
warm start, so runs compared at equal wall time count the same thing. What a run already
spent is read back from its metrics (``trainers.run.files.trained_seconds``)."""

from __future__ import annotations

UNCAPPED_STEPS = 1_000_000
"""``steps`` of a run that only its training-time budget ends."""


def minute_marks(minutes: float, every: float) -> list[float]:
    """The training minutes ``every``, ``2 * every``, ... below ``minutes``, then ``minutes``
    itself (where a budget ends): where arms hand over to each other
    (``benchmarks.learning --chunk-minutes``) or a run's weights are kept for a curve
    (``benchmarks.peers_learning --mark-minutes``)."""
    count = int(minutes // every)
    marks = [every * k for k in range(1, count + 1) if minutes - every * k > 1e-9 * minutes]
    return marks + [float(minutes)]


def marks_passed(marks: list[float], before_s: float, after_s: float) -> list[float]:
    """The marks (minutes) a step that took a run from ``before_s`` to ``after_s`` training
    seconds passed: as ``TrainingClock`` counts them, the step that reaches a mark passes it."""
    return [mark for mark in marks if before_s < mark * 60 <= after_s]


def bar_total(steps: int) -> int | None:
    """The progress bar's length: the steps, or none (a count) for a run only its minutes end."""
    return None if steps >= UNCAPPED_STEPS else steps


class TrainingClock:
    """Training seconds so far against a budget and evaluation marks (0: none)."""

    def __init__(self, budget_minutes: float, mark_minutes: float = 0.0, seconds: float = 0.0) -> None:
        self.budget_s = budget_minutes * 60
        self.mark_s = mark_minutes * 60
        self.seconds = seconds

    def add(self, step_seconds: float) -> bool:
        """Counts one step; whether it passed an evaluation mark."""
        before, self.seconds = self.seconds, self.seconds + step_seconds
        return bool(self.mark_s) and int(self.seconds // self.mark_s) > int(before // self.mark_s)

    def passed(self, minutes: float) -> bool:
        """Whether the run has trained ``minutes`` (never for 0)."""
        return bool(minutes) and self.seconds >= minutes * 60

    def spent(self) -> bool:
        """Whether the budget is used up (never without one)."""
        return bool(self.budget_s) and self.seconds >= self.budget_s

    def text(self) -> str:
        """The progress display's minutes, with the budget when there is one."""
        budget = f"/{self.budget_s / 60:g}" if self.budget_s else ""
        return f"  {self.seconds / 60:.1f}{budget} train min"
