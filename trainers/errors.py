"""``ConfigError``: what every command raises for a bad configuration value."""

from __future__ import annotations

__all__ = ["ConfigError"]


class ConfigError(ValueError):
    """A configuration value is invalid; the message names the field and the fix."""
