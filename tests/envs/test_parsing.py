"""Answer extraction and item splitting (model text is adversarial: never raise), the cap
on what is parsed, and parse time linear in the reply for every registered env."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import pytest

import envs
import envs.sandbox
from envs.check import subjects
from envs.parsing import MAX_PARSED_CHARS, extract_answer, extract_code, split_items
from envs.sandbox import ExecResult
from tests.envs.conftest import (
    HOSTILE_SIZES,
    assert_linear_time,
    hostile_text,
    import_readme_example,
    timed,
)

import_readme_example()


@pytest.mark.parametrize(
    "text,expected",
    [
        ("<answer>U R</answer>", "U R"),
        ("< ANSWER >  d l \n</ Answer >", "d l"),
        ("first <answer>a</answer> then <answer>b</answer>", "b"),
        ("cut off <answer> R R", "R R"),
        ("no tags", None),
        ("", None),
        ("</answer>", None),
    ],
)
def test_extract_answer(text, expected):
    assert extract_answer(text) == expected


def test_split_items():
    assert split_items("U, R;D | L -> R=>U\nD") == ["U", "R", "D", "L", "R", "U", "D"]
    assert split_items("  ") == []


@pytest.mark.parametrize(
    "text,expected",
    [
        ("```python\nprint(1)\n```", "print(1)"),
        ("intro\n```py\nx = 1\nprint(x)\n```\nouter", "x = 1\nprint(x)"),
        ("```\nprint(2)\n```", "print(2)"),
        ("```python\nprint(1)\n```\nthen\n```python\nprint(3)\n```", "print(3)"),
        ("```python\nprint(4)", "print(4)"),  # cut off before the closing fence
        ("```text\nnot code\n```", None),
        ("```python\nprint(5)\n```\n```text\nout\n```", "print(5)"),
        ("<answer>print(6)</answer>", "print(6)"),
        ("```python\n\n```", None),
        ("no code here", None),
        ("", None),
    ],
)
def test_extract_code(text, expected):
    assert extract_code(text) == expected


def test_parsers_read_only_the_first_max_parsed_chars():
    answer = "<answer>1</answer>"
    assert extract_answer("x" * (MAX_PARSED_CHARS - 9) + answer) == "1"  # "<answer>1" is read
    assert extract_answer("x" * (MAX_PARSED_CHARS - 3) + answer) is None  # "<an" is read
    assert extract_code("x" * MAX_PARSED_CHARS + "\n```python\nprint(1)\n```") is None
    assert extract_code("```python\n" + "y" * MAX_PARSED_CHARS) == "y" * (MAX_PARSED_CHARS - 10)
    assert len(split_items("U " * MAX_PARSED_CHARS)) == MAX_PARSED_CHARS // 2


# ------------------------------------------------------------ parse time on hostile replies
# Every registered env (except the trainer tests' test/ fixtures; the documented example env included),
# every team, fed 3 kB to 200 kB replies built to make a backtracking regex or a per-item
# rescan blow up. max_action_chars is raised above the largest reply, so the env's parsers
# (and their MAX_PARSED_CHARS cap), not the env's cut, bound the work. Programs that reach
# the sandbox are not run (a stub answers at once): the bound is on handling the reply.
HOSTILE_REPLIES = {  # name: (prefix, unit repeated to the size)
    "io_pairs": ("", "<input></input><output>"),
    "io_unclosed": ("", "<input>"),
    "assert_lines": ("```python\n", "assert x\n"),
    "assert_one_line": ("```python\n", "assert x==1;"),
    "parens": ("", "("),
    "answer_unclosed": ("", "<answer>"),
    "boxed_unclosed": ("", "\\boxed{"),
    "digits": ("", "0123456789"),
    "whitespace": ("<answer>", " \t\n"),
    "non_ascii": ("", "\U0001f642\u00fc\u6771\u200b\x00"),
    "fences": ("", "```\n"),
    "moves": ("<answer>", "U R "),
    "fills": ("<answer>", "r1c1=1, "),
}
_APPS = Path(__file__).resolve().parents[1] / "fixtures" / "code" / "apps.jsonl"
_ENV_IDS = [env_id for env_id in envs.registered_ids() if not env_id.startswith("test/")]
_HOSTILE_SUBJECTS = [s for env_id in _ENV_IDS for s in subjects(env_id, split="test")]
_HOSTILE_SUBJECTS += subjects("code-v0", split="test", env_kwargs={"test_source": str(_APPS)})  # stdin/stdout
_NOT_RUN = ExecResult(stdout="", stderr="", exit_code=1, duration_s=0.0, reason="error", isolation=())


@contextlib.contextmanager
def _sandbox_stubbed(monkeypatch):
    """``run_python`` (where the envs' modules see it) answers at once without running anything."""
    real = envs.sandbox.run_python
    with monkeypatch.context() as patch:
        for name, module in list(sys.modules.items()):
            if name.split(".")[0] == "envs" and getattr(module, "run_python", None) is real:
                patch.setattr(module, "run_python", lambda *args, **kwargs: _NOT_RUN)
        yield


@pytest.mark.parametrize(
    "subject",
    _HOSTILE_SUBJECTS,
    ids=[f"{s.label}-{s.team}{'-stdio' if s.env_kwargs else ''}" for s in _HOSTILE_SUBJECTS],
)
def test_every_env_handles_hostile_replies_in_linear_time(subject, monkeypatch):
    base = subject.make(max_action_chars=HOSTILE_SIZES[-1])
    base.reset(seed=subject.seed(0))
    for position, agent in enumerate(base.possible_agents):

        def step_seconds(size, prefix="", unit="", agent=agent, position=position):
            env = base.clone()
            for _ in range(position):  # the roles before this one reply with nothing (invalid)
                env.step("")
            assert env.agent_selection == agent and agent in env.agents
            text = hostile_text(unit, size, prefix)
            with _sandbox_stubbed(monkeypatch):
                return timed(lambda: (env.step(text), env.agents and env.observe(env.agent_selection)))

        for name, (prefix, unit) in HOSTILE_REPLIES.items():
            assert_linear_time(
                lambda size, prefix=prefix, unit=unit: step_seconds(size, prefix, unit),
                f"{subject.label} ({subject.team}) {agent} step with {name!r}",
            )
