"""Gravity sources as world resources: point mass, homogeneous ellipsoid, constant-density
polyhedron, voxelised field and linearised field (seed 004 §2.4, eqs 2.40–2.45).

A gravity source is a singleton resource (``world.add_resource(source)``) evaluated by
:class:`systems.gravity.fields.GravitySystem` at the centre of mass of every row that has mass.
Each source holds read-only arrays and scalars, checked when it is built, and offers
``kernel_params()``: the tuple of scalars/arrays its per-point kernel takes after the position.
The kernels, and the host-side evaluation of a source at points (``evaluate(source, points) ->
FieldValues``, ``acceleration``, ``potential``, a polyhedron's ``solid_angle`` and ``contains``,
``linearize``), are in :mod:`systems.gravity.kernels`; the equations are written out there.

Conventions (those of Werner & Scheeres 1997 and of ESA's ``polyhedral-gravity``): the potential
is positive, ``U = GM/r`` far away; ``g = ∇U`` points towards the mass; ``Γ = ∇∇U`` is symmetric
with trace ``−4πGρ`` inside matter and 0 outside (Poisson/Laplace). The field frame is the frame
the source's geometry is given in; the gravity system takes it to be the inertial frame turned
about z by ``angle0 + spin · t`` (:class:`systems.gravity.fields.GravitySystem`; inertial by default).

Sources
-------
* :class:`PointMass` — ``U = μ/r``.
* :class:`Ellipsoid` — the homogeneous triaxial ellipsoid, in closed form through Carlson's elliptic
  integrals.
* :class:`Polyhedron` — Werner & Scheeres, "Exterior gravitation of a polyhedron derived and
  compared with harmonic and mascon gravitation representations of asteroid 4769 Castalia",
  Celest. Mech. Dyn. Astron. 65 (1997) 313–344; seed 004 eqs 2.40–2.42. Its edge and facet tables
  (eq 2.40, :func:`polyhedron_tables`) need *outward* facet normals and *outward* in-plane edge
  normals: mesh checks and reorientation are in :func:`components.mesh.check_polyhedron`
  (eqs 2.10–2.11).
* :class:`VoxelField` — trilinear interpolation in a precomputed grid (seed 004 §2.4.4); built
  by :func:`scenes.assets.voxel.build_voxel_field`.
* :class:`LinearizedGravity` — first-order expansion about a reference point (eq 2.43), built by
  :func:`systems.gravity.kernels.linearize`.
* :class:`UserField` — a field the user writes as a numba kernel ``(p, x, y, z) -> (U, gx, gy, gz)``
  with its own parameters (a mascon model, a field from a mission's gravity science): every pipeline
  links it in place of the built-in kinds (``scenes/examples/gravity_mascons.py``).
* :class:`SphericalHarmonics` — a planet's exterior field as a spherical-harmonic series of fully
  normalised coefficients C̄_nm, S̄_nm (Montenbruck & Gill, *Satellite Orbits*, Springer 2000,
  §3.2), read from an ICGEM ``.gfc`` file (:meth:`SphericalHarmonics.from_gfc`); the field frame is
  the body-fixed frame the coefficients are given in. The repository ships EGM2008 to degree and
  order 36 (:data:`scenes.assets.EGM2008_GFC`).

Mass consistency: every source with an extent takes exactly one of ``density`` [kg/m³],
``mass`` [kg] or ``mu`` [m³/s²] and derives the others with ``μ = G M = G ρ V``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from components.mesh import check_polyhedron, inertia_from_covariance, solid_moments
from components.rigid import validate_mass_properties
from ecs.errors import InputError, positive_number

#: Newtonian constant of gravitation [m³ kg⁻¹ s⁻²] (CODATA 2018, the value polyhedral-gravity uses).
G = 6.67430e-11

__all__ = [
    "G",
    "Ellipsoid",
    "FieldValues",
    "GravitySource",
    "LinearizedGravity",
    "PointMass",
    "Polyhedron",
    "SphericalHarmonics",
    "UserField",
    "VoxelField",
    "as_points",
    "polyhedron_tables",
    "resolve_mu",
]


# ================================================================================================
# resources
# ================================================================================================


@dataclass(frozen=True)
class FieldValues:
    """Field values at n points, field frame.

    Attributes:
        potential: U [m²/s²], shape (n,), positive convention (U = GM/r far away).
        acceleration: g = ∇U [m/s²], shape (n, 3).
        gradient: Γ = ∇∇U [1/s²], shape (n, 3, 3), or None where the source does not provide it.
    """

    potential: np.ndarray
    acceleration: np.ndarray
    gradient: np.ndarray | None = None


def as_points(points, field: str = "points") -> tuple[np.ndarray, bool]:
    """Positions [m] given as (3,) or (n, 3): an (n, 3) float64 C-contiguous array and whether the
    input was a single point (:class:`InputError` naming ``field`` otherwise)."""
    try:
        p = np.array(points, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(field, points, "must be an (n, 3) array of positions [m]") from None
    single = p.ndim == 1
    p = np.atleast_2d(p)
    if p.ndim != 2 or p.shape[1] != 3:
        raise InputError(field, f"array of shape {np.shape(points)}", "must have shape (3,) or (n, 3) [m]")
    if not np.all(np.isfinite(p)):
        raise InputError(field, "non-finite entries", "must be finite (no NaN or inf) [m]")
    return np.ascontiguousarray(p), single




def resolve_mu(volume: float, *, density=None, mass=None, mu=None, field: str) -> tuple[float, float, float]:
    """Mass consistency ``μ = G M = G ρ V``: exactly one of density, mass, mu.

    Args:
        volume: V [m³], > 0.
        density: ρ [kg/m³].
        mass: M [kg].
        mu: μ = GM [m³/s²].
        field: name used in error messages.

    Returns:
        ``(density [kg/m³], mass [kg], mu [m³/s²])``.

    Raises:
        InputError: none or several given, or a value not finite and > 0.
    """
    given = {k: v for k, v in (("density", density), ("mass", mass), ("mu", mu)) if v is not None}
    if len(given) != 1:
        raise InputError(f"{field}.density/mass/mu", given or None,
                         "give exactly one of density [kg/m^3], mass [kg] or mu = GM [m^3/s^2]")
    (name, value), = given.items()
    unit = {"density": "kg/m^3", "mass": "kg", "mu": "m^3/s^2"}[name]
    x = positive_number(value, f"{field}.{name}", unit)
    if name == "density":
        rho = x
    elif name == "mass":
        rho = x / volume
    else:
        rho = x / (G * volume)
    return rho, rho * volume, G * rho * volume


class GravitySource:
    """Base of every gravity resource. Subclasses set ``kind`` (the key of their kernels in
    :mod:`systems.gravity.kernels` and :mod:`systems.gravity.fields`) and implement
    :meth:`kernel_params`.

    Attributes:
        mu: GM of the source [m³/s²].
        center_of_mass: field-frame position of the centre of mass [m], shape (3,).
    """

    kind: str = ""
    mu: float
    center_of_mass: np.ndarray

    def kernel_params(self) -> tuple:  # pragma: no cover - abstract
        """Arguments after (x, y, z) of this source's per-point device kernel (host arrays)."""
        raise NotImplementedError


