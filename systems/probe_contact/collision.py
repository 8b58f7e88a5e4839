"""Impulsive collisions of rigid probes with a static surface (EVENT phase): Stronge's impact model.

Seed 004 §2.5.1–2.5.2 (eqs 2.46–2.91), §2.3.2 (eq 2.33, impact normal by vertex type) and §2.6
(eqs 2.111–2.113, regolith restitution). One vertex of a rigid body touches a static surface
(terrain or rock, in the target frame) with unit normal ``N`` (pointing out of the surface, toward
the body). The collision is instantaneous: position and attitude are frozen, only the velocities
jump. Every kernel is written once (:func:`ecs.kernels.dual_call`: :func:`ecs.kernels.dual` without
IR inlining) and runs as a CPU row driver or a CUDA kernel from the same source; a
collision keeps its constants and integrator state in one float64 work row (``WORK_SIZE``).

Here: the row kernels :data:`resolve_impact` / :data:`impact_row` / :data:`vertex_impacts_row` with
their CPU drivers :func:`impact_rows` / :func:`vertex_impacts_rows`, :data:`impact_normal` (eq 2.33)
and :data:`regolith_restitution` (eqs 2.111–2.113; a new restitution law goes beside it). The
integration in the impulse (work array, right-hand side, DP5(4) step, event location,
:data:`~systems.probe_contact.impulse.reversal_direction` of eqs 2.74–2.77) is
:mod:`systems.probe_contact.impulse`; the numpy API :func:`~systems.probe_contact.surface_impacts.resolve_impacts`
(a batch of independent single-vertex impacts, CPU or GPU), :func:`~systems.probe_contact.surface_impacts.kinetic_energy`
and the EVENT system :class:`~systems.probe_contact.surface_impacts.ResolveSurfaceImpacts` are
:mod:`systems.probe_contact.surface_impacts`.

Model (Stronge, *Impact Mechanics*, CUP 2000/2018, ch. 5; seed eqs 2.53–2.84)
-----------------------------------------------------------------------------
* **Inverse inertia matrix** (eqs 2.55–2.56): the velocity of body point ``r_i`` (from the CoM)
  changes by ``[M_ij] F`` for an impulse ``F`` at point ``r_j``, ``[M_ij] = E/m − [r̃_i] I⁻¹ [r̃_j]``;
  the collision uses ``[M] = [M_rr]``, symmetric positive definite. It is expressed in the contact
  frame ``C = (û₁, û₂, N)`` (eq 2.48); we take ``û₁`` along the initial sliding velocity (or, with no
  sliding, along the tangential part of ``[M]N``), which makes the whole computation independent of
  the frame the inputs are written in.
* **Normal impulse p as the independent variable** (eqs 2.57–2.59): ``dv/dp = [M] dP/dp`` with
  ``dP/dp = (−f cos φ, −f sin φ, 1)`` in slip (eq 2.65), ``(−f* cos φ*, −f* sin φ*, 1)`` in stick
  (eq 2.71) and ``(−f cos φ̂, −f sin φ̂, 1)`` in slip reversal (eq 2.78). Body velocities follow the
  total impulse exactly: ``Δv = P/m``, ``Δω = I⁻¹ (r × P)`` (eq 2.58).
* **Stick** (eqs 2.66–2.70): with ``B`` the tangential 2×2 block of ``[M]`` and ``a = (M₁₃, M₂₃)``,
  keeping ``v₁ = v₂ = 0`` needs ``f*(cos φ*, sin φ*) = B⁻¹ a``; stick holds iff ``f ≥ f*``.
  Eq 2.69 is evaluated with ``atan2`` (the printed ``arctan`` loses the quadrant). During stick
  ``dv₃/dp = 1/(M⁻¹)₃₃ > 0``.
* **Slip reversal** (eqs 2.72–2.78): if ``f < f*`` when the sliding speed reaches zero, slip
  resumes along the constant direction ``φ̂`` solving ``h(φ) = s dφ/dp = 0`` with
  ``g(φ) = ds/dp > 0``; solved by the third-order Householder iteration of eq 2.76 from
  ``φ₀ = φ*`` (eq 2.77 derivatives), checked, and if it lands on a wrong root (``g ≤ 0``) replaced
  by a bracketed scan of ``h`` — Stronge shows exactly one root has ``g > 0``.
* **Energetic restitution** (eq 2.60): ``W_n(p) = ∫₀ᵖ v₃ dp'`` is the work of the normal impulse;
  compression ends at the first ``v₃ = 0`` with work ``W_c < 0``, and the collision ends when the
  restitution work reaches ``−e² W_c``, i.e. ``W_n = (1 − e²) W_c``.

Numerical method (our choices, documented)
------------------------------------------
* Only the initial slip phase needs numerical integration: the stick and reversal phases have a
  constant ``dP/dp`` and are solved in closed form (``v₃`` linear and ``W_n`` quadratic in ``p``),
  so a central impact (sphere, or ``r ∥ N``) is exact to round-off.
* Slip is integrated in ``p`` with Dormand–Prince 5(4) on the state ``(P₁, P₂, W_n, L_RR)``
  (``W_n = ∫ v₃ dp`` the normal work, ``L_RR`` the rolling-resistance angular impulse); the
  contact velocity is never integrated, it is ``v = v₀ + [M] P`` (linear in the impulse).
* **Stretching variable τ** (eqs 2.80–2.84, Bhatt & Koechling): τ exists to approach ``s = 0``
  without chattering, since ``dp = (s/f) dτ`` shrinks the impulse steps in proportion to ``s``. We
  keep that step rule but not the change of variable: every slip step is capped at
  ``Δp = s/|ds/dp|``, the impulse at which the current sliding direction reaches ``s = 0`` (the
  limit ``Δτ → ∞`` of a τ-step). A straight approach (every central impact) lands on ``s = 0`` in
  one exact step; a curved approach converges to the attracting ray superlinearly; stick is never
  stepped over, and the integrator sees no ``1/s`` singularity because it works on ``P`` (Cartesian)
  rather than on ``(s, φ)``. Integrating in τ instead would make the sphere's linear hodograph an
  exponential in τ and cost hundreds of RK steps to reach 1e-10 accuracy. Stage points inside the
  stick tolerance use the step's starting slip direction (they lie on the approach ray).
* **Events** (compression end ``v₃ = 0``, termination when the restitution work reaches ``−e² W_c``)
  are located inside an accepted step by a safeguarded Newton iteration on the step length
  (re-stepping from the step's start, so the located state has the full order of the method). The
  work state restarts from zero at the end of compression, so the termination test never
  subtracts two nearly equal works (which would make small-e impacts sensitive to round-off).
* **Energy**: for any impulse path, ``ΔT = ∫ v·dP = W_n + ∫ v_t·dP_t``. The collision ends at
  ``W_n = (1 − e²) W_c ≤ 0``, and the friction term is never positive: ``dP_t = −f v̂_t dp`` in slip
  and reversal, ``v_t = 0`` in stick, and the closing impulse below changes T by ``−½ v_tᵀB⁻¹v_t``.
  So an impact never adds kinetic energy (with ``C_RR = 0``; rolling resistance is an added,
  non-conservative model, see below); numerically the friction work carries the integration
  tolerance relative to itself. ``W_n`` is integrated directly (``dW_n/dp = v₃``), so for central
  impacts (``M₁₃ = M₂₃ = 0``, ``v₃`` linear in ``p``) the energetic and kinematic restitution agree
  to round-off whatever the friction does.
* **Closing the slip**: when stick will follow, a tangential impulse ``ΔP_t = −B⁻¹ v_t`` at fixed
  ``p`` ends it: from the impulse ``p_s`` at which the exact path sticks onward, the state is the
  same (stick fixes ``P_t`` by ``v_t = 0``), and before it only the normal work differs, by
  ``δW = ∫ qᵀ v_t dp`` over ``[p, p_s]`` (``q = B⁻¹a``, ``|q| = f*``), at most ``f* s (p_s − p)``: second
  order in the remaining ``s``, first order only if an event falls inside that impulse window. So
  the slip is closed as soon as that bound (the window taken as twice the straight approach's
  ``s/|ds/dp|``) is within one accepted step's allowance on ``W_n`` and no event can fall in the
  window (:data:`close_now`; typically at ``s ≈ 1e-5 |v_c|``), and at the latest when ``s`` falls
  below ``1e-8 |v_c|``; this also ends inward spirals of the hodograph (no invariant ray,
  infinitely many turns in a finite impulse). Before a reversal the slip runs down to
  ``s ≤ 1e-12 |v_c|``; a step across the discontinuity at ``s = 0`` (direction turned by more than
  90°, or no decrease) is shortened, and within the closing radius ends the slip from the step's
  start.
* **Turning onto the reversal direction without stopping** (f just below f*): near ``s = 0`` the
  hodograph need not reach ``s = 0``; the direction turns onto the invariant ray φ̂ (``h(φ̂) = 0``,
  the root of eq 2.74 with ``g > 0``) while ``s`` passes a small minimum, then grows along φ̂ at
  ``g(φ̂)``, which is tiny when f is close to f*. The turn is stiff (the direction's rate
  ``|h'(φ)|/s``) and the growth slow: 457–2,654 steps at 1e-10 on four deploy-cube corner impacts
  (f = 0.5, f* = 0.502), and at 1e-8 to 1e-6 explicit steps chattered about φ̂ without growing ``s``
  until the 100,000-step cap failed the row. Below ``s = 1e-3 |v_c|`` every slip step is kept
  within twice the direction's time scale ``s/|h'(φ)|`` where ``h'(φ) = −g − f û⊥ᵀBû⊥ < 0``
  (DP5's stability interval is ~3 of them), and once the direction lies within 0.1 rad of φ̂,
  turning towards it, and the friction impulse a constant direction φ̂ would misplace
  (``≈ f ψ s / (−h'(φ̂))``) is within a few step tolerances, the slip goes on along φ̂ in the
  closed form of the reversal phase, with the state as it is (:data:`reversal_capture`). Those
  impacts then take 18–51 steps at every tolerance from 1e-10 to 1e-5 and agree with the scipy
  reference to ≤ 1.4·rtol of ``|v_c|``.
* **Falling to stick along a ray** (f just above f*): the slip turns onto an attracting invariant
  ray φ_a (``h(φ_a) = 0``, ``h'(φ_a) < 0``, ``g(φ_a) < 0``) and falls to ``s = 0`` along it at
  ``|g(φ_a)|``, tiny near f*; stepped, the steps shrank with ``s`` (the rule above) and took up
  to 8,738 steps at 1e-10 (30,000 random impacts). Below ``1e-3 |v_c|`` the same stability cap
  holds, and once :data:`approach_ray` (Newton on h from the slip direction) finds φ_a and the
  same bound as the reversal's holds, the slip runs along φ_a at constant ``dP/dp``: one exact
  step to its closest approach to ``s = 0`` (events inside it located as on any step), then the
  closing impulse and stick (with rolling resistance the step controller bounds those steps, the
  rolling impulse being integrated too). The slowest of the 30,000 then take at most 204 steps.
* **Step sizes**: Dormand–Prince's controller (``clamp(0.9 err^(−1/5), 0.2, 5)``), with two rules
  for the approach to ``s = 0``, where the direction field's ``1/s`` makes the solution vary on the
  scale of ``s``: the step after a rejected one does not grow (Hairer's ``dopri5``), and on an
  accepted step that slowed the slip the next step shrinks with it (by ``s₁/s``). Without them the
  approach alternated rejected and accepted steps; on 30,000 random eccentric impacts the slip
  took 41.2 steps on average before and 33.7 after (stick cases 159 → 110), every outcome within
  5e-10 |v_c| of before.
* **The step itself** (without rolling resistance, every deployment impact of a pair with
  ``C_RR = 0``): :data:`~systems.probe_contact.impulse.slip_step` keeps the state (P1, P2, W_n) and
  the seven stages in locals instead of the work row, and reuses the last stage of an accepted
  step as the first of the next (FSAL) and the first stage of a rejected one for its retry: the
  same sums in the same order, so the same bits, in 7.0 instead of 8.5 µs per impact (30,000
  random eccentric impacts, one thread). With rolling resistance the state is six numbers and
  every stage is evaluated in the work row.
* Tolerance: ``rtol`` on the error of the contact-velocity state relative to ``|v_c|`` (default
  1e-10).
* **Frame invariance**: every decision (step sizes, accept/reject, phase switches) is taken on
  contact-frame quantities, which do not depend on the frame the inputs are written in; rotating
  and translating a scene changes outcomes by ~1e-13 (round-off), measured on 6×10⁴ random impacts.

Rolling resistance during collision (eqs 2.85–2.91; "not nominally active" in the seed)
----------------------------------------------------------------------------------------
``dL_RR/dp = λ (−[C_RR] R ω̂) + (1 − λ) dL_lock/dp`` with ``λ = min(|ω|, ω*)/ω*`` (eqs 2.87–2.88),
``dL_lock/dp = −[r̃] dP/dp`` (eq 2.86: holds ω). "Once ω = 0 it acts with some reduced magnitude":
we bound the lock torque by the rolling one, ``‖[C_RR R]⁻¹ dL_lock‖ ≤ 1`` (axes with ``C = 0`` get
none). A force ``dP_RR/dp = m [r̃] I⁻¹ dL_RR/dp`` at the CoM cancels its effect on the contact
velocity (eqs 2.89–2.90; the OCR'd 2.90 is garbled, this is its derivation from 2.89 and agrees with
eq 2.110), so restitution and friction are unaffected. ``[C_RR] = C_RR · diag(mask)`` in body axes.
The pair (F_RR at the CoM, L_RR) is *not* dissipative in general: over 10⁵ random impacts with
``C_RR R`` up to 0.1 |r|, 204 gained kinetic energy (the worst +120 % of T; the lock torque works
against the contact impulse). :data:`vertex_impacts_row` therefore re-resolves any impact that gains
energy without rolling resistance (its energy guard); :func:`resolve_impacts` returns the model as is.

Misprints / OCR reconstructions
-------------------------------
* Eq 2.68: ``M* = −1/(M₁₁M₂₂ − M₁₂M₂₁)`` (the "−1" printed as a separate line).
* Eq 2.77: the third derivative is ``h''' = M₁₃ cos φ + M₂₃ sin φ − 4f(M₁₁−M₂₂) cos 2φ − 8fM₁₂ sin 2φ``;
  the OCR'd text reads "M₁₃ cos φ − M₂₃ sin φ" — the sign of the ``M₂₃`` term is corrected
  (differentiate the printed ``h''``).
* Eq 2.69: ``φ* = atan2(M₁₁M₂₃ − M₂₁M₁₃, M₂₂M₁₃ − M₁₂M₂₃)`` (quadrant kept).
* Eq 2.33 (impact normal by vertex type): corner — the surface normal ``N_S``; edge —
  ``N_S − (N_S·ê) ê`` normalised (falls back to ``N_S`` when the edge is parallel to it); face —
  ``−N_F``, the negated outward face normal.
* Eq 2.111: ``θ = arcsin(−v·N/|v|)`` with ``v`` the pre-impact contact-point velocity.

Several vertices at once (policy, :data:`vertex_impacts_row`, ``ResolveSurfaceImpacts``)
------------------------------------------------------------------------------------------
Among the touching vertices, resolve the one whose normal contact velocity is the most negative,
recompute every touching vertex's normal velocity with the new body velocities, and repeat until
none approaches faster than a tolerance, or an iteration cap is hit (status
:data:`MULTI_ITERATION_CAP`, velocities of the last iteration kept). Each single impact has
``ΔT ≤ 0`` (above), so the sequence never adds energy: ``T`` is non-increasing along the iterations.
"""

