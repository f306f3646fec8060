"""The run directory a training command leaves behind for a researcher to read and plot.

:class:`RunLogger` writes, under ``run_dir``::

    metrics.jsonl                      one JSON object per training step: {"step": 12, ...}
    eval.jsonl                         one JSON object per evaluation:    {"step": 12, ...}
    test.jsonl                         the held-out test evaluations (before and after)
    tensorboard/                       TensorBoard events (train/<key>, eval/<key>)
    plots/train_reward.png, ...        matplotlib plots (``trainers.plots.plot_run``)
    transcripts/eval_step_000012.md    readable evaluation episodes
    episodes/eval_step_000012.jsonl    every evaluation episode in full (``trainers.episode_store``)
    report.html                        the run on one offline page (``trainers.report``)

The JSONL files are the source of truth: every line is appended, flushed and fsynced, so a
killed run loses at most the line being written, and the plots can always be regenerated from
them (``python -c "from trainers.plots import plot_run; plot_run('runs/x')"``).

Metric values: nested mappings are flattened with ``"/"`` (``{"reward": {"planner": 0.5}}``
becomes ``"reward/planner": 0.5``); numpy (and other 0-d array) scalars become Python scalars;
non-finite floats are written as ``null`` (JSON has no NaN; TensorBoard still gets the NaN, a
diverging loss should show there); everything that is not a number, bool, string or ``None``
(lists, arrays, arbitrary objects) is dropped. A ``"step"`` key inside the metrics is dropped too:
the ``step`` argument is the record's step.
"""

from __future__ import annotations

import json
import math
import operator
import os
import re
import tempfile
import time
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from trainers.records import Episode

__all__ = [
    "RunLogger",
    "atomic_write_text",
    "flatten_metrics",
    "printable_excerpt",
    "read_jsonl",
    "render_transcripts",
]

METRICS_FILE = "metrics.jsonl"
EVAL_FILE = "eval.jsonl"
TEST_FILE = "test.jsonl"
TENSORBOARD_DIR = "tensorboard"
PLOTS_DIR = "plots"
TRANSCRIPTS_DIR = "transcripts"

# Longer prompts/responses are cut in transcripts: a rambling 30k-token response would
# otherwise bury the other episodes.
MAX_TRANSCRIPT_CHARS = 4000

_TRANSCRIPT_NAME = re.compile(r"eval_step_(\d+)\.md")
# C0 controls except tab/newline, and DEL: terminal escapes and NULs make a .md file unreadable.
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")

_warned_tensorboard = False
_DROP = object()  # "not loggable" marker (None is a loggable value)

Scalar = bool | int | float | str | None


def flatten_metrics(metrics: Mapping[str, Any], prefix: str = "") -> dict[str, Scalar]:
    """Flattens nested mappings into ``"a/b"`` keys and keeps only loggable scalars.

    Args:
        metrics: Metric values, possibly nested mappings.
        prefix: Key prefix of this level (used by the recursion).

    Returns:
        Keys to Python ``bool``/``int``/``float``/``str``/``None`` values. Numpy scalars and 0-d
        arrays/tensors are converted with ``.item()``; non-finite floats are kept (see
        :func:`_json_value`); other values (lists, arrays, objects) are dropped.
    """
    flat: dict[str, Scalar] = {}
    for key, value in metrics.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten_metrics(value, prefix=f"{name}/"))
            continue
        scalar = _to_scalar(value)
        if scalar is not _DROP:
            flat[name] = scalar
    return flat


