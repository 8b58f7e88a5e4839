"""The explicit Runge–Kutta family, written once for every integrator: Butcher tableaux and their
weights, the stage combination, the embedded error estimate and its norm term, the step-size
controller and DP5(4)'s continuous extension.

Every integrator of the engine forms its stages, its solution and its error estimate here:

* the rigid-body integrator (:mod:`systems.dynamics.integration`) and the multibody steppers
  (:mod:`systems.multibody.kernels`), whose stages are arrays ``K`` [rows, stages, components],
  with :data:`stage_sum` over :attr:`Tableau.weights`;
* the impact integrator (:mod:`systems.probe_contact.impulse`), whose state and stages share one
  work row, with :data:`row_weighted_sum`;
* the deployment's per-row steps (:mod:`systems.deployment.physics`), whose state and stages
  share one row too, with :data:`row_stage` and :data:`row_dp54_error`: the same sums with DP5(4)'s
  coefficients passed as scalars the compiler folds.

All of them size their steps with :data:`step_factor`. The rigid-body and deployment error norms
sum :data:`scaled_error_sq`'s componentwise terms; the impact integrator's is a contact-velocity
error (:func:`systems.probe_contact.impulse._error_norm`). Controller: Hairer, Nørsett & Wanner, *Solving Ordinary
Differential Equations I* (1993) §II.4. Sources: Bogacki & Shampine, Appl. Math. Lett. 2 (1989) 321–325;
Dormand & Prince, J. Comput. Appl. Math. 6 (1980) 19–26 (docs/references.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .kernels import dual, dual_call

@dataclass(frozen=True)
class Tableau:
    """Explicit Runge–Kutta coefficients; ``b_err`` = b − b̂ for embedded pairs (None: fixed step)."""

    name: str
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    b_err: np.ndarray | None
    order: int          # order of the propagated solution
    error_order: int    # order of the embedded solution (p in the step controller)

    @property
    def stages(self) -> int:
        return len(self.b)

    @property
    def weights(self) -> np.ndarray:
        """All of the tableau's stage weights in one [stages + 2, stages] array, what
        :data:`stage_sum` and :data:`row_weighted_sum` read: rows ``0 … s−1`` are ``a`` (stage ``j``'s
        coefficients), row :meth:`solution_row` (= s) is ``b``, row :meth:`error_row` (= s + 1) is
        ``b − b̂`` (zeros for a fixed-step method)."""
        s = self.stages
        w = np.zeros((s + 2, s))
        w[:s] = self.a
        w[s] = self.b
        if self.b_err is not None:
            w[s + 1] = self.b_err
        return w

    @property
    def solution_row(self) -> int:
        """The row of :attr:`weights` that holds ``b``."""
        return self.stages

    @property
    def error_row(self) -> int:
        """The row of :attr:`weights` that holds ``b − b̂``."""
        return self.stages + 1


def _tab(name, a, b, c, bhat=None, order=1, error_order=0):
    s = len(b)
    A = np.zeros((s, s))
    for i, row in enumerate(a):
        A[i, : len(row)] = row
    b = np.array(b, float)
    return Tableau(name, A, b, np.array(c, float), None if bhat is None else b - np.array(bhat, float),
                   order, error_order)


TABLEAUX = {
    "euler": _tab("euler", [[]], [1.0], [0.0], order=1),
    "semi_implicit_euler": _tab("semi_implicit_euler", [[]], [1.0], [0.0], order=1),
    "rk4": _tab("rk4", [[], [0.5], [0.0, 0.5], [0.0, 0.0, 1.0]], [1 / 6, 1 / 3, 1 / 3, 1 / 6],
                [0.0, 0.5, 0.5, 1.0], order=4),
    "bs32": _tab("bs32", [[], [1 / 2], [0.0, 3 / 4], [2 / 9, 1 / 3, 4 / 9]], [2 / 9, 1 / 3, 4 / 9, 0.0],
                 [0.0, 1 / 2, 3 / 4, 1.0], bhat=[7 / 24, 1 / 4, 1 / 3, 1 / 8], order=3, error_order=2),
    "dp54": _tab("dp54",
                 [[], [1 / 5], [3 / 40, 9 / 40], [44 / 45, -56 / 15, 32 / 9],
                  [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729],
                  [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656],
                  [35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84]],
                 [35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0],
                 [0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0],
                 bhat=[5179 / 57600, 0.0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100, 1 / 40],
                 order=5, error_order=4),
}


#: Dormand–Prince 5(4): ``a`` [7, 7] (row 6 = b: FSAL), ``c`` [7], ``b_err`` = b − b̂ [7].
DP54 = TABLEAUX["dp54"]

#: Dormand–Prince 5(4)'s continuous extension (Shampine 1986; Hairer, Nørsett & Wanner, *Solving
#: ODEs I*, §II.6, and their ``dopri5``'s ``CONTD5``): on a step y₀ → y₁ of length h with stages
#: k₁…k₇ (k₇ = f(y₁)), ``y(t₀ + θh) = y₀ + θ(r₂ + (1 − θ)(r₃ + θ(r₄ + (1 − θ) r₅)))`` with
#: ``r₂ = y₁ − y₀``, ``r₃ = h k₁ − r₂``, ``r₄ = r₂ − h k₇ − r₃`` and ``r₅ = h Σ_j d_j k_j`` (d₂ = 0):
#: fourth order, exact at both ends, C¹ across steps.
DP54_DENSE = (-12715105075.0 / 11282082432.0, 0.0, 87487479700.0 / 32700410799.0,
              -10690763975.0 / 1880347072.0, 701980252875.0 / 199316789632.0,
              -1453857185.0 / 822651844.0, 69997945.0 / 29380423.0)

#: The controller's safety factor and the bounds of one step's change.
STEP_SAFETY, STEP_SHRINK_MIN, STEP_GROW_MAX = 0.9, 0.2, 5.0


def _step_factor(err, exponent):
    """Next step / this step for the scaled error norm ``err`` (accept when ≤ 1):
    ``clamp(0.9 · err^exponent, 0.2, 5)`` with ``exponent = −1/(q + 1)``, q the embedded order;
    5 for a zero error, 0.2 for an infinite or NaN one."""
    if err == 0.0:
        return STEP_GROW_MAX
    if not (err < math.inf):
        return STEP_SHRINK_MIN
    f = STEP_SAFETY * err ** exponent
    if f < STEP_SHRINK_MIN:
        f = STEP_SHRINK_MIN
    if f > STEP_GROW_MAX:
        f = STEP_GROW_MAX
    return f


step_factor = dual(_step_factor)


def _scaled_error_sq(e, y0, y1, rtol, atol):
    """One state component's term of the RMS error norm: ``(e / (atol + rtol·max(|y0|, |y1|)))²``,
    e the embedded error estimate of a step from y0 to y1 (Hairer, Nørsett & Wanner, *Solving
    ODEs I*, II.4, eq 4.11). Every error-controlled integrator of the engine sums these terms
    (systems.dynamics.integration, systems.deployment.physics); a component with its own scale passes it as
    y0 = y1 (a fixed reference) or divides atol (a length scale)."""
    sc = atol + rtol * max(abs(y0), abs(y1))
    r = e / sc
    return r * r


scaled_error_sq = dual(_scaled_error_sq)


def _stage_sum(y, h, W, row, n, K, r, c):
    """``y + Σ_{j<n} h·W[row, j]·K[r, j, c]`` for stages kept as ``K`` [rows, stages, components]:
    component ``c`` of row ``r``'s stage ``row`` (y = y₀, n = row), of the step's solution
    (``row`` = :attr:`Tableau.solution_row`, n = s) or of its embedded error estimate
    (:attr:`Tableau.error_row`, y = 0), ``W`` = :attr:`Tableau.weights`. Summed in stage order with
    h inside each term: the rounding of every integrator that keeps its stages this way (rigid
    bodies, multibody joints)."""
    for j in range(n):
        y += h * W[row, j] * K[r, j, c]
    return y


stage_sum = dual(_stage_sum)


def _row_weighted_sum(w, k, stride, c, W, row, n):
    """``Σ_{j<n} W[row, j]·K_j[c]`` for stages kept in a flat row, K_j at ``w[k + stride·j:]``
    (``W`` = :attr:`Tableau.weights`), summed in stage order: the stage combination of an
    integrator whose state and stages share one work row (the impact integrator)."""
    acc = 0.0
    for j in range(n):
        acc += W[row, j] * w[k + stride * j + c]
    return acc


row_weighted_sum = dual(_row_weighted_sum)


def _row_stage(w, y0, k, stride, n, ys, h, a1, a2, a3, a4, a5, a6):
    """A stage (or the step's solution) of an explicit Runge–Kutta step kept in a flat row:
    ``w[ys:ys+n] = w[y0:] + h Σ_j a_j K_j`` with K_j at ``w[k + stride·j:]`` (a row of the tableau's
    ``a``, or ``b`` for the solution; unused a_j are 0). The same sum as ``w[y0 + c] +
    h·row_weighted_sum(…)`` over a row of :attr:`Tableau.weights` (the same bits but for the sign of
    a zero sum), with the six coefficients passed as scalars: the deployment's DP5(4) stages, its
    hottest loop. A zero a_j's term is skipped, not added: ``0·K_j`` adds nothing but the sign of a
    zero, yet IEEE arithmetic lets no compiler drop it, and the stages of DP5(4) have 20 non-zero
    coefficients of the 36 (measured: flight 15 % faster, deploy-cube's results the same bytes)."""
    for c in range(n):
        s = a1 * w[k + c]
        if a2 != 0.0:
            s += a2 * w[k + stride + c]
        if a3 != 0.0:
            s += a3 * w[k + 2 * stride + c]
        if a4 != 0.0:
            s += a4 * w[k + 3 * stride + c]
        if a5 != 0.0:
            s += a5 * w[k + 4 * stride + c]
        if a6 != 0.0:
            s += a6 * w[k + 5 * stride + c]
        w[ys + c] = w[y0 + c] + h * s


row_stage = dual_call(_row_stage)

_E1, _E3, _E4, _E5, _E6, _E7 = (float(DP54.b_err[0]), float(DP54.b_err[2]), float(DP54.b_err[3]),
                                float(DP54.b_err[4]), float(DP54.b_err[5]), float(DP54.b_err[6]))


def _row_dp54_error(w, k, stride, c, h):
    """DP5(4)'s embedded error estimate ``h Σ_j (b_j − b̂_j) K_j`` of state component ``c`` of a step
    kept in a flat row (stages K_j at ``w[k + stride·j:]``; b₂ − b̂₂ = 0)."""
    return h * (_E1 * w[k + c] + _E3 * w[k + 2 * stride + c] + _E4 * w[k + 3 * stride + c]
                + _E5 * w[k + 4 * stride + c] + _E6 * w[k + 5 * stride + c] + _E7 * w[k + 6 * stride + c])


row_dp54_error = dual(_row_dp54_error)
