"""Signed distance fields from closed triangle meshes and from analytic shapes (seed 004 §2.2.3).

The seed builds its SDFs with Batty's SDFGen (narrow-band exact distances, fast sweeping elsewhere,
ray-parity signs). This module computes the **exact** distance to the mesh at every grid node and a
robust sign, fast enough for 256³ grids of 10⁵-face meshes on two cores:

* **Distance**: a bounding volume hierarchy over the triangles (median splits on the longest
  centroid axis, 4 triangles per leaf) answers nearest-triangle queries with the point-triangle
  closest point of Ericson (§5.1.5, :data:`systems.terrain.sdf.closest_point_triangle`). Grid nodes are
  processed in 4³ bricks (one thread per brick, numba ``prange``), visited in serpentine order so
  each query starts from the previous node's nearest triangle: its exact distance to the new node is
  a valid upper bound that prunes almost the whole tree at once.
* **Sign**: angle-weighted pseudonormals (J. A. Bærentzen and H. Aanæs, "Signed distance computation
  using the angle weighted pseudonormal", IEEE TVCG 11(3), 2005): the sign of ``(x - c)·n`` where c is
  the closest point and n the pseudonormal of the feature c lies on (face normal; sum of the two face
  normals for an edge; the angle-weighted vertex normal for a vertex). Proven correct for closed,
  manifold, consistently wound meshes; O(1) per query once the closest feature is known.

Inputs are checked before any allocation: the mesh must be closed (``check_closed_mesh`` says how
many boundary edges it has) and the grid must fit in memory (the error says how many bytes it needs
and how many are available). Results are cached on disk keyed by a hash of the mesh and the grid
(``$TUMBLE_CACHE``, else ``$TUMBLE_CACHE_DIR``, else ``~/.cache/tumble``; sub-folder ``sdf``).

Caching caveat (docs/design.md §2): the cached kernels here inline
:data:`systems.terrain.sdf.closest_point_triangle`; numba's cache does not notice edits to that other file, so
after changing it delete ``scenes/assets/__pycache__/sdf_build*``.

Analytic shapes' grids (:func:`grid_from_shape`) are cached too, keyed by the shape, the grid and
the engine's source digest, and the default scene's is shipped (:mod:`scenes.assets.shipped`).

Public API: :func:`sdf_from_mesh`, :func:`mesh_signed_distance`, :func:`grid_from_shape`,
:func:`write_shipped_shape_grid`, :func:`grid_for_bounds`, :func:`build_bvh`, :func:`cache_dir`.
"""

from __future__ import annotations

import hashlib
import math
import os
from pathlib import Path

import numba
import numpy as np
from numba import prange

from components.mesh import check_closed_mesh
from components.terrain import AnalyticShape, SDFGrid
from ecs import record
from ecs._cache import source_digest
from ecs.errors import InputError
from ecs.kernels import FASTMATH
from scenes.assets import shipped
from systems.terrain.sdf import closest_point_triangle, eval_shape_grid

__all__ = ["BVH", "build_bvh", "cache_dir", "grid_for_bounds", "grid_from_shape", "mesh_signed_distance",
           "sdf_from_mesh", "write_shipped_shape_grid"]

#: Bump when the algorithm's output changes: part of every cache key.
CACHE_VERSION = "sdf-1"
#: Bump when an analytic shape's sampled values change (systems.terrain.sdf.eval_shape): part of the
#: key of every shape grid, cached or shipped (:func:`grid_from_shape`).
SHAPE_GRID_VERSION = "shape-grid-1"
#: Nodes per brick edge: one thread computes a brick of BRICK³ nodes in serpentine order.
BRICK = 4
#: Triangles per BVH leaf.
LEAF_SIZE = 4
#: Longest mesh walk (triangle hops) from a far node's first candidate to its nearest triangle.
WALK_STEPS = 64
#: Depth bound of the traversal stack (a median-split tree of 2³¹ triangles is 31 deep; 2 per level).
STACK = 128

_jit = numba.njit(cache=True, fastmath=FASTMATH)
_pjit = numba.njit(cache=True, fastmath=FASTMATH, parallel=True)
_cpt = closest_point_triangle.cpu


# --------------------------------------------------------------------------------------------------
# cache and memory
# --------------------------------------------------------------------------------------------------


def cache_dir() -> Path:
    """The on-disk cache folder: ``$TUMBLE_CACHE`` if set, else ``$TUMBLE_CACHE_DIR`` (tumble's
    cache root), else ``~/.cache/tumble``."""
    root = os.environ.get("TUMBLE_CACHE") or os.environ.get("TUMBLE_CACHE_DIR")
    return Path(root) if root else Path.home() / ".cache" / "tumble"


