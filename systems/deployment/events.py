"""What happens at the edges of a deployment step (seed 004 §2.7): the contact event functions
(which vertices count, the clearance of the active set), the projection of a probe out of the
terrain after a step ends inside it (lift), the event tracker and its Hermite root, the location
of an event on a step (:data:`locate_event`), the dense-output snapshots of recorded frames and
their trace, and the escape test. The step itself (equations of motion, DP5(4), RKMK) is
:mod:`systems.deployment.physics`; the phase kernels :mod:`systems.deployment.fly`,
:mod:`~systems.deployment.collide` and :mod:`~systems.deployment.contact` use both.
"""

from __future__ import annotations

import math

import numpy as np

from ecs.attitude import cross_call, quat_normalize, quat_rotate_call
from ecs.kernels import dual, dual_call
from ecs.stepping import DP54_DENSE
from ecs.terms import terms_couple_attitude_none
from systems.deployment.physics import (AUX, K0, KFSAL, LIFT, LIFT_SET, SNAP_SAVE_END, STATE, Y0, Y1,
                                        advance_attitude, dp_attempt, normalise_quaternion)
from systems.deployment.geometry import clearance, terrain_at, terrain_distance, vertex_distance, vertex_world
from systems.deployment.records import S_Q, S_V, S_W

_cross = cross_call.cpu
_dpa = dp_attempt.cpu
_qnorm = quat_normalize.cpu
_normq = normalise_quaternion.cpu
_rot = quat_rotate_call.cpu
_tat = terrain_at.cpu
_tdist = terrain_distance.cpu
_vdist = vertex_distance.cpu
_vworld = vertex_world.cpu
_i = np.int64
_advance_att = advance_attitude.cpu
#: the row terms' attitude coupling (ecs.terms): relinked with the phase kernels, as in physics
_couple = terms_couple_attitude_none
_N6 = _i(6)
_N13 = _i(STATE)


def _held(act, slot_vertex, touch, i, v, v0):
    """Whether vertex v's term of the contact event function counts from ``−gap``: it is an active
    contact, or it was touching (within ``gap``) at the step's start Y0 without a slot.

    A face or edge lying flat touches with more vertices than there are contact slots
    (:data:`systems.deployment.contact.CONTACT_SLOTS`); the vertices left without a slot lie, up to
    the terrain's relief, in the plane the active ones hold. Counted as free vertices, one sitting
    a round-off above the surface "touched down" at once, its zero-time collision had nothing to
    resolve, and contact motion raised the same event again (a livelock). Counted like an active
    contact, it raises an event only once it has sunk by ``gap``: a finite motion, so every
    contact → collision round advances the state.

    Whether a vertex touched at Y0 is read from ``touch[i, v − v0]`` (the contact scratch's
    ``touch``, ≥ 0 for a touching vertex), written by the active-set choice at Y0
    (:data:`systems.deployment.contact.active_set`), not evaluated again: the terrain at Y0 cost one
    more evaluation per free vertex at every event-function call."""
    for k in range(act.shape[1]):
        if act[i, k] != 0 and slot_vertex[i, k] == v:
            return True
    return touch[i, v - v0] >= 0.0


held = dual_call(_held)
_held_c = held.cpu


def _contact_clearance(w, ys, ta, vpos, v0, v1, sphere_r, act, slot_vertex, touch, i, gap):
    """Event function of contact motion [m]: the smallest terrain distance over the vertices, the
    distance of a vertex that was touching at the step's start (:data:`held`: an active contact, or
    a touching vertex without a slot) counted from ``−gap`` (it may sit up to ``gap`` deep). It falls
    through zero when a free vertex touches down, or when a touching one sinks by more than ``gap``
    (a concave kink of the terrain passed within a step, or a vertex without a slot left unsupported).
    A vertex's term is only resolved where it can be the minimum (same value as evaluating all)."""
    if sphere_r > 0.0:
        return _tdist(ta, w[ys], w[ys + 1], w[ys + 2]) - sphere_r + gap
    best = math.inf
    v = v0
    while v < v1:
        d = _vdist(w, ys, ta, vpos, v)
        if d < best:
            if _held_c(act, slot_vertex, touch, i, v, v0):
                d += gap
            best = min(best, d)
        v += 1
    return best


