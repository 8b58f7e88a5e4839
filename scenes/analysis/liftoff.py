"""Lift-off velocity on a rotating small body, and the surface curvature it needs (seed 004 chapter 3).

The lift-off velocity V_θ is the tangential surface speed, relative to the rotating target, at which a
particle moving along the surface in direction b̂_θ stops needing a normal force: beyond it the
particle leaves the surface (seed 004 §3.1). All inputs are SI and expressed in the **target frame**
(the body-fixed frame rotating with Ω about the target's centre of mass, as in :mod:`components.terrain`).

Formulas (every function is vectorised numpy: leading axes broadcast, vectors on the last axis)
------------------------------------------------------------------------------------------------

Write ``X = Ω×(Ω×P) - a_E`` (minus the gravity-plus-centrifugal acceleration at the departure point
P; ``[Ω][Ω]P - a_E`` in the seed's tensor notation), ``b̂_s = b̂_ρ × b̂_θ`` and, for curvature
κ = 1/ρ of the departure-plane section (positive where the surface is convex):

* **General expression** (eq 3.15; eq 3.22 with ρ* ≈ ρ and P + R ≈ P for an object much smaller
  than ρ)::

      V_θ = ± sqrt(ρ² (b̂_s·Ω)² + ρ b̂_ρ·X) - ρ b̂_s·Ω

  The "+" root is lift-off along +b̂_θ, the "-" root along -b̂_θ; they differ by the Coriolis term
  -ρ b̂_s·Ω (prograde, along the surface rotational velocity, is the slower way out).
  :func:`liftoff_velocity` evaluates it in the rationalised form ``c/(w + sqrt(w² + κc))`` and
  ``-c/(sqrt(w² + κc) - w)`` (w = b̂_s·Ω, c = b̂_ρ·X), which is regular at κ = 0: one code path
  covers the curved (κ > 0), plane (κ = 0) and concave (κ < 0) cases and is their exact limit.
* **Curved surface** (§3.1.3, :func:`liftoff_velocity_curved`): κ from the shape operator or the
  principal curvatures and directions (Euler's theorem, eq 3.35) in the direction of motion, and
  the departure plane chosen by ``departure_plane`` (below).
* **Ridge** (§3.1.4, :func:`liftoff_velocity_ridge`): ρ → 0 so ρ* = R (the object's radius) and
  b̂_ρ = N: eq 3.23, "+" root only; the reduced form V_R = sqrt(-R N·a_E) of eq 3.25.
* **Plane** (§3.1.5, :func:`liftoff_velocity_plane`): ρ → ∞, eq 3.28
  ``V_θ = N·X / (2 b̂_s·Ω)``: one root, along +b̂_θ when b̂_s·Ω > 0, along -b̂_θ (negative value)
  when b̂_s·Ω < 0, none when b̂_s·Ω = 0 (Coriolis has no normal component).
* **Concave region** (§3.1.6): eq 3.30 is eq 3.22 with the signed curvature negative. Both roots then
  have the sign of b̂_s·Ω: lift-off happens only along that direction and only for speeds inside the
  window between them (:func:`liftoff_window_concave`); the window exists for |ρ| ≥ ρ_min of eq 3.31
  (:func:`concave_min_radius`), where it closes at the velocity of eq 3.32
  (:func:`concave_limit_velocity`). The seed only gives the limits; the window's upper end (above
  which the particle is pressed back onto the surface, "the trajectory becomes flatter again") is
  the second root of the same quadratic.

Return convention: every "velocity" is the signed component along b̂_θ. ``v_plus`` is the lift-off
velocity along +b̂_θ (> 0), ``v_minus`` along -b̂_θ (< 0). **NaN** means no lift-off velocity
exists: along that direction the particle never leaves the surface (plane moving against the surface
rotation, concave section, concave radius below ρ_min), or the static contact condition of §3.1.1
``b̂_ρ·X > 0`` fails (the particle at rest already lifts off, or ``b̂_ρ`` points away from the
surface), or the inputs are degenerate (a zero-length direction).

Departure plane (§3.1.1, §3.2.1, Meusnier's theorem eq 3.36)
-----------------------------------------------------------

``departure_plane="normal"`` (default) takes the normal section: b̂_ρ = N and κ = the normal
curvature κ_n(b̂_θ). This is the exact lift-off condition of a point particle: the surface can only
push along N, and any surface curve with tangent b̂_θ has normal acceleration κ_n V² whatever its
geodesic curvature, so N·(required normal force) = -κ_n V² - 2V Ω·(N×b̂_θ) + N·X, whose zeros are
eq 3.22 with b̂_ρ = N. It is also what the seed's sphere results use (§3.3.1: b̂_ρ ∥ a_E ∥ N,
eqs 3.68–3.73). ``"external"`` is the seed's general construction: the plane spanned by b̂_θ and
a_E, b̂_ρ the unit vector of that plane normal to b̂_θ pointing against a_E, and the section's
curvature κ_n/cos δ by Meusnier's theorem (cos δ = b̂_ρ·N); ``"effective"`` spans it with the
gravity-plus-centrifugal acceleration a_E - Ω×(Ω×P) ("including rotation effects", §3.1.3). The
three agree wherever that acceleration is normal to the surface and differ at first order in its
tangential part elsewhere: on a 200 × 100 × 50 m ellipsoid at a point where point-mass gravity is
40° off the normal, "external" gives 0.419 / -0.528 m/s against "normal"'s 0.448 / -0.495 m/s, and
free flight from that point (tests/test_liftoff.py) confirms the "normal" values to 1e-7.

Curvature (§3.2)
----------------

Sign convention: positive = convex (centre of curvature inside the body, outward normal N).

* :func:`sdf_curvature` — from a signed distance field d: the shape operator of the level set
  ``S = P ∇∇d P / |∇d|`` with ``P = I - N Nᵀ``, ``N = ∇d/|∇d|`` (the Weingarten map of an implicit
  surface); principal curvatures and directions are its tangent eigenpairs, H and K follow by eq
  3.33. For an :class:`components.terrain.AnalyticShape` the Hessian is the central difference of
  the exact gradients of :func:`systems.terrain.sdf.eval_shape_points` (no analytic Hessian exists in
  :mod:`systems.terrain.sdf`). For an :class:`components.terrain.SDFGrid` the trilinear Hessian of eq 2.20
  (:func:`systems.terrain.sdf.sample_grid_hessian`) is not usable: the trilinear interpolant is linear along
  each axis inside a cell, so its Hessian has a zero diagonal and a sphere's curvature comes out
  between 0 and 1/(2R). The gradient of eq 2.19 is only first-order accurate, which leaves an O(h/R)
  error in |∇d| (2 % at 29 cells per radius). The grid path therefore takes second-order central
  differences of the node values (gradient and Hessian at the eight corners of the cell), then
  interpolates those trilinearly: error O(h²), 0.05 % at 29 cells per radius on a sphere.
  Points are first moved onto the zero level set along the normal (``project=True``), since the
  level sets of a distance field through off-surface points have curvature κ/(1 + κ d).
* :func:`mesh_curvature` — Meyer, Desbrun, Schröder & Barr (2003) at the vertices of a closed
  triangle mesh, eqs 3.59–3.67: mixed Voronoi area (3.59–3.60), angle-defect Gaussian curvature
  (3.61), cotangent mean-curvature normal (3.62–3.63), principal curvatures from H and K (3.64), and
  principal directions from the least-squares curvature tensor (3.65–3.67).

Misprints and deviations (the corrected forms are implemented)
--------------------------------------------------------------

* Eq 3.62 as extracted reads ``||P_i - P_j||`` (a length) inside the mean-curvature-normal sum; the sum must run
  over the edge **vectors** ``(P_i - P_j)`` (Meyer et al. eq. 8), otherwise eq 3.63's N = H/|H| has
  no direction. Eq 3.63 also takes H = |H|/2, which loses the sign of concave vertices and is
  undefined where H = 0; here N is the angle-weighted vertex normal and H = (H·N)/2, signed.
* Eq 3.59's obtuse-triangle cases (garbled in the extracted text) are Meyer et al.'s Fig. 4:
  area(T)/2 = ‖b × c‖/4 when the angle at the vertex is obtuse, area(T)/4 = ‖b × c‖/8 when another
  angle is.
* Eqs 3.30–3.32 (§3.1.6) measure b̂_ρ from the centre of curvature, which for a concave surface lies
  outside the body, so there b̂_ρ = -N; with the outward normal used here eq 3.31 reads
  ρ_min = N·X/(N×b̂_θ·Ω)² and eq 3.32 V = N·X/(N×b̂_θ·Ω), the same numbers.
* Eq 3.65 is fitted with the trace of B fixed to 2H (the mean curvature already known from eq 3.63,
  leaving two unknowns) and with the weights of eq 3.67 clipped at zero (an obtuse triangle's cotangent is
  negative; a negative least-squares weight rewards misfit). As the seed says, the eigenvalues of B
  are replaced by eq 3.64's; B only gives the directions.
* Eq 3.71 (sphere) as extracted reads ``-ρ Ω² sin η cos² φ``; from eq 3.69 with eq 3.70 the radicand
  is ``-ρ² Ω² sin² η cos² φ - ρ g`` (:func:`sphere_liftoff_speed`). With the printed Ceres inputs
  (ρ = 473 km, g = -0.29 m/s², Ω = 1.923e-4 rad/s) eqs 3.72–3.73 give +279.4 / -461.3 m/s at the
  equator and ±370.4 m/s at the poles, the seed's rounded +279 / -461 / ±370 m/s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from components.gravity import GravitySource
from components.mesh import check_closed_mesh
from components.terrain import AnalyticShape, SDFGrid
from ecs.errors import InputError
from systems.gravity.kernels import acceleration

__all__ = [
    "DEPARTURE_PLANES",
    "LiftoffMap",
    "SurfaceCurvature",
    "compass_directions",
    "concave_min_radius",
    "concave_limit_velocity",
    "liftoff_map",
    "liftoff_velocity",
    "liftoff_velocity_curved",
    "liftoff_velocity_general",
    "liftoff_velocity_plane",
    "liftoff_velocity_ridge",
    "liftoff_window_concave",
    "mesh_curvature",
    "principal_curvatures",
    "sdf_curvature",
    "sphere_liftoff_speed",
    "sphere_liftoff_velocity",
]

#: Departure-plane constructions accepted by :func:`liftoff_velocity_curved` (module docstring).
DEPARTURE_PLANES = ("normal", "external", "effective")

#: Compass directions of :func:`compass_directions`, in the order returned (azimuth 0, 90, 180, 270°).
COMPASS = ("east", "north", "west", "south")


# ==================================================================================================
# input helpers
# ==================================================================================================


def _array(value, field: str, unit: str) -> np.ndarray:
    try:
        a = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(field, value, f"must be a number or an array of numbers [{unit}]") from None
    if not np.all(np.isfinite(a)):
        raise InputError(field, value if a.size <= 6 else f"array of shape {a.shape}",
                         f"must be finite (no NaN or inf) [{unit}]")
    return a


def _vectors(value, field: str, unit: str) -> np.ndarray:
    a = _array(value, field, unit)
    if a.ndim == 0 or a.shape[-1] != 3:
        raise InputError(field, f"array of shape {a.shape}", f"must have 3 components on the last axis [{unit}]")
    return a


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=-1)


def _unit(v: np.ndarray) -> np.ndarray:
    """v/|v|; NaN rows where |v| = 0."""
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0.0, v / np.where(n > 0.0, n, 1.0), np.nan)


def _tangent(normal: np.ndarray, direction: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unit normal and the unit projection of ``direction`` onto its tangent plane."""
    n = _unit(normal)
    t = direction - _dot(direction, n)[..., None] * n
    return n, _unit(t)


