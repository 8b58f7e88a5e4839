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
from .kernels import cuda_simulated, gpu_backend_error, to_host
from .system import Phase, System, check_derivatives, schedule
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
    """

    world: "World"
    t: float
    dt: float
    index: int
    record_interval: float = 0.0
    recorded: bool = False
    stage: int = 0

    @property
    def backend(self) -> str:
        return self.world.backend

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
        self.events = EventLog()
        self._schedule: dict[Phase, list[System]] = {ph: [] for ph in Phase}
        self._systems: list[System] = []
        self._compiled = False
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
                overrides: dict[tuple[int, str], Any] | None = None) -> list[Table]:
        """Pack entities into archetype tables for ``samples`` samples.

        Args:
            samples: number of samples in the block (rows = entities x samples).
            backend: ``"cpu"`` (numpy columns) or ``"gpu"`` (cupy columns).
            sample_offset: global index of the block's first sample.
            overrides: per-sample values ``{(entity, column): array [samples, *shape]}``
                (dispersed parameters), applied at pack time.
        """
        if backend not in ("cpu", "gpu"):
            raise InputError("backend", backend, "must be 'cpu' or 'gpu'")
        if backend == "gpu":
            why = gpu_backend_error()
            if why:
                raise BackendError(why)
        if samples < 1:
            raise InputError("samples", samples, "must be >= 1")
        self.flush()
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
            if backend == "gpu" and not cuda_simulated():
                import cupy

                cols = {k: cupy.asarray(v) for k, v in cols.items()}
            tables.append(Table(archetype=arche, entities=np.array(es, dtype=np.int64), samples=samples,
                                sample_offset=sample_offset, columns=cols, specs=specs, prefix=prefix,
                                backend=backend, components={k: v for k, v in owners.items()},
                                entities_ref=refs))
        unused = set(overrides) - used_overrides
        if unused:
            e, c = sorted(unused)[0]
            raise InputError("override", f"{c} of {self.name_of(e)}", "no such column on that entity")
        self.tables = tables
        self.backend = backend
        self.samples = samples
        self.sample_offset = sample_offset
        for s in self._systems:
            s.declare_events(self.events)
        self.events.allocate(samples, backend)
        self._compiled = True
        for s in self._systems:
            s.bind(self)
        return tables

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

    # ------------------------------------------------------------------ frame loop
    def run(self, *, t_end: float, dt: float, record_every: int | None = None,
            record: Iterable[str] = (), final: Iterable[str] = (),
            on_frame: Callable[[int, int], None] | None = None) -> RunResult:
        """Step the compiled world from t = 0 to ``t_end`` in frames of ``dt``.

        Args:
            t_end: end time [s].
            dt: frame length [s]; fixed-step integrators take one step per frame, adaptive
                ones take as many per row as their tolerance needs to land on the frame end.
            record_every: record ``record`` columns every this many frames (``None``: never).
            record: columns sampled into trajectories.
            final: columns saved at the end of the run.
            on_frame: called as ``on_frame(frame_index, frame_count)`` after each frame.

        Returns:
            The block's :class:`RunResult`. Rows still RUNNING at ``t_end`` become DONE.
        """
        if not self._compiled:
            self.compile()
        check_derivatives(self, self._systems)
        if not (dt > 0 and math.isfinite(dt)):
            raise InputError("dt", dt, "must be a positive finite time step [s]")
        if not (t_end >= 0 and math.isfinite(t_end)):
            raise InputError("t_end", t_end, "must be a non-negative finite time [s]")
        n_frames = int(math.ceil(t_end / dt - 1e-9))
        record = tuple(record)
        final = tuple(final)
        rec_tables = {c: self.column_table(c) for c in record + final}
        if record_every is not None and record_every < 1:
            raise InputError("record_every", record_every, "must be >= 1 frame")
        n_rec = (n_frames // record_every + 1) if (record_every and record) else 0
        trajs = {}
        for c in record:
            t = rec_tables[c]
            trajs[c] = np.zeros((t.samples, n_rec, t.entity_count) + t.specs[c].shape, t.specs[c].storage_dtype)
        times = np.array([min(k * record_every * dt, t_end) for k in range(n_rec)]) if n_rec else np.zeros(0)

        def take(k):
            for c in record:
                trajs[c][:, k] = to_host(rec_tables[c].by_sample(c))

        frame = Frame(self, 0.0, dt, 0, record_interval=float(record_every * dt) if n_rec else 0.0)
        if n_rec:
            take(0)
        scheduled = self._schedule[Phase.SCHEDULED]
        self._deferring = True
        done_at = n_frames
        try:
            for i in range(n_frames):
                frame.index = i
                frame.t = i * dt
                frame.dt = min(dt, t_end - frame.t) if i == n_frames - 1 else dt
                frame.recorded = bool(n_rec and (i + 1) % record_every == 0)
                for s in scheduled:
                    s.process(frame)
                if on_frame is not None:
                    on_frame(i + 1, n_frames)
                if n_rec and (i + 1) % record_every == 0:
                    take((i + 1) // record_every)
                if (i + 1) % 16 == 0 and not self._any_running():
                    done_at = i + 1
                    break
        finally:
            self._deferring = False
        if n_rec and done_at < n_frames:  # every row stopped early: its state is frozen
            k0 = done_at // record_every + 1
            for k in range(k0, n_rec):
                take(k)
        for t in self.tables:
            st = t.columns["row_status"]
            st[st == Status.RUNNING] = Status.DONE
        self.flush()
        finals = {c: to_host(rec_tables[c].by_sample(c)).copy() for c in final}
        status = self.sample_status()
        ev, cnt = self.events.to_host()
        return RunResult(times=times, trajectories=trajs, finals=finals, status=status, events=ev,
                         event_count=cnt, dims={c: rec_tables[c].prefix for c in record + final},
                         frames=done_at,
                         reason=self.sample_reason() if (status == Status.FAILED).any() else np.zeros_like(status))

    def _any_running(self) -> bool:
        return any(bool((t.columns["row_status"] == Status.RUNNING).any()) for t in self.tables)

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
