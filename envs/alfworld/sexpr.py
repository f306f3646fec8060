"""A small s-expression reader for the real ALFWorld data's PDDL problems and goal templates
(``envs.alfworld.real``): lists and atoms only, which is all those files use. Written here
rather than taken from a PDDL library because the env reads the data without the optional
alfworld extra installed, and lists and atoms are a few lines."""

from __future__ import annotations

import re
from collections.abc import Iterable


class SExprError(ValueError):
    """Malformed s-expression text (unbalanced parentheses, nothing to read)."""


_TOKEN = re.compile(r";[^\n]*|[()]|[^\s();]+")


def _tokens(text: str) -> Iterable[str]:
    for match in _TOKEN.finditer(text):
        token = match.group()
        if not token.startswith(";"):  # a PDDL comment runs to the end of the line
            yield token


def _read(tokens: Iterable[str], *, first_only: bool) -> list:
    top: list = []
    stack: list[list] = [top]
    for token in tokens:
        if token == "(":
            stack.append([])
        elif token == ")":
            if len(stack) == 1:
                raise SExprError("unbalanced s-expression: a ')' closes nothing")
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(token)
        if first_only and top and len(stack) == 1:
            return top
    if len(stack) > 1:
        raise SExprError(f"unbalanced s-expression: {len(stack) - 1} '(' left open")
    return top


def parse_sexprs(text: str) -> list:
    """Every top-level expression of ``text``: a list is a Python list, an atom a string
    (case kept). ``;`` comments are skipped; unbalanced parentheses raise ``SExprError``."""
    return _read(_tokens(text), first_only=False)


def read_sexpr(text: str):
    """The first expression of ``text``; what follows it is not read (alfworld's goal
    templates end with a stray ``)`` that closes the problem's ``(define``)."""
    found = _read(_tokens(text), first_only=True)
    if not found:
        raise SExprError("no s-expression in the text")
    return found[0]


def lower_atoms(tree):
    """The same tree with every atom lower-cased."""
    return tree.lower() if isinstance(tree, str) else [lower_atoms(t) for t in tree]
