"""The checks of the env's API and its episodes: PettingZoo's own tools (``api_test``,
``seed_test``, ``parallel_api_test``, ``render_test``, with the warnings every Text-space env
triggers allowed), the info contract, objects not shared between envs or agents, ``clone()``
and pickling, determinism, unseeded resets, truncation, reward mixing, and the oracle
solving every preset."""

from __future__ import annotations

import contextlib
import io
import math
import pickle
import re
import warnings
from collections.abc import Callable
from typing import Any

from envs.checks.subject import EnvUnderCheck, Skip
from envs.core import TextAECEnv
from envs.splits import split_of

# Warnings PettingZoo's tools emit for any env whose observations are dicts of text and whose
# spaces are Text (they assume numeric Box/Discrete spaces). Any other warning fails a check.
KNOWN_TEXT_WARNINGS = (
    r"Observation is not a NumPy array",
    r"Observation space for each agent probably should be gymnasium\.spaces\.box",
    r"Action space for each agent probably should be gymnasium\.spaces\.box",
)


# ---------------------------------------------------------------------------- helpers
def _only_known_warnings(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("always")
        fn(*args, **kwargs)
    unexpected = [
        str(w.message) for w in caught if not any(re.search(p, str(w.message)) for p in KNOWN_TEXT_WARNINGS)
    ]
    assert not unexpected, f"unexpected warnings: {unexpected}"


def _split_seeded(subject: EnvUnderCheck) -> Callable[..., Any]:
    """A constructor whose envs map ``reset(seed=n)`` to the split's ``n``-th seed (PettingZoo's
    tools reset with 0 and 42, which are train seeds)."""
    from pettingzoo.utils.wrappers import BaseWrapper

    class SplitSeeds(BaseWrapper):
        def reset(self, seed: int | None = None, options: dict | None = None) -> None:
            super().reset(seed=None if seed is None else subject.seed(seed), options=options)

    return lambda **kwargs: SplitSeeds(subject.make(**kwargs))


def _policy(env: TextAECEnv) -> Callable[[TextAECEnv, str], Any]:
    """The oracle where the env has one (long, varied episodes), else a fixed junk answer."""
    if callable(getattr(env, "oracle_response", None)):
        return lambda e, agent: e.oracle_response(agent)
    return lambda e, agent: "I am not sure what to do."


def _play(env: TextAECEnv, actions: Callable[[TextAECEnv, str], Any], seed: int, max_steps: int = 10_000):
    """Reset to ``seed`` and run the AEC loop; returns one record per step."""
    env.reset(seed=seed)
    log = []
    for _ in range(max_steps):
        if not env.agents:
            break
        agent = env.agent_selection
        obs, reward, term, trunc, info = env.last()
        log.append((agent, obs["prompt"], reward, term, trunc, info.get("reward_terms"), env.state_key()))
        env.step(None if (term or trunc) else actions(env, agent))
    return log


# ---------------------------------------------------------------------------- the checks
def check_api(subject: EnvUnderCheck) -> str:
    from pettingzoo.test import api_test

    _only_known_warnings(api_test, _split_seeded(subject)(), num_cycles=200)
    return "PettingZoo api_test, 200 cycles"


def check_seed(subject: EnvUnderCheck) -> str:
    from pettingzoo.test import seed_test

    _only_known_warnings(seed_test, _split_seeded(subject), num_cycles=50)
    return "PettingZoo seed_test: two envs, same seed, same 50 cycles"


def check_parallel_api(subject: EnvUnderCheck) -> str:
    from pettingzoo.test import parallel_api_test
    from pettingzoo.utils.conversions import turn_based_aec_to_parallel

    _only_known_warnings(
        parallel_api_test, turn_based_aec_to_parallel(_split_seeded(subject)()), num_cycles=200
    )
    return "PettingZoo parallel_api_test on the turn-based parallel view"


def check_render(subject: EnvUnderCheck) -> str:
    from pettingzoo.test import render_test

    _only_known_warnings(
        render_test, _split_seeded(subject), custom_tests={"ansi": lambda text: bool(str(text).strip())}
    )
    return "PettingZoo render_test (ansi renders non-empty text)"


def check_info_contract(subject: EnvUnderCheck) -> str:
    env = subject.make()
    seed = subject.seed(5)
    env.reset(seed=seed)
    needed = {
        "legal_moves",
        "invalid_action",
        "reward_terms",
        "success",
        "task_seed",
        "split",
        "turn",
        "feedback",
    }
    for agent in env.agents:
        info = env.infos[agent]
        missing = needed - set(info)
        assert not missing, f"info[{agent!r}] lacks {sorted(missing)} (TextAECEnv._info fills them)"
        assert info["task_seed"] == seed and info["split"] == subject.split, "info names the wrong task"
        moves = info["legal_moves"]
        assert isinstance(moves, list) and all(isinstance(m, str) for m in moves), (
            f"_legal_moves({agent!r}) must return a list of str, got {moves!r:.200}"
        )
        obs = env.observe(agent)
        assert env.observation_space(agent).contains(obs), f"observe({agent!r}) is outside its space"
    try:
        hash(env.state_key())
    except TypeError as err:
        raise AssertionError(f"_state_key() must be hashable: {err}") from None
    return f"{len(env.agents)} agent(s): info keys, legal moves, observation in space, hashable state_key"


def check_independent_objects(subject: EnvUnderCheck) -> str:
    a, b = subject.make(), subject.make()
    a.reset(seed=subject.seed(0))
    b.reset(seed=subject.seed(0))
    agents = a.possible_agents
    for agent in agents:
        for space in ("observation_space", "action_space"):
            assert getattr(a, space)(agent) is not getattr(b, space)(agent), (
                f"{space}({agent!r}) is one object shared by two envs: seeding one seeds the other; "
                "build spaces per instance (TextAECEnv does)"
            )
    if len(agents) > 1:
        assert a.observation_space(agents[0]) is not a.observation_space(agents[1]), (
            "two agents share one observation space object; build one per agent"
        )
    agent = a.agent_selection
    first = a.observe(agent)
    assert a.observe(agent) is not first, "observe() returns the same dict twice; return a new one"
    first["prompt"] = "changed by the caller"
    assert a.observe(agent) != first, "changing a returned observation changed the env"
    return "spaces per env and per agent; observe() returns a new dict"


def check_clone(subject: EnvUnderCheck) -> str:
    env = subject.make()
    env.reset(seed=subject.seed(1))
    policy = _policy(env)
    env.step("I am not sure what to do.")
    twin = env.clone()
    assert twin.state_key() == env.state_key(), "clone() has another state_key"
    assert twin.agent_selection == env.agent_selection, "clone() acts with another agent"
    assert twin.observe(twin.agent_selection) == env.observe(env.agent_selection), (
        "clone() observes differently"
    )
    assert twin.action_space(twin.agent_selection) is not env.action_space(env.agent_selection), (
        "clone() shares the action space object; spaces must be rebuilt per copy"
    )
    before = (env.state_key(), dict(env._cumulative_rewards), env.num_steps, list(env.transcript))
    for _ in range(3):
        if not twin.agents:
            break
        agent = twin.agent_selection
        twin.step(None if (twin.terminations[agent] or twin.truncations[agent]) else policy(twin, agent))
    after = (env.state_key(), dict(env._cumulative_rewards), env.num_steps, list(env.transcript))
    assert after == before, (
        "stepping the clone changed the original (mutable state shared: CLONE_SHARED_ATTRS?)"
    )
    assert twin.num_steps > env.num_steps
    return "a mid-episode clone equals the original and diverges without touching it"


def check_clone_pickle_replay(subject: EnvUnderCheck) -> str:
    env = subject.make()
    env.reset(seed=subject.seed(2))
    env.step("I am not sure what to do.")
    policy = _policy(env)
    copies = {"clone()": env.clone(), "pickle": pickle.loads(pickle.dumps(env))}
    logs = {}
    for name, e in {"original": env, **copies}.items():
        log = []
        while e.agents:
            agent = e.agent_selection
            obs, reward, term, trunc, info = e.last()
            log.append((agent, obs["prompt"], reward, term, trunc, info["reward_terms"], e.state_key()))
            e.step(None if (term or trunc) else policy(e, agent))
        logs[name] = log
    for name in copies:
        assert logs[name] == logs["original"], f"a {name} copy plays the rest of the episode differently"
    return f"clone and pickle copies replay the same {len(logs['original'])} steps"


def check_determinism(subject: EnvUnderCheck) -> str:
    policy = _policy(subject.make())
    seed = subject.seed(11)
    first, second = _play(subject.make(), policy, seed), _play(subject.make(), policy, seed)
    assert len(first) > 1, "the episode ended at reset"
    if first != second:
        step = (
            next(i for i, (x, y) in enumerate(zip(first, second, strict=True)) if x != y)
            if len(first) == len(second)
            else None
        )
        where = f"at step {step}" if step is not None else f"in length ({len(first)} vs {len(second)} steps)"
        raise AssertionError(
            f"two envs reset with seed {seed} differ {where}: the task must depend only on the seed "
            "(use np.random.default_rng(task_seed) or self.np_random, never the global random modules)"
        )
    return f"seed {seed} twice: the same {len(first)} steps"


def check_unseeded_reset(subject: EnvUnderCheck) -> str:
    a, b = subject.make(), subject.make()
    seed = subject.seed(3)
    a.reset(seed=seed)
    b.reset(seed=seed)
    a.reset()
    b.reset()
    assert a.task_seed == b.task_seed, "reset() after reset(seed=s) must draw the same next task in two envs"
    assert a.task_seed != seed, "reset() replayed the seeded task"
    assert split_of(a.task_seed) == subject.split, "reset() drew a task of the other split"
    assert a.observe(a.agent_selection) == b.observe(b.agent_selection)
    return "reset() continues the seeded stream inside the split"


def check_truncation(subject: EnvUnderCheck) -> str:
    # Invalid replies consume turns without ending the game, unless the env forces a move on
    # them (_forced_move): then the game may end first, and a shorter horizon is tried.
    for cycles in (3, 2, 1):
        env = subject.make(max_cycles=cycles)
        env.reset(seed=subject.seed(0))
        n = len(env.possible_agents)
        ended = None
        for step in range(cycles * n):
            assert not any(env.truncations.values()), f"truncated early, at step {step}"
            forced = env._forced_move(env.agent_selection) is not None
            env.step("")  # invalid: consumes the turn, never solves
            if forced and any(env.terminations.values()):
                ended = step + 1
                break
            assert not any(env.terminations.values()), f"an empty answer ended the episode at step {step}"
        if ended is not None:
            continue
        assert all(env.truncations.values()), f"not truncated after max_cycles={cycles} cycles"
        assert not any(env.terminations.values())
        for _ in range(n):
            env.step(None)
        assert env.agents == [], "agents remain after every truncated agent stepped None"
        return f"max_cycles={cycles}: truncated after exactly {cycles} cycles, then every agent removed"
    raise Skip(
        "invalid replies play forced moves (_forced_move) that end the game within 1 cycle: "
        "truncation cannot be reached this way"
    )


def check_reward_mixing(subject: EnvUnderCheck) -> str:
    for alpha in (1.0, 0.0, 2.5):
        env = subject.make(alpha=alpha)
        env.reset(seed=subject.seed(4))
        policy = _policy(env)
        while env.agents:
            agent = env.agent_selection
            if env.terminations[agent] or env.truncations[agent]:
                env.step(None)
                continue
            env.step(policy(env, agent))
            for other in env.agents:
                terms = env.infos[other]["reward_terms"]
                named = ("team/", "local/", "seat/")
                assert all(k.startswith(named) for k in terms), f"unnamed reward terms {terms}"
                team = sum(v for k, v in terms.items() if k.startswith("team/"))
                local = sum(v for k, v in terms.items() if k.startswith("local/"))
                seat = sum(v for k, v in terms.items() if k.startswith("seat/"))
                assert math.isclose(env.rewards[other], alpha * team + local + seat, abs_tol=1e-12), (
                    f"alpha={alpha}: reward of {other} {env.rewards[other]} != alpha*team + local + seat = "
                    f"{alpha * team + local + seat} ({terms})"
                )
                assert other == agent or not any(k.startswith("local/") for k in terms), (
                    f"{other} got local terms for {agent}'s action"
                )
    return "reward = alpha * team + local + seat at alpha 1, 0 and 2.5; local terms only for the actor"


def check_oracle(subject: EnvUnderCheck, seeds: int = 8) -> str:
    if not subject.has_oracle:
        raise Skip("no oracle_response(agent): define one to check that every preset is solvable")
    difficulties = tuple(getattr(subject.make(), "DIFFICULTIES", ())) or (None,)
    for difficulty in difficulties:
        kwargs = {} if difficulty is None else {"difficulty": difficulty}
        for n in range(seeds):
            env = subject.make(**kwargs)
            log = _play(env, _policy(env), subject.seed(n))
            assert env.success, (
                f"the oracle failed {'difficulty ' + difficulty + ' ' if difficulty else ''}seed "
                f"{subject.seed(n)} after {len(log)} steps"
            )
    names = ", ".join(d for d in difficulties if d) or "default"
    return f"oracle solves {seeds} tasks of each preset ({names})"
