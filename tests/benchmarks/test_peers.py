"""benchmarks/peers.py: the task every library shares is scored as teamgym credits it, the meter
counts what generate produced, teamgym's side runs and prints its row (a peer without its
virtualenv says why), and, where the peers' virtualenv is installed (benchmarks/peer_runs/
install.sh; CI does not install it), TRL's and CoMLRL's sides run on the tiny model."""

from __future__ import annotations

import re

import pytest

from agents.base import SamplingParams
from agents.scripted import RandomPolicy
from agents.team import Team
from benchmarks import peers
from benchmarks.peer_runs import task
from envs.core import role_of
from trainers.records import TaskKey
from trainers.rollout import RolloutRequest, play

# measured 992 MB added where the peers' virtualenv is installed (their sides and evaluations)
pytestmark = pytest.mark.memory(gb=1)

QUICK = ["--steps", "1", "--tasks-per-step", "2", "--num-generations", "2", "--max-new-tokens", "4"]
QUICK += ["--eval-tasks", "2", "--model", "tiny-test", "--threads", "1"]


def row(out: str, library: str) -> list[str]:
    match = re.search(rf"^ *{library} (.*)$", out, re.MULTILINE)
    assert match, out
    return match.group(1).split()


@pytest.mark.parametrize("team", ["single", "mas"])
def test_the_peers_score_replies_as_teamgym_credits_them(team):
    """Random replies (legal moves, walls, junk) played by teamgym's rollout, then by
    task.play: the same returns per role, so every library is rewarded alike."""
    import envs

    env_kwargs = {"difficulty": "easy", "max_cycles": 1}
    spec = {"env": "plan_path-v1", "env_kwargs": {**env_kwargs, "team": team}, "prefix": ""}
    env = envs.make("plan_path-v1", team=team, **env_kwargs)
    players = Team(env, {role: RandomPolicy(seed=i) for i, role in enumerate(env.roles)})
    tasks = tuple(TaskKey("plan_path-v1", "train", seed) for seed in range(12))
    batch = play(RolloutRequest(tasks, SamplingParams(), env_kwargs={**env_kwargs, "team": team}), players)
    credited = set()
    for episode in batch.episodes:
        replies = [turn.response for turn in episode.turns]
        expected = {role_of(agent): value for agent, value in episode.returns.items()}
        assert task.play(spec, episode.task.seed, replies) == pytest.approx(expected), replies
        credited |= {round(v, 6) for v in expected.values()}
    assert len(credited) > 1  # the replies earned different returns: the comparison can fail


def test_a_role_sees_the_hand_over_as_teamgym_shows_it():
    spec = {
        "env": "plan_path-v1",
        "env_kwargs": {"difficulty": "easy", "max_cycles": 1},
        "prefix": "<answer>",
    }
    before = task.replay(spec, 3, [], "executor_0")
    after = task.replay(spec, 3, ["R R</answer>"])
    assert "(none yet)" in before and "<answer>R R</answer>" in after and "executor" in after
    assert task.replay(spec, 3, []) != before  # the planner's own prompt


def test_the_generate_meter_counts_new_tokens_up_to_the_first_end():
    import torch

    from agents.models import load_model
    from benchmarks.peer_runs.meter import GenerateMeter

    model, tokenizer = load_model("tiny-test")
    prompt = torch.tensor([[1, 2, 3], [4, 5, 6]])
    reference = model.generate(input_ids=prompt, max_new_tokens=6, do_sample=False, eos_token_id=None)
    new = reference[:, 3:].tolist()
    end = new[0][2]  # call the third new token of row 0 an end token: each row counts up to its first
    expected = sum(r.index(end) + 1 if end in r else len(r) for r in new)
    assert expected < sum(len(r) for r in new)  # the cut is tested
    meter = GenerateMeter({end})
    try:
        model.generate(input_ids=prompt, max_new_tokens=6, do_sample=False, eos_token_id=None)
        taken = meter.take()
    finally:
        meter.close()
    assert taken["generated_tokens"] == expected and taken["samples"] == 2 and taken["generate_s"] > 0
    assert meter.take()["generated_tokens"] == 0  # take() starts over
    model.generate(input_ids=prompt, max_new_tokens=2, do_sample=False, eos_token_id=None)
    assert meter.take()["samples"] == 0  # closed: generate is itself again


