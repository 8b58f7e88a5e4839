"""Explicit polyhedral rocks in the terrain distance (seed 004 §2.3.1, eqs 2.22–2.23).

References, each independent of the code under test:

* rock distances: trimesh's closest points on each rock mesh (outside) and numpy face planes
  (inside; exact for a convex solid), minimised over every rock;
* the broadphase: the brute-force minimum over every rock (same convex kernel, no culling), which
  it must equal bit for bit below ``reach``;
* the generator: scipy.stats (truncated Pareto law: KS test and a maximum-likelihood exponent;
  uniform sink ratios), the closed-form area of a spherical cap for the Poisson count of eq 2.22;
* the terrain union: ``min`` of the analytic base distance and the brute-force rock distance,
  central finite differences for the gradient;
* deployment: the exact fall line of a sphere probe released above a rock's highest vertex.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import numpy as np
import pytest
import trimesh
from scipy import optimize, stats

from components.contact_params import ContactParams
from components.deploy import DeploySettings, DeployTarget
from components.gravity import PointMass
from components.status import Status
from components.terrain import ConvexPolyhedra, RockField, TerrainSDF, sdf_plane, sdf_sphere
from ecs.errors import InputError
from scenes.assets import noise as nz
from scenes.assets.mass_properties import MassProperties
from scenes.assets.probes import sphere_probe
from systems.terrain import sdf
from sim_helpers import run_simulated

S_MIN, S_MAX, ALPHA, K_ROCKS = 0.05, 0.5, 2.8, 14.0   # Table 4.2 sizes and power index, §4.1's K
ROOT = Path(__file__).resolve().parents[1]


def _reference_distance(rf: RockField, p: np.ndarray) -> np.ndarray:
    """min over all rocks of the signed distance: trimesh closest point outside, face planes inside."""
    ref = np.full(len(p), np.inf)
    for k in range(rf.count):
        V, F = rf.rock(k)
        m = trimesh.Trimesh(V, F, process=False)
        _, dist, _ = trimesh.proximity.closest_point(m, p)
        plane = np.max(np.einsum("pfk,fk->pf", p[:, None, :] - V[F[:, 0]][None], m.face_normals), axis=1)
        ref = np.minimum(ref, np.where(plane < 0.0, plane, dist))
    return ref


@pytest.fixture(scope="module")
def plane_field():
    """Rocks on the plane z = 0 over a 6 m disc (~1500 rocks)."""
    return nz.terrain_rocks(TerrainSDF(sdf_plane()), centre=(0.0, 0.0, 0.3), region_radius=6.0, seed=7)


# --------------------------------------------------------------------------------------------------
# distances
# --------------------------------------------------------------------------------------------------


def test_rock_distance_matches_trimesh():
    """Signed distance of the rock field = independent per-rock mesh distances, inside and outside."""
    rf = nz.terrain_rocks(TerrainSDF(sdf_sphere(20.0)), centre=(0.0, 0.0, 25.0), region_radius=1.0, seed=4)
    assert 20 < rf.count < 80
    rng = np.random.default_rng(1)
    k = rng.integers(rf.count, size=1500)
    p = rf.centre[k] + rng.normal(size=(1500, 3)) * rf.size[k, None] * 0.4
    d, g = sdf.rock_points(rf, p)
    ref = _reference_distance(rf, p)
    assert 0.1 < np.mean(ref < 0) < 0.5 and np.all(ref < rf.reach)   # both sides, all in the exact range
    # both are float64 closest-point computations on the same vertices (coordinates ~20 m): measured
    # 8e-17 m; 1e-12 of the rock size (or of the distance) leaves room for other platforms' rounding
    assert np.all(np.abs(d - ref) <= 1e-12 * np.maximum(np.abs(ref), rf.size[k]))
    assert np.allclose(np.linalg.norm(g, axis=1), 1.0, atol=1e-12)


def test_distance_on_rock_vertices_and_edges(plane_field):
    """Points exactly on a rock (its vertices, edge midpoints): distance 0 to rounding, a unit normal,
    no 0/0 (a probe vertex projected onto a rock corner lands there bit for bit)."""
    keep = []  # rocks whose bounding spheres do not overlap: every point below is on one rock only
    for k in range(plane_field.count):
        c, r = plane_field.centre, plane_field.radius
        if all(np.linalg.norm(c[k] - c[j]) > r[k] + r[j] for j in keep):
            keep.append(k)
    rf = RockField.from_shapes(plane_field.shapes, plane_field.position[keep], plane_field.attitude[keep],
                               size=plane_field.size[keep], polyhedron=plane_field.polyhedron[keep])
    assert rf.count > 300
    T = rf.triangles
    p = np.vstack([rf.vertices, 0.5 * (rf.vertices[T[:, 0]] + rf.vertices[T[:, 1]])])
    for base in (None, np.full(len(p), 10.0)):
        d, g = sdf.rock_points(rf, p, base, None if base is None else np.tile([0.0, 0.0, 1.0], (len(p), 1)))
        # on the surface: only the rounding of the face planes (coordinates ~6 m, rocks ~0.1 m)
        assert np.all(np.abs(d) < 1e-14) and np.allclose(np.linalg.norm(g, axis=1), 1.0, atol=1e-12)


def test_broadphase_equals_brute_force(plane_field):
    """Culled union = brute force over every rock, bitwise below reach; a lower bound above."""
    rf = plane_field
    assert rf.count > 1000
    rng = np.random.default_rng(2)
    p = np.vstack([rng.uniform([-6.5, -6.5, -0.4], [6.5, 6.5, 0.6], size=(1500, 3)),   # among the rocks
                   rng.uniform([-7, -7, 0.6], [7, 7, 3.0], size=(300, 3)),              # above, up to > reach
                   rf.centre[:200] + 1e-3 * rng.normal(size=(200, 3))])                  # deep inside rocks
    for base in (None, p[:, 2]):                      # rocks alone, and united with the plane z = 0
        bg = None if base is None else np.tile([0.0, 0.0, 1.0], (len(p), 1))
        d, g = sdf.rock_points(rf, p, base, bg)
        d0, g0 = sdf.rocks_brute_points(rf, p, base, bg)
        ex = d0 < rf.reach
        assert ex.sum() > 1500 and np.any(d0 < 0)
        assert np.array_equal(d[ex], d0[ex]) and np.array_equal(g[ex], g0[ex])
        # beyond reach: the documented bound min(d, max(reach, d_box)): never above the truth
        assert np.all(d[~ex] <= d0[~ex]) and np.all(d[~ex] >= rf.reach)


def test_broadphase_finds_far_centred_rocks():
    """Big rocks in a grid of tiny cells: rocks whose centres lie many cells away still win."""
    rng = np.random.default_rng(3)
    ico_v, ico_f = nz.icosahedron(1.0)
    K = 60
    size = np.where(np.arange(K) < 8, 2.0, 0.04)               # 8 boulders, 52 pebbles
    verts = [ico_v * s + 0.1 * s * rng.normal(size=ico_v.shape) for s in size]
    from scipy.spatial import ConvexHull

    pv, pt, ps, nv = [], [], [0], 0
    for v in verts:
        h = ConvexHull(v)
        f = nz._outward(v, h.simplices)
        pv.append(v)
        pt.append(f + nv)
        nv += len(v)
        ps.append(ps[-1] + len(f))
    shapes = ConvexPolyhedra(np.concatenate(pv), np.concatenate(pt), np.array(ps), np.zeros(K))
    pos = rng.uniform(-3, 3, size=(K, 3))
    q = rng.normal(size=(K, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    rf = RockField.from_shapes(shapes, pos, q, size=size, cell=0.12, reach=0.5)   # boulder radius ~ 10 cells
    assert rf.max_radius > 8 * rf.cell
    # points just outside and inside the boulders' surfaces: their centres are ~10 cells away
    k = rng.integers(8, size=600)
    V = rf.vertices[rf.triangles[rf.tri_start[k], 0]]
    p = V + (V - rf.centre[k]) * rng.uniform(-0.3, 0.3, size=(600, 1))
    d, g = sdf.rock_points(rf, p)
    d0, g0 = sdf.rocks_brute_points(rf, p)
    assert np.all(d0 < rf.reach) and np.array_equal(d, d0) and np.array_equal(g, g0)
    assert np.any(d0 < 0) and np.any(d0 > 0.1)


# --------------------------------------------------------------------------------------------------
# the terrain union
# --------------------------------------------------------------------------------------------------


def test_terrain_union_min_and_gradient():
    """TerrainSDF with rocks: d = min(base, rocks) exactly, gradient of the winner, unit and equal to
    central differences away from the union's seam; 1-Lipschitz everywhere, the bound included."""
    R = 20.0
    base = TerrainSDF(sdf_sphere(R))
    rf = nz.terrain_rocks(base, centre=(0.0, 0.0, 30.0), region_radius=3.0, seed=5)
    terr = TerrainSDF(sdf_sphere(R), rocks=rf)
    rng = np.random.default_rng(4)
    u = rng.normal(size=(3000, 2)) * 1.5
    z = np.sqrt(R * R - np.sum(u * u, axis=1)) + rng.uniform(-0.3, 2.5, size=3000)
    p = np.column_stack([u, z])
    d, g = sdf.eval_terrain(terr, p)
    db = np.linalg.norm(p, axis=1) - R
    gb = p / np.linalg.norm(p, axis=1, keepdims=True)
    dr, gr = sdf.rocks_brute_points(rf, p)
    ex = np.minimum(db, dr) < rf.reach
    assert ex.sum() > 2000 and np.mean(dr[ex] < db[ex]) > 0.2
    assert np.array_equal(d[ex], np.minimum(db, dr)[ex])
    win = np.where((dr < db)[:, None], gr, gb)
    assert np.allclose(g[ex], win[ex], rtol=0, atol=1e-15)
    # away from the seam (|db - dr| > 1e-3) and outside every solid, central differences of step
    # 1e-6 m: truncation ~ h² |∇²d| (curvature radius >= ~1e-3 m here) and rounding 1e-16 / h
    sel = ex & (np.abs(db - dr) > 1e-3) & (d > 1e-3) & (d < rf.reach - 1e-3)
    assert sel.sum() > 1000
    h = 1e-6
    fd = np.column_stack([(sdf.eval_terrain(terr, p[sel] + h * e)[0] - sdf.eval_terrain(terr, p[sel] - h * e)[0]) / (2 * h)
                          for e in np.eye(3)])
    assert np.max(np.abs(fd - g[sel])) < 1e-5
    assert np.allclose(np.linalg.norm(g[ex & (d > 0)], axis=1), 1.0, atol=1e-12)
    # 1-Lipschitz (a union of distances, and the far bound min(d, max(reach, d_box))): random pairs
    q = p + rng.normal(size=p.shape) * 0.5
    dq, _ = sdf.eval_terrain(terr, q)
    assert np.all(np.abs(dq - d) <= np.linalg.norm(q - p, axis=1) * (1 + 1e-12) + 1e-12)


