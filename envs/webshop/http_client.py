"""Play a real WebShop server over HTTP: ``ServerSession`` implements ``envs.webshop.session.Session``.

For users who run princeton-nlp/WebShop's Flask app (``web_agent_site/app.py``, port 3000; MIT) and
want our env to shop there instead of in our own catalog. Start it in the WebShop repo::

    ./run_dev.sh                           # python -m web_agent_site.app --log --attrs
    python -m web_agent_site.app --log     # the same without the "Attributes" tab (see below)

then ``ServerSession("http://127.0.0.1:3000")``.

How it works. The server keeps nothing per session but the goal (and a log): every page is a pure
function of its URL, and its own pages link with URLs built from the path. So this client does
what ReAct's WebShop driver does: it tracks the page kind, the search keywords, the results page,
the asin and the chosen options itself, builds each URL, GETs it, and reads the HTML the way the
real text env (``web_agent_site/envs/web_agent_text_env.py``, ``observation_mode="text"``) does:

* observation: every text node whose parent is not style/script/head/title/meta/[document] and
  that is not a comment, stripped, ``'\\n'`` nodes dropped, joined with ``" [SEP] "``
  (BeautifulSoup with ``html.parser``, as the real env);
* clickables: the lowercased text of the ``.btn`` elements and the ``.product-link`` elements,
  then the values of the ``input[type=radio]`` options, keyed by text as the real env's
  ``text_to_clickable`` dict (a repeated text keeps its first place);
* actions: ``parse_action`` (``name[arg]``, the argument lowercased); ``search[q]`` searches from
  any page, as the real env (it does not check for the search box); ``click[x]`` works only when
  ``x`` is a clickable of the page and not ``search``, and is dispatched by name in the real
  ``SimServer.receive``'s order: buy now, back to search, next/prev, a sub-page name, then a
  product link or an option value; anything else changes nothing (``valid=False``).

The URLs (app.py's routes; each path part ``quote``-d with ``safe=""``)::

    start     GET {base}/fixed_<i>
    search    GET {base}/search_results/<session>/<keywords>/<page>
    item      GET {base}/item_page/<session>/<ASIN>/<keywords>/<page>/<options>
    sub-page  GET {base}/item_sub_page/<session>/<ASIN>/<keywords>/<page>/<Description|...>/<options>
    buy       GET {base}/done/<session>/<ASIN>/<options>

``<keywords>`` is ``str()`` of the list of words (the search argument split on single spaces, as
the real env's browser does, and what the app's own search form redirects with); the app
``literal_eval``-s a part that starts with ``[`` and wraps any other in a list, so a list literal
is the one form that survives any text. ``<options>`` is ``str()`` of the option dict
(``{option name: value}``), which the app ``literal_eval``-s: quotes, ``#``, ``?``, ``%``, ``|``
and non-ASCII all round-trip once quoted. A ``/`` cannot: werkzeug decodes ``%2F`` before it
routes, so the path gains a part and the server answers 404. Option values never hold one (the
loader turns ``/`` into `` | ``); in the keywords a ``/`` is sent as a space (Lucene's tokenizer
splits on both, so the query is the same); anywhere else it raises ``WebShopServerError``.

Caveats of the real server (tell users; they change numbers):

* ``fixed_<i>`` picks ``goals[i]`` of app.py's goal list, which is the **human** goals only
  (``get_goals`` defaults to them), shuffled with seed 233; synthetic goals need an app.py edit.
  An index past the list gives HTTP 500. Other session ids draw a weighted random goal.
* Prices of range-priced products and the goals' price caps are drawn with an unseeded RNG when
  the server starts: they change across restarts, and so can rewards. The sampled price is not
  shown anywhere, so the client cannot report it (``reward_info["r_price"]`` says whether it
  was under the cap).
* By default app.py loads ``items_shuffle_1000.json`` (1,000 products); the full catalog means
  editing the paths in ``web_agent_site/utils.py`` (and ``DEBUG_PROD_SIZE``) and building the
  matching search index.
* ``run_dev.sh`` passes ``--attrs``: item pages then show an "Attributes" button, whose sub-page
  lists the product's attributes. The papers' text env hides it (``show_attrs=False``): start
  the app without ``--attrs`` for comparable numbers. This client plays whatever the server shows.
* Sessions live in the server's memory; after a restart, reset again (else HTTP 500).
* Very long searches are cut (whole words from the end) so the keywords part stays within
  ``max_keywords_chars`` quoted characters: werkzeug refuses request lines over 64 KiB (414).

Unlike the real env, and like our own ``ShopSession``, every action after ``buy now`` is refused
(``valid=False``, ``done=True``): the episode is over.
"""

from __future__ import annotations

import ast
import ipaddress
import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from http.client import HTTPException

try:
    from bs4 import BeautifulSoup
    from bs4.element import Comment
