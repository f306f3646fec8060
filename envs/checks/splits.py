"""The checks of an env's train / test splits: it refuses the other split's seeds, and the
two splits share no task content (``TextAECEnv.task_fingerprint``)."""

from __future__ import annotations

from envs.checks.subject import EnvUnderCheck
from envs.splits import SPLITS, split_of, split_range


def check_split_seeds(subject: EnvUnderCheck) -> str:
    env = subject.make()
    other = next(s for s in SPLITS if s != subject.split)
    try:
        env.reset(seed=split_range(other).start + 1)
    except ValueError:
        pass
    else:
        raise AssertionError(f"a {subject.split} env accepted a {other} seed (TextAECEnv.reset refuses them)")
    env.reset()
    assert split_of(env.task_seed) == subject.split, "an unseeded reset drew from the other split"
    return f"refuses {other} seeds; an unseeded reset stays in {subject.split}"


def check_split_disjoint(subject: EnvUnderCheck, tasks: int = 60) -> str:
    prints: dict[str, dict[str, int]] = {}
    for split in SPLITS:
        env = subject.make(split=split)
        prints[split] = {}
        for n in range(tasks):
            seed = split_range(split)[n]
            env.reset(seed=seed)
            prints[split].setdefault(env.task_fingerprint(), seed)
    shared = set(prints["train"]) & set(prints["test"])
    if shared:
        example = next(iter(shared))
        train_seed, test_seed = prints["train"][example], prints["test"][example]
        raise AssertionError(
            f"{len(shared)} of {len(prints['test'])} distinct test tasks also appear in train (e.g. "
            f"train seed {train_seed} = test seed {test_seed}). Generate each split's content apart "
            "(envs.splits.generate_in_split); if tasks differ in content the first prompt does not "
            "show (a secret), override task_fingerprint()"
        )
    for split, found in prints.items():
        assert len(found) > 1, f"all {tasks} {split} tasks are one task: does _start_task use the seed?"
    counts = f"{len(prints['train'])} train and {len(prints['test'])} test tasks"
    return f"{tasks} seeds per split: {counts}, none shared"
