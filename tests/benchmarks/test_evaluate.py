"""``python -m benchmarks.evaluate``: suites, baseline rows, mixed teams, pass@k, difficulty
columns, split hygiene, reproducibility, the files it writes, the real model (checkpoints:
test_evaluate_checkpoints.py)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

import envs
from benchmarks.eval_config import ConfigError, EvalConfig
from benchmarks.evaluate import main, run_evaluation, select_columns
from tests.conftest import SUBPROCESS_TIMEOUT_S
from tests.envs.conftest import import_readme_example
from trainers.cli import field_docs

pytestmark = pytest.mark.memory(gb=1)  # measured 0.92 GB added on a fresh worker (vLLM: its own module)


PLANNING = ["plan_path-v2", "sokoban-v2", "sudoku-v1"]


def tiny(tmp_path, *args, name="run"):
    """Command-line args of a quick evaluation with the tiny model."""
    base = f"--model tiny-test --episodes 3 --seeds 0 1 --max-new-tokens 2 --no-progress --run-name {name}"
    return [*base.split(), "--output-dir", str(tmp_path), *args]  # later options win


def per_seed(results):
    """Every cell's per-seed metrics, comparable with == (NaN, e.g. no turns to success, as None)."""
    return {(c.row, c.column.label): json.dumps(c.per_seed, sort_keys=True) for c in results.cells}


@pytest.fixture(scope="module")
def planning(tmp_path_factory):
    out = tmp_path_factory.mktemp("eval")
    return main(tiny(out, "--suite", "planning", "--team", "mas"))


# ---------------------------------------------------------------------------- the suite
def test_planning_suite_rows_columns_and_baselines(planning, capsys):
    assert [c.env_id for c in planning.columns] == PLANNING
    assert planning.rows == ["random mas", "oracle mas", "tiny-test single", "tiny-test mas"]
    for env_id in PLANNING:
        oracle = planning.cell("oracle mas", env_id, "easy")
        random = planning.cell("random mas", env_id, "easy")
        assert oracle.mean["success"] == 1.0 and oracle.mean["invalid_rate"] == 0.0
        assert random.mean["success"] < 0.5  # random legal moves rarely solve a level
        assert oracle.seeds == [0, 1] and len(oracle.per_seed) == 2
        model = planning.cell("tiny-test mas", env_id, "easy")
        assert model.mean["tokens_per_episode"] > 0 and "return/planner" in model.mean
        assert "return/solver" in planning.cell("tiny-test single", env_id, "easy").mean


def test_seeds_play_disjoint_held_out_task_blocks(planning):
    cell = planning.cell("oracle mas", "sokoban")
    assert cell.tasks == [envs.heldout_seeds(3), envs.heldout_seeds(3, start=3)]


def test_results_files(planning):
    out = planning.out_dir
    data = json.loads((out / "results.json").read_text())
    assert data["config"]["suite"] == "planning" and data["config"]["episodes"] == 3
    assert (
        data["command"].startswith("python -m benchmarks.evaluate ") and "--suite planning" in data["command"]
    )
    assert data["versions"]["torch"] and data["versions"]["pettingzoo"] and data["versions"]["python"]
    assert data["models"]["model"]["name"] == "tiny-test"
    assert data["envs"]["sokoban-v2 (easy)"]["id"] == "sokoban-v2"
    assert data["envs"]["sokoban-v2 (easy)"]["kwargs"] == {"difficulty": "easy", "max_cycles": 2}
    assert data["protocol"]["split"] == "test" and data["complete"] is True
    assert len(data["cells"]) == 4 * 3
    oracle = next(c for c in data["cells"] if c["row"] == "oracle mas" and c["env"] == "sudoku-v1")
    assert oracle["mean"]["success"] == 1.0 and len(oracle["per_seed"]) == 2
    assert oracle["mean"]["turns_to_success"] >= 1.0
    unsolved = next(c for c in data["cells"] if c["row"] == "tiny-test mas" and c["env"] == "sudoku-v1")
    assert unsolved["mean"]["turns_to_success"] is None  # NaN is written as null
    markdown = (out / "results.md").read_text()
    assert "### success rate" in markdown and "| oracle mas | 1.000 ± 0.000 [± 0.000] |" in markdown
    assert "fewer than the 256 a headline number needs" in markdown  # 2 seeds x 3 tasks
    assert "| team | plan_path-v2 (easy) | sokoban-v2 (easy) | sudoku-v1 (easy) |" in markdown
    for plot in ("success", "invalid_rate", "tokens_per_episode"):
        assert (out / "plots" / f"{plot}.png").stat().st_size > 1000
    assert len(list((out / "transcripts").glob("*.md"))) == 12