contact_clearance = dual_call(_contact_clearance)
_cclear = contact_clearance.cpu
_clear = clearance.cpu

#: Most lifts of one projection out of the terrain (:data:`lift_out`); each is a Newton step, so
#: a handful suffice (the guard bounds a kinked field's pathological case).
LIFT_ITERATIONS = 24
#: Halvings of a lift that left the deepest vertex deeper before the projection gives up (and
#: keeps its best state).
LIFT_HALVINGS = 4
#: A projection stops once its deepest vertex lies less than this [m] below the surface (round-off
#: of a distance evaluated ~100 m from the target's centre is ~1e-14 m).
LIFT_TOL = 1e-12


def _lift_field(w, ys, ta, vpos, v, sphere_r):
    """Terrain distance [m] and gradient at vertex v of the state w[ys:] (v < 0: a sphere probe,
    its centre's distance minus its radius)."""
    if v < 0:
        d, nx, ny, nz = _tat(ta, w[ys], w[ys + 1], w[ys + 2])
        return d - sphere_r, nx, ny, nz
    px, py, pz = _vworld(w, ys, vpos, v)
    return _tat(ta, px, py, pz)


lift_field = dual_call(_lift_field)
_lfield = lift_field.cpu


def _lift_subset(w, nw, mask):
    """The smallest translation [m] that meets the linearised constraints ``g_k·Δ = b_k`` of the
    working-set members in ``mask`` (one, two or three of them) with equality, and whether it meets
    every member's ``g_k·Δ ≥ b_k`` (``(ok, Δx, Δy, Δz)``; not ok when the subset's gradients are
    near-dependent)."""
    ia = ib = ic = -1
    for k in range(nw):
        if (mask >> k) & 1:
            if ia < 0:
                ia = k
            elif ib < 0:
                ib = k
            elif ic < 0:
                ic = k
            else:
                return False, 0.0, 0.0, 0.0
    c = LIFT + LIFT_SET
    ax, ay, az, ba = w[c + 4 * ia], w[c + 4 * ia + 1], w[c + 4 * ia + 2], w[c + 4 * ia + 3]
    saa = ax * ax + ay * ay + az * az
    if not (saa > 0.0):
        return False, 0.0, 0.0, 0.0
    if ib < 0:
        f = ba / saa
        dx, dy, dz = f * ax, f * ay, f * az
    else:
        bx, by, bz, bb = w[c + 4 * ib], w[c + 4 * ib + 1], w[c + 4 * ib + 2], w[c + 4 * ib + 3]
        sbb = bx * bx + by * by + bz * bz
        if ic < 0:
            sab = ax * bx + ay * by + az * bz
            det = saa * sbb - sab * sab
            if not (det > 1e-10 * saa * sbb):
                return False, 0.0, 0.0, 0.0
            la = (ba * sbb - bb * sab) / det
            lb = (bb * saa - ba * sab) / det
            dx, dy, dz = la * ax + lb * bx, la * ay + lb * by, la * az + lb * bz
        else:
            cx, cy, cz, bc = w[c + 4 * ic], w[c + 4 * ic + 1], w[c + 4 * ic + 2], w[c + 4 * ic + 3]
            scc = cx * cx + cy * cy + cz * cz
            ux, uy, uz = _cross(bx, by, bz, cx, cy, cz)
            vx, vy, vz = _cross(cx, cy, cz, ax, ay, az)
            tx, ty, tz = _cross(ax, ay, az, bx, by, bz)
            det = ax * ux + ay * uy + az * uz
            if not (abs(det) > 1e-6 * math.sqrt(saa * sbb * scc)):
                return False, 0.0, 0.0, 0.0
            dx = (ba * ux + bb * vx + bc * tx) / det
            dy = (ba * uy + bb * vy + bc * ty) / det
            dz = (ba * uz + bb * vz + bc * tz) / det
    for k in range(nw):
        gx, gy, gz, b = w[c + 4 * k], w[c + 4 * k + 1], w[c + 4 * k + 2], w[c + 4 * k + 3]
        if gx * dx + gy * dy + gz * dz < b - LIFT_TOL * math.sqrt(gx * gx + gy * gy + gz * gz):
            return False, dx, dy, dz
    return True, dx, dy, dz


