"""``TextAECEnv``: the PettingZoo AEC base class of every teamgym environment.

Several LLM *roles* act in turn on one shared task. Each agent (``<role>_0``) observes a
text prompt and answers with free text; the env parses the text, applies it, and rewards
the team. A subclass implements only the game: how to start a task, what each role sees,
what a response does. This class owns everything the PettingZoo API and RL need:

* spaces: observation ``Dict({"prompt": Text(printable)})``, action ``Text(printable)``,
  built lazily per instance and per agent (never shared between envs);
* seeding: ``reset(seed)`` picks the task (see ``envs.splits``: train and test seeds are
  disjoint and an env refuses the other split's seeds); never the global RNGs;
* rewards: ``reward(agent) = alpha * team + local + seat`` (own local terms only for the
  acting agent; ``seat`` terms are what one step gives each named agent, e.g. a game's
  +1 / -1 to winner and loser), every term named in ``info["reward_terms"]`` as
  ``team/<name>``, ``local/<name>`` or ``seat/<name>``; cumulative rewards as PettingZoo
  expects;
* invalid actions never raise: ``invalid_action="penalize"`` (``local/invalid`` =
  ``-invalid_penalty``, turn consumed; the state is unchanged, or, in a game whose turn
  cannot be skipped, the env's ``_forced_move`` is played, e.g. poker's pass) or
  ``"terminate"`` (penalty, then the episode ends for everyone: PettingZoo classic
  semantics). Any ``str`` is text to parse (empty, huge, non-ASCII; longer than
  ``max_action_chars`` is cut to that length first); anything else (``None``, bytes,
  numbers) is an invalid action;
* feedback: ``StepOutcome.feedback`` is shown at the end of the actor's next prompt
  (``feedback_line``; ``APPEND_FEEDBACK = False`` lets ``_prompt`` place it);
* truncation of every agent after ``max_cycles`` full cycles of the turn order;
* ``render()`` (``"ansi"`` returns the text, ``"human"`` prints it; with no render_mode
  it returns the text too, since text is always cheap to render);
* ``clone()`` (independent mid-episode copy, for tree sampling) and ``state_key()``
  (hashable game-state key, for GiGPO anchor groups).

Info of every live agent after each step: ``legal_moves`` (list of move strings for
that agent now), ``invalid_action`` (its last action was invalid) and ``feedback`` (what
the env said about its last action), both kept until that agent acts again,
``reward_terms`` (of this step), ``success``, ``task_seed``, ``split`` and ``turn``
(completed cycles). ``envs.check_env`` checks all of this for any env.
"""

from __future__ import annotations

import copy
import re
import string
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from pettingzoo import AECEnv

from envs.splits import check_seed, split_range
from envs.training_preset import TrainingPreset

__all__ = ["TextAECEnv", "StepOutcome", "TrainingPreset", "to_ascii", "role_of", "INVALID_ACTION_MODES"]

PRINTABLE = string.printable
_PRINTABLE_SET = frozenset(PRINTABLE)
INVALID_ACTION_MODES = ("penalize", "terminate")
_ROLE_PATTERN = re.compile(r"^[a-z][a-z0-9]*$")


def to_ascii(text: str, max_chars: int | None = None) -> str:
    """Make text safe for an observation: printable ASCII only (others become ``?``).

    Model output is adversarial; echoing it into another role's prompt must never put
    characters outside the observation space's charset.
    """
    if max_chars is not None and len(text) > max_chars:
        text = text[:max_chars] + "...[cut]"
    if all(c in _PRINTABLE_SET for c in text):
        return text
    return "".join(c if c in _PRINTABLE_SET else "?" for c in text)


def role_of(agent: str) -> str:
    """``"planner_0"`` -> ``"planner"``."""
    return agent.rsplit("_", 1)[0]


@dataclass
class StepOutcome:
    """What a subclass reports about one agent's response.

    Attributes:
        team: Named team reward terms (shared by every agent, scaled by ``alpha``).
        local: Named local reward terms of the acting agent (without the invalid penalty,
            which the base class adds when ``invalid`` is set).
        invalid: The response could not be parsed or broke a rule.
        terminated: The task is over (solved, or failed for good).
        success: The task was solved by this action.
        feedback: One or two sentences for the actor's next prompt and ``info``.
        seats: Named terms per agent, the actor included: what this step gives each seat of a
            competitive game (``{"first_0": {"outcome": 1.0}, "second_0": {"outcome": -1.0}}``), which
            neither the shared team reward nor the actor's local terms can say.
    """

    team: dict[str, float] = field(default_factory=dict)
    local: dict[str, float] = field(default_factory=dict)
    invalid: bool = False
    terminated: bool = False
    success: bool = False
    feedback: str = ""
    seats: dict[str, dict[str, float]] = field(default_factory=dict)


