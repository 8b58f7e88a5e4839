"""Store safety: one writer at a time, --overwrite only on tumble stores, damaged shards repaired.

Every check compares bytes with an uninterrupted run of the same scene (``store_files`` drops only
the root attribute ``run``, documented as varying), so "repaired" means "identical to a run that
never went wrong", not merely "readable".
"""

import contextlib
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
import zarr

from ecs import store as zstore
from tumble import run_batch
from ecs.errors import InputError
from cli_helpers import cli_here
from store_helpers import store_files

ROOT = pathlib.Path(__file__).resolve().parents[1]
DRIFT = str(ROOT / "tests" / "scenes_for_tests" / "drift.py")
N, SEED = 16, 3
#: two samples per shard, so that a damaged shard leaves others to keep (the default would give one
#: shard of 16: ecs.store.MIN_SHARD_SAMPLES)
SHARD = 2
SLOW = {"spin": 20000, "fail_above": 0.8}   # slow enough per block for a second writer to arrive
FAST = {"fail_above": 0.8}


def cli(*args, wait=True):
    """``tumble ARGS``: with ``wait=False`` a process of its own, running beside this one (the first
    writer of the lock tests, which must hold the store from another process); otherwise in this
    process (:func:`cli_helpers.cli_here`)."""
    if not wait:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
        cmd = [sys.executable, "-m", "tumble.cli", *args]
        return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return cli_here(*args)


def params(p):
    return [a for k, v in p.items() for a in ("-p", f"{k}={v}")]


def one_line(r) -> str:
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    return lines[0]


def wait_for_lock(out, proc, timeout=60):
    lock = pathlib.Path(str(out) + ".lock")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if lock.exists() and (pathlib.Path(out) / "zarr.json").exists():
            return
        time.sleep(0.02)
    raise AssertionError(f"the first writer never held the lock (rc={proc.poll()})")


@contextlib.contextmanager
def paused(proc):
    """The first writer stopped (SIGSTOP) while second writers try the store, resumed after: they
    must meet it holding the store. The SLOW parameters alone left a race: the first run took ~4.5 s
    and two CLI starts beside the other test process could take longer (a CI run on 2026-12-02 saw
    the first writer finish before the second attempt, which then overwrote the store). A stopped
    process keeps its lock file, its flock and its pid."""
    proc.send_signal(signal.SIGSTOP)
    try:
        yield
    finally:
        proc.send_signal(signal.SIGCONT)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """An uninterrupted run (the bytes every other store must reproduce)."""
    out = tmp_path_factory.mktemp("ref") / "ref.zarr"
    run_batch(DRIFT, samples=N, out=out, seed=SEED, block=2, shard_samples=SHARD, params=SLOW)
    return store_files(out)


@pytest.fixture(scope="module")
def reference_fast(tmp_path_factory):
    """The same with the FAST parameters, for the tests that damage a finished store: no second
    writer has to arrive while they run, so they need no busy work."""
    out = tmp_path_factory.mktemp("ref_fast") / "ref.zarr"
    run_batch(DRIFT, samples=N, out=out, seed=SEED, block=2, shard_samples=SHARD, params=FAST)
    return store_files(out)


def clear_done(out, start, stop):
    """Make samples start:stop look unfinished, as a run killed before finishing them leaves them."""
    arr = zarr.open_group(out, mode="r+")["final/done"]
    arr[start:stop] = np.zeros(stop - start, bool)


def test_second_writer_is_refused_and_the_first_store_is_intact(tmp_path, reference):
    out = tmp_path / "a.zarr"
    first = cli("run", DRIFT, "--samples", str(N), "--seed", str(SEED), "--block", "2", "--shard-samples", str(SHARD),
                "--out", str(out),
                "--no-progress", *params(SLOW), wait=False)
    try:
        wait_for_lock(out, first)
        with paused(first):
            for extra in (["--resume"], ["--overwrite"]):        # run + resume, run + overwrite
                r = cli("run", DRIFT, "--samples", str(N), "--seed", str(SEED), "--out", str(out), "--no-progress",
                        *params(SLOW), *extra)
                assert r.returncode == 1, (extra, r.stdout, r.stderr)
                assert "being written by pid" in r.stderr and socket.gethostname() in r.stderr, r.stderr
                assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
            assert first.poll() is None, "the second writer must not have disturbed the first"
    finally:
        rc = first.wait(timeout=300)
    assert rc == 3, first.stderr.read()        # finished, some samples FAILED (fail_above)
    a = store_files(out)
    assert sorted(a) == sorted(reference) and [k for k in a if a[k] != reference[k]] == []
    assert not pathlib.Path(str(out) + ".lock").exists()


