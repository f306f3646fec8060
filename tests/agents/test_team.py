"""Team: role bindings and their validation, shared vs per-role, turn order, acting."""

from __future__ import annotations

import pytest

import envs
from agents.base import Prompt, SamplingParams
from agents.hf import HFPolicy
from agents.scripted import OraclePolicy, RandomPolicy
from agents.team import RoleBinding, Team, close_policies

ROLES = ("planner", "executor")


@pytest.fixture(scope="module")
def lora_policy():
    return HFPolicy("tiny-test", adapters=ROLES)


@pytest.fixture(scope="module")
def tiny():
    return HFPolicy("tiny-test")


@pytest.fixture
def env():
    env = envs.make("plan_path")
    env.reset(seed=0)
    return env


# ---------------------------------------------------------------- bindings


def test_roles_from_env_or_sequence_and_plain_policies_are_wrapped(env):
    oracle = OraclePolicy()
    for roles in (env, ROLES, list(ROLES)):
        team = Team(roles, {"planner": oracle, "executor": RoleBinding(oracle, system_prompt="Be brief.")})
        assert team.roles == ROLES
        assert team.bindings["planner"] == RoleBinding(oracle)
        assert team.bindings["executor"].system_prompt == "Be brief."


def test_missing_role_is_named_with_the_env_roles(env):
    with pytest.raises(ValueError) as err:
        Team(env, {"planner": OraclePolicy()})
    assert (
        str(err.value)
        == "team has no policy for role 'executor'; the env's roles are ('planner', 'executor')"
    )


def test_extra_role_is_named(env):
    oracle = OraclePolicy()
    with pytest.raises(ValueError, match=r"'coder'.*the env's roles are \('planner', 'executor'\)"):
        Team(env, {"planner": oracle, "executor": oracle, "coder": oracle})


def test_bad_bindings_and_roles():
    with pytest.raises(TypeError, match="role 'executor'.*Policy"):
        Team(ROLES, {"planner": OraclePolicy(), "executor": "gpt"})
    with pytest.raises(ValueError, match="lowercase"):
        Team(("Planner",), {"Planner": OraclePolicy()})
    with pytest.raises(ValueError, match="distinct"):
        Team(("a", "a"), {"a": OraclePolicy()})
    with pytest.raises(ValueError, match="unknown role"):
        Team.shared(ROLES, OraclePolicy(), system_prompts={"coder": "hi"})


def test_adapter_the_policy_lacks_names_the_fix(env, tiny):
    with pytest.raises(ValueError, match=r"adapter 'planner'.*HFPolicy\(\.\.\., adapters=env\.roles\)"):
        Team(env, {"planner": RoleBinding(tiny, adapter="planner"), "executor": tiny})
    with pytest.raises(ValueError, match=r"adapter 'planner'.*adapters=env\.roles"):
        Team.per_role(env, OraclePolicy())


def test_per_role_adapters(env, lora_policy):
    team = Team.per_role(env, lora_policy, system_prompts={"planner": "You plan."})
    assert team.policy_layout == "per_role"
    assert {r: b.adapter for r, b in team.bindings.items()} == {"planner": "planner", "executor": "executor"}
    assert (
        team.bindings["planner"].system_prompt == "You plan."
        and team.bindings["executor"].system_prompt is None
    )
    generation = team.act(env, "executor_0", SamplingParams(max_new_tokens=4, seed=0))
    assert 1 <= len(generation.token_ids) <= 4
    one_adapter = HFPolicy("tiny-test", adapters=("planner",))
    with pytest.raises(ValueError, match=r"role 'executor'.*adapter 'executor'.*adapters=env\.roles"):
        Team.per_role(env, one_adapter)


def test_modes(env, tiny, lora_policy):
    assert Team.shared(env, tiny).policy_layout == "shared"
    assert Team.shared(env, lora_policy).policy_layout == "shared"  # adapters exist but are not used
    assert Team.shared(env, tiny, system_prompts={"planner": "A", "executor": "B"}).policy_layout == "shared"
    separate = Team.per_role_models(env, {"planner": tiny, "executor": HFPolicy("tiny-test")})
    assert separate.policy_layout == "per_role"
    mixed = Team(env, {"planner": OraclePolicy(), "executor": tiny})
    assert mixed.policy_layout == "per_role" and len(mixed.policies) == 2
    assert Team.shared(env, tiny).policies == [tiny]


# ---------------------------------------------------------------- turn order


