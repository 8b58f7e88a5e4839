"""Probe deployment: the mode loop, end states and inertial outputs (seed 004 §2.7.3, ch. 4).

:class:`DeploymentLoop` is the one SCHEDULED system a deployment scene adds: the deployment's
:class:`systems.deployment.modes.ModeLoop` (like the integrator owns the stage loop, it owns its modes).
A probe row's mode is ``probe_phase``; within a frame ``[t, t + dt]`` the loop repeats passes of

1. :class:`systems.deployment.fly.FlyProbes` over the FLY rows not yet at the frame end,
2. the COLLIDE rows (a vertex reached the surface, an event pending): the world's EVENT systems
   first (a user's harpoon may take a row), then :class:`systems.deployment.collide.CollideProbes`
   (Stronge's impacts, contact entry),
3. :class:`systems.deployment.contact.ContactProbes` over the CONTACT rows not yet at the frame end,
4. the world's :class:`systems.deployment.modes.Mode` systems over the rows in their modes,
5. :class:`EndProbes` (settled, escaped, timed out; failed rows were flagged by the kernels),

until every running row has reached the frame end (launches over index lists, worker threads and
work sharing: :mod:`systems.deployment.modes`). No step is cut at a frame end: a row's last step of a frame
ends past it, and a recorded frame shows each row at the frame time through the kernels' dense
output (:meth:`DeploymentLoop._show_snapshots`), so the recording interval changes no step, event
or final value (docs/design.md §8.2). Kernels return after ``steps_per_launch`` steps, so one
stiff row cannot hold a launch for long and a row can change mode several times within a frame.

Streaming active set (seed 004 §2.7.3: n ≪ N active runs refilled from the pool): the loop
``streams`` (:meth:`ecs.world.World.compile` with ``active``). Its tables then hold sample slots;
when a slot's sample has finished, the world loads the next pending sample into it and
:meth:`DeploymentLoop.refill` resets the rows' state kept outside the columns (work arrays,
contact and collision scratch, dense-output ring, inverse inertia, and what the world's modes and
EVENT systems keep). A refilled row counts its frames from the frame it entered
(:meth:`ecs.world.Frame.row_ends`), so every launch runs each row to its *own* frame end (the
kernels take per-row frame ends): its steps, records and results are those of a
frame-synchronous run. Refills happen between frames, so the loop deals and hands over rows
exactly as before.

End states (:class:`EndProbes`, our criteria where the seed is silent):

* **SETTLED** — in contact motion with |v| < ``settle_speed`` and |ω| < ``settle_rate``
  (relative to the target) without interruption for ``settle_hold`` seconds; the settling time is
  the start of that interval. A rest the contact kernel certifies (``DeploySettings.rest_slide``,
  :func:`systems.deployment.contact._rest_certain`) is held at zero velocity to the end of the hold
  instead of integrated. Settling slope (seed §4.1): the angle between the mean normal of the
  active contacts and the net acceleration ``g − Ω × (Ω × x)``.
* **ESCAPED** — flying beyond ``escape_radius`` (default 4 × the terrain's bounding radius) with a
  positive two-body energy ``½|v_N|² − μ/r`` and an outward radial velocity: a Keplerian hyperbola
  that cannot come back. The inertial energy and the Jacobi integral ``C`` are related by
  ``E = C + Ω·(x × v_N)``, so this is the Jacobi test written where the field is a point mass.
* **TIMED_OUT** — simulated time reached ``t_cap`` (default 10 h) in any phase.
* **FAILED** — non-finite state or a step below round-off (flagged inside the kernels).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from components.contact_params import LAW_USER, PAIR_REGOLITH, RestitutionLaw
from components.deploy import DeployPhase, DeploySettings, DeployTarget
from components.probe import ProbeShapes
from components.rigid import RotatingFrame
from components.status import Status
from ecs import InputError, Phase, System
from ecs.system import check_derivatives
from ecs.kernels import (CompileUnit, DeviceRows, compact_rows, copy_into, cpu_jit, device_array, dual,
                         kernel_tuple, PreparedSpan, set_rows, to_backend, to_host)
from ecs.attitude import quat_multiply, quat_rotate
from ecs.terms import TermArgs, fuse_terms, no_terms_args, specialise
from systems.deployment.collide import (COLLISION_EVENT_FIELDS, CollideProbes, collide_rows,
                                    declare_collision_events)
from systems.deployment.contact import CONTACT_SLOTS, ContactProbes, contact_rows
from systems.deployment.fly import FlyProbes, fly_rows
from systems.deployment.physics import SNAP_SAVE_END, WORK_SIZE, Y1, contact_scratch, gravity_args
from systems.deployment.geometry import (normal_and_rate, normal_and_rate_grid, terrain_at, terrain_at_grid,
                                         terrain_distance, terrain_distance_grid)
from systems.deployment.events import escaping
from systems.deployment.records import Limits, Output, Probes, Shapes, Target

_escaping = escaping.cpu
_tat = terrain_at.cpu
from systems.gravity.kernels import gravity_at, gravity_at_for
from systems.probe_contact.collision import restitution_law_none
from systems.deployment.modes import ModeLoop
from systems.terrain.sdf import eval_terrain, is_bare_grid, terrain_args

_grav = gravity_at.cpu

__all__ = ["DeploymentLoop", "EndProbes", "PROBE_COLUMNS", "target_attitude"]

#: Columns a deployment table must have.
PROBE_COLUMNS = ("body_position", "body_velocity", "body_attitude", "body_omega", "body_mass", "body_inertia",
                 "probe_shape", "probe_phase", "probe_step", "probe_terrain_pair", "probe_rolling_radius",
                 "probe_first_impact_time", "probe_settle_time", "probe_rest_since", "probe_bounces",
                 "probe_collisions", "probe_distance", "probe_end_time", "probe_max_penetration", "probe_latitude",
                 "probe_longitude", "probe_slope")


def target_attitude(rotation, t) -> np.ndarray:
    """``q_T/N(t)`` [.., 4] of a uniform rotation Ω [rad/s] (target frame) from the identity at t = 0."""
    w = np.asarray(rotation, float)
    t = np.asarray(t, float)
    wn = float(np.linalg.norm(w))
    half = 0.5 * wn * t
    axis = w / wn if wn > 0 else np.array([0.0, 0.0, 1.0])
    return np.concatenate([np.cos(half)[..., None], np.sin(half)[..., None] * axis], axis=-1)


@dataclass
class DeployContext:
    """What the phase systems share (built once per compile by :class:`DeploymentLoop`)."""

    table: object
    settings: DeploySettings
    target: DeployTarget
    work: np.ndarray
    jinv: np.ndarray
    geo: tuple
    ga: tuple
    ta: tuple
    rotation: tuple
    cs: tuple
    events: object
    max_vertices: int
    escape_radius: float
    #: the phase kernels, span kernels by phase ("fly_rows", "contact_rows", "collide_rows"; CPU
    #: dispatchers, their GPU twins run on the GPU backend): the hand-written ones, or copies linked
    #: against the world's row terms (ecs.terms.fuse_terms)
    kernels: dict
    #: each phase kernel's row-term argument (columns, parameters), by kernel name
    tt: dict
    #: dense output (docs/design.md §8.2): record interval [s] (0: not recording), the per-row
    #: ring of snapshots [rows, slots, 16] = (record index, phase, state, time it was taken from) and
    #: the trial steps' save area
    rec_dt: float = 0.0
    snap: np.ndarray = field(default_factory=lambda: np.zeros((1, 1, 16)))
    save: np.ndarray = field(default_factory=lambda: np.zeros((1, 1)))

    #: per-step trace (DeploymentLoop.enable_trace): [rows, capacity, 16] = (t, h, phase, state)
    #: and the step count per row
    trace: np.ndarray = field(default_factory=lambda: np.zeros((1, 0, 16)))
    trace_n: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    #: "cpu" or "gpu" (:meth:`launch`)
    backend: str = "cpu"
    #: the loop's index lists on the device (GPU backend: :class:`systems.deployment.modes.DeviceLists`)
    lists: object = None
    #: the phase kernels' records, built on first use (with numba views of the device arrays on the GPU)
    _views: dict = field(default_factory=dict, repr=False)
    #: each phase kernel's launcher (:class:`ecs.kernels.PreparedSpan`), built on its first launch
    _launchers: dict = field(default_factory=dict, repr=False)

    def _on_device(self, key, make):
        """``make()``'s record, with numba views of its device arrays on the GPU, kept under ``key``
        (a table's columns and the context's arrays live from bind to the end of the run; a key
        names what may be replaced). Building views at every launch would cost more than the
        launch on the GPU; on the CPU, gathering the probes' 22 columns took 16 µs (cProfile) at each
        of a 2,000-sample batch's ~2,800 launches, with the GIL held."""
        if key not in self._views:
            if len(self._views) > 8:            # outputs replaced after bind: drop the stale records
                self._views.clear()
            rec = make()
            self._views[key] = kernel_tuple(rec) if self.backend == "gpu" else rec
        return self._views[key]

    def probes(self) -> Probes:
        """The probe rows' record (:data:`systems.deployment.records.Probes`)."""
        return self._on_device(("probes", id(self.table)), lambda: Probes.of(self.table, jinv=self.jinv))

    def target_record(self) -> Target:
        """The target's record (:data:`systems.deployment.records.Target`)."""
        key = ("target", id(self.ga), id(self.ta), self.rotation)
        rec = self._views.get(key)
        if rec is None:
            rec = self._views[key] = Target(self.ga, self.ta, *self.rotation)
        return rec

    def limits(self) -> Limits:
        """The settings the phase kernels read (:data:`systems.deployment.records.Limits`), as floats
        and int64 whatever the user gave (one compiled signature)."""
        st = self.settings
        return Limits(float(st.rtol), float(st.atol), float(st.h_max), float(st.contact_rtol), float(st.contact_atol),
                      float(st.contact_h_max), float(st.contact_h_min), float(st.event_tol), float(st.contact_gap),
                      float(st.contact_speed), float(st.wstar), np.int64(st.max_collision_iterations),
                      1.0 / float(self.target.terrain.lipschitz), np.int64(st.steps_per_launch), float(st.t_cap),
                      float(st.settle_speed), float(st.settle_rate), float(st.settle_hold), float(st.rest_slide),
                      float(self.escape_radius), float(self.target.gravity.mu))

    def output(self) -> Output:
        """Dense output and step trace (:data:`systems.deployment.records.Output`)."""
        key = ("output", float(self.rec_dt), id(self.snap), id(self.save), id(self.trace), id(self.trace_n))
        return self._on_device(key, lambda: Output(float(self.rec_dt), self.snap, self.save, self.trace,
                                                   self.trace_n))

    def launch(self, phase: str, rows, *args) -> None:
        """Run phase ``phase``'s kernel ("fly", "contact", "collide") over ``rows`` (the index array
        its arguments list, or on the GPU a :class:`ecs.kernels.DeviceRows`): on the CPU one call
        for them all (the calling worker thread's group) through the compiled entry point once the
        first launch resolved it, on the GPU one thread per listed row (:class:`ecs.kernels.PreparedSpan`)."""
        go = self._launchers.get(phase)
        if go is None:
            go = self._launchers[phase] = PreparedSpan(self.backend, self.kernels[phase + "_rows"])
        go(rows if isinstance(rows, DeviceRows) else len(rows), *args)

    def row_args(self) -> tuple:
        """The arguments every phase kernel takes after its row list (and end time): the work rows,
        the probes' record, the shapes, the target's record, the contact scratch."""
        return (self.work, self.probes(), self.geo, self.target_record(), self.cs)


