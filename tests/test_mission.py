"""Missions set up from the public API and from -p: the README's 12-line lander, checked against
independent computations (trimesh for the release altitude, the spin and GM closed forms)."""

import math
import pathlib
import re

import numpy as np
import pytest
import trimesh
import xarray as xr
import zarr

import tumble
from systems.terrain.sdf import eval_terrain

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _mission_source():
    src = next(b for b in re.findall(r"```python\n(.*?)```", README, flags=re.S) if "release_above" in b)
    assert len(src.strip().splitlines()) <= 30
    return src


@pytest.fixture(scope="module")
def mission_store(tmp_path_factory):
    d = tmp_path_factory.mktemp("mission")
    (d / "lander.py").write_text(_mission_source())
    return tumble.run_batch(str(d / "lander.py"), samples=6, out=d / "lander.zarr")


def test_readme_mission_runs_and_is_set_up_as_written(mission_store):
    attrs = zarr.open_group(mission_store, mode="r").attrs
    target = next(r for r in attrs["resources"] if r["type"] == "DeployTarget")
    # 7.6 h retrograde: spin about -z at 2 pi / 7.6 h
    assert target["rotation"][:2] == [0.0, 0.0]
    assert target["rotation"][2] == pytest.approx(-2 * math.pi / (7.6 * 3600), rel=1e-15)
    scene = xr.open_zarr(mission_store, group="scene").load()
    v, f = scene.target_vertices.values, scene.target_faces.values
    extent = v.max(axis=0) - v.min(axis=0)
    np.testing.assert_allclose(extent, [500.0, 500.0, 440.0], rtol=1e-9)     # 500 x 440 m
    inputs = xr.open_zarr(mission_store, group="inputs").load()
    final = xr.open_zarr(mission_store, group="final").load()
    assert (final.status.values == 2).all()                                   # every box settles
    e = inputs.contact_terrain.values[:, 0]
    fr = inputs.contact_terrain.values[:, 1]
    assert ((0.4 <= e) & (e < 0.6)).all() and ((0.4 <= fr) & (fr < 0.8)).all()
    assert final.probe_max_penetration.values.max() < 1e-3


def test_release_point_is_40_m_above_the_surface_at_latitude_minus_22():
    body = tumble.small_body("spinning-top", radii=(250, 250, 220), gm=30.0, period_h=7.6, retrograde=True,
                             gravity="point_mass")
    rel = tumble.release_above(body, latitude=-22.0, longitude=0.0, altitude=40.0)
    p = rel.position
    assert math.degrees(math.asin(p[2] / np.linalg.norm(p))) == pytest.approx(-22.0, abs=1e-9)
    assert p[1] == pytest.approx(0.0, abs=1e-9) and p[0] > 0
    # independent: trimesh's distance from the release point to the body's mesh. The contact
    # surface is the SDF of a 64-node mesh, the stored mesh a 24-node one: they agree to ~0.5 m.
    mesh = trimesh.Trimesh(body.shape_vertices, body.shape_faces, process=False)
    _, dist, _ = trimesh.proximity.closest_point(mesh, [p])
    assert dist[0] == pytest.approx(40.0, abs=1.0)
    assert float(eval_terrain(body.terrain, np.array([p]))[0][0]) == pytest.approx(40.0, abs=1e-6)


def test_same_mission_from_p_on_the_builtin_deploy_scene(tmp_path):
    out = tumble.run_batch("deploy", samples=3, out=tmp_path / "p.zarr",
                           params={"latitude": -22, "altitude": 40, "restitution_range": [0.4, 0.6],
                                   "friction_range": [0.4, 0.8]})
    final = xr.open_zarr(out, group="final").load()
    assert (final.status.values == 2).all()
    params = zarr.open_group(out, mode="r").attrs["scene"]["params"]
    assert params["radii"] == [250.0, 250.0, 220.0] and params["gm"] == 30.0 and params["retrograde"] is True


def test_regolith_contact_from_p_draws_its_parameters_into_the_pair_row(tmp_path):
    """``-p contact=regolith`` puts the granular law in every sample's probe–terrain row; a drawn
    restitution sets its e₀ = e₁ and a drawn speed exponent its α; misuse is refused by name."""
    from components.contact_params import PAIR_FIELDS

    out = tumble.run_batch("deploy", samples=4, out=tmp_path / "r.zarr",
                           params={"contact": "regolith", "gravity": "point_mass", "restitution_range": [0.1, 0.4],
                                   "speed_exponent_range": [0.6, 1.2], "t_cap": 600.0})
    row = xr.open_zarr(out, group="inputs").contact_terrain.load()
    assert list(row.pair_field.values) == list(PAIR_FIELDS)
    e, a = row.sel(pair_field="restitution").values, row.sel(pair_field="speed_exponent").values
    assert np.all((0.1 <= e) & (e < 0.4)) and np.all((0.6 <= a) & (a < 1.2)) and np.ptp(e) > 0 and np.ptp(a) > 0
    assert np.array_equal(row.sel(pair_field="e_floor").values, e) and np.array_equal(row.sel(pair_field="e_max"), e)
    assert np.all(row.sel(pair_field="regolith").values == 1.0)
    assert np.all(row.sel(pair_field="reference_speed").values == 0.05)
    for bad, name in (({"contact": "sand"}, "contact"), ({"speed_exponent": 1.0}, "speed_exponent"),
                      ({"contact": "regolith", "speed_exponent_range": [1.0, 0.5]}, "speed_exponent_range")):
        with pytest.raises(tumble.InputError, match=name):
            tumble.load_scene("deploy", **bad)


