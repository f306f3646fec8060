"""The commands' entry-point wrapper (trainers/errors.py): a ConfigError is one stderr line and
exit status 2; ``--debug`` or ``TEAMGYM_DEBUG=1`` shows its traceback instead."""

from __future__ import annotations

import pytest

from trainers.errors import DEBUG_ENV, ConfigError, debug_requested, run_command


def failing(args: list[str]) -> None:
    raise ConfigError("lr=-1 must be > 0;\n  pass e.g. --lr 1e-3")


def test_a_config_error_is_one_line_and_exit_status_2(capsys, monkeypatch):
    monkeypatch.delenv(DEBUG_ENV, raising=False)
    with pytest.raises(SystemExit) as exit_info:
        run_command("python -m tool", ["--lr", "-1"], failing)
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == "python -m tool: error: lr=-1 must be > 0; pass e.g. --lr 1e-3\n"


def test_the_body_gets_the_command_line_without_debug(monkeypatch):
    monkeypatch.delenv(DEBUG_ENV, raising=False)
    assert run_command("tool", ["--steps", "2", "--debug"], lambda args: args) == ["--steps", "2"]
    monkeypatch.setattr("sys.argv", ["tool", "--debug", "--lr", "1"])
    assert run_command("tool", None, lambda args: args) == ["--lr", "1"]


@pytest.mark.parametrize(("argv", "env"), [(["--debug"], None), ([], "1"), ([], "yes")])
def test_debug_reraises_with_the_traceback(monkeypatch, argv, env):
    if env is None:
        monkeypatch.delenv(DEBUG_ENV, raising=False)
    else:
        monkeypatch.setenv(DEBUG_ENV, env)
    with pytest.raises(ConfigError, match="lr=-1"):
        run_command("tool", argv, failing)


@pytest.mark.parametrize("value", ["", "0", "false", "off"])
def test_debug_env_values_that_mean_off(monkeypatch, value):
    monkeypatch.setenv(DEBUG_ENV, value)
    assert not debug_requested(["--lr", "1"])
    assert debug_requested(["--debug"])


def test_other_exceptions_are_not_hidden(monkeypatch):
    monkeypatch.delenv(DEBUG_ENV, raising=False)

    def bug(args: list[str]) -> None:
        raise KeyError("a bug, not a user mistake")

    with pytest.raises(KeyError):
        run_command("tool", [], bug)