_RUNNING = int(Status.RUNNING)
_SETTLED = int(Status.SETTLED)
_ESCAPED = int(Status.ESCAPED)
_TIMED_OUT = int(Status.TIMED_OUT)
_FLY = int(DeployPhase.FLY)
_CONTACT = int(DeployPhase.CONTACT)
_COLLIDE = int(DeployPhase.COLLIDE)
_ENDED = int(DeployPhase.ENDED)


_DEG = 180.0 / math.pi


def _settling_slope(i, pos, ga, ta, ox, oy, oz, active, normals):
    """Settling slope [deg] of row ``i`` (seed §4.1): the angle between the mean normal of its
    active contacts (``active[i, k]``, ``normals[i, k]``; the terrain normal under the CoM when none
    is stored) and the net acceleration ``g − Ω × (Ω × x)`` (target frame)."""
    x, y, z = pos[i, 0], pos[i, 1], pos[i, 2]
    _, gx, gy, gz = _grav(ga, x, y, z)
    cx, cy, cz = oy * z - oz * y, oz * x - ox * z, ox * y - oy * x           # Ω × x
    ax = gx - (oy * cz - oz * cy)
    ay = gy - (oz * cx - ox * cz)
    az = gz - (ox * cy - oy * cx)
    nx = 0.0
    ny = 0.0
    nz = 0.0
    for k in range(active.shape[1]):
        if active[i, k] != 0:
            nx += normals[i, k, 0]
            ny += normals[i, k, 1]
            nz += normals[i, k, 2]
    nn = math.sqrt(nx * nx + ny * ny + nz * nz)
    if nn == 0.0:
        _, nx, ny, nz = _tat(ta, x, y, z)
        nn = math.sqrt(nx * nx + ny * ny + nz * nz)
    c = -(nx * ax + ny * ay + nz * az) / (nn * math.sqrt(ax * ax + ay * ay + az * az))
    return math.acos(min(1.0, max(-1.0, c))) * _DEG