def test_split_validation_plays_blocks_of_the_validation_slice(tmp_path):
    config = EvalConfig(
        env=("sokoban",), model="tiny-test", baselines=("oracle",), split="validation", episodes=2,
        seeds=(0, 1), progress=False, output_dir=str(tmp_path), run_name="val",
    )  # fmt: skip
    results = run_evaluation(config)
    cell = results.cell("oracle mas", "sokoban")
    assert cell.tasks == [envs.validation_seeds(2), envs.validation_seeds(2, start=2)]
    assert cell.mean["success"] == 1.0 and cell.mean["success_se"] == 0.0
    protocol = json.loads((results.out_dir / "results.json").read_text())["protocol"]
    assert protocol["split"] == "validation" and protocol["first_task_index"] == 0
    assert "validation-slice tasks" in results.markdown and "headline" not in results.markdown


def test_same_seeds_same_numbers(planning, tmp_path):
    quick = dict(model="tiny-test", episodes=3, max_new_tokens=2, progress=False, output_dir=str(tmp_path))
    again = run_evaluation(EvalConfig(suite="planning", seeds=(0, 1), **quick))
    assert per_seed(again) == per_seed(planning)
    other = run_evaluation(EvalConfig(env=("sokoban",), seeds=(2,), **quick))
    assert other.cell("oracle mas", "sokoban", "easy").tasks == [envs.heldout_seeds(3, start=6)]


def test_the_table_is_printed(tmp_path, capsys):
    main(tiny(tmp_path, "--env", "plan_path", "--baselines", "oracle"))
    printed = capsys.readouterr().out
    assert "### success rate" in printed and "| oracle mas |" in printed and "results.json" in printed


def test_an_interrupted_evaluation_keeps_its_finished_cells(tmp_path, monkeypatch, capsys):
    import benchmarks.evaluate as evaluate

    real, calls = evaluate._run_cell, []

    def interrupted_after_two(*args, **kwargs):
        if len(calls) == 2:
            raise KeyboardInterrupt
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(evaluate, "_run_cell", interrupted_after_two)
    with pytest.raises(SystemExit) as exit_info:
        main(tiny(tmp_path, "--env", "sokoban"))
    assert exit_info.value.code == 130 and "finished cells are in results.json" in capsys.readouterr().err
    data = json.loads((tmp_path / "run" / "results.json").read_text())
    assert data["complete"] is False and [c["row"] for c in data["cells"]] == ["random mas", "oracle mas"]


# ---------------------------------------------------------------------------- team rows
def test_roles_mix_policies_in_one_flag(tmp_path):
    args = ("--env", "plan_path", "--baselines", "--roles", "planner=random", "executor=oracle")
    results = main(tiny(tmp_path, *args))
    assert results.rows == ["mas (executor=oracle, planner=random)"]
    cell = results.cell(results.rows[0], "plan_path", "easy")
    assert cell.mean["success"] == 1.0  # the executor's moves decide; the planner only advises
    assert cell.mean["tokens_per_episode"] == 0.0  # no model played
    swapped = main(tiny(tmp_path, *args[:3], "--roles", "planner=oracle", "executor=random", name="swapped"))
    assert swapped.cell(swapped.rows[0], "plan_path", "easy").mean["success"] < 1.0
    # The label says what played each role: no model name when no model played.
    assert swapped.rows == ["mas (executor=random, planner=oracle)"]
    half = main(tiny(tmp_path, *args[:3], "--roles", "planner=oracle", name="half"))
    assert half.rows == ["tiny-test mas (planner=oracle)"]  # the model plays the executor


