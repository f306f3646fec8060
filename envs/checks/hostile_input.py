"""The checks of what an env does with bad actions: invalid text under both
``invalid_action`` modes, non-text actions, hostile text (``HOSTILE_TEXTS``) and seeded
random text over a fuzz alphabet. An env must treat all of it as text, never raise."""

from __future__ import annotations

import numpy as np

from envs.checks.subject import EnvUnderCheck, step_texts

# What model output can look like: nothing, tags without content, huge, non-ASCII and
# control characters, code meant to run, markdown. An env must treat all of it as text.
HOSTILE_TEXTS = (
    "",
    " ",
    "<answer></answer>",
    "<answer>",
    "</answer><answer>",
    "x" * 100_000,
    "<answer>" + "U " * 50_000 + "</answer>",
    "<answer>🙂 ünïcödé 東京 \u200b\x00\x1b[31m</answer>",
    "<answer>__import__('os').system('rm -rf /')</answer>",
    "```python\nimport os; os.system('echo pwned')\n```",
    "<answer>" * 1000,
    "\r\n\t\x0b\x0c",
    "<ANSWER> r1c1=1 </ANSWER>",
)
NON_TEXT_ACTIONS = (None, b"<answer>1</answer>", 12345, 1.5, {"answer": "1"}, ["1"], np.zeros(3))
_FUZZ_ALPHABET = list("<>/answer =,;:0123456789UDLRrc\n\t ") + ["🙂", "ü", "\x00", "</answer>", "<answer>"]


def check_invalid_penalize(subject: EnvUnderCheck) -> str:
    env = subject.make(invalid_penalty=0.25)
    env.reset(seed=subject.seed(0))
    agent = env.agent_selection
    forced = env._forced_move(agent)
    expected = env.clone()  # the state an invalid reply must leave: unchanged, or after the forced move
    if forced is not None:
        expected.step(f"<answer>{forced}</answer>")
        assert not expected.infos[agent]["invalid_action"], f"_forced_move() = {forced!r} is not legal"
    env.step("no answer tags here")
    info = env.infos[agent]
    assert info["invalid_action"] is True, "an answer without the grammar was not invalid"
    assert info["reward_terms"].get("local/invalid") == -0.25, f"penalty not applied: {info['reward_terms']}"
    changed = (
        "an invalid action changed the state"
        if forced is None
        else f"the forced move {forced!r} was not played"
    )
    assert env.state_key() == expected.state_key(), changed
    assert env.num_steps == 1, "the turn was not consumed"
    assert env.terminations == expected.terminations, "an invalid action ended the episode"
    assert info["feedback"], "an invalid action got no feedback (StepOutcome.feedback)"
    if len(env.possible_agents) > 1 and env.agents:
        other = env.agent_selection
        env.step(None if (env.terminations[other] or env.truncations[other]) else "no answer tags here")
        assert env.infos[agent]["invalid_action"] is True, "invalid_action was reset by another agent's step"
    kept = "state unchanged" if forced is None else f"forced move {forced!r} played"
    return f"invalid text: penalised, turn consumed, {kept}, feedback given"


def check_invalid_terminate(subject: EnvUnderCheck) -> str:
    env = subject.make(invalid_action="terminate")
    env.reset(seed=subject.seed(0))
    agent = env.agent_selection
    env.step("no answer tags here")
    assert all(env.terminations.values()), "invalid_action='terminate' did not end the episode"
    # the penalty term, not the whole reward: an env may name other terms beside it (the tool
    # team's reply without a program also costs ``local/no_program``)
    terms = env.infos[agent]["reward_terms"]
    assert terms.get("local/invalid") == -env.invalid_penalty, f"penalty not applied: {terms}"
    assert env.infos[agent]["invalid_action"] is True
    return "invalid text ends the episode with the penalty"


def check_non_text_actions(subject: EnvUnderCheck) -> str:
    for action in NON_TEXT_ACTIONS:
        env = subject.make()
        env.reset(seed=subject.seed(0))
        agent = env.agent_selection
        env.step(action)
        assert env.infos[agent]["invalid_action"] is True, f"{type(action).__name__} action was accepted"
        assert env.num_steps == 1
    return f"{', '.join(sorted({type(a).__name__ for a in NON_TEXT_ACTIONS}))}: invalid, turn consumed"


def check_hostile_text(subject: EnvUnderCheck) -> str:
    for i, text in enumerate(HOSTILE_TEXTS):
        env = subject.make()
        env.reset(seed=subject.seed(0))
        try:
            step_texts(env, [text] * (2 * len(env.possible_agents)))
        except Exception as err:
            raise AssertionError(f"hostile text #{i} {text[:40]!r}: {type(err).__name__}: {err}") from err
    return f"{len(HOSTILE_TEXTS)} hostile texts (empty, 100k chars, non-ASCII, code, tags)"


def check_fuzzed_text(subject: EnvUnderCheck, examples: int = 40) -> str:
    rng = np.random.default_rng(0)
    for example in range(examples):
        texts = [
            "".join(rng.choice(_FUZZ_ALPHABET, size=rng.integers(0, 60))) for _ in range(rng.integers(1, 7))
        ]
        env = subject.make()
        env.reset(seed=subject.seed(7))
        try:
            step_texts(env, texts)
        except Exception as err:
            raise AssertionError(
                f"fuzz example {example} {texts!r:.300}: {type(err).__name__}: {err}"
            ) from err
    return f"{examples} seeded random answer sequences"
