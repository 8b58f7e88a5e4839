"""Free precession of a symmetric top (seed 002 §2.4.1, Eq. 1.27–1.34; Appendix A Script 2-1).

A torque-free disc with ``I = diag(I_t, I_t, I_a)`` starts with the body frame on the inertial
frame and ``ω₀ = [A, 0, ω_z]`` (body axes). Euler's equations (Eq. 1.27) keep ``ω_z`` constant and
turn the transverse part at ``ω_k = (I_a − I_t)/I_t · ω_z`` (Eq. 1.28–1.31), so that
``ω_b(t) = R_z(ω_k t) ω₀``. The seed chooses the body-cone period ``τ = 2π/ω_k = 5 s`` and
``A = 1``; with the thesis's disc (Ix = Iy = 1, Iz = 32/17 kg m², i.e. the printed 1.8822) this
gives ``ω_z = I_t ω_k/(I_a − I_t) = 2π·17/75 ≈ 1.4242 rad/s`` (printed 1.4243, from the rounded
Iz). :func:`axial_rate` computes it from the parameters.

Closed form in the inertial frame (used by :func:`closed_form`). Instead of the seed's chain of
Euler-angle matrices (Eq. 1.33–1.34 and the two printed matrices, which carry signs that are
hard to follow), the attitude is written as two rotations: with ``H = I ω₀`` (inertial, constant,
because the body starts aligned) and ``ĥ = H/|H|``,

    R(t) = Rot(ĥ, |H| t / I_t) · Rot(ẑ, −ω_k t)           (body → inertial)

i.e. precession about ``H`` at ``φ̇ = |H|/I_t`` (Eq. 1.33, 2.8615 rad/s for the seed) and a body
spin ``ψ̇ = −ω_k`` (Eq. 1.33, −1.2566 rad/s). Differentiating gives ``ω_b = Rᵀ ω_e`` equal to
Eq. 1.31, and

    ω_e(t) = H/I_t − ω_k · Rot(ĥ, |H| t / I_t) ẑ

a circle (the space cone) about ``H``. The nutation angle is ``acos(I_a ω_z/|H|)`` (0.3570 rad).

Scene parameters (keyword-only): ``method`` (integrator, default ``"rk4"``), ``dt`` [s] (0.01),
``t_end`` [s] (10), ``record_every`` [frames] (10), ``euler_mode`` (False: quaternion attitude;
True: 3-2-1 Euler angles as seed 002 offers), ``i_transverse`` (1), ``i_axial`` (32/17) [kg m²],
``period`` τ [s] (5), ``amplitude`` A [rad/s] (1), ``mass`` [kg] (1), ``omega_spread`` — the
per-axis 3σ spread [rad/s] of the initial rate drawn per sample by the batch runner (0.05; 0 turns
the dispersion off), and ``rtol``/``atol`` (1e-10, 1e-12) for the adaptive methods, refused with a fixed-step one. A scene built with defaults
and run directly (no batch) is deterministic: ``ω₀ = [A, 0, ω_z]``.
"""

from __future__ import annotations

import math

import numpy as np

from ecs import InputError
from ecs.scene import Dispersion, normal
from scenes._common import RIGID_COLUMNS, adaptive_tolerances, attitude_columns, check_spread, positive, rigid_scene

DESCRIPTION = "torque-free symmetric top: precession and nutation against Euler's closed-form solution"


def axial_rate(*, i_transverse: float = 1.0, i_axial: float = 32.0 / 17.0, period: float = 5.0) -> float:
    """``ω_z`` [rad/s] that makes the body cone period ``period`` (seed 002 Eq. 1.28, τ = 2π/ω_k)."""
    it = positive("i_transverse", i_transverse, "kg m^2")
    ia = positive("i_axial", i_axial, "kg m^2")
    tau = positive("period", period, "s")
    if ia == it:
        raise InputError("i_axial", i_axial, "must differ from i_transverse (a sphere does not precess)")
    return it * (2.0 * math.pi / tau) / (ia - it)


