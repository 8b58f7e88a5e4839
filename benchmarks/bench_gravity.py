"""``tumble bench gravity``: polyhedron and voxel gravity against their peers (seed 004 §2.4).

1. Polyhedron throughput, in point·faces per second, on the same mesh (the 20,480-facet
   icosphere) and the same points, all cores for both: our bulk kernel
   (``eval_polyhedron_points``, Werner–Scheeres with precomputed edge and facet dyads) and our
   per-row kernel (``polyhedron_field``, the one the gravity system runs on CPU and GPU) against
   ESA's ``polyhedral_gravity`` (``GravityEvaluable``, parallel=True). Goal: ≥ 2×.
2. Voxel lookups per second against direct polyhedron evaluations per second, on a random
   non-convex 20,480-facet body, with the voxel size chosen (``choose_voxel_size``) for ≤ 1 %
   maximum relative surface error, at points where probes fly (up to 0.2 R above random facets,
   inside the grid). Goal: ≥ 10⁴×.
3. Figures (``--figures``, PNG under bench-results/): the surface error against the voxel size
   on a log-log plot for the seed's plain scheme and for the exterior continuation (Figs
   2.48–2.50), and the relative error of g and Δg voxelisations in the XY plane (Fig 2.47).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from benchmarks._common import machine_info, results_dir, median_time, save
from components.gravity import Polyhedron
from scenes.assets.star_meshes import bumpy_mesh, sphere_mesh
from scenes.assets.voxel import build_voxel_field, choose_voxel_size, relative_errors
from systems.gravity.kernels import (contains, eval_polyhedron_points, eval_polyhedron_points_rowwise, eval_voxel_points,
                                     evaluate)

RHO = 2000.0


def _points(poly: Polyhedron, n: int, seed: int) -> np.ndarray:
    """Points between 0.5 and 3 bounding radii from the CoM (inside, near and outside)."""
    rng = np.random.default_rng(seed)
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1)[:, None]
    return np.ascontiguousarray(poly.center_of_mass + d * rng.uniform(0.5, 3.0, (n, 1)) * poly.bounding_radius)


def polyhedron_throughput(points: int, repeat: int) -> dict:
    import polyhedral_gravity as pg

    v, f = sphere_mesh(1000.0, subdivisions=5)
    poly = Polyhedron(v, f, density=RHO)
    x = _points(poly, points, 1)
    kp = poly.kernel_params()
    out = np.empty((points, 11))
    out_row = np.empty((points, 11))
    ev = pg.GravityEvaluable(pg.Polyhedron((poly.vertices, poly.faces), RHO, pg.NormalOrientation.OUTWARDS,
                                           pg.PolyhedronIntegrity.DISABLE))
    t_ours = median_time(lambda: eval_polyhedron_points(x, *kp, out), repeat=repeat)
    t_row = median_time(lambda: eval_polyhedron_points_rowwise(x, *kp, out_row), repeat=repeat)
    res = []
    t_pg = median_time(lambda: res.append(ev(x, parallel=True)), repeat=repeat)
    ref = res[-1]
    g_ref = np.array([r[1] for r in ref])
    agree = float(np.max(np.linalg.norm(out[:, 1:4] - g_ref, axis=1) / np.linalg.norm(g_ref, axis=1)))
    work = points * poly.face_count
    return {"faces": poly.face_count, "points": points, "ours_s": t_ours, "ours_rowwise_s": t_row, "peer_s": t_pg,
            "ours_point_faces_per_s": work / t_ours, "ours_rowwise_point_faces_per_s": work / t_row,
            "peer_point_faces_per_s": work / t_pg, "ratio_ours_over_peer": t_pg / t_ours,
            "ratio_rowwise_over_peer": t_pg / t_row, "max_rel_g_difference": agree,
            "peer": f"polyhedral_gravity {pg.__version__} ({pg.__parallelization__}), GravityEvaluable parallel=True"}


def voxel_speedup(target: float, lookups: int, direct: int, repeat: int) -> dict:
    v, f = bumpy_mesh(1000.0, seed=3, subdivisions=5)
    poly = Polyhedron(v, f, density=RHO)
    t0 = time.perf_counter()
    choice = choose_voxel_size(poly, target, statistic="max")
    t_choose = time.perf_counter() - t0
    vox = choice.field
    # where probes fly: above random facets, up to 0.2 R out along the ray from the CoM
    rng = np.random.default_rng(2)
    c = poly.center_of_mass
    cen = poly.face_centroids[rng.integers(0, poly.face_count, lookups)]
    x = c + (cen - c) * (1.0 + rng.uniform(0.0, 0.2, (lookups, 1)) * poly.volumetric_radius
                         / np.linalg.norm(cen - c, axis=1)[:, None])
    x = np.ascontiguousarray(x)
    out = np.empty((lookups, 4))
    kp = vox.kernel_records()
    t_vox = median_time(lambda: eval_voxel_points(x, *kp, out), repeat=repeat)
    xd = np.ascontiguousarray(x[:direct])
    outd = np.empty((direct, 11))
    pk = poly.kernel_params()
    t_dir = median_time(lambda: eval_polyhedron_points(xd, *pk, outd), repeat=max(1, repeat // 2))
    rate_vox, rate_dir = lookups / t_vox, direct / t_dir
    return {"faces": poly.face_count, "target_max_surface_error": target, "spacing_m": choice.spacing,
            "spacing_over_radius": choice.spacing / poly.volumetric_radius, "grid_shape": list(vox.shape),
            "grid_MB": vox.values.nbytes / 1e6, "surface_error_max": choice.error.max,
            "surface_error_p99": choice.error.p99, "trials": choice.trials, "choose_s": t_choose,
            "lookups_per_s": rate_vox, "direct_evals_per_s": rate_dir, "ratio_lookup_over_direct": rate_vox / rate_dir,
            "lookups": lookups, "direct_points": direct}


def error_figures(etas, subdivisions: int) -> dict:
    """Figs 2.48–2.50 (surface error against voxel size) and Fig 2.47 (g vs Δg in the XY plane)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    v, f = bumpy_mesh(1000.0, seed=3, subdivisions=subdivisions)
    poly = Polyhedron(v, f, density=RHO)
    R = poly.volumetric_radius
    pts = poly.face_centroids
    g_ref = evaluate(poly, pts).acceleration
    study = {}
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(6.4, 8.0))
    for cont, style in ((False, "-"), (True, "--")):
        rows = []
        for eta in etas:
            vox = build_voxel_field(poly, eta * R, mode="g", continuation=cont)
            err = relative_errors(evaluate(vox, pts).acceleration, g_ref)
            rows.append((eta, err.max, err.p99))
            e = np.sort(err.errors)
            ax1.plot(e, np.linspace(0, 1, e.size), style, label=f"η={eta:g}{' cont.' if cont else ''}")
        arr = np.array(rows)
        slope = float(np.polyfit(np.log(arr[:, 0]), np.log(arr[:, 1]), 1)[0])
        key = "continued" if cont else "plain"
        study[key] = {"eta": arr[:, 0].tolist(), "max": arr[:, 1].tolist(), "p99": arr[:, 2].tolist(),
                      "slope_max": slope}
        ax2.loglog(arr[:, 0], arr[:, 1], "o" + style, label=f"{key}: max (slope {slope:.2f})")
        ax2.loglog(arr[:, 0], arr[:, 2], "s" + style, label=f"{key}: p99")
    ax1.set_xscale("log")
    ax1.axvline(0.01, color="k", ls=":")
    ax1.set_xlabel("relative surface gravity error")
    ax1.set_ylabel("CDF over facets")
    ax1.legend(fontsize=6, ncol=2)
    ax2.axhline(0.01, color="k", ls=":")
    ax2.set_xlabel("voxel size η = Δx / R")
    ax2.set_ylabel("relative surface gravity error")
    ax2.legend(fontsize=7)
    fig.suptitle(f"Voxelised g on a {poly.face_count}-facet non-convex body (cf. seed 004 Figs 2.48–2.50)",
                 fontsize=9)
    fig.tight_layout()
    out = results_dir()
    out.mkdir(parents=True, exist_ok=True)
    p1 = out / "gravity_voxel_error.png"
    fig.savefig(p1, dpi=120)
    plt.close(fig)

    # Fig 2.47: relative error of g and Δg voxelisations in the XY plane, one coarse grid
    h = 0.25 * R
    margin = 2.0 * poly.bounding_radius
    vg = build_voxel_field(poly, h, mode="g", margin=margin)
    vd = build_voxel_field(poly, h, mode="dg", margin=margin)
    L = 2.8 * poly.bounding_radius
    n = 121
    gx, gy = np.meshgrid(np.linspace(-L, L, n), np.linspace(-L, L, n))
    plane = np.stack([gx.ravel(), gy.ravel(), np.full(gx.size, poly.center_of_mass[2])], axis=1)
    outside = ~contains(poly, plane)
    ref = evaluate(poly, plane).acceleration
    eg = np.full(plane.shape[0], np.nan)
    ed = np.full(plane.shape[0], np.nan)
    eg[outside] = relative_errors(evaluate(vg, plane[outside]).acceleration, ref[outside]).errors
    ed[outside] = relative_errors(evaluate(vd, plane[outside]).acceleration, ref[outside]).errors
    fig, axs = plt.subplots(1, 3, figsize=(13, 4))
    ext = [-L, L, -L, L]
    panels = ((axs[0], np.log10(eg), "log10 error, g voxels"), (axs[1], np.log10(ed), "log10 error, Δg voxels"),
              (axs[2], np.log10(eg) - np.log10(ed), "log10(err g / err Δg): > 0 where Δg wins"))
    for ax, data, title in panels:
        im = ax.imshow(data.reshape(n, n), origin="lower", extent=ext, cmap="viridis")
        ax.set_title(title, fontsize=9)
        fig.colorbar(im, ax=ax, shrink=0.8)
    fig.suptitle(f"Voxel size {h:.0f} m (0.25 R), XY plane (cf. seed 004 Fig 2.47)", fontsize=9)
    fig.tight_layout()
    p2 = out / "gravity_voxel_plane.png"
    fig.savefig(p2, dpi=110)
    plt.close(fig)
    ok = outside & np.isfinite(eg) & np.isfinite(ed)
    study["plane"] = {"spacing_over_radius": 0.25, "median_error_g": float(np.median(eg[ok])),
                      "median_error_dg": float(np.median(ed[ok])),
                      "fraction_dg_better": float(np.mean(ed[ok] < eg[ok]))}
    study["figures"] = [str(p1), str(p2)]
    study["faces"] = poly.face_count
    return study


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(prog="tumble bench gravity", description=__doc__.splitlines()[0])
    p.add_argument("--points", type=int, default=400, help="points for the polyhedron throughput")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--target", type=float, default=0.01, help="max surface error of the voxel grid")
    p.add_argument("--lookups", type=int, default=1_000_000)
    p.add_argument("--direct", type=int, default=200, help="points for the direct polyhedron rate")
    p.add_argument("--figures", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--figure-subdivisions", type=int, default=4,
                   help="icosphere level of the figure body (4: 5,120 facets)")
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    poly = polyhedron_throughput(a.points, a.repeat)
    print(f"polyhedron, {poly['faces']} faces x {poly['points']} points: "
          f"ours {poly['ours_point_faces_per_s'] / 1e6:.1f} M "
          f"point*faces/s (per-row kernel {poly['ours_rowwise_point_faces_per_s'] / 1e6:.1f} M), "
          f"polyhedral_gravity {poly['peer_point_faces_per_s'] / 1e6:.1f} M: ratio {poly['ratio_ours_over_peer']:.2f}x "
          f"(per-row {poly['ratio_rowwise_over_peer']:.2f}x; goal >= 2); "
          f"max |dg|/|g| = {poly['max_rel_g_difference']:.1e}")
    vox = voxel_speedup(a.target, a.lookups, a.direct, a.repeat)
    print(f"voxel, {vox['faces']} faces, h = {vox['spacing_over_radius']:.3f} R, grid {vox['grid_shape']} "
          f"({vox['grid_MB']:.1f} MB), surface error max {100 * vox['surface_error_max']:.2f} % p99 "
          f"{100 * vox['surface_error_p99']:.2f} %: {vox['lookups_per_s'] / 1e6:.1f} M lookups/s vs "
          f"{vox['direct_evals_per_s']:.0f} direct evals/s: ratio {vox['ratio_lookup_over_direct']:.3g}x (goal >= 1e4)")
    fig = None
    if a.figures:
        fig = error_figures((0.4, 0.2, 0.1, 0.05), a.figure_subdivisions)
        for k in ("plain", "continued"):
            s = fig[k]
            print(f"surface error vs voxel size ({k}, {fig['faces']} faces): eta {s['eta']} max "
                  f"{[round(e, 5) for e in s['max']]}, log-log slope {s['slope_max']:.2f}")
        pl = fig["plane"]
        print(f"XY plane at h = 0.25 R: median error g {pl['median_error_g']:.2e}, dg {pl['median_error_dg']:.2e}; "
              f"dg better at {100 * pl['fraction_dg_better']:.0f} % of points; figures: {', '.join(fig['figures'])}")
    info = machine_info()
    print("machine:", ", ".join(f"{k}={v}" for k, v in info.items()))
    payload = {"polyhedron": poly, "voxel": vox, "figures": fig, "wall_s": time.perf_counter() - t0,
               "cache_dir": os.environ.get("TUMBLE_CACHE", "~/.cache/tumble")}
    path = save("gravity", payload)
    print(f"results: {path}")
    return payload


if __name__ == "__main__":
    main()
