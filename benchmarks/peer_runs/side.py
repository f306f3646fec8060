"""The command line every side of ``python -m benchmarks.peers`` shares:
``python -m benchmarks.peer_runs.<side> SPEC.json OUT_DIR`` runs ``run(spec, out)`` and writes
what it returns to ``OUT_DIR/result.json`` (the parent reads it; a missing file is a failure)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

__all__ = ["side_main", "version"]


def side_main(run: Callable[[dict[str, Any], Path], dict[str, Any]], argv: list[str] | None = None) -> None:
    spec_path, out = (Path(a) for a in (argv if argv is not None else sys.argv[1:]))
    result = run(json.loads(spec_path.read_text()), out)
    (out / "result.json").write_text(json.dumps(result, indent=1))
