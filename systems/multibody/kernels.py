"""Articulated-tree dynamics kernels: the external forces on links (gravity fields, row terms,
joint laws), the state derivative through the O(n) articulated-body algorithm, the RK and
Kuo–Nguyen steps, link motion and poses for output. The pieces, after R. Featherstone, *Rigid
Body Dynamics Algorithms*, Springer, 2008 (RBDA): spatial algebra and the scratch layout
(§2) in :mod:`systems.multibody.spatial`, the joint model in :mod:`systems.multibody.joints`,
ABA, RNEA and CRBA (Tables 7.1, 5.1, 6.2), poses, energy and momentum in
:mod:`systems.multibody.algorithms`.

Every kernel works on one sample's links, rows ``b .. b + n - 1`` of the link table (parent-first
order, :mod:`components.multibody`), with plain loops on scalars and element indexing: no
allocation, so the same sources can be compiled for CUDA (``ecs.kernels.dual``). Scratch lives in
two per-row arrays the caller owns: ``M[rows, 7, 6, 6]`` (matrices) and ``V[rows, 8, 6]`` (vectors),
see :func:`new_scratch`.

Spatial vectors are Featherstone's, in link body coordinates at the link origin: motion
``[ω; v]``, force ``[n; f]``. ``X`` maps motion vectors from parent to link coordinates, ``Xᵀ``
maps forces from link to parent coordinates; it is never formed as a 6×6 matrix, but applied as the
joint placement's rotation and translation (slot ``M[r, MW]``, :func:`_motion_in`,
:func:`_force_out`, :func:`_congruence_rt_add`). A root's parent frame is the inertial frame.

Internal joint velocities: a free joint's state velocity is (velocity in joint axes, body rate),
the ABA works with its body-axes twist ``u = (Rᵀ v, ω)`` (Pinocchio's free-flyer coordinates), so
its motion subspace is constant; inputs and outputs are converted at the boundary
(``p̈ = R (u̇_v + ω × u_v)``). Locked joints are treated as fixed (no velocity coordinate).

External forces ``fext[r, 6]`` are spatial forces ``[n; f]`` on the link, body axes, about the
link origin. ``a0[6]`` is the spatial acceleration of the inertial frame used as the roots'
parent: ``[0, 0, 0, -g]`` puts a uniform gravity field ``g`` (inertial axes) on every link
(RBDA §5.3); zero in orbit, where gravity comes in per link through ``fext``.
"""

from __future__ import annotations

import math

from numba import prange

from components.multibody import FIXED, FREE, LAW_FIELDS, PRISMATIC, QD_SLOTS, Q_SLOTS, REVOLUTE, SPHERICAL
from ecs.attitude import dcm_to_quat, quat_derivative, quat_normalize, quat_rotate_inverse
from ecs.kernels import SampleDriver, cpu_jit, cpu_parallel, dual, gpu_literal
from ecs.status import Reason, Status
from ecs.stepping import stage_sum
from ecs.terms import RowState, joint_law_none, row_terms_none, sample_terms_none, terms_active_none
from systems.gravity.kernels import gradient_torque
from systems.multibody.spatial import MW, VA, VV, nv_nominal, nv_of
from systems.multibody.algorithms import aba_solve, origin, system_com, world_pose
from systems.multibody.joints import velocities

_abas = aba_solve.cpu
_nv = nv_of.cpu
_nvn = nv_nominal.cpu
_org = origin.cpu
_pose = world_pose.cpu
_scom = system_com.cpu
_vel = velocities.cpu

_qdot = quat_derivative.cpu
_qnorm = quat_normalize.cpu
_rot_inv = quat_rotate_inverse.cpu
_ssum = stage_sum.cpu
_d2q = dcm_to_quat.cpu
_gg_torque = gradient_torque.cpu
_terms = row_terms_none            # the world's row terms: ecs.terms.fuse_terms links copies against them
_terms_on = terms_active_none
_sample_terms = sample_terms_none  # the world's sample term (facet contact between links): ecs.terms.SampleTerm
_joint_law = joint_law_none  # the world's joint law (a motor, a servo: ecs.terms.JointLaw), after the built-in ones
#: Joint-law parameters, ``law[r, LAW_*]``: the columns they come from (components.multibody).
LAW_COLUMNS = tuple("joint_" + f for f in LAW_FIELDS)
(LAW_VISCOUS, LAW_COULOMB, LAW_SLIP, LAW_STIFFNESS, LAW_DAMPING, LAW_REST, LAW_LOWER, LAW_UPPER, LAW_LIMIT_STIFFNESS,
 LAW_LIMIT_DAMPING) = range(len(LAW_COLUMNS))
#: The built-in laws' parameter count: a joint law's columns (ecs.terms.JointLaw) follow them in ``law``.
N_LAW = len(LAW_COLUMNS)
#: ``row_status`` code of a FAILED row.
FAILED_CODE = int(Status.FAILED)
#: ``row_reason`` code of a sample whose state became non-finite.
NONFINITE_CODE = int(Reason.NONFINITE_STATE)
#: Width of the per-link motion array of :func:`_link_motion`.
ACC_WIDTH = 18
#: State size per link for integration: q (7) then qd (6).
STATE = Q_SLOTS + QD_SLOTS
#: The first stage and :func:`_link_forces`' ``mode`` 0 (evaluate the row terms): int64 on the
#: CPU (a literal ``0`` compiled :func:`_derivative` three times per scene, once per caller), a
#: literal the GPU folds (:func:`ecs.kernels.gpu_literal`)
_STAGE0 = gpu_literal(0)
_EVALUATE_TERMS = gpu_literal(0)


