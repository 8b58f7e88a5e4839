"""Orbital environment data: the atmosphere model and a body's cannonball surface.

* :class:`ExponentialAtmosphere` — piecewise-exponential density of the Earth's atmosphere,
  ``ρ(h) = ρ0_i exp(−(h − h0_i)/H_i)`` in the band ``h0_i <= h < h0_{i+1}`` of geometric altitude h
  above a sphere of radius R; default table: D. A. Vallado, *Fundamentals of Astrodynamics and
  Applications*, 4th ed., Microcosm Press 2013, Table 8-4 (0–1000 km; the top band extends above).
  The atmosphere turns with the Earth (rate ω about the inertial z axis).
* :class:`MsisAtmosphere` — the NRLMSIS 2.1 empirical atmosphere (J. T. Emmert et al., "NRLMSIS
  2.0: a whole-atmosphere empirical model of temperature and neutral species densities", Earth and
  Space Science 8, 2021; 2.1 adds NO), evaluated through the ``pymsis`` package (the ``orbit``
  extra; its compiled model and parameter file install with it, nothing is downloaded) by
  :class:`systems.forces.drag.MsisDensity`, with the solar and geomagnetic indices passed in: F10.7 of the
  previous day, its 81-day centred mean, the daily Ap. The Earth-fixed frame turns about the
  inertial z axis at ω from the Earth rotation angle at the epoch (:func:`earth_rotation_angle`).
* :class:`CelestialPole` — the Earth's pole in the celestial frame over a run (IAU 2006/2000A
  precession-nutation through ``pyerfa``), for a gravity field in the Earth-fixed frame.
* :class:`Cannonball` (component, ``body_*`` columns) — a body seen as a sphere: its cross-section
  A, drag coefficient C_D and radiation-pressure coefficient C_R, used by
  :class:`systems.forces.drag.AtmosphericDrag` and :class:`systems.forces.solar_pressure.SolarRadiationPressure`,
  and the density at its CoM when an MsisAtmosphere supplies it.
"""

from __future__ import annotations

import math

import numpy as np

from ecs import InputError, column, component
from ecs.rules import Rule, nonnegative

__all__ = ["ERA_RATE", "Cannonball", "CelestialPole", "ExponentialAtmosphere", "MsisAtmosphere", "PLATES", "Plates", "VALLADO_2013_TABLE_8_4",
           "earth_rotation_angle", "plates_error"]

#: The Earth's rotation rate [rad/s] (IERS Conventions 2010, the nominal value).
EARTH_ROTATION = 7.292115e-5
#: The rate of the Earth rotation angle [rad/s of UT1] (IERS Conventions 2010 eq 5.15:
#: 2π · 1.00273781191135448 per day): ``angle0 + ERA_RATE · t`` is the ERA at ``epoch + t`` exactly.
ERA_RATE = 2.0 * math.pi * 1.00273781191135448 / 86400.0

#: (base altitude [km], base density [kg/m³], scale height [km]): Vallado (2013) Table 8-4.
VALLADO_2013_TABLE_8_4 = (
    (0, 1.225, 7.249), (25, 3.899e-2, 6.349), (30, 1.774e-2, 6.682), (40, 3.972e-3, 7.554),
    (50, 1.057e-3, 8.382), (60, 3.206e-4, 7.714), (70, 8.770e-5, 6.549), (80, 1.905e-5, 5.799),
    (90, 3.396e-6, 5.382), (100, 5.297e-7, 5.877), (110, 9.661e-8, 7.263), (120, 2.438e-8, 9.473),
    (130, 8.484e-9, 12.636), (140, 3.845e-9, 16.149), (150, 2.070e-9, 22.523), (180, 5.464e-10, 29.740),
    (200, 2.789e-10, 37.105), (250, 7.248e-11, 45.546), (300, 2.418e-11, 53.628), (350, 9.518e-12, 53.298),
    (400, 3.725e-12, 58.515), (450, 1.585e-12, 60.828), (500, 6.967e-13, 63.822), (600, 1.454e-13, 71.835),
    (700, 3.614e-14, 88.667), (800, 1.170e-14, 124.64), (900, 5.245e-15, 181.05), (1000, 3.019e-15, 268.00),
)  # fmt: skip


