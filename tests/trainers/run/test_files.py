"""trainers.run.files: what a run directory's files are and how they are written."""

from __future__ import annotations

import stat
import subprocess
import sys

import pytest

from tests.conftest import SUBPROCESS_TIMEOUT_S
from trainers.run.files import atomic_write_text, read_jsonl

WRITE = (
    "import os, sys; from pathlib import Path; os.umask(int(sys.argv[1], 8)); "
    "from trainers.run.files import atomic_write_text; atomic_write_text(Path(sys.argv[2]), 'x')"
)


@pytest.mark.parametrize(("umask", "mode"), [("022", 0o644), ("002", 0o664), ("077", 0o600)])
def test_atomic_writes_follow_the_umask_like_any_other_file(tmp_path, umask, mode):
    # report.html and every other file written this way was 0600 (the temp file's mode), so a
    # colleague or a web server could not read a run's report (issue 52, item 3)
    path = tmp_path / "report.html"
    subprocess.run([sys.executable, "-c", WRITE, umask, str(path)], check=True, timeout=SUBPROCESS_TIMEOUT_S)
    assert stat.S_IMODE(path.stat().st_mode) == mode
    assert path.read_text() == "x"


def test_an_atomic_write_replaces_the_file_and_leaves_no_temp_file(tmp_path):
    path = tmp_path / "metrics.jsonl"
    atomic_write_text(path, '{"step": 1}\n')
    atomic_write_text(path, '{"step": 2}\n')
    assert read_jsonl(path) == [{"step": 2}]
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.jsonl"]