def _link_forces(b, n, gmode, tree, load, work, time, mode, env, tt):
    """fext[r] <- the link's external spatial force, body axes, about the link origin: the
    accumulated ``force`` (inertial, through the CoM) and ``torque`` (body, about the CoM), plus,
    when ``mu > 0``, the link's own point-mass gravity at its CoM and its gravity-gradient torque
    ``3μ/|x|⁵ x_b × (I_c x_b)`` (x_b: CoM position in body axes; seed 001 "each body as if it was
    independent", MBGravityTorque).

    ``gmode`` 0 (full): the gravity force is ``m g(x)``, ``g(x) = −μ x/|x|³``. ``gmode`` 1
    (differential, seed 001 "Numerical considerations — scale"): it is ``m (g(x) − g(x_s))`` with
    x_s the system CoM; ``g(x_s)`` is left in ``M[b, MW][0:3, 4]`` for the caller to add to the
    root's acceleration after the solve. The difference is evaluated without cancellation from
    the link's offset d = x − x_s (from relative kinematics, :func:`_world_pose`), Encke-style:
    ``g(x_s + d) − g(x_s) = −μ [d/|x|³ − x_s δ (r_s² + r_s r + r²)/((r_s + r) r³ r_s³)]`` with
    ``δ = |x|² − r_s² = 2 x_s·d + d·d``. ``gmode`` 2 (linearised, seed 001 "Simplifying
    assumptions"): as 1 with the difference replaced by ``Γ(x_s) d``, ``Γ = μ/r_s³ (3 r̂ r̂ᵀ − E)``,
    and each link's gradient torque taken from Γ(x_s) (``3μ/r_s⁵ x_b × (I_c x_b)`` at ``x = x_s``).

    Then the world's row terms (:mod:`ecs.terms`: gravity sources, third bodies, drag, sunlight,
    user forces) at the link's own CoM, velocity, attitude and rate (seed 001: "each body as if it
    was independent"), at stage time ``time``; ``tt`` is their argument (columns of the link
    table, resource arrays, parameters). They enter in full in every gravity mode. ``mode`` 0:
    evaluate them; 1: evaluate and keep them in ``env[r]``; 2: use ``env[r]`` as kept (seed 001's
    reduced environment update rate, :class:`systems.multibody.dynamics.MultibodyDynamics` ``environment_every``).
    ``gmode`` is the mode in effect for this sample (:func:`_derivative` falls back to 0 where
    ``load.gmode`` does not apply); ``mu``, ``force`` and ``torque`` come from ``load``."""
    mass, com, inertia = tree.mass, tree.com, tree.inertia
    force, torque, mu = load.force, load.torque, load.mu
    fext, Rw, pw, M, V = work.fext, work.Rw, work.pw, work.M, work.V
    # system CoM relative to the origin P (differential and linearised modes only)
    sx = 0.0
    sy = 0.0
    sz = 0.0
    if gmode >= 1 and mu > 0.0:
        sx, sy, sz = _scom(b, n, mass, com, Rw, pw)
    xs0 = _org(b, M, 0) + sx
    xs1 = _org(b, M, 1) + sy
    xs2 = _org(b, M, 2) + sz
    rs2 = xs0 * xs0 + xs1 * xs1 + xs2 * xs2
    rs = math.sqrt(rs2)
    if gmode >= 1 and mu > 0.0:
        gs = -mu / (rs2 * rs)
        M[b, MW, 0, 4] = gs * xs0
        M[b, MW, 1, 4] = gs * xs1
        M[b, MW, 2, 4] = gs * xs2
    for k in range(n):
        r = b + k
        c0, c1, c2 = com[r, 0], com[r, 1], com[r, 2]
        R00, R01, R02 = Rw[r, 0, 0], Rw[r, 0, 1], Rw[r, 0, 2]     # (in registers: fext's stores do not reload them)
        R10, R11, R12 = Rw[r, 1, 0], Rw[r, 1, 1], Rw[r, 1, 2]
        R20, R21, R22 = Rw[r, 2, 0], Rw[r, 2, 1], Rw[r, 2, 2]
        F0, F1, F2 = force[r, 0], force[r, 1], force[r, 2]
        t0, t1, t2 = torque[r, 0], torque[r, 1], torque[r, 2]
        if _terms_on():
            if mode == 2:
                e0, e1, e2, e3, e4, e5 = env[r, 0], env[r, 1], env[r, 2], env[r, 3], env[r, 4], env[r, 5]
            else:
                e0, e1, e2, e3, e4, e5 = _lterms(b, r, com, mass, Rw, pw, M, V, time, tt)
                if mode == 1:
                    env[r, 0] = e0
                    env[r, 1] = e1
                    env[r, 2] = e2
                    env[r, 3] = e3
                    env[r, 4] = e4
                    env[r, 5] = e5
            F0 += e0
            F1 += e1
            F2 += e2
            t0 += e3
            t1 += e4
            t2 += e5
        # CoM offset d from the system CoM (differential) or from P (full), then the position x
        d0 = pw[r, 0] + R00 * c0 + R01 * c1 + R02 * c2 - sx
        d1 = pw[r, 1] + R10 * c0 + R11 * c1 + R12 * c2 - sy
        d2 = pw[r, 2] + R20 * c0 + R21 * c1 + R22 * c2 - sz
        x0 = xs0 + d0
        x1 = xs1 + d1
        x2 = xs2 + d2
        if mu > 0.0:
            rr2 = x0 * x0 + x1 * x1 + x2 * x2
            rr = math.sqrt(rr2)
            m = mass[r]
            if gmode == 2:                        # linearised: Γ(x_s) d, Γ = μ/r_s³ (3 r̂ r̂ᵀ − E)
                t = 3.0 * (xs0 * d0 + xs1 * d1 + xs2 * d2) / rs2
                gl = m * mu / (rs2 * rs)
                F0 += gl * (t * xs0 - d0)
                F1 += gl * (t * xs1 - d1)
                F2 += gl * (t * xs2 - d2)
                x0, x1, x2 = xs0, xs1, xs2           # and the gradient torque of Γ(x_s)
                rr2, rr = rs2, rs
            elif gmode == 1:
                delta = 2.0 * (xs0 * d0 + xs1 * d1 + xs2 * d2) + (d0 * d0 + d1 * d1 + d2 * d2)
                r3 = rr2 * rr
                e = delta * (rs2 + rs * rr + rr2) / ((rs + rr) * r3 * rs2 * rs)
                F0 += -mu * m * (d0 / r3 - xs0 * e)
                F1 += -mu * m * (d1 / r3 - xs1 * e)
                F2 += -mu * m * (d2 / r3 - xs2 * e)
            else:
                g = -mu * m / (rr2 * rr)
                F0 += g * x0
                F1 += g * x1
                F2 += g * x2
            rb0 = R00 * x0 + R10 * x1 + R20 * x2
            rb1 = R01 * x0 + R11 * x1 + R21 * x2
            rb2 = R02 * x0 + R12 * x1 + R22 * x2
            g0, g1, g2 = _gg_torque(mu, rr2, rr, rb0, rb1, rb2, inertia, r)
            t0 += g0
            t1 += g1
            t2 += g2
        fb0 = R00 * F0 + R10 * F1 + R20 * F2
        fb1 = R01 * F0 + R11 * F1 + R21 * F2
        fb2 = R02 * F0 + R12 * F1 + R22 * F2
        fext[r, 0] = t0 + c1 * fb2 - c2 * fb1
        fext[r, 1] = t1 + c2 * fb0 - c0 * fb2
        fext[r, 2] = t2 + c0 * fb1 - c1 * fb0
        fext[r, 3] = fb0
        fext[r, 4] = fb1
        fext[r, 5] = fb2


