"""A straightforward scipy reference for probe deployment (the peer of ``tumble bench deploy``).

One trajectory at a time, in plain Python: the rotating-frame equations of motion of
:mod:`systems.deployment.physics` (seed 004 eqs 2.2–2.5) written again in numpy/float arithmetic and
integrated with :func:`scipy.integrate.solve_ivp`; gravity through the sources' numpy API
(:func:`systems.gravity.kernels.acceleration`), the terrain through :func:`systems.terrain.sdf.eval_terrain`; collisions
through the numpy API :func:`systems.probe_contact.surface_impacts.resolve_impacts` (one single-vertex Stronge impact
per call); contact forces through the row kernel :func:`systems.probe_contact.contact_motion.contact_forces_rows`
called for one row. None of the engine's phase kernels (fly / collide / contact / end) is used:
this module re-implements the phase logic of :mod:`systems.deployment.loop` the way one would write it
without the project, so that the benchmark compares like with like and a test can hold the
engine against it.

Phases (criteria and thresholds from :class:`components.deploy.DeploySettings`)
------------------------------------------------------------------------------
* **Flight**: ``solve_ivp(method="DOP853", rtol=settings.rtol (1e-10), atol=settings.atol)``
  with a terminal event on the *clearance* (smallest terrain distance over the probe's vertices;
  while the CoM is further than ``2 r_bound + 1 m`` from the surface, the lower bound
  ``d(CoM) − r_bound``), crossing from above. As in the engine, a flight that starts touching
  (clearance ≤ ``contact_gap``: after a collision or leaving contact) uses the threshold
  ``min(clearance, 0) − contact_gap`` instead of 0, so a probe that separates is not caught again
  at once. The arc is cut into ``solve_ivp`` calls of at most
  ``½ (max(clearance, 0) + r_bound / 4) / (|v| + r_bound |ω|)`` seconds, so the calls (and the
  steps inside them) shrink geometrically as the probe nears the surface: the engine bounds
  every step by ``(clearance + r_bound / 4) / speed`` so that no vertex can pass through a thin
  feature unseen, and this is that rule applied per call (a dozen calls per descent). A second
  terminal event at ``|x| = escape_radius`` (outwards) applies the escape test. solve_ivp locates
  events by ``brentq`` on the dense output (to ~1e-12 s); the engine stops up to ``event_tol``
  (1e-6 s) before the crossing. Beyond the escape radius the test is also repeated at least every
  ``h_max`` (the engine tests every frame). DOP853 rather than RK45 because it is the faster scipy
  method here (RK45 at the same tolerance: 1.1–2× the wall time per deploy-cube trajectory).
* **Collision** (at an event): vertices within ``contact_gap`` touch; with the most-approaching
  one, contact entry (§2.5.3) when its approach speed is below ``contact_speed`` and its free
  normal acceleration points into the surface (then e = 0 and contact motion follows). The
  multi-vertex policy: resolve the most-approaching touching vertex with ``resolve_impacts``
  (normal = terrain normal at the vertex; the cube's vertices are corners, eq 2.33), recompute
  every touching vertex's normal velocity, repeat until none approaches faster than
  ``max(1e-12, 1e-9 × the initial largest approach speed)`` (cap ``max_collision_iterations``).
  Then the deepest touching vertex, if below the surface, is lifted back along its normal.
* **Contact motion**: ``solve_ivp(method="RK45", rtol=contact_rtol, atol=contact_atol)`` (RK45 is
  the same Dormand–Prince 5(4) pair as the engine's) over segments of ``contact_h_max`` (the
  engine's largest contact step) during which the active set (vertices within ``contact_gap``
  at the segment start) is frozen, exactly as the engine freezes it per step. The right-hand side adds the contact force and
  torque of ``contact_forces_rows`` for that set, with the rotating frame folded into its inputs
  (free CoM acceleration g − 2Ω×v − Ω×(Ω×x), and the external torque that makes its free angular
  acceleration eq 2.5's). Normal rates Ṅ (eq 2.104) by a central difference of the terrain
  gradient 1 mm along the vertex velocity. A terminal event catches a free vertex reaching the
  surface (a new collision). At every segment start: no vertex within the gap → flight; an
  active vertex sinking faster than ``SINK_SPEED`` (1e-5 m/s) → a (plastic) collision; no contact
  carrying a normal force → flight; the rest test. After every segment: the deepest active vertex
  is lifted back to the surface along its normal (the engine's drift projection). When
  ``solve_ivp`` cannot make progress (the force law is only piecewise smooth) one classical RK4
  step of ``contact_h_min`` is taken instead (the engine accepts ``contact_h_min`` steps whatever
  their error estimate); counted in ``forced_steps``.
* **End states**: SETTLED after ``settle_hold`` s of |v| < ``settle_speed`` and |ω| < ``settle_rate``
  in contact (tested at segment starts; settling time = start of that interval; the interval
  restarts whenever the probe flies); ESCAPED beyond ``escape_radius`` with positive two-body
  energy moving outwards; TIMED_OUT at ``t_cap``; FAILED when scipy fails in flight or an impact
  does not resolve.

The reference supports what ``deploy-cube`` needs: polyhedral probes whose vertices are corners,
no regolith restitution, no rolling resistance (it says so rather than guessing otherwise).
"""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass, field

