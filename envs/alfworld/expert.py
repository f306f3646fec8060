"""Two experts: commands that win an ALFWorld game from any state of ``engine.World``.

``next_command`` / ``plan``: the omniscient expert (walkthroughs, the generator's check). It
knows where every object is (the generator's own placement, or the real problem file) and
plays the task's recipe: fetch a goal object (go, open if closed, take), apply the tool
(heat / cool / clean: no open needed), then go to the parent receptacle, open it if closed,
and place the object; for ``look_at_obj_in_light``, carry the object to the lamp and use it;
``pick_two`` does the fetch-and-place twice. Whatever the agent holds that the recipe does
not need is put down first. Because it plans from the current state, it re-plans after any
detour, so it serves as the walkthrough of a new game and as the oracle of every turn.

Written here rather than calling a PDDL planner: Fast Downward costs 0.1-65 s per call on
these problems (research notes), this costs microseconds, and the recipe is the walkthrough
the task types are defined by.

``search_command`` / ``search_plan``: the searching expert, the env's oracle from v1 (the
demonstrations a warm start imitates). It plays the same recipe but knows only what the
agent's prompt shows: the task, the room's receptacles and which of them it has looked into
since its last take or put (``looked_in``; the env's prompt lists the others), where it
stands and what is there, what it carries. To find an object it goes to the first receptacle
not looked into, in the prompt's order (``place_order``), whose type can hold the object,
opens it if closed, and takes the first it sees. Why: the omniscient expert goes straight to
a drawer no observation names, so a model imitating it can only learn to guess, and it never
shows what to do at an empty drawer. Its command is a function of the prompt, so a policy
with a short record can imitate it exactly (given nothing looked into, it sweeps on from
where it stands). It wins every generated game and every real fixture game.
"""

from __future__ import annotations

from envs.alfworld.engine import NOTHING_HAPPENS, World

# Where a desk lamp may stand when the game's tables do not say (generated games put it on
# one of these; its type is never a "can contain" entry, since a lamp is not picked up).
LAMP_HOSTS = ("Desk", "SideTable", "Dresser", "DiningTable", "CoffeeTable", "TVStand", "Shelf")

__all__ = ["next_command", "plan", "search_command", "search_plan", "Unsolvable"]

_STATE_TOOLS = {
    "pick_clean_then_place_in_recep": ("clean", "SinkBasin", "clean"),
    "pick_heat_then_place_in_recep": ("heat", "Microwave", "hot"),
    "pick_cool_then_place_in_recep": ("cool", "Fridge", "cool"),
}


class Unsolvable(RuntimeError):
    """The expert finds no way to the goal (a generator bug, or a real game that cannot be won)."""


def _reach(world: World, receptacle: str) -> str | None:
    """The command that brings the agent to ``receptacle`` and makes it accessible, or None
    when it already is."""
    target = world.receptacle[receptacle]
    if target.location != world.location:
        return f"go to {receptacle}"
    if not world.accessible(target):
        return f"open {receptacle}"
    return None


def _first_of_type(world: World, receptacle_type: str) -> str | None:
    """A receptacle of that type: one here if any, else the first listed; None if none."""
    matches = sorted(
        (r for r in world.spec.receptacles if r.type == receptacle_type),
        key=lambda r: r.location != world.location,
    )
    return matches[0].name if matches else None


def _host(world: World, obj: str) -> str:
    """A receptacle ``obj`` lies in: one where the agent stands, else the first listed."""
    hosts = world.place[obj]
    return next((r for r in hosts if world.receptacle[r].location == world.location), hosts[0])


def _put_down(world: World, obj: str) -> str:
    """Put ``obj`` where it fits, here if possible (the agent needs its hands free)."""
    item_type = world.item[obj].type
    fits = [r for r in world.spec.receptacles if (r.type, item_type) in world.spec.can_contain]
    if not fits:
        raise Unsolvable(f"nothing can hold {obj}")
    fits.sort(key=lambda r: (r.location != world.location, r.openable))
    return _reach(world, fits[0].name) or world.place_command(obj, fits[0].name)


