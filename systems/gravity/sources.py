"""The gravity field of each source kind at one point, as scalar device kernels (one source, CPU
and GPU): point mass, quadrupole, homogeneous ellipsoid (Carlson's elliptic integrals), polyhedron
(Werner & Scheeres), voxel grid, linearised field, spherical harmonics and their gradients.
:mod:`systems.gravity.kernels` dispatches over them by kind and evaluates them in bulk; its
docstring gives the equations and their sources."""

from __future__ import annotations

import math

from ecs.kernels import dual


# ================================================================================================
# scalar device kernels (one source, CPU and GPU)
# ================================================================================================


def _point_mass_field(x, y, z, cx, cy, cz, mu):
    """Point mass μ at c: ``(U, gx, gy, gz, Γxx, Γyy, Γzz, Γxy, Γxz, Γyz)`` at (x, y, z).

    At the centre itself (r = 0) every output is 0 (the field is singular there).
    """
    dx = x - cx
    dy = y - cy
    dz = z - cz
    r2 = dx * dx + dy * dy + dz * dz
    if r2 == 0.0:
        return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    r = math.sqrt(r2)
    u = mu / r
    k = u / r2  # μ/r³
    k5 = 3.0 * k / r2  # 3μ/r⁵
    return (u, -k * dx, -k * dy, -k * dz, k5 * dx * dx - k, k5 * dy * dy - k, k5 * dz * dz - k,
            k5 * dx * dy, k5 * dx * dz, k5 * dy * dz)


point_mass_field = dual(_point_mass_field)


def _carlson_rf(x, y, z):
    """Carlson's R_F(x, y, z) = ½∫₀^∞ dt / √((t+x)(t+y)(t+z)), x, y, z ≥ 0, at most one zero.

    Duplication algorithm (Carlson 1995, Algorithm 1); stops when the relative spread of the
    arguments is below 0.0025, where the 5th-order series is accurate to ~1e-16. (Loops here are
    ``while`` loops on purpose: numba 0.68 miscompiles a ``for … break`` loop of a kernel inlined
    into a ``prange`` body — results off by ~1e-10, found by the Poisson test.)
    """
    ave = (x + y + z) / 3.0
    dx = (ave - x) / ave
    dy = (ave - y) / ave
    dz = (ave - z) / ave
    it = 0
    while max(abs(dx), max(abs(dy), abs(dz))) >= 0.0025 and it < 100:
        sx = math.sqrt(x)
        sy = math.sqrt(y)
        sz = math.sqrt(z)
        lam = sx * (sy + sz) + sy * sz
        x = 0.25 * (x + lam)
        y = 0.25 * (y + lam)
        z = 0.25 * (z + lam)
        ave = (x + y + z) / 3.0
        dx = (ave - x) / ave
        dy = (ave - y) / ave
        dz = (ave - z) / ave
        it += 1
    e2 = dx * dy - dz * dz
    e3 = dx * dy * dz
    return (1.0 + (e2 / 24.0 - 0.1 - 3.0 * e3 / 44.0) * e2 + e3 / 14.0) / math.sqrt(ave)


def _carlson_rd(x, y, z):
    """Carlson's R_D(x, y, z) = (3/2)∫₀^∞ dt / ((t+z)^{3/2} √((t+x)(t+y))), z > 0.

    Duplication algorithm (Carlson 1995, Algorithm 4); stops when the relative spread of the
    arguments is below 0.0015 (series error ~1e-17).
    """
    s = 0.0
    fac = 1.0
    ave = 0.2 * (x + y + 3.0 * z)
    dx = (ave - x) / ave
    dy = (ave - y) / ave
    dz = (ave - z) / ave
    it = 0
    while max(abs(dx), max(abs(dy), abs(dz))) >= 0.0015 and it < 100:
        sx = math.sqrt(x)
        sy = math.sqrt(y)
        sz = math.sqrt(z)
        lam = sx * (sy + sz) + sy * sz
        s += fac / (sz * (z + lam))
        fac *= 0.25
        x = 0.25 * (x + lam)
        y = 0.25 * (y + lam)
        z = 0.25 * (z + lam)
        ave = 0.2 * (x + y + 3.0 * z)
        dx = (ave - x) / ave
        dy = (ave - y) / ave
        dz = (ave - z) / ave
        it += 1
    ea = dx * dy
    eb = dz * dz
    ec = ea - eb
    ed = ea - 6.0 * eb
    ee = ed + ec + ec
    c1 = 3.0 / 14.0
    c2 = 1.0 / 6.0
    c3 = 9.0 / 22.0
    c4 = 3.0 / 26.0
    c5 = 0.25 * c3
    c6 = 1.5 * c4
    series = 1.0 + ed * (-c1 + c5 * ed - c6 * dz * ee) + dz * (c2 * ee + dz * (-c3 * ec + dz * c4 * ea))
    return 3.0 * s + fac * series / (ave * math.sqrt(ave))


