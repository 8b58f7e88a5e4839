"""Row terms (:mod:`ecs.terms`) in the rigid-body pipeline: one user force for every pipeline.

A DERIVATIVE system that contributes only a :class:`ecs.terms.Term` (no ``process``) takes part in
the deployment's right-hand sides (:mod:`systems.deployment.loop`) and, through this module, in the
stage loop of :class:`systems.dynamics.integration.Integrator`: at every stage the integrator calls
:func:`add_row_terms_rows` linked against the fused sum of the world's terms, after the
launch-style DERIVATIVE systems, so the same term kernel moves a lander and a free-flying body.

Frames, per the term convention: the rigid pipeline integrates in the inertial frame N, so the
term sees the CoM ``x = p + R(q) c`` and its velocity ``v + R(q)(ω × c)`` in N, the attitude
body → N (normalised: RK stage quaternions are not unit) and ω in body axes. It returns the force
in N, added to ``body_force``, and the torque about the CoM in body axes, added to ``body_torque``
about the reference point as ``τ + c × R(q)ᵀ F`` (:mod:`systems.dynamics.rigid_body`: the reference point P
sits ``c`` from the CoM).

CPU backend: the fused kernels are CPU copies (:func:`ecs.kernels.relink`); a GPU world with
term-only systems is refused at bind (:class:`systems.dynamics.integration.Integrator`).
"""

from __future__ import annotations

import math

from ecs.attitude import quat_rotate
from ecs.kernels import cpu_jit
from ecs.terms import RowState, row_terms_none
from systems.gravity.uniform import add_wrench

_rot = quat_rotate.cpu
_wrench = add_wrench.cpu
_terms = row_terms_none


@cpu_jit(inline="always")
def add_row_terms(i, active, time, pos, vel, att, omega, mass, com, force, torque, tt):
    """Add the world's row terms at row i's stage state to its force and torque (module docstring)."""
    if not active[i]:
        return
    q0, q1, q2, q3 = att[i, 0], att[i, 1], att[i, 2], att[i, 3]
    s = 1.0 / math.sqrt(q0 * q0 + q1 * q1 + q2 * q2 + q3 * q3)
    q0, q1, q2, q3 = q0 * s, q1 * s, q2 * s, q3 * s
    cx, cy, cz = com[i, 0], com[i, 1], com[i, 2]
    wx, wy, wz = omega[i, 0], omega[i, 1], omega[i, 2]
    rx, ry, rz = _rot(q0, q1, q2, q3, cx, cy, cz)
    ux, uy, uz = _rot(q0, q1, q2, q3, wy * cz - wz * cy, wz * cx - wx * cz, wx * cy - wy * cx)
    s = RowState(i, time[i], pos[i, 0] + rx, pos[i, 1] + ry, pos[i, 2] + rz, vel[i, 0] + ux, vel[i, 1] + uy,
                 vel[i, 2] + uz, q0, q1, q2, q3, wx, wy, wz, mass[i])
    fx, fy, fz, tx, ty, tz = _terms(s, tt.columns, tt.params)
    _wrench(i, q0, q1, q2, q3, cx, cy, cz, fx, fy, fz, tx, ty, tz, force, torque)


@cpu_jit
def add_row_terms_rows(n, active, time, pos, vel, att, omega, mass, com, force, torque, tt):
    """Driver over the rows (serial: a term is a few flops; link it with :func:`ecs.terms.fuse_terms`)."""
    for i in range(n):
        add_row_terms(i, active, time, pos, vel, att, omega, mass, com, force, torque, tt)


#: The pipeline kernel :func:`ecs.terms.fuse_terms` links against a world's terms.
ROOTS = {"add_row_terms_rows": add_row_terms_rows}
