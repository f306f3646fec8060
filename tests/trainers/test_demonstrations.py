"""The warm start's demonstrations: the oracle's replies as the sampler would have written
them (the rollout's prompt, the stop or the EOS token, the token budget's cut)."""

from __future__ import annotations

import envs
from tests.trainers.conftest import ONE_TOKEN_ID
from tests.trainers.sft_helpers import team_config
from trainers.demonstrations import _shared, oracle_demonstrations
from trainers.records import TaskKey
from trainers.teams import build_team


def test_oracle_demonstrations_carry_the_rollout_prompt_and_the_reply_through_the_stop():
    env_kwargs = {"team": "mas", "difficulty": "easy", "max_cycles": 2}
    env = envs.make("plan_path", **env_kwargs)
    team = build_team(team_config(), env)
    tasks = [TaskKey(envs.spec("plan_path").id, "train", seed) for seed in range(6)]
    turns, failed, _ = oracle_demonstrations(team, tasks, env_kwargs=env_kwargs)
    assert failed == 0 and {t.role for t in turns} == {"planner", "executor"}
    policy = team.bindings["planner"].policy
    replay = envs.make("plan_path", **env_kwargs)
    replay.reset(seed=tasks[0].seed)
    first = turns[0]
    assert first.prompt_token_ids == tuple(policy.prompt_token_ids(team.prompt_for(replay, "planner_0")))
    oracle = replay.oracle_response("planner_0")  # "<answer>R D ...</answer>"
    assert policy.tokenizer.decode(first.token_ids) == oracle[len("<answer>") :]
    assert first.response == oracle[: -len("</answer>")]  # prefix + text cut at the stop, as sampled
    assert first.policy == "tiny-test:shared" and not first.invalid
    assert all(t.policy == "tiny-test:shared" for t in turns)


def test_a_reply_without_a_stop_string_ends_with_the_eos_token():
    env_kwargs = {"team": "mas"}
    team = build_team(team_config(response_prefix=""), envs.make(ONE_TOKEN_ID, **env_kwargs))
    turns, *_ = oracle_demonstrations(team, [TaskKey(ONE_TOKEN_ID, "train", 0)], env_kwargs=env_kwargs)
    tokenizer = team.bindings["planner"].policy.tokenizer
    assert [list(t.token_ids) for t in turns] == [tokenizer("k")["input_ids"] + [tokenizer.eos_token_id]] * 2


def test_an_answer_without_the_prefix_is_demonstrated_after_it_and_judged_so():
    """math's and code's oracles write a bare code block or \\boxed{} while training replies
    start with <answer>: the demonstrated reply is a newline and the whole answer, the env reads
    it after the prefix, and an episode it does not solve that way is dropped (the one-token
    env wants <answer>k)."""
    env_kwargs = {"team": "mas"}
    math = build_team(team_config(), envs.make("math", **env_kwargs))
    turns, failed, _ = oracle_demonstrations(math, [TaskKey("math", "train", 0)], env_kwargs=env_kwargs)
    assert failed == 0 and [t.role for t in turns[:2]] == ["tool", "reasoner"]
    assert turns[0].response.startswith("<answer>\n```python\nprint(")
    assert turns[1].response.startswith("<answer>\n\\boxed{")
    code = build_team(team_config(), envs.make("code", **env_kwargs))  # its fence must start a line
    turns, failed, _ = oracle_demonstrations(code, [TaskKey("code", "train", 0)], env_kwargs=env_kwargs)
    assert failed == 0 and turns[0].response.startswith("<answer>\n```python")
    one_token = build_team(team_config(response_prefix="<plan>"), envs.make(ONE_TOKEN_ID, **env_kwargs))
    turns, failed, _ = oracle_demonstrations(
        one_token, [TaskKey(ONE_TOKEN_ID, "train", 0)], env_kwargs=env_kwargs
    )
    assert (turns, failed) == ([], 1)


def test_an_oracle_reply_over_its_token_budget_is_cut_as_a_sampler_would_cut_it():
    """The role's budget cuts a demonstrated reply (finish reason "length", the text its tokens'
    decoding); an episode the cut reply no longer solves is dropped and counted as over budget
    (code's reference solution cut at 8 tokens), one it still solves is kept (a plan cut at 2
    tokens: plan_path's executor solves the level without it)."""
    env_kwargs = {"team": "mas", "difficulty": "easy", "max_cycles": 2}
    team = build_team(team_config(), envs.make("plan_path", **env_kwargs))
    tasks = [TaskKey(envs.spec("plan_path").id, "train", seed) for seed in range(3)]
    whole = oracle_demonstrations(team, tasks, env_kwargs=env_kwargs)
    cut = oracle_demonstrations(team, tasks, env_kwargs=env_kwargs, role_max_new_tokens={"planner": 2})
    assert (cut.failed, cut.over_budget) == (0, 0) and len(cut.turns) == len(whole.turns)
    tokenizer = team.bindings["planner"].policy.tokenizer
    for before, after in zip(whole.turns, cut.turns, strict=True):
        if after.role == "executor":
            assert after.token_ids == before.token_ids
            continue
        assert len(before.token_ids) > 2 and after.token_ids == before.token_ids[:2]
        assert after.finish_reason == "length"
        assert after.response == "<answer>" + tokenizer.decode(after.token_ids, skip_special_tokens=True)
    env_kwargs = {"team": "mas"}
    code = build_team(team_config(), envs.make("code", **env_kwargs))
    task = [TaskKey("code", "train", 0)]
    assert oracle_demonstrations(code, task, env_kwargs=env_kwargs, max_new_tokens=4096).failed == 0
    assert oracle_demonstrations(code, task, env_kwargs=env_kwargs, max_new_tokens=8) == ([], 1, 1)


def test_demonstration_token_ids_share_their_int_objects():
    # A warm start holds every demonstration's prompt at once: equal token ids must be one
    # object, not one per occurrence (WebShop's preset: +267 MB without sharing, +128 MB with).
    first, second = _shared([int("40000"), int("40001")]), _shared([int("40001")])
    assert first == (40000, 40001) and first[1] is second[0]
