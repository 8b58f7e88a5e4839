"""Components: plain data whose fields are the schema of the struct-of-arrays tables.

A component is a ``@dataclass(slots=True)`` made by :func:`component`. Each field is declared with
:func:`column`, which records its dtype, per-row shape, unit, frame and a one-line doc. The table
column that holds a field is named ``f"{prefix}_{field}"`` (prefix-first naming, docs/design.md §3), e.g.
``RigidState(position=...)`` with prefix ``"body"`` fills the column ``body_position``.

Field values given at authoring time may be Python scalars, sequences or numpy arrays; they are
converted and shape-checked at pack time. A field declared with ``dtype="entity"`` holds an
esper entity id and is packed as the row index of that entity (same sample) in its own table.
"""

from __future__ import annotations

import collections
import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

ENTITY = "entity"


@dataclass(frozen=True)
class ColumnSpec:
    """Schema of one table column.

    Attributes:
        name: full column name (``body_position``).
        dtype: numpy dtype of the column, or ``"entity"`` for a reference to another entity.
        shape: per-row shape, ``()`` for a scalar.
        unit: SI unit string (``"m"``, ``"kg m^2"``, ``"1"`` for dimensionless).
        frame: reference frame of a vector quantity (``"inertial"``, ``"body"``) or ``None``.
        doc: one-line description.
        default: value used when the author leaves the field unset.
        check: validity rule (:class:`ecs.rules.Rule`) every packed value must satisfy, or ``None``.
        flags: for a code column, ``{meaning: value}`` (an ``enum.IntEnum`` is accepted): the store
            writes them as the CF attributes ``flag_values`` and ``flag_meanings``.
        dims: names of the per-row axes in the store (``("q_slot",)``), or ``None`` for the
            defaults of :func:`ecs.store.component_dims` (``xyz``, ``quat``, ``row``/``col``).
        labels: ``{dim: names}``: a label per index of a declared axis, written as that axis's
            coordinate (``inputs/contact_terrain.sel(pair_field="restitution")``).
    """

    name: str
    dtype: Any
    shape: tuple[int, ...]
    unit: str
    frame: str | None
    doc: str
    default: Any
    check: Any = None
    flags: Any = None
    dims: tuple[str, ...] | None = None
    labels: dict[str, tuple[str, ...]] | None = None

    @property
    def storage_dtype(self) -> np.dtype:
        return np.dtype(np.int64) if self.dtype == ENTITY else np.dtype(self.dtype)


def flag_map(flags) -> dict[str, int] | None:
    """``{meaning: value}`` from a dict or an ``enum.IntEnum`` class (meanings lower-case, no spaces)."""
    if flags is None:
        return None
    items = ((m.name, int(m.value)) for m in flags) if isinstance(flags, type) else flags.items()
    return {str(k).lower().replace(" ", "_"): int(v) for k, v in items}


def flag_attrs(flags) -> dict[str, Any]:
    """CF ``flag_values``/``flag_meanings`` attributes of a code column's ``flags`` (empty without)."""
    fm = flag_map(flags)
    return {"flag_values": list(fm.values()), "flag_meanings": " ".join(fm)} if fm else {}


def column(unit: str = "1", *, shape: tuple[int, ...] | int = (), dtype: Any = np.float64,
           frame: str | None = None, doc: str = "", default: Any = None, check: Any = None, flags: Any = None,
           dims: tuple[str, ...] | None = None, labels: dict[str, Any] | None = None):
    """Declare a component field: dtype, per-row shape, unit, frame, doc and validity rule.

    ``default`` may be a scalar or array (it is copied per instance); ``None`` means zeros.
    ``check`` is an :class:`ecs.rules.Rule` every packed value must satisfy (checked at compile for
    every row, and for every sample's dispersed value before a batch creates its store).
    """
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if dims is not None and len(dims) != len(shape):
        raise ValueError(f"column dims {dims!r} must name each of the {len(shape)} per-row axes of shape {shape}")
    if labels:
        for dim, names in labels.items():
            if dims is None or dim not in dims or len(names) != shape[dims.index(dim)]:
                raise ValueError(f"column labels of {dim!r} must name each index of a declared axis "
                                 f"(dims {dims!r}, shape {shape})")
        labels = {str(d): tuple(str(x) for x in names) for d, names in labels.items()}
    meta = {"unit": unit, "shape": shape, "dtype": dtype, "frame": frame, "doc": doc, "default": default,
            "check": check, "flags": flag_map(flags), "dims": None if dims is None else tuple(dims), "labels": labels or None}
    if default is None:
        fill = 0 if dtype != ENTITY else -1
        factory = (lambda: fill) if shape == () else (lambda: np.full(shape, fill, dtype=np.dtype(np.int64 if dtype == ENTITY else dtype)))
    elif np.ndim(default) == 0:
        factory = lambda: default  # noqa: E731
    else:
        arr = np.array(default, dtype=dtype)
        factory = lambda: arr.copy()  # noqa: E731
    return dataclasses.field(default_factory=factory, metadata={"tumble": meta})