carlson_rf = dual(_carlson_rf)
carlson_rd = dual(_carlson_rd)
_rf = carlson_rf.cpu
_rd = carlson_rd.cpu


def _ellipsoid_field(x, y, z, a2, b2, c2, gm):
    """Homogeneous ellipsoid x²/a² + y²/b² + z²/c² ≤ 1 of GM = ``gm`` [m³/s²], centred, axis-aligned.

    Args:
        a2, b2, c2: squared semi-axes [m²].

    Returns:
        ``(U, gx, gy, gz, Γxx, Γyy, Γzz, Γxy, Γxz, Γyz)`` (module docstring formulas).
    """
    q = x * x / a2 + y * y / b2 + z * z / c2
    lam = 0.0
    outside = q > 1.0
    if outside:
        # largest root of F(λ) = Σ x_i²/(a_i²+λ) − 1: F is convex and decreasing, F ≥ 0 at the start
        # point max(0, r² − max a_i²), so Newton's iterates rise monotonically to the root.
        lam = max(0.0, x * x + y * y + z * z - max(a2, max(b2, c2)))
        step = 1.0
        it = 0
        while step > 1e-16 * (lam + min(a2, min(b2, c2))) and it < 200:
            pa = x * x / (a2 + lam)
            pb = y * y / (b2 + lam)
            pc = z * z / (c2 + lam)
            step = (pa + pb + pc - 1.0) / (pa / (a2 + lam) + pb / (b2 + lam) + pc / (c2 + lam))
            lam += step
            it += 1
    aa = a2 + lam
    bb = b2 + lam
    cc = c2 + lam
    rf = _rf(aa, bb, cc)
    da = _rd(bb, cc, aa)
    db = _rd(aa, cc, bb)
    dc = _rd(aa, bb, cc)
    u = 1.5 * gm * (rf - (x * x * da + y * y * db + z * z * dc) / 3.0)
    txx = -gm * da
    tyy = -gm * db
    tzz = -gm * dc
    txy = 0.0
    txz = 0.0
    tyz = 0.0
    if outside:
        s = x * x / (aa * aa) + y * y / (bb * bb) + z * z / (cc * cc)
        k = 3.0 * gm / (math.sqrt(aa * bb * cc) * s)
        px = x / aa
        py = y / bb
        pz = z / cc
        txx += k * px * px
        tyy += k * py * py
        tzz += k * pz * pz
        txy = k * px * py
        txz = k * px * pz
        tyz = k * py * pz
    return u, -gm * x * da, -gm * y * db, -gm * z * dc, txx, tyy, tzz, txy, txz, tyz


ellipsoid_field = dual(_ellipsoid_field)


def _edge_log(ra, rb, length):
    """Werner–Scheeres per-edge factor L_e (eq 2.41); 0 on the edge itself, where the terms that
    multiply it vanish (E_e r_e = 0 for x on the edge line)."""
    s = ra + rb
    d = s - length
    if d > 0.0:
        return math.log((s + length) / d)
    return 0.0


def _facet_angle(ax, ay, az, ra, bx, by, bz, rb, cx, cy, cz, rc):
    """Signed solid angle ω_f of the facet (a, b, c) seen from the field point (eq 2.41, atan2 form).

    Arguments are the vertex vectors r = P − x and their lengths.
    """
    num = ax * (by * cz - bz * cy) + ay * (bz * cx - bx * cz) + az * (bx * cy - by * cx)
    den = ra * rb * rc + ra * (bx * cx + by * cy + bz * cz) + rb * (cx * ax + cy * ay + cz * az) \
        + rc * (ax * bx + ay * by + az * bz)
    return 2.0 * math.atan2(num, den)


