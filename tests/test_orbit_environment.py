"""Atmospheric drag and solar radiation pressure on cannonball bodies (systems.forces.drag,
systems.forces.solar_pressure; components.environment).

References: the Vallado (2013) Table 8-4 values themselves; Montenbruck & Gill (2000) eqs 3.75 and
3.97–3.99 written out in numpy (hand computations); the closed-form decay of a circular orbit under
drag, da/dt = −(C_D A/m) ρ √(μ a) (Gauss's equation for a with the drag force along −v).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from components.environment import VALLADO_2013_TABLE_8_4, Cannonball, ExponentialAtmosphere
from components.gravity import PointMass
from components.rigid import rigid_body
from ecs import InputError, World
from systems.forces.drag import AtmosphericDrag, add_drag_rows
from systems.gravity.fields import GravitySystem
from systems.dynamics.integration import Integrator

MU = 3.986004415e14


def test_density_reproduces_the_table_and_the_kernel_the_numpy_formula():
    from numba import njit

    from systems.forces.drag import density_at

    atm = ExponentialAtmosphere()
    table = np.array(VALLADO_2013_TABLE_8_4)
    np.testing.assert_array_equal(atm.density(table[:, 0] * 1e3), table[:, 1])
    k = density_at.cpu

    @njit
    def run(h, base, rho0, scale, out):
        for i in range(h.shape[0]):
            out[i] = k(h[i], base, rho0, scale)

    h = np.linspace(-1e3, 1.2e6, 5001)
    out = np.empty_like(h)
    run(h, atm.base_altitude, atm.base_density, atm.scale_height, out)
    np.testing.assert_allclose(out, atm.density(h), rtol=1e-15, atol=0)
    # between bases the bands join to within the table's own rounding (≤ 5 %: Vallado's fit)
    left = atm.density(table[1:, 0] * 1e3 - 1e-6)
    assert np.all(np.abs(left / table[1:, 1] - 1) < 0.05)


def _random_orbiters(rng, n, atm, altitudes, rate, offset):
    """``n`` random bodies around ``atm``'s planet: positions at altitudes uniform in ``altitudes``
    [m], velocities ~5 km/s, random attitudes, body rates ~``rate`` [rad/s], CoM offsets ~``offset`` [m]."""
    from ecs.attitude import quat_normalize

    r = rng.normal(size=(n, 3))
    r *= (atm.radius + rng.uniform(*altitudes, n))[:, None] / np.linalg.norm(r, axis=1)[:, None]
    v = rng.normal(size=(n, 3)) * 5e3
    att = quat_normalize(rng.normal(size=(n, 4)))
    om = rng.normal(size=(n, 3)) * rate
    com = rng.normal(size=(n, 3)) * offset
    return r, v, att, om, com


@pytest.mark.parametrize("msis", [False, True])
def test_the_drag_kernel_is_eq_3_97_with_a_turning_atmosphere(msis):
    """Rows with CoM offsets and body rates: m a = −½ ρ C_D A |v_r| v_r, v_r = v_CoM − ω ẑ × r_CoM,
    written out in numpy; 1e-13 relative. ρ from the exponential table, or (``msis``) the row's
    ``body_density`` column as MsisDensity writes it."""
    from ecs.attitude import quat_rotate

    atm = ExponentialAtmosphere()
    rng = np.random.default_rng(3)
    n = 32
    r, v, att, om, com = _random_orbiters(rng, n, atm, (150e3, 900e3), 0.1, 0.5)
    area = rng.uniform(0.1, 20, n)
    cd = rng.uniform(2.0, 2.5, n)
    force, torque = np.zeros((n, 3)), np.zeros((n, 3))
    dens = rng.uniform(1e-13, 1e-11, n)
    add_drag_rows(n, np.zeros(n, np.int8), r, v, att, om, com, (area, cd, dens, *_no_plates(n)[:3]), force, torque,
                  (atm.base_altitude, atm.base_density, atm.scale_height, atm.radius, atm.rotation, msis))
    rc = r + quat_rotate(att, com)
    vc = v + quat_rotate(att, np.cross(om, com))
    vr = vc - np.cross([0.0, 0.0, atm.rotation], rc)
    rho = dens if msis else atm.density(np.linalg.norm(rc, axis=1) - atm.radius)
    expect = -0.5 * (rho * cd * area)[:, None] * np.linalg.norm(vr, axis=1)[:, None] * vr
    np.testing.assert_allclose(force, expect, rtol=1e-13, atol=0)
    # the force acts at the CoM: torque about the reference point = c × F in body axes
    from ecs.attitude import quat_rotate_inverse

    np.testing.assert_allclose(torque, np.cross(com, quat_rotate_inverse(att, force)), rtol=1e-12,
                               atol=1e-12 * np.abs(torque).max())


def test_a_circular_orbit_decays_at_the_gauss_rate():
    """400 km circular orbit, A/m = 0.1 m²/kg, C_D 2.2, atmosphere at rest (ω = 0) so that the drag
    is along −v: da/dt = −(C_D A/m) ρ √(μ a), about −3.7 km/day. Over 5 orbits the engine's
    a (from the energy) falls by 1196.086 m and the closed form, integrated with ρ at the current a,
    by 1196.086 m (measured: 3e-7 relative); 1 % is asserted (a lost ½ or a wrong band fails)."""
    atm = ExponentialAtmosphere(rotation=0.0)
    a0 = atm.radius + 400e3
    w = World("decay")
    w.add_resource(atm)
    w.spawn(*rigid_body(mass=100.0, inertia=[1.0, 1.0, 1.0], position=(a0, 0.0, 0.0),
                        velocity=(0.0, math.sqrt(MU / a0), 0.0)), Cannonball(area=10.0, drag_coefficient=2.2))
    w.add_system(GravitySystem(PointMass(mu=MU)))
    w.add_system(AtmosphericDrag())
    w.add_system(Integrator("dp54", rtol=1e-12, atol=1e-6))
    period = 2 * math.pi * math.sqrt(a0 ** 3 / MU)
    res = w.run(t_end=5 * period, dt=period / 20, record_every=1, record=("body_position", "body_velocity"))
    p = res.trajectories["body_position"][0, :, 0]
    v = res.trajectories["body_velocity"][0, :, 0]
    a = -MU / (2 * (0.5 * np.sum(v * v, axis=1) - MU / np.linalg.norm(p, axis=1)))
    # closed form: integrate da/dt = −k ρ(a − R) √(μ a) with a small explicit step
    k = 2.2 * 10.0 / 100.0
    ac, dt = a0, period / 2000
    for _ in range(int(round(5 * period / dt))):
        ac += -k * atm.density(ac - atm.radius) * math.sqrt(MU * ac) * dt
    decay, expect = a[-1] - a0, ac - a0
    assert expect < -500.0                            # the effect: 1.2 km in 5 orbits
    assert decay == pytest.approx(expect, rel=0.01)


def test_bodies_without_a_cannonball_are_refused_by_name():
    w = World("no-surface")
    w.spawn(*rigid_body(mass=1.0, inertia=[1.0, 1.0, 1.0], position=(7e6, 0.0, 0.0)))
    w.add_system(AtmosphericDrag())
    w.add_system(Integrator("rk4"))
    with pytest.raises(InputError, match="Cannonball"):
        w.run(t_end=1.0, dt=1.0)
    with pytest.raises(InputError, match="area"):
        w2 = World("bad-area")
        w2.spawn(*rigid_body(mass=1.0, inertia=[1.0, 1.0, 1.0]), Cannonball(area=-1.0))
        w2.compile(samples=1)


def test_earth_rotation_angle_is_the_iers_formula():
    """IERS Conventions (2010) eq 5.15: θ(J2000.0) = 2π · 0.7790572732640; one UT1 day later the
    Earth has turned 2π · 1.00273781191135448 (modulo whole turns)."""
    from components.environment import earth_rotation_angle

    th0 = earth_rotation_angle(2451545.0)
    assert abs(th0 - 2 * math.pi * 0.7790572732640) < 1e-15
    turned = (earth_rotation_angle(2451545.0 + 10000.0) - th0) % (2 * math.pi)
    assert abs(turned - (2 * math.pi * 0.00273781191135448 * 10000.0) % (2 * math.pi)) < 1e-9


def test_geodetic_inverts_the_closed_form_ellipsoid_map():
    """Earth-fixed points built from geodetic (φ, λ, h) by the closed form x = (N + h) cos φ cos λ,
    y = (N + h) cos φ sin λ, z = (N (1 − e²) + h) sin φ, N = a/√(1 − e² sin² φ): recovered to
    1e-12 rad and 1e-6 m, poles and equator included."""
    from systems.forces.drag import WGS84_A, WGS84_F, geodetic

    rng = np.random.default_rng(5)
    lat = np.concatenate([rng.uniform(-np.pi / 2, np.pi / 2, 200), [0.0, np.pi / 2 - 1e-9, -np.pi / 2 + 1e-9]])
    lon = rng.uniform(-np.pi, np.pi, lat.size)
    h = np.concatenate([rng.uniform(-1e3, 4e7, 200), [400e3, 500e3, 1e3]])
    e2 = WGS84_F * (2 - WGS84_F)
    n = WGS84_A / np.sqrt(1 - e2 * np.sin(lat) ** 2)
    x, y, z = (n + h) * np.cos(lat) * np.cos(lon), (n + h) * np.cos(lat) * np.sin(lon), (n * (1 - e2) + h) * np.sin(lat)
    la, lo, hh = geodetic(x, y, z)
    assert np.max(np.abs(la - lat)) < 1e-12 and np.max(np.abs(hh - h)) < 1e-6
    assert np.max(np.abs(np.angle(np.exp(1j * (lo - lon))))) < 1e-12


def test_msis_density_reaches_bodies_and_links_and_drives_the_drag():
    """MsisDensity writes NRLMSIS 2.1 (pymsis, called here directly at the geodetic point of the CoM
    in the Earth-fixed frame turned by the Earth rotation angle) into body_density of a rigid body
    and of a multibody link: equal to 1e-12 relative; the drag the rigid body then feels over one
    frame is −½ ρ C_D A |v_r| v_r with that ρ (1e-12). Over two orbits the link and the rigid body
    fly the same path (the term and the launch kernels; measured 0.40 µm, limit 0.1 mm)."""
    pymsis = pytest.importorskip("pymsis")
    from components.environment import MsisAtmosphere, earth_rotation_angle
    from components.multibody import tree_spec
    from systems.forces.drag import MsisDensity, geodetic
    from systems.gravity.fields import GravitySystem
    from systems.multibody.dynamics import MultibodyDynamics

    atm = MsisAtmosphere("2025-03-20T12:00", f107=180.0, f107a=160.0, ap=12.0)
    jd = 2440587.5 + (np.datetime64("2025-03-20T12:00") - np.datetime64("1970-01-01")) / np.timedelta64(1, "D")
    assert abs(atm.angle0 - earth_rotation_angle(jd)) < 1e-12
    r0 = np.array([4.1e6, 3.9e6, 3.5e6])
    r0 *= (6378137.0 + 420e3) / np.linalg.norm(r0)
    v0 = np.cross([0.0, 0.0, 1.0], r0)
    v0 *= math.sqrt(MU / np.linalg.norm(r0)) / np.linalg.norm(v0)          # (EGM2008's GM is MU)
    body = dict(mass=500.0, inertia=[100.0, 120.0, 140.0], position=tuple(r0), velocity=tuple(v0))

    # the full environment, as the multibody tests fly it (one fused term set, compiled once)
    from components.ephemeris import Ephemeris
    from components.gravity import SphericalHarmonics
    from scenes.assets import EGM2008_GFC
    from systems.forces.solar_pressure import SolarRadiationPressure
    from systems.gravity.third_body import ThirdBodyGravity

    pytest.importorskip("de421")
    earth = SphericalHarmonics.from_gfc(EGM2008_GFC, degree=8)
    eph = Ephemeris.de421(2460676.5, 2 * 5560.0)

    def world(link):
        w = World("msis")
        w.add_resource(atm)
        w.add_resource(eph)
        w.add_system(GravitySystem(earth, gradient_torque=True))
        w.add_system(ThirdBodyGravity())
        if link:
            spec = tree_spec(parents=[-1], kinds=["free"], mass=[500.0], inertia=[[100.0, 120.0, 140.0]],
                             q=[list(r0) + [1, 0, 0, 0]], qd=[list(v0) + [0, 0, 0]])
            w.spawn(*spec.components(0), Cannonball(area=4.0))
            w.add_system(MultibodyDynamics())
        else:
            w.spawn(*rigid_body(**body), Cannonball(area=4.0))
            w.add_system(Integrator("rk4"))
        w.add_system(MsisDensity())
        w.add_system(AtmosphericDrag())
        w.add_system(SolarRadiationPressure())
        return w

    th = atm.angle0
    lat, lon, h = geodetic(math.cos(th) * r0[0] + math.sin(th) * r0[1], -math.sin(th) * r0[0] + math.cos(th) * r0[1],
                           r0[2])
    ref = pymsis.calculate(np.datetime64("2025-03-20T12:00"), np.degrees(lon), np.degrees(lat), h / 1e3, f107s=180.0,
                           f107as=160.0, aps=[[12.0] * 7], version=2.1)[..., pymsis.Variable.MASS_DENSITY].item()
    assert 1e-13 < ref < 1e-10
    paths = {}
    for link in (False, True):
        w = world(link)
        (t,) = w.compile()
        assert abs(t["body_density"][0] / ref - 1) < 1e-12
        if not link:
            vr = v0 - np.cross([0.0, 0.0, atm.rotation], r0)
            f = -0.5 * ref * 2.2 * 4.0 * np.linalg.norm(vr) * vr
            t["body_force"][:] = 0.0
            drag = [s for s in w.systems if isinstance(s, AtmosphericDrag)][0]
            drag.bind(w)
            drag.process(type("F", (), {"backend": "cpu"})())
            np.testing.assert_allclose(t["body_force"][0], f, rtol=1e-12)
        col = "link_com_position" if link else "body_position"
        paths[link] = w.run(t_end=2 * 5560.0, dt=10.0, record_every=10, record=(col,)).trajectories[col][0, :, 0]
    d = np.max(np.linalg.norm(paths[True] - paths[False], axis=1))
    print(f"\nNRLMSIS 2.1 at 420 km: rho = {ref:.3e} kg/m^3; link vs rigid body over two orbits {d * 1e6:.2f} µm")
    assert d < 1e-4


def _srp_setup():
    pytest.importorskip("jplephem")
    pytest.importorskip("de421")
    from components.ephemeris import Ephemeris

    return Ephemeris.de421(2460676.5, 86400.0)


def test_srp_kernel_is_eq_3_75_and_the_shadow_is_the_cylinder():
    """Sunlit rows: m a = −P C_R A (AU/d)² d̂ with d = s − r (numpy from the kernel's own Sun, which
    tests/test_third_body.py checks against jplephem), 1e-13; rows behind the Earth inside the
    shadow cylinder feel nothing, rows just outside it do."""
    from systems.forces.solar_pressure import AU, P_SUN, add_srp_rows
    from systems.gravity.third_body import moon_and_sun

    eph = _srp_setup()
    t0 = 3600.0
    sun = np.array(_sun_at(eph, moon_and_sun, t0))
    u = sun / np.linalg.norm(sun)
    perp = np.cross(u, [0.0, 0.0, 1.0])
    perp /= np.linalg.norm(perp)
    r = np.array([7e6 * u, -7e6 * u, -7e6 * u + 6.3e6 * perp, -7e6 * u + 6.5e6 * perp, 4.2e7 * perp])
    n = len(r)
    area, cr = np.full(n, 2.0), np.full(n, 1.3)
    force, torque = np.zeros((n, 3)), np.zeros((n, 3))
    add_srp_rows(n, np.zeros(n, np.int8), r, np.tile([1.0, 0, 0, 0], (n, 1)), np.zeros((n, 3)),
                 (area, cr, *_no_plates(n)), force, torque, np.full(n, t0),
                 (eph.coef, eph.record_start, eph.record_length, eph.emrat, P_SUN, 6378137.0))
    d = sun - r
    dn = np.linalg.norm(d, axis=1)[:, None]
    expect = -P_SUN * 1.3 * 2.0 * (AU / dn) ** 2 * d / dn
    lit = np.array([True, False, False, True, True])
    np.testing.assert_allclose(force[lit], expect[lit], rtol=1e-13, atol=0)
    assert np.all(force[~lit] == 0.0)
    assert 1e-5 < np.linalg.norm(force[0]) < 2e-5          # ~1.2e-5 N: P C_R A at ~1 AU


def _no_plates(n):
    from components.environment import PLATES

    return (np.zeros((n, PLATES)), np.zeros((n, PLATES, 3)), np.zeros((n, PLATES, 3)), np.zeros((n, PLATES)),
            np.zeros((n, PLATES)))


def test_flat_plates_follow_wertz_and_push_at_their_centres():
    """Random bodies of 8 random plates (areas, normals, centres, ρs, ρd) at random attitudes, lit
    from the kernel's own Sun: force and torque about the reference point against the plate law
    written out in numpy (F_k = −P A cos θ [(1 − ρs) ŝ + 2 (ρs cos θ + ρd/3) n̂] for cos θ > 0, torque
    Σ r_k × F_k in body axes), 1e-12. Closed forms: a black plate facing the Sun feels −P A ŝ; a
    mirror facing it −2 P A ŝ; edge-on, nothing."""
    from components.environment import PLATES
    from ecs.attitude import quat_normalize, quat_rotate, quat_rotate_inverse
    from systems.forces.solar_pressure import AU, P_SUN, add_srp_rows
    from systems.gravity.third_body import moon_and_sun

    eph = _srp_setup()
    t0 = 7200.0
    sun = np.array(_sun_at(eph, moon_and_sun, t0))
    u = sun / np.linalg.norm(sun)
    rng = np.random.default_rng(11)
    n = 40
    r = 7e6 * u + rng.normal(size=(n, 3)) * 1e5                   # sunlit side
    att = quat_normalize(rng.normal(size=(n, 4)))
    com = rng.normal(size=(n, 3)) * 0.3
    parea = rng.uniform(0.0, 3.0, (n, PLATES)) * (rng.uniform(size=(n, PLATES)) < 0.8)
    pn = rng.normal(size=(n, PLATES, 3))
    pn /= np.linalg.norm(pn, axis=2, keepdims=True)
    pc = rng.normal(size=(n, PLATES, 3))
    rs = rng.uniform(0, 0.6, (n, PLATES))
    rd = rng.uniform(0, 0.4, (n, PLATES))
    force, torque = np.zeros((n, 3)), np.zeros((n, 3))
    add_srp_rows(n, np.zeros(n, np.int8), r, att, com, (np.zeros(n), np.zeros(n), parea, pn, pc, rs, rd), force,
                 torque, np.full(n, t0), (eph.coef, eph.record_start, eph.record_length, eph.emrat, P_SUN, 6378137.0))
    rc = r + quat_rotate(att, com)
    d = sun - rc
    P = P_SUN * (AU / np.linalg.norm(d, axis=1)) ** 2
    sb = quat_rotate_inverse(att, d / np.linalg.norm(d, axis=1)[:, None])
    cos = np.einsum("nkj,nj->nk", pn, sb)
    lit = (cos > 0) & (parea > 0)
    fk = -(P[:, None] * parea * cos * lit)[..., None] * ((1 - rs)[..., None] * sb[:, None, :]
                                                         + (2 * (rs * cos + rd / 3))[..., None] * pn)
    fb = fk.sum(1)
    tb = np.cross(pc, fk).sum(1)                                    # about the reference point
    np.testing.assert_allclose(force, quat_rotate(att, fb), rtol=1e-12, atol=1e-12 * np.abs(force).max())
    np.testing.assert_allclose(torque, tb, rtol=1e-12, atol=1e-12 * np.abs(torque).max())
    # closed forms, one plate facing the Sun (normal = ŝ in body axes), identity attitude
    one = np.zeros((3, PLATES))
    one[:, 0] = 2.0
    nrm = np.zeros((3, PLATES, 3))
    nrm[0, 0], nrm[1, 0] = u, u
    nrm[2, 0] = np.cross(u, [0.0, 0.0, 1.0]) / np.linalg.norm(np.cross(u, [0.0, 0.0, 1.0]))   # edge-on
    spec = np.zeros((3, PLATES))
    spec[1, 0] = 1.0
    f3, t3 = np.zeros((3, 3)), np.zeros((3, 3))
    r3 = np.tile(7e6 * u, (3, 1))
    add_srp_rows(3, np.zeros(3, np.int8), r3, np.tile([1.0, 0, 0, 0], (3, 1)), np.zeros((3, 3)),
                 (np.zeros(3), np.zeros(3), one, nrm, np.zeros((3, PLATES, 3)), spec, np.zeros((3, PLATES))), f3, t3,
                 np.full(3, t0), (eph.coef, eph.record_start, eph.record_length, eph.emrat, P_SUN, 6378137.0))
    d3 = sun - r3[0]
    s3 = d3 / np.linalg.norm(d3)
    P3 = P_SUN * (AU / np.linalg.norm(d3)) ** 2
    cos3 = float(u @ s3)                       # the plate faces the geocentric Sun: cos θ = 1 - 1e-9
    np.testing.assert_allclose(f3[0], -P3 * 2.0 * cos3 * s3, rtol=1e-12)
    np.testing.assert_allclose(f3[1], -P3 * 2.0 * cos3 * 2 * cos3 * u, rtol=1e-12)
    assert np.all(np.abs(f3[2]) < 1e-9 * P3)


def test_plate_drag_is_the_projected_area_law_with_its_torque():
    """Random plated bodies in a turning atmosphere: force and torque about the reference point
    against the projected-area flat-plate law written out in numpy (F_k = −½ ρ C_D A_k cos θ_k
    |v_r| v_r for cos θ_k = n̂_k·v̂_r > 0, at the plate centres), 1e-12; a single plate facing the flow
    feels the cannonball drag of its area, edge-on nothing."""
    from components.environment import PLATES
    from ecs.attitude import quat_rotate, quat_rotate_inverse

    atm = ExponentialAtmosphere()
    rng = np.random.default_rng(8)
    n = 30
    r, v, att, om, com = _random_orbiters(rng, n, atm, (200e3, 600e3), 0.01, 0.3)
    cd = rng.uniform(2.0, 2.5, n)
    parea = rng.uniform(0.0, 3.0, (n, PLATES)) * (rng.uniform(size=(n, PLATES)) < 0.8)
    pn = rng.normal(size=(n, PLATES, 3))
    pn /= np.linalg.norm(pn, axis=2, keepdims=True)
    pc = rng.normal(size=(n, PLATES, 3))
    force, torque = np.zeros((n, 3)), np.zeros((n, 3))
    add_drag_rows(n, np.zeros(n, np.int8), r, v, att, om, com, (np.zeros(n), cd, np.zeros(n), parea, pn, pc), force,
                  torque, (atm.base_altitude, atm.base_density, atm.scale_height, atm.radius, atm.rotation, False))
    rc = r + quat_rotate(att, com)
    vr = v + quat_rotate(att, np.cross(om, com)) - np.cross([0.0, 0.0, atm.rotation], rc)
    rho = atm.density(np.linalg.norm(rc, axis=1) - atm.radius)
    vb = quat_rotate_inverse(att, vr)
    u = np.linalg.norm(vb, axis=1)
    cos = np.einsum("nkj,nj->nk", pn, vb) / u[:, None]
    facing = (cos > 0) & (parea > 0)
    fk = -(0.5 * rho[:, None] * cd[:, None] * parea * cos * facing * u[:, None])[..., None] * vb[:, None, :]
    np.testing.assert_allclose(force, quat_rotate(att, fk.sum(1)), rtol=1e-12, atol=1e-12 * np.abs(force).max())
    np.testing.assert_allclose(torque, np.cross(pc, fk).sum(1), rtol=1e-12, atol=1e-12 * np.abs(torque).max())
    # one plate facing the flow = the cannonball of its area; edge-on: nothing
    one = np.zeros((2, PLATES))
    one[:, 0] = 2.0
    nrm = np.zeros((2, PLATES, 3))
    vr0 = v[0] - np.cross([0.0, 0.0, atm.rotation], r[0])
    nrm[0, 0] = vr0 / np.linalg.norm(vr0)
    nrm[1, 0] = np.cross(vr0, [0.0, 0.0, 1.0]) / np.linalg.norm(np.cross(vr0, [0.0, 0.0, 1.0]))
    f2, t2 = np.zeros((2, 3)), np.zeros((2, 3))
    add_drag_rows(2, np.zeros(2, np.int8), np.tile(r[0], (2, 1)), np.tile(v[0], (2, 1)), np.tile([1.0, 0, 0, 0], (2, 1)),
                  np.zeros((2, 3)), np.zeros((2, 3)), (np.zeros(2), np.full(2, 2.2), np.zeros(2), one, nrm,
                  np.zeros((2, PLATES, 3))), f2, t2, (atm.base_altitude, atm.base_density, atm.scale_height,
                  atm.radius, atm.rotation, False))
    rho0 = atm.density(np.linalg.norm(r[0]) - atm.radius)
    np.testing.assert_allclose(f2[0], -0.5 * rho0 * 2.2 * 2.0 * np.linalg.norm(vr0) * vr0, rtol=1e-12)
    assert np.all(np.abs(f2[1]) <= 1e-12 * np.abs(f2[0]).max())


def test_plates_with_bad_normals_or_reflectivities_are_refused():
    from components.environment import PLATES, Plates
    from systems.forces.solar_pressure import SolarRadiationPressure

    eph = _srp_setup()
    normal = np.zeros((PLATES, 3))
    normal[0] = [1.0, 0.0, 0.0]
    area = np.zeros(PLATES)
    area[:2] = 1.0

    def world(**kw):
        w = World("plates")
        w.add_resource(eph)
        w.spawn(*rigid_body(mass=1.0, inertia=[1.0, 1.0, 1.0], position=(7e6, 0.0, 0.0)), Plates(area=area, **kw),
                name="sat")
        w.add_system(SolarRadiationPressure())
        w.add_system(Integrator("rk4"))
        return w

    with pytest.raises(InputError, match=r"plate_normal of sat = .* must be a unit vector for every plate with area"):
        world(normal=normal).compile()
    normal[1] = [0.0, 1.0, 0.0]
    with pytest.raises(InputError, match=r"plate_specular of sat = .* plus plate_diffuse must be <= 1"):
        world(normal=normal, specular=np.full(PLATES, 0.7), diffuse=np.full(PLATES, 0.5)).compile()
    with pytest.raises(InputError, match=r"plate_normal of sat \(sample 0\) = .* unit vector \(or zero"):
        world(normal=normal * 2.0).compile()
    world(normal=normal).compile()


def _sun_at(eph, moon_and_sun, t):
    from numba import njit

    ms = moon_and_sun.cpu

    @njit
    def one(coef, start, length, emrat, t):
        r = ms(coef, start, length, emrat, t)
        return r[3], r[4], r[5]

    return one(eph.coef, eph.record_start, eph.record_length, eph.emrat, t)


def test_the_celestial_pole_follows_erfa_and_turns_the_harmonic_field_as_iers_2010():
    """The Earth-fixed frame with the pole's precession and nutation against the IAU SOFA routines
    (pyerfa, an independent implementation): the tabulated Q(t) (hourly nodes, linear between
    them) matches ``c2i06a`` at random times to 1e-10 (the interpolation's bound: nutation's
    shortest periods are days; measured 2.0e-11), and the harmonic field's acceleration at a
    celestial point equals ``R_c2tᵀ g(R_c2t x)`` with ``R_c2t = c2tcio(Q, era00, 1)`` (polar motion
    zero) to 1e-10 relative (measured 7.6e-14). Without the pole the field's axis is 2.4e-3 rad off
    (2025): the acceleration then errs by 3.7e-6 to 1.0e-5 relative (measured)."""
    erfa = pytest.importorskip("erfa")
    from components.environment import ERA_RATE, CelestialPole, earth_rotation_angle
    from components.gravity import SphericalHarmonics
    from scenes.assets import EGM2008_GFC
    from ecs.terms import RowState, term_record
    from systems.gravity.fields import gravity_term, pole_turn
    from systems.gravity.kernels import gravity_args, gravity_at

    epoch, span = 2460676.5, 8 * 3600.0
    pole = CelestialPole.iau2006(epoch, span)
    rng = np.random.default_rng(5)
    times = rng.uniform(0.0, span, 12)
    worst = 0.0
    for t in times:
        ref = erfa.c2i06a(epoch, t / 86400.0)
        cols = np.array([pole_turn.cpu(pole.table, t, *e, False) for e in np.eye(3)]).T
        worst = max(worst, float(np.abs(cols - ref).max()))
    assert worst < 1e-10
    assert np.isnan(pole_turn.cpu(pole.table, span * 1.01, 1.0, 0.0, 0.0, False)[0])     # past the table: NaN

    earth = SphericalHarmonics.from_gfc(EGM2008_GFC, degree=8)
    ga = gravity_args(earth)
    theta0 = earth_rotation_angle(epoch)
    tilt = []
    for t in times[:4]:
        x = rng.normal(size=3)
        x *= 6.8e6 / np.linalg.norm(x)
        c2t = erfa.c2tcio(erfa.c2i06a(epoch, t / 86400.0), erfa.era00(epoch, t / 86400.0), np.eye(3))
        ref = c2t.T @ np.array(gravity_at.cpu(ga, *(c2t @ x))[1:4])
        out = []
        for table in (pole.table, np.full((1, 10), np.nan)):
            state = RowState(0, t, *x, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)
            names = ("body_inertia", "gs", "gvox", "gpv", "gpe", "gped", "gpel", "gpf", "gpfn", "pole")
            data = term_record(names)(np.zeros((1, 3, 3)), *ga[1:], table)
            params = term_record(("gkind", "spin", "angle0", "gg"))(float(ga[0]), ERA_RATE, theta0, 0.0)
            r = gravity_term(state, data, params)
            out.append(np.array(r[:3]))
        assert np.linalg.norm(out[0] - ref) < 1e-10 * np.linalg.norm(ref)
        tilt.append(np.linalg.norm(out[1] - ref) / np.linalg.norm(ref))
    assert min(tilt) > 1e-7          # the pole matters: J2 along the wrong axis is visibly off
