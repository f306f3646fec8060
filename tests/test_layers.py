"""The import graph of the four packages: no cycle, and no import against the layers
(envs <- agents <- trainers <- benchmarks; inside trainers, the rules of its docstring).

The graph is read from the source with ``ast``: every ``import`` and ``from ... import``,
at module level, inside functions and under ``TYPE_CHECKING`` alike, so a lazy import cannot
hide a dependency that runs the wrong way."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("envs", "agents", "trainers", "benchmarks")  # each imports only those before it
# The commands, and sft_demos: the part of the sft command that reads --demos run directories.
COMMANDS = {"trainers.at_grpo", "trainers.sft", "trainers.sft_demos", "trainers.gigpo", "trainers.matpo"}


def _modules() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


def _imported(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules ``name`` imports (the longest known module each import names)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the importing module's package
                package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        for target in targets:
            parts = target.split(".")
            known = next(
                (".".join(parts[:i]) for i in range(len(parts), 0, -1) if ".".join(parts[:i]) in modules),
                None,
            )
            if known is not None and known != name:
                found.add(known)
    return found


@pytest.fixture(scope="module")
def graph() -> nx.DiGraph:
    modules = _modules()
    graph = nx.DiGraph()
    for name, path in modules.items():
        graph.add_node(name)
        graph.add_edges_from((name, target) for target in _imported(name, path, modules))
    return graph


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_the_graph_is_read(graph):
    # the reader works: a few imports every version of the code has
    assert graph.has_edge("trainers.runtime.step", "trainers.rollout")
    assert graph.has_edge("trainers.runtime.ray", "trainers.runtime.workers")
    assert graph.has_edge("envs.sandbox.session", "envs.sandbox.jobs")  # a relative import
    assert graph.number_of_edges() > 300


def test_no_import_cycle(graph):
    cycles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert cycles == [], f"import cycles (break each by moving what both need below them): {cycles}"


def test_packages_import_only_the_ones_below(graph):
    rank = {package: i for i, package in enumerate(PACKAGES)}
    upward = [(a, b) for a, b in graph.edges if rank[b.split(".")[0]] > rank[a.split(".")[0]]]
    assert upward == [], f"imports from a lower package into a higher one: {upward}"


def test_the_trainers_core_never_imports_its_run_files_or_runtimes(graph):
    core = [
        n
        for n in graph
        if _within(n, "trainers")
        and n.count(".") == 1
        and n not in COMMANDS
        and not _within(n, "trainers.run")
        and not _within(n, "trainers.runtime")
    ]
    assert len(core) > 15
    wrong = [
        (a, b)
        for a in core
        for b in graph.successors(a)
        if _within(b, "trainers.run") or _within(b, "trainers.runtime")
    ]
    assert wrong == [], f"core modules importing trainers.run / trainers.runtime (only commands may): {wrong}"


def test_run_files_never_import_the_runtimes_the_logger_or_the_report(graph):
    files = [n for n in graph if _within(n, "trainers.run") and not _within(n, "trainers.run.report")]
    top = ("trainers.run", "trainers.run.log", "trainers.run.lifecycle")  # the writers, on top
    files = [n for n in files if n not in top]
    assert "trainers.run.checkpoint" in files and "trainers.run.episodes" in files
    wrong = [
        (a, b)
        for a in files
        for b in graph.successors(a)
        if _within(b, "trainers.runtime") or _within(b, "trainers.run.report") or b in top
    ]
    assert wrong == [], f"run files must stay below the report and the logger: {wrong}"
    report = [n for n in graph if _within(n, "trainers.run.report")]
    assert [(a, b) for a in report for b in graph.successors(a) if b in top] == []


def test_runtimes_may_use_run_files_never_the_reverse(graph):
    """The runtimes save checkpoints through trainers.run; nothing under trainers.run, the
    logger and the lifecycle included, reaches back into a runtime."""
    run = [n for n in graph if _within(n, "trainers.run")]
    assert "trainers.run.lifecycle" in run and "trainers.run.log" in run
    wrong = [(a, b) for a in run for b in graph.successors(a) if _within(b, "trainers.runtime")]
    assert wrong == [], f"trainers.run importing a runtime: {wrong}"
