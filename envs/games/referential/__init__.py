"""Referential game: ``game`` (objects, scripted speaker and listener) and ``env`` (``referential-v0``)."""
