"""A seeded generator of solvable ALFRED problems for all six ALFWorld task types.

The ``alfworld`` package ships the domain, the grammar and 120 floor plans but no games (its
downloader needs the internet), so teamgym makes its own from tables derived from the
package's MIT-licensed data (``data/tables.json``: what each floor plan holds, what can hold
what, which objects heat / cool / clean, the goal texts; ``derive_tables.py`` rebuilds it).

One seed gives one game: a task type, a floor plan whose room suits it (``goals_valid``),
its receptacles (counted from the floor plan; openable types start closed, as in ALFRED),
1-3 goal objects (2-3 for pick_two) placed in receptacles that can hold them but never in
one of the goal's parent type (the existential goal would be won at reset), up to
``distractors`` other object types (1-2 each) placed anywhere they fit, a desk lamp on a
table for the look task, and the goal text from one of the type's two templates. The
walkthrough is the expert's plan from the generator's own placement (``expert.plan``); a
game the expert cannot win, or that is won at reset, is drawn again.

Splits mimic ALFWorld's seen / unseen: test games come from the four floor plans the real
``valid_unseen`` holds out (10, 219, 308, 424), training games from the other 116, and the
seeds of the two splits are disjoint (``envs.splits``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from envs.alfworld import expert
from envs.alfworld.engine import TASK_TYPES, GameSpec, Goal, Item, Receptacle, World

__all__ = ["UNSEEN_FLOOR_PLANS", "Problem", "tables", "floor_plans", "generate", "sort_key"]

UNSEEN_FLOOR_PLANS = (10, 219, 308, 424)
_TOOL_FOR = {
    "pick_clean_then_place_in_recep": ("SinkBasin", "cleanable"),
    "pick_heat_then_place_in_recep": ("Microwave", "heatable"),
    "pick_cool_then_place_in_recep": ("Fridge", "coolable"),
}
_ID_PREFIX = {"SinkBasin": "sink", "BathtubBasin": "bathtub"}  # how ALFRED spells their ids


@lru_cache(maxsize=1)
def tables() -> dict:
    """The derived alfworld tables (``data/tables.json``)."""
    return json.loads((Path(__file__).parent / "data" / "tables.json").read_text())


def floor_plans(split: str) -> list[int]:
    """The floor plans a split's generated games use (test: the four unseen ones)."""
    every = sorted(int(n) for n in tables()["floor_plans"])
    unseen = split == "test"
    return [n for n in every if (n in UNSEEN_FLOOR_PLANS) == unseen]


def sort_key(entity_type: str, number: int) -> tuple[str, int]:
    """The order of the real engine's lists: by the entity's id (type prefix first, "_bar_"
    after it, so "pen" before "pencil"), and within a type the highest number first."""
    return (_ID_PREFIX.get(entity_type, entity_type).lower() + "_bar_", -number)


@dataclass(frozen=True)
class Problem:
    """A generated game: its spec, the floor plan it came from and the expert's walkthrough."""

    spec: GameSpec
    floor_plan: int
    walkthrough: tuple[str, ...]


class _Redraw(Exception):
    """This draw cannot make a game of the task type; draw again."""


def _pick(rng: np.random.Generator, options: list):
    if not options:
        raise _Redraw
    return options[int(rng.integers(len(options)))]


