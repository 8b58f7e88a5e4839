"""Contact geometry of point and line facets (JEOD Contact Model, seed 000 §3.2.2, §3.4.3, §4.3.3).

JEOD needs three ContactPair classes for its two facet kinds (point–point, line–line,
line–point). All three are one computation here: a point facet is a capsule whose segment has
zero length, so every pair reduces to the **closest points of two segments** followed by a
sphere test on their distance:

* segments ``S1(s) = P1 + s·D1`` and ``S2(t) = P2 + t·D2``, ``s, t ∈ [0, 1]``; the closest pair is
  found as in Ericson, *Real-Time Collision Detection* (2005) §5.1.9: the unconstrained minimiser
  of ``|S1(s) − S2(t)|²`` is clamped to ``[0, 1]`` for ``s``, then ``t`` is recomputed for that
  ``s`` and, if it leaves ``[0, 1]``, clamped and ``s`` recomputed once more. Clamping ``s`` and
  ``t`` independently (a common mistake) returns points that are not the closest pair when both
  clamp; degenerate segments (points) and parallel segments take the closed-form branches.
* penetration ``x = r1 + r2 − d`` with ``d`` the distance between the closest points; the unit
  normal ``n`` points from facet 1's core to facet 2's.
* the contact point is the midpoint of the two facets' surface points along ``n``
  (``C1 + r1·n`` and ``C2 − r2·n``). JEOD applies each body's force at its own facet's surface
  point; with a tangential (friction) force the two points differ by ``x·n`` and angular momentum
  would drift by ``x·n × F_t``. One common point makes the pair exchange a pure force at one point,
  so linear and angular momentum are both conserved exactly (the default ``momentum`` law; the
  JEOD-compatible ``jeod`` law recovers the two surface points as ``p ± (x/2)·n``, see
  :mod:`systems.facets.contact`).

Ground contact (JEOD ``SIM_ground_contact``, §4.3.3) is taken at the facet's lowest point toward
the ground: the point of the facet's segment with the smallest signed distance ``g`` to the ground
(exact for a plane — an end point, or the midpoint when the segment lies parallel — and for a
sphere — the segment point closest to the centre; a golden-section search for an ellipsoid or a
terrain SDF, whose distance is convex along a segment for convex ground), pushed out to the facet
surface: ``p = S* − r·n``, penetration ``x = r − g(S*)``, ``n`` the ground's outward normal.

Every function here is a scalar kernel written once and compiled for the CPU and GPU by
:func:`ecs.kernels.dual`. The heavy ones use ``inline=False``: numba-level inlining copies a
callee's IR into every call site, and the contact pipeline calls the capsule test from three sites
and the ground distance from seven, which took the first (uncached) compile from ~13 s to minutes.
"""

from __future__ import annotations

import math

from ecs.kernels import dual
from ecs.attitude import quat_rotate, quat_rotate_inverse

_rot = quat_rotate.cpu
_rot_inv = quat_rotate_inverse.cpu

#: Golden-section iterations along a segment (0.618^60 ≈ 3e-13 of the segment length).
GOLDEN_ITERATIONS = 60
_INVPHI = 0.6180339887498949


def _clamp01(v):
    if v < 0.0:
        return 0.0
    if v > 1.0:
        return 1.0
    return v


clamp01 = dual(_clamp01)
_c01 = clamp01.cpu


def _closest_segment_params(p1x, p1y, p1z, d1x, d1y, d1z, p2x, p2y, p2z, d2x, d2y, d2z):
    """Parameters ``(s, t)`` in [0, 1] of the closest points of ``P1 + s D1`` and ``P2 + t D2``."""
    rx, ry, rz = p1x - p2x, p1y - p2y, p1z - p2z
    a = d1x * d1x + d1y * d1y + d1z * d1z
    e = d2x * d2x + d2y * d2y + d2z * d2z
    f = d2x * rx + d2y * ry + d2z * rz
    if a <= 1e-300 and e <= 1e-300:
        return 0.0, 0.0
    if a <= 1e-300:
        return 0.0, _c01(f / e)
    c = d1x * rx + d1y * ry + d1z * rz
    if e <= 1e-300:
        return _c01(-c / a), 0.0
    b = d1x * d2x + d1y * d2y + d1z * d2z
    denom = a * e - b * b
    s = 0.0
    if denom > 1e-14 * a * e:  # not parallel: unconstrained minimiser, clamped
        s = _c01((b * f - c * e) / denom)
    t = (b * s + f) / e
    if t < 0.0:
        t = 0.0
        s = _c01(-c / a)
    elif t > 1.0:
        t = 1.0
        s = _c01((b - c) / a)
    return s, t


closest_segment_params = dual(_closest_segment_params, inline=False)
_csp = closest_segment_params.cpu


