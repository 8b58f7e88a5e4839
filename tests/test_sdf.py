"""Signed distance fields (seed 004 §2.2.3, eqs 2.12–2.21): grids, primitives, meshes.

References are independent of the code under test: closed-form distances written out here in numpy,
a brute-force point-triangle distance with exact winding-number signs written here, trimesh's
``proximity.signed_distance``, finite differences of the interpolant, and the CUDA simulator running
the same kernel sources against the CPU build.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest
import trimesh

from components.terrain import (SDFGrid, sdf_box, sdf_capsule, sdf_ellipsoid, sdf_plane, sdf_sphere,
                                sdf_torus)
from ecs.errors import InputError
from scenes.assets import sdf_build as sb
from systems.terrain import sdf
from sim_helpers import run_simulated

ROOT = Path(__file__).resolve().parents[1]
# Two float64 evaluations of the same closed form (different operation order): a few ulps of the
# largest coordinate (~10 m here) — 1e-12 leaves two orders of headroom.
EXACT = 1e-12


def _box_distance(p, half):
    q = np.abs(p) - half
    return np.linalg.norm(np.maximum(q, 0.0), axis=1) + np.minimum(q.max(axis=1), 0.0)


# --------------------------------------------------------------------------------------------------
# independent brute force: point-triangle distance and winding-number sign
# --------------------------------------------------------------------------------------------------


def _seg_dist2(p, a, b):
    ab = b - a
    t = np.clip(np.einsum("...k,...k->...", p - a, ab) / np.einsum("...k,...k->...", ab, ab), 0.0, 1.0)
    return np.sum((p - (a + t[..., None] * ab)) ** 2, axis=-1)


def _brute_unsigned(points, V, F):
    """min over triangles of the distance: plane distance where the projection falls inside the
    triangle (barycentric test), else the nearest of the three edge segments."""
    A, B, C = V[F[:, 0]], V[F[:, 1]], V[F[:, 2]]
    out = np.empty(len(points))
    n = np.cross(B - A, C - A)
    n2 = np.sum(n * n, axis=1)
    for s in range(0, len(points), 256):
        p = points[s:s + 256, None, :]
        # projection onto the plane and its barycentric coordinates (Cramer via cross products)
        t = np.einsum("pfk,fk->pf", p - A, n) / n2
        q = p - t[..., None] * n
        u = np.einsum("pfk,fk->pf", np.cross(C - B, q - B), n) / n2
        v = np.einsum("pfk,fk->pf", np.cross(A - C, q - C), n) / n2
        w = 1.0 - u - v
        inside = (u >= 0) & (v >= 0) & (w >= 0)
        d_plane = t * t * n2
        d_edges = np.minimum(np.minimum(_seg_dist2(p, A, B), _seg_dist2(p, B, C)), _seg_dist2(p, C, A))
        out[s:s + 256] = np.sqrt(np.where(inside, np.minimum(d_plane, d_edges), d_edges).min(axis=1))
    return out


def _winding(points, V, F):
    """Generalised winding number (van Oosterom–Strackee solid angles / 4π): ~1 inside, ~0 outside."""
    w = np.empty(len(points))
    for s in range(0, len(points), 512):
        a = V[F[:, 0]][None] - points[s:s + 512, None, :]
        b = V[F[:, 1]][None] - points[s:s + 512, None, :]
        c = V[F[:, 2]][None] - points[s:s + 512, None, :]
        la, lb, lc = (np.linalg.norm(x, axis=2) for x in (a, b, c))
        num = np.einsum("pfk,pfk->pf", a, np.cross(b, c))
        den = la * lb * lc + np.einsum("pfk,pfk->pf", a, b) * lc + np.einsum("pfk,pfk->pf", b, c) * la \
            + np.einsum("pfk,pfk->pf", c, a) * lb
        w[s:s + 512] = np.sum(2.0 * np.arctan2(num, den), axis=1) / (4.0 * np.pi)
    return w


def _torus_mesh():
    m = trimesh.creation.torus(major_radius=1.0, minor_radius=0.35, major_sections=24, minor_sections=12)
    return np.asarray(m.vertices), np.asarray(m.faces, dtype=np.int64)


# --------------------------------------------------------------------------------------------------
# grids of analytic shapes
# --------------------------------------------------------------------------------------------------


def test_grid_nodes_equal_analytic_sphere_and_box():
    sphere = sb.grid_from_shape(sdf_sphere(2.0, center=(0.1, -0.2, 0.3)), lower=(-2.5, -2.5, -2.5),
                                upper=(2.5, 2.5, 2.5), spacing=0.25)
    P = sphere.nodes().reshape(-1, 3)
    ref = np.linalg.norm(P - [0.1, -0.2, 0.3], axis=1) - 2.0
    assert np.max(np.abs(sphere.values.reshape(-1) - ref)) < EXACT
    box = sb.grid_from_shape(sdf_box((1.0, 0.5, 0.25)), lower=(-1.5, -1, -1), upper=(1.5, 1, 1), spacing=0.1)
    P = box.nodes().reshape(-1, 3)
    assert np.max(np.abs(box.values.reshape(-1) - _box_distance(P, [1.0, 0.5, 0.25]))) < EXACT
    # the trilinear interpolant (eq 2.17) reproduces the node values at the nodes
    d, _ = sdf.sample_grid(box, P)
    assert np.max(np.abs(d - box.values.reshape(-1))) < EXACT


def test_gradient_and_hessian_match_finite_differences():
    rng = np.random.default_rng(4)
    g = SDFGrid(origin=(-1.0, 0.5, 2.0), spacing=(0.3, 0.2, 0.4), values=rng.normal(size=(7, 6, 5)))
    # interior points away from cell faces (the interpolant is a cubic polynomial inside a cell) and
    # points outside the grid box (the continuation d(p) + |x - p|)
    cells = rng.integers(0, [6, 5, 4], size=(300, 3))
    frac = rng.uniform(0.1, 0.9, size=(300, 3))
    inside = g.origin + g.spacing * (cells + frac)
    outside = g.origin + g.spacing * (rng.uniform(0.1, 0.9, size=(100, 3)) * [6, 5, 4]) + [[3.0, 0, 0]]
    pts = np.vstack([inside, outside])
    d, grad, H = sdf.sample_grid_hessian(g, pts)
    e = 1e-6
    for a in range(3):
        dp = np.zeros(3)
        dp[a] = e
        fp, gp = sdf.sample_grid(g, pts + dp)
        fm, gm = sdf.sample_grid(g, pts - dp)
        # central differences of a cubic: truncation ~ f''' e² ~ 1e-12, rounding ~ 1e-16 |f| / e ~ 1e-10
        assert np.max(np.abs((fp - fm) / (2 * e) - grad[:, a])) < 1e-7
        assert np.max(np.abs((gp - gm) / (2 * e) - H[:, :, a])) < 1e-6
    # eq 2.20: the Hessian's diagonal vanishes inside the grid
    assert np.max(np.abs(np.diagonal(H[:300], axis1=1, axis2=2))) == 0.0


def test_value_sampler_is_the_gradient_samplers_value_to_the_bit():
    """The clearances' value-only sampler (flight and contact motion ask every vertex for its
    distance alone) must give the gradient sampler's value bit for bit, inside the grid, on its
    faces and nodes, and outside it (the continuation d(p) + |x - p|): the deployment's results
    do not depend on which of the two a kernel calls."""
    rng = np.random.default_rng(7)
    g = SDFGrid(origin=(-1.0, 0.5, 2.0), spacing=(0.3, 0.2, 0.4), values=rng.normal(size=(7, 6, 5)))
    hi = g.origin + g.spacing * (np.array(g.values.shape) - 1)
    pts = np.vstack([g.origin + (hi - g.origin) * rng.uniform(-0.3, 1.3, size=(400, 3)),
                     g.nodes().reshape(-1, 3)[::7]])
    d, _ = sdf.sample_grid(g, pts)
    vals = np.ascontiguousarray(g.values)
    (ox, oy, oz), (hx, hy, hz) = g.origin, g.spacing
    v = np.array([sdf.sample_sdf_grid_value.cpu(vals, ox, oy, oz, hx, hy, hz, *p) for p in pts])
    assert np.array_equal(v, d)
    nodes = g.nodes().reshape(-1, 3)
    vn = np.array([sdf.sample_sdf_grid_value.cpu(vals, ox, oy, oz, hx, hy, hz, *p) for p in nodes])
    assert np.max(np.abs(vn - g.values.reshape(-1))) < EXACT


def test_serial_and_parallel_terrain_queries_agree_to_the_bit():
    """``eval_terrain(..., parallel=False)`` (the deployment's release-point check: one query per
    run, where the parallel build's first launch costs more than the query) must give what the
    parallel build gives above its row threshold, bit for bit, for a bare grid and for the general
    evaluator (a grid with a rock texture is not a bare grid)."""
    from ecs.kernels import PARALLEL_MIN_ROWS
    from components.terrain import TerrainSDF
    from scenes.assets.noise import fbm_noise

    rng = np.random.default_rng(11)
    g = SDFGrid(origin=(-1.0, 0.5, 2.0), spacing=(0.3, 0.2, 0.4), values=rng.normal(size=(7, 6, 5)))
    hi = g.origin + g.spacing * (np.array(g.values.shape) - 1)
    pts = g.origin + (hi - g.origin) * rng.uniform(-0.3, 1.3, size=(PARALLEL_MIN_ROWS + 5, 3))
    for terrain in (TerrainSDF(base=g), TerrainSDF(base=g, fbm=fbm_noise(max_height=0.05, frequency=2.0))):
        assert sdf.is_bare_grid(terrain) == (terrain.fbm is None)
        dp, gp = sdf.eval_terrain(terrain, pts)
        ds, gs = sdf.eval_terrain(terrain, pts, parallel=False)
        assert np.array_equal(dp, ds) and np.array_equal(gp, gs)


def test_normal_and_surface_point_on_a_sphere_grid():
    R = 1.0
    g = sb.grid_from_shape(sdf_sphere(R), lower=(-1.3,) * 3, upper=(1.3,) * 3, spacing=0.05)
    rng = np.random.default_rng(5)
    dirs = rng.normal(size=(500, 3))
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    x = dirs * rng.uniform(0.7, 1.25, size=(500, 1))
    n = sdf.grid_normals(g, x)
    assert np.allclose(np.linalg.norm(n, axis=1), 1.0, atol=1e-14)  # eq 2.21
    # trilinear interpolation of |x| - R errs by O(h²/R): normals within a few degrees of radial
    assert np.min(np.einsum("ij,ij->i", n, dirs)) > np.cos(np.radians(3.0))
    c, dc = sdf.surface_points(g, x, tol=1e-12)
    assert np.max(np.abs(dc)) <= 1e-12  # converged on the interpolated zero set
    # ... which lies within the interpolation error h²/(8R)·3 of the true sphere
    assert np.max(np.abs(np.linalg.norm(c, axis=1) - R)) < 3 * 0.05 ** 2 / (8 * R) * 3


# --------------------------------------------------------------------------------------------------
# analytic primitives
# --------------------------------------------------------------------------------------------------


def _rot(q):
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def test_primitives_match_closed_forms():
    rng = np.random.default_rng(6)
    p = rng.uniform(-3, 3, size=(2000, 3))
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    c = np.array([0.3, -0.4, 0.2])
    local = (p - c) @ _rot(q)  # rows: R^T (p - c)
    cases = {
        "box": (sdf_box((1.0, 0.6, 0.3), center=c, attitude=q), _box_distance(local, [1.0, 0.6, 0.3])),
        "capsule": (sdf_capsule(0.8, 0.4, center=c, attitude=q),
                    np.sqrt(local[:, 0] ** 2 + local[:, 1] ** 2 + (local[:, 2] - np.clip(local[:, 2], -0.8, 0.8)) ** 2)
                    - 0.4),
        "torus": (sdf_torus(1.2, 0.3, center=c, attitude=q),
                  np.hypot(np.hypot(local[:, 0], local[:, 1]) - 1.2, local[:, 2]) - 0.3),
        "plane": (sdf_plane((1.0, 2.0, -2.0), 0.5), p @ (np.array([1.0, 2.0, -2.0]) / 3.0) - 0.5),
    }
    for name, (shape, ref) in cases.items():
        d, g = sdf.eval_shape_points(shape, p)
        assert np.max(np.abs(d - ref)) < EXACT, name
        assert np.allclose(np.linalg.norm(g, axis=1), 1.0, atol=1e-12), name


def test_ellipsoid_distance_is_exact():
    rng = np.random.default_rng(7)
    for axes in [(3.0, 2.0, 1.0), (1.0, 1.0, 0.4), (0.5, 2.0, 2.0), (1.5, 1.5, 1.5)]:
        a = np.array(axes)
        p = np.vstack([rng.normal(size=(3000, 3)) * a * 1.5,
                       rng.normal(size=(200, 3)) * a * 0.1,  # deep inside, near the medial region
                       np.diag(a * 0.3), np.diag(a * 1.7), np.zeros((1, 3)),  # on the axes, the centre
                       [[a[0] * 0.5, a[1] * 0.2, 0.0], [0.0, 0.0, 0.0]]])  # interior points on a symmetry plane
        c, inside = sdf.ellipsoid_closest_points(a, p)
        d, g = sdf.eval_shape_points(sdf_ellipsoid(a), p)
        # the closest point lies on the ellipsoid and x - c is along the normal there (Lagrange)
        assert np.max(np.abs(np.sum((c / a) ** 2, axis=1) - 1.0)) < 1e-12
        n = c / a ** 2
        n /= np.linalg.norm(n, axis=1, keepdims=True)
        assert np.max(np.linalg.norm(np.cross(n, p - c), axis=1)) < 1e-9
        assert np.allclose(np.abs(d), np.linalg.norm(p - c, axis=1), atol=EXACT)
        assert np.array_equal(d < 0, np.sum((p / a) ** 2, axis=1) < 1)
        # no surface sample is closer (dense parameterised sampling: the true minimum bounds it)
        th, ph = np.meshgrid(np.linspace(0, np.pi, 200), np.linspace(0, 2 * np.pi, 400), indexing="ij")
        S = np.stack([a[0] * np.sin(th) * np.cos(ph), a[1] * np.sin(th) * np.sin(ph), a[2] * np.cos(th)], -1)
        S = S.reshape(-1, 3)
        sub = p[::40]
        dmin = np.min(np.linalg.norm(sub[:, None, :] - S[None], axis=2), axis=1)
        assert np.all(np.abs(d[::40]) <= dmin + 1e-12)
        # ... and the sampled minimum is within the sampling resolution of it
        assert np.all(dmin - np.abs(d[::40]) < 0.05 * a.max())
        if np.ptp(a) == 0:  # a sphere: the closed form
            assert np.max(np.abs(d - (np.linalg.norm(p, axis=1) - a[0]))) < EXACT


def test_smooth_union_gradient_and_bounds():
    s1, s2 = sdf_sphere(1.0, center=(-0.6, 0, 0)), sdf_sphere(0.8, center=(0.6, 0, 0))
    k = 0.3
    rng = np.random.default_rng(8)
    p = rng.uniform(-2, 2, size=(1000, 3))
    d, g = sdf.eval_shape_points(s1.smooth_union(s2, k), p)
    d1, _ = sdf.eval_shape_points(s1, p)
    d2, _ = sdf.eval_shape_points(s2, p)
    m = np.minimum(d1, d2)
    # polynomial smooth minimum: min(a, b) - k/4 <= smin <= min(a, b)
    assert np.all(d <= m + EXACT) and np.all(d >= m - k / 4 - EXACT)
    e = 1e-6
    for a in range(3):
        dp = np.zeros(3)
        dp[a] = e
        fp, _ = sdf.eval_shape_points(s1.smooth_union(s2, k), p + dp)
        fm, _ = sdf.eval_shape_points(s1.smooth_union(s2, k), p - dp)
        assert np.max(np.abs((fp - fm) / (2 * e) - g[:, a])) < 1e-6
    du, _ = sdf.eval_shape_points(s1.union(s2), p)
    di, _ = sdf.eval_shape_points(s1.intersection(s2), p)
    ds, _ = sdf.eval_shape_points(s1.subtract(s2), p)
    assert np.array_equal(du, m) and np.array_equal(di, np.maximum(d1, d2)) and np.array_equal(ds, np.maximum(d1, -d2))


# --------------------------------------------------------------------------------------------------
# SDF from meshes
# --------------------------------------------------------------------------------------------------


def test_mesh_sdf_of_a_box_equals_the_analytic_distance():
    m = trimesh.creation.box(extents=(2.0, 1.0, 0.5))
    for band in ("auto", None):
        g = sb.sdf_from_mesh(m.vertices, m.faces, spacing=0.05, padding=0.3, band=band, cache=False)
        P = g.nodes().reshape(-1, 3)
        assert np.max(np.abs(g.values.reshape(-1) - _box_distance(P, [1.0, 0.5, 0.25]))) < EXACT, band


def test_mesh_sdf_equals_brute_force_on_a_nonconvex_mesh():
    V, F = _torus_mesh()
    g = sb.sdf_from_mesh(V, F, spacing=0.1, band=None, cache=False)
    P = g.nodes().reshape(-1, 3)
    ref = _brute_unsigned(P, V, F) * np.where(_winding(P, V, F) > 0.5, -1.0, 1.0)
    # both are exact point-triangle distances computed two ways: rounding only
    assert np.max(np.abs(g.values.reshape(-1) - ref)) < 1e-12
    # the default (exact near the surface, candidate walk elsewhere) agrees within the band and is an
    # upper bound with the right sign everywhere
    fast = sb.sdf_from_mesh(V, F, spacing=0.1, cache=False).values.reshape(-1)
    near = np.abs(ref) <= 2 * 0.1
    assert np.max(np.abs(fast[near] - ref[near])) < 1e-12
    assert np.all(np.abs(fast) >= np.abs(ref) - 1e-12) and np.array_equal(np.sign(fast), np.sign(ref))
    assert np.max(np.abs(fast - ref)) < 0.1  # never off by more than a voxel (measured: 0 here)


def test_mesh_distance_matches_trimesh_at_random_points():
    V, F = _torus_mesh()
    rng = np.random.default_rng(9)
    p = rng.uniform(-1.6, 1.6, size=(2000, 3))
    d = sb.mesh_signed_distance(V, F, p)
    ref = -trimesh.proximity.signed_distance(trimesh.Trimesh(V, F, process=False), p)  # trimesh: + inside
    assert np.max(np.abs(d - ref)) < 1e-9


def test_sign_is_right_at_1e5_points_around_a_nonconvex_mesh():
    V, F = _torus_mesh()
    rng = np.random.default_rng(10)
    p = rng.uniform([-1.5, -1.5, -0.5], [1.5, 1.5, 0.5], size=(100_000, 3))
    d = sb.mesh_signed_distance(V, F, p)
    # the polygonal torus lies within 0.03 of the analytic one (sagitta of 24 x 12 sections, and its
    # vertices on the analytic surface): beyond that margin the analytic sign is the mesh's sign
    da = np.hypot(np.hypot(p[:, 0], p[:, 1]) - 1.0, p[:, 2]) - 0.35
    far = np.abs(da) > 0.03
    assert far.sum() > 80_000 and np.sum(da[far] < 0) > 20_000
    assert np.array_equal(d[far] < 0, da[far] < 0)
    # near the surface: exact winding numbers of the mesh itself
    w = _winding(p[~far][:4000], V, F)
    assert np.array_equal(d[~far][:4000] < 0, w > 0.5)


def test_mesh_sdf_refuses_bad_input_before_work(tmp_path):
    m = trimesh.creation.box()
    with pytest.raises(InputError, match="2 boundary edges|boundary edges"):
        sb.sdf_from_mesh(m.vertices, m.faces[:-1], spacing=0.1)
    with pytest.raises(InputError, match="GiB"):
        sb.sdf_from_mesh(m.vertices, m.faces, spacing=1e-4, max_bytes=1 << 20)
    with pytest.raises(InputError, match="spacing"):
        sb.sdf_from_mesh(m.vertices, m.faces, spacing=-1.0)


def test_mesh_sdf_is_cached_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("TUMBLE_CACHE", str(tmp_path))
    m = trimesh.creation.box()
    g1 = sb.sdf_from_mesh(m.vertices, m.faces, spacing=0.25)
    files = list((tmp_path / "sdf").glob("*.npy"))
    assert len(files) == 1
    np.save(files[0], g1.values + 1.0)  # a cache hit returns the stored array
    g2 = sb.sdf_from_mesh(m.vertices, m.faces, spacing=0.25)
    assert np.array_equal(g2.values, g1.values + 1.0)
    g3 = sb.sdf_from_mesh(m.vertices, m.faces, spacing=0.2)  # another grid: another key
    assert len(list((tmp_path / "sdf").glob("*.npy"))) == 2 and g3.shape != g1.shape


def test_convex_rock_distance_matches_the_mesh_distance():
    from scenes.assets.noise import polyhedral_rocks

    rf = polyhedral_rocks(np.array([[0, 0, 0], [4, 0, 0], [0, 4, 0.0]]), np.array([[0, 1, 2]]), seed=3)
    assert rf.count > 3
    sh = rf.shapes
    rng = np.random.default_rng(11)
    for k in range(3):
        tris = sh.triangles[sh.tri_start[k]:sh.tri_start[k + 1]]
        used = np.unique(tris)
        V = sh.vertices[used]
        F = np.searchsorted(used, tris)
        p = rng.normal(size=(500, 3)) * sh.radius[k]
        d, g = sdf.convex_distance_points(sh, k, p)
        assert np.max(np.abs(d - sb.mesh_signed_distance(V, F, p))) < 1e-12


# --------------------------------------------------------------------------------------------------
# CPU <-> GPU (CUDA simulator)
# --------------------------------------------------------------------------------------------------

GPU_SCRIPT = textwrap.dedent(
    """
    import json, numpy as np
    from components.terrain import TerrainSDF, sdf_ellipsoid, sdf_torus
    from ecs.kernels import launch_rows
    from scenes.assets.noise import fbm_noise, psr_field
    from scenes.assets.sdf_build import grid_from_shape
    from systems.terrain import sdf
    shape = sdf_ellipsoid((3.0, 2.0, 1.0)).smooth_union(sdf_torus(2.0, 0.3), 0.5)
    grid = grid_from_shape(shape, lower=(-3.5, -3, -2), upper=(3.5, 3, 2), spacing=0.25)
    fbm = fbm_noise(max_height=0.2, frequency=1.0, octaves=3, seed=1)
    psr = psr_field(seed=2, period=2.0, resolution=16, index_cell=4.0, index_size=4)
    pts = np.random.default_rng(0).uniform(-4, 4, size=(12, 3))
    out = {}
    for name, terr in {"grid+fbm+psr": TerrainSDF(grid, fbm, psr), "shape": TerrainSDF(shape)}.items():
        args = sdf.terrain_args(terr)
        res = {}
        for backend in ("cpu", "gpu"):
            d = np.zeros(len(pts)); g = np.zeros((len(pts), 3))
            launch_rows(backend, sdf.eval_terrain_rows, sdf.eval_terrain_row, len(pts), pts, d, g, args)
            res[backend] = np.column_stack([d, g])
        out[name] = float(np.max(np.abs(res["cpu"] - res["gpu"])))
    print(json.dumps(out))
    """
)


def test_cuda_simulator_matches_cpu():
    diffs = run_simulated(GPU_SCRIPT, strict=False)
    # the simulator runs the same Python sources in float64: only FMA/ordering differences of the
    # compiled CPU build remain, a few ulps of values O(1-10)
    for name, d in diffs.items():
        assert d < 1e-11, (name, d)