def test_turn_order_is_the_roles_order_and_check_env_demands_it(env):
    team = Team.shared(env, OraclePolicy())
    assert team.turn_order == env.roles == ROLES
    team.check_env(env)
    assert Team.shared(("a", "c", "b"), OraclePolicy()).turn_order == ("a", "c", "b")

    team = Team.shared(("executor", "planner"), OraclePolicy())
    assert team.turn_order == ("executor", "planner")
    with pytest.raises(
        ValueError, match=r"envs\.make\('plan_path-v2', turn_order=\('executor', 'planner'\)\)"
    ):
        team.check_env(envs.make("plan_path"))
    with pytest.raises(ValueError, match="team variant"):
        team.check_env(envs.make("plan_path", team="single"))
    reordered = envs.make("plan_path", turn_order=team.turn_order)
    team.check_env(reordered)
    reordered.reset(seed=0)
    assert reordered.agent_selection == "executor_0"


# ---------------------------------------------------------------- acting


def test_prompt_for_attaches_env_agent_and_system(env):
    team = Team.shared(env, OraclePolicy(), system_prompts={"executor": "You execute."})
    prompt = team.prompt_for(env, "executor_0")
    assert prompt == Prompt(
        env.observe("executor_0")["prompt"], system="You execute.", env=env, agent="executor_0"
    )
    assert team.prompt_for(env, "planner_0").system is None
    assert team.binding("planner_0") is team.bindings["planner"]
    with pytest.raises(KeyError, match="'solver'"):
        team.binding("solver_0")


def test_act_passes_the_adapter_and_sampling(env):
    calls = []

    class Recorder(RandomPolicy):
        adapter_names = ROLES

        def generate(self, prompts, *, num_samples=1, sampling=None, adapter=None):
            calls.append((prompts, num_samples, sampling, adapter))
            return super().generate(prompts, num_samples=num_samples, sampling=sampling)

    team = Team.per_role(env, Recorder())
    sampling = SamplingParams(seed=5)
    generation = team.act(env, "planner_0", sampling)
    ((prompts, num_samples, got_sampling, adapter),) = calls
    assert (num_samples, got_sampling, adapter) == (1, sampling, "planner")
    assert prompts[0].agent == "planner_0" and prompts[0].env is env
    assert generation.text.startswith("<answer>")


def test_mixed_team_plays_a_plan_path_episode(tiny):
    env = envs.make("plan_path", max_cycles=4)
    env.reset(seed=0)
    team = Team(env, {"planner": OraclePolicy(), "executor": tiny})
    team.check_env(env)
    sampling = SamplingParams(max_new_tokens=16, seed=0)
    acted = []
    for agent in env.agent_iter():
        _, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        generation = team.act(env, agent, sampling)
        assert (generation.token_ids == ()) == (agent == "planner_0")  # oracle: no tokens
        acted.append(agent)
        env.step(generation.text)
    assert acted[:2] == ["planner_0", "executor_0"]
    assert len(acted) == env.max_cycles * 2 or env.success


def test_response_prefix_reaches_the_prompt_and_the_reply():
    import envs as _envs
    from agents.base import SamplingParams as _Sampling
    from agents.hf import HFPolicy as _HF

    env = _envs.make("plan_path")
    env.reset(seed=0)
    team = Team.shared(env, _HF("tiny-test"), response_prefix="<answer>")
    assert team.prompt_for(env, "planner_0").prefix == "<answer>"
    reply = team.act(env, "planner_0", _Sampling(max_new_tokens=3, seed=0))
    assert reply.text.startswith("<answer>") and len(reply.token_ids) <= 3


# ---------------------------------------------------------------- releasing engines
class ClosablePolicy(RandomPolicy):
    """A scripted policy that counts its ``close()`` calls (a stand-in for a vLLM engine)."""

    def __init__(self):
        super().__init__(seed=0)
        self.closed = 0

    def close(self):
        self.closed += 1


def test_close_closes_each_distinct_policy_once_and_skips_those_without_close():
    shared, other = ClosablePolicy(), ClosablePolicy()
    team = Team(ROLES, {"planner": shared, "executor": RoleBinding(shared, system_prompt="Be brief.")})
    team.close()
    assert shared.closed == 1  # two roles, one policy: closed once
    close_policies([shared, other, OraclePolicy(), other])  # no close(): left alone
    assert (shared.closed, other.closed) == (2, 1)
