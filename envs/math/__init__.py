"""Math reasoning: GSM-style word problems, arithmetic and algebra, with exact answer checking.

* ``envs.math.env``: ``MathEnv`` (``math-v0``): a tool agent (Python in ``envs.sandbox``)
  and a reasoner (``\\boxed{}``) go round until their answers agree.
* ``envs.math.data``: ``MathTask`` and ``MATH_SOURCES`` (generated training sources, the 100
  real GSM8K test items, CHAMP, and loaders for GSM8K / MATH / generic jsonl files).
* ``envs.math.generators``: seeded task generators (pure functions of the task seed); the
  word-problem templates are in ``envs.math.word_problems``, what all generators share
  (seeded draws, exact number text) in ``envs.math.drawing``.
* ``envs.math.checking``: answer extraction (``\\boxed{}``, printed output) and equivalence
  checking (exact fast path, then ``math-verify``).

Nothing heavy is imported here: data files and ``math_verify`` load on first use.
"""
