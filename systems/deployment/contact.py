"""CONTACT phase: probes sliding, rolling or resting on the terrain (continued contact motion).

Seed 004 §2.5.3 (eqs 2.92–2.110) and §2.7.3 (the "contact" kernel). Every row in
:attr:`DeployPhase.CONTACT` is integrated with the same per-row DP5(4) as flight
(:mod:`systems.deployment.physics`, contact tolerances ``contact_rtol``/``contact_atol``; a step of
``contact_h_min`` is accepted whatever its error estimate, because the right-hand side is only
piecewise smooth — friction switching between stick and slip, contacts dropping out — and the
error control would otherwise chase every switch down to round-off), the
right-hand side adding the contact force and torque of
:data:`systems.probe_contact.contact_motion.contact_forces_row` (stick/slip with regularisation, rolling
resistance, several vertices at once) in the rotating frame (:data:`~systems.deployment.physics.contact_wrench`).

Per step, at the step's start:

* **Active set**: the vertices within ``contact_gap`` of the terrain, frozen for the step; when more
  touch than there are slots (the shape's vertex count capped at :data:`CONTACT_SLOTS`: a face or
  edge of a tessellated probe lying flat), the deepest one and then, one by one, the touching vertex
  farthest from those chosen (:func:`_active_set`). None left: the probe flies (FLY).
* **Sinking**: an active contact moving into the surface faster than :data:`SINK_SPEED` goes back
  through COLLIDE (a slow approach: a plastic e = 0 collision, recorded like any other).
* **K₁ = f(Y0)**: the last accepted step's K₇ when nothing has moved Y0 since (no lift, the same
  active set and time), else evaluated (FSAL). The attempt normalises its end's attitude before
  K₇ (seed §2.7.1), so K₇ is f(Y0) to the bit and a launch boundary, where K₁ is evaluated again,
  changes nothing. On ``deploy-cube`` 79 % of accepted steps lift nothing, and 57 % of step starts
  reuse K₇ (2,000 landings).
* **Leaving** (§2.5.3): the force kernel drops every contact whose normal force would be negative;
  when none carries a force, the probe flies (FLY).
* **Rest**: while |v| < ``settle_speed`` and |ω| < ``settle_rate`` (relative to the target), the
  row's ``probe_rest_since`` holds the start of the interval; after ``settle_hold`` seconds of rest
  the launch stops (the end-state system then marks it SETTLED, settling time = start of the rest).
* **Certified rest** (``DeploySettings.rest_slide`` > 0): at each step start within the rest
  interval, :func:`_rest_certain` checks whether the probe will stay where it is — a static
  equilibrium on ≥ 3 contacts, stick forces inside the friction cone with a margin, a kinetic
  energy below a quarter of the least energy that tips it over an edge of its support polygon and
  small enough for friction to stop it within ``rest_slide`` — and if so holds it there, velocity
  and rate zero, to the end of the hold instead of integrating the rest of it (the sleeping of
  game and robotics engines, with a certificate instead of a timer). On ``deploy-cube`` it takes 18
  of 69 contact step attempts per landing away (36 of the 69 were the hold's).

After an accepted step:

* **New touchdowns**: a vertex that was clear of the surface at the step's start and reached it,
  or one that was touching (active, or touching without a slot) and sank deeper than
  ``contact_gap`` (a concave kink of the interpolated terrain crossed within the step, or a vertex
  without a slot left unsupported), is an impact: the crossing
  (:data:`~systems.deployment.events.contact_clearance`) is localised like a flight event and the row
  switches to COLLIDE. A touching vertex without a slot counted as clear instead "touched down"
  within the first step when it sat a round-off above the surface, its collision had nothing to
  resolve (it approached slower than the collision's tolerance), and the row came back at the
  same instant (a livelock: 12 of 100 ``deploy-cube`` samples at level 3 on ``rocks=psr``).
* **Drift**: the active vertices are kept from sinking (a translation that lifts them onto the
  surface, :data:`systems.deployment.events.lift_out`), the projection step of constraint
  stabilisation; the penetration is recorded.
* **Event threshold**: the event function starts above zero when every vertex lies on or above
  the surface (the collision's and the drift's projections see to it). Where a projection could
  not lift a vertex (a crease of the terrain gripping the probe), a step starting at or below the
  threshold lowers it to the step start's value less ``contact_gap`` for the rest of the phase,
  as flight does: before, such a step was committed without looking for an event, and a vertex
  sank 31 mm unseen in one contact phase (``deploy-box`` at level 1 on fBm + rock texture).
"""

