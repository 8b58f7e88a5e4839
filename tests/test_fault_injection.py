"""Fault injection: every kind of damage to every kind of file of a store, finished or half
finished, ends with the store repaired to the bytes of an uninterrupted run or refused in one line
that names what is damaged. Nothing is silently kept.

The catalogue is the product of the files a store is made of (sample shards of every group and of
a string array, the done flags, coordinates and record times the driver writes, group and array
metadata, the root) and the ways a crash or a disk damages a file (deleted, emptied, cut in half,
a byte flipped in the middle or in the shard index at its end, bytes appended). Each case is run on
a finished store and on a half-finished one (a run killed with half of its samples unfinished:
their done flags unset). ``FAST_CASES`` run in CI; the whole catalogue is marked ``slow``.

"Repaired" is byte identity with a run that never went wrong (``store_helpers.store_files``),
not readability.
"""

import pathlib
import shutil

import numpy as np
import pytest
import zarr

from ecs import store as zstore
from ecs.errors import TumbleError
from store_helpers import store_files
from tumble import run_batch

ROOT = pathlib.Path(__file__).resolve().parents[1]
DRIFT = str(ROOT / "tests" / "scenes_for_tests" / "drift.py")
N, SEED, BLOCK = 16, 3, 2
#: two samples per shard (the default would give one shard of 16: ecs.store.MIN_SHARD_SAMPLES)
SHARD = 2
PARAMS = {"fail_above": 0.8, "record_every": 5}

#: what a store is made of: name -> the file to damage, relative to the store ({shard}: the file of
#: shard 1 of that sample-axis array, samples 2:4 with two samples per shard)
TARGETS = {
    "data shard": "final/body_position/{shard}",
    "trajectory shard": "trajectories/body_position/{shard}",
    "event shard": "events/time/{shard}",
    "input shard": "inputs/seed/{shard}",
    "status shard": "final/status/{shard}",
    "string shard": "final/failure_message/{shard}",
    "done shard": "final/done/{shard}",
    "coordinate chunk": "final/body/c/0",
    "record times": "trajectories/time/c/0",
    "array metadata": "final/status/zarr.json",
    "group metadata": "events/zarr.json",
    "root metadata": "zarr.json",
}


def _flip_middle(f: pathlib.Path) -> None:
    b = bytearray(f.read_bytes())
    b[len(b) // 2] ^= 0xFF
    f.write_bytes(bytes(b))


def _flip_end(f: pathlib.Path) -> None:          # a shard's index (and its checksum) sits at its end
    b = bytearray(f.read_bytes())
    b[-3] ^= 0x01
    f.write_bytes(bytes(b))


DAMAGES = {
    "deleted": lambda f: f.unlink(),
    "emptied": lambda f: f.write_bytes(b""),
    "cut in half": lambda f: f.write_bytes(f.read_bytes()[: f.stat().st_size // 2]),
    "byte flipped": _flip_middle,
    "end flipped": _flip_end,
    "bytes appended": lambda f: f.write_bytes(f.read_bytes() + b"\x00garbage\x00"),
}

CATALOGUE = [(t, d) for t in TARGETS for d in DAMAGES]
#: a cross-section run in CI: each target once, each damage at least twice
FAST_CASES = [(t, list(DAMAGES)[k % len(DAMAGES)]) for k, t in enumerate(TARGETS)]


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """The reference bytes and two templates: a finished store and a half-finished one."""
    base = tmp_path_factory.mktemp("fault")
    done = base / "finished.zarr"
    run_batch(DRIFT, samples=N, out=done, seed=SEED, block=BLOCK, shard_samples=SHARD, params=PARAMS)
    half = base / "half.zarr"
    shutil.copytree(done, half)
    flags = zarr.open_group(half, mode="r+")["final/done"]
    flags[N // 2:] = np.zeros(N - N // 2, bool)          # as a run killed before finishing them leaves them
    return {"reference": store_files(done), "finished": done, "half": half}


def _target_file(out: pathlib.Path, target: str) -> pathlib.Path:
    rel = TARGETS[target]
    if "{shard}" in rel:
        array = rel.split("/{shard}")[0]
        arr = zarr.open_group(out, mode="r")[array]
        return zstore._shard_file(out, array, arr, 1)
    return out / rel


def _node(target: str) -> str:
    """The name a refusal must give: the array or group path, or the store itself for the root."""
    rel = TARGETS[target]
    if rel == "zarr.json":
        return ""
    return rel.split("/{shard}")[0].rsplit("/zarr.json", 1)[0].split("/c/")[0]


def _inject(stores, tmp_path, state, target, damage) -> pathlib.Path:
    out = tmp_path / "s.zarr"
    shutil.copytree(stores[state], out)
    f = _target_file(out, target)
    assert f.is_file(), f
    DAMAGES[damage](f)
    return out


def _outcome(stores, out: pathlib.Path, target: str) -> str:
    """Resume the damaged store: 'repaired' (identical bytes) or 'refused' (one line naming the
    damage); anything else fails the test."""
    try:
        run_batch(DRIFT, samples=N, out=out, seed=SEED, block=BLOCK, shard_samples=SHARD, params=PARAMS, resume=True)
    except TumbleError as exc:
        msg = str(exc)
        assert "\n" not in msg and len(msg) < 400, msg
        assert str(out) in msg and _node(target) in msg, (target, msg)
        return "refused"
    got = store_files(out)
    assert sorted(got) == sorted(stores["reference"]), "files differ after resume"
    bad = [k for k in got if got[k] != stores["reference"][k]]
    assert bad == [], f"silently kept: {bad}"
    assert zstore.verify_store(out) == []
    return "repaired"


def _check_case(stores, tmp_path, state, target, damage):
    out = _inject(stores, tmp_path, state, target, damage)
    if state == "finished" and target != "root metadata":
        found = zstore.verify_store(out)
        if not (target == "done shard" and damage == "deleted"):    # done flags gone: samples simply rerun
            assert found, f"{target} {damage}: verify_store found nothing"
    return _outcome(stores, out, target)


@pytest.mark.parametrize("state", ["finished", "half"])
@pytest.mark.parametrize("target,damage", FAST_CASES)
def test_damage_is_repaired_or_refused(stores, tmp_path, state, target, damage):
    _check_case(stores, tmp_path, state, target, damage)


@pytest.mark.slow
@pytest.mark.parametrize("state", ["finished", "half"])
@pytest.mark.parametrize("target,damage", [c for c in CATALOGUE if c not in FAST_CASES])
def test_damage_catalogue(stores, tmp_path, state, target, damage):
    _check_case(stores, tmp_path, state, target, damage)


def test_the_catalogue_covers_every_file_kind_and_damage():
    assert len(CATALOGUE) >= 30 * 2 and {t for t, _ in FAST_CASES} == set(TARGETS)
    assert {d for _, d in FAST_CASES} == set(DAMAGES)
