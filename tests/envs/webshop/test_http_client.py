"""``envs.webshop.http_client.ServerSession`` end to end, against the local look-alike server.

The local server (``local_server.py``) serves app.py's URL scheme with pages shaped like the real
templates (its text and clickables were checked equal to the real Jinja templates rendered by
Flask), decodes paths as werkzeug does, and records what it received.
"""

from __future__ import annotations

import socket

import pytest

pytest.importorskip("bs4")

from envs.webshop.http_client import (  # noqa: E402
    ServerSession,
    WebShopServerError,
    html_to_text,
)
from envs.webshop.session import SEP, PageState  # noqa: E402
from tests.envs.webshop.local_server import GOALS, LocalWebShopServer  # noqa: E402

INSTR_0 = GOALS[0]["instruction_text"]
INSTR_1 = GOALS[1]["instruction_text"]
ITEM_B0ABC = SEP.join(
    ["Instruction:", INSTR_0, "Back to Search", "< Prev", "color", "black | white", "navy", "size", "9"]
    + [
        "10.5 wide",
        "Red Shoe",
        "Price: $45.0",
        "Rating: N.A.",
        "Description",
        "Features",
        "Reviews",
        "Buy Now",
    ]
)


@pytest.fixture
def server():
    with LocalWebShopServer() as running:
        yield running


@pytest.fixture
def session(server):
    return ServerSession(server.base_url)


def _results_text(instruction: str, page: int, rows: list[tuple[str, str, str]], total: int = 12) -> str:
    head = [
        f"Instruction: [SEP] {instruction} [SEP] Back to Search [SEP] Page {page} (Total results: {total})"
    ]
    head.append("< Prev [SEP] Next >" if page > 1 else "Next >")
    return SEP.join(head + [SEP.join(row) for row in rows])


def _to_item(session: ServerSession, query: str, asin: str) -> None:
    assert session.step(f"search[{query}]").valid
    assert session.step(f"click[{asin}]").valid


# ---------------------------------------------------------------------- a whole episode
def test_an_episode_end_to_end(server, session):
    assert session.reset(0) == f"WebShop [SEP] Instruction: [SEP] {INSTR_0} [SEP] Search"
    assert session.instruction_text == INSTR_0
    assert session.has_search_bar() and session.clickables() == ["search"]
    assert session.state == PageState()

    result = session.step("search[Red Shoes]")
    assert (result.valid, result.reward, result.done) == (True, 0.0, False)
    plain = [(f"B0PLN{i:02d}", f"Plain Shoe {i}", f"${20 + i}.0") for i in range(10)]
    first = [("B0ABC", "Red Shoe", "$45.0"), ("B0ODD", "Odd Shoe Insert", "$8.5 to $15.0"), *plain[:8]]
    assert result.observation == _results_text(INSTR_0, 1, first)
    assert session.state == PageState(kind="results", keywords=("red", "shoes"), page=1)
    assert not session.has_search_bar()
    assert session.clickables() == ["back to search", "next >", *(asin.lower() for asin, _, _ in first)]
    assert server.shop.searches[-1] == ["red", "shoes"]  # sent as a list literal, split on spaces

    result = session.step("click[Next >]")
    assert result.observation == _results_text(INSTR_0, 2, plain[8:])
    assert session.clickables() == ["back to search", "< prev", "next >", "b0pln08", "b0pln09"]
    assert session.state.page == 2
    assert session.step("click[< prev]").observation == _results_text(INSTR_0, 1, first)

    result = session.step("click[B0ABC]")
    assert result.observation == ITEM_B0ABC
    assert session.state == PageState(kind="item", keywords=("red", "shoes"), page=1, asin="B0ABC")
    assert session.clickables() == [
        "back to search",
        "< prev",
        "description",
        "features",
        "reviews",
        "buy now",
        "black | white",
        "navy",
        "9",
        "10.5 wide",
    ]

    for value in ("black | white", "navy", "10.5 wide"):  # the last click of a name wins
        result = session.step(f"click[{value}]")
        assert result.valid and result.observation == ITEM_B0ABC  # choosing does not change the text
    assert session.state.options == (("color", "navy"), ("size", "10.5 wide"))

    result = session.step("click[Description]")
    assert result.observation == (
        f"Instruction: [SEP] {INSTR_0} [SEP] Back to Search [SEP] < Prev"
        " [SEP] A red running shoe with a rubber sole."
    )
    assert session.state.kind == "sub" and session.state.sub_page == "Description"
    assert session.clickables() == ["back to search", "< prev"]
    assert session.step("click[features]").valid is False  # only back and prev on a sub-page
    assert session.step("click[< prev]").observation == ITEM_B0ABC
    assert session.state.kind == "item" and session.state.options == (
        ("color", "navy"),
        ("size", "10.5 wide"),
    )
    session.step("click[features]")
    assert session.observation().endswith("< Prev [SEP] rubber sole [SEP] machine washable")
    session.step("click[< prev]")
    session.step("click[reviews]")
    assert session.observation() == f"Instruction: [SEP] {INSTR_0} [SEP] Back to Search [SEP] < Prev"
    session.step("click[< prev]")

    result = session.step("click[Buy Now]")
    assert (result.valid, result.reward, result.done) == (True, 1.0, True)
    assert result.info["asin"] == "B0ABC" and result.info["score"] == 1.0
    assert result.info["options"] == {"color": "navy", "size": "10.5 wide"}
    assert result.info["reward_info"] == {"r_type": 1.0, "r_option": 1.0, "r_price": True}
    assert result.info["goal"]["asin"] == "B0ABC" and result.info["goal"]["price_upper"] == 50.0
    assert result.observation.startswith("Thank you for shopping with us! [SEP] Your code: [SEP] ")
    assert "Your score (min 0.0, max 1.0) [SEP] 1.0 [SEP] Reward Details" in result.observation
    assert server.shop.purchases == [("fixed_0", "B0ABC", {"color": "navy", "size": "10.5 wide"})]
    assert session.state.kind == "done" and session.clickables() == []

    # the episode is over: everything is refused, nothing is sent
    sent = len(server.shop.paths)
    for action in ("search[red shoes]", "click[buy now]", "click[back to search]"):
        after = session.step(action)
        assert (after.valid, after.done, after.observation) == (False, True, result.observation)
    assert len(server.shop.paths) == sent

    # reset plays the same goal again, from its search page
    assert session.reset(0).endswith(f"{INSTR_0} [SEP] Search") and session.state == PageState()


