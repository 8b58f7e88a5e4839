"""Validity rules of component columns, checked on every packed value before any work starts.

A column declares its rule with ``column(..., check=rule)``. :meth:`ecs.world.World.compile`
applies it to every row it packs, whatever way the value was given (a component built by hand, a
helper such as ``rigid_body``, or a per-sample dispersion); the batch runner applies it to every
sample's drawn value before the store is created (:meth:`ecs.store.Layout.check_inputs`). A
failed rule raises :class:`~ecs.errors.InputError` naming the column, the entity, the sample, the
value and the rule.

A rule is a :class:`Rule`: a one-line statement and a vectorised test ``bad(values) -> mask``
over a stack of per-row values ``[n, *shape]``; a column may declare a tuple of rules. Non-finite
values are refused by the packer before rules run, so rules may assume finite input. A scene that
knowingly runs outside a named rule says so with ``world.waive_rule(column, name)`` (seed 003's
GUNNS body breaks the inertia triangle inequality, harmlessly for the equations of motion).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

#: Allowed | |q| - 1 | of a unit quaternion given as input (dimensionless).
QUATERNION_TOL = 1e-6
#: Relative tolerance of the inertia checks (symmetry, positive definiteness, triangle
#: inequality), of the tensor's largest entry.
INERTIA_RTOL = 1e-9


@dataclass(frozen=True)
class Rule:
    """A column's validity rule.

    Attributes:
        text: the rule in words (``"must be > 0 [kg]"``), as shown in the error.
        bad: ``bad(values [n, *shape]) -> bool [n]``, True for rows that break it.
    """

    text: str
    bad: Callable[[np.ndarray], np.ndarray]
    name: str = ""

    def first_bad(self, values: np.ndarray) -> int | None:
        """Index of the first row that breaks the rule, or ``None``."""
        values = np.asarray(values)
        if values.shape[0] == 0:
            return None
        mask = np.asarray(self.bad(values), bool).reshape(values.shape[0])
        k = int(np.argmax(mask))
        return k if mask[k] else None


def positive(unit: str = "1") -> Rule:
    """Strictly positive."""
    return Rule(f"must be > 0 [{unit}]", lambda v: ~(v > 0.0))


def nonnegative(unit: str = "1") -> Rule:
    """Zero or positive."""
    return Rule(f"must be >= 0 [{unit}]", lambda v: ~(v >= 0.0))


def unit_quaternion(tol: float = QUATERNION_TOL) -> Rule:
    """A unit quaternion, scalar-first, ``| |q| - 1 | <= tol``."""
    return Rule(f"must be a unit quaternion (w, x, y, z): | |q| - 1 | <= {tol:g}",
                lambda v: ~(np.abs(np.linalg.norm(v.reshape(v.shape[0], 4), axis=1) - 1.0) <= tol))


def inertia_tensor(rtol: float = INERTIA_RTOL) -> Rule:
    """A usable inertia tensor about the CoM: symmetric and positive definite (what the equations
    of motion need)."""

    def bad(v):
        m = v.reshape(v.shape[0], 3, 3)
        scale = np.max(np.abs(m), axis=(1, 2))
        asym = np.max(np.abs(m - np.swapaxes(m, 1, 2)), axis=(1, 2)) > rtol * scale
        ev = np.linalg.eigvalsh(0.5 * (m + np.swapaxes(m, 1, 2)))  # ascending
        return asym | ~(ev[:, 0] > rtol * scale) | ~(scale > 0.0)

    return Rule("must be a symmetric, positive-definite inertia tensor [kg m^2]", bad, "inertia_tensor")


def triangle_inequality(rtol: float = INERTIA_RTOL) -> Rule:
    """The principal moments of a real mass distribution obey I3 <= I1 + I2
    (``I1 + I2 - I3 = 2 ∫ r3² dm >= 0``)."""

    def bad(v):
        m = v.reshape(v.shape[0], 3, 3)
        scale = np.max(np.abs(m), axis=(1, 2))
        ev = np.linalg.eigvalsh(0.5 * (m + np.swapaxes(m, 1, 2)))
        return ev[:, 2] > ev[:, 0] + ev[:, 1] + rtol * scale

    return Rule("principal moments must obey I3 <= I1 + I2 (a real mass distribution) [kg m^2]", bad,
                "triangle_inequality")


def physical_inertia() -> tuple[Rule, Rule]:
    """The rules of a rigid body's inertia column: :func:`inertia_tensor` and :func:`triangle_inequality`."""
    return inertia_tensor(), triangle_inequality()


def elementwise(checks: dict[int, tuple[float, float]], names: tuple[str, ...]) -> Rule:
    """Per-element closed ranges ``{index: (lo, hi)}`` of a vector column (``names`` label them)."""
    parts = []
    for k, (lo, hi) in checks.items():
        if np.isinf(hi):
            parts.append(f"{names[k]} >= {lo:g}")
        else:
            parts.append(f"{lo:g} <= {names[k]} <= {hi:g}")

    def bad(v):
        v = v.reshape(v.shape[0], -1)
        out = np.zeros(v.shape[0], bool)
        for k, (lo, hi) in checks.items():
            out |= ~((v[:, k] >= lo) & (v[:, k] <= hi))
        return out

    return Rule("must have " + ", ".join(parts), bad)
