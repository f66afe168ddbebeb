"""The workflow's error: a configuration that cannot be run. The library's own checks raise
ValueError (:mod:`mkclust._validation`); this one belongs to the reproduction machinery."""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration that cannot be run; the message names the offending key."""
