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


def positive_number(value, field: str, unit: str = "1") -> float:
    """``value`` as a finite float > 0, or an :class:`InputError` naming ``field`` and its unit."""
    import math

    try:
        x = float(value)
    except (TypeError, ValueError):
        raise InputError(field, value, f"must be a finite number > 0 [{unit}]") from None
    if not (math.isfinite(x) and x > 0.0):
        raise InputError(field, value, f"must be a finite number > 0 [{unit}]")
    return x
