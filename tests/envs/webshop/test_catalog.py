"""The generated catalog and its shop: WebShop's raw schema, deterministic, every goal achievable,
every hard negative short of 1.0, disjoint splits, seeded prices."""

from __future__ import annotations

import json

import pytest

from envs.webshop import catalog as catalog_module
from envs.webshop.catalog import generate_catalog, load_vocabulary
from envs.webshop.oracle import audit_goals, oracle_query, play_oracle
from envs.webshop.products import load_products
from envs.webshop.shop import ShopConfig, get_shop

pytestmark = pytest.mark.memory(gb=1)  # measured 0.55 GB added (over the 0.5 GB default)

RAW_FIELDS = {
    "asin",
    "name",
    "full_description",
    "small_description",
    "pricing",
    "images",
    "category",
    "query",
    "product_category",
    "customization_options",
}


def test_catalog_is_in_webshops_raw_schema_and_deterministic(tmp_path):
    made = generate_catalog(300, seed=3)
    assert len(made.products) == 300 and len({p["asin"] for p in made.products}) == 300
    assert all(set(p) == RAW_FIELDS for p in made.products)
    assert all(len(p["asin"]) == 10 and p["asin"].startswith("B0") for p in made.products)
    assert made.products == generate_catalog(300, seed=3).products
    assert made.products != generate_catalog(300, seed=4).products
    roles = list(made.roles.values())
    goals = roles.count("goal")
    assert goals >= 30 and sum(r.startswith("negative:") for r in roles) >= 3 * goals
    for asin, info in made.attributes.items():  # items_ins_v2: every product's attributes
        assert info["attributes"], asin
        if made.roles[asin] == "goal":
            assert set(info["instruction_attributes"]) <= set(info["attributes"]) and info["instruction"]
    made.write(tmp_path)  # the files WebShop's own loader reads
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["items_human_ins.json", "items_ins_v2.json", "items_shuffle.json"]
    assert json.loads((tmp_path / "items_shuffle.json").read_text()) == made.products


def test_loader_derives_webshops_fields():
    made = generate_catalog(100, seed=0)
    products = load_products(made.products, made.attributes, made.human)
    assert len(products) == 100
    p = products[0]
    assert p["Title"] == p["name"] and p["Rating"] == "N.A." and p["Reviews"] == []
    assert p["Price"].startswith("$") and 1 <= len(p["pricing"]) <= 2
    assert all(v == v.lower() for values in p["options"].values() for v in values)


def test_loader_quirks_on_hand_made_records():
    raw = [
        {"asin": "nan", "name": "x"},
        {"asin": "B0TOOLONG123", "name": "x"},
        {
            "asin": "B01",
            "name": "A",
            "pricing": "$8.50 to $15.00",
            "small_description": "one bullet",
            "customization_options": {"Color": [{"value": "Black/White"}], "Size": None},
            "query": " Shoes ",
        },
        {"asin": "B01", "name": "duplicate"},
        {"asin": "B02", "name": "B", "pricing": "", "customization_options": None},
        {"asin": "B03", "name": "C", "pricing": "$1,299.00"},
    ]
    products = load_products(raw, {"B01": {"attributes": ["rubber sole"]}})
    assert [p["asin"] for p in products] == ["B01", "B02", "B03"]
    a, b, c = products
    assert a["pricing"] == [8.5, 15.0] and a["Price"] == "$8.5 to $15.0"
    assert a["options"] == {"color": ["black | white"]} and a["BulletPoints"] == ["one bullet"]
    assert a["query"] == "shoes" and a["Attributes"] == ["rubber sole"]
    assert b["pricing"] == [100.0] and b["Price"] == "$100.0" and b["Attributes"] == ["DUMMY_ATTR"]
    assert c["pricing"] == [1299.0]


@pytest.mark.parametrize("goal_type", ["synthetic", "human"])
def test_every_goal_is_achievable_and_no_negative_scores_one(goal_type):
    shop = get_shop(ShopConfig(goal_type=goal_type))
    made = generate_catalog(1000, seed=0)
    report = audit_goals(shop, range(len(shop.goals)), roles=made.roles)
    assert report.goals == len(shop.goals) > 100
    assert report.not_found == [] and report.below_one == [], report
    assert report.perfect_negatives == [], report.perfect_negatives[:5]
    assert max(report.steps) <= 8  # search, at most a few pages, open, options, buy


def test_goals_and_prices_are_seeded():
    a = get_shop(ShopConfig(num_products=200, catalog_seed=5))
    get_shop.cache_clear()
    b = get_shop(ShopConfig(num_products=200, catalog_seed=5))
    assert a is not b
    assert [g["instruction_text"] for g in a.goals] == [g["instruction_text"] for g in b.goals]
    assert a.prices == b.prices
    assert any("price lower than" in g["instruction_text"] for g in a.goals)


def test_splits_are_disjoint_and_unseen_types_stay_out_of_training():
    shop = get_shop(ShopConfig())
    test, val, train = (set(shop.splits[k]) for k in ("test", "validation", "train"))
    assert test and val and train and not (test & val or test & train or val & train)
    assert len(test) + len(val) + len(train) == len(shop.goals)
    unseen = get_shop(ShopConfig(test_split="unseen"))
    held_out = load_vocabulary().unseen_types()
    assert len(held_out) == 5  # one per category
    kinds = {k: {unseen.types[unseen.goals[i]["asin"]] for i in unseen.splits[k]} for k in unseen.splits}
    assert kinds["test"] <= held_out and not (kinds["train"] | kinds["validation"]) & held_out


def test_the_oracle_reaches_a_goal_on_a_later_results_page():
    shop = get_shop(ShopConfig())
    lengths = [len(play_oracle(shop, i)[0]) for i in range(200)]
    assert min(lengths) >= 3  # search, open, buy at the least


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"source": "web"}, "source"),
        ({"goal_type": "mixed"}, "goal_type"),
        ({"num_products": 5}, "num_products"),
        ({"test_split": "unseen", "source": "real"}, "test_split"),
        ({"nouns": "nltk"}, "nouns"),
    ],
)
def test_config_errors_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        get_shop(ShopConfig(**kwargs))


def test_real_source_without_data_names_the_fix(tmp_path, monkeypatch):
    monkeypatch.delenv("WEBSHOP_DATA", raising=False)
    with pytest.raises(FileNotFoundError, match="WEBSHOP_DATA"):
        get_shop(ShopConfig(source="real", num_products=None))
    with pytest.raises(FileNotFoundError, match="items_shuffle"):
        get_shop(ShopConfig(source="real", data_dir=str(tmp_path), num_products=None))


def test_vocabulary_loads():
    vocabulary = catalog_module.load_vocabulary()
    assert len(vocabulary.types) == 30 and vocabulary.brands and vocabulary.lexicon


@pytest.mark.slow
def test_a_large_catalog_plays_only_goals_its_search_can_find():
    shop = get_shop(ShopConfig(num_products=100_000))  # ~10 s to build
    played = {shop.goal_for("test", offset) for offset in range(len(shop.splits["test"]))}
    assert played and all(shop.findable(i) for i in played)
    report = audit_goals(shop, sorted(played))
    assert report.not_found == [] and report.below_one == []
    # the skipped ones really are beyond the 50 hits
    skipped = [i for i in shop.splits["test"] if i not in played]
    assert 0 < len(skipped) < 0.05 * len(shop.splits["test"])  # 13 of 500 when measured
    assert all(shop.goals[i]["asin"] not in shop.search(oracle_query(shop.goals[i])) for i in skipped)
