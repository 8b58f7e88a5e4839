"""Articulated-tree dynamics kernels: spatial algebra, forward kinematics, RNEA, CRBA and the O(n)
articulated-body algorithm (ABA), after R. Featherstone, *Rigid Body Dynamics Algorithms*,
Springer, 2008 (RBDA: §2 spatial algebra, Table 5.1 RNEA, Table 6.2 CRBA, Table 7.1 ABA).

Every kernel works on one sample's links, rows ``b .. b + n - 1`` of the link table (parent-first
order, :mod:`components.multibody`), with plain loops on scalars and element indexing: no
allocation, so the same sources can be compiled for CUDA (``ecs.kernels.dual``). Scratch lives in
two per-row arrays the caller owns: ``M[rows, 7, 6, 6]`` (matrices) and ``V[rows, 8, 6]`` (vectors),
see :func:`new_scratch`.

Spatial vectors are Featherstone's, in link body coordinates at the link origin: motion
``[ω; v]``, force ``[n; f]``. ``X`` maps motion vectors from parent to link coordinates, ``Xᵀ``
maps forces from link to parent coordinates; it is never formed as a 6×6 matrix, but applied as the
joint placement's rotation and translation (slot ``M[r, MW]``, :func:`_motion_in`,
:func:`_force_out`, :func:`_congruence_rt_add`). A root's parent frame is the inertial frame.

Internal joint velocities: a free joint's state velocity is (velocity in joint axes, body rate),
the ABA works with its body-axes twist ``u = (Rᵀ v, ω)`` (Pinocchio's free-flyer coordinates), so
its motion subspace is constant; inputs and outputs are converted at the boundary
(``p̈ = R (u̇_v + ω × u_v)``). Locked joints are treated as fixed (no velocity coordinate).

External forces ``fext[r, 6]`` are spatial forces ``[n; f]`` on the link, body axes, about the
link origin. ``a0[6]`` is the spatial acceleration of the inertial frame used as the roots'
parent: ``[0, 0, 0, -g]`` puts a uniform gravity field ``g`` (inertial axes) on every link
(RBDA §5.3); zero in orbit, where gravity comes in per link through ``fext``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from components.multibody import FIXED, FREE, LAW_FIELDS, PRISMATIC, QD_SLOTS, Q_SLOTS, REVOLUTE, SPHERICAL
from ecs.attitude import dcm_to_quat, quat_derivative, quat_normalize, quat_rotate_inverse, quat_to_dcm
from ecs.kernels import SampleDriver, cpu_jit, cpu_parallel, dual
from ecs.status import Status
from ecs.terms import row_terms_none, sample_terms_none, terms_active_none
from systems.gravity.kernels import gradient_torque

_qdot = quat_derivative.cpu
_qnorm = quat_normalize.cpu
_rot_inv = quat_rotate_inverse.cpu
_q2d = quat_to_dcm.cpu
_d2q = dcm_to_quat.cpu
_gg_torque = gradient_torque.cpu
_terms = row_terms_none            # the world's row terms: ecs.terms.fuse_terms links copies against them
_terms_on = terms_active_none
_sample_terms = sample_terms_none  # the world's sample term (facet contact between links): ecs.terms.SampleTerm

# scratch slots
MS, MIA, MU, MDI, MW, MT, ML = 0, 1, 2, 3, 4, 5, 6  # M[r, slot]: S, I^A, U, D^-1, placement, tmp, chol
M_SLOTS = 7
VV, VC, VPA, VU, VA, VQD, VQDD, VT = 0, 1, 2, 3, 4, 5, 6, 7  # V[r, slot]: v, c, p^A, u, a, q̇int, q̈int, tmp
V_SLOTS = 8
#: Joint-law parameters, ``law[r, LAW_*]``: the columns they come from (components.multibody).
LAW_COLUMNS = tuple("joint_" + f for f in LAW_FIELDS)
(LAW_VISCOUS, LAW_COULOMB, LAW_SLIP, LAW_STIFFNESS, LAW_DAMPING, LAW_REST, LAW_LOWER, LAW_UPPER, LAW_LIMIT_STIFFNESS,
 LAW_LIMIT_DAMPING) = range(len(LAW_COLUMNS))
#: ``row_status`` code of a FAILED row.
FAILED_CODE = int(Status.FAILED)
#: Width of the per-link motion array of :func:`_link_motion`.
ACC_WIDTH = 18
#: State size per link for integration: q (7) then qd (6).
STATE = Q_SLOTS + QD_SLOTS


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


def _crm(v, m, out):
    """out <- v ×m m (spatial motion cross product, RBDA eq. 2.31)."""
    out[0] = v[1] * m[2] - v[2] * m[1]
    out[1] = v[2] * m[0] - v[0] * m[2]
    out[2] = v[0] * m[1] - v[1] * m[0]
    out[3] = v[1] * m[5] - v[2] * m[4] + v[4] * m[2] - v[5] * m[1]
    out[4] = v[2] * m[3] - v[0] * m[5] + v[5] * m[0] - v[3] * m[2]
    out[5] = v[0] * m[4] - v[1] * m[3] + v[3] * m[1] - v[4] * m[0]


crm = dual(_crm)
_crm_ = crm.cpu


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


def _congruence_rt_add(W, A, T, out):
    """out += Xᵀ A X for the Plücker transform ``X = [Rᵀ 0; −Rᵀ[p×] Rᵀ]`` of a joint placement
    (R = ``W[0:3, 0:3]`` link → parent, p = ``W[0:3, 3]``: :func:`_joint_setup`) and a symmetric A,
    in block form (RBDA §2.8: the transform as a rotation and a translation): with Ā_ij = R A_ij Rᵀ,
    P = [p×], C = Ā12 P and D = P Ā22, ``Xᵀ A X = [[Ā11 − C − Cᵀ − D P, Ā12 + D], [(Ā12 + D)ᵀ, Ā22]]``
    — 216 multiply-adds instead of the 432 of the two 6×6 products (:func:`_congruence_add`,
    kept for the general case). T: 6×6 scratch."""
    for blk in range(3):                       # Ā11 → T[0:3, 0:3], Ā12 → T[0:3, 3:6], Ā22 → T[3:6, 3:6]
        i0 = 3 if blk == 2 else 0
        j0 = 0 if blk == 0 else 3
        for i in range(3):                     # A_blk Rᵀ into T[3:6, 0:3]
            for j in range(3):
                T[3 + i, j] = A[i0 + i, j0] * W[j, 0] + A[i0 + i, j0 + 1] * W[j, 1] + A[i0 + i, j0 + 2] * W[j, 2]
        for i in range(3):
            for j in range(3):
                T[i0 + i, j0 + j] = W[i, 0] * T[3, j] + W[i, 1] * T[4, j] + W[i, 2] * T[5, j]
    px, py, pz = W[0, 3], W[1, 3], W[2, 3]
    for i in range(3):                         # C = Ā12 P into T[3:6, 0:3]
        m0, m1, m2 = T[i, 3], T[i, 4], T[i, 5]
        T[3 + i, 0] = m1 * pz - m2 * py
        T[3 + i, 1] = m2 * px - m0 * pz
        T[3 + i, 2] = m0 * py - m1 * px
    for i in range(3):
        d0 = d1 = d2 = 0.0                     # row i of D = P Ā22
        if i == 0:
            d0, d1, d2 = py * T[5, 3] - pz * T[4, 3], py * T[5, 4] - pz * T[4, 4], py * T[5, 5] - pz * T[4, 5]
        elif i == 1:
            d0, d1, d2 = pz * T[3, 3] - px * T[5, 3], pz * T[3, 4] - px * T[5, 4], pz * T[3, 5] - px * T[5, 5]
        else:
            d0, d1, d2 = px * T[4, 3] - py * T[3, 3], px * T[4, 4] - py * T[3, 4], px * T[4, 5] - py * T[3, 5]
        e0 = d1 * pz - d2 * py                 # row i of D P
        e1 = d2 * px - d0 * pz
        e2 = d0 * py - d1 * px
        out[i, 0] += T[i, 0] - T[3 + i, 0] - T[3, i] - e0
        out[i, 1] += T[i, 1] - T[3 + i, 1] - T[4, i] - e1
        out[i, 2] += T[i, 2] - T[3 + i, 2] - T[5, i] - e2
        u0 = T[i, 3] + d0
        u1 = T[i, 4] + d1
        u2 = T[i, 5] + d2
        out[i, 3] += u0
        out[i, 4] += u1
        out[i, 5] += u2
        out[3, i] += u0
        out[4, i] += u1
        out[5, i] += u2
    for i in range(3):
        for j in range(3):
            out[3 + i, 3 + j] += T[3 + i, 3 + j]


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


# ------------------------------------------------------------------------------ joint model
def _joint_setup(r, kind, axis, offset, rotation, q, qd, locked, M, V):
    """Row r: X (parent → link), S (6 × nv), the joint rotation R_J and the parent → link placement
    (``M[r, MW]``: [0:3, 0:3] link→parent rotation, [0:3, 3] link origin in parent axes,
    [3:6, 0:3] R_J link→joint), and the internal joint velocity ``V[r, VQD]``. Returns nv."""
    k = kind[r]
    W = M[r, MW]
    a0, a1, a2 = axis[r, 0], axis[r, 1], axis[r, 2]
    pj0 = 0.0
    pj1 = 0.0
    pj2 = 0.0
    if k == REVOLUTE:
        th = q[r, 0]
        cs = math.cos(th)
        sn = math.sin(th)
        cc = 1.0 - cs
        W[3, 0] = cs + cc * a0 * a0
        W[3, 1] = cc * a0 * a1 - sn * a2
        W[3, 2] = cc * a0 * a2 + sn * a1
        W[4, 0] = cc * a1 * a0 + sn * a2
        W[4, 1] = cs + cc * a1 * a1
        W[4, 2] = cc * a1 * a2 - sn * a0
        W[5, 0] = cc * a2 * a0 - sn * a1
        W[5, 1] = cc * a2 * a1 + sn * a0
        W[5, 2] = cs + cc * a2 * a2
    elif k == SPHERICAL:
        _q2m(q[r, 0], q[r, 1], q[r, 2], q[r, 3], W, 3, 0)
    elif k == FREE:
        pj0, pj1, pj2 = q[r, 0], q[r, 1], q[r, 2]
        _q2m(q[r, 3], q[r, 4], q[r, 5], q[r, 6], W, 3, 0)
    else:
        for i in range(3):
            for j in range(3):
                W[3 + i, j] = 1.0 if i == j else 0.0
        if k == PRISMATIC:
            pj0, pj1, pj2 = a0 * q[r, 0], a1 * q[r, 0], a2 * q[r, 0]
    # R_T (joint → parent) into the tmp slot, then R = R_T R_J, p = offset + R_T p_J
    if rotation[r, 0] == 1.0 and rotation[r, 1] == 0.0 and rotation[r, 2] == 0.0 and rotation[r, 3] == 0.0:
        for i in range(3):                      # R_T = E (the usual joint frame): R = R_J, p = offset + p_J
            for j in range(3):
                W[i, j] = W[3 + i, j]
        W[0, 3] = offset[r, 0] + pj0
        W[1, 3] = offset[r, 1] + pj1
        W[2, 3] = offset[r, 2] + pj2
    else:
        T = M[r, MT]
        _q2m(rotation[r, 0], rotation[r, 1], rotation[r, 2], rotation[r, 3], T, 0, 0)
        for i in range(3):
            for j in range(3):
                W[i, j] = T[i, 0] * W[3, j] + T[i, 1] * W[4, j] + T[i, 2] * W[5, j]
            W[i, 3] = offset[r, i] + T[i, 0] * pj0 + T[i, 1] * pj1 + T[i, 2] * pj2
    # S and the internal velocity: the joint's own nv columns and slots (every reader stops at nv)
    nv = _nv(k, locked[r])
    S = M[r, MS]
    for i in range(6):
        for j in range(nv):
            S[i, j] = 0.0
    if nv == 0:
        return 0
    if k == REVOLUTE:
        S[0, 0] = a0
        S[1, 0] = a1
        S[2, 0] = a2
        V[r, VQD, 0] = qd[r, 0]
    elif k == PRISMATIC:
        S[3, 0] = a0
        S[4, 0] = a1
        S[5, 0] = a2
        V[r, VQD, 0] = qd[r, 0]
    elif k == SPHERICAL:
        for i in range(3):
            S[i, i] = 1.0
            V[r, VQD, i] = qd[r, i]
    else:  # FREE: u = (R_Jᵀ v, ω); S maps u to [ω; v_b]
        for i in range(3):
            S[3 + i, i] = 1.0
            S[i, 3 + i] = 1.0
            V[r, VQD, i] = W[3, i] * qd[r, 0] + W[4, i] * qd[r, 1] + W[5, i] * qd[r, 2]
            V[r, VQD, 3 + i] = qd[r, 3 + i]
    return nv


joint_setup = dual(_joint_setup)
_setup = joint_setup.cpu


def _tau_internal(r, kind, nv, tau, M, out):
    """out[:nv] <- the applied generalised force of row r in internal coordinates (free joint:
    force from joint axes to body axes)."""
    if nv == 6 and kind[r] == FREE:
        W = M[r, MW]
        for i in range(3):
            out[i] = W[3, i] * tau[r, 0] + W[4, i] * tau[r, 1] + W[5, i] * tau[r, 2]
            out[3 + i] = tau[r, 3 + i]
    else:
        for i in range(nv):
            out[i] = tau[r, i]


tau_internal = dual(_tau_internal)
_tauint = tau_internal.cpu


def _velocities(b, n, parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia, M, V):
    """Pass 1 shared by the algorithms: joint set-up, link velocities v (VV), velocity-product
    accelerations c = v ×m v_J (VC), spatial inertias (MIA)."""
    for k in range(n):
        r = b + k
        nv = _setup(r, kind, axis, offset, rotation, q, qd, locked, M, V)
        p = parent[r]
        S = M[r, MS]
        for i in range(6):                   # v_J = S q̇ (tmp vector), v = X v_parent + v_J
            vj = 0.0
            for j in range(nv):
                vj += S[i, j] * V[r, VQD, j]
            V[r, VT, i] = vj
        if p >= 0:
            _from_parent_(M[r, MW], V[p, VV], V[r, VT], V[r, VV])
        else:
            for i in range(6):
                V[r, VV, i] = V[r, VT, i]
        if p >= 0:
            _crm_(V[r, VV], V[r, VT], V[r, VC])
        else:                            # a root: v = v_J, so c = v_J ×m v_J = 0 (exactly, not by round-off)
            for i in range(6):
                V[r, VC, i] = 0.0
        _sinertia(mass[r], com[r], inertia[r], M[r, MIA])


velocities = dual(_velocities, inline=False)
_vel = velocities.cpu


def _qdd_out(r, kind, nv, M, V, qdd):
    """qdd[r] <- row r's internal joint acceleration in state units (free: p̈ in joint axes)."""
    for i in range(QD_SLOTS):
        qdd[r, i] = 0.0
    if nv == 6 and kind[r] == FREE:
        W = M[r, MW]
        # p̈ = R_J (u̇_v + ω × u_v)
        ux, uy, uz = V[r, VQD, 0], V[r, VQD, 1], V[r, VQD, 2]
        wx, wy, wz = V[r, VQD, 3], V[r, VQD, 4], V[r, VQD, 5]
        ax = V[r, VQDD, 0] + wy * uz - wz * uy
        ay = V[r, VQDD, 1] + wz * ux - wx * uz
        az = V[r, VQDD, 2] + wx * uy - wy * ux
        for i in range(3):
            qdd[r, i] = W[3 + i, 0] * ax + W[3 + i, 1] * ay + W[3 + i, 2] * az
            qdd[r, 3 + i] = V[r, VQDD, 3 + i]
    else:
        for i in range(nv):
            qdd[r, i] = V[r, VQDD, i]


