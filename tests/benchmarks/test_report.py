"""``python -m benchmarks.report`` and report.html of real runs: an evaluation's tables and
bars against its results files, old runs rebuilt from disk, and the page of a 2-step
tiny-test training run opened in headless Chromium (Debian's ``chromium``; ``.ci/run``
installs it and sets ``TEAMGYM_REQUIRE_CHROMIUM=1``, elsewhere the test skips without it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from agents.base import Generation
from benchmarks.evaluate import main as evaluate_main
from benchmarks.report import main as report_main
from trainers.at_grpo import main as at_grpo_main
from trainers.run.report.eval_page import markdown_tables
from trainers.run.transcripts import printable_excerpt

HOSTILE = '</pre><script>document.title="pwned"</script><img src=x onerror="document.title=2"> & \x07 \u00fc'
K = 3
ARTIFACTS = Path(
    os.environ.get("TEAMGYM_TEST_ARTIFACTS", Path(__file__).resolve().parents[2] / ".test-artifacts")
)


class HostilePolicy:
    """A scripted planner (``--roles planner=hostile``) whose replies are markup and script."""

    name = "hostile"

    def generate(self, prompts, *, num_samples=1, sampling=None, adapter=None):
        return [
            [Generation(f"{HOSTILE} #{k}", (), (), (), "stop") for k in range(num_samples)] for _ in prompts
        ]


@pytest.fixture(scope="module")
def evaluation(tmp_path_factory):
    out = tmp_path_factory.mktemp("eval")
    args = ["--env", "plan_path", "--model", "tiny-test", "--episodes", "3", "--seeds", "0", "1",
            "--output-dir", str(out), "--run-name", "e", "--no-progress", "--no-plots"]  # fmt: skip
    evaluate_main(args)
    return out / "e"


def _page(path: Path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def test_an_evaluation_writes_its_report_with_the_tables_of_results_md(evaluation):
    page = _page(evaluation / "report.html")
    tables = page.select("#curves table.results")
    expected = [b for b in markdown_tables((evaluation / "results.md").read_text()) if "table" in b]
    assert len(tables) == len(expected) > 3
    lines = (evaluation / "results.md").read_text().splitlines()
    titles = [line[4:] for line in lines if line.startswith("### ")]
    assert [h.get_text() for h in page.select("#curves h3")] == titles  # every table, in order
    for table, block in zip(tables, expected, strict=True):
        rows = [[td.get_text() for td in tr.find_all(["td", "th"])] for tr in table.find_all("tr")]
        assert rows == [block["header"], *block["rows"]]
    assert any("±" in c for b in expected for row in b["rows"] for c in row)  # error bars: mean ± s.e.


def test_an_evaluations_bars_are_its_means_with_standard_errors(evaluation):
    results = json.loads((evaluation / "results.json").read_text())
    bars = _page(evaluation / "report.html").select('figure[data-chart^="Success rate"] g.bar')
    cells = [c for c in results["cells"] if not c["skipped"]]
    assert len(bars) == len(cells) == 4
    for bar, cell in zip(bars, cells, strict=True):
        assert bar["data-name"] == cell["row"]
        assert (
            float(bar["data-mean"]) == cell["mean"]["success"]
            and float(bar["data-se"]) == cell["se"]["success"]
        )


def test_an_evaluations_transcripts_are_every_episode_of_each_cells_first_seed(evaluation):
    page = _page(evaluation / "report.html")
    groups = page.select("#episodes details.group")
    assert len(groups) == 4 and all(len(g.select(".episode")) == 3 for g in groups)
    oracle = next(g for g in groups if g.summary.get_text().startswith("oracle"))
    assert all(e["data-success"] == "1" for e in oracle.select(".episode"))


def test_the_command_rebuilds_reports_and_names_what_is_wrong(evaluation, tmp_path, capsys):
    (evaluation / "report.html").unlink()
    (written,) = report_main([str(evaluation)])
    assert written == evaluation / "report.html" and written.exists()
    assert "evaluation report" in capsys.readouterr().out
    out = tmp_path / "copy.html"
    assert report_main([str(evaluation), "--out", str(out)]) == [out] and out.exists()
    for args, message in (
        ([str(tmp_path)], "neither a training run"),
        ([str(tmp_path / "missing")], "is not a directory"),
        ([str(evaluation), str(evaluation), "--out", str(out)], "--out names one file"),
    ):
        with pytest.raises(SystemExit) as exit_info:
            report_main(args)
        assert exit_info.value.code == 2 and message in capsys.readouterr().err


def _chromium() -> str:
    found = next(
        (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None
    )
    if found is None:
        if os.environ.get("TEAMGYM_REQUIRE_CHROMIUM") == "1":
            pytest.fail("TEAMGYM_REQUIRE_CHROMIUM=1 but chromium is not on PATH: apt-get install chromium")
        pytest.skip("headless Chromium is not installed (apt-get install chromium); .ci/run installs it")
    return found


def _headless(chromium: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    # --no-sandbox: CI runs as root, where Chromium's own sandbox refuses to start.
    command = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               f"--user-data-dir={profile}", *args]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=300, check=True)


@pytest.mark.slow
def test_a_tiny_runs_report_in_headless_chromium(tmp_path, monkeypatch):
    """A real 2-step run (tiny-test executor trained, hostile scripted planner): Chromium
    loads its report, runs its script, and shows every section, K candidates per tree node
    at step 1, and the hostile reply as text; the screenshot is kept in .test-artifacts/."""
    chromium = _chromium()
    monkeypatch.setitem(__import__("agents.scripted").scripted.SCRIPTED_POLICIES, "hostile", HostilePolicy)
    args = ["--env", "plan_path", "--model", "tiny-test", "--steps", "2", "--tasks-per-step", "2",
            "-K", str(K), "--max-new-tokens", "8", "--eval-tasks", "2", "--roles", "planner=hostile",
            "--output-dir", str(tmp_path), "--run-name", "browser",
            "--no-progress", "--no-tensorboard", "--no-plots"]  # fmt: skip
    assert at_grpo_main(args) == 0
    report = tmp_path / "browser" / "report.html"
    dom = _headless(chromium, tmp_path / "profile", "--dump-dom", report.as_uri()).stdout
    page = BeautifulSoup(dom, "html.parser")
    assert page.title.get_text() == "teamgym training run: browser"  # no reply retitled it
    for section in ("overview", "curves", "episodes", "trees"):
        assert page.find("section", id=section) is not None, section
    assert len(page.select("#curves figure.chart svg circle")) > 0
    assert len(page.select(".episode")) == 4  # evaluations at steps 0 and 2, 2 tasks each
    assert page.select_one("#filter-count").get_text() == "4 of 4 episode(s) shown"  # the script ran
    step_one = page.select_one('#trees details.tree-step[data-step="1"]')
    nodes = step_one.select("div.node")
    assert nodes and all(len(node.select("tr.candidate")) == K for node in nodes)
    assert all(len(node.select("tr.candidate.selected")) == 1 for node in nodes)
    shown = printable_excerpt(f"{HOSTILE} #0")[0]
    replies = [pre.get_text() for pre in page.select("#episodes pre.reply")]
    assert shown in replies
    assert not page.find_all("img") and len(page.find_all("script")) == 1
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    screenshot = ARTIFACTS / "report-browser.png"
    screenshot.unlink(missing_ok=True)
    _headless(
        chromium,
        tmp_path / "profile",
        f"--screenshot={screenshot}",
        "--window-size=1280,2400",
        report.as_uri(),
    )
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and screenshot.stat().st_size > 20_000
