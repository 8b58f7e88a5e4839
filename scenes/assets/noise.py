"""Surface features: fBm noise, procedurally seeded rocks, polyhedral rocks (seed 004 §2.3).

* :func:`fbm_noise` — fractional Brownian motion (eqs 2.24–2.32): a periodic lattice of U(-0.5, 0.5)
  numbers (centred to zero mean, so a full period of the noise integrates to exactly zero), quintic smoothing, H = 0.8, lacunarity L = 2π/3 (the seed prints "2π/3 ≈ 2.0744": the
  value of 2π/3 is 2.0944, the misprint is in the decimals), and A0 from the requested maximum height
  (eq 2.32, :func:`fbm_amplitude`). Since each octave's noise lies in [-0.5, 0.5), the noise stays
  within ±h_max/2, a peak-to-peak height of at most h_max, and its mean is zero (volume unchanged in
  expectation, §2.3.2).
* :func:`psr_field` — procedurally seeded rocks (eqs 2.34–2.39): K3 rocks with bounded-Pareto
  diameters (eq 2.23) placed at random in a periodic cube, their generalised distance functions
  (eq 2.37, norm p, unit vectors n_a..n_b of Akleman & Chen's list; a = 4, b = 13 is the icosahedron)
  sampled on a grid, clamped to <= 0, tiled aperiodically by :func:`systems.terrain.sdf.eval_psr`.
  K3 = K L³ / d̄ (§2.3.3: the K rocks per unit area fill a layer one mean diameter d̄ thick).
* :func:`polyhedral_rocks` — rocks on the facets of a surface patch (eqs 2.22–2.23): a Poisson number
  per facet with mean ``area * density``, where the density of rocks with s_min <= s <= s_max follows
  the power law K(s) = k0 (s0/s)^α; bounded Pareto sizes; deformed icosahedra (Gaussian vertex noise
  of standard deviation σ s per axis, then the convex hull); uniformly random attitude; uniform
  position on the facet; sunk by r·s, r ~ U(r_min, r_max). The random generator of facet i is seeded
  by ``SeedSequence(seed, spawn_key=(i,))``: the same rocks appear on the same facet in every
  trajectory and in any order of generation, without storing them.
  **Calibration**: with Table 4.2's k0 = 2.5e-3, s0 = 2.5 m, α = 2.8, s_min = 5 cm the law gives
  about 143 rocks/m², while the text says about 14 — give the wanted ``rocks_per_m2`` (K at s_min)
  and k0 is derived from it (:func:`calibrate_k0`). (k0 = 2.5e-4 gives 14.3: the table's exponent
  is most likely a misprint.)
* :func:`terrain_rocks` — the same rocks on the surface of a terrain SDF (no mesh needed): a region
  of the zero level set over a disc of the tangent plane, a Poisson process per m² of *surface*
  (thinning by the local slope), each rock placed on the level set by Newton steps and sunk along
  the local normal; reseeded per square tile of the disc as the seed reseeds per facet. Its
  :class:`RockField` unites with the terrain (:data:`systems.terrain.sdf.eval_rocks`).

Eq 2.23 as published (its typeset form is partly illegible in the seed's text; the legible parts,
``s_min``, ``s_max``, ``(1 - y)`` and the 1/α power, fit) is the inverse CDF of the Pareto law
truncated to [s_min, s_max]: ``s = s_min s_max / ((1 - y) s_max^α + y s_min^α)^(1/α)``, y = U(0, 1);
:func:`bounded_pareto` evaluates the same expression in the equivalent form of the seed's reference
[118]. No correction was needed there; the one misprint found in §2.3.1's numbers is Table 4.2's k0
(see Calibration above).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from components.terrain import ConvexPolyhedra, FBMNoise, PSRField, RockField, TerrainSDF
from ecs.attitude import quat_to_dcm
from ecs.errors import InputError
from ecs.errors import positive_number as _pos
from systems.terrain.sdf import eval_terrain

__all__ = ["GDF_NORMALS", "LACUNARITY", "HURST", "bounded_pareto", "calibrate_k0", "fbm_amplitude", "fbm_noise",
           "icosahedron", "polyhedral_rocks", "project_to_surface", "psr_field", "rock_density", "pareto_mean",
           "terrain_rocks"]

#: Lacunarity L = 2π/3 (seed 004 §2.3.2; the printed decimal value 2.0744 is a misprint of 2.0944).
LACUNARITY = 2.0 * math.pi / 3.0
#: Fractal increment H (Barnsley et al.: "H ≈ 0.8 is empirically a good choice").
HURST = 0.8

_PHI = (1.0 + math.sqrt(5.0)) / 2.0


def _gdf_normals() -> np.ndarray:
    """Akleman & Chen's 19 unit vectors of generalised distance functions (1-based n_1..n_19)."""
    p = _PHI
    raw = [(1, 0, 0), (0, 1, 0), (0, 0, 1),
           (1, 1, 1), (-1, 1, 1), (1, -1, 1), (1, 1, -1),
           (0, 1, p + 1), (0, -1, p + 1), (p + 1, 0, 1), (-p - 1, 0, 1), (1, p + 1, 0), (-1, p + 1, 0),
           (0, p, 1), (0, -p, 1), (1, 0, p), (-1, 0, p), (p, 1, 0), (-p, 1, 0)]
    n = np.array(raw, float)
    return n / np.linalg.norm(n, axis=1, keepdims=True)