def available_memory() -> int:
    """Bytes of memory available now (``MemAvailable`` of /proc/meminfo; 4 GiB if unknown)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover - not Linux
        pass
    return 4 << 30


def _check_grid_size(shape, field: str, max_bytes: int | None, bytes_per_node: int = 8) -> int:
    n = int(np.prod(np.asarray(shape, dtype=np.int64)))
    need = bytes_per_node * n
    limit = int(0.5 * available_memory()) if max_bytes is None else int(max_bytes)
    if need > limit:
        raise InputError(field, f"{tuple(int(s) for s in shape)} nodes",
                         f"needs {need / 2**30:.2f} GiB ({bytes_per_node} bytes per node) but only {limit / 2**30:.2f} GiB "
                         f"may be used (half the available memory, or max_bytes): use a coarser spacing")
    return need


def grid_for_bounds(lower, upper, *, spacing: float | None = None, resolution: int | None = None,
                    padding: float | None = None) -> tuple[np.ndarray, np.ndarray, tuple[int, int, int]]:
    """A cubic-voxel grid covering a box: ``(origin, spacing (3,), shape)``.

    Args:
        lower, upper: box corners [m].
        spacing: voxel side [m]; or
        resolution: nodes along the box's longest side (spacing = longest side / (resolution - 1)).
        padding: margin on every side [m]; default 3 voxels (so the zero set is well inside).
    """
    lo = np.asarray(lower, dtype=np.float64)
    hi = np.asarray(upper, dtype=np.float64)
    if (spacing is None) == (resolution is None):
        raise InputError("spacing/resolution", {"spacing": spacing, "resolution": resolution},
                         "give exactly one of spacing [m] or resolution [nodes]")
    if resolution is not None:
        if int(resolution) != resolution or resolution < 2:
            raise InputError("resolution", resolution, "must be an integer >= 2 [nodes along the longest side]")
        spacing = float(np.max(hi - lo)) / (int(resolution) - 1)
    if not (spacing > 0 and math.isfinite(spacing)):
        raise InputError("spacing", spacing, "must be a finite number > 0 [m]")
    pad = 3.0 * spacing if padding is None else float(padding)
    return SDFGrid.covering(lo, hi, spacing, padding=pad)


# --------------------------------------------------------------------------------------------------
# BVH
# --------------------------------------------------------------------------------------------------


BVH = record("BVH", __name__, {
    "order": "triangle indices in leaf order, int64 (m,)",
    "bmin": "node boxes' lower corners [m], (k, 3)",
    "bmax": "node boxes' upper corners [m], (k, 3)",
    "left": "left child node, int64 (k,) (-1 for leaves)",
    "right": "right child node, int64 (k,) (-1 for leaves)",
    "start": "first position in ``order`` of a leaf's triangles, int64 (k,)",
    "count": "triangles of a leaf, int64 (k,) (0 for inner nodes)"},
    "Bounding volume hierarchy over a triangle mesh (arrays for numba; kernels take it whole).")

MeshTables = record("MeshTables", __name__, {
    "V": "vertices [m], (n, 3)",
    "F": "triangles' vertex indices, int64 (m, 3), counter-clockwise seen from outside",
    "fn": "unit face normals, (m, 3)",
    "en": "unit edge pseudonormals, (m, 3, 3)",
    "vn": "unit vertex pseudonormals, (n, 3)"},
    "A closed triangle mesh with the pseudonormals that sign its distances (:func:`_pseudonormals`).")

GridNodes = record("GridNodes", __name__, {
    "ox": "first node's x [m]", "oy": "first node's y [m]", "oz": "first node's z [m]",
    "h": "node spacing per axis [m], (3,)",
    "nx": "nodes along x", "ny": "nodes along y", "nz": "nodes along z"},
    "The nodes of a regular grid: origin, spacing and counts.")


@_jit
def _build_bvh(tmin, tmax, cent, leaf):
    m = tmin.shape[0]
    cap = 2 * m + 1
    order = np.arange(m)
    bmin = np.empty((cap, 3))
    bmax = np.empty((cap, 3))
    left = np.full(cap, -1, np.int64)
    right = np.full(cap, -1, np.int64)
    start = np.zeros(cap, np.int64)
    count = np.zeros(cap, np.int64)
    # work stack of (node, lo, hi)
    st_node = np.empty(cap, np.int64)
    st_lo = np.empty(cap, np.int64)
    st_hi = np.empty(cap, np.int64)
    sp = 0
    st_node[0] = 0
    st_lo[0] = 0
    st_hi[0] = m
    sp = 1
    nodes = 1
    while sp > 0:
        sp -= 1
        node = st_node[sp]
        lo = st_lo[sp]
        hi = st_hi[sp]
        for a in range(3):
            bmin[node, a] = np.inf
            bmax[node, a] = -np.inf
        cmin = np.full(3, np.inf)
        cmax = np.full(3, -np.inf)
        for q in range(lo, hi):
            t = order[q]
            for a in range(3):
                bmin[node, a] = min(bmin[node, a], tmin[t, a])
                bmax[node, a] = max(bmax[node, a], tmax[t, a])
                cmin[a] = min(cmin[a], cent[t, a])
                cmax[a] = max(cmax[a], cent[t, a])
        n = hi - lo
        ext = cmax - cmin
        axis = 0
        if ext[1] > ext[axis]:
            axis = 1
        if ext[2] > ext[axis]:
            axis = 2
        if n <= leaf or ext[axis] <= 0.0:
            start[node] = lo
            count[node] = n
            continue
        keys = np.empty(n)
        for q in range(n):
            keys[q] = cent[order[lo + q], axis]
        perm = np.argsort(keys, kind="mergesort")
        sub = order[lo:hi].copy()
        for q in range(n):
            order[lo + q] = sub[perm[q]]
        mid = lo + n // 2
        l_node = nodes
        r_node = nodes + 1
        nodes += 2
        left[node] = l_node
        right[node] = r_node
        st_node[sp] = r_node
        st_lo[sp] = mid
        st_hi[sp] = hi
        sp += 1
        st_node[sp] = l_node
        st_lo[sp] = lo
        st_hi[sp] = mid
        sp += 1
    return order, bmin[:nodes].copy(), bmax[:nodes].copy(), left[:nodes].copy(), right[:nodes].copy(), \
        start[:nodes].copy(), count[:nodes].copy()


def build_bvh(vertices: np.ndarray, faces: np.ndarray, *, leaf_size: int = LEAF_SIZE) -> BVH:
    """Median-split BVH over the triangles ``vertices[faces]`` (vertices (n, 3) [m], faces (m, 3))."""
    tri = vertices[faces]
    order, bmin, bmax, left, right, start, count = _build_bvh(tri.min(axis=1), tri.max(axis=1), tri.mean(axis=1),
                                                              int(leaf_size))
    return BVH(order, bmin, bmax, left, right, start, count)


@_jit
def _box_dist2(bmin, bmax, node, x, y, z):
    dx = max(bmin[node, 0] - x, 0.0, x - bmax[node, 0])
    dy = max(bmin[node, 1] - y, 0.0, y - bmax[node, 1])
    dz = max(bmin[node, 2] - z, 0.0, z - bmax[node, 2])
    return dx * dx + dy * dy + dz * dz


@_jit
def _tri_point(V, F, t, x, y, z):
    a = F[t, 0]
    b = F[t, 1]
    c = F[t, 2]
    qx, qy, qz, reg = _cpt(V[a, 0], V[a, 1], V[a, 2], V[b, 0], V[b, 1], V[b, 2], V[c, 0], V[c, 1], V[c, 2], x, y, z)
    dx = x - qx
    dy = y - qy
    dz = z - qz
    return dx * dx + dy * dy + dz * dz, qx, qy, qz, reg


@_jit
def _nearest(V, F, bvh, stack, sdist, x, y, z, best2, best_t, best_q, best_r):
    """Nearest triangle to (x, y, z) given a candidate ``best_t`` at squared distance ``best2``."""
    order, bmin, bmax, left, right, start, count = bvh
    qx = best_q[0]
    qy = best_q[1]
    qz = best_q[2]
    reg = best_r
    sp = 0
    stack[0] = 0
    sdist[0] = _box_dist2(bmin, bmax, 0, x, y, z)
    sp = 1
    while sp > 0:
        sp -= 1
        node = stack[sp]
        if sdist[sp] >= best2:
            continue
        c = count[node]
        if c > 0:
            s = start[node]
            for q in range(s, s + c):
                t = order[q]
                d2, tx, ty, tz, tr = _tri_point(V, F, t, x, y, z)
                if d2 < best2:
                    best2 = d2
                    best_t = t
                    qx = tx
                    qy = ty
                    qz = tz
                    reg = tr
        else:
            l_ = left[node]
            r_ = right[node]
            dl = _box_dist2(bmin, bmax, l_, x, y, z)
            dr = _box_dist2(bmin, bmax, r_, x, y, z)
            # push the farther child first so the nearer one is searched first
            if dl <= dr:
                if dr < best2:
                    stack[sp] = r_
                    sdist[sp] = dr
                    sp += 1
                if dl < best2:
                    stack[sp] = l_
                    sdist[sp] = dl
                    sp += 1
            else:
                if dl < best2:
                    stack[sp] = l_
                    sdist[sp] = dl
                    sp += 1
                if dr < best2:
                    stack[sp] = r_
                    sdist[sp] = dr
                    sp += 1
    best_q[0] = qx
    best_q[1] = qy
    best_q[2] = qz
    return best2, best_t, reg


@_jit
def _signed(F, fn, en, vn, t, reg, x, y, z, qx, qy, qz, d2):
    """Signed distance from the closest point on triangle t and its region (pseudonormal sign)."""
    if reg == 0:
        nx = fn[t, 0]
        ny = fn[t, 1]
        nz = fn[t, 2]
    elif reg <= 3:
        v = F[t, reg - 1]
        nx = vn[v, 0]
        ny = vn[v, 1]
        nz = vn[v, 2]
    else:
        e = reg - 4
        nx = en[t, e, 0]
        ny = en[t, e, 1]
        nz = en[t, e, 2]
    s = (x - qx) * nx + (y - qy) * ny + (z - qz) * nz
    d = math.sqrt(d2)
    return -d if s < 0.0 else d


@_jit
def _box_near(bvh, tmin, tmax, lo, hi, band, stack):
    """True if some triangle's bounding box comes within ``band`` of the box [lo, hi]."""
    order, bmin, bmax, left, right, start, count = bvh
    sp = 1
    stack[0] = 0
    while sp > 0:
        sp -= 1
        node = stack[sp]
        gap = 0.0
        for a in range(3):
            g = max(bmin[node, a] - hi[a], lo[a] - bmax[node, a], 0.0)
            gap += g * g
        if gap > band * band:
            continue
        c = count[node]
        if c > 0:
            for q in range(start[node], start[node] + c):
                t = order[q]
                gap = 0.0
                for a in range(3):
                    g = max(tmin[t, a] - hi[a], lo[a] - tmax[t, a], 0.0)
                    gap += g * g
                if gap <= band * band:
                    return True
        else:
            stack[sp] = left[node]
            stack[sp + 1] = right[node]
            sp += 2
    return False


