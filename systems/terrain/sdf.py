"""Signed distance kernels: SDF grids, analytic primitives, fBm noise, seeded rocks, convex rocks.

Seed 004 §2.2.3 and §2.3. Every per-point body is written once as a plain Python function on
scalars (``math.*``, no allocation, no raise) and compiled twice by :func:`ecs.kernels.dual`
(``.cpu`` inlined njit, ``.gpu`` CUDA device function). Each kernel returns a tuple of floats.

Grid (§2.2.3):

* :data:`sample_sdf_grid_full` — trilinear distance (eqs 2.16–2.18), gradient (eq 2.19) and Hessian
  (eq 2.20) of an :class:`components.terrain.SDFGrid`; :data:`sample_sdf_grid` — value + gradient;
  :data:`sdf_grid_normal` — eq 2.21. Eq 2.19 divides by Δx and eq 2.20 by Δx² for cubic voxels; with
  spacings (hx, hy, hz) the factors are 1/h_a and 1/(h_a h_b). Outside the grid box the value is
  continued as ``d(p) + |x - p|``, p the nearest point of the box (continuous; its gradient is
  ``(x - p)/|x - p|`` along the clamped axes).
* :data:`project_to_surface_grid` — the surface crossing c* along the normal N at x (eq 2.13 iterated,
  as the seed prescribes for the interpolated field): Newton iterations on ``d(x - s N) = 0``.

Analytic primitives (exact Euclidean distances, in the primitive's own frame): sphere (eqs
2.14–2.15), plane, box, capsule, torus and ellipsoid. The ellipsoid is the true distance, not the
common ``(|x/a| - 1) min(a)`` approximation: the closest point solves the Lagrange condition
``x_i = a_i² y_i / (t + a_i²)`` for the largest root t of a convex decreasing 1-D function,
found by a safeguarded Newton/bisection iteration after D. Eberly, "Distance from a point to an
ellipse, an ellipsoid, or a hyperellipsoid" (Geometric Tools, 2013), with the degenerate
(on-axis, interior-medial) cases handled in closed form. :data:`eval_shape` folds primitives with
union, intersection, subtraction and the polynomial smooth union (Quilez).

Surface features (§2.3): :data:`eval_fbm` — fractional Brownian motion value noise with quintic
smoothing (eqs 2.24–2.27); :data:`eval_psr` — procedurally seeded rocks, a periodic non-positive
rock texture tiled aperiodically with the rotations and offsets of eqs 2.38–2.39 (the 3-D form of
eqs 2.34–2.36); :data:`eval_terrain` — base + noise + rocks, what a contact system samples.
The seed's blend (Quilez's "texture repetition") also shifts the blend by ``0.1 Σ(a - b)`` of the
two colours; that term makes the field discontinuous where the texture index crosses an integer
when the blended values are distances of arbitrary size, so it is left out: the blend weight is
``smoothstep(0.2, 0.8, c)`` of the index's fractional part c alone, which keeps d continuous.

Polyhedral rocks (§2.3.1): :data:`convex_distance` — exact signed distance to a convex polyhedron
(inside: the largest face-plane distance; outside: the nearest point of the nearest triangle), using
:data:`closest_point_triangle` (C. Ericson, Real-Time Collision Detection §5.1.5, with the Voronoi
region returned for pseudonormal signs, see :mod:`scenes.assets.sdf_build`).

Explicit rocks in the terrain (§2.3.1, "the event function is the minimum over probe vertices of
the terrain SDF and of the distances to nearby rocks"): :data:`eval_rocks` unites a terrain value
d with the rocks of a :class:`components.terrain.RockField`, ``D = min(d, min_k d_k)``, gradient of
the winner (an SDF union: exact outside both solids, the usual min-bound inside). Broadphase, so
that the cost does not grow with the number of rocks:

1. the box of all rock vertices: a point outside it by more than ``min(d, reach)`` tests no rock;
2. a uniform grid (cell side ~ the largest rock diameter, cells hashed as in
   :mod:`systems.terrain.broadphase`): only the cells within ``min(d, reach) + R_max`` of the point are
   visited, each rock once (the cell of its centre);
3. per rock, the coarse bounding-sphere distance ``|x - c| - R``: a rock whose sphere is not nearer
   than the best distance so far (starting from ``min(d, reach)``) is skipped; the others get the
   fine :data:`convex_distance`.

Semantics: wherever the united distance is below ``reach`` (RockField.reach, 2 m by default) the
result is exactly the brute-force minimum over all rocks (the same kernel, bit for bit); where it
is above, searching farther would cost ~(d/cell)³ cell visits, so the value returned is the lower
bound ``min(d, max(reach, d_box))`` (``d_box``: distance to the rocks' box, 0 inside), which is
continuous, 1-Lipschitz and never above the true distance — a step limited by it cannot tunnel
into a rock. Its gradient there is ∇d_box when d_box wins, else the terrain's own gradient (a
pseudo-gradient on the flat part, which lies > reach from every surface: no contact uses it).
Without a rock field the union costs one integer test (``rock_on``).

Numpy-level wrappers (:func:`sample_grid`, :func:`eval_shape_points`, :func:`eval_terrain` …) run
the CPU drivers over arrays of points.

Where the kernels live: this module holds the SDF grids, the terrain composition
(:data:`eval_terrain_point`), the CPU drivers and the numpy API; the analytic shapes are in
:mod:`systems.terrain.shapes`, fBm noise and seeded rocks in :mod:`systems.terrain.noise`, the
polyhedral rocks and their broadphase in :mod:`systems.terrain.rocks` (their kernels are
importable from here too).
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange

from components.terrain import AnalyticShape, SDFGrid
from ecs.component import record
from ecs.errors import InputError
from ecs.geometry import normalize3
from ecs.kernels import FASTMATH, cpu_parallel, dual
from systems.terrain.noise import (_fbm, _psr, eval_fbm, eval_psr, periodic_trilinear, psr_tiling, value_noise,
                                   wrap)
from systems.terrain.rocks import (REGION_A, REGION_AB, REGION_B, REGION_BC, REGION_C, REGION_CA, REGION_FACE,
                                   _convex, _rocks, _rocks_brute, closest_point_triangle, convex_distance,
                                   eval_rocks, eval_rocks_brute)
from systems.terrain.shapes import (_c_ellipsoid_closest, _shape, ellipse_closest, ellipsoid_closest,
                                    ellipsoid_closest_sorted, ellipsoid_root, eval_shape, pick3, sd_box,
                                    sd_capsule, sd_ellipsoid, sd_primitive, sd_sphere, sd_torus)

__all__ = [
    "REGION_A", "REGION_AB", "REGION_B", "REGION_BC", "REGION_C", "REGION_CA", "REGION_FACE",
    "closest_point_triangle", "convex_distance", "ellipsoid_closest", "eval_fbm", "eval_psr",
    "eval_shape", "eval_terrain", "eval_terrain_point", "project_to_surface_grid", "sample_sdf_grid",
    "sample_sdf_grid_full", "sdf_grid_normal", "terrain_args", "TerrainArgs",
    # numpy wrappers
    "eval_rocks", "rock_args",
    "sample_grid", "sample_grid_hessian", "grid_normals", "surface_points", "eval_shape_points",
    "ellipsoid_closest_points", "fbm_points", "psr_points", "convex_distance_points", "rock_points",
    "rocks_brute_points",
]


# ==================================================================================================
# SDF grid (eqs 2.16–2.21)
# ==================================================================================================


def _sdf_grid_cell(values, ox, oy, oz, hx, hy, hz, x, y, z):
    """The trilinear interpolant at the nearest point p of the grid box to (x, y, z) [m] (outside
    the box the samplers continue the value as d(p) + |x - p|): x - p and its length (0 inside),
    p's coordinates in its cell ``(tx, ty, tz)`` ∈ [0, 1]³ (eq 2.16), the value d(p) [m] (eq 2.17),
    the gradient there (eq 2.19) and the blend's coefficients k₄ … k₇ [m] that the Hessian
    (eq 2.20) needs.

    Returns ``(ex, ey, ez, e, tx, ty, tz, d, gx, gy, gz, k4, k5, k6, k7)``."""
    nx = values.shape[0]
    ny = values.shape[1]
    nz = values.shape[2]
    px = min(max(x, ox), ox + hx * (nx - 1))
    py = min(max(y, oy), oy + hy * (ny - 1))
    pz = min(max(z, oz), oz + hz * (nz - 1))
    fx = (px - ox) / hx
    fy = (py - oy) / hy
    fz = (pz - oz) / hz
    i = int(math.floor(fx))
    j = int(math.floor(fy))
    k = int(math.floor(fz))
    i = min(max(i, 0), nx - 2)
    j = min(max(j, 0), ny - 2)
    k = min(max(k, 0), nz - 2)
    tx = fx - i  # eq 2.16: x̂, ŷ, ẑ in [0, 1]
    ty = fy - j
    tz = fz - k
    # the blend of systems.terrain.noise.trilinear_cell, written out: calling it here added 192 B of
    # spill stores to the GPU contact kernel (ptxas sm_90, deploy-cube), where this sampler is hot
    d000 = values[i, j, k]
    d100 = values[i + 1, j, k]
    d010 = values[i, j + 1, k]
    d001 = values[i, j, k + 1]
    d110 = values[i + 1, j + 1, k]
    d011 = values[i, j + 1, k + 1]
    d101 = values[i + 1, j, k + 1]
    d111 = values[i + 1, j + 1, k + 1]
    k0 = d000  # eq 2.18
    k1 = d100 - d000
    k2 = d010 - d000
    k3 = d001 - d000
    k4 = d000 - d100 - d010 + d110
    k5 = d000 - d010 - d001 + d011
    k6 = d000 - d100 - d001 + d101
    k7 = -d000 + d100 + d010 + d001 - d110 - d011 - d101 + d111
    d = k0 + k1 * tx + k2 * ty + k3 * tz + k4 * tx * ty + k5 * ty * tz + k6 * tx * tz + k7 * tx * ty * tz  # eq 2.17
    gx = (k1 + k4 * ty + k6 * tz + k7 * ty * tz) / hx  # eq 2.19
    gy = (k2 + k5 * tz + k4 * tx + k7 * tx * tz) / hy
    gz = (k3 + k6 * tx + k5 * ty + k7 * tx * ty) / hz
    ex = x - px
    ey = y - py
    ez = z - pz
    e2 = ex * ex + ey * ey + ez * ez
    e = math.sqrt(e2) if e2 > 0.0 else 0.0
    return ex, ey, ez, e, tx, ty, tz, d, gx, gy, gz, k4, k5, k6, k7


sdf_grid_cell = dual(_sdf_grid_cell)
_cell = sdf_grid_cell.cpu


def _sample_sdf_grid_full(values, ox, oy, oz, hx, hy, hz, x, y, z):
    """Trilinear SDF value, gradient and Hessian at (x, y, z) [m] (eqs 2.16–2.20).

    Returns ``(d, gx, gy, gz, hxx, hyy, hzz, hxy, hxz, hyz)`` [m, 1, 1/m].
    """
    ex, ey, ez, e, tx, ty, tz, d, gx, gy, gz, k4, k5, k6, k7 = _cell(values, ox, oy, oz, hx, hy, hz, x, y, z)
    hxy = (k4 + k7 * tz) / (hx * hy)  # eq 2.20 (zero diagonal)
    hxz = (k6 + k7 * ty) / (hx * hz)
    hyz = (k5 + k7 * tx) / (hy * hz)
    hxx = 0.0
    hyy = 0.0
    hzz = 0.0
    if e > 0.0:
        d += e
        ux = ex / e
        uy = ey / e
        uz = ez / e
        # along a clamped axis d(p) does not change and |x - p| grows with unit slope u
        if ex != 0.0:
            gx = ux
            hxy = 0.0
            hxz = 0.0
        if ey != 0.0:
            gy = uy
            hxy = 0.0
            hyz = 0.0
        if ez != 0.0:
            gz = uz
            hxz = 0.0
            hyz = 0.0
        # Hessian of |x - p| over the clamped axes: (δ_ab - u_a u_b) / |x - p|
        cx = 1.0 if ex != 0.0 else 0.0
        cy = 1.0 if ey != 0.0 else 0.0
        cz = 1.0 if ez != 0.0 else 0.0
        hxx = cx * (1.0 - ux * ux) / e
        hyy = cy * (1.0 - uy * uy) / e
        hzz = cz * (1.0 - uz * uz) / e
        hxy += -cx * cy * ux * uy / e
        hxz += -cx * cz * ux * uz / e
        hyz += -cy * cz * uy * uz / e
    return d, gx, gy, gz, hxx, hyy, hzz, hxy, hxz, hyz


sample_sdf_grid_full = dual(_sample_sdf_grid_full, inline=False)
_grid_full = sample_sdf_grid_full.cpu


def _sample_sdf_grid(values, ox, oy, oz, hx, hy, hz, x, y, z):
    """Trilinear SDF value [m] and gradient (eqs 2.17, 2.19): ``(d, gx, gy, gz)``, the first four
    numbers of :data:`sample_sdf_grid_full` to the bit, without the Hessian's arithmetic (the
    clearance and active-set queries, most of a deployment's, need none: 31.0 against 35.5 ns a query)."""
    ex, ey, ez, e, _tx, _ty, _tz, d, gx, gy, gz, _k4, _k5, _k6, _k7 = _cell(values, ox, oy, oz, hx, hy, hz, x, y, z)
    if e > 0.0:
        d += e
        if ex != 0.0:           # along a clamped axis |x - p| grows with unit slope
            gx = ex / e
        if ey != 0.0:
            gy = ey / e
        if ez != 0.0:
            gz = ez / e
    return d, gx, gy, gz


