"""The tool team's program runs (``team="tool"`` of a planning env): which sandbox job a tool
reply runs and how its run is read. Text in, text out; the env decides the rewards."""

from __future__ import annotations

from dataclasses import dataclass

from envs.core import to_ascii
from envs.parsing import extract_code
from envs.sandbox import ExecResult, SandboxJob, SandboxLimits

__all__ = [
    "ProgramRun",
    "job_for_reply",
    "read_run",
    "role_job",
    "MAX_PROGRAM_CHARS",
    "MAX_SHOWN_OUTPUT_CHARS",
]

MAX_PROGRAM_CHARS = 1500  # of the program, shown to the plan agent
MAX_SHOWN_OUTPUT_CHARS = 300  # of what it printed (or of its error), shown to both agents
_MAX_READ_LINE_CHARS = 4000  # of the last printed line, parsed as moves (81 Sudoku fills fit)


@dataclass(frozen=True)
class ProgramRun:
    """What one tool program did: ``printed`` is the last non-empty line of its output (the
    moves to parse), ``failure`` the reward term it costs (``exec_error``, ``timeout``,
    ``no_output``) or None, ``shown`` what the agents are told it printed or why it failed."""

    printed: str
    failure: str | None
    shown: str


def role_job(role: str, goal: str, example: str) -> str:
    """A tool team role's job, the last line of its prompt: ``goal`` says what solves the
    puzzle ("every move from A to G"), ``example`` is a line in the answer grammar."""
    if role == "tool":
        return (
            "You are the tool agent: write a Python program that reads the grid above from standard "
            f"input, exactly as shown (numbers included), and prints {goal} on its last line, e.g. "
            f'print("{example}"). It runs in a sandbox (standard library, a few seconds).'
        )
    if role == "plan":
        return (
            "You are the plan agent: the tool agent's program ran on this grid. Check what it printed "
            "and write the moves to make now (copy them if they solve the puzzle)."
        )
    raise ValueError(f"the tool team's roles are 'tool' and 'plan', got {role!r}")


def job_for_reply(reply: str, board: str, limits: SandboxLimits) -> SandboxJob | None:
    """The run a tool reply asks for: its program with the board on standard input; None when
    the reply holds no program."""
    code = extract_code(reply)
    return None if code is None else SandboxJob(code, stdin=board + "\n", limits=limits)


def read_run(result: ExecResult, limits: SandboxLimits) -> ProgramRun:
    """Read a finished run: its last printed line, or the named failure."""
    if result.reason == "timeout":
        return ProgramRun("", "timeout", f"it ran past the time limit of {limits.timeout_s:g} s")
    if not result.ok:
        tail = "\n".join(result.stderr.strip().splitlines()[-3:])
        shown = f"{result.reason}: {tail}" if tail else result.reason
        return ProgramRun("", "exec_error", to_ascii(shown, max_chars=MAX_SHOWN_OUTPUT_CHARS))
    lines = [line.strip() for line in result.stdout.splitlines() if line.strip()]
    if not lines:
        return ProgramRun("", "no_output", "it printed nothing")
    printed = lines[-1][:_MAX_READ_LINE_CHARS]
    return ProgramRun(printed, None, to_ascii(printed, max_chars=MAX_SHOWN_OUTPUT_CHARS))
