"""Tree and plain rollout invariants (docs/algorithms.md section 2), with scripted, random,
adversarial and tiny-model policies on the planning envs."""

from __future__ import annotations

import dataclasses
from collections import defaultdict

import numpy as np
import pytest

import envs
from agents.base import Generation, Prompt, SamplingParams
from agents.hf import HFPolicy
from agents.scripted import OraclePolicy, RandomPolicy
from agents.team import Team
from trainers.env_setup import EnvSetup, make_task_env
from trainers.errors import ConfigError
from trainers.records import TaskKey
from trainers.rollout import RolloutRequest, plain_rollout, play, tree_rollout

pytestmark = pytest.mark.memory(gb=1)  # measured 0.94 GB added (over the 0.5 GB default)

ENV_IDS = ("plan_path-v0", "sokoban-v0", "sudoku-v0")
K = 4


def tasks(env_id, n=3, split="train"):
    return [TaskKey(env_id, split, seed) for seed in envs.split_seeds(split, n)]


def random_team(env_id, **env_kwargs):
    env = envs.make(env_id, **env_kwargs)
    return Team(env, {role: RandomPolicy(seed=i) for i, role in enumerate(env.roles)})


def node_groups(batch):
    groups = defaultdict(list)
    for turn in batch.samples:
        groups[(turn.task, turn.episode, turn.tree_node, turn.turn, turn.agent)].append(turn)
    return groups


class CountingPolicy:
    """Wraps a policy and records every generate call (prompt count, num_samples)."""

    def __init__(self, inner):
        self.inner, self.name, self.calls = inner, inner.name, []

    def generate(self, prompts, *, num_samples=1, sampling=None, adapter=None):
        self.calls.append((len(prompts), num_samples))
        return self.inner.generate(prompts, num_samples=num_samples, sampling=sampling, adapter=adapter)


class AdversarialPolicy:
    """Answers junk the env must turn into invalid actions."""

    name = "adversarial"
    TEXTS = ["", "x" * 50_000, "<answer>🙂 東京</answer>", "<answer>__import__('os')</answer>", "<answer>U"]

    def generate(self, prompts, *, num_samples=1, sampling=None, adapter=None):
        return [
            [Generation(self.TEXTS[k % len(self.TEXTS)], (), (), (), "stop") for k in range(num_samples)]
            for _ in prompts
        ]


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_every_candidate_acted_on_the_env_it_observed(env_id):
    """Replay the selected path up to each node on a fresh env: the observation there is the
    candidate's prompt, and stepping the candidate's response gives its recorded reward."""
    batch = tree_rollout(
        tasks(env_id, 2), random_team(env_id), num_candidates=K, sampling=SamplingParams(), seed=3
    )
    paths = {(e.task, e.index): e.turns for e in batch.episodes}
    for turn in batch.samples:
        env = make_task_env(turn.task)
        for executed in paths[(turn.task, turn.episode)][: len(turn.tree_node)]:
            env.step(executed.response)
        assert env.agent_selection == turn.agent
        assert env.observe(turn.agent)["prompt"] == turn.prompt
        assert env.state_key() == turn.state_key
        env.step(turn.response)
        assert env.rewards[turn.agent] == turn.reward
        assert env.infos[turn.agent]["reward_terms"] == turn.reward_terms


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_every_node_group_has_k_samples_of_one_prompt_in_one_task(env_id):
    batch = tree_rollout(
        tasks(env_id), random_team(env_id), num_candidates=K, sampling=SamplingParams(), seed=0
    )
    groups = node_groups(batch)
    assert groups
    for members in groups.values():
        assert len(members) == K
        assert len({m.prompt for m in members}) == 1
        assert len({m.task for m in members}) == 1
        assert sorted(m.candidate for m in members) == list(range(K))
        assert sum(m.selected for m in members) == 1
    # One selected turn per node, and they form the episodes' paths.
    assert sum(len(e.turns) for e in batch.episodes) == len(groups)


