"""The real ALFWorld games (``json_2.1.1``), read into ``engine.GameSpec`` without alfworld.

A user who has downloaded ALFWorld's data (``alfworld-download``) has, under
``$ALFWORLD_DATA``::

    json_2.1.1/<split>/<task_type>-<Obj>-<MRecep|None>-<Parent>-<scene>/trial_T<stamp>/
        game.tw-pddl      JSON {pddl_domain, grammar, pddl_problem, solvable}
        traj_data.json    JSON {task_type, pddl_params, scene, turk_annotations, ...}
        initial_state.pddl  the same text as game.tw-pddl's pddl_problem

with ``<split>`` one of ``train``, ``valid_seen``, ``valid_unseen``. ``find_games`` lists a
split's playable games the way alfworld's ``AlfredTWEnv`` does (traj_data.json and
game.tw-pddl present, ``"solvable": true``, no ``movable`` / ``Sliced`` task), but sorted:
alfworld keeps ``os.walk`` order, which differs from machine to machine. ``load_game`` /
``spec_from_pddl`` turn one game into a ``GameSpec`` that ``engine.World`` plays as the real
engine does (``PddlEnv`` + ``AlfredDemangler(shuffle=False)``).

How the problem file becomes a spec (ids are lower-cased first, as Fast Downward does):

* receptacles: every ``receptacleType r XType`` with a ``receptacleAtLocation``; type "X"
  (case from the file's ``XType - rtype`` declaration); ``openable`` from the fact;
* items: every ``objectType o XType`` that is ``inReceptacle`` a receptacle, with
  ``pickupable``, ``isReceptacleObject``, ``heatable`` / ``coolable`` / ``cleanable`` /
  ``toggleable`` / ``sliceable`` and the initial ``isHot`` / ``isCool`` / ``isClean``;
* objects with no ``inReceptacle`` (windows, chairs, light switches, floor lamps, the
  odd bat or ball on the floor, objects only inside a box via ``inReceptacleObject``) are
  dropped: in the real engine they appear in no text and no command takes them (a floor
  lamp's look task is ``"solvable": false`` in the data for that reason). The one thing
  the real engine allows with them, slicing one at its location, concerns only the
  ``Sliced`` tasks that are filtered out;
* an object ``inReceptacle`` several receptacles (a pan across two stove burners, a mug
  in a coffee machine on a countertop, a desk lamp on a shelf of a desk; 302 objects in
  152 of the 274 valid games) lies in all of them (``Item.also_in``), as in the real
  engine: it is listed in each, and a ``take`` removes it from that one only;
* display names follow alfworld's ``Demangler``: over every id that appears in an
  ``(:init`` fact, sorted as strings, the name is the prefix before the first ``_bar_``
  (plus "basin" if the id contains "basin"), and within a name the first sorted id gets
  the highest number. Locations (``loc_bar_...``) are numbered by the same rule, the
  agent's start included; the spec's location ints *are* those "loc N" numbers;
* the goal: the ``(:goal`` is matched against the six templates of
  ``generator.tables()["goal_pddl"]``; traj_data.json's ``task_type`` / ``pddl_params``
  are the fallback. The goal text is the grammar's "Your task is to: <text>." (templated
  text when there is no grammar); the syntax is ``"move"`` when the grammar has the
  ``move {o} to {r}`` template, else ``"put"`` (json_2.1.1's grammar).

``$ALFWORLD_DATA``: ``data_root()`` reads it, defaulting to ``~/.cache/alfworld`` as
alfworld does. Importing alfworld sets the variable to that default when it is unset (and
creates the directory), so call ``data_root()`` before anything imports alfworld if you need
to know whether the user set it.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from envs.alfworld import expert
from envs.alfworld.engine import TASK_TYPES, GameSpec, Goal, Item, Receptacle, World
from envs.alfworld.generator import Problem, tables
from envs.alfworld.sexpr import SExprError, lower_atoms, parse_sexprs, read_sexpr

__all__ = [
    "SPLITS",
    "EXPECTED_COUNTS",
    "EXPECTED_TYPE_COUNTS",
    "SExprError",
    "RealDataMissing",
    "RealGame",
    "parse_sexprs",
    "read_sexpr",
    "demangle_names",
    "spec_from_pddl",
    "goal_text_from_grammar",
    "syntax_from_grammar",
    "data_root",
    "split_dir",
    "find_games",
    "check_count",
    "load_game",
]

SPLITS = ("train", "valid_seen", "valid_unseen")
# Solvable games after the filters, counted in the real json_2.1.1 files (research notes A6).
EXPECTED_COUNTS = {"valid_seen": 140, "valid_unseen": 134}
EXPECTED_TYPE_COUNTS = {
    "valid_seen": dict(zip(TASK_TYPES, (35, 13, 27, 16, 25, 24), strict=True)),
    "valid_unseen": dict(zip(TASK_TYPES, (24, 18, 31, 23, 21, 17), strict=True)),
}
LAYOUT = (
    "$ALFWORLD_DATA/json_2.1.1/<split>/<task_type>-<Obj>-<MRecep>-<Parent>-<scene>/trial_T.../"
    "{game.tw-pddl, traj_data.json}, with <split> one of train, valid_seen, valid_unseen "
    "(alfworld-download puts them there)"
)
_DROPPED_TASKS = ("movable", "Sliced")


class RealDataMissing(FileNotFoundError):
    """The real ALFWorld data is not where ``$ALFWORLD_DATA`` says."""


def _section(problem: list, key: str) -> list:
    for part in problem:
        if isinstance(part, list) and part and isinstance(part[0], str) and part[0].lower() == key:
            return part[1:]
    raise ValueError(f"the PDDL problem has no ({key} ...) section")


# ------------------------------------------------------------------ names
def _display_word(entity_id: str) -> str:
    return entity_id.split("_bar_", 1)[0] + ("basin" if "basin" in entity_id else "")


def demangle_names(ids: Iterable[str]) -> dict[str, str]:
    """alfworld's ``Demangler(shuffle=False)``: lower-cased mangled id -> display name
    ("cabinet 3", "sinkbasin 1", "loc 12"). Ids without ``_bar_`` get no name."""
    groups: dict[str, list[str]] = {}
    for entity_id in sorted({i.lower() for i in ids}):
        if "_bar_" in entity_id:
            groups.setdefault(_display_word(entity_id), []).append(entity_id)
    return {
        eid: f"{word} {len(members) - k}" for word, members in groups.items() for k, eid in enumerate(members)
    }


def _type_names(objects: list) -> dict[str, str]:
    """Lower-cased type name -> its spelling ("sinkbasin" -> "SinkBasin"): the file's own
    ``XType - otype/rtype`` declarations when they have case, else alfworld's tables."""
    data = tables()
    known: set[str] = (
        set(data["can_contain"]) | set(data["static_receptacles"]) | set(data["movable_receptacles"])
    )
    for values in data["can_contain"].values():
        known |= set(values)
    for key in ("openable", "heatable", "coolable", "cleanable", "toggleable", "sliceable"):
        known |= set(data[key])
    spelling = {name.lower(): name for name in known}
    names = [a for a in objects if isinstance(a, str)]
    for name, dash, kind in zip(names, names[1:], names[2:], strict=False):
        if dash == "-" and kind.lower() in ("otype", "rtype") and name.lower().endswith("type"):
            base = name[: -len("type")]
            if base != base.lower():
                spelling[base.lower()] = base
    return spelling