from __future__ import annotations

import math

import numpy as np

from components.contact_params import PAIR_CRR, PAIR_F
from components.deploy import DeployPhase
from components.status import Reason, Status
from ecs.attitude import cross_call, quat_rotate_call
from ecs.kernels import dual, dual_call
from ecs.terms import terms_active_none
from systems.deployment.modes import KernelMode
from systems.deployment.records import S_Q, S_V, S_W, ProbeBody
from systems.probe_contact.contact_motion import CONTACT_ACTIVE
from systems.deployment.physics import (AUX, CONTACT_ATTEMPTS, DEPLOY_ROW, K0, NORMALISED, T0, THR, TS, WARM, Y0,
                                        Y1, YS, frame_ends, commit_step, dp_attempt, finish_row, load_state,
                                        probe_rhs, state_finite, step_size)
from systems.deployment.geometry import terrain_at, terrain_distance, vertex_distance, vertex_world
from systems.deployment.events import (drop_snapshots_after, record_snapshots, trace_step, contact_clearance,
                                       locate_event, lift_out)

_i = np.int64
_terms_active = terms_active_none
_dp = dp_attempt.cpu
_commit = commit_step.cpu
_finish = finish_row.cpu
_load = load_state.cpu
_fin = state_finite.cpu
_rhs = probe_rhs.cpu
_next = step_size.cpu
_tat = terrain_at.cpu
_tdist = terrain_distance.cpu
_lift = lift_out.cpu
_vworld = vertex_world.cpu
_vdist = vertex_distance.cpu
_cclear = contact_clearance.cpu
_locate = locate_event.cpu
_cross = cross_call.cpu
_rot = quat_rotate_call.cpu
_snaps = record_snapshots.cpu
_drop_snaps = drop_snapshots_after.cpu
_trace = trace_step.cpu
_PHASE_CONTACT = float(DeployPhase.CONTACT)
_NONFINITE = np.int8(Reason.NONFINITE_STATE)
_WHICH_CONTACT = _i(1)
#: lift_out's flag as a typed constant (a Python bool literal compiles a specialisation of its own)
_ACTIVE_ONLY = np.bool_(True)
#: Contact slots per probe (active vertices solved together).
CONTACT_SLOTS = 8
# the kernel keeps the active set a step used (flags, vertices) in the work row's AUX between steps
assert 2 * CONTACT_SLOTS <= DEPLOY_ROW.end("AUX") - AUX
#: An active contact whose normal velocity is below −SINK_SPEED [m/s] at a step's start is sent
#: back through a (plastic) collision: the force law holds the normal *acceleration* at zero, so a
#: normal velocity left by round-off or by the regularised friction would otherwise sink it.
SINK_SPEED = 1e-5