sample_sdf_grid = dual(_sample_sdf_grid, inline=False)
_grid = sample_sdf_grid.cpu


def _sample_sdf_grid_value(values, ox, oy, oz, hx, hy, hz, x, y, z):
    """Trilinear SDF value [m] (eq 2.17): the first number of :data:`sample_sdf_grid` to the bit,
    without the gradient's arithmetic. A clearance, the event function of flight and of contact
    motion, asks every vertex for its distance alone."""
    _ex, _ey, _ez, e, _tx, _ty, _tz, d, _gx, _gy, _gz, _k4, _k5, _k6, _k7 = _cell(values, ox, oy, oz, hx, hy, hz,
                                                                               x, y, z)
    if e > 0.0:
        d += e
    return d


sample_sdf_grid_value = dual(_sample_sdf_grid_value, inline=False)


_norm3 = normalize3.cpu


def _sdf_grid_normal(values, ox, oy, oz, hx, hy, hz, x, y, z):
    """Unit surface normal N = ∇d/|∇d| (eq 2.21); (0, 0, 0) where the gradient vanishes."""
    d, gx, gy, gz = _grid(values, ox, oy, oz, hx, hy, hz, x, y, z)
    return _norm3(gx, gy, gz)


sdf_grid_normal = dual(_sdf_grid_normal)