def test_per_role_reply_length_reaches_the_evaluation(tmp_path):
    args = ("--env", "plan_path", "--baselines", "--seeds", "0", "--max-new-tokens", "6")
    results = main(tiny(tmp_path, *args, "--max-new-tokens", "executor=1"))
    recorded = json.loads((results.out_dir / "results.json").read_text())["config"]
    assert recorded["role_max_new_tokens"] == {"executor": 1}
    episodes = [json.loads(line) for path in results.out_dir.rglob("*.jsonl") for line in path.open()]
    turns = [turn for episode in episodes for turn in episode.get("turns", [])]
    replies = [(turn["role"], turn["response"].removeprefix("<answer>")) for turn in turns]
    lengths = {role: max(len(text) for r, text in replies if r == role) for role in ("planner", "executor")}
    assert lengths["executor"] <= 1 < lengths["planner"]  # a tiny-test token decodes to one character


def test_rows_that_cannot_play_an_env_are_na(tmp_path):
    # Imported here, not at module level: importing it registers test envs, which must not
    # join the conformance suite's env list when pytest collects this file first.
    from tests.trainers.conftest import EvenPlanEnv

    class SuiteEnv(EvenPlanEnv):  # no oracle, no sizes, in a suite of its own
        metadata = {**EvenPlanEnv.metadata, "name": "suite_env_v0", "suite": "testsuite"}

    envs.register("test/suite_env-v0", SuiteEnv)
    results = main(tiny(tmp_path, "--suite", "testsuite", "--max-new-tokens", "1"))
    assert [c.env_id for c in results.columns] == ["test/suite_env-v0"]  # found through its metadata
    assert "exact solver" in results.cell("oracle mas", "test/suite_env").skipped
    assert results.cell("tiny-test mas", "test/suite_env").skipped is None
    assert "| oracle mas | n/a |" in results.markdown
    assert "- oracle mas on test/suite_env-v0: SuiteEnv has no exact solver" in results.markdown


def test_the_readme_example_env_is_evaluated_like_a_built_in(tmp_path):
    import_readme_example(tmp_path)
    results = main(tiny(tmp_path, "--env", "guess_env:mylab/guess", "--max-new-tokens", "16"))
    assert [c.label for c in results.columns] == ["mylab/guess-v0 (easy)"]  # its TRAINING preset's size
    assert results.cell("oracle mas", "mylab/guess").mean["success"] == 1.0  # its oracle_response
    for row in ("random mas", "tiny-test single", "tiny-test mas"):
        assert results.cell(row, "mylab/guess").skipped is None
        assert 0.0 <= results.cell(row, "mylab/guess").mean["success"] <= 1.0


def test_an_imported_modules_env_joins_its_suite(tmp_path):
    import_readme_example(tmp_path)
    results = main(tiny(tmp_path, "--suite", "games", "--import", "guess_env", "--baselines", "oracle"))
    assert "mylab/guess-v0" in [c.env_id for c in results.columns]  # found through metadata["suite"]
    assert results.cell("oracle mas", "mylab/guess").mean["success"] == 1.0


def test_an_unimportable_env_module_is_one_line_naming_the_fix(tmp_path, capsys):
    for args in (
        ["--env", "no_such_module:mylab/guess"],
        ["--suite", "games", "--imports", "no_such_module"],
    ):
        with pytest.raises(SystemExit) as exit_info:
            main(tiny(tmp_path, *args))
        assert exit_info.value.code == 2
        error = capsys.readouterr().err.strip()
        assert len(error.splitlines()) == 1, error
        assert "no module 'no_such_module'" in error and "PYTHONPATH" in error


# ---------------------------------------------------------------------------- pass@k, difficulty
def test_samples_give_pass_at_k(tmp_path):
    args = ("--env", "sokoban", "--samples", "4", "--temperature", "1.0", "--baselines", "random")
    results = main(tiny(tmp_path, *args))
    mean = results.cell("random mas", "sokoban", "easy").mean
    assert {"pass@1", "pass@2", "pass@4", "avg@4"} <= set(mean)
    assert mean["pass@1"] == pytest.approx(mean["success"]) and mean["avg@4"] == mean["success"]
    assert mean["pass@1"] <= mean["pass@2"] <= mean["pass@4"]
    assert "### pass@4 (unbiased estimator)" in results.markdown
    assert (results.out_dir / "plots" / "pass_at_k.png").is_file()