import numpy as np
from scipy.integrate import solve_ivp

from components.contact_params import PAIR_CRR, PAIR_E, PAIR_F, PAIR_REGOLITH
from components.deploy import DeploySettings, DeployTarget, ProbeContact
from components.rigid import MassProps, RigidState
from components.probe import ProbeShape, ProbeShapes, ShapeKind
from components.status import Status
from systems.probe_contact.collision import IMPACT_RESOLVED
from systems.probe_contact.surface_impacts import resolve_impacts
from systems.probe_contact.contact_motion import CONTACT_ACTIVE, contact_forces_rows, contact_work_size
from systems.probe_contact.records import ContactSet
from systems.gravity.kernels import acceleration, potential
from systems.terrain.sdf import eval_terrain

__all__ = ["ReferenceProbe", "ReferenceResult", "run_reference", "sample_states", "single_numba_thread"]

#: Central-difference step of the normal rate (eq 2.104) [m].
NORMAL_RATE_STEP = 1e-3
#: Contact slots solved together (the engine's CONTACT_SLOTS).
MAX_SLOTS = 8
#: An active vertex sinking faster than this [m/s] at a contact segment's start goes back through a
#: collision (the engine's ``systems.deployment.contact.SINK_SPEED``: the force law holds the normal
#: acceleration at zero, so a normal velocity left by round-off would otherwise sink it).
SINK_SPEED = 1e-5
#: Slip-integration step cap of one Stronge impact (the engine's collide kernel passes 100 000).
IMPACT_MAX_STEPS = 100_000


# ------------------------------------------------------------------------------------ small math
def _cross(a0, a1, a2, b0, b1, b2):
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


def _rotation_matrix(q) -> np.ndarray:
    """Body → target rotation matrix of a (normalised here) scalar-first quaternion."""
    w, x, y, z = q / math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


@dataclass
class ReferenceResult:
    """Outcome of one reference trajectory (times in s, state in the target frame)."""

    status: int = int(Status.RUNNING)
    end_time: float = math.nan
    settle_time: float = math.nan
    first_impact_time: float = math.nan
    collisions: int = 0
    bounces: int = 0
    state: np.ndarray = field(default_factory=lambda: np.zeros(13))
    events: list = field(default_factory=list)     #: one dict per collision (time, kind, velocities)
    rhs_calls: int = 0
    ivp_calls: int = 0
    forced_steps: int = 0
    wall_s: float = 0.0