def _type_of(type_atom: str, spelling: dict[str, str]) -> str:
    base = type_atom[: -len("type")] if type_atom.lower().endswith("type") else type_atom
    return spelling.get(base.lower(), base)


# ------------------------------------------------------------------ goal
@dataclass(frozen=True)
class _Template:
    task_type: str
    tree: list


@lru_cache(maxsize=1)
def _goal_templates() -> tuple[_Template, ...]:
    found = []
    for task_type, text in tables()["goal_pddl"].items():
        tree = read_sexpr(text.replace("#", "-"))  # the goal library writes '#' for '-'
        found.append(_Template(task_type, lower_atoms(tree)))
    return tuple(found)


def _match(pattern, tree, binding: dict[str, str]) -> bool:
    if isinstance(pattern, str):
        if not isinstance(tree, str):
            return False
        slot = re.fullmatch(r"\{(\w+)\}type", pattern)
        if slot is None:
            return pattern == tree
        if not tree.endswith("type"):
            return False
        value = tree[: -len("type")]
        return binding.setdefault(slot.group(1), value) == value
    if isinstance(tree, str) or len(pattern) != len(tree):
        return False
    return all(_match(p, t, binding) for p, t in zip(pattern, tree, strict=True))


def _goal_from_pddl(goal_section: list, spelling: dict[str, str]) -> Goal | None:
    tree = lower_atoms([":goal", *goal_section])
    for template in _goal_templates():
        binding: dict[str, str] = {}
        if _match(template.tree, tree, binding):
            name = {k: _type_of(v, spelling) for k, v in binding.items()}
            return Goal(template.task_type, name["obj"], name.get("recep"), name.get("toggle"))
    return None


