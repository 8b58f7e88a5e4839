"""``tumble bench device``: the one check of the GPU backend on a real device, in one call of under 10 minutes.

Steps, each a subprocess with its own time limit, in order of what matters most; the results file
(``--out``/device.json) is rewritten after every step and each step's whole output is appended to
``--out``/device.log, so a run stopped at its limit still reports what finished:

1. ``env``: numpy, numba, numba-cuda and CuPy versions, the device (``nvidia-smi``).
2. ``compile_cold``: deploy-cube, ``--probe-samples`` samples on the GPU backend in a fresh
   process with an empty kernel cache (the voxel gravity field's cache is kept): the first run
   (GPU kernels compiled, NVVM and the driver's ptxas) and a second run in the same process
   (nothing compiled); their difference is the compile time.
3. ``compile_cached``: the same in a second process, which loads the kernels from the disk cache.
4. ``deploy_probe``: ``tumble bench deploy --backend gpu`` at ``--probe-batch`` samples: GPU
   against all CPU cores, same inputs, statistics compared (issue 17's bench).
5. ``deploy_large``: the same at ``--samples`` (default 100,000), cut to what the probe's GPU
   rate finishes in the time left.
6. ``gpu_tests``: ``pytest -m gpu``.
7. ``deploy_maxreg128``: the probe batch again with every GPU driver capped at 128 registers
   (``TUMBLE_GPU_MAX_REGISTERS``), when time is left: occupancy against spills, measured.

Prints a summary; exits 0 when every step that ran passed. Run from the repository root on the
device machine (README, "The GPU backend").
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_ENV = r'''
import json, subprocess
out = {}
for m in ("numpy", "numba", "numba_cuda", "cupy", "zarr"):
    try:
        mod = __import__(m)
        out[m] = getattr(mod, "__version__", "?")
    except Exception as exc:
        out[m] = f"not importable: {type(exc).__name__}: {exc}"
from ecs.kernels import gpu_backend_error
out["gpu_backend_error"] = gpu_backend_error()
try:
    out["nvidia_smi"] = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version,clocks.max.sm",
                                        "--format=csv,noheader"], capture_output=True, text=True, timeout=30).stdout.strip()
except Exception as exc:
    out["nvidia_smi"] = str(exc)
print("RESULT " + json.dumps(out))
'''

_COMPILE = r'''
import json, sys, time
t0 = time.perf_counter()
import numpy as np
from numba import cuda
from scenes.registry import load_scene
import ecs.kernels as K
n = int(sys.argv[1])
scene = load_scene("deploy-cube")
w = scene.world
t1 = time.perf_counter()
runs = []
for k in range(2):
    a = time.perf_counter()
    w.compile(samples=n, backend="gpu")
    r = w.run(t_end=scene.t_end, dt=scene.dt)
    cuda.synchronize()
    runs.append(time.perf_counter() - a)
status = np.asarray(K.to_host(r.status)).reshape(-1).tolist()
print("RESULT " + json.dumps({"import_and_build_s": t1 - t0, "first_run_s": runs[0], "second_run_s": runs[1],
                              "compile_s": runs[0] - runs[1], "status": {str(s): status.count(s) for s in set(status)},
                              "drivers": len(K._GPU_DRIVERS)}))
'''


def _run_step(name: str, cmd: list[str], timeout: float, env: dict, log: Path) -> dict:
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=max(1.0, timeout))
        rc, out = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as exc:
        rc = "timeout"
        out = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        out += (exc.stderr or b"").decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
    wall = time.perf_counter() - t0
    with log.open("a") as f:
        f.write(f"\n===== {name} (rc {rc}, {wall:.1f} s): {' '.join(cmd)}\n{out}\n")
    res = {"step": name, "rc": rc, "wall_s": round(wall, 2), "tail": out[-1500:]}
    for line in out.splitlines():
        if line.startswith("RESULT "):
            res["result"] = json.loads(line[7:])
    print(f"[{name}] rc {rc} in {wall:.1f} s", flush=True)
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="tumble bench device", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("device-check"), help="folder for device.json and device.log")
    ap.add_argument("--budget", type=float, default=560.0, help="seconds for all steps together (default 560)")
    ap.add_argument("--samples", type=int, default=100_000, help="the large batch (default 100,000)")
    ap.add_argument("--probe-batch", type=int, default=2000, help="the first GPU-vs-CPU batch (default 2,000)")
    ap.add_argument("--probe-samples", type=int, default=64, help="samples of the compile runs (default 64)")
    ap.add_argument("--skip", default="", help="comma-separated steps to skip")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    log = args.out / "device.log"
    log.write_text("")
    skip = {s for s in args.skip.split(",") if s}
    start = time.perf_counter()
    left = lambda: args.budget - (time.perf_counter() - start)  # noqa: E731
    results: dict = {"steps": []}

    def record(res: dict) -> None:
        results["steps"].append(res)
        (args.out / "device.json").write_text(json.dumps(results, indent=2, default=str))

    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               PYTHONUNBUFFERED="1")
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    py = sys.executable
    if "env" not in skip:
        record(_run_step("env", [py, "-c", _ENV], min(60, left()), env, log))

    # a fresh kernel cache (numba's CPU and GPU caches, generated modules), the gravity field's kept
    from ecs import _cache

    cache = Path(tempfile.mkdtemp(prefix="tumble-device-cache-"))
    old = _cache.cache_dir("gravity")
    if old is not None and old.exists():
        shutil.copytree(old, cache / "gravity")
    cenv = dict(env, TUMBLE_CACHE_DIR=str(cache))
    cenv.pop("NUMBA_CACHE_DIR", None)
    for step in ("compile_cold", "compile_cached"):
        if step not in skip and left() > 30:
            record(_run_step(step, [py, "-c", _COMPILE, str(args.probe_samples)], min(300, left() - 20), cenv, log))

    rate = None
    if "deploy_probe" not in skip and left() > 60:
        out = args.out / "deploy_probe.json"
        res = _run_step("deploy_probe", [py, "-m", "benchmarks.bench_deploy", "--backend", "gpu", "--samples",
                                         str(args.probe_batch), "--repeat", "1", "--out", str(out)],
                        min(300, left() - 30), cenv, log)
        if out.exists():
            res["result"] = json.loads(out.read_text())
            try:
                rate = args.probe_batch / res["result"]["gpu_wall_s"][0]
            except (KeyError, IndexError, TypeError, ZeroDivisionError):
                rate = None
        record(res)
    if "deploy_large" not in skip and rate and left() > 90:
        # GPU run plus the CPU run (~2,000/s on 16 cores) of the same batch must fit, with room for the tests
        cpu_rate = 2000.0
        fit = int((left() - 150) / (1.0 / rate + 1.0 / cpu_rate))
        n = max(args.probe_batch, min(args.samples, fit))
        out = args.out / "deploy_large.json"
        res = _run_step("deploy_large", [py, "-m", "benchmarks.bench_deploy", "--backend", "gpu", "--samples", str(n),
                                         "--repeat", "1", "--out", str(out)], left() - 100, cenv, log)
        res["samples"] = n
        if out.exists():
            res["result"] = json.loads(out.read_text())
        record(res)
    if "gpu_tests" not in skip and left() > 30:
        record(_run_step("gpu_tests", [py, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider", "tests"],
                         left() - 5, env, log))
    if "maxreg" not in skip and left() > 120:
        # occupancy against spills: the probe batch again with every driver capped at 128 registers
        out = args.out / "deploy_maxreg128.json"
        res = _run_step("deploy_maxreg128", [py, "-m", "benchmarks.bench_deploy", "--backend", "gpu", "--samples",
                                             str(args.probe_batch), "--repeat", "1", "--out", str(out)],
                        left() - 5, dict(cenv, TUMBLE_GPU_MAX_REGISTERS="128"), log)
        if out.exists():
            res["result"] = json.loads(out.read_text())
        record(res)
    ok = all(r["rc"] == 0 for r in results["steps"])
    results["ok"] = ok
    results["total_s"] = round(time.perf_counter() - start, 1)
    (args.out / "device.json").write_text(json.dumps(results, indent=2, default=str))
    for r in results["steps"]:
        print(f"{r['step']:<16} rc {r['rc']!s:<8} {r['wall_s']:>7.1f} s  {json.dumps(r.get('result', ''))[:300]}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
