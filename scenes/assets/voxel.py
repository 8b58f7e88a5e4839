"""Voxelised gravity fields (seed 004 §2.4.4, Figs 2.47–2.50): build, cache, measure, size.

:func:`build_voxel_field` evaluates a :class:`components.gravity.Polyhedron` at every node of a
regular grid around the body — in blocks of nodes, each block in parallel over its nodes with the
bulk polyhedron kernel — and stores either (g, U) (``mode="g"``, the seed's scheme 2) or the
perturbation from the point mass at the centre of mass (g − g_pm, U − U_pm) (``mode="dg"``,
scheme 3), either way with the nodes just inside the body holding the **exterior field continued
across the surface** (``continuation=True``, default; below). The result is a
:class:`components.gravity.VoxelField` resource looked up trilinearly
by one kernel source on the CPU and the GPU; outside the grid it falls back to the far field
documented there (point mass and quadrupole, exact, plus the boundary residual of higher degrees
decayed as r⁻⁵ along the ray from the centre of mass).

Grids are cached on disk, keyed by a SHA-256 hash of the vertices, facets, density, G, grid
(origin, spacing, shape), mode and this module's format version: ``$TUMBLE_CACHE/gravity/`` if set,
else ``$TUMBLE_CACHE_DIR/gravity/`` (default ``~/.cache/tumble/gravity/``). Pass ``cache=False`` to
neither read nor write.

Shipped fields. The default scene's field (deploy-cube, deploy-sphere, deploy-shapes, deploy-box:
the Itokawa-like body at 12 m) takes ~21 s on 2 cores to build (45,474 nodes × 51,290 faces and
edges), which alone would be most of a cold first run. It is shipped in ``scenes/assets/data/`` under
the same key-named file, its SHA-256 in ``scenes/assets/data/SHA256SUMS``; :func:`build_voxel_field`
reads it (after checking both the key and the checksum) before it builds. The recipe that wrote it
is :func:`write_shipped` (``python -m scenes.assets.voxel``), and a slow test rebuilds it and
compares the bytes; a fast one checks its values against the independent polyhedral-gravity
library. A file that fails its checksum is not used (a warning says so) and the field is built.

Exterior continuation (our addition to the seed's schemes). The field of a body has a kink at its
surface: Γ jumps by 4πGρ n nᵀ across it (∇²U = −4πGρ inside, 0 outside), so trilinear
interpolation in a cell that straddles the surface errs by O(h) — the seed's linear error trend
(Figs 2.48–2.50), reproduced with ``continuation=False``. Probes live outside the body, so the
grid need not hold the interior field: crossing facet f through its interior, only its solid
angle ω_f jumps (by 4π) in the Werner–Scheeres sums, so the exterior field continued into the body
across f is exactly ``g_e = g − 4πGρ d n_f``, ``U_e = U + 2πGρ d²`` with d = n_f·(P_f − x) the
depth below the facet's plane. Nodes inside the body within two grid steps of an outside node get
these values for their nearest facet; the interpolated surface field is then smooth and its error
falls as O(h²) on smooth surfaces (it stays O(h) along sharp concave creases, where the nearest
facet changes). Lookups deeper than two cells inside the body return the interior field; lookups
in the band return the continued exterior field (what a slightly penetrating contact probe wants).

:func:`voxel_error` reports the seed's surface error (eq 2.44): the relative acceleration error
‖g_vox − g_poly‖/‖g_poly‖ at the facet centroids, as its maximum and 99th percentile.
:func:`choose_voxel_size` picks the spacing for a requested error from the power law the seed
finds (Figs 2.48–2.50: the surface error is a straight line against the voxel size on a log-log
plot): two coarse pilot grids fix the line, then grids are built at its prediction until the error
is met.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import pathlib
import tempfile
import time
from dataclasses import dataclass, field

import numpy as np
from numba import prange

from components.gravity import G, Polyhedron, VoxelField
from ecs.errors import InputError
from ecs.kernels import cpu_jit
from scenes.assets import shipped
from scenes.assets.sdf_build import cache_dir as field_cache_root
from systems.gravity.kernels import acceleration, eval_point_mass_points, eval_polyhedron_points
from systems.terrain.sdf import closest_point_triangle

__all__ = ["VoxelChoice", "VoxelError", "build_voxel_field", "cache_dir", "choose_voxel_size", "relative_errors",
           "surface_error", "voxel_error", "voxel_grid"]

#: Bump when the stored layout or the meaning of the values changes (invalidates old caches).
FORMAT_VERSION = "tumble-voxel-gravity-1"

#: Nodes evaluated per block (bounds the scratch memory and lets ``progress`` report).
BLOCK_NODES = 16384


#: Fields shipped with the package (module docstring, :mod:`scenes.assets.shipped`), and their checksums.
SHIPPED_DIR = shipped.DATA_DIR
SHIPPED_SUMS = shipped.SUMS


def cache_dir() -> pathlib.Path:
    """``$TUMBLE_CACHE/gravity`` when set (the fields' cache alone), else
    ``$TUMBLE_CACHE_DIR/gravity`` (tumble's cache root, numba's kernels included), else
    ``~/.cache/tumble/gravity``."""
    return field_cache_root() / "gravity"


def _file_sha256(path: pathlib.Path) -> str:
    return shipped.file_sha256(path)


def shipped_sums() -> dict[str, str]:
    """``{file name: SHA-256}`` of the shipped fields (``SHA256SUMS``, ``sha256sum``'s format)."""
    return shipped.read_sums(SHIPPED_SUMS)


def _load(path: pathlib.Path, key: str, shape) -> tuple[np.ndarray, dict] | None:
    """(values, meta) of the field file at ``path`` when it holds ``key`` with ``shape``, else None."""
    try:
        with np.load(path) as z:
            values = z["values"]
            meta = json.loads(str(z["meta"]))
    except Exception:  # unreadable/partial file: rebuild (and overwrite it, in the cache)
        return None
    if values.shape == tuple(shape) + (4,) and meta.get("key") == key:
        return values, meta
    return None


def _shipped(name: str, key: str, shape) -> tuple[np.ndarray, dict] | None:
    """The shipped field ``name`` if there is one, its bytes match ``SHA256SUMS`` and it holds ``key``."""
    path = SHIPPED_DIR / name
    if not shipped.verified(path, SHIPPED_SUMS, what="voxel field"):
        return None
    return _load(path, key, shape)


def voxel_grid(poly: Polyhedron, spacing: float, *,
               margin: float | None = None) -> tuple[np.ndarray, tuple[int, int, int]]:
    """Origin [m] and node counts of the grid of ``spacing`` around ``poly``.

    The grid box is the body's bounding box grown by ``margin`` on every side (default: 10 % of
    the bounding radius plus one spacing, so every surface point has a full cell around it), with
    the nodes centred on the bounding box.
    """
    h = float(spacing)
    if not (math.isfinite(h) and h > 0):
        raise InputError("voxel spacing", spacing, "must be a finite length > 0 [m]")
    m = 0.1 * poly.bounding_radius + h if margin is None else float(margin)
    if not (math.isfinite(m) and m >= 0):
        raise InputError("voxel margin", margin, "must be a finite length >= 0 [m]")
    lo = poly.vertices.min(axis=0) - m
    hi = poly.vertices.max(axis=0) + m
    n = np.ceil((hi - lo) / h).astype(np.int64) + 1
    if np.prod(n.astype(float)) > 2e9:
        raise InputError("voxel spacing", h, f"gives {n.tolist()} nodes: too many (> 2e9); use a coarser spacing")
    origin = 0.5 * (lo + hi) - 0.5 * h * (n - 1)
    return origin, (int(n[0]), int(n[1]), int(n[2]))


def _cache_key(poly: Polyhedron, origin: np.ndarray, spacing: float, shape, mode: str, continued: bool) -> str:
    h = hashlib.sha256()
    h.update(FORMAT_VERSION.encode())
    h.update(np.ascontiguousarray(poly.vertices, dtype="<f8").tobytes())
    h.update(np.ascontiguousarray(poly.faces, dtype="<i8").tobytes())
    h.update(json.dumps({"density": repr(float(poly.density)), "G": repr(G), "origin": [repr(float(x)) for x in origin],
                         "spacing": repr(float(spacing)), "shape": list(shape), "mode": mode,
                         "continue_exterior": bool(continued)}).encode())
    return h.hexdigest()


_closest = closest_point_triangle.cpu


@cpu_jit(inline="always")
def _triangle_distance2(px, py, pz, ax, ay, az, bx, by, bz, cx, cy, cz):
    """Squared distance from p to triangle abc (the SDF builder's closest-point kernel)."""
    qx, qy, qz, _ = _closest(ax, ay, az, bx, by, bz, cx, cy, cz, px, py, pz)
    return (px - qx) ** 2 + (py - qy) ** 2 + (pz - qz) ** 2


@cpu_jit(parallel=True)
def nearest_facets(points, verts, faces, centroid, radius, out):
    """``out[p]`` = index of the facet nearest to ``points[p]`` (brute force with bounding-sphere
    culling: a facet whose circumscribing sphere (centroid, radius) is farther than the best
    distance so far is skipped)."""
    for p in prange(points.shape[0]):
        x = points[p, 0]
        y = points[p, 1]
        z = points[p, 2]
        best = np.inf
        arg = -1
        for f in range(faces.shape[0]):
            dx = centroid[f, 0] - x
            dy = centroid[f, 1] - y
            dz = centroid[f, 2] - z
            lb = math.sqrt(dx * dx + dy * dy + dz * dz) - radius[f]
            if lb > 0.0 and lb * lb >= best:
                continue
            a = faces[f, 0]
            b = faces[f, 1]
            c = faces[f, 2]
            d2 = _triangle_distance2(x, y, z, verts[a, 0], verts[a, 1], verts[a, 2], verts[b, 0], verts[b, 1],
                                     verts[b, 2], verts[c, 0], verts[c, 1], verts[c, 2])
            if d2 < best:
                best = d2
                arg = f
        out[p] = arg


def _dilate(mask: np.ndarray, steps: int) -> np.ndarray:
    """Nodes within ``steps`` index steps (Chebyshev) of a True node (no wrap-around)."""
    out = mask.copy()
    for axis in range(3):
        cur = out.copy()
        for s in range(1, steps + 1):
            lo = [slice(None)] * 3
            hi = [slice(None)] * 3
            lo[axis], hi[axis] = slice(0, -s), slice(s, None)
            out[tuple(lo)] |= cur[tuple(hi)]
            out[tuple(hi)] |= cur[tuple(lo)]
    return out


def continue_exterior(poly: Polyhedron, values: np.ndarray, inside: np.ndarray, origin: np.ndarray,
                      spacing: float, *, steps: int = 2) -> int:
    """Replace, in place, the interior nodes within ``steps`` of an outside node by the exterior
    field continued across their nearest facet (module docstring). ``values`` (nx, ny, nz, 4) holds
    (g, U) — total or perturbation, the correction is the same. Returns the number of nodes changed.
    """
    band = inside & _dilate(~inside, steps)
    idx = np.argwhere(band)
    if idx.size == 0:
        return 0
    pts = origin + spacing * idx
    v, f = poly.vertices, poly.faces
    cen = (v[f[:, 0]] + v[f[:, 1]] + v[f[:, 2]]) / 3.0
    rad = np.max(np.stack([np.linalg.norm(v[f[:, k]] - cen, axis=1) for k in range(3)]), axis=0)
    near = np.empty(pts.shape[0], np.int64)
    nearest_facets(np.ascontiguousarray(pts), v, f, cen, rad, near)
    n = poly.face_normal[near]
    d = np.einsum("ij,ij->i", n, v[f[near, 0]] - pts)  # depth below the facet plane
    k = 4.0 * math.pi * poly.grho
    sel = (idx[:, 0], idx[:, 1], idx[:, 2])
    values[sel + (slice(0, 3),)] -= k * d[:, None] * n
    values[sel + (3,)] += 0.5 * k * d * d
    return int(idx.shape[0])


def build_voxel_field(poly: Polyhedron, spacing: float, *, mode: str = "dg", margin: float | None = None,
                      continuation: bool = True, cache: bool = True, block: int = BLOCK_NODES,
                      progress=None) -> VoxelField:
    """Tabulate ``poly``'s field on a grid (or load it from the cache).

    Args:
        poly: the polyhedron source.
        spacing: voxel size h [m].
        mode: ``"dg"`` (perturbation from the point mass at the CoM; default, better away from the
            surface, Fig 2.47) or ``"g"`` (g and U).
        margin: extra space around the bounding box [m] (see :func:`voxel_grid`).
        continuation: store the exterior field continued across the surface at the
            interior nodes next to it (module docstring); False gives the seed's plain scheme.
        cache: read and write the on-disk cache.
        block: nodes per block.
        progress: optional ``progress(done_nodes, total_nodes)`` callback.

    Returns:
        The :class:`VoxelField`; ``field.meta`` records the key, the build time and where it came
        from (``from_cache``: ``"shipped"``, ``"cache"`` or ``False`` when built now).
    """
    if not isinstance(poly, Polyhedron):
        raise InputError("build_voxel_field.poly", type(poly).__name__, "must be a components.gravity.Polyhedron")
    if mode not in ("g", "dg"):
        raise InputError("voxel mode", mode, "must be 'g' (g and U) or 'dg' (g - g_pointmass and U - U_pm)")
    if not (isinstance(block, int) and block >= 1):
        raise InputError("voxel block", block, "must be an integer >= 1 (nodes per block)")
    origin, shape = voxel_grid(poly, spacing, margin=margin)
    key = _cache_key(poly, origin, spacing, shape, mode, continuation)
    name = f"voxel-{key[:40]}.npz"
    path = cache_dir() / name
    com = poly.center_of_mass
    if cache:
        hit, where = _shipped(name, key, shape), "shipped"
        if hit is None and path.exists():
            hit, where = _load(path, key, shape), "cache"
        if hit is not None:
            values, meta = hit
            meta["from_cache"] = where
            return VoxelField(values, origin, spacing, mu=poly.mu, center_of_mass=com, quadrupole=poly.quadrupole,
                              mode=mode, meta=meta)
    t0 = time.perf_counter()
    n = int(np.prod(shape))
    values = np.empty((n, 4))
    inside = np.empty(n, bool)
    ii, jj, kk = np.unravel_index(np.arange(n), shape)  # C order: matches values.reshape(shape + (4,))
    kp = poly.kernel_params()
    out = np.empty((min(block, n), 11))
    pm = np.empty((min(block, n), 10))
    for start in range(0, n, block):
        stop = min(n, start + block)
        pts = np.empty((stop - start, 3))
        pts[:, 0] = origin[0] + spacing * ii[start:stop]
        pts[:, 1] = origin[1] + spacing * jj[start:stop]
        pts[:, 2] = origin[2] + spacing * kk[start:stop]
        o = out[: stop - start]
        eval_polyhedron_points(pts, *kp, o)
        values[start:stop, 0:3] = o[:, 1:4]
        values[start:stop, 3] = o[:, 0]
        inside[start:stop] = o[:, 10] > 2.0 * math.pi
        if mode == "dg":
            p = pm[: stop - start]
            eval_point_mass_points(pts, float(com[0]), float(com[1]), float(com[2]), poly.mu, p)
            values[start:stop, 0:3] -= p[:, 1:4]
            values[start:stop, 3] -= p[:, 0]
        if progress is not None:
            progress(stop, n)
    values = values.reshape(tuple(shape) + (4,))
    continued = 0
    if continuation:
        continued = continue_exterior(poly, values, inside.reshape(shape), origin, spacing)
    meta = {"key": key, "format": FORMAT_VERSION, "mode": mode, "faces": poly.face_count,
            "continue_exterior": bool(continuation), "continued_nodes": continued,
            "density": poly.density, "spacing": float(spacing), "shape": list(shape),
            "build_s": time.perf_counter() - t0, "from_cache": False}
    if cache:
        _save(path, values, meta)
    return VoxelField(values, origin, spacing, mu=poly.mu, center_of_mass=com, quadrupole=poly.quadrupole,
                      mode=mode, meta=meta)


def _save(path: pathlib.Path, values: np.ndarray, meta: dict) -> None:
    """Write a field file atomically: concurrent builders never see a partial file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npz.tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, values=values, meta=np.array(json.dumps(meta)))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_shipped(poly: Polyhedron, spacing: float, **kw) -> pathlib.Path:
    """The recipe of a shipped field (module docstring): build ``poly``'s field afresh (never from
    a cache), write it to :data:`SHIPPED_DIR` under its key and record its SHA-256 in
    :data:`SHIPPED_SUMS`. Returns the file's path."""
    vox = build_voxel_field(poly, spacing, cache=False, **kw)
    meta = {k: v for k, v in vox.meta.items() if k != "from_cache"}
    path = SHIPPED_DIR / f"voxel-{meta['key'][:40]}.npz"
    _save(path, np.asarray(vox.values), meta)
    path.chmod(0o644)
    shipped.record(path, SHIPPED_SUMS)
    return path


@dataclass(frozen=True)
class VoxelError:
    """Relative surface acceleration error of a voxel field (seed 004 eq 2.44).

    Attributes:
        max: largest relative error over the points.
        p99: 99th percentile.
        median: median.
        errors: per-point relative errors, shape (n,).
    """

    max: float
    p99: float
    median: float
    errors: np.ndarray = field(repr=False)


def _surface_reference(poly: Polyhedron, sample: int | None, seed: int) -> tuple[np.ndarray, np.ndarray]:
    pts = poly.face_centroids
    if sample is not None and sample < pts.shape[0]:
        pts = pts[np.sort(np.random.default_rng(seed).choice(pts.shape[0], sample, replace=False))]
    return pts, acceleration(poly, pts)


def relative_errors(g: np.ndarray, g_ref: np.ndarray) -> VoxelError:
    """:class:`VoxelError` of accelerations ``g`` against ``g_ref`` (both (n, 3))."""
    e = np.linalg.norm(g - g_ref, axis=1) / np.linalg.norm(g_ref, axis=1)
    return VoxelError(max=float(e.max()), p99=float(np.percentile(e, 99)), median=float(np.median(e)), errors=e)


def surface_error(model, poly: Polyhedron, *, points=None, sample: int | None = None, seed: int = 0) -> VoxelError:
    """Seed 004 eq 2.44: relative error ‖g − g_ref‖/‖g_ref‖ of any gravity source ``model`` against
    the polyhedron ``poly`` at its facet centroids (or ``points``).

    Serves both of the seed's studies: a voxel field against the polyhedron it was built from
    (§2.4.4, Figs 2.48–2.50) and a low-resolution polyhedron against a high-resolution one
    (§2.4.3, Figs 2.45–2.46).

    Args:
        model: any :class:`components.gravity.GravitySource`.
        poly: the reference polyhedron.
        points: evaluation points [m], (n, 3); default the facet centroids (the seed's surface).
        sample: evaluate a random subset of this many facets (for large meshes).
        seed: seed of that subset.
    """
    if points is None:
        pts, g_ref = _surface_reference(poly, sample, seed)
    else:
        pts = np.asarray(points, dtype=np.float64)
        g_ref = acceleration(poly, pts)
    return relative_errors(acceleration(model, pts), g_ref)


def voxel_error(vox: VoxelField, poly: Polyhedron, **kw) -> VoxelError:
    """:func:`surface_error` of a voxel field against the polyhedron it was built from."""
    return surface_error(vox, poly, **kw)


@dataclass
class VoxelChoice:
    """Outcome of :func:`choose_voxel_size`.

    Attributes:
        spacing: chosen voxel size h [m].
        error: its :class:`VoxelError` at the surface.
        field: the voxel field built at that spacing.
        trials: every grid tried, ``[(spacing, max error, p99 error), ...]``.
        slope: fitted log-log slope of the error against the spacing.
    """

    spacing: float
    error: VoxelError
    field: VoxelField
    trials: list[tuple[float, float, float]]
    slope: float


def choose_voxel_size(poly: Polyhedron, target_error: float, *, statistic: str = "max", mode: str = "dg",
                      margin: float | None = None, continuation: bool = True, pilots=(0.12, 0.08),
                      sample: int | None = None, max_builds: int = 6, safety: float = 0.9, max_refine: float = 1.6,
                      cache: bool = True) -> VoxelChoice:
    """A voxel size (close to the largest) whose surface error meets ``target_error``.

    Grids are built from coarse to fine and the first that meets the target is returned. The two
    pilot grids (``pilots`` × the volumetric radius) fix the power law ``e = A h^p`` (seed 004
    Figs 2.48–2.50); each next spacing is ``safety`` × the one the law fitted to the two finest
    grids predicts, but never finer than the last one divided by ``max_refine``: the slope seen on
    coarse grids is pre-asymptotic, and a grid's cost grows as h⁻³.

    Args:
        poly: the polyhedron.
        target_error: relative surface error to reach (e.g. 0.01 for the seed's 1 %).
        statistic: ``"max"`` or ``"p99"`` of the per-facet errors.
        mode: voxel mode (``"dg"`` or ``"g"``).
        margin: grid margin [m] (see :func:`voxel_grid`).
        continuation: continue the exterior field into the body (see :func:`build_voxel_field`).
        pilots: the two pilot spacings as fractions of the volumetric radius, coarse first.
        sample: evaluate the error on a random subset of this many facets.
        max_builds: most grids built after the pilots.
        safety: factor (< 1) applied to each predicted spacing.
        max_refine: largest ratio between consecutive spacings.
        cache: use the on-disk cache.

    Raises:
        InputError: bad arguments, or the target not met within ``max_builds`` grids.
    """
    if not (isinstance(target_error, (int, float)) and 0 < target_error < 1):
        raise InputError("target_error", target_error, "must be a relative error in (0, 1)")
    if statistic not in ("max", "p99"):
        raise InputError("statistic", statistic, "must be 'max' or 'p99'")
    if len(pilots) != 2 or not pilots[0] > pilots[1] > 0:
        raise InputError("pilots", pilots, "must be two decreasing fractions of the radius > 0")
    pts, g_ref = _surface_reference(poly, sample, 0)
    r = poly.volumetric_radius
    trials: list[tuple[float, float, float]] = []

    def run(h):
        vox = build_voxel_field(poly, h, mode=mode, margin=margin, continuation=continuation, cache=cache)
        err = relative_errors(acceleration(vox, pts), g_ref)
        trials.append((h, err.max, err.p99))
        return (err.max if statistic == "max" else err.p99), err, vox

    done: list[tuple[float, float]] = []
    p = float("nan")
    for k in range(2 + max_builds):
        if k < 2:
            h = pilots[k] * r
        else:
            (h1, e1), (h2, e2) = done[-2], done[-1]
            p = max(math.log(e1 / e2) / math.log(h1 / h2), 0.5)  # guard against a flat, noisy pair
            h = max(safety * h2 * (target_error / e2) ** (1.0 / p), h2 / max_refine)
        e, err, vox = run(h)
        if e <= target_error:
            return VoxelChoice(spacing=h, error=err, field=vox, trials=trials, slope=p)
        done.append((h, e))
    raise InputError("target_error", target_error,
                     f"not reached after {len(trials)} grids (errors {[round(t[1], 5) for t in trials]}); "
                     f"raise max_builds or the target")


if __name__ == "__main__":  # the recipe of the shipped fields: python -m scenes.assets.voxel
    from scenes.deploy import ITOKAWA_VOXEL_SPACING, itokawa_polyhedron

    print(write_shipped(itokawa_polyhedron(), ITOKAWA_VOXEL_SPACING))
