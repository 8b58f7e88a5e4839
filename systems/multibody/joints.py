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
from systems.multibody.spatial import (MIA, MS, MT, MW, VC, VQD, VQDD, VT, VV, crm, dcm_into, from_parent, nv_of,
                                       spatial_inertia)

_crm_ = crm.cpu
_from_parent_ = from_parent.cpu
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


def _velocities(b, n, tree, M, V):
    """Pass 1 shared by the algorithms: joint set-up, link velocities v (VV), velocity-product
    accelerations c = v ×m v_J (VC), spatial inertias (MIA)."""
    parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia = tree
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
