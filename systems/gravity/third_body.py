"""Third-body gravity of the Sun and the Moon on every row (DERIVATIVE phase), from JPL DE421.

For each row with mass, at every integrator stage, with t the row's stage time (``row_time``):

1. the geocentric positions s of the Moon and the Sun at t from the Chebyshev records of a
   :class:`components.ephemeris.Ephemeris` (:data:`moon_and_sun`, the evaluation jplephem does);
2. the acceleration of the row's centre of mass r relative to the Earth's centre, which the Earth
   feels too (Montenbruck & Gill, *Satellite Orbits*, 2000, eq 3.37)::

       a = μ_b [(s − r)/|s − r|³ − s/|s|³]

3. ``m a`` added to ``body_force`` and ``c × (m a_B)`` to ``body_torque`` through the row kernel
   every weight uses (:data:`systems.gravity.uniform.add_weight`).

As a row term (:meth:`ThirdBodyGravity.term`, :func:`third_body_term`: the multibody links feel it
at their own CoM) the same two kernels run at the stage time the pipeline passes; a time outside
the ephemeris window returns a NaN force there, so the row fails loudly (``nonfinite_state``)
instead of extrapolating a Chebyshev record.

The simulation's inertial frame must be Earth-centred with ICRF axes (GCRF) and its time TDB
seconds since the ephemeris epoch. A run longer than the ephemeris window is refused at the frame
that would leave it.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from components.ephemeris import EARTH_MOON, MOON, SUN, Ephemeris
from ecs import InputError, Phase, System
from ecs.attitude import quat_rotate
from ecs.kernels import cpu_jit, cpu_parallel, dual, gpu_literal, launch_rows, to_backend
from ecs.terms import Term
from systems.gravity.uniform import add_weight

__all__ = ["ThirdBodyGravity", "moon_and_sun", "third_body_acceleration", "third_body_term"]

_rot = quat_rotate.cpu
_weight = add_weight.cpu
#: body slots and axes: int64 on the CPU (literals compiled :func:`_chebyshev` nine times, once per
#: body and axis), literals the GPU folds (:func:`ecs.kernels.gpu_literal`)
_MOON, _EARTH_MOON, _SUN = gpu_literal(MOON), gpu_literal(EARTH_MOON), gpu_literal(SUN)
_X, _Y, _Z = gpu_literal(0), gpu_literal(1), gpu_literal(2)


def _chebyshev(coef, b, start, length, t, axis):
    """Axis ``axis`` [km] of body slot ``b`` at t [s]: its record's Chebyshev series (records
    clamped to the window; the system refuses times outside it)."""
    s = t - start[b]
    L = length[b]
    k = int(math.floor(s / L))
    if k < 0:
        k = 0
    if k > coef.shape[1] - 1:
        k = coef.shape[1] - 1
    tau = 2.0 * (s - k * L) / L - 1.0
    n = coef.shape[3]
    t0 = 1.0
    t1 = tau
    acc = coef[b, k, axis, 0] + coef[b, k, axis, 1] * tau
    j = 2
    while j < n:
        t2 = 2.0 * tau * t1 - t0
        acc += coef[b, k, axis, j] * t2
        t0 = t1
        t1 = t2
        j += 1
    return acc


chebyshev = dual(_chebyshev, inline=False)
_cheb = chebyshev.cpu


def _moon_and_sun(coef, start, length, emrat, t):
    """Geocentric positions [m] of the Moon and the Sun at t [s]: ``(mx, my, mz, sx, sy, sz)``
    (the Moon's series is evaluated once: the geocentric Sun needs it for the Earth's offset from
    the Earth–Moon barycentre)."""
    mx = _cheb(coef, _MOON, start, length, t, _X)
    my = _cheb(coef, _MOON, start, length, t, _Y)
    mz = _cheb(coef, _MOON, start, length, t, _Z)
    f = 1.0 / (1.0 + emrat)
    ex = _cheb(coef, _EARTH_MOON, start, length, t, _X) - f * mx
    ey = _cheb(coef, _EARTH_MOON, start, length, t, _Y) - f * my
    ez = _cheb(coef, _EARTH_MOON, start, length, t, _Z) - f * mz
    return (1e3 * mx, 1e3 * my, 1e3 * mz, 1e3 * (_cheb(coef, _SUN, start, length, t, _X) - ex),
            1e3 * (_cheb(coef, _SUN, start, length, t, _Y) - ey), 1e3 * (_cheb(coef, _SUN, start, length, t, _Z) - ez))


moon_and_sun = dual(_moon_and_sun)
_moon_sun = moon_and_sun.cpu


def _third_body_acceleration(x, y, z, sx, sy, sz, mu):
    """Montenbruck & Gill eq 3.37: ``μ [(s − r)/|s − r|³ − s/|s|³]`` at r = (x, y, z), body at s."""
    dx = sx - x
    dy = sy - y
    dz = sz - z
    d2 = dx * dx + dy * dy + dz * dz
    kd = mu / (d2 * math.sqrt(d2))
    s2 = sx * sx + sy * sy + sz * sz
    ks = mu / (s2 * math.sqrt(s2))
    return kd * dx - ks * sx, kd * dy - ks * sy, kd * dz - ks * sz


third_body_acceleration = dual(_third_body_acceleration)
_tba = third_body_acceleration.cpu


def _third_bodies_at(x, y, z, t, coef, start, length, emrat, mus):
    """The Moon's (``mus[0]``) and the Sun's (``mus[1]``; 0: left out) eq 3.37 acceleration at
    (x, y, z) [m] and time t [s]."""
    mx, my, mz, sx, sy, sz = _moon_sun(coef, start, length, emrat, t)
    ax = 0.0
    ay = 0.0
    az = 0.0
    for b in range(2):            # the Moon, then the Sun
        if mus[b] != 0.0:
            bx, by, bz = (mx, my, mz) if b == 0 else (sx, sy, sz)
            gx, gy, gz = _tba(x, y, z, bx, by, bz, mus[b])
            ax += gx
            ay += gy
            az += gz
    return ax, ay, az


third_bodies_at = dual(_third_bodies_at)
_tb_at = third_bodies_at.cpu


def _add_third_bodies(i, status, pos, att, mass, com, force, torque, time, coef, start, length, emrat, mus):
    """Add the Moon's and the Sun's pull on row i (:func:`_third_bodies_at`)."""
    if status[i] != 0:
        return
    cx, cy, cz = _rot(att[i, 0], att[i, 1], att[i, 2], att[i, 3], com[i, 0], com[i, 1], com[i, 2])
    ax, ay, az = _tb_at(pos[i, 0] + cx, pos[i, 1] + cy, pos[i, 2] + cz, time[i], coef, start, length, emrat, mus)
    _weight(i, status, ax, ay, az, mass, com, att, force, torque)


add_third_bodies = dual(_add_third_bodies)
_add_tb = add_third_bodies.cpu


@cpu_parallel
def add_third_bodies_rows(n, status, pos, att, mass, com, force, torque, time, coef, start, length, emrat, mus):
    for i in prange(n):
        _add_tb(i, status, pos, att, mass, com, force, torque, time, coef, start, length, emrat, mus)


@cpu_jit
def third_body_term(s, data, params):
    """Row term (:mod:`ecs.terms`) of the Moon's (``data.mus[0]``) and the Sun's (``data.mus[1]``) pull
    at the CoM (s.x, s.y, s.z) [m], Earth-centred inertial frame, stage time s.t [s]; NaN outside
    ``[0, params.span]``."""
    t = s.t
    if not (0.0 <= t <= params.span * (1.0 + 1e-12)):
        return math.nan, math.nan, math.nan, 0.0, 0.0, 0.0
    ax, ay, az = _tb_at(s.x, s.y, s.z, t, data.coef, data.start, data.length, params.emrat, data.mus)
    return s.mass * ax, s.mass * ay, s.mass * az, 0.0, 0.0, 0.0


COLUMNS = ("body_position", "body_attitude", "body_mass", "body_com", "body_force", "body_torque", "row_time")
BODIES = ("moon", "sun")


def world_ephemeris(world, given: Ephemeris | None, owner: str) -> Ephemeris:
    """The ephemeris a system was given, else the world's resource; an InputError naming ``owner``."""
    if given is not None and not isinstance(given, Ephemeris):
        raise InputError(f"{owner}.ephemeris", type(given).__name__, "must be a components.ephemeris.Ephemeris")
    eph = given or world.resource(Ephemeris, None)
    if eph is None:
        raise InputError(f"{owner}.ephemeris", None,
                         "no ephemeris: pass one or world.add_resource(Ephemeris.de421(epoch, span))")
    return eph


