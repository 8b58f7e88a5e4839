"""Plots of a store: the figures a Monte-Carlo study ends with (``tumble plot STORE [KIND]``).

Every function takes an open :class:`StoreView` (or a path) and an optional matplotlib ``Axes``
and returns the ``Figure``; axes carry the quantity and its unit as stored (``units``
attribute). They read the store only (xarray), so they work on any store, with or without the
scene's code. Which kinds apply depends on what the store holds (:func:`kinds_for`):

* ``status`` — samples by end status and failures by reason (every store).
* ``settling-map`` — settling points on a latitude/longitude map, coloured by settling time
  (deployment stores).
* ``settling-3d`` — settling points on the target's shape model (stores with ``scene/``).
* ``distributions`` — settling time and bounce count, overall and split by a dispersed input
  (the probe shape when dispersed, else the first scalar input).
* ``ellipses`` — settling points in the local horizontal plane at their mean, with the 1σ, 2σ and
  3σ covariance ellipses (the dispersion areas of seed 004 ch. 4).
* ``energy`` — kinetic energy after each collision, every sample (seed 004 §4: energy per bounce).
* ``trajectories`` — recorded positions (the first ``*_position`` column) over the target's shape.
* ``sensitivity`` — Spearman rank correlation of every scalar dispersed input component with
  every scalar output: which inputs drive which results.
* ``finals`` — histograms of the scalar final values (stores without deployment columns).
* ``contact-forces`` — contact force and torque histories of each body of a sample (JEOD facet
  contact stores).
* ``joints`` — joint angles over time by joint name, median and 5–95 % band (multibody stores).
* ``end-effector`` — each point of interest (an arm's tip) relative to the tree's base link, in
  its axes, and its distance from it, over time (multibody stores).
* ``separation`` — captured/docked or apart at the end, and when first within reach (stores with a
  :class:`components.multibody.Separation`, e.g. the capture scene).
* ``validation`` — recorded trajectories against the scene's closed form and the error over time
  (scenes whose module defines ``reference(params, inputs, t)``: precession, free_fall, parabola).
"""

from __future__ import annotations

import math
import os
import pathlib
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ecs.attitude import quat_rotate_inverse


def _mpl():
    import matplotlib

    if os.environ.get("MPLBACKEND") is None and not os.environ.get("DISPLAY"):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


@dataclass
class StoreView:
    """A store's groups as xarray datasets (loaded on first use) and its root attributes."""

    path: pathlib.Path
    attrs: dict = field(default_factory=dict)
    _groups: dict = field(default_factory=dict)

    @classmethod
    def open(cls, path) -> "StoreView":
        import zarr

        p = pathlib.Path(path)
        return cls(p, dict(zarr.open_group(os.fspath(p), mode="r").attrs))

    def group(self, name: str):
        """The group as a loaded xarray Dataset, or ``None`` when the store has none (or it is empty)."""
        if name not in self._groups:
            import xarray as xr

            try:
                ds = xr.open_zarr(os.fspath(self.path), group=name, consolidated=False).load()
                self._groups[name] = ds if len(ds.data_vars) else None
            except (KeyError, FileNotFoundError, OSError, ValueError):
                self._groups[name] = None
        return self._groups[name]

    @property
    def final(self):
        ds = self.group("final")
        return ds.where(ds.done, drop=True) if ds is not None and "done" in ds and not bool(ds.done.all()) else ds

    @property
    def title(self) -> str:
        sc = self.attrs.get("scene", {})
        return f"{sc.get('name', '?')} — {self.attrs.get('samples', '?')} samples, seed {self.attrs.get('seed', '?')}"


def _view(store) -> StoreView:
    return store if isinstance(store, StoreView) else StoreView.open(store)


def _label(da, name: str | None = None) -> str:
    u = da.attrs.get("units", "")
    return f"{name or da.name} [{u}]" if u and u != "1" else (name or str(da.name))


def _scalar(da) -> np.ndarray:
    """A per-sample variable with one entity as a 1-D array (the first entity)."""
    a = da
    for d in a.dims[1:]:
        a = a.isel({d: 0})
    return np.asarray(a.values)


def _ax(ax, **kw):
    plt = _mpl()
    if ax is None:
        fig, ax = plt.subplots(**kw)
        return fig, ax
    return ax.figure, ax


def is_deployment(v: StoreView) -> bool:
    f = v.group("final")
    return f is not None and {"probe_latitude", "probe_longitude", "probe_settle_time"} <= set(f.data_vars)


def kinds_for(store) -> list[str]:
    """The plot kinds this store can draw."""
    v = _view(store)
    kinds = ["status"]
    if is_deployment(v):
        kinds += ["settling-map", "distributions", "ellipses"]
        if v.group("scene") is not None and "target_vertices" in v.group("scene"):
            kinds.append("settling-3d")
        ev = v.group("events")
        if ev is not None and "energy_after" in ev:
            kinds.append("energy")
    else:
        kinds.append("finals")
    tr = v.group("trajectories")
    if tr is not None and any(k.endswith("_position") for k in tr.data_vars):
        kinds.append("trajectories")
    inp = v.group("inputs")
    if inp is not None and len([k for k in inp.data_vars if k != "seed"]) and v.attrs.get("samples", 0) >= 4:
        kinds.append("sensitivity")
    if tr is not None and _reference_fn(v) is not None:
        kinds.append("validation")
    if tr is not None and "contact_force" in tr:
        kinds.append("contact-forces")
    if tr is not None and "joint_angle" in tr and "time" in tr.coords:
        kinds.append("joints")
    if tr is not None and {"poi_position", "link_position", "link_attitude"} <= set(tr.data_vars) and "time" in tr.coords:
        kinds.append("end-effector")
    f = v.group("final")
    if f is not None and "separation_within" in f:
        kinds.append("separation")
    return kinds


