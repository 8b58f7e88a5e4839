"""COLLIDE phase: impulsive collisions of probes with the terrain, and entry into contact motion.

Seed 004 §2.5.2 (Stronge collisions, :mod:`systems.probe_contact.collision`), §2.5.3 (entering contact motion)
and §2.7.3 (the "collision" kernel). A row is in :attr:`DeployPhase.COLLIDE` when the fly kernel
(or the contact kernel) has stopped it at the time a vertex reached the surface.

For each such row, at its current state:

1. **Touching vertices**: every vertex within ``contact_gap`` of the terrain, with the terrain
   normal there (a sphere touches at ``−R N`` below its centre). The rotating frame needs no extra
   term: velocities relative to the target frame are the velocities relative to the (static)
   surface.
2. **Contact entry** (§2.5.3): if the most-approaching touching vertex comes in slower than
   ``contact_speed`` and the free normal acceleration (gravity, Coriolis, centrifugal and the
   rigid-body terms, no contact force) of some touching vertex points into the surface, the
   collision is resolved with e = 0 (a final, plastic collision) and the row enters CONTACT;
   otherwise it is resolved with the pair's restitution (regolith modulation included) and the row
   flies on. The seed states the test for its one contact point; with several touching, the
   most-approaching one alone decided before, and a box resting on a corner whose edge vertex
   slid against an overhang of the rock texture (free normal acceleration outwards there) bounced
   off with nothing to resolve, fell ``contact_gap`` in flight onto its corner, entered contact,
   and did so again every 1.8 s without ever resting 60 s (TIMED_OUT after 20,000 collisions).
3. **Resolution**: the multi-vertex policy of :data:`systems.probe_contact.collision.vertex_impacts_row`
   (most-approaching vertex first, repeat; each single impact Stronge's, so kinetic energy never
   rises). A bounce's slip is integrated to :data:`BOUNCE_RTOL` (1e-10) of the contact speed, as
   flight is; a contact entry's to ``contact_rtol`` (1e-5), the tolerance of the contact motion
   that steps on from what it leaves (at the 2 mm/s an entry is slower than, 2e-8 m/s, below
   contact motion's ``contact_atol``). A bounce takes each vertex's impact normal by type (eq 2.33: the surface normal at a
   corner, the surface normal less its component along the edge at an edge vertex, the negated face
   normal at a face vertex). The final e = 0 collision of a contact entry takes the surface normal
   ``N = ∇d/|∇d|`` at every touching vertex instead: §2.5.3 performs it "such that the normal
   contact point velocity v₃ = 0" before contact motion starts, and contact motion holds
   ``N·v`` along that normal (eq 2.92) and sends a contact sinking along it back here
   (:data:`systems.deployment.contact.SINK_SPEED`). With eq 2.33's normals an edge vertex sliding
   along its own edge into a surface that leans along the edge (the rock texture at level ≥ 1
   tessellation, measured 8°: 8e-5 m/s in along N, 0 along the edge normal), or a face vertex on
   a surface tilted against its face, approached along N while the entry collision found nothing
   to resolve, and contact motion sent the row back at the same instant, pass after pass, until
   the deployment loop's pass guard failed it (40 of 100 ``deploy-cube`` samples at level 1 on
   ``rocks=psr``). Along N the entry leaves every touching vertex at ``N·v ≥ −APPROACH_TOL``, so
   contact motion starts without a sinking contact: each contact-entry pass makes progress.
   A bounce whose eq 2.33 normals resolve nothing while a touching vertex approaches along N
   (a face vertex sliding into the flank of a rock-texture bump at 17 mm/s, measured) is resolved
   along N as well: otherwise flight carried the vertex ``contact_gap`` deeper, the collision
   again resolved nothing, and only the projection below held the probe up, every 11 ms.
4. **Projection**: vertices found below the surface (flight sinks up to ``contact_gap`` after a
   launch that starts touching; contact motion's held vertices as much) are lifted out by
   :data:`systems.deployment.events.lift_out` (every vertex, a Newton step on the active
   constraints), so that successive phase starts never ratchet the probe deeper; the depth of the
   deepest vertex is recorded (``probe_max_penetration``).
5. **Records**: one event per collision (:func:`declare_collision_events`), the first-impact time,
   the number of collisions and of bounces (collisions after which the probe flew on).
"""

from __future__ import annotations

import math

import numpy as np