def _project_to_surface_grid(values, ox, oy, oz, hx, hy, hz, x, y, z, max_iter, tol):
    """Surface crossing c* along the normal N at x: Newton on ``f(s) = d(x - s N) = 0``.

    Eq 2.13 (``c* = x - d ∇d``) is exact only for a true distance function; the interpolated field
    needs iterations (seed 004 §2.2.3). Each step is ``s += f(s) / (∇d(x - s N)·N)``; where that
    directional derivative is below 0.1 (grazing), the step falls back to ``f(s)`` (|∇d| ≈ 1).

    Returns:
        ``(cx, cy, cz, d_c)``: the point [m] and the field value there [m] (|d_c| <= tol when
        converged within ``max_iter`` steps; the caller checks).
    """
    d, gx, gy, gz = _grid(values, ox, oy, oz, hx, hy, hz, x, y, z)
    nx, ny, nz = _norm3(gx, gy, gz)
    cx = x
    cy = y
    cz = z
    for _ in range(max_iter):
        if abs(d) <= tol:
            break
        dd = gx * nx + gy * ny + gz * nz
        step = d / dd if dd > 0.1 else d
        cx -= step * nx
        cy -= step * ny
        cz -= step * nz
        d, gx, gy, gz = _grid(values, ox, oy, oz, hx, hy, hz, cx, cy, cz)
    return cx, cy, cz, d


