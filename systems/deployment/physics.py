"""Shared row kernels of probe deployment: rotating-frame equations of motion, gravity, the contact
wrench and the Dormand–Prince 5(4) step (seed 004 §2.1, §2.7.1). Where the probe meets the terrain
(terrain query, vertex positions and distances, clearance, contact normal) is
:mod:`systems.deployment.geometry`.

The phase systems (:mod:`systems.deployment.fly`, :mod:`systems.deployment.collide`,
:mod:`systems.deployment.contact`) are built from these pieces; everything here is written once
(:func:`systems.probe_contact.collision.dual_call`) for the CPU and the GPU.

Equations of motion in the rotating target frame T (seed eqs 2.2–2.5, uniform rotation Ω̇ = 0)
------------------------------------------------------------------------------------------------
State ``y = (x, v, q, ω)`` (13 numbers): CoM position and velocity relative to T (T components),
attitude body → T (scalar-first) and ω = ω_S/T in body axes. With Ω = Ω_T/N (T components), the
body's inertial rate ``ω_S/N = ω + R(q)ᵀ Ω`` (eq 2.4), gravity g(x), contact force F and torque L
(about the CoM, body axes)::

    ẋ = v
    v̇ = g(x) + F/m − 2 Ω × v − Ω × (Ω × x)                    (eq 2.2: Coriolis, centrifugal)
    q̇ = ½ q ⊗ (0, ω)                                          (eq 2.2, [B(q)] form)
    ω̇ = I⁻¹ (L − ω_S/N × I ω_S/N) − ω_S/N × ω                 (eq 2.5)

Eq 2.5 follows from ω = ω_S/N − ω_T/N with the target rate constant in N: in body axes
``d/dt(R(q)ᵀΩ) = −ω_S/N × R(q)ᵀΩ``, and ``ω_S/N × R(q)ᵀΩ = −ω_S/N × ω``. The frame's terms and
Euler's equation are :mod:`systems.dynamics.rotating_frame`, shared with every rigid body.

Jacobi integral (per unit mass; conserved in flight, seed §4.1's geopotential ``V`` enters it)::

    C = ½ |v|² − ½ |Ω × x|² − U(x)                              (U > 0, g = ∇U)

State vector layout (offsets into a row's float64 work array, :data:`WORK_SIZE`): ``Y0`` the step's
start, ``Y1`` its end, ``YS`` a stage state, ``K`` seven stage derivatives, scratch, then the
flight attitude sub-integration's ``R0``/``R1``/``RS``/``RK``/``RH``.

Step (:data:`dp_attempt`): contact motion steps all 13 numbers together; flight is multirate —
translation by one DP5(4) step, the torque-free attitude by Runge–Kutta–Munthe-Kaas sub-steps in
the inertial frame (:data:`advance_attitude`), both under the same rtol/atol.
"""

from __future__ import annotations

import math

import numpy as np

from ecs import row_layout
from ecs.attitude import quat_derivative, quat_multiply, quat_normalize
from ecs.kernels import dual
from ecs.terms import RowState, row_terms_none, terms_active_none, terms_couple_attitude_none
from ecs.stepping import DP54, row_dp54_error, row_stage, scaled_error_sq, step_factor
from ecs.attitude import cross_call, quat_rotate_call, quat_rotate_inverse_call
from ecs.kernels import dual_call
from systems.gravity.kernels import (GRAVITY_VOXEL, VOX_H, VOX_OX, gravity_args,  # noqa: F401  (gravity_args re-exported)
                                     gravity_at)
from systems.deployment.geometry import normal_and_rate
from systems.deployment.records import A_W, M_W, PROBE_STATE, RKMK_STATE, S_Q, S_V, S_W, ContactScratch
from systems.dynamics.rotating_frame import (body_rate_derivative, euler_acceleration, frame_acceleration,
                                             frame_rate_in_body)

_i = np.int64
STATE = PROBE_STATE.size
LIFT_SET = 4
#: A deployment row's work row ``w``: its DP5(4) step, its flight's attitude sub-integration, the
#: times the row terms see, the launch-boundary carry and the lift-off working set.
DEPLOY_ROW = row_layout("deployment work row", (
    ("Y0", STATE, "state at the step's start: position [m], velocity [m/s] (target frame), attitude "
                  "(body -> target, scalar-first), body rate [rad/s] (body axes)"),
    ("Y1", STATE, "the step's candidate state"),
    ("YS", STATE, "stage state"),
    ("K0", 6 * STATE, "DP5(4) stage derivatives K_1 … K_6, 13 apart"),
    ("KFSAL", STATE, "K_7 = f(Y1), the next step's K_1 (FSAL): K_j sits at K0 + 13 j for j = 0 … 6"),
    ("AUX", 16, "scratch"),
    ("R0", RKMK_STATE.size, "flight attitude sub-integration (advance_attitude): start (RKMK_STATE)"),
    ("R1", RKMK_STATE.size, "its end"),
    ("RS", RKMK_STATE.size, "its stage state"),
    ("RK", 6 * RKMK_STATE.size, "its stage derivatives K_1 … K_6, 7 apart"),
    ("RKFSAL", RKMK_STATE.size, "its K_7 (FSAL), at RK + 7 · 6"),
    ("RH", 1, "its step proposal [s]"),
    ("T0", 1, "time [s] of the step's start (set by the phase kernels before a step): the row terms' t"),
    ("TS", 1, "time [s] of the stage being evaluated (set by dp_attempt)"),
    ("WARM", 1, "1.0: a fly row continued by its next launch (Y0/K0 (FSAL), THR and G0 are the ones its "
                "previous launch left, so a launch boundary changes no bit)"),
    ("THR", 1, "the event threshold at Y0"),
    ("G0", 1, "the event function's value at Y0"),
    ("DC0", 1, "the terrain distance of the CoM at Y0 [m] (flight's step limit)"),
    ("LIFT", 5 * LIFT_SET, "lift_out's working set: up to LIFT_SET vertex numbers, then their linearised "
                           "constraints (gradient, right-hand side: 4 numbers each)"),
    ("FLY_ATTEMPTS", 1, "step attempts (accepted and rejected) of the row's fly phase so far: what `tumble "
                        "bench deploy` splits the phases' time by (a row that takes a new sample of a "
                        "streaming active set starts again from 0)"),
    ("CONTACT_ATTEMPTS", 1, "the same for its contact phase"),
))
(Y0, Y1, YS, K0, KFSAL, AUX, R0, R1, RS, RK, RKFSAL, RH, T0, TS, WARM, THR, G0, DC0, LIFT, FLY_ATTEMPTS,
 CONTACT_ATTEMPTS) = DEPLOY_ROW.offsets(
    "Y0 Y1 YS K0 KFSAL AUX R0 R1 RS RK RKFSAL RH T0 TS WARM THR G0 DC0 LIFT FLY_ATTEMPTS CONTACT_ATTEMPTS")