class TextAECEnv(AECEnv):
    """Base class: turn-based text environment for a team of LLM roles.

    A subclass sets ``metadata["name"]`` (and ``metadata["suite"]`` to join a
    ``benchmarks.evaluate --suite``), ``TEAMS`` (team variant -> roles in turn order),
    ``DEFAULT_MAX_CYCLES``, optionally ``DIFFICULTIES`` and ``TRAINING``, and implements
    six hooks (underscored, so ``help()`` lists them only here):

    * ``_start_task(task_seed)``: set up the task, deterministic in the seed (use
      ``np.random.default_rng(task_seed)`` or ``envs.splits.generate_in_split``);
    * ``_prompt(agent) -> str``: the full text ``agent`` sees now (the base class appends
      ``feedback_line(agent)`` unless ``APPEND_FEEDBACK`` is False);
    * ``_act(agent, text) -> StepOutcome``: parse and apply one reply; never raise on bad text;
    * ``_legal_moves(agent) -> list[str]``: moves in the action grammar (``[]`` for free text);
    * ``_state_key() -> Hashable``: the game state, no turn counter or history;
    * ``_render_text() -> str``: a picture of the state.

    Optional: ``task_fingerprint()`` (the task's content, for the split check),
    ``_forced_move(agent)`` (what an invalid reply plays where a turn cannot be skipped),
    ``oracle_response(agent) -> str`` (a perfect reply: the oracle row and check), extra
    constructor options (``difficulty``...) passed on with ``**kwargs`` to ``__init__``.
    Hooks may read ``self.transcript`` (``(agent, reply)`` pairs, replies cut to printable
    ASCII), ``self.roles`` (turn order), ``self.turn``, ``self.infos``, ``self.split``,
    ``self.task_seed``. ``envs.check_env`` checks the result; docs/envs.md's "Register your
    own environment" is a complete example.

    Args:
        team: Team variant, a key of ``TEAMS`` (``"mas"``: the env's multi-role team;
            ``"single"``: one role does everything, the single-agent baseline).
        alpha: Weight of the team reward in every agent's reward.
        max_cycles: Full cycles of the turn order before every agent is truncated.
        invalid_action: ``"penalize"`` or ``"terminate"`` (see module docstring).
        invalid_penalty: Size of the invalid-action penalty (a positive number).
        split: ``"train"`` or ``"test"``: which task seeds this env accepts.
        render_mode: ``None``, ``"ansi"`` or ``"human"``.
        max_action_chars: Longer responses are cut to this many characters before parsing
            (the built-in parsers read at most ``envs.parsing.MAX_PARSED_CHARS`` of them).
        max_prompt_chars: Observation space bound; longer prompts are cut (tail kept).
        turn_order: The team's roles in the order they act (default: ``TEAMS[team]``);
            must be a permutation of them.
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi", "human"],
        "name": "text_env",
        "is_parallelizable": False,
    }
    TEAMS: ClassVar[dict[str, tuple[str, ...]]] = {}
    # Difficulty presets the constructor's ``difficulty`` argument accepts, easiest first
    # (empty: the env has no sizes). ``benchmarks.evaluate`` breaks its results down by them;
    # ``metadata["suite"]`` (e.g. "planning") puts the env in that ``--suite``.
    DIFFICULTIES: ClassVar[tuple[str, ...]] = ()
    # The env's horizon when neither make() nor the registration sets max_cycles: every env
    # class states its own (one place, so direct construction and envs.make agree).
    DEFAULT_MAX_CYCLES: ClassVar[int] = 20
    # How the training command trains this env when the user sets nothing (TrainingPreset).
    TRAINING: ClassVar[TrainingPreset] = TrainingPreset()
    spec = None  # the EnvSpec when built by envs.make (like Gymnasium)
    # The base class shows each agent what the env said about its last answer
    # (``StepOutcome.feedback``): ``observe`` appends ``feedback_line(agent)`` to ``_prompt``'s
    # text. An env that places the line itself (the built-ins put it before their final
    # instruction, where a small model reads it best) sets this False and calls feedback_line.
    APPEND_FEEDBACK: ClassVar[bool] = True
    # Attributes a clone shares with its original instead of copying: immutable task data.
    CLONE_SHARED_ATTRS: ClassVar[tuple[str, ...]] = ("spec",)

    def __init__(
        self,
        *,
        team: str = "mas",
        alpha: float = 1.0,
        max_cycles: int | None = None,
        invalid_action: str = "penalize",
        invalid_penalty: float = 0.1,
        split: str = "train",
        render_mode: str | None = None,
        max_action_chars: int = 4096,
        max_prompt_chars: int = 32_768,
        turn_order: tuple[str, ...] | list[str] | None = None,
    ) -> None:
        super().__init__()
        cls = type(self).__name__
        if team not in self.TEAMS:
            raise ValueError(f"{cls}: team={team!r} is unknown; choose one of {sorted(self.TEAMS)}")
        bad_roles = [role for role in self.TEAMS[team] if not _ROLE_PATTERN.match(role)]
        if bad_roles:  # agent ids are "<role>_<n>": a role with "_" or capitals breaks role_of()
            raise ValueError(f"{cls}.TEAMS[{team!r}]: roles must be one lowercase word, got {bad_roles}")
        if invalid_action not in INVALID_ACTION_MODES:
            raise ValueError(
                f"{cls}: invalid_action={invalid_action!r}; choose one of {INVALID_ACTION_MODES}"
            )
        if max_cycles is None:
            max_cycles = self.DEFAULT_MAX_CYCLES
        if not isinstance(max_cycles, int) or max_cycles < 1:
            raise ValueError(f"{cls}: max_cycles must be a positive int, got {max_cycles!r}")
        if invalid_penalty < 0:
            raise ValueError(f"{cls}: invalid_penalty is a size, use a value >= 0 (got {invalid_penalty})")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"{cls}: render_mode={render_mode!r}; choose None or one of {self.metadata['render_modes']}"
            )
        if max_action_chars < 1 or max_prompt_chars < 64:
            raise ValueError(f"{cls}: max_action_chars must be >= 1 and max_prompt_chars >= 64")
        split_range(split)  # validates the split name
        self.team = team
        self.alpha = float(alpha)
        self.max_cycles = max_cycles
        self.invalid_action = invalid_action
        self.invalid_penalty = float(invalid_penalty)
        self.split = split
        self.render_mode = render_mode
        self.max_action_chars = max_action_chars
        self.max_prompt_chars = max_prompt_chars
        if turn_order is None:
            turn_order = self.TEAMS[team]
        if sorted(turn_order) != sorted(self.TEAMS[team]):
            raise ValueError(
                f"{cls}: turn_order={tuple(turn_order)!r} must be a permutation of the {team!r} team's "
                f"roles {self.TEAMS[team]!r}"
            )
        self.roles: tuple[str, ...] = tuple(turn_order)
        self.possible_agents = [f"{role}_0" for role in self.roles]
        self._observation_spaces: dict[str, spaces.Space] = {}
        self._action_spaces: dict[str, spaces.Space] = {}
        self.np_random: np.random.Generator | None = None
        self.np_random_seed: int | None = None
        self.task_seed: int | None = None
        self.agents: list[str] = []

    # ------------------------------------------------------------------ hooks
    def _start_task(self, task_seed: int) -> None:
        """Set up the game for ``task_seed`` (deterministic in the seed)."""
        raise NotImplementedError

    def _prompt(self, agent: str) -> str:
        """The full text ``agent`` sees now (instructions, state, messages, legal moves)."""
        raise NotImplementedError

    def _act(self, agent: str, text: str) -> StepOutcome:
        """Parse and apply ``agent``'s response; never raise on bad text."""
        raise NotImplementedError

    def _legal_moves(self, agent: str) -> list[str]:
        """Moves ``agent`` may make now, as strings in the action grammar."""
        raise NotImplementedError

    def _state_key(self) -> Hashable:
        """Canonical key of the game state (no turn counter, no message history)."""
        raise NotImplementedError

    def _render_text(self) -> str:
        """Human-readable picture of the state."""
        raise NotImplementedError

    def _forced_move(self, agent: str) -> str | None:
        """The legal move (in ``_legal_moves`` grammar) an invalid reply plays under
        ``invalid_action="penalize"``, or None (the default): the turn is skipped, the state
        unchanged. A game whose turn cannot be skipped overrides it: in a betting game the
        other seat cannot act on a history where this seat was to move, so an invalid reply
        passes (checks, or folds to a bet), besides the penalty."""
        return None

    # ------------------------------------------------------------------ spaces
    def observation_space(self, agent: str) -> spaces.Space:
        space = self._observation_spaces.get(agent)
        if space is None:
            self._check_agent(agent)
            text = spaces.Text(self.max_prompt_chars, min_length=0, charset=PRINTABLE)
            space = self._observation_spaces[agent] = spaces.Dict({"prompt": text})
        return space

    def action_space(self, agent: str) -> spaces.Space:
        space = self._action_spaces.get(agent)
        if space is None:
            self._check_agent(agent)
            space = self._action_spaces[agent] = spaces.Text(
                self.max_action_chars, min_length=0, charset=PRINTABLE
            )
        return space

    def _check_agent(self, agent: str) -> None:
        if agent not in self.possible_agents:
            raise KeyError(f"{agent!r} is not an agent of this env; agents: {self.possible_agents}")

    # ------------------------------------------------------------------ API
    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        """Start a task. ``seed`` is the task seed (must belong to the env's split);
        ``None`` draws the next task seed of the split from the env's RNG."""
        if seed is not None:
            seed = check_seed(seed, self.split)
            self.np_random, self.np_random_seed = seeding.np_random(seed)
            self.task_seed = seed
        else:
            if self.np_random is None:
                self.np_random, self.np_random_seed = seeding.np_random(None)
            seeds = split_range(self.split)
            self.task_seed = int(self.np_random.integers(seeds.start, seeds.stop))
        self.agents = list(self.possible_agents)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.num_steps = 0  # agent actions taken this episode
        self.success = False
        self.transcript: list[tuple[str, str]] = []  # (agent, response as shown to others)
        self._feedback = dict.fromkeys(self.agents, "")
        self._last_invalid = dict.fromkeys(self.agents, False)
        self._skip_agent_selection = None
        self._start_task(self.task_seed)
        self.agent_selection = self.agents[0]
        self.infos = {agent: self._info(agent, {}) for agent in self.agents}

    @property
    def turn(self) -> int:
        """Completed cycles of the turn order (the ``t`` of AT-GRPO's (task, turn, agent))."""
        return self.num_steps // len(self.possible_agents)

    def observe(self, agent: str) -> dict[str, str]:
        prompt = self._prompt(agent)
        if self.APPEND_FEEDBACK and (line := self.feedback_line(agent)):
            prompt = f"{prompt}\n\n{line}"
        prompt = to_ascii(prompt)
        if len(prompt) > self.max_prompt_chars:
            prompt = prompt[-self.max_prompt_chars :]  # the state and question are at the end
        return {"prompt": prompt}

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        text = self._action_text(action)
        outcome = (
            StepOutcome(invalid=True, feedback=f"Your response was not text (got {type(action).__name__}).")
            if text is None
            else self._act(agent, text)
        )
        if outcome.invalid and self.invalid_action == "penalize":
            outcome = self._play_forced_move(agent, outcome)
        self.transcript.append((agent, to_ascii(text or "", max_chars=2000)))
        self.num_steps += 1
        if outcome.success:
            self.success = True
        local = {f"local/{name}": float(value) for name, value in outcome.local.items()}
        if outcome.invalid:
            local["local/invalid"] = -self.invalid_penalty
        team = {f"team/{name}": float(value) for name, value in outcome.team.items()}
        team_total = self.alpha * sum(team.values())
        self._feedback[agent] = outcome.feedback
        self._last_invalid[agent] = outcome.invalid
        if outcome.terminated or (outcome.invalid and self.invalid_action == "terminate"):
            self.terminations = dict.fromkeys(self.agents, True)
        elif self.num_steps >= self.max_cycles * len(self.possible_agents):
            self.truncations = dict.fromkeys(self.agents, True)
        self._cumulative_rewards[agent] = 0.0
        if unknown := set(outcome.seats) - set(self.agents):  # the env's bug, not the model's
            raise ValueError(
                f"{type(self).__name__}: StepOutcome.seats names {sorted(unknown)}, not live agents"
            )
        for other in self.agents:
            own = {f"seat/{name}": float(value) for name, value in outcome.seats.get(other, {}).items()}
            if other == agent:
                own.update(local)
            self.rewards[other] = team_total + sum(own.values())
            self.infos[other] = self._info(other, {**team, **own})
        self._accumulate_rewards()
        self.agent_selection = self.possible_agents[self.num_steps % len(self.possible_agents)]
        self._deads_step_first()

    def _play_forced_move(self, agent: str, invalid: StepOutcome) -> StepOutcome:
        """``invalid``, or, when the env forces a move on an invalid reply, that move's outcome
        marked invalid (so the penalty still applies) with both feedbacks."""
        move = self._forced_move(agent)
        if move is None:
            return invalid
        forced = self._act(agent, f"<answer>{move}</answer>")
        if forced.invalid:  # the env's bug, not the model's
            raise ValueError(f"{type(self).__name__}: _forced_move({agent!r}) = {move!r} is not a legal move")
        return StepOutcome(
            team=forced.team,
            local=forced.local,
            invalid=True,
            terminated=forced.terminated,
            success=forced.success,
            feedback=f"{invalid.feedback} Played {move} for you. {forced.feedback}".strip(),
            seats=forced.seats,
        )

    def _action_text(self, action: Any) -> str | None:
        # Only str is text: bytes, None, numbers, arrays are invalid actions, not a crash and
        # not guessed at (decoding bytes would pick an encoding for the caller).
        if not isinstance(action, str):
            return None
        return str(action)[: self.max_action_chars]

    def feedback_line(self, agent: str) -> str:
        """``"Result of your last answer: <feedback>"``, or ``""`` when the env said nothing
        about ``agent``'s last answer. ``observe`` appends it to the prompt; an env with
        ``APPEND_FEEDBACK = False`` places it in ``_prompt`` itself."""
        feedback = self._feedback.get(agent)
        return f"Result of your last answer: {feedback}" if feedback else ""

    def _info(self, agent: str, reward_terms: dict[str, float]) -> dict[str, Any]:
        done = self.terminations[agent] or self.truncations[agent]
        return {
            "legal_moves": [] if done else self._legal_moves(agent),
            "invalid_action": self._last_invalid.get(agent, False),
            "reward_terms": reward_terms,
            "success": self.success,
            "task_seed": self.task_seed,
            "split": self.split,
            "turn": self.turn,
            "feedback": self._feedback.get(agent, ""),
        }

    # ------------------------------------------------------------------ extras
    def render(self) -> str | None:
        if self.task_seed is None:
            raise RuntimeError("Call reset() before render().")
        text = self._render_text()
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        """Nothing to release; defined because PettingZoo requires it with render()."""

    def state_key(self) -> Hashable:
        """Hashable, canonical key of the game state (GiGPO anchor states).

        It holds what the acting role can see that matters (board, positions), never the
        turn counter or the message history, so equal states reached by different paths
        share a key. The acting agent is *not* part of it: group keys add it.
        """
        return self._state_key()

    def task_fingerprint(self) -> str:
        """Canonical text of the current task's content (call it right after ``reset``):
        ``check_env`` verifies that no train task shares it with a test task.

        Default: the first agent's prompt at reset, which shows the task for most envs.
        Override it when tasks differ in content the prompt does not show (a secret number,
        hidden tests), or return the text your level generator splits on.
        """
        return self.observe(self.possible_agents[0])["prompt"]

    def clone(self) -> TextAECEnv:
        """An independent copy of this env mid-episode (tree sampling branches on it).

        Everything mutable is copied; attributes named in ``CLONE_SHARED_ATTRS``
        (immutable task data) are shared; spaces are rebuilt lazily per copy.
        """
        memo: dict[int, Any] = {}
        for name in self.CLONE_SHARED_ATTRS:
            value = self.__dict__.get(name)
            if value is not None:
                memo[id(value)] = value
        memo[id(self._observation_spaces)] = {}
        memo[id(self._action_spaces)] = {}
        new = object.__new__(type(self))
        new.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return new

    def __str__(self) -> str:
        return self.metadata["name"]
