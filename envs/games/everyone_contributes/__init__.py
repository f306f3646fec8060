"""Everyone Contributes: ``game.py`` (MAC-SPGG-style payoffs, backward induction), ``env.py``."""
