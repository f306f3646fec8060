"""Kuhn poker: ``game.py`` (rules, Nash policy, exact exploitability), ``env.py`` (the env)."""
