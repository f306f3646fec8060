"""The pure-Python engine against the real one (textworld's PddlEnv + alfworld's Demangler)
on generated games: after every command, the same feedback, admissible commands, ``won``
and state. Skipped unless the alfworld extra is installed (``pip install 'teamgym[alfworld]'``)."""

from __future__ import annotations

import os
import random

import pytest

from envs.alfworld import expert
from envs.alfworld import pddl as pddl_module
from envs.alfworld.engine import TASK_TYPES, GameSpec, Goal, Item, Receptacle, World
from envs.alfworld.generator import generate
from envs.alfworld.pddl import EXTRA_HINT, PddlWorld, pddl_available, to_pddl

# CI installs the extra and sets TEAMGYM_REQUIRE_ALFWORLD=1: there the test must run, not skip.
needs_engine = pytest.mark.skipif(
    not pddl_available() and os.environ.get("TEAMGYM_REQUIRE_ALFWORLD") != "1",
    reason=f"the real ALFWorld engine is not installed ({EXTRA_HINT})",
)
# Two generated games per task type: one in each syntax (both seeds in both syntaxes took
# 100 s of CI; the engine code a game reaches depends on its task type and syntax, not its seed).
SEEDS = {"move": (0,), "put": (1,)}
RANDOM_STEPS = 15


def assert_same(ours: World, real: PddlWorld, where: str) -> None:
    assert ours.admissible() == real.admissible(), where
    assert ours.won == real.won, where
    assert ours.state_key() == real.state_key(), where


def play_both(ours: World, real: PddlWorld, commands, where: str) -> int:
    for k, command in enumerate(commands):
        here = f"{where}, step {k} {command!r}"
        assert ours.step(command) == real.step(command), here
        assert_same(ours, real, here)
    return len(commands)


def _wrong_commands(world: World, rng: random.Random) -> list[str]:
    """Commands that are often not admissible: examining or taking what is not in reach,
    going where the agent is, help under the put syntax, nonsense."""
    items = [i.name for i in world.spec.items]
    receptacles = [r.name for r in world.spec.receptacles]
    here = [r.name for r in world.here()]
    return [
        f"examine {rng.choice(items)}",
        f"take {rng.choice(items)} from {rng.choice(receptacles)}",
        f"go to {here[0]}" if here else "go to nowhere 1",
        f"open {rng.choice(receptacles)}",
        "help",
        "jump",
    ]


@needs_engine
@pytest.mark.slow
@pytest.mark.parametrize("syntax", ("move", "put"))
@pytest.mark.parametrize("task_type", TASK_TYPES)
def test_real_engine_reads_the_same_on_walkthrough_and_random_play(task_type, syntax):
    steps = 0
    for seed in SEEDS[syntax]:
        problem = generate(seed, task_types=(task_type,), syntax=syntax)
        where = f"{task_type} {syntax} seed {seed}"

        # (a) the walkthrough
        ours, real = World(problem.spec), PddlWorld(problem.spec)
        try:
            assert ours.intro() == real.intro(), where
            assert_same(ours, real, f"{where}, reset")
            steps += play_both(ours, real, problem.walkthrough, f"{where}, walkthrough")
            assert ours.won and real.won, where
        finally:
            real.close()

        # (b) random commands (mostly admissible), then the expert's plan from there
        ours, real = World(problem.spec), PddlWorld(problem.spec)
        rng = random.Random(where)
        try:
            for k in range(RANDOM_STEPS):
                options = ours.admissible()
                acting = [c for c in options if not c.startswith("go to ")]  # take, open, heat, slice...
                if rng.random() < 0.2:
                    options = _wrong_commands(ours, rng)
                elif acting and rng.random() < 0.6:
                    options = acting
                steps += play_both(ours, real, [rng.choice(options)], f"{where}, random {k}")
            plan = expert.plan(ours)
            steps += play_both(ours, real, plan, f"{where}, expert")
            assert ours.won and real.won, where
        finally:
            real.close()
    assert steps > 0


def _shared_location_spec(syntax: str) -> GameSpec:
    """Two cabinets and two countertops, each pair at one location; a sink and a fridge."""
    receptacles = (
        Receptacle("cabinet 2", "Cabinet", 1, openable=True),
        Receptacle("cabinet 1", "Cabinet", 1, openable=True),
        Receptacle("countertop 2", "CounterTop", 2),
        Receptacle("countertop 1", "CounterTop", 2),
        Receptacle("fridge 1", "Fridge", 3, openable=True),
        Receptacle("sinkbasin 1", "SinkBasin", 4),
    )
    items = (
        Item(
            "apple 2", "Apple", "countertop 2", heatable=True, coolable=True, cleanable=True, sliceable=True
        ),
        Item(
            "apple 1",
            "Apple",
            "fridge 1",
            heatable=True,
            coolable=True,
            cleanable=True,
            sliceable=True,
            cool=True,
        ),
        Item("knife 1", "Knife", "countertop 1", cleanable=True),
        Item(
            "mug 1", "Mug", "cabinet 1", heatable=True, coolable=True, cleanable=True, receptacle_object=True
        ),
    )
    pairs = {("Cabinet", "Mug"), ("CounterTop", "Apple"), ("CounterTop", "Knife"), ("CounterTop", "Mug")}
    pairs |= {("Fridge", "Apple"), ("Fridge", "Mug"), ("SinkBasin", "Apple"), ("SinkBasin", "Knife")}
    return GameSpec(
        receptacles=receptacles,
        items=items,
        goal=Goal("pick_clean_then_place_in_recep", "Apple", "Fridge"),
        goal_text="put a clean apple in fridge",
        can_contain=frozenset(pairs | {("SinkBasin", "Mug")}),
        start_location=0,
        syntax=syntax,
        location_names={0: 2, 1: 5, 2: 1, 3: 4, 4: 3},
    )