def _to_scalar(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    elif getattr(value, "shape", None) == () and hasattr(value, "item"):
        # 0-d numpy arrays and torch tensors (torch.Size(()) == ()).
        value = value.item()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return _DROP


def _json_value(value: Scalar) -> Scalar:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _parse_lines(text: str) -> tuple[list[dict[str, Any]], list[int]]:
    """Parses JSONL text; returns the JSON objects and the 1-based numbers of the bad lines."""
    records: list[dict[str, Any]] = []
    bad: list[int] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            bad.append(number)
            continue
        if isinstance(record, dict):
            records.append(record)
        else:
            bad.append(number)
    return records, bad


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Reads a JSONL file of objects, skipping lines that are not valid JSON objects.

    A corrupt last line is what a killed run leaves behind and is skipped silently; a corrupt
    line anywhere else is skipped with a ``RuntimeWarning``, since nothing here writes one.

    Args:
        path: The file. A missing file reads as no records.

    Returns:
        The records, in file order.
    """
    path = Path(path)
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8", errors="replace")
    records, bad = _parse_lines(text)
    last = len(text.splitlines())
    inner = [number for number in bad if number != last]
    if inner:
        warnings.warn(
            f"{path}: skipped {len(inner)} corrupt line(s) (line {inner[0]} first)",
            RuntimeWarning,
            stacklevel=2,
        )
    return records


def atomic_write_text(path: Path, text: str) -> None:
    """Writes ``text`` to a temp file in ``path``'s dir, fsyncs it and renames it over ``path``."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace", newline="\n") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _truncate_jsonl(path: Path, max_step: int) -> None:
    """Keeps the records with ``step <= max_step`` (and drops corrupt lines), atomically."""
    if not path.exists():
        return
    records, _ = _parse_lines(path.read_text(encoding="utf-8", errors="replace"))
    kept = [r for r in records if isinstance(r.get("step"), int) and r["step"] <= max_step]
    atomic_write_text(path, "".join(json.dumps(r, allow_nan=False) + "\n" for r in kept))


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


def _fence(text: str) -> str:
    """A backtick fence longer than any backtick run in ``text``, so the text cannot close it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _clip(text: str, limit: int = MAX_TRANSCRIPT_CHARS) -> tuple[str, int]:
    """Keeps the head and tail of ``text`` (the tail holds a response's final answer and a
    prompt's current state); returns the kept text and how many characters were cut."""
    if len(text) <= limit:
        return text, 0
    head = limit // 2
    tail = limit - head
    cut = len(text) - limit
    return f"{text[:head]}\n[... {cut:,} characters cut ...]\n{text[-tail:]}", cut


def printable_excerpt(text: str, limit: int = MAX_TRANSCRIPT_CHARS) -> tuple[str, int]:
    """``text`` made fit to read: newlines normalised, control characters written as ``\\xNN``,
    head and tail kept when longer than ``limit``; returns it and how many characters were cut."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL_CHARS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    return _clip(text, limit)


def _code_block(text: str) -> str:
    text, cut = printable_excerpt(text)
    fence = _fence(text)
    block = f"{fence}text\n{text}\n{fence}\n"
    if cut:
        block += (
            f"\n*(truncated: {cut:,} of {cut + MAX_TRANSCRIPT_CHARS:,} characters cut from the middle)*\n"
        )
    return block


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def render_transcripts(
    step: int, episodes: Sequence[Episode], limit: int = 3, title: str | None = None
) -> str:
    """Renders the first ``limit`` episodes as Markdown (see :meth:`RunLogger.write_transcripts`)
    under ``title`` (default: "Evaluation transcripts, step <step>")."""
    shown = list(episodes[:limit])
    lines = [f"# {title or f'Evaluation transcripts, step {step}'}", ""]
    lines.append(f"Showing {len(shown)} of {len(episodes)} episode(s).")
    lines.append("")
    for number, episode in enumerate(shown, start=1):
        returns = ", ".join(f"{agent} = {_fmt(value)}" for agent, value in episode.returns.items())
        lines += [
            f"## Episode {number}: {episode.task} (episode {episode.index})",
            "",
            f"- success: {'yes' if episode.success else 'no'}",
            f"- truncated: {'yes' if episode.truncated else 'no'}",
            f"- turns: {episode.length}",
            f"- returns: {returns or '(none)'}",
            "",
        ]
        for turn in episode.turns:
            lines += [
                f"### Step {turn.step}: {turn.agent} ({turn.role}), turn {turn.turn}",
                "",
                f"reward {_fmt(turn.reward)} · invalid: {'yes' if turn.invalid else 'no'}"
                f" · finish: {turn.finish_reason}",
                "",
                "**Prompt**",
                "",
                _code_block(turn.prompt),
                "**Response**",
                "",
                _code_block(turn.response),
            ]
    return "\n".join(lines)


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
        report: Write ``report.html`` (``trainers.report``).

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
            _truncate_jsonl(self.metrics_path, resume_step)
            _truncate_jsonl(self.eval_path, resume_step)
            _truncate_jsonl(self.test_path, resume_step)
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
        # A resume redoes the later steps: their episodes and trees go too (those modules import this one).
        from trainers.episode_store import drop_episodes_after
        from trainers.tree_store import drop_trees_after

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
        record = {"step": step, **{key: _json_value(value) for key, value in flat.items()}}
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
            from trainers.episode_store import write_eval_episodes  # it imports this module

            write_eval_episodes(self.run_dir, step, episodes)
            if transcripts:
                self.write_transcripts(step, episodes, limit=transcripts)
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
        from trainers.plots import plot_run

        return plot_run(self.run_dir)

    def write_report(self) -> Path | None:
        """Regenerates ``report.html`` from the run directory; returns its path (None when
        ``report`` is off, or nothing a report shows was logged yet)."""
        if not self.report_enabled:
            return None
        from trainers.report import report_kind, write_report

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
