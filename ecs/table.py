"""Archetype tables: every entity sharing one component set, for every sample of a block.

Row layout is sample-major: ``row = sample * entity_count + entity_index``, so all rows of one
sample are contiguous and a block of samples is a contiguous slice of rows. Columns are numpy
arrays on the CPU backend and cupy arrays on the GPU backend, with a leading row axis.

Engine columns present in every table:

* ``row_status`` (int8, :class:`ecs.status.Status`): kernels skip rows that are not RUNNING.
* ``row_reason`` (int8, :class:`ecs.status.Reason`): why a FAILED row failed (0 otherwise).
* ``row_time`` (float64, s): simulated time of the row (rows may step adaptively).
* ``row_sample`` (int64): block-local sample index of the row.
* ``row_entity`` (int64): index of the row's entity in :attr:`Table.entities`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .component import ColumnSpec
from .kernels import to_host

ENGINE_COLUMNS = {
    "row_status": ColumnSpec("row_status", np.int8, (), "1", None, "row status code (ecs.status.Status)", None),
    "row_reason": ColumnSpec("row_reason", np.int8, (), "1", None,
                             "why a FAILED row failed (ecs.status.Reason)", None),
    "row_time": ColumnSpec("row_time", np.float64, (), "s", None, "simulated time of the row", None),
    "row_sample": ColumnSpec("row_sample", np.int64, (), "1", None, "block-local sample index", None),
    "row_entity": ColumnSpec("row_entity", np.int64, (), "1", None, "entity index within the table", None),
}


@dataclass
class Table:
    """One archetype packed as struct-of-arrays.

    Attributes:
        archetype: the component types every entity of the table has (sorted by name).
        entities: esper entity ids, shape [entity_count].
        samples: number of samples in the block.
        sample_offset: global index of the block's first sample.
        columns: column name -> array, shape [samples * entity_count, *per_row_shape].
        specs: column name -> :class:`ColumnSpec`.
        prefix: the dimension name used for the entity axis on output (e.g. ``"body"``).
    """

    archetype: tuple[type, ...]
    entities: np.ndarray
    samples: int
    sample_offset: int
    columns: dict[str, Any]
    specs: dict[str, ColumnSpec]
    prefix: str
    backend: str = "cpu"
    components: dict[str, tuple[type, str]] = field(default_factory=dict)

    @property
    def entity_count(self) -> int:
        return len(self.entities)

    @property
    def row_count(self) -> int:
        return self.samples * len(self.entities)

    def __getitem__(self, name: str):
        return self.columns[name]

    def __contains__(self, name: str) -> bool:
        return name in self.columns

    def has(self, *names: str) -> bool:
        return all(n in self.columns for n in names)

    def entity_index(self, entity: int) -> int:
        idx = np.flatnonzero(self.entities == entity)
        if idx.size == 0:
            raise KeyError(f"entity {entity} is not in this table")
        return int(idx[0])

    def row(self, entity: int, sample: int = 0) -> int:
        """Row index of ``entity`` in block-local ``sample``."""
        return sample * self.entity_count + self.entity_index(entity)

    def by_sample(self, name: str):
        """Column ``name`` reshaped to [samples, entity_count, *shape] (a view)."""
        a = self.columns[name]
        return a.reshape((self.samples, self.entity_count) + a.shape[1:])

    def unpack(self, entity: int, sample: int = 0) -> tuple:
        """Per-entity view back as component instances (host copies), for inspection and tests."""
        r = self.row(entity, sample)
        out = []
        for ctype in self.archetype:
            kwargs = {}
            for spec, fname in zip(ctype.__columns__, ctype.__fieldnames__):
                v = to_host(self.columns[spec.name][r])
                if spec.dtype == "entity":
                    ents = self.entities_ref[spec.name]
                    v = int(ents[int(v) % len(ents)]) if v >= 0 else -1
                elif np.ndim(v) == 0:
                    v = v.item()
                else:
                    v = np.array(v)
                kwargs[fname] = v
            out.append(ctype(**kwargs))
        return tuple(out)

    #: for entity-reference columns: column -> entity ids of the referenced table (set by compile)
    entities_ref: dict[str, np.ndarray] = field(default_factory=dict)
