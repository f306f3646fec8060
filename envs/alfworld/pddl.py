"""The real ALFWorld engine on a teamgym game: a ``GameSpec`` as an ALFRED PDDL game, and
``PddlWorld``, the ``engine.World`` interface over textworld's ``PddlEnv``.

Optional (``pip install 'teamgym[alfworld]'``: alfworld 0.4.2, textworld, Fast Downward).
It is the reference the pure-Python engine is checked against
(``tests/envs/alfworld/test_pddl_differential.py``), and a way to play a generated game
with the engine ALFWorld's papers used. It is slow: about 0.5-0.8 s per reset and 30-40 ms
per step on generated games, against 25-35 microseconds for ``engine.World``.

``to_pddl(spec)`` writes the game dict ``PddlEnv.load`` takes: alfworld's own domain and
grammar (for the ``"put"`` syntax turned back into 0.3.x's: ``put X in/on Y``, "You arrive
at loc N.", no ``help``), the task sentence in place of "UNKNOWN GOAL", and the problem with
the facts of ALFRED's problem files. The ids are chosen so that alfworld's ``Demangler``
(``shuffle=False``) gives back the spec's display names, every list of the real engine
comes in the spec's order, and the ``loc N`` numbers are ``spec.location_names``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path

from envs.alfworld.engine import GameSpec

__all__ = ["EXTRA_HINT", "pddl_available", "to_pddl", "PddlWorld"]

EXTRA_HINT = "pip install 'teamgym[alfworld]'"
_REQUIRED = ("alfworld", "textworld", "fast_downward")
# Types the domain names in preconditions: the problem must declare them even when unused.
_DOMAIN_RTYPES = ("SinkBasin", "Microwave", "Fridge")
_DOMAIN_OTYPES = ("Knife", "ButterKnife")
_MANGLE = (("-", "_minus_"), ("|", "_bar_"), ("+", "_plus_"), (".", "_dot_"), (",", "_comma_"))
# alfworld 0.4.x -> 0.3.x grammar (envs/alfworld/data/grammar_notes.md, section 1)
_PUT_GRAMMAR = (
    (
        '"You arrive at {r.name}. #examineReceptacle.feedback#"',
        '"You arrive at {lend.name}. #examineReceptacle.feedback#"',
    ),
    ('"You move the {o.name} to the {r.name}."', '"You put the {o.name} in/on the {r.name}."'),
    ('template :: "move {o} to {r}";', 'template :: "put {o} in/on {r}";'),
)


def pddl_available() -> bool:
    """Whether the real engine (alfworld, textworld, Fast Downward) is installed."""
    return all(importlib.util.find_spec(name) is not None for name in _REQUIRED)


def require() -> None:
    """Raise an ImportError naming the extra when the real engine is not installed."""
    missing = [name for name in _REQUIRED if importlib.util.find_spec(name) is None]
    if missing:
        raise ImportError(
            f"the real ALFWorld engine needs {', '.join(missing)}: {EXTRA_HINT} "
            "(alfworld 0.4.2, textworld and fast-downward-textworld, which compiles with cmake and g++)"
        )


def _data_file(name: str) -> str:
    """A file of alfworld's ``data`` folder (the domain, the grammar), read without importing
    alfworld (whose import creates ~/.cache/alfworld)."""
    require()
    spec = importlib.util.find_spec("alfworld")
    roots = list(spec.submodule_search_locations or [])
    for root in roots:
        path = Path(root) / "data" / name
        if path.is_file():
            return path.read_text(encoding="utf-8")
    raise FileNotFoundError(f"alfworld/data/{name} not found under {roots}")


def _mangle(text: str) -> str:
    for plain, escaped in _MANGLE:
        text = text.replace(plain, escaped)
    return text


def _drop_block(text: str, start: str, *, braces: bool) -> str:
    """``text`` without the block that begins at ``start``: a balanced s-expression, or (with
    ``braces``) everything from ``start`` to its matching ``}``."""
    begin = text.index(start)
    opening, closing = ("{", "}") if braces else ("(", ")")
    depth, i = 0, text.index(opening, begin)
    while True:
        if text[i] == opening:
            depth += 1
        elif text[i] == closing:
            depth -= 1
            if depth == 0:
                break
        i += 1
    return text[:begin] + text[i + 1 :]


def _domain_and_grammar(syntax: str) -> tuple[str, str]:
    domain, grammar = _data_file("alfred.pddl"), _data_file("alfred.twl2")
    if syntax == "put":
        for old, new in _PUT_GRAMMAR:
            if old not in grammar:
                raise RuntimeError(f"alfred.twl2 has changed: {old!r} not found")
            grammar = grammar.replace(old, new)
        # 0.3.x has no help action (the help text would also say "move")
        domain = _drop_block(domain, "(:action help", braces=False)
        grammar = _drop_block(grammar, "action help {", braces=True)
    return domain, grammar


@dataclass(frozen=True)
class _Layout:
    """The ALFRED ids of a spec's entities (before Fast Downward lower-cases them)."""

    receptacles: dict[str, str]  # display name -> id
    items: dict[str, str]
    locations: dict[int, str]  # spec location -> id


