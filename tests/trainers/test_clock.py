"""The training clock: step time against a budget and evaluation marks, and where a resumed
run's clock starts."""

from __future__ import annotations

import json

from trainers.clock import TrainingClock, marks_passed, minute_marks
from trainers.run.files import trained_seconds


def test_the_training_clock_counts_step_time_against_the_budget_and_the_marks():
    clock = TrainingClock(budget_minutes=1.0, mark_minutes=0.5, seconds=20.0)
    assert (clock.add(5.0), clock.spent()) == (False, False)  # 25 s
    assert (clock.add(10.0), clock.spent()) == (True, False)  # 35 s: past the 30 s mark
    assert (clock.add(24.0), clock.spent()) == (False, False)  # 59 s
    assert (clock.add(1.0), clock.spent()) == (True, True)  # 60 s: the budget, and the 60 s mark
    unlimited = TrainingClock(budget_minutes=0.0)
    assert (unlimited.add(1e9), unlimited.spent()) == (False, False)


def test_a_resumed_run_s_clock_starts_at_its_logged_steps_time(tmp_path):
    rows = [{"step": 1, "time/step": 2.0}, {"step": 2, "time/step": 3.0}, {"step": 3, "time/step": 4.0}]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert trained_seconds(tmp_path, 2) == 5.0
    assert trained_seconds(tmp_path / "nowhere", 2) == 0.0  # a run with no steps yet


def test_minute_marks_come_every_interval_and_the_last_ends_the_budget():
    assert minute_marks(40, 5) == [5, 10, 15, 20, 25, 30, 35, 40]
    assert minute_marks(12, 5) == [5, 10, 12]
    assert minute_marks(1, 5) == [1]
    assert minute_marks(2e-6, 1e-6) == [1e-6, 2e-6]


def test_a_step_passes_the_marks_it_reaches_as_the_training_clock_counts_them():
    marks = [5, 10, 15]
    assert marks_passed(marks, 0, 299) == []
    assert marks_passed(marks, 0, 300) == [5]  # reaching a mark passes it
    assert marks_passed(marks, 300, 700) == [10]
    assert marks_passed(marks, 290, 910) == [5, 10, 15]  # one long step, three marks
    clock = TrainingClock(0, 5)
    assert clock.add(300) and not clock.add(299) and clock.add(1)  # the same rule