from __future__ import annotations

import math

import numpy as np
import numba
from numba import prange

from components.contact_params import (PAIR_ALPHA, PAIR_CRR, PAIR_E, PAIR_E0, PAIR_E1, PAIR_F,
                                       PAIR_REGOLITH, PAIR_THETA_C, PAIR_VREF)
from ecs.stepping import step_factor
from ecs.attitude import cross_call, quat_rotate_call, quat_rotate_inverse_call
from ecs.kernels import cpu_parallel, dual_call
from systems.probe_contact.impulse import (STATE, I_L, I_WN, W_CR, W_EPS, W_F, W_J00, W_J01, W_J02, W_J11, W_J12,
                                           W_J22, W_M11, W_M12, W_M13, W_M22, W_M23, W_M33, W_N, W_OUT, W_OUT_DW,
                                           W_OUT_END, W_OUT_P, W_OUT_PV, W_OUT_WC, W_R, W_ROLL, W_U1, W_U2, W_V10,
                                           W_V20, W_V30, W_W0, W_WSTAR, W_Y, W_Y1, W_YL, WORK_SIZE, _EV_V3, _EV_WN,
                                           _NO_FSAL, W_K, copy_state, dopri_step, error_norm, integrate_span,
                                           locate_event, normal_work, reversal_direction, reversal_h,
                                           reversal_h_derivatives, tangential_velocity, v3_of)
