"""Solar radiation pressure on cannonball bodies, with the Earth's cylindrical shadow (DERIVATIVE).

For each row with mass, at every integrator stage, with s the geocentric Sun at the row's stage
time (:class:`components.ephemeris.Ephemeris`, as :mod:`systems.third_body`) and r its CoM:

    a = −ν P⊙ C_R (A/m) (AU/|s − r|)² (s − r)/|s − r|

(Montenbruck & Gill, *Satellite Orbits*, 2000, eq 3.75; P⊙ = 4.56e-6 N/m² at 1 AU), with the
shadow function ν of the cylindrical model (§3.4.2): ν = 0 when the body is behind the Earth
(``r·ŝ < 0``) within the cylinder of the Earth's radius about the Sun line, 1 otherwise. A and C_R
are the body's :class:`components.environment.Cannonball` columns; the force acts at the CoM.
"""

from __future__ import annotations

import math

from numba import prange

from components.ephemeris import Ephemeris
from ecs import InputError, Phase, System
from ecs.attitude import quat_rotate
from ecs.kernels import cpu_parallel, dual, launch_rows, to_backend
from systems.gravity import add_weight
from systems.third_body import check_window, moon_and_sun, world_ephemeris

__all__ = ["P_SUN", "SolarRadiationPressure"]

#: Solar radiation pressure at 1 AU [N/m²] (Montenbruck & Gill 2000, eq 3.69).
P_SUN = 4.56e-6
#: Astronomical unit [m] (IAU 2012).
AU = 149597870700.0

_rot = quat_rotate.cpu
_weight = add_weight.cpu
_moon_sun = moon_and_sun.cpu


def _add_srp(i, status, pos, att, mass, com, area, cr, force, torque, time, coef, start, length, emrat, p_sun,
             earth_radius):
    if status[i] != 0 or area[i] == 0.0:
        return
    cx, cy, cz = _rot(att[i, 0], att[i, 1], att[i, 2], att[i, 3], com[i, 0], com[i, 1], com[i, 2])
    x, y, z = pos[i, 0] + cx, pos[i, 1] + cy, pos[i, 2] + cz
    p = _moon_sun(coef, start, length, emrat, time[i])
    sx, sy, sz = p[3], p[4], p[5]
    sn = math.sqrt(sx * sx + sy * sy + sz * sz)
    ux, uy, uz = sx / sn, sy / sn, sz / sn
    along = x * ux + y * uy + z * uz
    if along < 0.0:
        px, py, pz = x - along * ux, y - along * uy, z - along * uz
        if px * px + py * py + pz * pz < earth_radius * earth_radius:
            return                                   # in the Earth's shadow
    dx, dy, dz = sx - x, sy - y, sz - z
    d = math.sqrt(dx * dx + dy * dy + dz * dz)
    k = -p_sun * cr[i] * area[i] / mass[i] * (AU / d) ** 2 / d
    _weight(i, status, k * dx, k * dy, k * dz, mass, com, att, force, torque)


add_srp = dual(_add_srp)
_srp = add_srp.cpu


@cpu_parallel
def add_srp_rows(n, status, pos, att, mass, com, area, cr, force, torque, time, coef, start, length, emrat, p_sun,
                 earth_radius):
    for i in prange(n):
        _srp(i, status, pos, att, mass, com, area, cr, force, torque, time, coef, start, length, emrat, p_sun,
             earth_radius)


COLUMNS = ("body_position", "body_attitude", "body_mass", "body_com", "body_area", "body_reflectivity", "body_force",
           "body_torque", "row_time")


class SolarRadiationPressure(System):
    """Sunlight on every cannonball body (module docstring).

    Args:
        ephemeris: the Sun's positions (default: the world's :class:`Ephemeris` resource).
        pressure: P⊙ [N/m²] at 1 AU; earth_radius: the shadow cylinder's radius [m].
    """

    phase = Phase.DERIVATIVE
    reads = ("body_position", "body_attitude", "body_mass", "body_com", "body_area", "body_reflectivity", "row_time")
    accumulates = ("body_force", "body_torque")

    def __init__(self, ephemeris: Ephemeris | None = None, *, pressure: float = P_SUN, earth_radius: float = 6378137.0):
        for name, v in (("pressure", pressure), ("earth_radius", earth_radius)):
            if not (math.isfinite(v) and v >= 0):
                raise InputError(f"SolarRadiationPressure.{name}", v, "must be a finite number >= 0")
        self._ephemeris = ephemeris
        self.pressure, self.earth_radius = float(pressure), float(earth_radius)

    def bind(self, world) -> None:
        eph = self.ephemeris = world_ephemeris(world, self._ephemeris, "SolarRadiationPressure")
        self.tables = world.tables_with(*COLUMNS)
        if not self.tables:
            raise InputError("SolarRadiationPressure: bodies", None,
                             "no body has the Cannonball component (area, reflectivity): spawn bodies with "
                             "components.environment.Cannonball(area=...)")
        self._args = to_backend(world.backend, (eph.coef, eph.record_start, eph.record_length, eph.emrat,
                                                self.pressure, self.earth_radius))

    def process(self, frame) -> None:
        check_window(self.ephemeris, frame)
        for t in self.tables:
            launch_rows(frame.backend, add_srp_rows, add_srp, t.row_count, t["row_status"], t["body_position"],
                        t["body_attitude"], t["body_mass"], t["body_com"], t["body_area"], t["body_reflectivity"],
                        t["body_force"], t["body_torque"], t["row_time"], *self._args)
