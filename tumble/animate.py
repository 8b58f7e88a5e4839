"""``tumble animate STORE SAMPLE``: a GIF (or MP4, with ffmpeg) of one sample's recorded motion.

Draws every entity of the sample's recorded trajectories (``trajectories/<prefix>_position``):
its path so far, its position, and its body axes when an attitude column was recorded (a
scalar-first quaternion rotating body components into the position's frame), over the target's
shape model when the store has one (``scene/``). That covers a probe bouncing on its target, two
vehicles in facet contact and a tumbling body (seed 002's animation module). Needs a store run
with trajectories (``-p record_every=N`` on the deployment scenes).
"""

from __future__ import annotations

import os
import pathlib

import numpy as np

from ecs.attitude import quat_to_dcm

from . import plots


#: Triangles of the target's shape model drawn at most (each frame redraws them).
MAX_FACES = 1500


def animate(store, sample: int, out=None, *, fps: int = 20, max_frames: int = 200, view_radius: float | None = None):
    """Write the animation of ``sample`` (``.gif`` by Pillow, ``.mp4`` by ffmpeg) and return its path."""
    from matplotlib.animation import FFMpegWriter, FuncAnimation, PillowWriter

    from ecs.errors import InputError

    plt = plots._mpl()
    v = plots.StoreView.open(store)
    tr = v.group("trajectories")
    if tr is None:
        raise InputError("store", os.fspath(v.path), "has no trajectories: run it with trajectories recorded "
                                                      "(e.g. -p record_every=1) to animate a sample")
    have = [int(s) for s in tr["sample"].values]              # sample numbers (a dense rerun store has one)
    if sample not in have:
        raise InputError("sample", sample, f"must be one of the store's samples ({have[0]}..{have[-1]})"
                         if len(have) > 1 else f"must be {have[0]}, the one sample this store holds")
    pos_col = next((k for k in tr.data_vars if k.endswith("_position")), None)
    if pos_col is None:
        raise InputError("store", os.fspath(v.path), "records no *_position column to animate")
    prefix = pos_col[: -len("_position")]
    att_col = next((k for k in (f"{prefix}_attitude",) if k in tr), None)
    t = np.asarray(tr["time"].values)
    x = np.asarray(tr[pos_col].sel(sample=sample).values)                   # time, entity, xyz
    q = np.asarray(tr[att_col].sel(sample=sample).values) if att_col else None
    ok = np.isfinite(x).all(axis=(1, 2))
    moving = np.flatnonzero(np.any(np.diff(x, axis=0) != 0.0, axis=(1, 2)))
    if len(moving):             # stop one record after the last motion (a settled row is frozen)
        ok &= np.arange(len(t)) <= moving[-1] + 1
    t, x = t[ok], x[ok]
    q = q[ok] if q is not None else None
    step = max(1, len(t) // max_frames)
    frames = range(0, len(t), step)
    verts, faces = plots._target_mesh(v)
    fig = plt.figure(figsize=(6, 6))
    ax = fig.add_subplot(projection="3d")
    lo, hi = x.reshape(-1, 3).min(axis=0), x.reshape(-1, 3).max(axis=0)
    centre = 0.5 * (lo + hi)
    r = view_radius or max(0.6 * float(np.max(hi - lo)), 1.0)
    if verts is not None:   # the part of the shape model in view, at most MAX_FACES triangles (redrawn per frame)
        inside = (np.abs(verts[faces] - centre).max(axis=(1, 2)) <= 1.2 * r)
        sub = faces[inside][:: max(1, int(inside.sum()) // MAX_FACES)]
        if len(sub):
            ax.plot_trisurf(verts[:, 0], verts[:, 1], verts[:, 2], triangles=sub, color="0.75", alpha=0.35,
                            linewidth=0)
    axis_len = 0.12 * r
    trails = [ax.plot([], [], [], lw=1)[0] for _ in range(x.shape[1])]
    dots = [ax.plot([], [], [], "o", ms=5)[0] for _ in range(x.shape[1])]
    triads = [[ax.plot([], [], [], color=c, lw=2)[0] for c in ("tab:red", "tab:green", "tab:blue")]
              for _ in range(x.shape[1])] if q is not None else []
    unit = tr[pos_col].attrs.get("units", "m")
    for name in "xyz":
        getattr(ax, f"set_{name}label")(f"{name} [{unit}]")
    ax.set_xlim(centre[0] - r, centre[0] + r)
    ax.set_ylim(centre[1] - r, centre[1] + r)
    ax.set_zlim(centre[2] - r, centre[2] + r)
    title = ax.set_title("")

    def draw(k):
        for e in range(x.shape[1]):
            trails[e].set_data_3d(x[: k + 1, e, 0], x[: k + 1, e, 1], x[: k + 1, e, 2])
            dots[e].set_data_3d(x[k:k + 1, e, 0], x[k:k + 1, e, 1], x[k:k + 1, e, 2])
            if q is not None:
                R = quat_to_dcm(q[k, e])
                for j in range(3):
                    tip = x[k, e] + axis_len * R[:, j]
                    triads[e][j].set_data_3d([x[k, e, 0], tip[0]], [x[k, e, 1], tip[1]], [x[k, e, 2], tip[2]])
        title.set_text(f"sample {sample}, t = {t[k]:.1f} s ({tr[pos_col].attrs.get('frame', '')} frame)")
        return [*trails, *dots, *(l for tri in triads for l in tri), title]

    anim = FuncAnimation(fig, draw, frames=frames, blit=False)
    out = pathlib.Path(out) if out else v.path.with_name(f"{v.path.name.removesuffix('.zarr')}-sample{sample}.gif")
    writer = FFMpegWriter(fps=fps) if out.suffix == ".mp4" else PillowWriter(fps=fps)
    anim.save(os.fspath(out), writer=writer, dpi=80)
    plt.close(fig)
    return out