# ---------------------------------------------------------------------------------------------- kinds
def status(store, ax=None):
    """Samples by end status, failed ones split by reason."""
    v = _view(store)
    f = v.group("final")
    fig, ax = _ax(ax, figsize=(7, 4), layout="constrained")
    names = dict(zip(f.status.attrs["flag_values"], f.status.attrs["flag_meanings"].split()))
    codes, counts = np.unique(f.status.values[f.done.values] if "done" in f else f.status.values, return_counts=True)
    labels = [names.get(int(c), str(c)) for c in codes]
    if "failure_code" in f and (f.status.values == 9).any():
        rn = dict(zip(f.failure_code.attrs["flag_values"], f.failure_code.attrs["flag_meanings"].split()))
        rc, rcount = np.unique(f.failure_code.values[f.status.values == 9], return_counts=True)
        labels += [f"failed: {rn.get(int(c), c)}" for c in rc]
        counts = np.concatenate([counts, rcount])
    ax.barh(labels, counts, color="tab:blue")
    for y, c in enumerate(counts):
        ax.text(c, y, f" {c}", va="center")
    ax.set_xlabel("samples [1]")
    ax.set_title(v.title)
    return fig


def circular_mean_deg(lon: np.ndarray) -> float:
    """Circular mean [deg] of longitudes [deg] (finite values)."""
    r = np.radians(lon)
    return math.degrees(math.atan2(np.sin(r).mean(), np.cos(r).mean()))


def unwrap_about(lon: np.ndarray, centre: float) -> np.ndarray:
    """Longitudes [deg] moved by whole turns to within ±180° of ``centre``, so that points either side
    of the ±180° meridian are not drawn or averaged on the far side of the body."""
    return (lon - centre + 180.0) % 360.0 - 180.0 + centre


