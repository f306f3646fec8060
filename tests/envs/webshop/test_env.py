"""webshop-v0: the env over the generated shop (conformance and hostile text run in
tests/envs/test_conformance.py for every registered env): prompts, rewards, teams, scripted
players, anchors, real data from a fixture in WebShop's schema."""

from __future__ import annotations

import json

import numpy as np
import pytest

import envs
from envs.splits import split_seeds, validation_seeds
from envs.webshop.session import PageState
from tests.envs.conftest import play_oracle


def _play(env, seed, policy):
    env.reset(seed=seed)
    while env.agents:
        agent = env.agent_selection
        done = env.terminations[agent] or env.truncations[agent]
        env.step(None if done else policy(env, agent))
    return env


@pytest.mark.parametrize("team", ["single", "mas"])
def test_oracle_wins_every_task_it_plays(team):
    env = envs.make("webshop-v0", team=team, split="test")
    for seed in split_seeds("test", 20):
        assert play_oracle(env, seed).success, seed


def test_a_purchase_pays_webshops_score_to_the_team_and_ends_the_episode():
    env = envs.make("webshop-v0", team="single", split="test")
    env.reset(seed=split_seeds("test", 1)[0])
    agent = "shopper_0"
    assert env.observe(agent)["prompt"].count("WebShop [SEP] Instruction: [SEP]") == 1
    assert "search[<your query>]" in env.infos[agent]["legal_moves"]
    env.step(f"<answer>search[{env.goal['instruction_text']}]</answer>")
    assert env.rewards[agent] == 0 and not env.terminations[agent]
    first = env.session.clickables()[2]  # back to search, next >, then the first asin
    env.step(f"<answer>click[{first}]</answer>")
    assert env.session.state.kind == "item"
    env.step("<answer>click[buy now]</answer>")
    assert env.terminations[agent] or not env.agents
    terms = env.infos[agent]["reward_terms"] if env.agents else None
    score = env.purchase["score"]
    assert 0.0 <= score <= 1.0 and env.success == (score == 1.0)
    if terms is not None:
        assert terms["team/score"] == score


def test_invalid_actions_cost_the_penalty_and_change_nothing():
    env = envs.make("webshop-v0", team="single", split="test")
    env.reset(seed=split_seeds("test", 1)[0])
    state = env.session.state
    for text in [
        "no tags",
        "<answer>click[nothing]</answer>",
        "<answer></answer>",
        "<answer>search[]</answer>",
    ]:
        env.step(text)
        assert env.infos["shopper_0"]["invalid_action"] and env.rewards["shopper_0"] == -0.1
        assert env.session.state == state


@pytest.mark.parametrize("reward", [0.0, 0.1])
def test_the_subgoal_term_pays_each_milestone_of_a_right_purchase_once(reward):
    env = envs.make("webshop-v0", team="single", split="test", subgoal_reward=reward)
    seed = split_seeds("test", 1)[0]
    env.reset(seed=seed)
    goal = env.goal
    wanted = env.shop.option_clicks(goal, env.shop.by_asin[goal["asin"]])
    paid, reopened = [], False

    def act(text):
        env.step(text)
        paid.append(env.infos["shopper_0"]["reward_terms"].get("local/subgoal", 0.0))

    while not (env.terminations["shopper_0"] or env.truncations["shopper_0"]):
        action = env.oracle_response("shopper_0")
        act(action)
        if action == f"<answer>click[{goal['asin'].lower()}]</answer>" and not reopened:
            # back to the results and open the product again: nothing more is paid
            act("<answer>click[< prev]</answer>")
            act(action)
            assert paid[-2:] == [0.0, 0.0]
            reopened = True
    assert reopened
    assert env.success and env.infos["shopper_0"]["reward_terms"]["team/score"] == 1.0
    # shown, opened, and one per goal option value: each once
    assert sum(paid) == pytest.approx(reward * (2 + len(wanted)))


def test_the_subgoal_term_needs_the_local_shop():
    with pytest.raises(ValueError, match="subgoal_reward=0"):
        envs.make("webshop-v0", backend="server", server_url="http://127.0.0.1:1", subgoal_reward=0.1)


def test_rule_baseline_buys_every_time_and_sometimes_right():
    env = envs.make("webshop-v0", team="single", split="test")
    scores = []
    for seed in split_seeds("test", 30):
        _play(env, seed, lambda e, a: e.heuristic_response(a))
        assert env.purchase, seed  # it always buys within the horizon
        scores.append(env.purchase["score"])
    assert 0.0 < np.mean(scores) < 1.0


def test_planner_sees_the_record_and_the_shopper_the_plan():
    env = envs.make("webshop-v0", team="mas", split="test")
    env.reset(seed=split_seeds("test", 1)[0])
    env.step("<answer>search the instruction then buy</answer>")
    shopper = env.observe("shopper_0")["prompt"]
    assert "Your planner's plan: search the instruction then buy" in shopper
    env.step("<answer>search[shoes]</answer>")
    planner = env.observe("planner_0")["prompt"]
    assert "> search[shoes]" in planner and "Page 1 (Total results:" in planner
    assert env.infos["planner_0"]["legal_moves"] == []


def test_state_key_is_the_page_state_and_clones_are_independent():
    env = envs.make("webshop-v0", team="single", split="test")
    env.reset(seed=split_seeds("test", 1)[0])
    assert env.state_key() == env.state_key() and isinstance(env.session.state, PageState)
    start = env.state_key()
    twin = env.clone()
    twin.step("<answer>search[shoes]</answer>")
    assert env.state_key() == start != twin.state_key()
    assert twin.shop is env.shop  # the catalog and index are shared, not copied


