"""``tumble bench multibody``: steps per second of a batch of 7-joint arms in orbit, against
MuJoCo's ``rollout`` on the same chain and Pinocchio's ABA, called per sample from Python and from a
compiled C++ loop, in the same run.

The chain (:func:`arm`): a free-floating base (10 t) carrying a 7-joint serial arm of 250 kg,
2.5 m links whose revolute axes follow the SSRMS pattern roll, yaw, pitch, pitch, pitch, yaw, roll
(Canadian Space Agency, "Canadarm2" fact sheet: 7 joints, 17.6 m). Every sample starts from its own
random joint rates (seed 0) and a base on a circular 420 km orbit.

What is timed (wall time of the stepping only; models, tables and warm-ups untimed):

* **tumble**: ``World.run`` of ``--samples`` samples for ``--steps`` RK4 steps of ``--dt`` s
  (:class:`systems.multibody.dynamics.MultibodyDynamics`, one frame of all steps), in orbit: each link
  feels the point-mass Earth at its own CoM and its gravity-gradient torque. All numba threads.
* **tumble-no-gravity**: the same, without the orbital environment: the peers' problem, step for
  step the same work as theirs.
* **MuJoCo** (``mujoco.rollout``): the same chain from the same states, RK4 at the same step,
  *without* the orbital environment (no gravity: MuJoCo has none of the orbital kind), contacts
  off, one ``MjData`` per thread, as many threads as tumble has.
* **Pinocchio** (``pin.aba``): the same chain, RK4 written in Python around four ``aba`` calls per
  step (``pin.integrate`` for the configuration), one sample after the other on one core, without
  gravity; ``--pin-samples`` samples (its per-call overhead makes it slow).
* **Pinocchio C++** (``pinocchio-cpp``, :class:`PinocchioCpp`): the same RK4 around ``pinocchio::aba`` and
  ``pinocchio::integrate`` in C++ (``benchmarks/pinocchio_rk4.cpp``), the chain and states handed over
  from here, one sample after the other on one thread, without gravity, ``--pin-cpp-samples`` samples;
  timed by the program itself (``std::chrono::steady_clock`` around the stepping; process start and
  input untimed). Built once by :func:`build_pin_cpp` with g++ against the pip ``pin`` wheel's cmeel
  prefix (Pinocchio's headers and ``libpinocchio_default``, Boost's from ``cmeel-boost``, Eigen's from
  ``cmeel-eigen``), cached under ``$TUMBLE_CACHE_DIR/pinocchio-rk4/`` by a hash of the source and the
  command; left out, with the reason printed, when g++ or those are missing. ``--pin-cpp-build lib``
  (default): ``g++ -O3 -DNDEBUG -std=c++17`` with the definitions of Pinocchio's CMake targets and
  ``-DPINOCCHIO_ENABLE_TEMPLATE_INSTANTIATION``, so that ``aba``, ``integrate`` and ``addJoint`` are the
  library's compiled instantiations, the ones the Python bindings call (the library is built for
  baseline x86-64; ``-march=native`` would change Eigen's alignment and so the layout of the ``Model``
  and ``Data`` handed to it); ``native``: the same templates compiled here from the headers with
  ``-O3 -march=native -DNDEBUG -std=c++17``. ``--pin-cpp-joints``: ``JointModelRevoluteUnaligned`` as the
  Python peer (default), or ``JointModelRX/RY/RZ``.

``--repeat`` interleaved rounds (tumble, tumble-no-gravity, MuJoCo, Pinocchio, Pinocchio C++, tumble, ...) share the
machine's drift; reported: steps/s per machine and per core (steps/s divided by the threads used) of
each, medians over the rounds, the ratios per core, the load average,
:func:`benchmarks._common.machine_info`.

Before timing, the codes are checked to step the same chain: one sample without gravity, 1 s at
``--dt``, joint angles of tumble against MuJoCo, Pinocchio and Pinocchio C++ (printed; differences of
the RK4 quaternion updates aside, they agree to ~1e-9 rad; the ``lib`` build with the Python peer's
joints repeats the Python peer's arithmetic: the same angles to the bit).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
from pathlib import Path

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
def _pin_states(spec, samples: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """Pinocchio's initial configuration (base position, quaternion x y z w, joint angles 0) and each
    sample's velocity (base twist, then :func:`_rates`)."""
    q0 = np.concatenate([spec.q[0, :3], spec.q[0, [4, 5, 6, 3]], np.zeros(spec.n - 1)])
    r = _rates(samples)
    return q0, [np.concatenate([spec.qd[0], r[s]]) for s in range(samples)]


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
        self.q0, self.v0 = _pin_states(spec, samples)
        self.samples, self.steps, self.dt = samples, steps, dt
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