@needs_engine
@pytest.mark.parametrize("syntax", ("move", "put"))
def test_real_engine_reads_the_same_with_receptacles_sharing_a_location(syntax):
    spec = _shared_location_spec(syntax)
    place = "move {} to {}" if syntax == "move" else "put {} in/on {}"
    commands = [
        "look",
        "go to cabinet 1",
        "look",
        "examine cabinet 2",
        "open cabinet 1",
        "take mug 1 from cabinet 1",
        "go to cabinet 2",
        "examine mug 1",
        place.format("mug 1", "cabinet 1"),  # back where it was
        "open cabinet 2",
        "close cabinet 1",
        "go to countertop 1",
        "look",
        "take knife 1 from countertop 1",
        "slice apple 2 with knife 1",
        "go to sinkbasin 1",
        "clean knife 1 with sinkbasin 1",
        place.format("knife 1", "sinkbasin 1"),
        "go to fridge 1",
        "open fridge 1",
        "take apple 1 from fridge 1",
        "examine apple 1",
        "go to sinkbasin 1",
        "clean apple 1 with sinkbasin 1",
        "examine apple 1",
        "go to fridge 1",
        place.format("apple 1", "fridge 1"),
        "inventory",
    ]
    ours, real = World(spec), PddlWorld(spec)
    try:
        assert ours.intro() == real.intro()
        assert_same(ours, real, "reset")
        play_both(ours, real, commands, syntax)
        assert ours.won and real.won
    finally:
        real.close()


@needs_engine
def test_clone_replays_the_game_and_is_independent():
    problem = generate(5, task_types=("pick_two_obj_and_place",))
    real = PddlWorld(problem.spec)
    try:
        for command in problem.walkthrough[:3]:
            real.step(command)
        twin = real.clone()
        try:
            assert twin.admissible() == real.admissible() and twin.state_key() == real.state_key()
            for command in problem.walkthrough[3:]:
                twin.step(command)
            assert twin.won and not real.won
            assert twin.intro() == real.intro()
        finally:
            twin.close()
    finally:
        real.close()


@needs_engine
def test_game_dict_has_the_task_and_the_syntax():
    for syntax in ("move", "put"):
        problem = generate(2, syntax=syntax)
        game = to_pddl(problem.spec)
        assert set(game) == {"pddl_domain", "grammar", "pddl_problem", "solvable"} and game["solvable"]
        assert f"Your task is to: {problem.spec.goal_text}." in game["grammar"]
        assert "UNKNOWN GOAL" not in game["grammar"]
        assert ("(:action help" in game["pddl_domain"]) == (syntax == "move")
        assert ('"put {o} in/on {r}"' in game["grammar"]) == (syntax == "put")


def test_without_the_real_engine_the_error_names_the_extra(monkeypatch):
    monkeypatch.setattr(pddl_module, "_REQUIRED", (*pddl_module._REQUIRED, "teamgym_no_such_module"))
    assert not pddl_available()
    spec = generate(0).spec
    with pytest.raises(ImportError, match=r"teamgym\[alfworld\]"):
        PddlWorld(spec)
    with pytest.raises(ImportError, match=r"teamgym\[alfworld\]"):
        to_pddl(spec)


@needs_engine
@pytest.mark.slow
@pytest.mark.parametrize("team", ("single", "mas"))
def test_the_env_on_the_real_engine_prompts_and_plays_as_on_ours(team):
    import envs

    for seed in (0, 1):
        ours, real = envs.make("alfworld", team=team), envs.make("alfworld", team=team, engine="pddl")
        ours.reset(seed=seed)
        real.reset(seed=seed)
        while ours.agents:
            agent = ours.agent_selection
            assert real.agent_selection == agent
            if ours.terminations[agent] or ours.truncations[agent]:
                ours.step(None)
                real.step(None)
                continue
            assert ours.observe(agent) == real.observe(agent)
            assert ours.infos[agent]["legal_moves"] == real.infos[agent]["legal_moves"]
            reply = ours.oracle_response(agent)
            ours.step(reply)
            real.step(reply)
        assert ours.success and real.success
        real.close()
