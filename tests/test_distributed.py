"""Dask execution: shard-aligned tasks on 1 and 2 worker processes give the in-process bytes."""

import pathlib

import numpy as np
import pytest
import zarr

distributed = pytest.importorskip("distributed")

from tumble import run_batch  # noqa: E402
from store_helpers import store_files

ROOT = pathlib.Path(__file__).resolve().parents[1]
DRIFT = str(ROOT / "tests" / "scenes_for_tests" / "drift.py")
N, SEED, SHARD = 40, 9, 8
PARAMS = {"fail_above": 0.8, "raise_above": 0.95}




def test_one_and_two_workers_match_in_process(tmp_path):
    ref = tmp_path / "inproc.zarr"
    run_batch(DRIFT, samples=N, out=ref, seed=SEED, block=3, shard_samples=SHARD, params=PARAMS)
    two = tmp_path / "two.zarr"
    seen = []
    run_batch(DRIFT, samples=N, out=two, seed=SEED, workers=2, block=3, shard_samples=SHARD, params=PARAMS,
              progress=lambda done, total: seen.append(done))
    assert seen[0] == 0 and seen[-1] == N
    runs = zarr.open_group(two, mode="r").attrs["run"]["invocations"]
    assert runs[-1]["block"] == SHARD  # block 3 rounded up to whole shards
    assert "2 workers" in runs[-1]["executor"]

    from dask.distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        one = tmp_path / "one.zarr"
        run_batch(DRIFT, samples=N, out=one, seed=SEED, scheduler=cluster.scheduler_address, shard_samples=SHARD,
                  params=PARAMS)

    a = store_files(ref)
    status = np.asarray(zarr.open_group(ref, mode="r")["final/status"][:])
    assert (status == 9).any() and (status == 1).any()
    assert len([k for k in a if "/c/" in k and k.startswith("final/status")]) == N // SHARD  # several shards
    for other in (two, one):
        b = store_files(other)
        assert sorted(a) == sorted(b)
        assert [k for k in a if a[k] != b[k]] == [], other.name


def test_workers_without_a_task_are_reported(tmp_path):
    """A store of fewer blocks than Dask workers leaves some idle: the run says how many, and the
    second run, with --shard-samples small enough, gives every worker a task and no warning."""
    from ecs.batch import last_summary
    from tumble.cli import _report_lines

    run_batch(DRIFT, samples=16, out=tmp_path / "a.zarr", seed=SEED, workers=2, params=PARAMS)
    idle = last_summary()["idle_workers"]
    assert idle == {"workers": 2, "tasks": 1, "shard_samples": 16}     # 16 samples: one shard
    line = [x for x in _report_lines({}, last_summary()) if "idle" in x]
    assert line and "2 Dask workers had 1 tasks" in line[0] and "--shard-samples" in line[0], line
    run_batch(DRIFT, samples=16, out=tmp_path / "b.zarr", seed=SEED, workers=2, shard_samples=8, params=PARAMS)
    assert last_summary()["idle_workers"] is None
    assert not [x for x in _report_lines({}, last_summary()) if "idle" in x]


def test_a_built_scene_cannot_go_to_workers(tmp_path):
    from ecs.errors import InputError
    from scenes.registry import load_scene

    scene = load_scene(DRIFT)
    with pytest.raises(InputError, match="workers"):
        run_batch(scene, samples=4, out=tmp_path / "x.zarr", workers=2)
    assert not (tmp_path / "x.zarr").exists()


def test_local_workers_open_no_dashboard_and_no_well_known_port():
    """--workers starts no Bokeh dashboard, and the scheduler's HTTP endpoint (which distributed
    starts regardless) listens on an ephemeral loopback port, not on 127.0.0.1:8787."""
    import urllib.error
    import urllib.request

    from ecs.batch import _dask_client

    with _dask_client(1, None) as client:
        info = client.scheduler_info()
        port = int(info["services"]["dashboard"])
        assert port != 8787
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=10)
        assert err.value.code == 404                      # the dashboard's page is not served