from systems.probe_contact.linalg import apply_coupling, inverse_sym3, sym3_apply


_cross = cross_call.cpu
_rot = quat_rotate_call.cpu
_rot_inv = quat_rotate_inverse_call.cpu
_step_factor = step_factor.cpu
_inv3 = inverse_sym3.cpu
_japply = sym3_apply.cpu
_mcouple = apply_coupling.cpu
_step = dopri_step.cpu
_enorm = error_norm.cpu
_vt = tangential_velocity.cpu
_v3 = v3_of.cpu
_wn = normal_work.cpu
_copy = copy_state.cpu
_locate = locate_event.cpu
_rev_dir = reversal_direction.cpu
_rev_h = reversal_h.cpu
_rev_hd = reversal_h_derivatives.cpu
_span = integrate_span.cpu

# ----------------------------------------------------------------------------------------- codes
#: Status of one impact.
IMPACT_RESOLVED = np.int64(0)        #: the collision was integrated to its energetic end
IMPACT_NOT_APPROACHING = np.int64(1)  #: normal contact velocity >= 0: nothing to do, velocities unchanged
IMPACT_STEP_LIMIT = np.int64(2)      #: the slip integration exceeded ``max_steps``: velocities unchanged
IMPACT_BAD_INPUT = np.int64(3)       #: non-finite input, zero normal or singular inertia: velocities unchanged

#: Flags (bit set) of what happened during one impact.
FLAG_SLIP = np.int64(1)       #: the contact slid for part of the collision
FLAG_STICK = np.int64(2)      #: sliding stopped and stick held (f >= f*)
FLAG_REVERSAL = np.int64(4)   #: sliding stopped and slip resumed in direction φ̂ (f < f*)
FLAG_ROLLING = np.int64(8)    #: rolling resistance was applied

#: Status of a multi-vertex resolution.
MULTI_RESOLVED = np.int64(0)        #: no touching vertex approaches any more
MULTI_NOTHING = np.int64(1)         #: no touching vertex approached at the start
MULTI_ITERATION_CAP = np.int64(2)   #: the iteration cap was reached with a vertex still approaching
MULTI_IMPACT_FAILED = np.int64(3)   #: one single impact failed (step limit or bad input); stopped there

#: Vertex types for eq 2.33.
VERTEX_CORNER = np.int64(0)
VERTEX_EDGE = np.int64(1)
VERTEX_FACE = np.int64(2)

STICK_TOL = 1e-12   # slip ends when s <= STICK_TOL * |v_c| (before slip reversal)
CLOSE_TOL = 1e-8    # ... or when s <= CLOSE_TOL * |v_c| if stick follows (closing impulse, error O(s²))
#: Slip steps in a row within CLOSE_TOL·|v_c| of s = 0 after which the slip is closed even when slip
#: reversal follows (f < f*): there the direction field dφ/dp = h(φ)/s is stiff and the integrator
#: can creep at steps of ~1e-12 N s without reaching STICK_TOL (measured: a dodecahedron's plastic
#: impact at |v_c| = 8e-5 m/s, f = 0.5 against f* = 0.511, held at s = 2e-13 m/s for 100,000 steps).
CREEP_STEPS = 64
#: Largest angle [rad] between the slip direction and the reversal direction φ̂ at which a slip with
#: f < f* may be captured onto φ̂ (:data:`reversal_capture`): small enough that the direction's
#: decay towards φ̂ is linear.
CAPTURE_ANGLE = 0.1
#: The capture is tried, and the slip's steps kept within the direction's stability limit, once the
#: slip speed is below this fraction of |v_c| (with f < f*): beyond it a slip that turns onto φ̂ has
#: not yet met the stiff turn, and one that already runs along φ̂ is a straight line DP5 steps exactly.
CAPTURE_SLIP = 1e-3
#: The capture's error bound may reach this many step tolerances: the bound's ψ is measured on the
#: integrated state, whose direction carries the integration's own error (~tol/s), so near φ̂ the
#: bound sits at 2–5 tolerances whatever the true ψ (measured; integrating on along φ̂ instead
#: took 1,200 steps at rtol 1e-10, each leaving up to one tolerance).
CAPTURE_ALLOWANCE = 8.0

# Slip phases of the integrator
_SLIP = np.int64(0)
_STICK = np.int64(1)
_REVERSAL = np.int64(2)
_AT_ZERO = np.int64(3)

# ===================================================================================== kernels
def _perpendicular(nx, ny, nz):
    """A unit vector perpendicular to the unit vector n (crossed with its smallest axis)."""
    ax, ay, az = abs(nx), abs(ny), abs(nz)
    if ax <= ay and ax <= az:
        px, py, pz = 0.0, -nz, ny
    elif ay <= az:
        px, py, pz = nz, 0.0, -nx
    else:
        px, py, pz = -ny, nx, 0.0
    s = 1.0 / math.sqrt(px * px + py * py + pz * pz)
    return (px * s, py * s, pz * s)


perpendicular = dual_call(_perpendicular)
_perp = perpendicular.cpu


def _impact_normal(kind, nsx, nsy, nsz, dx, dy, dz):
    """Seed eq 2.33: the impact normal of a vertex of the given type.

    Args:
        kind: VERTEX_CORNER (0), VERTEX_EDGE (1) or VERTEX_FACE (2).
        nsx, nsy, nsz: surface normal at the vertex (unit, out of the surface).
        dx, dy, dz: edge direction (edge vertex) or the outward face normal (face vertex), same frame.

    Returns:
        The unit impact normal ``(x, y, z)``: ``N_S`` for a corner, ``N_S − (N_S·ê)ê`` normalised for
        an edge (``N_S`` if the edge is parallel to it), ``−N_F`` for a face vertex.
    """
    if kind == 1:
        dn = math.sqrt(dx * dx + dy * dy + dz * dz)
        if dn > 0.0:
            ex, ey, ez = dx / dn, dy / dn, dz / dn
            k = nsx * ex + nsy * ey + nsz * ez
            mx, my, mz = nsx - k * ex, nsy - k * ey, nsz - k * ez
            mn = math.sqrt(mx * mx + my * my + mz * mz)
            if mn > 1e-9:
                return (mx / mn, my / mn, mz / mn)
        return (nsx, nsy, nsz)
    if kind == 2:
        dn = math.sqrt(dx * dx + dy * dy + dz * dz)
        if dn > 0.0:
            return (-dx / dn, -dy / dn, -dz / dn)
    return (nsx, nsy, nsz)


