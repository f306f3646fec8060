"""The progress display of a long command: a bar, what is being done now, the latest metrics.

    with RunProgress(total=10, desc="at_grpo sokoban") as progress:
        progress.phase("loading model")            # shown from the first second
        progress.phase("evaluating 16 held-out tasks")
        for step in range(1, 11):
            progress.phase(f"step {step}: rolling out")
            ...
            progress.show({"reward": 0.12, "success": 0.0})   # kept until the next show()
            progress.advance()

On a terminal it takes two lines, so neither one is cut at 80 columns and the bar keeps its
width::

    at_grpo sokoban  3/10 |###       | 01:35<03:40, 31.7s/step | step 4: rolling out
      step 3: reward 0.120  success 0.00  invalid 0.80 | held-out (step 0): success 0.00

and the clock ticks every second while a phase runs (a step can take a minute). Elsewhere
(a log file, a notebook's captured stream) it is one line per change, with everything on it.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Mapping
from typing import IO, Any

__all__ = ["RunProgress", "format_metrics"]

_BAR = "{desc} {n_fmt}/{total_fmt} |{bar:10}| {elapsed}<{remaining}, {rate_fmt}{postfix}"


def format_metrics(metrics: Mapping[str, Any]) -> str:
    """``{'reward': 0.1234, 'success': 0.5}`` -> ``'reward 0.123  success 0.500'`` (text as given)."""
    parts = []
    for name, value in metrics.items():
        text = f"{value:.3f}" if isinstance(value, float) else str(value)
        parts.append(f"{name} {text}")
    return "  ".join(parts)


class RunProgress:
    """A progress bar over ``total`` units plus the current phase and the latest metrics.

    Args:
        total: Units of work (training steps; None: unknown, a count without a bar).
        initial: Units already done (a resumed run).
        desc: Label at the start of the bar.
        unit: What one unit is called (``step/s`` or ``s/step`` in the rate).
        enabled: False: show nothing (``--no-progress``).
        file: Where to draw (default stderr).
        two_lines: Status on a second line (None: when ``file`` is a terminal).
        tick_seconds: How often the clock is redrawn while nothing else changes (terminals only).
    """

    def __init__(
        self,
        total: int | None,
        *,
        initial: int = 0,
        desc: str = "",
        unit: str = "step",
        enabled: bool = True,
        file: IO[str] | None = None,
        two_lines: bool | None = None,
        tick_seconds: float = 1.0,
    ) -> None:
        from tqdm import tqdm  # the plain one: the same drawing in a terminal, a log and a notebook

        self.file = file if file is not None else sys.stderr
        interactive = bool(getattr(self.file, "isatty", lambda: False)())
        self.two_lines = interactive if two_lines is None else two_lines
        self._phase = ""
        self._metrics = ""
        self._lock = threading.Lock()
        self._bar = tqdm(
            total=total,
            initial=initial,
            desc=desc,
            unit=unit,
            bar_format=_BAR,
            disable=not enabled,
            file=self.file,
            dynamic_ncols=interactive,
            mininterval=0,
            leave=True,
        )
        self._status = None
        if self.two_lines and enabled:
            self._status = tqdm(
                total=0, bar_format="  {desc}", position=1, disable=False, file=self.file, leave=True, desc=""
            )
        self._stop = threading.Event()
        self._ticker = None
        if interactive and enabled and tick_seconds > 0:
            self._ticker = threading.Thread(target=self._tick, args=(tick_seconds,), daemon=True)
            self._ticker.start()

    # -------------------------------------------------------------- what callers use
    def phase(self, text: str) -> None:
        """What is being done now (replaces the previous phase; the metrics stay)."""
        with self._lock:
            self._phase = text
            self._redraw()

    def show(self, metrics: Mapping[str, Any] | str, label: str = "") -> None:
        """The latest metrics (a mapping, or text as it should appear), shown until the next call."""
        text = metrics if isinstance(metrics, str) else format_metrics(metrics)
        with self._lock:
            self._metrics = f"{label}: {text}" if label else text
            self._redraw()

    def advance(self, units: int = 1) -> None:
        """``units`` more done."""
        with self._lock:
            self._bar.update(units)
            self._redraw()

    def resume_at(self, units: int) -> None:
        """Start counting at ``units`` already done (a resumed run), without a rate jump."""
        with self._lock:
            self._bar.initial = self._bar.n = self._bar.last_print_n = units
            self._redraw()

    def write(self, text: str) -> None:
        """A message above the bar (print() would tear the bar apart)."""
        with self._lock:
            self._bar.write(text, file=self.file)

    def line(self) -> str:
        """The status text as drawn now (phase and metrics), e.g. for tests and logs."""
        if self._status is not None:
            return f"{self._phase} || {self._metrics}"
        return " | ".join(part for part in (self._phase, self._metrics) if part)

    def close(self) -> None:
        """Stop the clock and leave the last drawing on screen."""
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
            self._ticker = None
        with self._lock:
            self._bar.close()
            if self._status is not None:
                self._status.close()

    def __enter__(self) -> RunProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -------------------------------------------------------------- drawing
    def _redraw(self) -> None:
        if self._status is not None:
            self._bar.set_postfix_str(self._phase, refresh=False)
            self._status.set_description_str(self._metrics, refresh=False)
            self._bar.refresh()
            self._status.refresh()
        else:
            self._bar.set_postfix_str(self.line(), refresh=False)
            self._bar.refresh()

    def _tick(self, seconds: float) -> None:
        while not self._stop.wait(seconds):
            with self._lock:
                if not self._bar.disable:
                    self._bar.refresh()