def test_resume_against_resume_is_refused(tmp_path, reference):
    out = tmp_path / "b.zarr"
    run_batch(DRIFT, samples=N, out=out, seed=SEED, block=2, shard_samples=SHARD, params=SLOW)
    clear_done(out, 4, N)                              # as if killed after the first 4 samples
    first = cli("run", DRIFT, "--out", str(out), "--resume", "--block", "2", "--no-progress", *params(SLOW),
                wait=False)
    try:
        wait_for_lock(out, first)
        with paused(first):
            r = cli("run", DRIFT, "--out", str(out), "--resume", "--no-progress", *params(SLOW))
        assert r.returncode == 1 and "being written by pid" in r.stderr, r.stderr
    finally:
        first.wait(timeout=300)
    a = store_files(out)
    assert [k for k in a if a[k] != reference[k]] == []


def test_one_writer_per_store_whatever_its_name(tmp_path):
    """The writer lock is keyed on the store's resolved path: a symbolic link to the store, a
    relative spelling or one through ".." are the same store and are refused while it is held."""
    from ecs.store import StoreLock, StoreLockedError

    out = tmp_path / "a.zarr"
    out.mkdir()
    link = tmp_path / "link.zarr"
    link.symlink_to(out, target_is_directory=True)
    (tmp_path / "sub").mkdir()
    with StoreLock(out, "first"):
        for other in (link, tmp_path / "sub" / ".." / "a.zarr", pathlib.Path(os.path.relpath(out))):
            with pytest.raises(StoreLockedError, match="being written by pid"):
                StoreLock(other, "second").acquire()
    with StoreLock(link, "through the link"):        # released: the link's writer takes the one lock
        assert pathlib.Path(str(out) + ".lock").exists()
    assert not pathlib.Path(str(out) + ".lock").exists()


def test_a_writer_whose_lock_file_was_deleted_still_holds_the_store(tmp_path, reference):
    """Deleting <store>.lock while a run writes does not let a second writer in: the first also
    holds a flock on the store directory, so --resume and --overwrite are refused in one line and the
    first run finishes to the reference bytes."""
    out = tmp_path / "d.zarr"
    first = cli("run", DRIFT, "--samples", str(N), "--seed", str(SEED), "--block", "2", "--shard-samples", str(SHARD),
                "--out", str(out),
                "--no-progress", *params(SLOW), wait=False)
    try:
        wait_for_lock(out, first)
        deadline = time.monotonic() + 60           # the run attribute is set after the store is held
        while "\"run\"" not in (out / "zarr.json").read_text() and time.monotonic() < deadline:
            time.sleep(0.02)
        with paused(first):
            pathlib.Path(str(out) + ".lock").unlink()
            for extra in (["--resume"], ["--overwrite"]):
                r = cli("run", DRIFT, "--samples", str(N), "--seed", str(SEED), "--out", str(out), "--no-progress",
                        *params(SLOW), *extra)
                assert r.returncode == 1 and "lock file d.zarr.lock was removed" in one_line(r), (extra, r.stderr)
            assert first.poll() is None, "the second writer must not have disturbed the first"
    finally:
        rc = first.wait(timeout=300)
    assert rc == 3, first.stderr.read()
    a = store_files(out)
    assert sorted(a) == sorted(reference) and [k for k in a if a[k] != reference[k]] == []


