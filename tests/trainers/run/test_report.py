"""report.html's page builder on a small recorded run: real Plan-Path tree rollouts and
evaluations (a hostile scripted planner, a random executor; no model), logged by the real
RunLogger and tree store, then the page parsed back and checked against the files."""

from __future__ import annotations

import json

import numpy as np
import pytest
from bs4 import BeautifulSoup

import envs
from agents.base import Generation, SamplingParams
from agents.scripted import RandomPolicy
from agents.team import Team
from trainers.records import TaskKey
from trainers.rollout import plain_rollout, tree_rollout
from trainers.run.files import read_jsonl
from trainers.run.log import RunLogger
from trainers.run.report import build_report, report_kind, write_report
from trainers.run.transcripts import printable_excerpt
from trainers.run.trees import write_trees

HOSTILE = (
    '</pre></details><script>document.title="pwned"</script><img src=x onerror="document.title=1">'
    '<!-- {{ config }} {% raw %} --> & "quoted" \x00\x1b[31m non-ASCII: \u00fc\u4e2d\U0001f600'
)
K = 3


class HostilePolicy:
    """A scripted player whose every reply is markup and script (candidate k adds ``#k``)."""

    name = "hostile"

    def generate(self, prompts, *, num_samples=1, sampling=None, adapter=None):
        return [
            [Generation(f"{HOSTILE} #{k}", (), (), (), "stop") for k in range(num_samples)] for _ in prompts
        ]


def _team():
    env = envs.make("plan_path", team="mas")
    return Team(env, {"planner": HostilePolicy(), "executor": RandomPolicy(seed=3)})


def _tasks(split, seeds):
    return [TaskKey(envs.spec("plan_path").id, split, seed) for seed in seeds]


@pytest.fixture(scope="module")
def recorded_run(tmp_path_factory):
    """Two training steps (tree rollouts, K = 3, trees of 2 tasks) and evaluations at steps 0
    and 2, written as a training run writes them."""
    run = tmp_path_factory.mktemp("run")
    (run / "config.json").write_text(json.dumps({"env": "plan_path", "algo": "at_grpo", "team": "mas",
                                                 "model": "tiny-test", "rollout": "tree"}))  # fmt: skip
    team, sampling = _team(), SamplingParams()
    with RunLogger(run, tensorboard=False, plots=False) as log:
        for step in (0, 1, 2):
            if step:
                batch = tree_rollout(_tasks("train", (10 + step, 20 + step, 30 + step)), team,
                                     num_candidates=K, sampling=sampling, seed=step)  # fmt: skip
                advantages = np.linspace(-1, 1, len(batch.samples))
                write_trees(run, step, batch.samples, advantages, tasks=2)
                rewards = {t.role: t.reward for t in batch.samples}
                log.log_step(
                    step, {"reward": rewards, "success": 0.25 * step, "invalid_rate": 1 / (step + 2)}
                )
            if step in (0, 2):
                tasks = _tasks("test", envs.split_seeds("test", 3))
                evaluation = plain_rollout(tasks, team, episodes_per_task=1, sampling=sampling, seed=step)
                log.log_eval(step, {"success": 0.0, "invalid_rate": 0.5}, evaluation.episodes, transcripts=1)
    return run


@pytest.fixture(scope="module")
def page(recorded_run):
    return BeautifulSoup((recorded_run / "report.html").read_text(encoding="utf-8"), "html.parser")


def test_the_logger_writes_the_report_with_every_section(recorded_run, page):
    assert report_kind(recorded_run) == "training run"
    for section in ("overview", "curves", "episodes", "trees"):
        assert page.find("section", id=section) is not None, section
    assert "plan_path" in page.find("section", id="overview").get_text()


def test_curves_carry_the_numbers_of_metrics_and_eval_jsonl(recorded_run, page):
    charts = {f["data-chart"]: f for f in page.select("figure.chart")}
    reward = charts["Training reward per role"]
    for record in read_jsonl(recorded_run / "metrics.jsonl"):
        for role in ("planner", "executor"):
            points = reward.select_one(f'g[data-series="reward/{role}"]').select("circle")
            value = {int(p["data-step"]): float(p["data-value"]) for p in points}[record["step"]]
            assert value == record[f"reward/{role}"]
    held_out = charts["Evaluation success and invalid replies"]
    steps = [int(c["data-step"]) for c in held_out.select_one('g[data-series="success"]').select("circle")]
    assert steps == [r["step"] for r in read_jsonl(recorded_run / "eval.jsonl")] == [0, 2]


def test_episodes_turn_by_turn_with_the_hostile_reply_as_text(page):
    episodes = page.select("#episodes .episode")
    assert len(episodes) == 6  # two evaluations x 3 tasks
    turns = page.select("#episodes .turn")
    planner = [t for t in turns if t["data-role"] == "planner"]
    assert planner and all(t["data-invalid"] == "1" for t in planner)
    shown = printable_excerpt(f"{HOSTILE} #0")[0]  # control characters written as \xNN
    assert all(t.select_one("pre.reply").get_text() == shown for t in planner)
    first = planner[0]
    assert "No <answer>" in first.get_text()  # the env's reason, as text
    assert "You are the planner" in first.select_one("details.prompt pre").get_text()
    assert "local/invalid" in first.select_one("table.terms").get_text()
    executor = [t for t in turns if t["data-role"] == "executor"]
    assert executor and all(t.select_one("details.render pre") for t in executor)  # Plan-Path draws its grid
    assert {o["value"] for o in page.select("#filter-role option")} == {"", "planner", "executor"}