#: n_1..n_19 (row i-1 is n_i): a..b = 1..3 cube, 4..7 octahedron, 4..13 icosahedron, 14..19 dodecahedron.
GDF_NORMALS = _gdf_normals()




# --------------------------------------------------------------------------------------------------
# fBm
# --------------------------------------------------------------------------------------------------


def fbm_amplitude(max_height: float, octaves: int, *, hurst: float = HURST, lacunarity: float = LACUNARITY) -> float:
    """A0 giving a peak-to-peak height ``max_height`` [m] over ``octaves`` terms (eqs 2.30–2.32).

    ``h_max = A0 Σ_{i<octaves} L^{-iH} = A0 (1 - L^{-H·octaves}) / (1 - L^{-H})``; the seed's eq 2.32
    writes the same sum with n = octaves - 1 as its last index.
    """
    h = _pos(max_height, "fbm.max_height", "m")
    if int(octaves) != octaves or octaves < 1:
        raise InputError("fbm.octaves", octaves, "must be an integer >= 1")
    g = _pos(lacunarity, "fbm.lacunarity", "1") ** (-_pos(hurst, "fbm.hurst", "1"))
    return h * (1.0 - g) / (1.0 - g ** int(octaves))


def fbm_noise(*, max_height: float, frequency: float, octaves: int = 4, seed: int = 0, lattice_size: int = 16,
              hurst: float = HURST, lacunarity: float = LACUNARITY) -> FBMNoise:
    """fBm noise resource (eqs 2.24–2.32) with peak-to-peak height ``max_height`` [m].

    Args:
        max_height: h_max [m] (the noise stays within ±h_max/2).
        frequency: f0 [1/m]: the first octave has one lattice cell per 1/f0 metres.
        octaves: number of terms.
        seed: lattice seed.
        lattice_size: P, the lattice is P³ random numbers, periodic (16 in the seed's example).
    """
    if int(lattice_size) != lattice_size or lattice_size < 2:
        raise InputError("fbm.lattice_size", lattice_size, "must be an integer >= 2")
    a0 = fbm_amplitude(max_height, octaves, hurst=hurst, lacunarity=lacunarity)
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(0x0F8,)))
    lat = rng.uniform(-0.5, 0.5, size=(int(lattice_size),) * 3)
    # centre the lattice (zero mean over a period, so the volume is unchanged exactly, not only in
    # expectation) and keep it within [-0.5, 0.5] (so |noise| <= h_max / 2 still holds)
    lat -= lat.mean()
    lat *= 0.5 / max(float(np.abs(lat).max()), 0.5)
    return FBMNoise(lattice=lat, amplitude=a0, frequency=_pos(frequency, "fbm.frequency", "1/m"),
                    lacunarity=lacunarity, hurst=hurst, octaves=int(octaves))


# --------------------------------------------------------------------------------------------------
# power law and bounded Pareto sizes (eqs 2.22–2.23)
# --------------------------------------------------------------------------------------------------


def rock_density(s_min: float, *, k0: float, s0: float, alpha: float, s_max: float | None = None) -> float:
    """Rocks per m² larger than ``s_min`` (eq 2.22), or in [s_min, s_max] when ``s_max`` is given."""
    a = _pos(alpha, "rocks.alpha", "1")
    k = _pos(k0, "rocks.k0", "1/m^2") * _pos(s0, "rocks.s0", "m") ** a
    lo = _pos(s_min, "rocks.s_min", "m")
    return k * (lo ** -a - (0.0 if s_max is None else _pos(s_max, "rocks.s_max", "m") ** -a))