def test_a_partial_purchase_scores_the_fraction_and_prev_forgets_options(server, session):
    session.reset(0)
    _to_item(session, "red shoe", "b0abc")
    session.step("click[navy]")
    # < prev from the item re-renders the results (the app forgets the options); back to the item: none
    assert session.step("click[< prev]").observation.startswith(f"Instruction: [SEP] {INSTR_0} [SEP] Back to")
    assert session.state == PageState(kind="results", keywords=("red", "shoe"), page=1)
    session.step("click[b0abc]")
    assert session.state.options == ()
    session.step("click[navy]")
    result = session.step("click[buy now]")
    assert result.done and result.reward == pytest.approx(2 / 3)  # navy + price, not the size
    assert result.info["options"] == {"color": "navy"}


def test_back_to_search_and_a_search_from_any_page(server, session):
    session.reset(1)
    _to_item(session, "tea", "b0tea")
    session.step("click[description]")
    assert session.step("search[lamp]").valid  # like the real env: search works on any page
    assert session.state == PageState(kind="results", keywords=("lamp",), page=1)
    assert "B0LAMP [SEP] Desk Lamp [SEP] $30.0" in session.observation()
    session.step("click[b0lamp]")
    assert session.clickables() == [
        "back to search",
        "< prev",
        "description",
        "features",
        "reviews",
        "buy now",
    ]
    result = session.step("click[back to search]")
    assert result.observation == f"WebShop [SEP] Instruction: [SEP] {INSTR_1} [SEP] Search"
    assert session.state == PageState() and session.has_search_bar()


def test_next_past_the_last_page_is_an_empty_page(session):
    session.reset(0)
    session.step("search[shoe]")
    session.step("click[next >]")
    result = session.step("click[next >]")
    assert result.observation == _results_text(INSTR_0, 3, [])
    assert session.clickables() == ["back to search", "< prev", "next >"]