edge_log = dual(_edge_log)
facet_angle = dual(_facet_angle)
_L = edge_log.cpu
_omega = facet_angle.cpu


def _vertex_from(x, y, z, verts, rt, v):
    """``P_v − x`` and its length: computed, or gathered from a table the caller filled for this
    point (``rt[v] = (P_v − x, |P_v − x|)``, :func:`systems.gravity.kernels.eval_polyhedron_points`).
    ``rt`` None is pruned at compile time (numba's dead branch pruning), so the scratch-free kernel
    carries no table code."""
    if rt is None:
        ax = verts[v, 0] - x
        ay = verts[v, 1] - y
        az = verts[v, 2] - z
        return ax, ay, az, math.sqrt(ax * ax + ay * ay + az * az)
    return rt[v, 0], rt[v, 1], rt[v, 2], rt[v, 3]


vertex_from = dual(_vertex_from)
_vfrom = vertex_from.cpu


def _polyhedron_sums(x, y, z, verts, rt, edges, edge_dyad, edge_length, faces, face_normal):
    """The edge and facet sums of eq 2.42 at (x, y, z), before the factor G ρ: ``(2U/Gρ, g/Gρ,
    Γ/Gρ (xx, yy, zz, xy, xz, yz), Ω)``. ``rt``: None, or the caller's per-point vertex table
    (:func:`_vertex_from`); either way the same numbers are summed in the same order."""
    u = 0.0
    gx = 0.0
    gy = 0.0
    gz = 0.0
    txx = 0.0
    tyy = 0.0
    tzz = 0.0
    txy = 0.0
    txz = 0.0
    tyz = 0.0
    om = 0.0
    for e in range(edges.shape[0]):
        ax, ay, az, ra = _vfrom(x, y, z, verts, rt, edges[e, 0])
        rb = _vfrom(x, y, z, verts, rt, edges[e, 1])[3]
        le = _L(ra, rb, edge_length[e])
        exx = edge_dyad[e, 0]
        eyy = edge_dyad[e, 1]
        ezz = edge_dyad[e, 2]
        exy = edge_dyad[e, 3]
        exz = edge_dyad[e, 4]
        eyz = edge_dyad[e, 5]
        ex = exx * ax + exy * ay + exz * az
        ey = exy * ax + eyy * ay + eyz * az
        ez = exz * ax + eyz * ay + ezz * az
        u += (ax * ex + ay * ey + az * ez) * le
        gx -= ex * le
        gy -= ey * le
        gz -= ez * le
        txx += exx * le
        tyy += eyy * le
        tzz += ezz * le
        txy += exy * le
        txz += exz * le
        tyz += eyz * le
    for f in range(faces.shape[0]):
        ax, ay, az, ra = _vfrom(x, y, z, verts, rt, faces[f, 0])
        bx, by, bz, rb = _vfrom(x, y, z, verts, rt, faces[f, 1])
        cx, cy, cz, rc = _vfrom(x, y, z, verts, rt, faces[f, 2])
        w = _omega(ax, ay, az, ra, bx, by, bz, rb, cx, cy, cz, rc)
        nx = face_normal[f, 0]
        ny = face_normal[f, 1]
        nz = face_normal[f, 2]
        nr = (nx * ax + ny * ay + nz * az) * w
        u -= (nx * ax + ny * ay + nz * az) * nr
        gx += nx * nr
        gy += ny * nr
        gz += nz * nr
        txx -= nx * nx * w
        tyy -= ny * ny * w
        tzz -= nz * nz * w
        txy -= nx * ny * w
        txz -= nx * nz * w
        tyz -= ny * nz * w
        om += w
    return u, gx, gy, gz, txx, tyy, tzz, txy, txz, tyz, om


polyhedron_sums = dual(_polyhedron_sums)
_psums = polyhedron_sums.cpu


