"""Stronge's impulse equations over one collision (seed 004 §2.5, eqs 2.55–2.88), integrated in the
impulse: the per-row work array that holds a collision's constants and integrator state, the
right-hand side d(state)/dp in slip, stick and slip reversal (with rolling resistance), the
Dormand–Prince 5(4) step and its error norm, the location of the end of compression and of
restitution on a step, the direction of slip reversal, and the integration of one span.
:mod:`systems.probe_contact.collision` sets a collision up, runs its phases with these kernels and
documents the equations, the phases and the misprints corrected.
"""

from __future__ import annotations

import math

import numpy as np

from ecs import row_layout
from ecs.attitude import cross_call
from ecs.kernels import dual, dual_call
from ecs.stepping import DP54, row_weighted_sum, step_factor
from systems.probe_contact.linalg import sym3_apply

_cross = cross_call.cpu
_japply = sym3_apply.cpu
_step_factor = step_factor.cpu
_wsum = row_weighted_sum.cpu

# ------------------------------------------------------------------ the per-row work array
# Every collision keeps its constants and its integrator state in one float64 row ``w`` of
# IMPULSE_ROW.size slots (the drivers pass ``work[i]``): small arrays compile and run far better in
# numba than the equivalent large tuples, and the same layout serves CPU rows and GPU threads.
# Offsets are numpy int64 on purpose: numba compiles a separate specialisation of a callee for
# every distinct Python-int *literal* argument, numpy scalars are plain int64.
_i = np.int64
IMPULSE_ROW = row_layout("impulse work row", (
    ("M11", 1, "contact-frame inverse mass matrix [M] (eq 2.59) [1/kg], entry 11"),
    ("M12", 1, "[M] entry 12"), ("M13", 1, "[M] entry 13"), ("M22", 1, "[M] entry 22"),
    ("M23", 1, "[M] entry 23"), ("M33", 1, "[M] entry 33"),
    ("V10", 1, "initial contact velocity, tangent 1 [m/s] (contact frame)"),
    ("V20", 1, "initial contact velocity, tangent 2 [m/s]"),
    ("V30", 1, "initial contact velocity, normal [m/s]"),
    ("F", 1, "Coulomb friction coefficient"),
    ("EPS", 1, "direction tolerance on the slip speed s [m/s]"),
    ("ROLL", 1, "1.0: rolling resistance on"),
    ("U1", 3, "contact axis û₁, body axes"), ("U2", 3, "contact axis û₂, body axes"),
    ("N", 3, "contact normal N, body axes"), ("R", 3, "contact point r from the CoM [m], body axes"),
    ("J00", 1, "inverse inertia, entry 00 [1/(kg m²)], body axes"), ("J01", 1, "entry 01"),
    ("J02", 1, "entry 02"), ("J11", 1, "entry 11"), ("J12", 1, "entry 12"), ("J22", 1, "entry 22"),
    ("W0", 3, "initial angular velocity [rad/s], body axes"),
    ("CR", 3, "rolling resistance C_RR,k R per body axis [m]"),
    ("WSTAR", 1, "rolling regularisation rate ω* of eq 2.87 [rad/s]"),
    ("_spare", 3, "unused"),
    ("Y", 6, "accepted state (P1, P2, W_n, L0, L1, L2)"),
    ("Y1", 6, "candidate state of a step"),
    ("YT", 6, "stage state"),
    ("K", 7 * 6, "the 7 stage derivatives of DP5(4), 6 apart"),
    ("ERR", 6, "error estimate of the last step"),
    ("YL", 6, "state located by the event iteration"),
    ("OUT_DV", 3, "output: Δv of the CoM [m/s], body axes (then the target frame, resolve_impact)"),
    ("OUT_DW", 3, "output: Δω [rad/s], body axes"),
    ("OUT_P", 1, "output: the normal impulse p at the end [N s]"),
    ("OUT_PV", 3, "output: the impulse P [N s], body axes (then the target frame)"),
    ("OUT_WC", 1, "output: the normal work of compression W_c [J]"),
), size=128)
(W_M11, W_M12, W_M13, W_M22, W_M23, W_M33, W_V10, W_V20, W_V30, W_F, W_EPS, W_ROLL, W_U1, W_U2, W_N, W_R,
 W_J00, W_J01, W_J02, W_J11, W_J12, W_J22, W_W0, W_CR, W_WSTAR, W_Y, W_Y1, W_YT, W_K, W_ERR, W_YL,
 W_OUT, W_OUT_DW, W_OUT_P, W_OUT_PV, W_OUT_WC) = IMPULSE_ROW.offsets(
    "M11 M12 M13 M22 M23 M33 V10 V20 V30 F EPS ROLL U1 U2 N R J00 J01 J02 J11 J12 J22 W0 CR WSTAR Y Y1 YT K ERR YL "
    "OUT_DV OUT_DW OUT_P OUT_PV OUT_WC")