impact_normal = dual_call(_impact_normal)
_impact_n = impact_normal.cpu


@numba.njit(cache=True, inline="always")
def restitution_law_none(e, vn, speed):
    """The restitution of a pair that names a :class:`components.contact_params.RestitutionLaw`
    before a pipeline links the user's kernel in its place (:func:`ecs.terms.specialise`): NaN, so
    an impact that reaches it unlinked fails its row loudly."""
    return math.nan


_user_e = restitution_law_none


def _regolith_restitution(e, regolith, e_floor, e_max, theta_c, v_ref, alpha, vn, speed):
    """Restitution on a granular surface (components.contact_params.Regolith): seed eqs 2.111 and
    2.113 (by impact angle) times ``min(1, (v_ref/|v_n|)^α)`` (by normal impact speed).

    Args:
        e: the pair's restitution (returned unchanged when ``regolith`` is 0).
        regolith: 1.0 to apply the law, 0.0 not to, 2.0 for the world's
            :class:`components.contact_params.RestitutionLaw` (``_user_e``, linked by the pipeline).
        e_floor, e_max: e₀ (steep impacts) and e₁ (grazing limit).
        theta_c: critical angle [rad].
        v_ref, alpha: reference speed [m/s] and exponent of the speed law (alpha 0: off).
        vn: normal contact-point velocity ``v·N`` [m/s] (negative when approaching).
        speed: ``|v|`` [m/s].
    """
    if regolith == 2.0:
        return _user_e(e, vn, speed)
    if regolith == 0.0 or not (speed > 0.0):
        return e
    x = -vn / speed
    if x > 1.0:
        x = 1.0
    if x < -1.0:
        x = -1.0
    th = math.asin(x)
    if th < 0.0:
        th = 0.0
    if th > theta_c:
        th = theta_c
    er = e_max + th / theta_c * (e_floor - e_max)
    if alpha > 0.0 and -vn > v_ref:
        er *= (v_ref / -vn) ** alpha
    return er


regolith_restitution = dual_call(_regolith_restitution)
_regolith_e = regolith_restitution.cpu


def _impact_setup(w, m, jinv, r, n, v, om, f, cr, wstar):
    """Contact frame and constants of one collision into ``w`` (eqs 2.47–2.56); the arguments are
    :data:`resolve_impact_body`'s.

    Returns (status, |v_c|, s₀): IMPACT_BAD_INPUT / IMPACT_NOT_APPROACHING / IMPACT_RESOLVED."""
    j00, j01, j02, j11, j12, j22 = jinv
    rx, ry, rz = r
    nx, ny, nz = n
    vx, vy, vz = v
    wx, wy, wz = om
    cr0, cr1, cr2 = cr
    minv = 1.0 / m
    cx, cy, cz = _cross(wx, wy, wz, rx, ry, rz)
    ux, uy, uz = vx + cx, vy + cy, vz + cz
    nn = math.sqrt(nx * nx + ny * ny + nz * nz)
    ok = (nn > 0.0 and math.isfinite(nn) and m > 0.0 and math.isfinite(m) and math.isfinite(ux + uy + uz)
          and math.isfinite(j00 + j01 + j02 + j11 + j12 + j22) and math.isfinite(f + cr0 + cr1 + cr2 + wstar))
    if not ok:
        return IMPACT_BAD_INPUT, 0.0, 0.0
    nx, ny, nz = nx / nn, ny / nn, nz / nn
    v30 = ux * nx + uy * ny + uz * nz
    if not (v30 < 0.0):
        return IMPACT_NOT_APPROACHING, 0.0, 0.0
    tx, ty, tz = ux - v30 * nx, uy - v30 * ny, uz - v30 * nz
    s0 = math.sqrt(tx * tx + ty * ty + tz * tz)
    vscale = math.sqrt(ux * ux + uy * uy + uz * uz)
    mnx, mny, mnz = _mcouple(minv, j00, j01, j02, j11, j12, j22, rx, ry, rz, rx, ry, rz, nx, ny, nz)
    if s0 > STICK_TOL * vscale:
        e1x, e1y, e1z = tx / s0, ty / s0, tz / s0
    else:
        k = mnx * nx + mny * ny + mnz * nz
        ax, ay, az = mnx - k * nx, mny - k * ny, mnz - k * nz
        an = math.sqrt(ax * ax + ay * ay + az * az)
        if an > 1e-12 * math.sqrt(mnx * mnx + mny * mny + mnz * mnz):
            e1x, e1y, e1z = ax / an, ay / an, az / an
        else:
            e1x, e1y, e1z = _perp(nx, ny, nz)
    e2x, e2y, e2z = _cross(nx, ny, nz, e1x, e1y, e1z)
    m1x, m1y, m1z = _mcouple(minv, j00, j01, j02, j11, j12, j22, rx, ry, rz, rx, ry, rz, e1x, e1y, e1z)
    m2x, m2y, m2z = _mcouple(minv, j00, j01, j02, j11, j12, j22, rx, ry, rz, rx, ry, rz, e2x, e2y, e2z)
    w[W_M11] = e1x * m1x + e1y * m1y + e1z * m1z
    w[W_M12] = e1x * m2x + e1y * m2y + e1z * m2z
    w[W_M13] = e1x * mnx + e1y * mny + e1z * mnz
    w[W_M22] = e2x * m2x + e2y * m2y + e2z * m2z
    w[W_M23] = e2x * mnx + e2y * mny + e2z * mnz
    w[W_M33] = nx * mnx + ny * mny + nz * mnz
    w[W_V10] = ux * e1x + uy * e1y + uz * e1z
    w[W_V20] = ux * e2x + uy * e2y + uz * e2z
    w[W_V30] = v30
    w[W_F] = f
    w[W_EPS] = STICK_TOL * vscale
    w[W_ROLL] = 1.0 if (cr0 > 0.0 or cr1 > 0.0 or cr2 > 0.0) else 0.0
    w[W_U1], w[W_U1 + 1], w[W_U1 + 2] = e1x, e1y, e1z
    w[W_U2], w[W_U2 + 1], w[W_U2 + 2] = e2x, e2y, e2z
    w[W_N], w[W_N + 1], w[W_N + 2] = nx, ny, nz
    w[W_R], w[W_R + 1], w[W_R + 2] = rx, ry, rz
    w[W_J00], w[W_J01], w[W_J02], w[W_J11], w[W_J12], w[W_J22] = j00, j01, j02, j11, j12, j22
    w[W_W0], w[W_W0 + 1], w[W_W0 + 2] = wx, wy, wz
    w[W_CR], w[W_CR + 1], w[W_CR + 2] = cr0, cr1, cr2
    w[W_WSTAR] = wstar
    for m in range(STATE):
        w[W_Y + m] = 0.0
    return IMPACT_RESOLVED, vscale, s0


impact_setup = dual_call(_impact_setup)
_setup = impact_setup.cpu


def _close_now(w, p, s, v1, v2, f, fstar, tol, compressed, wt):
    """Whether a slip that stick will end (f >= f*) may be closed now, at slip speed ``s`` > 0 and
    tangential velocity (v1, v2), with no more error than one accepted step may leave.

    Closing at fixed p changes nothing after the impulse p_s at which the exact slip sticks (stick
    fixes P_t by v_t = 0 whatever the path), and before it only the normal work: by
    ``δW = ∫ qᵀ v_t dp`` over [p, p_s], q = B⁻¹a (|q| = f*), so ``|δW| <= f* s (p_s − p)``. The window
    p_s − p is taken as twice the straight approach's ``s/|ds/dp|``. The slip is closed when that
    bound is within a step's allowance on W_n (``tol · p``, :data:`error_norm`) and neither event
    (compression end, the end of restitution) can fall inside the window (a located event there
    would move by first order in s)."""
    u1 = v1 / s
    u2 = v2 / s
    g = (u1 * (w[W_M13] - f * (w[W_M11] * u1 + w[W_M12] * u2))
         + u2 * (w[W_M23] - f * (w[W_M12] * u1 + w[W_M22] * u2)))
    if not (g < 0.0):
        return False
    win = 2.0 * s / (-g)
    if fstar * s * win > tol * p:
        return False
    v3 = _v3(w, p, W_Y)
    v3max = v3 + win * (w[W_M33] + f * math.sqrt(w[W_M13] * w[W_M13] + w[W_M23] * w[W_M23]))
    if compressed:
        return _wn(w, p, W_Y) + win * max(v3max, 0.0) < wt
    return v3max < 0.0


