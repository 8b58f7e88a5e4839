"""The default scene's voxel gravity field and terrain grid, shipped in ``scenes/assets/data``
(scenes.assets.shipped; scenes.assets.voxel, "Shipped fields"; scenes.assets.sdf_build.grid_from_shape):
found by key and checksum, refused when altered, right against an independent library (the gravity
field) and resampled bit for bit by their recipes."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from scenes.assets import sdf_build, shipped
from scenes.assets import voxel as vx
from scenes.assets.bodies import small_body, write_shipped_body_grid
from scenes.deploy import ITOKAWA_MU, ITOKAWA_VOXEL_SPACING, itokawa_polyhedron, itokawa_target

SHIPPED = "voxel-717d747adad0a1e1c32ac304e2416514f814c570.npz"
SHIPPED_GRID = "sdf-249dcdcfccb9b862d46636274d72c1396246b9c3.npy"


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path, monkeypatch):
    """An empty field cache: what a fresh machine has."""
    monkeypatch.setenv("TUMBLE_CACHE", str(tmp_path / "cache"))


def test_the_default_scene_takes_its_field_from_the_shipped_file(tmp_path):
    field = itokawa_target().gravity
    assert field.meta["from_cache"] == "shipped"
    assert field.meta["key"].startswith(SHIPPED[len("voxel-"):-len(".npz")])
    assert field.shape == (53, 33, 26) and field.spacing == ITOKAWA_VOXEL_SPACING
    assert not (tmp_path / "cache").exists()            # nothing built, nothing written
    assert vx.shipped_sums()[SHIPPED] == vx._file_sha256(vx.SHIPPED_DIR / SHIPPED)


def test_an_altered_shipped_file_is_refused_with_a_warning(tmp_path, monkeypatch):
    """A shipped file whose bytes do not match SHA256SUMS is not used: the field is built instead
    (here the lookup is checked alone; the build is the cache test's)."""
    key = itokawa_target().gravity.meta["key"]
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(vx.SHIPPED_SUMS, data / "SHA256SUMS")
    raw = bytearray((vx.SHIPPED_DIR / SHIPPED).read_bytes())
    raw[-100] ^= 1                                      # one bit of one stored value
    (data / SHIPPED).write_bytes(bytes(raw))
    monkeypatch.setattr(vx, "SHIPPED_DIR", data)
    monkeypatch.setattr(vx, "SHIPPED_SUMS", data / "SHA256SUMS")
    with pytest.warns(RuntimeWarning, match="does not match its checksum"):
        assert vx._shipped(SHIPPED, key, (53, 33, 26)) is None
    (data / SHIPPED).write_bytes(bytes(raw[:100]))      # a truncated file fails the same way
    with pytest.warns(RuntimeWarning, match="does not match its checksum"):
        assert vx._shipped(SHIPPED, key, (53, 33, 26)) is None


def test_the_shipped_field_matches_polyhedral_gravity():
    """Nodes outside the body's bounding sphere, where the stored perturbation is the exterior field
    less the point mass: the field added back against the independent polyhedral-gravity library
    (Werner–Scheeres in its own code) at 400 nodes. Both are float64 sums over the same 20,516
    faces; the polyhedron tests find them equal to ~1e-12, so 1e-10 relative is the bound."""
    pg = pytest.importorskip("polyhedral_gravity")
    poly = itokawa_polyhedron()
    field = itokawa_target().gravity
    v = field.values
    ii, jj, kk = np.meshgrid(*(np.arange(n) for n in field.shape), indexing="ij")
    nodes = field.origin + field.spacing * np.stack([ii, jj, kk], -1).reshape(-1, 3)
    r = np.linalg.norm(nodes - field.center_of_mass, axis=1)
    out = np.flatnonzero(r > 1.05 * np.max(np.linalg.norm(poly.vertices - field.center_of_mass, axis=1)))
    pick = np.random.default_rng(0).choice(out, 400, replace=False)
    x = nodes[pick]
    d = x - field.center_of_mass
    rr = np.linalg.norm(d, axis=1)
    g_pm = -ITOKAWA_MU * d / rr[:, None] ** 3
    g_vox = v.reshape(-1, 4)[pick, :3] + g_pm
    ref = pg.GravityEvaluable(pg.Polyhedron((poly.vertices, poly.faces), poly.density, pg.NormalOrientation.OUTWARDS,
                                            pg.PolyhedronIntegrity.DISABLE))(x, parallel=True)
    g_ref = np.array([q[1] for q in ref])
    err = np.linalg.norm(g_vox - g_ref, axis=1) / np.linalg.norm(g_ref, axis=1)
    assert np.max(err) < 1e-10, np.max(err)


@pytest.mark.slow
def test_the_recipe_rebuilds_the_shipped_values_bit_for_bit(tmp_path, monkeypatch):
    """``python -m scenes.assets.voxel`` (:func:`scenes.assets.voxel.write_shipped`) run afresh
    writes the same values under the same key (~21 s on 2 cores)."""
    shipped = vx.SHIPPED_DIR / SHIPPED
    monkeypatch.setattr(vx, "SHIPPED_DIR", tmp_path)
    monkeypatch.setattr(vx, "SHIPPED_SUMS", tmp_path / "SHA256SUMS")
    path = vx.write_shipped(itokawa_polyhedron(), ITOKAWA_VOXEL_SPACING)
    assert path.name == SHIPPED
    with np.load(path) as new, np.load(shipped) as old:
        assert new["values"].tobytes() == old["values"].tobytes()


def _no_sampling(*args):
    raise AssertionError("the grid was sampled, not read")


def test_the_default_terrain_grid_is_read_from_the_shipped_file(tmp_path, monkeypatch):
    """The Itokawa-like body's SDF grid at the default resolution is read, not sampled: its sampler's
    compile (~2–3 s) was most of a cold scene build, in the batch and again in its compile helper."""
    monkeypatch.setattr(sdf_build, "eval_shape_grid", _no_sampling)
    grid = small_body("itokawa", resolution=48).grid
    assert grid.values.tobytes() == np.load(shipped.DATA_DIR / SHIPPED_GRID).tobytes()
    assert not (tmp_path / "cache").exists()            # nothing sampled, nothing written
    assert shipped.read_sums()[SHIPPED_GRID] == shipped.file_sha256(shipped.DATA_DIR / SHIPPED_GRID)


def test_the_recipe_resamples_the_shipped_grid_bit_for_bit(tmp_path, monkeypatch):
    """``python -m scenes.assets.shipped`` (:func:`scenes.assets.bodies.write_shipped_body_grid`) run
    afresh writes the same values under the same name: a change to the shapes' distance functions
    that left the shipped grid stale fails here."""
    monkeypatch.setattr(shipped, "DATA_DIR", tmp_path)
    monkeypatch.setattr(shipped, "SUMS", tmp_path / "SHA256SUMS")
    path = write_shipped_body_grid("itokawa", resolution=48)
    assert path.name == SHIPPED_GRID
    assert np.load(path).tobytes() == np.load(sdf_build.Path(vx.SHIPPED_DIR) / SHIPPED_GRID).tobytes()
    assert shipped.read_sums(tmp_path / "SHA256SUMS") == {SHIPPED_GRID: shipped.file_sha256(path)}


def test_an_altered_shipped_grid_is_refused_and_the_grid_sampled(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(shipped.SUMS, data / "SHA256SUMS")
    good = np.load(shipped.DATA_DIR / SHIPPED_GRID)
    raw = bytearray((shipped.DATA_DIR / SHIPPED_GRID).read_bytes())
    raw[-8] ^= 1                                        # one bit of the last node's value
    (data / SHIPPED_GRID).write_bytes(bytes(raw))
    monkeypatch.setattr(shipped, "DATA_DIR", data)
    monkeypatch.setattr(shipped, "SUMS", data / "SHA256SUMS")
    with pytest.warns(RuntimeWarning, match="shipped SDF grid .* does not match its checksum"):
        grid = small_body("itokawa", resolution=48).grid
    assert grid.values.tobytes() == good.tobytes()      # sampled, right
    assert len(list((tmp_path / "cache" / "sdf").glob("shape-*.npy"))) == 1


def test_a_sampled_shape_grid_is_cached_and_read_back(tmp_path, monkeypatch):
    first = small_body("itokawa", resolution=20).grid   # not shipped: sampled and written
    files = list((tmp_path / "cache" / "sdf").glob("shape-*.npy"))
    assert len(files) == 1
    off = sdf_build.grid_from_shape(small_body("itokawa", resolution=20).shape, origin=first.origin,
                                    spacing=first.spacing, dims=first.shape, cache=False)
    assert off.values.tobytes() == first.values.tobytes()
    monkeypatch.setattr(sdf_build, "eval_shape_grid", _no_sampling)
    again = small_body("itokawa", resolution=20).grid
    assert again.values.tobytes() == first.values.tobytes()
    assert np.array_equal(again.origin, first.origin) and np.array_equal(again.spacing, first.spacing)
