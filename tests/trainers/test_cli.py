"""Config dataclass -> command line (trainers/cli.py): docs, groups, parsing, errors, JSON round trip."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Literal

import pytest

from trainers.cli import (
    FieldDoc,
    build_parser,
    canonical_argv,
    config_from_dict,
    config_to_dict,
    field_docs,
    parse_overrides,
)

# The toy configs live at module level: field_docs reads their source, get_type_hints their globals.


@dataclass(frozen=True)
class TrainConfig:
    # --- env ---
    env: str = "sokoban"
    """Registered env id (see envs.registered_ids())."""
    env_kwargs: dict = field(default_factory=dict)
    """Extra envs.make() arguments as JSON, e.g. '{"difficulty": "easy"}'."""
    team: Literal["mas", "single"] = "mas"
    """Team variant: 'mas' (one role per agent) or 'single' (one agent does everything)."""
    # --- sampling ---
    num_generations: int = 4
    """K: candidates per node (tree rollouts) or episodes per task (plain rollouts)."""
    temperature: float = 1.0
    """Sampling temperature."""
    max_new_tokens: int | None = None
    """Longest reply in tokens (None: the env preset's)."""
    stop: tuple[str, ...] = ("</answer>",)
    """Stop strings."""
    # --- logging ---
    tensorboard: bool = True
    """Write TensorBoard events when tensorboard is installed."""
    resume: str | None = None
    """Run directory to resume."""


@dataclass(frozen=True)
class EvalConfig(TrainConfig):
    # --- sampling ---
    temperature: float = 0.7
    """Sampling temperature,
    lowered for evaluation."""
    # --- eval ---
    seeds: tuple[int, ...] = (0, 1)
    """Task seeds to evaluate."""
    split: Literal["dev", "test"] | None = None
    """Split to evaluate on (None: the env's default)."""
    warmup_ratio: float = 0.1
    """Share of steps (0.1 = 10%) spent warming up."""


@dataclass(frozen=True)
class Ungrouped:
    seed: int = 0
    """Random seed."""


@dataclass(frozen=True)
class Undocumented:
    lr: float = 1e-5
    """Learning rate."""
    batch_size: int = 8


@dataclass(frozen=True)
class ListField:
    layers: list[str] = field(default_factory=list)
    """Layers to adapt."""


ALIASES = {"num_generations": ["-K"]}


def parse(argv: list[str], cls: type = TrainConfig) -> dict:
    return parse_overrides(cls, argv, prog="train", description="Train a team.", aliases=ALIASES)


def error_of(argv: list[str], capsys: pytest.CaptureFixture[str], cls: type = TrainConfig) -> str:
    """argparse's message for a bad command line, after checking it exits with the usage status."""
    with pytest.raises(SystemExit) as info:
        parse(argv, cls)
    assert info.value.code == 2
    return capsys.readouterr().err


def test_field_docs_reads_docstrings_and_sections():
    docs = field_docs(TrainConfig)
    assert list(docs) == [f.name for f in dataclasses.fields(TrainConfig)]
    assert docs["env"] == FieldDoc("env", "Registered env id (see envs.registered_ids()).")
    assert docs["team"].group == "env"
    assert docs["num_generations"].group == docs["stop"].group == "sampling"
    assert docs["resume"] == FieldDoc("logging", "Run directory to resume.")
    assert field_docs(Ungrouped) == {"seed": FieldDoc("options", "Random seed.")}


def test_field_docs_of_a_subclass_merge_inherited_fields():
    docs = field_docs(EvalConfig)
    assert list(docs) == [f.name for f in dataclasses.fields(EvalConfig)]
    assert docs["env"] == field_docs(TrainConfig)["env"]
    # The subclass's docstring wins, and its two lines are joined into one.
    assert docs["temperature"] == FieldDoc("sampling", "Sampling temperature, lowered for evaluation.")
    assert docs["seeds"] == FieldDoc("eval", "Task seeds to evaluate.")


def test_missing_docstring_is_a_type_error_naming_the_field():
    with pytest.raises(TypeError, match="batch_size"):
        field_docs(Undocumented)
    with pytest.raises(TypeError, match="batch_size"):
        build_parser(Undocumented, prog="x", description="")
    with pytest.raises(TypeError, match="not a dataclass"):
        field_docs(dict)


def test_unsupported_type_is_a_type_error_naming_field_and_type():
    with pytest.raises(TypeError, match=r"'layers'.*list\[str\]"):
        build_parser(ListField, prog="x", description="")


def test_ungrouped_fields_share_argparses_options_group():
    text = build_parser(Ungrouped, prog="x", description="").format_help()
    assert text.count("options:") == 1
    options = text[text.index("options:") :]
    assert options.index("--help") < options.index("--seed SEED") < options.index("Random seed.")


def test_alias_for_an_unknown_field_is_a_value_error():
    with pytest.raises(ValueError, match="num_gens"):
        build_parser(TrainConfig, prog="x", description="", aliases={"num_gens": ["-K"]})


def test_help_lists_every_field_once_with_doc_default_and_group(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    parser = build_parser(EvalConfig, prog="train", description="Train a team.\n  keep this", aliases=ALIASES)
    raw = parser.format_help()
    text = " ".join(raw.split())
    assert "Train a team.\n  keep this" in raw
    for name, info in field_docs(EvalConfig).items():
        option = name.replace("_", "-")
        assert f"--{option}" in text or f"--[no-]{option}" in text
        assert info.doc.replace("``", "") in text
    for default in [
        "(default: sokoban)",
        "(default: {})",
        "(default: 4)",
        "(default: none)",
        "(default: </answer>)",  # a tuple as it is typed
        "(default: True)",
        "(default: 0.7)",
        "(default: 0.1)",
    ]:
        assert default in text
    # One spelling per option: the short alias shows, the underscore form does not.
    assert "-K NUM_GENERATIONS, --num-generations NUM_GENERATIONS" in text
    assert "--num_generations" not in text and "--no-tensorboard" not in text
    assert "--[no-]tensorboard" in text
    assert "{mas,single}" in text and "{dev,test,none}" in text
    assert "10%" in text
    titles = [raw.index(f"\n{title}:\n") for title in ["env", "sampling", "logging", "eval"]]
    assert titles == sorted(titles)
    usage = raw[: raw.index("\n\n")]
    assert usage.count("\n") == 0 and "[options]" in usage  # one line, not a wall of flags


def test_help_shows_the_values_a_field_left_at_none_resolves_to(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    parser = build_parser(TrainConfig, prog="x", description="", resolved={"max_new_tokens": 16})
    text = " ".join(parser.format_help().split())
    assert "--max-new-tokens MAX_NEW_TOKENS Longest reply in tokens. (default: 16, the env preset's)" in text
    # choices of a plain str field are listed, not enforced (registries can grow after parsing)
    parser = build_parser(TrainConfig, prog="x", description="", choices={"env": ["sokoban", "sudoku"]})
    assert "--env {sokoban,sudoku}" in " ".join(parser.format_help().split())
    assert parse_overrides(TrainConfig, ["--env", "countdown"], prog="x", description="") == {
        "env": "countdown"
    }


def test_help_of_the_training_command_shows_the_env_preset(capsys, monkeypatch):
    from trainers.at_grpo import parse_train_args

    monkeypatch.setenv("COLUMNS", "200")
    for argv, needles in [
        (["--env", "sokoban", "--help"], ["Longest reply in tokens. (default: 16, the env preset's)"]),
        (["--env", "sudoku", "--help"], ["Longest reply in tokens. (default: 48, the env preset's)"]),
        (  # a value given on the command line is not labelled as the preset's
            ["--env", "sudoku", "--steps", "3", "--help"],
            [
                "Training steps (rollout + update) (None: the env preset's; with --train-minutes, no cap). "
                "(default: none)"
            ],
        ),
    ]:
        with pytest.raises(SystemExit) as info:
            parse_train_args(argv)
        assert info.value.code == 0
        text = " ".join(capsys.readouterr().out.split())
        for needle in needles:
            assert needle in text
        assert "(default: 5, the env preset's)" in text  # --eval-every
        assert "--estimator {grpo,rloo,at_grpo,per_agent,gigpo,matpo,tree,rae}" in text
        assert "--env {" in text and "sokoban" in text[text.index("--env {") :][:200]
        assert "``" not in text


def test_underscore_spellings_and_long_aliases_are_still_accepted():
    from trainers.config import TrainConfig as RealTrainConfig

    argv = ["--num_generations", "2", "--no-vllm_sleep", "--env_kwargs={}"]
    assert canonical_argv(argv, RealTrainConfig) == [
        "--num-generations",
        "2",
        "--no-vllm-sleep",
        "--env-kwargs={}",
    ]
    assert canonical_argv(["--stop", "--", "--num_generations"], TrainConfig) == [
        "--stop",
        "--",
        "--num_generations",
    ]


def test_a_choice_spelled_none_is_that_choice_not_the_fields_none():
    from trainers.at_grpo import parse_train_args

    assert parse_train_args(["--advantage-scale", "none"]) == {"advantage_scale": "none"}
    assert parse_train_args(["--policy", "none"]) == {"policy": None}


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--tensorboard"], {"tensorboard": True}),
        (["--no-tensorboard"], {"tensorboard": False}),
        (["--num-generations", "8"], {"num_generations": 8}),
        (["--num_generations", "8"], {"num_generations": 8}),
        (["-K", "8"], {"num_generations": 8}),
        (["--temperature", "0.25"], {"temperature": 0.25}),
        (["--env", "countdown"], {"env": "countdown"}),
        (["--team", "single"], {"team": "single"}),
        (["--max-new-tokens", "256"], {"max_new_tokens": 256}),
        (["--max-new-tokens", "None"], {"max_new_tokens": None}),
        (["--resume", "none"], {"resume": None}),
        (["--resume", "runs/a"], {"resume": "runs/a"}),
        (
            ["--env-kwargs", '{"difficulty": "easy", "size": [6, 6]}'],
            {"env_kwargs": {"difficulty": "easy", "size": [6, 6]}},
        ),
        (["--env_kwargs", "{}"], {"env_kwargs": {}}),
        (["--stop", "</a>", "\n\n"], {"stop": ("</a>", "\n\n")}),
        (["--stop"], {"stop": ()}),
    ],
)
def test_parse_each_type(argv, expected):
    got = parse(argv)
    assert got == expected
    assert type(next(iter(got.values()))) is type(next(iter(expected.values())))


def test_parse_subclass_types():
    assert parse(["--seeds", "3", "4"], EvalConfig) == {"seeds": (3, 4)}
    assert parse(["--split", "test"], EvalConfig) == {"split": "test"}
    assert parse(["--split", "NONE"], EvalConfig) == {"split": None}


def test_only_given_options_are_returned_in_field_order():
    assert parse([]) == {}
    got = parse(["--resume", "runs/a", "-K", "2", "--no-tensorboard"])
    assert list(got) == ["num_generations", "tensorboard", "resume"]
    config = dataclasses.replace(TrainConfig(), **got)
    assert (config.num_generations, config.tensorboard, config.resume, config.env) == (
        2,
        False,
        "runs/a",
        "sokoban",
    )


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (["--num-generations", "many"], ["--num-generations", "invalid int value: 'many'"]),
        (["-K", "2.5"], ["--num-generations", "invalid int value"]),
        (["--temperature", "hot"], ["--temperature", "invalid float value"]),
        (["--max-new-tokens", "lots"], ["--max-new-tokens", "invalid int value"]),
        (["--team", "duo"], ["--team", "invalid choice: 'duo'"]),
        (
            ["--env-kwargs", "{difficulty: easy}"],
            ["--env-kwargs", "not JSON", """--env-kwargs '{"difficulty": "easy"}'"""],
        ),
        (["--env-kwargs", "[1, 2]"], ["--env-kwargs", "not an object", """'{"difficulty": "easy"}'"""]),
        (["--env-kwargs", "null"], ["--env-kwargs", "expected a JSON object"]),
        (["--num-generations"], ["--num-generations", "expected one argument"]),
        (["--temp", "0.5"], ["unrecognized arguments: --temp"]),
    ],
)
def test_bad_values_exit_2_naming_the_option(argv, needles, capsys):
    err = error_of(argv, capsys)
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err


