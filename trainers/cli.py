"""Command lines from frozen config dataclasses.

A config class documents each field with an *attribute docstring* (the string literal right after
the field) and groups fields with section comments (``# --- sampling ---``), both read by
``trainers.field_docs``. :func:`build_parser` turns that into an :mod:`argparse` parser whose
help is the docstrings, one argument group per section, so the config stays the single place
where options are declared and explained.

Every option defaults to ``argparse.SUPPRESS``: parsing returns only what the user typed, and the
caller layers those overrides on top of the dataclass defaults (or a resumed run's config).
:func:`config_to_dict` / :func:`config_from_dict` write and read the resolved config as JSON.

Per-role values: a field ``X`` with a mapping companion ``role_X`` (``temperature`` and
``role_temperature``) also takes ``--X ROLE=VALUE``, repeatable (``--temperature executor=1.5
--temperature planner=0.7``); those go into ``role_X`` as ``{"executor": 1.5, ...}``, and
``--X VALUE`` keeps setting the value of every other role.

Why not tyro (which also reads attribute docstrings): a resumed run must know which flags were
*given*, since only those override its saved config, and the JSON-object flags
(``--env-kwargs``, ``--estimator-kwargs``) and the ``--x none`` spelling of optional fields
need their own parsing either way; what remains of this module is that, plus the sections.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import re
import sys
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Union

from trainers.errors import DEBUG_FLAG, DEBUG_HELP
from trainers.field_docs import DEFAULT_GROUP, FieldDoc, field_docs

__all__ = [
    "FieldDoc",
    "build_parser",
    "canonical_argv",
    "config_from_dict",
    "config_to_dict",
    "field_docs",
    "parse_overrides",
]

_NO_ALIASES: Mapping[str, Sequence[str]] = types.MappingProxyType({})
_SCALARS = (int, float, str)
_JSON_EXAMPLE = '\'{"difficulty": "easy"}\''
_Config = typing.TypeVar("_Config")


def _unwrap_optional(tp: Any) -> tuple[Any, bool]:
    """``(X, True)`` for ``X | None`` / ``Optional[X]``, else ``(tp, False)``."""
    if typing.get_origin(tp) in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1 and len(args) < len(typing.get_args(tp)):
            return args[0], True
    return tp, False


def _is_none(text: str) -> bool:
    return text.strip().lower() == "none"


def _is_mapping(tp: Any) -> bool:
    return tp in (dict, Mapping) or typing.get_origin(tp) in (dict, Mapping)


def _tuple_item(tp: Any) -> type | None:
    """``X`` for ``tuple[X, ...]`` with a scalar ``X``, else None."""
    args = typing.get_args(tp)
    if typing.get_origin(tp) is tuple and len(args) == 2 and args[1] is Ellipsis and args[0] in _SCALARS:
        return args[0]
    return None


def _json_object(option: str) -> Callable[[str], dict]:
    def convert(text: str) -> dict:
        try:
            value = json.loads(text)
        except json.JSONDecodeError as err:
            value, reason = None, f"not JSON: {err}"
        else:
            reason = f"a JSON {type(value).__name__}, not an object"
        if not isinstance(value, dict):
            example = f"{option} {_JSON_EXAMPLE}"
            raise argparse.ArgumentTypeError(
                f"expected a JSON object, e.g. {example}; got {text!r} ({reason})"
            )
        return value

    return convert


class _StoreTuple(argparse.Action):
    """Stores ``nargs="*"`` values as a tuple of the item type (a lone ``none`` gives None if allowed)."""

    def __init__(self, *args: Any, item: type, nullable: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.item, self.nullable = item, nullable

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        if self.nullable and len(values) == 1 and _is_none(values[0]):
            setattr(namespace, self.dest, None)
            return
        items = []
        for value in values:
            try:
                items.append(self.item(value))
            except ValueError as err:
                raise argparse.ArgumentError(self, f"invalid {self.item.__name__} value: {value!r}") from err
        setattr(namespace, self.dest, tuple(items))


def _nullable(convert: Callable[[str], Any], label: str) -> Callable[[str], Any]:
    """Wraps ``convert`` so that the text ``none`` (any case) gives None."""

    def parse(text: str) -> Any:
        return None if _is_none(text) else convert(text)

    # argparse names the converter in its "invalid <name> value" errors.
    parse.__name__ = label
    return parse


def _type_kwargs(name: str, tp: Any, option: str) -> dict[str, Any]:
    """``add_argument`` keyword arguments that parse field ``name`` annotated ``tp``."""
    inner, nullable = _unwrap_optional(tp)
    metavar = name.upper()
    if inner is bool:  # a nullable bool keeps None (its "auto") unless --x / --no-x is given
        return {"action": argparse.BooleanOptionalAction}
    item = _tuple_item(inner)
    if item is not None:
        return {"action": _StoreTuple, "nargs": "*", "item": item, "nullable": nullable, "metavar": metavar}
    if typing.get_origin(inner) is Literal:
        by_text = {str(v): v for v in typing.get_args(inner)}

        def pick(text: str) -> Any:
            # Unknown text passes through unchanged so that argparse's choices check reports it.
            return by_text.get(text, text)

        # A choice spelled 'none' (--advantage-scale none) means that choice, not the field's None.
        nullable = nullable and "none" not in by_text
        extra = ["none"] if nullable else []
        return {
            "type": _nullable(pick, "choice") if nullable else pick,
            "choices": [*by_text.values(), *([None] if nullable else [])],
            "metavar": "{" + ",".join([*by_text, *extra]) + "}",
        }
    if inner in _SCALARS:
        return {"type": _nullable(inner, inner.__name__) if nullable else inner, "metavar": metavar}
    if _is_mapping(inner):
        convert = _json_object(option)
        return {"type": _nullable(convert, "JSON") if nullable else convert, "metavar": "JSON"}
    raise TypeError(f"field {name!r} has type {tp!r}, which build_parser cannot parse from a command line")


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Help with one spelling per option: a boolean pair reads ``--[no-]tensorboard``."""

    def _format_action_invocation(self, action: argparse.Action) -> str:
        if isinstance(action, argparse.BooleanOptionalAction):
            return "--[no-]" + action.option_strings[0].removeprefix("--")
        return super()._format_action_invocation(action)


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (the usage of every field is
    screens long): ``<prog>: error: <message>; <prog> --help lists the options``, status 2."""

    def error(self, message: str) -> typing.NoReturn:
        self.exit(2, f"{self.prog}: error: {message}; {self.prog} --help lists the options\n")


def _shown(value: Any) -> str:
    """A default as a user would type it: tuples space-separated, mappings as JSON, None as none."""
    if value is None:
        return "none"
    if isinstance(value, tuple):
        return " ".join(map(str, value)) if value else "(empty)"
    if isinstance(value, Mapping):
        return json.dumps(value)
    return str(value)


def _none_rule(doc: str) -> tuple[str, str | None]:
    """``doc`` without its ``(None: RULE)`` part, and RULE (None when there is none); RULE may
    hold parentheses of its own."""
    start = doc.find("(None: ")
    if start < 0:
        return doc, None
    depth = 0
    for end in range(start, len(doc)):
        depth += {"(": 1, ")": -1}.get(doc[end], 0)
        if depth == 0:
            rule = doc[start + len("(None: ") : end]
            before, after = doc[:start].rstrip(), doc[end + 1 :].lstrip()
            joined = before + after if after[:1] in (".", ",", ";", ":") else f"{before} {after}"
            return joined.strip(), rule
    return doc, None


def _help_text(f: dataclasses.Field, doc: str, resolved: Mapping[str, Any]) -> str:
    """The field's docstring and the default this command line would use: a field left at
    None shows the value its rule gives (``resolved``), with the rule; another field whose
    resolved value differs from its default (an env's preset) shows both."""
    doc = doc.replace("``", "")
    default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
    if default is dataclasses.MISSING:
        return f"{doc} (no default)"
    text, rule = _none_rule(doc)
    if default is None and resolved.get(f.name) is not None:
        return f"{text} (default: {_shown(resolved[f.name])}" + (f", {rule})" if rule else ")")
    if resolved.get(f.name) is not None and resolved[f.name] != default:  # e.g. an env's preset
        return (
            f"{doc} (default: {_shown(resolved[f.name])} for this command line, {_shown(default)} otherwise)"
        )
    return f"{doc} (default: {_shown(default)})"


_ROLE_VALUE = re.compile(r"^(?P<role>[a-z][a-z0-9]*)=(?P<value>.*)$")


def _role_companions(cls: type) -> dict[str, tuple[str, Any]]:
    """``--X`` -> (``--role-X``, the scalar type of ``X``) for each field ``X`` of ``cls`` that has a
    mapping field ``role_X`` beside it."""
    hints = typing.get_type_hints(cls)
    routes = {}
    for f in dataclasses.fields(cls):
        companion = "role_" + f.name
        if companion in hints and _is_mapping(_unwrap_optional(hints[companion])[0]):
            scalar = _unwrap_optional(hints[f.name])[0]
            routes["--" + f.name.replace("_", "-")] = ("--" + companion.replace("_", "-"), scalar)
    return routes


def _route_role_values(argv: list[str], cls: type) -> list[str]:
    """``--X ROLE=VALUE`` (or ``--X=ROLE=VALUE``) -> one ``--role-X JSON`` holding every role's
    value, merged over a ``--role-X JSON`` given as well (module docstring)."""
    routes = _role_companions(cls)
    if not routes:
        return argv
    by_role: dict[str, dict[str, Any]] = {}
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        option, equals, inline = arg.partition("=")
        route = routes.get(option)
        value = inline if equals else (argv[i + 1] if i + 1 < len(argv) else "")
        match = _ROLE_VALUE.match(value) if route else None
        if route and match:
            companion, scalar = route
            try:
                number = scalar(match["value"]) if scalar in (int, float) else match["value"]
            except ValueError:
                number = match["value"]  # the config names the field and the fix
            by_role.setdefault(companion, {})[match["role"]] = number
            i += 1 if equals else 2
            continue
        out.append(arg)
        i += 1
    for companion, values in by_role.items():
        for j, arg in enumerate(out[:-1]):
            if arg == companion:  # merge an explicit --role-X JSON (the role values win)
                with contextlib.suppress(json.JSONDecodeError, TypeError):
                    values = {**json.loads(out[j + 1]), **values}
        out += [companion, json.dumps(values)]
    return out


def canonical_argv(
    argv: Sequence[str], cls: type, aliases: Mapping[str, Sequence[str]] = _NO_ALIASES
) -> list[str]:
    """``argv`` with every accepted spelling of an option turned into the one the help shows:
    ``--num_generations`` -> ``--num-generations``, ``--no-vllm_sleep`` -> ``--no-vllm-sleep``,
    long aliases (``aliases``, e.g. ``--import``) -> the field's option, and ``--X ROLE=VALUE``
    -> ``--role-X JSON`` for a field with a per-role companion (module docstring)."""
    spellings: dict[str, str] = {}
    for f in dataclasses.fields(cls):
        option = "--" + f.name.replace("_", "-")
        spellings["--" + f.name] = option
        spellings["--no-" + f.name] = spellings["--no_" + f.name] = "--no-" + option[2:]
        spellings.update({alias: option for alias in aliases.get(f.name, ()) if alias.startswith("--")})
    out: list[str] = []
    for i, arg in enumerate(argv):
        if arg == "--":  # everything after it is a value
            return _route_role_values(out, cls) + list(argv[i:])
        name, equals, value = arg.partition("=")
        out.append(spellings[name] + equals + value if name in spellings else arg)
    return _route_role_values(out, cls)


def build_parser(
    cls: type,
    *,
    prog: str,
    description: str,
    aliases: Mapping[str, Sequence[str]] = _NO_ALIASES,
    epilog: str | None = None,
    debug_option: bool = False,
    resolved: Mapping[str, Any] | None = None,
    choices: Mapping[str, Sequence[str]] | None = None,
    flags: Mapping[str, str] | None = None,
) -> argparse.ArgumentParser:
    """An argument parser with one option per field of dataclass ``cls``.

    Field ``num_generations`` becomes ``--num-generations`` (``--num_generations`` works too), in the
    argument group of its section comment; its help is its docstring and its default. Every option
    defaults to ``argparse.SUPPRESS``, so the parsed namespace holds only the options given.

    Args:
        cls: A dataclass whose fields all have attribute docstrings (see :func:`field_docs`).
        prog: Program name shown in the usage line.
        description: Text above the options, kept as written.
        aliases: Extra option strings per field name, e.g. ``{"num_generations": ["-K"]}``. A short
            one (``-K``) is listed in the help; a long one is accepted (``canonical_argv``) but not
            listed, so the help shows one spelling per option.
        epilog: Text below the options, kept as written.
        debug_option: List ``--debug`` (the command runs through ``trainers.errors.run_command``,
            which takes it off the command line before parsing).
        resolved: The value each field left at None would take for this command line (e.g. the
            env preset's), shown in the help as its default.
        choices: Names to list for a plain ``str`` field (e.g. the registered estimators); the
            config, not the parser, checks them, so names registered later still work.
        flags: Extra on/off options ``{"--print-config": "help"}`` that the caller acts on.

    Raises:
        TypeError: A field has no docstring or a type the command line cannot express.
        ValueError: ``aliases`` names a field that ``cls`` does not have.
    """
    docs = field_docs(cls)
    hints = typing.get_type_hints(cls)
    unknown = sorted(set(aliases) - set(docs))
    if unknown:
        raise ValueError(f"aliases name unknown fields {unknown}; fields: {sorted(docs)}")
    resolved, choices = resolved or {}, choices or {}
    parser = _Parser(
        prog=prog,
        usage="%(prog)s [options]  (see below; defaults are what this command line would use)",
        description=description.replace("``", ""),  # docstring markup reads as noise in a terminal
        epilog=epilog.replace("``", "") if epilog else epilog,
        formatter_class=_HelpFormatter,
        # Prefixes would silently change meaning when a field is added, so only full names count.
        allow_abbrev=False,
    )
    # Ungrouped fields join argparse's own "options" group rather than a second group of that title.
    groups: dict[str, Any] = {DEFAULT_GROUP: parser}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        info = docs[f.name]
        if info.group not in groups:
            groups[info.group] = parser.add_argument_group(info.group)
        option = "--" + f.name.replace("_", "-")
        short = [alias for alias in aliases.get(f.name, ()) if not alias.startswith("--")]
        # argparse %-formats help strings, so a literal % in a docstring must be doubled.
        help_text = _help_text(f, info.doc, resolved).replace("%", "%%")
        kwargs = _type_kwargs(f.name, hints[f.name], option)
        if f.name in choices:
            kwargs["metavar"] = "{" + ",".join(choices[f.name]) + "}"
        group = groups[info.group]
        group.add_argument(*short, option, dest=f.name, default=argparse.SUPPRESS, help=help_text, **kwargs)
    extra = dict(flags or {})
    if debug_option:
        extra[DEBUG_FLAG] = DEBUG_HELP
    for flag, text in extra.items():
        parser.add_argument(
            flag, action="store_true", default=argparse.SUPPRESS, help=text.replace("%", "%%")
        )
    return parser


_HELP = ("-h", "--help")


def parse_overrides(
    cls: type,
    argv: Sequence[str] | None,
    *,
    resolve: Callable[[dict[str, Any]], Mapping[str, Any]] | None = None,
    **build_parser_kwargs: Any,
) -> dict[str, Any]:
    """The options given in ``argv`` (``sys.argv[1:]`` when None) as ``{field_name: value}``.

    Values are converted to the field types; options not given are absent. Bad values exit with
    a one-line usage error (status 2). ``build_parser_kwargs`` go to :func:`build_parser`.

    ``resolve``: for ``--help``, turns the other options given into the values of the fields
    left at None (e.g. ``--env sudoku`` -> the sudoku preset's), which the help shows as their
    defaults. A command line it cannot resolve shows the help without them.
    """
    argv = canonical_argv(sys.argv[1:] if argv is None else argv, cls, build_parser_kwargs.get("aliases", {}))
    if resolve is not None and any(arg in _HELP for arg in argv):
        try:
            plain = build_parser(cls, **build_parser_kwargs)
            with contextlib.redirect_stderr(io.StringIO()):  # its errors show after the help, if at all
                known, _ = plain.parse_known_args([arg for arg in argv if arg not in _HELP])
            given = {
                f.name: getattr(known, f.name) for f in dataclasses.fields(cls) if hasattr(known, f.name)
            }
            # A field the command line sets shows its own rule, not a preset's label on its value.
            build_parser_kwargs["resolved"] = {k: v for k, v in resolve(given).items() if k not in given}
        except (Exception, SystemExit):  # noqa: BLE001  (help must show even for a broken command line)
            pass
    parser = build_parser(cls, **build_parser_kwargs)
    given = vars(parser.parse_args(argv))
    return {f.name: given[f.name] for f in dataclasses.fields(cls) if f.name in given}


def _to_json(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_to_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _to_json(v) for k, v in value.items()}
    return value


def config_to_dict(config: Any) -> dict[str, Any]:
    """``dataclasses.asdict(config)`` with tuples as lists, ready for ``json.dumps``."""
    return _to_json(dataclasses.asdict(config))


def config_from_dict(cls: type[_Config], data: Mapping[str, Any]) -> _Config:
    """Rebuilds a ``cls`` from :func:`config_to_dict` output (JSON lists become tuples again).

    Fields missing from ``data`` take their defaults, so configs written before a field existed load.

    Raises:
        ValueError: ``data`` has keys that are not fields of ``cls``.
    """
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls) if f.init]
    unknown = sorted(set(data) - set(names))
    if unknown:
        raise ValueError(f"unknown {cls.__name__} fields {unknown}; valid fields: {names}")
    is_tuple = {name: typing.get_origin(_unwrap_optional(hints[name])[0]) is tuple for name in names}
    return cls(**{k: tuple(v) if is_tuple[k] and isinstance(v, list) else v for k, v in data.items()})
