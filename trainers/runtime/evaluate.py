"""The evaluations a training run makes on its runtime: the in-run one (``eval_tasks`` of
``eval_split``, logged to eval.jsonl) and the held-out test one (``test_tasks`` of the
protocol's block, logged to test.jsonl).

Like ``train_step`` beside it, this is the training command's use of the ``Runtime``: the same
evaluation plays in-process and on a Ray cluster.
"""

from __future__ import annotations

from collections.abc import Mapping

from agents.base import SamplingParams
from trainers.config import TrainConfig
from trainers.evaluation import EvalResult, eval_result, evaluation_request
from trainers.rollout import role_sampling_for
from trainers.run.lifecycle import Run
from trainers.runtime import Runtime

__all__ = ["evaluate", "evaluate_unless_unchanged", "eval_line"]


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
    result: EvalResult = eval_result(runtime.collect(request))
    if test:
        metrics = {**result.metrics, "first_task_seed": request.tasks[0].seed}
        run.log_test(step, metrics)
        return metrics
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