lift_subset = dual_call(_lift_subset)
_lsubset = lift_subset.cpu


def _lift_out(w, ys, ta, vpos, v0, v1, sphere_r, act, slot_vertex, i, only_active):
    """Project the state w[ys:] out of the terrain by translating the CoM; returns the depth [m] of
    its deepest vertex before (0 when none lies below the surface).

    The vertices considered: the active contact slots of row i (``only_active``: contact motion's
    drift correction), or all of the shape's vertices (the collision's projection; a sphere: its
    centre's distance minus its radius).

    Each lift is a Newton step of the constraints ``d_k(x + Δ) ≥ 0``: linearised at the current
    state, ``∇d_k·Δ ≥ −d_k``, over a working set of vertices — the deepest one, and those whose
    constraints bound the previous lift — the smallest Δ that meets them all (a three-unknown
    quadratic programme, solved exactly by trying the equality solutions of every subset of at most
    three constraints and keeping the shortest feasible one). Repeated until no vertex considered
    lies more than :data:`LIFT_TOL` below the surface (at most :data:`LIFT_ITERATIONS` lifts). A
    lift that leaves the deepest vertex deeper is undone: when that vertex was outside the working
    set, the lift is redone with it in; when inside (the rock texture is only piecewise trilinear:
    the linearisation can fail within a millimetre), the lift is halved, up to
    :data:`LIFT_HALVINGS` times, and then undone. The projection never leaves the probe's deepest
    vertex deeper than it found it.

    Why not "lift the deepest vertex by its depth along its normal", as before: the terrain's value
    is not a unit-gradient distance where fBm relief and rock texture add to the base
    (:data:`systems.terrain.sdf.eval_terrain_point`; |∇d| from 0.4 to 1.3 measured at contacts on
    ``fbm=true``), so such a lift reached only |∇d| of the way (−0.27 mm lifted to −0.18 mm) and
    collide → fly rounds ratcheted a vertex deeper; it left other vertices below the surface, so
    contact motion started with its event function below zero and located no event (31 mm sunk
    in one phase); and in a crease of the rock texture lifting one vertex off one face pushed the
    vertex on the facing side deeper (−35 mm became −63 mm), where the working set lifts along
    the crease, off both faces.
    """
    first = 0.0
    nw = 0
    prev = -math.inf     # depth after the last accepted lift (the best so far)
    halved = 0
    dx = dy = dz = 0.0
    c = LIFT + LIFT_SET
    for it in range(LIFT_ITERATIONS + 1):
        deep = -LIFT_TOL
        arg = -2
        agx = agy = agz = 0.0
        # the scan writes each working-set member's constraint (distance and gradient at this
        # state) as it passes it, and keeps the deepest vertex's, so a lift from here evaluates
        # the terrain no further
        if sphere_r > 0.0:
            d, gx, gy, gz = _lfield(w, ys, ta, vpos, _i(-1), sphere_r)
            for m in range(nw):
                w[c + 4 * m], w[c + 4 * m + 1], w[c + 4 * m + 2], w[c + 4 * m + 3] = gx, gy, gz, -d
            if d < deep:
                deep = d
                arg = -1
                agx, agy, agz = gx, gy, gz
        else:
            n = act.shape[1] if only_active else v1 - v0
            for k in range(n):
                if only_active:
                    if act[i, k] == 0:
                        continue
                    v = slot_vertex[i, k]
                else:
                    v = v0 + k
                d, gx, gy, gz = _lfield(w, ys, ta, vpos, v, sphere_r)
                for m in range(nw):
                    if w[LIFT + m] == v:
                        w[c + 4 * m], w[c + 4 * m + 1], w[c + 4 * m + 2], w[c + 4 * m + 3] = gx, gy, gz, -d
                if d < deep:
                    deep = d
                    arg = v
                    agx, agy, agz = gx, gy, gz
        if it == 0 and arg != -2:
            first = -deep
        member = False
        for k in range(nw):
            if w[LIFT + k] == arg:
                member = True
        if deep < prev:      # the last lift left the deepest vertex deeper
            if member:       # one of its own constraints: the linearisation failed; halve the lift
                if halved == LIFT_HALVINGS:
                    w[ys] -= dx      # back to the best state
                    w[ys + 1] -= dy
                    w[ys + 2] -= dz
                    break
                dx, dy, dz = 0.5 * dx, 0.5 * dy, 0.5 * dz
                w[ys] -= dx
                w[ys + 1] -= dy
                w[ys + 2] -= dz
                halved += 1
                continue
            # a vertex it did not constrain: back to the best state, lift again with it constrained
            w[ys] -= dx
            w[ys + 1] -= dy
            w[ys + 2] -= dz
            halved = 0
            if it == LIFT_ITERATIONS:
                break
            if not member:
                w[LIFT + nw] = arg
                nw += 1
            for k in range(nw):      # the constraints at the state gone back to
                d, gx, gy, gz = _lfield(w, ys, ta, vpos, _i(w[LIFT + k]), sphere_r)
                w[c + 4 * k], w[c + 4 * k + 1], w[c + 4 * k + 2], w[c + 4 * k + 3] = gx, gy, gz, -d
        else:
            prev = deep
            halved = 0
            if arg == -2 or it == LIFT_ITERATIONS:
                break
            if not member:       # the scan wrote the other members' constraints
                w[LIFT + nw] = arg
                w[c + 4 * nw], w[c + 4 * nw + 1], w[c + 4 * nw + 2], w[c + 4 * nw + 3] = agx, agy, agz, -deep
                nw += 1
        best = math.inf
        keep = 0
        dx = dy = dz = 0.0
        for mask in range(1, 1 << nw):
            ok, ex, ey, ez = _lsubset(w, nw, _i(mask))
            q = ex * ex + ey * ey + ez * ez
            if ok and q < best:
                best = q
                keep = mask
                dx, dy, dz = ex, ey, ez
        if keep == 0:        # round-off: no subset met every linearised constraint; lift the deepest
            for k in range(nw):
                if w[LIFT + k] == arg:
                    keep = 1 << k
            _ok, dx, dy, dz = _lsubset(w, nw, _i(keep))
            if not (dx * dx + dy * dy + dz * dz > 0.0):
                break
        w[ys] += dx
        w[ys + 1] += dy
        w[ys + 2] += dz
        m = 0                # the working set: the constraints that bound this lift
        for k in range(nw):
            if (keep >> k) & 1:
                w[LIFT + m] = w[LIFT + k]
                m += 1
        nw = m
    return first


