"""Spatial algebra of articulated trees and the small dense solves of their dynamics (Featherstone,
*Rigid Body Dynamics Algorithms*, 2008, §2): the per-row scratch ``M[rows, 7, 6, 6]`` and
``V[rows, 8, 6]`` and its slots (:func:`new_scratch`), joint velocity counts, a joint placement's
rotation, the cross product matrix, motion and force transforms applied without forming 6 × 6
matrices, bias forces, spatial inertia, congruences, and Cholesky, SPD inverse and products on
the scratch. Plain loops on scalars, no allocation: CPU and GPU from one source
(``ecs.kernels.dual``). The algorithms that use them are :mod:`systems.multibody.algorithms`.
"""

from __future__ import annotations

import math
import numpy as np

from components.multibody import FREE, PRISMATIC, REVOLUTE, SPHERICAL
from ecs.attitude import quat_to_dcm
from ecs.kernels import dual
_q2d = quat_to_dcm.cpu

# scratch slots
MS, MIA, MU, MDI, MW, MT, ML = 0, 1, 2, 3, 4, 5, 6  # M[r, slot]: S, I^A, U, D^-1, placement, tmp, chol
M_SLOTS = 7
VV, VC, VPA, VU, VA, VQD, VQDD, VT = 0, 1, 2, 3, 4, 5, 6, 7  # V[r, slot]: v, c, p^A, u, a, q̇int, q̈int, tmp
V_SLOTS = 8


