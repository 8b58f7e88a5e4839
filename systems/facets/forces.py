"""Forces of facet contacts (seed 000 §3.4.7, §3.4.8, eq 3.1): the built-in spring–damper law with
friction (and its JEOD-compatible variant, :mod:`systems.facets.contact`), the wrench of each
contact on its two bodies, and the user's compiled laws (``InteractionKind.USER``), all from the
contact buffer that :mod:`systems.facets.find` fills.
"""

from __future__ import annotations

import math

from numba import prange

from ecs.kernels import cpu_jit, cpu_parallel, dual
from ecs.attitude import quat_rotate, quat_rotate_inverse

_rot = quat_rotate.cpu
_rot_inv = quat_rotate_inverse.cpu


# --------------------------------------------------------------------------- forces
def _spring_force(ip, ii, x, d, nx, ny, nz, vx, vy, vz):
    """Built-in spring (eq. 3.1) force on facet b [N], inertial; see the module docstring."""
    k = ip[ii, 0]
    c = ip[ii, 1]
    mu = ip[ii, 2]
    mode = ip[ii, 3]
    fric = ip[ii, 4]
    vslip = ip[ii, 5]
    vn = vx * nx + vy * ny + vz * nz
    if mode == 2.0:
        fn = -k * d - c * vn
    else:
        fn = k * x - c * vn
        if mode == 1.0 and fn < 0.0:
            fn = 0.0
    fx, fy, fz = fn * nx, fn * ny, fn * nz
    if mu > 0.0:
        tx, ty, tz = vx - vn * nx, vy - vn * ny, vz - vn * nz
        vt = math.sqrt(tx * tx + ty * ty + tz * tz)
        vm = math.sqrt(vx * vx + vy * vy + vz * vz)
        # a slip below round-off of |v| has no direction: no friction (else a 1e-17 residue of the
        # normal projection would carry the full μ|f_n| along the normal)
        if vt > 1e-12 * vm:
            den = vm if fric == 1.0 else max(vt, vslip)
            sc = mu * abs(fn) / den
            fx -= sc * tx
            fy -= sc * ty
            fz -= sc * tz
    return fx, fy, fz


spring_force = dual(_spring_force, inline=False)
_spring = spring_force.cpu


def _add_wrench(b, fx, fy, fz, px, py, pz, pos, att, cforce, ctorque):
    """Force F (inertial) at inertial point p on body row b: cforce += F, ctorque += r_B × F_B."""
    q0, q1, q2, q3 = att[b, 0], att[b, 1], att[b, 2], att[b, 3]
    rx, ry, rz = _rot_inv(q0, q1, q2, q3, px - pos[b, 0], py - pos[b, 1], pz - pos[b, 2])
    gx, gy, gz = _rot_inv(q0, q1, q2, q3, fx, fy, fz)
    cforce[b, 0] += fx
    cforce[b, 1] += fy
    cforce[b, 2] += fz
    ctorque[b, 0] += ry * gz - rz * gy
    ctorque[b, 1] += rz * gx - rx * gz
    ctorque[b, 2] += rx * gy - ry * gx


add_wrench = dual(_add_wrench, inline=False)
_wrench = add_wrench.cpu