def next_command(world: World) -> str:
    """The expert's next command (raises ``Unsolvable`` when there is none)."""
    goal = world.spec.goal
    held = world.holding
    wanted = held is not None and world.item[held].type == goal.obj
    if goal.task_type == "look_at_obj_in_light":
        if wanted:
            lamps = [i.name for i in world.spec.items if i.type == goal.toggle and world.place[i.name]]
            if not lamps:
                raise Unsolvable(f"no {goal.toggle} stands in a receptacle")
            lamp = next((name for name in lamps if world.at_location(name)), lamps[0])
            if not world.at_location(lamp):
                return f"go to {_host(world, lamp)}"
            return f"use {lamp}"
    elif wanted:
        tool = _STATE_TOOLS.get(goal.task_type)
        if tool is not None and held not in getattr(world, tool[2]):
            verb, tool_type, _ = tool
            station = _first_of_type(world, tool_type)
            if station is None:
                raise Unsolvable(f"no {tool_type} to {verb} with")
            if world.receptacle[station].location != world.location:
                return f"go to {station}"
            return f"{verb} {held} with {station}"
        parents = [
            r
            for r in world.spec.receptacles
            if r.type == goal.recep and (r.type, goal.obj) in world.spec.can_contain
        ]
        if not parents:
            raise Unsolvable(f"no {goal.recep} can hold a {goal.obj}")
        parents.sort(key=lambda r: r.location != world.location)
        return _reach(world, parents[0].name) or world.place_command(held, parents[0].name)
    if held is not None:
        return _put_down(world, held)
    candidates = [
        i.name
        for i in world.spec.items
        if i.type == goal.obj and i.pickupable and world.place[i.name] and not world.placed(i.name)
    ]
    if not candidates:
        raise Unsolvable(f"no {goal.obj} left to fetch")
    candidates.sort(key=lambda name: not world.at_location(name))
    obj = candidates[0]
    host = _host(world, obj)
    return _reach(world, host) or f"take {obj} from {host}"


def plan(world: World, max_steps: int = 64) -> list[str]:
    """Commands that win from ``world``'s state ([] when it is already won); ``world`` is not
    changed."""
    world = world.clone()
    commands: list[str] = []
    while not world.won:
        if len(commands) >= max_steps:
            raise Unsolvable(f"no win within {max_steps} commands: {commands}")
        command = next_command(world)
        if world.step(command) == NOTHING_HAPPENS:
            raise Unsolvable(f"the expert's command {command!r} is not admissible")
        commands.append(command)
    return commands


# ------------------------------------------------------------------ the searching expert
def looked_in(world: World, looked: frozenset[str], command: str) -> frozenset[str]:
    """The receptacles looked into "since the last take or put", after ``command`` succeeded in
    ``world`` (its state after it): a take or a put starts a new search (what is looked for
    changes: the lamp after the object, the second object after the first); then every open
    receptacle where the agent stands has been seen."""
    if command.startswith(("take ", "move ", "put ")):
        looked = frozenset()
    return looked | {r.name for r in world.here() if world.accessible(r)}


def place_order(names: list[str]) -> list[str]:
    """Receptacle names in the order the compact prompt shows them (and the search visits
    them): types in the order of their first appearance, numbers ascending within a type ("type
    N"; another name keeps its own place). The engine lists ids, e.g. cabinet 15 before cabinet
    1, an order a model cannot read off the prompt's ranges."""
    first: dict[str, int] = {}
    keyed = []
    for index, name in enumerate(names):
        kind, _, number = name.rpartition(" ")
        if not (kind and number.isdigit()):
            kind, number = name, "0"
        keyed.append((first.setdefault(kind, index), int(number), name))
    return [name for *_, name in sorted(keyed)]


