"""Facet contact geometry and force law (seed 000 §3.2, §3.4.3, §3.4.8) against independent references.

* closest points of two segments: scipy's bounded minimiser of the (convex, quadratic) squared
  distance; the naive "clamp s and t independently" variant is shown to fail the same check;
* capsule contact: hand-derived configurations;
* ellipsoid distance: scipy minimiser over the surface parametrisation;
* spring force: eq. 3.1 written out for each mode and friction model.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from scipy.optimize import minimize

from components.contact import (FrictionModel, GroundKind, PairInteractions, SpringInteraction, SpringMode,
                                UserInteraction, line_facet, material_id, point_facet)
from ecs import InputError
from systems.facets.contact import spring_force
from systems.facets.geometry import (capsule_contact, closest_segment_params, ellipsoid_distance_local,
                                    ground_distance, ground_lowest_param)

_csp = closest_segment_params.cpu


def _ref_distance(p1, d1, p2, d2):
    """min over s, t in [0, 1] of |P1 + s D1 − P2 − t D2| with scipy (several starts; convex problem)."""
    f = lambda st: float(np.sum((p1 + st[0] * d1 - p2 - st[1] * d2) ** 2))  # noqa: E731
    g = lambda st: np.array([2 * np.dot(p1 + st[0] * d1 - p2 - st[1] * d2, d1),  # noqa: E731
                             -2 * np.dot(p1 + st[0] * d1 - p2 - st[1] * d2, d2)])
    best = min((minimize(f, x0, jac=g, bounds=[(0, 1), (0, 1)], method="L-BFGS-B",
                         options={"ftol": 1e-16, "gtol": 1e-14})
                for x0 in ([0.5, 0.5], [0, 0], [1, 1], [0, 1], [1, 0])), key=lambda o: o.fun)
    return math.sqrt(max(best.fun, 0.0))


def _ours(p1, d1, p2, d2):
    s, t = _csp(*p1, *d1, *p2, *d2)
    assert 0.0 <= s <= 1.0 and 0.0 <= t <= 1.0
    return float(np.linalg.norm(p1 + s * d1 - p2 - t * d2))


def _naive(p1, d1, p2, d2):
    """Clamp the unconstrained minimiser's s and t independently (the classic bug)."""
    r = p1 - p2
    a, b, c, e, f = d1 @ d1, d1 @ d2, d1 @ r, d2 @ d2, d2 @ r
    den = a * e - b * b
    s = np.clip((b * f - c * e) / den, 0, 1)
    t = np.clip((a * f - b * c) / den, 0, 1)
    return float(np.linalg.norm(p1 + s * d1 - p2 - t * d2))


@functools.lru_cache(maxsize=None)
def _cases(n=100, seed=7):
    rng = np.random.default_rng(seed)
    out = [tuple(rng.normal(size=(4, 3)) * [[1], [1], [1], [1]]) for _ in range(n)]
    x = np.array([1.0, 0, 0])
    y = np.array([0, 1.0, 0])
    z = np.zeros(3)
    out += [
        (z, x, 0.5 * x, x),                  # collinear, overlapping
        (z, x, 3 * x, x),                    # collinear, disjoint
        (z, x, 2 * x + y, -x),               # parallel, reversed, offset
        (z, x, 0.25 * x + y, 0.5 * x),       # parallel, one inside the other's span
        (z, z, y, x),                        # point against segment
        (x, z, y, z),                        # point against point
        (z, 2 * x, x - y, 2 * y),            # crossing at the midpoints
        (z, x, x + y, y),                    # touching end points along a corner
        (z, x, 1e-9 * y, x * (1 + 1e-12)),   # nearly parallel
    ]
    cases = [tuple(np.asarray(v, float) for v in c) for c in out]
    return tuple((c, _ref_distance(*c)) for c in cases)


def test_closest_segment_points_match_scipy():
    worst = 0.0
    for (p1, d1, p2, d2), ref in _cases():
        ours = _ours(p1, d1, p2, d2)
        # ours is a true closest pair: never farther than the minimiser's optimum (L-BFGS-B on a convex
        # quadratic converges to ~1e-8 in distance), and equal to it within that precision
        assert ours <= ref + 1e-12
        worst = max(worst, ref - ours)
    assert worst < 1e-6


def test_naive_clamping_fails_the_same_check():
    """The check above has teeth: clamping s and t independently is wrong for some of the same cases."""
    bad = 0
    for (p1, d1, p2, d2), ref in _cases()[:100]:
        if abs(np.cross(d1, d2)).sum() < 1e-9:
            continue
        if _naive(p1, d1, p2, d2) > ref + 1e-6:
            bad += 1
    assert bad > 5


