"""Lift-off velocity and surface curvature (seed 004 chapter 3, eqs 3.15–3.73; :mod:`scenes.analysis.liftoff`).

References, all independent of the code under test:

* the seed's printed Ceres numbers (eqs 3.72–3.73) and its closed-form limits (non-rotating sphere
  V = sqrt(g R); plane eq 3.28 as the κ → 0 limit; ridge eq 3.23 and reduced eq 3.25; eq 3.24's
  sqrt(R/ρ) ratio; concave eqs 3.31–3.32);
* free flight from the surface integrated with scipy's DOP853 in the rotating frame (eq 3.29)
  and the second time-derivative of the ellipsoid's implicit function along it — no curvature,
  shape operator or lift-off formula involved;
* closed-form ellipsoid curvature (tips a/b², a/c²; H and K anywhere) and torus curvature;
* trimesh's angle defects and surface area for the discrete (Meyer et al.) curvature.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import trimesh
from scipy.integrate import solve_ivp

from components.terrain import sdf_ellipsoid, sdf_sphere, sdf_torus
from ecs.errors import InputError
from scenes.analysis import liftoff as lo
from scenes.assets.sdf_build import grid_from_shape

# Ceres as printed in seed 004 §3.3.1
CERES_RADIUS = 473e3  # [m]
CERES_G = -0.29  # [m/s²], normal component
CERES_OMEGA = 1.923e-4  # [rad/s]

# the seed's simulation body (§3.3.1, §3.3.2): 200 m sphere / 200x100x50 ellipsoid, μ = 2.5, Ω = 1.5e-4
SIM_MU = 2.5
SIM_OMEGA = 1.5e-4


def _sphere_S(n: np.ndarray, radius: float) -> np.ndarray:
    return (np.eye(3) - n[..., :, None] * n[..., None, :]) / radius


def _rotating_rhs(mu: float, omega: np.ndarray):
    """Free flight in the rotating frame, eq 3.29: r̈ = a_E - Ω×(Ω×r) - 2Ω×ṙ, point-mass a_E."""

    def rhs(t, y):
        r, v = y[:3], y[3:]
        a = -mu * r / np.linalg.norm(r) ** 3 - np.cross(omega, np.cross(omega, r)) - 2.0 * np.cross(omega, v)
        return np.concatenate([v, a])

    return rhs


# ==================================================================================================
# the formulas
# ==================================================================================================


def test_ceres_equator_and_poles_match_seed():
    """Eqs 3.72–3.73: +279 / −461 m/s at the equator (east / west), ±370 m/s at the poles."""
    # The seed prints whole m/s; its own inputs give 279.41, -461.32 and 370.36 m/s, so the printed
    # values are reproduced to their rounding: |computed - printed| <= 0.5 m/s.
    tol = 0.5
    om = np.array([0.0, 0.0, CERES_OMEGA])
    east_eq = np.array([0.0, 1.0, 0.0])  # Ω × P at P on +x
    for n, d, expect_plus, expect_minus in (
        (np.array([1.0, 0.0, 0.0]), east_eq, 279.0, -461.0),  # equator, east (prograde)
        (np.array([1.0, 0.0, 0.0]), -east_eq, 461.0, -279.0),  # equator, west (retrograde)
        (np.array([0.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0]), 370.0, -370.0),  # north pole
        (np.array([0.0, 0.0, -1.0]), np.array([0.3, 0.7, 0.0]), 370.0, -370.0),  # south pole
    ):
        vp, vm = lo.liftoff_velocity_curved(normal=n, direction=d, omega=om, position=CERES_RADIUS * n,
                                            accel_external=CERES_G * n, shape_operator=_sphere_S(n, CERES_RADIUS))
        assert abs(vp - expect_plus) <= tol and abs(vm - expect_minus) <= tol
    # eq 3.71 in latitude/azimuth form, g = -μ/ρ²
    mu = -CERES_G * CERES_RADIUS**2
    vp, vm = lo.sphere_liftoff_speed(radius=CERES_RADIUS, mu=mu, omega=CERES_OMEGA,
                                     latitude=np.array([0.0, 0.0, np.pi / 2, -np.pi / 2]),
                                     azimuth=np.array([0.0, np.pi, 0.0, 1.0]))
    np.testing.assert_allclose(vp, [279.0, 461.0, 370.0, 370.0], atol=tol)
    np.testing.assert_allclose(vm, [-461.0, -279.0, -370.0, -370.0], atol=tol)
    # the seed's remark: both equatorial speeds correspond to the inertial circular speed sqrt(μ/ρ)
    v_circ = math.sqrt(mu / CERES_RADIUS)
    assert vp[0] + CERES_RADIUS * CERES_OMEGA == pytest.approx(v_circ, rel=1e-12)
    assert -vm[0] - CERES_RADIUS * CERES_OMEGA == pytest.approx(v_circ, rel=1e-12)


def test_ceres_through_liftoff_map_on_an_analytic_sphere():
    """The map (SDF curvature, compass directions) reproduces eqs 3.72–3.73 and finds η = 0 / 180° extrema."""
    pts = CERES_RADIUS * np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])

    def gravity(p):  # the seed's normal component only
        return CERES_G * p / np.linalg.norm(p, axis=1, keepdims=True)

    m = lo.liftoff_map(sdf_sphere(CERES_RADIUS), gravity=gravity, omega=[0.0, 0.0, CERES_OMEGA], points=pts)
    # curvature by finite differences of exact gradients (relative error ~1e-8) -> printed rounding
    assert m.along("east")[0] == pytest.approx(279.0, abs=0.5)
    assert m.along("west")[0] == pytest.approx(461.0, abs=0.5)
    # η = 90° (north) at the equator, eq 3.71: sqrt(-ρ²Ω² - ρg) = 359.02 m/s, no Coriolis split
    v_north = math.sqrt(-(CERES_RADIUS * CERES_OMEGA) ** 2 - CERES_RADIUS * CERES_G)
    assert m.along("north")[0] == pytest.approx(v_north, rel=1e-7)
    assert m.along("south")[0] == pytest.approx(v_north, rel=1e-7)
    np.testing.assert_allclose(m.speed[1], 370.0, atol=0.5)
    # east at (0, -ρ, 0) is Ω × P = +x
    np.testing.assert_allclose(m.directions[2, 0], [1.0, 0.0, 0.0], atol=1e-12)
    assert m.speed_min[0] == m.along("east")[0] and m.speed_max[0] == m.along("west")[0]


def test_nonrotating_sphere_gives_circular_speed():
    """Ω = 0: V = ±sqrt(-g R) = ±sqrt(μ/R) in every direction (eq 3.71)."""
    r, mu = 200.0, SIM_MU
    rng = np.random.default_rng(3)
    n = rng.normal(size=(20, 3))
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    d = rng.normal(size=(20, 3))
    vp, vm = lo.sphere_liftoff_velocity(radius=r, mu=mu, omega=[0.0, 0.0, 0.0], position=r * n, direction=d)
    # same closed form evaluated in another operation order: a few ulps
    np.testing.assert_allclose(vp, math.sqrt(mu / r), rtol=1e-13)
    np.testing.assert_allclose(vm, -math.sqrt(mu / r), rtol=1e-13)


def test_sphere_vector_and_angle_forms_agree_on_a_tilted_axis():
    """eq 3.22 with vectors for any Ω axis equals eq 3.71 in the frame of that axis."""
    r, w = 200.0, SIM_OMEGA
    axis = np.array([0.3, -0.2, 0.93])
    axis /= np.linalg.norm(axis)
    # build east/north/up for latitude φ, longitude λ about the tilted axis
    e1 = np.cross(axis, [1.0, 0.0, 0.0])
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(axis, e1)
    for phi, lam, eta in ((0.3, 1.0, 0.7), (-1.1, 2.5, 2.9), (0.0, 0.0, 0.0), (1.4, -0.4, 4.0)):
        up = math.cos(phi) * (math.cos(lam) * e1 + math.sin(lam) * e2) + math.sin(phi) * axis
        east = np.cross(axis, up)
        east /= np.linalg.norm(east)
        north = np.cross(up, east)
        d = math.cos(eta) * east + math.sin(eta) * north
        v_vec = lo.sphere_liftoff_velocity(radius=r, mu=SIM_MU, omega=w * axis, position=r * up, direction=d)
        v_ang = lo.sphere_liftoff_speed(radius=r, mu=SIM_MU, omega=w, latitude=phi, azimuth=eta)
        np.testing.assert_allclose(v_vec, v_ang, rtol=1e-12)


def test_curved_to_plane_limit():
    """κ → 0 of eq 3.22 recovers eq 3.28; κ = 0 is eq 3.28 exactly, with no root against the rotation."""
    n = np.array([0.0, 0.0, 1.0])
    p = np.array([0.0, 0.0, 300.0])
    om = SIM_OMEGA * np.array([0.0, 0.6, 0.8])
    ae = np.array([1e-6, 0.0, -SIM_MU / 300.0**2])
    east = np.array([-1.0, 0.0, 0.0])  # N × east = (0, -1, 0)... pick both signs below
    v_plane = lo.liftoff_velocity_plane(normal=n, direction=east, omega=om, position=p, accel_external=ae)
    c = float(n @ (np.cross(om, np.cross(om, p)) - ae))
    w = float(om @ np.cross(n, east))
    assert v_plane == pytest.approx(c / (2.0 * w), rel=1e-15)
    assert v_plane < 0.0  # this direction moves against the surface rotation: lift-off only backwards
    for kappa in (1e-10, 1e-13):
        vp, vm = lo.liftoff_velocity_curved(normal=n, direction=east, omega=om, position=p, accel_external=ae,
                                            shape_operator=kappa * _sphere_S(n, 1.0))
        # expansion of c/(w - sqrt(w² + κc)) about κ = 0: relative deviation κ c / (4 w²)
        assert vm == pytest.approx(v_plane, rel=2.0 * kappa * c / (4.0 * w * w) + 1e-12)
        # the other root runs off to -2w/κ: huge, opposite side
        assert vp > 1e3 * abs(v_plane)
    vp, vm = lo.liftoff_velocity_curved(normal=n, direction=east, omega=om, position=p, accel_external=ae,
                                        shape_operator=np.zeros((3, 3)))
    assert np.isnan(vp) and vm == pytest.approx(v_plane, rel=1e-15)
    # direction normal to Ω's tangential part: Coriolis has no normal component -> no lift-off (eq 3.28)
    d_perp = np.cross(n, np.cross(om, n))
    assert np.isnan(lo.liftoff_velocity_plane(normal=n, direction=d_perp, omega=om, position=p, accel_external=ae))


def test_ridge_formulas_limits():
    """Eq 3.23 is eq 3.15 with ρ* = R, b̂_ρ = N; non-rotating it is eq 3.25; eq 3.24's sqrt(R/ρ) ratio."""
    n = np.array([0.0, 0.6, 0.8])
    p = 150.0 * n + np.array([5.0, -3.0, 2.0])
    om = np.array([0.0, 0.0, 1.44e-4])  # Itokawa-like rate, 12.1 h
    ae = -2.341 * p / np.linalg.norm(p) ** 3
    d = np.cross(n, [1.0, 0.0, 0.0])
    for radius in (0.1, 1.0):
        v_ridge = lo.liftoff_velocity_ridge(object_radius=radius, normal=n, omega=om, position=p, accel_external=ae,
                                            direction=d)
        vp, _ = lo.liftoff_velocity_general(radius_of_curvature=radius, b_rho=n, b_theta=d / np.linalg.norm(d),
                                            omega=om, position=p, accel_external=ae)
        assert v_ridge == pytest.approx(vp, rel=1e-14)
        reduced = lo.liftoff_velocity_ridge(object_radius=radius, normal=n, accel_external=ae, reduced=True)
        assert reduced == pytest.approx(math.sqrt(-radius * float(n @ ae)), rel=1e-15)
        # Fig 3.5: full and reduced "highly similar" for R < 1 m; here rotation terms are
        # R|Ω_s| ≈ 1e-4 m/s and a 4 % centrifugal load on a ~7 mm/s speed: within 5 %.
        assert v_ridge == pytest.approx(reduced, rel=0.05)
        v0 = lo.liftoff_velocity_ridge(object_radius=radius, normal=n, omega=np.zeros(3), position=p,
                                       accel_external=ae, direction=d)
        assert v0 == pytest.approx(reduced, rel=1e-14)
    # eq 3.24 on a non-rotating sphere of radius ρ: V_R / V_ρ = sqrt(R/ρ) exactly
    rho, radius = 200.0, 0.5
    nn = np.array([1.0, 0.0, 0.0])
    g = -SIM_MU / rho**2 * nn
    v_curved, _ = lo.liftoff_velocity_curved(normal=nn, direction=[0, 1, 0], omega=np.zeros(3), position=rho * nn,
                                             accel_external=g, shape_operator=_sphere_S(nn, rho))
    v_r = lo.liftoff_velocity_ridge(object_radius=radius, normal=nn, accel_external=g, reduced=True)
    assert v_r / v_curved == pytest.approx(math.sqrt(radius / rho), rel=1e-14)


