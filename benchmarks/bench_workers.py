"""``tumble bench workers``: a Dask run with ``--workers N`` against the same run in-process.

Runs ``SCENE`` (default ``deploy-cube``) for ``--samples`` samples (default 2,000) in-process and
on a local Dask cluster of ``--workers`` processes (default 2), alternating A B A B for
``--repeat`` pairs (default 1), on the same store path layout. Reports each wall time, the median
ratio (Dask / in-process), the number of tasks the Dask run submitted (its blocks: a store has at
least ``ecs.store.MIN_SHARDS`` shards, and a task owns whole shards), and whether the two stores
are byte-identical (every file, the root attribute ``run`` excepted). Both sides include their
start-up (the Dask side starts its cluster and each worker builds the scene and compiles).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks._common import machine_info, save


def _files(path) -> dict:
    import json

    out = {}
    for d, _, fs in os.walk(path):
        for f in fs:
            full = os.path.join(d, f)
            rel = os.path.relpath(full, path)
            data = Path(full).read_bytes()
            if rel == "zarr.json":
                meta = json.loads(data)
                meta["attributes"].pop("run", None)
                data = json.dumps(meta, sort_keys=True).encode()
            out[rel] = data
    return out


def main() -> int:
    ap = argparse.ArgumentParser(prog="tumble bench workers", description=__doc__.split("\n\n")[0])
    ap.add_argument("--scene", default="deploy-cube")
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1, help="interleaved pairs (in-process, Dask)")
    args = ap.parse_args()

    import zarr

    from tumble import last_summary, run_batch

    tmp = Path(tempfile.mkdtemp(prefix="tumble-bench-workers-"))
    try:
        run_batch(args.scene, samples=min(args.samples, 8), out=tmp / "warm.zarr")   # compile caches
        times = {"in-process": [], "dask": []}
        tasks = None
        for k in range(args.repeat):
            for side in ("in-process", "dask"):
                out = tmp / f"{side}-{k}.zarr"
                t0 = time.perf_counter()
                run_batch(args.scene, samples=args.samples, out=out,
                          workers=args.workers if side == "dask" else None)
                times[side].append(time.perf_counter() - t0)
                if side == "dask":
                    tasks = zarr.open_group(out, mode="r").attrs["run"]["invocations"][-1]["blocks_run"]
                    block = last_summary()["block"]
        a, b = _files(tmp / "in-process-0.zarr"), _files(tmp / "dask-0.zarr")
        identical = sorted(a) == sorted(b) and all(a[f] == b[f] for f in a)
        ratio = statistics.median(d / i for d, i in zip(times["dask"], times["in-process"]))
        load = os.getloadavg()
        print(f"{args.scene}, {args.samples} samples, {os.cpu_count()} cores, load average {load[0]:.2f}")
        print(f"  in-process          {', '.join(f'{t:.1f}' for t in times['in-process'])} s")
        print(f"  dask {args.workers} workers      {', '.join(f'{t:.1f}' for t in times['dask'])} s "
              f"({tasks} tasks of {block} samples)")
        print(f"  ratio dask/in-process (median of pairs): {ratio:.2f}")
        print(f"  stores byte-identical: {identical}")
        path = save("workers", {"scene": args.scene, "samples": args.samples, "workers": args.workers,
                                "times": times, "tasks": tasks, "block": block, "ratio": ratio,
                                "identical": identical, "load_average": load, "machine_now": machine_info()})
        print(f"  results: {path}")
        return 0 if identical and tasks >= args.workers else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
