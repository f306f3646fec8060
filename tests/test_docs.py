"""The algorithms page (docs/algorithms.md) stays in step with the code that cites it."""

from __future__ import annotations

import re
from pathlib import Path

from trainers.advantages import ADVANTAGE_ESTIMATORS
from trainers.presets import ALGO_PRESETS

REPO = Path(__file__).resolve().parents[1]
ALGORITHMS = REPO / "docs" / "algorithms.md"
PACKAGES = ("agents", "benchmarks", "envs", "trainers", "tests")


def _sections() -> set[int]:
    return {int(n) for n in re.findall(r"^## (\d+)\. ", ALGORITHMS.read_text(), flags=re.M)}


def test_every_section_the_code_cites_exists():
    cited: list[tuple[str, int]] = []
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            text = path.read_text()
            for first, last in re.findall(r"docs/algorithms\.md,? sections? (\d+)(?:-(\d+))?", text):
                for n in range(int(first), int(last or first) + 1):
                    cited.append((str(path.relative_to(REPO)), n))
    assert len(cited) >= 10, "the code should cite the algorithms page (docs/algorithms.md section N)"
    missing = [(where, n) for where, n in cited if n not in _sections()]
    assert missing == [], f"these cite a section docs/algorithms.md does not have: {missing}"


def test_the_files_and_tests_the_page_names_exist():
    text = ALGORITHMS.read_text()
    paths = set(re.findall(r"`((?:agents|trainers|envs|tests|benchmarks)/[\w/]+\.py)", text))
    assert paths, "the page should name the files that implement each algorithm"
    assert [p for p in paths if not (REPO / p).is_file()] == []
    for module, test in re.findall(r"`((?:tests/)?[\w/]*test_\w+\.py)::(\w+)`", text):
        candidates = [REPO / module, *REPO.joinpath("tests").rglob(Path(module).name)]
        assert any(c.is_file() and f"def {test}(" in c.read_text() for c in candidates), (module, test)


def test_every_estimator_and_algo_preset_is_on_the_page():
    text = ALGORITHMS.read_text()
    assert [name for name in ADVANTAGE_ESTIMATORS if f"`{name}`" not in text] == []
    assert [name for name in ALGO_PRESETS if f"`{name}`" not in text] == []


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces as '-'."""
    headings = [line.lstrip("#").strip() for line in page.read_text().splitlines() if line.startswith("#")]
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


def test_every_relative_link_of_the_readme_and_docs_resolves():
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    assert len(pages) >= 10 and len((REPO / "README.md").read_text().splitlines()) <= 300  # a landing page
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            if not resolved.exists() or (anchor and anchor not in _anchors(resolved)):
                broken.append(f"{page.relative_to(REPO)}: {target}")
    assert broken == [], f"links that lead nowhere: {broken}"
