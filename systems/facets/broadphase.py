"""Broadphase for facet contact: bounding spheres per facet and per body, sort-and-sweep per sample.

JEOD's Contact (seed 000 §3.4.2) builds every matched facet pair at initialisation and checks each
one at every derivative evaluation ("optionally that the facets are in range"). For two vehicles
with 10³ facets each that is 10⁶ pair checks per evaluation. Here:

1. **Bounding volumes.** A facet's sphere is centred on its segment midpoint with radius
   ``r + L/2``; a body's sphere (computed once at bind, in body axes, by
   :func:`body_bounding_spheres`) encloses all its facets' spheres. Bodies whose sphere overlaps
   no other running, non-excluded body's sphere leave the sweep with all their facets (O(B²) per
   sample). Of the remaining bodies, the axis-aligned box of each one's facet spheres is taken
   every evaluation, and a facet stays in the sweep only if its sphere overlaps the box of
   another eligible body (O(F·B)): for two docking vehicles only the facets near the interface
   remain.
2. **Sort and sweep** (Baraff 1992; Cohen et al., I-COLLIDE 1995) on one axis per sample: the
   facets' sphere intervals ``[c − R, c + R]`` are kept sorted by their lower end with an
   insertion sort that starts from the previous evaluation's order (temporal coherence: O(F)
   when little moved). The axis is the one of largest spread of the facet centres, switched only
   when another axis spreads more than twice as much (hysteresis, so the order is not thrown
   away back and forth). The sweep then visits only pairs whose intervals overlap on that axis;
   :mod:`systems.facets.contact` tests their spheres and runs the exact capsule test.

Every pair whose facet spheres overlap is found (a facet sphere lies inside its body's sphere and\nbox), so
the broadphase finds exactly the contacts of the all-pairs loop; only the order in which they are
summed differs. All state is per sample (``order[s]``, ``axis[s]``), one thread per sample: the
result does not depend on the thread count. The kernels are dual (CPU ``prange`` over samples, or
one GPU thread per sample) and allocate nothing.
"""

from __future__ import annotations

import math

import numpy as np

from ecs.kernels import dual
from ecs.attitude import quat_rotate

_rot = quat_rotate.cpu

#: An axis change needs the new axis's spread to exceed the current one's by this factor.
AXIS_HYSTERESIS = 2.0


