"""``ConfigError``: what every command raises for a bad configuration value, and
:func:`run_command`, the entry-point wrapper that turns it into one line on stderr.

A user's mistake on a command line (a bad value, an unknown env argument, an output directory
that cannot be written, a model that is not there) is a ``ConfigError`` whose message names the
field and the fix. The commands run their body through :func:`run_command`, which prints
``<prog>: error: <message>`` (argparse's style, as for its own usage errors) and exits with
status 2, without a traceback; ``--debug`` or ``TEAMGYM_DEBUG=1`` re-raises it instead, with
the full traceback.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import TypeVar

from envs.sandbox.jobs import SandboxUnavailableError

__all__ = [
    "ConfigError",
    "DEBUG_ENV",
    "DEBUG_FLAG",
    "DEBUG_HELP",
    "debug_requested",
    "one_line",
    "run_command",
]

DEBUG_FLAG = "--debug"
DEBUG_ENV = "TEAMGYM_DEBUG"
DEBUG_HELP = (
    "Show a configuration error's full traceback instead of its one-line message (which exits with "
    f"status 2); {DEBUG_ENV}=1 in the environment does the same."
)
_Result = TypeVar("_Result")


class ConfigError(ValueError):
    """A configuration value is invalid; the message names the field and the fix."""


def debug_requested(argv: Sequence[str]) -> bool:
    """``--debug`` is in ``argv``, or ``TEAMGYM_DEBUG`` is set (to anything but ``0``, ``false``,
    ``no``, ``off`` or nothing)."""
    value = os.environ.get(DEBUG_ENV, "").strip().lower()
    return DEBUG_FLAG in argv or value not in ("", "0", "false", "no", "off")


def one_line(message: object) -> str:
    """``message`` as one line: line breaks (and the spaces around them) become one space."""
    return re.sub(r"\s*\n\s*", " ", str(message).strip())


def run_command(prog: str, argv: Sequence[str] | None, body: Callable[[list[str]], _Result]) -> _Result:
    """``body(args)``, with ``args`` the command line (``sys.argv[1:]`` when ``argv`` is None)
    less ``--debug``; a ``ConfigError`` it raises is printed as ``<prog>: error: <message>``
    on one stderr line and ends the command with ``SystemExit(2)``.

    With ``--debug`` or ``TEAMGYM_DEBUG=1`` the error propagates with its traceback instead.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    debug = debug_requested(args)
    args = [arg for arg in args if arg != DEBUG_FLAG]
    try:
        return body(args)
    except (ConfigError, SandboxUnavailableError) as err:  # a machine set-up problem, same fix style
        if debug:
            raise
        print(f"{prog}: error: {one_line(err)}", file=sys.stderr)
        raise SystemExit(2) from None
