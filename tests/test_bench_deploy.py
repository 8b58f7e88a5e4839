"""``tumble bench deploy``: the measurement itself (interleaved pairs, means, per-core figures, load
averages in the JSON) and the ``--against`` subprocess driver on this tree.

Small and on point-mass gravity: these check what is computed and stored, not how fast anything is.
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
import subprocess
from pathlib import Path

import numpy as np
import pytest

from benchmarks import bench_deploy as bd
from benchmarks.deploy_reference import sample_states
from scenes.deploy import build_cube

REPO = Path(bd.__file__).resolve().parents[1]


def test_interleaved_means_per_core_and_load(tmp_path, capsys):
    out = tmp_path / "deploy.json"
    bd.main(["--gravity", "point_mass", "--samples", "3", "--reference-samples", "1", "--repeat", "2",
             "--out", str(out)])
    text = capsys.readouterr().out
    assert "pair 1:" in text and "pair 2:" in text and "load average after" in text
    d = json.loads(out.read_text())
    assert {"cpu_count", "cpus_available", "numba_threads"} <= set(d["machine"])
    assert len(d["load_average"]) == 3 and len(d["load_average_after"]) == 3
    assert len(d["load_average_after_each_pair"]) == 2
    # one tumble run and one reference block per pair
    assert len(d["wall_s"]) == len(d["reference_block_s"]) == 2
    tum = [w / 3 for w in d["wall_s"]]
    ref = d["reference_block_s"]                        # one trajectory per block
    assert d["s_per_trajectory"] == pytest.approx(statistics.fmean(tum))
    assert d["ratio_mean_vs_mean"] == pytest.approx(statistics.fmean(ref) / statistics.fmean(tum))
    assert d["pair_ratios"] == pytest.approx([r / t for r, t in zip(ref, tum)])
    assert d["median_pair_ratio"] == pytest.approx(statistics.median(d["pair_ratios"]))
    assert 1 <= d["cores_used"] <= min(3, d["machine"]["cpus_available"])
    assert d["trajectories_per_s_per_core"] == pytest.approx(d["trajectories_per_s"] / d["cores_used"])
    assert d["ratio_per_core"] == pytest.approx(d["ratio_mean_vs_mean"] / d["cores_used"])
    assert d["reference_trajectories_per_s"] == pytest.approx(1 / statistics.fmean(ref))
    assert sum(d["status_counts"].values()) == 3 and d["against"] is None


def test_against_driver_on_this_tree():
    """The subprocess driver runs on this tree's API, imports this tree, and draws the batch's inputs
    exactly as the in-process benchmark (``sample_states``, the batch rule) does."""
    job = {"samples": 2, "seed": 3, "gravity": "point_mass", "finals": list(bd.FINALS)}
    r = bd._run_tree(REPO, job, None)
    assert Path(r["ecs_file"]).resolve().is_relative_to(REPO)
    assert r["wall_s"] > 0 and sum(r["status_counts"].values()) == 2 and len(r["status"]) == 2
    scene = build_cube(gravity="point_mass")
    ov = bd._overrides(scene, sample_states(scene, range(2), seed=3))
    h = hashlib.sha256()
    for v in ov.values():                      # by value: the driver's hash must not depend on column names
        h.update(np.ascontiguousarray(v).tobytes())
    assert r["inputs_sha256"] == h.hexdigest()
    assert set(r["finals"]) == set(bd.FINALS) and all(math.isfinite(x) for x in r["finals"]["probe_end_time"])


@pytest.mark.slow  # a fresh worktree compiles every numba kernel (minutes)
def test_against_head_end_to_end(tmp_path):
    out = tmp_path / "deploy.json"
    bd.main(["--gravity", "point_mass", "--samples", "2", "--reference-samples", "0", "--repeat", "1",
             "--against", "HEAD", "--out", str(out)])
    a = json.loads(out.read_text())["against"]
    assert a["pairs"] == 3 and len(a["pair_ratios"]) == 3
    assert a["same_inputs"] and a["status_counts_agree"]
    assert str(tmp_path) not in subprocess.run(["git", "-C", str(REPO), "worktree", "list"], capture_output=True,
                                               text=True).stdout
    assert "tumble-bench-against-" not in subprocess.run(["git", "-C", str(REPO), "worktree", "list"],
                                                         capture_output=True, text=True).stdout
