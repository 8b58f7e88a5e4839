"""``tumble report STORE``: one self-contained HTML page of a store (figures embedded as PNG data).

Findings first (:mod:`tumble.findings`): a paragraph in words, the outcomes with their shares, a
table per outcome of every scalar output (samples, mean, standard error, median, 5–95 %), the
settled points' dispersion ellipse (axes in metres with bootstrap intervals, orientation), and the
failures by reason with the command that re-runs one. Then every figure
:func:`tumble.plots.kinds_for` allows, each captioned with what it shows, its units and how many
samples it draws (none but the status figure when every sample failed), the distributions of the
dispersed inputs, and how the run was made: parameters, code revision, run history, systems and
resources as readable tables. The page loads nothing from anywhere (no scripts, no external files),
so it can be mailed or archived with the store. Every number in the outcome table carries its full
value in a ``data-value`` attribute, so a reader (or a test) can check it against the store.
"""

from __future__ import annotations

import base64
import html
import io
import os
import pathlib

import numpy as np

from . import findings, plots


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plots._mpl().close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _cell(c) -> str:
    if isinstance(c, float):                    # a number: shown rounded, its full value kept
        return f"<td class='num' data-value='{c!r}'>{html.escape(findings.fmt(c))}</td>"
    return f"<td>{html.escape(str(c))}</td>"


def _table(rows, header, cls: str = "") -> str:
    h = "".join(f"<th>{html.escape(str(c))}</th>" for c in header)
    body = "".join("<tr>" + "".join(_cell(c) for c in r) + "</tr>" for r in rows)
    return f"<table{f' class={cls!r}' if cls else ''}><thead><tr>{h}</tr></thead><tbody>{body}</tbody></table>"


def _findings(v: plots.StoreView) -> list[str]:
    """The Findings section: summary paragraph, outcomes, output statistics, dispersion, failures."""
    out = ["<h2 id='findings'>Findings</h2>", f"<p class='summary'>{html.escape(findings.plain_summary(v))}</p>"]
    counts = findings.outcome_counts(v)
    total = sum(counts.values())
    if total:
        out.append(_table([(k, n, 100.0 * n / total) for k, n in counts.items()],
                          ("outcome", "samples", "share [%]"), "outcomes"))
    stats = findings.outcome_statistics(v)
    for outcome in dict.fromkeys(s.outcome for s in stats):
        rows = [(s.name, s.units or "1", s.n, s.mean, s.sem, s.median, s.p5, s.p95, s.long_name)
                for s in stats if s.outcome == outcome]
        out.append(f"<h3>{html.escape(outcome.replace('_', ' '))} ({counts.get(outcome, 0)} samples)</h3>"
                   + _table(rows, ("output", "units", "samples", "mean", "std. error of mean", "median", "5 %",
                                   "95 %", "what"), f"stats {outcome}"))
    codes = findings.code_counts(v)
    if codes:
        out.append("<h3>Coded outcomes</h3>" + _table(
            [(name, m, n, 100.0 * n / max(1, sum(c.values())), long_name) for name, long_name, c in codes
             for m, n in c.items()], ("output", "meaning", "samples", "share [%]", "what"), "codes"))
    d = findings.dispersion(v)
    if d is not None:
        out.append(f"<h3>Dispersion of the {d.n} settling points</h3>"
                   "<p>In the local horizontal plane at their mean point; axes of the covariance ellipse, with "
                   f"bootstrap 90 % intervals ({findings.BOOTSTRAP} resamples). The 95 % ellipse is "
                   f"{findings.K95:.3f}σ (a normal spread).</p>" + _table([
                       ("mean point latitude [deg]", d.latitude, ""), ("mean point longitude [deg]", d.longitude, ""),
                       ("1σ semi-major axis [m]", d.sigma_major, f"{findings.fmt(d.major_ci[0])}–"
                                                                 f"{findings.fmt(d.major_ci[1])}"),
                       ("1σ semi-minor axis [m]", d.sigma_minor, f"{findings.fmt(d.minor_ci[0])}–"
                                                                 f"{findings.fmt(d.minor_ci[1])}"),
                       ("major axis azimuth [deg east of north]", d.azimuth, ""),
                       ("95 % ellipse semi-major axis [m]", d.major95, ""),
                       ("95 % ellipse semi-minor axis [m]", d.minor95, ""),
                       ("95 % ellipse area [m²]", d.area95, ""),
                   ], ("", "value", "bootstrap 90 % interval"), "dispersion"))
    return out


def _input_figure(v: plots.StoreView):
    plt = plots._mpl()
    inp = v.group("inputs")
    cols = {k: a for k, a in plots._scalar_columns(inp, skip=("seed", "sample")).items() if np.nanstd(a) > 0}
    if not cols:
        return None
    names = list(cols)[:12]
    n = len(names)
    fig, axes = plt.subplots(-(-n // 4), min(4, n), figsize=(12, 2.6 * -(-n // 4)), layout="constrained",
                             squeeze=False)
    for ax, k in zip(axes.ravel(), names):
        ax.hist(cols[k][np.isfinite(cols[k])], bins=30, color="tab:green")
        base = k.split("[")[0]
        ax.set_xlabel(plots._label(inp[base], k), fontsize=8)
        ax.set_ylabel("samples [1]", fontsize=8)
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)
    fig.suptitle("dispersed inputs")
    return fig


