"""Policy contract records."""

from __future__ import annotations

import pytest

from agents.base import Generation, Prompt, as_prompt, distinct_prompts, prompt_key, reads_text_only


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


def test_only_policies_that_declare_it_read_prompts_as_text_only():
    from agents.hf import HFPolicy
    from agents.scripted import OraclePolicy, RandomPolicy
    from agents.vllm import VLLMPolicy
    from trainers.runtime.workers import RemotePolicy

    assert all(reads_text_only(cls) for cls in (HFPolicy, VLLMPolicy, RemotePolicy))
    assert not any(reads_text_only(p) for p in (OraclePolicy(), RandomPolicy(), object()))


def test_distinct_prompts_keeps_the_first_of_each_and_maps_every_prompt_to_it():
    a, b = Prompt("a", seed=1), Prompt("b")
    prompts = [a, b, Prompt("a", seed=2), Prompt("a", system="s"), Prompt("a", prefix="<")]
    asked, slot = distinct_prompts(prompts)
    assert asked == [a, b, Prompt("a", system="s"), Prompt("a", prefix="<")]  # the seed is not read
    assert slot == [0, 1, 0, 2, 3]
    assert prompt_key(Prompt("a", seed=1)) == prompt_key(Prompt("a", seed=9))
