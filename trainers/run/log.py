"""``RunLogger``: the writer of a run directory, for a researcher to read and plot.

It writes, under ``run_dir``::

    metrics.jsonl                      one JSON object per training step: {"step": 12, ...}
    eval.jsonl                         one JSON object per evaluation:    {"step": 12, ...}
    test.jsonl                         the held-out test evaluations (before and after)
    tensorboard/                       TensorBoard events (train/<key>, eval/<key>)
    plots/train_reward.png, ...        matplotlib plots (``trainers.run.plots.plot_run``)
    transcripts/eval_step_000012.md    readable evaluation episodes (``trainers.run.transcripts``)
    episodes/eval_step_000012.jsonl    every evaluation episode in full (``trainers.run.episodes``)
    report.html                        the run on one offline page (``trainers.run.report``)

The JSONL files are the source of truth: every line is appended, flushed and fsynced, so a
killed run loses at most the line being written, and the plots can always be regenerated from
them (``python -c "from trainers.run.plots import plot_run; plot_run('runs/x')"``). What a
metric value becomes in them: ``trainers.run.files``.

The logger sits on top of ``trainers.run``: it refreshes the plots and the report, which only
read the files below it, and on resume cuts every store back to the resumed step.
"""

from __future__ import annotations

import json
import operator
import os
import re
import time
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from trainers.records import Episode
from trainers.run.episodes import EPISODES_DIR, drop_episodes_after, write_eval_episodes
from trainers.run.files import (
    EVAL_FILE,
    METRICS_FILE,
    TENSORBOARD_DIR,
    TEST_FILE,
    TRANSCRIPTS_DIR,
    atomic_write_text,
    flatten_metrics,
    json_value,
    truncate_jsonl,
)
from trainers.run.plots import plot_run
from trainers.run.report import report_kind, write_report
from trainers.run.transcripts import render_transcripts
from trainers.run.trees import drop_trees_after

__all__ = ["RunLogger"]

_TRANSCRIPT_NAME = re.compile(r"eval_step_(\d+)\.md")
_warned_tensorboard = False
_EVENT_FILE = re.compile(r"(events\.out\.tfevents\.)(\d+)(\..*)")


def _date_events_before_now(log_dir: Path) -> None:
    """Rename earlier event files stamped at or after now to one second before it.

    TensorBoard reads a directory's event files in name order, and their names start with the
    writer's wall-clock second; a resumed writer's purge only hides the old steps if its file
    comes last. A clock that moved backwards (a VM's, or another machine's) would sort the old
    file after the new one and the purged steps would reappear."""
    if not log_dir.is_dir():
        return
    now = int(time.time())
    for path in sorted(log_dir.iterdir()):
        match = _EVENT_FILE.fullmatch(path.name)
        if match and int(match[2]) >= now:
            target = path.with_name(f"{match[1]}{now - 1}{match[3]}")
            while target.exists():
                target = target.with_name(target.name + "_")
            path.rename(target)


def _import_summary_writer() -> Any:
    """Returns ``torch.utils.tensorboard.SummaryWriter``, or ``None`` (warning once) without it."""
    global _warned_tensorboard
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as error:
        if not _warned_tensorboard:
            _warned_tensorboard = True
            warnings.warn(
                f"TensorBoard logging is off ({error}); `pip install tensorboard` to enable it. "
                "metrics.jsonl and eval.jsonl are still written.",
                RuntimeWarning,
                stacklevel=3,
            )
        return None
    return SummaryWriter