def _goal_from_traj(traj: dict) -> Goal | None:
    task_type = traj.get("task_type")
    params = traj.get("pddl_params") or {}
    if task_type not in TASK_TYPES or not params.get("object_target"):
        return None
    look = task_type == "look_at_obj_in_light"
    return Goal(
        task_type,
        params["object_target"],
        None if look else params.get("parent_target") or None,
        params.get("toggle_target") or None if look else None,
    )


_TASK_RULE = re.compile(r'"task"\s*:\s*\[\s*\{\s*"rhs"\s*:\s*"((?:[^"\\]|\\.)*)"')


def goal_text_from_grammar(grammar: str | None) -> str | None:
    """The task sentence the game's grammar carries ("Your task is to: <text>."), without
    its prefix and final period; None when the grammar has none (or "UNKNOWN GOAL")."""
    if not grammar:
        return None
    rule = _TASK_RULE.search(grammar)
    if rule is not None:
        try:
            sentence = json.loads(f'"{rule.group(1)}"')
        except json.JSONDecodeError:
            sentence = rule.group(1)
    else:
        loose = re.search(r"Your task is to: ([^\"\n]*)", grammar)
        if loose is None:
            return None
        sentence = "Your task is to: " + loose.group(1)
    text = sentence.removeprefix("Your task is to:").strip()
    text = text[:-1] if text.endswith(".") else text
    return None if not text or text == "UNKNOWN GOAL" else text


def syntax_from_grammar(grammar: str | None) -> str:
    """``"move"`` when the grammar has alfworld 0.4's ``move {o} to {r}`` template, else
    ``"put"`` (0.3.x / json_2.1.1: ``put {o} in/on {r}``)."""
    return "move" if grammar and "move {o} to {r}" in grammar else "put"


def _templated_text(goal: Goal) -> str:
    template = tables()["goal_texts"][goal.task_type][0]
    return template.format(
        obj=goal.obj.lower(), recep=(goal.recep or "").lower(), toggle=(goal.toggle or "").lower()
    )


