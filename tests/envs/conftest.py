"""Shared fixtures for env tests.

The documented "register your own env" example is extracted from docs/envs.md and imported
here, so the documented code is exactly what the conformance suite checks.
"""

from __future__ import annotations

import atexit
import functools
import math
import re
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from envs import sandbox
from tests.envs.sandbox_helpers import _system_python_for_nobody

DOCS = Path(__file__).resolve().parents[2] / "docs" / "envs.md"  # its "Register your own environment"
EXAMPLE_MODULE = "guess_env"  # the file name the README tells users to save the example as


def readme_example_source() -> str:
    """The python block that follows the ``<!-- example: guess_env.py -->`` marker."""
    text = DOCS.read_text(encoding="utf-8")
    match = re.search(r"<!-- example: guess_env\.py -->\s*```python\n(.*?)```", text, re.S)
    assert match, "docs/envs.md lost its guess_env.py example block"
    return match.group(1)


def import_readme_example(directory: Path | None = None) -> None:
    """Write the README example to ``directory/guess_env.py`` and import it (registers it).

    Without ``directory``, one temporary directory serves the whole test session and is
    removed when the interpreter exits (test modules import the example at collection time,
    before any fixture could own the directory).
    """
    if directory is None:
        directory = _session_example_dir()
    (directory / f"{EXAMPLE_MODULE}.py").write_text(readme_example_source(), encoding="utf-8")
    if str(directory) not in sys.path:
        sys.path.insert(0, str(directory))
    __import__(EXAMPLE_MODULE)


@functools.cache
def _session_example_dir() -> Path:
    directory = Path(tempfile.mkdtemp(prefix="teamgym-readme-"))
    atexit.register(shutil.rmtree, directory, True)
    return directory


def play_oracle(env, seed: int):
    """Reset ``env`` to ``seed`` and let every role answer ``env.oracle_response`` until
    the episode ends; returns the env (check ``env.success``)."""
    env.reset(seed=seed)
    while env.agents:
        agent = env.agent_selection
        done = env.terminations[agent] or env.truncations[agent]
        env.step(None if done else env.oracle_response(agent))
    return env


# ------------------------------------------------------------ parse time on hostile replies
# Parsing a reply must cost time linear in its length. The check compares the time of each
# size with the next on a ladder of sizes (4x apart), never with a fixed budget: linear
# work grows ~4x per rung, quadratic 16x, cubic 64x. GROWTH_LIMIT (10x) leaves linear code
# 2.5x for noise; NOISE_S absorbs a scheduler pause on a busy machine (linear parsing of
# 200 kB takes milliseconds); CEILING_S is only a hang guard, hundreds of times what linear
# parsing of the largest rung takes. A rung that fails is measured again (the fastest of
# three counts), so one pause is not a verdict. A super-linear parser fails on a rung of a
# few kB to 50 kB, before the 200 kB rung would take minutes.
HOSTILE_SIZES = (3_125, 12_500, 50_000, 200_000)
GROWTH_LIMIT = 10.0
NOISE_S = 0.25
CEILING_S = 30.0


def hostile_text(unit: str, size: int, prefix: str = "") -> str:
    """``prefix`` then as many whole ``unit`` s as fit in ``size`` characters (whole units: a
    block of ``assert`` lines still parses)."""
    return prefix + unit * ((size - len(prefix)) // len(unit))


def assert_linear_time(seconds: Callable[[int], float], what: str, sizes=HOSTILE_SIZES) -> None:
    """``seconds(size)`` (one measurement of the work on a ``size``-character input) grows
    at most linearly along ``sizes``, each 4x the one before (see the constants above)."""
    best = [math.inf] * len(sizes)
    best[0] = seconds(sizes[0])
    for rung in range(1, len(sizes)):
        limit = GROWTH_LIMIT * best[rung - 1] + NOISE_S
        for _ in range(3):
            best[rung] = min(best[rung], seconds(sizes[rung]))
            assert best[rung] < CEILING_S, f"{what}: {sizes[rung]} characters took {best[rung]:.1f} s"
            if best[rung] <= limit:
                break
        else:
            measured = [(n, t) for n, t in zip(sizes, best, strict=True) if t < math.inf]
            times = ", ".join(f"{n}: {t * 1000:.1f} ms" for n, t in measured)
            raise AssertionError(f"{what}: parse time grows faster than the text ({times})")


def timed(fn: Callable[..., object], *args: object) -> float:
    """Seconds one call of ``fn(*args)`` takes."""
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


# ------------------------------------------- the sandbox tests' fixtures (test_sandbox_*.py)
# The modes: tests/envs/sandbox_helpers.py. test_sandbox_battery.py has a mode fixture of its own.
SANDBOX_MODES = ["isolated", "fallback", "isolated-nobody", "fallback-nobody"]


@pytest.fixture(params=SANDBOX_MODES)
def mode(request, monkeypatch) -> tuple[str, ...]:
    """Switch the sandbox to one mode; returns the layers a run gets in it."""
    name = request.param
    monkeypatch.setenv(sandbox.NAMESPACES_ENV, "1" if name.startswith("isolated") else "0")
    monkeypatch.setenv(sandbox.ALLOW_HOST_ACCESS_ENV, "1")
    if name.endswith("nobody"):
        python = _system_python_for_nobody()
        if python is None:
            pytest.skip("needs root, setpriv and a system python3 that nobody can run")
        monkeypatch.setenv(sandbox.PYTHON_ENV, python)
    else:
        monkeypatch.delenv(sandbox.PYTHON_ENV, raising=False)
    try:
        layers = sandbox.isolation_layers()
    except sandbox.SandboxUnavailableError as err:
        pytest.skip(str(err))
    if name.endswith("nobody") and "nobody" not in layers:
        pytest.skip(f"the program does not switch to nobody here: {layers}")
    return layers


@pytest.fixture
def marker() -> str:
    return f"sbxmark{uuid.uuid4().hex}"
