"""Stored training episodes: what a run writes, reads back and drops on resume, and how the
warm start replays them into demonstrations."""

from __future__ import annotations

import json

import pytest

import envs
from tests.trainers.conftest import EVEN_PLAN_ID
from trainers.at_grpo import main as at_grpo_main
from trainers.config import TrainConfig
from trainers.demonstrations import replayed_demonstrations
from trainers.records import Episode, RecordedEpisode, RecordedTurn, TaskKey, Turn
from trainers.run.episodes import drop_episodes_after, read_episodes, write_episodes
from trainers.teams import build_team

TEST_ENV = "tests.trainers.conftest:test/even_plan"  # imports the module that registers it


def _turn(task: TaskKey, agent: str, response: str, step: int) -> Turn:
    return Turn(
        task=task, episode=0, agent=agent, role=agent.rsplit("_", 1)[0], policy="p", turn=0, step=step,
        prompt="...", response=response, prompt_token_ids=(1,), token_ids=(2,), logprobs=(0.0,),
        reward=0.0, reward_terms={}, invalid=False, state_key=(), finish_reason="stop",
    )  # fmt: skip


def _episode(seed: int, replies: tuple[str, str], success: bool) -> Episode:
    task = TaskKey(envs.spec(EVEN_PLAN_ID).id, "train", seed)
    agents = ("planner_0", "executor_0")
    turns = tuple(_turn(task, a, r, i) for i, (a, r) in enumerate(zip(agents, replies, strict=True)))
    returns = {"planner_0": 1.0}
    return Episode(task=task, index=0, turns=turns, success=success, returns=returns, truncated=False)


def test_episodes_round_trip_any_text_and_resume_drops_later_steps(tmp_path):
    hostile = "\x00é漢字 ```\n</answer>" + "x" * 10_000  # model output is adversarial text
    write_episodes(tmp_path, 1, [_episode(3, ("b", hostile), False)])
    write_episodes(tmp_path, 2, [_episode(4, ("b", "d"), True)])
    (first, second) = read_episodes([tmp_path])
    assert first.task.seed == 3 and not first.success and first.turns[1].response == hostile
    assert second.success and second.replies() == (("planner_0", "b"), ("executor_0", "d"))
    drop_episodes_after(tmp_path, 1)
    assert [e.task.seed for e in read_episodes([tmp_path / "episodes"])] == [3]


def test_reading_a_run_without_episodes_or_with_a_bad_line_names_the_problem(tmp_path):
    with pytest.raises(FileNotFoundError, match="--no-save-episodes"):
        read_episodes([tmp_path])
    (tmp_path / "episodes").mkdir()
    (tmp_path / "episodes" / "train_step_000001.jsonl").write_text('{"task": 1}\n')
    with pytest.raises(ValueError, match="train_step_000001.jsonl:1 is not a stored episode"):
        read_episodes([tmp_path])


def _tiny_team(env_id: str, env_kwargs: dict | None = None, response_prefix: str = ""):
    config = TrainConfig(
        model="tiny-test", device="cpu", policy="shared", lora=True, lora_rank=4, lora_alpha=8,
        response_prefix=response_prefix,
    )  # fmt: skip
    return build_team(config, envs.make(env_id, **(env_kwargs or {"team": "mas"})))


def test_replay_keeps_the_episodes_that_replay_and_succeed():
    team = _tiny_team(EVEN_PLAN_ID)
    env_id = envs.spec(EVEN_PLAN_ID).id

    def recorded(seed, replies, agents=("planner_0", "executor_0")):
        pairs = zip(agents, replies, strict=False)
        turns = tuple(RecordedTurn(a, a[:-2], r, "stop", False) for a, r in pairs)
        return RecordedEpisode(TaskKey(env_id, "train", seed), True, turns, "test")

    episodes = [
        recorded(5, ("b", "d")),  # both even: solved again on replay
        recorded(6, ("b", "a")),  # 'a' is odd: the env no longer calls it a success
        recorded(7, ("b", "d"), agents=("executor_0", "planner_0")),  # out of turn order
        recorded(8, ("b",)),  # shorter than the episode
    ]
    replayed = replayed_demonstrations(team, episodes, stop=("</answer>",), env_kwargs={"team": "mas"})
    turns, failed = replayed.turns, replayed.failed
    assert failed == 3
    kept = [(t.task.seed, t.agent, t.response) for t in turns]
    assert kept == [(5, "planner_0", "b"), (5, "executor_0", "d")]
    tokenizer = team.bindings["planner"].policy.tokenizer
    # The reply is demonstrated through the stop string, on the prompt this team renders now.
    assert tokenizer.decode(turns[0].token_ids) == "b</answer>"
    env = envs.make(EVEN_PLAN_ID, team="mas")
    env.reset(seed=5)
    assert turns[0].prompt == env.observe("planner_0")["prompt"]