WORK_SIZE = DEPLOY_ROW.size
#: w[Y1:SNAP_SAVE_END] is what a dense-output trial step overwrites (:data:`record_snapshots`)
SNAP_SAVE_END = DEPLOY_ROW.end("RH")
# state lengths / strides as int64 (a Python-int literal argument compiles a callee per value)
_N6 = _i(6)
_N7 = _i(7)
_N13 = _i(13)

_cross = cross_call.cpu
_rot = quat_rotate_call.cpu
_rot_inv = quat_rotate_inverse_call.cpu
_qdot = quat_derivative.cpu
_qnorm = quat_normalize.cpu
_qmul = quat_multiply.cpu
_nrate = normal_and_rate.cpu
_frame_rate = frame_rate_in_body.cpu
_frame_accel = frame_acceleration.cpu
_euler = euler_acceleration.cpu
_rate_derivative = body_rate_derivative.cpu

# Dormand–Prince 5(4), ecs.stepping.DP54 (the one tableau of every integrator), as scalars for the
# unrolled stages below
_a, _b, _c = DP54.a, DP54.b, DP54.c
C2, C3, C4, C5 = float(_c[1]), float(_c[2]), float(_c[3]), float(_c[4])
A21 = float(_a[1, 0])
A31, A32 = float(_a[2, 0]), float(_a[2, 1])
A41, A42, A43 = float(_a[3, 0]), float(_a[3, 1]), float(_a[3, 2])
A51, A52, A53, A54 = float(_a[4, 0]), float(_a[4, 1]), float(_a[4, 2]), float(_a[4, 3])
A61, A62, A63, A64, A65 = float(_a[5, 0]), float(_a[5, 1]), float(_a[5, 2]), float(_a[5, 3]), float(_a[5, 4])
B1, B3, B4, B5, B6 = float(_b[0]), float(_b[2]), float(_b[3]), float(_b[4]), float(_b[5])

# ------------------------------------------------------------------------------------ gravity
# one dispatch over every source kind: systems.gravity.kernels.gravity_at (gravity_args packs a source)
_grav = gravity_at.cpu


#: A flight step that would carry the CoM across a face of the voxel field's cell ends this
#: fraction of its length past the face; a crossing within this fraction of either end of a step is
#: left alone (:data:`smooth_step`).
FACE_MARGIN = 1e-3


def _first_crossing(d, v, a, tmin):
    """Smallest t > tmin with d + v t + a t²/2 = 0 (inf if none): a coordinate's distance d [m] to a
    plane, its rate v and acceleration a."""
    if a == 0.0:
        if v == 0.0:
            return math.inf
        t = -d / v
        return t if t > tmin else math.inf
    disc = v * v - 2.0 * a * d
    if disc < 0.0:
        return math.inf
    q = -0.5 * (v + math.copysign(math.sqrt(disc), v))       # roots q / (a/2) and d / q
    best = math.inf
    t = q / (0.5 * a)
    if tmin < t < best:
        best = t
    if q != 0.0:
        t = d / q
        if tmin < t < best:
            best = t
    return best


first_crossing = dual_call(_first_crossing)
_cross_t = first_crossing.cpu


def _smooth_step(ga, w, hh):
    """The flight step length [s] (at most hh) over which the gravity field is smooth at the CoM.

    The voxel field (seed 004 §2.4.4) interpolates trilinearly: g is only C⁰ across the grid's cell
    faces, and a DP5(4) step across a face sees an error of low order there, which the controller
    answers by rejecting the step (measured on deploy-cube: 99 % of the rejected flight attempts
    straddled a face, 30 % of all flight attempts). The CoM path ``x + v t + a t²/2`` (a = the
    acceleration at the step's start, w[K0]) predicts when it leaves its cell; a step that would
    cross a face between ``FACE_MARGIN hh`` and ``(1 − FACE_MARGIN) hh`` ends ``FACE_MARGIN`` of
    its length past the crossing, so the face lies at the step's very end (or, for the next step,
    its very start), where its error contribution is negligible. Other sources, and the CoM
    outside the grid box (the far field): hh.
    """
    if ga.kind != GRAVITY_VOXEL:
        return hh
    gs = ga.scalars
    sp = gs[VOX_H]
    tmin = FACE_MARGIN * hh
    best = math.inf
    for c in range(3):
        p = w[Y0 + c]
        o = gs[VOX_OX + c]              # the grid origin along axis c (VOX_OX, VOX_OY, VOX_OZ)
        u = (p - o) / sp
        if not (0.0 <= u <= ga.grid.shape[c] - 1.0):
            return hh
        lo = o + math.floor(u) * sp
        v = w[Y0 + S_V + c]
        a = w[K0 + S_V + c]
        t = _cross_t(p - lo, v, a, tmin)
        if t < best:
            best = t
        t = _cross_t(p - lo - sp, v, a, tmin)
        if t < best:
            best = t
    t = best * (1.0 + FACE_MARGIN)
    return t if t < hh else hh


smooth_step = dual_call(_smooth_step)


# ------------------------------------------------------------------------------------ row terms
# What the DERIVATIVE systems of a deployment world add to the probe's wrench (ecs.terms): these
# defaults (no terms) are what the hand-written kernels call; ecs.terms.fuse_terms links copies of
# the phase kernels against a generated sum of the world's terms instead.
_terms = row_terms_none
_couple = terms_couple_attitude_none
_active = terms_active_none


