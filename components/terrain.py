"""Terrain data: signed distance field grids, analytic SDF shapes, surface noise, rocks.

Data only (DESIGN.md §1); the kernels that evaluate these live in :mod:`systems.sdf`, the builders in
``scenes/assets`` (:mod:`scenes.assets.sdf_build`, :mod:`scenes.assets.noise`,
:mod:`scenes.assets.bodies`). Seed 004 (Van wal, CU Boulder) §2.2.3 and §2.3.

Resources (singletons shared by all rows, never copied per sample):

* :class:`SDFGrid` — a regular grid of signed distances (seed 004 §2.2.3, eqs 2.16–2.21): origin,
  spacing and node values ``values[i, j, k] = d(origin + (i hx, j hy, k hz))``, sampled trilinearly.
* :class:`AnalyticShape` — an analytic signed distance function: a left fold of primitives (sphere,
  plane, box, capsule, ellipsoid, torus) combined by union, intersection, smooth union or
  subtraction. Every primitive returns the exact Euclidean distance (the ellipsoid included).
* :class:`FBMNoise` — fractional Brownian motion value noise added to the SDF (eqs 2.24–2.32).
* :class:`PSRField` — procedurally seeded rocks: a periodic, non-positive rock distance texture tiled
  aperiodically (eqs 2.34–2.39).
* :class:`TerrainSDF` — what a contact system samples: a base shape (grid or analytic) plus the
  optional noise and rock fields.
* :class:`ConvexPolyhedra` — the shapes of polyhedral rocks (eqs 2.22–2.23), in each rock's frame.
* :class:`RockField` — a population of polyhedral rocks (positions, attitudes, bounding spheres).

Component:

* :class:`Rock` (``rock_*`` columns) — one static polyhedral rock as an entity, for scenes that want
  rocks in tables; its ``rock_polyhedron`` indexes a :class:`ConvexPolyhedra` resource.

Frames: every position here is in the **target frame** (the small body's body-fixed frame, in which
the terrain is static); a rock's vertices are in the rock's own frame, rotated into the target frame
by ``rock_attitude`` (scalar-first quaternion, rock -> target, the convention of components.rigid).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np

from ecs import column, component
from ecs.errors import InputError
from ecs.errors import positive_number as _pos

__all__ = [
    "AnalyticShape",
    "CSGOp",
    "ConvexPolyhedra",
    "FBMNoise",
    "NODE_WIDTH",
    "PSRField",
    "Primitive",
    "Rock",
    "RockField",
    "SDFGrid",
    "TerrainSDF",
    "sdf_box",
    "sdf_capsule",
    "sdf_ellipsoid",
    "sdf_plane",
    "sdf_sphere",
    "sdf_torus",
]


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------


def _vec(value, n: int, field: str, unit: str) -> np.ndarray:
    try:
        v = np.array(value, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise InputError(field, value, f"must be {n} finite numbers [{unit}]") from None
    if v.shape != (n,) or not np.all(np.isfinite(v)):
        raise InputError(field, value, f"must be {n} finite numbers [{unit}]")
    return v




def _unit_quat(q, field: str) -> np.ndarray:
    q = _vec(q, 4, field, "1")
    n = float(np.linalg.norm(q))
    if abs(n - 1.0) > 1e-6:
        raise InputError(field, q.tolist(), "must be a unit quaternion (scalar-first), |q| = 1 within 1e-6")
    return q / n


# --------------------------------------------------------------------------------------------------
# SDF grid
# --------------------------------------------------------------------------------------------------


@dataclass(eq=False)
class SDFGrid:
    """A signed distance field on a regular grid (seed 004 §2.2.3).

    ``values[i, j, k]`` is the signed distance [m] at the node ``origin + (i hx, j hy, k hz)``:
    negative inside the body, positive outside (eq 2.12). The grid is sampled by the trilinear
    interpolant of eqs 2.16–2.18 (:func:`systems.sdf.sample_sdf_grid`); outside the grid's box the
    value is continued as ``d(p) + |x - p|`` with ``p`` the nearest point of the box (an upper
    bound of the distance, continuous, and exact where the body is far away).

    Attributes:
        origin: position of node (0, 0, 0) [m], shape (3,), target frame.
        spacing: node spacing (hx, hy, hz) [m], shape (3,); the seed uses cubes (hx = hy = hz = Δx).
        values: node values [m], shape (nx, ny, nz), C order, float64, each n >= 2.
    """

    origin: np.ndarray
    spacing: np.ndarray
    values: np.ndarray

    def __post_init__(self):
        self.origin = _vec(self.origin, 3, "SDFGrid.origin", "m")
        sp = np.broadcast_to(np.asarray(self.spacing, dtype=np.float64), (3,)).copy() if np.ndim(self.spacing) == 0 \
            else _vec(self.spacing, 3, "SDFGrid.spacing", "m")
        for i, h in enumerate(sp):
            _pos(h, f"SDFGrid.spacing[{i}]", "m")
        self.spacing = sp
        v = np.ascontiguousarray(self.values, dtype=np.float64)
        if v.ndim != 3 or min(v.shape) < 2:
            raise InputError("SDFGrid.values", f"array of shape {v.shape}", "must be a 3-D grid with >= 2 nodes per axis")
        if not np.all(np.isfinite(v)):
            raise InputError("SDFGrid.values", f"{int(np.sum(~np.isfinite(v)))} non-finite nodes", "must be finite")
        self.values = v

    @property
    def shape(self) -> tuple[int, int, int]:
        """Nodes per axis (nx, ny, nz)."""
        return tuple(int(n) for n in self.values.shape)

    @property
    def upper(self) -> np.ndarray:
        """Position of the last node [m], shape (3,)."""
        return self.origin + self.spacing * (np.array(self.shape) - 1)

    def nodes(self) -> np.ndarray:
        """Positions of all nodes [m], shape (nx, ny, nz, 3)."""
        axes = [self.origin[a] + self.spacing[a] * np.arange(self.shape[a]) for a in range(3)]
        return np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1)

    @staticmethod
    def covering(lower, upper, spacing: float, *, padding: float = 0.0) -> tuple[np.ndarray, np.ndarray, tuple[int, int, int]]:
        """Origin, spacing and shape of a cubic-voxel grid covering ``[lower, upper]`` plus ``padding``.

        Args:
            lower, upper: corners of the box to cover [m], shape (3,).
            spacing: voxel side Δx [m].
            padding: margin added on every side [m].

        Returns:
            ``(origin, spacing (3,), (nx, ny, nz))``, the grid centred on the box.
        """
        lo = _vec(lower, 3, "covering.lower", "m")
        hi = _vec(upper, 3, "covering.upper", "m")
        h = _pos(spacing, "covering.spacing", "m")
        if padding < 0 or not math.isfinite(padding):
            raise InputError("covering.padding", padding, "must be a finite number >= 0 [m]")
        if np.any(hi < lo):
            raise InputError("covering.upper", hi.tolist(), f"must be >= lower {lo.tolist()} on every axis")
        ext = hi - lo + 2.0 * padding
        n = np.maximum(2, np.ceil(ext / h - 1e-9).astype(np.int64) + 1)
        centre = 0.5 * (lo + hi)
        origin = centre - 0.5 * h * (n - 1)
        return origin, np.full(3, h), tuple(int(x) for x in n)


# --------------------------------------------------------------------------------------------------
# analytic shapes
# --------------------------------------------------------------------------------------------------


class Primitive(enum.IntEnum):
    """Analytic primitive kinds (node column 0). Parameters ``p0..p5`` are in the node's own frame."""

    SPHERE = 0     #: p0 = radius
    PLANE = 1      #: the plane z = 0 of the node frame, outward +z (rotate/translate to place it)
    BOX = 2        #: p0..p2 = half extents along x, y, z
    CAPSULE = 3    #: segment from (0, 0, -p0) to (0, 0, p0), radius p1
    ELLIPSOID = 4  #: p0..p2 = semi-axes along x, y, z (exact distance: 1-D root find)
    TORUS = 5      #: major radius p0 about the z axis, minor radius p1


