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


# ---------------------------------------------------------------------------- item 4 of issue 19
class EchoEnv(envs.TextAECEnv):
    """Two roles; an answer "bad" is invalid, anything else gets feedback naming it."""

    metadata = {**envs.TextAECEnv.metadata, "name": "echo_v0"}
    TEAMS = {"mas": ("first", "second")}

    def _start_task(self, task_seed):
        self.count = 0

    def _prompt(self, agent):
        return f"You are {agent}. Say something."

    def _act(self, agent, text):
        if text == "bad":
            return envs.StepOutcome(invalid=True, feedback="That was bad.")
        self.count += 1
        return envs.StepOutcome(feedback=f"You said {text!r}.")

    def _legal_moves(self, agent):
        return []

    def _state_key(self):
        return self.count

    def _render_text(self):
        return str(self.count)


def test_feedback_reaches_the_actors_next_prompt():
    env = EchoEnv()
    env.reset(seed=0)
    assert env.observe("first_0")["prompt"] == "You are first_0. Say something."  # nothing said yet
    env.step("hello")
    prompt = env.observe("first_0")["prompt"]
    assert prompt.endswith("\n\nResult of your last answer: You said 'hello'.")
    assert "Result" not in env.observe("second_0")["prompt"]  # only the actor's own feedback
    assert env.infos["first_0"]["feedback"] == "You said 'hello'."


def test_builtin_envs_place_feedback_themselves_once():
    env = envs.make("plan_path")
    env.reset(seed=0)
    env.step("no answer")
    prompt = env.observe("planner_0")["prompt"]
    assert prompt.count("Result of your last answer:") == 1
    assert prompt.rstrip().endswith("at most 10 moves.")  # the final instruction stays last


def test_invalid_action_flag_lasts_until_the_agent_acts_again():
    env = EchoEnv()
    env.reset(seed=0)
    env.step("bad")
    assert env.infos["first_0"]["invalid_action"] is True
    env.step("fine")  # the other agent acts
    assert env.infos["first_0"]["invalid_action"] is True  # still about first_0's last action
    assert env.infos["first_0"]["feedback"] == "That was bad."  # same lifetime as the feedback
    assert env.infos["second_0"]["invalid_action"] is False
    env.step("fine")
    assert env.infos["first_0"]["invalid_action"] is False


@pytest.mark.parametrize("action", [b"hello", None, 7, {"text": "hi"}], ids=["bytes", "None", "int", "dict"])
def test_only_str_actions_are_text(action):
    env = EchoEnv()
    env.reset(seed=0)
    env.step(action)
    assert env.infos["first_0"]["invalid_action"] is True
    assert env.infos["first_0"]["feedback"] == f"Your response was not text (got {type(action).__name__})."
    assert env.transcript[-1] == ("first_0", "")


def test_hooks_are_listed_by_help():
    import pydoc

    text = pydoc.render_doc(envs.TextAECEnv)
    for hook in ("_start_task", "_prompt", "_act", "_legal_moves", "_state_key", "_render_text"):
        assert hook in text


def test_training_preset_errors_name_the_field():
    with pytest.raises(ValueError, match="TrainingPreset.max_new_tokens"):
        envs.TrainingPreset(max_new_tokens=0)
    with pytest.raises(ValueError, match="may not set 'split'"):
        envs.TrainingPreset(env_kwargs={"split": "test"})
    with pytest.raises(ValueError, match="TrainingPreset.algo"):
        envs.TrainingPreset(algo="")
    assert envs.TrainingPreset(env_kwargs={"difficulty": "easy"}).make_kwargs() == {
        "difficulty": "easy",
        "max_cycles": 2,
    }
    assert envs.TrainingPreset(max_cycles=None).make_kwargs() == {}
    assert envs.TrainingPreset().make_kwargs(env_max_cycles=1) == {}  # never longer than the env's own
    assert envs.TrainingPreset().make_kwargs(env_max_cycles=8) == {"max_cycles": 2}
