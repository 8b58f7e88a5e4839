"""Surface features (seed 004 §2.3): fBm noise, seeded rocks, polyhedral rocks; bodies; broadphase.

References: the fBm bounds of eqs 2.30–2.32 and the symmetry of the quintic smoother, scipy.stats
(truncated Pareto law, KS test, Poisson counts), finite differences, brute-force sphere overlaps,
trimesh's watertightness and volumes, closed-form ellipsoid volume.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import trimesh
from scipy import stats

from components.mesh import check_closed_mesh
from ecs.errors import InputError
from scenes.assets import bodies
from scenes.assets import noise as nz
from systems.terrain import sdf
from systems.terrain.broadphase import SphereGrid, bounding_sphere, query_points, region_spheres


# --------------------------------------------------------------------------------------------------
# fBm
# --------------------------------------------------------------------------------------------------


def test_fbm_amplitude_sums_to_the_requested_height():
    for n in (1, 3, 6):
        a0 = nz.fbm_amplitude(4.8, n)
        L, H = 2 * math.pi / 3, 0.8
        assert math.isclose(sum(a0 * L ** (-i * H) for i in range(n)), 4.8, rel_tol=1e-14)  # eq 2.30
    assert math.isclose(nz.LACUNARITY, 2.0943951, rel_tol=1e-7)  # 2π/3 (printed 2.0744: misprint)


def test_fbm_respects_max_height_and_has_zero_mean():
    f = nz.fbm_noise(max_height=2.0, frequency=0.5, octaves=5, seed=3)
    rng = np.random.default_rng(0)
    p = rng.uniform(-300, 300, size=(400_000, 3))
    d, _ = sdf.fbm_points(f, p)
    # each octave's lattice lies in [-0.5, 0.5], so |d| <= Σ A_i / 2 = h_max / 2 (eq 2.30)
    assert np.max(np.abs(d)) <= 1.0 + 1e-12
    assert np.ptp(d) > 0.5 * 2.0  # and the bound is not vacuous
    # zero mean: over one full period of the first octave, sampled symmetrically in every cell, the
    # quintic-smoothed interpolant averages to the lattice mean (t_q(1-t) = 1 - t_q(t)), which is 0
    one = nz.fbm_noise(max_height=2.0, frequency=0.5, octaves=1, seed=3)
    P = one.lattice.shape[0]
    s = (np.arange(P * 4) + 0.5) / 4 / one.frequency
    X = np.stack(np.meshgrid(s, s, s, indexing="ij"), -1).reshape(-1, 3)
    d1, _ = sdf.fbm_points(one, X)
    assert abs(d1.mean()) < 1e-15 * len(d1) ** 0.5 * 4
    # all octaves over a large random domain: the mean is small against the height (sampling error
    # of correlated noise; measured ~1e-3)
    assert abs(d.mean()) < 0.01 * 2.0


def test_fbm_gradient_matches_finite_differences():
    f = nz.fbm_noise(max_height=1.0, frequency=0.3, octaves=4, seed=5)
    p = np.random.default_rng(1).uniform(-50, 50, size=(500, 3))
    _, g = sdf.fbm_points(f, p)
    e = 1e-6
    for a in range(3):
        dp = np.zeros(3)
        dp[a] = e
        fd = (sdf.fbm_points(f, p + dp)[0] - sdf.fbm_points(f, p - dp)[0]) / (2 * e)
        assert np.max(np.abs(fd - g[:, a])) < 1e-6


# --------------------------------------------------------------------------------------------------
# procedurally seeded rocks
# --------------------------------------------------------------------------------------------------


def test_psr_reproducible_from_the_seed_and_non_positive():
    a = nz.psr_field(seed=11, resolution=32, period=2.0)
    b = nz.psr_field(seed=11, resolution=32, period=2.0)
    c = nz.psr_field(seed=12, resolution=32, period=2.0)
    assert np.array_equal(a.texture, b.texture) and np.array_equal(a.index, b.index)
    assert not np.array_equal(a.texture, c.texture)
    assert a.texture.max() <= 0.0 and a.texture.min() < -0.02  # strictly negative rock texture
    p = np.random.default_rng(2).uniform(-20, 20, size=(20_000, 3))
    da, ga = sdf.psr_points(a, p)
    db, gb = sdf.psr_points(b, p)
    assert np.array_equal(da, db) and np.all(da <= 0.0)
    # continuity (also across the integer steps of the texture index): fine steps along a line
    t = np.linspace(0, 60, 600_001)[:, None]
    line = np.array([1.0, 0.37, 0.11]) * t
    dl, gl = sdf.psr_points(a, line)
    step = np.linalg.norm(line[1] - line[0])
    assert np.max(np.abs(np.diff(dl))) < 2.0 * step * np.max(np.linalg.norm(gl, axis=1))


def test_psr_gradient_matches_finite_differences():
    a = nz.psr_field(seed=4, resolution=32, period=2.0)
    p = np.random.default_rng(3).uniform(-5, 5, size=(3000, 3))
    _, g = sdf.psr_points(a, p)
    e = 1e-7
    ok = np.ones(len(p), bool)
    fds = []
    for k in range(3):
        dp = np.zeros(3)
        dp[k] = e
        fp = sdf.psr_points(a, p + dp)[0]
        fm = sdf.psr_points(a, p - dp)[0]
        f0 = sdf.psr_points(a, p)[0]
        fds.append((fp - fm) / (2 * e))
        # skip points where a texture cell face lies within e (one-sided slopes differ there)
        ok &= np.abs((fp - f0) - (f0 - fm)) < 1e-9
    fd = np.stack(fds, 1)
    assert ok.sum() > 2500
    assert np.max(np.abs(fd[ok] - g[ok])) < 1e-5


# --------------------------------------------------------------------------------------------------
# polyhedral rocks
# --------------------------------------------------------------------------------------------------


def _ground(n=6, size=12.0):
    x = np.linspace(0, size, n + 1)
    X, Y = np.meshgrid(x, x, indexing="ij")
    V = np.stack([X.ravel(), Y.ravel(), np.zeros(X.size)], 1)
    F = []
    for i in range(n):
        for j in range(n):
            a, b, c, d = i * (n + 1) + j, (i + 1) * (n + 1) + j, (i + 1) * (n + 1) + j + 1, i * (n + 1) + j + 1
            F += [[a, b, c], [a, c, d]]
    return V, np.array(F)


def test_rock_law_calibration():
    # Table 4.2's k0 gives ~143 rocks/m² larger than 5 cm (the text's ~14 is the calibrated count)
    assert math.isclose(nz.rock_density(0.05, k0=2.5e-3, s0=2.5, alpha=2.8), 2.5e-3 * 50 ** 2.8, rel_tol=1e-12)
    assert 140 < nz.rock_density(0.05, k0=2.5e-3, s0=2.5, alpha=2.8) < 146
    k0 = nz.calibrate_k0(14.0, s_min=0.05, s0=2.5, alpha=2.8)
    assert math.isclose(nz.rock_density(0.05, k0=k0, s0=2.5, alpha=2.8), 14.0, rel_tol=1e-12)


def test_polyhedral_rocks_reproducible_and_follow_the_power_law():
    V, F = _ground()
    kw = dict(seed=21, rocks_per_m2=14.0, s_min=0.05, s_max=0.5, alpha=2.8)
    r1 = nz.polyhedral_rocks(V, F, **kw)
    r2 = nz.polyhedral_rocks(V, F, **kw)
    assert np.array_equal(r1.position, r2.position) and np.array_equal(r1.shapes.vertices, r2.shapes.vertices)
    # seeded by facet: the rocks of a facet do not depend on which other facets are generated
    sub = nz.polyhedral_rocks(V, F[::-1][:5], facet_ids=np.arange(len(F))[::-1][:5], **kw)
    for fid in np.unique(sub.facet):
        assert np.array_equal(np.sort(sub.size[sub.facet == fid]), np.sort(r1.size[r1.facet == fid]))
    # count: Poisson with mean area * K (1 - (s_min/s_max)^α); 144 m² -> ~2016 rocks, 4σ bounds
    mean = 144.0 * 14.0 * (1 - (0.05 / 0.5) ** 2.8)
    assert abs(r1.count - mean) < 4 * math.sqrt(mean)
    # sizes: bounded Pareto (eq 2.23) against scipy's truncated Pareto law, KS test
    law = stats.truncpareto(b=2.8, c=0.5 / 0.05, scale=0.05)
    assert stats.kstest(r1.size, law.cdf).pvalue > 0.01
    # sinking: centres r·s below the facet, r in [-0.4, 0.25]; rocks convex and closed
    ratio = -r1.position[:, 2] / r1.size
    assert ratio.min() >= -0.4 - 1e-12 and ratio.max() <= 0.25 + 1e-12
    sh = r1.shapes
    for k in range(0, r1.count, 97):
        tris = sh.triangles[sh.tri_start[k]:sh.tri_start[k + 1]]
        used = np.unique(tris)
        check_closed_mesh(sh.vertices[used], np.searchsorted(used, tris))
        assert sh.radius[k] == np.max(np.linalg.norm(sh.vertices[used], axis=1))  # encloses the rock
        # icosahedron radius s/2 plus a Gaussian offset of σ = 0.1 s per axis (|δ| < 6σ w.p. ~1 - 1e-7)
        assert sh.radius[k] <= (0.5 + 6 * 0.1) * r1.size[k]


def test_bounded_pareto_inverse_matches_scipy():
    y = np.linspace(0.001, 0.999, 50)
    assert np.allclose(nz.bounded_pareto(y, 0.05, 0.5, 2.8),
                       stats.truncpareto(b=2.8, c=10.0, scale=0.05).ppf(y), rtol=1e-12)
    assert math.isclose(nz.pareto_mean(0.05, 0.5, 2.8), stats.truncpareto(b=2.8, c=10.0, scale=0.05).mean(),
                        rel_tol=1e-10)
    with pytest.raises(InputError):
        nz.bounded_pareto(0.5, 0.5, 0.05, 2.8)


# --------------------------------------------------------------------------------------------------
# broadphase
# --------------------------------------------------------------------------------------------------


def test_sphere_grid_query_equals_brute_force():
    rng = np.random.default_rng(5)
    c = rng.uniform(-20, 20, size=(3000, 3))
    r = rng.uniform(0.05, 0.6, size=3000)
    g = SphereGrid.build(c, r)
    q = rng.uniform(-22, 22, size=(800, 3))
    qr = rng.uniform(0.1, 2.0, size=800)
    out, cnt = query_points(g, q, qr, capacity=128)
    hit = np.linalg.norm(q[:, None] - c[None], axis=2) <= r[None] + qr[:, None]
    assert np.array_equal(cnt, hit.sum(1)) and cnt.max() < 128
    for i in range(len(q)):
        assert set(out[i, :cnt[i]].tolist()) == set(np.flatnonzero(hit[i]).tolist())


def test_bounding_spheres_enclose():
    rng = np.random.default_rng(6)
    pts = rng.normal(size=(2000, 3))
    pts /= np.linalg.norm(pts, axis=1, keepdims=True)
    c, r = bounding_sphere(pts + [3.0, -1.0, 2.0])
    assert np.all(np.linalg.norm(pts + [3.0, -1.0, 2.0] - c, axis=1) <= r)
    assert r < 1.05  # the minimum is 1
    V, F = _ground(4, 8.0)
    cs, rs = region_spheres(V, F, np.arange(len(F)) % 2)
    for k in range(2):
        used = np.unique(F[np.arange(len(F)) % 2 == k])
        assert np.all(np.linalg.norm(V[used] - cs[k], axis=1) <= rs[k])


# --------------------------------------------------------------------------------------------------
# procedural bodies
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["ellipsoid", "itokawa", "kw4"])
def test_bodies_are_watertight_and_match_their_shapes(name):
    b = bodies.small_body(name, resolution=40)
    check_closed_mesh(b.vertices, b.faces)
    tm = trimesh.Trimesh(b.vertices, b.faces, process=False)
    assert tm.is_watertight and tm.is_winding_consistent and tm.volume > 0
    h = float(b.grid.spacing[0])
    # vertices lie on the zero set up to linear interpolation along grid edges (O(h²) / curvature)
    d, _ = sdf.eval_shape_points(b.shape, b.vertices)
    assert np.max(np.abs(d)) < 0.1 * h
    if name == "ellipsoid":
        a = np.array([268.0, 147.0, 105.0])
        assert abs(tm.volume / (4 / 3 * math.pi * a.prod()) - 1) < 0.01
    if name == "itokawa":  # within the 268 x 147 x 105 m semi-axis envelope, and filling it
        ext = np.max(np.abs(b.vertices), axis=0)
        assert np.all(ext <= [268.0, 147.0, 105.0 + 8.0]) and np.all(ext > 0.95 * np.array([268.0, 147.0, 105.0]))


def test_fbm_slope_bound_holds():
    """TerrainSDF.lipschitz bounds |∇d| of an fBm terrain: sampled gradients never exceed it
    (the flight phase divides its clearance by it, so a step cannot tunnel through a ridge)."""
    import numpy as np

    from components.terrain import TerrainSDF
    from scenes.assets.bodies import small_body
    from scenes.assets.noise import fbm_noise

    body = small_body("sphere", resolution=24)
    f = fbm_noise(max_height=4.8, frequency=1 / 4.8, octaves=5, seed=0)
    t = TerrainSDF(base=body.grid, fbm=f)
    rng = np.random.default_rng(0)
    pts = rng.uniform(-520.0, 520.0, size=(20000, 3))
    _, g = sdf.eval_terrain(t, pts)
    slope = np.linalg.norm(g, axis=1)
    assert slope.max() > 1.5                     # the relief makes the field steeper than a distance
    assert slope.max() <= t.lipschitz
    assert TerrainSDF(base=body.grid).lipschitz == 1.0