from components.contact_params import PAIR_E, PAIR_FIELD_COUNT, PAIR_REGOLITH
from components.deploy import DeployPhase
from components.probe import VertexType
from components.status import Reason, Status
from ecs import Phase, System
from ecs.kernels import dual, kernel_tuple, listed, set_rows, to_backend
from ecs.attitude import cross_call, quat_rotate_call, quat_rotate_inverse_call
from systems.probe_contact.collision import (MULTI_IMPACT_FAILED, WORK_SIZE as IMPACT_WORK_SIZE, kinetic_body,
                                             vertex_impacts_row)
from systems.deployment.geometry import terrain_at
from systems.deployment.physics import K0, THR, TS, WARM, Y0, load_state, probe_rhs
from systems.deployment.events import lift_out
from systems.deployment.records import (COLLISION_EVENT_FIELDS, EVENT_BOUNCE, EVENT_CONTACT_ENTRY, S_V, S_W,
                                        CollideScratch, CollisionEvents, EventLog, ProbeBody)

_i = np.int64
_cross = cross_call.cpu
_rot = quat_rotate_call.cpu
_rot_inv = quat_rotate_inverse_call.cpu
_load = load_state.cpu
_rhs = probe_rhs.cpu
_tat = terrain_at.cpu
_lift = lift_out.cpu
_impacts = vertex_impacts_row.cpu
_kin = kinetic_body.cpu
_IMPACT_STEP_LIMIT = np.int8(Reason.IMPACT_STEP_LIMIT)
#: lift_out's flag as a typed constant (a Python bool literal compiles a specialisation of its own)
_ALL_VERTICES = np.bool_(False)

#: A touching vertex approaches when its normal velocity is below −APPROACH_TOL [m/s]: after an
#: impact the resolved vertex is left at ~1e-13 m/s, which must not start another impact.
APPROACH_TOL = 1e-8

#: Slip-integration step cap of one impact: a slow approach to stick can take ~2e4 steps (an
#: icosahedron corner, measured 17,333); beyond the cap the impact fails and the row is FAILED.
IMPACT_MAX_STEPS = np.int64(100_000)

#: Relative tolerance of a bounce's slip integration (of the contact speed |v_c|, as flight's
#: DP5(4) steps at seed §2.7.1's 1e-10). A contact entry's final e = 0 collision is integrated to
#: the contact motion's ``contact_rtol`` instead: what it leaves is stepped on at that tolerance.
BOUNCE_RTOL = 1e-10

def declare_collision_events(events) -> None:
    """Declare :data:`COLLISION_EVENT_FIELDS` on a world's :class:`ecs.events.EventLog`."""
    for name, (shape, dtype, unit, doc, *flags) in COLLISION_EVENT_FIELDS.items():
        events.declare(name, shape=shape, dtype=dtype, unit=unit, doc=doc, flags=flags[0] if flags else None)