qdd_out = dual(_qdd_out)
_qddout = qdd_out.cpu


# ------------------------------------------------------------------------------ ABA (RBDA Table 7.1)
def _aba_solve(b, n, parent, kind, locked, mass, com, tau, fext, a0, qdd, M, V):
    """Passes 2 and 3 of the ABA (after :func:`_velocities`): ``qdd[r, :]`` (state units, module
    docstring) from the applied joint forces ``tau`` and the external link forces ``fext``.

    A 1-DOF joint takes the scalar form of the algorithm (D = sᵀ I^A s, no matrix inverse); a free
    or spherical joint the matrix form, with D⁻¹ from its Cholesky factor. A root keeps only the
    factor (``M[r, ML]``) and solves with it in pass 3: it has no parent to pass I^a to."""
    for k in range(n):
        r = b + k
        # p^A = v ×* (I v) − f^ext
        for i in range(6):
            V[r, VPA, i] = -fext[r, i]
        _bias(mass[r], com[r], M[r, MIA], V[r, VV], V[r, VPA])
    for k in range(n - 1, -1, -1):
        r = b + k
        nv = _nv(kind[r], locked[r])
        p = parent[r]
        IA = M[r, MIA]
        S = M[r, MS]
        U = M[r, MU]
        Di = M[r, MDI]
        T = M[r, MT]
        pA = V[r, VPA]
        u = V[r, VU]
        if nv == 1:                              # U = I^A s, D = sᵀ U, u = τ − sᵀ p^A (scalars)
            o = 0 if kind[r] == REVOLUTE else 3  # s = [axis; 0] (revolute) or [0; axis] (prismatic)
            s0, s1, s2 = S[o, 0], S[o + 1, 0], S[o + 2, 0]
            for i in range(6):
                U[i, 0] = IA[i, o] * s0 + IA[i, o + 1] * s1 + IA[i, o + 2] * s2
            d = s0 * U[o, 0] + s1 * U[o + 1, 0] + s2 * U[o + 2, 0]
            uu = tau[r, 0] - (s0 * pA[o] + s1 * pA[o + 1] + s2 * pA[o + 2])
            di = 1.0 / d if d > 0.0 else math.nan   # (a non-positive pivot: NaN, the row fails)
            Di[0, 0] = di
            u[0] = uu
            if p >= 0:                           # Ia = IA − U Uᵀ/D (in place), pa = pA + Ia c + U u/D
                ud = uu * di
                for i in range(6):
                    ui = U[i, 0] * di
                    for j in range(6):
                        IA[i, j] -= ui * U[j, 0]
                for i in range(6):
                    acc = pA[i] + U[i, 0] * ud
                    for j in range(6):
                        acc += IA[i, j] * V[r, VC, j]
                    V[r, VT, i] = acc
        elif nv == 6 and kind[r] == FREE:        # S swaps the halves (u = (v_b, ω)): U and D are I^A's blocks
            for i in range(6):
                for j in range(3):
                    U[i, j] = IA[i, 3 + j]
                    U[i, 3 + j] = IA[i, j]
            for i in range(3):
                for j in range(6):
                    T[i, j] = U[3 + i, j]
                    T[3 + i, j] = U[i, j]
        elif nv > 0:
            _mulsub(IA, S, nv, U)                # U = I^A S
            _proj(S, nv, U, nv, T, 0, 0)         # D = Sᵀ U into T
        if nv > 1:                               # (the matrix form)
            _tauint(r, kind, nv, tau, M, u)
            for i in range(nv):
                acc = u[i]
                for l in range(6):
                    acc -= S[l, i] * pA[l]
                u[i] = acc
            if p < 0:
                _chol(T, nv, M[r, ML])           # a root: the factor only (pass 3 solves with it)
            else:
                _spdinv(T, nv, M[r, ML], Di)
                # Ia = IA − U D⁻¹ Uᵀ (in place), pa = pA + Ia c + U D⁻¹ u (into the tmp vector)
                for i in range(6):
                    for j in range(nv):
                        acc = 0.0
                        for l in range(nv):
                            acc += U[i, l] * Di[l, j]
                        T[i, j] = acc             # T = U D⁻¹ (6 × nv)
                for i in range(6):
                    for j in range(6):
                        acc = 0.0
                        for l in range(nv):
                            acc += T[i, l] * U[j, l]
                        IA[i, j] -= acc
                for i in range(6):
                    acc = pA[i]
                    for j in range(6):
                        acc += IA[i, j] * V[r, VC, j]
                    for l in range(nv):
                        acc += T[i, l] * u[l]
                    V[r, VT, i] = acc
        elif nv == 0 and p >= 0:                 # fixed or locked: Ia = IA, pa = pA + IA c
            for i in range(6):
                acc = pA[i]
                for j in range(6):
                    acc += IA[i, j] * V[r, VC, j]
                V[r, VT, i] = acc
        if p >= 0:
            _cong(M[r, MW], IA, T, M[p, MIA])
            _to_parent_add_(M[r, MW], V[r, VT], V[p, VPA])
    for k in range(n):
        r = b + k
        p = parent[r]
        S = M[r, MS]
        U = M[r, MU]
        Di = M[r, MDI]
        a = V[r, VA]
        if p >= 0:
            _from_parent_(M[r, MW], V[p, VA], V[r, VC], a)
        else:
            _from_parent_(M[r, MW], a0, V[r, VC], a)
        nv = _nv(kind[r], locked[r])
        for i in range(nv):                       # u − Uᵀ a into the tmp vector
            acc = V[r, VU, i]
            for l in range(6):
                acc -= U[l, i] * a[l]
            V[r, VT, i] = acc
        if nv == 1:
            V[r, VQDD, 0] = Di[0, 0] * V[r, VT, 0]
        elif nv > 0 and p < 0:
            _chol_solve(M[r, ML], nv, V[r, VT], V[r, VQDD])
        else:
            for i in range(nv):
                acc = 0.0
                for j in range(nv):
                    acc += Di[i, j] * V[r, VT, j]
                V[r, VQDD, i] = acc
        for i in range(6):
            acc = 0.0
            for j in range(nv):
                acc += S[i, j] * V[r, VQDD, j]
            a[i] += acc
        _qddout(r, kind, nv, M, V, qdd)