@pytest.mark.parametrize("name, seed_e", [("deploy-cube", 0.5), ("deploy-sphere", 0.65), ("deploy-shapes", 0.5),
                                          ("deploy-box", 0.5)])
def test_seed_scenes_select_the_regolith_law_and_keep_the_seeds_e_by_default(name, seed_e):
    """``-p contact=regolith`` on each of the seed's deployment scenes: the probe–terrain row carries
    the law (e₀ = e₁ = 0.3 unless ``restitution`` is given, 5 cm/s, α 0.88); without it the row is
    the seed's constant e, and the stored parameters do not name a contact law."""
    from components.contact_params import PAIR_FIELDS

    from components.deploy import ProbeContact

    def row(**kw):
        sc = tumble.load_scene(name, gravity="point_mass", **kw)
        (_, (pc,)), = sc.world.query(ProbeContact)
        return dict(zip(PAIR_FIELDS, np.asarray(pc.terrain_pair))), sc

    rigid, sc = row()
    assert rigid["regolith"] == 0.0 and rigid["restitution"] == seed_e and "contact" not in sc.params
    reg, sc = row(contact="regolith")
    assert (reg["regolith"], reg["e_floor"], reg["e_max"], reg["reference_speed"], reg["speed_exponent"]) == \
        (1.0, 0.3, 0.3, 0.05, 0.88) and sc.params["contact"] == "regolith"
    assert row(contact="regolith", restitution=0.2)[0]["e_floor"] == 0.2
    with pytest.raises(tumble.InputError, match="contact"):
        tumble.load_scene(name, gravity="point_mass", contact="sand")


def test_scene_file_imports_a_module_beside_it(tmp_path):
    (tmp_path / "mylib.py").write_text("RADII = (250.0, 250.0, 220.0)\n")
    (tmp_path / "uses_lib.py").write_text(_mission_source().replace("import tumble\n", "import tumble\nimport mylib\n")
                                          .replace("radii=(250, 250, 220)", "radii=mylib.RADII"))
    scene = tumble.load_scene(str(tmp_path / "uses_lib.py"))
    assert scene.name == "my-lander"


def test_dispersion_laws():
    rng = np.random.default_rng(1)
    x = np.array([tumble.lognormal(2.0, 0.3)(rng) for _ in range(20000)])
    assert np.median(x) == pytest.approx(2.0, rel=0.02)                       # median of exp(N(ln 2, 0.3))
    assert np.std(np.log(x)) == pytest.approx(0.3, rel=0.03)
    u = np.array([tumble.uniform(0.4, 0.6)(rng) for _ in range(20000)])
    assert u.min() >= 0.4 and u.max() < 0.6 and np.mean(u) == pytest.approx(0.5, abs=0.003)


def test_mesh_probe_of_a_shifted_box_equals_the_box():
    """Any closed mesh becomes a probe: a triangulated 0.3 x 0.28 x 0.2 m box (trimesh) shifted by
    1 m is re-centred on its CoM and has the solid box's inertia m/12 (b² + c², ...)."""
    m = trimesh.creation.box(extents=(0.3, 0.28, 0.2))
    g, mp = tumble.mesh_probe(m.vertices + 1.0, m.faces, mass=10.0, level=1)
    np.testing.assert_allclose(g.vertices.mean(axis=0), 0.0, atol=1e-12)
    want = 10.0 / 12.0 * np.diag([0.28**2 + 0.2**2, 0.3**2 + 0.2**2, 0.3**2 + 0.28**2])
    np.testing.assert_allclose(mp.inertia, want, rtol=1e-12, atol=1e-15)


def test_a_shape_model_in_memory_is_accepted_like_a_file(tmp_path):
    """small_body(mesh=<trimesh.Trimesh>, mesh_units=...) builds the same target as the same mesh
    written to a file: same vertices (in metres), same volume, same GM."""
    import trimesh

    import tumble

    shape = trimesh.creation.icosphere(subdivisions=2, radius=0.2)
    f = tmp_path / "body.obj"
    shape.export(f)
    a = tumble.small_body(mesh=shape, mesh_units="km", gm=5.0, period_h=10.0, gravity="point_mass")
    b = tumble.small_body(mesh=str(f), mesh_units="km", gm=5.0, period_h=10.0, gravity="point_mass")
    assert a.gravity.mu == b.gravity.mu == 5.0
    va, vb = np.asarray(a.shape_vertices), np.asarray(b.shape_vertices)
    assert va.shape == vb.shape and np.allclose(va, vb, atol=1e-9 * 200.0)
    assert 150.0 < np.max(np.linalg.norm(va, axis=1)) <= 200.0 + 1e-6     # in metres: km times 1,000


def test_readme_mission_report_numbers_equal_xarray(mission_store, tmp_path):
    """The 12-line lander's report: its outcome table equals xarray's statistics of the store
    (tests/_report_check.py renders the page in headless Chromium where the machine has it)."""
    from _report_check import check_report_numbers

    assert check_report_numbers(mission_store, tmp_path / "lander.html") >= 40
