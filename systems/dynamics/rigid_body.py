"""Rigid-body equations of motion at a reference point offset from the CoM.

Seed 003 (GUNNS Dynamics aspect): translation and rotation are solved together as one 6×6 system
for the accelerations of the body *reference point*; the mass matrix is factorised once and the
factor reused until the mass properties change; with a zero CoM offset the system is block
diagonal and the uncoupled path is taken. Seed 002 §2.2 (Eqs. 1.12, 1.17, 1.18, 1.21) gives the
CoM special case, the quaternion kinematics and the 3-2-1 Euler-angle rates.

With ``c`` the CoM offset from the reference point P (body axes), ``I_P = I_c + m(|c|²E − c cᵀ)``,
``a`` the inertial acceleration of P and ``α`` the angular acceleration (both in body axes):

    [ m E      −m [c×] ] [a]   [ F_B − m ω×(ω×c) ]
    [ m [c×]    I_P    ] [α] = [ M_P − ω×(I_P ω) ]

(Newton for the CoM, ``F = m(a + α×c + ω×(ω×c))``, and Euler about a moving body point,
``M_P = I_P α + ω×(I_P ω) + m c×a``.) The matrix is the kinetic-energy metric: symmetric positive
definite, so a Cholesky factor is cached per row, keyed by the 13 numbers (m, c, I_c) it came from
and recomputed automatically when any of them changes at run time.

State vector of one row (``STATE_SIZE`` = 16): position p (3, inertial), velocity v (3, inertial),
quaternion q (4, body→inertial), ω (3, body), Euler angles (3, roll-pitch-yaw; only in the Euler
attitude mode, where q is derived from them).
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from ecs.kernels import cpu_parallel, dual
from ecs.attitude import euler321_rates, euler321_to_quat, quat_derivative, quat_rotate, quat_rotate_inverse
from systems.dynamics.rotating_frame import body_rate_derivative, frame_acceleration, frame_rate_in_body

STATE_SIZE = 16
MASS_KEY_SIZE = 13

# callees bound to their CPU twins; DualKernel.gpu swaps them for the GPU twins
_rot = quat_rotate.cpu
_rot_inv = quat_rotate_inverse.cpu
_qdot = quat_derivative.cpu
_erates = euler321_rates.cpu
_frame_rate, _frame_accel, _rate_derivative = frame_rate_in_body.cpu, frame_acceleration.cpu, body_rate_derivative.cpu



def _factor_mass_matrix(i, mass, com, inertia, key, L):
    """Refresh row i's Cholesky factor L (6×6, lower) of the mass matrix if (m, c, I) changed."""
    m = mass[i]
    same = key[i, 0] == m
    for k in range(3):
        same = same and key[i, 1 + k] == com[i, k]
    for r in range(3):
        for s in range(3):
            same = same and key[i, 4 + 3 * r + s] == inertia[i, r, s]
    if same:
        return
    key[i, 0] = m
    for k in range(3):
        key[i, 1 + k] = com[i, k]
    for r in range(3):
        for s in range(3):
            key[i, 4 + 3 * r + s] = inertia[i, r, s]
    cx, cy, cz = com[i, 0], com[i, 1], com[i, 2]
    c2 = cx * cx + cy * cy + cz * cz
    # assemble the symmetric 6x6 into L, then factor in place (lower triangle)
    for r in range(6):
        for s in range(6):
            L[i, r, s] = 0.0
    for k in range(3):
        L[i, k, k] = m
    # lower-left block m [c×]
    L[i, 3, 0] = 0.0
    L[i, 3, 1] = -m * cz
    L[i, 3, 2] = m * cy
    L[i, 4, 0] = m * cz
    L[i, 4, 1] = 0.0
    L[i, 4, 2] = -m * cx
    L[i, 5, 0] = -m * cy
    L[i, 5, 1] = m * cx
    L[i, 5, 2] = 0.0
    cc = (cx, cy, cz)
    for r in range(3):
        for s in range(r + 1):
            v = inertia[i, r, s] - m * cc[r] * cc[s]
            if r == s:
                v += m * c2
            L[i, 3 + r, 3 + s] = v
    # in-place Cholesky on the lower triangle
    for j in range(6):
        d = L[i, j, j]
        for k in range(j):
            d -= L[i, j, k] * L[i, j, k]
        d = math.sqrt(d) if d > 0.0 else math.nan
        L[i, j, j] = d
        for r in range(j + 1, 6):
            v = L[i, r, j]
            for k in range(j):
                v -= L[i, r, k] * L[i, j, k]
            L[i, r, j] = v / d