project_to_surface_grid = dual(_project_to_surface_grid)


def _eval_terrain_point(ta, x, y, z):
    """Terrain distance [m] and gradient at (x, y, z): base (0 grid, 1 analytic) + fBm (eq 2.27) +
    seeded rocks, united (``min``) with the explicit polyhedral rocks when ``ta.rock_on``
    (:data:`eval_rocks`). ``ta``: the terrain's :data:`TerrainArgs` (:func:`terrain_args`). Without
    a rock field the rocks cost one integer test.
    """
    if ta.base_kind == 0:
        d, gx, gy, gz = _grid(ta.grid, ta.ox, ta.oy, ta.oz, ta.hx, ta.hy, ta.hz, x, y, z)
    else:
        d, gx, gy, gz = _shape(ta.nodes, x, y, z)
    if ta.fbm_octaves > 0:
        n, nx, ny, nz = _fbm(ta.lattice, ta.a0, ta.f0, ta.lacunarity, ta.gain, ta.fbm_octaves, x, y, z)
        d += n
        gx += nx
        gy += ny
        gz += nz
    if ta.psr_on != 0:
        r, rx, ry, rz = _psr(ta.texture, ta.period, ta.index, ta.index_cell, x, y, z)
        d += r
        gx += rx
        gy += ry
        gz += rz
    if ta.rock_on != 0:
        return _rocks(d, gx, gy, gz, ta.rock_vertices, ta.rock_triangles, ta.rock_spheres, ta.rock_index, x, y, z)
    return d, gx, gy, gz


eval_terrain_point = dual(_eval_terrain_point, inline=False)
_terrain = eval_terrain_point.cpu


# ==================================================================================================
# CPU drivers (hand-written prange loops: they hit numba's disk cache, docs/design.md §2)
# ==================================================================================================