class PointMass(GravitySource):
    """A point mass (or any spherically symmetric body seen from outside).

    Args:
        mu: GM [m³/s²]; or ``mass`` [kg] (exactly one).
        center: position in the field frame [m].
    """

    kind = "point_mass"

    def __init__(self, *, mu: float | None = None, mass: float | None = None, center=(0.0, 0.0, 0.0)):
        if (mu is None) == (mass is None):
            raise InputError("PointMass.mu/mass", {"mu": mu, "mass": mass},
                             "give exactly one of mu = GM [m^3/s^2] or mass [kg]")
        self.mu = positive_number(mu, "PointMass.mu", "m^3/s^2") if mu is not None \
            else G * positive_number(mass, "PointMass.mass", "kg")
        c = np.array(center, dtype=np.float64)
        if c.shape != (3,) or not np.all(np.isfinite(c)):
            raise InputError("PointMass.center", center, "must be 3 finite numbers [m]")
        self.center_of_mass = c

    @property
    def mass(self) -> float:
        return self.mu / G

    def kernel_params(self) -> tuple:
        c = self.center_of_mass
        return (float(c[0]), float(c[1]), float(c[2]), self.mu)


class Ellipsoid(GravitySource):
    """Homogeneous triaxial ellipsoid ``x²/a² + y²/b² + z²/c² ≤ 1``, centred at the field origin,
    axes along the field axes (closed form through Carlson's R_F, R_D: module docstring).

    Args:
        a, b, c: semi-axes [m], > 0 (any order).
        density: ρ [kg/m³]; or ``mass`` [kg], or ``mu`` = GM [m³/s²] (exactly one).
    """

    kind = "ellipsoid"

    def __init__(self, a: float, b: float, c: float, *, density=None, mass=None, mu=None):
        self.axes = np.array([positive_number(v, f"Ellipsoid.{n}", "m") for n, v in (("a", a), ("b", b), ("c", c))])
        self.volume = 4.0 / 3.0 * math.pi * float(np.prod(self.axes))
        self.density, self.mass, self.mu = resolve_mu(self.volume, density=density, mass=mass, mu=mu,
                                                      field="Ellipsoid")
        self.center_of_mass = np.zeros(3)

    def kernel_params(self) -> tuple:
        a, b, c = self.axes
        return (a * a, b * b, c * c, self.mu)