def test_later_agents_get_a_real_reward_spread():
    """The executor branches from the selected planner state with K different answers, so
    its groups are not all-equal by construction (the reference code's bug)."""
    batch = tree_rollout(
        tasks("plan_path-v0", 4),
        random_team("plan_path-v0"),
        num_candidates=K,
        sampling=SamplingParams(),
        seed=1,
    )
    executor_groups = [g for (_, _, _, _, agent), g in node_groups(batch).items() if agent == "executor_0"]
    spread = [g for g in executor_groups if len({m.reward for m in g}) > 1]
    assert executor_groups and len(spread) >= len(executor_groups) // 3


def test_greedy_selection_takes_a_best_candidate_and_is_seeded():
    team = random_team("sokoban-v0")
    first = tree_rollout(tasks("sokoban-v0"), team, num_candidates=K, sampling=SamplingParams(), seed=7)
    for members in node_groups(first).values():
        chosen = next(m for m in members if m.selected)
        assert chosen.reward == max(m.reward for m in members)
    again = tree_rollout(
        tasks("sokoban-v0"), random_team("sokoban-v0"), num_candidates=K, sampling=SamplingParams(), seed=7
    )
    assert [(t.response, t.selected) for t in again.samples] == [
        (t.response, t.selected) for t in first.samples
    ]


def test_softmax_selection_with_tiny_temperature_is_greedy_and_with_huge_is_spread():
    team = random_team("plan_path-v0")
    cold = tree_rollout(
        tasks("plan_path-v0", 4), team, num_candidates=K, sampling=SamplingParams(), selection="softmax",
        selection_temperature=1e-6, seed=2,
    )  # fmt: skip
    for members in node_groups(cold).values():
        assert next(m for m in members if m.selected).reward == max(m.reward for m in members)
    hot = tree_rollout(
        tasks("plan_path-v0", 6), team, num_candidates=K, sampling=SamplingParams(), selection="softmax",
        selection_temperature=1e6, seed=2,
    )  # fmt: skip
    not_best = [
        g
        for g in node_groups(hot).values()
        if next(m for m in g if m.selected).reward < max(m.reward for m in g)
    ]
    assert not_best  # near-uniform selection sometimes takes a worse candidate


def test_one_generate_call_per_policy_and_turn_batched_across_tasks():
    env = envs.make("plan_path")
    planner, executor = CountingPolicy(RandomPolicy(seed=0)), CountingPolicy(RandomPolicy(seed=1))
    team = Team(env, {"planner": planner, "executor": executor})
    n_tasks = 5
    batch = tree_rollout(
        tasks("plan_path-v0", n_tasks),
        team,
        num_candidates=K,
        sampling=SamplingParams(),
        env_kwargs={"max_cycles": 3},
    )
    assert planner.calls[0] == (n_tasks, K) and executor.calls[0] == (n_tasks, K)
    assert all(num_samples == K for _, num_samples in planner.calls + executor.calls)
    assert sum(p for p, _ in planner.calls + executor.calls) * K == len(batch.samples)
    assert batch.stats["generate_calls"] == len(planner.calls) + len(executor.calls)


def test_adversarial_output_becomes_invalid_actions_not_exceptions():
    env = envs.make("sudoku")
    team = Team.shared(env, AdversarialPolicy())
    batch = tree_rollout(
        tasks("sudoku-v0", 2), team, num_candidates=5, sampling=SamplingParams(), env_kwargs={"max_cycles": 2}
    )
    assert batch.samples and all(t.invalid for t in batch.samples)
    assert all(t.reward_terms["local/invalid"] == -0.1 for t in batch.samples)
    assert all(e.truncated and not e.success for e in batch.episodes)


