"""Tiny test scene: two bodies drifting with linear drag; a plane-crossing event; optional failures.

Used by the store, resume, CLI and distributed tests so that they do not depend on the physics
scenes. Parameters (``build(**params)``):

* ``t_end``, ``dt``, ``record_every``: run length [s], frame [s] and trajectory decimation [frames].
* ``sigma``: 3-sigma spread of the probe's initial velocity [m/s] (dispersion ``probe_velocity``).
* ``fail_above``: samples whose dispersed drag exceeds this make their state NaN (sqrt of a
  negative number), so the drift kernel marks their rows FAILED. The default 2.0 never fails.
* ``raise_above``: ``Drift.process`` raises (a Python exception out of ``World.run``) when any
  sample of the block has a drag above this; the batch runner must isolate those samples.
* ``spin``: extra busy work per row and frame, to make a run slow enough to be killed mid-way.
"""

import math

import numba
import numpy as np

from components.status import Status
from ecs import Phase, Scene, System, World, column, component
from ecs.scene import Dispersion, normal, uniform


@component("body")
class Body:
    position: np.ndarray = column("m", shape=3, frame="inertial", doc="body position")
    velocity: np.ndarray = column("m/s", shape=3, frame="inertial", doc="body velocity")
    attitude: np.ndarray = column("1", shape=4, frame="inertial", doc="attitude quaternion, scalar first",
                                  default=[1.0, 0.0, 0.0, 0.0])
    drag: float = column("1/s", doc="linear drag rate")


@numba.njit(cache=True)  # serial: per-call thread launches cost more than these tiny loops
def drift_bodies(p, v, q, drag, st, dt, fail_above, spin):
    for i in range(p.shape[0]):
        if st[i] != 0:
            continue
        bad = np.sqrt(fail_above - drag[i])  # NaN when drag > fail_above
        acc = 0.0
        for _ in range(spin):
            acc += math.sin(acc + 1.0)
        for k in range(3):
            v[i, k] -= dt * drag[i] * v[i, k]
            p[i, k] += dt * v[i, k] + 0.0 * bad + 0.0 * acc
        # slow rotation about z: q = (cos(a/2), 0, 0, sin(a/2)) with a += dt
        half = math.atan2(q[i, 3], q[i, 0]) + 0.5 * dt
        q[i, 0] = math.cos(half)
        q[i, 3] = math.sin(half)
        ok = True
        for k in range(3):
            if not math.isfinite(p[i, k]) or not math.isfinite(v[i, k]):
                ok = False
        if not ok:
            st[i] = 9  # Status.FAILED


@numba.njit(cache=True)  # serial: per-call thread launches cost more than these tiny loops
def record_crossings(p, v, st, n_ent, t, dt, ev_time, ev_pos, ev_entity, count, overflow):
    n_samples = p.shape[0] // n_ent
    cap = ev_time.shape[1]
    for s in range(n_samples):  # one pass per sample: deterministic slot order
        for e in range(n_ent):
            i = s * n_ent + e
            if st[i] != 0:
                continue
            z1 = p[i, 2]
            z0 = z1 - dt * v[i, 2]
            if (z0 > 0.0) != (z1 > 0.0):
                c = count[s]
                if c < cap:
                    ev_time[s, c] = t + dt
                    for k in range(3):
                        ev_pos[s, c, k] = p[i, k]
                    ev_entity[s, c] = e
                    count[s] = c + 1
                else:
                    overflow[s] = 1


class Drift(System):
    phase = Phase.SCHEDULED
    reads = ("body_velocity", "body_drag")
    writes = ("body_position", "body_attitude")

    def __init__(self, fail_above, spin, raise_above):
        self.fail_above = float(fail_above)
        self.spin = int(spin)
        self.raise_above = float(raise_above)

    def bind(self, world):
        self.t = world.table_with("body_position")

    def process(self, frame):
        t = self.t
        if frame.index == 3 and bool((t["body_drag"] > self.raise_above).any()):
            raise RuntimeError(f"drag above {self.raise_above} (test failure)")
        drift_bodies(t["body_position"], t["body_velocity"], t["body_attitude"], t["body_drag"], t["row_status"],
                     frame.dt, self.fail_above, self.spin)


class Crossings(System):
    phase = Phase.SCHEDULED
    reads = ("body_position", "body_velocity")

    def bind(self, world):
        self.world = world
        self.t = world.table_with("body_position")

    def process(self, frame):
        ev = self.world.events
        t = self.t
        record_crossings(t["body_position"], t["body_velocity"], t["row_status"], t.entity_count, frame.t, frame.dt,
                         ev.arrays["time"], ev.arrays["position"], ev.arrays["entity"], ev.count, ev.overflow)


def build(t_end=1.5, dt=0.01, record_every=10, sigma=0.3, fail_above=2.0, spin=0, capacity=4, raise_above=2.0):
    w = World("drift")
    probe = w.spawn(Body(position=[0.0, 0.0, 1.0], velocity=[0.1, 0.0, -1.0], drag=0.1), name="probe")
    w.spawn(Body(position=[0.0, 0.0, -0.5], velocity=[0.0, 0.0, 0.6], drag=0.0), name="target")
    w.events.capacity = int(capacity)
    w.events.declare("time", unit="s", doc="time of the plane crossing")
    w.events.declare("position", shape=3, unit="m", doc="position at the crossing")
    w.events.declare("entity", dtype=np.int64, doc="index of the crossing body")
    w.add_system(Drift(fail_above, spin, raise_above))
    w.add_system(Crossings())
    return Scene(
        name="drift", description="two bodies drifting with drag (test scene)", world=w, t_end=t_end, dt=dt,
        record_every=record_every, record=("body_position", "body_attitude"),
        final=("body_position", "body_velocity"),
        dispersions=[
            Dispersion(probe, "body_velocity", normal([0.1, 0.0, -1.0], [sigma] * 3), name="probe_velocity"),
            Dispersion("probe", "body_drag", uniform(0.0, 1.0)),
        ],
        params=dict(t_end=t_end, dt=dt, record_every=record_every, sigma=sigma, fail_above=fail_above, spin=spin,
                    capacity=capacity, raise_above=raise_above),
    )
