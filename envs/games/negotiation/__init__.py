"""Negotiation: ``env.py`` (a two-seat resource trade with private valuations)."""
