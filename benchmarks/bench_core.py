"""``tumble bench core``: what the engine costs on top of the physics.

1. Per-frame engine overhead: one trivial SCHEDULED system (``x += v dt`` over 10⁵ rows) stepped
   by ``World.run`` — scheduling, dispatch, frame bookkeeping, status checks — against calling the
   same bare numba kernel on the same arrays in a Python loop (the named peer: "bare numba").
   Target ≤ 1.2×.
2. Writer share: a batch of 10⁵ samples recording finals and events through ``run_batch`` into a
   Zarr store: the time spent inside the store calls (create, block writes, done flags,
   consolidation) as a share of the batch's wall time. Target ≤ 5 %.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from numba import njit, prange

from benchmarks._common import machine_info, median_time, save
from ecs import Phase, System, World, column, component


@component("body")
class _Drift:
    position: np.ndarray = column("m", shape=3)
    velocity: np.ndarray = column("m/s", shape=3)


@njit(parallel=True, cache=True)
def drift(status, position, velocity, dt):
    for i in prange(position.shape[0]):
        if status[i] == 0:
            for k in range(3):
                position[i, k] += dt * velocity[i, k]


class _DriftSystem(System):
    phase = Phase.SCHEDULED
    reads = ("body_velocity",)
    writes = ("body_position",)

    def bind(self, world):
        self.t = world.table_with("body_position", "body_velocity")

    def process(self, frame):
        t = self.t
        drift(t["row_status"], t["body_position"], t["body_velocity"], frame.dt)


def engine_overhead(rows: int, frames: int, repeat: int) -> dict:
    w = World("bench-core")
    w.spawn(_Drift(velocity=np.array([1.0, 2.0, 3.0])))
    w.add_system(_DriftSystem())

    def engine():
        w.compile(samples=rows)
        w.run(t_end=frames * 1e-3, dt=1e-3)

    w.compile(samples=rows)
    t = w.tables[0]
    st, pos, vel = t["row_status"], t["body_position"], t["body_velocity"]

    def bare():
        for _ in range(frames):
            drift(st, pos, vel, 1e-3)

    drift(st, pos, vel, 1e-3)
    # compile() is outside the frame loop: time it separately and subtract it from the engine run
    t_compile = median_time(lambda: w.compile(samples=rows), repeat=repeat)
    t_engine = median_time(engine, repeat=repeat) - t_compile
    t_bare = median_time(bare, repeat=repeat)
    return {"rows": rows, "frames": frames, "engine_per_frame_us": 1e6 * t_engine / frames,
            "bare_numba_per_frame_us": 1e6 * t_bare / frames, "ratio_engine_over_bare": t_engine / t_bare,
            "compile_ms": 1e3 * t_compile}


def writer_share(samples: int, block: int, repeat: int, t_end: float) -> dict:
    """Share of a batch's wall time spent in the store: creating it, writing blocks and done flags,
    consolidating metadata. Measured directly by timing those calls inside ``run_batch``."""
    import ecs.batch as batch
    import ecs.store as store
    from scenes.registry import load_scene

    spent = {"s": 0.0}

    def timed(fn):
        def wrapper(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                spent["s"] += time.perf_counter() - t0
        return wrapper

    patches = [(store.StoreWriter, "write"), (store.StoreWriter, "mark_done"), (batch.zstore, "create_store"),
               (batch.zstore, "consolidate")]
    originals = [getattr(o, n) for o, n in patches]
    scene = load_scene("precession", t_end=t_end, record_every=None)  # finals, events, inputs only
    tmp = Path(tempfile.mkdtemp(prefix="tumble-bench-"))
    shares, walls, writes = [], [], []
    try:
        for o, n in patches:
            setattr(o, n, timed(getattr(o, n)))
        for k in range(repeat + 1):  # the first run is a warm-up (numba compile)
            out = tmp / "b.zarr"
            shutil.rmtree(out, ignore_errors=True)
            spent["s"] = 0.0
            t0 = time.perf_counter()
            batch.run_batch(scene, samples=samples, out=out, seed=1, block=block, progress=None)
            wall = time.perf_counter() - t0
            if k:
                shares.append(spent["s"] / wall)
                walls.append(wall)
                writes.append(spent["s"])
    finally:
        for (o, n), f in zip(patches, originals):
            setattr(o, n, f)
        shutil.rmtree(tmp, ignore_errors=True)
    return {"samples": samples, "block": block, "t_end": t_end, "frames": round(t_end / scene.dt), "run_wall_s": statistics.median(walls),
            "store_s": statistics.median(writes), "writer_share": statistics.median(shares)}


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(prog="tumble bench core", description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--frames", type=int, default=200)
    p.add_argument("--samples", type=int, default=100_000)
    p.add_argument("--block", type=int, default=16_384)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--t-end", type=float, default=10.0,
                   help="simulated time of the writer-share batch [s] (precession, dt 0.01 s); the store's cost "
                        "is fixed per sample, so its share falls as runs get longer")
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    over = engine_overhead(a.rows, a.frames, a.repeat)
    print(f"engine overhead, {a.rows} rows, {a.frames} frames: engine {over['engine_per_frame_us']:.1f} us/frame, "
          f"bare numba {over['bare_numba_per_frame_us']:.1f} us/frame, ratio {over['ratio_engine_over_bare']:.3f} "
          f"(target <= 1.2)")
    wr = writer_share(a.samples, a.block, max(1, a.repeat // 2), a.t_end)
    print(f"writer share, {a.samples} samples of precession, {wr['frames']} frames (finals + events + inputs, "
          f"block {a.block}): "
          f"run {wr['run_wall_s']:.2f} s, in the store {wr['store_s']:.2f} s, share "
          f"{100 * wr['writer_share']:.1f} % (target <= 5 %)")
    info = machine_info()
    print("machine:", ", ".join(f"{k}={v}" for k, v in info.items()))
    path = save("core", {"engine_overhead": over, "writer": wr, "wall_s": time.perf_counter() - t0})
    print(f"results: {path}")
    return {"engine_overhead": over, "writer": wr}


if __name__ == "__main__":
    main()