except ImportError as error:  # pragma: no cover - the webshop extra installs it
    raise ImportError(
        "envs.webshop.http_client reads WebShop's HTML with BeautifulSoup: pip install 'teamgym[webshop]' "
        "(or pip install beautifulsoup4)"
    ) from error

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
    "DEFAULT_BASE_URL",
    "DEFAULT_TIMEOUT_S",
    "START_HINT",
    "ServerSession",
    "WebShopServerError",
    "html_to_text",
    "page_clickables",
]

DEFAULT_BASE_URL = "http://127.0.0.1:3000"
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_KEYWORDS_CHARS = 8000
START_HINT = (
    "Is the WebShop server running? Start it with ./run_dev.sh in the WebShop repo "
    "(or `python -m web_agent_site.app --log`, without the Attributes tab that run_dev.sh's --attrs adds)."
)
_INVISIBLE_PARENTS = frozenset({"style", "script", "head", "title", "meta", "[document]"})
_SUB_PAGE_NAMES = {name.lower(): name for name in (*SUB_PAGES, "Attributes")}


class WebShopServerError(RuntimeError):
    """The WebShop server could not be reached, answered with an error, or sent a page that is not
    what its templates render. The message names the URL."""


@dataclass(frozen=True)
class _Clickable:
    kind: str  # "button", "product" (a .product-link) or "option" (a radio input)
    option_name: str | None = None  # the radio input's name, for options


def html_to_text(html: str | BeautifulSoup) -> str:
    """A page in the real env's simple mode (``convert_html_to_text(html, simple=True)``)."""
    soup = html if isinstance(html, BeautifulSoup) else BeautifulSoup(html, "html.parser")
    texts = soup.find_all(string=True)
    visible = (t for t in texts if t.parent.name not in _INVISIBLE_PARENTS and not isinstance(t, Comment))
    return SEP.join(t.strip() for t in visible if t != "\n")


def page_clickables(soup: BeautifulSoup) -> dict[str, _Clickable]:
    """The real env's ``text_to_clickable``: ``.btn`` then ``.product-link`` texts (lowercased),
    then radio option values (as written; WebShop lowercases them at load)."""
    clickables: dict[str, _Clickable] = {}
    for tag in soup.find_all(class_="btn") + soup.find_all(class_="product-link"):
        kind = "product" if "product-link" in (tag.get("class") or []) else "button"
        clickables[tag.get_text().lower()] = _Clickable(kind)
    for tag in soup.select('input[type="radio"]'):
        clickables[f"{tag.get('value')}"] = _Clickable("option", tag.get("name"))
    return clickables


def _instruction(soup: BeautifulSoup) -> str | None:
    """The goal text of ``#instruction-text h4`` ("Instruction:<br>..."), without the label."""
    box = soup.find(id="instruction-text")
    heading = box.find("h4") if box is not None else None
    if heading is None:
        return None
    text = heading.get_text().strip()
    return text[len("Instruction:") :].strip() if text.startswith("Instruction:") else text


def _pre_text(soup: BeautifulSoup, element_id: str) -> str | None:
    tag = soup.find(id=element_id)
    pre = tag.find("pre") if tag is not None else None
    return pre.get_text() if pre is not None else None


