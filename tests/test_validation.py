"""Published landings against tumble's predictions with parameters from *other* sources.

The table these tests hold up is docs/validation.md ("Does it match reality?" in the README).

MASCOT on Ryugu (Scholten et al. 2019; ``scenes/mascot.py``) with the granular contact law
``contact='regolith'`` (:func:`components.contact_params.low_gravity_regolith`), whose three
parameters come from microgravity impact experiments into regolith simulants (COLLIDE, PRIME;
Colwell & Taylor 1999, Brisset et al. 2018), none from a lander. Nothing is fitted to the bouncing:
the flown time from first contact to rest (663 s) and the distance from first contact to rest
(17 m) must fall inside the simulated 5–95 % bands, whose spread comes from the lander's attitude at
release (uniform). The fall time is not a check (the release speed is fitted to it); it must stay
within the scene's stated ±10 s.

300 samples: the 5 % and 95 % quantiles of the bouncing time then have a Monte-Carlo standard error
of about 35 s (√(0.05·0.95/300) over a density of ~1/1,300 s⁻¹ there), and the flown 663 s lies
~200 s above the measured 5 % point (459 s), so the test is not decided by sampling noise.
"""

from __future__ import annotations

import numpy as np
import pytest

from tumble.calibrate import OBSERVABLES, open_store_groups


@pytest.fixture(scope="module")
def mascot_regolith(tmp_path_factory):
    from tumble import run_batch

    out = tmp_path_factory.mktemp("mascot") / "regolith.zarr"
    return open_store_groups(run_batch("mascot", samples=300, out=out, params={"contact": "regolith"}))


def _band(store, name):
    v = OBSERVABLES[name].read(store)
    v = v[np.isfinite(v)]
    return v, np.quantile(v, [0.05, 0.5, 0.95])


def test_mascot_bouncing_is_inside_the_regolith_law_bands(mascot_regolith):
    from scenes.mascot import OBSERVED

    st = mascot_regolith
    from ecs.status import Status

    assert np.all(np.asarray(st["final"]["status"].values) == Status.SETTLED)
    for name in ("bounce_time", "displacement"):
        v, (lo, med, hi) = _band(st, name)
        assert v.size == 300, name
        flown = OBSERVED[name][0]
        assert lo <= flown <= hi, (name, flown, lo, med, hi)
    fall, _ = _band(st, "fall_time")
    assert np.all(np.abs(fall - OBSERVED["fall_time"][0]) <= OBSERVED["fall_time"][1])


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