def test_concave_window_and_limits():
    """Eq 3.30 roots zero the normal force; window closes at ρ_min (3.31) with V of 3.32; ρ → ∞ gives 3.28."""
    n = np.array([0.0, 0.0, 1.0])
    p = np.array([0.0, -50.0, 250.0])
    om = 4e-4 * np.array([0.0, 0.6, 0.8])  # tilted from N so that Ω_s = Ω·(N × b̂_θ) ≠ 0
    ae = -SIM_MU * p / np.linalg.norm(p) ** 3
    d = np.array([1.0, 0.0, 0.0])  # N × d = +y: Ω_s = 2.4e-4 rad/s > 0
    kw = dict(normal=n, direction=d, omega=om, position=p, accel_external=ae)
    w = float(om @ np.cross(n, d))
    c = float(n @ (np.cross(om, np.cross(om, p)) - ae))
    rho_min = lo.concave_min_radius(**kw)
    assert rho_min == pytest.approx(c / w**2, rel=1e-15)
    v_lim = lo.concave_limit_velocity(**kw)
    assert v_lim == pytest.approx(c / w, rel=1e-15)
    for rho in (1.5 * rho_min, 10.0 * rho_min):
        near, far = lo.liftoff_window_concave(radius_of_curvature=rho, **kw)
        # required normal acceleration (eq 3.11 dotted with N) on the concave section: c - 2wV + V²/ρ
        for v in (near, far):
            assert c - 2.0 * w * v + v * v / rho == pytest.approx(0.0, abs=1e-12 * c)
        assert 0.0 < near < v_lim < far  # the window brackets eq 3.32's velocity
        # mid-window: the normal force would have to pull -> lift-off; outside: contact
        mid = 0.5 * (near + far)
        assert c - 2.0 * w * mid + mid * mid / rho < 0.0
        vp, vm = lo.liftoff_velocity_curved(**kw, shape_operator=-_sphere_S(n, rho))
        assert vp == pytest.approx(near, rel=1e-14) and np.isnan(vm)  # only along sign(Ω_s)
    near, far = lo.liftoff_window_concave(radius_of_curvature=rho_min * (1.0 + 1e-10), **kw)
    assert near == pytest.approx(v_lim, rel=1e-4) and far == pytest.approx(v_lim, rel=1e-4)  # ~sqrt(1e-10)
    near, far = lo.liftoff_window_concave(radius_of_curvature=0.9 * rho_min, **kw)
    assert np.isnan(near) and np.isnan(far)
    near, _ = lo.liftoff_window_concave(radius_of_curvature=1e9 * rho_min, **kw)
    v_plane = lo.liftoff_velocity_plane(**kw)
    assert near == pytest.approx(v_plane, rel=1e-8)  # relative deviation c/(4 w² ρ) = 2.5e-10