def calibrate_k0(rocks_per_m2: float, *, s_min: float, s0: float, alpha: float) -> float:
    """k0 such that eq 2.22 gives ``rocks_per_m2`` rocks larger than ``s_min`` per m²."""
    return _pos(rocks_per_m2, "rocks.rocks_per_m2", "1/m^2") * (_pos(s_min, "rocks.s_min", "m")
                                                                / _pos(s0, "rocks.s0", "m")) ** _pos(alpha, "rocks.alpha", "1")


def bounded_pareto(y, s_min: float, s_max: float, alpha: float) -> np.ndarray:
    """Rock sizes from uniform numbers ``y`` in [0, 1) (eq 2.23, inverse CDF of the bounded Pareto law).

    ``s = (-(y H^α - y L^α - H^α) / (H^α L^α))^(-1/α)`` with L = s_min, H = s_max.
    """
    lo, hi, a = _pos(s_min, "rocks.s_min", "m"), _pos(s_max, "rocks.s_max", "m"), _pos(alpha, "rocks.alpha", "1")
    if hi <= lo:
        raise InputError("rocks.s_max", s_max, f"must be > s_min = {lo} [m]")
    y = np.asarray(y, dtype=np.float64)
    ha, la = hi ** a, lo ** a
    return (-(y * ha - y * la - ha) / (ha * la)) ** (-1.0 / a)


def pareto_mean(s_min: float, s_max: float, alpha: float) -> float:
    """Mean of the bounded Pareto law of eq 2.23 [m]."""
    lo, hi, a = float(s_min), float(s_max), float(alpha)
    if a == 1.0:
        return lo * hi / (hi - lo) * math.log(hi / lo)
    return (lo ** a / (1.0 - (lo / hi) ** a)) * a / (a - 1.0) * (lo ** (1.0 - a) - hi ** (1.0 - a))


# --------------------------------------------------------------------------------------------------
# procedurally seeded rocks (eqs 2.34–2.39)
# --------------------------------------------------------------------------------------------------


def _random_rotations(rng, n: int) -> np.ndarray:
    """Uniformly random rotation matrices (n, 3, 3) (from uniform unit quaternions)."""
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return quat_to_dcm(q)


def _psr_texture(tex, centres, rots, radii, normals, p, N, period):
    """min over rocks of the generalised distance (eq 2.37) at the nodes near each rock (periodic)."""
    h = period / N
    for c, C, R in zip(centres, rots, radii):
        reach = math.sqrt(3.0) * R  # GDF >= |v|/√3 - R with any 4 body-diagonal normals present
        lo = np.floor((c - reach) / h).astype(int)
        hi = np.ceil((c + reach) / h).astype(int)
        ax = [np.arange(lo[a], hi[a] + 1) for a in range(3)]
        I, J, K = np.meshgrid(*ax, indexing="ij")
        pts = np.stack([I, J, K], -1).reshape(-1, 3) * h
        v = (pts - c) @ C.T
        proj = np.abs(v @ normals.T)
        m = proj.max(axis=1, keepdims=True)
        safe = np.where(m > 0, m, 1.0)
        d = (m[:, 0] * np.sum((proj / safe) ** p, axis=1) ** (1.0 / p)) - R
        idx = (np.mod(I, N).reshape(-1), np.mod(J, N).reshape(-1), np.mod(K, N).reshape(-1))
        np.minimum.at(tex, idx, d)


def psr_field(*, seed: int = 0, rocks_per_m2: float = 14.0, s_min: float = 0.05, s_max: float = 0.5,
              alpha: float = 2.8, period: float = 4.0, resolution: int = 64, p: float = 100.0, a: int = 4,
              b: int = 13, index_cell: float = 20.0, index_size: int = 16) -> PSRField:
    """Procedurally seeded rocks (seed 004 §2.3.3), reproducible from ``seed`` alone.

    Args:
        seed: the only source of randomness.
        rocks_per_m2: K, rocks larger than s_min per m² of surface.
        s_min, s_max, alpha: bounded Pareto diameters (eq 2.23) [m].
        period: side L of the periodic texture cube [m].
        resolution: texture nodes per side.
        p: norm of the generalised distance functions (eq 2.37; large p gives sharp edges).
        a, b: range of Akleman & Chen's normals n_a..n_b (1-based; 4..13 icosahedron).
        index_cell: side of one cell of the texture-index lattice [m] (low frequency).
        index_size: the index lattice has index_size³ cells, periodic.
    """
    L = _pos(period, "psr.period", "m")
    if not (1 <= int(a) <= int(b) <= 19):
        raise InputError("psr.a/b", (a, b), "must satisfy 1 <= a <= b <= 19")
    if int(resolution) != resolution or resolution < 4:
        raise InputError("psr.resolution", resolution, "must be an integer >= 4")
    dbar = pareto_mean(s_min, s_max, alpha)
    bounded_pareto(0.5, s_min, s_max, alpha)  # validates the size law
    K3_mean = _pos(rocks_per_m2, "psr.rocks_per_m2", "1/m^2") * L ** 3 / dbar
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(0x95B,)))
    k3 = int(rng.poisson(K3_mean))
    diam = bounded_pareto(rng.uniform(size=k3), s_min, s_max, alpha)
    centres = rng.uniform(0.0, L, size=(k3, 3))
    rots = _random_rotations(rng, k3)
    N = int(resolution)
    tex = np.zeros((N, N, N))
    _psr_texture(tex, centres, rots, 0.5 * diam, GDF_NORMALS[int(a) - 1:int(b)], _pos(p, "psr.p", "1"), N, L)
    np.minimum(tex, 0.0, out=tex)
    index = rng.uniform(0.0, 8.0, size=(int(index_size),) * 3)
    index = np.minimum(index, np.nextafter(8.0, 0.0))
    return PSRField(texture=tex, period=L, index=index, index_cell=_pos(index_cell, "psr.index_cell", "m"))