def _term_wrench(i, w, ys, m, tt, full):
    """The terms' force (target frame) [N] and torque (body, about the CoM) [N m] at the stage
    state w[ys:] and stage time w[TS]; ``full`` False: the stage has no attitude (flight's
    multirate translation step), which the terms receive as NaN."""
    if full:
        q0, q1, q2, q3 = w[ys + S_Q], w[ys + S_Q + 1], w[ys + S_Q + 2], w[ys + S_Q + 3]
        s = 1.0 / math.sqrt(q0 * q0 + q1 * q1 + q2 * q2 + q3 * q3)
        q0, q1, q2, q3 = q0 * s, q1 * s, q2 * s, q3 * s
        wx, wy, wz = w[ys + S_W], w[ys + S_W + 1], w[ys + S_W + 2]
    else:
        q0 = q1 = q2 = q3 = wx = wy = wz = math.nan
    s = RowState(i, w[TS], w[ys], w[ys + 1], w[ys + 2], w[ys + S_V], w[ys + S_V + 1], w[ys + S_V + 2],
                 q0, q1, q2, q3, wx, wy, wz, m)
    return _terms(s, tt.columns, tt.params)


term_wrench = dual_call(_term_wrench)
_twrench = term_wrench.cpu


# ------------------------------------------------------------------------------------ equations of motion
def _attitude_rates(w, ys, kout, ox, oy, oz, inertia, jinv, lx, ly, lz):
    """Eqs 2.2 (q̇) and 2.5 (ω̇): w[kout:kout+7] = d/dt (q, ω) at the attitude state w[ys:ys+7]
    (q body → T scalar-first, ω = ω_S/T body axes), L the torque about the CoM (body) [N m]; the
    frame's terms from :mod:`systems.dynamics.rotating_frame`."""
    q0, q1, q2, q3 = w[ys], w[ys + 1], w[ys + 2], w[ys + 3]
    wx, wy, wz = w[ys + A_W], w[ys + A_W + 1], w[ys + A_W + 2]
    # quaternion rates with the (not renormalised) stage quaternion, as the integrator does
    d0, d1, d2, d3 = _qdot(q0, q1, q2, q3, wx, wy, wz)
    w[kout] = d0
    w[kout + 1] = d1
    w[kout + 2] = d2
    w[kout + 3] = d3
    bx, by, bz = _frame_rate(q0, q1, q2, q3, ox, oy, oz)      # ω_S/N = ω + R(q)ᵀ Ω (eq 2.4)
    sx, sy, sz = wx + bx, wy + by, wz + bz
    ax, ay, az = _euler(inertia, jinv, sx, sy, sz, lx, ly, lz)
    w[kout + A_W], w[kout + A_W + 1], w[kout + A_W + 2] = _rate_derivative(ax, ay, az, sx, sy, sz, wx, wy, wz)


attitude_rates = dual_call(_attitude_rates)
_arates = attitude_rates.cpu


def _translation_rates(w, ys, kout, ga, ox, oy, oz, m, fx, fy, fz):
    """Eq 2.2 (ẋ, v̇): w[kout:kout+6] = d/dt (x, v) at w[ys:ys+6]; F the contact force (target)
    [N]; the frame's terms from :mod:`systems.dynamics.rotating_frame`. Returns the potential U(x)."""
    x, y, z = w[ys], w[ys + 1], w[ys + 2]
    vx, vy, vz = w[ys + S_V], w[ys + S_V + 1], w[ys + S_V + 2]
    u, gx, gy, gz = _grav(ga, x, y, z)
    w[kout] = vx
    w[kout + 1] = vy
    w[kout + 2] = vz
    ax, ay, az = _frame_accel(gx + fx / m, gy + fy / m, gz + fz / m, ox, oy, oz, x, y, z, vx, vy, vz)
    w[kout + S_V], w[kout + S_V + 1], w[kout + S_V + 2] = ax, ay, az
    return u


translation_rates = dual_call(_translation_rates)
_trates = translation_rates.cpu


def _probe_rates(w, ys, kout, ga, ox, oy, oz, m, inertia, jinv, fx, fy, fz, lx, ly, lz):
    """Seed eqs 2.2–2.5: w[kout:kout+13] = ẏ at the state w[ys:ys+13] (module docstring).

    ``inertia``/``jinv`` [3, 3]: I and I⁻¹ (body, about the CoM). F (target) [N] and L (body, about
    the CoM) [N m] are the contact force and torque (zero in flight).
    """
    u = _trates(w, ys, kout, ga, ox, oy, oz, m, fx, fy, fz)
    _arates(w, ys + S_Q, kout + S_Q, ox, oy, oz, inertia, jinv, lx, ly, lz)
    return u


probe_rates = dual_call(_probe_rates)
_rates = probe_rates.cpu


def jacobi_integral(position, velocity, rotation, potential) -> np.ndarray:
    """Jacobi integral per unit mass [m²/s²] of states ``(n, 3)`` (numpy; see the module docstring)."""
    x = np.asarray(position, float)
    c = np.cross(np.asarray(rotation, float), x)
    return 0.5 * np.sum(np.asarray(velocity, float) ** 2, axis=-1) - 0.5 * np.sum(c * c, axis=-1) - np.asarray(potential)


# ------------------------------------------------------------------------------------ DP5(4) step
_stage_c = row_stage.cpu      # the stage combination of a flat row (ecs.stepping)
_dp54_error = row_dp54_error.cpu


#: Contact motion measures position errors against this length [m], not against the distance
#: from the target's centre: a relative 1e-5 of 200 m (2 mm per step) let contacts sink.
CONTACT_LENGTH = 1.0


def _error_norm(w, y0, y1, k, stride, n, h, rtol, atol, lscale, rscale):
    """RMS over the n components at w[y0:] / w[y1:] of the DP5(4) error estimate (stages K_j at
    w[k + stride·j:]) scaled by atol + rtol·max(|y0|, |y1|) (the first three, positions, by
    atol + rtol·lscale when lscale > 0; components 6.. of the 13-number state, attitude and rate,
    with atol / rscale when rscale > 0: an attitude or rate error measured as the displacement or
    velocity it makes at the distance rscale from the CoM)."""
    acc = 0.0
    for c in range(n):
        e = _dp54_error(w, k, stride, c, h)
        if c < 3 and lscale > 0.0:
            acc += _err_sq(e, lscale, lscale, rtol, atol)
        elif c >= 6 and rscale > 0.0:
            acc += _err_sq(e, w[y0 + c], w[y1 + c], rtol, atol / rscale)
        else:
            acc += _err_sq(e, w[y0 + c], w[y1 + c], rtol, atol)
    return math.sqrt(acc / n)