def test_curved_formula_matches_free_flight_on_rotating_ellipsoid():
    """Eq 3.22 (normal section) against free flight from an ellipsoid's surface, tilted Ω, oblique direction.

    Reference 1: the velocity at which d²F/dt² = 0 along the free-flight path, F = Σ x_i²/a_i² - 1
    (F = Ḟ = 0 at launch, so F̈ > 0 means the free path leaves the surface: no normal force needed).
    Reference 2: trajectories integrated with DOP853 at 0.99 and 1.01 V_θ end inside / outside.
    """
    axes = np.array([200.0, 100.0, 50.0])
    u = np.array([0.5, 0.6, 0.62])
    p0 = u / np.sqrt(np.sum(u**2 / axes**2))  # on the surface
    om = SIM_OMEGA * np.array([0.2, -0.1, 1.0]) / np.linalg.norm([0.2, -0.1, 1.0])
    mu = SIM_MU

    def F(r):
        return float(np.sum(r**2 / axes**2) - 1.0)

    grad = 2.0 * p0 / axes**2
    hessF = np.diag(2.0 / axes**2)
    n = grad / np.linalg.norm(grad)
    t = np.cross(n, [0.3, 1.0, -0.2])
    t /= np.linalg.norm(t)
    ae = -mu * p0 / np.linalg.norm(p0) ** 3
    curv = lo.sdf_curvature(sdf_ellipsoid(axes), p0[None])
    vp, vm = lo.liftoff_velocity_curved(normal=curv.normals[0], direction=t, omega=om, position=p0, accel_external=ae,
                                        shape_operator=curv.shape_operator[0])
    # F̈(V) = ∇F·(a_E - Ω×(Ω×r) - 2V Ω×t) + V² tᵀ∇∇F t: a quadratic in V
    a2 = t @ hessF @ t
    a1 = -2.0 * grad @ np.cross(om, t)
    a0 = grad @ (ae - np.cross(om, np.cross(om, p0)))
    roots = np.sort(np.roots([a2, a1, a0]).real)
    # shape operator from central differences of exact gradients: ~1e-8 relative
    assert vp == pytest.approx(roots[1], rel=1e-7)
    assert vm == pytest.approx(roots[0], rel=1e-7)
    assert abs(vp) != pytest.approx(abs(vm), rel=0.01)  # the Coriolis term does split them
    rhs = _rotating_rhs(mu, om)
    kappa = float(t @ curv.shape_operator[0] @ t)
    for v0 in (vp, vm):
        # fly 0.1 % of the radius of curvature: the cubic term of F(t) is then ~10x below the
        # quadratic one at a 1 % speed offset
        t_end = 1e-3 / (kappa * abs(v0))
        ends = []
        for f in (0.99, 1.01):
            sol = solve_ivp(rhs, (0.0, t_end), np.concatenate([p0, f * v0 * t]), method="DOP853",
                            rtol=1e-13, atol=1e-12)
            ends.append(F(sol.y[:3, -1]))
        assert ends[0] < 0.0 < ends[1]


