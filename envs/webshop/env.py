"""WebShop (``webshop-v0``): find and buy the product an instruction describes, alone or as a team.

Task
    A WebShop goal, e.g. "i need a long lasting lipstick with color: ruby red, and price lower
    than 40.00 dollars". The shop (``envs.webshop.shop``) is a seeded catalog of
    ``num_products`` products (default 1,000, verl-agent's "small" WebShop) with hard negatives
    for each goal product, or WebShop's real data (``source="real"``, files in
    ``$WEBSHOP_DATA``). ``goal_type``: ``"synthetic"`` (WebShop's generated instructions with
    option dicts, verl-agent's default) or ``"human"`` (instructions with option lists, the
    paper's). Splits by goal index as WebShop: test = the first 500 goals, validation the next
    1,000, train the rest; ``test_split="unseen"`` tests on product types training never sees.
    The horizon is ``max_cycles`` (15 actions, verl-agent's cap).
Pages and actions
    WebShop's own (``envs.webshop.pages``): ``search[<query>]`` and ``click[<clickable>]`` on the
    search, results (10 a page, at most 50 hits), item (options, Description / Features /
    Reviews, Buy Now) and done pages; the observation is WebShop's simple-mode text (visible
    strings joined by `` [SEP] ``), string for string. ``backend="server"`` plays a real WebShop
    server instead (``server_url``; ``envs.webshop.http_client``).
Roles
    ``single``: ``shopper_0`` alone (the papers' agent): it sees the instruction, its last
    ``history`` actions with where each led ("item B0..., options chosen: navy"), the page and
    its available actions, and answers one action. ``mas``: ``planner_0`` then ``shopper_0``
    every cycle. The planner sees the whole record (every action so far and where it led) and
    the page, and writes a short plan; the shopper sees the plan, the page and the actions.
    The split is memory and judgement (which results were rejected, which options were
    already clicked: the page text never shows a selection) versus grounding (which clickable
    is the plan's next step). A searcher / buyer split was considered and not taken: in a
    fixed turn order, one of the two would have nothing to do on every page of the other's.
Actions
    One action inside ``<answer>...</answer>``, e.g. ``<answer>click[buy now]</answer>``. As in
    WebShop, an action that is not ``search[...]`` or ``click[<a clickable of this page>]``
    changes nothing; here it also costs ``local/invalid``. Planner: a plan in answer tags.
Rewards
    ``team/score``: WebShop's purchase reward in [0, 1] when the shopper clicks Buy Now (the
    episode then ends); nothing before. Success: score == 1.0 (the papers' success rate).
    Optional ``local/subgoal`` (``subgoal_reward``, default 0: off; local shop only): the
    shopper earns it the first time the episode reaches each milestone of a right purchase
    (the goal product on the results page shown, the goal product open, each of the goal's
    option values chosen on it). Scores and success never include it.
Oracle
    ``oracle="reader"`` (v1): the page-reading shopper (``envs.webshop.oracle.reader_action``):
    it knows no product, only what the instruction and the prompt show (the price cap, the
    option values, the products its record shows it opened), so a model can imitate it: it
    searches the instruction without its price clause, opens the first product within the cap
    it has not opened, goes back when the product lacks an option value the instruction asks
    for, else clicks those values and buys (at 8 actions: 98% of 400 training goals, 256 of
    256 test goals, 4.9 actions on average). The planner's oracle reply is its next action and
    the rule in words.
    ``"goal"`` (v0): the omniscient oracle; it knows the goal product and pages to it from any
    state (a model cannot tell the goal from its look-alikes on a results page).
Heuristic
    The WebShop paper's rule baseline: search the whole instruction, open the first result,
    click each option value the instruction names, buy.

Versions: v1 (this page): the page-reading oracle, a prompt without a copyable example action,
48-token replies (the instruction as a query is 31 tokens on average, 39 at most). v0
(registered for its results): ``oracle="goal"``, ``prompt_example="search"`` (the prompt's
example ``<answer>search[words of the instruction]</answer>``, which the untrained model copied).
"""

from __future__ import annotations

import os
from collections.abc import Hashable
from typing import ClassVar

from envs.core import StepOutcome, TextAECEnv, TrainingPreset, role_of, to_ascii
from envs.parsing import extract_answer
from envs.splits import VALIDATION_SEED_START, is_validation_seed, split_range
from envs.webshop import oracle
from envs.webshop.pages import ShopSession
from envs.webshop.session import BUY_NOW, PREV_PAGE

__all__ = ["WebShopEnv"]

