"""Shape-model input with explicit units, and the polyhedron checks of seed 004 §2.2.2.

Formats (chosen by file extension, or ``fmt=``):

* ``.obj``, ``.ply``, ``.stl``, ``.off`` — through trimesh (``process=False``: the file's own
  vertex indexing is kept; STL stores every facet's corners separately, so STL vertices are
  merged by position first).
* TetGen ``.node`` + ``.face`` (either path; the sibling with the same stem is read too). The
  first index of ``.node`` (0 or 1) sets the base of ``.face`` indices; attributes and boundary
  markers are ignored.
* Plain text (``.txt``, ``.tab``, ``.dat``, ``.vert``, ``.shape``, ``.mod``, ``.plt`` or
  ``fmt="plain"``), as used by planetary shape models (PDS):
    - tagged lines ``v x y z`` and ``f i j k`` (1-based indices, OBJ-like);
    - or two sections: vertex rows ``x y z`` or ``index x y z``, then facet rows ``i j k`` or
      ``index i j k``, each section optionally preceded by a line holding its count (or one
      first line ``nv nf``). Without counts the sections are told apart by the facet rows being
      all integers. Facet indices are 0-based when any index is 0, 1-based otherwise (the PDS
      convention). ``#`` starts a comment.

Units: every loader takes ``units="m"`` or ``units="km"`` (no default: shape models come in
both, and a wrong guess is a factor 10⁹ in mass); vertices are returned in metres.

Checks before use (:func:`components.mesh.check_polyhedron`), each failing with its own :class:`InputError`:
finite vertices and valid indices, no unreferenced vertex, no duplicate vertex, no degenerate
(zero-area) facet, every edge shared by exactly two facets (no non-manifold edge, no hole),
consistent winding, Euler's criterion ``n_V − n_E + n_F = 2`` (seed 004 eq 2.10; with
``n_E = 3n_F/2`` this is eq 2.11, ``n_F = 2n_V − 4``, ``n_E = 3n_V − 6``) — failing it means several
bodies, a handle (genus ≥ 1) or a non-manifold vertex, and the message says which — and outward
winding: a mesh wound entirely inward is reversed (reported), a mixed one is refused. The
checks live in :mod:`components.mesh`, beside the gravity polyhedron resource that needs them.
"""

from __future__ import annotations

import os
import pathlib
from dataclasses import dataclass

import numpy as np

from components.gravity import Polyhedron
from components.mesh import check_polyhedron
from ecs.errors import InputError

__all__ = ["ShapeMesh", "UNITS", "load_mesh", "load_polyhedron", "read_plain", "read_tetgen"]

#: Unit name -> metres per unit.
UNITS = {"m": 1.0, "km": 1000.0}

_TRIMESH_EXT = {".obj", ".ply", ".stl", ".off"}
_PLAIN_EXT = {".txt", ".tab", ".dat", ".vert", ".shape", ".mod", ".plt"}
_TETGEN_EXT = {".node", ".face"}


@dataclass(frozen=True)
class ShapeMesh:
    """A checked, closed, outward-wound triangle mesh in metres.

    Attributes:
        vertices: [m], shape (nv, 3), float64.
        faces: 0-based vertex indices, counter-clockwise seen from outside, shape (nf, 3), int64.
        reoriented: True if the file was wound inward and its facets were reversed.
        source: file it was read from ("" for arrays).
        units: units of the file ('m' or 'km').
    """

    vertices: np.ndarray
    faces: np.ndarray
    reoriented: bool = False
    source: str = ""
    units: str = "m"

    @property
    def volume(self) -> float:
        """Enclosed volume [m³]."""
        v, f = self.vertices, self.faces
        ref = v.mean(axis=0)
        q0, q1, q2 = v[f[:, 0]] - ref, v[f[:, 1]] - ref, v[f[:, 2]] - ref
        return float(np.sum(np.einsum("ij,ij->i", q0, np.cross(q1, q2)))) / 6.0


def _units(units) -> float:
    if units not in UNITS:
        raise InputError("units", units, "must be given explicitly as 'm' or 'km' (the unit of the file's coordinates)")
    return UNITS[units]


# --------------------------------------------------------------------------------------------------
# readers
# --------------------------------------------------------------------------------------------------


def _data_lines(path: pathlib.Path) -> list[list[str]]:
    rows = []
    with open(path, "r", errors="replace") as fh:
        for line in fh:
            line = line.split("#", 1)[0].strip()
            if line:
                rows.append(line.replace(",", " ").split())
    return rows


def _is_int(tok: str) -> bool:
    try:
        int(tok)
        return True
    except ValueError:
        return False