W_OUT_END = IMPULSE_ROW.end("OUT_WC")
#: A collision's integrated state (W_Y, W_Y1, W_YT, W_YL, each stage in W_K, and W_ERR): the tangential
#: impulse (P1, P2) at +0, +1, then W_n and the rolling angular impulse L.
IMPULSE_STATE = row_layout("impulse state", (
    ("P", 2, "tangential impulse (P1, P2) [N s], contact frame"),
    ("WN", 1, "normal work W_n [J]"),
    ("L", 3, "rolling-resistance angular impulse L [N m s], body axes")))
I_WN, I_L = IMPULSE_STATE.offsets("WN L")
WORK_SIZE = IMPULSE_ROW.size
STATE = _i(IMPULSE_STATE.size)
_EV_V3 = _i(0)      # event: compression end, v₃ = 0
_EV_WN = _i(1)      # event: end of restitution, W_n = (1 − e²) W_c
_NO_FSAL = np.bool_(False)   # dopri_step's k1_ready for a step whose first stage must be evaluated

# Dormand–Prince 5(4), ecs.stepping.DP54 (the one tableau of every integrator): its weights (stage
# rows, b = a's row 6: FSAL, then b − b̂), nodes, and the number of its error row.
_DP_W = np.ascontiguousarray(DP54.weights)
_DP_C = np.ascontiguousarray(DP54.c)
_DP_ERR = _i(DP54.error_row)
_DP_STAGES = _i(DP54.stages)


def _lock_axis(l, c):
    """One body axis of the rolling lock's rate: ``(l, (l/c)²)`` where the axis rolls (``c`` =
    C_RR,k R > 0), ``(0, 0)`` where it does not (:func:`_rolling_rate`)."""
    if c > 0.0:
        return l, (l / c) ** 2
    return 0.0, 0.0


lock_axis = dual(_lock_axis)
_lock = lock_axis.cpu