def _collide_rows(j0, j1, rows, work, probes, geo, target, cs, tt, iwork, scratch, lim, log):
    """Resolve the pending collision of each collide row ``i = rows[j]``, ``j0 <= j < j1`` (module
    docstring). A span kernel (:func:`ecs.kernels.launch_span`). ``probes``, ``target``, ``scratch``,
    ``lim``, ``log``: :mod:`systems.deployment.records`; ``iwork``: the impacts' work rows."""
    status, reason, phase, rtime, sample = probes.status, probes.reason, probes.phase, probes.time, probes.sample
    pos, vel, att, om = probes.position, probes.velocity, probes.attitude, probes.omega
    mass, inertia, jinv, shape = probes.mass, probes.inertia, probes.jinv, probes.shape
    pair, rolling_radius = probes.pair, probes.rolling_radius
    first_impact, collisions, bounces = probes.first_impact, probes.collisions, probes.bounces
    max_pen, ta = probes.max_penetration, target.ta
    touch, normal, cpair, sphere_vert, sphere_type, sphere_dir, surface_type, ones3, mstatus, mcount = scratch
    contact_gap, contact_speed, wstar, max_iter = lim.contact_gap, lim.contact_speed, lim.wstar, lim.max_iter
    ev, ev_count, ev_overflow = log
    entry_rtol = lim.contact_rtol
    mout = (mstatus, mcount)
    for j in range(j0, j1):
        i = rows[j]
        w = work[i]
        vpos, vtype, vdir = geo.vpos, geo.vtype, geo.vdir
        shape_start, shape_kind, shape_radius = geo.shape_start, geo.shape_kind, geo.shape_radius
        s = shape[i]
        v0 = shape_start[s]
        v1 = shape_start[s + 1]
        sphere_r = shape_radius[s] if shape_kind[s] == 0 else 0.0
        body = ProbeBody(mass, inertia, jinv, vpos, sphere_r)
        nv = 1 if sphere_r > 0.0 else v1 - v0
        q0, q1, q2, q3 = att[i, 0], att[i, 1], att[i, 2], att[i, 3]
        x, y, z = pos[i, 0], pos[i, 1], pos[i, 2]
        vx, vy, vz = vel[i, 0], vel[i, 1], vel[i, 2]
        wx, wy, wz = om[i, 0], om[i, 1], om[i, 2]
        # free accelerations (no contact): CoM at K0 + S_V, angular at K0 + S_W (eqs 2.2, 2.5)
        _load(i, w, pos, vel, att, om)
        w[WARM] = 0.0           # the collision changes the state: a fly launch after it starts afresh
        w[THR] = 0.0            # and a contact phase after it with contact motion's event threshold at 0
        w[TS] = rtime[i]
        _rhs(i, w, Y0, K0, None, target, body, tt)
        best = -1
        bvn = 0.0
        ban = 0.0
        deep = 0.0
        for k in range(nv):
            if sphere_r > 0.0:
                dc, gx, gy, gz = _tat(ta, x, y, z)
                gn = math.sqrt(gx * gx + gy * gy + gz * gz)
                nx, ny, nz = gx / gn, gy / gn, gz / gn
                rx, ry, rz = _rot_inv(q0, q1, q2, q3, -sphere_r * nx, -sphere_r * ny, -sphere_r * nz)
                sphere_vert[i, 0, 0], sphere_vert[i, 0, 1], sphere_vert[i, 0, 2] = rx, ry, rz
                d = dc - sphere_r
            else:
                rx, ry, rz = vpos[v0 + k, 0], vpos[v0 + k, 1], vpos[v0 + k, 2]
                tx, ty, tz = _rot(q0, q1, q2, q3, rx, ry, rz)
                d, gx, gy, gz = _tat(ta, x + tx, y + ty, z + tz)
                gn = math.sqrt(gx * gx + gy * gy + gz * gz)
                nx, ny, nz = gx / gn, gy / gn, gz / gn
            normal[i, k, 0], normal[i, k, 1], normal[i, k, 2] = nx, ny, nz
            touch[i, k] = 1 if d <= contact_gap else 0
            if touch[i, k] == 0:
                continue
            if d < deep:
                deep = d
            # contact-point velocity and free acceleration, target frame
            ux, uy, uz = _cross(wx, wy, wz, rx, ry, rz)
            px, py, pz = _rot(q0, q1, q2, q3, ux, uy, uz)
            vn = (vx + px) * nx + (vy + py) * ny + (vz + pz) * nz
            if sphere_r > 0.0:
                # the sphere's contact point is geometric, not material: whether the surface is
                # needed is the centre's free acceleration along n. The material point under a
                # rolling sphere adds ω×(ω×r), ω²ρ outward, which at low gravity outweighs g and
                # would log every step of a roll as a bounce (docs/design.md §8.16)
                ax, ay, az = 0.0, 0.0, 0.0
            else:
                ax, ay, az = _cross(w[K0 + S_W], w[K0 + S_W + 1], w[K0 + S_W + 2], rx, ry, rz)
                cx, cy, cz = _cross(wx, wy, wz, ux, uy, uz)
                ax, ay, az = _rot(q0, q1, q2, q3, ax + cx, ay + cy, az + cz)
            an = (w[K0 + S_V] + ax) * nx + (w[K0 + S_V + 1] + ay) * ny + (w[K0 + S_V + 2] + az) * nz
            if an < ban:
                ban = an
            if best < 0 or vn < bvn:
                best = k
                bvn = vn
        for k in range(nv, touch.shape[1]):
            touch[i, k] = 0
        if best < 0:  # nothing touches any more (drift): fly on
            phase[i] = DeployPhase.FLY
            continue
        enter = -bvn < contact_speed and ban < 0.0   # some touching vertex would sink without the surface
        for c in range(PAIR_FIELD_COUNT):
            cpair[i, c] = pair[i, c]
        if enter:
            cpair[i, PAIR_E] = 0.0
            cpair[i, PAIR_REGOLITH] = 0.0
        e0 = _kin(mass[i], inertia[i], vx, vy, vz, wx, wy, wz)
        # of the impacts (vertex_impacts_row): a bounce's slip integrated to 1e-10 of the contact speed,
        # a contact entry's to contact motion's own relative tolerance (module docstring, item 3)
        settings = (wstar, entry_rtol if enter else BOUNCE_RTOL, IMPACT_MAX_STEPS, max_iter, APPROACH_TOL)
        if sphere_r > 0.0:
            _impacts(i, iwork, mass, inertia, att, vel, om, (sphere_vert[i], sphere_type, sphere_dir), normal, touch,
                     cpair, (ones3, rolling_radius[i]), settings, mout)
        elif enter:   # the final e = 0 collision acts along the normals contact motion will hold (§2.5.3)
            _impacts(i, iwork, mass, inertia, att, vel, om, (vpos[v0:v1], surface_type[:nv], vdir[v0:v1]), normal,
                     touch, cpair, (ones3, rolling_radius[i]), settings, mout)
        else:         # a bounce: the impact normal by vertex type (eq 2.33)
            _impacts(i, iwork, mass, inertia, att, vel, om, (vpos[v0:v1], vtype[v0:v1], vdir[v0:v1]), normal, touch,
                     cpair, (ones3, rolling_radius[i]), settings, mout)
            if mstatus[i] != MULTI_IMPACT_FAILED and mcount[i] == 0 and bvn < -APPROACH_TOL:
                # nothing approaches along eq 2.33's normals, yet a vertex approaches along N (a face
                # or edge vertex sliding into a terrain feature's flank): the bounce acts along N, so
                # that flight does not carry it deeper (module docstring)
                _impacts(i, iwork, mass, inertia, att, vel, om, (vpos[v0:v1], surface_type[:nv], vdir[v0:v1]),
                         normal, touch, cpair, (ones3, rolling_radius[i]), settings, mout)
        mstat = mstatus[i]
        count = mcount[i]
        if mstat == MULTI_IMPACT_FAILED:
            status[i] = Status.FAILED
            reason[i] = _IMPACT_STEP_LIMIT
            phase[i] = DeployPhase.ENDED
            continue
        if deep < 0.0:   # project out of the terrain (no penetration ratchet across phase switches)
            pen = _lift(w, Y0, ta, vpos, v0, v1, sphere_r, cs.act, cs.slot_vertex, i, _ALL_VERTICES)
            if pen > max_pen[i]:
                max_pen[i] = pen
            pos[i, 0], pos[i, 1], pos[i, 2] = w[Y0], w[Y0 + 1], w[Y0 + 2]
        e1 = _kin(mass[i], inertia[i], vel[i, 0], vel[i, 1], vel[i, 2], om[i, 0], om[i, 1], om[i, 2])
        t = rtime[i]
        if count > 0 or enter:
            collisions[i] += 1
            if not (first_impact[i] == first_impact[i]):   # NaN: first one
                first_impact[i] = t
            sm = sample[i]
            slot = ev_count[sm]
            if slot < ev.time.shape[1]:
                if sphere_r > 0.0:
                    rx, ry, rz = sphere_vert[i, 0, 0], sphere_vert[i, 0, 1], sphere_vert[i, 0, 2]
                    vt = 0
                    vi = -1
                else:
                    rx, ry, rz = vpos[v0 + best, 0], vpos[v0 + best, 1], vpos[v0 + best, 2]
                    vt = vtype[v0 + best]
                    vi = best
                tx, ty, tz = _rot(q0, q1, q2, q3, rx, ry, rz)
                ux, uy, uz = _cross(wx, wy, wz, rx, ry, rz)
                px, py, pz = _rot(q0, q1, q2, q3, ux, uy, uz)
                cvx, cvy, cvz = vx + px, vy + py, vz + pz
                sp = math.sqrt(cvx * cvx + cvy * cvy + cvz * cvz)
                ang = math.degrees(math.asin(min(1.0, max(-1.0, -bvn / sp)))) if sp > 0.0 else 90.0
                ev.time[sm, slot] = t
                ev.kind[sm, slot] = EVENT_CONTACT_ENTRY if enter else EVENT_BOUNCE
                ev.vertex[sm, slot] = vi
                ev.vertex_type[sm, slot] = vt
                ev.position[sm, slot, 0], ev.position[sm, slot, 1], ev.position[sm, slot, 2] = x, y, z
                ev.point[sm, slot, 0], ev.point[sm, slot, 1], ev.point[sm, slot, 2] = x + tx, y + ty, z + tz
                ev.normal[sm, slot, 0] = normal[i, best, 0]
                ev.normal[sm, slot, 1] = normal[i, best, 1]
                ev.normal[sm, slot, 2] = normal[i, best, 2]
                ev.impact_angle[sm, slot] = ang
                ev.velocity_before[sm, slot, 0], ev.velocity_before[sm, slot, 1], ev.velocity_before[sm, slot, 2] = vx, vy, vz
                ev.velocity_after[sm, slot, 0], ev.velocity_after[sm, slot, 1], ev.velocity_after[sm, slot, 2] = vel[i, 0], vel[i, 1], vel[i, 2]
                ev.omega_before[sm, slot, 0], ev.omega_before[sm, slot, 1], ev.omega_before[sm, slot, 2] = wx, wy, wz
                ev.omega_after[sm, slot, 0], ev.omega_after[sm, slot, 1], ev.omega_after[sm, slot, 2] = om[i, 0], om[i, 1], om[i, 2]
                ev.energy_before[sm, slot] = e0
                ev.energy_after[sm, slot] = e1
                ev.vertices_resolved[sm, slot] = count
                ev_count[sm] = slot + 1
            else:
                ev_overflow[sm] = 1
        if enter:
            phase[i] = DeployPhase.CONTACT
        else:
            if count > 0:
                bounces[i] += 1
            phase[i] = DeployPhase.FLY


