"""Articulated-tree algorithms on one sample's links (Featherstone, *Rigid Body Dynamics
Algorithms*, 2008): the articulated-body algorithm (Table 7.1), the recursive Newton–Euler
algorithm (Table 5.1), the composite-rigid-body algorithm (Table 6.2), world poses, energy and
momentum, the tree's centre of mass. Built on :mod:`systems.multibody.spatial` and
:mod:`systems.multibody.joints`; the state derivative and the steppers that call them are
:mod:`systems.multibody.kernels`.
"""

from __future__ import annotations

import math

from numba import prange

from components.multibody import FREE, QD_SLOTS, REVOLUTE
from ecs.kernels import cpu_parallel, dual
from systems.multibody.spatial import (MDI, MIA, ML, MS, MT, MU, MW, VA, VC, VPA, VQD, VQDD, VT, VU, VV, bias_add,
                                       cholesky, cholesky_solve, congruence_rt_add, congruence_rt_add_sym, force_out,
                                       from_parent, matvec, motion_in, mul_sub, nv_of, project, set6, spd_inverse,
                                       to_parent_add)
from systems.multibody.joints import qdd_out, tau_internal, velocities

_bias = bias_add.cpu
_chol = cholesky.cpu
_chol_solve = cholesky_solve.cpu
_cong = congruence_rt_add.cpu
_cong_sym = congruence_rt_add_sym.cpu
_from_parent_ = from_parent.cpu
_mulsub = mul_sub.cpu
_mv = matvec.cpu
_xm = motion_in.cpu
_put6 = set6.cpu
_nv = nv_of.cpu
_proj = project.cpu
_qddout = qdd_out.cpu
_spdinv = spd_inverse.cpu
_tauint = tau_internal.cpu
_to_parent_add_ = to_parent_add.cpu
_vel = velocities.cpu
_xtf = force_out.cpu


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
            U0 = IA[0, o] * s0 + IA[0, o + 1] * s1 + IA[0, o + 2] * s2
            U1 = IA[1, o] * s0 + IA[1, o + 1] * s1 + IA[1, o + 2] * s2
            U2 = IA[2, o] * s0 + IA[2, o + 1] * s1 + IA[2, o + 2] * s2
            U3 = IA[3, o] * s0 + IA[3, o + 1] * s1 + IA[3, o + 2] * s2
            U4 = IA[4, o] * s0 + IA[4, o + 1] * s1 + IA[4, o + 2] * s2
            U5 = IA[5, o] * s0 + IA[5, o + 1] * s1 + IA[5, o + 2] * s2
            Ut = (U0, U1, U2, U3, U4, U5)
            d = s0 * Ut[o] + s1 * Ut[o + 1] + s2 * Ut[o + 2]
            uu = tau[r, 0] - (s0 * pA[o] + s1 * pA[o + 1] + s2 * pA[o + 2])
            di = 1.0 / d if d > 0.0 else math.nan   # (a non-positive pivot: NaN, the row fails)
            for i in range(6):
                U[i, 0] = Ut[i]
            Di[0, 0] = di
            u[0] = uu
            if p >= 0:                           # Ia = IA − U Uᵀ/D, pa = pA + Ia c + U u/D, to the parent
                ud = uu * di                     # (Ia's upper triangle in registers: spatial._congruence_rt_add_sym)
                c0, c1, c2, c3, c4, c5 = V[r, VC, 0], V[r, VC, 1], V[r, VC, 2], V[r, VC, 3], V[r, VC, 4], V[r, VC, 5]
                w0 = U0 * di
                w1 = U1 * di
                w2 = U2 * di
                w3 = U3 * di
                w4 = U4 * di
                w5 = U5 * di
                a00 = IA[0, 0] - w0 * U0
                a01 = IA[0, 1] - w0 * U1
                a02 = IA[0, 2] - w0 * U2
                a03 = IA[0, 3] - w0 * U3
                a04 = IA[0, 4] - w0 * U4
                a05 = IA[0, 5] - w0 * U5
                a11 = IA[1, 1] - w1 * U1
                a12 = IA[1, 2] - w1 * U2
                a13 = IA[1, 3] - w1 * U3
                a14 = IA[1, 4] - w1 * U4
                a15 = IA[1, 5] - w1 * U5
                a22 = IA[2, 2] - w2 * U2
                a23 = IA[2, 3] - w2 * U3
                a24 = IA[2, 4] - w2 * U4
                a25 = IA[2, 5] - w2 * U5
                a33 = IA[3, 3] - w3 * U3
                a34 = IA[3, 4] - w3 * U4
                a35 = IA[3, 5] - w3 * U5
                a44 = IA[4, 4] - w4 * U4
                a45 = IA[4, 5] - w4 * U5
                a55 = IA[5, 5] - w5 * U5
                t0 = pA[0] + U0 * ud + a00 * c0 + a01 * c1 + a02 * c2 + a03 * c3 + a04 * c4 + a05 * c5
                t1 = pA[1] + U1 * ud + a01 * c0 + a11 * c1 + a12 * c2 + a13 * c3 + a14 * c4 + a15 * c5
                t2 = pA[2] + U2 * ud + a02 * c0 + a12 * c1 + a22 * c2 + a23 * c3 + a24 * c4 + a25 * c5
                t3 = pA[3] + U3 * ud + a03 * c0 + a13 * c1 + a23 * c2 + a33 * c3 + a34 * c4 + a35 * c5
                t4 = pA[4] + U4 * ud + a04 * c0 + a14 * c1 + a24 * c2 + a34 * c3 + a44 * c4 + a45 * c5
                t5 = pA[5] + U5 * ud + a05 * c0 + a15 * c1 + a25 * c2 + a35 * c3 + a45 * c4 + a55 * c5
                _cong_sym(M[r, MW], a00, a01, a02, a03, a04, a05, a11, a12, a13, a14, a15, a22, a23, a24, a25, a33, a34,
                          a35, a44, a45, a55, M[p, MIA])
                f0, f1, f2, f3, f4, f5 = _xtf(M[r, MW], t0, t1, t2, t3, t4, t5)
                V[p, VPA, 0] += f0
                V[p, VPA, 1] += f1
                V[p, VPA, 2] += f2
                V[p, VPA, 3] += f3
                V[p, VPA, 4] += f4
                V[p, VPA, 5] += f5
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
        if p >= 0 and nv != 1:
            _cong(M[r, MW], IA, M[p, MIA])
            _to_parent_add_(M[r, MW], V[r, VT], V[p, VPA])
    for k in range(n):
        r = b + k
        p = parent[r]
        S = M[r, MS]
        U = M[r, MU]
        Di = M[r, MDI]
        a = V[r, VA]
        if p >= 0:
            x0, x1, x2, x3, x4, x5 = _xm(M[r, MW], V[p, VA, 0], V[p, VA, 1], V[p, VA, 2], V[p, VA, 3], V[p, VA, 4],
                                         V[p, VA, 5])
        else:
            x0, x1, x2, x3, x4, x5 = _xm(M[r, MW], a0[0], a0[1], a0[2], a0[3], a0[4], a0[5])
        x0 += V[r, VC, 0]                         # a' = X a_parent + c
        x1 += V[r, VC, 1]
        x2 += V[r, VC, 2]
        x3 += V[r, VC, 3]
        x4 += V[r, VC, 4]
        x5 += V[r, VC, 5]
        nv = _nv(kind[r], locked[r])
        if nv == 1:                               # (the scalar form in registers, docs/design.md §8.24)
            w = Di[0, 0] * (V[r, VU, 0] - (U[0, 0] * x0 + U[1, 0] * x1 + U[2, 0] * x2 + U[3, 0] * x3
                                           + U[4, 0] * x4 + U[5, 0] * x5))
            V[r, VQDD, 0] = w
            x0 += S[0, 0] * w                     # a = a' + S q̈
            x1 += S[1, 0] * w
            x2 += S[2, 0] * w
            x3 += S[3, 0] * w
            x4 += S[4, 0] * w
            x5 += S[5, 0] * w
        _put6(a, x0, x1, x2, x3, x4, x5)
        if nv > 1:
            for i in range(nv):                   # u − Uᵀ a into the tmp vector
                acc = V[r, VU, i]
                for l in range(6):
                    acc -= U[l, i] * a[l]
                V[r, VT, i] = acc
            if p < 0:
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


