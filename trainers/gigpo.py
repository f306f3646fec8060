"""``python -m trainers.gigpo``: the training command with the ``--algo gigpo`` preset
(see ``trainers.at_grpo``; every other flag is the same)."""

from trainers.at_grpo import main

if __name__ == "__main__":
    raise SystemExit(main(algo="gigpo"))
