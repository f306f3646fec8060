"""The expert: commands that win an ALFWorld game from any state of ``engine.World``.

It knows where every object is (the generator's own placement, or the real problem file)
and plays the task's recipe: fetch a goal object (go, open if closed, take), apply the tool
(heat / cool / clean: no open needed), then go to the parent receptacle, open it if closed,
and place the object; for ``look_at_obj_in_light``, carry the object to the lamp and use it;
``pick_two`` does the fetch-and-place twice. Whatever the agent holds that the recipe does
not need is put down first. Because it plans from the current state, it re-plans after any
detour, so it serves as the walkthrough of a new game and as the oracle of every turn.

Written here rather than calling a PDDL planner: Fast Downward costs 0.1-65 s per call on
these problems (research notes), this costs microseconds, and the recipe is the walkthrough
the task types are defined by.
"""

from __future__ import annotations

from envs.alfworld.engine import NOTHING_HAPPENS, World

__all__ = ["next_command", "plan", "Unsolvable"]

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