class CSGOp(enum.IntEnum):
    """How a node combines with the shape folded so far (node column 1)."""

    FIRST = 0         #: the first node: the result is this primitive
    UNION = 1         #: min(a, b)
    INTERSECTION = 2  #: max(a, b)
    SMOOTH_UNION = 3  #: polynomial smooth minimum with blend width k (node column 2)
    SUBTRACTION = 4   #: max(a, -b): a with b removed


#: Columns of one node row: [kind, op, k, cx, cy, cz, qw, qx, qy, qz, p0, p1, p2, p3, p4, p5].
NODE_WIDTH = 16


def _node(kind: Primitive, params, center, attitude) -> np.ndarray:
    row = np.zeros(NODE_WIDTH)
    row[0] = float(kind)
    row[1] = float(CSGOp.FIRST)
    row[3:6] = _vec(center, 3, f"{kind.name.lower()}.center", "m")
    row[6:10] = _unit_quat(attitude, f"{kind.name.lower()}.attitude")
    p = np.asarray(params, dtype=np.float64)
    row[10:10 + p.size] = p
    return row


@dataclass(eq=False)
class AnalyticShape:
    """An analytic signed distance function: a left fold of placed primitives.

    ``nodes[0]`` is the first primitive; each later node ``i`` combines the result so far with its
    primitive by ``CSGOp(nodes[i, 1])``: ``((p0 op1 p1) op2 p2) ...``. A node's primitive lives in its
    own frame, placed by the centre ``nodes[i, 3:6]`` [m] and the unit quaternion ``nodes[i, 6:10]``
    (scalar-first, node -> target frame). Evaluated by :func:`systems.sdf.eval_shape`.

    Distances: each primitive's value is the exact Euclidean signed distance; union and intersection
    of exact distances are exact outside (union) / inside (intersection) and bounds elsewhere; the
    smooth union is a smooth bound (it underestimates the distance by at most k/4 near the seam).
    Build grids from such shapes with :func:`scenes.assets.sdf_build.grid_from_shape`.

    Attributes:
        nodes: float64 array (n, :data:`NODE_WIDTH`).
    """

    nodes: np.ndarray

    def __post_init__(self):
        n = np.ascontiguousarray(self.nodes, dtype=np.float64)
        if n.ndim != 2 or n.shape[1] != NODE_WIDTH or n.shape[0] < 1:
            raise InputError("AnalyticShape.nodes", f"shape {n.shape}", f"must be (n >= 1, {NODE_WIDTH})")
        if not np.all(np.isfinite(n)):
            raise InputError("AnalyticShape.nodes", n.tolist(), "must be finite")
        self.nodes = n

    def _combine(self, other: "AnalyticShape", op: CSGOp, k: float = 0.0) -> "AnalyticShape":
        if not isinstance(other, AnalyticShape):
            raise InputError("other", other, "must be an AnalyticShape")
        if other.nodes.shape[0] != 1:
            raise InputError("other", f"a shape of {other.nodes.shape[0]} nodes",
                             "must be a single primitive: shapes are left folds ((a op b) op c); "
                             "combine composites by chaining primitives onto the left operand")
        row = other.nodes[0].copy()
        row[1] = float(op)
        row[2] = k
        return AnalyticShape(np.vstack([self.nodes, row]))

    def union(self, other: "AnalyticShape") -> "AnalyticShape":
        """``min(self, other)``."""
        return self._combine(other, CSGOp.UNION)

    def intersection(self, other: "AnalyticShape") -> "AnalyticShape":
        """``max(self, other)``."""
        return self._combine(other, CSGOp.INTERSECTION)

    def subtract(self, other: "AnalyticShape") -> "AnalyticShape":
        """``max(self, -other)``: self with other removed."""
        return self._combine(other, CSGOp.SUBTRACTION)

    def smooth_union(self, other: "AnalyticShape", k: float) -> "AnalyticShape":
        """Polynomial smooth minimum of blend width ``k`` [m] (adds material within k of the seam)."""
        return self._combine(other, CSGOp.SMOOTH_UNION, _pos(k, "smooth_union.k", "m"))


