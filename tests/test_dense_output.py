"""Recording never changes a deployment's physics (dense output, docs/design.md §8.2).

Rows are never stopped at a frame end; a recorded frame shows each row at the frame time through a
fresh DP5(4) step from the start of the step that crossed it. References: the finals of the same
batch without recording (byte-identical), an independent scipy integration of seed 004 eq 2.2 in
the rotating frame, and the closed-form torque-free rotation of a body with isotropic inertia.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import zarr
from scipy.integrate import solve_ivp
from scipy.spatial.transform import Rotation

import tumble

MU = 5.0


def _walk(g, pre=""):
    for k, v in g.members():
        if isinstance(v, zarr.Group):
            yield from _walk(v, pre + k + "/")
        else:
            yield pre + k, v


def test_trajectories_every_10_s_leave_finals_and_events_byte_identical(tmp_path):
    """deploy-cube with no trajectories (300 s frames) and with trajectories every 10 s and every
    21 s (7 s frames, every 3rd recorded): every final/ and events/ array is the same bytes. This
    also holds the contact kernel's FSAL to the bit: a frame end ends a launch, and the next one
    evaluates K₁ = f(Y0) where a continuing launch reuses the last step's K₇ (it fails when the
    attempt does not normalise Y1's attitude before K₇)."""
    runs = {"none": {}, "10s": {"frame": 10.0, "record_every": 1}, "21s": {"frame": 7.0, "record_every": 3}}
    stores = {}
    for name, params in runs.items():
        out = tmp_path / f"{name}.zarr"
        tumble.run_batch("deploy-cube", samples=8, out=out, params=params)
        stores[name] = zarr.open(str(out), mode="r")
    assert "trajectories" in stores["10s"] and stores["10s"]["trajectories/time"].shape[0] > 100
    for name in ("10s", "21s"):
        for grp in ("final", "events"):
            for key, arr in _walk(stores["none"][grp]):
                other = stores[name][grp][key][...]
                assert arr[...].tobytes() == other.tobytes(), f"{grp}/{key} differs with trajectories {name}"


def _flight_world(omega0):
    """A cube over a 100 m point-mass sphere spinning with a 2 h period (frame T), identity attitude."""
    body = tumble.small_body("sphere", radii=(100, 100, 100), gm=MU, period_h=2.0, gravity="point_mass",
                             resolution=32)
    probe = tumble.box_probe((0.3, 0.3, 0.3), mass=10.0, level=0)
    release = tumble.release_above(body, latitude=30.0, longitude=0.0, altitude=60.0)
    release = dataclasses.replace(release, velocity=np.array([0.05, 0.08, -0.05]))
    scene = tumble.deployment("dense", body, probe, release, random_attitude=False)
    world = scene.world
    world.compile(samples=1)
    world.tables[0]["body_omega"][:] = omega0
    return world, body, release


def test_recorded_flight_states_match_an_independent_integration():
    """Records every 10 s of a flight arc against scipy's DOP853 of eq 2.2 (ẍ = g − 2Ω×v − Ω×(Ω×x),
    rtol 1e-12). The engine steps at rtol 1e-10 (|x| ≈ 160 m: ~2e-8 m per step, ~20 steps), and a
    record is a 5th-order step from the crossing step's start: 1e-6 m, 1e-8 m/s hold with margin.
    The attitude: a cube has isotropic inertia, so ω_S/N stays constant in body axes and
    q_S/T(t) = q_T/N(t)* ⊗ exp(t ω_S/N / 2) from the identity, to 1e-9."""
    omega0 = np.array([0.02, -0.05, 0.03])
    world, body, release = _flight_world(omega0)
    cols = ("body_position", "body_velocity", "body_attitude", "probe_phase")
    res = world.run(t_end=200.0, dt=10.0, record_every=1, record=cols)
    fly = res.trajectories["probe_phase"][0, :, 0] == 0
    assert fly.sum() > 10
    t = res.times[fly]
    W = np.asarray(body.rotation)

    def rhs(_t, y):
        x, v = y[:3], y[3:]
        r = np.linalg.norm(x)
        g = -MU * x / r ** 3
        return np.concatenate([v, g - 2 * np.cross(W, v) - np.cross(W, np.cross(W, x))])

    sol = solve_ivp(rhs, (0.0, t[-1]), np.concatenate([release.position, release.velocity]), method="DOP853",
                    rtol=1e-12, atol=1e-12, t_eval=t)
    x = res.trajectories["body_position"][0, fly, 0]
    v = res.trajectories["body_velocity"][0, fly, 0]
    assert np.max(np.abs(x - sol.y[:3].T)) < 1e-6
    assert np.max(np.abs(v - sol.y[3:].T)) < 1e-8
    # attitude: body axes; ω_S/N = ω_S/T + R(q)ᵀ Ω = omega0 + Ω at t = 0 (q = identity)
    w_sn = omega0 + W
    q_sn = Rotation.from_rotvec(np.outer(t, w_sn))                      # body -> N (from identity)
    q_tn = Rotation.from_rotvec(np.outer(t, W))                         # T -> N
    exact = (q_tn.inv() * q_sn).as_quat(scalar_first=True)
    q = res.trajectories["body_attitude"][0, fly, 0]
    sign = np.sign(np.sum(q * exact, axis=1))[:, None]
    assert np.max(np.abs(q - sign * exact)) < 1e-9


def test_a_record_interval_finer_than_the_ring_allows_is_refused():
    world, _, _ = _flight_world(np.zeros(3))
    with pytest.raises(tumble.InputError, match="record interval"):
        world.run(t_end=1.0, dt=0.1, record_every=1, record=("body_position",))
