"""Sun and Moon third-body gravity from JPL DE421 (components.ephemeris, systems.gravity.third_body).

References: the positions against jplephem's own evaluation of the same DE421 records
(``jplephem.ephem.Ephemeris.position``); the acceleration against Montenbruck & Gill eq 3.37 written
out in numpy from those positions (a hand computation); a run's force against both.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("jplephem")
de421 = pytest.importorskip("de421")

from jplephem.ephem import Ephemeris as JplEphemeris  # noqa: E402

from components.ephemeris import Ephemeris  # noqa: E402
from ecs import InputError  # noqa: E402

EPOCH = 2460676.5          # 2025-01-01 00:00 TDB
SPAN = 40 * 86400.0


@pytest.fixture(scope="module")
def eph():
    return Ephemeris.de421(EPOCH, SPAN)


def _jpl_geocentric(t):
    """Geocentric Moon and Sun [m] at t [s] after EPOCH, by jplephem."""
    j = JplEphemeris(de421)
    jd, jd2 = np.full(np.shape(t), EPOCH), np.asarray(t) / 86400.0     # two-part date: no rounding of t
    moon = j.position("moon", jd, jd2)
    earth = j.position("earthmoon", jd, jd2) - moon / (1.0 + j.EMRAT)
    sun = j.position("sun", jd, jd2) - earth
    return 1e3 * moon.T, 1e3 * sun.T


def _positions(eph, t):
    from numba import njit

    from systems.gravity.third_body import moon_and_sun

    ms = moon_and_sun.cpu

    @njit
    def run(coef, start, length, emrat, t, out):
        for i in range(t.shape[0]):
            r = ms(coef, start, length, emrat, t[i])
            for b in range(2):
                for k in range(3):
                    out[b, i, k] = r[3 * b + k]

    out = np.empty((2, len(t), 3))
    run(eph.coef, eph.record_start, eph.record_length, eph.emrat, np.asarray(t, float), out)
    return out


def test_moon_and_sun_positions_match_jplephem(eph):
    """Same records, same Chebyshev series: the two evaluations differ by their time arguments'
    rounding only. jplephem reduces the date to days since the ephemeris start (~45,700 days here)
    before scaling, which rounds t to ~4e-7 s: 0.4 mm of the Moon's path (1 km/s) and 13 mm of the
    Sun's apparent path (30 km/s); ours works in seconds from the record start. Asserted: 5 mm and
    50 mm (1.2e-11 and 3e-13 relative). A record off by one, or a wrong record length, misplaces the
    Moon by thousands of km."""
    t = np.concatenate([[0.0, SPAN], np.random.default_rng(1).uniform(0.0, SPAN, 60)])
    ours = _positions(eph, t)
    moon, sun = _jpl_geocentric(t)
    assert 3.5e8 < np.linalg.norm(moon, axis=1).min() and np.linalg.norm(moon, axis=1).max() < 4.1e8
    assert 1.46e11 < np.linalg.norm(sun, axis=1).min() and np.linalg.norm(sun, axis=1).max() < 1.53e11
    np.testing.assert_allclose(ours[0], moon, rtol=0, atol=5e-3)
    np.testing.assert_allclose(ours[1], sun, rtol=0, atol=5e-2)


def test_the_row_kernel_is_eq_3_37(eph):
    """The system's row kernel at chosen states and times against Montenbruck & Gill eq 3.37 written
    out in numpy from jplephem's positions (a hand computation): 1e-11 relative (the positions agree
    to ~1e-11, the formula's float64 rounding is ~1e-15)."""
    from systems.gravity.third_body import add_third_bodies_rows

    rng = np.random.default_rng(4)
    n = 64
    r = rng.normal(size=(n, 3))
    r *= rng.uniform(6.6e6, 4.5e7, n)[:, None] / np.linalg.norm(r, axis=1)[:, None]
    t = rng.uniform(0.0, SPAN, n)
    mass = rng.uniform(10.0, 1000.0, n)
    att = np.tile([1.0, 0.0, 0.0, 0.0], (n, 1))
    force, torque = np.zeros((n, 3)), np.zeros((n, 3))
    add_third_bodies_rows(n, np.zeros(n, np.int8), r, att, mass, np.zeros((n, 3)), force, torque, t, eph.coef,
                          eph.record_start, eph.record_length, eph.emrat, np.array([eph.mu_moon, eph.mu_sun]))
    moon, sun = _jpl_geocentric(t)
    expect = np.zeros_like(r)
    for s, mu in ((moon, eph.mu_moon), (sun, eph.mu_sun)):
        d = s - r
        expect += mu * (d / np.linalg.norm(d, axis=1)[:, None] ** 3 - s / np.linalg.norm(s, axis=1)[:, None] ** 3)
    a = force / mass[:, None]
    scale = np.linalg.norm(expect, axis=1)[:, None]
    assert np.all(np.abs(a - expect) <= 1e-11 * scale)
    assert np.all(torque == 0.0)


