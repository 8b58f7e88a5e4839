"""Per-point kernels of the gravity sources of :mod:`components.gravity`, their CPU bulk drivers,
and host-side evaluation (seed 004 §2.4, eqs 2.40–2.45).

* Scalar device kernels, written once (plain Python on scalars, :func:`ecs.kernels.dual`) and
  compiled for the CPU and the GPU; every kernel is a function of the position in the field frame
  only, its other arguments are the source's ``kernel_params()``. The gravity systems
  (:mod:`systems.gravity.fields`, :mod:`systems.deployment.physics`) and the voxel grid builder
  (:mod:`scenes.assets.voxel`) call them.
* Bulk drivers over (n, 3) points (``eval_*_points``), parallel on the CPU.
* Host-side evaluation, numpy in, numpy out: :func:`evaluate` (U [m²/s²], g [m/s²] and, where
  defined, Γ = ∇∇U [1/s²] at points in the field frame [m], as a
  :class:`components.gravity.FieldValues`), :func:`acceleration`, :func:`potential`,
  :func:`solid_angle` and :func:`contains` (polyhedron), and :func:`linearize`, which builds a
  :class:`components.gravity.LinearizedGravity` about a point.

Conventions (those of Werner & Scheeres 1997 and of ESA's ``polyhedral-gravity``): the potential
is positive, ``U = GM/r`` far away; ``g = ∇U`` points towards the mass; ``Γ = ∇∇U`` is symmetric
with trace ``−4πGρ`` inside matter and 0 outside (Poisson/Laplace).

Sources
-------
* :class:`~components.gravity.PointMass` (:data:`point_mass_field`) — ``U = μ/r``.
* :class:`~components.gravity.Ellipsoid` (:data:`ellipsoid_field`) — the homogeneous triaxial
  ellipsoid in closed form through Carlson's symmetric elliptic integrals R_F and R_D
  (B. C. Carlson, "Numerical computation of real or complex elliptic integrals", Numer. Algorithms
  10 (1995) 13–26: duplication algorithm, our own implementation, checked against
  ``scipy.special.elliprf/elliprd`` in the tests). With
  ``A_i = a_i² + λ`` and ``Δ = √(A_1 A_2 A_3)``, λ = 0 inside and the largest root of
  ``Σ x_i²/A_i = 1`` outside (MacMillan, *The Theory of the Potential*, §§ 39–42)::

      U = (3/2) GM [R_F(A_1, A_2, A_3) − (1/3) Σ x_i² R_D(A_j, A_k, A_i)]
      g_i = −GM x_i R_D(A_j, A_k, A_i)
      Γ_ij = −GM [δ_ij R_D(A_j, A_k, A_i) − (outside only) 3 x_i x_j / (A_i A_j Δ Σ_k x_k²/A_k²)]

* :class:`~components.gravity.Polyhedron` (:data:`polyhedron_field`) — Werner & Scheeres, "Exterior
  gravitation of a polyhedron derived and compared with harmonic and mascon gravitation
  representations of asteroid 4769 Castalia",
  Celest. Mech. Dyn. Astron. 65 (1997) 313–344; seed 004 eqs 2.40–2.42. Edge dyads
  ``E_e = n_A n_{A,e}ᵀ + n_B n_{B,e}ᵀ`` (n the outward facet normals, n_{F,e} the outward normal of
  edge e in the plane of facet F) and facet dyads ``F_f = n_f n_fᵀ`` are precomputed: E_e is
  symmetric and traceless and is stored as its 6 unique entries; F_f is stored as n_f. With
  ``r_i = P_i − x`` (vertex minus field point — see the note on eq 2.41 below)::

      L_e = ln((r_i + r_j + e_ij)/(r_i + r_j − e_ij))
      ω_f = 2 atan2(r_i · (r_j × r_k), r_i r_j r_k + r_i (r_j·r_k) + r_j (r_k·r_i) + r_k (r_i·r_j))
      U = ½Gρ Σ_e r_eᵀ E_e r_e L_e − ½Gρ Σ_f r_fᵀ F_f r_f ω_f
      g = −Gρ Σ_e E_e r_e L_e + Gρ Σ_f F_f r_f ω_f
      Γ = Gρ Σ_e E_e L_e − Gρ Σ_f F_f ω_f,       ∇²U = −Gρ Σ_f ω_f

  Σ_f ω_f is the solid angle the surface subtends at x: 4π inside, 2π on a facet, 0 outside
  (:func:`contains`). Far from the body the sums cancel to GM/r: float64 rounding
  then costs ~1e-16 (r/R)³ relative (1e-7 at r = 1000 R, measured), so beyond a few hundred radii
  a point mass (or the voxel field's far field) is the better model.
* :class:`~components.gravity.VoxelField` (:data:`voxel_field`) — trilinear interpolation in a
  precomputed grid (seed 004 §2.4.4), the exact far field to degree 2 outside it
  (:data:`quadrupole_field`).
* :class:`~components.gravity.LinearizedGravity` (:data:`linearized_field`) — first-order expansion
  about a reference point (eq 2.43).
* :class:`~components.gravity.SphericalHarmonics` (:data:`harmonics_field`) — Cunningham's V/W
  recursion and the acceleration of Montenbruck & Gill, *Satellite Orbits* (Springer 2000),
  eqs 3.29–3.33, in the body-fixed field frame; U and g only (no Γ).

Seed notes and corrected misprints
----------------------------------
* Eq. 2.41 defines ``r_i = x − P_i`` while eq. 2.42 says r_e, r_f point "from x to any vertex".
  The signs of eq. 2.42 hold for the latter, ``r_i = P_i − x`` (Werner & Scheeres), which is what
  is used here; with ``x − P_i`` both ω_f and g change sign.
* Eq. 2.41 writes ω_f with a plain arctan of the ratio; the solid angle needs the two-argument
  ``atan2`` (the denominator is negative for facets seen under more than a hemisphere).
* Eq. 2.43 omits the ½ of the second-order term: ``U(x) ≈ U(x0) + Δ·g(x0) + ½ Δ·Γ(x0)·Δ``.
* Eq. 2.40 (edge dyads) needs *outward* facet normals and *outward* in-plane edge normals: mesh
  checks and reorientation are in :func:`components.mesh.check_polyhedron` (eqs 2.10–2.11).
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from components.gravity import FieldValues, GravitySource, LinearizedGravity, Polyhedron, as_points
from ecs.errors import InputError, positive_number
from ecs.kernels import cpu_jit, cpu_parallel_points, dual

__all__ = [
    "acceleration",
    "carlson_rd",
    "carlson_rf",
    "contains",
    "ellipsoid_field",
    "evaluate",
    "gravity_gradient_at",
    "harmonics_field",
    "harmonics_gradient",
    "linearize",
    "linearized_field",
    "point_mass_field",
    "polyhedron_field",
    "potential",
    "quadrupole_field",
    "solid_angle",
    "tensor_gradient_torque",
    "voxel_field",
]


# ================================================================================================
# scalar device kernels (one source, CPU and GPU)
# ================================================================================================


def _point_mass_field(x, y, z, cx, cy, cz, mu):
    """Point mass μ at c: ``(U, gx, gy, gz, Γxx, Γyy, Γzz, Γxy, Γxz, Γyz)`` at (x, y, z).

    At the centre itself (r = 0) every output is 0 (the field is singular there).
    """
    dx = x - cx
    dy = y - cy
    dz = z - cz
    r2 = dx * dx + dy * dy + dz * dz
    if r2 == 0.0:
        return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    r = math.sqrt(r2)
    u = mu / r
    k = u / r2  # μ/r³
    k5 = 3.0 * k / r2  # 3μ/r⁵
    return (u, -k * dx, -k * dy, -k * dz, k5 * dx * dx - k, k5 * dy * dy - k, k5 * dz * dz - k,
            k5 * dx * dy, k5 * dx * dz, k5 * dy * dz)


point_mass_field = dual(_point_mass_field)


def _carlson_rf(x, y, z):
    """Carlson's R_F(x, y, z) = ½∫₀^∞ dt / √((t+x)(t+y)(t+z)), x, y, z ≥ 0, at most one zero.

    Duplication algorithm (Carlson 1995, Algorithm 1); stops when the relative spread of the
    arguments is below 0.0025, where the 5th-order series is accurate to ~1e-16. (Loops here are
    ``while`` loops on purpose: numba 0.68 miscompiles a ``for … break`` loop of a kernel inlined
    into a ``prange`` body — results off by ~1e-10, found by the Poisson test.)
    """
    ave = (x + y + z) / 3.0
    dx = (ave - x) / ave
    dy = (ave - y) / ave
    dz = (ave - z) / ave
    it = 0
    while max(abs(dx), max(abs(dy), abs(dz))) >= 0.0025 and it < 100:
        sx = math.sqrt(x)
        sy = math.sqrt(y)
        sz = math.sqrt(z)
        lam = sx * (sy + sz) + sy * sz
        x = 0.25 * (x + lam)
        y = 0.25 * (y + lam)
        z = 0.25 * (z + lam)
        ave = (x + y + z) / 3.0
        dx = (ave - x) / ave
        dy = (ave - y) / ave
        dz = (ave - z) / ave
        it += 1
    e2 = dx * dy - dz * dz
    e3 = dx * dy * dz
    return (1.0 + (e2 / 24.0 - 0.1 - 3.0 * e3 / 44.0) * e2 + e3 / 14.0) / math.sqrt(ave)


def _carlson_rd(x, y, z):
    """Carlson's R_D(x, y, z) = (3/2)∫₀^∞ dt / ((t+z)^{3/2} √((t+x)(t+y))), z > 0.

    Duplication algorithm (Carlson 1995, Algorithm 4); stops when the relative spread of the
    arguments is below 0.0015 (series error ~1e-17).
    """
    s = 0.0
    fac = 1.0
    ave = 0.2 * (x + y + 3.0 * z)
    dx = (ave - x) / ave
    dy = (ave - y) / ave
    dz = (ave - z) / ave
    it = 0
    while max(abs(dx), max(abs(dy), abs(dz))) >= 0.0015 and it < 100:
        sx = math.sqrt(x)
        sy = math.sqrt(y)
        sz = math.sqrt(z)
        lam = sx * (sy + sz) + sy * sz
        s += fac / (sz * (z + lam))
        fac *= 0.25
        x = 0.25 * (x + lam)
        y = 0.25 * (y + lam)
        z = 0.25 * (z + lam)
        ave = 0.2 * (x + y + 3.0 * z)
        dx = (ave - x) / ave
        dy = (ave - y) / ave
        dz = (ave - z) / ave
        it += 1
    ea = dx * dy
    eb = dz * dz
    ec = ea - eb
    ed = ea - 6.0 * eb
    ee = ed + ec + ec
    c1 = 3.0 / 14.0
    c2 = 1.0 / 6.0
    c3 = 9.0 / 22.0
    c4 = 3.0 / 26.0
    c5 = 0.25 * c3
    c6 = 1.5 * c4
    series = 1.0 + ed * (-c1 + c5 * ed - c6 * dz * ee) + dz * (c2 * ee + dz * (-c3 * ec + dz * c4 * ea))
    return 3.0 * s + fac * series / (ave * math.sqrt(ave))


carlson_rf = dual(_carlson_rf)
carlson_rd = dual(_carlson_rd)
_rf = carlson_rf.cpu
_rd = carlson_rd.cpu


def _ellipsoid_field(x, y, z, a2, b2, c2, gm):
    """Homogeneous ellipsoid x²/a² + y²/b² + z²/c² ≤ 1 of GM = ``gm`` [m³/s²], centred, axis-aligned.

    Args:
        a2, b2, c2: squared semi-axes [m²].

    Returns:
        ``(U, gx, gy, gz, Γxx, Γyy, Γzz, Γxy, Γxz, Γyz)`` (module docstring formulas).
    """
    q = x * x / a2 + y * y / b2 + z * z / c2
    lam = 0.0
    outside = q > 1.0
    if outside:
        # largest root of F(λ) = Σ x_i²/(a_i²+λ) − 1: F is convex and decreasing, F ≥ 0 at the start
        # point max(0, r² − max a_i²), so Newton's iterates rise monotonically to the root.
        lam = max(0.0, x * x + y * y + z * z - max(a2, max(b2, c2)))
        step = 1.0
        it = 0
        while step > 1e-16 * (lam + min(a2, min(b2, c2))) and it < 200:
            pa = x * x / (a2 + lam)
            pb = y * y / (b2 + lam)
            pc = z * z / (c2 + lam)
            step = (pa + pb + pc - 1.0) / (pa / (a2 + lam) + pb / (b2 + lam) + pc / (c2 + lam))
            lam += step
            it += 1
    aa = a2 + lam
    bb = b2 + lam
    cc = c2 + lam
    rf = _rf(aa, bb, cc)
    da = _rd(bb, cc, aa)
    db = _rd(aa, cc, bb)
    dc = _rd(aa, bb, cc)
    u = 1.5 * gm * (rf - (x * x * da + y * y * db + z * z * dc) / 3.0)
    txx = -gm * da
    tyy = -gm * db
    tzz = -gm * dc
    txy = 0.0
    txz = 0.0
    tyz = 0.0
    if outside:
        s = x * x / (aa * aa) + y * y / (bb * bb) + z * z / (cc * cc)
        k = 3.0 * gm / (math.sqrt(aa * bb * cc) * s)
        px = x / aa
        py = y / bb
        pz = z / cc
        txx += k * px * px
        tyy += k * py * py
        tzz += k * pz * pz
        txy = k * px * py
        txz = k * px * pz
        tyz = k * py * pz
    return u, -gm * x * da, -gm * y * db, -gm * z * dc, txx, tyy, tzz, txy, txz, tyz


ellipsoid_field = dual(_ellipsoid_field)


def _edge_log(ra, rb, length):
    """Werner–Scheeres per-edge factor L_e (eq 2.41); 0 on the edge itself, where the terms that
    multiply it vanish (E_e r_e = 0 for x on the edge line)."""
    s = ra + rb
    d = s - length
    if d > 0.0:
        return math.log((s + length) / d)
    return 0.0


def _facet_angle(ax, ay, az, ra, bx, by, bz, rb, cx, cy, cz, rc):
    """Signed solid angle ω_f of the facet (a, b, c) seen from the field point (eq 2.41, atan2 form).

    Arguments are the vertex vectors r = P − x and their lengths.
    """
    num = ax * (by * cz - bz * cy) + ay * (bz * cx - bx * cz) + az * (bx * cy - by * cx)
    den = ra * rb * rc + ra * (bx * cx + by * cy + bz * cz) + rb * (cx * ax + cy * ay + cz * az) \
        + rc * (ax * bx + ay * by + az * bz)
    return 2.0 * math.atan2(num, den)


edge_log = dual(_edge_log)
facet_angle = dual(_facet_angle)
_L = edge_log.cpu
_omega = facet_angle.cpu


def _polyhedron_field(x, y, z, verts, edges, edge_dyad, edge_length, faces, face_normal, grho):
    """Constant-density polyhedron at (x, y, z), field frame (eq 2.42).

    Args:
        verts: vertices [m], shape (nv, 3).
        edges: vertex pairs (i, j) of every edge, shape (ne, 2), int64.
        edge_dyad: E_e as (xx, yy, zz, xy, xz, yz), shape (ne, 6).
        edge_length: |P_j − P_i| [m], shape (ne,).
        faces: vertex triples, outward counter-clockwise, shape (nf, 3), int64.
        face_normal: outward unit normals, shape (nf, 3).
        grho: G ρ [1/s²].

    Returns:
        ``(U, gx, gy, gz, Γxx, Γyy, Γzz, Γxy, Γxz, Γyz, Ω)`` with Ω = Σ_f ω_f the solid angle [sr].
        Needs no scratch memory (GPU-friendly); :func:`eval_polyhedron_points` is the faster bulk
        CPU evaluation with per-point vertex tables.
    """
    u = 0.0
    gx = 0.0
    gy = 0.0
    gz = 0.0
    txx = 0.0
    tyy = 0.0
    tzz = 0.0
    txy = 0.0
    txz = 0.0
    tyz = 0.0
    om = 0.0
    for e in range(edges.shape[0]):
        i = edges[e, 0]
        j = edges[e, 1]
        ax = verts[i, 0] - x
        ay = verts[i, 1] - y
        az = verts[i, 2] - z
        bx = verts[j, 0] - x
        by = verts[j, 1] - y
        bz = verts[j, 2] - z
        le = _L(math.sqrt(ax * ax + ay * ay + az * az), math.sqrt(bx * bx + by * by + bz * bz), edge_length[e])
        exx = edge_dyad[e, 0]
        eyy = edge_dyad[e, 1]
        ezz = edge_dyad[e, 2]
        exy = edge_dyad[e, 3]
        exz = edge_dyad[e, 4]
        eyz = edge_dyad[e, 5]
        ex = exx * ax + exy * ay + exz * az
        ey = exy * ax + eyy * ay + eyz * az
        ez = exz * ax + eyz * ay + ezz * az
        u += (ax * ex + ay * ey + az * ez) * le
        gx -= ex * le
        gy -= ey * le
        gz -= ez * le
        txx += exx * le
        tyy += eyy * le
        tzz += ezz * le
        txy += exy * le
        txz += exz * le
        tyz += eyz * le
    for f in range(faces.shape[0]):
        i = faces[f, 0]
        j = faces[f, 1]
        k = faces[f, 2]
        ax = verts[i, 0] - x
        ay = verts[i, 1] - y
        az = verts[i, 2] - z
        bx = verts[j, 0] - x
        by = verts[j, 1] - y
        bz = verts[j, 2] - z
        cx = verts[k, 0] - x
        cy = verts[k, 1] - y
        cz = verts[k, 2] - z
        w = _omega(ax, ay, az, math.sqrt(ax * ax + ay * ay + az * az), bx, by, bz,
                   math.sqrt(bx * bx + by * by + bz * bz), cx, cy, cz, math.sqrt(cx * cx + cy * cy + cz * cz))
        nx = face_normal[f, 0]
        ny = face_normal[f, 1]
        nz = face_normal[f, 2]
        nr = (nx * ax + ny * ay + nz * az) * w
        u -= (nx * ax + ny * ay + nz * az) * nr
        gx += nx * nr
        gy += ny * nr
        gz += nz * nr
        txx -= nx * nx * w
        tyy -= ny * ny * w
        tzz -= nz * nz * w
        txy -= nx * ny * w
        txz -= nx * nz * w
        tyz -= ny * nz * w
        om += w
    return (0.5 * grho * u, grho * gx, grho * gy, grho * gz, grho * txx, grho * tyy, grho * tzz,
            grho * txy, grho * txz, grho * tyz, om)


polyhedron_field = dual(_polyhedron_field)


def _trilinear4(values, fx, fy, fz):
    """Trilinear interpolation of the 4 channels of ``values[nx, ny, nz, 4]`` at fractional node
    coordinates (fx, fy, fz), clamped into the grid."""
    nx = values.shape[0]
    ny = values.shape[1]
    nz = values.shape[2]
    fx = min(max(fx, 0.0), nx - 1.0)
    fy = min(max(fy, 0.0), ny - 1.0)
    fz = min(max(fz, 0.0), nz - 1.0)
    i = min(int(fx), nx - 2)
    j = min(int(fy), ny - 2)
    k = min(int(fz), nz - 2)
    tx = fx - i
    ty = fy - j
    tz = fz - k
    sx = 1.0 - tx
    sy = 1.0 - ty
    sz = 1.0 - tz
    w000 = sx * sy * sz
    w100 = tx * sy * sz
    w010 = sx * ty * sz
    w110 = tx * ty * sz
    w001 = sx * sy * tz
    w101 = tx * sy * tz
    w011 = sx * ty * tz
    w111 = tx * ty * tz
    c0 = (w000 * values[i, j, k, 0] + w100 * values[i + 1, j, k, 0] + w010 * values[i, j + 1, k, 0]
          + w110 * values[i + 1, j + 1, k, 0] + w001 * values[i, j, k + 1, 0] + w101 * values[i + 1, j, k + 1, 0]
          + w011 * values[i, j + 1, k + 1, 0] + w111 * values[i + 1, j + 1, k + 1, 0])
    c1 = (w000 * values[i, j, k, 1] + w100 * values[i + 1, j, k, 1] + w010 * values[i, j + 1, k, 1]
          + w110 * values[i + 1, j + 1, k, 1] + w001 * values[i, j, k + 1, 1] + w101 * values[i + 1, j, k + 1, 1]
          + w011 * values[i, j + 1, k + 1, 1] + w111 * values[i + 1, j + 1, k + 1, 1])
    c2 = (w000 * values[i, j, k, 2] + w100 * values[i + 1, j, k, 2] + w010 * values[i, j + 1, k, 2]
          + w110 * values[i + 1, j + 1, k, 2] + w001 * values[i, j, k + 1, 2] + w101 * values[i + 1, j, k + 1, 2]
          + w011 * values[i, j + 1, k + 1, 2] + w111 * values[i + 1, j + 1, k + 1, 2])
    c3 = (w000 * values[i, j, k, 3] + w100 * values[i + 1, j, k, 3] + w010 * values[i, j + 1, k, 3]
          + w110 * values[i + 1, j + 1, k, 3] + w001 * values[i, j, k + 1, 3] + w101 * values[i + 1, j, k + 1, 3]
          + w011 * values[i, j + 1, k + 1, 3] + w111 * values[i + 1, j + 1, k + 1, 3])
    return c0, c1, c2, c3


trilinear4 = dual(_trilinear4)
_tri4 = trilinear4.cpu
_pm = point_mass_field.cpu


def _quadrupole_field(dx, dy, dz, qxx, qyy, qzz, qxy, qxz, qyz):
    """Degree-2 (MacCullagh) field of G·Q at the offset d from the centre of mass.

    With the traceless quadrupole ``Q = ∫ρ (3 s sᵀ − |s|² E) dV = tr(I) E − 3 I`` (I the inertia
    tensor about the CoM) and ``q = G Q`` [m⁵/s²]: ``U₂ = dᵀ q d / (2 r⁵)``,
    ``g₂ = q d / r⁵ − (5/2) (dᵀ q d) d / r⁷``. Returns ``(U₂, g₂x, g₂y, g₂z)``; zeros at d = 0.
    """
    r2 = dx * dx + dy * dy + dz * dz
    if r2 == 0.0:
        return 0.0, 0.0, 0.0, 0.0
    qdx = qxx * dx + qxy * dy + qxz * dz
    qdy = qxy * dx + qyy * dy + qyz * dz
    qdz = qxz * dx + qyz * dy + qzz * dz
    dqd = dx * qdx + dy * qdy + dz * qdz
    ir5 = 1.0 / (r2 * r2 * math.sqrt(r2))
    k = 2.5 * dqd * ir5 / r2
    return 0.5 * dqd * ir5, qdx * ir5 - k * dx, qdy * ir5 - k * dy, qdz * ir5 - k * dz


quadrupole_field = dual(_quadrupole_field)
_quad = quadrupole_field.cpu


def _voxel_field(x, y, z, values, ox, oy, oz, h, cx, cy, cz, mu, qxx, qyy, qzz, qxy, qxz, qyz, perturbation):
    """Voxelised field at (x, y, z), field frame (seed 004 §2.4.4).

    ``values[nx, ny, nz, 4]`` holds at node (i, j, k) = origin + h (i, j, k) either (g, U)
    (``perturbation = False``) or (g − g_pm, U − U_pm) (``perturbation = True``), where _pm is the
    point mass μ at the centre of mass c. Inside the grid box: trilinear interpolation (plus the
    point mass in perturbation mode). Outside it: the far field of :class:`VoxelField` (point
    mass, quadrupole q = G Q, and the boundary residual decayed as r⁻⁵).

    Returns:
        ``(U, gx, gy, gz)``.
    """
    nx = values.shape[0]
    ny = values.shape[1]
    nz = values.shape[2]
    hx = ox + (nx - 1) * h
    hy = oy + (ny - 1) * h
    hz = oz + (nz - 1) * h
    inside = ox <= x <= hx and oy <= y <= hy and oz <= z <= hz
    t = 1.0
    px = x
    py = y
    pz = z
    if not inside:
        # radial projection from c onto the grid box: x_b = c + t (x − c), 0 < t < 1
        dx = x - cx
        dy = y - cy
        dz = z - cz
        if dx > 0.0:
            t = min(t, (hx - cx) / dx)
        elif dx < 0.0:
            t = min(t, (ox - cx) / dx)
        if dy > 0.0:
            t = min(t, (hy - cy) / dy)
        elif dy < 0.0:
            t = min(t, (oy - cy) / dy)
        if dz > 0.0:
            t = min(t, (hz - cz) / dz)
        elif dz < 0.0:
            t = min(t, (oz - cz) / dz)
        px = cx + t * dx
        py = cy + t * dy
        pz = cz + t * dz
    inv_h = 1.0 / h
    v0, v1, v2, v3 = _tri4(values, (px - ox) * inv_h, (py - oy) * inv_h, (pz - oz) * inv_h)
    if inside and not perturbation:
        return v3, v0, v1, v2
    if inside:
        u, gx, gy, gz, _a, _b, _c, _d, _e, _f = _pm(x, y, z, cx, cy, cz, mu)
        return u + v3, gx + v0, gy + v1, gz + v2
    if not perturbation:  # stored g, U: the perturbation at the boundary point
        pu, pgx, pgy, pgz, _a, _b, _c, _d, _e, _f = _pm(px, py, pz, cx, cy, cz, mu)
        v0 -= pgx
        v1 -= pgy
        v2 -= pgz
        v3 -= pu
    # residual of degrees >= 3 at the boundary point, decayed along the ray: ∝ r⁻⁴ (U), r⁻⁵ (g)
    qu, qgx, qgy, qgz = _quad(px - cx, py - cy, pz - cz, qxx, qyy, qzz, qxy, qxz, qyz)
    t4 = t * t * t * t
    t5 = t4 * t
    u, gx, gy, gz, _a, _b, _c, _d, _e, _f = _pm(x, y, z, cx, cy, cz, mu)
    fu, fgx, fgy, fgz = _quad(x - cx, y - cy, z - cz, qxx, qyy, qzz, qxy, qxz, qyz)
    return (u + fu + t4 * (v3 - qu), gx + fgx + t5 * (v0 - qgx), gy + fgy + t5 * (v1 - qgy),
            gz + fgz + t5 * (v2 - qgz))


voxel_field = dual(_voxel_field, inline=False)


def _linearized_field(x, y, z, x0, y0, z0, u0, g0x, g0y, g0z, txx, tyy, tzz, txy, txz, tyz):
    """Eq 2.43 (with the ½ restored): ``(U, gx, gy, gz)`` from U, g, Γ at (x0, y0, z0)."""
    dx = x - x0
    dy = y - y0
    dz = z - z0
    tdx = txx * dx + txy * dy + txz * dz
    tdy = txy * dx + tyy * dy + tyz * dz
    tdz = txz * dx + tyz * dy + tzz * dz
    u = u0 + g0x * dx + g0y * dy + g0z * dz + 0.5 * (dx * tdx + dy * tdy + dz * tdz)
    return u, g0x + tdx, g0y + tdy, g0z + tdz


linearized_field = dual(_linearized_field)


def _harmonics_field(x, y, z, mu, rad, nmax, cs):
    """Spherical-harmonic field to degree ``nmax``: ``(U, gx, gy, gz)`` at (x, y, z), field frame.

    Cunningham's recursion of V_nm + i W_nm = (R/r)^{n+1} P_nm(sin φ) e^{imλ} in Cartesian
    coordinates (Montenbruck & Gill 2000, eqs 3.29–3.31) and the acceleration of eq 3.33, with the
    unnormalised coefficients ``cs[n, m, 0, 0] = C_nm``, ``cs[n, m, 1, 0] = S_nm`` (the 4-D layout of
    the packed source's array slot it travels in, :func:`gravity_args`). Pole-safe (no division by cos φ) and
    allocation-free: for each order m the columns m − 1, m and m + 1 are recurred upwards in n side
    by side (three two-term states), started from the sectoral values V_kk, W_kk carried across m,
    so nothing of size N² is stored (3 N²/2 recursion steps instead of N²/2).
    """
    r2 = x * x + y * y + z * z
    if r2 == 0.0:
        return 0.0, 0.0, 0.0, 0.0
    rho = rad * rad / r2
    x0 = rad * x / r2
    y0 = rad * y / r2
    z0 = rad * z / r2
    zr = z0
    # sectoral V_kk, W_kk for k = m - 1, m, m + 1
    vpm, wpm = 0.0, 0.0
    vm, wm = rad / math.sqrt(r2), 0.0
    vnx, wnx = x0 * vm - y0 * wm, x0 * wm + y0 * vm
    u = 0.0
    ax = 0.0
    ay = 0.0
    az = 0.0
    for m in range(nmax + 1):
        # column m at degree n (a) and n - 1 (b), from n = m
        amv, amw, bmv, bmw = vm, wm, 0.0, 0.0
        # column m + 1 at degree n + 1 (a) and n (b), from n = m
        apv, apw, bpv, bpw = vnx, wnx, 0.0, 0.0
        # column m - 1 at degree n (a) and n - 1 (b), from n = m
        anv = (2 * m - 1) * zr * vpm
        anw = (2 * m - 1) * zr * wpm
        bnv, bnw = vpm, wpm
        for n in range(m, nmax + 1):
            k1 = (2 * n + 1) / (n + 1 - m)
            k2 = (n + m) / (n + 1 - m)
            cmv = k1 * zr * amv - k2 * rho * bmv          # V_{n+1,m}
            cmw = k1 * zr * amw - k2 * rho * bmw
            c = cs[n, m, 0, 0]
            sn = cs[n, m, 1, 0]
            u += c * amv + sn * amw
            if m == 0:
                ax -= c * apv
                ay -= c * apw
            else:
                j1 = (2 * n + 1) / (n + 2 - m)
                j2 = (n + m - 1) / (n + 2 - m)
                cnv = j1 * zr * anv - j2 * rho * bnv      # V_{n+1,m-1}
                cnw = j1 * zr * anw - j2 * rho * bnw
                f = (n - m + 2) * (n - m + 1)
                ax += 0.5 * ((-c * apv - sn * apw) + f * (c * cnv + sn * cnw))
                ay += 0.5 * ((-c * apw + sn * apv) + f * (-c * cnw + sn * cnv))
                bnv, bnw, anv, anw = anv, anw, cnv, cnw
            az += (n - m + 1) * (-c * cmv - sn * cmw)
            bmv, bmw, amv, amw = amv, amw, cmv, cmw
            l1 = (2 * n + 3) / (n + 1 - m)
            l2 = (n + m + 2) / (n + 1 - m)
            dpv = l1 * zr * apv - l2 * rho * bpv           # V_{n+2,m+1}
            dpw = l1 * zr * apw - l2 * rho * bpw
            bpv, bpw, apv, apw = apv, apw, dpv, dpw
        k = 2 * m + 3
        vpm, wpm, vm, wm = vm, wm, vnx, wnx
        vnx, wnx = k * (x0 * vm - y0 * wm), k * (x0 * wm + y0 * vm)
    g = mu / (rad * rad)
    return mu / rad * u, g * ax, g * ay, g * az


harmonics_field = dual(_harmonics_field, inline=False)


def _harmonics_gradient(x, y, z, mu, rad, nmax, cs):
    """Gravity gradient Γ = ∂g/∂x of the spherical-harmonic field to degree ``nmax``:
    ``(Γxx, Γyy, Γzz, Γxy, Γxz, Γyz)`` [1/s²] at (x, y, z), field frame (coefficients as in
    :func:`_harmonics_field`).

    With Z_nm = V_nm + i W_nm and the operators L± = ∂x ± i∂y, Cunningham's derivative identities
    (Montenbruck & Gill 2000, eqs 3.32–3.33, in units of 1/R) read L⁺Z_nm = −Z_{n+1,m+1},
    L⁻Z_nm = (n−m+2)(n−m+1) Z_{n+1,m−1} and ∂z Z_nm = −(n−m+1) Z_{n+1,m}, with
    Z_{n,−k} = (−1)^k (n−k)!/(n+k)! conj(Z_nk). Applied twice they give every second derivative in
    terms of degree n + 2:

        L⁺L⁺Z = Z_{n+2,m+2}                         L⁺L⁻Z = −(n−m+1)(n−m+2) Z_{n+2,m}
        L⁻L⁻Z = (n−m+1)(n−m+2)(n−m+3)(n−m+4) Z_{n+2,m−2}   (m = 1: −n(n+1) conj Z_{n+2,1};
                                                          m = 0: conj Z_{n+2,2})
        ∂zL⁺Z = (n−m+1) Z_{n+2,m+1}                 ∂z∂zZ = (n−m+1)(n−m+2) Z_{n+2,m}
        ∂zL⁻Z = −(n−m+1)(n−m+2)(n−m+3) Z_{n+2,m−1}  (m = 0: (n+1) conj Z_{n+2,1})

    and ∂xx = ¼(L⁺L⁺ + 2L⁺L⁻ + L⁻L⁻), ∂yy = −¼(L⁺L⁺ − 2L⁺L⁻ + L⁻L⁻), ∂xy = (L⁺L⁺ − L⁻L⁻)/4i,
    ∂xz = ½(∂zL⁺ + ∂zL⁻), ∂yz = (∂zL⁺ − ∂zL⁻)/2i of U = GM/R Σ Re[(C_nm − i S_nm) Z_nm]; the
    trace vanishes term by term (Laplace). Each Z_{n',m'} up to degree nmax + 2 is made once by the
    column recursion of :func:`_harmonics_field` and handed to the (at most eight) source terms
    (n' − 2, m) that need it, so nothing of size N² is stored (CPU and CUDA alike).
    """
    r2 = x * x + y * y + z * z
    if r2 == 0.0:
        return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    rho = rad * rad / r2
    x0 = rad * x / r2
    y0 = rad * y / r2
    zr = rad * z / r2
    sv, sw = rad / math.sqrt(r2), 0.0          # sectoral Z_{m,m} of the column being recurred
    ppr, ppi, pmr, mmr, mmi, zpr, zpi, zmr, zmi = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    top = nmax + 2
    for mt in range(top + 1):
        av, aw, bv, bw = sv, sw, 0.0, 0.0      # Z_{nt,mt} and Z_{nt-1,mt}
        for nt in range(mt, top + 1):
            n = nt - 2
            if n >= 0:
                m = mt - 2                     # L+L+ of source (n, mt - 2); m <= n as nt >= mt
                if m >= 0:
                    c, sn = cs[n, m, 0, 0], cs[n, m, 1, 0]
                    ppr += c * av + sn * aw
                    ppi += c * aw - sn * av
                if mt <= n:                    # L+L- and dzdz of source (n, mt)
                    c, sn = cs[n, mt, 0, 0], cs[n, mt, 1, 0]
                    f = (n - mt + 1) * (n - mt + 2)
                    pmr -= f * (c * av + sn * aw)
                m = mt - 1                     # dz L+ of source (n, mt - 1), a real term only for m <= n
                if 0 <= m <= n:
                    c, sn = cs[n, m, 0, 0], cs[n, m, 1, 0]
                    f = n - m + 1
                    zpr += f * (c * av + sn * aw)
                    zpi += f * (c * aw - sn * av)
                m = mt + 1                     # dz L- of source (n, mt + 1)
                if m <= n:
                    c, sn = cs[n, m, 0, 0], cs[n, m, 1, 0]
                    f = -(n - m + 1) * (n - m + 2) * (n - m + 3)
                    zmr += f * (c * av + sn * aw)
                    zmi += f * (c * aw - sn * av)
                m = mt + 2                     # L-L- of source (n, mt + 2)
                if m <= n:
                    c, sn = cs[n, m, 0, 0], cs[n, m, 1, 0]
                    f = (n - m + 1) * (n - m + 2) * (n - m + 3) * (n - m + 4)
                    mmr += f * (c * av + sn * aw)
                    mmi += f * (c * aw - sn * av)
                if mt == 2:                    # L-L- of source (n, 0): conj Z_{n+2,2}
                    c, sn = cs[n, 0, 0, 0], cs[n, 0, 1, 0]
                    mmr += c * av - sn * aw
                    mmi += -c * aw - sn * av
                elif mt == 1:
                    if n >= 1:                 # L-L- of source (n, 1): -n(n+1) conj Z_{n+2,1}
                        c, sn = cs[n, 1, 0, 0], cs[n, 1, 1, 0]
                        f = -n * (n + 1)
                        mmr += f * (c * av - sn * aw)
                        mmi += f * (-c * aw - sn * av)
                    c, sn = cs[n, 0, 0, 0], cs[n, 0, 1, 0]   # dz L- of source (n, 0): (n+1) conj Z_{n+2,1}
                    zmr += (n + 1) * (c * av - sn * aw)
                    zmi += (n + 1) * (-c * aw - sn * av)
            k1 = (2 * nt + 1) / (nt + 1 - mt)
            k2 = (nt + mt) / (nt + 1 - mt)
            cv = k1 * zr * av - k2 * rho * bv
            cw = k1 * zr * aw - k2 * rho * bw
            bv, bw, av, aw = av, aw, cv, cw
        k = 2 * mt + 1
        sv, sw = k * (x0 * sv - y0 * sw), k * (x0 * sw + y0 * sv)
    g = mu / (rad * rad * rad)
    txx = 0.25 * (ppr + 2.0 * pmr + mmr)
    tyy = -0.25 * (ppr - 2.0 * pmr + mmr)
    return (g * txx, g * tyy, -g * (txx + tyy), 0.25 * g * (ppi - mmi), 0.5 * g * (zpr + zmr),
            0.5 * g * (zpi - zmi))


harmonics_gradient = dual(_harmonics_gradient, inline=False)



# ================================================================================================
# the one dispatch over every source kind (every pipeline's gravity goes through it)
# ================================================================================================

GRAVITY_POINT_MASS = 0
GRAVITY_ELLIPSOID = 1
GRAVITY_POLYHEDRON = 2
GRAVITY_VOXEL = 3
GRAVITY_LINEARIZED = 4
GRAVITY_HARMONICS = 5
#: source ``kind`` -> kernel code of :data:`gravity_at`.
GRAVITY_KINDS = {"point_mass": GRAVITY_POINT_MASS, "ellipsoid": GRAVITY_ELLIPSOID, "polyhedron": GRAVITY_POLYHEDRON,
                 "voxel": GRAVITY_VOXEL, "linearized": GRAVITY_LINEARIZED, "harmonics": GRAVITY_HARMONICS}

_pmf_at = point_mass_field.cpu
_ell_at = ellipsoid_field.cpu
_poly_at = polyhedron_field.cpu
_vox_at = voxel_field.cpu
_lin_at = linearized_field.cpu
_harm_at = harmonics_field.cpu


def _point_mass_gravity(ga, x, y, z):
    """:data:`gravity_at` of a point mass (``ga`` from :func:`gravity_args`)."""
    gs = ga[1]
    r = _pmf_at(x, y, z, gs[0], gs[1], gs[2], gs[3])
    return r[0], r[1], r[2], r[3]


def _ellipsoid_gravity(ga, x, y, z):
    """:data:`gravity_at` of a homogeneous ellipsoid."""
    gs = ga[1]
    r = _ell_at(x, y, z, gs[0], gs[1], gs[2], gs[3])
    return r[0], r[1], r[2], r[3]


def _polyhedron_gravity(ga, x, y, z):
    """:data:`gravity_at` of a homogeneous polyhedron."""
    gkind, gs, gvox, gpv, gpe, gped, gpel, gpf, gpfn = ga
    r = _poly_at(x, y, z, gpv, gpe, gped, gpel, gpf, gpfn, gs[0])
    return r[0], r[1], r[2], r[3]


def _voxel_gravity(ga, x, y, z):
    """:data:`gravity_at` of a voxelised field."""
    gs, gvox = ga[1], ga[2]
    r = _vox_at(x, y, z, gvox, gs[0], gs[1], gs[2], gs[3], gs[4], gs[5], gs[6], gs[7], gs[8], gs[9], gs[10],
                gs[11], gs[12], gs[13], gs[14] != 0.0)
    return r[0], r[1], r[2], r[3]


def _linearized_gravity(ga, x, y, z):
    """:data:`gravity_at` of a field linearised about a point."""
    gs = ga[1]
    r = _lin_at(x, y, z, gs[0], gs[1], gs[2], gs[3], gs[4], gs[5], gs[6], gs[7], gs[8], gs[9], gs[10], gs[11], gs[12])
    return r[0], r[1], r[2], r[3]


def _harmonics_gravity(ga, x, y, z):
    """:data:`gravity_at` of a spherical-harmonic field."""
    gs = ga[1]
    return _harm_at(x, y, z, gs[0], gs[1], int(gs[2]), ga[2])


#: :data:`gravity_at` of one source kind, by kernel code: what a pipeline that knows its source at
#: bind calls instead of the dispatch over every kind (:func:`ecs.terms.specialise`), so that it
#: compiles only its own source's field.
GRAVITY_AT_KIND = {GRAVITY_POINT_MASS: dual(_point_mass_gravity, inline=False),
                   GRAVITY_ELLIPSOID: dual(_ellipsoid_gravity, inline=False),
                   GRAVITY_POLYHEDRON: dual(_polyhedron_gravity, inline=False),
                   GRAVITY_VOXEL: dual(_voxel_gravity, inline=False),
                   GRAVITY_LINEARIZED: dual(_linearized_gravity, inline=False),
                   GRAVITY_HARMONICS: dual(_harmonics_gravity, inline=False)}
_g_point = GRAVITY_AT_KIND[GRAVITY_POINT_MASS].cpu
_g_ellipsoid = GRAVITY_AT_KIND[GRAVITY_ELLIPSOID].cpu
_g_polyhedron = GRAVITY_AT_KIND[GRAVITY_POLYHEDRON].cpu
_g_voxel = GRAVITY_AT_KIND[GRAVITY_VOXEL].cpu
_g_linearized = GRAVITY_AT_KIND[GRAVITY_LINEARIZED].cpu
_g_harmonics = GRAVITY_AT_KIND[GRAVITY_HARMONICS].cpu


def _gravity_at(ga, x, y, z):
    """``(U, gx, gy, gz)`` of a gravity source at (x, y, z) in its field frame.

    ``ga = (gkind, gs, gvox, gpv, gpe, gped, gpel, gpf, gpfn)`` from :func:`gravity_args`: one
    signature for every source kind (unused arrays are dummies; the 4-D slot ``gvox`` holds the voxel
    grid or the harmonic coefficients), so one compiled kernel serves point mass, ellipsoid,
    polyhedron, voxel field, linearised field and spherical harmonics (:data:`GRAVITY_AT_KIND`,
    one each). (A tenth array for the coefficients cost 7 % of deploy-cube's throughput, measured:
    every call passes the tuple.) The rigid-body gravity system (:mod:`systems.gravity.fields`)
    and the deployment kernels (:mod:`systems.deployment.physics`) both evaluate gravity through it.
    """
    gkind = ga[0]
    if gkind == 0:
        return _g_point(ga, x, y, z)
    if gkind == 1:
        return _g_ellipsoid(ga, x, y, z)
    if gkind == 2:
        return _g_polyhedron(ga, x, y, z)
    if gkind == 3:
        return _g_voxel(ga, x, y, z)
    if gkind == 5:
        return _g_harmonics(ga, x, y, z)
    return _g_linearized(ga, x, y, z)


#: Not inlined at numba-IR level (a plain cached call; LLVM inlines where it pays): inlining every
#: source's kernel into each caller multiplies compile time (systems.probe_contact.collision.dual_call).
gravity_at = dual(_gravity_at, inline=False)


_harm_grad = harmonics_gradient.cpu


def _gravity_gradient_at(ga, x, y, z):
    """``(Γxx, Γyy, Γzz, Γxy, Γxz, Γyz)`` [1/s²], the gravity gradient ∂g/∂x of the source packed
    in ``ga`` (:func:`gravity_args`) at (x, y, z), field frame: analytic for every kind that has
    one — point mass, homogeneous ellipsoid, Werner–Scheeres polyhedron (eq 2.42's dyads),
    linearised field (its constant Γ), spherical harmonics (:func:`_harmonics_gradient`). The voxel
    grid interpolates U and g only and has none: NaN (``GravitySystem(gradient_torque=True)``
    refuses a voxel source before the run)."""
    gkind = ga[0]
    gs = ga[1]
    if gkind == 0:
        r = _pmf_at(x, y, z, gs[0], gs[1], gs[2], gs[3])
        return r[4], r[5], r[6], r[7], r[8], r[9]
    if gkind == 1:
        r = _ell_at(x, y, z, gs[0], gs[1], gs[2], gs[3])
        return r[4], r[5], r[6], r[7], r[8], r[9]
    if gkind == 2:
        gkind_, gs_, gvox, gpv, gpe, gped, gpel, gpf, gpfn = ga
        p = _poly_at(x, y, z, gpv, gpe, gped, gpel, gpf, gpfn, gs[0])
        return p[4], p[5], p[6], p[7], p[8], p[9]
    if gkind == 4:
        return gs[7], gs[8], gs[9], gs[10], gs[11], gs[12]
    if gkind == 5:
        return _harm_grad(x, y, z, gs[0], gs[1], int(gs[2]), ga[2])
    return math.nan, math.nan, math.nan, math.nan, math.nan, math.nan


gravity_gradient_at = dual(_gravity_gradient_at, inline=False)


def gravity_args(source: GravitySource) -> tuple:
    """``(gkind, gs, gvox, gpv, gpe, gped, gpel, gpf, gpfn)`` of ``source`` for :data:`gravity_at`."""
    kind = GRAVITY_KINDS.get(getattr(source, "kind", None))
    if kind is None:
        raise InputError("gravity source", type(source).__name__,
                         f"must be one of the components.gravity sources ({', '.join(GRAVITY_KINDS)})")
    p = source.kernel_params()
    gs = np.zeros(16)
    vox = np.zeros((1, 1, 1, 4))
    pv, pe, ped, pel = np.zeros((1, 3)), np.zeros((1, 2), np.int64), np.zeros((1, 6)), np.zeros(1)
    pf, pfn = np.zeros((1, 3), np.int64), np.zeros((1, 3))
    if kind in (GRAVITY_POINT_MASS, GRAVITY_ELLIPSOID, GRAVITY_LINEARIZED):
        gs[:len(p)] = p
    elif kind == GRAVITY_POLYHEDRON:
        pv, pe, ped, pel, pf, pfn = (np.ascontiguousarray(a) for a in p[:6])
        gs[0] = p[6]
    elif kind == GRAVITY_HARMONICS:
        gs[:3] = p[:3]
        vox = np.ascontiguousarray(p[3][..., None])       # [N+1, N+1, 2, 1]
    else:
        vox = np.ascontiguousarray(p[0])
        gs[:15] = [float(a) for a in p[1:]]
    return (np.int64(kind), gs, vox, pv, pe.astype(np.int64), ped, pel, pf.astype(np.int64), pfn)

def _gradient_torque(mu, rr2, rr, rb0, rb1, rb2, inertia, r):
    """Gravity-gradient torque about the CoM [N·m], body axes, of a point mass μ seen from a body
    with central inertia ``inertia[r]`` [kg·m²] whose CoM is at ``rb`` [m] from it in body axes
    (``rr2 = |rb|²``, ``rr = |rb|`` as the caller has them): ``3μ/|r|⁵ r_b × (I r_b)`` (seed 001
    MBGravityTorque; Wie, *Space Vehicle Dynamics and Control*, §6.3, the leading term of the
    torque of a field about an extended body)."""
    i0 = inertia[r, 0, 0] * rb0 + inertia[r, 0, 1] * rb1 + inertia[r, 0, 2] * rb2
    i1 = inertia[r, 1, 0] * rb0 + inertia[r, 1, 1] * rb1 + inertia[r, 1, 2] * rb2
    i2 = inertia[r, 2, 0] * rb0 + inertia[r, 2, 1] * rb1 + inertia[r, 2, 2] * rb2
    gg = 3.0 * mu / (rr2 * rr2 * rr)
    return gg * (rb1 * i2 - rb2 * i1), gg * (rb2 * i0 - rb0 * i2), gg * (rb0 * i1 - rb1 * i0)


gradient_torque = dual(_gradient_torque)


def _tensor_gradient_torque(inertia, r, gxx, gyy, gzz, gxy, gxz, gyz):
    """Gravity-gradient torque about the CoM [N·m], body axes, of a field whose gradient in body
    axes is Γ = ``(gxx, gyy, gzz, gxy, gxz, gyz)`` [1/s²] on a body of central inertia
    ``inertia[r]``: τ = ∫ ρ × Γρ dm = ε_ijk Γ_kl J_lj with J = ∫ρρᵀ dm = ½ tr(I) E − I, i.e.
    ``τ_i = −ε_ijk (I Γ)_jk`` (Γ symmetric). For a point mass, Γ = μ/r³ (3 r̂r̂ᵀ − E), it is
    :func:`_gradient_torque`'s ``3μ/r⁵ r × I r``; for any field it holds to second order in the
    body's size (the next term needs the field's third derivatives)."""
    a00 = inertia[r, 0, 0] * gxx + inertia[r, 0, 1] * gxy + inertia[r, 0, 2] * gxz
    a01 = inertia[r, 0, 0] * gxy + inertia[r, 0, 1] * gyy + inertia[r, 0, 2] * gyz
    a02 = inertia[r, 0, 0] * gxz + inertia[r, 0, 1] * gyz + inertia[r, 0, 2] * gzz
    a10 = inertia[r, 1, 0] * gxx + inertia[r, 1, 1] * gxy + inertia[r, 1, 2] * gxz
    a12 = inertia[r, 1, 0] * gxz + inertia[r, 1, 1] * gyz + inertia[r, 1, 2] * gzz
    a20 = inertia[r, 2, 0] * gxx + inertia[r, 2, 1] * gxy + inertia[r, 2, 2] * gxz
    a21 = inertia[r, 2, 0] * gxy + inertia[r, 2, 1] * gyy + inertia[r, 2, 2] * gyz
    return a21 - a12, a02 - a20, a10 - a01


tensor_gradient_torque = dual(_tensor_gradient_torque)


# ================================================================================================
# host-side bulk evaluation (CPU, parallel over points)
# ================================================================================================

_pmf = point_mass_field.cpu
_ell = ellipsoid_field.cpu
_vox = voxel_field.cpu
_lin = linearized_field.cpu
_gravity_at_cpu = gravity_at.cpu


@cpu_parallel_points
def eval_point_mass_points(points, cx, cy, cz, mu, out):
    """``out[p] = (U, g, Γ6)`` of a point mass at ``points[p]``; out shape (n, 10)."""
    for p in prange(points.shape[0]):
        r = _pmf(points[p, 0], points[p, 1], points[p, 2], cx, cy, cz, mu)
        for k in range(10):
            out[p, k] = r[k]


@cpu_parallel_points
def eval_ellipsoid_points(points, a2, b2, c2, gm, out):
    """``out[p] = (U, g, Γ6)`` of a homogeneous ellipsoid; out shape (n, 10)."""
    for p in prange(points.shape[0]):
        r = _ell(points[p, 0], points[p, 1], points[p, 2], a2, b2, c2, gm)
        for k in range(10):
            out[p, k] = r[k]


@cpu_parallel_points
def eval_voxel_points(points, values, ox, oy, oz, h, cx, cy, cz, mu, qxx, qyy, qzz, qxy, qxz, qyz, perturbation, out):
    """``out[p] = (U, g)`` of a voxel field; out shape (n, 4)."""
    for p in prange(points.shape[0]):
        r = _vox(points[p, 0], points[p, 1], points[p, 2], values, ox, oy, oz, h, cx, cy, cz, mu, qxx, qyy, qzz, qxy,
                 qxz, qyz, perturbation)
        for k in range(4):
            out[p, k] = r[k]


@cpu_parallel_points
def eval_linearized_points(points, x0, y0, z0, u0, g0x, g0y, g0z, txx, tyy, tzz, txy, txz, tyz, out):
    """``out[p] = (U, g)`` of a linearised field; out shape (n, 4)."""
    for p in prange(points.shape[0]):
        r = _lin(points[p, 0], points[p, 1], points[p, 2], x0, y0, z0, u0, g0x, g0y, g0z, txx, tyy, tzz, txy,
                 txz, tyz)
        for k in range(4):
            out[p, k] = r[k]


#: Points per scratch allocation in :func:`eval_polyhedron_points` (amortises the vertex table).
_POLY_CHUNK = 16


# ~1 ms per point on a large mesh: two points pay for a launch; nrt: it allocates its scratch table
@cpu_parallel_points(min_rows=2, nrt=True)
def eval_polyhedron_points(points, verts, edges, edge_dyad, edge_length, faces, face_normal, grho, out):
    """Bulk polyhedron evaluation: ``out[p] = (U, g, Γ6, Ω)``, out shape (n, 11).

    Same sums as :data:`polyhedron_field` (and the same per-edge/per-facet kernels
    :data:`edge_log`, :data:`facet_angle`), but each thread first tabulates ``P_v − x`` and
    ``|P_v − x|`` for every vertex once per point (a vectorisable pass), so the edge and facet
    loops gather instead of recomputing square roots: ~1.5× faster on a CPU. Points are split in
    chunks of ``_POLY_CHUNK`` sharing one scratch table per thread; every point is summed by one
    thread in a fixed order, so results do not depend on the thread count.
    """
    n = points.shape[0]
    nv = verts.shape[0]
    nchunks = (n + _POLY_CHUNK - 1) // _POLY_CHUNK
    for c in prange(nchunks):
        rt = np.empty((nv, 4))
        for p in range(c * _POLY_CHUNK, min(n, (c + 1) * _POLY_CHUNK)):
            x = points[p, 0]
            y = points[p, 1]
            z = points[p, 2]
            for v in range(nv):
                ax = verts[v, 0] - x
                ay = verts[v, 1] - y
                az = verts[v, 2] - z
                rt[v, 0] = ax
                rt[v, 1] = ay
                rt[v, 2] = az
                rt[v, 3] = math.sqrt(ax * ax + ay * ay + az * az)
            u = 0.0
            gx = 0.0
            gy = 0.0
            gz = 0.0
            txx = 0.0
            tyy = 0.0
            tzz = 0.0
            txy = 0.0
            txz = 0.0
            tyz = 0.0
            om = 0.0
            for e in range(edges.shape[0]):
                i = edges[e, 0]
                ax = rt[i, 0]
                ay = rt[i, 1]
                az = rt[i, 2]
                le = _L(rt[i, 3], rt[edges[e, 1], 3], edge_length[e])
                exx = edge_dyad[e, 0]
                eyy = edge_dyad[e, 1]
                ezz = edge_dyad[e, 2]
                exy = edge_dyad[e, 3]
                exz = edge_dyad[e, 4]
                eyz = edge_dyad[e, 5]
                ex = exx * ax + exy * ay + exz * az
                ey = exy * ax + eyy * ay + eyz * az
                ez = exz * ax + eyz * ay + ezz * az
                u += (ax * ex + ay * ey + az * ez) * le
                gx -= ex * le
                gy -= ey * le
                gz -= ez * le
                txx += exx * le
                tyy += eyy * le
                tzz += ezz * le
                txy += exy * le
                txz += exz * le
                tyz += eyz * le
            for f in range(faces.shape[0]):
                i = faces[f, 0]
                j = faces[f, 1]
                k = faces[f, 2]
                ax = rt[i, 0]
                ay = rt[i, 1]
                az = rt[i, 2]
                w = _omega(ax, ay, az, rt[i, 3], rt[j, 0], rt[j, 1], rt[j, 2], rt[j, 3], rt[k, 0], rt[k, 1], rt[k, 2],
                           rt[k, 3])
                nx = face_normal[f, 0]
                ny = face_normal[f, 1]
                nz = face_normal[f, 2]
                nr = (nx * ax + ny * ay + nz * az) * w
                u -= (nx * ax + ny * ay + nz * az) * nr
                gx += nx * nr
                gy += ny * nr
                gz += nz * nr
                txx -= nx * nx * w
                tyy -= ny * ny * w
                tzz -= nz * nz * w
                txy -= nx * ny * w
                txz -= nx * nz * w
                tyz -= ny * nz * w
                om += w
            out[p, 0] = 0.5 * grho * u
            out[p, 1] = grho * gx
            out[p, 2] = grho * gy
            out[p, 3] = grho * gz
            out[p, 4] = grho * txx
            out[p, 5] = grho * tyy
            out[p, 6] = grho * tzz
            out[p, 7] = grho * txy
            out[p, 8] = grho * txz
            out[p, 9] = grho * tyz
            out[p, 10] = om


_polyf = polyhedron_field.cpu


@cpu_jit(parallel=True)
def eval_polyhedron_points_rowwise(points, verts, edges, edge_dyad, edge_length, faces, face_normal, grho, out):
    """Bulk evaluation through the scratch-free per-point kernel :data:`polyhedron_field` (the one
    the gravity system runs per row on CPU and GPU); out shape (n, 11). For benchmarks and tests."""
    for p in prange(points.shape[0]):
        r = _polyf(points[p, 0], points[p, 1], points[p, 2], verts, edges, edge_dyad, edge_length, faces,
                   face_normal, grho)
        for k in range(11):
            out[p, k] = r[k]


# ================================================================================================
# host-side evaluation (numpy in, numpy out)
# ================================================================================================


def _gradient_from6(t6: np.ndarray) -> np.ndarray:
    """(n, 6) (xx, yy, zz, xy, xz, yz) -> (n, 3, 3)."""
    out = np.empty((t6.shape[0], 3, 3))
    out[:, 0, 0], out[:, 1, 1], out[:, 2, 2] = t6[:, 0], t6[:, 1], t6[:, 2]
    out[:, 0, 1] = out[:, 1, 0] = t6[:, 3]
    out[:, 0, 2] = out[:, 2, 0] = t6[:, 4]
    out[:, 1, 2] = out[:, 2, 1] = t6[:, 5]
    return out


def _values(out: np.ndarray, single: bool, with_gradient: bool) -> FieldValues:
    grad = _gradient_from6(out[:, 4:10]) if with_gradient else None
    fv = FieldValues(out[:, 0].copy(), out[:, 1:4].copy(), grad)
    if single:
        return FieldValues(fv.potential[0], fv.acceleration[0], None if grad is None else grad[0])
    return fv


def _eval_point_mass(src, points) -> FieldValues:
    p, single = as_points(points)
    out = np.empty((p.shape[0], 10))
    eval_point_mass_points(p, *src.kernel_params(), out)
    return _values(out, single, True)


def _eval_ellipsoid(src, points) -> FieldValues:
    p, single = as_points(points)
    out = np.empty((p.shape[0], 10))
    eval_ellipsoid_points(p, *src.kernel_params(), out)
    return _values(out, single, True)


def _polyhedron_raw(src, points) -> tuple[np.ndarray, bool]:
    p, single = as_points(points)
    out = np.empty((p.shape[0], 11))
    eval_polyhedron_points(p, *src.kernel_params(), out)
    return out, single


def _eval_polyhedron(src, points) -> FieldValues:
    out, single = _polyhedron_raw(src, points)
    return _values(out, single, True)


def _eval_voxel(src, points) -> FieldValues:
    p, single = as_points(points)
    out = np.empty((p.shape[0], 4))
    eval_voxel_points(p, *src.kernel_params(), out)
    if single:
        return FieldValues(out[0, 0], out[0, 1:4].copy(), None)
    return FieldValues(out[:, 0].copy(), out[:, 1:4].copy(), None)


def _eval_linearized(src, points) -> FieldValues:
    p, single = as_points(points)
    out = np.empty((p.shape[0], 4))
    eval_linearized_points(p, *src.kernel_params(), out)
    grad = np.broadcast_to(src.gradient0, (p.shape[0], 3, 3)).copy()
    if single:
        return FieldValues(out[0, 0], out[0, 1:4].copy(), grad[0])
    return FieldValues(out[:, 0].copy(), out[:, 1:4].copy(), grad)


@cpu_parallel_points
def eval_field_points(points, ga, out):
    """``out[p] = (U, g)`` of any source packed by :func:`gravity_args`, through the one dispatch
    the systems use (:data:`gravity_at`); out shape (n, 4)."""
    for p in prange(points.shape[0]):
        r = _gravity_at_cpu(ga, points[p, 0], points[p, 1], points[p, 2])
        for k in range(4):
            out[p, k] = r[k]


def _eval_harmonics(src, points) -> FieldValues:
    p, single = as_points(points)
    out = np.empty((p.shape[0], 4))
    eval_field_points(p, gravity_args(src), out)
    if single:
        return FieldValues(out[0, 0], out[0, 1:4].copy(), None)
    return FieldValues(out[:, 0].copy(), out[:, 1:4].copy(), None)


#: source kind -> host evaluator.
_EVALUATORS = {"point_mass": _eval_point_mass, "ellipsoid": _eval_ellipsoid, "polyhedron": _eval_polyhedron,
               "voxel": _eval_voxel, "linearized": _eval_linearized, "harmonics": _eval_harmonics}


def evaluate(source: GravitySource, points) -> FieldValues:
    """U, g (and Γ where the source defines it: not the voxel field nor spherical harmonics) of
    ``source`` at ``points`` [m],
    shape (3,) or (n, 3), field frame."""
    fn = _EVALUATORS.get(getattr(source, "kind", None)) if isinstance(source, GravitySource) else None
    if fn is None:
        raise InputError("gravity source", type(source).__name__,
                         "must be a components.gravity source (PointMass, Ellipsoid, Polyhedron, VoxelField, "
                         "LinearizedGravity, SphericalHarmonics)")
    return fn(source, points)


def acceleration(source: GravitySource, points) -> np.ndarray:
    """g [m/s²] of ``source`` at ``points`` [m], field frame."""
    return evaluate(source, points).acceleration


def potential(source: GravitySource, points) -> np.ndarray:
    """U [m²/s²] of ``source`` at ``points`` [m], field frame."""
    return evaluate(source, points).potential


def _polyhedron(poly) -> Polyhedron:
    if not isinstance(poly, Polyhedron):
        raise InputError("polyhedron", type(poly).__name__, "must be a components.gravity.Polyhedron")
    return poly


def solid_angle(poly: Polyhedron, points) -> np.ndarray:
    """Σ_f ω_f [sr] of a :class:`~components.gravity.Polyhedron` at ``points``: 4π inside, 2π on a
    facet, 0 outside."""
    out, single = _polyhedron_raw(_polyhedron(poly), points)
    return out[0, 10] if single else out[:, 10].copy()


def contains(poly: Polyhedron, points) -> np.ndarray:
    """True where the point is inside the polyhedron (solid angle > 2π, i.e. ∇²U = −4πGρ)."""
    return solid_angle(poly, points) > 2.0 * math.pi


def linearize(source: GravitySource, x0, *, tol: float = 1e-3) -> LinearizedGravity:
    """The :class:`~components.gravity.LinearizedGravity` of ``source`` about ``x0`` (seed 004 eq 2.43).

    U0, g0 and Γ0 are ``source``'s at x0; the validity radius needs the third-derivative tensor
    T = ∇Γ at x0, taken by central differences of Γ with steps ``1e-3 × the distance from x0 to the
    source's centre of mass`` (the class docstring gives the radius).

    Args:
        source: the exact source to linearise (any source providing Γ: point mass, ellipsoid,
            polyhedron, or a linearised field).
        x0: reference point [m], field frame.
        tol: relative acceleration error that defines the validity radius.
    """
    p, single = as_points(x0, "LinearizedGravity.x0")
    if not single:
        raise InputError("LinearizedGravity.x0", np.shape(x0), "must be one point, shape (3,) [m]")
    tol = positive_number(tol, "LinearizedGravity.tol", "1")
    ref = evaluate(source, p[0])
    if ref.gradient is None:
        raise InputError("LinearizedGravity.source", type(source).__name__,
                         "must provide the gravity gradient (point mass, ellipsoid or polyhedron)")
    x0 = p[0].copy()
    com = np.array(source.center_of_mass)
    d = 1e-3 * max(float(np.linalg.norm(x0 - com)), 1e-9)
    steps = np.concatenate([x0 + d * np.eye(3), x0 - d * np.eye(3)])
    grads = evaluate(source, steps).gradient
    third = (grads[:3] - grads[3:]) / (2.0 * d)  # [k] = ∂Γ/∂x_k
    return LinearizedGravity(x0, float(ref.potential), np.array(ref.acceleration), np.array(ref.gradient),
                             third_norm=float(np.sqrt(np.sum(third * third))), mu=source.mu, center_of_mass=com,
                             tol=tol)