class RunLogger:
    """Writes a run directory: JSONL metrics, TensorBoard events, plots and transcripts.

    Example:
        >>> with RunLogger("runs/exp1") as log:  # doctest: +SKIP
        ...     log.log_step(1, {"loss": 0.3, "reward": {"planner": 0.5}})
        ...     log.log_eval(1, {"success": 0.25, "return": {"planner": 0.4}})
        ...     log.write_transcripts(1, episodes)

    Plots and ``report.html`` are regenerated after each :meth:`log_eval` and on :meth:`close`
    (when ``plots`` / ``report``); an error there is turned into a warning, so a plot or
    report bug cannot kill a long run.

    Args:
        run_dir: The run directory; created with its parents.
        resume_step: The step of the checkpoint being resumed. Records with a later step are
            removed from ``metrics.jsonl``/``eval.jsonl`` (those steps will be redone), with any
            corrupt line a kill left; transcripts, episodes and trees of later steps are
            deleted, and TensorBoard is told to purge its events from ``resume_step + 1`` on.
        tensorboard: Write TensorBoard events (warns once and carries on when TensorBoard is
            not installed).
        plots: Write ``plots/*.png`` (needs matplotlib; warns once without it).
        report: Write ``report.html`` (``trainers.run.report``).

    Raises:
        FileExistsError: ``run_dir`` already holds a run's metrics and ``resume_step`` is None.
    """

    def __init__(
        self,
        run_dir: str | Path,
        *,
        resume_step: int | None = None,
        tensorboard: bool = True,
        plots: bool = True,
        report: bool = True,
    ) -> None:
        self.run_dir = Path(run_dir)
        self.metrics_path = self.run_dir / METRICS_FILE
        self.eval_path = self.run_dir / EVAL_FILE
        self.test_path = self.run_dir / TEST_FILE
        self.transcripts_dir = self.run_dir / TRANSCRIPTS_DIR
        self.plots_enabled = plots
        self.report_enabled = report
        self._closed = False
        self._tb: Any = None

        if resume_step is None:
            existing = [p.name for p in (self.metrics_path, self.eval_path) if p.exists()]
            if existing:
                raise FileExistsError(
                    f"run dir {self.run_dir} is not empty (it has {', '.join(existing)}): pass a new "
                    "output dir, or resume this run from its checkpoint"
                )
        self.run_dir.mkdir(parents=True, exist_ok=True)
        if resume_step is not None:
            resume_step = operator.index(resume_step)
            truncate_jsonl(self.metrics_path, resume_step)
            truncate_jsonl(self.eval_path, resume_step)
            truncate_jsonl(self.test_path, resume_step)
            self._drop_transcripts_after(resume_step)

        if tensorboard:
            writer_cls = _import_summary_writer()
            if writer_cls is not None:
                if resume_step is not None:
                    _date_events_before_now(self.run_dir / TENSORBOARD_DIR)
                purge = None if resume_step is None else resume_step + 1
                self._tb = writer_cls(log_dir=str(self.run_dir / TENSORBOARD_DIR), purge_step=purge)

    def _drop_transcripts_after(self, step: int) -> None:
        if self.transcripts_dir.is_dir():
            for path in self.transcripts_dir.iterdir():
                match = _TRANSCRIPT_NAME.fullmatch(path.name)
                if match and int(match.group(1)) > step:
                    path.unlink()
        # A resume redoes the later steps: their episodes and trees go too.
        drop_episodes_after(self.run_dir, step)
        drop_trees_after(self.run_dir, step)

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"RunLogger for {self.run_dir} is closed")

    def _append(self, path: Path, tb_prefix: str, step: int, metrics: Mapping[str, Any]) -> dict[str, Any]:
        self._check_open()
        step = operator.index(step)
        flat = flatten_metrics(metrics)
        flat.pop("step", None)
        record = {"step": step, **{key: json_value(value) for key, value in flat.items()}}
        line = json.dumps(record, allow_nan=False) + "\n"
        # Open per write: the file is never left half-open, and fsync bounds what a kill can lose.
        with open(path, "a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())
        if self._tb is not None:
            for key, value in flat.items():
                if isinstance(value, bool | int | float):
                    self._tb.add_scalar(f"{tb_prefix}/{key}", float(value), global_step=step)
            self._tb.flush()
        return record

    def log_step(self, step: int, metrics: Mapping[str, Any]) -> dict[str, Any]:
        """Appends one training step's metrics to ``metrics.jsonl`` and TensorBoard (``train/``).

        Args:
            step: The training step.
            metrics: Metric values (see the module docstring for what is kept).

        Returns:
            The record written.
        """
        return self._append(self.metrics_path, "train", step, metrics)

    def log_eval(
        self,
        step: int,
        metrics: Mapping[str, Any],
        episodes: Sequence[Episode] = (),
        transcripts: int = 3,
    ) -> dict[str, Any]:
        """Appends one evaluation's metrics to ``eval.jsonl`` and TensorBoard (``eval/``), stores
        its episodes, then regenerates the plots and the report (when enabled).

        Args:
            step: The training step the evaluated policy reached.
            metrics: Metric values, e.g. ``{"success": 0.4, "return": {"planner": 0.7}}``.
            episodes: The evaluation's episodes: all go to ``episodes/eval_step_<step>.jsonl``
                (the report's), the first ``transcripts`` to ``transcripts/`` as Markdown.
            transcripts: How many episodes the Markdown transcript shows (0: none).

        Returns:
            The record written.
        """
        record = self._append(self.eval_path, "eval", step, metrics)
        if episodes:
            write_eval_episodes(self.run_dir, step, episodes)
            if transcripts:
                self.write_transcripts(step, episodes, limit=transcripts)
        self._refresh()
        return record

    def repeat_eval(self, step: int, prior: int, metrics: Mapping[str, Any]) -> dict[str, Any]:
        """Logs an evaluation that step ``prior``'s repeats exactly (the same weights playing the
        same greedy episodes, so it was not played): its metrics under ``step``, and a copy of
        ``prior``'s stored episodes, so the report shows them at this step too. No transcript:
        those are of evaluations that were played."""
        record = self._append(self.eval_path, "eval", step, metrics)
        played = self.run_dir / EPISODES_DIR / f"eval_step_{prior:06d}.jsonl"
        if played.is_file():
            atomic_write_text(played.with_name(f"eval_step_{step:06d}.jsonl"), played.read_text())
        self._refresh()
        return record

    def log_test(self, step: int, metrics: Mapping[str, Any]) -> dict[str, Any]:
        """Appends one held-out test evaluation's metrics to ``test.jsonl`` and TensorBoard
        (``test/``). Its episodes are not stored: the report and transcripts show the in-run
        (validation) evaluations, the test tasks only give the number.

        Returns:
            The record written.
        """
        record = self._append(self.test_path, "test", step, metrics)
        self._refresh()
        return record

    def write_transcripts(self, step: int, episodes: Sequence[Episode], limit: int = 3) -> Path:
        """Writes ``transcripts/eval_step_<step:06d>.md`` with the first ``limit`` episodes.

        Each episode shows its task, success, truncation and per-agent returns, then every turn
        (agent, role, turn index, reward, invalid flag, prompt and response). Prompts and
        responses are model-facing text and may hold anything: each goes in a fence longer
        than any backtick run inside it, control characters are escaped, and text longer than
        4000 characters keeps its head and tail with a note of how much was cut.

        Args:
            step: The training step of the evaluation.
            episodes: Evaluation episodes.
            limit: How many episodes to write.

        Returns:
            The path written.
        """
        step = operator.index(step)
        self.transcripts_dir.mkdir(parents=True, exist_ok=True)
        path = self.transcripts_dir / f"eval_step_{step:06d}.md"
        atomic_write_text(path, render_transcripts(step, episodes, limit))
        return path

    def plot(self) -> list[Path]:
        """Regenerates ``plots/*.png`` from the JSONL files; returns the written paths ([] when
        ``plots`` is off or matplotlib is missing)."""
        if not self.plots_enabled:
            return []
        return plot_run(self.run_dir)

    def write_report(self) -> Path | None:
        """Regenerates ``report.html`` from the run directory; returns its path (None when
        ``report`` is off, or nothing a report shows was logged yet)."""
        if not self.report_enabled:
            return None
        if report_kind(self.run_dir) is None:  # e.g. a logger that only wrote transcripts
            return None
        return write_report(self.run_dir)

    def _refresh(self) -> None:
        """Plots, then the report; a bug in either must not end a long run (the JSONL has the data)."""
        for what, make in (("plotting", self.plot), ("writing report.html of", self.write_report)):
            try:
                make()
            except Exception as error:
                warnings.warn(f"{what} {self.run_dir} failed: {error!r}", RuntimeWarning, stacklevel=3)

    def close(self) -> None:
        """Regenerates the plots and the report, flushes and closes TensorBoard. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            self._refresh()
        finally:
            if self._tb is not None:
                self._tb.close()
                self._tb = None

    def __enter__(self) -> RunLogger:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
