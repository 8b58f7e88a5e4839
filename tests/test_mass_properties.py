"""Tests of scenes.assets.mass_properties (the seed 002 §1.3.1 Mass Distribution Calculator).

References are independent of the code under test: trimesh's ``mass_properties`` for meshes, closed
forms written out here for the primitives, scipy quadrature for the capsule, containment brackets
for tessellated meshes, and the numbers printed in seed 002 §2.4.2.2 for the CubeSat.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import trimesh
from scipy import integrate
from scipy.spatial.transform import Rotation

from components.mesh import check_closed_mesh
from components.rigid import validate_mass_properties
from ecs.errors import InputError
from scenes.assets import mass_properties as mp

# Two float64 evaluations of the same exact integrals (trimesh vs ours, different operation order,
# ours shifted to the vertex mean first) differ by rounding only: ~1e-15 times a cancellation factor
# (|CoM|² / radius of gyration², below 100 for these meshes). 1e-10 leaves 4 orders of headroom and
# still catches any wrong coefficient or sign.
MESH_RTOL = 1e-10
# Closed forms evaluated in float64 in two different ways: agreement to a few ulps.
CLOSED_RTOL = 1e-12


def _rel(a, b) -> float:
    """Relative difference of two arrays in the Frobenius norm (off-diagonals judged against the norm)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


# --------------------------------------------------------------------------------------------------
# meshes against trimesh
# --------------------------------------------------------------------------------------------------


def _random_hull(seed: int) -> trimesh.Trimesh:
    rng = np.random.default_rng(seed)
    pts = rng.normal(size=(60, 3)) * np.array([1.0, 0.4, 2.5]) + rng.uniform(-3.0, 3.0, size=3)
    return trimesh.Trimesh(pts).convex_hull


def _placed(mesh: trimesh.Trimesh, seed: int) -> trimesh.Trimesh:
    """The mesh rotated and moved off the origin, so products of inertia are nonzero."""
    tf = np.eye(4)
    tf[:3, :3] = Rotation.random(random_state=seed).as_matrix()
    tf[:3, 3] = [0.7, -1.3, 2.1]
    return mesh.copy().apply_transform(tf)


MESHES = {
    "hull0": lambda: _random_hull(0),
    "hull1": lambda: _random_hull(1),
    "hull2": lambda: _random_hull(2),
    "torus": lambda: _placed(trimesh.creation.torus(major_radius=1.0, minor_radius=0.3), 3),
    "annulus": lambda: _placed(trimesh.creation.annulus(r_min=0.5, r_max=1.2, height=0.4), 4),
    "icosphere": lambda: _placed(trimesh.creation.icosphere(subdivisions=3, radius=1.7), 5),
    "box": lambda: _placed(trimesh.creation.box(extents=(0.3, 1.1, 2.0)), 6),
    "cylinder": lambda: _placed(trimesh.creation.cylinder(radius=0.4, height=1.5, sections=24), 7),
}


@pytest.mark.parametrize("name", sorted(MESHES))
def test_solid_mesh_matches_trimesh(name):
    mesh = MESHES[name]()
    assert mesh.is_watertight and mesh.is_winding_consistent and mesh.volume > 0
    density = 2700.0
    mesh.density = density
    ref = mesh.mass_properties
    got = mp.solid_mesh(mesh.vertices, mesh.faces, density=density)
    assert got.mass == pytest.approx(float(ref.mass), rel=MESH_RTOL)
    size = float(np.linalg.norm(mesh.extents))
    assert np.linalg.norm(got.com - ref.center_mass) <= MESH_RTOL * size
    assert _rel(got.inertia, ref.inertia) <= MESH_RTOL
    # given the mass instead of the density: same body
    by_mass = mp.solid_mesh(mesh.vertices, mesh.faces, mass=float(ref.mass))
    assert _rel(by_mass.inertia, ref.inertia) <= MESH_RTOL