def _polyhedron_field(x, y, z, verts, edges, edge_dyad, edge_length, faces, face_normal, grho):
    """Constant-density polyhedron at (x, y, z), field frame (eq 2.42).

    Args:
        verts: vertices [m], shape (nv, 3).
        edges: vertex pairs (i, j) of every edge, shape (ne, 2), int64.
        edge_dyad: E_e as (xx, yy, zz, xy, xz, yz), shape (ne, 6).
        edge_length: |P_j − P_i| [m], shape (ne,).
        faces: vertex triples, outward counter-clockwise, shape (nf, 3), int64.
        face_normal: outward unit normals, shape (nf, 3).
        grho: G ρ [1/s²].

    Returns:
        ``(U, gx, gy, gz, Γxx, Γyy, Γzz, Γxy, Γxz, Γyz, Ω)`` with Ω = Σ_f ω_f the solid angle [sr].
        Needs no scratch memory (GPU-friendly); :func:`eval_polyhedron_points` is the faster bulk
        CPU evaluation with per-point vertex tables.
    """
    u, gx, gy, gz, txx, tyy, tzz, txy, txz, tyz, om = _psums(x, y, z, verts, None, edges, edge_dyad, edge_length,
                                                             faces, face_normal)
    return (0.5 * grho * u, grho * gx, grho * gy, grho * gz, grho * txx, grho * tyy, grho * tzz,
            grho * txy, grho * txz, grho * tyz, om)


polyhedron_field = dual(_polyhedron_field)


def _trilinear4(values, fx, fy, fz):
    """Trilinear interpolation of the 4 channels of ``values[nx, ny, nz, 4]`` at fractional node
    coordinates (fx, fy, fz), clamped into the grid."""
    nx = values.shape[0]
    ny = values.shape[1]
    nz = values.shape[2]
    fx = min(max(fx, 0.0), nx - 1.0)
    fy = min(max(fy, 0.0), ny - 1.0)
    fz = min(max(fz, 0.0), nz - 1.0)
    i = min(int(fx), nx - 2)
    j = min(int(fy), ny - 2)
    k = min(int(fz), nz - 2)
    tx = fx - i
    ty = fy - j
    tz = fz - k
    sx = 1.0 - tx
    sy = 1.0 - ty
    sz = 1.0 - tz
    w000 = sx * sy * sz
    w100 = tx * sy * sz
    w010 = sx * ty * sz
    w110 = tx * ty * sz
    w001 = sx * sy * tz
    w101 = tx * sy * tz
    w011 = sx * ty * tz
    w111 = tx * ty * tz
    c0 = (w000 * values[i, j, k, 0] + w100 * values[i + 1, j, k, 0] + w010 * values[i, j + 1, k, 0]
          + w110 * values[i + 1, j + 1, k, 0] + w001 * values[i, j, k + 1, 0] + w101 * values[i + 1, j, k + 1, 0]
          + w011 * values[i, j + 1, k + 1, 0] + w111 * values[i + 1, j + 1, k + 1, 0])
    c1 = (w000 * values[i, j, k, 1] + w100 * values[i + 1, j, k, 1] + w010 * values[i, j + 1, k, 1]
          + w110 * values[i + 1, j + 1, k, 1] + w001 * values[i, j, k + 1, 1] + w101 * values[i + 1, j, k + 1, 1]
          + w011 * values[i, j + 1, k + 1, 1] + w111 * values[i + 1, j + 1, k + 1, 1])
    c2 = (w000 * values[i, j, k, 2] + w100 * values[i + 1, j, k, 2] + w010 * values[i, j + 1, k, 2]
          + w110 * values[i + 1, j + 1, k, 2] + w001 * values[i, j, k + 1, 2] + w101 * values[i + 1, j, k + 1, 2]
          + w011 * values[i, j + 1, k + 1, 2] + w111 * values[i + 1, j + 1, k + 1, 2])
    c3 = (w000 * values[i, j, k, 3] + w100 * values[i + 1, j, k, 3] + w010 * values[i, j + 1, k, 3]
          + w110 * values[i + 1, j + 1, k, 3] + w001 * values[i, j, k + 1, 3] + w101 * values[i + 1, j, k + 1, 3]
          + w011 * values[i, j + 1, k + 1, 3] + w111 * values[i + 1, j + 1, k + 1, 3])
    return c0, c1, c2, c3


trilinear4 = dual(_trilinear4)
_tri4 = trilinear4.cpu
_pm = point_mass_field.cpu