def test_no_rock_field_is_the_bare_terrain(plane_field):
    """An empty rock field and no rock field give the bare terrain's bits."""
    p = np.random.default_rng(5).uniform(-3, 3, size=(500, 3))
    empty = RockField(np.zeros((0, 3)), np.zeros((0, 3), np.int64), [0], np.zeros((0, 3)), np.zeros(0))
    d0, g0 = sdf.eval_terrain(TerrainSDF(sdf_plane()), p)
    d1, g1 = sdf.eval_terrain(TerrainSDF(sdf_plane(), rocks=empty), p)
    assert np.array_equal(d0, d1) and np.array_equal(g0, g1)
    assert sdf.terrain_args(TerrainSDF(sdf_plane()))[20] == 0
    assert sdf.terrain_args(TerrainSDF(sdf_plane(), rocks=plane_field))[20] == 1


GPU_SCRIPT = textwrap.dedent(
    """
    import json, numpy as np
    from components.terrain import TerrainSDF, sdf_sphere
    from ecs.kernels import launch_rows
    from scenes.assets.noise import terrain_rocks
    from systems.terrain import sdf
    rf = terrain_rocks(TerrainSDF(sdf_sphere(20.0)), centre=(0, 0, 25), region_radius=1.0, seed=4)
    terr = TerrainSDF(sdf_sphere(20.0), rocks=rf)
    rng = np.random.default_rng(0)
    k = rng.integers(rf.count, size=24)
    above = rf.centre[k] * (1.0 + rng.uniform(0.0, 0.02, size=(24, 1))) + rng.normal(size=(24, 3)) * 0.05
    pts = np.vstack([above, [[0, 0, 23.0], [0, 0, 40.0], [30.0, 0, 0]]])   # near rocks; beyond reach; far
    args = sdf.terrain_args(terr)
    res = {}
    for backend in ("cpu", "gpu"):
        d = np.zeros(len(pts)); g = np.zeros((len(pts), 3))
        launch_rows(backend, sdf.eval_terrain_rows, sdf.eval_terrain_row, len(pts), pts, d, g, args)
        res[backend] = np.column_stack([d, g])
    wins = int(np.sum(res["gpu"][:, 0] < np.linalg.norm(pts, axis=1) - 20.0))
    print(json.dumps([float(np.max(np.abs(res["cpu"] - res["gpu"]))), wins]))
    """
)


