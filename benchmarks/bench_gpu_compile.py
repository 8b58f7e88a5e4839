"""``tumble bench gpu-compile``: what every GPU kernel a scene launches costs to build, and whether it fits.

No device is needed. Each scene runs a few frames on the CPU while every
:func:`ecs.kernels.launch_rows` / :func:`ecs.kernels.launch_span` call and every
:class:`ecs.kernels.PreparedRows` / :class:`ecs.kernels.PreparedSpan` launch is recorded; the mode loop's
device-only launches (its compaction kernels and a span over a device list) are added from its
bound context. The CUDA driver of each recorded kernel (:func:`ecs.kernels.gpu_row_kernel`,
:func:`ecs.kernels.gpu_span_kernel`, ..., its callees' GPU twins linked in) is then compiled for
the argument types of that very call:

* to PTX for sm_90 by numba's CUDA compiler and NVVM (``cuda.compile_ptx``), timed: **NVVM s**
  (numba's typing and lowering included);
* to SASS by ``ptxas -arch=sm_90 -O3 -v`` (the work the driver does at a first launch), timed:
  **ptxas s**, with the **registers** per thread, **spill** store and load bytes and the **stack**
  frame bytes of the kernel entry that ``ptxas -v`` prints (with ABI calls to non-inlined device
  functions, the entry's figure covers its callees: a launch reserves registers for the deepest
  call), and the **occupancy** that register count allows on an H100/H200 SM (65,536 registers,
  64 warps, registers allocated per warp in units of 256, 128 threads a block).

Then a **reference kernel** that does not change with the code (:func:`reference_source`: 100
dependent lines of float64 arithmetic, square roots and divisions, written out by this module) is
compiled the same way, :data:`REFERENCE_REPEATS` times, and the least CPU time of its NVVM + ptxas
is reported beside the scene's (``reference_cpu_s``, and the ratio of the two): the peer measured in
the same run that a compile-time budget is held against, since this machine's speed drifts by
1.5-1.8x between days (docs/design.md §8.35).

Printed as a table and stored as JSON (``--out``, default ``gpu-compile.json`` in the working
directory). ``--budget-registers``/``--budget-spill``/``--budget-seconds`` make the run fail (exit
1) when a kernel exceeds them; ``tests/test_gpu_compile.py`` runs it with the budgets of
docs/design.md §8.11. Without NVVM (the CUDA toolkit) the bench says so and exits 2; without
``ptxas`` it reports PTX only.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

#: H100/H200 (sm_90) limits used for occupancy
SM_REGISTERS = 65536
SM_WARPS = 64
REG_ALLOC_UNIT = 256
BLOCK_THREADS = 128


def occupancy(registers: int, threads: int = BLOCK_THREADS) -> float:
    """Fraction of an sm_90 SM's 64 warps resident at ``registers`` per thread (register-limited)."""
    if registers <= 0:
        return 1.0
    per_warp = math.ceil(registers * 32 / REG_ALLOC_UNIT) * REG_ALLOC_UNIT
    warps_per_block = math.ceil(threads / 32)
    blocks = SM_REGISTERS // (per_warp * warps_per_block)
    return min(SM_WARPS, blocks * warps_per_block) / SM_WARPS


def nvvm_missing() -> str | None:
    """Why NVVM cannot compile here, or None."""
    try:
        from numba.cuda.cudadrv import nvvm

        nvvm.NVVM()
        return None
    except Exception as exc:  # pragma: no cover - depends on the machine
        return f"NVVM (CUDA toolkit) not installed: {exc}"


