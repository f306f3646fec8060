"""The real-data loader (``envs.alfworld.real``) on a small fixture in ALFWorld's json_2.1.1
schema: the split filters and order, the count check, the spec it reads (display numbers,
locations, goal, syntax), the real engine's transcript of the fixture game, the
s-expression reader, and the error when the data is missing.

The fixture (``fixtures/json_2.1.1/valid_unseen``) holds two solvable games, one unsolvable
floor-lamp game and one movable-receptacle task; its ``pddl_domain`` and grammar are
stubs (the loader reads only the problem, the task sentence and the place template). The
transcript below was produced by textworld's ``PddlEnv`` + ``AlfredDemangler`` playing the
heat game with alfworld's real json_2.1.1 domain and grammar swapped in.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from envs.alfworld import expert, real
from envs.alfworld.engine import NOTHING_HAPPENS, TASK_TYPES, Goal, World
from envs.alfworld.real import (
    EXPECTED_COUNTS,
    RealDataMissing,
    SExprError,
    check_count,
    demangle_names,
    find_games,
    goal_text_from_grammar,
    load_game,
    parse_sexprs,
    read_sexpr,
    spec_from_pddl,
    syntax_from_grammar,
)

FIXTURE = Path(__file__).parent / "fixtures"
SPLIT = FIXTURE / "json_2.1.1" / "valid_unseen"
HEAT = (
    SPLIT
    / "pick_heat_then_place_in_recep-Apple-None-Fridge-10"
    / "trial_T20190906_182259_000001"
    / "game.tw-pddl"
)
TWO = (
    SPLIT
    / "pick_two_obj_and_place-SoapBar-None-Cabinet-424"
    / "trial_T20190909_081746_000002"
    / "game.tw-pddl"
)
LAMP = (
    SPLIT / "look_at_obj_in_light-Book-None-FloorLamp-219" / "trial_T20190907_101010_000003" / "game.tw-pddl"
)

# PddlEnv + AlfredDemangler(shuffle=False) on the heat game (real json_2.1.1 domain and grammar).
REAL_INTRO = (
    "-= Welcome to TextWorld, ALFRED! =-\n\n"
    "You are in the middle of a room. Looking quickly around you, you see "
    "a cabinet 2, a cabinet 1, a countertop 1, a drawer 1, a fridge 1, a microwave 1, and a sinkbasin 1.\n\n"
    "Your task is to: heat some apple and put it in fridge."
)
REAL_TRANSCRIPT = [
    ("go to cabinet 2", "You arrive at loc 3. The cabinet 2 is closed."),
    ("go to cabinet 1", NOTHING_HAPPENS),  # same location as cabinet 2
    ("go to countertop 1", "You arrive at loc 6. On the countertop 1, you see a apple 1, and a sink 1."),
    ("look", "You are facing the countertop 1. Next to it, you see nothing."),
    ("inventory", "You are not carrying anything."),
    ("take apple 1 from countertop 1", "You pick up the apple 1 from the countertop 1."),
    ("go to microwave 1", "You arrive at loc 5. The microwave 1 is closed."),
    ("heat apple 1 with microwave 1", "You heat the apple 1 using the microwave 1."),
    ("go to fridge 1", "You arrive at loc 8. The fridge 1 is closed."),
    ("open fridge 1", "You open the fridge 1. The fridge 1 is open. In it, you see a apple 2, and a egg 1."),
    ("put apple 1 in/on fridge 1", "You put the apple 1 in/on the fridge 1."),
]


def _game(path: Path) -> dict:
    return json.loads(path.read_text())


# ------------------------------------------------------------------ finding games
def test_find_games_keeps_the_solvable_games_sorted_and_drops_movable_and_unsolvable():
    games = find_games(FIXTURE, "valid_unseen", check=False)
    assert games == [HEAT, TWO]
    assert games == sorted(games)
    all_trials = sorted(SPLIT.glob("*/trial_*/game.tw-pddl"))
    assert len(all_trials) == 4 and LAMP in all_trials  # what the filters had to drop
    assert any("movable" in str(p) for p in all_trials)
    assert find_games(FIXTURE, "valid_unseen", ["pick_two_obj_and_place"], check=False) == [TWO]
    assert find_games(FIXTURE, "valid_unseen", ["look_at_obj_in_light"], check=False) == []


def test_find_games_order_does_not_depend_on_the_walk_order(monkeypatch):
    walk = os.walk

    def reversed_walk(top, *args, **kwargs):
        return reversed(list(walk(top, *args, **kwargs)))

    expected = find_games(FIXTURE, "valid_unseen", check=False)
    monkeypatch.setattr(real.os, "walk", reversed_walk)
    assert find_games(FIXTURE, "valid_unseen", check=False) == expected


def test_a_count_that_differs_from_the_release_warns_and_does_not_crash():
    with pytest.warns(UserWarning, match=r"found 2 solvable games .*has 134"):
        games = find_games(FIXTURE, "valid_unseen")
    assert len(games) == 2
    assert EXPECTED_COUNTS == {"valid_seen": 140, "valid_unseen": 134}
    assert check_count("valid_unseen", 134) is None
    assert check_count("valid_seen", 140) is None
    assert check_count("valid_seen", 35, ["pick_and_place_simple"]) is None
    assert "has 24" in check_count("valid_unseen", 2, ["pick_and_place_simple"])
    assert check_count("train", 12) is None  # no verified count for train


def test_missing_data_raises_an_error_that_names_the_variable_and_the_layout(tmp_path, monkeypatch):
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path))
    with pytest.raises(RealDataMissing, match=r"\$ALFWORLD_DATA.*json_2\.1\.1/<split>") as caught:
        find_games(real.data_root(), "valid_seen")
    assert isinstance(caught.value, FileNotFoundError)
    assert str(tmp_path) in str(caught.value)
    with pytest.raises(ValueError, match="split must be one of"):
        find_games(FIXTURE, "test")
    with pytest.raises(ValueError, match="unknown task types"):
        find_games(FIXTURE, "valid_unseen", ["pick_and_place_with_movable_recep"])


def test_data_root_reads_the_variable_and_defaults_to_alfworlds_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path))
    assert real.data_root() == tmp_path
    monkeypatch.delenv("ALFWORLD_DATA")
    assert real.data_root() == Path("~/.cache/alfworld").expanduser()


# ------------------------------------------------------------------ the spec
def test_the_heat_game_spec():
    game = load_game(HEAT)
    spec = game.spec
    assert game.floor_plan == 10
    assert game.name == "pick_heat_then_place_in_recep-Apple-None-Fridge-10/trial_T20190906_182259_000001"
    assert spec.goal == Goal("pick_heat_then_place_in_recep", "Apple", "Fridge")
    assert spec.goal_text == "heat some apple and put it in fridge"
    assert spec.syntax == "put"
    # sorted-id order; the cabinet whose id sorts first (+00.65 < +00.95) gets the highest number
    assert [(r.name, r.type, r.location, r.openable) for r in spec.receptacles] == [
        ("cabinet 2", "Cabinet", 3, True),
        ("cabinet 1", "Cabinet", 3, True),  # two receptacles at one location
        ("countertop 1", "CounterTop", 6, False),
        ("drawer 1", "Drawer", 2, False),  # no (openable ...): an open drawer
        ("fridge 1", "Fridge", 8, True),
        ("microwave 1", "Microwave", 5, True),
        ("sinkbasin 1", "SinkBasin", 1, False),  # Sink|...|SinkBasin
    ]
    items = {i.name: i for i in spec.items}
    assert [i.name for i in spec.items] == ["apple 2", "apple 1", "egg 1", "knife 1", "mug 1", "sink 1"]
    assert items["apple 2"].receptacle == "fridge 1" and items["apple 2"].cool  # (isCool ...) at the start
    assert items["apple 1"].receptacle == "countertop 1" and not items["apple 1"].cool
    assert items["apple 1"].heatable and items["apple 1"].coolable and items["apple 1"].cleanable
    assert items["mug 1"].receptacle_object and items["mug 1"].receptacle == "cabinet 2"
    assert items["knife 1"].type == "Knife" and not items["knife 1"].heatable
    # the sink object is in the countertop and the basin: kept in the first (sorted) one
    assert items["sink 1"].receptacle == "countertop 1" and not items["sink 1"].pickupable
    assert "window 1" not in items  # structural: objectAtLocation only
    assert ("Fridge", "Apple") in spec.can_contain and ("Cabinet", "Apple") not in spec.can_contain
    # "loc N" over every loc id in a fact: the window's location (loc 7) counts, the start is loc 4
    assert spec.start_location == 4
    assert spec.location_names == {n: n for n in (1, 2, 3, 4, 5, 6, 8)}


def test_the_spec_plays_as_the_real_engine_and_the_expert_wins():
    world = World(load_game(HEAT).spec)
    assert world.intro() == REAL_INTRO
    assert world.admissible() == [
        f"go to {r.name}" for r in sorted(world.spec.receptacles, key=lambda r: r.name)
    ] + [
        "inventory",
        "look",
    ]
    for command, feedback in REAL_TRANSCRIPT:
        assert world.step(command) == feedback, command
    assert world.won
    for path in (HEAT, TWO):
        problem = load_game(path).problem()
        world = World(problem.spec)
        assert not world.won
        for command in problem.walkthrough:
            assert command in world.admissible(), command
            world.step(command)
        assert world.won, path


def test_the_pick_two_game_and_an_unsolvable_floor_lamp_game():
    spec = load_game(TWO).spec
    assert spec.goal == Goal("pick_two_obj_and_place", "SoapBar", "Cabinet")
    assert spec.goal_text == "find two soapbar and put them in cabinet"
    assert [i.name for i in spec.items] == ["cloth 1", "soapbar 2", "soapbar 1", "soapbottle 1"]
    assert len(expert.plan(World(spec))) == 9
    lamp = load_game(LAMP)
    assert lamp.spec.goal == Goal("look_at_obj_in_light", "Book", toggle="FloorLamp")
    assert [i.name for i in lamp.spec.items] == ["book 1"]  # the floor lamp is in no receptacle
    with pytest.raises(expert.Unsolvable):
        expert.plan(World(lamp.spec))


def test_a_lower_cased_problem_reads_the_same():
    """Fast Downward lower-cases every name; types get their case back from the tables."""
    data = _game(HEAT)
    spec = spec_from_pddl(data["pddl_problem"], data["grammar"])
    low = spec_from_pddl(data["pddl_problem"].lower(), data["grammar"])
    assert low.receptacles == spec.receptacles and low.goal == spec.goal
    assert [(i.name, i.receptacle) for i in low.items] == [(i.name, i.receptacle) for i in spec.items]
    assert low.can_contain == spec.can_contain
    assert World(low).intro() == REAL_INTRO


def test_the_goal_text_syntax_and_goal_fallbacks():
    data = _game(HEAT)
    traj = json.loads((HEAT.parent / "traj_data.json").read_text())
    # no grammar: the templated goal text; put syntax (json_2.1.1)
    bare = spec_from_pddl(data["pddl_problem"], None)
    assert bare.goal_text == "put a hot apple in fridge" and bare.syntax == "put"
    assert spec_from_pddl(data["pddl_problem"], data["grammar"], syntax="move").syntax == "move"
    assert syntax_from_grammar('action PutObject {\n    template :: "move {o} to {r}";\n}') == "move"
    assert syntax_from_grammar(data["grammar"]) == "put"
    assert goal_text_from_grammar('"task": [{"rhs": "Your task is to: UNKNOWN GOAL."}]') is None
    assert goal_text_from_grammar(
        '"task": [ { "rhs": "Your task is to: put a \\"clean\\" cup in sink." } ]'
    ) == ('put a "clean" cup in sink')
    # a goal that matches no template: traj_data.json decides, else an error
    odd = data["pddl_problem"].replace("(isHot ?o)", "(isHot ?o) (isClean ?o)")
    assert spec_from_pddl(odd, data["grammar"], traj=traj).goal == Goal(
        "pick_heat_then_place_in_recep", "Apple", "Fridge"
    )
    with pytest.raises(ValueError, match="matches none"):
        spec_from_pddl(odd, data["grammar"])


def test_the_six_goal_templates_are_recognised():
    data = _game(HEAT)
    problem = data["pddl_problem"]
    head = problem[: problem.index("(:goal")]
    template = real.tables()["goal_pddl"]
    for task_type in TASK_TYPES:
        look = task_type == "look_at_obj_in_light"
        goal = template[task_type].replace("#", "-").format(obj="Apple", recep="Fridge", toggle="DeskLamp")
        spec = spec_from_pddl(head + goal, None)
        assert spec.goal == Goal(task_type, "Apple", None if look else "Fridge", "DeskLamp" if look else None)


# ------------------------------------------------------------------ names and s-expressions
def test_demangled_names_follow_alfworlds_numbering():
    ids = [
        "Apple_bar__plus_00_dot_15_bar__plus_01_dot_15_bar__plus_00_dot_48",
        "apple_bar__minus_00_dot_47_bar__plus_01_dot_15_bar__plus_00_dot_48",
        "apple_bar__minus_01_dot_50_bar__plus_00_dot_90_bar__plus_01_dot_22",
        "sink_bar__minus_00_dot_70_bar__plus_00_dot_93_bar__minus_00_dot_65_bar_sinkbasin",
        "bathtub_bar__minus_02_dot_98_bar__plus_00_dot_33_bar__minus_01_dot_77_bar_sinkbasin",
        "loc_bar_0_bar_0_bar_0_bar_30",
        "loc_bar_3_bar__minus_7_bar_180_bar_30",
        "loc_bar__minus_1_bar_3_bar_1_bar_60",
        "agent1",
        "appletype",
    ]
    names = demangle_names(ids)
    assert names["apple_bar__minus_00_dot_47_bar__plus_01_dot_15_bar__plus_00_dot_48"] == "apple 3"
    assert names["apple_bar__minus_01_dot_50_bar__plus_00_dot_90_bar__plus_01_dot_22"] == "apple 2"
    assert names["apple_bar__plus_00_dot_15_bar__plus_01_dot_15_bar__plus_00_dot_48"] == "apple 1"
    assert (
        names["sink_bar__minus_00_dot_70_bar__plus_00_dot_93_bar__minus_00_dot_65_bar_sinkbasin"]
        == "sinkbasin 1"
    )
    assert names["bathtub_bar__minus_02_dot_98_bar__plus_00_dot_33_bar__minus_01_dot_77_bar_sinkbasin"] == (
        "bathtubbasin 1"
    )
    assert [
        names[f"loc_bar_{x}"]
        for x in ("0_bar_0_bar_0_bar_30", "3_bar__minus_7_bar_180_bar_30", "_minus_1_bar_3_bar_1_bar_60")
    ] == [
        "loc 3",
        "loc 2",
        "loc 1",
    ]
    assert "agent1" not in names and "appletype" not in names


def test_the_s_expression_reader():
    text = """; a comment with ( parentheses
    (define (problem p1)(:domain alfred)
      (:init (inReceptacle Apple_bar_1 Fridge_bar_2)\t(pickupable Apple_bar_1)) ; trailing ) comment
      (:goal (and (not (= ?o1 ?o2)) (exists (?r - receptacle) (isHot ?o)))))\r\n(second)"""
    first, second = parse_sexprs(text)
    assert second == ["second"]
    assert first[:3] == ["define", ["problem", "p1"], [":domain", "alfred"]]
    assert first[3] == [
        ":init",
        ["inReceptacle", "Apple_bar_1", "Fridge_bar_2"],
        ["pickupable", "Apple_bar_1"],
    ]
    assert first[4][1][1] == ["not", ["=", "?o1", "?o2"]]
    assert first[4][1][2] == ["exists", ["?r", "-", "receptacle"], ["isHot", "?o"]]
    assert parse_sexprs("") == [] and parse_sexprs("; only a comment") == []
    assert parse_sexprs("(a(b(c))d)e") == [["a", ["b", ["c"]], "d"], "e"]
    assert parse_sexprs("()") == [[]]
    assert read_sexpr("(:goal (x)) )") == [":goal", ["x"]]  # the goal templates' stray ')'
    for broken in ("(a (b)", "(a))", ")", "(("):
        with pytest.raises(SExprError):
            parse_sexprs(broken)
    with pytest.raises(SExprError):
        read_sexpr("  ; nothing\n")
    with pytest.raises(ValueError, match="no \\(define"):
        spec_from_pddl("(foo)", None)