link_forces = dual(_link_forces)


def _link_terms(b, r, com, mass, Rw, pw, M, V, time, tt):
    """The world's row terms on link row r: its CoM and CoM velocity (inertial), attitude (link →
    inertial), body rate and mass in the term convention (:mod:`ecs.terms`); returns the force
    (inertial) and the torque about the CoM (link axes)."""
    c0, c1, c2 = com[r, 0], com[r, 1], com[r, 2]
    w0, w1, w2 = V[r, VV, 0], V[r, VV, 1], V[r, VV, 2]
    u0 = V[r, VV, 3] + w1 * c2 - w2 * c1                  # v_CoM = v_O + ω × c, link axes
    u1 = V[r, VV, 4] + w2 * c0 - w0 * c2
    u2 = V[r, VV, 5] + w0 * c1 - w1 * c0
    x0 = _org(b, M, 0) + pw[r, 0] + Rw[r, 0, 0] * c0 + Rw[r, 0, 1] * c1 + Rw[r, 0, 2] * c2
    x1 = _org(b, M, 1) + pw[r, 1] + Rw[r, 1, 0] * c0 + Rw[r, 1, 1] * c1 + Rw[r, 1, 2] * c2
    x2 = _org(b, M, 2) + pw[r, 2] + Rw[r, 2, 0] * c0 + Rw[r, 2, 1] * c1 + Rw[r, 2, 2] * c2
    v0 = Rw[r, 0, 0] * u0 + Rw[r, 0, 1] * u1 + Rw[r, 0, 2] * u2
    v1 = Rw[r, 1, 0] * u0 + Rw[r, 1, 1] * u1 + Rw[r, 1, 2] * u2
    v2 = Rw[r, 2, 0] * u0 + Rw[r, 2, 1] * u1 + Rw[r, 2, 2] * u2
    q0, q1, q2, q3 = _d2q(Rw[r, 0, 0], Rw[r, 0, 1], Rw[r, 0, 2], Rw[r, 1, 0], Rw[r, 1, 1], Rw[r, 1, 2],
                          Rw[r, 2, 0], Rw[r, 2, 1], Rw[r, 2, 2])
    return _terms(RowState(r, time, x0, x1, x2, v0, v1, v2, q0, q1, q2, q3, w0, w1, w2, mass[r]), tt.columns,
                  tt.params)