settling_slope = dual(_settling_slope)
_slope_of = settling_slope.cpu


def _end_row(i, probes, target, lim, t_end_eps, active, normals):
    """The end-state rules of :class:`EndProbes` for row ``i`` (module docstring); returns whether
    the row is still pending: running and either in COLLIDE or behind ``t_end_eps[i]`` (its frame
    end less round-off).

    Marks SETTLED (settling time = start of the rest), ESCAPED and TIMED_OUT rows and clears the
    rest interval of a flying row. A row that has ended (here, or FAILED in a kernel) and is not
    yet ENDED gets its finals: phase ENDED, end time, latitude and longitude of its CoM [deg],
    and, when settled, the settling slope (:func:`_settling_slope`).
    """
    status, phase, time, rest_since = probes.status, probes.phase, probes.time, probes.rest_since
    settle_time, end_time, slope = probes.settle_time, probes.end_time, probes.slope
    latitude, longitude, pos, vel = probes.latitude, probes.longitude, probes.position, probes.velocity
    settle_hold, t_cap, escape_radius, mu = lim.settle_hold, lim.t_cap, lim.escape_radius, lim.mu
    ga, ta, ox, oy, oz = target
    if status[i] == _RUNNING:
        ph = phase[i]
        if ph == _FLY:
            rest_since[i] = math.nan      # a rest interval ends when the probe flies
            if _escaping(pos[i, 0], pos[i, 1], pos[i, 2], vel[i, 0], vel[i, 1], vel[i, 2], ox, oy, oz, mu,
                         escape_radius):
                status[i] = _ESCAPED
        elif ph == _CONTACT:
            rs = rest_since[i]
            if rs == rs and time[i] - rs >= settle_hold * (1.0 - 1e-12):
                status[i] = _SETTLED
                settle_time[i] = rs
        if status[i] == _RUNNING and time[i] >= t_cap * (1.0 - 1e-12):
            status[i] = _TIMED_OUT
    if status[i] != _RUNNING:
        if phase[i] != _ENDED:
            phase[i] = _ENDED
            end_time[i] = time[i]
            x, y, z = pos[i, 0], pos[i, 1], pos[i, 2]
            r = math.sqrt(x * x + y * y + z * z)
            latitude[i] = math.asin(min(1.0, max(-1.0, z / (r if r > 0.0 else 1.0)))) * _DEG
            longitude[i] = math.atan2(y, x) * _DEG
            if status[i] == _SETTLED:
                slope[i] = _slope_of(i, pos, ga, ta, ox, oy, oz, active, normals)
        return False
    return phase[i] == _COLLIDE or time[i] < t_end_eps[i]


#: :func:`_end_row` for both backends: a CPU loop (:func:`end_rows`) and, on the GPU, the device
#: compaction that writes the next pass's pending list (:func:`ecs.kernels.compact_rows`)
end_row = dual(_end_row)
_end = end_row.cpu


