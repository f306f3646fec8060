"""Everything under a run directory: what a training command (or an evaluation) leaves
behind, how it is written, and how it is read back.

Files and stores, at the bottom (none of them imports the report or the logger):
``files`` (names, JSON lines, atomic writes, the training time a run spent), ``transcripts``
(readable episodes), ``episodes`` (``episodes/``), ``trees`` (``trees/``), ``provenance``,
``plots`` (``plots/``), ``checkpoint`` (``checkpoints/``: save, load, ``--init``), ``dirs``
(new and resumed run directories, saved configs) and ``trained_team`` (a run's team with its
weights loaded). The report (``report/``, ``report.html``) reads those files. The logger
(``log.RunLogger``) writes a run and refreshes its plots and report; ``lifecycle.Run`` is a
run directory through its life, the same for every training command.

Importing this package imports none of its modules: import the one you need.
"""