def _floats(row: list[str], path, lineno) -> list[float]:
    try:
        return [float(t) for t in row]
    except ValueError:
        raise InputError(f"mesh file {path}", " ".join(row), f"row {lineno}: expected numbers") from None


def _base(faces: np.ndarray) -> np.ndarray:
    """0-based facet indices from a file whose base is 0 when any index is 0, else 1."""
    if faces.size and faces.min() == 0:
        return faces
    return faces - 1


def read_plain(path) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (file units) and 0-based facets of a plain-text shape model (module docstring).

    Raises:
        InputError: unreadable rows, counts that do not match, no facets.
    """
    path = pathlib.Path(path)
    rows = _data_lines(path)
    if not rows:
        raise InputError(f"mesh file {path}", "empty", "holds no vertices or facets")
    tags = {r[0].lower() for r in rows if r and not _is_int(r[0]) and r[0].lower() in ("v", "f")}
    if tags:
        verts, faces = [], []
        for n, r in enumerate(rows, 1):
            t = r[0].lower()
            if t == "v":
                if len(r) < 4:
                    raise InputError(f"mesh file {path}", " ".join(r), f"row {n}: a vertex needs 'v x y z'")
                verts.append(_floats(r[1:4], path, n))
            elif t == "f":
                if len(r) != 4:
                    raise InputError(f"mesh file {path}", " ".join(r),
                                     f"row {n}: a facet needs 'f i j k' (triangles only)")
                faces.append([int(tok.split("/")[0]) for tok in r[1:4]])
        v = np.array(verts, dtype=np.float64).reshape(-1, 3)
        f = np.array(faces, dtype=np.int64).reshape(-1, 3)
        return v, _base(f)
    # untagged two-section format
    i = 0
    nv = nf = None
    if len(rows[0]) == 2 and all(_is_int(t) for t in rows[0]):
        nv, nf = int(rows[0][0]), int(rows[0][1])
        i = 1
    elif len(rows[0]) == 1 and _is_int(rows[0][0]):
        nv = int(rows[0][0])
        i = 1
    verts = []
    while i < len(rows) and (nv is None or len(verts) < nv):
        r = rows[i]
        if nv is None and all(_is_int(t) for t in r) and len(verts) >= 4:
            break  # first all-integer row after the vertices: the facet section (or its count)
        if len(r) == 4:
            r = r[1:]
        if len(r) != 3:
            raise InputError(f"mesh file {path}", " ".join(rows[i]),
                             f"row {i + 1}: a vertex row needs 'x y z' or 'index x y z'")
        verts.append(_floats(r, path, i + 1))
        i += 1
    if nv is not None and len(verts) != nv:
        raise InputError(f"mesh file {path}", f"{len(verts)} vertex rows", f"the header announces {nv} vertices")
    if nf is None and i < len(rows) and len(rows[i]) == 1 and _is_int(rows[i][0]):
        nf = int(rows[i][0])
        i += 1
    faces = []
    for n in range(i, len(rows)):
        r = rows[n]
        if not all(_is_int(t) for t in r) or len(r) not in (3, 4):
            raise InputError(f"mesh file {path}", " ".join(r),
                             f"row {n + 1}: a facet row needs 'i j k' or 'index i j k' (integers)")
        faces.append([int(t) for t in r[-3:]])
    if nf is not None and len(faces) != nf:
        raise InputError(f"mesh file {path}", f"{len(faces)} facet rows", f"the header announces {nf} facets")
    if not faces:
        raise InputError(f"mesh file {path}", f"{len(verts)} vertices, 0 facets", "holds no facets")
    v = np.array(verts, dtype=np.float64)
    f = np.array(faces, dtype=np.int64)
    return v, _base(f)


def read_tetgen(path) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (file units) and 0-based facets of a TetGen ``.node``/``.face`` pair.

    Raises:
        InputError: missing sibling file, malformed header or rows.
    """
    path = pathlib.Path(path)
    node, face = path.with_suffix(".node"), path.with_suffix(".face")
    for p in (node, face):
        if not p.exists():
            raise InputError("mesh file", str(p), "TetGen meshes need both the .node and the .face file")
    nrows = _data_lines(node)
    try:
        n, dim = int(nrows[0][0]), int(nrows[0][1])
    except (IndexError, ValueError):
        raise InputError(f"mesh file {node}", " ".join(nrows[0]) if nrows else "empty",
                         "first row must be '<#points> <dimension> <#attributes> <boundary markers>'") from None
    if dim != 3:
        raise InputError(f"mesh file {node}", dim, "dimension must be 3")
    body = nrows[1:1 + n]
    if len(body) != n or any(len(r) < 4 for r in body):
        raise InputError(f"mesh file {node}", f"{len(body)} point rows",
                         f"the header announces {n} points of 'index x y z'")
    idx = np.array([int(r[0]) for r in body])
    v = np.array([_floats(r[1:4], node, k + 2) for k, r in enumerate(body)])
    base = int(idx.min())
    order = np.argsort(idx)
    v = v[order]
    frows = _data_lines(face)
    try:
        m = int(frows[0][0])
    except (IndexError, ValueError):
        raise InputError(f"mesh file {face}", " ".join(frows[0]) if frows else "empty",
                         "first row must be '<#faces> <boundary marker>'") from None
    fb = frows[1:1 + m]
    if len(fb) != m or any(len(r) < 4 or not all(_is_int(t) for t in r[:4]) for r in fb):
        raise InputError(f"mesh file {face}", f"{len(fb)} face rows",
                         f"the header announces {m} faces of 'index i j k'")
    f = np.array([[int(t) for t in r[1:4]] for r in fb], dtype=np.int64) - base
    return v, f