@_pjit
def _near_bricks(bvh, tmin, tmax, grid, band, near):
    ox, oy, oz, h, nx, ny, nz = grid
    bx = (nx + BRICK - 1) // BRICK
    by = (ny + BRICK - 1) // BRICK
    bz = (nz + BRICK - 1) // BRICK
    for b in prange(bx * by * bz):
        stack = np.empty(STACK, np.int64)
        lo = np.empty(3)
        hi = np.empty(3)
        ib = b // (by * bz)
        jb = (b // bz) % by
        kb = b % bz
        lo[0] = ox + ib * BRICK * h[0]
        lo[1] = oy + jb * BRICK * h[1]
        lo[2] = oz + kb * BRICK * h[2]
        hi[0] = ox + (min(ib * BRICK + BRICK, nx) - 1) * h[0]
        hi[1] = oy + (min(jb * BRICK + BRICK, ny) - 1) * h[1]
        hi[2] = oz + (min(kb * BRICK + BRICK, nz) - 1) * h[2]
        near[b] = 1 if _box_near(bvh, tmin, tmax, lo, hi, band, stack) else 0


@_pjit
def _exact_bricks(mesh, bvh, grid, near, out):
    V, F, fn, en, vn = mesh
    ox, oy, oz, h, nx, ny, nz = grid
    bx = (nx + BRICK - 1) // BRICK
    by = (ny + BRICK - 1) // BRICK
    bz = (nz + BRICK - 1) // BRICK
    nb = bx * by * bz
    for b in prange(nb):
        if near[b] == 0:
            continue
        stack = np.empty(STACK, np.int64)
        sdist = np.empty(STACK)
        q = np.empty(3)
        ib = b // (by * bz)
        jb = (b // bz) % by
        kb = b % bz
        i0 = ib * BRICK
        j0 = jb * BRICK
        k0 = kb * BRICK
        i1 = min(i0 + BRICK, nx)
        j1 = min(j0 + BRICK, ny)
        k1 = min(k0 + BRICK, nz)
        prev_t = -1
        step = 0
        for i in range(i0, i1):
            for jj in range(j1 - j0):
                # serpentine: consecutive nodes are grid neighbours
                j = j0 + jj if (i - i0) % 2 == 0 else j1 - 1 - jj
                for kk in range(k1 - k0):
                    k = k0 + kk if step % 2 == 0 else k1 - 1 - kk
                    x = ox + i * h[0]
                    y = oy + j * h[1]
                    z = oz + k * h[2]
                    if prev_t >= 0:
                        best2, qx, qy, qz, reg = _tri_point(V, F, prev_t, x, y, z)
                        q[0] = qx
                        q[1] = qy
                        q[2] = qz
                        best_t = prev_t
                    else:
                        best2 = np.inf
                        best_t = -1
                        reg = 0
                    best2, best_t, reg = _nearest(V, F, bvh, stack, sdist,
                                                  x, y, z, best2, best_t, q, reg)
                    out[i, j, k] = _signed(F, fn, en, vn, best_t, reg, x, y, z, q[0], q[1], q[2], best2)
                    prev_t = best_t
                step += 1


@_pjit
def _coarse_rows(mesh, bvh, grid, cval, ctri):
    """Exact distances at the coarse nodes (every BRICK-th fine node, the last one clamped)."""
    V, F, fn, en, vn = mesh
    ox, oy, oz, h, nx, ny, nz = grid
    cx, cy, cz = cval.shape
    for ci in prange(cx):
        stack = np.empty(STACK, np.int64)
        sdist = np.empty(STACK)
        q = np.empty(3)
        i = min(ci * BRICK, nx - 1)
        prev_t = -1
        for cj in range(cy):
            j = min(cj * BRICK, ny - 1)
            for ck_ in range(cz):
                ck = ck_ if cj % 2 == 0 else cz - 1 - ck_
                k = min(ck * BRICK, nz - 1)
                x = ox + i * h[0]
                y = oy + j * h[1]
                z = oz + k * h[2]
                if prev_t >= 0:
                    best2, qx, qy, qz, reg = _tri_point(V, F, prev_t, x, y, z)
                    q[0] = qx
                    q[1] = qy
                    q[2] = qz
                    best_t = prev_t
                else:
                    best2 = np.inf
                    best_t = -1
                    reg = 0
                best2, best_t, reg = _nearest(V, F, bvh, stack, sdist,
                                              x, y, z, best2, best_t, q, reg)
                cval[ci, cj, ck] = _signed(F, fn, en, vn, best_t, reg, x, y, z, q[0], q[1], q[2], best2)
                ctri[ci, cj, ck] = best_t
                prev_t = best_t


@_pjit
def _far_bricks(mesh, ring_start, ring, grid, near, cval, ctri, out):
    """Nodes of bricks away from the surface.

    Start from the nearest of the triangles nearest to the brick's 8 corner coarse nodes, then walk
    the mesh: move to any triangle sharing a vertex with the current one that is nearer, until none
    is. The distance is exact to the triangle kept (an upper bound of the true distance; equal to it
    unless the walk stops in a local minimum, which happens only near medial surfaces where two
    distant parts of the mesh are nearly equidistant). The sign is that of a corner coarse node c
    whose surface-free ball |x - c| < |d(c)| holds x (exact), else the pseudonormal sign.
    """
    V, F, fn, en, vn = mesh
    ox, oy, oz, h, nx, ny, nz = grid
    bx = (nx + BRICK - 1) // BRICK
    by = (ny + BRICK - 1) // BRICK
    bz = (nz + BRICK - 1) // BRICK
    cx, cy, cz = cval.shape
    for b in prange(bx * by * bz):
        if near[b] != 0:
            continue
        cand = np.empty(8, np.int64)
        ib = b // (by * bz)
        jb = (b // bz) % by
        kb = b % bz
        nc = 0
        for di in range(2):
            for dj in range(2):
                for dk in range(2):
                    t = ctri[min(ib + di, cx - 1), min(jb + dj, cy - 1), min(kb + dk, cz - 1)]
                    dup = False
                    for m in range(nc):
                        if cand[m] == t:
                            dup = True
                    if not dup:
                        cand[nc] = t
                        nc += 1
        for i in range(ib * BRICK, min(ib * BRICK + BRICK, nx)):
            x = ox + i * h[0]
            for j in range(jb * BRICK, min(jb * BRICK + BRICK, ny)):
                y = oy + j * h[1]
                for k in range(kb * BRICK, min(kb * BRICK + BRICK, nz)):
                    z = oz + k * h[2]
                    best2 = np.inf
                    bt = -1
                    breg = 0
                    bqx = 0.0
                    bqy = 0.0
                    bqz = 0.0
                    for m in range(nc):
                        d2, qx, qy, qz, reg = _tri_point(V, F, cand[m], x, y, z)
                        if d2 < best2:
                            best2 = d2
                            bt = cand[m]
                            breg = reg
                            bqx = qx
                            bqy = qy
                            bqz = qz
                    for _ in range(WALK_STEPS):
                        cur = bt
                        for c3 in range(3):
                            vtx = F[cur, c3]
                            for r in range(ring_start[vtx], ring_start[vtx + 1]):
                                t = ring[r]
                                if t == cur:
                                    continue
                                d2, qx, qy, qz, reg = _tri_point(V, F, t, x, y, z)
                                if d2 < best2:
                                    best2 = d2
                                    bt = t
                                    breg = reg
                                    bqx = qx
                                    bqy = qy
                                    bqz = qz
                        if bt == cur:
                            break
                    d = _signed(F, fn, en, vn, bt, breg, x, y, z, bqx, bqy, bqz, best2)
                    # sign from a coarse corner whose surface-free ball holds x (exact), if any
                    for di in range(2):
                        ci = min(ib + di, cx - 1)
                        ex = x - (ox + min(ci * BRICK, nx - 1) * h[0])
                        for dj in range(2):
                            cj = min(jb + dj, cy - 1)
                            ey = y - (oy + min(cj * BRICK, ny - 1) * h[1])
                            for dk in range(2):
                                ck = min(kb + dk, cz - 1)
                                ez = z - (oz + min(ck * BRICK, nz - 1) * h[2])
                                c = cval[ci, cj, ck]
                                if ex * ex + ey * ey + ez * ez < c * c:
                                    d = abs(d) if c > 0.0 else -abs(d)
                    out[i, j, k] = d


@_pjit
def _point_rows(mesh, bvh, pts, d_out, q_out, t_out):
    V, F, fn, en, vn = mesh
    n = pts.shape[0]
    nchunk = (n + 255) // 256
    for c in prange(nchunk):
        stack = np.empty(STACK, np.int64)
        sdist = np.empty(STACK)
        q = np.empty(3)
        for p in range(c * 256, min(n, c * 256 + 256)):
            x = pts[p, 0]
            y = pts[p, 1]
            z = pts[p, 2]
            best2, best_t, reg = _nearest(V, F, bvh, stack, sdist, x, y, z,
                                          np.inf, -1, q, 0)
            d_out[p] = _signed(F, fn, en, vn, best_t, reg, x, y, z, q[0], q[1], q[2], best2)
            q_out[p, 0] = q[0]
            q_out[p, 1] = q[1]
            q_out[p, 2] = q[2]
            t_out[p] = best_t


# --------------------------------------------------------------------------------------------------
# pseudonormals
# --------------------------------------------------------------------------------------------------


def _pseudonormals(v: np.ndarray, f: np.ndarray):
    """Unit face normals (m, 3), edge pseudonormals (m, 3, 3) and angle-weighted vertex normals (n, 3).

    Edge j of face t joins corners j and j+1 (AB, BC, CA); its pseudonormal is the sum of the unit
    normals of the two faces sharing it (the mesh is closed and manifold: exactly two).
    """
    p0, p1, p2 = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    fn = np.cross(p1 - p0, p2 - p0)
    fn /= np.linalg.norm(fn, axis=1, keepdims=True)

    def angle(a, b, c):
        u, w = b - a, c - a
        return np.arctan2(np.linalg.norm(np.cross(u, w), axis=1), np.einsum("ij,ij->i", u, w))

    ang = np.stack([angle(p0, p1, p2), angle(p1, p2, p0), angle(p2, p0, p1)], axis=1)
    vn = np.zeros_like(v)
    for j in range(3):
        np.add.at(vn, f[:, j], ang[:, j, None] * fn)
    m = f.shape[0]
    a = f[:, [0, 1, 2]].reshape(-1)
    b = f[:, [1, 2, 0]].reshape(-1)
    key = np.minimum(a, b).astype(np.int64) * (int(v.shape[0]) + 1) + np.maximum(a, b)
    srt = np.argsort(key, kind="stable")
    pair = np.empty(3 * m, np.int64)
    pair[srt[0::2]] = srt[1::2]
    pair[srt[1::2]] = srt[0::2]
    en = (fn[np.arange(3 * m) // 3] + fn[pair // 3]).reshape(m, 3, 3)
    return fn, np.ascontiguousarray(en), vn


def _vertex_rings(f: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Triangles around each vertex (CSR): ``ring[ring_start[v]:ring_start[v+1]]``."""
    vert = f.reshape(-1)
    order = np.argsort(vert, kind="stable")
    ring = (order // 3).astype(np.int64)
    ring_start = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(vert, minlength=n), out=ring_start[1:])
    return ring_start, ring


def _prepare(vertices, faces, field, checked: bool = False):
    v, f = (vertices, faces) if checked else check_closed_mesh(vertices, faces, field=field)
    v = np.ascontiguousarray(v, dtype=np.float64)
    f = np.ascontiguousarray(f, dtype=np.int64)
    fn, en, vn = _pseudonormals(v, f)
    bvh = build_bvh(v, f)
    return v, f, fn, en, vn, bvh


def mesh_signed_distance(vertices, faces, points, *, return_closest: bool = False):
    """Exact signed distance from ``points`` to a closed triangle mesh (negative inside).

    Args:
        vertices: (n, 3) [m]; faces: (m, 3) int, closed, outward wound.
        points: (p, 3) [m].
        return_closest: also return the closest points (p, 3) and their triangle indices (p,).

    Returns:
        ``d`` (p,) [m], or ``(d, closest, triangle)`` with ``return_closest``.
    """
    from systems.terrain.sdf import _points

    p = _points(points)
    v, f, fn, en, vn, bvh = _prepare(vertices, faces, "mesh_signed_distance.mesh")
    d = np.empty(len(p))
    q = np.empty((len(p), 3))
    t = np.empty(len(p), np.int64)
    if len(p):
        _point_rows(MeshTables(v, f, fn, en, vn), bvh, p, d, q, t)
    return (d, q, t) if return_closest else d


def _cache_key(v, f, origin, spacing, shape, band) -> str:
    h = hashlib.sha256()
    h.update(CACHE_VERSION.encode())
    for a in (v, f, np.asarray(origin, np.float64), np.asarray(spacing, np.float64), np.asarray(shape, np.int64),
              np.asarray(-1.0 if band is None else band, np.float64)):
        a = np.ascontiguousarray(a)
        h.update(str(a.dtype).encode() + str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()[:32]


def sdf_from_mesh(vertices, faces, *, spacing: float | None = None, resolution: int | None = None,
                  padding: float | None = None, origin=None, shape=None, band: float | str | None = "auto",
                  cache: bool = True, max_bytes: int | None = None) -> SDFGrid:
    """Signed distance field of a closed triangle mesh on a regular grid (exact near the surface).

    Give the grid either as ``origin`` + ``spacing`` + ``shape`` (nodes per axis), or by ``spacing``
    or ``resolution`` (nodes along the mesh's longest side) with ``padding`` around the mesh's
    bounding box (default 3 voxels).

    Args:
        vertices: (n, 3) [m]; faces: (m, 3) int, closed, manifold, outward wound.
        spacing: voxel side [m].
        resolution: nodes along the longest side of the mesh's bounding box.
        padding: margin around the bounding box [m].
        origin: position of node (0, 0, 0) [m] (with ``shape`` and ``spacing``).
        shape: nodes per axis (nx, ny, nz).
        band: every node of a 4³ brick that comes within ``band`` [m] of a triangle's bounding box
            gets the exact distance (so every node within ``band`` of the surface does). Nodes of the
            other bricks get the exact distance to the nearest of the triangles nearest to the
            brick's 8 corners (computed exactly on the coarse grid of brick corners): an upper bound
            that equals the true distance except near medial surfaces, where it exceeds it slightly.
            ``"auto"``: 2 voxels; ``None``: exact everywhere (slow deep inside near-spherical bodies,
            where every triangle is nearly equidistant).
        cache: read/write the result under :func:`cache_dir` ``/sdf``.
        max_bytes: refuse grids that need more bytes (default half the available memory).

    Returns:
        The :class:`components.terrain.SDFGrid`.

    Raises:
        InputError: open/non-manifold/inward mesh (with the number of boundary edges), a grid that
            would not fit in memory (with its size), bad grid parameters — before any allocation.
    """
    v, f = check_closed_mesh(vertices, faces, field="sdf_from_mesh.mesh")
    if origin is not None or shape is not None:
        if origin is None or shape is None or spacing is None:
            raise InputError("sdf_from_mesh.origin/shape/spacing", {"origin": origin, "shape": shape, "spacing": spacing},
                             "give all three for an explicit grid")
        o = np.asarray(origin, dtype=np.float64)
        shp = tuple(int(s) for s in shape)
        if o.shape != (3,) or len(shp) != 3 or min(shp) < 2:
            raise InputError("sdf_from_mesh.shape", shape, "must be 3 node counts >= 2 (origin 3 numbers)")
        sp = np.full(3, float(spacing)) if np.ndim(spacing) == 0 else np.asarray(spacing, dtype=np.float64)
        if sp.shape != (3,) or not np.all(sp > 0):
            raise InputError("sdf_from_mesh.spacing", spacing, "must be > 0 [m]")
    else:
        o, sp, shp = grid_for_bounds(v.min(axis=0), v.max(axis=0), spacing=spacing, resolution=resolution,
                                     padding=padding)
    if isinstance(band, str):
        if band != "auto":
            raise InputError("sdf_from_mesh.band", band, "must be 'auto', None or a length [m]")
        band = 2.0 * float(np.max(sp))
    elif band is not None:
        if not (math.isfinite(float(band)) and float(band) >= 0.0):
            raise InputError("sdf_from_mesh.band", band, "must be a finite length >= 0 [m], 'auto' or None")
        band = float(band)
    _check_grid_size(shp, "sdf_from_mesh grid", max_bytes, bytes_per_node=9)
    path = None
    if cache:
        path = cache_dir() / "sdf" / f"{_cache_key(v, f, o, sp, shp, band)}.npy"
        vals = _read_grid(path, shp) if path.exists() else None
        if vals is not None:
            return SDFGrid(origin=o, spacing=sp, values=vals)
    out = _build_grid(v, f, o, sp, shp, band)
    if path is not None:
        try:
            _write_grid(path, out)
        except OSError:  # pragma: no cover - read-only home: the grid is still returned
            pass
    return SDFGrid(origin=o, spacing=sp, values=out)


def _build_grid(v, f, o, sp, shp, band):
    """Exact distances in bricks near the surface, coarse-corner candidates elsewhere (see above)."""
    v, f, fn, en, vn, bvh = _prepare(v, f, "sdf_from_mesh.mesh", checked=True)
    nx, ny, nz = shp
    nb = ((nx + BRICK - 1) // BRICK) * ((ny + BRICK - 1) // BRICK) * ((nz + BRICK - 1) // BRICK)
    ox, oy, oz = (float(c) for c in o)
    sp = np.asarray(sp, np.float64)
    mesh, grid = MeshTables(v, f, fn, en, vn), GridNodes(ox, oy, oz, sp, nx, ny, nz)
    if band is None:
        near = np.ones(nb, np.uint8)
    else:
        tri_v = v[f]
        near = np.empty(nb, np.uint8)
        _near_bricks(bvh, np.ascontiguousarray(tri_v.min(axis=1)), np.ascontiguousarray(tri_v.max(axis=1)), grid,
                     float(band), near)
    out = np.empty(shp)
    _exact_bricks(mesh, bvh, grid, near, out)
    if not near.all():
        cshape = tuple((n - 1 + BRICK - 1) // BRICK + 1 for n in shp)
        cval = np.empty(cshape)
        ctri = np.empty(cshape, np.int64)
        _coarse_rows(mesh, bvh, grid, cval, ctri)
        ring_start, ring = _vertex_rings(f, v.shape[0])
        _far_bricks(mesh, ring_start, ring, grid, near, cval, ctri, out)
    return out


def _shape_grid_key(nodes, origin, spacing, shape) -> str:
    """The key of an analytic shape's grid: a SHA-256 of :data:`SHAPE_GRID_VERSION`, the shape's
    nodes and the grid (origin, spacing, node counts)."""
    h = hashlib.sha256()
    h.update(SHAPE_GRID_VERSION.encode())
    for a in (nodes, np.asarray(origin, np.float64), np.asarray(spacing, np.float64), np.asarray(shape, np.int64)):
        a = np.ascontiguousarray(a)
        h.update(str(a.dtype).encode() + str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def shipped_shape_grid_name(key: str) -> str:
    """The file name a shape grid of this key has among the shipped fields (:mod:`scenes.assets.shipped`)."""
    return f"sdf-{key[:40]}.npy"


def _read_grid(path: Path, shp) -> np.ndarray | None:
    """The grid file at ``path`` when it holds float64 values of shape ``shp``, else None."""
    try:
        vals = np.load(path)
    except (OSError, ValueError):
        return None                         # unreadable entry: rebuild it
    return vals if vals.shape == tuple(shp) and vals.dtype == np.float64 else None


def _write_grid(path: Path, values: np.ndarray) -> None:
    """Write a grid file atomically: concurrent builders never see a partial file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp.npy")
    np.save(tmp, values)
    os.replace(tmp, path)


def grid_from_shape(shape: AnalyticShape, *, origin=None, spacing=None, dims=None, lower=None, upper=None,
                    resolution: int | None = None, padding: float | None = None,
                    max_bytes: int | None = None, cache: bool = True) -> SDFGrid:
    """Sample an :class:`components.terrain.AnalyticShape` at the nodes of a grid.

    Give ``origin`` + ``spacing`` + ``dims``, or a box ``lower``/``upper`` with ``spacing`` or
    ``resolution`` (see :func:`grid_for_bounds`).

    With ``cache`` (default) the grid is looked up by the key of its inputs
    (:func:`_shape_grid_key`) among the shipped fields (the default scene's terrain,
    :func:`write_shipped_shape_grid`; its sampler's compile is most of a cold scene build; a test
    resamples it bit for bit), then in :func:`cache_dir` ``/sdf`` under that key and the digest of
    the engine's sources; a grid sampled here is written there. ``cache=False`` neither reads nor
    writes.
    """
    if not isinstance(shape, AnalyticShape):
        raise InputError("grid_from_shape.shape", type(shape).__name__, "must be an AnalyticShape")
    if origin is not None:
        if spacing is None or dims is None:
            raise InputError("grid_from_shape.spacing/dims", {"spacing": spacing, "dims": dims},
                             "give origin, spacing and dims together")
        g0 = SDFGrid(origin=origin, spacing=spacing, values=np.zeros((2, 2, 2)))
        o, sp, shp = g0.origin, g0.spacing, tuple(int(n) for n in dims)
    else:
        if lower is None or upper is None:
            raise InputError("grid_from_shape.lower/upper", {"lower": lower, "upper": upper},
                             "give the box to cover (or origin, spacing and dims)")
        o, sp, shp = grid_for_bounds(lower, upper, spacing=spacing, resolution=resolution, padding=padding)
    _check_grid_size(shp, "grid_from_shape grid", max_bytes)
    path = None
    if cache:
        key = _shape_grid_key(shape.nodes, o, sp, shp)
        ship = shipped.DATA_DIR / shipped_shape_grid_name(key)
        if shipped.verified(ship, shipped.SUMS, what="SDF grid"):
            vals = _read_grid(ship, shp)
            if vals is not None:
                return SDFGrid(origin=o, spacing=sp, values=vals)
        # a cached grid is also keyed by the sources that sampled it (ecs._cache.source_digest, as
        # numba's kernels are): an edit to a distance function resamples instead of reading stale values
        path = cache_dir() / "sdf" / f"shape-{key[:24]}-{source_digest()}.npy"
        if path.exists():
            vals = _read_grid(path, shp)
            if vals is not None:
                return SDFGrid(origin=o, spacing=sp, values=vals)
    out = np.empty(shp)
    eval_shape_grid(shape.nodes, float(o[0]), float(o[1]), float(o[2]), np.asarray(sp, np.float64), out)
    if path is not None:
        try:
            _write_grid(path, out)
        except OSError:
            pass                            # a read-only cache: the grid is still right, only not kept
    return SDFGrid(origin=o, spacing=sp, values=out)


def write_shipped_shape_grid(shape: AnalyticShape, **grid) -> Path:
    """The recipe of a shipped shape grid (:mod:`scenes.assets.shipped`): sample ``shape`` afresh
    (never from a cache) on the grid ``grid`` (:func:`grid_from_shape`'s arguments), write it to
    the shipped fields under its key and record its SHA-256. Returns the file's path."""
    g = grid_from_shape(shape, cache=False, **grid)
    path = shipped.DATA_DIR / shipped_shape_grid_name(_shape_grid_key(shape.nodes, g.origin, g.spacing, g.shape))
    _write_grid(path, np.asarray(g.values))
    path.chmod(0o644)
    shipped.record(path, shipped.SUMS)
    return path
