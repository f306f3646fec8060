"""Stored episodes (``trainers.run.episodes``'s JSON) and AT-GRPO trees (``trainers.run.trees``)
as what report.html shows: every text made readable (control characters escaped, very long
text cut in the middle; the template escapes the markup), the reply's answer block and the
env's verdict side by side, reward terms by name. Older records lack the detailed fields: they
show as absent, never as an error.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from envs.parsing import extract_answer
from trainers.run.transcripts import printable_excerpt

__all__ = ["TurnView", "EpisodeView", "NodeView", "TreeView", "episode_view", "tree_view", "text_view"]

MAX_PROMPT_CHARS = 6000
MAX_REPLY_CHARS = 3000
MAX_RENDER_CHARS = 3000


@dataclass
class Text:
    """A text as shown: the readable excerpt and how many characters were cut from its middle."""

    text: str
    cut: int = 0


def text_view(value: Any, limit: int) -> Text | None:
    """``value`` (a stored string) ready to show; None when absent or not a string."""
    if not isinstance(value, str):
        return None
    text, cut = printable_excerpt(value, limit)
    return Text(text, cut)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _terms(value: Any) -> list[tuple[str, float]]:
    if not isinstance(value, Mapping):
        return []
    return [(str(name), number) for name, v in value.items() if (number := _number(v)) is not None]


@dataclass
class TurnView:
    agent: str
    role: str
    turn: int | None
    response: Text
    answer: Text | None
    invalid: bool
    finish_reason: str
    prompt: Text | None = None
    reward: float | None = None
    reward_terms: list[tuple[str, float]] = field(default_factory=list)
    feedback: Text | None = None
    render: Text | None = None


@dataclass
class EpisodeView:
    task: str
    index: int
    success: bool
    truncated: bool
    returns: list[tuple[str, float]]
    turns: list[TurnView]

    @property
    def roles(self) -> str:
        return " ".join(sorted({turn.role for turn in self.turns}))

    @property
    def any_invalid(self) -> bool:
        return any(turn.invalid for turn in self.turns)


def _task_label(task: Any) -> str:
    if isinstance(task, Mapping):
        return f"{task.get('env_id', '?')}/{task.get('split', '?')}/{task.get('seed', '?')}"
    return str(task)


def _answer(response: str) -> Text | None:
    answer = extract_answer(response)
    return None if answer is None else text_view(answer, MAX_REPLY_CHARS)


def _turn_view(stored: Mapping[str, Any]) -> TurnView:
    response = str(stored.get("response", ""))
    turn = stored.get("turn")
    return TurnView(
        agent=str(stored.get("agent", "?")),
        role=str(stored.get("role", "?")),
        turn=turn if isinstance(turn, int) else None,
        response=text_view(response, MAX_REPLY_CHARS) or Text(""),
        answer=_answer(response),
        invalid=bool(stored.get("invalid", False)),
        finish_reason=str(stored.get("finish_reason", "")),
        prompt=text_view(stored.get("prompt"), MAX_PROMPT_CHARS),
        reward=_number(stored.get("reward")),
        reward_terms=_terms(stored.get("reward_terms")),
        feedback=text_view(stored.get("feedback") or None, MAX_REPLY_CHARS),
        render=text_view(stored.get("render"), MAX_RENDER_CHARS),
    )


def episode_view(stored: Mapping[str, Any]) -> EpisodeView:
    """One stored episode (a line of ``episodes/*.jsonl``) as the page shows it."""
    index = stored.get("index")
    return EpisodeView(
        task=_task_label(stored.get("task")),
        index=index if isinstance(index, int) else 0,
        success=bool(stored.get("success", False)),
        truncated=bool(stored.get("truncated", False)),
        returns=_terms(stored.get("returns")),
        turns=[_turn_view(t) for t in stored.get("turns", []) if isinstance(t, Mapping)],
    )


@dataclass
class CandidateView:
    k: int
    response: Text
    answer: Text | None
    reward: float | None
    advantage: float | None
    invalid: bool
    selected: bool
    feedback: Text | None
    reward_terms: list[tuple[str, float]]


@dataclass
class NodeView:
    turn: int | None
    agent: str
    role: str
    path: str
    prompt: Text | None
    zero_variance: bool
    candidates: list[CandidateView]


@dataclass
class TreeView:
    task: str
    nodes: list[NodeView]


def _candidate_view(stored: Mapping[str, Any]) -> CandidateView:
    response = str(stored.get("response", ""))
    k = stored.get("k")
    return CandidateView(
        k=k if isinstance(k, int) else 0,
        response=text_view(response, MAX_REPLY_CHARS) or Text(""),
        answer=_answer(response),
        reward=_number(stored.get("reward")),
        advantage=_number(stored.get("advantage")),
        invalid=bool(stored.get("invalid", False)),
        selected=bool(stored.get("selected", False)),
        feedback=text_view(stored.get("feedback") or None, MAX_REPLY_CHARS),
        reward_terms=_terms(stored.get("reward_terms")),
    )


def tree_view(stored: Mapping[str, Any]) -> TreeView:
    """One recorded tree (a line of ``trees/*.jsonl``) as the page shows it."""
    nodes = []
    for node in stored.get("nodes", []):
        if not isinstance(node, Mapping):
            continue
        path = node.get("path") if isinstance(node.get("path"), list) else []
        turn = node.get("turn")
        nodes.append(
            NodeView(
                turn=turn if isinstance(turn, int) else None,
                agent=str(node.get("agent", "?")),
                role=str(node.get("role", "?")),
                path="root" if not path else " > ".join(f"k{k}" for k in path),
                prompt=text_view(node.get("prompt"), MAX_PROMPT_CHARS),
                zero_variance=bool(node.get("zero_variance", False)),
                candidates=[_candidate_view(c) for c in node.get("candidates", []) if isinstance(c, Mapping)],
            )
        )
    return TreeView(task=_task_label(stored.get("task")), nodes=nodes)
