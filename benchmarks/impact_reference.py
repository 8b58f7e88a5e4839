"""A straightforward scipy reference for one Stronge impact (the peer of ``tumble bench impacts``
and the reference of ``tests/test_collision.py``), written independently of
:mod:`systems.probe_contact.collision`: the impulse equations of seed 004 §2.5 (Stronge's energetic
restitution with Coulomb friction) integrated per impact with :func:`scipy.integrate.solve_ivp`."""

from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import brentq
from scipy.spatial.transform import Rotation


def box_inertia(m, dims):
    """Principal inertia tensors (n, 3, 3) of solid boxes of masses ``m`` (n,) [kg] and side lengths
    ``dims`` (n, 3) [m]: ``m/12 diag(b² + c², a² + c², a² + b²)``."""
    d2 = dims ** 2
    I = np.zeros((len(m), 3, 3))
    I[:, 0, 0] = m * (d2[:, 1] + d2[:, 2]) / 12
    I[:, 1, 1] = m * (d2[:, 0] + d2[:, 2]) / 12
    I[:, 2, 2] = m * (d2[:, 0] + d2[:, 1]) / 12
    return I


class ReferenceGaveUp(RuntimeError):
    """The reference could not resolve the impact (no event before p = 1e3, too many right-hand-side
    calls, or no unique slip-reversal direction)."""


def stronge_reference(m, I_body, q, r_body, N, v, w_body, e, f, *, eps=1e-10, method="DOP853", rtol=1e-12,
                      atol=1e-14, scan=2001, max_calls=None):
    """Stronge's impact of a rigid body at one contact point, integrated with scipy.

    State y = (v (3), ω (3), W) in the target frame against the normal impulse p, with
    dv/dp = dP/dp / m, dω/dp = I⁻¹ (r × dP/dp), dW/dp = v_c·N. Slip: dP/dp = N − f t̂ with t̂ the
    sliding direction; when sliding stops (event |v_t| = eps·|v_c0|), the tangential impulse ratio
    that keeps v_t = 0 is solved from the rigid-body equations: stick if it lies in the friction
    cone, else slip resumes along the direction ĉ whose sliding rate is parallel to ĉ and positive
    (found by a scan of ``scan`` angles and brentq). Compression ends at v₃ = 0, the collision at
    W = (1 − e²) W_c. ``method``, ``rtol``, ``atol``: solve_ivp's; ``max_calls``: most right-hand-side
    calls (None: no limit).

    Returns (v', ω' (body axes), modes visited); raises :class:`ReferenceGaveUp`.
    """
    Rm = Rotation.from_quat(q, scalar_first=True).as_matrix()
    Iinv = np.linalg.inv(Rm @ I_body @ Rm.T)
    r = Rm @ r_body
    N = N / np.linalg.norm(N)

    def vcon(y):
        return y[:3] + np.cross(y[3:6], r)

    def rate(d):  # contact-point velocity change per unit impulse in direction d
        return d / m + np.cross(Iinv @ np.cross(r, d), r)

    def tang(u):
        return u - (u @ N) * N

    y = np.concatenate([v, Rm @ w_body, [0.0]])
    V = np.linalg.norm(vcon(y))
    mode, modes, compressed, wtarget, p, calls = "slip", [], False, 0.0, 0.0, [0]
    if np.linalg.norm(tang(vcon(y))) <= eps * V:
        mode = "zero"
    dconst = None
    while True:
        if mode == "zero":
            t1 = tang(np.array([1.0, 0.0, 0.0]) if abs(N[0]) < 0.9 else np.array([0.0, 1.0, 0.0]))
            t1 /= np.linalg.norm(t1)
            t2 = np.cross(N, t1)
            A = np.array([[t1 @ rate(t1), t1 @ rate(t2)], [t2 @ rate(t1), t2 @ rate(t2)]])
            mu = np.linalg.solve(A, -np.array([t1 @ rate(N), t2 @ rate(N)]))
            if np.linalg.norm(mu) <= f:
                mode, dconst = "stick", N + mu[0] * t1 + mu[1] * t2
            else:
                def cross_rate(phi):
                    c = np.cos(phi) * t1 + np.sin(phi) * t2
                    k = rate(N - f * c)
                    return (np.cross(c, k) @ N), (c @ k)

                phis = np.linspace(-np.pi, np.pi, scan) + 1.234e-4  # no scan point on a symmetry axis
                hs = np.array([cross_rate(a)[0] for a in phis])
                roots = [brentq(lambda a: cross_rate(a)[0], phis[k], phis[k + 1], xtol=1e-15)
                         for k in range(len(phis) - 1) if hs[k] * hs[k + 1] < 0]
                roots = [a for a in roots if cross_rate(a)[1] > 0]
                if len(roots) != 1:
                    raise ReferenceGaveUp(f"{len(roots)} slip-reversal directions found")
                c = np.cos(roots[0]) * t1 + np.sin(roots[0]) * t2
                mode, dconst = "reversal", N - f * c
        if not modes or modes[-1] != mode:
            modes.append(mode)

        def rhs(p_, y_, mode=mode, dconst=dconst):
            calls[0] += 1
            if max_calls is not None and calls[0] > max_calls:
                raise ReferenceGaveUp(f"more than {max_calls} right-hand-side calls")
            if mode == "slip":
                ut = tang(vcon(y_))
                d = N - f * ut / max(np.linalg.norm(ut), 1e-300)
            else:
                d = dconst
            return np.concatenate([d / m, Iinv @ np.cross(r, d), [vcon(y_) @ N]])

        ev_n = (lambda p_, y_: y_[6] - wtarget) if compressed else (lambda p_, y_: vcon(y_) @ N)
        ev_n.terminal, ev_n.direction = True, 1     # compression end, or the collision's end
        events = [ev_n]
        if mode == "slip":
            ev_stop = (lambda p_, y_: np.linalg.norm(tang(vcon(y_))) - eps * V)
            ev_stop.terminal, ev_stop.direction = True, -1
            events.append(ev_stop)
        sol = solve_ivp(rhs, (p, p + 1e3), y, method=method, rtol=rtol, atol=atol, events=events)
        if sol.status != 1:
            raise ReferenceGaveUp("no event before p = 1e3")
        p, y = sol.t[-1], sol.y[:, -1]
        if len(sol.t_events[0]) and sol.t_events[0][-1] == p:
            if compressed or e == 0.0:
                return y[:3], Rm.T @ y[3:6], modes
            compressed, wtarget = True, (1 - e * e) * y[6]
        else:
            mode = "zero"
