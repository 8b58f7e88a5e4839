"""Atmospheric drag on cannonball bodies (DERIVATIVE phase), and the NRLMSIS density (SCHEDULED).

For each row with mass, at every integrator stage:

    a = −½ ρ (C_D A / m) |v_r| v_r,     v_r = v_CoM − ω ẑ × r_CoM

(Montenbruck & Gill, *Satellite Orbits*, 2000, eqs 3.97 and 3.99: the atmosphere turns with the
Earth), with A, C_D the body's :class:`components.environment.Cannonball` columns and ρ either

* the :class:`components.environment.ExponentialAtmosphere` at the CoM's altitude ``|r| − R``,
  evaluated at every stage, or
* with a :class:`components.environment.MsisAtmosphere`, the row's ``body_density`` column:
  :class:`MsisDensity` evaluates NRLMSIS 2.1 (``pymsis``) at every row's CoM at the start of each
  frame and the drag holds it over the frame's stages (seed 001's reduced environment update rate,
  applied to the atmosphere: a compiled Fortran model called from Python once per frame, not per
  stage). The CoM goes to the model as geodetic latitude, longitude and height on the WGS 84
  ellipsoid in the Earth-fixed frame turned by ``angle0 + ω t`` about z (:func:`geodetic`).

The force acts at the CoM (``c × F_B`` about the reference point). A body with
:class:`components.environment.Plates` takes its drag from them instead: each plate facing the flow
(cos θ = n̂·v̂_r > 0) feels ``−½ ρ C_D A cos θ |v_r| v_r`` at its centre of pressure (the
projected-area flat-plate model with the body's C_D; shading between plates and the plates' own
ω × r velocities, ~1e-6 of v_r, are left out), so the force and its torque follow the attitude.
Inertial frame: Earth-centred, z along the Earth's rotation axis.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from components.environment import PLATES, ExponentialAtmosphere, MsisAtmosphere
from ecs import InputError, Phase, System
from ecs.attitude import cross, quat_rotate, quat_rotate_inverse
from ecs.kernels import array_module, cpu_jit, cpu_parallel, dual, kernel_args, launch_rows, to_backend, to_host
from ecs.terms import Term
from systems.gravity.uniform import add_wrench, plate_push

__all__ = ["AtmosphericDrag", "MsisDensity", "density_at", "drag_term", "drag_wrench", "geodetic"]

#: WGS 84 semi-major axis [m] and flattening (NIMA TR8350.2, 2000).
WGS84_A, WGS84_F = 6378137.0, 1.0 / 298.257223563

_rot = quat_rotate.cpu
_rot_inv = quat_rotate_inverse.cpu
_wrench = add_wrench.cpu
_push = plate_push.cpu
_cross = cross.cpu


def _density_at(h, base, rho0, scale):
    """ρ [kg/m³] at altitude h [m]: the band ``base[i] <= h < base[i+1]`` (clamped at both ends)."""
    i = 0
    while i + 1 < base.shape[0] and base[i + 1] <= h:
        i += 1
    return rho0[i] * math.exp(-(h - base[i]) / scale[i])


density_at = dual(_density_at)
_rho = density_at.cpu


def _drag_wrench(x, y, z, vx, vy, vz, q0, q1, q2, q3, cx, cy, cz, i, surface, air):
    """Drag on row i, CoM at (x, y, z) moving at (vx, vy, vz) (inertial), attitude q (body →
    inertial), CoM ``c`` from the reference point (body axes): ``(Fx, Fy, Fz, Tx, Ty, Tz)``, force
    [N] (inertial) and torque about the CoM [N·m] (body axes).

    ``surface = (area, cd, dens, parea, pnormal, pcenter)``: the rows' cannonball area and drag
    coefficient, density and plate columns; ``air = (base, rho0, scale, radius, spin, msis)``: the
    atmosphere (:meth:`AtmosphericDrag._args`). ρ is the row's ``dens`` when
    ``msis``, else the exponential table's at |r| − R. A body with plate area: each plate facing the
    flow (cos θ = n̂·v̂_r > 0) takes ``−½ ρ C_D A cos θ |v_r| v_r`` at its centre of pressure (the
    projected-area flat-plate model, the flow taken at the CoM); else the cannonball
    ``−½ ρ C_D A |v_r| v_r`` through the CoM."""
    area, cd, dens, parea, pnormal, pcenter = surface
    base, rho0, scale, radius, spin, msis = air
    ux = vx + spin * y                                          # v_r = v − ω_E ẑ × r
    uy = vy - spin * x
    uz = vz
    if not msis:
        dens_i = _rho(math.sqrt(x * x + y * y + z * z) - radius, base, rho0, scale)
    else:
        dens_i = dens[i]
    u = math.sqrt(ux * ux + uy * uy + uz * uz)
    plates = False
    for k in range(PLATES):
        if parea[i, k] > 0.0:
            plates = True
    if not plates:
        f = -0.5 * dens_i * cd[i] * area[i] * u
        return f * ux, f * uy, f * uz, 0.0, 0.0, 0.0
    bx, by, bz = _rot_inv(q0, q1, q2, q3, ux, uy, uz)         # v_r in body axes
    fx = fy = fz = tx = ty = tz = 0.0
    for k in range(PLATES):
        a = parea[i, k]
        c = (pnormal[i, k, 0] * bx + pnormal[i, k, 1] * by + pnormal[i, k, 2] * bz) / u
        if a == 0.0 or c <= 0.0:
            continue
        f = -0.5 * dens_i * cd[i] * a * c * u
        fx, fy, fz, tx, ty, tz = _push(fx, fy, fz, tx, ty, tz, f * bx, f * by, f * bz, pcenter, i, k, cx, cy, cz)
    gx, gy, gz = _rot(q0, q1, q2, q3, fx, fy, fz)
    return gx, gy, gz, tx, ty, tz


drag_wrench = dual(_drag_wrench)
_drag_w = drag_wrench.cpu


def _add_drag(i, status, pos, vel, att, omega, com, surface, force, torque, air):
    if status[i] != 0:
        return
    q0, q1, q2, q3 = att[i, 0], att[i, 1], att[i, 2], att[i, 3]
    cx, cy, cz = com[i, 0], com[i, 1], com[i, 2]
    rx, ry, rz = _rot(q0, q1, q2, q3, cx, cy, cz)
    wx, wy, wz = _cross(omega[i, 0], omega[i, 1], omega[i, 2], cx, cy, cz)
    ux, uy, uz = _rot(q0, q1, q2, q3, wx, wy, wz)             # ω × c, inertial
    fx, fy, fz, tx, ty, tz = _drag_w(pos[i, 0] + rx, pos[i, 1] + ry, pos[i, 2] + rz, vel[i, 0] + ux, vel[i, 1] + uy,
                                     vel[i, 2] + uz, q0, q1, q2, q3, cx, cy, cz, i, surface, air)
    _wrench(i, q0, q1, q2, q3, cx, cy, cz, fx, fy, fz, tx, ty, tz, force, torque)


@cpu_jit
def drag_term(s, data, params):
    """Row term (:mod:`ecs.terms`) of the drag on row s.i (plates or cannonball, :func:`_drag_wrench`)."""
    i, com = s.i, data.body_com
    surface = (data.body_area, data.body_drag_coefficient, data.body_density, data.plate_area, data.plate_normal,
               data.plate_center)
    air = (data.base, data.rho0, data.scale, params.radius, params.spin, params.msis != 0.0)
    return _drag_w(s.x, s.y, s.z, s.vx, s.vy, s.vz, s.q0, s.q1, s.q2, s.q3, com[i, 0], com[i, 1], com[i, 2], i, surface,
                   air)


add_drag = dual(_add_drag)
_drag = add_drag.cpu


@cpu_parallel
def add_drag_rows(n, status, pos, vel, att, omega, com, surface, force, torque, air):
    for i in prange(n):
        _drag(i, status, pos, vel, att, omega, com, surface, force, torque, air)


COLUMNS = ("body_position", "body_velocity", "body_attitude", "body_omega", "body_com", "body_area",
           "body_drag_coefficient", "body_density", "body_force", "body_torque")
#: The plate columns drag reads (zeros for a body without :class:`components.environment.Plates`).
PLATE_COLUMNS = {"plate_area": (PLATES,), "plate_normal": (PLATES, 3), "plate_center": (PLATES, 3)}


class AtmosphericDrag(System):
    """Drag of the world's atmosphere (or the one given: an :class:`ExponentialAtmosphere` or an
    :class:`MsisAtmosphere`, which needs :class:`MsisDensity` in the world) on every cannonball body."""

    phase = Phase.DERIVATIVE
    reads = COLUMNS[:8] + tuple(PLATE_COLUMNS)
    accumulates = ("body_force", "body_torque")

    def __init__(self, atmosphere: ExponentialAtmosphere | MsisAtmosphere | None = None):
        if atmosphere is not None and not isinstance(atmosphere, (ExponentialAtmosphere, MsisAtmosphere)):
            raise InputError("AtmosphericDrag.atmosphere", type(atmosphere).__name__,
                             "must be a components.environment.ExponentialAtmosphere or MsisAtmosphere")
        self._atmosphere = atmosphere

    def _resolve(self, world):
        return (self._atmosphere or world.resource(MsisAtmosphere, None) or world.resource(ExponentialAtmosphere, None)
                or ExponentialAtmosphere())

    def _args(self, atm) -> tuple:
        """(base, rho0, scale, radius, spin, msis) of the kernels."""
        if isinstance(atm, MsisAtmosphere):
            z = np.zeros(1)
            return z, z + 1.0, z + 1.0, 0.0, atm.rotation, True
        return atm.base_altitude, atm.base_density, atm.scale_height, atm.radius, atm.rotation, False

    def bind(self, world) -> None:
        atm = self.atmosphere = self._resolve(world)
        self.tables = world.tables_with(*COLUMNS)
        if not world.tables_with("body_area", "body_drag_coefficient"):
            raise InputError("AtmosphericDrag: bodies", None,
                             "no body has the Cannonball component (area, drag_coefficient): spawn bodies with "
                             "components.environment.Cannonball(area=...)")
        if isinstance(atm, MsisAtmosphere) and not any(isinstance(s, MsisDensity) for s in world.systems):
            raise InputError("AtmosphericDrag.atmosphere", "MsisAtmosphere",
                             "needs systems.forces.drag.MsisDensity in the world (it writes body_density every frame)")
        self._air = kernel_args(world.backend, to_backend(world.backend, self._args(atm)))
        self._surface = [kernel_args(world.backend, (t["body_area"], t["body_drag_coefficient"], t["body_density"], *(
            t[c] if c in t else array_module(t["body_position"]).zeros((t.row_count, *shape))
            for c, shape in PLATE_COLUMNS.items()))) for t in self.tables]

    def process(self, frame) -> None:
        for t, surface in zip(self.tables, self._surface):
            launch_rows(frame.backend, add_drag_rows, add_drag, t.row_count, t["row_status"], t["body_position"],
                        t["body_velocity"], t["body_attitude"], t["body_omega"], t["body_com"], surface,
                        t["body_force"], t["body_torque"], self._air)

    def term(self, world) -> Term:
        """The same drag as a row term (multibody links: each link's own cannonball and velocity)."""
        base, rho0, scale, radius, spin, msis = self._args(self._resolve(world))
        return Term("drag", drag_term, columns=("body_com", "body_area", "body_drag_coefficient", "body_density"),
                    optional_columns=PLATE_COLUMNS, torque=True, attitude=True, inertial=True,
                    arrays={"base": base, "rho0": rho0, "scale": scale},
                    params={"radius": float(radius), "spin": float(spin), "msis": float(msis)})


# ------------------------------------------------------------------------------ NRLMSIS density
def geodetic(x, y, z, *, a: float = WGS84_A, f: float = WGS84_F, iterations: int = 6):
    """Geodetic latitude [rad], longitude [rad] and height [m] on the ellipsoid (a, f) of Earth-fixed
    positions (arrays [m]), by fixed-point iteration on the latitude (Bowring's start; six passes
    reach 1e-12 rad from the ground to GEO)."""
    x, y, z = (np.asarray(v, dtype=np.float64) for v in (x, y, z))
    e2 = f * (2.0 - f)
    p = np.hypot(x, y)
    lat = np.arctan2(z, p * (1.0 - e2))
    for _ in range(iterations):
        s = np.sin(lat)
        n = a / np.sqrt(1.0 - e2 * s * s)
        h = np.where(np.abs(lat) < 1.0, p / np.cos(lat) - n, z / np.where(s == 0.0, 1.0, s) - n * (1.0 - e2))
        lat = np.arctan2(z, p * (1.0 - e2 * n / (n + h)))
    s = np.sin(lat)
    n = a / np.sqrt(1.0 - e2 * s * s)
    h = np.where(np.abs(lat) < 1.0, p / np.cos(lat) - n, z / np.where(s == 0.0, 1.0, s) - n * (1.0 - e2))
    return lat, np.arctan2(y, x), h


class MsisDensity(System):
    """Write NRLMSIS 2.1's total mass density at every cannonball row's CoM into ``body_density``,
    at bind time and after every frame (so each frame's drag holds the density of its start): rigid
    bodies (CoM from ``body_position``, ``body_attitude``, ``body_com``) and multibody links (their
    ``link_com_position``). Needs ``pymsis`` (``pip install 'tumble[orbit]'``)."""

    phase = Phase.SCHEDULED
    reads = ("body_position", "body_attitude", "body_com", "link_com_position")
    writes = ("body_density",)

    def __init__(self, atmosphere: MsisAtmosphere | None = None):
        if atmosphere is not None and not isinstance(atmosphere, MsisAtmosphere):
            raise InputError("MsisDensity.atmosphere", type(atmosphere).__name__,
                             "must be a components.environment.MsisAtmosphere")
        self._atmosphere = atmosphere

    def bind(self, world) -> None:
        atm = self._atmosphere or world.resource(MsisAtmosphere, None)
        if atm is None:
            raise InputError("MsisDensity.atmosphere", None,
                             "no MsisAtmosphere: pass one or world.add_resource(MsisAtmosphere(epoch, ...))")
        try:
            import pymsis
        except ImportError:
            raise InputError("MsisDensity", "pymsis", "is not installed: pip install 'tumble[orbit]'") from None
        self.atmosphere, self._msis = atm, pymsis
        self.tables = [t for t in world.tables_with("body_density") if "link_com_position" in t
                       or ("body_position" in t and "body_attitude" in t and "body_com" in t)]
        self._update(0.0)

    def densities(self, t: float, x, y, z) -> np.ndarray:
        """ρ [kg/m³] at inertial CoM positions (arrays [m]) at simulation time t [s]."""
        atm = self.atmosphere
        th = atm.angle0 + atm.rotation * t
        c, s = math.cos(th), math.sin(th)
        lat, lon, h = geodetic(c * x + s * y, -s * x + c * y, z)
        n = np.size(lat)
        date = atm.epoch + np.timedelta64(int(round(t * 1e9)), "ns")
        out = self._msis.calculate(np.full(n, date), np.degrees(lon), np.degrees(lat), h / 1e3,
                                   f107s=np.full(n, atm.f107), f107as=np.full(n, atm.f107a),
                                   aps=np.full((n, 7), atm.ap), version=2.1)
        return np.asarray(out[..., self._msis.Variable.MASS_DENSITY], dtype=np.float64).reshape(-1)

    def _update(self, t: float) -> None:
        for tb in self.tables:
            if "link_com_position" in tb:
                r = np.asarray(to_host(tb["link_com_position"]))
            else:
                r = np.asarray(to_host(tb["body_position"])) + quat_rotate(np.asarray(to_host(tb["body_attitude"])),
                                                                           np.asarray(to_host(tb["body_com"])))
            rho = self.densities(t, r[:, 0], r[:, 1], r[:, 2])
            tb["body_density"][:] = array_module(tb["body_density"]).asarray(rho)

    def process(self, frame) -> None:
        self._update(frame.t + frame.dt)
