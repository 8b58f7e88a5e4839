"""Contact motion (DERIVATIVE phase): a rigid probe resting, sliding or rolling on a static surface.

Seed 004 §2.5.3 (eqs 2.92–2.110). While a vertex stays on the surface, time runs (unlike a
collision) and the surface applies a force at the vertex that keeps it from penetrating: a normal
force, Coulomb friction against the tangential contact velocity, and optionally rolling
resistance. All kernels are written once (:func:`systems.probe_contact.collision.dual_call`) for CPU and GPU.

Public API: :data:`contact_forces_row` / :func:`contact_forces_rows` (the force kernel, any number
of contacts per body, work array of :func:`contact_work_size`), the surfaces :class:`PlaneSurface`
and :class:`SphereSurface` (``evaluate(points) -> (d, ∇d, ∇∇d)``, kernel :data:`eval_surface`),
:func:`normal_rate` (eq 2.104), :func:`contact_entry` / :func:`contact_exit` / :func:`enter_contact`,
and the demonstration DERIVATIVE system :class:`SurfaceContactMotion`.

Force law of one contact (the seed's equations)
-----------------------------------------------
* Contact-point acceleration (eq 2.54): ``v̇ = g + C + W + [M] F`` with ``[M]`` the inverse
  inertia matrix (eq 2.55) and ``W = (I⁻¹(τ_ext − ω × Iω)) × r + ω × ṙ`` the rigid-body term
  (eq 2.55 written with the body's own external torque τ_ext; ``ṙ = ω × r`` for a vertex fixed in the
  body, and ``ṙ = −ρ Ṅ`` for the contact point of a sphere of radius ρ, which is not a body point).
  ``g + C`` is the free acceleration of the CoM (all non-contact forces over the mass; in a
  non-rotating target frame ``C = 0``).
* Non-penetration (eq 2.92): ``N·v̇ + v·Ṅ = 0``.
* Stick (eqs 2.93–2.95): ``v̇ = 0`` gives ``F_stick = −[M]⁻¹(g + C + W)`` (plus the ``v·Ṅ`` normal
  term when the regularised contact still creeps), split by ``[T] = E − NNᵀ`` into normal and
  friction parts.
* Slip (eqs 2.96–2.99): ``F = F_N (N − f t̂)`` with ``t̂`` the slip direction and the normal
  magnitude from the non-penetration constraint, ``F_N = −(v·Ṅ + (g + C + W)·N) / ([M](N − f t̂))·N``.
* Surface normal rate (eqs 2.100–2.104): ``Ṅ = |∇d|⁻¹ [T] ∇∇d v`` from the Hessian of the surface's
  distance function, supplied by a *surface* object (:class:`PlaneSurface`, :class:`SphereSurface`;
  the SDF of the terrain issue plugs in through the same ``evaluate(points) -> (d, ∇d, ∇∇d)``).
* Constraint stabilisation (ours; Baumgarte 1972, velocity level): every contact's constraint is
  ``N·v̇ + v·Ṅ = −β (N·v)``, so a normal velocity left at a contact (by a collision elsewhere on
  the body, round-off or the position projection) decays as e^(−βt) instead of persisting; on the
  constraint (N·v = 0) this is eq 2.92 exactly. Without it a body resting on several vertices kept
  a rocking rate µm/s-slow forever, its stick forces holding rising vertices on their way up until
  they left the contact gap (measured on ``deploy-cube``: the 60 s rest hold took a third more
  steps). β = :data:`components.contact_params.BAUMGARTE_RATE` by default; it adds a rate β to the normal dynamics, so an
  explicit step needs h β below ~3.3 (DP5(4)).
* Regularised stick/slip (eqs 2.105–2.106): ``F = λ_F F_slip + (1 − λ_F) F_stick`` with
  ``λ_F = min(|v_T|, v*)/v*``.
* Rolling resistance (eqs 2.107–2.110): ``L_roll = −[C_RR] R F_N ω̂``; in lock, the torque that holds
  ω (eq 2.108 generalised: ``ω × Iω − Σ r × F − τ_ext``, so that the body's angular acceleration
  vanishes), bounded like Coulomb friction by the rolling magnitude; blended by
  ``λ_RR = min(|ω|, ω*)/ω*``; a force ``F_RR = m [r̃] I⁻¹ L_RR`` at the CoM (eq 2.110) keeps the
  contact velocity unaffected.

Not covered yet: in a *rotating* target frame, eq 2.55's W carries the target-rotation terms
(ω_S/N versus ω_S/T) and C the Coriolis and centrifugal accelerations; the kernel takes the free
CoM acceleration and the external torque as inputs (``accel``, ``torque``) and evaluates W for a
non-rotating target. The deployment issue (rotating frame) adds those terms.

Several vertices at once (our extension; the seed treats one)
-------------------------------------------------------------
A cube resting on a face touches with four vertices; one vertex alone would make it topple. All
active contacts of a body are solved together with the two-point inverse inertia matrices
``[M_kl] = E/m − [r̃_k] I⁻¹ [r̃_l]`` of eq 2.56 (the velocity change of contact k per unit impulse at
contact l). Stick: ``Σ_l [M_kl] F_l = −b_k`` for every k, a 3K system of rank ≤ 6 (the
distribution among coplanar contacts is statically indeterminate) solved for its minimum-norm
solution (an edge's two contacts leave C Cᵀ of rank 5; its null vector, equal and opposite forces
along the edge, is deflated so that a Cholesky solve serves, :data:`low_rank_pinv_solve`). Slip:
``F_k = λ_k (N_k − f_k t̂_k)`` with one unknown per contact and one normal
constraint per contact, also minimum-norm. Minimum-norm solutions come from Tikhonov-regularised
Cholesky solves (regularisation 1e-12 of the mean diagonal: a constraint residual ~1e-12 relative).
A body sticks when the stick forces lie in the *aggregate* friction cone, ``Σ|F_T,k| ≤ Σ f_k F_N,k``
(the indeterminate distribution can always be shifted between coplanar contacts, so a per-vertex
test of the arbitrary minimum-norm split would be wrong: it would make a cube slide below
``f = tan θ``). With K = 1 everything reduces exactly to the seed's equations.
When a body cannot stick and its contacts slide slower than v*, the slip direction is blended
towards the direction the body starts to slide, ``−F_T,stick``: ``t̂ ∝ v_T + (v* − |v_T|) (−F̂_T,stick)``.

Misprints / OCR reconstructions
-------------------------------
* Eq 2.99: with eq 2.97's friction ``F_F = −f F_N v̂_T``, the normal magnitude is
  ``F_N = −(v·Ṅ + (g + C + W)·N) / ((([M](N − f v̂_T))·N)``; the OCR'd text shows ``+ f[M]v̂_T``
  in the denominator, which would be a friction force along the slip. Corrected (the test checks
  the kernel against this form).
* Eq 2.108 prints only the gyroscopic terms (and the target-rotation term) for the lock torque;
  holding ω also requires cancelling the torque of the contact force itself, ``−Σ r × F``, and any
  external torque. Without it a sphere would never stop rolling on a slope; with it and the bound
  "reduced magnitude" of the text, static rolling resistance holds up to ``C_RR R F_N``.
* Eq 2.110 ``F_RR = m [r̃] I⁻¹ L_RR`` is read from the OCR as ``m[t][ls]'Lgr``: the derivation from
  eq 2.89 (zero contact-velocity change from the pair F_RR, L_RR) confirms it.
* Eq 2.104 uses the velocity ``v`` of the point where the normal is evaluated: the vertex velocity
  for a vertex, the CoM velocity for a sphere whose normal is taken on the offset surface through
  its centre (exact for a true distance field).

Entering and leaving contact motion (:func:`contact_entry`, :func:`contact_exit`)
--------------------------------------------------------------------------------
* Entering (seed §2.5.3): at a collision whose normal approach speed is below a threshold, if the
  free normal acceleration of the contact point is negative (the surface must keep pushing), a
  final collision with e = 0 ends the normal motion (:func:`enter_contact`) and contact motion
  starts; if it is positive, the collision is resolved normally and the probe flies.
* Leaving: a contact whose normal force would be negative is dropped from the active set (the most
  negative first, then the rest are re-solved); the probe leaves contact motion when none remains.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np
from numba import prange

from components.contact_params import BAUMGARTE_RATE, ContactParams
from ecs import InputError, Phase, System, row_layout
from ecs.attitude import cross_call, quat_rotate_call, quat_rotate_inverse_call
from ecs.kernels import cpu_parallel, dual_call
from systems.probe_contact.records import ContactSet
from ecs.attitude import quat_rotate as _quat_rotate_np
from ecs.attitude import quat_rotate_inverse as _quat_rotate_inverse_np
from systems.probe_contact.linalg import apply_coupling, inverse_sym3, sym3_apply
from systems.probe_contact.surface_impacts import resolve_impacts
from systems.probe_contact.linalg import (_lr_pinv, _pinv, chol_solve, gram6, low_rank_pinv_solve,
                                         sym_pinv_solve)

_i = np.int64
_cross = cross_call.cpu
_rot = quat_rotate_call.cpu
_rot_inv = quat_rotate_inverse_call.cpu
_mcouple = apply_coupling.cpu
_inv3 = inverse_sym3.cpu
_japply = sym3_apply.cpu

SURFACE_PLANE = _i(0)
SURFACE_SPHERE = _i(1)
# the slots of an analytic surface's parameter row (PlaneSurface.params, SphereSurface.params), of
# SURFACE_PARAMS slots whatever the kind
SURFACE_PARAMS = 8
PLANE_ROW = row_layout("plane surface parameters", (
    ("X", 1, "a point of the plane, x [m]"), ("Y", 1, "y [m]"), ("Z", 1, "z [m]"),
    ("NX", 1, "the plane's unit normal, x"), ("NY", 1, "y"), ("NZ", 1, "z")), size=SURFACE_PARAMS)
SPHERE_ROW = row_layout("sphere surface parameters", (
    ("X", 1, "the sphere's centre, x [m]"), ("Y", 1, "y [m]"), ("Z", 1, "z [m]"),
    ("R", 1, "the sphere's radius [m]"), ("SIGN", 1, "+1 outside (a ball), −1 inside (a bowl)")),
    size=SURFACE_PARAMS)
SURF_X, SURF_Y, SURF_Z = PLANE_ROW.offsets("X Y Z")      # the sphere's centre too (SPHERE_ROW: the same slots)
PLANE_NX, PLANE_NY, PLANE_NZ = PLANE_ROW.offsets("NX NY NZ")
SPHERE_R, SPHERE_SIGN = SPHERE_ROW.offsets("R SIGN")

#: Per-contact status after a force evaluation.
CONTACT_INACTIVE = 0   #: not touching (gap above the contact distance)
CONTACT_ACTIVE = 1     #: carrying a normal force
CONTACT_LEFT = 2       #: touching, but its normal force would be negative: dropped (leaving)


# ===================================================================================== surfaces
def _eval_surface(kind, prm, x, y, z):
    """Signed distance, gradient and Hessian (6 unique entries) of an analytic surface:
    ``(d, gx, gy, gz, hxx, hxy, hxz, hyy, hyz, hzz)``.

    PLANE: prm = (point (3), unit normal (3)), d = n·(x − p). SPHERE: prm = (centre (3), radius,
    sign), d = sign·(|x − c| − R) (sign −1: the inside of a spherical bowl)."""
    if kind == SURFACE_PLANE:
        nx, ny, nz = prm[PLANE_NX], prm[PLANE_NY], prm[PLANE_NZ]
        d = nx * (x - prm[SURF_X]) + ny * (y - prm[SURF_Y]) + nz * (z - prm[SURF_Z])
        return d, nx, ny, nz, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    sg = prm[SPHERE_SIGN]
    dx, dy, dz = x - prm[SURF_X], y - prm[SURF_Y], z - prm[SURF_Z]
    rr = math.sqrt(dx * dx + dy * dy + dz * dz)
    ux, uy, uz = dx / rr, dy / rr, dz / rr
    k = sg / rr
    return (sg * (rr - prm[SPHERE_R]), sg * ux, sg * uy, sg * uz, k * (1.0 - ux * ux), -k * ux * uy, -k * ux * uz,
            k * (1.0 - uy * uy), -k * uy * uz, k * (1.0 - uz * uz))


eval_surface = dual_call(_eval_surface)
_eval_surface_cpu = eval_surface.cpu


@cpu_parallel
def surface_rows(n, kind, prm, points, out_d, out_grad, out_hess):
    for i in prange(n):
        d, gx, gy, gz, hxx, hxy, hxz, hyy, hyz, hzz = _eval_surface_cpu(kind, prm, points[i, 0], points[i, 1],
                                                                        points[i, 2])
        out_d[i] = d
        out_grad[i, 0], out_grad[i, 1], out_grad[i, 2] = gx, gy, gz
        out_hess[i, 0, 0], out_hess[i, 0, 1], out_hess[i, 0, 2] = hxx, hxy, hxz
        out_hess[i, 1, 0], out_hess[i, 1, 1], out_hess[i, 1, 2] = hxy, hyy, hyz
        out_hess[i, 2, 0], out_hess[i, 2, 1], out_hess[i, 2, 2] = hxz, hyz, hzz


class _AnalyticSurface:
    kind: np.int64

    def params(self) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def evaluate(self, points):
        """Signed distance [m], gradient [1] and Hessian [1/m] at points [n, 3] (target frame).

        Returns:
            ``(d [n], grad [n, 3], hess [n, 3, 3])``. This is the interface the contact systems use;
            an SDF resource provides the same method.
        """
        pts = np.ascontiguousarray(np.asarray(points, float).reshape(-1, 3))
        n = pts.shape[0]
        d, g, h = np.empty(n), np.empty((n, 3)), np.empty((n, 3, 3))
        surface_rows(n, self.kind, self.params(), pts, d, g, h)
        return d, g, h


@dataclass(frozen=True)
class PlaneSurface(_AnalyticSurface):
    """The plane through ``point`` with unit ``normal`` (pointing out of the solid), target frame."""

    point: tuple = (0.0, 0.0, 0.0)
    normal: tuple = (0.0, 0.0, 1.0)
    kind = SURFACE_PLANE

    def __post_init__(self):
        p = np.asarray(self.point, float)
        n = np.asarray(self.normal, float)
        if p.shape != (3,) or not np.all(np.isfinite(p)):
            raise InputError("plane point", self.point, "must be a finite 3-vector [m]")
        nn = np.linalg.norm(n) if n.shape == (3,) else 0.0
        if not (nn > 0 and np.isfinite(nn)):
            raise InputError("plane normal", self.normal, "must be a finite non-zero 3-vector")
        object.__setattr__(self, "normal", tuple(n / nn))

    def params(self) -> np.ndarray:
        p = np.zeros(SURFACE_PARAMS)
        p[[SURF_X, SURF_Y, SURF_Z]] = self.point
        p[[PLANE_NX, PLANE_NY, PLANE_NZ]] = self.normal
        return p


@dataclass(frozen=True)
class SphereSurface(_AnalyticSurface):
    """A sphere of ``radius`` about ``center``; ``inside=True`` is a spherical bowl (concave)."""

    center: tuple = (0.0, 0.0, 0.0)
    radius: float = 1.0
    inside: bool = False
    kind = SURFACE_SPHERE

    def __post_init__(self):
        c = np.asarray(self.center, float)
        if c.shape != (3,) or not np.all(np.isfinite(c)):
            raise InputError("sphere center", self.center, "must be a finite 3-vector [m]")
        if not (self.radius > 0 and math.isfinite(self.radius)):
            raise InputError("sphere radius", self.radius, "must be > 0 m")

    def params(self) -> np.ndarray:
        p = np.zeros(SURFACE_PARAMS)
        p[[SURF_X, SURF_Y, SURF_Z]] = self.center
        p[SPHERE_R] = self.radius
        p[SPHERE_SIGN] = -1.0 if self.inside else 1.0
        return p


def normal_rate(grad, hess, velocity) -> np.ndarray:
    """Seed eq 2.104: ``Ṅ = |∇d|⁻¹ (E − NNᵀ) ∇∇d v`` [1/s] for points moving at ``velocity``.

    Args:
        grad: [n, 3] distance gradient; hess: [n, 3, 3] Hessian [1/m]; velocity: [n, 3] [m/s].
    """
    g = np.asarray(grad, float)
    gn = np.linalg.norm(g, axis=-1, keepdims=True)
    N = g / gn
    hv = np.einsum("...ij,...j->...i", hess, velocity)
    return (hv - N * np.einsum("...i,...i->...", N, hv)[..., None]) / gn


# ===================================================================================== transitions
class ContactTransition(enum.IntEnum):
    """What a collision leads to (seed §2.5.3)."""

    BOUNCE = 0            #: resolve with the pair's e and fly on
    SETTLE = 1            #: slow approach, surface pushing in: final e = 0 collision, then contact motion


def contact_entry(normal_velocity, normal_acceleration, *, threshold: float):
    """Seed §2.5.3: does a collision start contact motion?

    Args:
        normal_velocity: normal contact-point velocity at the start of the collision [m/s] (< 0).
        normal_acceleration: free normal acceleration of the contact point [m/s²], i.e.
            ``N·(g + C + W) + v·Ṅ`` without any contact force (negative: gravity pulls it in).
        threshold: approach speed below which contact motion may start [m/s] (> 0).

    Returns:
        :class:`ContactTransition` per element (SETTLE when ``|v_n| < threshold`` and the free normal
        acceleration is negative, else BOUNCE); an int8 array for array input.
    """
    if not (threshold > 0 and math.isfinite(threshold)):
        raise InputError("threshold", threshold, "must be a positive speed [m/s]")
    vn = np.asarray(normal_velocity, float)
    an = np.asarray(normal_acceleration, float)
    out = np.where((np.abs(vn) < threshold) & (an < 0.0), int(ContactTransition.SETTLE),
                   int(ContactTransition.BOUNCE)).astype(np.int8)
    return ContactTransition(int(out)) if out.ndim == 0 else out


def contact_exit(normal_force):
    """Seed §2.5.3: a contact is left when the normal force it would need is negative [N]; bool."""
    return np.asarray(normal_force, float) < 0.0


def enter_contact(*, mass, inertia, contact_point, normal, velocity, omega, friction, attitude=None,
                  **kwargs):
    """The final collision that starts contact motion: Stronge's impact with e = 0.

    Same arguments as :func:`systems.probe_contact.surface_impacts.resolve_impacts` (without restitution); returns its
    :class:`~systems.probe_contact.surface_impacts.ImpactResult`. Afterwards the normal contact velocity is zero (up to
    round-off) and contact motion takes over.
    """
    return resolve_impacts(mass=mass, inertia=inertia, contact_point=contact_point, normal=normal,
                           velocity=velocity, omega=omega, restitution=0.0, friction=friction,
                           attitude=attitude, **kwargs)


def contact_work_size(k: int) -> int:
    """Length of the per-row work array of :data:`contact_forces_row` for ``k`` contact slots."""
    return 18 * k * k + 51 * k + 100


# ===================================================================================== force kernel
def _contact_forces_row(i, mass, inertia, c):
    """Contact forces of every active contact of body row i (see the module docstring): ``mass``
    [n], ``inertia`` [n, 3, 3] (body, about the CoM) and ``c``, a record with the fields of
    :data:`~systems.probe_contact.records.ContactSet` (K contact slots per row): the row's state, its
    free acceleration and torque, its contacts and the law's regularisation in; the contact forces,
    normal forces, contact states and total wrench out. The Baumgarte rate β stabilises the
    constraint as N·v̇ + v·Ṅ = −β N·v (0: eq 2.92 as printed).
    """
    work, attitude, velocity, omega, accel, torque = c.work, c.attitude, c.velocity, c.omega, c.accel, c.torque
    active, points, normals, ndots, sphere_radius = c.act, c.points, c.normals, c.ndots, c.srad
    friction, rolling, vstar, wstar, baumgarte = c.fric, c.rolling, c.vstar, c.wstar, c.baumgarte
    out_force, out_fn, out_state, out_total = c.out_force, c.out_fn, c.out_state, c.out_total
    w = work[i]
    K = active.shape[1]
    m = mass[i]
    minv = 1.0 / m
    I = inertia[i]
    j00, j01, j02, j11, j12, j22 = _inv3(I[0, 0], I[0, 1], I[0, 2], I[1, 1], I[1, 2], I[2, 2])
    q0, q1, q2, q3 = attitude[i, 0], attitude[i, 1], attitude[i, 2], attitude[i, 3]
    wx, wy, wz = omega[i, 0], omega[i, 1], omega[i, 2]
    vx, vy, vz = _rot_inv(q0, q1, q2, q3, velocity[i, 0], velocity[i, 1], velocity[i, 2])
    ax, ay, az = _rot_inv(q0, q1, q2, q3, accel[i, 0], accel[i, 1], accel[i, 2])
    # angular acceleration without contact: α0 = I⁻¹(τ − ω × Iω)
    iwx = I[0, 0] * wx + I[0, 1] * wy + I[0, 2] * wz
    iwy = I[1, 0] * wx + I[1, 1] * wy + I[1, 2] * wz
    iwz = I[2, 0] * wx + I[2, 1] * wy + I[2, 2] * wz
    gx, gy, gz = _cross(wx, wy, wz, iwx, iwy, iwz)
    a0x, a0y, a0z = _japply(j00, j01, j02, j11, j12, j22, torque[i, 0] - gx, torque[i, 1] - gy, torque[i, 2] - gz)
    # layout of the work row
    o_mat = 0                      # (3K)² stick matrix, or the K² slip matrix G and G Gᵀ
    o_vec = 9 * K * K              # (3K)² eigenvectors
    o_tmp = 18 * K * K             # 3K scratch
    o_rhs = o_tmp + 3 * K          # 3K right-hand side / solution
    o_n = o_rhs + 3 * K            # N_k (body)
    o_b = o_n + 3 * K              # b_k: free contact-point acceleration (body)
    o_v = o_b + 3 * K              # v_k: contact-point velocity (body)
    o_fs = o_v + 3 * K             # stick force (body)
    o_t = o_fs + 3 * K             # slip direction t̂_k (body)
    o_f = o_t + 3 * K              # final force (body)
    o_nd = o_f + 3 * K             # v_k·Ṅ_k
    o_lam = o_nd + K               # slip normal magnitudes
    o_idx = o_lam + K              # active list (as floats)
    o_on = o_idx + K               # 1.0 while contact k is in the active set
    o_c = o_on + K                 # C = B W^½: 3K × 6 factor of the stick matrix (M = C Cᵀ)
    o_s6 = o_c + 18 * K            # 6×6 S = CᵀC
    o_v6 = o_s6 + 36               # its eigenvectors
    o_t6 = o_v6 + 36               # 6 scratch
    o_u6 = o_t6 + 6                # 6 scratch
    # W = diag(1/m, I⁻¹) = L Lᵀ: L = diag(1/√m, Cholesky factor of I⁻¹) (lower triangular)
    sm = math.sqrt(minv)
    l00 = math.sqrt(j00)
    l10 = j01 / l00
    l20 = j02 / l00
    l11 = math.sqrt(j11 - l10 * l10)
    l21 = (j12 - l20 * l10) / l11
    l22 = math.sqrt(j22 - l20 * l20 - l21 * l21)
    for k in range(K):
        w[o_on + k] = 1.0 if active[i, k] != 0 else 0.0
        out_state[i, k] = 0
        out_fn[i, k] = 0.0
        for c in range(3):
            out_force[i, k, c] = 0.0
            w[o_f + 3 * k + c] = 0.0
        if active[i, k] == 0:
            continue
        out_state[i, k] = 1
        rx, ry, rz = points[i, k, 0], points[i, k, 1], points[i, k, 2]
        nx, ny, nz = _rot_inv(q0, q1, q2, q3, normals[i, k, 0], normals[i, k, 1], normals[i, k, 2])
        dx, dy, dz = _rot_inv(q0, q1, q2, q3, ndots[i, k, 0], ndots[i, k, 1], ndots[i, k, 2])
        cx, cy, cz = _cross(wx, wy, wz, rx, ry, rz)
        ux, uy, uz = vx + cx, vy + cy, vz + cz
        rho = sphere_radius[i, k]
        if rho > 0.0:
            rdx, rdy, rdz = -rho * dx, -rho * dy, -rho * dz
        else:
            rdx, rdy, rdz = cx, cy, cz
        ex, ey, ez = _cross(wx, wy, wz, rdx, rdy, rdz)
        tx, ty, tz = _cross(a0x, a0y, a0z, rx, ry, rz)
        w[o_n + 3 * k], w[o_n + 3 * k + 1], w[o_n + 3 * k + 2] = nx, ny, nz
        w[o_b + 3 * k], w[o_b + 3 * k + 1], w[o_b + 3 * k + 2] = ax + tx + ex, ay + ty + ey, az + tz + ez
        w[o_v + 3 * k], w[o_v + 3 * k + 1], w[o_v + 3 * k + 2] = ux, uy, uz
        w[o_nd + k] = ux * dx + uy * dy + uz * dz + baumgarte * (ux * nx + uy * ny + uz * nz)   # v·Ṅ + β N·v
    for _attempt in range(K + 1):
        # np.int64, not the literal 0: type inference would first resolve the solve below with
        # na : Literal[int](0) and compile a useless specialisation of it (1.3 s, measured)
        na = np.int64(0)
        for k in range(K):
            if w[o_on + k] > 0.0:
                w[o_idx + na] = k
                na += 1
        if na == 0:
            break
        n3 = 3 * na
        # ---- does the stick solution matter (a contact slower than v*)? When every contact slides
        # faster, nothing below reads it (the blend of eq 2.106 takes the slip forces whole, and the
        # slip directions their velocities), so it is not solved: two thirds of deploy-cube's force
        # evaluations (docs/design.md §8.29)
        stick_matters = False
        for a in range(na):
            ka = int(w[o_idx + a])
            nx, ny, nz = w[o_n + 3 * ka], w[o_n + 3 * ka + 1], w[o_n + 3 * ka + 2]
            ux, uy, uz = w[o_v + 3 * ka], w[o_v + 3 * ka + 1], w[o_v + 3 * ka + 2]
            un = ux * nx + uy * ny + uz * nz
            ux, uy, uz = ux - un * nx, uy - un * ny, uz - un * nz
            if ux * ux + uy * uy + uz * uz < vstar * vstar:
                stick_matters = True
        if not stick_matters:
            for a in range(na):
                ka = int(w[o_idx + a])
                w[o_fs + 3 * ka], w[o_fs + 3 * ka + 1], w[o_fs + 3 * ka + 2] = 0.0, 0.0, 0.0
        stick_ok = False
        if stick_matters:
            # ---- stick: Σ_l M_kl F_l = −(b_k + N_k (v_k·Ṅ_k))   (eqs 2.93, 2.56), minimum-norm solution.
            # M_kl = B_k W B_lᵀ with B_k = [1, −[r_k]×] (the acceleration of point k from the CoM's
            # and the angular acceleration) and W = diag(1/m, I⁻¹): M has rank ≤ 6, and M⁺ is taken
            # through the 6×6 Gram matrix of C = B L (W = L Lᵀ), :data:`low_rank_pinv_solve`.
            for a in range(na):
                ka = int(w[o_idx + a])
                rx, ry, rz = points[i, ka, 0], points[i, ka, 1], points[i, ka, 2]
                # rows 3a..3a+2 of C: [1/√m · 1 | −[r]× L]
                for c in range(3):
                    lx = l00 if c == 0 else 0.0                    # column c of L
                    ly = l10 if c == 0 else (l11 if c == 1 else 0.0)
                    lz = l20 if c == 0 else (l21 if c == 1 else l22)
                    cx, cy, cz = _cross(rx, ry, rz, lx, ly, lz)      # [r]× L e_c
                    w[o_c + 6 * (3 * a) + c] = sm if c == 0 else 0.0
                    w[o_c + 6 * (3 * a + 1) + c] = sm if c == 1 else 0.0
                    w[o_c + 6 * (3 * a + 2) + c] = sm if c == 2 else 0.0
                    w[o_c + 6 * (3 * a) + 3 + c] = -cx
                    w[o_c + 6 * (3 * a + 1) + 3 + c] = -cy
                    w[o_c + 6 * (3 * a + 2) + 3 + c] = -cz
                for c in range(3):
                    w[o_rhs + 3 * a + c] = -(w[o_b + 3 * ka + c] + w[o_n + 3 * ka + c] * w[o_nd + ka])
            edge = False
            if na == 2:     # an edge: equal and opposite forces along it are CCᵀ's null space
                ka = int(w[o_idx])
                kb = int(w[o_idx + 1])
                ex = points[i, kb, 0] - points[i, ka, 0]
                ey = points[i, kb, 1] - points[i, ka, 1]
                ez = points[i, kb, 2] - points[i, ka, 2]
                el = math.sqrt(ex * ex + ey * ey + ez * ez)
                if el > 0.0:
                    el = 1.0 / (math.sqrt(2.0) * el)
                    w[o_u6], w[o_u6 + 1], w[o_u6 + 2] = ex * el, ey * el, ez * el
                    w[o_u6 + 3], w[o_u6 + 4], w[o_u6 + 5] = -ex * el, -ey * el, -ez * el
                    edge = True
            ok = _lr_pinv(w, o_c, n3, o_rhs, o_s6, o_v6, o_t6, o_u6, 1e-10, edge) > 0
            fn_sum = 0.0
            ft_sum = 0.0
            fnf_sum = 0.0
            worst = -1
            worst_fn = 0.0
            for a in range(na):
                ka = int(w[o_idx + a])
                fx, fy, fz = w[o_rhs + 3 * a], w[o_rhs + 3 * a + 1], w[o_rhs + 3 * a + 2]
                w[o_fs + 3 * ka], w[o_fs + 3 * ka + 1], w[o_fs + 3 * ka + 2] = fx, fy, fz
                nx, ny, nz = w[o_n + 3 * ka], w[o_n + 3 * ka + 1], w[o_n + 3 * ka + 2]
                fn = fx * nx + fy * ny + fz * nz
                ftx, fty, ftz = fx - fn * nx, fy - fn * ny, fz - fn * nz
                fn_sum += abs(fn)
                ft_sum += math.sqrt(ftx * ftx + fty * fty + ftz * ftz)
                fnf_sum += friction[i, ka] * fn
                if fn < worst_fn:
                    worst_fn = fn
                    worst = ka
            if not ok:
                break
            if worst >= 0 and worst_fn < -1e-9 * fn_sum:
                w[o_on + worst] = 0.0      # leaving: holding this contact would need a pull
                out_state[i, worst] = 2
                continue
            stick_ok = ft_sum <= fnf_sum * (1.0 + 1e-12) + 1e-300
        # ---- slip directions
        anyslip = False
        for a in range(na):
            ka = int(w[o_idx + a])
            nx, ny, nz = w[o_n + 3 * ka], w[o_n + 3 * ka + 1], w[o_n + 3 * ka + 2]
            ux, uy, uz = w[o_v + 3 * ka], w[o_v + 3 * ka + 1], w[o_v + 3 * ka + 2]
            un = ux * nx + uy * ny + uz * nz
            ux, uy, uz = ux - un * nx, uy - un * ny, uz - un * nz
            vt = math.sqrt(ux * ux + uy * uy + uz * uz)
            if not stick_ok:
                fx, fy, fz = w[o_fs + 3 * ka], w[o_fs + 3 * ka + 1], w[o_fs + 3 * ka + 2]
                fn = fx * nx + fy * ny + fz * nz
                fx, fy, fz = fx - fn * nx, fy - fn * ny, fz - fn * nz
                ft = math.sqrt(fx * fx + fy * fy + fz * fz)
                if ft > 0.0 and vt < vstar:
                    sc = (vstar - vt) / ft
                    ux, uy, uz = ux - sc * fx, uy - sc * fy, uz - sc * fz
                    vt = math.sqrt(ux * ux + uy * uy + uz * uz)
            if vt > 0.0:
                ux, uy, uz = ux / vt, uy / vt, uz / vt
                anyslip = True
            else:
                ux, uy, uz = 0.0, 0.0, 0.0
            w[o_t + 3 * ka], w[o_t + 3 * ka + 1], w[o_t + 3 * ka + 2] = ux, uy, uz
        # ---- slip: N_k · Σ_l M_kl (N_l − f_l t̂_l) λ_l = −(N_k·b_k + v_k·Ṅ_k)   (eq 2.99)
        if anyslip or not stick_ok:
            o_g = o_mat                     # G, na × na
            o_gg = o_mat + na * na          # G Gᵀ
            for a in range(na):
                ka = int(w[o_idx + a])
                nax, nay, naz = w[o_n + 3 * ka], w[o_n + 3 * ka + 1], w[o_n + 3 * ka + 2]
                for bb in range(na):
                    kb = int(w[o_idx + bb])
                    fb = friction[i, kb]
                    dxb = w[o_n + 3 * kb] - fb * w[o_t + 3 * kb]
                    dyb = w[o_n + 3 * kb + 1] - fb * w[o_t + 3 * kb + 1]
                    dzb = w[o_n + 3 * kb + 2] - fb * w[o_t + 3 * kb + 2]
                    mx, my, mz = _mcouple(minv, j00, j01, j02, j11, j12, j22, points[i, ka, 0], points[i, ka, 1],
                                          points[i, ka, 2], points[i, kb, 0], points[i, kb, 1], points[i, kb, 2],
                                          dxb, dyb, dzb)
                    w[o_g + a * na + bb] = nax * mx + nay * my + naz * mz
                w[o_rhs + a] = -(nax * w[o_b + 3 * ka] + nay * w[o_b + 3 * ka + 1] + naz * w[o_b + 3 * ka + 2]
                                 + w[o_nd + ka])
            for a in range(na):
                for bb in range(na):
                    s = 0.0
                    for c in range(na):
                        s += w[o_g + a * na + c] * w[o_g + bb * na + c]
                    w[o_gg + a * na + bb] = s
            ok = _pinv(w, o_gg, o_vec, o_tmp, na, o_rhs, 1e-12) > 0
            if not ok:
                break
            for a in range(na):  # λ = Gᵀ y
                s = 0.0
                for c in range(na):
                    s += w[o_g + c * na + a] * w[o_rhs + c]
                w[o_lam + a] = s
        else:
            for a in range(na):
                w[o_lam + a] = 0.0
        # ---- blend (eq 2.106) and the leaving rule
        worst = -1
        worst_fn = 0.0
        fn_sum = 0.0
        for a in range(na):
            ka = int(w[o_idx + a])
            nx, ny, nz = w[o_n + 3 * ka], w[o_n + 3 * ka + 1], w[o_n + 3 * ka + 2]
            lam = 1.0
            if stick_ok:
                ux, uy, uz = w[o_v + 3 * ka], w[o_v + 3 * ka + 1], w[o_v + 3 * ka + 2]
                un = ux * nx + uy * ny + uz * nz
                ux, uy, uz = ux - un * nx, uy - un * ny, uz - un * nz
                vt = math.sqrt(ux * ux + uy * uy + uz * uz)
                lam = min(vt, vstar) / vstar if vstar > 0.0 else 1.0
            fk = friction[i, ka]
            ln = w[o_lam + a]
            for c in range(3):
                w[o_f + 3 * ka + c] = (lam * ln * (w[o_n + 3 * ka + c] - fk * w[o_t + 3 * ka + c])
                                       + (1.0 - lam) * w[o_fs + 3 * ka + c])
            fn = w[o_f + 3 * ka] * nx + w[o_f + 3 * ka + 1] * ny + w[o_f + 3 * ka + 2] * nz
            fn_sum += abs(fn)
            if fn < worst_fn:
                worst_fn = fn
                worst = ka
        if worst >= 0 and worst_fn < -1e-9 * fn_sum:
            w[o_on + worst] = 0.0
            out_state[i, worst] = 2
            for c in range(3):
                w[o_f + 3 * worst + c] = 0.0
            continue
        break
    # ---- totals, rolling resistance (eqs 2.107–2.110)
    fxs, fys, fzs = 0.0, 0.0, 0.0
    txs, tys, tzs = 0.0, 0.0, 0.0
    fnt = 0.0
    rbx, rby, rbz = 0.0, 0.0, 0.0
    for k in range(K):
        if w[o_on + k] == 0.0:
            if out_state[i, k] == 1:
                out_state[i, k] = 2
            continue
        fx, fy, fz = w[o_f + 3 * k], w[o_f + 3 * k + 1], w[o_f + 3 * k + 2]
        rx, ry, rz = points[i, k, 0], points[i, k, 1], points[i, k, 2]
        fn = fx * w[o_n + 3 * k] + fy * w[o_n + 3 * k + 1] + fz * w[o_n + 3 * k + 2]
        out_fn[i, k] = fn
        fnt += fn
        rbx += fn * rx
        rby += fn * ry
        rbz += fn * rz
        fxs += fx
        fys += fy
        fzs += fz
        cx, cy, cz = _cross(rx, ry, rz, fx, fy, fz)
        txs += cx
        tys += cy
        tzs += cz
        gxx, gyy, gzz = _rot(q0, q1, q2, q3, fx, fy, fz)
        out_force[i, k, 0] = gxx
        out_force[i, k, 1] = gyy
        out_force[i, k, 2] = gzz
    c0, c1, c2 = rolling[i, 0], rolling[i, 1], rolling[i, 2]
    if fnt > 0.0 and (c0 > 0.0 or c1 > 0.0 or c2 > 0.0):
        rbx, rby, rbz = rbx / fnt, rby / fnt, rbz / fnt
        om = math.sqrt(wx * wx + wy * wy + wz * wz)
        lx, ly, lz = 0.0, 0.0, 0.0
        if om > 0.0:
            lx, ly, lz = -c0 * fnt * wx / om, -c1 * fnt * wy / om, -c2 * fnt * wz / om
        # lock: the torque that holds ω (α = 0), bounded by the rolling magnitude
        kx = gx - txs - torque[i, 0]
        ky = gy - tys - torque[i, 1]
        kz = gz - tzs - torque[i, 2]
        q2s = 0.0
        if c0 > 0.0:
            q2s += (kx / (c0 * fnt)) ** 2
        else:
            kx = 0.0
        if c1 > 0.0:
            q2s += (ky / (c1 * fnt)) ** 2
        else:
            ky = 0.0
        if c2 > 0.0:
            q2s += (kz / (c2 * fnt)) ** 2
        else:
            kz = 0.0
        if q2s > 1.0:
            sc = 1.0 / math.sqrt(q2s)
            kx, ky, kz = kx * sc, ky * sc, kz * sc
        lam = min(om, wstar) / wstar if wstar > 0.0 else 1.0
        lx = lam * lx + (1.0 - lam) * kx
        ly = lam * ly + (1.0 - lam) * ky
        lz = lam * lz + (1.0 - lam) * kz
        jx, jy, jz = _japply(j00, j01, j02, j11, j12, j22, lx, ly, lz)
        px, py, pz = _cross(rbx, rby, rbz, jx, jy, jz)
        fxs += m * px
        fys += m * py
        fzs += m * pz
        txs += lx
        tys += ly
        tzs += lz
    Fx, Fy, Fz = _rot(q0, q1, q2, q3, fxs, fys, fzs)
    out_total[i, 0] = Fx
    out_total[i, 1] = Fy
    out_total[i, 2] = Fz
    out_total[i, 3] = txs
    out_total[i, 4] = tys
    out_total[i, 5] = tzs


contact_forces_row = dual_call(_contact_forces_row)
_contact_forces_cpu = contact_forces_row.cpu


@cpu_parallel
def contact_forces_rows(n, mass, inertia, c):
    for i in prange(n):
        _contact_forces_cpu(i, mass, inertia, c)


# ===================================================================================== demo system
class SurfaceContactMotion(System):
    """DERIVATIVE phase: contact motion of rigid bodies on an analytic surface (a demonstration).

    Every body row is tested against ``surface`` at every integrator stage: its contacts whose gap
    is at most ``contact_distance`` are active, their forces follow the module's force law, and the
    total is accumulated into ``body_force``/``body_torque``. It must run after the systems that
    add the other forces (gravity, loads): it reads their sum to get the free acceleration.

    The full phase machinery (fly / collide / contact per row, entering through a final e = 0
    collision) is a later issue; this system assumes the bodies are already in contact.

    Args:
        surface: :class:`PlaneSurface`, :class:`SphereSurface`, or any object with
            ``evaluate(points [n, 3]) -> (d [n], grad [n, 3], hess [n, 3, 3])``.
        params: the body–surface pair's :class:`~components.contact_params.ContactParams`.
        vertices: [K, 3] contact vertices relative to the body reference point [m], body axes; or
        sphere_radius: a sphere of this radius [m] about the CoM (its contact point is −ρN).
        rolling_mask: body axes about which the body rolls (for [C_RR] = C_RR · diag(mask)).
        rolling_radius: R of eqs 2.85/2.107 [m] (default: the sphere radius, else 0).
        vstar: slip regularisation speed v* [m/s] (eq 2.105). The blend makes the tangential
            dynamics stiff, with a rate of about ``f F_N M_tt / v*`` (``F_N`` the normal force,
            ``M_tt ≥ 1/m`` the tangential entry of [M]: 1/m for a sliding block, 3.5/m for a rolling
            solid sphere): an explicit step h needs that rate times h below ~2 (RK4: 2.78), e.g.
            v* >= 1.5 cm/s for a block with f = 1 on level ground at h = 1 ms, 5 cm/s for a sphere.
        wstar: rolling regularisation rate ω* [rad/s] (eq 2.87).
        baumgarte: β [1/s] of the constraint stabilisation (module docstring; 0: eq 2.92 as printed).
        contact_distance: a contact is active while its gap is at most this [m].
    """

    phase = Phase.DERIVATIVE
    reads = ("body_position", "body_velocity", "body_attitude", "body_omega", "body_mass", "body_inertia",
             "body_com", "body_force", "body_torque")
    accumulates = ("body_force", "body_torque")

    def __init__(self, surface, *, params: ContactParams, vertices=None, sphere_radius: float | None = None,
                 rolling_mask=(1.0, 1.0, 1.0), rolling_radius: float | None = None, vstar: float = 1e-4,
                 wstar: float = 1e-3, baumgarte: float = BAUMGARTE_RATE, contact_distance: float = 1e-6):
        if not hasattr(surface, "evaluate"):
            raise InputError("surface", surface, "must provide evaluate(points) -> (d, grad, hess)")
        if not isinstance(params, ContactParams):
            raise InputError("params", params, "must be a ContactParams")
        if (vertices is None) == (sphere_radius is None):
            raise InputError("shape", (vertices, sphere_radius), "give exactly one of vertices or sphere_radius")
        if vertices is not None:
            v = np.asarray(vertices, float)
            if v.ndim != 2 or v.shape[1] != 3 or v.shape[0] < 1 or not np.all(np.isfinite(v)):
                raise InputError("vertices", np.shape(vertices), "must be a finite [K, 3] array, K >= 1")
            self.vertices = np.ascontiguousarray(v)
            self.sphere_radius = 0.0
        else:
            if not (sphere_radius > 0 and math.isfinite(sphere_radius)):
                raise InputError("sphere_radius", sphere_radius, "must be > 0 m")
            self.vertices = np.zeros((1, 3))
            self.sphere_radius = float(sphere_radius)
        for name, val in (("vstar", vstar), ("wstar", wstar), ("contact_distance", contact_distance)):
            if not (val > 0 and math.isfinite(val)):
                raise InputError(name, val, "must be a positive finite number")
        if not (baumgarte >= 0 and math.isfinite(baumgarte)):
            raise InputError("baumgarte", baumgarte, "must be a finite rate >= 0 1/s")
        self.baumgarte = float(baumgarte)
        mask = np.asarray(rolling_mask, float)
        if mask.shape != (3,) or np.any(mask < 0):
            raise InputError("rolling_mask", rolling_mask, "must be 3 non-negative weights")
        rr = self.sphere_radius if rolling_radius is None else float(rolling_radius)
        if not (rr >= 0 and math.isfinite(rr)):
            raise InputError("rolling_radius", rolling_radius, "must be >= 0 m")
        self.surface = surface
        self.params = params
        self.rolling = params.rolling_resistance * mask * rr
        self.vstar, self.wstar, self.contact_distance = float(vstar), float(wstar), float(contact_distance)
        self.last = None

    def bind(self, world) -> None:
        self.tables = world.tables_with("body_position", "body_velocity", "body_attitude", "body_omega",
                                        "body_mass", "body_inertia", "body_com", "body_force", "body_torque")
        K = self.vertices.shape[0]
        self.work = [np.zeros((t.row_count, contact_work_size(K))) for t in self.tables]

    def process(self, frame) -> None:
        for t, work in zip(self.tables, self.work):
            self._process_table(t, work)

    def _process_table(self, t, work) -> None:
        n = t.row_count
        K = self.vertices.shape[0]
        att = t["body_attitude"]
        att = att / np.linalg.norm(att, axis=1, keepdims=True)   # integrator stages are not unit
        com = t["body_com"]
        omega = t["body_omega"]
        mass = t["body_mass"]
        # state at the CoM (target frame)
        com_t = _quat_rotate_np(att, com)
        x_com = t["body_position"] + com_t
        v_com = t["body_velocity"] + _quat_rotate_np(att, np.cross(omega, com))
        force_b = _quat_rotate_inverse_np(att, t["body_force"])
        accel = t["body_force"] / mass[:, None]
        torque = t["body_torque"] - np.cross(com, force_b)           # about the CoM, body axes
        if self.sphere_radius > 0:
            d, grad, hess = self.surface.evaluate(x_com)
            gn = np.linalg.norm(grad, axis=1, keepdims=True)
            N = grad / gn
            gap = (d - self.sphere_radius).reshape(n, 1)
            ndot = normal_rate(grad, hess, v_com).reshape(n, 1, 3)
            r_body = _quat_rotate_inverse_np(att, -self.sphere_radius * N).reshape(n, 1, 3)
            N = N.reshape(n, 1, 3)
            rho = np.full((n, 1), self.sphere_radius)
        else:
            r_body = self.vertices[None] - com[:, None, :]       # [n, K, 3], from the CoM, body axes
            pos = x_com[:, None, :] + _quat_rotate_np(att[:, None, :], r_body)
            vel = v_com[:, None, :] + _quat_rotate_np(att[:, None, :], np.cross(omega[:, None, :], r_body))
            d, grad, hess = self.surface.evaluate(pos.reshape(-1, 3))
            gap = d.reshape(n, K)
            N = (grad / np.linalg.norm(grad, axis=1, keepdims=True)).reshape(n, K, 3)
            ndot = normal_rate(grad, hess, vel.reshape(-1, 3)).reshape(n, K, 3)
            rho = np.zeros((n, K))
        active = ((gap <= self.contact_distance) & (t["row_status"][:, None] == 0)).astype(np.int8)
        out_force = np.zeros((n, K, 3))
        out_fn = np.zeros((n, K))
        out_state = np.zeros((n, K), np.int8)
        out_total = np.zeros((n, 6))
        fric = np.full((n, K), self.params.friction)
        rolling = np.broadcast_to(self.rolling, (n, 3)).copy()
        c = ContactSet(work, np.ascontiguousarray(att), np.ascontiguousarray(v_com), np.ascontiguousarray(omega),
                       np.ascontiguousarray(accel), np.ascontiguousarray(torque), active, np.ascontiguousarray(r_body),
                       np.ascontiguousarray(N), np.ascontiguousarray(ndot), rho, fric, rolling, self.vstar, self.wstar,
                       self.baumgarte, out_force, out_fn, out_state, out_total)
        contact_forces_rows(n, np.ascontiguousarray(mass), np.ascontiguousarray(t["body_inertia"]), c)
        F = out_total[:, :3]
        tq = out_total[:, 3:] + np.cross(com, _quat_rotate_inverse_np(att, F))   # about the reference point
        t["body_force"][...] += F
        t["body_torque"][...] += tq
        self.last = {"force": out_force, "normal_force": out_fn, "state": out_state, "total": out_total,
                     "gap": gap}