error_norm = dual_call(_error_norm)


_step_factor = step_factor.cpu
_err_sq = scaled_error_sq.cpu


def next_step(h, err):
    """The next step after one of length h with DP5(4) error norm err (ecs.stepping.step_factor)."""
    return h * _step_factor(err, -0.2)


# ------------------------------------------------------------------------------------ contact wrench
def _contact_wrench(i, w, ys, target, body, cs, fx, fy, fz, lx, ly, lz):
    """Contact force (target) and torque (body, about the CoM) at the stage state w[ys:], given the
    other applied force F (target) [N] and torque L (body) [N m] (the row terms), for the row's ``body``
    (:data:`~systems.deployment.records.ProbeBody`).

    The active slots ``cs.act[i]`` (vertex ``cs.slot_vertex[i, k]``, or the sphere's contact point)
    are frozen for the step; the force law is :data:`systems.probe_contact.contact_motion.contact_forces_row`
    with the rotating frame folded into its inputs: the free CoM acceleration is g + Coriolis +
    centrifugal, and the external torque is chosen so that its free angular acceleration is eq 2.5's
    ``−I⁻¹(ω_S/N × I ω_S/N) − ω_S/N × ω`` (``τ = ω × Iω − ω_S/N × I ω_S/N − I(ω_S/N × ω)``).
    """
    st_att, st_vel, st_om, accel, torque = cs.attitude, cs.velocity, cs.omega, cs.accel, cs.torque
    act, slot_vertex, points, normals, ndots, srad = cs.act, cs.slot_vertex, cs.points, cs.normals, cs.ndots, cs.srad
    out_total = cs.out_total
    mass, inertia, vpos, sphere_r = body.mass, body.inertia, body.vpos, body.sphere_r
    ga, ta, ox, oy, oz = target
    x, y, z = w[ys], w[ys + 1], w[ys + 2]
    vx, vy, vz = w[ys + S_V], w[ys + S_V + 1], w[ys + S_V + 2]
    q0, q1, q2, q3 = w[ys + S_Q], w[ys + S_Q + 1], w[ys + S_Q + 2], w[ys + S_Q + 3]
    s = 1.0 / math.sqrt(q0 * q0 + q1 * q1 + q2 * q2 + q3 * q3)
    q0, q1, q2, q3 = q0 * s, q1 * s, q2 * s, q3 * s
    wx, wy, wz = w[ys + S_W], w[ys + S_W + 1], w[ys + S_W + 2]
    st_att[i, 0], st_att[i, 1], st_att[i, 2], st_att[i, 3] = q0, q1, q2, q3
    st_vel[i, 0], st_vel[i, 1], st_vel[i, 2] = vx, vy, vz
    st_om[i, 0], st_om[i, 1], st_om[i, 2] = wx, wy, wz
    _, gx, gy, gz = _grav(ga, x, y, z)
    m = mass[i]
    accel[i, 0], accel[i, 1], accel[i, 2] = _frame_accel(gx + fx / m, gy + fy / m, gz + fz / m, ox, oy, oz,
                                                         x, y, z, vx, vy, vz)
    I = inertia[i]
    bx, by, bz = _rot_inv(q0, q1, q2, q3, ox, oy, oz)        # R(q)ᵀ Ω of the normalised q (eq 2.4)
    sx, sy, sz = wx + bx, wy + by, wz + bz
    hsx = I[0, 0] * sx + I[0, 1] * sy + I[0, 2] * sz
    hsy = I[1, 0] * sx + I[1, 1] * sy + I[1, 2] * sz
    hsz = I[2, 0] * sx + I[2, 1] * sy + I[2, 2] * sz
    hwx = I[0, 0] * wx + I[0, 1] * wy + I[0, 2] * wz
    hwy = I[1, 0] * wx + I[1, 1] * wy + I[1, 2] * wz
    hwz = I[2, 0] * wx + I[2, 1] * wy + I[2, 2] * wz
    ax_, ay_, az_ = _cross(wx, wy, wz, hwx, hwy, hwz)
    bx_, by_, bz_ = _cross(sx, sy, sz, hsx, hsy, hsz)
    px, py, pz = _cross(sx, sy, sz, wx, wy, wz)
    torque[i, 0] = ax_ - bx_ - (I[0, 0] * px + I[0, 1] * py + I[0, 2] * pz) + lx
    torque[i, 1] = ay_ - by_ - (I[1, 0] * px + I[1, 1] * py + I[1, 2] * pz) + ly
    torque[i, 2] = az_ - bz_ - (I[2, 0] * px + I[2, 1] * py + I[2, 2] * pz) + lz
    nslot = act.shape[1]
    for k in range(nslot):
        if act[i, k] == 0:
            continue
        if sphere_r > 0.0:
            nx, ny, nz, dx, dy, dz = _nrate(ta, x, y, z, vx, vy, vz)
            rx, ry, rz = _rot_inv(q0, q1, q2, q3, -sphere_r * nx, -sphere_r * ny, -sphere_r * nz)
            srad[i, k] = sphere_r
        else:
            v = slot_vertex[i, k]
            rx, ry, rz = vpos[v, 0], vpos[v, 1], vpos[v, 2]
            tx, ty, tz = _rot(q0, q1, q2, q3, rx, ry, rz)
            ux, uy, uz = _cross(wx, wy, wz, rx, ry, rz)
            ux, uy, uz = _rot(q0, q1, q2, q3, ux, uy, uz)
            nx, ny, nz, dx, dy, dz = _nrate(ta, x + tx, y + ty, z + tz, vx + ux, vy + uy, vz + uz)
            srad[i, k] = 0.0
        points[i, k, 0], points[i, k, 1], points[i, k, 2] = rx, ry, rz
        normals[i, k, 0], normals[i, k, 1], normals[i, k, 2] = nx, ny, nz
        ndots[i, k, 0], ndots[i, k, 1], ndots[i, k, 2] = dx, dy, dz
    _cforces(i, mass, inertia, cs)
    return (out_total[i, 0], out_total[i, 1], out_total[i, 2], out_total[i, 3], out_total[i, 4], out_total[i, 5])


