"""Model-facing text made readable: evaluation transcripts as Markdown and the excerpts the
report shows. Replies and prompts may hold anything (control characters, backtick runs, 30k
characters): nothing here lets them break the page they land on."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from trainers.records import Episode

__all__ = ["MAX_TRANSCRIPT_CHARS", "printable_excerpt", "render_transcripts"]

# Longer prompts/responses are cut in transcripts: a rambling 30k-token response would
# otherwise bury the other episodes.
MAX_TRANSCRIPT_CHARS = 4000

# C0 controls except tab/newline, and DEL: terminal escapes and NULs make a .md file unreadable.
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _fence(text: str) -> str:
    """A backtick fence longer than any backtick run in ``text``, so the text cannot close it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _clip(text: str, limit: int = MAX_TRANSCRIPT_CHARS) -> tuple[str, int]:
    """Keeps the head and tail of ``text`` (the tail holds a response's final answer and a
    prompt's current state); returns the kept text and how many characters were cut."""
    if len(text) <= limit:
        return text, 0
    head = limit // 2
    tail = limit - head
    cut = len(text) - limit
    return f"{text[:head]}\n[... {cut:,} characters cut ...]\n{text[-tail:]}", cut


def printable_excerpt(text: str, limit: int = MAX_TRANSCRIPT_CHARS) -> tuple[str, int]:
    """``text`` made fit to read: newlines normalised, control characters written as ``\\xNN``,
    head and tail kept when longer than ``limit``; returns it and how many characters were cut."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL_CHARS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    return _clip(text, limit)


def _code_block(text: str) -> str:
    text, cut = printable_excerpt(text)
    fence = _fence(text)
    block = f"{fence}text\n{text}\n{fence}\n"
    if cut:
        block += (
            f"\n*(truncated: {cut:,} of {cut + MAX_TRANSCRIPT_CHARS:,} characters cut from the middle)*\n"
        )
    return block


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def render_transcripts(
    step: int, episodes: Sequence[Episode], limit: int = 3, title: str | None = None
) -> str:
    """Renders the first ``limit`` episodes as Markdown (see :meth:`RunLogger.write_transcripts`)
    under ``title`` (default: "Evaluation transcripts, step <step>")."""
    shown = list(episodes[:limit])
    lines = [f"# {title or f'Evaluation transcripts, step {step}'}", ""]
    lines.append(f"Showing {len(shown)} of {len(episodes)} episode(s).")
    lines.append("")
    for number, episode in enumerate(shown, start=1):
        returns = ", ".join(f"{agent} = {_fmt(value)}" for agent, value in episode.returns.items())
        lines += [
            f"## Episode {number}: {episode.task} (episode {episode.index})",
            "",
            f"- success: {'yes' if episode.success else 'no'}",
            f"- truncated: {'yes' if episode.truncated else 'no'}",
            f"- turns: {episode.length}",
            f"- returns: {returns or '(none)'}",
            "",
        ]
        for turn in episode.turns:
            lines += [
                f"### Step {turn.step}: {turn.agent} ({turn.role}), turn {turn.turn}",
                "",
                f"reward {_fmt(turn.reward)} · invalid: {'yes' if turn.invalid else 'no'}"
                f" · finish: {turn.finish_reason}",
                "",
                "**Prompt**",
                "",
                _code_block(turn.prompt),
                "**Response**",
                "",
                _code_block(turn.response),
            ]
    return "\n".join(lines)