def test_a_second_writer_through_a_bind_mount_is_refused(tmp_path, reference):
    """The store directory mounted at a second path (a bind mount: for a directory, the equivalent
    of a hard link) has a second lock-file name beside it, but it is one directory: the flock the
    writer holds on it refuses the second writer. Skipped where mounting is not allowed."""
    out, other = tmp_path / "s.zarr", tmp_path / "other" / "s.zarr"
    other.mkdir(parents=True)
    first = cli("run", DRIFT, "--samples", str(N), "--seed", str(SEED), "--block", "2", "--shard-samples", str(SHARD),
                "--out", str(out),
                "--no-progress", *params(SLOW), wait=False)
    mounted = False
    try:
        wait_for_lock(out, first)
        deadline = time.monotonic() + 60
        while "\"run\"" not in (out / "zarr.json").read_text() and time.monotonic() < deadline:
            time.sleep(0.02)
        with paused(first):
            mounted = subprocess.run(["mount", "--bind", str(out), str(other)], capture_output=True).returncode == 0
            if mounted:
                assert other.resolve() != out.resolve() and (other / "zarr.json").is_file()
                r = cli("run", DRIFT, "--out", str(other), "--resume", "--no-progress", *params(SLOW))
                assert r.returncode == 1 and "being written by another process" in one_line(r), r.stderr
    finally:
        if mounted:
            subprocess.run(["umount", str(other)], capture_output=True)
        rc = first.wait(timeout=300)
    assert rc == 3, first.stderr.read()
    got = store_files(out)
    assert [k for k in got if got[k] != reference[k]] == []
    if not mounted:
        pytest.skip("bind mounts are not allowed here (the first writer's run was still checked)")


def test_a_stale_lock_is_taken_over(tmp_path):
    out = tmp_path / "c.zarr"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    pathlib.Path(str(out) + ".lock").write_text(json.dumps({"pid": dead.pid, "host": socket.gethostname(),
                                                             "command": "tumble run (killed)"}))
    r = cli("run", DRIFT, "--samples", "4", "--out", str(out), "--no-progress", *params(FAST))
    assert r.returncode in (0, 3), r.stderr
    assert "stale lock" in r.stdout and str(dead.pid) in r.stdout
    assert not pathlib.Path(str(out) + ".lock").exists()


@pytest.mark.parametrize("target,damage", [
    ("events/zarr.json", "delete"),                 # a group's metadata
    ("final/status/zarr.json", "delete"),           # an array's metadata
    ("final/zarr.json", "empty"),
    ("inputs/zarr.json", "flip"),
])
def test_damaged_metadata_is_found_and_refused_by_name(tmp_path, reference_fast, target, damage):
    """Group and array metadata cannot be recomputed from samples: verify names them, inspect
    --verify exits 4, and --resume refuses in one line instead of keeping the store."""
    out = tmp_path / "m.zarr"
    run_batch(DRIFT, samples=N, out=out, seed=SEED, block=2, shard_samples=SHARD, params=FAST)
    f = out / target
    assert f.is_file()
    {"delete": lambda p: p.unlink(), "empty": lambda p: p.write_bytes(b""), "flip": _flip}[damage](f)
    found = zstore.verify_store(out)
    node = target.rsplit("/zarr.json", 1)[0] if target.endswith("zarr.json") else target.split("/c/")[0]
    assert [d.array for d in found] == [node] and found[0].shard == zstore.NOT_A_SHARD, found
    r = cli("inspect", str(out), "--verify")
    assert r.returncode == 4 and node in r.stdout and "--overwrite" in r.stdout, (r.stdout, r.stderr)
    r = cli("run", DRIFT, "--out", str(out), "--resume", "--no-progress", *params(FAST))
    assert r.returncode == 1 and node in one_line(r) and "--overwrite" in one_line(r), (r.stdout, r.stderr)


def test_a_damaged_coordinate_is_rewritten_on_resume(tmp_path, reference_fast):
    """Arrays the driver writes whole (here the entity names of final/) are found by inspect
    --verify when a chunk is emptied, flipped or missing, and --resume rewrites them from the scene
    to the bytes of an undamaged run, saying so in one line."""
    for damage in ("empty", "flip", "delete"):
        out = tmp_path / f"{damage}.zarr"
        run_batch(DRIFT, samples=N, out=out, seed=SEED, block=2, shard_samples=SHARD, params=FAST)
        f = out / "final/body/c/0"
        {"delete": lambda p: p.unlink(), "empty": lambda p: p.write_bytes(b""), "flip": _flip}[damage](f)
        assert [d.array for d in zstore.verify_store(out)] == ["final/body"]
        r = cli("inspect", str(out), "--verify")
        assert r.returncode == 4 and "final/body" in r.stdout, (r.stdout, r.stderr)
        r = cli("run", DRIFT, "--out", str(out), "--resume", "--no-progress", *params(FAST))
        assert r.returncode == 3 and "repaired 1 damaged arrays" in r.stdout and "final/body" in r.stdout, r.stdout
        a = store_files(out)
        assert [k for k in a if a[k] != reference_fast.get(k)] == [] and sorted(a) == sorted(reference_fast)