def test_sphere_particles_dip_track_and_climb():
    """Seed Fig 3.15 set-up (200 m sphere, μ = 2.5, Ω = 1.5e-4): 0.9 / 1.0 / 1.1 V_θ by DOP853."""
    r, om = 200.0, np.array([0.0, 0.0, SIM_OMEGA])
    phi, eta = 0.5, 0.8
    up = np.array([math.cos(phi), 0.0, math.sin(phi)])
    east = np.array([0.0, 1.0, 0.0])
    d = math.cos(eta) * east + math.sin(eta) * np.cross(up, east)
    vp, vm = lo.sphere_liftoff_velocity(radius=r, mu=SIM_MU, omega=om, position=r * up, direction=d)
    rhs = _rotating_rhs(SIM_MU, om)
    for v0 in (vp, vm):
        t_end = 0.2 * r / abs(v0)  # 0.2 rad of arc (40 m)
        alt = {}
        for f in (0.9, 1.0, 1.1):
            sol = solve_ivp(rhs, (0.0, t_end), np.concatenate([r * up, f * v0 * d]), method="DOP853",
                            rtol=1e-12, atol=1e-10)
            alt[f] = np.linalg.norm(sol.y[:3, -1]) - r
        assert alt[0.9] < 0.0 < alt[1.1]
        # 1.0 tracks the surface: its residual drift (third order in the arc) is far below
        # the ±10 % cases' second-order departure
        assert abs(alt[1.0]) < 0.05 * min(-alt[0.9], alt[1.1])


