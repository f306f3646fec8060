"""Text games (``metadata["suite"] = "games"``): competitive, imperfect-information and
cooperative games for teams of LLM roles. One package per game: ``game.py`` holds the pure
rules and the oracle, ``env.py`` the ``TextAECEnv`` whose module docstring is its page.

Each seat of a game is a role of its own (``first``/``second`` in tic-tac-toe), so the
existing team machinery binds seats: self-play is one policy in every seat (``--policy
shared``), a fixed opponent a scripted policy in one seat (``--roles second=oracle``).
A competitive two-seat game derives from ``two_seats.TwoSeatGame``: it pays ``seat/outcome``
(its sign is the win/draw/loss) and has ``metadata["competitive"] = True``, so
``benchmarks.evaluate --ladder`` plays the model against fixed opponents in both seats and
rates it (``benchmarks.ladder``).
"""