def _quadrupole_field(dx, dy, dz, qxx, qyy, qzz, qxy, qxz, qyz):
    """Degree-2 (MacCullagh) field of G·Q at the offset d from the centre of mass.

    With the traceless quadrupole ``Q = ∫ρ (3 s sᵀ − |s|² E) dV = tr(I) E − 3 I`` (I the inertia
    tensor about the CoM) and ``q = G Q`` [m⁵/s²]: ``U₂ = dᵀ q d / (2 r⁵)``,
    ``g₂ = q d / r⁵ − (5/2) (dᵀ q d) d / r⁷``. Returns ``(U₂, g₂x, g₂y, g₂z)``; zeros at d = 0.
    """
    r2 = dx * dx + dy * dy + dz * dz
    if r2 == 0.0:
        return 0.0, 0.0, 0.0, 0.0
    qdx = qxx * dx + qxy * dy + qxz * dz
    qdy = qxy * dx + qyy * dy + qyz * dz
    qdz = qxz * dx + qyz * dy + qzz * dz
    dqd = dx * qdx + dy * qdy + dz * qdz
    ir5 = 1.0 / (r2 * r2 * math.sqrt(r2))
    k = 2.5 * dqd * ir5 / r2
    return 0.5 * dqd * ir5, qdx * ir5 - k * dx, qdy * ir5 - k * dy, qdz * ir5 - k * dz


quadrupole_field = dual(_quadrupole_field)
_quad = quadrupole_field.cpu


def _voxel_field(x, y, z, values, grid, far, perturbation):
    """Voxelised field at (x, y, z), field frame (seed 004 §2.4.4).

    ``grid = (ox, oy, oz, h)``: the grid's origin and spacing [m]; ``far = (cx, cy, cz, mu, qxx,
    qyy, qzz, qxy, qxz, qyz)``: the centre of mass [m], μ [m³/s²] and q = G Q [m⁵/s²] of the far
    field (:meth:`components.gravity.VoxelField.kernel_records`).

    ``values[nx, ny, nz, 4]`` holds at node (i, j, k) = origin + h (i, j, k) either (g, U)
    (``perturbation = False``) or (g − g_pm, U − U_pm) (``perturbation = True``), where _pm is the
    point mass μ at the centre of mass c. Inside the grid box: trilinear interpolation (plus the
    point mass in perturbation mode). Outside it: the far field of :class:`VoxelField` (point
    mass, quadrupole q = G Q, and the boundary residual decayed as r⁻⁵).

    Returns:
        ``(U, gx, gy, gz)``.
    """
    ox, oy, oz, h = grid
    cx, cy, cz, mu, qxx, qyy, qzz, qxy, qxz, qyz = far
    nx = values.shape[0]
    ny = values.shape[1]
    nz = values.shape[2]
    hx = ox + (nx - 1) * h
    hy = oy + (ny - 1) * h
    hz = oz + (nz - 1) * h
    inside = ox <= x <= hx and oy <= y <= hy and oz <= z <= hz
    t = 1.0
    px = x
    py = y
    pz = z
    if not inside:
        # radial projection from c onto the grid box: x_b = c + t (x − c), 0 < t < 1
        dx = x - cx
        dy = y - cy
        dz = z - cz
        if dx > 0.0:
            t = min(t, (hx - cx) / dx)
        elif dx < 0.0:
            t = min(t, (ox - cx) / dx)
        if dy > 0.0:
            t = min(t, (hy - cy) / dy)
        elif dy < 0.0:
            t = min(t, (oy - cy) / dy)
        if dz > 0.0:
            t = min(t, (hz - cz) / dz)
        elif dz < 0.0:
            t = min(t, (oz - cz) / dz)
        px = cx + t * dx
        py = cy + t * dy
        pz = cz + t * dz
    inv_h = 1.0 / h
    v0, v1, v2, v3 = _tri4(values, (px - ox) * inv_h, (py - oy) * inv_h, (pz - oz) * inv_h)
    if inside and not perturbation:
        return v3, v0, v1, v2
    if inside:
        u, gx, gy, gz, _a, _b, _c, _d, _e, _f = _pm(x, y, z, cx, cy, cz, mu)
        return u + v3, gx + v0, gy + v1, gz + v2
    if not perturbation:  # stored g, U: the perturbation at the boundary point
        pu, pgx, pgy, pgz, _a, _b, _c, _d, _e, _f = _pm(px, py, pz, cx, cy, cz, mu)
        v0 -= pgx
        v1 -= pgy
        v2 -= pgz
        v3 -= pu
    # residual of degrees >= 3 at the boundary point, decayed along the ray: ∝ r⁻⁴ (U), r⁻⁵ (g)
    qu, qgx, qgy, qgz = _quad(px - cx, py - cy, pz - cz, qxx, qyy, qzz, qxy, qxz, qyz)
    t4 = t * t * t * t
    t5 = t4 * t
    u, gx, gy, gz, _a, _b, _c, _d, _e, _f = _pm(x, y, z, cx, cy, cz, mu)
    fu, fgx, fgy, fgz = _quad(x - cx, y - cy, z - cz, qxx, qyy, qzz, qxy, qxz, qyz)
    return (u + fu + t4 * (v3 - qu), gx + fgx + t5 * (v0 - qgx), gy + fgy + t5 * (v1 - qgy),
            gz + fgz + t5 * (v2 - qgz))