def _latlon(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Latitude and longitude [deg] of target-frame positions (rows of x, y, z)."""
    r = np.linalg.norm(p, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.degrees(np.arcsin(p[:, 2] / r)), np.degrees(np.arctan2(p[:, 1], p[:, 0]))


def settling_map(store, ax=None):
    """Settling points (latitude, longitude) coloured by settling time, zoomed to the data, with the
    release points' sub-probe points (inputs/release_position) marked."""
    v = _view(store)
    f = v.final
    fig, ax = _ax(ax, figsize=(8, 4.5), layout="constrained")
    lon, lat = _scalar(f.probe_longitude), _scalar(f.probe_latitude)
    t = _scalar(f.probe_settle_time) / 3600.0
    ok = np.isfinite(lon) & np.isfinite(lat)
    if ok.any():                                     # longitudes within ±180° of their circular mean
        c = circular_mean_deg(lon[ok])
        lon = unwrap_about(lon, c)
    sc = ax.scatter(lon, lat, c=t, s=12, cmap="viridis", label=f"settling point ({int(ok.sum())} samples)")
    fig.colorbar(sc, ax=ax, label="settling time [h]")
    inp = v.group("inputs")
    pts = [lon[ok], lat[ok]]
    if inp is not None and "release_position" in inp and ok.any():
        rlat, rlon = _latlon(np.asarray(inp.release_position.values).reshape(-1, 3))
        rlon = unwrap_about(rlon, c)
        ax.scatter(rlon, rlat, marker="x", s=14, color="tab:red", alpha=0.5, label="release point (radial projection)")
        pts = [np.concatenate([pts[0], rlon]), np.concatenate([pts[1], rlat])]
    if ok.any():
        lo = np.nanmin(pts[0]), np.nanmax(pts[0])
        la = np.nanmin(pts[1]), np.nanmax(pts[1])
        m = max(2.0, 0.08 * max(lo[1] - lo[0], la[1] - la[0]))
        xlim = max(lo[0] - m, c - 180.0), min(lo[1] + m, c + 180.0)
        ylim = max(la[0] - m, -90.0), min(la[1] + m, 90.0)
        _shape_relief(ax, v, c, xlim, ylim)
        ax.set_xlim(*xlim)
        ax.set_ylim(*ylim)
        ax.legend(loc="best", fontsize=8)
    ax.set_xlabel("longitude [deg]")
    ax.set_ylabel("latitude [deg]")
    ax.grid(alpha=0.3)
    ax.set_title(f"settling points — {v.title}")
    return fig


def _shape_relief(ax, v: StoreView, centre: float, xlim, ylim) -> None:
    """The target's shape model under a latitude/longitude map: its vertices' distance from the
    target origin [m], filled grey contours over the visible window (nothing without ``scene/``)."""
    verts, _ = _target_mesh(v)
    if verts is None:
        return
    lat, lon = _latlon(verts)
    lon = unwrap_about(lon, centre)
    wx, wy = 0.25 * (xlim[1] - xlim[0]), 0.25 * (ylim[1] - ylim[0])
    near = (lon > xlim[0] - wx) & (lon < xlim[1] + wx) & (lat > ylim[0] - wy) & (lat < ylim[1] + wy)
    if near.sum() < 8:
        return
    r = np.linalg.norm(verts[near], axis=1)
    cs = ax.tricontourf(lon[near], lat[near], r, levels=12, cmap="Greys", alpha=0.45, zorder=0)
    ax.figure.colorbar(cs, ax=ax, label="shape model: distance from the target origin [m]", pad=0.01)


def _target_mesh(v: StoreView):
    sc = v.group("scene")
    if sc is None or "target_vertices" not in sc:
        return None, None
    return np.asarray(sc.target_vertices.values), np.asarray(sc.target_faces.values)


def settling_3d(store, ax=None):
    """Settling points on the target's shape model (target frame)."""
    v = _view(store)
    plt = _mpl()
    verts, faces = _target_mesh(v)
    if ax is None:
        fig = plt.figure(figsize=(7, 6), layout="constrained")
        ax = fig.add_subplot(projection="3d")
    fig = ax.figure
    if verts is not None:
        ax.plot_trisurf(verts[:, 0], verts[:, 1], verts[:, 2], triangles=faces, color="0.75", alpha=0.35,
                        linewidth=0)
    p = np.asarray(v.final.body_position.values).reshape(-1, 3)
    t = _scalar(v.final.probe_settle_time) / 3600.0
    sc = ax.scatter(p[:, 0], p[:, 1], p[:, 2], c=t, s=6, cmap="viridis", depthshade=False)
    fig.colorbar(sc, ax=ax, shrink=0.6, label="settling time [h]")
    for k, name in enumerate("xyz"):
        getattr(ax, f"set_{name}label")(f"{name} [m]")
    lim = np.abs(verts).max() if verts is not None else np.abs(p).max()
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_zlim(-lim, lim)
    ok = np.isfinite(p).all(axis=1)
    if ok.any():                                    # look at the landing area from above its mean point
        lat, lon = _latlon(p[ok])
        ax.view_init(elev=float(np.clip(np.mean(lat), -89.0, 89.0)), azim=circular_mean_deg(lon))
    ax.set_title("settling points on the target (target frame)")
    return fig


def _split_input(v: StoreView, by: str | None = None):
    """(name, values per sample, labels) of the input to split distributions by: ``by`` (an
    ``inputs/`` variable, ``name[k]`` for a component), else the probe shape when dispersed, else
    the first scalar input."""
    inp = v.group("inputs")
    if inp is None:
        return None, None, None
    if by is not None:
        from ecs.errors import InputError

        cols = _scalar_columns(inp, skip=("seed", "sample"))
        if by == "probe_shape" and "probe_shape" in inp:
            pass
        elif by in cols:
            return by, cols[by], None
        else:
            raise InputError("by", by, f"must be one of the store's inputs: {', '.join(cols)}")
    if "probe_shape" in inp:
        names = (v.attrs.get("resources") or [{}])
        shapes = next((r.get("names") for r in names if isinstance(r, dict) and r.get("type") == "ProbeShapes"), None)
        vals = _scalar(inp.probe_shape).astype(int)
        return "probe shape [name]", vals, shapes
    for k, da in inp.data_vars.items():
        if k != "seed" and da.ndim == 1:
            return k, np.asarray(da.values), None
    return None, None, None


def distributions(store, by: str | None = None):
    """Settling time and bounce count: overall histograms and split by a dispersed input (``by``:
    e.g. ``"contact_terrain[restitution]"``, ``"contact_terrain[friction]"``: a labelled axis is named
    by its labels, any other by index, ``"release_velocity[2]"``); the
    split row only when the store has such an input."""
    v = _view(store)
    plt = _mpl()
    f = v.final
    name, x, labels = _split_input(v, by)
    fig, axes = plt.subplots(2 if name is not None else 1, 2, figsize=(11, 7 if name is not None else 3.8),
                             layout="constrained", squeeze=False)
    t = _scalar(f.probe_settle_time) / 3600.0
    b = _scalar(f.probe_bounces)
    ok = np.isfinite(t)
    axes[0, 0].hist(t[ok], bins=30, color="tab:blue")
    axes[0, 0].set_xlabel("settling time [h]")
    axes[0, 0].set_ylabel("samples [1]")
    span = int(b.max() - b.min()) if len(b) else 0
    axes[0, 1].hist(b, bins=np.arange(b.min(), b.max() + 2) - 0.5 if 0 < span <= 60 else 40, color="tab:orange")
    if span > 60:
        axes[0, 1].set_yscale("log")
    axes[0, 1].set_xlabel("bounces [1]")
    axes[0, 1].set_ylabel("samples [1]")
    if name is not None and labels is not None:          # categorical: box plots per category
        cats = sorted(set(x.tolist()))
        axes[1, 0].boxplot([t[(x == c) & ok] for c in cats], tick_labels=[labels[c] for c in cats])
        axes[1, 1].boxplot([b[x == c] for c in cats], tick_labels=[labels[c] for c in cats])
        for a in axes[1]:
            a.set_xlabel(name)
            a.tick_params(axis="x", labelrotation=30)
        if span > 60:
            axes[1, 1].set_yscale("log")
    elif name is not None:
        axes[1, 0].scatter(x, t, s=8)
        axes[1, 1].scatter(x, b, s=8)
        unit = v.group("inputs")[name.split("[")[0]].attrs.get("units", "")
        for a in axes[1]:
            a.set_xlabel(f"{name} [{unit or '1'}]")
    if name is not None:
        axes[1, 0].set_ylabel("settling time [h]")
        axes[1, 1].set_ylabel("bounces [1]")
    fig.suptitle(v.title)
    return fig


def _tangent_frame(mean: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    up = mean / np.linalg.norm(mean)
    east = np.cross([0.0, 0.0, 1.0], up)
    if np.linalg.norm(east) < 1e-9:
        east = np.array([1.0, 0.0, 0.0])
    east /= np.linalg.norm(east)
    north = np.cross(up, east)
    return east, north, up


def dispersion_ellipse(points: np.ndarray, k: float) -> tuple[np.ndarray, float]:
    """The k-sigma covariance ellipse of 2-D ``points``: (boundary [m], area [m^2])."""
    c = np.cov(points.T)
    w, vec = np.linalg.eigh(c)
    th = np.linspace(0.0, 2.0 * math.pi, 181)
    circle = np.stack([np.cos(th), np.sin(th)])
    boundary = (vec @ (k * np.sqrt(np.maximum(w, 0.0))[:, None] * circle)).T + points.mean(axis=0)
    return boundary, float(math.pi * k * k * math.sqrt(max(np.prod(w), 0.0)))


def ellipses(store, ax=None):
    """Settling points in the local horizontal plane at their mean, with 1σ/2σ/3σ ellipses."""
    v = _view(store)
    f = v.final
    settled = f.status.values == 2
    p = np.asarray(f.body_position.values).reshape(-1, 3)[settled]
    fig, ax = _ax(ax, figsize=(6.5, 6), layout="constrained")
    if len(p) < 3:
        ax.text(0.5, 0.5, "fewer than 3 settled samples", ha="center", transform=ax.transAxes)
        return fig
    e, n, _ = _tangent_frame(p.mean(axis=0))
    xy = np.stack([(p - p.mean(axis=0)) @ e, (p - p.mean(axis=0)) @ n], axis=1)
    ax.scatter(xy[:, 0], xy[:, 1], s=8, color="tab:blue", label="settling points")
    for k, ls in ((1, "-"), (2, "--"), (3, ":")):
        bnd, area = dispersion_ellipse(xy, k)
        ax.plot(bnd[:, 0], bnd[:, 1], ls, color="tab:red", label=f"{k}σ: {area:.3g} m²")
    ax.set_aspect("equal")
    ax.set_xlabel("east of the mean settling point [m]")
    ax.set_ylabel("north of the mean settling point [m]")
    ax.legend(loc="best", fontsize=8)
    ax.set_title(f"dispersion of {len(p)} settled samples")
    return fig


def energy(store, ax=None):
    """Kinetic energy after each collision (log scale): up to 500 samples, the median over the
    samples that reached each collision, and how many did (right axis)."""
    v = _view(store)
    ev = v.group("events")
    fig, ax = _ax(ax, figsize=(8, 4.5), layout="constrained")
    ea = np.asarray(ev.energy_after.values)
    for row in ea[:500]:
        ok = np.isfinite(row) & (row > 0)
        ax.plot(np.flatnonzero(ok), row[ok], color="tab:blue", alpha=0.15, lw=0.8)
    pos = np.where(ea > 0, ea, np.nan)
    count = np.isfinite(pos).sum(axis=0)
    med = np.full(pos.shape[1], np.nan)
    reached = count > 0                                    # slots no sample reached have no median
    med[reached] = np.nanmedian(pos[:, reached], axis=0)
    ok = np.isfinite(med)
    ax.plot(np.flatnonzero(ok), med[ok], color="k", lw=2, label="median over the samples reaching it")
    ax.set_yscale("log")
    ax.set_xlabel("collision [1]")
    ax.set_ylabel(_label(ev.energy_after, "kinetic energy after the collision"))
    twin = ax.twinx()
    twin.step(np.arange(len(count)), count, where="mid", color="tab:orange", lw=1.2, label="samples reaching it")
    twin.set_ylabel("samples reaching the collision [1]", color="tab:orange")
    twin.set_ylim(0, max(1, int(count.max(initial=0))) * 1.05)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = twin.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, loc="upper right", fontsize=8)
    ax.set_title(v.title)
    return fig


def trajectories(store, ax=None, samples: int = 20):
    """Recorded positions of the first ``samples`` samples over the target's shape (3-D)."""
    v = _view(store)
    plt = _mpl()
    tr = v.group("trajectories")
    col = next(k for k in tr.data_vars if k.endswith("_position"))
    if ax is None:
        fig = plt.figure(figsize=(7, 6), layout="constrained")
        ax = fig.add_subplot(projection="3d")
    fig = ax.figure
    verts, faces = _target_mesh(v)
    if verts is not None:
        ax.plot_trisurf(verts[:, 0], verts[:, 1], verts[:, 2], triangles=faces, color="0.75", alpha=0.3, linewidth=0)
    x = np.asarray(tr[col].values)                  # sample, time, entity, xyz
    for s in range(min(samples, x.shape[0])):
        for e in range(x.shape[2]):
            pts = x[s, :, e]
            ok = np.isfinite(pts).all(axis=1)
            ax.plot(pts[ok, 0], pts[ok, 1], pts[ok, 2], lw=0.8)
    for name in "xyz":
        getattr(ax, f"set_{name}label")(f"{name} [{tr[col].attrs.get('units', 'm')}]")
    ax.set_title(f"{col}, {min(samples, x.shape[0])} samples ({tr[col].attrs.get('frame', '')} frame)")
    return fig


def _scalar_columns(ds, skip=()) -> dict[str, np.ndarray]:
    out = {}
    for k, da in ds.data_vars.items():
        if k in skip or da.dtype.kind not in "fiu" or da.dtype == bool:
            continue
        a = np.asarray(da.values)
        tail = a.shape[1:]
        named = [d for d in da.dims[1:] if da.sizes[d] > 1 and d in da.coords and da.coords[d].dtype.kind in "UOT"]
        if int(np.prod(tail)) == 1:                            # one value per sample (and entity)
            out[k] = a.reshape(len(a)).astype(float)
        elif len(named) == 1 and all(da.sizes[d] == 1 for d in da.dims[1:] if d != named[0]):
            ax = da.dims.index(named[0])                       # a labelled axis: one column per label
            for j, lab in enumerate(da.coords[named[0]].values):
                out[f"{k}[{lab}]"] = np.take(a, j, axis=ax).reshape(len(a)).astype(float)
        elif int(np.prod(tail)) <= 8:                          # a few components: one column each
            squeezed = [n for n in tail if n > 1]
            flat = a.reshape(len(a), -1)
            for j, idx in enumerate(np.ndindex(*squeezed)):
                out[f"{k}[{','.join(map(str, idx))}]"] = flat[:, j].astype(float)
    return out


def sensitivity_table(store) -> tuple[list[str], list[str], np.ndarray]:
    """Spearman rank correlation (scipy) of scalar input components (rows) with scalar outputs
    (columns) over the finished samples; NaN where an input or output is constant."""
    from scipy.stats import spearmanr

    v = _view(store)
    f = v.group("final")
    done = f.done.values if "done" in f else np.ones(f.sizes["sample"], bool)
    inp = {k: a[done] for k, a in _scalar_columns(v.group("inputs"), skip=("seed", "sample")).items()}
    skip = ("done", "sample", "status", "failure_code", "event_count", "probe_shape")
    cols = _scalar_columns(f, skip=skip)
    scalars = {k: a for k, a in cols.items() if "[" not in k}     # one value per sample: the study's outputs
    out = {k: a[done] for k, a in (scalars or cols).items()}
    ins = [k for k, a in inp.items() if np.nanstd(a) > 0]
    outs = [k for k, a in out.items() if np.isfinite(a).sum() > 3 and np.nanstd(a) > 0]
    rho = np.full((len(ins), len(outs)), np.nan)
    for i, a in enumerate(ins):
        for j, b in enumerate(outs):
            ok = np.isfinite(inp[a]) & np.isfinite(out[b])
            if ok.sum() > 3 and np.ptp(inp[a][ok]) > 0 and np.ptp(out[b][ok]) > 0:   # else undefined: NaN
                rho[i, j] = spearmanr(inp[a][ok], out[b][ok]).statistic
    return ins, outs, rho


def sensitivity(store, ax=None):
    """Which dispersed inputs drive which outputs: a Spearman rank-correlation heat map."""
    v = _view(store)
    ins, outs, rho = sensitivity_table(v)
    fig, ax = _ax(ax, figsize=(max(6, 0.6 * len(outs) + 4), max(3.5, 0.4 * len(ins) + 2.5)), layout="constrained")
    if not ins or not outs:
        ax.text(0.5, 0.5, "no varying input or output", ha="center", transform=ax.transAxes)
        return fig
    im = ax.imshow(rho, cmap="coolwarm", vmin=-1, vmax=1, aspect="auto")
    ax.set_xticks(range(len(outs)), outs, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(ins)), ins, fontsize=8)
    for i in range(len(ins)):
        for j in range(len(outs)):
            if np.isfinite(rho[i, j]) and abs(rho[i, j]) >= 0.2:
                ax.text(j, i, f"{rho[i, j]:.2f}", ha="center", va="center", fontsize=7)
    fig.colorbar(im, ax=ax, label="Spearman rank correlation [1]")
    ax.set_xlabel("output in final/ [name]")
    ax.set_ylabel("dispersed input in inputs/ [name]")
    ax.set_title("which inputs drive the results")
    return fig