def _contact_wrenches(s, B, cap, count, buf, inter, status, reason, pos, att, omega, cforce, ctorque):
    """Wrenches of sample s's contacts (``buf``: :data:`systems.facets.records.ContactBuffer`;
    ``inter``: the interactions' kinds and parameters; built-in spring; user forces already in
    ``buf.force``) on its bodies:
    ``cforce`` (inertial) and ``ctorque`` (body axes, about ``pos``) of rows s·B .. s·B + B − 1,
    zeroed first. A sample whose buffer overflowed gets no wrench and its RUNNING rows are set
    FAILED (CONTACT_OVERFLOW).

    Law ``momentum``: ``+F`` on b and ``−F`` on a at the common contact point ``p``. Law ``jeod``
    (a spring interaction whose parameter 6 is 1): the velocity is moved from ``p`` to JEOD's point
    ``P = p + (r_b − r_a − x/2) n`` and ``+F`` acts at b's surface point ``p − (x/2) n``, ``−F`` at
    a's ``p + (x/2) n`` (module docstring).
    """
    c_ba, c_bb, c_int, c_x, c_d = buf.body_a, buf.body_b, buf.interaction, buf.penetration, buf.distance
    c_n, c_p, c_v, c_f, c_ra, c_rb = buf.normal, buf.point, buf.velocity, buf.force, buf.radius_a, buf.radius_b
    i_kind, i_params = inter
    base = s * B
    for i in range(B):
        r = base + i
        for k in range(3):
            cforce[r, k] = 0.0
            ctorque[r, k] = 0.0
    n = count[s]
    if n > cap:  # buffer overflow: the sample's contacts are unknown, fail its rows
        for i in range(B):
            if status[base + i] == 0:
                status[base + i] = 9  # Status.FAILED
                reason[base + i] = 7  # Reason.CONTACT_OVERFLOW
        return
    for k in range(n):
        ii = c_int[s, k]
        a = c_ba[s, k]
        b = c_bb[s, k]
        px, py, pz = c_p[s, k, 0], c_p[s, k, 1], c_p[s, k, 2]
        pax, pay, paz = px, py, pz  # where -F acts on a
        pbx, pby, pbz = px, py, pz  # where +F acts on b
        if i_kind[ii] == 0:
            nx, ny, nz = c_n[s, k, 0], c_n[s, k, 1], c_n[s, k, 2]
            vx, vy, vz = c_v[s, k, 0], c_v[s, k, 1], c_v[s, k, 2]
            if i_params[ii, 6] == 1.0 and a >= 0:  # JEOD law between two facets
                h = 0.5 * c_x[s, k]
                pax, pay, paz = px + h * nx, py + h * ny, pz + h * nz
                pbx, pby, pbz = px - h * nx, py - h * ny, pz - h * nz
                # relative velocity at P = p + e n: v(P) = v(p) + (ω_b − ω_a) × (e n), ω inertial
                e = c_rb[s, k] - c_ra[s, k] - h
                wax, way, waz = _rot(att[a, 0], att[a, 1], att[a, 2], att[a, 3], omega[a, 0], omega[a, 1],
                                     omega[a, 2])
                wbx, wby, wbz = _rot(att[b, 0], att[b, 1], att[b, 2], att[b, 3], omega[b, 0], omega[b, 1],
                                     omega[b, 2])
                dx, dy, dz = wbx - wax, wby - way, wbz - waz
                vx += e * (dy * nz - dz * ny)
                vy += e * (dz * nx - dx * nz)
                vz += e * (dx * ny - dy * nx)
            fx, fy, fz = _spring(i_params, ii, c_x[s, k], c_d[s, k], nx, ny, nz, vx, vy, vz)
            c_f[s, k, 0] = fx
            c_f[s, k, 1] = fy
            c_f[s, k, 2] = fz
        else:
            fx, fy, fz = c_f[s, k, 0], c_f[s, k, 1], c_f[s, k, 2]
        _wrench(b, fx, fy, fz, pbx, pby, pbz, pos, att, cforce, ctorque)
        if a >= 0:
            _wrench(a, -fx, -fy, -fz, pax, pay, paz, pos, att, cforce, ctorque)


contact_wrenches = dual(_contact_wrenches, inline=False)
_cwrenches = contact_wrenches.cpu


def _apply_contacts(s, B, cap, count, buf, inter, status, reason, pos, att, omega, force, torque, cforce, ctorque):
    """Forces of sample s's contacts onto its bodies (:func:`_contact_wrenches`), added into the
    RUNNING rows' ``force``/``torque``."""
    _cwrenches(s, B, cap, count, buf, inter, status, reason, pos, att, omega, cforce, ctorque)
    base = s * B
    for i in range(B):
        r = base + i
        if status[r] == 0:
            for k in range(3):
                force[r, k] += cforce[r, k]
                torque[r, k] += ctorque[r, k]


apply_contacts = dual(_apply_contacts, inline=False)
_apply_contacts_cpu = apply_contacts.cpu


@cpu_parallel
def apply_contacts_samples(n, B, cap, count, buf, inter, status, reason, pos, att, omega, force, torque, cforce,
                           ctorque):
    for s in prange(n):
        _apply_contacts_cpu(s, B, cap, count, buf, inter, status, reason, pos, att, omega, force, torque, cforce,
                            ctorque)


@cpu_jit
def eval_user_contacts(fn, kind, samples, cap, count, c_int, i_kind, i_params, c_x, c_n, c_v, c_ra, c_rb, c_f):
    """Force of every contact whose interaction has ``kind`` from the user's compiled ``fn`` (CPU, serial)."""
    for s in range(samples):
        n = min(count[s], cap)
        for k in range(n):
            ii = c_int[s, k]
            if i_kind[ii] != kind:
                continue
            fx, fy, fz = fn(i_params[ii], c_x[s, k], c_n[s, k, 0], c_n[s, k, 1], c_n[s, k, 2], c_v[s, k, 0],
                            c_v[s, k, 1], c_v[s, k, 2], c_ra[s, k], c_rb[s, k])
            c_f[s, k, 0] = fx
            c_f[s, k, 1] = fy
            c_f[s, k, 2] = fz
