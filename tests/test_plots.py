"""Plots of real stores: every kind renders from a store, writes a non-empty image, and labels its
axes with units; the dispersion ellipse and the sensitivity table are checked against closed forms."""

import math
import pathlib

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from tumble import run_batch  # noqa: E402
from tumble import plots  # noqa: E402

DRIFT = str(pathlib.Path(__file__).parent / "scenes_for_tests" / "drift.py")


@pytest.fixture(scope="module")
def deploy_store(tmp_path_factory):
    """deploy-shapes with trajectories and dispersed contact: every deployment kind applies."""
    out = tmp_path_factory.mktemp("plots") / "shapes.zarr"
    run_batch("deploy-shapes", samples=24, out=out, params={"gravity": "point_mass", "record_every": 1,
                                                            "restitution_sigma3": 0.2, "t_cap": 20000.0})
    return out


@pytest.fixture(scope="module")
def drift_store(tmp_path_factory):
    out = tmp_path_factory.mktemp("plots") / "drift.zarr"
    run_batch(DRIFT, samples=40, out=out, seed=3)
    return out


def _check_figure_file(f: pathlib.Path):
    assert f.is_file() and f.stat().st_size > 5_000, f


def _check_units(fig):
    for ax in fig.axes:
        if ax.get_label() == "<colorbar>":
            continue
        for lab in (ax.get_xlabel(), ax.get_ylabel()):
            if lab:
                assert "[" in lab and "]" in lab, (ax.get_title(), lab)


def test_every_deployment_kind_renders_with_units(deploy_store, tmp_path):
    kinds = plots.kinds_for(deploy_store)
    assert set(kinds) >= {"status", "settling-map", "settling-3d", "distributions", "ellipses", "energy",
                          "trajectories", "sensitivity"}
    for k in kinds:
        fig = plots.KINDS[k](plots.StoreView.open(deploy_store))
        _check_units(fig)
        matplotlib.pyplot.close(fig)
    fig = plots.distributions(plots.StoreView.open(deploy_store), by="contact_terrain[restitution]")
    _check_units(fig)
    matplotlib.pyplot.close(fig)
    files = plots.plot(deploy_store, out_dir=tmp_path / "figs")
    assert [f.stem for f in files] == kinds
    for f in files:
        _check_figure_file(f)


def test_settling_map_shows_the_shape_model_around_the_landing_area(deploy_store):
    """The map's grey relief is the shape model's vertex distance from the target origin (numpy
    from scene/target_vertices): its levels span the distances of the vertices in view, and it lies
    under the settling points, whose axes it does not widen."""
    import xarray as xr
    from matplotlib.contour import ContourSet

    fig = plots.settling_map(plots.StoreView.open(deploy_store))
    ax = fig.axes[0]
    relief = [c for c in ax.collections if isinstance(c, ContourSet)]
    assert len(relief) == 1 and relief[0].get_zorder() < min(c.get_zorder() for c in ax.collections
                                                              if not isinstance(c, ContourSet))
    v = xr.open_zarr(deploy_store, group="scene").target_vertices.values
    lat = np.degrees(np.arcsin(v[:, 2] / np.linalg.norm(v, axis=1)))
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    in_view = (lat > y0) & (lat < y1)
    r = np.linalg.norm(v, axis=1)
    levels = relief[0].levels
    assert levels[0] <= r[in_view].min() + 1e-9 and levels[-1] >= r[in_view].max() * 0.97
    matplotlib.pyplot.close(fig)


def test_generic_store_kinds_and_a_physical_sensitivity(drift_store, tmp_path):
    kinds = plots.kinds_for(drift_store)
    assert "finals" in kinds and "trajectories" in kinds and "sensitivity" in kinds and "ellipses" not in kinds
    for f in plots.plot(drift_store, out_dir=tmp_path / "figs"):
        _check_figure_file(f)
    # drift.py: v_z(T) = v0_z (1 - dt drag)^n with v0_z = -1 ± 0.1 (3σ): a larger drag leaves a
    # smaller |v_z|, so the final v_z rises with drag far more than its release spread moves it.
    ins, outs, rho = plots.sensitivity_table(drift_store)
    i = ins.index("body_drag.probe")
    j = outs.index("body_velocity[0,2]")                 # entity 0 (the probe), z
    assert rho[i, j] > 0.8
    assert np.nanmax(np.abs(rho)) <= 1.0


