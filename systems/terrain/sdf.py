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
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange


from components.terrain import AnalyticShape, SDFGrid
from ecs.errors import InputError
from ecs.kernels import FASTMATH, cpu_parallel, dual
from ecs.attitude import quat_rotate, quat_rotate_inverse
from ecs.geometry import face_plane
from systems.terrain.broadphase import cell_hash

__all__ = [
    "REGION_A", "REGION_AB", "REGION_B", "REGION_BC", "REGION_C", "REGION_CA", "REGION_FACE",
    "closest_point_triangle", "convex_distance", "ellipsoid_closest", "eval_fbm", "eval_psr",
    "eval_shape", "eval_terrain", "eval_terrain_point", "project_to_surface_grid", "sample_sdf_grid",
    "sample_sdf_grid_full", "sdf_grid_normal", "terrain_args",
    # numpy wrappers
    "eval_rocks", "rock_args",
    "sample_grid", "sample_grid_hessian", "grid_normals", "surface_points", "eval_shape_points",
    "ellipsoid_closest_points", "fbm_points", "psr_points", "convex_distance_points", "rock_points",
    "rocks_brute_points",
]

_rot = quat_rotate.cpu
_rot_inv = quat_rotate_inverse.cpu
_hash = cell_hash.cpu


#: Voronoi regions of a triangle's closest point (face interior, vertices, edges).
REGION_FACE, REGION_A, REGION_B, REGION_C, REGION_AB, REGION_BC, REGION_CA = 0, 1, 2, 3, 4, 5, 6


# ==================================================================================================
# SDF grid (eqs 2.16–2.21)
# ==================================================================================================


def _sample_sdf_grid_full(values, ox, oy, oz, hx, hy, hz, x, y, z):
    """Trilinear SDF value, gradient and Hessian at (x, y, z) [m] (eqs 2.16–2.20).

    Returns ``(d, gx, gy, gz, hxx, hyy, hzz, hxy, hxz, hyz)`` [m, 1, 1/m].
    """
    nx = values.shape[0]
    ny = values.shape[1]
    nz = values.shape[2]
    # nearest point of the grid box (outside: continuation d(p) + |x - p|)
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
    hxy = (k4 + k7 * tz) / (hx * hy)  # eq 2.20 (zero diagonal)
    hxz = (k6 + k7 * ty) / (hx * hz)
    hyz = (k5 + k7 * tx) / (hy * hz)
    hxx = 0.0
    hyy = 0.0
    hzz = 0.0
    ex = x - px
    ey = y - py
    ez = z - pz
    e2 = ex * ex + ey * ey + ez * ez
    if e2 > 0.0:
        e = math.sqrt(e2)
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
    """Trilinear SDF value [m] and gradient (eqs 2.17, 2.19): ``(d, gx, gy, gz)``."""
    r = _grid_full(values, ox, oy, oz, hx, hy, hz, x, y, z)
    return r[0], r[1], r[2], r[3]


sample_sdf_grid = dual(_sample_sdf_grid, inline=False)
_grid = sample_sdf_grid.cpu


def _normalize3(x, y, z):
    n = math.sqrt(x * x + y * y + z * z)
    if n > 0.0:
        return x / n, y / n, z / n
    return 0.0, 0.0, 0.0


normalize3 = dual(_normalize3)
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


# ==================================================================================================
# analytic primitives (each in its own frame)
# ==================================================================================================


def _sd_sphere(r, x, y, z):
    """Sphere of radius r (eqs 2.14–2.15): ``(d, gx, gy, gz)``."""
    L = math.sqrt(x * x + y * y + z * z)
    if L > 0.0:
        return L - r, x / L, y / L, z / L
    return -r, 0.0, 0.0, 1.0


sd_sphere = dual(_sd_sphere)
_c_sd_sphere = sd_sphere.cpu


def _sd_box(ax, ay, az, x, y, z):
    """Box of half extents (ax, ay, az): exact signed distance and gradient."""
    qx = abs(x) - ax
    qy = abs(y) - ay
    qz = abs(z) - az
    sx = 1.0 if x >= 0.0 else -1.0
    sy = 1.0 if y >= 0.0 else -1.0
    sz = 1.0 if z >= 0.0 else -1.0
    mx = max(qx, 0.0)
    my = max(qy, 0.0)
    mz = max(qz, 0.0)
    lo = math.sqrt(mx * mx + my * my + mz * mz)
    if lo > 0.0:
        return lo, sx * mx / lo, sy * my / lo, sz * mz / lo
    # inside or on the surface: the nearest face is the axis of the largest q
    if qx >= qy and qx >= qz:
        return qx, sx, 0.0, 0.0
    if qy >= qz:
        return qy, 0.0, sy, 0.0
    return qz, 0.0, 0.0, sz


sd_box = dual(_sd_box)
_c_sd_box = sd_box.cpu


def _sd_capsule(hl, r, x, y, z):
    """Capsule around the segment z in [-hl, hl], radius r."""
    zc = min(max(z, -hl), hl)
    vz = z - zc
    L = math.sqrt(x * x + y * y + vz * vz)
    if L > 0.0:
        return L - r, x / L, y / L, vz / L
    return -r, 1.0, 0.0, 0.0


sd_capsule = dual(_sd_capsule)
_c_sd_capsule = sd_capsule.cpu