_IDENTITY = (1.0, 0.0, 0.0, 0.0)


def sdf_sphere(radius: float, center=(0.0, 0.0, 0.0)) -> AnalyticShape:
    """Sphere of ``radius`` [m] (eq 2.14)."""
    return AnalyticShape(_node(Primitive.SPHERE, [_pos(radius, "sphere.radius", "m")], center, _IDENTITY)[None])


def sdf_plane(normal=(0.0, 0.0, 1.0), offset: float = 0.0) -> AnalyticShape:
    """Half space ``n·x <= offset``: the distance is ``n·x - offset`` with ``n`` the outward unit normal."""
    n = _vec(normal, 3, "plane.normal", "1")
    nn = float(np.linalg.norm(n))
    if nn == 0.0:
        raise InputError("plane.normal", n.tolist(), "must be a nonzero vector")
    n = n / nn
    # rotation taking +z to n (shortest arc)
    z = np.array([0.0, 0.0, 1.0])
    c = float(z @ n)
    if c < -1.0 + 1e-15:
        q = np.array([0.0, 1.0, 0.0, 0.0])
    else:
        ax = np.cross(z, n)
        q = np.array([1.0 + c, *ax])
        q /= np.linalg.norm(q)
    off = float(offset)
    if not math.isfinite(off):
        raise InputError("plane.offset", offset, "must be finite [m]")
    return AnalyticShape(_node(Primitive.PLANE, [], off * n, q)[None])


