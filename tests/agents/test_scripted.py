"""Scripted policies: the oracle solves every preset; random is seeded and weaker; errors."""

from __future__ import annotations

import pytest

import envs
from agents.base import Generation, Prompt, SamplingParams
from agents.scripted import SCRIPTED_POLICIES, HeuristicPolicy, OraclePolicy, RandomPolicy
from agents.team import Team
from envs import StepOutcome, TextAECEnv
from envs.splits import split_seeds

PLANNING_ENVS = ("sokoban", "plan_path", "sudoku")


def play(env, team, seed):
    """One episode in the AEC loop through ``team.act``; returns (success, generations)."""
    env.reset(seed=seed)
    generations = []
    for agent in env.agent_iter():
        _, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        generation = team.act(env, agent)
        generations.append(generation)
        env.step(generation.text)
    return env.success, generations


@pytest.mark.parametrize("team_variant", ["mas", "single"])
@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
@pytest.mark.parametrize("env_id", PLANNING_ENVS)
def test_oracle_solves_every_preset(env_id, difficulty, team_variant):
    env = envs.make(env_id, difficulty=difficulty, team=team_variant)
    team = Team.shared(env, OraclePolicy())
    for seed in range(5):
        solved, generations = play(env, team, seed)
        assert solved, f"oracle failed {env_id} {difficulty} {team_variant} seed {seed}"
        for g in generations:
            assert g.finish_reason == "stop" and g.token_ids == () and g.logprobs == ()
            assert g.prompt_token_ids == ()


def test_oracle_returns_num_samples_identical_generations_and_leaves_env_alone():
    env = envs.make("sokoban")
    env.reset(seed=1)
    key, steps = env.state_key(), env.num_steps
    prompt = Prompt(env.observe("planner_0")["prompt"], env=env, agent="planner_0")
    groups = OraclePolicy().generate([prompt, prompt], num_samples=3)
    assert [len(g) for g in groups] == [3, 3]
    expected = env.oracle_response("planner_0")
    assert all(g == Generation(expected, (), (), (), "stop") for group in groups for g in group)
    assert env.state_key() == key and env.num_steps == steps


def test_random_answers_a_legal_move_and_is_deterministic_for_a_seed():
    env = envs.make("plan_path")
    env.reset(seed=0)
    prompt = Prompt("", env=env, agent="planner_0")
    legal = env.infos["planner_0"]["legal_moves"]

    def answers(policy, sampling=None):
        return [g.text for g in policy.generate([prompt] * 4, num_samples=5, sampling=sampling)[0]]

    first = answers(RandomPolicy(seed=7))
    assert first == answers(RandomPolicy(seed=7))
    assert all(a.startswith("<answer>") and a[len("<answer>") : -len("</answer>")] in legal for a in first)
    # sampling.seed overrides the policy's own stream, call after call
    policy = RandomPolicy(seed=1)
    assert answers(policy, SamplingParams(seed=3)) == answers(RandomPolicy(seed=99), SamplingParams(seed=3))
    many = {g.text for g in RandomPolicy(seed=0).generate([prompt], num_samples=64)[0]}
    assert many == {f"<answer>{m}</answer>" for m in legal}  # uniform over legal moves: all appear


def test_random_answers_empty_block_without_legal_moves():
    env = envs.make("plan_path")
    env.reset(seed=0)
    env.infos["planner_0"] = {**env.infos["planner_0"], "legal_moves": []}  # a copy: the env is the test's
    out = RandomPolicy().generate([Prompt("", env=env, agent="planner_0")])
    assert out[0][0].text == "<answer></answer>"


def test_random_scores_lower_than_oracle_on_sokoban():
    env = envs.make("sokoban")
    oracle, rand = Team.shared(env, OraclePolicy()), Team.shared(env, RandomPolicy(seed=0))
    oracle_rate = sum(play(env, oracle, s)[0] for s in range(10)) / 10
    random_rate = sum(play(env, rand, s)[0] for s in range(10)) / 10
    assert oracle_rate == 1.0
    assert random_rate < 0.5


