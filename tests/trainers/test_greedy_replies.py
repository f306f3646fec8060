"""``GreedyReplies``: which prompts a rollout still has to ask, and whose replies it reuses."""

from __future__ import annotations

from agents.base import Generation, Prompt, SamplingParams
from trainers.greedy_replies import GreedyReplies


class _TextOnly:
    text_only = True


class _Scripted:
    pass


def _reply(text: str) -> list[Generation]:
    return [Generation(text, prompt_token_ids=(0,), token_ids=(1,), logprobs=(0.0,), finish_reason="eos")]


def test_only_a_text_only_policy_under_greedy_sampling_is_answered_from_memory():
    assert GreedyReplies.applies_to(_TextOnly(), SamplingParams(temperature=0.0))
    assert not GreedyReplies.applies_to(_TextOnly(), SamplingParams(temperature=1.0))
    assert not GreedyReplies.applies_to(_Scripted(), SamplingParams(temperature=0.0))


def test_each_distinct_prompt_is_asked_once_and_every_prompt_gets_its_reply():
    memory = GreedyReplies()
    first = [Prompt("a", seed=1), Prompt("b", seed=2), Prompt("a", seed=3)]
    asked = memory.unanswered("group", first)
    assert [p.text for p in asked] == ["a", "b"]
    replies = memory.replies("group", asked, [_reply("ra"), _reply("rb")], first)
    assert [r[0].text for r in replies] == ["ra", "rb", "ra"]

    second = [Prompt("b", seed=4), Prompt("c", seed=5)]
    asked = memory.unanswered("group", second)
    assert [p.text for p in asked] == ["c"]
    assert [r[0].text for r in memory.replies("group", asked, [_reply("rc")], second)] == ["rb", "rc"]
    # another group (another policy or adapter) remembers nothing of this one's replies
    assert [p.text for p in memory.unanswered("other", second)] == ["b", "c"]