voxel_field = dual(_voxel_field, inline=False)


def _linearized_field(x, y, z, x0, y0, z0, u0, g0x, g0y, g0z, txx, tyy, tzz, txy, txz, tyz):
    """Eq 2.43 (with the ½ restored): ``(U, gx, gy, gz)`` from U, g, Γ at (x0, y0, z0)."""
    dx = x - x0
    dy = y - y0
    dz = z - z0
    tdx = txx * dx + txy * dy + txz * dz
    tdy = txy * dx + tyy * dy + tyz * dz
    tdz = txz * dx + tyz * dy + tzz * dz
    u = u0 + g0x * dx + g0y * dy + g0z * dz + 0.5 * (dx * tdx + dy * tdy + dz * tdz)
    return u, g0x + tdx, g0y + tdy, g0z + tdz


linearized_field = dual(_linearized_field)


def _harmonics_field(x, y, z, mu, rad, nmax, cs):
    """Spherical-harmonic field to degree ``nmax``: ``(U, gx, gy, gz)`` at (x, y, z), field frame.

    Cunningham's recursion of V_nm + i W_nm = (R/r)^{n+1} P_nm(sin φ) e^{imλ} in Cartesian
    coordinates (Montenbruck & Gill 2000, eqs 3.29–3.31) and the acceleration of eq 3.33, with the
    unnormalised coefficients ``cs[n, m, 0, 0] = C_nm``, ``cs[n, m, 1, 0] = S_nm`` (the 4-D layout of
    the packed source's array slot it travels in, :func:`gravity_args`). Pole-safe (no division by cos φ) and
    allocation-free: for each order m the columns m − 1, m and m + 1 are recurred upwards in n side
    by side (three two-term states), started from the sectoral values V_kk, W_kk carried across m,
    so nothing of size N² is stored (3 N²/2 recursion steps instead of N²/2).
    """
    r2 = x * x + y * y + z * z
    if r2 == 0.0:
        return 0.0, 0.0, 0.0, 0.0
    rho = rad * rad / r2
    x0 = rad * x / r2
    y0 = rad * y / r2
    z0 = rad * z / r2
    zr = z0
    # sectoral V_kk, W_kk for k = m - 1, m, m + 1
    vpm, wpm = 0.0, 0.0
    vm, wm = rad / math.sqrt(r2), 0.0
    vnx, wnx = x0 * vm - y0 * wm, x0 * wm + y0 * vm
    u = 0.0
    ax = 0.0
    ay = 0.0
    az = 0.0
    for m in range(nmax + 1):
        # column m at degree n (a) and n - 1 (b), from n = m
        amv, amw, bmv, bmw = vm, wm, 0.0, 0.0
        # column m + 1 at degree n + 1 (a) and n (b), from n = m
        apv, apw, bpv, bpw = vnx, wnx, 0.0, 0.0
        # column m - 1 at degree n (a) and n - 1 (b), from n = m
        anv = (2 * m - 1) * zr * vpm
        anw = (2 * m - 1) * zr * wpm
        bnv, bnw = vpm, wpm
        for n in range(m, nmax + 1):
            k1 = (2 * n + 1) / (n + 1 - m)
            k2 = (n + m) / (n + 1 - m)
            cmv = k1 * zr * amv - k2 * rho * bmv          # V_{n+1,m}
            cmw = k1 * zr * amw - k2 * rho * bmw
            c = cs[n, m, 0, 0]
            sn = cs[n, m, 1, 0]
            u += c * amv + sn * amw
            if m == 0:
                ax -= c * apv
                ay -= c * apw
            else:
                j1 = (2 * n + 1) / (n + 2 - m)
                j2 = (n + m - 1) / (n + 2 - m)
                cnv = j1 * zr * anv - j2 * rho * bnv      # V_{n+1,m-1}
                cnw = j1 * zr * anw - j2 * rho * bnw
                f = (n - m + 2) * (n - m + 1)
                ax += 0.5 * ((-c * apv - sn * apw) + f * (c * cnv + sn * cnw))
                ay += 0.5 * ((-c * apw + sn * apv) + f * (-c * cnw + sn * cnv))
                bnv, bnw, anv, anw = anv, anw, cnv, cnw
            az += (n - m + 1) * (-c * cmv - sn * cmw)
            bmv, bmw, amv, amw = amv, amw, cmv, cmw
            l1 = (2 * n + 3) / (n + 1 - m)
            l2 = (n + m + 2) / (n + 1 - m)
            dpv = l1 * zr * apv - l2 * rho * bpv           # V_{n+2,m+1}
            dpw = l1 * zr * apw - l2 * rho * bpw
            bpv, bpw, apv, apw = apv, apw, dpv, dpw
        k = 2 * m + 3
        vpm, wpm, vm, wm = vm, wm, vnx, wnx
        vnx, wnx = k * (x0 * vm - y0 * wm), k * (x0 * wm + y0 * vm)
    g = mu / (rad * rad)
    return mu / rad * u, g * ax, g * ay, g * az


