"""The command line: run, scenes, inspect, bench, rerun and the error cases. Through a process of its
own (:func:`cli`) wherever the process is part of what is checked (the stored command line, the
progress bar, the working directory, exit statuses of the script); the reruns' output and stores
through the same command line in this process (:func:`cli_helpers.cli_here`), which spares each call
the start of a fresh interpreter (~4 s: imports, scene build, kernels loaded from the cache)."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import zarr

from cli_helpers import cli_here
from scenes.registry import BUILTIN_SCENES

ROOT = pathlib.Path(__file__).resolve().parents[1]
DRIFT = str(ROOT / "tests" / "scenes_for_tests" / "drift.py")


def cli(*args, cwd=ROOT, env=None):
    e = dict(os.environ if env is None else env, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    return subprocess.run([sys.executable, "-m", "tumble.cli", *args], cwd=cwd, env=e, capture_output=True, text=True,
                          timeout=120)


def one_error_line(r):
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("error: ")
    assert "Traceback" not in r.stderr
    return lines[0]


@pytest.fixture(scope="module")
def run_store(tmp_path_factory):
    """One CLI run with a progress bar, the default --out (runs/<scene>-<seed>.zarr under cwd)."""
    cwd = tmp_path_factory.mktemp("cli")
    r = cli("run", DRIFT, "--samples", "12", "--seed", "4", "-p", "fail_above=0.8", "--block", "5", cwd=cwd)
    return cwd, r


def test_run_writes_the_store_and_prints_one_summary_line(run_store):
    cwd, r = run_store
    path = cwd / "runs" / "drift-4.zarr"
    assert path.is_dir()
    lines = r.stdout.strip().splitlines()
    status = np.asarray(zarr.open_group(path, mode="r")["final/status"][:])
    # exit status 3: finished, with FAILED samples (fail_above); then one more line, their reasons
    assert r.returncode == (3 if (status == 9).any() else 0), r.stderr
    assert len(lines) == 1 + int((status == 9).any()) and str(path.relative_to(cwd)) in lines[0]
    assert "12/12 samples done" in lines[0]
    assert "samples" in r.stderr  # the progress bar (on stderr)
    root = zarr.open_group(path, mode="r")
    status = np.asarray(root["final/status"][:])
    n_failed, n_done = int((status == 9).sum()), int((status == 1).sum())
    assert n_failed + n_done == 12
    for name, n in (("done", n_done), ("failed", n_failed)):
        if n:
            assert f"{name} {n}" in lines[0]
    assert root.attrs["seed"] == 4 and root.attrs["samples"] == 12
    cmd = root.attrs["run"]["invocations"][-1]["command_line"]
    assert cmd.startswith("tumble run") and "--block 5" in cmd


def test_inspect(run_store):
    cwd, _ = run_store
    r = cli("inspect", "runs/drift-4.zarr", cwd=cwd)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "drift: two bodies drifting with drag" in out
    assert "samples  12/12 done" in out
    status = np.asarray(zarr.open_group(cwd / "runs" / "drift-4.zarr", mode="r")["final/status"][:])
    assert f"done {(status == 1).sum()}" in out
    for arr, dims in (("trajectories/body_position", "(sample, time, body, xyz)"),
                      ("final/status", "(sample)"), ("events/position", "(sample, event, xyz)"),
                      ("inputs/probe_velocity", "(sample, xyz)")):
        line = next(ln for ln in out.splitlines() if ln.strip().startswith(arr + " "))
        assert dims in line and "stored" in line
    # what the run found: the summary in words and the outputs of the finished (not failed) samples
    assert f"Of 12 finished samples, {(status == 1).sum()} done" in " ".join(out.split())
    fails = (status == 9).sum()
    assert (f"Failed samples: {fails} by " in " ".join(out.split())) if fails else "No sample failed." in out
    assert any(ln.startswith("outputs") and "median" in ln and "95 %" in ln for ln in out.splitlines())


def test_inspect_not_a_store(tmp_path):
    r = cli("inspect", str(tmp_path))
    assert r.returncode == 1 and "not a tumble store" in one_error_line(r)


def test_scenes_lists_names_with_descriptions():
    r = cli("scenes")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert [ln.split()[0] for ln in lines] == sorted(BUILTIN_SCENES)
    for ln in lines:
        name = ln.split()[0]
        assert ln[len(name):].strip() == BUILTIN_SCENES[name][1]


def test_unknown_scene_lists_the_closest_names():
    r = cli("run", "precesion", "--no-progress")
    assert r.returncode == 1
    line = one_error_line(r)
    assert "precesion" in line and "closest: precession" in line


def test_existing_path_is_refused(run_store):
    cwd, _ = run_store
    r = cli("run", DRIFT, "--samples", "12", "--seed", "4", "--no-progress", cwd=cwd)
    assert r.returncode == 1
    line = one_error_line(r)
    assert "runs/drift-4.zarr" in line and "--resume" in line and "--overwrite" in line


def test_bad_option_is_a_usage_error():
    r = cli("run", DRIFT, "--bogus")
    assert r.returncode == 2 and "--bogus" in r.stderr
    r = cli("run", DRIFT, "--backend", "tpu")
    assert r.returncode == 2


def test_gpu_without_cuda_is_one_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    probe = subprocess.run([sys.executable, "-c", "from ecs.kernels import gpu_backend_error as g; print(g() is None)"],
                           env=dict(env, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)), capture_output=True, text=True)
    if probe.stdout.strip() == "True":
        pytest.skip("this machine can run the gpu backend")
    r = cli("run", DRIFT, "--backend", "gpu", "--out", str(tmp_path / "g.zarr"), "--no-progress", env=env)
    assert r.returncode == 1
    assert "gpu" in one_error_line(r) and "CUDA" in r.stderr
    assert not (tmp_path / "g.zarr").exists()


def test_debug_shows_the_traceback():
    r = cli("--debug", "run", "precesion", "--no-progress")
    assert r.returncode != 0 and "Traceback" in r.stderr and "InputError" in r.stderr


def test_bad_scene_parameter_and_missing_benchmark(tmp_path):
    r = cli("run", DRIFT, "-p", "no_such=1", "--out", str(tmp_path / "p.zarr"), "--no-progress")
    assert r.returncode == 1 and "no_such" in one_error_line(r)
    r = cli("bench", "no_such_benchmark")
    assert r.returncode == 1 and "bench_no_such_benchmark" in one_error_line(r)


def test_scenes_name_lists_parameters_with_defaults_and_units():
    r = cli("scenes", "deploy-cube")
    assert r.returncode == 0, r.stderr
    lines = {ln.split()[0]: ln for ln in r.stdout.splitlines()[2:]}
    assert "36000.0" in lines["t_cap"] and "[s]" in lines["t_cap"]
    assert "'voxel'" in lines["gravity"] and "0" in lines["level"]
    r = cli("scenes", DRIFT)
    assert r.returncode == 0 and "fail_above" in r.stdout and "2.0" in r.stdout


def test_help_shows_defaults():
    r = cli("run", "--help")
    assert r.returncode == 0
    text = " ".join(r.stdout.split())
    assert "[default: the store's with --resume; else the scene's: 100 for a scene with dispersions, 1 without]" in text \
        and "[default: cpu]" in text
    assert "trust" in text     # scene files are trusted code


def test_import_tumble_exposes_the_public_api():
    import tumble

    for name in ("World", "Scene", "Dispersion", "run_batch", "load_scene", "Status", "Reason", "normal", "uniform"):
        assert hasattr(tumble, name), name


def test_rerun_reproduces_a_sample_bitwise_and_shows_its_failure(tmp_path):
    out = tmp_path / "r.zarr"
    # seed 7: sample 6 draws drag 0.971 (raises), samples 0, 4, 5 draw 0.8-0.97 (their state goes NaN)
    r = cli_here("run", DRIFT, "--samples", "10", "--seed", "7", "--out", str(out), "--no-progress",
                 "-p", "fail_above=0.8", "-p", "raise_above=0.97")
    assert r.returncode == 3, r.stderr
    root = zarr.open_group(out, mode="r")
    codes = np.asarray(root["final/failure_code"][:])
    ok = int(np.flatnonzero(codes == 0)[0])
    bad = int(np.flatnonzero(codes == 1)[0])       # set FAILED by the scene's own kernel (no reason given)
    r = cli_here("rerun", str(out), str(ok))
    assert r.returncode == 0 and "bitwise identical to the store" in r.stdout, (r.stdout, r.stderr)
    r = cli_here("rerun", str(out), str(bad))
    assert r.returncode == 0 and "failed (unspecified" in r.stdout and "bitwise identical" in r.stdout, r.stdout
    assert np.flatnonzero(codes == 8).tolist() == [6]
    r = cli_here("rerun", str(out), "6")              # a sample that raised raises again (--debug: traceback)
    assert r.returncode == 1 and "drag above 0.97" in one_error_line(r)
    # a changed byte of the stored result is noticed
    arr = zarr.open_group(out, mode="r+")["final/body_position"]
    v = np.asarray(arr[ok:ok + 1]).copy()
    v[0, 0, 0] = np.nextafter(v[0, 0, 0], np.inf)
    arr[ok:ok + 1] = v
    r = cli_here("rerun", str(out), str(ok))
    assert r.returncode == 5 and "final/body_position" in r.stdout
    r = cli_here("rerun", str(out), "10")
    assert r.returncode == 1 and "sample = 10" in one_error_line(r)


def test_rerun_writes_a_dense_trajectory_and_a_step_trace_without_changing_the_sample(tmp_path):
    """deploy-cube stored without trajectories; `rerun --every 5` records every 5 s (dense output:
    the finals stay the stored bits) into a store xarray opens. A scene whose frame is its
    integration step refuses an interval that is not a multiple of it."""
    import xarray as xr

    out = tmp_path / "d.zarr"
    r = cli_here("run", "deploy-cube", "--samples", "3", "--out", str(out), "--no-progress", "-p", "gravity=point_mass")
    assert r.returncode == 0, r.stderr
    dense = tmp_path / "dense.zarr"
    r = cli_here("rerun", str(out), "1", "--every", "5", "--out", str(dense))
    assert r.returncode == 0 and "bitwise identical to the store" in r.stdout, (r.stdout, r.stderr)
    ds = xr.open_zarr(dense, group="trajectories")
    assert np.allclose(np.diff(ds.time.values[:-1]), 5.0)
    # laid out like the store's trajectories: units, frames and entity names from the source store
    assert ds["body_position"].dims == ("sample", "time", "body", "xyz") and ds.time.size > 100
    assert ds["body_position"].attrs["units"] == "m" and ds["body_position"].attrs["frame"] == "target"
    assert ds.sample.values.tolist() == [1] and ds.body_name.values.tolist() == ["probe"]
    end = float(zarr.open_group(out, mode="r")["final/probe_end_time"][1, 0])
    # after the sample ended its state is frozen: the last record is the stored final position
    stored = np.asarray(zarr.open_group(out, mode="r")["final/body_position"][1, 0])
    assert ds.time.values[-1] >= end
    assert np.array_equal(ds["body_position"].values[0, -1, 0], stored)
    # and tumble animate draws it, with the target's shape model copied from the source store
    from tumble.animate import animate

    gif = animate(dense, 1, tmp_path / "dense.gif", fps=5, max_frames=8)
    assert gif.stat().st_size > 5_000 and "target_vertices" in xr.open_zarr(dense, group="scene")
    # the per-step trace: every accepted step, times increasing, steps summing to the time covered;
    # recording and tracing still leave the sample's finals the stored bits
    r = cli_here("rerun", str(out), "1", "--trace", "200000", "--out", str(tmp_path / "trace.zarr"))
    assert r.returncode == 0 and "bitwise identical to the store" in r.stdout and "step trace" in r.stdout, r.stdout
    tr = xr.open_zarr(tmp_path / "trace.zarr")
    n = int(tr["trace_count"].values[0])
    t = tr["trace_time"].values[0, :n]
    h = tr["trace_step"].values[0, :n]
    assert n > 100 and np.all(np.diff(t) >= 0)
    assert set(np.unique(tr["trace_phase"].values[0, :n])) <= {0.0, 2.0}       # FLY, CONTACT
    # each step ends where the next begins: t_k − h_k = t_{k−1} (collisions take no time)
    assert np.max(np.abs((t[1:] - h[1:]) - t[:-1])) < 1e-9 * t[-1]
    assert abs(t[-1] - end) < 1e-9 * end
    # rerun never deletes what it did not write (issue 38): the source store, a folder holding it, a
    # file and a foreign folder are refused before any work; its own dense store only with --overwrite
    before = np.asarray(zarr.open_group(out, mode="r")["final/body_position"][...])
    (tmp_path / "notes.txt").write_text("keep me")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "data.csv").write_text("1,2")
    for dest, why in ((out, "must not be the store being rerun"), (tmp_path, "must not be the store being rerun"),
                      (tmp_path / "notes.txt", "is not a directory"),
                      (tmp_path / "mine", "not a dense store written by tumble rerun"),
                      (dense, "add --overwrite")):
        r = cli_here("rerun", str(out), "1", "--every", "5", "--out", str(dest))
        assert r.returncode == 1 and why in one_error_line(r), (dest, r.stdout, r.stderr)
    assert np.array_equal(np.asarray(zarr.open_group(out, mode="r")["final/body_position"][...]), before)
    assert (tmp_path / "notes.txt").read_text() == "keep me" and (tmp_path / "mine" / "data.csv").exists()
    r = cli_here("rerun", str(out), "1", "--every", "5", "--out", str(dense), "--overwrite")
    assert r.returncode == 0 and "bitwise identical to the store" in r.stdout, (r.stdout, r.stderr)
    fr = tmp_path / "f.zarr"
    r = cli_here("run", "free_fall", "--samples", "1", "--out", str(fr), "--no-progress")
    assert r.returncode == 0, r.stderr
    r = cli_here("rerun", str(fr), "0", "--every", "0.0123")
    assert r.returncode == 1 and "multiple of the scene's frame" in one_error_line(r)
    r = cli_here("rerun", str(fr), "0", "--trace", "10")
    assert r.returncode == 1 and "traces its steps" in one_error_line(r)


def test_a_10_h_bouncy_study_keeps_every_event_or_reports_the_overflow(tmp_path):
    """restitution 0.95 over the 10 h cap: 16 slots overflow and run/inspect say so; --event-capacity
    keeps every collision (one event each: event_count == probe_collisions), more than the
    deployment's default 256 slots would (scenes.deploy.DEPLOY_EVENT_CAPACITY)."""
    args = ["run", "deploy-cube", "--samples", "8", "-p", "restitution=0.95", "-p", "gravity=point_mass",
            "--no-progress"]
    r = cli_here(*args, "--out", str(tmp_path / "a.zarr"), "--event-capacity", "16")
    assert r.returncode == 0, r.stderr
    assert "samples produced more events than the event log holds" in r.stdout
    r2 = cli_here("inspect", str(tmp_path / "a.zarr"))
    assert "more events than the event log holds" in r2.stdout
    r = cli_here(*args, "--out", str(tmp_path / "b.zarr"), "--event-capacity", "2000")
    assert r.returncode == 0 and "more events" not in r.stdout, r.stdout
    root = zarr.open_group(tmp_path / "b.zarr", mode="r")
    assert not np.asarray(root["events/event_overflow"][:]).any()
    count = np.asarray(root["final/event_count"][:])
    assert count.max() > 64
    np.testing.assert_array_equal(count, np.asarray(root["final/probe_collisions"][:]).ravel())


