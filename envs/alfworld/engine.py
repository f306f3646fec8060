"""A pure-Python ALFRED engine: the text world of ALFWorld without Fast Downward.

It implements the live actions of ALFWorld's PDDL domain (``alfred.pddl``, 0.4.x: go to,
open, close, take, move/put, examine, use, heat, cool, clean, slice, look, inventory, help)
with their preconditions and effects, the feedback texts of the grammar (``alfred.twl2``),
and the admissible-command list as textworld's ``PddlEnv`` renders it (every applicable
grounded action, de-duplicated and sorted). So a game reads the same here as in the real
engine, at microseconds per step instead of 43-86 ms (``benchmarks/env_throughput.py``).

What the real engine does that this one copies on purpose (checked by playing games
through ``PddlEnv``; ``envs/alfworld/data/grammar_notes.md``):

* lists read "a apple 3, a apple 1, and a knife 1" ("a" for every article, ", and " before
  the last item even of two) in the order of the entities' sorted ids, so within one type
  the numbers run downwards;
* ``go to X`` is admissible only when X is at another location than the agent, and every
  action at a location applies to every receptacle there;
* ``examine <object>`` works on a held object only (a typo in the domain makes the "visible
  in a receptacle" case never ground);
* heat / cool / clean need no open appliance and stay admissible after use; ``use`` on a
  lamp always turns it on;
* ``won`` is re-checked after every step (taking the object back un-wins);
* an inadmissible command gets "Nothing happens." and changes nothing.

An object may lie in several receptacles at once (real games: a pan across two burners, a
lamp on a desk and its shelf): it is listed in each, and ``take`` removes it from that one
only, as the real engine's ``inReceptacle`` facts behave. What this engine leaves out: the
stale "Next to it, you see ..." of a receptacle's former content at a shared location (a
negated-fact artefact of the real engine), and the receptacle-object actions that the
domain comments out.

Two command syntaxes exist (``SYNTAXES``): ``"move"`` (alfworld 0.4.x and the json_2.1.2+
data: ``move X to Y``, "You arrive at cabinet 1.", a ``help`` command) and ``"put"`` (0.3.x
and json_2.1.1: ``put X in/on Y``, "You arrive at loc 11.", no ``help``).
"""

from __future__ import annotations

import copy
from collections.abc import Hashable
from dataclasses import dataclass, field

__all__ = [
    "SYNTAXES",
    "TASK_TYPES",
    "Receptacle",
    "Item",
    "Goal",
    "GameSpec",
    "World",
    "join_list",
]

SYNTAXES = ("move", "put")
TASK_TYPES = (
    "pick_and_place_simple",
    "look_at_obj_in_light",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "pick_two_obj_and_place",
)
NOTHING_HAPPENS = "Nothing happens."
_TOOL_ACTIONS = {
    "heat": ("Microwave", "heatable"),
    "cool": ("Fridge", "coolable"),
    "clean": ("SinkBasin", "cleanable"),
}
_KNIVES = ("Knife", "ButterKnife")
HELP_TEXT = (
    "Available commands:\n"
    "  look:                             look around your current location\n"
    "  inventory:                        check your current inventory\n"
    "  go to (receptacle):               move to a receptacle\n"
    "  open (receptacle):                open a receptacle\n"
    "  close (receptacle):               close a receptacle\n"
    "  take (object) from (receptacle):  take an object from a receptacle\n"
    "  move (object) to (receptacle):  place an object in or on a receptacle\n"
    "  examine (something):              examine a receptacle or an object\n"
    "  use (object):                     use an object\n"
    "  heat (object) with (receptacle):  heat an object using a receptacle\n"
    "  clean (object) with (receptacle): clean an object using a receptacle\n"
    "  cool (object) with (receptacle):  cool an object using a receptacle\n"
    "  slice (object) with (object):     slice an object using a sharp object\n"
)


@dataclass(frozen=True)
class Receptacle:
    """A static receptacle: display ``name`` ("cabinet 3"), PDDL ``type`` ("Cabinet"), the
    ``location`` it stands at (several may share one), and whether it opens."""

    name: str
    type: str
    location: int
    openable: bool = False