def polyhedron_tables(vertices: np.ndarray, faces: np.ndarray) -> dict[str, np.ndarray]:
    """Edge and facet tables of eq 2.40 for a checked, outward-wound, closed triangle mesh.

    Args:
        vertices: [m], shape (nv, 3).
        faces: outward counter-clockwise triangles, shape (nf, 3), int64.

    Returns:
        dict with ``edges`` (ne, 2) int64 (i < j), ``edge_dyad`` (ne, 6) (xx, yy, zz, xy, xz, yz),
        ``edge_length`` (ne,) [m], ``face_normal`` (nf, 3) unit outward.
    """
    v = vertices
    f = faces
    p0, p1, p2 = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    n = np.cross(p1 - p0, p2 - p0)
    n /= np.linalg.norm(n, axis=1)[:, None]
    a = f.reshape(-1)
    b = f[:, [1, 2, 0]].reshape(-1)
    fi = np.repeat(np.arange(f.shape[0]), 3)
    d = v[b] - v[a]
    m = np.cross(d, n[fi])  # in the facet plane, perpendicular to the edge, pointing out of the facet
    m /= np.linalg.norm(m, axis=1)[:, None]
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    key = lo * v.shape[0] + hi
    ukey, inv = np.unique(key, return_inverse=True)
    edges = np.stack([ukey // v.shape[0], ukey % v.shape[0]], axis=1).astype(np.int64)
    dyad = np.zeros((ukey.shape[0], 3, 3))
    np.add.at(dyad, inv.reshape(-1), n[fi][:, :, None] * m[:, None, :])
    dyad = 0.5 * (dyad + dyad.transpose(0, 2, 1))  # symmetric in exact arithmetic (W&S 1997)
    e6 = np.stack([dyad[:, 0, 0], dyad[:, 1, 1], dyad[:, 2, 2], dyad[:, 0, 1], dyad[:, 0, 2], dyad[:, 1, 2]], axis=1)
    length = np.linalg.norm(v[edges[:, 1]] - v[edges[:, 0]], axis=1)
    return {"edges": np.ascontiguousarray(edges), "edge_dyad": np.ascontiguousarray(e6),
            "edge_length": np.ascontiguousarray(length), "face_normal": np.ascontiguousarray(n)}


class Polyhedron(GravitySource):
    """Constant-density polyhedron (Werner & Scheeres; seed 004 §2.4.1, eqs 2.40–2.42).

    The mesh is checked first (:func:`components.mesh.check_polyhedron`: closed two-manifold,
    Euler's criterion eqs 2.10–2.11, consistent winding, no degenerate facets); a mesh wound
    entirely inward is reversed (``reoriented`` is then True), a mixed one is refused.

    Args:
        vertices: [m], shape (nv, 3), field frame. Load files with explicit units through
            :func:`scenes.assets.mesh_io.load_mesh` (or :func:`scenes.assets.mesh_io.load_polyhedron`).
        faces: triangles, shape (nf, 3), integer, 0-based.
        density: ρ [kg/m³]; or ``mass`` [kg], or ``mu`` = GM [m³/s²] (exactly one).

    Attributes:
        vertices, faces, edges, edge_dyad, edge_length, face_normal: the tables of eq 2.40.
        volume [m³], density [kg/m³], mass [kg], mu [m³/s²], center_of_mass [m],
        bounding_radius: largest vertex distance from the centre of mass [m],
        volumetric_radius: (3V/4π)^(1/3) [m],
        inertia: inertia tensor about the centre of mass [kg m²] (exact, from the mesh),
        quadrupole: Q = tr(I) E − 3 I [kg m²], the degree-2 moment of the far field.
    """

    kind = "polyhedron"

    def __init__(self, vertices, faces, *, density=None, mass=None, mu=None):
        v, f, self.reoriented = check_polyhedron(vertices, faces, field="Polyhedron")
        self.vertices = np.ascontiguousarray(v)
        self.faces = np.ascontiguousarray(f)
        ref = v.mean(axis=0)
        q0, q1, q2 = v[f[:, 0]] - ref, v[f[:, 1]] - ref, v[f[:, 2]] - ref
        self.volume = float(np.sum(np.einsum("ij,ij->i", q0, np.cross(q1, q2)))) / 6.0
        self.density, self.mass, self.mu = resolve_mu(self.volume, density=density, mass=mass, mu=mu,
                                                      field="Polyhedron")
        # the uniform solid's mass properties (as scenes.assets.mass_properties.solid_mesh computes them)
        vol, com, second = solid_moments(v, f)
        m = positive_number(self.mass, "solid_mesh.mass", "kg")
        _, inertia = validate_mass_properties(m, inertia_from_covariance((m / vol) * second), field="solid_mesh")
        self.center_of_mass = np.array(com)
        self.inertia = np.array(inertia)
        self.quadrupole = np.trace(self.inertia) * np.eye(3) - 3.0 * self.inertia
        self.bounding_radius = float(np.max(np.linalg.norm(v - self.center_of_mass, axis=1)))
        self.volumetric_radius = (3.0 * self.volume / (4.0 * math.pi)) ** (1.0 / 3.0)
        t = polyhedron_tables(self.vertices, self.faces)
        self.edges, self.edge_dyad = t["edges"], t["edge_dyad"]
        self.edge_length, self.face_normal = t["edge_length"], t["face_normal"]
        for a in (self.vertices, self.faces, self.edges, self.edge_dyad, self.edge_length, self.face_normal):
            a.setflags(write=False)

    @property
    def grho(self) -> float:
        """G ρ [1/s²]."""
        return G * self.density

    @property
    def face_count(self) -> int:
        return int(self.faces.shape[0])

    @property
    def surface_area(self) -> float:
        """Total facet area [m²]."""
        v, f = self.vertices, self.faces
        return float(0.5 * np.sum(np.linalg.norm(np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]]), axis=1)))

    @property
    def sphericity(self) -> float:
        """Seed 004 eq 2.45: ψ = π^(1/3) (6V)^(2/3) / A (1 for a sphere), the shape measure the
        seed uses to explain how many facets a body's gravity model needs (§2.4.3)."""
        return math.pi ** (1.0 / 3.0) * (6.0 * self.volume) ** (2.0 / 3.0) / self.surface_area

    @property
    def face_centroids(self) -> np.ndarray:
        """Facet centroids [m], shape (nf, 3) (the seed's surface evaluation points, §2.4.3)."""
        v, f = self.vertices, self.faces
        return (v[f[:, 0]] + v[f[:, 1]] + v[f[:, 2]]) / 3.0

    def kernel_params(self) -> tuple:
        return (self.vertices, self.edges, self.edge_dyad, self.edge_length, self.faces, self.face_normal,
                self.grho)


