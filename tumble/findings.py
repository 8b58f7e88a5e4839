"""What a store found: the numbers ``tumble report`` and ``tumble inspect`` lead with.

Everything here is computed from the store alone (xarray over ``final/``), so it works on any store
with or without the scene's code, and a test can recompute each number independently.

* :func:`outcome_statistics` — per outcome (settled, escaped, timed out, done), every scalar output
  of ``final/``: finite-sample count, mean, standard error of the mean, median, 5th and 95th
  percentiles (numpy's linear interpolation, the same as ``xarray.DataArray.quantile``); a longitude
  is first moved by whole turns to within ±180° of its circular mean. Failed
  samples are left out of every statistic (their outputs stop where they failed) and counted apart.
* :func:`dispersion` — the settled points' spread in the local horizontal plane at their mean
  (east, north): 1σ semi-axes in metres, the azimuth of the major axis (degrees east of north), the
  95 % containment ellipse (k = √χ²₂(0.95) = 2.448 under a normal spread) and a bootstrap 90 %
  interval of each semi-axis (400 resamples, fixed seed, so the report is reproducible).
* :func:`code_counts` — samples by meaning of every coded output (CF flags: a capture's outcome).
* :func:`failure_summary` — failed samples by reason, with example samples and the command that
  re-runs one.
* :func:`plain_summary` — a paragraph in words built from the numbers above.
* :func:`flat_rows` — nested parameters and resources as readable ``(key, value)`` rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import calibrate, plots

#: outputs that are codes or bookkeeping, not results
SKIP = ("done", "sample", "status", "failure_code", "event_count", "probe_shape")
#: the 95 % containment radius of a 2-D normal spread, in σ: sqrt(chi2.ppf(0.95, 2)) = sqrt(-2 ln 0.05)
K95 = math.sqrt(-2.0 * math.log(0.05))
BOOTSTRAP = 400


@dataclass(frozen=True)
class OutputStat:
    """One output's statistics over the samples of one outcome (``n`` finite values)."""

    outcome: str
    name: str
    long_name: str
    units: str
    n: int
    mean: float
    sem: float
    median: float
    p5: float
    p95: float


def _status_names(f) -> dict[int, str]:
    return dict(zip(f.status.attrs["flag_values"], f.status.attrs["flag_meanings"].split()))


def outcome_counts(v: plots.StoreView) -> dict[str, int]:
    """Finished samples by end status (``failed`` included), largest first."""
    f = v.group("final")
    done = f.done.values if "done" in f else np.ones(f.sizes["sample"], bool)
    names = _status_names(f)
    codes, counts = np.unique(f.status.values[done], return_counts=True)
    out = {names.get(int(c), str(int(c))): int(n) for c, n in zip(codes, counts)}
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def _outputs(f) -> dict[str, tuple[np.ndarray, str, str]]:
    """name -> (one value per sample, long_name, units): the scalar outputs of ``final/`` (the
    first entity's where a column has one value per entity), else its few-component columns."""
    cols = plots._scalar_columns(f, skip=SKIP)
    scalars = {k: a for k, a in cols.items() if "[" not in k}
    out = {}
    for k, a in sorted((scalars or cols).items()):
        da = f[k.split("[")[0]]
        if "flag_values" in da.attrs:                       # a code, not a quantity
            continue
        label = k
        if "[" in k:                                        # name components by their coordinate labels
            idx = [int(i) for i in k[k.index("[") + 1:-1].split(",")]
            dims = [d for d in da.dims[1:] if da.sizes[d] > 1]
            names = []
            for d, i in zip(dims, idx):
                c = f.coords.get(d)
                names.append(str(c.values[i]) if c is not None and c.dtype.kind in "OUT" else str(i))
            label = f"{k.split('[')[0]}[{','.join(names)}]"
        out[label] = (a, str(da.attrs.get("long_name", "")), str(da.attrs.get("units", "")))
    return out


def _is_longitude(name: str, units: str) -> bool:
    return units == "deg" and name.endswith("longitude")