# ------------------------------------------------------------------------------ Pinocchio, compiled
PIN_CPP_SOURCE = Path(__file__).with_name("pinocchio_rk4.cpp")
# The definitions Pinocchio's CMake targets (lib/cmake/pinocchio/pinocchioTargets.cmake) give their users.
_PIN_DEFINES = ("-DBOOST_MPL_LIMIT_LIST_SIZE=30", "-DBOOST_MPL_LIMIT_VECTOR_SIZE=30",
                "-DBOOST_MPL_CFG_NO_PREPROCESSED_HEADERS", "-DBOOST_FUSION_INVOKE_MAX_ARITY=12")
PIN_CPP_BUILDS = {
    # aba, integrate and Model::addJoint are the instantiations compiled into the pin wheel's
    # libpinocchio_default (those the Python bindings call). That library is built for baseline x86-64
    # (SSE2, 16-byte Eigen alignment): the loop that hands it Model and Data is too (no -march=native,
    # which gives Eigen's fixed-size members 32 or 64-byte alignment and another layout: with AVX-512
    # such a build crashes in the library's aba).
    "lib": ("-O3", "-DNDEBUG", "-std=c++17", *_PIN_DEFINES, "-DPINOCCHIO_ENABLE_TEMPLATE_INSTANTIATION"),
    # the same templates compiled here from the wheel's headers for this CPU, the library unused
    "native": ("-O3", "-march=native", "-DNDEBUG", "-std=c++17", *_PIN_DEFINES),
}


def pin_cpp_prefix() -> Path | None:
    """The cmeel prefix of the pip ``pin`` package (headers, ``libpinocchio_default``) when it also has
    Eigen's headers (pip ``cmeel-eigen``) and Boost's (``cmeel-boost``), else ``None``."""
    try:
        import cmeel
    except ImportError:
        return None
    for root in cmeel.__path__:
        prefix = Path(root).parent / "cmeel.prefix"
        inc = prefix / "include"
        headers = (inc / "pinocchio" / "multibody.hpp", inc / "eigen3" / "Eigen" / "Core",
                   inc / "boost" / "version.hpp")
        if all(h.is_file() for h in headers) and (prefix / "lib" / "libpinocchio_default.so").exists():
            return prefix
    return None


def pin_cpp_command(prefix: Path, variant: str, out: Path) -> list[str]:
    """The g++ command line that builds :data:`PIN_CPP_SOURCE` into ``out`` (one job)."""
    lib = prefix / "lib"
    link = [f"-L{lib}", "-lpinocchio_default", f"-Wl,-rpath,{lib}"] if variant == "lib" else []
    return ["g++", *PIN_CPP_BUILDS[variant], f"-I{prefix / 'include'}", f"-I{prefix / 'include' / 'eigen3'}",
            str(PIN_CPP_SOURCE), "-o", str(out), *link]


def build_pin_cpp(variant: str = "lib") -> tuple[Path | None, str]:
    """The compiled RK4 loop of :data:`PIN_CPP_SOURCE` for ``variant`` (:data:`PIN_CPP_BUILDS`):
    ``(binary, "")``, built once into ``$TUMBLE_CACHE_DIR/pinocchio-rk4/`` (or a temporary directory) under
    a name that hashes the source, the command and the library, else ``(None, why)``."""
    import hashlib
    import platform
    import shutil
    import subprocess
    import tempfile

    from ecs._cache import cache_dir

    if shutil.which("g++") is None:
        return None, "no g++"
    prefix = pin_cpp_prefix()
    if prefix is None:
        return None, "no Pinocchio C++ headers and library with Eigen's (pip pin, cmeel-eigen)"
    lib = prefix / "lib" / "libpinocchio_default.so"
    cmd = pin_cpp_command(prefix, variant, Path("OUT"))
    cpu = ""
    if "-march=native" in cmd:                              # a binary for this CPU's instruction set
        try:
            with open("/proc/cpuinfo") as f:
                cpu = next((line for line in f if line.startswith("flags")), "")
        except OSError:
            cpu = platform.processor()
    key = hashlib.sha256(PIN_CPP_SOURCE.read_bytes() + "\0".join(cmd).encode()
                         + str(lib.resolve().stat().st_mtime_ns).encode() + cpu.encode()).hexdigest()[:16]
    d = cache_dir("pinocchio-rk4") or Path(tempfile.mkdtemp(prefix="pinocchio-rk4-"))
    binary = d / f"pinocchio_rk4-{variant}-{key}"
    if binary.is_file():
        return binary, ""
    tmp = binary.with_name(binary.name + f".{os.getpid()}.tmp")
    print(f"compiling {PIN_CPP_SOURCE.name} ({variant}): " + " ".join(pin_cpp_command(prefix, variant, binary)),
          flush=True)
    r = subprocess.run(pin_cpp_command(prefix, variant, tmp), capture_output=True, text=True)
    if r.returncode != 0:
        tmp.unlink(missing_ok=True)
        return None, f"g++ failed: {(r.stderr.strip().splitlines() or ['?'])[-1][:200]}"
    os.replace(tmp, binary)
    return binary, ""


