"""The evaluations a training run makes on its runtime: the in-run one (``eval_tasks`` of
``eval_split``, logged to eval.jsonl) and the held-out test one (``test_tasks`` of the
protocol's block, logged to test.jsonl).

Like ``train_step`` beside it, this is the training command's use of the ``Runtime``: the same
evaluation plays in-process and on a Ray cluster.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from agents.base import SamplingParams
from trainers.config import TrainConfig
from trainers.evaluation import EvalResult, eval_result, evaluation_request
from trainers.records import RolloutBatch
from trainers.rollout import RolloutRequest, role_sampling_for
from trainers.run.lifecycle import Run
from trainers.run.test_parts import PART_TASKS, TestParts, weights_fingerprint
from trainers.runtime import Runtime

__all__ = ["collect_in_parts", "evaluate", "evaluate_unless_unchanged", "eval_line"]


def collect_in_parts(
    runtime: Runtime, request: RolloutRequest, parts: TestParts, part_tasks: int = PART_TASKS
) -> RolloutBatch:
    """``runtime.collect(request)`` played ``part_tasks`` tasks at a time, each finished part
    kept in ``parts`` and a part already there not played again (``trainers.run.test_parts``:
    a stop during a long test loses one part, not the test). ``time/rollout`` and the other
    stats sum over the parts, those read back included."""
    batches = []
    for index, start in enumerate(range(0, len(request.tasks), part_tasks)):
        tasks = tuple(request.tasks[start : start + part_tasks])
        batch = parts.load(index, tasks)
        if batch is None:
            batch = runtime.collect(dataclasses.replace(request, tasks=tasks))
            parts.save(index, tasks, batch)
        batches.append(batch)
    stats: dict[str, float] = {}
    for batch in batches:
        for name, value in batch.stats.items():
            stats[name] = stats.get(name, 0.0) + float(value)
    return RolloutBatch(
        samples=tuple(turn for batch in batches for turn in batch.samples),
        episodes=tuple(episode for batch in batches for episode in batch.episodes),
        stats=stats,
    )


def evaluate(
    config: TrainConfig, runtime: Runtime, run: Run, step: int, *, test: bool = False
) -> dict[str, float]:
    """The in-run evaluation, or with ``test`` the held-out test evaluation; logged to the run."""
    sampling = SamplingParams(
        temperature=config.eval_temperature, max_new_tokens=config.max_new_tokens, stop=config.stop
    )
    request = evaluation_request(
        config.env,
        num_tasks=config.test_tasks if test else config.eval_tasks,
        sampling=sampling,
        env_kwargs=config.env_setup.make_kwargs,
        split="test" if test else config.eval_split,
        # per-role reply lengths; evaluations keep --eval-temperature for every role
        role_sampling=role_sampling_for(sampling, {}, config.role_max_new_tokens),
    )
    if test:
        parts = TestParts(run.dir, step, weights_fingerprint(run.dir, step))
        result = eval_result(collect_in_parts(runtime, request, parts, PART_TASKS))
        metrics = {**result.metrics, "first_task_seed": request.tasks[0].seed}
        run.log_test(step, metrics)
        parts.clear()
        return metrics
    result: EvalResult = eval_result(runtime.collect(request))
    run.log_eval(step, result.metrics, result.episodes, transcripts=config.transcripts)
    return result.metrics


def evaluate_unless_unchanged(
    config: TrainConfig, runtime: Runtime, run: Run, step: int, *, test: bool = False
) -> dict[str, float]:
    """``evaluate``, except when no update since the latest earlier evaluation changed the
    weights (every unit skipped every step: zero-variance groups) and the evaluation is greedy:
    then it would play the same tasks with the same weights and repeat that evaluation exactly,
    so that one is logged again for this step, marked ``same_weights_as_step`` (a run stuck at
    zero variance saves its evaluations: with a tool team's programs, most of its wall time)."""
    done = run.tests if test else run.evals
    earlier = [k for k in done if k < step]
    if earlier and config.eval_temperature == 0 and run.last_update(step) <= max(earlier):
        prior = done[max(earlier)]
        metrics = {k: v for k, v in prior.items() if k != "step"}
        metrics["same_weights_as_step"] = prior.get("same_weights_as_step", prior["step"])
        if test:
            run.log_test(step, metrics)
        else:
            run.repeat_eval(step, prior["step"], metrics)
        return metrics
    return evaluate(config, runtime, run, step, test=test)


def eval_line(step: int, metrics: Mapping[str, float], split: str) -> str:
    """The progress display's summary of the latest in-run evaluation."""
    return f"{split} (step {step}): success {metrics['success']:.2f}  invalid {metrics['invalid_rate']:.2f}"
