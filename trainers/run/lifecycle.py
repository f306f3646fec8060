"""``Run``: one run directory through its life, the same for every command that trains.

A training command (``trainers.at_grpo`` and its aliases, ``trainers.sft``) does, around its
own steps::

    run = Run.open("trainers.sft", config, stem="plan_path-sft")
    ...build the model, load run.checkpoint into it (its step, or 0)...
    with run.begin(step, config, close_display=progress.close):
        ...evaluate step 0 unless run.evals has it, the step loop (run.logger logs)...
        if run.needs_final_evaluation(final): ...evaluate the final weights...

``open`` makes a new run directory (or takes the one ``--resume`` names and its newest intact
checkpoint), takes its writer lock (``trainers.run.lock``: a second process training in the same
directory is refused, naming the first one's pid) and seeds every global generator
(``trainers.seeding``); ``begin`` opens the
logger (on resume it cuts metrics, evaluations, transcripts, episodes, trees and TensorBoard
back to the resumed step), writes ``config.json`` and the session's provenance, and reads the
evaluations already on disk. Leaving the ``with`` block refreshes the plots and the report;
leaving it on Ctrl-C prints the last complete checkpoint and the command that continues the
run. So the two commands cannot drift apart in any of these.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from trainers.cli import config_to_dict
from trainers.records import Episode
from trainers.run.checkpoint import latest_checkpoint, resume_checkpoint
from trainers.run.dirs import new_run_dir
from trainers.run.files import (
    EVAL_FILE,
    METRICS_FILE,
    PLOTS_DIR,
    TENSORBOARD_DIR,
    TEST_FILE,
    atomic_write_text,
    read_jsonl,
)
from trainers.run.lock import RunLock
from trainers.run.log import RunLogger
from trainers.run.provenance import record_session
from trainers.run.report import REPORT_FILE
from trainers.seeding import seed_everything

__all__ = ["CONFIG_FILE", "Run", "run_files_lines"]

CONFIG_FILE = "config.json"


class Run:
    """A run directory a command trains in (module docstring).

    Attributes:
        command: The module that trains it (``"trainers.at_grpo"``), for the resume line.
        dir: The run directory.
        checkpoint: The checkpoint to resume from (None: a new run, or a resumed run that
            had saved none yet).
        resumed: Whether the run continues an earlier one (``--resume``).
        start: The step the run starts after (0 for a new run); set by ``begin``.
        logger: Its ``RunLogger``; set by ``begin``.
        evals / tests: The in-run / held-out test evaluations on disk when it began, by step;
            the commands add the ones they make.
    """

    def __init__(
        self,
        command: str,
        run_dir: Path,
        checkpoint: Path | None,
        *,
        resumed: bool,
        lock: RunLock | None = None,
    ) -> None:
        self.command = command
        self.dir = run_dir
        self.checkpoint = checkpoint
        self.resumed = resumed
        self.start = 0
        self.logger: RunLogger | None = None
        self.evals: dict[int, dict[str, Any]] = {}
        self.tests: dict[int, dict[str, Any]] = {}
        self._close_display: Callable[[], None] | None = None
        self._lock = lock

    @classmethod
    def open(cls, command: str, config: Any, *, stem: str) -> Run:
        """The run directory of ``config`` (a resolved ``TrainConfig`` or ``SFTConfig``): the one
        ``config.resume`` names and its newest intact checkpoint, or a new one under
        ``config.output_dir`` (``config.run_name``, else ``<stem>-<date>-<time>``). Seeds every
        global generator with ``config.seed`` (LoRA initialisation draws from torch's), before
        the caller builds its model. Holds the directory's writer lock until the ``with`` block
        ends (or ``release``).

        Raises:
            ConfigError: Another process writes the directory (names its pid), or it cannot be
                made or resumed.
        """
        resume = config.resume
        run_dir = Path(resume) if resume else new_run_dir(config.output_dir, config.run_name, stem)
        lock = RunLock.acquire(run_dir)  # before choosing a checkpoint another writer may be saving
        try:
            checkpoint = resume_checkpoint(run_dir) if resume else None
        except BaseException:
            lock.release()
            raise
        seed_everything(config.seed)
        return cls(command, run_dir, checkpoint, resumed=bool(resume), lock=lock)

    def release(self) -> None:
        """Let another process write the directory (the ``with`` block's end does it; a command
        that fails before its ``with`` block calls it so that a later run in the same process,
        a benchmark's next arm, can take the directory)."""
        if self._lock is not None:
            self._lock.release()

    def begin(self, start: int, config: Any, *, close_display: Callable[[], None] | None = None) -> Run:
        """Start logging after step ``start`` (the loaded checkpoint's, else 0): the logger (with
        ``config.tensorboard`` / ``config.plots``), ``config.json``, the session's provenance, the
        evaluations already made. Use as ``with``. ``close_display``: ends the command's
        progress display before the interrupt message."""
        self.start = start
        self._close_display = close_display
        self.logger = RunLogger(
            self.dir,
            resume_step=start if self.resumed else None,
            tensorboard=config.tensorboard,
            plots=config.plots,
        )
        atomic_write_text(self.dir / CONFIG_FILE, json.dumps(config_to_dict(config), indent=2))
        record_session(self.dir, "resumed" if self.resumed else "started")
        self.evals = {record["step"]: record for record in read_jsonl(self.dir / EVAL_FILE)}
        self.tests = {record["step"]: record for record in read_jsonl(self.dir / TEST_FILE)}
        return self

    def log_eval(
        self, step: int, metrics: Mapping[str, Any], episodes: Sequence[Episode] = (), transcripts: int = 3
    ) -> dict[str, Any]:
        """Log an in-run evaluation (``RunLogger.log_eval``) and keep it in ``evals``."""
        assert self.logger is not None, "Run.begin() first"
        self.evals[step] = self.logger.log_eval(step, metrics, episodes, transcripts=transcripts)
        return self.evals[step]

    def repeat_eval(self, step: int, prior: int, metrics: Mapping[str, Any]) -> dict[str, Any]:
        """Log step ``prior``'s in-run evaluation again for ``step`` (``RunLogger.repeat_eval``)
        and keep it in ``evals``."""
        assert self.logger is not None, "Run.begin() first"
        self.evals[step] = self.logger.repeat_eval(step, prior, metrics)
        return self.evals[step]

    def log_test(self, step: int, metrics: Mapping[str, Any]) -> dict[str, Any]:
        """Log a held-out test evaluation (``RunLogger.log_test``) and keep it in ``tests``."""
        assert self.logger is not None, "Run.begin() first"
        self.tests[step] = self.logger.log_test(step, metrics)
        return self.tests[step]

    def opening_line(self) -> str:
        """Where the run lives, and the step it resumes after."""
        return f"run dir: {self.dir}" + (f" (resuming after step {self.start})" if self.resumed else "")

    def resume_command(self) -> str:
        """The command that continues this run from its last checkpoint."""
        return f"python -m {self.command} --resume {self.dir}"

    def lost_line(self) -> str:
        """What an interrupted or failed run prints: its last complete checkpoint and how to go on."""
        done = latest_checkpoint(self.dir) or "none"
        return f"last complete checkpoint: {done}; continue with: {self.resume_command()}"

    def needs_final_evaluation(self, final: int) -> bool:
        """Whether the weights of step ``final`` were never evaluated in-run: a resume that asked
        for no new step (``--steps`` at its checkpoint, to end a run early) must evaluate them
        rather than report an older evaluation as the run's result."""
        return final not in self.evals

    def step_records(self) -> list[dict[str, Any]]:
        """The training steps' metrics logged so far (``metrics.jsonl``)."""
        return read_jsonl(self.dir / METRICS_FILE)

    def last_update(self, until: int) -> int:
        """The latest step <= ``until`` that changed the weights (0: none since the run's start
        weights). A step where every unit skipped its update (all its groups zero-variance, so
        all advantages zero: no optimizer step, no ``optimizer_steps`` metric) leaves them as
        they were; a step logged without the learner's metrics counts as a change."""
        changed = [
            r["step"]
            for r in self.step_records()
            if r["step"] <= until and ("optimizer_steps" in r or "samples_trained" not in r)
        ]
        return max(changed, default=0)

    def __enter__(self) -> Run:
        if self.logger is None:
            raise RuntimeError("Run.begin() first: it opens the logger the with-block uses")
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, traceback: Any) -> None:
        assert self.logger is not None
        try:
            self.logger.close()  # plots and the report, even after an interrupt
        finally:
            self.release()
        if kind is KeyboardInterrupt:
            if self._close_display is not None:
                self._close_display()  # a message inside the live display would tear it apart
            print(f"\ninterrupted; {self.lost_line()}", file=sys.stderr)


def run_files_lines(run_dir: Path, command: str) -> list[str]:
    """The end of every training command's summary: where its files are and how to go on."""
    return [
        f"  metrics     {run_dir / METRICS_FILE} ({EVAL_FILE}, {TEST_FILE})",
        f"  report      {run_dir / REPORT_FILE} (open it in a browser)",
        f"  plots       {run_dir / PLOTS_DIR}",
        f"  tensorboard tensorboard --logdir {run_dir / TENSORBOARD_DIR}",
        f"  resume      python -m {command} --resume {run_dir} --steps N",
    ]
