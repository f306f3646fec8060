"""``PlanningEnv``: the planner/executor protocol shared by Sokoban, Plan-Path and Sudoku.

A planning env wraps a pure puzzle (``game.py``: rules only, no text) and a grammar
(``prompts.py``: how moves are written and read); ``envs.planning.puzzle`` defines what these
are (``Puzzle``, ``PlanningLevel``, ``PlanningGame``). Teams:

* ``mas``: ``planner_0`` reads the state and proposes a plan (a move list with a short
  rationale); ``executor_0`` sees the state and the planner's message and commits the
  moves that are applied. Turn order: planner, executor, planner, ...
* ``single``: ``solver_0`` reads the state and commits moves itself (the single-agent
  baseline).
* ``tool``: ``tool_0`` writes a Python program in a ```python block; it runs in
  ``envs.sandbox`` with the board on standard input, exactly as the prompt shows it (the
  rendered grid with its row and column numbers), and the last line it prints is read as a
  move list in the answer grammar. The env simulates those moves on a copy of the state (all
  of them, not only ``max_moves_per_turn``) and tells both agents what they did. ``plan_0``
  sees the program, its output and that simulation, and commits the moves that are applied
  (it may copy the tool's moves or write others). Turn order: tool, plan, tool, ... Each
  env's ``tool_program.py`` is a reference program (a search that solves any board), the
  tool oracle's answer.

Every response must put its moves inside ``<answer>...</answer>``. Rewards
(``reward = alpha * team + local``):

==========================  =====================================================
``team/progress``           Phi(after) - Phi(before) of the real state, on executor /
                            solver turns. Phi in [0, 1] is the puzzle's progress
                            potential (1 iff solved), so these terms telescope.
``team/success``            ``success_bonus`` when the puzzle becomes solved.
``team/optimality``         on success, ``optimality_bonus * optimal / max(optimal,
                            moves made)``: the exact solver's move count.
``local/plan_progress``     planner only: Phi after simulating the plan on a copy of
                            the state minus Phi now (the real state is untouched).
``local/plan_solves``       planner only: ``plan_bonus`` if the simulated plan solves.
``local/tool_progress``     tool only: Phi after simulating the program's printed moves
                            on a copy of the state minus Phi now.
``local/tool_solves``       tool only: ``plan_bonus`` if those moves solve.
``local/exec_error``        tool only, ``-exec_error_penalty``: the program raised, ran out
                            of memory, processes or output, or was killed.
``local/timeout``           tool only, ``-exec_error_penalty``: it ran past
                            ``sandbox_timeout_s``.
``local/no_output``         tool only, ``-exec_error_penalty``: it printed nothing, or a
                            last line that is not a move list.
``local/no_program``        tool only, ``-no_program_penalty`` (on top of ``invalid``): the
                            reply holds no program (no code block, or a blank one).
``local/invalid``           ``-invalid_penalty``: no ``<answer>`` block (no code block for
                            the tool), an unreadable move, or an illegal move (moves
                            before it still count; for the tool, a simulated one).
==========================  =====================================================

Writing no program must never pay better than writing one that fails: with ``no_program``
at 0 (the -v1 / sudoku-v0 rewards) a tool reply without a program cost 0.1 and a failing
program 0.5, and GRPO learned to drop the code fence (every tool reply of a collapsed run
was unparsable). From plan_path-v2, sokoban-v2 and sudoku-v1 a reply without a program
costs ``invalid_penalty + no_program_penalty`` (0.6), more than any program run.

Team terms go to every agent (``alpha`` times), so in the tool team the tool agent is paid
for what its simulated moves achieve (local) and both share what the plan agent's executed
moves achieve (team).

At most ``max_moves_per_turn`` moves are read from one answer; the rest are ignored (said
in the feedback, not penalised).
"""

from __future__ import annotations

import dataclasses
import inspect
import warnings
from collections.abc import Hashable
from typing import Any, ClassVar

import numpy as np

from envs.core import StepOutcome, TextAECEnv, TrainingPreset, role_of, to_ascii
from envs.parsing import extract_answer
from envs.planning import tool_runs
from envs.planning.puzzle import PlanningGame, PlanningLevel, Puzzle
from envs.sandbox import SandboxJob, SandboxLimits
from envs.sandbox.memo import run_remembered
from envs.splits import generate_in_split

__all__ = ["Puzzle", "PlanningLevel", "PlanningGame", "PlanningEnv", "PROMPT_STYLES"]

PROMPT_STYLES = ("verbose", "brief")