def test_solid_mesh_tetrahedron_tonon_closed_form():
    """Tonon (2004): a tetrahedron's second moment is ∫ r rᵀ dV = V/20 (Σ v_i v_iᵀ + s sᵀ), s = Σ v_i."""
    rng = np.random.default_rng(11)
    v = rng.normal(size=(4, 3)) + np.array([1.0, 2.0, -0.5])
    faces = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    vol6 = np.linalg.det(np.stack([v[1] - v[0], v[2] - v[0], v[3] - v[0]]))
    if vol6 < 0:  # make the winding outward for this random tetrahedron
        faces = faces[:, ::-1]
    volume = abs(vol6) / 6.0
    s = v.sum(axis=0)
    cov_origin = volume / 20.0 * (v.T @ v + np.outer(s, s))
    com = s / 4.0
    cov = cov_origin - volume * np.outer(com, com)
    inertia = np.trace(cov) * np.eye(3) - cov
    got = mp.solid_mesh(v, faces, density=1.0)
    assert got.mass == pytest.approx(volume, rel=CLOSED_RTOL)
    assert np.allclose(got.com, com, rtol=0, atol=CLOSED_RTOL * np.linalg.norm(com))
    assert _rel(got.inertia, inertia) <= 1e-11


def test_solid_mesh_box_is_exact_box():
    """A 12-triangle box mesh is the box exactly: the polyhedral integrals are exact, not approximate."""
    ext = (0.3, 1.1, 2.0)
    mesh = trimesh.creation.box(extents=ext)
    got = mp.solid_mesh(mesh.vertices, mesh.faces, density=500.0)
    m = 500.0 * 0.3 * 1.1 * 2.0
    a, b, c = ext
    ref = m / 12.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
    assert got.mass == pytest.approx(m, rel=CLOSED_RTOL)
    assert _rel(got.inertia, ref) <= CLOSED_RTOL


def test_solid_mesh_transforms_like_transformed():
    """Moving the vertices equals moving the MassProperties (x_parent = R x + t, I -> R I Rᵀ)."""
    mesh = _random_hull(21)
    rot = Rotation.random(random_state=22).as_matrix()
    t = np.array([3.0, -2.0, 0.5])
    local = mp.solid_mesh(mesh.vertices, mesh.faces, density=1.0)
    moved = mp.solid_mesh(mesh.vertices @ rot.T + t, mesh.faces, density=1.0)
    placed = local.transformed(rot, t)
    assert placed.mass == pytest.approx(moved.mass, rel=MESH_RTOL)
    assert np.linalg.norm(placed.com - moved.com) <= MESH_RTOL * 10.0
    assert _rel(placed.inertia, moved.inertia) <= MESH_RTOL


# --------------------------------------------------------------------------------------------------
# primitives against closed forms written here
# --------------------------------------------------------------------------------------------------


def test_sphere_closed_form():
    r, rho = 0.35, 1200.0
    m = rho * 4.0 / 3.0 * math.pi * r**3
    got = mp.sphere(r, density=rho)
    assert got.mass == pytest.approx(m, rel=CLOSED_RTOL)
    assert np.allclose(got.inertia, 2.0 / 5.0 * m * r * r * np.eye(3), rtol=CLOSED_RTOL, atol=0)
    assert np.array_equal(got.com, np.zeros(3))
    assert np.allclose(mp.sphere(r, mass=2.0).inertia, 0.4 * 2.0 * r * r * np.eye(3), rtol=CLOSED_RTOL, atol=0)


def test_spherical_shell_closed_form_and_limits():
    big, small, m = 1.0, 0.6, 5.0
    expected = 2.0 / 5.0 * m * (big**5 - small**5) / (big**3 - small**3)
    got = mp.spherical_shell(big, small, mass=m)
    assert np.allclose(np.diag(got.inertia), expected, rtol=CLOSED_RTOL, atol=0)
    rho = 10.0
    by_density = mp.spherical_shell(big, small, density=rho)
    assert by_density.mass == pytest.approx(rho * 4.0 / 3.0 * math.pi * (big**3 - small**3), rel=CLOSED_RTOL)
    # inner radius 0 is the solid sphere; a very thin wall tends to 2/3 m R²
    assert np.allclose(mp.spherical_shell(0.5, 0.0, mass=3.0).inertia, mp.sphere(0.5, mass=3.0).inertia, rtol=CLOSED_RTOL)
    thin = mp.spherical_shell(1.0, 1.0 - 1e-9, mass=1.0)
    assert thin.inertia[0, 0] == pytest.approx(2.0 / 3.0, rel=1e-8)  # (R⁵-r⁵)/(R³-r³) = 5/3 R² (1 + O(ε))


