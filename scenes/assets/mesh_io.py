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

Checks before use (:func:`check_polyhedron`), each failing with its own :class:`InputError`:
finite vertices and valid indices, no unreferenced vertex, no duplicate vertex, no degenerate
(zero-area) facet, every edge shared by exactly two facets (no non-manifold edge, no hole),
consistent winding, Euler's criterion ``n_V − n_E + n_F = 2`` (seed 004 eq 2.10; with
``n_E = 3n_F/2`` this is eq 2.11, ``n_F = 2n_V − 4``, ``n_E = 3n_V − 6``) — failing it means several
bodies, a handle (genus ≥ 1) or a non-manifold vertex, and the message says which — and outward
winding: a mesh wound entirely inward is reversed (reported), a mixed one is refused. The
closed-mesh part reuses :func:`scenes.assets.mass_properties.check_closed_mesh`.
"""

from __future__ import annotations

import pathlib
from dataclasses import dataclass

import numpy as np

from ecs.errors import InputError
from scenes.assets.mass_properties import check_closed_mesh

__all__ = ["ShapeMesh", "UNITS", "check_polyhedron", "load_mesh", "read_plain", "read_tetgen"]

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
# checks
# --------------------------------------------------------------------------------------------------


def _component_labels(n: int, pairs: np.ndarray) -> np.ndarray:
    """Connected-component label of each of ``n`` nodes joined by ``pairs`` (vectorised label
    propagation with pointer jumping)."""
    label = np.arange(n)
    if pairs.size == 0:
        return label
    a, b = pairs[:, 0], pairs[:, 1]
    while True:
        m = np.minimum(label[a], label[b])
        new = label.copy()
        np.minimum.at(new, a, m)
        np.minimum.at(new, b, m)
        new = new[new]  # pointer jumping
        if np.array_equal(new, label):
            return label
        label = new


def _well_formed(v: np.ndarray, f: np.ndarray) -> bool:
    """Shapes, dtype, finiteness and index range fit for the topological checks."""
    return (v.ndim == 2 and v.shape[1] == 3 and v.shape[0] >= 4 and f.ndim == 2 and f.shape[1] == 3
            and f.shape[0] >= 4 and np.issubdtype(f.dtype, np.integer) and bool(np.all(np.isfinite(v)))
            and bool(np.all((f >= 0) & (f < v.shape[0]))))


def check_polyhedron(vertices, faces, *, field: str = "mesh", fix_winding: bool = True
                     ) -> tuple[np.ndarray, np.ndarray, bool]:
    """Check a triangle mesh before it is used as a solid body (seed 004 §2.2.2, eqs 2.10–2.11).

    Args:
        vertices: [m], shape (nv, 3).
        faces: 0-based vertex indices, shape (nf, 3), integer.
        field: name of the mesh in error messages.
        fix_winding: reverse a mesh wound entirely inward instead of refusing it.

    Returns:
        ``(vertices float64 (nv, 3), faces int64 (nf, 3) outward, reoriented)``.

    Raises:
        InputError: one distinct message per defect (module docstring), naming the offending
            vertex, facet or edge and the count of such defects.
    """
    try:
        v = np.array(vertices, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{field}.vertices", vertices, "must be an (n, 3) array of numbers [m]") from None
    f = np.asarray(faces)
    if f.ndim == 2 and np.issubdtype(f.dtype, np.floating) and np.all(np.isfinite(f)) and np.all(f == np.round(f)):
        f = f.astype(np.int64)  # integral floats from text readers
    reoriented = False
    if _well_formed(v, f):
        # shape, finiteness and index errors are left to check_closed_mesh's messages
        f = f.astype(np.int64)
        used = np.zeros(v.shape[0], bool)
        used[f.reshape(-1)] = True
        if not used.all():
            k = np.flatnonzero(~used)
            raise InputError(f"{field}.vertices", f"vertex {int(k[0])} ({k.size} unreferenced vertices)",
                             "unreferenced vertex: every vertex must belong to a facet (remove it; "
                             "Euler's criterion, seed 004 eq 2.10, counts it)")
        order = np.lexsort(v.T[::-1])
        same = np.flatnonzero(np.all(v[order[1:]] == v[order[:-1]], axis=1))
        if same.size:
            a, b = sorted((int(order[same[0]]), int(order[same[0] + 1])))
            raise InputError(f"{field}.vertices", f"vertices {a} and {b} at {v[a].tolist()} ({same.size} duplicates)",
                             "duplicate vertices: facets must share vertices by index (merge them)")
        ref = v.mean(axis=0)
        q0, q1, q2 = v[f[:, 0]] - ref, v[f[:, 1]] - ref, v[f[:, 2]] - ref
        if fix_winding and float(np.sum(np.einsum("ij,ij->i", q0, np.cross(q1, q2)))) < 0.0:
            # wound inward: reversing every facet is the only fix; if the winding is also
            # inconsistent, check_closed_mesh refuses the reversed mesh just as the original
            f = f[:, ::-1].copy()
            reoriented = True
    v, f = check_closed_mesh(v, f, field=field)
    nv, nf = v.shape[0], f.shape[0]
    ne = 3 * nf // 2  # every edge shared by exactly two facets (checked above)
    chi = nv - ne + nf
    if chi != 2:
        edges = np.unique(np.sort(np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]]), axis=1), axis=0)
        comp = _component_labels(nv, edges)
        ncomp = int(np.unique(comp).size)
        # non-manifold vertices: the facets around a vertex must form one fan; link edges (b, c)
        # of facet (a, b, c) around a join the corner nodes (a, b) and (a, c)
        corners = np.concatenate([f[:, [0, 1, 2]], f[:, [1, 2, 0]], f[:, [2, 0, 1]]])  # (a, b, c) per corner
        keys_b = corners[:, 0] * nv + corners[:, 1]
        keys_c = corners[:, 0] * nv + corners[:, 2]
        ukeys, inv = np.unique(np.concatenate([keys_b, keys_c]), return_inverse=True)
        inv = inv.reshape(-1)
        m = corners.shape[0]
        fan = _component_labels(ukeys.size, np.stack([inv[:m], inv[m:]], axis=1))
        owner = ukeys // nv
        fans = np.unique(np.stack([owner, fan], axis=1), axis=0)
        per_vertex = np.bincount(fans[:, 0], minlength=nv)
        bad = np.flatnonzero(per_vertex > 1)
        counts = f"n_V = {nv}, n_E = {ne}, n_F = {nf}: n_V - n_E + n_F = {chi}"
        if bad.size:
            why = (f"non-manifold vertex {int(bad[0])} ({bad.size} such vertices): its facets form "
                   f"{int(per_vertex[bad[0]])} separate fans (surfaces touching at a point)")
        elif ncomp > 1:
            why = f"{ncomp} separate bodies (disconnected components); load one body per mesh"
        else:
            genus = (2 - chi) // 2
            why = f"a closed surface with {genus} handle(s) (genus {genus}, torus-like)"
        raise InputError(f"{field}.faces", counts,
                         f"Euler's criterion (seed 004 eq 2.10-2.11) requires n_V - n_E + n_F = 2, "
                         f"n_F = 2 n_V - 4 = {2 * nv - 4}: found {why}")
    return v, f, reoriented


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
        path: the file (for TetGen either the ``.node`` or the ``.face`` file).
        units: 'm' or 'km', the unit of the file's coordinates (required).
        fmt: override the format: 'trimesh', 'tetgen' or 'plain' (default: by extension).
        fix_winding: reverse a mesh wound entirely inward instead of refusing it.

    Returns:
        A :class:`ShapeMesh` in metres, checked by :func:`check_polyhedron`.

    Raises:
        InputError: bad units, missing file, unknown format, unreadable file, or any mesh defect.
    """
    scale = _units(units)
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