def test_a_geo_orbit_with_the_sun_and_moon_matches_scipy():
    """A body in geostationary orbit (Earth point mass + Sun + Moon from DE421) over one day against
    scipy's DOP853 (rtol 1e-12) of r̈ = −μ r/r³ + eq 3.37 with jplephem's positions. The Sun and the
    Moon move it by 12.8 km in that day (measured against a run without them); the two integrations
    agree to 0.1 m (measured: 0.6 mm)."""
    from scipy.integrate import solve_ivp

    from components.gravity import PointMass
    from components.rigid import rigid_body
    from ecs import World
    from systems.gravity.fields import GravitySystem
    from systems.dynamics.integration import Integrator
    from systems.gravity.third_body import ThirdBodyGravity

    day = 86400.0
    e = Ephemeris.de421(EPOCH, day)
    a = (e.mu_earth * (86164.0905 / (2 * math.pi)) ** 2) ** (1 / 3)
    r0 = np.array([a, 0.0, 0.0])
    v0 = np.array([0.0, math.sqrt(e.mu_earth / a), 0.0])

    def run(third: bool):
        w = World("geo")
        w.spawn(*rigid_body(mass=2000.0, inertia=[1.0, 1.0, 1.0], position=tuple(r0), velocity=tuple(v0)))
        w.add_system(GravitySystem(PointMass(mu=e.mu_earth)))
        if third:
            w.add_system(ThirdBodyGravity(e))
        w.add_system(Integrator("dp54", rtol=1e-12, atol=1e-6))
        return w.run(t_end=day, dt=day, final=("body_position",)).finals["body_position"][0, 0]

    def rhs(t, y):
        r = y[:3]
        moon, sun = _jpl_geocentric(np.array([t]))
        acc = -e.mu_earth * r / np.linalg.norm(r) ** 3
        for s, mu in ((moon[0], e.mu_moon), (sun[0], e.mu_sun)):
            d = s - r
            acc = acc + mu * (d / np.linalg.norm(d) ** 3 - s / np.linalg.norm(s) ** 3)
        return np.concatenate([y[3:], acc])

    ref = solve_ivp(rhs, (0.0, day), np.concatenate([r0, v0]), method="DOP853", rtol=1e-12, atol=1e-6).y[:3, -1]
    with_bodies, without = run(True), run(False)
    assert np.linalg.norm(with_bodies - without) > 1e4        # the Sun and Moon matter: 12.8 km in a day
    assert np.linalg.norm(with_bodies - ref) < 0.1


def test_constants_and_bad_windows(eph):
    assert eph.mu_sun == pytest.approx(1.32712440e20, rel=1e-8)
    assert eph.mu_moon == pytest.approx(4.902800e12, rel=1e-5)
    assert eph.mu_earth == pytest.approx(3.986004e14, rel=1e-6)
    with pytest.raises(InputError, match="DE421"):
        Ephemeris.de421(2300000.0, 86400.0)
    with pytest.raises(InputError, match="span"):
        Ephemeris.de421(EPOCH, -1.0)
    from systems.gravity.third_body import ThirdBodyGravity

    with pytest.raises(InputError, match="bodies"):
        ThirdBodyGravity(bodies=("jupiter",))


def test_cuda_simulator_row_kernel_matches_cpu():
    """The same row kernel as a CUDA twin, under numba's CUDA simulator: bit-identical forces."""
    import os
    import subprocess
    import sys
    import textwrap
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    code = textwrap.dedent(f"""
        import numpy as np
        from components.ephemeris import Ephemeris
        from ecs.kernels import launch_rows, to_backend
        from systems.gravity.third_body import add_third_bodies, add_third_bodies_rows
        e = Ephemeris.de421({EPOCH}, {SPAN})
        rng = np.random.default_rng(2)
        n = 16
        r = rng.normal(size=(n, 3)) * 2e7
        t = np.full(n, 1234.5) + rng.uniform(0, {SPAN} - 2000.0, n)
        cols = lambda f: (np.zeros(n, np.int8), r, np.tile([1.0, 0, 0, 0], (n, 1)), np.full(n, 50.0),
                          np.zeros((n, 3)), f, np.zeros((n, 3)), t)
        res = (e.coef, e.record_start, e.record_length, e.emrat, np.array([e.mu_moon, e.mu_sun]))
        fc, fg = np.zeros((n, 3)), np.zeros((n, 3))
        launch_rows("cpu", add_third_bodies_rows, add_third_bodies, n, *cols(fc), *res)
        launch_rows("gpu", add_third_bodies_rows, add_third_bodies, n, *cols(fg), *to_backend("gpu", res))
        print(float(np.max(np.abs(fc - fg))), float(np.max(np.abs(fc))))
        """)
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=str(root))
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    diff, scale = (float(v) for v in proc.stdout.split())
    assert scale > 0 and diff <= 1e-15 * scale


def test_a_run_past_the_ephemeris_window_is_refused():
    from components.rigid import rigid_body
    from ecs import World
    from systems.dynamics.integration import Integrator
    from systems.gravity.third_body import ThirdBodyGravity

    w = World("too-long")
    w.spawn(*rigid_body(mass=1.0, inertia=[1.0, 1.0, 1.0], position=(7e6, 0.0, 0.0)))
    w.add_system(ThirdBodyGravity(Ephemeris.de421(EPOCH, 3600.0)))
    w.add_system(Integrator("rk4"))
    with pytest.raises(InputError, match="ephemeris window"):
        w.run(t_end=7200.0, dt=600.0)
    with pytest.raises(InputError, match="ThirdBodyGravity.ephemeris"):
        w2 = World("no-ephemeris")
        w2.spawn(*rigid_body(mass=1.0, inertia=[1.0, 1.0, 1.0], position=(7e6, 0.0, 0.0)))
        w2.add_system(ThirdBodyGravity())
        w2.add_system(Integrator("rk4"))
        w2.run(t_end=1.0, dt=1.0)
