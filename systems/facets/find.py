"""Finding facet contacts, per sample (seed 000 §3.4.2, JEOD's ``Contact::check_contact``): every
facet's inertial centre, half-segment and bounding radius; the exact capsule test of a facet pair;
the search over pairs (the broadphase of :mod:`systems.facets.broadphase`, or JEOD's static list of
matched pairs) and over the built-in and SDF grounds; each contact recorded, in a fixed order, into
the sample's contact buffer. The forces of the contacts found are :mod:`systems.facets.forces`; the
system that runs both is :class:`systems.facets.contact.FacetContact`.
"""

from __future__ import annotations

import math

from numba import prange

from ecs.kernels import cpu_jit, cpu_parallel, dual, gpu_literal
from ecs.attitude import quat_rotate, quat_rotate_inverse
from systems.facets.broadphase import cull_facets, sort_sweep_axis
from systems.facets.geometry import GOLDEN_ITERATIONS, capsule_contact, ground_distance, ground_lowest_param

_rot = quat_rotate.cpu
_rot_inv = quat_rotate_inverse.cpu
_capsule = capsule_contact.cpu
_gdist = ground_distance.cpu
_glow = ground_lowest_param.cpu
_cull = cull_facets.cpu
_sweep_prep = sort_sweep_axis.cpu

_INVPHI = 0.6180339887498949


# --------------------------------------------------------------------------- small kernels
#: body a of a ground contact: int64 on the CPU (a literal ``-1`` in the ``who`` tuple compiled
#: :func:`_record` a second time), a literal the GPU folds (:func:`ecs.kernels.gpu_literal`)
_GROUND_BODY = gpu_literal(-1)


def _point_velocity(b, pos, vel, att, omega, px, py, pz):
    """Inertial velocity of body row b's material point at the inertial point p: v + R (ω × Rᵀ(p − x))."""
    q0, q1, q2, q3 = att[b, 0], att[b, 1], att[b, 2], att[b, 3]
    rx, ry, rz = _rot_inv(q0, q1, q2, q3, px - pos[b, 0], py - pos[b, 1], pz - pos[b, 2])
    wx, wy, wz = omega[b, 0], omega[b, 1], omega[b, 2]
    ux, uy, uz = _rot(q0, q1, q2, q3, wy * rz - wz * ry, wz * rx - wx * rz, wx * ry - wy * rx)
    return vel[b, 0] + ux, vel[b, 1] + uy, vel[b, 2] + uz


point_velocity = dual(_point_velocity, inline=False)
_pvel = point_velocity.cpu


def _record(s, cap, count, who, x, d, normal, point, velocity, ra, rb, buf):
    """Append one contact to sample s's buffer ``buf`` (:data:`systems.facets.records.ContactBuffer`;
    counted even past ``cap`` so overflow is detected): ``who`` = (facet a, facet b, body a, body b,
    interaction), penetration x, distance d, the normal, point and relative velocity as 3-tuples
    (inertial), the radii of curvature ra, rb.
    """
    k = count[s]
    if k < cap:
        c_fa, c_fb, c_ba, c_bb, c_int, c_x, c_d, c_n, c_p, c_v, c_ra, c_rb, c_f = buf
        fa, fb, ba, bb, inter = who
        nx, ny, nz = normal
        px, py, pz = point
        vx, vy, vz = velocity
        c_fa[s, k] = fa
        c_fb[s, k] = fb
        c_ba[s, k] = ba
        c_bb[s, k] = bb
        c_int[s, k] = inter
        c_x[s, k] = x
        c_d[s, k] = d
        c_n[s, k, 0] = nx
        c_n[s, k, 1] = ny
        c_n[s, k, 2] = nz
        c_p[s, k, 0] = px
        c_p[s, k, 1] = py
        c_p[s, k, 2] = pz
        c_v[s, k, 0] = vx
        c_v[s, k, 1] = vy
        c_v[s, k, 2] = vz
        c_ra[s, k] = ra
        c_rb[s, k] = rb
        c_f[s, k, 0] = 0.0
        c_f[s, k, 1] = 0.0
        c_f[s, k, 2] = 0.0
    count[s] = k + 1


