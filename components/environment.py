"""Orbital environment data: the atmosphere model and a body's cannonball surface.

* :class:`ExponentialAtmosphere` — piecewise-exponential density of the Earth's atmosphere,
  ``ρ(h) = ρ0_i exp(−(h − h0_i)/H_i)`` in the band ``h0_i <= h < h0_{i+1}`` of geometric altitude h
  above a sphere of radius R; default table: D. A. Vallado, *Fundamentals of Astrodynamics and
  Applications*, 4th ed., Microcosm Press 2013, Table 8-4 (0–1000 km; the top band extends above).
  The atmosphere turns with the Earth (rate ω about the inertial z axis).
* :class:`Cannonball` (component, ``body_*`` columns) — a body seen as a sphere: its cross-section
  A, drag coefficient C_D and radiation-pressure coefficient C_R, used by
  :class:`systems.drag.AtmosphericDrag` and :class:`systems.solar_pressure.SolarRadiationPressure`.
"""

from __future__ import annotations

import math

import numpy as np

from ecs import InputError, column, component
from ecs.rules import nonnegative

__all__ = ["Cannonball", "ExponentialAtmosphere", "VALLADO_2013_TABLE_8_4"]

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


@component("body")
class Cannonball:
    """A body's cross-section and force coefficients for drag and solar radiation pressure."""

    area: float = column("m^2", default=0.0, doc="cross-section A seen by the flow and by sunlight",
                         check=nonnegative("m^2"))
    drag_coefficient: float = column("1", default=2.2, doc="C_D", check=nonnegative())
    reflectivity: float = column("1", default=1.3, doc="radiation-pressure coefficient C_R (1 absorbing, 2 mirror)",
                                 check=nonnegative())