def _centrifugal_term(omega: np.ndarray, position: np.ndarray) -> np.ndarray:
    """Ω×(Ω×P) [m/s²] (minus the centrifugal acceleration)."""
    return np.cross(omega, np.cross(omega, position))


def _check_plane(departure_plane: str) -> str:
    if departure_plane not in DEPARTURE_PLANES:
        raise InputError("departure_plane", departure_plane, f"must be one of {', '.join(DEPARTURE_PLANES)}")
    return departure_plane


# ==================================================================================================
# the lift-off velocity (eqs 3.15-3.32)
# ==================================================================================================


def liftoff_velocity(*, curvature, omega_s, normal_load) -> tuple[np.ndarray, np.ndarray]:
    """Both roots of the lift-off condition, eqs 3.15/3.22 (κ > 0), 3.28 (κ = 0), 3.30 (κ < 0).

    The required normal acceleration ``f(V) = c - 2 w V - κ V²`` (eq 3.12 divided by ρ) vanishes at
    ``V = -ρ w ± sqrt(ρ² w² + ρ c)``, evaluated here as ``c/(w + s)`` and ``-c/(s - w)`` with
    ``s = sqrt(w² + κ c)`` so that κ → 0 is regular.

    Args:
        curvature: κ = 1/ρ of the departure-plane section [1/m], positive convex, negative concave,
            zero for a plane.
        omega_s: w = b̂_s·Ω [rad/s], b̂_s = b̂_ρ × b̂_θ.
        normal_load: c = b̂_ρ·(Ω×(Ω×P) - a_E) [m/s²]; > 0 for a particle resting on the surface.

    Returns:
        ``(v_plus, v_minus)`` [m/s], broadcast shape: the lift-off velocity along +b̂_θ (> 0) and
        along -b̂_θ (< 0); NaN where none exists in that direction (module docstring). On a concave
        section the returned value is the near end of the lift-off window.
    """
    k = _array(curvature, "curvature", "1/m")
    w = _array(omega_s, "omega_s", "rad/s")
    c = _array(normal_load, "normal_load", "m/s^2")
    k, w, c = np.broadcast_arrays(k, w, c)
    disc = w * w + k * c
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        s = np.where(k == 0.0, np.abs(w), np.sqrt(disc))
        vp = c / (w + s)
        vm = -c / (s - w)
    ok = (c > 0.0) & (disc >= 0.0)
    vp = np.where(ok & np.isfinite(vp) & (vp > 0.0), vp, np.nan)
    vm = np.where(ok & np.isfinite(vm) & (vm < 0.0), vm, np.nan)
    return vp, vm


def _roots_far(curvature, omega_s, normal_load) -> np.ndarray:
    """The far root ``c/(w - s)`` of the concave window (NaN unless κ < 0 and the window exists)."""
    k, w, c = np.broadcast_arrays(curvature, omega_s, normal_load)
    disc = w * w + k * c
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        s = np.sqrt(disc)
        far = np.where(w > 0.0, c / (w - s), c / (w + s))
    ok = (k < 0.0) & (c > 0.0) & (disc >= 0.0) & (w != 0.0)
    return np.where(ok & np.isfinite(far), far, np.nan)


