"""Procedural small bodies that need no download: sphere, ellipsoid, Itokawa-like, KW4-like.

Each body is an analytic signed distance shape (:class:`components.terrain.AnalyticShape`), from which
it yields an SDF grid (seed 004 §2.2.3) and a watertight triangle mesh for polyhedron gravity.

* ``sphere`` and ``ellipsoid``: exact distances (the ellipsoid's by a 1-D root find).
* ``itokawa``: two ellipsoidal lobes (body and head) joined by a smooth union, inside the
  268 × 147 × 105 m semi-axis envelope of seed 004 Table 4.1 (asteroid 25143 Itokawa's a, b, c: the
  real body is about 535 × 294 × 209 m overall).
* ``kw4``: an oblate spheroid with an equatorial ridge (a torus blended in by a smooth union), the
  spinning-top shape of (66391) 1999 KW4 Alpha (about 1.53 × 1.50 × 1.35 km).

Meshes come from **marching tetrahedra** on the grid (scikit-image, whose marching cubes is the usual
tool, is not a dependency): each grid cell is split into the six tetrahedra of the Kuhn (Freudenthal)
decomposition along its main diagonal, which neighbouring cells share face diagonals with, so the
surface has no ambiguous cases and is closed and manifold by construction. A crossing point is placed
by linear interpolation on its edge, kept at least :data:`EDGE_MARGIN` of the edge away from either
node so no triangle degenerates; vertices are shared through their edge's node pair. The result
passes :func:`components.mesh.check_closed_mesh` (and trimesh's ``is_watertight``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from components.mesh import check_closed_mesh
from components.terrain import AnalyticShape, SDFGrid, sdf_ellipsoid, sdf_sphere, sdf_torus
from ecs.errors import InputError

__all__ = ["BODIES", "SmallBody", "body_shape", "marching_tetrahedra", "small_body"]

#: Interpolated crossings stay this fraction of an edge away from its nodes (no degenerate triangles).
EDGE_MARGIN = 1e-3

#: Name -> one-line description.
BODIES = {
    "sphere": "sphere of radius 500 m (exact SDF)",
    "ellipsoid": "triaxial ellipsoid 268 x 147 x 105 m semi-axes (exact SDF)",
    "itokawa": "Itokawa-like two-lobed body within a 268 x 147 x 105 m semi-axis envelope",
    "kw4": "1999 KW4 Alpha-like oblate body (~780 x 780 x 660 m semi-axes) with an equatorial ridge",
}


@dataclass(eq=False)
class SmallBody:
    """A procedural small body.

    Attributes:
        name: body name.
        shape: the analytic signed distance shape [m], target frame.
        grid: its SDF grid.
        vertices: watertight mesh vertices [m], (n, 3).
        faces: mesh triangles, (m, 3), outward wound.
    """

    name: str
    shape: AnalyticShape
    grid: SDFGrid
    vertices: np.ndarray
    faces: np.ndarray


def body_shape(name: str, **params) -> AnalyticShape:
    """The analytic shape of a built-in body (``params``: ``radius`` or ``semi_axes`` for the simple ones)."""
    if name == "sphere":
        return sdf_sphere(params.get("radius", 500.0))
    if name == "ellipsoid":
        return sdf_ellipsoid(params.get("semi_axes", (268.0, 147.0, 105.0)))
    if name == "itokawa":
        body = sdf_ellipsoid((190.0, 147.0, 105.0), center=(-78.0, 0.0, 0.0))
        head = sdf_ellipsoid((118.0, 100.0, 82.0), center=(150.0, 0.0, 8.0))
        return body.smooth_union(head, 40.0)
    if name == "kw4":
        core = sdf_ellipsoid((720.0, 720.0, 660.0))
        ridge = sdf_torus(660.0, 100.0)
        return core.smooth_union(ridge, 150.0)
    raise InputError("body", name, f"must be one of {', '.join(BODIES)}")


def _bounds(shape: AnalyticShape, name: str) -> tuple[np.ndarray, np.ndarray]:
    ext = {"sphere": None, "ellipsoid": None, "itokawa": (290.0, 170.0, 130.0), "kw4": (800.0, 800.0, 700.0)}[name]
    if ext is None:
        p = shape.nodes[0]
        r = np.full(3, p[10]) if int(p[0]) == 0 else p[10:13]
        ext = tuple(1.05 * r)
    e = np.asarray(ext, float)
    return -e, e


def small_body(name: str, *, resolution: int = 64, sdf: str = "analytic", **params) -> SmallBody:
    """Build a procedural small body: its shape, SDF grid and watertight mesh.

    Args:
        name: one of :data:`BODIES`.
        resolution: grid nodes along the longest axis (mesh and SDF grid).
        sdf: ``"analytic"`` (grid sampled from the shape) or ``"mesh"`` (exact distance to the mesh,
            :func:`scenes.assets.sdf_build.sdf_from_mesh`, consistent with a gravity polyhedron).
        params: shape parameters (``radius`` for the sphere, ``semi_axes`` for the ellipsoid).
    """
    from scenes.assets.sdf_build import grid_from_shape, sdf_from_mesh

    if int(resolution) != resolution or resolution < 8:
        raise InputError("small_body.resolution", resolution, "must be an integer >= 8 [nodes]")
    if sdf not in ("analytic", "mesh"):
        raise InputError("small_body.sdf", sdf, "must be 'analytic' or 'mesh'")
    shape = body_shape(name, **params)
    lo, hi = _bounds(shape, name)
    grid = grid_from_shape(shape, lower=lo, upper=hi, resolution=int(resolution))
    v, f = marching_tetrahedra(grid)
    if sdf == "mesh":
        grid = sdf_from_mesh(v, f, origin=grid.origin, spacing=grid.spacing, shape=grid.shape)
    return SmallBody(name, shape, grid, v, f)


def write_shipped_body_grid(name: str, *, resolution: int = 64, **params):
    """The recipe of a body's shipped SDF grid (:mod:`scenes.assets.shipped`): the grid
    :func:`small_body` samples for ``name`` at ``resolution``, sampled afresh and written to the
    shipped fields under its key (:func:`scenes.assets.sdf_build.write_shipped_shape_grid`). Returns
    the file's path."""
    from scenes.assets.sdf_build import write_shipped_shape_grid

    shape = body_shape(name, **params)
    lo, hi = _bounds(shape, name)
    return write_shipped_shape_grid(shape, lower=lo, upper=hi, resolution=int(resolution))