def test_a_training_run_saves_every_episode_it_played(tmp_path):
    args = [
        "--env", TEST_ENV, "--model", "tiny-test", "--response-prefix", "", "--max-new-tokens", "1",
        "--steps", "2", "--tasks-per-step", "3", "--eval-tasks", "2", "--eval-every", "0",
        "--output-dir", str(tmp_path), "--run-name", "rl", "--no-progress", "--no-tensorboard", "--no-plots",
    ]  # fmt: skip
    assert at_grpo_main(args) == 0
    run = tmp_path / "rl"
    names = sorted(p.name for p in (run / "episodes").iterdir())
    assert [n for n in names if n.startswith("train_")] == [f"train_step_00000{s}.jsonl" for s in (1, 2)]
    # the evaluations (before and at the end) are stored in full for report.html
    assert [n for n in names if n.startswith("eval_")] == [f"eval_step_00000{s}.jsonl" for s in (0, 2)]
    stored = read_episodes([run])
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    # Tree rollouts play one path per task; its success is what the step's metrics counted.
    assert len(stored) == 6 and all(e.task.split == "train" for e in stored)
    for step, record in enumerate(metrics, 1):
        mine = stored[(step - 1) * 3 : step * 3]
        assert record["success"] == pytest.approx(sum(e.success for e in mine) / 3)
    assert all([t.agent for t in e.turns] == ["planner_0", "executor_0"] for e in stored)
    assert at_grpo_main([*args[:-5], "--run-name", "quiet", "--no-save-episodes", *args[-3:]]) == 0
    assert not list((tmp_path / "quiet" / "episodes").glob("train_step_*"))  # evaluations only


def test_stored_oracle_episodes_of_the_real_env_replay_to_the_same_tokens(tmp_path):
    """Plan-Path's planner + executor (the executor's prompt shows the plan): the oracle's
    episodes, written and read back as text, replay into demonstrations token for token equal
    to the oracle's own (the prompts the team renders, the replies through the stop string)."""
    from agents.base import SamplingParams
    from trainers.demonstrations import OracleDemonstrator, demonstrator_team
    from trainers.rollout import plain_rollout

    env_kwargs = {"team": "mas", "difficulty": "easy", "max_cycles": 2}
    team = _tiny_team("plan_path", env_kwargs, response_prefix="<answer>")
    stop = ("</answer>",)
    tasks = [TaskKey(envs.spec("plan_path").id, "train", seed) for seed in range(8)]
    oracle = plain_rollout(
        tasks,
        demonstrator_team(team, lambda policy: OracleDemonstrator(policy, stop)),
        episodes_per_task=1,
        sampling=SamplingParams(temperature=0.0, stop=stop),
        env_kwargs=env_kwargs,
    )
    assert all(e.success for e in oracle.episodes) and min(e.length for e in oracle.episodes) >= 2
    write_episodes(tmp_path, 1, oracle.episodes)
    stored = read_episodes([tmp_path])
    turns, failed, _ = replayed_demonstrations(team, stored, stop=stop, env_kwargs=env_kwargs)
    expected = [t for e in oracle.episodes for t in e.turns]
    assert failed == 0 and len(turns) == len(expected)
    for got, want in zip(turns, expected, strict=True):
        assert (got.agent, got.prompt_token_ids) == (want.agent, want.prompt_token_ids)
        assert got.token_ids == want.token_ids