def test_nothing_from_a_reply_becomes_markup(page, recorded_run):
    assert len(page.find_all("script")) == 1  # the page's own filter script
    assert not page.find_all("img") and not page.find_all("iframe")
    html = (recorded_run / "report.html").read_text(encoding="utf-8")
    assert "<script>document.title" not in html and "&lt;script&gt;document.title" in html


def test_the_trees_show_k_candidates_per_node_the_selected_one_and_zero_variance(recorded_run, page):
    steps = page.select("#trees details.tree-step")
    assert [s["data-step"] for s in steps] == ["1", "2"]
    stored = [json.loads(line) for line in (recorded_run / "trees" / "train_step_000001.jsonl").open()]
    trees = steps[0].select("div.tree")
    assert len(trees) == len(stored) == 2
    for tree, record in zip(trees, stored, strict=True):
        nodes = tree.select("div.node")
        assert len(nodes) == len(record["nodes"])
        for node, node_record in zip(nodes, record["nodes"], strict=True):
            rows = node.select("tr.candidate")
            assert len(rows) == K and node["data-k"] == str(K)
            selected = [r["data-k"] for r in rows if "selected" in r["class"]]
            assert selected == [str(c["k"]) for c in node_record["candidates"] if c["selected"]]
            assert ("zero-variance" in node["class"]) == node_record["zero_variance"]
            advantages = [float(r.select("td")[3].get_text()) for r in rows]
            assert advantages == pytest.approx([c["advantage"] for c in node_record["candidates"]], abs=5e-4)
    planner_nodes = [n for n in page.select("#trees div.node") if "planner_0" in n.div.get_text()]
    assert planner_nodes and all("zero-variance" in n["class"] for n in planner_nodes)  # all invalid alike


def test_a_run_from_before_reports_shows_what_it_recorded(tmp_path):
    """metrics and a Markdown transcript only (no provenance, eval episodes or trees)."""
    with RunLogger(tmp_path, tensorboard=False, plots=False, report=False) as log:
        log.log_step(1, {"reward": {"planner": 0.5}, "success": 0.0, "invalid_rate": 0.5})
        log.log_eval(1, {"success": 0.0})
    (tmp_path / "transcripts").mkdir()
    (tmp_path / "transcripts" / "eval_step_000001.md").write_text(f"# old transcript\n{HOSTILE}\n")
    assert not (tmp_path / "report.html").exists()  # report=False
    page = BeautifulSoup(write_report(tmp_path).read_text(), "html.parser")
    assert "No provenance.json" in page.find("section", id="overview").get_text()
    assert "# old transcript" in page.find("section", id="episodes").get_text()
    assert "No trees recorded" in page.find("section", id="trees").get_text()
    assert len(page.find_all("script")) == 1 and not page.find_all("img")


def test_not_a_run_directory(tmp_path):
    assert report_kind(tmp_path) is None
    with pytest.raises(FileNotFoundError, match="not a run directory"):
        build_report(tmp_path)


def test_a_report_bug_is_a_warning_not_a_dead_run(tmp_path, monkeypatch):
    import trainers.run.log

    def broken(run_dir):
        raise RuntimeError("template bug")

    monkeypatch.setattr(trainers.run.log, "write_report", broken)  # what the logger calls
    with (
        pytest.warns(RuntimeWarning, match="report.html"),
        RunLogger(tmp_path, tensorboard=False, plots=False) as log,
    ):
        log.log_eval(0, {"success": 0.0})
    assert read_jsonl(tmp_path / "eval.jsonl")[0]["success"] == 0.0


def test_a_warm_starts_report_names_its_trainer_and_says_why_it_has_no_trees(tmp_path):
    config = {"env": "plan_path", "demos": ["oracle"], "teams": ["mas"]}  # what trainers.sft saves
    (tmp_path / "config.json").write_text(json.dumps(config))
    with RunLogger(tmp_path, tensorboard=False, plots=False) as log:
        log.log_step(1, {"nll": 0.7})
    page = BeautifulSoup((tmp_path / "report.html").read_text(), "html.parser")
    overview = page.find("section", id="overview").get_text()
    assert "trainers.sft (warm start)" in overview and "algorithm" not in overview
    assert "samples no trees" in page.find("section", id="trees").get_text()
    assert [f["data-chart"] for f in page.select("figure.chart")] == ["Reply-token NLL"]


def test_provenance_shows_plain_values_and_names_packages_that_are_not_installed(tmp_path):
    # it showed JSON text ('"python -m trainers.at_grpo ..."', 'null'): issue 52, item 4
    from trainers.run.provenance import PROVENANCE_FILE

    session = {
        "what": "started",
        "command": "python -m trainers.at_grpo --env sokoban",
        "host": "vm",
        "git_commit": None,
        "versions": {"torch": "2.13.0", "vllm": None},
    }
    (tmp_path / PROVENANCE_FILE).write_text(json.dumps({"sessions": [session]}))
    with RunLogger(tmp_path, tensorboard=False, plots=False) as log:
        log.log_eval(0, {"success": 0.0})
    overview = BeautifulSoup((tmp_path / "report.html").read_text(), "html.parser").find(
        "section", id="overview"
    )
    cells = [td.get_text() for td in overview.find_all("td")]
    assert "python -m trainers.at_grpo --env sokoban" in cells and "vm" in cells
    pairs = dict(zip(cells[::2], cells[1::2], strict=False))
    assert pairs.get("versions.vllm") == "not installed" and pairs.get("versions.torch") == "2.13.0"
    assert pairs.get("git_commit") == "unknown"
    assert not any(cell.startswith('"') or cell == "null" for cell in cells)
