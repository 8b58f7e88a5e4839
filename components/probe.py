"""Probe shapes: the contact vertices of landers, typed for the impact-normal rule of seed 004 eq 2.33.

Against an SDF terrain a probe is seen only through its vertices (seed 004 §2.3.2, "probe
resolution"): contact forces act at them. Each vertex carries a **type** and a **direction**:

* ``CORNER`` — a vertex of the solid: the impact normal is the surface normal N_S = ∇d(x);
* ``EDGE`` — a point inside an edge of the solid: N_S - (N_S·ê) ê with ê the unit edge direction
  (normalised before use, eq 2.33);
* ``FACE`` — a point inside a face: the negative outward face normal, -N_F.

Data layout (for a collision system iterating vertices per row): all shapes of a scene live in one
:class:`ProbeShapes` resource, concatenated; shape ``s`` owns the vertex rows
``shape_start[s]:shape_start[s+1]``. A probe body carries the :class:`ProbeShape` component
(``probe_shape`` = s, ``probe_bounding_radius``) next to its rigid-body components, so a kernel over
body rows reads ``s = probe_shape[i]`` and loops ``for v in range(shape_start[s], shape_start[s+1])``
over ``vertex_position[v]`` (body frame, about the body reference point), ``vertex_type[v]`` and
``vertex_direction[v]``. A sphere (``SPHERE`` kind) has no vertices: its contact point is along
-∇d at ``shape_radius[s]`` from its centre.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np

from ecs import column, component
from ecs.errors import InputError

__all__ = ["ProbeShape", "ProbeShapes", "ShapeKind", "VertexType"]


class VertexType(enum.IntEnum):
    """Type of a probe vertex (seed 004 eq 2.33, Fig 2.28)."""

    CORNER = 0
    EDGE = 1
    FACE = 2


class ShapeKind(enum.IntEnum):
    """How a probe shape touches the terrain."""

    SPHERE = 0      #: analytic sphere of radius ``shape_radius``
    POLYHEDRON = 1  #: through its typed vertices


@dataclass(eq=False)
class ProbeShapes:
    """All probe shapes of a scene, concatenated (a resource).

    Attributes:
        vertex_position: body-frame positions [m], (n, 3), about each body's reference point.
        vertex_type: :class:`VertexType` codes, int8 (n,).
        vertex_direction: unit edge direction (EDGE), unit outward face normal (FACE), zero (CORNER),
            body frame, (n, 3).
        shape_start: first vertex row of each shape, int64 (S + 1,).
        shape_kind: :class:`ShapeKind` codes, int8 (S,).
        shape_radius: sphere radius (SPHERE) or bounding radius about the reference point [m], (S,).
        names: shape names, for messages.
    """

    vertex_position: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    vertex_type: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    vertex_direction: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    shape_start: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    shape_kind: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    shape_radius: np.ndarray = field(default_factory=lambda: np.zeros(0))
    names: list = field(default_factory=list)

    @property
    def count(self) -> int:
        """Number of shapes."""
        return len(self.names)

    def add(self, name: str, *, kind: ShapeKind, radius: float, positions=None, types=None,
            directions=None) -> int:
        """Append a shape; returns its index (the value of ``probe_shape``).

        Args:
            name: shape name.
            kind: SPHERE (no vertices) or POLYHEDRON.
            radius: sphere radius, or bounding radius (>= every vertex's distance) [m].
            positions: (k, 3) body-frame vertices [m] (POLYHEDRON).
            types: (k,) :class:`VertexType` codes.
            directions: (k, 3) unit edge directions / outward face normals (zero for corners).
        """
        kind = ShapeKind(kind)
        r = float(radius)
        if not np.isfinite(r) or r <= 0:
            raise InputError(f"probe shape {name!r} radius", radius, "must be a finite number > 0 [m]")
        if kind == ShapeKind.SPHERE:
            p = np.zeros((0, 3))
            t = np.zeros(0, np.int8)
            d = np.zeros((0, 3))
        else:
            p = np.asarray(positions, dtype=np.float64)
            t = np.asarray(types, dtype=np.int8)
            d = np.asarray(directions, dtype=np.float64)
            k = p.shape[0] if p.ndim == 2 else -1
            if p.ndim != 2 or p.shape[1] != 3 or k < 1 or not np.all(np.isfinite(p)):
                raise InputError(f"probe shape {name!r} positions", f"shape {p.shape}", "must be (k >= 1, 3) finite [m]")
            if t.shape != (k,) or not np.all(np.isin(t, [0, 1, 2])):
                raise InputError(f"probe shape {name!r} types", t.tolist(), "must be k VertexType codes (0, 1, 2)")
            if d.shape != (k, 3) or not np.all(np.isfinite(d)):
                raise InputError(f"probe shape {name!r} directions", f"shape {d.shape}", "must be (k, 3) finite")
            far = float(np.max(np.linalg.norm(p, axis=1)))
            if far > r * (1 + 1e-12):
                raise InputError(f"probe shape {name!r} radius", r, f"must bound every vertex (farthest is {far} m)")
        self.vertex_position = np.concatenate([self.vertex_position, p])
        self.vertex_type = np.concatenate([self.vertex_type, t])
        self.vertex_direction = np.concatenate([self.vertex_direction, d])
        self.shape_start = np.append(self.shape_start, self.shape_start[-1] + p.shape[0]).astype(np.int64)
        self.shape_kind = np.append(self.shape_kind, np.int8(kind)).astype(np.int8)
        self.shape_radius = np.append(self.shape_radius, r)
        self.names.append(name)
        return len(self.names) - 1


@component("probe")
class ProbeShape:
    """Which probe shape a body has (columns ``probe_shape``, ``probe_bounding_radius``)."""

    shape: int = column("1", dtype=np.int64, doc="index of the shape in the ProbeShapes resource")
    bounding_radius: float = column("m", doc="bounding-sphere radius about the body reference point")
