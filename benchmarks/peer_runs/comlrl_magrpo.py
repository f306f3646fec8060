"""CoMLRL's side of ``python -m benchmarks.peers``: ``MAGRPOTrainer`` on the spec's two-agent
task (planner, then executor) and budget. Runs in the peers' virtualenv (``install.sh``) with
the repository on PYTHONPATH:

    .peers-venv/bin/python -m benchmarks.peer_runs.comlrl_magrpo SPEC.json OUT_DIR

How the task is expressed. In one MAGRPO turn every agent replies to its own prompt before any
reply is seen, so the executor cannot read the planner's route in the same turn. The hand-over
takes two turns: turn 1, the planner writes its route (the executor replies too, to its view
before any plan: ignored by the env); turn 2, ``external_transition`` gives the executor its
view with that route, and the executor's reply is played (the planner replies again, ignored).
MAGRPO samples K joint replies at turn 1 and K more under each of them at turn 2, so each task
costs 2 (K + K^2) replies where teamgym's tree samples 2K: the table's ``samples / step``. The
reward of a joint reply is the team's (planner + executor) env reward of the step it plays;
MAGRPO credits turn 1 with it plus the mean of its children's.

Matched to teamgym: prompts (chat template + prefix, rendered here: CoMLRL applies no template),
task order (no shuffling), K, reply length, temperature, top-p 1 (CoMLRL's default 0.6),
top-k off, LoRA shape, lr, AdamW with weight decay 0 (set on CoMLRL's optimisers; its default is
torch's 0.01). Not matchable: CoMLRL has no gradient clip and its loss is REINFORCE on summed
token log-probs (no ratio clip; with one pass per batch, as here, a ratio is 1 anyway); its
buffers make 2 optimiser steps per agent per step (one per turn) where teamgym makes 1.

With a wall-time budget in the spec (``benchmarks.peers_learning``): training stops after the
update of the step that spends it, and both adapters are also kept at each mark
(``OUT_DIR/marks/step_<N>/<role>``, listed in the result's ``marks``).

CoMLRL 1.4.3 takes the first pad token of a prompt as its end; SmolLM2's pad token is
``<|im_end|>``, which the chat template writes after the system message, so every reply came
back empty. Padding with ``<|endoftext|>`` instead (never in a prompt) avoids it.
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
    torch.manual_seed(spec["seed"])
    from comlrl.trainers.reinforce import MAGRPOConfig, MAGRPOTrainer
    from datasets import Dataset
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    assert spec["roles"] == ["planner", "executor"], spec["roles"]
    tokenizer = AutoTokenizer.from_pretrained(spec["model"])
    tokenizer.pad_token = "<|endoftext|>"  # the workaround in the module docstring
    lora = LoraConfig(
        r=spec["lora_rank"], lora_alpha=spec["lora_alpha"], lora_dropout=0.0,
        target_modules="all-linear", task_type="CAUSAL_LM",
    )  # fmt: skip
    agents = [
        get_peft_model(AutoModelForCausalLM.from_pretrained(spec["model"], dtype=torch.float32), lora)
        for _ in spec["roles"]
    ]
    prefix = spec["prefix"]

    def view(seed: int, replies: list[str], agent: str | None = None) -> str:
        return task.render(tokenizer, task.replay(spec, seed, replies, agent), prefix)

    seeds = [seed for step in spec["steps"] for seed in step]
    seed_of = {view(seed, []): seed for seed in seeds}  # the planner's first prompt -> its task
    handed_over: dict[str, tuple[int, str]] = {}  # a turn-2 prompt -> (task, the route it carries)

    def planner_prompt(item: dict[str, Any], external_prompts: str | None = None) -> str:
        return external_prompts or view(item["seed"], [])

    def executor_prompt(item: dict[str, Any], external_prompts: str | None = None) -> str:
        return external_prompts or view(item["seed"], [], "executor_0")  # "The planner's plan: (none yet)"

    def transition(prompt: str, agent_completions: Any, num_agents: int, *_: Any, **__: Any) -> list[str]:
        seed, route = seed_of[prompt], _text(agent_completions[0])
        turn_two = view(seed, [route])  # the executor's view with the route
        handed_over[turn_two] = (seed, route)
        return [turn_two, turn_two]

    turn_two_rewards = [0]

    def team_reward(
        planner: list[str], executor: list[str], batch_items: Any = None, prompts: Any = None
    ) -> float:
        if prompts and prompts[0] in handed_over:  # turn 2: the executor's reply is played
            turn_two_rewards[0] += 1
            seed, route = handed_over[prompts[0]]
            after = task.play(spec, seed, [route, executor[0]])
            return sum(after.values()) - sum(task.play(spec, seed, [route]).values())
        return sum(task.play(spec, batch_items[0]["seed"], [planner[0]]).values())

    K, per_step = spec["num_generations"], len(spec["steps"][0])
    nodes = per_step * (1 + K)  # per agent and step: T turn-1 nodes and K turn-2 nodes under each
    args = MAGRPOConfig(
        num_train_epochs=1,
        agent_learning_rate=spec["lr"],
        num_agents=2,
        num_generations=K,
        max_new_tokens=spec["max_new_tokens"],
        temperature=spec["temperature"],
        top_p=spec["top_p"],
        top_k=None,
        num_turns=2,
        discount=1.0,
        early_termination_threshold=None,
        eval_interval=0,
        rollout_buffer_size=nodes,  # a buffer fills after one step's tasks: then its updates
        train_batch_size=nodes,
        agent_devices="cpu",
    )
    trainer = MAGRPOTrainer(
        agents=agents,
        num_agents=2,
        tokenizer=tokenizer,
        train_dataset=Dataset.from_list([{"prompt": view(seed, []), "seed": seed} for seed in seeds]),
        reward_func=team_reward,
        formatters=[planner_prompt, executor_prompt],
        external_transition=transition,
        wandb_config=None,
        args=args,
    )
    for optimizer in trainer.optimizers:
        for group in optimizer.param_groups:
            group["weight_decay"] = 0.0

    meter = GenerateMeter({tokenizer.convert_tokens_to_ids("<|im_end|>"), tokenizer.eos_token_id})
    steps: list[dict[str, float]] = []
    drain = trainer._drain_ready_buffers  # one call per full buffer: the end of a step
    clock = {"started": time.perf_counter()}
    budget = Budget(spec)

    def save(directory: Path) -> None:
        for role, agent in zip(spec["roles"], agents, strict=True):
            agent.save_pretrained(str(directory / role))

    def timed_drain(ready_agents: list[int]) -> None:
        drain(ready_agents)
        if not ready_agents:  # called after every env step's samples, full or not
            return
        steps.append({"step_s": time.perf_counter() - clock["started"], **meter.take()})
        spent = budget.after_step(len(steps), steps[-1]["step_s"], save, out)
        clock["started"] = time.perf_counter()  # saving a mark's adapters is not training
        if spent:
            raise BudgetSpent  # CoMLRL's loop has no stop signal: leave it after this update

    trainer._drain_ready_buffers = timed_drain
    try:
        trainer.train()
    except BudgetSpent:
        pass
    if not budget.minutes and len(steps) != len(spec["steps"]):
        raise RuntimeError(f"CoMLRL made {len(steps)} buffer flushes, expected {len(spec['steps'])}")
    for role, agent in zip(spec["roles"], agents, strict=True):
        agent.save_pretrained(str(out / "adapters" / role))
    return {
        "library": "comlrl",
        "version": version("comlrl"),
        "transformers": version("transformers"),
        "steps": steps,
        "adapters": str(out / "adapters"),
        "turn_two_rewards": turn_two_rewards[0],  # K x K per task when every hand-over was found
        "marks": budget.kept,
    }


class BudgetSpent(Exception):
    """Raised after the update of the step that spent the wall-time budget."""


def _text(completion: Any) -> str:
    """A reply as CoMLRL hands it over (a string, or a one-element list of one)."""
    return completion[0] if isinstance(completion, list) else str(completion)


if __name__ == "__main__":
    side_main(run)