def finals(store):
    """Histograms of the scalar final values (first 12)."""
    v = _view(store)
    plt = _mpl()
    f = v.final
    cols = _scalar_columns(f, skip=("done", "sample", "status", "failure_code", "event_count"))
    names = list(cols)[:12]
    n = max(1, len(names))
    fig, axes = plt.subplots(math.ceil(n / 3), min(3, n), figsize=(11, 3 * math.ceil(n / 3)), layout="constrained",
                             squeeze=False)
    for ax, k in zip(axes.ravel(), names):
        a = cols[k][np.isfinite(cols[k])]
        base = k.split("[")[0]
        label = _label(f[base], k)
        mid = float(np.median(a)) if len(a) else 0.0
        if len(a) and mid != 0.0 and np.ptp(a) < 1e-3 * abs(mid):   # spread far below the value: show the spread
            a = a - mid
            u = f[base].attrs.get("units", "1")
            label = f"{k} − {mid:.10g}" + (f" [{u}]" if u and u != "1" else "")
        ax.hist(a, bins=30)
        ax.ticklabel_format(axis="x", useOffset=False)
        ax.locator_params(axis="x", nbins=5)
        ax.set_xlabel(label, fontsize=8)
        ax.set_ylabel("samples [1]")
    fig.suptitle(v.title)
    return fig


