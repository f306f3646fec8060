"""The page state machine and its text: golden strings from WebShop's real templates, then the
transitions of WebAgentTextEnv (search anywhere, clickables only, options cleared by the results)."""

import json
from pathlib import Path

import pytest

from envs.webshop.pages import (
    ShopSession,
    render_done,
    render_item,
    render_results,
    render_search,
    render_sub_page,
    simple_text,
)
from envs.webshop.session import SUB_PAGES, PageState, parse_action

GOLDEN = json.loads((Path(__file__).parent / "fixtures" / "page_golden.json").read_text())
BY_ASIN = {p["asin"]: p for p in GOLDEN["products"]}


def _ours(case: dict) -> str:
    instruction = case.get("instruction")
    if case["page"] == "search":
        return render_search(instruction)
    if case["page"] == "results":
        products = [BY_ASIN[a] for a in case["asins"]]
        return render_results(instruction, case["page_number"], case["total"], products)
    if case["page"] == "item":
        subs = SUB_PAGES + (("Attributes",) if case["show_attrs"] else ())
        return render_item(instruction, BY_ASIN[case["asin"]], subs)
    if case["page"] == "sub":
        return render_sub_page(instruction, BY_ASIN[case["asin"]], case["sub_page"])
    return render_done(case["asin"], case["options"], case["reward"])


@pytest.mark.parametrize("case", GOLDEN["cases"], ids=lambda c: c["page"])
def test_pages_match_the_real_templates_string_for_string(case):
    assert _ours(case) == case["text"]


def test_golden_cases_cover_the_quirks():
    texts = [c["text"] for c in GOLDEN["cases"]]
    assert any(" [SEP]  [SEP] " in t for t in texts)  # a blank bullet: an empty segment
    assert any("\\u003c" in t for t in texts)  # tojson's HTML-safe escapes on the done page
    assert len(texts) >= 60


def test_simple_text_follows_beautifulsoup_whitespace_rules():
    assert simple_text(["a", "", "b"]) == "a [SEP] b"  # no node
    assert simple_text(["a", " \t", "b"]) == "a [SEP]  [SEP] b"  # " ": an empty segment
    assert simple_text(["a", " \n ", "b"]) == "a [SEP] b"  # "\n": dropped
    assert simple_text(["  a  "]) == "a"


def test_parse_action_is_the_real_regex():
    assert parse_action("click[Buy Now]") == ("click", "buy now")
    # greedy groups: a "[" inside the argument moves the split, so this is no search at all
    assert parse_action("search[a [b] c]") == ("search[a ", "b] c")
    assert parse_action("click[]") == ("click[]", None)
    assert parse_action("nothing") == ("nothing", None)


class _TinyShop:
    """Three products from the golden file and a fixed search (the engine is tested elsewhere)."""

    def __init__(self, hits):
        self.by_asin = BY_ASIN
        self.hits = hits
        self.prices = {asin: 40.0 for asin in BY_ASIN}
        self.goals = [{"instruction_text": "i need shoes", "asin": "B0ABC12345"}]
        self.queries = []

    def search(self, query, k=50):
        self.queries.append(query)
        return self.hits[:k]

    def reward(self, product, goal, price, options):
        class R:
            total = 1.0 if product["asin"] == goal["asin"] and options.get("color") == "navy" else 0.5

        return R()


def _session(hits=None):
    shop = _TinyShop(hits if hits is not None else list(BY_ASIN) * 5)
    session = ShopSession(shop)
    session.reset(0)
    return session, shop


def test_a_whole_episode_through_the_pages():
    s, shop = _session()
    assert s.clickables() == ["search"] and s.has_search_bar()
    assert not s.step("click[search]").valid  # the real env refuses it
    r = s.step("search[Red  Shoes]")
    assert r.valid and shop.queries == ["red  shoes"] and s.state.keywords == ("red", "", "shoes")
    assert s.state == PageState(kind="results", keywords=("red", "", "shoes"), page=1)
    assert "< prev" not in s.clickables() and "next >" in s.clickables()
    assert s.observation().startswith(
        "Instruction: [SEP] i need shoes [SEP] Back to Search [SEP] Page 1 (Total results: 15)"
    )
    s.step("click[next >]")
    assert s.state.page == 2 and "< prev" in s.clickables()
    s.step("click[b0abc12345]")
    assert s.state.kind == "item" and s.state.asin == "B0ABC12345"
    assert s.clickables()[:7] == [
        "back to search",
        "< prev",
        "description",
        "features",
        "reviews",
        "buy now",
        "black | white",
    ]
    s.step("click[black | white]")
    s.step("click[navy]")  # the last click of an option name wins
    s.step("click[9]")
    assert dict(s.state.options) == {"color": "navy", "size": "9"}
    before = s.observation()
    s.step("click[description]")
    assert s.state.kind == "sub" and s.observation().endswith(
        "< Prev [SEP] The Lumora running shoes are light & breathable."
    )
    s.step("click[< prev]")
    assert s.observation() == before and dict(s.state.options) == {"color": "navy", "size": "9"}
    result = s.step("click[Buy Now]")
    assert result.done and result.reward == 1.0 and s.state.kind == "done"
    assert result.info["options"] == {"color": "navy", "size": "9"}
    assert s.observation().startswith("Thank you for shopping with us!")
    assert not s.step("click[back to search]").valid  # the episode is over


def test_prev_from_an_item_clears_the_options_and_next_goes_past_the_end():
    s, _ = _session(hits=list(BY_ASIN))
    s.step("search[shoes]")
    s.step("click[b0abc12345]")
    s.step("click[navy]")
    s.step("click[< prev]")
    assert s.state.kind == "results" and s.state.options == () and s.state.page == 1
    s.step("click[next >]")  # always offered, even with 3 hits: an empty page 2
    assert s.observation().endswith("Page 2 (Total results: 3) [SEP] < Prev [SEP] Next >")
    s.step("click[back to search]")
    assert s.state == PageState() and s.observation().startswith("WebShop [SEP]")


@pytest.mark.parametrize(
    "action",
    [
        "",
        "click",
        "click[nothing here]",
        "search[]",
        "buy now",
        "\x00" * 50,
        "click[b0abc12345" + "]" * 3,
        "é" * 10_000,
    ],
)
def test_anything_else_changes_nothing(action):
    s, _ = _session()
    s.step("search[shoes]")
    state, page = s.state, s.observation()
    result = s.step(action)
    assert not result.valid
    assert s.state == state and s.observation() == page and result.reward == 0 and not result.done


def test_search_works_from_any_page_as_in_the_real_text_env():
    s, _ = _session()
    s.step("search[shoes]")
    s.step("click[b0abc12345]")
    assert s.step("search[coffee]").valid and s.state.kind == "results" and s.state.asin is None


def test_an_option_value_under_two_names_goes_to_the_last():
    s, _ = _session(hits=["B0QQQ00001"])
    s.step("search[odd]")
    s.step("click[b0qqq00001]")
    assert s.clickables().count("one size") == 1
    s.step("click[one size]")
    assert dict(s.state.options) == {"style": "one size"}
