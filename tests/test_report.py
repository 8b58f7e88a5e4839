"""The report leads with what a run found: its outcome tables equal the statistics computed from the
store with xarray (read from the page as headless Chromium renders it), the dispersion ellipse's
axes and orientation agree with the 2x2 closed form, failures come with their reasons and rerun
commands, and a store whose samples all failed gets the failure analysis, not empty figures."""

import math
import pathlib

import numpy as np
import pytest
import xarray as xr

from _report_check import browser, check_report_numbers, rendered_page
from tumble import findings, plots, run_batch

DRIFT = str(pathlib.Path(__file__).parent / "scenes_for_tests" / "drift.py")


@pytest.fixture(scope="module")
def cube_store(tmp_path_factory):
    """deploy-cube, 40 samples, point-mass gravity (the kernels the deployment tests compile)."""
    out = tmp_path_factory.mktemp("report") / "cube.zarr"
    return run_batch("deploy-cube", samples=40, out=out, seed=11, params={"gravity": "point_mass"})


def test_deploy_cube_report_numbers_equal_xarray(cube_store, tmp_path):
    n = check_report_numbers(cube_store, tmp_path / "cube.html")
    assert n >= 40                                            # ten outputs x (mean, s.e., median, 5 %, 95 %)
    if browser() is None:
        pytest.skip("no Chromium on this machine: the numbers were read from the page's text, not its DOM")


@pytest.mark.parametrize("scene,params", [
    ("station", {"environment": "central", "t_end": 60.0, "record_every": 5}),
    ("capture", {"t_end": 40.0}),
])
def test_multibody_report_numbers_equal_xarray(scene, params, tmp_path):
    store = run_batch(scene, samples=3, out=tmp_path / f"{scene}.zarr", params=params)
    assert check_report_numbers(store, tmp_path / f"{scene}.html") >= 5
    if browser() is None:
        pytest.skip("no Chromium on this machine: the numbers were read from the page's text, not its DOM")


def test_dispersion_axes_match_the_2x2_closed_form(cube_store):
    """Semi-axes are the square roots of the covariance's eigenvalues, (a+c)/2 ± sqrt(((a-c)/2)^2 + b^2),
    and the major axis lies at atan2(2b, a-c)/2 from east, i.e. 90° minus that east of north."""
    v = plots.StoreView.open(cube_store)
    d = findings.dispersion(v)
    f = xr.open_zarr(cube_store, group="final").load()
    p = f.body_position.values[:, 0][f.status.values == 2]
    e, n, _ = plots._tangent_frame(p.mean(axis=0))
    x, y = (p - p.mean(axis=0)) @ e, (p - p.mean(axis=0)) @ n
    a, c, b = np.var(x, ddof=1), np.var(y, ddof=1), np.cov(x, y)[0, 1]
    root = math.sqrt(((a - c) / 2) ** 2 + b * b)
    assert d.n == len(p)
    assert d.sigma_major == pytest.approx(math.sqrt((a + c) / 2 + root), rel=1e-12)
    assert d.sigma_minor == pytest.approx(math.sqrt((a + c) / 2 - root), rel=1e-10)
    az = (90.0 - math.degrees(0.5 * math.atan2(2 * b, a - c))) % 180.0
    assert d.azimuth == pytest.approx(az, abs=1e-9)
    assert d.major95 == pytest.approx(math.sqrt(-2 * math.log(0.05)) * d.sigma_major, rel=1e-15)
    assert d.major_ci[0] <= d.sigma_major <= d.major_ci[1] and d.minor_ci[0] <= d.sigma_minor <= d.minor_ci[1]


def test_dispersion_recovers_a_known_spread():
    """Points drawn from a normal spread of 1σ axes 30 m and 10 m, major axis 30° east of north:
    2,000 points estimate each σ to ~1.6 % (σ/sqrt(2n)), so 5 % and 2° are 3σ-safe bounds."""
    rng = np.random.default_rng(5)
    th = math.radians(30.0)
    major = np.array([math.sin(th), math.cos(th)])           # (east, north)
    minor = np.array([math.cos(th), -math.sin(th)])
    xy = rng.normal(0, 30.0, (2000, 1)) * major + rng.normal(0, 10.0, (2000, 1)) * minor
    a, b, az = findings._axes(xy)
    assert a == pytest.approx(30.0, rel=0.05) and b == pytest.approx(10.0, rel=0.05)
    assert az == pytest.approx(30.0, abs=2.0)


def test_failures_analysed_and_an_all_failed_store_draws_no_empty_figures(tmp_path):
    some = run_batch(DRIFT, samples=10, out=tmp_path / "some.zarr", seed=7,
                     params={"fail_above": 0.8, "raise_above": 0.97})
    text, _ = rendered_page(some, tmp_path / "some.html")
    assert "re-run the first" in text and f"tumble rerun {some}" in text
    assert "Failed samples: " in text
    every = run_batch(DRIFT, samples=6, out=tmp_path / "all.zarr", seed=7, params={"fail_above": -1.0})
    assert (xr.open_zarr(every, group="final").status.values == 9).all()
    text, _ = rendered_page(every, tmp_path / "all.html")
    assert "Every finished sample failed" in text and text.count("<img") == 1
    summary = findings.plain_summary(plots.StoreView.open(every))
    assert summary.startswith("Of 6 finished samples, 6 failed (100 %).")


def test_readable_parameter_rows():
    rows = dict(findings.flat_rows({"a": {"b": 1.5, "c": [1, 2, 3]}, "m": np.arange(30.0).reshape(10, 3).tolist(),
                                    "s": "x", "r": [[1.0, 2.0], [3.0]]}))
    assert rows == {"a.b": "1.50000", "a.c": "1, 2, 3", "m": "30 values, shape (10, 3), from 0 to 29.00",
                    "s": "x", "r[0]": "1, 2", "r[1]": "3"}
