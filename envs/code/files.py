"""Code tasks from a user's data file: MBPP, APPS, CodeContests and LiveCodeBench style
records (``load_code_file``; ``envs.code.data.CODE_SOURCES`` loads a path through it).

File formats (one record per line; ``.json`` holds an array):

==================  ========================================================================
MBPP                ``text`` (or ``prompt``), ``code``, ``test_list``, optional
                    ``test_setup_code``, ``task_id``. Function task; the entry point is the
                    first function the tests call that ``code`` defines; the
                    prompt shows the first test.
APPS                ``question``, ``input_output`` (JSON string: ``inputs``, ``outputs``,
                    optional ``fn_name``), optional ``solutions`` (JSON string list),
                    ``starter_code``, ``problem_id``. With ``fn_name``: a function task
                    (``fn_name(*inputs[i])``, or ``Solution().fn_name`` when the starter code
                    has ``class Solution``; a one-element output list is unwrapped, APPS
                    style), else stdin/stdout.
CodeContests        ``description``, ``public_tests`` / ``private_tests`` / optional
                    ``generated_tests`` (``{"input": [...], "output": [...]}``), optional
                    ``solutions`` (list of programs, or ``{"language": [...], "solution": [...]}``
                    with 3 = Python 3), ``name``. Stdin/stdout; io tests = public + private.
LiveCodeBench       ``question_content``, ``public_test_cases`` (JSON string list of
                    ``{input, output, testtype}``), optional ``private_test_cases`` (plain
                    JSON only: the compressed pickled form is ignored, never unpickled),
                    ``starter_code``, ``metadata`` (JSON with ``func_name``),
                    ``question_id``. ``testtype`` ``functional``: a function task called as
                    ``Solution().func_name(*args)`` (one JSON argument per input line).
==================  ========================================================================
"""

from __future__ import annotations

import ast
import functools
import gzip
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from envs.code.task import CodeTask, parse_python
from envs.tasks import TaskSource, finite_source

_FORMATS = (
    "MBPP (text, code, test_list)",
    "APPS (question, input_output)",
    "CodeContests (description, public_tests / private_tests)",
    "LiveCodeBench (question_content, public_test_cases)",
)


class _RecordError(ValueError):
    pass


def _require(record: Mapping[str, Any], key: str) -> Any:
    if key not in record or record[key] is None:
        raise _RecordError(f"missing key {key!r}")
    return record[key]


def _json_field(record: Mapping[str, Any], key: str) -> Any:
    value = _require(record, key)
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError as e:
            raise _RecordError(f"key {key!r} is not valid JSON: {e}") from None
    return value


def _as_text(value: Any) -> str:
    return "\n".join(map(str, value)) if isinstance(value, list) else str(value)


def _called_functions(test: str) -> list[str]:
    """Names called in a test statement, in source order (parsed, not run)."""
    try:
        calls = [
            n for n in ast.walk(ast.parse(test)) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
        ]
    except SyntaxError:
        return []
    return [c.func.id for c in sorted(calls, key=lambda c: (c.lineno, c.col_offset))]  # type: ignore[attr-defined]


def _mbpp(record: Mapping[str, Any], task_id: str, source: str) -> CodeTask:
    text = record.get("text") or _require(record, "prompt")
    code = str(_require(record, "code"))
    tests = _require(record, "test_list")
    if not isinstance(tests, list) or not tests or not all(isinstance(t, str) for t in tests):
        raise _RecordError("key 'test_list' must be a non-empty list of assert strings")
    try:
        defined = {n.name for n in ast.walk(parse_python(code)) if isinstance(n, ast.FunctionDef)}
    except SyntaxError:
        defined = set()
    called = [name for test in tests for name in _called_functions(test)]
    entry = next((c for c in called if c in defined), None)
    if entry is None:
        raise _RecordError(f"cannot tell the function under test from test_list[0] {tests[0]!r}")
    prompt = f"{str(text).strip()}\nYour code should pass this test:\n{tests[0]}\n"
    return CodeTask(
        id=task_id,
        kind="function",
        prompt=prompt,
        entry_point=entry,
        tests=tuple(tests),
        reference=code,
        setup=str(record.get("test_setup_code") or ""),
        source=source,
    )