def _split_name(name: str) -> tuple[str, int]:
    base, _, number = name.rpartition(" ")
    if not base or not number.isdigit() or int(number) < 1 or not base.isalnum() or base != base.lower():
        raise ValueError(f"to_pddl: display names must read '<lowercase name> <number>', got {name!r}")
    return base, int(number)


def _id_prefix(base: str, type_name: str) -> tuple[str, str]:
    """The id's text before the coordinates and after them, so that the Demangler gives
    ``base`` back: its name is the prefix before the first "|", plus "basin" when the id
    contains "basin" (``Sink|...|SinkBasin`` -> "sinkbasin")."""
    if base.endswith("basin") and len(base) > len("basin"):
        stem = base[: -len("basin")]
        suffix = "|" + type_name if "basin" in type_name.lower() else "|Basin"
    elif "basin" in base or base == "loc":
        raise ValueError(f"to_pddl: the Demangler cannot give the name {base!r}")
    else:
        stem, suffix = base, ""
    cased = type_name[: len(stem)] if type_name.lower().startswith(stem) else stem.capitalize()
    return cased, suffix


def _layout(spec: GameSpec) -> _Layout:
    # Group every named entity by its display name's base; within a base the Demangler gives
    # the highest number to the first id in sorted order, so rank the ids by falling number.
    entities = [(r.name, r.type, "r") for r in spec.receptacles] + [(i.name, i.type, "o") for i in spec.items]
    groups: dict[str, list[tuple[int, str, str, str]]] = {}
    for name, type_name, kind in entities:
        base, number = _split_name(name)
        groups.setdefault(base, []).append((number, name, type_name, kind))
    ids: dict[str, str] = {}
    for base, members in groups.items():
        numbers = sorted(m[0] for m in members)
        if numbers != list(range(1, len(members) + 1)):
            raise ValueError(
                f"to_pddl: the {base!r} entities must be numbered 1..{len(members)}, got {numbers}"
            )
        for rank, (_, name, type_name, _) in enumerate(sorted(members, reverse=True)):
            stem, suffix = _id_prefix(base, type_name)
            ids[name] = f"{stem}|+{rank // 100:02d}.{rank % 100:02d}|+00.00|+00.00{suffix}"
    receptacles = {r.name: ids[r.name] for r in spec.receptacles}
    items = {i.name: ids[i.name] for i in spec.items}
    for kind, table in (("receptacles", receptacles), ("items", items)):
        order = list(table)
        if sorted(order, key=lambda n: _mangle(table[n]).lower()) != order:
            raise ValueError(
                f"to_pddl: spec.{kind} are not in the real engine's order (sorted ids, numbers falling)"
            )

    # Locations: "loc N" numbers run like the others (first sorted id -> highest number).
    used = sorted({r.location for r in spec.receptacles} | {spec.start_location})
    named = {loc: spec.location_names.get(loc) for loc in used}
    if sorted(n for n in named.values() if n is not None) == list(range(1, len(used) + 1)):
        rank = {loc: len(used) - n for loc, n in named.items()}
    elif spec.syntax == "put":
        raise ValueError(
            f"to_pddl: location_names must number the {len(used)} locations in use "
            f"(start included) 1..{len(used)}"
        )
    else:  # "move" never shows a location's name
        rank = {loc: k for k, loc in enumerate(used)}
    width = len(str(len(used)))
    locations = {loc: f"loc|{rank[loc]:0{width}d}|0|0|30" for loc in used}
    return _Layout(receptacles, items, locations)


