"""The rigid body's equations of motion in a uniformly turning frame, written once (seed 004
eqs 2.2–2.5): what every free body and every deployment probe integrated relative to a spinning
target adds to its inertial accelerations.

With Ω = Ω_T/N the frame's constant rate (frame components), a state relative to the frame
(position x, velocity v, attitude q body → frame scalar-first, rate ω = ω_S/T in body axes) and
the inertial accelerations a (frame components) and α = dω_S/N/dt (body axes) that the forces and
torques give::

    ω_S/N = ω + R(q)ᵀ Ω                                        (eq 2.4)
    v̇ = a − 2 Ω × v − Ω × (Ω × x)                             (eq 2.2: Coriolis, centrifugal)
    ω̇ = α − ω_S/N × ω                                          (eq 2.5)

with, for a body whose rotation is solved about its CoM (a deployment probe),
``α = I⁻¹ (L − ω_S/N × I ω_S/N)`` (:data:`euler_acceleration`). A body whose reference point is
offset from its CoM (:mod:`systems.dynamics.rigid_body`, seed 003) solves a and α together through
its 6×6 mass matrix and then takes the frame terms from here. The last line follows from
ω = ω_S/N − R(q)ᵀΩ with Ω constant: ``d/dt(R(q)ᵀΩ) = −ω_S/N × R(q)ᵀΩ = ω_S/N × ω``.

Users: :func:`systems.dynamics.rigid_body.body_derivative` (rigid bodies in a
:class:`components.rigid.RotatingFrame`) and :mod:`systems.deployment.physics` (the probes'
right-hand side on every phase kernel, CPU and GPU). Inlined where they are called (:func:`ecs.kernels.dual`):
the GPU phase kernels keep the registers they had when this was written inside them.
"""

from __future__ import annotations

import math

from ecs.attitude import cross_call, quat_rotate_inverse_call
from ecs.kernels import dual

_cross = cross_call.cpu
_rot_inv = quat_rotate_inverse_call.cpu


def _frame_rate_in_body(q0, q1, q2, q3, ox, oy, oz):
    """R(q)ᵀ Ω: the frame's rate Ω (frame components) in body axes, with q normalised first (a
    Runge–Kutta stage's quaternion is not of unit length)."""
    n2 = q0 * q0 + q1 * q1 + q2 * q2 + q3 * q3
    s = 1.0 / math.sqrt(n2)
    return _rot_inv(q0 * s, q1 * s, q2 * s, q3 * s, ox, oy, oz)


frame_rate_in_body = dual(_frame_rate_in_body)


def _frame_acceleration(ax, ay, az, ox, oy, oz, x, y, z, vx, vy, vz):
    """Eq 2.2: v̇ = a − 2 Ω × v − Ω × (Ω × x), the acceleration relative to the frame of a point at
    x moving at v (both relative to the frame) whose inertial acceleration is a (frame components)."""
    cx, cy, cz = _cross(ox, oy, oz, x, y, z)
    ccx, ccy, ccz = _cross(ox, oy, oz, cx, cy, cz)
    kx, ky, kz = _cross(ox, oy, oz, vx, vy, vz)
    return ax - 2.0 * kx - ccx, ay - 2.0 * ky - ccy, az - 2.0 * kz - ccz


frame_acceleration = dual(_frame_acceleration)


def _euler_acceleration(inertia, jinv, sx, sy, sz, lx, ly, lz):
    """α = I⁻¹ (L − ω_S/N × I ω_S/N): Euler's equations about the CoM (body axes), with I and I⁻¹
    [3, 3], the inertial rate s = ω_S/N and the torque L about the CoM."""
    hx = inertia[0, 0] * sx + inertia[0, 1] * sy + inertia[0, 2] * sz
    hy = inertia[1, 0] * sx + inertia[1, 1] * sy + inertia[1, 2] * sz
    hz = inertia[2, 0] * sx + inertia[2, 1] * sy + inertia[2, 2] * sz
    gx_, gy_, gz_ = _cross(sx, sy, sz, hx, hy, hz)
    tx, ty, tz = lx - gx_, ly - gy_, lz - gz_
    ax = jinv[0, 0] * tx + jinv[0, 1] * ty + jinv[0, 2] * tz
    ay = jinv[1, 0] * tx + jinv[1, 1] * ty + jinv[1, 2] * tz
    az = jinv[2, 0] * tx + jinv[2, 1] * ty + jinv[2, 2] * tz
    return ax, ay, az


euler_acceleration = dual(_euler_acceleration)


def _body_rate_derivative(alx, aly, alz, sx, sy, sz, wx, wy, wz):
    """Eq 2.5: ω̇ = α − ω_S/N × ω, the derivative of the rate relative to the frame (body axes)
    from the inertial angular acceleration α, the inertial rate s = ω_S/N and the relative rate ω."""
    px, py, pz = _cross(sx, sy, sz, wx, wy, wz)
    return alx - px, aly - py, alz - pz


body_rate_derivative = dual(_body_rate_derivative)
