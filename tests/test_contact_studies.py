"""Slow studies (``pytest -m slow tests/test_contact_studies.py``): tessellated probes on rocky and
noisy terrain never fail, and never sink more than 1 mm.

The configurations that failed before contact entry was made to always resolve (up to 55 % FAILED):
deploy-cube at tessellation levels 1-3 on the procedurally seeded rock texture (1,000 samples
each), the six shapes of deploy-shapes at level 2 on fBm relief plus rock texture (10,000
samples), and a box at levels 1-3 on the same terrain (2,000 samples each). Each study prints its
status counts, wall time and deepest penetration (``final/probe_max_penetration``: the deepest
vertex seen at a flight event, a collision's projection or contact drift).

Only spheres may end TIMED_OUT: deploy-shapes' contact has no rolling resistance (the scene's
Table 4.6 values), so a sphere rolling without slip in a hollow of the relief loses no energy and
rolls on to the 10 h cap (measured: 340 of 1,609 spheres in the 10,000-sample study). With the
seed's C_RR = 0.035 (Table 4.2) every sphere settles: ``deploy-sphere`` with this study's sphere,
contact and terrain, 300 samples, 53 TIMED_OUT without rolling resistance and 0 with it.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
import xarray as xr

from scenes.deploy import SHAPES
from tumble import run_batch

pytestmark = pytest.mark.slow

STUDIES = [
    *[(f"cube-L{lv}-psr", "deploy-cube", 1000, {"level": lv, "rocks": "psr"}) for lv in (1, 2, 3)],
    *[(f"box-L{lv}-fbm-psr", "deploy-box", 2000, {"level": lv, "rocks": "psr", "fbm": True}) for lv in (1, 2, 3)],
    ("shapes-L2-fbm-psr", "deploy-shapes", 10_000, {"level": 2, "rocks": "psr", "fbm": True}),
]

#: Deepest acceptable vertex penetration [m] (the contact gap is 0.1 mm; 1 mm is the acceptance bound).
MAX_PENETRATION = 1e-3


@pytest.mark.parametrize("name,scene,samples,params", STUDIES, ids=[s[0] for s in STUDIES])
def test_tessellated_contact_never_fails(tmp_path, name, scene, samples, params):
    t0 = time.perf_counter()
    out = run_batch(scene, samples=samples, out=tmp_path / f"{name}.zarr", params=params)
    wall = time.perf_counter() - t0
    final = xr.open_zarr(out, group="final").load()
    names = dict(zip(final.status.attrs["flag_values"], final.status.attrs["flag_meanings"].split()))
    codes, counts = np.unique(final.status.values, return_counts=True)
    pen = float(np.nanmax(final.probe_max_penetration.values))
    print(f"\n{name}: {samples} samples in {wall:.0f} s: "
          f"{', '.join(f'{names[int(c)]} {n}' for c, n in zip(codes, counts))}; max penetration {pen * 1e3:.3f} mm")
    assert int((final.status.values == 9).sum()) == 0
    assert pen <= MAX_PENETRATION
    timed_out = final.status.values == 4
    if scene == "deploy-shapes":
        assert (final.probe_shape.values[timed_out, 0] == SHAPES.index("sphere")).all()
    else:
        assert not timed_out.any()