lift_out = dual_call(_lift_out)


def _event_track(which, i, w, ys, ta, vpos, v0, v1, sphere_r, bound_r, cs, gap, track):
    """Event function at w[ys:] — :data:`~systems.deployment.geometry.clearance` (which 0) or :data:`contact_clearance`
    (which 1) — with one vertex's own term of it and that term's rate.

    Returns ``(g, g_track, ġ_track, argmin)``: the event value; vertex ``track``'s term (the
    minimum's vertex when ``track < 0``) and its time derivative ∇d·u (u the vertex velocity in the
    target frame, the terrain being fixed there); and the vertex attaining ``g`` (−1 for a sphere
    or the broadphase bound, whose term is the CoM's).
    """
    x, y, z = w[ys], w[ys + 1], w[ys + 2]
    dc, ncx, ncy, ncz = _tat(ta, x, y, z)
    if sphere_r > 0.0 or (which == 0 and dc > 2.0 * bound_r + 1.0):
        g = dc - (sphere_r + (-gap if which == 1 else 0.0) if sphere_r > 0.0 else bound_r)
        gd = ncx * w[ys + S_V] + ncy * w[ys + S_V + 1] + ncz * w[ys + S_V + 2]
        return g, g, gd, -1
    act, slot_vertex, touch = cs.act, cs.slot_vertex, cs.touch
    best = math.inf
    arg = -1
    gt = math.inf
    v = v0
    while v < v1:
        d = _vdist(w, ys, ta, vpos, v)
        if which == 1 and (d < best or v == track) and _held_c(act, slot_vertex, touch, i, v, v0):
            d += gap        # :data:`contact_clearance`'s term (resolved where it matters, as there)
        if d < best:
            best = d
            arg = v
        if v == track:
            gt = d
        v += 1
    tv = track if track >= 0 else arg
    if track < 0:
        gt = best
    # rate of vertex tv's term: ∇d(p)·(v + R (ω × r))
    q0, q1, q2, q3 = w[ys + S_Q], w[ys + S_Q + 1], w[ys + S_Q + 2], w[ys + S_Q + 3]
    s = 1.0 / math.sqrt(q0 * q0 + q1 * q1 + q2 * q2 + q3 * q3)
    q0, q1, q2, q3 = q0 * s, q1 * s, q2 * s, q3 * s
    px, py, pz = _rot(q0, q1, q2, q3, vpos[tv, 0], vpos[tv, 1], vpos[tv, 2])
    _, nx, ny, nz = _tat(ta, x + px, y + py, z + pz)
    cx, cy, cz = _cross(w[ys + S_W], w[ys + S_W + 1], w[ys + S_W + 2], vpos[tv, 0], vpos[tv, 1], vpos[tv, 2])
    cx, cy, cz = _rot(q0, q1, q2, q3, cx, cy, cz)
    gd = nx * (w[ys + S_V] + cx) + ny * (w[ys + S_V + 1] + cy) + nz * (w[ys + S_V + 2] + cz)
    return best, gt, gd, arg