def _sd_torus(R, r, x, y, z):
    """Torus about the z axis: tube radius r around the circle of radius R in z = 0."""
    q = math.sqrt(x * x + y * y)
    if q > 0.0:
        cx = R * x / q
        cy = R * y / q
    else:  # on the axis every circle point is equally near: pick (R, 0, 0)
        cx = R
        cy = 0.0
    vx = x - cx
    vy = y - cy
    L = math.sqrt(vx * vx + vy * vy + z * z)
    if L > 0.0:
        return L - r, vx / L, vy / L, z / L
    return -r, 1.0, 0.0, 0.0


sd_torus = dual(_sd_torus)
_c_sd_torus = sd_torus.cpu


def _ellipsoid_root(n0, r0, n1, r1, z2, g):
    """Largest root u > 0 of ``(n0/(u+r0-1))² + (n1/(u+r1-1))² + (z2/u)² = 1`` (r0 >= r1 >= 1, z2 > 0).

    Eberly's root ``s`` shifted by one (``u = s + 1``), so that a tiny z2 (a point a rounding error off
    a symmetry plane) never cancels to ``s + 1 = 0``. F is convex and decreasing on (0, ∞); the root is
    bracketed by u0 = z2 (F >= 0: the last term alone is 1) and u1 = |(n0, n1, z2)| (F <= 0) when the
    point is outside, 1 when inside (F(1) = g < 0). Newton from the left end of a convex decreasing
    function never overshoots; rounding is guarded by keeping the bracket and bisecting whenever a
    step leaves it.
    """
    u0 = z2
    if g < 0.0:
        u1 = 1.0
    else:
        u1 = math.sqrt(n0 * n0 + n1 * n1 + z2 * z2)
    q0 = r0 - 1.0
    q1 = r1 - 1.0
    u = u0
    for _ in range(200):
        a0 = n0 / (u + q0)
        a1 = n1 / (u + q1)
        a2 = z2 / u
        f = a0 * a0 + a1 * a1 + a2 * a2 - 1.0
        if f > 0.0:
            u0 = u
        elif f < 0.0:
            u1 = u
        else:
            return u
        df = -2.0 * (a0 * a0 / (u + q0) + a1 * a1 / (u + q1) + a2 * a2 / u)
        un = u - f / df if df < 0.0 else 0.5 * (u0 + u1)
        if not (un > u0 and un < u1):
            un = 0.5 * (u0 + u1)
        if un == u or un == u0 or un == u1:
            return un
        u = un
    return u


ellipsoid_root = dual(_ellipsoid_root, inline=False)
_c_ellipsoid_root = ellipsoid_root.cpu


def _ellipse_closest(e0, e1, y0, y1):
    """Closest point of the ellipse (x0/e0)² + (x1/e1)² = 1 to (y0, y1), e0 >= e1 > 0, y >= 0."""
    if y1 > 0.0:
        if y0 > 0.0:
            z0 = y0 / e0
            z1 = y1 / e1
            g = z0 * z0 + z1 * z1 - 1.0
            if g != 0.0:
                r0 = (e0 / e1) * (e0 / e1)
                u = _c_ellipsoid_root(r0 * z0, r0, 0.0, 1.0, z1, g)
                return r0 * y0 / (u + (r0 - 1.0)), y1 / u
            return y0, y1
        return 0.0, e1
    numer0 = e0 * y0
    denom0 = e0 * e0 - e1 * e1
    if numer0 < denom0:
        xde0 = numer0 / denom0
        return e0 * xde0, e1 * math.sqrt(max(1.0 - xde0 * xde0, 0.0))
    return e0, 0.0


ellipse_closest = dual(_ellipse_closest)
_c_ellipse_closest = ellipse_closest.cpu


def _ellipsoid_closest_sorted(e0, e1, e2, y0, y1, y2):
    """Closest ellipsoid point for e0 >= e1 >= e2 > 0 and y >= 0 (Eberly 2013, robust cases)."""
    if y2 > 0.0:
        if y1 > 0.0:
            if y0 > 0.0:
                z0 = y0 / e0
                z1 = y1 / e1
                z2 = y2 / e2
                g = z0 * z0 + z1 * z1 + z2 * z2 - 1.0
                if g != 0.0:
                    r0 = (e0 / e2) * (e0 / e2)
                    r1 = (e1 / e2) * (e1 / e2)
                    u = _c_ellipsoid_root(r0 * z0, r0, r1 * z1, r1, z2, g)
                    return r0 * y0 / (u + (r0 - 1.0)), r1 * y1 / (u + (r1 - 1.0)), y2 / u
                return y0, y1, y2
            x1, x2 = _c_ellipse_closest(e1, e2, y1, y2)
            return 0.0, x1, x2
        if y0 > 0.0:
            x0, x2 = _c_ellipse_closest(e0, e2, y0, y2)
            return x0, 0.0, x2
        return 0.0, 0.0, e2
    denom0 = e0 * e0 - e2 * e2
    denom1 = e1 * e1 - e2 * e2
    numer0 = e0 * y0
    numer1 = e1 * y1
    if numer0 < denom0 and numer1 < denom1:
        xde0 = numer0 / denom0
        xde1 = numer1 / denom1
        discr = 1.0 - xde0 * xde0 - xde1 * xde1
        if discr > 0.0:
            return e0 * xde0, e1 * xde1, e2 * math.sqrt(discr)
    x0, x1 = _c_ellipse_closest(e0, e1, y0, y1)
    return x0, x1, 0.0


ellipsoid_closest_sorted = dual(_ellipsoid_closest_sorted)
_c_ellipsoid_closest_sorted = ellipsoid_closest_sorted.cpu


def _pick3(i, a, b, c):
    if i == 0:
        return a
    if i == 1:
        return b
    return c


