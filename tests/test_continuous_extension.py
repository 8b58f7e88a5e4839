"""DP5(4)'s continuous extension (ecs.stepping.DP54_DENSE), as the contact phase's event location
reads it (systems.deployment.events: dense_setup / dense_state), against closed-form solutions.

The extension is exact at both ends of the step and of fourth order inside it: its error on a
step of length h is O(h⁵), so halving h divides it by about 32. Checked on y' = A y with a
rotation-plus-decay A (the solution is expm(A t) y₀, scipy), component by component over all 13
numbers of a deployment state."""

from __future__ import annotations

import numpy as np
from scipy.linalg import expm

from ecs.stepping import DP54
from systems.deployment.events import dense_setup, dense_state
from systems.deployment.physics import K0, KFSAL, STATE, WORK_SIZE, Y0, Y1

RNG = np.random.default_rng(3)
A = RNG.normal(size=(STATE, STATE))
A = 0.5 * (A - A.T) - 0.3 * np.eye(STATE)          # rotation plus decay: |eigenvalues| ~ 1


def _step(y0, h):
    """One DP5(4) step of y' = A y into a work row laid out as the deployment's (stages at K0 + 13 j)."""
    w = np.zeros(WORK_SIZE)
    k = np.zeros((7, STATE))
    for j in range(7):
        y = y0 + h * (DP54.a[j, :j] @ k[:j]) if j else y0
        k[j] = A @ y
    w[Y0:Y0 + STATE] = y0
    w[Y1:Y1 + STATE] = y0 + h * (DP54.b @ k)
    for j in range(6):
        w[K0 + 13 * j:K0 + 13 * j + STATE] = k[j]
    w[KFSAL:KFSAL + STATE] = k[6]
    return w


def _dense_error(h, theta):
    y0 = RNG.normal(size=STATE)
    w = _step(y0, h)
    y1 = w[Y1:Y1 + STATE].copy()
    dense_setup.py(w, h, STATE)
    dense_state.py(w, theta, STATE)
    return w[Y1:Y1 + STATE], expm(A * theta * h) @ y0, y1


def test_continuous_extension_is_the_step_at_its_ends():
    y, _, y1 = _dense_error(0.3, 1.0)
    np.testing.assert_allclose(y, y1, rtol=0, atol=1e-15)
    w = _step(np.arange(STATE, dtype=float), 0.3)
    dense_setup.py(w, 0.3, STATE)
    dense_state.py(w, 0.0, STATE)
    np.testing.assert_array_equal(w[Y1:Y1 + STATE], np.arange(STATE, dtype=float))


def test_continuous_extension_is_fourth_order_inside_the_step():
    for theta in (0.17, 0.5, 0.83):
        errs = []
        for h in (0.4, 0.2, 0.1):
            RNG.bit_generator.state = np.random.default_rng(11).bit_generator.state   # the same y0 per h
            y, exact, _ = _dense_error(h, theta)
            errs.append(np.linalg.norm(y - exact) / np.linalg.norm(exact))
        # O(h^5): 32 per halving (measured 35-46 here, where h|λ| reaches ~1); 20 leaves room for the
        # next terms of the expansion, and a third-order extension (8 per halving) fails it
        assert errs[0] / errs[1] > 20.0 and errs[1] / errs[2] > 20.0, errs


def test_hermite_root_is_a_root_of_the_cubic_that_numpy_finds():
    """Event location's trial time (systems.deployment.events.hermite_root: safeguarded Newton on the
    cubic Hermite interpolant of the event values and rates at a bracket's ends) against the real
    roots in (0, 1) of the same cubic from numpy.roots (its companion matrix's eigenvalues), on
    5,000 random brackets (one, two or three roots inside; grazing ends with a zero value): the
    returned time is one of them to 1e-9 of the width (numpy's roots of a near-double root are good
    to ~1e-8 only; there the interpolant must change sign within 1e-12 of the width), and the
    interpolant is positive just before it."""
    from systems.deployment.events import hermite_root

    root = hermite_root.cpu
    rng = np.random.default_rng(11)
    for _ in range(5000):
        ga = rng.exponential()
        gb = 0.0 if rng.random() < 0.05 else -rng.exponential()
        da, db = 3.0 * rng.normal(size=2)
        width = 10.0 ** rng.uniform(-4.0, 3.0)
        ma, mb = da * width, db * width
        # H(s) = (2s³ − 3s² + 1) ga + (s³ − 2s² + s) ma + (−2s³ + 3s²) gb + (s³ − s²) mb
        coef = [2 * ga + ma - 2 * gb + mb, -3 * ga - 2 * ma + 3 * gb - mb, ma, ga]

        def h(s):
            return np.polyval(coef, s)

        s = root(ga, da, gb, db, width) / width
        assert 0.0 < s <= 1.0
        real = [r.real for r in np.roots(coef) if abs(r.imag) < 1e-7 and -1e-9 <= r.real <= 1.0 + 1e-9]
        scale = abs(ga) + abs(gb) + abs(ma) + abs(mb)
        near = min(abs(s - r) for r in real)
        assert near < 1e-9 or (h(max(s - 1e-12, 0.0)) > 0.0 >= h(min(s + 1e-12, 1.0)) - 1e-15 * scale), (
            ga, da, gb, db, width, s, real)
        assert h(max(s - 1e-6, 0.0)) > -1e-12 * scale