def _rolling_rate(w, p, s_off, d1, d2, k_off):
    """dL_RR/dp (body axes) of eqs 2.85–2.88 into ``w[k_off + I_L:]`` (3 numbers), at the state
    ``w[s_off:]`` (total contact impulse (P1, P2, p), its rate (d1, d2, 1))."""
    P1 = w[s_off]
    P2 = w[s_off + 1]
    Px = P1 * w[W_U1] + P2 * w[W_U2] + p * w[W_N]
    Py = P1 * w[W_U1 + 1] + P2 * w[W_U2 + 1] + p * w[W_N + 1]
    Pz = P1 * w[W_U1 + 2] + P2 * w[W_U2 + 2] + p * w[W_N + 2]
    dPx = d1 * w[W_U1] + d2 * w[W_U2] + w[W_N]
    dPy = d1 * w[W_U1 + 1] + d2 * w[W_U2 + 1] + w[W_N + 1]
    dPz = d1 * w[W_U1 + 2] + d2 * w[W_U2 + 2] + w[W_N + 2]
    rx, ry, rz = w[W_R], w[W_R + 1], w[W_R + 2]
    hx, hy, hz = _cross(rx, ry, rz, Px, Py, Pz)
    ox, oy, oz = _japply(w[W_J00], w[W_J01], w[W_J02], w[W_J11], w[W_J12], w[W_J22],
                         hx + w[s_off + I_L], hy + w[s_off + I_L + 1], hz + w[s_off + I_L + 2])
    ox += w[W_W0]
    oy += w[W_W0 + 1]
    oz += w[W_W0 + 2]
    om = math.sqrt(ox * ox + oy * oy + oz * oz)
    c0, c1, c2 = w[W_CR], w[W_CR + 1], w[W_CR + 2]
    qx, qy, qz = 0.0, 0.0, 0.0
    if om > 0.0:
        qx, qy, qz = -c0 * ox / om, -c1 * oy / om, -c2 * oz / om
    lx, ly, lz = _cross(rx, ry, rz, dPx, dPy, dPz)
    lx, ly, lz = -lx, -ly, -lz
    lx, sx = _lock(lx, c0)
    ly, sy = _lock(ly, c1)
    lz, sz = _lock(lz, c2)
    q2 = sx + sy + sz
    if q2 > 1.0:
        sc = 1.0 / math.sqrt(q2)
        lx, ly, lz = lx * sc, ly * sc, lz * sc
    lam = 1.0
    ws = w[W_WSTAR]
    if ws > 0.0:
        lam = min(om, ws) / ws
    w[k_off + I_L] = lam * qx + (1.0 - lam) * lx
    w[k_off + I_L + 1] = lam * qy + (1.0 - lam) * ly
    w[k_off + I_L + 2] = lam * qz + (1.0 - lam) * lz


rolling_rate = dual_call(_rolling_rate)
_rr_rate = rolling_rate.cpu


def _slip_rate(m6, v0, f, eps, P1, P2, p, phase, dirs):
    """The slip, stick or reversal rates of eqs 2.65, 2.71, 2.78 on numbers (:func:`_impact_rhs`
    adds rolling resistance and works on the work row):
    ``(dP1/dp, dP2/dp, dW_n/dp)`` at the impulse (P1, P2, p); ``m6`` = [M] (M11, M12, M13, M22, M23,
    M33), ``v0`` = the initial contact velocity (V10, V20, V30), ``dirs`` = (d1c, d2c, fb1, fb2)."""
    M11, M12, M13, M22, M23, M33 = m6
    V10, V20, V30 = v0
    d1c, d2c, fb1, fb2 = dirs
    v1 = V10 + M11 * P1 + M12 * P2 + M13 * p
    v2 = V20 + M12 * P1 + M22 * P2 + M23 * p
    if phase == 0:
        s = math.sqrt(v1 * v1 + v2 * v2)
        if s > eps:
            d1 = -f * v1 / s
            d2 = -f * v2 / s
        else:  # a stage point at the stick point: keep the step's incoming direction
            d1 = -f * fb1
            d2 = -f * fb2
    else:
        d1 = d1c
        d2 = d2c
    return d1, d2, V30 + M13 * P1 + M23 * P2 + M33 * p


slip_rate = dual(_slip_rate)
_srate = slip_rate.cpu


def _impact_rhs(w, p, s_off, k_off, phase, d1c, d2c, fb1, fb2):
    """d/dp of the state ``w[s_off:s_off+6]`` = (P1, P2, W_n, L_RR) into ``w[k_off:k_off+6]``
    (eqs 2.65 slip, 2.71 stick, 2.78 reversal; 2.85–2.88 rolling resistance)."""
    d1, d2, dwn = _srate((w[W_M11], w[W_M12], w[W_M13], w[W_M22], w[W_M23], w[W_M33]),
                         (w[W_V10], w[W_V20], w[W_V30]), w[W_F], w[W_EPS], w[s_off], w[s_off + 1], p, phase,
                         (d1c, d2c, fb1, fb2))
    w[k_off] = d1
    w[k_off + 1] = d2
    w[k_off + I_WN] = dwn                                                          # dW_n/dp = v₃
    if w[W_ROLL] > 0.0:
        _rr_rate(w, p, s_off, d1, d2, k_off)
    else:
        w[k_off + I_L] = 0.0
        w[k_off + I_L + 1] = 0.0
        w[k_off + I_L + 2] = 0.0