link_terms = dual(_link_terms, inline=False)
_lterms = link_terms.cpu
_lforces = link_forces.cpu


# ------------------------------------------------------------------------------ state derivative and RK step
def _derivative(b, n, tree, load, work, stage, time, mode, env, tt):
    """K[r, stage, :] <- d/dt (q, qd) of one sample's links (layout: q 7 slots, then qd 6 slots).

    Generalised forces: ``tau`` minus the regularised joint friction
    ``viscous qd + coulomb tanh(qd / slip)`` per velocity coordinate, plus, for revolute and
    prismatic joints, the spring-damper ``−k (q − q_rest) − c qd`` and the end stops
    (penalty ``k_l (lower − q) − c_l qd`` below ``lower``, likewise above ``upper``, when
    ``k_l > 0``); the per-row parameters are ``law[r, LAW_*]`` (:data:`LAW_COLUMNS`); then the world's
    joint law (:class:`ecs.terms.JointLaw`) with its parameters ``law[r, N_LAW:]``; external link forces from
    :func:`_link_forces`, with gravity ``gmode`` 0 (full), 1 (differential) or 2 (linearised); modes
    1 and 2 apply to a sample whose first link is an unlocked free root, full gravity otherwise (a
    fixed base feels the uniform part); the world's row terms at stage time ``time``. Locked
    joints: zero derivative (state frozen)."""
    tau, law, force, torque, mu, gmode, a0 = load
    y0, C, K, tauw, fext, qdd, Rw, pw, M, V = work
    parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia = tree
    for k in range(n):
        r = b + k
        cv = law[r, LAW_VISCOUS]
        cc = law[r, LAW_COULOMB]
        for i in range(_nv(kind[r], locked[r])):     # (the solve reads a joint's own slots only)
            w = qd[r, i]
            t = tau[r, i]
            if cv != 0.0:                    # (a frictionless joint skips a tanh per slot and stage)
                t -= cv * w
            if cc != 0.0:
                t -= cc * math.tanh(w / law[r, LAW_SLIP])
            tauw[r, i] = t
        kk = kind[r]
        if kk == REVOLUTE or kk == PRISMATIC:           # spring-damper and end stops of a 1-DOF joint
            x = q[r, 0]
            w = qd[r, 0]
            t = -law[r, LAW_STIFFNESS] * (x - law[r, LAW_REST]) - law[r, LAW_DAMPING] * w
            kl = law[r, LAW_LIMIT_STIFFNESS]
            if kl > 0.0:
                if x < law[r, LAW_LOWER]:
                    t += kl * (law[r, LAW_LOWER] - x) - law[r, LAW_LIMIT_DAMPING] * w
                elif x > law[r, LAW_UPPER]:
                    t += kl * (law[r, LAW_UPPER] - x) - law[r, LAW_LIMIT_DAMPING] * w
            tauw[r, 0] += t
        if not locked[r] and kk != FIXED:               # the world's joint law, its columns after the built-ins'
            _joint_law(kk, q[r], qd[r], time, law[r, N_LAW:], tauw[r])
    _vel(b, n, tree, M, V)
    _pose(b, n, parent, M, Rw, pw)
    diff = gmode if (gmode >= 1 and mu > 0.0 and kind[b] == FREE and not locked[b]) else 0
    _lforces(b, n, diff, tree, load, work, time, mode, env, tt)
    _lstates(b, n, M, Rw, pw, V, tt.links)
    _sample_terms(b, n, stage, time, Rw, fext, tt.sample)
    _abas(b, n, parent, kind, locked, mass, com, tauw, fext, a0, qdd, M, V)
    if diff >= 1:                        # the system's gravity goes to the free root: p̈ += R_Tᵀ g(x_s)
        gx, gy, gz = _rot_inv(rotation[b, 0], rotation[b, 1], rotation[b, 2], rotation[b, 3],
                              M[b, MW, 0, 4], M[b, MW, 1, 4], M[b, MW, 2, 4])
        qdd[b, 0] += gx
        qdd[b, 1] += gy
        qdd[b, 2] += gz
    for k in range(n):
        r = b + k
        kk = kind[r]
        if locked[r] or kk == FIXED:     # (K holds a joint's own slots only: :func:`_state_slots`)
            continue
        if kk == REVOLUTE or kk == PRISMATIC:
            K[r, stage, 0] = qd[r, 0]
        elif kk == SPHERICAL:
            d0, d1, d2, d3 = _qdot(q[r, 0], q[r, 1], q[r, 2], q[r, 3], qd[r, 0], qd[r, 1], qd[r, 2])
            K[r, stage, 0] = d0
            K[r, stage, 1] = d1
            K[r, stage, 2] = d2
            K[r, stage, 3] = d3
        else:
            K[r, stage, 0] = qd[r, 0]
            K[r, stage, 1] = qd[r, 1]
            K[r, stage, 2] = qd[r, 2]
            d0, d1, d2, d3 = _qdot(q[r, 3], q[r, 4], q[r, 5], q[r, 6], qd[r, 3], qd[r, 4], qd[r, 5])
            K[r, stage, 3] = d0
            K[r, stage, 4] = d1
            K[r, stage, 5] = d2
            K[r, stage, 6] = d3
        for i in range(QD_SLOTS):
            K[r, stage, Q_SLOTS + i] = qdd[r, i]