def _band(ax, t: np.ndarray, y: np.ndarray, samples: int) -> None:
    """``y[sample, time]`` over ``t``: the first ``samples`` rows thin, the across-sample median
    (label ``median``) and the 5–95 % band."""
    for row in y[:samples]:
        ax.plot(t, row, color="tab:blue", alpha=0.15, lw=0.7)
    with np.errstate(all="ignore"):
        lo, med, hi = np.nanpercentile(y, [5, 50, 95], axis=0)
    ax.fill_between(t, lo, hi, color="tab:orange", alpha=0.3, lw=0, label="5–95 %")
    ax.plot(t, med, color="k", lw=1.4, label="median")


def joints(store, samples: int = 200):
    """Joint angles over time (``trajectories/joint_angle``, one panel per joint, by name): every
    sample thin, the median and the 5–95 % band across samples."""
    v = _view(store)
    plt = _mpl()
    tr = v.group("trajectories")
    da = tr.joint_angle
    names = [str(n) for n in da["joint"].values]
    n = len(names)
    cols = min(4, n)
    fig, axes = plt.subplots(math.ceil(n / cols), cols, figsize=(3.2 * cols, 2.6 * math.ceil(n / cols)),
                             layout="constrained", squeeze=False, sharex=True)
    t = np.asarray(tr["time"].values)
    deg = np.degrees(np.asarray(da.values)) if da.attrs.get("units") == "rad" else np.asarray(da.values)
    unit = "deg" if da.attrs.get("units") == "rad" else da.attrs.get("units", "1")
    for k, (ax, name) in enumerate(zip(axes.ravel(), names)):
        _band(ax, t, deg[:, :, k], samples)
        ax.set_title(name, fontsize=9)
        ax.set_ylabel(f"angle [{unit}]", fontsize=8)
    for ax in axes[-1]:
        ax.set_xlabel("time [s]")
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(f"joint angles — {v.title}")
    return fig


