"""Remembered sandbox runs (``envs.sandbox.memo``): real runs, counted."""

from __future__ import annotations

from envs.sandbox import SandboxJob, memo


def test_a_job_runs_once_and_is_then_remembered():
    memo.forget_all()
    job = SandboxJob("import random\nprint(random.random())")
    before = memo.remembered_stats()
    first = memo.run_remembered(job)
    again = memo.run_remembered(job)
    after = memo.remembered_stats()
    assert first.ok and again is first  # an unseeded program answers what it answered first
    assert after["runs"] == before["runs"] + 1 and after["reused"] == before["reused"] + 1


def test_prefetch_runs_the_distinct_unremembered_jobs_together():
    memo.forget_all()
    jobs = [SandboxJob(f"print({i % 3})") for i in range(6)]
    assert memo.prefetch(jobs) == 3
    assert memo.prefetch(jobs) == 0
    assert [memo.run_remembered(job).stdout for job in jobs] == ["0\n", "1\n", "2\n"] * 2
    # the board (stdin) is part of the job
    assert memo.run_remembered(SandboxJob("print(input())", stdin="x\n")).stdout == "x\n"


def test_memory_is_bounded_oldest_first(monkeypatch):
    memo.forget_all()
    monkeypatch.setattr(memo, "MAX_REMEMBERED", 2)
    jobs = [SandboxJob(f"print({i})") for i in range(3)]
    memo.prefetch(jobs)
    assert memo.prefetch(jobs[1:]) == 0  # the two newest are kept
    assert memo.prefetch(jobs[:1]) == 1  # the oldest was forgotten