close_now = dual_call(_close_now)
_close = close_now.cpu


def _reversal_capture(w, s, v1, v2, f, ray, tol):
    """Whether a slip with f < f* at slip speed ``s`` > 0 and tangential velocity (v1, v2) may go on
    along the reversal direction φ̂ in closed form, with no more error than one accepted step may
    leave. ``ray = (cos φ̂, sin φ̂, r)``, r = −h'(φ̂) = g(φ̂) + f û⊥ᵀBû⊥ > 0, the rate at which the
    direction field turns the slip onto φ̂.

    Near s = 0 with f < f* the hodograph need not pass through s = 0: the direction turns onto the
    invariant ray φ̂ (dφ/dp = h(φ)/s, h(φ̂) = 0, h'(φ̂) = −r) while s goes through a small minimum and
    then grows along φ̂ at g(φ̂) > 0, which is tiny when f is close to f*. Integrated, that turn is
    stiff on the scale of s and the slow growth takes ~1/g(φ̂) steps (at loose tolerances the explicit
    steps chattered about φ̂ without growing s at all: 10⁵ steps, the row failed). Once the direction
    ψ = φ − φ̂ is small and decaying (h ψ < 0), it decays like ψ₀ (s/s₀)^(−r/g) or faster, so the
    friction impulse that a constant direction φ̂ misplaces is at most ``f ∫|ψ| dp ≈ f |ψ₀| s / r``;
    twice that, times the largest coupling of [M], must lie within :data:`CAPTURE_ALLOWANCE` step
    tolerances ``tol`` (contact-velocity errors, as :data:`error_norm`'s). Nothing else changes: the state is kept (no closing impulse),
    and the compression and restitution ends are then found exactly by the closed form."""
    c, sn, r = ray
    u1 = v1 / s
    u2 = v2 / s
    cd = u1 * c + u2 * sn                 # cos ψ
    sd = u2 * c - u1 * sn                 # sin ψ, ψ = φ − φ̂
    if not (cd > 0.0):
        return False
    psi = math.atan2(abs(sd), cd)
    if psi > CAPTURE_ANGLE:
        return False
    # h at the current direction must turn it towards φ̂ (ψ decays): h ψ < 0
    h = (-u2 * (w[W_M13] - f * (w[W_M11] * u1 + w[W_M12] * u2))
         + u1 * (w[W_M23] - f * (w[W_M12] * u1 + w[W_M22] * u2)))
    if psi > 0.0 and not (h * sd < 0.0):
        return False
    coupling = w[W_M11] + w[W_M22] + abs(w[W_M12]) + abs(w[W_M13]) + abs(w[W_M23])
    return 2.0 * coupling * f * psi * s / r <= CAPTURE_ALLOWANCE * tol


reversal_capture = dual_call(_reversal_capture)
_capture = reversal_capture.cpu


def _approach_ray(M11, M12, M13, M22, M23, f, u1, u2):
    """With f >= f*: the invariant ray φ_a of the slip's direction field nearest the direction
    (u1, u2), by Newton's method on eq 2.74's h from it, if it attracts (h'(φ_a) < 0) and the slip
    falls along it (g(φ_a) < 0). Returns ``(ok, cos φ_a, sin φ_a, g(φ_a), −h'(φ_a))``. Along such a
    ray dP/dp is constant and the slip reaches s = 0 in a straight line; the slip turns onto it as
    onto φ̂ (:data:`reversal_capture`'s bound applies with r = −h'(φ_a))."""
    phi = math.atan2(u2, u1)
    ok = False
    for _ in range(8):
        hv, h1, _h2, _h3 = _rev_hd(phi, M11, M12, M13, M22, M23, f)
        if not (h1 < 0.0):
            return False, 1.0, 0.0, 0.0, 0.0
        dphi = hv / h1
        phi -= dphi
        if abs(dphi) <= 1e-13:
            ok = True
            break
    if not ok:
        return False, 1.0, 0.0, 0.0, 0.0
    hv, gv = _rev_h(phi, M11, M12, M13, M22, M23, f)
    r = -_rev_hd(phi, M11, M12, M13, M22, M23, f)[1]
    if not (gv < 0.0 and r > 0.0):
        return False, 1.0, 0.0, 0.0, 0.0
    return True, math.cos(phi), math.sin(phi), gv, r


approach_ray = dual_call(_approach_ray)
_approach_ray_cpu = approach_ray.cpu


