"""Every GPU kernel a pipeline launches compiles for a real device (sm_90), within its budget.

The CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) runs the kernel sources as Python, so it accepts
code the CUDA target refuses, and says nothing of what a kernel costs the chip. Here
``tumble bench gpu-compile`` (:mod:`benchmarks.bench_gpu_compile`) runs each scene a few frames on
the CPU, records every row and span launch (and the mode loop's device-only launches), and
compiles the CUDA driver of each for the argument types of that very call: to PTX with NVVM, then
to SASS with ``ptxas -arch=sm_90 -O3 -v``, which needs the CUDA toolkit but no device. Each
kernel's registers, spill bytes and compile time are held to the budgets of docs/design.md §8.11
(:data:`BUDGETS`), so a change that bloats a kernel fails where it is made. This is also how numba
>= 0.66's refusal of two-argument ``min``/``max`` on the CUDA target (numba issue #10753) was found.

Skipped where NVVM is not installed; without ``ptxas`` only the PTX is checked. In CI: the
rigid-body integrator's and facet contact's kernels, and deploy-cube's whole device loop (three
phase kernels, the collide span over a device list, the compaction and end-rule kernels); the
multibody kernels and a deployment with a user term are a ``slow`` study.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: (most registers per thread, most spill bytes (stores or loads)) per kernel, by name prefix
#: (docs/design.md §8.11 gives the figures measured on the day these were set and why the phase
#: kernels sit at the 255-register ceiling). A kernel not listed gets :data:`DEFAULT_BUDGET`.
BUDGETS = {
    "_fly_rows": (255, 512),
    "_collide_rows": (255, 2048),
    "listed:_collide_rows": (255, 2048),
    "_contact_rows": (255, 8192),
    "compact:_end_row": (128, 0),
    "compact:": (32, 0),
    "_find_contacts": (255, 0),
}
DEFAULT_BUDGET = (128, 0)

#: NVVM + ptxas of every deploy-cube GPU kernel on this 2-core machine [CPU s]: issue 33's 60 s, on
#: an idle machine (`python -m benchmarks.bench_gpu_compile`). Held in CPU seconds: NVVM runs in the
#: bench's process and ptxas in a child, one thread each, one kernel after the other, so on an idle
#: machine the wall time is the same figure. Beside the other test process the CPU seconds still grow
#: (shared caches): the same code measured 55.8 and 57.5 s idle and 60.5 s in a CI run (2026-11-30).
#: The machine drifts too: on 2026-12-01, idle and interleaved, d91a2ba took 60.2 and 67.7 s and the
#: next code (the same PTX within 1 %) 71.9 and 57.9 s, and a CI run of it 75.1 s; that evening, on
#: the same machine running 1.5-1.8x slower (a CPython loop and `tumble bench deploy` both) and with
#: the CUDA 13.5 toolkit wheels a fresh install took, a CI run of the same PTX (registers and spills
#: unchanged) took 109.4 s. So the guard allows 2.5x the idle figure: 150 s still catches the failure
#: it exists for (minutes of JIT, issue 33: no result in 250 s), and what a kernel costs without the
#: drift is held by the registers and spills above (:data:`BUDGETS`) and by the PTX the kernels
#: make (:data:`DEPLOY_PTX_BUDGET_BYTES`).
DEPLOY_COMPILE_IDLE_S = 60.0
DEPLOY_COMPILE_BUDGET_S = 2.5 * DEPLOY_COMPILE_IDLE_S
#: The same CPU seconds over those of the bench's reference kernel, compiled in the same run
#: (:func:`benchmarks.bench_gpu_compile.reference_compile`: code that does not change with tumble's,
#: so it slows with the machine and the toolkit alone). On 2026-12-02 this machine drifted within half
#: an hour from 105.8 to 129.5 s of idle NVVM + ptxas for the same PTX, 21 s under the fixed budget
#: before another test process shares the cores. The ratio was 45.4 (129.5 s over 2.85 s) and 49.7
#: (119.9 s over 2.41 s) in two idle runs. The guard allows 1.5x the larger: a kernel set that costs
#: half as much again to build, against a compile on the same machine minutes apart, fails; a slow
#: day does not. The budget is the larger of the two rules (the fixed one still holds on a fast day).
DEPLOY_COMPILE_RATIO_IDLE = 49.7
DEPLOY_COMPILE_RATIO_BUDGET = 1.5 * DEPLOY_COMPILE_RATIO_IDLE
#: PTX of every deploy-cube GPU kernel [bytes], a quarter more than measured on 2026-12-01 (102.9 MB:
#: contact 37.4, fly 21.6, collide 21.1 and its listed span 21.2, the end rules 1.6 MB): the code NVVM
#: and ptxas are given, which does not drift with the machine.
DEPLOY_PTX_BUDGET_BYTES = int(1.25 * 102.9e6)


def budget(kernel: str) -> tuple[int, int]:
    best = ""
    for k in BUDGETS:
        if kernel.startswith(k) and len(k) > len(best):
            best = k
    return BUDGETS[best] if best else DEFAULT_BUDGET


def _compile(tmp_path, scenes: str, only: str = "", reference: bool = False) -> dict:
    from benchmarks.bench_gpu_compile import nvvm_missing

    why = nvvm_missing()
    if why:
        pytest.skip(why)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    out = tmp_path / "gpu-compile.json"
    cmd = [sys.executable, "-m", "benchmarks.bench_gpu_compile", "--scenes", scenes, "--out", str(out)]
    if only:
        cmd += ["--only", only]
    if not reference:            # the reference kernel's compiles (~9 s) only where a time budget needs them
        cmd += ["--reference-repeats", "0"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    print(proc.stdout[-4000:])
    return json.loads(out.read_text())


def _check_budgets(result: dict) -> None:
    over = []
    for r in result["kernels"]:
        assert "ptxas_error" not in r, r
        if "registers" not in r:           # no ptxas on this machine: PTX only
            continue
        regs, spill = budget(r["kernel"])
        if r["registers"] > regs or max(r["spill_stores"], r["spill_loads"]) > spill:
            over.append(f"{r['kernel']}: {r['registers']} registers (budget {regs}), spills "
                        f"{r['spill_stores']}/{r['spill_loads']} B (budget {spill})")
    assert not over, over


def test_rigid_body_and_facet_kernels_compile_for_the_device(tmp_path):
    r = _compile(tmp_path, "cubesat,jeod-point")
    names = [k["kernel"] for k in r["kernels"]]
    # every row function launched was compiled, and the pipelines launched the expected families
    assert set(names) == set(r["recorded"]) and len(names) >= 7, r
    for family in ("_body_derivative", "_finish_step", "_set_stage", "_find_contacts", "_apply_contacts"):
        assert any(k.startswith(family) for k in names), (family, names)
    _check_budgets(r)


def test_deploy_cube_device_loop_compiles_within_budget(tmp_path):
    """deploy-cube's whole device loop: the fly, collide and contact phase kernels (the run reaches
    contact motion), the collide span over a device list, the mode loop's compaction kernels and its
    end rules with the voxel field and grid terrain; registers and spills per kernel, their PTX
    (:data:`DEPLOY_PTX_BUDGET_BYTES`) and their total compile time within budget (NVVM + ptxas
    <= 60 CPU s on 2 cores when idle on a fast day; 150 s here, where another test process shares
    the cores, :data:`DEPLOY_COMPILE_BUDGET_S`, or :data:`DEPLOY_COMPILE_RATIO_BUDGET` times the
    reference kernel's compile in the same run when that is larger: the machine drifts)."""
    r = _compile(tmp_path, "deploy-cube@20000", reference=True)
    names = {k["kernel"] for k in r["kernels"]}
    for k in ("_fly_rows", "_collide_rows", "_contact_rows", "listed:_collide_rows", "compact:_in_mode",
              "compact:_running", "compact:_stop_stuck", "compact:_end_row"):
        assert k in names, (k, sorted(names))
    _check_budgets(r)
    ptx = sum(k["ptx_bytes"] for k in r["kernels"])
    assert ptx <= DEPLOY_PTX_BUDGET_BYTES, (ptx, {k["kernel"]: k["ptx_bytes"] for k in r["kernels"]})
    allowed = max(DEPLOY_COMPILE_BUDGET_S, DEPLOY_COMPILE_RATIO_BUDGET * r["reference_cpu_s"])
    assert r["total_cpu_s"] <= allowed, (r["total_cpu_s"], r["reference_cpu_s"], allowed, r["total_s"])


@pytest.mark.slow
def test_multibody_and_uniform_gravity_kernels_compile_for_the_device(tmp_path):
    r = _compile(tmp_path, "dumbbell,parabola")
    names = [k["kernel"] for k in r["kernels"]]
    assert set(names) == set(r["recorded"]), r
    for family in ("_advance_sample", "_link_motion_sample", "_poi_row", "_add_weight"):
        assert any(k.startswith(family) for k in names), (family, names)


@pytest.mark.slow
def test_deployment_phase_kernels_with_row_terms_compile_for_the_device(tmp_path):
    """fly, collide and contact rows of a deployment with a user force (the generated term RHS) and
    the device loop's compaction kernels, within the same budgets as deploy-cube's."""
    r = _compile(tmp_path, "scenes/examples/deploy_srp.py@3000")
    names = {k["kernel"] for k in r["kernels"]}
    for k in ("_fly_rows", "_collide_rows", "_contact_rows", "listed:_collide_rows", "compact:_end_row"):
        assert k in names, (k, sorted(names))
    _check_budgets(r)


# ------------------------------------------------------------------ the bench's arithmetic and the driver cache key
def test_occupancy_follows_the_sm90_register_file():
    """sm_90: 65,536 registers and 64 warps per SM, registers allocated per warp in units of 256,
    blocks of 128 threads (4 warps): 255 registers -> 8,192 a warp -> 2 blocks -> 8 warps."""
    from benchmarks.bench_gpu_compile import occupancy

    assert occupancy(255) == 8 / 64
    assert occupancy(128) == 16 / 64
    assert occupancy(64) == 32 / 64
    assert occupancy(32) == 1.0
    assert occupancy(40) == 48 / 64            # 1,280 a warp -> 5,120 a block -> 12 blocks -> 48 warps


def test_ptxas_report_is_read_for_the_entry():
    from benchmarks.bench_gpu_compile import parse_ptxas

    text = """ptxas info    : Compiling entry function '_Z6kernelv' for 'sm_90'
ptxas info    : Function properties for _Z6kernelv
    912 bytes stack frame, 92 bytes spill stores, 160 bytes spill loads
ptxas info    : Used 255 registers, used 0 barriers, 912 bytes cumulative stack size
ptxas info    : Function properties for _Z6calleev
    0 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads
"""
    r = parse_ptxas(text)
    assert (r["registers"], r["stack"], r["spill_stores"], r["spill_loads"], r["functions"]) == (255, 912, 92, 160, 2)


def test_gpu_driver_file_is_keyed_by_every_source_the_kernel_reaches(tmp_path, monkeypatch):
    """A cached cubin is keyed by its driver file alone (numba), so the file's name hashes every
    source the kernel reaches: editing a callee in another file gives a new file (no stale
    machine code); the same sources give the same file."""
    import importlib.util

    from ecs import kernels as K

    monkeypatch.setenv("TUMBLE_CACHE_DIR", str(tmp_path / "cache"))
    pkg = tmp_path / "mods"
    pkg.mkdir()
    (pkg / "callee_mod.py").write_text("import numba\n@numba.njit\ndef g(x):\n    return x + 1.0\n")
    (pkg / "caller_mod.py").write_text("import numba\nfrom callee_mod import g\n@numba.njit\ndef f(x):\n"
                                       "    return g(x) * 2.0\n")
    monkeypatch.syspath_prepend(str(pkg))

    def load(name):
        spec = importlib.util.spec_from_file_location(name, pkg / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, name, mod)
        spec.loader.exec_module(mod)
        return mod

    load("callee_mod")
    f = load("caller_mod").f
    src = "def _driver(n, a0):\n    i = cuda.grid(1)\n    if i < n:\n        fn(a0)\n"
    p1 = K._driver_file(f, src)
    assert p1 == K._driver_file(f, src) and p1.read_text().endswith(src)
    (pkg / "callee_mod.py").write_text("import numba\n@numba.njit\ndef g(x):\n    return x + 2.0\n")
    load("callee_mod")
    f = load("caller_mod").f
    assert K._driver_file(f, src) != p1
    assert K._driver_file(f, src + "\n") != K._driver_file(f, src)
