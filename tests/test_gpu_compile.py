"""Every GPU row kernel a pipeline launches compiles for a real device (PTX, sm_90) with NVVM.

The CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) runs the kernel sources as Python, so it accepts
code the CUDA target refuses. Here each pipeline runs a few steps on the CPU while every
:func:`ecs.kernels.launch_rows` and :func:`ecs.kernels.launch_span` call is recorded; the GPU
driver of each recorded row or span kernel (:func:`ecs.kernels.gpu_row_kernel`,
:func:`ecs.kernels.gpu_span_kernel`, with its callees' GPU twins) is then compiled to PTX for the
argument types of that very call, through numba's CUDA compiler and NVVM, which needs the CUDA
toolkit but no device. This is how numba >= 0.66's refusal of two-argument ``min``/``max`` on the
CUDA target (numba issue #10753) was found here; ``ecs.kernels`` now swaps them in every GPU twin.

Skipped where NVVM is not installed. Without a device numba's device-function compiler still asks
the driver for the current device's compute capability, so a device reporting sm_90 is faked
for the compile only. In CI: the rigid-body integrator's and facet contact's row kernels (the
pipelines every scene uses); the multibody and deployment kernels (each 1-7 MB of PTX, up to a
minute of NVVM time) are a ``slow`` study.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent(
    """
    import sys, time, types
    import numba
    from numba import cuda
    import ecs.kernels as K

    calls = {}
    def _record(backend, cpu_driver, row, n, *args):
        key = getattr(row, "py", getattr(row, "py_func", None)).__qualname__
        calls.setdefault(key, (K.gpu_row_kernel, row, n, args))
        return _launch("cpu", cpu_driver, row, n, *args)
    def _record_span(backend, span, n, *args):
        key = getattr(span, "py", getattr(span, "py_func", None)).__qualname__
        calls.setdefault(key, (K.gpu_span_kernel, span, n, args))
        return _launch_span("cpu", span, n, *args)
    _launch, _launch_span = K.launch_rows, K.launch_span
    import systems
    import pkgutil, importlib
    for m in pkgutil.iter_modules(systems.__path__):
        mod = importlib.import_module("systems." + m.name)
        if getattr(mod, "launch_rows", None) is _launch:
            mod.launch_rows = _record
        if getattr(mod, "launch_span", None) is _launch_span:
            mod.launch_span = _record_span

    from scenes.registry import load_scene
    for spec in sys.argv[2].split(","):          # scene[@t_end]: run 5 frames, or to t_end
        name, _, t_end = spec.partition("@")
        scene = load_scene(name)
        w = scene.world
        w.compile(samples=2)
        w.run(t_end=float(t_end) if t_end else min(scene.t_end, 5 * scene.dt), dt=scene.dt)

    # the mode loop's device-only launches (GPU backend: systems.modes.ModeLoop._device_passes): the
    # compaction kernels that build its index lists and end its rows, and a span over a device list
    import numpy as np
    from systems.modes import ModeLoop, in_mode, running_row, stop_stuck
    for loop in [s for s in w.systems if isinstance(s, ModeLoop) and s.ctx is not None]:
        ctx, t = loop.ctx, loop.ctx.table
        st, md, tm, lim = t["row_status"], t[loop.mode_column], t["row_time"], np.zeros(t.row_count)
        lists = (np.arange(t.row_count), np.zeros(t.row_count, np.int64), np.zeros(1, np.int64))
        for key, test, args in (("compact:_in_mode", in_mode, (st, md, tm, np.int64(1), lim)),
                                ("compact:_running", running_row, (st,)),
                                ("compact:_stop_stuck", stop_stuck, (st, t["row_reason"], tm, lim)),
                                ("compact:_end_row", ctx.kernels.get("end_row"), loop.end.args(ctx, lim))):
            if test is not None:
                calls.setdefault(key, (K.gpu_compact_kernel, test, t.row_count, lists + tuple(args), len(args)))
        if "collide_rows" in ctx.kernels:
            args = loop.collide.launch_args(ctx, lists[0])
            calls.setdefault("listed:_collide_rows", (K.gpu_listed_span_kernel, ctx.kernels["collide_rows"],
                                                      np.zeros(1, np.int64), args, len(args)))

    if not cuda.is_available():
        import numba.cuda.dispatcher as disp
        disp.get_current_device = lambda: types.SimpleNamespace(compute_capability=(9, 0))
    for key, entry in sorted(calls.items()):
        driver, row, n, args = entry[:4]
        nargs = entry[4] if len(entry) > 4 else len(args)
        if sys.argv[1] and key not in sys.argv[1].split(","):
            continue
        sig = tuple(numba.typeof(a) for a in (n,) + tuple(args))
        t0 = time.time()
        k = driver(row, nargs)
        ptx, _ = cuda.compile_ptx(k.py_func, sig, cc=(9, 0))
        assert ".entry" in ptx, key
        print(f"PTX {key} {len(ptx)} {time.time() - t0:.1f}", flush=True)
    print("ROWS", ",".join(sorted(calls)))
    """
)


def _nvvm_missing() -> str | None:
    try:
        from numba.cuda.cudadrv import nvvm

        nvvm.NVVM()
        return None
    except Exception as exc:  # pragma: no cover - depends on the machine
        return f"NVVM (CUDA toolkit) not installed: {exc}"


def _compile(scenes: str, only: str = "") -> dict:
    why = _nvvm_missing()
    if why:
        pytest.skip(why)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    proc = subprocess.run([sys.executable, "-c", SCRIPT, only, scenes], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-4000:]
    lines = proc.stdout.splitlines()
    ptx = {ln.split()[1]: int(ln.split()[2]) for ln in lines if ln.startswith("PTX ")}
    rows = next(ln for ln in lines if ln.startswith("ROWS")).split()[1].split(",")
    return {"ptx": ptx, "rows": rows}


def test_rigid_body_and_facet_kernels_compile_for_the_device():
    r = _compile("cubesat,jeod-point")
    # every row function launched was compiled, and the pipelines launched the expected families
    assert set(r["ptx"]) == set(r["rows"]) and len(r["rows"]) >= 7, r
    for family in ("_body_derivative", "_finish_step", "_set_stage", "_find_contacts", "_apply_contacts"):
        assert any(k.startswith(family) for k in r["ptx"]), (family, r)


@pytest.mark.slow
def test_multibody_and_uniform_gravity_kernels_compile_for_the_device():
    r = _compile("dumbbell,parabola")
    assert set(r["ptx"]) == set(r["rows"]), r
    for family in ("_advance_sample", "_link_motion_sample", "_poi_row", "_add_weight"):
        assert any(k.startswith(family) for k in r["ptx"]), (family, r)


@pytest.mark.slow
def test_deployment_phase_kernels_with_row_terms_compile_for_the_device():
    """fly, collide and contact rows of a deployment with a user force (the generated term RHS), the
    collide span over a device list, and the device loop's compaction kernels (index lists, the
    end rules with the scene's gravity field and terrain)."""
    r = _compile("scenes/examples/deploy_srp.py@3000")
    for k in ("_fly_rows", "_collide_rows", "_contact_rows", "listed:_collide_rows"):
        assert r["ptx"].get(k, 0) > 100_000, r
    for k in ("compact:_in_mode", "compact:_running", "compact:_stop_stuck", "compact:_end_row"):
        assert r["ptx"].get(k, 0) > 1_000, r


def test_the_device_loops_index_list_kernels_compile_for_the_device():
    """The mode loop's compaction kernels (ecs.kernels.gpu_compact_kernel: atomics) for deploy-cube's
    tables, its end rules with the voxel field and the grid terrain included."""
    r = _compile("deploy-cube@600", only="compact:_in_mode,compact:_running,compact:_stop_stuck,compact:_end_row")
    for k in ("compact:_in_mode", "compact:_running", "compact:_stop_stuck", "compact:_end_row"):
        assert r["ptx"].get(k, 0) > 1_000, r
