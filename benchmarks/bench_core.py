"""``tumble bench core``: what the engine costs on top of the physics.

1. Per-frame engine overhead: one trivial SCHEDULED system (``x += v dt`` over 10⁵ rows) stepped
   by ``World.run`` — scheduling, dispatch, frame bookkeeping, status checks — against calling the
   same bare numba kernel on the same arrays in a Python loop (the named peer: "bare numba").
   Target ≤ 1.2×.
2. Writer share: a batch of 10⁵ samples recording finals and events through ``run_batch`` into a
   Zarr store, against the same batch run without a store (``World.run`` per block only).
   Target ≤ 5 %.
"""

from __future__ import annotations

import argparse
import shutil
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


def writer_share(samples: int, block: int, repeat: int) -> dict:
    from ecs.batch import run_batch
    from scenes.registry import load_scene

    def build():
        return load_scene("precession", t_end=0.1)

    scene = build()
    tmp = Path(tempfile.mkdtemp(prefix="tumble-bench-"))

    def with_store():
        out = tmp / "b.zarr"
        shutil.rmtree(out, ignore_errors=True)
        run_batch(scene, samples=samples, out=out, seed=1, block=block, progress=None)

    def without_store():
        w = scene.world
        for start in range(0, samples, block):
            n = min(block, samples - start)
            w.compile(samples=n, sample_offset=start)
            w.run(t_end=scene.t_end, dt=scene.dt, final=scene.final)

    try:
        t_store = median_time(with_store, repeat=repeat)
        t_plain = median_time(without_store, repeat=repeat)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"samples": samples, "block": block, "run_with_store_s": t_store, "run_without_store_s": t_plain,
            "writer_share": max(0.0, (t_store - t_plain) / t_store)}


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(prog="tumble bench core", description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--frames", type=int, default=200)
    p.add_argument("--samples", type=int, default=100_000)
    p.add_argument("--block", type=int, default=16_384)
    p.add_argument("--repeat", type=int, default=5)
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    over = engine_overhead(a.rows, a.frames, a.repeat)
    print(f"engine overhead, {a.rows} rows, {a.frames} frames: engine {over['engine_per_frame_us']:.1f} us/frame, "
          f"bare numba {over['bare_numba_per_frame_us']:.1f} us/frame, ratio {over['ratio_engine_over_bare']:.3f} "
          f"(target <= 1.2)")
    wr = writer_share(a.samples, a.block, max(1, a.repeat // 2))
    print(f"writer share, {a.samples} samples (finals + events, block {a.block}): with store "
          f"{wr['run_with_store_s']:.2f} s, without {wr['run_without_store_s']:.2f} s, share "
          f"{100 * wr['writer_share']:.1f} % (target <= 5 %)")
    info = machine_info()
    print("machine:", ", ".join(f"{k}={v}" for k, v in info.items()))
    path = save("core", {"engine_overhead": over, "writer": wr, "wall_s": time.perf_counter() - t0})
    print(f"results: {path}")
    return {"engine_overhead": over, "writer": wr}


if __name__ == "__main__":
    main()