# Kuhn decomposition: the 6 tetrahedra of a cube along its (0,0,0)-(1,1,1) diagonal, as corner bits
# (bit 0 = +x, bit 1 = +y, bit 2 = +z).
_TETS = np.array([[0, 1 << p[0], (1 << p[0]) | (1 << p[1]), 7] for p in itertools.permutations(range(3))])


def marching_tetrahedra(grid: SDFGrid, *, level: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Watertight triangle mesh of the zero set ``d = level`` of an SDF grid (see the module doc).

    Returns:
        ``(vertices (n, 3) [m], faces (m, 3))``, outward wound (normals toward d > level).

    Raises:
        InputError: if the surface touches the grid boundary (the mesh would be open) or is empty.
    """
    v = np.asarray(grid.values, dtype=np.float64) - float(level)
    nx, ny, nz = v.shape
    inside = v < 0.0
    if not inside.any():
        raise InputError("marching_tetrahedra.grid", "no node inside", "the zero set is empty")
    border = np.ones_like(inside)
    border[1:-1, 1:-1, 1:-1] = False
    if np.any(inside & border):
        raise InputError("marching_tetrahedra.grid", f"{int(np.sum(inside & border))} boundary nodes inside",
                         "the body must lie strictly inside the grid (add padding)")
    flat = v.reshape(-1)
    # cells with a sign change
    corners = []
    for b in range(8):
        dx, dy, dz = b & 1, (b >> 1) & 1, (b >> 2) & 1
        corners.append(inside[dx:nx - 1 + dx, dy:ny - 1 + dy, dz:nz - 1 + dz])
    s = np.sum(corners, axis=0)
    ci, cj, ck = np.nonzero((s > 0) & (s < 8))
    base = (ci * ny + cj) * nz + ck
    offs = np.array([((b & 1) * ny + ((b >> 1) & 1)) * nz + ((b >> 2) & 1) for b in range(8)])
    tri_edges = []
    for tet in _TETS:
        ids = base[:, None] + offs[tet][None, :]  # (n, 4) flat node ids
        ins = flat[ids] < 0.0
        k = ins.sum(axis=1)
        order = np.argsort(~ins, axis=1, kind="stable")  # inside corners first
        o = np.take_along_axis(ids, order, axis=1)
        for kk in (1, 3):
            sel = k == kk
            if not sel.any():
                continue
            oo = o[sel]
            lone = oo[:, 0] if kk == 1 else oo[:, 3]
            others = oo[:, 1:4] if kk == 1 else oo[:, 0:3]
            tri_edges.append(np.stack([np.stack([lone, others[:, j]], 1) for j in range(3)], 1))
        sel = k == 2
        if sel.any():
            oo = o[sel]
            i1, i2, o1, o2 = oo[:, 0], oo[:, 1], oo[:, 2], oo[:, 3]
            q = [np.stack(p, 1) for p in ((i1, o1), (i1, o2), (i2, o2), (i2, o1))]
            tri_edges.append(np.stack([q[0], q[1], q[2]], 1))
            tri_edges.append(np.stack([q[0], q[2], q[3]], 1))
    te = np.concatenate(tri_edges)  # (t, 3, 2) node pairs
    a = np.minimum(te[..., 0], te[..., 1]).reshape(-1)
    b = np.maximum(te[..., 0], te[..., 1]).reshape(-1)
    key = a.astype(np.int64) * flat.size + b
    ukey, inv = np.unique(key, return_inverse=True)
    ua, ub = ukey // flat.size, ukey % flat.size
    va, vb = flat[ua], flat[ub]
    t = np.clip(va / (va - vb), EDGE_MARGIN, 1.0 - EDGE_MARGIN)

    def pos(idx):
        i, rem = np.divmod(idx, ny * nz)
        j, k = np.divmod(rem, nz)
        return grid.origin + grid.spacing * np.stack([i, j, k], 1)

    pa, pb = pos(ua), pos(ub)
    verts = pa + t[:, None] * (pb - pa)
    faces = inv.reshape(-1, 3).astype(np.int64)
    # orient every triangle toward the outside node of its first edge's pair
    p0, p1, p2 = verts[faces[:, 0]], verts[faces[:, 1]], verts[faces[:, 2]]
    n = np.cross(p1 - p0, p2 - p0)
    e0 = te[:, 0, :]
    out_node = np.where(flat[e0[:, 0]] >= 0.0, e0[:, 0], e0[:, 1])
    in_node = np.where(flat[e0[:, 0]] >= 0.0, e0[:, 1], e0[:, 0])
    g = pos(out_node) - pos(in_node)
    flip = np.einsum("ij,ij->i", n, g) < 0.0
    faces[flip] = faces[flip][:, [0, 2, 1]]
    check_closed_mesh(verts, faces, field="marching_tetrahedra mesh")
    return verts, faces