@cpu_jit(nogil=True)
def end_rows(rows, pending, probes, target, lim, t_end_eps, active, normals):
    """:func:`_end_row` over ``rows``; writes the rows still pending to ``pending`` and returns
    their number."""
    k = 0
    for j in range(rows.shape[0]):
        i = rows[j]
        if _end(i, probes, target, lim, t_end_eps, active, normals):
            pending[k] = i
            k += 1
    return k


class EndProbes(System):
    """End states of probe rows and their finals (module docstring): :func:`_end_row` over the rows,
    on the CPU in one loop (:func:`end_rows`), on the GPU one thread per row writing the rows still
    pending to a list on the device."""

    phase = Phase.SCHEDULED
    reads = ("probe_phase", "body_position", "body_velocity", "probe_rest_since")
    writes = ("probe_settle_time", "probe_end_time", "probe_latitude", "probe_longitude", "probe_slope")

    def check(self, ctx: DeployContext, rows=None, t_lim=None, out: DeviceRows | None = None):
        """End the rows (all, or ``rows``) that have settled, escaped or hit the cap, and give the
        rows that ended their finals; returns those of them still running and in COLLIDE or behind
        their frame end less round-off ``t_lim[row]`` (none without ``t_lim``).

        CPU: ``rows`` an index array, returns one. GPU: ``rows`` a :class:`ecs.kernels.DeviceRows`
        (or None: every row); the pending rows are written to ``out`` (default: the loop's spare
        list), whose count is read back, and ``out`` is returned.
        """
        t = ctx.table
        if ctx.backend == "gpu":
            lists = ctx.lists
            if t_lim is None:
                t_lim = lists.no_end
            out = lists.next if out is None else out
            if isinstance(rows, np.ndarray):        # a host index array (refilled rows)
                rows = DeviceRows(device_array(rows.astype(np.int64)), device_array(np.array([len(rows)])),
                                  len(rows))
            n, ids = (lists.n, lists.every) if rows is None else (rows.bound, rows.ids)
        else:
            if rows is None:
                rows = np.arange(t.row_count)
            rows = np.ascontiguousarray(rows, dtype=np.int64)
            if t_lim is None:
                t_lim = np.full(t.row_count, -math.inf)
        args = self.args(ctx, t_lim)
        if ctx.backend == "gpu":
            compact_rows(ctx.kernels["end_row"], n, ids, out, *args)
            ctx.lists.read(out)
            return out
        pending = np.empty(len(rows), np.int64)
        k = ctx.kernels["end_rows"](rows, pending, *args)
        return pending[:k]

    @staticmethod
    def args(ctx: DeployContext, t_lim) -> tuple:
        """The arguments of :func:`_end_row` after the row, for frame ends less round-off ``t_lim``."""
        return (ctx.probes(), ctx.target_record(), ctx.limits(), t_lim, ctx.cs.act, ctx.cs.normals)


class HostColumns:
    """A table's columns as host arrays, for the few per-frame steps the loop takes on the host
    (dense-output views, inertial views): the columns themselves on the CPU backend; on the GPU
    host copies, read on first use (:func:`ecs.kernels.to_host`), and :meth:`write_back` copies
    the named ones back to the device."""

    def __init__(self, table, backend: str):
        self.table = table
        self.copies = None if backend == "cpu" else {}

    def __getitem__(self, name: str) -> np.ndarray:
        if self.copies is None:
            return self.table[name]
        if name not in self.copies:
            self.copies[name] = to_host(self.table[name])
        return self.copies[name]

    def write_back(self, names) -> None:
        """Copy the host copies of columns ``names`` back to the device (nothing on the CPU)."""
        if self.copies is not None:
            for c in names:
                copy_into(self.table[c], self.copies[c])


