"""ALFWorld offline: the generator's games are solvable, the engine reads as the real one,
the expert re-plans from anywhere, the env's contract (conformance runs in test_conformance)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import envs
from envs.alfworld import expert
from envs.alfworld.engine import (
    NOTHING_HAPPENS,
    TASK_TYPES,
    GameSpec,
    Goal,
    Item,
    Receptacle,
    World,
    join_list,
)
from envs.alfworld.env import compact_places, normalize_command
from envs.alfworld.generator import UNSEEN_FLOOR_PLANS, floor_plans, generate, tables
from envs.alfworld.pddl import pddl_available
from envs.splits import split_seeds
from tests.envs.conftest import play_oracle


# ------------------------------------------------------------------ generator
@pytest.mark.parametrize("task_type", TASK_TYPES)
def test_every_generated_game_is_won_by_its_walkthrough_and_not_at_reset(task_type):
    for seed in range(100):
        problem = generate(seed, task_types=(task_type,))
        world = World(problem.spec)
        assert problem.spec.goal.task_type == task_type
        assert not world.won, f"seed {seed} is won at reset"
        for command in problem.walkthrough:
            assert command in world.admissible(), (seed, command)
            assert world.step(command) != NOTHING_HAPPENS
        assert world.won, (seed, problem.walkthrough)


def test_the_put_syntax_gives_the_same_game_with_its_own_commands():
    for seed in range(30):
        move, put = generate(seed), generate(seed, syntax="put")
        assert move.spec.items == put.spec.items and move.floor_plan == put.floor_plan
        assert [c.replace(" in/on ", " to ").replace("put ", "move ") for c in put.walkthrough] == list(
            move.walkthrough
        )
        world = World(put.spec)
        for command in put.walkthrough:
            assert command in world.admissible()
            feedback = world.step(command)
            if command.startswith("go to "):
                assert feedback.startswith("You arrive at loc "), feedback
        assert world.won


def test_games_are_deterministic_in_the_seed_and_differ_across_seeds():
    assert generate(7) == generate(7)
    assert len({generate(seed).spec.items for seed in range(20)}) == 20


def test_splits_hold_out_the_unseen_floor_plans():
    assert set(floor_plans("test")) == set(UNSEEN_FLOOR_PLANS)
    assert not set(floor_plans("train")) & set(UNSEEN_FLOOR_PLANS)
    assert len(floor_plans("train")) == 116
    for seed in split_seeds("test", 40):
        assert generate(seed, split="test").floor_plan in UNSEEN_FLOOR_PLANS
    for seed in range(200):
        assert generate(seed).floor_plan not in UNSEEN_FLOOR_PLANS


def test_goal_objects_are_never_in_a_parent_receptacle_and_rooms_suit_the_task():
    rooms = {int(n): plan["room"] for n, plan in tables()["floor_plans"].items()}
    for seed in range(300):
        spec = generate(seed).spec
        goal = spec.goal
        kinds = {r.name: r.type for r in spec.receptacles}
        for item in spec.items:
            if item.type == goal.obj:
                assert kinds[item.receptacle] != goal.recep
        assert rooms[generate(seed).floor_plan] in tables()["goals_valid"][goal.task_type]


def test_knobs_change_the_game():
    plain = generate(3, distractors=0, closed=False)
    assert {i.type for i in plain.spec.items} <= {plain.spec.goal.obj, "DeskLamp"}
    assert not any(r.openable for r in plain.spec.receptacles)
    assert all(not c.startswith("open ") for c in plain.walkthrough)
    with pytest.raises(ValueError, match="task_types"):
        generate(0, task_types=("make_coffee",))


# ------------------------------------------------------------------ engine texts
def _kitchen(syntax: str = "move") -> GameSpec:
    """A small hand-made kitchen (the texts below are what PddlEnv printed for the same scene)."""
    receptacles = (
        Receptacle("cabinet 2", "Cabinet", 1, openable=True),
        Receptacle("cabinet 1", "Cabinet", 1, openable=True),  # shares cabinet 2's location
        Receptacle("countertop 1", "CounterTop", 2),
        Receptacle("drawer 1", "Drawer", 3),
        Receptacle("fridge 1", "Fridge", 4, openable=True),
        Receptacle("microwave 1", "Microwave", 5, openable=True),
        Receptacle("sidetable 1", "SideTable", 6),
        Receptacle("sinkbasin 1", "SinkBasin", 7),
    )
    items = (
        Item(
            "apple 3", "Apple", "countertop 1", heatable=True, coolable=True, cleanable=True, sliceable=True
        ),
        Item(
            "apple 1", "Apple", "countertop 1", heatable=True, coolable=True, cleanable=True, sliceable=True
        ),
        Item("knife 1", "Knife", "countertop 1", cleanable=True),
        Item("mug 1", "Mug", "drawer 1", receptacle_object=True, heatable=True),
        Item("desklamp 1", "DeskLamp", "sidetable 1", pickupable=False, toggleable=True),
    )
    contain = {
        (r, o)
        for r in ("CounterTop", "SideTable", "Fridge", "Microwave", "SinkBasin")
        for o in ("Apple", "Mug")
    }
    contain |= {("CounterTop", "Knife"), ("Drawer", "Mug"), ("Drawer", "Knife"), ("Cabinet", "Mug")}
    return GameSpec(
        receptacles=receptacles,
        items=items,
        goal=Goal("pick_heat_then_place_in_recep", "Apple", "SideTable"),
        goal_text="put a hot apple in sidetable",
        can_contain=frozenset(contain),
        syntax=syntax,
        location_names={0: 9, 1: 8, 2: 11, 3: 7, 4: 6, 5: 5, 6: 4, 7: 3},
    )


def test_lists_read_as_the_grammar_renders_them():
    assert join_list([]) == "nothing"
    assert join_list(["a spoon 1"]) == "a spoon 1"
    assert join_list(["a fork 1", "a mug 1"]) == "a fork 1, and a mug 1"
    assert join_list(["a apple 3", "a apple 1", "a knife 1"]) == "a apple 3, a apple 1, and a knife 1"


def test_the_engine_replays_the_real_engines_texts():
    world = World(_kitchen())
    assert world.intro() == (
        "-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly around "
        "you, you see a cabinet 2, a cabinet 1, a countertop 1, a drawer 1, a fridge 1, a microwave 1, a "
        "sidetable 1, and a sinkbasin 1.\n\nYour task is to: put a hot apple in sidetable."
    )
    start = world.admissible()
    assert start == sorted(start) and {"help", "inventory", "look"} <= set(start)
    assert not any(c.startswith(("examine", "take")) for c in start)
    script = [
        ("look", "You are in the middle of a room. Looking quickly around you, you see nothing."),
        ("inventory", "You are not carrying anything."),
        ("examine countertop 1", NOTHING_HAPPENS),
        (
            "go to countertop 1",
            "You arrive at countertop 1. On the countertop 1, you see a apple 3, a apple 1, and a knife 1.",
        ),
        ("go to countertop 1", NOTHING_HAPPENS),
        ("look", "You are facing the countertop 1. Next to it, you see nothing."),
        ("examine apple 1", NOTHING_HAPPENS),  # only a held object can be examined
        ("take apple 1 from countertop 1", "You pick up the apple 1 from the countertop 1."),
        ("inventory", "You are carrying: a apple 1."),
        ("examine apple 1", "There's nothing special about apple 1."),
        ("go to cabinet 2", "You arrive at cabinet 2. The cabinet 2 is closed."),
        ("look", "You are facing the cabinet 2, and cabinet 1. Next to it, you see nothing."),
        ("go to cabinet 1", NOTHING_HAPPENS),  # same location
        ("open cabinet 2", "You open the cabinet 2. The cabinet 2 is open. In it, you see nothing."),
        ("move apple 1 to cabinet 2", NOTHING_HAPPENS),  # a cabinet cannot hold an apple
        ("close cabinet 2", "You close the cabinet 2."),
        ("go to fridge 1", "You arrive at fridge 1. The fridge 1 is closed."),
        ("cool apple 1 with fridge 1", "You cool the apple 1 using the fridge 1."),  # no open needed
        ("examine apple 1", "This is a cold apple 1."),
        ("go to microwave 1", "You arrive at microwave 1. The microwave 1 is closed."),
        ("heat apple 1 with microwave 1", "You heat the apple 1 using the microwave 1."),
        ("examine apple 1", "This is a hot apple 1."),
        ("go to sinkbasin 1", "You arrive at sinkbasin 1. On the sinkbasin 1, you see nothing."),
        ("clean apple 1 with sinkbasin 1", "You clean the apple 1 using the sinkbasin 1."),
        ("examine apple 1", "This is a hot and clean apple 1."),
        ("go to sidetable 1", "You arrive at sidetable 1. On the sidetable 1, you see a desklamp 1."),
        ("examine desklamp 1", NOTHING_HAPPENS),
        ("use desklamp 1", "You turn on the desklamp 1."),
        ("use desklamp 1", "You turn on the desklamp 1."),
        ("move apple 1 to sidetable 1", "You move the apple 1 to the sidetable 1."),
    ]
    for command, expected in script:
        assert world.step(command) == expected, command
    assert world.won
    assert world.step("take apple 1 from sidetable 1") == "You pick up the apple 1 from the sidetable 1."
    assert not world.won  # not sticky: the goal is checked every step
    assert world.step("help").startswith("Available commands:\n  look:")


def test_slicing_needs_a_held_knife_and_the_object_here():
    world = World(_kitchen())
    world.step("go to countertop 1")
    assert not any(c.startswith("slice") for c in world.admissible())
    world.step("take knife 1 from countertop 1")
    assert "slice apple 1 with knife 1" in world.admissible()
    assert world.step("slice apple 3 with knife 1") == "You sliced the apple 3 with the knife 1."
    world.step("move knife 1 to countertop 1")
    world.step("take apple 3 from countertop 1")
    assert world.step("examine apple 3") == "This is a sliced apple 3."


def test_a_receptacle_object_examines_as_normal():
    world = World(_kitchen())
    world.step("go to drawer 1")
    world.step("take mug 1 from drawer 1")
    assert world.step("examine mug 1") == "This is a normal mug 1. In it, you see nothing."


def test_the_put_syntax_names_locations_and_drops_help():
    world = World(_kitchen("put"))
    assert "help" not in world.admissible()
    assert world.step("go to countertop 1").startswith("You arrive at loc 11. On the countertop 1")
    world.step("take apple 1 from countertop 1")
    assert "put apple 1 in/on countertop 1" in world.admissible()
    assert world.step("put apple 1 in/on countertop 1") == "You put the apple 1 in/on the countertop 1."


def test_a_clone_is_independent():
    world = World(_kitchen())
    twin = world.clone()
    twin.step("go to countertop 1")
    twin.step("take apple 1 from countertop 1")
    assert world.holding is None and world.place["apple 1"] == ("countertop 1",)
    assert world.state_key() != twin.state_key()
    assert world.state_key() == World(_kitchen()).state_key()


# ------------------------------------------------------------------ expert
def test_the_expert_wins_from_any_state_a_random_walk_reaches():
    rng = np.random.default_rng(0)
    for seed in range(120):
        world = World(generate(seed).spec)
        for _ in range(int(rng.integers(0, 25))):
            commands = world.admissible()
            world.step(commands[int(rng.integers(len(commands)))])
        rest = expert.plan(world)
        for command in rest:
            world.step(command)
        assert world.won, seed


def _search(world: World, limit: int = 200) -> int:
    """Plays the searching expert from ``world``'s state (nothing looked into yet, as after a
    random walk the env did not track); the number of commands it took."""
    looked = frozenset()
    for taken in range(limit):
        if world.won:
            return taken
        command = expert.search_command(world, looked)
        assert world.step(command) != NOTHING_HAPPENS, command
        looked = expert.looked_in(world, looked, command)
    raise AssertionError(f"not won in {limit} commands")


@pytest.mark.parametrize("split", ["train", "test"])
def test_the_searching_expert_wins_every_game_from_reset_and_from_random_walks(split):
    rng = np.random.default_rng(1)
    for seed in split_seeds(split, 150):
        spec = generate(seed, split=split).spec
        _search(World(spec))
        world = World(spec)
        for _ in range(int(rng.integers(1, 25))):
            commands = world.admissible()
            world.step(commands[int(rng.integers(len(commands)))])
        _search(world)


def _hide_elsewhere(world: World) -> World:
    """A twin whose goal objects the agent cannot see lie in other receptacles that can hold
    them (what the prompt shows is the same)."""
    twin = world.clone()
    goal, spec = world.spec.goal, world.spec
    seen_here = {name for r in world.here() if world.accessible(r) for name in world.contents(r.name)}
    hidden = [
        r.name
        for r in spec.receptacles
        if r.location != world.location and r.type != goal.recep and (r.type, goal.obj) in spec.can_contain
    ]
    for k, item in enumerate(spec.items):
        if item.type == goal.obj and item.name != world.holding and item.name not in seen_here:
            if not world.placed(item.name) and hidden:
                twin.place[item.name] = (hidden[(k + 3) % len(hidden)],)
    return twin


def test_the_searching_expert_uses_only_what_the_agent_sees():
    """Moving the objects the agent has not seen never changes its next command (the
    omniscient expert's first command does change: it goes where the object lies)."""
    changed_omniscient = 0
    for seed in range(60):
        world = World(generate(seed).spec)
        changed_omniscient += expert.next_command(world) != expert.next_command(_hide_elsewhere(world))
        looked = frozenset()
        for _ in range(40):
            if world.won:
                break
            command = expert.search_command(world, looked)
            assert expert.search_command(_hide_elsewhere(world), looked) == command, (seed, command)
            world.step(command)
            looked = expert.looked_in(world, looked, command)
    assert changed_omniscient > 10


def test_the_searching_plan_names_the_next_command_and_the_rest_in_words():
    world = World(generate(3).spec)  # put a cool bread in countertop
    steps = expert.search_plan(world)
    assert steps[0] == expert.search_command(world)
    assert steps[1:] == ["find a bread and take it", "cool it with fridge 1", "put it in countertop 1"]


# ------------------------------------------------------------------ env
def test_compact_places_are_ranges_per_type_in_the_order_the_search_visits():
    names = ["cabinet 3", "cabinet 1", "cabinet 2", "drawer 5", "drawer 1", "drawer 4", "fridge 1", "shelf"]
    assert compact_places(names) == "cabinet 1-3, drawer 1, 4-5, fridge 1, shelf"
    assert expert.place_order(names) == [
        "cabinet 1", "cabinet 2", "cabinet 3", "drawer 1", "drawer 4", "drawer 5", "fridge 1", "shelf"
    ]  # fmt: skip


def test_the_prompt_lists_what_was_not_searched_since_the_last_take_or_put():
    env = envs.make("alfworld", team="single")
    env.reset(seed=29)  # put two peppershaker in countertop: cabinets 1-15 are searched first
    unsearched, searched = [], []
    while env.agents and not env.terminations["actor_0"]:
        lines = env.observe("actor_0")["prompt"].splitlines()
        unsearched.append(next(x for x in lines if x.startswith("Places not searched")).split(": ", 1)[1])
        searched.append(next((x.split(": ", 1)[1] for x in lines if x.startswith("Searched: ")), None))
        command = env.oracle_response("actor_0")
        env.step(command)
        if "take peppershaker" in command:
            break
    assert unsearched[0].startswith("cabinet 1-15, ") and unsearched[2].startswith("cabinet 2-15, ")
    assert searched[0] is None and searched[2] == "cabinet 1"  # every place is on one of the two lines
    assert env.looked == {"drawer 2"}  # the take started a new search (where it stands is seen)


def test_the_compact_prompt_lists_places_once_and_no_example_move():
    env = envs.make("alfworld", team="single")
    env.reset(seed=0)
    prompt = env.observe("actor_0")["prompt"]
    places = next(x for x in prompt.splitlines() if x.startswith("Places not searched since your last take"))
    assert "drawer 1-11" in places and "Searched: " not in prompt  # nothing searched yet: every place
    assert "Now: You are in the middle of a room." in prompt
    assert "go to cabinet" not in prompt and "You are not carrying anything." in prompt
    lines = prompt.splitlines()  # the task last, just before the commands it picks among
    assert lines[-3].startswith("Your task is to: ") and lines[-2].startswith("Commands here: ")
    env.step(env.oracle_response("actor_0"))
    prompt = env.observe("actor_0")["prompt"]
    assert "Your last 1 steps:\n> go to " in prompt and "Now:" not in prompt
    old = envs.make("alfworld-v0", team="single")
    old.reset(seed=0)
    assert "e.g. <answer>go to cabinet 1</answer>" in old.observe("actor_0")["prompt"]


def test_replies_are_normalised_to_the_engines_spelling():
    assert normalize_command("  Go To  Fridge 1. ", "move") == "go to fridge 1"
    assert normalize_command("put apple 1 in/on fridge 1", "move") == "move apple 1 to fridge 1"
    assert normalize_command("put apple 1 in fridge 1", "move") == "move apple 1 to fridge 1"
    assert normalize_command("move apple 1 to fridge 1", "put") == "put apple 1 in/on fridge 1"


@pytest.mark.parametrize("team", ["single", "mas"])
@pytest.mark.parametrize("split", ["train", "test"])
def test_the_oracle_team_wins_every_task(team, split):
    for seed in split_seeds(split, 12):
        env = play_oracle(envs.make("alfworld", team=team, split=split), seed)
        assert env.success, seed


def test_an_inadmissible_command_changes_nothing_and_is_penalised():
    env = envs.make("alfworld", team="single", invalid_penalty=0.5)
    env.reset(seed=3)
    before = env.state_key()
    env.step("<answer>fly to the moon</answer>")
    assert env.state_key() == before
    info = env.infos["actor_0"]
    assert info["invalid_action"] and info["feedback"] == NOTHING_HAPPENS
    assert info["reward_terms"] == {"local/invalid": -0.5}
    assert "> fly to the moon\nNothing happens." in env.observe("actor_0")["prompt"]


def test_the_subgoal_term_is_off_by_default_and_named_when_on():
    terms = []
    for reward in (0.0, 0.2):
        env = envs.make(
            "alfworld", team="single", task_types=["pick_heat_then_place_in_recep"], subgoal_reward=reward
        )
        env.reset(seed=5)
        seen = []
        while not (env.terminations["actor_0"] or env.truncations["actor_0"]):
            env.step(env.oracle_response("actor_0"))
            seen.append(env.infos["actor_0"]["reward_terms"])
        assert env.success
        terms.append(seen)
    assert not any("local/subgoal" in t for t in terms[0])
    rewarded = [t["local/subgoal"] for t in terms[1] if "local/subgoal" in t]
    assert len(rewarded) >= 2 and all(r > 0 for r in rewarded)  # held, then heated


def test_the_mas_actor_sees_the_plan_and_the_planner_the_record():
    env = envs.make("alfworld", team="mas")
    env.reset(seed=2)
    env.step("<answer>go to the fridge first</answer>")
    assert "Your planner's plan: go to the fridge first" in env.observe("actor_0")["prompt"]
    env.step("<answer>look</answer>")
    assert "> look\nYou are in the middle of a room" in env.observe("planner_0")["prompt"]


def test_the_real_source_plays_alfworlds_own_games(tmp_path):
    fixture = Path(__file__).parent / "fixtures"
    env = envs.make("alfworld", team="single", split="test", source="real", data_dir=str(fixture))
    with pytest.warns(UserWarning, match="found 2 solvable games"):  # the release has 134
        env.reset(seed=split_seeds("test", 1)[0])
    seen = set()
    for seed in split_seeds("test", 4):
        play_oracle(env, seed)
        assert env.success and env.world.spec.syntax == "put"
        seen.add(env.problem.spec.goal_text)
    assert len(seen) == 2  # the fixture's two playable games, in turn
    missing = envs.make("alfworld", split="test", source="real", data_dir=str(tmp_path))
    with pytest.raises(FileNotFoundError, match="ALFWORLD_DATA"):
        missing.reset(seed=split_seeds("test", 1)[0])


@pytest.mark.skipif(pddl_available(), reason="the real engine is installed here")
def test_the_pddl_engine_without_its_extra_is_an_import_error_naming_it():
    with pytest.raises(ImportError, match=r"teamgym\[alfworld\]"):
        envs.make("alfworld", engine="pddl")
