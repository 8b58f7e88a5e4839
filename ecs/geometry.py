"""Small geometry shared by component validation and the systems' kernels.

* :data:`face_plane` — first vertex and outward (unnormalised) normal of a mesh triangle, a dual
  kernel (:func:`ecs.kernels.dual`) used by the convex-rock distance of :mod:`systems.terrain.sdf`;
* :func:`convex_violation` — how far a rock's vertices stick out of its own face planes, the
  convexity check of :class:`components.terrain.RockField`.

They sit in the bottom layer because both a component (validation) and a system (kernels) need them.
"""

from __future__ import annotations

import math

import numba

from ecs.kernels import dual

__all__ = ["convex_violation", "face_plane", "normalize3"]


def _face_plane(vertices, triangles, t):
    """First vertex a and (unnormalised, outward for outward winding) normal (b − a) × (c − a) of
    triangle t: ``(ax, ay, az, nx, ny, nz)``."""
    ia = triangles[t, 0]
    ib = triangles[t, 1]
    ic = triangles[t, 2]
    ax = vertices[ia, 0]
    ay = vertices[ia, 1]
    az = vertices[ia, 2]
    ex1 = vertices[ib, 0] - ax
    ey1 = vertices[ib, 1] - ay
    ez1 = vertices[ib, 2] - az
    ex2 = vertices[ic, 0] - ax
    ey2 = vertices[ic, 1] - ay
    ez2 = vertices[ic, 2] - az
    return ax, ay, az, ey1 * ez2 - ez1 * ey2, ez1 * ex2 - ex1 * ez2, ex1 * ey2 - ey1 * ex2


face_plane = dual(_face_plane)


def _normalize3(x, y, z):
    """``(x, y, z) / |(x, y, z)|``; (0, 0, 0) for the zero vector."""
    n = math.sqrt(x * x + y * y + z * z)
    if n > 0.0:
        return x / n, y / n, z / n
    return 0.0, 0.0, 0.0


normalize3 = dual(_normalize3)
_fplane = face_plane.cpu


@numba.njit(cache=True)
def convex_violation(vertices, triangles, tri_start, size):
    """Largest signed distance of a rock's vertex outside one of its own face planes, in units of the
    rock's size, and that rock: ``(worst, k)``. <= 0 for convex, outward-wound rocks; +inf for a
    degenerate (zero-area) triangle. Checks every vertex referenced by the rock's triangles.
    """
    worst = -math.inf
    kw = 0
    for k in range(tri_start.shape[0] - 1):
        for t in range(tri_start[k], tri_start[k + 1]):
            ax, ay, az, nx, ny, nz = _fplane(vertices, triangles, t)
            nn = math.sqrt(nx * nx + ny * ny + nz * nz)
            if not (nn > 0.0):
                return math.inf, k
            for t2 in range(tri_start[k], tri_start[k + 1]):
                for j in range(3):
                    v = triangles[t2, j]
                    s = (nx * (vertices[v, 0] - ax) + ny * (vertices[v, 1] - ay) + nz * (vertices[v, 2] - az)) / nn
                    s /= size[k]
                    if s > worst:
                        worst = s
                        kw = k
    return worst, kw