def test_ellipsoid_closed_form():
    a, b, c, rho = 0.5, 1.2, 2.0, 3.0
    m = rho * 4.0 / 3.0 * math.pi * a * b * c
    got = mp.ellipsoid(a, b, c, density=rho)
    assert got.mass == pytest.approx(m, rel=CLOSED_RTOL)
    ref = np.diag([m * (b * b + c * c) / 5.0, m * (a * a + c * c) / 5.0, m * (a * a + b * b) / 5.0])
    assert _rel(got.inertia, ref) <= CLOSED_RTOL


def test_box_closed_form():
    lx, ly, lz, m = 0.2, 0.5, 1.3, 7.0
    got = mp.box(lx, ly, lz, mass=m)
    ref = np.diag([m * (ly**2 + lz**2) / 12.0, m * (lx**2 + lz**2) / 12.0, m * (lx**2 + ly**2) / 12.0])
    assert _rel(got.inertia, ref) <= CLOSED_RTOL
    assert mp.box(lx, ly, lz, density=10.0).mass == pytest.approx(10.0 * lx * ly * lz, rel=CLOSED_RTOL)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_cylinder_closed_form(axis):
    r, length, rho = 0.3, 1.7, 800.0
    m = rho * math.pi * r * r * length
    got = mp.cylinder(r, length, axis=axis, density=rho)
    expected = np.full(3, m * (3 * r * r + length * length) / 12.0)
    expected[axis] = m * r * r / 2.0
    assert got.mass == pytest.approx(m, rel=CLOSED_RTOL)
    assert _rel(got.inertia, np.diag(expected)) <= CLOSED_RTOL


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_capsule_against_quadrature(axis):
    """Integrate the solid of revolution slice by slice with scipy.quad (density 1).

    Slice at height z has radius² ρ²(z) = r² on the cylinder and r² - (|z| - L/2)² on the caps. A disc
    slice contributes π ρ² dz to the mass, π ρ⁴/2 dz to the axial moment and (π ρ⁴/4 + π ρ² z²) dz
    to the transverse moment. The integrands are polynomials on each piece, so quad is exact to
    rounding; 1e-10 is far above its error and far below any formula mistake (the 3r/8 offset).
    """
    r, length = 0.25, 0.8

    def rho2(z):
        dz = abs(z) - length / 2.0
        return r * r if dz <= 0.0 else r * r - dz * dz

    top = length / 2.0 + r
    kw = dict(points=[length / 2.0], epsabs=0.0, epsrel=1e-13, limit=200)
    mass = 2.0 * integrate.quad(lambda z: math.pi * rho2(z), 0.0, top, **kw)[0]
    axial = 2.0 * integrate.quad(lambda z: math.pi * rho2(z) ** 2 / 2.0, 0.0, top, **kw)[0]
    trans = 2.0 * integrate.quad(lambda z: math.pi * rho2(z) ** 2 / 4.0 + math.pi * rho2(z) * z * z, 0.0, top, **kw)[0]
    got = mp.capsule(r, length, axis=axis, density=1.0)
    expected = np.full(3, trans)
    expected[axis] = axial
    assert got.mass == pytest.approx(mass, rel=1e-10)
    assert _rel(got.inertia, np.diag(expected)) <= 1e-10
    # given the mass instead: same shape, scaled
    assert _rel(mp.capsule(r, length, axis=axis, mass=2.0 * mass).inertia, 2.0 * np.diag(expected)) <= 1e-10


def _inradius(mesh: trimesh.Trimesh) -> float:
    """Distance from the origin to the nearest face plane (mesh star-shaped about the origin)."""
    return float(np.min(np.einsum("ij,ij->i", mesh.face_normals, mesh.triangles[:, 0, :])))


def _assert_bracketed(got: mp.MassProperties, inner: mp.MassProperties, outer: mp.MassProperties):
    """Containment bracket: inner ⊂ mesh ⊂ outer, all centred at the origin by symmetry.

    Mass and every diagonal moment ∫ (distance to a fixed axis)² ρ dV grow with the set, so the mesh's
    values lie between those of the inscribed and the circumscribed primitive. This is the
    tessellation-error tolerance, derived rather than tuned.
    """
    assert np.linalg.norm(got.com) <= 1e-12
    assert inner.mass <= got.mass <= outer.mass
    assert np.all(np.diag(inner.inertia) <= np.diag(got.inertia))
    assert np.all(np.diag(got.inertia) <= np.diag(outer.inertia))
    assert outer.mass / inner.mass - 1.0 < 0.01  # the bracket is tight enough to mean something