# ==================================================================================================
# curvature
# ==================================================================================================


def test_sdf_curvature_sphere_analytic_and_grid():
    """1/R from the analytic SDF and from an SDF grid."""
    R = 500.0
    rng = np.random.default_rng(0)
    u = rng.normal(size=(200, 3))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    pts = u * (R + rng.uniform(-20.0, 20.0, size=(200, 1)))  # off the surface: projected first
    c = lo.sdf_curvature(sdf_sphere(R), pts)
    # step 1e-5 |p|: truncation ~(1e-5)², round-off ~1e-16/1e-5: both far below 1e-7
    np.testing.assert_allclose(c.k_max * R, 1.0, atol=1e-7)
    np.testing.assert_allclose(c.k_min * R, 1.0, atol=1e-7)
    np.testing.assert_allclose(np.linalg.norm(c.points, axis=1), R, atol=1e-6)
    np.testing.assert_allclose(np.sum(c.normals * u, axis=1), 1.0, atol=1e-12)
    grid = grid_from_shape(sdf_sphere(R), lower=(-550.0,) * 3, upper=(550.0,) * 3, resolution=64)
    h = float(grid.spacing[0])
    cg = lo.sdf_curvature(grid, pts)
    # second-order node differences: error O((h/R)²) = 1.2e-3 here (measured 5e-4)
    tol = (h / R) ** 2
    np.testing.assert_allclose(cg.k_max * R, 1.0, atol=tol)
    np.testing.assert_allclose(cg.k_min * R, 1.0, atol=tol)
    # without projection: the level set through the point, curvature 1/(R + d)
    pt = np.array([[0.0, 0.0, 520.0]])
    c_off = lo.sdf_curvature(sdf_sphere(R), pt, project=False)
    assert c_off.k_max[0] == pytest.approx(1.0 / 520.0, rel=1e-7)