pick3 = dual(_pick3)
_c_pick3 = pick3.cpu


def _ellipsoid_closest(a, b, c, x, y, z):
    """Closest point of the ellipsoid (x/a)² + (y/b)² + (z/c)² = 1 to (x, y, z), and the sign.

    Returns ``(cx, cy, cz, inside)`` with ``inside`` = 1.0 inside, 0.0 on/outside.
    """
    # sort the semi-axes descending, remembering where each went
    i0 = 0
    i1 = 1
    i2 = 2
    e0 = a
    e1 = b
    e2 = c
    if e0 < e1:
        e0, e1 = e1, e0
        i0, i1 = i1, i0
    if e1 < e2:
        e1, e2 = e2, e1
        i1, i2 = i2, i1
    if e0 < e1:
        e0, e1 = e1, e0
        i0, i1 = i1, i0
    y0 = abs(_c_pick3(i0, x, y, z))
    y1 = abs(_c_pick3(i1, x, y, z))
    y2 = abs(_c_pick3(i2, x, y, z))
    x0, x1, x2 = _c_ellipsoid_closest_sorted(e0, e1, e2, y0, y1, y2)
    # back to the original axes and octant
    ax = x0 if i0 == 0 else (x1 if i1 == 0 else x2)
    ay = x0 if i0 == 1 else (x1 if i1 == 1 else x2)
    az = x0 if i0 == 2 else (x1 if i1 == 2 else x2)
    cx = ax if x >= 0.0 else -ax
    cy = ay if y >= 0.0 else -ay
    cz = az if z >= 0.0 else -az
    g = (x / a) * (x / a) + (y / b) * (y / b) + (z / c) * (z / c) - 1.0
    return cx, cy, cz, 1.0 if g < 0.0 else 0.0


ellipsoid_closest = dual(_ellipsoid_closest, inline=False)
_c_ellipsoid_closest = ellipsoid_closest.cpu


def _sd_ellipsoid(a, b, c, x, y, z):
    """Exact signed distance to the ellipsoid; the gradient is the outward normal at the closest point."""
    cx, cy, cz, inside = _c_ellipsoid_closest(a, b, c, x, y, z)
    dx = x - cx
    dy = y - cy
    dz = z - cz
    L = math.sqrt(dx * dx + dy * dy + dz * dz)
    nx, ny, nz = _norm3(cx / (a * a), cy / (b * b), cz / (c * c))
    if inside > 0.0:
        return -L, nx, ny, nz
    return L, nx, ny, nz


sd_ellipsoid = dual(_sd_ellipsoid)
_c_sd_ellipsoid = sd_ellipsoid.cpu


def _sd_primitive(kind, p0, p1, p2, x, y, z):
    """Dispatch on :class:`components.terrain.Primitive` (local frame)."""
    if kind == 0:
        return _c_sd_sphere(p0, x, y, z)
    if kind == 1:
        return z, 0.0, 0.0, 1.0
    if kind == 2:
        return _c_sd_box(p0, p1, p2, x, y, z)
    if kind == 3:
        return _c_sd_capsule(p0, p1, x, y, z)
    if kind == 4:
        return _c_sd_ellipsoid(p0, p1, p2, x, y, z)
    return _c_sd_torus(p0, p1, x, y, z)


sd_primitive = dual(_sd_primitive)
_c_sd_primitive = sd_primitive.cpu


def _eval_shape(nodes, x, y, z):
    """Signed distance [m] and gradient of an :class:`components.terrain.AnalyticShape` (left fold).

    Returns ``(d, gx, gy, gz)``.
    """
    d = 0.0
    gx = 0.0
    gy = 0.0
    gz = 0.0
    for i in range(nodes.shape[0]):
        kind = int(nodes[i, 0])
        op = int(nodes[i, 1])
        k = nodes[i, 2]
        q0 = nodes[i, 6]
        q1 = nodes[i, 7]
        q2 = nodes[i, 8]
        q3 = nodes[i, 9]
        lx, ly, lz = _rot_inv(q0, q1, q2, q3, x - nodes[i, 3], y - nodes[i, 4], z - nodes[i, 5])
        di, ax, ay, az = _c_sd_primitive(kind, nodes[i, 10], nodes[i, 11], nodes[i, 12], lx, ly, lz)
        bx, by, bz = _rot(q0, q1, q2, q3, ax, ay, az)
        if op == 0:
            d = di
            gx = bx
            gy = by
            gz = bz
        elif op == 1:
            if di < d:
                d = di
                gx = bx
                gy = by
                gz = bz
        elif op == 2:
            if di > d:
                d = di
                gx = bx
                gy = by
                gz = bz
        elif op == 3:
            # polynomial smooth minimum of a = d (so far) and b = di; ∇ = mix(∇b, ∇a, h) exactly
            h = min(max(0.5 + 0.5 * (di - d) / k, 0.0), 1.0)
            d = di + h * (d - di) - k * h * (1.0 - h)
            gx = bx + h * (gx - bx)
            gy = by + h * (gy - by)
            gz = bz + h * (gz - bz)
        else:
            if -di > d:
                d = -di
                gx = -bx
                gy = -by
                gz = -bz
    return d, gx, gy, gz


eval_shape = dual(_eval_shape, inline=False)
_shape = eval_shape.cpu


# ==================================================================================================
# fBm value noise (eqs 2.24–2.32) and procedurally seeded rocks (eqs 2.34–2.39)
# ==================================================================================================


