"""ALFWorld (``alfworld-v1``): household tasks in text, for one agent or a planner-actor team.

Task
    One of ALFWorld's six task types (``pick_and_place_simple``, ``look_at_obj_in_light``,
    ``pick_clean_then_place_in_recep``, ``pick_heat_then_place_in_recep``,
    ``pick_cool_then_place_in_recep``, ``pick_two_obj_and_place``) in a room of one of
    ALFRED's 120 floor plans, e.g. "Your task is to: put a hot apple in fridge.". The seed
    generates the game (``envs.alfworld.generator``): training tasks in 116 floor plans, test
    tasks in the four that ALFWorld's ``valid_unseen`` holds out (10, 219, 308, 424).
    Options: ``task_types``, ``distractors`` (other object types, default 12), ``closed``
    (openable receptacles start closed, default True), ``syntax`` (``"move"``: ``move X to
    Y``, alfworld 0.4.x; ``"put"``: ``put X in/on Y``, 0.3.x). The horizon is ``max_cycles``
    (default 50 commands, as in verl-agent).
Engines
    ``engine="python"`` (default): ``envs.alfworld.engine``, microseconds a step.
    ``engine="pddl"``: the real one, textworld's ``PddlEnv`` with alfworld's Demangler
    (``envs.alfworld.pddl``; ``pip install 'teamgym[alfworld]'``), ~0.7 s a reset and ~30 ms a
    step, and each game keeps ~1-2 MB of Fast Downward's library mapped: for checking
    fidelity and evaluating, not for training. Both read the same (the differential test).
    With ``source="real"`` the real engine plays the game as ``pddl.to_pddl`` writes it
    from the loaded spec (the file's facts, less objects in no receptacle), not the file.
Real data
    ``source="real"`` plays ALFWorld's own games (``envs.alfworld.real``) from
    ``data_dir`` (default ``$ALFWORLD_DATA``) ``/json_2.1.1/``: the train split plays
    ``train``, the test split ``real_test_split`` (``"valid_unseen"``, 134 games, what
    ReAct-style papers report; or ``"valid_seen"``, 140, verl-agent's default); task seed
    i of a split plays its i-th game (sorted paths, modulo the count). Those games use the
    ``put`` syntax (json_2.1.1).
Roles
    ``single``: ``actor_0`` alone, the ReAct-style agent of the papers: it sees the task,
    the room's places, its last ``history`` commands with what they gave, what it carries
    and the commands it can give where it stands, and answers one command. ``mas``:
    ``planner_0`` then ``actor_0`` every cycle. The planner sees the last
    ``planner_history`` steps and writes a short plan; the actor sees only the plan, the
    current observation and the commands. So the planner's job is memory and decomposition
    (what is left: heat it, then the fridge), the actor's grounding (which command does the
    next step of the plan).
Prompts
    ``prompt_style="compact"`` (v1, the default), sized for small models on a CPU (a single
    actor's prompt: 340 -> 205 tokens on average over the oracle's turns): the room's
    receptacles once, as ranges, in two lines: those not searched since the last take or put
    ("Places not searched since your last take or put: cabinet 2-15, countertop 1-4, fridge 1";
    the memory the search needs: a take or a put starts a new search) and the rest
    ("Searched: cabinet 1", absent while empty); the bounded record, "You are carrying: ..."
    (the ``inventory`` command's text), then the task ("Your task is to: ...", last so a small
    model has it in view when it picks among the takes) and "Commands here:" the admissible
    commands other than ``go to`` (one per place: the places lines say them), ``look``,
    ``inventory``, ``help`` and ``examine`` (still accepted, not listed). No example command
    (v0's ``go to cabinet 1`` was a valid move, and the default model copied it).
    ``"record"`` (v0): the intro's list of receptacles, every admissible command, the
    planner the whole record.
Actions
    Actor: one command inside ``<answer>...</answer>``, e.g. ``<answer>go to fridge 1</answer>``.
    It must be admissible (the engine's exact strings); case, extra spaces, a final period
    and the other syntax's place command (``put X in/on Y`` for ``move X to Y`` and back)
    are accepted. Planner: a plan inside answer tags, at most ``max_plan_chars`` characters kept.
Rewards
    ``team/won``: 1.0 when the goal holds (ALFWorld's 10 x won, scaled to the other envs);
    the episode then ends. Optional ``local/subgoal`` (``subgoal_reward``, default 0: off):
    the actor earns it the first time the episode reaches each milestone of the task (a goal
    object in hand; it heated / cooled / cleaned; the lamp on; each object placed).
Invalid actions
    An actor reply with no command, or a command that is not admissible ("Nothing
    happens.", as in ALFWorld): the turn is spent, nothing changes, ``local/invalid``
    (``invalid_penalty``; set it to 0 for ALFWorld's plain rules). A planner reply without
    answer tags is invalid too (the last plan stays); an empty plan in tags is a plan.
Oracle
    ``oracle="search"`` (v1): the searching expert (``envs.alfworld.expert.search_command``):
    it knows only what the prompt shows and goes to the first receptacle not yet searched
    that can hold the object, so a model can imitate it; it wins every generated game (13.6
    commands on average on the training split, 11.1 on the unseen plans). The planner's
    oracle reply is its next command and the rest of the task in words.
    ``"expert"`` (v0): the omniscient expert (it knows where everything is, so its first
    command goes to where the object lies; its plan is the whole walkthrough). Both re-plan
    from the current state, so their next command wins from any state.
Success
    The goal held (``won``).

Versions: v1 (this page): compact prompts and the searching oracle, training horizon 20.
v0 (registered for its results): ``prompt_style="record"``, ``oracle="expert"``, ``history=3``;
its runs trained with a horizon of 12 (``--max-cycles 12`` reproduces them).
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from pathlib import Path
from typing import ClassVar

from envs.alfworld import expert, pddl, real
from envs.alfworld.engine import NOTHING_HAPPENS, SYNTAXES, TASK_TYPES, World
from envs.alfworld.generator import Problem, generate
from envs.core import StepOutcome, TextAECEnv, TrainingPreset, role_of, to_ascii
from envs.parsing import extract_answer
from envs.splits import split_range

__all__ = ["AlfWorldEnv", "normalize_command", "compact_places", "PROMPT_STYLES", "ORACLES"]

PROMPT_STYLES = ("compact", "record")
ORACLES = ("search", "expert")
# Admissible but never needed to win: left out of the compact prompt's "Commands here".
_UNLISTED = ("go to ", "examine ", "look", "inventory", "help")

_SPACES = re.compile(r"\s+")
_PUT = re.compile(r"^put (.+?) (?:in/on|in|on|into|onto) (.+)$")
_MOVE = re.compile(r"^move (.+?) to (.+)$")
_TOOL_STATE = {
    "pick_clean_then_place_in_recep": "clean",
    "pick_heat_then_place_in_recep": "hot",
    "pick_cool_then_place_in_recep": "cool",
}


def normalize_command(text: str, syntax: str) -> str:
    """A reply's command in the engine's spelling: lower case, single spaces, no final period,
    and the place command in ``syntax``'s form (``move X to Y`` or ``put X in/on Y``)."""
    command = _SPACES.sub(" ", text.strip().lower()).rstrip(".").strip()
    put, move = _PUT.match(command), _MOVE.match(command)
    if syntax == "move" and put:
        return f"move {put.group(1)} to {put.group(2)}"
    if syntax == "put" and move:
        return f"put {move.group(1)} in/on {move.group(2)}"
    return command


