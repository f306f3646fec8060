"""teamgym's trainers: the algorithm flat at the top, the plumbing in two sub-packages.

The core (flat modules): the commands (``at_grpo`` and its aliases ``gigpo`` / ``matpo``,
``sft``), their configs (``config``, ``sft_config``, built from the shared field groups of
``config_fields``; ``presets`` for what ``--algo`` and an env's preset mean, ``role_flags``
for the per-role flags; ``cli`` over ``field_docs``, ``backends``, ``errors``), and the
algorithm they run:
``rollout`` (tree and plain sampling) -> ``records`` -> ``grouping`` + ``advantages`` (the
estimators, over ``sample_returns``; ``rae`` for self-play) -> ``losses`` + ``prefix`` +
``activations`` -> ``learner`` (``supervised`` for the warm start's NLL, ``demonstrations``
for its replies), with
``evaluation``, ``teams``, ``clock``, ``progress`` and ``seeding`` beside them.

The sub-packages:

* ``trainers.run``: everything under a run directory (its files, metrics log, episodes,
  trees, checkpoints, provenance, plots, report.html, a trained team read back);
* ``trainers.runtime``: where a step's work runs (the protocol and errors at the bottom,
  local, Ray, the workers).

The layering rule (``tests/test_layers.py`` builds the import graph and fails on a
break or on any import cycle): the core never imports ``trainers.run`` or
``trainers.runtime``; only the commands (``at_grpo``, ``sft``, ``gigpo``, ``matpo``) use
them, with ``sft_demos``, the part of ``sft`` that reads the run directories of ``--demos``.
``trainers.runtime`` may use ``trainers.run`` (checkpoints), never the reverse. Inside
``trainers.run``, the files and stores never import the report; the report reads them; the
logger (``log.py``) and the run lifecycle (``lifecycle.py``) sit on top and refresh the report.
Across packages: envs <- agents <- trainers <- benchmarks (a package imports only those to
its left).
"""
