"""Attitude kinematics and conversions: quaternions, direction cosine matrices, Euler angles.

Seeds implemented
-----------------
* Seed 002 §2.2.3.1, Eq. 1.18 — quaternion kinematics ``q̇ = ½ Ω(ω_B) q``
  (:data:`quat_derivative`). Written out, Eq. 1.18 is exactly ``q̇ = ½ q ⊗ (0, ω_B)`` in the
  conventions below.
* Seed 002 §2.2.3.2, Eq. 1.20–1.21 — Z-Y-X (yaw ψ, pitch θ, roll φ) Euler-angle rates from the
  body angular velocity (:data:`euler321_rates`), for the seed's Euler-angle attitude mode;
  :data:`euler321_to_quat` starts a quaternion from those angles.
* Seed 002 §2.2.4, Eq. 1.22–1.25 — frame transformations. Eq. 1.23 (MATLAB ``quat2dcm``) is the
  *passive* matrix ``R_e^b = C(q)ᵀ`` (inertial → body) of the very same quaternion we store, so
  seed 002's quaternion and ``body_attitude`` are numerically identical. Eq. 1.24 is
  ``R_e^b = R₁(φ) R₂(θ) R₃(ψ)`` with passive elementary matrices; its transpose
  ``R_b^e = R_z(ψ) R_y(θ) R_x(φ) = euler_to_dcm((ψ, θ, φ), "321")``. **Misprint:** Eq. 1.25 as
  printed is not a rotation matrix (its middle factor is orthogonal only for θ = 0: its
  determinant is cos 2θ); we use the transpose of Eq. 1.24 instead.
* Seed 003 (GUNNS ``GunnsDynSingleRigidEom``) — the six "aerodynamic" Euler sequences used to
  initialise and output the rotational state, with Roll = 1 = x, Pitch = 2 = y, Yaw = 3 = z:
  RPY = 123, RYP = 132, PYR = 231, PRY = 213, YRP = 312, YPR = 321.

Conventions (fixed project-wide)
--------------------------------
* Quaternions are **scalar-first**: ``q = (w, x, y, z)``, arrays shaped ``[..., 4]``.
* ``body_attitude`` ``q`` rotates body-frame components into inertial components:
  ``v_I = q ⊗ (0, v_B) ⊗ q*``. This equals scipy's
  ``Rotation.from_quat(q, scalar_first=True).apply(v_B)``. The DCM ``C = quat_to_dcm(q)``
  satisfies ``v_I = C @ v_B``; its columns are the body axes written in the inertial frame.
* Angular velocity ``ω`` is expressed in the **body** frame: ``q̇ = ½ q ⊗ (0, ω_B)``.
* Quaternion product is the Hamilton product; ``a ⊗ b`` applies ``b`` first, then ``a``
  (``quat_to_dcm(a ⊗ b) = quat_to_dcm(a) @ quat_to_dcm(b)``).
* Euler sequence ``"ijk"`` (digits 1 = x, 2 = y, 3 = z) means **intrinsic** rotations: the body
  frame is obtained from the inertial frame by rotating about axis ``i`` by ``angles[0]``, then
  about the *new* ``j`` by ``angles[1]``, then about the *new* ``k`` by ``angles[2]``. Then
  ``C = R_i(angles[0]) @ R_j(angles[1]) @ R_k(angles[2])`` (active elementary rotations), which
  equals scipy ``Rotation.from_euler("IJK", angles)`` with *uppercase* letters. Unlike scipy,
  lowercase letters are accepted as a spelling of the same intrinsic sequence ("xyz" ≡ "XYZ"
  ≡ "1-2-3" ≡ "123"); extrinsic sequences are never implied.
  All 12 sequences: Tait–Bryan 123, 132, 213, 231, 312, 321 (middle angle in [−π/2, π/2]) and
  proper Euler 121, 131, 212, 232, 313, 323 (middle angle in [0, π]); first and third angles
  in [−π, π].
* Seed 002's Z-Y-X angles (roll φ, pitch θ, yaw ψ): body from inertial = ``R_z(ψ)`` then
  ``R_y(θ)`` then ``R_x(φ)``, i.e. sequence ``"321"`` with angles ordered **(ψ, θ, φ)** in the
  general API: ``euler321_to_quat(φ, θ, ψ) == ±euler_to_quat((ψ, θ, φ), "321")``.
* Gimbal lock (middle angle within 1e-7 rad of ±π/2 for Tait–Bryan, of 0 or π for proper
  sequences): the third angle is set to exactly 0 and the first angle carries the whole
  rotation about the locked axis — the same rule as scipy's ``as_euler`` (without its warning).
  The returned angles still represent the rotation.

Two layers
----------
1. Scalar device kernels, each written once as a plain Python function on floats (no arrays, no
   allocation, no ``raise``) and compiled with :func:`ecs.kernels.dual`: ``kernel.cpu`` is an
   inlined ``njit`` function for ``prange`` drivers, ``kernel.gpu`` a CUDA device function. The
   Python sources are the underscore-prefixed functions (``_quat_rotate`` …); the public names
   (``quat_rotate`` …) are the compiled kernels. Inside ``njit``/``cuda.jit`` code, bind the
   compiled function to a module global first (``_rotate = quat_rotate.gpu``) and call that:
   numba cannot resolve attribute access on a Python object inside a kernel.
2. A vectorised numpy API for input/output on arrays with leading batch axes
   (``[..., 4]``, ``[..., 3, 3]``, ``[..., 3]``). The quaternion algebra kernels
   (:data:`quat_multiply`, :data:`quat_rotate`, :data:`quat_rotate_inverse`,
   :data:`quat_normalize`, :data:`quat_derivative`) and the conversions :data:`quat_to_dcm`,
   :data:`dcm_to_quat` are :class:`ArrayKernel` objects: calling them
   runs the numpy version on arrays, ``.cpu``/``.gpu`` are the scalar kernels — one name, both
   layers. Where possible the numpy version evaluates the very same Python source elementwise.

No scipy is used here; scipy's ``Rotation`` is the independent reference in
``tests/test_attitude.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ecs.errors import InputError
from ecs.kernels import DualKernel, dual, dual_call

__all__ = [
    "AERODYNAMIC_SEQUENCES",
    "EULER_SEQUENCES",
    "GIMBAL_LOCK_TOL",
    "ArrayKernel",
    "check_quaternion",
    "cross",
    "cross_call",
    "dcm_to_euler",
    "dcm_to_quat",
    "dot3",
    "euler321_rates",
    "euler321_to_quat",
    "euler_to_dcm",
    "euler_to_quat",
    "normalize_sequence",
    "quat_canonical",
    "quat_conjugate",
    "quat_derivative",
    "quat_multiply",
    "quat_normalize",
    "quat_rotate",
    "quat_rotate_call",
    "quat_rotate_inverse",
    "quat_rotate_inverse_call",
    "quat_to_dcm",
    "quat_to_euler",
    "unit_quat_to_dcm",
]

#: The 12 canonical intrinsic Euler sequences: 6 Tait–Bryan, then 6 proper Euler.
EULER_SEQUENCES: tuple[str, ...] = (
    "123", "132", "213", "231", "312", "321",
    "121", "131", "212", "232", "313", "323",
)  # fmt: skip

#: GUNNS "aerodynamic" sequence names (seed 003): Roll = 1 = x, Pitch = 2 = y, Yaw = 3 = z.
AERODYNAMIC_SEQUENCES: dict[str, str] = {
    "RPY": "123",
    "RYP": "132",
    "PYR": "231",
    "PRY": "213",
    "YRP": "312",
    "YPR": "321",
}

#: Gimbal-lock threshold [rad] on the distance of the middle angle to its singular value
#: (±π/2 Tait–Bryan, 0 or π proper); the same value scipy uses.
GIMBAL_LOCK_TOL = 1e-7

_SEQUENCE_RULE = (
    "must be one of the 12 intrinsic Euler sequences "
    + ", ".join(EULER_SEQUENCES)
    + " (digits 1=x, 2=y, 3=z; also written '1-2-3', 'XYZ' or 'xyz', always intrinsic) "
    + "or a GUNNS aerodynamic name "
    + ", ".join(AERODYNAMIC_SEQUENCES)
    + " (Roll=x, Pitch=y, Yaw=z)"
)


# ------------------------------------------------------------------------------------------------
# Scalar kernel sources (one source, two targets: docs/design.md §2)
# ------------------------------------------------------------------------------------------------


def _quat_multiply(a0, a1, a2, a3, b0, b1, b2, b3):
    """Hamilton product ``a ⊗ b`` of scalar-first quaternions; returns ``(w, x, y, z)``."""
    return (
        a0 * b0 - a1 * b1 - a2 * b2 - a3 * b3,
        a0 * b1 + a1 * b0 + a2 * b3 - a3 * b2,
        a0 * b2 - a1 * b3 + a2 * b0 + a3 * b1,
        a0 * b3 + a1 * b2 - a2 * b1 + a3 * b0,
    )


def _quat_rotate(q0, q1, q2, q3, x, y, z):
    """Body → inertial: ``q ⊗ (0, v) ⊗ q*`` for a unit ``q``; returns ``(x, y, z)``.

    Uses ``t = 2 u × v``, ``v' = v + w t + u × t`` (``u`` the vector part), valid for unit ``q``.
    """
    tx = 2.0 * (q2 * z - q3 * y)
    ty = 2.0 * (q3 * x - q1 * z)
    tz = 2.0 * (q1 * y - q2 * x)
    return (
        x + q0 * tx + (q2 * tz - q3 * ty),
        y + q0 * ty + (q3 * tx - q1 * tz),
        z + q0 * tz + (q1 * ty - q2 * tx),
    )


def _quat_rotate_inverse(q0, q1, q2, q3, x, y, z):
    """Inertial → body: ``q* ⊗ (0, v) ⊗ q`` for a unit ``q``; returns ``(x, y, z)``."""
    tx = 2.0 * (q3 * y - q2 * z)
    ty = 2.0 * (q1 * z - q3 * x)
    tz = 2.0 * (q2 * x - q1 * y)
    return (
        x + q0 * tx + (q3 * ty - q2 * tz),
        y + q0 * ty + (q1 * tz - q3 * tx),
        z + q0 * tz + (q2 * tx - q1 * ty),
    )


def _quat_normalize(q0, q1, q2, q3):
    """``q / |q|``; NaNs when ``|q|`` is zero, infinite or NaN (flag such rows downstream)."""
    n = math.sqrt(q0 * q0 + q1 * q1 + q2 * q2 + q3 * q3)
    if n > 0.0 and n < math.inf:
        inv = 1.0 / n
        return (q0 * inv, q1 * inv, q2 * inv, q3 * inv)
    nan = math.nan
    return (nan, nan, nan, nan)


def _quat_derivative(q0, q1, q2, q3, wx, wy, wz):
    """Seed 002 Eq. 1.18: ``q̇ = ½ Ω(ω_B) q = ½ q ⊗ (0, ω_B)``; returns ``(ẇ, ẋ, ẏ, ż)``."""
    return (
        0.5 * (-q1 * wx - q2 * wy - q3 * wz),
        0.5 * (q0 * wx + q2 * wz - q3 * wy),
        0.5 * (q0 * wy + q3 * wx - q1 * wz),
        0.5 * (q0 * wz + q1 * wy - q2 * wx),
    )


def _euler321_rates(phi, theta, psi, wx, wy, wz):
    """Seed 002 Eq. 1.21: Z-Y-X Euler-angle rates from body rates; returns ``(φ̇, θ̇, ψ̇)``."""
    sphi = math.sin(phi)
    cphi = math.cos(phi)
    ctheta = math.cos(theta)
    ttheta = math.sin(theta) / ctheta
    a = sphi * wy + cphi * wz
    return (
        wx + ttheta * a,
        cphi * wy - sphi * wz,
        a / ctheta,
    )


def _euler321_to_quat(phi, theta, psi):
    """Quaternion of Z-Y-X angles: ``q = q_z(ψ) ⊗ q_y(θ) ⊗ q_x(φ)``; returns ``(w, x, y, z)``."""
    cr = math.cos(0.5 * phi)
    sr = math.sin(0.5 * phi)
    cp = math.cos(0.5 * theta)
    sp = math.sin(0.5 * theta)
    cy = math.cos(0.5 * psi)
    sy = math.sin(0.5 * psi)
    return (
        cy * cp * cr + sy * sp * sr,
        cy * cp * sr - sy * sp * cr,
        cy * sp * cr + sy * cp * sr,
        sy * cp * cr - cy * sp * sr,
    )


def _unit_quat_to_dcm(w, x, y, z):
    """Direction cosine matrix ``C`` (``v_I = C v_B``) of a unit quaternion; returns its nine
    elements row by row ``(C00, C01, C02, C10, …, C22)``."""
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    return (
        1.0 - 2.0 * (yy + zz), 2.0 * (xy - wz), 2.0 * (xz + wy),
        2.0 * (xy + wz), 1.0 - 2.0 * (xx + zz), 2.0 * (yz - wx),
        2.0 * (xz - wy), 2.0 * (yz + wx), 1.0 - 2.0 * (xx + yy),
    )  # fmt: skip


def _quat_to_dcm(q0, q1, q2, q3):
    """``C`` of ``q / |q|`` (NaNs for a zero, infinite or NaN norm), row by row.

    ``q`` is normalised here, not assumed unit: RK stages carry quaternions a little off the unit
    sphere, and a non-orthogonal ``C`` turns the multibody free joint's velocity conversions
    (``C Cᵀ ≠ E``) into force-like errors (measured: 356 m after one LEO orbit for a link tumbling
    at 0.02 rad/s, 10 s steps; 2 cm once normalised)."""
    w, x, y, z = _qnormalize(q0, q1, q2, q3)
    return _unit_dcm(w, x, y, z)


def _dcm_to_quat(c00, c01, c02, c10, c11, c12, c20, c21, c22):
    """Unit quaternion of the rotation matrix ``C`` (``v_I = C v_B``) by Shepperd's method (the
    largest of ``w², x², y², z²`` is the pivot, ties to the first), sign chosen with ``w >= 0``;
    returns ``(w, x, y, z)``."""
    t = c00 + c11 + c22
    if t >= c00 and t >= c11 and t >= c22:
        w = 0.5 * math.sqrt(1.0 + t)
        f = 0.25 / w
        x = (c21 - c12) * f
        y = (c02 - c20) * f
        z = (c10 - c01) * f
    elif c00 >= c11 and c00 >= c22:
        x = 0.5 * math.sqrt(1.0 + 2.0 * c00 - t)
        f = 0.25 / x
        w = (c21 - c12) * f
        y = (c01 + c10) * f
        z = (c02 + c20) * f
    elif c11 >= c22:
        y = 0.5 * math.sqrt(1.0 + 2.0 * c11 - t)
        f = 0.25 / y
        w = (c02 - c20) * f
        x = (c01 + c10) * f
        z = (c12 + c21) * f
    else:
        z = 0.5 * math.sqrt(1.0 + 2.0 * c22 - t)
        f = 0.25 / z
        w = (c10 - c01) * f
        x = (c02 + c20) * f
        y = (c12 + c21) * f
    if w < 0.0:
        return -w, -x, -y, -z
    return w, x, y, z


def _cross(ax, ay, az, bx, by, bz):
    """``a × b``; returns ``(x, y, z)``."""
    return (ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx)


def _dot3(ax, ay, az, bx, by, bz):
    """``a · b``."""
    return ax * bx + ay * by + az * bz


# ------------------------------------------------------------------------------------------------
# Kernels that are also numpy functions
# ------------------------------------------------------------------------------------------------


@dataclass
class ArrayKernel(DualKernel):
    """A :class:`~ecs.kernels.DualKernel` that is also a vectorised numpy function.

    ``kernel.cpu`` / ``kernel.gpu`` / ``kernel.py`` are the scalar device kernel (floats in,
    tuple of floats out); ``kernel(arrays...)`` calls :attr:`array`, the numpy version on arrays
    with leading batch axes (its docstring is this object's ``__doc__``).
    """

    array: Callable | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.array is not None:
            self.__doc__ = self.array.__doc__

    def __call__(self, *args, **kwargs):
        return self.array(*args, **kwargs)


def _with_array(fn: Callable, array: Callable) -> ArrayKernel:
    kernel = dual(fn)
    return ArrayKernel(py=kernel.py, cpu=kernel.cpu, array=array)


def _last_axis(a, n: int, field: str) -> np.ndarray:
    """``a`` as float64 with a last axis of length ``n``; InputError otherwise."""
    try:
        arr = np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(field, a, f"must be numeric, shape [..., {n}]") from exc
    if arr.ndim == 0 or arr.shape[-1] != n:
        raise InputError(field, a, f"must have shape [..., {n}], got {arr.shape}")
    return arr


def _matrices(a, field: str) -> np.ndarray:
    """``a`` as float64 with trailing shape (3, 3); InputError otherwise."""
    try:
        arr = np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(field, a, "must be numeric, shape [..., 3, 3]") from exc
    if arr.ndim < 2 or arr.shape[-2:] != (3, 3):
        raise InputError(field, a, f"must have shape [..., 3, 3], got {arr.shape}")
    return arr


def _components(a: np.ndarray):
    """Tuple of the last-axis components of ``a`` (views)."""
    return tuple(a[..., k] for k in range(a.shape[-1]))


def _quat_multiply_array(a, b) -> np.ndarray:
    """Hamilton product ``a ⊗ b`` (apply ``b`` first, then ``a``).

    Args:
        a: quaternions, shape [..., 4], scalar-first.
        b: quaternions, shape [..., 4], scalar-first; broadcast against ``a``.

    Returns:
        The products, shape [..., 4] (broadcast shape). Not normalised.
    """
    qa, qb = np.broadcast_arrays(_last_axis(a, 4, "quaternion a"), _last_axis(b, 4, "quaternion b"))
    return np.stack(_quat_multiply(*_components(qa), *_components(qb)), axis=-1)


def _quat_rotate_array(q, v) -> np.ndarray:
    """Rotate body-frame vectors into the inertial frame: ``v_I = q ⊗ (0, v_B) ⊗ q*``.

    Args:
        q: unit quaternions (``body_attitude``), shape [..., 4], scalar-first.
        v: body-frame vectors, shape [..., 3], any unit; broadcast against ``q``.

    Returns:
        Inertial-frame vectors, shape [..., 3], same unit as ``v``. ``q`` is assumed unit (not
        renormalised); equals ``quat_to_dcm(q) @ v`` for unit ``q``.
    """
    qq = _last_axis(q, 4, "quaternion")
    vv = _last_axis(v, 3, "vector")
    shape = np.broadcast_shapes(qq.shape[:-1], vv.shape[:-1])
    qq = np.broadcast_to(qq, (*shape, 4))
    vv = np.broadcast_to(vv, (*shape, 3))
    return np.stack(_quat_rotate(*_components(qq), *_components(vv)), axis=-1)


def _quat_rotate_inverse_array(q, v) -> np.ndarray:
    """Rotate inertial-frame vectors into the body frame: ``v_B = q* ⊗ (0, v_I) ⊗ q``.

    Args:
        q: unit quaternions (``body_attitude``), shape [..., 4], scalar-first.
        v: inertial-frame vectors, shape [..., 3]; broadcast against ``q``.

    Returns:
        Body-frame vectors, shape [..., 3]; equals ``quat_to_dcm(q).T @ v`` for unit ``q``.
    """
    qq = _last_axis(q, 4, "quaternion")
    vv = _last_axis(v, 3, "vector")
    shape = np.broadcast_shapes(qq.shape[:-1], vv.shape[:-1])
    qq = np.broadcast_to(qq, (*shape, 4))
    vv = np.broadcast_to(vv, (*shape, 3))
    return np.stack(_quat_rotate_inverse(*_components(qq), *_components(vv)), axis=-1)


def _quat_normalize_array(q) -> np.ndarray:
    """``q / |q|``.

    Args:
        q: quaternions, shape [..., 4].

    Returns:
        Unit quaternions, shape [..., 4]; rows of zero, infinite or NaN norm become NaN (as the
        scalar kernel does). The sign is kept (no canonicalisation).
    """
    qq = _last_axis(q, 4, "quaternion")
    n = np.sqrt(np.sum(qq * qq, axis=-1, keepdims=True))
    ok = (n > 0.0) & np.isfinite(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(ok, qq / np.where(ok, n, 1.0), np.nan)


def _quat_derivative_array(q, omega_body) -> np.ndarray:
    """Quaternion rate ``q̇ = ½ q ⊗ (0, ω_B)`` (seed 002 Eq. 1.18).

    Args:
        q: attitude quaternions, shape [..., 4], scalar-first.
        omega_body: angular velocity in the body frame [rad/s], shape [..., 3]; broadcast.

    Returns:
        ``q̇`` [1/s], shape [..., 4].
    """
    qq = _last_axis(q, 4, "quaternion")
    ww = _last_axis(omega_body, 3, "omega_body")
    shape = np.broadcast_shapes(qq.shape[:-1], ww.shape[:-1])
    qq = np.broadcast_to(qq, (*shape, 4))
    ww = np.broadcast_to(ww, (*shape, 3))
    return np.stack(_quat_derivative(*_components(qq), *_components(ww)), axis=-1)


#: ``a ⊗ b``. Kernel: ``quat_multiply.cpu/gpu(a0, a1, a2, a3, b0, b1, b2, b3) -> (w, x, y, z)``;
#: arrays: ``quat_multiply(a[..., 4], b[..., 4]) -> [..., 4]``.
quat_multiply = _with_array(_quat_multiply, _quat_multiply_array)

#: Body → inertial for unit ``q``. Kernel: ``quat_rotate.cpu/gpu(q0, q1, q2, q3, x, y, z) ->
#: (x, y, z)``; arrays: ``quat_rotate(q[..., 4], v_body[..., 3]) -> v_inertial[..., 3]``.
quat_rotate = _with_array(_quat_rotate, _quat_rotate_array)

#: Inertial → body for unit ``q``. Kernel: ``quat_rotate_inverse.cpu/gpu(q0..q3, x, y, z) ->
#: (x, y, z)``; arrays: ``quat_rotate_inverse(q[..., 4], v_inertial[..., 3]) -> v_body[..., 3]``.
quat_rotate_inverse = _with_array(_quat_rotate_inverse, _quat_rotate_inverse_array)

#: ``q / |q|`` (NaN for zero/non-finite norm). Kernel: ``quat_normalize.cpu/gpu(q0..q3) ->
#: (w, x, y, z)``; arrays: ``quat_normalize(q[..., 4]) -> [..., 4]``.
quat_normalize = _with_array(_quat_normalize, _quat_normalize_array)

#: Seed 002 Eq. 1.18, ``q̇ = ½ q ⊗ (0, ω_B)`` [1/s]. Kernel: ``quat_derivative.cpu/gpu(q0..q3,
#: wx, wy, wz) -> (ẇ, ẋ, ẏ, ż)`` with ω in rad/s, body frame; arrays:
#: ``quat_derivative(q[..., 4], omega_body[..., 3]) -> [..., 4]``.
quat_derivative = _with_array(_quat_derivative, _quat_derivative_array)

#: Seed 002 Eq. 1.21, ``euler321_rates.cpu/gpu(phi, theta, psi, wx, wy, wz) -> (φ̇, θ̇, ψ̇)``:
#: rates [rad/s] of roll φ, pitch θ, yaw ψ [rad] (Z-Y-X, body from inertial = R_z(ψ) R_y(θ)
#: R_x(φ)) from the body angular velocity [rad/s]. ``psi`` is unused (the rates do not depend on
#: it) but kept so the state triple passes through unchanged. Singular at θ = ±π/2 (cos θ = 0:
#: the rates blow up; no check, no raise).
euler321_rates: DualKernel = dual(_euler321_rates)

#: ``euler321_to_quat.cpu/gpu(phi, theta, psi) -> (w, x, y, z)``: the ``body_attitude`` of
#: seed 002's Z-Y-X angles (roll φ, pitch θ, yaw ψ) [rad], ``q = q_z(ψ) ⊗ q_y(θ) ⊗ q_x(φ)``.
#: Same rotation as ``euler_to_quat((psi, theta, phi), "321")`` (note the reversed order);
#: not sign-canonicalised (w may be negative).
euler321_to_quat: DualKernel = dual(_euler321_to_quat)

#: ``cross.cpu/gpu(ax, ay, az, bx, by, bz) -> (x, y, z)``: ``a × b``.
cross: DualKernel = dual(_cross)

#: ``dot3.cpu/gpu(ax, ay, az, bx, by, bz) -> float``: ``a · b``.
dot3: DualKernel = dual(_dot3)


# ------------------------------------------------------------------------------------------------
# Vectorised numpy API
# ------------------------------------------------------------------------------------------------


def quat_conjugate(q) -> np.ndarray:
    """Conjugate ``q* = (w, −x, −y, −z)`` (the inverse rotation for a unit ``q``).

    Args:
        q: quaternions, shape [..., 4], scalar-first.

    Returns:
        Conjugates, shape [..., 4].
    """
    qq = _last_axis(q, 4, "quaternion")
    return qq * np.array([1.0, -1.0, -1.0, -1.0])


def quat_canonical(q) -> np.ndarray:
    """The sign-canonical representative of ``±q``: first non-zero of ``(w, x, y, z)`` positive.

    In particular ``w >= 0``; ties at ``w == 0`` are broken by ``x``, then ``y``, then ``z``,
    so the result is unique and deterministic.

    Args:
        q: quaternions, shape [..., 4], scalar-first.

    Returns:
        ``q`` or ``−q``, shape [..., 4].
    """
    qq = _last_axis(q, 4, "quaternion")
    flip = np.zeros(qq.shape[:-1], dtype=bool)
    decided = np.zeros(qq.shape[:-1], dtype=bool)
    for k in range(4):
        c = qq[..., k]
        flip |= ~decided & (c < 0.0)
        decided |= c != 0.0
    return np.where(flip[..., None], -qq, qq)


def _quat_to_dcm_array(q) -> np.ndarray:
    """Direction cosine matrix ``C`` with ``v_I = C @ v_B`` (body → inertial).

    ``C`` is the transpose of seed 002 Eq. 1.23 (``R_e^b``, inertial → body) for the same
    quaternion. ``q`` is normalised first, so only its direction matters.

    Args:
        q: ``body_attitude`` quaternions, shape [..., 4], scalar-first; non-zero.

    Returns:
        Rotation matrices, shape [..., 3, 3] (NaN for a zero quaternion).
    """
    c = _unit_quat_to_dcm(*_components(_quat_normalize_array(q)))
    return np.stack([np.stack(c[3 * i:3 * i + 3], axis=-1) for i in range(3)], axis=-2)


def _dcm_to_quat_array(dcm) -> np.ndarray:
    """Quaternion of a rotation matrix by Shepperd's method (robust for every rotation).

    Shepperd (1978): of the four squared magnitudes ``4w² = 1 + tr C``,
    ``4x² = 1 + 2C₀₀ − tr C``, ``4y²``, ``4z²``, the largest is used as the pivot, so no division
    by a small number occurs. Each pivot gives the vector ``4 q_k q``; it is normalised, which
    also projects a slightly non-orthogonal ``C`` onto a nearby rotation.

    Args:
        dcm: rotation matrices ``C`` (``v_I = C @ v_B``), shape [..., 3, 3].

    Returns:
        Unit quaternions, shape [..., 4], scalar-first, sign-canonical (``w >= 0``, see
        :func:`quat_canonical`).
    """
    c = _matrices(dcm, "dcm")
    c00, c01, c02 = c[..., 0, 0], c[..., 0, 1], c[..., 0, 2]
    c10, c11, c12 = c[..., 1, 0], c[..., 1, 1], c[..., 1, 2]
    c20, c21, c22 = c[..., 2, 0], c[..., 2, 1], c[..., 2, 2]
    tr = c00 + c11 + c22
    candidates = np.stack(
        [
            np.stack([1.0 + tr, c21 - c12, c02 - c20, c10 - c01], axis=-1),
            np.stack([c21 - c12, 1.0 + 2.0 * c00 - tr, c01 + c10, c02 + c20], axis=-1),
            np.stack([c02 - c20, c01 + c10, 1.0 + 2.0 * c11 - tr, c12 + c21], axis=-1),
            np.stack([c10 - c01, c02 + c20, c12 + c21, 1.0 + 2.0 * c22 - tr], axis=-1),
        ],
        axis=-2,
    )  # [..., pivot, 4]
    pivot = np.argmax(np.stack([tr, c00, c11, c22], axis=-1), axis=-1)
    v = np.take_along_axis(candidates, pivot[..., None, None], axis=-2)[..., 0, :]
    return quat_canonical(_quat_normalize_array(v))


#: ``C`` with ``v_I = C v_B``. Kernel: ``quat_to_dcm.cpu/gpu(q0..q3) -> (C00, C01, …, C22)`` (row
#: by row, normalised on the fly); arrays: ``quat_to_dcm(q[..., 4]) -> C[..., 3, 3]``, the same
#: source evaluated elementwise on the normalised quaternions.
unit_quat_to_dcm: DualKernel = dual(_unit_quat_to_dcm)
_unit_dcm = unit_quat_to_dcm.cpu
_qnormalize = quat_normalize.cpu
quat_to_dcm = _with_array(_quat_to_dcm, _quat_to_dcm_array)

#: Shepperd's quaternion of ``C``, ``w >= 0``. Kernel: ``dcm_to_quat.cpu/gpu(C00, C01, …, C22) ->
#: (w, x, y, z)``; arrays: ``dcm_to_quat(C[..., 3, 3]) -> q[..., 4]`` (pivot by ``argmax``, then
#: normalised, which also projects a slightly non-orthogonal ``C`` onto a nearby rotation).
dcm_to_quat = _with_array(_dcm_to_quat, _dcm_to_quat_array)


def normalize_sequence(seq) -> str:
    """Canonical digit string of an intrinsic Euler sequence.

    Accepted spellings (case-insensitive, separators ``-``, ``_``, space, ``,`` ignored):
    digits ``"123"``/``"1-2-3"``/``123`` (int), axis letters ``"XYZ"``/``"xyz"`` (always
    intrinsic, unlike scipy where lowercase means extrinsic), and the GUNNS aerodynamic names
    RPY = 123, RYP = 132, PYR = 231, PRY = 213, YRP = 312, YPR = 321 (seed 003).

    Args:
        seq: the sequence as a string or an int.

    Returns:
        One of :data:`EULER_SEQUENCES`, e.g. ``"321"``.

    Raises:
        InputError: field ``"euler sequence"``, for anything else, listing the accepted forms.
    """
    if isinstance(seq, (int, np.integer)) and not isinstance(seq, bool):
        text = str(int(seq))
    elif isinstance(seq, str):
        text = seq
    else:
        raise InputError("euler sequence", seq, _SEQUENCE_RULE)
    compact = "".join(ch for ch in text.upper() if ch not in "-_ ,")
    if compact in AERODYNAMIC_SEQUENCES:
        return AERODYNAMIC_SEQUENCES[compact]
    digits = compact.translate(str.maketrans("XYZ", "123"))
    if digits in EULER_SEQUENCES:
        return digits
    raise InputError("euler sequence", seq, _SEQUENCE_RULE)


def _axes(seq) -> tuple[int, int, int]:
    s = normalize_sequence(seq)
    return int(s[0]) - 1, int(s[1]) - 1, int(s[2]) - 1


def _elementary_dcm(axis: int, angle: np.ndarray) -> np.ndarray:
    """Active rotation matrices about coordinate ``axis`` by ``angle`` [rad], shape [..., 3, 3]."""
    c, s = np.cos(angle), np.sin(angle)
    p, r = (axis + 1) % 3, (axis + 2) % 3
    m = np.zeros((*np.shape(angle), 3, 3))
    m[..., axis, axis] = 1.0
    m[..., p, p] = c
    m[..., p, r] = -s
    m[..., r, p] = s
    m[..., r, r] = c
    return m


def _elementary_quat(axis: int, angle: np.ndarray) -> np.ndarray:
    """Quaternions of a rotation about coordinate ``axis`` by ``angle`` [rad], shape [..., 4]."""
    q = np.zeros((*np.shape(angle), 4))
    q[..., 0] = np.cos(0.5 * angle)
    q[..., 1 + axis] = np.sin(0.5 * angle)
    return q


def euler_to_quat(angles, sequence) -> np.ndarray:
    """``body_attitude`` quaternion of intrinsic Euler angles.

    ``q = q_i(angles[0]) ⊗ q_j(angles[1]) ⊗ q_k(angles[2])`` for sequence ``"ijk"`` (see the
    module conventions); equals scipy ``Rotation.from_euler("IJK", angles)`` up to sign.

    Args:
        angles: Euler angles [rad], shape [..., 3], in the order of the sequence.
        sequence: any spelling accepted by :func:`normalize_sequence` ("321", "YPR", "ZYX", …).

    Returns:
        Unit quaternions, shape [..., 4], scalar-first, sign-canonical (``w >= 0``).

    Raises:
        InputError: unknown sequence or wrong shape.
    """
    i, j, k = _axes(sequence)
    a = _last_axis(angles, 3, "euler angles")
    q = _quat_multiply_array(_elementary_quat(i, a[..., 0]), _elementary_quat(j, a[..., 1]))
    q = _quat_multiply_array(q, _elementary_quat(k, a[..., 2]))
    return quat_canonical(q)


def euler_to_dcm(angles, sequence) -> np.ndarray:
    """Rotation matrix ``C = R_i(angles[0]) @ R_j(angles[1]) @ R_k(angles[2])`` (``v_I = C v_B``).

    For seed 002's Z-Y-X angles, ``euler_to_dcm((ψ, θ, φ), "321")`` is ``R_b^e``, the transpose
    of Eq. 1.24 (Eq. 1.25 as printed is a misprint).

    Args:
        angles: Euler angles [rad], shape [..., 3], in the order of the sequence.
        sequence: any spelling accepted by :func:`normalize_sequence`.

    Returns:
        Rotation matrices, shape [..., 3, 3].

    Raises:
        InputError: unknown sequence or wrong shape.
    """
    i, j, k = _axes(sequence)
    a = _last_axis(angles, 3, "euler angles")
    return (
        _elementary_dcm(i, a[..., 0]) @ _elementary_dcm(j, a[..., 1]) @ _elementary_dcm(k, a[..., 2])
    )


def dcm_to_euler(dcm, sequence) -> np.ndarray:
    """Intrinsic Euler angles of a rotation matrix.

    For ``C = R_i(a) R_j(b) R_k(c)`` with parity ``ε = +1`` when ``j`` follows ``i`` cyclically
    (``(i, j)`` in {(x, y), (y, z), (z, x)}), ``−1`` otherwise:

    * Tait–Bryan (``i, j, k`` distinct): ``C[i, k] = ε sin b``;
      ``b = atan2(ε C[i,k], hypot(C[i,i], C[i,j])) ∈ [−π/2, π/2]``,
      ``a = atan2(−ε C[j,k], C[k,k])``, ``c = atan2(−ε C[i,j], C[i,i])``.
    * proper (``k == i``, ``m`` the remaining axis, ``ε`` of ``(i, j)``): ``C[i, i] = cos b``;
      ``b = atan2(hypot(C[i,j], C[i,m]), C[i,i]) ∈ [0, π]``,
      ``a = atan2(C[j,i], −ε C[m,i])``, ``c = atan2(C[i,j], ε C[i,m])``.

    Gimbal lock (``b`` within :data:`GIMBAL_LOCK_TOL` of ±π/2 resp. 0 or π): only ``a ± c`` is
    defined. As scipy does, the third angle is set to exactly 0 and the first is read from
    ``R_i(a) = C R_j(b)ᵀ``; the angles still reproduce ``C`` (to about ``GIMBAL_LOCK_TOL``
    times the lost third angle, and to round-off at exact lock).

    Args:
        dcm: rotation matrices ``C`` (``v_I = C @ v_B``), shape [..., 3, 3].
        sequence: any spelling accepted by :func:`normalize_sequence`.

    Returns:
        Angles [rad], shape [..., 3]: first and third in [−π, π], middle in [−π/2, π/2]
        (Tait–Bryan) or [0, π] (proper).

    Raises:
        InputError: unknown sequence or wrong shape.
    """
    i, j, k = _axes(sequence)
    c = _matrices(dcm, "dcm")
    eps = 1.0 if j == (i + 1) % 3 else -1.0
    if i != k:  # Tait–Bryan
        b = np.arctan2(eps * c[..., i, k], np.hypot(c[..., i, i], c[..., i, j]))
        a = np.arctan2(-eps * c[..., j, k], c[..., k, k])
        g = np.arctan2(-eps * c[..., i, j], c[..., i, i])
        locked = (0.5 * np.pi - np.abs(b)) <= GIMBAL_LOCK_TOL
    else:  # proper Euler
        m = 3 - i - j
        b = np.arctan2(np.hypot(c[..., i, j], c[..., i, m]), c[..., i, i])
        a = np.arctan2(c[..., j, i], -eps * c[..., m, i])
        g = np.arctan2(c[..., i, j], eps * c[..., i, m])
        locked = np.minimum(b, np.pi - b) <= GIMBAL_LOCK_TOL
    if np.any(locked):
        # Third angle := 0, so C = R_i(a) R_j(b) and R_i(a) = C R_j(b)^T = C R_j(-b).
        ri = c @ _elementary_dcm(j, -b)
        p, r = (i + 1) % 3, (i + 2) % 3
        a_locked = np.arctan2(ri[..., r, p], ri[..., p, p])
        a = np.where(locked, a_locked, a)
        g = np.where(locked, 0.0, g)
    return np.stack([a, b, g], axis=-1)


def quat_to_euler(q, sequence) -> np.ndarray:
    """Intrinsic Euler angles of ``body_attitude`` quaternions (via :func:`quat_to_dcm`).

    At gimbal lock the third angle is set to exactly 0 (as scipy's ``as_euler`` does, without
    its warning); see :func:`dcm_to_euler`. Equals scipy
    ``Rotation.from_quat(q, scalar_first=True).as_euler("IJK")``.

    Args:
        q: quaternions, shape [..., 4], scalar-first (normalised first; sign irrelevant).
        sequence: any spelling accepted by :func:`normalize_sequence`.

    Returns:
        Angles [rad], shape [..., 3] (ranges as in :func:`dcm_to_euler`).

    Raises:
        InputError: unknown sequence or wrong shape.
    """
    seq = normalize_sequence(sequence)  # fail on the sequence before any work
    return dcm_to_euler(quat_to_dcm(q), seq)


def check_quaternion(q, *, field: str, tol: float = 1e-6) -> np.ndarray:
    """Validate user-supplied attitude quaternions before any work starts.

    Args:
        q: quaternions, shape [4] or [..., 4], scalar-first ``(w, x, y, z)``.
        field: the name the user knows the input by (``"body_attitude of entity 3"``); batch
            inputs report the first offending index as ``field[i, j]``.
        tol: allowed ``|‖q‖ − 1|`` (dimensionless).

    Returns:
        ``q`` as a float64 array (not renormalised).

    Raises:
        InputError: wrong shape, a non-finite component, a zero norm, or ``|‖q‖ − 1| > tol``
            (the message gives the norm).
    """
    arr = _last_axis(q, 4, field)

    def where(mask: np.ndarray) -> tuple[str, list[float], int | tuple]:
        idx = tuple(int(t) for t in np.argwhere(mask)[0])
        name = field if arr.ndim == 1 else f"{field}[{', '.join(map(str, idx))}]"
        return name, [float(x) for x in arr[idx]], idx

    finite = np.all(np.isfinite(arr), axis=-1)
    if not np.all(finite):
        name, value, _ = where(~finite)
        raise InputError(name, value, "quaternion components must be finite (no NaN or inf)")
    norm = np.sqrt(np.sum(arr * arr, axis=-1))
    if np.any(norm == 0.0):
        name, value, _ = where(norm == 0.0)
        raise InputError(name, value, "quaternion must have a non-zero norm (got norm = 0)")
    off = np.abs(norm - 1.0) > tol
    if np.any(off):
        name, value, idx = where(off)
        n = float(norm[idx])
        raise InputError(
            name,
            value,
            f"must be a unit quaternion (scalar-first w, x, y, z): norm = {n:.17g}, "
            f"|norm - 1| = {abs(n - 1.0):.3g} > tol = {tol:g}",
        )
    return arr


# The vector kernels' CPU twins above are inlined at numba-IR level at every call site, which made
# the large contact and deployment kernels take minutes to compile; their callers take these plain
# calls instead (the same sources, ecs.kernels.dual_call).
cross_call = dual_call(cross.py)
quat_rotate_call = dual_call(quat_rotate.py)
quat_rotate_inverse_call = dual_call(quat_rotate_inverse.py)