record_contact = dual(_record, inline=False)
_rec = record_contact.cpu


def _test_pair(s, ra_, rb_, inter, fac, bod, scr, cap, count, ntest, buf):
    """Exact capsule test of facet rows ra_ (a) and rb_ (b), whose bounding spheres overlap."""
    f_body, f_matd, f_point, f_axis, f_rad, f_len = fac
    status, pos, vel, att, omega, tree, sph_c, sph_r = bod
    wc, wh, wbr, live, act, near, wbc, box, order, axis, lo, hi = scr
    ntest[s] += 1
    r1 = f_rad[ra_]
    r2 = f_rad[rb_]
    x, nx, ny, nz, px, py, pz = _capsule(wc[ra_, 0], wc[ra_, 1], wc[ra_, 2], wh[ra_, 0], wh[ra_, 1], wh[ra_, 2], r1,
                                         wc[rb_, 0], wc[rb_, 1], wc[rb_, 2], wh[rb_, 0], wh[rb_, 1], wh[rb_, 2], r2)
    if x <= 0.0:
        return
    a = f_body[ra_]
    b = f_body[rb_]
    vax, vay, vaz = _pvel(a, pos, vel, att, omega, px, py, pz)
    vbx, vby, vbz = _pvel(b, pos, vel, att, omega, px, py, pz)
    _rec(s, cap, count, (ra_, rb_, a, b, inter), x, r1 + r2 - x, (nx, ny, nz), (px, py, pz),
         (vbx - vax, vby - vay, vbz - vaz), r1, r2, buf)


test_pair = dual(_test_pair, inline=False)
_tpair = test_pair.cpu


def _facet_world(s, F, fac, bod, scr):
    """Inertial centre, half-segment and bounding radius of every facet of sample s; live = body RUNNING."""
    f_body, f_matd, f_point, f_axis, f_rad, f_len = fac
    status, pos, vel, att, omega, tree, sph_c, sph_r = bod
    wc, wh, wbr, live, act, near, wbc, box, order, axis, lo, hi = scr
    for f in range(F):
        r = s * F + f
        b = f_body[r]
        if b < 0 or status[b] != 0:
            live[r] = 0
            continue
        live[r] = 1
        q0, q1, q2, q3 = att[b, 0], att[b, 1], att[b, 2], att[b, 3]
        cx, cy, cz = _rot(q0, q1, q2, q3, f_point[r, 0], f_point[r, 1], f_point[r, 2])
        wc[r, 0] = pos[b, 0] + cx
        wc[r, 1] = pos[b, 1] + cy
        wc[r, 2] = pos[b, 2] + cz
        h = 0.5 * f_len[r]
        hx, hy, hz = _rot(q0, q1, q2, q3, h * f_axis[r, 0], h * f_axis[r, 1], h * f_axis[r, 2])
        wh[r, 0] = hx
        wh[r, 1] = hy
        wh[r, 2] = hz
        wbr[r] = f_rad[r] + h


facet_world = dual(_facet_world, inline=False)
_fworld = facet_world.cpu