def _problem(spec: GameSpec, layout: _Layout) -> str:
    from envs.alfworld.generator import tables  # the goal templates (alfworld's goal_library)

    goal = spec.goal
    m = _mangle
    rec = {name: m(i) for name, i in layout.receptacles.items()}
    obj = {name: m(i) for name, i in layout.items.items()}
    loc = {k: m(i) for k, i in layout.locations.items()}
    rtypes = sorted(
        {r.type for r in spec.receptacles}
        | {rt for rt, _ in spec.can_contain}
        | set(_DOMAIN_RTYPES)
        | ({goal.recep} if goal.recep else set())
    )
    otypes = sorted(
        {i.type for i in spec.items}
        | {ot for _, ot in spec.can_contain}
        | set(_DOMAIN_OTYPES)
        | {t for t in (goal.obj, goal.toggle) if t}
    )
    lines = ["(define (problem plan_trial_teamgym)", "(:domain alfred)", "(:objects", "agent1 - agent"]
    lines += [f"{t}Type - otype" for t in otypes] + [f"{t}Type - rtype" for t in rtypes]
    lines += [f"{obj[i.name]} - object" for i in spec.items]
    lines += [f"{rec[r.name]} - receptacle" for r in spec.receptacles]
    lines += [f"{loc[k]} - location" for k in sorted(loc)]
    lines += [")", "(:init"]
    lines += [f"(receptacleType {rec[r.name]} {r.type}Type)" for r in spec.receptacles]
    lines += [f"(objectType {obj[i.name]} {i.type}Type)" for i in spec.items]
    lines += [f"(canContain {rt}Type {ot}Type)" for rt, ot in sorted(spec.can_contain)]
    for i in spec.items:
        if i.pickupable:
            lines.append(f"(pickupable {obj[i.name]})")
        if i.receptacle_object:
            lines.append(f"(isReceptacleObject {obj[i.name]})")
    lines += [f"(openable {rec[r.name]})" for r in spec.receptacles if r.openable]
    lines.append(f"(atLocation agent1 {loc[spec.start_location]})")
    for i in spec.items:
        for capability in ("cleanable", "heatable", "coolable", "toggleable", "sliceable"):
            if getattr(i, capability):
                lines.append(f"({capability} {obj[i.name]})")
    for i in spec.items:
        for state, predicate in (("cool", "isCool"), ("hot", "isHot"), ("clean", "isClean")):
            if getattr(i, state):
                lines.append(f"({predicate} {obj[i.name]})")
    where = {r.name: r.location for r in spec.receptacles}
    lines += [f"(inReceptacle {obj[i.name]} {rec[r]})" for i in spec.items for r in i.receptacles]
    lines += [f"(receptacleAtLocation {rec[r.name]} {loc[r.location]})" for r in spec.receptacles]
    lines += [
        f"(objectAtLocation {obj[i.name]} {loc[where[i.receptacle]]})" for i in spec.items if i.receptacle
    ]
    lines.append(")")
    template = tables()["goal_pddl"][goal.task_type].replace("#", "-")
    return (
        "\n".join(lines)
        + "\n"
        + template.format(obj=goal.obj, recep=goal.recep or "", toggle=goal.toggle or "")
    )


def to_pddl(spec: GameSpec) -> dict:
    """The game dict of ``spec`` for textworld's ``PddlEnv.load`` (as ALFWorld's
    ``game.tw-pddl``): ``pddl_domain``, ``grammar``, ``pddl_problem``, ``solvable``."""
    domain, grammar = _domain_and_grammar(spec.syntax)
    if "UNKNOWN GOAL" not in grammar:
        raise RuntimeError("alfred.twl2 has changed: no 'UNKNOWN GOAL' to replace")
    grammar = grammar.replace("UNKNOWN GOAL", spec.goal_text)
    return {
        "pddl_domain": domain,
        "grammar": grammar,
        "pddl_problem": _problem(spec, _layout(spec)),
        "solvable": True,
    }


def _import_engine():
    """textworld's PddlEnv and alfworld's AlfredDemangler. Importing alfworld sets
    $ALFWORLD_DATA (and creates ~/.cache/alfworld); the variable is put back as it was."""
    require()
    saved = os.environ.get("ALFWORLD_DATA")
    try:
        import textworld
        from alfworld.agents.environment.alfred_tw_env import AlfredDemangler
        from textworld.envs.pddl import PddlEnv
    finally:
        if saved is None:
            os.environ.pop("ALFWORLD_DATA", None)
        else:
            os.environ["ALFWORLD_DATA"] = saved
    return textworld, PddlEnv, AlfredDemangler


