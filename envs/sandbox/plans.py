"""Plans: which isolation layers a run sets up on this machine, decided once per interpreter
and ``TEAMGYM_SANDBOX_NAMESPACES`` mode by probe runs (namespaces if ``unshare`` works, a
drop to ``nobody`` if it can run the interpreter, capabilities dropped, rlimits)."""

from __future__ import annotations

import functools
import os
import shutil
import site
import sys
import threading
from dataclasses import dataclass

from .jobs import NAMESPACES_ENV, NOBODY, PYTHON_ENV, SandboxLimits

__all__ = ["Plan", "current_plan", "isolation_layers", "site_packages", "unshare_path"]


@dataclass(frozen=True)
class Plan:
    python: str
    namespaces: bool
    userns: bool  # unshare --user --map-root-user (when not switching to nobody)
    drop_to: int | None  # uid/gid to switch to (root hosts only)
    drop_caps: bool  # the program would otherwise keep uid 0's capabilities
    nproc_uid: int | None  # the uid whose existing tasks count toward RLIMIT_NPROC; None: no base
    nproc: bool  # whether the kernel enforces RLIMIT_NPROC for the program at all


_probe_lock = threading.RLock()
_probes: dict[tuple, object] = {}


def _namespaces_setting() -> str:
    value = os.environ.get(NAMESPACES_ENV, "").strip().lower()
    if value in ("0", "false", "no", "off"):
        return "off"
    if value in ("1", "true", "yes", "on"):
        return "required"
    return "auto"


def current_plan() -> Plan:
    python = os.environ.get(PYTHON_ENV) or sys.executable
    setting = _namespaces_setting()
    with _probe_lock:
        key = ("plan", python, setting)
        if key not in _probes:
            _probes[key] = _choose_plan(python, setting)
        return _probes[key]


def _choose_plan(python: str, setting: str) -> Plan:
    root = os.geteuid() == 0
    nobody = root and _probe_ok(_fallback_plan(python, root, nobody=True))
    fallback = _fallback_plan(python, root, nobody)
    if setting == "off":
        return fallback
    unshare = unshare_path()
    if unshare is not None:
        plan = _namespace_plan(python, root, nobody)
        if _probe_ok(plan):
            return plan
    if setting == "required":
        raise RuntimeError(
            f"{NAMESPACES_ENV}=1 but namespaces cannot be used here "
            f"({'no unshare on PATH' if unshare is None else 'unshare --pid/--net/--mount failed'}); "
            f"unset it to accept the fallback layers, or enable unprivileged user namespaces"
        )
    return fallback


def _fallback_plan(python: str, root: bool, nobody: bool) -> Plan:
    if nobody:
        return Plan(python, False, False, NOBODY, False, NOBODY, True)
    if root:
        return Plan(python, False, False, None, True, None, False)
    return Plan(python, False, False, None, False, os.getuid(), True)


def _namespace_plan(python: str, root: bool, nobody: bool) -> Plan:
    if nobody:  # real root sets up the namespaces; no user namespace needed
        return Plan(python, True, False, NOBODY, False, NOBODY, True)
    # Linux >= 5.14 counts RLIMIT_NPROC per user namespace; older kernels per host uid.
    per_namespace = _kernel_version() >= (5, 14)
    return Plan(python, True, True, None, True, None if per_namespace else os.getuid(), not root)


def _probe_ok(plan: Plan) -> bool:
    """Run a program that imports from every sys.path entry under ``plan``."""
    probe = "import sys, os, json, decimal\nfor p in sys.path:\n    os.path.isdir(p) and os.listdir(p)\n"
    probe += "print('ok')"
    from .session import run_in_sandbox  # here: session imports this module

    result = run_in_sandbox(probe, "", SandboxLimits(timeout_s=30), (), plan)
    return result.ok and result.stdout == "ok\n"


@functools.lru_cache(maxsize=1)
def unshare_path() -> str | None:
    return shutil.which("unshare")


def _kernel_version() -> tuple[int, ...]:
    numbers = []
    for part in os.uname().release.split(".")[:2]:
        digits = "".join(ch for ch in part if ch.isdigit()) or "0"
        numbers.append(int(digits))
    return tuple(numbers)


@functools.lru_cache(maxsize=8)
def site_packages(python: str) -> list[str]:
    """The host interpreter's site-packages (the child runs with -S); none for another
    interpreter, whose layout we do not know."""
    if os.path.realpath(python) != os.path.realpath(sys.executable):
        return []
    return [path for path in site.getsitepackages() if os.path.isdir(path)]


def isolation_layers() -> tuple[str, ...]:
    """The layers a run gets on this machine under the current ``TEAMGYM_SANDBOX_NAMESPACES``
    setting (a probe run, cached per interpreter and mode)."""
    from .session import run_in_sandbox  # here: session imports this module

    plan = current_plan()
    key = ("layers", plan)
    with _probe_lock:
        if key not in _probes:
            _probes[key] = run_in_sandbox("pass", "", SandboxLimits(), (), plan).isolation
        return _probes[key]