def test_overwrite_deletes_only_tumble_stores(tmp_path):
    foreign = tmp_path / "xarray.zarr"
    g = zarr.open_group(foreign, mode="w", zarr_format=3)
    g.create_array("temperature", shape=(3,), dtype="f8")
    before = sorted(p.name for p in foreign.rglob("*"))
    with pytest.raises(InputError, match="not a tumble store"):
        run_batch(DRIFT, samples=2, out=foreign, overwrite=True, params=FAST)
    assert sorted(p.name for p in foreign.rglob("*")) == before
    r = cli("run", DRIFT, "--samples", "2", "--out", str(foreign), "--overwrite", "--no-progress")
    assert r.returncode == 1 and "not a tumble store" in r.stderr
    assert sorted(p.name for p in foreign.rglob("*")) == before
    # a tumble store is recognised by its root attribute, even one killed while being created
    mine = tmp_path / "mine.zarr"
    run_batch(DRIFT, samples=2, out=mine, params=FAST)
    assert zstore.is_tumble_store(mine) and not zstore.is_tumble_store(foreign)
    run_batch(DRIFT, samples=2, out=mine, overwrite=True, params=FAST)


def _shard(out, array, k=0):
    arr = zarr.open_group(out, mode="r")[array]
    return zstore._shard_file(out, array, arr, k)


def _truncate(f):
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 2])


def _flip(f):
    data = bytearray(f.read_bytes())
    data[len(data) // 3] ^= 0xFF
    f.write_bytes(bytes(data))


@pytest.mark.parametrize("array,damage", [
    ("final/body_position", "delete"),
    ("trajectories/body_position", "truncate"),
    ("events/time", "flip"),
    ("final/status", "flip"),
    ("final/done", "truncate"),
    # a zero-byte shard (a crash's usual artefact) read back as fill values without an error
    ("final/status", "empty"),
    ("final/done", "empty"),
    ("events/time", "empty"),
    ("inputs/seed", "empty"),
])
def test_resume_repairs_damaged_shards_to_identical_bytes(tmp_path, reference_fast, array, damage):
    out = tmp_path / "d.zarr"
    run_batch(DRIFT, samples=N, out=out, seed=SEED, block=2, shard_samples=SHARD, params=FAST)
    f = _shard(out, array, 1)
    assert f.is_file()
    {"delete": lambda p: p.unlink(), "truncate": _truncate, "flip": _flip, "empty": lambda p: p.write_bytes(b"")}[damage](f)

    found = zstore.verify_store(out)
    assert [(d.array, d.shard) for d in found] == [(array, 1)], found
    r = cli("inspect", str(out), "--verify")
    assert r.returncode == 4 and f"{array} shard 1" in r.stdout, (r.stdout, r.stderr)

    r = cli("run", DRIFT, "--out", str(out), "--resume", "--no-progress", *params(FAST))
    assert r.returncode == 3, r.stderr
    assert "repaired 1 damaged shards" in r.stdout
    a = store_files(out)
    assert sorted(a) == sorted(reference_fast)
    assert [k for k in a if a[k] != reference_fast[k]] == []
    assert zstore.verify_store(out) == []
    assert cli("inspect", str(out), "--verify").returncode == 0


def test_resuming_a_store_killed_while_being_created_says_so(tmp_path):
    """A store whose root attributes were never written (the driver writes them after the arrays,
    after the 'tumble' mark) is incomplete: --resume says so in one line and names --overwrite."""
    from ecs.store import Layout, create_store

    from scenes.registry import load_scene

    out = tmp_path / "k.zarr"
    scene = load_scene(DRIFT)
    scene.world.compile(samples=1)
    layout = Layout.from_world(scene, scene.world, 4, None)
    create_store(out, layout, {"tumble": {"format": zstore.STORE_FORMAT}})     # killed before its attributes
    r = cli("run", DRIFT, "--samples", "4", "--out", str(out), "--resume", "--no-progress")
    assert r.returncode == 1, (r.stdout, r.stderr)
    line = r.stderr.strip()
    assert "\n" not in line and "incomplete" in line and "--overwrite" in line and len(line) < 200, line