def _function_tests(
    func: str, calls: Sequence[tuple[list[Any], Any]], solution_class: bool
) -> tuple[str, ...]:
    target = f"Solution().{func}" if solution_class else func
    return tuple(
        f"assert values_match({target}({', '.join(repr(a) for a in args)}), {expected!r})"
        for args, expected in calls
    )


def _apps(record: Mapping[str, Any], task_id: str, source: str) -> CodeTask:
    question = str(_require(record, "question"))
    io = _json_field(record, "input_output")
    if (
        not isinstance(io, dict)
        or not isinstance(io.get("inputs"), list)
        or not isinstance(io.get("outputs"), list)
    ):
        raise _RecordError("key 'input_output' must hold JSON with 'inputs' and 'outputs' lists")
    if len(io["inputs"]) != len(io["outputs"]) or not io["inputs"]:
        raise _RecordError("key 'input_output': 'inputs' and 'outputs' must be non-empty and of equal length")
    solutions = _json_field(record, "solutions") if record.get("solutions") else []
    reference = str(solutions[0]) if isinstance(solutions, list) and solutions else None
    starter = str(record.get("starter_code") or "")
    if io.get("fn_name"):
        func = str(io["fn_name"])
        calls = []
        for args, out in zip(io["inputs"], io["outputs"], strict=True):
            expected = out[0] if isinstance(out, list) and len(out) == 1 else out
            calls.append((args if isinstance(args, list) else [args], expected))
        return CodeTask(
            id=task_id,
            kind="function",
            prompt=question + (f"\n\n{starter}" if starter else ""),
            entry_point=func,
            tests=_function_tests(func, calls, "class Solution" in starter),
            reference=reference,
            source=source,
        )
    io_tests = tuple((_as_text(i), _as_text(o)) for i, o in zip(io["inputs"], io["outputs"], strict=True))
    return CodeTask(
        id=task_id, kind="stdio", prompt=question, io_tests=io_tests, reference=reference, source=source
    )


def _codecontests(record: Mapping[str, Any], task_id: str, source: str) -> CodeTask:
    description = str(_require(record, "description"))
    io_tests: list[tuple[str, str]] = []
    for key in ("public_tests", "private_tests"):
        block = record.get(key) or {}
        if not isinstance(block, dict) or len(block.get("input", [])) != len(block.get("output", [])):
            raise _RecordError(f"key {key!r} must be {{'input': [...], 'output': [...]}} of equal length")
        io_tests += [
            (str(i), str(o)) for i, o in zip(block.get("input", []), block.get("output", []), strict=True)
        ]
    if not io_tests:
        raise _RecordError("no tests: 'public_tests' and 'private_tests' are empty")
    solutions = record.get("solutions") or []
    if isinstance(solutions, dict):  # the Hugging Face layout; language 3 is Python 3
        pairs = zip(solutions.get("language", []), solutions.get("solution", []), strict=False)
        solutions = [s for lang, s in pairs if lang in (3, "PYTHON3", "python3")]
    reference = str(solutions[0]) if isinstance(solutions, list) and solutions else None
    return CodeTask(
        id=task_id,
        kind="stdio",
        prompt=description,
        io_tests=tuple(io_tests),
        reference=reference,
        source=source,
    )


