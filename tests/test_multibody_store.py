"""Multibody stores describe themselves: joints by name and unit (views of the packed joint
columns), code arrays with CF flags, and the capture outcome in final/ — each checked against the
store's own raw columns or an independent computation from them."""

import numpy as np
import pytest
import xarray as xr

from components.multibody import JOINT_KINDS, Joint
from scenes.station import ARM_JOINTS
from tumble import plots, run_batch


@pytest.fixture(scope="module")
def station_store(tmp_path_factory):
    out = tmp_path_factory.mktemp("mb") / "station.zarr"
    return run_batch("station", samples=3, out=out, params={"environment": "central", "t_end": 60.0,
                                                            "record_every": 5})


def test_joint_angles_by_name_are_the_revolute_slots_of_joint_q(station_store):
    """One line of xarray gives one joint's angle: joint_angle.sel(joint=...) equals slot 0 of the
    packed joint_q of that joint's link (links 2-8 of the chain carry ARM_JOINTS), in rad; the rates
    likewise from joint_qd, in both final/ and trajectories/."""
    for grp in ("final", "trajectories"):
        ds = xr.open_zarr(station_store, group=grp).load()
        assert list(ds.joint.values) == list(ARM_JOINTS)
        assert ds.joint_angle.attrs["units"] == "rad"
        raw = ds.joint_q.values[..., 2:9, 0]
        np.testing.assert_array_equal(ds.joint_angle.values, raw)
        elbow = ds.joint_angle.sel(joint="elbow_pitch")
        np.testing.assert_array_equal(elbow.values, ds.joint_q.values[..., 5, 0])
    fin = xr.open_zarr(station_store, group="final").load()
    np.testing.assert_array_equal(fin.joint_rate.values, fin.joint_qd.values[:, 2:9, 0])
    assert fin.joint_rate.attrs["units"] == "rad/s"
    assert fin.joint_angle.sel(joint="elbow_pitch").plot() is not None          # the README's one line


def test_code_arrays_carry_cf_flags(tmp_path):
    """Codes say what they mean (CF flag_values / flag_meanings): the joint kind, a deployment's
    probe phase and the collision event kinds and vertex types."""
    cube = run_batch("deploy-cube", samples=2, out=tmp_path / "c.zarr", params={"gravity": "point_mass"})
    ev = xr.open_zarr(cube, group="events")
    assert ev.kind.attrs["flag_meanings"].split() == ["unused", "bounce", "contact_entry"]
    assert ev.vertex_type.attrs["flag_values"] == [-1, 0, 1, 2]
    kinds = ev.kind.values[np.isfinite(ev.time.values)]
    assert set(kinds.tolist()) <= {0, 1} and len(kinds) > 0
    spec = next(c for c in Joint.__columns__ if c.name == "joint_kind")
    assert spec.flags == JOINT_KINDS


def test_capture_outcome_in_final_matches_the_points_it_checks(tmp_path):
    """final/separation_within says captured (1) or missed (0): it equals |tip − fixture| <= reach
    computed here from final/poi_position, the distance equals that norm, and the first time within
    reach lies within one frame (1 s) after the latch's start event."""
    for offset, captured in ((0.0, 1), (0.5, 0)):
        store = run_batch("capture", samples=1, out=tmp_path / f"c{offset}.zarr",
                          params={"t_end": 60.0, "offset": offset, "miss_spread": 0.0, "speed_spread": 0.0,
                                  "record_every": None})
        f = xr.open_zarr(store, group="final").load()
        ev = xr.open_zarr(store, group="events").load()
        names = list(f.poi_name.values)
        d = np.linalg.norm(f.poi_position.values[0, names.index("arm.tip")]
                           - f.poi_position.values[0, names.index("flyer.fixture")])
        assert f.separation_distance.values[0, 0] == pytest.approx(d, rel=1e-12)
        assert int(f.separation_within.values[0, 0]) == captured == int(d <= 0.15 + 0.05)
        latch = (ev.contact_change.values[0] == 1) & (ev.contact_facet_a.values[0] == 0)
        if captured:
            t_latch = float(ev.contact_time.values[0][latch][0])
            assert 0.0 <= f.separation_first_within.values[0, 0] - t_latch <= 1.0 + 1e-9
        else:
            assert not latch.any() and np.isnan(f.separation_first_within.values[0, 0])
        assert "separation" in plots.kinds_for(store)
        from tumble import findings

        meaning = "within" if captured else "apart"
        assert findings.code_counts(plots.StoreView.open(store)) == [
            ("separation_within", f.separation_within.attrs["long_name"], {meaning: 1})]
        assert f"separation_within: 1 {meaning}." in findings.plain_summary(plots.StoreView.open(store))


def test_capture_contact_summary_in_final_is_the_event_log_reduced_per_sample(tmp_path):
    """final/contact_* (systems.facets.contact.CONTACT_SUMMARIES) equal, sample by sample, what a plain
    loop over that sample's logged events gives: starts counted, the first start's time, the last
    end's time, the fastest-closing start's v·n, the largest penetration; NaN where none."""
    store = run_batch("capture", samples=3, out=tmp_path / "c.zarr", params={"t_end": 90.0, "record_every": None})
    f = xr.open_zarr(store, group="final").load()
    ev = xr.open_zarr(store, group="events").load()
    assert f.contact_starts.attrs["units"] == "1" and f.contact_max_penetration.attrs["units"] == "m"
    assert (f.contact_starts.values > 0).any()
    for s in range(3):
        n = int(f.event_count.values[s])
        ch, t = ev.contact_change.values[s, :n], ev.contact_time.values[s, :n]
        vn, pen = ev.contact_normal_speed.values[s, :n], ev.contact_penetration.values[s, :n]
        starts = [k for k in range(n) if ch[k] == 1]
        ends = [k for k in range(n) if ch[k] == 2]
        assert f.contact_starts.values[s] == len(starts)
        nan = float("nan")
        np.testing.assert_array_equal(f.contact_first_time.values[s], t[starts[0]] if starts else nan)
        np.testing.assert_array_equal(f.contact_last_end_time.values[s], t[ends[-1]] if ends else nan)
        np.testing.assert_array_equal(f.contact_min_normal_speed.values[s], min(vn[starts]) if starts else nan)
        np.testing.assert_array_equal(f.contact_max_penetration.values[s], max(pen) if n else nan)