def test_the_attributes_tab_when_the_server_shows_it():
    with LocalWebShopServer(show_attrs=True) as server:  # what run_dev.sh's --attrs does
        session = ServerSession(server.base_url)
        session.reset(0)
        _to_item(session, "red shoe", "b0abc")
        assert "attributes" in session.clickables()
        assert session.observation().endswith("Reviews [SEP] Attributes [SEP] Buy Now")
        session.step("click[attributes]")
        assert session.state.sub_page == "Attributes"
        assert session.observation().endswith("< Prev [SEP] rubber sole")


# ---------------------------------------------------------------------- no-ops
def test_invalid_actions_change_nothing_and_send_nothing(server, session):
    start = session.reset(0)
    refused = [
        "click[search]",  # a clickable, but refused
        "click[next >]",  # not on this page
        "click[b0abc]",
        "click[buy now]",
        "search[]",  # no argument: not name[arg]
        "search",
        "",
        "buy it",
        "Search[red shoes]",  # the name is case-sensitive
        "click [navy]",
    ]
    sent = len(server.shop.paths)
    for action in refused:
        result = session.step(action)
        assert (result.valid, result.reward, result.done, result.info) == (False, 0.0, False, {}), action
        assert result.observation == start and session.state == PageState()
    assert len(server.shop.paths) == sent

    page_1 = session.step("search[red shoe]").observation
    state = session.state
    for action in ("click[< prev]", "click[navy]", "click[description]", "click[b0zzz]", "click[buy now]"):
        result = session.step(action)
        assert (result.valid, result.observation, session.state) == (False, page_1, state), action

    item = session.step("click[b0abc]").observation
    state = session.state
    for action in ("click[b0odd]", "click[next >]", "click[mint]", "click[10.5]"):
        result = session.step(action)
        assert (result.valid, result.observation, session.state) == (False, item, state), action
    assert session.step("click[NAVY]").valid  # the argument is lowercased, as in the real env


# ---------------------------------------------------------------------- quoting
AWKWARD = ['10.5" wide', "#2 pack", "it's 50% off? {ok}", "grün ☃", "a&b <c>"]


def test_awkward_option_values_round_trip_through_the_url(server, session):
    session.reset(1)
    _to_item(session, "odd insert", "b0odd")
    item = session.observation()
    assert f"style [SEP] {' [SEP] '.join(AWKWARD)} [SEP] pack [SEP] pack of 2 [SEP] \\n literal" in item
    for value in [*AWKWARD, "\\n literal"]:
        assert value in session.clickables()
        result = session.step(f"click[{value}]")
        assert result.valid and result.observation == item, value
        assert "#" not in session.url and "?" not in session.url  # quoted, not a fragment or a query
        name = "pack" if value.startswith("\\") else "style"
        assert dict(session.state.options)[name] == value
        # the app's literal_eval of the path got the same dict: the radio values it renders next
        # carry the option in their data-url, and buying sends it back below
    session.step("click[features]")
    session.step("click[< prev]")  # the options survive the sub-page round trip
    assert dict(session.state.options) == {"style": "a&b <c>", "pack": "\\n literal"}
    session.step("click[#2 pack]")
    session.step("click[pack of 2]")
    result = session.step("click[buy now]")
    assert result.reward == 1.0
    assert server.shop.purchases == [("fixed_1", "B0ODD", {"style": "#2 pack", "pack": "pack of 2"})]

    for value in AWKWARD:  # and each awkward value reaches the server intact
        session.reset(1)
        _to_item(session, "odd insert", "b0odd")
        session.step(f"click[{value}]")
        assert session.step("click[buy now]").info["options"] == {"style": value}
        assert server.shop.purchases[-1] == ("fixed_1", "B0ODD", {"style": value})


def test_keywords_with_quotes_slashes_and_brackets(server, session):
    session.reset(0)
    result = session.step("search[3/4 'red\" shoe #1 ?x {b} %20 é]")  # no '[': parse_action's regex
    assert result.valid and session.state.keywords == ("3/4", "'red\"", "shoe", "#1", "?x", "{b}", "%20", "é")
    # a '/' cannot reach a werkzeug route (it decodes %2F first): sent as a space, the same tokens
    assert server.shop.searches[-1] == ["3 4", "'red\"", "shoe", "#1", "?x", "{b}", "%20", "é"]
    assert "Page 1 (Total results: 12)" in result.observation
    session.step("click[b0abc]")
    assert session.step("click[< prev]").valid and session.state.kind == "results"  # keywords survive
    assert server.shop.searches[-1] == server.shop.searches[0]