def sdf_box(half_extents, center=(0.0, 0.0, 0.0), attitude=_IDENTITY) -> AnalyticShape:
    """Box of half extents (ax, ay, az) [m], exact distance inside and outside."""
    h = _vec(half_extents, 3, "box.half_extents", "m")
    for i, x in enumerate(h):
        _pos(x, f"box.half_extents[{i}]", "m")
    return AnalyticShape(_node(Primitive.BOX, h, center, attitude)[None])


def sdf_capsule(half_length: float, radius: float, center=(0.0, 0.0, 0.0), attitude=_IDENTITY) -> AnalyticShape:
    """Capsule: points within ``radius`` [m] of the segment z in [-half_length, half_length] of its frame."""
    hl = float(half_length)
    if not math.isfinite(hl) or hl < 0:
        raise InputError("capsule.half_length", half_length, "must be a finite number >= 0 [m]")
    return AnalyticShape(_node(Primitive.CAPSULE, [hl, _pos(radius, "capsule.radius", "m")], center, attitude)[None])


def sdf_ellipsoid(semi_axes, center=(0.0, 0.0, 0.0), attitude=_IDENTITY) -> AnalyticShape:
    """Ellipsoid of semi-axes (a, b, c) [m]: the exact Euclidean distance (robust 1-D root find)."""
    a = _vec(semi_axes, 3, "ellipsoid.semi_axes", "m")
    for i, x in enumerate(a):
        _pos(x, f"ellipsoid.semi_axes[{i}]", "m")
    return AnalyticShape(_node(Primitive.ELLIPSOID, a, center, attitude)[None])


def sdf_torus(major_radius: float, minor_radius: float, center=(0.0, 0.0, 0.0), attitude=_IDENTITY) -> AnalyticShape:
    """Torus about the frame's z axis: tube of ``minor_radius`` around a circle of ``major_radius`` [m]."""
    R = _pos(major_radius, "torus.major_radius", "m")
    r = _pos(minor_radius, "torus.minor_radius", "m")
    if r >= R:
        raise InputError("torus.minor_radius", r, f"must be < major_radius {R} (a ring torus)")
    return AnalyticShape(_node(Primitive.TORUS, [R, r], center, attitude)[None])


# --------------------------------------------------------------------------------------------------
# surface features (resources)
# --------------------------------------------------------------------------------------------------


