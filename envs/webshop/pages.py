"""WebShop's pages without a web server: the page state machine and its simple-mode text.

``ShopSession`` plays one goal of a ``Shop`` the way WebShop's ``WebAgentTextEnv`` with
``observation_mode="text"`` does (web_agent_site/envs/web_agent_text_env.py and the Flask
templates), string for string (the golden test compares with text captured from the real
templates):

* start page ``WebShop [SEP] Instruction: [SEP] <instruction> [SEP] Search``;
* ``search[q]`` (any page; the argument lowercased, split on single spaces, joined again for the
  engine): results page 1 of the top 50 hits, 10 a page;
* results page: ``back to search``, ``< prev`` (page > 1), ``next >`` (always, even past the last
  hit: an empty page), the asins (lowercased) -> item page (options cleared);
* item page: the option values (clicking one records it under its option name; the last click
  of a name wins; the text does not change), ``description`` / ``features`` / ``reviews``
  (sub-pages, ``< prev`` back to the item), ``< prev`` (results again: chosen options cleared,
  as the real server re-renders the results), ``buy now`` -> done page, the reward, episode over;
* anything else (no ``name[arg]`` shape, an argument that is not a clickable of this page,
  ``click[search]``, an empty search) changes nothing.

Where this differs from the real code, on purpose: the debug search prefixes (``<r>``, ``<a>``,
``<c>``, ``<q>``) are plain words here (the real engine turns ``<q> <query>`` into every product of
that scraping query, a shortcut no benchmark means to allow); reviews are empty, as in the real
code (its review loading is commented out).
"""

from __future__ import annotations

import json
from dataclasses import replace

from envs.webshop.session import (
    BACK_TO_SEARCH,
    BUY_NOW,
    NEXT_PAGE,
    PREV_PAGE,
    SEP,
    SUB_PAGES,
    PageState,
    StepResult,
    parse_action,
)

__all__ = [
    "PRODUCTS_PER_PAGE",
    "SEARCH_HITS",
    "ShopSession",
    "render_done",
    "render_item",
    "render_results",
    "render_search",
    "render_sub_page",
    "simple_text",
]

PRODUCTS_PER_PAGE = 10
SEARCH_HITS = 50
_ASCII_SPACE = frozenset(" \t\n\r\f")


def _segment(value: str) -> list[str]:
    """What one text node of the page becomes in simple mode, as BeautifulSoup's html.parser
    gives it and the real env filters it: no node for an empty value; a whitespace-only value
    becomes ``"\\n"`` (dropped) when it holds a newline, else ``" "`` (an empty segment);
    anything else is stripped."""
    if value == "":
        return []
    if all(c in _ASCII_SPACE for c in value):
        return [] if "\n" in value else [""]
    return [value.strip()]


def simple_text(values: list[str]) -> str:
    """A page's text nodes -> the simple-mode observation (``" [SEP] "`` between them)."""
    return SEP.join(segment for value in values for segment in _segment(value))


def _html_safe_json(options: dict[str, str]) -> str:
    """The done page's ``{{ options | tojson }}`` as BeautifulSoup reads it back: sorted keys,
    ASCII escapes, and the HTML-safe escapes of ``<``, ``>``, ``&`` and ``'`` left as text."""
    text = json.dumps(options, sort_keys=True)
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("'", "\\u0027")):
        text = text.replace(char, escape)
    return text