impact_rhs = dual_call(_impact_rhs)
_rhs = impact_rhs.cpu


def _slip_step(w, p, h, y_off, out_off, phase, dirs, k1_ready):
    """:func:`_dopri_step` without rolling resistance: the state (P1, P2, W_n) and the seven stages
    kept in locals rather than in the work row (the collision's hottest loop), the same sums in the
    same order (the same bits). Writes ``w[out_off:out_off+3]`` and ``w[W_ERR:W_ERR+3]``, the first
    stage's rate into ``w[W_K:W_K+3]`` and the last one's (FSAL: the rate at the step's end) into
    ``w[W_K+STATE:]``; with ``k1_ready`` the first stage is read from ``w[W_K:]`` instead of
    evaluated (the caller vouches that it is the rate at this step's start)."""
    m6 = (w[W_M11], w[W_M12], w[W_M13], w[W_M22], w[W_M23], w[W_M33])
    v0 = (w[W_V10], w[W_V20], w[W_V30])
    f = w[W_F]
    eps = w[W_EPS]
    a = _DP_W
    c = _DP_C
    y1, y2, y3 = w[y_off], w[y_off + 1], w[y_off + 2]
    if k1_ready:
        k11, k12, k13 = w[W_K], w[W_K + 1], w[W_K + 2]
    else:
        k11, k12, k13 = _srate(m6, v0, f, eps, y1, y2, p, phase, dirs)
        w[W_K], w[W_K + 1], w[W_K + 2] = k11, k12, k13
    k21, k22, k23 = _srate(m6, v0, f, eps, y1 + h * (0.0 + a[1, 0] * k11), y2 + h * (0.0 + a[1, 0] * k12),
                           p + c[1] * h, phase, dirs)
    k31, k32, k33 = _srate(m6, v0, f, eps, y1 + h * (0.0 + a[2, 0] * k11 + a[2, 1] * k21),
                           y2 + h * (0.0 + a[2, 0] * k12 + a[2, 1] * k22), p + c[2] * h, phase, dirs)
    k41, k42, k43 = _srate(m6, v0, f, eps, y1 + h * (0.0 + a[3, 0] * k11 + a[3, 1] * k21 + a[3, 2] * k31),
                           y2 + h * (0.0 + a[3, 0] * k12 + a[3, 1] * k22 + a[3, 2] * k32), p + c[3] * h, phase,
                           dirs)
    k51, k52, k53 = _srate(m6, v0, f, eps,
                           y1 + h * (0.0 + a[4, 0] * k11 + a[4, 1] * k21 + a[4, 2] * k31 + a[4, 3] * k41),
                           y2 + h * (0.0 + a[4, 0] * k12 + a[4, 1] * k22 + a[4, 2] * k32 + a[4, 3] * k42),
                           p + c[4] * h, phase, dirs)
    k61, k62, k63 = _srate(m6, v0, f, eps,
                           y1 + h * (0.0 + a[5, 0] * k11 + a[5, 1] * k21 + a[5, 2] * k31 + a[5, 3] * k41
                                     + a[5, 4] * k51),
                           y2 + h * (0.0 + a[5, 0] * k12 + a[5, 1] * k22 + a[5, 2] * k32 + a[5, 3] * k42
                                     + a[5, 4] * k52), p + c[5] * h, phase, dirs)
    o1 = y1 + h * (0.0 + a[6, 0] * k11 + a[6, 1] * k21 + a[6, 2] * k31 + a[6, 3] * k41 + a[6, 4] * k51
                   + a[6, 5] * k61)
    o2 = y2 + h * (0.0 + a[6, 0] * k12 + a[6, 1] * k22 + a[6, 2] * k32 + a[6, 3] * k42 + a[6, 4] * k52
                   + a[6, 5] * k62)
    o3 = y3 + h * (0.0 + a[6, 0] * k13 + a[6, 1] * k23 + a[6, 2] * k33 + a[6, 3] * k43 + a[6, 4] * k53
                   + a[6, 5] * k63)
    k71, k72, k73 = _srate(m6, v0, f, eps, o1, o2, p + c[6] * h, phase, dirs)   # FSAL stage, for the error
    e = _DP_ERR
    w[out_off], w[out_off + 1], w[out_off + 2] = o1, o2, o3
    w[W_K + STATE], w[W_K + STATE + 1], w[W_K + STATE + 2] = k71, k72, k73
    w[W_ERR] = h * (0.0 + a[e, 0] * k11 + a[e, 1] * k21 + a[e, 2] * k31 + a[e, 3] * k41 + a[e, 4] * k51
                    + a[e, 5] * k61 + a[e, 6] * k71)
    w[W_ERR + 1] = h * (0.0 + a[e, 0] * k12 + a[e, 1] * k22 + a[e, 2] * k32 + a[e, 3] * k42 + a[e, 4] * k52
                        + a[e, 5] * k62 + a[e, 6] * k72)
    w[W_ERR + I_WN] = h * (0.0 + a[e, 0] * k13 + a[e, 1] * k23 + a[e, 2] * k33 + a[e, 3] * k43 + a[e, 4] * k53
                           + a[e, 5] * k63 + a[e, 6] * k73)


