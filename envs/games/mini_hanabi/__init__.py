"""Mini Hanabi: ``env.py`` (OpenSpiel Hanabi, small, through ``envs.games.spiel``)."""