def _aba(b, n, tree, tau, fext, a0, qdd, M, V):
    """Forward dynamics of one sample's links (RBDA Table 7.1): ``qdd[r, :]`` (state units, module
    docstring) from the state, the applied joint forces ``tau`` and the external link forces
    ``fext`` (body axes, about the link origin)."""
    parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia = tree
    _vel(b, n, tree, M, V)
    _abas(b, n, parent, kind, locked, mass, com, tau, fext, a0, qdd, M, V)


aba = dual(_aba, inline=False)



# ------------------------------------------------------------------------------ RNEA (RBDA Table 5.1)
def _rnea(b, n, tree, qdd, fext, a0, tau_out,
          M, V):
    """Inverse dynamics of one sample's links: ``tau_out[r, :]`` (state units: a free joint's force
    in joint axes, then its torque in body axes) that produces the accelerations ``qdd``."""
    parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia = tree
    _vel(b, n, tree, M, V)
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


def _crba(b, n, tree, H, M, V):
    """Joint-space mass matrix ``H[:N, :N]`` of one sample (N = its unlocked velocity coordinates,
    links in order), in state coordinates: ``T = ½ qdᵀ H qd``."""
    parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia = tree
    _vel(b, n, tree, M, V)
    N = _dofo(b, n, kind, locked)
    for i in range(N):
        for j in range(N):
            H[i, j] = 0.0
    for k in range(n - 1, -1, -1):                 # composite inertias
        r = b + k
        p = parent[r]
        if p >= 0:
            _cong(M[r, MW], M[r, MIA], M[p, MIA])
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
        w00, w01, w02, w03 = W[0, 0], W[0, 1], W[0, 2], W[0, 3]
        w10, w11, w12, w13 = W[1, 0], W[1, 1], W[1, 2], W[1, 3]
        w20, w21, w22, w23 = W[2, 0], W[2, 1], W[2, 2], W[2, 3]
        if p < 0:
            Rw[r, 0, 0], Rw[r, 0, 1], Rw[r, 0, 2] = w00, w01, w02
            Rw[r, 1, 0], Rw[r, 1, 1], Rw[r, 1, 2] = w10, w11, w12
            Rw[r, 2, 0], Rw[r, 2, 1], Rw[r, 2, 2] = w20, w21, w22
            for i in range(3):
                pw[r, i] = W[i, 3] - M[b, MW, i, 3] if k > 0 else 0.0
        else:                                # R_w = R_w,parent R, p_w = p_w,parent + R_w,parent p (in registers)
            for i in range(3):
                q0, q1, q2 = Rw[p, i, 0], Rw[p, i, 1], Rw[p, i, 2]
                Rw[r, i, 0] = q0 * w00 + q1 * w10 + q2 * w20
                Rw[r, i, 1] = q0 * w01 + q1 * w11 + q2 * w21
                Rw[r, i, 2] = q0 * w02 + q1 * w12 + q2 * w22
                pw[r, i] = pw[p, i] + q0 * w03 + q1 * w13 + q2 * w23


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