class PinocchioCpp:
    """Pinocchio's ABA in a C++ RK4 loop (:data:`PIN_CPP_SOURCE`), the steps of :class:`Pinocchio` on the
    same chain and states, one sample after the other on one thread; :meth:`run` returns the loop's own
    ``steady_clock`` time (process start and input untimed)."""

    def __init__(self, binary: Path, samples: int, steps: int, dt: float, aligned: bool = False):
        spec = arm()
        rows = [float(spec.n)]
        for k in range(spec.n):
            rows += [spec.parents[k], 0.0 if k == 0 else 1.0, spec.mass[k], *spec.com[k], *spec.inertia[k].ravel(),
                     *spec.axis[k], *spec.offset[k]]
        q0, v0 = _pin_states(spec, samples)
        rows += [samples, steps, dt, float(aligned), *q0, *np.ravel(v0)]
        self.binary, self.input = binary, np.asarray(rows, dtype="<f8").tobytes()
        self.samples, self.steps = samples, steps
        self.result: dict = {}

    def run(self) -> float:
        import json
        import subprocess

        r = subprocess.run([str(self.binary)], input=self.input, capture_output=True, check=True)
        self.result = json.loads(r.stdout)
        assert self.result["samples"] == self.samples and self.result["steps"] == self.steps
        return float(self.result["seconds"])

    def angles(self) -> np.ndarray:
        """Sample 0's joint angles after the steps."""
        return np.array(self.result["q"])[None, 7:]


def _load() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