@dataclass(eq=False)
class FBMNoise:
    """Fractional Brownian motion value noise (seed 004 eqs 2.24–2.32), added to the SDF (eq 2.27).

    ``d_fbm(x) = Σ_{i<octaves} A_i u(f_i x)``, ``A_i = A0 L^{-iH}``, ``f_i = f0 L^i`` (eq 2.26), where
    ``u`` samples the periodic ``lattice`` of U(-0.5, 0.5) numbers (one lattice cell per unit of
    ``f_i x``) with quintic-smoothed trilinear interpolation (eq 2.24). Build with
    :func:`scenes.assets.noise.fbm_noise`, which sets A0 from the requested maximum height (eq 2.32).

    Attributes:
        lattice: random values in [-0.5, 0.5), shape (P, P, P), periodic.
        amplitude: A0 [m].
        frequency: f0 [1/m].
        lacunarity: L (2π/3 by default; the seed's printed 2.0744 is a misprint of 2π/3 = 2.0944).
        hurst: fractal increment H (0.8).
        octaves: number of terms.
    """

    lattice: np.ndarray
    amplitude: float
    frequency: float
    lacunarity: float = 2.0 * math.pi / 3.0
    hurst: float = 0.8
    octaves: int = 4

    def __post_init__(self):
        lat = np.ascontiguousarray(self.lattice, dtype=np.float64)
        if lat.ndim != 3 or len(set(lat.shape)) != 1 or lat.shape[0] < 2:
            raise InputError("FBMNoise.lattice", f"shape {lat.shape}", "must be a cubic (P, P, P) array, P >= 2")
        self.lattice = lat
        a = float(self.amplitude)
        if not math.isfinite(a) or a < 0:
            raise InputError("FBMNoise.amplitude", self.amplitude, "must be a finite number >= 0 [m]")
        self.frequency = _pos(self.frequency, "FBMNoise.frequency", "1/m")
        self.lacunarity = _pos(self.lacunarity, "FBMNoise.lacunarity", "1")
        self.hurst = _pos(self.hurst, "FBMNoise.hurst", "1")
        if int(self.octaves) != self.octaves or self.octaves < 0:
            raise InputError("FBMNoise.octaves", self.octaves, "must be an integer >= 0")
        self.octaves = int(self.octaves)

    @property
    def gain(self) -> float:
        """Amplitude ratio of successive octaves, ``L^{-H}``."""
        return self.lacunarity ** (-self.hurst)

    @property
    def max_height(self) -> float:
        """Peak-to-peak bound of the noise, ``Σ A_i`` [m] (eq 2.30): |d_fbm| <= max_height / 2."""
        return float(self.amplitude * sum(self.gain ** i for i in range(self.octaves)))


@dataclass(eq=False)
class PSRField:
    """Procedurally seeded rocks (seed 004 §2.3.3, eqs 2.34–2.39).

    ``texture`` is a periodic rock distance texture (generalised distance functions, eq 2.37) over a
    cube of side ``period`` [m], clamped to <= 0 so rocks sit on a visible surface. It is tiled
    aperiodically: a second, low-frequency periodic lattice ``index`` of U(0, 8) numbers (one cell per
    ``index_cell`` metres) gives a texture index i = k + c; tilings k and k + 1, each rotated by
    ``C(k) = C_z(k) C_x(k)`` (eq 2.38) and offset by ``o_k = (sin 3k, sin 5k, sin 7k)`` texture periods
    (eq 2.39), are blended by ``smoothstep(0.2, 0.8, c)``. The result is added to the SDF.

    Attributes:
        texture: node values [m] (<= 0), shape (N, N, N), periodic (node N is node 0).
        period: texture side [m].
        index: texture index lattice, values in [0, 8), shape (Q, Q, Q), periodic.
        index_cell: side of one index lattice cell [m].
    """

    texture: np.ndarray
    period: float
    index: np.ndarray
    index_cell: float

    def __post_init__(self):
        t = np.ascontiguousarray(self.texture, dtype=np.float64)
        if t.ndim != 3 or len(set(t.shape)) != 1 or t.shape[0] < 2:
            raise InputError("PSRField.texture", f"shape {t.shape}", "must be a cubic (N, N, N) array, N >= 2")
        if np.any(t > 0) or not np.all(np.isfinite(t)):
            raise InputError("PSRField.texture", f"max {float(np.nanmax(t))}", "must be finite and <= 0 (strictly negative rock texture)")
        self.texture = t
        ix = np.ascontiguousarray(self.index, dtype=np.float64)
        if ix.ndim != 3 or len(set(ix.shape)) != 1 or ix.shape[0] < 2:
            raise InputError("PSRField.index", f"shape {ix.shape}", "must be a cubic (Q, Q, Q) array, Q >= 2")
        if np.any(ix < 0) or np.any(ix >= 8):
            raise InputError("PSRField.index", f"range [{ix.min()}, {ix.max()}]", "must lie in [0, 8)")
        self.index = ix
        self.period = _pos(self.period, "PSRField.period", "m")
        self.index_cell = _pos(self.index_cell, "PSRField.index_cell", "m")