def test_sphere_and_ellipsoid_bracket_tessellations():
    mesh = trimesh.creation.icosphere(subdivisions=4, radius=1.0)
    r_in = _inradius(mesh)
    rho = 2.0
    _assert_bracketed(mp.solid_mesh(mesh.vertices, mesh.faces, density=rho), mp.sphere(r_in, density=rho), mp.sphere(1.0, density=rho))
    abc = np.array([0.5, 1.2, 2.0])  # a linear map keeps inscribed/circumscribed inclusions
    _assert_bracketed(
        mp.solid_mesh(mesh.vertices * abc, mesh.faces, density=rho),
        mp.ellipsoid(*(abc * r_in), density=rho),
        mp.ellipsoid(*abc, density=rho),
    )


def test_cylinder_brackets_prism():
    r, length, n = 0.4, 1.5, 256
    mesh = trimesh.creation.cylinder(radius=r, height=length, sections=n)
    got = mp.solid_mesh(mesh.vertices, mesh.faces, density=1.0)
    _assert_bracketed(got, mp.cylinder(r * math.cos(math.pi / n), length, density=1.0), mp.cylinder(r, length, density=1.0))


# --------------------------------------------------------------------------------------------------
# shells
# --------------------------------------------------------------------------------------------------


def test_shell_icosphere_tends_to_two_thirds_m_r2():
    """Every point of the inscribed faceted shell has r_in <= |x| <= R, so ∫|x|² dm ∈ [m r_in², m R²];
    the icosahedral symmetry makes the tensor isotropic, I = 2/3 ∫|x|² dm E. Hence
    I_ii / (2/3 m R²) ∈ [(r_in/R)², 1]: that is the tessellation tolerance (~2e-4 at 5 subdivisions)."""
    radius, m = 2.0, 3.0
    mesh = trimesh.creation.icosphere(subdivisions=5, radius=radius)
    got = mp.shell_mesh(mesh.vertices, mesh.faces, mass=m)
    lower = (_inradius(mesh) / radius) ** 2
    ratio = np.diag(got.inertia) / (2.0 / 3.0 * m * radius**2)
    assert 1.0 - lower < 1e-3
    assert np.all(ratio >= lower) and np.all(ratio <= 1.0)
    off = got.inertia - np.diag(np.diag(got.inertia))
    assert np.max(np.abs(off)) <= 1e-12 * got.inertia[0, 0]
    # density * thickness * area
    rho, t = 2700.0, 0.002
    by_density = mp.shell_mesh(mesh.vertices, mesh.faces, density=rho, thickness=t)
    assert by_density.mass == pytest.approx(rho * t * mesh.area, rel=CLOSED_RTOL)


def test_shell_box_equals_six_plates():
    """A box shell of areal density σ: six plates, each a lamina with the closed-form plate moments,
    shifted by the parallel-axis theorem to the faces at ±l/2. Triangles are exact laminae: 1e-12."""
    lx, ly, lz, rho, t = 0.3, 1.1, 2.0, 1500.0, 0.001
    sigma = rho * t
    mesh = trimesh.creation.box(extents=(lx, ly, lz))
    got = mp.shell_mesh(mesh.vertices, mesh.faces, density=rho, thickness=t)
    ixx = iyy = izz = 0.0
    # plates normal to z at z = ±lz/2 (extent lx x ly)
    mz = sigma * lx * ly
    ixx += 2 * (mz * ly**2 / 12 + mz * (lz / 2) ** 2)
    iyy += 2 * (mz * lx**2 / 12 + mz * (lz / 2) ** 2)
    izz += 2 * (mz * (lx**2 + ly**2) / 12)
    # plates normal to y at y = ±ly/2 (extent lx x lz)
    my = sigma * lx * lz
    ixx += 2 * (my * lz**2 / 12 + my * (ly / 2) ** 2)
    iyy += 2 * (my * (lx**2 + lz**2) / 12)
    izz += 2 * (my * lx**2 / 12 + my * (ly / 2) ** 2)
    # plates normal to x at x = ±lx/2 (extent ly x lz)
    mx = sigma * ly * lz
    ixx += 2 * (mx * (ly**2 + lz**2) / 12)
    iyy += 2 * (mx * lz**2 / 12 + mx * (lx / 2) ** 2)
    izz += 2 * (mx * ly**2 / 12 + mx * (lx / 2) ** 2)
    assert got.mass == pytest.approx(2 * (mx + my + mz), rel=CLOSED_RTOL)
    assert _rel(got.inertia, np.diag([ixx, iyy, izz])) <= CLOSED_RTOL


