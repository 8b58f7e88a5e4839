"""Sun and Moon ephemeris as a world resource: JPL DE421 Chebyshev records for a run's time window.

The positions the third-body gravity kernels need (:mod:`systems.gravity.third_body`) are the JPL
planetary ephemeris DE421 (W. M. Folkner, J. G. Williams, D. H. Boggs, "The Planetary and Lunar
Ephemeris DE 421", IPN Progress Report 42-178, 2009), shipped for offline use by the ``de421``
package and read with ``jplephem`` (the ``orbit`` extra). The ephemeris stores each body's
position as Chebyshev series over consecutive records (Moon: 4 days, Earth–Moon barycentre and
Sun: 16 days); :meth:`Ephemeris.de421` copies the records that cover ``[epoch, epoch + span]`` into
one array, and the kernels evaluate the series there, as jplephem does.

Frames and times: positions are in the ephemeris' frame, the ICRF (axes of the Earth-centred
inertial frame the simulation integrates in, GCRF), Earth-centred; the simulation time t [s] is TDB
seconds since ``epoch_tdb_jd`` (a TDB Julian date).

Layout (``coef[body, record, axis, k]``, axis = x, y, z; k the Chebyshev index, zero-padded):
bodies :data:`MOON` (geocentric Moon), :data:`EARTH_MOON` (barycentric Earth–Moon barycentre) and
:data:`SUN` (barycentric Sun); ``record_start[body]`` [s] is the start of the body's first kept
record relative to the epoch and ``record_length[body]`` [s] its record length. Geocentric Sun =
Sun − (EMB − Moon / (1 + EMRAT)).
"""

from __future__ import annotations

import math

import numpy as np

from ecs.errors import InputError

__all__ = ["EARTH_MOON", "MOON", "SUN", "Ephemeris"]

#: Body slots of :attr:`Ephemeris.coef`.
MOON, EARTH_MOON, SUN = 0, 1, 2
_SETS = ("moon", "earthmoon", "sun")
DAY = 86400.0


class Ephemeris:
    """Chebyshev records of the Moon, the Earth–Moon barycentre and the Sun over a time window.

    Args:
        epoch_tdb_jd: the TDB Julian date of simulation time 0.
        span: the window's length [s] (the run's end time at most).
        coef, record_start, record_length: module docstring (positions in km, as the ephemeris).
        emrat: Earth/Moon mass ratio; mu_sun, mu_moon, mu_earth: GM [m³/s²] of the ephemeris.
        name: the ephemeris' name.
    """

    def __init__(self, *, epoch_tdb_jd: float, span: float, coef, record_start, record_length, emrat: float,
                 mu_sun: float, mu_moon: float, mu_earth: float, name: str = ""):
        if not (math.isfinite(float(span)) and span > 0):
            raise InputError("Ephemeris.span", span, "must be a finite duration > 0 [s]")
        self.epoch_tdb_jd = float(epoch_tdb_jd)
        self.span = float(span)
        self.coef = np.ascontiguousarray(coef, dtype=np.float64)
        self.record_start = np.ascontiguousarray(record_start, dtype=np.float64)
        self.record_length = np.ascontiguousarray(record_length, dtype=np.float64)
        if self.coef.ndim != 4 or self.coef.shape[0] != 3 or self.coef.shape[2] != 3:
            raise InputError("Ephemeris.coef", self.coef.shape, "must have shape (3 bodies, records, 3 axes, k)")
        self.emrat = float(emrat)
        self.mu_sun, self.mu_moon, self.mu_earth = float(mu_sun), float(mu_moon), float(mu_earth)
        self.name = str(name)
        for a in (self.coef, self.record_start, self.record_length):
            a.flags.writeable = False

    @classmethod
    def de421(cls, epoch_tdb_jd: float, span: float) -> "Ephemeris":
        """The DE421 records covering ``[epoch, epoch + span]`` (needs the ``orbit`` extra:
        ``pip install 'tumble[orbit]'``; the package's records span JD 2414992.5–2524624.5)."""
        try:
            import de421
            from jplephem.ephem import Ephemeris as JplEphemeris
        except ImportError as exc:
            raise InputError("Ephemeris.de421", "jplephem, de421",
                             "must be installed: pip install 'tumble[orbit]'") from exc
        eph = JplEphemeris(de421)
        epoch = float(epoch_tdb_jd)
        span = float(span)
        end = epoch + span / DAY
        if not (eph.jalpha <= epoch and end <= eph.jomega):
            raise InputError("Ephemeris window (epoch_tdb_jd, span)", (epoch_tdb_jd, span),
                             f"must lie within DE421's JD {eph.jalpha}..{eph.jomega}")
        sets = [eph.load(n) for n in _SETS]
        kmax = max(s.shape[2] for s in sets)
        first, count, length = [], [], []
        for s in sets:
            days = (eph.jomega - eph.jalpha) / s.shape[0]
            i0 = int((epoch - eph.jalpha) // days)
            i1 = min(int((end - eph.jalpha) // days), s.shape[0] - 1)
            first.append(i0)
            count.append(i1 - i0 + 1)
            length.append(days)
        coef = np.zeros((3, max(count), 3, kmax))
        for b, s in enumerate(sets):
            coef[b, :count[b], :, :s.shape[2]] = s[first[b]:first[b] + count[b]]
        start = [((eph.jalpha + first[b] * length[b]) - epoch) * DAY for b in range(3)]
        au = eph.AU * 1e3                         # m
        gm = (au ** 3) / DAY ** 2                 # AU³/day² → m³/s²
        mu_emb = eph.GMB * gm
        return cls(epoch_tdb_jd=epoch, span=span, coef=coef, record_start=start,
                   record_length=np.array(length) * DAY, emrat=eph.EMRAT, mu_sun=eph.GMS * gm,
                   mu_moon=mu_emb / (1.0 + eph.EMRAT), mu_earth=mu_emb * eph.EMRAT / (1.0 + eph.EMRAT),
                   name="DE421")