def _wrap(i, n):
    """``i mod n`` in [0, n) for any integer-valued float i (negative too)."""
    return int(i - n * math.floor(i / n))


wrap = dual(_wrap)
_c_wrap = wrap.cpu


def _value_noise(lat, u, v, w):
    """Quintic-smoothed trilinear value noise of a periodic lattice (eq 2.24 in 3-D).

    Coordinates in lattice cells. Returns ``(value, du, dv, dw)`` (derivatives per cell).
    """
    P = lat.shape[0]
    fu = math.floor(u)
    fv = math.floor(v)
    fw = math.floor(w)
    tu = u - fu
    tv = v - fv
    tw = w - fw
    i0 = _c_wrap(fu, P)
    j0 = _c_wrap(fv, P)
    k0 = _c_wrap(fw, P)
    i1 = i0 + 1 if i0 + 1 < P else 0
    j1 = j0 + 1 if j0 + 1 < P else 0
    k1 = k0 + 1 if k0 + 1 < P else 0
    # quintic smoother t_q = t³ (t (6t - 15) + 10) and its derivative 30 t² (t - 1)²
    su = tu * tu * tu * (tu * (6.0 * tu - 15.0) + 10.0)
    sv = tv * tv * tv * (tv * (6.0 * tv - 15.0) + 10.0)
    sw = tw * tw * tw * (tw * (6.0 * tw - 15.0) + 10.0)
    du = 30.0 * tu * tu * (tu - 1.0) * (tu - 1.0)
    dv = 30.0 * tv * tv * (tv - 1.0) * (tv - 1.0)
    dw = 30.0 * tw * tw * (tw - 1.0) * (tw - 1.0)
    a = lat[i0, j0, k0]
    b = lat[i1, j0, k0]
    c = lat[i0, j1, k0]
    d = lat[i1, j1, k0]
    e = lat[i0, j0, k1]
    f = lat[i1, j0, k1]
    g = lat[i0, j1, k1]
    h = lat[i1, j1, k1]
    k1_ = b - a
    k2_ = c - a
    k3_ = e - a
    k4_ = a - b - c + d
    k5_ = a - c - e + g
    k6_ = a - b - e + f
    k7_ = -a + b + c + e - d - g - f + h
    val = a + k1_ * su + k2_ * sv + k3_ * sw + k4_ * su * sv + k5_ * sv * sw + k6_ * su * sw + k7_ * su * sv * sw
    gu = du * (k1_ + k4_ * sv + k6_ * sw + k7_ * sv * sw)
    gv = dv * (k2_ + k5_ * sw + k4_ * su + k7_ * su * sw)
    gw = dw * (k3_ + k6_ * su + k5_ * sv + k7_ * su * sv)
    return val, gu, gv, gw


value_noise = dual(_value_noise)
_c_value_noise = value_noise.cpu


def _eval_fbm(lat, a0, f0, lacunarity, gain, octaves, x, y, z):
    """fBm noise ``Σ_{i<octaves} A_i u(f_i x)`` [m] and its gradient (eqs 2.26–2.27).

    ``A_i = a0 gain^i`` (gain = L^{-H}), ``f_i = f0 L^i``; ``u`` is :func:`_value_noise`.
    """
    n = 0.0
    gx = 0.0
    gy = 0.0
    gz = 0.0
    amp = a0
    freq = f0
    for _ in range(octaves):
        v, du, dv, dw = _c_value_noise(lat, freq * x, freq * y, freq * z)
        n += amp * v
        gx += amp * freq * du
        gy += amp * freq * dv
        gz += amp * freq * dw
        amp *= gain
        freq *= lacunarity
    return n, gx, gy, gz


eval_fbm = dual(_eval_fbm)
_fbm = eval_fbm.cpu


def _periodic_trilinear(tex, u, v, w):
    """Plain trilinear sample of a periodic texture at (u, v, w) [texture nodes]; value + gradient."""
    N = tex.shape[0]
    fu = math.floor(u)
    fv = math.floor(v)
    fw = math.floor(w)
    tu = u - fu
    tv = v - fv
    tw = w - fw
    i0 = _c_wrap(fu, N)
    j0 = _c_wrap(fv, N)
    k0 = _c_wrap(fw, N)
    i1 = i0 + 1 if i0 + 1 < N else 0
    j1 = j0 + 1 if j0 + 1 < N else 0
    k1 = k0 + 1 if k0 + 1 < N else 0
    a = tex[i0, j0, k0]
    b = tex[i1, j0, k0]
    c = tex[i0, j1, k0]
    d = tex[i1, j1, k0]
    e = tex[i0, j0, k1]
    f = tex[i1, j0, k1]
    g = tex[i0, j1, k1]
    h = tex[i1, j1, k1]
    c1 = b - a
    c2 = c - a
    c3 = e - a
    c4 = a - b - c + d
    c5 = a - c - e + g
    c6 = a - b - e + f
    c7 = -a + b + c + e - d - g - f + h
    val = a + c1 * tu + c2 * tv + c3 * tw + c4 * tu * tv + c5 * tv * tw + c6 * tu * tw + c7 * tu * tv * tw
    gu = c1 + c4 * tv + c6 * tw + c7 * tv * tw
    gv = c2 + c5 * tw + c4 * tu + c7 * tu * tw
    gw = c3 + c6 * tu + c5 * tv + c7 * tu * tv
    return val, gu, gv, gw


periodic_trilinear = dual(_periodic_trilinear)
_c_periodic_trilinear = periodic_trilinear.cpu