def test_shell_mesh_matches_trimesh_area_and_centroid():
    """A non-symmetric closed surface: mass = σ × trimesh's area, CoM = trimesh's area-weighted centroid."""
    mesh = _random_hull(31)
    got = mp.shell_mesh(mesh.vertices, mesh.faces, density=1000.0, thickness=0.01)
    assert got.mass == pytest.approx(10.0 * mesh.area, rel=CLOSED_RTOL)
    centroid = (mesh.area_faces @ mesh.triangles_center) / mesh.area
    assert np.linalg.norm(got.com - centroid) <= 1e-12 * np.linalg.norm(mesh.extents)


# --------------------------------------------------------------------------------------------------
# composition, principal axes, point masses, sign convention
# --------------------------------------------------------------------------------------------------


def test_two_spheres_reduced_mass_closed_form():
    """Spheres at the origin and at (L, 0, 0): CoM at m2 L / M and I_yy = I_zz = Σ 2/5 m r² + μ L²,
    μ = m1 m2 / M the reduced mass (a closed form that uses no parallel-axis shift)."""
    m1, r1, m2, r2, length = 2.0, 0.3, 5.0, 0.5, 1.7
    total = m1 + m2
    own = 0.4 * (m1 * r1 * r1 + m2 * r2 * r2)
    mu = m1 * m2 / total
    got = mp.sphere(r1, mass=m1) + mp.sphere(r2, mass=m2).transformed(translation=(length, 0.0, 0.0))
    assert got.mass == pytest.approx(total, rel=CLOSED_RTOL)
    assert np.allclose(got.com, [m2 * length / total, 0.0, 0.0], rtol=CLOSED_RTOL, atol=1e-15)
    assert _rel(got.inertia, np.diag([own, own + mu * length**2, own + mu * length**2])) <= CLOSED_RTOL
    # sum() over parts and the combine() function agree with +
    parts = [mp.sphere(r1, mass=m1), mp.sphere(r2, mass=m2).transformed(translation=(length, 0.0, 0.0))]
    assert _rel(sum(parts).inertia, got.inertia) <= CLOSED_RTOL
    assert _rel(mp.MassProperties.combine(parts).inertia, got.inertia) <= CLOSED_RTOL


def test_two_half_boxes_make_the_box():
    half = mp.box(1.0, 0.6, 0.4, density=3.0)
    whole = mp.combine([half.transformed(translation=(-0.5, 0, 0)), half.transformed(translation=(0.5, 0, 0))])
    ref = mp.box(2.0, 0.6, 0.4, density=3.0)
    assert whole.mass == pytest.approx(ref.mass, rel=CLOSED_RTOL)
    assert _rel(whole.inertia, ref.inertia) <= CLOSED_RTOL


def test_principal_axes_of_rotated_box():
    lx, ly, lz, m = 0.4, 1.0, 2.2, 3.0
    moments_ref = np.sort(m / 12.0 * np.array([ly**2 + lz**2, lx**2 + lz**2, lx**2 + ly**2]))
    rot = Rotation.random(random_state=41).as_matrix()
    placed = mp.box(lx, ly, lz, mass=m).transformed(rot, (1.0, 2.0, 3.0))
    assert np.max(np.abs(placed.inertia - np.diag(np.diag(placed.inertia)))) > 0.01  # really rotated
    moments, axes = placed.principal()
    assert np.allclose(moments, moments_ref, rtol=1e-12, atol=0)
    assert np.all(np.diff(moments) > 0)
    assert np.linalg.det(axes) == pytest.approx(1.0, abs=1e-12)
    # smallest moment is about the box's long (z) edge, largest about its short (x) edge
    order = [2, 1, 0]
    for k, box_axis in enumerate(order):
        assert abs(abs(axes[:, k] @ rot[:, box_axis]) - 1.0) <= 1e-10
    assert np.allclose(axes @ np.diag(moments) @ axes.T, placed.inertia, rtol=0, atol=1e-12)


