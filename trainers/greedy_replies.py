"""A model's greedy replies within one rollout, kept by prompt so each distinct prompt is asked once.

A policy's weights do not change within a rollout, and a greedy reply depends only on the text a
text-only policy reads (``agents.base.reads_text_only``, ``prompt_key``). An evaluation's games
reach the same positions over and over (every Kuhn poker deal shows one of a few hundred
prompts), so a prompt met again, in another task or an earlier turn, is answered from here.
Sampled replies and scripted players (which read the state behind the text) are always asked.
"""

from __future__ import annotations

from collections.abc import Sequence

from agents.base import Generation, Prompt, SamplingParams, distinct_prompts, prompt_key, reads_text_only

__all__ = ["GreedyReplies"]


class GreedyReplies:
    """Replies by (group, prompt); a group is one (policy, adapter, sampling) the rollout asks."""

    def __init__(self) -> None:
        self._known: dict[tuple, dict[tuple, list[Generation]]] = {}

    @staticmethod
    def applies_to(policy: object, sampling: SamplingParams) -> bool:
        return sampling.greedy and reads_text_only(policy)

    def unanswered(self, group: tuple, prompts: Sequence[Prompt]) -> list[Prompt]:
        """The prompts still to ask: one of each distinct prompt not answered before."""
        known = self._known.setdefault(group, {})
        return distinct_prompts([p for p in prompts if prompt_key(p) not in known])[0]

    def replies(
        self,
        group: tuple,
        asked: Sequence[Prompt],
        answers: Sequence[list[Generation]],
        prompts: Sequence[Prompt],
    ) -> list[list[Generation]]:
        """Records ``answers`` to ``asked``; returns the replies to every one of ``prompts``."""
        known = self._known.setdefault(group, {})
        known.update({prompt_key(p): answer for p, answer in zip(asked, answers, strict=True)})
        return [known[prompt_key(p)] for p in prompts]