def outcome_statistics(v: plots.StoreView) -> list[OutputStat]:
    """Every scalar output's statistics for each outcome other than ``failed`` (and ``running``)."""
    f = v.group("final")
    done = f.done.values if "done" in f else np.ones(f.sizes["sample"], bool)
    names = _status_names(f)
    st = f.status.values
    outs = _outputs(f)
    rows = []
    for code in sorted(set(st[done].tolist())):
        outcome = names.get(int(code), str(int(code)))
        if outcome in ("failed", "running"):
            continue
        sel = done & (st == code)
        for name, (a, long_name, units) in outs.items():
            x = a[sel]
            x = x[np.isfinite(x)]
            if len(x) == 0:
                continue
            if _is_longitude(name, units):
                x = plots.unwrap_about(x, plots.circular_mean_deg(x))
            sem = float(np.std(x, ddof=1) / math.sqrt(len(x))) if len(x) > 1 else math.nan
            p5, med, p95 = (float(q) for q in np.percentile(x, [5, 50, 95]))
            rows.append(OutputStat(outcome, name, long_name, units, len(x), float(x.mean()), sem, med, p5, p95))
    return rows


def code_counts(v: plots.StoreView) -> list[tuple[str, str, dict[str, int]]]:
    """``(output, long_name, {meaning: samples})`` for every coded scalar output of ``final/`` (CF
    flags, e.g. a capture's ``separation_within``) over the finished samples that did not fail."""
    f = v.group("final")
    if f is None:
        return []
    done = f.done.values if "done" in f else np.ones(f.sizes["sample"], bool)
    keep = done & (f.status.values != 9)
    out = []
    for k in sorted(f.data_vars):
        da = f[k]
        if k in SKIP or "flag_values" not in da.attrs or int(np.prod([da.sizes[d] for d in da.dims[1:]])) != 1:
            continue
        meaning = dict(zip(da.attrs["flag_values"], str(da.attrs.get("flag_meanings", "")).split()))
        vals = np.asarray(da.values).reshape(len(keep))[keep]
        codes, counts = np.unique(vals, return_counts=True)
        out.append((k, str(da.attrs.get("long_name", "")),
                    {meaning.get(int(c), str(int(c))): int(n) for c, n in zip(codes, counts)}))
    return out


@dataclass(frozen=True)
class Dispersion:
    """The settled points' spread in the local horizontal plane at their mean point."""

    n: int
    latitude: float            #: of the mean settling point [deg]
    longitude: float           #: [deg]
    sigma_major: float         #: 1σ semi-major axis [m]
    sigma_minor: float         #: 1σ semi-minor axis [m]
    azimuth: float             #: of the major axis, degrees east of north in [0, 180)
    major95: float             #: 95 % containment ellipse semi-major axis [m] (K95 σ)
    minor95: float             #: [m]
    area95: float              #: [m^2]
    major_ci: tuple            #: bootstrap 90 % interval of sigma_major [m]
    minor_ci: tuple            #: [m]


def _axes(xy: np.ndarray) -> tuple[float, float, float]:
    w, vec = np.linalg.eigh(np.cov(xy.T))
    major = vec[:, 1]
    az = math.degrees(math.atan2(major[0], major[1])) % 180.0       # east component over north component
    return math.sqrt(max(w[1], 0.0)), math.sqrt(max(w[0], 0.0)), az


def dispersion(v: plots.StoreView) -> Dispersion | None:
    """The settled points' dispersion ellipse, or ``None`` with fewer than 3 settled samples or no
    positions (not a deployment store)."""
    f = v.group("final")
    if f is None or "body_position" not in f or not plots.is_deployment(v):
        return None
    done = f.done.values if "done" in f else np.ones(f.sizes["sample"], bool)
    settled = done & (f.status.values == 2)
    p = np.asarray(f.body_position.values).reshape(f.sizes["sample"], -1)[:, :3][settled]
    p = p[np.isfinite(p).all(axis=1)]
    if len(p) < 3:
        return None
    mean = p.mean(axis=0)
    e, n, up = plots._tangent_frame(mean)
    xy = np.stack([(p - mean) @ e, (p - mean) @ n], axis=1)
    a, b, az = _axes(xy)
    rng = np.random.default_rng(20261128)
    boots = np.array([_axes(xy[rng.integers(0, len(xy), len(xy))])[:2] for _ in range(BOOTSTRAP)])
    lo, hi = np.percentile(boots, [5, 95], axis=0)
    lat = math.degrees(math.asin(up[2]))
    lon = math.degrees(math.atan2(up[1], up[0]))
    return Dispersion(len(p), lat, lon, a, b, az, K95 * a, K95 * b, math.pi * K95 * K95 * a * b,
                      (float(lo[0]), float(hi[0])), (float(lo[1]), float(hi[1])))


