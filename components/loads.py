"""Applied loads (seed 002's RbTimeVectorSum, seed 003's applied force/torque containers).

A load is an entity of its own, attached to a body through ``load_body``, so a body may carry any
number of loads and a load may be dispersed per sample like any other column. Its vector is

    ``load_scale · (load_vector + series(t) + function(t))``

where ``series`` is a sampled time series (linear interpolation, zero outside its span) held in the
:class:`LoadSeries` resource and ``function`` is a compiled (``numba.njit``) function of time
registered in :class:`LoadFunctions`; ``-1`` means "none". Forces act at ``load_point`` (body
frame, relative to the reference point) and add ``r × F`` to the body torque.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np

from ecs import InputError, column, component


class LoadKind(enum.IntEnum):
    FORCE = 0
    TORQUE = 1


class LoadFrame(enum.IntEnum):
    BODY = 0
    INERTIAL = 1


@component("load")
class AppliedLoad:
    """A force at a body point, or a torque, constant or varying in time."""

    body: int = column(dtype="entity", doc="the body the load acts on")
    kind: int = column(dtype=np.int8, doc="LoadKind: 0 force, 1 torque")
    frame: int = column(dtype=np.int8, doc="LoadFrame of the vector: 0 body, 1 inertial")
    point: np.ndarray = column("m", shape=3, frame="body", doc="application point relative to the reference point")
    vector: np.ndarray = column("N | N m", shape=3, doc="constant part of the vector")
    series: int = column(dtype=np.int64, default=-1, doc="index in LoadSeries (-1: none)")
    function: int = column(dtype=np.int64, default=-1, doc="index in LoadFunctions (-1: none)")
    scale: float = column("1", default=1.0, doc="multiplies the whole vector")


@dataclass
class LoadSeries:
    """Resource: sampled time series, concatenated. ``add`` returns the index to put in ``load_series``."""

    times: list = field(default_factory=list)
    values: list = field(default_factory=list)

    def add(self, times, values) -> int:
        t = np.asarray(times, float)
        v = np.asarray(values, float)
        if t.ndim != 1 or t.size < 2:
            raise InputError("load series times", t.tolist(), "need at least two sample times")
        if not np.all(np.diff(t) > 0):
            raise InputError("load series times", t.tolist(), "must be strictly increasing")
        if v.shape != (t.size, 3):
            raise InputError("load series values", v.shape, f"must have shape ({t.size}, 3)")
        if not (np.all(np.isfinite(t)) and np.all(np.isfinite(v))):
            raise InputError("load series", "NaN/inf", "must be finite")
        self.times.append(t)
        self.values.append(v)
        return len(self.times) - 1

    def packed(self):
        """(times [M], values [M, 3], offsets [k+1]) for the kernels."""
        if not self.times:
            return np.zeros(1), np.zeros((1, 3)), np.zeros(1, np.int64)
        off = np.concatenate([[0], np.cumsum([t.size for t in self.times])]).astype(np.int64)
        return np.concatenate(self.times), np.concatenate(self.values), off


@dataclass
class LoadFunctions:
    """Resource: compiled functions of time ``f(t) -> (x, y, z)``; ``add`` returns the index."""

    functions: list = field(default_factory=list)

    def add(self, fn) -> int:
        if not hasattr(fn, "py_func"):
            raise InputError("load function", getattr(fn, "__name__", fn),
                             "must be a numba.njit-compiled function f(t) -> (x, y, z)")
        self.functions.append(fn)
        return len(self.functions) - 1
