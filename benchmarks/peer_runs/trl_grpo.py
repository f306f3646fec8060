"""TRL's side of ``python -m benchmarks.peers``: ``GRPOTrainer`` on the spec's single-agent task
and budget. Runs in the peers' virtualenv (``install.sh``) with the repository on PYTHONPATH:

    .peers-venv/bin/python -m benchmarks.peer_runs.trl_grpo SPEC.json OUT_DIR

Settings matched to teamgym's (``benchmarks/peers.py`` lists them): the same prompts (the chat
template and reply prefix as teamgym writes them, passed as plain text so TRL adds nothing),
tasks per step, K, reply length, temperature, top-p, LoRA shape, AdamW at a constant rate,
gradient clip, one optimiser step per generation batch, the GRPO loss (clip 0.2, sequence-mean
of token means, rewards scaled by the group's std), no KL, no dataset shuffling. Writes
``OUT_DIR/result.json`` (per step: seconds, generate seconds, generated tokens) and the trained
adapter in ``OUT_DIR/adapters/solver`` (PEFT format). With a wall-time budget in the spec
(``benchmarks.peers_learning``): training stops at the step that spends it, and the adapter is
also kept at each mark (``OUT_DIR/marks/step_<N>/solver``, listed in the result's ``marks``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from benchmarks.peer_runs import task
from benchmarks.peer_runs.budget import Budget
from benchmarks.peer_runs.meter import GenerateMeter
from benchmarks.peer_runs.side import side_main, version


def run(spec: dict[str, Any], out: Path) -> dict[str, Any]:
    import torch

    torch.set_num_threads(spec["threads"])
    import trl
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback

    tokenizer = AutoTokenizer.from_pretrained(spec["model"])
    model = AutoModelForCausalLM.from_pretrained(spec["model"], dtype=torch.float32)
    rows = [
        {"prompt": task.render(tokenizer, task.replay(spec, seed, []), spec["prefix"]), "seed": seed}
        for seeds in spec["steps"]
        for seed in seeds
    ]

    def env_reward(prompts: list[str], completions: list[str], seed: list[int], **_: Any) -> list[float]:
        return [task.play(spec, s, [c])["solver"] for s, c in zip(seed, completions, strict=True)]

    per_step = len(spec["steps"][0]) * spec["num_generations"]
    args = trl.GRPOConfig(
        output_dir=str(out / "trl"),
        max_steps=len(spec["steps"]),
        per_device_train_batch_size=per_step,  # one generation batch = one optimiser step
        gradient_accumulation_steps=1,
        steps_per_generation=1,
        num_iterations=1,
        num_generations=spec["num_generations"],
        max_completion_length=spec["max_new_tokens"],
        temperature=spec["temperature"],
        top_p=spec["top_p"],
        top_k=0,
        learning_rate=spec["lr"],
        lr_scheduler_type="constant",
        warmup_steps=0,
        optim="adamw_torch",
        weight_decay=0.0,
        max_grad_norm=spec["max_grad_norm"],
        loss_type="grpo",
        scale_rewards="group",
        beta=0.0,
        epsilon=0.2,
        shuffle_dataset=False,
        seed=spec["seed"],
        use_cpu=True,
        bf16=False,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        disable_tqdm=True,
        gradient_checkpointing=False,  # TRL's default recomputes activations: teamgym does not
    )
    lora = LoraConfig(
        r=spec["lora_rank"], lora_alpha=spec["lora_alpha"], lora_dropout=0.0,
        target_modules="all-linear", task_type="CAUSAL_LM",
    )  # fmt: skip
    meter = GenerateMeter({tokenizer.eos_token_id})
    steps: list[dict[str, float]] = []
    budget = Budget(spec)

    class StepClock(TrainerCallback):
        def on_step_begin(self, *_: Any, **__: Any) -> None:
            self.started = time.perf_counter()

        def on_step_end(self, _args: Any, _state: Any, control: Any, model: Any = None, **__: Any) -> None:
            steps.append({"step_s": time.perf_counter() - self.started, **meter.take()})

            def save(directory: Path) -> None:
                model.save_pretrained(str(directory / "solver"))

            if budget.after_step(len(steps), steps[-1]["step_s"], save, out):
                control.should_training_stop = True

    trainer = trl.GRPOTrainer(
        model=model,
        reward_funcs=env_reward,
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        peft_config=lora,
        callbacks=[StepClock()],
    )
    trainer.train()
    trainer.model.save_pretrained(str(out / "adapters" / "solver"))
    return {
        "library": "trl",
        "version": trl.__version__,
        "transformers": version("transformers"),
        "steps": steps,
        "adapters": str(out / "adapters"),
        "marks": budget.kept,
    }


if __name__ == "__main__":
    side_main(run)