def _sinking(i, w, ta, vpos, sphere_r, act, slot_vertex):
    """Most negative normal velocity of the active contacts at Y0 [m/s] (0: none moves inwards)."""
    q0, q1, q2, q3 = w[Y0 + S_Q], w[Y0 + S_Q + 1], w[Y0 + S_Q + 2], w[Y0 + S_Q + 3]
    worst = 0.0
    for k in range(act.shape[1]):
        if act[i, k] == 0:
            continue
        if sphere_r > 0.0:
            _, nx, ny, nz = _tat(ta, w[Y0], w[Y0 + 1], w[Y0 + 2])
            ux, uy, uz = w[Y0 + S_V], w[Y0 + S_V + 1], w[Y0 + S_V + 2]
        else:
            v = slot_vertex[i, k]
            px, py, pz = _vworld(w, Y0, vpos, v)
            _, nx, ny, nz = _tat(ta, px, py, pz)
            cx, cy, cz = _cross(w[Y0 + S_W], w[Y0 + S_W + 1], w[Y0 + S_W + 2], vpos[v, 0], vpos[v, 1], vpos[v, 2])
            cx, cy, cz = _rot(q0, q1, q2, q3, cx, cy, cz)
            ux, uy, uz = w[Y0 + S_V] + cx, w[Y0 + S_V + 1] + cy, w[Y0 + S_V + 2] + cz
        gn = math.sqrt(nx * nx + ny * ny + nz * nz)
        vn = (ux * nx + uy * ny + uz * nz) / gn
        if vn < worst:
            worst = vn
    return worst


sinking = dual(_sinking, gpu_inline=False)
_sinking_c = sinking.cpu


def _active_set(i, w, ta, vpos, v0, v1, act, slot_vertex, sel, gap):
    """Choose the active contacts of row i at Y0 (slots ``act[i]``, ``slot_vertex[i]``); returns their number.

    Every vertex within ``gap`` of the terrain touches. When they fit in the slots they are all
    active (in vertex order). A face or edge lying flat touches with more (a cube at tessellation
    level 3: 81 on a face): then the slots take the deepest touching vertex and, one after the
    other, the touching vertex farthest (in the body) from those already taken (farthest-point
    sampling, ties to the lower index), so the active contacts span the touching patch, the support
    polygon of a face on a plane included, instead of crowding into its first-numbered corner.
    The others lie, up to the terrain's relief, in the plane the spanning ones hold; they carry no
    force, and raise a collision once they sink by ``gap`` (:data:`systems.deployment.events.held`).
    ``sel[i]`` is scratch, one number per vertex of the shape (the contact scratch's ``touch``); it is
    left ≥ 0 exactly at the vertices touching at Y0 that did not take a slot (and at every touching
    vertex when all fit), which the contact event function reads (:data:`systems.deployment.events.held`).
    """
    nslot = act.shape[1]
    for k in range(nslot):
        act[i, k] = 0
    nt = 0
    deep = -1
    dd = math.inf
    v = v0
    while v < v1:
        d = _vdist(w, Y0, ta, vpos, v)
        if d <= gap:
            sel[i, v - v0] = math.inf        # a candidate (its squared distance to the chosen set)
            nt += 1
            if d < dd:
                dd = d
                deep = v
        else:
            sel[i, v - v0] = -1.0            # not touching
        v += 1
    na = 0
    if nt <= nslot:
        v = v0
        while v < v1:
            if sel[i, v - v0] >= 0.0:
                act[i, na] = 1
                slot_vertex[i, na] = v
                na += 1
            v += 1
        return na
    c = deep
    while True:
        act[i, na] = 1
        slot_vertex[i, na] = c
        na += 1
        sel[i, c - v0] = -1.0
        if na == nslot:
            break
        far = -1
        fd = -1.0
        v = v0
        while v < v1:
            m = sel[i, v - v0]
            if m >= 0.0:
                dx = vpos[v, 0] - vpos[c, 0]
                dy = vpos[v, 1] - vpos[c, 1]
                dz = vpos[v, 2] - vpos[c, 2]
                q = dx * dx + dy * dy + dz * dz
                if q < m:
                    m = q
                    sel[i, v - v0] = q
                if m > fd:
                    fd = m
                    far = v
            v += 1
        c = far
    return na


active_set = dual(_active_set, gpu_inline=False)
_active = active_set.cpu