def _capsule_contact(c1x, c1y, c1z, h1x, h1y, h1z, r1, c2x, c2y, c2z, h2x, h2y, h2z, r2):
    """Contact of two capsules (segment ``C ± H``, radius ``r``; a point facet has ``H = 0``).

    Returns:
        ``(x, nx, ny, nz, px, py, pz)``: penetration [m] (``x <= 0``: no contact), unit normal from
        capsule 1 to capsule 2, contact point (midpoint of the two surface points) [m].
    """
    p1x, p1y, p1z = c1x - h1x, c1y - h1y, c1z - h1z
    p2x, p2y, p2z = c2x - h2x, c2y - h2y, c2z - h2z
    s, t = _csp(p1x, p1y, p1z, 2.0 * h1x, 2.0 * h1y, 2.0 * h1z, p2x, p2y, p2z, 2.0 * h2x, 2.0 * h2y, 2.0 * h2z)
    q1x, q1y, q1z = p1x + 2.0 * s * h1x, p1y + 2.0 * s * h1y, p1z + 2.0 * s * h1z
    q2x, q2y, q2z = p2x + 2.0 * t * h2x, p2y + 2.0 * t * h2y, p2z + 2.0 * t * h2z
    dx, dy, dz = q2x - q1x, q2y - q1y, q2z - q1z
    d = math.sqrt(dx * dx + dy * dy + dz * dz)
    x = r1 + r2 - d
    if x <= 0.0:
        return x, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    if d > 1e-12 * (r1 + r2):
        nx, ny, nz = dx / d, dy / d, dz / d
    else:
        # cores touch: centre to centre, else the common perpendicular, else any axis normal to a segment
        nx, ny, nz = c2x - c1x, c2y - c1y, c2z - c1z
        m = math.sqrt(nx * nx + ny * ny + nz * nz)
        if m <= 1e-12 * (r1 + r2):
            nx, ny, nz = h1y * h2z - h1z * h2y, h1z * h2x - h1x * h2z, h1x * h2y - h1y * h2x
            m = math.sqrt(nx * nx + ny * ny + nz * nz)
        if m <= 1e-300:
            hx, hy, hz = h1x + h2x, h1y + h2y, h1z + h2z
            if abs(hx) <= abs(hy) and abs(hx) <= abs(hz):
                nx, ny, nz = 0.0, hz, -hy
            elif abs(hy) <= abs(hz):
                nx, ny, nz = -hz, 0.0, hx
            else:
                nx, ny, nz = hy, -hx, 0.0
            m = math.sqrt(nx * nx + ny * ny + nz * nz)
        if m <= 1e-300:
            nx, ny, nz, m = 1.0, 0.0, 0.0, 1.0
        nx, ny, nz = nx / m, ny / m, nz / m
    # midpoint of the surface points q1 + r1 n and q2 - r2 n
    w = 0.5 * (r1 - r2)
    px = 0.5 * (q1x + q2x) + w * nx
    py = 0.5 * (q1y + q2y) + w * ny
    pz = 0.5 * (q1z + q2z) + w * nz
    return x, nx, ny, nz, px, py, pz


capsule_contact = dual(_capsule_contact, inline=False)


# --------------------------------------------------------------------------- grounds
def _ellipsoid_distance_local(x, y, z, a, b, c):
    """Signed distance of (x, y, z) (ellipsoid frame) to the ellipsoid of semi-axes (a, b, c).

    The closest surface point is ``e_i² y_i / (t + e_i²)`` with ``t`` the root of
    ``F(t) = Σ (e_i y_i / (t + e_i²))² − 1``, decreasing on ``(−min e_i², ∞)``; ``F`` is solved by
    bisection to round-off (Eberly, *Distance from a Point to an Ellipse, an Ellipsoid, or a
    Hyperellipsoid*, 2013, §3). Returns ``(d, nx, ny, nz)`` with ``n`` the outward unit normal at
    the closest surface point (ellipsoid frame).
    """
    a2, b2, c2 = a * a, b * b, c * c
    k = (x / a) * (x / a) + (y / b) * (y / b) + (z / c) * (z / c)
    r = math.sqrt(x * x + y * y + z * z)
    e2min = min(a2, min(b2, c2))
    emax = max(a, max(b, c))
    if r == 0.0:  # centre: nearest surface point on the shortest axis
        if e2min == a2:
            return -a, 1.0, 0.0, 0.0
        if e2min == b2:
            return -b, 0.0, 1.0, 0.0
        return -c, 0.0, 0.0, 1.0
    lo = -e2min
    hi = emax * r
    for _ in range(300):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        ux = a * x / (mid + a2)
        uy = b * y / (mid + b2)
        uz = c * z / (mid + c2)
        if ux * ux + uy * uy + uz * uz - 1.0 > 0.0:
            lo = mid
        else:
            hi = mid
    t = hi
    sx = a2 * x / max(t + a2, 1e-300)
    sy = b2 * y / max(t + b2, 1e-300)
    sz = c2 * z / max(t + c2, 1e-300)
    dx, dy, dz = x - sx, y - sy, z - sz
    d = math.sqrt(dx * dx + dy * dy + dz * dz)
    gx, gy, gz = sx / a2, sy / b2, sz / c2
    g = math.sqrt(gx * gx + gy * gy + gz * gz)
    if g > 0.0:
        gx, gy, gz = gx / g, gy / g, gz / g
    if k < 1.0:
        d = -d
    return d, gx, gy, gz


