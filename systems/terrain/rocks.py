"""Explicit polyhedral rocks (seed 004 §2.3.1): the closest point of a triangle, the exact signed
distance to a convex polyhedron, and the union of a terrain value with a rock field through a
uniform-grid broadphase (:data:`eval_rocks`; the brute-force reference :data:`eval_rocks_brute`).
:mod:`systems.terrain.sdf` documents the broadphase and composes it into a terrain."""

from __future__ import annotations

import math

from components.terrain import ROCK_INDEX, ROCK_PARAMS, ROCK_SPHERE_ROWS
from ecs.geometry import face_plane, normalize3
from ecs.kernels import dual
from systems.terrain.broadphase import cell_hash

_hash = cell_hash.cpu
_PARAMS, _LOWER, _UPPER, _SPHERES = ROCK_SPHERE_ROWS.offsets("PARAMS LOWER UPPER SPHERES")
_INV_CELL, _MAX_R, _REACH = ROCK_PARAMS.offsets("INV_CELL MAX_R REACH")
_K, _B, _TRI_START = ROCK_INDEX.offsets("K B TRI_START")
_norm3 = normalize3.cpu

#: Voronoi regions of a triangle's closest point (face interior, vertices, edges).
REGION_FACE, REGION_A, REGION_B, REGION_C, REGION_AB, REGION_BC, REGION_CA = 0, 1, 2, 3, 4, 5, 6


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
    Exact (bitwise :func:`systems.terrain.sdf.rocks_brute_points`) wherever the result is below ``reach``; else a
    conservative bound ``min(d, max(reach, d_box))``, ``d_box`` the distance to the rocks' box.
    """
    inv_cell = spheres[_PARAMS, _INV_CELL]
    max_r = spheres[_PARAMS, _MAX_R]
    reach = spheres[_PARAMS, _REACH]
    K = index[_K]
    B = index[_B]
    o_tri = _TRI_START      # tri_start[k] = index[o_tri + k]
    o_cell = o_tri + K + 1  # cell_of[k, a] = index[o_cell + 3 k + a]
    o_bucket = o_cell + 3 * K  # bucket_start[h] = index[o_bucket + h]
    o_order = o_bucket + B + 1  # order[s] = index[o_order + s]
    # the box of all rock vertices: outside it, every rock is at least d_box away
    vx = x - min(max(x, spheres[_LOWER, 0]), spheres[_UPPER, 0])
    vy = y - min(max(y, spheres[_LOWER, 1]), spheres[_UPPER, 1])
    vz = z - min(max(z, spheres[_LOWER, 2]), spheres[_UPPER, 2])
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
                            ks = _SPHERES + k
                            dx = x - spheres[ks, 0]
                            dy = y - spheres[ks, 1]
                            dz = z - spheres[ks, 2]
                            # coarse: the bounding sphere; fine: the convex polyhedron
                            if math.sqrt(dx * dx + dy * dy + dz * dz) - spheres[ks, 3] < best:
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
    """Reference: ``min(d, min_k d_k)`` over every rock, no broadphase (tests, :func:`systems.terrain.sdf.rocks_brute_points`);
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