def failure_summary(v: plots.StoreView) -> list[tuple[str, int, list[int], str]]:
    """(reason, samples, first sample numbers, first message) for each failure reason, largest first."""
    f = v.group("final")
    if f is None or "failure_code" not in f:
        return []
    done = f.done.values if "done" in f else np.ones(f.sizes["sample"], bool)
    failed = np.flatnonzero(done & (f.status.values == 9))
    if not len(failed):
        return []
    rn = dict(zip(f.failure_code.attrs["flag_values"], f.failure_code.attrs["flag_meanings"].split()))
    codes = f.failure_code.values[failed]
    msgs = f.failure_message.values[failed] if "failure_message" in f.variables else [""] * len(failed)
    samples = f["sample"].values[failed]
    out = []
    for c in np.unique(codes):
        k = np.flatnonzero(codes == c)
        out.append((rn.get(int(c), str(int(c))), len(k), [int(s) for s in samples[k[:5]]], str(msgs[k[0]])))
    return sorted(out, key=lambda r: -r[1])


def fmt(x: float, digits: int = 4) -> str:
    """A number for a table: ``digits`` significant digits, no exponent between 1e-3 and 1e6."""
    if x is None or not math.isfinite(x):
        return "–"
    if x == 0:
        return "0"
    if 1e-3 <= abs(x) < 1e6:
        d = max(0, digits - 1 - int(math.floor(math.log10(abs(x)))))
        return f"{x:.{d}f}"
    return f"{x:.{digits - 1}e}"


def _human_time(s: float) -> str:
    if not math.isfinite(s):
        return "–"
    if s >= 2 * 86400:
        return f"{s / 86400:.3g} d"
    if s >= 2 * 3600:
        return f"{s / 3600:.3g} h"
    if s >= 120:
        return f"{s / 60:.3g} min"
    return f"{s:.3g} s"


def plain_summary(v: plots.StoreView) -> str:
    """One paragraph in words, built from the statistics (no number that is not in the tables)."""
    counts = outcome_counts(v)
    total = sum(counts.values())
    samples = int(v.attrs.get("samples", total))
    parts = []
    if total < samples:
        parts.append(f"{total} of {samples} samples have finished.")
    if not total:
        return " ".join(parts) or "No sample has finished."
    share = ", ".join(f"{n} {k.replace('_', ' ')} ({100.0 * n / total:.3g} %)" for k, n in counts.items())
    parts.append(f"Of {total} finished samples, {share}.")
    stats = {(s.outcome, s.name): s for s in outcome_statistics(v)}
    st = stats.get(("settled", "probe_settle_time"))
    if st is not None:
        parts.append(f"The settled ones came to rest after {_human_time(st.median)} (median; 5–95 %: "
                     f"{_human_time(st.p5)} to {_human_time(st.p95)}).")
        b = stats.get(("settled", "probe_bounces"))
        d = stats.get(("settled", "probe_distance"))
        if b is not None and d is not None:
            parts.append(f"They bounced {fmt(b.median, 3)} times (median; 5–95 %: {fmt(b.p5, 3)}–{fmt(b.p95, 3)}) "
                         f"and travelled {fmt(d.median, 3)} m (median) along their path.")
            h = _hop_counts(v)
            if h is not None:
                p5, med, p95 = np.percentile(h, [5, 50, 95])
                parts.append(f"Of those bounces, {fmt(med, 3)} (5–95 %: {fmt(p5, 3)}–{fmt(p95, 3)}) were hops whose path "
                             f"left the ground by at least {calibrate.HOP_RESOLUTION:g} m, what a reconstruction "
                             f"accurate to {calibrate.HOP_RESOLUTION:g} m sees (tumble.calibrate.hops).")
    disp = dispersion(v)
    if disp is not None:
        parts.append(f"Their settling points spread {fmt(disp.sigma_major, 3)} m × {fmt(disp.sigma_minor, 3)} m (1σ), "
                     f"the major axis {disp.azimuth:.0f}° east of north; 95 % of them lie within an ellipse of "
                     f"{fmt(disp.area95, 3)} m² around latitude {disp.latitude:.2f}°, longitude "
                     f"{disp.longitude:.2f}°.")
    for name, _, counts in code_counts(v):
        parts.append(f"{name}: " + ", ".join(f"{n} {m.replace('_', ' ')}" for m, n in counts.items()) + ".")
    fails = failure_summary(v)
    if fails:
        parts.append("Failed samples: " + ", ".join(f"{n} by {r.replace('_', ' ')}" for r, n, _, _ in fails)
                     + " (why in final/failure_code and failure_message; tumble rerun STORE SAMPLE re-runs one).")
    elif "failed" not in counts:
        parts.append("No sample failed.")
    if not (set(counts) - {"failed"}):
        parts.append("Every finished sample failed, so there is no result to summarise: the failure analysis "
                     "below says why.")
    return " ".join(parts)


