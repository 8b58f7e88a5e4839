"""The World: authoring with esper, packing into tables, and the frame loop.

Authoring (per entity, Python objects) goes through esper; each :class:`World` owns its own esper
context (``esper.switch_world``), so two worlds in one process never see each other's entities,
processors or event handlers. ``World.compile`` packs entities into archetype tables
(:mod:`ecs.table`) for a block of samples; ``World.run`` steps the frame loop over those tables.

Frame (one ``dt``): the SCHEDULED systems run in dependency order; the integrator among them owns
the stage loop and calls :meth:`Frame.run_derivatives` at every stage, and :meth:`Frame.run_events`
when it localises an event. Records are taken every ``record_every`` frames.
"""

from __future__ import annotations

import contextlib
import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import esper
import numpy as np

from .status import Reason, Status

from .component import ENTITY, columns_of
from .errors import BackendError, InputError
from .events import EventLog
from .kernels import copy_into, device_array, gc_frozen, gpu_backend_error, set_rows, to_host
from .system import Phase, System, check_derivatives, check_events, schedule
from .table import ENGINE_COLUMNS, Table

_world_ids = itertools.count()


@dataclass
class Frame:
    """What a system sees when it runs: the world, the clock and the backend.

    Attributes:
        world: the world being stepped.
        t: simulated time at the start of the frame [s].
        dt: frame length [s].
        index: frame number (0-based).
        record_interval: time between two recorded frames [s] (0: this run records nothing).
        recorded: this frame's end is recorded (a system stepping rows past the frame end shows
            them at the frame end then: docs/design.md §8.2).
        stage: the integrator stage the DERIVATIVE systems are evaluated at (0: the step's start,
            an accepted state — where event systems such as facet contact compare contact sets).
        span: how many of the run's frames this one covers (1 unless every SCHEDULED system
            allows more: :meth:`ecs.system.System.frame_span`); ``index`` is the first of them,
            ``dt`` their length.
    """

    world: "World"
    t: float
    dt: float
    index: int
    record_interval: float = 0.0
    recorded: bool = False
    stage: int = 0
    span: int = 1
    #: streaming active set (:meth:`World.compile` with ``active``): each sample slot's own frame
    #: index (its sample entered at a later frame than others; -1: empty slot), the nominal frame
    #: length [s], the frames per sample and the run's end time [s]; ``None`` when every row is
    #: at frame ``index``
    slot_frame: np.ndarray | None = None
    step: float = 0.0
    frames: int = 0
    t_end: float = 0.0

    @property
    def backend(self) -> str:
        return self.world.backend

    def row_ends(self, table) -> np.ndarray:
        """This frame's end time [s] for every row of ``table`` (float64, [rows]).

        ``t + dt`` for every row, except in a streaming active set where a row's sample started at
        a later frame: there its own frame ``j`` ends at ``j * step + min(step, t_end - j * step)``
        (the last frame of a sample is shorter), computed exactly as the frame-synchronous loop does;
        a frame that covers ``span`` frames ends where its last one, ``j + span - 1`` (at most the
        sample's last), ends."""
        if self.slot_frame is None:
            if self.span == 1:
                return np.full(table.row_count, self.t + self.dt)
            j = np.full(table.row_count, self.index)     # (the last frame covered, as when run alone)
        else:
            j = np.repeat(self.slot_frame, table.entity_count)
        if self.span > 1:
            j = np.where(j >= 0, np.minimum(j + self.span - 1, self.frames - 1), j)
        tj = j * self.step
        fdt = np.where(j == self.frames - 1, np.minimum(self.step, self.t_end - tj), self.step)
        return tj + fdt

    def run_derivatives(self) -> None:
        """Run every DERIVATIVE system's ``process`` once (called by integrators at each stage);
        systems that only contribute a row term are applied by the integrator itself."""
        for s in self.world._schedule[Phase.DERIVATIVE]:
            if s.launches:
                s.process(self)

    def run_events(self) -> None:
        """Run every EVENT system once (called by integrators when they localise an event)."""
        for s in self.world._schedule[Phase.EVENT]:
            s.process(self)


@dataclass
class RunResult:
    """In-memory results of one block (what the store writer consumes).

    Attributes:
        times: record times [s], shape [time].
        trajectories: column -> array [samples, time, entity_count, *shape] (host).
        finals: column -> array [samples, entity_count, *shape] (host).
        status: sample status (max over the sample's rows), shape [samples], int8.
        reason: :class:`~ecs.status.Reason` of a FAILED sample (its first failed row's;
            UNSPECIFIED when that row carries none), 0 otherwise, shape [samples], int8.
        events: event field -> array [samples, capacity, *shape]; ``event_count`` [samples].
        dims: column -> entity dimension name (the table prefix).
    """

    times: np.ndarray
    trajectories: dict[str, np.ndarray]
    finals: dict[str, np.ndarray]
    status: np.ndarray
    events: dict[str, np.ndarray]
    event_count: np.ndarray
    dims: dict[str, str]
    frames: int = 0
    reason: np.ndarray | None = None


#: Most frames one run may have: a frame costs tens of microseconds of bookkeeping at least, so
#: 10⁸ frames are days of work (a t_end or dt off by orders of magnitude, e.g. ``-p t_end=1e12``).
MAX_FRAMES = 100_000_000


