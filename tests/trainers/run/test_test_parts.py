"""trainers.run.test_parts and trainers.runtime.evaluate.collect_in_parts: a held-out test
played in parts gives the metrics of one batch, and a stopped test plays only its missing
parts again (for the weights they were played with)."""

from __future__ import annotations

import pytest

import envs
from agents.base import SamplingParams
from agents.scripted import RandomPolicy
from agents.team import Team
from trainers.evaluation import eval_result, heldout_tasks
from trainers.rollout import RolloutRequest
from trainers.run.checkpoint import checkpoint_dir
from trainers.run.test_parts import PARTS_DIR, TestParts, weights_fingerprint
from trainers.runtime import LocalRuntime
from trainers.runtime.evaluate import collect_in_parts


def random_team(env_id):
    env = envs.make(env_id)
    return Team(env, {role: RandomPolicy(seed=i) for i, role in enumerate(env.roles)})


class StoppingRuntime(LocalRuntime):
    """A local runtime that counts its collects and stops (KeyboardInterrupt) at call ``stop_at``."""

    def __init__(self, env_id, stop_at=None):
        super().__init__(random_team(env_id), learner=None)
        self.calls, self.stop_at = 0, stop_at

    def collect(self, request):
        self.calls += 1
        if self.calls == self.stop_at:
            raise KeyboardInterrupt
        return super().collect(request)


def _request(env_id, tasks=7):
    sampling = SamplingParams(max_new_tokens=8, temperature=1.0)
    return RolloutRequest(tuple(heldout_tasks(env_id, tasks)), sampling, seed=3)


def _metrics(batch):
    return {k: v for k, v in eval_result(batch).metrics.items() if k != "time/eval"}


# plan_path: a team of two roles; tictactoe: a game, whose win/draw/loss come from reward terms
@pytest.mark.parametrize("env_id", ["plan_path", "tictactoe"])
def test_a_test_in_parts_gives_the_metrics_of_one_batch(tmp_path, env_id):
    request = _request(env_id)
    whole = StoppingRuntime(env_id).collect(request)
    parts = TestParts(tmp_path, 0, "initial")
    runtime = StoppingRuntime(env_id)
    in_parts = collect_in_parts(runtime, request, parts, part_tasks=3)
    assert runtime.calls == 3  # 3 + 3 + 1 tasks
    assert _metrics(in_parts) == _metrics(whole)
    assert [e.success for e in in_parts.episodes] == [e.success for e in whole.episodes]
    # read back from the files: the same metrics, and nothing is played again
    again = StoppingRuntime(env_id)
    read_back = collect_in_parts(again, request, TestParts(tmp_path, 0, "initial"), part_tasks=3)
    assert again.calls == 0 and _metrics(read_back) == _metrics(whole)
    assert read_back.stats["time/rollout"] == pytest.approx(in_parts.stats["time/rollout"])


def test_a_stopped_test_plays_only_its_missing_parts(tmp_path):
    request = _request("plan_path")
    whole = StoppingRuntime("plan_path").collect(request)
    with pytest.raises(KeyboardInterrupt):
        collect_in_parts(StoppingRuntime("plan_path", stop_at=3), request, TestParts(tmp_path, 5, "w"), 3)
    assert sorted(p.name for p in (tmp_path / PARTS_DIR / "step_000005").glob("part_*")) == [
        "part_0000.json",
        "part_0001.json",
    ]
    resumed = StoppingRuntime("plan_path")
    parts = TestParts(tmp_path, 5, "w")
    batch = collect_in_parts(resumed, request, parts, 3)
    assert resumed.calls == 1  # the last part only
    assert _metrics(batch) == _metrics(whole)
    parts.clear()
    assert not (tmp_path / PARTS_DIR).exists()


def test_parts_of_other_weights_or_tasks_are_played_again(tmp_path):
    request = _request("plan_path", tasks=4)
    collect_in_parts(StoppingRuntime("plan_path"), request, TestParts(tmp_path, 5, "old weights"), 2)
    redone = StoppingRuntime("plan_path")
    collect_in_parts(redone, request, TestParts(tmp_path, 5, "new weights"), 2)
    assert redone.calls == 2
    assert (tmp_path / PARTS_DIR / "step_000005" / "weights.txt").read_text() == "new weights"
    other_tasks = _request("plan_path", tasks=3)  # part 1 now holds other tasks
    runtime = StoppingRuntime("plan_path")
    collect_in_parts(runtime, other_tasks, TestParts(tmp_path, 5, "new weights"), 2)
    assert runtime.calls == 1


def test_without_a_checkpoint_nothing_is_kept(tmp_path):
    assert weights_fingerprint(tmp_path, 0) == "initial"
    assert weights_fingerprint(tmp_path, 4) == "missing"
    runtime = StoppingRuntime("plan_path")
    collect_in_parts(runtime, _request("plan_path", 2), TestParts(tmp_path, 4, "missing"), 1)
    assert runtime.calls == 2 and not (tmp_path / PARTS_DIR / "step_000004").exists()


def test_the_fingerprint_follows_the_checkpoint_manifest(tmp_path):
    manifest = checkpoint_dir(tmp_path, 4) / "manifest.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text('{"files": {"weights.safetensors": "aa"}}')
    first = weights_fingerprint(tmp_path, 4)
    manifest.write_text('{"files": {"weights.safetensors": "bb"}}')
    assert first != weights_fingerprint(tmp_path, 4) != "missing"


def test_a_tree_batch_is_refused(tmp_path):
    request = RolloutRequest(
        tuple(heldout_tasks("plan_path", 1)), SamplingParams(max_new_tokens=8), mode="tree", per_task=2
    )
    batch = StoppingRuntime("plan_path").collect(request)
    with pytest.raises(ValueError, match="plain rollout"):
        TestParts(tmp_path, 0, "initial").save(0, request.tasks, batch)