def _hop_counts(v: plots.StoreView) -> np.ndarray | None:
    """Per settled sample with a complete event log, its hops (:func:`tumble.calibrate.hops`); None
    when the store logs no collision events or no such sample finished."""
    ev, f = v.group("events"), v.group("final")
    if ev is None or f is None or not {"time", "kind", "velocity_before", "velocity_after"} <= set(ev.data_vars):
        return None
    n = calibrate.hops({"final": f, "events": ev})
    if "done" in f:
        n = np.where(f.done.values.astype(bool), n, np.nan)
    n = n[np.isfinite(n)]
    return n if n.size else None


def _numeric(obj) -> np.ndarray | None:
    """``obj`` as a float array when it is a (nested, rectangular) list of plain numbers, else None."""
    def plain(x):
        return all(plain(y) for y in x) if isinstance(x, (list, tuple)) else \
            isinstance(x, (int, float)) and not isinstance(x, bool)
    if not plain(obj):
        return None
    try:
        return np.asarray(obj, dtype=float)
    except ValueError:                                      # ragged
        return None


def flat_rows(obj, prefix: str = "", limit: int = 8) -> list[tuple[str, str]]:
    """Nested dicts and lists as ``(dotted key, readable value)`` rows; long numeric lists summarised
    by their length and range instead of being cut."""
    if isinstance(obj, dict):
        rows = []
        for k in sorted(obj, key=str):
            rows += flat_rows(obj[k], f"{prefix}.{k}" if prefix else str(k), limit)
        return rows or [(prefix, "{}")]
    if isinstance(obj, (list, tuple)):
        a = _numeric(obj)
        if a is not None and a.size:
            if a.size <= limit:
                whole = bool(np.all(a == np.round(a))) and np.abs(a).max() < 1e15
                return [(prefix, ", ".join(str(int(x)) if whole else fmt(float(x), 6) for x in a.ravel()))]
            return [(prefix, f"{a.size} values, shape {tuple(a.shape)}, from {fmt(float(a.min()))} "
                             f"to {fmt(float(a.max()))}")]
        if len(obj) <= limit and all(not isinstance(x, (dict, list, tuple)) for x in obj):
            return [(prefix, ", ".join(str(x) for x in obj))]
        rows = []
        for i, x in enumerate(obj[:limit]):
            rows += flat_rows(x, f"{prefix}[{i}]", limit)
        if len(obj) > limit:
            rows.append((f"{prefix}[{limit}:]", f"… {len(obj) - limit} more"))
        return rows
    if isinstance(obj, float):
        return [(prefix, fmt(obj, 6))]
    return [(prefix, str(obj))]