def test_capsule_contact_configurations():
    cc = capsule_contact.cpu
    u = np.array([1.0, 2.0, 2.0]) / 3.0
    z3 = (0.0, 0.0, 0.0)
    # two spheres of radius 1 at 1.5 m: x = 0.5 along u, point midway between the surface points
    x, nx, ny, nz, px, py, pz = cc(*z3, *z3, 1.0, *(1.5 * u), *z3, 1.0)
    assert x == pytest.approx(0.5, abs=1e-15) and np.allclose([nx, ny, nz], u, atol=1e-15)
    assert np.allclose([px, py, pz], 0.75 * u, atol=1e-15)
    # line (x axis, ±1, r 1) and point (0.3, 1.2, 0) of radius 0.5: x = 0.3, n = +y, surface points
    # (0.3, 1, 0) and (0.3, 0.7, 0): p = (0.3, 0.85, 0)
    x, nx, ny, nz, px, py, pz = cc(*z3, 1.0, 0.0, 0.0, 1.0, 0.3, 1.2, 0.0, *z3, 0.5)
    assert x == pytest.approx(0.3, abs=1e-15) and np.allclose([nx, ny, nz], [0, 1, 0])
    assert np.allclose([px, py, pz], [0.3, 0.85, 0.0], atol=1e-15)
    # beyond the cap: the point projects past the end, the cap's centre is the closest core point
    x, nx, ny, nz, *_ = cc(*z3, 1.0, 0.0, 0.0, 1.0, 1.6, 0.8, 0.0, *z3, 0.5)
    assert x == pytest.approx(1.5 - 1.0, abs=1e-12) and np.allclose([nx, ny, nz], [0.6, 0.8, 0.0])
    # crossing lines 1.5 apart in z, radii 1: x = 0.5, n = +z
    x, nx, ny, nz, *_ = cc(*z3, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.5, 0.0, 1.0, 0.0, 1.0)
    assert x == pytest.approx(0.5) and np.allclose([nx, ny, nz], [0, 0, 1])
    # separated: no contact
    assert cc(*z3, 1.0, 0.0, 0.0, 1.0, 0.0, 3.1, 0.0, *z3, 1.0)[0] < 0.0
    # coincident cores: a finite unit normal is still returned
    x, nx, ny, nz, *_ = cc(*z3, 1.0, 0.0, 0.0, 1.0, *z3, 1.0, 0.0, 0.0, 1.0)
    assert x == 2.0 and math.isclose(nx * nx + ny * ny + nz * nz, 1.0)


def test_ellipsoid_distance_matches_scipy():
    a, b, c = 3.0, 2.0, 1.0
    rng = np.random.default_rng(3)
    for _ in range(16):
        p = rng.normal(size=3)
        p = p / np.linalg.norm(p / [a, b, c]) * rng.uniform(0.7, 1.4)  # near the surface, in and out
        d, *n = ellipsoid_distance_local.cpu(*p, a, b, c)
        def surf(ang):
            return np.array([a * np.cos(ang[0]) * np.cos(ang[1]), b * np.sin(ang[0]) * np.cos(ang[1]),
                             c * np.sin(ang[1])])

        f = lambda ang: np.sum((surf(ang) - p) ** 2)  # noqa: E731
        starts = [[np.arctan2(p[1] / b, p[0] / a), np.arcsin(np.clip(p[2] / np.linalg.norm(p / [a, b, c]) / c, -1, 1))]]
        starts += [[u, v] for u in (-2.5, 0.5, 2) for v in (-1, 1)]
        ref = min((minimize(f, s, method="Nelder-Mead", options={"xatol": 1e-12, "fatol": 1e-16, "maxiter": 4000})
                   for s in starts), key=lambda o: o.fun)
        inside = np.sum((p / [a, b, c]) ** 2) < 1
        assert d == pytest.approx(-math.sqrt(ref.fun) if inside else math.sqrt(ref.fun), abs=1e-7)
        assert np.linalg.norm(n) == pytest.approx(1.0)


def test_ground_distance_and_lowest_point():
    gp = np.zeros((3, 12))
    gp[0, :6] = [0, 0, 1.0, 0, 0, 1.0]              # plane z = 1, normal +z
    gp[1, :4] = [0, 0, -10.0, 10.0]                 # sphere radius 10 centred at z = -10 (top at z = 0)
    gp[2, :10] = [0, 0, 0, 3.0, 2.0, 1.0, 1, 0, 0, 0]  # ellipsoid
    gd, gl = ground_distance.cpu, ground_lowest_param.cpu
    assert gd(0, gp, 0, 5.0, 1.0, 3.5) == pytest.approx((2.5, 0, 0, 1))
    d, *n = gd(1, gp, 1, 3.0, 0.0, -10.0 + 4.0)
    assert d == pytest.approx(-5.0) and np.allclose(n, [0.6, 0, 0.8])
    # plane: the lower end of a tilted segment; the middle of a level one
    assert gl(0, gp, 0, 0.0, 0.0, 3.0, 1.0, 0.0, -0.5) == 1.0
    assert gl(0, gp, 0, 0.0, 0.0, 3.0, 1.0, 0.0, 0.0) == 0.5
    # sphere: the segment point closest to the centre
    assert gl(1, gp, 1, -2.0, 0.0, 1.0, 4.0, 0.0, 0.0) == pytest.approx(0.5)
    # ellipsoid: golden section agrees with a dense scan of the distance along the segment
    p0, dd = np.array([-4.0, 0.5, 1.5]), np.array([7.0, 0.3, -0.2])
    t = gl(2, gp, 2, *p0, *dd)
    ts = np.linspace(0, 1, 20001)
    scan = [gd(2, gp, 2, *(p0 + s * dd))[0] for s in ts]
    assert gd(2, gp, 2, *(p0 + t * dd))[0] <= min(scan) + 1e-9
    assert GroundKind.ELLIPSOID == 2