def _psr_tiling(tex, period, kf, x, y, z):
    """Texture sample of tiling k (eqs 2.38–2.39): ``T(C(k) (x/P + o_k))`` and its x-gradient."""
    c = math.cos(kf)
    s = math.sin(kf)
    ux = x / period + math.sin(3.0 * kf)
    uy = y / period + math.sin(5.0 * kf)
    uz = z / period + math.sin(7.0 * kf)
    # C(k) = C_z(k) C_x(k) = [[c, s c, s s], [-s, c c, c s], [0, -s, c]]
    vx = c * ux + s * c * uy + s * s * uz
    vy = -s * ux + c * c * uy + c * s * uz
    vz = -s * uy + c * uz
    N = tex.shape[0]
    val, gu, gv, gw = _c_periodic_trilinear(tex, vx * N, vy * N, vz * N)
    # ∂/∂x = (N / P) C(k)ᵀ ∇_v
    sc = N / period
    gx = sc * (c * gu - s * gv)
    gy = sc * (s * c * gu + c * c * gv - s * gw)
    gz = sc * (s * s * gu + c * s * gv + c * gw)
    return val, gx, gy, gz


psr_tiling = dual(_psr_tiling)
_c_psr_tiling = psr_tiling.cpu


def _eval_psr(tex, period, index, index_cell, x, y, z):
    """Procedurally seeded rocks (§2.3.3): aperiodic blend of tilings k and k + 1; value <= 0 [m]."""
    iv, iu, ivv, iw = _c_periodic_trilinear(index, x / index_cell, y / index_cell, z / index_cell)
    kf = math.floor(iv)
    c = iv - kf
    a, ax, ay, az = _c_psr_tiling(tex, period, kf, x, y, z)
    b, bx, by, bz = _c_psr_tiling(tex, period, kf + 1.0, x, y, z)
    # smoothstep(0.2, 0.8, c)
    t = min(max((c - 0.2) / 0.6, 0.0), 1.0)
    w = t * t * (3.0 - 2.0 * t)
    dw = 6.0 * t * (1.0 - t) / 0.6 if (c > 0.2 and c < 0.8) else 0.0
    d = a + w * (b - a)
    gx = ax + w * (bx - ax) + (b - a) * dw * iu / index_cell
    gy = ay + w * (by - ay) + (b - a) * dw * ivv / index_cell
    gz = az + w * (bz - az) + (b - a) * dw * iw / index_cell
    return d, gx, gy, gz


eval_psr = dual(_eval_psr, inline=False)
_psr = eval_psr.cpu


def _eval_terrain_point(base_kind, grid, ox, oy, oz, hx, hy, hz, nodes,
                        fbm_octaves, lat, a0, f0, lacunarity, gain,
                        psr_on, tex, period, index, index_cell,
                        rock_on, rock_vertices, rock_triangles, rock_spheres, rock_index, x, y, z):
    """Terrain distance [m] and gradient: base (0 grid, 1 analytic) + fBm (eq 2.27) + seeded rocks,
    united (``min``) with the explicit polyhedral rocks when ``rock_on`` (:data:`eval_rocks`).

    The argument list after ``base_kind`` is :func:`terrain_args`'s tuple; pass it whole (the rock
    arguments are :func:`rock_args`'s). Without a rock field the rocks cost one integer test.
    """
    if base_kind == 0:
        d, gx, gy, gz = _grid(grid, ox, oy, oz, hx, hy, hz, x, y, z)
    else:
        d, gx, gy, gz = _shape(nodes, x, y, z)
    if fbm_octaves > 0:
        n, nx, ny, nz = _fbm(lat, a0, f0, lacunarity, gain, fbm_octaves, x, y, z)
        d += n
        gx += nx
        gy += ny
        gz += nz
    if psr_on != 0:
        r, rx, ry, rz = _psr(tex, period, index, index_cell, x, y, z)
        d += r
        gx += rx
        gy += ry
        gz += rz
    if rock_on != 0:
        return _rocks(d, gx, gy, gz, rock_vertices, rock_triangles, rock_spheres, rock_index, x, y, z)
    return d, gx, gy, gz


eval_terrain_point = dual(_eval_terrain_point, inline=False)
_terrain = eval_terrain_point.cpu


# ==================================================================================================
# triangles and convex polyhedra
# ==================================================================================================


def _closest_point_triangle(ax, ay, az, bx, by, bz, cx, cy, cz, px, py, pz):
    """Closest point of triangle abc to p and its Voronoi region (Ericson 2005, §5.1.5).

    Returns ``(qx, qy, qz, region)`` with region one of REGION_FACE (0), REGION_A/B/C (1/2/3),
    REGION_AB/BC/CA (4/5/6).
    """
    abx = bx - ax
    aby = by - ay
    abz = bz - az
    acx = cx - ax
    acy = cy - ay
    acz = cz - az
    apx = px - ax
    apy = py - ay
    apz = pz - az
    d1 = abx * apx + aby * apy + abz * apz
    d2 = acx * apx + acy * apy + acz * apz
    if d1 <= 0.0 and d2 <= 0.0:
        return ax, ay, az, 1
    bpx = px - bx
    bpy = py - by
    bpz = pz - bz
    d3 = abx * bpx + aby * bpy + abz * bpz
    d4 = acx * bpx + acy * bpy + acz * bpz
    if d3 >= 0.0 and d4 <= d3:
        return bx, by, bz, 2
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        v = d1 / (d1 - d3)
        return ax + v * abx, ay + v * aby, az + v * abz, 4
    cpx = px - cx
    cpy = py - cy
    cpz = pz - cz
    d5 = abx * cpx + aby * cpy + abz * cpz
    d6 = acx * cpx + acy * cpy + acz * cpz
    if d6 >= 0.0 and d5 <= d6:
        return cx, cy, cz, 3
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        w = d2 / (d2 - d6)
        return ax + w * acx, ay + w * acy, az + w * acz, 6
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        return bx + w * (cx - bx), by + w * (cy - by), bz + w * (cz - bz), 5
    denom = 1.0 / (va + vb + vc)
    v = vb * denom
    w = vc * denom
    return ax + abx * v + acx * w, ay + aby * v + acy * w, az + abz * v + acz * w, 0