def test_dispersion_ellipse_closed_form():
    """Points on an axis-aligned Gaussian with σ = (3, 1): the kσ ellipse has semi-axes k·σ and area
    π k² σ1 σ2; the boundary points satisfy (x/kσ1)² + (y/kσ2)² = 1."""
    rng = np.random.default_rng(0)
    pts = rng.standard_normal((200_000, 2)) * [3.0, 1.0]
    for k in (1, 2, 3):
        b, area = plots.dispersion_ellipse(pts, k)
        assert area == pytest.approx(math.pi * k * k * 3.0, rel=0.01)      # sampling error ~0.3 %
        r = (b[:, 0] / (3.0 * k)) ** 2 + (b[:, 1] / (1.0 * k)) ** 2
        np.testing.assert_allclose(r, 1.0, atol=0.02)


def test_cli_plot_refuses_a_kind_the_store_cannot_draw(drift_store):
    from typer.testing import CliRunner

    from tumble.cli import app

    r = CliRunner().invoke(app, ["plot", str(drift_store), "settling-map"])
    assert r.exit_code == 1 and "cannot draw it" in r.stderr
    r = CliRunner().invoke(app, ["plot", str(drift_store), "bogus"])
    assert r.exit_code == 1 and "must be one of" in r.stderr
    # asked for several, the drawable ones are drawn and the others named (exit 1)
    r = CliRunner().invoke(app, ["plot", str(drift_store), "status", "settling-map", "-o", str(drift_store) + "-p2"])
    assert r.exit_code == 1 and "status.png" in r.stdout and "'settling-map': this store cannot draw it" in r.stderr
    help_text = CliRunner().invoke(app, ["plot", "--help"]).stdout
    assert all(k in help_text.replace("\n", " ") for k in ("validation", "contact-forces", "joints"))


def test_report_page_in_a_headless_browser(drift_store, tmp_path):
    """The report of a store with deliberately failing samples: one self-contained page (no
    external resource), listing each failure with its reason; screenshotted by headless Chromium
    where it is installed (skipped elsewhere), which must log no console error."""
    import shutil
    import subprocess

    from tumble.report import build_report

    bad = tmp_path / "bad.zarr"
    run_batch(DRIFT, samples=10, out=bad, seed=7, params={"fail_above": 0.8, "raise_above": 0.97})
    page = build_report(bad, tmp_path / "report.html")
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and "src='http" not in text and "<script" not in text
    assert "Failures (4)" in text and "raised" in text and "RuntimeError: drag above 0.97" in text
    assert text.count("<img") >= 4
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        pytest.skip("no Chromium on this machine: the page was checked as text only")
    shot = tmp_path / "report.png"
    r = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
                        f"--screenshot={shot}", "--window-size=1200,3000", page.as_uri()],
                       capture_output=True, text=True, timeout=120)
    assert shot.is_file() and shot.stat().st_size > 20_000, r.stderr[-2000:]
    console = [ln for ln in r.stderr.splitlines() if "CONSOLE" in ln or "Failed to load resource" in ln]
    assert console == [], console
    dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    assert "Failures (4)" in dom and dom.count("<img") >= 4


def test_animation_of_one_sample_is_written(deploy_store, tmp_path):
    from PIL import Image

    from tumble.animate import animate

    out = animate(deploy_store, 1, tmp_path / "s1.gif", fps=10, max_frames=30)
    im = Image.open(out)
    assert im.n_frames >= 5 and out.stat().st_size > 20_000


def test_validation_and_contact_force_kinds(tmp_path):
    """precession: the recorded body rates follow Euler's closed form (RK4, dt 0.01 s: the global
    error is O(h^4), measured ~1e-8 rad/s over 10 s; 1e-6 bounds it); the JEOD off-centre run's
    contact forces are drawn for both vehicles."""
    prec = run_batch("precession", samples=3, out=tmp_path / "p.zarr")
    assert "validation" in plots.kinds_for(prec)
    fig = plots.validation(plots.StoreView.open(prec))
    _check_units(fig)
    ax_err = fig.axes[1]
    worst = max(float(np.max(line.get_ydata())) for line in ax_err.get_lines())
    assert 0 < worst < 1e-6
    matplotlib.pyplot.close(fig)
    jeod = run_batch("jeod-point-off-center", samples=1, out=tmp_path / "j.zarr", params={"record_every": 10})
    assert "contact-forces" in plots.kinds_for(jeod)
    for f in plots.plot(jeod, ["contact-forces"], out_dir=tmp_path / "jf"):
        _check_figure_file(f)
