"""Plans: which isolation layers a run sets up on this machine, decided once per interpreter
and mode by probe runs.

* ``isolated`` (the default): bubblewrap builds the program's world (``bwrap.py``). As root
  the program then switches to ``nobody``; as another user it runs as uid 65534 of a user
  namespace, without capabilities.
* ``fallback``: rlimits, the audit hook, and ``nobody`` or dropped capabilities as root.
  It hides nothing of the host from a program that gets past the hook, so it runs only when
  the user opts in with ``TEAMGYM_SANDBOX_ALLOW_HOST_ACCESS=1``; otherwise
  ``current_plan()`` raises ``SandboxUnavailableError`` naming how to get isolation.

``TEAMGYM_SANDBOX_NAMESPACES=0`` forces the fallback (it still needs the opt-in), ``=1``
requires isolation even with the opt-in; unset means isolation when it works.
"""

from __future__ import annotations

import os
import sys
import threading

from .bwrap import bwrap_path, interpreter_trees
from .jobs import (
    ALLOW_HOST_ACCESS_ENV,
    NAMESPACES_ENV,
    NOBODY,
    PYTHON_ENV,
    Plan,
    SandboxLimits,
    SandboxUnavailableError,
)
from .session import run_in_sandbox

__all__ = ["current_plan", "isolation_layers"]


_probe_lock = threading.RLock()
_probes: dict[tuple, object] = {}


def _truthy(name: str) -> bool | None:
    value = os.environ.get(name, "").strip().lower()
    if value in ("0", "false", "no", "off"):
        return False
    if value in ("1", "true", "yes", "on"):
        return True
    return None


def current_plan() -> Plan:
    """The plan for this interpreter and the current settings (probed once, then cached).
    Raises ``SandboxUnavailableError`` when the program could only run without isolation and
    the user has not opted in."""
    python = _resolved_dir(os.environ.get(PYTHON_ENV) or sys.executable)
    key = ("plan", python, _truthy(NAMESPACES_ENV), bool(_truthy(ALLOW_HOST_ACCESS_ENV)))
    with _probe_lock:
        if key not in _probes:
            try:
                _probes[key] = _choose_plan(python, key[2], key[3])
            except SandboxUnavailableError as err:
                _probes[key] = err
        plan = _probes[key]
    if isinstance(plan, SandboxUnavailableError):
        raise plan
    return plan


def _resolved_dir(python: str) -> str:
    """``python`` with its directory's symlinks resolved but not its own name: the sandbox binds
    the interpreter's trees at their real paths (a venv reached through a symlinked folder
    would not be there under the link's name), while a venv's ``bin/python`` must keep its
    name, which is itself a link to the base interpreter, to stay that venv."""
    return os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(python))), os.path.basename(python))


def _choose_plan(python: str, isolation: bool | None, allow_host_access: bool) -> Plan:
    why = f"{NAMESPACES_ENV}=0 turns isolation off"
    if isolation is not False:
        plan, why = _isolated_plan(python)
        if plan is not None:
            return plan
    if isolation is True or not allow_host_access:
        fix = (
            "Install bubblewrap (Debian/Ubuntu: apt install bubblewrap; Fedora: dnf install bubblewrap; "
            "Arch: pacman -S bubblewrap)"
            if bwrap_path() is None or isolation is False
            else f"bubblewrap is installed: the message above says what failed (the interpreter "
            f"{python} and its trees must be readable by uid {NOBODY}; {PYTHON_ENV} picks another)"
        )
        raise SandboxUnavailableError(
            f"model-written code cannot run isolated here: {why}. {fix}"
            + (
                ""
                if isolation is True
                else f", or accept the risk with {ALLOW_HOST_ACCESS_ENV}=1: the code then runs with rlimits "
                "and an audit hook only, and a program that gets past the hook can read your files, reach "
                "your sockets and signal your processes"
            )
        )
    root = os.geteuid() == 0
    nobody = root and _probe(_fallback_plan(python, root, nobody=True)) is None
    return _fallback_plan(python, root, nobody)


def _isolated_plan(python: str) -> tuple[Plan | None, str]:
    if bwrap_path() is None:
        return None, "bubblewrap (bwrap) is not installed"
    trees = interpreter_trees(python)
    if os.geteuid() == 0:
        plan = Plan(python, True, False, NOBODY, False, NOBODY, True, trees)
    else:  # Linux >= 5.14 counts RLIMIT_NPROC per user namespace: no base to add
        plan = Plan(python, True, True, None, True, None, True, trees)
    failure = _probe(plan)
    if failure is None:
        return plan, ""
    return None, f"bwrap could not start a program ({failure})"


def _fallback_plan(python: str, root: bool, nobody: bool) -> Plan:
    if nobody:
        return Plan(python, False, False, NOBODY, False, NOBODY, True)
    if root:
        return Plan(python, False, False, None, True, None, False)
    return Plan(python, False, False, None, False, os.getuid(), True)


def _probe(plan: Plan) -> str | None:
    """Run a program that imports from every sys.path entry under ``plan``; None when it
    worked, else the last line of what went wrong."""
    probe = "import sys, os, json, decimal\nfor p in sys.path:\n    os.path.isdir(p) and os.listdir(p)\n"
    probe += "print('ok')"
    result = run_in_sandbox(probe, "", SandboxLimits(timeout_s=30), (), plan)
    if result.ok and result.stdout == "ok\n":
        return None
    lines = [line.strip() for line in (result.stderr or result.reason).splitlines() if line.strip()]
    return lines[-1] if lines else result.reason


def isolation_layers() -> tuple[str, ...]:
    """The layers a run gets on this machine under the current settings (a probe run, cached
    per plan). Raises ``SandboxUnavailableError`` like ``current_plan``."""
    plan = current_plan()
    key = ("layers", plan)
    with _probe_lock:
        if key not in _probes:
            _probes[key] = run_in_sandbox("pass", "", SandboxLimits(), (), plan).isolation
        return _probes[key]