def test_oracle_tree_rollout_solves_and_records_selected_paths():
    env = envs.make("sokoban", difficulty="medium")
    batch = tree_rollout(
        tasks("sokoban-v0", 3), Team.shared(env, OraclePolicy()), num_candidates=2, sampling=SamplingParams(),
        env_kwargs={"difficulty": "medium"},
    )  # fmt: skip
    assert all(e.success and not e.truncated for e in batch.episodes)
    for episode in batch.episodes:
        assert [t.step for t in episode.turns] == list(range(len(episode.turns)))
        assert episode.turns[-1].done and not any(t.done for t in episode.turns[:-1])
        assert episode.returns["executor_0"] == pytest.approx(
            sum(t.reward for t in episode.turns if t.agent == "executor_0")
        )


def test_plain_rollout_plays_independent_episodes():
    env = envs.make("plan_path")
    team = Team(env, {"planner": RandomPolicy(seed=0), "executor": RandomPolicy(seed=1)})
    batch = plain_rollout(
        tasks("plan_path-v0", 2), team, episodes_per_task=3, sampling=SamplingParams(), seed=4
    )
    assert len(batch.episodes) == 6
    assert len(batch.samples) == sum(len(e.turns) for e in batch.episodes)
    assert all(t.selected and t.candidate == 0 and t.tree_node == () for t in batch.samples)
    for episode in batch.episodes:
        assert [t.step for t in episode.turns] == list(range(len(episode.turns)))
        assert [t.turn for t in episode.turns] == [s // 2 for s in range(len(episode.turns))]
    paths = {tuple(t.response for t in e.turns) for e in batch.episodes if e.task.seed == 0}
    assert len(paths) > 1  # the episodes of one task are independent samples
    again = plain_rollout(
        tasks("plan_path-v0", 2), team, episodes_per_task=3, sampling=SamplingParams(), seed=4
    )
    assert [t.response for t in again.samples] == [t.response for t in batch.samples]  # seeded


def test_model_policy_records_tokens_and_logprobs():
    env = envs.make("plan_path")
    policy = HFPolicy("tiny-test", adapters=env.roles)
    team = Team.per_role(env, policy)
    batch = tree_rollout(
        tasks("plan_path-v0", 2), team, num_candidates=2, sampling=SamplingParams(max_new_tokens=8),
        env_kwargs={"max_cycles": 2},
    )  # fmt: skip
    assert len(batch.samples) == 2 * 2 * 2 * 2  # tasks x cycles x agents x K
    for turn in batch.samples:
        assert turn.token_ids and len(turn.logprobs) == len(turn.token_ids)
        assert turn.policy == f"tiny-test:{turn.role}"
        system = team.bindings[turn.role].system_prompt
        assert turn.prompt_token_ids == tuple(policy.prompt_token_ids(Prompt(turn.prompt, system=system)))
    # The time split and token count the training log reports.
    assert batch.stats["generated_tokens"] == sum(len(t.token_ids) for t in batch.samples)
    assert 0 < batch.stats["time/generate"] <= batch.stats["time/rollout"]
    assert batch.stats["time/env"] == pytest.approx(
        batch.stats["time/rollout"] - batch.stats["time/generate"]
    )


@pytest.mark.parametrize("mode", ["tree", "plain"])
@pytest.mark.parametrize("policy", ["random", "tiny-test"])
def test_a_task_plays_the_same_whichever_tasks_share_its_rollout(mode, policy):
    """Every path draws from its own stream (path_rng) and every prompt carries its own seed,
    so splitting a rollout's tasks over workers changes nothing (trainers.runtime)."""
    if policy == "random":
        team = random_team("plan_path-v0", max_cycles=2)
    else:
        env = envs.make("plan_path")
        team = Team.per_role(env, HFPolicy("tiny-test", adapters=env.roles))
    request = RolloutRequest(
        tasks("plan_path-v0", 3), SamplingParams(max_new_tokens=6), mode=mode, per_task=3,
        env_kwargs={"max_cycles": 2}, seed=11,
    )  # fmt: skip
    together = play(request, team)
    for task in request.tasks:
        alone = play(dataclasses.replace(request, tasks=(task,)), team)
        assert_same_turns(alone.samples, [t for t in together.samples if t.task == task])
        episodes = [e for e in together.episodes if e.task == task]
        assert [dataclasses.replace(e, turns=()) for e in alone.episodes] == [
            dataclasses.replace(e, turns=()) for e in episodes
        ]
        assert_same_turns(
            [t for e in alone.episodes for t in e.turns], [t for e in episodes for t in e.turns]
        )
    assert len({t.response for t in together.samples}) > 1  # they did sample


def assert_same_turns(a, b):
    """Equal turns; a model's logprobs up to float noise: a row's logits move by ~1e-7 when
    other prompts of other lengths share its batch (the matmuls change shape), which no token
    choice here feels but an exact float comparison would."""
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert dataclasses.replace(x, logprobs=()) == dataclasses.replace(y, logprobs=())
        assert np.allclose(x.logprobs, y.logprobs, rtol=0, atol=1e-5)


def test_argument_errors():
    team = random_team("plan_path-v0")
    with pytest.raises(ValueError, match="selection='best'"):
        tree_rollout(
            tasks("plan_path-v0", 1), team, num_candidates=2, sampling=SamplingParams(), selection="best"
        )
    with pytest.raises(ValueError, match="num_candidates"):
        tree_rollout(tasks("plan_path-v0", 1), team, num_candidates=0, sampling=SamplingParams())
    with pytest.raises(ValueError, match="episodes_per_task"):
        plain_rollout(tasks("plan_path-v0", 1), team, episodes_per_task=0, sampling=SamplingParams())


def test_response_prefix_is_prepended_to_what_the_env_parses():
    env = envs.make("plan_path")
    policy = HFPolicy("tiny-test")
    team = Team.shared(env, policy, response_prefix="<answer>")
    batch = tree_rollout(
        tasks("plan_path-v0", 1), team, num_candidates=2, sampling=SamplingParams(max_new_tokens=4),
        env_kwargs={"max_cycles": 1},
    )  # fmt: skip
    prefix_ids = policy.tokenizer("<answer>", add_special_tokens=False)["input_ids"]
    for turn in batch.samples:
        assert turn.response.startswith("<answer>")
        assert list(turn.prompt_token_ids[-len(prefix_ids) :]) == prefix_ids  # prompt side, not trained
        assert (
            policy.tokenizer.decode(turn.token_ids, skip_special_tokens=True)
            == turn.response[len("<answer>") :]
        )


@pytest.mark.slow
def test_training_evaluation_and_benchmarks_build_the_same_env(monkeypatch, tmp_path):
    """One config, one env: the training rollouts, the run's evaluations and the benchmark's
    column for that env call envs.make with the same arguments (the split aside)."""
    from benchmarks.eval_config import EvalConfig
    from benchmarks.evaluate import run_evaluation
    from trainers.config import TrainConfig, resolve_config
    from trainers.rollout import rollout_for_step, training_sampling
    from trainers.runtime import LocalRuntime
    from trainers.runtime.evaluate import evaluate

    made: dict[str, list[tuple]] = defaultdict(list)
    source = ["?"]
    real_make = envs.make

    def recording_make(env_id, **kwargs):
        split = kwargs.pop("split", None)
        made[source[0]].append((envs.spec(env_id).id, tuple(sorted(kwargs.items()))))
        return real_make(env_id, split=split, **kwargs) if split else real_make(env_id, **kwargs)

    monkeypatch.setattr(envs, "make", recording_make)
    config = resolve_config(
        TrainConfig(env="plan_path", team="single", tasks_per_step=2, eval_tasks=2, transcripts=0)
    )
    team = random_team(config.env, **config.env_setup.make_kwargs)

    class Logger:
        def log_eval(self, step, metrics, episodes=(), transcripts=3):
            pass

    source[0] = "training rollout"
    rollout_for_step(config, team, 1, training_sampling(config))
    source[0] = "evaluation"
    evaluate(config, LocalRuntime(team, learner=None), Logger(), 0)
    source[0] = "benchmark"
    run_evaluation(
        EvalConfig(
            env=("plan_path",),
            team="single",
            baselines=("random",),
            episodes=2,
            progress=False,
            output_dir=str(tmp_path),
            transcripts=0,
        )
    )
    expected = {("plan_path-v2", tuple(sorted(config.env_setup.make_kwargs.items())))}
    assert dict(config.env_setup.make_kwargs) == {"team": "single", "difficulty": "easy", "max_cycles": 2}
    for where in ("training rollout", "evaluation"):
        assert set(made[where]) == expected, where
    assert expected <= set(made["benchmark"])  # the benchmark also probes the env's metadata
    played = [call for call in made["benchmark"] if ("team", "single") in call[1]]
    assert played and set(played) == expected


def test_env_arguments_the_env_refuses_are_config_errors_naming_them():
    def error(kwargs, **options):
        with pytest.raises(ConfigError) as info:
            EnvSetup("sokoban", "mas", kwargs).make_checked(kwargs, **options)
        return str(info.value)

    unknown = error({"nope": 1, "width": 5})
    assert unknown.startswith("--env-kwargs: sokoban-v2 has no parameter 'nope'; its parameters are: alpha, ")
    assert "width" in unknown and "max_cycles" in unknown and "split" not in unknown and "team" not in unknown
    assert "difficulty" not in error({"nope": 1}, hidden=("split", "team", "difficulty"))
    assert "takes width as an integer" in error({"width": "big"})
    assert "difficulty='bogus'; choose one of" in error({"difficulty": "bogus"})
    # Without user arguments an env's error is its own: the preset's arguments are not the user's.
    with pytest.raises(ValueError) as info:
        EnvSetup("sokoban", "mas", {"difficulty": "bogus"}).make_checked({})
    assert not isinstance(info.value, ConfigError)


class ProgramMenuPolicy:
    """A tool team's stand-in: the tool answers one of a few programs (the reference search, a
    guess, a crash, none), the plan agent a legal move or the oracle's answer, drawn per sample
    from the prompt's seed, so K candidates differ."""

    name = "program-menu"
    PROGRAMS = ('print("U")', 'print("R R")', "raise ValueError", None, "reference")

    def generate(self, prompts, *, num_samples=1, sampling=None, adapter=None):
        out = []
        for prompt in prompts:
            rng = np.random.default_rng(prompt.seed)
            env, agent = prompt.env, prompt.agent
            group = []
            for _ in range(num_samples):
                text = env.oracle_response(agent)  # the reference program, or the plan oracle
                program = self.PROGRAMS[int(rng.integers(len(self.PROGRAMS)))]
                if agent == "tool_0" and program != "reference":
                    text = f"```python\n{program}\n```" if program else "BFS!"
                elif agent == "plan_0" and rng.random() < 0.5:
                    text = f"<answer>{rng.choice(env.infos[agent]['legal_moves'])}</answer>"
                group.append(Generation(text, (), (), (), "stop"))
            out.append(group)
        return out


def test_tool_team_tree_rollouts_keep_the_invariants_and_run_each_program_once():
    env = envs.make("plan_path", team="tool")
    team = Team.shared(env, ProgramMenuPolicy())
    batch = tree_rollout(
        tasks("plan_path-v0", 3), team, num_candidates=K, sampling=SamplingParams(), seed=2,
        env_kwargs={"team": "tool"},
    )  # fmt: skip
    groups = node_groups(batch)
    for members in groups.values():
        assert len(members) == K and len({m.prompt for m in members}) == 1
        assert sum(m.selected for m in members) == 1
    assert sum(len(e.turns) for e in batch.episodes) == len(groups)
    tool_samples = [t for t in batch.samples if t.agent == "tool_0"]
    assert {t.role for t in batch.samples} == {"tool", "plan"}
    assert len({t.reward for t in tool_samples}) > 1  # the tool's candidates are told apart
    assert 0 < batch.stats["sandbox_runs"] <= len(tool_samples)
    # every candidate acted on the env it observed: replay the selected path up to it
    paths = {(e.task, e.index): e.turns for e in batch.episodes}
    for turn in batch.samples:
        replay = make_task_env(turn.task, {"team": "tool"})
        for executed in paths[(turn.task, turn.episode)][: len(turn.tree_node)]:
            replay.step(executed.response)
        assert replay.observe(turn.agent)["prompt"] == turn.prompt
        replay.step(turn.response)
        assert replay.infos[turn.agent]["reward_terms"] == turn.reward_terms


class RecordingPolicy:
    """Answers a legal move and records each generate call's (roles, sampling)."""

    name = "recording"

    def __init__(self):
        self.inner, self.calls = RandomPolicy(seed=0), []

    def generate(self, prompts, *, num_samples=1, sampling=None, adapter=None):
        self.calls.append(({p.agent.rsplit("_", 1)[0] for p in prompts}, sampling))
        return self.inner.generate(prompts, num_samples=num_samples, sampling=sampling, adapter=adapter)


@pytest.mark.parametrize("mode", ["tree", "plain"])
def test_role_sampling_reaches_the_sampler_for_its_role_only(mode):
    env = envs.make("plan_path")
    policy = RecordingPolicy()
    base = SamplingParams(temperature=1.0, max_new_tokens=8)
    executor = dataclasses.replace(base, temperature=1.7, max_new_tokens=3)
    request = RolloutRequest(
        tasks=tuple(tasks("plan_path-v0", 3)), sampling=base, mode=mode, per_task=2,
        env_kwargs={"max_cycles": 2}, role_sampling={"executor": executor},
    )  # fmt: skip
    play(request, Team.shared(env, policy))
    assert policy.calls
    for roles, sampling in policy.calls:
        assert len(roles) == 1  # a generate call never mixes roles that sample differently
        assert sampling == (executor if roles == {"executor"} else base)


def test_per_role_reply_length_bounds_a_real_model_s_samples():
    env = envs.make("plan_path")
    base = SamplingParams(temperature=1.0, max_new_tokens=8)
    batch = tree_rollout(
        tasks("plan_path-v0", 2), Team.shared(env, HFPolicy("tiny-test")), num_candidates=3, sampling=base,
        env_kwargs={"max_cycles": 1}, role_sampling={"executor": dataclasses.replace(base, max_new_tokens=2)},
    )  # fmt: skip
    longest = {role: max(len(t.token_ids) for t in batch.samples if t.role == role) for role in env.roles}
    assert longest["executor"] <= 2 < longest["planner"] <= 8


class TextOnlyCounting(CountingPolicy):
    text_only = True  # what model policies declare (agents.base.reads_text_only)


def test_a_greedy_model_is_asked_each_distinct_prompt_once_per_plain_rollout():
    """Greedy replies depend on the prompt alone: a prompt met again (another deal, a later
    turn) reuses the reply, and the episodes are those of asking every prompt."""
    model, greedy = HFPolicy("tiny-test"), SamplingParams(temperature=0.0, max_new_tokens=4)

    def run(policy, sampling):
        team = Team.shared(envs.make("kuhn_poker"), policy)
        return plain_rollout(tasks("kuhn_poker-v0", 8), team, episodes_per_task=1, sampling=sampling, seed=3)

    every, once = CountingPolicy(model), TextOnlyCounting(model)
    asked_all, reused = run(every, greedy), run(once, greedy)
    assert sum(n for n, _ in every.calls) == len(asked_all.samples)
    distinct = {turn.prompt for turn in reused.samples}
    assert sum(n for n, _ in once.calls) == len(distinct) < len(reused.samples)  # Kuhn's deals repeat
    assert_same_turns(asked_all.samples, reused.samples)
    assert reused.stats["generated_tokens"] < asked_all.stats["generated_tokens"]  # what was generated
    once.calls.clear()
    sampled = run(once, SamplingParams(temperature=1.0, max_new_tokens=4))
    assert sum(n for n, _ in once.calls) == len(sampled.samples)  # sampling draws for every prompt