# --------------------------------------------------------------------------- find contacts
def _find_contacts(s, F, B, use_bp, npairs, pairs, fac, bod, grd, scr, cap, counters, buf):
    """Every facet–facet and built-in facet–ground contact of sample s, in a fixed order, into the buffer.

    Argument groups (tuples of arrays; numba inlines at most 31 arguments):
    ``pairs`` = (pair_a, pair_b, pair_i, pair_table); ``fac`` = (facet_body, dense material,
    facet_point, facet_axis, facet_radius, facet_length); ``bod`` = (row_status, position,
    velocity, attitude, omega, tree, sphere centre, sphere radius); ``grd`` = (ground count, kind,
    params, pair table, curvature radius); ``scr`` = scratch (centre, half-segment, bounding
    radius, live, in sweep, near, body sphere centre, body box, order, axis, lo, hi); ``counters`` = (contacts,
    narrowphase tests, pair candidates at this evaluation; running totals of the last two over every
    evaluation); ``buf`` = the contact buffer (see :func:`_record`).
    """
    pair_a, pair_b, pair_i, pair_table = pairs
    f_body, f_matd, f_point, f_axis, f_rad, f_len = fac
    status, pos, vel, att, omega, tree, sph_c, sph_r = bod
    ngr, g_kind, g_params, g_pair, g_curv = grd
    wc, wh, wbr, live, act, near, wbc, box, order, axis, lo, hi = scr
    count, ntest, ncand, tot_test, tot_cand = counters
    count[s] = 0
    ntest[s] = 0
    ncand[s] = 0
    base = s * F
    _fworld(s, F, fac, bod, scr)
    if use_bp:
        _cull(s, F, B, bod, f_body, scr)
        swept = _sweep_prep(s, F, act, wc, wbr, order, axis, lo, hi)
        for ia in range(F if swept > 0 else 0):
            i = order[s, ia]
            ri = base + i
            if lo[ri] == math.inf:
                break
            for ib in range(ia + 1, F):
                j = order[s, ib]
                rj = base + j
                if lo[rj] > hi[ri]:
                    break
                ncand[s] += 1
                bi = f_body[ri]
                bj = f_body[rj]
                if bi == bj or (tree[bi] >= 0 and tree[bi] == tree[bj]):
                    continue
                inter = pair_table[f_matd[ri], f_matd[rj]]
                if inter < 0:
                    continue
                dx = wc[rj, 0] - wc[ri, 0]
                dy = wc[rj, 1] - wc[ri, 1]
                dz = wc[rj, 2] - wc[ri, 2]
                rr = wbr[ri] + wbr[rj]
                if dx * dx + dy * dy + dz * dz > rr * rr:  # bounding spheres apart
                    continue
                if i < j:
                    _tpair(s, ri, rj, inter, fac, bod, scr, cap, count, ntest, buf)
                else:
                    _tpair(s, rj, ri, inter, fac, bod, scr, cap, count, ntest, buf)
    else:
        for k in range(npairs):
            ri = base + pair_a[k]
            rj = base + pair_b[k]
            if live[ri] == 0 or live[rj] == 0:
                continue
            ncand[s] += 1
            dx = wc[rj, 0] - wc[ri, 0]
            dy = wc[rj, 1] - wc[ri, 1]
            dz = wc[rj, 2] - wc[ri, 2]
            rr = wbr[ri] + wbr[rj]
            if dx * dx + dy * dy + dz * dz > rr * rr:  # bounding spheres apart
                continue
            _tpair(s, ri, rj, pair_i[k], fac, bod, scr, cap, count, ntest, buf)
    tot_test[s] += ntest[s]
    tot_cand[s] += ncand[s]
    # built-in grounds (plane, sphere, ellipsoid); SDF grounds run in their own CPU pass
    for g in range(ngr):
        kind = g_kind[g]
        if kind > 2:
            continue
        for f in range(F):
            r = base + f
            if live[r] == 0:
                continue
            inter = g_pair[g, f_matd[r]]
            if inter < 0:
                continue
            d0 = _gdist(kind, g_params, g, wc[r, 0], wc[r, 1], wc[r, 2])[0]
            if d0 > wbr[r]:
                continue
            p0x, p0y, p0z = wc[r, 0] - wh[r, 0], wc[r, 1] - wh[r, 1], wc[r, 2] - wh[r, 2]
            dx, dy, dz = 2.0 * wh[r, 0], 2.0 * wh[r, 1], 2.0 * wh[r, 2]
            t = _glow(kind, g_params, g, p0x, p0y, p0z, dx, dy, dz)
            sx, sy, sz = p0x + t * dx, p0y + t * dy, p0z + t * dz
            dist, nx, ny, nz = _gdist(kind, g_params, g, sx, sy, sz)
            rad = f_rad[r]
            x = rad - dist
            if x <= 0.0:
                continue
            px, py, pz = sx - rad * nx, sy - rad * ny, sz - rad * nz
            b = f_body[r]
            vx, vy, vz = _pvel(b, pos, vel, att, omega, px, py, pz)
            _rec(s, cap, count, (-1 - g, r, _GROUND_BODY, b, inter), x, dist, (nx, ny, nz), (px, py, pz), (vx, vy, vz),
                 g_curv[g], rad, buf)