def liftoff_velocity_general(*, radius_of_curvature, b_rho, b_theta, omega, position,
                             accel_external) -> tuple[np.ndarray, np.ndarray]:
    """The general expression, eq 3.15 (eq 3.22 for an object much smaller than ρ).

    Args:
        radius_of_curvature: ρ* [m] of the departure-plane section (eq 3.17; ≈ ρ for a small
            object, eq 3.19); ``inf`` for a plane, negative for a concave section (eq 3.30).
        b_rho: b̂_ρ, unit vector from the centre of curvature S towards the object [1], shape (..., 3).
        b_theta: b̂_θ, unit direction of motion, normal to b̂_ρ [1], shape (..., 3).
        omega: Ω, rotation rate of the target [rad/s], shape (..., 3), target frame.
        position: P + R, object centre of mass relative to the target's centre of mass [m] (≈ P).
        accel_external: a_E, external (gravity and other non-contact) acceleration [m/s²] at P + R.

    Returns:
        ``(v_plus, v_minus)`` [m/s] as in :func:`liftoff_velocity`.

    Raises:
        InputError: non-finite inputs, zero vectors, or b̂_θ not normal to b̂_ρ (|b̂_ρ·b̂_θ| > 1e-6).
    """
    rho = np.asarray(radius_of_curvature, dtype=np.float64)
    if np.any(np.isnan(rho)) or np.any(rho == 0.0):
        raise InputError("radius_of_curvature", radius_of_curvature, "must be nonzero, not NaN [m] (inf for a plane)")
    bp = _unit(_vectors(b_rho, "b_rho", "1"))
    bt = _unit(_vectors(b_theta, "b_theta", "1"))
    if np.any(~np.isfinite(bp)) or np.any(~np.isfinite(bt)):
        raise InputError("b_rho/b_theta", "a zero vector", "must be nonzero directions")
    if np.any(np.abs(_dot(bp, bt)) > 1e-6):
        raise InputError("b_theta", f"max |b_rho·b_theta| = {float(np.max(np.abs(_dot(bp, bt))))!r}",
                         "must be normal to b_rho (the departure direction is tangential)")
    om = _vectors(omega, "omega", "rad/s")
    p = _vectors(position, "position", "m")
    ae = _vectors(accel_external, "accel_external", "m/s^2")
    w = _dot(om, np.cross(bp, bt))
    c = _dot(bp, _centrifugal_term(om, p) - ae)
    with np.errstate(divide="ignore"):
        kappa = 1.0 / rho
    return liftoff_velocity(curvature=kappa, omega_s=w, normal_load=c)


def _shape_operator(shape_operator, principal_curvatures, principal_directions) -> np.ndarray:
    if shape_operator is not None:
        if principal_curvatures is not None or principal_directions is not None:
            raise InputError("shape_operator/principal_curvatures", "both given",
                             "give the shape operator or the principal curvatures and directions, not both")
        s = _array(shape_operator, "shape_operator", "1/m")
        if s.ndim < 2 or s.shape[-2:] != (3, 3):
            raise InputError("shape_operator", f"array of shape {s.shape}", "must have shape (..., 3, 3) [1/m]")
        return 0.5 * (s + np.swapaxes(s, -1, -2))
    if principal_curvatures is None or principal_directions is None:
        raise InputError("shape_operator/principal_curvatures", None,
                         "give shape_operator, or principal_curvatures and principal_directions")
    k = _array(principal_curvatures, "principal_curvatures", "1/m")
    d = _array(principal_directions, "principal_directions", "1")
    if k.ndim < 1 or k.shape[-1] != 2:
        raise InputError("principal_curvatures", f"array of shape {k.shape}", "must have shape (..., 2) [1/m]")
    if d.ndim < 2 or d.shape[-2:] != (2, 3):
        raise InputError("principal_directions", f"array of shape {d.shape}", "must have shape (..., 2, 3) [1]")
    d = _unit(d)
    return (k[..., 0, None, None] * d[..., 0, :, None] * d[..., 0, None, :]
            + k[..., 1, None, None] * d[..., 1, :, None] * d[..., 1, None, :])


def _departure(departure_plane, n, t, kappa_n, om, p, ae):
    """b̂_ρ, the section curvature κ and (w, c) of eq 3.22 for the chosen departure plane."""
    if departure_plane == "normal":
        bp, kappa = n, kappa_n
    else:
        a = ae if departure_plane == "external" else ae - _centrifugal_term(om, p)
        q = -(a - _dot(a, t)[..., None] * t)
        bp = _unit(q)
        cos_delta = _dot(bp, n)
        with np.errstate(invalid="ignore", divide="ignore"):
            kappa = np.where(cos_delta > 1e-12, kappa_n / np.where(cos_delta > 1e-12, cos_delta, 1.0), np.nan)
    w = _dot(om, np.cross(bp, t))
    c = _dot(bp, _centrifugal_term(om, p) - ae)
    return bp, kappa, w, c


def liftoff_velocity_curved(*, normal, direction, omega, position, accel_external, shape_operator=None,
                            principal_curvatures=None, principal_directions=None,
                            departure_plane: str = "normal") -> tuple[np.ndarray, np.ndarray]:
    """Lift-off from a curved surface (§3.1.3, eq 3.22) in a given direction of motion.

    The section curvature comes from the shape operator S (κ_n = b̂_θ·S·b̂_θ) or from the principal
    curvatures and directions (Euler's theorem, eq 3.35), then Meusnier's theorem (eq 3.36) for an
    oblique departure plane. Concave sections follow eq 3.30, flat ones eq 3.28.

    Args:
        normal: outward unit surface normal N at P [1], shape (..., 3), target frame.
        direction: direction of motion b̂_θ [1], shape (..., 3); projected onto the tangent plane
            and normalised.
        omega: Ω [rad/s], shape (..., 3), target frame.
        position: departure point P relative to the target's centre of mass [m], shape (..., 3).
        accel_external: a_E at P [m/s²] (gravity plus any other non-contact acceleration), (..., 3).
        shape_operator: S [1/m], shape (..., 3, 3), positive convex (:class:`SurfaceCurvature`).
        principal_curvatures: (κ_1, κ_2) [1/m], shape (..., 2), instead of ``shape_operator``.
        principal_directions: their unit tangent directions [1], shape (..., 2, 3).
        departure_plane: ``"normal"``, ``"external"`` or ``"effective"`` (module docstring).

    Returns:
        ``(v_plus, v_minus)`` [m/s]: lift-off velocity along +b̂_θ (> 0) and along -b̂_θ (< 0); NaN
        where none exists (module docstring).
    """
    _check_plane(departure_plane)
    n = _vectors(normal, "normal", "1")
    d = _vectors(direction, "direction", "1")
    om = _vectors(omega, "omega", "rad/s")
    p = _vectors(position, "position", "m")
    ae = _vectors(accel_external, "accel_external", "m/s^2")
    s = _shape_operator(shape_operator, principal_curvatures, principal_directions)
    n, t = _tangent(n, d)
    kappa_n = np.einsum("...i,...ij,...j->...", t, s, t)
    _, kappa, w, c = _departure(departure_plane, n, t, kappa_n, om, p, ae)
    return liftoff_velocity(curvature=kappa, omega_s=w, normal_load=c)