def test_cuda_simulator_matches_cpu():
    """The rock union's GPU twin (CUDA simulator: the same Python source) equals the CPU build."""
    # float64 in both; only the compiled build's operation order can differ: a few ulps of O(1-10) values
    diff, wins = run_simulated(GPU_SCRIPT, strict=False)
    assert diff < 1e-11 and wins >= 8     # rocks won at some points (and the bound at the far ones)


# --------------------------------------------------------------------------------------------------
# the generator (eqs 2.22–2.23)
# --------------------------------------------------------------------------------------------------


def test_generator_statistics_on_a_curved_surface():
    """Sphere R = 10 m, disc of 8 m: the rocks cover a spherical cap of area 2πR h, h = R - √(R² - ρ²)
    (25 % more than the disc: the slope thinning must count surface, not disc, area)."""
    R, rho = 10.0, 8.0
    rf = nz.terrain_rocks(TerrainSDF(sdf_sphere(R)), centre=(0.0, 0.0, 11.0), region_radius=rho, seed=11,
                          rocks_per_m2=K_ROCKS)
    area = 2.0 * math.pi * R * (R - math.sqrt(R * R - rho * rho))
    # eq 2.22 between s_min and s_max: K (1 - (s_min/s_max)^α) per m², a Poisson count: 4σ
    mean = area * K_ROCKS * (1.0 - (S_MIN / S_MAX) ** ALPHA)
    assert abs(rf.count - mean) < 4.0 * math.sqrt(mean)
    assert abs(rf.count - mean * math.pi * rho ** 2 / area) > 8.0 * math.sqrt(mean)   # disc area is wrong
    # sizes: the truncated Pareto law of eq 2.23 (KS), and its maximum-likelihood exponent
    law = stats.truncpareto(b=ALPHA, c=S_MAX / S_MIN, scale=S_MIN)
    assert stats.kstest(rf.size, law.cdf).pvalue > 0.01
    s = rf.size

    def nll(a):
        return -(len(s) * math.log(a) + len(s) * a * math.log(S_MIN) - (a + 1) * np.sum(np.log(s))
                 - len(s) * math.log(1.0 - (S_MIN / S_MAX) ** a))

    a_hat = optimize.minimize_scalar(nll, bounds=(1.0, 5.0), method="bounded").x
    # the MLE's standard error 1/√(n I(α)), Fisher information of the truncated law
    # I(α) = 1/α² - r^α ln²r / (1 - r^α)², r = s_min/s_max (≈ 0.05 here): 4σ
    r = S_MIN / S_MAX
    info = 1.0 / ALPHA ** 2 - r ** ALPHA * math.log(r) ** 2 / (1.0 - r ** ALPHA) ** 2
    assert abs(a_hat - ALPHA) < 4.0 / math.sqrt(len(s) * info)
    # sinking: the centre lies r s below its surface point along the normal (radial for a sphere),
    # r ~ U(-0.4, 0.25) (Table 4.2)
    r = -(np.linalg.norm(rf.centre, axis=1) - R) / rf.size
    assert r.min() >= -0.4 - 1e-9 and r.max() <= 0.25 + 1e-9
    assert stats.kstest(r, stats.uniform(loc=-0.4, scale=0.65).cdf).pvalue > 0.01
    # placement: surface points (radial projections) over the disc; rocks enclose their sizes
    foot = rf.centre * (R / np.linalg.norm(rf.centre, axis=1))[:, None]
    assert np.all(np.hypot(foot[:, 0], foot[:, 1]) <= rho * (1 + 1e-9)) and np.all(foot[:, 2] > 0)
    # icosahedron radius s/2 plus Gaussian offsets of σ = 0.1 s per axis (|δ| < 6σ w.p. ~1 - 1e-7)
    assert np.all(rf.radius <= (0.5 + 6 * 0.1 * math.sqrt(3)) * rf.size)


