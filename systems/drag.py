"""Atmospheric drag on cannonball bodies (DERIVATIVE phase).

For each row with mass, at every integrator stage:

    a = −½ ρ(h) (C_D A / m) |v_r| v_r,     v_r = v_CoM − ω ẑ × r_CoM

(Montenbruck & Gill, *Satellite Orbits*, 2000, eqs 3.97 and 3.99: the atmosphere turns with the
Earth), with ρ the :class:`components.environment.ExponentialAtmosphere` at the CoM's altitude
``|r| − R`` and A, C_D the body's :class:`components.environment.Cannonball` columns. The force
``m a`` acts at the CoM (``c × m a_B`` about the reference point) through the row kernel every
weight uses (:data:`systems.gravity.add_weight`). Inertial frame: Earth-centred, z along the
Earth's rotation axis.
"""

from __future__ import annotations

import math

from numba import prange

from components.environment import ExponentialAtmosphere
from ecs import InputError, Phase, System
from ecs.attitude import cross, quat_rotate
from ecs.kernels import cpu_jit, cpu_parallel, dual, launch_rows, to_backend
from ecs.terms import Term
from systems.gravity import add_weight

__all__ = ["AtmosphericDrag", "density_at", "drag_term"]

_rot = quat_rotate.cpu
_cross = cross.cpu
_weight = add_weight.cpu


def _density_at(h, base, rho0, scale):
    """ρ [kg/m³] at altitude h [m]: the band ``base[i] <= h < base[i+1]`` (clamped at both ends)."""
    i = 0
    while i + 1 < base.shape[0] and base[i + 1] <= h:
        i += 1
    return rho0[i] * math.exp(-(h - base[i]) / scale[i])


density_at = dual(_density_at)
_rho = density_at.cpu


def _drag_acceleration(x, y, z, vx, vy, vz, area, cd, mass, base, rho0, scale, radius, spin):
    """−½ ρ(h) (C_D A / m) |v_r| v_r [m/s²] at CoM (x, y, z) moving at (vx, vy, vz), inertial."""
    ux = vx + spin * y                                          # v − ω_E ẑ × r
    uy = vy - spin * x
    uz = vz
    h = math.sqrt(x * x + y * y + z * z) - radius
    k = -0.5 * _rho(h, base, rho0, scale) * cd * area / mass * math.sqrt(ux * ux + uy * uy + uz * uz)
    return k * ux, k * uy, k * uz


drag_acceleration = dual(_drag_acceleration)
_drag_acc = drag_acceleration.cpu


def _add_drag(i, status, pos, vel, att, omega, mass, com, area, cd, force, torque, base, rho0, scale, radius, spin):
    if status[i] != 0 or area[i] == 0.0:
        return
    q0, q1, q2, q3 = att[i, 0], att[i, 1], att[i, 2], att[i, 3]
    cx, cy, cz = _rot(q0, q1, q2, q3, com[i, 0], com[i, 1], com[i, 2])
    wx, wy, wz = _cross(omega[i, 0], omega[i, 1], omega[i, 2], com[i, 0], com[i, 1], com[i, 2])
    ux, uy, uz = _rot(q0, q1, q2, q3, wx, wy, wz)             # ω × c, inertial
    ax, ay, az = _drag_acc(pos[i, 0] + cx, pos[i, 1] + cy, pos[i, 2] + cz, vel[i, 0] + ux, vel[i, 1] + uy,
                           vel[i, 2] + uz, area[i], cd[i], mass[i], base, rho0, scale, radius, spin)
    _weight(i, status, ax, ay, az, mass, com, att, force, torque)


@cpu_jit
def drag_term(i, t, x, y, z, vx, vy, vz, q0, q1, q2, q3, wx, wy, wz, mass, area, cd, base, rho0, scale, radius,
              spin):
    """Row term (:mod:`ecs.terms`) of the drag on row i's cannonball at its CoM (inertial frame)."""
    if area[i] == 0.0:
        return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    ax, ay, az = _drag_acc(x, y, z, vx, vy, vz, area[i], cd[i], mass, base, rho0, scale, radius, spin)
    return mass * ax, mass * ay, mass * az, 0.0, 0.0, 0.0


add_drag = dual(_add_drag)
_drag = add_drag.cpu


@cpu_parallel
def add_drag_rows(n, status, pos, vel, att, omega, mass, com, area, cd, force, torque, base, rho0, scale, radius, spin):
    for i in prange(n):
        _drag(i, status, pos, vel, att, omega, mass, com, area, cd, force, torque, base, rho0, scale, radius, spin)


COLUMNS = ("body_position", "body_velocity", "body_attitude", "body_omega", "body_mass", "body_com", "body_area",
           "body_drag_coefficient", "body_force", "body_torque")


class AtmosphericDrag(System):
    """Drag of the world's :class:`ExponentialAtmosphere` (or the one given) on every cannonball body."""

    phase = Phase.DERIVATIVE
    reads = COLUMNS[:8]
    accumulates = ("body_force", "body_torque")

    def __init__(self, atmosphere: ExponentialAtmosphere | None = None):
        if atmosphere is not None and not isinstance(atmosphere, ExponentialAtmosphere):
            raise InputError("AtmosphericDrag.atmosphere", type(atmosphere).__name__,
                             "must be a components.environment.ExponentialAtmosphere")
        self._atmosphere = atmosphere

    def _resolve(self, world) -> ExponentialAtmosphere:
        return self._atmosphere or world.resource(ExponentialAtmosphere, None) or ExponentialAtmosphere()

    def bind(self, world) -> None:
        atm = self.atmosphere = self._resolve(world)
        self.tables = world.tables_with(*COLUMNS)
        if not world.tables_with("body_area", "body_drag_coefficient"):
            raise InputError("AtmosphericDrag: bodies", None,
                             "no body has the Cannonball component (area, drag_coefficient): spawn bodies with "
                             "components.environment.Cannonball(area=...)")
        self._args = to_backend(world.backend, (atm.base_altitude, atm.base_density, atm.scale_height, atm.radius,
                                                atm.rotation))

    def process(self, frame) -> None:
        for t in self.tables:
            launch_rows(frame.backend, add_drag_rows, add_drag, t.row_count, t["row_status"], t["body_position"],
                        t["body_velocity"], t["body_attitude"], t["body_omega"], t["body_mass"], t["body_com"],
                        t["body_area"], t["body_drag_coefficient"], t["body_force"], t["body_torque"], *self._args)

    def term(self, world) -> Term:
        """The same drag as a row term (multibody links: each link's own cannonball and velocity)."""
        atm = self._resolve(world)
        return Term("drag", drag_term, columns=("body_area", "body_drag_coefficient"), inertial=True,
                    arrays={"base": atm.base_altitude, "rho0": atm.base_density, "scale": atm.scale_height},
                    params={"radius": float(atm.radius), "spin": float(atm.rotation)})