def test_event_summary_reductions_and_declaration_errors():
    """EventSummary over a hand-written log: only slots below the count and matching ``where`` take
    part; no event gives NaN (count 0); a summary of an undeclared field or an unknown reduction is
    refused."""
    from ecs.events import EventLog

    log = EventLog(capacity=4)
    log.declare("kind", dtype=np.int8)
    log.declare("t", unit="s")
    log.summarize("n_a", "kind", "count", where=("kind", 1))
    log.summarize("first_b", "t", "first", where=("kind", 2))
    log.summarize("last_any", "t", "last")
    log.summarize("max_t", "t", "max")
    events = {"kind": np.array([[1, 2, 1, 2], [2, -1, -1, -1], [-1, -1, -1, -1]], np.int8),
              "t": np.array([[1.0, 2.0, 3.0, 4.0], [5.0, 9.0, 9.0, 9.0], [np.nan] * 4])}
    count = np.array([3, 1, 0])                        # sample 0 logged 3 (the 4th slot is ignored)
    got = {k: sm.of(events, count) for k, sm in log.summaries.items()}
    np.testing.assert_array_equal(got["n_a"], [2, 0, 0])
    np.testing.assert_array_equal(got["first_b"], [2.0, 5.0, np.nan])
    np.testing.assert_array_equal(got["last_any"], [3.0, 5.0, np.nan])
    np.testing.assert_array_equal(got["max_t"], [3.0, 5.0, np.nan])
    assert log.summaries["first_b"].unit == "s" and log.summaries["n_a"].unit == "1"
    with pytest.raises(ValueError, match="declared scalar event field"):
        log.summarize("bad", "nope", "max")
    with pytest.raises(ValueError, match="must be one of"):
        log.summarize("bad", "t", "mean")


def test_joint_figure_draws_each_joint_by_name_with_its_recorded_median(station_store, tmp_path):
    """One panel per revolute joint, titled by its name; the black median line of each panel is the
    across-sample median of trajectories/joint_angle in degrees (numpy, independent of the figure)."""
    import matplotlib

    matplotlib.use("Agg")
    assert "joints" in plots.kinds_for(station_store)
    fig = plots.joints(plots.StoreView.open(station_store))
    tr = xr.open_zarr(station_store, group="trajectories").load()
    panels = [ax for ax in fig.axes if ax.get_visible() and ax.get_title()]
    assert [ax.get_title() for ax in panels] == list(ARM_JOINTS)
    for k, ax in enumerate(panels):
        med = next(line for line in ax.get_lines() if line.get_label() == "median")
        np.testing.assert_allclose(med.get_ydata(), np.degrees(np.median(tr.joint_angle.values[:, :, k], axis=0)),
                                   rtol=1e-12)
    files = plots.plot(station_store, ["joints", "finals"], out_dir=tmp_path)
    assert all(p.stat().st_size > 5_000 for p in files)


def test_end_effector_figure_is_each_point_relative_to_the_base_in_its_axes(station_store, tmp_path):
    """The end-effector figure's numbers: poi_position − link_position[base] rotated into the base's
    axes, checked against scipy's Rotation (link_attitude is link→inertial, scalar-first), and the
    station.imu, fixed on the base at STATION_COM, stays there at every recorded time (rigid-body
    kinematics; 1e-6 m allows the round-off of differencing orbit-sized positions, ~7e6 m × 1e-16 × a
    few operations, with margin). The figure's median lines are numpy's medians of those offsets."""
    import matplotlib
    from scipy.spatial.transform import Rotation

    from scenes.station import STATION_COM

    matplotlib.use("Agg")
    assert "end-effector" in plots.kinds_for(station_store)
    x, names, base = plots.end_effector_offsets(plots.StoreView.open(station_store))
    tr = xr.open_zarr(station_store, group="trajectories").load()
    assert names == ["station.imu", "arm.tip"] and base == "station"
    q = tr.link_attitude.values[:, :, 0].reshape(-1, 4)
    d = (tr.poi_position.values - tr.link_position.values[:, :, :1]).reshape(-1, 2, 3)
    ref = np.stack([Rotation.from_quat(q[:, [1, 2, 3, 0]]).inv().apply(d[:, k]) for k in range(2)], axis=1)
    np.testing.assert_allclose(x.reshape(-1, 2, 3), ref, rtol=0, atol=1e-9)
    np.testing.assert_allclose(x[:, :, 0], np.broadcast_to(STATION_COM, x[:, :, 0].shape), rtol=0, atol=1e-6)
    assert np.ptp(np.linalg.norm(x[:, :, 1], axis=-1)) > 1e-3          # the tip moves relative to the base
    fig = plots.end_effector(plots.StoreView.open(station_store))
    tip_x = next(ax for ax in fig.axes if ax.get_title().startswith("arm.tip: x"))
    med = next(line for line in tip_x.get_lines() if line.get_label() == "median")
    np.testing.assert_allclose(med.get_ydata(), np.median(x[:, :, 1, 0], axis=0), rtol=1e-12)
    files = plots.plot(station_store, ["end-effector"], out_dir=tmp_path)
    assert files[0].stat().st_size > 5_000
