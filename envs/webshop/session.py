"""What every WebShop backend offers the env: one shopping session, driven by text actions.

Two backends implement it: ``envs.webshop.pages.ShopSession`` (our own page state machine over a
loaded catalog, the default) and ``envs.webshop.http_client.ServerSession`` (a real WebShop Flask
server that a user runs). The env only talks to this protocol, so both play the same way.

The action grammar is WebShop's own (``web_agent_site/envs/web_agent_text_env.py``): the regex
``(.+)\\[(.+)\\]`` splits the name and argument, the argument is lowercased; ``search[...]`` with a
non-empty argument searches, ``click[x]`` works when ``x`` is one of the page's clickables (and is
not ``search``); anything else changes nothing (reward 0, not done, same page).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Protocol

__all__ = [
    "ACTION_PATTERN",
    "BACK_TO_SEARCH",
    "BUY_NOW",
    "NEXT_PAGE",
    "PREV_PAGE",
    "SEP",
    "SUB_PAGES",
    "PageState",
    "Session",
    "StepResult",
    "parse_action",
]

SEP = " [SEP] "
BACK_TO_SEARCH = "Back to Search"
NEXT_PAGE = "Next >"
PREV_PAGE = "< Prev"
BUY_NOW = "Buy Now"
SUB_PAGES = ("Description", "Features", "Reviews")  # "Attributes" too with show_attrs
ACTION_PATTERN = re.compile(r"(.+)\[(.+)\]")
PAGE_KINDS = ("search", "results", "item", "sub", "done")


def parse_action(action: str) -> tuple[str, str | None]:
    """``"click[Buy Now]"`` -> ``("click", "buy now")``; text that is not ``name[arg]`` ->
    ``(text, None)``. As the real env: ``re.match`` (anchored at the start, the last ``]`` of the
    text closes the argument), and the argument lowercased."""
    match = ACTION_PATTERN.match(action)
    if match is None:
        return action, None
    return match.group(1), match.group(2).lower()


@dataclass(frozen=True)
class PageState:
    """Where a session is: what GiGPO's anchor states group on, and what a client tracks.

    kind: one of ``PAGE_KINDS``; keywords: the last search's words; page: its results page;
    asin: the item open (upper case); options: chosen option values by option name, as sorted
    pairs; sub_page: the sub-page open (``"Description"``...) when kind is ``"sub"``.
    """

    kind: str = "search"
    keywords: tuple[str, ...] = ()
    page: int = 0
    asin: str | None = None
    options: tuple[tuple[str, str], ...] = ()
    sub_page: str | None = None


@dataclass
class StepResult:
    """One action's outcome: the new page's simple-mode text, the reward (0 until ``buy now``),
    whether the episode is over, and ``info`` (after a purchase: ``asin``, ``options``, the
    reward's parts, when the backend knows them)."""

    observation: str
    reward: float = 0.0
    done: bool = False
    valid: bool = True  # False: the action changed nothing (not a search, not a clickable)
    info: dict = field(default_factory=dict)


class Session(Protocol):
    """One shopping session of one goal."""

    instruction_text: str
    state: PageState

    def reset(self, goal_index: int) -> str:
        """Start goal ``goal_index`` on the search page; return its observation."""

    def step(self, action: str) -> StepResult:
        """Apply one action (``search[...]`` / ``click[...]``)."""

    def has_search_bar(self) -> bool:
        """The page has the search box (only the search page)."""

    def clickables(self) -> list[str]:
        """The page's clickables in page order, lowercased as the real env's ``text_to_clickable``
        keys: buttons and product links, then option values."""

    def observation(self) -> str:
        """The current page in simple mode: visible strings joined by ``SEP``."""