def test_sdf_curvature_ellipsoid_tips_and_anywhere():
    """Principal curvatures at the tips (a/b², a/c², …) and H, K anywhere (closed forms)."""
    a, b, c = 200.0, 120.0, 80.0
    shape = sdf_ellipsoid((a, b, c))
    tips = np.array([[a, 0, 0], [0, -b, 0], [0, 0, c]], float)
    k = lo.sdf_curvature(shape, tips)
    np.testing.assert_allclose(k.k_max, [a / c**2, b / c**2, c / b**2], rtol=1e-7)
    np.testing.assert_allclose(k.k_min, [a / b**2, b / a**2, c / a**2], rtol=1e-7)
    np.testing.assert_allclose(np.abs(k.dir_max), [[0, 0, 1], [0, 0, 1], [0, 1, 0]], atol=1e-6)
    np.testing.assert_allclose(np.abs(k.dir_min), [[0, 1, 0], [1, 0, 0], [1, 0, 0]], atol=1e-6)

    def closed(p):
        x, y, z = p.T
        s = x**2 / a**4 + y**2 / b**4 + z**2 / c**4
        return (a * a + b * b + c * c - x * x - y * y - z * z) / (2.0 * (a * b * c) ** 2 * s**1.5), \
            1.0 / ((a * b * c) ** 2 * s**2)

    rng = np.random.default_rng(1)
    u = rng.normal(size=(300, 3))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    k = lo.sdf_curvature(shape, u * [a, b, c])
    H, K = closed(k.points)
    np.testing.assert_allclose(k.mean, H, rtol=1e-7)
    np.testing.assert_allclose(k.gaussian, K, rtol=1e-7)
    # Euler's theorem (eq 3.35) along the principal directions returns the principal curvatures
    np.testing.assert_allclose(k.normal_curvature(k.dir_max), k.k_max, rtol=1e-12)
    grid = grid_from_shape(shape, lower=(-1.1 * a, -1.1 * b - 10, -1.1 * c - 10),
                           upper=(1.1 * a, 1.1 * b + 10, 1.1 * c + 10), spacing=2.2 * a / 128)
    kg = lo.sdf_curvature(grid, u * [a, b, c])
    H, K = closed(kg.points)
    # O((h/ρ_min)²) with the smallest radius of curvature ρ_min = c²/a = 32 m, h = 3.4 m: 1.2e-2
    tol = 2.0 * (float(grid.spacing[0]) / (c * c / a)) ** 2
    np.testing.assert_allclose(kg.mean, H, rtol=tol)
    np.testing.assert_allclose(kg.gaussian, K, rtol=tol)


def test_sdf_curvature_torus_saddle_sign():
    """Inner equator of a torus: convex across the tube (1/r), concave along the ring (-1/(R - r))."""
    R, r = 300.0, 100.0
    k = lo.sdf_curvature(sdf_torus(R, r), np.array([[R - r, 0.0, 0.0], [R + r, 0.0, 0.0]]))
    np.testing.assert_allclose([k.k_max[0], k.k_min[0]], [1.0 / r, -1.0 / (R - r)], rtol=1e-7)
    np.testing.assert_allclose([k.k_max[1], k.k_min[1]], [1.0 / r, 1.0 / (R + r)], rtol=1e-7)
    # lift-off on the saddle: possible across the tube, not along the concave ring (Ω tiny).
    # Gravity presses the inner equator's surface (normal -x) inwards: +x.
    m = lo.liftoff_map(sdf_torus(R, r), gravity=[1e-4, 0.0, 0.0], omega=[0.0, 0.0, 1e-7],
                       points=[[R - r, 0.0, 0.0]], directions=8)
    assert np.isfinite(m.speed_min[0]) and m.speed_max[0] == np.inf


def test_mesh_curvature_sphere_converges():
    """Meyer et al. on icospheres: H and K → 1/R, 1/R² as the mesh is refined (eqs 3.59–3.64)."""
    R = 2.0
    errs = []
    for sub in (3, 4, 5):
        m = trimesh.creation.icosphere(subdivisions=sub, radius=R)
        c = lo.mesh_curvature(m.vertices, m.faces)
        # independent: trimesh's angle defects (eq 3.61's numerator) and the mixed areas tile the surface
        np.testing.assert_allclose(c.gaussian * c.area, m.vertex_defects, atol=1e-12)
        assert c.area.sum() == pytest.approx(m.area, rel=1e-12)
        np.testing.assert_allclose(np.sum(c.normals * m.vertices, axis=1) / R, 1.0, atol=1e-3)
        errs.append((np.abs(c.mean * R - 1.0).max(), np.abs(c.gaussian * R * R - 1.0).max(),
                     np.abs(c.k_min * R - 1.0).max()))
    errs = np.array(errs)
    # second order in the edge length (halved per subdivision): each error drops by ~4x
    assert np.all(errs[1:] < 0.3 * errs[:-1])
    # at 10,242 vertices (edge ≈ 0.019 R) the measured errors are 1.9e-6 (H) and 3.6e-4 (K), K's
    # being O(h²) ≈ 3.5e-4. Eq 3.64 can amplify an error ε in K to sqrt(ε) in κ±; here K ≥ H² at
    # every vertex, so κ± = H (measured 1.9e-6) and 1e-5 holds with margin
    assert errs[-1, 0] < 1e-5 and errs[-1, 1] < 1e-3 and errs[-1, 2] < 1e-5


