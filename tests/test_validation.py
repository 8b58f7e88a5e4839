"""Published landings against tumble's predictions with parameters from *other* sources.

The table these tests hold up is docs/validation.md ("Does it match reality?" in the README).

MASCOT on Ryugu (Scholten et al. 2019; ``scenes/mascot.py``) with the granular contact law
``contact='regolith'`` (:func:`components.contact_params.low_gravity_regolith`), whose three
parameters come from microgravity impact experiments into regolith simulants (COLLIDE, PRIME;
Colwell & Taylor 1999, Brisset et al. 2018), none from a lander. Nothing is fitted to the bouncing:
the flown time from first contact to rest (663 s) and the distance from first contact to rest
(17 m) must fall inside the simulated 5–95 % bands, whose spread comes from the lander's attitude at
release (uniform). The fall time is not a check (the release speed is fitted to it); it must stay
within the scene's stated ±10 s. The flown contacts are compared as the reconstruction resolves
them: five hops (first contact, four intermediate contacts, settlement point) against the simulated
flights whose path leaves the ground by at least the reconstruction's 0.1 m (1σ) accuracy
(``tumble.calibrate.hops``); how high a simulated flight went is checked against recorded
trajectories.

Hayabusa on Itokawa (Yano et al. 2006, JAXA 2005; ``scenes/hayabusa.py``) with the same law and
the same defaults: the reported time from the first contact to rest (about 1,320 s) must fall inside
the simulated band, and the seed's rigid model must miss it. What the law does not reproduce is
checked too, so that docs/validation.md cannot go stale: the first bounce's flight of about 1,200 s
lies above every regolith sample's longest flight and inside the rigid model's band.

300 samples: the 5 % and 95 % quantiles of the bouncing time then have a Monte-Carlo standard error
of about 35 s (√(0.05·0.95/300) over a density of ~1/1,300 s⁻¹ there), and the flown 663 s lies
~200 s above the measured 5 % point (459 s), so the test is not decided by sampling noise.
"""

from __future__ import annotations

import numpy as np
import pytest

from tumble.calibrate import OBSERVABLES, observable, open_store_groups


@pytest.fixture(scope="module")
def mascot_regolith_path(tmp_path_factory):
    from tumble import run_batch

    out = tmp_path_factory.mktemp("mascot") / "regolith.zarr"
    return run_batch("mascot", samples=300, out=out, params={"contact": "regolith"})


@pytest.fixture(scope="module")
def mascot_regolith(mascot_regolith_path):
    return open_store_groups(mascot_regolith_path)


def _band(store, name):
    v = OBSERVABLES[name].read(store)
    v = v[np.isfinite(v)]
    return v, np.quantile(v, [0.05, 0.5, 0.95])


def test_mascot_bouncing_is_inside_the_regolith_law_bands(mascot_regolith):
    from scenes.mascot import OBSERVED

    st = mascot_regolith
    from ecs.status import Status

    assert np.all(np.asarray(st["final"]["status"].values) == Status.SETTLED)
    for name in ("bounce_time", "displacement", "hops"):
        v, (lo, med, hi) = _band(st, name)
        assert v.size == 300, name
        flown = OBSERVED[name][0]
        assert lo <= flown <= hi, (name, flown, lo, med, hi)
    fall, _ = _band(st, "fall_time")
    assert np.all(np.abs(fall - OBSERVED["fall_time"][0]) <= OBSERVED["fall_time"][1])
    # the hops do not hang on the resolution (half and twice the path's 1σ), nor on whether the last
    # leg to the settlement point was a flight (5) or not (4)
    for name in ("hops>0.05", "hops", "hops>0.2"):
        v = observable(name).read(st)
        lo, hi = np.quantile(v[np.isfinite(v)], [0.05, 0.95])
        assert lo <= 4 and 5 <= hi, (name, lo, hi)


