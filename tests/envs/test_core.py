"""TextAECEnv machinery: errors, rendering, spaces, action coercion, dead steps."""

from __future__ import annotations

import pytest

import envs
from envs.core import role_of, to_ascii


def test_to_ascii_replaces_outside_printable_and_caps():
    assert to_ascii("abc\n\t") == "abc\n\t"
    assert to_ascii("é東\x00\x1b") == "????"
    assert to_ascii("x" * 10, max_chars=4) == "xxxx...[cut]"


def test_role_of():
    assert role_of("planner_0") == "planner" and role_of("player_12") == "player"


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"team": "trio"}, "team='trio' is unknown"),
        ({"invalid_action": "ignore"}, "invalid_action='ignore'"),
        ({"max_cycles": 0}, "max_cycles must be a positive int"),
        ({"invalid_penalty": -1}, "invalid_penalty"),
        ({"render_mode": "rgb_array"}, "render_mode='rgb_array'"),
        ({"split": "dev"}, "split must be one of"),
        ({"turn_order": ("planner",)}, "must be a permutation"),
    ],
)
def test_constructor_errors_name_the_field(kwargs, match):
    with pytest.raises(ValueError, match=match):
        envs.make("plan_path", **kwargs)


def test_render_modes():
    env = envs.make("plan_path")
    with pytest.raises(RuntimeError, match="reset"):
        env.render()
    env.reset(seed=0)
    assert "A" in env.render()  # no render_mode: text is returned anyway
    ansi = envs.make("plan_path", render_mode="ansi")
    ansi.reset(seed=0)
    assert ansi.render() == env.render()


def test_human_render_prints(capsys):
    env = envs.make("plan_path", render_mode="human")
    env.reset(seed=0)
    assert env.render() is None
    assert "G" in capsys.readouterr().out


def test_overlong_action_is_cut_before_parsing():
    env = envs.make("plan_path", max_action_chars=12)
    env.reset(seed=0)
    env.step("<answer>L U L</answer>")
    assert env.transcript[-1] == ("planner_0", "<answer>L U ")  # what the env read
    assert "first 2 move(s)" in env.infos["planner_0"]["feedback"]  # L U: 2 moves, not 3


def test_spaces_are_per_instance_and_stable():
    a, b = envs.make("plan_path"), envs.make("plan_path")
    assert a.action_space("planner_0") is a.action_space("planner_0")
    assert a.action_space("planner_0") is not b.action_space("planner_0")
    with pytest.raises(KeyError, match="not an agent"):
        a.observation_space("coder_0")


def test_dead_agents_must_step_none():
    env = envs.make("plan_path", max_cycles=1)
    env.reset(seed=0)
    env.step("")
    env.step("")
    assert all(env.truncations.values())
    with pytest.raises(ValueError, match="only valid action is None"):
        env.step("<answer>U</answer>")


def test_turn_order_override():
    env = envs.make("plan_path", turn_order=("executor", "planner"))
    env.reset(seed=0)
    assert env.possible_agents == ["executor_0", "planner_0"] and env.agent_selection == "executor_0"
    env.step("")
    assert env.agent_selection == "planner_0"


def test_roles_must_be_one_lowercase_word():
    from envs.planning.plan_path.env import PlanPathEnv

    class BadRoles(PlanPathEnv):
        TEAMS = {"mas": ("web_agent", "executor")}

    with pytest.raises(ValueError, match=r"roles must be one lowercase word, got \['web_agent'\]"):
        BadRoles()
