"""``tumble bench deploy``: full deployment trajectories per second (``deploy-cube``, no rocks).

Issue 7's acceptance figure. One batch of ``--samples`` samples of ``deploy-cube`` (5 kg cube
released 200 m over the Itokawa-like body, voxel gravity by default, seed 0: sample ``s`` draws
its release state from ``SeedSequence(seed, spawn_key=(s,))`` exactly as ``tumble run`` does),
every trajectory run to its end state (settled / escaped / 10 h cap).

What is timed (tumble): ``World.compile`` (packing the batch's tables) + ``World.run`` of the whole
batch, in-process, all numba threads, no store writing; ``--repeat`` timed runs of the same batch,
median reported. *Not* timed: the scene build (the voxel gravity field comes from its on-disk
cache; its build time is printed separately) and numba compilation / cache loading, which a
warm-up run of a 2-sample batch absorbs first (its wall time is printed as "first run").
``--store`` adds one ``ecs.batch.run_batch`` of the same batch into a temporary Zarr store, to
show what writing finals and events costs on top.

The named peer, measured in the same run: :mod:`benchmarks.deploy_reference`, a straightforward
per-trajectory implementation of the same physics on ``scipy.integrate.solve_ivp`` (DOP853 in
flight at the same rtol 1e-10, events for touchdown and escape, ``resolve_impacts`` for each
vertex impact, RK45 contact motion with ``contact_forces_rows`` forces, the engine's settle /
escape / cap criteria), run single-threaded, after one untimed warm-up trajectory (its numba
kernels' compilation), on the first ``--reference-samples`` samples of the
same batch. Reported: median wall time per trajectory of both, their ratio (throughput: tumble's
batch time / samples against the reference's median), status counts and mean settling times of
both — and, sample by sample, the first-impact times (which must agree: both integrate the same
equations from the same state) and the later figures (which may not: bouncing is chaotic).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks._common import RESULTS, machine_info
from benchmarks.deploy_reference import ReferenceProbe, sample_states, single_numba_thread
from components.status import Status

#: Acceptance goals of issue 7.
GOAL_TRAJ_PER_S = 20.0
GOAL_RATIO = 200.0

FINALS = ("probe_first_impact_time", "probe_settle_time", "probe_end_time", "probe_bounces", "probe_collisions")


def _status_counts(codes) -> dict:
    out: dict[str, int] = {}
    for c in np.asarray(codes).ravel():
        name = Status(int(c)).name.lower()
        out[name] = out.get(name, 0) + 1
    return out


def _mean_settle(codes, settle) -> float:
    codes = np.asarray(codes).ravel()
    settle = np.asarray(settle, float).ravel()
    ok = (codes == Status.SETTLED) & np.isfinite(settle)
    return float(settle[ok].mean()) if ok.any() else math.nan


def _overrides(scene, states) -> dict:
    pid = scene.world.entity("probe")
    cols = states[0]["drawn"].keys()
    return {(pid, c): np.stack([s["drawn"][c] for s in states]) for c in cols}


def _run_engine(scene, overrides, n):
    """Compile and run the batch; returns (wall seconds, RunResult, phase timings)."""
    from systems.deployment import DeploymentLoop

    w = scene.world
    t0 = time.perf_counter()
    w.compile(samples=n, overrides=overrides)
    res = w.run(t_end=scene.t_end, dt=scene.dt, final=FINALS)
    wall = time.perf_counter() - t0
    loop = next(s for s in w.systems if isinstance(s, DeploymentLoop))
    return wall, res, dict(loop.timings)


def _json_safe(x):
    """NaN -> null, numpy scalars -> Python numbers (strict JSON)."""
    if isinstance(x, dict):
        return {str(k): _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return None if not math.isfinite(float(x)) else float(x)
    return x


def _fmt(x, spec=".1f"):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="tumble bench deploy", description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=200, help="trajectories in tumble's batch (default 200)")
    ap.add_argument("--reference-samples", type=int, default=10,
                    help="trajectories given to the scipy reference: samples 0..k-1 of the batch (default 10: "
                         "one trajectory takes 0.6-2 s, so a median of 3 moves the ratio by a third)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs of tumble's batch; the median is reported")
    ap.add_argument("--seed", type=int, default=0, help="base seed of the batch (default 0)")
    ap.add_argument("--gravity", default="voxel", choices=("voxel", "polyhedron", "point_mass"),
                    help="deploy-cube's gravity field (default voxel, the scene's default)")
    ap.add_argument("--reference-method", default="DOP853", choices=("DOP853", "RK45"),
                    help="solve_ivp method of the reference's flight phase (default DOP853)")
    ap.add_argument("--threads", type=int, default=None,
                    help="numba threads for tumble's runs (default: all, NUMBA_NUM_THREADS); the reference always "
                         "runs on one")
    ap.add_argument("--store", action="store_true", help="also time one run_batch into a temporary Zarr store")
    ap.add_argument("--out", type=Path, default=None, help="JSON result path (default benchmarks/results/deploy.json)")
    args = ap.parse_args(argv)
    if args.samples < 1 or args.reference_samples < 0 or args.repeat < 1:
        ap.error("--samples and --repeat must be >= 1, --reference-samples >= 0")

    import numba

    from scenes.deploy import build_cube

    if args.threads is not None:
        numba.set_num_threads(max(1, min(args.threads, numba.config.NUMBA_NUM_THREADS)))
    info = machine_info()
    load0 = os.getloadavg()
    print(f"machine: {info.get('cpu_model', info['processor'])}, {info['cpu_count']} cpus, numba threads "
          f"{info['numba_threads']}, load average {load0[0]:.2f} (other processes share these cores)")

    t0 = time.perf_counter()
    scene = build_cube(gravity=args.gravity)
    build_s = time.perf_counter() - t0
    print(f"deploy-cube (gravity={args.gravity}, no rocks) built in {build_s:.1f} s (voxel field from its disk "
          "cache; not timed)")

    n = args.samples
    states = sample_states(scene, range(n), seed=args.seed)
    ov = _overrides(scene, states)

    # warm-up: numba compilation / cache loading of every phase kernel (2 samples, full trajectories)
    k0 = min(2, n)
    first_s, _, _ = _run_engine(scene, {c: v[:k0] for c, v in ov.items()}, k0)
    walls = []
    for _ in range(args.repeat):
        wall, res, timings = _run_engine(scene, ov, n)
        walls.append(wall)
    med = statistics.median(walls)
    per_traj = med / n
    fin = {c: np.asarray(res.finals[c]).reshape(n) for c in FINALS}
    status = np.asarray(res.status).reshape(n)
    print(f"tumble: {n} trajectories, median {med:.2f} s over {args.repeat} runs "
          f"({', '.join(f'{w:.2f}' for w in walls)}) -> {per_traj * 1e3:.1f} ms/trajectory, "
          f"{n / med:.1f} trajectories/s (warm-up run of {k0}, incl. compile: {first_s:.1f} s)")
    tot = sum(timings.values()) or 1.0
    split = ", ".join(f"{k} {v:.2f} s ({100 * v / tot:.0f} %)" for k, v in timings.items())
    print(f"  phase split of the last run (thread-seconds summed over the worker threads): {split}")
    mean_settle = _mean_settle(status, fin["probe_settle_time"])
    print(f"  status {_status_counts(status)}; mean settling time {_fmt(mean_settle)} s;"
          f" mean bounces {fin['probe_bounces'].mean():.1f}; mean first impact "
          f"{np.nanmean(fin['probe_first_impact_time']):.1f} s")

    store_s = None
    if args.store:
        from tumble import run_batch

        tmp = Path(tempfile.mkdtemp(prefix="tumble-bench-deploy-"))
        try:
            t0 = time.perf_counter()
            run_batch(scene, samples=n, out=tmp / "store", seed=args.seed, overwrite=True,
                      command_line="tumble bench deploy --store")
            store_s = time.perf_counter() - t0
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        print(f"  run_batch into a Zarr store: {store_s:.2f} s -> {n / store_s:.1f} trajectories/s")

    # the scipy reference on samples 0..k-1 of the same batch
    k = min(args.reference_samples, n)
    ref_results = []
    if k:
        ref = ReferenceProbe.from_scene(scene, flight_method=args.reference_method)
        with single_numba_thread():
            s = states[0]          # warm-up, untimed: numba compilation / cache loading of its kernels
            ref.run(s["position"], s["velocity"], s["attitude"], s["omega"])
            for s in states[:k]:
                ref_results.append(ref.run(s["position"], s["velocity"], s["attitude"], s["omega"]))
    ref_times = [r.wall_s for r in ref_results]
    ref_med = statistics.median(ref_times) if ref_times else math.nan
    ratio = ref_med / per_traj if ref_times else math.nan
    if k:
        rst = np.array([r.status for r in ref_results])
        rset = np.array([r.settle_time for r in ref_results])
        print(f"scipy reference (solve_ivp {args.reference_method} flight / RK45 contact, one trajectory at a time): "
              f"{k} trajectories, median {ref_med:.2f} s/trajectory ({', '.join(f'{t:.2f}' for t in ref_times)})")
        print(f"  status {_status_counts(rst)}; mean settling time {_fmt(_mean_settle(rst, rset))} s "
              f"(tumble on the same {k} samples: status {_status_counts(status[:k])}, mean settling time "
              f"{_fmt(_mean_settle(status[:k], fin['probe_settle_time'][:k]))} s)")
        print("  sample  first impact tumble / reference [s]      Δ [s]   bounces t/r   settle t/r [s]")
        for s, r in enumerate(ref_results):
            ft, fr = fin["probe_first_impact_time"][s], r.first_impact_time
            print(f"  {s:6d}  {ft:15.6f} / {fr:15.6f}  {fr - ft:9.2e}   {fin['probe_bounces'][s]:4d} /{r.bounces:4d}"
                  f"   {_fmt(fin['probe_settle_time'][s], '7.0f')} / {_fmt(r.settle_time, '.0f')}")
        print("  (first impacts agree to a few 1e-6 s: the engine's event tolerance 1e-6 s plus the rtol-1e-10 "
              "integration error, which steps across the voxel field's C0 cell faces raise (the engine ends its "
              "steps on them, the reference does not); after the first bounce the trajectories are chaotic and "
              "differ sample by sample, not in distribution)")
    print(f"ratio (reference time per trajectory / tumble's): {_fmt(ratio, ',.0f')}x")
    print(f"goals: >= {GOAL_TRAJ_PER_S:.0f} trajectories/s: {'met' if n / med >= GOAL_TRAJ_PER_S else 'NOT met'}; "
          f">= {GOAL_RATIO:.0f}x the reference: "
          f"{'met' if ratio >= GOAL_RATIO else ('NOT met' if ref_times else 'not measured')}")

    payload = {
        "scene": "deploy-cube", "gravity": args.gravity, "rocks": False, "seed": args.seed, "samples": n,
        "timing": "World.compile + World.run of the batch (no store), median of repeats after a warm-up run; "
                  "scene build (cached voxel field) and numba compilation excluded",
        "repeat": args.repeat, "wall_s": walls, "median_s": med, "s_per_trajectory": per_traj,
        "trajectories_per_s": n / med, "warmup_s": first_s, "scene_build_s": build_s,
        "phase_timings_s": timings, "load_average": list(load0),
        "status_counts": _status_counts(status), "mean_settle_time_s": _mean_settle(status, fin["probe_settle_time"]),
        "mean_bounces": float(fin["probe_bounces"].mean()),
        "store_run_batch_s": store_s,
        "peer": f"benchmarks/deploy_reference.py: scipy solve_ivp ({args.reference_method} flight rtol 1e-10, RK45 "
                "contact), one trajectory at a time, one numba thread for the numpy APIs",
        "reference_samples": k, "reference_s_per_trajectory": ref_times, "reference_median_s": ref_med,
        "reference_status_counts": _status_counts([r.status for r in ref_results]) if k else {},
        "reference_mean_settle_time_s": _mean_settle([r.status for r in ref_results],
                                                     [r.settle_time for r in ref_results]) if k else math.nan,
        "reference_rhs_calls": [r.rhs_calls for r in ref_results],
        "reference_forced_steps": [r.forced_steps for r in ref_results],
        "per_sample": [{"sample": s, "tumble_first_impact_s": float(fin["probe_first_impact_time"][s]),
                        "reference_first_impact_s": r.first_impact_time,
                        "tumble_status": int(status[s]), "reference_status": r.status,
                        "tumble_settle_s": float(fin["probe_settle_time"][s]), "reference_settle_s": r.settle_time,
                        "tumble_bounces": int(fin["probe_bounces"][s]), "reference_bounces": r.bounces}
                       for s, r in enumerate(ref_results)],
        "ratio_reference_over_tumble_per_trajectory": ratio,
        "goals": {"trajectories_per_s": GOAL_TRAJ_PER_S, "ratio": GOAL_RATIO},
    }
    path = args.out or RESULTS / "deploy.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_json_safe({"machine": info, **payload}), indent=2))
    print(f"saved {path}")
    return payload


if __name__ == "__main__":  # pragma: no cover
    main()
