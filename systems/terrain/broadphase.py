"""Broadphase helpers: bounding spheres and a uniform-grid index of many rocks (seed 004 §2.2.2, §2.3.1).

The seed switches between a "coarse" distance (to a bounding sphere with a margin) and the "fine"
feature distance only once that sphere is crossed, for local worlds and for every rock. Here:

* :func:`bounding_sphere` — a sphere enclosing points (Ritter's pass, then grown to cover every
  point exactly; within a few per cent of the minimum), or :func:`radius_about` for a fixed centre
  (a probe about its body reference point, a rock about its frame origin: what rotates with it).
* :func:`region_spheres` — one bounding sphere per terrain region (group of facets).
* :class:`SphereGrid` — a uniform grid over sphere centres (cell side >= the largest diameter, cells
  hashed into a sorted table, CSR); :data:`query_spheres` (one source for CPU and GPU) lists the
  spheres overlapping a query sphere by visiting only the cells its box touches, checking each
  candidate's cell so no sphere is reported twice. :func:`query_points` runs it over many queries.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import prange

from ecs.errors import InputError
from ecs.kernels import cpu_parallel, dual

__all__ = ["SphereGrid", "bounding_sphere", "query_points", "query_spheres", "radius_about", "region_spheres"]


def radius_about(points, centre=(0.0, 0.0, 0.0)) -> float:
    """Radius [m] of the sphere about ``centre`` enclosing ``points`` (n, 3)."""
    p = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    return float(np.max(np.linalg.norm(p - np.asarray(centre, float), axis=1))) if len(p) else 0.0


def bounding_sphere(points) -> tuple[np.ndarray, float]:
    """``(centre (3,), radius)`` of a sphere enclosing every point (Ritter 1990, then exact cover)."""
    p = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    if len(p) == 0:
        raise InputError("bounding_sphere.points", "empty", "needs at least one point")
    a = p[0]
    b = p[np.argmax(np.sum((p - a) ** 2, axis=1))]
    c = p[np.argmax(np.sum((p - b) ** 2, axis=1))]
    centre = 0.5 * (b + c)
    r = 0.5 * float(np.linalg.norm(c - b))
    for q in p:  # Ritter's growing pass
        d = float(np.linalg.norm(q - centre))
        if d > r:
            r_new = 0.5 * (r + d)
            centre = centre + (d - r_new) / d * (q - centre)
            r = r_new
    r = max(r, float(np.max(np.linalg.norm(p - centre, axis=1))))  # exact cover after rounding
    return centre, r


def region_spheres(vertices, faces, region) -> tuple[np.ndarray, np.ndarray]:
    """One bounding sphere per terrain region: ``region[i]`` is facet i's region id (0..R-1).

    Returns:
        ``(centres (R, 3), radii (R,))`` [m].
    """
    V = np.asarray(vertices, dtype=np.float64)
    F = np.asarray(faces, dtype=np.int64)
    reg = np.asarray(region, dtype=np.int64)
    if reg.shape != (len(F),) or (len(reg) and reg.min() < 0):
        raise InputError("region_spheres.region", reg.shape, f"must give a region id >= 0 per facet ({len(F)})")
    R = int(reg.max()) + 1 if len(reg) else 0
    centres = np.zeros((R, 3))
    radii = np.zeros(R)
    for k in range(R):
        idx = np.unique(F[reg == k])
        if len(idx):
            centres[k], radii[k] = bounding_sphere(V[idx])
    return centres, radii


# --------------------------------------------------------------------------------------------------
# uniform grid
# --------------------------------------------------------------------------------------------------


def _cell_hash(ix, iy, iz, mask):
    """Spatial hash of an integer cell (Teschner et al. 2003 primes), in [0, mask]."""
    h = (ix * 73856093) ^ (iy * 19349663) ^ (iz * 83492791)
    return h & mask


cell_hash = dual(_cell_hash)
_hash = cell_hash.cpu


def _query_spheres(qx, qy, qz, qr, centres, radii, cell_of, bucket_start, order, inv_cell, max_radius, mask,
                   out, row, capacity):
    """Indices of the spheres overlapping the query sphere (centre q, radius qr) into ``out[row]``.

    Returns the number found (it may exceed ``capacity``: only the first ``capacity`` are stored).
    """
    reach = qr + max_radius
    x0 = int(math.floor((qx - reach) * inv_cell))
    x1 = int(math.floor((qx + reach) * inv_cell))
    y0 = int(math.floor((qy - reach) * inv_cell))
    y1 = int(math.floor((qy + reach) * inv_cell))
    z0 = int(math.floor((qz - reach) * inv_cell))
    z1 = int(math.floor((qz + reach) * inv_cell))
    n = 0
    for ix in range(x0, x1 + 1):
        for iy in range(y0, y1 + 1):
            for iz in range(z0, z1 + 1):
                h = _hash(ix, iy, iz, mask)
                for s in range(bucket_start[h], bucket_start[h + 1]):
                    k = order[s]
                    if cell_of[k, 0] != ix or cell_of[k, 1] != iy or cell_of[k, 2] != iz:
                        continue  # another cell hashed to this bucket
                    dx = centres[k, 0] - qx
                    dy = centres[k, 1] - qy
                    dz = centres[k, 2] - qz
                    rr = radii[k] + qr
                    if dx * dx + dy * dy + dz * dz <= rr * rr:
                        if n < capacity:
                            out[row, n] = k
                        n += 1
    return n


query_spheres = dual(_query_spheres)
_query = query_spheres.cpu


@dataclass(eq=False)
class SphereGrid:
    """Uniform-grid index of spheres (rocks' bounding spheres), built once for static rocks.

    Attributes:
        centres: (K, 3) [m]; radii: (K,) [m].
        cell: cell side [m] (>= 2 max radius by default).
        cell_of: integer cell of each centre, int64 (K, 3).
        bucket_start: CSR offsets of the hash buckets, int64 (B + 1,), B a power of two.
        order: sphere indices sorted by bucket, int64 (K,).
    """

    centres: np.ndarray
    radii: np.ndarray
    cell: float
    cell_of: np.ndarray
    bucket_start: np.ndarray
    order: np.ndarray

    @property
    def max_radius(self) -> float:
        return float(self.radii.max()) if len(self.radii) else 0.0

    @property
    def mask(self) -> int:
        return len(self.bucket_start) - 2

    @staticmethod
    def build(centres, radii, *, cell: float | None = None) -> "SphereGrid":
        """Index spheres ``centres`` (K, 3) [m] with ``radii`` (K,) [m]."""
        c = np.ascontiguousarray(centres, dtype=np.float64).reshape(-1, 3)
        r = np.ascontiguousarray(radii, dtype=np.float64).reshape(-1)
        if r.shape != (len(c),) or np.any(r < 0) or not np.all(np.isfinite(c)):
            raise InputError("SphereGrid.radii", r.shape, f"must be {len(c)} finite radii >= 0 with finite centres")
        if cell is None:
            cell = 2.0 * float(r.max()) if len(r) and r.max() > 0 else 1.0
        if not (cell > 0 and math.isfinite(cell)):
            raise InputError("SphereGrid.cell", cell, "must be a finite number > 0 [m]")
        cell_of = np.floor(c / cell).astype(np.int64)
        nb = 1 << max(4, int(math.ceil(math.log2(max(len(c), 1) * 2))))
        h = ((cell_of[:, 0] * 73856093) ^ (cell_of[:, 1] * 19349663) ^ (cell_of[:, 2] * 83492791)) & (nb - 1)
        order = np.argsort(h, kind="stable").astype(np.int64)
        bucket_start = np.zeros(nb + 1, np.int64)
        np.cumsum(np.bincount(h, minlength=nb), out=bucket_start[1:])
        return SphereGrid(c, r, float(cell), cell_of, bucket_start, order)

    def args(self) -> tuple:
        """Kernel arguments after the query: ``(centres, radii, cell_of, bucket_start, order, inv_cell,
        max_radius, mask)``."""
        return (self.centres, self.radii, self.cell_of, self.bucket_start, self.order, 1.0 / self.cell,
                self.max_radius, self.mask)


@cpu_parallel
def _query_rows(n, q, qr, centres, radii, cell_of, bucket_start, order, inv_cell, max_radius, mask, out, count,
                capacity):
    for i in prange(n):
        count[i] = _query(q[i, 0], q[i, 1], q[i, 2], qr[i], centres, radii, cell_of, bucket_start, order, inv_cell,
                          max_radius, mask, out, i, capacity)


def query_points(grid: SphereGrid, centres, radii, *, capacity: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """Spheres of ``grid`` overlapping each query sphere.

    Returns:
        ``(out (n, capacity) int64 padded with -1, count (n,))``; ``count > capacity`` means the row
        was truncated.
    """
    q = np.ascontiguousarray(centres, dtype=np.float64).reshape(-1, 3)
    qr = np.broadcast_to(np.asarray(radii, dtype=np.float64), (len(q),)).copy()
    out = np.full((len(q), int(capacity)), -1, np.int64)
    count = np.zeros(len(q), np.int64)
    if len(q) and len(grid.radii):
        _query_rows(len(q), q, qr, *grid.args(), out, count, int(capacity))
    return out, count