@cpu_parallel
def _grid_rows(n, values, ox, oy, oz, hx, hy, hz, pts, out):
    for i in prange(n):
        r = _grid_full(values, ox, oy, oz, hx, hy, hz, pts[i, 0], pts[i, 1], pts[i, 2])
        for k in range(10):
            out[i, k] = r[k]


def _put_value_gradient(i, r, d, g):
    """``d[i], g[i] = r``: a query's result ``r = (value, gx, gy, gz)`` into the row drivers' outputs."""
    value, gx, gy, gz = r
    d[i] = value
    g[i, 0] = gx
    g[i, 1] = gy
    g[i, 2] = gz


_put = dual(_put_value_gradient).cpu


@cpu_parallel
def _grid_value_gradient_rows(n, values, ox, oy, oz, hx, hy, hz, pts, d, g):
    for i in prange(n):
        r = _grid(values, ox, oy, oz, hx, hy, hz, pts[i, 0], pts[i, 1], pts[i, 2])
        _put(i, r, d, g)


_project = project_to_surface_grid.cpu


@cpu_parallel
def _project_rows(n, values, ox, oy, oz, hx, hy, hz, pts, max_iter, tol, out):
    for i in prange(n):
        r = _project(values, ox, oy, oz, hx, hy, hz, pts[i, 0], pts[i, 1], pts[i, 2], max_iter, tol)
        for k in range(4):
            out[i, k] = r[k]


@cpu_parallel
def _shape_rows(n, nodes, pts, d, g):
    for i in prange(n):
        r = _shape(nodes, pts[i, 0], pts[i, 1], pts[i, 2])
        _put(i, r, d, g)


_ell = _c_ellipsoid_closest


@numba.njit(cache=True, fastmath=FASTMATH, parallel=True)
def eval_shape_grid(nodes, ox, oy, oz, h, out):
    """Sample an analytic shape at the nodes of a grid: ``out[i, j, k] = d(o + (i, j, k) h)``."""
    nx, ny, nz = out.shape
    for i in prange(nx):
        x = ox + i * h[0]
        for j in range(ny):
            y = oy + j * h[1]
            for k in range(nz):
                d, _, _, _ = _shape(nodes, x, y, oz + k * h[2])
                out[i, j, k] = d


@cpu_parallel
def _ellipsoid_rows(n, a, b, c, pts, out):
    for i in prange(n):
        r = _ell(a, b, c, pts[i, 0], pts[i, 1], pts[i, 2])
        for k in range(4):
            out[i, k] = r[k]


@cpu_parallel
def _fbm_rows(n, lat, a0, f0, lac, gain, octaves, pts, d, g):
    for i in prange(n):
        r = _fbm(lat, a0, f0, lac, gain, octaves, pts[i, 0], pts[i, 1], pts[i, 2])
        _put(i, r, d, g)


@cpu_parallel
def _psr_rows(n, tex, period, index, cell, pts, d, g):
    for i in prange(n):
        r = _psr(tex, period, index, cell, pts[i, 0], pts[i, 1], pts[i, 2])
        _put(i, r, d, g)


def _eval_terrain_row(i, pts, d, g, ta):
    """Row kernel: terrain distance and gradient at ``pts[i]`` into ``d[i]``, ``g[i]`` (``ta``: the
    terrain's :data:`TerrainArgs`)."""
    r = _terrain(ta, pts[i, 0], pts[i, 1], pts[i, 2])
    _put(i, r, d, g)


eval_terrain_row = dual(_eval_terrain_row, inline=False)
_terrain_row = eval_terrain_row.cpu


@cpu_parallel
def eval_terrain_rows(n, pts, d, g, ta):
    """CPU driver of :data:`eval_terrain_row` over ``n`` points."""
    for i in prange(n):
        _terrain_row(i, pts, d, g, ta)


@cpu_parallel
def _rocks_rows(n, pts, base_d, base_g, d, g, vertices, triangles, spheres, index):
    for i in prange(n):
        r = _rocks(base_d[i], base_g[i, 0], base_g[i, 1], base_g[i, 2], vertices, triangles, spheres, index,
                   pts[i, 0], pts[i, 1], pts[i, 2])
        _put(i, r, d, g)


@cpu_parallel
def _rocks_brute_rows(n, pts, base_d, base_g, d, g, vertices, triangles, tri_start):
    for i in prange(n):
        r = _rocks_brute(base_d[i], base_g[i, 0], base_g[i, 1], base_g[i, 2], vertices, triangles, tri_start,
                         pts[i, 0], pts[i, 1], pts[i, 2])
        _put(i, r, d, g)


