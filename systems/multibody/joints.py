"""The joint model of articulated trees: a joint's placement, motion subspace and velocity from its
kind (free, revolute, prismatic, spherical, fixed; ``components.multibody``), the internal joint
torque, the links' velocities down a tree and the joint accelerations out of a solve (RBDA §4,
Pinocchio's free-flyer coordinates for free joints: :mod:`systems.multibody.kernels`). A new
joint kind goes here.
"""

from __future__ import annotations

import math

from components.multibody import FREE, PRISMATIC, QD_SLOTS, REVOLUTE, SPHERICAL
from ecs.kernels import dual
from systems.multibody.spatial import (MIA, MS, MT, MW, VC, VQD, VQDD, VV, cross_motion, dcm_into, motion_in, nv_of,
                                       set6, spatial_inertia)

_crossm = cross_motion.cpu
_xm = motion_in.cpu
_put6 = set6.cpu
_nv = nv_of.cpu
_q2m = dcm_into.cpu
_sinertia = spatial_inertia.cpu


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
    for j in range(nv):          # (column by column: row by row, LLVM made it six memset calls per link)
        for i in range(6):
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


def _velocities(b, n, tree, M, V):
    """Pass 1 shared by the algorithms: joint set-up, link velocities v (VV), velocity-product
    accelerations c = v ×m v_J (VC), spatial inertias (MIA)."""
    parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia = tree
    for k in range(n):
        r = b + k
        nv = _setup(r, kind, axis, offset, rotation, q, qd, locked, M, V)
        p = parent[r]
        S = M[r, MS]
        j0 = 0.0                             # v_J = S q̇, v and c in registers (docs/design.md §8.24)
        j1 = 0.0
        j2 = 0.0
        j3 = 0.0
        j4 = 0.0
        j5 = 0.0
        for j in range(nv):
            w = V[r, VQD, j]
            j0 += S[0, j] * w
            j1 += S[1, j] * w
            j2 += S[2, j] * w
            j3 += S[3, j] * w
            j4 += S[4, j] * w
            j5 += S[5, j] * w
        if p >= 0:                           # v = X v_parent + v_J, c = v ×m v_J
            x0, x1, x2, x3, x4, x5 = _xm(M[r, MW], V[p, VV, 0], V[p, VV, 1], V[p, VV, 2], V[p, VV, 3], V[p, VV, 4],
                                         V[p, VV, 5])
            v0, v1, v2, v3, v4, v5 = x0 + j0, x1 + j1, x2 + j2, x3 + j3, x4 + j4, x5 + j5
            c0, c1, c2, c3, c4, c5 = _crossm(v0, v1, v2, v3, v4, v5, j0, j1, j2, j3, j4, j5)
        else:                                # a root: v = v_J, so c = v_J ×m v_J = 0 (exactly, not by round-off)
            v0, v1, v2, v3, v4, v5 = j0, j1, j2, j3, j4, j5
            c0 = c1 = c2 = c3 = c4 = c5 = 0.0
        _put6(V[r, VV], v0, v1, v2, v3, v4, v5)
        _put6(V[r, VC], c0, c1, c2, c3, c4, c5)
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
