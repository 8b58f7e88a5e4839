"""Probe shapes: sphere, the five platonic solids, any closed mesh; tessellation; mass; Table 4.7.

Seed 004 §2.3.2 "probe resolution" and §4.2.2 (Table 4.7, eqs 4.8–4.10).

* **Geometry**: :func:`platonic` builds a solid from its polygonal faces (the convex hull of the
  classical vertex sets, coplanar hull triangles merged into pentagons/squares/triangles),
  :func:`sphere_probe` an analytic sphere, :func:`mesh_probe` any closed triangle mesh.
* **Tessellation** (Fig 2.26): level L puts N = 2^L segments on every edge. Triangular faces are
  split by midpoints into 4^L triangles; an n-gon (n >= 4) is split at level 1 into n quadrilaterals
  (corner, edge midpoint, centroid, edge midpoint), each then into 4^(L-1) quads. Every vertex is
  typed (Fig 2.28, eq 2.33): CORNER (a vertex of the solid), EDGE (inside an edge; carries the unit
  edge direction) or FACE (inside a face; carries the unit outward face normal).
  Vertex counts: triangles V + E(N-1) + F(N-1)(N-2)/2; n-gons (L >= 1, m = N/2)
  V + E(N-1) + F(1 + n(m-1) + n(m-1)²).
* **Mass** (:func:`probe_mass_properties`): ``solid`` (uniform), ``shell`` (all mass on the faces, thin
  shell) and ``core`` (a uniform solid of the same shape scaled by 1/√3 about the centroid, which
  reproduces Table 4.7's "core j" = solid j / 3 for all five solids; the seed does not define the
  core distribution in the surviving text, so this is our reading of the table).
* **Table 4.7** (:func:`table_4_7`): from m = 5 kg and ρ = 500 kg/m³, the edge length s from eq 4.8
  (``s = (m / (ρ v))^{1/3}``, v = V/s³), the vertex radius r = s √l (l = r²/s²), the reduced inertias j
  of eq 4.9 (``I = j m s² E``) and the vertex defect δ of eq 4.10 (``δ = 2π - Σ β_i``).
  Misprints corrected: the tetrahedron's vertex radius is 0.2691 m (printed 0.2330), the density is
  500 kg/m³ (the text says g/cm³), and the sphere's core j is 2/15 = 0.1333 (printed 0.0133: every
  other row has core j = solid j / 3).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from components.mesh import check_closed_mesh
from components.probe import ProbeShapes, ShapeKind, VertexType
from ecs.errors import InputError
from scenes.assets import mass_properties as mp

__all__ = ["PLATONIC", "ProbeGeometry", "add_probe_shape", "mesh_probe", "platonic", "probe_mass_properties",
           "sphere_probe", "table_4_7", "tessellate", "vertex_defect"]

#: The five platonic solids and the sphere, in Table 4.7's order.
PLATONIC = ("dodecahedron", "icosahedron", "cube", "octahedron", "tetrahedron")
_PHI = (1.0 + math.sqrt(5.0)) / 2.0
#: Scale of the core distribution (a uniform solid of the same shape, scaled about the centroid).
CORE_SCALE = 1.0 / math.sqrt(3.0)


@dataclass(eq=False)
class ProbeGeometry:
    """A probe shape in its body frame (centroid at the origin).

    Attributes:
        name: shape name.
        kind: SPHERE or POLYHEDRON.
        radius: sphere radius, or bounding radius about the origin [m].
        corners: the solid's vertices [m], (V, 3).
        polygons: the solid's faces as lists of corner indices, counter-clockwise seen from outside.
        level: tessellation level.
        vertices: contact vertices [m], (k, 3) (empty for a sphere).
        types: :class:`components.probe.VertexType` codes, int8 (k,).
        directions: unit edge direction / outward face normal / zero, (k, 3).
        triangles: the tessellated surface, (t, 3) indices into ``vertices``, outward wound.
    """

    name: str
    kind: ShapeKind
    radius: float
    corners: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    polygons: list = field(default_factory=list)
    level: int = 0
    vertices: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    types: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    directions: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    triangles: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.int64))

    @property
    def edge_length(self) -> float:
        """Edge length s [m] of a regular solid (length of the first polygon's first edge)."""
        p = self.polygons[0]
        return float(np.linalg.norm(self.corners[p[1]] - self.corners[p[0]]))

    def tessellated(self, level: int) -> "ProbeGeometry":
        """The same solid tessellated to ``level`` (0–4 typical; 0 = corners only)."""
        if self.kind == ShapeKind.SPHERE:
            return self
        pts, types, dirs, tris = tessellate(self.corners, self.polygons, level, corner_types=self._corner_types,
                                            feature_edges=self._feature_edges)
        return ProbeGeometry(self.name, self.kind, self.radius, self.corners, self.polygons, int(level), pts, types,
                             dirs, tris, _corner_types=self._corner_types, _feature_edges=self._feature_edges)

    _corner_types: np.ndarray | None = None
    _feature_edges: dict | None = None


# --------------------------------------------------------------------------------------------------
# solids
# --------------------------------------------------------------------------------------------------


def _platonic_points(name: str) -> np.ndarray:
    if name == "tetrahedron":
        return np.array([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]], float)
    if name == "cube":
        return np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    if name == "octahedron":
        return np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], float)
    if name == "icosahedron":
        p = []
        for a in (-1, 1):
            for b in (-_PHI, _PHI):
                p += [[0, a, b], [a, b, 0], [b, 0, a]]
        return np.array(p, float)
    if name == "dodecahedron":
        p = [[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]
        for a in (-1 / _PHI, 1 / _PHI):
            for b in (-_PHI, _PHI):
                p += [[0, a, b], [a, b, 0], [b, 0, a]]
        return np.array(p, float)
    raise InputError("platonic.name", name, f"must be one of {', '.join(PLATONIC)}")


#: Each platonic solid's faces, as :func:`_platonic_points` numbers its vertices: counter-clockwise
#: seen from outside, each face's first vertex and the faces' order as the convex hull gives them
#: (scipy's ``ConvexHull``, its coplanar triangles merged by plane, the faces sorted by their sorted
#: vertex indices). A table rather than the hull at run time: importing ``scipy.spatial`` took
#: 0.22-0.37 s of every run's scene build (2026-12-01). ``tests/test_probes.py`` derives
#: every face from the hull again.
PLATONIC_FACES = {
    "dodecahedron": [[16, 10, 0, 9, 1], [14, 8, 0, 10, 2], [15, 9, 0, 8, 4], [3, 16, 1, 11, 17], [5, 11, 1, 9, 15],
                     [3, 12, 2, 10, 16], [6, 14, 2, 12, 18], [18, 12, 3, 17, 7], [5, 15, 4, 13, 19],
                     [6, 13, 4, 8, 14], [17, 11, 5, 19, 7], [19, 13, 6, 18, 7]],
    "icosahedron": [[2, 0, 1], [1, 0, 7], [6, 0, 2], [5, 0, 6], [7, 0, 5], [2, 1, 8], [3, 1, 7], [8, 1, 3],
                    [6, 2, 4], [4, 2, 8], [11, 3, 7], [8, 3, 9], [9, 3, 11], [6, 4, 10], [9, 4, 8], [10, 4, 9],
                    [10, 5, 6], [7, 5, 11], [11, 5, 10], [10, 9, 11]],
    "cube": [[2, 0, 1, 3], [1, 0, 4, 5], [4, 0, 2, 6], [3, 1, 5, 7], [6, 2, 3, 7], [5, 4, 6, 7]],
    "octahedron": [[4, 0, 2], [2, 0, 5], [3, 0, 4], [5, 0, 3], [2, 1, 4], [5, 1, 2], [4, 1, 3], [3, 1, 5]],
    "tetrahedron": [[2, 0, 1], [1, 0, 3], [3, 0, 2], [2, 1, 3]],
}


def platonic(name: str, *, edge: float | None = None, mass: float | None = None, density: float | None = None,
             level: int = 0) -> ProbeGeometry:
    """A platonic solid centred at the origin, tessellated to ``level``.

    Size: give ``edge`` [m], or ``mass`` [kg] and ``density`` [kg/m³] (eq 4.8), or nothing (unit edge).
    """
    pts = _platonic_points(name)
    polys = [list(p) for p in PLATONIC_FACES[name]]
    pts = pts - pts.mean(axis=0)
    pts = pts / np.linalg.norm(pts[polys[0][1]] - pts[polys[0][0]])  # unit edge
    if edge is not None and (mass is not None or density is not None):
        raise InputError("platonic.edge/mass/density", {"edge": edge, "mass": mass, "density": density},
                         "give either edge or mass and density")
    if edge is not None:
        s = mp._positive(edge, "platonic.edge", "m")
    elif mass is not None or density is not None:
        if mass is None or density is None:
            raise InputError("platonic.mass/density", {"mass": mass, "density": density}, "give both mass and density")
        m = mp._positive(mass, "platonic.mass", "kg")
        rho = mp._positive(density, "platonic.density", "kg/m^3")
        s = (m / (rho * _volume_unit_edge(pts, polys))) ** (1.0 / 3.0)  # eq 4.8
    else:
        s = 1.0
    corners = pts * s
    g = ProbeGeometry(name, ShapeKind.POLYHEDRON, float(np.max(np.linalg.norm(corners, axis=1))), corners, polys,
                      _corner_types=np.zeros(len(corners), np.int8), _feature_edges=None)
    return g.tessellated(level)


def box(size, *, level: int = 0) -> ProbeGeometry:
    """A rectangular box of edge lengths ``size`` = (a, b, c) [m] along body x, y, z, centred at the
    origin, tessellated to ``level`` (its six faces are quadrilaterals: see :func:`tessellate`)."""
    try:
        a, b, c = (float(x) for x in size)
    except (TypeError, ValueError):
        raise InputError("box.size", size, "must be three edge lengths (a, b, c) [m]") from None
    for name, x in zip("abc", (a, b, c)):
        mp._positive(x, f"box.size.{name}", "m")
    corners = np.array([[sx * a, sy * b, sz * c] for sx in (-0.5, 0.5) for sy in (-0.5, 0.5) for sz in (-0.5, 0.5)])
    # corner index = 4 ix + 2 iy + iz; each face counter-clockwise seen from outside
    polys = [[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4], [1, 5, 7, 3]]
    g = ProbeGeometry("box", ShapeKind.POLYHEDRON, float(np.max(np.linalg.norm(corners, axis=1))), corners, polys,
                      _corner_types=np.zeros(len(corners), np.int8), _feature_edges=None)
    return g.tessellated(level)


def _fan(polys) -> np.ndarray:
    return np.array([[p[0], p[k], p[k + 1]] for p in polys for k in range(1, len(p) - 1)], np.int64)


def _volume_unit_edge(pts, polys) -> float:
    t = _fan(polys)
    a, b, c = pts[t[:, 0]], pts[t[:, 1]], pts[t[:, 2]]
    return float(np.sum(np.einsum("ij,ij->i", a, np.cross(b, c)))) / 6.0


def sphere_probe(radius: float) -> ProbeGeometry:
    """An analytic sphere of ``radius`` [m] (no vertices: contact along -∇d)."""
    r = mp._positive(radius, "sphere_probe.radius", "m")
    return ProbeGeometry("sphere", ShapeKind.SPHERE, r)


def mesh_probe(vertices, faces, *, level: int = 0, name: str = "mesh", feature_angle: float = 1.0) -> ProbeGeometry:
    """A probe from any closed triangle mesh (body frame as given), tessellated to ``level``.

    Edges whose dihedral angle exceeds ``feature_angle`` [deg] are the solid's edges; a mesh vertex is a
    CORNER unless it lies on none (FACE) or on exactly two collinear feature edges (EDGE).
    """
    v, f = check_closed_mesh(vertices, faces, field=f"mesh_probe {name}")
    fn = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
    fn /= np.linalg.norm(fn, axis=1, keepdims=True)
    faces_of: dict[tuple, list] = {}
    for t, tri in enumerate(f):
        for j in range(3):
            a, b = int(tri[j]), int(tri[(j + 1) % 3])
            faces_of.setdefault((min(a, b), max(a, b)), []).append(t)
    cos_tol = math.cos(math.radians(float(feature_angle)))
    feature = {e: (float(fn[ts[0]] @ fn[ts[1]]) < cos_tol, fn[ts[0]] + fn[ts[1]]) for e, ts in faces_of.items()}
    ctypes = np.full(len(v), VertexType.FACE, np.int8)
    inc: dict[int, list] = {}
    for (a, b), (is_feat, _) in feature.items():
        if is_feat:
            inc.setdefault(a, []).append(b)
            inc.setdefault(b, []).append(a)
    cdirs = np.zeros_like(v)
    for i, nb in inc.items():
        if len(nb) == 2:
            d1 = v[nb[0]] - v[i]
            d2 = v[nb[1]] - v[i]
            if np.linalg.norm(np.cross(d1, d2)) <= 1e-9 * np.linalg.norm(d1) * np.linalg.norm(d2) and d1 @ d2 < 0:
                ctypes[i] = VertexType.EDGE
                cdirs[i] = d1 / np.linalg.norm(d1)
                continue
        ctypes[i] = VertexType.CORNER
    g = ProbeGeometry(name, ShapeKind.POLYHEDRON, float(np.max(np.linalg.norm(v, axis=1))), v,
                      [list(map(int, t)) for t in f], _corner_types=ctypes, _feature_edges=feature)
    g._corner_dirs = cdirs
    out = g.tessellated(level)
    # corner rows come first: give EDGE/FACE-typed mesh vertices their direction
    for i in range(len(v)):
        if ctypes[i] == VertexType.EDGE:
            out.directions[i] = cdirs[i]
        elif ctypes[i] == VertexType.FACE:
            ts = [t for t in range(len(f)) if i in f[t]]
            n = fn[ts].sum(axis=0)
            out.directions[i] = n / np.linalg.norm(n)
    return out


# --------------------------------------------------------------------------------------------------
# tessellation
# --------------------------------------------------------------------------------------------------


#: The most surface points a tessellated probe may have (a cube at level 6 has about 26,000; the
#: collision and contact phases visit every point at every check).
MAX_TESSELLATION_POINTS = 100_000


def _tessellation_points(polygons, level: int) -> int:
    """Upper estimate of the points of ``polygons`` tessellated to ``level``: each polygon as a fan
    of triangles, each split into N² with (N + 1)(N + 2)/2 points, N = 2^level."""
    n = 2 ** max(level, 0)
    return sum((len(p) - 2) * (n + 1) * (n + 2) // 2 for p in polygons)


def tessellate(corners, polygons, level: int, *, corner_types=None, feature_edges=None):
    """Midpoint tessellation of a polyhedron with planar polygonal faces (see the module doc).

    Args:
        corners: (V, 3) [m]. polygons: faces as corner-index lists, counter-clockwise outside.
        level: 0 (corners only) .. any; N = 2^level segments per edge.
        corner_types: type of each corner (default all CORNER).
        feature_edges: ``{(a, b): (is_feature, normal_sum)}`` for meshes; None: every edge is an edge of
            the solid.

    Returns:
        ``(points (k, 3), types int8 (k,), directions (k, 3), triangles int64 (t, 3))``; the first V
        points are the corners.
    """
    if int(level) != level or level < 0:
        raise InputError("tessellate.level", level, "must be an integer >= 0")
    level = int(level)
    est = _tessellation_points(polygons, level)
    if est > MAX_TESSELLATION_POINTS:           # absurd work: refused before anything is built
        raise InputError("tessellate.level", level,
                         f"gives about {est:,} surface points, more than {MAX_TESSELLATION_POINTS:,} (every contact "
                         f"check visits each point): use level <= "
                         f"{max(k for k in range(level) if _tessellation_points(polygons, k) <= MAX_TESSELLATION_POINTS)}"
                         f" for this shape")
    P = np.asarray(corners, dtype=np.float64)
    N = 2 ** level
    pts = [p for p in P]
    types = list(np.zeros(len(P), np.int8) if corner_types is None else np.asarray(corner_types, np.int8))
    dirs = [np.zeros(3) for _ in P]
    # canonical edge points: (a, b) with a < b, k = 1..N-1 from a
    edge_pt: dict[tuple, list[int]] = {}

    def normal_of(poly):
        c = P[poly].mean(axis=0)
        n = np.zeros(3)
        for i in range(len(poly)):
            n += np.cross(P[poly[i]] - c, P[poly[(i + 1) % len(poly)]] - c)
        return n / np.linalg.norm(n)

    def edge_points(a, b):
        key = (min(a, b), max(a, b))
        if key not in edge_pt:
            lo, hi = key
            d = P[hi] - P[lo]
            if feature_edges is None or feature_edges[key][0]:
                t, dd = VertexType.EDGE, d / np.linalg.norm(d)
            else:
                ns = feature_edges[key][1]
                t, dd = VertexType.FACE, ns / np.linalg.norm(ns)
            ids = []
            for k in range(1, N):
                ids.append(len(pts))
                pts.append(P[lo] + d * (k / N))
                types.append(t)
                dirs.append(dd)
            edge_pt[key] = ids
        return key

    def on_edge(a, b, k):
        """Index of the point k/N along the edge from a to b (k in 0..N)."""
        if k == 0:
            return a
        if k == N:
            return b
        key = edge_points(a, b)
        ids = edge_pt[key]
        return ids[k - 1] if a == key[0] else ids[N - k - 1]

    def new_point(p, n):
        pts.append(p)
        types.append(VertexType.FACE)
        dirs.append(n)
        return len(pts) - 1

    tris = []
    for poly in polygons:
        n = normal_of(poly)
        for i in range(len(poly)):
            edge_points(poly[i], poly[(i + 1) % len(poly)])
        if len(poly) == 3 or level == 0:
            if len(poly) != 3:  # level 0 n-gon: fan over the corners
                tris += [[poly[0], poly[k], poly[k + 1]] for k in range(1, len(poly) - 1)]
                continue
            A, B, C = poly
            idx = {}
            for i in range(N + 1):
                for j in range(N + 1 - i):
                    if i == 0:
                        idx[i, j] = on_edge(A, C, j)
                    elif j == 0:
                        idx[i, j] = on_edge(A, B, i)
                    elif i + j == N:
                        idx[i, j] = on_edge(B, C, j)
                    else:
                        idx[i, j] = new_point(P[A] + (P[B] - P[A]) * (i / N) + (P[C] - P[A]) * (j / N), n)
            for i in range(N):
                for j in range(N - i):
                    tris.append([idx[i, j], idx[i + 1, j], idx[i, j + 1]])
                    if i + j < N - 1:
                        tris.append([idx[i + 1, j], idx[i + 1, j + 1], idx[i, j + 1]])
            continue
        # n-gon at level >= 1: n quads (corner, midpoint, centroid, midpoint), m x m cells each
        m = N // 2
        k_ = len(poly)
        C = new_point(P[poly].mean(axis=0), n)
        mids = [on_edge(poly[i], poly[(i + 1) % k_], m) for i in range(k_)]
        spokes = []
        for i in range(k_):  # spoke i from the midpoint M_i (s = 0) to the centroid (s = m)
            ids = [mids[i]]
            for s_ in range(1, m):
                ids.append(new_point(pts[mids[i]] + (pts[C] - pts[mids[i]]) * (s_ / m), n))
            ids.append(C)
            spokes.append(ids)
        for i in range(k_):
            Pi, Pn, Pp = poly[i], poly[(i + 1) % k_], poly[i - 1]
            Mi, Mp = pts[mids[i]], pts[mids[i - 1]]
            q = {}
            for u in range(m + 1):
                for w in range(m + 1):
                    if w == 0:
                        q[u, w] = on_edge(Pi, Pn, u)
                    elif u == 0:
                        q[u, w] = on_edge(Pi, Pp, w)
                    elif u == m:
                        q[u, w] = spokes[i][w]
                    elif w == m:
                        q[u, w] = spokes[i - 1][u]
                    else:
                        a_, b_ = u / m, w / m
                        q[u, w] = new_point((1 - a_) * (1 - b_) * P[Pi] + a_ * (1 - b_) * Mi + a_ * b_ * pts[C]
                                            + (1 - a_) * b_ * Mp, n)
            for u in range(m):
                for w in range(m):
                    tris.append([q[u, w], q[u + 1, w], q[u + 1, w + 1]])
                    tris.append([q[u, w], q[u + 1, w + 1], q[u, w + 1]])
    return (np.array(pts, np.float64), np.array(types, np.int8), np.array(dirs, np.float64),
            np.array(tris, np.int64))


# --------------------------------------------------------------------------------------------------
# mass, bounding sphere, registration
# --------------------------------------------------------------------------------------------------


def probe_mass_properties(geom: ProbeGeometry, *, mass: float, distribution: str = "solid",
                          core_scale: float = CORE_SCALE) -> mp.MassProperties:
    """Mass properties of a probe (body frame): ``solid``, ``shell`` (mass on the faces) or ``core``.

    ``core``: a uniform solid of the same shape scaled by ``core_scale`` about its centroid.
    """
    m = mp._positive(mass, "probe_mass_properties.mass", "kg")
    if distribution not in ("solid", "shell", "core"):
        raise InputError("probe_mass_properties.distribution", distribution, "must be 'solid', 'shell' or 'core'")
    if geom.kind == ShapeKind.SPHERE:
        R = geom.radius
        if distribution == "solid":
            return mp.sphere(R, mass=m)
        if distribution == "shell":
            return mp.MassProperties(mass=m, com=np.zeros(3), inertia=(2.0 / 3.0) * m * R * R * np.eye(3))
        return mp.sphere(R * mp._positive(core_scale, "core_scale", "1"), mass=m)
    tri = _fan(geom.polygons)
    if distribution == "solid":
        return mp.solid_mesh(geom.corners, tri, mass=m)
    if distribution == "shell":
        return mp.shell_mesh(geom.corners, tri, mass=m)
    c = mp.solid_mesh(geom.corners, tri, mass=m).com
    k = mp._positive(core_scale, "core_scale", "1")
    return mp.solid_mesh(c + k * (geom.corners - c), tri, mass=m)


def vertex_defect(geom: ProbeGeometry) -> np.ndarray:
    """Vertex defect δ = 2π - Σ β_i at every corner [rad] (eq 4.10)."""
    P = geom.corners
    total = np.zeros(len(P))
    for poly in geom.polygons:
        k = len(poly)
        for i in range(k):
            a, b, c = P[poly[i - 1]], P[poly[i]], P[poly[(i + 1) % k]]
            u, w = a - b, c - b
            total[poly[i]] += math.atan2(float(np.linalg.norm(np.cross(u, w))), float(u @ w))
    return 2.0 * math.pi - total


def add_probe_shape(shapes: ProbeShapes, geom: ProbeGeometry) -> int:
    """Register ``geom`` in a :class:`components.probe.ProbeShapes` resource; returns its index."""
    if geom.kind == ShapeKind.SPHERE:
        return shapes.add(geom.name, kind=ShapeKind.SPHERE, radius=geom.radius)
    r = float(np.max(np.linalg.norm(geom.vertices, axis=1)))
    return shapes.add(f"{geom.name}-L{geom.level}", kind=ShapeKind.POLYHEDRON, radius=r, positions=geom.vertices,
                      types=geom.types, directions=geom.directions)


def table_4_7(mass: float = 5.0, density: float = 500.0) -> dict[str, dict[str, float]]:
    """Seed 004 Table 4.7 computed from geometry: ``{shape: {column: value}}``.

    Columns: ``n_faces``, ``n_vertices``, ``l`` (r²/s²), ``v`` (V/s³), ``r`` (vertex radius [m]),
    ``s`` (edge [m]; the radius for the sphere), ``j_shell``, ``j_solid``, ``j_core`` (eq 4.9,
    I = j m s²), ``js2_solid`` [m²], ``defect_deg`` (eq 4.10). The sphere uses s = r (l = 1).
    """
    m = mp._positive(mass, "table_4_7.mass", "kg")
    rho = mp._positive(density, "table_4_7.density", "kg/m^3")
    rows = {}
    R = (3.0 * m / (4.0 * math.pi * rho)) ** (1.0 / 3.0)
    sp = sphere_probe(R)
    j = {d: float(probe_mass_properties(sp, mass=m, distribution=d).inertia[0, 0]) / (m * R * R)
         for d in ("shell", "solid", "core")}
    rows["sphere"] = {"n_faces": math.inf, "n_vertices": math.inf, "l": 1.0, "v": 4.0 * math.pi / 3.0, "r": R, "s": R,
                      "j_shell": j["shell"], "j_solid": j["solid"], "j_core": j["core"], "js2_solid": j["solid"] * R * R,
                      "defect_deg": 0.0}
    for name in PLATONIC:
        g = platonic(name, mass=m, density=rho)
        s = g.edge_length
        r = float(np.max(np.linalg.norm(g.corners, axis=1)))
        vol = mp.solid_mesh(g.corners, _fan(g.polygons), density=1.0).mass
        j = {d: float(np.mean(np.diag(probe_mass_properties(g, mass=m, distribution=d).inertia))) / (m * s * s)
             for d in ("shell", "solid", "core")}
        rows[name] = {"n_faces": len(g.polygons), "n_vertices": len(g.corners), "l": r * r / (s * s),
                      "v": vol / s ** 3, "r": r, "s": s, "j_shell": j["shell"], "j_solid": j["solid"],
                      "j_core": j["core"], "js2_solid": j["solid"] * s * s,
                      "defect_deg": float(np.degrees(vertex_defect(g)).mean())}
    return rows
