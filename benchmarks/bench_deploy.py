"""``tumble bench deploy``: full deployment trajectories per second (``deploy-cube``, no rocks).

Issue 7's acceptance figure, measured as issue 15 asks (interleaved, mean against mean, per
machine and per core, with the machine's load recorded). The batch: ``--samples`` samples of
``deploy-cube`` (5 kg cube released 200 m over the Itokawa-like body, voxel gravity by default,
seed 0: sample ``s`` draws its release state from ``SeedSequence(seed, spawn_key=(s,))`` exactly
as ``tumble run`` does), every trajectory run to its end state (settled / escaped / 10 h cap).

What is timed
-------------
*tumble* (in this process): ``World.compile`` (packing the batch's tables) + ``World.run`` of the
whole batch, all numba threads (or ``--threads``), no store writing: wall time by
``time.perf_counter`` around those two calls (the process's CPU time, ``time.process_time``, is
taken alongside). *Not* timed: the scene build (the voxel gravity field comes from its on-disk
cache; its build time is printed separately) and numba compilation / cache loading, which an
untimed warm-up run of a 2-sample batch absorbs first (printed as "warm-up").

*the reference* (in this process, one numba thread): :mod:`benchmarks.deploy_reference`, a
straightforward per-trajectory implementation of the same physics on
``scipy.integrate.solve_ivp`` (DOP853 in flight at the same rtol 1e-10, events for touchdown and
escape, ``resolve_impacts`` for each vertex impact, RK45 contact motion with
``contact_forces_rows`` forces, the engine's settle / escape / cap criteria). One *block* runs
samples ``0..k-1`` of the same batch (``k = --reference-samples``) one after the other, each
timed by ``ReferenceProbe.run`` (wall time of the whole trajectory); one untimed warm-up
trajectory (its numba kernels' compilation / cache loading) comes first.

Interleaving: ``--repeat`` pairs, each one timed tumble batch run followed by one reference
block (A B A B ...), so that drift of the shared machine (other processes move wall times by
±30 % on a 2-core box) hits both alike. ``os.getloadavg()`` is printed and stored before the
pairs, after every pair and at the end, with :func:`benchmarks._common.machine_info`.

Reported (and stored in ``bench-results/deploy.json`` or ``--out``):

* tumble s/trajectory of each run = run wall / samples; reference s/trajectory of each block =
  block wall / k; the mean of each over its runs, and the **ratio of the means** (reference mean /
  tumble mean: how many times less wall time tumble takes per trajectory); the ratio of each pair
  and the **median of the per-pair ratios**.
* throughput **per machine** = 1 / mean s/trajectory (tumble on its threads; the reference as it
  runs, on one thread) and **per core** = per machine / cores used (tumble: min(numba threads,
  samples, cpus available to the process); the reference: 1, so its per-core figure is its
  per-machine one), and the ratio per core. Under load a thread may get less than a whole core,
  so per-core figures from wall time are lower bounds; the CPU-time figures (process CPU
  seconds per trajectory, all threads) show how far.
* status counts and mean settling times of both, and, sample by sample, the first-impact times
  (which must agree: both integrate the same equations from the same state) and the later
  figures (which may not: bouncing is chaotic).

``--store`` adds one ``run_batch`` of the same batch into a temporary Zarr store (after the
pairs, not interleaved), to show what writing finals and events costs on top.

``--against COMMIT``: the same batch (same scene, gravity, seed, samples, threads) on another
commit of this repository, in the same run. The commit is checked out with ``git worktree add
--detach`` into a temporary folder (removed afterwards). Every timed batch of either tree - the
current working tree (uncommitted changes included) and the commit's - runs in a fresh
``python -c`` subprocess with ``PYTHONPATH`` and the working directory set to that tree (the
subprocess checks that it imported that tree's ``ecs``). The subprocess (``_DRIVER``, which uses
only what both trees have: ``scenes.registry.load_scene``, the scene's ``dispersions`` /
``world`` / ``t_end`` / ``dt``, ``World.entity`` / ``compile`` / ``run``) builds deploy-cube,
draws the batch's inputs by the batch rule above, runs an untimed 2-sample warm-up, then times
``World.compile`` + ``World.run`` of the batch and prints its wall time, CPU time, status and
finals as JSON. The parent interleaves them, current then commit, for max(3, ``--repeat``) pairs,
and reports each tree's mean s/trajectory, the ratio of the means and the median of the
per-pair ratios (ratio = the commit's time / the current tree's: above 1 the current tree is
faster; target >= 0.95, printed as pass/fail, with a note when the pairs straddle it; the
ratio of the subprocesses' CPU times is printed beside it), checks that both trees drew
identical inputs (a hash of the override arrays) and says whether their status counts agree.
The commit's first
subprocess compiles every numba kernel (a fresh worktree has no numba cache: minutes on a 2-core
machine; inside its untimed warm-up); the in-process tumble runs above are measured too, so the
current tree has an in-process and a subprocess figure (they differ by the machine's drift only).

``--backend gpu`` (issue 17): the same batch on the GPU backend and on the CPU backend (all numba
threads) of the current tree, in interleaved pairs of fresh subprocesses (GPU, CPU, GPU, ...;
``--repeat`` pairs), each timed as above (``World.compile`` + ``World.run`` after an untimed
2-sample warm-up; the GPU run ends with ``cuda.synchronize()``). Reported: trajectories/s of
both, the ratio per pair (CPU time / GPU time), its median and the ratio of the means; the
device's memory (the CuPy pool's high-water mark, i.e. what tumble's arrays took, and the device's
memory in use after the run); kernel launches per trajectory (``ModeLoop.launch_count``); and
whether the two backends agree in distribution on the same inputs: each status count and the
mean settling time within 3 standard errors, plus the largest first-impact difference (the
backends round differently, docs/design.md §8.5). Goal: >= 20,000 trajectories/s on one H100.
No reference and no ``--against`` in this mode. Stored in ``bench-results/deploy_gpu.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks._common import json_safe, machine_info, save
from benchmarks.deploy_reference import ReferenceProbe, sample_states, single_numba_thread
from components.status import Status

#: Acceptance goals of issue 7.
GOAL_TRAJ_PER_S = 20.0
GOAL_RATIO = 200.0
#: ``--against``: the current tree must keep at least this fraction of the commit's throughput.
GOAL_AGAINST = 0.95

FINALS = ("probe_first_impact_time", "probe_settle_time", "probe_end_time", "probe_bounces", "probe_collisions")

#: Marker of the JSON line the ``--against`` subprocess prints.
_MARK = "TUMBLE_BENCH_DEPLOY_RESULT "

#: The ``--against`` subprocess: run with ``python -c _DRIVER ARGS_JSON``, ``PYTHONPATH`` and cwd
#: set to one tree. Only APIs present in every tree it is meant for (checked against 348680a).
_DRIVER = r'''
import hashlib, json, os, sys, time
a = json.loads(sys.argv[1])
t_import = time.perf_counter()
import numpy as np
import numba
import ecs
try:
    from scenes.registry import load_scene
except ImportError:
    load_scene = None
t0 = time.perf_counter()
if load_scene is not None:
    scene = load_scene("deploy-cube", gravity=a["gravity"])
else:
    from scenes.deploy import build_cube
    scene = build_cube(gravity=a["gravity"])
build_s = time.perf_counter() - t0
w = scene.world
n, seed = int(a["samples"]), int(a["seed"])
# the batch rule: sample s draws the scene's dispersions, in declaration order, from
# default_rng(SeedSequence(seed, spawn_key=(s,)))
draws = [[] for _ in scene.dispersions]
for s in range(n):
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(s,)))
    for i, d in enumerate(scene.dispersions):
        draws[i].append(np.asarray(d.draw(rng), float))
ov, h = {}, hashlib.sha256()
for d, v in zip(scene.dispersions, draws):
    if getattr(d, "derive", None):
        raise SystemExit("dispersion of %s derives other columns: this driver does not" % d.column)
    eid = w.entity(d.entity) if isinstance(d.entity, str) else int(d.entity)
    ov[(eid, d.column)] = np.stack(v)
    h.update(np.ascontiguousarray(ov[(eid, d.column)]).tobytes())   # values only: columns were renamed
                                                                     # (probe_* -> body_*) between trees
final = tuple(a["finals"])

import inspect
streams = bool(a.get("active")) and "active" in inspect.signature(w.compile).parameters

backend = a.get("backend", "cpu")
kw = {"backend": backend} if backend != "cpu" else {}      # older trees: no backend argument needed

def sync():
    if backend == "gpu" and os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        from numba import cuda
        cuda.synchronize()

def once(k):
    o = {c: x[:k] for c, x in ov.items()}
    c0, p0 = time.perf_counter(), time.process_time()
    w.compile(samples=k, overrides=o, **kw, **({"active": int(a["active"])} if streams else {}))
    r = w.run(t_end=scene.t_end, dt=scene.dt, final=final)
    sync()
    return time.perf_counter() - c0, time.process_time() - p0, r

warm_s, _, _ = once(min(2, n))       # untimed: numba compilation / cache loading
wall, cpu, r = once(n)               # timed: World.compile + World.run of the batch
launches = None
timings = None
for s in w.systems:
    if hasattr(s, "launch_count") and backend == "gpu":
        launches = dict(s.launch_count)
        timings = dict(getattr(s, "timings", {}))
device = {}
if backend == "gpu" and os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
    import cupy
    from numba import cuda
    pool = cupy.get_default_memory_pool()
    free, total = cuda.current_context().get_memory_info()
    device = {"pool_high_water_bytes": int(pool.total_bytes()), "pool_used_bytes": int(pool.used_bytes()),
              "device_used_bytes": int(total - free), "device_total_bytes": int(total),
              "device_name": str(cuda.get_current_device().name)}
status = [int(c) for c in np.asarray(r.status).reshape(n)]
try:
    from components.status import Status
    names = {c: Status(c).name.lower() for c in set(status)}
except Exception:
    names = {c: str(c) for c in set(status)}
counts = {}
for c in status:
    counts[names[c]] = counts.get(names[c], 0) + 1
finals = {c: np.asarray(r.finals[c], float).reshape(n, -1)[:, 0].tolist() for c in final if c in r.finals}
print(__MARK__ + json.dumps({
    "wall_s": wall, "cpu_s": cpu, "warmup_s": warm_s, "scene_build_s": build_s,
    "import_s": t0 - t_import, "samples": n, "seed": seed, "numba_threads": numba.get_num_threads(),
    "ecs_file": os.path.abspath(ecs.__file__), "inputs_sha256": h.hexdigest(), "streams": streams,
    "backend": backend, "launches": launches, "mode_timings_s": timings, "device": device,
    "status": status, "status_counts": counts, "finals": finals}))
'''.replace("__MARK__", repr(_MARK))


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


def _run_engine(scene, overrides, n, active=None):
    """Compile and run the batch (``active``: streaming slots); returns (wall seconds, process CPU
    seconds, RunResult, phase timings, step attempts and collisions per phase)."""
    from systems.deployment.loop import DeploymentLoop

    w = scene.world
    t0, c0 = time.perf_counter(), time.process_time()
    w.compile(samples=n, overrides=overrides, active=active)
    res = w.run(t_end=scene.t_end, dt=scene.dt, final=FINALS)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    loop = next(s for s in w.systems if isinstance(s, DeploymentLoop))
    return wall, cpu, res, dict(loop.timings), _phase_steps(loop, res, n)


def _phase_steps(loop, res, n) -> dict:
    """Step attempts (accepted and rejected) of the fly and contact phases and collisions resolved,
    summed over the batch (the work rows' counters, systems.deployment.physics.FLY_ATTEMPTS; with a
    streaming active set a reused row's earlier samples are not counted, so ``None``)."""
    from ecs.kernels import to_host
    from systems.deployment.physics import CONTACT_ATTEMPTS, FLY_ATTEMPTS

    work = to_host(loop.ctx.work)
    if work.shape[0] < n:
        return {}
    return {"fly": int(work[:, FLY_ATTEMPTS].sum()), "contact": int(work[:, CONTACT_ATTEMPTS].sum()),
            "collide": int(np.asarray(res.finals["probe_collisions"]).sum())}


def _run_reference_block(ref, states):
    """One reference block: the given states one after the other, one numba thread.

    Returns (results, block wall seconds = sum of the trajectories' own wall times, process CPU seconds)."""
    c0 = time.process_time()
    with single_numba_thread():
        results = [ref.run(s["position"], s["velocity"], s["attitude"], s["omega"]) for s in states]
    return results, sum(r.wall_s for r in results), time.process_time() - c0


def _fmt(x, spec=".1f"):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def _load() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


def _load_str(la) -> str:
    return "/".join(f"{v:.2f}" for v in la)


def _mean(xs) -> float:
    return statistics.fmean(xs) if xs else math.nan


def _median(xs) -> float:
    return statistics.median(xs) if xs else math.nan


def _spread(xs, scale: float = 1.0, unit: str = "s") -> str:
    """``, range min-max unit (±half the range as % of the mean)`` of a list of timings [s]."""
    if len(xs) < 2:
        return ""
    m = statistics.fmean(xs)
    return (f", range {min(xs) * scale:.3g}-{max(xs) * scale:.3g} {unit} (±{50 * (max(xs) - min(xs)) / m:.0f} %)"
            if m else "")


# ---------------------------------------------------------------------------------------- --against
def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def _run_tree(tree: Path, job: dict, threads: int | None) -> dict:
    """One timed batch of ``tree`` in a fresh subprocess (:data:`_DRIVER`); returns its JSON result
    plus ``process_s`` (the subprocess's whole wall time: interpreter start, imports, build, warm-up)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tree)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    if threads is not None:
        env["NUMBA_NUM_THREADS"] = str(threads)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", _DRIVER, json.dumps(job)], cwd=tree, env=env, capture_output=True,
                       text=True)
    process_s = time.perf_counter() - t0
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith(_MARK)]
    if p.returncode or not lines:
        tail = "\n".join((p.stderr or p.stdout).strip().splitlines()[-15:])
        raise RuntimeError(f"the benchmark subprocess in {tree} failed (exit {p.returncode}):\n{tail}")
    out = json.loads(lines[-1][len(_MARK):])
    if not Path(out["ecs_file"]).resolve().is_relative_to(tree.resolve()):
        raise RuntimeError(f"the subprocess for {tree} imported ecs from {out['ecs_file']} (not that tree)")
    out["process_s"] = process_s
    return out


def _resolve_commit(current: Path, commit: str) -> str:
    """Full hash of ``commit`` in the repository of ``current``, or an :class:`~ecs.errors.InputError`."""
    from ecs.errors import InputError

    try:
        return _git(current, "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}")
    except (subprocess.CalledProcessError, OSError):
        raise InputError("--against", commit, f"must name a commit of the git repository at {current}") from None


def _against(args, current: Path, sha: str, threads: int | None) -> dict:
    """``--against COMMIT``: the batch on the current tree and on COMMIT, interleaved in subprocesses."""
    head = _git(current, "rev-parse", "HEAD")
    dirty = bool(_git(current, "status", "--porcelain", "--untracked-files=no"))
    cur_name = f"current tree ({head[:9]}{' + uncommitted changes' if dirty else ''})"
    old_name = f"{args.against} ({sha[:9]})"
    pairs = max(3, args.repeat)
    job = {"samples": args.samples, "seed": args.seed, "gravity": args.gravity, "finals": list(FINALS),
           "active": args.active}
    print(f"\n--against {args.against}: deploy-cube batch of {args.samples} (seed {args.seed}, gravity "
          f"{args.gravity}) on the {cur_name} and on {old_name}, each timed batch in a fresh subprocess "
          f"(World.compile + World.run after an untimed 2-sample warm-up), {pairs} interleaved pairs")
    tmp = Path(tempfile.mkdtemp(prefix="tumble-bench-against-"))
    tree = tmp / f"tree-{sha[:12]}"
    cur_runs: list[dict] = []
    old_runs: list[dict] = []
    loads = [_load()]
    print(f"  load average before: {_load_str(loads[0])}")
    try:
        _git(current, "worktree", "add", "--detach", "--quiet", str(tree), sha)
        for i in range(pairs):
            a = _run_tree(current, job, threads)
            b = _run_tree(tree, job, threads)
            cur_runs.append(a)
            old_runs.append(b)
            loads.append(_load())
            print(f"  pair {i + 1}: current {a['wall_s']:.3f} s, {args.against} {b['wall_s']:.3f} s -> ratio "
                  f"{b['wall_s'] / a['wall_s']:.3f}  (warm-ups {a['warmup_s']:.1f} / {b['warmup_s']:.1f} s, "
                  f"subprocesses {a['process_s']:.0f} / {b['process_s']:.0f} s); load average "
                  f"{_load_str(loads[-1])}")
    finally:
        try:
            _git(current, "worktree", "remove", "--force", str(tree))
        except subprocess.CalledProcessError as exc:
            if tree.exists():
                print(f"  warning: could not remove the worktree {tree} ({exc.stderr.strip()}); "
                      f"remove it with: git worktree remove --force {tree}")
        shutil.rmtree(tmp, ignore_errors=True)
    n = args.samples
    if args.active:
        print(f"  --active {args.active}: the current tree {'streams' if cur_runs[0].get('streams') else 'does not stream'}"
              f", {args.against} {'streams' if old_runs[0].get('streams') else 'runs every sample in its tables'}")
    ta = [r["wall_s"] / n for r in cur_runs]
    tb = [r["wall_s"] / n for r in old_runs]
    pair_ratios = [b / a for a, b in zip(ta, tb)]
    mean_ratio = _mean(tb) / _mean(ta)
    med_ratio = _median(pair_ratios)
    thr = cur_runs[0]["numba_threads"]
    print(f"  current: mean {_mean(ta) * 1e3:.2f} ms/trajectory over {pairs} runs{_spread(ta, 1e3, 'ms')} -> "
          f"{1 / _mean(ta):.1f} trajectories/s on {thr} threads")
    print(f"  {args.against}: mean {_mean(tb) * 1e3:.2f} ms/trajectory over {pairs} runs{_spread(tb, 1e3, 'ms')} -> "
          f"{1 / _mean(tb):.1f} trajectories/s on {old_runs[0]['numba_threads']} threads")
    print(f"  ratio ({args.against}'s time / the current tree's; > 1: the current tree is faster): "
          f"per pair {', '.join(f'{r:.3f}' for r in pair_ratios)}; median {med_ratio:.3f}; mean vs mean "
          f"{mean_ratio:.3f}")
    cpu_ratios = [b["cpu_s"] / a["cpu_s"] for a, b in zip(cur_runs, old_runs)]
    print(f"  process CPU time ratio (all threads; waiting for a core does not count): per pair "
          f"{', '.join(f'{r:.3f}' for r in cpu_ratios)}; median {_median(cpu_ratios):.3f}")
    straddle = min(pair_ratios) < GOAL_AGAINST <= max(pair_ratios)
    print(f"  target >= {GOAL_AGAINST}: median of pairs {'PASS' if med_ratio >= GOAL_AGAINST else 'FAIL'}, "
          f"mean vs mean {'PASS' if mean_ratio >= GOAL_AGAINST else 'FAIL'}"
          + (" (the pairs straddle the target: more pairs, a larger batch or a quieter machine would settle it)"
             if straddle else ""))
    # do both trees compute the same thing?
    same_inputs = len({r["inputs_sha256"] for r in cur_runs + old_runs}) == 1
    counts_a, counts_b = cur_runs[0]["status_counts"], old_runs[0]["status_counts"]
    stable = all(r["status"] == cur_runs[0]["status"] for r in cur_runs) and \
        all(r["status"] == old_runs[0]["status"] for r in old_runs)
    same_counts = counts_a == counts_b
    differ = sum(x != y for x, y in zip(cur_runs[0]["status"], old_runs[0]["status"]))
    fa = np.array(cur_runs[0]["finals"].get("probe_first_impact_time", []), float)
    fb = np.array(old_runs[0]["finals"].get("probe_first_impact_time", []), float)
    d_first = float(np.nanmax(np.abs(fa - fb))) if fa.size and fa.shape == fb.shape and \
        np.isfinite(fa - fb).any() else math.nan
    print(f"  same inputs (hash of the drawn override arrays): {'yes' if same_inputs else 'NO'}; status counts: "
          f"current {counts_a}, {args.against} {counts_b} -> {'agree' if same_counts else 'DIFFER'} "
          f"({differ} of {n} samples end in a different status; runs of each tree "
          f"{'identical' if stable else 'NOT identical'}); largest first-impact difference {_fmt(d_first, '.2e')} s")
    return {
        "commit": args.against, "commit_sha": sha, "current_head": head, "current_dirty": dirty, "pairs": pairs,
        "timing": "each batch in a fresh subprocess (PYTHONPATH and cwd = its tree): World.compile + World.run of "
                  "the batch after an untimed 2-sample warm-up; order current, commit, current, commit, ...",
        "current_wall_s": [r["wall_s"] for r in cur_runs], "against_wall_s": [r["wall_s"] for r in old_runs],
        "current_cpu_s": [r["cpu_s"] for r in cur_runs], "against_cpu_s": [r["cpu_s"] for r in old_runs],
        "current_warmup_s": [r["warmup_s"] for r in cur_runs], "against_warmup_s": [r["warmup_s"] for r in old_runs],
        "current_process_s": [r["process_s"] for r in cur_runs],
        "against_process_s": [r["process_s"] for r in old_runs],
        "current_s_per_trajectory_mean": _mean(ta), "against_s_per_trajectory_mean": _mean(tb),
        "numba_threads": thr,
        "ratio_definition": "against's s/trajectory / current's (> 1: the current tree is faster)",
        "pair_ratios": pair_ratios, "median_pair_ratio": med_ratio, "ratio_of_means": mean_ratio,
        "cpu_pair_ratios": cpu_ratios, "pairs_straddle_goal": straddle,
        "goal": GOAL_AGAINST, "pass_median": med_ratio >= GOAL_AGAINST, "pass_mean": mean_ratio >= GOAL_AGAINST,
        "load_average": {"before": loads[0], "after_each_pair": loads[1:]},
        "same_inputs": same_inputs, "status_counts_current": counts_a, "status_counts_against": counts_b,
        "status_counts_agree": same_counts, "samples_with_different_status": differ,
        "runs_identical_within_each_tree": stable, "max_first_impact_difference_s": d_first,
    }


# ---------------------------------------------------------------------------------------- --backend gpu
#: Issue 17's throughput goal on one H100 (1,000x the seed's 20 trajectories/s on a GTX 1080 Ti).
GOAL_GPU_TRAJ_PER_S = 20_000.0


def _agreement(gpu: dict, cpu: dict, n: int) -> dict:
    """Do the two backends' batches agree within sampling error? Same inputs on both, so the
    samples are paired; the backends differ in rounding (FMA contraction, libdevice against libm:
    docs/design.md §2), which chaotic bouncing amplifies, so single samples may differ while the
    statistics must not. Status: each status's count differs by at most 3 standard errors of a
    difference of two binomial counts, ``3 sqrt(2 n p (1 - p))`` (p pooled). Settling time: the
    means of the settled samples differ by at most 3 combined standard errors."""
    out: dict = {"status": {}, "ok": True}
    sa, sb = np.asarray(gpu["status"]), np.asarray(cpu["status"])
    for code in sorted(set(sa.tolist()) | set(sb.tolist())):
        ca, cb = int((sa == code).sum()), int((sb == code).sum())
        p = (ca + cb) / (2.0 * n)
        tol = 3.0 * math.sqrt(2.0 * n * p * (1.0 - p))
        ok = abs(ca - cb) <= max(tol, 1.0)
        out["status"][Status(code).name.lower()] = {"gpu": ca, "cpu": cb, "tolerance": tol, "ok": ok}
        out["ok"] &= ok
    ta = np.asarray(gpu["finals"].get("probe_settle_time", []), float)
    tb = np.asarray(cpu["finals"].get("probe_settle_time", []), float)
    ta, tb = ta[(sa == Status.SETTLED) & np.isfinite(ta)], tb[(sb == Status.SETTLED) & np.isfinite(tb)]
    if len(ta) > 1 and len(tb) > 1:
        se = math.sqrt(ta.var(ddof=1) / len(ta) + tb.var(ddof=1) / len(tb))
        d = float(ta.mean() - tb.mean())
        ok = abs(d) <= 3.0 * se
        out["settle_time"] = {"gpu_mean_s": float(ta.mean()), "cpu_mean_s": float(tb.mean()), "difference_s": d,
                              "standard_error_s": se, "ok": ok}
        out["ok"] &= ok
    fa = np.asarray(gpu["finals"].get("probe_first_impact_time", []), float)
    fb = np.asarray(cpu["finals"].get("probe_first_impact_time", []), float)
    both = np.isfinite(fa) & np.isfinite(fb) if fa.shape == fb.shape else np.zeros(0, bool)
    out["max_first_impact_difference_s"] = float(np.abs(fa - fb)[both].max()) if both.any() else math.nan
    out["samples_with_different_status"] = int((sa != sb).sum())
    return out


def _backends(args, current: Path, threads: int | None) -> dict:
    """``--backend gpu``: the batch on the GPU backend and on the CPU backend (all cores), same tree,
    same inputs, interleaved pairs of fresh subprocesses (GPU, CPU, GPU, CPU, ...)."""
    pairs = max(1, args.repeat)
    job = {"samples": args.samples, "seed": args.seed, "gravity": args.gravity, "finals": list(FINALS),
           "active": None}
    print(f"\n--backend gpu: deploy-cube batch of {args.samples} (seed {args.seed}, gravity {args.gravity}) on the "
          f"GPU backend and on the CPU backend, each timed batch (World.compile + World.run, after an untimed "
          f"2-sample warm-up) in a fresh subprocess, {pairs} interleaved pairs")
    gpu_runs: list[dict] = []
    cpu_runs: list[dict] = []
    for i in range(pairs):
        g = _run_tree(current, dict(job, backend="gpu"), threads)
        c = _run_tree(current, dict(job, backend="cpu"), threads)
        gpu_runs.append(g)
        cpu_runs.append(c)
        print(f"  pair {i + 1}: gpu {g['wall_s']:.3f} s, cpu {c['wall_s']:.3f} s ({c['numba_threads']} threads) -> "
              f"ratio {c['wall_s'] / g['wall_s']:.2f}; load average {_load_str(_load())}")
    n = args.samples
    tg = [r["wall_s"] / n for r in gpu_runs]
    tc = [r["wall_s"] / n for r in cpu_runs]
    pair_ratios = [c / g for g, c in zip(tg, tc)]
    tps = 1.0 / _mean(tg)
    print(f"  gpu: {tps:,.1f} trajectories/s (mean over {pairs} runs{_spread(tg, 1e6, 'us')}); cpu: "
          f"{1 / _mean(tc):,.1f} trajectories/s on {cpu_runs[0]['numba_threads']} threads")
    print(f"  ratio (cpu time / gpu time): per pair {', '.join(f'{r:.2f}' for r in pair_ratios)}; median "
          f"{_median(pair_ratios):.2f}; mean vs mean {_mean(tc) / _mean(tg):.2f}")
    dev = max((r.get("device") or {} for r in gpu_runs), key=lambda d: d.get("pool_high_water_bytes", 0))
    if dev:
        print(f"  device {dev['device_name']}: tumble's arrays peaked at {dev['pool_high_water_bytes'] / 2**20:,.0f} MiB "
              f"(CuPy pool high-water mark); {dev['device_used_bytes'] / 2**20:,.0f} MiB of "
              f"{dev['device_total_bytes'] / 2**20:,.0f} MiB in use after the run (context and numba's included)")
    launches = gpu_runs[-1].get("launches") or {}
    per_traj = sum(launches.values()) / n if launches else math.nan
    print(f"  kernel launches of the last gpu run: {sum(launches.values()):,} ({per_traj:.3f} per trajectory; "
          f"by mode {launches})")
    if gpu_runs[-1].get("mode_timings_s") and any(gpu_runs[-1]["mode_timings_s"].values()):
        print(f"  device time by mode (TUMBLE_GPU_TIMING=1, synchronised): "
              f"{ {k: round(v, 3) for k, v in gpu_runs[-1]['mode_timings_s'].items()} }")
    agree = _agreement(gpu_runs[-1], cpu_runs[-1], n)
    print(f"  statistics (paired samples, 3 standard errors): status {agree['status']}; settling time "
          f"{agree.get('settle_time')}; {agree['samples_with_different_status']} samples end in a different status; "
          f"largest first-impact difference {_fmt(agree['max_first_impact_difference_s'], '.2e')} s -> "
          f"{'AGREE' if agree['ok'] else 'DIFFER'}")
    print(f"  goal >= {GOAL_GPU_TRAJ_PER_S:,.0f} trajectories/s: {'PASS' if tps >= GOAL_GPU_TRAJ_PER_S else 'FAIL'}")
    return {"pairs": pairs, "gpu_wall_s": [r["wall_s"] for r in gpu_runs], "cpu_wall_s": [r["wall_s"] for r in cpu_runs],
            "gpu_warmup_s": [r["warmup_s"] for r in gpu_runs], "cpu_threads": cpu_runs[0]["numba_threads"],
            "gpu_trajectories_per_s": tps, "cpu_trajectories_per_s": 1.0 / _mean(tc),
            "ratio_definition": "cpu s/trajectory / gpu s/trajectory", "pair_ratios": pair_ratios,
            "median_pair_ratio": _median(pair_ratios), "ratio_of_means": _mean(tc) / _mean(tg), "device": dev,
            "launches": launches, "launches_per_trajectory": per_traj, "agreement": agree,
            "mode_timings_s": gpu_runs[-1].get("mode_timings_s"),
            "goal_trajectories_per_s": GOAL_GPU_TRAJ_PER_S, "pass": tps >= GOAL_GPU_TRAJ_PER_S}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="tumble bench deploy", description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=2000,
                    help="trajectories in tumble's batch (default 2000: with fewer, the batch's tail, a few long "
                         "contact rows on one thread, is a visible share of the time)")
    ap.add_argument("--reference-samples", type=int, default=10,
                    help="trajectories in one reference block: samples 0..k-1 of the batch (default 10: one "
                         "trajectory takes 0.6-2 s); 0 skips the reference")
    ap.add_argument("--repeat", type=int, default=3,
                    help="interleaved pairs (one tumble batch run, then one reference block) (default 3); with "
                         "--against, max(3, this) pairs of subprocess runs")
    ap.add_argument("--seed", type=int, default=0, help="base seed of the batch (default 0)")
    ap.add_argument("--gravity", default="voxel", choices=("voxel", "polyhedron", "point_mass"),
                    help="deploy-cube's gravity field (default voxel, the scene's default)")
    ap.add_argument("--reference-method", default="DOP853", choices=("DOP853", "RK45"),
                    help="solve_ivp method of the reference's flight phase (default DOP853)")
    ap.add_argument("--threads", type=int, default=None,
                    help="numba threads for tumble's runs (default: all, NUMBA_NUM_THREADS); the reference always "
                         "runs on one")
    ap.add_argument("--active", type=int, default=None,
                    help="streaming active set: sample slots of tumble's batch (World.compile(active=...); default: "
                         "every sample in the tables). With --against, a commit without streaming runs its whole "
                         "batch in its tables")
    ap.add_argument("--store", action="store_true", help="also time one run_batch into a temporary Zarr store")
    ap.add_argument("--against", metavar="COMMIT", default=None,
                    help="also time the same batch on COMMIT of this repository (a temporary git worktree), "
                         "interleaved with the current tree, each batch in a fresh subprocess")
    ap.add_argument("--backend", default="cpu", choices=("cpu", "gpu"),
                    help="gpu: time the batch on the GPU backend against the CPU backend (all cores) of this tree, "
                         "interleaved subprocess pairs, with device memory, kernel launches and the statistics of "
                         "both (no reference, no --against)")
    ap.add_argument("--out", type=Path, default=None, help="JSON result path (default bench-results/deploy.json)")
    args = ap.parse_args(argv)
    if args.samples < 1 or args.reference_samples < 0 or args.repeat < 1:
        ap.error("--samples and --repeat must be >= 1, --reference-samples >= 0")

    repo = Path(__file__).resolve().parents[1]
    if args.backend == "gpu":
        from ecs.kernels import gpu_backend_error

        why = gpu_backend_error()
        if why:
            ap.error(why)
        info = machine_info()
        print(f"machine: {info.get('cpu_model', info['processor'])}, {info['cpu_count']} cpus, numba {info['numba']}, "
              f"numpy {info['numpy']}, python {info['python']}, {info['platform']}")
        result = _backends(args, repo, args.threads)
        payload = {"scene": "deploy-cube", "gravity": args.gravity, "rocks": False, "seed": args.seed,
                   "samples": args.samples, "backend": "gpu", **result}
        path = save("deploy_gpu", json_safe(payload), path=args.out, machine=info)
        print(f"saved {path}")
        return payload
    against_sha = _resolve_commit(repo, args.against) if args.against else None   # fail before the long part

    import numba

    from scenes.deploy import build_cube

    threads = None
    if args.threads is not None:
        threads = max(1, min(args.threads, numba.config.NUMBA_NUM_THREADS))
        numba.set_num_threads(threads)
    info = machine_info()
    load_before = _load()
    print(f"machine: {info.get('cpu_model', info['processor'])}, {info['cpu_count']} cpus "
          f"({info['cpus_available']} available to this process), numba {info['numba']} threads "
          f"{info['numba_threads']} ({info.get('numba_threading_layer', '?')}), numpy {info['numpy']}, python "
          f"{info['python']}, {info['platform']}")
    print(f"load average (1/5/15 min) before: {_load_str(load_before)} (other processes share these cores)")

    t0 = time.perf_counter()
    scene = build_cube(gravity=args.gravity)
    build_s = time.perf_counter() - t0
    print(f"deploy-cube (gravity={args.gravity}, no rocks) built in {build_s:.1f} s (voxel field from its disk "
          "cache; not timed)")

    n = args.samples
    k = min(args.reference_samples, n)
    states = sample_states(scene, range(n), seed=args.seed)
    ov = _overrides(scene, states)
    cores = max(1, min(numba.get_num_threads(), n, info["cpus_available"] or 1))

    # untimed warm-ups: numba compilation / cache loading of every phase kernel (tumble: a 2-sample batch,
    # full trajectories; the reference: one trajectory)
    k0 = min(2, n)
    first_s, _, _, _, _ = _run_engine(scene, {c: v[:k0] for c, v in ov.items()}, k0)
    ref = None
    ref_warm_s = math.nan
    if k:
        ref = ReferenceProbe.from_scene(scene, flight_method=args.reference_method)
        (w0,), ref_warm_s, _ = _run_reference_block(ref, states[:1])
    print(f"warm-ups (untimed, numba compilation / cache loading): tumble {k0}-sample batch {first_s:.1f} s"
          + (f", reference one trajectory {ref_warm_s:.1f} s" if k else ""))

    # interleaved pairs: tumble batch run, reference block, tumble batch run, ...
    walls, cpus, ref_blocks, ref_cpus, pair_loads, ref_results = [], [], [], [], [], []
    status_runs = []
    load_start = _load()
    print(f"load average before the pairs: {_load_str(load_start)}")
    for i in range(args.repeat):
        wall, cpu, res, timings, steps = _run_engine(scene, ov, n, args.active)
        walls.append(wall)
        cpus.append(cpu)
        status_runs.append(np.asarray(res.status).reshape(n).copy())
        line = f"  pair {i + 1}: tumble {wall:.3f} s ({wall / n * 1e3:.2f} ms/trajectory, CPU {cpu:.2f} s)"
        if k:
            results, block, rcpu = _run_reference_block(ref, states[:k])
            ref_blocks.append(block)
            ref_cpus.append(rcpu)
            if not ref_results:
                ref_results = results
            line += (f" | reference {k} trajectories {block:.2f} s ({block / k:.3f} s/trajectory) | ratio "
                     f"{(block / k) / (wall / n):,.0f}x")
        pair_loads.append(_load())
        print(f"{line} | load average {_load_str(pair_loads[-1])}")

    tum = [w / n for w in walls]                       # tumble s/trajectory, per run
    refs = [b / k for b in ref_blocks] if k else []   # reference s/trajectory, per block
    tum_mean, ref_mean = _mean(tum), _mean(refs)
    med = statistics.median(walls)
    per_traj = tum_mean
    pair_ratios = [r / t for r, t in zip(refs, tum)]
    ratio = ref_mean / tum_mean if refs else math.nan            # ratio of the means, per machine
    ratio_med = _median(pair_ratios)
    tps_machine = 1.0 / tum_mean
    tps_core = tps_machine / cores
    ref_tps = 1.0 / ref_mean if refs else math.nan              # one thread: per machine = per core
    ratio_core = ratio / cores
    cpu_per_traj = _mean(cpus) / n
    ref_cpu_per_traj = _mean(ref_cpus) / k if k else math.nan

    fin = {c: np.asarray(res.finals[c]).reshape(n) for c in FINALS}
    status = status_runs[-1]
    stable = all(np.array_equal(s, status) for s in status_runs)
    print(f"tumble: {n} trajectories, {args.repeat} runs {', '.join(f'{w:.3f}' for w in walls)} s -> mean "
          f"{tum_mean * 1e3:.2f} ms/trajectory{_spread(tum, 1e3, 'ms')} (median run {med:.3f} s); process CPU "
          f"{cpu_per_traj * 1e3:.2f} ms/trajectory (all threads)")
    print(f"  per machine {tps_machine:.1f} trajectories/s on {cores} threads; per core {tps_core:.1f} "
          f"trajectories/s")
    tot = sum(timings.values()) or 1.0
    split = ", ".join(f"{key} {v:.2f} s ({100 * v / tot:.0f} %)" for key, v in timings.items())
    print(f"  phase split of the last run (thread-seconds summed over the worker threads): {split}")
    if steps:
        per = ", ".join(f"{key} {c:,} {'collisions' if key == 'collide' else 'step attempts'} ({c / n:.0f} per "
                        f"trajectory, {1e6 * timings.get(key, math.nan) / c:.1f} µs each)"
                        for key, c in steps.items() if c)
        print(f"  work by phase: {per}")
    mean_settle = _mean_settle(status, fin["probe_settle_time"])
    print(f"  status {_status_counts(status)} ({'the same in every run' if stable else 'NOT the same in every run'})"
          f"; mean settling time {_fmt(mean_settle)} s; mean bounces {fin['probe_bounces'].mean():.1f}; mean "
          f"first impact {np.nanmean(fin['probe_first_impact_time']):.1f} s")

    if k:
        ref_times = [r.wall_s for r in ref_results]
        rst = np.array([r.status for r in ref_results])
        rset = np.array([r.settle_time for r in ref_results])
        print(f"scipy reference (solve_ivp {args.reference_method} flight / RK45 contact, one trajectory at a time, "
              f"one thread): {args.repeat} blocks of {k} trajectories, {', '.join(f'{b:.2f}' for b in ref_blocks)} s "
              f"-> mean {ref_mean:.3f} s/trajectory{_spread(refs)}; process CPU {ref_cpu_per_traj:.3f} s/trajectory")
        print(f"  per machine = per core (one thread) {ref_tps:.3f} trajectories/s; the first block's trajectories: "
              f"{', '.join(f'{t:.2f}' for t in ref_times)} s")
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
    print(f"ratio (reference s/trajectory / tumble's): mean vs mean {_fmt(ratio, ',.0f')}x per machine "
          f"({cores} tumble threads against one), {_fmt(ratio_core, ',.0f')}x per core; per pair "
          f"{', '.join(f'{r:,.0f}' for r in pair_ratios) or '-'} -> median {_fmt(ratio_med, ',.0f')}x; "
          f"process CPU time per trajectory {_fmt(ref_cpu_per_traj / cpu_per_traj, ',.0f')}x")
    print(f"goals: >= {GOAL_TRAJ_PER_S:.0f} trajectories/s: {'met' if tps_machine >= GOAL_TRAJ_PER_S else 'NOT met'}; "
          f">= {GOAL_RATIO:.0f}x the reference (mean vs mean, per machine): "
          f"{'met' if ratio >= GOAL_RATIO else ('NOT met' if refs else 'not measured')}")

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
        print(f"  run_batch into a Zarr store (not interleaved): {store_s:.2f} s -> {n / store_s:.1f} trajectories/s")

    against = None
    if args.against:
        against = _against(args, repo, against_sha, threads)
        against["in_process_current_s_per_trajectory_mean"] = tum_mean

    load_after = _load()
    print(f"load average after: {_load_str(load_after)}")

    payload = {
        "scene": "deploy-cube", "gravity": args.gravity, "rocks": False, "seed": args.seed, "samples": n,
        "timing": "tumble: World.compile + World.run of the batch (no store), in-process, after a warm-up run; "
                  "reference: ReferenceProbe.run of samples 0..k-1 per block, one numba thread, after a warm-up "
                  "trajectory; interleaved pairs (tumble run, reference block) x repeat; s/trajectory = run wall / "
                  "samples (tumble), block wall / k (reference); figures are means over the runs; scene build "
                  "(cached voxel field) and numba compilation excluded",
        "repeat": args.repeat, "wall_s": walls, "median_s": med, "cpu_s": cpus,
        "s_per_trajectory": per_traj, "s_per_trajectory_runs": tum, "cpu_s_per_trajectory": cpu_per_traj,
        "trajectories_per_s": tps_machine, "trajectories_per_s_per_core": tps_core, "cores_used": cores,
        "warmup_s": first_s, "scene_build_s": build_s,
        "phase_timings_s": timings,
        "phase_steps": steps,
        "load_average": load_before, "load_average_before_pairs": load_start,
        "load_average_after_each_pair": pair_loads, "load_average_after": load_after,
        "status_counts": _status_counts(status), "status_same_every_run": stable,
        "mean_settle_time_s": _mean_settle(status, fin["probe_settle_time"]),
        "mean_bounces": float(fin["probe_bounces"].mean()),
        "store_run_batch_s": store_s,
        "peer": f"benchmarks/deploy_reference.py: scipy solve_ivp ({args.reference_method} flight rtol 1e-10, RK45 "
                "contact), one trajectory at a time, one numba thread for the numpy APIs",
        "reference_samples": k, "reference_warmup_s": ref_warm_s,
        "reference_block_s": ref_blocks, "reference_cpu_s": ref_cpus,
        "reference_s_per_trajectory_blocks": refs, "reference_s_per_trajectory_mean": ref_mean,
        "reference_cpu_s_per_trajectory": ref_cpu_per_traj,
        "reference_s_per_trajectory": [r.wall_s for r in ref_results],
        "reference_median_s": _median([r.wall_s for r in ref_results]),
        "reference_trajectories_per_s": ref_tps,
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
        "ratio_definition": "reference s/trajectory / tumble s/trajectory (tumble on cores_used threads, the "
                            "reference on one)",
        "ratio_reference_over_tumble_per_trajectory": ratio, "ratio_mean_vs_mean": ratio,
        "ratio_per_core": ratio_core, "pair_ratios": pair_ratios, "median_pair_ratio": ratio_med,
        "ratio_cpu_time_per_trajectory": ref_cpu_per_traj / cpu_per_traj,
        "goals": {"trajectories_per_s": GOAL_TRAJ_PER_S, "ratio": GOAL_RATIO},
        "against": against,
    }
    path = save("deploy", json_safe(payload), path=args.out, machine=info)
    print(f"saved {path}")
    return payload


if __name__ == "__main__":  # pragma: no cover
    main()
