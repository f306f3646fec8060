"""``envs.check_env`` and ``python -m envs.check``: the README example passes, deliberately
broken envs are reported (each by the check that catches it, with what was seen), never
crashed on. The conformance suite (test_conformance.py) runs the same checks on every env."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest
from gymnasium import spaces

import envs
from envs.check import CHECKS, check_env
from envs.parsing import extract_answer
from envs.splits import generate_in_split
from tests.conftest import SUBPROCESS_TIMEOUT_S
from tests.envs.conftest import import_readme_example


class CountEnv(envs.TextAECEnv):
    """A small correct env: reach the task's target count by answering <answer>+</answer>."""

    metadata = {**envs.TextAECEnv.metadata, "name": "count_v0"}
    TEAMS = {"mas": ("caller", "counter"), "single": ("counter",)}
    DEFAULT_MAX_CYCLES = 6

    def _start_task(self, task_seed):
        self.target = generate_in_split(task_seed, lambda rng: int(rng.integers(2, 500)), str)
        self.count = 0

    def _prompt(self, agent):
        return f"Count to {self.target}; now at {self.count}. Answer <answer>+</answer>."

    def _act(self, agent, text):
        if extract_answer(text) != "+":
            return envs.StepOutcome(invalid=True, feedback="Answer <answer>+</answer>.")
        self.count += 1
        done = self.count >= self.target
        return envs.StepOutcome(team={"count": 0.1}, terminated=done, success=done, feedback="Counted.")

    def _legal_moves(self, agent):
        return ["+"]

    def _state_key(self):
        return (self.target, self.count)

    def _render_text(self):
        return f"{self.count}/{self.target}"


_SHARED = spaces.Dict({"prompt": spaces.Text(100)})


class SharedSpaceEnv(CountEnv):
    def observation_space(self, agent):  # one space object for every env and agent
        return _SHARED


class NondeterministicEnv(CountEnv):
    def _start_task(self, task_seed):
        super()._start_task(task_seed)
        self.target = random.randint(2, 10_000)  # the global RNG, not the seed


class LeakyEnv(CountEnv):
    def _start_task(self, task_seed):
        self.target, self.count = 2 + task_seed % 7, 0  # the same 7 tasks in both splits


class CrashingEnv(CountEnv):
    def _legal_moves(self, agent):
        if self.num_steps:
            raise KeyError("count")  # a hook that crashes once anyone has answered
        return ["+"]


def statuses(report):
    return {(r.team, r.check): r.status for r in report.results}


def failed(report):
    return {r.check for r in report.failures}


def test_a_correct_env_passes_every_check_and_skips_the_oracle():
    report = check_env(CountEnv)
    assert report.passed, str(report)
    assert set(statuses(report)) == {(t, c) for t in ("mas", "single") for c in CHECKS}
    assert statuses(report)[("mas", "oracle")] == "skip"
    assert "no oracle_response" in str(report)
    report.raise_for_failures()


def test_shared_spaces_are_reported():
    report = check_env(SharedSpaceEnv, teams=["mas"])
    assert "independent_objects" in failed(report)
    assert "shared by two envs" in str(report)


def test_a_nondeterministic_reset_is_reported():
    report = check_env(NondeterministicEnv, teams=["single"])
    assert {"seed", "determinism"} <= failed(report)
    assert "global random modules" in str(report)


def test_a_split_leak_is_reported():
    report = check_env(LeakyEnv, teams=["single"])
    assert failed(report) == {"split_disjoint"}
    assert "also appear in train" in str(report) and "generate_in_split" in str(report)


def test_a_crashing_hook_is_reported_with_where_it_crashed():
    report = check_env(CrashingEnv, teams=["single"])
    assert "api" in failed(report) and "clone" in failed(report)
    crash = next(r for r in report.failures if r.check == "clone")
    assert crash.detail.startswith("KeyError: 'count'") and "in _legal_moves" in crash.detail
    with pytest.raises(AssertionError, match="not conformant"):
        report.raise_for_failures()


def test_the_test_split_is_checked_with_pettingzoos_tools():
    report = check_env(CountEnv, split="test", teams=["mas"], checks=["api", "seed", "split_seeds"])
    assert report.passed, str(report)


def test_bad_arguments_name_the_choices():
    with pytest.raises(ValueError, match="unknown checks"):
        check_env(CountEnv, checks=["nope"])
    with pytest.raises(ValueError, match="has no team"):
        check_env(CountEnv, teams=["trio"])
    with pytest.raises(ValueError, match="split must be one of"):
        check_env(CountEnv, split="dev")


def test_the_readme_example_passes_every_check_from_the_command_line(tmp_path):
    import_readme_example(tmp_path)
    assert check_env("mylab/guess", env_kwargs={"difficulty": "hard"}).passed
    run = subprocess.run(
        [sys.executable, "-m", "envs.check", "guess_env:mylab/guess"],
        cwd=tmp_path,  # the module is found in the working directory, as docs/envs.md says
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(Path(__file__).resolve().parents[2]), "PATH": "/usr/bin:/bin"},
        timeout=SUBPROCESS_TIMEOUT_S,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"{2 * len(CHECKS)} passed, 0 failed, 0 skipped" in run.stdout
    assert "PASS  oracle" in run.stdout and "(easy, hard)" in run.stdout


def test_the_command_line_reports_failures_and_bad_modules(tmp_path):
    (tmp_path / "leaky_env.py").write_text(
        "import envs\nfrom tests.envs.test_check import LeakyEnv\nenvs.register('test/leaky-v0', LeakyEnv)\n"
    )
    repo = str(Path(__file__).resolve().parents[2])
    env = {"PYTHONPATH": f"{repo}:{tmp_path}", "PATH": "/usr/bin:/bin"}
    run = subprocess.run(
        [sys.executable, "-m", "envs.check", "leaky_env:test/leaky", "--team", "single"],
        capture_output=True,
        text=True,
        env=env,
        timeout=SUBPROCESS_TIMEOUT_S,
    )
    assert run.returncode == 1 and "FAIL  split_disjoint" in run.stdout
    missing = subprocess.run(
        [sys.executable, "-m", "envs.check", "no_such_module:test/leaky"],
        capture_output=True,
        text=True,
        env=env,
        timeout=SUBPROCESS_TIMEOUT_S,
    )
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1
    assert "no module 'no_such_module'" in missing.stderr