def separation(store, ax=None):
    """Outcome of every :class:`components.multibody.Separation` (a capture, a docking): how many
    samples ended within reach, and when they first got there."""
    v = _view(store)
    plt = _mpl()
    f = v.final
    within = np.asarray(f.separation_within.values)
    first = np.asarray(f.separation_first_within.values)
    names = [str(x) for x in f["separation_name"].values] if "separation_name" in f.coords else \
        [str(i) for i in range(within.shape[1])]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    meanings = dict(zip(f.separation_within.attrs["flag_values"], f.separation_within.attrs["flag_meanings"].split()))
    for k, name in enumerate(names):
        vals, counts = np.unique(within[:, k], return_counts=True)
        axes[0].bar([f"{name}: {meanings.get(int(x), x)}" for x in vals], counts)
        ok = np.isfinite(first[:, k])
        if ok.any():
            axes[1].hist(first[ok, k], bins=20, alpha=0.7, label=f"{name} ({int(ok.sum())} samples)")
    axes[0].set_ylabel("samples [1]")
    axes[0].set_title("at the end")
    axes[1].set_xlabel(_label(f.separation_first_within, "first within reach"))
    axes[1].set_ylabel("samples [1]")
    if axes[1].has_data():
        axes[1].legend(fontsize=8)
    axes[1].set_title("first time within reach")
    fig.suptitle(v.title)
    return fig


def end_effector_offsets(store) -> tuple[np.ndarray, list[str], str]:
    """Every point of interest relative to the tree's first link (``body`` 0, the base), in the base's
    axes [m]: ``(x[sample, time, poi, xyz], poi names, base name)`` from ``trajectories/poi_position``,
    ``link_position`` and ``link_attitude`` (link→inertial, scalar-first)."""
    v = _view(store)
    tr = v.group("trajectories")
    d = np.asarray(tr.poi_position.values) - np.asarray(tr.link_position.values)[:, :, :1, :]
    q = np.broadcast_to(np.asarray(tr.link_attitude.values)[:, :, :1, :], d.shape[:-1] + (4,))
    names = [str(x) for x in tr["poi_name"].values] if "poi_name" in tr.coords else [str(i) for i in range(d.shape[2])]
    base = str(tr["body_name"].values[0]) if "body_name" in tr.coords else "body 0"
    return quat_rotate_inverse(q, d), names, base