# ------------------------------------------------------------------ spec
def spec_from_pddl(
    problem_text: str, grammar: str | None = None, *, traj: dict | None = None, syntax: str | None = None
) -> GameSpec:
    """The ``GameSpec`` of an ALFRED problem (``initial_state.pddl``, or game.tw-pddl's
    ``pddl_problem``); see the module docstring for the rules.

    Args:
        grammar: The game's grammar (game.tw-pddl's ``grammar``): goal text and syntax.
        traj: traj_data.json, the fallback for a goal that matches no template.
        syntax: Overrides the syntax the grammar implies.
    """
    exprs = parse_sexprs(problem_text)
    problem = next((e for e in exprs if isinstance(e, list) and e and str(e[0]).lower() == "define"), None)
    if problem is None:
        raise ValueError("not a PDDL problem: no (define ...) expression")
    spelling = _type_names(_section(problem, ":objects"))
    init = lower_atoms(_section(problem, ":init"))
    facts = [f for f in init if isinstance(f, list) and f and isinstance(f[0], str)]

    unary: dict[str, set[str]] = {}
    rtype: dict[str, str] = {}
    otype: dict[str, str] = {}
    r_loc: dict[str, str] = {}
    in_receptacle: dict[str, list[str]] = {}
    can_contain: set[tuple[str, str]] = set()
    start = None
    # Facts are lower-cased (as Fast Downward does); type names get their case back from ``spelling``.
    for pred, *args in facts:
        if len(args) == 1:
            unary.setdefault(pred, set()).add(args[0])
        elif pred == "receptacletype" and len(args) == 2:
            rtype[args[0]] = _type_of(args[1], spelling)
        elif pred == "objecttype" and len(args) == 2:
            otype[args[0]] = _type_of(args[1], spelling)
        elif pred == "receptacleatlocation" and len(args) == 2:
            r_loc[args[0]] = args[1]
        elif pred == "inreceptacle" and len(args) == 2:
            in_receptacle.setdefault(args[0], []).append(args[1])
        elif pred == "cancontain" and len(args) == 2:
            can_contain.add((_type_of(args[0], spelling), _type_of(args[1], spelling)))
        elif pred == "atlocation" and len(args) == 2:
            start = args[1]
    if start is None:
        raise ValueError("the PDDL problem has no (atLocation <agent> <location>) fact")

    names = demangle_names(arg for fact in facts for arg in fact[1:])
    location = {loc: int(name.rsplit(" ", 1)[1]) for loc, name in names.items() if name.startswith("loc ")}
    for loc in (start, *r_loc.values()):
        if loc not in location:
            raise ValueError(f"location {loc!r} is not a mangled loc_bar_... id")

    def has(pred: str, entity: str) -> bool:
        return entity in unary.get(pred, ())

    receptacles = tuple(
        Receptacle(names[r], rtype[r], location[r_loc[r]], has("openable", r))
        for r in sorted(rtype)
        if r in r_loc and r in names
    )
    present = {r_id for r_id in rtype if r_id in r_loc and r_id in names}
    items = []
    for o in sorted(otype):
        hosts = sorted(r for r in in_receptacle.get(o, ()) if r in present)
        if not hosts or o in rtype or o not in names:
            continue
        items.append(
            Item(
                name=names[o],
                type=otype[o],
                receptacle=names[hosts[0]],
                also_in=tuple(names[h] for h in hosts[1:]),
                pickupable=has("pickupable", o),
                toggleable=has("toggleable", o),
                heatable=has("heatable", o),
                coolable=has("coolable", o),
                cleanable=has("cleanable", o),
                sliceable=has("sliceable", o),
                receptacle_object=has("isreceptacleobject", o),
                hot=has("ishot", o),
                cool=has("iscool", o),
                clean=has("isclean", o),
            )
        )

    goal = None
    try:
        goal = _goal_from_pddl(_section(problem, ":goal"), spelling)
    except ValueError:
        pass
    if goal is None and traj is not None:
        goal = _goal_from_traj(traj)
    if goal is None:
        raise ValueError(
            "the PDDL goal matches none of the six ALFWorld task templates (and no traj_data fallback)"
        )
    used = set(location[loc] for loc in r_loc.values()) | {location[start]}
    return GameSpec(
        receptacles=receptacles,
        items=tuple(items),
        goal=goal,
        goal_text=goal_text_from_grammar(grammar) or _templated_text(goal),
        can_contain=frozenset(can_contain),
        start_location=location[start],
        syntax=syntax or syntax_from_grammar(grammar),
        location_names={n: n for n in sorted(used)},
    )


# ------------------------------------------------------------------ files
def data_root() -> Path:
    """``$ALFWORLD_DATA``, or alfworld's default ``~/.cache/alfworld`` when it is unset.
    Importing alfworld sets the variable (to that default, when unset): read it first."""
    value = os.environ.get("ALFWORLD_DATA")
    return Path(value).expanduser() if value else Path("~/.cache/alfworld").expanduser()