def _probe_rhs(i, w, ys, kout, contact, target, body, tt):
    """ẏ at w[ys:] (time w[TS]) into w[kout:]: flight (``contact`` None) or contact motion
    (``contact`` the contact scratch ``cs`` of :data:`contact_wrench`), with the row terms ``tt``
    (ecs.terms).

    ``contact`` is None, not a flag, so that numba compiles flight without the contact solver: a
    ``None`` argument's branches are pruned before typing (its *dead branch pruning*), and the
    callers that pass it on (:data:`dp_attempt`, :data:`locate_event`, :data:`record_snapshots`)
    are compiled once per kind. The flight kernels were half contact solver they never ran
    (measured: 13 k of their 30 k LLVM instructions). ``body``: the row's
    :data:`~systems.deployment.records.ProbeBody`."""
    ga, ta, ox, oy, oz = target
    mass, inertia, jinv = body.mass, body.inertia, body.jinv
    fx = fy = fz = lx = ly = lz = 0.0
    if _active():
        fx, fy, fz, lx, ly, lz = _twrench(i, w, ys, mass[i], tt, True)
    if contact is not None:
        cx, cy, cz, cl, cm, cn = _cwrench(i, w, ys, target, body, contact, fx, fy, fz, lx, ly, lz)
        fx += cx
        fy += cy
        fz += cz
        lx += cl
        ly += cm
        lz += cn
    return _rates(w, ys, kout, ga, ox, oy, oz, mass[i], inertia[i], jinv[i], fx, fy, fz, lx, ly, lz)


#: :data:`dp_attempt`'s ``fly`` argument in flight (None in contact motion: its docstring).
FLIGHT = np.int64(1)
#: Most attitude sub-steps one flight step may take (a guard; a step needing more fails the row).
ATTITUDE_MAX_SUBSTEPS = 100_000
#: Largest rotation [rad] of one attitude sub-step (keeps dexp⁻¹ far from its singularity at 2π).
ATTITUDE_MAX_ANGLE = 0.5 * math.pi
#: Flight carries the attitude in closed form over a step in which Euler's ω̇ would change ω by
#: less than this fraction of the tolerance (and the angle by less than it): a steady spin
#: (:func:`_advance_attitude`).
ATTITUDE_STEADY = 1e-3


def _rkmk_rates(w, ys, kout, inertia, jinv):
    """Torque-free attitude in Munthe-Kaas form: w[kout:kout+6] = (θ̇, ω̇) at w[ys:ys+6].

    θ is the rotation vector of the attitude relative to the sub-step's start, p(τ) = p₀ ⊗ exp(θ),
    ω = ω_S/N in body axes. ``θ̇ = dexp⁻¹_θ(ω) = ω + ½ θ × ω + c(|θ|) θ × (θ × ω)`` with
    ``c(a) = 1/a² − (1 + cos a)/(2 a sin a)`` (the inverse right Jacobian of SO(3)), and Euler's
    ``ω̇ = −I⁻¹ (ω × I ω)`` (eq 2.5 in the inertial frame:
    :data:`systems.dynamics.rotating_frame.euler_acceleration`).
    """
    tx, ty, tz = w[ys], w[ys + 1], w[ys + 2]
    wx, wy, wz = w[ys + M_W], w[ys + M_W + 1], w[ys + M_W + 2]
    a2 = tx * tx + ty * ty + tz * tz
    if a2 < 1e-8:
        c = 1.0 / 12.0 + a2 / 720.0
    else:
        a = math.sqrt(a2)
        c = 1.0 / a2 - (1.0 + math.cos(a)) / (2.0 * a * math.sin(a))
    ax, ay, az = _cross(tx, ty, tz, wx, wy, wz)
    bx, by, bz = _cross(tx, ty, tz, ax, ay, az)
    w[kout] = wx + 0.5 * ax + c * bx
    w[kout + 1] = wy + 0.5 * ay + c * by
    w[kout + 2] = wz + 0.5 * az + c * bz
    w[kout + M_W], w[kout + M_W + 1], w[kout + M_W + 2] = _euler(inertia, jinv, wx, wy, wz, 0.0, 0.0, 0.0)


rkmk_rates = dual_call(_rkmk_rates)
_rkmk = rkmk_rates.cpu


def _turned(q0, q1, q2, q3, tx, ty, tz):
    """``q ⊗ exp(θ)`` renormalised: ``q`` turned by the rotation vector θ = (tx, ty, tz) [rad] in its
    own (body) axes."""
    a = math.sqrt(tx * tx + ty * ty + tz * tz)
    e0 = math.cos(0.5 * a)
    sk = 0.5 if a == 0.0 else math.sin(0.5 * a) / a
    q0, q1, q2, q3 = _qmul(q0, q1, q2, q3, e0, sk * tx, sk * ty, sk * tz)
    return _qnorm(q0, q1, q2, q3)


turned = dual(_turned)
_turn = turned.cpu