def test_the_report_says_how_many_bounces_a_reconstruction_would_see(mascot_regolith_path, mascot_regolith):
    """``tumble report``'s summary gives the hops beside the raw bounces (wiring: the same quantiles)."""
    from tumble import findings, plots
    from tumble.calibrate import hops

    text = findings.plain_summary(plots.StoreView.open(mascot_regolith_path))
    n = hops(mascot_regolith)
    p5, med, p95 = np.percentile(n[np.isfinite(n)], [5, 50, 95])
    assert f"Of those bounces, {findings.fmt(med, 3)} (5–95 %: {findings.fmt(p5, 3)}–{findings.fmt(p95, 3)}) were hops" in text
    assert med < np.median(np.asarray(mascot_regolith["final"]["probe_bounces"].values))


def test_regolith_law_is_what_separates_it_from_the_rigid_seed_model(mascot_regolith, tmp_path):
    """The same scene with the seed's rigid contact at e = 0.6 (its parameter ranges' centre) keeps
    the flown bouncing time below its 5 % point: the check above can fail, and fails for the model
    the seed uses (README table: 3,937 s median, flown below every one of 1,000 samples)."""
    from tumble import run_batch

    rigid = open_store_groups(run_batch("mascot", samples=40, out=tmp_path / "rigid.zarr"))
    v, (lo, _, _) = _band(rigid, "bounce_time")
    assert 663.0 < lo, lo
    reg, _ = _band(mascot_regolith, "bounce_time")
    assert np.median(reg) < 0.5 * np.median(v)


#: Event slots per Hayabusa landing in these tests (the scenes' default keeps 256)
HAYABUSA_EVENT_CAPACITY = 1024


@pytest.fixture(scope="module")
def hayabusa_regolith(tmp_path_factory):
    from tumble import run_batch

    out = tmp_path_factory.mktemp("hayabusa") / "regolith.zarr"
    # room for every collision: a landing that slides for hours makes a contact entry every few
    # seconds (one made 262 collisions at one commit, 130 at the next, by round-off alone), and its
    # longest flight is NaN once its log overflows the default 256 slots (an incomplete log)
    return open_store_groups(run_batch("hayabusa", samples=300, out=out, params={"contact": "regolith"},
                                       event_capacity=HAYABUSA_EVENT_CAPACITY))


def test_flight_sagitta_is_how_far_the_recorded_path_leaves_the_chord(tmp_path):
    """``tumble.calibrate.flights`` reads a flight's sagitta from its two collision records alone,
    ``|Δv| T/8`` (exact for a parabola in a uniform field). The recorded trajectory (a frame every
    2 s) gives it independently: the largest distance of the CoM from the chord traversed at constant
    speed. They agree to 1 %: a 2 s frame can miss the apex by at most ``g (1 s)²/2 ≈ 6e-5 m``
    (0.3 % of the 2 cm a 40 s flight, the shortest compared, reaches at g ≈ 1.1e-4 m/s²), and
    Ryugu's field varies over a hop of metres, and the Coriolis term acts, by parts per thousand
    (measured: ≤ 0.2 %)."""
    import xarray as xr

    from tumble import run_batch
    from tumble.calibrate import flights, hops

    path = run_batch("mascot", samples=4, out=tmp_path / "rec.zarr", params={
        "contact": "regolith", "frame": 2.0, "record_every": 1, "t_cap": 6000.0})
    st = open_store_groups(path)
    tr = xr.open_zarr(path, group="trajectories", consolidated=False)
    tt = tr["time"].values
    pos = tr["body_position"].values[:, :, 0, :]
    T, sag = flights(st)
    ev = st["events"]
    t0, x = np.asarray(ev["time"].values), np.asarray(ev["position"].values)
    checked = 0
    for s, j in zip(*np.nonzero(T >= 40.0)):
        m = (tt > t0[s, j]) & (tt < t0[s, j + 1])
        chord = x[s, j] + (x[s, j + 1] - x[s, j]) * ((tt[m] - t0[s, j]) / T[s, j])[:, None]
        far = np.linalg.norm(pos[s, m] - chord, axis=1).max()
        assert far == pytest.approx(sag[s, j], rel=0.01), (s, j, T[s, j], far, sag[s, j])
        checked += 1
    assert checked >= 10
    # flights that start at a lift-off from contact motion are not in the event log: none in these
    # landings comes near a 0.1 m hop (85 s at this site's ~1.1e-4 m/s²; measured: at most 26 s)
    phase = tr["probe_phase"].values[:, :, 0]
    kind = np.asarray(ev["kind"].values)
    for s, j in zip(*np.nonzero(kind[:, :-1] == 1)):
        if not np.isfinite(t0[s, j + 1]):
            continue
        run = longest = 0
        for ph in phase[s, (tt > t0[s, j]) & (tt < t0[s, j + 1])]:
            run = run + 1 if ph == 0 else 0          # DeployPhase.FLY
            longest = max(longest, run)
        assert 2.0 * longest < 60.0, (s, j, longest)
    # the kernel's own count of bounces bounds the resolved ones
    assert np.all(hops(st, 0.1) <= np.asarray(st["final"]["probe_bounces"].values).ravel())