def test_about_point_parallel_axis():
    r, m = 0.5, 2.0
    s = mp.sphere(r, mass=m).transformed(translation=(1.0, 0.0, 0.0))
    assert np.allclose(s.about(s.com), s.inertia, rtol=0, atol=1e-15)
    # about a point on the sphere's surface, the tangent axes carry 7/5 m r²
    about_surface = s.about((1.0 - r, 0.0, 0.0))
    assert np.allclose(np.diag(about_surface), [0.4 * m * r * r, 1.4 * m * r * r, 1.4 * m * r * r], rtol=CLOSED_RTOL)


def test_point_masses_follow_eq_1_14_1_15():
    """Seed 002 Eq. 1.13–1.15 literally: Ixx = Σ m (y² + z²), Ixy = Σ m x y, tensor entry -Ixy."""
    pts = np.array([[1.0, 2.0, 0.0], [-1.0, 0.5, 1.0], [0.3, -1.0, -2.0], [2.0, 1.0, 1.0]])
    ms = np.array([1.0, 2.0, 0.5, 1.5])
    got = mp.point_masses(pts, ms)
    com = sum(m * p for m, p in zip(ms, pts)) / ms.sum()
    x, y, z = (pts - com).T
    ixx, iyy, izz = (ms * (y * y + z * z)).sum(), (ms * (x * x + z * z)).sum(), (ms * (x * x + y * y)).sum()
    pxy, pyz, pxz = (ms * x * y).sum(), (ms * y * z).sum(), (ms * x * z).sum()
    ref = np.array([[ixx, -pxy, -pxz], [-pxy, iyy, -pyz], [-pxz, -pyz, izz]])
    assert np.allclose(got.com, com, rtol=CLOSED_RTOL)
    assert _rel(got.inertia, ref) <= CLOSED_RTOL
    assert abs(pxy) > 0.1  # the off-diagonal sign is really exercised


def test_mass_properties_is_read_only():
    s = mp.sphere(1.0, mass=1.0)
    with pytest.raises(ValueError):
        s.inertia[0, 0] = 5.0
    with pytest.raises(AttributeError):
        s.mass = 2.0


# --------------------------------------------------------------------------------------------------
# the seed's CubeSat (seed 002 §2.4.2.2)
# --------------------------------------------------------------------------------------------------


def _omega0(inertia_diag, h, e):
    """Seed Script 2-2 (lines 1645-1653): ω_x = 0 and ω_y², ω_z² solving Eq. 1.35 and Eq. 1.36."""
    _, i2, i3 = inertia_diag
    a = np.array([[i2 * i2, i3 * i3], [i2, i3]])
    return np.sqrt(np.linalg.solve(a, [h * h, 2.0 * e]))


@pytest.mark.parametrize(
    "kwargs",
    [
        {},  # the text's panel, line 915: 1.6 mm x 82 mm x 329 mm; offset 0.05 + 0.041 = 0.091
        {"panel_size": (0.0016, 0.0825, 0.329), "panel_offset": 0.091},  # Script 2-2 lines 1628, 1636
    ],
)
def test_cubesat_matches_thesis(kwargs):
    sat = mp.cubesat_3u(**kwargs)
    assert sat.mass == pytest.approx(3.0 + 2 * 0.132, rel=CLOSED_RTOL)
    assert np.allclose(sat.com, 0.0, atol=1e-15)  # line 929: CoM of the system is the body's
    inertia = sat.inertia
    assert np.max(np.abs(inertia - np.diag(np.diag(inertia)))) <= 1e-15
    diag = np.diag(inertia)
    # line 935: I_T = diag(0.0361, 0.0338, 0.0073), printed to 4 decimals -> half a unit, 5e-5
    assert np.all(np.abs(diag - [0.0361, 0.0338, 0.0073]) <= 5e-5)
    # line 943: 2 E_k I_1 = 1.44 and 2 E_k I_3 = 0.29 J² s² with E_k = 20 J (line 937), 2 decimals
    assert abs(2 * 20.0 * diag[0] - 1.44) <= 0.005 and abs(2 * 20.0 * diag[2] - 0.29) <= 0.005
    # Script 3-2 lines 1855-1856: iOmega_b = [0 28.123 42.55] from H = 1, E = 20 (Script 2-2 line
    # 1642) and inertia diag(0.0361, 0.0337, 0.00733): half a unit of the last printed digit each
    # (0.0337 is the truncation of 0.03378, so one unit for that one).
    omega = _omega0(diag, 1.0, 20.0)
    assert abs(omega[0] - 28.123) <= 5e-4 and abs(omega[1] - 42.55) <= 5e-3
    assert abs(diag[0] - 0.0361) <= 5e-5 and abs(diag[1] - 0.0337) <= 1e-4


