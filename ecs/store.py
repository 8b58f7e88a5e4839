"""The run store: one Zarr v3 store per run (docs/design.md §5), written by blocks, read with xarray.

Layout (``S`` samples, ``T`` record times, ``E`` entities of a table, ``K`` event capacity)::

    /                               root attrs: tumble {format, version}, scene {name, description,
                                    source, params}, seed, seed_rule, samples, shard_samples, backend,
                                    t_end, dt, record_every, record, final, status_legend, Conventions,
                                    code {version, commit, modified}, systems [{name, type, phase,
                                    settings}], resources [{type, fields}], run (see below)
    <group>/sample                  (sample)            int64  sample index (coordinate of every group)
    scene/<name>                    (...)                      arrays resources describe themselves with
                                                               (a target's shape model: target_vertices,
                                                               target_faces)
    trajectories/time               (time)                        s      record times (coordinate)
    trajectories/<column>           (sample, time, <entity>, <component>...)
    final/<column>                  (sample, <entity>, <component>...)
    final/status                    (sample)            int8   Status code; attrs legend / flag_*
    final/event_count               (sample)            int32  event slots used (<= K)
    final/failure_code              (sample)            int8   Reason code of a failed sample (0: none)
    final/failure_message           (sample)            str    what went wrong, one line ("" if not failed)
    final/done                      (sample)            bool   written after all of the sample's data
    events/<field>                  (sample, event, <component>...)   unused slots NaN / -1
    events/event_overflow           (sample)            int8   1 when more than K events occurred
    inputs/seed                     (sample)            int64  spawn key of the sample's generator
    inputs/<dispersion name>        (sample, <component>...)     the drawn value
    <group>/<entity>                (<entity>)          int64  esper entity ids (index coordinate)
    <group>/<entity>_name           (<entity>)          str    entity names (coordinate)
    <group>/xyz, <group>/quat       component labels ("x","y","z" / "w","x","y","z")

``<entity>`` is the table prefix (``body``, ``facet``, ...; a second table with the same prefix gets
``body2``); ``<component>`` is ``xyz`` for 3-vectors, ``quat`` for 4-vectors (scalar first),
``row``/``col`` for 3x3 matrices and ``<column>_axis<k>`` otherwise. Every array sets
``dimension_names`` and the attributes ``units`` and ``long_name``; data variables name their
string coordinates in ``coordinates`` so ``xarray.open_zarr(path, group="final")`` shows them.

Writing rules (zarr-python #3682: two writers on one shard lose data):

* The driver creates every array (:func:`create_store`), writes the coordinate arrays, sets the
  root attributes last (a store without them is incomplete) and consolidates metadata at the end
  (:func:`consolidate`). Blocks only write data regions (:class:`StoreWriter`).
* The sample axis is sharded in ``shard_samples`` samples, a power of two that depends on the
  number of samples and the per-sample byte size only — never on the block size or the worker
  count — so a run's bytes do not depend on how it was split. Inner chunks are smaller powers of
  two (about 1 MiB). Shards are encoded in Morton order by zarr, so a shard's bytes depend only on
  its content, not on the order its chunks were written in. Compression is zstd level 3.
* A sample's ``final/done`` flag is written after all of its data, so a killed run resumes by
  recomputing every sample whose flag is not set. LocalStore writes each object atomically
  (temporary file + rename); a kill can leave ``*.partial`` temporaries, which
  :func:`remove_partial_files` deletes on resume.
* **One writer at a time**: a run holds :class:`StoreLock` (``<store>.lock`` beside the store, an
  exclusive ``flock`` on a file holding the writer's PID, host and command) from before the store
  is created or resumed until its metadata is consolidated. A second writer is refused with the
  first one's PID and host; a lock file left by a killed run holds no ``flock`` and is taken over.
* **Integrity**: every chunk and every shard index carries a CRC-32C checksum (zarr's ``crc32c``
  codec after zstd), and every chunk is written even when it holds only fill values
  (``write_empty_chunks``), so a shard of a finished region must exist. :func:`verify_store`
  reads every shard that holds a done sample and reports missing, truncated or corrupted ones;
  :func:`repair_store` (run by ``--resume``) deletes them and clears the done flags of their
  samples, which are then recomputed and the shard rewritten whole.
* ``--overwrite`` deletes only a directory whose root group carries the ``tumble`` attribute
  (set when the store is created, before any array).

Byte-identity: re-running a scene with the same seed and sample count gives identical bytes for
every file of the store (any block size, in-process or any number of Dask workers, killed and
resumed), except the root attribute :data:`RUN_ATTR` (``"run"``), which records how the store was
produced (command line, block size, executor, exception failures) and therefore varies by design.
No timestamps are written anywhere.
"""

from __future__ import annotations

import fcntl
import itertools
import json
import math
import os
import pathlib
import shutil
import socket
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import zarr

from .component import flag_attrs
from .errors import InputError, TumbleError
from .status import REASON_MESSAGES, STATUS_LEGEND, Reason, Status

#: Version of this layout (root attribute ``tumble.format``). 2: CRC-32C checksums, empty chunks
#: written, ``final/failure_code`` and ``final/failure_message``.
STORE_FORMAT = 2
#: The one root attribute that legitimately differs between byte-identical reruns.
RUN_ATTR = "run"
#: Target uncompressed bytes of one inner chunk.
CHUNK_TARGET_BYTES = 1 << 20
#: Target uncompressed bytes of one shard of the largest array (bounds a block's memory too).
SHARD_TARGET_BYTES = 32 << 20
#: Upper bound of samples per shard. zarr-python costs ~1 ms per shard written, so small-per-sample
#: arrays (finals, inputs) want many samples per shard: at 1,024 the store took 17 % of a 10⁵-sample
#: precession batch, at 16,384 it takes ~3 % (tumble bench core).
MAX_SHARD_SAMPLES = 16384
#: Shards a store has at least (when it has that many samples): the parallelism Dask can use.
MIN_SHARDS = 8
#: ... but never fewer samples per shard than this (unless the store has fewer samples): every
#: shard of every sample-axis array is a file, and a small file costs zarr-python and the file
#: system 2-3 ms to write here. README command 1 (300 deploy-cube samples, 47 such arrays) wrote
#: 470 files, 1.36 s against 0.48 s of simulation; with 256-sample shards 94 files (docs/design.md
#: §8.33). A store of fewer than MIN_SHARDS x this many samples has fewer than MIN_SHARDS Dask
#: tasks; pass ``shard_samples`` for more (``tumble run`` says so when workers would idle).
MIN_SHARD_SAMPLES = 256

GROUPS = ("trajectories", "events", "final", "inputs")
#: Driver-written description of the scene (shape model of the target, ...): see :func:`describe_world`.
SCENE_GROUP = "scene"
_COMPRESSORS = (zarr.codecs.ZstdCodec(level=3), zarr.codecs.Crc32cCodec())
_ARRAY_CONFIG = {"write_empty_chunks": True}
_COMPONENT_LABELS = {"xyz": ["x", "y", "z"], "quat": ["w", "x", "y", "z"]}


class StoreError(TumbleError):
    """A block's results do not fit the store's layout (a scene bug; stops the batch)."""


def _pow2_floor(x: float) -> int:
    return 1 << max(0, int(math.floor(math.log2(max(1.0, x)))))


def _pow2_ceil(x: int) -> int:
    return 1 << max(0, int(math.ceil(math.log2(max(1, x)))))