ellipsoid_distance_local = dual(_ellipsoid_distance_local, inline=False)
_ell = ellipsoid_distance_local.cpu


def _ground_distance(kind, gp, g, x, y, z):
    """Signed distance [m] and outward unit normal of a built-in ground at the inertial point (x, y, z).

    ``kind`` 0 plane (point gp[0:3], normal gp[3:6]), 1 sphere (centre gp[0:3], radius gp[3]),
    2 ellipsoid (centre gp[0:3], semi-axes gp[3:6], attitude quaternion gp[6:10]).
    """
    if kind == 0:
        nx, ny, nz = gp[g, 3], gp[g, 4], gp[g, 5]
        d = (x - gp[g, 0]) * nx + (y - gp[g, 1]) * ny + (z - gp[g, 2]) * nz
        return d, nx, ny, nz
    if kind == 1:
        dx, dy, dz = x - gp[g, 0], y - gp[g, 1], z - gp[g, 2]
        m = math.sqrt(dx * dx + dy * dy + dz * dz)
        if m <= 0.0:
            return -gp[g, 3], 0.0, 0.0, 1.0
        return m - gp[g, 3], dx / m, dy / m, dz / m
    q0, q1, q2, q3 = gp[g, 6], gp[g, 7], gp[g, 8], gp[g, 9]
    lx, ly, lz = _rot_inv(q0, q1, q2, q3, x - gp[g, 0], y - gp[g, 1], z - gp[g, 2])
    d, nx, ny, nz = _ell(lx, ly, lz, gp[g, 3], gp[g, 4], gp[g, 5])
    nx, ny, nz = _rot(q0, q1, q2, q3, nx, ny, nz)
    return d, nx, ny, nz


ground_distance = dual(_ground_distance, inline=False)
_gdist = ground_distance.cpu


def _ground_lowest_param(kind, gp, g, p0x, p0y, p0z, dx, dy, dz):
    """Parameter ``t`` in [0, 1] of the point of segment ``P0 + t D`` closest to (deepest in) a built-in ground."""
    dd = dx * dx + dy * dy + dz * dz
    if dd <= 1e-300:
        return 0.0
    if kind == 0:
        s0 = dx * gp[g, 3] + dy * gp[g, 4] + dz * gp[g, 5]  # g(1) - g(0)
        if abs(s0) <= 1e-12 * math.sqrt(dd):
            return 0.5
        return 1.0 if s0 < 0.0 else 0.0
    if kind == 1:
        return _c01(((gp[g, 0] - p0x) * dx + (gp[g, 1] - p0y) * dy + (gp[g, 2] - p0z) * dz) / dd)
    # ellipsoid: golden-section search of the convex distance along the segment, then the end points
    lo, hi = 0.0, 1.0
    t1 = hi - _INVPHI * (hi - lo)
    t2 = lo + _INVPHI * (hi - lo)
    f1 = _gdist(kind, gp, g, p0x + t1 * dx, p0y + t1 * dy, p0z + t1 * dz)[0]
    f2 = _gdist(kind, gp, g, p0x + t2 * dx, p0y + t2 * dy, p0z + t2 * dz)[0]
    for _ in range(GOLDEN_ITERATIONS):
        if f1 <= f2:
            hi = t2
            t2 = t1
            f2 = f1
            t1 = hi - _INVPHI * (hi - lo)
            f1 = _gdist(kind, gp, g, p0x + t1 * dx, p0y + t1 * dy, p0z + t1 * dz)[0]
        else:
            lo = t1
            t1 = t2
            f1 = f2
            t2 = lo + _INVPHI * (hi - lo)
            f2 = _gdist(kind, gp, g, p0x + t2 * dx, p0y + t2 * dy, p0z + t2 * dz)[0]
    t = 0.5 * (lo + hi)
    ft = _gdist(kind, gp, g, p0x + t * dx, p0y + t * dy, p0z + t * dz)[0]
    fa = _gdist(kind, gp, g, p0x, p0y, p0z)[0]
    fb = _gdist(kind, gp, g, p0x + dx, p0y + dy, p0z + dz)[0]
    if fa < ft and fa <= fb:
        return 0.0
    if fb < ft:
        return 1.0
    return t


ground_lowest_param = dual(_ground_lowest_param, inline=False)
