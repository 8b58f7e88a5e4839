"""Analytic signed distances, each in its own frame: sphere, box, capsule, torus, ellipsoid (the
closest point on an ellipsoid by Eberly's root find), and shape trees of them (:data:`eval_shape`).
Part of the terrain kernels (:mod:`systems.terrain.sdf` composes them into a terrain)."""

from __future__ import annotations

import math

from ecs.attitude import quat_rotate, quat_rotate_inverse
from ecs.geometry import normalize3
from ecs.kernels import dual

_rot = quat_rotate.cpu
_rot_inv = quat_rotate_inverse.cpu
_norm3 = normalize3.cpu


# ==================================================================================================
# analytic primitives (each in its own frame)
# ==================================================================================================


def _round_distance(vx, vy, vz, r, fx, fy, fz):
    """Signed distance and gradient of the points within ``r`` of a core (a point, segment or circle),
    from the offset ``v`` of the query point to the core's nearest point: ``(|v| − r, v/|v|)``;
    at |v| = 0 the gradient is the fallback direction (fx, fy, fz)."""
    L = math.sqrt(vx * vx + vy * vy + vz * vz)
    if L > 0.0:
        return L - r, vx / L, vy / L, vz / L
    return -r, fx, fy, fz


round_distance = dual(_round_distance)
_round = round_distance.cpu


def _sd_sphere(r, x, y, z):
    """Sphere of radius r (eqs 2.14–2.15): ``(d, gx, gy, gz)``."""
    return _round(x, y, z, r, 0.0, 0.0, 1.0)


sd_sphere = dual(_sd_sphere)
_c_sd_sphere = sd_sphere.cpu


def _sd_box(ax, ay, az, x, y, z):
    """Box of half extents (ax, ay, az): exact signed distance and gradient."""
    qx = abs(x) - ax
    qy = abs(y) - ay
    qz = abs(z) - az
    sx = 1.0 if x >= 0.0 else -1.0
    sy = 1.0 if y >= 0.0 else -1.0
    sz = 1.0 if z >= 0.0 else -1.0
    mx = max(qx, 0.0)
    my = max(qy, 0.0)
    mz = max(qz, 0.0)
    lo = math.sqrt(mx * mx + my * my + mz * mz)
    if lo > 0.0:
        return lo, sx * mx / lo, sy * my / lo, sz * mz / lo
    # inside or on the surface: the nearest face is the axis of the largest q
    if qx >= qy and qx >= qz:
        return qx, sx, 0.0, 0.0
    if qy >= qz:
        return qy, 0.0, sy, 0.0
    return qz, 0.0, 0.0, sz


sd_box = dual(_sd_box)
_c_sd_box = sd_box.cpu


def _sd_capsule(hl, r, x, y, z):
    """Capsule around the segment z in [-hl, hl], radius r."""
    zc = min(max(z, -hl), hl)
    return _round(x, y, z - zc, r, 1.0, 0.0, 0.0)


sd_capsule = dual(_sd_capsule)
_c_sd_capsule = sd_capsule.cpu


def _sd_torus(R, r, x, y, z):
    """Torus about the z axis: tube radius r around the circle of radius R in z = 0."""
    q = math.sqrt(x * x + y * y)
    if q > 0.0:
        cx = R * x / q
        cy = R * y / q
    else:  # on the axis every circle point is equally near: pick (R, 0, 0)
        cx = R
        cy = 0.0
    return _round(x - cx, y - cy, z, r, 1.0, 0.0, 0.0)


sd_torus = dual(_sd_torus)
_c_sd_torus = sd_torus.cpu


def _ellipsoid_root(n0, r0, n1, r1, z2, g):
    """Largest root u > 0 of ``(n0/(u+r0-1))² + (n1/(u+r1-1))² + (z2/u)² = 1`` (r0 >= r1 >= 1, z2 > 0).

    Eberly's root ``s`` shifted by one (``u = s + 1``), so that a tiny z2 (a point a rounding error off
    a symmetry plane) never cancels to ``s + 1 = 0``. F is convex and decreasing on (0, ∞); the root is
    bracketed by u0 = z2 (F >= 0: the last term alone is 1) and u1 = |(n0, n1, z2)| (F <= 0) when the
    point is outside, 1 when inside (F(1) = g < 0). Newton from the left end of a convex decreasing
    function never overshoots; rounding is guarded by keeping the bracket and bisecting whenever a
    step leaves it.
    """
    u0 = z2
    if g < 0.0:
        u1 = 1.0
    else:
        u1 = math.sqrt(n0 * n0 + n1 * n1 + z2 * z2)
    q0 = r0 - 1.0
    q1 = r1 - 1.0
    u = u0
    for _ in range(200):
        a0 = n0 / (u + q0)
        a1 = n1 / (u + q1)
        a2 = z2 / u
        f = a0 * a0 + a1 * a1 + a2 * a2 - 1.0
        if f > 0.0:
            u0 = u
        elif f < 0.0:
            u1 = u
        else:
            return u
        df = -2.0 * (a0 * a0 / (u + q0) + a1 * a1 / (u + q1) + a2 * a2 / u)
        un = u - f / df if df < 0.0 else 0.5 * (u0 + u1)
        if not (un > u0 and un < u1):
            un = 0.5 * (u0 + u1)
        if un == u or un == u0 or un == u1:
            return un
        u = un
    return u


