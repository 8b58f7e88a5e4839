"""Streaming active set (seed 004 §2.7.3; ecs.world.World.compile(active=...)).

Only ``active`` sample slots live in a deployment world's tables; a slot whose sample has finished
is refilled from the block's pool and finished samples leave in bulk. The reference is the same
batch run frame-synchronously with every sample in the tables (no streaming): the stores must be
the same bytes, file by file, whatever the active-set size, the flush size and the block size.
"""

from __future__ import annotations

import numpy as np
import pytest

import ecs.world
import tumble
from components.status import Status
from ecs import InputError
from scenes.registry import load_scene
from ecs import store as zstore
from tests.store_helpers import store_files


def _batch(tmp_path, name, **kw):
    out = tmp_path / f"{name}.zarr"
    tumble.run_batch("deploy-cube", samples=kw.pop("samples", 100), out=out, seed=3,
                     command_line="pytest test_stream", **kw)
    return out


def test_active_set_sizes_give_identical_store_bytes(tmp_path, monkeypatch):
    """deploy-cube, 100 samples: 8 and 64 active rows (bulk exits every 16 samples, blocks of 100
    and of 30) give the bytes of the run with every sample in the tables."""
    ref = _batch(tmp_path, "all", active=100)            # active >= block: no streaming
    monkeypatch.setattr(ecs.world, "STREAM_FLUSH", 16)
    a = _batch(tmp_path, "a8", active=8)
    b = _batch(tmp_path, "a64", active=64, block=30)
    files = store_files(ref)
    assert any(k.startswith("events/") for k in files) and any(k.startswith("final/") for k in files)
    assert store_files(a) == files
    assert store_files(b) == files
    st = np.asarray(__import__("zarr").open(str(a), mode="r")["final/status"][:])
    assert len(np.unique(st)) >= 1 and np.all(st != Status.RUNNING)


def test_streaming_keeps_trajectories_and_done_rows(tmp_path, monkeypatch):
    """Recorded trajectories (60 s frames, every 2nd recorded) with a run end before the time cap
    (rows still running at the end become DONE, the last frame is shorter): 7 slots give the
    result of a frame-synchronous run, every array byte for byte; results leave in order while
    the block runs, and the tables never hold more than the slots."""
    scene = load_scene("deploy-cube", frame=60.0, record_every=2)
    w = scene.world
    w.compile(samples=1)
    n = 30
    layout = zstore.Layout.from_world(scene, w, n, None)
    inputs = layout.draw_inputs(5, 0, n)
    t_end = 1000.0                                        # 17 frames, the last one 40 s
    runs = {}
    for active in (None, 7):
        w.compile(samples=n, overrides=layout.overrides(inputs), active=active)
        assert w.tables[0].row_count == (active or n) and w.block_samples == n
        ranges = []

        def out(a, b, r):
            ranges.append((a, b, r))

        w.run(t_end=t_end, dt=scene.dt, record_every=scene.record_every, record=layout.record, final=layout.final,
              on_samples=out, flush=4)
        assert ranges[0][0] == 0 and ranges[-1][1] == n
        assert all(r0[1] == r1[0] for r0, r1 in zip(ranges, ranges[1:]))
        if active:
            assert len(ranges) > 1        # they left while the block ran
        runs[active] = ecs.world._concat([r for _, _, r in ranges])
    ref, got = runs[None], runs[7]
    assert np.all(ref.status == Status.DONE)              # the run ends before any end state
    assert ref.times.shape == (9,)                      # 0, 120, ..., 960 s
    for k in ref.finals:
        assert ref.finals[k].tobytes() == got.finals[k].tobytes(), k
    for k in ref.trajectories:
        assert ref.trajectories[k].tobytes() == got.trajectories[k].tobytes(), k
    for k in ref.events:
        assert ref.events[k].tobytes() == got.events[k].tobytes(), k
    for a in ("status", "reason", "event_count"):
        assert getattr(ref, a).tobytes() == getattr(got, a).tobytes(), a


def test_bad_active_set_arguments_are_refused(tmp_path):
    scene = load_scene("deploy-cube")
    with pytest.raises(InputError, match="active"):
        scene.world.compile(samples=4, active=0)
    scene.world.compile(samples=4, active=2)
    with pytest.raises(InputError, match="flush"):
        scene.world.run(t_end=600.0, dt=scene.dt, final=("body_position",), flush=0)
    with pytest.raises(InputError, match="active"):
        tumble.run_batch("deploy-cube", samples=2, out=tmp_path / "x.zarr", active=0)


def test_killed_streaming_run_resumes_to_identical_bytes(tmp_path):
    """A streaming CLI run (8 slots, blocks of 30) killed mid-way and resumed gives the bytes of an
    uninterrupted run; the resumed invocation recomputes only the samples not flagged done."""
    import os
    import pathlib
    import subprocess
    import sys

    import zarr

    from store_helpers import done_count, kill_mid_run

    root = pathlib.Path(__file__).resolve().parents[1]
    n = 120
    out = tmp_path / "killed.zarr"
    args = ["deploy-cube", "--samples", str(n), "--seed", "4", "--block", "30", "--active", "8", "--no-progress",
            "-p", "gravity=point_mass"]
    env = dict(os.environ, PYTHONPATH=str(root))
    cmd = [sys.executable, "-m", "tumble.cli", "run"]
    proc = subprocess.Popen([*cmd, *args, "--out", str(out)], cwd=root, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    kill_mid_run(proc, out, n, timeout=300)
    after = done_count(out)
    assert 0 < after < n
    r = subprocess.run([*cmd, *args, "--out", str(out), "--resume"], cwd=root, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    runs = zarr.open_group(str(out), mode="r").attrs["run"]["invocations"]
    assert runs[-1]["resumed"] is True and runs[-1]["samples_run"] == n - after
    ref = tmp_path / "ref.zarr"
    tumble.run_batch("deploy-cube", samples=n, out=ref, seed=4, active=n, params={"gravity": "point_mass"})
    assert store_files(out) == store_files(ref)


def test_streaming_dask_tasks_give_the_in_process_bytes(tmp_path):
    """Two Dask worker processes, each task streaming its shard-aligned block through 8 slots, give
    the bytes of the in-process run with every sample in the tables."""
    pytest.importorskip("distributed")
    ref = tmp_path / "inproc.zarr"
    tumble.run_batch("deploy-cube", samples=64, out=ref, seed=6, active=64, shard_samples=16,
                     params={"gravity": "point_mass"})
    two = tmp_path / "two.zarr"
    tumble.run_batch("deploy-cube", samples=64, out=two, seed=6, active=8, shard_samples=16, workers=2,
                     params={"gravity": "point_mass"})
    assert store_files(two) == store_files(ref)