def main(argv: list[str] | None = None) -> dict:
    import numba

    p = argparse.ArgumentParser(prog="tumble bench multibody", description=__doc__.splitlines()[0])
    p.add_argument("--samples", type=int, default=256, help="tumble and MuJoCo batch size (default 256)")
    p.add_argument("--pin-samples", type=int, default=4, help="Pinocchio samples per round (default 4)")
    p.add_argument("--pin-cpp-samples", type=int, default=128,
                   help="Pinocchio C++ samples per round (default 128, ~1.3 s at 1000 steps; 0: leave it out)")
    p.add_argument("--pin-cpp-build", choices=sorted(PIN_CPP_BUILDS), default="lib",
                   help="lib: aba and integrate from the pin wheel's libpinocchio_default (default); "
                        "native: the same templates compiled from its headers with -march=native")
    p.add_argument("--pin-cpp-joints", choices=("unaligned", "rx-ry-rz"), default="unaligned",
                   help="Pinocchio C++ revolute joints: JointModelRevoluteUnaligned as the Python peer (default), "
                        "or Pinocchio's axis-specialised JointModelRX/RY/RZ")
    p.add_argument("--steps", type=int, default=1000, help="RK4 steps per sample (default 1000)")
    p.add_argument("--dt", type=float, default=0.01, help="step [s] (default 0.01)")
    p.add_argument("--repeat", type=int, default=3, help="interleaved rounds (default 3)")
    p.add_argument("--out", default=None, help="results JSON (default bench-results/multibody.json)")
    a = p.parse_args(argv)
    threads = numba.get_num_threads()
    pin_cpp, pin_cpp_skipped = None, ""
    if a.pin_cpp_samples > 0:
        pin_cpp, pin_cpp_skipped = build_pin_cpp(a.pin_cpp_build)
        if pin_cpp is None:
            print(f"Pinocchio C++ left out: {pin_cpp_skipped}")
    aligned = a.pin_cpp_joints == "rx-ry-rz"
    # the same chain in all of them: one sample, no gravity, 1 s
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
    line = (f"same chain, 1 s without gravity: joint angles tumble vs MuJoCo {check['tumble_vs_mujoco_rad']:.1e} rad, "
            f"vs Pinocchio {check['tumble_vs_pinocchio_rad']:.1e} rad")
    if pin_cpp is not None:
        pc = PinocchioCpp(pin_cpp, 1, n1, a.dt, aligned)
        pc.run()
        check["tumble_vs_pinocchio_cpp_rad"] = float(np.max(np.abs(tb.angles() - pc.angles())))
        check["pinocchio_cpp_vs_pinocchio_rad"] = float(np.max(np.abs(pc.angles() - pn.angles())))
        line += (f", vs Pinocchio C++ {check['tumble_vs_pinocchio_cpp_rad']:.1e} rad (Pinocchio C++ vs Python "
                 f"{check['pinocchio_cpp_vs_pinocchio_rad']:.1e} rad)")
    print(line)
    codes = {"tumble": Tumble(a.samples, a.steps, a.dt), "tumble-no-gravity": Tumble(a.samples, a.steps, a.dt, False),
             "mujoco": MuJoCo(a.samples, a.steps, a.dt, threads), "pinocchio": Pinocchio(a.pin_samples, a.steps, a.dt)}
    cores = {"tumble": min(threads, a.samples), "tumble-no-gravity": min(threads, a.samples),
             "mujoco": min(threads, a.samples), "pinocchio": 1}
    steps = {"tumble": a.samples * a.steps, "tumble-no-gravity": a.samples * a.steps, "mujoco": a.samples * a.steps,
             "pinocchio": a.pin_samples * a.steps}
    if pin_cpp is not None:
        codes["pinocchio-cpp"] = PinocchioCpp(pin_cpp, a.pin_cpp_samples, a.steps, a.dt, aligned)
        cores["pinocchio-cpp"], steps["pinocchio-cpp"] = 1, a.pin_cpp_samples * a.steps
    codes["tumble"].run()                                   # warm-up: numba compile / cache load
    codes["tumble-no-gravity"].run()
    rates = {k: [] for k in codes}
    loads = [_load()]
    for _ in range(a.repeat):
        for k, c in codes.items():
            rates[k].append(steps[k] / c.run())
        loads.append(_load())
    res = {"samples": a.samples, "pin_samples": a.pin_samples, "steps": a.steps, "dt": a.dt, "threads": threads,
           "check": check, "loadavg": loads, "codes": {}}
    if pin_cpp is not None:
        res["pin_cpp"] = {"samples": a.pin_cpp_samples, "build": a.pin_cpp_build, "joints": a.pin_cpp_joints,
                          "command": pin_cpp_command(pin_cpp_prefix(), a.pin_cpp_build, pin_cpp)}
    elif a.pin_cpp_samples > 0:
        res["pin_cpp"] = {"skipped": pin_cpp_skipped}
    for k in codes:
        med = statistics.median(rates[k])
        res["codes"][k] = {"steps_per_s": rates[k], "median_steps_per_s": med, "cores": cores[k],
                           "median_steps_per_s_per_core": med / cores[k]}
    per_core = {k: v["median_steps_per_s_per_core"] for k, v in res["codes"].items()}
    for t, tag in (("tumble", ""), ("tumble-no-gravity", "_no_gravity")):
        res[f"ratio_per_core_tumble{tag}_over_mujoco"] = per_core[t] / per_core["mujoco"]
        res[f"ratio_per_core_tumble{tag}_over_pinocchio"] = per_core[t] / per_core["pinocchio"]
        if "pinocchio-cpp" in per_core:
            res[f"ratio_per_core_tumble{tag}_over_pinocchio_cpp"] = per_core[t] / per_core["pinocchio-cpp"]
    for k, v in res["codes"].items():
        print(f"{k:17s}: {v['median_steps_per_s']:12.0f} steps/s on {v['cores']} core(s), "
              f"{v['median_steps_per_s_per_core']:12.0f} per core (median of {a.repeat})")
    for tag, what in (("", "tumble in orbit (per-link gravity and gradient torque; the peers without gravity)"),
                      ("_no_gravity", "tumble without gravity (the peers' problem)")):
        cpp = ""
        if "pinocchio-cpp" in per_core:
            cpp = (f", tumble / Pinocchio C++ {res[f'ratio_per_core_tumble{tag}_over_pinocchio_cpp']:.2f} "
                   f"({a.pin_cpp_build} build, {a.pin_cpp_joints} joints)")
        print(f"per core: tumble / MuJoCo {res[f'ratio_per_core_tumble{tag}_over_mujoco']:.2f}, tumble / Pinocchio "
              f"{res[f'ratio_per_core_tumble{tag}_over_pinocchio']:.1f}{cpp}: {what}")
    print("load average:", loads)
    info = machine_info()
    print("machine:", ", ".join(f"{k}={v}" for k, v in info.items()))
    path = save("multibody", res, path=a.out, machine=info)
    print(f"results: {path}")
    return res


if __name__ == "__main__":
    main()