slip_step = dual_call(_slip_step)
_sstep = slip_step.cpu


def _dopri_step(w, p, h, y_off, out_off, phase, d1c, d2c, fb1, fb2, k1_ready):
    """One Dormand–Prince 5(4) step from ``w[y_off:]``: the 5th-order state into ``w[out_off:]``
    and its error estimate into ``w[W_ERR:]`` (``out_off`` must differ from ``y_off``). Without
    rolling resistance the state is (P1, P2, W_n), stepped in registers (:func:`_slip_step`; then
    ``k1_ready``: the first stage's rate is already in ``w[W_K:]``); with it every stage is
    evaluated."""
    if not (w[W_ROLL] > 0.0):
        _sstep(w, p, h, y_off, out_off, phase, (d1c, d2c, fb1, fb2), k1_ready)
        return
    for j in range(_DP_STAGES):
        if j == 0:
            _rhs(w, p, y_off, W_K, phase, d1c, d2c, fb1, fb2)
            continue
        for m in range(STATE):
            w[W_YT + m] = w[y_off + m] + h * _wsum(w, W_K, STATE, m, _DP_W, j, j)
        _rhs(w, p + _DP_C[j] * h, W_YT, W_K + STATE * j, phase, d1c, d2c, fb1, fb2)
    for m in range(STATE):
        w[out_off + m] = w[W_YT + m]  # stage 7 is evaluated at the 5th-order solution (FSAL)
        w[W_ERR + m] = h * _wsum(w, W_K, STATE, m, _DP_W, _DP_ERR, _DP_STAGES)


dopri_step = dual_call(_dopri_step)
_step = dopri_step.cpu


def _error_norm(w, p, h, tol, lscale):
    """Error of the last step as a contact-velocity error [m/s] over ``tol`` (rotation invariant)."""
    e1 = w[W_ERR]
    e2 = w[W_ERR + 1]
    ev1 = w[W_M11] * e1 + w[W_M12] * e2
    ev2 = w[W_M12] * e1 + w[W_M22] * e2
    ew = w[W_ERR + I_WN] / (p + h)
    s = ev1 * ev1 + ev2 * ev2 + ew * ew
    if w[W_ROLL] > 0.0:
        jx, jy, jz = _japply(w[W_J00], w[W_J01], w[W_J02], w[W_J11], w[W_J12], w[W_J22],
                             w[W_ERR + I_L], w[W_ERR + I_L + 1], w[W_ERR + I_L + 2])
        s += (jx * jx + jy * jy + jz * jz) * lscale * lscale
    return math.sqrt(s) / tol


error_norm = dual_call(_error_norm)
_enorm = error_norm.cpu


def _tangential_velocity(w, p, off):
    """(v1, v2) at impulse (w[off], w[off+1], p): ``v = v₀ + [M] P`` (eq 2.59 integrated)."""
    P1 = w[off]
    P2 = w[off + 1]
    return (w[W_V10] + w[W_M11] * P1 + w[W_M12] * P2 + w[W_M13] * p,
            w[W_V20] + w[W_M12] * P1 + w[W_M22] * P2 + w[W_M23] * p)