def test_generator_is_deterministic_and_reseeded_per_tile(plane_field):
    kw = dict(centre=(0.0, 0.0, 0.3), seed=7)
    a = nz.terrain_rocks(TerrainSDF(sdf_plane()), region_radius=6.0, **kw)
    assert np.array_equal(a.vertices, plane_field.vertices) and np.array_equal(a.triangles, plane_field.triangles)
    b = nz.terrain_rocks(TerrainSDF(sdf_plane()), region_radius=6.0, centre=(0.0, 0.0, 0.3), seed=8)
    assert b.count != a.count or not np.array_equal(b.centre, a.centre)
    # a smaller region holds exactly the rocks of the larger one that stand on it (tiles reseeded)
    small = nz.terrain_rocks(TerrainSDF(sdf_plane()), region_radius=2.5, **kw)
    foot = a.centre[:, :2]
    inside = np.hypot(foot[:, 0], foot[:, 1]) <= 2.5
    assert small.count == inside.sum() > 100
    assert np.array_equal(np.sort(small.centre, axis=0), np.sort(a.centre[inside], axis=0))


# --------------------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------------------


def _one_rock():
    v, f = nz.icosahedron(1.0)
    return v, f


def test_bad_input_names_field_value_rule():
    v, f = _one_rock()
    ok = dict(vertices=v, triangles=f, tri_start=[0, 20], centre=[[0.0, 0.0, 0.0]], size=[1.0])
    RockField(**ok)
    cases = [
        (dict(size=[-1.0]), "RockField.size[0]", "> 0"),
        (dict(size=[float("nan")]), "RockField.size[0]", "finite"),
        (dict(vertices=np.where(np.arange(12)[:, None] == 3, np.nan, v)), "RockField.vertices[3]", "finite"),
        (dict(tri_start=[0, 19]), "RockField.tri_start", "triangle count 20"),
        (dict(tri_start=[0, 20, 20], centre=[[0.0] * 3] * 2, size=[1.0, 1.0]), "rock 1", ">= 4 triangles"),
        (dict(triangles=f[:, ::-1]), "RockField rock 0", "convex and outward wound"),
        (dict(vertices=v * np.array([1.0, 1.0, 1.0]) + np.where(np.arange(12)[:, None] == 0, -0.6 * v[0], 0.0)),
         "RockField rock 0", "convex"),
        (dict(cell=0.0), "RockField.cell", "> 0"),
        (dict(reach=float("nan")), "RockField.reach", "> 0"),
        (dict(triangles=f + 1), "RockField.triangles", "must index the 12 vertices"),
    ]
    for change, field, rule in cases:
        with pytest.raises(InputError) as e:
            RockField(**{**ok, **change})
        assert field in e.value.field and rule in e.value.rule, (change, e.value)
    ter = TerrainSDF(sdf_plane())
    gen = [(dict(s_min=0.5, s_max=0.5), "terrain_rocks.s_min", "< s_max"),
           (dict(s_min=-0.1), "terrain_rocks.s_min", "> 0"),
           (dict(region_radius=0.0), "terrain_rocks.region_radius", "> 0"),
           (dict(sigma=-0.1), "terrain_rocks.sigma", ">= 0"),
           (dict(sink_min=0.3, sink_max=0.2), "terrain_rocks.sink_min", "<= sink_max"),
           (dict(alpha=float("nan")), "terrain_rocks.alpha", "> 0"),
           (dict(k0=1e-3), "terrain_rocks.rocks_per_m2/k0", "exactly one")]
    for change, field, rule in gen:
        with pytest.raises(InputError) as e:
            nz.terrain_rocks(ter, **{"centre": (0, 0, 0), "region_radius": 1.0, **change})
        assert e.value.field == field and rule in e.value.rule, (change, e.value)
        assert str(e.value).startswith(f"{field} = ")
    with pytest.raises(InputError, match="TerrainSDF.rocks"):
        TerrainSDF(sdf_plane(), rocks="many")
    from scenes.deploy import itokawa_target

    with pytest.raises(InputError) as e:
        itokawa_target(rocks="granite", gravity="point_mass", resolution=8)
    assert e.value.field == "rocks" and e.value.value == "granite" and "'polyhedral'" in e.value.rule