def _resolve_impact_body(w, m, jinv, r, n, v, om, e, f, cr, wstar, rtol, max_steps):
    """One vertex impact, every vector in body axes (Stronge's model, eqs 2.53–2.91).

    Args:
        w: float64 work row of length WORK_SIZE (scratch; the outputs are left in it).
        m: mass [kg]. jinv: inverse inertia about the CoM [1/(kg m²)], its 6 entries
            (j00, j01, j02, j11, j12, j22) of the symmetric tensor.
        r: contact point from the CoM [m]. n: surface normal toward the body. v: CoM velocity
            [m/s]. om: angular velocity [rad/s]. Each a 3-tuple.
        e: energetic restitution. f: friction coefficient.
        cr: ``C_RR,k · R`` per body axis [m], a 3-tuple (all 0: no rolling resistance).
        wstar: rolling regularisation rate ω* [rad/s] (eq 2.87; <= 0: no lock blending).
        rtol: relative tolerance of the slip integration. max_steps: step cap.

    Returns:
        ``(status, flags, steps)``; on IMPACT_RESOLVED ``w[W_OUT:W_OUT_END]`` holds Δv (3) [m/s] at
        ``W_OUT``, Δω (3) [rad/s] at ``W_OUT_DW``, the normal impulse p [N s] at ``W_OUT_P``, the
        contact impulse P (3) [N s] at ``W_OUT_PV`` and W_c [J] at ``W_OUT_WC``.
    """
    j00, j01, j02, j11, j12, j22 = jinv
    rx, ry, rz = r
    cr0, cr1, cr2 = cr
    for m_ in range(W_OUT, W_OUT_END):
        w[m_] = 0.0
    status, vscale, s0 = _setup(w, m, jinv, r, n, v, om, f, cr, wstar)
    if status != IMPACT_RESOLVED or not (math.isfinite(e) and math.isfinite(rtol)):
        return (status if status != IMPACT_RESOLVED else IMPACT_BAD_INPUT), 0, 0
    M11 = w[W_M11]
    M12 = w[W_M12]
    M13 = w[W_M13]
    M22 = w[W_M22]
    M23 = w[W_M23]
    M33 = w[W_M33]
    rolling = w[W_ROLL] > 0.0
    tol = rtol * vscale
    lscale = math.sqrt(rx * rx + ry * ry + rz * rz) + max(cr0, max(cr1, cr2)) + 1e-300
    # stick parameters (eqs 2.67–2.70)
    det = M11 * M22 - M12 * M12
    q1 = (M22 * M13 - M12 * M23) / det
    q2 = (M11 * M23 - M12 * M13) / det
    fstar = math.sqrt(q1 * q1 + q2 * q2)
    phistar = math.atan2(q2, q1)
    # slip ends (closing impulse) at s <= eps_close: coarse when stick follows, error O(s²)
    eps_close = (CLOSE_TOL if f >= fstar else STICK_TOL) * vscale
    # f < f*: the reversal direction φ̂ (eqs 2.74–2.77) and the rate r at which slip turns onto it,
    # for capturing a slip that turns onto φ̂ without passing through s = 0 (:data:`reversal_capture`);
    # found when first needed (0: not yet, 1: usable, -1: none, or f >= f*)
    ray_state = 0 if f < fstar else -1
    ray_c = 1.0
    ray_s = 0.0
    ray_r = 0.0
    # f >= f*: once captured onto an attracting ray φ_a (h = 0, g < 0) the slip runs along it at
    # constant dP/dp, one exact step to its closest approach to s = 0, then closes into stick
    on_ray = False
    ray_g = 0.0
    ray_end = 0.0
    flags = FLAG_ROLLING if rolling else 0
    status = IMPACT_RESOLVED
    p = 0.0
    compressed = False
    wc = 0.0
    wt = 0.0
    phase = _SLIP if s0 > eps_close else _AT_ZERO
    d1c = 0.0
    d2c = 0.0
    h = 0.1 * vscale / (M11 + M22 + M33)
    steps = 0
    creep = 0
    rejected = False
    k1_ready = _NO_FSAL  # the first stage's rate at (p, W_Y) is in w[W_K:] (slip_step: FSAL, or a retry)
    while True:
        if phase == _AT_ZERO:
            # closing impulse ΔP_t = −B⁻¹ v_t at fixed p: v_t -> 0 exactly, W_n unchanged,
            # ΔT = −½ v_tᵀ B⁻¹ v_t <= 0
            v1, v2 = _vt(w, p, W_Y)
            b1 = (M22 * v1 - M12 * v2) / det
            b2 = (M11 * v2 - M12 * v1) / det
            w[W_Y] -= b1
            w[W_Y + 1] -= b2
            if f >= fstar:
                phase = _STICK
                d1c = -q1
                d2c = -q2
                flags |= FLAG_STICK
            else:
                # (Stronge: exactly one root with g > 0 exists when f < f*; were none found, the
                # scan's fallback is φ*, the direction in which stick fails)
                phr, _found = _rev_dir(M11, M12, M13, M22, M23, f, phistar)
                phase = _REVERSAL
                d1c = -f * math.cos(phr)
                d2c = -f * math.sin(phr)
                flags |= FLAG_REVERSAL
        if phase == _SLIP:
            flags |= FLAG_SLIP
            if steps >= max_steps:
                status = IMPACT_STEP_LIMIT
                break
            steps += 1
            v1, v2 = _vt(w, p, W_Y)
            s = math.sqrt(v1 * v1 + v2 * v2)
            creep = creep + 1 if s <= CLOSE_TOL * vscale else 0
            if creep > CREEP_STEPS:
                phase = _AT_ZERO
                continue
            fb1 = v1 / s
            fb2 = v2 / s
            # ds/dp in the current direction; cap the step at the predicted stick point (τ rule)
            g = fb1 * (M13 - f * (M11 * fb1 + M12 * fb2)) + fb2 * (M23 - f * (M12 * fb1 + M22 * fb2))
            hs = h
            step_phase = _SLIP
            if on_ray:
                # along φ_a at constant dP/dp (d1c, d2c): v_t's component along it falls at |g(φ_a)|
                along = -(v1 * d1c + v2 * d2c) / f
                if not (along > 0.0):
                    phase = _AT_ZERO
                    continue
                ray_end = along / (-ray_g)
                # without rolling resistance the step is exact at any length; with it the rolling
                # impulse is integrated too, so the step controller's proposal bounds it
                hs = ray_end if not rolling else min(h, ray_end)
                step_phase = _REVERSAL
            elif g < 0.0 and hs * (-g) >= s:
                hs = s / (-g)
            if not on_ray and s <= CAPTURE_SLIP * vscale:
                # near s = 0 the direction's own rate h'(φ)/s (h' = −g − f û⊥ᵀBû⊥) is stiff where
                # it turns the slip onto a ray (h' < 0): explicit steps longer than ~3 of its time
                # scales chatter about that ray (DP5's stability interval), so they are kept within 2
                hp = -g - f * (M11 * fb2 * fb2 - 2.0 * M12 * fb1 * fb2 + M22 * fb1 * fb1)
                if hp < 0.0 and hs * (-hp) > 2.0 * s:
                    hs = 2.0 * s / (-hp)
            _step(w, p, hs, W_Y, W_Y1, step_phase, d1c, d2c, fb1, fb2, k1_ready)
            k1_ready = not rolling    # a retry starts where this step did
            en = _enorm(w, p, hs, tol, lscale)
            if not (en <= 1.0):
                h = hs * _step_factor(en, -0.2)
                rejected = True
                continue
            fac = _step_factor(en, -0.2)
            e1v, e2v = _vt(w, p + hs, W_Y1)
            s1 = math.sqrt(e1v * e1v + e2v * e2v)
            if not on_ray and s1 > eps_close and (e1v * fb1 + e2v * fb2 < 0.0 or (
                    g < 0.0 and -g * hs >= 0.25 * s and s1 > s + 0.25 * g * hs)):
                # the slip direction turned by more than 90°, or a step aimed at s = 0 removed less
                # than a quarter of the predicted g·h: the hodograph met s = 0 inside the step (an
                # explicit step across the discontinuity of the friction direction chatters there).
                # Near s = 0, close the slip from the step's start; otherwise shorten the step.
                if s <= CLOSE_TOL * vscale:
                    phase = _AT_ZERO
                    continue
                h = 0.5 * hs
                rejected = True
                continue
            v3n = _v3(w, p + hs, W_Y1)
            if not compressed and v3n >= 0.0:
                hh = _locate(w, _EV_V3, 0.0, p, hs, _v3(w, p, W_Y), v3n, step_phase, d1c, d2c, fb1, fb2)
                p += hh
                _copy(w, W_YL, W_Y)
                k1_ready = _NO_FSAL
                compressed = True
                wc = _wn(w, p, W_Y)
                # from here the work state counts the restitution work alone (no cancellation
                # against W_c when e is small): the collision ends when it reaches −e² W_c
                w[W_Y + I_WN] = 0.0
                wt = -e * e * wc
                if e == 0.0:
                    break
            else:
                wn1 = _wn(w, p + hs, W_Y1)
                if compressed and wn1 >= wt:
                    hh = _locate(w, _EV_WN, wt, p, hs, _wn(w, p, W_Y) - wt, wn1 - wt, step_phase, d1c, d2c, fb1,
                                 fb2)
                    p += hh
                    _copy(w, W_YL, W_Y)
                    break
                p += hs
                _copy(w, W_Y1, W_Y)
                if k1_ready:       # the step's last stage is the rate at its end (FSAL)
                    w[W_K], w[W_K + 1], w[W_K + 2] = w[W_K + STATE], w[W_K + STATE + 1], w[W_K + STATE + 2]
                grow = min(fac, 1.0) if rejected else fac
                if s1 < s:
                    grow *= s1 / s
                h = hs * grow
                rejected = False
                if on_ray and hs >= ray_end:    # at the closest approach to s = 0: close into stick
                    phase = _AT_ZERO
                    continue
            v1, v2 = _vt(w, p, W_Y)
            sn = math.sqrt(v1 * v1 + v2 * v2)
            if sn <= eps_close or (f >= fstar and _close(w, p, sn, v1, v2, f, fstar, tol, compressed, wt)):
                phase = _AT_ZERO
            elif ray_state >= 0 and sn <= CAPTURE_SLIP * vscale:
                if ray_state == 0:
                    phr, found = _rev_dir(M11, M12, M13, M22, M23, f, phistar)
                    ray_c = math.cos(phr)
                    ray_s = math.sin(phr)
                    g_hat = (ray_c * (M13 - f * (M11 * ray_c + M12 * ray_s))
                             + ray_s * (M23 - f * (M12 * ray_c + M22 * ray_s)))
                    ray_r = g_hat + f * (M11 * ray_s * ray_s - 2.0 * M12 * ray_s * ray_c + M22 * ray_c * ray_c)
                    ray_state = 1 if (found and g_hat > 0.0 and ray_r > 0.0) else -1
                if ray_state == 1 and _capture(w, sn, v1, v2, f, (ray_c, ray_s, ray_r), tol):
                    # the slip goes on along φ̂ in closed form; it never stopped, so no FLAG_REVERSAL
                    phase = _REVERSAL
                    d1c = -f * ray_c
                    d2c = -f * ray_s
            elif f >= fstar and not on_ray and sn <= CAPTURE_SLIP * vscale:
                # the attracting ray nearest the slip direction (Newton on h from it, eq 2.74's h)
                ok, ac, asn, ag, ar = _approach_ray_cpu(M11, M12, M13, M22, M23, f, v1 / sn, v2 / sn)
                if ok and _capture(w, sn, v1, v2, f, (ac, asn, ar), tol):
                    on_ray = True
                    d1c = -f * ac
                    d2c = -f * asn
                    ray_g = ag
                    k1_ready = _NO_FSAL
            continue
        # ---- stick or slip reversal: dP/dp constant, closed form (v₃ linear, W_n quadratic in p)
        k = M33 + M13 * d1c + M23 * d2c
        v3s = _v3(w, p, W_Y)
        wns = _wn(w, p, W_Y)
        delta = 0.0
        if not compressed:
            if v3s < 0.0:
                delta = -v3s / k
                wc = wns - v3s * v3s / (2.0 * k)
                v3s = 0.0
            else:
                wc = wns
            wns = 0.0                      # restitution work so far
            compressed = True
            wt = -e * e * wc
        dd = wt - wns
        if dd > 0.0:
            delta += 2.0 * dd / (v3s + math.sqrt(v3s * v3s + 2.0 * k * dd))
        if rolling:
            nst, okspan = _span(w, p, delta, phase, d1c, d2c, tol, lscale, h, max_steps)
            steps += nst
            if not okspan:
                status = IMPACT_STEP_LIMIT
        else:
            w[W_Y] += d1c * delta
            w[W_Y + 1] += d2c * delta
            w[W_Y + I_WN] = max(wt, wns)
        p += delta
        break
    if status != IMPACT_RESOLVED:
        return status, flags, steps
    # total contact impulse in body axes and the velocity jumps (eqs 2.58, 2.90)
    P1 = w[W_Y]
    P2 = w[W_Y + 1]
    Px = P1 * w[W_U1] + P2 * w[W_U2] + p * w[W_N]
    Py = P1 * w[W_U1 + 1] + P2 * w[W_U2 + 1] + p * w[W_N + 1]
    Pz = P1 * w[W_U1 + 2] + P2 * w[W_U2 + 2] + p * w[W_N + 2]
    minv = 1.0 / m
    hx, hy, hz = _cross(rx, ry, rz, Px, Py, Pz)
    dvx, dvy, dvz = minv * Px, minv * Py, minv * Pz
    if rolling:
        lx, ly, lz = w[W_Y + I_L], w[W_Y + I_L + 1], w[W_Y + I_L + 2]
        hx += lx
        hy += ly
        hz += lz
        jx, jy, jz = _japply(j00, j01, j02, j11, j12, j22, lx, ly, lz)
        ax, ay, az = _cross(rx, ry, rz, jx, jy, jz)
        dvx += ax
        dvy += ay
        dvz += az
    dwx, dwy, dwz = _japply(j00, j01, j02, j11, j12, j22, hx, hy, hz)
    w[W_OUT], w[W_OUT + 1], w[W_OUT + 2] = dvx, dvy, dvz
    w[W_OUT_DW], w[W_OUT_DW + 1], w[W_OUT_DW + 2] = dwx, dwy, dwz
    w[W_OUT_P] = p
    w[W_OUT_PV], w[W_OUT_PV + 1], w[W_OUT_PV + 2] = Px, Py, Pz
    w[W_OUT_WC] = wc
    return status, flags, steps