@cpu_parallel
def _convex_rows(n, vertices, triangles, t0, t1, pts, d, g):
    for i in prange(n):
        r = _convex(vertices, triangles, t0, t1, pts[i, 0], pts[i, 1], pts[i, 2])
        _put(i, r, d, g)


# ==================================================================================================
# numpy-level API
# ==================================================================================================


def _points(points, field: str = "points") -> np.ndarray:
    try:
        p = np.ascontiguousarray(points, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(field, points, "must be an (n, 3) array of finite numbers [m]") from None
    if p.ndim == 1 and p.shape == (3,):
        p = p[None]
    if p.ndim != 2 or p.shape[1] != 3:
        raise InputError(field, f"array of shape {p.shape}", "must have shape (n, 3) [m]")
    if not np.all(np.isfinite(p)):
        raise InputError(field, f"{int(np.sum(~np.isfinite(p)))} non-finite entries", "must be finite [m]")
    return p


def _grid_args(grid):
    o, h = grid.origin, grid.spacing
    return grid.values, float(o[0]), float(o[1]), float(o[2]), float(h[0]), float(h[1]), float(h[2])


def sample_grid(grid, points, *, parallel: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Trilinear SDF value [m], shape (n,), and gradient, shape (n, 3), at ``points`` (n, 3) [m].
    ``parallel=False``: the serial build whatever ``n`` (see :func:`eval_terrain`)."""
    p = _points(points)
    d = np.empty(len(p))
    g = np.empty((len(p), 3))
    rows = _grid_value_gradient_rows if parallel else _grid_value_gradient_rows.serial
    rows(len(p), *_grid_args(grid), p, d, g)
    return d, g


def sample_grid_hessian(grid, points) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Value (n,), gradient (n, 3) and Hessian (n, 3, 3) of the trilinear SDF (eqs 2.17–2.20)."""
    p = _points(points)
    out = np.empty((len(p), 10))
    _grid_rows(len(p), *_grid_args(grid), p, out)
    H = np.empty((len(p), 3, 3))
    H[:, 0, 0], H[:, 1, 1], H[:, 2, 2] = out[:, 4], out[:, 5], out[:, 6]
    H[:, 0, 1] = H[:, 1, 0] = out[:, 7]
    H[:, 0, 2] = H[:, 2, 0] = out[:, 8]
    H[:, 1, 2] = H[:, 2, 1] = out[:, 9]
    return out[:, 0].copy(), out[:, 1:4].copy(), H


def grid_normals(grid, points) -> np.ndarray:
    """Unit normals N = ∇d/|∇d| (eq 2.21), shape (n, 3); zero rows where ∇d = 0."""
    _, g = sample_grid(grid, points)
    n = np.linalg.norm(g, axis=1, keepdims=True)
    return np.divide(g, n, out=np.zeros_like(g), where=n > 0)


def surface_points(grid, points, *, max_iter: int = 16, tol: float = 1e-10) -> tuple[np.ndarray, np.ndarray]:
    """Surface crossings along the normal at each point (:data:`project_to_surface_grid`).

    Returns:
        ``(c, d_c)``: points (n, 3) [m] and the field value there (n,) [m]; |d_c| <= tol where
        the iteration converged.
    """
    p = _points(points)
    if int(max_iter) != max_iter or max_iter < 1:
        raise InputError("max_iter", max_iter, "must be an integer >= 1")
    if not (tol > 0 and math.isfinite(tol)):
        raise InputError("tol", tol, "must be a finite number > 0 [m]")
    out = np.empty((len(p), 4))
    _project_rows(len(p), *_grid_args(grid), p, int(max_iter), float(tol), out)
    return out[:, :3].copy(), out[:, 3].copy()


def eval_shape_points(shape, points) -> tuple[np.ndarray, np.ndarray]:
    """Signed distance (n,) [m] and gradient (n, 3) of an AnalyticShape at ``points``."""
    p = _points(points)
    d = np.empty(len(p))
    g = np.empty((len(p), 3))
    _shape_rows(len(p), shape.nodes, p, d, g)
    return d, g


def ellipsoid_closest_points(semi_axes, points) -> tuple[np.ndarray, np.ndarray]:
    """Closest points (n, 3) on the origin-centred ellipsoid and an inside flag (n,) bool."""
    a = np.asarray(semi_axes, dtype=np.float64)
    if a.shape != (3,) or not np.all(a > 0) or not np.all(np.isfinite(a)):
        raise InputError("semi_axes", semi_axes, "must be 3 finite numbers > 0 [m]")
    p = _points(points)
    out = np.empty((len(p), 4))
    _ellipsoid_rows(len(p), float(a[0]), float(a[1]), float(a[2]), p, out)
    return out[:, :3].copy(), out[:, 3] > 0


def fbm_points(noise, points) -> tuple[np.ndarray, np.ndarray]:
    """fBm noise (n,) [m] and gradient (n, 3) of an FBMNoise at ``points``."""
    p = _points(points)
    d = np.empty(len(p))
    g = np.empty((len(p), 3))
    _fbm_rows(len(p), noise.lattice, float(noise.amplitude), float(noise.frequency), float(noise.lacunarity),
              float(noise.gain), int(noise.octaves), p, d, g)
    return d, g


def psr_points(psr, points) -> tuple[np.ndarray, np.ndarray]:
    """Seeded-rock field (n,) [m] (<= 0) and gradient (n, 3) of a PSRField at ``points``."""
    p = _points(points)
    d = np.empty(len(p))
    g = np.empty((len(p), 3))
    _psr_rows(len(p), psr.texture, float(psr.period), psr.index, float(psr.index_cell), p, d, g)
    return d, g


def convex_distance_points(shapes, k: int, points) -> tuple[np.ndarray, np.ndarray]:
    """Signed distance (n,) and gradient (n, 3) to polyhedron ``k`` of a ConvexPolyhedra (its frame)."""
    p = _points(points)
    if not (0 <= int(k) < shapes.count):
        raise InputError("k", k, f"must index one of the {shapes.count} polyhedra")
    d = np.empty(len(p))
    g = np.empty((len(p), 3))
    _convex_rows(len(p), shapes.vertices, shapes.triangles, int(shapes.tri_start[k]), int(shapes.tri_start[k + 1]),
                 p, d, g)
    return d, g


_DUMMY3 = np.zeros((2, 2, 2))
_DUMMY_NODES = np.zeros((1, 16))
#: Rock-field arguments of a terrain without explicit rocks (one compiled signature for all).
_NO_ROCKS = (0, np.zeros((1, 3)), np.zeros((1, 3), np.int64), np.zeros((3, 4)), np.zeros(2, np.int64))


def rock_args(rocks) -> tuple:
    """``(rock_on, vertices, triangles, kernel_spheres, kernel_index)`` of a
    :class:`components.terrain.RockField` (or of none: ``rock_on = 0`` and small dummies)."""
    if rocks is None or rocks.count == 0:
        return _NO_ROCKS
    return (1, rocks.vertices, rocks.triangles, rocks.kernel_spheres, rocks.kernel_index)


#: The kernel arguments of a :class:`components.terrain.TerrainSDF` (:func:`terrain_args`), read by
#: name in the kernels that take them whole (:data:`eval_terrain_point`, :mod:`systems.deployment.geometry`);
#: unused parts are small dummy arrays, so one compiled signature serves every terrain.
TerrainArgs = record("TerrainArgs", __name__, {
    "base_kind": "0: an SDF grid, 1: analytic shapes (components.terrain.AnalyticShape)",
    "grid": "the grid's node values [m], (nx, ny, nz)",
    "ox": "the grid's origin, x [m]", "oy": "y [m]", "oz": "z [m]",
    "hx": "the grid's node spacing, x [m]", "hy": "y [m]", "hz": "z [m]",
    "nodes": "the analytic shapes' node table (components.terrain.AnalyticShape.nodes)",
    "fbm_octaves": "fBm octaves (0: no noise; eqs 2.26-2.27)",
    "lattice": "fBm value-noise lattice [1], (P, P, P)",
    "a0": "fBm amplitude [m]", "f0": "fBm base frequency [1/m]", "lacunarity": "fBm lacunarity [1]",
    "gain": "fBm gain per octave [1]",
    "psr_on": "1: the seeded rock texture is on (eqs 2.34-2.39)",
    "texture": "rock texture [m], (N, N, N)", "period": "texture period [m]",
    "index": "rock texture tiling index", "index_cell": "its cell size [m]",
    "rock_on": "1: explicit polyhedral rocks (components.terrain.RockField; rock_args)",
    "rock_vertices": "rock vertices [m], (n, 3)", "rock_triangles": "rock triangles, (m, 3) int64",
    "rock_spheres": "the rocks' bounding spheres and broadphase cells (RockField.kernel_spheres)",
    "rock_index": "the rock broadphase's cell index (RockField.kernel_index)",
}, "The terrain as one kernel argument (systems.terrain.sdf.terrain_args).")


def terrain_args(terrain) -> "TerrainArgs":
    """The kernel arguments of a :class:`components.terrain.TerrainSDF` for :data:`eval_terrain_point`,
    as a :data:`TerrainArgs` record (25 fields; the last five are :func:`rock_args`). A contact
    system passes it whole to its own kernel."""
    base = terrain.base
    if isinstance(base, SDFGrid):
        kind, grid, o, h, nodes = 0, base.values, base.origin, base.spacing, _DUMMY_NODES
    elif isinstance(base, AnalyticShape):
        kind, grid, o, h, nodes = 1, _DUMMY3, np.zeros(3), np.ones(3), base.nodes
    else:
        raise InputError("terrain.base", type(base).__name__, "must be an SDFGrid or an AnalyticShape")
    f = terrain.fbm
    if f is None:
        fargs = (0, _DUMMY3, 0.0, 1.0, 2.0, 0.5)
    else:
        fargs = (int(f.octaves), f.lattice, float(f.amplitude), float(f.frequency), float(f.lacunarity), float(f.gain))
    r = terrain.psr
    rargs = (0, _DUMMY3, 1.0, _DUMMY3, 1.0) if r is None else (1, r.texture, float(r.period), r.index,
                                                                float(r.index_cell))
    return TerrainArgs(kind, grid, float(o[0]), float(o[1]), float(o[2]), float(h[0]), float(h[1]), float(h[2]),
                       nodes, *fargs, *rargs, *rock_args(getattr(terrain, "rocks", None)))


def is_bare_grid(terrain) -> bool:
    """The terrain is an SDF grid alone (no fBm, seeded rock texture or rock field): its distance
    is the grid's trilinear sample, and kernels that know it need not compile the general terrain
    evaluation (:func:`ecs.terms.specialise`; the row kernels test the same on
    :func:`terrain_args`' tuple)."""
    rocks = getattr(terrain, "rocks", None)
    return (isinstance(terrain.base, SDFGrid) and terrain.fbm is None and terrain.psr is None
            and (rocks is None or rocks.count == 0))


def eval_terrain(terrain, points, *, parallel: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Terrain distance (n,) [m] and gradient (n, 3) at ``points`` (n, 3) [m] (CPU). A bare grid is
    sampled directly (:func:`is_bare_grid`): the general evaluator is compiled only for terrains
    that need it (4.7 s of a cold start, measured).

    ``parallel=False`` runs the serial build whatever the number of points: for a one-off query
    in a process that has not used a parallel kernel yet, whose first launch costs ~0.4-0.7 s
    (numba loads its parallel lowering's registries, OpenMP starts its threads; measured on
    deploy-cube's 4,096 release points, which the serial grid sampler checks in < 1 ms)."""
    if is_bare_grid(terrain):
        return sample_grid(terrain.base, points, parallel=parallel)
    p = _points(points)
    d = np.empty(len(p))
    g = np.empty((len(p), 3))
    rows = eval_terrain_rows if parallel else eval_terrain_rows.serial
    rows(len(p), p, d, g, terrain_args(terrain))
    return d, g


def _base_values(points, base_distance, base_gradient):
    n = len(points)
    bd = np.full(n, np.inf) if base_distance is None else np.ascontiguousarray(
        np.broadcast_to(np.asarray(base_distance, dtype=np.float64), (n,)))
    bg = np.zeros((n, 3)) if base_gradient is None else np.ascontiguousarray(
        np.broadcast_to(np.asarray(base_gradient, dtype=np.float64), (n, 3)))
    return bd, bg


def rock_points(rocks, points, base_distance=None, base_gradient=None) -> tuple[np.ndarray, np.ndarray]:
    """Union of a base value (default +inf: the rocks alone) with a RockField through the broadphase
    (:data:`eval_rocks`): distance (n,) [m] and gradient (n, 3) at ``points`` (n, 3) [m]."""
    p = _points(points)
    bd, bg = _base_values(p, base_distance, base_gradient)
    d = np.empty(len(p))
    g = np.empty((len(p), 3))
    if rocks.count == 0:
        return bd.copy(), bg.copy()
    _rocks_rows(len(p), p, bd, bg, d, g, *rock_args(rocks)[1:])
    return d, g


def rocks_brute_points(rocks, points, base_distance=None, base_gradient=None) -> tuple[np.ndarray, np.ndarray]:
    """Reference for :func:`rock_points`: the minimum over every rock, no broadphase (exact everywhere)."""
    p = _points(points)
    bd, bg = _base_values(p, base_distance, base_gradient)
    d = np.empty(len(p))
    g = np.empty((len(p), 3))
    _rocks_brute_rows(len(p), p, bd, bg, d, g, rocks.vertices, rocks.triangles, rocks.tri_start)
    return d, g