closest_point_triangle = dual(_closest_point_triangle)
_cpt = closest_point_triangle.cpu


_fplane = face_plane.cpu


def _convex_distance(vertices, triangles, t0, t1, x, y, z):
    """Exact signed distance [m] and gradient from (x, y, z) to the convex polyhedron made of
    ``triangles[t0:t1]`` (outward wound, indices into ``vertices``), all in the polyhedron's frame.

    Inside: the largest face-plane distance (exact for a convex solid) and that face's normal.
    Outside: the distance to the nearest point on the nearest triangle, gradient (x - q)/|x - q|;
    on the surface itself (q = x to the last bit) 0 and the outward face normal (no 0/0).
    """
    best2 = math.inf
    bx = 0.0
    by = 0.0
    bz = 0.0
    plane = -math.inf
    px = 0.0
    py = 0.0
    pz = 1.0
    for t in range(t0, t1):
        ax, ay, az, nx, ny, nz = _fplane(vertices, triangles, t)
        nx, ny, nz = _norm3(nx, ny, nz)
        s = nx * (x - ax) + ny * (y - ay) + nz * (z - az)
        if s > plane:
            plane = s
            px = nx
            py = ny
            pz = nz
        ib = triangles[t, 1]
        ic = triangles[t, 2]
        qx, qy, qz, reg = _cpt(ax, ay, az, vertices[ib, 0], vertices[ib, 1], vertices[ib, 2],
                               vertices[ic, 0], vertices[ic, 1], vertices[ic, 2], x, y, z)
        dx = x - qx
        dy = y - qy
        dz = z - qz
        d2 = dx * dx + dy * dy + dz * dz
        if d2 < best2:
            best2 = d2
            bx = dx
            by = dy
            bz = dz
    if plane <= 0.0:
        return plane, px, py, pz
    if best2 == 0.0:
        # exactly on the surface (a vertex or edge point reproduced bit for bit, e.g. a probe vertex
        # projected onto a rock's corner) while rounding put it a hair outside a face plane: the
        # distance is 0 and that face's normal is an outward normal of the solid there
        return 0.0, px, py, pz
    d = math.sqrt(best2)
    return d, bx / d, by / d, bz / d


convex_distance = dual(_convex_distance)
_convex = convex_distance.cpu


# ==================================================================================================
# explicit polyhedral rocks united with the terrain (§2.3.1)
# ==================================================================================================


