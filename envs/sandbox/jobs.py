"""What a sandbox run takes and gives back: limits, a job, its result, and the names the
rest of the package shares (reasons, isolation layers, environment variables)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

__all__ = [
    "REASONS",
    "LAYERS",
    "NOBODY",
    "MAIN_FILE",
    "NAMESPACES_ENV",
    "ALLOW_HOST_ACCESS_ENV",
    "PYTHON_ENV",
    "SandboxUnavailableError",
    "SandboxLimits",
    "ExecResult",
    "FileSpec",
    "SandboxJob",
    "Plan",
    "normalize_files",
]

REASONS = ("ok", "error", "timeout", "memory", "processes", "output_limit", "killed", "crashed")
LAYERS = (
    "bwrap", "userns", "netns", "pidns", "ipcns", "minfs",
    "nobody", "nocaps", "rlimits", "nproc", "budget", "audit",
)  # fmt: skip
NOBODY = 65534
MAIN_FILE = "main.py"  # the program's file name in the working directory (and in tracebacks)
NAMESPACES_ENV = "TEAMGYM_SANDBOX_NAMESPACES"
ALLOW_HOST_ACCESS_ENV = "TEAMGYM_SANDBOX_ALLOW_HOST_ACCESS"
PYTHON_ENV = "TEAMGYM_SANDBOX_PYTHON"


class SandboxUnavailableError(RuntimeError):
    """No isolation layer beyond rlimits can be set up here and the user has not opted in to
    running model-written code with host access (the message says how to get isolation)."""


@dataclass(frozen=True)
class SandboxLimits:
    """Per-run limits. ``timeout_s`` is wall clock for the whole run (startup included).
    ``memory_mb`` caps each process's address space (RLIMIT_AS) and the whole program's
    memory (the sum of its processes' proportional set sizes, checked by the host's
    watchdog); ``max_processes`` caps the program's tasks (processes and threads) together."""

    timeout_s: float = 5.0
    cpu_s: int = 5
    memory_mb: int = 1024
    max_output_bytes: int = 65_536
    max_file_mb: int = 16
    max_processes: int = 64
    network: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.timeout_s, bool) or not isinstance(self.timeout_s, (int, float)):
            raise ValueError(f"SandboxLimits.timeout_s must be a number of seconds, got {self.timeout_s!r}")
        if not (math.isfinite(self.timeout_s) and self.timeout_s > 0):
            raise ValueError(
                f"SandboxLimits.timeout_s must be a positive finite number of seconds, got "
                f"{self.timeout_s!r}; pass e.g. timeout_s=5.0"
            )
        minimum = {"cpu_s": 1, "memory_mb": 64, "max_output_bytes": 1, "max_file_mb": 1, "max_processes": 1}
        for name, low in minimum.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                hint = " (Python needs ~40 MB of address space, numpy ~150)" if name == "memory_mb" else ""
                raise ValueError(
                    f"SandboxLimits.{name} must be an int >= {low}, got {value!r}{hint}; "
                    f"pass e.g. {name}={getattr(SandboxLimits, name)}"
                )
        if not isinstance(self.network, bool):
            raise ValueError(f"SandboxLimits.network must be True or False, got {self.network!r}")


@dataclass(frozen=True)
class ExecResult:
    stdout: str
    stderr: str
    exit_code: int | None  # None: killed by the host before it exited; -N: died of signal N
    duration_s: float
    reason: str  # one of REASONS
    isolation: tuple[str, ...]  # the layers this run had (see the module docstring)

    @property
    def ok(self) -> bool:
        return self.reason == "ok"


FileSpec = Mapping[str, "str | bytes"] | Iterable[tuple[str, "str | bytes"]]


@dataclass(frozen=True)
class SandboxJob:
    """One program for ``SandboxPool``. ``files`` is stored as a sorted tuple of
    ``(name, content)`` pairs, so jobs stay hashable; a mapping is accepted."""

    code: str
    stdin: str = ""
    limits: SandboxLimits | None = None
    files: tuple[tuple[str, str | bytes], ...] | None = None

    def __post_init__(self) -> None:
        if self.files is not None:
            object.__setattr__(self, "files", normalize_files(self.files))


def normalize_files(files: FileSpec) -> tuple[tuple[str, str | bytes], ...]:
    pairs = files.items() if isinstance(files, Mapping) else files
    normalized = []
    for name, content in pairs:
        path = PurePosixPath(name) if isinstance(name, str) else None
        if path is None or not name or path.is_absolute() or ".." in path.parts or name.endswith("/"):
            raise ValueError(f"files: {name!r} must be a relative file path without '..'")
        if path.parts == (MAIN_FILE,):
            raise ValueError(f"files: {MAIN_FILE!r} is reserved for the program itself")
        if not isinstance(content, (str, bytes)):
            raise ValueError(f"files[{name!r}] must be str or bytes, got {type(content).__name__}")
        normalized.append((str(path), content))
    return tuple(sorted(normalized))


@dataclass(frozen=True)
class Plan:
    """Which isolation layers a run sets up (``plans.current_plan`` decides, once per
    interpreter and mode)."""

    python: str
    isolated: bool  # bwrap builds the program's namespaces and filesystem
    userns: bool  # bwrap adds a user namespace (the host user is not root)
    drop_to: int | None  # uid/gid the bootstrap switches to (root hosts only)
    drop_caps: bool  # the program would otherwise keep uid 0's capabilities
    nproc_uid: int | None  # the uid whose existing tasks count toward RLIMIT_NPROC; None: no base
    nproc: bool  # whether the kernel enforces RLIMIT_NPROC for the program at all
    trees: tuple[str, ...] = ()  # host directories bound read-only (isolated)