def _read_trimesh(path: pathlib.Path) -> tuple[np.ndarray, np.ndarray]:
    import trimesh

    try:
        mesh = trimesh.load(str(path), force="mesh", process=False)
    except Exception as exc:  # trimesh raises many types for unreadable files
        raise InputError("mesh file", str(path), f"could not be read by trimesh: {exc}") from None
    if path.suffix.lower() == ".stl":
        mesh.merge_vertices()
    v = np.asarray(mesh.vertices, dtype=np.float64)
    f = np.asarray(mesh.faces, dtype=np.int64)
    if f.size == 0:
        raise InputError("mesh file", str(path), "holds no triangular facets")
    return v, f


def load_mesh(path, *, units: str, fmt: str | None = None, fix_winding: bool = True) -> ShapeMesh:
    """Read, convert to metres and check a shape model.

    Args:
        path: the file (for TetGen either the ``.node`` or the ``.face`` file), or a mesh in
            memory with ``vertices`` and ``faces`` (a ``trimesh.Trimesh``).
        units: 'm' or 'km', the unit of the file's coordinates (required).
        fmt: override the format: 'trimesh', 'tetgen' or 'plain' (default: by extension).
        fix_winding: reverse a mesh wound entirely inward instead of refusing it.

    Returns:
        A :class:`ShapeMesh` in metres, checked by :func:`check_polyhedron`.

    Raises:
        InputError: bad units, missing file, unknown format, unreadable file, or any mesh defect.
    """
    scale = _units(units)
    if hasattr(path, "vertices") and hasattr(path, "faces"):      # a mesh in memory (trimesh.Trimesh)
        v = np.asarray(path.vertices, float) * scale
        f = np.asarray(path.faces, np.int64)
        v, f, reoriented = check_polyhedron(v, f, field="mesh (in memory)", fix_winding=fix_winding)
        return ShapeMesh(vertices=v, faces=f, reoriented=reoriented, source="<mesh in memory>", units=units)
    if not isinstance(path, (str, os.PathLike)):
        raise InputError("mesh", type(path).__name__, "must be a shape-model file path or a mesh with vertices and "
                                                      "faces (trimesh.Trimesh)")
    path = pathlib.Path(path)
    ext = path.suffix.lower()
    kind = fmt or ("trimesh" if ext in _TRIMESH_EXT else "tetgen" if ext in _TETGEN_EXT
                   else "plain" if ext in _PLAIN_EXT else None)
    if kind not in ("trimesh", "tetgen", "plain"):
        raise InputError("mesh file", str(path),
                         f"unknown format {ext or '(no extension)'!r}: use .obj/.ply/.stl/.off, TetGen .node/.face, "
                         f"plain text {sorted(_PLAIN_EXT)}, or fmt='trimesh'|'tetgen'|'plain'")
    if kind != "tetgen" and not path.exists():
        raise InputError("mesh file", str(path), "does not exist")
    reader = {"trimesh": _read_trimesh, "tetgen": read_tetgen, "plain": read_plain}[kind]
    v, f = reader(path)
    v = v * scale
    v, f, reoriented = check_polyhedron(v, f, field=f"mesh {path.name}", fix_winding=fix_winding)
    return ShapeMesh(vertices=v, faces=f, reoriented=reoriented, source=str(path), units=units)


def load_polyhedron(path, *, units: str, density=None, mass=None, mu=None) -> Polyhedron:
    """A constant-density :class:`components.gravity.Polyhedron` gravity source from a shape model
    (OBJ/PLY/STL/OFF, TetGen, plain text) read by :func:`load_mesh` with explicit ``units`` ('m'|'km').

    Args:
        density, mass, mu: exactly one (as :class:`~components.gravity.Polyhedron`).
    """
    mesh = load_mesh(path, units=units)
    return Polyhedron(mesh.vertices, mesh.faces, density=density, mass=mass, mu=mu)
