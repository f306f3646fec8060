"""All 164 HumanEval canonical solutions pass their check() program in our sandbox, and
mutated solutions fail it: the data, the harness and the sandbox agree end to end.

Mutants: every problem's body replaced by ``return None``, and one deterministic AST
mutation of the canonical solution (the first comparison negated, else the first ``+``/``-``
swapped, else the first integer constant plus one). Some AST mutants are equivalent to
the original (e.g. a negated comparison in a branch that only chooses between equal
results), so their threshold is lower. The split per-assert tests (``CodeTask.tests``)
must all pass on the reference too.
"""

from __future__ import annotations

import ast
import copy
import os
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from envs.code.data import CODE_SOURCES, CodeTask
from envs.code.harness import TestReport, run_check_program, run_function_tests
from envs.sandbox import SandboxLimits, SandboxPool

# The sandbox's children (two programs at a time, each under its memory limit) count in the
# module's tree: a fresh-clone CI on a busy machine measured 630 MB added (2026-11-28).
pytestmark = [pytest.mark.slow, pytest.mark.memory(gb=1)]

_NEGATE = {
    ast.Lt: ast.GtE,
    ast.GtE: ast.Lt,
    ast.Gt: ast.LtE,
    ast.LtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}


def mutate(task: CodeTask) -> str:
    """One deterministic AST mutation inside the entry point of the reference."""
    module = ast.parse(task.reference)
    func = [n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == task.entry_point][-1]
    nodes = [n for stmt in func.body for n in ast.walk(stmt)]
    compare = next((n for n in nodes if isinstance(n, ast.Compare)), None)
    binops = [n for n in nodes if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Add, ast.Sub))]
    binop = binops[0] if binops else None
    number = next((n for n in nodes if isinstance(n, ast.Constant) and type(n.value) is int), None)
    if compare is not None:
        compare.ops[0] = _NEGATE[type(compare.ops[0])]()
    elif binop is not None:
        binop.op = ast.Sub() if isinstance(binop.op, ast.Add) else ast.Add()
    elif number is not None:
        number.value += 1
    else:
        func.body = [copy.deepcopy(func.body[0]), ast.Return(value=ast.Constant(value=None))]
    return ast.unparse(ast.fix_missing_locations(module))


class Results:
    def __init__(self, tasks: list[CodeTask]) -> None:
        self.tasks = tasks
        self.reference: list[TestReport] = []
        self.return_none: list[TestReport] = []
        self.ast_mutant: list[TestReport] = []
        self.split: list[TestReport] = []
        self.seconds = 0.0


@pytest.fixture(scope="module")
def results() -> Results:
    source = CODE_SOURCES.get("humaneval")
    tasks = [source.task(i) for i in range(source.size)]
    out = Results(tasks)
    mutant_limits = SandboxLimits(timeout_s=5, cpu_s=5)
    start = time.monotonic()
    workers = os.cpu_count() or 2
    with SandboxPool(workers=workers) as pool, ThreadPoolExecutor(workers) as threads:

        def check(solution: str, task: CodeTask, limits: SandboxLimits | None = None) -> TestReport:
            return run_check_program(solution, task.check_program, task.entry_point, limits=limits, pool=pool)

        reference = [threads.submit(check, t.reference, t) for t in tasks]
        return_none = [threads.submit(check, t.prompt + "    return None\n", t, mutant_limits) for t in tasks]
        ast_mutant = [threads.submit(check, mutate(t), t, mutant_limits) for t in tasks]
        split = [threads.submit(run_function_tests, t.reference, t.tests, pool=pool) for t in tasks]
        out.reference = [f.result() for f in reference]
        out.return_none = [f.result() for f in return_none]
        out.ast_mutant = [f.result() for f in ast_mutant]
        out.split = [f.result() for f in split]
    out.seconds = time.monotonic() - start
    return out


def _survivors(results: Results, reports: list[TestReport]) -> list[str]:
    return [t.id for t, r in zip(results.tasks, reports, strict=True) if r.all_passed]


def test_all_canonical_solutions_pass_their_check_program(results):
    pairs = zip(results.tasks, results.reference, strict=True)
    failed = {t.id: r.outcomes[0].error for t, r in pairs if not r.all_passed}
    passed = len(results.tasks) - len(failed)
    print(f"\nHumanEval references: {passed}/164 pass check(); 4 x 164 sandbox runs: {results.seconds:.1f} s")
    assert failed == {}


def test_return_none_mutants_fail(results):
    survivors = _survivors(results, results.return_none)
    print(f"\n'return None' mutants caught: {164 - len(survivors)}/164, survivors: {survivors}")
    assert survivors == []


def test_ast_mutants_fail(results):
    survivors = _survivors(results, results.ast_mutant)
    print(f"\nAST mutants caught: {164 - len(survivors)}/164, survivors: {survivors}")
    assert len(survivors) <= 4, survivors  # 162/164 at the time of writing


def test_split_asserts_pass_on_the_reference(results):
    failed = {
        t.id: [(o.test, o.error) for o in r.outcomes if not o.passed]
        for t, r in zip(results.tasks, results.split, strict=True)
        if not r.all_passed
    }
    total = sum(r.total for r in results.split)
    print(f"\nsplit asserts: {total - sum(len(v) for v in failed.values())}/{total} pass on the references")
    assert failed == {}
