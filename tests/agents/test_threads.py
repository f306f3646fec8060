"""The thread policy: how many torch threads for a given allotment and competing load."""

from __future__ import annotations

import os

import pytest

from agents.threads import THREAD_ENV_VARS, THREADS_ENV, choose_threads, configure_threads, thread_env
from envs.cpus import CpuAllotment

TWO = CpuAllotment(count=2, cpus=(0, 1), source="affinity")
EIGHT = CpuAllotment(count=8, cpus=tuple(range(8)), source="affinity")
QUOTA = CpuAllotment(count=3, cpus=tuple(range(16)), source="cgroup quota")


@pytest.fixture(autouse=True)
def automatic(monkeypatch):
    """The suite pins TEAMGYM_THREADS (tests/conftest.py); these tests are about the choice itself."""
    monkeypatch.delenv(THREADS_ENV, raising=False)


@pytest.mark.parametrize(
    ("allotted", "busy", "threads"),
    [
        (TWO, 0.0, 2),  # idle: one per allotted CPU
        (TWO, 0.1, 2),  # a shell or a monitor does not cost a thread
        (TWO, 1.0, 1),  # one core busy: the case where 2 threads collapsed
        (TWO, 0.8, 1),
        (TWO, 2.0, 1),  # never fewer than one
        (EIGHT, 3.0, 5),
        (QUOTA, 0.0, 3),  # the cgroup quota, not the host's 16 CPUs
    ],
)
def test_automatic_threads_are_the_free_allotted_cpus(allotted, busy, threads):
    assert choose_threads(allotted=allotted, busy=busy).threads == threads


def test_an_explicit_count_is_used_as_given_and_warned_about_when_too_many():
    choice = choose_threads(2, allotted=TWO, busy=1.0)
    assert choice.threads == 2 and choice.oversubscribed
    assert "2 threads (--threads" in choice.warning() and "pass --threads 1" in choice.warning()
    assert choose_threads(1, allotted=TWO, busy=1.0).warning() is None
    assert "threads: 1 (as configured" in choose_threads(1, allotted=TWO, busy=0.0).describe()


def test_auto_warns_only_when_less_than_a_core_is_left():
    assert choose_threads(allotted=TWO, busy=1.0).warning() is None
    warning = choose_threads(allotted=TWO, busy=1.9).warning()
    assert warning and "oversubscribed" in warning and "1.9 of 2 CPUs" in warning
    assert "auto" in choose_threads(allotted=TWO, busy=0.0).describe()


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_bad_thread_counts_are_refused(bad):
    with pytest.raises(ValueError, match="threads"):
        choose_threads(bad, allotted=TWO, busy=0.0)


def test_configure_sets_torch_and_the_environment_children_inherit(monkeypatch):
    import torch

    before = torch.get_num_threads()
    for name in THREAD_ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    try:
        choice = configure_threads(choice=choose_threads(1, allotted=TWO, busy=0.0))
        assert choice.threads == 1 and torch.get_num_threads() == 1
        assert all(os.environ[name] == "1" for name in THREAD_ENV_VARS)
    finally:
        torch.set_num_threads(before)
    assert thread_env(3) == {name: "3" for name in THREAD_ENV_VARS}


def test_choosing_on_the_real_machine_measures_it():
    choice = choose_threads()
    assert 1 <= choice.threads <= choice.allotted.count and choice.busy >= 0.0


def test_the_environment_variable_sets_the_count_where_no_flag_does(monkeypatch):
    monkeypatch.setenv(THREADS_ENV, "3")
    assert choose_threads(allotted=TWO, busy=0.0).threads == 3
    assert choose_threads(1, allotted=TWO, busy=0.0).threads == 1  # the flag wins
    monkeypatch.setenv(THREADS_ENV, "two")
    with pytest.raises(ValueError, match="TEAMGYM_THREADS='two' must be an integer >= 1"):
        choose_threads(allotted=TWO, busy=0.0)


def test_a_command_turns_a_bad_variable_into_a_config_error(monkeypatch):
    from trainers.backends import apply_thread_policy
    from trainers.errors import ConfigError

    monkeypatch.setenv(THREADS_ENV, "0")
    with pytest.raises(ConfigError, match="TEAMGYM_THREADS='0'"):
        apply_thread_policy(None, print)
    said = []
    monkeypatch.setenv(THREADS_ENV, "1")
    assert apply_thread_policy(None, said.append) == 1
    assert said and said[0].startswith("threads: 1 (as configured")
