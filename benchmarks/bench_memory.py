"""``tumble bench memory``: peak memory of ``tumble run deploy-cube`` against the sample count.

Issue 17's acceptance figure for the streaming active set (seed 004 §2.7.3): with only ``--active``
sample slots in the tables and finished samples leaving in bulk, the peak resident set of a batch
must stay flat in N (within 10 % across N = 10³, 10⁴, 10⁵).

What is measured
----------------
Each N runs ``tumble run deploy-cube --samples N --out TMP --overwrite --no-progress`` (plus
``--active`` / ``--block`` when given) as a fresh ``python -c`` subprocess of this tree, one after
the other; the peak resident set size of that process is its ``ru_maxrss`` from ``os.wait4`` (what
``/usr/bin/time -v`` prints as "Maximum resident set size"), with its wall time and CPU time. An
untimed, unmeasured warm-up run of ``--warmup`` samples comes first, so that numba's compilation
(hundreds of MB of LLVM while it runs) is in the disk cache and no measured run compiles.

Reported (and stored in ``bench-results/memory.json`` or ``--out``): per N the peak RSS [MB],
wall and CPU seconds, trajectories per wall second; the spread ``max / min − 1`` of the peaks and
whether it is within ``--tolerance`` (default 10 %).

Large N take long: deploy-cube runs at ~100 trajectories/s on 2 cores, so N = 10⁵ is ~20 minutes.
``--samples 1000,10000`` measures fewer.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._common import machine_info, save

#: Issue 17: peak RSS within this fraction across N.
GOAL_SPREAD = 0.10

_RUN = "import sys; from tumble.entry import main; sys.exit(main())"


def run_once(repo: Path, n: int, out: Path, extra: list[str]) -> dict:
    """One ``tumble run deploy-cube`` subprocess: its peak RSS [MB], wall and CPU time [s]."""
    env = dict(os.environ, PYTHONPATH=str(repo))
    cmd = [sys.executable, "-c", _RUN, "run", "deploy-cube", "--samples", str(n), "--out", str(out), "--overwrite",
           "--no-progress", *extra]
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    text = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode not in (0, 3):
        raise SystemExit(f"tumble run --samples {n} failed ({p.returncode}):\n{text[-2000:]}")
    return {"samples": n, "peak_rss_mb": ru.ru_maxrss / 1024.0, "wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime,
            "trajectories_per_s": n / wall}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="tumble bench memory", description=__doc__.splitlines()[0])
    ap.add_argument("--samples", default="1000,10000,100000",
                    help="comma-separated sample counts (default 1000,10000,100000)")
    ap.add_argument("--active", type=int, default=None, help="--active of every run (default: tumble run's)")
    ap.add_argument("--block", type=int, default=None, help="--block of every run (default: tumble run's)")
    ap.add_argument("--warmup", type=int, default=1200, help="samples of the unmeasured warm-up run (default 1200)")
    ap.add_argument("--tolerance", type=float, default=GOAL_SPREAD, help="allowed spread of the peaks (default 0.10)")
    ap.add_argument("--out", type=Path, default=None, help="JSON result path (default bench-results/memory.json)")
    args = ap.parse_args(argv)
    try:
        counts = [int(x) for x in args.samples.split(",") if x.strip()]
    except ValueError:
        ap.error(f"--samples {args.samples!r}: must be comma-separated integers")
    if not counts or min(counts) < 1:
        ap.error("--samples: every count must be >= 1")
    extra = ([] if args.active is None else ["--active", str(args.active)]) + \
            ([] if args.block is None else ["--block", str(args.block)])
    repo = Path(__file__).resolve().parents[1]
    info = machine_info()
    print(f"machine: {info.get('cpu_model', info['processor'])}, {info['cpu_count']} cpus, numba threads "
          f"{info['numba_threads']}; load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="tumble-bench-memory-") as tmp:
        if args.warmup:
            w = run_once(repo, args.warmup, Path(tmp) / "warmup.zarr", extra)
            print(f"warm-up ({args.warmup} samples, numba compilation / cache loading; not compared): "
                  f"{w['wall_s']:.1f} s, peak {w['peak_rss_mb']:.0f} MB")
        for n in counts:
            r = run_once(repo, n, Path(tmp) / f"n{n}.zarr", extra)
            rows.append(r)
            print(f"  N = {n:>7}: peak RSS {r['peak_rss_mb']:7.1f} MB, wall {r['wall_s']:7.1f} s, CPU "
                  f"{r['cpu_s']:7.1f} s, {r['trajectories_per_s']:.1f} trajectories/s", flush=True)
    peaks = [r["peak_rss_mb"] for r in rows]
    spread = max(peaks) / min(peaks) - 1.0
    ok = spread <= args.tolerance
    print(f"peak RSS spread across N: {100 * spread:.1f} % ({'within' if ok else 'ABOVE'} the "
          f"{100 * args.tolerance:.0f} % goal)")
    payload = {"scene": "deploy-cube", "runs": rows, "spread": spread, "tolerance": args.tolerance,
               "within_tolerance": ok, "active": args.active, "block": args.block,
               "load_after": list(os.getloadavg())}
    path = save("memory", payload, path=args.out, machine=info)
    print(f"saved {path}")
    return payload


if __name__ == "__main__":  # pragma: no cover
    main()
