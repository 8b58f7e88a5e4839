"""Errors a user sees. Every message names the field, the value and the rule it broke."""

from __future__ import annotations


class TumbleError(Exception):
    """Base of every error tumble raises on purpose (the CLI prints these as one line)."""


class InputError(TumbleError, ValueError):
    """Bad input caught before any work starts.

    Args:
        field: what was wrong, as the user named it (``"body_mass of entity 3"``).
        value: the offending value.
        rule: the rule it broke, in words (``"must be > 0"``).
    """

    def __init__(self, field: str, value, rule: str):
        self.field, self.value, self.rule = field, value, rule
        super().__init__(f"{field} = {value!r}: {rule}")


class ScheduleError(TumbleError):
    """Systems whose declared reads/writes cannot be ordered (cycle or write-write conflict)."""


class BackendError(TumbleError):
    """The requested backend cannot run on this machine."""