def test_rerun_runs_the_very_scene_file_the_store_was_written_from(tmp_path):
    """The store keeps its scene file's resolved path and content hash: a rerun from another
    directory holding a file of the same name runs the original, and a changed file is refused."""
    import shutil

    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    shutil.copy(ROOT / "tests" / "scenes_for_tests" / "drift.py", a / "drift.py")
    (b / "drift.py").write_text("raise SystemExit('the wrong scene file ran')\n")
    r = cli("run", "drift.py", "--samples", "2", "--out", "s.zarr", "--no-progress", cwd=a)
    assert r.returncode in (0, 3), r.stderr
    scene = zarr.open_group(a / "s.zarr", mode="r").attrs["scene"]
    assert scene["file"] == str((a / "drift.py").resolve()) and len(scene["sha256"]) == 64
    r = cli("rerun", str(a / "s.zarr"), "0", cwd=b)
    assert r.returncode == 0 and "bitwise identical to the store" in r.stdout, (r.stdout, r.stderr)
    with open(a / "drift.py", "a") as f:
        f.write("\n# edited after the run\n")
    r = cli("rerun", str(a / "s.zarr"), "0", cwd=b)
    assert r.returncode == 1 and "has changed since the run" in one_error_line(r), r.stderr


def test_a_run_without_a_sample_count_takes_the_scenes(tmp_path):
    """Not told how many: a scene with dispersions runs a first Monte-Carlo look
    (ecs.scene.DEFAULT_SAMPLES), one without runs once (every sample would be the same)."""
    import zarr

    from ecs.scene import DEFAULT_SAMPLES
    from tumble import run_batch

    mc = run_batch(DRIFT, out=tmp_path / "mc.zarr", params={"t_end": 0.2})
    assert zarr.open_group(mc, mode="r").attrs["samples"] == DEFAULT_SAMPLES == 100
    one = run_batch("free_fall", out=tmp_path / "one.zarr")
    assert zarr.open_group(one, mode="r").attrs["samples"] == 1
