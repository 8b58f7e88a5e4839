"""FLY phase: ballistic flight of probes in the rotating target frame, with event location.

Seed 004 §2.7.1 and §2.7.3 (the "fly" kernel). Every row in :attr:`DeployPhase.FLY` is integrated
by a per-row adaptive Dormand–Prince 5(4) (:mod:`systems.deployment.physics`: eqs 2.2–2.5, relative
tolerance 1e-10 by default) past the frame end (a step is never cut there: the recording interval
changes no step, docs/design.md §8.2; only the time cap ``t_cap`` cuts one), for at most
``steps_per_launch`` steps per launch; a launch boundary changes nothing either (the next launch
continues from the row's FSAL derivative, event threshold and value, ``WARM``). A row that escapes
(:class:`systems.deployment.loop.EndProbes`' rule) stops at the step that shows it.
Flight has no torque, so the step is multirate (:data:`~systems.deployment.physics.dp_attempt`): the
CoM's DP5(4) step decides its length, and the attitude follows over the same interval in adaptive
Runge–Kutta–Munthe-Kaas sub-steps of its own in the inertial frame, under the same tolerances
(:data:`~systems.deployment.physics.advance_attitude`; a steady spin, such as any spin of a probe
with equal principal moments, in closed form).

Event function (seed §2.7.1): the smallest terrain distance over the probe's vertices (a sphere:
its centre's distance minus its radius). While the probe's CoM is further than twice its bounding
radius plus 1 m from the surface, the bound ``d(CoM) − r_bound`` stands in for it without touching
the vertices (the broadphase). Steps are limited so that no vertex can travel further than the
current clearance plus a quarter of the bounding radius (:data:`REACH_SLACK`), so a vertex cannot
pass through a thin feature unseen: a vertex's travel is bounded by its CoM's speed and
acceleration and the rotation's r|ω|, or, where that allows more, the CoM's travel against its
own distance less the bounding radius (:data:`flight_reach`). In the voxel field a step ends just past the cell face its CoM would cross
(:data:`~systems.deployment.physics.smooth_step`: g is only C⁰ there) and keeps the step proposal it was
cut from. When the event function falls to zero (from above), the crossing is localised on
the step length (:data:`systems.deployment.events.locate_event`: trials at the root of the crossing
vertex's cubic Hermite interpolant, safeguarded), every trial reading the translation from the
step's continuous extension and carrying the attitude over it as the step did, until the bracket is shorter than
``event_tol``; the row stops at the bracket's *outer* end (clearance ≥ 0, at most
``event_tol × approach speed`` above the surface) and switches to COLLIDE.

If a row starts a launch already touching (clearance ≤ ``contact_gap``: just after a collision or
after leaving contact motion), the event threshold is lowered to ``min(clearance, 0) − contact_gap``
for that launch, so a probe that separates is not caught again at once (no zero-time
collide/fly/contact cycles); one that sinks by a further ``contact_gap`` still raises the event.
"""

from __future__ import annotations

import math

import numpy as np

from components.deploy import DeployPhase
from components.status import Reason, Status
from ecs.kernels import dual
from systems.deployment.modes import KernelMode
from systems.deployment.records import S_V, S_W, ProbeBody
from systems.deployment.geometry import clearance
from systems.deployment.physics import (DC0, FLIGHT, G0, K0, RENORMALISE, T0, THR, TS, WARM, Y0, Y1, frame_ends,
                                        commit_step, dp_attempt, finish_row, first_crossing, FLY_ATTEMPTS, load_state,
                                        probe_rhs, smooth_step, state_finite, step_size)
from systems.deployment.events import drop_snapshots_after, escaping, record_snapshots, trace_step, locate_event

_clear = clearance.cpu
_dp = dp_attempt.cpu
_commit = commit_step.cpu
_finish = finish_row.cpu
_load = load_state.cpu
_fin = state_finite.cpu
_rhs = probe_rhs.cpu
_next = step_size.cpu
_locate = locate_event.cpu
_smooth = smooth_step.cpu
_NONFINITE = np.int8(Reason.NONFINITE_STATE)
_UNDERFLOW = np.int8(Reason.STEP_UNDERFLOW)
_WHICH_ALL = np.int64(0)
_PHASE_FLY = float(DeployPhase.FLY)
_snaps = record_snapshots.cpu
_drop_snaps = drop_snapshots_after.cpu
_trace = trace_step.cpu
_escaping = escaping.cpu
_cross_t = first_crossing.cpu


#: How far below the surface [bounding radii] a vertex may reach within one flight step, unseen by
#: the event function at the step's ends (the step limit, :data:`flight_reach`).
REACH_SLACK = 0.25