def test_hayabusa_time_to_rest_is_inside_the_regolith_law_band_and_its_first_hop_is_not(hayabusa_regolith,
                                                                                       tmp_path):
    """The flown 1,320 s from first contact to rest lies inside the regolith law's 5–95 % band
    (1,000 samples: 477–2,692 s, the flown value at the 47th percentile), and below the rigid
    seed model's 5 % point (1,813 s; 18 of 1,000 samples shorter). The flown two hops lie inside
    the law's band (1–7; 15th–32nd percentile). The flown first hop of 1,200 s lies above the
    regolith law's longest flight in every sample (at most 849 s of 1,000) and inside the rigid
    model's band (605–1,699 s). Both duration bands are wide against 300-sample noise: the flown
    values lie more than 400 s from the quantiles they are compared with."""
    from ecs.status import Status
    from scenes.hayabusa import OBSERVED
    from tumble import run_batch

    from scenes import hayabusa

    st = hayabusa_regolith
    assert np.all(np.asarray(st["final"]["status"].values) == Status.SETTLED)
    # the scene's published inputs: Itokawa's mass (Fujiwara et al. 2006) and the reported touchdown
    # at about 10 cm/s (the CoM's speed before the first collision; 2 digits are all the reports give)
    assert hayabusa.ITOKAWA_GM == pytest.approx(6.674e-11 * 3.51e10, rel=2e-3)
    v0 = np.linalg.norm(np.asarray(st["events"]["velocity_before"].values)[:, 0], axis=-1)
    assert np.all(np.abs(v0 - 0.10) < 0.005), (v0.min(), v0.max())
    v, (lo, med, hi) = _band(st, "bounce_time")
    assert v.size == 300
    flown = OBSERVED["bounce_time"][0]
    assert lo <= flown <= hi, (flown, lo, med, hi)
    _, (hlo, _, hhi) = _band(st, "hops")
    assert hlo <= OBSERVED["hops"][0] <= hhi, (hlo, hhi)
    hop = OBSERVED["longest_flight"][0]
    assert not np.any(np.asarray(st["events"]["event_overflow"].values))   # every flight is in the log
    assert OBSERVABLES["longest_flight"].read(st).max() < hop

    rigid = open_store_groups(run_batch("hayabusa", samples=60, out=tmp_path / "rigid.zarr",
                                        event_capacity=HAYABUSA_EVENT_CAPACITY))
    assert not np.any(np.asarray(rigid["events"]["event_overflow"].values))
    rv, (rlo, _, _) = _band(rigid, "bounce_time")
    assert flown < rlo, rlo
    rl = np.quantile(OBSERVABLES["longest_flight"].read(rigid), [0.05, 0.95])
    assert rl[0] <= hop <= rl[1], rl