class PddlWorld:
    """``engine.World``'s interface on the real engine: ``PddlEnv`` wrapped in alfworld's
    ``AlfredDemangler(shuffle=False)``, loaded with ``to_pddl(spec)``.

    ``clone()`` loads the game again and replays the commands (seconds). ``state_key()``
    reads the PDDL facts into ``World.state_key()``'s form, so the two can be compared.
    Each instance loads its own copy of Fast Downward's library (as ``PddlEnv`` does);
    ``close()`` frees the game's memory in it.
    """

    def __init__(self, spec: GameSpec, *, _game: dict | None = None, _layout_: _Layout | None = None) -> None:
        textworld, PddlEnv, AlfredDemangler = _import_engine()
        self.spec = spec
        self.layout = _layout_ or _layout(spec)
        self.game = _game or to_pddl(spec)
        self.history: list[str] = []  # the admissible commands played, for clone()
        infos = textworld.EnvInfos(won=True, admissible_commands=True)
        self._env = AlfredDemangler(PddlEnv(infos), shuffle=False)
        argv = sys.argv  # Fast Downward's translator overwrites sys.argv
        try:
            self._env.load(self.game)
            self._state = self._env.reset()
        finally:
            sys.argv = argv
        self._intro = self._state.feedback
        names = {info.id: info.name for info in self._env._entity_infos.values()}
        expected = {
            _mangle(i).lower(): n for n, i in {**self.layout.receptacles, **self.layout.items}.items()
        }
        wrong = {expected[k]: names.get(k) for k in expected if names.get(k) != expected[k]}
        if wrong:
            raise RuntimeError(f"PddlWorld: the Demangler named entities differently: {wrong}")
        self._name = names
        self._location = {_mangle(i).lower(): k for k, i in self.layout.locations.items()}

    # ------------------------------------------------------------------ World's interface
    def intro(self) -> str:
        return self._intro

    def admissible(self) -> list[str]:
        return list(self._state["admissible_commands"])

    @property
    def won(self) -> bool:
        return bool(self._state["won"])

    def step(self, command: str) -> str:
        admissible = command.strip() in self._state["admissible_commands"]
        self._state, _, _ = self._env.step(command)
        if admissible:
            self.history.append(command.strip())
        return self._state.feedback

    def clone(self) -> PddlWorld:
        twin = PddlWorld(self.spec, _game=self.game, _layout_=self.layout)
        for command in self.history:
            twin.step(command)
        return twin

    def __deepcopy__(self, memo: dict) -> PddlWorld:  # env.clone() deep-copies its world
        return self.clone()

    def state_key(self) -> Hashable:
        """``World.state_key()`` read off the PDDL facts."""
        facts: dict[str, list[tuple[str, ...]]] = {}
        for fact in self._state["_facts"]:
            facts.setdefault(fact.name, []).append(tuple(v.name for v in fact.arguments))
        name = self._name
        order = {r.name: k for k, r in enumerate(self.spec.receptacles)}
        place: dict[str, list[str]] = {}
        for o, r in facts.get("inreceptacle", []):
            place.setdefault(name[o], []).append(name[r])
        held = [name[o] for _, o in facts.get("holds", [])]
        (where,) = [self._location[loc] for _, loc in facts.get("atlocation", [])]

        def named(predicate: str) -> frozenset[str]:
            return frozenset(name[args[0]] for args in facts.get(predicate, []))

        return (
            where,
            held[0] if held else None,
            tuple(tuple(sorted(place.get(i.name, ()), key=order.__getitem__)) for i in self.spec.items),
            named("opened"),
            named("ishot"),
            named("iscool"),
            named("isclean"),
            named("issliced"),
            named("istoggled"),
        )

    def close(self) -> None:
        """Free this game's Fast Downward task (the instance is unusable after). The
        library copy stays mapped: ``fast_downward.close_lib``'s dlclose of one copy, with
        another copy loaded, crashes the interpreter at exit (SIGSEGV)."""
        env, self._env = getattr(self, "_env", None), None
        if env is not None:
            env.unwrapped.downward_lib.cleanup()

    def __enter__(self) -> PddlWorld:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