def _travel_time(d, b, a):
    """The longest time t ≥ 0 over which a point moving at speed ≤ b [m/s] with acceleration ≤ a
    [m/s²] travels at most d [m]: the root of ``b t + a t²/2 = d``
    (:data:`~systems.deployment.physics.first_crossing` of ``−d``), 0 for d ≤ 0, inf when it does
    not move."""
    if not (d > 0.0):
        return 0.0
    return _cross_t(-d, b, a, 0.0)


travel_time = dual(_travel_time)
_travel = travel_time.cpu


def _flight_reach(w, g0, dc0, inv_lip, bound_r):
    """The longest flight step [s] from Y0 over which no vertex can get further than
    :data:`REACH_SLACK` bounding radii below the terrain (module docstring), taking the larger of
    two bounds on a vertex's travel over t, each with the speed |v| and rate |ω| at Y0 and the
    acceleration |a| of K0 = f(Y0):

    * the vertices': ``|v| t + |a| t²/2 + r|ω| t ≤ g0/L + slack``, g0 the event function at Y0
      (the smallest vertex clearance);
    * the CoM's: every vertex lies within r of the CoM and d is L-Lipschitz, so
      ``min_v d(x_v) ≥ d(CoM) − L r``, and ``|v| t + |a| t²/2 ≤ d(CoM)/L − r + slack`` suffices. The
      rotation does not enter it: a tumbling probe well clear of the surface steps as far as its
      CoM may go, where the first bound let a spin of 0.4 rad/s cut its steps to a few seconds.
    """
    vs = math.sqrt(w[Y0 + S_V] ** 2 + w[Y0 + S_V + 1] ** 2 + w[Y0 + S_V + 2] ** 2)
    ws = bound_r * math.sqrt(w[Y0 + S_W] ** 2 + w[Y0 + S_W + 1] ** 2 + w[Y0 + S_W + 2] ** 2)
    acc = math.sqrt(w[K0 + S_V] ** 2 + w[K0 + S_V + 1] ** 2 + w[K0 + S_V + 2] ** 2)
    slack = REACH_SLACK * bound_r
    tv = _travel(max(g0, 0.0) * inv_lip + slack, vs + ws, acc)
    tc = _travel(dc0 * inv_lip - bound_r + slack, vs, acc)
    return max(tv, tc)


flight_reach = dual(_flight_reach)
_reach = flight_reach.cpu