class VoxelField(GravitySource):
    """A gravity field tabulated on a regular grid (seed 004 §2.4.4), looked up trilinearly.

    Build one with :func:`scenes.assets.voxel.build_voxel_field` (parallel, in blocks, cached on
    disk). Node (i, j, k) sits at ``origin + spacing·(i, j, k)``.

    Modes (the seed's schemes 2 and 3): ``"g"`` stores (g, U) per node; ``"dg"`` stores the
    perturbation from the point mass μ at the centre of mass c, (g − g_pm, U − U_pm), and adds the
    point mass back at the query point. Perturbation nodes near c carry the point mass's 1/r²
    singularity: lookups deep inside the body near c are not meaningful in ``"dg"`` mode.

    Outside the grid box (both modes) the field is the exact far field to degree 2 plus a decaying
    residual: with c the centre of mass, x_b = c + t (x − c) the point where the ray from c to x
    leaves the box (0 < t < 1), q = G Q the quadrupole (MacCullagh, :data:`quadrupole_field`) and
    Δ = (stored − point mass − quadrupole) at x_b the residual of degrees ≥ 3 there::

        g(x) = g_pm(x) + g_Q(x) + t⁵ Δg(x_b),     U(x) = U_pm(x) + U_Q(x) + t⁴ ΔU(x_b)

    Degree n of the potential decays as r^−(n+1) along the ray, so the t⁵/t⁴ factors are exact for
    degree 3 and overestimate higher degrees; the field is continuous at the box (t = 1 there) and
    exact for the point mass and quadrupole. The box must contain c.

    Attributes:
        values: (nx, ny, nz, 4) float64: (gx, gy, gz, U) or their perturbations.
        origin: [m], shape (3,); spacing: h [m]; mode: "g" | "dg"; mu [m³/s²];
        center_of_mass [m]; quadrupole: Q [kg m²] (3, 3), zeros if unknown;
        meta: dict describing the build (mesh hash, density, timing).
    """

    kind = "voxel"

    def __init__(self, values, origin, spacing: float, *, mu: float, center_of_mass, quadrupole=None,
                 mode: str = "dg", meta: dict | None = None):
        vals = np.ascontiguousarray(np.asarray(values, dtype=np.float64))
        if vals.ndim != 4 or vals.shape[3] != 4 or min(vals.shape[:3]) < 2:
            raise InputError("VoxelField.values", f"array of shape {vals.shape}",
                             "must have shape (nx, ny, nz, 4) with every n >= 2")
        if mode not in ("g", "dg"):
            raise InputError("VoxelField.mode", mode, "must be 'g' (g and U) or 'dg' (g - g_pointmass and U - U_pm)")
        self.values = vals
        self.values.setflags(write=False)
        self.origin = np.array(origin, dtype=np.float64)
        self.spacing = positive_number(spacing, "VoxelField.spacing", "m")
        self.mu = positive_number(mu, "VoxelField.mu", "m^3/s^2")
        self.center_of_mass = np.array(center_of_mass, dtype=np.float64)
        q = np.zeros((3, 3)) if quadrupole is None else np.array(quadrupole, dtype=np.float64)
        bad = q.shape != (3, 3) or not np.all(np.isfinite(q))
        if bad or np.max(np.abs(q - q.T)) > 1e-9 * max(np.max(np.abs(q)), 1e-300):
            raise InputError("VoxelField.quadrupole", np.asarray(quadrupole).tolist(),
                             "must be a finite symmetric (3, 3) tensor [kg m^2]")
        self.quadrupole = 0.5 * (q + q.T)
        self.mode = mode
        self.meta = dict(meta or {})
        hi = self.origin + self.spacing * (np.array(vals.shape[:3]) - 1)
        if np.any(self.center_of_mass <= self.origin) or np.any(self.center_of_mass >= hi):
            raise InputError("VoxelField.center_of_mass", self.center_of_mass.tolist(),
                             f"must lie strictly inside the grid box {self.origin.tolist()} .. {hi.tolist()}")

    @property
    def shape(self) -> tuple[int, int, int]:
        return tuple(int(n) for n in self.values.shape[:3])

    @property
    def upper(self) -> np.ndarray:
        """Far corner of the grid box [m]."""
        return self.origin + self.spacing * (np.array(self.shape) - 1)

    def kernel_params(self) -> tuple:
        values, grid, far, perturbation = self.kernel_records()
        return (values, *grid, *far, perturbation)

    def kernel_records(self) -> tuple:
        """``(values, grid, far, perturbation)``: :func:`systems.gravity.sources.voxel_field`'s
        arguments after the point, ``grid = (ox, oy, oz, h)``, ``far = (cx, cy, cz, μ, q = G Q in
        the order xx, yy, zz, xy, xz, yz)``."""
        o, c, q = self.origin, self.center_of_mass, G * self.quadrupole
        grid = (float(o[0]), float(o[1]), float(o[2]), self.spacing)
        far = (float(c[0]), float(c[1]), float(c[2]), self.mu, float(q[0, 0]), float(q[1, 1]), float(q[2, 2]),
               float(q[0, 1]), float(q[0, 2]), float(q[1, 2]))
        return self.values, grid, far, self.mode == "dg"