ellipsoid_root = dual(_ellipsoid_root, inline=False)
_c_ellipsoid_root = ellipsoid_root.cpu


def _ellipse_closest(e0, e1, y0, y1):
    """Closest point of the ellipse (x0/e0)² + (x1/e1)² = 1 to (y0, y1), e0 >= e1 > 0, y >= 0."""
    if y1 > 0.0:
        if y0 > 0.0:
            z0 = y0 / e0
            z1 = y1 / e1
            g = z0 * z0 + z1 * z1 - 1.0
            if g != 0.0:
                r0 = (e0 / e1) * (e0 / e1)
                u = _c_ellipsoid_root(r0 * z0, r0, 0.0, 1.0, z1, g)
                return r0 * y0 / (u + (r0 - 1.0)), y1 / u
            return y0, y1
        return 0.0, e1
    numer0 = e0 * y0
    denom0 = e0 * e0 - e1 * e1
    if numer0 < denom0:
        xde0 = numer0 / denom0
        return e0 * xde0, e1 * math.sqrt(max(1.0 - xde0 * xde0, 0.0))
    return e0, 0.0


ellipse_closest = dual(_ellipse_closest)
_c_ellipse_closest = ellipse_closest.cpu


def _ellipsoid_closest_sorted(e0, e1, e2, y0, y1, y2):
    """Closest ellipsoid point for e0 >= e1 >= e2 > 0 and y >= 0 (Eberly 2013, robust cases)."""
    if y2 > 0.0:
        if y1 > 0.0:
            if y0 > 0.0:
                z0 = y0 / e0
                z1 = y1 / e1
                z2 = y2 / e2
                g = z0 * z0 + z1 * z1 + z2 * z2 - 1.0
                if g != 0.0:
                    r0 = (e0 / e2) * (e0 / e2)
                    r1 = (e1 / e2) * (e1 / e2)
                    u = _c_ellipsoid_root(r0 * z0, r0, r1 * z1, r1, z2, g)
                    return r0 * y0 / (u + (r0 - 1.0)), r1 * y1 / (u + (r1 - 1.0)), y2 / u
                return y0, y1, y2
            x1, x2 = _c_ellipse_closest(e1, e2, y1, y2)
            return 0.0, x1, x2
        if y0 > 0.0:
            x0, x2 = _c_ellipse_closest(e0, e2, y0, y2)
            return x0, 0.0, x2
        return 0.0, 0.0, e2
    denom0 = e0 * e0 - e2 * e2
    denom1 = e1 * e1 - e2 * e2
    numer0 = e0 * y0
    numer1 = e1 * y1
    if numer0 < denom0 and numer1 < denom1:
        xde0 = numer0 / denom0
        xde1 = numer1 / denom1
        discr = 1.0 - xde0 * xde0 - xde1 * xde1
        if discr > 0.0:
            return e0 * xde0, e1 * xde1, e2 * math.sqrt(discr)
    x0, x1 = _c_ellipse_closest(e0, e1, y0, y1)
    return x0, x1, 0.0


ellipsoid_closest_sorted = dual(_ellipsoid_closest_sorted)
_c_ellipsoid_closest_sorted = ellipsoid_closest_sorted.cpu


def _pick3(i, a, b, c):
    if i == 0:
        return a
    if i == 1:
        return b
    return c


pick3 = dual(_pick3)
_c_pick3 = pick3.cpu