class DeploymentLoop(ModeLoop):
    """The deployment's mode loop (module docstring): one SCHEDULED system per deployment world.

    Needs the resources :class:`components.deploy.DeployTarget`, :class:`components.probe.ProbeShapes`
    and optionally :class:`components.deploy.DeploySettings` (defaults otherwise), and one table with
    :data:`PROBE_COLUMNS`. The world's Mode and EVENT systems join it (:mod:`systems.deployment.modes`): an
    EVENT system sees the COLLIDE rows (a vertex reached the surface) before the Stronge resolver.

    Args:
        max_passes: passes per frame before a row that still has not reached the frame end is
            flagged FAILED (a guard: no row can hang the batch).
    """

    phase = Phase.SCHEDULED
    derivative_pipeline = "terms"
    terms_only = True
    #: records by dense output: any frame (recording interval) gives the same steps and results
    dense_output = True
    #: runs a streaming active set (World.compile(active=...)): each row steps to its own frame end
    #: (Frame.row_ends) and refilled rows are reset by :meth:`refill`
    streams = True
    writes = ("body_position", "body_velocity", "body_attitude", "body_omega", "probe_phase")
    mode_column = "probe_phase"
    event_mode = int(DeployPhase.COLLIDE)
    ended_mode = int(DeployPhase.ENDED)

    def __init__(self, *, max_passes: int = 10_000):
        self.fly = FlyProbes()
        self.collide = CollideProbes()
        self.contact = ContactProbes()
        super().__init__((self.fly, self.contact), self.collide, EndProbes(), max_passes=max_passes)
        self.ctx: DeployContext | None = None
        #: time [s] spent in each mode (fly, collide, contact, the world's modes) and in the end
        #: rules ("end") since bind, summed over the worker threads (thread-seconds)
        self.timings = {"fly": 0.0, "collide": 0.0, "contact": 0.0, "end": 0.0}
        self._shown = None      # (rows, their own states) while the columns show the frame end

    def check_inputs(self, world, overrides: dict, start: int, count: int) -> None:
        """Refuse a release point (probe CoM) inside the target: its signed terrain distance must
        be >= 0 for every sample (a probe released inside would be 'settled' deep in the body)."""
        table = world.table_with(*PROBE_COLUMNS, required=False)
        target = world.resource(DeployTarget, None)
        if table is None or target is None:
            return
        E = table.entity_count
        authored = to_host(table["body_position"]).reshape(-1, E, 3)[0]
        for j, e in enumerate(table.entities.tolist()):
            pos = np.asarray(overrides.get((e, "body_position"), np.broadcast_to(authored[j], (count, 3))),
                             dtype=np.float64).reshape(count, 3)
            d, _ = eval_terrain(target.terrain, np.ascontiguousarray(pos), parallel=False)
            bad = np.flatnonzero(~(np.asarray(d) >= 0.0))
            if len(bad):
                k = int(bad[0])
                raise InputError(f"body_position of {world.name_of(e)} (sample {start + k})", pos[k].tolist(),
                                 f"is {-float(d[k]):.6g} m inside the target's surface: the release point (probe "
                                 f"CoM, target frame) must be above it")

    def bind(self, world) -> None:
        """Check the scene and build the loop's context. On the GPU backend every per-row array the
        kernels take (work arrays, contact and collision scratch, inverse inertia, term arguments)
        and the target's resources are copied to the device here, once: a frame then moves no row
        between host and device (:meth:`systems.deployment.modes.ModeLoop._device_passes`)."""
        table = world.table_with(*PROBE_COLUMNS)
        frame = self._frame(world)
        world.integration_frame = frame.name     # the probes' body_* state is in the rotating target frame
        if "body_com" in table and table.row_count and np.any(to_host(table["body_com"]) != 0.0):
            r = int(np.flatnonzero(np.any(to_host(table["body_com"]) != 0.0, axis=1))[0])
            raise InputError(f"body_com of {world.name_of(int(table.entities[r % table.entity_count]))}",
                             to_host(table["body_com"])[r].tolist(),
                             "must be 0 for a deployed probe (its reference point is its CoM: vertices and inertia "
                             "are given about it)")
        target = world.resource(DeployTarget, None)
        if target is None:
            raise InputError("DeployTarget", None, "a deployment world needs world.add_resource(DeployTarget(...))")
        shapes = world.resource(ProbeShapes, None)
        if shapes is None or shapes.count == 0:
            raise InputError("ProbeShapes", None, "a deployment world needs a ProbeShapes resource with the probe shapes")
        settings = world.resource(DeploySettings, None) or DeploySettings()
        if any(f not in world.events.fields for f in COLLISION_EVENT_FIELDS):   # a world built by hand
            declare_collision_events(world.events)
            world.events.allocate(world.samples, world.backend)
        n = table.row_count
        sid = to_host(table["probe_shape"])
        if n and (sid.min() < 0 or sid.max() >= shapes.count):
            raise InputError("probe_shape", int(sid.max()), f"must index the {shapes.count} ProbeShapes")
        counts = np.diff(shapes.shape_start)
        kmax = int(max(1, counts.max() if len(counts) else 1))
        escape = settings.escape_radius
        if escape == 0:
            escape = 4.0 * _terrain_radius(target)
        geo = Shapes(np.ascontiguousarray(shapes.vertex_position), shapes.vertex_type.astype(np.int8),
                     np.ascontiguousarray(shapes.vertex_direction), shapes.shape_start.astype(np.int64),
                     shapes.shape_kind.astype(np.int8), shapes.shape_radius.astype(np.float64))
        kernels, tt, self.terms = self._link_terms(world, table, target)
        backend = world.backend
        if backend == "gpu":
            tt = {k: _term_args_on_device(v, table) for k, v in tt.items()}
        inertia = to_host(table["body_inertia"])
        work, jinv, geo, ga, ta, cs = to_backend(backend, (
            np.zeros((n, WORK_SIZE)), np.ascontiguousarray(np.linalg.inv(inertia)) if n else np.zeros((0, 3, 3)),
            geo, gravity_args(target.gravity), terrain_args(target.terrain),
            contact_scratch(n, min(CONTACT_SLOTS, kmax), kmax, vstar=settings.vstar, wstar=settings.wstar,
                            baumgarte=settings.contact_baumgarte)))
        self.ctx = DeployContext(
            table=table, settings=settings, target=target, work=work, jinv=jinv, geo=geo, ga=ga, ta=ta,
            rotation=tuple(float(v) for v in frame.rate), cs=cs, events=world.events, max_vertices=kmax,
            escape_radius=escape, kernels=kernels, tt=tt, backend=backend)
        if backend == "gpu":
            self.ctx.snap, self.ctx.save, self.ctx.trace, self.ctx.trace_n = to_backend(
                backend, (self.ctx.snap, self.ctx.save, self.ctx.trace, self.ctx.trace_n))
        self._shown = None
        self.collide.bind_context(self.ctx)
        self.join(world)
        if not world.layout_only:      # rows released below the surface cap etc. end before the first frame
            self.end.check(self.ctx)
        self._inertial()

    def compile_units(self) -> list:
        """The mode loop's row selection (:meth:`ModeLoop.compile_units`), the three phase kernels and
        the end rules with their launch argument types (no rows), heaviest first
        (:meth:`ecs.system.System.compile_units`). The costs are cold compiles of deploy-cube's
        kernels as a cold README run compiles them (2 cores, large callees called by symbol and
        numba's overheads removed, docs/design.md §8.28 and §8.31; 2026-12-01, after callees lost
        their Python wrappers): collide 9.9 s and then fly 4.7 s on the callees collide compiled
        (they share the terrain, gravity and right-hand side) in one process; contact ~16 s in the
        other, loading some of the callees it shares with collide from the cache as the first
        process writes them; the end rules 1.0 s. They only choose the unit each process of a cold
        start begins with (contact in the helper, collide here); the rest go to whichever process
        is free first (:class:`ecs.warm.WarmStart`, docs/design.md §8.32)."""
        ctx = self.ctx
        if ctx is None or ctx.backend != "cpu":
            return []
        rows, ends = np.zeros(0, np.int64), np.zeros(ctx.table.row_count)
        return super().compile_units() + [
            CompileUnit("deployment.contact", ctx.kernels["contact_rows"],
                        (0, 0, *self.contact.launch_args(ctx, rows, ends)), cost=16.0),
            CompileUnit("deployment.collide", ctx.kernels["collide_rows"],
                        (0, 0, *self.collide.launch_args(ctx, rows)), cost=10.0),
            CompileUnit("deployment.fly", ctx.kernels["fly_rows"],
                        (0, 0, *self.fly.launch_args(ctx, rows, ends)), cost=4.7),
            CompileUnit("deployment.end", ctx.kernels["end_rows"], (rows, rows, *self.end.args(ctx, ends)),
                        cost=1.0)]

    @staticmethod
    def _frame(world) -> RotatingFrame:
        """The world's :class:`components.rigid.RotatingFrame`, the frame the probes are integrated
        in (seed 004 eq 2.1): it must turn with the target (``DeployTarget.rotation``), whose terrain
        and gravity field are fixed in it. A world without one gets ``RotatingFrame(rotation,
        name="target")``, so that the world's terms read the frame they act in."""
        target = world.resource(DeployTarget, None)
        rate = np.asarray(target.rotation if target is not None else np.zeros(3), float)
        frame = world.resource(RotatingFrame, None)
        if frame is None:
            return world.add_resource(RotatingFrame(rate, name="target"))
        if not np.array_equal(np.asarray(frame.rate, float), rate):
            raise InputError("RotatingFrame.rate", np.asarray(frame.rate).tolist(),
                             f"must equal DeployTarget.rotation {rate.tolist()} in a deployment world (the probes "
                             "are integrated in the frame the target's terrain and gravity are fixed in)")
        return frame

    @staticmethod
    def _link_terms(world, table, target) -> tuple:
        """The phase kernels and their term argument for the target and the world's DERIVATIVE
        systems.

        The kernels are specialised to what the target uses (:func:`ecs.terms.specialise`): its
        gravity source's field replaces the dispatch over every kind, and on a bare grid terrain
        the grid sampler replaces the general terrain evaluation (and the grid's own Hessian the
        central difference of the contact normal's rate). Every
        DERIVATIVE system must contribute a row term (:mod:`ecs.terms`); one that has only a
        ``process`` cannot take part and is refused (:func:`ecs.system.check_derivatives`).

        Returns ``(kernels, tt, terms)``: ``tt[name]`` is kernel ``name``'s term argument. A term
        restricted to modes (:attr:`ecs.terms.Term.modes`: FLY, CONTACT) is fused only into those
        modes' kernels; the collision kernel, whose contact-entry test asks whether the probe
        would stay pressed on the surface, takes the CONTACT terms. Kernels with the same term set
        share one fused module.
        """
        check_derivatives(world, world.systems)
        terms = [s.term(world) for s in world.schedule()[Phase.DERIVATIVE]]
        swap = {gravity_at.cpu: gravity_at_for(target.gravity)}
        law = world.resource(RestitutionLaw, None)
        uses = bool(np.any(to_host(table["probe_terrain_pair"])[:, PAIR_REGOLITH] == LAW_USER))
        if uses and law is None:
            raise InputError("probe_terrain_pair", "regolith = 2 (a user's restitution law)",
                             "needs the world's RestitutionLaw resource (scenes.mission.deployment(restitution_law=...))")
        if law is not None and not uses:
            raise InputError(f"RestitutionLaw {law.name}", "a world resource",
                             "does nothing: no probe-terrain pair names it (ContactParams(law=...))")
        if law is not None:
            swap[restitution_law_none] = law.kernel
        if is_bare_grid(target.terrain):
            swap[terrain_at.cpu] = terrain_at_grid.cpu
            swap[terrain_distance.cpu] = terrain_distance_grid.cpu
            swap[normal_and_rate.cpu] = normal_and_rate_grid.cpu
        defaults = specialise({"fly_rows": fly_rows.cpu, "contact_rows": contact_rows.cpu,
                               "collide_rows": collide_rows.cpu, "end_rows": end_rows, "end_row": end_row.cpu},
                              swap)
        for term in terms:
            if term.gravity or term.inertial:
                what = ("a gravity field: the deployment evaluates its scene's gravity source itself"
                        if term.gravity else "an Earth-centred inertial environment term: the deployment "
                        "integrates in the rotating target frame")
                raise InputError(f"Term {term.name}", term.kernel.py_func.__name__,
                                 f"cannot take part in the deployment: it is {what}")
            for c in term.columns:
                if c not in table:
                    raise InputError(f"Term {term.name}: column", c,
                                     "must be a column of the probe table (declare it on the probe entities)")
            bad = [int(m) for m in term.modes if int(m) not in (_FLY, _CONTACT)]
            if bad:
                raise InputError(f"Term {term.name}: modes", [int(m) for m in term.modes],
                                 f"must name modes the deployment applies terms in: FLY ({_FLY}) or CONTACT "
                                 f"({_CONTACT}); {bad[0]} is not one (COLLIDE is resolved, not stepped; a world's "
                                 "own Mode systems apply their forces themselves)")
        mode_of = {"fly_rows": _FLY, "contact_rows": _CONTACT, "collide_rows": _CONTACT}
        groups: dict[tuple, list] = {}
        for name, mode in mode_of.items():
            ids = tuple(k for k, t in enumerate(terms) if not t.modes or mode in t.modes)
            groups.setdefault(ids, []).append(name)
        kernels = {"end_rows": defaults["end_rows"], "end_row": defaults["end_row"]}   # no terms: end rules
        tt = {}
        for ids, names in groups.items():
            roots = {n: defaults[n] for n in names}
            if not ids:
                kernels.update(roots)
                tt.update(dict.fromkeys(names, no_terms_args()._replace(links=())))
                continue
            fused = fuse_terms([terms[k] for k in ids], roots)
            kernels.update(fused.kernels)
            tt.update(dict.fromkeys(names, fused.args(table)._replace(links=())))
        # links = (): no link states, which only a multibody solve fills; its four arrays
        # passed by value through every right-hand-side call made the phase kernels' PTX 7-9 % larger
        # at sm_90 (measured: contact 25.2 -> 23.5 MB, collide 14.4 -> 13.7 MB without it)
        return kernels, tt, tuple(terms)

    def frame_start(self, frame) -> tuple:
        """Put back the rows shown at the last frame end and size the dense-output ring; every
        row's frame end (its own in a streaming active set) and the same less round-off."""
        self._restore()
        self._prepare_recording(frame.record_interval)
        return super().frame_start(frame)

    def frame_end(self, frame, t_end: tuple) -> None:
        """Show the rows past their frame end there (dense output) and refresh the inertial view."""
        if frame.recorded:
            self._show_snapshots(t_end[0])
        self._inertial()

    def refill(self, world, slots: np.ndarray) -> None:
        """Reset the per-row state of the rows of sample slots ``slots`` that now hold new samples
        (streaming active set, :meth:`ecs.world.World.compile` with ``active``): work arrays,
        contact and collision scratch, dense-output ring, inverse inertia; then, as at bind, end
        the rows released past an end state and refresh their inertial view."""
        ctx = self.ctx
        t = ctx.table
        rows = np.flatnonzero(np.isin(to_host(t["row_sample"]), slots))
        if self._shown is not None:     # a refilled row shown at the last frame end holds a new sample now
            shown, cols = self._shown
            keep = ~np.isin(shown, rows)
            self._shown = (shown[keep], {c: v[keep] for c, v in cols.items()}) if keep.any() else None
        set_rows(ctx.work, rows, 0.0)
        set_rows(ctx.jinv, rows, np.linalg.inv(to_host(t["body_inertia"])[rows]))
        for a in ctx.cs:
            if hasattr(a, "shape"):
                set_rows(a, rows, 0)
        self.collide.reset_rows(rows)
        if ctx.rec_dt > 0.0:
            set_rows(ctx.snap, rows, np.nan)
            set_rows(ctx.save, rows, 0.0)
        if ctx.trace.shape[1] > 0:
            set_rows(ctx.trace, rows, np.nan)
            set_rows(ctx.trace_n, rows, 0)
        super().refill(world, slots)
        self.end.check(ctx, rows)
        self._inertial(rows)

    #: most dense-output slots per row (a record interval below h_max / (MAX_SNAP_SLOTS − 2) is refused)
    MAX_SNAP_SLOTS = 256

    def enable_trace(self, capacity: int) -> None:
        """Keep every accepted fly and contact step of every row, up to ``capacity`` per row
        (:meth:`step_trace`): the debugging view of ``tumble rerun --trace``. Call after bind."""
        capacity = int(capacity)
        if capacity < 1:
            raise InputError("trace capacity", capacity, "must be >= 1 step")
        n = self.ctx.table.row_count
        self.ctx.trace, self.ctx.trace_n = to_backend(self.ctx.backend, (np.full((n, capacity, 16), np.nan),
                                                                         np.zeros(max(n, 1), np.int64)))

    def step_trace(self) -> dict:
        """The per-step trace: ``{"time", "step", "phase", "state"}`` [rows, steps(, 13)] (NaN past a
        row's count) and ``"count"`` [rows] (steps taken, those beyond the capacity included)."""
        tr = to_host(self.ctx.trace)
        return {"time": tr[:, :, 0], "step": tr[:, :, 1], "phase": tr[:, :, 2], "state": tr[:, :, 3:],
                "count": to_host(self.ctx.trace_n)[:tr.shape[0]].copy()}

    def _prepare_recording(self, rec_dt: float) -> None:
        """Size the snapshot ring for record interval ``rec_dt`` [s] (once per run)."""
        ctx = self.ctx
        if rec_dt == ctx.rec_dt:
            return
        if rec_dt > 0.0:
            st = ctx.settings
            longest = max(st.h_max, st.contact_h_max)
            slots = int(math.ceil(longest / rec_dt)) + 2
            if slots > self.MAX_SNAP_SLOTS:
                raise InputError("record interval", rec_dt,
                                 f"must be >= h_max / {self.MAX_SNAP_SLOTS - 2} = {longest / (self.MAX_SNAP_SLOTS - 2):.6g} s "
                                 f"(one step may span that many records); lower DeploySettings.h_max for finer records")
            n = ctx.table.row_count
            ctx.snap, ctx.save = to_backend(ctx.backend, (np.full((n, slots, 16), np.nan),
                                                          np.zeros((n, SNAP_SAVE_END - Y1))))
        else:
            ctx.snap, ctx.save = to_backend(ctx.backend, (np.zeros((1, 1, 16)), np.zeros((1, 1))))
        ctx.rec_dt = float(rec_dt)

    #: the columns :meth:`_show_snapshots` sets to the frame-end state of rows already past it
    SHOWN = ("body_position", "body_velocity", "body_attitude", "body_omega", "row_time", "probe_phase")

    def _show_snapshots(self, t_f: np.ndarray) -> None:
        """Show every running row that is past its frame end ``t_f[row]`` at that time (dense output).

        Rows are never stopped at a frame end (a cut step would make the recording interval change
        the physics); the kernels keep, for every record time a step crossed, the state there by a
        fresh step from the step's start (:data:`systems.deployment.events.record_snapshots`). Until
        the next frame starts (:meth:`_restore`), the state columns show those states, so that
        recorders and inertial views see every row at the frame end.
        """
        ctx = self.ctx
        t = HostColumns(ctx.table, ctx.backend)
        t_f = to_host(t_f)
        k = np.round(t_f / ctx.rec_dt)
        snap = to_host(ctx.snap)
        slot = (k % snap.shape[1]).astype(np.int64)
        ahead = (t["row_status"] == Status.RUNNING) & (t["row_time"] > t_f * (1.0 + 1e-12))
        cand = np.flatnonzero(ahead)
        rows = cand[snap[cand, slot[cand], 0] == k[cand]]
        if not len(rows):
            return
        self._shown = (rows, {c: t[c][rows].copy() for c in self.SHOWN})
        s = snap[rows, slot[rows]]
        t["body_position"][rows] = s[:, 2:5]
        t["body_velocity"][rows] = s[:, 5:8]
        t["body_attitude"][rows] = s[:, 8:12]
        t["body_omega"][rows] = s[:, 12:15]
        t["row_time"][rows] = t_f[rows]
        t["probe_phase"][rows] = s[:, 1].astype(t["probe_phase"].dtype)
        t.write_back(self.SHOWN)

    def _restore(self) -> None:
        """Put back the rows' own states that :meth:`_show_snapshots` replaced."""
        shown = getattr(self, "_shown", None)
        if shown is None:
            return
        rows, cols = shown
        t = HostColumns(self.ctx.table, self.ctx.backend)
        for c, v in cols.items():
            t[c][rows] = v
        t.write_back(cols)
        self._shown = None

    def _inertial(self, rows: np.ndarray | None = None) -> None:
        """Refresh the ProbeInertial columns (when the table has them) from the rotating-frame state
        (of all rows, or of the index array ``rows``)."""
        if not self.ctx.table.has("probe_position_inertial"):
            return
        t = HostColumns(self.ctx.table, self.ctx.backend)
        r = slice(None) if rows is None else rows
        w = np.asarray(self.ctx.rotation)
        qt = target_attitude(w, t["row_time"][r])
        x = t["body_position"][r]
        t["probe_target_attitude"][r] = qt
        t["probe_position_inertial"][r] = quat_rotate(qt, x)
        t["probe_velocity_inertial"][r] = quat_rotate(qt, t["body_velocity"][r] + np.cross(w, x))
        t["probe_attitude_inertial"][r] = quat_multiply(qt, t["body_attitude"][r])
        t.write_back(self.INERTIAL)

    #: the columns :meth:`_inertial` writes (ProbeInertial)
    INERTIAL = ("probe_target_attitude", "probe_position_inertial", "probe_velocity_inertial", "probe_attitude_inertial")