derivative = dual(_derivative, inline=False)
_deriv = derivative.cpu


def _put_state(r, i, v, q, qd):
    if i < Q_SLOTS:
        q[r, i] = v
    else:
        qd[r, i - Q_SLOTS] = v


put_state = dual(_put_state)
_put = put_state.cpu


def _state_slots(kind, locked):
    """(nq, nv): the q and qd slots a joint integrates (0, 0 when fixed or locked: its state is
    frozen). The derivative ``K`` is written for these slots only; the others keep their values."""
    if locked or kind == FIXED:
        return 0, 0
    if kind == REVOLUTE or kind == PRISMATIC:
        return 1, 1
    if kind == SPHERICAL:
        return 4, 3
    return 7, 6


state_slots = dual(_state_slots)
_slots = state_slots.cpu


def _normalize_joint_quaternions(r, kind, q, C):
    """Renormalise the quaternion slots of a spherical or free joint (after a step) and drop their
    summation carries."""
    o = -1
    if kind[r] == SPHERICAL:
        o = 0
    elif kind[r] == FREE:
        o = 3
    if o >= 0:
        w, x, y, z = _qnorm(q[r, o], q[r, o + 1], q[r, o + 2], q[r, o + 3])
        q[r, o] = w
        q[r, o + 1] = x
        q[r, o + 2] = y
        q[r, o + 3] = z
        for i in range(4):
            C[r, o + i] = 0.0


normalize_joint_quaternions = dual(_normalize_joint_quaternions)
_qnorm_joint = normalize_joint_quaternions.cpu


def _step_start(b, n, locked, q, qd, y0):
    """Before a step: a locked joint's rate is zeroed (it has no relative motion) and the state is
    copied into ``y0`` (the stage base, and the last good state if the step fails)."""
    for k in range(n):
        r = b + k
        if locked[r]:
            for i in range(QD_SLOTS):
                qd[r, i] = 0.0
        for i in range(Q_SLOTS):
            y0[r, i] = q[r, i]
        for i in range(QD_SLOTS):
            y0[r, Q_SLOTS + i] = qd[r, i]


step_start = dual(_step_start)
_start = step_start.cpu


def _rk_step(b, n, stepper, tree, load, work, t0, mode0, env, tt):
    """One explicit Runge–Kutta step of length h (the tableau's weights W, stages and solution formed
    by :data:`ecs.stepping.stage_sum`) of one
    sample's joint states; quaternions renormalised after the step; a locked joint's rate is set to
    zero (a kinematic lock: the relative momentum it had is dropped, not redistributed). ``y0``, ``K``: per-row
    scratch [rows, 13] and [rows, stages, 13]; ``C`` [rows, 13]: the carries of the compensated
    summation of the state update (Kahan; N. J. Higham, *Accuracy and Stability of Numerical
    Algorithms*, SIAM, 2nd ed. 2002, §4.3), zero at the start and kept from step to step: they keep
    the round-off of 10⁵–10⁶ small increments to a large state (an orbit radius, a drifting
    position) from accumulating. Stage ``st`` stands at ``t0 + h Σ_j a[st, j]`` (the row sums of a:
    the tableau's nodes). The row terms' ``mode`` (:func:`_link_forces`) is ``mode0`` at the first
    stage and, when it is not 0, 2 at the others (terms held over the step)."""
    y0, C, K, tauw, fext, qdd, Rw, pw, M, V = work
    h, W, nstages = stepper
    parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia = tree
    _start(b, n, locked, q, qd, y0)
    for st in range(nstages):
        cst = 0.0
        for j in range(st):
            cst += W[st, j]
        if st > 0:
            for k in range(n):
                r = b + k
                nq, nv = _slots(kind[r], locked[r])
                for i in range(nq + nv):
                    s = i if i < nq else Q_SLOTS + i - nq
                    _put(r, s, _ssum(y0[r, s], h, W, st, st, K, r, s), q, qd)
        md = mode0
        if st > 0 and mode0 != 0:
            md = 2
        _deriv(b, n, tree, load, work, st, t0 + cst * h, md, env, tt)
    for k in range(n):
        r = b + k
        nq, nv = _slots(kind[r], locked[r])
        for i in range(nq + nv):
            s = i if i < nq else Q_SLOTS + i - nq
            inc = _ssum(0.0, h, W, nstages, nstages, K, r, s)    # row nstages of W: b
            inc += C[r, s]                        # compensated (Kahan) sum y0 + inc
            v = y0[r, s] + inc
            C[r, s] = inc - (v - y0[r, s])
            _put(r, s, v, q, qd)
        _qnorm_joint(r, kind, q, C)


rk_step = dual(_rk_step, inline=False)
_rk_step_cpu = rk_step.cpu


