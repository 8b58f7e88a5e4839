"""Gravity systems (DERIVATIVE phase): the force of a field on every body with mass.

Gravity acts at the centre of mass. With the state carried at a reference point offset by
``body_com`` (seed 003), the weight also adds ``c × (m g_B)`` to the torque about that point.
The field sources of seed 004 §2.4 (point mass, polyhedron, voxel grids) build on this module.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from ecs import InputError, Phase, System
from ecs.kernels import cpu_parallel, dual, launch_rows
from ecs.attitude import quat_rotate_inverse

_rot_inv = quat_rotate_inverse.cpu


def _add_weight(i, status, gx, gy, gz, mass, com, att, force, torque):
    """Add m g (inertial) to row i's force and c × (m g_B) to its torque."""
    if status[i] != 0:
        return
    m = mass[i]
    force[i, 0] += m * gx
    force[i, 1] += m * gy
    force[i, 2] += m * gz
    cx, cy, cz = com[i, 0], com[i, 1], com[i, 2]
    if cx != 0.0 or cy != 0.0 or cz != 0.0:
        bx, by, bz = _rot_inv(att[i, 0], att[i, 1], att[i, 2], att[i, 3], m * gx, m * gy, m * gz)
        torque[i, 0] += cy * bz - cz * by
        torque[i, 1] += cz * bx - cx * bz
        torque[i, 2] += cx * by - cy * bx


add_weight = dual(_add_weight)
_add_weight_cpu = add_weight.cpu


def _add_wrench(i, q0, q1, q2, q3, cx, cy, cz, fx, fy, fz, tx, ty, tz, force, torque):
    """Add a force F (inertial, through the CoM) and a torque T about the CoM (body axes) to row i's
    accumulators about its reference point: ``force += F``, ``torque += T + c × F_B``."""
    force[i, 0] += fx
    force[i, 1] += fy
    force[i, 2] += fz
    bx, by, bz = _rot_inv(q0, q1, q2, q3, fx, fy, fz)
    torque[i, 0] += tx + cy * bz - cz * by
    torque[i, 1] += ty + cz * bx - cx * bz
    torque[i, 2] += tz + cx * by - cy * bx


def _plate_push(fx, fy, fz, tx, ty, tz, kx, ky, kz, center, i, k, cx, cy, cz):
    """The running force and torque about the CoM (body axes) plus plate k's force (kx, ky, kz),
    applied at its centre of pressure ``center[i, k]`` (from the reference point; the CoM at c)."""
    lx, ly, lz = center[i, k, 0] - cx, center[i, k, 1] - cy, center[i, k, 2] - cz
    return (fx + kx, fy + ky, fz + kz, tx + ly * kz - lz * ky, ty + lz * kx - lx * kz, tz + lx * ky - ly * kx)


add_wrench = dual(_add_wrench)
plate_push = dual(_plate_push)


@cpu_parallel
def add_weight_rows(n, status, gx, gy, gz, mass, com, att, force, torque):
    for i in prange(n):
        _add_weight_cpu(i, status, gx, gy, gz, mass, com, att, force, torque)


class UniformGravity(System):
    """A uniform gravitational acceleration ``g`` [m/s²], inertial frame (e.g. (0, 0, −9.81))."""

    phase = Phase.DERIVATIVE
    reads = ("body_mass", "body_com", "body_attitude")
    accumulates = ("body_force", "body_torque")

    def __init__(self, g=(0.0, 0.0, -9.81)):
        g = np.asarray(g, float)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise InputError("gravity g", g.tolist(), "must be a finite 3-vector [m/s^2]")
        self.g = g

    def bind(self, world) -> None:
        self.tables = world.tables_with("body_mass", "body_force", "body_com")

    def process(self, frame) -> None:
        gx, gy, gz = (float(v) for v in self.g)
        for t in self.tables:
            launch_rows(frame.backend, add_weight_rows, add_weight, t.row_count, t["row_status"], gx, gy, gz,
                        t["body_mass"], t["body_com"], t["body_attitude"], t["body_force"], t["body_torque"])