class ShopSession:
    """One shopping session over a ``Shop`` (``envs.webshop.shop``): implements
    ``envs.webshop.session.Session``."""

    def __init__(self, shop, show_attrs: bool = False) -> None:
        self.shop = shop
        self.show_attrs = show_attrs
        self.goal: dict = {}
        self.instruction_text = ""
        self.state = PageState()
        self.hits: list[str] = []  # the last search's asins (at most 50)
        self.reward_info: dict = {}

    # ------------------------------------------------------------------ protocol
    def reset(self, goal_index: int) -> str:
        self.goal = self.shop.goals[goal_index]
        self.instruction_text = self.goal["instruction_text"]
        self.state = PageState()
        self.hits = []
        self.reward_info = {}
        return self.observation()

    def has_search_bar(self) -> bool:
        return self.state.kind == "search"

    def sub_pages(self) -> tuple[str, ...]:
        return SUB_PAGES + (("Attributes",) if self.show_attrs else ())

    def clickables(self) -> list[str]:
        """Buttons and product links in page order, then option values (as the real env's
        ``text_to_clickable``, whose keys are unique: a repeated text keeps its first place)."""
        kind, keys = self.state.kind, []
        if kind == "search":
            keys = ["search"]
        elif kind == "results":
            keys = [BACK_TO_SEARCH] + ([PREV_PAGE] if self.state.page > 1 else []) + [NEXT_PAGE]
            keys += [asin for asin in self.page_asins()]
        elif kind == "item":
            keys = [BACK_TO_SEARCH, PREV_PAGE, *self.sub_pages(), BUY_NOW]
            keys += [value for values in self._product()["options"].values() for value in values]
        elif kind == "sub":
            keys = [BACK_TO_SEARCH, PREV_PAGE]
        return list(dict.fromkeys(key.lower() for key in keys))

    def step(self, action: str) -> StepResult:
        name, arg = parse_action(action)
        if self.state.kind == "done":
            return StepResult(self.observation(), valid=False, done=True)
        if name == "search" and arg:
            self._search(arg.split(" "))
            return StepResult(self.observation())
        if name == "click" and arg is not None and arg != "search" and arg in self.clickables():
            return self._click(arg)
        return StepResult(self.observation(), valid=False)

    # ------------------------------------------------------------------ transitions
    def _search(self, keywords: list[str], page: int = 1) -> None:
        self.hits = self.shop.search(" ".join(keywords), k=SEARCH_HITS)
        self.state = PageState(kind="results", keywords=tuple(keywords), page=page)

    def _click(self, arg: str) -> StepResult:
        state = self.state
        if arg == BUY_NOW.lower():
            return self._buy()
        if arg == BACK_TO_SEARCH.lower():
            self.state = PageState()
            self.hits = []
        elif arg == NEXT_PAGE.lower() and state.kind == "results":
            self.state = replace(state, page=state.page + 1)
        elif arg == PREV_PAGE.lower() and state.kind == "results":
            self.state = replace(state, page=state.page - 1)
        elif arg == PREV_PAGE.lower() and state.kind == "sub":
            self.state = replace(state, kind="item", sub_page=None)
        elif arg == PREV_PAGE.lower() and state.kind == "item":
            self.state = replace(state, kind="results", asin=None, options=())
        elif arg in [s.lower() for s in self.sub_pages()]:
            sub = next(s for s in self.sub_pages() if s.lower() == arg)
            self.state = replace(state, kind="sub", sub_page=sub)
        elif state.kind == "results":  # a product link
            self.state = replace(state, kind="item", asin=arg.upper(), options=())
        else:  # an option value on the item page: recorded under its option name
            options = dict(state.options)
            options[self._option_name(arg)] = arg
            self.state = replace(state, options=tuple(options.items()))
        return StepResult(self.observation())

    def _option_name(self, value: str) -> str:
        # the real page's radio inputs are keyed by value: a value offered under two option
        # names maps to the last one on the page
        return [name for name, values in self._product()["options"].items() if value in values][-1]

    def _buy(self) -> StepResult:
        product = self._product()
        options = dict(self.state.options)
        price = self.shop.prices[product["asin"]]
        reward = self.shop.reward(product, self.goal, price, options)
        self.reward_info = {"asin": product["asin"], "options": options, "price": price, "reward": reward}
        self.state = replace(self.state, kind="done", sub_page=None)
        return StepResult(self.observation(), reward=reward.total, done=True, info=dict(self.reward_info))

    # ------------------------------------------------------------------ pages
    def _product(self) -> dict:
        return self.shop.by_asin[self.state.asin]

    def page_asins(self) -> list[str]:
        """The asins on the results page shown (the hits of its page)."""
        start = (self.state.page - 1) * PRODUCTS_PER_PAGE
        return self.hits[max(start, 0) : max(start + PRODUCTS_PER_PAGE, 0)]

    def observation(self) -> str:
        kind, instruction = self.state.kind, self.instruction_text
        if kind == "search":
            return render_search(instruction)
        if kind == "results":
            products = [self.shop.by_asin[asin] for asin in self.page_asins()]
            return render_results(instruction, self.state.page, len(self.hits), products)
        if kind == "item":
            return render_item(instruction, self._product(), self.sub_pages())
        if kind == "sub":
            return render_sub_page(instruction, self._product(), self.state.sub_page)
        info = self.reward_info
        return render_done(info["asin"], info["options"], info["reward"].total)


# ---------------------------------------------------------------------- the pages' text
# One function per template of web_agent_site/templates, listing its text nodes in page order.


def _header(instruction: str) -> list[str]:
    return ["Instruction:", instruction, BACK_TO_SEARCH]


def render_search(instruction: str) -> str:
    """search_page.html."""
    return simple_text(["WebShop", "Instruction: ", instruction, "Search"])


def render_results(instruction: str, page: int, total: int, products: list[dict]) -> str:
    """results_page.html: the page's products (asin, Title, Price each)."""
    values = [*_header(instruction), f"Page {page} (Total results: {total})"]
    values += ([PREV_PAGE] if page > 1 else []) + [NEXT_PAGE]
    for product in products:
        values += [product["asin"], product["Title"], product["Price"]]
    return simple_text(values)


def render_item(instruction: str, product: dict, sub_pages: tuple[str, ...] = SUB_PAGES) -> str:
    """item_page.html: options, title, price, rating, sub-page buttons, Buy Now."""
    values = [*_header(instruction), PREV_PAGE]
    for name, option_values in product["options"].items():
        values += [name, *option_values]
    values += [product["Title"], f"Price: {product['Price']}", f"Rating: {product['Rating']}"]
    return simple_text(values + [*sub_pages, BUY_NOW])


def render_sub_page(instruction: str, product: dict, sub_page: str) -> str:
    """description_page.html, features_page.html (one `` <bullet>`` node each), review_page.html
    (no reviews), attributes_page.html."""
    values = [*_header(instruction), PREV_PAGE]
    if sub_page == "Description":
        values.append(product["Description"])
    elif sub_page == "Features":
        values += [" " + str(bullet) for bullet in product["BulletPoints"]]
    elif sub_page == "Attributes":
        values += [" " + str(attribute) for attribute in product["Attributes"]]
        values += [product["category"], product["query"], product["product_category"]]
    return simple_text(values)


def render_done(asin: str, options: dict[str, str], reward: float) -> str:
    """done_page.html as the real env renders it (SimServer passes no goal or purchase details,
    so the hidden table's labels show with empty values; BeautifulSoup ignores CSS)."""
    values = [
        "Thank you for shopping with us!",
        "Your code: ",
        "None",
        " (Paste it in your MTurk interface.)",
    ]
    values += ["Purchased", "asin", asin, "options", _html_safe_json(options)]
    values += ["attrs", "None", "category", "None", "query", "None", "product category", "None"]
    values += ["Target", "asin", "options", "attrs", "price upper", "instuction text", "category"]
    values += ["product category", "query", "Goal ", "None", "Reward"]
    return simple_text(values + ["Your score (min 0.0, max 1.0)", str(reward), "Reward Details ", "None"])
