"""The test suite cleans up after itself and keeps its quiet output quiet."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SUBPROCESS_TIMEOUT_S
from tests.memory import REPORT_ENV

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_a_test_session_leaves_no_temp_folder_and_prints_nothing_stray(tmp_path):
    # The modules that import the README example at collection time (they used to leave a
    # teamgym-readme-* folder behind on every run), run with a temp dir of their own.
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    selection = ["tests/envs/test_parsing.py", "-k", "extract_answer or builtin_envs_are_registered"]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/envs/test_conformance.py"]
        + selection,
        cwd=REPO,
        # without the CI run's memory report (it prints a table and owns its files)
        env={**{k: v for k, v in os.environ.items() if k != REPORT_ENV}, "TMPDIR": str(tmp)},
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT_S,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    left = sorted(p.name for p in tmp.iterdir() if not p.name.startswith("pytest-of-"))  # pytest's own
    assert left == [], f"the test session left {left} in its temp dir"
    # -q prints progress dots and one summary line; anything else is a stray print.
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    stray = [line for line in lines if not re.fullmatch(r"[.sx]+\s*(\[\s*\d+%\])?|\d+ passed.*", line)]
    assert stray == [], stray


def test_no_test_bypasses_output_capture():
    # capsys.disabled() writes through pytest's capture into everyone's -q output.
    offenders = [
        str(path.relative_to(REPO))
        for path in (REPO / "tests").rglob("*.py")
        if path.name != Path(__file__).name and re.search(r"cap(sys|fd)\.disabled\(", path.read_text())
    ]
    assert offenders == []