def _rotate(axis: np.ndarray, angle: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rodrigues: rotate ``v`` [3] about unit ``axis`` [3] by ``angle`` [T] -> [T, 3]."""
    c, s = np.cos(angle)[:, None], np.sin(angle)[:, None]
    return v * c + np.cross(axis, v) * s + axis * (axis @ v) * (1.0 - c)


def closed_form(t, *, omega0, i_transverse: float = 1.0, i_axial: float = 32.0 / 17.0) -> dict[str, np.ndarray]:
    """Closed-form torque-free motion of a symmetric top starting at the identity attitude.

    Args:
        t: times [s], shape [T].
        omega0: initial angular velocity, body axes [rad/s], shape [3] (any transverse part).
        i_transverse, i_axial: principal moments ``I_x = I_y`` and ``I_z`` [kg m²].

    Returns:
        ``{"omega_body": [T, 3], "omega_inertial": [T, 3], "attitude": [T, 4]}`` — rad/s, rad/s and
        the scalar-first body→inertial quaternion (sign: continuous from ``(1, 0, 0, 0)``).
    """
    t = np.atleast_1d(np.asarray(t, float))
    w0 = np.asarray(omega0, float)
    it, ia = float(i_transverse), float(i_axial)
    wk = (ia - it) / it * w0[2]
    h = np.array([it * w0[0], it * w0[1], ia * w0[2]])
    hn = float(np.linalg.norm(h))
    hhat = h / hn
    spin = wk * t
    c, s = np.cos(spin), np.sin(spin)
    omega_b = np.stack([c * w0[0] - s * w0[1], s * w0[0] + c * w0[1], np.full_like(t, w0[2])], axis=-1)
    prec = hn * t / it
    omega_e = h / it - wk * _rotate(hhat, prec, np.array([0.0, 0.0, 1.0]))
    # q = q(ĥ, prec) ⊗ q(ẑ, −spin)
    a0, av = np.cos(prec / 2), np.sin(prec / 2)[:, None] * hhat
    b0, bv = np.cos(-spin / 2), np.sin(-spin / 2)[:, None] * np.array([0.0, 0.0, 1.0])
    q0 = a0 * b0 - np.sum(av * bv, axis=-1)
    qv = a0[:, None] * bv + b0[:, None] * av + np.cross(av, bv)
    return {"omega_body": omega_b, "omega_inertial": omega_e, "attitude": np.concatenate([q0[:, None], qv], axis=-1)}


def build(*, method: str = "rk4", dt: float = 0.01, t_end: float = 10.0, record_every: int | None = 10,
          euler_mode: bool = False, i_transverse: float = 1.0, i_axial: float = 32.0 / 17.0, period: float = 5.0,
          amplitude: float = 1.0, mass: float = 1.0, omega_spread: float = 0.05, rtol: float | None = None,
          atol: float | None = None):
    """The free-precession scene (see the module docstring for the parameters)."""
    rtol, atol = adaptive_tolerances(method, rtol=rtol, atol=atol)
    wz = axial_rate(i_transverse=i_transverse, i_axial=i_axial, period=period)
    omega0 = np.array([float(amplitude), 0.0, wz])
    spread = check_spread("omega_spread", omega_spread)
    disp = [Dispersion(None, "body_omega", normal(omega0, [spread] * 3), name="omega0")] if spread > 0 else []
    params = dict(method=method, dt=dt, t_end=t_end, record_every=record_every, euler_mode=bool(euler_mode),
                  i_transverse=i_transverse, i_axial=i_axial, period=period, amplitude=amplitude, mass=mass,
                  omega_spread=spread, rtol=rtol, atol=atol)
    return rigid_scene("precession", DESCRIPTION,
                       body=dict(mass=mass, inertia=(i_transverse, i_transverse, i_axial), omega=omega0),
                       method=method, dt=dt, t_end=t_end, record_every=record_every, euler_mode=euler_mode,
                       dispersions=disp, rtol=rtol, atol=atol, record=attitude_columns(euler_mode),
                       final=RIGID_COLUMNS, params=params)


def reference(params: dict, inputs: dict, t) -> dict[str, np.ndarray]:
    """Closed-form values of the recorded columns for one sample (``tumble plot ... validation``):
    ``{column: [T, entity, ...]}`` from the store's ``params`` and the sample's ``inputs``."""
    it, ia = float(params["i_transverse"]), float(params["i_axial"])
    w0 = inputs.get("omega0")
    if w0 is None:
        w0 = [float(params["amplitude"]), 0.0, axial_rate(i_transverse=it, i_axial=ia, period=float(params["period"]))]
    cf = closed_form(t, omega0=np.asarray(w0, float).reshape(3), i_transverse=it, i_axial=ia)
    return {"body_omega": cf["omega_body"][:, None, :], "body_attitude": cf["attitude"][:, None, :]}