def _ellipsoid_closest(a, b, c, x, y, z):
    """Closest point of the ellipsoid (x/a)² + (y/b)² + (z/c)² = 1 to (x, y, z), and the sign.

    Returns ``(cx, cy, cz, inside)`` with ``inside`` = 1.0 inside, 0.0 on/outside.
    """
    # sort the semi-axes descending, remembering where each went
    i0 = 0
    i1 = 1
    i2 = 2
    e0 = a
    e1 = b
    e2 = c
    if e0 < e1:
        e0, e1 = e1, e0
        i0, i1 = i1, i0
    if e1 < e2:
        e1, e2 = e2, e1
        i1, i2 = i2, i1
    if e0 < e1:
        e0, e1 = e1, e0
        i0, i1 = i1, i0
    y0 = abs(_c_pick3(i0, x, y, z))
    y1 = abs(_c_pick3(i1, x, y, z))
    y2 = abs(_c_pick3(i2, x, y, z))
    x0, x1, x2 = _c_ellipsoid_closest_sorted(e0, e1, e2, y0, y1, y2)
    # back to the original axes and octant
    ax = x0 if i0 == 0 else (x1 if i1 == 0 else x2)
    ay = x0 if i0 == 1 else (x1 if i1 == 1 else x2)
    az = x0 if i0 == 2 else (x1 if i1 == 2 else x2)
    cx = ax if x >= 0.0 else -ax
    cy = ay if y >= 0.0 else -ay
    cz = az if z >= 0.0 else -az
    g = (x / a) * (x / a) + (y / b) * (y / b) + (z / c) * (z / c) - 1.0
    return cx, cy, cz, 1.0 if g < 0.0 else 0.0


ellipsoid_closest = dual(_ellipsoid_closest, inline=False)
_c_ellipsoid_closest = ellipsoid_closest.cpu


def _sd_ellipsoid(a, b, c, x, y, z):
    """Exact signed distance to the ellipsoid; the gradient is the outward normal at the closest point."""
    cx, cy, cz, inside = _c_ellipsoid_closest(a, b, c, x, y, z)
    dx = x - cx
    dy = y - cy
    dz = z - cz
    L = math.sqrt(dx * dx + dy * dy + dz * dz)
    nx, ny, nz = _norm3(cx / (a * a), cy / (b * b), cz / (c * c))
    if inside > 0.0:
        return -L, nx, ny, nz
    return L, nx, ny, nz


sd_ellipsoid = dual(_sd_ellipsoid)
_c_sd_ellipsoid = sd_ellipsoid.cpu


def _sd_primitive(kind, p0, p1, p2, x, y, z):
    """Dispatch on :class:`components.terrain.Primitive` (local frame)."""
    if kind == 0:
        return _c_sd_sphere(p0, x, y, z)
    if kind == 1:
        return z, 0.0, 0.0, 1.0
    if kind == 2:
        return _c_sd_box(p0, p1, p2, x, y, z)
    if kind == 3:
        return _c_sd_capsule(p0, p1, x, y, z)
    if kind == 4:
        return _c_sd_ellipsoid(p0, p1, p2, x, y, z)
    return _c_sd_torus(p0, p1, x, y, z)


sd_primitive = dual(_sd_primitive)
_c_sd_primitive = sd_primitive.cpu


def _eval_shape(nodes, x, y, z):
    """Signed distance [m] and gradient of an :class:`components.terrain.AnalyticShape` (left fold).

    Returns ``(d, gx, gy, gz)``.
    """
    d = 0.0
    gx = 0.0
    gy = 0.0
    gz = 0.0
    for i in range(nodes.shape[0]):
        kind = int(nodes[i, 0])
        op = int(nodes[i, 1])
        k = nodes[i, 2]
        q0 = nodes[i, 6]
        q1 = nodes[i, 7]
        q2 = nodes[i, 8]
        q3 = nodes[i, 9]
        lx, ly, lz = _rot_inv(q0, q1, q2, q3, x - nodes[i, 3], y - nodes[i, 4], z - nodes[i, 5])
        di, ax, ay, az = _c_sd_primitive(kind, nodes[i, 10], nodes[i, 11], nodes[i, 12], lx, ly, lz)
        bx, by, bz = _rot(q0, q1, q2, q3, ax, ay, az)
        if op == 0:
            d = di
            gx = bx
            gy = by
            gz = bz
        elif op == 1:
            if di < d:
                d = di
                gx = bx
                gy = by
                gz = bz
        elif op == 2:
            if di > d:
                d = di
                gx = bx
                gy = by
                gz = bz
        elif op == 3:
            # polynomial smooth minimum of a = d (so far) and b = di; ∇ = mix(∇b, ∇a, h) exactly
            h = min(max(0.5 + 0.5 * (di - d) / k, 0.0), 1.0)
            d = di + h * (d - di) - k * h * (1.0 - h)
            gx = bx + h * (gx - bx)
            gy = by + h * (gy - by)
            gz = bz + h * (gz - bz)
        else:
            if -di > d:
                d = -di
                gx = -bx
                gy = -by
                gz = -bz
    return d, gx, gy, gz


eval_shape = dual(_eval_shape, inline=False)
_shape = eval_shape.cpu
