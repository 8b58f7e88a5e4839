"""Calibration by ABC (tumble.calibrate): the weighting against closed forms, and a synthetic landing
whose true contact parameters are known and recovered.

* With a uniform prior on θ, a simulator ``y = θ + ε`` (ε ~ N(0, τ), the simulator's own scatter) and
  an observation ``y_obs ± σ``, the Gaussian-kernel ABC posterior is exactly the prior times
  N(y_obs; θ, √(σ² + τ²)): a truncated normal (scipy's ``truncnorm``). Tolerances are Monte-Carlo
  ones: 5 standard errors of the weighted estimate, from the effective sample size.
  The posterior predictive band of a new landing is checked against the same closed form sampled.
* Weighted quantiles on equal weights are numpy's ``quantile(method="hazen")`` (the mid-point rule).
* A landing simulated with known e and f, observed as a mission would observe it (time from first
  contact to rest, distance from first contact to rest, each with a stated uncertainty), is
  calibrated against a prior batch: the true restitution lies inside the 90 % credible interval in
  at least 4 of 6 independent landings (for a calibrated method each does with probability 0.9;
  4 or fewer of 6 has probability 1.6 %, and the seeds are fixed), and the interval is informative
  (mean width below 60 % of the prior's).
"""

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from ecs import InputError
from tumble.calibrate import MIN_ESS, OBSERVABLES, calibrate, calibrate_arrays, weighted_quantile, write_calibration


def _truncnorm(mu, s, lo=0.0, hi=1.0):
    return stats.truncnorm((lo - mu) / s, (hi - mu) / s, loc=mu, scale=s)


@pytest.mark.parametrize("tau", [0.0, 0.08])
def test_posterior_is_the_closed_form_truncated_normal(tau):
    rng = np.random.default_rng(3)
    S = 40_000
    theta = rng.random(S)
    y = theta + tau * rng.standard_normal(S)
    y_obs, sigma = 0.3, 0.06
    cal = calibrate_arrays({"theta": theta}, {"y": y}, {"y": (y_obs, sigma)})
    exact = _truncnorm(y_obs, math.hypot(sigma, tau))
    p = cal.parameters["theta"]
    se = exact.std() / math.sqrt(cal.ess)
    assert abs(p["mean"] - exact.mean()) < 5 * se
    assert abs(p["sd"] - exact.std()) < 5 * se
    for q, key in ((0.05, "lo"), (0.5, "median"), (0.95, "hi")):
        # a quantile's standard error: sqrt(q (1 - q) / ESS) / density there
        se_q = math.sqrt(q * (1 - q) / cal.ess) / exact.pdf(exact.ppf(q))
        assert abs(p[key] - exact.ppf(q)) < 5 * se_q, (key, p[key], exact.ppf(q))
    assert p["prior_min"] >= 0.0 and p["prior_max"] <= 1.0
    # the posterior predictive of a new landing: y_new = θ + ε', θ from the posterior above, ε' ~ N(0, τ)
    # (closed form sampled: 400,000 draws). The band comes from kernel density ratios in θ
    # (tumble.calibrate.predictive_weights) whose bandwidth, about 0.016 here, widens it by ~1 %;
    # 0.015 is 4 % of the 90 % band's width, with room for the 4,000-point reference sums.
    r = np.random.default_rng(5)
    y_new = exact.rvs(400_000, random_state=r) + tau * r.standard_normal(400_000)
    want = np.quantile(y_new, [0.05, 0.5, 0.95])
    o = cal.observables["y"]
    got = [o["posterior_lo"], o["posterior_median"], o["posterior_hi"]]
    assert np.allclose(got, want, atol=0.015), (got, want)
    assert o["inside_posterior_band"]


def test_weighted_quantile_on_equal_weights_is_numpys_midpoint_rule():
    v = np.random.default_rng(1).normal(size=501)
    q = [0.0, 0.05, 0.37, 0.5, 0.95, 1.0]
    assert np.allclose(weighted_quantile(v, np.ones_like(v), q), np.quantile(v, q, method="hazen"), atol=1e-12)
    # zero weights drop a sample: the same as leaving it out
    w = np.ones_like(v)
    w[::3] = 0.0
    assert np.allclose(weighted_quantile(v, w, q), np.quantile(v[w > 0], q, method="hazen"), atol=1e-12)


