"""Solar radiation pressure on cannonball bodies, with the Earth's cylindrical shadow (DERIVATIVE).

For each row with mass, at every integrator stage, with s the geocentric Sun at the row's stage
time (:class:`components.ephemeris.Ephemeris`, as :mod:`systems.third_body`) and r its CoM:

    a = −ν P⊙ C_R (A/m) (AU/|s − r|)² (s − r)/|s − r|

(Montenbruck & Gill, *Satellite Orbits*, 2000, eq 3.75; P⊙ = 4.56e-6 N/m² at 1 AU), with the
shadow function ν of the cylindrical model (§3.4.2): ν = 0 when the body is behind the Earth
(``r·ŝ < 0``) within the cylinder of the Earth's radius about the Sun line, 1 otherwise. A and C_R
are the body's :class:`components.environment.Cannonball` columns; the force acts at the CoM.
As a row term (:func:`srp_term`, multibody links) the same formula runs at the pipeline's stage
time, NaN outside the ephemeris window.
"""

from __future__ import annotations

import math

from numba import prange

from components.ephemeris import Ephemeris
from ecs import InputError, Phase, System
from ecs.attitude import quat_rotate
from ecs.kernels import cpu_jit, cpu_parallel, dual, launch_rows, to_backend
from ecs.terms import Term
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


def _srp_acceleration(x, y, z, area, cr, mass, t, coef, start, length, emrat, p_sun, earth_radius):
    """Acceleration [m/s²] of sunlight on a cannonball at (x, y, z) [m], time t (module docstring);
    zero in the Earth's cylindrical shadow."""
    p = _moon_sun(coef, start, length, emrat, t)
    sx, sy, sz = p[3], p[4], p[5]
    sn = math.sqrt(sx * sx + sy * sy + sz * sz)
    ux, uy, uz = sx / sn, sy / sn, sz / sn
    along = x * ux + y * uy + z * uz
    if along < 0.0:
        px, py, pz = x - along * ux, y - along * uy, z - along * uz
        if px * px + py * py + pz * pz < earth_radius * earth_radius:
            return 0.0, 0.0, 0.0                      # in the Earth's shadow
    dx, dy, dz = sx - x, sy - y, sz - z
    d = math.sqrt(dx * dx + dy * dy + dz * dz)
    k = -p_sun * cr * area / mass * (AU / d) ** 2 / d
    return k * dx, k * dy, k * dz


srp_acceleration = dual(_srp_acceleration)
_srp_acc = srp_acceleration.cpu


def _add_srp(i, status, pos, att, mass, com, area, cr, force, torque, time, coef, start, length, emrat, p_sun,
             earth_radius):
    if status[i] != 0 or area[i] == 0.0:
        return
    cx, cy, cz = _rot(att[i, 0], att[i, 1], att[i, 2], att[i, 3], com[i, 0], com[i, 1], com[i, 2])
    ax, ay, az = _srp_acc(pos[i, 0] + cx, pos[i, 1] + cy, pos[i, 2] + cz, area[i], cr[i], mass[i], time[i], coef,
                          start, length, emrat, p_sun, earth_radius)
    _weight(i, status, ax, ay, az, mass, com, att, force, torque)


@cpu_jit
def srp_term(i, t, x, y, z, vx, vy, vz, q0, q1, q2, q3, wx, wy, wz, mass, area, cr, coef, start, length, emrat,
             p_sun, earth_radius, span):
    """Row term (:mod:`ecs.terms`) of sunlight on row i's cannonball at its CoM; NaN outside the
    ephemeris window ``[0, span]``."""
    if not (0.0 <= t <= span * (1.0 + 1e-12)):
        return math.nan, math.nan, math.nan, 0.0, 0.0, 0.0
    if area[i] == 0.0:
        return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    ax, ay, az = _srp_acc(x, y, z, area[i], cr[i], mass, t, coef, start, length, emrat, p_sun, earth_radius)
    return mass * ax, mass * ay, mass * az, 0.0, 0.0, 0.0


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
        if not world.tables_with("body_area", "body_reflectivity"):
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

    def term(self, world) -> Term:
        """The same pressure as a row term (multibody links: each link's own cannonball)."""
        eph = world_ephemeris(world, self._ephemeris, "SolarRadiationPressure")
        return Term("solar_pressure", srp_term, columns=("body_area", "body_reflectivity"), inertial=True,
                    arrays={"coef": eph.coef, "start": eph.record_start, "length": eph.record_length},
                    params={"emrat": float(eph.emrat), "p_sun": self.pressure, "earth_radius": self.earth_radius,
                            "span": float(eph.span)})