factor_mass_matrix = dual(_factor_mass_matrix)
_factor = factor_mass_matrix.cpu


def _body_derivative(i, active, state, euler, euler_mode, mass, com, inertia, wrench, fr, key, L, ydot, stage):
    """Write row i's state derivative into ``ydot[i, stage, :]`` if the row is active: ``state =
    (pos, vel, att, omega)``, the body columns; ``wrench = (force, torque)``, the applied force
    (integration frame) and torque about the reference point (body axes).

    ``fr`` is the rate Ω of the integration frame (:class:`components.rigid.RotatingFrame`; zeros:
    inertial). In a turning frame the state is relative to it: the equations above are solved with
    the inertial rate ω_I = ω + Ω_B (Ω_B = Rᵀ Ω, body axes) for the inertial accelerations a, α of
    the reference point, which become relative ones as in seed 004 eqs 2.2–2.5 (Ω̇ = 0):
    ``v̇ = R a − 2 Ω × v − Ω × (Ω × p)`` and ``ω̇ = α − ω_I × ω``, the frame's terms of every rigid
    body and probe (:mod:`systems.dynamics.rotating_frame`)."""
    if not active[i]:
        return
    pos, vel, att, omega = state
    force, torque = wrench
    _factor(i, mass, com, inertia, key, L)
    q0, q1, q2, q3 = att[i, 0], att[i, 1], att[i, 2], att[i, 3]
    rx, ry, rz = omega[i, 0], omega[i, 1], omega[i, 2]          # relative to the integration frame
    wx, wy, wz = rx, ry, rz                                      # inertial rate, body axes
    spin = fr[0] != 0.0 or fr[1] != 0.0 or fr[2] != 0.0
    ox = oy = oz = 0.0
    if spin:
        ox, oy, oz = _frame_rate(q0, q1, q2, q3, fr[0], fr[1], fr[2])
        wx, wy, wz = rx + ox, ry + oy, rz + oz
    m = mass[i]
    cx, cy, cz = com[i, 0], com[i, 1], com[i, 2]
    fbx, fby, fbz = _rot_inv(q0, q1, q2, q3, force[i, 0], force[i, 1], force[i, 2])
    # I_P ω with I_P = I_c + m(|c|²E − c cᵀ)
    c2 = cx * cx + cy * cy + cz * cz
    cw = cx * wx + cy * wy + cz * wz
    ipx = inertia[i, 0, 0] * wx + inertia[i, 0, 1] * wy + inertia[i, 0, 2] * wz + m * (c2 * wx - cx * cw)
    ipy = inertia[i, 1, 0] * wx + inertia[i, 1, 1] * wy + inertia[i, 1, 2] * wz + m * (c2 * wy - cy * cw)
    ipz = inertia[i, 2, 0] * wx + inertia[i, 2, 1] * wy + inertia[i, 2, 2] * wz + m * (c2 * wz - cz * cw)
    # right-hand side
    r3 = torque[i, 0] - (wy * ipz - wz * ipy)
    r4 = torque[i, 1] - (wz * ipx - wx * ipz)
    r5 = torque[i, 2] - (wx * ipy - wy * ipx)
    coupled = cx != 0.0 or cy != 0.0 or cz != 0.0
    if coupled:
        # ω×(ω×c) = ω (ω·c) − c |ω|²
        w2 = wx * wx + wy * wy + wz * wz
        r0 = fbx - m * (wx * cw - cx * w2)
        r1 = fby - m * (wy * cw - cy * w2)
        r2 = fbz - m * (wz * cw - cz * w2)
        # forward substitution L z = r (6x6), then back substitution Lᵀ x = z
        z0 = r0 / L[i, 0, 0]
        z1 = (r1 - L[i, 1, 0] * z0) / L[i, 1, 1]
        z2 = (r2 - L[i, 2, 0] * z0 - L[i, 2, 1] * z1) / L[i, 2, 2]
        z3 = (r3 - L[i, 3, 0] * z0 - L[i, 3, 1] * z1 - L[i, 3, 2] * z2) / L[i, 3, 3]
        z4 = (r4 - L[i, 4, 0] * z0 - L[i, 4, 1] * z1 - L[i, 4, 2] * z2 - L[i, 4, 3] * z3) / L[i, 4, 4]
        z5 = (r5 - L[i, 5, 0] * z0 - L[i, 5, 1] * z1 - L[i, 5, 2] * z2 - L[i, 5, 3] * z3
              - L[i, 5, 4] * z4) / L[i, 5, 5]
        x5 = z5 / L[i, 5, 5]
        x4 = (z4 - L[i, 5, 4] * x5) / L[i, 4, 4]
        x3 = (z3 - L[i, 4, 3] * x4 - L[i, 5, 3] * x5) / L[i, 3, 3]
        x2 = (z2 - L[i, 3, 2] * x3 - L[i, 4, 2] * x4 - L[i, 5, 2] * x5) / L[i, 2, 2]
        x1 = (z1 - L[i, 2, 1] * x2 - L[i, 3, 1] * x3 - L[i, 4, 1] * x4 - L[i, 5, 1] * x5) / L[i, 1, 1]
        x0 = (z0 - L[i, 1, 0] * x1 - L[i, 2, 0] * x2 - L[i, 3, 0] * x3 - L[i, 4, 0] * x4
              - L[i, 5, 0] * x5) / L[i, 0, 0]
        ax, ay, az = _rot(q0, q1, q2, q3, x0, x1, x2)
        alx, aly, alz = x3, x4, x5
    else:
        # uncoupled path: a = F/m in the inertial frame; I α = r via the 3x3 block of L
        ax, ay, az = force[i, 0] / m, force[i, 1] / m, force[i, 2] / m
        z3 = r3 / L[i, 3, 3]
        z4 = (r4 - L[i, 4, 3] * z3) / L[i, 4, 4]
        z5 = (r5 - L[i, 5, 3] * z3 - L[i, 5, 4] * z4) / L[i, 5, 5]
        alz = z5 / L[i, 5, 5]
        aly = (z4 - L[i, 5, 4] * alz) / L[i, 4, 4]
        alx = (z3 - L[i, 4, 3] * aly - L[i, 5, 3] * alz) / L[i, 3, 3]
    if spin:                                                     # relative to the turning frame
        ax, ay, az = _frame_accel(ax, ay, az, fr[0], fr[1], fr[2], pos[i, 0], pos[i, 1], pos[i, 2],
                                  vel[i, 0], vel[i, 1], vel[i, 2])
        alx, aly, alz = _rate_derivative(alx, aly, alz, wx, wy, wz, rx, ry, rz)
    d = ydot
    d[i, stage, 0] = vel[i, 0]
    d[i, stage, 1] = vel[i, 1]
    d[i, stage, 2] = vel[i, 2]
    d[i, stage, 3] = ax
    d[i, stage, 4] = ay
    d[i, stage, 5] = az
    d[i, stage, 10] = alx
    d[i, stage, 11] = aly
    d[i, stage, 12] = alz
    if euler_mode:
        er, ep, ey = _erates(euler[i, 0], euler[i, 1], euler[i, 2], rx, ry, rz)
        d[i, stage, 6] = 0.0
        d[i, stage, 7] = 0.0
        d[i, stage, 8] = 0.0
        d[i, stage, 9] = 0.0
        d[i, stage, 13] = er
        d[i, stage, 14] = ep
        d[i, stage, 15] = ey
    else:
        dq0, dq1, dq2, dq3 = _qdot(q0, q1, q2, q3, rx, ry, rz)
        d[i, stage, 6] = dq0
        d[i, stage, 7] = dq1
        d[i, stage, 8] = dq2
        d[i, stage, 9] = dq3
        d[i, stage, 13] = 0.0
        d[i, stage, 14] = 0.0
        d[i, stage, 15] = 0.0


body_derivative = dual(_body_derivative)
_body_derivative_cpu = body_derivative.cpu


# Without the reference-counting runtime: each array unpacked from a tuple argument inside the prange
# body costs an atomic incref/decref per row with it (DP5(4) attempts 4-5 % slower, measured); the
# driver allocates nothing.
@cpu_parallel(nrt=False)
def body_derivative_rows(n, active, state, euler, euler_mode, mass, com, inertia, wrench, fr, key, L, ydot, stage):
    """CPU driver of :data:`body_derivative` (one integrator stage, every active row)."""
    for i in prange(n):
        _body_derivative_cpu(i, active, state, euler, euler_mode, mass, com, inertia, wrench, fr, key, L, ydot, stage)


def new_mass_cache(rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Empty factor cache for ``rows`` rows: key (NaN never compares equal) and L."""
    return np.full((rows, MASS_KEY_SIZE), np.nan), np.zeros((rows, 6, 6))