def test_every_difficulty_is_a_column(tmp_path):
    results = main(tiny(tmp_path, "--env", "sokoban", "--difficulty", "all", "--baselines", "oracle",
                        "--episodes", "2", "--seeds", "0", "--max-new-tokens", "1"))  # fmt: skip
    assert [c.difficulty for c in results.columns] == ["easy", "medium", "hard"]
    for difficulty in ("easy", "medium", "hard"):
        assert results.cell("oracle mas", "sokoban", difficulty).mean["success"] == 1.0
    header = json.loads((results.out_dir / "results.json").read_text())["envs"]
    assert header["sokoban-v2 (easy)"]["max_cycles"] == 2  # the trainer preset's horizon
    assert header["sokoban-v2 (hard)"]["max_cycles"] == envs.spec("sokoban").default_max_cycles  # long enough
    assert (results.out_dir / "plots" / "difficulty.png").is_file()
    assert math.isnan(results.cell("oracle mas", "sokoban", "hard").se["success"])  # one seed: no s.e.


# ---------------------------------------------------------------------------- errors
def test_help_lists_every_field_and_group(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for name, doc in field_docs(EvalConfig).items():
        option = name.replace("_", "-")
        assert f"--{option}" in text or f"--[no-]{option}" in text  # one spelling per flag
        assert doc.doc.replace("``", "").split()[0] in text
    for group in ("envs:", "team:", "sampling:", "output:"):
        assert group in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "exactly one of --env"),
        (["--env", "sokoban", "--suite", "planning"], "exactly one of --env"),
        (["--suite", "nosuchsuite"], "suites with envs: alfworld, code, "),
        (["--env", "sokobann"], "Did you mean"),
        (["--env", "sokoban", "--split", "train"], "only plays held-out tasks"),
        (["--env", "sokoban", "--split", "validation", "--task-seeds", "1000000000"], "drop --task-seeds"),
        (["--env", "sokoban", "--task-seeds", "5"], "evaluation never plays training tasks"),
        (["--env", "sokoban", "--difficulty", "extreme"], "not a preset of sokoban-v2"),
        (["--env", "sokoban", "--samples", "4", "--temperature", "0"], "identical greedy"),
        (["--env", "sokoban", "--roles", "planner=wizard"], "ROLE=POLICY"),
        (["--env", "sokoban", "--baselines", "bogus"], "baselines ['bogus'] are unknown"),
        (["--env", "sokoban", "--seeds"], "seeds is empty"),
        (["--env", "sokoban", "--env-kwargs", '{"split": "train"}'], "may not set 'split'"),
        (["--env", "sokoban", "--adapters", "/nonexistent/run"], "not a training run"),
    ],
)
def test_config_errors_exit_2_with_the_fix(tmp_path, capsys, args, message):
    argv = [*args, "--model", "tiny-test", "--no-progress", "--output-dir", str(tmp_path)]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_the_env_or_suite_error_lists_every_registered_suite(tmp_path, capsys):
    # it listed "(planning, math, code, all)" long after games, alfworld and webshop joined
    with pytest.raises(SystemExit):
        main(["--model", "tiny-test", "--no-progress", "--output-dir", str(tmp_path)])
    listed = capsys.readouterr().err.split("--suite NAME (")[1].split(")")[0].split(", ")
    assert {"alfworld", "code", "games", "math", "planning", "webshop", "all"} <= set(listed)