class AlfWorldEnv(TextAECEnv):
    """ALFWorld household tasks on the pure-Python engine (see the module docstring).

    Args:
        task_types: Task types to draw from (default all six).
        distractors: Other object types in the room, at most (1-2 instances each).
        closed: Openable receptacles start closed.
        syntax: ``"move"`` (0.4.x) or ``"put"`` (0.3.x) commands and texts; None: "move" for
            generated games, the game's own for real ones.
        source: ``"generated"`` (seeded games) or ``"real"`` (ALFWorld's json_2.1.1 games).
        engine: ``"python"`` (``engine.World``) or ``"pddl"`` (the real engine, an extra).
        data_dir: The real data's root (None: ``$ALFWORLD_DATA``).
        real_test_split: The real split the test split plays.
        history: Past steps (command and observation) in the single actor's prompt.
        planner_history: Past steps in the planner's prompt (compact prompts; "record": all).
        max_plan_chars: Characters of the planner's plan passed to the actor.
        subgoal_reward: Size of the optional ``local/subgoal`` term (0: off).
        prompt_style: ``"compact"`` (v1) or ``"record"`` (v0); see Prompts above.
        oracle: ``"search"`` (v1, the searching expert) or ``"expert"`` (v0, omniscient).
        **kwargs: ``TextAECEnv`` arguments (``team``, ``split``, ``max_cycles``, ...).
    """

    metadata: ClassVar[dict] = {**TextAECEnv.metadata, "name": "alfworld_v0", "suite": "alfworld"}
    TEAMS: ClassVar[dict[str, tuple[str, ...]]] = {"single": ("actor",), "mas": ("planner", "actor")}
    DEFAULT_MAX_CYCLES: ClassVar[int] = 50
    # Sized for a 2-core CPU: 2 tasks x 4 episodes x 20 turns of 2 roles per step (20: the
    # searching oracle wins 95% of the unseen plans' games and 83% of the training games
    # within it; the omniscient walkthrough is at most 11; evaluation uses it too). The shaped
    # subgoal term is on in training: "won" alone is 0 for every episode of a 135M model, so
    # no group would differ; success is still measured on "won" alone.
    TRAINING: ClassVar[TrainingPreset] = TrainingPreset(
        max_new_tokens=24,
        max_cycles=20,
        tasks_per_step=2,
        steps=4,
        eval_every=4,
        eval_tasks=8,
        policy="per_role",
        env_kwargs={"subgoal_reward": 0.1},
        # python -m trainers.sft --env alfworld: the single actor on the searching oracle's
        # turns (400 tasks: ~3,100 turns at horizon 20, ~190 steps of 16). A step takes ~12 s
        # on 2 cores, so 120 steps are ~24 minutes of updates (40: the cap on a slower CPU).
        # Chosen on validation (16 tasks, docs/envs.md): 70 steps 0.125, 120 steps 0.375.
        # Validation success every 60 steps (16 episodes: ~2 minutes); no in-run test evaluation
        # (16 tasks say nothing: the held-out figure is benchmarks.evaluate's on 256).
        warm_start={
            "teams": ("single",),
            "train_tasks": 400,
            "val_tasks": 16,
            "steps": 120,
            "train_minutes": 40.0,
            "lr_schedule": "cosine",
            "warmup_steps": 5,
            "val_every": 40,
            "eval_every": 60,
            "eval_tasks": 16,
            "test_tasks": 0,
        },
    )
    APPEND_FEEDBACK: ClassVar[bool] = False  # the observation is the feedback; _prompt places it
    CLONE_SHARED_ATTRS: ClassVar[tuple[str, ...]] = ("spec", "problem", "real_games")

    def __init__(
        self,
        *,
        task_types: tuple[str, ...] | list[str] = TASK_TYPES,
        distractors: int = 12,
        closed: bool = True,
        syntax: str | None = None,
        source: str = "generated",
        engine: str = "python",
        data_dir: str | None = None,
        real_test_split: str = "valid_unseen",
        history: int = 2,
        planner_history: int = 8,
        max_plan_chars: int = 300,
        subgoal_reward: float = 0.0,
        prompt_style: str = "compact",
        oracle: str = "search",
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        task_types = (task_types,) if isinstance(task_types, str) else tuple(task_types)
        if not task_types or any(t not in TASK_TYPES for t in task_types):
            raise ValueError(
                f"AlfWorldEnv: task_types must be a non-empty subset of {TASK_TYPES}, got {task_types!r}"
            )
        if syntax is not None and syntax not in SYNTAXES:
            raise ValueError(f"AlfWorldEnv: syntax must be None or one of {SYNTAXES}, got {syntax!r}")
        if source not in ("generated", "real"):
            raise ValueError(f"AlfWorldEnv: source must be 'generated' or 'real', got {source!r}")
        if engine not in ("python", "pddl"):
            raise ValueError(f"AlfWorldEnv: engine must be 'python' or 'pddl', got {engine!r}")
        if engine == "pddl":
            pddl.require()  # the extra's ImportError now, not at the first reset
        if prompt_style not in PROMPT_STYLES:
            raise ValueError(
                f"AlfWorldEnv: prompt_style must be one of {PROMPT_STYLES}, got {prompt_style!r}"
            )
        if oracle not in ORACLES:
            raise ValueError(f"AlfWorldEnv: oracle must be one of {ORACLES}, got {oracle!r}")
        if real_test_split not in ("valid_unseen", "valid_seen"):
            raise ValueError(
                f"AlfWorldEnv: real_test_split must be 'valid_unseen' or 'valid_seen': {real_test_split!r}"
            )
        for name, value, low in (
            ("distractors", distractors, 0),
            ("history", history, 0),
            ("planner_history", planner_history, 0),
            ("max_plan_chars", max_plan_chars, 1),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"AlfWorldEnv: {name} must be an int >= {low}, got {value!r}")
        if not subgoal_reward >= 0:
            raise ValueError(f"AlfWorldEnv: subgoal_reward must be >= 0, got {subgoal_reward!r}")
        self.task_types = task_types
        self.distractors = distractors
        self.closed = bool(closed)
        self.syntax = syntax
        self.source = source
        self.engine = engine
        self.data_dir = data_dir
        self.real_test_split = real_test_split
        self.real_games: tuple[Path, ...] | None = None  # listed on first reset (real source)
        self.real_engine: pddl.PddlWorld | None = None
        self.history = history
        self.planner_history = planner_history
        self.prompt_style = prompt_style
        self.oracle = oracle
        self.max_plan_chars = max_plan_chars
        self.subgoal_reward = float(subgoal_reward)

    # ------------------------------------------------------------------ task
    def _start_task(self, task_seed: int) -> None:
        if self.source == "real":
            self.problem: Problem = self._real_problem(task_seed)
        else:
            self.problem = generate(
                task_seed,
                split=self.split,
                task_types=self.task_types,
                distractors=self.distractors,
                closed=self.closed,
                syntax=self.syntax or "move",
            )
        self.world = World(self.problem.spec)  # the state the oracle, milestones and render read
        if getattr(self, "real_engine", None) is not None:
            self.real_engine.close()  # the last game's
        # engine="pddl": the real engine plays too and says what the agent reads (the same
        # texts and commands, by the differential test; the python world stays in step)
        self.real_engine = pddl.PddlWorld(self.problem.spec) if self.engine == "pddl" else None
        self.observation = self._engine().intro()
        self.steps: list[tuple[str, str]] = []  # (command as written, what it gave)
        # the receptacles looked into since the last take or put (the compact prompt lists the rest)
        self.looked: frozenset[str] = expert.looked_in(self.world, frozenset(), "")
        self.plan = ""
        # what holds at reset (a goal object already cool in the fridge) earns nothing
        self.milestones = self._milestones()

    def _real_problem(self, task_seed: int) -> Problem:
        if self.real_games is None:
            root = real.data_root() if self.data_dir is None else Path(self.data_dir)
            split = "train" if self.split == "train" else self.real_test_split
            self.real_games = tuple(real.find_games(root, split, self.task_types))
            if not self.real_games:
                raise real.RealDataMissing(
                    f"no playable ALFWorld games of {self.task_types} in {root} ({split})"
                )
        index = (task_seed - split_range(self.split).start) % len(self.real_games)
        return real.load_game(self.real_games[index], syntax=self.syntax).problem()

    def _engine(self):
        """The engine whose texts, commands and ``won`` the agent gets."""
        return self.real_engine if self.real_engine is not None else self.world

    def task_fingerprint(self) -> str:
        spec = self.problem.spec
        return f"{self.problem.floor_plan}|{spec.goal}|{spec.items}"

    # ------------------------------------------------------------------ views
    def _record(self, steps: list[tuple[str, str]]) -> str:
        return "\n".join(f"> {command}\n{observation}" for command, observation in steps)

    def _prompt(self, agent: str) -> str:
        if self.prompt_style == "record":
            return self._record_prompt(agent)
        task = f"Your task is to: {self.world.spec.goal_text}."
        receptacles = [r.name for r in self.world.spec.receptacles]
        searched = [name for name in receptacles if name in self.looked]
        unsearched = compact_places([name for name in receptacles if name not in self.looked]) or "(none)"
        planner = role_of(agent) == "planner"
        robot = "You plan for" if planner else "You are"
        # Every place once, split in two: the places still to search (the search's next one is
        # the first that can hold the object) and the few already searched. One list of all
        # places beside the unsearched ones cost ~50 tokens a turn, a fifth of the prompt.
        lines = [
            f"{robot} a household robot (ALFWorld).",
            f"Places not searched since your last take or put: {unsearched}",
        ]
        if searched:
            lines.append(f"Searched: {compact_places(searched)}")
        if self.team == "mas" and not planner:
            lines.append(f"Your planner's plan: {self.plan or '(none)'}")
        keep = self.planner_history if planner else (0 if self.team == "mas" else self.history)
        if self.steps and keep:
            shown = self.steps[-keep:]
            lines += [f"Your last {len(shown)} steps:", self._record(shown)]
        else:  # the current observation, unless the record's last line already is it
            lines.append(f"Now: {self._now()}")
        # The task comes last, just before the commands: warm-started small models lost it at the
        # top of a long prompt and took whichever object the first "take" named (transcripts of
        # the 2026-12-06 warm start: an egg for a knife, a laptop for a cellphone).
        lines += [self.world.carrying(), task]
        if planner:
            lines.append(
                "Write a short plan of the next steps (where to go, what to take, open, heat, cool, "
                "clean or use, where to put it) inside <answer>...</answer>."
            )
            return "\n".join(lines)
        here = [c for c in self._engine().admissible() if not c.startswith(_UNLISTED)]
        lines += [
            "Commands here: " + (", ".join(here) or "(none)"),
            "Answer with one command inside <answer>...</answer>: go to a place, or a command here.",
        ]
        return "\n".join(lines)

    def _now(self) -> str:
        """The current observation; at the start, where the agent stands (the places lines
        list what the intro's long sentence does)."""
        if not self.steps:
            return "You are in the middle of a room."
        return self.observation

    def _record_prompt(self, agent: str) -> str:
        """v0's prompts: the intro's receptacle list, every admissible command, the whole record."""
        task = f"Your task is to: {self.world.spec.goal_text}."
        if role_of(agent) == "planner":
            lines = [
                "You plan for a household robot (ALFWorld). " + task,
                "What happened so far:",
                self.world.intro().split("\n\n")[1],
                self._record(self.steps) or "(nothing yet)",
                "Write a short plan of the next steps (where to go, what to take, open, heat, cool, "
                "clean or use, where to put it) inside <answer>...</answer>.",
            ]
            return "\n".join(lines)
        lines = ["You are a household robot (ALFWorld). " + task]
        if self.team == "mas":
            lines.append(f"Your planner's plan: {self.plan or '(none)'}")
        elif self.steps and self.history:
            lines += [
                f"Your last {min(self.history, len(self.steps))} steps:",
                self._record(self.steps[-self.history :]),
            ]
        lines += [
            f"Now: {self.observation}",
            "Admissible commands: " + ", ".join(self._engine().admissible()),
            "Answer with exactly one admissible command, e.g. <answer>go to cabinet 1</answer>.",
        ]
        return "\n".join(lines)

    def _legal_moves(self, agent: str) -> list[str]:
        return self._engine().admissible() if role_of(agent) == "actor" else []

    def _state_key(self) -> Hashable:
        # The world's state: where the agent is, what it holds, every object's place and
        # states. What was seen on the way is history, not state (as GiGPO's anchors).
        return self.world.state_key()

    def _render_text(self) -> str:
        world = self.world
        where = next((r.name for r in world.here()), "the middle of the room")
        rows = [f"task: {world.spec.goal_text} (floor plan {self.problem.floor_plan})"]
        rows.append(f"at {where}, holding {world.holding or 'nothing'}, won {world.won}")
        for receptacle in world.spec.receptacles:
            contents = world.contents(receptacle.name)
            state = (
                ""
                if not receptacle.openable
                else (" (open)" if receptacle.name in world.opened else " (closed)")
            )
            if contents or receptacle.openable:
                rows.append(f"  {receptacle.name}{state}: {', '.join(contents) or '-'}")
        return "\n".join(rows)

    # ------------------------------------------------------------------ acting
    def _act(self, agent: str, text: str) -> StepOutcome:
        answer = extract_answer(text)
        if role_of(agent) == "planner":
            if answer is None:  # the plan stays as it was
                return StepOutcome(invalid=True, feedback="Write your plan inside <answer>...</answer>.")
            self.plan = to_ascii(" ".join(answer.split()))[: self.max_plan_chars]
            return StepOutcome(feedback="Plan passed on.")
        if not answer:
            feedback = "Write one admissible command inside <answer>...</answer>."
            self.steps.append(("(no command)", feedback))
            return StepOutcome(invalid=True, feedback=feedback)
        command = normalize_command(answer[:200], self.world.spec.syntax)
        result = self.world.step(command)
        if self.real_engine is not None:
            result = self.real_engine.step(command)
        self.observation = result
        self.steps.append((to_ascii(command, max_chars=200), result))
        if result == NOTHING_HAPPENS:
            return StepOutcome(invalid=True, feedback=result)
        self.looked = expert.looked_in(self.world, self.looked, command)
        won = self._engine().won
        local = {}
        if self.subgoal_reward and (new := self._milestones() - self.milestones):
            self.milestones |= new
            local["subgoal"] = self.subgoal_reward * len(new)
        return StepOutcome(
            team={"won": float(won)}, local=local, terminated=won, success=won, feedback=result
        )

    def _milestones(self) -> set[str]:
        """The task's milestones reached now: a goal object held, the tool applied to it, the
        lamp on, each goal object placed."""
        world, goal = self.world, self.world.spec.goal
        reached = set()
        if world.holding and world.item[world.holding].type == goal.obj:
            reached.add("holding")
        state = _TOOL_STATE.get(goal.task_type)
        if state and any(world.item[o].type == goal.obj for o in getattr(world, state)):
            reached.add(state)
        if any(world.item[o].type == goal.toggle for o in world.toggled):
            reached.add("lamp")
        placed = sum(world.placed(i.name) for i in world.spec.items)
        reached |= {f"placed {k + 1}" for k in range(placed)}
        return reached

    def close(self) -> None:
        """Free the real engine's game (engine="pddl"); nothing else to release."""
        if getattr(self, "real_engine", None) is not None:
            self.real_engine.close()
            self.real_engine = None

    # ------------------------------------------------------------------ oracle
    def oracle_response(self, agent: str) -> str:
        """The oracle's next command (actor), or its plan from here (planner); see Oracle."""
        planner = role_of(agent) == "planner"
        if self.oracle == "expert":
            answer = "; ".join(expert.plan(self.world)) if planner else expert.next_command(self.world)
        elif planner:
            answer = "; ".join(expert.search_plan(self.world, self.looked))
        else:
            answer = expert.search_command(self.world, self.looked)
        return f"<answer>{answer}</answer>"


def compact_places(names: list[str]) -> str:
    """Receptacle names as number ranges per type, in ``expert.place_order``: "cabinet 2",
    "cabinet 1", "cabinet 3", "drawer 4", "drawer 1" become "cabinet 1-3, drawer 1, 4"; a name
    that is not "type N" stays as it is."""
    groups: dict[str, list[int]] = {}  # type -> its numbers (a plain name -> [])
    for name in expert.place_order(names):
        kind, _, number = name.rpartition(" ")
        if kind and number.isdigit():
            groups.setdefault(kind, []).append(int(number))
        else:
            groups.setdefault(name, [])
    parts = []
    for kind, numbers in groups.items():
        if not numbers:
            parts.append(kind)
            continue
        runs: list[str] = []
        start = numbers[0]
        for previous, current in zip(numbers, [*numbers[1:], None], strict=True):
            if current != previous + 1:  # a run ends at previous
                runs.append(str(start) if start == previous else f"{start}-{previous}")
                start = current
        parts.append(f"{kind} {', '.join(runs)}")
    return ", ".join(parts)