def _next_to_search(world: World, targets: set[str], looked: frozenset[str]) -> str | None:
    """``go to`` the first receptacle of ``targets`` not looked into, in ``place_order``; when
    every one has been, the first after where the agent stands (wrapping around). None when
    every target stands here."""
    order = [world.receptacle[name] for name in place_order([r.name for r in world.spec.receptacles])]
    for receptacle in order:
        if (
            receptacle.name in targets
            and receptacle.name not in looked
            and receptacle.location != world.location
        ):
            return f"go to {receptacle.name}"
    here = max((k for k, r in enumerate(order) if r.location == world.location), default=-1)
    for receptacle in order[here + 1 :] + order[: here + 1]:
        if receptacle.name in targets and receptacle.location != world.location:
            return f"go to {receptacle.name}"
    return None


def _visible_here(world: World, wanted_type: str) -> tuple[str, str] | None:
    """(object, receptacle) of ``wanted_type`` in an open receptacle where the agent stands."""
    for receptacle in world.here():
        if world.accessible(receptacle):
            for name in world.contents(receptacle.name):
                if world.item[name].type == wanted_type:
                    return name, receptacle.name
    return None


def search_command(world: World, looked: frozenset[str] = frozenset()) -> str:
    """The searching expert's next command (module docstring): what the agent sees decides it.
    ``looked``: the receptacles looked into since the last take or put (``looked_in``)."""
    goal = world.spec.goal
    held = world.holding
    receptacles = world.spec.receptacles
    if held is not None and world.item[held].type == goal.obj and goal.task_type == "look_at_obj_in_light":
        lamp = _visible_here(world, goal.toggle)
        if lamp is not None:
            return f"use {lamp[0]}"
        hosts = {
            r.name
            for r in receptacles
            if (r.type, goal.toggle) in world.spec.can_contain or r.type in LAMP_HOSTS
        }
        found = _next_to_search(world, hosts or {r.name for r in receptacles}, looked)
        if found is None:
            raise Unsolvable(f"no receptacle where a {goal.toggle} may stand")
        return found
    if held is not None:  # a goal object (tool, then parent: both named by the room) or a stray
        return next_command(world)
    parents = {r.name for r in receptacles if r.type == goal.recep}
    candidates = {
        r.name for r in receptacles if (r.type, goal.obj) in world.spec.can_contain and r.name not in parents
    }
    for receptacle in world.here():
        if receptacle.name in parents:  # an object there is placed already
            continue
        if not world.accessible(receptacle) and receptacle.name in candidates:
            return f"open {receptacle.name}"
    seen = _visible_here(world, goal.obj)
    if seen is not None and seen[1] not in parents and world.item[seen[0]].pickupable:
        return f"take {seen[0]} from {seen[1]}"
    found = _next_to_search(world, candidates, looked)
    if found is None:
        raise Unsolvable(f"no receptacle can hold a {goal.obj}")
    return found


def search_plan(world: World, looked: frozenset[str] = frozenset()) -> list[str]:
    """The planner's view of the search: the next command, then what is left of the task in
    words (no object's place the agent has not seen)."""
    goal = world.spec.goal
    command = search_command(world, looked)
    held = world.holding
    carrying = held is not None and world.item[held].type == goal.obj
    rest: list[str] = []
    if not carrying:
        rest.append(f"find a {goal.obj.lower()} and take it")
    if goal.task_type == "look_at_obj_in_light":
        rest.append(f"use the {goal.toggle.lower()} while holding it")
    else:
        tool = _STATE_TOOLS.get(goal.task_type)
        if tool is not None and not (carrying and held in getattr(world, tool[2])):
            station = _first_of_type(world, tool[1])
            rest.append(f"{tool[0]} it with {station or tool[1].lower()}")
        parent = next((r.name for r in world.spec.receptacles if r.type == goal.recep), goal.recep)
        rest.append(f"put it in {parent}")
        if goal.task_type == "pick_two_obj_and_place" and not any(
            world.placed(i.name) for i in world.spec.items
        ):
            rest.append(f"then do the same with a second {goal.obj.lower()}")
    return [command, *rest]
