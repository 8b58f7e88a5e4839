"""Closed triangle meshes as solid bodies: the checks a mesh passes before it is used, and the
volume integrals of the solid it bounds.

* :func:`check_closed_mesh` — closed, manifold, consistently and outward wound, no degenerate facet;
* :func:`check_polyhedron` — the polyhedron checks of seed 004 §2.2.2 (eqs 2.10–2.11) on top of it:
  no unreferenced or duplicate vertex, Euler's criterion ``n_V − n_E + n_F = 2`` (failing it means
  several bodies, a handle or a non-manifold vertex, and the message says which), and a mesh wound
  entirely inward reversed (reported), a mixed one refused;
* :func:`solid_moments` and :func:`inertia_from_covariance` — volume, centroid and inertia of the
  uniform solid.

They validate and complete component data (the :class:`components.gravity.Polyhedron` resource), so
they live with the components; the asset builders of :mod:`scenes.assets` (mass properties, mesh
files, SDF grids, probe shapes) use them from here. Bad input raises :class:`ecs.errors.InputError`
naming the field, the value and the rule.
"""

from __future__ import annotations

import numpy as np

from ecs.errors import InputError

__all__ = ["check_closed_mesh", "check_polyhedron", "inertia_from_covariance", "solid_moments"]

#: A facet whose area is below this fraction of the squared bounding-box diagonal is degenerate
#: (collinear or repeated vertices give areas of about 1e-16 of it after rounding).
_DEGENERATE_AREA_RTOL = 1e-14


def _mesh_arrays(vertices, faces, field: str) -> tuple[np.ndarray, np.ndarray]:
    try:
        v = np.array(vertices, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{field}.vertices", vertices, "must be an (n, 3) array of numbers [m]") from None
    if v.ndim != 2 or v.shape[1] != 3 or v.shape[0] < 4:
        raise InputError(f"{field}.vertices", f"array of shape {v.shape}", "must have shape (n, 3) with n >= 4")
    bad = np.flatnonzero(~np.all(np.isfinite(v), axis=1))
    if bad.size:
        raise InputError(
            f"{field}.vertices",
            f"vertex {int(bad[0])} = {v[bad[0]].tolist()} ({bad.size} non-finite)",
            "must be finite (no NaN or inf)",
        )
    f = np.asarray(faces)
    if f.ndim != 2 or f.shape[1] != 3 or f.shape[0] < 4:
        raise InputError(f"{field}.faces", f"array of shape {f.shape}", "must have shape (m, 3) with m >= 4")
    if not np.issubdtype(f.dtype, np.integer):
        raise InputError(f"{field}.faces", f"array of dtype {f.dtype}", "must hold integer vertex indices")
    f = f.astype(np.int64)
    out = np.flatnonzero(np.any((f < 0) | (f >= v.shape[0]), axis=1))
    if out.size:
        raise InputError(
            f"{field}.faces",
            f"face {int(out[0])} = {f[out[0]].tolist()} ({out.size} such faces)",
            f"faces reference missing vertices (indices must be in [0, {v.shape[0]}))",
        )
    return v, f


def check_closed_mesh(vertices, faces, *, field: str = "mesh") -> tuple[np.ndarray, np.ndarray]:
    """Check that a triangle mesh bounds a solid: closed, manifold, consistently and outward wound.

    Rules, in the order checked: vertices finite (no NaN), faces reference existing vertices, no
    degenerate (zero-area) facet, no non-manifold edge (used by more than two faces), no boundary
    edge (used by one face: the mesh is open), no edge traversed twice in the same direction
    (inconsistent winding), and positive signed volume (outward winding; counter-clockwise seen from
    outside). Inner components wound inward are cavities and are allowed as long as the total signed
    volume is positive.

    Args:
        vertices: vertex positions [m], shape (n, 3).
        faces: vertex indices of each triangle, shape (m, 3), integer.
        field: name of the mesh in error messages.

    Returns:
        ``(vertices, faces)`` as float64 (n, 3) and int64 (m, 3) arrays.

    Raises:
        InputError: naming ``field.vertices`` or ``field.faces``, the offending value and the rule.
    """
    v, f = _mesh_arrays(vertices, faces, field)
    p0, p1, p2 = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    diag2 = float(np.sum((v.max(axis=0) - v.min(axis=0)) ** 2))
    area2 = np.linalg.norm(np.cross(p1 - p0, p2 - p0), axis=1)  # twice the area
    degenerate = np.flatnonzero(0.5 * area2 <= _DEGENERATE_AREA_RTOL * diag2)
    if degenerate.size:
        i = int(degenerate[0])
        raise InputError(
            f"{field}.faces",
            f"face {i} = {f[i].tolist()} with area {0.5 * area2[i]!r} ({degenerate.size} degenerate faces)",
            "degenerate facet: zero area (repeated or collinear vertices)",
        )
    directed = np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]])
    undirected = np.sort(directed, axis=1)
    edges, counts = _unique_pairs(undirected, v.shape[0])
    if np.any(counts > 2):
        k = np.flatnonzero(counts > 2)
        raise InputError(
            f"{field}.faces",
            f"edge {edges[k[0]].tolist()} used by {int(counts[k[0]])} faces ({k.size} such edges)",
            "non-manifold edge: every edge must be shared by exactly two faces",
        )
    if np.any(counts == 1):
        k = np.flatnonzero(counts == 1)
        raise InputError(
            f"{field}.faces",
            f"{k.size} boundary edges, e.g. {edges[k[0]].tolist()}",
            f"mesh is open: {k.size} boundary edges (each edge must be shared by exactly two faces)",
        )
    dedges, dcounts = _unique_pairs(directed, v.shape[0])
    if np.any(dcounts > 1):
        k = np.flatnonzero(dcounts > 1)
        raise InputError(
            f"{field}.faces",
            f"edge {dedges[k[0]].tolist()} traversed twice in the same direction ({k.size} such edges)",
            "inconsistent winding: neighbouring faces must traverse their shared edge in opposite directions",
        )
    ref = v.mean(axis=0)
    q0, q1, q2 = p0 - ref, p1 - ref, p2 - ref
    volume = float(np.sum(np.einsum("ij,ij->i", q0, np.cross(q1, q2)))) / 6.0
    if volume < 0.0:
        raise InputError(f"{field}.faces", f"signed volume {volume!r} m^3", "faces wound inward; reverse them")
    if volume <= _DEGENERATE_AREA_RTOL * diag2**1.5:
        raise InputError(f"{field}.faces", f"signed volume {volume!r} m^3", "mesh encloses no volume")
    return v, f