def component(prefix: str):
    """Class decorator: make a slotted dataclass whose columns are ``prefix_<field>``."""

    def wrap(cls):
        cls = dataclass(slots=True)(cls)
        specs = []
        for f in dataclasses.fields(cls):
            meta = f.metadata.get("tumble")
            if meta is None:
                raise TypeError(f"{cls.__name__}.{f.name}: declare every component field with column(...)")
            specs.append(ColumnSpec(name=f"{prefix}_{f.name}", dtype=meta["dtype"], shape=meta["shape"],
                                    unit=meta["unit"], frame=meta["frame"], doc=meta["doc"],
                                    default=meta["default"], check=meta.get("check"), flags=meta.get("flags"),
                                    dims=meta.get("dims"), labels=meta.get("labels")))
        cls.__prefix__ = prefix
        cls.__columns__ = tuple(specs)
        cls.__fieldnames__ = tuple(f.name for f in dataclasses.fields(cls))
        return cls

    return wrap


def columns_of(ctype) -> tuple[ColumnSpec, ...]:
    """The column specs a component type declares."""
    cols = getattr(ctype, "__columns__", None)
    if cols is None:
        raise TypeError(f"{ctype!r} is not a tumble component (decorate it with @component(prefix))")
    return cols


def column_spec(ctype, field: str) -> ColumnSpec:
    """The :class:`ColumnSpec` of field ``field`` of component type ``ctype``."""
    for name, spec in zip(ctype.__fieldnames__, columns_of(ctype)):
        if name == field:
            return spec
    raise KeyError(f"{ctype.__name__} has no field {field!r} (fields: {', '.join(ctype.__fieldnames__)})")


def record(name: str, module: str, fields: dict[str, "ColumnSpec | str"], doc: str) -> type:
    """A record of columns that kernels take as one argument and read by name (``tree.mass[r]``).

    A namedtuple class ``name`` (defined as if in ``module``, where it must be bound at module level
    under the same name: numba's disk cache pickles it by reference) whose fields are the keys of
    ``fields``: a field declared by a :class:`ColumnSpec` holds that column's array, one declared by
    a string (its description, with unit and shape) holds a work array or a parameter the system
    owns. numba types an instance as a tuple, on the CPU and (through
    :func:`ecs.kernels.kernel_tuple`) on the GPU, so a kernel unpacks it or reads its fields at no
    run-time cost. The class docstring is ``doc`` followed by each field's column, unit, per-row
    shape, frame and description, from the declarations; ``Record.columns`` lists the column names
    (``None`` for the other fields) and ``Record.of(table, **others)`` gathers the columns from a
    table and takes the other fields by name.
    """
    cls = collections.namedtuple(name, tuple(fields), module=module)
    rows = []
    for field, spec in fields.items():
        if isinstance(spec, str):
            rows.append(f"* ``{field}``: {spec}")
            continue
        frame = f", frame {spec.frame}" if spec.frame else ""
        rows.append(f"* ``{field}``: column ``{spec.name}`` [{spec.unit}], per-row shape {spec.shape}{frame}: "
                    f"{spec.doc}")
    cls.__doc__ = doc + "\n\nFields:\n\n" + "\n".join(rows) + "\n"
    cls.columns = tuple(None if isinstance(spec, str) else spec.name for spec in fields.values())

    def of(c, table, **others):
        extra = set(others) - {f for f, col in zip(c._fields, c.columns) if col is None}
        if extra:
            raise TypeError(f"{c.__name__}.of: {sorted(extra)} are not fields outside the table")
        return c(*(others[f] if col is None else table[col] for f, col in zip(c._fields, c.columns)))

    cls.of = classmethod(of)
    return cls


@dataclass(frozen=True)
class RowLayout:
    """The named slots of a flat float64 work row (a kernel's per-row constants and integrator
    state), generated from a declaration by :func:`row_layout`: a kernel reads ``w[K0 + 13 * j]``
    with ``K0`` taken from here, never a number written by hand."""

    name: str
    slots: dict            # field -> (offset, width, description), in row order
    size: int

    def offset(self, field: str) -> np.int64:
        """The first slot of ``field`` (numpy int64: a Python-int literal argument would make numba
        compile a callee once per value, :func:`ecs.kernels.dual_call`)."""
        try:
            return np.int64(self.slots[field][0])
        except KeyError:
            raise KeyError(f"{self.name} has no field {field!r} (fields: {', '.join(self.slots)})") from None

    def end(self, field: str) -> np.int64:
        """One past the last slot of ``field``."""
        return np.int64(self.offset(field) + self.slots[field][1])

    def offsets(self, fields: str) -> tuple:
        """The offsets of the space-separated ``fields``, for a module to bind as its constants:
        ``Y0, K0 = LAYOUT.offsets("Y0 K0")``."""
        return tuple(self.offset(f) for f in fields.split())


def row_layout(name: str, fields: tuple, size: int | None = None) -> RowLayout:
    """The layout of a work row from its fields in row order, each ``(field, width, description)``
    (a description's unit and frame as a column's would be); ``size`` (default: the fields' total)
    pads the row to a length its users allocate. A field name given twice, a width below 1 or a
    ``size`` shorter than the fields is refused."""
    slots: dict = {}
    at = 0
    for field, width, doc in fields:
        if field in slots:
            raise ValueError(f"{name}: field {field!r} declared twice")
        if int(width) < 1:
            raise ValueError(f"{name}: field {field!r} has width {width}; it must be at least 1")
        slots[field] = (at, int(width), doc)
        at += int(width)
    if size is not None and size < at:
        raise ValueError(f"{name}: size {size} is shorter than its fields ({at} slots)")
    return RowLayout(name, slots, at if size is None else int(size))


class Component:
    """Typing marker for classes produced by :func:`component`."""

    __prefix__: ClassVar[str]
    __columns__: ClassVar[tuple[ColumnSpec, ...]]