def liftoff_velocity_ridge(*, object_radius, normal, omega=None, position=None, accel_external,
                           direction=None, reduced: bool = False) -> np.ndarray:
    """Ridge lift-off velocity (§3.1.4): eq 3.23 ("+" root), or eq 3.25 with ``reduced=True``.

    On a sharp edge ρ → 0, so ρ* = R and b̂_ρ = N (the normal of the facet being left, N_1):
    ``V_R = sqrt(R² (b̂_s·Ω)² + R N·(Ω×(Ω×P) - a_E)) - R b̂_s·Ω`` with b̂_s = N × b̂_θ; reduced,
    ``V_R = sqrt(-R N·a_E)`` (no rotation terms, no direction).

    Args:
        object_radius: R, distance from the contact point to the object's centre of mass [m], > 0.
        normal: N [1], shape (..., 3).
        omega: Ω [rad/s], (..., 3) (not needed when ``reduced``).
        position: P [m], (..., 3) (not needed when ``reduced``).
        accel_external: a_E [m/s²], (..., 3).
        direction: b̂_θ [1], (..., 3) (not needed when ``reduced``).
        reduced: use eq 3.25.

    Returns:
        V_R [m/s] (> 0), NaN where the object does not rest on the facet (N·X ≤ 0, or N·a_E ≥ 0
        for the reduced form).
    """
    r = _array(object_radius, "object_radius", "m")
    if np.any(r <= 0.0):
        raise InputError("object_radius", object_radius, "must be > 0 [m]")
    n = _unit(_vectors(normal, "normal", "1"))
    ae = _vectors(accel_external, "accel_external", "m/s^2")
    if reduced:
        load = -_dot(n, ae)
        with np.errstate(invalid="ignore"):
            return np.where(load > 0.0, np.sqrt(r * np.maximum(load, 0.0)), np.nan)
    if omega is None or position is None or direction is None:
        raise InputError("omega/position/direction", None, "are required unless reduced=True (eq 3.25)")
    om = _vectors(omega, "omega", "rad/s")
    p = _vectors(position, "position", "m")
    n, t = _tangent(n, _vectors(direction, "direction", "1"))
    w = _dot(om, np.cross(n, t))
    c = _dot(n, _centrifugal_term(om, p) - ae)
    return liftoff_velocity(curvature=1.0 / r, omega_s=w, normal_load=c)[0]


def liftoff_velocity_plane(*, normal, direction, omega, position, accel_external) -> np.ndarray:
    """Lift-off from a rotating plane, eq 3.28: ``V_θ = N·(Ω×(Ω×P) - a_E) / (2 b̂_s·Ω)``.

    Args:
        normal, direction, omega, position, accel_external: as in :func:`liftoff_velocity_curved`.

    Returns:
        V_θ [m/s], signed along b̂_θ: > 0 lifts off moving along +b̂_θ (with the surface rotational
        velocity), < 0 lifts off moving along -b̂_θ at |V_θ| (the seed's "negative V_θ" for motion
        against the rotation); NaN where b̂_s·Ω = 0 (lift-off impossible both ways) or N·X ≤ 0.
    """
    n = _vectors(normal, "normal", "1")
    om = _vectors(omega, "omega", "rad/s")
    p = _vectors(position, "position", "m")
    ae = _vectors(accel_external, "accel_external", "m/s^2")
    n, t = _tangent(n, _vectors(direction, "direction", "1"))
    w = _dot(om, np.cross(n, t))
    c = _dot(n, _centrifugal_term(om, p) - ae)
    with np.errstate(invalid="ignore", divide="ignore"):
        v = c / (2.0 * w)
    return np.where((w != 0.0) & (c > 0.0) & np.isfinite(v), v, np.nan)


def _normal_terms(normal, direction, omega, position, accel_external):
    n = _vectors(normal, "normal", "1")
    om = _vectors(omega, "omega", "rad/s")
    p = _vectors(position, "position", "m")
    ae = _vectors(accel_external, "accel_external", "m/s^2")
    n, t = _tangent(n, _vectors(direction, "direction", "1"))
    return _dot(om, np.cross(n, t)), _dot(n, _centrifugal_term(om, p) - ae)


def concave_min_radius(*, normal, direction, omega, position, accel_external) -> np.ndarray:
    """Smallest concave radius of curvature allowing lift-off, eq 3.31: ``ρ_min = N·X / (b̂_s·Ω)²``.

    Args:
        normal, direction, omega, position, accel_external: as in :func:`liftoff_velocity_curved`.

    Returns:
        ρ_min [m] (> 0); ``inf`` where b̂_s·Ω = 0; NaN where N·X ≤ 0.
    """
    w, c = _normal_terms(normal, direction, omega, position, accel_external)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = c / (w * w)
    return np.where(c > 0.0, rho, np.nan)


def concave_limit_velocity(*, normal, direction, omega, position, accel_external) -> np.ndarray:
    """Lift-off velocity at the minimum concave radius, eq 3.32: ``V = N·X / (b̂_s·Ω)`` (= 2× eq 3.28).

    Returns:
        V [m/s], signed along b̂_θ (its sign is that of b̂_s·Ω); NaN where b̂_s·Ω = 0 or N·X ≤ 0.
    """
    w, c = _normal_terms(normal, direction, omega, position, accel_external)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = c / w
    return np.where((w != 0.0) & (c > 0.0), v, np.nan)


def liftoff_window_concave(*, radius_of_curvature, normal, direction, omega, position,
                           accel_external) -> tuple[np.ndarray, np.ndarray]:
    """Velocities bounding lift-off from a concave normal section (eq 3.30, §3.1.6).

    Args:
        radius_of_curvature: |ρ| of the concave section [m], > 0 (a positive number: the centre of
            curvature is outside the body).
        normal, direction, omega, position, accel_external: as in :func:`liftoff_velocity_curved`.

    Returns:
        ``(v_near, v_far)`` [m/s], signed along b̂_θ with the sign of b̂_s·Ω: the particle lifts off
        for velocities between them and stays on the surface otherwise; NaN where |ρ| < ρ_min
        (eq 3.31) or b̂_s·Ω = 0.
    """
    rho = _array(radius_of_curvature, "radius_of_curvature", "m")
    if np.any(rho <= 0.0):
        raise InputError("radius_of_curvature", radius_of_curvature, "must be > 0 [m] (the concave radius)")
    w, c = _normal_terms(normal, direction, omega, position, accel_external)
    k = -1.0 / rho
    vp, vm = liftoff_velocity(curvature=k, omega_s=w, normal_load=c)
    near = np.where(np.isfinite(vp), vp, vm)
    return near, _roots_far(k, w, c)


