"""ALFWorld offline: ``generator`` (seeded ALFRED problems), ``engine`` (the text world),
``expert`` (walkthroughs and the oracle), ``real`` (ALFWorld's own games), ``env`` (``alfworld-v0``)."""