def _kuo_nguyen_step(b, n, h, tree, load, work, t0, mode0, env, tt):
    """One step of the Kuo–Nguyen integrator (seed 001, "Numerical considerations — integration").

    The orbital DOFs of the root (position and velocity of a free first link, joint axes) take the
    third-order Taylor step with the jerk from a backward difference of the acceleration:
    ``x += ẋ h + (2/3 ẍ − 1/6 ẍ_prev) h²``, ``ẋ += (3/2 ẍ − 1/2 ẍ_prev) h``. Every other DOF
    (the root's attitude and rate, all other joints) takes an Euler–Cromer step:
    ``ẋ_m += ẍ_m h``, then ``x_m += ẋ_m(t + h) h`` (quaternions: ``q += h ½ q ⊗ ω(t + h)``,
    renormalised). ``ẍ_prev`` is kept in ``K[b, 1, 7:10]`` (NaN before the first step, which then
    uses ``ẍ_prev = ẍ``: a second-order Taylor start). ``K`` needs 2 stage slots; ``y0`` keeps the
    state before the step; locked joints are frozen with zero rate."""
    y0, C, K, tauw, fext, qdd, Rw, pw, M, V = work
    parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia = tree
    _start(b, n, locked, q, qd, y0)
    _deriv(b, n, tree, load, work, _STAGE0, t0, mode0, env, tt)
    orbit = kind[b] == FREE and not locked[b]
    if orbit:
        for i in range(3):
            a = K[b, 0, Q_SLOTS + i]
            ap = K[b, 1, Q_SLOTS + i]
            if not math.isfinite(ap):
                ap = a
            q[b, i] += qd[b, i] * h + (2.0 / 3.0 * a - 1.0 / 6.0 * ap) * h * h
            qd[b, i] += (1.5 * a - 0.5 * ap) * h
            K[b, 1, Q_SLOTS + i] = a
    for k in range(n):
        r = b + k
        kk = kind[r]
        if locked[r] or kk == FIXED:
            continue
        for i in range(_nvn(kk)):                         # Euler–Cromer: rates first ...
            if not (orbit and r == b and i < 3):
                qd[r, i] += h * K[r, 0, Q_SLOTS + i]
        if kk == REVOLUTE or kk == PRISMATIC:             # ... then positions with the new rates
            q[r, 0] += h * qd[r, 0]
        else:
            o = 0 if kk == SPHERICAL else 3
            w0 = 0 if kk == SPHERICAL else 3
            if kk == FREE and not (orbit and r == b):
                for i in range(3):
                    q[r, i] += h * qd[r, i]
            d0, d1, d2, d3 = _qdot(q[r, o], q[r, o + 1], q[r, o + 2], q[r, o + 3], qd[r, w0], qd[r, w0 + 1],
                                   qd[r, w0 + 2])
            q[r, o] += h * d0
            q[r, o + 1] += h * d1
            q[r, o + 2] += h * d2
            q[r, o + 3] += h * d3
            _qnorm_joint(r, kind, q, C)


kuo_nguyen_step = dual(_kuo_nguyen_step, inline=False)
_kn_step = kuo_nguyen_step.cpu


def _link_motion(b, n, tree, load, work, ACC, time, env, tt):
    """Per link row r of one sample, inertial axes: ``ACC[r]`` = (classical acceleration of the link
    origin (3), angular acceleration (3), angular velocity (3), origin velocity (3), the system's
    gravity g(x_s) at its CoM x_s (3), origin position (3)), from one evaluation of the dynamics
    at the current state (``K[:, 0]`` is overwritten). For points of interest."""
    tau, law, force, torque, mu, gmode, a0 = load
    y0, C, K, tauw, fext, qdd, Rw, pw, M, V = work
    parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia = tree
    _deriv(b, n, tree, load, work, _STAGE0, time, _EVALUATE_TERMS, env, tt)
    diff = gmode >= 1 and mu > 0.0 and kind[b] == FREE and not locked[b]
    sx, sy, sz = _scom(b, n, mass, com, Rw, pw)
    xs0 = _org(b, M, 0) + sx
    xs1 = _org(b, M, 1) + sy
    xs2 = _org(b, M, 2) + sz
    g0 = 0.0
    g1 = 0.0
    g2 = 0.0
    if mu > 0.0:
        rs2 = xs0 * xs0 + xs1 * xs1 + xs2 * xs2
        gs = -mu / (rs2 * math.sqrt(rs2))
        g0, g1, g2 = gs * xs0, gs * xs1, gs * xs2
    for k in range(n):
        r = b + k
        w0, w1, w2 = V[r, VV, 0], V[r, VV, 1], V[r, VV, 2]
        v0, v1, v2 = V[r, VV, 3], V[r, VV, 4], V[r, VV, 5]
        # classical acceleration of the origin = spatial linear part + ω × v_O (body axes)
        c0 = V[r, VA, 3] + w1 * v2 - w2 * v1
        c1 = V[r, VA, 4] + w2 * v0 - w0 * v2
        c2 = V[r, VA, 5] + w0 * v1 - w1 * v0
        for i in range(3):
            ACC[r, i] = Rw[r, i, 0] * c0 + Rw[r, i, 1] * c1 + Rw[r, i, 2] * c2
            ACC[r, 3 + i] = Rw[r, i, 0] * V[r, VA, 0] + Rw[r, i, 1] * V[r, VA, 1] + Rw[r, i, 2] * V[r, VA, 2]
            ACC[r, 6 + i] = Rw[r, i, 0] * w0 + Rw[r, i, 1] * w1 + Rw[r, i, 2] * w2
            ACC[r, 9 + i] = Rw[r, i, 0] * v0 + Rw[r, i, 1] * v1 + Rw[r, i, 2] * v2
            ACC[r, 15 + i] = _org(b, M, i) + pw[r, i]
        ACC[r, 12] = g0
        ACC[r, 13] = g1
        ACC[r, 14] = g2
        if diff:                         # the solve ran in the frame falling with g(x_s)
            ACC[r, 0] += g0
            ACC[r, 1] += g1
            ACC[r, 2] += g2