def test_a_huge_non_ascii_search_is_cut_to_fit_the_url(server, session):
    session.reset(0)
    query = "shoe " + "é☃ " * 20_000
    result = session.step(f"search[{query}]")
    assert result.valid and session.state.kind == "results"
    kept = session.state.keywords
    assert 1 < len(kept) < 20_000 and kept == tuple(query.split(" ")[: len(kept)])
    assert server.shop.searches[-1] == list(kept)  # the server got exactly the words kept
    assert len(session.url) < session.max_keywords_chars + 200
    assert "Total results: 12" in result.observation

    session.step(f"search[{'x' * 100_000}]")  # one enormous word: its start is kept
    (word,) = session.state.keywords
    assert 0 < len(word) < 100_000 and set(word) == {"x"}
    assert server.shop.searches[-1] == [word]


def test_a_slash_where_no_url_can_carry_it_is_a_clear_error(session):
    with pytest.raises(WebShopServerError, match="'/'"):
        session._part("color/style")


# ---------------------------------------------------------------------- errors
def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_no_server_is_a_clear_error():
    base = f"http://127.0.0.1:{_closed_port()}"
    session = ServerSession(base)
    with pytest.raises(WebShopServerError) as raised:
        session.reset(0)
    message = str(raised.value)
    assert (
        f"{base}/fixed_0" in message
        and "run_dev.sh" in message
        and "Is the WebShop server running?" in message
    )


def test_a_server_gone_mid_episode_is_a_clear_error_and_the_page_stays():
    with LocalWebShopServer() as server:
        session = ServerSession(server.base_url)
        session.reset(0)
        _to_item(session, "red shoe", "b0abc")
        session.step("click[navy]")
    page, state = session.observation(), session.state  # the server is closed now
    with pytest.raises(WebShopServerError, match="Is the WebShop server running"):
        session.step("click[10.5 wide]")
    assert (session.observation(), session.state) == (page, state)


def test_a_server_that_never_answers_times_out():
    with socket.socket() as listener:  # accepts connections (the kernel's backlog), never replies
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        session = ServerSession(f"http://127.0.0.1:{listener.getsockname()[1]}", timeout_s=1.0)
        with pytest.raises(WebShopServerError, match="timeout 1 s"):
            session.reset(0)


def test_http_errors_name_the_url_and_a_likely_cause(server):
    session = ServerSession(server.base_url)
    with pytest.raises(WebShopServerError, match=r"fixed_9 -> HTTP 500 .*human goals"):
        session.reset(9)  # past the goals: app.py's IndexError
    with pytest.raises(WebShopServerError, match=r"HTTP 404 .*WebShop route"):
        ServerSession(server.base_url + "/not/webshop").reset(0)
    session.reset(0)
    session.session_id = "fixed_never_started"  # a session the server does not know: app.py's KeyError
    with pytest.raises(WebShopServerError, match=r"search_results/fixed_never_started/.* -> HTTP 500"):
        session.step("search[shoe]")


def test_a_loopback_server_is_reached_past_proxy_settings(server, monkeypatch):
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{_closed_port()}")
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    assert ServerSession(server.base_url).reset(0).endswith("[SEP] Search")


def test_misuse_is_refused_early(session):
    with pytest.raises(RuntimeError, match="before reset"):
        session.step("search[shoe]")
    for bad in (-1, "0", 1.0, True):
        with pytest.raises(ValueError):
            session.reset(bad)
    with pytest.raises(ValueError):
        ServerSession(timeout_s=0)


# ---------------------------------------------------------------------- the text itself
def test_simple_mode_text_follows_beautifulsoup_like_the_real_env():
    page = (
        "<html><head><title>t</title><style>p {}</style></head><body>\n"
        "  <h4>Instruction:<br>find it</h4>\n  <!-- hidden comment -->\n"
        "  <script>var x = 1;</script><p> a </p> <p>b</p><pre>  kept  </pre>\n</body></html>"
    )
    # a whitespace-only node holding a newline is dropped; one without (between the <p>s) is an
    # empty segment, exactly what the real env gives
    assert html_to_text(page) == "Instruction: [SEP] find it [SEP] a [SEP]  [SEP] b [SEP] kept"
