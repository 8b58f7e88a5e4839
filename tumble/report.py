"""``tumble report STORE``: one self-contained HTML page of a store (figures embedded as PNG data).

Sections: the scene and how it was run (parameters, seed, samples, code revision, systems and
resources), status counts, failed samples with their reasons and messages, every figure
:func:`tumble.plots.kinds_for` allows, the distributions of the dispersed inputs, and the run
history (each invocation: command line, executor, samples run, repaired shards). The page loads
nothing from anywhere (no scripts, no external files), so it can be mailed or archived with the
store.
"""

from __future__ import annotations

import base64
import html
import io
import json
import os
import pathlib

import numpy as np

from . import plots


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plots._mpl().close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _table(rows, header) -> str:
    h = "".join(f"<th>{html.escape(str(c))}</th>" for c in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{h}</tr></thead><tbody>{body}</tbody></table>"


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
    code = a.get("code", {})
    parts.append("<h2>Run</h2>" + _table([
        ("store", os.fspath(v.path)), ("samples", f"{info['done']}/{info['samples']} done"),
        ("seed", a.get("seed")), ("backend", a.get("backend")), ("t_end [s]", a.get("t_end")), ("dt [s]", a.get("dt")),
        ("parameters", json.dumps(sc.get("params", {}), sort_keys=True)),
        ("tumble", f"{code.get('version', '?')} {code.get('commit', '')[:12]}"
                   + (" (modified)" if code.get("modified") else "")),
    ], ("", "")))
    parts.append("<h2>Status</h2>" + _table(sorted(info["status"].items(), key=lambda kv: -kv[1]), ("status", "samples")))
    if info.get("event_overflow"):
        parts.append(f"<p class='warn'>{info['event_overflow']} samples produced more events than the event log "
                     f"holds (events/event_overflow = 1; the first events are kept).</p>")
    final = v.group("final")
    failed = np.flatnonzero(final.status.values == 9) if final is not None else []
    if len(failed):
        rn = dict(zip(final.failure_code.attrs["flag_values"], final.failure_code.attrs["flag_meanings"].split()))
        rows = [(int(final["sample"].values[i]), rn.get(int(final.failure_code.values[i]), "?"),
                 str(final.failure_message.values[i])) for i in failed[:200]]
        more = f"<p>… and {len(failed) - 200} more.</p>" if len(failed) > 200 else ""
        parts.append(f"<h2 id='failures'>Failures ({len(failed)})</h2>"
                     f"<p>Re-run one with <code>tumble rerun {html.escape(os.fspath(v.path))} SAMPLE --debug</code>."
                     f"</p>" + _table(rows, ("sample", "reason", "message")) + more)
    else:
        parts.append("<h2 id='failures'>Failures</h2><p>No sample failed.</p>")
    parts.append("<h2>Figures</h2>")
    for k in plots.kinds_for(v):
        fig = plots.KINDS[k](v)
        parts.append(f"<figure><img alt='{k}' src='{_png(fig)}'><figcaption>{html.escape(k)}</figcaption></figure>")
    fig = _input_figure(v) if v.group("inputs") is not None else None
    if fig is not None:
        parts.append(f"<figure><img alt='inputs' src='{_png(fig)}'><figcaption>dispersed inputs</figcaption></figure>")
    runs = (a.get("run") or {}).get("invocations", [])
    parts.append("<h2>Run history</h2>" + _table(
        [(k + 1, r.get("command_line"), r.get("executor"), r.get("samples_run", "?"), r.get("samples_raised", 0),
          "complete" if r.get("complete") else "interrupted", "; ".join(r.get("repaired_shards", [])) or "-")
         for k, r in enumerate(runs)],
        ("#", "command", "executor", "samples run", "raised", "end", "repaired shards")))
    systems = [(s.get("name"), s.get("phase"), json.dumps(s.get("settings", {}), sort_keys=True))
               for s in a.get("systems", [])]
    parts.append("<h2>Systems</h2>" + _table(systems, ("system", "phase", "settings")))
    res = [(r.get("type"), json.dumps({k: x for k, x in r.items() if k != "type"}, sort_keys=True)[:400])
           for r in a.get("resources", []) if isinstance(r, dict)]
    parts.append("<h2>Resources</h2>" + _table(res, ("resource", "fields")))
    style = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}"
             "table{border-collapse:collapse;margin:0.5em 0}td,th{border:1px solid #ccc;padding:2px 8px;"
             "font-size:13px;text-align:left;vertical-align:top}img{max-width:100%}"
             "figure{margin:1em 0}.warn{color:#a40}.lead{color:#555}")
    page = (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>tumble report: "
            f"{html.escape(sc.get('name', '?'))}</title><style>{style}</style></head><body>"
            + "\n".join(parts) + "</body></html>")
    out.write_text(page, encoding="utf-8")
    return out