collide_rows = dual(_collide_rows, inline=False, nogil=True)




class CollideProbes(System):
    """COLLIDE phase: resolve the pending collision of every row in that phase (module docstring).

    Launched by :class:`systems.deployment.loop.DeploymentLoop`.
    """

    phase = Phase.EVENT
    reads = ("probe_phase", "body_position", "body_attitude")
    writes = ("body_position", "body_velocity", "body_omega")

    def reset_rows(self, rows: np.ndarray) -> None:
        """Clear the per-row impact scratch of ``rows`` (new samples in a streaming active set)."""
        for a in (self.iwork, self.touch, self.normal, self.cpair, self.sphere_vert, self.status, self.count):
            set_rows(a, rows, 0)

    def bind_context(self, ctx) -> None:
        """Size the per-row impact scratch (on the device on the GPU backend)."""
        n = ctx.table.row_count
        kmax = ctx.max_vertices
        (self.iwork, self.touch, self.normal, self.cpair, self.sphere_vert, self.sphere_type, self.sphere_dir,
         self.surface_type, self.ones3, self.status, self.count) = to_backend(ctx.backend, (
            np.zeros((n, IMPACT_WORK_SIZE)), np.zeros((n, kmax), np.int8), np.zeros((n, kmax, 3)),
            np.zeros((n, PAIR_FIELD_COUNT)), np.zeros((n, 1, 3)), np.zeros(1, np.int8), np.zeros((1, 3)),
            np.zeros(kmax, np.int8),        # surface_type: VERTEX_CORNER, eq 2.33's normal is the surface's
            np.ones(3), np.zeros(n, np.int64), np.zeros(n, np.int64)))
        ev = ctx.events
        self.scratch = CollideScratch(self.touch, self.normal, self.cpair, self.sphere_vert, self.sphere_type,
                                      self.sphere_dir, self.surface_type, self.ones3, self.status, self.count)
        self.log = EventLog(CollisionEvents(*(ev.arrays[f] for f in COLLISION_EVENT_FIELDS)), ev.count, ev.overflow)
        if ctx.backend == "gpu":
            self.scratch, self.log = kernel_tuple(self.scratch), kernel_tuple(self.log)

    def resolve(self, ctx, rows) -> None:
        """Run the collision kernel over ``rows`` (indices of COLLIDE rows: an index array, or on the
        GPU a :class:`ecs.kernels.DeviceRows`)."""
        if len(rows) == 0:
            return
        ctx.launch("collide", rows, *self.launch_args(ctx, listed(rows)))

    def launch_args(self, ctx, rows: np.ndarray) -> tuple:
        """The collision kernel's arguments after its row span (:meth:`resolve`)."""
        return (rows, *ctx.row_args(), ctx.tt["collide_rows"], self.iwork, self.scratch, ctx.limits(), self.log)

    def process(self, frame) -> None:  # pragma: no cover - driven by DeploymentLoop
        raise RuntimeError("CollideProbes is launched by systems.deployment.loop.DeploymentLoop")