def _terrain_radius(target: DeployTarget) -> float:
    """Radius [m] of a sphere about the target CoM enclosing the terrain's base shape."""
    from components.terrain import SDFGrid

    base = target.terrain.base
    if isinstance(base, SDFGrid):
        lo, hi = base.origin, base.upper
        corners = np.array([[a, b, c] for a in (lo[0], hi[0]) for b in (lo[1], hi[1]) for c in (lo[2], hi[2])])
        return float(np.max(np.linalg.norm(corners, axis=1)))
    # analytic: march out along the axes until the distance is positive and grows like |x|
    r = 1.0
    for _ in range(80):
        pts = r * np.vstack([np.eye(3), -np.eye(3)])
        d, _ = eval_terrain(target.terrain, pts)
        if np.all(d > 0.5 * r):
            return r
        r *= 1.5
    raise InputError("DeployTarget.terrain", "unbounded", "the terrain must be a bounded body")


def _term_args_on_device(tt: TermArgs, table) -> TermArgs:
    """A phase kernel's term argument (:data:`ecs.terms.TermArgs`, no links)
    on the device: the table's own columns are there already; every other array (a term's
    resource arrays, a stand-in for a column the table lacks, the parameters) is copied once."""
    own = {id(v) for v in table.columns.values()}

    def dev(a):
        return a if id(a) in own else device_array(a) if isinstance(a, np.ndarray) else a

    return kernel_tuple(TermArgs(kernel_tuple(dev(a) for a in tt.columns), dev(tt.params),
                                 kernel_tuple(dev(a) for a in tt.sample), ()))