class LinearizedGravity(GravitySource):
    """Gravity linearised about a reference point x0 (seed 004 eq 2.43, Tardivel et al.).

    ``g(x) ≈ g0 + Γ0 (x − x0)``, ``U(x) ≈ U0 + (x − x0)·g0 + ½ (x − x0)·Γ0·(x − x0)`` (the ½ the
    seed's eq 2.43 omits). Build one from an exact source with
    :func:`systems.gravity.kernels.linearize` (which evaluates that source at x0).

    Validity radius: the neglected term of g is ``½ T:ΔΔ + O(Δ³)`` with T = ∇Γ the third-derivative
    tensor at x0; bounding it by ``½ |T|_F |Δ|²`` (Frobenius norm, an upper bound of the
    operator norm) gives the radius within which the relative error of g stays below ``tol``:
    ``radius = √(2 tol |g0| / |T|_F)``.

    Args:
        x0: reference point [m], field frame.
        potential0, acceleration0, gradient0: U0 [m²/s²], g0 [m/s²] (3,) and Γ0 [1/s²] (3, 3) at x0.
        third_norm: |T|_F at x0 [1/(m s²)].
        mu: GM of the source [m³/s²]; center_of_mass: its centre of mass [m].
        tol: relative acceleration error that defines :attr:`radius`.

    Attributes:
        x0, potential0 (U0), acceleration0 (g0), gradient0 (Γ0), third_norm, radius [m], tol, mu,
        center_of_mass (the source's).
    """

    kind = "linearized"

    def __init__(self, x0, potential0: float, acceleration0, gradient0, *, third_norm: float, mu: float,
                 center_of_mass, tol: float = 1e-3):
        p, single = as_points(x0, "LinearizedGravity.x0")
        if not single:
            raise InputError("LinearizedGravity.x0", np.shape(x0), "must be one point, shape (3,) [m]")
        self.tol = positive_number(tol, "LinearizedGravity.tol", "1")
        self.x0 = p[0].copy()
        self.potential0 = float(potential0)
        self.acceleration0 = np.array(acceleration0, dtype=np.float64)
        self.gradient0 = np.array(gradient0, dtype=np.float64)
        if self.acceleration0.shape != (3,) or self.gradient0.shape != (3, 3):
            raise InputError("LinearizedGravity.acceleration0/gradient0",
                             (self.acceleration0.shape, self.gradient0.shape), "must have shapes (3,) and (3, 3)")
        self.mu = positive_number(mu, "LinearizedGravity.mu", "m^3/s^2")
        self.center_of_mass = np.array(center_of_mass, dtype=np.float64)
        self.third_norm = float(third_norm)
        gnorm = float(np.linalg.norm(self.acceleration0))
        self.radius = math.sqrt(2.0 * self.tol * gnorm / self.third_norm) if self.third_norm > 0 else math.inf

    def kernel_params(self) -> tuple:
        x, g, t = self.x0, self.acceleration0, self.gradient0
        return (float(x[0]), float(x[1]), float(x[2]), self.potential0, float(g[0]), float(g[1]), float(g[2]),
                float(t[0, 0]), float(t[1, 1]), float(t[2, 2]), float(t[0, 1]), float(t[0, 2]), float(t[1, 2]))

    def valid(self, points) -> np.ndarray:
        """True where ``|x − x0| <= radius``."""
        p, single = as_points(points)
        ok = np.linalg.norm(p - self.x0, axis=1) <= self.radius
        return bool(ok[0]) if single else ok