def test_bad_subclass_values_exit_2(capsys):
    assert "argument --seeds: invalid int value: 'x'" in error_of(["--seeds", "1", "x"], capsys, EvalConfig)
    assert "--split" in error_of(["--split", "train"], capsys, EvalConfig)


def test_round_trip_through_json():
    config = EvalConfig(
        env_kwargs={"difficulty": "easy", "nested": {"sizes": [1, 2]}},
        team="single",
        max_new_tokens=128,
        stop=("</answer>", "\n"),
        tensorboard=False,
        seeds=(5,),
        split="dev",
    )
    data = config_to_dict(config)
    assert data["stop"] == ["</answer>", "\n"] and data["seeds"] == [5]
    back = config_from_dict(EvalConfig, json.loads(json.dumps(data)))
    assert back == config
    assert isinstance(back.stop, tuple) and isinstance(back.seeds, tuple)
    assert (
        config_from_dict(TrainConfig, json.loads(json.dumps(config_to_dict(TrainConfig())))) == TrainConfig()
    )


def test_from_dict_fills_defaults_and_rejects_unknown_keys():
    assert config_from_dict(TrainConfig, {"temperature": 0.5}) == TrainConfig(temperature=0.5)
    with pytest.raises(ValueError, match=r"\['lr', 'seeds'\].*num_generations"):
        config_from_dict(TrainConfig, {"seeds": [1], "lr": 0.1, "env": "x"})
