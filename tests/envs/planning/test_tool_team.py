"""The planning envs' tool team: a program in the sandbox, a plan agent that commits moves.

Real sandbox runs throughout (a run costs ~25 ms): the reference programs, hostile programs and
the simulation the env reports are what a trained tool agent meets.
"""

from __future__ import annotations

import dataclasses

import pytest

import envs
from envs.planning.base import PlanningEnv
from envs.planning.plan_path.env import PlanPathEnv
from envs.sandbox import memo

PLANNING = ("plan_path", "sokoban", "sudoku")
PENALTY = 0.5


def fence(code: str) -> str:
    return f"```python\n{code}\n```"


def tool_env(name="plan_path", seed=3, **kwargs) -> PlanningEnv:
    env = envs.make(name, team="tool", **kwargs)
    env.reset(seed=seed)
    return env


def play_oracle(env) -> int:
    """Play the tool and plan oracles to the end; the number of tool turns."""
    tool_turns = 0
    while not (env.terminations[env.agent_selection] or env.truncations[env.agent_selection]):
        agent = env.agent_selection
        tool_turns += agent == "tool_0"
        env.step(env.oracle_response(agent))
        if agent == "tool_0":  # the reference program solves every board it is shown
            assert env.infos[agent]["reward_terms"].get("local/tool_solves") == env.plan_bonus
    return tool_turns


@pytest.mark.parametrize("name", PLANNING)
def test_reference_programs_solve_every_preset_in_the_sandbox(name):
    difficulties = envs.make(name).DIFFICULTIES
    assert difficulties == ("easy", "medium", "hard")
    for difficulty in difficulties:
        for seed in range(3):
            env = tool_env(name, seed=seed, difficulty=difficulty)
            assert play_oracle(env) >= 1
            assert env.success, (name, difficulty, seed)


def test_prompts_carry_the_program_its_output_and_the_simulation():
    env = tool_env()
    tool_prompt = env.observe("tool_0")["prompt"]
    board = env.puzzle.render()
    assert board in tool_prompt and "standard input" in tool_prompt and "```python" in tool_prompt
    program = 'print("U U")  # a guess'
    env.step(fence(program))
    plan_prompt = env.observe("plan_0")["prompt"]
    assert program in plan_prompt
    assert "It printed: U U" in plan_prompt
    assert "Simulated from this state:" in plan_prompt
    assert "Legal moves now:" in plan_prompt
    # and the tool hears the same in its feedback next cycle
    env.step("<answer>U</answer>")
    assert "Your program printed: U U" in env.observe("tool_0")["prompt"]


def test_the_program_reads_the_board_exactly_as_the_prompt_shows_it():
    env = tool_env("sokoban")
    env.step(fence("import sys\nboard = sys.stdin.read()\nprint(len(board.splitlines()))"))
    height = len(env.puzzle.render().splitlines())
    # a number is not a move: named penalty, and the plan agent is told what it printed
    assert env.infos["tool_0"]["reward_terms"] == {"local/no_output": -PENALTY}
    assert f"{height}" in env.observe("plan_0")["prompt"]


def test_simulated_moves_pay_the_tool_and_leave_the_real_state_alone():
    env = tool_env()
    key, solution = env.puzzle.key(), env.solution()
    env.step(fence(f"print({' '.join(solution)!r})"))
    terms = env.infos["tool_0"]["reward_terms"]
    assert terms["local/tool_progress"] == pytest.approx(1.0 - env.level.puzzle.potential())
    assert terms["local/tool_solves"] == env.plan_bonus
    assert "team/progress" not in terms and env.puzzle.key() == key
    # an illegal printed move: the legal prefix counts, the move is an invalid action
    env = tool_env()
    env.step(fence(f"print({solution[0]!r} + ' ' + {'U ' * 30!r})"))
    terms = env.infos["tool_0"]["reward_terms"]
    assert terms["local/invalid"] == -env.invalid_penalty
    assert "local/tool_solves" not in terms


def test_plan_oracle_copies_a_solving_tool_output_and_else_solves():
    env = tool_env(seed=5)
    detour = env.solution()
    first = detour[0]
    back = {"U": "D", "D": "U", "L": "R", "R": "L"}[first]
    longer = [first, back] + detour  # solves, not optimally
    env.step(fence(f"print({' '.join(longer)!r})"))
    assert env.oracle_response("plan_0") == f"<answer>{' '.join(longer[: env.max_moves_per_turn])}</answer>"
    env = tool_env(seed=5)
    env.step(fence('print("nonsense")'))
    assert env.oracle_response("plan_0") == f"<answer>{' '.join(detour[: env.max_moves_per_turn])}</answer>"


