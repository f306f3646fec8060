"""Conformance suite: every registered env (and the README's user env), both teams.

PettingZoo's own test tools (api_test, seed_test, parallel_api_test on the turn-based
parallel view, render_test) must pass with no warnings except the known ones that any
Text-space env triggers. Then our own contract: clone/pickle mid-episode, determinism,
truncation, reward mixing, invalid-action modes, fuzzed action text, oracle success on
every size preset, and disjoint train/test task spaces.
"""

from __future__ import annotations

import math
import pickle
import re
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pettingzoo.test import api_test, parallel_api_test, render_test, seed_test
from pettingzoo.utils.conversions import turn_based_aec_to_parallel

import envs
from envs.splits import fingerprint_split, split_seeds
from tests.envs.conftest import import_readme_example

import_readme_example(Path(tempfile.mkdtemp(prefix="teamgym-readme-")))

BUILTIN_IDS = ("sokoban-v0", "plan_path-v0", "sudoku-v0", "math-v0", "code-v0")
PLANNING_IDS = BUILTIN_IDS[:3]
ENV_IDS = envs.registered_ids()
CASES = [(env_id, team) for env_id in ENV_IDS for team in envs.make(env_id).TEAMS]

# Warnings PettingZoo's tools emit for any env whose observations are dicts of text and
# whose spaces are Text (they assume numeric Box/Discrete spaces). Nothing else may warn.
KNOWN_TEXT_WARNINGS = (
    r"Observation is not a NumPy array",
    r"Observation space for each agent probably should be gymnasium\.spaces\.box",
    r"Action space for each agent probably should be gymnasium\.spaces\.box",
)

ADVERSARIAL_TEXTS = [
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
]