aba_solve = dual(_aba_solve, inline=False)
_abas = aba_solve.cpu


def _aba(b, n, parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia, tau, fext, a0, qdd, M, V):
    """Forward dynamics of one sample's links (RBDA Table 7.1): ``qdd[r, :]`` (state units, module
    docstring) from the state, the applied joint forces ``tau`` and the external link forces
    ``fext`` (body axes, about the link origin)."""
    _vel(b, n, parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia, M, V)
    _abas(b, n, parent, kind, locked, mass, com, tau, fext, a0, qdd, M, V)


aba = dual(_aba, inline=False)



# ------------------------------------------------------------------------------ RNEA (RBDA Table 5.1)
def _rnea(b, n, parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia, qdd, fext, a0, tau_out,
          M, V):
    """Inverse dynamics of one sample's links: ``tau_out[r, :]`` (state units: a free joint's force
    in joint axes, then its torque in body axes) that produces the accelerations ``qdd``."""
    _vel(b, n, parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia, M, V)
    for k in range(n):
        r = b + k
        p = parent[r]
        nv = _nv(kind[r], locked[r])
        S = M[r, MS]
        if nv == 6 and kind[r] == FREE:           # u̇_v = R_Jᵀ p̈ − ω × u_v
            W = M[r, MW]
            ux, uy, uz = V[r, VQD, 0], V[r, VQD, 1], V[r, VQD, 2]
            wx, wy, wz = V[r, VQD, 3], V[r, VQD, 4], V[r, VQD, 5]
            cr0 = wy * uz - wz * uy
            cr1 = wz * ux - wx * uz
            cr2 = wx * uy - wy * ux
            for i in range(3):
                V[r, VQDD, i] = W[3, i] * qdd[r, 0] + W[4, i] * qdd[r, 1] + W[5, i] * qdd[r, 2]
                V[r, VQDD, 3 + i] = qdd[r, 3 + i]
            V[r, VQDD, 0] -= cr0
            V[r, VQDD, 1] -= cr1
            V[r, VQDD, 2] -= cr2
        else:
            for i in range(nv):
                V[r, VQDD, i] = qdd[r, i]
        if p >= 0:
            _from_parent_(M[r, MW], V[p, VA], V[r, VC], V[r, VA])
        else:
            _from_parent_(M[r, MW], a0, V[r, VC], V[r, VA])
        for i in range(6):
            s = 0.0
            for j in range(nv):
                s += S[i, j] * V[r, VQDD, j]
            V[r, VA, i] += s
        _mv(M[r, MIA], V[r, VA], V[r, VPA])
        for i in range(6):
            V[r, VPA, i] -= fext[r, i]
        _bias(mass[r], com[r], M[r, MIA], V[r, VV], V[r, VPA])
    for k in range(n - 1, -1, -1):
        r = b + k
        p = parent[r]
        nv = _nv(kind[r], locked[r])
        S = M[r, MS]
        for i in range(QD_SLOTS):
            tau_out[r, i] = 0.0
        for i in range(nv):
            s = 0.0
            for l in range(6):
                s += S[l, i] * V[r, VPA, l]
            V[r, VT, i] = s
        if nv == 6 and kind[r] == FREE:
            W = M[r, MW]
            for i in range(3):
                tau_out[r, i] = W[3 + i, 0] * V[r, VT, 0] + W[3 + i, 1] * V[r, VT, 1] + W[3 + i, 2] * V[r, VT, 2]
                tau_out[r, 3 + i] = V[r, VT, 3 + i]
        else:
            for i in range(nv):
                tau_out[r, i] = V[r, VT, i]
        if p >= 0:
            _to_parent_add_(M[r, MW], V[r, VPA], V[p, VPA])


rnea = dual(_rnea, inline=False)


# ------------------------------------------------------------------------------ CRBA (RBDA Table 6.2)
def _dof_offset(b, k, kind, locked):
    """Index of link k's first velocity coordinate in the sample's joint-space vector."""
    o = 0
    for j in range(k):
        o += _nv(kind[b + j], locked[b + j])
    return o


dof_offset = dual(_dof_offset)
_dofo = dof_offset.cpu