# --------------------------------------------------------------------------------------------------
# deployment
# --------------------------------------------------------------------------------------------------


def test_sphere_dropped_on_a_rock_top_hits_at_its_height():
    """A small sphere released at rest straight above a rock's highest vertex (non-rotating point-mass
    body): the first impact puts its centre r_p above that vertex (the vertex is the nearest rock
    point on the fall line), to event_tol × speed + 1e-6 m; the reference fall line is checked with
    the independent mesh distance."""
    from scenes.deploy import deployment_scene

    R, mu, rp = 200.0, 2.5, 0.02
    base = TerrainSDF(sdf_sphere(R))
    rf = nz.terrain_rocks(base, centre=(0.0, 0.0, 250.0), region_radius=2.0, seed=9)
    # the rock standing highest above the ground; its top along the radial line through that top
    tops = []
    for k in range(rf.count):
        u = rf.centre[k] / np.linalg.norm(rf.centre[k])
        for _ in range(5):
            top = rf.top(k, u)
            u = top / np.linalg.norm(top)
        tops.append((np.linalg.norm(top) - R, k, top, u))
    h, k, top, u = max(tops, key=lambda t: t[0])
    assert h > 0.1
    V, _ = rf.rock(k)
    assert np.sort(V @ u)[-2] < top @ u - 1e-3    # a strict top along the fall line
    # reference: on the fall line, the nearest rock/ground point of the centre r_p above the top is
    # the top itself (independent mesh distances)
    c = top + rp * u
    ref = min(_reference_distance(rf, c[None])[0], np.linalg.norm(c) - R)
    assert abs(ref - rp) < 1e-12
    line = top + np.linspace(rp * 1.001, 1.0, 200)[:, None] * u
    assert np.all(np.minimum(_reference_distance(rf, line), np.linalg.norm(line, axis=1) - R) > rp)
    drop = 1.0
    target = DeployTarget(gravity=PointMass(mu=mu), terrain=TerrainSDF(sdf_sphere(R), rocks=rf),
                          rotation=np.zeros(3))
    settings = DeploySettings(t_cap=600.0)
    sc = deployment_scene("drop", "drop", target=target, shapes=[sphere_probe(rp)],
                          shape_mass=[MassProperties(mass=1.0, com=np.zeros(3), inertia=0.4 * rp * rp * np.eye(3))],
                          contact=ContactParams(restitution=0.3, friction=0.5), position=top + (rp + drop) * u,
                          position_sigma3=[0, 0, 0], velocity=[0, 0, 0], velocity_sigma3=[0, 0, 0],
                          random_attitude=False, settings=settings, frame=600.0)
    w = sc.world
    w.compile(samples=1)
    res = w.run(t_end=sc.t_end, dt=sc.dt, final=("probe_first_impact_time",))
    x = res.events["position"][0, 0]
    v = np.linalg.norm(res.events["velocity_before"][0, 0])
    assert res.finals["probe_first_impact_time"][0, 0] > 0 and v > 0
    # the impact normal is the rock's (the top vertex: along the fall line), not the ground's
    assert np.dot(res.events["normal"][0, 0], u) > 1 - 1e-9
    assert abs(np.linalg.norm(x) - np.linalg.norm(c)) <= settings.event_tol * v + 1e-6
    assert np.linalg.norm(x - c) <= settings.event_tol * v + 1e-6