def test_refusals_name_the_field_and_the_rule():
    th = np.linspace(0, 1, 100)
    cases = [({"y": (0.5, 0.0)}, "sigma"), ({"y": (0.5, -1)}, "sigma"), ({"y": (math.nan, 1.0)}, "value"),
             ({"z": (0.5, 0.1)}, "observed"), ({}, "observed"), ({"y": "0.5"}, "observed y")]
    for obs, field in cases:
        with pytest.raises(InputError) as e:
            calibrate_arrays({"theta": th}, {"y": th}, obs)
        assert field in str(e.value)
    with pytest.raises(InputError, match="disperses no parameter"):
        calibrate_arrays({}, {"y": th}, {"y": (0.5, 0.1)})
    with pytest.raises(InputError, match="effective samples"):     # 100 samples, σ far below their spacing
        calibrate_arrays({"theta": th}, {"y": th}, {"y": (0.5, 1e-4)})
    cal = calibrate_arrays({"theta": th}, {"y": th}, {"y": (0.5, 1e-4)}, allow_few=True)
    assert cal.ess < MIN_ESS
    with pytest.raises(InputError, match="no sample"):
        calibrate_arrays({"theta": th}, {"y": np.full(100, np.nan)}, {"y": (0.5, 0.1)})


@pytest.fixture(scope="module")
def landings(tmp_path_factory):
    """A prior batch (e ~ U(0.05, 0.9), f ~ U(0.2, 1.0), 1,000 samples) and 6 landings at e = 0.3, f = 0.6,
    on the built-in ``deploy`` mission (10 kg box, 40 m over a 500 m spinning-top body)."""
    from tumble import run_batch

    d = tmp_path_factory.mktemp("cal")
    prior = run_batch("deploy", samples=1000, out=d / "prior.zarr", seed=11,
                      params={"restitution_range": [0.05, 0.9], "friction_range": [0.2, 1.0]})
    truth = run_batch("deploy", samples=6, out=d / "truth.zarr", seed=7,
                      params={"restitution": 0.3, "friction": 0.6})
    return prior, truth


def test_synthetic_landings_recover_the_true_restitution(landings, tmp_path):
    from tumble.calibrate import open_store_groups

    prior, truth = landings
    st = open_store_groups(truth)
    bounce = OBSERVABLES["bounce_time"].read(st)
    disp = OBSERVABLES["displacement"].read(st)
    assert np.all(np.isfinite(bounce)) and np.all(np.isfinite(disp))
    inside, widths = 0, []
    for s in range(6):     # each landing observed with a 25 % (bounce) and 25 % or 1 m (distance) uncertainty
        obs = {"bounce_time": (bounce[s], 0.25 * bounce[s]), "displacement": (disp[s], max(1.0, 0.25 * disp[s]))}
        cal = calibrate(prior, obs)
        assert set(cal.parameters) == {"restitution", "friction"}      # e_floor/e_max copy e: not parameters
        e = cal.parameters["restitution"]
        inside += e["lo"] <= 0.3 <= e["hi"]
        widths.append(e["hi"] - e["lo"])
        assert cal.ess >= MIN_ESS
    assert inside >= 4, inside
    assert np.mean(widths) < 0.6 * (0.9 - 0.05), widths
    paths = write_calibration(cal, tmp_path / "out")
    assert [p.name for p in paths] == ["calibration.json", "posterior.png", "predictive.png"]
    doc = json.loads(paths[0].read_text())
    assert doc["parameters"]["restitution"]["lo"] == pytest.approx(cal.parameters["restitution"]["lo"])