def _crba(b, n, parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia, H, M, V):
    """Joint-space mass matrix ``H[:N, :N]`` of one sample (N = its unlocked velocity coordinates,
    links in order), in state coordinates: ``T = ½ qdᵀ H qd``."""
    _vel(b, n, parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia, M, V)
    N = _dofo(b, n, kind, locked)
    for i in range(N):
        for j in range(N):
            H[i, j] = 0.0
    for k in range(n - 1, -1, -1):                 # composite inertias
        r = b + k
        p = parent[r]
        if p >= 0:
            _cong(M[r, MW], M[r, MIA], M[r, MT], M[p, MIA])
    for k in range(n):
        r = b + k
        nv = _nv(kind[r], locked[r])
        if nv == 0:
            continue
        oi = _dofo(b, k, kind, locked)
        S = M[r, MS]
        F = M[r, MU]
        Ic = M[r, MIA]
        _mulsub(Ic, S, nv, F)
        _proj(S, nv, F, nv, H, oi, oi)
        jr = r
        while parent[jr] >= 0:
            W = M[jr, MW]
            for j in range(nv):                    # F = X_jᵀ F
                f0, f1, f2, f3, f4, f5 = _xtf(W, F[0, j], F[1, j], F[2, j], F[3, j], F[4, j], F[5, j])
                F[0, j] = f0
                F[1, j] = f1
                F[2, j] = f2
                F[3, j] = f3
                F[4, j] = f4
                F[5, j] = f5
            jr = parent[jr]
            nvj = _nv(kind[jr], locked[jr])
            oj = _dofo(b, jr - b, kind, locked)
            Sj = M[jr, MS]
            for i in range(nv):
                for j in range(nvj):
                    s = 0.0
                    for l in range(6):
                        s += F[l, i] * Sj[l, j]
                    H[oi + i, oj + j] = s
                    H[oj + j, oi + i] = s
    for k in range(n):                             # free joints: internal u = (R_Jᵀ v, ω) → state qd
        r = b + k
        if kind[r] != FREE or locked[r]:
            continue
        o = _dofo(b, k, kind, locked)
        W = M[r, MW]
        for c in range(N):                         # rows: R_J H[o:o+3, c]
            h0, h1, h2 = H[o, c], H[o + 1, c], H[o + 2, c]
            for i in range(3):
                H[o + i, c] = W[3 + i, 0] * h0 + W[3 + i, 1] * h1 + W[3 + i, 2] * h2
        for c in range(N):                         # columns: H[c, o:o+3] R_Jᵀ
            h0, h1, h2 = H[c, o], H[c, o + 1], H[c, o + 2]
            for i in range(3):
                H[c, o + i] = h0 * W[3 + i, 0] + h1 * W[3 + i, 1] + h2 * W[3 + i, 2]


crba = dual(_crba, inline=False)


# ------------------------------------------------------------------------------ poses, energy, momentum
def _world_pose(b, n, parent, M, Rw, pw):
    """Rw[r] (link → inertial rotation) and pw[r] (link origin, inertial axes) from the placements
    that a set-up pass left in ``M[r, MW]``. ``pw`` is relative to the origin P of the sample's
    first link (a root: ``M[b, MW][0:3, 3]``, see :func:`_origin`), so link positions in a 7000 km
    orbit are summed as small numbers and added to P once: ``x = P + pw``."""
    for k in range(n):
        r = b + k
        p = parent[r]
        W = M[r, MW]
        for i in range(3):
            if p < 0:
                for j in range(3):
                    Rw[r, i, j] = W[i, j]
                pw[r, i] = W[i, 3] - M[b, MW, i, 3] if k > 0 else 0.0
            else:
                for j in range(3):
                    Rw[r, i, j] = Rw[p, i, 0] * W[0, j] + Rw[p, i, 1] * W[1, j] + Rw[p, i, 2] * W[2, j]
                pw[r, i] = pw[p, i] + Rw[p, i, 0] * W[0, 3] + Rw[p, i, 1] * W[1, 3] + Rw[p, i, 2] * W[2, 3]


world_pose = dual(_world_pose)
_pose = world_pose.cpu


def _origin(b, M, i):
    """Component i of P, the inertial position of the sample's first link origin (the reference of
    ``pw``, :func:`_world_pose`)."""
    return M[b, MW, i, 3]


origin = dual(_origin)
_org = origin.cpu


def _link_momentum(r, Rw, M, V):
    """Link row r after :func:`_velocities` and :func:`_world_pose`: its kinetic energy and its
    momentum in inertial axes, ``(T, n0, n1, n2, f0, f1, f2)``: angular momentum about the link
    origin n, linear momentum f (``V[r, VT]`` is overwritten with ``h = I v``, body axes)."""
    _mv(M[r, MIA], V[r, VV], V[r, VT])      # h = I v = [angular about origin; linear], body axes
    ek = 0.0
    for i in range(6):
        ek += 0.5 * V[r, VV, i] * V[r, VT, i]
    n0 = Rw[r, 0, 0] * V[r, VT, 0] + Rw[r, 0, 1] * V[r, VT, 1] + Rw[r, 0, 2] * V[r, VT, 2]
    n1 = Rw[r, 1, 0] * V[r, VT, 0] + Rw[r, 1, 1] * V[r, VT, 1] + Rw[r, 1, 2] * V[r, VT, 2]
    n2 = Rw[r, 2, 0] * V[r, VT, 0] + Rw[r, 2, 1] * V[r, VT, 1] + Rw[r, 2, 2] * V[r, VT, 2]
    f0 = Rw[r, 0, 0] * V[r, VT, 3] + Rw[r, 0, 1] * V[r, VT, 4] + Rw[r, 0, 2] * V[r, VT, 5]
    f1 = Rw[r, 1, 0] * V[r, VT, 3] + Rw[r, 1, 1] * V[r, VT, 4] + Rw[r, 1, 2] * V[r, VT, 5]
    f2 = Rw[r, 2, 0] * V[r, VT, 3] + Rw[r, 2, 1] * V[r, VT, 4] + Rw[r, 2, 2] * V[r, VT, 5]
    return ek, n0, n1, n2, f0, f1, f2


link_momentum = dual(_link_momentum)
_lmom = link_momentum.cpu


def _energy_momentum(b, n, parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia, Rw, pw, M, V,
                     out):
    """out[0] <- kinetic energy [J]; out[1:4] <- linear momentum [kg m/s], out[4:7] <- angular
    momentum about the inertial origin [kg m²/s], both inertial axes. Also fills Rw, pw
    (:func:`_world_pose`)."""
    _vel(b, n, parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia, M, V)
    _pose(b, n, parent, M, Rw, pw)
    for i in range(7):
        out[i] = 0.0
    for k in range(n):
        r = b + k
        ek, n0, n1, n2, f0, f1, f2 = _lmom(r, Rw, M, V)
        px, py, pz = _org(b, M, 0) + pw[r, 0], _org(b, M, 1) + pw[r, 1], _org(b, M, 2) + pw[r, 2]
        out[0] += ek
        out[1] += f0
        out[2] += f1
        out[3] += f2
        out[4] += n0 + py * f2 - pz * f1
        out[5] += n1 + pz * f0 - px * f2
        out[6] += n2 + px * f1 - py * f0


energy_momentum = dual(_energy_momentum, inline=False)