# The shopper's last prompt line. v0's example is a valid move that the untrained model copied
# word for word; v1 says what to write without one.
_ANSWER_LINES = {
    "search": "Answer with exactly one of the available actions, e.g. <answer>search[words of the "
    "instruction]</answer> or <answer>click[buy now]</answer>.",
    "format": "Answer with exactly one of the available actions inside <answer>...</answer>; to search, "
    "write your own query in place of <your query>.",
}


class WebShopEnv(TextAECEnv):
    """WebShop over a generated or real catalog (see the module docstring).

    Args:
        num_products: Catalog size (generated) or WebShop's prefix (real; None: all).
        catalog_seed: The generated catalog's seed.
        goal_type: ``"synthetic"`` or ``"human"``.
        source: ``"generated"`` or ``"real"`` (``$WEBSHOP_DATA`` or ``data_dir``).
        data_dir: The real data's directory.
        test_split: ``"first500"`` or ``"unseen"`` (held-out product types).
        nouns: The reward's title-noun tagger: ``"lexicon"`` or ``"spacy"``.
        backend: ``"local"`` (our pages) or ``"server"`` (a real WebShop server at ``server_url``:
            task seed i of a split plays session ``fixed_<goal index>``).
        server_url: The real server's address, e.g. ``http://127.0.0.1:3000``.
        server_goals: How many goals the server has (its human goals: 12,087), for its splits
            (WebShop's by index: test [0, 500), validation [500, 1500), train the rest).
        history: Past actions (each with where it led) in the single shopper's prompt.
        max_plan_chars: Characters of the planner's plan passed to the shopper.
        max_page_chars: Characters of a page shown in a prompt (the start is kept).
        subgoal_reward: Size of the optional ``local/subgoal`` term (0: off).
        oracle: ``"reader"`` (v1: the page-reading shopper) or ``"goal"`` (v0: it knows the goal).
        prompt_example: ``"format"`` (v1: the answer format, no action to copy) or ``"search"``
            (v0: ``<answer>search[words of the instruction]</answer>`` as the example).
        **kwargs: ``TextAECEnv`` arguments (``team``, ``split``, ``max_cycles``, ...).
    """

    metadata: ClassVar[dict] = {**TextAECEnv.metadata, "name": "webshop_v0", "suite": "webshop"}
    TEAMS: ClassVar[dict[str, tuple[str, ...]]] = {"single": ("shopper",), "mas": ("planner", "shopper")}
    DEFAULT_MAX_CYCLES: ClassVar[int] = 15
    # Sized for a 2-core CPU like ALFWorld's: 2 tasks x 4 episodes x 8 turns of 2 roles a step
    # (8: the oracles buy within 5-9 actions, ~5 on average); 48 tokens hold a click or the
    # reader's search (the instruction less its price: 31 tokens on average, 39 at most). The
    # subgoal term is on in training, as ALFWorld's: an untrained 135M shopper never buys right,
    # so the score alone leaves every group without a spread.
    TRAINING: ClassVar[TrainingPreset] = TrainingPreset(
        max_new_tokens=48,
        max_cycles=8,
        tasks_per_step=2,
        steps=4,
        eval_every=4,
        eval_tasks=8,
        policy="per_role",
        env_kwargs={"subgoal_reward": 0.1},
        # python -m trainers.sft --env webshop: the single shopper on the page-reading oracle's
        # purchases (400 tasks: ~2,000 turns, ~125 steps of 16; prompts ~410 tokens, the results
        # pages ~700). Validation success every 40 steps (16 episodes); no in-run test
        # evaluation (the held-out figure is benchmarks.evaluate's on 256).
        warm_start={
            "teams": ("single",),
            "train_tasks": 400,
            "val_tasks": 16,
            "steps": 120,
            "train_minutes": 40.0,
            "lr_schedule": "cosine",
            "warmup_steps": 5,
            "val_every": 40,
            "eval_every": 40,
            "eval_tasks": 16,
            "test_tasks": 0,
        },
    )
    APPEND_FEEDBACK: ClassVar[bool] = False  # the page is the feedback; _prompt places it
    CLONE_SHARED_ATTRS: ClassVar[tuple[str, ...]] = ("spec", "shop")

    def __init__(
        self,
        *,
        num_products: int | None = 1000,
        catalog_seed: int = 0,
        goal_type: str = "synthetic",
        source: str = "generated",
        data_dir: str | None = None,
        test_split: str = "first500",
        nouns: str = "lexicon",
        backend: str = "local",
        server_url: str | None = None,
        server_goals: int = 12087,
        history: int = 4,
        max_plan_chars: int = 300,
        max_page_chars: int = 3000,
        subgoal_reward: float = 0.0,
        oracle: str = "reader",
        prompt_example: str = "format",
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        if oracle not in ("reader", "goal"):
            raise ValueError(f"WebShopEnv: oracle must be 'reader' (v1) or 'goal' (v0), got {oracle!r}")
        if prompt_example not in ("format", "search"):
            raise ValueError(
                f"WebShopEnv: prompt_example must be 'format' (v1) or 'search' (v0), got {prompt_example!r}"
            )
        self.oracle = oracle
        self.prompt_example = prompt_example
        if backend not in ("local", "server"):
            raise ValueError(f"WebShopEnv: backend must be 'local' or 'server', got {backend!r}")
        if backend == "server" and not server_url:
            raise ValueError("WebShopEnv: backend='server' needs server_url, e.g. 'http://127.0.0.1:3000'")
        for name, value, low in (
            ("history", history, 0),
            ("max_plan_chars", max_plan_chars, 1),
            ("max_page_chars", max_page_chars, 100),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"WebShopEnv: {name} must be an int >= {low}, got {value!r}")
        if (
            isinstance(subgoal_reward, bool)
            or not isinstance(subgoal_reward, (int, float))
            or not subgoal_reward >= 0
        ):
            raise ValueError(f"WebShopEnv: subgoal_reward must be a number >= 0, got {subgoal_reward!r}")
        if subgoal_reward and backend == "server":
            raise ValueError(
                "WebShopEnv: subgoal_reward needs the goal product, which a server keeps to itself; "
                "set subgoal_reward=0 with backend='server'"
            )
        # imported here: the registry reads this class's metadata without the webshop extra
        from envs.webshop.shop import ShopConfig, get_shop

        if source == "real" and data_dir is None:  # resolved now: the shop cache keys on it
            data_dir = os.environ.get("WEBSHOP_DATA")
        self.config = ShopConfig(
            source=source,
            num_products=num_products,
            catalog_seed=catalog_seed,
            goal_type=goal_type,
            data_dir=data_dir,
            test_split=test_split,
            nouns=nouns,
        )
        # built now, so config errors surface here and not at reset (a server has its own shop)
        self.shop = get_shop(self.config) if backend == "local" else None
        self.backend = backend
        self.server_url = server_url
        if backend == "server" and (
            isinstance(server_goals, bool) or not isinstance(server_goals, int) or server_goals < 1501
        ):
            raise ValueError(f"WebShopEnv: server_goals must be an int > 1500, got {server_goals!r}")
        self.server_goals = server_goals
        self.history = history
        self.max_plan_chars = max_plan_chars
        self.max_page_chars = max_page_chars
        self.subgoal_reward = float(subgoal_reward)

    def benchmark_settings(self) -> dict:
        """What a score must be reported with (peers' numbers compare only at equal settings)."""
        if self.backend == "server":
            return {"backend": "server", "server_url": self.server_url}
        return self.config.describe()

    # ------------------------------------------------------------------ task
    def goal_index(self, task_seed: int) -> int:
        """The shop goal a task seed plays: test seeds the test goals, the validation slice of
        the train seeds the validation goals, other train seeds the train goals (cyclically;
        a generated shop skips goals its search cannot find, ``Shop.findable``)."""
        if self.split == "test":
            name, offset = "test", task_seed - split_range("test").start
        elif is_validation_seed(task_seed):
            name, offset = "validation", task_seed - VALIDATION_SEED_START
        else:
            name, offset = "train", task_seed
        if self.backend == "server":
            # WebShop's own split of its goals by index
            starts = {"test": (0, 500), "validation": (500, 1500), "train": (1500, self.server_goals)}
            goals = range(*starts[name])
            return goals[offset % len(goals)]
        return self.shop.goal_for(name, offset)

    def _start_task(self, task_seed: int) -> None:
        index = self.goal_index(task_seed)
        if self.backend == "server":
            from envs.webshop.http_client import ServerSession

            self.session = ServerSession(self.server_url)
        else:
            self.session = ShopSession(self.shop)
        self.page = self.session.reset(index)
        # the server keeps its goal to itself: only its instruction is known here
        self.goal = (
            self.shop.goals[index]
            if self.backend == "local"
            else {"asin": None, "instruction_text": self.session.instruction_text, "index": index}
        )
        self.steps: list[tuple[str, str]] = []  # (action as written, where it led)
        self.plan = ""
        self.purchase: dict = {}
        self.milestones: set[str] = set()

    def task_fingerprint(self) -> str:
        return f"{self.goal['asin']}|{self.goal['instruction_text']}"

    # ------------------------------------------------------------------ views
    def _page_text(self, page: str) -> str:
        return to_ascii(page, max_chars=self.max_page_chars)

    def available_actions(self) -> list[str]:
        """What the shopper may do now, as verl-agent lists it: ``search[<your query>]`` on a page
        with the search box, then ``click[...]`` of each clickable but ``search``."""
        actions = ["search[<your query>]"] if self.session.has_search_bar() else []
        return actions + [f"click[{c}]" for c in self.session.clickables() if c != "search"]

    def _record(self, steps: list[tuple[str, str]]) -> str:
        return "\n".join(f"> {action} -> {outcome}" for action, outcome in steps)

    def _outcome(self, valid: bool) -> str:
        """Where an action led, in a few words: the record the prompts keep instead of whole
        pages (a page is ~300-1,100 characters; eight of them made the planner's prompt the
        cost of a training step)."""
        state = self.session.state
        if not valid:
            return "nothing happened"
        if state.kind == "search":
            return "the search page"
        if state.kind == "results":
            return f"results page {state.page}"
        options = f", options chosen: {', '.join(v for _, v in state.options)}" if state.options else ""
        if state.kind == "item":
            return f"item {state.asin}{options}"
        if state.kind == "sub":
            return f"the {state.sub_page} of item {state.asin}{options}"
        return f"bought item {state.asin}{options}"

    def _prompt(self, agent: str) -> str:
        if role_of(agent) == "planner":
            return "\n".join(
                [
                    "You plan for a web shopping agent (WebShop). Instruction: "
                    + to_ascii(self.session.instruction_text),
                    "Actions so far, and where each led:",
                    self._record(self.steps) or "(none yet)",
                    f"Now: {self._page_text(self.page)}",
                    "Write a short plan of the next steps (what to search, which product to open, "
                    "which options to click, when to buy) inside <answer>...</answer>.",
                ]
            )
        lines = ["You are a web shopping agent (WebShop). Buy the product the instruction describes."]
        if self.team == "mas":
            lines.append(f"Your planner's plan: {self.plan or '(none)'}")
        elif self.steps and self.history:
            lines += [
                f"Your last {min(self.history, len(self.steps))} actions, and where each led:",
                self._record(self.steps[-self.history :]),
            ]
        lines += [
            f"Now: {self._page_text(self.page)}",
            "Available actions: " + ", ".join(self.available_actions()),
            _ANSWER_LINES[self.prompt_example],
        ]
        return "\n".join(lines)

    def _legal_moves(self, agent: str) -> list[str]:
        return self.available_actions() if role_of(agent) == "shopper" else []

    def _state_key(self) -> Hashable:
        # the page state (page kind, query, results page, item, chosen options): GiGPO's anchor
        return self.session.state

    def _render_text(self) -> str:
        state = self.session.state
        rows = [f"goal: {self.goal['instruction_text']} (asin {self.goal['asin']})"]
        rows.append(f"page: {state.kind}, query {' '.join(state.keywords) or '-'}, results page {state.page}")
        rows.append(f"item: {state.asin or '-'}, options {dict(state.options) or '-'}")
        if self.purchase:
            rows.append(f"bought {self.purchase.get('asin')}: score {self.purchase.get('score')}")
        return "\n".join(rows)

    # ------------------------------------------------------------------ acting
    def _act(self, agent: str, text: str) -> StepOutcome:
        answer = extract_answer(text)
        if role_of(agent) == "planner":
            if answer is None:
                return StepOutcome(invalid=True, feedback="Write your plan inside <answer>...</answer>.")
            self.plan = to_ascii(" ".join(answer.split()))[: self.max_plan_chars]
            return StepOutcome(feedback="Plan passed on.")
        if not answer:
            feedback = "Write one action inside <answer>...</answer>, e.g. <answer>click[buy now]</answer>."
            self.steps.append(("(no action)", "nothing happened"))
            return StepOutcome(invalid=True, feedback=feedback)
        action = answer.strip()[:500]
        result = self.session.step(action)
        self.page = result.observation
        self.steps.append((to_ascii(action, max_chars=200), self._outcome(result.valid)))
        if not result.valid:
            feedback = "Nothing happened: that is not search[...] or a click on this page's actions."
            return StepOutcome(invalid=True, feedback=feedback)
        local = {}
        if self.subgoal_reward and (new := self._milestones() - self.milestones):
            self.milestones |= new
            local["subgoal"] = self.subgoal_reward * len(new)
        if not result.done:
            return StepOutcome(local=local, feedback="")
        score = float(result.reward)
        self.purchase = {"asin": self.session.state.asin, "score": score, **result.info}
        return StepOutcome(
            team={"score": score},
            local=local,
            terminated=True,
            success=score == 1.0,
            feedback=f"Bought: score {score}",
        )

    def _milestones(self) -> set[str]:
        """The milestones of a right purchase reached now (local shop): the goal product on the
        results page shown, the goal product open, each goal option value chosen on it."""
        state, target = self.session.state, self.goal["asin"]
        reached = set()
        if state.kind == "results" and target in self.session.page_asins():
            reached.add("shown")
        if state.asin == target and state.kind in ("item", "sub", "done"):
            reached.add("opened")
            chosen = {value for _, value in state.options}
            wanted = self.shop.option_clicks(self.goal, self.shop.by_asin[target])
            reached |= {f"option:{value}" for value in wanted if value in chosen}
        return reached

    # ------------------------------------------------------------------ scripted players
    def oracle_response(self, agent: str) -> str:
        """The oracle's next action (shopper); the planner's: v0's whole purchase from here, v1's
        next action and the reader's rule in words (its later actions depend on pages not seen yet)."""
        if role_of(agent) == "planner" and self.oracle == "reader":
            wanted = self.goal["goal_options"]
            values = ", ".join(wanted.values() if isinstance(wanted, dict) else wanted) or "no option"
            rule = (
                f"then open the first product not opened yet priced at most {self.goal['price_upper']:.2f} "
                f"dollars; if it offers {values}, click them and buy now, else go back"
            )
            return f"<answer>{self.oracle_action()}; {rule}</answer>"
        if role_of(agent) == "planner":
            return f"<answer>{'; '.join(self.oracle_plan())}</answer>"
        return f"<answer>{self.oracle_action()}</answer>"

    def oracle_action(self) -> str:
        if self.backend != "local":
            raise NotImplementedError(
                "WebShopEnv: the oracle knows only the local shop's goals (backend='local')"
            )
        if self.oracle == "goal":
            return oracle.oracle_action(self.session, self.shop, self.goal)
        return oracle.reader_action(self.session, self.shop, self.goal, self._opened())

    def _opened(self) -> set[str]:
        """The products the shopper's prompt shows it opened: its record's last ``history``
        actions alone; with a planner, the whole record (the planner's view)."""
        steps = self.steps if self.team == "mas" else self.steps[max(0, len(self.steps) - self.history) :]
        opened = set()
        for action, outcome in steps:  # "click[b0...]" -> "item B0..." opened that product
            clicked = action[len("click[") : -1]
            if action.startswith("click[") and outcome.startswith(f"item {clicked.upper()}"):
                opened.add(clicked)
        return opened

    def oracle_plan(self) -> list[str]:
        """The oracle's remaining actions from here, played on a copy (its record kept, so the
        page-reading oracle remembers what it opened there)."""
        probe = self.clone()
        probe.steps = list(self.steps)
        plan = []
        for _ in range(20):
            action = probe.oracle_action()
            plan.append(action)
            result = probe.session.step(action)
            probe.steps.append((action, probe._outcome(result.valid)))
            if result.done:
                break
        return plan

    def heuristic_response(self, agent: str) -> str:
        """The WebShop paper's rule baseline (shopper); the planner states it."""
        if role_of(agent) == "planner":
            plan = "search the instruction, open the first result, click the options it names, buy"
            return f"<answer>{plan}</answer>"
        state, instruction = self.session.state, self.session.instruction_text.lower()
        if state.kind == "search":
            return f"<answer>search[{instruction}]</answer>"
        if state.kind == "results":
            hits = self.session.clickables()
            asins = [c for c in hits if c not in ("back to search", "< prev", "next >")]
            return (
                f"<answer>click[{asins[0]}]</answer>" if asins else "<answer>click[back to search]</answer>"
            )
        if state.kind == "sub":
            return f"<answer>click[{PREV_PAGE.lower()}]</answer>"
        # the item page's option values: its clickables after the fixed buttons
        buttons = {"back to search", "< prev", "description", "features", "reviews", "attributes", "buy now"}
        chosen = {value for _, value in state.options}
        for value in self.session.clickables():
            if value not in buttons and value not in chosen and value in instruction:
                return f"<answer>click[{value}]</answer>"
        return f"<answer>click[{BUY_NOW.lower()}]</answer>"

    def close(self) -> None:
        session = getattr(self, "session", None)
        if session is not None and hasattr(session, "close"):
            session.close()