#: The rest certificate (:func:`_rest_certain`) asks for stick forces within this fraction of the
#: contacts' aggregate friction capacity, Σ|F_T,k| ≤ REST_FRICTION_MARGIN · Σ f_k F_N,k.
REST_FRICTION_MARGIN = 0.8
#: ... and for a kinetic energy (relative to the target) below this fraction of the smallest energy
#: that tips the probe over an edge of its support polygon.
REST_ENERGY_MARGIN = 0.25
#: ... and for an equilibrium: at zero velocity, the contact forces leave the CoM an acceleration
#: below this fraction of the free acceleration (and the same for ω̇ times the radius of gyration).
#: The stick solve's Tikhonov regularisation leaves ~1e-12 (systems.probe_contact.contact_motion).
REST_ACCEL_TOL = 1e-8
#: ... on at least this many active contacts (a support polygon with an area). The contact kernel
#: tries the certificate only where the step's active set has as many: with fewer it cannot hold,
#: and its right-hand side at zero velocity would be evaluated for nothing.
REST_CONTACTS = 3


def _rest_certain(i, w, kd, cs, mass, inertia, slide):
    """Whether the polyhedral probe at Y0 (at rest by the thresholds, in contact, no row term
    acting) will stay at rest: the *rest certificate* that ends the settle hold early
    (:data:`contact_rows`, which evaluates the right-hand side at Y0 with zero velocity and rate
    into w[kd:] and the contact scratch ``cs`` first).

    True when all of these hold (else False, and the hold is integrated step by step):

    * **equilibrium**: with its velocity and rate set to zero, the contact forces of the active set
      (:data:`systems.probe_contact.contact_motion.contact_forces_row`) hold the probe: none leaves,
      and the CoM's and the rate's accelerations are below :data:`REST_ACCEL_TOL` of the free
      acceleration g_e (gravity, centrifugal: the zero-velocity state is then a fixed point of the
      equations of motion in the target frame);
    * **friction margin**: those stick forces use at most :data:`REST_FRICTION_MARGIN` of the
      aggregate friction capacity (the same aggregate cone the force law decides stick by);
    * **tipping margin**: the support polygon (the convex hull of the ≥ 3 active contacts,
      projected on the plane normal to g_e) has an area and holds the CoM's projection, and the
      kinetic energy relative to the target, ½ m|v|² + ½ ωᵀIω, is below
      :data:`REST_ENERGY_MARGIN` of the least energy that lifts the CoM over one of its edges,
      m g_e (√(d² + h²) − h) (d: the CoM's distance to the edge across the plane, h: its height above
      the edge along g_e). Friction and the stabilised normal constraints only dissipate energy
      relative to the target (Coriolis forces do no work), so the probe cannot tip, and its stick
      forces are inside the cone: it stays where it is.

    A row term makes the caller skip it: a user's force may change later, which only integration
    can tell. So does a sphere: on a slope it rolls on at any speed unless rolling resistance holds
    it. This function reads only the force law's output, so it is compiled once, not per term set.
    """
    accel, act, points, normals, fric = cs.accel, cs.act, cs.points, cs.normals, cs.fric
    out_force, out_fn, out_state = cs.out_force, cs.out_fn, cs.out_state
    gx, gy, gz = accel[i, 0], accel[i, 1], accel[i, 2]
    g = math.sqrt(gx * gx + gy * gy + gz * gz)
    if not (g > 0.0):
        return False
    I = inertia[i]
    m = mass[i]
    gyration = math.sqrt((I[0, 0] + I[1, 1] + I[2, 2]) / (2.0 * m))
    dv = math.sqrt(w[kd + S_V] ** 2 + w[kd + S_V + 1] ** 2 + w[kd + S_V + 2] ** 2)
    da = math.sqrt(w[kd + S_W] ** 2 + w[kd + S_W + 1] ** 2 + w[kd + S_W + 2] ** 2)
    if not (dv <= REST_ACCEL_TOL * g and da * gyration <= REST_ACCEL_TOL * g):
        return False
    ux, uy, uz = gx / g, gy / g, gz / g         # "down"
    q0, q1, q2, q3 = w[Y0 + S_Q], w[Y0 + S_Q + 1], w[Y0 + S_Q + 2], w[Y0 + S_Q + 3]
    nslot = act.shape[1]
    na = 0
    ft_sum = 0.0
    cap = 0.0
    for k in range(nslot):
        if act[i, k] == 0:
            continue
        fn = out_fn[i, k]
        if out_state[i, k] != CONTACT_ACTIVE or not (fn > 0.0):
            return False
        na += 1
        tx = out_force[i, k, 0] - fn * normals[i, k, 0]
        ty = out_force[i, k, 1] - fn * normals[i, k, 1]
        tz = out_force[i, k, 2] - fn * normals[i, k, 2]
        ft_sum += math.sqrt(tx * tx + ty * ty + tz * tz)
        cap += fric[i, k] * fn
    if na < REST_CONTACTS or not (ft_sum <= REST_FRICTION_MARGIN * cap):
        return False
    # support polygon in the plane normal to g_e, the CoM at its origin
    barrier = math.inf
    for a in range(nslot):
        if act[i, a] == 0:
            continue
        ax, ay, az = _rot(q0, q1, q2, q3, points[i, a, 0], points[i, a, 1], points[i, a, 2])
        ha = ax * ux + ay * uy + az * uz
        ax, ay, az = ax - ha * ux, ay - ha * uy, az - ha * uz
        for b in range(a + 1, nslot):
            if act[i, b] == 0:
                continue
            bx, by, bz = _rot(q0, q1, q2, q3, points[i, b, 0], points[i, b, 1], points[i, b, 2])
            hb = bx * ux + by * uy + bz * uz
            ex, ey, ez = bx - hb * ux - ax, by - hb * uy - ay, bz - hb * uz - az
            el = math.sqrt(ex * ex + ey * ey + ez * ez)
            if not (el > 1e-9 * gyration):
                continue
            # the side of each other contact, and of the CoM, of the line a-b (sign of ĝ·(e × (p − a)))
            lo = 0.0
            hi = 0.0
            for c in range(nslot):
                if act[i, c] == 0 or c == a or c == b:
                    continue
                px, py, pz = _rot(q0, q1, q2, q3, points[i, c, 0], points[i, c, 1], points[i, c, 2])
                hp = px * ux + py * uy + pz * uz
                cx, cy, cz = _cross(ex, ey, ez, px - hp * ux - ax, py - hp * uy - ay, pz - hp * uz - az)
                sd = (cx * ux + cy * uy + cz * uz) / el
                lo = min(lo, sd)
                hi = max(hi, sd)
            tol = 1e-9 * gyration
            if lo < -tol and hi > tol:
                continue                        # a diagonal, not an edge of the hull
            if not (hi - lo > tol):
                return False                    # every contact on one line: no area
            cx, cy, cz = _cross(ex, ey, ez, -ax, -ay, -az)
            d = (cx * ux + cy * uy + cz * uz) / el
            if hi > tol:
                if not (d > 0.0):
                    return False                # the CoM is not inside this edge
            elif not (d < 0.0):
                return False
            d = abs(d)
            h = 0.5 * (ha + hb)
            if not (h > 0.0):
                return False
            barrier = min(barrier, g * (math.sqrt(d * d + h * h) - h))
    vx, vy, vz = w[Y0 + S_V], w[Y0 + S_V + 1], w[Y0 + S_V + 2]
    wx, wy, wz = w[Y0 + S_W], w[Y0 + S_W + 1], w[Y0 + S_W + 2]
    iw = (wx * (I[0, 0] * wx + I[0, 1] * wy + I[0, 2] * wz) + wy * (I[1, 0] * wx + I[1, 1] * wy + I[1, 2] * wz)
          + wz * (I[2, 0] * wx + I[2, 1] * wy + I[2, 2] * wz))
    energy = 0.5 * (vx * vx + vy * vy + vz * vz) + 0.5 * iw / m      # per unit mass [J/kg]
    # the slide: friction's spare capacity decelerates the probe at a = (cap − Σ|F_T|)/m from the speed
    # v = √(2E): by Coulomb's law down to v* (eq 2.106), a distance (v² − v*²)/2a, then by the
    # regularised law's exponential decay (deceleration a v/v*), a distance v v*/a from v ≤ v*
    if not (barrier < math.inf and energy <= REST_ENERGY_MARGIN * barrier):
        return False
    a = (cap - ft_sum) / m
    vstar = cs.vstar
    v = math.sqrt(2.0 * energy)
    reach = v * vstar if v <= vstar else 0.5 * (v * v + vstar * vstar)
    return reach <= slide * a