@dataclass(eq=False)
class TerrainSDF:
    """The terrain a contact system samples: base shape + optional fBm noise + optional rocks.

    ``d(x) = d_base(x) + d_fbm(x) + d_psr(x)`` (eq 2.27 and §2.3.3) with its gradient, evaluated by
    :func:`systems.sdf.eval_terrain` (one source for CPU and GPU).

    Attributes:
        base: an :class:`SDFGrid` or an :class:`AnalyticShape`.
        fbm: optional :class:`FBMNoise`.
        psr: optional :class:`PSRField`.
    """

    base: SDFGrid | AnalyticShape
    fbm: FBMNoise | None = None
    psr: PSRField | None = None

    def __post_init__(self):
        if not isinstance(self.base, (SDFGrid, AnalyticShape)):
            raise InputError("TerrainSDF.base", type(self.base).__name__, "must be an SDFGrid or an AnalyticShape")
        if self.fbm is not None and not isinstance(self.fbm, FBMNoise):
            raise InputError("TerrainSDF.fbm", type(self.fbm).__name__, "must be an FBMNoise or None")
        if self.psr is not None and not isinstance(self.psr, PSRField):
            raise InputError("TerrainSDF.psr", type(self.psr).__name__, "must be a PSRField or None")

    def evaluate(self, points) -> tuple[np.ndarray, np.ndarray]:
        """Signed distance [m], shape (n,), and gradient, shape (n, 3), at ``points`` (n, 3) [m]."""
        from systems.sdf import eval_terrain

        return eval_terrain(self, points)


# --------------------------------------------------------------------------------------------------
# polyhedral rocks
# --------------------------------------------------------------------------------------------------


@dataclass(eq=False)
class ConvexPolyhedra:
    """Convex polyhedra in their own frames, concatenated (CSR): the shapes of polyhedral rocks.

    Polyhedron ``k`` has the triangles ``triangles[tri_start[k]:tri_start[k+1]]`` (global indices into
    ``vertices``, outward wound) and bounding radius ``radius[k]`` about its frame origin.

    Attributes:
        vertices: [m], shape (n, 3), each polyhedron's own frame.
        triangles: int64 (t, 3).
        tri_start: int64 (K + 1,).
        radius: bounding radius [m], shape (K,).
    """

    vertices: np.ndarray
    triangles: np.ndarray
    tri_start: np.ndarray
    radius: np.ndarray

    @property
    def count(self) -> int:
        return int(self.tri_start.shape[0] - 1)


@dataclass(eq=False)
class RockField:
    """A population of static polyhedral rocks (seed 004 §2.3.1), target frame.

    Attributes:
        position: rock frame origins [m], shape (K, 3), target frame.
        attitude: unit quaternions rock -> target, scalar-first, shape (K, 4).
        radius: bounding-sphere radius about ``position`` [m], shape (K,).
        size: rock size s (icosahedron diameter before deformation) [m], shape (K,).
        polyhedron: index of each rock's shape in ``shapes``, int64 (K,).
        facet: id of the facet the rock was generated on (its RNG seed key), int64 (K,).
        shapes: the :class:`ConvexPolyhedra`.
    """

    position: np.ndarray
    attitude: np.ndarray
    radius: np.ndarray
    size: np.ndarray
    polyhedron: np.ndarray
    facet: np.ndarray
    shapes: ConvexPolyhedra

    @property
    def count(self) -> int:
        return int(self.position.shape[0])


@component("rock")
class Rock:
    """One static polyhedral rock as an entity (columns ``rock_position`` ...)."""

    position: np.ndarray = column("m", shape=3, frame="target", doc="rock frame origin")
    attitude: np.ndarray = column("1", shape=4, frame="rock->target", default=[1.0, 0.0, 0.0, 0.0],
                                  doc="unit quaternion, scalar-first, rotating rock components into target")
    bounding_radius: float = column("m", doc="bounding-sphere radius about rock_position")
    size: float = column("m", doc="rock size s (undeformed icosahedron diameter, eq 2.23)")
    polyhedron: int = column("1", dtype=np.int64, doc="index of the shape in the ConvexPolyhedra resource")