def sphere_liftoff_speed(*, radius, mu, omega, latitude=0.0, azimuth=0.0) -> tuple[np.ndarray, np.ndarray]:
    """Lift-off velocity on a uniformly rotating sphere, eq 3.71 (g = -μ/ρ²).

    ``V = ± sqrt(-ρ² Ω² sin² η cos² φ + μ/ρ) - ρ Ω cos η cos φ``; at the equator in the east-west
    plane eq 3.72, at the poles eq 3.73.

    Args:
        radius: ρ, sphere radius [m].
        mu: GM of the sphere [m³/s²] (its gravity is radial, -μ/ρ² at the surface).
        omega: Ω, rotation rate about the sphere's +z axis [rad/s] (may be negative).
        latitude: φ of the departure point [rad].
        azimuth: η, direction of motion in the tangent plane measured from local east (the direction
            of the surface rotational velocity Ω × P for Ω > 0) towards north [rad].

    Returns:
        ``(v_plus, v_minus)`` [m/s]: lift-off velocity along the direction η (> 0) and along the
        opposite direction (< 0); NaN where the surface is beyond the synchronous radius
        (μ/ρ² ≤ Ω² ρ cos² φ: the particle at rest already lifts off).
    """
    r = _array(radius, "radius", "m")
    if np.any(r <= 0.0):
        raise InputError("radius", radius, "must be > 0 [m]")
    m = _array(mu, "mu", "m^3/s^2")
    if np.any(m <= 0.0):
        raise InputError("mu", mu, "must be > 0 [m^3/s^2]")
    om = _array(omega, "omega", "rad/s")
    phi = _array(latitude, "latitude", "rad")
    eta = _array(azimuth, "azimuth", "rad")
    # eq 3.70: Ω_ρ = Ω sin φ, Ω_θ = Ω sin η cos φ, Ω_s = Ω cos η cos φ; b̂_ρ·a_E = g = -μ/ρ²
    w = om * np.cos(eta) * np.cos(phi)
    c = m / (r * r) - om * om * r * np.cos(phi) ** 2
    return liftoff_velocity(curvature=1.0 / r, omega_s=w, normal_load=c)


def sphere_liftoff_velocity(*, radius, mu, omega, position, direction) -> tuple[np.ndarray, np.ndarray]:
    """Lift-off velocity on a rotating sphere centred at the origin, from vectors (eq 3.22).

    Convenience for trajectory checks: the same numbers as :func:`sphere_liftoff_speed`, for any
    rotation axis.

    Args:
        radius: sphere radius [m].
        mu: GM [m³/s²].
        omega: Ω [rad/s], shape (..., 3), target frame.
        position: departure point [m], (..., 3); projected radially onto the sphere.
        direction: direction of motion [1], (..., 3); projected onto the tangent plane.

    Returns:
        ``(v_plus, v_minus)`` [m/s] along ±direction, as in :func:`liftoff_velocity_curved`.
    """
    r = float(_array(radius, "radius", "m"))
    if r <= 0.0:
        raise InputError("radius", radius, "must be > 0 [m]")
    m = float(_array(mu, "mu", "m^3/s^2"))
    if m <= 0.0:
        raise InputError("mu", mu, "must be > 0 [m^3/s^2]")
    n = _unit(_vectors(position, "position", "m"))
    if np.any(~np.isfinite(n)):
        raise InputError("position", position, "must be nonzero (a point on the sphere) [m]")
    s = (np.eye(3) - n[..., :, None] * n[..., None, :]) / r
    return liftoff_velocity_curved(normal=n, direction=direction, omega=omega, position=r * n,
                                   accel_external=-m / (r * r) * n, shape_operator=s)


# ==================================================================================================
# curvature (§3.2)
# ==================================================================================================


@dataclass(frozen=True)
class SurfaceCurvature:
    """Curvature of a surface at n points (positive convex, outward normals).

    Attributes:
        points: surface points [m], shape (n, 3), target frame.
        normals: outward unit normals N [1], shape (n, 3).
        k_max: larger principal curvature κ⁺ [1/m], shape (n,).
        k_min: smaller principal curvature κ⁻ [1/m], shape (n,).
        dir_max: unit principal direction of κ⁺ [1], shape (n, 3), tangent.
        dir_min: unit principal direction of κ⁻ [1], shape (n, 3), = N × dir_max.
        mean: mean curvature H [1/m], shape (n,) (eq 3.33; eq 3.63 for a mesh).
        gaussian: Gaussian curvature K [1/m²], shape (n,) (eq 3.33; eq 3.61 for a mesh).
        area: mixed Voronoi area of each vertex [m²] (eq 3.60), shape (n,); None for an SDF.
    """

    points: np.ndarray
    normals: np.ndarray
    k_max: np.ndarray
    k_min: np.ndarray
    dir_max: np.ndarray
    dir_min: np.ndarray
    mean: np.ndarray
    gaussian: np.ndarray
    area: np.ndarray | None = None

    @property
    def shape_operator(self) -> np.ndarray:
        """S = κ⁺ d⁺d⁺ᵀ + κ⁻ d⁻d⁻ᵀ [1/m], shape (n, 3, 3), target frame."""
        a, b = self.dir_max, self.dir_min
        return (self.k_max[:, None, None] * a[:, :, None] * a[:, None, :]
                + self.k_min[:, None, None] * b[:, :, None] * b[:, None, :])

    def normal_curvature(self, direction) -> np.ndarray:
        """κ_n(η) = κ⁺ cos² η + κ⁻ sin² η (Euler, eq 3.35) for tangent directions (n, 3) or (n, m, 3)."""
        d = _vectors(direction, "direction", "1")
        extra = d.ndim - 2
        n = self.normals.reshape(self.normals.shape[:1] + (1,) * extra + (3,))
        _, t = _tangent(n, d)
        a = self.dir_max.reshape(n.shape)
        b = self.dir_min.reshape(n.shape)
        kp = self.k_max.reshape(self.k_max.shape + (1,) * extra)
        km = self.k_min.reshape(kp.shape)
        return kp * _dot(t, a) ** 2 + km * _dot(t, b) ** 2


def principal_curvatures(*, mean, gaussian) -> tuple[np.ndarray, np.ndarray]:
    """κ± = H ± sqrt(max(H² - K, 0)) (eqs 3.34 and 3.64).

    Args:
        mean: H [1/m].
        gaussian: K [1/m²].

    Returns:
        ``(k_max, k_min)`` [1/m]. Where H² < K (possible on a discrete surface) both equal H.
    """
    h = _array(mean, "mean", "1/m")
    k = _array(gaussian, "gaussian", "1/m^2")
    root = np.sqrt(np.maximum(h * h - k, 0.0))
    return h + root, h - root


