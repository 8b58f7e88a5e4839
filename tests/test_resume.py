"""Kill a CLI run mid-way, resume it, and get the bytes of an uninterrupted run."""

import os
import pathlib
import random
import signal
import subprocess
import sys
import time

import pytest
import zarr

from tumble import run_batch
from store_helpers import done_count, kill_mid_run, store_files

ROOT = pathlib.Path(__file__).resolve().parents[1]
DRIFT = str(ROOT / "tests" / "scenes_for_tests" / "drift.py")
N, SEED, BLOCK = 32, 5, 2
PARAMS = {"spin": 10000, "fail_above": 0.8}  # spin: slow enough per block to be killed mid-way




def cli(*args, **kw):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    return subprocess.run([sys.executable, "-m", "tumble.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120, **kw)


def test_killed_run_resumes_to_identical_bytes(tmp_path):
    out = tmp_path / "killed.zarr"
    params = [a for k, v in PARAMS.items() for a in ("-p", f"{k}={v}")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    proc = subprocess.Popen([sys.executable, "-m", "tumble.cli", "run", DRIFT, "--samples", str(N), "--seed", str(SEED),
                             "--block", str(BLOCK), "--out", str(out), "--no-progress", *params],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    kill_mid_run(proc, out, N, timeout=90)
    assert proc.returncode == -signal.SIGKILL
    done_after_kill = done_count(out)
    assert 0 < done_after_kill < N

    # without --resume or --overwrite the existing store is refused, untouched
    before = store_files(out)
    r = cli("run", DRIFT, "--samples", str(N), "--seed", str(SEED), "--out", str(out), "--no-progress", *params)
    assert r.returncode == 1 and "already exists" in r.stderr and "--resume" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert store_files(out) == before

    # another seed cannot resume it
    r = cli("run", DRIFT, "--seed", str(SEED + 1), "--out", str(out), "--resume", "--no-progress", *params)
    assert r.returncode == 1 and "seed" in r.stderr and len(r.stderr.strip().splitlines()) == 1

    # --resume (samples and seed come from the store) finishes only what was not done
    r = cli("run", DRIFT, "--out", str(out), "--resume", "--no-progress", *params)
    assert r.returncode in (0, 3), r.stderr  # 3: finished with FAILED samples
    assert f"{N}/{N} samples done" in r.stdout
    runs = zarr.open_group(out, mode="r").attrs["run"]["invocations"]
    assert len(runs) == 2 and runs[0]["complete"] is False and runs[1]["resumed"] is True
    assert runs[1]["samples_run"] == N - done_after_kill
    assert not list(pathlib.Path(out).rglob("*.partial"))

    ref = tmp_path / "uninterrupted.zarr"
    run_batch(DRIFT, samples=N, out=ref, seed=SEED, params=PARAMS)
    a, b = store_files(out), store_files(ref)
    assert sorted(a) == sorted(b)
    assert [k for k in a if a[k] != b[k]] == []


def test_resume_needs_an_existing_store(tmp_path):
    r = cli("run", DRIFT, "--out", str(tmp_path / "nothing.zarr"), "--resume", "--no-progress")
    assert r.returncode == 1 and "no store" in r.stderr


def test_resume_of_a_complete_store_changes_nothing(tmp_path):
    out = tmp_path / "full.zarr"
    run_batch(DRIFT, samples=6, out=out, seed=2)
    before = store_files(out)
    run_batch(DRIFT, samples=6, out=out, seed=2, resume=True)
    assert store_files(out) == before
    runs = zarr.open_group(out, mode="r").attrs["run"]["invocations"]
    assert runs[-1]["samples_run"] == 0


@pytest.mark.parametrize("trial", range(3))
def test_randomized_kill_and_resume_gives_identical_bytes(tmp_path, trial):
    """Kill a run at a random point (random block size and signal: SIGKILL, SIGTERM or Ctrl-C),
    resume it, and compare with an uninterrupted run byte for byte. The draw is printed on failure
    (rerun it with TUMBLE_KILL_SEED=<seed>)."""
    seed = int(os.environ.get("TUMBLE_KILL_SEED", random.SystemRandom().randrange(2**32)))
    rng = random.Random(seed + trial)
    block = rng.choice([1, 2, 3, 5, 8])
    sig = rng.choice([signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
    kill_after = rng.randrange(1, N)          # samples done when the signal is sent (at least)
    what = f"TUMBLE_KILL_SEED={seed} trial {trial}: block {block}, {sig.name} after {kill_after} samples"
    out = tmp_path / "killed.zarr"
    params = [a for k, v in PARAMS.items() for a in ("-p", f"{k}={v}")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    proc = subprocess.Popen([sys.executable, "-m", "tumble.cli", "run", DRIFT, "--samples", str(N), "--seed", str(SEED),
                             "--block", str(block), "--out", str(out), "--no-progress", *params],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    sent = False
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if done_count(out) >= kill_after:
                proc.send_signal(sig)
                sent = True
                break
            time.sleep(0.005)
    finally:
        if not sent and proc.poll() is None:
            proc.kill()
        _, err = proc.communicate(timeout=60)
    if sig == signal.SIGINT and proc.returncode == 130:
        assert err.strip().splitlines() == ["error: interrupted (a run continues with --resume)"], (what, err)
    r = cli("run", DRIFT, "--out", str(out), "--resume", "--no-progress", *params)
    assert r.returncode in (0, 3), (what, r.stderr)  # 3: finished with FAILED samples (fail_above)
    assert f"{N}/{N} samples done" in r.stdout, what
    ref = tmp_path / "uninterrupted.zarr"
    run_batch(DRIFT, samples=N, out=ref, seed=SEED, params=PARAMS)
    a, b = store_files(out), store_files(ref)
    assert sorted(a) == sorted(b), what
    assert [k for k in a if a[k] != b[k]] == [], what
    assert not pathlib.Path(str(out) + ".lock").exists(), what
