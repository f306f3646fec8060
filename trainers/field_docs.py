"""The help of a config dataclass read from its source: each field's *attribute docstring* (the
string literal right after it) and its section (the latest ``# --- name ---`` comment above it).

``trainers.cli`` builds its parsers' help and argument groups from these, so a config class
stays the one place where an option is declared and explained.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import textwrap
from dataclasses import dataclass
from itertools import pairwise

__all__ = ["DEFAULT_GROUP", "FieldDoc", "field_docs"]

DEFAULT_GROUP = "options"
_SECTION = re.compile(r"^\s*#\s*---\s*(?P<name>.+?)\s*---\s*$")


@dataclass(frozen=True)
class FieldDoc:
    """Where a config field sits in the help: its section and its docstring."""

    group: str
    doc: str


def _class_docs(cls: type) -> dict[str, FieldDoc]:
    """Docs of the fields annotated in ``cls``'s own body (not its bases)."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError) as err:
        raise TypeError(f"cannot read the source of {cls.__qualname__} to find its field docs") from err
    tree = ast.parse(source)
    node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls.__name__)
    # Group of each source line: the latest section comment at or above it (line numbers are 1-based).
    groups, group = [DEFAULT_GROUP], DEFAULT_GROUP
    for line in source.splitlines():
        match = _SECTION.match(line)
        group = match["name"] if match else group
        groups.append(group)
    docs = {}
    for stmt, nxt in pairwise(node.body):
        text = nxt.value.value if isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant) else None
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and isinstance(text, str):
            doc = " ".join(inspect.cleandoc(text).split())
            docs[stmt.target.id] = FieldDoc(group=groups[stmt.lineno - 1], doc=doc)
    return docs


def field_docs(cls: type) -> dict[str, FieldDoc]:
    """Section and docstring of every field of dataclass ``cls``, in field order.

    Base classes are read too (a subclass's docs win), so inherited fields keep their help.

    Raises:
        TypeError: ``cls`` is not a dataclass, or a field has no docstring.
    """
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise TypeError(f"{cls!r} is not a dataclass type")
    merged: dict[str, FieldDoc] = {}
    for klass in reversed(cls.__mro__):
        if dataclasses.is_dataclass(klass):
            merged.update(_class_docs(klass))
    docs = {}
    for f in dataclasses.fields(cls):
        if f.name not in merged:
            raise TypeError(f"{cls.__qualname__}.{f.name} has no docstring (add a string literal after it)")
        docs[f.name] = merged[f.name]
    return docs
