"""``tumble bench multibody``: steps per second of a batch of 7-joint arms in orbit, against
MuJoCo's ``rollout`` on the same chain and Pinocchio's ABA called per sample, in the same run.

The chain (:func:`arm`): a free-floating base (10 t) carrying a 7-joint serial arm of 250 kg,
2.5 m links whose revolute axes follow the SSRMS pattern roll, yaw, pitch, pitch, pitch, yaw, roll
(Canadian Space Agency, "Canadarm2" fact sheet: 7 joints, 17.6 m). Every sample starts from its own
random joint rates (seed 0) and a base on a circular 420 km orbit.

What is timed (wall time of the stepping only; models, tables and warm-ups untimed):

* **tumble**: ``World.run`` of ``--samples`` samples for ``--steps`` RK4 steps of ``--dt`` s
  (:class:`systems.multibody.dynamics.MultibodyDynamics`, one frame of all steps), in orbit: each link
  feels the point-mass Earth at its own CoM and its gravity-gradient torque. All numba threads.
* **MuJoCo** (``mujoco.rollout``): the same chain from the same states, RK4 at the same step,
  *without* the orbital environment (no gravity: MuJoCo has none of the orbital kind), contacts
  off, one ``MjData`` per thread, as many threads as tumble has.
* **Pinocchio** (``pin.aba``): the same chain, RK4 written in Python around four ``aba`` calls per
  step (``pin.integrate`` for the configuration), one sample after the other on one core, without
  gravity; ``--pin-samples`` samples (its per-call overhead makes it slow).

``--repeat`` interleaved rounds (tumble, MuJoCo, Pinocchio, tumble, ...) share the machine's
drift; reported: steps/s per machine and per core (steps/s divided by the threads used) of each,
medians over the rounds, the ratios per core, the load average, :func:`benchmarks._common.machine_info`.

Before timing, the three codes are checked to step the same chain: one sample without gravity,
1 s at ``--dt``, joint angles of tumble against MuJoCo and Pinocchio (printed; differences of the
RK4 quaternion updates aside, they agree to ~1e-9 rad).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time

import numpy as np

from benchmarks._common import machine_info, save
from components.gravity import PointMass
from components.multibody import spawn_tree, tree_spec
from ecs import World
from systems.multibody.dynamics import MultibodyDynamics

MU_EARTH = 3.986004418e14
R_ORBIT = 6378137.0 + 420e3
AXES = ([1, 0, 0], [0, 0, 1], [0, 1, 0], [0, 1, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0])   # roll yaw pitch³ yaw roll
LINK_LENGTH, LINK_MASS = 2.5, 250.0


def arm(rates=None):
    """The 8-link tree (free base + 7 revolute joints) as a :func:`components.multibody.tree_spec`."""
    n = 1 + len(AXES)
    L, m = LINK_LENGTH, LINK_MASS
    rod = [m * 0.05 ** 2, m * L * L / 12.0, m * L * L / 12.0]                # slender rod along x
    v = math.sqrt(MU_EARTH / R_ORBIT)
    q = np.zeros((n, 7))
    q[0] = [R_ORBIT, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    qd = np.zeros((n, 6))
    qd[0] = [0.0, v, 0.0, 0.0, 0.0, v / R_ORBIT]
    if rates is not None:
        qd[1:, 0] = rates
    return tree_spec(parents=list(range(-1, n - 1)), kinds=["free"] + ["revolute"] * (n - 1),
                     mass=[1e4] + [m] * (n - 1), inertia=[[1.2e4, 1.5e4, 1.8e4]] + [rod] * (n - 1),
                     com=[[0.0, 0.0, 0.0]] + [[0.5 * L, 0.0, 0.0]] * (n - 1), axis=[[0, 0, 1]] + list(AXES),
                     offset=[[0.0, 0.0, 0.0], [1.5, 0.0, 0.0]] + [[L, 0.0, 0.0]] * (n - 2), q=q, qd=qd)


def _rates(samples: int) -> np.ndarray:
    return np.random.default_rng(0).uniform(-0.05, 0.05, size=(samples, len(AXES)))


# ------------------------------------------------------------------------------ tumble
class Tumble:
    def __init__(self, samples: int, steps: int, dt: float, gravity: bool = True):
        self.world = w = World("bench-multibody")
        if gravity:
            w.add_resource(PointMass(mu=MU_EARTH))
        self.ents = spawn_tree(w, arm(), name="arm")
        w.add_system(MultibodyDynamics("rk4", substeps=steps))
        self.samples, self.steps, self.dt = samples, steps, dt
        r = _rates(samples)
        qd = np.zeros((samples, 6))
        self.over = {}
        for k, e in enumerate(self.ents[1:]):
            qd[:, 0] = r[:, k]
            self.over[(e, "joint_qd")] = qd.copy()

    def run(self) -> float:
        w = self.world
        w.compile(samples=self.samples, overrides=self.over)
        t0 = time.perf_counter()
        w.run(t_end=self.steps * self.dt, dt=self.steps * self.dt)
        return time.perf_counter() - t0

    def angles(self) -> np.ndarray:
        return self.world.tables[0]["joint_q"].reshape(self.samples, -1, 7)[:, 1:, 0]


# ------------------------------------------------------------------------------ MuJoCo
def mjcf(spec) -> str:
    """The chain as MJCF: bodies nested parent-first, the free joint on the base, hinges with the
    same axes, offsets, CoMs, masses and full inertia tensors; no gravity, no contacts."""
    def v(*a):
        return " ".join(repr(float(x)) for x in np.ravel(a))

    def body(k, depth):
        pad = "  " * depth
        I = spec.inertia[k]
        inertial = (f'<inertial pos="{v(spec.com[k])}" mass="{v(spec.mass[k])}" '
                    f'fullinertia="{v(I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2])}"/>')
        joint = '<freejoint/>' if k == 0 else f'<joint type="hinge" axis="{v(spec.axis[k])}"/>'
        kids = "".join(body(c, depth + 1) for c in range(spec.n) if spec.parents[c] == k)
        pos = v(spec.offset[k])
        return f'\n{pad}<body name="l{k}" pos="{pos}">{inertial}{joint}{kids}\n{pad}</body>'
    return ('<mujoco><option timestep="{dt}" integrator="RK4" gravity="0 0 0"><flag contact="disable"/></option>'
            f'<worldbody>{body(0, 1)}\n</worldbody></mujoco>')


class MuJoCo:
    def __init__(self, samples: int, steps: int, dt: float, threads: int):
        import mujoco
        import mujoco.rollout

        self.mj, self.rollout = mujoco, mujoco.rollout
        spec = arm()
        self.model = mujoco.MjModel.from_xml_string(mjcf(spec).replace("{dt}", repr(dt)))
        self.datas = [mujoco.MjData(self.model) for _ in range(threads)]
        d = self.datas[0]
        size = mujoco.mj_stateSize(self.model, mujoco.mjtState.mjSTATE_FULLPHYSICS)
        self.state0 = np.zeros((samples, size))
        r = _rates(samples)
        for s in range(samples):
            mujoco.mj_resetData(self.model, d)
            d.qpos[:7] = spec.q[0]
            d.qvel[:6] = spec.qd[0]
            d.qvel[6:] = r[s]
            mujoco.mj_getState(self.model, d, self.state0[s], mujoco.mjtState.mjSTATE_FULLPHYSICS)
        self.steps = steps
        self.rollout.rollout(self.model, self.datas, self.state0[:2], nstep=2)       # warm-up

    def run(self) -> float:
        t0 = time.perf_counter()
        self.state, _ = self.rollout.rollout(self.model, self.datas, self.state0, nstep=self.steps)
        return time.perf_counter() - t0

    def angles(self) -> np.ndarray:
        # full-physics state: time, then qpos (7 free + 7 hinges), ...
        return self.state[:, -1, 1 + 7:1 + 14]


# ------------------------------------------------------------------------------ Pinocchio
class Pinocchio:
    def __init__(self, samples: int, steps: int, dt: float):
        import pinocchio as pin

        self.pin = pin
        spec = arm()
        m = pin.Model()
        ids = [0]
        for k in range(spec.n):
            R = np.eye(3)
            place = pin.SE3(R, spec.offset[k].copy())
            if k == 0:
                j = m.addJoint(0, pin.JointModelFreeFlyer(), place, "base")
            else:
                j = m.addJoint(ids[spec.parents[k] + 1], pin.JointModelRevoluteUnaligned(spec.axis[k].copy()),
                               place, f"j{k}")
            m.appendBodyToJoint(j, pin.Inertia(float(spec.mass[k]), spec.com[k].copy(), spec.inertia[k].copy()),
                                pin.SE3.Identity())
            ids.append(j)
        m.gravity.linear[:] = 0.0
        self.model, self.data = m, m.createData()
        self.q0 = np.concatenate([spec.q[0, :3], spec.q[0, [4, 5, 6, 3]], np.zeros(7)])      # pin: (x, y, z, w)
        self.samples, self.steps, self.dt = samples, steps, dt
        r = _rates(samples)
        self.v0 = [np.concatenate([spec.qd[0], r[s]]) for s in range(samples)]
        self.tau = np.zeros(m.nv)

    def _f(self, q, v):
        return self.pin.aba(self.model, self.data, q, v, self.tau)

    def run(self) -> float:
        pin, m, h = self.pin, self.model, self.dt
        out = []
        t0 = time.perf_counter()
        for s in range(self.samples):
            q, v = self.q0.copy(), self.v0[s].copy()
            for _ in range(self.steps):
                a1 = self._f(q, v)
                v2 = v + 0.5 * h * a1
                a2 = self._f(pin.integrate(m, q, 0.5 * h * v), v2)
                v3 = v + 0.5 * h * a2
                a3 = self._f(pin.integrate(m, q, 0.5 * h * v2), v3)
                v4 = v + h * a3
                a4 = self._f(pin.integrate(m, q, h * v3), v4)
                q = pin.integrate(m, q, h / 6.0 * (v + 2.0 * v2 + 2.0 * v3 + v4))
                v = v + h / 6.0 * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
            out.append(q[7:].copy())
        self.q = np.array(out)
        return time.perf_counter() - t0

    def angles(self) -> np.ndarray:
        return self.q


def _load() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


def main(argv: list[str] | None = None) -> dict:
    import numba

    p = argparse.ArgumentParser(prog="tumble bench multibody", description=__doc__.splitlines()[0])
    p.add_argument("--samples", type=int, default=256, help="tumble and MuJoCo batch size (default 256)")
    p.add_argument("--pin-samples", type=int, default=4, help="Pinocchio samples per round (default 4)")
    p.add_argument("--steps", type=int, default=1000, help="RK4 steps per sample (default 1000)")
    p.add_argument("--dt", type=float, default=0.01, help="step [s] (default 0.01)")
    p.add_argument("--repeat", type=int, default=3, help="interleaved rounds (default 3)")
    p.add_argument("--out", default=None, help="results JSON (default bench-results/multibody.json)")
    a = p.parse_args(argv)
    threads = numba.get_num_threads()
    # the same chain in all three: one sample, no gravity, 1 s
    n1 = max(1, round(1.0 / a.dt))
    check = {}
    tb = Tumble(1, n1, a.dt, gravity=False)
    tb.run()
    mj = MuJoCo(1, n1, a.dt, 1)
    mj.run()
    pn = Pinocchio(1, n1, a.dt)
    pn.run()
    check["tumble_vs_mujoco_rad"] = float(np.max(np.abs(tb.angles() - mj.angles())))
    check["tumble_vs_pinocchio_rad"] = float(np.max(np.abs(tb.angles() - pn.angles())))
    print(f"same chain, 1 s without gravity: joint angles tumble vs MuJoCo {check['tumble_vs_mujoco_rad']:.1e} rad, "
          f"vs Pinocchio {check['tumble_vs_pinocchio_rad']:.1e} rad")
    codes = {"tumble": Tumble(a.samples, a.steps, a.dt), "mujoco": MuJoCo(a.samples, a.steps, a.dt, threads),
             "pinocchio": Pinocchio(a.pin_samples, a.steps, a.dt)}
    codes["tumble"].run()                                   # warm-up: numba compile / cache load
    cores = {"tumble": min(threads, a.samples), "mujoco": min(threads, a.samples), "pinocchio": 1}
    steps = {"tumble": a.samples * a.steps, "mujoco": a.samples * a.steps, "pinocchio": a.pin_samples * a.steps}
    rates = {k: [] for k in codes}
    loads = [_load()]
    for _ in range(a.repeat):
        for k, c in codes.items():
            rates[k].append(steps[k] / c.run())
        loads.append(_load())
    res = {"samples": a.samples, "pin_samples": a.pin_samples, "steps": a.steps, "dt": a.dt, "threads": threads,
           "check": check, "loadavg": loads, "codes": {}}
    for k in codes:
        med = statistics.median(rates[k])
        res["codes"][k] = {"steps_per_s": rates[k], "median_steps_per_s": med, "cores": cores[k],
                           "median_steps_per_s_per_core": med / cores[k]}
    per_core = {k: v["median_steps_per_s_per_core"] for k, v in res["codes"].items()}
    res["ratio_per_core_tumble_over_mujoco"] = per_core["tumble"] / per_core["mujoco"]
    res["ratio_per_core_tumble_over_pinocchio"] = per_core["tumble"] / per_core["pinocchio"]
    for k, v in res["codes"].items():
        print(f"{k:9s}: {v['median_steps_per_s']:12.0f} steps/s on {v['cores']} core(s), "
              f"{v['median_steps_per_s_per_core']:12.0f} per core (median of {a.repeat})")
    print(f"per core: tumble / MuJoCo {res['ratio_per_core_tumble_over_mujoco']:.2f}, tumble / Pinocchio "
          f"{res['ratio_per_core_tumble_over_pinocchio']:.1f} (tumble in orbit: per-link gravity and gradient "
          f"torque; the peers without gravity)")
    print("load average:", loads)
    info = machine_info()
    print("machine:", ", ".join(f"{k}={v}" for k, v in info.items()))
    path = save("multibody", res, path=a.out, machine=info)
    print(f"results: {path}")
    return res


if __name__ == "__main__":
    main()