def split_dir(root: str | Path, split: str) -> Path:
    """``<root>/json_2.1.1/<split>``; raises ``RealDataMissing`` (naming ``$ALFWORLD_DATA``
    and the layout) when it is not a directory."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    path = Path(root).expanduser() / "json_2.1.1" / split
    if not path.is_dir():
        raise RealDataMissing(
            f"no ALFWorld games at {path}: set $ALFWORLD_DATA to the directory that holds json_2.1.1/ "
            f"(currently {os.environ.get('ALFWORLD_DATA', 'unset')!r}); expected layout: {LAYOUT}"
        )
    return path


def _task_type_of(trial: Path, task_dir: str) -> str | None:
    head = task_dir.split("-", 1)[0]
    if head in TASK_TYPES:
        return head
    try:  # not ALFRED's directory naming: ask traj_data.json, as alfworld does
        return json.loads((trial / "traj_data.json").read_text()).get("task_type")
    except (OSError, ValueError):
        return None


def _solvable(game_file: Path) -> bool:
    try:
        return json.loads(game_file.read_text()).get("solvable") is True
    except (OSError, ValueError):
        return False


def find_games(
    root: str | Path, split: str, task_types: Iterable[str] | None = None, *, check: bool = True
) -> list[Path]:
    """The playable ``game.tw-pddl`` files of a split, sorted.

    alfworld's filters: a trial directory with both traj_data.json and game.tw-pddl, whose
    path under the split has no "movable" or "Sliced" (alfworld tests the whole path; this
    tests only the part under ``<split>``, so a data root named "movable" is harmless),
    whose task type is in ``task_types`` (default all six), and whose game has
    ``"solvable": true``. With ``check``, a count that differs from ``EXPECTED_COUNTS``
    (valid splits) gives a warning, not an error: a user's copy may differ.
    """
    base = split_dir(root, split)
    wanted = set(TASK_TYPES if task_types is None else task_types)
    unknown = wanted - set(TASK_TYPES)
    if unknown:
        raise ValueError(f"unknown task types {sorted(unknown)}; known: {TASK_TYPES}")
    games = []
    for folder, _dirs, files in os.walk(base):
        if "traj_data.json" not in files or "game.tw-pddl" not in files:
            continue
        trial = Path(folder)
        relative = trial.relative_to(base)
        if any(word in str(relative) for word in _DROPPED_TASKS):
            continue
        if _task_type_of(trial, relative.parts[0]) not in wanted:
            continue
        if _solvable(trial / "game.tw-pddl"):
            games.append(trial / "game.tw-pddl")
    games.sort()
    if check and (message := check_count(split, len(games), wanted)):
        warnings.warn(message, stacklevel=2)
    return games


def check_count(split: str, found: int, task_types: Iterable[str] | None = None) -> str | None:
    """None when ``found`` is the number of games ALFWorld's release has for this split
    (and task types), else a message that says how it differs. Splits without a known
    count (train) give None."""
    expected_by_type = EXPECTED_TYPE_COUNTS.get(split)
    if expected_by_type is None:
        return None
    wanted = set(TASK_TYPES if task_types is None else task_types)
    expected = sum(n for t, n in expected_by_type.items() if t in wanted)
    if found == expected:
        return None
    which = "all task types" if wanted == set(TASK_TYPES) else ", ".join(sorted(wanted))
    return (
        f"ALFWorld {split}: found {found} solvable games ({which}), the json_2.1.1 release has {expected}; "
        "this copy of the data differs (partial download, or another release), so results are not "
        "comparable with published numbers"
    )


@dataclass(frozen=True)
class RealGame:
    """One real game: its file, spec and ALFRED floor plan (traj_data's ``scene_num``, else
    the number that ends the task directory's name; 0 when neither says)."""

    path: Path
    spec: GameSpec
    floor_plan: int = 0

    @property
    def name(self) -> str:
        """``<task dir>/<trial dir>``, e.g. for logs."""
        return f"{self.path.parent.parent.name}/{self.path.parent.name}"

    def problem(self) -> Problem:
        """The game as the generator's ``Problem``, with the expert's walkthrough (raises
        ``expert.Unsolvable`` for a game the expert cannot win)."""
        return Problem(self.spec, self.floor_plan, tuple(expert.plan(World(self.spec))))


def load_game(path: str | Path, *, syntax: str | None = None) -> RealGame:
    """Read a ``game.tw-pddl`` (and the traj_data.json beside it, when present)."""
    path = Path(path)
    data = json.loads(path.read_text())
    traj = None
    traj_file = path.parent / "traj_data.json"
    if traj_file.is_file():
        traj = json.loads(traj_file.read_text())
    spec = spec_from_pddl(data["pddl_problem"], data.get("grammar"), traj=traj, syntax=syntax)
    scene = (traj or {}).get("scene", {}).get("scene_num")
    if not isinstance(scene, int):
        tail = path.parent.parent.name.rsplit("-", 1)[-1]
        scene = int(tail) if tail.isdigit() else 0
    return RealGame(path, spec, scene)