def end_effector(store, samples: int = 200):
    """Where each point of interest (an arm's tip, a docking fixture) goes relative to the base link,
    in the base's axes: one row per point, x y z over time, every sample thin with the median and
    the 5–95 % band; the last column is its distance from the base origin."""
    v = _view(store)
    plt = _mpl()
    tr = v.group("trajectories")
    x, names, base = end_effector_offsets(v)
    t = np.asarray(tr["time"].values)
    n = len(names)
    fig, axes = plt.subplots(n, 4, figsize=(13, 2.5 * n), layout="constrained", squeeze=False, sharex=True)
    for r, name in enumerate(names):
        cols = [x[:, :, r, k] for k in range(3)] + [np.linalg.norm(x[:, :, r, :], axis=-1)]
        for c, (ax, y, lab) in enumerate(zip(axes[r], cols, ("x", "y", "z", "distance"))):
            _band(ax, t, y, samples)
            ax.set_ylabel(f"{lab} [m]", fontsize=8)
            ax.set_title(f"{name}: {lab}" + (f" ({base} axes)" if c < 3 else f" from {base}"), fontsize=9)
    for ax in axes[-1]:
        ax.set_xlabel("time [s]")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(f"points of interest relative to {base} — {v.title}")
    return fig


def contact_forces(store, sample: int = 0):
    """Contact force and torque histories of every body of one sample (facet contact stores:
    ``trajectories/contact_force``, inertial frame, and ``contact_torque``, body axes)."""
    v = _view(store)
    plt = _mpl()
    tr = v.group("trajectories")
    t = np.asarray(tr["time"].values)
    fig, axes = plt.subplots(2, 1, figsize=(9, 6), layout="constrained", sharex=True)
    for ax, col in zip(axes, ("contact_force", "contact_torque")):
        if col not in tr:
            ax.set_visible(False)
            continue
        x = np.asarray(tr[col].isel(sample=sample).values)            # time, body, xyz
        dim = tr[col].dims[2]
        names = tr[f"{dim}_name"].values if f"{dim}_name" in tr.coords else range(x.shape[1])
        for e, name in enumerate(names):
            for k, comp in enumerate("xyz"):
                ax.plot(t, x[:, e, k], lw=1.0, ls=("-", "--", ":")[k], color=f"C{e}", label=f"{name} {comp}")
        ax.set_ylabel(f"{col} [{tr[col].attrs.get('units', '')}] ({tr[col].attrs.get('frame', '')})")
        ax.legend(fontsize=7, ncol=2)
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("time [s]")
    fig.suptitle(f"{v.title}: contact forces of sample {sample}")
    return fig


def _reference_fn(v: StoreView):
    """The scene module's ``reference(params, inputs, t)`` (closed-form values of the recorded
    columns), or ``None``."""
    from scenes.registry import scene_module

    try:
        mod = scene_module(v.attrs.get("scene", {}).get("source", ""))
    except Exception:  # noqa: BLE001 - a store whose scene cannot be found here: no reference
        return None
    fn = getattr(mod, "reference", None)
    return fn if callable(fn) else None


def validation(store, samples: int = 3):
    """Recorded trajectories against the scene's closed form (precession, free fall, parabola):
    each reference column's components over time, and the error norm on a log scale."""
    v = _view(store)
    plt = _mpl()
    tr = v.group("trajectories")
    fn = _reference_fn(v)
    t = np.asarray(tr["time"].values)
    params = v.attrs["scene"]["params"]
    inp = v.group("inputs")
    ref0 = fn(params, {}, t)
    cols = [c for c in ref0 if c in tr]
    fig, axes = plt.subplots(len(cols), 2, figsize=(11, 3.2 * len(cols)), layout="constrained", squeeze=False)
    for r, c in enumerate(cols):
        unit = tr[c].attrs.get("units", "1")
        for s in range(min(samples, tr.sizes["sample"])):
            inputs = {k: np.asarray(inp[k].values[s]) for k in inp.data_vars} if inp is not None else {}
            ref = np.asarray(fn(params, inputs, t)[c])[:, 0]
            got = np.asarray(tr[c].isel(sample=s).values)[:, 0]
            if c.endswith("attitude"):                   # q and -q are one attitude
                ref = ref * np.sign(np.sum(ref * got, axis=-1, keepdims=True) + 1e-300)
            for k in range(got.shape[-1]):
                axes[r, 0].plot(t, got[:, k], lw=1.2, color=f"C{k}", alpha=0.8 if s == 0 else 0.3,
                                label=f"recorded [{k}]" if s == 0 else None)
                axes[r, 0].plot(t, ref[:, k], "k:", lw=1.0, label="closed form" if (s == 0 and k == 0) else None)
            err = np.linalg.norm(got - ref, axis=-1)
            axes[r, 1].semilogy(t, np.maximum(err, 1e-18), label=f"sample {s}")
        axes[r, 0].set_xlabel("time [s]")
        axes[r, 0].set_ylabel(f"{c} [{unit}]")
        axes[r, 0].legend(fontsize=7, loc="best")
        axes[r, 1].set_xlabel("time [s]")
        axes[r, 1].set_ylabel(f"|{c} - closed form| [{unit}]")
        axes[r, 1].legend(fontsize=7)
    fig.suptitle(f"{v.title}: against the closed form")
    return fig