find_contacts = dual(_find_contacts, inline=False)
_find_contacts_cpu = find_contacts.cpu


@cpu_parallel
def find_contacts_samples(n, F, B, use_bp, npairs, pairs, fac, bod, grd, scr, cap, counters, buf):
    for s in prange(n):
        _find_contacts_cpu(s, F, B, use_bp, npairs, pairs, fac, bod, grd, scr, cap, counters, buf)


@cpu_jit
def find_sdf_ground_contacts(fn, data, g, curv, samples, F, fac, bod, scr, g_pair, cap, count, buf):
    """Facets against the terrain SDF ground g: ``fn(data, x, y, z) -> (d, nx, ny, nz)`` (CPU, serial, in order)."""
    f_body, f_matd, f_point, f_axis, f_rad, f_len = fac
    status, pos, vel, att, omega, tree, sph_c, sph_r = bod
    wc, wh, wbr, live, act, near, wbc, box, order, axis, lo, hi = scr
    for s in range(samples):
        for f in range(F):
            r = s * F + f
            if live[r] == 0:
                continue
            inter = g_pair[g, f_matd[r]]
            if inter < 0:
                continue
            if fn(data, wc[r, 0], wc[r, 1], wc[r, 2])[0] > wbr[r]:
                continue
            p0x, p0y, p0z = wc[r, 0] - wh[r, 0], wc[r, 1] - wh[r, 1], wc[r, 2] - wh[r, 2]
            dx, dy, dz = 2.0 * wh[r, 0], 2.0 * wh[r, 1], 2.0 * wh[r, 2]
            t = 0.0
            if dx * dx + dy * dy + dz * dz > 0.0:
                lo_, hi_ = 0.0, 1.0
                t1 = hi_ - _INVPHI * (hi_ - lo_)
                t2 = lo_ + _INVPHI * (hi_ - lo_)
                f1 = fn(data, p0x + t1 * dx, p0y + t1 * dy, p0z + t1 * dz)[0]
                f2 = fn(data, p0x + t2 * dx, p0y + t2 * dy, p0z + t2 * dz)[0]
                for _ in range(GOLDEN_ITERATIONS):
                    if f1 <= f2:
                        hi_ = t2
                        t2 = t1
                        f2 = f1
                        t1 = hi_ - _INVPHI * (hi_ - lo_)
                        f1 = fn(data, p0x + t1 * dx, p0y + t1 * dy, p0z + t1 * dz)[0]
                    else:
                        lo_ = t1
                        t1 = t2
                        f1 = f2
                        t2 = lo_ + _INVPHI * (hi_ - lo_)
                        f2 = fn(data, p0x + t2 * dx, p0y + t2 * dy, p0z + t2 * dz)[0]
                t = 0.5 * (lo_ + hi_)
                ft = fn(data, p0x + t * dx, p0y + t * dy, p0z + t * dz)[0]
                fa = fn(data, p0x, p0y, p0z)[0]
                fb = fn(data, p0x + dx, p0y + dy, p0z + dz)[0]
                if fa < ft and fa <= fb:
                    t = 0.0
                elif fb < ft:
                    t = 1.0
            sx, sy, sz = p0x + t * dx, p0y + t * dy, p0z + t * dz
            dist, nx, ny, nz = fn(data, sx, sy, sz)
            rad = f_rad[r]
            x = rad - dist
            gn = math.sqrt(nx * nx + ny * ny + nz * nz)
            if x <= 0.0 or not gn > 0.0:  # apart, or no normal (flat spot of the field)
                continue
            nx, ny, nz = nx / gn, ny / gn, nz / gn
            px, py, pz = sx - rad * nx, sy - rad * ny, sz - rad * nz
            b = f_body[r]
            vx, vy, vz = _pvel(b, pos, vel, att, omega, px, py, pz)
            _rec(s, cap, count, (-1 - g, r, _GROUND_BODY, b, inter), x, dist, (nx, ny, nz), (px, py, pz), (vx, vy, vz),
                 curv, rad, buf)