HOSTILE = {
    "timeout": "while True:\n    pass",
    "exec_error": "raise SystemExit(3)",
    "no_output": "x = 1",
}
HOSTILE_EXEC_ERRORS = {
    "huge output": "import sys\nwhile True:\n    sys.stdout.write('U' * 65536)",
    "file write outside": "open('/etc/teamgym-escape', 'w').write('x')",
    "read root's files": "print(open('/root/.bashrc').read())\nprint(open('/etc/shadow').read())",
    "socket": "import socket\nsocket.create_connection(('1.1.1.1', 53), timeout=1)",
    "fork bomb": "import os\nwhile True:\n    os.fork()",
}


@pytest.mark.parametrize(
    ("term", "program"),
    list(HOSTILE.items()) + [("exec_error", code) for code in HOSTILE_EXEC_ERRORS.values()],
    ids=list(HOSTILE) + list(HOSTILE_EXEC_ERRORS),
)
def test_a_hostile_program_costs_its_named_penalty_and_nothing_else(term, program):
    # Only the endless loop is meant to reach the wall-clock limit, so only it gets a short
    # one; every other program ends by itself and gets room to start and fail on a loaded
    # machine (under a CI run's load the fork bomb once took over 2 s to reach its fork
    # limit and was read as a timeout).
    env = tool_env(sandbox_timeout_s=2.0 if term == "timeout" else 30.0)
    key = env.puzzle.key()
    env.step(fence(program))
    assert env.infos["tool_0"]["reward_terms"] == {f"local/{term}": -PENALTY}
    assert env.rewards["tool_0"] == -PENALTY and env.rewards["plan_0"] == 0.0
    assert env.puzzle.key() == key and env.agent_selection == "plan_0"
    assert "It failed" in env.observe("plan_0")["prompt"] or term == "no_output"
    env.step(env.oracle_response("plan_0"))  # the episode goes on: the plan agent solves
    assert env.success


def test_no_code_block_is_an_invalid_action_that_costs_more_than_a_failing_program():
    env = tool_env()
    env.step("I would use BFS here.")
    terms = env.infos["tool_0"]["reward_terms"]
    assert terms == {"local/invalid": -env.invalid_penalty, "local/no_program": -env.no_program_penalty}
    assert "wrote no program" in env.observe("plan_0")["prompt"]
    failing = tool_env()
    failing.step(fence("raise SystemExit(1)"))
    assert failing.rewards["tool_0"] == -PENALTY
    assert env.rewards["tool_0"] < failing.rewards["tool_0"]  # dropping the program never pays


@pytest.mark.parametrize("old_id", ["plan_path-v1", "plan_path-v0", "sokoban-v1", "sudoku-v0"])
def test_versions_before_the_no_program_penalty_keep_their_rewards(old_id):
    # the exploit the penalty ends: a program that lost its opening fence is no program
    env = tool_env(old_id)
    env.step("<answer>print('U')\n```")
    assert env.infos["tool_0"]["reward_terms"] == {"local/invalid": -env.invalid_penalty}


def test_a_negative_no_program_penalty_names_the_field():
    with pytest.raises(ValueError, match="no_program_penalty is a size"):
        envs.make("plan_path", team="tool", no_program_penalty=-1)


def test_sandbox_jobs_name_the_runs_a_step_makes_and_the_step_reuses_them():
    env = tool_env()
    replies = [fence('print("U")'), "no program", fence('print("U")'), fence('print("D")')]
    jobs = env.sandbox_jobs("tool_0", replies)
    assert [job.code for job in jobs] == ['print("U")', 'print("U")', 'print("D")']
    assert {job.stdin for job in jobs} == {env.puzzle.render() + "\n"}
    assert env.sandbox_jobs("plan_0", replies) == []
    memo.forget_all()
    assert memo.prefetch(jobs) == 2  # identical programs on one board run once
    before = memo.remembered_stats()
    env.clone().step(replies[0])
    env.clone().step(replies[3])
    after = memo.remembered_stats()
    assert after["runs"] == before["runs"] and after["reused"] == before["reused"] + 2


def test_the_tool_team_is_refused_where_an_env_has_no_program():
    class NoProgram(PlanPathEnv):
        GAME = dataclasses.replace(PlanPathEnv.GAME, tool_program=None)

    with pytest.raises(ValueError, match="no tool team"):
        NoProgram(team="tool")