def polyhedral_probe(world, who: str = "the reference"):
    """A deployment world's one polyhedral probe: ``(entity, ProbeShapes, shape index, first vertex,
    end vertex)``; ``NotImplementedError`` saying what ``who`` covers otherwise."""
    pid = world.entity("probe")
    shapes = world.resource(ProbeShapes)
    sid = int(world.component(pid, ProbeShape).shape)
    if shapes.count != 1 or shapes.shape_kind[sid] != ShapeKind.POLYHEDRON:
        raise NotImplementedError(f"{who} covers one polyhedral probe shape")
    return pid, shapes, sid, int(shapes.shape_start[sid]), int(shapes.shape_start[sid + 1])


class ReferenceProbe:
    """The reference integrator for one probe shape over one target (module docstring).

    Args:
        target: the :class:`DeployTarget` (gravity source, terrain, rotation).
        settings: the :class:`DeploySettings` (the same tolerances and thresholds as the engine).
        vertices: [K, 3] probe vertices about the CoM [m], body axes (all corners).
        mass: [kg]; inertia: [3, 3] about the CoM, body axes [kg m²].
        pair: the probe–terrain row of :data:`components.contact_params.PAIR_FIELDS`.
        bounding_radius: [m].
        flight_method: solve_ivp method of flight ("DOP853" or "RK45").
    """

    def __init__(self, *, target: DeployTarget, settings: DeploySettings, vertices, mass: float, inertia, pair,
                 bounding_radius: float, flight_method: str = "DOP853"):
        self.target = target
        self.gravity = target.gravity
        self.terrain = target.terrain
        self.Omega = np.asarray(target.rotation, float)
        self.st = settings
        self.verts = np.ascontiguousarray(np.asarray(vertices, float).reshape(-1, 3))
        self.mass = float(mass)
        self.inertia = np.asarray(inertia, float).reshape(3, 3)
        self.jinv = np.linalg.inv(self.inertia)
        self.pair = np.asarray(pair, float)
        if self.pair[PAIR_REGOLITH] != 0.0 or self.pair[PAIR_CRR] != 0.0:
            raise NotImplementedError("the reference covers no regolith restitution and no rolling resistance")
        self.e = float(self.pair[PAIR_E])
        self.f = float(self.pair[PAIR_F])
        self.rb = float(bounding_radius)
        self.method = flight_method
        self.escape_radius = settings.escape_radius or 4.0 * _terrain_radius(target)
        # contact-force kernel buffers (one row)
        k = min(MAX_SLOTS, len(self.verts))
        self.slots = k
        self._cw = np.zeros((1, contact_work_size(k)))
        self._m1 = np.array([self.mass])
        self._I1 = np.ascontiguousarray(self.inertia[None])
        self._fric = np.full((1, k), self.f)
        self._rolling = np.zeros((1, 3))
        self._srad = np.zeros((1, k))
        self._calls = 0

    @classmethod
    def from_scene(cls, scene, **kw) -> "ReferenceProbe":
        """The reference for a deployment scene's probe (its resources and the probe's components)."""
        w = scene.world
        pid, shapes, sid, a, b = polyhedral_probe(w, "the reference")
        if np.any(shapes.vertex_type[a:b] != 0):
            raise NotImplementedError("the reference covers corner vertices only (eq 2.33 corner normal)")
        pm = w.component(pid, MassProps)
        pc = w.component(pid, ProbeContact)
        if pc.rolling_radius != 0.0:
            raise NotImplementedError("the reference covers no rolling resistance")
        return cls(target=w.resource(DeployTarget), settings=w.resource(DeploySettings, None) or DeploySettings(),
                   vertices=shapes.vertex_position[a:b], mass=pm.mass, inertia=pm.inertia, pair=pc.terrain_pair,
                   bounding_radius=float(shapes.shape_radius[sid]), **kw)

    # ------------------------------------------------------------------ equations of motion
    def _rates(self, y, F=(0.0, 0.0, 0.0), L=(0.0, 0.0, 0.0)) -> np.ndarray:
        """ẏ (eqs 2.2–2.5) with contact force F (target) [N] and torque L (body, about the CoM) [N m]."""
        self._calls += 1
        x0, x1, x2, v0, v1, v2, q0, q1, q2, q3, w0, w1, w2 = y
        o0, o1, o2 = self.Omega
        g = acceleration(self.gravity, y[:3]).reshape(3)
        c0, c1, c2 = _cross(o0, o1, o2, x0, x1, x2)
        cc0, cc1, cc2 = _cross(o0, o1, o2, c0, c1, c2)
        k0, k1, k2 = _cross(o0, o1, o2, v0, v1, v2)
        m = self.mass
        out = np.empty(13)
        out[0], out[1], out[2] = v0, v1, v2
        out[3] = g[0] + F[0] / m - 2.0 * k0 - cc0
        out[4] = g[1] + F[1] / m - 2.0 * k1 - cc1
        out[5] = g[2] + F[2] / m - 2.0 * k2 - cc2
        out[6] = 0.5 * (-q1 * w0 - q2 * w1 - q3 * w2)
        out[7] = 0.5 * (q0 * w0 + q2 * w2 - q3 * w1)
        out[8] = 0.5 * (q0 * w1 + q3 * w0 - q1 * w2)
        out[9] = 0.5 * (q0 * w2 + q1 * w1 - q2 * w0)
        # ω_S/N = ω + Rᵀ Ω (body); ω̇ = I⁻¹(L − ω_S/N × I ω_S/N) − ω_S/N × ω
        ws = np.array([w0, w1, w2]) + _rotation_matrix(y[6:10]).T @ self.Omega
        h = self.inertia @ ws
        gy = np.array(_cross(ws[0], ws[1], ws[2], h[0], h[1], h[2]))
        a = self.jinv @ (np.asarray(L, float) - gy)
        p = _cross(ws[0], ws[1], ws[2], w0, w1, w2)
        out[10], out[11], out[12] = a[0] - p[0], a[1] - p[1], a[2] - p[2]
        return out

    def free_accelerations(self, y):
        """Free (no contact) CoM acceleration (target) and angular acceleration (body)."""
        d = self._rates(y)
        return d[3:6], d[10:13]

    def jacobi(self, y) -> float:
        """Jacobi integral per unit mass [m²/s²] (``systems.deployment.physics.jacobi_integral``'s C)."""
        from systems.deployment.physics import jacobi_integral

        u = potential(self.gravity, y[:3]).reshape(())
        return float(jacobi_integral(y[:3], y[3:6], self.Omega, u))

    # ------------------------------------------------------------------ geometry
    def vertex_points(self, y) -> np.ndarray:
        """[K, 3] vertex positions, target frame."""
        return y[:3] + self.verts @ _rotation_matrix(y[6:10]).T

    def clearance(self, y) -> float:
        """Smallest vertex terrain distance (the CoM bound far from the surface) [m]."""
        dc = float(eval_terrain(self.terrain, y[None, :3])[0][0])
        if dc > 2.0 * self.rb + 1.0:
            return dc - self.rb
        return float(eval_terrain(self.terrain, self.vertex_points(y))[0].min())

    # ------------------------------------------------------------------ contact force
    def contact_wrench(self, y, active):
        """Contact force (target) [N], torque (body) [N m], per-slot CONTACT_* states for the frozen
        active vertex list ``active`` at state ``y`` (module docstring), and the free ẏ there."""
        k = self.slots
        q = y[6:10] / np.linalg.norm(y[6:10])
        R = _rotation_matrix(q)
        x, v, w = y[:3], y[3:6], y[10:13]
        free = self._rates(y)
        acc = free[3:6]
        I = self.inertia
        ws = w + R.T @ self.Omega
        tau = np.cross(w, I @ w) - np.cross(ws, I @ ws) - I @ np.cross(ws, w)
        na = len(active)
        r = self.verts[active]                                   # body
        p = x + r @ R.T                                          # target
        u = v + np.cross(w, r) @ R.T                             # vertex velocities, target
        sp = np.linalg.norm(u, axis=1)
        dirs = np.where(sp[:, None] > 0, u / np.where(sp > 0, sp, 1.0)[:, None], 0.0)
        pts = np.concatenate([p, p + NORMAL_RATE_STEP * dirs, p - NORMAL_RATE_STEP * dirs])
        _, grad = eval_terrain(self.terrain, pts)
        g0, gp, gm = grad[:na], grad[na:2 * na], grad[2 * na:]
        gn = np.linalg.norm(g0, axis=1)
        N = g0 / gn[:, None]
        hd = (gp - gm) * (sp / (2.0 * NORMAL_RATE_STEP * gn))[:, None]
        ndot = hd - np.sum(hd * N, axis=1)[:, None] * N
        act = np.zeros((1, k), np.int8)
        act[0, :na] = 1
        pts_b = np.zeros((1, k, 3))
        nrm = np.zeros((1, k, 3))
        nd = np.zeros((1, k, 3))
        pts_b[0, :na], nrm[0, :na], nd[0, :na] = r, N, ndot
        out_force, out_fn = np.zeros((1, k, 3)), np.zeros((1, k))
        out_state, out_total = np.zeros((1, k), np.int8), np.zeros((1, 6))
        c = ContactSet(self._cw, q[None].copy(), v[None].copy(), w[None].copy(), acc[None].copy(), tau[None].copy(),
                       act, pts_b, nrm, nd, self._srad, self._fric, self._rolling, float(self.st.vstar),
                       float(self.st.wstar), float(self.st.contact_baumgarte), out_force, out_fn, out_state, out_total)
        contact_forces_rows(1, self._m1, self._I1, c)
        return out_total[0, :3].copy(), out_total[0, 3:].copy(), out_state[0, :na].copy(), free

    # ------------------------------------------------------------------ phases
    def _fly(self, t, y, res):
        """Flight from (t, y) to an event; returns (t, y, next) with next 'collide', 'escaped',
        'cap' or 'failed'."""
        st = self.st
        skip_escape = False
        h_prev = None
        while True:
            if t >= st.t_cap * (1 - 1e-12):
                return t, y, "cap"
            c0 = self.clearance(y)
            thr = 0.0 if c0 > st.contact_gap else min(c0, 0.0) - st.contact_gap
            sp = np.linalg.norm(y[3:6]) + self.rb * np.linalg.norm(y[10:13])
            span = 0.5 * (max(c0, 0.0) + 0.25 * self.rb) / sp if sp > 0 else st.h_max
            if np.linalg.norm(y[:3]) > self.escape_radius:      # outside: test at least every h_max
                if self._escaping(y):
                    return t, y, "escaped"
                span = min(span, st.h_max)
            span = min(span, st.t_cap - t)

            def hit(_t, yy, thr=thr):
                return self.clearance(yy) - thr
            hit.terminal, hit.direction = True, -1

            def esc(_t, yy):
                return math.sqrt(yy[0] ** 2 + yy[1] ** 2 + yy[2] ** 2) - self.escape_radius
            esc.terminal, esc.direction = True, 1

            events = [hit] if skip_escape else [hit, esc]
            kw = {"first_step": min(h_prev, (t + span) - t)} if h_prev else {}
            sol = solve_ivp(lambda _t, yy: self._rates(yy), (t, t + span), y, method=self.method, rtol=st.rtol,
                            atol=st.atol, max_step=st.h_max, events=events, **kw)
            res.ivp_calls += 1
            if sol.status == -1:
                return t, y, "failed"
            if len(sol.t) >= 3:
                h_prev = sol.t[-2] - sol.t[-3]
            skip_escape = False
            if sol.status == 1 and len(sol.t_events[0]):
                return float(sol.t_events[0][0]), sol.y_events[0][0].copy(), "collide"
            t, y = float(sol.t[-1]), sol.y[:, -1].copy()
            y[6:10] /= np.linalg.norm(y[6:10])
            if sol.status == 1:                                  # the escape sphere
                if self._escaping(y):
                    return t, y, "escaped"
                skip_escape = True

    def _escaping(self, y) -> bool:
        """Positive two-body energy (inertial velocity) and moving outwards (the engine's test)."""
        x, v = y[:3], y[3:6]
        vn = v + np.cross(self.Omega, x)
        energy = 0.5 * vn @ vn - self.gravity.mu / np.linalg.norm(x)
        return bool(energy > 0 and x @ v > 0)

    def _collide(self, t, y, res):
        """Collision at (t, y); returns (y, next) with next 'contact', 'fly' or 'failed'."""
        st = self.st
        q = y[6:10] / np.linalg.norm(y[6:10])
        R = _rotation_matrix(q)
        pts = y[:3] + self.verts @ R.T
        d, grad = eval_terrain(self.terrain, pts)
        touch = np.flatnonzero(d <= st.contact_gap)
        if len(touch) == 0:
            return y, "fly"
        N = grad / np.linalg.norm(grad, axis=1)[:, None]
        acc, alpha = self.free_accelerations(y)
        v, w = y[3:6].copy(), y[10:13].copy()

        def normal_velocities(v, w):
            return np.einsum("ij,ij->i", v + np.cross(w, self.verts[touch]) @ R.T, N[touch])

        vn = normal_velocities(v, w)
        b = int(np.argmin(vn))
        r = self.verts[touch[b]]
        u = np.cross(w, r)
        an = float((acc + (np.cross(alpha, r) + np.cross(w, u)) @ R.T) @ N[touch[b]])
        enter = -vn[b] < st.contact_speed and an < 0.0
        e = 0.0 if enter else self.e
        tol = max(1e-12, 1e-9 * float(np.max(-vn)))
        v_before, w_before = v.copy(), w.copy()
        count = 0
        while True:
            vn = normal_velocities(v, w)
            k = int(np.argmin(vn))
            if not vn[k] < -tol:
                break
            if count >= st.max_collision_iterations:
                break
            out = resolve_impacts(mass=self.mass, inertia=self.inertia, contact_point=self.verts[touch[k]],
                                  normal=N[touch[k]], velocity=v, omega=w, restitution=e, friction=self.f,
                                  attitude=q, wstar=st.wstar, rtol=1e-10, max_steps=IMPACT_MAX_STEPS)
            if out.status[0] != IMPACT_RESOLVED:
                return y, "failed"
            v, w = out.velocity[0].copy(), out.omega[0].copy()
            count += 1
        y = y.copy()
        y[3:6], y[10:13] = v, w
        j = touch[int(np.argmin(d[touch]))]
        if d[j] < 0.0:                       # lift the deepest touching vertex back to the surface
            y[:3] -= d[j] * N[j]
        if count > 0 or enter:
            res.collisions += 1
            if math.isnan(res.first_impact_time):
                res.first_impact_time = t
            res.events.append({"time": t, "kind": int(enter), "vertex": int(touch[b]), "position": y[:3].copy(),
                               "attitude": q.copy(), "velocity_before": v_before,
                               "velocity_after": v.copy(), "omega_before": w_before, "omega_after": w.copy(),
                               "vertices_resolved": count})
        if enter:
            return y, "contact"
        if count > 0:
            res.bounces += 1
        return y, "fly"

    def _contact_rhs(self, active):
        def rhs(_t, y):
            F, L, _, free = self.contact_wrench(y, active)
            free[3:6] += F / self.mass                           # eqs 2.2, 2.5 are linear in F and L
            free[10:13] += self.jinv @ L
            return free
        return rhs

    def _free_clearance(self, y, active):
        free = np.setdiff1d(np.arange(len(self.verts)), active)
        if len(free) == 0:
            return math.inf
        q = y[6:10]
        return float(eval_terrain(self.terrain, y[:3] + self.verts[free] @ _rotation_matrix(q).T)[0].min())

    def _sinking(self, y, active) -> float:
        """Most negative normal velocity of the active vertices [m/s] (0 if none moves inwards)."""
        R = _rotation_matrix(y[6:10])
        r = self.verts[active]
        _, grad = eval_terrain(self.terrain, y[:3] + r @ R.T)
        u = y[3:6] + np.cross(y[10:13], r) @ R.T
        vn = np.einsum("ij,ij->i", u, grad) / np.linalg.norm(grad, axis=1)
        return min(0.0, float(vn.min()))

    def _rk4(self, rhs, t, y, h):
        k1 = rhs(t, y)
        k2 = rhs(t + h / 2, y + h / 2 * k1)
        k3 = rhs(t + h / 2, y + h / 2 * k2)
        k4 = rhs(t + h, y + h * k3)
        return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)

    def _contact(self, t, y, res, rest_since):
        """Contact motion from (t, y); returns (t, y, next, rest_since), next 'fly', 'collide',
        'settled', 'cap' or 'failed'."""
        st = self.st
        h_prev = None
        while True:
            if t >= st.t_cap * (1 - 1e-12):
                return t, y, "cap", rest_since
            d = eval_terrain(self.terrain, self.vertex_points(y))[0]
            active = np.flatnonzero(d <= st.contact_gap)[:self.slots]
            if len(active) == 0:
                return t, y, "fly", rest_since
            if self._sinking(y, active) < -SINK_SPEED:
                return t, y, "collide", rest_since
            _, _, state, _ = self.contact_wrench(y, active)
            if not np.any(state == CONTACT_ACTIVE):
                return t, y, "fly", rest_since
            if np.linalg.norm(y[3:6]) < st.settle_speed and np.linalg.norm(y[10:13]) < st.settle_rate:
                if math.isnan(rest_since):
                    rest_since = t
                elif t - rest_since >= st.settle_hold:
                    return t, y, "settled", rest_since
            else:
                rest_since = math.nan
            span = min(st.contact_h_max, st.t_cap - t)
            if not math.isnan(rest_since):
                span = min(span, max(rest_since + st.settle_hold - t, 1e-9))
            rhs = self._contact_rhs(active)

            def touchdown(_t, yy, active=active):
                return self._free_clearance(yy, active)
            touchdown.terminal, touchdown.direction = True, -1

            kw = {"first_step": min(h_prev, (t + span) - t)} if h_prev else {}
            sol = solve_ivp(rhs, (t, t + span), y, method="RK45", rtol=st.contact_rtol, atol=st.contact_atol,
                            events=[touchdown], **kw)
            res.ivp_calls += 1
            if sol.status == -1:                                # no progress: one forced step (module docs)
                y1 = self._rk4(rhs, t, y, min(st.contact_h_min, span))
                res.forced_steps += 1
                if self._free_clearance(y1, active) <= 0.0:     # crossed: treat as the touchdown
                    t += min(st.contact_h_min, span)
                    y = y1
                    y[6:10] /= np.linalg.norm(y[6:10])
                    return t, y, "collide", rest_since
                t, y = t + min(st.contact_h_min, span), y1
            elif sol.status == 1:
                y = sol.y_events[0][0].copy()
                y[6:10] /= np.linalg.norm(y[6:10])
                return float(sol.t_events[0][0]), y, "collide", rest_since
            else:
                if len(sol.t) >= 3:
                    h_prev = sol.t[-2] - sol.t[-3]
                t, y = float(sol.t[-1]), sol.y[:, -1].copy()
            if not np.all(np.isfinite(y)):
                return t, y, "failed", rest_since
            y[6:10] /= np.linalg.norm(y[6:10])
            # drift: lift the deepest active vertex back to the surface
            pts = y[:3] + self.verts[active] @ _rotation_matrix(y[6:10]).T
            dd, gg = eval_terrain(self.terrain, pts)
            j = int(np.argmin(dd))
            if dd[j] < 0.0:
                y[:3] -= dd[j] * gg[j] / np.linalg.norm(gg[j])

    # ------------------------------------------------------------------ one trajectory
    def run(self, position, velocity, attitude, omega, *, max_collisions: int | None = None) -> ReferenceResult:
        """Integrate one trajectory from t = 0 until an end state (or ``max_collisions`` collisions)."""
        c0 = time.perf_counter()
        self._calls = 0
        res = ReferenceResult()
        y = np.concatenate([position, velocity, attitude, omega]).astype(float)
        y[6:10] /= np.linalg.norm(y[6:10])
        t = 0.0
        phase = "fly"
        rest_since = math.nan
        while True:
            if phase == "fly":
                rest_since = math.nan
                t, y, phase = self._fly(t, y, res)
            elif phase == "collide":
                y, phase = self._collide(t, y, res)
                if max_collisions is not None and res.collisions >= max_collisions:
                    res.status = int(Status.DONE)
                    break
            elif phase == "contact":
                t, y, phase, rest_since = self._contact(t, y, res, rest_since)
            else:
                res.status = int({"settled": Status.SETTLED, "escaped": Status.ESCAPED, "cap": Status.TIMED_OUT,
                                  "failed": Status.FAILED}[phase])
                if phase == "settled":
                    res.settle_time = rest_since
                break
        res.end_time = t
        res.state = y
        res.rhs_calls = self._calls
        res.wall_s = time.perf_counter() - c0
        return res