class ExponentialAtmosphere:
    """Resource: piecewise-exponential density (module docstring).

    Args:
        table: rows (base altitude [km], base density [kg/m³], scale height [km]), altitudes
            increasing from 0; default Vallado (2013) Table 8-4.
        radius: R [m] the altitude is measured from (a sphere: the WGS-84 equatorial radius by
            default).
        rotation: the atmosphere's rate ω [rad/s] about the inertial z axis (the Earth's).
    """

    def __init__(self, table=VALLADO_2013_TABLE_8_4, *, radius: float = 6378137.0, rotation: float = 7.292115e-5):
        t = np.array(table, dtype=np.float64)
        if t.ndim != 2 or t.shape[1] != 3 or len(t) < 1:
            raise InputError("ExponentialAtmosphere.table", np.shape(table), "must be rows (h0 km, rho0 kg/m^3, H km)")
        if t[0, 0] != 0.0 or np.any(np.diff(t[:, 0]) <= 0) or np.any(t[:, 1] <= 0) or np.any(t[:, 2] <= 0):
            raise InputError("ExponentialAtmosphere.table", t[:3].tolist(),
                             "must start at 0 km with increasing altitudes and positive densities and heights")
        if not (math.isfinite(radius) and radius > 0):
            raise InputError("ExponentialAtmosphere.radius", radius, "must be a finite length > 0 [m]")
        if not math.isfinite(rotation):
            raise InputError("ExponentialAtmosphere.rotation", rotation, "must be finite [rad/s]")
        self.base_altitude = np.ascontiguousarray(t[:, 0] * 1e3)
        self.base_density = np.ascontiguousarray(t[:, 1])
        self.scale_height = np.ascontiguousarray(t[:, 2] * 1e3)
        self.radius = float(radius)
        self.rotation = float(rotation)
        for a in (self.base_altitude, self.base_density, self.scale_height):
            a.flags.writeable = False

    def density(self, altitude) -> np.ndarray:
        """ρ [kg/m³] at geometric altitudes [m] (numpy; the kernels evaluate the same formula)."""
        h = np.asarray(altitude, dtype=np.float64)
        i = np.clip(np.searchsorted(self.base_altitude, h, side="right") - 1, 0, len(self.base_altitude) - 1)
        return self.base_density[i] * np.exp(-(h - self.base_altitude[i]) / self.scale_height[i])


def earth_rotation_angle(jd_ut1: float) -> float:
    """The Earth rotation angle θ [rad, in [0, 2π)] at the UT1 Julian date ``jd_ut1``: IERS Conventions
    (2010), eq 5.15, ``θ = 2π (0.7790572732640 + 1.00273781191135448 (JD − 2451545.0))`` (the angle
    of the Earth-fixed x axis from the celestial one about z; precession-nutation left out)."""
    tu = float(jd_ut1) - 2451545.0
    f = (0.7790572732640 + 0.00273781191135448 * tu + (tu % 1.0)) % 1.0      # the day fraction kept exact
    return 2.0 * math.pi * f


