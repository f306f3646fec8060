"""teamgym's side of ``python -m benchmarks.peers``: the training command's ``train`` on the
spec's task and budget, in its own process (so its peak RSS is its own, as each peer's).

    python -m benchmarks.peer_runs.teamgym_side SPEC.json OUT_DIR

Writes ``OUT_DIR/result.json``: per step the seconds (step, generate), the tokens generated
and the replies sampled, and the run directory (its checkpoint holds the trained adapters). The spec's
``teamgym`` entry adds what only teamgym has: ``algo`` (``grpo`` or ``at_grpo``) and ``team``.
With a wall-time budget in the spec (``benchmarks.peers_learning``): the run's
``--train-minutes``, with a checkpoint at each mark (``--eval-every-minutes``), listed in the
result's ``marks`` as the peers list theirs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.peer_runs.budget import Budget
from benchmarks.peer_runs.side import side_main, version

__all__ = ["run"]


def run(spec: dict[str, Any], out: Path) -> dict[str, Any]:
    from trainers.at_grpo import train
    from trainers.clock import UNCAPPED_STEPS, marks_passed
    from trainers.config import TrainConfig
    from trainers.run.checkpoint import checkpoint_dir
    from trainers.run.files import read_jsonl

    side = spec["teamgym"]
    budget = Budget(spec)
    config = TrainConfig(
        env=spec["env"],
        env_kwargs={k: v for k, v in spec["env_kwargs"].items() if k != "team"},
        team=side["team"],
        algo=side["algo"],
        model=spec["model"],
        backend="hf",  # the peers generate with transformers too
        response_prefix=spec["prefix"],
        stop=(),  # as the peers: no stop string, a reply ends at EOS or max_new_tokens
        lora_rank=spec["lora_rank"],
        lora_alpha=spec["lora_alpha"],
        num_generations=spec["num_generations"],
        tasks_per_step=len(spec["steps"][0]),
        steps=len(spec["steps"]),
        # the budget (0: the steps); every mark checkpoints, and every checkpoint is kept
        train_minutes=budget.minutes,
        eval_every_minutes=float(spec.get("mark_minutes", 0.0)),
        keep_checkpoints=UNCAPPED_STEPS if budget.minutes else 1,
        max_new_tokens=spec["max_new_tokens"],
        temperature=spec["temperature"],
        top_p=spec["top_p"],
        lr=spec["lr"],
        max_grad_norm=spec["max_grad_norm"],
        seed=spec["seed"],
        threads=spec["threads"],
        eval_tasks=1,  # benchmarks/peers.py evaluates every side alike; this one costs a second
        test_tasks=0,
        eval_every=0,
        output_dir=str(out),
        run_name="teamgym",
        transcripts=0,
        plots=False,
        tensorboard=False,
        progress=False,
    )
    summary = train(config)
    steps, marks, trained = [], [], 0.0
    for record in read_jsonl(summary.run_dir / "metrics.jsonl"):
        before, trained = trained, trained + record["time/step"]
        for mark in marks_passed(budget.marks, before, trained):  # the run checkpointed that step
            checkpoint = checkpoint_dir(summary.run_dir, record["step"])
            marks.append(
                {"minutes": mark, "step": record["step"], "trained_s": trained, "adapters": str(checkpoint)}
            )
        steps.append(
            {
                "step_s": record["time/step"],
                "generate_s": record["time/generate"],
                "generated_tokens": record["tokens_per_s"] * record["time/generate"],
                "samples": record["samples"],
            }
        )
    return {
        "library": "teamgym",
        "version": version("teamgym"),
        "transformers": version("transformers"),
        "steps": steps,
        "run_dir": str(summary.run_dir),
        "marks": marks,
    }


if __name__ == "__main__":
    side_main(run)