harmonics_field = dual(_harmonics_field, inline=False)


def _harmonics_gradient(x, y, z, mu, rad, nmax, cs):
    """Gravity gradient Γ = ∂g/∂x of the spherical-harmonic field to degree ``nmax``:
    ``(Γxx, Γyy, Γzz, Γxy, Γxz, Γyz)`` [1/s²] at (x, y, z), field frame (coefficients as in
    :func:`_harmonics_field`).

    With Z_nm = V_nm + i W_nm and the operators L± = ∂x ± i∂y, Cunningham's derivative identities
    (Montenbruck & Gill 2000, eqs 3.32–3.33, in units of 1/R) read L⁺Z_nm = −Z_{n+1,m+1},
    L⁻Z_nm = (n−m+2)(n−m+1) Z_{n+1,m−1} and ∂z Z_nm = −(n−m+1) Z_{n+1,m}, with
    Z_{n,−k} = (−1)^k (n−k)!/(n+k)! conj(Z_nk). Applied twice they give every second derivative in
    terms of degree n + 2:

        L⁺L⁺Z = Z_{n+2,m+2}                         L⁺L⁻Z = −(n−m+1)(n−m+2) Z_{n+2,m}
        L⁻L⁻Z = (n−m+1)(n−m+2)(n−m+3)(n−m+4) Z_{n+2,m−2}   (m = 1: −n(n+1) conj Z_{n+2,1};
                                                          m = 0: conj Z_{n+2,2})
        ∂zL⁺Z = (n−m+1) Z_{n+2,m+1}                 ∂z∂zZ = (n−m+1)(n−m+2) Z_{n+2,m}
        ∂zL⁻Z = −(n−m+1)(n−m+2)(n−m+3) Z_{n+2,m−1}  (m = 0: (n+1) conj Z_{n+2,1})

    and ∂xx = ¼(L⁺L⁺ + 2L⁺L⁻ + L⁻L⁻), ∂yy = −¼(L⁺L⁺ − 2L⁺L⁻ + L⁻L⁻), ∂xy = (L⁺L⁺ − L⁻L⁻)/4i,
    ∂xz = ½(∂zL⁺ + ∂zL⁻), ∂yz = (∂zL⁺ − ∂zL⁻)/2i of U = GM/R Σ Re[(C_nm − i S_nm) Z_nm]; the
    trace vanishes term by term (Laplace). Each Z_{n',m'} up to degree nmax + 2 is made once by the
    column recursion of :func:`_harmonics_field` and handed to the (at most eight) source terms
    (n' − 2, m) that need it, so nothing of size N² is stored (CPU and CUDA alike).
    """
    r2 = x * x + y * y + z * z
    if r2 == 0.0:
        return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    rho = rad * rad / r2
    x0 = rad * x / r2
    y0 = rad * y / r2
    zr = rad * z / r2
    sv, sw = rad / math.sqrt(r2), 0.0          # sectoral Z_{m,m} of the column being recurred
    ppr, ppi, pmr, mmr, mmi, zpr, zpi, zmr, zmi = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    top = nmax + 2
    for mt in range(top + 1):
        av, aw, bv, bw = sv, sw, 0.0, 0.0      # Z_{nt,mt} and Z_{nt-1,mt}
        for nt in range(mt, top + 1):
            n = nt - 2
            if n >= 0:
                m = mt - 2                     # L+L+ of source (n, mt - 2); m <= n as nt >= mt
                if m >= 0:
                    c, sn = cs[n, m, 0, 0], cs[n, m, 1, 0]
                    ppr += c * av + sn * aw
                    ppi += c * aw - sn * av
                if mt <= n:                    # L+L- and dzdz of source (n, mt)
                    c, sn = cs[n, mt, 0, 0], cs[n, mt, 1, 0]
                    f = (n - mt + 1) * (n - mt + 2)
                    pmr -= f * (c * av + sn * aw)
                m = mt - 1                     # dz L+ of source (n, mt - 1), a real term only for m <= n
                if 0 <= m <= n:
                    c, sn = cs[n, m, 0, 0], cs[n, m, 1, 0]
                    f = n - m + 1
                    zpr += f * (c * av + sn * aw)
                    zpi += f * (c * aw - sn * av)
                m = mt + 1                     # dz L- of source (n, mt + 1)
                if m <= n:
                    c, sn = cs[n, m, 0, 0], cs[n, m, 1, 0]
                    f = -(n - m + 1) * (n - m + 2) * (n - m + 3)
                    zmr += f * (c * av + sn * aw)
                    zmi += f * (c * aw - sn * av)
                m = mt + 2                     # L-L- of source (n, mt + 2)
                if m <= n:
                    c, sn = cs[n, m, 0, 0], cs[n, m, 1, 0]
                    f = (n - m + 1) * (n - m + 2) * (n - m + 3) * (n - m + 4)
                    mmr += f * (c * av + sn * aw)
                    mmi += f * (c * aw - sn * av)
                if mt == 2:                    # L-L- of source (n, 0): conj Z_{n+2,2}
                    c, sn = cs[n, 0, 0, 0], cs[n, 0, 1, 0]
                    mmr += c * av - sn * aw
                    mmi += -c * aw - sn * av
                elif mt == 1:
                    if n >= 1:                 # L-L- of source (n, 1): -n(n+1) conj Z_{n+2,1}
                        c, sn = cs[n, 1, 0, 0], cs[n, 1, 1, 0]
                        f = -n * (n + 1)
                        mmr += f * (c * av - sn * aw)
                        mmi += f * (-c * aw - sn * av)
                    c, sn = cs[n, 0, 0, 0], cs[n, 0, 1, 0]   # dz L- of source (n, 0): (n+1) conj Z_{n+2,1}
                    zmr += (n + 1) * (c * av - sn * aw)
                    zmi += (n + 1) * (-c * aw - sn * av)
            k1 = (2 * nt + 1) / (nt + 1 - mt)
            k2 = (nt + mt) / (nt + 1 - mt)
            cv = k1 * zr * av - k2 * rho * bv
            cw = k1 * zr * aw - k2 * rho * bw
            bv, bw, av, aw = av, aw, cv, cw
        k = 2 * mt + 1
        sv, sw = k * (x0 * sv - y0 * sw), k * (x0 * sw + y0 * sv)
    g = mu / (rad * rad * rad)
    txx = 0.25 * (ppr + 2.0 * pmr + mmr)
    tyy = -0.25 * (ppr - 2.0 * pmr + mmr)
    return (g * txx, g * tyy, -g * (txx + tyy), 0.25 * g * (ppi - mmi), 0.5 * g * (zpr + zmr),
            0.5 * g * (zpi - zmi))


harmonics_gradient = dual(_harmonics_gradient, inline=False)