class PlanningEnv(TextAECEnv):
    """Planner/executor env over a ``Puzzle``. Subclasses set ``GAME`` (and
    ``DEFAULT_MAX_CYCLES``); their size arguments are the fields of ``GAME.presets``' params
    dataclass, taken by keyword, so a subclass needs no ``__init__`` of its own.

    Args:
        difficulty: A key of ``GAME.presets``.
        **sizes: Overrides of the preset's params fields (e.g. ``height=7``; ``None`` keeps
            the preset's).
        max_moves_per_turn: Moves read from one answer (default per env).
        success_bonus, optimality_bonus, plan_bonus, exec_error_penalty, no_program_penalty:
            Reward sizes (module docstring). Keep ``no_program_penalty >= exec_error_penalty``,
            or a tool agent learns that writing no program is the cheapest failure.
        sandbox_timeout_s: Wall-clock limit of one tool program (``team="tool"``).
        prompt_style: ``"verbose"`` (the -v0 prompts: rules, grammar with an example, the
            role's job) or ``"brief"`` (the -v1 prompts: one line of rules, the grid, the
            legal moves and the role's job, about half the tokens).
        **kwargs: ``TextAECEnv`` arguments (team, alpha, max_cycles, split, ...).
    """

    metadata: ClassVar[dict[str, Any]] = {**TextAECEnv.metadata, "suite": "planning"}
    APPEND_FEEDBACK = False  # _prompt places feedback_line() before the final instruction
    DEFAULT_MAX_CYCLES: ClassVar[int] = 10
    # Easy levels and 16-token replies (a few moves) fit a laptop CPU and the 135M model.
    # A tool agent's program needs ~220-340 tokens (the reference programs), a move list ~16.
    TRAINING: ClassVar[TrainingPreset] = TrainingPreset(
        max_new_tokens=16, role_max_new_tokens={"tool": 384}, env_kwargs={"difficulty": "easy"}
    )
    TEAMS: ClassVar[dict[str, tuple[str, ...]]] = {
        "mas": ("planner", "executor"),
        "single": ("solver",),
        "tool": ("tool", "plan"),
    }
    CLONE_SHARED_ATTRS: ClassVar[tuple[str, ...]] = ("spec", "level")
    DEFAULT_MAX_MOVES_PER_TURN: ClassVar[int] = 10
    GAME: ClassVar[PlanningGame]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "GAME" in cls.__dict__:  # an env class: its difficulties are its game's presets
            cls.DIFFICULTIES = tuple(cls.GAME.presets)

    def __init__(
        self,
        *,
        difficulty: str = "easy",
        max_moves_per_turn: int | None = None,
        success_bonus: float = 1.0,
        optimality_bonus: float = 0.5,
        plan_bonus: float = 0.5,
        exec_error_penalty: float = 0.5,
        no_program_penalty: float = 0.5,
        sandbox_timeout_s: float = 5.0,
        prompt_style: str = "verbose",
        **kwargs: Any,
    ) -> None:
        name = type(self).__name__
        if prompt_style not in PROMPT_STYLES:
            raise ValueError(f"{name}: prompt_style={prompt_style!r}; choose one of {PROMPT_STYLES}")
        if prompt_style == "brief" and self.GAME.brief_instructions is None:
            raise ValueError(f"{name}: has no brief prompts yet; use prompt_style='verbose'")
        self.prompt_style = prompt_style
        presets = self.GAME.presets
        if difficulty not in presets:
            raise ValueError(f"{name}: difficulty={difficulty!r}; choose one of {sorted(presets)}")
        size_fields = {f.name for f in dataclasses.fields(presets[difficulty])}
        sizes = {name: kwargs.pop(name) for name in list(kwargs) if name in size_fields}
        unknown = sorted(set(kwargs) - set(inspect.signature(TextAECEnv.__init__).parameters))
        if unknown:
            raise TypeError(
                f"{name}: unknown argument(s) {unknown}; its sizes: {', '.join(sorted(size_fields))}; "
                "see PlanningEnv and TextAECEnv for the others"
            )
        overrides = {name: value for name, value in sizes.items() if value is not None}
        self.params = dataclasses.replace(presets[difficulty], **overrides)  # validates sizes
        self.difficulty = difficulty
        super().__init__(**kwargs)
        if max_moves_per_turn is None:
            max_moves_per_turn = self.DEFAULT_MAX_MOVES_PER_TURN
        if not isinstance(max_moves_per_turn, int) or max_moves_per_turn < 1:
            raise ValueError(f"{name}: max_moves_per_turn must be a positive int, got {max_moves_per_turn!r}")
        self.max_moves_per_turn = max_moves_per_turn
        self._check_horizon(name)
        self.success_bonus = float(success_bonus)
        self.optimality_bonus = float(optimality_bonus)
        self.plan_bonus = float(plan_bonus)
        if self.team == "tool" and self.GAME.tool_program is None:
            raise ValueError(f"{name}: has no tool team yet (no tool_program.py); use team='mas' or 'single'")
        penalties = {"exec_error_penalty": exec_error_penalty, "no_program_penalty": no_program_penalty}
        for field, size in penalties.items():
            if size < 0:
                raise ValueError(f"{name}: {field} is a size, use a value >= 0 (got {size})")
        self.exec_error_penalty = float(exec_error_penalty)
        self.no_program_penalty = float(no_program_penalty)
        self.sandbox_limits = SandboxLimits(timeout_s=sandbox_timeout_s)

    def _check_horizon(self, name: str) -> None:
        """Warn, once at construction, when no level of these sizes fits an episode.

        A horizon that only some levels exceed is a choice, not a mistake: the training presets
        play 2 cycles (easy Sokoban: 20 moves for levels of 6 to 30), so the rare long level is
        a task the team cannot win, and warning about each one would be noise about settings
        the user never made. ``level.optimal_moves`` says what a task needs.
        """
        if self.GAME.min_moves is None:
            return
        horizon, needed = self.max_cycles * self.max_moves_per_turn, self.GAME.min_moves(self.params)
        if needed > horizon:
            warnings.warn(
                f"{name}: every {self.difficulty} task needs at least {needed} moves but an episode allows "
                f"at most max_cycles * max_moves_per_turn = {horizon}, so no team can solve one; raise "
                "max_cycles or max_moves_per_turn, or pick a smaller difficulty.",
                stacklevel=3,
            )

    def _generate_level(self, rng: np.random.Generator) -> PlanningLevel:
        return self.GAME.generate_level(self.params, rng)

    def _parse_moves(self, answer: str) -> tuple[list[Any], str | None]:
        return self.GAME.parse_moves(answer)

    def _format_moves(self, moves: list[Any]) -> str:
        return self.GAME.format_moves(moves)

    # ------------------------------------------------------------- TextAECEnv hooks
    def _start_task(self, task_seed: int) -> None:
        self.level = generate_in_split(task_seed, self._generate_level, lambda lv: lv.fingerprint)
        self.puzzle = self.level.puzzle.copy()
        self.moves_made = 0
        # tool team: the latest program run as the agents are told it (program, what it
        # printed or why it failed, the simulation), and the moves it printed if readable
        self.tool_report: tuple[str, str, str] | None = None
        self.tool_moves: list[Any] | None = None

    def _state_key(self) -> Hashable:
        if self.team == "tool":  # the plan agent's view includes the tool's run
            return self.puzzle.key(), self.tool_report[1:] if self.tool_report else None
        return self.puzzle.key()

    def _render_text(self) -> str:
        return self.puzzle.render()

    def _legal_moves(self, agent: str) -> list[str]:
        if role_of(agent) == "tool":
            return []  # a program, not a move
        return [self._format_moves([move]) for move in self.puzzle.legal_moves()]

    def _prompt(self, agent: str) -> str:
        if self.team == "tool":
            return self._tool_team_prompt(agent)
        if self.prompt_style == "brief":
            return self._brief_prompt(agent)
        role = role_of(agent)
        parts = [
            self.GAME.instructions(role, self.max_moves_per_turn),
            "",
            "Current state:",
            self.puzzle.render(),
            self._legal_moves_text(agent),
        ]
        if role == "executor":
            plan = self._last_message_from("planner")
            parts += ["", "The planner says:", plan if plan is not None else "(nothing yet)"]
        if feedback := self.feedback_line(agent):
            parts += ["", feedback]
        parts += ["", "Put your moves inside <answer>...</answer>."]
        return "\n".join(parts)

    def _brief_prompt(self, agent: str) -> str:
        """Rules in one line, the grid, legal moves, the planner's plan (executor), the last
        feedback, then the role's job last, where a small model reads it best."""
        role = role_of(agent)
        rules, job = self.GAME.brief_instructions(role)
        parts = [rules, self.puzzle.render(), self._legal_moves_text(agent)]
        if role == "executor":
            plan = self._last_message_from("planner")
            parts.append(f"The planner's plan: {plan if plan is not None else '(none yet)'}")
        if feedback := self.feedback_line(agent):
            parts.append(feedback)
        parts.append(f"{job} Answer as <answer>moves</answer>, at most {self.max_moves_per_turn} moves.")
        return "\n".join(parts)

    def _tool_team_prompt(self, agent: str) -> str:
        """Rules, the board (what the program reads), the legal moves and the tool's run (plan
        agent), the last feedback, then the role's job last. One style: the tool team is newer
        than the verbose prompts and uses no example answer to copy."""
        role = role_of(agent)
        rules, job = self.GAME.tool_instructions(role)
        parts = [rules, "Current state:", self.puzzle.render()]
        if role == "plan":
            parts.append(self._legal_moves_text(agent))
            if self.tool_report is None:
                parts.append("The tool agent wrote no program.")
            else:
                program, shown, simulation = self.tool_report
                parts += ["The tool agent's program:", "```python", program, "```", shown]
                parts += [simulation] if simulation else []
        if feedback := self.feedback_line(agent):
            parts.append(feedback)
        if role == "tool":
            parts.append(f"{job} Answer with a ```python block.")
        else:
            parts.append(f"{job} Answer as <answer>moves</answer>, at most {self.max_moves_per_turn} moves.")
        return "\n".join(parts)

    def _act(self, agent: str, text: str) -> StepOutcome:
        if role_of(agent) == "tool":
            return self._tool_turn(text)
        answer = extract_answer(text)
        if answer is None:
            return StepOutcome(invalid=True, feedback="No <answer>...</answer> block found.")
        moves, error = self._parse_moves(answer)
        if error is not None:
            return StepOutcome(invalid=True, feedback=f"Could not read your answer: {error}")
        if role_of(agent) == "planner":
            return self._score_plan(moves)
        return self._execute(moves)

    # ------------------------------------------------------------- rules of the protocol
    def _run(self, puzzle: Any, moves: list[Any], limit: int | None = None) -> tuple[int, str | None, int]:
        """Apply up to ``limit`` (default ``max_moves_per_turn``) moves; stop at the first
        illegal one or when solved. Returns (moves applied, reason of the illegal move or None,
        moves ignored)."""
        limit = self.max_moves_per_turn if limit is None else limit
        applied = 0
        for move in moves[:limit]:
            if puzzle.is_solved():
                break
            reason = puzzle.apply(move)
            if reason is not None:
                return applied, f"move {applied + 1} ({self._format_moves([move])}) is illegal: {reason}", 0
            applied += 1
        return applied, None, max(0, len(moves) - limit)

    def _simulate(
        self, moves: list[Any], who: str, limit: int | None = None
    ) -> tuple[dict[str, float], int, str | None, int]:
        """Play ``moves`` on a copy of the state (the real one is untouched). Returns the local
        terms ``<who>_progress`` (Phi after minus Phi now) and ``<who>_solves`` (``plan_bonus``,
        if the copy is solved), and ``_run``'s (applied, illegal, ignored)."""
        simulated = self.puzzle.copy()
        applied, illegal, ignored = self._run(simulated, moves, limit)
        local = {f"{who}_progress": simulated.potential() - self.puzzle.potential()}
        if simulated.is_solved():
            local[f"{who}_solves"] = self.plan_bonus
        return local, applied, illegal, ignored

    def _score_plan(self, moves: list[Any]) -> StepOutcome:
        local, applied, illegal, ignored = self._simulate(moves, "plan")
        feedback = f"Your plan's first {applied} move(s) were legal"
        feedback += "; it solves the puzzle." if "plan_solves" in local else "."
        if illegal:
            feedback += f" But {illegal}."
        if ignored:
            feedback += f" {ignored} move(s) past the limit of {self.max_moves_per_turn} were ignored."
        return StepOutcome(local=local, invalid=illegal is not None, feedback=feedback)

    def _execute(self, moves: list[Any]) -> StepOutcome:
        before = self.puzzle.potential()
        applied, illegal, ignored = self._run(self.puzzle, moves)
        self.moves_made += applied
        team = {"progress": self.puzzle.potential() - before}
        solved = self.puzzle.is_solved()
        if solved:
            team["success"] = self.success_bonus
            optimal = self.level.optimal_moves
            team["optimality"] = self.optimality_bonus * optimal / max(optimal, self.moves_made, 1)
        feedback = f"{applied} move(s) applied."
        if illegal:
            feedback += f" Stopped: {illegal}."
        if ignored:
            feedback += f" {ignored} move(s) past the limit of {self.max_moves_per_turn} were ignored."
        if solved:
            feedback += " Solved!"
        return StepOutcome(
            team=team, invalid=illegal is not None, terminated=solved, success=solved, feedback=feedback
        )

    def _tool_turn(self, text: str) -> StepOutcome:
        """Run the reply's program on the board, simulate every move it printed on a copy."""
        job = tool_runs.job_for_reply(text, self.puzzle.render(), self.sandbox_limits)
        self.tool_moves = None
        if job is None:
            self.tool_report = None
            local = {"no_program": -self.no_program_penalty} if self.no_program_penalty else {}
            return StepOutcome(local=local, invalid=True, feedback="No ```python code block found.")
        run = tool_runs.read_run(run_remembered(job), self.sandbox_limits)
        program = to_ascii(job.code, max_chars=tool_runs.MAX_PROGRAM_CHARS)
        moves, error = self._parse_moves(run.printed) if run.failure is None else ([], None)
        failure, shown = run.failure, run.shown
        if failure is None and error is not None:
            failure, shown = "no_output", f"its last line is not a move list ({error}): {run.shown}"
        if failure is not None:
            self.tool_report = (program, f"It failed: {shown}.", "")
            penalty = {failure: -self.exec_error_penalty}
            return StepOutcome(local=penalty, feedback=f"Your program failed: {shown}.")
        local, applied, illegal, _ = self._simulate(moves, "tool", limit=len(moves))
        simulation = f"Simulated from this state: the first {applied} of its {len(moves)} move(s) "
        simulation += "solve the puzzle." if "tool_solves" in local else "are legal; they do not solve it."
        if illegal:
            simulation += f" But {illegal}."
        self.tool_moves = moves
        self.tool_report = (program, f"It printed: {shown}", simulation)
        return StepOutcome(
            local=local, invalid=illegal is not None, feedback=f"Your program printed: {shown}. {simulation}"
        )

    def sandbox_jobs(self, agent: str, replies: list[str]) -> list[SandboxJob]:
        """The sandbox runs that stepping ``agent`` with each of ``replies`` would make. A
        rollout hands those of a whole turn (K candidates x tasks) to
        ``envs.sandbox.memo.prefetch``, which runs them concurrently; the steps then reuse the
        results."""
        if self.team != "tool" or role_of(agent) != "tool":
            return []
        board, limits = self.puzzle.render(), self.sandbox_limits
        jobs = (tool_runs.job_for_reply(self._action_text(r) or "", board, limits) for r in replies)
        return [job for job in jobs if job is not None]

    def _legal_moves_text(self, agent: str) -> str:
        """The prompt line listing legal moves (override for a compact form)."""
        legal = self._legal_moves(agent)
        return "Legal moves now: " + (", ".join(legal) if legal else "(none)")

    def _last_message_from(self, role: str) -> str | None:
        for agent, message in reversed(self.transcript):
            if role_of(agent) == role:
                return to_ascii(message, max_chars=1500)
        return None

    # ------------------------------------------------------------- oracle support
    def solution(self) -> list[Any] | None:
        """An optimal move list from the current state (the exact solver); ``None`` if
        the current state cannot be solved any more (a Sokoban box in a corner, a wrong
        Sudoku digit that leaves no completion). The solver runs on every call; the
        presets solve in milliseconds, very large custom levels can take seconds."""
        return self.GAME.solve(self.puzzle)

    def oracle_response(self, agent: str) -> str:
        """The response an oracle ``agent`` gives now: the next optimal moves (at most
        ``max_moves_per_turn``) in the grammar, inside answer tags. From a state with no
        solution it answers an empty block (an invalid action): the oracle never gets
        there by itself, since it only plays optimal moves.

        Tool team: the tool oracle answers the env's reference program (``tool_program.py``) in
        a python block inside answer tags (the trainer's default reply prefix is ``<answer>``);
        the plan oracle commits the tool's printed moves when they solve the puzzle (they
        need not be optimal), else the solver's."""
        if role_of(agent) == "tool":
            return f"<answer>\n```python\n{self.GAME.tool_program}```\n</answer>"
        moves = self.solution() or []
        if role_of(agent) == "plan" and self.tool_moves:
            local, _, illegal, _ = self._simulate(self.tool_moves, "tool", limit=len(self.tool_moves))
            if illegal is None and "tool_solves" in local:
                moves = self.tool_moves
        return f"<answer>{self._format_moves(moves[: self.max_moves_per_turn])}</answer>"
