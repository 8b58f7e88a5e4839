"""``tumble bench facets``: facet-contact broadphase against JEOD's all-pairs loop, in the same run.

Two vehicles with ``--facets`` (default 1,000) facets each dock: box-shaped hulls (2 m cubes,
1,000 kg) whose faces carry a grid of point facets (spheres) and line facets (capsules along the
face), the chaser closing at 0.1 m/s with a small lateral offset and tumble rate, face to face, so
that about a hundred facet pairs touch at once. The same world runs twice:

* **broadphase** — :class:`systems.facets.contact.FacetContact` with bounding spheres per facet
  and body and a sort-and-sweep per sample (:mod:`systems.facets.broadphase`);
* **all-pairs** (the named peer, JEOD's ``Contact::check_contact``, seed 000 §3.4.2) — the static
  list of every matched, non-excluded facet pair (10⁶ for 2 × 1,000 facets) built at bind,
  checked at every derivative evaluation with a bounding-sphere test before the exact one.

Reported: median wall time of the run, the two modes timed A/B interleaved, the ratio all-pairs /
broadphase (goal ≥ 10×) of the medians and its spread over the interleaved pairs, pair candidates and exact narrowphase tests per derivative evaluation in
each mode, and the largest difference between the two runs' final states (the two modes find the
same contacts; only their summation order differs).
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import numpy as np

from benchmarks._common import machine_info, save
from components.contact import (LBF_PER_IN, LBF_S_PER_IN, PairInteractions, SpringInteraction, contact_surface,
                                line_facet, point_facet)
from components.rigid import rigid_body
from ecs import World
from systems.facets.contact import FacetContact
from systems.dynamics.integration import Integrator

HALF = 1.0          # hull half-size [m]
MASS = 1000.0       # [kg]
INERTIA = MASS * (2 * HALF) ** 2 / 6.0  # solid cube [kg m^2]


def hull_facets(n: int) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """``n`` facets on the six faces of a cube of half-size 1 m: (kind, point, axis).

    Each face carries a g × g grid (kinds alternating like a chessboard, line facets along the
    face); the ``ceil(n/6)`` facets nearest to each face centre are kept, the list cut to ``n``.
    """
    per_face = math.ceil(n / 6)
    g = math.ceil(math.sqrt(per_face))
    u = (np.arange(g) + 0.5) / g * 2 * HALF - HALF
    out = []
    for axis in range(3):
        for sign in (1.0, -1.0):
            t1, t2 = [a for a in range(3) if a != axis]
            face = []
            for i in range(g):
                for j in range(g):
                    p = np.zeros(3)
                    p[axis], p[t1], p[t2] = sign * HALF, u[i], u[j]
                    d = np.zeros(3)
                    d[t1] = 1.0
                    face.append(("line" if (i + j) % 2 else "point", p, d))
            face.sort(key=lambda f: float(np.hypot(f[1][t1], f[1][t2])))
            out.extend(face[:per_face])
    return out[:n]


def build_docking(*, facets: int = 1000, broadphase: bool = True, gap: float = 0.2, speed: float = 0.1,
                  samples_seed: int = 0) -> tuple[World, FacetContact]:
    """Two box vehicles with ``facets`` facets each, face to face ``gap`` apart, the chaser closing at ``speed``."""
    spacing = 2 * HALF / math.ceil(math.sqrt(math.ceil(facets / 6)))
    r_point, r_line, length = 0.45 * spacing, 0.35 * spacing, 0.6 * spacing
    w = World("docking")
    w.add_resource(PairInteractions()).register(
        "steel", "steel", SpringInteraction(k=20 * LBF_PER_IN, c=0.4 * LBF_S_PER_IN, mu=0.05))
    rng = np.random.default_rng(samples_seed)
    target = w.spawn(*rigid_body(mass=MASS, inertia=[INERTIA] * 3), contact_surface(), name="target")
    chaser = w.spawn(*rigid_body(mass=MASS, inertia=[INERTIA] * 3, position=(2 * HALF + gap, 0.05, 0.03),
                                 velocity=(-speed, 0.002, 0.0), omega=tuple(0.02 * rng.standard_normal(3))),
                     contact_surface(), name="chaser")
    for body in (target, chaser):
        for kind, p, d in hull_facets(facets):
            if kind == "point":
                w.spawn(point_facet(body, radius=r_point, point=p, material="steel"))
            else:
                w.spawn(line_facet(body, radius=r_line, length=length, point=p, axis=d, material="steel"))
    fc = w.add_system(FacetContact(broadphase=broadphase))
    w.add_system(Integrator("rk4"))
    return w, fc


def run_modes(facets: int, frames: int, dt: float, repeat: int) -> tuple[dict, dict, list[float]]:
    """Both modes timed A/B interleaved (broadphase, all-pairs, broadphase, ...: this machine drifts
    ±30 % over minutes, so each pair sees the same conditions): one untimed warm-up run each, then
    ``repeat`` timed ``World.run`` calls per mode (building and compiling the worlds are not timed).
    Returns each mode's record (median wall time) and the ratio all-pairs / broadphase of each pair."""
    ready = {bp: [build_docking(facets=facets, broadphase=bp) for _ in range(repeat + 1)] for bp in (True, False)}
    for worlds in ready.values():
        for w, _ in worlds:
            w.compile()
    times: dict[bool, list[float]] = {True: [], False: []}
    last = {}
    for k in range(repeat + 1):
        for bp in (True, False):
            w, fc = ready[bp][k]
            t0 = time.perf_counter()
            r = w.run(t_end=frames * dt, dt=dt, final=("body_position", "body_velocity", "body_omega"))
            if k:                           # the first run of each mode is the warm-up
                times[bp].append(time.perf_counter() - t0)
            last[bp] = (fc, r)
    out = {}
    for bp in (True, False):
        fc, r = last[bp]
        ev = max(fc.evaluations, 1)
        out[bp] = {"wall_s": statistics.median(times[bp]), "evaluations": fc.evaluations,
                   "pair_candidates_per_eval": float(fc.total_pair_candidates.sum()) / ev,
                   "narrowphase_tests_per_eval": float(fc.total_narrowphase_tests.sum()) / ev,
                   "static_pairs": fc.static_pair_count, "finals": r.finals}
    ratios = [a / b for a, b in zip(times[False], times[True])]
    return out[True], out[False], ratios


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="tumble bench facets", description=__doc__.split("\n\n")[0])
    ap.add_argument("--facets", type=int, default=1000, help="facets per vehicle (default 1000)")
    ap.add_argument("--frames", type=int, default=200, help="frames of 0.01 s (default 200: approach and contact)")
    ap.add_argument("--repeat", type=int, default=7, help="timed repetitions per mode, interleaved (median)")
    a = ap.parse_args(argv)
    dt = 0.01
    bp, ap_, ratios = run_modes(a.facets, a.frames, dt, a.repeat)
    diff = max(float(np.abs(bp["finals"][c] - ap_["finals"][c]).max()) for c in bp["finals"])
    out = {
        "scene": f"two box vehicles x {a.facets} facets, docking, {a.frames} frames of {dt} s, RK4",
        "broadphase": {k: v for k, v in bp.items() if k != "finals"},
        "all_pairs_peer": {k: v for k, v in ap_.items() if k != "finals"},
        "speedup_all_pairs_over_broadphase": ap_["wall_s"] / bp["wall_s"],
        "speedup_per_pair": {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios),
                             "pairs": len(ratios)},
        "narrowphase_ratio": ap_["pair_candidates_per_eval"] / max(bp["pair_candidates_per_eval"], 1e-300),
        "max_final_state_difference": diff,
        "goal": ">= 10x",
    }
    path = save("facets", out)
    cpu = machine_info().get("cpu_model", "?")
    print(f"facets: {a.facets} per vehicle, {bp['evaluations']} derivative evaluations per run ({cpu})")
    print(f"  broadphase : median {bp['wall_s']:.3f} s, {bp['pair_candidates_per_eval']:.0f} pair candidates, "
          f"{bp['narrowphase_tests_per_eval']:.0f} exact tests per evaluation")
    print(f"  all-pairs  : median {ap_['wall_s']:.3f} s, {ap_['pair_candidates_per_eval']:.0f} pair candidates, "
          f"{ap_['narrowphase_tests_per_eval']:.0f} exact tests per evaluation")
    print(f"  speed-up {out['speedup_all_pairs_over_broadphase']:.1f}x (goal >= 10x; interleaved pairs "
          f"{min(ratios):.1f}-{max(ratios):.1f}x over {len(ratios)}); "
          f"max final-state difference {diff:.2e}; saved {path}")
    return out


if __name__ == "__main__":  # pragma: no cover
    main()
