"""Shared benchmark plumbing: machine info, repeat-and-median timing, JSON results."""

from __future__ import annotations

import json
import math
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np

def results_dir() -> Path:
    """Where a benchmark writes by default: ``$TUMBLE_BENCH_DIR``, else ``bench-results/`` in the
    working directory (never the package folder: an editable install's clone)."""
    return Path(os.environ.get("TUMBLE_BENCH_DIR") or Path.cwd() / "bench-results")


def machine_info() -> dict:
    """What the figures were measured on."""
    import numba
    import numpy

    info = {"platform": platform.platform(), "python": platform.python_version(), "cpu_count": os.cpu_count(),
            "processor": platform.processor() or platform.machine(), "numpy": numpy.__version__,
            "numba": numba.__version__, "numba_threads": numba.get_num_threads()}
    try:  # the cores this process may run on (a cgroup / taskset can allow fewer than cpu_count)
        info["cpus_available"] = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        info["cpus_available"] = os.cpu_count()
    try:
        info["numba_threading_layer"] = numba.threading_layer()
    except ValueError:  # no parallel kernel has run yet in this process
        pass
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu_model"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return info


def median_time(fn, *, repeat: int = 5, warmup: int = 1) -> float:
    """Median wall time of ``fn()`` over ``repeat`` runs after ``warmup`` untimed runs [s]."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def save(name: str, payload: dict, *, path: Path | None = None, machine: dict | None = None) -> Path:
    """Write ``<results_dir()>/<name>.json`` (or ``path``) with the machine info attached
    (``machine``, or :func:`machine_info` now)."""
    path = Path(path) if path is not None else results_dir() / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"machine": machine if machine is not None else machine_info(), **payload}, indent=2,
                               default=float))
    return path


def json_safe(x):
    """``x`` for strict JSON: numpy scalars and arrays as Python numbers and lists, NaN and inf as
    null, dict keys as strings."""
    if isinstance(x, dict):
        return {str(k): json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    if isinstance(x, np.ndarray):
        return json_safe(x.tolist())
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return None if not math.isfinite(float(x)) else float(x)
    return x