class CelestialPole:
    """The motion of the Earth's pole in the celestial frame over a run: the GCRS → CIRS matrix
    ``Q(t)`` (frame bias, IAU 2006 precession and IAU 2000A nutation; IERS Conventions 2010 §5.4.4,
    the celestial-to-intermediate matrix), tabulated at ``step`` and interpolated linearly between
    nodes. With it the Earth-fixed frame is ``x_T = R3(θ) Q(t) x_C`` (θ the Earth rotation angle):
    without it the Earth turns about the celestial z axis, whose pole lies 2.4e-3 rad (0.14°) from
    the true one in 2025 (precession since J2000). Not modelled: polar motion (≤ 1.5e-6 rad, needs
    the IERS bulletins) and UT1 − UTC.

    Build it with :meth:`iau2006` (needs the ``pyerfa`` package of the ``orbit`` extra: the IAU SOFA
    routines). Pass it to :class:`systems.gravity.fields.GravitySystem` (``pole=``).

    Attributes:
        table: ``[k, 10]`` rows ``(t [s from the run's t = 0], Q row-major)``, nodes evenly spaced.
    """

    def __init__(self, table):
        a = np.asarray(table, dtype=np.float64)
        if a.ndim != 2 or a.shape[1] != 10 or a.shape[0] < 2 or not np.all(np.isfinite(a)):
            raise InputError("CelestialPole.table", f"shape {list(a.shape)}",
                             "must be >= 2 finite rows (t [s], 9 matrix entries)")
        dt = np.diff(a[:, 0])
        if not (dt[0] > 0.0 and np.allclose(dt, dt[0], rtol=1e-9, atol=0.0) and a[0, 0] == 0.0):
            raise InputError("CelestialPole.table times", a[:3, 0].tolist(), "must start at 0 s and be evenly spaced")
        self.table = a

    @property
    def span(self) -> float:
        """The last tabulated time [s]: the run must end by it."""
        return float(self.table[-1, 0])

    @classmethod
    def iau2006(cls, epoch_tt_jd: float, span: float, step: float = 3600.0) -> "CelestialPole":
        """``Q(t)`` from ``erfa.c2i06a`` at ``epoch + t`` for t in ``[0, span]`` every ``step``
        seconds (the epoch is a TT Julian date; TDB differs by < 2 ms, a rotation of < 1e-13 rad
        here). Linear interpolation between hourly nodes errs by < 1e-10 rad (the fastest nutation
        terms have periods of days; tests/test_orbit_environment.py measures it against erfa)."""
        for name, v in (("epoch_tt_jd", epoch_tt_jd), ("span", span), ("step", step)):
            if not (math.isfinite(float(v)) and (float(v) > 0.0)):
                raise InputError(f"CelestialPole.iau2006 {name}", v, "must be a finite number > 0")
        try:
            import erfa
        except ImportError:
            raise InputError("CelestialPole.iau2006", "pyerfa", "needs the pyerfa package: pip install -e '.[orbit]'") \
                from None
        k = int(math.ceil(float(span) / float(step))) + 1
        t = np.arange(k) * float(step)
        q = erfa.c2i06a(float(epoch_tt_jd), t / 86400.0)
        return cls(np.column_stack([t, np.asarray(q).reshape(k, 9)]))


class MsisAtmosphere:
    """Resource: NRLMSIS 2.1 with fixed indices (module docstring).

    Args:
        epoch: UTC of simulation time 0 (``numpy.datetime64`` or an ISO string).
        f107: F10.7 solar flux of the previous day [sfu]; f107a: its 81-day centred mean [sfu].
        ap: the daily geomagnetic Ap index.
        rotation: ω [rad/s] of the Earth-fixed frame about the inertial z axis.
        angle0: the Earth rotation angle [rad] at the epoch (default: :func:`earth_rotation_angle`
            of the epoch, UT1 taken as UTC).
    """

    def __init__(self, epoch, *, f107: float = 150.0, f107a: float = 150.0, ap: float = 4.0,
                 rotation: float = EARTH_ROTATION, angle0: float | None = None):
        try:
            self.epoch = np.datetime64(epoch, "ns")
        except (TypeError, ValueError):
            raise InputError("MsisAtmosphere.epoch", epoch, "must be a UTC date (numpy.datetime64 or ISO string)") from None
        if np.isnat(self.epoch):
            raise InputError("MsisAtmosphere.epoch", epoch, "must be a UTC date, not NaT")
        for name, v, lo, hi in (("f107", f107, 50.0, 400.0), ("f107a", f107a, 50.0, 400.0), ("ap", ap, 0.0, 400.0)):
            if not (math.isfinite(v) and lo <= v <= hi):
                raise InputError(f"MsisAtmosphere.{name}", v, f"must be a finite index in [{lo:g}, {hi:g}]")
        if not math.isfinite(rotation):
            raise InputError("MsisAtmosphere.rotation", rotation, "must be finite [rad/s]")
        jd = 2440587.5 + (self.epoch - np.datetime64("1970-01-01", "ns")) / np.timedelta64(86400, "s")
        self.angle0 = earth_rotation_angle(jd) if angle0 is None else float(angle0)
        if not math.isfinite(self.angle0):
            raise InputError("MsisAtmosphere.angle0", angle0, "must be finite [rad]")
        self.f107, self.f107a, self.ap, self.rotation = float(f107), float(f107a), float(ap), float(rotation)