def _eval_rocks(d, gx, gy, gz, vertices, triangles, spheres, index, x, y, z):
    """Union ``min(d, min_k d_k)`` of a terrain value (d, ∇d) at (x, y, z) with the rocks of a
    :class:`components.terrain.RockField`, and the gradient of the winner (module docstring).

    ``vertices``, ``triangles`` are the RockField's; ``spheres``, ``index`` its packed
    ``kernel_spheres`` (parameters, box, bounding spheres) and ``kernel_index`` (triangle ranges,
    cells, hash buckets), see :meth:`components.terrain.RockField._pack`.
    Exact (bitwise :func:`rocks_brute_points`) wherever the result is below ``reach``; else a
    conservative bound ``min(d, max(reach, d_box))``, ``d_box`` the distance to the rocks' box.
    """
    inv_cell = spheres[0, 0]
    max_r = spheres[0, 1]
    reach = spheres[0, 2]
    K = index[0]
    B = index[1]
    o_tri = 2              # tri_start[k] = index[o_tri + k]
    o_cell = o_tri + K + 1  # cell_of[k, a] = index[o_cell + 3 k + a]
    o_bucket = o_cell + 3 * K  # bucket_start[h] = index[o_bucket + h]
    o_order = o_bucket + B + 1  # order[s] = index[o_order + s]
    # the box of all rock vertices: outside it, every rock is at least d_box away
    vx = x - min(max(x, spheres[1, 0]), spheres[2, 0])
    vy = y - min(max(y, spheres[1, 1]), spheres[2, 1])
    vz = z - min(max(z, spheres[1, 2]), spheres[2, 2])
    dbox = math.sqrt(vx * vx + vy * vy + vz * vz)
    lim = min(d, reach)  # only rocks nearer than this can change the exact result
    best = lim
    found = False
    bx = 0.0
    by = 0.0
    bz = 0.0
    if (dbox == 0.0 or dbox < lim) and lim + max_r > 0.0:  # (also false for NaN input)
        # a rock with |x - c| - R < lim has its centre within lim + max_r: visit those cells only,
        # nearest first along each axis (zigzag about the query's cell) so that ``best`` shrinks
        # early, and skip a cell (or a whole slab) whose box is farther than best + max_r
        rc = lim + max_r
        cell = 1.0 / inv_cell
        x0 = int(math.floor((x - rc) * inv_cell))
        x1 = int(math.floor((x + rc) * inv_cell))
        y0 = int(math.floor((y - rc) * inv_cell))
        y1 = int(math.floor((y + rc) * inv_cell))
        z0 = int(math.floor((z - rc) * inv_cell))
        z1 = int(math.floor((z + rc) * inv_cell))
        cx = min(max(int(math.floor(x * inv_cell)), x0), x1)
        cy = min(max(int(math.floor(y * inv_cell)), y0), y1)
        cz = min(max(int(math.floor(z * inv_cell)), z0), z1)
        mask = B - 1
        for a in range(2 * max(cx - x0, x1 - cx) + 1):
            ix = cx + (a + 1) // 2 if a % 2 == 1 else cx - a // 2
            if ix < x0 or ix > x1:
                continue
            ex = max(max(ix * cell - x, 0.0), x - (ix + 1) * cell)  # distance to the slab of cells ix
            if ex - max_r >= best:
                continue
            for b in range(2 * max(cy - y0, y1 - cy) + 1):
                iy = cy + (b + 1) // 2 if b % 2 == 1 else cy - b // 2
                if iy < y0 or iy > y1:
                    continue
                ey = max(max(iy * cell - y, 0.0), y - (iy + 1) * cell)
                if math.sqrt(ex * ex + ey * ey) - max_r >= best:
                    continue
                for c in range(2 * max(cz - z0, z1 - cz) + 1):
                    iz = cz + (c + 1) // 2 if c % 2 == 1 else cz - c // 2
                    if iz < z0 or iz > z1:
                        continue
                    ez = max(max(iz * cell - z, 0.0), z - (iz + 1) * cell)
                    if math.sqrt(ex * ex + ey * ey + ez * ez) - max_r >= best:
                        continue
                    h = _hash(ix, iy, iz, mask)
                    for s in range(index[o_bucket + h], index[o_bucket + h + 1]):
                        k = index[o_order + s]
                        kc = o_cell + 3 * k
                        if index[kc] == ix and index[kc + 1] == iy and index[kc + 2] == iz:
                            dx = x - spheres[3 + k, 0]
                            dy = y - spheres[3 + k, 1]
                            dz = z - spheres[3 + k, 2]
                            # coarse: the bounding sphere; fine: the convex polyhedron
                            if math.sqrt(dx * dx + dy * dy + dz * dz) - spheres[3 + k, 3] < best:
                                r, rx, ry, rz = _convex(vertices, triangles, index[o_tri + k], index[o_tri + k + 1],
                                                        x, y, z)
                                if r < best:
                                    best = r
                                    bx = rx
                                    by = ry
                                    bz = rz
                                    found = True
    if found:
        return best, bx, by, bz
    if not (d > reach):
        return d, gx, gy, gz  # no rock nearer than d: exact (and a NaN stays NaN)
    # d > reach and no rock within reach: every rock is at least max(reach, d_box) away
    if dbox > reach:
        if dbox < d:
            return dbox, vx / dbox, vy / dbox, vz / dbox
        return d, gx, gy, gz
    return reach, gx, gy, gz  # the plateau of the bound; the terrain's gradient as a pseudo-gradient


eval_rocks = dual(_eval_rocks, inline=False)
_rocks = eval_rocks.cpu


def _eval_rocks_brute(d, gx, gy, gz, vertices, triangles, tri_start, x, y, z):
    """Reference: ``min(d, min_k d_k)`` over every rock, no broadphase (tests, :func:`rocks_brute_points`);
    ``tri_start`` the RockField's (K + 1,) triangle ranges."""
    best = d
    for k in range(tri_start.shape[0] - 1):
        r, rx, ry, rz = _convex(vertices, triangles, tri_start[k], tri_start[k + 1], x, y, z)
        if r < best:
            best = r
            gx = rx
            gy = ry
            gz = rz
    return best, gx, gy, gz


eval_rocks_brute = dual(_eval_rocks_brute, inline=False)
_rocks_brute = eval_rocks_brute.cpu


# ==================================================================================================
# CPU drivers (hand-written prange loops: they hit numba's disk cache, docs/design.md §2)
# ==================================================================================================


@cpu_parallel
def _grid_rows(n, values, ox, oy, oz, hx, hy, hz, pts, out):
    for i in prange(n):
        r = _grid_full(values, ox, oy, oz, hx, hy, hz, pts[i, 0], pts[i, 1], pts[i, 2])
        for k in range(10):
            out[i, k] = r[k]


@cpu_parallel
def _grid_value_gradient_rows(n, values, ox, oy, oz, hx, hy, hz, pts, d, g):
    for i in prange(n):
        r = _grid(values, ox, oy, oz, hx, hy, hz, pts[i, 0], pts[i, 1], pts[i, 2])
        d[i] = r[0]
        g[i, 0] = r[1]
        g[i, 1] = r[2]
        g[i, 2] = r[3]


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
        d[i] = r[0]
        g[i, 0] = r[1]
        g[i, 1] = r[2]
        g[i, 2] = r[3]


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
                out[i, j, k] = _shape(nodes, x, y, oz + k * h[2])[0]


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
        d[i] = r[0]
        g[i, 0] = r[1]
        g[i, 1] = r[2]
        g[i, 2] = r[3]


@cpu_parallel
def _psr_rows(n, tex, period, index, cell, pts, d, g):
    for i in prange(n):
        r = _psr(tex, period, index, cell, pts[i, 0], pts[i, 1], pts[i, 2])
        d[i] = r[0]
        g[i, 0] = r[1]
        g[i, 1] = r[2]
        g[i, 2] = r[3]