def _build(
    rng: np.random.Generator, plan_number: int, task_type: str, distractors: int, closed: bool, syntax: str
) -> GameSpec:
    data = tables()
    plan = data["floor_plans"][str(plan_number)]
    can_contain = {rt: set(objs) for rt, objs in data["can_contain"].items()}
    counts = {rt: n for rt, n in plan["receptacles"].items() if rt in can_contain}
    present = sorted(counts)
    openable = set(data["openable"]) - set(plan.get("defaulted_openable", ())) if closed else set()
    loose = sorted(set(plan["objects"]))

    def hosts(obj_type: str, banned: str | None = None) -> list[str]:
        return [rt for rt in present if obj_type in can_contain[rt] and rt != banned]

    tool = _TOOL_FOR.get(task_type)
    look = task_type == "look_at_obj_in_light"
    if tool is not None and tool[0] not in counts:
        raise _Redraw
    if look and ("DeskLamp" not in plan.get("lamps", ()) or not any(h in counts for h in expert.LAMP_HOSTS)):
        raise _Redraw

    def goal_ok(obj_type: str) -> bool:
        if tool is not None and obj_type not in data[tool[1]]:
            return False
        if look:
            return bool(hosts(obj_type))
        parents = [rt for rt in hosts(obj_type) if tool is None or rt != tool[0]]
        return any(hosts(obj_type, banned=parent) for parent in parents)

    obj = _pick(rng, [t for t in loose if goal_ok(t)])
    recep = None if look else _pick(rng, [rt for rt in hosts(obj) if tool is None or rt != tool[0]])
    toggle = "DeskLamp" if look else None

    # receptacles, numbered per type; each stands at its own location (0 is the agent's start)
    receptacle_ids = [(rt, k) for rt in present for k in range(1, counts[rt] + 1)]
    receptacle_ids.sort(key=lambda rid: sort_key(*rid))
    locations = 1 + rng.permutation(len(receptacle_ids))
    receptacles = tuple(
        Receptacle(f"{rt.lower()} {k}", rt, int(loc), rt in openable)
        for (rt, k), loc in zip(receptacle_ids, locations, strict=True)
    )
    by_type: dict[str, list[Receptacle]] = {}
    for r in receptacles:
        by_type.setdefault(r.type, []).append(r)

    # objects: the goal's instances (never in a parent-type receptacle), distractors, the lamp
    low, high = (2, 3) if task_type == "pick_two_obj_and_place" else (1, 3)
    placements: list[tuple[str, str]] = []  # (object type, receptacle name)
    for _ in range(int(rng.integers(low, high + 1))):
        placements.append((obj, _pick(rng, by_type[_pick(rng, hosts(obj, banned=recep))]).name))
    others = [t for t in loose if t != obj and hosts(t)]
    for t in rng.permutation(others)[: max(0, distractors)]:
        for _ in range(int(rng.integers(1, 3))):
            placements.append((str(t), _pick(rng, by_type[_pick(rng, hosts(str(t)))]).name))
    if look:
        lamp_host = _pick(rng, by_type[_pick(rng, [h for h in expert.LAMP_HOSTS if h in counts])])
        placements.append(("DeskLamp", lamp_host.name))

    numbered: dict[str, int] = {}
    items = []
    for obj_type, host in placements:
        numbered[obj_type] = numbered.get(obj_type, 0) + 1
        in_fridge = host.startswith("fridge ")  # ALFRED marks a goal object found in a fridge cool
        items.append(
            Item(
                name=f"{obj_type.lower()} {numbered[obj_type]}",
                type=obj_type,
                receptacle=host,
                pickupable=obj_type != "DeskLamp",
                toggleable=obj_type in data["toggleable"],
                heatable=obj_type in data["heatable"],
                coolable=obj_type in data["coolable"],
                cleanable=obj_type in data["cleanable"],
                sliceable=obj_type in data["sliceable"],
                receptacle_object=obj_type in data["movable_receptacles"],
                cool=obj_type == obj and in_fridge,
            )
        )
    items.sort(key=lambda i: sort_key(i.type, int(i.name.rsplit(" ", 1)[1])))
    item_types = {i.type for i in items}
    template = _pick(rng, data["goal_texts"][task_type])
    goal_text = template.format(obj=obj.lower(), recep=(recep or "").lower(), toggle=(toggle or "").lower())
    # "put" syntax names locations "loc N": a seeded numbering of every location, start included
    names = 1 + rng.permutation(len(receptacles) + 1)
    return GameSpec(
        receptacles=receptacles,
        items=tuple(items),
        goal=Goal(task_type, obj, recep, toggle),
        goal_text=goal_text,
        can_contain=frozenset((rt, ot) for rt in present for ot in item_types if ot in can_contain[rt]),
        start_location=0,
        syntax=syntax,
        location_names={loc: int(n) for loc, n in enumerate(names)},
    )


def generate(
    task_seed: int,
    *,
    split: str = "train",
    task_types: tuple[str, ...] = TASK_TYPES,
    distractors: int = 12,
    closed: bool = True,
    syntax: str = "move",
    max_draws: int = 200,
) -> Problem:
    """The game of ``task_seed``: deterministic in the seed and the options.

    Args:
        split: "train" (116 floor plans) or "test" (the four unseen ones).
        task_types: The task types to draw from (uniformly).
        distractors: Other object types in the room (1-2 instances each), at most.
        closed: Openable receptacles (fridge, cabinets, drawers...) start closed; False: none
            of them opens, everything is in view on arrival (easier).
        syntax: "move" (alfworld 0.4.x) or "put" (0.3.x, json_2.1.1).
    """
    unknown = [t for t in task_types if t not in TASK_TYPES]
    if unknown or not task_types:
        raise ValueError(f"task_types must be a non-empty subset of {TASK_TYPES}, got {task_types!r}")
    rng = np.random.default_rng(task_seed)
    plans = floor_plans(split)
    rooms = {n: tables()["floor_plans"][str(n)]["room"] for n in plans}
    for _ in range(max_draws):
        task_type = task_types[int(rng.integers(len(task_types)))]
        valid = [n for n in plans if rooms[n] in tables()["goals_valid"][task_type]]
        if not valid:
            continue
        plan_number = valid[int(rng.integers(len(valid)))]
        try:
            spec = _build(rng, plan_number, task_type, distractors, closed, syntax)
            world = World(spec)
            if world.won:
                continue
            return Problem(spec, plan_number, tuple(expert.plan(world)))
        except _Redraw:
            continue
    raise RuntimeError(
        f"no game of {task_types} in {split} floor plans after {max_draws} draws (seed {task_seed})"
    )
