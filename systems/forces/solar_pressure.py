"""Solar radiation pressure on bodies with a surface model, with the Earth's cylindrical shadow
(DERIVATIVE).

For each row, at every integrator stage, with s the geocentric Sun at the row's stage time
(:class:`components.ephemeris.Ephemeris`, as :mod:`systems.gravity.third_body`), r its CoM, ŝ the unit
vector from r to s, P = P⊙ (AU/|s − r|)² (P⊙ = 4.56e-6 N/m² at 1 AU) and ν the shadow function of
the cylindrical model (Montenbruck & Gill, *Satellite Orbits*, 2000, §3.4.2: ν = 0 when the body is
behind the Earth, ``r·ŝ_⊕ < 0``, within the cylinder of the Earth's radius about the Sun line):

* a **cannonball** (:class:`components.environment.Cannonball`: A, C_R), through its CoM:
  ``F = −ν P C_R A ŝ`` (M&G eq 3.75);
* **flat plates** (:class:`components.environment.Plates`, when the body has any plate area): each
  lit plate (cos θ = n̂·ŝ > 0) of area A, specular and diffuse reflectivities ρs, ρd, at its centre
  of pressure: ``F = −ν P A cos θ [(1 − ρs) ŝ + 2 (ρs cos θ + ρd/3) n̂]`` (J. R. Wertz (ed.),
  *Spacecraft Attitude Determination and Control*, Reidel, 1978, §17.2, eqs 17-9–17-12; M&G eq 3.72
  for ρd = 0), and its torque about the CoM. Self-shadowing between plates is not modelled.

As a row term (:func:`srp_term`, multibody links) the same kernel runs at the pipeline's stage
time, NaN outside the ephemeris window.
"""

from __future__ import annotations

import math

from numba import prange

from components.environment import PLATES, plates_error
from components.ephemeris import Ephemeris
from ecs import InputError, Phase, System
from ecs.attitude import quat_rotate, quat_rotate_inverse
from ecs.kernels import array_module, cpu_jit, cpu_parallel, dual, kernel_args, launch_rows, to_backend, to_host
from ecs.terms import Term
from systems.gravity.uniform import add_wrench, plate_push
from systems.gravity.third_body import check_window, moon_and_sun, world_ephemeris

__all__ = ["P_SUN", "SolarRadiationPressure", "srp_term", "srp_wrench"]

#: Solar radiation pressure at 1 AU [N/m²] (Montenbruck & Gill 2000, eq 3.69).
P_SUN = 4.56e-6
#: Astronomical unit [m] (IAU 2012).
AU = 149597870700.0

_rot = quat_rotate.cpu
_rot_inv = quat_rotate_inverse.cpu
_wrench = add_wrench.cpu
_push = plate_push.cpu
_moon_sun = moon_and_sun.cpu


