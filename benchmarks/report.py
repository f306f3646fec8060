"""``python -m benchmarks.report <run dir> [<run dir> ...]``: (re)write each directory's
``report.html`` from what is on disk, and print where it is.

Works on training runs (``trainers.at_grpo``, ``trainers.sft``) and on ``benchmarks.evaluate``
output directories, including those made before reports existed (they show what they
recorded: curves, tables, Markdown transcripts). A training run writes its report at each
evaluation and at the end by itself; this command is for older runs, for a run still in
progress, and for a run copied from another machine. ``--out`` writes the page elsewhere (one
directory only), e.g. to attach it to a bug report. See ``trainers.run.report`` for what the page
shows.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from trainers.errors import ConfigError, run_command
from trainers.run.files import atomic_write_text
from trainers.run.report import REPORT_FILE, build_report, report_kind

__all__ = ["main"]

PROG = "python -m benchmarks.report"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description=(__doc__ or "").split("\n\n")[0].replace("``", "")
    )
    parser.add_argument(
        "run_dirs", nargs="+", metavar="RUN_DIR", help="a training run or evaluation directory"
    )
    parser.add_argument("--out", default=None, help=f"write the page here instead of RUN_DIR/{REPORT_FILE}")
    return parser


def _main(args: list[str]) -> list[Path]:
    options = _parser().parse_args(args)
    if options.out and len(options.run_dirs) > 1:
        raise ConfigError("--out names one file: pass one RUN_DIR with it, or drop --out")
    written = []
    for run_dir in map(Path, options.run_dirs):
        if not run_dir.is_dir():
            raise ConfigError(f"{run_dir} is not a directory; pass a run directory (runs/<name>)")
        if report_kind(run_dir) is None:
            raise ConfigError(
                f"{run_dir} is neither a training run (no metrics.jsonl, eval.jsonl or config.json) nor "
                "an evaluation (no results.json); pass the directory a trainer or benchmarks.evaluate made"
            )
        path = Path(options.out) if options.out else run_dir / REPORT_FILE
        try:
            atomic_write_text(path, build_report(run_dir))
        except OSError as err:
            raise ConfigError(
                f"cannot write {path} ({err.strerror or err}); pass --out a writable file"
            ) from None
        print(f"{report_kind(run_dir)} report: {path}")
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> list[Path]:
    """Command-line entry point; returns the written paths (a mistake exits with status 2)."""
    return run_command(PROG, argv, _main)


if __name__ == "__main__":
    main()