KINDS: dict[str, Callable[..., Any]] = {
    "status": status, "settling-map": settling_map, "settling-3d": settling_3d, "distributions": distributions,
    "ellipses": ellipses, "energy": energy, "trajectories": trajectories, "sensitivity": sensitivity,
    "finals": finals, "validation": validation, "contact-forces": contact_forces, "joints": joints,
    "separation": separation, "end-effector": end_effector,
}


def caption(store, kind: str) -> str:
    """What figure ``kind`` of this store shows, in which units, over how many samples."""
    v = _view(store)
    f = v.group("final")
    done = f.done.values if "done" in f else np.ones(f.sizes["sample"], bool)
    n_done, n_all = int(done.sum()), int(f.sizes["sample"])
    settled = int((done & (f.status.values == 2)).sum())
    tr = v.group("trajectories")
    if kind == "status":
        return f"samples by end status, failed ones split by reason ({n_done} of {n_all} samples finished)."
    if kind == "settling-map":
        return (f"where the {n_done} finished samples ended: latitude and longitude of the CoM in the target frame "
                f"[deg], coloured by settling time [h]; red crosses are the release points projected radially onto "
                f"the map; grey contours, where the store has the target's shape model, are its surface's distance "
                f"from the target origin [m].")
    if kind == "settling-3d":
        return (f"end points of the {n_done} finished samples on the target's shape model (target frame, x y z [m]), "
                f"coloured by settling time [h], seen from above their mean point.")
    if kind == "distributions":
        name, _, _ = _split_input(v)
        split = f", and both split by {name}" if name else " (no scalar dispersed input to split them by)"
        return f"settling time [h] and bounce count [1] of the {n_done} finished samples{split}."
    if kind == "ellipses":
        return (f"the {settled} settled samples' end points in the local horizontal plane at their mean [m], with "
                f"their 1σ, 2σ and 3σ covariance ellipses and each one's area [m²].")
    if kind == "energy":
        ev = v.group("events")
        return (f"kinetic energy after each collision [{ev.energy_after.attrs.get('units', 'J')}] of up to 500 of the "
                f"{n_done} samples (thin lines); the median is over the samples that reached each collision, whose "
                f"number is drawn on the right axis.")
    if kind == "trajectories":
        col = next(k for k in tr.data_vars if k.endswith("_position"))
        return (f"recorded {col} [{tr[col].attrs.get('units', 'm')}] of the first {min(20, tr.sizes['sample'])} "
                f"samples ({tr[col].attrs.get('frame', '?')} frame), over the target's shape where the store has it.")
    if kind == "sensitivity":
        return (f"Spearman rank correlation [1] of each dispersed input with each scalar output over the {n_done} "
                f"finished samples; values of magnitude ≥ 0.2 are printed.")
    if kind == "finals":
        return f"histograms of the scalar final values of the {n_done} finished samples, in their stored units."
    if kind == "contact-forces":
        return "contact force (inertial frame) [N] and torque (body axes) [N m] of each body of sample 0 over time [s]."
    if kind == "joints":
        return (f"joint angles [deg] of each revolute joint (trajectories/joint_angle, by name) over time [s]: up to 200 "
                f"of the {n_done} samples thin, their median and 5–95 % band.")
    if kind == "end-effector":
        base = str(tr["body_name"].values[0]) if "body_name" in tr.coords else "body 0"
        return (f"each point of interest relative to {base} (the tree's base), in its axes [m], and its distance "
                f"from it [m] over time [s]: up to 200 of the {n_done} samples thin, their median and 5–95 % band.")
    if kind == "separation":
        return (f"outcome of each Separation check (a capture, a docking) over the {n_done} finished samples: "
                f"within reach or apart at the end, and the first time [s] within reach.")
    if kind == "validation":
        return ("recorded trajectories of the first samples against the scene's closed form, and the error over "
                "time, in the stored units.")
    return kind


def plot(store, kinds: list[str] | None = None, out_dir=None, *, fmt: str = "png",
         by: str | None = None) -> list[pathlib.Path]:
    """Draw ``kinds`` (default: every kind this store can draw) into ``out_dir`` (default:
    ``<store>-plots/``); returns the files written."""
    from ecs.errors import InputError

    v = _view(store)
    can = kinds_for(v)
    kinds = kinds or can
    for k in kinds:
        if k not in KINDS:
            raise InputError("plot kind", k, f"must be one of {', '.join(KINDS)}")
        if k not in can:
            raise InputError("plot kind", k, f"this store cannot draw it (it can: {', '.join(can)})")
    out = pathlib.Path(out_dir) if out_dir else v.path.with_name(v.path.name.removesuffix(".zarr") + "-plots")
    out.mkdir(parents=True, exist_ok=True)
    plt = _mpl()
    files = []
    for k in kinds:
        fig = KINDS[k](v, by=by) if (k == "distributions" and by) else KINDS[k](v)
        f = out / f"{k}.{fmt}"
        fig.savefig(f, dpi=110)
        plt.close(fig)
        files.append(f)
    return files