def _terrain_radius(target: DeployTarget) -> float:
    """Radius of a sphere about the target CoM enclosing the terrain's base grid (the engine's
    default escape radius is 4 × this)."""
    from components.terrain import SDFGrid

    base = target.terrain.base
    if isinstance(base, SDFGrid):
        lo, hi = base.origin, base.upper
        corners = np.array([[a, b, c] for a in (lo[0], hi[0]) for b in (lo[1], hi[1]) for c in (lo[2], hi[2])])
        return float(np.max(np.linalg.norm(corners, axis=1)))
    from systems.deployment.loop import _terrain_radius as engine_radius   # analytic terrains: the engine's rule

    return engine_radius(target)


def sample_states(scene, samples, *, seed: int = 0) -> list[dict]:
    """Initial probe state of each sample index in ``samples`` (iterable of ints), drawn as the
    batch runner draws them (``SeedSequence(seed, spawn_key=(s,))``, dispersions in declaration
    order). Returns dicts with position, velocity, attitude, omega and the ``overrides`` row."""
    w = scene.world
    pid = w.entity("probe")
    base = w.component(pid, RigidState)
    out = []
    for s in samples:
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(int(s),)))
        cols = {"body_position": np.array(base.position, float), "body_velocity": np.array(base.velocity, float),
                "body_attitude": np.array(base.attitude, float), "body_omega": np.array(base.omega, float)}
        drawn = {}
        for d in scene.dispersions:
            v = np.asarray(d.draw(rng), float)
            drawn[d.column] = v
            if d.column not in cols or d.derive:
                raise NotImplementedError(f"dispersion of {d.column} is not covered by the reference")
            cols[d.column] = v
        out.append({"position": cols["body_position"], "velocity": cols["body_velocity"],
                    "attitude": cols["body_attitude"], "omega": cols["body_omega"], "drawn": drawn})
    return out


@contextlib.contextmanager
def single_numba_thread():
    """Run the block with one numba thread (restored after).

    The numpy APIs the reference calls (gravity ``acceleration``, ``eval_terrain``,
    ``resolve_impacts``, ``contact_forces_rows``) launch ``parallel=True`` numba kernels; for one
    point or one row a parallel launch costs more than the work (measured on a shared 2-core
    machine: 8 ms instead of 9 µs per voxel-gravity lookup when the second core is busy), and the
    reference is a one-trajectory-at-a-time loop, so it runs them on the calling thread.
    """
    import numba

    n = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(n)


def run_reference(scene, samples, *, seed: int = 0, **kw) -> list[ReferenceResult]:
    """Reference trajectories of a deployment scene for the given sample indices (plain loop, one
    numba thread: :func:`single_numba_thread`)."""
    ref = ReferenceProbe.from_scene(scene)
    with single_numba_thread():
        return [ref.run(s["position"], s["velocity"], s["attitude"], s["omega"], **kw)
                for s in sample_states(scene, samples, seed=seed)]