def _eval_terrain_row(i, pts, d, g, base_kind, grid, ox, oy, oz, hx, hy, hz, nodes, fbm_octaves, lat, a0, f0,
                      lacunarity, gain, psr_on, tex, period, index, index_cell, rock_on, rock_vertices,
                      rock_triangles, rock_spheres, rock_index):
    """Row kernel: terrain distance and gradient at ``pts[i]`` into ``d[i]``, ``g[i]``."""
    r = _terrain(base_kind, grid, ox, oy, oz, hx, hy, hz, nodes, fbm_octaves, lat, a0, f0, lacunarity, gain,
                 psr_on, tex, period, index, index_cell, rock_on, rock_vertices, rock_triangles, rock_spheres,
                 rock_index, pts[i, 0], pts[i, 1], pts[i, 2])
    d[i] = r[0]
    g[i, 0] = r[1]
    g[i, 1] = r[2]
    g[i, 2] = r[3]


eval_terrain_row = dual(_eval_terrain_row, inline=False)
_terrain_row = eval_terrain_row.cpu


@cpu_parallel
def eval_terrain_rows(n, pts, d, g, base_kind, grid, ox, oy, oz, hx, hy, hz, nodes, fbm_octaves, lat, a0, f0,
                      lacunarity, gain, psr_on, tex, period, index, index_cell, rock_on, rock_vertices,
                      rock_triangles, rock_spheres, rock_index):
    """CPU driver of :data:`eval_terrain_row` over ``n`` points."""
    for i in prange(n):
        _terrain_row(i, pts, d, g, base_kind, grid, ox, oy, oz, hx, hy, hz, nodes, fbm_octaves, lat, a0, f0,
                     lacunarity, gain, psr_on, tex, period, index, index_cell, rock_on, rock_vertices,
                     rock_triangles, rock_spheres, rock_index)


@cpu_parallel
def _rocks_rows(n, pts, base_d, base_g, d, g, vertices, triangles, spheres, index):
    for i in prange(n):
        r = _rocks(base_d[i], base_g[i, 0], base_g[i, 1], base_g[i, 2], vertices, triangles, spheres, index,
                   pts[i, 0], pts[i, 1], pts[i, 2])
        d[i] = r[0]
        g[i, 0] = r[1]
        g[i, 1] = r[2]
        g[i, 2] = r[3]


@cpu_parallel
def _rocks_brute_rows(n, pts, base_d, base_g, d, g, vertices, triangles, tri_start):
    for i in prange(n):
        r = _rocks_brute(base_d[i], base_g[i, 0], base_g[i, 1], base_g[i, 2], vertices, triangles, tri_start,
                         pts[i, 0], pts[i, 1], pts[i, 2])
        d[i] = r[0]
        g[i, 0] = r[1]
        g[i, 1] = r[2]
        g[i, 2] = r[3]


@cpu_parallel
def _convex_rows(n, vertices, triangles, t0, t1, pts, d, g):
    for i in prange(n):
        r = _convex(vertices, triangles, t0, t1, pts[i, 0], pts[i, 1], pts[i, 2])
        d[i] = r[0]
        g[i, 0] = r[1]
        g[i, 1] = r[2]
        g[i, 2] = r[3]


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


def sample_grid(grid, points) -> tuple[np.ndarray, np.ndarray]:
    """Trilinear SDF value [m], shape (n,), and gradient, shape (n, 3), at ``points`` (n, 3) [m]."""
    p = _points(points)
    d = np.empty(len(p))
    g = np.empty((len(p), 3))
    _grid_value_gradient_rows(len(p), *_grid_args(grid), p, d, g)
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


def terrain_args(terrain) -> tuple:
    """The kernel arguments of a :class:`components.terrain.TerrainSDF` for :data:`eval_terrain_point`.

    ``(base_kind, grid, ox, oy, oz, hx, hy, hz, nodes, fbm_octaves, lattice, a0, f0, lacunarity, gain,
    psr_on, texture, period, index, index_cell, rock_on, rock_vertices, rock_triangles, rock_spheres,
    rock_index)`` (25 entries; the last five are :func:`rock_args`): unused parts are small dummy
    arrays, so one compiled signature serves every terrain. A contact system passes this tuple to its own kernel.
    """
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
    return (kind, grid, float(o[0]), float(o[1]), float(o[2]), float(h[0]), float(h[1]), float(h[2]), nodes,
            *fargs, *rargs, *rock_args(getattr(terrain, "rocks", None)))


def is_bare_grid(terrain) -> bool:
    """The terrain is an SDF grid alone (no fBm, seeded rock texture or rock field): its distance
    is the grid's trilinear sample, and kernels that know it need not compile the general terrain
    evaluation (:func:`ecs.terms.specialise`; the row kernels test the same on
    :func:`terrain_args`' tuple)."""
    rocks = getattr(terrain, "rocks", None)
    return (isinstance(terrain.base, SDFGrid) and terrain.fbm is None and terrain.psr is None
            and (rocks is None or rocks.count == 0))


def eval_terrain(terrain, points) -> tuple[np.ndarray, np.ndarray]:
    """Terrain distance (n,) [m] and gradient (n, 3) at ``points`` (n, 3) [m] (CPU). A bare grid is
    sampled directly (:func:`is_bare_grid`): the general evaluator is compiled only for terrains
    that need it (4.7 s of a cold start, measured)."""
    if is_bare_grid(terrain):
        return sample_grid(terrain.base, points)
    p = _points(points)
    d = np.empty(len(p))
    g = np.empty((len(p), 3))
    eval_terrain_rows(len(p), p, d, g, *terrain_args(terrain))
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
