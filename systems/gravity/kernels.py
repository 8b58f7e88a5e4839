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

Where the kernels live: the field of each source kind at one point is in
:mod:`systems.gravity.sources` (importable from here too); this module holds the dispatch over
kinds (:data:`gravity_at`), the bulk CPU evaluation and the numpy API.
"""

from __future__ import annotations

import math

import numpy as np
import numba
from numba import prange

from components.gravity import FieldValues, GravitySource, LinearizedGravity, Polyhedron, as_points
from ecs import record, row_layout
from ecs.errors import InputError, positive_number
from ecs.kernels import cpu_jit, cpu_parallel_points, dual
from ecs.terms import specialise
from systems.gravity.sources import (_harmonics_gradient, _psums, carlson_rd, carlson_rf, edge_log,
                                     ellipsoid_field, facet_angle, harmonics_field, harmonics_gradient,
                                     linearized_field, point_mass_field, polyhedron_field, quadrupole_field,
                                     trilinear4, voxel_field)

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
# the one dispatch over every source kind (every pipeline's gravity goes through it)
# ================================================================================================

GRAVITY_POINT_MASS = 0
GRAVITY_ELLIPSOID = 1
GRAVITY_POLYHEDRON = 2
GRAVITY_VOXEL = 3
GRAVITY_LINEARIZED = 4
GRAVITY_HARMONICS = 5
GRAVITY_USER = 6
#: source ``kind`` -> kernel code of :data:`gravity_at`.
GRAVITY_KINDS = {"point_mass": GRAVITY_POINT_MASS, "ellipsoid": GRAVITY_ELLIPSOID, "polyhedron": GRAVITY_POLYHEDRON,
                 "voxel": GRAVITY_VOXEL, "linearized": GRAVITY_LINEARIZED, "harmonics": GRAVITY_HARMONICS,
                 "user": GRAVITY_USER}

#: The kernel arguments of one gravity source (:func:`gravity_args`), one type for every kind.
GravityArgs = record("GravityArgs", __name__, {
    "kind": "the source kind's kernel code (int64, GRAVITY_KINDS)",
    "scalars": "float64 (16,): the kind's scalar parameters at the named slots below (PM_*, ELL_*, POLY_*, VOX_*, "
               "LIN_*, HARM_*)",
    "grid": "float64 (nx, ny, nz, 4): the voxel grid (gx, gy, gz, U), or the spherical-harmonic coefficients "
            "[N+1, N+1, 2, 1] (C, S); (1, 1, 1, 4) zeros otherwise",
    "vertices": "polyhedron vertices [nv, 3] [m]",
    "edges": "polyhedron edges [ne, 2] (int64)",
    "edge_dyads": "polyhedron edge dyads [ne, 6] (xx, yy, zz, xy, xz, yz)",
    "edge_lengths": "polyhedron edge lengths [ne] [m]; a UserField's parameters",
    "faces": "polyhedron faces [nf, 3] (int64)",
    "face_normals": "polyhedron unit outward face normals [nf, 3]"},
    "One gravity source as every field kernel takes it (systems.gravity.kernels.gravity_at): unused arrays "
    "are dummies, so one compiled kernel serves every kind.")

# GravityArgs.scalars, slot by slot for each kind: gravity_args writes them from the source's
# kernel_params, the kind's adaptor below reads them (numpy int64 offsets: see ecs.kernels.dual_call)
_i = np.int64
_XYZ = (("X", 1, "x [m]"), ("Y", 1, "y [m]"), ("Z", 1, "z [m]"))
POINT_MASS_SCALARS = row_layout("point-mass gravity scalars", _XYZ + (("MU", 1, "μ [m³/s²]"),))
ELLIPSOID_SCALARS = row_layout("ellipsoid gravity scalars", (
    ("A2", 1, "a² [m²]"), ("B2", 1, "b² [m²]"), ("C2", 1, "c² [m²]"), ("MU", 1, "μ [m³/s²]")))
POLYHEDRON_SCALARS = row_layout("polyhedron gravity scalars", (("GRHO", 1, "Gρ [1/s²]"),))
VOXEL_SCALARS = row_layout("voxel gravity scalars", (
    ("OX", 1, "grid origin x [m]"), ("OY", 1, "grid origin y [m]"), ("OZ", 1, "grid origin z [m]"),
    ("H", 1, "grid spacing [m]"),
    ("CX", 1, "far field: CoM x [m]"), ("CY", 1, "CoM y [m]"), ("CZ", 1, "CoM z [m]"), ("MU", 1, "μ [m³/s²]"),
    ("QXX", 1, "G Q, xx [m⁵/s²]"), ("QYY", 1, "G Q, yy"), ("QZZ", 1, "G Q, zz"), ("QXY", 1, "G Q, xy"),
    ("QXZ", 1, "G Q, xz"), ("QYZ", 1, "G Q, yz"),
    ("PERTURBATION", 1, "1.0: the grid holds g − g_pm (\"dg\")")))
LINEARIZED_SCALARS = row_layout("linearised gravity scalars", _XYZ + (
    ("U", 1, "U0 [m²/s²]"), ("GX", 1, "g0 x [m/s²]"), ("GY", 1, "g0 y [m/s²]"), ("GZ", 1, "g0 z [m/s²]"),
    ("TXX", 1, "Γ0 xx [1/s²]"), ("TYY", 1, "Γ0 yy"), ("TZZ", 1, "Γ0 zz"), ("TXY", 1, "Γ0 xy"),
    ("TXZ", 1, "Γ0 xz"), ("TYZ", 1, "Γ0 yz")))
HARMONICS_SCALARS = row_layout("spherical-harmonic gravity scalars", (
    ("MU", 1, "μ [m³/s²]"), ("RADIUS", 1, "reference radius [m]"), ("DEGREE", 1, "degree N")))
#: the length of GravityArgs.scalars: the longest kind's
GRAVITY_SCALARS = 16
PM_X, PM_Y, PM_Z, PM_MU = POINT_MASS_SCALARS.offsets("X Y Z MU")
ELL_A2, ELL_B2, ELL_C2, ELL_MU = ELLIPSOID_SCALARS.offsets("A2 B2 C2 MU")
(POLY_GRHO,) = POLYHEDRON_SCALARS.offsets("GRHO")
(VOX_OX, VOX_OY, VOX_OZ, VOX_H, VOX_CX, VOX_CY, VOX_CZ, VOX_MU, VOX_QXX, VOX_QYY, VOX_QZZ, VOX_QXY, VOX_QXZ,
 VOX_QYZ, VOX_PERTURBATION) = VOXEL_SCALARS.offsets("OX OY OZ H CX CY CZ MU QXX QYY QZZ QXY QXZ QYZ PERTURBATION")
(LIN_X, LIN_Y, LIN_Z, LIN_U, LIN_GX, LIN_GY, LIN_GZ, LIN_TXX, LIN_TYY, LIN_TZZ, LIN_TXY, LIN_TXZ,
 LIN_TYZ) = LINEARIZED_SCALARS.offsets("X Y Z U GX GY GZ TXX TYY TZZ TXY TXZ TYZ")
HARM_MU, HARM_RADIUS, HARM_DEGREE = HARMONICS_SCALARS.offsets("MU RADIUS DEGREE")
if max(lay.size for lay in (POINT_MASS_SCALARS, ELLIPSOID_SCALARS, POLYHEDRON_SCALARS, VOXEL_SCALARS,
                            LINEARIZED_SCALARS, HARMONICS_SCALARS)) > GRAVITY_SCALARS:
    raise ImportError("a gravity kind declares more scalars than GravityArgs.scalars holds (GRAVITY_SCALARS)")

_pmf_at = point_mass_field.cpu
_ell_at = ellipsoid_field.cpu
_poly_at = polyhedron_field.cpu
_vox_at = voxel_field.cpu
_lin_at = linearized_field.cpu
_harm_at = harmonics_field.cpu


def _point_mass_gravity(ga, x, y, z):
    """:data:`gravity_at` of a point mass (``ga`` a :data:`GravityArgs`)."""
    gs = ga.scalars
    u, gx, gy, gz, _, _, _, _, _, _ = _pmf_at(x, y, z, gs[PM_X], gs[PM_Y], gs[PM_Z], gs[PM_MU])
    return u, gx, gy, gz


def _ellipsoid_gravity(ga, x, y, z):
    """:data:`gravity_at` of a homogeneous ellipsoid."""
    gs = ga.scalars
    u, gx, gy, gz, _, _, _, _, _, _ = _ell_at(x, y, z, gs[ELL_A2], gs[ELL_B2], gs[ELL_C2], gs[ELL_MU])
    return u, gx, gy, gz


def _polyhedron_gravity(ga, x, y, z):
    """:data:`gravity_at` of a homogeneous polyhedron."""
    u, gx, gy, gz, _, _, _, _, _, _, _ = _poly_at(x, y, z, ga.vertices, ga.edges, ga.edge_dyads, ga.edge_lengths,
                                                  ga.faces, ga.face_normals, ga.scalars[POLY_GRHO])
    return u, gx, gy, gz


def _voxel_gravity(ga, x, y, z):
    """:data:`gravity_at` of a voxelised field."""
    gs = ga.scalars
    far = (gs[VOX_CX], gs[VOX_CY], gs[VOX_CZ], gs[VOX_MU], gs[VOX_QXX], gs[VOX_QYY], gs[VOX_QZZ], gs[VOX_QXY],
           gs[VOX_QXZ], gs[VOX_QYZ])
    u, gx, gy, gz = _vox_at(x, y, z, ga.grid, (gs[VOX_OX], gs[VOX_OY], gs[VOX_OZ], gs[VOX_H]), far,
                            gs[VOX_PERTURBATION] != 0.0)
    return u, gx, gy, gz


def _linearized_gravity(ga, x, y, z):
    """:data:`gravity_at` of a field linearised about a point."""
    gs = ga.scalars
    u, gx, gy, gz = _lin_at(x, y, z, gs[LIN_X], gs[LIN_Y], gs[LIN_Z], gs[LIN_U], gs[LIN_GX], gs[LIN_GY],
                            gs[LIN_GZ], gs[LIN_TXX], gs[LIN_TYY], gs[LIN_TZZ], gs[LIN_TXY], gs[LIN_TXZ], gs[LIN_TYZ])
    return u, gx, gy, gz


def _harmonics_gravity(ga, x, y, z):
    """:data:`gravity_at` of a spherical-harmonic field."""
    gs = ga.scalars
    return _harm_at(x, y, z, gs[HARM_MU], gs[HARM_RADIUS], int(gs[HARM_DEGREE]), ga.grid)


@numba.njit(cache=True, inline="always")
def user_field_none(p, x, y, z):
    """The field of a :class:`components.gravity.UserField` before a pipeline links the user's kernel
    in its place (:func:`ecs.terms.specialise`): NaN, so a row that reaches it unlinked fails loudly."""
    return math.nan, math.nan, math.nan, math.nan


_user_field = user_field_none


def _user_gravity(ga, x, y, z):
    """:data:`gravity_at` of a :class:`components.gravity.UserField`: its kernel on its parameters
    (``ga.edge_lengths``, :func:`gravity_args`)."""
    return _user_field(ga.edge_lengths, x, y, z)


#: :data:`gravity_at` of one source kind, by kernel code: what a pipeline that knows its source at
#: bind calls instead of the dispatch over every kind (:func:`ecs.terms.specialise`), so that it
#: compiles only its own source's field.
GRAVITY_AT_KIND = {GRAVITY_POINT_MASS: dual(_point_mass_gravity, inline=False),
                   GRAVITY_ELLIPSOID: dual(_ellipsoid_gravity, inline=False),
                   GRAVITY_POLYHEDRON: dual(_polyhedron_gravity, inline=False),
                   GRAVITY_VOXEL: dual(_voxel_gravity, inline=False),
                   GRAVITY_LINEARIZED: dual(_linearized_gravity, inline=False),
                   GRAVITY_HARMONICS: dual(_harmonics_gravity, inline=False),
                   GRAVITY_USER: dual(_user_gravity, inline=False)}
_g_point = GRAVITY_AT_KIND[GRAVITY_POINT_MASS].cpu
_g_ellipsoid = GRAVITY_AT_KIND[GRAVITY_ELLIPSOID].cpu
_g_polyhedron = GRAVITY_AT_KIND[GRAVITY_POLYHEDRON].cpu
_g_voxel = GRAVITY_AT_KIND[GRAVITY_VOXEL].cpu
_g_linearized = GRAVITY_AT_KIND[GRAVITY_LINEARIZED].cpu
_g_harmonics = GRAVITY_AT_KIND[GRAVITY_HARMONICS].cpu
_g_user = GRAVITY_AT_KIND[GRAVITY_USER].cpu


def gravity_at_for(source: GravitySource):
    """The :data:`gravity_at` of ``source``'s kind alone (CPU dispatcher; its GPU twin is built from
    it): :data:`GRAVITY_AT_KIND`'s kernel, and for a :class:`components.gravity.UserField` a copy of
    it linked against the user's kernel (:func:`ecs.terms.specialise`). A pipeline swaps it in for
    :data:`gravity_at` to compile only its source's field."""
    kind = GRAVITY_KINDS.get(getattr(source, "kind", None))
    if kind is None:
        raise InputError("gravity source", type(source).__name__,
                         f"must be one of the components.gravity sources ({', '.join(GRAVITY_KINDS)})")
    k = GRAVITY_AT_KIND[kind].cpu
    if kind == GRAVITY_USER:
        k = specialise({"user_gravity": k}, {user_field_none: source.kernel})["user_gravity"]
    return k