link_motion = dual(_link_motion, inline=False)
_lmotion = link_motion.cpu


def _link_motion_sample(s, E, status, tree, load, work, ACC, time, env, tt):
    """:func:`_link_motion` of sample s unless it FAILED (then its outputs keep their last values)."""
    b = s * E
    if status[b] == FAILED_CODE:
        return
    _lmotion(b, E, tree, load, work, ACC, time, env, tt)


link_motion_sample = dual(_link_motion_sample, inline=False)
_lmotion_s = link_motion_sample.cpu


@cpu_jit(nogil=True)
def link_motion_range(s0, s1, E, status, tree, load, work, ACC, time, env, tt):
    """Serial loop of :data:`link_motion_sample` over samples ``s0 .. s1 - 1``."""
    for s in range(s0, s1):
        _lmotion_s(s, E, status, tree, load, work, ACC, time, env, tt)


#: CPU driver of :data:`link_motion_sample`.
link_motion_samples = SampleDriver(link_motion_range)


def _poi_row(i, link, offset, Rw, ACC, position, velocity, acceleration, nongrav):
    """Point of interest i on link row ``link[i]`` at ``offset[i]`` (link axes): its inertial position,
    velocity, acceleration, and acceleration minus the system's gravity g(x_s) (seed 001's
    NonGravAccels, a sensor's view) — ``a = a_O + α × ρ + ω × (ω × ρ)``, ``ρ = R offset``."""
    r = link[i]
    p0 = Rw[r, 0, 0] * offset[i, 0] + Rw[r, 0, 1] * offset[i, 1] + Rw[r, 0, 2] * offset[i, 2]
    p1 = Rw[r, 1, 0] * offset[i, 0] + Rw[r, 1, 1] * offset[i, 1] + Rw[r, 1, 2] * offset[i, 2]
    p2 = Rw[r, 2, 0] * offset[i, 0] + Rw[r, 2, 1] * offset[i, 1] + Rw[r, 2, 2] * offset[i, 2]
    al0, al1, al2 = ACC[r, 3], ACC[r, 4], ACC[r, 5]
    w0, w1, w2 = ACC[r, 6], ACC[r, 7], ACC[r, 8]
    u0 = w1 * p2 - w2 * p1                   # ω × ρ
    u1 = w2 * p0 - w0 * p2
    u2 = w0 * p1 - w1 * p0
    position[i, 0] = ACC[r, 15] + p0
    position[i, 1] = ACC[r, 16] + p1
    position[i, 2] = ACC[r, 17] + p2
    velocity[i, 0] = ACC[r, 9] + u0
    velocity[i, 1] = ACC[r, 10] + u1
    velocity[i, 2] = ACC[r, 11] + u2
    a0_ = ACC[r, 0] + (al1 * p2 - al2 * p1) + (w1 * u2 - w2 * u1)
    a1_ = ACC[r, 1] + (al2 * p0 - al0 * p2) + (w2 * u0 - w0 * u2)
    a2_ = ACC[r, 2] + (al0 * p1 - al1 * p0) + (w0 * u1 - w1 * u0)
    acceleration[i, 0] = a0_
    acceleration[i, 1] = a1_
    acceleration[i, 2] = a2_
    nongrav[i, 0] = a0_ - ACC[r, 12]
    nongrav[i, 1] = a1_ - ACC[r, 13]
    nongrav[i, 2] = a2_ - ACC[r, 14]


poi_row = dual(_poi_row)
_poi = poi_row.cpu


@cpu_parallel
def poi_rows(n, link, offset, Rw, ACC, position, velocity, acceleration, nongrav):
    """CPU driver of :data:`poi_row`."""
    for i in prange(n):
        _poi(i, link, offset, Rw, ACC, position, velocity, acceleration, nongrav)


def _link_origin_pose(b, r, M, Rw, pw, position, attitude):
    """Link row r of the sample starting at row b, after :func:`_world_pose`: its origin
    (inertial) into ``position[r]`` and its attitude (link → inertial, scalar-first) into
    ``attitude[r]``."""
    w, x, y, z = _d2q(Rw[r, 0, 0], Rw[r, 0, 1], Rw[r, 0, 2], Rw[r, 1, 0], Rw[r, 1, 1], Rw[r, 1, 2],
                      Rw[r, 2, 0], Rw[r, 2, 1], Rw[r, 2, 2])
    attitude[r, 0] = w
    attitude[r, 1] = x
    attitude[r, 2] = y
    attitude[r, 3] = z
    for i in range(3):
        position[r, i] = _org(b, M, i) + pw[r, i]


