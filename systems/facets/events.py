"""Start and end of facet contact as events (``FacetContact(events=True)``): the event fields
declared on the world's event log, the per-sample summaries written to ``final/``, and the kernel
that compares a sample's contacts at an accepted state with those of the previous one.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from ecs.kernels import cpu_parallel, dual, gpu_literal


# --------------------------------------------------------------------------- contact start / end events
#: ``contact_change``'s codes: int64 on the CPU (literals compiled :func:`_log_unmatched_py` once per
#: value), literals the GPU folds (:func:`ecs.kernels.gpu_literal`)
CHANGE_START = gpu_literal(1)
CHANGE_END = gpu_literal(2)
#: Event fields of facet contact (``FacetContact(events=True)``), declared on the world's event log.
CONTACT_EVENT_FIELDS = {
    "contact_change": ((), np.int8, "1", "1: the facet pair came into contact; 2: it left contact (-1: unused slot)",
                       {"unused": -1, "start": int(CHANGE_START), "end": int(CHANGE_END)}),
    "contact_time": ((), np.float64, "s", "first accepted step boundary at which the change is seen"),
    "contact_time_before": ((), np.float64, "s", "the step boundary before it: the change lies in between"),
    "contact_facet_a": ((), np.int64, "1", "facet a: index along the facet table's entities (-1-g: ground g)"),
    "contact_facet_b": ((), np.int64, "1", "facet b: index along the facet table's entities"),
    "contact_body_a": ((), np.int64, "1", "body of facet a: index along the body table's entities (-1: ground)"),
    "contact_body_b": ((), np.int64, "1", "body of facet b: index along the body table's entities"),
    "contact_penetration": ((), np.float64, "m", "penetration when first seen (start) or last seen (end)"),
    "contact_point": (3, np.float64, "m", "contact point then, inertial"),
    "contact_normal": (3, np.float64, "1", "unit normal from facet a to facet b then, inertial"),
    "contact_normal_speed": ((), np.float64, "m/s", "v·n then: b's velocity relative to a along the normal "
                                                    "(negative while closing)"),
}


#: The contact summary of each sample in ``final/`` (``EventLog.summarize``): name -> (event field,
#: reduction, selected events, doc).
CONTACT_SUMMARIES = {
    "contact_starts": ("contact_change", "count", ("contact_change", 1),
                       "number of times a facet pair came into contact"),
    "contact_first_time": ("contact_time", "first", ("contact_change", 1), "time of the first contact start"),
    "contact_last_end_time": ("contact_time", "last", ("contact_change", 2), "time of the last contact end"),
    "contact_min_normal_speed": ("contact_normal_speed", "min", ("contact_change", 1),
                                 "v·n at the fastest-closing contact start (negative: closing)"),
    "contact_max_penetration": ("contact_penetration", "max", None,
                                "largest penetration seen at a contact start or end"),
}


def _log_one(s, change, t, t_prev, who, x, point, normal, vn, F, B, log):
    """Append one contact start (``change`` 1) or end (2) to sample s's event log ``log`` = (event
    arrays, counts, overflow flags): ``who`` = (facet a, facet b, body a, body b) rows, penetration
    x, point and normal 3-tuples (inertial), normal speed vn; rows become per-sample indices."""
    ev, ev_count, ev_overflow = log
    (e_change, e_time, e_before, e_fa, e_fb, e_ba, e_bb, e_x, e_p, e_n, e_vn) = ev
    fa, fb, ba, bb = who
    px, py, pz = point
    nx, ny, nz = normal
    k = ev_count[s]
    if k >= e_time.shape[1]:
        ev_overflow[s] = 1
        return
    e_change[s, k] = change
    e_time[s, k] = t
    e_before[s, k] = t_prev
    e_fa[s, k] = fa if fa < 0 else fa - s * F
    e_fb[s, k] = fb - s * F
    e_ba[s, k] = ba if ba < 0 else ba - s * B
    e_bb[s, k] = bb - s * B
    e_x[s, k] = x
    e_p[s, k, 0] = px
    e_p[s, k, 1] = py
    e_p[s, k, 2] = pz
    e_n[s, k, 0] = nx
    e_n[s, k, 1] = ny
    e_n[s, k, 2] = nz
    e_vn[s, k] = vn
    ev_count[s] = k + 1


log_one_change = dual(_log_one, inline=False)
_log_one_cpu = log_one_change.cpu


def _log_unmatched_py(s, change, cur, n, o_fa, o_fb, m, t, t_prev, F, B, log):
    """Log (as ``change``) each of sample s's n contacts ``cur`` = (fa, fb, ba, bb, x, p, nrm, v)
    whose pair is not among the m pairs (o_fa, o_fb): membership by while loops, not for/break
    (ecs/kernels.py docstring)."""
    fa, fb, ba, bb, x, p, nrm, v = cur
    for k in range(n):
        found = False
        j = 0
        while not found and j < m:
            found = o_fa[s, j] == fa[s, k] and o_fb[s, j] == fb[s, k]
            j += 1
        if not found:
            vn = v[s, k, 0] * nrm[s, k, 0] + v[s, k, 1] * nrm[s, k, 1] + v[s, k, 2] * nrm[s, k, 2]
            _log_one_cpu(s, change, t, t_prev, (fa[s, k], fb[s, k], ba[s, k], bb[s, k]), x[s, k],
                         (p[s, k, 0], p[s, k, 1], p[s, k, 2]), (nrm[s, k, 0], nrm[s, k, 1], nrm[s, k, 2]), vn, F, B,
                         log)


log_unmatched = dual(_log_unmatched_py, inline=False)
_log_unmatched = log_unmatched.cpu


def _log_contact_changes(s, B, F, cap, st, rtime, count, buf, prev, prev_count, prev_time, ev, ev_count, ev_overflow):
    """Compare sample s's contacts now (an accepted state) with those at the previous accepted
    state; log each pair that appeared (1, with its values now) or disappeared (2, with its
    values then) as an event, in buffer order; then keep the current contacts as the previous."""
    c_fa, c_fb, c_ba, c_bb, c_int, c_x, c_d, c_n, c_p, c_v, c_ra, c_rb, c_f = buf
    p_fa, p_fb, p_ba, p_bb, p_x, p_n, p_p, p_v = prev
    if st[s * B] != 0:  # the sample's rows are not RUNNING
        return
    t = rtime[s * B]
    t_prev = prev_time[s]  # NaN at the first evaluation: contacts there are logged as starts
    n = min(count[s], cap)
    m = min(prev_count[s], cap)
    log = (ev, ev_count, ev_overflow)
    _log_unmatched(s, CHANGE_START, (c_fa, c_fb, c_ba, c_bb, c_x, c_p, c_n, c_v), n, p_fa, p_fb, m, t, t_prev, F, B,
                   log)
    _log_unmatched(s, CHANGE_END, (p_fa, p_fb, p_ba, p_bb, p_x, p_p, p_n, p_v), m, c_fa, c_fb, n, t, t_prev, F, B,
                   log)
    for k in range(n):
        p_fa[s, k] = c_fa[s, k]
        p_fb[s, k] = c_fb[s, k]
        p_ba[s, k] = c_ba[s, k]
        p_bb[s, k] = c_bb[s, k]
        p_x[s, k] = c_x[s, k]
        for a in range(3):
            p_n[s, k, a] = c_n[s, k, a]
            p_p[s, k, a] = c_p[s, k, a]
            p_v[s, k, a] = c_v[s, k, a]
    prev_count[s] = n
    prev_time[s] = t


log_contact_changes = dual(_log_contact_changes)
_log_changes_cpu = log_contact_changes.cpu


@cpu_parallel
def log_contact_changes_samples(n, B, F, cap, st, rtime, count, buf, prev, prev_count, prev_time, ev, ev_count,
                                ev_overflow):
    for s in prange(n):
        _log_changes_cpu(s, B, F, cap, st, rtime, count, buf, prev, prev_count, prev_time, ev, ev_count, ev_overflow)