def _gravity_at(ga, x, y, z):
    """``(U, gx, gy, gz)`` of a gravity source at (x, y, z) in its field frame.

    ``ga`` a :data:`GravityArgs` from :func:`gravity_args`: one signature for every source kind
    (unused arrays are dummies; the 4-D ``grid`` holds the voxel grid or the harmonic
    coefficients), so one compiled kernel serves point mass, ellipsoid,
    polyhedron, voxel field, linearised field and spherical harmonics (:data:`GRAVITY_AT_KIND`,
    one each). (A tenth array for the coefficients cost 7 % of deploy-cube's throughput, measured:
    every call passes the tuple.) The rigid-body gravity system (:mod:`systems.gravity.fields`)
    and the deployment kernels (:mod:`systems.deployment.physics`) both evaluate gravity through it.
    """
    gkind = ga.kind
    if gkind == GRAVITY_POINT_MASS:
        return _g_point(ga, x, y, z)
    if gkind == GRAVITY_ELLIPSOID:
        return _g_ellipsoid(ga, x, y, z)
    if gkind == GRAVITY_POLYHEDRON:
        return _g_polyhedron(ga, x, y, z)
    if gkind == GRAVITY_VOXEL:
        return _g_voxel(ga, x, y, z)
    if gkind == GRAVITY_HARMONICS:
        return _g_harmonics(ga, x, y, z)
    if gkind == GRAVITY_USER:
        return _g_user(ga, x, y, z)
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
    gkind = ga.kind
    gs = ga.scalars
    if gkind == GRAVITY_POINT_MASS:
        _, _, _, _, txx, tyy, tzz, txy, txz, tyz = _pmf_at(x, y, z, gs[PM_X], gs[PM_Y], gs[PM_Z], gs[PM_MU])
        return txx, tyy, tzz, txy, txz, tyz
    if gkind == GRAVITY_ELLIPSOID:
        _, _, _, _, txx, tyy, tzz, txy, txz, tyz = _ell_at(x, y, z, gs[ELL_A2], gs[ELL_B2], gs[ELL_C2], gs[ELL_MU])
        return txx, tyy, tzz, txy, txz, tyz
    if gkind == GRAVITY_POLYHEDRON:
        _, _, _, _, txx, tyy, tzz, txy, txz, tyz, _ = _poly_at(x, y, z, ga.vertices, ga.edges, ga.edge_dyads,
                                                               ga.edge_lengths, ga.faces, ga.face_normals,
                                                               gs[POLY_GRHO])
        return txx, tyy, tzz, txy, txz, tyz
    if gkind == GRAVITY_LINEARIZED:
        return gs[LIN_TXX], gs[LIN_TYY], gs[LIN_TZZ], gs[LIN_TXY], gs[LIN_TXZ], gs[LIN_TYZ]
    if gkind == GRAVITY_HARMONICS:
        return _harm_grad(x, y, z, gs[HARM_MU], gs[HARM_RADIUS], int(gs[HARM_DEGREE]), ga.grid)
    return math.nan, math.nan, math.nan, math.nan, math.nan, math.nan