def test_deploy_cube_on_polyhedral_rocks_runs(tmp_path):
    """deploy-cube with rocks='polyhedral' end to end: the probes settle (or time out) without
    sinking 1 mm into the united terrain, and some impacts are on rocks."""
    import xarray as xr

    from tumble import run_batch
    from scenes.deploy import build_cube

    # K = 56 rocks/m² (one of §4.3's tested densities): ~30 % of the ground under rocks, so that the
    # few impacts of three samples meet some
    sc = build_cube(gravity="point_mass", rocks="polyhedral", rocks_per_m2=56.0, rock_region=20.0, t_cap=20000.0,
                    frame=600.0)
    out = run_batch(sc, samples=3, out=tmp_path / "r.zarr", seed=3)
    ds = xr.open_zarr(out, group="final")
    assert np.all(np.isin(ds["status"].values, [Status.SETTLED, Status.TIMED_OUT]))
    assert float(ds["probe_max_penetration"].max()) < 1e-3
    ev = xr.open_zarr(out, group="events")
    pts = ev["point"].values.reshape(-1, 3)
    pts = pts[np.all(np.isfinite(pts), axis=1)]
    terrain = sc.world.resource(DeployTarget).terrain
    dr, _ = sdf.rock_points(terrain.rocks, pts)
    db, _ = sdf.eval_terrain(TerrainSDF(terrain.base), pts)
    assert len(pts) > 5 and np.sum(dr < db) >= 1       # contact points where a rock is the surface
    assert np.all(np.abs(np.minimum(dr, db)) < 1e-3)    # every contact point is on the united surface