event_track = dual_call(_event_track)
_etrack = event_track.cpu


def _hermite_root(ga, da, gb, db, width):
    """Root in (0, width) of the cubic Hermite interpolant of values ga > 0 ≥ gb and rates da, db at
    the ends of an interval of that width.

    Newton's method on the cubic from the secant's root, kept inside the bracket of the sign changes
    seen so far: a Newton step that would leave it, or that did not halve the step before, bisects
    instead (Press et al., *Numerical Recipes* §9.4, ``rtsafe``). Stops when the step or the bracket
    is below 1e-14 of the width, where bisection alone took 47 cubic evaluations: on 20,000 random
    brackets a median of 7 (mean 15), and its share of a deploy-cube profile fell 2.5 → 0.7 %."""
    lo = 0.0
    hi = 1.0
    ma = da * width
    mb = db * width
    s = ga / (ga - gb)
    step = 1.0
    step_before = 1.0
    for _ in range(100):
        s2 = s * s
        s3 = s2 * s
        hval = ((2.0 * s3 - 3.0 * s2 + 1.0) * ga + (s3 - 2.0 * s2 + s) * ma + (-2.0 * s3 + 3.0 * s2) * gb
                + (s3 - s2) * mb)
        if hval > 0.0:
            lo = s
        else:
            hi = s
        slope = (6.0 * s2 - 6.0 * s) * (ga - gb) + (3.0 * s2 - 4.0 * s + 1.0) * ma + (3.0 * s2 - 2.0 * s) * mb
        newton = s - hval / slope if slope != 0.0 else math.nan
        step_before, step = step, s - newton
        if not (lo < newton < hi) or abs(step) > 0.5 * abs(step_before):
            step = 0.5 * (hi - lo)
            newton = lo + step
        s = newton
        if abs(step) < 1e-14 or hi - lo < 1e-14:
            break
    return s * width