class SphericalHarmonics(GravitySource):
    """Exterior field of a body as a spherical-harmonic series (Montenbruck & Gill 2000, eq 3.27)::

        U(r, φ, λ) = GM/r Σ_{n=0}^{N} Σ_{m=0}^{n} (R/r)^n P̄_nm(sin φ) (C̄_nm cos mλ + S̄_nm sin mλ)

    with fully normalised coefficients and Legendre functions (no Condon–Shortley phase;
    ``P_nm = N_nm P̄_nm`` with ``N_nm = √((2 − δ_0m)(2n + 1)(n − m)!/(n + m)!)``, eq 3.26). r, φ, λ
    are the radius, geocentric latitude and longitude in the field frame (the body-fixed frame of the
    coefficients, centred on the body's centre of mass; degree-1 terms are dropped, C̄_00 is 1).
    Valid outside the Brillouin sphere r > R only.

    Args:
        mu: GM [m³/s²] of the model; radius: its reference radius R [m].
        c, s: C̄_nm, S̄_nm, arrays [N+1, N+1] (entries with m > n are ignored).
        degree: truncation N (default: the arrays' own, N >= 2).

    Attributes:
        mu, radius, degree, c, s (truncated, read-only), center_of_mass (the origin), name.
    """

    kind = "harmonics"

    def __init__(self, *, mu: float, radius: float, c, s, degree: int | None = None, name: str = ""):
        self.mu = positive_number(mu, "SphericalHarmonics.mu", "m^3/s^2")
        self.radius = positive_number(radius, "SphericalHarmonics.radius", "m")
        c = np.array(c, dtype=np.float64)
        s = np.array(s, dtype=np.float64)
        if c.ndim != 2 or c.shape[0] != c.shape[1] or s.shape != c.shape or c.shape[0] < 3:
            raise InputError("SphericalHarmonics.c/s", (c.shape, s.shape),
                             "must be two square arrays [N+1, N+1] of the same shape, N >= 2")
        n_max = c.shape[0] - 1
        deg = n_max if degree is None else int(degree)
        if not 2 <= deg <= n_max:
            raise InputError("SphericalHarmonics.degree", degree, f"must be an integer in [2, {n_max}] (the model's)")
        if not (np.all(np.isfinite(c)) and np.all(np.isfinite(s))):
            raise InputError("SphericalHarmonics.c/s", "non-finite", "every coefficient must be finite")
        self.degree = deg
        self.c = np.tril(c[:deg + 1, :deg + 1])
        self.s = np.tril(s[:deg + 1, :deg + 1])
        self.c.flags.writeable = self.s.flags.writeable = False
        self.center_of_mass = np.zeros(3)
        self.name = str(name)

    @classmethod
    def from_gfc(cls, path, *, degree: int | None = None) -> "SphericalHarmonics":
        """A model read from an ICGEM ``.gfc`` file (Barthelmes & Förste, "The ICGEM-format", GFZ
        Potsdam 2011): header keys ``earth_gravity_constant``, ``radius``, ``max_degree``,
        ``norm`` (must be ``fully_normalized``), then ``gfc L M C S ...`` rows."""
        header: dict[str, str] = {}
        rows = []
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                parts = line.split()
                if not parts:
                    continue
                if parts[0] == "gfc":
                    rows.append((int(parts[1]), int(parts[2]), float(parts[3].replace("D", "E")),
                                 float(parts[4].replace("D", "E"))))
                elif len(parts) >= 2 and not rows:
                    header[parts[0]] = parts[1]
        for key in ("earth_gravity_constant", "radius", "max_degree"):
            if key not in header:
                raise InputError(f"gfc file {path}: header key", key, "must be present (ICGEM format)")
        if header.get("norm", "fully_normalized") != "fully_normalized":
            raise InputError(f"gfc file {path}: norm", header["norm"], "must be fully_normalized")
        n_max = int(header["max_degree"])
        c = np.zeros((n_max + 1, n_max + 1))
        s = np.zeros((n_max + 1, n_max + 1))
        for n, m, cn, sn in rows:
            if n <= n_max and 0 <= m <= n:
                c[n, m], s[n, m] = cn, sn
        c[0, 0] = 1.0
        c[1, :] = s[1, :] = 0.0
        return cls(mu=float(header["earth_gravity_constant"].replace("D", "E")),
                   radius=float(header["radius"].replace("D", "E")), c=c, s=s, degree=degree,
                   name=header.get("modelname", str(path)))

    @property
    def central(self) -> bool:
        """The model carries the monopole μ/r (C̄_00 != 0)."""
        return bool(self.c[0, 0] != 0.0)

    def perturbation(self) -> "SphericalHarmonics":
        """The same model without its monopole (C̄_00 = 0): the field beyond the central point
        mass, for a solver that evaluates that point mass itself (the multibody solve's central
        field, so that its differential and linearised modes can split it)."""
        c = np.array(self.c)
        c[0, 0] = 0.0
        return SphericalHarmonics(mu=self.mu, radius=self.radius, c=c, s=self.s, name=f"{self.name} (no monopole)")

    def unnormalized(self) -> tuple[np.ndarray, np.ndarray]:
        """``(C, S)`` [N+1, N+1] unnormalised, ``C_nm = N_nm C̄_nm`` (eq 3.26; exact integer
        factorials, one rounding)."""
        n = self.degree
        f = np.zeros((n + 1, n + 1))
        for i in range(n + 1):
            for m in range(i + 1):
                f[i, m] = math.sqrt((1 if m == 0 else 2) * (2 * i + 1) * math.factorial(i - m) / math.factorial(i + m))
        return self.c * f, self.s * f

    def kernel_params(self) -> tuple:
        c, s = self.unnormalized()
        return (self.mu, self.radius, self.degree, np.ascontiguousarray(np.stack([c, s], axis=-1)))