def check_run_times(t_end, dt, record_every=None) -> int:
    """The number of frames of a run to ``t_end`` in frames of ``dt``, after refusing, in one line
    naming the value and the rule, a time step that is not positive and finite, an end time that is
    negative or not finite, a recording interval below one frame (or not an integer), and more than
    :data:`MAX_FRAMES` frames. Checked where a scene is made (:class:`ecs.scene.Scene`) and again
    where a world runs, so a bad scene is refused before any store exists."""
    try:
        dt_ok = dt > 0 and math.isfinite(dt)
    except TypeError:
        dt_ok = False
    if not dt_ok:
        raise InputError("dt", dt, "must be a positive finite time step [s]")
    try:
        t_ok = t_end >= 0 and math.isfinite(t_end)
    except TypeError:
        t_ok = False
    if not t_ok:
        raise InputError("t_end", t_end, "must be a non-negative finite time [s]")
    if record_every is not None and (isinstance(record_every, bool) or not isinstance(record_every, (int, np.integer))
                                     or record_every < 1):
        raise InputError("record_every", record_every, "must be a whole number of frames >= 1 (or None: no "
                                                       "trajectories)")
    n_frames = int(math.ceil(t_end / dt - 1e-9))
    if n_frames > MAX_FRAMES:
        raise InputError("t_end / dt", f"{t_end:g} s / {dt:g} s",
                         f"makes {n_frames:.3g} frames, more than {MAX_FRAMES:.0e}: check the units of t_end and dt")
    return n_frames