def new_scratch(rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Scratch arrays ``(M, V)`` for ``rows`` link rows."""
    return np.zeros((rows, M_SLOTS, 6, 6)), np.zeros((rows, V_SLOTS, 6))


# ------------------------------------------------------------------------------ small helpers
def _nv_nominal(kind):
    """Velocity coordinates of a joint kind (components.multibody.NV)."""
    if kind == REVOLUTE or kind == PRISMATIC:
        return 1
    if kind == SPHERICAL:
        return 3
    if kind == FREE:
        return 6
    return 0


nv_nominal = dual(_nv_nominal)
_nvn = nv_nominal.cpu


def _nv_of(kind, locked):
    """Velocity coordinates of a joint at run time (0 when fixed or locked)."""
    return 0 if locked else _nvn(kind)


nv_of = dual(_nv_of)
_nv = nv_of.cpu


def _dcm_into(q0, q1, q2, q3, R, i0, j0):
    """R[i0:i0+3, j0:j0+3] <- ``ecs.attitude.quat_to_dcm`` of (q0, q1, q2, q3) (v_out = R v_in)."""
    c00, c01, c02, c10, c11, c12, c20, c21, c22 = _q2d(q0, q1, q2, q3)
    R[i0 + 0, j0 + 0] = c00
    R[i0 + 0, j0 + 1] = c01
    R[i0 + 0, j0 + 2] = c02
    R[i0 + 1, j0 + 0] = c10
    R[i0 + 1, j0 + 1] = c11
    R[i0 + 1, j0 + 2] = c12
    R[i0 + 2, j0 + 0] = c20
    R[i0 + 2, j0 + 1] = c21
    R[i0 + 2, j0 + 2] = c22


dcm_into = dual(_dcm_into)
_q2m = dcm_into.cpu


def _set6(out, x0, x1, x2, x3, x4, x5):
    """out[0:6] <- (x0, ..., x5): a spatial vector held in registers, stored."""
    out[0] = x0
    out[1] = x1
    out[2] = x2
    out[3] = x3
    out[4] = x4
    out[5] = x5


set6 = dual(_set6)
_put6 = set6.cpu


def _cross_motion(v0, v1, v2, v3, v4, v5, m0, m1, m2, m3, m4, m5):
    """v ×m m (spatial motion cross product, RBDA eq. 2.31) of two motion vectors given by their entries."""
    return (v1 * m2 - v2 * m1, v2 * m0 - v0 * m2, v0 * m1 - v1 * m0,
            v1 * m5 - v2 * m4 + v4 * m2 - v5 * m1, v2 * m3 - v0 * m5 + v5 * m0 - v3 * m2,
            v0 * m4 - v1 * m3 + v3 * m1 - v4 * m0)


cross_motion = dual(_cross_motion)
_crossm = cross_motion.cpu


def _motion_in(W, m0, m1, m2, m3, m4, m5):
    """X m, the motion vector m = [ω; v] (parent coordinates) in link coordinates: with R
    (link → parent) = ``W[0:3, 0:3]`` and p (link origin, parent axes) = ``W[0:3, 3]``
    (:func:`_joint_setup`), ``X m = [Rᵀ ω; Rᵀ (v − p × ω)]`` (RBDA eq. 2.24 as a rotation and a
    translation: 24 multiply-adds instead of the 6×6 product's 36)."""
    px, py, pz = W[0, 3], W[1, 3], W[2, 3]
    u0 = m3 - (py * m2 - pz * m1)
    u1 = m4 - (pz * m0 - px * m2)
    u2 = m5 - (px * m1 - py * m0)
    return (W[0, 0] * m0 + W[1, 0] * m1 + W[2, 0] * m2, W[0, 1] * m0 + W[1, 1] * m1 + W[2, 1] * m2,
            W[0, 2] * m0 + W[1, 2] * m1 + W[2, 2] * m2, W[0, 0] * u0 + W[1, 0] * u1 + W[2, 0] * u2,
            W[0, 1] * u0 + W[1, 1] * u1 + W[2, 1] * u2, W[0, 2] * u0 + W[1, 2] * u1 + W[2, 2] * u2)


motion_in = dual(_motion_in)
_xm = motion_in.cpu


def _force_out(W, f0, f1, f2, f3, f4, f5):
    """Xᵀ f, the force f = [n; f] (link coordinates) in parent coordinates (W as in
    :func:`_motion_in`): ``[R n + p × (R f); R f]``."""
    px, py, pz = W[0, 3], W[1, 3], W[2, 3]
    g0 = W[0, 0] * f3 + W[0, 1] * f4 + W[0, 2] * f5
    g1 = W[1, 0] * f3 + W[1, 1] * f4 + W[1, 2] * f5
    g2 = W[2, 0] * f3 + W[2, 1] * f4 + W[2, 2] * f5
    return (W[0, 0] * f0 + W[0, 1] * f1 + W[0, 2] * f2 + py * g2 - pz * g1,
            W[1, 0] * f0 + W[1, 1] * f1 + W[1, 2] * f2 + pz * g0 - px * g2,
            W[2, 0] * f0 + W[2, 1] * f1 + W[2, 2] * f2 + px * g1 - py * g0, g0, g1, g2)


force_out = dual(_force_out)
_xtf = force_out.cpu


def _from_parent(W, ap, c, out):
    """out <- X ap + c (a parent's acceleration in link coordinates, plus c)."""
    x0, x1, x2, x3, x4, x5 = _xm(W, ap[0], ap[1], ap[2], ap[3], ap[4], ap[5])
    out[0] = x0 + c[0]
    out[1] = x1 + c[1]
    out[2] = x2 + c[2]
    out[3] = x3 + c[3]
    out[4] = x4 + c[4]
    out[5] = x5 + c[5]


from_parent = dual(_from_parent)
_from_parent_ = from_parent.cpu


def _to_parent_add(W, f, out):
    """out += Xᵀ f (a link's force added to its parent's, parent coordinates)."""
    y0, y1, y2, y3, y4, y5 = _xtf(W, f[0], f[1], f[2], f[3], f[4], f[5])
    out[0] += y0
    out[1] += y1
    out[2] += y2
    out[3] += y3
    out[4] += y4
    out[5] += y5


to_parent_add = dual(_to_parent_add)
_to_parent_add_ = to_parent_add.cpu


def _bias_add(m, c, I, v, out):
    """out += v ×* (I v), the velocity-product force of a link of mass m, CoM c and spatial inertia
    I (RBDA eq. 2.32, 2.63), in the form that holds no ``v_O × m v_O`` term: with ω, v_O the parts of
    v, ``n = ω × (I_O ω) + m c × (ω × v_O)``, ``f = m ω × (v_O + ω × c)`` (I_O: I's upper-left block).
    The literal product ``v ×* (I v)`` contains ``v_O × m v_O``, zero only to round-off: for a link
    in orbit (v_O ~ 7.6 km/s) that round-off is a spurious torque of ~m |v_O|² ε ~ 1e-7 N m per kg
    (measured: a torque-free spinning sphere's rate drifted by 1e-6 in 30 s)."""
    w0, w1, w2 = v[0], v[1], v[2]
    u0, u1, u2 = v[3], v[4], v[5]
    l0 = I[0, 0] * w0 + I[0, 1] * w1 + I[0, 2] * w2
    l1 = I[1, 0] * w0 + I[1, 1] * w1 + I[1, 2] * w2
    l2 = I[2, 0] * w0 + I[2, 1] * w1 + I[2, 2] * w2
    x0 = w1 * u2 - w2 * u1                   # ω × v_O
    x1 = w2 * u0 - w0 * u2
    x2 = w0 * u1 - w1 * u0
    c0, c1, c2 = c[0], c[1], c[2]
    y0 = w1 * c2 - w2 * c1                   # ω × c
    y1 = w2 * c0 - w0 * c2
    y2 = w0 * c1 - w1 * c0
    out[0] += w1 * l2 - w2 * l1 + m * (c1 * x2 - c2 * x1)
    out[1] += w2 * l0 - w0 * l2 + m * (c2 * x0 - c0 * x2)
    out[2] += w0 * l1 - w1 * l0 + m * (c0 * x1 - c1 * x0)
    out[3] += m * (x0 + w1 * y2 - w2 * y1)
    out[4] += m * (x1 + w2 * y0 - w0 * y2)
    out[5] += m * (x2 + w0 * y1 - w1 * y0)


bias_add = dual(_bias_add)
_bias = bias_add.cpu


def _spatial_inertia(m, c, Ic, I):
    """I (6×6) <- spatial inertia about the link origin of mass m, CoM c, inertia Ic about the CoM
    (RBDA eq. 2.63): [[Ic + m [c×][c×]ᵀ, m [c×]], [m [c×]ᵀ, m E]]."""
    cx, cy, cz = c[0], c[1], c[2]
    c2 = cx * cx + cy * cy + cz * cz
    for i in range(3):
        for j in range(3):
            I[i, j] = Ic[i, j] - m * c[i] * c[j]
            I[3 + i, 3 + j] = 0.0
        I[i, i] += m * c2
        I[3 + i, 3 + i] = m
    # m [c×] (upper right) and its transpose (lower left)
    I[0, 3] = 0.0
    I[0, 4] = -m * cz
    I[0, 5] = m * cy
    I[1, 3] = m * cz
    I[1, 4] = 0.0
    I[1, 5] = -m * cx
    I[2, 3] = -m * cy
    I[2, 4] = m * cx
    I[2, 5] = 0.0
    for i in range(3):
        for j in range(3):
            I[3 + j, i] = I[i, 3 + j]


spatial_inertia = dual(_spatial_inertia)
_sinertia = spatial_inertia.cpu


def _congruence_add(X, A, T, out):
    """out += Xᵀ A X (6×6; T is 6×6 scratch)."""
    for i in range(6):
        for j in range(6):
            s = 0.0
            for k in range(6):
                s += A[i, k] * X[k, j]
            T[i, j] = s
    for i in range(6):
        for j in range(6):
            s = 0.0
            for k in range(6):
                s += X[k, i] * T[k, j]
            out[i, j] += s


congruence_add = dual(_congruence_add)


def _times_rt(r00, r01, r02, r10, r11, r12, r20, r21, r22, a00, a01, a02, a10, a11, a12, a20, a21, a22):
    """A Rᵀ of 3×3 matrices given by their entries (row-major)."""
    return (a00 * r00 + a01 * r01 + a02 * r02, a00 * r10 + a01 * r11 + a02 * r12, a00 * r20 + a01 * r21 + a02 * r22,
            a10 * r00 + a11 * r01 + a12 * r02, a10 * r10 + a11 * r11 + a12 * r12, a10 * r20 + a11 * r21 + a12 * r22,
            a20 * r00 + a21 * r01 + a22 * r02, a20 * r10 + a21 * r11 + a22 * r12, a20 * r20 + a21 * r21 + a22 * r22)


times_rt = dual(_times_rt)
_art = times_rt.cpu


def _rot_congruence3(r00, r01, r02, r10, r11, r12, r20, r21, r22, a00, a01, a02, a10, a11, a12, a20, a21, a22):
    """R A Rᵀ of 3×3 matrices given by their entries (row-major)."""
    t00, t01, t02, t10, t11, t12, t20, t21, t22 = _art(r00, r01, r02, r10, r11, r12, r20, r21, r22,
                                                       a00, a01, a02, a10, a11, a12, a20, a21, a22)
    return (r00 * t00 + r01 * t10 + r02 * t20, r00 * t01 + r01 * t11 + r02 * t21, r00 * t02 + r01 * t12 + r02 * t22,
            r10 * t00 + r11 * t10 + r12 * t20, r10 * t01 + r11 * t11 + r12 * t21, r10 * t02 + r11 * t12 + r12 * t22,
            r20 * t00 + r21 * t10 + r22 * t20, r20 * t01 + r21 * t11 + r22 * t21, r20 * t02 + r21 * t12 + r22 * t22)


rot_congruence3 = dual(_rot_congruence3)
_rac = rot_congruence3.cpu


def _rot_congruence3_sym(r00, r01, r02, r10, r11, r12, r20, r21, r22, a00, a01, a02, a11, a12, a22):
    """R A Rᵀ of a symmetric 3×3 A given by its upper triangle; returns the result's upper triangle
    (00, 01, 02, 11, 12, 22)."""
    t00, t01, t02, t10, t11, t12, t20, t21, t22 = _art(r00, r01, r02, r10, r11, r12, r20, r21, r22,
                                                       a00, a01, a02, a01, a11, a12, a02, a12, a22)
    return (r00 * t00 + r01 * t10 + r02 * t20, r00 * t01 + r01 * t11 + r02 * t21, r00 * t02 + r01 * t12 + r02 * t22,
            r10 * t01 + r11 * t11 + r12 * t21, r10 * t02 + r11 * t12 + r12 * t22,
            r20 * t02 + r21 * t12 + r22 * t22)


rot_congruence3_sym = dual(_rot_congruence3_sym)
_racs = rot_congruence3_sym.cpu


def _congruence_rt_add_sym(W, a00, a01, a02, a03, a04, a05, a11, a12, a13, a14, a15, a22, a23, a24, a25, a33, a34,
                           a35, a44, a45, a55, out):
    """out += Xᵀ A X for the Plücker transform ``X = [Rᵀ 0; −Rᵀ[p×] Rᵀ]`` of a joint placement
    (R = ``W[0:3, 0:3]`` link → parent, p = ``W[0:3, 3]``: :func:`_joint_setup`) and a symmetric A
    given by its upper triangle ``a_ij`` (i ≤ j), in block form (RBDA §2.8: the transform as a
    rotation and a translation): with Ā_ij = R A_ij Rᵀ, P = [p×], C = Ā12 P and D = P Ā22,
    ``Xᵀ A X = [[Ā11 − C − Cᵀ − D P, Ā12 + D], [(Ā12 + D)ᵀ, Ā22]]``. Everything is held in
    registers: the caller's matrix is read once and ``out`` once (an in-memory version took 8–12 %
    longer on the multibody bench, the compiler reloading entries it could not prove unaliased)."""
    r00, r01, r02 = W[0, 0], W[0, 1], W[0, 2]
    r10, r11, r12 = W[1, 0], W[1, 1], W[1, 2]
    r20, r21, r22 = W[2, 0], W[2, 1], W[2, 2]
    px, py, pz = W[0, 3], W[1, 3], W[2, 3]
    b00, b01, b02, b11, b12, b22 = _racs(r00, r01, r02, r10, r11, r12, r20, r21, r22, a00, a01, a02, a11, a12, a22)
    m00, m01, m02, m10, m11, m12, m20, m21, m22 = _rac(r00, r01, r02, r10, r11, r12, r20, r21, r22,
                                                        a03, a04, a05, a13, a14, a15, a23, a24, a25)
    g00, g01, g02, g11, g12, g22 = _racs(r00, r01, r02, r10, r11, r12, r20, r21, r22, a33, a34, a35, a44, a45, a55)
    c00, c01, c02 = m01 * pz - m02 * py, m02 * px - m00 * pz, m00 * py - m01 * px      # C = Ā12 P
    c10, c11, c12 = m11 * pz - m12 * py, m12 * px - m10 * pz, m10 * py - m11 * px
    c20, c21, c22 = m21 * pz - m22 * py, m22 * px - m20 * pz, m20 * py - m21 * px
    d00, d01, d02 = py * g02 - pz * g01, py * g12 - pz * g11, py * g22 - pz * g12      # D = P Ā22 (Ā22 symmetric)
    d10, d11, d12 = pz * g00 - px * g02, pz * g01 - px * g12, pz * g02 - px * g22
    d20, d21, d22 = px * g01 - py * g00, px * g11 - py * g01, px * g12 - py * g02
    e00, e01, e02 = d01 * pz - d02 * py, d02 * px - d00 * pz, d00 * py - d01 * px      # D P (symmetric: its upper triangle)
    e11, e12 = d12 * px - d10 * pz, d10 * py - d11 * px
    e22 = d20 * py - d21 * px
    u = b00 - c00 - c00 - e00                     # Ā11 − C − Cᵀ − D P, symmetric
    out[0, 0] += u
    u = b01 - c01 - c10 - e01
    out[0, 1] += u
    out[1, 0] += u
    u = b02 - c02 - c20 - e02
    out[0, 2] += u
    out[2, 0] += u
    u = b11 - c11 - c11 - e11
    out[1, 1] += u
    u = b12 - c12 - c21 - e12
    out[1, 2] += u
    out[2, 1] += u
    u = b22 - c22 - c22 - e22
    out[2, 2] += u
    u00, u01, u02 = m00 + d00, m01 + d01, m02 + d02                                   # Ā12 + D
    u10, u11, u12 = m10 + d10, m11 + d11, m12 + d12
    u20, u21, u22 = m20 + d20, m21 + d21, m22 + d22
    out[0, 3] += u00
    out[0, 4] += u01
    out[0, 5] += u02
    out[1, 3] += u10
    out[1, 4] += u11
    out[1, 5] += u12
    out[2, 3] += u20
    out[2, 4] += u21
    out[2, 5] += u22
    out[3, 0] += u00
    out[4, 0] += u01
    out[5, 0] += u02
    out[3, 1] += u10
    out[4, 1] += u11
    out[5, 1] += u12
    out[3, 2] += u20
    out[4, 2] += u21
    out[5, 2] += u22
    out[3, 3] += g00
    out[3, 4] += g01
    out[3, 5] += g02
    out[4, 3] += g01
    out[4, 4] += g11
    out[4, 5] += g12
    out[5, 3] += g02
    out[5, 4] += g12
    out[5, 5] += g22


congruence_rt_add_sym = dual(_congruence_rt_add_sym)
_cong_sym = congruence_rt_add_sym.cpu


def _congruence_rt_add(W, A, out):
    """out += Xᵀ A X (:func:`_congruence_rt_add_sym`) of a symmetric 6×6 matrix A (its upper triangle is read)."""
    _cong_sym(W, A[0, 0], A[0, 1], A[0, 2], A[0, 3], A[0, 4], A[0, 5], A[1, 1], A[1, 2], A[1, 3], A[1, 4], A[1, 5],
              A[2, 2], A[2, 3], A[2, 4], A[2, 5], A[3, 3], A[3, 4], A[3, 5], A[4, 4], A[4, 5], A[5, 5], out)


congruence_rt_add = dual(_congruence_rt_add)
_cong = congruence_rt_add.cpu


def _cholesky(A, nv, L):
    """L[:nv, :nv] (lower triangle) <- the Cholesky factor of a symmetric positive-definite
    A[:nv, :nv]. A non-positive pivot gives NaN (the caller's row then fails)."""
    for j in range(nv):
        d = A[j, j]
        for k in range(j):
            d -= L[j, k] * L[j, k]
        d = math.sqrt(d) if d > 0.0 else math.nan
        L[j, j] = d
        for i in range(j + 1, nv):
            s = A[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / d


cholesky = dual(_cholesky)
_chol = cholesky.cpu


def _cholesky_solve(L, nv, y, x):
    """x[:nv] <- A⁻¹ y[:nv] with L the Cholesky factor of A (:func:`_cholesky`); x may be y."""
    for i in range(nv):                    # L z = y
        s = y[i]
        for k in range(i):
            s -= L[i, k] * x[k]
        x[i] = s / L[i, i]
    for i in range(nv - 1, -1, -1):        # Lᵀ x = z
        s = x[i]
        for k in range(i + 1, nv):
            s -= L[k, i] * x[k]
        x[i] = s / L[i, i]


cholesky_solve = dual(_cholesky_solve)
_chol_solve = cholesky_solve.cpu


def _spd_inverse(A, nv, L, out):
    """out[:nv, :nv] <- A[:nv, :nv]⁻¹ for a symmetric positive-definite A, through its Cholesky
    factor (L: scratch). A non-positive pivot gives NaN (the caller's row then fails)."""
    _chol(A, nv, L)
    for col in range(nv):
        # forward: L y = e_col (y stored in out[:, col])
        for i in range(nv):
            s = 1.0 if i == col else 0.0
            for k in range(i):
                s -= L[i, k] * out[k, col]
            out[i, col] = s / L[i, i]
        # backward: Lᵀ x = y
        for i in range(nv - 1, -1, -1):
            s = out[i, col]
            for k in range(i + 1, nv):
                s -= L[k, i] * out[k, col]
            out[i, col] = s / L[i, i]


spd_inverse = dual(_spd_inverse)
_spdinv = spd_inverse.cpu


def _matvec(A, x, out):
    """out <- A x (A: 6×6)."""
    for i in range(6):
        s = 0.0
        for j in range(6):
            s += A[i, j] * x[j]
        out[i] = s


matvec = dual(_matvec)
_mv = matvec.cpu


def _mul_sub(A, S, nv, out):
    """out[:, :nv] <- A S (A: 6×6, S: 6×nv)."""
    for i in range(6):
        for j in range(nv):
            s = 0.0
            for l in range(6):
                s += A[i, l] * S[l, j]
            out[i, j] = s


mul_sub = dual(_mul_sub)
_mulsub = mul_sub.cpu


def _project(S, nv, F, nf, out, oi, oj):
    """out[oi + i, oj + j] <- (Sᵀ F)[i, j] for i < nv, j < nf (S: 6×nv, F: 6×nf)."""
    for i in range(nv):
        for j in range(nf):
            s = 0.0
            for l in range(6):
                s += S[l, i] * F[l, j]
            out[oi + i, oj + j] = s


project = dual(_project)
_proj = project.cpu