def body_bounding_spheres(facet_body: np.ndarray, facet_point: np.ndarray, facet_radius: np.ndarray,
                          facet_length: np.ndarray, body_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Body-frame bounding spheres enclosing every facet sphere of each body row.

    Args:
        facet_body: body row of each facet row, shape [facet_rows] (-1: none).
        facet_point, facet_radius, facet_length: facet columns (body axes) [m].
        body_rows: number of body rows.

    Returns:
        ``(centre [body_rows, 3] body axes [m], radius [body_rows] [m])``; radius -1 for bodies
        without facets. The centre is the mean of the facet centres.
    """
    fb = np.asarray(facet_body)
    centre = np.zeros((body_rows, 3))
    radius = np.full(body_rows, -1.0)
    ok = fb >= 0
    if not ok.any():
        return centre, radius
    counts = np.bincount(fb[ok], minlength=body_rows).astype(float)
    for k in range(3):
        centre[:, k] = np.bincount(fb[ok], weights=facet_point[ok, k], minlength=body_rows)
    has = counts > 0
    centre[has] /= counts[has, None]
    reach = np.linalg.norm(facet_point[ok] - centre[fb[ok]], axis=1) + facet_radius[ok] + 0.5 * facet_length[ok]
    np.maximum.at(radius, fb[ok], reach)
    return centre, radius


def _cull_facets(s, F, B, bod, f_body, scr):
    """act[row] = 1 for the live facets of sample s that may touch a facet of another body (``bod``,
    ``scr``: the body and scratch groups of :func:`systems.facets.find._find_contacts`).

    Body level: ``near[b]`` when b's bounding sphere overlaps another running, non-excluded body's.
    Facet level: a facet of a near body stays when its sphere overlaps the axis-aligned box
    (``box[b] = (min xyz, max xyz)`` of all its facet spheres, inertial) of such another body;
    a near body whose box overlaps none of theirs is no longer near.
    """
    status, pos, vel, att, omega, tree, sph_c, sph_r = bod
    wc, wh, wbr, live, act, near, wbc, box, order, axis, lo, hi = scr
    base = s * B
    for i in range(B):
        r = base + i
        near[r] = 0
        if status[r] == 0 and sph_r[r] >= 0.0:
            cx, cy, cz = _rot(att[r, 0], att[r, 1], att[r, 2], att[r, 3], sph_c[r, 0], sph_c[r, 1], sph_c[r, 2])
            wbc[r, 0] = pos[r, 0] + cx
            wbc[r, 1] = pos[r, 1] + cy
            wbc[r, 2] = pos[r, 2] + cz
    for i in range(B):
        ri = base + i
        if status[ri] != 0 or sph_r[ri] < 0.0:
            continue
        for j in range(i + 1, B):
            rj = base + j
            if status[rj] != 0 or sph_r[rj] < 0.0:
                continue
            if tree[ri] >= 0 and tree[ri] == tree[rj]:
                continue
            dx = wbc[rj, 0] - wbc[ri, 0]
            dy = wbc[rj, 1] - wbc[ri, 1]
            dz = wbc[rj, 2] - wbc[ri, 2]
            rr = sph_r[ri] + sph_r[rj]
            if dx * dx + dy * dy + dz * dz <= rr * rr:
                near[ri] = 1
                near[rj] = 1
    for i in range(B):
        r = base + i
        for k in range(3):
            box[r, k] = math.inf
            box[r, 3 + k] = -math.inf
    fbase = s * F
    for f in range(F):
        r = fbase + f
        b = f_body[r]
        if live[r] and near[b]:
            for k in range(3):
                box[b, k] = min(box[b, k], wc[r, k] - wbr[r])
                box[b, 3 + k] = max(box[b, 3 + k], wc[r, k] + wbr[r])
    # A near body whose box overlaps no other near body's box leaves too: every facet sphere lies in
    # its body's box, so none of its facets can reach such a box, nor another body's facet it.
    any_near = False
    for i in range(B):
        ri = base + i
        if near[ri] == 0:
            continue
        for j in range(i + 1, B):
            rj = base + j
            if near[rj] == 0 or (tree[ri] >= 0 and tree[ri] == tree[rj]):
                continue
            if (box[ri, 0] <= box[rj, 3] and box[rj, 0] <= box[ri, 3] and box[ri, 1] <= box[rj, 4]
                    and box[rj, 1] <= box[ri, 4] and box[ri, 2] <= box[rj, 5] and box[rj, 2] <= box[ri, 5]):
                near[ri] = 2
                near[rj] = 2
    for i in range(B):
        ri = base + i
        near[ri] = 1 if near[ri] == 2 else 0
        if near[ri]:
            any_near = True
    for f in range(F):
        r = fbase + f
        act[r] = 0
        b = f_body[r]
        if not any_near or live[r] == 0 or near[b] == 0:
            continue
        for j in range(B):
            rj = base + j
            if rj == b or near[rj] == 0 or (tree[b] >= 0 and tree[b] == tree[rj]):
                continue
            if (wc[r, 0] + wbr[r] >= box[rj, 0] and wc[r, 0] - wbr[r] <= box[rj, 3]
                    and wc[r, 1] + wbr[r] >= box[rj, 1] and wc[r, 1] - wbr[r] <= box[rj, 4]
                    and wc[r, 2] + wbr[r] >= box[rj, 2] and wc[r, 2] - wbr[r] <= box[rj, 5]):
                act[r] = 1
                break


cull_facets = dual(_cull_facets, inline=False)


def _sort_sweep_axis(s, F, act, wc, wbr, order, axis, lo, hi):
    """Choose the sweep axis of sample s, set the intervals and insertion-sort ``order[s]`` by lower end.

    Facets with ``act[row] == 0`` leave the sweep (lower end +inf, sorted to the end). Returns the
    number of facets in the sweep; with none, the intervals and the order are left as they are (an
    insertion sort of equal keys would keep the order) and the caller sweeps nothing.
    """
    base = s * F
    n = 0
    m0 = 0.0
    m1 = 0.0
    m2 = 0.0
    for f in range(F):
        r = base + f
        if act[r]:
            n += 1
            m0 += wc[r, 0]
            m1 += wc[r, 1]
            m2 += wc[r, 2]
    if n > 0:
        m0 /= n
        m1 /= n
        m2 /= n
    v0 = 0.0
    v1 = 0.0
    v2 = 0.0
    for f in range(F):
        r = base + f
        if act[r]:
            v0 += (wc[r, 0] - m0) * (wc[r, 0] - m0)
            v1 += (wc[r, 1] - m1) * (wc[r, 1] - m1)
            v2 += (wc[r, 2] - m2) * (wc[r, 2] - m2)
    best = 0
    vb = v0
    if v1 > vb:
        best = 1
        vb = v1
    if v2 > vb:
        best = 2
        vb = v2
    ax = axis[s]
    if ax < 0:
        ax = best
    else:
        vc = v0 if ax == 0 else (v1 if ax == 1 else v2)
        if vb > AXIS_HYSTERESIS * vc:
            ax = best
    axis[s] = ax
    m = F if n > 0 else 0
    for f in range(m):
        r = base + f
        if act[r]:
            lo[r] = wc[r, ax] - wbr[r]
            hi[r] = wc[r, ax] + wbr[r]
        else:
            lo[r] = math.inf
            hi[r] = -math.inf
    # insertion sort of order[s, :] by lo, starting from the previous order (stable, deterministic)
    for k in range(1, m):
        v = order[s, k]
        key = lo[base + v]
        j = k - 1
        while j >= 0 and lo[base + order[s, j]] > key:
            order[s, j + 1] = order[s, j]
            j -= 1
        order[s, j + 1] = v
    return n


sort_sweep_axis = dual(_sort_sweep_axis, inline=False)