def _v3_of(w, p, off):
    """Normal contact velocity at impulse (w[off], w[off+1], p)."""
    return w[W_V30] + w[W_M13] * w[off] + w[W_M23] * w[off + 1] + w[W_M33] * p


def _normal_work(w, p, off):
    """``W_n = ∫ v₃ dp``, the work of the normal impulse (state component 2)."""
    return w[off + I_WN]


tangential_velocity = dual_call(_tangential_velocity)
v3_of = dual_call(_v3_of)
normal_work = dual_call(_normal_work)
_vt = tangential_velocity.cpu
_v3 = v3_of.cpu
_wn = normal_work.cpu


def _copy_state(w, src, dst):
    for m in range(STATE):
        w[dst + m] = w[src + m]


copy_state = dual_call(_copy_state)
_copy = copy_state.cpu


def _locate_event(w, kind, target, p, h, g0, gh, phase, d1c, d2c, fb1, fb2):
    """Step length hh in (0, h] at which the event function crosses zero (g0 < 0 <= gh) from the
    state w[W_Y] at p: ``kind`` 0 is ``v₃``, 1 is ``W_n − target``. Safeguarded Newton on the step
    length, re-stepping from (p, w[W_Y]). Returns hh; the located state is left in w[W_YL]."""
    lo = 0.0
    hi = h
    glo = g0
    ghi = gh
    hh = h * (-g0) / (gh - g0) if gh > g0 else h
    if not (hh > 0.0 and hh <= h):
        hh = h
    _step(w, p, hh, W_Y, W_YL, phase, d1c, d2c, fb1, fb2, _NO_FSAL)
    for _ in range(60):
        gv = _v3(w, p + hh, W_YL) if kind == 0 else _wn(w, p + hh, W_YL) - target
        if gv == 0.0:
            break
        if gv < 0.0:
            lo = hh
            glo = gv
        else:
            hi = hh
            ghi = gv
        if kind == 0:
            _rhs(w, p + hh, W_YL, W_K, phase, d1c, d2c, fb1, fb2)
            sl = w[W_M13] * w[W_K] + w[W_M23] * w[W_K + 1] + w[W_M33]
        else:
            sl = _v3(w, p + hh, W_YL)
        hn = hh - gv / sl if sl > 0.0 else 0.5 * (lo + hi)
        if not (hn > lo and hn < hi):
            hn = lo - glo * (hi - lo) / (ghi - glo) if ghi > glo else 0.5 * (lo + hi)
            if not (hn > lo and hn < hi):
                hn = 0.5 * (lo + hi)
        done = abs(hn - hh) <= 4e-16 * (p + hh) or (hi - lo) <= 4e-16 * (p + hi)
        hh = hn
        _step(w, p, hh, W_Y, W_YL, phase, d1c, d2c, fb1, fb2, _NO_FSAL)
        if done:
            break
    return hh


locate_event = dual_call(_locate_event)
_locate = locate_event.cpu


def _reversal_h(phi, M11, M12, M13, M22, M23, f):
    """h(φ) = s dφ/dp (eq 2.74) and g(φ) = ds/dp (eq 2.75) of slip in direction φ."""
    c1 = math.cos(phi)
    s1 = math.sin(phi)
    h = M23 * c1 - M13 * s1 + f * (0.5 * (M11 - M22) * math.sin(2.0 * phi) - M12 * math.cos(2.0 * phi))
    g = M13 * c1 + M23 * s1 - f * (M11 * c1 * c1 + 2.0 * M12 * c1 * s1 + M22 * s1 * s1)
    return h, g


reversal_h = dual_call(_reversal_h)
_rev_h = reversal_h.cpu