hermite_root = dual_call(_hermite_root)
_hroot = hermite_root.cpu


_D1, _D3, _D4, _D5, _D6, _D7 = (DP54_DENSE[0], DP54_DENSE[2], DP54_DENSE[3], DP54_DENSE[4], DP54_DENSE[5],
                                DP54_DENSE[6])


def _dense_setup(w, hh, n):
    """The continuous extension (:data:`ecs.stepping.DP54_DENSE`) of the first ``n`` state
    components of the step of length hh from Y0 to Y1, whose stages are at K0 + 13 j and K_7 at
    KFSAL: r₂, r₃, r₄, r₅ overwrite the slots of K_2, K_1, K_3 and K_4 (the step is over: its stages
    are not needed again). ``n``: 13 (:data:`STATE`), or 6 for flight's multirate step, whose
    stages hold the translation only."""
    for c in range(n):
        y0 = w[Y0 + c]
        k1 = w[K0 + c]
        k7 = w[KFSAL + c]
        r2 = w[Y1 + c] - y0
        r3 = hh * k1 - r2
        r4 = r2 - hh * k7 - r3
        r5 = hh * (_D1 * k1 + _D3 * w[K0 + 26 + c] + _D4 * w[K0 + 39 + c] + _D5 * w[K0 + 52 + c]
                   + _D6 * w[K0 + 65 + c] + _D7 * k7)
        w[K0 + 13 + c] = r2
        w[K0 + c] = r3
        w[K0 + 26 + c] = r4
        w[K0 + 39 + c] = r5


def _dense_state(w, theta, n):
    """Y1[:n] <- the continuous extension set up by :func:`_dense_setup` at θ = τ/hh ∈ [0, 1]."""
    s1 = 1.0 - theta
    for c in range(n):
        w[Y1 + c] = w[Y0 + c] + theta * (w[K0 + 13 + c] + s1 * (w[K0 + c] + theta * (w[K0 + 26 + c]
                                                                                   + s1 * w[K0 + 39 + c])))


dense_setup = dual_call(_dense_setup)
dense_state = dual_call(_dense_state)
_dsetup = dense_setup.cpu
_dstate = dense_state.cpu