resolve_impact_body = dual_call(_resolve_impact_body)
_impact_body = resolve_impact_body.cpu


def _resolve_impact(w, m, inertia_row, q, r, n, v, om, e, f, cr, wstar, rtol, max_steps):
    """One vertex impact with the project's frames: ``r``, ``ω`` (``om``) and the inertia in body
    axes, the normal ``n`` and the CoM velocity ``v`` in the target frame, ``q`` body → target (a
    4-tuple; the vectors 3-tuples). Same returns as :data:`resolve_impact_body`, with Δv and P in
    ``w[W_OUT:]`` rotated to the target frame."""
    q0, q1, q2, q3 = q
    jinv = _inv3(inertia_row[0, 0], inertia_row[0, 1], inertia_row[0, 2], inertia_row[1, 1], inertia_row[1, 2],
                 inertia_row[2, 2])
    bn = _rot_inv(q0, q1, q2, q3, n[0], n[1], n[2])
    bv = _rot_inv(q0, q1, q2, q3, v[0], v[1], v[2])
    status, flags, steps = _impact_body(w, m, jinv, r, bn, bv, om, e, f, cr, wstar, rtol, max_steps)
    dvx, dvy, dvz = _rot(q0, q1, q2, q3, w[W_OUT], w[W_OUT + 1], w[W_OUT + 2])
    px, py, pz = _rot(q0, q1, q2, q3, w[W_OUT_PV], w[W_OUT_PV + 1], w[W_OUT_PV + 2])
    w[W_OUT], w[W_OUT + 1], w[W_OUT + 2] = dvx, dvy, dvz
    w[W_OUT_PV], w[W_OUT_PV + 1], w[W_OUT_PV + 2] = px, py, pz
    return status, flags, steps


resolve_impact = dual_call(_resolve_impact)
_impact = resolve_impact.cpu


def _impact_row(i, work, mass, inertia, attitude, point, normal, velocity, omega, restitution, friction, rolling,
                settings, out):
    """Row i of a batch of independent single-vertex impacts (see :func:`resolve_impacts`):
    ``settings = (wstar, rtol, max_steps)``; ``out = (velocity, omega, impulse, normal_impulse,
    work, status, flags, steps)``, the arrays of :class:`~systems.probe_contact.surface_impacts.ImpactResult`."""
    wstar, rtol, max_steps = settings
    out_velocity, out_omega, out_impulse, out_normal_impulse, out_work, out_status, out_flags, out_steps = out
    w = work[i]
    status, flags, steps = _impact(w, mass[i], inertia[i],
                                   (attitude[i, 0], attitude[i, 1], attitude[i, 2], attitude[i, 3]),
                                   (point[i, 0], point[i, 1], point[i, 2]), (normal[i, 0], normal[i, 1], normal[i, 2]),
                                   (velocity[i, 0], velocity[i, 1], velocity[i, 2]),
                                   (omega[i, 0], omega[i, 1], omega[i, 2]), restitution[i], friction[i],
                                   (rolling[i, 0], rolling[i, 1], rolling[i, 2]), wstar, rtol, max_steps)
    for k in range(3):
        out_velocity[i, k] = velocity[i, k] + w[W_OUT + k]
        out_omega[i, k] = omega[i, k] + w[W_OUT_DW + k]
        out_impulse[i, k] = w[W_OUT_PV + k]
    out_normal_impulse[i] = w[W_OUT_P]
    out_work[i] = w[W_OUT_WC]
    out_status[i] = status
    out_flags[i] = flags
    out_steps[i] = steps


impact_row = dual_call(_impact_row)
_impact_row_cpu = impact_row.cpu


@cpu_parallel
def impact_rows(n, work, mass, inertia, attitude, point, normal, velocity, omega, restitution, friction, rolling,
                settings, out):
    for i in prange(n):
        _impact_row_cpu(i, work, mass, inertia, attitude, point, normal, velocity, omega, restitution, friction,
                        rolling, settings, out)