def only_known_warnings(fn, *args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn(*args, **kwargs)
    unexpected = [
        str(w.message)
        for w in caught
        if not any(re.search(pattern, str(w.message)) for pattern in KNOWN_TEXT_WARNINGS)
    ]
    assert not unexpected, f"unexpected warnings: {unexpected}"


def play(env, actions_for, seed=0, max_steps=10_000):
    """Run the AEC loop with ``actions_for(env, agent)``; return the transcript."""
    env.reset(seed=seed)
    log = []
    for _ in range(max_steps):
        if not env.agents:
            break
        agent = env.agent_selection
        obs, reward, terminated, truncated, info = env.last()
        action = None if (terminated or truncated) else actions_for(env, agent)
        log.append((agent, obs["prompt"], reward, terminated, truncated, info.get("reward_terms")))
        env.step(action)
    return log


def oracle(env, agent):
    return env.oracle_response(agent)


def junk(env, agent):
    return "I am not sure what to do."


@pytest.fixture(params=CASES, ids=[f"{i}-{t}" for i, t in CASES])
def case(request):
    return request.param


def make_fn(env_id, team):
    def fn(**kwargs):
        return envs.make(env_id, team=team, **kwargs)

    return fn


def test_builtin_envs_are_registered():
    assert set(BUILTIN_IDS) <= set(ENV_IDS)
    assert "mylab/guess-v0" in ENV_IDS  # the README example took part


# ------------------------------------------------------------ PettingZoo's own tools
def test_pettingzoo_api_test(case):
    only_known_warnings(api_test, make_fn(*case)(), num_cycles=200)


def test_pettingzoo_seed_test(case):
    only_known_warnings(seed_test, make_fn(*case), num_cycles=50)


def test_pettingzoo_parallel_api_test_turn_based_view(case):
    par_env = turn_based_aec_to_parallel(make_fn(*case)())
    only_known_warnings(parallel_api_test, par_env, num_cycles=200)


def test_pettingzoo_render_test(case):
    only_known_warnings(render_test, make_fn(*case), custom_tests={"ansi": lambda r: bool(r.strip())})


# ------------------------------------------------------------ our contract
def test_reset_fills_info_contract(case):
    env = make_fn(*case)()
    env.reset(seed=5)
    for agent in env.agents:
        info = env.infos[agent]
        assert {"legal_moves", "invalid_action", "reward_terms", "success", "task_seed", "split"} <= set(info)
        assert info["task_seed"] == 5 and info["split"] == "train"
        assert isinstance(info["legal_moves"], list)
        assert all(isinstance(m, str) for m in info["legal_moves"])
        assert env.observation_space(agent).contains(env.observe(agent))
    hash(env.state_key())


def test_clone_mid_episode_is_independent_and_equal(case):
    env = make_fn(*case)()
    env.reset(seed=1)
    env.step(junk(env, env.agent_selection))
    twin = env.clone()
    assert twin.state_key() == env.state_key()
    assert twin.agent_selection == env.agent_selection
    assert twin.observe(twin.agent_selection) == env.observe(env.agent_selection)
    assert twin.action_space(twin.agent_selection) is not env.action_space(env.agent_selection)
    before = (env.state_key(), dict(env._cumulative_rewards), env.num_steps, list(env.transcript))
    # Diverge: the clone plays on (oracle where there is one), the original is untouched.
    for _ in range(3):
        if not twin.agents:
            break
        agent = twin.agent_selection
        done = twin.terminations[agent] or twin.truncations[agent]
        twin.step(
            None
            if done
            else (oracle(twin, agent) if hasattr(twin, "oracle_response") else "<answer>1</answer>")
        )
    assert (env.state_key(), dict(env._cumulative_rewards), env.num_steps, list(env.transcript)) == before
    assert twin.num_steps > env.num_steps


def test_clone_and_pickle_replay_identically(case):
    env = make_fn(*case)()
    env.reset(seed=2)
    env.step(junk(env, env.agent_selection))
    copies = [env.clone(), pickle.loads(pickle.dumps(env))]
    actions = oracle if hasattr(env, "oracle_response") else junk
    logs = []
    for e in [env, *copies]:
        log = []
        while e.agents:
            agent = e.agent_selection
            obs, reward, term, trunc, info = e.last()
            log.append((agent, obs["prompt"], reward, term, trunc, info["reward_terms"], e.state_key()))
            e.step(None if (term or trunc) else actions(e, agent))
        logs.append(log)
    assert logs[0] == logs[1] == logs[2]


def test_same_seed_same_episode(case):
    actions = oracle if hasattr(make_fn(*case)(), "oracle_response") else junk
    first = play(make_fn(*case)(), actions, seed=11)
    second = play(make_fn(*case)(), actions, seed=11)
    assert len(first) > 1 and first == second


def test_reset_without_seed_continues_the_seeded_stream(case):
    a, b = make_fn(*case)(), make_fn(*case)()
    a.reset(seed=3)
    b.reset(seed=3)
    a.reset()
    b.reset()
    assert a.task_seed == b.task_seed and a.task_seed != 3
    assert a.observe(a.agent_selection) == b.observe(b.agent_selection)


def test_truncation_after_max_cycles(case):
    env_id, team = case
    env = envs.make(env_id, team=team, max_cycles=3)
    env.reset(seed=0)
    n = len(env.possible_agents)
    for step in range(3 * n):
        assert not any(env.truncations.values()), f"truncated early at step {step}"
        env.step("")  # invalid: consumes the turn, never solves
    assert all(env.truncations.values()) and not any(env.terminations.values())
    for _ in range(n):
        env.step(None)
    assert env.agents == []


def test_rewards_are_alpha_team_plus_local(case):
    env_id, team = case
    for alpha in (1.0, 0.0, 2.5):
        env = envs.make(env_id, team=team, alpha=alpha)
        env.reset(seed=4)
        actions = oracle if hasattr(env, "oracle_response") else junk
        while env.agents:
            agent = env.agent_selection
            if env.terminations[agent] or env.truncations[agent]:
                env.step(None)
                continue
            env.step(actions(env, agent))
            for other in env.agents:
                terms = env.infos[other]["reward_terms"]
                team_sum = sum(v for k, v in terms.items() if k.startswith("team/"))
                local_sum = sum(v for k, v in terms.items() if k.startswith("local/"))
                assert all(k.startswith(("team/", "local/")) for k in terms)
                assert math.isclose(env.rewards[other], alpha * team_sum + local_sum, abs_tol=1e-12)
                if other != agent:
                    assert local_sum == 0


def test_invalid_action_penalize_consumes_turn(case):
    env_id, team = case
    env = envs.make(env_id, team=team, invalid_penalty=0.25)
    env.reset(seed=0)
    agent = env.agent_selection
    key = env.state_key()
    env.step("no answer tags here")
    assert env.infos[agent]["invalid_action"] is True
    assert env.infos[agent]["reward_terms"]["local/invalid"] == -0.25
    assert env.state_key() == key
    assert env.num_steps == 1 and not any(env.terminations.values())
    assert env.infos[agent]["feedback"]


def test_invalid_action_terminate_ends_episode(case):
    env_id, team = case
    env = envs.make(env_id, team=team, invalid_action="terminate")
    env.reset(seed=0)
    agent = env.agent_selection
    env.step(12345)  # not text at all
    assert all(env.terminations.values())
    assert env.rewards[agent] == -env.invalid_penalty
    assert env.infos[agent]["invalid_action"] is True


def step_texts_checking_rewards_and_observations(env, texts):
    """Feed ``texts`` as the acting agents' responses; every reward stays finite and
    every observation inside its space (no exception, whatever the text)."""
    for text in texts:
        if not env.agents:
            break
        agent = env.agent_selection
        done = env.terminations[agent] or env.truncations[agent]
        env.step(None if done else text)
        for other in env.agents:
            assert math.isfinite(env.rewards[other])
            assert env.observation_space(other).contains(env.observe(other))


@pytest.mark.parametrize("text", ADVERSARIAL_TEXTS, ids=range(len(ADVERSARIAL_TEXTS)))
def test_adversarial_action_text_never_raises(case, text):
    env = make_fn(*case)()
    env.reset(seed=0)
    step_texts_checking_rewards_and_observations(env, [text] * (2 * len(env.possible_agents)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.text(max_size=300), min_size=1, max_size=6))
def test_fuzzed_action_text_never_raises(case, texts):
    env = make_fn(*case)()
    env.reset(seed=7)
    step_texts_checking_rewards_and_observations(env, texts)


# ------------------------------------------------------------ tasks and splits
def _planning_cases():
    return [(i, t) for i, t in CASES if i in PLANNING_IDS]


@pytest.mark.parametrize("env_id,team", _planning_cases())
def test_oracle_solves_every_size_preset(env_id, team):
    presets = envs.make(env_id).GAME.presets
    assert {"easy", "medium", "hard"} <= set(presets)
    for difficulty in presets:
        for seed in range(8):
            env = envs.make(env_id, team=team, difficulty=difficulty)
            log = play(env, oracle, seed=seed)
            assert env.success, f"{env_id} {difficulty} seed {seed}: oracle failed after {len(log)} steps"


@pytest.mark.parametrize("env_id", PLANNING_IDS)  # math/code: train and test are different sources
def test_train_and_test_task_spaces_are_disjoint(env_id):
    fingerprints = {}
    for split in ("train", "test"):
        env = envs.make(env_id, split=split)
        prints = set()
        for seed in split_seeds(split, 60):
            env.reset(seed=seed)
            prints.add(env.level.fingerprint)
            assert fingerprint_split(env.level.fingerprint) == split
        fingerprints[split] = prints
    assert not fingerprints["train"] & fingerprints["test"]
    assert len(fingerprints["train"]) > 30  # many distinct tasks, not one repeated level


def test_env_refuses_the_other_splits_seeds():
    train_env = envs.make("plan_path")
    with pytest.raises(ValueError, match="split='test'"):
        train_env.reset(seed=envs.TEST_SEED_START + 1)
    test_env = envs.make("plan_path", split="test")
    with pytest.raises(ValueError, match="test seeds start at"):
        test_env.reset(seed=5)
    test_env.reset(seed=envs.TEST_SEED_START + 5)
    assert test_env.infos["planner_0"]["split"] == "test"
    test_env.reset()  # an unseeded reset draws from the env's own split
    assert envs.split_of(test_env.task_seed) == "test"


def test_import_envs_does_not_import_torch():
    code = (
        "import sys, envs\n"
        "for env_id in envs.registered_ids(): envs.make(env_id).reset(seed=0)\n"
        "heavy = [m for m in ('torch', 'transformers', 'vllm') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[2])
