"""The learner benchmark runs end to end on the tiny model: plain and shared-prefix steps
agree on the loss, and the shared prefix computes fewer token-forwards."""

from __future__ import annotations

import dataclasses
import json

import pytest

from benchmarks import learner

# measured 0.59 GB added (the batch of two envs is recorded in the test process)
pytestmark = pytest.mark.memory(gb=1)


@pytest.mark.slow
def test_smoke_run_on_tiny_model(capsys):
    rows = learner.main(
        ["--model", "tiny-test", "--k", "2", "--max-new-tokens", "4", "--envs", "plan_path-v0,tictactoe"]
        + ["--micro-batch-tokens", "1024", "32"]
    )
    plain, shared, small_plain, small_shared, summary = rows
    assert plain["loss"] == pytest.approx(shared["loss"], abs=1e-5)
    assert shared["prefix_groups"] > 0 and plain["prefix_groups"] == 0
    assert shared["token_forwards"] < plain["token_forwards"]
    assert summary["bound"] > 1
    # a smaller token budget splits the step into more micro-batches, same loss
    assert [r["micro_batch_tokens"] for r in rows[:4]] == [1024, 1024, 32, 32]
    assert small_plain["loss"] == pytest.approx(plain["loss"], abs=1e-5)
    assert small_shared["loss"] == pytest.approx(shared["loss"], abs=1e-5)
    out = capsys.readouterr().out
    assert "bound K(P+R)/(P+K*R)" in out and "plain, 32 vs 1024 tokens: time" in out
    assert "model=tiny-test (LoRA)" in out  # the adapter training trains, not the full weights


def test_the_batch_file_round_trips_the_turns_as_plain_json(tmp_path):
    from trainers.records import TaskKey, Turn

    turn = Turn(
        task=TaskKey("plan_path-v0", "train", 3),
        episode=1,
        agent="planner_0",
        role="planner",
        policy="tiny-test:planner",
        turn=0,
        step=2,
        prompt="p",
        response="r",
        prompt_token_ids=(1, 2, 3),
        token_ids=(4,),
        logprobs=(-0.1 - 0.2, float("-inf")),
        reward=0.5,
        reward_terms={"team/success": 1.0},
        invalid=False,
        state_key=((1, 2), "board"),
        tree_node=(0, 1),
        agent_rewards={"planner_0": 0.5},
    )
    path = tmp_path / "batch.json"
    learner.write_batch(path, [turn])
    json.loads(path.read_text())  # plain JSON
    (back,) = learner.read_batch(path)
    assert back == dataclasses.replace(turn, state_key=repr(turn.state_key))