# Mistakes that used to end in a traceback (or, for an unknown role, in an all-n/a table).
MISTAKES = {
    "unknown env kwarg": (["--env-kwargs", '{"nope": 1}'], ["--env-kwargs", "'nope'", "max_cycles, "]),
    "env kwarg of a wrong type": (["--env-kwargs", '{"alpha": "x"}'], ["--env-kwargs", "alpha", "number"]),
    "bad env kwarg value": (["--env-kwargs", '{"prompt_style": "poem"}'], ["--env-kwargs", "prompt_style"]),
    "negative max_cycles": (["--env-kwargs", '{"max_cycles": -1}'], ["max_cycles", "--env-kwargs"]),
    "max_cycles of a wrong type": (["--env-kwargs", '{"max_cycles": "x"}'], ["max_cycles", "--env-kwargs"]),
    "output dir under a file": (["--output-dir", "{file}/sub"], ["--output-dir", "is a file"]),
    "nonexistent model path": (["--model", "/nonexistent/model"], ["--model", "no such directory"]),
    "hub id not in the cache": (["--model", "teamgym-tests/nope"], ["--model", "not available offline"]),
    "unknown role": (["--roles", "pilot=oracle"], ["roles", "'pilot'", "planner, executor"]),
    "unknown role of the single team": (["--team", "single", "--roles", "pilot=oracle"], ["solver"]),
    "per-role reply length of an unknown role": (["--max-new-tokens", "pilot=9"], ["'pilot'", "executor"]),
    "per-role temperature < 0": (["--temperature", "executor=-1"], ["role_temperature", "--temperature"]),
}


