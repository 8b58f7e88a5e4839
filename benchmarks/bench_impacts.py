"""``tumble bench impacts``: resolved Stronge collisions per second on the CPU.

10⁶ random single-vertex impacts (random boxes in random attitudes hitting at a corner, random
normals and velocities — every contact approaching —, e ∈ [0, 1], f ∈ [0, 2]) go through the
row kernel of :mod:`systems.probe_contact.collision` in one batch (``impact_rows``, all numba threads). The
named peer, measured in the same run on a subset: a straightforward per-impact integration of the
same impulse equations with scipy's ``solve_ivp`` (RK45 at the same relative tolerance, events for
sliding stop, compression end and the energetic end; stick solved directly, the reversal direction
by a scan + brentq) — the way one would write it without this project. Reported: medians, the
per-impact ratio, and the largest velocity difference between the two on the subset.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.spatial.transform import Rotation

from benchmarks._common import machine_info, median_time, save
from benchmarks.impact_reference import ReferenceGaveUp, box_inertia, stronge_reference
from systems.probe_contact.collision import (FLAG_REVERSAL, FLAG_SLIP, FLAG_STICK, IMPACT_RESOLVED, WORK_SIZE, impact_rows)


def random_impacts(n: int, seed: int = 0) -> dict:
    """Random approaching corner impacts of random boxes (arrays ready for ``impact_rows``)."""
    rng = np.random.default_rng(seed)
    dims = rng.uniform(0.05, 1.0, (n, 3))
    m = rng.uniform(0.5, 10.0, n)
    I = box_inertia(m, dims)
    r = (rng.integers(0, 2, (n, 3)) * 2 - 1) * dims / 2
    q = Rotation.random(n, random_state=seed + 1).as_quat(scalar_first=True)
    N = rng.normal(size=(n, 3))
    N /= np.linalg.norm(N, axis=1, keepdims=True)
    v = rng.normal(size=(n, 3))
    w = 3.0 * rng.normal(size=(n, 3))
    vc = v + Rotation.from_quat(q, scalar_first=True).apply(np.cross(w, r))
    N[np.einsum("ij,ij->i", vc, N) > 0] *= -1.0
    return dict(mass=m, inertia=I, attitude=q, point=r, normal=N, velocity=v, omega=w,
                restitution=rng.uniform(0, 1, n), friction=rng.uniform(0, 2, n), rolling=np.zeros((n, 3)))


def run_kernel(a: dict, rtol: float):
    n = a["mass"].shape[0]
    out = dict(velocity=np.empty((n, 3)), omega=np.empty((n, 3)), impulse=np.empty((n, 3)), p=np.empty(n),
               work=np.empty(n), status=np.empty(n, np.int8), flags=np.empty(n, np.int8), steps=np.empty(n, np.int32))
    scratch = np.zeros((n, WORK_SIZE))

    def go():
        impact_rows(n, scratch, a["mass"], a["inertia"], a["attitude"], a["point"], a["normal"], a["velocity"],
                    a["omega"], a["restitution"], a["friction"], a["rolling"], (1e-3, rtol, 10_000),
                    (out["velocity"], out["omega"], out["impulse"], out["p"], out["work"], out["status"], out["flags"],
                     out["steps"]))

    return go, out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="tumble bench impacts", description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="impacts in the batch (default 10^6)")
    ap.add_argument("--peer", type=int, default=200, help="impacts given to the scipy peer (default 200)")
    ap.add_argument("--rtol", type=float, default=1e-10, help="relative tolerance of both integrations")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    a = random_impacts(args.n)
    go, out = run_kernel(a, args.rtol)
    t0 = time.perf_counter()
    go()
    first = time.perf_counter() - t0
    t = median_time(go, repeat=args.repeat, warmup=0)
    ok = out["status"] == IMPACT_RESOLVED
    fl = out["flags"][ok]
    # the peer on the first `peer` impacts (same inputs), and the same impacts through our kernel
    k = min(args.peer, args.n)
    tp = []
    diff = 0.0
    failed = 0
    for i in range(k):
        s0 = time.perf_counter()
        try:      # the way one would write it: RK45 at the kernel's rtol, a coarse reversal scan
            res = stronge_reference(a["mass"][i], a["inertia"][i], a["attitude"][i], a["point"][i], a["normal"][i],
                                    a["velocity"][i], a["omega"][i], a["restitution"][i], a["friction"][i], eps=1e-9,
                                    method="RK45", rtol=args.rtol, atol=args.rtol * 1e-3, scan=721, max_calls=200_000)
        except ReferenceGaveUp:
            res = None
        tp.append(time.perf_counter() - s0)
        if res is None:
            failed += 1
            continue
        diff = max(diff, float(np.abs(res[0] - out["velocity"][i]).max()), float(np.abs(res[1] - out["omega"][i]).max()))
    peer_per_impact = float(np.median(tp))
    ours_per_impact = t / args.n
    payload = {
        "impacts": args.n, "rtol": args.rtol, "first_call_s": first, "median_s": t,
        "collisions_per_s": args.n / t, "resolved_fraction": float(ok.mean()),
        "mean_slip_steps": float(out["steps"][ok].mean()), "p99_slip_steps": float(np.percentile(out["steps"][ok], 99)),
        "fraction_stick": float(np.mean(fl & FLAG_STICK > 0)), "fraction_reversal": float(np.mean(fl & FLAG_REVERSAL > 0)),
        "fraction_slip_only": float(np.mean((fl & FLAG_SLIP > 0) & (fl & (FLAG_STICK | FLAG_REVERSAL) == 0))),
        "peer": "scipy.integrate.solve_ivp (RK45) per impact, same equations and rtol",
        "peer_impacts": k, "peer_failed": failed, "peer_median_s_per_impact": peer_per_impact,
        "peer_collisions_per_s": 1.0 / peer_per_impact,
        "ratio_ours_over_peer_throughput": peer_per_impact / ours_per_impact,
        "max_velocity_difference_vs_peer": diff,
    }
    path = save("impacts", payload)
    info = machine_info()
    print(f"machine: {info.get('cpu_model', info['processor'])}, {info['cpu_count']} cpus, "
          f"numba threads {info['numba_threads']}")
    print(f"tumble impact kernel : {args.n:,} impacts, median {t:.3f} s -> {args.n / t:,.0f} collisions/s "
          f"(first call incl. compile {first:.1f} s)")
    print(f"  resolved {ok.mean():.4f}; stick {payload['fraction_stick']:.3f}, reversal "
          f"{payload['fraction_reversal']:.4f}; mean slip steps {payload['mean_slip_steps']:.1f}")
    print(f"scipy solve_ivp peer : {k} impacts, median {peer_per_impact * 1e3:.2f} ms/impact -> "
          f"{1 / peer_per_impact:,.0f} collisions/s")
    print(f"ratio (ours / peer throughput): {payload['ratio_ours_over_peer_throughput']:,.0f}x; "
          f"max |Δv|, |Δω| vs peer on the subset: {diff:.2e}")
    print(f"saved {path}")
    return payload


if __name__ == "__main__":  # pragma: no cover
    main()