def _reversal_h_derivatives(phi, M11, M12, M13, M22, M23, f):
    """h(φ) of eq 2.74 and its first three derivatives in φ (eq 2.77, with the sign of the third
    derivative's M₂₃ term corrected: :mod:`systems.probe_contact.collision`, "Misprints")."""
    d = M11 - M22
    c1 = math.cos(phi)
    s1 = math.sin(phi)
    c2 = math.cos(2.0 * phi)
    s2 = math.sin(2.0 * phi)
    h = M23 * c1 - M13 * s1 + f * (0.5 * d * s2 - M12 * c2)
    h1 = -M13 * c1 - M23 * s1 + f * (d * c2 + 2.0 * M12 * s2)
    h2 = M13 * s1 - M23 * c1 - 2.0 * f * d * s2 + 4.0 * f * M12 * c2
    h3 = M13 * c1 + M23 * s1 - 4.0 * f * d * c2 - 8.0 * f * M12 * s2
    return h, h1, h2, h3


reversal_h_derivatives = dual_call(_reversal_h_derivatives)
_rev_hd = reversal_h_derivatives.cpu


def _reversal_direction(M11, M12, M13, M22, M23, f, phi0):
    """Direction φ̂ of slip reversal (eqs 2.74–2.77): the root of h with g > 0, by the third-order
    Householder iteration of eq 2.76 from φ₀ = φ*; if that lands on a wrong root (g <= 0) or does
    not converge, a bracketed scan of h over [−π, π] with bisection. Returns (φ̂, found)."""
    phi = phi0
    for _ in range(12):
        h, h1, h2, h3 = _rev_hd(phi, M11, M12, M13, M22, M23, f)
        den = 6.0 * h1 * h1 * h1 - 6.0 * h * h1 * h2 + h * h * h3
        if den == 0.0:
            break
        dphi = (6.0 * h * h1 * h1 - 3.0 * h * h * h2) / den
        phi -= dphi
        if abs(dphi) <= 1e-15:
            break
    scale = abs(M13) + abs(M23) + f * (abs(M11) + abs(M22) + abs(M12))
    hv, gv = _rev_h(phi, M11, M12, M13, M22, M23, f)
    if abs(hv) <= 1e-10 * scale and gv > 0.0:
        return phi, True
    best = phi0
    bestg = 0.0
    found = False
    n = 96
    a = -math.pi
    ha, ga = _rev_h(a, M11, M12, M13, M22, M23, f)
    for k in range(1, n + 1):
        b = -math.pi + 2.0 * math.pi * k / n
        hb, gb = _rev_h(b, M11, M12, M13, M22, M23, f)
        if (ha <= 0.0 < hb) or (hb <= 0.0 < ha):
            lo = a
            hlo = ha
            hi = b
            for _ in range(80):
                mid = 0.5 * (lo + hi)
                hm, gm = _rev_h(mid, M11, M12, M13, M22, M23, f)
                if (hm <= 0.0) == (hlo <= 0.0):
                    lo = mid
                    hlo = hm
                else:
                    hi = mid
            r = 0.5 * (lo + hi)
            hr, gr = _rev_h(r, M11, M12, M13, M22, M23, f)
            if gr > bestg:
                bestg = gr
                best = r
                found = True
        a = b
        ha = hb
    return best, found


reversal_direction = dual_call(_reversal_direction)
_rev_dir = reversal_direction.cpu


def _integrate_span(w, p, span, phase, d1c, d2c, tol, lscale, h0, max_steps):
    """Integrate w[W_Y] over [p, p + span] without events (rolling resistance in the closed-form
    phases). Returns (steps, ok)."""
    h = min(h0, span)
    done = 0.0
    steps = 0
    while done < span:
        if steps >= max_steps:
            return steps, False
        steps += 1
        hh = min(h, span - done)
        _step(w, p + done, hh, W_Y, W_Y1, phase, d1c, d2c, 0.0, 0.0, _NO_FSAL)
        en = _enorm(w, p + done, hh, tol, lscale)
        if en <= 1.0:
            _copy(w, W_Y1, W_Y)
            done += hh
            h = hh * _step_factor(en, -0.2)
        else:
            h = hh * _step_factor(en, -0.2)
            if not (h > 0.0):
                return steps, False
    return steps, True


integrate_span = dual_call(_integrate_span)
_span = integrate_span.cpu
