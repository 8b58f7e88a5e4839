"""Store tests: xarray round trip (dims, units), block-size independence, failure isolation.

The scene is tests/scenes_for_tests/drift.py: a probe with dispersed velocity and drag and a target
drifting at constant velocity. Its motion has a closed form (v_n = v0 r^n, r = 1 - dt*drag), so the
stored values are checked against physics, not against earlier output of this code.
"""

import pathlib

import numba
import numpy as np
import pytest
import xarray as xr
import zarr

from components.status import STATUS_LEGEND, Status
from tumble import last_summary, run_batch
from ecs.errors import InputError
from store_helpers import store_files

DRIFT = str(pathlib.Path(__file__).parent / "scenes_for_tests" / "drift.py")
N = 24
SEED = 11
DT, T_END, SIGMA = 0.01, 1.5, 0.3
V0_MEAN = np.array([0.1, 0.0, -1.0])




def expected_inputs(seed, sample):
    """The draws of drift.py's dispersions, rebuilt from the documented seed rule."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(sample,)))
    v = V0_MEAN + SIGMA / 3.0 * rng.standard_normal(3)
    drag = float(rng.random(()))
    return v, drag


def expected_probe_final(v0, drag):
    n = int(round(T_END / DT))
    r = 1.0 - DT * drag
    v = v0 * r ** n
    p = np.array([0.0, 0.0, 1.0]) + DT * v0 * (n if drag == 0 else r * (1 - r ** n) / (1 - r))
    return p, v


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    out = tmp_path_factory.mktemp("store") / "drift.zarr"
    run_batch(DRIFT, samples=N, out=out, seed=SEED, block=5, params={"fail_above": 0.8},
              command_line="pytest test_store")
    return out


def test_xarray_round_trip_dims_units_and_values(store):
    traj = xr.open_zarr(store, group="trajectories")
    final = xr.open_zarr(store, group="final")
    events = xr.open_zarr(store, group="events")
    inputs = xr.open_zarr(store, group="inputs")

    assert traj["body_position"].dims == ("sample", "time", "body", "xyz")
    assert traj["body_attitude"].dims == ("sample", "time", "body", "quat")
    assert final["body_position"].dims == ("sample", "body", "xyz")
    assert final["status"].dims == ("sample",) and final["status"].dtype == np.int8
    assert final["done"].dims == ("sample",) and final["done"].dtype == bool
    assert events["position"].dims == ("sample", "event", "xyz")
    assert events["time"].dims == ("sample", "event")
    assert inputs["probe_velocity"].dims == ("sample", "xyz")
    assert traj.sizes["sample"] == N and traj.sizes["time"] == 16 and traj.sizes["body"] == 2
    assert list(final["body_name"].values) == ["probe", "target"]
    assert list(traj["xyz"].values) == ["x", "y", "z"]
    np.testing.assert_allclose(traj["time"].values, np.arange(16) * 0.1, atol=1e-12)

    units = {("trajectories", "body_position"): "m", ("trajectories", "time"): "s", ("final", "body_velocity"): "m/s",
             ("events", "time"): "s", ("events", "position"): "m", ("inputs", "probe_velocity"): "m/s",
             ("inputs", "body_drag.probe"): "1/s", ("final", "status"): "1"}
    dsets = {"trajectories": traj, "final": final, "events": events, "inputs": inputs}
    for (g, v), u in units.items():
        assert dsets[g][v].attrs["units"] == u, (g, v)

    # every array of the store declares dimension names and units
    root = zarr.open_group(store, mode="r")
    for g in ("trajectories", "final", "events", "inputs"):
        for name, arr in root[g].arrays():
            assert arr.metadata.dimension_names is not None and len(arr.metadata.dimension_names) == arr.ndim, name
            assert "units" in arr.attrs and "long_name" in arr.attrs, name
    attrs = dict(root.attrs)
    assert attrs["scene"]["name"] == "drift" and attrs["scene"]["params"]["fail_above"] == 0.8
    assert attrs["seed"] == SEED and attrs["samples"] == N and attrs["tumble"]["version"]
    assert attrs["run"]["invocations"][-1]["command_line"] == "pytest test_store"
    assert final["status"].attrs["legend"] == STATUS_LEGEND

    # inputs rebuild from the documented seed rule; outcomes follow the closed-form motion
    assert final["done"].values.all()
    assert np.array_equal(inputs["seed"].values, np.arange(N))
    status = final["status"].values
    for s in range(N):
        v0, drag = expected_inputs(SEED, s)
        np.testing.assert_array_equal(inputs["probe_velocity"].values[s], v0)
        assert inputs["body_drag.probe"].values[s] == drag
        if drag > 0.8:  # the scene's sqrt(fail_above - drag) is NaN: the probe row fails
            assert status[s] == Status.FAILED
            assert np.isnan(final["body_position"].values[s, 0]).all()
        else:
            assert status[s] == Status.DONE
            p, v = expected_probe_final(v0, drag)
            np.testing.assert_allclose(final["body_position"].values[s, 0], p, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(final["body_velocity"].values[s, 0], v, rtol=1e-10, atol=1e-12)
        # the target (z0 = -0.5, vz = 0.6, no drag) is never affected by the probe's failure
        np.testing.assert_allclose(final["body_position"].values[s, 1], [0, 0, 0.4], atol=1e-12)
        # its plane crossing at t = 0.5/0.6 is recorded at the end of that frame
        ev = events["entity"].values[s]
        k = int(np.flatnonzero(ev == 1)[0])
        assert events["time"].values[s, k] == pytest.approx(0.84, abs=1e-9)
        assert 0 < events["position"].values[s, k, 2] <= 0.006 + 1e-12
    assert 0 < (status == Status.FAILED).sum() < N  # the seed gives both outcomes
    assert final["event_count"].values.min() >= 1


def test_block_sizes_give_identical_bytes(tmp_path, store):
    ref = store_files(store)
    for blk in (1, 7, 64):
        out = tmp_path / f"b{blk}.zarr"
        run_batch(DRIFT, samples=N, out=out, seed=SEED, block=blk, params={"fail_above": 0.8},
                  command_line=f"block {blk}")
        got = store_files(out)
        assert sorted(got) == sorted(ref)
        diff = [k for k in ref if got[k] != ref[k]]
        assert not diff, f"block {blk}: {diff}"


def test_raising_samples_are_isolated_and_block_independent(tmp_path):
    """World.run raising for a block fails only the samples that raise on their own."""
    params = {"raise_above": 0.9}
    base = tmp_path / "base.zarr"
    run_batch(DRIFT, samples=N, out=base, seed=SEED, block=8)
    stores = {}
    for blk in (3, 8):
        out = tmp_path / f"raise{blk}.zarr"
        run_batch(DRIFT, samples=N, out=out, seed=SEED, block=blk, params=params)
        stores[blk] = out
    raised = last_summary()["samples_raised"]
    drags = np.array([expected_inputs(SEED, s)[1] for s in range(N)])
    bad = drags > 0.9
    assert bad.any() and not bad.all()
    assert raised == bad.sum()
    a, b = store_files(stores[3]), store_files(stores[8])
    assert [k for k in a if a[k] != b.get(k)] == []
    f = xr.open_zarr(stores[8], group="final")
    f0 = xr.open_zarr(base, group="final")
    assert np.array_equal(f["status"].values == Status.FAILED, bad)
    assert f["done"].values.all()
    assert np.isnan(f["body_position"].values[bad]).all()
    np.testing.assert_array_equal(f["body_position"].values[~bad], f0["body_position"].values[~bad])
    ev = xr.open_zarr(stores[8], group="events")
    assert (ev["entity"].values[bad] == -1).all() and (f["event_count"].values[bad] == 0).all()
    runs = zarr.open_group(stores[8], mode="r").attrs["run"]["invocations"]
    assert runs[-1]["samples_raised"] == bad.sum() and "drag above" in runs[-1]["first_error"]


def test_a_kernel_that_does_not_compile_stops_the_batch(tmp_path):
    """A numba compile error is the code's, the same for every sample: it is raised, not isolated
    sample by sample into a store of FAILED rows (which is what a broken kernel once produced)."""
    scene = tmp_path / "broken.py"
    scene.write_text(
        "import importlib.util\n"
        "import numba\n"
        "from ecs import Phase, System\n"
        f"spec = importlib.util.spec_from_file_location('drift_for_broken', {DRIFT!r})\n"
        "drift = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(drift)\n"
        "@numba.njit\n"
        "def broken(x):\n"
        "    return x.no_such_attribute\n"
        "class Broken(System):\n"
        "    phase = Phase.SCHEDULED\n"
        "    def process(self, frame):\n"
        "        broken(frame.dt)\n"
        "def build(**params):\n"
        "    scene = drift.build(**params)\n"
        "    scene.world.add_system(Broken())\n"
        "    return scene\n")
    with pytest.raises(numba.core.errors.TypingError, match="no_such_attribute"):
        run_batch(str(scene), samples=4, out=tmp_path / "out.zarr", seed=SEED, block=4)


def test_existing_path_is_refused_before_any_work(store):
    before = store_files(store)
    with pytest.raises(InputError, match="already exists"):
        run_batch(DRIFT, samples=N, out=store, seed=SEED)
    assert store_files(store) == before


def test_overwrite_refuses_a_directory_that_is_not_a_store(tmp_path):
    d = tmp_path / "precious"
    d.mkdir()
    (d / "notes.txt").write_text("keep me")
    with pytest.raises(InputError, match="not a tumble store"):
        run_batch(DRIFT, samples=2, out=d, overwrite=True)
    assert (d / "notes.txt").read_text() == "keep me"


def test_bad_arguments(tmp_path):
    with pytest.raises(InputError, match="samples"):
        run_batch(DRIFT, samples=0, out=tmp_path / "x.zarr")
    with pytest.raises(InputError, match="choose one"):
        run_batch(DRIFT, samples=2, out=tmp_path / "x.zarr", resume=True, overwrite=True)
    with pytest.raises(InputError, match="power of two"):
        run_batch(DRIFT, samples=2, out=tmp_path / "x.zarr", shard_samples=3)
    assert not (tmp_path / "x.zarr").exists()


def test_shard_rule_few_files_for_small_stores_and_tasks_for_large_ones():
    """Samples per shard: the whole store up to 256 samples, 256 up to 2,048 (so README command 1's
    300 deploy-cube samples write two shard files per array instead of ten), then at least eight
    shards for Dask, at most 16,384 samples, and never a shard of more than 32 MiB of the
    largest array (which overrides the floor)."""
    from ecs.store import choose_shard_samples

    small = [8, 6144]                                    # a scalar and a deployment's event log per sample
    assert [choose_shard_samples(n, small) for n in (1, 3, 16, 256)] == [1, 4, 16, 256]
    assert [choose_shard_samples(n, small) for n in (300, 2000, 2048, 4096, 32768, 10**7)] == \
        [256, 256, 256, 512, 4096, 4096]               # 4,096 x 6 KiB: 24 MiB, under the 32 MiB target
    assert choose_shard_samples(10**7, [8]) == 16384
    big = [8, 1 << 20]                                   # 1 MiB per sample: 32 samples make 32 MiB
    assert choose_shard_samples(300, big) == 32 and choose_shard_samples(10**5, big) == 32


def test_store_is_self_contained_and_filters_keep_true_sample_ids(tmp_path):
    """Opened with zarr and xarray only: the sample coordinate survives filtering, codes are
    decoded by CF flag attributes, the scene's systems, resources and code revision are recorded."""
    out = run_batch(DRIFT, samples=N, out=tmp_path / "s.zarr", seed=SEED, params={"fail_above": 0.8})
    final = xr.open_zarr(out, group="final").load()
    drag = xr.open_zarr(out, group="inputs").load()
    failed = final.where(final.status == Status.FAILED, drop=True)
    # fail_above = 0.8: exactly the samples whose drawn drag exceeds it, by their true ids
    want = [s for s in range(N) if expected_inputs(SEED, s)[1] > 0.8]
    assert want and failed.sample.values.tolist() == want
    assert drag.sample.values.tolist() == list(range(N))
    meanings = dict(zip(final.status.attrs["flag_values"], final.status.attrs["flag_meanings"].split()))
    assert meanings[int(Status.FAILED)] == "failed"
    assert set(failed.failure_message.values) == {"a system set the row FAILED without giving a reason"}
    attrs = zarr.open_group(out, mode="r").attrs
    assert attrs["Conventions"].startswith("CF-")
    assert attrs["code"]["version"]
    assert {s["name"] for s in attrs["systems"]} >= {"Drift"}
    ev = xr.open_zarr(out, group="events")
    assert "sample" in ev.coords and ev.sample.values.tolist() == list(range(N))


def test_a_deployment_store_carries_its_target_shape(tmp_path):
    out = run_batch("deploy-cube", samples=2, out=tmp_path / "d.zarr", params={"gravity": "point_mass"})
    scene = xr.open_zarr(out, group="scene").load()
    v, f = scene.target_vertices.values, scene.target_faces.values
    assert v.shape[1] == 3 and f.shape[1] == 3 and f.max() < len(v)
    # the stored shape is the target's, centred on its CoM: the release point lies outside it
    import trimesh

    mesh = trimesh.Trimesh(v, f, process=False)
    assert mesh.is_watertight and not mesh.contains([[0.0, 0.0, 200.0]])[0] and mesh.contains([[0.0, 0.0, 0.0]])[0]
    attrs = zarr.open_group(out, mode="r").attrs
    target = next(r for r in attrs["resources"] if r["type"] == "DeployTarget")
    assert target["rotation"][2] == pytest.approx(2 * np.pi / (12.132 * 3600))
    assert target["gravity"]["type"] == "PointMass" and target["gravity"]["mu"] == pytest.approx(2.341)
