"""``tumble bench terrain``: SDF query throughput and mesh-to-SDF build time.

1. Queries: trilinear SDF value + gradient (:func:`systems.terrain.sdf.eval_terrain`, one thread) at random
   points near a ~100k-face body, against ``trimesh.proximity.signed_distance`` (the named peer, value
   only) on the same mesh and points. Goal: >= 10⁴× per core.
2. Build: :func:`scenes.assets.sdf_build.sdf_from_mesh` of a 256³ grid from a ~100k-face mesh (the
   Itokawa-like body's marching-tetrahedra mesh) on all cores, against trimesh's signed distance on a
   random subsample of the same grid nodes, extrapolated to the full grid (trimesh on 16.7M nodes
   would take hours). Goal: <= 2 minutes on 2 cores. The far-field error of the default build
   (nodes more than 2 voxels from the surface) is measured against exact queries on a subsample.
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np

from benchmarks._common import machine_info, median_time, save


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="tumble bench terrain", description=__doc__.splitlines()[0])
    ap.add_argument("--grid", type=int, default=256, help="nodes along the longest side of the build grid")
    ap.add_argument("--mesh-resolution", type=int, default=105, help="marching-tetrahedra grid of the mesh "
                    "(105 gives ~100k faces)")
    ap.add_argument("--queries", type=int, default=1_000_000)
    ap.add_argument("--peer-points", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args(argv)

    import trimesh

    from components.terrain import TerrainSDF
    from scenes.assets import bodies
    from scenes.assets.sdf_build import mesh_signed_distance, sdf_from_mesh
    from systems.terrain import sdf

    body = bodies.small_body("itokawa", resolution=a.mesh_resolution)
    V, F = body.vertices, body.faces
    tm = trimesh.Trimesh(V, F, process=False)
    rng = np.random.default_rng(0)
    lo, hi = V.min(axis=0) - 10.0, V.max(axis=0) + 10.0
    pts = rng.uniform(lo, hi, size=(a.queries, 3))

    # 1. queries per second per core
    terrain = TerrainSDF(body.grid)
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        sdf.eval_terrain(terrain, pts[:1000])
        t_ours = median_time(lambda: sdf.eval_terrain(terrain, pts), repeat=a.repeat)
    finally:
        numba.set_num_threads(threads)
    peer_pts = pts[: a.peer_points]
    t_peer = median_time(lambda: trimesh.proximity.signed_distance(tm, peer_pts), repeat=1, warmup=1)
    q_ours = a.queries / t_ours
    q_peer = a.peer_points / t_peer
    queries = {"faces": int(len(F)), "ours_queries_per_s_1core": q_ours, "trimesh_queries_per_s": q_peer,
               "ratio": q_ours / q_peer, "goal_ratio": 1e4}

    # 2. build
    t0 = time.perf_counter()
    # a cubic grid of grid³ nodes around the body (the body's longest side plus 3 voxels each side)
    h = float(np.max(V.max(axis=0) - V.min(axis=0))) / (a.grid - 7)
    origin = 0.5 * (V.min(axis=0) + V.max(axis=0)) - 0.5 * h * (a.grid - 1)
    grid = sdf_from_mesh(V, F, origin=origin, spacing=h, shape=(a.grid,) * 3, cache=False)
    t_build = time.perf_counter() - t0
    nodes = grid.nodes().reshape(-1, 3)
    idx = rng.choice(len(nodes), 2000, replace=False)
    t0 = time.perf_counter()
    trimesh.proximity.signed_distance(tm, nodes[idx])
    t_sub = time.perf_counter() - t0
    exact = mesh_signed_distance(V, F, nodes[idx])
    err = np.abs(grid.values.reshape(-1)[idx] - exact)
    build = {"grid": list(grid.shape), "nodes": int(len(nodes)), "faces": int(len(F)), "threads": threads,
             "ours_s": t_build, "trimesh_extrapolated_s": t_sub * len(nodes) / len(idx),
             "ratio": t_sub * len(nodes) / len(idx) / t_build, "goal_s_on_2_cores": 120.0,
             "far_field_nodes_inexact_fraction": float(np.mean(err > 1e-9)),
             "far_field_max_error_voxels": float(err.max() / h),
             "sign_errors": int(np.sum(np.sign(exact) != np.sign(grid.values.reshape(-1)[idx])))}
    out = {"queries": queries, "build": build}
    print(f"queries: ours {q_ours:,.0f}/s on 1 core (value+gradient), trimesh {q_peer:,.0f}/s: "
          f"{q_ours / q_peer:,.0f}x (goal 1e4x), mesh {len(F)} faces")
    print(f"build {grid.shape} from {len(F)} faces: {t_build:.1f} s on {threads} threads; trimesh extrapolated "
          f"{build['trimesh_extrapolated_s']:.0f} s ({build['ratio']:.0f}x); far field inexact "
          f"{build['far_field_nodes_inexact_fraction']:.2%} of nodes, max {build['far_field_max_error_voxels']:.3f} "
          f"voxel, sign errors {build['sign_errors']}")
    save("terrain", {**out, "machine": machine_info()})
    return out


if __name__ == "__main__":  # pragma: no cover
    main()