def test_train_validation_and_test_seeds_play_their_own_goals():
    env = envs.make("webshop-v0", team="single")
    shop = env.shop
    assert {env.goal_index(s) for s in range(50)} <= set(shop.splits["train"])
    assert {env.goal_index(s) for s in validation_seeds(50)} <= set(shop.splits["validation"])
    test_env = envs.make("webshop-v0", team="single", split="test")
    assert {test_env.goal_index(s) for s in split_seeds("test", 50)} <= set(shop.splits["test"])


def test_benchmark_settings_name_the_catalog_and_goal_type():
    env = envs.make("webshop-v0", goal_type="human", num_products=300)
    assert env.benchmark_settings() == {
        "source": "generated",
        "num_products": 300,
        "goal_type": "human",
        "test_split": "first500",
        "catalog_seed": 0,
    }


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"backend": "http"}, "backend"),
        ({"backend": "server"}, "server_url"),
        ({"history": -1}, "history"),
        ({"subgoal_reward": -0.1}, "subgoal_reward"),
        ({"goal_type": "both"}, "goal_type"),
    ],
)
def test_bad_options_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        envs.make("webshop-v0", **kwargs)


# ------------------------------------------------------------------ real data (fixture)
def _real_fixture(directory):
    """A few products in WebShop's raw schema, with the real files' messiness (a price range, a
    string bullet, option images, null options, a 'nan' asin, a duplicate)."""
    products = []
    for i in range(12):
        products.append(
            {
                "asin": f"B07REAL{i:03d}",
                "name": f"Acme Trail Running Shoes Model {i}" if i % 2 else f"Bright Citrus Deodorant {i} oz",
                "full_description": "Lightweight and breathable."
                if i % 2
                else "Aluminum free, for sensitive skin.",
                "small_description": ["Rubber sole", "Lace up"] if i % 3 else "Long lasting",
                "pricing": "$24.99 to $39.99" if i % 4 == 0 else f"${10 + i}.50",
                "images": [f"https://example.invalid/{i}.jpg"],
                "category": "fashion" if i % 2 else "beauty",
                "query": "Running Shoes " if i % 2 else "deodorant",
                "product_category": "Clothing, Shoes & Jewelry › Men › Shoes"
                if i % 2
                else "Beauty › Personal Care",
                "customization_options": (
                    {
                        "Color": [{"value": "Black/Red", "image": "x.jpg"}, {"value": "Navy", "image": None}],
                        "Size": [{"value": "9", "image": None}, {"value": "10 Wide", "image": None}],
                    }
                    if i % 2
                    else None
                ),
                "brand": "Acme",
                "list_price": "$50",
            }
        )
    products.append({**products[0], "name": "duplicate"})
    products.append({**products[1], "asin": "nan"})
    attributes = {
        p["asin"]: {
            "attributes": ["rubber sole", "lace up"] if i % 2 else ["aluminum free"],
            "instruction": "i need running shoes with a rubber sole" if i % 2 else None,
            "instruction_attributes": ["rubber sole"] if i % 2 else None,
        }
        for i, p in enumerate(products[:12])
    }
    human = {
        p["asin"]: [
            {
                "instruction": "i want rubber sole running shoes in navy, size 9.",
                "instruction_attributes": ["rubber sole"],
                "instruction_options": ["navy", "9"],
            }
        ]
        for p in products[:12:2]
    }
    for name, data in (
        ("items_shuffle_1000.json", products),
        ("items_ins_v2_1000.json", attributes),
        ("items_human_ins.json", human),
    ):
        (directory / name).write_text(json.dumps(data))


@pytest.mark.parametrize("goal_type", ["synthetic", "human"])
def test_real_data_plays_from_webshop_data(tmp_path, monkeypatch, goal_type):
    _real_fixture(tmp_path)
    monkeypatch.setenv("WEBSHOP_DATA", str(tmp_path))
    env = envs.make(
        "webshop-v0", source="real", num_products=1000, goal_type=goal_type, team="single", split="test"
    )
    assert len(env.shop.products) == 12  # 'nan' and the duplicate dropped
    assert env.benchmark_settings()["source"] == "real"
    assert play_oracle(env, split_seeds("test", 1)[0]).purchase  # the oracle buys the goal product
    again = envs.make(
        "webshop-v0", source="real", num_products=1000, goal_type=goal_type, data_dir=str(tmp_path)
    )
    assert [g["instruction_text"] for g in again.shop.goals] == [
        g["instruction_text"] for g in env.shop.goals
    ]


# ------------------------------------------------------------------ a real server's backend
def test_server_backend_plays_an_episode_through_http():
    pytest.importorskip("bs4")
    from tests.envs.webshop.local_server import GOALS, LocalWebShopServer

    with LocalWebShopServer() as server:
        env = envs.make(
            "webshop-v0", team="single", split="test", backend="server", server_url=server.base_url
        )
        env.reset(seed=split_seeds("test", 1)[0])  # test seed 0 -> session fixed_0
        assert env.goal["instruction_text"] == GOALS[0]["instruction_text"]
        assert env.observe("shopper_0")["prompt"].count("WebShop [SEP] Instruction: [SEP]") == 1
        env.step("<answer>search[shoe]</answer>")
        assert env.session.state.kind == "results" and not env.infos["shopper_0"]["invalid_action"]
        env.step("<answer>click[nothing]</answer>")
        assert env.infos["shopper_0"]["invalid_action"]
        first = next(c for c in env.session.clickables() if c.startswith("b0"))
        env.step(f"<answer>click[{first}]</answer>")
        env.step("<answer>click[buy now]</answer>")
        assert env.terminations["shopper_0"] and 0.0 <= env.purchase["score"] <= 1.0
        assert env.benchmark_settings() == {"backend": "server", "server_url": server.base_url}
        with pytest.raises(NotImplementedError, match="local"):
            env.oracle_action()