def _unique_pairs(pairs: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(pairs, axis=0, return_counts=True)`` of vertex-index pairs in ``[0, n)``: the
    same rows in the same (lexicographic) order, found on the 1-D keys ``a·n + b``. numpy's
    row-wise unique sorts a structured view: 49 ms per call on the 61,548 edges of deploy-cube's
    asteroid against 2.3 ms here (measured). deploy-cube's scene build checks four meshes in every
    process of a run: 0.67 s before, 0.23 s with this."""
    keys, counts = np.unique(pairs[:, 0] * np.int64(n) + pairs[:, 1], return_counts=True)
    return np.stack([keys // n, keys % n], axis=1), counts


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


def solid_moments(vertices: np.ndarray, faces: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Volume, centroid and second moments of the uniform solid bounded by a checked, closed,
    outward-wound triangle mesh (:func:`check_closed_mesh`).

    Exact volume integrals by the divergence theorem, in D. Eberly's formulation ("Polyhedral Mass
    Properties (Revisited)", Geometric Tools, 2002; a simplification of B. Mirtich, "Fast and
    Accurate Computation of Polyhedral Mass Properties", J. Graphics Tools 1(2), 1996): each triangle
    contributes closed-form polynomial terms to ∫1, ∫x, ∫x², ∫xy … over the solid. The vertices are
    first shifted by their mean so that the CoM shift does not cancel large numbers.

    Args:
        vertices: float64 (n, 3) [m].
        faces: int64 (m, 3), counter-clockwise seen from outside.

    Returns:
        ``(volume [m³], centroid [m] (3,), C [m⁵] (3, 3))`` with ``C = ∫ r rᵀ dV`` about the centroid:
        the second-moment matrix per unit density (``ρ C`` is what :func:`inertia_from_covariance` takes).
    """
    v, f = vertices, faces
    ref = v.mean(axis=0)
    p0, p1, p2 = v[f[:, 0]] - ref, v[f[:, 1]] - ref, v[f[:, 2]] - ref
    n = np.cross(p1 - p0, p2 - p0)  # (d0, d1, d2) of Eberly: twice the area times the normal
    # Eberly's per-coordinate subexpressions, column k is coordinate k (x, y, z)
    t0 = p0 + p1
    f1 = t0 + p2
    t1 = p0 * p0
    t2 = t1 + p1 * t0
    f2 = t2 + p2 * f1
    f3 = p0 * t1 + p1 * t2 + p2 * f2
    g0 = f2 + p0 * (f1 + p0)
    g1 = f2 + p1 * (f1 + p1)
    g2 = f2 + p2 * (f1 + p2)
    volume = float(np.sum(n[:, 0] * f1[:, 0])) / 6.0
    first = np.sum(n * f2, axis=0) / 24.0  # ∫x, ∫y, ∫z dV
    second = np.sum(n * f3, axis=0) / 60.0  # ∫x², ∫y², ∫z² dV
    # ∫xy (from the x-term), ∫yz (y-term), ∫zx (z-term)
    ixy = float(np.sum(n[:, 0] * (p0[:, 1] * g0[:, 0] + p1[:, 1] * g1[:, 0] + p2[:, 1] * g2[:, 0]))) / 120.0
    iyz = float(np.sum(n[:, 1] * (p0[:, 2] * g0[:, 1] + p1[:, 2] * g1[:, 1] + p2[:, 2] * g2[:, 1]))) / 120.0
    izx = float(np.sum(n[:, 2] * (p0[:, 0] * g0[:, 2] + p1[:, 0] * g1[:, 2] + p2[:, 0] * g2[:, 2]))) / 120.0
    c_local = first / volume
    cov = np.array(
        [
            [second[0], ixy, izx],
            [ixy, second[1], iyz],
            [izx, iyz, second[2]],
        ]
    )
    return volume, c_local + ref, cov - volume * np.outer(c_local, c_local)


def inertia_from_covariance(cov: np.ndarray) -> np.ndarray:
    """Inertia tensor ``tr(C) E - C`` from the second-moment matrix ``C = ∫ r rᵀ dm`` (Eq. 1.13–1.15)."""
    inertia = np.trace(cov) * np.eye(3) - cov
    return 0.5 * (inertia + inertia.T)
