"""A loaded shop: products, prices, goals, search index and reward, built once and shared.

``get_shop(config)`` builds (and caches, so every env and clone in a process shares one) the shop
for a ``ShopConfig``: a generated catalog (``envs.webshop.catalog``; 1,000 products by default,
verl-agent's "small" setting) or WebShop's real data from ``$WEBSHOP_DATA``. Both go through
``envs.webshop.products`` (WebShop's loader), are searched by ``envs.webshop.search`` (BM25,
Lucene's formula) and scored by ``envs.webshop.reward`` (WebShop's ``get_reward``).

Goal splits mirror WebShop's by goal index after its seeded shuffle: test = the first 500 goals,
validation ("eval" in WebShop) the next 1,000, train the rest (each at most a quarter of the goals
when there are fewer than 6,000, so small catalogs keep a train split). ``test_split="unseen"``
(generated catalogs) tests instead on the goals of product types that training never sees (one
per category), and trains on the goals of the other types.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from envs.webshop import catalog as catalog_module
from envs.webshop import products as products_module
from envs.webshop.oracle import oracle_query
from envs.webshop.reward import LexiconTagger, Reward, SpacyTagger, fuzz_score, get_reward, normalize_color
from envs.webshop.search import SearchIndex

__all__ = ["GOAL_TYPES", "Shop", "ShopConfig", "get_shop", "PRICE_SEED"]

GOAL_TYPES = ("synthetic", "human")
TEST_SPLITS = ("first500", "unseen")
PRICE_SEED = 0
TEST_GOALS, EVAL_GOALS = 500, 1000


@dataclass(frozen=True)
class ShopConfig:
    """Everything that decides a shop's content (the cache key).

    source: ``"generated"`` or ``"real"``; num_products: catalog size (generated: any >= 10;
    real: WebShop's prefix, None for all); catalog_seed: the generated catalog's seed; goal_type:
    ``"synthetic"`` (verl-agent's default) or ``"human"`` (the WebShop paper's); data_dir: the real
    data (None: ``$WEBSHOP_DATA``); test_split: ``"first500"`` or ``"unseen"``; nouns: the reward's
    title-noun tagger, ``"lexicon"`` or ``"spacy"``.
    """

    source: str = "generated"
    num_products: int | None = 1000
    catalog_seed: int = 0
    goal_type: str = "synthetic"
    data_dir: str | None = None
    test_split: str = "first500"
    nouns: str = "lexicon"

    def describe(self) -> dict:
        """What a result must be reported with: peers' numbers compare only at equal settings."""
        return {
            "source": self.source,
            "num_products": self.num_products,
            "goal_type": self.goal_type,
            "test_split": self.test_split,
            **({"catalog_seed": self.catalog_seed} if self.source == "generated" else {}),
        }


class Shop:
    """Products (WebShop's loaded dicts), ``prices`` (charged), ``goals`` (WebShop's order),
    the search index, the reward's tagger, and the goal indices of each split."""

    def __init__(
        self,
        config: ShopConfig,
        products: list[dict],
        prices: dict[str, float],
        goals: list[dict],
        tagger,
        types: dict[str, str] | None = None,
    ) -> None:
        self.config = config
        self.products = products
        self.by_asin = {p["asin"]: p for p in products}
        self.prices = prices
        self.goals = goals
        self.tagger = tagger
        self.types = types or {}  # asin -> product type (generated catalogs)
        self.index = SearchIndex(products)
        self.splits = self._splits()
        self._findable: dict[int, bool] = {}

    def __deepcopy__(self, memo) -> Shop:
        return self  # its content never changes (findable only memoizes): clones of an env share it

    def _splits(self) -> dict[str, list[int]]:
        n = len(self.goals)
        if self.config.test_split == "unseen":
            unseen = catalog_module.load_vocabulary().unseen_types()
            test = [i for i, g in enumerate(self.goals) if self.types.get(g["asin"]) in unseen]
            rest = [i for i, g in enumerate(self.goals) if self.types.get(g["asin"]) not in unseen]
        else:
            n_test = min(TEST_GOALS, n // 4)
            test, rest = list(range(n_test)), list(range(n_test, n))
        n_eval = min(EVAL_GOALS, len(rest) // 3)
        splits = {"test": test, "validation": rest[:n_eval], "train": rest[n_eval:]}
        for name, indices in splits.items():
            if not indices:
                raise ValueError(
                    f"WebShop shop {self.config.describe()}: no {name} goals out of {n}; use a larger "
                    "catalog (num_products) or another test_split"
                )
        return splits

    def findable(self, index: int) -> bool:
        """Goal ``index``'s product is among the 50 hits of a search for its instruction (the
        oracle's query): always for the 1,000-product catalog (tested on every goal); on large
        generated catalogs a few percent of goals are not (2.6% of the 100,000-product catalog's
        test goals), and those are never played. Real data plays every goal, as WebShop does."""
        if self.config.source != "generated":
            return True
        if index not in self._findable:
            goal = self.goals[index]
            self._findable[index] = goal["asin"] in self.search(oracle_query(goal), k=50)
        return self._findable[index]

    def goal_for(self, split: str, offset: int) -> int:
        """The goal a task plays: entry ``offset`` (cyclically) of ``split``'s goals, or the next
        findable one after it (see ``findable``); deterministic in the offset."""
        goals = self.splits[split]
        for step in range(len(goals)):
            index = goals[(offset + step) % len(goals)]
            if self.findable(index):
                return index
        raise ValueError(f"WebShop shop {self.config.describe()}: no findable {split} goal")

    def search(self, query: str, k: int = 50) -> list[str]:
        return self.index.search(query, k=k)

    def reward(self, product: dict, goal: dict, price: float, options: dict[str, str]) -> Reward:
        return get_reward(product, goal, price, options, self.tagger)

    def option_clicks(self, goal: dict, product: dict) -> list[str]:
        """The option values to click on ``product`` for ``goal``: for each goal option, the
        product's value it matches best under the reward's own test (normalized colors,
        thefuzz score > 85); none when nothing matches."""
        wanted = goal["goal_options"]
        wanted = list(wanted.items()) if isinstance(wanted, dict) else list(wanted)
        clicks = []
        for target in wanted:
            best, best_score = None, 85
            for values in product["options"].values():
                for value in values:
                    score = fuzz_score(normalize_color(value), normalize_color(target))
                    if score > best_score:
                        best, best_score = value, score
            if best is not None and best not in clicks:
                clicks.append(best)
        return clicks


def _tagger(config: ShopConfig):
    if config.nouns == "spacy":
        return SpacyTagger()
    lexicon = catalog_module.load_vocabulary().lexicon if config.source == "generated" else {}
    return LexiconTagger(lexicon)


def _check(config: ShopConfig) -> None:
    def fail(field: str, value, fix: str) -> None:
        raise ValueError(f"WebShop: {field}={value!r} is not valid; {fix}")

    if config.source not in ("generated", "real"):
        fail("source", config.source, "use 'generated' (the seeded catalog) or 'real' ($WEBSHOP_DATA)")
    if config.goal_type not in GOAL_TYPES:
        fail("goal_type", config.goal_type, f"use one of {GOAL_TYPES}")
    if config.test_split not in TEST_SPLITS:
        fail("test_split", config.test_split, f"use one of {TEST_SPLITS}")
    if config.test_split == "unseen" and config.source != "generated":
        fail("test_split", config.test_split, "'unseen' holds out generated product types; use 'first500'")
    if config.nouns not in ("lexicon", "spacy"):
        fail("nouns", config.nouns, "use 'lexicon' (offline) or 'spacy' (needs spaCy and en_core_web_sm)")
    n = config.num_products
    if config.source == "generated" and (isinstance(n, bool) or not isinstance(n, int) or n < 10):
        fail("num_products", n, "a generated catalog needs an int >= 10 (1000: verl-agent's small WebShop)")
    if config.source == "real" and n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        fail("num_products", n, "use None (all) or a positive int (WebShop's 1000 or 100000 prefixes)")


@lru_cache(maxsize=8)
def get_shop(config: ShopConfig) -> Shop:
    """The shop for ``config``, built on first use (a 1,000-product catalog: about a second)."""
    _check(config)
    human = config.goal_type == "human"
    types = None
    if config.source == "generated":
        made = catalog_module.generate_catalog(config.num_products, seed=config.catalog_seed)
        products = products_module.load_products(
            made.products, made.attributes, made.human if human else None
        )
        types = made.types
    else:
        root = Path(config.data_dir or os.environ.get("WEBSHOP_DATA", ""))
        if not str(root) or not root.is_dir():
            raise FileNotFoundError(
                f"WebShop real data: {str(root) or '$WEBSHOP_DATA (unset)'} is not a directory. Set "
                "$WEBSHOP_DATA (or data_dir=) to WebShop's data directory, or use source='generated'."
            )
        small = config.num_products is not None and config.num_products <= 1000
        products = products_module.find_data_files(root, small).load(config.num_products, human)
    prices = products_module.product_prices(products, random.Random(PRICE_SEED))
    goals = products_module.make_goals(products, prices, human, random.Random(f"goals-{PRICE_SEED}"))
    return Shop(config, products, prices, goals, _tagger(config), types)