def _locate_event(i, w, hh, bracket, which, fly, target, body, verts, cs, rtol, atol, event_tol, gap):
    """Localise the event crossed by the step [0, hh] from Y0 (``bracket = (fa, fb, thr)``: event
    values − thr, fa > 0 ≥ fb), for the row's ``body`` (:data:`~systems.deployment.records.ProbeBody`)
    and its vertices ``verts = (v0, v1, bound_r)`` (:data:`event_track`).

    A trial reads the step's continuous extension (:func:`_dense_setup`, fourth order, its error
    of the step's own size) instead of stepping again. In contact motion (``fly`` None), whose step
    carries all 13 numbers in one DP5(4) step, it covers the whole state (on ``deploy-cube`` a
    location took 3 trials of 6 force evaluations each). Flight's multirate step carries the
    translation alone in its stages (:data:`systems.deployment.physics.dp_attempt`): the trial reads
    the translation from the extension and carries the attitude over τ by its own sub-steps
    (:data:`systems.deployment.physics.advance_attitude`, in closed form for a steady spin, which
    is also how the step itself carried it). Before, each flight trial was a fresh DP5(4) step from
    Y0: 2.9 trials a location, 52 gravity-evaluating steps a ``deploy-cube`` landing beside its
    397 attempts. A flight whose row terms couple the attitude steps all 13 numbers and reads
    all 13 from the extension.

    The bracket [a, b] is kept on the event function (the minimum over
    vertices, :data:`event_track`), but a trial is placed at the root of the cubic Hermite
    interpolant of one vertex's term — the vertex that crosses, with its values and rates at both
    ends of the bracket. The minimum itself is only piecewise smooth (in contact motion it sits
    flat at an active contact's ``gap`` until the falling vertex undercuts it), and the rates make
    the estimate good for grazing approaches too, where a secant creeps. A trial whose minimum
    crosses while the tracked vertex has not names the vertex that crossed first, and tracking
    moves to it. As in SUNDIALS' root finder, a trial stays at least ``event_tol / 2`` inside the
    bracket, so once the estimate has converged on one side the next trial lands on the other and
    closes the bracket; a trial bisects when the last three did not halve the bracket. Stops when
    the bracket is shorter than ``event_tol`` and leaves the state at its outer end (event value
    above the threshold) in Y0. Returns ``(a, fa)``: that time offset and its event value − thr.
    """
    fa, fb, thr = bracket
    v0, v1, bound_r = verts
    vpos, sphere_r = body.vpos, body.sphere_r
    ta = target.ta
    a = 0.0
    b = hh
    for c in range(13):
        w[AUX + c] = w[Y0 + c]
    n = _N13 if fly is None or _couple() else _N6
    _dsetup(w, hh, n)
    _g, sb, db, track = _etrack(which, i, w, Y1, ta, vpos, v0, v1, sphere_r, bound_r, cs, gap, _i(-1))
    sb -= thr
    _g, sa, da, _v = _etrack(which, i, w, Y0, ta, vpos, v0, v1, sphere_r, bound_r, cs, gap, track)
    sa -= thr
    it = 0
    width1 = math.inf        # bracket width before the previous trial
    width2 = math.inf        # before the one before
    width3 = math.inf        # and before that
    while b - a > event_tol and it < 200:
        width = b - a
        if width > 0.5 * width3 or not (sa > 0.0 and sb <= 0.0):
            tau = 0.5 * (a + b)
        else:
            tau = a + _hroot(sa, da, sb, db, width)
            lo = a + 0.5 * event_tol
            hi = b - 0.5 * event_tol
            if not (tau > lo):
                tau = lo
            if tau > hi:
                tau = hi
        _dstate(w, tau / hh, n)
        if fly is not None and n == _N6:
            _advance_att(w, tau, target.ox, target.oy, target.oz, body.inertia[i], body.jinv[i], rtol, atol)
        gt, st, dt, arg = _etrack(which, i, w, Y1, ta, vpos, v0, v1, sphere_r, bound_r, cs, gap, track)
        gt -= thr
        st -= thr
        if gt > 0.0:
            a = tau
            fa = gt
            sa = st
            da = dt
            for c in range(13):
                w[AUX + c] = w[Y1 + c]
        elif st > 0.0:       # another vertex crossed first: track it
            b = tau
            track = arg
            _g, sb, db, _v = _etrack(which, i, w, Y1, ta, vpos, v0, v1, sphere_r, bound_r, cs, gap, track)
            sb -= thr
            _g, sa, da, _v = _etrack(which, i, w, AUX, ta, vpos, v0, v1, sphere_r, bound_r, cs, gap, track)
            sa -= thr
        else:
            b = tau
            sb = st
            db = dt
        width3 = width2
        width2 = width1
        width1 = width
        it += 1
    for c in range(13):
        w[Y0 + c] = w[AUX + c]
    _normq(w, Y0)       # a trial step's end, or the continuous extension's state: renormalise
    return a, fa


