"""The sides of ``python -m benchmarks.peers``: teamgym's (``teamgym_side``) and the peers'
scripts (``trl_grpo``, ``comlrl_magrpo``, run by the peers' own virtualenv: ``install.sh``),
with what they share: the task (``task``), the generate meter (``meter``) and the command line
(``side``)."""