def test_mesh_curvature_ellipsoid_directions_and_median_convergence():
    """Stretched icospheres: principal directions at the tips, median H and K error O(h²).

    The cotangent operator converges only on regular neighbourhoods (G. Xu, CAGD 2004); the stretched
    valence-5 vertices keep a fixed ~7 % error, so the pointwise maximum is not asserted.
    """
    a, b, c = 200.0, 120.0, 80.0
    med = []
    for sub in (4, 5):
        m = trimesh.creation.icosphere(subdivisions=sub)
        v = m.vertices * [a, b, c]
        k = lo.mesh_curvature(v, m.faces)
        x, y, z = v.T
        s = x**2 / a**4 + y**2 / b**4 + z**2 / c**4
        H = (a * a + b * b + c * c - x * x - y * y - z * z) / (2.0 * (a * b * c) ** 2 * s**1.5)
        K = 1.0 / ((a * b * c) ** 2 * s**2)
        med.append((np.median(np.abs(k.mean / H - 1)), np.median(np.abs(k.gaussian / K - 1))))
        tip = int(np.argmax(v[:, 0]))
        assert abs(k.dir_max[tip, 2]) == pytest.approx(1.0, abs=1e-9)  # κ⁺ = a/c² about z
        assert abs(k.dir_min[tip, 1]) == pytest.approx(1.0, abs=1e-9)  # κ⁻ = a/b² about y
    med = np.array(med)
    assert np.all(med[1] < 0.35 * med[0])  # measured ratio 0.24-0.27
    assert np.all(med[1] < 1e-3)


def test_mesh_curvature_torus_signs_and_convergence():
    """A fat torus (R = 150, r = 100 m): negative H and a saddle on the inner side; O(h²) everywhere.

    Closed forms at tube angle v (cos v = (ρ_xy - R)/r): κ_tube = 1/r, κ_ring = cos v/(R + r cos v).
    """
    R, r = 150.0, 100.0
    errs = []
    for major, minor in ((64, 32), (128, 64)):
        m = trimesh.creation.torus(major_radius=R, minor_radius=r, major_sections=major, minor_sections=minor)
        k = lo.mesh_curvature(m.vertices, m.faces)
        rho = np.hypot(m.vertices[:, 0], m.vertices[:, 1])
        cosv = (rho - R) / r
        H = 0.5 * (1.0 / r + cosv / (R + r * cosv))
        K = cosv / (r * (R + r * cosv))
        errs.append((np.abs(k.mean - H).max() * r, np.abs(k.gaussian - K).max() * r * r))
    inner = int(np.argmin(rho))
    # inner equator: κ_ring = -1/(R - r) = -0.02, κ_tube = +0.01: H = -0.005 < 0 (eq 3.63 as printed,
    # H = |H|/2, would report +0.005), a saddle with κ⁻ along the ring
    assert k.mean[inner] == pytest.approx(-0.005, rel=0.01)
    assert k.k_min[inner] == pytest.approx(-1.0 / (R - r), rel=0.01)
    assert k.k_max[inner] == pytest.approx(1.0 / r, rel=0.01)
    ring = np.array([-m.vertices[inner, 1], m.vertices[inner, 0], 0.0]) / rho[inner]
    assert abs(k.dir_min[inner] @ ring) == pytest.approx(1.0, abs=1e-4)
    errs = np.array(errs)
    # halving the edge length divides the worst error by ~4 (measured 3.96, 3.96); at 128 x 64
    # (edge ≈ 0.05 r) the measured worst errors are 3.3e-3 (H r) and 5.0e-3 (K r²)
    assert np.all(errs[1] < 0.3 * errs[0]) and errs[1, 0] < 5e-3 and errs[1, 1] < 7e-3
    # mesh path of the map: on the saddle some directions lift off, the ring directions never do
    mp = lo.liftoff_map((m.vertices, m.faces), gravity=-1e-4 * k.normals[inner], omega=[0.0, 0.0, 1e-7],
                        points=m.vertices[inner], directions=8)
    assert np.isfinite(mp.speed_min[0]) and mp.speed_max[0] == np.inf