def check_window(eph: Ephemeris, frame) -> None:
    """Refuse a frame that ends past the ephemeris window."""
    if frame.t + frame.dt > eph.span * (1.0 + 1e-12):
        raise InputError("run end time", frame.t + frame.dt,
                         f"must be within the ephemeris window, span = {eph.span} s")


class ThirdBodyGravity(System):
    """The Sun's and the Moon's pull on every row with mass (module docstring).

    Args:
        ephemeris: a :class:`components.ephemeris.Ephemeris` (default: the world's resource).
        bodies: any of ``"moon"``, ``"sun"``.
    """

    phase = Phase.DERIVATIVE
    reads = ("body_position", "body_attitude", "body_mass", "body_com", "row_time")
    accumulates = ("body_force", "body_torque")

    def __init__(self, ephemeris: Ephemeris | None = None, *, bodies=BODIES):
        bodies = tuple(bodies)
        bad = [b for b in bodies if b not in BODIES]
        if bad or not bodies:
            raise InputError("ThirdBodyGravity.bodies", bodies, f"must be a non-empty subset of {BODIES}")
        self._ephemeris = ephemeris
        self.bodies = bodies

    def _mus(self, eph: Ephemeris) -> np.ndarray:
        return np.array([eph.mu_moon if "moon" in self.bodies else 0.0, eph.mu_sun if "sun" in self.bodies else 0.0])

    def bind(self, world) -> None:
        eph = self.ephemeris = world_ephemeris(world, self._ephemeris, "ThirdBodyGravity")
        self._args = to_backend(world.backend, (eph.coef, eph.record_start, eph.record_length, eph.emrat,
                                                self._mus(eph)))
        self.tables = world.tables_with(*COLUMNS)

    def term(self, world) -> Term:
        """The same pull as a row term, for pipelines that step rows on their own (multibody links)."""
        eph = world_ephemeris(world, self._ephemeris, "ThirdBodyGravity")
        return Term("third_body", third_body_term, inertial=True,
                    arrays={"coef": eph.coef, "start": eph.record_start, "length": eph.record_length,
                            "mus": self._mus(eph)},
                    params={"emrat": float(eph.emrat), "span": float(eph.span)})

    def process(self, frame) -> None:
        check_window(self.ephemeris, frame)
        for t in self.tables:
            launch_rows(frame.backend, add_third_bodies_rows, add_third_bodies, t.row_count, t["row_status"],
                        t["body_position"], t["body_attitude"], t["body_mass"], t["body_com"], t["body_force"],
                        t["body_torque"], t["row_time"], *self._args)