def _advance_attitude(w, h, ox, oy, oz, inertia, jinv, rtol, atol):
    """Flight's attitude: (q, ω) from w[Y0 + S_Q:] over h into w[Y1 + S_Q:] (and its rate into
    w[KFSAL + S_Q:]), torque-free, under the flight's rtol/atol. Returns False if it cannot
    (non-finite rates, or more than :data:`ATTITUDE_MAX_SUBSTEPS` sub-steps).

    Without torque the body turns freely in the inertial frame N, so the attitude is carried there:
    ``p(τ) = q_T/N(t₀)* ⊗ q_S/N(t₀ + τ)`` (p(0) = q_S/T(t₀)) obeys ``ṗ = ½ p ⊗ ω_S/N`` with Euler's
    equation for ω_S/N, and ``q_S/T(t₀ + h) = e(Ωh)* ⊗ p(h)`` with e(Ωh) the target's turn about Ω
    over h (uniform rotation, §2.1). p is advanced by Runge–Kutta–Munthe-Kaas sub-steps (Munthe-Kaas,
    BIT 38 (1998) 92–111; Iserles et al., Acta Numerica 9 (2000) 215–365): the DP5(4) tableau
    applied to (θ, ω) of :data:`rkmk_rates`, p ← p ⊗ exp(θ) after each accepted sub-step, with
    adaptive sub-steps whose proposal is kept in w[RH]. The error is measured on θ against
    atol + rtol·(1 rad) and on ω like any state component. It stays on the unit sphere by
    construction.

    A steady spin skips the sub-steps: when Euler's ω̇ would move ω by less than
    :data:`ATTITUDE_STEADY` of its tolerance over the step, and the angle by less than that of
    θ's, ω_S/N is taken as constant and ``p(h) = p(0) ⊗ exp(h ω)`` in closed form (equal principal
    moments, or a spin about a principal axis: a cube's flight on ``deploy-cube``, where the
    sub-steps took a third of flight's time).
    """
    q0, q1, q2, q3 = _qnorm(w[Y0 + S_Q], w[Y0 + S_Q + 1], w[Y0 + S_Q + 2], w[Y0 + S_Q + 3])
    bx, by, bz = _rot_inv(q0, q1, q2, q3, ox, oy, oz)
    w[R0], w[R0 + 1], w[R0 + 2] = 0.0, 0.0, 0.0
    w[R0 + M_W], w[R0 + M_W + 1], w[R0 + M_W + 2] = w[Y0 + S_W] + bx, w[Y0 + S_W + 1] + by, w[Y0 + S_W + 2] + bz
    _rkmk(w, R0, RK, inertia, jinv)
    hs = w[RH]
    if not (hs > 0.0):
        hs = h
    tau = 0.0
    n = 0
    wn = math.sqrt(w[R0 + M_W] ** 2 + w[R0 + M_W + 1] ** 2 + w[R0 + M_W + 2] ** 2)
    wd = math.sqrt(w[RK + M_W] ** 2 + w[RK + M_W + 1] ** 2 + w[RK + M_W + 2] ** 2)   # |ω̇_S/N| (Euler)
    if (wd * h <= ATTITUDE_STEADY * (atol + rtol * wn)
            and 0.5 * wd * h * h <= ATTITUDE_STEADY * (atol + rtol)):
        # ω_S/N steady over the step (equal principal moments, or a spin about a principal axis):
        # p(h) = p(0) ⊗ exp(h ω) in closed form, to within ATTITUDE_STEADY of the tolerance
        q0, q1, q2, q3 = _turn(q0, q1, q2, q3, h * w[R0 + M_W], h * w[R0 + M_W + 1], h * w[R0 + M_W + 2])
        tau = h
    while tau < h:
        rate = math.sqrt(w[R0 + M_W] ** 2 + w[R0 + M_W + 1] ** 2 + w[R0 + M_W + 2] ** 2)
        hcap = hs
        if rate * hcap > ATTITUDE_MAX_ANGLE:
            hcap = ATTITUDE_MAX_ANGLE / rate
        last = hcap >= h - tau
        hh = h - tau if last else hcap
        _stage_c(w, R0, RK, _N7, _N6, RS, hh, A21, 0.0, 0.0, 0.0, 0.0, 0.0)
        _rkmk(w, RS, RK + 7, inertia, jinv)
        _stage_c(w, R0, RK, _N7, _N6, RS, hh, A31, A32, 0.0, 0.0, 0.0, 0.0)
        _rkmk(w, RS, RK + 14, inertia, jinv)
        _stage_c(w, R0, RK, _N7, _N6, RS, hh, A41, A42, A43, 0.0, 0.0, 0.0)
        _rkmk(w, RS, RK + 21, inertia, jinv)
        _stage_c(w, R0, RK, _N7, _N6, RS, hh, A51, A52, A53, A54, 0.0, 0.0)
        _rkmk(w, RS, RK + 28, inertia, jinv)
        _stage_c(w, R0, RK, _N7, _N6, RS, hh, A61, A62, A63, A64, A65, 0.0)
        _rkmk(w, RS, RK + 35, inertia, jinv)
        _stage_c(w, R0, RK, _N7, _N6, R1, hh, B1, 0.0, B3, B4, B5, B6)
        _rkmk(w, R1, RKFSAL, inertia, jinv)
        err = _errn(w, R0, R1, RK, _N7, _N6, hh, rtol, atol, 1.0, 0.0)
        n += 1
        if not math.isfinite(err) or n > ATTITUDE_MAX_SUBSTEPS:
            return False
        if err <= 1.0:
            q0, q1, q2, q3 = _turn(q0, q1, q2, q3, w[R1], w[R1 + 1], w[R1 + 2])   # p <- p ⊗ exp(θ)
            w[R0], w[R0 + 1], w[R0 + 2] = 0.0, 0.0, 0.0
            w[R0 + M_W], w[R0 + M_W + 1], w[R0 + M_W + 2] = w[R1 + M_W], w[R1 + M_W + 1], w[R1 + M_W + 2]
            _rkmk(w, R0, RK, inertia, jinv)
            if last:
                tau = h
            else:
                tau += hh
                hs = _next_h(hh, err)
        else:
            hs = _next_h(hh, err)
    # back to the rotating frame: q_S/T = e(Ωh)* ⊗ p, ω_S/T = ω_S/N − R(q_S/T)ᵀ Ω
    om = math.sqrt(ox * ox + oy * oy + oz * oz)
    if om > 0.0:
        c = math.cos(0.5 * om * h)
        sk = -math.sin(0.5 * om * h) / om
        q0, q1, q2, q3 = _qmul(c, sk * ox, sk * oy, sk * oz, q0, q1, q2, q3)
        q0, q1, q2, q3 = _qnorm(q0, q1, q2, q3)
    bx, by, bz = _rot_inv(q0, q1, q2, q3, ox, oy, oz)
    w[Y1 + S_Q], w[Y1 + S_Q + 1], w[Y1 + S_Q + 2], w[Y1 + S_Q + 3] = q0, q1, q2, q3
    w[Y1 + S_W], w[Y1 + S_W + 1], w[Y1 + S_W + 2] = w[R0 + M_W] - bx, w[R0 + M_W + 1] - by, w[R0 + M_W + 2] - bz
    _arates(w, Y1 + S_Q, KFSAL + S_Q, ox, oy, oz, inertia, jinv, 0.0, 0.0, 0.0)
    w[RH] = hs
    return True