class UserField(GravitySource):
    """A gravity field written by the user: a numba ``njit`` kernel and its parameters.

    ``kernel(p, x, y, z) -> (U, gx, gy, gz)``: the potential [m²/s²] (positive, ``U = GM/r`` far
    away) and the acceleration ``g = ∇U`` [m/s²] at the field-frame point (x, y, z) [m], ``p`` the
    float64 array ``params``. Every pipeline that evaluates a gravity source (the rigid bodies'
    :class:`systems.gravity.fields.GravitySystem` and its row term on links, the deployment's
    kernels, :func:`systems.gravity.kernels.evaluate`) links a copy of its kernels with this one in
    place of the built-in kinds (:func:`ecs.terms.specialise`), on the CPU and on the GPU. It has no
    gravity gradient, so the gradient torque refuses it (as it refuses the voxel field).

    Args:
        kernel: the field (above).
        params: its parameters, at least one finite number.
        mu: the field's GM [m³/s²], for what needs the total mass (the deployment's escape test).
        center: the field frame's centre of mass [m].
        name: a label for messages.
    """

    kind = "user"

    def __init__(self, kernel, params, *, mu: float, center=(0.0, 0.0, 0.0), name: str = "user"):
        import inspect

        import numba

        if not isinstance(kernel, numba.core.registry.CPUDispatcher):
            raise InputError(f"UserField {name}: kernel", getattr(kernel, "__name__", kernel),
                             "must be a numba.njit function kernel(p, x, y, z) -> (U, gx, gy, gz)")
        if len(inspect.signature(kernel.py_func).parameters) != 4:
            raise InputError(f"UserField {name}: parameter count of kernel {kernel.py_func.__name__}",
                             len(inspect.signature(kernel.py_func).parameters), "must take 4: p, x, y, z")
        p = np.ascontiguousarray(np.asarray(params, dtype=np.float64).ravel())
        if p.size == 0 or not np.all(np.isfinite(p)):
            raise InputError(f"UserField {name}: params", np.asarray(params).tolist()[:8],
                             "must be at least one finite number")
        self.kernel = kernel
        self.params = p
        self.params.flags.writeable = False
        self.mu = positive_number(mu, f"UserField {name}: mu", "m^3/s^2")
        c = np.array(center, dtype=np.float64)
        if c.shape != (3,) or not np.all(np.isfinite(c)):
            raise InputError(f"UserField {name}: center", center, "must be 3 finite numbers [m]")
        self.center_of_mass = c
        self.name = str(name)

    def kernel_params(self) -> tuple:
        return (self.params,)