def record_launches(specs: list[str]) -> dict:
    """Run each ``scene[@t_end]`` a few frames on the CPU, recording every row and span launch:
    ``{name: (driver_factory, kernel, n, args, nargs)}``."""
    import numpy as np

    import ecs.kernels as K
    import systems

    calls: dict = {}
    launch, launch_span = K.launch_rows, K.launch_span

    def rec_rows(backend, cpu_driver, row, n, *args):
        key = getattr(row, "py", getattr(row, "py_func", None)).__qualname__
        calls.setdefault(key, (K.gpu_row_kernel, row, n, args, len(args)))
        return launch("cpu", cpu_driver, row, n, *args)

    def rec_span(backend, span, n, *args):
        key = getattr(span, "py", getattr(span, "py_func", None)).__qualname__
        calls.setdefault(key, (K.gpu_span_kernel, span, n, args, len(args)))
        return launch_span("cpu", span, n, *args)

    prepared_call = K.PreparedRows.__call__

    def rec_prepared(self, n, *tail):     # a launch a system prepared at bind (CPU-only ones have no row)
        if self.row is not None and n:
            args = self.fixed + tail
            key = getattr(self.row, "py", getattr(self.row, "py_func", None)).__qualname__
            calls.setdefault(key, (K.gpu_row_kernel, self.row, n, args, len(args)))
        return prepared_call(self, n, *tail)

    span_call = K.PreparedSpan.__call__

    def rec_prepared_span(self, n, *args):   # a span launch resolved once (the deployment's phases)
        if not isinstance(n, K.DeviceRows) and n:
            key = getattr(self.span, "py", getattr(self.span, "py_func", None)).__qualname__
            calls.setdefault(key, (K.gpu_span_kernel, self.span, n, args, len(args)))
        return span_call(self, n, *args)

    import importlib
    import pkgutil

    K.PreparedRows.__call__ = rec_prepared
    K.PreparedSpan.__call__ = rec_prepared_span
    patched = []
    for m in pkgutil.walk_packages(systems.__path__, "systems."):
        mod = importlib.import_module(m.name)
        for attr, new in (("launch_rows", rec_rows), ("launch_span", rec_span)):
            if getattr(mod, attr, None) is (launch if attr == "launch_rows" else launch_span):
                setattr(mod, attr, new)
                patched.append((mod, attr))
    try:
        from scenes.registry import load_scene
        from systems.deployment.modes import ModeLoop, in_mode, running_row, stop_stuck

        for spec in specs:
            name, _, t_end = spec.partition("@")
            scene = load_scene(name)
            w = scene.world
            w.compile(samples=2)
            w.run(t_end=float(t_end) if t_end else min(scene.t_end, 5 * scene.dt), dt=scene.dt)
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
    finally:
        K.PreparedRows.__call__ = prepared_call
        K.PreparedSpan.__call__ = span_call
        for mod, attr in patched:
            setattr(mod, attr, launch if attr == "launch_rows" else launch_span)
    return calls


_PTXAS_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_PTXAS_FUNC = re.compile(r"Function properties for (\S+)")
_PTXAS_STACK = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_PTXAS_REGS = re.compile(r"Used (\d+) registers")


def parse_ptxas(text: str) -> dict:
    """Registers, spills and stack of the entry (kernel) in ``ptxas -v``'s report, with the largest
    spill and stack figures over every function it lists."""
    out = {"registers": 0, "stack": 0, "spill_stores": 0, "spill_loads": 0, "functions": 0}
    current = None
    entry = None
    for line in text.splitlines():
        m = _PTXAS_ENTRY.search(line)
        if m:
            entry = m.group(1)
        m = _PTXAS_FUNC.search(line)
        if m:
            current = m.group(1)
            out["functions"] += 1
            continue
        m = _PTXAS_STACK.search(line)
        if m:
            stack, st, ld = (int(g) for g in m.groups())
            out["spill_stores"] = max(out["spill_stores"], st)
            out["spill_loads"] = max(out["spill_loads"], ld)
            if current == entry:
                out["stack"] = stack
            else:
                out["stack"] = max(out["stack"], stack)
            continue
        m = _PTXAS_REGS.search(line)
        if m and entry is not None and current == entry:
            out["registers"] = int(m.group(1))
    return out


def ptxas_path() -> str | None:
    """``ptxas`` of the CUDA toolkit wheels NVVM came from (their PTX ISA versions match), else the
    one on ``PATH`` or in ``/usr/local/cuda``."""
    cands = []
    try:
        from cuda.pathfinder import find_nvidia_binary_utility

        cands.append(find_nvidia_binary_utility("ptxas"))
    except Exception:  # pragma: no cover - an older cuda-pathfinder, or none
        pass
    cands += [shutil.which("ptxas"), "/usr/local/cuda/bin/ptxas"]
    for cand in cands:
        if cand and os.path.exists(cand):
            return cand
    return None