def _literal(text: str | None):
    """A ``pprint``-ed Python value from the done page, or None when it does not parse."""
    if text is None:
        return None
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _is_loopback(url: str) -> bool:
    host = urllib.parse.urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ServerSession:
    """One shopping session on a real WebShop server: implements ``envs.webshop.session.Session``.

    ``base_url``: the server (``http://127.0.0.1:3000``); ``timeout_s``: for each request (connect
    and read); ``max_keywords_chars``: the longest quoted keywords part a search sends (longer
    searches lose words from the end). A loopback server is reached without any ``*_proxy``
    environment settings. Network and HTTP errors raise ``WebShopServerError``.

    After each action: ``url`` and ``html`` are the page fetched, ``state`` the client-side
    ``PageState``; after ``buy now`` the ``StepResult.info`` has ``asin``, ``options`` (what was
    sent), ``score`` (the reward read from the done page) and, when the page has them (app.py's
    done page does), ``reward_info`` (goal.py's verbose dict: r_type, r_att, w_att, query_match,
    category_match, title_score, r_option/w_option, r_price/w_price) and ``goal`` (the goal dict).
    """

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_keywords_chars: int = DEFAULT_MAX_KEYWORDS_CHARS,
    ) -> None:
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        if max_keywords_chars < 16:
            raise ValueError(f"max_keywords_chars must be >= 16, got {max_keywords_chars}")
        self.base_url = base_url.rstrip("/")
        self.timeout_s = float(timeout_s)
        self.max_keywords_chars = int(max_keywords_chars)
        proxies = urllib.request.ProxyHandler({} if _is_loopback(self.base_url) else None)
        self._opener = urllib.request.build_opener(proxies)
        self.session_id: str | None = None
        self.instruction_text = ""
        self.state = PageState()
        self.url: str | None = None
        self.html = ""
        self._text = ""
        self._clickables: dict[str, _Clickable] = {}
        self._search_bar = False
        self._options: dict[str, str] = {}  # chosen options in click order (the URL's dict)

    # ------------------------------------------------------------------ protocol
    def reset(self, goal_index: int) -> str:
        """Open session ``fixed_<goal_index>`` (app.py's ``goals[goal_index]``) on its search page."""
        if isinstance(goal_index, bool) or not isinstance(goal_index, int) or goal_index < 0:
            raise ValueError(f"goal_index must be an int >= 0, got {goal_index!r}")
        self.session_id = f"fixed_{goal_index}"
        url = f"{self.base_url}/{self.session_id}"
        soup = self._load(url)
        instruction = _instruction(soup)
        if instruction is None or not self._search_bar:
            raise WebShopServerError(
                f"GET {url} did not return WebShop's search page (no #instruction-text or #search_input): "
                f"is {self.base_url} a WebShop server? {START_HINT}"
            )
        self.instruction_text = instruction
        self.state = PageState()
        self._options = {}
        return self._text

    def step(self, action: str) -> StepResult:
        if self.session_id is None:
            raise RuntimeError("ServerSession.step() before reset()")
        state = self.state
        if state.kind == "done":
            return StepResult(self._text, done=True, valid=False)
        name, arg = parse_action(action)
        if name == "search" and arg:
            return self._search(arg.split(" "), page=1)
        if name != "click" or arg is None or arg == "search" or arg not in self._clickables:
            return self._refused()
        if arg == BUY_NOW.lower():
            return self._buy() if state.asin is not None else self._refused()
        if arg == BACK_TO_SEARCH.lower():
            self._load(f"{self.base_url}/{self._part(self.session_id)}")
            self.state, self._options = PageState(), {}
            return StepResult(self._text)
        if arg == NEXT_PAGE.lower():
            return (
                self._search(list(state.keywords), state.page + 1)
                if state.kind == "results"
                else self._refused()
            )
        if arg == PREV_PAGE.lower():
            if state.kind == "results":
                return self._search(list(state.keywords), state.page - 1)
            if state.kind == "item":  # the app re-renders the results: options are forgotten
                return self._search(list(state.keywords), state.page)
            if state.kind == "sub":
                return self._item_page(state.asin, self._options)
            return self._refused()
        if arg in _SUB_PAGE_NAMES:
            return self._sub_page(_SUB_PAGE_NAMES[arg]) if state.asin is not None else self._refused()
        clickable = self._clickables[arg]
        if clickable.kind == "product":
            return self._item_page(arg.upper(), {})
        if clickable.kind == "option" and state.asin is not None and clickable.option_name is not None:
            # recorded under the radio input's name; the last click of a name wins
            return self._item_page(state.asin, {**self._options, clickable.option_name.lower(): arg})
        return self._refused()

    def has_search_bar(self) -> bool:
        return self._search_bar

    def clickables(self) -> list[str]:
        return list(self._clickables)

    def observation(self) -> str:
        return self._text

    # ------------------------------------------------------------------ transitions
    def _refused(self) -> StepResult:
        return StepResult(self._text, valid=False)

    def _search(self, keywords: list[str], page: int) -> StepResult:
        keywords, part = self._keywords_part(keywords)
        self._load(f"{self.base_url}/search_results/{self._part(self.session_id)}/{part}/{page}")
        self.state, self._options = PageState(kind="results", keywords=tuple(keywords), page=page), {}
        return StepResult(self._text)

    def _item_page(self, asin: str, options: dict[str, str]) -> StepResult:
        state = self.state
        self._load(
            f"{self.base_url}/item_page/{self._part(self.session_id)}/{self._part(asin)}/"
            f"{self._keywords_part(list(state.keywords))[1]}/{state.page}/{self._options_part(options)}"
        )
        self._options = dict(options)
        self.state = PageState("item", state.keywords, state.page, asin, tuple(sorted(options.items())))
        return StepResult(self._text)

    def _sub_page(self, sub_page: str) -> StepResult:
        state = self.state
        self._load(
            f"{self.base_url}/item_sub_page/{self._part(self.session_id)}/{self._part(state.asin)}/"
            f"{self._keywords_part(list(state.keywords))[1]}/{state.page}/{sub_page}/"
            f"{self._options_part(self._options)}"
        )
        self.state = PageState("sub", state.keywords, state.page, state.asin, state.options, sub_page)
        return StepResult(self._text)

    def _buy(self) -> StepResult:
        state = self.state
        url = f"{self.base_url}/done/{self._part(self.session_id)}/{self._part(state.asin)}"
        url += f"/{self._options_part(self._options)}"
        soup = self._load(url)
        score_text = _pre_text(soup, "reward")
        try:
            score = float(score_text.strip()) if score_text is not None else None
        except ValueError:
            score = None
        if score is None:
            raise WebShopServerError(
                f"GET {url} did not return WebShop's done page (no number in the <pre> of #reward): "
                f"{score_text!r}"
            )
        info: dict = {"asin": state.asin, "options": dict(self._options), "score": score}
        reward_info, goal = _literal(_pre_text(soup, "reward_info")), _literal(_pre_text(soup, "goal"))
        if isinstance(reward_info, dict):
            info["reward_info"] = reward_info
        if isinstance(goal, dict):
            info["goal"] = goal
        self.state = PageState("done", state.keywords, state.page, state.asin, state.options)
        return StepResult(self._text, reward=score, done=True, info=info)

    # ------------------------------------------------------------------ URLs and HTTP
    def _part(self, text: str) -> str:
        """One path part, quoted; a ``/`` cannot pass a werkzeug server (see the module doc)."""
        if "/" in text:
            raise WebShopServerError(
                f"cannot send {text!r} to the WebShop server: a '/' in a URL path part reaches its routes "
                "as a separator (werkzeug decodes %2F before routing), so the request would 404"
            )
        return urllib.parse.quote(text, safe="")

    def _options_part(self, options: dict[str, str]) -> str:
        return self._part(str(options))

    def _keywords_part(self, keywords: list[str]) -> tuple[list[str], str]:
        """The words kept and the quoted ``str(list)`` part, within ``max_keywords_chars``: the most
        leading words that fit, or the longest start of the first word (binary searches: the
        quoted length only grows with more words or characters)."""

        def quoted(ws: list[str]) -> str:
            return urllib.parse.quote(str([w.replace("/", " ") for w in ws]), safe="")

        def longest(n: int, fits) -> int:  # the largest k in [0, n] with fits(k); fits(0) holds
            low, high = 0, n
            while low < high:
                mid = (low + high + 1) // 2
                low, high = (mid, high) if fits(mid) else (low, mid - 1)
            return low

        limit = self.max_keywords_chars
        words = list(keywords)
        part = quoted(words)
        if len(part) <= limit:
            return words, part
        count = longest(len(words), lambda k: len(quoted(words[:k])) <= limit)
        if count == 0:  # the first word alone is too long: keep its start
            first = words[0]
            words = [first[: longest(len(first), lambda k: len(quoted([first[:k]])) <= limit)]]
        else:
            words = words[:count]
        return words, quoted(words)

    def _load(self, url: str) -> BeautifulSoup:
        """GET ``url`` and make its page the current one."""
        html = self._get(url)
        soup = BeautifulSoup(html, "html.parser")
        self.url, self.html = url, html
        self._text = html_to_text(soup)
        self._clickables = page_clickables(soup)
        self._search_bar = soup.find(id="search_input") is not None
        return soup

    def _get(self, url: str) -> str:
        request = urllib.request.Request(url, headers={"User-Agent": "teamgym-webshop-client"})
        try:
            with self._opener.open(request, timeout=self.timeout_s) as response:
                charset = response.headers.get_content_charset() or "utf-8"
                return response.read().decode(charset, errors="replace")
        except urllib.error.HTTPError as error:
            raise WebShopServerError(
                f"GET {url} -> HTTP {error.code} {error.reason}. {_http_hint(error.code)}"
            ) from error
        except (urllib.error.URLError, OSError, HTTPException) as error:  # refused, DNS, timeout, reset
            reason = getattr(error, "reason", None) or error
            raise WebShopServerError(
                f"cannot reach the WebShop server: GET {url} failed ({type(error).__name__}: {reason}; "
                f"timeout {self.timeout_s:g} s). {START_HINT}"
            ) from error


def _http_hint(code: int) -> str:
    if code == 404:
        return (
            "Not a WebShop route: is the base URL a WebShop server (app.py)? "
            "A '/' inside a path part also 404s."
        )
    if code == 414:
        return "The URL is too long for the server: lower max_keywords_chars."
    if code >= 500:
        return (
            "The server failed (see its console). On the start page: the goal index is past its goals "
            "(app.py serves the human goals only). Elsewhere: the server restarted since reset() "
            "(sessions live in its memory), or an asin it does not have."
        )
    return START_HINT


if __name__ == "__main__":  # pragma: no cover - a manual smoke test against a running server
    import sys

    session = ServerSession(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_BASE_URL)
    print(session.reset(0))
    for line in sys.stdin:
        result = session.step(line.strip())
        print(json.dumps({"valid": result.valid, "reward": result.reward, "done": result.done}), result.info)
        print(result.observation)
        print(session.clickables())