def component_dims(shape: tuple[int, ...], column: str, dims: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """Dimension names of a per-row shape: the column's declared ``dims``, else ``xyz``, ``quat``,
    ``row``/``col``, else ``<column>_axis<k>``."""
    if dims is not None:
        return tuple(dims)
    if shape == ():
        return ()
    if shape == (3,):
        return ("xyz",)
    if shape == (4,):
        return ("quat",)
    if shape == (3, 3):
        return ("row", "col")
    return tuple(f"{column}_axis{k}" for k in range(len(shape)))


def jsonable(v: Any) -> Any:
    """A JSON-safe, deterministic version of ``v`` (numpy -> lists, unknown objects -> repr)."""
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return jsonable(v.tolist())
    if isinstance(v, np.generic):
        return jsonable(v.item())
    if isinstance(v, float) and not math.isfinite(v):
        return repr(v)
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    return repr(v)


def fill_for(dtype: np.dtype) -> Any:
    """Fill value of an array: NaN for floats, -1 for signed ints, 0 for unsigned, False for bools."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return float("nan")
    if dtype.kind == "b":
        return False
    if dtype.kind == "i":
        return -1
    return 0


@dataclass
class ArraySpec:
    """One array of the store.

    Attributes:
        path: ``group/name``.
        dims: dimension names (first is ``sample`` when ``sampled``).
        tail: shape after the sample axis (``sampled``) or the full shape (coordinates).
        dtype: numpy dtype, or ``"str"`` for variable-length strings.
        units: unit string.
        long_name: one-line description.
        sampled: leading axis is ``sample`` (written by blocks); else a coordinate written by the driver.
        fill: fill value (``None``: zarr's default).
        attrs: extra attributes.
        data: the values of a driver-written coordinate array.
        time_axis: index in ``tail`` of a time axis that may be chunked.
    """

    path: str
    dims: tuple[str, ...]
    tail: tuple[int, ...]
    dtype: Any
    units: str = "1"
    long_name: str = ""
    sampled: bool = True
    fill: Any = None
    attrs: dict[str, Any] = field(default_factory=dict)
    data: Any = None
    time_axis: int | None = None

    @property
    def itemsize(self) -> int:
        return 16 if self.dtype == "str" else np.dtype(self.dtype).itemsize

    @property
    def sample_bytes(self) -> int:
        return int(np.prod(self.tail, dtype=np.int64)) * self.itemsize if self.sampled else 0


@dataclass
class DispersionSlot:
    """A dispersion resolved against the compiled world."""

    name: str
    entity: int
    column: str
    shape: tuple[int, ...]
    dtype: np.dtype
    draw: Any
    derive: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ColumnView:
    """A named slice of a stored column: one slot of some entities' rows, stored beside the column
    as its own variable with a named dimension whose coordinate is ``labels``.

    What a resource describes with ``store_views(world) -> list[ColumnView]`` (e.g. the revolute
    joints' angles out of the packed generalised coordinates, by joint name); the store writes it in
    every group that records ``column`` (``trajectories/`` and ``final/``), from the same block data.
    """

    name: str                      #: variable name (``joint_angle``)
    column: str                    #: the column it slices (``joint_q``)
    entities: tuple[int, ...]      #: entity ids, in order along ``dim``
    slot: int                      #: flat index into the column's per-row shape
    dim: str                       #: the new dimension (``joint``)
    labels: tuple[str, ...]        #: its coordinate (names), one per entity
    units: str
    long_name: str


@dataclass
class Layout:
    """Every array of a run's store, derived from a scene and its compiled world.

    The same derivation runs in the driver (to create the store) and in each block or Dask task
    (to map a :class:`~ecs.world.RunResult` onto array paths), so the two always agree.
    """

    samples: int
    shard_samples: int
    specs: dict[str, ArraySpec]
    times: np.ndarray
    dispersions: list[DispersionSlot]
    record: tuple[str, ...]
    final: tuple[str, ...]
    event_fields: tuple[str, ...]
    event_capacity: int
    #: ``(view path, column path, row indices in the column's entity axis, slot)`` per stored view
    views: list = field(default_factory=list)
    #: ``(path, EventSummary)`` of every ``final/`` number reduced from the sample's events
    event_summaries: list = field(default_factory=list)

    # ------------------------------------------------------------------ derivation
    @classmethod
    def from_world(cls, scene, world, samples: int, shard_samples: int | None = None) -> "Layout":
        """Derive the layout from ``scene`` and its ``world`` (compiled for any number of samples)."""
        specs: dict[str, ArraySpec] = {}
        record = tuple(scene.record) if (scene.record_every and scene.record) else ()
        final = tuple(scene.final)
        times = _record_times(scene.t_end, scene.dt, scene.record_every) if record else np.zeros(0)
        T = len(times)

        # entity dimensions: one per distinct (prefix, entity list)
        entity_dims: dict[tuple[str, tuple[int, ...]], str] = {}
        col_dim: dict[str, tuple[str, Any]] = {}
        for c in record + final:
            try:
                table = world.column_table(c)
            except KeyError:
                raise InputError("record/final column", c, "no table of the scene has this column") from None
            key = (table.prefix, tuple(int(e) for e in table.entities))
            if key not in entity_dims:
                taken = set(entity_dims.values())
                name, k = table.prefix, 2
                while name in taken:
                    name, k = f"{table.prefix}{k}", k + 1
                entity_dims[key] = name
            col_dim[c] = (entity_dims[key], table)

        groups_dims: dict[str, set[str]] = {g: set() for g in (*GROUPS, SCENE_GROUP)}

        def add(spec: ArraySpec):
            specs[spec.path] = spec
            groups_dims[spec.path.split("/")[0]].update(spec.dims)

        declared_labels: dict[str, tuple[str, ...]] = {}

        def note_labels(cs):    # a column's named axes get their labels as coordinates (below)
            for dim, names in (cs.labels or {}).items():
                if declared_labels.setdefault(dim, names) != names:
                    raise StoreError(f"axis {dim!r} is labelled {declared_labels[dim]} by one column and {names} "
                                     f"by {cs.name}: one axis name, one set of labels")

        def coords_attr(dims):
            names = [f"{d}_name" for d in dims if any(d == v for v in entity_dims.values())]
            return {"coordinates": " ".join(names)} if names else {}

        if record:
            add(ArraySpec("trajectories/time", ("time",), (T,), np.float64, "s", "record time", sampled=False,
                          data=times))
        for grp, cols in (("trajectories", record), ("final", final)):
            for c in cols:
                dim, table = col_dim[c]
                cs = table.specs[c]
                E = table.entity_count
                cdims = component_dims(cs.shape, c, cs.dims)
                note_labels(cs)
                dims = ("sample", "time", dim, *cdims) if grp == "trajectories" else ("sample", dim, *cdims)
                tail = (T, E, *cs.shape) if grp == "trajectories" else (E, *cs.shape)
                attrs = {**coords_attr((dim,))}
                if cs.frame:
                    attrs["frame"] = cs.frame.replace("integration", world.integration_frame)
                if cs.dtype == "entity":
                    attrs["entity_reference"] = "row index of the referenced entity in its table, -1 for none"
                attrs.update(flag_attrs(cs.flags))
                add(ArraySpec(f"{grp}/{c}", dims, tail, cs.storage_dtype, cs.unit or "1", cs.doc or c,
                              fill=fill_for(cs.storage_dtype), attrs=attrs,
                              time_axis=0 if grp == "trajectories" else None))
        views, view_dims = [], {}
        for v in _resource_views(world):
            if v.column not in col_dim:
                continue
            dim, table = col_dim[v.column]
            ents = [int(e) for e in table.entities]
            missing = [e for e in v.entities if e not in ents]
            if missing or len(v.labels) != len(v.entities) or len(set(v.labels)) != len(v.labels):
                raise InputError(f"store view {v.name}", list(v.labels),
                                 f"must name distinct entities of the table holding {v.column}, one label each")
            rows = np.array([ents.index(e) for e in v.entities], np.int64)
            width = int(np.prod(table.specs[v.column].shape, dtype=np.int64))
            if not 0 <= v.slot < width:
                raise InputError(f"store view {v.name}.slot", v.slot, f"must index the {width} values of a {v.column} row")
            for grp, cols in (("trajectories", record), ("final", final)):
                if v.column not in cols:
                    continue
                dims = ("sample", "time", v.dim) if grp == "trajectories" else ("sample", v.dim)
                tail = (T, len(rows)) if grp == "trajectories" else (len(rows),)
                same_dim = view_dims.get((grp, v.dim))
                if f"{grp}/{v.name}" in specs or (same_dim is None and f"{grp}/{v.dim}" in specs) or \
                        (same_dim is not None and same_dim != tuple(v.labels)):
                    raise InputError(f"store view {v.name}", f"{grp}/{v.name} over {v.dim}",
                                     "must be a new array name, over a new dimension or one with the same labels")
                view_dims[(grp, v.dim)] = tuple(v.labels)
                add(ArraySpec(f"{grp}/{v.name}", dims, tail, np.float64, v.units, v.long_name, fill=np.nan,
                              time_axis=0 if grp == "trajectories" else None))
                add(ArraySpec(f"{grp}/{v.dim}", (v.dim,), (len(rows),), "str", "1", f"{v.dim} name (coordinate)",
                              sampled=False, data=np.array(v.labels, dtype=object)))
                views.append((f"{grp}/{v.name}", f"{grp}/{v.column}", rows, int(v.slot)))
        add(ArraySpec("final/status", ("sample",), (), np.int8, "1", "sample status (largest row status code)",
                      fill=int(Status.RUNNING),
                      attrs={"legend": dict(STATUS_LEGEND),
                             "flag_values": [int(s) for s in Status],
                             "flag_meanings": " ".join(s.name.lower() for s in Status)}))
        add(ArraySpec("final/failure_code", ("sample",), (), np.int8, "1",
                      "why the sample failed (ecs.status.Reason; 0: it did not fail)", fill=0,
                      attrs={"flag_values": [int(r) for r in Reason],
                             "flag_meanings": " ".join(r.name.lower() for r in Reason),
                             "messages": {r.name.lower(): REASON_MESSAGES[r] for r in Reason},
                             # a string coordinate, so Dataset.where masks numbers only
                             "coordinates": "failure_message"}))
        add(ArraySpec("final/failure_message", ("sample",), (), "str", "1",
                      "what went wrong, one line (empty when the sample did not fail)", fill=""))
        add(ArraySpec("final/event_count", ("sample",), (), np.int32, "1",
                      "number of event slots the sample used (see events/event_overflow)", fill=0))
        add(ArraySpec("final/done", ("sample",), (), np.bool_, "1",
                      "sample finished and all of its data written (set after the data)", fill=False))

        # events
        ev = world.events
        cap = int(ev.capacity)
        event_fields = tuple(ev.fields)
        for name, f in ev.fields.items():
            cdims = component_dims(tuple(f.shape), name)
            add(ArraySpec(f"events/{name}", ("sample", "event", *cdims), (cap, *f.shape), np.dtype(f.dtype),
                          f.unit or "1", f.doc or name, fill=fill_for(f.dtype), attrs=flag_attrs(f.flags)))
        add(ArraySpec("events/event_overflow", ("sample",), (), np.int8, "1",
                      f"1 when the sample produced more than {cap} events (the first {cap} are kept)", fill=0,
                      attrs={"capacity": cap}))
        summaries = []
        for name, sm in ev.summaries.items():
            path = f"final/{name}"
            if path in specs:
                raise ValueError(f"event summary {name!r}: final/{name} is already a stored column")
            count = sm.reduce == "count"
            add(ArraySpec(path, ("sample",), (), np.int32 if count else np.float64, sm.unit,
                          sm.doc or f"{sm.reduce} of events/{sm.field}", fill=-1 if count else np.nan,
                          attrs={"event_summary": f"{sm.reduce} of events/{sm.field}" +
                                 (f" where {sm.where[0]} == {sm.where[1]}" if sm.where else "") +
                                 " over the logged events (see events/event_overflow)"}))
            summaries.append((path, sm))

        # inputs
        add(ArraySpec("inputs/seed", ("sample",), (), np.int64, "1",
                      "spawn key of the sample's random generator",
                      fill=-1, attrs={"rebuild": "numpy.random.default_rng(numpy.random.SeedSequence(<root attr "
                                                 "seed>, spawn_key=(inputs/seed[sample],)))"}))
        slots: list[DispersionSlot] = []
        seen: dict[tuple[int, str], str] = {}
        for d in scene.dispersions:
            eid = _entity_id(world, d.entity)
            table = next((t for t in world.tables if d.column in t.specs and eid in set(t.entities.tolist())), None)
            if table is None:
                raise InputError(f"dispersion {d.name or d.column}", f"{d.column} of {world.name_of(eid)}",
                                 "no such column on that entity")
            name = d.name or f"{d.column}.{world.name_of(eid)}"
            if (eid, d.column) in seen:
                raise InputError(f"dispersion {name}", d.column,
                                 f"disperses the same column of the same entity as dispersion {seen[(eid, d.column)]}")
            seen[(eid, d.column)] = name
            if "/" in name or name.startswith("__") or name in ("seed", ".", ".."):
                raise InputError("dispersion name", name, "must not contain '/', start with '__' or be 'seed'")
            cs = table.specs[d.column]
            for col in d.derive:
                if col not in table.specs or (eid, col) in seen:
                    raise InputError(f"dispersion {name} derive", col,
                                     "must be another column of the same entity, dispersed by no other dispersion")
                seen[(eid, col)] = name
            slots.append(DispersionSlot(name, eid, d.column, cs.shape, cs.storage_dtype, d.draw, dict(d.derive)))
            note_labels(cs)
            add(ArraySpec(f"inputs/{name}", ("sample", *component_dims(cs.shape, d.column, cs.dims)), cs.shape,
                          cs.storage_dtype, d.unit or cs.unit or "1",
                          f"{d.column} of {world.name_of(eid)} (dispersed)" + (f": {cs.doc}" if cs.doc else ""),
                          fill=fill_for(cs.storage_dtype), attrs={"entity": eid, "column": d.column}))

        # the sample index as a coordinate of every group (filtering keeps the true sample ids)
        for grp in GROUPS:
            if "sample" in groups_dims[grp]:
                add(ArraySpec(f"{grp}/sample", ("sample",), (), np.int64, "1", "sample index (coordinate)",
                              fill=-1))
        # the target's shape model and other arrays the scene's resources describe themselves with
        for name, (data, dims, units, long_name) in _resource_arrays(world).items():
            add(ArraySpec(f"scene/{name}", dims, tuple(np.shape(data)), np.asarray(data).dtype, units, long_name,
                          sampled=False, data=np.asarray(data)))
        # coordinates, in every group that uses the dimension
        for (prefix, ents), dim in entity_dims.items():
            for grp in GROUPS:
                if dim in groups_dims[grp]:
                    add(ArraySpec(f"{grp}/{dim}", (dim,), (len(ents),), np.int64, "1", f"{prefix} entity id",
                                  sampled=False, data=np.array(ents, np.int64)))
                    add(ArraySpec(f"{grp}/{dim}_name", (dim,), (len(ents),), "str", "1", f"{prefix} entity name",
                                  sampled=False, data=np.array([world.name_of(e) for e in ents], dtype=object)))
        for lab, values in {**_COMPONENT_LABELS, **declared_labels}.items():
            for grp in (*GROUPS, SCENE_GROUP):
                if lab in groups_dims[grp]:
                    add(ArraySpec(f"{grp}/{lab}", (lab,), (len(values),), "str", "1", f"{lab} component label",
                                  sampled=False, data=np.array(values, dtype=object)))

        if shard_samples is None:
            shard_samples = choose_shard_samples(samples, [s.sample_bytes for s in specs.values()])
        return cls(samples=samples, shard_samples=int(shard_samples), specs=specs, times=times,
                   dispersions=slots, record=record, final=final, event_fields=event_fields, event_capacity=cap,
                   views=views, event_summaries=summaries)

    # ------------------------------------------------------------------ blocks
    def sampled_paths(self) -> list[str]:
        return [p for p, s in self.specs.items() if s.sampled and p != "final/done"]

    def draw_inputs(self, seed: int, start: int, stop: int) -> dict[str, np.ndarray]:
        """Each sample's dispersions, from its own ``SeedSequence(seed, spawn_key=(sample,))``, in order."""
        n = stop - start
        out = {d.name: np.empty((n, *d.shape), d.dtype) for d in self.dispersions}
        for k, s in enumerate(range(start, stop)):
            rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(s,)))
            for d in self.dispersions:
                v = d.draw(rng)
                try:
                    out[d.name][k] = v  # broadcasts like np.broadcast_to, without its per-call cost
                except (ValueError, TypeError):
                    raise InputError(f"dispersion {d.name} (sample {s})", _short(v),
                                     f"draw must give a value of shape {d.shape} (dtype {d.dtype})") from None
        return out

    def check_inputs(self, world, seed: int, samples: int, chunk: int = 4096, on_chunk=None) -> None:
        """Draw every sample's dispersions and check them before any work (the driver, before the
        store is created): shapes, finiteness, each column's rule (:mod:`ecs.rules`) on drawn and
        derived values, and each system's ``check_inputs`` (e.g. a release point inside the target).

        ``on_chunk(samples_checked)`` is called after every chunk (progress of a large batch).

        Raises:
            InputError: naming the dispersion, the sample, the value and the rule.
        """
        for a in range(0, samples, chunk):
            b = min(samples, a + chunk)
            inputs = self.draw_inputs(seed, a, b)
            for d in self.dispersions:
                v = inputs[d.name]
                if np.issubdtype(v.dtype, np.floating):
                    bad = ~np.isfinite(v.reshape(len(v), -1)).all(axis=1)
                    if bad.any():
                        k = int(np.argmax(bad))
                        raise InputError(f"dispersion {d.name} (sample {a + k})", v[k].tolist(),
                                         "must be finite (no NaN or inf)")
            ov = self.overrides(inputs)
            for d in self.dispersions:
                for col in (d.column, *d.derive):
                    spec = world.column_spec(col)
                    if spec is None:
                        continue
                    vals = np.asarray(ov[(d.entity, col)])
                    for rule in world.rules_of(spec):
                        k = rule.first_bad(vals.reshape((len(vals), *spec.shape)))
                        if k is not None:
                            what = f"dispersion {d.name}" + (f" (derived {col})" if col != d.column else "")
                            raise InputError(f"{what} of {world.name_of(d.entity)} (sample {a + k})",
                                             np.asarray(vals[k]).tolist(), rule.text)
            for system in world.systems:
                check = getattr(system, "check_inputs", None)
                if check is not None:
                    check(world, ov, a, b - a)
            if on_chunk is not None:
                on_chunk(b)         # samples checked so far

    def overrides(self, inputs: dict[str, np.ndarray]) -> dict[tuple[int, str], np.ndarray]:
        """``World.compile`` overrides from drawn inputs."""
        out = {(d.entity, d.column): inputs[d.name] for d in self.dispersions}
        for d in self.dispersions:
            for col, fn in d.derive.items():
                out[(d.entity, col)] = np.stack([np.asarray(fn(v)) for v in inputs[d.name]]) if len(inputs[d.name]) \
                    else np.zeros((0,))
        return out

    def block_arrays(self, result, inputs: dict[str, np.ndarray], start: int, stop: int) -> dict[str, np.ndarray]:
        """Map a block's :class:`~ecs.world.RunResult` onto array paths (shape-checked)."""
        n = stop - start
        out: dict[str, np.ndarray] = {}
        if self.record:
            if not np.array_equal(np.asarray(result.times), self.times):
                raise StoreError(f"record times of block {start}:{stop} differ from the store's trajectories/time")
            for c in self.record:
                out[f"trajectories/{c}"] = result.trajectories[c]
        for c in self.final:
            out[f"final/{c}"] = result.finals[c]
        out["final/status"] = np.asarray(result.status, np.int8)
        reason = np.zeros(n, np.int8) if result.reason is None else np.asarray(result.reason, np.int8)
        out["final/failure_code"] = reason
        out["final/failure_message"] = np.array([REASON_MESSAGES[Reason(int(r))] for r in reason], dtype=object)
        cnt = np.asarray(result.event_count)
        out["final/event_count"] = cnt if cnt.size else np.zeros(n, np.int32)
        for f in self.event_fields:
            out[f"events/{f}"] = result.events[f]
        ov = result.events.get("event_overflow")
        out["events/event_overflow"] = ov if ov is not None and np.size(ov) else np.zeros(n, np.int8)
        if self.event_summaries:
            evs = {f: np.asarray(out[f"events/{f}"]) for f in self.event_fields}
            for path, sm in self.event_summaries:
                out[path] = sm.of(evs, out["final/event_count"])
        for path, src, rows, slot in self.views:
            a = np.asarray(out[src])
            lead = 2 if src.startswith("trajectories/") else 1           # (sample[, time]) before the entity axis
            flat = a.reshape(*a.shape[:lead + 1], -1)
            out[path] = np.ascontiguousarray(flat[..., rows, slot], dtype=np.float64)
        out.update(self._input_arrays(inputs, start, stop))
        for p, a in out.items():
            spec = self.specs[p]
            if a.shape != (n, *spec.tail):
                raise StoreError(f"{p}: block {start}:{stop} produced shape {a.shape}, the store expects "
                                  f"{(n, *spec.tail)} (did the scene change its entities while running?)")
        return out

    def failed_arrays(self, inputs: dict[str, np.ndarray], start: int, stop: int,
                      message: str = "") -> dict[str, np.ndarray]:
        """Arrays for samples whose run raised: status FAILED, reason RAISED with ``message``,
        NaN / -1 everywhere else."""
        n = stop - start
        out = {}
        for p in self.sampled_paths():
            s = self.specs[p]
            if p.startswith("inputs/"):
                continue
            out[p] = np.full((n, *s.tail), s.fill if s.fill is not None else 0,
                             dtype=object if s.dtype == "str" else s.dtype)
        out["final/status"] = np.full(n, int(Status.FAILED), np.int8)
        out["final/failure_code"] = np.full(n, int(Reason.RAISED), np.int8)
        out["final/failure_message"] = np.full(n, _oneline(message or REASON_MESSAGES[Reason.RAISED], 500),
                                               dtype=object)
        out["final/event_count"] = np.zeros(n, np.int32)
        out["events/event_overflow"] = np.zeros(n, np.int8)
        out.update(self._input_arrays(inputs, start, stop))
        return out

    def _input_arrays(self, inputs, start, stop):
        ids = np.arange(start, stop, dtype=np.int64)
        out = {"inputs/seed": ids}
        for grp in GROUPS:
            if f"{grp}/sample" in self.specs:
                out[f"{grp}/sample"] = ids
        for d in self.dispersions:
            out[f"inputs/{d.name}"] = inputs[d.name]
        return out

    # ------------------------------------------------------------------ chunking
    def chunking(self, spec: ArraySpec) -> tuple[tuple[int, ...], tuple[int, ...] | None, tuple[int, ...]]:
        """(shape, shards, inner chunks) of an array."""
        if not spec.sampled:
            shape = spec.tail
            return shape, None, tuple(max(1, n) for n in shape)
        shape = (self.samples, *spec.tail)
        tail = [max(1, n) for n in spec.tail]
        shard_tail = list(tail)
        per_sample = max(1, int(np.prod(tail)) * spec.itemsize)
        if per_sample > CHUNK_TARGET_BYTES and spec.time_axis is not None:
            per_time = per_sample // tail[spec.time_axis]
            T = tail[spec.time_axis]
            n_t = -(-T // max(1, min(T, CHUNK_TARGET_BYTES // max(1, per_time))))  # time chunks per sample
            tc = -(-T // n_t)  # even chunks: the shard overhangs the time axis by < n_t records
            tail[spec.time_axis] = tc
            shard_tail[spec.time_axis] = n_t * tc
            per_sample = per_time * tc
        cs = min(self.shard_samples, _pow2_floor(CHUNK_TARGET_BYTES / per_sample))
        return shape, (self.shard_samples, *shard_tail), (cs, *tail)


def _record_times(t_end: float, dt: float, record_every: int | None) -> np.ndarray:
    """The record times ``World.run`` produces (same formula)."""
    n_frames = int(math.ceil(t_end / dt - 1e-9))
    n_rec = n_frames // record_every + 1
    return np.array([min(k * record_every * dt, t_end) for k in range(n_rec)], dtype=np.float64)


def _simple(v: Any, depth: int = 0) -> Any:
    """A JSON-able summary of a setting: scalars and short lists as they are, arrays by shape,
    dataclasses and other objects by their type (and simple fields, one level deep)."""
    import dataclasses

    if v is None or isinstance(v, (bool, int, float, str, np.generic)):
        return jsonable(v)
    if isinstance(v, (list, tuple)) and len(v) <= 16 and all(isinstance(x, (bool, int, float, str)) for x in v):
        return jsonable(list(v))
    if isinstance(v, np.ndarray):
        return jsonable(v) if v.size <= 16 else f"<array {v.dtype} {list(v.shape)}>"
    if dataclasses.is_dataclass(v) and depth == 0:
        return {"type": type(v).__name__,
                **{f.name: _simple(getattr(v, f.name), 1) for f in dataclasses.fields(v) if not f.name.startswith("_")}}
    fields = {k: jsonable(x) for k, x in sorted(getattr(v, "__dict__", {}).items())
              if not k.startswith("_") and isinstance(x, (bool, int, float, str, np.generic))}
    if fields and depth <= 1:           # an object's scalar settings (a gravity field's mu, spacing, ...)
        return {"type": type(v).__name__, **fields}
    return f"<{type(v).__module__}.{type(v).__qualname__}>"


def describe_world(world) -> dict[str, Any]:
    """What a store records about how its scene was built: every system (type, phase, public
    settings) and every resource (type and simple fields: a target's spin and gravity model, the
    deployment's solver settings, ...). Root attributes ``systems`` and ``resources``."""
    systems = []
    for sy in world.systems:
        settings = {k: _simple(v, 1) for k, v in sorted(vars(sy).items())
                    if not k.startswith("_") and (isinstance(v, (bool, int, float, str)) or
                                                  (isinstance(v, tuple) and len(v) <= 16))}
        systems.append({"name": sy.name, "type": f"{type(sy).__module__}.{type(sy).__qualname__}",
                        "phase": getattr(sy.phase, "name", str(sy.phase)).lower(), "settings": settings})
    resources = [_simple(r) if not isinstance(_simple(r), str) else {"type": type(r).__name__}
                 for r in world._resources.values()]
    return {"systems": systems, "resources": resources}


def _resource_views(world) -> list[ColumnView]:
    """The :class:`ColumnView` s resources describe with ``store_views(world)``."""
    out = []
    for r in world._resources.values():
        fn = getattr(r, "store_views", None)
        if callable(fn):
            out.extend(fn(world))
    return out


def _resource_arrays(world) -> dict[str, tuple]:
    """``{name: (data, dims, units, long_name)}`` from resources that describe themselves with
    ``store_arrays()`` (e.g. a target's shape model), stored under ``scene/``."""
    out = {}
    for r in world._resources.values():
        fn = getattr(r, "store_arrays", None)
        if callable(fn):
            out.update(fn())
    return out


def code_revision() -> dict[str, Any]:
    """The tumble version and, in a git checkout, its commit and whether files were modified."""
    import subprocess

    from . import __version__

    rev: dict[str, Any] = {"version": __version__}
    here = pathlib.Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "-C", os.fspath(here), "rev-parse", "--show-toplevel", "HEAD"],
                              capture_output=True, text=True, timeout=10)
        lines = head.stdout.split()
        # only tumble's own checkout (not a repository that happens to contain site-packages)
        if head.returncode == 0 and len(lines) == 2 and pathlib.Path(lines[0]).resolve() == here:
            rev["commit"] = lines[1]
            st = subprocess.run(["git", "-C", os.fspath(here), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=10)
            rev["modified"] = bool(st.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    return rev


def _entity_id(world, ent) -> int:
    if isinstance(ent, str):
        try:
            return world.entity(ent)
        except KeyError:
            raise InputError("dispersion entity", ent, "no entity of the scene has this name") from None
    return int(ent)


def choose_shard_samples(samples: int, sample_bytes: list[int]) -> int:
    """Samples per shard: a power of two from the sample count and per-sample sizes only (never
    the worker count, so stores are byte-identical however they were run), small enough that a
    store has at least :data:`MIN_SHARDS` shards when it has that many samples: shards are the
    unit of Dask tasks, so ``--workers N`` gets N tasks up to N = MIN_SHARDS. Not below
    :data:`MIN_SHARD_SAMPLES` samples, nor above :data:`MAX_SHARD_SAMPLES` or
    :data:`SHARD_TARGET_BYTES` of the largest array (which wins over the floor)."""
    biggest = max([1, *sample_bytes])
    s = min(MAX_SHARD_SAMPLES, _pow2_floor(SHARD_TARGET_BYTES / biggest),
            max(MIN_SHARD_SAMPLES, _pow2_floor(samples / MIN_SHARDS)))
    return max(1, min(s, _pow2_ceil(samples)))


# ---------------------------------------------------------------------- driver side
def is_tumble_store(path: str | os.PathLike) -> bool:
    """True when ``path`` is a (complete or partial) tumble store: a Zarr group whose root carries
    the ``tumble`` attribute (written when the store is created, before any array)."""
    p = pathlib.Path(path)
    meta = p / "zarr.json"
    if not meta.is_file():
        return False
    try:
        doc = json.loads(meta.read_text())
    except (OSError, ValueError):
        return False
    return doc.get("node_type") == "group" and isinstance((doc.get("attributes") or {}).get("tumble"), dict)


def is_complete(attrs: dict[str, Any]) -> bool:
    """True when a store's root attributes were all written (the driver sets them after the arrays)."""
    return "scene" in attrs and "tumble" in attrs


def remove_store(path: str | os.PathLike) -> None:
    """Delete an existing store (``--overwrite``); refuses to delete anything that is not one."""
    p = pathlib.Path(path)
    if not p.exists():
        return
    if p.is_dir() and (is_tumble_store(p) or not any(p.iterdir())):
        shutil.rmtree(p)
        return
    raise InputError("out", os.fspath(path), "exists and is not a tumble store (no 'tumble' attribute on its root "
                                             "group); refusing to delete it with --overwrite")


class StoreLockedError(TumbleError):
    """Another process holds a store's writer lock."""


class StoreLock:
    """Exclusive writer lock of a store: ``<store>.lock`` beside it.

    The lock is an exclusive, non-blocking ``flock`` on that file (beside the store's resolved
    path, however the store is named), which records the writer's PID,
    host and command line. The kernel releases a ``flock`` when its process dies, so a lock file
    left behind by a killed run (stale) is simply taken over; :attr:`took_over` then holds what it
    said. A live writer's lock is refused with a :class:`StoreLockedError` naming its PID and host.
    On a shared file system whose ``flock`` is not shared between hosts, run one writer per store.

    Once the store exists the writer also holds a ``flock`` on the store's directory itself
    (:meth:`hold_store`), so a second writer is refused even when the lock file was deleted.
    """

    def __init__(self, path: str | os.PathLike, command: str = ""):
        # keyed on the resolved path: a symbolic link to the store, a relative or a ``..`` spelling
        # of it all take the one lock file (two writers through two names would both write)
        p = pathlib.Path(path).resolve()
        self.path = p.with_name(p.name + ".lock")
        self.command = command
        self.store = p
        self.took_over: dict[str, Any] | None = None
        self._fd: int | None = None
        self._dir_fd: int | None = None

    def acquire(self) -> "StoreLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(10):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_lock_info(fd)
                os.close(fd)
                who = (f"pid {holder.get('pid')} on host {holder.get('host')}" if holder else "another process")
                cmd = f" ({holder['command']})" if holder.get("command") else ""
                raise StoreLockedError(
                    f"store {os.fspath(self.path)[:-5]} is being written by {who}{cmd}: one writer at a time. "
                    f"Wait for it to finish (or stop it), then --resume") from None
            try:  # the file we locked may have been unlinked by a writer that just released it
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            old = _read_lock_info(fd)
            if old:
                self.took_over = old  # stale: its writer died without releasing (flock is gone with it)
            info = {"pid": os.getpid(), "host": socket.gethostname(), "command": self.command}
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(info).encode(), 0)
            self._fd = fd
            return self
        raise StoreLockedError(f"store {os.fspath(self.path)[:-5]}: could not take its lock file {self.path}")

    def hold_store(self) -> None:
        """Hold an exclusive ``flock`` on the store's directory (call once it exists, again after it
        was replaced): a writer that took a fresh lock file because this one's was deleted is
        refused here."""
        self._drop_store()
        fd = os.open(self.store, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StoreLockedError(f"store {self.store} is being written by another process (which holds the "
                                   f"store itself; its lock file {self.path.name} was removed): one writer at a "
                                   f"time. Wait for it to finish (or stop it), then --resume") from None
        self._dir_fd = fd

    def _drop_store(self) -> None:
        if self._dir_fd is not None:
            os.close(self._dir_fd)
            self._dir_fd = None

    def release(self) -> None:
        self._drop_store()
        if self._fd is None:
            return
        try:
            self.path.unlink(missing_ok=True)
        finally:
            os.close(self._fd)  # closing drops the flock
            self._fd = None

    def __enter__(self) -> "StoreLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def _read_lock_info(fd: int) -> dict[str, Any]:
    try:
        raw = os.pread(fd, 4096, 0)
        return json.loads(raw) if raw.strip() else {}
    except (OSError, ValueError):
        return {}


def create_store(path: str | os.PathLike, layout: Layout, attrs: dict[str, Any]) -> None:
    """Create the store (driver only): groups, every array, coordinates, then the root attributes."""
    # the tumble attribute first: --overwrite recognises the store (even a partial one) by it
    root = zarr.open_group(os.fspath(path), mode="w-", zarr_format=3,
                           attributes={"tumble": jsonable(attrs.get("tumble", {"format": STORE_FORMAT}))})
    groups = {g: root.create_group(g) for g in GROUPS}
    if any(p.startswith(SCENE_GROUP + "/") for p in layout.specs):
        groups[SCENE_GROUP] = root.create_group(SCENE_GROUP)
    for p, spec in layout.specs.items():
        grp, name = p.split("/", 1)
        shape, shards, chunks = layout.chunking(spec)
        a_attrs = {"units": spec.units, "long_name": spec.long_name, **spec.attrs}
        kw = {}
        if spec.fill is not None:
            kw["fill_value"] = spec.fill
        arr = groups[grp].create_array(name, shape=shape, dtype=str if spec.dtype == "str" else spec.dtype,
                                       chunks=chunks, shards=shards, dimension_names=list(spec.dims),
                                       attributes=jsonable(a_attrs), compressors=_COMPRESSORS,
                                       config=_ARRAY_CONFIG, **kw)
        if spec.data is not None and np.size(spec.data):
            arr[...] = spec.data
    root.update_attributes(jsonable(attrs))


def open_root(path: str | os.PathLike, mode: str = "r"):
    """Open a store's root group (no consolidated metadata: partial stores have none)."""
    p = os.fspath(path)
    if not is_tumble_store(p):
        raise InputError("store", p, "is not a tumble store (no zarr.json of a group)")
    return zarr.open_group(p, mode=mode, use_consolidated=False)


def read_attrs(path: str | os.PathLike) -> dict[str, Any]:
    """Root attributes of a store."""
    return dict(open_root(path).attrs)


def set_run_attr(path: str | os.PathLike, run: dict[str, Any]) -> None:
    """Replace the root attribute ``run`` (the documented non-reproducible part)."""
    root = open_root(path, "r+")
    root.update_attributes({RUN_ATTR: jsonable(run)})


def read_done(path: str | os.PathLike, samples: int | None = None) -> np.ndarray:
    """The per-sample done flags (unreadable shards count as not done)."""
    root = open_root(path)
    arr = root["final/done"]
    n = arr.shape[0]
    step = arr.shards[0] if arr.shards else arr.chunks[0]
    out = np.zeros(n, bool)
    for a in range(0, n, step):
        b = min(n, a + step)
        try:
            out[a:b] = arr[a:b]
        except Exception:  # a damaged shard: recompute those samples
            out[a:b] = False
    return out


@dataclass
class Damage:
    """A shard that should hold finished samples but cannot be read back as written.

    Attributes:
        array: ``group/name`` of the array.
        shard: shard index along the sample axis.
        start, stop: the samples the shard covers.
        file: the shard's file.
        problem: ``"missing"``, or the read error (checksum mismatch, truncated index, ...).
    """

    array: str
    shard: int
    start: int
    stop: int
    file: str
    problem: str


def _shard_file(path: str | os.PathLike, array_path: str, arr, k: int) -> pathlib.Path:
    key = arr.metadata.encode_chunk_key((k,) + (0,) * (len(arr.shape) - 1))
    return pathlib.Path(path, *array_path.split("/"), *key.split("/"))


def _check_shard(path, array_path: str, arr, k: int, a: int, b: int) -> Damage | None:
    f = _shard_file(path, array_path, arr, k)
    if not f.is_file():
        return Damage(array_path, k, a, b, os.fspath(f), "missing")
    if f.stat().st_size == 0:
        # zarr reads an empty shard as fill values without an error: a crash's usual artefact, and
        # it would pass for finished samples holding no data ("running" statuses, NaN results)
        return Damage(array_path, k, a, b, os.fspath(f), "empty (0 bytes)")
    try:
        arr[a:b]  # decodes every chunk: CRC-32C of the shard index and of each chunk
    except Exception as exc:  # noqa: BLE001 - any decode failure is damage
        return Damage(array_path, k, a, b, os.fspath(f), _oneline(f"{type(exc).__name__}: {exc}"))
    return None


def _short(v: Any) -> Any:
    """A value for an error message: small arrays as lists, large ones by shape."""
    try:
        a = np.asarray(v)
    except Exception:  # noqa: BLE001
        return repr(v)[:80]
    return a.tolist() if a.size <= 16 else f"<array of shape {a.shape}>"


def _oneline(msg: str, limit: int = 200) -> str:
    msg = " ".join(str(msg).split())
    return msg if len(msg) <= limit else msg[:limit - 3] + "..."


#: :attr:`Damage.shard` of damage outside the sample shards (metadata, coordinates, the scene
#: group): ``--resume`` cannot recompute it and refuses the store (:func:`repair_store`).
NOT_A_SHARD = -1


def _json_problem(f: pathlib.Path) -> str | None:
    """Why the metadata file ``f`` cannot serve, or None."""
    if not f.is_file():
        return "metadata missing (zarr.json)"
    if f.stat().st_size == 0:
        return "metadata empty (zarr.json, 0 bytes)"
    try:
        json.loads(f.read_bytes())
    except ValueError as exc:
        return _oneline(f"metadata unreadable (zarr.json): {exc}")
    return None


def _expected_nodes(path) -> dict[str, dict]:
    """Every group and array the store should hold, with its metadata: from the root's consolidated
    metadata (written when a run ends), else from the folders present (a store still being run)."""
    root = pathlib.Path(path)
    try:
        cm = json.loads((root / "zarr.json").read_bytes()).get("consolidated_metadata") or {}
    except (OSError, ValueError):
        cm = {}
    nodes = dict(cm.get("metadata") or {})
    if nodes:
        return nodes
    for grp in (*GROUPS, SCENE_GROUP):
        if (root / grp).is_dir():
            nodes[grp] = {"node_type": "group"}
            for child in sorted((root / grp).iterdir()):
                if child.is_dir():
                    nodes[f"{grp}/{child.name}"] = {"node_type": "array"}
    return nodes


def _verify_outside_shards(path, n: int | None) -> list[Damage]:
    """Damage outside the sample shards: every group's and array's metadata file, and every array
    not on the sample axis (coordinates, the scene group: written by the driver) read back whole,
    with no empty chunk file."""
    root = pathlib.Path(path)
    damage: list[Damage] = []
    nodes = _expected_nodes(path)
    for p in sorted(nodes):
        problem = _json_problem(root / p / "zarr.json")
        if problem:
            damage.append(Damage(p, NOT_A_SHARD, 0, 0, os.fspath(root / p / "zarr.json"), problem))
    if damage:
        return damage       # the arrays cannot be opened as the store describes them
    g = open_root(path)
    for p, meta in sorted(nodes.items()):
        if meta.get("node_type") != "array":
            continue
        arr = g[p]
        dims = arr.metadata.dimension_names or (None,)
        if arr.shape and dims[0] == "sample" and arr.shape[0] == n:
            continue        # sample shards: checked where they hold finished samples
        empty = [f for f in sorted((root / p).rglob("*")) if f.is_file() and f.name != "zarr.json"
                 and f.stat().st_size == 0]
        if empty:
            damage.append(Damage(p, NOT_A_SHARD, 0, 0, os.fspath(empty[0]), "empty chunk (0 bytes)"))
            continue
        missing = _missing_chunks(path, p, arr)
        if missing:         # written whole by the driver (write_empty_chunks): zarr would read fill values
            damage.append(Damage(p, NOT_A_SHARD, 0, 0, os.fspath(missing[0]), f"{len(missing)} chunk file(s) missing"))
            continue
        try:
            arr[...]
        except Exception as exc:  # noqa: BLE001 - any decode failure is damage
            damage.append(Damage(p, NOT_A_SHARD, 0, 0, os.fspath(root / p),
                                 _oneline(f"{type(exc).__name__}: {exc}")))
    return damage


def _missing_chunks(path, array_path: str, arr) -> list[pathlib.Path]:
    """The chunk (or shard) files of an array written whole that are not there."""
    if not arr.shape or 0 in arr.shape:
        return []
    step = arr.shards if arr.shards else arr.chunks
    grid = itertools.product(*(range(math.ceil(n / c)) for n, c in zip(arr.shape, step)))
    files = (pathlib.Path(path, *array_path.split("/"), *arr.metadata.encode_chunk_key(k).split("/")) for k in grid)
    return [f for f in files if not f.is_file()]


def repair_driver_arrays(path: str | os.PathLike, layout: "Layout") -> list[str]:
    """``--resume``: rewrite, from this run's layout, every array the driver writes whole
    (coordinates, record times, the ``scene/`` group) whose stored values cannot be read or differ
    from the layout's (the resume has checked that scene, parameters and layout match, so the data
    are the same). Metadata damage was refused before (:func:`refuse_unrepairable`). Returns the
    repaired array paths."""
    root_dir = pathlib.Path(path)
    g = open_root(path, "r+")
    fixed = []
    for p, spec in layout.specs.items():
        if spec.sampled or spec.data is None or not np.size(spec.data):
            continue
        want = np.asarray(spec.data, dtype=object if spec.dtype == "str" else spec.dtype)
        try:
            have = np.asarray(g[p][...])
            ok = have.shape == want.shape and bool(np.all(have.astype(want.dtype) == want)) and \
                not _missing_chunks(path, p, g[p]) and \
                not any(f.stat().st_size == 0 for f in (root_dir / p).rglob("*") if f.is_file())
        except Exception:  # noqa: BLE001 - unreadable: rewrite it
            ok = False
        if ok:
            continue
        for f in (root_dir / p).rglob("*"):
            if f.is_file() and f.name != "zarr.json":
                f.unlink()
        g[p].with_config(_ARRAY_CONFIG)[...] = spec.data
        fixed.append(p)
    return fixed


def _refuse(fixed: list[Damage], path) -> None:
    if fixed:
        d = fixed[0]
        more = f" (and {len(fixed) - 1} more)" if len(fixed) > 1 else ""
        raise InputError("--resume", os.fspath(path), f"{d.array} is damaged ({d.problem}){more}: not a sample "
                                                      "shard, so --resume cannot recompute it; use --overwrite")


def refuse_unrepairable(path: str | os.PathLike) -> None:
    """Refuse (``--resume``), in one line naming it, damage that neither recomputing samples nor
    rewriting the driver's arrays (:func:`repair_driver_arrays`) can repair: group and array
    metadata."""
    try:
        n = int(read_attrs(path).get("samples"))
    except (TypeError, ValueError):
        n = None
    _refuse([d for d in _verify_outside_shards(path, n) if d.problem.startswith("metadata")], path)


def verify_store(path: str | os.PathLike) -> list[Damage]:
    """Every damaged part of a store: the metadata of every group and array, the arrays not on the
    sample axis (coordinates, the scene group), ``final/done`` shards that cannot be read, and
    shards of the other sample-axis arrays that cover a finished sample but are missing, empty or
    fail to decode (checksum, truncation). Reads every such shard once (read only)."""
    try:
        n = int(read_attrs(path).get("samples"))
    except (TypeError, ValueError):
        n = None
    outside = _verify_outside_shards(path, n)
    if any(d.problem.startswith("metadata") for d in outside):
        return outside
    root = open_root(path)
    done_arr = root["final/done"]
    n = done_arr.shape[0]
    step = done_arr.shards[0] if done_arr.shards else done_arr.chunks[0]
    damage: list[Damage] = []
    done = np.zeros(n, bool)
    for k, a in enumerate(range(0, n, step)):
        b = min(n, a + step)
        f = _shard_file(path, "final/done", done_arr, k)
        if not f.is_file():
            continue  # nothing finished there yet (a done shard is written only with flags set)
        d = _check_shard(path, "final/done", done_arr, k, a, b)
        if d is not None:
            damage.append(d)
        else:
            done[a:b] = done_arr[a:b]
    for grp in GROUPS:
        if grp not in root:
            continue
        for name, arr in sorted(root[grp].arrays()):
            p = f"{grp}/{name}"
            if p == "final/done" or not arr.shape or arr.shape[0] != n or \
                    (arr.metadata.dimension_names or (None,))[0] != "sample":
                continue
            s = arr.shards[0] if arr.shards else arr.chunks[0]
            for k, a in enumerate(range(0, n, s)):
                b = min(n, a + s)
                if done[a:b].any():
                    d = _check_shard(path, p, arr, k, a, b)
                    if d is not None:
                        damage.append(d)
    return outside + damage


def repair_store(path: str | os.PathLike, done: np.ndarray) -> list[Damage]:
    """Make a store's damaged shards recomputable (``--resume``): delete each damaged shard file
    and clear the done flags of every sample it covers (in ``done`` and in the store, before any
    recomputation, so a run killed during the repair is repaired again). Returns the damage."""
    damage = verify_store(path)
    if not damage:
        return damage
    _refuse([d for d in damage if d.shard == NOT_A_SHARD], path)
    root = open_root(path, "r+")
    done_arr = root["final/done"].with_config(_ARRAY_CONFIG)
    for d in damage:
        pathlib.Path(d.file).unlink(missing_ok=True)
    for d in damage:
        done[d.start:d.stop] = False
        if d.array != "final/done":
            done_arr[d.start:d.stop] = np.zeros(d.stop - d.start, bool)
    return damage


def remove_partial_files(path: str | os.PathLike) -> int:
    """Delete temporaries (``*.partial``) a killed writer left behind; returns how many."""
    n = 0
    for f in pathlib.Path(path).rglob("*.partial"):
        f.unlink(missing_ok=True)
        n += 1
    return n


def consolidate(path: str | os.PathLike) -> None:
    """Consolidate metadata into the root ``zarr.json`` (driver, at the end of a run)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarr.consolidate_metadata(os.fspath(path))


def check_layout(path: str | os.PathLike, layout: Layout) -> None:
    """Raise when an existing store's arrays do not match ``layout`` (resume of another scene)."""
    root = open_root(path)
    for p, spec in layout.specs.items():
        try:
            arr = root[p]
        except KeyError:
            raise InputError("--resume", os.fspath(path), f"the store has no array {p}: it was written by a "
                                                          f"different scene version (use --overwrite)") from None
        shape, _, _ = layout.chunking(spec)
        if tuple(arr.shape) != tuple(shape):
            raise InputError("--resume", os.fspath(path), f"array {p} has shape {tuple(arr.shape)}, this scene "
                                                          f"writes {tuple(shape)} (use --overwrite)")


# ---------------------------------------------------------------------- block side
def _whole_shards(arr, start: int, n: int) -> bool:
    """True when samples ``start:start + n`` of ``arr`` are whole shards (or reach the array's end)."""
    step = (arr.shards or arr.chunks)[0]
    stop = start + n
    return start % step == 0 and (stop % step == 0 or stop >= arr.shape[0])


class StoreWriter:
    """Writes data regions of an existing store (blocks and Dask tasks; never creates arrays).

    All arrays of one block are written concurrently (one ``asyncio.gather`` through zarr's
    async API); the done flags are written only after every data write has returned.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        self.root = zarr.open_group(self.path, mode="r+", use_consolidated=False)
        self._arrays: dict[str, Any] = {}

    def _array(self, p: str):
        a = self._arrays.get(p)
        if a is None:  # write_empty_chunks is a run-time setting, not stored metadata
            a = self._arrays[p] = self.root[p].with_config(_ARRAY_CONFIG)
        return a

    def write(self, start: int, arrays: dict[str, np.ndarray]) -> None:
        """Write each ``arrays[path]`` (leading axis = samples) at sample ``start``."""
        import asyncio

        from zarr.core.sync import sync

        targets = [(self._array(p)._async_array, a) for p, a in arrays.items()]
        # a write that covers whole shards only encodes; one that covers part of a shard reads the
        # shard, re-encodes it and writes it whole: those go one array at a time, so that only one
        # shard's bytes are in memory (all ~40 arrays at once held ~130 MB with 8,192-sample shards)
        whole = all(_whole_shards(arr, start, len(a)) for arr, a in targets)

        async def all_writes():
            if whole:
                await asyncio.gather(*(arr.setitem(slice(start, start + len(a)), a) for arr, a in targets))
            else:
                for arr, a in targets:
                    await arr.setitem(slice(start, start + len(a)), a)

        sync(all_writes())
        if FSYNC:
            for p, a in arrays.items():
                self._sync_shards(p, start, start + len(a))

    def mark_done(self, start: int, stop: int) -> None:
        """Set the done flags of samples ``start:stop`` (after their data, which is on disk by then:
        :data:`FSYNC`)."""
        self._array("final/done")[start:stop] = np.ones(stop - start, bool)
        if FSYNC:
            self._sync_shards("final/done", start, stop)

    def _sync_shards(self, p: str, start: int, stop: int) -> None:
        """``fsync`` the shard files of array ``p`` that hold samples ``start:stop``, and their
        folders (the rename that put each file there)."""
        arr = self._array(p)
        step = arr.shards[0] if arr.shards else arr.chunks[0]
        folders = set()
        for k in range(start // step, (stop - 1) // step + 1):
            f = _shard_file(self.path, p, arr, k)
            _fsync(f)
            folders.add(f.parent)
        for d in folders:
            _fsync(d)


#: ``fsync`` every shard a block wrote before its done flags, and the done shard after them, so a
#: power cut or a crashed machine never leaves a "done" sample whose data never reached the disk
#: (LocalStore's temporary-file-and-rename is atomic, not durable). ``TUMBLE_STORE_FSYNC=0`` turns
#: it off (docs/design.md §5 gives its measured cost).
FSYNC = os.environ.get("TUMBLE_STORE_FSYNC", "1") != "0"


def _fsync(path: pathlib.Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:       # nothing written there (a region of fill values only): nothing to sync
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# ---------------------------------------------------------------------- reading
def summarize(path: str | os.PathLike) -> dict[str, Any]:
    """What ``tumble inspect`` shows: attributes, samples done, status counts, arrays and sizes."""
    root = open_root(path)
    attrs = dict(root.attrs)
    if not is_complete(attrs):
        raise InputError("store", os.fspath(path), "is incomplete: it was killed while being created (use --overwrite)")
    done = read_done(path)
    status_arr = root["final/status"]
    legend = {int(v): k for k, v in STATUS_LEGEND.items()}
    counts: dict[str, int] = {}
    n = status_arr.shape[0]
    step = status_arr.shards[0] if status_arr.shards else status_arr.chunks[0]
    reasons: dict[str, int] = {}
    failed_examples: list[tuple[int, str]] = []
    overflow = 0
    has_reason = "final/failure_code" in root
    for a in range(0, n, step):
        b = min(n, a + step)
        d = done[a:b]
        try:
            all_st = np.asarray(status_arr[a:b])
        except Exception:  # noqa: BLE001 - a damaged shard (inspect --verify names it)
            counts["unreadable"] = counts.get("unreadable", 0) + int(d.sum())
            continue
        st = all_st[d]
        for code, c in zip(*np.unique(st, return_counts=True)):
            name = legend.get(int(code), str(int(code)))
            counts[name] = counts.get(name, 0) + int(c)
        try:
            if "events/event_overflow" in root:
                overflow += int((np.asarray(root["events/event_overflow"][a:b])[d] > 0).sum())
            if has_reason and (st == int(Status.FAILED)).any():
                codes = np.asarray(root["final/failure_code"][a:b])
                msgs = np.asarray(root["final/failure_message"][a:b])
            else:
                continue
        except Exception:  # noqa: BLE001 - a damaged shard (inspect --verify names it)
            continue
        for k in np.flatnonzero(d & (all_st == int(Status.FAILED))):
            rname = Reason(int(codes[k])).name.lower() if int(codes[k]) in Reason._value2member_map_ else \
                str(int(codes[k]))
            reasons[rname] = reasons.get(rname, 0) + 1
            if len(failed_examples) < 5:
                failed_examples.append((a + int(k), str(msgs[k])))
    arrays = []
    for grp in GROUPS:
        if grp not in root:
            continue
        for name, arr in sorted(root[grp].arrays()):
            try:
                stored = int(arr.nbytes_stored())
            except Exception:  # pragma: no cover - store-dependent
                stored = -1
            itemsize = getattr(arr.dtype, "itemsize", 0) or 16
            arrays.append({"path": f"{grp}/{name}", "dims": list(arr.metadata.dimension_names or ()),
                           "shape": list(arr.shape), "dtype": str(arr.dtype), "units": arr.attrs.get("units", ""),
                           "nbytes": int(np.prod(arr.shape, dtype=np.int64)) * int(itemsize), "stored": stored})
    return {"path": os.fspath(path), "attrs": attrs, "samples": int(n), "done": int(done.sum()),
            "status": counts, "failure_reasons": reasons, "failed_examples": failed_examples,
            "event_overflow": overflow, "arrays": arrays}