@component("body")
class Cannonball:
    """A body's cross-section and force coefficients for drag and solar radiation pressure."""

    area: float = column("m^2", default=0.0, doc="cross-section A seen by the flow and by sunlight",
                         check=nonnegative("m^2"))
    drag_coefficient: float = column("1", default=2.2, doc="C_D", check=nonnegative())
    reflectivity: float = column("1", default=1.3, doc="radiation-pressure coefficient C_R (1 absorbing, 2 mirror)",
                                 check=nonnegative())
    density: float = column("kg/m^3", default=0.0,
                            doc="output: atmospheric density at the CoM, written at every frame start by "
                                "systems.forces.drag.MsisDensity (NRLMSIS); unused by the exponential atmosphere")


#: Flat plates per body (:class:`Plates`): a box's six faces and the two sides of a solar array.
PLATES = 8


def _each_nonnegative(unit: str) -> Rule:
    return Rule(f"must be >= 0 [{unit}] for every plate", lambda v: ~(v.reshape(v.shape[0], -1) >= 0.0).all(axis=1))


def _unit_or_zero() -> Rule:
    def bad(v):
        n = np.linalg.norm(v.reshape(v.shape[0], PLATES, 3), axis=2)
        return ~((np.abs(n - 1.0) <= 1e-12) | (n == 0.0)).all(axis=1)
    return Rule("must be a unit vector (or zero for an unused plate) for every plate: | |n| - 1 | <= 1e-12", bad)


@component("plate")
class Plates:
    """A body's outer surface as up to :data:`PLATES` flat plates, for solar radiation pressure
    (:class:`systems.forces.solar_pressure.SolarRadiationPressure`; a body with plates takes its radiation
    pressure from them, its :class:`Cannonball` then serving drag only). Plate k: area A, outward
    unit normal n̂ and centre of pressure r (body axes, from the reference point: a link's origin),
    specular and diffuse reflectivities ρs, ρd (absorbed 1 − ρs − ρd). Unused plates: area 0."""

    area: np.ndarray = column("m^2", shape=PLATES, doc="plate areas (0: unused)", check=_each_nonnegative("m^2"))
    normal: np.ndarray = column("1", shape=(PLATES, 3), frame="body", doc="outward unit normals",
                                check=_unit_or_zero())
    center: np.ndarray = column("m", shape=(PLATES, 3), frame="body",
                                doc="centres of pressure from the reference point")
    specular: np.ndarray = column("1", shape=PLATES, doc="specular reflectivity ρs", check=_each_nonnegative("1"))
    diffuse: np.ndarray = column("1", shape=PLATES, doc="diffuse reflectivity ρd", check=_each_nonnegative("1"))


def plates_error(area, normal, specular, diffuse):
    """The first plate row breaking a rule across the plate columns, as ``(row, column, value, rule)``,
    or ``None``: a plate with area needs a unit normal, and ρs + ρd <= 1."""
    area = np.asarray(area).reshape(-1, PLATES)
    n = np.linalg.norm(np.asarray(normal).reshape(-1, PLATES, 3), axis=2)
    bad = (area > 0) & (np.abs(n - 1.0) > 1e-12)
    if bad.any():
        r = int(np.argwhere(bad)[0][0])
        return r, "plate_normal", np.asarray(normal).reshape(-1, PLATES, 3)[r].tolist(), \
            "must be a unit vector for every plate with area > 0"
    tot = np.asarray(specular).reshape(-1, PLATES) + np.asarray(diffuse).reshape(-1, PLATES)
    if (tot > 1.0 + 1e-12).any():
        r = int(np.argwhere(tot > 1.0 + 1e-12)[0][0])
        return r, "plate_specular", np.asarray(specular).reshape(-1, PLATES)[r].tolist(), \
            "plus plate_diffuse must be <= 1 for every plate (reflected + absorbed = incident)"
    return None