def _children_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes (ptxas)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def compile_one(key: str, entry: tuple, ptxas: str | None) -> dict:
    """PTX (NVVM) and SASS (ptxas) of one recorded launch, timed and measured."""
    import numba
    from numba import cuda

    driver, row, n, args, nargs = entry
    sig = tuple(numba.typeof(a) for a in (n,) + tuple(args))
    t0, c0 = time.perf_counter(), time.process_time()
    k = driver(row, nargs)
    ptx, _ = cuda.compile_ptx(k.py_func, sig, cc=(9, 0))
    res = {"kernel": key, "ptx_bytes": len(ptx), "nvvm_s": time.perf_counter() - t0,
           "nvvm_cpu_s": time.process_time() - c0}
    if ptxas:
        proc, res["ptxas_s"], res["ptxas_cpu_s"] = run_ptxas(ptx, ptxas)
        if proc.returncode != 0:
            res["ptxas_error"] = proc.stderr.strip()[-400:]
        else:
            res.update(parse_ptxas(proc.stderr + proc.stdout))
            res["occupancy"] = occupancy(res["registers"])
    return res


def run_ptxas(ptx: str, ptxas: str) -> tuple:
    """``ptxas -arch=sm_90 -O3 -v`` of ``ptx``: the finished process, its wall and CPU seconds."""
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "k.ptx"
        src.write_text(ptx)
        t0, u0 = time.perf_counter(), _children_cpu()
        proc = subprocess.run([ptxas, "-arch=sm_90", "-O3", "-v", str(src), "-o", str(Path(d) / "k.cubin")],
                              capture_output=True, text=True)
        return proc, time.perf_counter() - t0, _children_cpu() - u0


#: Lines of the reference kernel (:func:`reference_source`). On this 2-core machine on 2026-12-02 its
#: NVVM + ptxas took 2.4-2.9 CPU s (the least of three, after a scene's kernels) and 3.8-5.0 s alone in
#: a fresh process; 400 lines took 24 s (the cost grows faster than the code).
REFERENCE_LINES = 100
#: Compiles of the reference kernel per run; the least CPU time counts (single runs vary by ~15 %).
REFERENCE_REPEATS = 3


def reference_source(lines: int = REFERENCE_LINES) -> str:
    """Python source of the reference kernel ``_reference(out, x)``: 16 float64 locals updated by
    ``lines`` dependent statements (a product, a square root, a division; a branch every 25), written
    out here so that its compile cost follows the machine and the toolkit, never tumble's code."""
    src = ["def _reference(out, x):", "    i = cuda.grid(1)", "    if i >= x.shape[0]:", "        return"]
    src += [f"    a{k} = x[i, {k}]" for k in range(16)]
    for j in range(lines):
        d, s, t, u = j % 16, (7 * j + 3) % 16, (3 * j + 5) % 16, (5 * j + 1) % 16
        src.append(f"    a{d} = a{s} * {1.0 + j / lines:.6f} + math.sqrt(abs(a{t}) + 1.0) / (1.0 + a{u} * a{u})")
        if j % 25 == 24:
            src += [f"    if a{d} > a{s}:", f"        a{t} = -a{t}"]
    src.append("    out[i] = " + " + ".join(f"a{k}" for k in range(16)))
    return "\n".join(src) + "\n"


def reference_compile(ptxas: str | None, repeats: int = REFERENCE_REPEATS) -> dict:
    """NVVM (+ ptxas) of the reference kernel, ``repeats`` times: the least CPU and wall seconds."""
    import numba
    from numba import cuda

    ns = {"math": math, "cuda": cuda}
    exec(compile(reference_source(), "<tumble reference kernel>", "exec"), ns)
    sig = (numba.float64[::1], numba.float64[:, ::1])
    best = None
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        ptx, _ = cuda.compile_ptx(ns["_reference"], sig, cc=(9, 0))
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        if ptxas:
            proc, pwall, pcpu = run_ptxas(ptx, ptxas)
            if proc.returncode != 0:
                raise RuntimeError(f"ptxas failed on the reference kernel: {proc.stderr.strip()[-400:]}")
            wall += pwall
            cpu += pcpu
        if best is None or cpu < best["cpu_s"]:
            best = {"cpu_s": cpu, "s": wall, "ptx_bytes": len(ptx)}
    return best


def fake_device() -> None:
    """Without a device, numba's device-function compiler still asks the driver for the current
    device's compute capability: report sm_90 for the compile only."""
    from numba import cuda

    if not cuda.is_available():
        import numba.cuda.dispatcher as disp

        disp.get_current_device = lambda: types.SimpleNamespace(compute_capability=(9, 0))


