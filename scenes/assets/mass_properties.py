"""Mass properties of rigid parts: the thesis's Mass Distribution Calculator, built.

Seed 002 §1.3.1 describes a *Mass Distribution Calculator* (MDC) that "takes a list of vertices,
facets and material properties such as thickness and density to calculate the total mass of the
body, as well as the location of the Centre of Mass (CoM) and the moment of inertia"; the thesis
never implemented it (its §2.4.2.2 CubeSat inertia is worked by hand from box formulas, Eq. 1.37–1.39,
and the parallel-axis theorem). This module provides it:

* :class:`MassProperties` — mass [kg], CoM [m] and the inertia tensor about the CoM [kg m^2], with
  principal axes, the parallel-axis theorem, rigid placement in a parent frame and composition.
* Primitives with closed-form inertia: :func:`sphere`, :func:`spherical_shell`, :func:`ellipsoid`,
  :func:`box`, :func:`cylinder`, :func:`capsule`, and :func:`point_masses`.
* Meshes: :func:`solid_mesh` (exact volume integrals of a closed polyhedron) and :func:`shell_mesh`
  (thin shell of given thickness, the MDC's vertices + facets + thickness + density input).
* Checks (from the layers below): :func:`components.mesh.check_closed_mesh` and
  :func:`components.rigid.validate_mass_properties`.
* The seed's example: :func:`cubesat_3u` (seed 002 §2.4.2.2, the asymmetric top).

Conventions (seed 002 Eq. 1.13–1.15): the inertia tensor is the full matrix

    I = [[ Ixx, -Ixy, -Ixz],
         [-Ixy,  Iyy, -Iyz],
         [-Ixz, -Iyz,  Izz]],   Ixx = Σ m (y² + z²), Ixy = Σ m x y  (product of inertia),

i.e. ``I = tr(C) E - C`` with ``C = ∫ r rᵀ dm`` the second-moment (covariance) matrix about the CoM.
All quantities are SI and float64; every frame is the part's own frame unless a function says
otherwise. Bad input raises :class:`ecs.errors.InputError` naming the field, the value and the rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from components.mesh import check_closed_mesh, inertia_from_covariance, solid_moments
from components.rigid import validate_mass_properties
from ecs.errors import InputError
from ecs.errors import positive_number as _positive

__all__ = [
    "MassProperties",
    "box",
    "capsule",
    "combine",
    "cubesat_3u",
    "cylinder",
    "ellipsoid",
    "point_masses",
    "shell_mesh",
    "solid_mesh",
    "sphere",
    "spherical_shell",
]

#: Tolerance of the orthonormality check on a rotation matrix.
_ROTATION_ATOL = 1e-9


# --------------------------------------------------------------------------------------------------
# validation helpers
# --------------------------------------------------------------------------------------------------




def _axis(axis, field: str) -> int:
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)) or axis not in (0, 1, 2):
        raise InputError(field, axis, "must be one of 0 (x), 1 (y), 2 (z)")
    return int(axis)


def _resolve_mass(volume: float, mass, density, field: str, *, volume_name: str = "volume") -> float:
    """Mass of a part from exactly one of ``mass`` [kg] or ``density`` [kg per unit of ``volume``]."""
    if (mass is None) == (density is None):
        raise InputError(
            f"{field}.mass/{field}.density",
            {"mass": mass, "density": density},
            "exactly one of mass or density must be given",
        )
    if mass is not None:
        return _positive(mass, f"{field}.mass", "kg")
    rho = _positive(density, f"{field}.density", f"kg/{volume_name}")
    m = rho * volume
    if not math.isfinite(m) or m <= 0.0:
        raise InputError(f"{field}.density", density, f"density * {volume_name} = {m!r} must be finite and > 0")
    return m


def _vector3(value, field: str, unit: str) -> np.ndarray:
    try:
        v = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(field, value, f"must be a vector of 3 finite numbers [{unit}]") from None
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise InputError(field, value, f"must be a vector of 3 finite numbers [{unit}]")
    return v


# --------------------------------------------------------------------------------------------------
# MassProperties
# --------------------------------------------------------------------------------------------------


def _parallel_axis(mass: float, offset: np.ndarray) -> np.ndarray:
    """Inertia of a point mass ``mass`` at ``offset`` [m]: ``m (|d|² E - d dᵀ)`` [kg m^2]."""
    d = np.asarray(offset, dtype=np.float64)
    return mass * (float(d @ d) * np.eye(3) - np.outer(d, d))


@dataclass(frozen=True, eq=False)
class MassProperties:
    """Mass, centre of mass and central inertia tensor of a rigid part.

    Constructing one validates it (:func:`validate_mass_properties`); the arrays are stored as
    read-only float64 copies, the inertia symmetrised.

    Attributes:
        mass: total mass [kg].
        com: centre of mass [m], shape (3,), in the part's frame.
        inertia: inertia tensor about the CoM [kg m^2], shape (3, 3), in the part's frame; full
            tensor whose off-diagonals are minus the products of inertia (seed 002 Eq. 1.13).
    """

    mass: float
    com: np.ndarray
    inertia: np.ndarray

    def __post_init__(self):
        m, inertia = validate_mass_properties(self.mass, self.inertia, field="mass_properties")
        com = _vector3(self.com, "mass_properties.com", "m")
        com.setflags(write=False)
        inertia.setflags(write=False)
        object.__setattr__(self, "mass", m)
        object.__setattr__(self, "com", com)
        object.__setattr__(self, "inertia", inertia)

    def principal(self) -> tuple[np.ndarray, np.ndarray]:
        """Principal moments and axes.

        Returns:
            ``(moments, axes)``: moments [kg m^2], shape (3,), ascending; axes, shape (3, 3), whose
            columns are the unit principal axes in the part's frame, forming a right-handed frame
            (``det(axes) = +1``), so ``inertia = axes @ diag(moments) @ axes.T``.
        """
        moments, axes = np.linalg.eigh(self.inertia)
        if np.linalg.det(axes) < 0.0:
            axes[:, 2] = -axes[:, 2]
        return moments, axes

    def about(self, point=(0.0, 0.0, 0.0)) -> np.ndarray:
        """Inertia tensor about another point (parallel-axis theorem).

        Args:
            point: the reference point [m], shape (3,), in the part's frame.

        Returns:
            Inertia tensor about ``point`` [kg m^2], shape (3, 3), axes parallel to the part's frame:
            ``I_com + m (|d|² E - d dᵀ)`` with ``d = com - point``.
        """
        p = _vector3(point, "about.point", "m")
        return self.inertia + _parallel_axis(self.mass, self.com - p)

    def transformed(self, rotation=None, translation=None) -> "MassProperties":
        """The same part placed in a parent frame, ``x_parent = R x_part + t``.

        Args:
            rotation: proper rotation matrix R, shape (3, 3) (orthonormal, det +1); identity if None.
            translation: t [m], shape (3,); zero if None.

        Returns:
            MassProperties in the parent frame: CoM ``R com + t``, inertia ``R I Rᵀ``.

        Raises:
            InputError: if ``rotation`` is not a proper rotation or ``translation`` not 3 finite numbers.
        """
        if rotation is None:
            r = np.eye(3)
        else:
            try:
                r = np.array(rotation, dtype=np.float64)
            except (TypeError, ValueError):
                raise InputError("transformed.rotation", rotation, "must be a (3, 3) rotation matrix") from None
            if r.shape != (3, 3) or not np.all(np.isfinite(r)):
                raise InputError("transformed.rotation", rotation, "must be a finite (3, 3) rotation matrix")
            if np.max(np.abs(r.T @ r - np.eye(3))) > _ROTATION_ATOL or np.linalg.det(r) <= 0.0:
                raise InputError(
                    "transformed.rotation",
                    r.tolist(),
                    f"must be a proper rotation (R^T R = E within {_ROTATION_ATOL:g}, det R = +1)",
                )
        t = np.zeros(3) if translation is None else _vector3(translation, "transformed.translation", "m")
        return MassProperties(mass=self.mass, com=r @ self.com + t, inertia=r @ self.inertia @ r.T)

    @staticmethod
    def combine(parts: Iterable["MassProperties"]) -> "MassProperties":
        """Compose parts given in one common frame (parallel-axis theorem). See :func:`combine`."""
        return combine(parts)

    def __add__(self, other):
        if isinstance(other, MassProperties):
            return combine([self, other])
        return NotImplemented

    def __radd__(self, other):
        # lets sum(parts) work: sum() starts from the integer 0
        if isinstance(other, (int, float)) and other == 0:
            return self
        if isinstance(other, MassProperties):
            return combine([other, self])
        return NotImplemented

    def __repr__(self) -> str:
        return (
            f"MassProperties(mass={self.mass!r}, com={self.com.tolist()!r}, "
            f"inertia={self.inertia.tolist()!r})"
        )


def combine(parts: Iterable[MassProperties]) -> MassProperties:
    """Composite of rigid parts expressed in one common frame.

    ``m = Σ m_i``, ``c = Σ m_i c_i / m``, ``I = Σ [I_i + m_i (|d_i|² E - d_i d_iᵀ)]`` with
    ``d_i = c_i - c`` (parallel-axis theorem, as in seed 002 §2.4.2.2).

    Args:
        parts: MassProperties all in the same frame (place each with :meth:`MassProperties.transformed`).

    Returns:
        The composite's MassProperties in that frame.

    Raises:
        InputError: if ``parts`` is empty or holds something other than MassProperties.
    """
    parts = list(parts)
    if not parts:
        raise InputError("combine.parts", parts, "must hold at least one MassProperties")
    for i, p in enumerate(parts):
        if not isinstance(p, MassProperties):
            raise InputError(f"combine.parts[{i}]", p, "must be a MassProperties")
    masses = np.array([p.mass for p in parts])
    total = float(np.sum(masses))
    com = np.sum(masses[:, None] * np.array([p.com for p in parts]), axis=0) / total
    inertia = np.zeros((3, 3))
    for p in parts:
        inertia += p.inertia + _parallel_axis(p.mass, p.com - com)
    return MassProperties(mass=total, com=com, inertia=inertia)


def _make(mass: float, com, inertia, field: str) -> MassProperties:
    """Construct after validating under the caller's field name (clearer messages than the class's)."""
    m, sym = validate_mass_properties(mass, inertia, field=field)
    return MassProperties(mass=m, com=com, inertia=sym)


# --------------------------------------------------------------------------------------------------
# primitives (centred at the origin, principal axes = coordinate axes)
# --------------------------------------------------------------------------------------------------


def sphere(radius: float, *, mass: float | None = None, density: float | None = None) -> MassProperties:
    """Solid uniform sphere centred at the origin.

    Args:
        radius: r [m], > 0.
        mass: total mass [kg]; give exactly one of ``mass`` and ``density``.
        density: volumetric density [kg/m^3].

    Returns:
        MassProperties with ``I = 2/5 m r² E``.
    """
    r = _positive(radius, "sphere.radius", "m")
    m = _resolve_mass(4.0 / 3.0 * math.pi * r**3, mass, density, "sphere", volume_name="m^3")
    return _make(m, np.zeros(3), 0.4 * m * r * r * np.eye(3), "sphere")


def spherical_shell(
    outer_radius: float, inner_radius: float, *, mass: float | None = None, density: float | None = None
) -> MassProperties:
    """Thick uniform spherical shell (hollow sphere) centred at the origin.

    Args:
        outer_radius: R [m], > 0.
        inner_radius: r [m], 0 <= r < R (0 gives the solid sphere).
        mass: total mass [kg]; give exactly one of ``mass`` and ``density``.
        density: volumetric density [kg/m^3].

    Returns:
        MassProperties with ``I = 2/5 m (R⁵ - r⁵)/(R³ - r³) E``, evaluated in the cancellation-free
        form ``2/5 m (R⁴ + R³r + R²r² + Rr³ + r⁴)/(R² + Rr + r²)``; as r → R it tends to the thin
        shell's ``2/3 m R²``.
    """
    big = _positive(outer_radius, "spherical_shell.outer_radius", "m")
    try:
        small = float(inner_radius)
    except (TypeError, ValueError):
        raise InputError("spherical_shell.inner_radius", inner_radius, "must be a number with 0 <= r < outer_radius [m]") from None
    if not math.isfinite(small) or small < 0.0 or small >= big:
        raise InputError("spherical_shell.inner_radius", inner_radius, f"must satisfy 0 <= r < outer_radius = {big!r} [m]")
    volume = 4.0 / 3.0 * math.pi * (big - small) * (big * big + big * small + small * small)
    m = _resolve_mass(volume, mass, density, "spherical_shell", volume_name="m^3")
    ratio = (big**4 + big**3 * small + big**2 * small**2 + big * small**3 + small**4) / (
        big * big + big * small + small * small
    )
    return _make(m, np.zeros(3), 0.4 * m * ratio * np.eye(3), "spherical_shell")


def ellipsoid(
    a: float, b: float, c: float, *, mass: float | None = None, density: float | None = None
) -> MassProperties:
    """Solid uniform ellipsoid ``x²/a² + y²/b² + z²/c² <= 1``.

    Args:
        a, b, c: semi-axes along x, y, z [m], > 0.
        mass: total mass [kg]; give exactly one of ``mass`` and ``density``.
        density: volumetric density [kg/m^3].

    Returns:
        MassProperties with ``I = m/5 diag(b² + c², a² + c², a² + b²)``.
    """
    a = _positive(a, "ellipsoid.a", "m")
    b = _positive(b, "ellipsoid.b", "m")
    c = _positive(c, "ellipsoid.c", "m")
    m = _resolve_mass(4.0 / 3.0 * math.pi * a * b * c, mass, density, "ellipsoid", volume_name="m^3")
    inertia = m / 5.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
    return _make(m, np.zeros(3), inertia, "ellipsoid")


def box(lx: float, ly: float, lz: float, *, mass: float | None = None, density: float | None = None) -> MassProperties:
    """Solid uniform rectangular box (seed 002 Eq. 1.37–1.39).

    Args:
        lx, ly, lz: full edge lengths along x, y, z [m], > 0.
        mass: total mass [kg]; give exactly one of ``mass`` and ``density``.
        density: volumetric density [kg/m^3].

    Returns:
        MassProperties with ``I = m/12 diag(ly² + lz², lx² + lz², lx² + ly²)``.
    """
    lx = _positive(lx, "box.lx", "m")
    ly = _positive(ly, "box.ly", "m")
    lz = _positive(lz, "box.lz", "m")
    m = _resolve_mass(lx * ly * lz, mass, density, "box", volume_name="m^3")
    inertia = m / 12.0 * np.diag([ly * ly + lz * lz, lx * lx + lz * lz, lx * lx + ly * ly])
    return _make(m, np.zeros(3), inertia, "box")


def _axisymmetric(axial: float, transverse: float, axis: int) -> np.ndarray:
    d = np.full(3, transverse)
    d[axis] = axial
    return np.diag(d)


def cylinder(
    radius: float, length: float, *, axis: int = 2, mass: float | None = None, density: float | None = None
) -> MassProperties:
    """Solid uniform circular cylinder centred at the origin.

    Args:
        radius: r [m], > 0.
        length: L [m], > 0, along ``axis``.
        axis: symmetry axis, 0 (x), 1 (y) or 2 (z).
        mass: total mass [kg]; give exactly one of ``mass`` and ``density``.
        density: volumetric density [kg/m^3].

    Returns:
        MassProperties with axial moment ``m r²/2`` and transverse moments ``m (3r² + L²)/12``.
    """
    r = _positive(radius, "cylinder.radius", "m")
    length = _positive(length, "cylinder.length", "m")
    axis = _axis(axis, "cylinder.axis")
    m = _resolve_mass(math.pi * r * r * length, mass, density, "cylinder", volume_name="m^3")
    inertia = _axisymmetric(0.5 * m * r * r, m * (3.0 * r * r + length * length) / 12.0, axis)
    return _make(m, np.zeros(3), inertia, "cylinder")


def capsule(
    radius: float, length: float, *, axis: int = 2, mass: float | None = None, density: float | None = None
) -> MassProperties:
    """Solid uniform capsule: a cylinder of ``length`` capped by two hemispheres of ``radius``.

    The total extent along ``axis`` is ``length + 2 radius``. The mass splits by volume between the
    cylinder (``π r² L``) and the two hemispheres (``2/3 π r³`` each). Each hemisphere's inertia about
    its own CoM uses the exact CoM offset ``3r/8`` from its flat face:
    ``I_transverse,cm = 2/5 m_h r² - m_h (3r/8)²``, then moves to the capsule centre at distance
    ``L/2 + 3r/8``; its axial moment is ``2/5 m_h r²``.

    Args:
        radius: r [m], > 0.
        length: L [m], length of the cylindrical part, > 0.
        axis: symmetry axis, 0 (x), 1 (y) or 2 (z).
        mass: total mass [kg]; give exactly one of ``mass`` and ``density``.
        density: volumetric density [kg/m^3].

    Returns:
        MassProperties of the capsule, centred at the origin.
    """
    r = _positive(radius, "capsule.radius", "m")
    length = _positive(length, "capsule.length", "m")
    axis = _axis(axis, "capsule.axis")
    v_cyl = math.pi * r * r * length
    v_hemi = 2.0 / 3.0 * math.pi * r**3
    m = _resolve_mass(v_cyl + 2.0 * v_hemi, mass, density, "capsule", volume_name="m^3")
    m_cyl = m * v_cyl / (v_cyl + 2.0 * v_hemi)
    m_hemi = m * v_hemi / (v_cyl + 2.0 * v_hemi)
    z_hemi = 3.0 * r / 8.0
    axial = 0.5 * m_cyl * r * r + 2.0 * (0.4 * m_hemi * r * r)
    hemi_transverse_cm = 0.4 * m_hemi * r * r - m_hemi * z_hemi**2
    transverse = m_cyl * (3.0 * r * r + length * length) / 12.0 + 2.0 * (
        hemi_transverse_cm + m_hemi * (0.5 * length + z_hemi) ** 2
    )
    return _make(m, np.zeros(3), _axisymmetric(axial, transverse, axis), "capsule")


def point_masses(points, masses) -> MassProperties:
    """Rigid set of point masses (seed 002 Eq. 1.14–1.15 taken literally).

    Args:
        points: positions [m], shape (n, 3).
        masses: masses [kg], shape (n,), each > 0.

    Returns:
        MassProperties of the set. At least three non-collinear points are needed for a positive
        definite inertia.

    Raises:
        InputError: on bad shapes, non-finite values, non-positive masses or a degenerate
            (collinear) set.
    """
    try:
        p = np.array(points, dtype=np.float64)
        w = np.array(masses, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError("point_masses", (points, masses), "points must be (n, 3) and masses (n,) numbers") from None
    if p.ndim != 2 or p.shape[1] != 3 or p.shape[0] == 0 or not np.all(np.isfinite(p)):
        raise InputError("point_masses.points", points, "must be a finite (n, 3) array with n >= 1 [m]")
    if w.shape != (p.shape[0],):
        raise InputError("point_masses.masses", masses, f"must have shape ({p.shape[0]},) to match points")
    if not np.all(np.isfinite(w)) or np.any(w <= 0.0):
        raise InputError("point_masses.masses", masses, "must all be finite and > 0 [kg]")
    total = float(np.sum(w))
    com = (w @ p) / total
    d = p - com
    cov = (w[:, None] * d).T @ d
    return _make(total, com, inertia_from_covariance(cov), "point_masses")


# --------------------------------------------------------------------------------------------------
# meshes
# --------------------------------------------------------------------------------------------------


def solid_mesh(vertices, faces, *, density: float | None = None, mass: float | None = None) -> MassProperties:
    """Uniform solid bounded by a closed, outward-wound triangle mesh: exact volume integrals by the
    divergence theorem (:func:`components.mesh.solid_moments`, D. Eberly's formulation of Mirtich's).

    Args:
        vertices: vertex positions [m], shape (n, 3).
        faces: triangles, shape (m, 3), integer, counter-clockwise seen from outside.
        density: volumetric density [kg/m^3]; give exactly one of ``density`` and ``mass``.
        mass: total mass [kg].

    Returns:
        MassProperties in the mesh's frame.

    Raises:
        InputError: from :func:`check_closed_mesh`, or for a bad density/mass.
    """
    v, f = check_closed_mesh(vertices, faces, field="solid_mesh")
    volume, com, second = solid_moments(v, f)
    m = _resolve_mass(volume, mass, density, "solid_mesh", volume_name="m^3")
    rho = m / volume
    cov_cm = rho * second
    return _make(m, com, inertia_from_covariance(cov_cm), "solid_mesh")


def shell_mesh(
    vertices,
    faces,
    *,
    density: float | None = None,
    thickness: float | None = None,
    mass: float | None = None,
) -> MassProperties:
    """Thin uniform shell on a closed triangle mesh (the MDC input of seed 002 §1.3.1).

    Each triangle is a uniform lamina of mass ``density * thickness * area``; its second moment is
    integrated exactly over the triangle: ``∫ r rᵀ dA = A/12 (Σ v_i v_iᵀ + s sᵀ)`` with
    ``s = v_0 + v_1 + v_2``.

    Thin-shell approximation: the mesh is taken as the shell's mid-surface and all mass is placed
    on it. Against the exact solid wall of thickness t this errs by O((t/R)²) relatively, R the
    smallest radius of curvature: for a sphere of mid-surface radius R the exact wall has mass
    ``4πR²tρ (1 + t²/(12R²))`` and moment ``8π/3 ρR⁴t (1 + t²/(2R²) + O(t⁴/R⁴))``, so the thin shell
    is low by t²/(12R²) and t²/(2R²). At edges and corners the offset surfaces overlap or gap, an
    O(t/ℓ) error for faces of size ℓ. Use it for t ≪ R and t ≪ feature size.

    Args:
        vertices: vertex positions of the mid-surface [m], shape (n, 3).
        faces: triangles, shape (m, 3), integer, closed and outward wound.
        density: volumetric density of the wall [kg/m^3]; needs ``thickness``. Give exactly one of
            ``density`` and ``mass``.
        thickness: wall thickness [m], > 0; used with ``density``.
        mass: total mass [kg] instead of density and thickness.

    Returns:
        MassProperties in the mesh's frame.

    Raises:
        InputError: from :func:`check_closed_mesh`, or for bad density/thickness/mass.
    """
    v, f = check_closed_mesh(vertices, faces, field="shell_mesh")
    if density is not None and thickness is None:
        raise InputError("shell_mesh.thickness", thickness, "must be given (> 0 [m]) with density")
    ref = v.mean(axis=0)
    p0, p1, p2 = v[f[:, 0]] - ref, v[f[:, 1]] - ref, v[f[:, 2]] - ref
    area = 0.5 * np.linalg.norm(np.cross(p1 - p0, p2 - p0), axis=1)
    total_area = float(np.sum(area))
    if density is not None:
        t = _positive(thickness, "shell_mesh.thickness", "m")
        rho = _positive(density, "shell_mesh.density", "kg/m^3")
        m = _resolve_mass(total_area, None, rho * t, "shell_mesh", volume_name="m^2")
    else:
        if thickness is not None:
            _positive(thickness, "shell_mesh.thickness", "m")
        m = _resolve_mass(total_area, mass, None, "shell_mesh", volume_name="m^2")
    sigma = m / total_area  # areal density [kg/m^2]
    s = p0 + p1 + p2
    first = (area @ s) / 3.0  # ∫ r dA
    cov = (
        np.einsum("i,ij,ik->jk", area, p0, p0)
        + np.einsum("i,ij,ik->jk", area, p1, p1)
        + np.einsum("i,ij,ik->jk", area, p2, p2)
        + np.einsum("i,ij,ik->jk", area, s, s)
    ) / 12.0
    c_local = first / total_area
    cov_cm = sigma * (cov - total_area * np.outer(c_local, c_local))
    return _make(m, c_local + ref, inertia_from_covariance(cov_cm), "shell_mesh")


# --------------------------------------------------------------------------------------------------
# the seed's example: the 3U CubeSat asymmetric top (seed 002 §2.4.2.2)
# --------------------------------------------------------------------------------------------------


def cubesat_3u(
    *,
    body_size: Sequence[float] = (0.10, 0.10, 0.34),
    body_mass: float = 3.0,
    panel_size: Sequence[float] = (0.0016, 0.082, 0.329),
    panel_mass: float = 0.132,
    panel_offset: float | None = None,
) -> MassProperties:
    """The 3U CubeSat with two deployed solar panels of seed 002 §2.4.2.2 (the asymmetric top).

    Frame: origin at the body's CoM, Z along the long axis ("the longest dimension of the satellite
    is aligned to the Z axis", seed line 937), panels in the YZ plane centred on the ±Y axis
    (line 927). Each part is a uniform box (Eq. 1.37–1.39, lines 917–925) and they are composed with
    the parallel-axis theorem (lines 927–933). Default numbers and their sources (line numbers of
    seed 002 (docs/references.md); §2.4.2 starts on thesis p. 56, Fig. 2-16 on p. 58):

    * body 0.10 m x 0.10 m x 0.34 m, 3 kg: line 913 ("10cm x 10cm x 34cm … mass of 3kg"), and
      Script 2-2 line 1616 (``a_sat = 0.1; b_sat = 0.1; c_sat = 0.34; M_sat = 3``).
    * each panel 1.6 mm (X) x 82 mm (Y) x 329 mm (Z), 0.132 kg: line 915 ("1.6mm x 82mm x 329mm
      and 132g"). Script 2-2 line 1628 writes ``b_pan = 0.0825``; the text's 82 mm is used because
      it is the stated catalogue size and it is what makes Script 2-2's offset (next item) the hinge
      line. Both widths reproduce the printed I_T of line 935 and Script 3-2's initial rate
      (line 1855); only the 82 mm panel also rounds to Script 3-2's Izz = 0.00733 (line 1856).
    * panel CoM offset ±0.091 m along Y: Script 2-2 line 1636 (``rx = 0; ry = 0.091; rz = 0``),
      = half the body width + half the panel width (0.05 + 0.041), the default here.

    The thesis's result is I_T = diag(0.0361, 0.0338, 0.0073) kg m^2 (line 935; Script 3-2 line 1856
    uses diag(0.0361, 0.0337, 0.00733)); the defaults give diag(0.036115, 0.033781, 0.0073342).
    (The text's formula on line 931, ``I_T = I_c + I_p + 2 m_p d``, is a typo for
    ``I_c + 2 (I_p + m_p d²)``, which Script 2-2 line 1639 computes.) The thesis's panels overlap
    the body by 0.25 mm in Y with Script 2-2's 82.5 mm width; composition of masses ignores that.
    The initial rate printed on line 949, ω0 = [0, 24.04, 52.81] rad/s, belongs to H ≈ 0.90 J s
    (with E = 20 J), not to the H = 1 J s of line 945; Script 3-2's [0, 28.123, 42.55] (line 1855)
    is the H = 1 J s one and is what the tests compare with.

    Args:
        body_size: body edge lengths along X, Y, Z [m].
        body_mass: body mass [kg].
        panel_size: each panel's edge lengths along X (thickness), Y (width), Z (length) [m].
        panel_mass: mass of each panel [kg].
        panel_offset: distance from the body CoM to each panel CoM along ±Y [m]; None places the
            panel's inner edge on the body's side face, ``body_size[1]/2 + panel_size[1]/2``.

    Returns:
        MassProperties of the whole satellite in the body frame described above.
    """
    for name, size in (("body_size", body_size), ("panel_size", panel_size)):
        if np.shape(size) != (3,):
            raise InputError(f"cubesat_3u.{name}", size, "must be 3 edge lengths (X, Y, Z) [m]")
    bx, by, bz = (_positive(x, f"cubesat_3u.body_size[{i}]", "m") for i, x in enumerate(body_size))
    px, py, pz = (_positive(x, f"cubesat_3u.panel_size[{i}]", "m") for i, x in enumerate(panel_size))
    d = 0.5 * by + 0.5 * py if panel_offset is None else _positive(panel_offset, "cubesat_3u.panel_offset", "m")
    body = box(bx, by, bz, mass=_positive(body_mass, "cubesat_3u.body_mass", "kg"))
    panel = box(px, py, pz, mass=_positive(panel_mass, "cubesat_3u.panel_mass", "kg"))
    return combine(
        [
            body,
            panel.transformed(translation=(0.0, d, 0.0)),
            panel.transformed(translation=(0.0, -d, 0.0)),
        ]
    )