class World:
    """A scene under construction and, after :meth:`compile`, its packed tables."""

    def __init__(self, name: str | None = None):
        self.name = name or "world"
        self._ctx = f"tumble-{next(_world_ids)}"
        self._resources: dict[type, Any] = {}
        self._names: dict[int, str] = {}
        self._deferring = False
        self._deferred: list[tuple[Callable, tuple]] = []
        self._handlers: list[Callable] = []
        self.tables: list[Table] = []
        self.backend = "cpu"
        #: The frame the ``body_*`` state columns are integrated in (column frame ``"integration"``):
        #: ``"inertial"`` unless a pipeline says otherwise (a deployment integrates its probes in the
        #: rotating target frame and sets ``"target"`` when it binds). Written to the store's
        #: ``frame`` attributes.
        self.integration_frame = "inertial"
        self.events = EventLog()
        self._schedule: dict[Phase, list[System]] = {ph: [] for ph in Phase}
        self._systems: list[System] = []
        self._compiled = False
        self.layout_only = False       # True while systems bind for a schema only (:meth:`compile`)
        self._schema_only = False      # compiled with layout_only: not runnable
        self._waived: set[tuple[str, str]] = set()

    # ------------------------------------------------------------------ esper context
    @contextlib.contextmanager
    def _active(self):
        prev = esper.current_world
        esper.switch_world(self._ctx)
        try:
            yield
        finally:
            esper.switch_world(prev)

    def __del__(self):  # pragma: no cover - interpreter shutdown order varies
        try:
            if esper.current_world != self._ctx and self._ctx in esper.list_worlds():
                esper.delete_world(self._ctx)
        except Exception:
            pass

    # ------------------------------------------------------------------ authoring
    def spawn(self, *components, name: str | None = None) -> int:
        """Create an entity with ``components``; returns its id. Deferred while running."""
        if self._deferring:
            eid_box: list[int] = []
            self._deferred.append((self._spawn_now, (components, name, eid_box)))
            return -1
        return self._spawn_now(components, name, None)

    def _spawn_now(self, components, name, box):
        for c in components:
            columns_of(type(c))
        with self._active():
            eid = esper.create_entity(*components)
        if name is not None:
            self._names[eid] = name
        if box is not None:
            box.append(eid)
        self._compiled = False
        return eid

    def despawn(self, entity: int) -> None:
        """Delete an entity (deferred while running)."""
        if self._deferring:
            self._deferred.append((self.despawn, (entity,)))
            return
        with self._active():
            esper.delete_entity(entity, immediate=True)
        self._names.pop(entity, None)
        self._compiled = False

    def add_component(self, entity: int, comp) -> None:
        """Add (or replace) a component on an entity (deferred while running)."""
        if self._deferring:
            self._deferred.append((self.add_component, (entity, comp)))
            return
        columns_of(type(comp))
        with self._active():
            esper.add_component(entity, comp)
        self._compiled = False

    def remove_component(self, entity: int, ctype: type) -> None:
        """Remove a component from an entity (deferred while running)."""
        if self._deferring:
            self._deferred.append((self.remove_component, (entity, ctype)))
            return
        with self._active():
            esper.remove_component(entity, ctype)
        self._compiled = False

    def flush(self) -> None:
        """Apply structural changes queued while the world was running."""
        ops, self._deferred = self._deferred, []
        for fn, args in ops:
            fn(*args)

    def name_of(self, entity: int) -> str:
        return self._names.get(entity, f"entity{entity}")

    def entity(self, name: str) -> int:
        """Entity id by name."""
        for e, n in self._names.items():
            if n == name:
                return e
        raise KeyError(f"no entity named {name!r}")

    def component(self, entity: int, ctype: type):
        with self._active():
            return esper.component_for_entity(entity, ctype)

    def components(self, entity: int) -> tuple:
        with self._active():
            return esper.components_for_entity(entity)

    def query(self, *ctypes: type) -> list[tuple[int, tuple]]:
        """Entities having all ``ctypes``: ``[(entity, (c1, c2, ...)), ...]``."""
        with self._active():
            if len(ctypes) == 1:
                return [(e, (c,)) for e, c in esper.get_component(ctypes[0])]
            return list(esper.get_components(*ctypes))

    def entities(self) -> list[int]:
        with self._active():
            return list(esper.get_entities())

    # event handlers (esper's, scoped to this world)
    def set_handler(self, event: str, fn: Callable) -> None:
        """Handle ``event`` in this world only. The world keeps ``fn`` alive (esper holds weak refs)."""
        self._handlers.append(fn)
        with self._active():
            esper.set_handler(event, fn)

    def dispatch(self, event: str, *args) -> None:
        with self._active():
            esper.dispatch_event(event, *args)

    # ------------------------------------------------------------------ resources
    def add_resource(self, resource: Any) -> Any:
        """Register a singleton shared by all rows (a field, a table of pair interactions, ...)."""
        self._resources[type(resource)] = resource
        return resource

    def resource(self, rtype: type, default: Any = ...) -> Any:
        if rtype in self._resources:
            return self._resources[rtype]
        for t, r in self._resources.items():
            if issubclass(t, rtype):
                return r
        if default is not ...:
            return default
        raise KeyError(f"no resource of type {rtype.__name__} in world {self.name!r}")

    # ------------------------------------------------------------------ systems
    def add_system(self, system: System, priority: int = 0) -> System:
        """Register a system (an esper Processor) with this world."""
        with self._active():
            esper.add_processor(system, priority)
        self._systems.append(system)
        self._schedule = schedule(self._systems)
        if self._compiled:
            system.bind(self)
        return system

    @property
    def systems(self) -> list[System]:
        return list(self._systems)

    def schedule(self) -> dict[Phase, list[System]]:
        return self._schedule

    # ------------------------------------------------------------------ compile
    def compile(self, *, samples: int = 1, backend: str = "cpu", sample_offset: int = 0,
                overrides: dict[tuple[int, str], Any] | None = None, active: int | None = None,
                layout_only: bool = False) -> list[Table]:
        """Pack entities into archetype tables for ``samples`` samples.

        Args:
            samples: number of samples in the block (rows = entities x samples).
            backend: ``"cpu"`` (numpy columns) or ``"gpu"`` (cupy columns).
            sample_offset: global index of the block's first sample.
            overrides: per-sample values ``{(entity, column): array [samples, *shape]}``
                (dispersed parameters), applied at pack time.
            active: streaming active set (seed 004 §2.7.3): when ``active < samples`` and the world
                can stream (:meth:`can_stream`), the tables hold only ``active`` sample *slots*;
                the block's packed rows wait in a pool, and :meth:`run` refills a slot with the
                next pending sample when its sample finishes. ``world.samples`` is then the slot
                count and ``row_sample`` the slot. ``None`` (default) or ``>= samples``: every
                sample in the tables.
            layout_only: the tables and bound systems are wanted for their schema and kernel types
                only (a store's layout, the kernels a cold start compiles): :attr:`layout_only` is
                True while the systems bind, and a system skips the work its ``bind`` would run over
                the rows (a deployment's end check, whose kernel a cold start would otherwise
                compile first, alone, before the shared compile of :func:`ecs.warm.warm_kernels`).
                A world compiled so is not run: compile it again first.
        """
        if backend not in ("cpu", "gpu"):
            raise InputError("backend", backend, "must be 'cpu' or 'gpu'")
        if backend == "gpu":
            why = gpu_backend_error()
            if why:
                raise BackendError(why)
        if samples < 1:
            raise InputError("samples", samples, "must be >= 1")
        if active is not None and (isinstance(active, bool) or not isinstance(active, (int, np.integer)) or active < 1):
            raise InputError("active", active, "must be an integer >= 1 (sample slots of the streaming active set)")
        self.flush()
        was_compiled = self._compiled
        overrides = dict(overrides or {})
        with self._active():
            ents = sorted(esper.get_entities())
            comps = {e: esper.components_for_entity(e) for e in ents}
        groups: dict[tuple[type, ...], list[int]] = {}
        for e in ents:
            arche = tuple(sorted((type(c) for c in comps[e]), key=lambda t: (t.__module__, t.__qualname__)))
            if arche:
                groups.setdefault(arche, []).append(e)
        # where each entity lives: entity -> (table index, entity index)
        where = {}
        for ti, (arche, es) in enumerate(groups.items()):
            for k, e in enumerate(es):
                where[e] = (ti, k)
        tables: list[Table] = []
        used_overrides = set()
        for ti, (arche, es) in enumerate(groups.items()):
            E = len(es)
            cols: dict[str, np.ndarray] = {}
            specs = {}
            owners = {}
            refs = {}
            for ctype in arche:
                for spec, fname in zip(ctype.__columns__, ctype.__fieldnames__):
                    if spec.name in specs:
                        raise InputError(f"column {spec.name}", ctype.__name__,
                                         f"declared by two components of one entity ({owners[spec.name][0].__name__})")
                    specs[spec.name] = spec
                    owners[spec.name] = (ctype, fname)
                    base = np.empty((E,) + spec.shape, dtype=spec.storage_dtype)
                    for k, e in enumerate(es):
                        c = next(c for c in comps[e] if type(c) is ctype)
                        v = getattr(c, fname)
                        base[k] = self._coerce(v, spec, e)
                    block = np.broadcast_to(base, (samples,) + base.shape).copy()
                    for s_e in es:
                        key = (s_e, spec.name)
                        if key in overrides:
                            val = np.asarray(overrides[key])
                            if val.shape[0] != samples:
                                raise InputError(f"override {spec.name} of {self.name_of(s_e)}", val.shape,
                                                 f"leading axis must equal samples={samples}")
                            block[:, where[s_e][1]] = val.astype(spec.storage_dtype, copy=False).reshape(
                                (samples,) + spec.shape)
                            used_overrides.add(key)
                    if spec.check is not None:
                        self._check_rule(spec, block, es, sample_offset)
                    if spec.dtype == ENTITY:
                        block, target_entities = self._resolve_refs(block, spec, es, where, groups)
                        refs[spec.name] = target_entities
                    cols[spec.name] = block.reshape((samples * E,) + spec.shape)
            n = samples * E
            cols["row_status"] = np.zeros(n, np.int8)
            cols["row_reason"] = np.zeros(n, np.int8)
            cols["row_time"] = np.zeros(n, np.float64)
            cols["row_sample"] = np.repeat(np.arange(samples, dtype=np.int64), E)
            cols["row_entity"] = np.tile(np.arange(E, dtype=np.int64), samples)
            specs.update(ENGINE_COLUMNS)
            prefixes = sorted({c.__prefix__ for c in arche})
            prefix = _table_prefix(prefixes)
            tables.append(Table(archetype=arche, entities=np.array(es, dtype=np.int64), samples=samples,
                                sample_offset=sample_offset, columns=cols, specs=specs, prefix=prefix,
                                backend=backend, components={k: v for k, v in owners.items()},
                                entities_ref=refs))
        unused = set(overrides) - used_overrides
        if unused:
            e, c = sorted(unused)[0]
            raise InputError("override", f"{c} of {self.name_of(e)}", "no such column on that entity")
        if (active is not None and active < samples and was_compiled and getattr(self, "_pool", None) is not None
                and self.samples == active and backend == self.backend and _schema(tables) == _schema(self.tables)):
            # the same world streams the next block: its slots, systems and buffers stay, only the pool
            # changes (no reallocation between blocks: memory stays flat however many blocks run)
            self._pool = _Pool(samples, [t.columns for t in tables])
            self.sample_offset = sample_offset
            for t in self.tables:
                t.sample_offset = sample_offset
            self._load_slots(np.arange(active), np.arange(active))
            return self.tables
        self.tables = tables
        self.backend = backend
        self.sample_offset = sample_offset
        self._pool = None
        if active is not None and active < samples and self.can_stream():
            # the pool keeps the block's packed rows; the tables keep the first `active` samples
            self._pool = _Pool(samples, [t.columns for t in tables])
            for t in tables:
                t.columns = {k: v[:active * t.entity_count].copy() for k, v in t.columns.items()}
                t.samples = active
            samples = active
        if backend == "gpu":            # the tables (the slots when streaming) on the device; a pool stays on the host
            for t in tables:
                t.columns = {k: device_array(v) for k, v in t.columns.items()}
        self.samples = samples
        for s in self._systems:
            s.declare_events(self.events)
        self.events.allocate(samples, backend)
        self._compiled = True
        self.layout_only = self._schema_only = bool(layout_only)
        try:
            for s in self._systems:
                s.bind(self)
        finally:
            self.layout_only = False
        return tables

    def _load_slots(self, slots: np.ndarray, samples: np.ndarray) -> None:
        """Load block-local ``samples`` from the pool into sample ``slots`` (streaming active set):
        their packed rows, reset engine columns and event log rows; then every system's
        :meth:`~ecs.system.System.refill`."""
        for t, cols in zip(self.tables, self._pool.columns):
            E = t.entity_count
            dst = (slots[:, None] * E + np.arange(E)).ravel()
            src = (samples[:, None] * E + np.arange(E)).ravel()
            for k, v in t.columns.items():
                if k != "row_sample":           # a row's sample index is its slot (the event log's row)
                    set_rows(v, dst, cols[k][src])
        ev = self.events
        for a in ev.arrays.values():
            set_rows(a, slots, np.nan if np.issubdtype(a.dtype, np.floating) else -1)
        set_rows(ev.count, slots, 0)
        set_rows(ev.overflow, slots, 0)
        for s in self._systems:
            s.refill(self, slots)

    def can_stream(self) -> bool:
        """True when this world can run a streaming active set (either backend): no
        entity-reference column, every system ``streams`` (:attr:`ecs.system.System.streams`) or is
        a DERIVATIVE system that takes part as a row term (its per-row data are columns)."""
        if not self._systems:
            return False
        if any(spec.dtype == ENTITY for t in self.tables for spec in t.specs.values()):
            return False
        return all(s.streams or (s.phase == Phase.DERIVATIVE and s.term(self) is not None) for s in self._systems)

    @property
    def block_samples(self) -> int:
        """Samples of the compiled block (``samples`` of :meth:`compile`; more than
        :attr:`samples`, the slots, in a streaming active set)."""
        return self._pool.samples if getattr(self, "_pool", None) is not None else self.samples

    def _coerce(self, v, spec, e):
        if spec.dtype == ENTITY:
            return -1 if v is None else int(v)
        arr = np.asarray(v, dtype=spec.storage_dtype) if not isinstance(v, np.ndarray) else v
        if arr.shape != spec.shape:
            try:
                arr = np.broadcast_to(np.asarray(arr, dtype=spec.storage_dtype), spec.shape)
            except ValueError:
                raise InputError(f"{spec.name} of {self.name_of(e)}", np.asarray(v).tolist(),
                                 f"must have shape {spec.shape}") from None
        # NaN is refused, except in a column whose declared default is NaN ("has not happened yet")
        nan_ok = isinstance(spec.default, float) and math.isnan(spec.default)
        if np.issubdtype(spec.storage_dtype, np.floating) and not np.all(np.isfinite(arr) | (nan_ok & np.isnan(arr))):
            raise InputError(f"{spec.name} of {self.name_of(e)}", np.asarray(v).tolist(), "must be finite (no NaN or inf)")
        return arr

    def waive_rule(self, column: str, rule: str) -> None:
        """Run this world outside a column's named validity rule (:mod:`ecs.rules`), knowingly:
        ``world.waive_rule("body_inertia", "triangle_inequality")``. Stored with the scene's
        systems; say why in the scene's docs."""
        self._waived.add((column, rule))

    def rules_of(self, spec) -> tuple:
        """The validity rules of a column spec that this world applies (waived ones removed)."""
        rules = spec.check if isinstance(spec.check, tuple) else (() if spec.check is None else (spec.check,))
        return tuple(r for r in rules if (spec.name, r.name) not in self._waived)

    def _check_rule(self, spec, block, es, sample_offset: int) -> None:
        """Apply a column's validity rules to every packed row (authored or dispersed)."""
        E = len(es)
        for rule in self.rules_of(spec):
            k = rule.first_bad(block.reshape((block.shape[0] * E,) + spec.shape))
            if k is not None:
                s, j = divmod(k, E)
                raise InputError(f"{spec.name} of {self.name_of(es[j])} (sample {sample_offset + s})",
                                 np.asarray(block[s, j]).tolist(), rule.text)

    def _resolve_refs(self, block, spec, es, where, groups):
        """Entity ids -> row index (same sample) in the referenced entity's table."""
        flat = block.reshape(block.shape[0], -1)
        target_tables = set()
        out = np.full_like(flat, -1)
        group_list = list(groups.items())
        for j in range(flat.shape[1]):
            for s in range(flat.shape[0]):
                ref = int(flat[s, j])
                if ref < 0:
                    continue
                if ref not in where:
                    raise InputError(spec.name, ref, "refers to an entity that does not exist")
                ti, k = where[ref]
                target_tables.add(ti)
                out[s, j] = s * len(group_list[ti][1]) + k
        if len(target_tables) > 1:
            raise InputError(spec.name, sorted(target_tables), "entity references of one column must all point into one archetype")
        tents = np.array(group_list[target_tables.pop()][1], dtype=np.int64) if target_tables else np.zeros(1, np.int64)
        return out.reshape(block.shape), tents

    # ------------------------------------------------------------------ table lookup
    def tables_with(self, *columns: str) -> list[Table]:
        """Every table that has all ``columns``."""
        return [t for t in self.tables if t.has(*columns)]

    def table_with(self, *columns: str, required: bool = True) -> Table | None:
        """The one table that has all ``columns`` (error if several; ``None``/error if none)."""
        ts = self.tables_with(*columns)
        if len(ts) > 1:
            raise InputError("columns", columns, f"are found in {len(ts)} tables; a system needs them in one")
        if not ts:
            if required:
                raise KeyError(f"no table has columns {columns}")
            return None
        return ts[0]

    def column_spec(self, column: str):
        """The :class:`~ecs.component.ColumnSpec` of ``column`` in the compiled tables, or ``None``."""
        for t in self.tables:
            if column in t.specs:
                return t.specs[column]
        return None

    def column_table(self, column: str) -> Table:
        return self.table_with(column)

    def compile_units(self) -> list:
        """The CPU kernel compiles the compiled world's systems will need, in schedule order
        (:meth:`ecs.system.System.compile_units`; :func:`ecs.warm.warm_kernels` runs them)."""
        if not self._compiled:
            raise RuntimeError("compile_units() needs a compiled world (World.compile)")
        return [u for s in self._systems for u in s.compile_units()]

    # ------------------------------------------------------------------ frame loop
    def run(self, *, t_end: float, dt: float, record_every: int | None = None,
            record: Iterable[str] = (), final: Iterable[str] = (),
            on_frame: Callable[[int, int], None] | None = None,
            on_samples: Callable[[int, int, RunResult], None] | None = None,
            window: int | None = None, flush: int | None = None) -> RunResult | None:
        """Step the compiled world from t = 0 to ``t_end`` in frames of ``dt``.

        Args:
            t_end: end time [s].
            dt: frame length [s]; fixed-step integrators take one step per frame, adaptive
                ones take as many per row as their tolerance needs to land on the frame end.
            record_every: record ``record`` columns every this many frames (``None``: never).
            record: columns sampled into trajectories.
            final: columns saved at the end of the run.
            on_frame: called as ``on_frame(frame_index, frame_count)`` after each frame; in a
                streaming active set ``on_frame(samples finished, block samples)``.
            on_samples: where results leave: ``on_samples(start, stop, result)`` with the
                :class:`RunResult` of block-local samples ``start:stop``, in order; then ``run``
                returns ``None``. A streaming active set calls it whenever the finished samples
                at the front of the block reach a multiple of ``flush`` (and at the end), so that
                only ``window`` finished samples wait in memory; otherwise it is called once.
            window: streaming: finished samples kept until they leave (default
                :data:`STREAM_WINDOW` x the slots); a sample enters only while it is within
                ``window`` of the first sample not yet out.
            flush: streaming: samples per ``on_samples`` call (default :data:`STREAM_FLUSH`).

        Returns:
            The block's :class:`RunResult` (``None`` with ``on_samples``). Rows still RUNNING at
            ``t_end`` become DONE.

        A streaming active set (:meth:`compile` with ``active``) gives every sample the same
        frames, records and results as a frame-synchronous run of the whole block: a sample
        enters at a frame start (a recorded one when recording), its slot's frames count from
        there (:meth:`Frame.row_ends`), and it leaves its slot when all its rows have ended or its
        last frame is done (seed 004 §2.7.3: n active runs refilled from the pool).
        """
        if not self._compiled:
            self.compile()
        if self._schema_only:
            raise InputError("World.run", "a world compiled with layout_only=True",
                             "is a schema only: compile it again (World.compile without layout_only) before running")
        check_derivatives(self, self._systems)
        check_events(self, self._systems)
        n_frames = check_run_times(t_end, dt, record_every)
        # the frames' full garbage collections skip what exists now (the scene, its tables, numba's
        # compiled state): the loops make small objects at every launch, and each full collection
        # walked all of those (1 % of a 2,000-sample deploy-cube run, docs/design.md §8.29)
        with gc_frozen():
            return self._run_frames(t_end, dt, n_frames, record_every, record, final, on_frame, on_samples, window,
                                    flush)

    def _run_frames(self, t_end, dt, n_frames, record_every, record, final, on_frame, on_samples, window,
                    flush) -> RunResult | None:
        """:meth:`run` after its checks (its arguments, ``n_frames`` frames)."""
        record = tuple(record)
        final = tuple(final)
        rec_tables = {c: self.column_table(c) for c in record + final}
        n_rec = (n_frames // record_every + 1) if (record_every and record) else 0
        trajs = {}
        for c in record:
            t = rec_tables[c]
            trajs[c] = np.zeros((t.samples, n_rec, t.entity_count) + t.specs[c].shape, t.specs[c].storage_dtype)
        times = np.array([min(k * record_every * dt, t_end) for k in range(n_rec)]) if n_rec else np.zeros(0)
        if getattr(self, "_pool", None) is not None and n_frames > 0:
            return _Stream(self, t_end, dt, n_frames, record_every if n_rec else 1, n_rec, times, record, final,
                           rec_tables, window, flush).run(on_frame, on_samples)

        def take(k):
            for c in record:
                trajs[c][:, k] = to_host(rec_tables[c].by_sample(c))

        frame = Frame(self, 0.0, dt, 0, record_interval=float(record_every * dt) if n_rec else 0.0, step=dt,
                      frames=n_frames, t_end=t_end)
        if n_rec:
            take(0)
        scheduled = self._schedule[Phase.SCHEDULED]
        most = frame_span(scheduled, dt)
        self._deferring = True
        done_at = n_frames
        try:
            i = 0
            while i < n_frames:
                # frames run as one (Frame.span) up to what every scheduled system allows, never
                # past a recorded frame's end
                k = min(most, n_frames - i, (record_every - i % record_every) if n_rec else n_frames)
                frame.index = i
                frame.t = i * dt
                frame.span = k
                if k == 1:
                    frame.dt = min(dt, t_end - frame.t) if i == n_frames - 1 else dt
                else:
                    frame.dt = min(k * dt, t_end - frame.t)
                frame.recorded = bool(n_rec and (i + k) % record_every == 0)
                for s in scheduled:
                    s.process(frame)
                i += k
                if on_frame is not None:
                    on_frame(i, n_frames)
                if frame.recorded:
                    take(i // record_every)
                if (k > 1 or i % 16 == 0) and i < n_frames and not self._any_running():
                    done_at = i
                    break
        finally:
            self._deferring = False
        if n_rec and done_at < n_frames:  # every row stopped early: its state is frozen
            k0 = done_at // record_every + 1
            for k in range(k0, n_rec):
                take(k)
        for t in self.tables:
            col = t.columns["row_status"]
            st = to_host(col)                   # the column itself on the CPU backend
            st[st == Status.RUNNING] = Status.DONE
            if st is not col:
                copy_into(col, st)
        self.flush()
        finals = {c: to_host(rec_tables[c].by_sample(c)).copy() for c in final}
        status = self.sample_status()
        ev, cnt = self.events.to_host()
        result = RunResult(times=times, trajectories=trajs, finals=finals, status=status, events=ev,
                           event_count=cnt, dims={c: rec_tables[c].prefix for c in record + final},
                           frames=done_at,
                           reason=self.sample_reason() if (status == Status.FAILED).any() else np.zeros_like(status))
        if on_samples is not None:
            on_samples(0, self.samples, result)
            return None
        return result

    def _any_running(self) -> bool:
        return any(bool((to_host(t.columns["row_status"]) == Status.RUNNING).any()) for t in self.tables)

    def sample_reason(self) -> np.ndarray:
        """Failure reason per block-local sample: that of the sample's first FAILED row (tables in
        order, rows in order), UNSPECIFIED when that row has none; 0 for samples that did not fail."""
        out = np.zeros(self.samples, np.int8)
        for t in self.tables:
            st = to_host(t.columns["row_status"]).reshape(t.samples, t.entity_count)
            rs = to_host(t.columns["row_reason"]).reshape(t.samples, t.entity_count)
            failed = st == Status.FAILED
            has = failed.any(axis=1)
            first = np.argmax(failed, axis=1)
            r = rs[np.arange(t.samples), first]
            r = np.where(r > 0, r, np.int8(Reason.UNSPECIFIED))
            out = np.where((out == 0) & has, r, out).astype(np.int8)
        return out

    def sample_status(self) -> np.ndarray:
        """Status per block-local sample: the largest row code of the sample (FAILED wins)."""
        out = np.zeros(self.samples, np.int8)
        for t in self.tables:
            st = to_host(t.columns["row_status"]).reshape(t.samples, t.entity_count)
            out = np.maximum(out, st.max(axis=1))
        return out


def _table_prefix(prefixes: list[str]) -> str:
    """Entity dimension name of a table: the first prefix by convention order."""
    order = ("body", "facet", "probe", "rock", "joint", "load")
    for p in order:
        if p in prefixes:
            return p
    return prefixes[0] if prefixes else "entity"


#: Streaming active set: finished samples that may wait in memory before they leave, per slot
#: (``window`` of :meth:`World.run` = this x the slots). A sample enters only within the window
#: of the first sample not yet out, so a slow sample at the front holds at most this many.
STREAM_WINDOW = 2
#: Streaming active set: the finished front of the block leaves (``on_samples``) in multiples of
#: this many samples (block-local), a whole inner chunk of the store's larger arrays.
STREAM_FLUSH = 512


class _Pool:
    """A streaming block's packed rows (:meth:`World.compile` with ``active``): per table, column
    -> [block samples x entities, *shape]. A slot is refilled from here."""

    def __init__(self, samples: int, columns: list[dict[str, np.ndarray]]):
        self.samples = samples
        self.columns = columns


class _Stream:
    """One :meth:`World.run` of a streaming active set (its docstring): slots, refills, the ring
    of finished samples waiting to leave, and their bulk exits."""

    def __init__(self, world: World, t_end: float, dt: float, n_frames: int, every: int, n_rec: int,
                 times: np.ndarray, record: tuple, final: tuple, rec_tables: dict, window, flush):
        for name, v in (("window", window), ("flush", flush)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1):
                raise InputError(name, v, "must be an integer >= 1 (samples)")
        self.world = world
        self.t_end, self.dt, self.n_frames, self.every, self.n_rec = t_end, dt, n_frames, every, n_rec
        self.times, self.record, self.final, self.rec_tables = times, record, final, rec_tables
        self.B = world._pool.samples
        self.n = world.samples
        self.F = int(flush or STREAM_FLUSH)
        self.W = int(min(self.B, max(window or STREAM_WINDOW * self.n, self.F)))
        W = self.W
        ev = world.events
        key = (W, n_rec, record, final, tuple((k, a.shape[1:], a.dtype.str) for k, a in ev.arrays.items()))
        ring = getattr(world, "_ring", None)
        if ring is None or ring[0] != key:        # the ring of the previous block is reused when it fits
            ring = world._ring = (key, {
                "fin": {c: np.zeros((W, rec_tables[c].entity_count) + rec_tables[c].specs[c].shape,
                                    rec_tables[c].specs[c].storage_dtype) for c in final},
                "traj": {c: np.zeros((W, n_rec, rec_tables[c].entity_count) + rec_tables[c].specs[c].shape,
                                     rec_tables[c].specs[c].storage_dtype) for c in record},
                "ev": {k: np.empty((W,) + a.shape[1:], a.dtype) for k, a in ev.arrays.items()},
                "count": np.zeros(W, np.int32), "overflow": np.zeros(W, np.int8), "status": np.zeros(W, np.int8),
                "reason": np.zeros(W, np.int8)})
        r = ring[1]
        self.fin, self.traj, self.ev = r["fin"], r["traj"], r["ev"]
        self.count, self.overflow, self.status, self.reason = r["count"], r["overflow"], r["status"], r["reason"]
        self.ready = np.zeros(W, bool)
        self.slot_sample = np.arange(self.n, dtype=np.int64)     # compile put samples 0..n-1 in the slots
        self.slot_start = np.zeros(self.n, np.int64)
        self.first_out = 0          # block-local: the first sample not yet out
        self.finished = 0
        self.results: list[RunResult] = []

    # ------------------------------------------------------------------ the loop
    def run(self, on_frame, on_samples):
        world = self.world
        sink = on_samples if on_samples is not None else (lambda a, b, r: self.results.append(r))
        frame = Frame(world, 0.0, self.dt, 0, record_interval=float(self.every * self.dt) if self.n_rec else 0.0,
                      step=self.dt, frames=self.n_frames, t_end=self.t_end)
        scheduled = world._schedule[Phase.SCHEDULED]
        every, n = self.every, self.n
        # frames run as one (Frame.span) up to what every scheduled system allows, never past a
        # recorded frame's end or a frame a sample may enter at
        most = frame_span(scheduled, self.dt)
        next_sample = n
        world._deferring = True
        try:
            if self.n_rec:
                self._take(np.arange(n), np.zeros(n, np.int64))
            i = 0
            while True:
                if i % every == 0:
                    free = np.flatnonzero(self.slot_sample < 0)
                    k = min(len(free), self.B - next_sample, self.first_out + self.W - next_sample)
                    if k > 0:
                        self._refill(free[:k], np.arange(next_sample, next_sample + k), i)
                        next_sample += k
                occupied = self.slot_sample >= 0
                if not occupied.any():
                    if self.first_out < next_sample:      # admissions wait for the window: let it out
                        self._emit(self.first_out, next_sample, sink)
                    if self.first_out >= self.B:
                        break
                    i = -(-i // every) * every       # the next frame a sample may enter at
                    continue
                j = np.where(occupied, i - self.slot_start, -1)
                k = min(most, every - i % every) if self.n_rec else most
                if k > 1:             # never past a sample's last frame (shorter, and never recorded)
                    k = min(k, self.n_frames - int(j[occupied].max()))
                frame.index, frame.t, frame.slot_frame, frame.span = i, i * self.dt, j, k
                frame.recorded = bool(self.n_rec and (i + k) % every == 0)
                for s in scheduled:
                    s.process(frame)
                if frame.recorded:
                    slots = np.flatnonzero(occupied)
                    self._take(slots, (j[slots] + k) // every)
                self._leave(occupied, j, k)
                if on_frame is not None:
                    on_frame(self.finished, self.B)
                self._emit_ready(sink)
                i += k
        finally:
            world._deferring = False
        world.flush()
        if on_samples is not None:
            return None
        return _concat(self.results)

    # ------------------------------------------------------------------ slots
    def _refill(self, slots: np.ndarray, samples: np.ndarray, i: int) -> None:
        """Load ``samples`` (block-local) from the pool into ``slots`` at frame ``i``."""
        self.world._load_slots(slots, samples)
        self.slot_sample[slots] = samples
        self.slot_start[slots] = i
        if self.n_rec:
            self._take(slots, np.zeros(len(slots), np.int64))

    def _take(self, slots: np.ndarray, k: np.ndarray) -> None:
        """Record the recorded columns of ``slots`` as their samples' records ``k``."""
        ring = self.slot_sample[slots] % self.W
        for c in self.record:
            self.traj[c][ring, k] = to_host(self.rec_tables[c].by_sample(c))[slots]

    def _leave(self, occupied: np.ndarray, j: np.ndarray, span: int = 1) -> None:
        """Copy out the samples that finished in this frame of ``span`` frames (all rows ended, or
        their last frame)."""
        world = self.world
        last = occupied & (j + span - 1 >= self.n_frames - 1)
        running = np.zeros(self.n, bool)
        host = {}             # each table's row_status (on the host: the column itself; on the GPU a copy)
        for t in world.tables:
            col = t.columns["row_status"]
            st = host[id(t)] = to_host(col).reshape(t.samples, t.entity_count)
            done = last[:, None] & (st == Status.RUNNING)
            if done.any():
                st[done] = Status.DONE
                if world.backend == "gpu":
                    set_rows(col, np.flatnonzero(done.ravel()), Status.DONE)
            running |= (st == Status.RUNNING).any(axis=1)
        slots = np.flatnonzero(occupied & ~running)
        if not len(slots):
            return
        ring = self.slot_sample[slots] % self.W
        for c in self.final:
            self.fin[c][ring] = to_host(self.rec_tables[c].by_sample(c))[slots]
        status = np.zeros(len(slots), np.int8)
        reason = np.zeros(len(slots), np.int8)
        for t in world.tables:
            st = host[id(t)][slots]
            rs = to_host(t.columns["row_reason"]).reshape(t.samples, t.entity_count)[slots]
            status = np.maximum(status, st.max(axis=1))
            failed = st == Status.FAILED
            r = rs[np.arange(len(slots)), np.argmax(failed, axis=1)]
            r = np.where(r > 0, r, np.int8(Reason.UNSPECIFIED))
            reason = np.where((reason == 0) & failed.any(axis=1), r, reason).astype(np.int8)
        self.status[ring] = status
        self.reason[ring] = reason
        ev = world.events
        for k, a in ev.arrays.items():
            self.ev[k][ring] = to_host(a)[slots]
        self.count[ring] = to_host(ev.count)[slots]
        self.overflow[ring] = to_host(ev.overflow)[slots]
        if self.record:       # an ended sample is frozen: its later records repeat its state
            later = np.arange(self.n_rec)[None, :] >= ((j[slots] + span) // self.every + 1)[:, None]
            for c in self.record:
                cur = to_host(self.rec_tables[c].by_sample(c))[slots]
                m = later.reshape(later.shape + (1,) * (cur.ndim - 1))
                self.traj[c][ring] = np.where(m, cur[:, None], self.traj[c][ring])
        self.ready[ring] = True
        self.slot_sample[slots] = -1
        self.finished += len(slots)

    # ------------------------------------------------------------------ exits
    def _emit_ready(self, sink) -> None:
        """Let out the finished front of the block when it reaches a multiple of the flush size
        (or the block's end)."""
        a = self.first_out
        span = min(self.W, self.B - a)
        r = self.ready[(a + np.arange(span)) % self.W]
        m = span if r.all() else int(np.argmin(r))
        b = a + m
        if b < self.B:
            b = (b // self.F) * self.F
        if b > a:
            self._emit(a, b, sink)

    def _emit(self, a: int, b: int, sink) -> None:
        idx = np.arange(a, b) % self.W
        events = {k: v[idx] for k, v in self.ev.items()}
        events["event_overflow"] = self.overflow[idx]
        res = RunResult(times=self.times, trajectories={c: v[idx] for c, v in self.traj.items()},
                        finals={c: v[idx] for c, v in self.fin.items()}, status=self.status[idx], events=events,
                        event_count=self.count[idx], dims={c: self.rec_tables[c].prefix for c in self.record + self.final},
                        frames=self.n_frames, reason=self.reason[idx])
        self.ready[idx] = False
        self.first_out = b
        sink(a, b, res)


def frame_span(scheduled, step: float) -> int:
    """How many frames of ``step`` [s] the world may run as one: the fewest any of the
    ``scheduled`` systems allows (:meth:`ecs.system.System.frame_span`), at least 1."""
    most = min((int(s.frame_span(step)) for s in scheduled), default=1)
    return max(1, most)


def _concat(results: list[RunResult]) -> RunResult:
    """One :class:`RunResult` of consecutive ones."""
    r0 = results[0]
    cat = lambda get: np.concatenate([get(r) for r in results])  # noqa: E731
    return RunResult(times=r0.times, trajectories={c: cat(lambda r: r.trajectories[c]) for c in r0.trajectories},
                     finals={c: cat(lambda r: r.finals[c]) for c in r0.finals}, status=cat(lambda r: r.status),
                     events={k: cat(lambda r: r.events[k]) for k in r0.events},
                     event_count=cat(lambda r: r.event_count), dims=r0.dims, frames=r0.frames,
                     reason=cat(lambda r: r.reason))


def _schema(tables: list[Table]) -> list:
    """What must match for a streaming world to keep its slots for another block: per table its
    archetype, entities and every column's row shape and dtype."""
    return [(t.archetype, t.entities.tolist(), sorted((k, v.shape[1:], v.dtype.str) for k, v in t.columns.items()))
            for t in tables]