@dataclass(frozen=True)
class Item:
    """A object instance at the start of a game: display ``name``, ``type``, the receptacle
    it lies in (None: not in any, e.g. a floor lamp; ``also_in``: the others it lies in too)
    and its capabilities and states."""

    name: str
    type: str
    receptacle: str | None
    pickupable: bool = True
    toggleable: bool = False
    heatable: bool = False
    coolable: bool = False
    cleanable: bool = False
    sliceable: bool = False
    receptacle_object: bool = False  # Mug, Bowl, ...: examined as "This is a normal mug 1."
    hot: bool = False
    cool: bool = False
    clean: bool = False
    also_in: tuple[str, ...] = ()

    @property
    def receptacles(self) -> tuple[str, ...]:
        """Every receptacle it lies in at the start."""
        return ((self.receptacle,) if self.receptacle is not None else ()) + self.also_in


@dataclass(frozen=True)
class Goal:
    """One of the six ALFWorld task types, over type names (any instance satisfies it)."""

    task_type: str
    obj: str
    recep: str | None = None  # the parent receptacle type (None for look_at_obj_in_light)
    toggle: str | None = None  # the lamp type of look_at_obj_in_light

    def __post_init__(self) -> None:
        if self.task_type not in TASK_TYPES:
            raise ValueError(f"Goal: task_type must be one of {TASK_TYPES}, got {self.task_type!r}")
        if (self.task_type == "look_at_obj_in_light") != (self.toggle is not None):
            raise ValueError("Goal: look_at_obj_in_light needs a toggle type, the other tasks none")
        if self.task_type != "look_at_obj_in_light" and self.recep is None:
            raise ValueError(f"Goal: {self.task_type} needs a parent receptacle type")


@dataclass(frozen=True)
class GameSpec:
    """Everything a game starts from. ``receptacles`` and ``items`` are in the order of the
    real engine's sorted ids (the order every list in the feedback follows).

    Attributes:
        goal_text: "put a hot apple in sidetable" (no final period).
        can_contain: (receptacle type, object type) pairs a ``move`` may put together.
        start_location: Where the agent stands at reset (no receptacle there).
        location_names: Location id -> its "loc N" number (the "put" syntax's arrival text).
    """

    receptacles: tuple[Receptacle, ...]
    items: tuple[Item, ...]
    goal: Goal
    goal_text: str
    can_contain: frozenset[tuple[str, str]]
    start_location: int = 0
    syntax: str = "move"
    location_names: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.syntax not in SYNTAXES:
            raise ValueError(f"GameSpec: syntax must be one of {SYNTAXES}, got {self.syntax!r}")
        names = [r.name for r in self.receptacles] + [i.name for i in self.items]
        if len(set(names)) != len(names):
            raise ValueError("GameSpec: entity names must be unique")
        known = {r.name for r in self.receptacles}
        stray = [i.name for i in self.items if any(r not in known for r in i.receptacles)]
        if stray:
            raise ValueError(f"GameSpec: items in unknown receptacles: {stray}")


def join_list(items: list[str]) -> str:
    """The grammar's list: "nothing", "a x", "a x, and a y", "a x, a y, and a z"."""
    if not items:
        return "nothing"
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + ", and " + items[-1]