def _livecodebench(record: Mapping[str, Any], task_id: str, source: str) -> CodeTask:
    content = str(_require(record, "question_content"))
    cases = list(_json_field(record, "public_test_cases"))
    private = record.get("private_test_cases")
    if isinstance(private, str):
        try:
            cases += json.loads(private)
        except json.JSONDecodeError:
            pass  # compressed + pickled private tests: never unpickled (module docstring)
    elif isinstance(private, list):
        cases += private
    if not cases or not all(isinstance(c, dict) and "input" in c and "output" in c for c in cases):
        raise _RecordError(
            "key 'public_test_cases' must be a non-empty JSON list of {input, output, testtype}"
        )
    starter = str(record.get("starter_code") or "")
    if any(c.get("testtype") == "functional" for c in cases):
        meta = _json_field(record, "metadata") if record.get("metadata") else {}
        func = meta.get("func_name") if isinstance(meta, dict) else None
        if not func:
            raise _RecordError("functional tests need key 'metadata' with a 'func_name'")
        try:
            calls = [
                (
                    [json.loads(line) for line in str(c["input"]).splitlines() if line.strip()],
                    json.loads(c["output"]),
                )
                for c in cases
            ]
        except json.JSONDecodeError as e:
            raise _RecordError(f"functional test input/output is not JSON: {e}") from None
        return CodeTask(
            id=task_id,
            kind="function",
            prompt=content + (f"\n\n{starter}" if starter else ""),
            entry_point=str(func),
            tests=_function_tests(str(func), calls, "class Solution" in starter),
            source=source,
        )
    io_tests = tuple((str(c["input"]), str(c["output"])) for c in cases)
    return CodeTask(id=task_id, kind="stdio", prompt=content, io_tests=io_tests, source=source)


def _detect(record: Mapping[str, Any]) -> tuple[str, Callable[[Mapping[str, Any], str, str], CodeTask]]:
    if "test_list" in record:
        return "mbpp", _mbpp
    if "input_output" in record and "question" in record:
        return "apps", _apps
    if "description" in record and ("public_tests" in record or "private_tests" in record):
        return "codecontests", _codecontests
    if "question_content" in record:
        return "livecodebench", _livecodebench
    raise _RecordError(
        f"unknown record format (keys: {', '.join(sorted(map(str, record)))}); expected {'; '.join(_FORMATS)}"
    )


def _records(path: Path) -> list[tuple[int, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:  # type: ignore[operator]
        text = f.read()
    if text.lstrip().startswith("["):
        try:
            return list(enumerate(json.loads(text), start=1))
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not a valid JSON array: {e}") from None
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                records.append((number, json.loads(line)))
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{number}: not valid JSON: {e}") from None
    return records


def load_code_file(path: Path) -> TaskSource[CodeTask]:
    """A finite source from an MBPP / APPS / CodeContests / LiveCodeBench style file
    (module docstring). Every record is parsed now, so a bad record fails here with its
    file, line (array index for ``.json``) and key. Cached per path and modification time."""
    path = Path(path).expanduser().resolve()
    stat = path.stat()
    return _load_code_file(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=32)
def _load_code_file(path: Path, mtime_ns: int, size: int) -> TaskSource[CodeTask]:
    tasks: list[CodeTask] = []
    source = str(path)
    for number, record in _records(path):
        where = f"{path}:{number}"
        if not isinstance(record, dict):
            raise ValueError(f"{where}: a record must be a JSON object, got {type(record).__name__}")
        fmt = "code"
        try:
            fmt, parse = _detect(record)
            ident = next(
                (record[k] for k in ("task_id", "problem_id", "question_id", "name") if record.get(k)), None
            )
            task_id = f"{path.name}:{ident if ident is not None else number}"
            tasks.append(parse(record, task_id, source))
        except _RecordError as e:
            raise ValueError(f"{where}: {e}") from None
        except (TypeError, ValueError, AttributeError, KeyError) as e:  # malformed field contents
            raise ValueError(f"{where}: malformed {fmt} record: {e!r}") from None
    if not tasks:
        raise ValueError(f"{path}: no records")
    return finite_source(source, lambda: tasks, len(tasks), f"code tasks from {path.name} ({len(tasks)})")