def test_cubesat_default_matches_script_3_2_third_moment():
    # Script 3-2 line 1856: Izz = 0.00733 (3 significant digits) for the default, text-sized panels
    assert abs(mp.cubesat_3u().inertia[2, 2] - 0.00733) <= 5e-6


def test_cubesat_is_an_asymmetric_top():
    moments, _ = mp.cubesat_3u().principal()
    assert moments[0] < moments[1] < moments[2]  # §2.4.2.2: the panels break the square symmetry
    assert (moments[2] - moments[1]) / moments[2] > 0.05


# --------------------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------------------


def _tetra():
    v = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    f = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    return v, f


def test_tetra_fixture_is_valid():
    v, f = _tetra()
    got = mp.solid_mesh(v, f, density=6.0)
    assert got.mass == pytest.approx(1.0, rel=CLOSED_RTOL)


def _box_mesh():
    mesh = trimesh.creation.box(extents=(1.0, 2.0, 3.0))
    return np.array(mesh.vertices), np.array(mesh.faces)


def _bad_meshes():
    v, f = _tetra()
    bv, bf = _box_mesh()
    cases = {}
    cases["missing"] = (v, np.vstack([f[:3], [[1, 2, 7]]]), "missing")
    vd = v.copy()
    vd[3] = vd[2]
    cases["degenerate"] = (vd, f, "degenerate")
    cases["open"] = (bv, bf[1:], "3 boundary edges")
    # two tetrahedra sharing only the edge (0, 1): that edge belongs to four faces
    v2 = np.vstack([v, [[0.0, -1.0, 0.0], [0.0, 0.0, -1.0]]])
    f2 = np.vstack([f, [[0, 1, 4], [0, 5, 1], [0, 4, 5], [1, 5, 4]]])
    cases["non-manifold"] = (v2, f2, "non-manifold")
    flipped = bf.copy()
    flipped[0] = flipped[0, ::-1]
    cases["winding"] = (bv, flipped, "same direction")
    cases["inward"] = (bv, bf[:, ::-1], "reverse them")
    vn = bv.copy()
    vn[2, 1] = np.nan
    cases["nan"] = (vn, bf, "finite")
    return cases


BAD = _bad_meshes()


@pytest.mark.parametrize("case", sorted(BAD))
def test_check_closed_mesh_rejects(case):
    v, f, word = BAD[case]
    with pytest.raises(InputError) as err:
        check_closed_mesh(v, f, field="probe_mesh")
    msg = str(err.value)
    assert "probe_mesh" in msg and word in msg
    # both mesh functions check first, naming themselves
    with pytest.raises(InputError, match="solid_mesh"):
        mp.solid_mesh(v, f, density=1.0)
    with pytest.raises(InputError, match="shell_mesh"):
        mp.shell_mesh(v, f, density=1.0, thickness=0.01)


def test_edge_pairs_unique_as_numpy_rowwise_unique():
    """The mesh checks find edges on 1-D keys (``a·n + b``): the same rows, order and counts as
    numpy's row-wise ``unique`` (the independent reference), for small and large vertex counts and
    with repeated rows, so the checks' messages name the same edges."""
    from components.mesh import _unique_pairs

    rng = np.random.default_rng(3)
    for n in (4, 97, 10_260, 3_000_000):
        pairs = rng.integers(0, n, size=(5_000, 2)).astype(np.int64)
        pairs = np.concatenate([pairs, pairs[:700], [[0, 0], [n - 1, n - 1]]])
        rows, counts = np.unique(pairs, axis=0, return_counts=True)
        got_rows, got_counts = _unique_pairs(pairs, n)
        assert np.array_equal(got_rows, rows) and np.array_equal(got_counts, counts)
        assert got_rows.dtype == rows.dtype


def test_inward_message_is_the_documented_one():
    v, f, _ = BAD["inward"]
    with pytest.raises(InputError, match="faces wound inward; reverse them"):
        check_closed_mesh(v, f)