rest_certain = dual_call(_rest_certain)
_certain = rest_certain.cpu


def _rest_held(i, w, cs, target, body, tt, slide):
    """The rest certificate of the probe at Y0 (:func:`_rest_certain`), after the right-hand side at
    Y0 with zero velocity and rate (into w[K0 + 13:], the second stage's slot, through w[YS:]; the
    step that follows rewrites both and the contact scratch). False with a row term or a sphere."""
    if _terms_active() or body.sphere_r > 0.0:
        return False
    for c in range(13):
        w[YS + c] = w[Y0 + c]
    for c in (3, 4, 5, 10, 11, 12):
        w[YS + c] = 0.0
    _rhs(i, w, YS, K0 + 13, cs, target, body, tt)
    return _certain(i, w, K0 + 13, cs, body.mass, body.inertia, slide)


rest_held = dual_call(_rest_held)
_held_rest = rest_held.cpu


def _contact_rows(j0, j1, rows, t_ends, work, probes, geo, target, cs, tt, lim, out):
    """Advance each contact row ``i = rows[j]``, ``j0 <= j < j1``, past its frame end ``t_ends[i]``, to
    a touchdown, a lift-off, rest or ``max_steps`` steps (module docstring). A span kernel
    (:func:`ecs.kernels.launch_span`). ``probes``, ``target``, ``lim``, ``out``:
    :mod:`systems.deployment.records` (the contact-motion tolerances and step limits of ``lim``)."""
    status, reason, phase, rtime, step = probes.status, probes.reason, probes.phase, probes.time, probes.step
    pos, vel, att, om = probes.position, probes.velocity, probes.attitude, probes.omega
    mass, inertia, jinv, shape = probes.mass, probes.inertia, probes.jinv, probes.shape
    pair, rolling_radius = probes.pair, probes.rolling_radius
    distance, max_pen, rest_since = probes.distance, probes.max_penetration, probes.rest_since
    ta = target.ta                       # (the target's gravity and rate go to the callees in the record)
    rtol, atol, h_max, h_min = lim.contact_rtol, lim.contact_atol, lim.contact_h_max, lim.contact_h_min
    event_tol, contact_gap, max_steps, t_cap = lim.event_tol, lim.contact_gap, lim.max_steps, lim.t_cap
    settle_speed, settle_rate, settle_hold, slide_tol = lim.settle_speed, lim.settle_rate, lim.settle_hold, \
        lim.rest_slide
    rec_dt, snap, save, trace, trace_n = out
    for j in range(j0, j1):
        i = rows[j]
        t_end = t_ends[i]       # this row's frame end
        w = work[i]
        vpos, shape_start, shape_kind, shape_radius = geo.vpos, geo.shape_start, geo.shape_kind, geo.shape_radius
        act, slot_vertex, fric, rolling, out_state, sel = cs.act, cs.slot_vertex, cs.fric, cs.rolling, cs.out_state, cs.touch
        s = shape[i]
        v0 = shape_start[s]
        v1 = shape_start[s + 1]
        sphere_r = shape_radius[s] if shape_kind[s] == 0 else 0.0
        body = ProbeBody(mass, inertia, jinv, vpos, sphere_r)
        nslot = act.shape[1]
        f = pair[i, PAIR_F]
        for k in range(nslot):
            fric[i, k] = f
        rr = pair[i, PAIR_CRR] * rolling_radius[i]
        rolling[i, 0], rolling[i, 1], rolling[i, 2] = rr, rr, rr
        _load(i, w, pos, vel, att, om)
        w[WARM] = 0.0           # a fly launch after this one starts afresh
        t = rtime[i]
        h = step[i]
        if not (h > 0.0):
            h = min(h_max, 0.1)
        n = 0
        dist = distance[i]
        fresh = True   # Y0 is new (launch start or an accepted step): set up its active set and rates
        reuse = False  # K_7 of the last accepted step may serve as K_1 (FSAL; checked at the step's start)
        thr = w[THR]   # event threshold of contact_clearance: 0 from the collision that started the
        #                phase, lowered only after a failed projection, kept across launches
        while True:
            # the decisions at a new Y0 (fly, collide, settle) are taken before the launch may end, so
            # where a launch ends (frame end, steps_per_launch) changes no decision
            if fresh:
                fresh = False
                # ---- active set at the step's start
                if reuse:                       # the set the last step used (AUX is free between steps)
                    for k in range(nslot):
                        w[AUX + k] = act[i, k]
                        w[AUX + nslot + k] = slot_vertex[i, k]
                na = 0
                for k in range(nslot):
                    act[i, k] = 0
                if sphere_r > 0.0:
                    if _tdist(ta, w[Y0], w[Y0 + 1], w[Y0 + 2]) - sphere_r <= contact_gap:
                        act[i, 0] = 1
                        na = 1
                else:
                    na = _active(i, w, ta, vpos, v0, v1, act, slot_vertex, sel, contact_gap)
                if na == 0:
                    phase[i] = DeployPhase.FLY
                    break
                if _sinking_c(i, w, ta, vpos, sphere_r, act, slot_vertex) < -SINK_SPEED:
                    phase[i] = DeployPhase.COLLIDE     # an active contact moves into the surface: re-seat it
                    break
                # ---- K_1 = f(Y0): the last step's K_7 (FSAL) when nothing has moved its end since (no
                # lift, the same active set, the same time): the attempt evaluated K_7 at Y1 with its
                # attitude normalised, so it is this evaluation to the bit, contact scratch included
                # (the carrying test below reads it), and a launch boundary, which evaluates it again,
                # changes nothing
                if reuse and w[TS] == t:
                    for k in range(nslot):
                        if act[i, k] != w[AUX + k] or (act[i, k] != 0 and slot_vertex[i, k] != w[AUX + nslot + k]):
                            reuse = False
                else:
                    reuse = False
                if not reuse:
                    w[TS] = t
                    _rhs(i, w, Y0, K0, cs, target, body, tt)
                reuse = False
                carrying = False
                for k in range(nslot):
                    if act[i, k] != 0 and out_state[i, k] == CONTACT_ACTIVE:
                        carrying = True
                if not carrying:
                    phase[i] = DeployPhase.FLY
                    break
                # ---- rest bookkeeping
                sp = math.sqrt(w[Y0 + S_V] ** 2 + w[Y0 + S_V + 1] ** 2 + w[Y0 + S_V + 2] ** 2)
                rate = math.sqrt(w[Y0 + S_W] ** 2 + w[Y0 + S_W + 1] ** 2 + w[Y0 + S_W + 2] ** 2)
                if sp < settle_speed and rate < settle_rate:
                    if not (rest_since[i] == rest_since[i]):
                        rest_since[i] = t
                    elif t - rest_since[i] >= settle_hold:
                        break
                    if slide_tol > 0.0 and na >= REST_CONTACTS and rest_since[i] + settle_hold <= t_cap and _held_rest(
                            i, w, cs, target, body, tt, slide_tol):
                        # certain to stay: held at rest, velocity and rate zero, to the hold's end
                        for c in (3, 4, 5, 10, 11, 12):
                            w[Y0 + c] = 0.0
                        hh = rest_since[i] + settle_hold - t
                        t = rest_since[i] + settle_hold
                        if trace.shape[1] > 0:
                            _trace(i, t, hh, _PHASE_CONTACT, w, Y0, trace, trace_n)
                        break
                else:
                    rest_since[i] = math.nan
            if not (t < t_end and n < max_steps):
                break
            # ---- one step (after a rejected attempt Y0, its active set, K0 and the rest bookkeeping stand)
            hh = min(min(h, h_max), t_cap - t)    # the frame end cuts no step: recording changes nothing
            if rest_since[i] == rest_since[i] and rest_since[i] + settle_hold - t < hh:
                hh = max(rest_since[i] + settle_hold - t, 1e-9)
            w[T0] = t
            if rec_dt > 0.0:
                _snaps(i, w, t, hh, cs, None, target, body, tt, rtol,
                       atol, rec_dt, snap, save, _PHASE_CONTACT)
            err = _dp(i, w, hh, cs, None, target, body, tt, rtol,
                      atol)
            n += 1
            if not (err <= 1.0) and hh > h_min:
                if not math.isfinite(err):
                    status[i] = Status.FAILED
                    reason[i] = _NONFINITE
                    phase[i] = DeployPhase.ENDED
                    break
                h = max(_next(hh, err), h_min)
                continue
            if not _fin(w, Y1):
                status[i] = Status.FAILED
                reason[i] = _NONFINITE
                phase[i] = DeployPhase.ENDED
                break
            # ---- new touchdown of a free vertex: localise (locate_event) and collide
            g1 = _cclear(w, Y1, ta, vpos, v0, v1, sphere_r, act, slot_vertex, sel, i, contact_gap)
            if g1 <= thr:
                g0 = _cclear(w, Y0, ta, vpos, v0, v1, sphere_r, act, slot_vertex, sel, i, contact_gap)
                if not (g0 > thr):
                    # the step starts at or below the event's zero: a touching vertex more than
                    # contact_gap deep, left so by a projection that could not lift it (module
                    # docstring); lowered as in flight, so that sinking a further contact_gap is an event
                    thr = g0 - contact_gap
                if g1 <= thr:
                    a, fa = _locate(i, w, hh, (g0 - thr, g1 - thr, thr), _WHICH_CONTACT, None, target, body,
                                    (v0, v1, shape_radius[s]), cs, rtol, atol, event_tol, contact_gap)
                    t += a
                    _drop_snaps(i, t, rec_dt, snap)
                    if trace.shape[1] > 0:
                        _trace(i, t, a, _PHASE_CONTACT, w, Y0, trace, trace_n)
                    phase[i] = DeployPhase.COLLIDE
                    break
            t, dist = _commit(w, t, hh, t_cap, dist, NORMALISED)
            h = _next(hh, err)
            fresh = True
            # ---- drift: lift the active contacts back onto the surface
            pen = _lift(w, Y0, ta, vpos, v0, v1, sphere_r, act, slot_vertex, i, _ACTIVE_ONLY)
            if pen > max_pen[i]:
                max_pen[i] = pen
            reuse = not (pen > 0.0)             # nothing lifted: Y0 is the attempt's Y1 to the bit
            if trace.shape[1] > 0:
                _trace(i, t, hh, _PHASE_CONTACT, w, Y0, trace, trace_n)
        w[THR] = thr
        w[CONTACT_ATTEMPTS] += n
        _finish(i, w, t, h, dist, pos, vel, att, om, rtime, step, distance)


contact_rows = dual(_contact_rows, inline=False, nogil=True)




class ContactProbes(KernelMode):
    """CONTACT phase: advance every row in contact motion (module docstring).

    Launched by :class:`systems.deployment.loop.DeploymentLoop`.
    """

    code = int(DeployPhase.CONTACT)
    key = "contact"
    dense_output = True
    reads = ("probe_phase",)
    writes = ("body_position", "body_velocity", "body_attitude", "body_omega")

    @staticmethod
    def launch_args(ctx, rows: np.ndarray, t_ends) -> tuple:
        """The contact kernel's arguments after its row span (:meth:`KernelMode.advance`)."""
        return (rows, frame_ends(ctx.table, t_ends), *ctx.row_args(), ctx.tt["contact_rows"], ctx.limits(),
                ctx.output())