def _srp_wrench(x, y, z, q0, q1, q2, q3, cx, cy, cz, i, surface, t, sun):
    """Sunlight on row i, CoM at (x, y, z) [m] (inertial), attitude q (body → inertial), CoM ``c``
    from the reference point (body axes), at time t: ``(Fx, Fy, Fz, Tx, Ty, Tz)``, the force [N]
    (inertial) and the torque about the CoM [N·m] (body axes). Zero in the Earth's cylindrical
    shadow. From the row's plates when any has area (Wertz's flat plate: lit plates only,
    ``F = −P A cos θ [(1 − ρs) ŝ + 2 (ρs cos θ + ρd/3) n̂]``, at each plate's centre of pressure),
    else from its cannonball (``F = −P C_R A ŝ``, no torque); ŝ: unit vector to the Sun,
    P = P⊙ (AU/d)².

    ``surface = (area, cr, parea, pnormal, pcenter, pspec, pdiff)``: the rows' cannonball and plate
    columns; ``sun = (coef, start, length, emrat, p_sun, earth_radius)``: the ephemeris, P⊙ and the
    shadow cylinder's radius."""
    area, cr, parea, pnormal, pcenter, pspec, pdiff = surface
    coef, start, length, emrat, p_sun, earth_radius = sun
    _, _, _, sx, sy, sz = _moon_sun(coef, start, length, emrat, t)
    sn = math.sqrt(sx * sx + sy * sy + sz * sz)
    ux, uy, uz = sx / sn, sy / sn, sz / sn
    along = x * ux + y * uy + z * uz
    if along < 0.0:
        px, py, pz = x - along * ux, y - along * uy, z - along * uz
        if px * px + py * py + pz * pz < earth_radius * earth_radius:
            return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0        # in the Earth's shadow
    dx, dy, dz = sx - x, sy - y, sz - z
    d = math.sqrt(dx * dx + dy * dy + dz * dz)
    ex, ey, ez = dx / d, dy / d, dz / d
    pressure = p_sun * (AU / d) ** 2
    lit = False
    for k in range(PLATES):
        if parea[i, k] > 0.0:
            lit = True
    if not lit:
        f = -pressure * cr[i] * area[i]
        return f * ex, f * ey, f * ez, 0.0, 0.0, 0.0
    bx, by, bz = _rot_inv(q0, q1, q2, q3, ex, ey, ez)         # ŝ in body axes
    fx = fy = fz = tx = ty = tz = 0.0
    for k in range(PLATES):
        a = parea[i, k]
        nx, ny, nz = pnormal[i, k, 0], pnormal[i, k, 1], pnormal[i, k, 2]
        c = nx * bx + ny * by + nz * bz
        if a == 0.0 or c <= 0.0:
            continue
        rs = pspec[i, k]
        f = -pressure * a * c
        g = 2.0 * (rs * c + pdiff[i, k] / 3.0)
        kx = f * ((1.0 - rs) * bx + g * nx)
        ky = f * ((1.0 - rs) * by + g * ny)
        kz = f * ((1.0 - rs) * bz + g * nz)
        fx, fy, fz, tx, ty, tz = _push(fx, fy, fz, tx, ty, tz, kx, ky, kz, pcenter, i, k, cx, cy, cz)
    gx, gy, gz = _rot(q0, q1, q2, q3, fx, fy, fz)
    return gx, gy, gz, tx, ty, tz


srp_wrench = dual(_srp_wrench)
_srp_w = srp_wrench.cpu


def _add_srp(i, status, pos, att, com, surface, force, torque, time, sun):
    if status[i] != 0:
        return
    q0, q1, q2, q3 = att[i, 0], att[i, 1], att[i, 2], att[i, 3]
    cx, cy, cz = com[i, 0], com[i, 1], com[i, 2]
    rx, ry, rz = _rot(q0, q1, q2, q3, cx, cy, cz)
    fx, fy, fz, tx, ty, tz = _srp_w(pos[i, 0] + rx, pos[i, 1] + ry, pos[i, 2] + rz, q0, q1, q2, q3, cx, cy, cz, i,
                                    surface, time[i], sun)
    _wrench(i, q0, q1, q2, q3, cx, cy, cz, fx, fy, fz, tx, ty, tz, force, torque)


@cpu_jit
def srp_term(s, data, params):
    """Row term (:mod:`ecs.terms`) of sunlight on row s.i (plates or cannonball, :func:`_srp_wrench`);
    NaN outside the ephemeris window ``[0, params.span]``."""
    t, i, com = s.t, s.i, data.body_com
    if not (0.0 <= t <= params.span * (1.0 + 1e-12)):
        return math.nan, math.nan, math.nan, 0.0, 0.0, 0.0
    surface = (data.body_area, data.body_reflectivity, data.plate_area, data.plate_normal, data.plate_center,
               data.plate_specular, data.plate_diffuse)
    sun = (data.coef, data.start, data.length, params.emrat, params.p_sun, params.earth_radius)
    return _srp_w(s.x, s.y, s.z, s.q0, s.q1, s.q2, s.q3, com[i, 0], com[i, 1], com[i, 2], i, surface, t, sun)


add_srp = dual(_add_srp)
_srp = add_srp.cpu


@cpu_parallel
def add_srp_rows(n, status, pos, att, com, surface, force, torque, time, sun):
    for i in prange(n):
        _srp(i, status, pos, att, com, surface, force, torque, time, sun)