def build_report(store, out=None) -> pathlib.Path:
    """Write the report page (default ``<store>-report.html`` beside the store); returns its path."""
    from ecs.store import summarize

    v = plots.StoreView.open(store)
    info = summarize(v.path)
    a = v.attrs
    sc = a.get("scene", {})
    out = pathlib.Path(out) if out else v.path.with_name(v.path.name.removesuffix(".zarr") + "-report.html")
    parts = [f"<h1>{html.escape(sc.get('name', '?'))}</h1>",
             f"<p class='lead'>{html.escape(sc.get('description', ''))}</p>"]
    parts += _findings(v)
    if info.get("event_overflow"):
        parts.append(f"<p class='warn'>{info['event_overflow']} samples produced more events than the event log "
                     f"holds (events/event_overflow = 1; the first events are kept).</p>")
    final = v.group("final")
    failed = np.flatnonzero(final.status.values == 9) if final is not None else []
    if len(failed):
        rn = dict(zip(final.failure_code.attrs["flag_values"], final.failure_code.attrs["flag_meanings"].split()))
        meaning = final.failure_code.attrs.get("messages", {})
        store = html.escape(os.fspath(v.path))
        reasons = [(r, n, meaning.get(r, ""), ", ".join(map(str, first)), f"tumble rerun {os.fspath(v.path)} "
                    f"{first[0]} --debug") for r, n, first, _ in findings.failure_summary(v)]
        rows = [(int(final["sample"].values[i]), rn.get(int(final.failure_code.values[i]), "?"),
                 str(final.failure_message.values[i])) for i in failed[:200]]
        more = f"<p>… and {len(failed) - 200} more.</p>" if len(failed) > 200 else ""
        parts.append(f"<h2 id='failures'>Failures ({len(failed)})</h2>"
                     + _table(reasons, ("reason", "samples", "meaning", "first samples", "re-run the first"),
                              "reasons")
                     + f"<p>Re-run any one with <code>tumble rerun {store} SAMPLE --debug</code>.</p>"
                     + _table(rows, ("sample", "reason", "message")) + more)
    else:
        parts.append("<h2 id='failures'>Failures</h2><p>No sample failed.</p>")
    parts.append("<h2>Figures</h2>")
    kinds = plots.kinds_for(v)
    if not (set(findings.outcome_counts(v)) - {"failed"}):
        kinds = ["status"]
        parts.append("<p>Every finished sample failed: only the status figure is drawn (the others would have "
                     "nothing to show).</p>")
    for k in kinds:
        fig = plots.KINDS[k](v)
        cap = html.escape(plots.caption(v, k))
        parts.append(f"<figure><img alt='{k}' src='{_png(fig)}'><figcaption><b>{k}</b>: {cap}</figcaption></figure>")
    fig = _input_figure(v) if v.group("inputs") is not None and kinds != ["status"] else None
    if fig is not None:
        parts.append(f"<figure><img alt='inputs' src='{_png(fig)}'><figcaption><b>inputs</b>: histograms of the "
                     f"dispersed inputs (inputs/, one value per sample, {v.attrs.get('samples', '?')} samples); "
                     f"labels give each input's units.</figcaption></figure>")
    code = a.get("code", {})
    parts.append("<h2>How it was run</h2>" + _table([
        ("store", os.fspath(v.path)), ("samples", f"{info['done']}/{info['samples']} done"),
        ("seed", a.get("seed")), ("backend", a.get("backend")), ("t_end [s]", a.get("t_end")), ("dt [s]", a.get("dt")),
        ("tumble", f"{code.get('version', '?')} {code.get('commit', '')[:12]}"
                   + (" (modified)" if code.get("modified") else "")),
    ], ("", "")))
    parts.append("<h3>Parameters</h3>" + (_table(findings.flat_rows(sc.get("params", {})), ("parameter", "value"))
                                          if sc.get("params") else "<p>none (the scene's defaults)</p>"))
    runs = (a.get("run") or {}).get("invocations", [])
    parts.append("<h2>Run history</h2>" + _table(
        [(k + 1, r.get("command_line"), r.get("executor"), r.get("samples_run", "?"), r.get("samples_raised", 0),
          "complete" if r.get("complete") else "interrupted", "; ".join(r.get("repaired_shards", [])) or "-")
         for k, r in enumerate(runs)],
        ("#", "command", "executor", "samples run", "raised", "end", "repaired shards")))
    systems = [(s.get("name"), s.get("phase"), "; ".join(f"{k} = {x}" for k, x in findings.flat_rows(
        s.get("settings", {}))) if s.get("settings") else "-") for s in a.get("systems", [])]
    parts.append("<h2>Systems</h2>" + _table(systems, ("system", "phase", "settings")))
    res = [(r.get("type") if j == 0 else "", k, x) for r in a.get("resources", []) if isinstance(r, dict)
           for j, (k, x) in enumerate(findings.flat_rows({k: x for k, x in r.items() if k != "type"}))]
    parts.append("<h2>Resources</h2>" + _table(res, ("resource", "field", "value")))
    style = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}"
             "table{border-collapse:collapse;margin:0.5em 0}td,th{border:1px solid #ccc;padding:2px 8px;"
             "font-size:13px;text-align:left;vertical-align:top}img{max-width:100%}"
             "figure{margin:1em 0}.warn{color:#a40}.lead{color:#555}td.num{text-align:right;white-space:nowrap;font-variant-numeric:"
             "tabular-nums}.summary{font-size:15px;line-height:1.45;background:#f4f7fb;padding:0.6em 1em}")
    page = (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>tumble report: "
            f"{html.escape(sc.get('name', '?'))}</title><style>{style}</style></head><body>"
            + "\n".join(parts) + "</body></html>")
    out.write_text(page, encoding="utf-8")
    return out