P = np.zeros((1, 8))


def _params(k=1000.0, c=10.0, mu=0.5, mode=SpringMode.JEOD, friction=FrictionModel.COULOMB, slip=0.0):
    p = P.copy()
    p[0, :6] = [k, c, mu, int(mode), int(friction), slip]
    return p


def test_spring_force_modes_and_friction():
    sf = spring_force.cpu
    n = (0.0, 0.0, 1.0)
    # JEOD: f_n = k x − c v_n (approaching, v_n < 0: spring and damper push)
    f = sf(_params(mu=0.0), 0, 0.01, 1.99, *n, 0.0, 0.0, -2.0)
    assert f == pytest.approx((0.0, 0.0, 1000 * 0.01 + 10 * 2.0))
    # separating fast: the damper pulls in JEOD mode, not in clamp mode
    assert sf(_params(mu=0.0), 0, 0.001, 1.999, *n, 0.0, 0.0, 2.0)[2] == pytest.approx(1.0 - 20.0)
    assert sf(_params(mu=0.0, mode=SpringMode.CLAMP), 0, 0.001, 1.999, *n, 0.0, 0.0, 2.0)[2] == 0.0
    # latch: −k d − c v_n, pulls the cores together (d = 1.5 m)
    assert sf(_params(mu=0.0, mode=SpringMode.LATCH), 0, 0.5, 1.5, *n, 0.0, 0.0, 0.0)[2] == pytest.approx(-1500.0)
    # Coulomb: μ|f_n| against the tangential velocity, whatever its size
    fx, fy, fz = sf(_params(), 0, 0.01, 1.99, *n, 3.0, 4.0, 0.0)
    assert fz == pytest.approx(10.0) and (fx, fy) == pytest.approx((-0.5 * 10 * 0.6, -0.5 * 10 * 0.8))
    # JEOD friction scales by |v_t|/|v|
    fx, fy, fz = sf(_params(friction=FrictionModel.JEOD), 0, 0.01, 1.99, *n, 3.0, 0.0, -4.0)
    assert fz == pytest.approx(10.0 + 40.0) and fx == pytest.approx(-0.5 * 50.0 * 3.0 / 5.0)
    # regularised: below the slip speed the friction grows linearly
    fx, _, _ = sf(_params(slip=1.0), 0, 0.01, 1.99, *n, 0.1, 0.0, 0.0)
    assert fx == pytest.approx(-0.5 * 10.0 * 0.1)
    # a tangential residue at round-off of |v| carries no friction
    fx, fy, fz = sf(_params(), 0, 0.01, 1.99, *n, 1e-17, 0.0, -2.0)
    assert fx == 0.0 and fz == pytest.approx(30.0)


def test_bad_inputs_are_refused():
    with pytest.raises(InputError, match="radius"):
        point_facet(0, radius=-1.0)
    with pytest.raises(InputError, match="axis"):
        line_facet(0, radius=1.0, length=1.0, axis=(0, 0, 0))
    with pytest.raises(InputError, match="length"):
        line_facet(0, radius=1.0, length=0.0)
    with pytest.raises(InputError, match="body"):
        point_facet(-3, radius=1.0)
    with pytest.raises(InputError, match="material"):
        point_facet(0, radius=1.0, material="")
    with pytest.raises(InputError, match="mode"):
        SpringInteraction(k=1.0, mode="sticky")
    with pytest.raises(InputError, match="k"):
        SpringInteraction(k=-1.0)
    with pytest.raises(InputError, match="njit"):
        UserInteraction(lambda *a: (0.0, 0.0, 0.0))
    reg = PairInteractions()
    reg.register("steel", "rubber", SpringInteraction(k=1.0))
    with pytest.raises(InputError, match="already registered"):
        reg.register("rubber", "steel", SpringInteraction(k=2.0))
    assert reg.find("rubber", "steel").k == 1.0 and reg.find("steel", "steel") is None
    assert material_id("steel") == material_id("steel") != material_id("Steel")
