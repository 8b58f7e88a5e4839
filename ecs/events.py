"""Per-sample event records (collisions, phase switches, ...).

Events are stored with a fixed capacity per sample, dims ``(sample, event)``, so that a block of
samples owns whole shards of the events arrays exactly like every other output, runs resume
sample by sample, and the store's bytes do not depend on block size or worker count. Unused slots
hold NaN (floats) or -1 (integers); ``event_count`` says how many slots a sample used. A sample
that produces more events than the capacity keeps the first ``capacity`` and its
``event_overflow`` flag is set.

Event systems declare their fields once (``world.events.declare``) and write them from kernels
through :meth:`EventLog.arrays` (``slot = count[sample]; count[sample] += 1``), one thread per
sample so the order is deterministic.
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


@dataclass
class EventLog:
    """Declared event fields and, after ``allocate``, their per-sample arrays."""

    capacity: int = 64
    fields: dict[str, EventField] = field(default_factory=dict)
    arrays: dict[str, object] = field(default_factory=dict)
    count: object = None
    overflow: object = None

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
