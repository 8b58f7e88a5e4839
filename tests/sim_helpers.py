"""Shared by the GPU-twin tests: run a script on the CPU backend and on the GPU backend under numba's
strict CUDA simulator, each in its own process (the simulator must be on before numba.cuda is
imported), and compare what they print."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def cpu_and_simulated_gpu(script: str, *args: str, timeout: float = 900.0) -> dict:
    """``{"cpu": ..., "gpu": ...}``: the JSON that ``script`` prints last, run with argv[1] the
    backend (``cpu`` plainly, ``gpu`` with ``NUMBA_ENABLE_CUDASIM=1 TUMBLE_CUDASIM_STRICT=1``) and
    ``args`` after it."""
    out = {}
    for backend, sim in (("cpu", False), ("gpu", True)):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
        env.pop("NUMBA_ENABLE_CUDASIM", None)
        env.pop("TUMBLE_CUDASIM_STRICT", None)
        if sim:
            env.update(NUMBA_ENABLE_CUDASIM="1", TUMBLE_CUDASIM_STRICT="1")
        p = subprocess.run([sys.executable, "-c", script, backend, *args], cwd=ROOT, env=env, capture_output=True,
                           text=True, timeout=timeout)
        assert p.returncode == 0, p.stderr[-3000:]
        out[backend] = json.loads(p.stdout.strip().splitlines()[-1])
    return out



def run_script(script: str, *args: str, simulator: bool, strict: bool = True, timeout: float = 600.0):
    """The JSON that ``script`` prints last, run with ``args`` in its own process: under numba's
    CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``; with ``strict``, ``TUMBLE_CUDASIM_STRICT=1`` too),
    or with neither (a real device, or the CPU)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    env.pop("TUMBLE_CUDASIM_STRICT", None)
    if simulator:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
        if strict:
            env["TUMBLE_CUDASIM_STRICT"] = "1"
    p = subprocess.run([sys.executable, "-c", script, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=timeout)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def run_simulated(script: str, *args: str, strict: bool = True, timeout: float = 600.0):
    """:func:`run_script` under the CUDA simulator."""
    return run_script(script, *args, simulator=True, strict=strict, timeout=timeout)


def run_on_device(script: str, *args: str, timeout: float = 600.0):
    """:func:`run_script` on a real CUDA device (the test is skipped without one)."""
    import pytest
    from numba import cuda

    if not cuda.is_available():
        pytest.skip("no CUDA device")
    return run_script(script, *args, simulator=False, timeout=timeout)

SCENE_SCRIPT = """
import importlib, json, sys
import numpy as np

module, fn, t_end, final = sys.argv[2], sys.argv[3], float(sys.argv[4]), tuple(sys.argv[5].split(","))
scene = getattr(importlib.import_module(module), fn)()
w = scene.world
w.compile(samples=1, backend=sys.argv[1])
res = w.run(t_end=t_end, dt=scene.dt, final=final)
print(json.dumps({c: np.asarray(v, float).ravel().tolist() for c, v in res.finals.items()}))
"""


def scene_finals_cpu_and_gpu(builder: str, t_end: float, final: tuple) -> dict:
    """:func:`cpu_and_simulated_gpu` of one sample of the scene ``builder`` (``"module:function"``,
    called without arguments) run to ``t_end`` [s]: the ``final`` columns on each backend."""
    module, fn = builder.split(":")
    return cpu_and_simulated_gpu(SCENE_SCRIPT, module, fn, repr(float(t_end)), ",".join(final))