def test_cli_prints_the_posterior_and_writes_its_files(landings, tmp_path):
    prior, _ = landings
    r = subprocess.run([sys.executable, "-m", "tumble.cli", "calibrate", str(prior), "--observe", "bounce_time=400:100",
                        "--observe", "displacement=12:3", "-o", str(tmp_path / "c")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "restitution" in r.stdout and "90 % credible interval" in r.stdout
    assert (tmp_path / "c" / "calibration.json").exists()
    bad = subprocess.run([sys.executable, "-m", "tumble.cli", "calibrate", str(prior), "--observe", "bounce_time=400"],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and "NAME=VALUE:SIGMA" in bad.stderr


def test_hops_at_a_resolution_of_ones_own(landings):
    """``hops>H`` counts the flights a reconstruction resolving H metres sees: fewer as H grows, never
    more than the kernel's count of bounces; a resolution that is not a positive number is refused."""
    from tumble.calibrate import observable, open_store_groups

    prior, _ = landings
    st = open_store_groups(prior)
    fine, coarse = observable("hops>0.01").read(st), observable("hops>0.3").read(st)
    ok = np.isfinite(fine)
    assert ok.mean() > 0.9
    assert np.all(coarse[ok] <= fine[ok]) and np.any(coarse[ok] < fine[ok])
    assert np.all(fine[ok] <= np.asarray(st["final"]["probe_bounces"].values).ravel()[ok])
    assert observable("hops") is OBSERVABLES["hops"] and observable("bounce") is None
    for name in ("hops>x", "hops>-1", "hops>0", "hops>nan"):
        with pytest.raises(InputError, match="hops>H"):
            observable(name)
    with pytest.raises(InputError, match="no collision records"):
        observable("hops").read({"final": st["final"], "events": {}})
    cal = calibrate(prior, {"hops>0.3": (2.0, 1.0), "bounce_time": (400.0, 100.0)})
    assert cal.observables["hops>0.3"]["unit"] == "1"


def test_readme_mascot_calibration_runs_verbatim_and_prints_the_readme_figures(tmp_path):
    """The README's "Does it match reality?" block, run as written: its figures are this run's."""
    import os
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text()
    block = next(b for b in re.findall(r"```bash\n(.*?)```", readme, flags=re.S) if "tumble calibrate" in b)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p))
    out = ""
    for line in block.strip().splitlines():
        args = line.split()
        assert args[0] == "tumble"
        r = subprocess.run([sys.executable, "-m", "tumble.cli", *args[1:], *(["--no-progress"] if args[1] == "run"
                                                                               else [])],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, (line, r.stderr[-2000:])
        out = r.stdout
    # the figures the README quotes, as printed
    assert "effective sample size 55.0" in out, out
    assert re.search(r"restitution\s+0\.1147 ± 0\.0889\s+\[0\.01275, 0\.3397\]", out), out
    assert re.search(r"friction\s+0\.625 ± 0\.237\s+\[0\.3278, 1\.148\]", out), out
    assert re.search(r"bounce_time \[s\]\s+663 ± 66\s+\[328\.3, 2060\]", out), out
    for quoted in ("effective sample size 55.0", "**0.115 ± 0.089**", "0.013–0.340", "0.63 ± 0.24", "0.33–1.15",
                   "328–2,060 s"):
        assert quoted in readme, quoted
    assert (tmp_path / "runs" / "mascot-calibration" / "calibration.json").exists()


def test_mascot_scene_uses_the_published_constants(tmp_path):
    """Ryugu's GM is Watanabe et al.'s mass times G (0.2 %: the mass's own uncertainty is 1.3 %), and
    the fitted release speed gives the published 350 s fall (Scholten et al. 2019) within 5 s
    (the spread of the flown figures: 350 s, 5 min 51 s)."""
    from scenes import mascot
    from tumble import run_batch
    from tumble.calibrate import open_store_groups

    assert mascot.RYUGU_GM == pytest.approx(6.674e-11 * 4.50e11, rel=2e-3)
    st = open_store_groups(run_batch("mascot", samples=8, out=tmp_path / "m.zarr"))
    fall = OBSERVABLES["fall_time"].read(st)
    assert np.all(np.abs(fall - mascot.OBSERVED["fall_time"][0]) < 5.0), fall