def _tree_centre(i, link, E, parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia, Rw, pw, M, V,
                 total, position, velocity, angular_momentum, energy):
    """Centre row i: the whole sample of link row ``link[i]`` (rows b .. b + E − 1, its tree or
    forest): total mass, CoM position and velocity, angular momentum about that CoM and kinetic
    energy, inertial axes. Positions are summed relative to the first link's origin P
    (:func:`_world_pose`), so the momentum about the CoM is formed from metre-sized lever arms,
    not as H_O − x_c × p with x_c ~ 7000 km."""
    b = (link[i] // E) * E
    _vel(b, E, parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia, M, V)
    _pose(b, E, parent, M, Rw, pw)
    cx, cy, cz = _scom(b, E, mass, com, Rw, pw)
    ms = 0.0
    p0 = p1 = p2 = 0.0
    h0 = h1 = h2 = 0.0
    ek = 0.0
    for k in range(E):
        r = b + k
        ms += mass[r]
        e, n0, n1, n2, f0, f1, f2 = _lmom(r, Rw, M, V)
        ek += e
        dx, dy, dz = pw[r, 0] - cx, pw[r, 1] - cy, pw[r, 2] - cz    # link origin from the system CoM
        p0 += f0
        p1 += f1
        p2 += f2
        h0 += n0 + dy * f2 - dz * f1
        h1 += n1 + dz * f0 - dx * f2
        h2 += n2 + dx * f1 - dy * f0
    total[i] = ms
    position[i, 0] = _org(b, M, 0) + cx
    position[i, 1] = _org(b, M, 1) + cy
    position[i, 2] = _org(b, M, 2) + cz
    velocity[i, 0] = p0 / ms
    velocity[i, 1] = p1 / ms
    velocity[i, 2] = p2 / ms
    angular_momentum[i, 0] = h0
    angular_momentum[i, 1] = h1
    angular_momentum[i, 2] = h2
    energy[i] = ek


tree_centre = dual(_tree_centre, inline=False)
_centre = tree_centre.cpu


@cpu_parallel
def tree_centres(n, link, E, parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia, Rw, pw, M, V,
                 total, position, velocity, angular_momentum, energy):
    """CPU driver of :data:`tree_centre` (one centre per sample: no two rows share scratch rows)."""
    for i in prange(n):
        _centre(i, link, E, parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia, Rw, pw, M, V,
                total, position, velocity, angular_momentum, energy)


# ------------------------------------------------------------------------------ external forces
def _system_com(b, n, mass, com, Rw, pw):
    """The sample's CoM relative to the origin P of ``pw`` (:func:`_world_pose`), inertial axes."""
    ms = 0.0
    sx = 0.0
    sy = 0.0
    sz = 0.0
    for k in range(n):
        r = b + k
        m = mass[r]
        ms += m
        sx += m * (pw[r, 0] + Rw[r, 0, 0] * com[r, 0] + Rw[r, 0, 1] * com[r, 1] + Rw[r, 0, 2] * com[r, 2])
        sy += m * (pw[r, 1] + Rw[r, 1, 0] * com[r, 0] + Rw[r, 1, 1] * com[r, 1] + Rw[r, 1, 2] * com[r, 2])
        sz += m * (pw[r, 2] + Rw[r, 2, 0] * com[r, 0] + Rw[r, 2, 1] * com[r, 1] + Rw[r, 2, 2] * com[r, 2])
    return sx / ms, sy / ms, sz / ms


system_com = dual(_system_com)
_scom = system_com.cpu


def _link_forces(b, n, mu, gmode, mass, com, inertia, force, torque, Rw, pw, M, V, fext, time, mode, env, tt):
    """fext[r] <- the link's external spatial force, body axes, about the link origin: the
    accumulated ``force`` (inertial, through the CoM) and ``torque`` (body, about the CoM), plus,
    when ``mu > 0``, the link's own point-mass gravity at its CoM and its gravity-gradient torque
    ``3μ/|x|⁵ x_b × (I_c x_b)`` (x_b: CoM position in body axes; seed 001 "each body as if it was
    independent", MBGravityTorque).

    ``gmode`` 0 (full): the gravity force is ``m g(x)``, ``g(x) = −μ x/|x|³``. ``gmode`` 1
    (differential, seed 001 "Numerical considerations — scale"): it is ``m (g(x) − g(x_s))`` with
    x_s the system CoM; ``g(x_s)`` is left in ``M[b, MW][0:3, 4]`` for the caller to add to the
    root's acceleration after the solve. The difference is evaluated without cancellation from
    the link's offset d = x − x_s (from relative kinematics, :func:`_world_pose`), Encke-style:
    ``g(x_s + d) − g(x_s) = −μ [d/|x|³ − x_s δ (r_s² + r_s r + r²)/((r_s + r) r³ r_s³)]`` with
    ``δ = |x|² − r_s² = 2 x_s·d + d·d``. ``gmode`` 2 (linearised, seed 001 "Simplifying
    assumptions"): as 1 with the difference replaced by ``Γ(x_s) d``, ``Γ = μ/r_s³ (3 r̂ r̂ᵀ − E)``,
    and each link's gradient torque taken from Γ(x_s) (``3μ/r_s⁵ x_b × (I_c x_b)`` at ``x = x_s``).

    Then the world's row terms (:mod:`ecs.terms`: gravity sources, third bodies, drag, sunlight,
    user forces) at the link's own CoM, velocity, attitude and rate (seed 001: "each body as if it
    was independent"), at stage time ``time``; ``tt`` is their argument (columns of the link
    table, resource arrays, parameters). They enter in full in every gravity mode. ``mode`` 0:
    evaluate them; 1: evaluate and keep them in ``env[r]``; 2: use ``env[r]`` as kept (seed 001's
    reduced environment update rate, :class:`systems.multibody.dynamics.MultibodyDynamics` ``environment_every``)."""
    # system CoM relative to the origin P (differential and linearised modes only)
    sx = 0.0
    sy = 0.0
    sz = 0.0
    if gmode >= 1 and mu > 0.0:
        sx, sy, sz = _scom(b, n, mass, com, Rw, pw)
    xs0 = _org(b, M, 0) + sx
    xs1 = _org(b, M, 1) + sy
    xs2 = _org(b, M, 2) + sz
    rs2 = xs0 * xs0 + xs1 * xs1 + xs2 * xs2
    rs = math.sqrt(rs2)
    if gmode >= 1 and mu > 0.0:
        gs = -mu / (rs2 * rs)
        M[b, MW, 0, 4] = gs * xs0
        M[b, MW, 1, 4] = gs * xs1
        M[b, MW, 2, 4] = gs * xs2
    for k in range(n):
        r = b + k
        c0, c1, c2 = com[r, 0], com[r, 1], com[r, 2]
        F0, F1, F2 = force[r, 0], force[r, 1], force[r, 2]
        t0, t1, t2 = torque[r, 0], torque[r, 1], torque[r, 2]
        if _terms_on():
            if mode == 2:
                e0, e1, e2, e3, e4, e5 = env[r, 0], env[r, 1], env[r, 2], env[r, 3], env[r, 4], env[r, 5]
            else:
                e0, e1, e2, e3, e4, e5 = _lterms(b, r, com, mass, Rw, pw, M, V, time, tt)
                if mode == 1:
                    env[r, 0] = e0
                    env[r, 1] = e1
                    env[r, 2] = e2
                    env[r, 3] = e3
                    env[r, 4] = e4
                    env[r, 5] = e5
            F0 += e0
            F1 += e1
            F2 += e2
            t0 += e3
            t1 += e4
            t2 += e5
        # CoM offset d from the system CoM (differential) or from P (full), then the position x
        d0 = pw[r, 0] + Rw[r, 0, 0] * c0 + Rw[r, 0, 1] * c1 + Rw[r, 0, 2] * c2 - sx
        d1 = pw[r, 1] + Rw[r, 1, 0] * c0 + Rw[r, 1, 1] * c1 + Rw[r, 1, 2] * c2 - sy
        d2 = pw[r, 2] + Rw[r, 2, 0] * c0 + Rw[r, 2, 1] * c1 + Rw[r, 2, 2] * c2 - sz
        x0 = xs0 + d0
        x1 = xs1 + d1
        x2 = xs2 + d2
        if mu > 0.0:
            rr2 = x0 * x0 + x1 * x1 + x2 * x2
            rr = math.sqrt(rr2)
            m = mass[r]
            if gmode == 2:                        # linearised: Γ(x_s) d, Γ = μ/r_s³ (3 r̂ r̂ᵀ − E)
                t = 3.0 * (xs0 * d0 + xs1 * d1 + xs2 * d2) / rs2
                gl = m * mu / (rs2 * rs)
                F0 += gl * (t * xs0 - d0)
                F1 += gl * (t * xs1 - d1)
                F2 += gl * (t * xs2 - d2)
                x0, x1, x2 = xs0, xs1, xs2           # and the gradient torque of Γ(x_s)
                rr2, rr = rs2, rs
            elif gmode == 1:
                delta = 2.0 * (xs0 * d0 + xs1 * d1 + xs2 * d2) + (d0 * d0 + d1 * d1 + d2 * d2)
                r3 = rr2 * rr
                e = delta * (rs2 + rs * rr + rr2) / ((rs + rr) * r3 * rs2 * rs)
                F0 += -mu * m * (d0 / r3 - xs0 * e)
                F1 += -mu * m * (d1 / r3 - xs1 * e)
                F2 += -mu * m * (d2 / r3 - xs2 * e)
            else:
                g = -mu * m / (rr2 * rr)
                F0 += g * x0
                F1 += g * x1
                F2 += g * x2
            rb0 = Rw[r, 0, 0] * x0 + Rw[r, 1, 0] * x1 + Rw[r, 2, 0] * x2
            rb1 = Rw[r, 0, 1] * x0 + Rw[r, 1, 1] * x1 + Rw[r, 2, 1] * x2
            rb2 = Rw[r, 0, 2] * x0 + Rw[r, 1, 2] * x1 + Rw[r, 2, 2] * x2
            g0, g1, g2 = _gg_torque(mu, rr2, rr, rb0, rb1, rb2, inertia, r)
            t0 += g0
            t1 += g1
            t2 += g2
        fb0 = Rw[r, 0, 0] * F0 + Rw[r, 1, 0] * F1 + Rw[r, 2, 0] * F2
        fb1 = Rw[r, 0, 1] * F0 + Rw[r, 1, 1] * F1 + Rw[r, 2, 1] * F2
        fb2 = Rw[r, 0, 2] * F0 + Rw[r, 1, 2] * F1 + Rw[r, 2, 2] * F2
        fext[r, 0] = t0 + c1 * fb2 - c2 * fb1
        fext[r, 1] = t1 + c2 * fb0 - c0 * fb2
        fext[r, 2] = t2 + c0 * fb1 - c1 * fb0
        fext[r, 3] = fb0
        fext[r, 4] = fb1
        fext[r, 5] = fb2


link_forces = dual(_link_forces)


def _link_terms(b, r, com, mass, Rw, pw, M, V, time, tt):
    """The world's row terms on link row r: its CoM and CoM velocity (inertial), attitude (link →
    inertial), body rate and mass in the term convention (:mod:`ecs.terms`); returns the force
    (inertial) and the torque about the CoM (link axes)."""
    c0, c1, c2 = com[r, 0], com[r, 1], com[r, 2]
    w0, w1, w2 = V[r, VV, 0], V[r, VV, 1], V[r, VV, 2]
    u0 = V[r, VV, 3] + w1 * c2 - w2 * c1                  # v_CoM = v_O + ω × c, link axes
    u1 = V[r, VV, 4] + w2 * c0 - w0 * c2
    u2 = V[r, VV, 5] + w0 * c1 - w1 * c0
    x0 = _org(b, M, 0) + pw[r, 0] + Rw[r, 0, 0] * c0 + Rw[r, 0, 1] * c1 + Rw[r, 0, 2] * c2
    x1 = _org(b, M, 1) + pw[r, 1] + Rw[r, 1, 0] * c0 + Rw[r, 1, 1] * c1 + Rw[r, 1, 2] * c2
    x2 = _org(b, M, 2) + pw[r, 2] + Rw[r, 2, 0] * c0 + Rw[r, 2, 1] * c1 + Rw[r, 2, 2] * c2
    v0 = Rw[r, 0, 0] * u0 + Rw[r, 0, 1] * u1 + Rw[r, 0, 2] * u2
    v1 = Rw[r, 1, 0] * u0 + Rw[r, 1, 1] * u1 + Rw[r, 1, 2] * u2
    v2 = Rw[r, 2, 0] * u0 + Rw[r, 2, 1] * u1 + Rw[r, 2, 2] * u2
    q0, q1, q2, q3 = _d2q(Rw[r, 0, 0], Rw[r, 0, 1], Rw[r, 0, 2], Rw[r, 1, 0], Rw[r, 1, 1], Rw[r, 1, 2],
                          Rw[r, 2, 0], Rw[r, 2, 1], Rw[r, 2, 2])
    return _terms(r, time, x0, x1, x2, v0, v1, v2, q0, q1, q2, q3, w0, w1, w2, mass[r], tt[0], tt[1])


link_terms = dual(_link_terms, inline=False)
_lterms = link_terms.cpu
_lforces = link_forces.cpu


# ------------------------------------------------------------------------------ state derivative and RK step
def _derivative(b, n, parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia, tau, law, force,
                torque, mu, gmode, a0, tauw, fext, qdd, Rw, pw, M, V, K, stage, time, mode, env, tt):
    """K[r, stage, :] <- d/dt (q, qd) of one sample's links (layout: q 7 slots, then qd 6 slots).

    Generalised forces: ``tau`` minus the regularised joint friction
    ``viscous qd + coulomb tanh(qd / slip)`` per velocity coordinate, plus, for revolute and
    prismatic joints, the spring-damper ``−k (q − q_rest) − c qd`` and the end stops
    (penalty ``k_l (lower − q) − c_l qd`` below ``lower``, likewise above ``upper``, when
    ``k_l > 0``); the per-row parameters are ``law[r, LAW_*]`` (:data:`LAW_COLUMNS`); external link forces from
    :func:`_link_forces`, with gravity ``gmode`` 0 (full), 1 (differential) or 2 (linearised); modes
    1 and 2 apply to a sample whose first link is an unlocked free root, full gravity otherwise (a
    fixed base feels the uniform part); the world's row terms at stage time ``time``. Locked
    joints: zero derivative (state frozen)."""
    for k in range(n):
        r = b + k
        cv = law[r, LAW_VISCOUS]
        cc = law[r, LAW_COULOMB]
        for i in range(_nv(kind[r], locked[r])):     # (the solve reads a joint's own slots only)
            w = qd[r, i]
            t = tau[r, i]
            if cv != 0.0:                    # (a frictionless joint skips a tanh per slot and stage)
                t -= cv * w
            if cc != 0.0:
                t -= cc * math.tanh(w / law[r, LAW_SLIP])
            tauw[r, i] = t
        kk = kind[r]
        if kk == REVOLUTE or kk == PRISMATIC:           # spring-damper and end stops of a 1-DOF joint
            x = q[r, 0]
            w = qd[r, 0]
            t = -law[r, LAW_STIFFNESS] * (x - law[r, LAW_REST]) - law[r, LAW_DAMPING] * w
            kl = law[r, LAW_LIMIT_STIFFNESS]
            if kl > 0.0:
                if x < law[r, LAW_LOWER]:
                    t += kl * (law[r, LAW_LOWER] - x) - law[r, LAW_LIMIT_DAMPING] * w
                elif x > law[r, LAW_UPPER]:
                    t += kl * (law[r, LAW_UPPER] - x) - law[r, LAW_LIMIT_DAMPING] * w
            tauw[r, 0] += t
    _vel(b, n, parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia, M, V)
    _pose(b, n, parent, M, Rw, pw)
    diff = gmode if (gmode >= 1 and mu > 0.0 and kind[b] == FREE and not locked[b]) else 0
    _lforces(b, n, mu, diff, mass, com, inertia, force, torque, Rw, pw, M, V, fext, time, mode, env, tt)
    _lstates(b, n, M, Rw, pw, V, tt[3])
    _sample_terms(b, n, stage, time, Rw, fext, tt[2])
    _abas(b, n, parent, kind, locked, mass, com, tauw, fext, a0, qdd, M, V)
    if diff >= 1:                        # the system's gravity goes to the free root: p̈ += R_Tᵀ g(x_s)
        gx, gy, gz = _rot_inv(rotation[b, 0], rotation[b, 1], rotation[b, 2], rotation[b, 3],
                              M[b, MW, 0, 4], M[b, MW, 1, 4], M[b, MW, 2, 4])
        qdd[b, 0] += gx
        qdd[b, 1] += gy
        qdd[b, 2] += gz
    for k in range(n):
        r = b + k
        kk = kind[r]
        if locked[r] or kk == FIXED:     # (K holds a joint's own slots only: :func:`_state_slots`)
            continue
        if kk == REVOLUTE or kk == PRISMATIC:
            K[r, stage, 0] = qd[r, 0]
        elif kk == SPHERICAL:
            d0, d1, d2, d3 = _qdot(q[r, 0], q[r, 1], q[r, 2], q[r, 3], qd[r, 0], qd[r, 1], qd[r, 2])
            K[r, stage, 0] = d0
            K[r, stage, 1] = d1
            K[r, stage, 2] = d2
            K[r, stage, 3] = d3
        else:
            K[r, stage, 0] = qd[r, 0]
            K[r, stage, 1] = qd[r, 1]
            K[r, stage, 2] = qd[r, 2]
            d0, d1, d2, d3 = _qdot(q[r, 3], q[r, 4], q[r, 5], q[r, 6], qd[r, 3], qd[r, 4], qd[r, 5])
            K[r, stage, 3] = d0
            K[r, stage, 4] = d1
            K[r, stage, 5] = d2
            K[r, stage, 6] = d3
        for i in range(QD_SLOTS):
            K[r, stage, Q_SLOTS + i] = qdd[r, i]


derivative = dual(_derivative, inline=False)
_deriv = derivative.cpu


def _put_state(r, i, v, q, qd):
    if i < Q_SLOTS:
        q[r, i] = v
    else:
        qd[r, i - Q_SLOTS] = v


put_state = dual(_put_state)
_put = put_state.cpu


def _state_slots(kind, locked):
    """(nq, nv): the q and qd slots a joint integrates (0, 0 when fixed or locked: its state is
    frozen). The derivative ``K`` is written for these slots only; the others keep their values."""
    if locked or kind == FIXED:
        return 0, 0
    if kind == REVOLUTE or kind == PRISMATIC:
        return 1, 1
    if kind == SPHERICAL:
        return 4, 3
    return 7, 6


state_slots = dual(_state_slots)
_slots = state_slots.cpu


def _normalize_joint_quaternions(r, kind, q, C):
    """Renormalise the quaternion slots of a spherical or free joint (after a step) and drop their
    summation carries."""
    o = -1
    if kind[r] == SPHERICAL:
        o = 0
    elif kind[r] == FREE:
        o = 3
    if o >= 0:
        w, x, y, z = _qnorm(q[r, o], q[r, o + 1], q[r, o + 2], q[r, o + 3])
        q[r, o] = w
        q[r, o + 1] = x
        q[r, o + 2] = y
        q[r, o + 3] = z
        for i in range(4):
            C[r, o + i] = 0.0


normalize_joint_quaternions = dual(_normalize_joint_quaternions)
_qnorm_joint = normalize_joint_quaternions.cpu


def _step_start(b, n, locked, q, qd, y0):
    """Before a step: a locked joint's rate is zeroed (it has no relative motion) and the state is
    copied into ``y0`` (the stage base, and the last good state if the step fails)."""
    for k in range(n):
        r = b + k
        if locked[r]:
            for i in range(QD_SLOTS):
                qd[r, i] = 0.0
        for i in range(Q_SLOTS):
            y0[r, i] = q[r, i]
        for i in range(QD_SLOTS):
            y0[r, Q_SLOTS + i] = qd[r, i]


step_start = dual(_step_start)
_start = step_start.cpu


def _rk_step(b, n, h, A, B, nstages, parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia, tau,
             law, force, torque, mu, gmode, a0, y0, C, K, tauw, fext, qdd, Rw, pw, M, V, t0, mode0, env, tt):
    """One explicit Runge–Kutta step of length h (tableau A, B: :mod:`ecs.stepping`) of one
    sample's joint states; quaternions renormalised after the step; a locked joint's rate is set to
    zero (a kinematic lock: the relative momentum it had is dropped, not redistributed). ``y0``, ``K``: per-row
    scratch [rows, 13] and [rows, stages, 13]; ``C`` [rows, 13]: the carries of the compensated
    summation of the state update (Kahan; N. J. Higham, *Accuracy and Stability of Numerical
    Algorithms*, SIAM, 2nd ed. 2002, §4.3), zero at the start and kept from step to step: they keep
    the round-off of 10⁵–10⁶ small increments to a large state (an orbit radius, a drifting
    position) from accumulating. Stage ``st`` stands at ``t0 + h Σ_j A[st, j]`` (the row sums of A:
    the tableau's nodes). The row terms' ``mode`` (:func:`_link_forces`) is ``mode0`` at the first
    stage and, when it is not 0, 2 at the others (terms held over the step)."""
    _start(b, n, locked, q, qd, y0)
    for st in range(nstages):
        cst = 0.0
        for j in range(st):
            cst += A[st, j]
        if st > 0:
            for k in range(n):
                r = b + k
                nq, nv = _slots(kind[r], locked[r])
                for i in range(nq + nv):
                    s = i if i < nq else Q_SLOTS + i - nq
                    v = y0[r, s]
                    for j in range(st):
                        v += h * A[st, j] * K[r, j, s]
                    _put(r, s, v, q, qd)
        md = mode0
        if st > 0 and mode0 != 0:
            md = 2
        _deriv(b, n, parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia, tau, law, force, torque,
               mu, gmode, a0, tauw, fext, qdd, Rw, pw, M, V, K, st, t0 + cst * h, md, env, tt)
    for k in range(n):
        r = b + k
        nq, nv = _slots(kind[r], locked[r])
        for i in range(nq + nv):
            s = i if i < nq else Q_SLOTS + i - nq
            inc = 0.0
            for j in range(nstages):
                inc += h * B[j] * K[r, j, s]
            inc += C[r, s]                        # compensated (Kahan) sum y0 + inc
            v = y0[r, s] + inc
            C[r, s] = inc - (v - y0[r, s])
            _put(r, s, v, q, qd)
        _qnorm_joint(r, kind, q, C)


rk_step = dual(_rk_step, inline=False)
_rk_step_cpu = rk_step.cpu


def _kuo_nguyen_step(b, n, h, parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia, tau, law, force,
                     torque, mu, gmode, a0, y0, C, K, tauw, fext, qdd, Rw, pw, M, V, t0, mode0, env, tt):
    """One step of the Kuo–Nguyen integrator (seed 001, "Numerical considerations — integration").

    The orbital DOFs of the root (position and velocity of a free first link, joint axes) take the
    third-order Taylor step with the jerk from a backward difference of the acceleration:
    ``x += ẋ h + (2/3 ẍ − 1/6 ẍ_prev) h²``, ``ẋ += (3/2 ẍ − 1/2 ẍ_prev) h``. Every other DOF
    (the root's attitude and rate, all other joints) takes an Euler–Cromer step:
    ``ẋ_m += ẍ_m h``, then ``x_m += ẋ_m(t + h) h`` (quaternions: ``q += h ½ q ⊗ ω(t + h)``,
    renormalised). ``ẍ_prev`` is kept in ``K[b, 1, 7:10]`` (NaN before the first step, which then
    uses ``ẍ_prev = ẍ``: a second-order Taylor start). ``K`` needs 2 stage slots; ``y0`` keeps the
    state before the step; locked joints are frozen with zero rate."""
    _start(b, n, locked, q, qd, y0)
    _deriv(b, n, parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia, tau, law, force, torque, mu,
           gmode, a0, tauw, fext, qdd, Rw, pw, M, V, K, 0, t0, mode0, env, tt)
    orbit = kind[b] == FREE and not locked[b]
    if orbit:
        for i in range(3):
            a = K[b, 0, Q_SLOTS + i]
            ap = K[b, 1, Q_SLOTS + i]
            if not math.isfinite(ap):
                ap = a
            q[b, i] += qd[b, i] * h + (2.0 / 3.0 * a - 1.0 / 6.0 * ap) * h * h
            qd[b, i] += (1.5 * a - 0.5 * ap) * h
            K[b, 1, Q_SLOTS + i] = a
    for k in range(n):
        r = b + k
        kk = kind[r]
        if locked[r] or kk == FIXED:
            continue
        for i in range(_nvn(kk)):                         # Euler–Cromer: rates first ...
            if not (orbit and r == b and i < 3):
                qd[r, i] += h * K[r, 0, Q_SLOTS + i]
        if kk == REVOLUTE or kk == PRISMATIC:             # ... then positions with the new rates
            q[r, 0] += h * qd[r, 0]
        else:
            o = 0 if kk == SPHERICAL else 3
            w0 = 0 if kk == SPHERICAL else 3
            if kk == FREE and not (orbit and r == b):
                for i in range(3):
                    q[r, i] += h * qd[r, i]
            d0, d1, d2, d3 = _qdot(q[r, o], q[r, o + 1], q[r, o + 2], q[r, o + 3], qd[r, w0], qd[r, w0 + 1],
                                   qd[r, w0 + 2])
            q[r, o] += h * d0
            q[r, o + 1] += h * d1
            q[r, o + 2] += h * d2
            q[r, o + 3] += h * d3
            _qnorm_joint(r, kind, q, C)


kuo_nguyen_step = dual(_kuo_nguyen_step, inline=False)
_kn_step = kuo_nguyen_step.cpu


def _link_motion(b, n, parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia, tau, law, force, torque,
                 mu, gmode, a0, tauw, fext, qdd, Rw, pw, M, V, K, ACC, time, env, tt):
    """Per link row r of one sample, inertial axes: ``ACC[r]`` = (classical acceleration of the link
    origin (3), angular acceleration (3), angular velocity (3), origin velocity (3), the system's
    gravity g(x_s) at its CoM x_s (3), origin position (3)), from one evaluation of the dynamics
    at the current state (``K[:, 0]`` is overwritten). For points of interest."""
    _deriv(b, n, parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia, tau, law, force, torque,
           mu, gmode, a0, tauw, fext, qdd, Rw, pw, M, V, K, 0, time, 0, env, tt)
    diff = gmode >= 1 and mu > 0.0 and kind[b] == FREE and not locked[b]
    sx, sy, sz = _scom(b, n, mass, com, Rw, pw)
    xs0 = _org(b, M, 0) + sx
    xs1 = _org(b, M, 1) + sy
    xs2 = _org(b, M, 2) + sz
    g0 = 0.0
    g1 = 0.0
    g2 = 0.0
    if mu > 0.0:
        rs2 = xs0 * xs0 + xs1 * xs1 + xs2 * xs2
        gs = -mu / (rs2 * math.sqrt(rs2))
        g0, g1, g2 = gs * xs0, gs * xs1, gs * xs2
    for k in range(n):
        r = b + k
        w0, w1, w2 = V[r, VV, 0], V[r, VV, 1], V[r, VV, 2]
        v0, v1, v2 = V[r, VV, 3], V[r, VV, 4], V[r, VV, 5]
        # classical acceleration of the origin = spatial linear part + ω × v_O (body axes)
        c0 = V[r, VA, 3] + w1 * v2 - w2 * v1
        c1 = V[r, VA, 4] + w2 * v0 - w0 * v2
        c2 = V[r, VA, 5] + w0 * v1 - w1 * v0
        for i in range(3):
            ACC[r, i] = Rw[r, i, 0] * c0 + Rw[r, i, 1] * c1 + Rw[r, i, 2] * c2
            ACC[r, 3 + i] = Rw[r, i, 0] * V[r, VA, 0] + Rw[r, i, 1] * V[r, VA, 1] + Rw[r, i, 2] * V[r, VA, 2]
            ACC[r, 6 + i] = Rw[r, i, 0] * w0 + Rw[r, i, 1] * w1 + Rw[r, i, 2] * w2
            ACC[r, 9 + i] = Rw[r, i, 0] * v0 + Rw[r, i, 1] * v1 + Rw[r, i, 2] * v2
            ACC[r, 15 + i] = _org(b, M, i) + pw[r, i]
        ACC[r, 12] = g0
        ACC[r, 13] = g1
        ACC[r, 14] = g2
        if diff:                         # the solve ran in the frame falling with g(x_s)
            ACC[r, 0] += g0
            ACC[r, 1] += g1
            ACC[r, 2] += g2


link_motion = dual(_link_motion, inline=False)
_lmotion = link_motion.cpu


def _link_motion_sample(s, E, status, parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia, tau,
                        law, force, torque, mu, gmode, a0, tauw, fext, qdd, Rw, pw, M, V, K, ACC, time, env, tt):
    """:func:`_link_motion` of sample s unless it FAILED (then its outputs keep their last values)."""
    b = s * E
    if status[b] == FAILED_CODE:
        return
    _lmotion(b, E, parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia, tau, law, force, torque,
             mu, gmode, a0, tauw, fext, qdd, Rw, pw, M, V, K, ACC, time, env, tt)


link_motion_sample = dual(_link_motion_sample, inline=False)
_lmotion_s = link_motion_sample.cpu


@cpu_jit(nogil=True)
def link_motion_range(s0, s1, E, status, parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia, tau,
                      law, force, torque, mu, gmode, a0, tauw, fext, qdd, Rw, pw, M, V, K, ACC, time, env, tt):
    """Serial loop of :data:`link_motion_sample` over samples ``s0 .. s1 - 1``."""
    for s in range(s0, s1):
        _lmotion_s(s, E, status, parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia, tau, law,
                   force, torque, mu, gmode, a0, tauw, fext, qdd, Rw, pw, M, V, K, ACC, time, env, tt)


#: CPU driver of :data:`link_motion_sample`.
link_motion_samples = SampleDriver(link_motion_range)


def _poi_row(i, link, offset, Rw, ACC, position, velocity, acceleration, nongrav):
    """Point of interest i on link row ``link[i]`` at ``offset[i]`` (link axes): its inertial position,
    velocity, acceleration, and acceleration minus the system's gravity g(x_s) (seed 001's
    NonGravAccels, a sensor's view) — ``a = a_O + α × ρ + ω × (ω × ρ)``, ``ρ = R offset``."""
    r = link[i]
    p0 = Rw[r, 0, 0] * offset[i, 0] + Rw[r, 0, 1] * offset[i, 1] + Rw[r, 0, 2] * offset[i, 2]
    p1 = Rw[r, 1, 0] * offset[i, 0] + Rw[r, 1, 1] * offset[i, 1] + Rw[r, 1, 2] * offset[i, 2]
    p2 = Rw[r, 2, 0] * offset[i, 0] + Rw[r, 2, 1] * offset[i, 1] + Rw[r, 2, 2] * offset[i, 2]
    al0, al1, al2 = ACC[r, 3], ACC[r, 4], ACC[r, 5]
    w0, w1, w2 = ACC[r, 6], ACC[r, 7], ACC[r, 8]
    u0 = w1 * p2 - w2 * p1                   # ω × ρ
    u1 = w2 * p0 - w0 * p2
    u2 = w0 * p1 - w1 * p0
    position[i, 0] = ACC[r, 15] + p0
    position[i, 1] = ACC[r, 16] + p1
    position[i, 2] = ACC[r, 17] + p2
    velocity[i, 0] = ACC[r, 9] + u0
    velocity[i, 1] = ACC[r, 10] + u1
    velocity[i, 2] = ACC[r, 11] + u2
    a0_ = ACC[r, 0] + (al1 * p2 - al2 * p1) + (w1 * u2 - w2 * u1)
    a1_ = ACC[r, 1] + (al2 * p0 - al0 * p2) + (w2 * u0 - w0 * u2)
    a2_ = ACC[r, 2] + (al0 * p1 - al1 * p0) + (w0 * u1 - w1 * u0)
    acceleration[i, 0] = a0_
    acceleration[i, 1] = a1_
    acceleration[i, 2] = a2_
    nongrav[i, 0] = a0_ - ACC[r, 12]
    nongrav[i, 1] = a1_ - ACC[r, 13]
    nongrav[i, 2] = a2_ - ACC[r, 14]


poi_row = dual(_poi_row)
_poi = poi_row.cpu


@cpu_parallel
def poi_rows(n, link, offset, Rw, ACC, position, velocity, acceleration, nongrav):
    """CPU driver of :data:`poi_row`."""
    for i in prange(n):
        _poi(i, link, offset, Rw, ACC, position, velocity, acceleration, nongrav)


def _link_origin_pose(b, r, M, Rw, pw, position, attitude):
    """Link row r of the sample starting at row b, after :func:`_world_pose`: its origin
    (inertial) into ``position[r]`` and its attitude (link → inertial, scalar-first) into
    ``attitude[r]``."""
    w, x, y, z = _d2q(Rw[r, 0, 0], Rw[r, 0, 1], Rw[r, 0, 2], Rw[r, 1, 0], Rw[r, 1, 1], Rw[r, 1, 2],
                      Rw[r, 2, 0], Rw[r, 2, 1], Rw[r, 2, 2])
    attitude[r, 0] = w
    attitude[r, 1] = x
    attitude[r, 2] = y
    attitude[r, 3] = z
    for i in range(3):
        position[r, i] = _org(b, M, i) + pw[r, i]


link_origin_pose = dual(_link_origin_pose)
_opose = link_origin_pose.cpu


def _link_states(b, n, M, Rw, pw, V, links):
    """The links' state as a sample term reads it (:class:`ecs.terms.SampleTerm`): for rows
    b .. b + n − 1, after :func:`_world_pose` and the velocity pass, ``links = (position, attitude,
    omega, velocity)`` get the link origin (inertial), the attitude (link → inertial,
    scalar-first), the body rate (link axes) and the origin velocity (inertial). Empty arrays (no
    sample term): nothing."""
    position, attitude, omega, velocity = links
    if position.shape[0] == 0:
        return
    for k in range(n):
        r = b + k
        _opose(b, r, M, Rw, pw, position, attitude)
        u0, u1, u2 = V[r, VV, 3], V[r, VV, 4], V[r, VV, 5]        # origin velocity, link axes
        for i in range(3):
            omega[r, i] = V[r, VV, i]
            velocity[r, i] = Rw[r, i, 0] * u0 + Rw[r, i, 1] * u1 + Rw[r, i, 2] * u2


link_states = dual(_link_states)
_lstates = link_states.cpu


def _link_poses(b, n, parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia, M, V, Rw, pw,
                position, attitude, com_position):
    """The LinkPose columns of one sample's links from its joint state."""
    _vel(b, n, parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia, M, V)
    _pose(b, n, parent, M, Rw, pw)
    for k in range(n):
        r = b + k
        _opose(b, r, M, Rw, pw, position, attitude)
        for i in range(3):
            com_position[r, i] = _org(b, M, i) + (pw[r, i] + Rw[r, i, 0] * com[r, 0] + Rw[r, i, 1] * com[r, 1]
                                                  + Rw[r, i, 2] * com[r, 2])


link_poses = dual(_link_poses, inline=False)
_poses = link_poses.cpu


def _sample_finite(b, n, q, qd):
    for k in range(n):
        for i in range(Q_SLOTS):
            if not math.isfinite(q[b + k, i]):
                return False
        for i in range(QD_SLOTS):
            if not math.isfinite(qd[b + k, i]):
                return False
    return True


sample_finite = dual(_sample_finite)
_finite = sample_finite.cpu


def _advance_sample(s, E, steps, h, A, B, nstages, status, reason, failed, nonfinite, parent, kind, axis, offset,
                    rotation, q, qd, locked, mass, com, inertia, tau, law, force, torque, mu, gmode,
                    a0, y0, C, K, tauw, fext, qdd, Rw, pw, M, V, position, attitude, com_position, t0, every,
                    step0, env, tt):
    """``steps`` steps of sample s (rows s·E .. s·E + E − 1) if it is RUNNING — RK with tableau
    (A, B) or, for ``nstages == 0``, Kuo–Nguyen (:func:`_kuo_nguyen_step`) — then its link poses; a non-finite state sets every row of the sample FAILED (reason ``nonfinite``) with the
    state of its last good step. The first step starts at time ``t0`` and is step ``step0`` of the
    run: the row terms are evaluated at every stage when ``every`` is 1, else at the first stage of
    every ``every``-th step of the run and held until the next (:func:`_link_forces` modes)."""
    b = s * E
    if status[b] != 0:
        return
    j = 0
    while j < steps:                  # a while loop, not for/break (ecs/kernels.py: numba pitfall)
        tj = t0 + j * h
        mode0 = 0
        if every > 1:
            mode0 = 1 if (step0 + j) % every == 0 else 2
        j += 1
        if nstages == 0:
            _kn_step(b, E, h, parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia, tau, law, force,
                     torque, mu, gmode, a0, y0, C, K, tauw, fext, qdd, Rw, pw, M, V, tj, mode0, env, tt)
        else:
            _rk_step_cpu(b, E, h, A, B, nstages, parent, kind, axis, offset, rotation, q, qd, locked, mass, com,
                         inertia, tau, law, force, torque, mu, gmode, a0, y0, C, K, tauw, fext, qdd,
                         Rw, pw, M, V, tj, mode0, env, tt)
        if status[b] != 0:            # a sample term failed the sample (contact buffer overflow)
            j = steps
        elif not _finite(b, E, q, qd):
            j = steps
            for k in range(E):
                for i in range(Q_SLOTS):
                    q[b + k, i] = y0[b + k, i]
                for i in range(QD_SLOTS):
                    qd[b + k, i] = y0[b + k, Q_SLOTS + i]
                status[b + k] = failed
                reason[b + k] = nonfinite
    _poses(b, E, parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia, M, V, Rw, pw, position,
           attitude, com_position)


advance_sample = dual(_advance_sample, inline=False)
_advance = advance_sample.cpu


@cpu_jit(nogil=True)
def advance_range(s0, s1, E, steps, h, A, B, nstages, status, reason, failed, nonfinite, parent, kind, axis, offset,
                  rotation, q, qd, locked, mass, com, inertia, tau, law, force, torque, mu, gmode,
                  a0, y0, C, K, tauw, fext, qdd, Rw, pw, M, V, position, attitude, com_position, t0, every, step0,
                  env, tt):
    """Serial loop of :data:`advance_sample` over samples ``s0 .. s1 - 1`` (of ``E`` links)."""
    for s in range(s0, s1):
        _advance(s, E, steps, h, A, B, nstages, status, reason, failed, nonfinite, parent, kind, axis, offset,
                 rotation, q, qd, locked, mass, com, inertia, tau, law, force, torque, mu, gmode,
                 a0, y0, C, K, tauw, fext, qdd, Rw, pw, M, V, position, attitude, com_position, t0, every, step0,
                 env, tt)


#: CPU driver of :data:`advance_sample` (one block of samples per thread; the GPU twin: one thread per sample).
advance_samples = SampleDriver(advance_range)
