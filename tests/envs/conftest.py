"""Shared fixtures for env tests.

The README's "register your own env" example is extracted from README.md and imported
here, so the documented code is exactly what the conformance suite checks.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
EXAMPLE_MODULE = "guess_env"  # the file name the README tells users to save the example as


def readme_example_source() -> str:
    """The python block that follows the ``<!-- example: guess_env.py -->`` marker."""
    text = README.read_text(encoding="utf-8")
    match = re.search(r"<!-- example: guess_env\.py -->\s*```python\n(.*?)```", text, re.S)
    assert match, "README.md lost its guess_env.py example block"
    return match.group(1)


def import_readme_example(directory: Path) -> None:
    """Write the README example to ``directory/guess_env.py`` and import it (registers it)."""
    (directory / f"{EXAMPLE_MODULE}.py").write_text(readme_example_source(), encoding="utf-8")
    if str(directory) not in sys.path:
        sys.path.insert(0, str(directory))
    __import__(EXAMPLE_MODULE)


def play_oracle(env, seed: int):
    """Reset ``env`` to ``seed`` and let every role answer ``env.oracle_response`` until
    the episode ends; returns the env (check ``env.success``)."""
    env.reset(seed=seed)
    while env.agents:
        agent = env.agent_selection
        done = env.terminations[agent] or env.truncations[agent]
        env.step(None if done else env.oracle_response(agent))
    return env
