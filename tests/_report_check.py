"""Check a store's report the way a reader would: render the page in headless Chromium (where the
machine has it; CI installs Debian's ``chromium``), read the outcome tables out of the rendered DOM,
and compare every number with the same statistic computed here from the store with xarray and
scipy, independently of :mod:`tumble.findings`."""

from __future__ import annotations

import html.parser
import math
import shutil
import subprocess

import numpy as np
import xarray as xr
from scipy.stats import circmean

from tumble.report import build_report

#: relative agreement of the page's full values with xarray's: the same float64 data reduced in a
#: different order (pairwise sums in numpy against xarray's), so round-off only
RTOL = 1e-12

BROWSER_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-quic")


def browser() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


class _Tables(html.parser.HTMLParser):
    """``{table class: [[cell text or data-value float, ...] per row]}`` of a page."""

    def __init__(self):
        super().__init__()
        self.tables: dict[str, list[list]] = {}
        self._cls = None
        self._row = None
        self._cell = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self._cls = a.get("class", "")
            self.tables.setdefault(self._cls, [])
        elif tag == "tr" and self._cls is not None:
            self._row = []
        elif tag == "td" and self._row is not None:
            self._cell = float(a["data-value"]) if "data-value" in a else ""

    def handle_data(self, data):
        if isinstance(self._cell, str):
            self._cell += data

    def handle_endtag(self, tag):
        if tag == "td" and self._row is not None:
            self._row.append(self._cell)
            self._cell = None
        elif tag == "tr" and self._row is not None:
            if self._row:
                self.tables[self._cls].append(self._row)
            self._row = None
        elif tag == "table":
            self._cls = None


def rendered_page(store, out) -> tuple[str, bool]:
    """(the report's DOM as Chromium rendered it, True) or (the page's text, False) without Chromium."""
    page = build_report(store, out)
    b = browser()
    if b is None:
        return page.read_text(), False
    r = subprocess.run([b, *BROWSER_FLAGS, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0 and "<h2 id=\"findings\">" in r.stdout.replace("'", '"'), r.stderr[-2000:]
    return r.stdout, True


def xarray_statistics(store) -> dict[tuple[str, str], tuple]:
    """``{(outcome, output): (n, mean, sem, median, p5, p95)}`` of every scalar float/int output of
    ``final/`` over the finished samples of each outcome (failed left out), with xarray; a longitude
    is unwrapped about scipy's circular mean first."""
    f = xr.open_zarr(store, group="final").load()
    names = dict(zip(f.status.attrs["flag_values"], f.status.attrs["flag_meanings"].split()))
    skip = {"done", "status", "failure_code", "event_count", "probe_shape"}
    out = {}
    for code in np.unique(f.status.values[f.done.values]):
        outcome = names[int(code)]
        if outcome in ("failed", "running"):
            continue
        sub = f.where(f.done & (f.status == code), drop=True)
        for k, da in f.data_vars.items():
            if k in skip or da.dtype.kind not in "fiu" or da.dtype == bool or "flag_values" in da.attrs:
                continue
            if int(np.prod([da.sizes[d] for d in da.dims[1:]])) != 1:
                continue
            x = sub[k]
            for d in x.dims[1:]:
                x = x.isel({d: 0})
            x = x.dropna("sample")
            if x.sizes["sample"] == 0:
                continue
            if da.attrs.get("units") == "deg" and k.endswith("longitude"):
                c = math.degrees(circmean(np.radians(x.values), high=math.pi, low=-math.pi))
                x = (x - c + 180.0) % 360.0 - 180.0 + c
            n = x.sizes["sample"]
            q = x.quantile([0.05, 0.5, 0.95])
            out[(outcome, k)] = (n, float(x.mean()), float(x.std(ddof=1)) / math.sqrt(n) if n > 1 else math.nan,
                                 float(q[1]), float(q[0]), float(q[2]))
    return out


def check_report_numbers(store, out) -> int:
    """Every row of the page's outcome tables equals xarray's statistic (and no output is missing);
    returns how many numbers were compared."""
    dom, rendered = rendered_page(store, out)
    p = _Tables()
    p.feed(dom)
    expected = xarray_statistics(store)
    seen = {}
    for cls, rows in p.tables.items():
        if not cls.startswith("stats "):
            continue
        outcome = cls.split()[1]
        for name, units, n, mean, sem, median, p5, p95, _ in rows:
            seen[(outcome, name.strip())] = (int(n.strip()), mean, sem, median, p5, p95)
    assert set(seen) == set(expected), (sorted(set(seen) ^ set(expected)), rendered)
    count = 0
    for key, want in expected.items():
        got = seen[key]
        assert got[0] == want[0], key
        scale = max(abs(w) for w in want[1:] if math.isfinite(w))       # the output's own magnitude
        for g, w in zip(got[1:], want[1:]):
            if math.isnan(w):
                assert isinstance(g, str) or math.isnan(g), key
            else:
                assert abs(g - w) <= RTOL * scale, (key, g, w)
            count += 1
    return count