def _record_snapshots(i, w, t, hh, contact, fly, target, body, tt, rtol, atol, rec_dt, snap, save, phase_code):
    """Dense output for recording: the state at every record time τ_k = k·rec_dt in (t, t + hh].

    Called before the attempt [t, t + hh] from Y0 (at time w[T0] = t). Each τ_k gets a fresh
    DP5(4) step of length τ_k − t from Y0 (5th order at τ_k, as in event location), written to
    ``snap[i, k % M] = (k, phase, state, t)`` (once per Y0: a rejected attempt's retry reuses it; a
    step that does not reach τ_k leaves it to a later step); everything the trial overwrote
    (w[Y1:SNAP_SAVE_END], the attitude sub-steps' proposal included) is restored from ``save[i]``,
    and the attempt that follows rewrites the contact scratch the trial used, so recording changes
    no bit of the row's own steps or outputs. ``rec_dt`` ≤ 0: not recording.
    """
    if not (rec_dt > 0.0):
        return
    k = math.floor(t / rec_dt) + 1.0
    tau = k * rec_dt
    if not (tau <= t + hh):
        return
    m = snap.shape[1]
    n = SNAP_SAVE_END - Y1
    saved = False
    while tau <= t + hh:
        slot = int(k) % m
        if tau > t and not (snap[i, slot, 0] == k and snap[i, slot, 15] == t):
            if not saved:
                for c in range(n):
                    save[i, c] = w[Y1 + c]
                saved = True
            _dpa(i, w, tau - t, contact, fly, target, body, tt, rtol, atol)
            snap[i, slot, 0] = k
            snap[i, slot, 1] = phase_code
            snap[i, slot, 15] = t
            q0, q1, q2, q3 = _qnorm(w[Y1 + S_Q], w[Y1 + S_Q + 1], w[Y1 + S_Q + 2], w[Y1 + S_Q + 3])
            for c in range(STATE):
                snap[i, slot, 2 + c] = w[Y1 + c]
            snap[i, slot, 8], snap[i, slot, 9], snap[i, slot, 10], snap[i, slot, 11] = q0, q1, q2, q3
        k += 1.0
        tau = k * rec_dt
    if saved:
        for c in range(n):
            w[Y1 + c] = save[i, c]


def _escaping(x, y, z, vx, vy, vz, ox, oy, oz, mu, escape_r):
    """The escape rule (:class:`systems.deployment.loop.EndProbes`): beyond ``escape_r`` [m] from the
    target's CoM, on a Keplerian hyperbola (two-body energy ``½|v_N|² − μ/r > 0``, inertial velocity
    ``v_N = v + Ω × x``) and moving outward. One definition for the fly kernel, which stops the row
    at the step that shows it, and the end-state rules, which end it."""
    r = math.sqrt(x * x + y * y + z * z)
    if not (r > escape_r):
        return False
    nx = vx + (oy * z - oz * y)
    ny = vy + (oz * x - ox * z)
    nz = vz + (ox * y - oy * x)
    return 0.5 * (nx * nx + ny * ny + nz * nz) - mu / r > 0.0 and x * vx + y * vy + z * vz > 0.0


escaping = dual(_escaping, inline=False)


def _trace_step(i, t, h, phase_code, w, off, trace, trace_n):
    """Append the row's state w[off:] at time t after a step of length h (phase ``phase_code``) to
    its per-step trace ``trace[i]`` = rows of (t, h, phase, 13 state numbers); ``trace_n[i]``
    counts every step, those beyond the trace's capacity included (not stored)."""
    k = trace_n[i]
    trace_n[i] = k + 1
    if k < trace.shape[1]:
        trace[i, k, 0] = t
        trace[i, k, 1] = h
        trace[i, k, 2] = phase_code
        for c in range(STATE):
            trace[i, k, 3 + c] = w[off + c]


def _drop_snapshots_after(i, t, rec_dt, snap):
    """Forget the snapshots of record times after ``t`` (an event cut the step there: the row's
    state at those times comes from its next phase)."""
    if not (rec_dt > 0.0):
        return
    for s in range(snap.shape[1]):
        if snap[i, s, 0] * rec_dt > t:
            snap[i, s, 0] = math.nan
locate_event = dual_call(_locate_event)
record_snapshots = dual_call(_record_snapshots)
trace_step = dual_call(_trace_step)
drop_snapshots_after = dual_call(_drop_snapshots_after)
