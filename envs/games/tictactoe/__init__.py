"""Tic-tac-toe: ``game`` (rules, exact minimax) and ``env`` (``tictactoe-v0``)."""