# ------------------------------------------------------------------ several vertices at once
def _vertex_normal_velocity(k, q0, q1, q2, q3, vx, vy, vz, wx, wy, wz, verts, vtype, vdir, sn_row):
    """Eq 2.33 impact normal of vertex k and its normal contact velocity.

    Returns (v_n [m/s], |v_c| [m/s], N (3, target frame))."""
    rx, ry, rz = verts[k, 0], verts[k, 1], verts[k, 2]
    dx, dy, dz = _rot(q0, q1, q2, q3, vdir[k, 0], vdir[k, 1], vdir[k, 2])
    nx, ny, nz = _impact_n(vtype[k], sn_row[k, 0], sn_row[k, 1], sn_row[k, 2], dx, dy, dz)
    cx, cy, cz = _cross(wx, wy, wz, rx, ry, rz)
    tx, ty, tz = _rot(q0, q1, q2, q3, cx, cy, cz)
    ux, uy, uz = vx + tx, vy + ty, vz + tz
    return ux * nx + uy * ny + uz * nz, math.sqrt(ux * ux + uy * uy + uz * uz), nx, ny, nz


vertex_normal_velocity = dual_call(_vertex_normal_velocity)
_vertex_vn = vertex_normal_velocity.cpu


def _kinetic_body(m, I, vx, vy, vz, wx, wy, wz):
    """Kinetic energy [J]: CoM velocity (any frame), ω and I in body axes."""
    return 0.5 * m * (vx * vx + vy * vy + vz * vz) + 0.5 * (
        wx * (I[0, 0] * wx + I[0, 1] * wy + I[0, 2] * wz) + wy * (I[1, 0] * wx + I[1, 1] * wy + I[1, 2] * wz)
        + wz * (I[2, 0] * wx + I[2, 1] * wy + I[2, 2] * wz))


kinetic_body = dual_call(_kinetic_body)
_kin_body = kinetic_body.cpu


def _vertex_impacts_row(i, work, mass, inertia, attitude, velocity, omega, shape, surface_normal, touching, pair,
                        rolling, settings, out):
    """Row i: the multi-vertex policy (most-approaching touching vertex first, repeat).

    ``velocity[i]`` (CoM, target frame) and ``omega[i]`` (body axes) are updated in place.
    ``shape = (verts, vtype, vdir)``: ``verts`` [K, 3] the vertices from the CoM, body axes;
    ``vtype`` [K], ``vdir`` [K, 3] for eq 2.33; ``rolling = (rolling_mask [3], rolling_radius)``;
    ``settings = (wstar, rtol, max_steps, max_iter, approach_tol)``; ``out = (status [n], count
    [n])``, the outcome per row (MULTI_*) and the impacts it took;
    ``surface_normal[i, k]`` the surface normal at vertex k (target frame); ``touching[i, k]`` 0/1;
    ``pair[i]`` the material-pair row (components.contact_params.PAIR_FIELDS, regolith included).
    A vertex approaches when ``v_n < −max(approach_tol, 1e-9 · initial max approach speed)``.
    """
    verts, vtype, vdir = shape
    rolling_mask, rolling_radius = rolling
    wstar, rtol, max_steps, max_iter, approach_tol = settings
    out_status, out_count = out
    w = work[i]
    q0, q1, q2, q3 = attitude[i, 0], attitude[i, 1], attitude[i, 2], attitude[i, 3]
    vx, vy, vz = velocity[i, 0], velocity[i, 1], velocity[i, 2]
    wx, wy, wz = omega[i, 0], omega[i, 1], omega[i, 2]
    nv = verts.shape[0]
    e_pair = pair[i, PAIR_E]
    f = pair[i, PAIR_F]
    crr = pair[i, PAIR_CRR]
    cr0 = crr * rolling_mask[0] * rolling_radius
    cr1 = crr * rolling_mask[1] * rolling_radius
    cr2 = crr * rolling_mask[2] * rolling_radius
    sn_row = surface_normal[i]
    status = MULTI_NOTHING
    count = 0
    tol = approach_tol
    first = True
    while True:
        best = np.int64(-1)     # not the literal -1: numba would first compile _vertex_vn for Literal[int](-1)
        bvn = 0.0
        bsp = 0.0
        for k in range(nv):
            if touching[i, k] == 0:
                continue
            vn, sp, nx, ny, nz = _vertex_vn(k, q0, q1, q2, q3, vx, vy, vz, wx, wy, wz, verts, vtype, vdir, sn_row)
            if first and -vn * 1e-9 > tol:
                tol = -vn * 1e-9
            if vn < -tol and (best < 0 or vn < bvn):
                best = k
                bvn = vn
                bsp = sp
        first = False
        if best < 0:
            break
        if count >= max_iter:
            status = MULTI_ITERATION_CAP
            break
        vn, sp, nx, ny, nz = _vertex_vn(best, q0, q1, q2, q3, vx, vy, vz, wx, wy, wz, verts, vtype, vdir, sn_row)
        e = _regolith_e(e_pair, pair[i, PAIR_REGOLITH], pair[i, PAIR_E0], pair[i, PAIR_E1], pair[i, PAIR_THETA_C],
                        pair[i, PAIR_VREF], pair[i, PAIR_ALPHA], bvn, bsp)
        st, fl, ns = _impact(w, mass[i], inertia[i], (q0, q1, q2, q3), (verts[best, 0], verts[best, 1],
                             verts[best, 2]), (nx, ny, nz), (vx, vy, vz), (wx, wy, wz), e, f, (cr0, cr1, cr2), wstar,
                             rtol, max_steps)
        if st == IMPACT_RESOLVED and (cr0 > 0.0 or cr1 > 0.0 or cr2 > 0.0):
            # energy guard: rolling resistance is not proven dissipative inside a collision (its
            # lock torque can work against the contact impulse); an impact it makes gain energy
            # is resolved again without it (Stronge without rolling never adds energy)
            t0 = _kin_body(mass[i], inertia[i], vx, vy, vz, wx, wy, wz)
            t1 = _kin_body(mass[i], inertia[i], vx + w[W_OUT], vy + w[W_OUT + 1], vz + w[W_OUT + 2],
                           wx + w[W_OUT_DW], wy + w[W_OUT_DW + 1], wz + w[W_OUT_DW + 2])
            if t1 > t0 * (1.0 + 1e-12):
                st, fl, ns = _impact(w, mass[i], inertia[i], (q0, q1, q2, q3), (verts[best, 0], verts[best, 1],
                                     verts[best, 2]), (nx, ny, nz), (vx, vy, vz), (wx, wy, wz), e, f, (0.0, 0.0, 0.0),
                                     wstar, rtol, max_steps)
        if st != IMPACT_RESOLVED:
            status = MULTI_IMPACT_FAILED
            break
        vx += w[W_OUT]
        vy += w[W_OUT + 1]
        vz += w[W_OUT + 2]
        wx += w[W_OUT_DW]
        wy += w[W_OUT_DW + 1]
        wz += w[W_OUT_DW + 2]
        count += 1
        status = MULTI_RESOLVED
    velocity[i, 0] = vx
    velocity[i, 1] = vy
    velocity[i, 2] = vz
    omega[i, 0] = wx
    omega[i, 1] = wy
    omega[i, 2] = wz
    out_status[i] = status
    out_count[i] = count


vertex_impacts_row = dual_call(_vertex_impacts_row)
_vertex_impacts_cpu = vertex_impacts_row.cpu


@cpu_parallel
def vertex_impacts_rows(n, work, mass, inertia, attitude, velocity, omega, shape, surface_normal, touching, pair,
                        rolling, settings, out):
    for i in prange(n):
        _vertex_impacts_cpu(i, work, mass, inertia, attitude, velocity, omega, shape, surface_normal, touching, pair,
                            rolling, settings, out)
