"""``tumble bench integrators``: seed 002's Table 1 redone, and batch throughput of the integrators.

1. **Table 1** (seed 002 §2.5): free precession of the symmetric top (§2.4.1, ``I = diag(1, 1,
   32/17)``, ``ω₀ = [1, 0, ω_z]``, 5 s as Script 2-1), step 0.001 s, quaternion and Euler-angle
   attitude modes. For every method of :class:`systems.dynamics.integration.Integrator` — euler,
   semi_implicit_euler, rk4, bs32, dp54 — the MSE of ω in body axes and in inertial axes against
   the closed form (:func:`scenes.precession.closed_form`), computed as the thesis does (mean
   over every output step and all three components), and the median wall time of ``World.run``.
   The adaptive methods run with MATLAB's default tolerances (RelTol 1e-3, AbsTol 1e-6) and
   ``MaxStep`` = 0.001 s (the frame), the thesis's setting: every step is then 0.001 s and bs32 /
   dp54 are the fixed-step versions of ode23 / ode45 (whose printed MSEs are 3.00e-20 / 2.60e-31
   for ω_b). Named peers on the same problem in the same run: scipy ``solve_ivp`` RK23, RK45 and
   DOP853 with the same tolerances, ``max_step = first_step = 0.001`` and output on the same grid.
2. **Batch throughput**: N bodies (``--bodies``, default 10⁶) of one torque-free asymmetric top,
   each sample with its own random rate, one ``World`` compiled with ``samples = N``; RK4 (frames
   of 0.01 s) and DP5(4) (rtol 1e-10, atol 1e-12, frames of 0.1 s: the controller chooses the
   steps; step *attempts* are counted, accepted + rejected). Reported as body-steps per second
   against the named peer: a numpy-vectorised RK4 of the same equations (written below).

Medians over ``--repeat`` runs (after one warm-up that also compiles the kernels). Results go to
``bench-results/integrators.json`` with the machine info. A benchmark, not a test: nothing
here asserts a time.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from benchmarks._common import machine_info, median_time, save

METHODS = ("euler", "semi_implicit_euler", "rk4", "bs32", "dp54")
SCIPY_METHODS = ("RK23", "RK45", "DOP853")
#: our method -> its scipy counterpart (the named peer of the wall-time ratio)
PEER = {"bs32": "RK23", "dp54": "RK45", "rk4": "RK45"}
MATLAB_RTOL, MATLAB_ATOL = 1e-3, 1e-6
INERTIA = np.diag([1.0, 1.0, 32.0 / 17.0])


# ------------------------------------------------------------------------------------------------
# 1. Table 1
# ------------------------------------------------------------------------------------------------
def _reference(t):
    from scenes import precession

    w0 = np.array([1.0, 0.0, precession.axial_rate()])
    return w0, precession.closed_form(t, omega0=w0, i_transverse=1.0, i_axial=32.0 / 17.0)


def _rotate(q, v):
    """v_I = q ⊗ (0, v_B) ⊗ q* for arrays [T, 4], [T, 3] (numpy, independent of the kernels)."""
    w, x = q[:, :1], q[:, 1:]
    t = 2.0 * np.cross(x, v)
    return v + w * t + np.cross(x, t)


def _mse(a, b) -> float:
    return float(np.mean((np.asarray(a) - np.asarray(b)) ** 2))


def table1_engine(method: str, euler_mode: bool, *, dt: float, t_end: float, repeat: int) -> dict:
    from scenes import precession

    from systems.dynamics.integration import Integrator

    tol = dict(rtol=MATLAB_RTOL, atol=MATLAB_ATOL) if Integrator(method).adaptive else {}   # fixed-step: refused
    scene = precession.build(method=method, dt=dt, t_end=t_end, record_every=1, euler_mode=euler_mode,
                             omega_spread=0.0, **tol)
    w = scene.world
    out = {}

    def run():
        w.compile()
        out["r"] = w.run(t_end=t_end, dt=dt, record_every=1, record=("body_attitude", "body_omega"))

    wall = median_time(run, repeat=repeat)
    r = out["r"]
    _, ref = _reference(r.times)
    wb = r.trajectories["body_omega"][0, :, 0]
    q = r.trajectories["body_attitude"][0, :, 0]
    return {"method": method, "mode": "euler" if euler_mode else "quaternion",
            "mse_omega_body": _mse(wb, ref["omega_body"]),
            "mse_omega_inertial": _mse(_rotate(q, wb), ref["omega_inertial"]),
            "wall_s": wall, "steps": len(r.times) - 1}


def _qdot(q, w):
    """½ q ⊗ (0, ω) for q [..., 4], ω [..., 3]."""
    q0, q1, q2, q3 = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    wx, wy, wz = w[..., 0], w[..., 1], w[..., 2]
    return 0.5 * np.stack([-q1 * wx - q2 * wy - q3 * wz, q0 * wx + q2 * wz - q3 * wy,
                           q0 * wy - q1 * wz + q3 * wx, q0 * wz + q1 * wy - q2 * wx], axis=-1)


def _euler321_rates(e, w):
    """Seed 002 Eq. 1.21: (φ̇, θ̇, ψ̇) of roll φ, pitch θ, yaw ψ from body ω."""
    phi, th = e[0], e[1]
    sp, cp, tt, ct = np.sin(phi), np.cos(phi), np.tan(th), np.cos(th)
    return np.array([w[0] + (sp * w[1] + cp * w[2]) * tt, cp * w[1] - sp * w[2], (sp * w[1] + cp * w[2]) / ct])


def _euler321_quat(e):
    """body→inertial quaternion of (roll, pitch, yaw), arrays [T, 3] -> [T, 4]."""
    cr, sr = np.cos(e[:, 0] / 2), np.sin(e[:, 0] / 2)
    cp, sp = np.cos(e[:, 1] / 2), np.sin(e[:, 1] / 2)
    cy, sy = np.cos(e[:, 2] / 2), np.sin(e[:, 2] / 2)
    return np.stack([cy * cp * cr + sy * sp * sr, cy * cp * sr - sy * sp * cr, cy * sp * cr + sy * cp * sr,
                     sy * cp * cr - cy * sp * sr], axis=-1)


def table1_scipy(method: str, euler_mode: bool, *, dt: float, t_end: float, repeat: int) -> dict:
    from scipy.integrate import solve_ivp

    inv = np.linalg.inv(INERTIA)
    t_eval = np.linspace(0.0, t_end, int(round(t_end / dt)) + 1)
    w0, ref = _reference(t_eval)

    def rhs(_t, y):
        w = y[:3]
        wd = inv @ (-np.cross(w, INERTIA @ w))
        att = _euler321_rates(y[3:], w) if euler_mode else _qdot(y[3:], w)
        return np.concatenate([wd, att])

    y0 = np.concatenate([w0, np.zeros(3) if euler_mode else [1.0, 0.0, 0.0, 0.0]])
    out = {}

    def run():
        out["s"] = solve_ivp(rhs, (0.0, t_end), y0, method=method, t_eval=t_eval, rtol=MATLAB_RTOL,
                             atol=MATLAB_ATOL, max_step=dt, first_step=dt)

    wall = median_time(run, repeat=repeat, warmup=0)
    s = out["s"]
    wb = s.y[:3].T
    q = _euler321_quat(s.y[3:].T) if euler_mode else s.y[3:].T / np.linalg.norm(s.y[3:].T, axis=1)[:, None]
    return {"method": f"scipy {method}", "mode": "euler" if euler_mode else "quaternion",
            "mse_omega_body": _mse(wb, ref["omega_body"]),
            "mse_omega_inertial": _mse(_rotate(q, wb), ref["omega_inertial"]),
            "wall_s": wall, "steps": int(s.t.size - 1), "rhs_evaluations": int(s.nfev)}


def table1(*, dt: float, t_end: float, repeat: int) -> list[dict]:
    rows = []
    for euler_mode in (False, True):
        for m in METHODS:
            rows.append(table1_engine(m, euler_mode, dt=dt, t_end=t_end, repeat=repeat))
        for m in SCIPY_METHODS:
            rows.append(table1_scipy(m, euler_mode, dt=dt, t_end=t_end, repeat=repeat))
    by = {(r["method"], r["mode"]): r for r in rows}
    for r in rows:
        peer = PEER.get(r["method"])
        if peer:
            p = by[(f"scipy {peer}", r["mode"])]
            r["peer"] = f"scipy {peer}"
            r["wall_ratio_vs_peer"] = r["wall_s"] / p["wall_s"]
    return rows


# ------------------------------------------------------------------------------------------------
# 2. Batch throughput
# ------------------------------------------------------------------------------------------------
BATCH_INERTIA = np.array([[2.0, 0.1, 0.0], [0.1, 3.0, -0.2], [0.0, -0.2, 4.0]])  # asymmetric top [kg m^2]


def _batch_rates(n: int, seed: int = 7) -> np.ndarray:
    return np.random.default_rng(seed).normal(0.0, 1.0, (n, 3))


def numpy_rk4(state: np.ndarray, h: float, steps: int, inertia: np.ndarray) -> np.ndarray:
    """The named peer: RK4 of the same rigid-body equations, vectorised over bodies with numpy.

    ``state`` [N, 13] = (position, velocity, quaternion body→inertial, ω body), no force or torque:
    ẋ = v, v̇ = 0, q̇ = ½ q ⊗ (0, ω), I ω̇ = −ω × I ω; the quaternion is renormalised after each
    step, as the engine does.
    """
    inv = np.linalg.inv(inertia)

    def f(y):
        d = np.empty_like(y)
        d[:, :3] = y[:, 3:6]
        d[:, 3:6] = 0.0
        w = y[:, 10:13]
        d[:, 6:10] = _qdot(y[:, 6:10], w)
        d[:, 10:13] = -np.cross(w, w @ inertia.T) @ inv.T
        return d

    y = state
    for _ in range(steps):
        k1 = f(y)
        k2 = f(y + 0.5 * h * k1)
        k3 = f(y + 0.5 * h * k2)
        k4 = f(y + h * k3)
        y = y + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        y[:, 6:10] /= np.linalg.norm(y[:, 6:10], axis=1)[:, None]
    return y


def _batch_world(method: str, n: int):
    from components.rigid import rigid_body
    from ecs import World
    from systems.dynamics.integration import Integrator

    w = World(f"bench-{method}")
    body = w.spawn(*rigid_body(mass=1.0, inertia=BATCH_INERTIA, omega=(0.1, 0.2, 0.3)))
    integ = w.add_system(Integrator(method))
    overrides = {(body, "body_omega"): _batch_rates(n)}
    return w, integ, overrides


def batch_throughput(n: int, *, repeat: int, rk4_frames: int, dp54_frames: int) -> dict:
    out = {"bodies": n}
    # --- engine RK4
    w, _, ov = _batch_world("rk4", n)
    h = 0.01

    def rk4():
        w.compile(samples=n, overrides=ov)
        w.run(t_end=rk4_frames * h, dt=h)

    w.compile(samples=n, overrides=ov)
    t_compile = median_time(lambda: w.compile(samples=n, overrides=ov), repeat=repeat, warmup=0)
    t_rk4 = median_time(rk4, repeat=repeat) - t_compile
    engine_rk4 = n * rk4_frames / t_rk4
    # cross-check: engine and numpy agree (same equations, same method)
    w.compile(samples=n, overrides=ov)
    r = w.run(t_end=rk4_frames * h, dt=h, final=("body_omega", "body_attitude"))
    y0 = np.zeros((n, 13))
    y0[:, 6] = 1.0
    y0[:, 10:13] = _batch_rates(n)
    y_np = numpy_rk4(y0, h, rk4_frames, BATCH_INERTIA)
    agree = float(np.abs(r.finals["body_omega"][:, 0] - y_np[:, 10:13]).max())
    del r
    t_np = median_time(lambda: numpy_rk4(y0, h, rk4_frames, BATCH_INERTIA), repeat=repeat, warmup=0)
    numpy_rate = n * rk4_frames / t_np
    out["rk4"] = {"frames": rk4_frames, "dt_s": h, "engine_s": t_rk4, "engine_body_steps_per_s": engine_rk4,
                  "numpy_s": t_np, "numpy_body_steps_per_s": numpy_rate, "speedup_vs_numpy": engine_rk4 / numpy_rate,
                  "max_abs_diff_omega_vs_numpy": agree, "compile_s": t_compile}
    del w, ov
    # --- engine DP5(4)
    w, integ, ov = _batch_world("dp54", n)
    hf = 0.1
    attempts = []

    def count(_i, _nf):
        attempts.append(int(integ.work[0].attempts.sum()))

    def dp54():
        attempts.clear()
        w.compile(samples=n, overrides=ov)
        w.run(t_end=dp54_frames * hf, dt=hf, on_frame=count)

    t_dp = median_time(dp54, repeat=repeat) - t_compile
    steps = sum(attempts)
    out["dp54"] = {"frames": dp54_frames, "frame_s": hf, "rtol": 1e-10, "atol": 1e-12, "engine_s": t_dp,
                   "step_attempts": steps, "attempts_per_body_per_frame": steps / (n * dp54_frames),
                   "engine_body_steps_per_s": steps / t_dp, "engine_body_frames_per_s": n * dp54_frames / t_dp,
                   "speedup_vs_numpy_rk4_per_step": (steps / t_dp) / numpy_rate}
    return out


# ------------------------------------------------------------------------------------------------
def _print_table1(rows):
    print("\nTable 1 (seed 002 §2.5): free precession, step 0.001 s, 5 s; MSE against the closed form")
    print("  thesis (MATLAB, ω_b / ω_e quaternions): ode45 2.60e-31 / 1.81e-30, ode23 3.00e-20 / 1.56e-20")
    hdr = f"  {'method':<22}{'mode':<12}{'MSE ω_b':>12}{'MSE ω_e':>12}{'wall [s]':>10}{'steps':>7}  ratio vs peer"
    print(hdr)
    print("  " + "-" * (len(hdr) - 2))
    for r in sorted(rows, key=lambda r: (r["mode"] != "quaternion", r["mse_omega_body"])):
        ratio = f"{r['wall_ratio_vs_peer']:.2f}x {r['peer']}" if "peer" in r else ""
        print(f"  {r['method']:<22}{r['mode']:<12}{r['mse_omega_body']:>12.3e}{r['mse_omega_inertial']:>12.3e}"
              f"{r['wall_s']:>10.3f}{r['steps']:>7}  {ratio}")


def _print_batch(b):
    r, d = b["rk4"], b["dp54"]
    print(f"\nBatch throughput, {b['bodies']:,} bodies (torque-free asymmetric top, one world, samples = bodies)")
    print(f"  {'':<28}{'wall [s]':>10}{'body-steps/s':>16}{'ratio':>10}")
    print(f"  {'engine RK4':<28}{r['engine_s']:>10.2f}{r['engine_body_steps_per_s']:>16.3e}"
          f"{r['speedup_vs_numpy']:>9.2f}x  vs numpy RK4 ({r['frames']} steps of {r['dt_s']} s)")
    print(f"  {'numpy RK4 (peer)':<28}{r['numpy_s']:>10.2f}{r['numpy_body_steps_per_s']:>16.3e}{1.0:>9.2f}x")
    print(f"  {'engine DP5(4) attempts':<28}{d['engine_s']:>10.2f}{d['engine_body_steps_per_s']:>16.3e}"
          f"{d['speedup_vs_numpy_rk4_per_step']:>9.2f}x  vs numpy RK4 per step; "
          f"{d['attempts_per_body_per_frame']:.2f} attempts/body/frame of {d['frame_s']} s")
    print(f"  engine vs numpy RK4 final ω: max |Δ| = {r['max_abs_diff_omega_vs_numpy']:.1e} rad/s")


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(prog="tumble bench integrators", description=__doc__.splitlines()[0])
    p.add_argument("--bodies", type=int, default=10**6, help="bodies of the throughput batch (default 10**6)")
    p.add_argument("--repeat", type=int, default=3, help="timed repeats (median)")
    p.add_argument("--rk4-frames", type=int, default=5)
    p.add_argument("--dp54-frames", type=int, default=2)
    p.add_argument("--t-end", type=float, default=5.0, help="Table 1 span [s] (Script 2-1: 5)")
    p.add_argument("--skip-table1", action="store_true")
    p.add_argument("--skip-batch", action="store_true")
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    info = machine_info()
    print("machine:", ", ".join(f"{k}={v}" for k, v in info.items()))
    result: dict = {"args": vars(a), "load_average_at_start": list(os.getloadavg())}
    if not a.skip_table1:
        rows = table1(dt=0.001, t_end=a.t_end, repeat=a.repeat)
        _print_table1(rows)
        result["table1"] = rows
    if not a.skip_batch:
        b = batch_throughput(a.bodies, repeat=a.repeat, rk4_frames=a.rk4_frames, dp54_frames=a.dp54_frames)
        _print_batch(b)
        result["batch"] = b
    result["wall_s"] = time.perf_counter() - t0
    result["load_average_at_end"] = list(os.getloadavg())
    print(f"load average (1, 5, 15 min) at start {result['load_average_at_start']}, at end "
          f"{result['load_average_at_end']} on {os.cpu_count()} CPUs: timings taken above ~1 per CPU are noisy")
    path = save("integrators", result)
    print(f"\nresults: {path}  ({result['wall_s']:.0f} s)")
    return result


if __name__ == "__main__":
    main()
