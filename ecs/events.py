"""Per-sample event records (collisions, phase switches, ...).

Events are stored with a fixed capacity per sample, dims ``(sample, event)``, so that a block of
samples owns whole shards of the events arrays exactly like every other output, runs resume
sample by sample, and the store's bytes do not depend on block size or worker count. Unused slots
hold NaN (floats) or -1 (integers); ``event_count`` says how many slots a sample used. A sample
that produces more events than the capacity keeps the first ``capacity`` and its
``event_overflow`` flag is set.

Event systems declare their fields once (``world.events.declare``) and write them from kernels
through :meth:`EventLog.arrays` (``slot = count[sample]; count[sample] += 1``), one thread per
sample so the order is deterministic. A system may also declare **summaries**
(``world.events.summarize``): one number per sample reduced from its logged events (how many
contacts started, the first one's time, the largest penetration), which the store writes to
``final/<name>`` beside the other outcomes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .kernels import device_array, to_host


@dataclass
class EventField:
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    unit: str
    doc: str
    flags: dict | None = None     #: a code field's ``{meaning: value}`` (CF flag attributes in the store)


#: Reductions an :class:`EventSummary` may ask for, over the selected events of one sample in slot
#: (= time) order: how many, the first or last value, the smallest or largest.
SUMMARY_REDUCTIONS = ("count", "first", "last", "min", "max")


@dataclass(frozen=True)
class EventSummary:
    """One number per sample from its logged events, written to ``final/<name>``.

    ``where = (code field, value)`` selects the events whose code field equals the value (e.g. the
    contact starts); ``count`` is an int32 (-1 for a failed sample), the others float64 (NaN when no
    event was selected). Events beyond the log's capacity were not kept, so a sample with
    ``events/event_overflow`` set summarises only its first ``capacity`` events.
    """

    name: str
    field: str
    reduce: str
    unit: str
    doc: str
    where: tuple[str, int] | None = None

    def of(self, events: dict[str, np.ndarray], count: np.ndarray) -> np.ndarray:
        """The summary of every sample of a block (``events[field]``: (sample, slot)) on the host."""
        vals = np.asarray(events[self.field], dtype=np.float64)
        n, cap = vals.shape[:2]
        sel = np.arange(cap)[None, :] < np.asarray(count).reshape(n, 1)
        if self.where is not None:
            sel &= np.asarray(events[self.where[0]]) == self.where[1]
        if self.reduce == "count":
            return sel.sum(axis=1).astype(np.int32)
        out = np.full(n, np.nan)
        has = sel.any(axis=1)
        if self.reduce in ("first", "last"):
            k = sel.argmax(axis=1) if self.reduce == "first" else cap - 1 - sel[:, ::-1].argmax(axis=1)
            out[has] = vals[np.arange(n), k][has]
        else:
            fill = np.inf if self.reduce == "min" else -np.inf
            red = np.min if self.reduce == "min" else np.max
            out[has] = red(np.where(sel, vals, fill), axis=1)[has]
        return out


@dataclass
class EventLog:
    """Declared event fields and, after ``allocate``, their per-sample arrays."""

    capacity: int = 64
    fields: dict[str, EventField] = field(default_factory=dict)
    arrays: dict[str, object] = field(default_factory=dict)
    count: object = None
    overflow: object = None
    summaries: dict[str, EventSummary] = field(default_factory=dict)

    def declare(self, name: str, *, shape: tuple[int, ...] | int = (), dtype=np.float64, unit: str = "1",
                doc: str = "", flags=None) -> None:
        """Declare an event field (idempotent for an identical declaration); ``flags``: a code
        field's meanings, ``{meaning: value}`` or an ``enum.IntEnum``."""
        from .component import flag_map

        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        f = EventField(name, shape, np.dtype(dtype), unit, doc, flag_map(flags))
        old = self.fields.get(name)
        if old is not None and old != f:
            raise ValueError(f"event field {name!r} declared twice with different schemas")
        self.fields[name] = f

    def summarize(self, name: str, field: str, reduce: str, *, unit: str | None = None, doc: str = "",
                  where: tuple[str, int] | None = None) -> None:
        """Declare ``final/<name>``: ``reduce`` (:data:`SUMMARY_REDUCTIONS`) of the declared event
        ``field`` over each sample's events (those whose code field ``where[0]`` equals ``where[1]``).
        Idempotent for an identical declaration."""
        if field not in self.fields or self.fields[field].shape != ():
            raise ValueError(f"event summary {name!r}: {field!r} must be a declared scalar event field")
        if reduce not in SUMMARY_REDUCTIONS:
            raise ValueError(f"event summary {name!r}: reduce {reduce!r} must be one of {SUMMARY_REDUCTIONS}")
        if where is not None and (where[0] not in self.fields or self.fields[where[0]].shape != ()):
            raise ValueError(f"event summary {name!r}: where field {where[0]!r} must be a declared scalar event field")
        sm = EventSummary(name, field, reduce, "1" if reduce == "count" else (unit or self.fields[field].unit), doc,
                          None if where is None else (str(where[0]), int(where[1])))
        old = self.summaries.get(name)
        if old is not None and old != sm:
            raise ValueError(f"event summary {name!r} declared twice differently")
        self.summaries[name] = sm

    def allocate(self, samples: int, backend: str) -> None:
        dev = device_array if backend == "gpu" else (lambda a: a)
        self.arrays = {}
        for f in self.fields.values():
            fill = np.nan if np.issubdtype(f.dtype, np.floating) else -1
            self.arrays[f.name] = dev(np.full((samples, self.capacity) + f.shape, fill, dtype=f.dtype))
        self.count = dev(np.zeros(samples, np.int32))
        self.overflow = dev(np.zeros(samples, np.int8))

    def to_host(self) -> tuple[dict[str, np.ndarray], np.ndarray]:
        ev = {k: to_host(v) for k, v in self.arrays.items()}
        if self.count is None:
            return ev, np.zeros(0, np.int32)
        ev["event_overflow"] = to_host(self.overflow)
        return ev, to_host(self.count)