@pytest.mark.parametrize("name", list(MISTAKES))
def test_command_line_mistakes_are_one_line_naming_the_field(tmp_path, capsys, monkeypatch, name):
    args, needles = MISTAKES[name]
    monkeypatch.delenv("TEAMGYM_DEBUG", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the hub id check must not wait for a network
    (tmp_path / "a_file").write_text("")
    args = [arg.replace("{file}", str(tmp_path / "a_file")) for arg in args]
    with pytest.raises(SystemExit) as exit_info:
        main(tiny(tmp_path / "out", "--env", "sokoban", *args))
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert len(error.strip().splitlines()) == 1, error
    assert error.startswith("python -m benchmarks.evaluate: error: ")
    for needle in needles:
        assert needle in error, (needle, error)
    assert not (tmp_path / "out" / "run").exists()  # nothing written


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc")
def test_an_output_dir_that_cannot_be_created_is_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(tiny(tmp_path, "--env", "sokoban", "--output-dir", "/proc/teamgym-no"))
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert len(error.strip().splitlines()) == 1 and "--output-dir /proc/teamgym-no" in error


def test_a_role_some_envs_have_is_na_on_the_others(tmp_path):
    even_team = "tests.trainers.conftest:test/even_team"  # roles leader, follower
    args = ("--env", "sokoban", even_team, "--baselines", "--roles", "planner=oracle", "executor=oracle")
    results = main(tiny(tmp_path, *args, "--max-new-tokens", "1", "--episodes", "1", "--seeds", "0"))
    assert results.cell(results.rows[0], "sokoban").mean["success"] == 1.0
    assert "not roles of this env team" in results.cell(results.rows[0], "test/even_team").skipped


def run_module(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    command = [sys.executable, "-m", "benchmarks.evaluate", *args]
    return subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT_S
    )


def test_the_command_shows_a_traceback_only_with_debug(tmp_path, monkeypatch):
    monkeypatch.delenv("TEAMGYM_DEBUG", raising=False)
    args = tiny(tmp_path, "--env", "sokoban", "--roles", "pilot=oracle")
    quiet = run_module(args, tmp_path)
    assert quiet.returncode == 2 and "Traceback" not in quiet.stderr
    assert quiet.stderr.count("\n") == 1 and "'pilot'" in quiet.stderr
    loud = run_module([*args, "--debug"], tmp_path)
    assert loud.returncode == 1 and "Traceback" in loud.stderr and "ConfigError" in loud.stderr
    monkeypatch.setenv("TEAMGYM_DEBUG", "1")
    by_env = run_module(args, tmp_path)
    assert by_env.returncode == 1 and "Traceback" in by_env.stderr


def test_an_evaluation_releases_its_models_when_it_ends(tmp_path, monkeypatch):
    """The models' close() runs (a vLLM policy shuts its engines down), so an evaluation in a
    process that goes on leaves no engine behind."""
    import benchmarks.eval_teams as eval_teams

    released = []
    monkeypatch.setattr(eval_teams, "close_policies", lambda policies: released.extend(policies))
    main(tiny(tmp_path, "--env", "plan_path", "--team", "mas", "--seeds", "0", "--episodes", "1"))
    assert [type(p).__name__ for p in released] == ["HFPolicy"]  # the base model, once


def test_select_columns_takes_the_latest_version():
    columns = select_columns(EvalConfig(env=("sokoban", "plan_path-v0")))
    assert [(c.env_id, c.difficulty) for c in columns] == [("sokoban-v2", "easy"), ("plan_path-v0", "easy")]
    with pytest.raises(ConfigError):
        EvalConfig(env=("sokoban",), task_seeds=(1,))


# ---------------------------------------------------------------------------- real model
@pytest.mark.slow
def test_default_model_on_sokoban(tmp_path):
    results = main(["--env", "sokoban", "--episodes", "2", "--seeds", "0", "1", "--baselines", "random",
                    "--no-progress", "--output-dir", str(tmp_path)])  # fmt: skip
    mean = results.cell("smollm2-135m-instruct mas", "sokoban", "easy").mean
    assert 0.0 <= mean["success"] <= 1.0 and 0.0 <= mean["invalid_rate"] <= 1.0
    assert mean["tokens_per_episode"] > 0
    identity = json.loads((results.out_dir / "results.json").read_text())["models"]["model"]
    assert identity["path"].endswith("smollm2-135m-instruct") and len(identity["weights_sha256"]) == 16


def test_a_game_gets_a_win_draw_loss_table_and_a_one_seed_note(tmp_path):
    config = EvalConfig(
        env=("tictactoe",),
        roles=("first=oracle", "second=random"),
        baselines=("oracle",),
        episodes=8,
        seeds=(0,),
        progress=False,
        output_dir=str(tmp_path),
    )
    results = run_evaluation(config)
    markdown = (results.out_dir / "results.md").read_text()
    assert "### win / draw / loss per seat" in markdown
    assert "| oracle mas | first 0." in markdown and "second 0.00/" in markdown  # minimax never loses
    assert "One seed (0), so no standard error" in markdown  # and no "mean ± s.e." claim
    data = json.loads((results.out_dir / "results.json").read_text())
    assert data["config"]["threads"] >= 1  # the thread count the evaluation ran with is recorded
    cell = next(c for c in data["cells"] if c["row"] == "oracle mas")
    assert cell["mean"]["loss/first"] == 0.0 and cell["mean"]["win/second"] == 0.0


def test_kuhn_cells_get_the_exact_exploitability_of_the_first_seats_policy(tmp_path):
    config = EvalConfig(
        env=("kuhn_poker",),
        roles=("first=random", "second=oracle"),
        baselines=("oracle",),
        episodes=4,
        seeds=(0, 1),
        samples=64,
        temperature=1.0,
        progress=False,
        output_dir=str(tmp_path),
    )
    results = run_evaluation(config)
    markdown = (results.out_dir / "results.md").read_text()
    assert "### Kuhn poker: exploitability of the first seat's policy" in markdown
    random_row = results.cell("mas (first=random, second=oracle)", "kuhn_poker")
    # 64 uniform replies per information set estimate the uniform table (exactly 0.458).
    assert random_row.mean["exploitability"] == pytest.approx(0.458, abs=0.06)
    assert random_row.mean["chips_vs_nash"] < -0.05
    oracle = results.cell("oracle mas", "kuhn_poker")
    assert oracle.mean["chips_vs_nash"] > random_row.mean["chips_vs_nash"]
    assert oracle.mean["probe_invalid_rate"] == 0.0


def test_a_baseline_of_a_team_no_column_has_is_left_out(tmp_path):
    config = EvalConfig(
        env=("tictactoe",),
        roles=("first=heuristic", "second=random"),
        baselines=("random", "single"),
        episodes=8,  # a heuristic first seat draws some games against random: 2 tasks are too few to judge
        seeds=(0,),
        progress=False,
        output_dir=str(tmp_path),
    )
    results = run_evaluation(config)
    assert results.rows == ["random mas", "mas (first=heuristic, second=random)"]  # no 'single' row
    assert results.cell(results.rows[1], "tictactoe").mean["win/first"] > 0.5
