"""Derive ``data/tables.json`` from the MIT-licensed ``alfworld==0.4.2`` package.

The offline ALFWorld generator reads only the JSON this script writes, so teamgym never
imports alfworld. Run it with an interpreter that has alfworld installed, for example::

    python3.11 -m venv /tmp/alfvenv && /tmp/alfvenv/bin/pip install alfworld==0.4.2
    /tmp/alfvenv/bin/python envs/alfworld/derive_tables.py

The script reads these parts of the installed package:

- ``gen/layouts/FloorPlan<N>-{objects,openable}.json``;
- ``gen/constants.py``;
- ``gen/goal_library.py``;
- ``LICENSE`` from the dist-info.

``constants.py`` and ``goal_library.py`` are executed as standalone modules. The
``alfworld`` package itself is never imported, because its ``__init__`` creates
``~/.cache/alfworld`` and sets ``$ALFWORLD_DATA``. The output is deterministic: keys and
lists are sorted, and there is one floor plan per line.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import re
import sys
from pathlib import Path

PACKAGE = "alfworld"
VERSION = "0.4.2"
# engine.TASK_TYPES, repeated: this script runs where alfworld is installed, which need not
# have teamgym's dependencies (importing envs needs gymnasium and pettingzoo).
TASK_TYPES = (
    "pick_and_place_simple",
    "look_at_obj_in_light",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "pick_two_obj_and_place",
)
# Count used for a receptacle type that objects.json lists but openable.json does not
# (research doc A5, step 2).
DEFAULT_COUNTS = {"StoveBurner": 4, "Cabinet": 4, "Drawer": 3, "Shelf": 3, "CounterTop": 2}
LAMPS = ("DeskLamp", "FloorLamp")
OUT = Path(__file__).resolve().parent / "data" / "tables.json"


def _package_dir() -> Path:
    spec = importlib.util.find_spec(PACKAGE)  # locates the package without running __init__
    if spec is None or not spec.submodule_search_locations:
        sys.exit(f"{PACKAGE} is not installed in this interpreter ({sys.executable})")
    return Path(next(iter(spec.submodule_search_locations)))


def _load_module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _license_line() -> str:
    dist = importlib.metadata.distribution(PACKAGE)
    if dist.version != VERSION:
        sys.exit(f"expected {PACKAGE}=={VERSION}, found {dist.version}")
    for f in dist.files or ():
        if f.name.upper().startswith("LICENSE"):
            for line in f.read_text().splitlines():
                if line.startswith("Copyright"):
                    return line.strip()
    sys.exit("no Copyright line in the package's LICENSE")


def _room(scene: int) -> str:
    for room, start in (("Kitchen", 1), ("LivingRoom", 201), ("Bedroom", 301), ("Bathroom", 401)):
        if start <= scene < start + 30:
            return room
    raise ValueError(f"scene {scene} is in no room range")


def _receptacle_type(instance_id: str) -> str:
    # "Sink|x|y|z|SinkBasin" -> SinkBasin, "Bathtub|x|y|z|BathtubBasin" -> BathtubBasin.
    # FloorPlan420 has "Bathtub|...|SinkBasin": a SinkBasin, as its receptacleType would be.
    parts = instance_id.split("|")
    return parts[-1] if len(parts) > 4 else parts[0]


def derive(pkg: Path) -> dict:
    c = _load_module(pkg / "gen" / "constants.py", "_alfworld_constants")
    g = _load_module(pkg / "gen" / "goal_library.py", "_alfworld_goal_library")

    static = set(c.RECEPTACLES) - set(c.MOVABLE_RECEPTACLES)
    # Any type placeable in some receptacle; sliced types never occur in a layout.
    placeable = set().union(*c.VAL_RECEPTACLE_OBJECTS.values())
    layouts = pkg / "gen" / "layouts"

    floor_plans = {}
    scenes = sorted(
        int(m.group(1))
        for p in layouts.glob("FloorPlan*-objects.json")
        if (m := re.fullmatch(r"FloorPlan(\d+)-objects\.json", p.name))
    )
    for n in scenes:
        types = set(json.loads((layouts / f"FloorPlan{n}-objects.json").read_text()))
        openable = json.loads((layouts / f"FloorPlan{n}-openable.json").read_text())
        counts: dict[str, int] = {}
        for instance_id in openable:
            t = _receptacle_type(instance_id)
            if t in static:
                counts[t] = counts.get(t, 0) + 1
        defaulted = sorted(t for t in types & static if t not in counts)
        for t in defaulted:
            counts[t] = DEFAULT_COUNTS.get(t, 1)
        objects = sorted(t for t in types if t in c.OBJECTS_SET and t not in static and t in placeable)
        floor_plans[str(n)] = {
            "room": _room(n),
            "receptacles": dict(sorted(counts.items())),
            # Openable-class types counted by default (no id in openable.json). ALFRED writes
            # `openable r` only for ids in openable.json, so in real games these are open
            # (a drawer reads "On the drawer 1, you see ...").
            "defaulted_openable": [t for t in defaulted if t in c.OPENABLE_CLASS_SET],
            "objects": objects,
            "lamps": [t for t in LAMPS if t in types],
        }

    can_contain = {r: sorted(objs) for r, objs in sorted(c.VAL_RECEPTACLE_OBJECTS.items()) if r in static}
    actions = {k.lower(): sorted(v) for k, v in sorted(c.VAL_ACTION_OBJECTS.items())}
    return {
        "source": {
            "package": f"{PACKAGE}=={VERSION}",
            "license": "MIT",
            "copyright": _license_line(),
            "files": [
                "alfworld/gen/layouts/FloorPlan*-objects.json",
                "alfworld/gen/layouts/FloorPlan*-openable.json",
                "alfworld/gen/constants.py",
                "alfworld/gen/goal_library.py",
            ],
            "generator": "envs/alfworld/derive_tables.py",
        },
        "static_receptacles": sorted(static),
        "movable_receptacles": sorted(c.MOVABLE_RECEPTACLES),
        # isReceptacleObject in ALFRED's PDDL: objects of these types are also receptacles.
        "pickupable_receptacle_objects": sorted(c.MOVABLE_RECEPTACLES),
        "openable": list(c.OPENABLE_CLASS_LIST),
        "heatable": actions["heatable"],
        "coolable": actions["coolable"],
        "cleanable": actions["cleanable"],
        "toggleable": actions["toggleable"],
        "sliceable": actions["sliceable"],
        "can_contain": can_contain,
        "goals_valid": {t: sorted(c.GOALS_VALID[t]) for t in TASK_TYPES},
        # Filled by alfworld.agents.utils.misc.get_templated_task_desc: random.choice of the
        # templates, with obj/recep/toggle = pddl_params type names .lower(); the grammar
        # then reads "Your task is to: <text>."
        "goal_texts": {t: list(g.gdict[t]["templates"]) for t in TASK_TYPES},
        # gdict[t]["pddl"] verbatim: '#' stands for '-', and the trailing ')' closes (define.
        "goal_pddl": {t: g.gdict[t]["pddl"] for t in TASK_TYPES},
        "display_name": {
            "rule": "the instance id's prefix before the first '|', lowercased, plus 'basin' if "
            "the lowercased id contains 'basin'; goal texts use type.lower()",
            "id_prefix": {"SinkBasin": "Sink", "BathtubBasin": "Bathtub"},
            "id_suffix": {"SinkBasin": "|SinkBasin", "BathtubBasin": "|BathtubBasin"},
        },
        "floor_plans": floor_plans,
    }


def dump(tables: dict) -> str:
    """JSON with one line per floor plan and per can_contain / goal entry, keys in a fixed order."""

    def one(v):
        return json.dumps(v, separators=(",", ":"))

    lines = ["{"]
    items = list(tables.items())
    for i, (key, value) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        if isinstance(value, dict) and key in (
            "floor_plans",
            "can_contain",
            "goal_texts",
            "goal_pddl",
            "goals_valid",
            "source",
            "display_name",
        ):
            keys = sorted(value, key=int) if key == "floor_plans" else list(value)
            lines.append(f"{one(key)}:{{")
            for j, k in enumerate(keys):
                inner = "," if j < len(keys) - 1 else ""
                lines.append(f"{one(k)}:{one(value[k])}{inner}")
            lines.append("}" + comma)
        else:
            lines.append(f"{one(key)}:{one(value)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    tables = derive(_package_dir())
    text = dump(tables)
    assert json.loads(text) == tables
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    plans = tables["floor_plans"]
    print(f"wrote {args.out} ({len(text.encode())} bytes, {len(plans)} floor plans)")


if __name__ == "__main__":
    main()
