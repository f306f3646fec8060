"""Policy contract records."""

from __future__ import annotations

import pytest

from agents.base import Generation, Prompt, as_prompt


def test_as_prompt_accepts_strings_and_prompts():
    assert as_prompt("hi") == Prompt(text="hi")
    prompt = Prompt(text="hi", system="be brief", agent="planner_0")
    assert as_prompt(prompt) is prompt
    with pytest.raises(TypeError, match="str or agents.base.Prompt"):
        as_prompt(3)


def test_generation_checks_lengths_and_finish_reason():
    Generation("a", (1,), (2, 3), (-0.1, -0.2), "eos")
    with pytest.raises(ValueError, match="2 token ids but 1 logprobs"):
        Generation("a", (1,), (2, 3), (-0.1,), "eos")
    with pytest.raises(ValueError, match="finish_reason"):
        Generation("a", (1,), (), (), "done")