def _energy_momentum(b, n, tree, Rw, pw, M, V,
                     out):
    """out[0] <- kinetic energy [J]; out[1:4] <- linear momentum [kg m/s], out[4:7] <- angular
    momentum about the inertial origin [kg m²/s], both inertial axes. Also fills Rw, pw
    (:func:`_world_pose`)."""
    parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia = tree
    _vel(b, n, tree, M, V)
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


def _tree_centre(i, link, E, tree, Rw, pw, M, V,
                 total, position, velocity, angular_momentum, energy):
    """Centre row i: the whole sample of link row ``link[i]`` (rows b .. b + E − 1, its tree or
    forest): total mass, CoM position and velocity, angular momentum about that CoM and kinetic
    energy, inertial axes. Positions are summed relative to the first link's origin P
    (:func:`_world_pose`), so the momentum about the CoM is formed from metre-sized lever arms,
    not as H_O − x_c × p with x_c ~ 7000 km."""
    parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia = tree
    b = (link[i] // E) * E
    _vel(b, E, tree, M, V)
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
def tree_centres(n, link, E, tree, Rw, pw, M, V,
                 total, position, velocity, angular_momentum, energy):
    """CPU driver of :data:`tree_centre` (one centre per sample: no two rows share scratch rows)."""
    parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia = tree
    for i in prange(n):
        _centre(i, link, E, tree, Rw, pw, M, V,
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
