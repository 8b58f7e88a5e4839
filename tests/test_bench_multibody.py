"""``tumble bench multibody``: the codes step the same chain, and the measurement stores what
it says. MuJoCo (``mujoco``, in the test extra) is an independent implementation of the chain's
dynamics: its RK4 from the same state lands on the same joint angles."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks import bench_multibody as bm


def test_tumble_and_mujoco_step_the_same_8_link_chain():
    """A free base and the 7-joint arm, no gravity, 1 s of RK4 at 10 ms from random joint rates:
    joint angles agree to 1e-9 rad (measured 4.0e-12: the two RK4s differ only in how the base's
    quaternion is advanced within a step; a wrong axis, offset or inertia entry shows at 1e-3)."""
    pytest.importorskip("mujoco")
    tb = bm.Tumble(3, 100, 0.01, gravity=False)
    tb.run()
    mj = bm.MuJoCo(3, 100, 0.01, 1)
    mj.run()
    moved = np.max(np.abs(tb.angles()))              # the joints start at 0 rad
    assert moved > 1e-3, "the joints must have turned"
    assert np.max(np.abs(tb.angles() - mj.angles())) <= 1e-9


def test_bench_stores_rates_per_core_and_the_check(tmp_path, capsys):
    pytest.importorskip("mujoco")
    out = tmp_path / "mb.json"
    bm.main(["--samples", "4", "--pin-samples", "1", "--pin-cpp-samples", "0", "--steps", "20", "--repeat", "2",
             "--out", str(out)])
    res = json.loads(out.read_text())
    assert res["check"]["tumble_vs_mujoco_rad"] <= 1e-9 and res["check"]["tumble_vs_pinocchio_rad"] <= 1e-7
    for k in ("tumble", "tumble-no-gravity", "mujoco", "pinocchio"):
        c = res["codes"][k]
        assert len(c["steps_per_s"]) == 2 and c["median_steps_per_s_per_core"] > 0
    assert len(res["loadavg"]) == 3 and "numba_threads" in res["machine"]
    assert "per core: tumble / MuJoCo" in capsys.readouterr().out


@pytest.mark.slow
def test_pinocchio_cpp_steps_the_chain_as_the_python_peer_and_tumble(tmp_path):
    """The compiled peer (a g++ build against the pin wheel, seconds to minutes: not in the default
    suite). The ``lib`` build with the Python peer's joints calls the same compiled aba and integrate in
    the same order: the same joint angles to the bit; against tumble within 1e-8 rad (measured 1.1e-9 rad
    after 1 s, as the Python peer). ``rx-ry-rz`` joints step the same chain."""
    pytest.importorskip("pinocchio")
    binary, why = bm.build_pin_cpp("lib")
    if binary is None:
        pytest.skip(f"Pinocchio C++: {why}")
    pn = bm.Pinocchio(2, 100, 0.01)
    pn.run()
    tb = bm.Tumble(1, 100, 0.01, gravity=False)
    tb.run()
    for joints in (False, True):
        pc = bm.PinocchioCpp(binary, 2, 100, 0.01, aligned=joints)
        assert pc.run() > 0 and pc.result["steps_per_s"] > 0
        if not joints:
            assert np.array_equal(pc.angles(), pn.angles()[:1])
        assert np.max(np.abs(pc.angles() - tb.angles())) <= 1e-8
    out = tmp_path / "mb.json"
    bm.main(["--samples", "2", "--pin-samples", "1", "--pin-cpp-samples", "2", "--steps", "20", "--repeat", "1",
             "--out", str(out)])
    res = json.loads(out.read_text())
    assert res["check"]["tumble_vs_pinocchio_cpp_rad"] <= 1e-8 and res["check"]["pinocchio_cpp_vs_pinocchio_rad"] == 0
    assert res["codes"]["pinocchio-cpp"]["cores"] == 1 and res["ratio_per_core_tumble_over_pinocchio_cpp"] > 0