link_origin_pose = dual(_link_origin_pose)
_opose = link_origin_pose.cpu


def _link_states(b, n, M, Rw, pw, V, links):
    """The links' state as a sample term reads it (:class:`ecs.terms.SampleTerm`): for rows
    b .. b + n − 1, after :func:`_world_pose` and the velocity pass, ``links = (position, attitude,
    omega, velocity)`` get the link origin (inertial), the attitude (link → inertial,
    scalar-first), the body rate (link axes) and the origin velocity (inertial). Empty arrays (no
    sample term): nothing."""
    position, attitude, omega, velocity = links
    if position.shape[0] == 0:
        return
    for k in range(n):
        r = b + k
        _opose(b, r, M, Rw, pw, position, attitude)
        u0, u1, u2 = V[r, VV, 3], V[r, VV, 4], V[r, VV, 5]        # origin velocity, link axes
        for i in range(3):
            omega[r, i] = V[r, VV, i]
            velocity[r, i] = Rw[r, i, 0] * u0 + Rw[r, i, 1] * u1 + Rw[r, i, 2] * u2


link_states = dual(_link_states)
_lstates = link_states.cpu


def _link_poses(b, n, tree, M, V, Rw, pw, poses):
    """The LinkPose columns of one sample's links from its joint state."""
    position, attitude, com_position = poses
    parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia = tree
    _vel(b, n, tree, M, V)
    _pose(b, n, parent, M, Rw, pw)
    for k in range(n):
        r = b + k
        _opose(b, r, M, Rw, pw, position, attitude)
        for i in range(3):
            com_position[r, i] = _org(b, M, i) + (pw[r, i] + Rw[r, i, 0] * com[r, 0] + Rw[r, i, 1] * com[r, 1]
                                                  + Rw[r, i, 2] * com[r, 2])


link_poses = dual(_link_poses, inline=False)
_poses = link_poses.cpu


def _sample_finite(b, n, q, qd):
    for k in range(n):
        for i in range(Q_SLOTS):
            if not math.isfinite(q[b + k, i]):
                return False
        for i in range(QD_SLOTS):
            if not math.isfinite(qd[b + k, i]):
                return False
    return True


sample_finite = dual(_sample_finite)
_finite = sample_finite.cpu


def _advance_sample(s, E, steps, stepper, status, reason, tree, load, work, poses, t0, every, step0, env, tt):
    """``steps`` steps of sample s (rows s·E .. s·E + E − 1) if it is RUNNING — RK with tableau
    weights W or, for ``nstages == 0``, Kuo–Nguyen (:func:`_kuo_nguyen_step`) — then its link poses
    (``poses``); a non-finite state sets every row of the sample FAILED (reason NONFINITE_STATE) with the
    state of its last good step. The first step starts at time ``t0`` and is step ``step0`` of the
    run: the row terms are evaluated at every stage when ``every`` is 1, else at the first stage of
    every ``every``-th step of the run and held until the next (:func:`_link_forces` modes)."""
    y0, C, K, tauw, fext, qdd, Rw, pw, M, V = work
    h, W, nstages = stepper
    parent, kind, axis, offset, rotation, q, qd, locked, mass, com, inertia = tree
    b = s * E
    if status[b] != 0:
        return
    j = 0
    while j < steps:                  # a while loop, not for/break (ecs/kernels.py: numba pitfall)
        tj = t0 + j * h
        mode0 = 0
        if every > 1:
            mode0 = 1 if (step0 + j) % every == 0 else 2
        j += 1
        if nstages == 0:
            _kn_step(b, E, h, tree, load, work, tj, mode0, env, tt)
        else:
            _rk_step_cpu(b, E, stepper, tree, load, work, tj, mode0, env, tt)
        if status[b] != 0:            # a sample term failed the sample (contact buffer overflow)
            j = steps
        elif not _finite(b, E, q, qd):
            j = steps
            for k in range(E):
                for i in range(Q_SLOTS):
                    q[b + k, i] = y0[b + k, i]
                for i in range(QD_SLOTS):
                    qd[b + k, i] = y0[b + k, Q_SLOTS + i]
                status[b + k] = FAILED_CODE
                reason[b + k] = NONFINITE_CODE
    _poses(b, E, tree, M, V, Rw, pw, poses)


advance_sample = dual(_advance_sample, inline=False)
_advance = advance_sample.cpu


@cpu_jit(nogil=True)
def advance_range(s0, s1, E, steps, stepper, status, reason, tree, load, work, poses, t0, every, step0,
                  env, tt):
    """Serial loop of :data:`advance_sample` over samples ``s0 .. s1 - 1`` (of ``E`` links)."""
    for s in range(s0, s1):
        _advance(s, E, steps, stepper, status, reason, tree, load, work, poses, t0, every, step0,
                 env, tt)


#: CPU driver of :data:`advance_sample` (one block of samples per thread; the GPU twin: one thread per sample).
advance_samples = SampleDriver(advance_range)

