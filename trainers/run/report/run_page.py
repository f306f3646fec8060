"""What report.html shows of a training run directory (``trainers.at_grpo`` or ``trainers.sft``):
config and provenance, the curves of ``metrics.jsonl``/``eval.jsonl``, the evaluation episodes
turn by turn, and the recorded AT-GRPO trees. Runs made before a record existed (no
``provenance.json``, no ``episodes/eval_step_*.jsonl``, no ``trees/``) show what they have:
their Markdown transcripts as text, and a note of what is missing.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from trainers.evaluation import held_out_line
from trainers.run.episodes import EPISODES_DIR, read_episode_dicts
from trainers.run.files import EVAL_FILE, METRICS_FILE, TEST_FILE, TRANSCRIPTS_DIR, read_jsonl
from trainers.run.plots import RATE_LABEL, run_figures
from trainers.run.provenance import PROVENANCE_FILE
from trainers.run.report.charts import line_chart
from trainers.run.report.episodes import episode_view, text_view, tree_view
from trainers.run.report.files import flat_items, provenance_items, read_json
from trainers.run.trees import read_trees

__all__ = ["is_training_run", "run_context"]

MAX_EVALUATIONS = 3
"""Evaluations whose episodes the page shows: the first (step 0) and the latest ones."""
MAX_TREE_STEPS = 40
"""Training steps whose trees the page shows: step 1 and the latest ones."""
_EVAL_EPISODES = re.compile(r"eval_step_(\d+)\.jsonl")
_TRANSCRIPT = re.compile(r"eval_step_(\d+)\.md")


# Runs saved before the held-out protocol have no eval_split: theirs played test tasks.
EVAL_SPLIT_TEXT = {
    "validation": "validation-slice tasks (train split, never trained on)",
    "test": "held-out test tasks",
}


def is_training_run(run_dir: Path) -> bool:
    return any((run_dir / name).exists() for name in (METRICS_FILE, EVAL_FILE)) or (
        (run_dir / "config.json").exists() and not (run_dir / "results.json").exists()
    )


def _keep(steps: list[int], limit: int) -> list[int]:
    """The first step and the latest ``limit - 1`` ones."""
    steps = sorted(steps)
    return steps if len(steps) <= limit else [steps[0], *steps[-(limit - 1) :]]


def _provenance(run_dir: Path) -> list[dict[str, Any]]:
    data = read_json(run_dir / PROVENANCE_FILE)
    sessions = data.get("sessions") if isinstance(data, dict) else None
    return [
        {"what": s.get("what", "?"), "items": provenance_items(s)}
        for s in sessions or []
        if isinstance(s, dict)
    ]


def _charts(train: list[dict], evals: list[dict]) -> list:
    charts = []
    for _, panels, _ in run_figures(train, evals):
        for title, y_label, series in panels:
            chart = line_chart(title, y_label, series, rate=y_label == RATE_LABEL)
            if chart is not None:
                charts.append(chart)
    return charts


def _evaluations(run_dir: Path, evals: list[dict]) -> tuple[list[dict[str, Any]], int]:
    """The shown evaluations (step, metrics, episodes or the legacy transcript) and how many
    evaluations there are in all."""
    folder, transcripts = run_dir / EPISODES_DIR, run_dir / TRANSCRIPTS_DIR
    stored = {}
    if folder.is_dir():
        stored = {int(m[1]): p for p in folder.iterdir() if (m := _EVAL_EPISODES.fullmatch(p.name))}
    legacy = {}
    if transcripts.is_dir():
        legacy = {int(m[1]): p for p in transcripts.iterdir() if (m := _TRANSCRIPT.fullmatch(p.name))}
    metrics = {r["step"]: r for r in evals if isinstance(r.get("step"), int)}
    steps = sorted(set(stored) | set(legacy) | set(metrics))
    shown = []
    for step in _keep(steps, MAX_EVALUATIONS):
        record = metrics.get(step, {})
        entry: dict[str, Any] = {
            "step": step,
            "success": record.get("success"),
            "invalid_rate": record.get("invalid_rate"),
            "episodes": [],
            "transcript": None,
        }
        if step in stored:
            entry["episodes"] = [episode_view(e) for e in read_episode_dicts(stored[step])]
        elif step in legacy:
            entry["transcript"] = text_view(
                legacy[step].read_text(encoding="utf-8", errors="replace"), 60_000
            )
        shown.append(entry)
    return shown, len(steps)


def _trees(run_dir: Path) -> tuple[list[dict[str, Any]], int]:
    recorded = read_trees(run_dir)
    shown = [
        {"step": step, "trees": [tree_view(t) for t in recorded[step]]}
        for step in _keep(list(recorded), MAX_TREE_STEPS)
    ]
    return shown, len(recorded)


def _team_roles(config: dict[str, Any], evals: list[dict[str, Any]]) -> list[str]:
    """The run's roles in turn order (its env's TEAMS), else those its evaluations report returns for."""
    try:
        import envs

        teams = envs.spec(config["env"]).teams or {}
        return list(teams[config.get("team") or config.get("teams", [None])[0]])
    except Exception:  # noqa: BLE001  (a page of an unknown env or team still shows the rest)
        returns = {key for row in evals for key in row if key.startswith("return/")}
        return sorted(key.removeprefix("return/") for key in returns)


def _roles_text(config: dict[str, Any], evals: list[dict[str, Any]]) -> str | None:
    """What played each role: its model and whether it trained, the weights a frozen role played,
    or the scripted policy (``planner: smollm2-135m-instruct (trained), executor: frozen, weights
    of runs/warm``)."""
    scripted = dict(item.split("=", 1) for item in config.get("roles", []) if "=" in item)
    items = (item.partition("=") for item in config.get("frozen", []))
    frozen = {role: run or config.get("init") for role, _, run in items}
    per_role = config.get("role_model") or {}
    shown = []
    for role in _team_roles(config, evals):
        model = per_role.get(role, config.get("model"))
        if role in scripted:
            shown.append(f"{role}: {scripted[role]} (scripted)")
        elif role in frozen:
            source = frozen[role]  # the run whose weights it plays, else its base model
            shown.append(f"{role}: frozen, weights of {source}" if source else f"{role}: {model} (frozen)")
        else:
            shown.append(f"{role}: {model} (trained)")
    return ", ".join(shown) or None


def run_context(run_dir: Path) -> dict[str, Any]:
    """The template's data for a training run directory."""
    config = read_json(run_dir / "config.json")
    train, evals = read_jsonl(run_dir / METRICS_FILE), read_jsonl(run_dir / EVAL_FILE)
    evaluations, evaluation_count = _evaluations(run_dir, evals)
    trees, tree_steps = _trees(run_dir)
    config = config if isinstance(config, dict) else {}
    warm_start = "demos" in config and "algo" not in config  # trainers.sft: no algorithm, several teams
    teams = ", ".join(map(str, config.get("teams", [])))
    summary = [
        ("env", config.get("env")),
        *(
            [("trainer", "trainers.sft (warm start)"), ("teams", teams)]
            if warm_start
            else [("algorithm", config.get("algo")), ("team", config.get("team"))]
        ),
        ("model", config.get("model")),
        ("roles", _roles_text(config, evals)),
        ("steps logged", len(train)),
        ("evaluations", len(evals)),
        ("in-run evaluations play", EVAL_SPLIT_TEXT.get(config.get("eval_split", "test"))),
    ]
    tests = read_jsonl(run_dir / TEST_FILE)
    if len(tests) >= 2:  # before and after (the first team's, for a warm start of several)
        line = held_out_line(tests[0], tests[-1]).removeprefix("held-out test success ")
        summary.append((f"held-out test success (steps {tests[0]['step']} -> {tests[-1]['step']})", line))
    return {
        "kind": "training run",
        "title": run_dir.resolve().name,
        "summary": [(name, value) for name, value in summary if value is not None],
        "config": flat_items(config),
        "provenance": _provenance(run_dir),
        "charts": _charts(train, evals),
        "last_train": train[-1] if train else None,
        "evaluations": evaluations,
        "evaluation_count": evaluation_count,
        "trees": trees,
        "tree_steps": tree_steps,
        "rollout": config.get("rollout"),
        "warm_start": warm_start,
        "report_trees": config.get("report_trees"),
        "eval_split_text": EVAL_SPLIT_TEXT.get(config.get("eval_split", "test"), "held-out tasks"),
    }