@pytest.mark.parametrize("policy", [OraclePolicy(), RandomPolicy()], ids=["oracle", "random"])
def test_prompt_without_env_names_the_fix(policy):
    for prompt in ["just text", Prompt("text"), Prompt("text", env=object())]:
        with pytest.raises(ValueError, match=r"Prompt\(text, env=env, agent=agent\)"):
            policy.generate([prompt])


@pytest.mark.parametrize("policy", [OraclePolicy(), RandomPolicy()], ids=["oracle", "random"])
def test_adapter_and_num_samples_are_refused(policy):
    env = envs.make("sokoban")
    env.reset(seed=0)
    prompt = Prompt("", env=env, agent="planner_0")
    with pytest.raises(ValueError, match="has no adapters"):
        policy.generate([prompt], adapter="planner")
    with pytest.raises(ValueError, match="num_samples"):
        policy.generate([prompt], num_samples=0)


class NoOracleEnv(TextAECEnv):
    metadata = {**TextAECEnv.metadata, "name": "no_oracle_v0"}
    TEAMS = {"mas": ("guesser",)}

    def _start_task(self, task_seed):
        pass

    def _prompt(self, agent):
        return "Say anything."

    def _act(self, agent, text):
        return StepOutcome(terminated=True)

    def _legal_moves(self, agent):
        return ["a", "b"]

    def _state_key(self):
        return ()

    def _render_text(self):
        return ""


def test_oracle_refuses_an_env_without_a_solver_and_random_still_plays_it():
    env = NoOracleEnv()
    env.reset(seed=0)
    prompt = Prompt("Say anything.", env=env, agent="guesser_0")
    with pytest.raises(TypeError, match="no exact solver / oracle"):
        OraclePolicy().generate([prompt])
    assert RandomPolicy().generate([prompt])[0][0].text in ("<answer>a</answer>", "<answer>b</answer>")


def test_registry_and_protocol():
    from agents.base import Policy

    assert SCRIPTED_POLICIES == {"oracle": OraclePolicy, "heuristic": HeuristicPolicy, "random": RandomPolicy}
    for name, cls in SCRIPTED_POLICIES.items():
        policy = cls()
        assert isinstance(policy, Policy) and policy.name == name


def _answer(policy, env, agent):
    return policy.generate([Prompt(env.observe(agent)["prompt"], env=env, agent=agent)])[0][0].text


def test_the_heuristic_wins_blocks_and_takes_the_centre_in_tictactoe():
    env = envs.make("tictactoe")
    env.reset(seed=split_seeds("train", 1)[0])
    policy = HeuristicPolicy()
    env.board = "XX.OO...."  # X to move: win at 3 rather than block at 6
    assert _answer(policy, env, "first_0") == "<answer>3</answer>"
    env.board = "XX..O...."  # O (second) must block at 3
    assert _answer(policy, env, "second_0") == "<answer>3</answer>"
    env.board = "X........"
    assert _answer(policy, env, "second_0") == "<answer>5</answer>"


def test_the_heuristic_plays_its_card_in_kuhn_and_cooperates_conditionally():
    kuhn = envs.make("kuhn_poker")
    kuhn.reset(seed=split_seeds("train", 1)[0])
    policy = HeuristicPolicy()
    for infoset, move in (("K", "bet"), ("J", "check"), ("Qb", "call"), ("Jpb", "fold")):
        state = kuhn.clone()
        state.set_information_set("first_0" if len(infoset) % 2 else "second_0", infoset)
        assert _answer(policy, state, state.agent_selection) == f"<answer>{move}</answer>", infoset
    goods = envs.make("everyone_contributes")
    goods.reset(seed=split_seeds("train", 1)[0])
    assert _answer(policy, goods, "first_0") == f"<answer>{goods.rules.endowment // 2}</answer>"
    goods.step("<answer>1</answer>")
    goods.step("<answer>2</answer>")
    assert _answer(policy, goods, "third_0") == "<answer>2</answer>"  # mean 1.5 rounds up


def test_an_env_without_a_heuristic_is_a_clear_type_error():
    env = envs.make("sokoban")
    env.reset(seed=split_seeds("train", 1)[0])
    with pytest.raises(TypeError, match="no heuristic"):
        _answer(HeuristicPolicy(), env, env.agent_selection)