gravity_gradient_at = dual(_gravity_gradient_at, inline=False)


def gravity_args(source: GravitySource) -> GravityArgs:
    """``source`` as :data:`gravity_at` and every field kernel take it: a :data:`GravityArgs`, its
    scalars at the kind's named slots."""
    kind = GRAVITY_KINDS.get(getattr(source, "kind", None))
    if kind is None:
        raise InputError("gravity source", type(source).__name__,
                         f"must be one of the components.gravity sources ({', '.join(GRAVITY_KINDS)})")
    p = source.kernel_params()
    gs = np.zeros(GRAVITY_SCALARS)
    vox = np.zeros((1, 1, 1, 4))
    pv, pe, ped, pel = np.zeros((1, 3)), np.zeros((1, 2), np.int64), np.zeros((1, 6)), np.zeros(1)
    pf, pfn = np.zeros((1, 3), np.int64), np.zeros((1, 3))
    if kind == GRAVITY_POINT_MASS:
        gs[[PM_X, PM_Y, PM_Z, PM_MU]] = p
    elif kind == GRAVITY_ELLIPSOID:
        gs[[ELL_A2, ELL_B2, ELL_C2, ELL_MU]] = p
    elif kind == GRAVITY_LINEARIZED:
        gs[[LIN_X, LIN_Y, LIN_Z, LIN_U, LIN_GX, LIN_GY, LIN_GZ, LIN_TXX, LIN_TYY, LIN_TZZ, LIN_TXY, LIN_TXZ,
            LIN_TYZ]] = p
    elif kind == GRAVITY_POLYHEDRON:
        pv, pe, ped, pel, pf, pfn = (np.ascontiguousarray(a) for a in p[:6])
        gs[POLY_GRHO] = p[6]
    elif kind == GRAVITY_HARMONICS:
        gs[[HARM_MU, HARM_RADIUS, HARM_DEGREE]] = p[:3]
        vox = np.ascontiguousarray(p[3][..., None])       # [N+1, N+1, 2, 1]
    elif kind == GRAVITY_USER:
        pel = np.ascontiguousarray(p[0], dtype=np.float64)  # the user's parameters, ga.edge_lengths
    else:
        values, grid, far, perturbation = source.kernel_records()
        vox = np.ascontiguousarray(values)
        gs[[VOX_OX, VOX_OY, VOX_OZ, VOX_H]] = grid
        gs[[VOX_CX, VOX_CY, VOX_CZ, VOX_MU, VOX_QXX, VOX_QYY, VOX_QZZ, VOX_QXY, VOX_QXZ, VOX_QYZ]] = far
        gs[VOX_PERTURBATION] = float(perturbation)
    return GravityArgs(np.int64(kind), gs, vox, pv, pe.astype(np.int64), ped, pel, pf.astype(np.int64), pfn)

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
def eval_voxel_points(points, values, grid, far, perturbation, out):
    """``out[p] = (U, g)`` of a voxel field (:func:`systems.gravity.sources.voxel_field`'s arguments,
    :meth:`components.gravity.VoxelField.kernel_records`); out shape (n, 4)."""
    for p in prange(points.shape[0]):
        r = _vox(points[p, 0], points[p, 1], points[p, 2], values, grid, far, perturbation)
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

    The sums of :data:`polyhedron_field` (one kernel, :data:`systems.gravity.sources.polyhedron_sums`),
    but each thread first tabulates ``P_v − x`` and
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
            u, gx, gy, gz, txx, tyy, tzz, txy, txz, tyz, om = _psums(x, y, z, verts, rt, edges, edge_dyad,
                                                                     edge_length, faces, face_normal)
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
    eval_voxel_points(p, *src.kernel_records(), out)
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