@pytest.mark.slow
def test_teamgym_runs_its_side_and_a_peer_without_its_virtualenv_says_why(tmp_path, capsys):
    results = peers.main(
        [*QUICK, "--task", "single", "--libraries", "teamgym", "trl"]
        + ["--peers-python", str(tmp_path / "none" / "python"), "--out", str(tmp_path / "out")]
    )
    out = capsys.readouterr().out
    cells = row(out, "teamgym")
    assert len(cells) == 9 and cells[1] == "4"  # samples / step: 2 tasks x K = 2
    assert all(re.fullmatch(r"[\d.]+", c) for c in cells[1:]), cells
    assert row(out, "trl")[0] == "-"
    assert "trl: not run: no peers virtualenv at" in out and "bash benchmarks/peer_runs/install.sh" in out
    ours = results["single"]["rows"]["teamgym"]
    assert len(ours["steps"]) == 1 and 0 <= ours["success"] <= 1 and ours["peak_rss_gb"] > 0
    assert results["single"]["spec"]["steps"] == [[t.seed for t in _first_step_tasks()]]
    assert (tmp_path / "out" / "results.json").exists()


def _first_step_tasks():
    from trainers.config import TrainConfig, resolve_config
    from trainers.rollout import training_tasks

    config = TrainConfig(env="plan_path-v1", model="tiny-test", team="single", tasks_per_step=2, steps=1)
    return training_tasks(resolve_config(config), 1)


@pytest.mark.slow
@pytest.mark.skipif(
    not peers.DEFAULT_PEERS_PYTHON.exists(),
    reason=f"the peers' virtualenv is not installed ({peers.INSTALL_HINT}); CI does not install it",
)
def test_trl_and_comlrl_train_on_the_same_task_and_report_their_rows(tmp_path, capsys):
    results = peers.main([*QUICK, "--out", str(tmp_path)])
    out = capsys.readouterr().out
    for task_name, library, samples in (("single", "trl", 4), ("team", "teamgym", 8), ("team", "comlrl", 24)):
        result = results[task_name]["rows"][library]
        assert "error" not in result, result
        assert sum(s["samples"] for s in result["steps"]) == samples  # comlrl: 2 tasks x 2 agents x (K + K^2)
    assert (
        results["team"]["rows"]["comlrl"]["turn_two_rewards"] == 2 * 2 * 2
    )  # tasks x K x K: every hand-over
    assert re.search(r"teamgym / trl: time per step [\d.]+x", out)
    assert re.search(r"teamgym / comlrl: time per step [\d.]+x", out)


@pytest.mark.slow
def test_init_starts_every_library_from_the_warm_start_merged_into_the_weights(tmp_path):
    import torch

    from agents.models import load_model
    from trainers.sft import train_sft
    from trainers.sft_config import SFTConfig

    warm = train_sft(
        SFTConfig(
            env="plan_path", model="tiny-test", train_tasks=8, val_tasks=2, eval_tasks=2, steps=2,
            batch_size=4, lr=1e-2, eval_every=0, output_dir=str(tmp_path), run_name="warm",
            progress=False, plots=False, tensorboard=False,
        )
    )  # fmt: skip
    out = ["--out", str(tmp_path / "out"), "--init", str(warm.run_dir)]
    results = peers.main([*QUICK, "--task", "single", "--libraries", "teamgym", *out])
    spec = results["single"]["spec"]
    assert spec["model"].endswith("model-init") and spec["lr"] == 1e-4  # teamgym's default after a warm start
    assert "error" not in results["single"]["rows"]["teamgym"]
    merged, _ = load_model(spec["model"])
    base, _ = load_model("tiny-test")
    pairs = zip(merged.named_parameters(), base.named_parameters(), strict=True)
    changed = [name for (name, a), (_, b) in pairs if not torch.equal(a, b)]
    assert changed and all("proj" in n for n in changed)  # the adapted linear layers, nothing else


def test_the_peers_prompt_is_teamgyms_token_for_token():
    """task.render (the peers' virtualenv cannot import agents.hf's torch stack on purpose: it
    renders with the tokenizer alone) writes what HFPolicy feeds the model."""
    from agents.base import Prompt
    from agents.hf import HFPolicy

    spec = {
        "env": "plan_path-v1",
        "env_kwargs": {"difficulty": "easy", "max_cycles": 1},
        "prefix": "<answer>",
    }
    policy = HFPolicy("smollm2-135m-instruct")
    observation = task.replay(spec, 3, [])
    text = task.render(policy.tokenizer, observation, spec["prefix"])
    ids = policy.tokenizer(text, add_special_tokens=False)["input_ids"]
    assert ids == policy.prompt_token_ids(Prompt(observation, prefix="<answer>"))
    assert text.endswith("assistant\n<answer>") and observation in text