def _tangent_basis(n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two unit tangents (t1, t2 = N × t1) per unit normal, shape (n, 3) each."""
    helper = np.zeros_like(n)
    idx = np.argmin(np.abs(n), axis=1)
    helper[np.arange(len(n)), idx] = 1.0
    t1 = _unit(helper - _dot(helper, n)[:, None] * n)
    return t1, np.cross(n, t1)


def _curvature_from_hessian(p, grad, hess) -> SurfaceCurvature:
    g = np.linalg.norm(grad, axis=1)
    n = _unit(grad)
    t1, t2 = _tangent_basis(n)
    # shape operator restricted to the tangent plane: S_ab = t_a·∇∇d·t_b / |∇d|
    s11 = np.einsum("ni,nij,nj->n", t1, hess, t1) / g
    s12 = np.einsum("ni,nij,nj->n", t1, hess, t2) / g
    s22 = np.einsum("ni,nij,nj->n", t2, hess, t2) / g
    h = 0.5 * (s11 + s22)
    root = np.sqrt(0.25 * (s11 - s22) ** 2 + s12 * s12)
    kmax, kmin = h + root, h - root
    ang = 0.5 * np.arctan2(2.0 * s12, s11 - s22)  # direction of the larger eigenvalue
    dmax = np.cos(ang)[:, None] * t1 + np.sin(ang)[:, None] * t2
    return SurfaceCurvature(points=p, normals=n, k_max=kmax, k_min=kmin, dir_max=dmax,
                            dir_min=np.cross(n, dmax), mean=h, gaussian=kmax * kmin)


def _points_array(points, field: str = "points") -> np.ndarray:
    p = _vectors(points, field, "m")
    if p.ndim == 1:
        p = p[None]
    if p.ndim != 2:
        raise InputError(field, f"array of shape {p.shape}", "must have shape (n, 3) [m]")
    return np.ascontiguousarray(p)


def _shape_value_gradient(shape: AnalyticShape, p: np.ndarray):
    from systems.terrain.sdf import eval_shape_points

    return eval_shape_points(shape, p)


def _project_shape(shape: AnalyticShape, p: np.ndarray, max_iter: int, tol: float) -> np.ndarray:
    x = p.copy()
    for _ in range(max_iter):
        d, g = _shape_value_gradient(shape, x)
        g2 = np.sum(g * g, axis=1)
        x = x - (d / np.where(g2 > 0.0, g2, 1.0))[:, None] * g
        if np.all(np.abs(d) <= tol):
            break
    return x


def _grid_node_derivatives(grid: SDFGrid, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gradient (n, 3) and Hessian (n, 3, 3): node central differences interpolated trilinearly."""
    v = grid.values
    h = grid.spacing
    shape = np.array(v.shape)
    if np.any(shape < 4):
        raise InputError("grid", f"grid of shape {tuple(shape)}", "must have >= 4 nodes per axis for curvature")
    f = (p - grid.origin) / h
    idx = np.clip(np.floor(f).astype(np.int64), 1, shape - 3)
    t = np.clip(f - idx, 0.0, 1.0)
    ar = np.arange(-1, 3)
    blk = v[idx[:, 0, None, None, None] + ar[None, :, None, None],
            idx[:, 1, None, None, None] + ar[None, None, :, None],
            idx[:, 2, None, None, None] + ar[None, None, None, :]]  # (n, 4, 4, 4) around the cell
    c = slice(1, 3)  # the cell's own 2x2x2 corners
    lo, mid, hi = slice(0, 2), slice(1, 3), slice(2, 4)
    g = np.empty((len(p), 2, 2, 2, 3))
    g[..., 0] = (blk[:, hi, c, c] - blk[:, lo, c, c]) / (2.0 * h[0])
    g[..., 1] = (blk[:, c, hi, c] - blk[:, c, lo, c]) / (2.0 * h[1])
    g[..., 2] = (blk[:, c, c, hi] - blk[:, c, c, lo]) / (2.0 * h[2])
    H = np.empty((len(p), 2, 2, 2, 3, 3))
    H[..., 0, 0] = (blk[:, hi, c, c] - 2.0 * blk[:, mid, c, c] + blk[:, lo, c, c]) / h[0] ** 2
    H[..., 1, 1] = (blk[:, c, hi, c] - 2.0 * blk[:, c, mid, c] + blk[:, c, lo, c]) / h[1] ** 2
    H[..., 2, 2] = (blk[:, c, c, hi] - 2.0 * blk[:, c, c, mid] + blk[:, c, c, lo]) / h[2] ** 2
    H[..., 0, 1] = H[..., 1, 0] = (blk[:, hi, hi, c] - blk[:, hi, lo, c] - blk[:, lo, hi, c]
                                   + blk[:, lo, lo, c]) / (4.0 * h[0] * h[1])
    H[..., 0, 2] = H[..., 2, 0] = (blk[:, hi, c, hi] - blk[:, hi, c, lo] - blk[:, lo, c, hi]
                                   + blk[:, lo, c, lo]) / (4.0 * h[0] * h[2])
    H[..., 1, 2] = H[..., 2, 1] = (blk[:, c, hi, hi] - blk[:, c, hi, lo] - blk[:, c, lo, hi]
                                   + blk[:, c, lo, lo]) / (4.0 * h[1] * h[2])
    wx = np.stack([1.0 - t[:, 0], t[:, 0]], 1)
    wy = np.stack([1.0 - t[:, 1], t[:, 1]], 1)
    wz = np.stack([1.0 - t[:, 2], t[:, 2]], 1)
    w = wx[:, :, None, None] * wy[:, None, :, None] * wz[:, None, None, :]
    return np.einsum("nabc,nabci->ni", w, g), np.einsum("nabc,nabcij->nij", w, H)


def sdf_curvature(sdf, points, *, project: bool = True, step: float | None = None, max_iter: int = 32,
                  tol: float = 1e-9) -> SurfaceCurvature:
    """Principal curvatures and directions of the surface d = 0 from a signed distance field.

    Shape operator ``S = P ∇∇d P / |∇d|``, ``P = I - N Nᵀ``, ``N = ∇d/|∇d|`` (module docstring for
    how ∇∇d is obtained from an analytic shape and from a grid).

    Args:
        sdf: an :class:`components.terrain.AnalyticShape` or an :class:`components.terrain.SDFGrid`
            (negative inside), target frame.
        points: query points [m], shape (n, 3) or (3,).
        project: first move each point onto d = 0 along the normal (Newton on d; for a grid
            :func:`systems.terrain.sdf.surface_points`). Without it the curvature is that of the level set
            through the point.
        step: finite-difference step for an analytic shape [m]; default 1e-5 × max(|p|, 1 m).
        max_iter: projection iterations.
        tol: projection tolerance on |d| [m].

    Returns:
        :class:`SurfaceCurvature` at the (projected) points.

    Raises:
        InputError: an unknown ``sdf`` type, bad points, or a zero gradient at a point.
    """
    p = _points_array(points)
    if isinstance(sdf, AnalyticShape):
        if project:
            p = _project_shape(sdf, p, int(max_iter), float(tol))
        _, grad = _shape_value_gradient(sdf, p)
        hs = 1e-5 * np.maximum(np.linalg.norm(p, axis=1), 1.0) if step is None else \
            np.full(len(p), float(step))
        if np.any(~(hs > 0.0)):
            raise InputError("step", step, "must be > 0 [m]")
        hess = np.empty((len(p), 3, 3))
        for j in range(3):
            e = np.zeros((len(p), 3))
            e[:, j] = hs
            _, gp = _shape_value_gradient(sdf, p + e)
            _, gm = _shape_value_gradient(sdf, p - e)
            hess[:, :, j] = (gp - gm) / (2.0 * hs[:, None])
        hess = 0.5 * (hess + np.swapaxes(hess, 1, 2))
    elif isinstance(sdf, SDFGrid):
        if project:
            from systems.terrain.sdf import surface_points

            p, _ = surface_points(sdf, p, max_iter=int(max_iter), tol=float(tol))
        grad, hess = _grid_node_derivatives(sdf, p)
    else:
        raise InputError("sdf", type(sdf).__name__, "must be an AnalyticShape or an SDFGrid")
    bad = np.flatnonzero(~(np.linalg.norm(grad, axis=1) > 0.0))
    if bad.size:
        raise InputError("points", f"point {int(bad[0])} = {p[bad[0]].tolist()}",
                         "the distance gradient vanishes there (medial axis): no normal")
    return _curvature_from_hessian(p, grad, hess)


def mesh_curvature(vertices, faces) -> SurfaceCurvature:
    """Discrete curvature at the vertices of a closed triangle mesh (Meyer et al. 2003, eqs 3.59–3.67).

    Args:
        vertices: [m], shape (n, 3), target frame.
        faces: vertex indices, shape (m, 3), outward wound (checked by
            :func:`components.mesh.check_closed_mesh`).

    Returns:
        :class:`SurfaceCurvature` at every vertex, with ``area`` the mixed Voronoi area.

    Raises:
        InputError: the mesh is not closed, manifold and outward wound.
    """
    v, f = check_closed_mesh(vertices, faces, field="mesh_curvature mesh")
    nv = len(v)
    x = [v[f[:, c]] for c in range(3)]
    e = [x[(c + 1) % 3] - x[c] for c in range(3)]  # e[c]: from corner c to corner c+1
    cross = np.cross(e[0], -e[2])  # (x1 - x0) × (x2 - x0)
    area2 = np.linalg.norm(cross, axis=1)  # twice the face area
    face_n = cross / area2[:, None]
    cot = np.empty((len(f), 3))
    ang = np.empty((len(f), 3))
    for c in range(3):
        a, b = e[c], -e[(c + 2) % 3]  # edges leaving corner c
        cos = _dot(a, b)
        sin = np.linalg.norm(np.cross(a, b), axis=1)
        cot[:, c] = cos / sin
        ang[:, c] = np.arctan2(sin, cos)
    len2 = np.stack([_dot(e[c], e[c]) for c in range(3)], 1)  # |x_{c+1} - x_c|²
    obtuse = ang > 0.5 * np.pi
    any_obtuse = obtuse.any(axis=1)

    def acc(values, c):
        return np.bincount(f[:, c], weights=values, minlength=nv)

    # eq 3.59: mixed area of each corner; eq 3.60: summed over the 1-ring
    area = np.zeros(nv)
    for c in range(3):
        j, k = (c + 1) % 3, (c + 2) % 3
        # edge c->j is opposite corner k, edge c->k (= e[k] reversed) opposite corner j
        voronoi = 0.125 * (len2[:, c] * cot[:, k] + len2[:, k] * cot[:, j])
        a_c = np.where(~any_obtuse, voronoi, np.where(obtuse[:, c], 0.25 * area2, 0.125 * area2))
        area += acc(a_c, c)
    # eq 3.61: Gaussian curvature from the angle defect
    angle_sum = sum(acc(ang[:, c], c) for c in range(3))
    gauss = (2.0 * np.pi - angle_sum) / area
    # eq 3.62 (edge vectors, see the module docstring): mean curvature normal
    hn = np.zeros((nv, 3))
    normal = np.zeros((nv, 3))
    for c in range(3):
        j, k = (c + 1) % 3, (c + 2) % 3
        contrib = cot[:, k, None] * (x[c] - x[j]) + cot[:, j, None] * (x[c] - x[k])
        for axis in range(3):
            hn[:, axis] += acc(contrib[:, axis], c)
            normal[:, axis] += acc(ang[:, c] * face_n[:, axis], c)  # angle-weighted normal
    hn /= 2.0 * area[:, None]
    normal = _unit(normal)
    mean = 0.5 * _dot(hn, normal)  # eq 3.63, signed
    kmax, kmin = principal_curvatures(mean=mean, gaussian=gauss)  # eq 3.64
    # eqs 3.65-3.67: least-squares curvature tensor B (trace fixed to 2H) for the directions
    t1, t2 = _tangent_basis(normal)
    suu = np.zeros(nv)
    suv = np.zeros(nv)
    svv = np.zeros(nv)
    suy = np.zeros(nv)
    svy = np.zeros(nv)
    for c in range(3):
        j, k = (c + 1) % 3, (c + 2) % 3
        for other, opp in ((j, k), (k, j)):
            i_idx = f[:, c]
            edge = x[other] - x[c]  # P_j - P_i
            l2 = _dot(edge, edge)
            wgt = np.maximum(0.125 * cot[:, opp] * l2, 0.0)  # eq 3.67 (1/A_i is a common factor)
            ni = normal[i_idx]
            kij = 2.0 * _dot(-edge, ni) / l2  # eq 3.66
            dt = edge - _dot(edge, ni)[:, None] * ni
            dt = _unit(dt)
            d1 = _dot(dt, t1[i_idx])
            d2 = _dot(dt, t2[i_idx])
            u = d1 * d1 - d2 * d2
            vv = 2.0 * d1 * d2
            y = kij - 2.0 * mean[i_idx] * d2 * d2
            ok = np.isfinite(u) & np.isfinite(y)
            wgt = np.where(ok, wgt, 0.0)
            u, vv, y = np.where(ok, u, 0.0), np.where(ok, vv, 0.0), np.where(ok, y, 0.0)
            suu += acc(wgt * u * u, c)
            suv += acc(wgt * u * vv, c)
            svv += acc(wgt * vv * vv, c)
            suy += acc(wgt * u * y, c)
            svy += acc(wgt * vv * y, c)
    det = suu * svv - suv * suv
    good = det > 1e-12 * np.maximum(suu * svv, 1e-300)
    with np.errstate(invalid="ignore", divide="ignore"):
        ba = np.where(good, (svv * suy - suv * svy) / np.where(good, det, 1.0), mean)
        bb = np.where(good, (suu * svy - suv * suy) / np.where(good, det, 1.0), 0.0)
    bc = 2.0 * mean - ba
    angle = 0.5 * np.arctan2(2.0 * bb, ba - bc)  # eigenvector of B's larger eigenvalue
    dmax = np.cos(angle)[:, None] * t1 + np.sin(angle)[:, None] * t2
    return SurfaceCurvature(points=v, normals=normal, k_max=kmax, k_min=kmin, dir_max=dmax,
                            dir_min=np.cross(normal, dmax), mean=mean, gaussian=gauss, area=area)


# ==================================================================================================
# maps
# ==================================================================================================


def compass_directions(*, normals, points, omega) -> tuple[np.ndarray, np.ndarray]:
    """Local east and north unit tangents.

    East is the direction of the surface rotational velocity Ω × P projected onto the tangent plane
    (η = 0 of §3.3.1: the prograde direction); north = N × east. Where Ω × P has no tangential
    part (a pole, or Ω = 0) east falls back to an arbitrary tangent, which is harmless there since
    the lift-off velocity then depends on the direction only through the curvature.

    Args:
        normals: outward unit normals [1], shape (n, 3).
        points: surface points [m], (n, 3).
        omega: Ω [rad/s], (3,) or (n, 3).

    Returns:
        ``(east, north)`` [1], shape (n, 3) each.
    """
    n = _unit(_vectors(normals, "normals", "1"))
    p = _vectors(points, "points", "m")
    om = np.broadcast_to(_vectors(omega, "omega", "rad/s"), p.shape)
    v = np.cross(om, p)
    vt = v - _dot(v, n)[:, None] * n
    size = np.linalg.norm(vt, axis=1)
    scale = np.linalg.norm(om, axis=1) * np.linalg.norm(p, axis=1)
    fallback, _ = _tangent_basis(n)
    east = np.where((size > 1e-9 * scale)[:, None] & (scale > 0.0)[:, None],
                    vt / np.where(size > 0.0, size, 1.0)[:, None], fallback)
    return east, np.cross(n, east)


@dataclass(frozen=True)
class LiftoffMap:
    """Lift-off speeds at n surface points in m directions (:func:`liftoff_map`).

    Attributes:
        curvature: the :class:`SurfaceCurvature` used (points, normals, principal curvatures).
        accel_external: a_E at the points [m/s²], shape (n, 3), target frame.
        azimuth: η of each direction, from local east towards north [rad], shape (m,).
        names: compass names of the directions, or None.
        directions: unit tangent directions [1], shape (n, m, 3).
        speed: lift-off speed along each direction [m/s], shape (n, m); NaN where lift-off is
            impossible along it.
        speed_min: smallest lift-off speed over the directions [m/s], shape (n,); NaN where lift-off
            is impossible in every direction.
        speed_max: largest [m/s], shape (n,); ``inf`` where some direction has no lift-off (a
            partly concave point: §3.2.1, "no maximum velocity"), NaN where none has.
        direction_min: direction of ``speed_min`` [1], (n, 3) (NaN where speed_min is NaN).
        direction_max: direction of the largest finite speed [1], (n, 3).
        ridge: reduced ridge lift-off speed sqrt(-R N·a_E) [m/s] (eq 3.25), (n,), or None.
    """

    curvature: SurfaceCurvature
    accel_external: np.ndarray
    azimuth: np.ndarray
    names: tuple[str, ...] | None
    directions: np.ndarray
    speed: np.ndarray
    speed_min: np.ndarray
    speed_max: np.ndarray
    direction_min: np.ndarray
    direction_max: np.ndarray
    ridge: np.ndarray | None = None

    @property
    def points(self) -> np.ndarray:
        """Surface points [m], (n, 3)."""
        return self.curvature.points

    @property
    def normals(self) -> np.ndarray:
        """Outward unit normals [1], (n, 3)."""
        return self.curvature.normals

    def along(self, name: str) -> np.ndarray:
        """Speed along a compass direction (``"east"`` …) [m/s], shape (n,)."""
        if self.names is None or name not in self.names:
            raise InputError("name", name, f"must be one of {self.names} (the map's compass directions)")
        return self.speed[:, self.names.index(name)]


def _gravity_at(gravity, p: np.ndarray) -> np.ndarray:
    if isinstance(gravity, GravitySource):
        a = acceleration(gravity, p)
    elif hasattr(gravity, "acceleration") and callable(gravity.acceleration):
        a = gravity.acceleration(p)
    elif callable(gravity):
        a = gravity(p)
    else:
        a = gravity
    a = _vectors(a, "gravity", "m/s^2")
    try:
        return np.ascontiguousarray(np.broadcast_to(a, p.shape), dtype=np.float64)
    except ValueError:
        raise InputError("gravity", f"array of shape {a.shape}", f"must broadcast to the points' shape {p.shape}") \
            from None


def liftoff_map(body, *, gravity, omega, points=None, directions="compass", departure_plane: str = "normal",
                source: str = "auto", object_radius: float | None = None, project: bool = True) -> LiftoffMap:
    """Lift-off speeds over a body's surface for a set of directions (§3.3–3.4).

    Args:
        body: an :class:`components.terrain.AnalyticShape`, an :class:`components.terrain.SDFGrid`,
            a mesh ``(vertices, faces)``, or a :class:`scenes.assets.bodies.SmallBody`.
        gravity: a_E in the target frame: a gravity source (:mod:`components.gravity`, evaluated
            by :func:`systems.gravity.kernels.acceleration`), an object with
            ``.acceleration(points)``, a callable ``points (n, 3) -> (n, 3)`` [m/s²], or a
            constant vector.
        omega: Ω [rad/s], shape (3,), target frame.
        points: where to evaluate [m], (n, 3). Required for an SDF; for a mesh, None means every
            vertex, and given points are replaced by their nearest vertices (discrete curvature
            exists only at vertices, §3.2.4).
        directions: ``"compass"`` (east, north, west, south), an integer m (m azimuths evenly
            spaced from east), or an array of azimuths η [rad].
        departure_plane: see :func:`liftoff_velocity_curved`.
        source: for a SmallBody, ``"shape"`` (analytic SDF, default), ``"grid"`` or ``"mesh"``.
        object_radius: if given, also the reduced ridge speed (eq 3.25) for this radius [m].
        project: project SDF query points onto the surface first (:func:`sdf_curvature`).

    Returns:
        :class:`LiftoffMap`. Min/max over a finite set of directions approximate the true extrema
        to the angular resolution of the set.
    """
    _check_plane(departure_plane)
    from scenes.assets.bodies import SmallBody

    if isinstance(body, SmallBody):
        if source not in ("auto", "shape", "grid", "mesh"):
            raise InputError("source", source, "must be 'shape', 'grid' or 'mesh' for a SmallBody")
        body = {"auto": body.shape, "shape": body.shape, "grid": body.grid,
                "mesh": (body.vertices, body.faces)}[source]
    if isinstance(body, (AnalyticShape, SDFGrid)):
        if points is None:
            raise InputError("points", None, "are required for an SDF body (n, 3) [m]")
        curv = sdf_curvature(body, points, project=project)
    elif isinstance(body, tuple) and len(body) == 2:
        curv = mesh_curvature(*body)
        if points is not None:
            q = _points_array(points)
            idx = _nearest_vertices(curv.points, q)
            curv = SurfaceCurvature(*(None if a is None else a[idx] for a in
                                      (curv.points, curv.normals, curv.k_max, curv.k_min, curv.dir_max,
                                       curv.dir_min, curv.mean, curv.gaussian, curv.area)))
    else:
        raise InputError("body", type(body).__name__,
                         "must be an AnalyticShape, an SDFGrid, a (vertices, faces) mesh or a SmallBody")
    om = _vectors(omega, "omega", "rad/s")
    if om.shape != (3,):
        raise InputError("omega", om.tolist(), "must be one vector of 3 numbers [rad/s]")
    p, n = curv.points, curv.normals
    ae = _gravity_at(gravity, p)
    names = None
    if isinstance(directions, str):
        if directions != "compass":
            raise InputError("directions", directions, "must be 'compass', an integer count or azimuths [rad]")
        eta = np.arange(4) * (0.5 * np.pi)
        names = COMPASS
    elif np.ndim(directions) == 0:
        m = int(directions)
        if m != directions or m < 1:
            raise InputError("directions", directions, "an integer count must be >= 1")
        eta = 2.0 * np.pi * np.arange(m) / m
    else:
        eta = _array(directions, "directions", "rad").reshape(-1)
    east, north = compass_directions(normals=n, points=p, omega=om)
    dirs = np.cos(eta)[None, :, None] * east[:, None, :] + np.sin(eta)[None, :, None] * north[:, None, :]
    s = curv.shape_operator[:, None]
    speed, _ = liftoff_velocity_curved(normal=n[:, None], direction=dirs, omega=om, position=p[:, None],
                                       accel_external=ae[:, None], shape_operator=s,
                                       departure_plane=departure_plane)
    finite = np.isfinite(speed)
    anyf = finite.any(axis=1)
    with np.errstate(invalid="ignore"):
        big = np.where(finite, speed, -np.inf)
        small = np.where(finite, speed, np.inf)
    imax, imin = np.argmax(big, axis=1), np.argmin(small, axis=1)
    rows = np.arange(len(p))
    speed_min = np.where(anyf, small[rows, imin], np.nan)
    speed_max = np.where(anyf, np.where(finite.all(axis=1), big[rows, imax], np.inf), np.nan)
    dmin = np.where(anyf[:, None], dirs[rows, imin], np.nan)
    dmax = np.where(anyf[:, None], dirs[rows, imax], np.nan)
    ridge = None
    if object_radius is not None:
        ridge = liftoff_velocity_ridge(object_radius=object_radius, normal=n, accel_external=ae, reduced=True)
    return LiftoffMap(curvature=curv, accel_external=ae, azimuth=eta, names=names, directions=dirs, speed=speed,
                      speed_min=speed_min, speed_max=speed_max, direction_min=dmin, direction_max=dmax, ridge=ridge)


def _nearest_vertices(vertices: np.ndarray, q: np.ndarray) -> np.ndarray:
    from scipy.spatial import cKDTree

    return cKDTree(vertices).query(q)[1]