COLUMNS = ("body_position", "body_attitude", "body_com", "body_force", "body_torque", "row_time")
PLATE_COLUMNS = {"plate_area": (PLATES,), "plate_normal": (PLATES, 3), "plate_center": (PLATES, 3),
                 "plate_specular": (PLATES,), "plate_diffuse": (PLATES,)}
CANNONBALL = {"body_area": (), "body_reflectivity": ()}


class SolarRadiationPressure(System):
    """Sunlight on every body with a surface model (module docstring): its
    :class:`components.environment.Plates` when it has any plate area, else its
    :class:`components.environment.Cannonball`.

    Args:
        ephemeris: the Sun's positions (default: the world's :class:`Ephemeris` resource).
        pressure: P⊙ [N/m²] at 1 AU; earth_radius: the shadow cylinder's radius [m].
    """

    phase = Phase.DERIVATIVE
    reads = ("body_position", "body_attitude", "body_com", "body_area", "body_reflectivity", "row_time",
             *PLATE_COLUMNS)
    accumulates = ("body_force", "body_torque")

    def __init__(self, ephemeris: Ephemeris | None = None, *, pressure: float = P_SUN, earth_radius: float = 6378137.0):
        for name, v in (("pressure", pressure), ("earth_radius", earth_radius)):
            if not (math.isfinite(v) and v >= 0):
                raise InputError(f"SolarRadiationPressure.{name}", v, "must be a finite number >= 0")
        self._ephemeris = ephemeris
        self.pressure, self.earth_radius = float(pressure), float(earth_radius)

    def bind(self, world) -> None:
        eph = self.ephemeris = world_ephemeris(world, self._ephemeris, "SolarRadiationPressure")
        surfaced = [t for t in world.tables if "body_area" in t or "plate_area" in t]
        if not surfaced:
            raise InputError("SolarRadiationPressure: bodies", None,
                             "no body has a surface model: spawn bodies with components.environment.Cannonball"
                             "(area=...) or components.environment.Plates(...)")
        for t in surfaced:
            if "plate_area" in t:
                bad = plates_error(*(to_host(t[c]) for c in ("plate_area", "plate_normal", "plate_specular",
                                                             "plate_diffuse")))
                if bad is not None:
                    r, col, value, rule = bad
                    raise InputError(f"{col} of {world.name_of(int(t.entities[r % t.entity_count]))}", value, rule)
        self.tables = [(t, kernel_args(world.backend, self._surface(t, world.backend)))
                       for t in world.tables_with(*COLUMNS) if t in surfaced]
        self._sun = kernel_args(world.backend, to_backend(world.backend, (eph.coef, eph.record_start, eph.record_length,
                                                                          eph.emrat, self.pressure, self.earth_radius)))

    @staticmethod
    def _surface(t, backend) -> tuple:
        """The table's cannonball and plate columns, zeros where it lacks them."""
        xp = array_module(t["body_position"])
        return tuple(t[c] if c in t else xp.zeros((t.row_count, *shape))
                     for c, shape in {**CANNONBALL, **PLATE_COLUMNS}.items())

    def process(self, frame) -> None:
        check_window(self.ephemeris, frame)
        for t, surface in self.tables:
            launch_rows(frame.backend, add_srp_rows, add_srp, t.row_count, t["row_status"], t["body_position"],
                        t["body_attitude"], t["body_com"], surface, t["body_force"], t["body_torque"],
                        t["row_time"], self._sun)

    def term(self, world) -> Term:
        """The same pressure as a row term (multibody links: each link's own plates or cannonball)."""
        eph = world_ephemeris(world, self._ephemeris, "SolarRadiationPressure")
        return Term("solar_pressure", srp_term, columns=("body_com",), optional_columns={**CANNONBALL, **PLATE_COLUMNS},
                    torque=True, attitude=True, inertial=True,
                    arrays={"coef": eph.coef, "start": eph.record_start, "length": eph.record_length},
                    params={"emrat": float(eph.emrat), "p_sun": self.pressure, "earth_radius": self.earth_radius,
                            "span": float(eph.span)})