def _dp_attempt(i, w, h, contact, fly, target, body, tt, rtol, atol):
    """One Dormand–Prince 5(4) attempt of length h from w[Y0] at time w[T0] (with K_1 = f(Y0) at w[K0],
    FSAL).

    Writes Y1 and K_7 = f(Y1); returns the scaled error norm (accept when ≤ 1; NaN: failed).

    Contact motion (``contact`` the contact scratch, :data:`probe_rhs`) steps the 13-number state at
    once. In flight (``contact`` None) there is no torque, so eq 2.5 does not depend on (x, v) and
    eq 2.2's translation does not depend on the
    attitude: the step is *multirate* — one DP5(4) step of (x, v) whose error decides acceptance,
    and the attitude carried over the same interval by its own adaptive DP5(4) sub-steps under the
    same tolerances (:data:`advance_attitude`). A tumbling probe's attitude needs sub-second steps
    at rtol 1e-10 where its ballistic arc allows tens of seconds; stepping both together made every
    gravity evaluation pay for the attitude's step size. When a row term reads the attitude or
    applies a torque (ecs.terms), the split does not hold and flight steps all 13 numbers too.
    ``body``: the row's :data:`~systems.deployment.records.ProbeBody`.

    ``fly`` is :data:`FLIGHT` in flight and None in contact motion (which passes ``contact = cs``):
    numba prunes a branch on a None argument before typing (:data:`probe_rhs`), never on a record's,
    so without it every contact kernel compiled the multirate branch and its attitude sub-steps,
    which it never runs (1.5–2.3 s of the contact kernel's cold compile, measured). The attempt is
    a plain call, not inlined at numba-IR level: an inlined body's arguments are locals, and nothing
    in it is pruned.
    """
    ga, ta, ox, oy, oz = target
    mass, inertia, jinv = body.mass, body.inertia, body.jinv
    t0 = w[T0]
    if fly is not None and not _couple():
        m = mass[i]
        fx = fy = fz = 0.0
        _stage_c(w, Y0, K0, _N13, _N6, YS, h, A21, 0.0, 0.0, 0.0, 0.0, 0.0)
        w[TS] = t0 + C2 * h
        if _active():
            fx, fy, fz, _l, _m, _n = _twrench(i, w, YS, m, tt, False)
        _trates(w, YS, K0 + 13, ga, ox, oy, oz, m, fx, fy, fz)
        _stage_c(w, Y0, K0, _N13, _N6, YS, h, A31, A32, 0.0, 0.0, 0.0, 0.0)
        w[TS] = t0 + C3 * h
        if _active():
            fx, fy, fz, _l, _m, _n = _twrench(i, w, YS, m, tt, False)
        _trates(w, YS, K0 + 26, ga, ox, oy, oz, m, fx, fy, fz)
        _stage_c(w, Y0, K0, _N13, _N6, YS, h, A41, A42, A43, 0.0, 0.0, 0.0)
        w[TS] = t0 + C4 * h
        if _active():
            fx, fy, fz, _l, _m, _n = _twrench(i, w, YS, m, tt, False)
        _trates(w, YS, K0 + 39, ga, ox, oy, oz, m, fx, fy, fz)
        _stage_c(w, Y0, K0, _N13, _N6, YS, h, A51, A52, A53, A54, 0.0, 0.0)
        w[TS] = t0 + C5 * h
        if _active():
            fx, fy, fz, _l, _m, _n = _twrench(i, w, YS, m, tt, False)
        _trates(w, YS, K0 + 52, ga, ox, oy, oz, m, fx, fy, fz)
        _stage_c(w, Y0, K0, _N13, _N6, YS, h, A61, A62, A63, A64, A65, 0.0)
        w[TS] = t0 + h
        if _active():
            fx, fy, fz, _l, _m, _n = _twrench(i, w, YS, m, tt, False)
        _trates(w, YS, K0 + 65, ga, ox, oy, oz, m, fx, fy, fz)
        _stage_c(w, Y0, K0, _N13, _N6, Y1, h, B1, 0.0, B3, B4, B5, B6)
        if _active():
            fx, fy, fz, _l, _m, _n = _twrench(i, w, Y1, m, tt, False)
        _trates(w, Y1, KFSAL, ga, ox, oy, oz, m, fx, fy, fz)
        err = _errn(w, Y0, Y1, K0, _N13, _N6, h, rtol, atol, 0.0, 0.0)
        if not _advance_att(w, h, ox, oy, oz, inertia[i], jinv[i], rtol, atol):
            return math.nan
        return err
    _stage_c(w, Y0, K0, _N13, _N13, YS, h, A21, 0.0, 0.0, 0.0, 0.0, 0.0)
    w[TS] = t0 + C2 * h
    _rhs(i, w, YS, K0 + 13, contact, target, body, tt)
    _stage_c(w, Y0, K0, _N13, _N13, YS, h, A31, A32, 0.0, 0.0, 0.0, 0.0)
    w[TS] = t0 + C3 * h
    _rhs(i, w, YS, K0 + 26, contact, target, body, tt)
    _stage_c(w, Y0, K0, _N13, _N13, YS, h, A41, A42, A43, 0.0, 0.0, 0.0)
    w[TS] = t0 + C4 * h
    _rhs(i, w, YS, K0 + 39, contact, target, body, tt)
    _stage_c(w, Y0, K0, _N13, _N13, YS, h, A51, A52, A53, A54, 0.0, 0.0)
    w[TS] = t0 + C5 * h
    _rhs(i, w, YS, K0 + 52, contact, target, body, tt)
    _stage_c(w, Y0, K0, _N13, _N13, YS, h, A61, A62, A63, A64, A65, 0.0)
    w[TS] = t0 + h
    _rhs(i, w, YS, K0 + 65, contact, target, body, tt)
    _stage_c(w, Y0, K0, _N13, _N13, Y1, h, B1, 0.0, B3, B4, B5, B6)
    if contact is not None:
        # contact motion normalises the end's attitude (seed §2.7.1) before K_7 = f(Y1), not when
        # the step is accepted: K_7 is then f of the next step's Y0 to the bit, which the contact
        # kernel reuses as its K_1 when nothing moved Y0 (systems.deployment.contact, "FSAL")
        _normq(w, Y1)
    _rhs(i, w, Y1, KFSAL, contact, target, body, tt)
    I = inertia[i]
    gyration = math.sqrt((I[0, 0] + I[1, 1] + I[2, 2]) / (2.0 * mass[i]))   # radius of gyration [m]
    lscale = 0.0 if contact is None else CONTACT_LENGTH     # coupled flight: positions relative, as above
    return _errn(w, Y0, Y1, K0, _N13, _N13, h, rtol, atol, lscale, gyration)