def format_table(rows: list[dict]) -> str:
    head = f"{'kernel':<28} {'PTX kB':>8} {'NVVM s':>7} {'ptxas s':>7} {'regs':>5} {'spill st/ld B':>14} {'stack B':>8} {'occ.':>5}"
    lines = [head, "-" * len(head)]
    for r in rows:
        spill = f"{r.get('spill_stores', '-')}/{r.get('spill_loads', '-')}"
        occ = f"{r['occupancy']:.2f}" if "occupancy" in r else "-"
        lines.append(f"{r['kernel']:<28} {r['ptx_bytes'] / 1000:>8.0f} {r['nvvm_s']:>7.1f} "
                     f"{r.get('ptxas_s', float('nan')):>7.1f} {r.get('registers', '-'):>5} {spill:>14} "
                     f"{r.get('stack', '-'):>8} {occ:>5}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="tumble bench gpu-compile", description=__doc__.splitlines()[0])
    ap.add_argument("--scenes", default="deploy-cube@600",
                    help="comma-separated scene[@t_end] specs whose launches are compiled (default deploy-cube@600)")
    ap.add_argument("--only", default="", help="comma-separated kernel names to compile (default: all recorded)")
    ap.add_argument("--budget-registers", type=int, default=None, help="fail when a kernel uses more registers")
    ap.add_argument("--budget-spill", type=int, default=None, help="fail when a kernel spills more bytes")
    ap.add_argument("--budget-seconds", type=float, default=None,
                    help="fail when NVVM + ptxas of all kernels take longer [s]")
    ap.add_argument("--reference-repeats", type=int, default=REFERENCE_REPEATS,
                    help=f"compiles of the reference kernel, the least CPU time reported (default {REFERENCE_REPEATS}; 0: none)")
    ap.add_argument("--out", type=Path, default=Path("gpu-compile.json"), help="JSON result path")
    args = ap.parse_args(argv)
    os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
    why = nvvm_missing()
    if why:
        print(why, file=sys.stderr)
        return 2
    calls = record_launches([s for s in args.scenes.split(",") if s])
    fake_device()
    ptxas = ptxas_path()
    only = {s for s in args.only.split(",") if s}
    rows = []
    for key in sorted(calls):
        if only and key not in only:
            continue
        r = compile_one(key, calls[key], ptxas)
        rows.append(r)
        print(f"compiled {key}: {r}", flush=True)
    print(format_table(rows))
    total = sum(r["nvvm_s"] + r.get("ptxas_s", 0.0) for r in rows)
    total_cpu = sum(r["nvvm_cpu_s"] + r.get("ptxas_cpu_s", 0.0) for r in rows)
    print(f"NVVM + ptxas of {len(rows)} kernels: {total:.1f} s wall, {total_cpu:.1f} s CPU "
          f"(ptxas: {ptxas or 'not found'})")
    ref = {"cpu_s": None, "s": None}
    if args.reference_repeats > 0:
        ref = reference_compile(ptxas, args.reference_repeats)
        print(f"reference kernel ({REFERENCE_LINES} lines, least of {args.reference_repeats}): {ref['cpu_s']:.2f} s "
              f"CPU; the kernels took {total_cpu / ref['cpu_s']:.1f}x its CPU time")
    from benchmarks._common import save

    save("gpu-compile", {"scenes": args.scenes, "kernels": rows, "total_s": total, "total_cpu_s": total_cpu,
                         "reference_cpu_s": ref["cpu_s"], "reference_s": ref["s"], "recorded": sorted(calls)},
         path=args.out)
    bad = []
    for r in rows:
        if args.budget_registers is not None and r.get("registers", 0) > args.budget_registers:
            bad.append(f"{r['kernel']}: {r['registers']} registers > {args.budget_registers}")
        if args.budget_spill is not None and max(r.get("spill_stores", 0), r.get("spill_loads", 0)) > args.budget_spill:
            bad.append(f"{r['kernel']}: spills {r['spill_stores']}/{r['spill_loads']} B > {args.budget_spill}")
        if "ptxas_error" in r:
            bad.append(f"{r['kernel']}: ptxas failed: {r['ptxas_error']}")
    if args.budget_seconds is not None and total > args.budget_seconds:
        bad.append(f"NVVM + ptxas {total:.1f} s > {args.budget_seconds} s")
    for b in bad:
        print("OVER BUDGET:", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
