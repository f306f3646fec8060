"""Helpers shared by the sandbox tests (``test_sandbox_programs.py``, ``test_sandbox_limits.py``,
``test_sandbox_isolation.py``); their ``mode`` and ``marker`` fixtures are in ``conftest.py``.

Modes: ``isolated`` (``TEAMGYM_SANDBOX_NAMESPACES=1``: bubblewrap; skipped where bwrap
cannot run) and ``fallback`` (``=0`` with ``TEAMGYM_SANDBOX_ALLOW_HOST_ACCESS=1``). As
root, two more run the same tests with another interpreter (``TEAMGYM_SANDBOX_PYTHON`` = a
system interpreter that user nobody can run, when the test interpreter is not one):
skipped where there is none. The hostile-program battery by attack class is in
``test_sandbox_battery.py``.
Each hostile program prints its working directory first, so a test can check that the
directory is gone and that no process whose command line carries it (or the program's
unique marker) survived.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile

from envs.sandbox import SandboxLimits
from tests.conftest import SUBPROCESS_TIMEOUT_S

SYSTEM_PYTHONS = ("/usr/bin/python3", "/usr/local/bin/python3")
# The tests' hostile programs end by themselves or on another cap (memory, output), never on the
# clock: its limit is generous so that a busy machine, slow to start an interpreter, passes too.
HOSTILE = SandboxLimits(timeout_s=30.0, cpu_s=10, memory_mb=256, max_output_bytes=4096, max_processes=16)


@functools.lru_cache(maxsize=1)
def _system_python_for_nobody() -> str | None:
    """An interpreter other than this one that user nobody can run, for the nobody modes."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        return None
    for python in SYSTEM_PYTHONS:
        if os.path.exists(python) and os.path.realpath(python) != os.path.realpath(sys.executable):
            check = subprocess.run(
                ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, "-c", "import json"],
                capture_output=True,
                timeout=SUBPROCESS_TIMEOUT_S,
            )
            if check.returncode == 0:
                return python
    return None


def processes_with(*needles: str) -> list[str]:
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                cmdline = handle.read()
        except OSError:
            continue
        if any(needle.encode() in cmdline for needle in needles):
            found.append(f"{name}: {cmdline[:200]!r}")
    return found


def assert_cleaned_up(result, marker: str) -> None:
    """The program's first stdout line is its working directory: gone, and no process
    carrying it or the marker in its command line is left."""
    workdir = result.stdout.splitlines()[0]
    assert workdir.startswith(os.path.realpath(tempfile.gettempdir())), result
    assert "teamgym-sandbox-" in workdir
    assert not os.path.exists(workdir)
    assert processes_with(workdir, marker) == []


def hostile(body: str, marker: str) -> str:
    """A program that prints its working directory, then runs ``body`` (with ``MARKER``)."""
    return f"import os, sys\nMARKER = {marker!r}\nprint(os.getcwd(), flush=True)\n{body}"