def _eval_user(src, points) -> FieldValues:
    p, single = as_points(points)
    out = np.empty((p.shape[0], 4))
    ev = specialise({"serial": eval_field_points.serial}, {gravity_at.cpu: gravity_at_for(src)})
    ev["serial"](p, gravity_args(src), out)
    if single:
        return FieldValues(out[0, 0], out[0, 1:4].copy(), None)
    return FieldValues(out[:, 0].copy(), out[:, 1:4].copy(), None)


#: source kind -> host evaluator.
_EVALUATORS = {"point_mass": _eval_point_mass, "ellipsoid": _eval_ellipsoid, "polyhedron": _eval_polyhedron,
               "voxel": _eval_voxel, "linearized": _eval_linearized, "harmonics": _eval_harmonics,
               "user": _eval_user}


def evaluate(source: GravitySource, points) -> FieldValues:
    """U, g (and Γ where the source defines it: not the voxel field nor spherical harmonics) of
    ``source`` at ``points`` [m],
    shape (3,) or (n, 3), field frame."""
    fn = _EVALUATORS.get(getattr(source, "kind", None)) if isinstance(source, GravitySource) else None
    if fn is None:
        raise InputError("gravity source", type(source).__name__,
                         "must be a components.gravity source (PointMass, Ellipsoid, Polyhedron, VoxelField, "
                         "LinearizedGravity, SphericalHarmonics, UserField)")
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