class World:
    """The state of one game and its rules. ``step(command)`` -> feedback; ``admissible()``;
    ``won``. Cheap to copy (``clone()``): the spec is shared, the state is small."""

    def __init__(self, spec: GameSpec) -> None:
        self.spec = spec
        self.receptacle = {r.name: r for r in spec.receptacles}
        self.item = {i.name: i for i in spec.items}
        self._order = {r.name: k for k, r in enumerate(spec.receptacles)}
        # --- mutable state
        self.location = spec.start_location
        self.holding: str | None = None
        # object -> the receptacles it lies in (usually one; none while held), in listing order
        self.place: dict[str, tuple[str, ...]] = {i.name: self._listed(i.receptacles) for i in spec.items}
        self.opened: set[str] = set()
        self.hot = {i.name for i in spec.items if i.hot}
        self.cool = {i.name for i in spec.items if i.cool}
        self.clean = {i.name for i in spec.items if i.clean}
        self.sliced: set[str] = set()
        self.toggled: set[str] = set()

    # ------------------------------------------------------------------ views
    def _listed(self, receptacles) -> tuple[str, ...]:
        return tuple(sorted(set(receptacles), key=self._order.__getitem__))

    def clone(self) -> World:
        twin = copy.copy(self)
        for name in ("place", "opened", "hot", "cool", "clean", "sliced", "toggled"):
            setattr(twin, name, copy.copy(getattr(self, name)))
        return twin

    def __deepcopy__(self, memo: dict) -> World:  # env.clone() deep-copies: share the spec
        return self.clone()

    def state_key(self) -> Hashable:
        """Where the agent is, what it holds, and every object's place and states."""
        return (
            self.location,
            self.holding,
            tuple(self.place[i.name] for i in self.spec.items),
            frozenset(self.opened),
            frozenset(self.hot),
            frozenset(self.cool),
            frozenset(self.clean),
            frozenset(self.sliced),
            frozenset(self.toggled),
        )

    def here(self) -> list[Receptacle]:
        """The receptacles at the agent's location (none at the start)."""
        return [r for r in self.spec.receptacles if r.location == self.location]

    def contents(self, receptacle: str) -> list[str]:
        return [i.name for i in self.spec.items if receptacle in self.place[i.name]]

    def accessible(self, receptacle: Receptacle) -> bool:
        return not receptacle.openable or receptacle.name in self.opened

    def intro(self) -> str:
        """The reset text: welcome, every receptacle of the room, the task."""
        seen = join_list([f"a {r.name}" for r in self.spec.receptacles])
        return (
            "-= Welcome to TextWorld, ALFRED! =-\n\n"
            f"You are in the middle of a room. Looking quickly around you, you see {seen}.\n\n"
            f"Your task is to: {self.spec.goal_text}."
        )

    def describe_receptacle(self, receptacle: Receptacle) -> str:
        things = join_list([f"a {name}" for name in self.contents(receptacle.name)])
        if receptacle.openable and receptacle.name in self.opened:
            return f"The {receptacle.name} is open. In it, you see {things}."
        if receptacle.openable:
            return f"The {receptacle.name} is closed."
        return f"On the {receptacle.name}, you see {things}."

    def describe_item(self, name: str) -> str:
        item = self.item[name]
        if item.receptacle_object:
            return f"This is a normal {name}. In it, you see nothing."
        hot, cool, clean, sliced = (name in s for s in (self.hot, self.cool, self.clean, self.sliced))
        states = [
            (clean and hot and sliced, "hot and clean sliced"),
            (clean and cool and sliced, "cool and clean sliced"),
            (clean and sliced, "clean sliced"),
            (hot and sliced, "hot sliced"),
            (cool and sliced, "cool sliced"),
            (clean and hot, "hot and clean"),
            (clean and cool, "cool and clean"),
            (hot, "hot"),
            (clean, "clean"),
            (cool, "cold"),  # the grammar says "cold" here and "cool" in the combined texts
            (sliced, "sliced"),
        ]
        adjective = next((words for holds, words in states if holds), None)
        return f"This is a {adjective} {name}." if adjective else f"There's nothing special about {name}."

    # ------------------------------------------------------------------ rules
    def place_command(self, obj: str, receptacle: str) -> str:
        return (
            f"move {obj} to {receptacle}" if self.spec.syntax == "move" else f"put {obj} in/on {receptacle}"
        )

    def at_location(self, item_name: str) -> bool:
        """The object lies in a receptacle where the agent stands."""
        return any(self.receptacle[r].location == self.location for r in self.place[item_name])

    def actions(self) -> dict[str, tuple]:
        """Every admissible command -> the action it performs, as ``(verb, *arguments)``."""
        here = self.here()
        acts: dict[str, tuple] = {"inventory": ("inventory",), "look": ("look",)}
        if self.spec.syntax == "move":
            acts["help"] = ("help",)
        for r in self.spec.receptacles:
            if r.location != self.location:
                acts[f"go to {r.name}"] = ("goto", r.name)
        held = self.item[self.holding] if self.holding else None
        if held is not None:
            acts[f"examine {held.name}"] = ("examine_item", held.name)
        for r in here:
            acts[f"examine {r.name}"] = ("examine_receptacle", r.name)
            if r.openable:
                verb = "close" if r.name in self.opened else "open"
                acts[f"{verb} {r.name}"] = (verb, r.name)
            inside = self.contents(r.name)
            for name in inside:
                item = self.item[name]
                if held is None and item.pickupable and self.accessible(r):
                    acts[f"take {name} from {r.name}"] = ("take", name, r.name)
                if item.toggleable:
                    acts[f"use {name}"] = ("use", name)
            if held is not None:
                if self.accessible(r) and (r.type, held.type) in self.spec.can_contain:
                    acts[self.place_command(held.name, r.name)] = ("put", held.name, r.name)
                for verb, (tool_type, capability) in _TOOL_ACTIONS.items():
                    if r.type == tool_type and getattr(held, capability):
                        acts[f"{verb} {held.name} with {r.name}"] = (verb, held.name, r.name)
        if held is not None and held.type in _KNIVES:
            for item in self.spec.items:
                if item.sliceable and item.name != held.name and self.at_location(item.name):
                    acts[f"slice {item.name} with {held.name}"] = ("slice", item.name, held.name)
        return acts

    def admissible(self) -> list[str]:
        """The admissible commands, sorted as the real engine lists them."""
        return sorted(self.actions())

    def step(self, command: str) -> str:
        """Apply ``command`` (exactly an admissible one, surrounding spaces ignored); return
        the feedback. Anything else: "Nothing happens." and no change."""
        action = self.actions().get(command.strip())
        if action is None:
            return NOTHING_HAPPENS
        verb, *args = action
        return getattr(self, f"_do_{verb}")(*args)

    def carrying(self) -> str:
        """What the ``inventory`` command says."""
        return f"You are carrying: a {self.holding}." if self.holding else "You are not carrying anything."

    def _do_inventory(self) -> str:
        return self.carrying()

    def _do_look(self) -> str:
        here = self.here()
        if not here:
            return "You are in the middle of a room. Looking quickly around you, you see nothing."
        return f"You are facing the {join_list([r.name for r in here])}. Next to it, you see nothing."

    def _do_help(self) -> str:
        return HELP_TEXT

    def _do_goto(self, name: str) -> str:
        receptacle = self.receptacle[name]
        self.location = receptacle.location
        where = name if self.spec.syntax == "move" else f"loc {self.spec.location_names[receptacle.location]}"
        return f"You arrive at {where}. {self.describe_receptacle(receptacle)}"

    def _do_examine_receptacle(self, name: str) -> str:
        return self.describe_receptacle(self.receptacle[name])

    def _do_examine_item(self, name: str) -> str:
        return self.describe_item(name)

    def _do_open(self, name: str) -> str:
        self.opened.add(name)
        return f"You open the {name}. {self.describe_receptacle(self.receptacle[name])}"

    def _do_close(self, name: str) -> str:
        self.opened.discard(name)
        return f"You close the {name}."

    def _do_take(self, obj: str, receptacle: str) -> str:
        self.place[obj] = tuple(r for r in self.place[obj] if r != receptacle)
        self.holding = obj
        return f"You pick up the {obj} from the {receptacle}."

    def _do_put(self, obj: str, receptacle: str) -> str:
        self.place[obj] = self._listed((*self.place[obj], receptacle))
        self.holding = None
        if self.spec.syntax == "move":
            return f"You move the {obj} to the {receptacle}."
        return f"You put the {obj} in/on the {receptacle}."

    def _do_use(self, obj: str) -> str:
        self.toggled.add(obj)
        return f"You turn on the {obj}."

    def _do_heat(self, obj: str, tool: str) -> str:
        self.hot.add(obj)
        self.cool.discard(obj)
        return f"You heat the {obj} using the {tool}."

    def _do_cool(self, obj: str, tool: str) -> str:
        self.cool.add(obj)
        self.hot.discard(obj)
        return f"You cool the {obj} using the {tool}."

    def _do_clean(self, obj: str, tool: str) -> str:
        self.clean.add(obj)
        return f"You clean the {obj} using the {tool}."

    def _do_slice(self, obj: str, knife: str) -> str:
        self.sliced.add(obj)
        return f"You sliced the {obj} with the {knife}."

    # ------------------------------------------------------------------ goal
    def placed(self, name: str) -> bool:
        """``name`` lies in a receptacle of the goal's parent type, in the state the task asks."""
        goal = self.spec.goal
        if self.item[name].type != goal.obj:
            return False
        if not any(self.receptacle[r].type == goal.recep for r in self.place[name]):
            return False
        state = {
            "pick_clean_then_place_in_recep": self.clean,
            "pick_heat_then_place_in_recep": self.hot,
            "pick_cool_then_place_in_recep": self.cool,
        }.get(goal.task_type)
        return state is None or name in state

    @property
    def won(self) -> bool:
        """The task's goal holds now (re-checked every step, as in the real engine)."""
        goal = self.spec.goal
        if goal.task_type == "look_at_obj_in_light":
            lamp_on_here = any(
                self.item[name].type == goal.toggle and self.at_location(name) for name in self.toggled
            )
            return lamp_on_here and self.holding is not None and self.item[self.holding].type == goal.obj
        placed = sum(self.placed(i.name) for i in self.spec.items)
        return placed >= (2 if goal.task_type == "pick_two_obj_and_place" else 1)