# --------------------------------------------------------------------------------------------------
# polyhedral rocks (eqs 2.22–2.23)
# --------------------------------------------------------------------------------------------------


def icosahedron(diameter: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Regular icosahedron of circumscribed ``diameter`` [m]: ``(vertices (12, 3), faces (20, 3))``."""
    v = []
    for s1 in (-1, 1):
        for s2 in (-1, 1):
            v += [[0, s1, s2 * _PHI], [s1, s2 * _PHI, 0], [s2 * _PHI, 0, s1]]
    v = np.array(v, float)
    v *= 0.5 * diameter / np.linalg.norm(v[0])
    from scipy.spatial import ConvexHull

    return v, _outward(v, ConvexHull(v).simplices)


def _outward(v, f):
    f = np.array(f, np.int64)
    c = v.mean(axis=0)
    n = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
    flip = np.einsum("ij,ij->i", n, v[f[:, 0]] - c) < 0
    f[flip] = f[flip][:, [0, 2, 1]]
    return f


def _rock_law(where: str, *, rocks_per_m2, k0, s0, alpha, s_min, s_max, sigma, sink_min, sink_max) -> tuple:
    """Checked parameters of the rock population (eqs 2.22–2.23, §2.3.1) for the generator ``where``:
    returns ``(density of rocks in [s_min, s_max] per m², s_min, s_max, alpha)``."""
    smin = _pos(s_min, f"{where}.s_min", "m")
    smax = _pos(s_max, f"{where}.s_max", "m")
    if not smin < smax:
        raise InputError(f"{where}.s_min", s_min, f"must be < s_max = {s_max} [m]")
    a = _pos(alpha, f"{where}.alpha", "1")
    if not (math.isfinite(float(sigma)) and float(sigma) >= 0.0):
        raise InputError(f"{where}.sigma", sigma, "must be a finite number >= 0 (fraction of the size s)")
    for name, v in (("sink_min", sink_min), ("sink_max", sink_max)):
        if not math.isfinite(float(v)):
            raise InputError(f"{where}.{name}", v, "must be a finite number (ratio of the size s)")
    if not float(sink_min) <= float(sink_max):
        raise InputError(f"{where}.sink_min", sink_min, f"must be <= sink_max = {sink_max}")
    if (rocks_per_m2 is None) == (k0 is None):
        raise InputError(f"{where}.rocks_per_m2/k0", {"rocks_per_m2": rocks_per_m2, "k0": k0},
                         "give exactly one (the count calibrates k0)")
    if rocks_per_m2 is not None:
        k0 = calibrate_k0(rocks_per_m2, s_min=smin, s0=s0, alpha=a)
    return rock_density(smin, k0=k0, s0=s0, alpha=a, s_max=smax), smin, smax, a


def polyhedral_rocks(vertices, faces, *, seed: int = 0, rocks_per_m2: float | None = 14.0, k0: float | None = None,
                     s0: float = 2.5, alpha: float = 2.8, s_min: float = 0.05, s_max: float = 0.5, sigma: float = 0.1,
                     sink_min: float = -0.4, sink_max: float = 0.25, facet_ids=None, cell: float | None = None,
                     reach: float = 2.0) -> RockField:
    """Polyhedral rocks on the facets of a surface patch (seed 004 §2.3.1), target frame.

    Args:
        vertices, faces: the patch [m]; faces outward wound (rocks sit on the outer side).
        seed: base seed; facet i's generator is ``SeedSequence(seed, spawn_key=(facet_ids[i],))``.
        rocks_per_m2: K, rocks larger than s_min per m² (calibrates k0, see module doc); or
        k0: the power law's initialisation number with ``s0`` (Table 4.2: 2.5e-3, 2.5 m).
        alpha: power index α.
        s_min, s_max: size bounds [m].
        sigma: vertex deformation standard deviation, as a fraction of the size s.
        sink_min, sink_max: sink ratio r ~ U(sink_min, sink_max); the rock centre lies r·s below the
            facet plane (Table 4.2: -0.4, 0.25).
        facet_ids: stable ids of the facets (default 0..m-1): the RNG keys.
        cell, reach: broadphase cell side and exact range of the :class:`RockField` [m].

    Returns:
        A :class:`components.terrain.RockField` (rocks placed in the target frame; their shapes in
        their own frames are kept as ``shapes``, ``position``, ``attitude``).
    """
    V = np.asarray(vertices, dtype=np.float64)
    F = np.asarray(faces, dtype=np.int64)
    if V.ndim != 2 or V.shape[1] != 3 or F.ndim != 2 or F.shape[1] != 3:
        raise InputError("polyhedral_rocks.mesh", (V.shape, F.shape), "vertices (n, 3) and faces (m, 3)")
    dens, s_min, s_max, alpha = _rock_law("polyhedral_rocks", rocks_per_m2=rocks_per_m2, k0=k0, s0=s0, alpha=alpha,
                                          s_min=s_min, s_max=s_max, sigma=sigma, sink_min=sink_min,
                                          sink_max=sink_max)
    ids = np.arange(len(F)) if facet_ids is None else np.asarray(facet_ids, dtype=np.int64)
    if ids.shape != (len(F),):
        raise InputError("polyhedral_rocks.facet_ids", ids.shape, f"must hold one id per facet ({len(F)})")
    pos, att, size, fac, offsets = [], [], [], [], []
    for fi, fid in enumerate(ids):
        a, b, c = V[F[fi]]
        n = np.cross(b - a, c - a)
        area = 0.5 * float(np.linalg.norm(n))
        if area == 0.0:
            continue
        n /= 2.0 * area
        rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(int(fid),)))
        k = int(rng.poisson(area * dens))
        for _ in range(k):
            s = float(bounded_pareto(rng.uniform(), s_min, s_max, alpha))
            offsets.append(rng.normal(scale=sigma * s, size=(12, 3)))      # the 12 icosahedron vertices
            q = rng.normal(size=4)
            q /= np.linalg.norm(q)
            if q[0] < 0:
                q = -q
            u1, u2 = rng.uniform(size=2)
            if u1 + u2 > 1.0:
                u1, u2 = 1.0 - u1, 1.0 - u2
            r = rng.uniform(sink_min, sink_max)
            pos.append(a + u1 * (b - a) + u2 * (c - a) - r * s * n)
            att.append(q)
            size.append(s)
            fac.append(int(fid))
    size = np.array(size)
    shapes = _deformed_icosahedra(size, np.array(offsets).reshape(-1, 12, 3))
    return RockField.from_shapes(shapes, np.array(pos).reshape(-1, 3), np.array(att).reshape(-1, 4),
                                 size=size, polyhedron=np.arange(len(size), dtype=np.int64),
                                 facet=np.array(fac, np.int64), cell=cell, reach=reach)


# --------------------------------------------------------------------------------------------------
# polyhedral rocks on a terrain SDF (eqs 2.22–2.23, §2.3.1)
# --------------------------------------------------------------------------------------------------


def _zigzag(i: int) -> int:
    """Non-negative key of an integer (SeedSequence spawn keys are non-negative)."""
    return 2 * i if i >= 0 else -2 * i - 1


def _bare(terrain) -> TerrainSDF:
    """The terrain without explicit rocks (the surface the rocks are placed on)."""
    if not isinstance(terrain, TerrainSDF):
        raise InputError("terrain_rocks.terrain", type(terrain).__name__, "must be a TerrainSDF")
    return TerrainSDF(base=terrain.base, fbm=terrain.fbm, psr=terrain.psr)


def project_to_surface(terrain, points, *, tol: float = 1e-10, max_iter: int = 50) -> tuple[np.ndarray, np.ndarray]:
    """Nearest-surface points of a terrain SDF by Newton steps ``x <- x - d ∇d / |∇d|²`` (eq 2.13 iterated).

    Args:
        terrain: a :class:`components.terrain.TerrainSDF` (its explicit rocks are ignored).
        points: (n, 3) [m].
        tol: stop when |d| <= tol [m].
        max_iter: iteration cap.

    Returns:
        ``(surface points (n, 3) [m], unit normals (n, 3))``; an :class:`InputError` when a point
        does not converge (a vanishing gradient: a medial point of the body).
    """
    t = _bare(terrain)
    x = np.array(points, dtype=np.float64).reshape(-1, 3)
    for _ in range(int(max_iter)):
        d, g = eval_terrain(t, x)
        g2 = np.sum(g * g, axis=1)
        if np.all(np.abs(d) <= tol):
            break
        step = np.where(g2 > 0, d / np.where(g2 > 0, g2, 1.0), 0.0)
        x = x - step[:, None] * g
    d, g = eval_terrain(t, x)
    gn = np.linalg.norm(g, axis=1)
    bad = ~((np.abs(d) <= tol) & (gn > 0))
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise InputError("project_to_surface.points", np.asarray(points, float).reshape(-1, 3)[i].tolist(),
                         f"did not reach the surface within {max_iter} Newton steps (|d| = {abs(d[i]):.3g} m)")
    return x, g / gn[:, None]


def terrain_rocks(terrain, *, centre, region_radius: float, seed: int = 0, rocks_per_m2: float | None = 14.0,
                  k0: float | None = None, s0: float = 2.5, alpha: float = 2.8, s_min: float = 0.05,
                  s_max: float = 0.5, sigma: float = 0.1, sink_min: float = -0.4, sink_max: float = 0.25,
                  tile: float = 4.0, max_slope: float = 60.0, cell: float | None = None,
                  reach: float = 2.0) -> RockField:
    """Polyhedral rocks (seed 004 §2.3.1) on the surface of a terrain SDF, within a region.

    The region is the part of the surface (the zero level set of ``terrain`` without explicit rocks)
    that lies over the disc of radius ``region_radius`` about ``c0`` in the tangent plane at ``c0``,
    where ``c0`` is the surface point nearest ``centre`` and ``n`` the surface normal there: a point
    ``c0 + u e1 + v e2`` of the disc (``e1, e2 ⊥ n``) is carried along ``n`` onto the surface by
    Newton steps on ``d(p + t n) = 0``. The region must be a graph over that disc (no overhangs).

    The rocks form a Poisson process of ``K`` rocks per m² **of surface** (eq 2.22 between s_min
    and s_max): candidates are drawn uniformly on the disc with ``K / cos θ_max`` per m², and a
    candidate whose surface normal makes the angle θ with ``n`` is kept with probability
    ``cos θ_max / cos θ`` (thinning: the surface element over dA of the disc is dA / cos θ). Slopes
    steeper than ``max_slope`` relative to ``n`` are kept always (under-populated there). Each rock:
    a bounded-Pareto size s (eq 2.23, :func:`bounded_pareto`), a regular icosahedron of diameter s
    whose 12 vertices get Gaussian offsets of standard deviation ``sigma * s`` per axis, the convex
    hull of those, a uniformly random attitude, and its centre sunk ``r s`` along the local normal
    below its surface point, r ~ U(sink_min, sink_max) (negative r raises it; Table 4.2: -0.4, 0.25).

    As the seed reseeds the generator per facet (§2.3.1), here the disc is cut into square tiles of
    side ``tile`` in (e1, e2) and tile (i, j) draws from ``SeedSequence(seed, spawn_key=(i', j'))``
    (``i'``, ``j'``: non-negative zigzag keys): a tile's rocks do not depend on the region size or on
    the other tiles; ``RockField.facet`` holds ``i' << 32 | j'``.

    Calibration (seed 004 Table 4.2 vs §4.1): the table's ``k0 = 2.5e-3`` with s0 = 2.5 m, α = 2.8
    gives K = 143 rocks/m² above s_min = 5 cm, while the text states K ≈ 14; ``k0 = 2.5e-4`` gives
    14.3, so the table's exponent is taken as a misprint: give ``rocks_per_m2`` (default 14) and k0
    follows (:func:`calibrate_k0`), or give ``k0`` and ``rocks_per_m2=None``.

    Args:
        terrain: the :class:`components.terrain.TerrainSDF` (its ``rocks`` are ignored).
        centre: a point near the region's centre [m], target frame (projected onto the surface).
        region_radius: radius of the disc [m].
        seed: base seed.
        rocks_per_m2, k0, s0, alpha: the power law of eq 2.22 (see Calibration).
        s_min, s_max: size bounds [m] (eq 2.23).
        sigma: vertex deformation standard deviation, a fraction of s.
        sink_min, sink_max: sink ratio bounds.
        tile: side of the reseeding tiles [m].
        max_slope: steepest slope [deg] (relative to ``n``) sampled without bias, in [0, 85].
        cell, reach: broadphase cell side and exact range of the :class:`RockField` [m].

    Returns:
        A :class:`components.terrain.RockField`; its ``position`` are the rock centres, ``size`` the s.
    """
    rho = _pos(region_radius, "terrain_rocks.region_radius", "m")
    tl = _pos(tile, "terrain_rocks.tile", "m")
    if not (0.0 <= float(max_slope) <= 85.0):
        raise InputError("terrain_rocks.max_slope", max_slope, "must be in [0, 85] [deg]")
    dens, smin, smax, a = _rock_law("terrain_rocks", rocks_per_m2=rocks_per_m2, k0=k0, s0=s0, alpha=alpha,
                                    s_min=s_min, s_max=s_max, sigma=sigma, sink_min=sink_min, sink_max=sink_max)
    bare = _bare(terrain)
    c0, n = project_to_surface(bare, _vec3("terrain_rocks.centre", centre))
    c0, n = c0[0], n[0]
    e1 = np.cross(n, [1.0, 0.0, 0.0] if abs(n[0]) < 0.9 else [0.0, 1.0, 0.0])
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(n, e1)
    w_max = 1.0 / math.cos(math.radians(float(max_slope)))
    i_lo, i_hi = int(math.floor(-rho / tl)), int(math.floor(rho / tl))
    uv, draws, keys = [], [], []
    for i in range(i_lo, i_hi + 1):
        for j in range(i_lo, i_hi + 1):
            ki, kj = _zigzag(i), _zigzag(j)
            rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(ki, kj)))
            m = int(rng.poisson(dens * tl * tl * w_max))
            u = (i + rng.uniform(size=m)) * tl
            v = (j + rng.uniform(size=m)) * tl
            y = rng.uniform(size=m)                               # size (eq 2.23)
            dv = rng.normal(size=(m, 12, 3))                      # vertex deformation
            q = rng.normal(size=(m, 4))                           # attitude
            r = rng.uniform(float(sink_min), float(sink_max), size=m)  # sink ratio
            acc = rng.uniform(size=m)                             # thinning
            inside = u * u + v * v <= rho * rho
            uv.append(np.column_stack([u, v])[inside])
            draws.append((y[inside], dv[inside], q[inside], r[inside], acc[inside]))
            keys.append(np.full(int(inside.sum()), (ki << 32) | kj, np.int64))
    uv = np.concatenate(uv)
    y, dv, q, r, acc = (np.concatenate([d[k] for d in draws]) for k in range(5))
    key = np.concatenate(keys)
    # carry each disc point along n onto the surface: Newton on f(t) = d(p0 + t n)
    p0 = c0 + uv[:, :1] * e1 + uv[:, 1:] * e2
    t = np.zeros(len(p0))
    ok = np.ones(len(p0), bool)
    for _ in range(60):
        d, g = eval_terrain(bare, p0 + t[:, None] * n)
        dn = g @ n
        ok = dn > 0.05
        if np.all(np.abs(d[ok]) <= 1e-10) or not np.any(ok):
            break
        t = np.where(ok, t - d / np.where(ok, dn, 1.0), t)
    p = p0 + t[:, None] * n
    d, g = eval_terrain(bare, p)
    gn = np.linalg.norm(g, axis=1)
    N = g / np.where(gn > 0, gn, 1.0)[:, None]
    cos = N @ n
    ok &= (np.abs(d) <= 1e-10) & (gn > 0) & (cos > 0)
    keep = ok & (acc * w_max * np.maximum(cos, 1e-300) < 1.0)   # P(keep) = min(1, 1 / (w_max cos θ))
    s = bounded_pareto(y[keep], smin, smax, a)
    p, N, dv, q, r, key = p[keep], N[keep], dv[keep], q[keep], r[keep], key[keep]
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    q[q[:, 0] < 0] *= -1.0
    shapes = _deformed_icosahedra(s, float(sigma) * s[:, None, None] * dv)
    centres = p - (r * s)[:, None] * N
    return RockField.from_shapes(shapes, centres, q, size=s, facet=key, cell=cell, reach=reach)


@numba.njit(cache=True)
def _hulls_by_triples(points, faces, nface):
    """Convex hulls of small point sets by brute force, for each set ``points[k]`` (K, m, 3).

    A triple (i, j, l) is a hull facet when every other point lies strictly on one side of its plane
    (points in general position, as Gaussian-deformed vertices are with probability 1); it is wound
    so that the others are behind it (outward normal). ``faces[k, :nface[k]]`` receives the facets;
    ``nface[k] = -1`` flags a set whose facet count is not ``2 h - 4`` (h: points on facets), a
    degenerate one the caller hands to scipy. O(m⁴) per set: 2.6k plane tests for m = 12.
    """
    K, m, _ = points.shape
    for k in range(K):
        P = points[k]
        n = 0
        on = np.zeros(m, np.bool_)
        for i in range(m):
            for j in range(i + 1, m):
                for l in range(j + 1, m):
                    ax = P[j, 0] - P[i, 0]
                    ay = P[j, 1] - P[i, 1]
                    az = P[j, 2] - P[i, 2]
                    bx = P[l, 0] - P[i, 0]
                    by = P[l, 1] - P[i, 1]
                    bz = P[l, 2] - P[i, 2]
                    nx = ay * bz - az * by
                    ny = az * bx - ax * bz
                    nz = ax * by - ay * bx
                    pos = 0
                    neg = 0
                    for q in range(m):
                        if q != i and q != j and q != l:
                            s = nx * (P[q, 0] - P[i, 0]) + ny * (P[q, 1] - P[i, 1]) + nz * (P[q, 2] - P[i, 2])
                            if s > 0.0:
                                pos += 1
                            elif s < 0.0:
                                neg += 1
                    if pos + neg == m - 3 and (pos == 0 or neg == 0) and n < faces.shape[1]:
                        faces[k, n, 0] = i
                        if pos == 0:
                            faces[k, n, 1] = j
                            faces[k, n, 2] = l
                        else:
                            faces[k, n, 1] = l
                            faces[k, n, 2] = j
                        on[i] = True
                        on[j] = True
                        on[l] = True
                        n += 1
        h = 0
        for i in range(m):
            if on[i]:
                h += 1
        nface[k] = n if n == 2 * h - 4 else -1


def _deformed_icosahedra(size, offsets) -> ConvexPolyhedra:
    """Convex hulls of icosahedra of diameters ``size`` (K,) whose vertices are moved by ``offsets``
    (K, 12, 3) [m], each in its own frame, outward wound, only hull vertices kept.

    The hulls come from :func:`_hulls_by_triples` (vectorised, ~20x faster than one scipy call per
    rock); a degenerate set, if any, from ``scipy.spatial.ConvexHull``.
    """
    ico_v, _ = icosahedron(1.0)
    K = len(size)
    if K == 0:
        return ConvexPolyhedra(np.zeros((0, 3)), np.zeros((0, 3), np.int64), np.zeros(1, np.int64), np.zeros(0))
    pts = np.ascontiguousarray(ico_v[None] * np.asarray(size, float)[:, None, None] + offsets)
    faces = np.zeros((K, 20, 3), np.int64)
    nface = np.zeros(K, np.int64)
    _hulls_by_triples(pts, faces, nface)
    for k in np.flatnonzero(nface < 0):  # degenerate (coplanar points): scipy's Qhull, oriented like the rest
        from scipy.spatial import ConvexHull

        f = _outward(pts[k], ConvexHull(pts[k]).simplices)
        faces[k, :len(f)] = f
        nface[k] = len(f)
    valid = np.arange(20)[None, :] < nface[:, None]                       # (K, 20)
    used = np.zeros((K, 12), bool)
    kk = np.broadcast_to(np.arange(K)[:, None, None], faces.shape)
    used[kk[valid].reshape(-1), faces[valid].reshape(-1)] = True         # hull vertices only
    remap = np.cumsum(used, axis=1) - 1
    nv = used.sum(axis=1)
    voff = np.concatenate([[0], np.cumsum(nv)])
    V = pts[used]
    T = (remap[kk, faces] + voff[:-1, None, None])[valid]
    radius = np.sqrt(np.maximum.reduceat(np.sum(V * V, axis=1), voff[:-1]))
    return ConvexPolyhedra(vertices=V, triangles=T.astype(np.int64),
                           tri_start=np.concatenate([[0], np.cumsum(nface)]).astype(np.int64), radius=radius)


def _vec3(name, v) -> np.ndarray:
    try:
        a = np.array(v, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise InputError(name, v, "must be 3 finite numbers [m]") from None
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise InputError(name, v, "must be 3 finite numbers [m]")
    return a
