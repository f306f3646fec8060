"""Conformance suite: every registered env (and docs/envs.md's user env), both teams, both splits.

The checks are ``envs.check.CHECKS``, the same ones ``envs.check_env`` and ``python -m
envs.check`` run for a third-party env: one definition of conformant. Each (env, team,
split, check) is one test, so a failure names exactly what broke. Below them, a deeper
hypothesis fuzz and the split error messages.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import envs
from envs.check import CHECKS, run_check, subjects
from envs.checks import step_texts
from envs.games.spiel import spiel_available
from tests.conftest import SUBPROCESS_TIMEOUT_S
from tests.envs.conftest import import_readme_example

import_readme_example()

# Every env's data and engines (WebShop's catalog and index, ALFWorld, OpenSpiel) load here:
# CI measured 699 MB added on a fresh worker (2026-11-28); ~110 MB after other env modules.
pytestmark = pytest.mark.memory(gb=1)

BUILTIN_IDS = (
    "sokoban-v0",
    "plan_path-v0",
    "sudoku-v0",
    "math-v0",
    "code-v0",
    "tictactoe-v0",
    "referential-v0",
)
# Every registered env except the trainer tests' fixtures (namespace test/: a one-character
# task where every reply is valid is a learning fixture, not an env for users), whichever
# test module registered them before this one was collected.
ENV_IDS = [env_id for env_id in envs.registered_ids() if not env_id.startswith("test/")]
# Envs of an optional extra (OpenSpiel) are checked where it is installed (always in CI).
SPIEL_READY = spiel_available() or os.environ.get("TEAMGYM_REQUIRE_SPIEL") == "1"
RUNNABLE_IDS = [i for i in ENV_IDS if SPIEL_READY or envs.spec(i).metadata.get("requires") != "spiel"]
SUBJECTS = [
    subject
    for env_id in RUNNABLE_IDS
    for split in ("train", "test")
    for subject in subjects(env_id, split=split)
]


def test_builtin_envs_are_registered():
    assert set(BUILTIN_IDS) <= set(ENV_IDS)
    assert "mylab/guess-v0" in ENV_IDS  # the README example took part


@pytest.mark.parametrize("check", list(CHECKS))
@pytest.mark.parametrize("subject", SUBJECTS, ids=[f"{s.label}-{s.team}-{s.split}" for s in SUBJECTS])
def test_conformance(subject, check):
    result = run_check(check, subject)
    assert result.status != "fail", result.detail
    if check == "oracle" and subject.label in BUILTIN_IDS:
        assert result.status == "pass", "every built-in env has an oracle"


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(texts=st.lists(st.text(max_size=300), min_size=1, max_size=6))
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_hypothesis_fuzzed_action_text_never_raises(env_id, texts):
    for team in envs.spec(env_id).teams:
        env = envs.make(env_id, team=team)
        env.reset(seed=7)
        step_texts(env, texts)  # rewards finite, observations in their space


# ------------------------------------------------------------ split errors
def test_env_refuses_the_other_splits_seeds():
    train_env = envs.make("plan_path")
    with pytest.raises(ValueError, match="split='test'"):
        train_env.reset(seed=envs.TEST_SEED_START + 1)
    test_env = envs.make("plan_path", split="test")
    with pytest.raises(ValueError, match="test seeds start at"):
        test_env.reset(seed=5)
    test_env.reset(seed=envs.TEST_SEED_START + 5)
    assert test_env.infos["planner_0"]["split"] == "test"
    test_env.reset()  # an unseeded reset draws from the env's own split
    assert envs.split_of(test_env.task_seed) == "test"


def test_import_envs_does_not_import_torch():
    code = (
        "import sys, envs\n"
        "for env_id in envs.registered_ids():\n"
        f"    if {SPIEL_READY!r} or envs.spec(env_id).metadata.get('requires') != 'spiel':\n"
        "        envs.make(env_id).reset(seed=0)\n"
        "heavy = [m for m in ('torch', 'transformers', 'vllm') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    repo = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c", code], check=True, cwd=repo, timeout=SUBPROCESS_TIMEOUT_S)