def _fly_rows(j0, j1, rows, t_ends, work, probes, geo, target, cs, tt, lim, out):
    """Advance each fly row ``i = rows[j]``, ``j0 <= j < j1``, past its frame end ``t_ends[i]`` (never
    past ``t_cap``), to an event, an escape, or ``max_steps`` steps (module docstring). A span kernel
    (:func:`ecs.kernels.launch_span`): the CPU calls it once for a worker's rows, a GPU thread for
    its one row. ``probes``, ``target``, ``lim``, ``out``: :mod:`systems.deployment.records`."""
    status, reason, phase, rtime, step = probes.status, probes.reason, probes.phase, probes.time, probes.step
    pos, vel, att, om = probes.position, probes.velocity, probes.attitude, probes.omega
    mass, inertia, jinv, shape = probes.mass, probes.inertia, probes.jinv, probes.shape
    distance, max_pen = probes.distance, probes.max_penetration
    ga, ta, ox, oy, oz = target
    rtol, atol, h_max, event_tol, contact_gap = lim.rtol, lim.atol, lim.h_max, lim.event_tol, lim.contact_gap
    inv_lip, max_steps, t_cap, escape_r, mu = lim.inv_lip, lim.max_steps, lim.t_cap, lim.escape_radius, lim.mu
    rec_dt, snap, save, trace, trace_n = out
    for j in range(j0, j1):
        i = rows[j]
        t_end = t_ends[i]
        w = work[i]
        vpos, shape_start, shape_kind, shape_radius = geo.vpos, geo.shape_start, geo.shape_kind, geo.shape_radius
        s = shape[i]
        v0 = shape_start[s]
        v1 = shape_start[s + 1]
        bound_r = shape_radius[s]
        sphere_r = bound_r if shape_kind[s] == 0 else 0.0
        body = ProbeBody(mass, inertia, jinv, vpos, sphere_r)
        t = rtime[i]
        if w[WARM] == 1.0:      # continued from the previous launch: Y0, K0 (FSAL), thr and g0 as left
            thr = w[THR]
            g0 = w[G0]
            dc0 = w[DC0]
        else:
            _load(i, w, pos, vel, att, om)
            w[TS] = t
            _rhs(i, w, Y0, K0, None, target, body, tt)
            g0, dc0 = _clear(w, Y0, ta, vpos, v0, v1, sphere_r, bound_r)
            thr = 0.0 if g0 > contact_gap else min(g0, 0.0) - contact_gap
        w[WARM] = 0.0
        h = step[i]
        if not (h > 0.0):
            h = min(h_max, 1.0)
        n = 0
        dist = distance[i]
        while t < t_end and n < max_steps:
            hh = min(min(h, h_max), t_cap - t)    # the frame end cuts no step: recording changes nothing
            reach = _reach(w, g0, dc0, inv_lip, bound_r)
            if reach < hh:
                hh = reach
            hs = _smooth(ga, w, hh)          # end on a voxel cell face rather than step across it
            face = hs < hh
            hh = hs
            w[T0] = t
            if rec_dt > 0.0:
                _snaps(i, w, t, hh, None, FLIGHT, target, body, tt, rtol, atol,
                       rec_dt, snap, save, _PHASE_FLY)
            err = _dp(i, w, hh, None, FLIGHT, target, body, tt, rtol, atol)
            n += 1
            if not (err <= 1.0):
                if not math.isfinite(err) or hh < 1e-12 * max(1.0, abs(t)):
                    status[i] = Status.FAILED
                    reason[i] = _NONFINITE if not math.isfinite(err) else _UNDERFLOW
                    phase[i] = DeployPhase.ENDED
                    break
                h = _next(hh, err)
                continue
            if not _fin(w, Y1):
                status[i] = Status.FAILED
                reason[i] = _NONFINITE
                phase[i] = DeployPhase.ENDED
                break
            g1, dc1 = _clear(w, Y1, ta, vpos, v0, v1, sphere_r, bound_r)
            if g1 <= thr:
                x0, y0, z0 = w[Y0], w[Y0 + 1], w[Y0 + 2]
                a, fa = _locate(i, w, hh, (g0 - thr, g1 - thr, thr), _WHICH_ALL, FLIGHT, target, body,
                                (v0, v1, bound_r), cs, rtol, atol, event_tol, contact_gap)
                dx = w[Y0] - x0
                dy = w[Y0 + 1] - y0
                dz = w[Y0 + 2] - z0
                dist += math.sqrt(dx * dx + dy * dy + dz * dz)
                t += a
                _drop_snaps(i, t, rec_dt, snap)
                if trace.shape[1] > 0:
                    _trace(i, t, a, _PHASE_FLY, w, Y0, trace, trace_n)
                pen = -(fa + thr)
                if pen > max_pen[i]:
                    max_pen[i] = pen
                phase[i] = DeployPhase.COLLIDE
                break
            t, dist = _commit(w, t, hh, t_cap, dist, RENORMALISE)
            if trace.shape[1] > 0:
                _trace(i, t, hh, _PHASE_FLY, w, Y0, trace, trace_n)
            g0 = g1
            dc0 = dc1
            hn = _next(hh, err)
            h = max(hn, h) if face else hn   # a step ended on a face keeps the proposal it was cut from
            if escape_r > 0.0 and _escaping(w[Y0], w[Y0 + 1], w[Y0 + 2], w[Y0 + S_V], w[Y0 + S_V + 1],
                                            w[Y0 + S_V + 2], ox, oy, oz, mu, escape_r):
                break                        # EndProbes ends it as ESCAPED at this step
        if phase[i] == DeployPhase.FLY and status[i] == Status.RUNNING:
            w[WARM] = 1.0
            w[THR] = thr
            w[G0] = g0
            w[DC0] = dc0
        w[FLY_ATTEMPTS] += n
        _finish(i, w, t, h, dist, pos, vel, att, om, rtime, step, distance)


fly_rows = dual(_fly_rows, inline=False, nogil=True)




class FlyProbes(KernelMode):
    """FLY phase: advance every flying probe row past the frame end or to its next event.

    Owned and launched by :class:`systems.deployment.loop.DeploymentLoop` (which passes the shared
    per-row context); ``process`` is not used directly by the world's frame loop.
    """

    code = int(DeployPhase.FLY)
    key = "fly"
    dense_output = True
    reads = ("probe_phase",)
    writes = ("body_position", "body_velocity", "body_attitude", "body_omega")

    @staticmethod
    def launch_args(ctx, rows: np.ndarray, t_ends) -> tuple:
        """The fly kernel's arguments after its row span (:meth:`KernelMode.advance`)."""
        return (rows, frame_ends(ctx.table, t_ends), *ctx.row_args(), ctx.tt["fly_rows"], ctx.limits(), ctx.output())