@pytest.mark.parametrize(
    "call, field, word",
    [
        (lambda: mp.sphere(1.0), "sphere", "exactly one"),
        (lambda: mp.sphere(1.0, mass=1.0, density=2.0), "sphere", "exactly one"),
        (lambda: mp.sphere(-1.0, mass=1.0), "sphere.radius", "> 0"),
        (lambda: mp.sphere(1.0, density=float("nan")), "sphere.density", "finite"),
        (lambda: mp.box(1.0, 0.0, 1.0, mass=1.0), "box.ly", "> 0"),
        (lambda: mp.cylinder(1.0, 1.0, axis=3, mass=1.0), "cylinder.axis", "one of"),
        (lambda: mp.capsule(1.0, -2.0, mass=1.0), "capsule.length", "> 0"),
        (lambda: mp.ellipsoid(1.0, 1.0, math.inf, mass=1.0), "ellipsoid.c", "finite"),
        (lambda: mp.spherical_shell(1.0, 1.0, mass=1.0), "spherical_shell.inner_radius", "0 <= r <"),
        (lambda: mp.point_masses([[0, 0, 0], [1, 0, 0], [2, 0, 0]], [1, 1, 1]), "point_masses", "positive definite"),
        (lambda: mp.point_masses([[0, 0, 0]], [-1.0]), "point_masses.masses", "> 0"),
        (lambda: mp.shell_mesh(*_tetra(), density=1.0), "shell_mesh.thickness", "must be given"),
        (lambda: mp.solid_mesh(*_tetra()), "solid_mesh", "exactly one"),
        (lambda: mp.combine([]), "combine.parts", "at least one"),
        (lambda: mp.sphere(1.0, mass=1.0).transformed(np.diag([1.0, 1.0, -1.0])), "transformed.rotation", "proper rotation"),
        (lambda: mp.MassProperties(mass=1.0, com=[0.0, 0.0], inertia=np.eye(3)), "mass_properties.com", "3 finite"),
        (lambda: mp.cubesat_3u(panel_mass=0.0), "panel_mass", "> 0"),
    ],
)
def test_bad_inputs_name_field_and_rule(call, field, word):
    with pytest.raises(InputError) as err:
        call()
    assert field in str(err.value) and word in str(err.value)


@pytest.mark.parametrize(
    "mass, inertia, where, word",
    [
        (0.0, np.eye(3), "mass", "> 0"),
        (-2.0, np.eye(3), "mass", "> 0"),
        (float("nan"), np.eye(3), "mass", "finite"),
        (1.0, np.array([[1.0, 0, 0], [0, np.nan, 0], [0, 0, 1]]), "inertia", "finite"),
        (1.0, np.array([[1.0, 0.1, 0], [0, 1, 0], [0, 0, 1]]), "inertia", "symmetric"),
        (1.0, np.diag([1.0, 1.0, -1.0]), "inertia", "positive definite"),
        (1.0, np.diag([1.0, 1.0, 0.0]), "inertia", "positive definite"),
        (1.0, np.diag([1.0, 1.0, 3.0]), "inertia", "triangle inequality"),
        (1.0, np.eye(2), "inertia", "(3, 3)"),
    ],
)
def test_validate_mass_properties_rejects(mass, inertia, where, word):
    with pytest.raises(InputError) as err:
        validate_mass_properties(mass, inertia, field="body_inertia of entity 3")
    msg = str(err.value)
    assert f"body_inertia of entity 3.{where}" in msg and word in msg
    # constructing a MassProperties validates the same way
    with pytest.raises(InputError):
        mp.MassProperties(mass=mass, com=np.zeros(3), inertia=inertia)


def test_validate_accepts_the_edge_cases_it_should():
    # a thin disc: I3 = I1 + I2 exactly (perpendicular-axis theorem), on the triangle-inequality edge
    m, sym = validate_mass_properties(2.0, np.diag([1.0, 1.0, 2.0]), field="disc")
    assert m == 2.0 and np.array_equal(sym, np.diag([1.0, 1.0, 2.0]))
    # asymmetry below 1e-9 relative is rounding, accepted and symmetrised
    _, sym = validate_mass_properties(1.0, np.array([[1.0, 1e-12, 0], [0, 1, 0], [0, 0, 1]]), field="x")
    assert sym[0, 1] == sym[1, 0] == 5e-13