def test_liftoff_map_mesh_and_sdf_agree_on_rotating_sphere():
    """Mesh (Meyer) and SDF paths give eq 3.71's extrema at η = 0° / 180° (§3.3.1, Fig 3.17)."""
    R, om = 200.0, np.array([0.0, 0.0, SIM_OMEGA])
    mesh = trimesh.creation.icosphere(subdivisions=4, radius=R)

    def gravity(p):
        return -SIM_MU * p / np.linalg.norm(p, axis=1, keepdims=True) ** 3

    pts = mesh.vertices[[0, 5, 100, 700]]
    pts = pts[np.abs(pts[:, 2]) < 0.95 * R]  # not at a pole (east undefined)
    lat = np.arcsin(pts[:, 2] / np.linalg.norm(pts, axis=1))
    v_east, v_west = lo.sphere_liftoff_speed(radius=R, mu=SIM_MU, omega=SIM_OMEGA, latitude=lat, azimuth=0.0)
    m_sdf = lo.liftoff_map(sdf_sphere(R), gravity=gravity, omega=om, points=pts, directions=36)
    np.testing.assert_allclose(m_sdf.speed_min, v_east, rtol=1e-7)
    np.testing.assert_allclose(m_sdf.speed_max, -v_west, rtol=1e-7)
    east, _ = lo.compass_directions(normals=m_sdf.normals, points=m_sdf.points, omega=om)
    np.testing.assert_allclose(m_sdf.direction_min, east, atol=1e-12)
    np.testing.assert_allclose(m_sdf.direction_max, -east, atol=1e-12)
    m_mesh = lo.liftoff_map((mesh.vertices, mesh.faces), gravity=gravity, omega=om, points=pts, directions=36)
    # Meyer at 2,562 vertices: H within 1e-5, K within 1.5e-3; V ∝ sqrt(ρ) to leading order and the
    # normal is the vertex's angle-weighted normal: 1e-3 covers both
    np.testing.assert_allclose(m_mesh.speed_min, v_east, rtol=1e-3)
    np.testing.assert_allclose(m_mesh.speed_max, -v_west, rtol=1e-3)


def test_departure_planes_agree_when_acceleration_is_normal():
    """'external' / 'effective' (Meusnier, eq 3.36) equal 'normal' where a_E (+ centrifugal) ∥ N."""
    R, om = 200.0, np.array([0.0, 0.0, SIM_OMEGA])
    n = np.array([0.6, 0.0, 0.8])
    d = np.array([0.3, 1.0, -0.2])
    S = _sphere_S(n, R)
    args = dict(normal=n, direction=d, omega=om, position=R * n, accel_external=-SIM_MU / R**2 * n,
                shape_operator=S)
    v_n = lo.liftoff_velocity_curved(**args, departure_plane="normal")
    v_x = lo.liftoff_velocity_curved(**args, departure_plane="external")
    np.testing.assert_allclose(v_x, v_n, rtol=1e-13)
    # effective: tilted by the centrifugal term (Ω²ρ cos φ / g ≈ 1.6e-3 rad) -> differs at that order
    v_e = lo.liftoff_velocity_curved(**args, departure_plane="effective")
    np.testing.assert_allclose(v_e, v_n, rtol=1e-2)


# ==================================================================================================
# interface
# ==================================================================================================


def test_bad_inputs_raise_input_error():
    n = np.array([0.0, 0.0, 1.0])
    args = dict(normal=n, direction=[1.0, 0, 0], omega=[0, 0, 1e-4], position=[0, 0, 100.0],
                accel_external=[0, 0, -1e-4], shape_operator=np.eye(3) / 100.0)
    with pytest.raises(InputError, match="departure_plane"):
        lo.liftoff_velocity_curved(**args, departure_plane="sideways")
    with pytest.raises(InputError, match="b_theta"):
        lo.liftoff_velocity_general(radius_of_curvature=100.0, b_rho=n, b_theta=[0.0, 0.5, 1.0], omega=[0, 0, 1e-4],
                                    position=[0, 0, 100.0], accel_external=[0, 0, -1e-4])
    with pytest.raises(InputError, match="omega"):
        lo.liftoff_velocity_curved(**{**args, "omega": [0.0, np.nan, 0.0]})
    with pytest.raises(InputError, match="points"):
        lo.liftoff_map(sdf_sphere(10.0), gravity=[0, 0, -1.0], omega=[0, 0, 0])
    m = trimesh.creation.icosphere(subdivisions=1)
    with pytest.raises(InputError, match="mesh is open"):
        lo.mesh_curvature(m.vertices, m.faces[:-1])
    with pytest.raises(InputError, match="object_radius"):
        lo.liftoff_velocity_ridge(object_radius=0.0, normal=n, accel_external=[0, 0, -1.0], reduced=True)
    # documented NaN: the particle at rest already lifts off (centrifugal beats gravity)
    vp, vm = lo.sphere_liftoff_speed(radius=1000.0, mu=1.0, omega=1e-3)
    assert np.isnan(vp) and np.isnan(vm)