def _normalise_quaternion(w, off):
    """The attitude quaternion of the state at w[off:] <- itself normalised (seed §2.7.1)."""
    q0, q1, q2, q3 = _qnorm(w[off + S_Q], w[off + S_Q + 1], w[off + S_Q + 2], w[off + S_Q + 3])
    w[off + S_Q], w[off + S_Q + 1], w[off + S_Q + 2], w[off + S_Q + 3] = q0, q1, q2, q3


def _accept(w, normalise):
    """Y0 <- Y1, with the quaternion renormalised (seed §2.7.1) when ``normalise`` (contact
    motion's attempt normalised it already: a second normalisation moves a third of unit
    quaternions by an ulp), K_1 <- K_7 (FSAL)."""
    if normalise:
        _normq(w, Y1)
    for c in range(STATE):
        w[Y0 + c] = w[Y1 + c]
        w[K0 + c] = w[KFSAL + c]


step_size = dual_call(next_step)


from systems.probe_contact.contact_motion import contact_forces_row  # noqa: E402  (after the kernels it does not need)

_cforces = contact_forces_row.cpu
contact_wrench = dual(_contact_wrench, gpu_inline=False)
_cwrench = contact_wrench.cpu
probe_rhs = dual_call(_probe_rhs)
_rhs = probe_rhs.cpu
_errn = error_norm.cpu
_next_h = step_size.cpu
advance_attitude = dual_call(_advance_attitude)
_advance_att = advance_attitude.cpu
dp_attempt = dual_call(_dp_attempt)
_dpa = dp_attempt.cpu
#: :func:`commit_step`'s ``normalise``: flight's attempts leave Y1's attitude to be normalised,
#: contact motion's normalise it themselves (:func:`_dp_attempt`). Typed constants: a Python bool
#: literal argument compiles a specialisation of its own.
RENORMALISE = np.bool_(True)
NORMALISED = np.bool_(False)
normalise_quaternion = dual_call(_normalise_quaternion)
_normq = normalise_quaternion.cpu
accept = dual_call(_accept)


def _commit_step(w, t, hh, t_end, dist, normalise):
    """Accept the step Y0 -> Y1 of length hh (``normalise``: :func:`_accept`'s): returns the new
    time (snapped onto t_end, the time cap, within round-off) and the path length plus the step's
    chord."""
    dx = w[Y1] - w[Y0]
    dy = w[Y1 + 1] - w[Y0 + 1]
    dz = w[Y1 + 2] - w[Y0 + 2]
    dist += math.sqrt(dx * dx + dy * dy + dz * dz)
    _accept_c(w, normalise)
    t += hh
    if t_end - t < 1e-12 * max(1.0, abs(t_end)):
        t = t_end
    return t, dist


def _finish_row(i, w, t, h, dist, pos, vel, att, om, rtime, step, distance):
    """Write row i's state, time, step proposal and path length back to its columns."""
    _store_c(i, w, Y0, pos, vel, att, om)
    rtime[i] = t
    step[i] = h
    distance[i] = dist


def _load_state(i, w, pos, vel, att, om):
    """w[Y0:] <- the row's state columns."""
    for c in range(3):
        w[Y0 + c] = pos[i, c]
        w[Y0 + S_V + c] = vel[i, c]
        w[Y0 + S_W + c] = om[i, c]
    for c in range(4):
        w[Y0 + S_Q + c] = att[i, c]


def _store_state(i, w, off, pos, vel, att, om):
    """The row's state columns <- w[off:off+13]."""
    for c in range(3):
        pos[i, c] = w[off + c]
        vel[i, c] = w[off + S_V + c]
        om[i, c] = w[off + S_W + c]
    for c in range(4):
        att[i, c] = w[off + S_Q + c]


load_state = dual_call(_load_state)
store_state = dual_call(_store_state)
_store_c = store_state.cpu
_accept_c = accept.cpu
commit_step = dual_call(_commit_step)
finish_row = dual_call(_finish_row)


def _state_finite(w, off):
    for c in range(STATE):
        if not math.isfinite(w[off + c]):
            return False
    return True


state_finite = dual_call(_state_finite)


def contact_scratch(n: int, slots: int, vertices: int, *, vstar: float, wstar: float, baumgarte: float) -> tuple:
    """The :data:`~systems.deployment.records.ContactScratch` (``cs`` of :data:`contact_wrench`) of
    ``n`` rows: the contact force kernel's arrays and, last, the per-vertex scratch of the active-set
    choice (``vertices``: the most vertices of a shape), which also tells the contact event
    function which vertices touched at the step's start (:data:`held`)."""
    from systems.probe_contact.contact_motion import contact_work_size

    return ContactScratch(np.zeros((n, contact_work_size(slots))), np.zeros((n, 4)), np.zeros((n, 3)), np.zeros((n, 3)),
            np.zeros((n, 3)), np.zeros((n, 3)), np.zeros((n, slots), np.int8), np.zeros((n, slots), np.int64),
            np.zeros((n, slots, 3)), np.zeros((n, slots, 3)), np.zeros((n, slots, 3)), np.zeros((n, slots)),
            np.zeros((n, slots)), np.zeros((n, 3)), np.zeros((n, slots, 3)), np.zeros((n, slots)),
            np.zeros((n, slots), np.int8), np.zeros((n, 6)), float(vstar), float(wstar), float(baumgarte),
            np.zeros((n, max(1, vertices))))


def frame_ends(table, t_end) -> np.ndarray:
    """Per-row frame ends [s] of a phase launch: ``t_end`` itself when it is an array over the
    table's rows, else ``t_end`` for every row."""
    if not (t_end.ndim if hasattr(t_end, "ndim") else np.ndim(t_end)):
        return np.full(table.row_count, float(t_end))
    if type(t_end) is np.ndarray:
        return np.ascontiguousarray(t_end, dtype=np.float64)
    return t_end                  # on the device already (GPU backend: systems.deployment.modes.ModeLoop.frame_start)

