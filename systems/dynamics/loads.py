"""Applied loads: constant, sampled and compiled-function forces and torques (seed 002 §4.1
RbTimeVectorSum; seed 003 applied force/torque containers).

Loads of one sample are summed in declaration order by one thread (deterministic, no races): the
kernels loop over samples and, inside, over the sample's loads. A force ``F`` at body point ``r``
adds ``F`` to ``body_force`` (inertial) and ``r × F_B`` to ``body_torque`` (body axes).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from components.loads import LoadFunctions, LoadSeries
from ecs import Phase, System
from ecs.errors import InputError
from ecs.kernels import cpu_jit, cpu_parallel, dual, launch_rows, to_backend, to_host
from ecs.attitude import quat_rotate, quat_rotate_inverse

_rot = quat_rotate.cpu
_rot_inv = quat_rotate_inverse.cpu


def _series_value(times, values, off, k, t):
    """Linear interpolation of series k at time t; zero outside its span."""
    a, b = off[k], off[k + 1]
    if t < times[a] or t > times[b - 1]:
        return 0.0, 0.0, 0.0
    lo, hi = a, b - 1
    while hi - lo > 1:  # bisection: times[lo] <= t <= times[hi]
        mid = (lo + hi) // 2
        if times[mid] <= t:
            lo = mid
        else:
            hi = mid
    span = times[hi] - times[lo]
    w = (t - times[lo]) / span if span > 0.0 else 0.0
    return ((1.0 - w) * values[lo, 0] + w * values[hi, 0], (1.0 - w) * values[lo, 1] + w * values[hi, 1],
            (1.0 - w) * values[lo, 2] + w * values[hi, 2])


series_value = dual(_series_value)
_series = series_value.cpu


def _add_load(b, kind, frame, px, py, pz, vx, vy, vz, att, force, torque):
    """Add one load vector (already scaled) to body row b."""
    q0, q1, q2, q3 = att[b, 0], att[b, 1], att[b, 2], att[b, 3]
    if frame == 0:
        bx, by, bz = vx, vy, vz
    else:
        bx, by, bz = _rot_inv(q0, q1, q2, q3, vx, vy, vz)
    if kind == 0:
        ix, iy, iz = _rot(q0, q1, q2, q3, bx, by, bz)
        force[b, 0] += ix
        force[b, 1] += iy
        force[b, 2] += iz
        torque[b, 0] += py * bz - pz * by
        torque[b, 1] += pz * bx - px * bz
        torque[b, 2] += px * by - py * bx
    else:
        torque[b, 0] += bx
        torque[b, 1] += by
        torque[b, 2] += bz


add_load = dual(_add_load)
_add = add_load.cpu


def _apply_sample_loads(s, loads_per_sample, body, kind, frame, point, vector, series, scale, table, status, time,
                        att, force, torque):
    """Constant + series loads of sample s, in declaration order (``table``: the packed
    :class:`components.loads.LoadSeries`, (times, values, offsets))."""
    times, values, off = table
    for j in range(loads_per_sample):
        ld = s * loads_per_sample + j
        b = body[ld]
        if b < 0 or status[b] != 0:
            continue
        vx, vy, vz = vector[ld, 0], vector[ld, 1], vector[ld, 2]
        k = series[ld]
        if k >= 0:
            sx, sy, sz = _series(times, values, off, k, time[b])
            vx += sx
            vy += sy
            vz += sz
        c = scale[ld]
        _add(b, kind[ld], frame[ld], point[ld, 0], point[ld, 1], point[ld, 2], c * vx, c * vy, c * vz, att, force,
             torque)


apply_sample_loads = dual(_apply_sample_loads)
_apply_sample_loads_cpu = apply_sample_loads.cpu


@cpu_parallel
def apply_loads_samples(n, loads_per_sample, body, kind, frame, point, vector, series, scale, table, status, time,
                        att, force, torque):
    for s in prange(n):
        _apply_sample_loads_cpu(s, loads_per_sample, body, kind, frame, point, vector, series, scale, table, status,
                                time, att, force, torque)


@cpu_jit
def apply_function_loads(fn, index, samples, loads_per_sample, body, kind, frame, point, function, scale, status,
                         time, att, force, torque):
    """Loads whose ``load_function`` is ``index``: vector ``scale · fn(t)`` (serial, in order)."""
    for s in range(samples):
        for j in range(loads_per_sample):
            ld = s * loads_per_sample + j
            b = body[ld]
            if function[ld] != index or b < 0 or status[b] != 0:
                continue
            fx, fy, fz = fn(time[b])
            c = scale[ld]
            _add(b, kind[ld], frame[ld], point[ld, 0], point[ld, 1], point[ld, 2], c * fx, c * fy, c * fz, att,
                 force, torque)


class ApplyLoads(System):
    """DERIVATIVE system summing every :class:`components.loads.AppliedLoad` into its body's wrench.

    Compiled functions of time are called from a serial CPU kernel, one launch per function
    (numba specialises the kernel on each function); on the GPU backend write the function as a
    system of its own.
    """

    phase = Phase.DERIVATIVE
    reads = ("load_body", "load_kind", "load_frame", "load_point", "load_vector", "load_series", "load_function",
             "load_scale", "body_attitude", "row_time")
    accumulates = ("body_force", "body_torque")

    def bind(self, world) -> None:
        self.loads = world.table_with("load_body", required=False)
        if self.loads is None:
            return
        self.bodies = world.table_with("body_force", "body_attitude")
        times, values, off = world.resource(LoadSeries, LoadSeries()).packed()
        self.times, self.values, self.off = to_backend(world.backend, (times, values, off))
        self.functions = world.resource(LoadFunctions, LoadFunctions()).functions
        fidx = to_host(self.loads["load_function"])      # a device column on the GPU backend: read a copy
        self.used_functions = sorted({int(k) for k in np.unique(fidx) if k >= 0})
        if self.used_functions and world.backend == "gpu":
            raise InputError("AppliedLoad.load_function", self.used_functions,
                             "needs the CPU backend: a function of time is called from a CPU kernel (write the "
                             "force as a DERIVATIVE system with a GPU kernel, or run with backend='cpu')")

    def process(self, frame) -> None:
        if self.loads is None:
            return
        L, B = self.loads, self.bodies
        launch_rows(frame.backend, apply_loads_samples, apply_sample_loads, L.samples, L.entity_count,
                    L["load_body"], L["load_kind"], L["load_frame"], L["load_point"], L["load_vector"],
                    L["load_series"], L["load_scale"], (self.times, self.values, self.off), B["row_status"],
                    B["row_time"], B["body_attitude"], B["body_force"], B["body_torque"])
        for k in self.used_functions:
            apply_function_loads(self.functions[k], k, L.samples, L.entity_count, L["load_body"], L["load_kind"],
                                 L["load_frame"], L["load_point"], L["load_function"], L["load_scale"],
                                 B["row_status"], B["row_time"], B["body_attitude"], B["body_force"],
                                 B["body_torque"])
