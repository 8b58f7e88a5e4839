"""The multibody kernels' GPU twins (``DualKernel.gpu``, the same sources with every callee swapped
for its CUDA twin) run through numba's CUDA simulator and agree with the CPU build: ABA, RNEA and
an RK4 step with per-link gravity, one thread per sample. The simulator must be enabled before
numba.cuda is imported, so the comparison runs in a subprocess (as tests/test_gpu_sim.py does).
A real device would be checked by a ``gpu``-marked test once a GPU driver of the system exists."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from sim_helpers import run_simulated

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent(
    """
    import json, numpy as np
    from numba import cuda
    from components.multibody import Tree, tree_spec
    from ecs.stepping import TABLEAUX
    from ecs.terms import no_terms_args
    from systems.multibody.spatial import new_scratch
    from systems.multibody.algorithms import aba, rnea
    from systems.multibody.kernels import STATE, rk_step
    from systems.multibody.records import Loads, Scratch, Stepper

    rng = np.random.default_rng(3)
    E, S = 5, 3
    specs = []
    for s in range(S):
        q = np.zeros((E, 7)); q[0, :3] = (7e6, 1e3, -2e3); q[0, 3:] = (1, 0, 0, 0); q[2, :4] = (0.6, 0.8, 0, 0)
        q[1, 0], q[3, 0], q[4, 0] = rng.normal(size=3)
        qd = np.zeros((E, 6)); qd[0] = (0, 7.5e3, 0, 1e-3, 2e-3, 1e-3); qd[1, 0], qd[3, 0], qd[4, 0] = rng.normal(size=3)
        qd[2, :3] = rng.normal(size=3)
        specs.append(tree_spec(parents=[-1, 0, 1, 0, 3], kinds=["free", "revolute", "spherical", "prismatic", "revolute"],
                               mass=rng.uniform(1, 3, E), inertia=rng.uniform(1, 2, (E, 3)), com=rng.normal(size=(E, 3)) * 0.2,
                               axis=rng.normal(size=(E, 3)), offset=rng.normal(size=(E, 3)), q=q, qd=qd,
                               viscous=[0, 0.1, 0.1, 0.1, 0.1]))
    cat = lambda name: np.ascontiguousarray(np.concatenate([getattr(sp, name) for sp in specs]))
    parent = np.concatenate([sp.parents + (sp.parents >= 0) * s * E for s, sp in enumerate(specs)])
    model = Tree(parent, *(cat(c) for c in ("kind", "axis", "offset", "rotation", "q", "qd", "locked", "mass", "com",
                                            "inertia")))
    n = S * E
    tau, fext, a0 = rng.normal(size=(n, 6)), rng.normal(size=(n, 6)), np.zeros(6)
    for r in range(n):        # unused slots of tau stay zero
        k = model.kind[r]; nv = (0, 1, 1, 3, 6)[k]; tau[r, nv:] = 0.0

    out = {}
    # ABA
    ga = aba.gpu
    @cuda.jit
    def k_aba(ns, E, tree, tau, fext, a0, qdd, M, V):
        s = cuda.grid(1)
        if s < ns:
            ga(s * E, E, tree, tau, fext, a0, qdd, M, V)
    M, V = new_scratch(n); qdd_c = np.zeros((n, 6))
    for s in range(S):
        aba.cpu(s * E, E, model, tau, fext, a0, qdd_c, M, V)
    M, V = new_scratch(n); qdd_g = np.zeros((n, 6))
    k_aba[1, S](S, E, model, tau, fext, a0, qdd_g, M, V)
    out["aba"] = float(np.max(np.abs(qdd_c - qdd_g)))
    # RNEA
    gr = rnea.gpu
    @cuda.jit
    def k_rnea(ns, E, tree, qdd, fext, a0, t, M, V):
        s = cuda.grid(1)
        if s < ns:
            gr(s * E, E, tree, qdd, fext, a0, t, M, V)
    t_c, t_g = np.zeros((n, 6)), np.zeros((n, 6))
    M, V = new_scratch(n)
    for s in range(S):
        rnea.cpu(s * E, E, model, qdd_c, fext, a0, t_c, M, V)
    M, V = new_scratch(n)
    k_rnea[1, S](S, E, model, qdd_c, fext, a0, t_g, M, V)
    out["rnea"] = float(np.max(np.abs(t_c - t_g)))
    out["rnea_vs_tau"] = float(np.max(np.abs(t_c - tau)))
    # one RK4 step in point-mass gravity
    tab = TABLEAUX["rk4"]
    gs = rk_step.gpu
    @cuda.jit
    def k_step(ns, E, stepper, tree, load, work, t0, mode0, env, tt):
        s = cuda.grid(1)
        if s < ns:
            gs(s * E, E, stepper, tree, load, work, t0, mode0, env, tt)
    res = []
    for mode in ("cpu", "gpu"):
        st = Tree(*(a.copy() for a in model))
        load = Loads(tau, cat("law"), np.zeros((n, 3)), np.zeros((n, 3)), 3.986e14, 1, a0)
        work = Scratch(np.zeros((n, STATE)), np.zeros((n, STATE)), np.zeros((n, 4, STATE)), np.zeros((n, 6)),
                       np.zeros((n, 6)), np.zeros((n, 6)), np.zeros((n, 3, 3)), np.zeros((n, 3)), *new_scratch(n))
        extra = (load, work, 0.0, 0, np.zeros((n, 6)), no_terms_args())
        step = Stepper(1.0, tab.weights, 4)
        if mode == "cpu":
            for s in range(S):
                rk_step.cpu(s * E, E, step, st, *extra)
        else:
            k_step[1, S](S, E, step, st, *extra)
        res.append(np.concatenate([st.q, st.qd], axis=1))
    out["rk_step"] = float(np.max(np.abs(res[0] - res[1])))
    out["rk_moved"] = float(np.max(np.abs(res[0][:, 7:] - model.qd)))
    print(json.dumps(out))
    """
)


def test_multibody_kernels_cpu_and_cuda_simulator_agree():
    out = run_simulated(SCRIPT)
    # the simulator runs the same Python arithmetic: identical results
    assert out["aba"] == 0.0 and out["rnea"] == 0.0 and out["rk_step"] == 0.0, out
    assert out["rnea_vs_tau"] < 1e-9, out          # RNEA(ABA(tau)) = tau: the twins solve the same equations
    assert out["rk_moved"] > 1e-3, out             # the step did something


WORLD_SCRIPT = textwrap.dedent(
    """
    import json, numpy as np
    from components.multibody import Joint
    from scenes.dumbbell import build

    out = {}
    for method, gravity in (("rk4", "differential"), ("kuo_nguyen", "full")):
        res = {}
        for backend in ("cpu", "gpu"):
            w = build(t_end=50.0, dt=5.0, method=method, gravity=gravity).world
            root = w.entity("dumbbell.link0")
            qd = np.array(w.component(root, Joint).qd)
            draws = np.array([qd, qd + [0, 0, 0, 0, 0, 1e-4]])
            w.compile(samples=2, backend=backend, overrides={(root, "joint_qd"): draws})
            res[backend] = w.run(t_end=50.0, dt=5.0, final=("joint_q", "joint_qd", "link_com_position")).finals
        out[method] = max(float(np.max(np.abs(res["cpu"][c] - res["gpu"][c]))) for c in res["cpu"])
    print(json.dumps(out))
    """
)


def test_multibody_system_on_the_gpu_backend_matches_the_cpu_under_the_simulator():
    """MultibodyDynamics with backend="gpu" (the same row function launched as a CUDA kernel, one
    thread per sample) under numba's CUDA simulator: final states identical to the CPU backend
    for RK4 with differential gravity and for Kuo–Nguyen, two dispersed samples of the dumbbell."""
    out = run_simulated(WORLD_SCRIPT)
    assert out["rk4"] == 0.0 and out["kuo_nguyen"] == 0.0, out


TERMS_SCRIPT = textwrap.dedent(
    """
    import json, math, numpy as np
    from components.environment import Cannonball, ExponentialAtmosphere
    from components.gravity import SphericalHarmonics
    from components.multibody import Tree, tree_spec
    from ecs import World
    from scenes.assets import EGM2008_GFC
    from components.ephemeris import Ephemeris
    from systems.forces.drag import AtmosphericDrag
    from systems.gravity.fields import GravitySystem
    from systems.multibody.dynamics import MultibodyDynamics
    from systems.forces.solar_pressure import SolarRadiationPressure
    from systems.gravity.third_body import ThirdBodyGravity

    earth = SphericalHarmonics.from_gfc(EGM2008_GFC, degree=4)
    eph = Ephemeris.de421(2460676.5, 600.0)
    r = 6378137.0 + 420e3
    v = math.sqrt(earth.mu / r)
    spec = tree_spec(parents=[-1, 0], kinds=["free", "revolute"], mass=[500.0, 50.0],
                     inertia=[[100.0, 120.0, 140.0], [5.0, 6.0, 7.0]], offset=[[0, 0, 0], [1.0, 0, 0]],
                     q=[[r, 0, 0, 1, 0, 0, 0], [0.3] + [0] * 6], qd=[[0, v, 0, 0, 0, 0.001], [0.01] + [0] * 5])
    res = {}
    for backend, drag in (("cpu", True), ("gpu", True), ("cpu", False)):
        w = World("terms-gpu")
        ents = []
        for k in range(spec.n):
            p = int(spec.parents[k])
            ents.append(w.spawn(*spec.components(k, ents[p] if p >= 0 else -1), Cannonball(area=20.0)))
        w.add_resource(eph)
        w.add_system(GravitySystem(earth, spin=7.292115e-5, gradient_torque=True))
        w.add_system(ThirdBodyGravity())
        w.add_system(AtmosphericDrag(ExponentialAtmosphere(rotation=7.292115e-5 if drag else 0.0)))
        w.add_system(SolarRadiationPressure())
        w.add_system(MultibodyDynamics(substeps=2))
        w.compile(samples=2, backend=backend)
        f = w.run(t_end=60.0, dt=10.0, final=("joint_q", "joint_qd")).finals
        res[(backend, drag)] = np.concatenate([f["joint_q"].reshape(-1), f["joint_qd"].reshape(-1)])
    print(json.dumps({"gpu_vs_cpu": float(np.max(np.abs(res[("gpu", True)] - res[("cpu", True)]))),
                      "drag_effect": float(np.max(np.abs(res[("cpu", True)] - res[("cpu", False)])))}))
    """
)


def test_multibody_row_terms_on_the_gpu_backend_match_the_cpu_under_the_simulator():
    """The environment's row terms fused into the multibody kernels (EGM2008 in the turning Earth
    frame with the gradient torque, Sun/Moon, drag, SRP: the set the orbit tests fly, so its CPU
    build is shared) and launched through their CUDA twins under numba's CUDA simulator: final
    states identical to the CPU backend; the drag term did act (the same run with the atmosphere
    not turning lands elsewhere)."""
    pytest.importorskip("de421")
    out = run_simulated(TERMS_SCRIPT)
    assert out["gpu_vs_cpu"] == 0.0 and out["drag_effect"] > 1e-9, out


LINK_CONTACT_SCRIPT = textwrap.dedent(
    """
    import json, numpy as np
    from components.contact import PairInteractions, SpringInteraction, point_facet
    from components.multibody import Tree, tree_spec
    from ecs import World
    from systems.facets.contact import FacetContact
    from systems.multibody.dynamics import MultibodyDynamics

    res = {}
    for backend in ("cpu", "gpu"):
        w = World("links-gpu")
        w.add_resource(PairInteractions()).register(
            "steel", "steel", SpringInteraction(k=1e4, c=100.0, mu=0.3, mode="clamp", slip_velocity=1e-3))
        for x, v in (((0.0, 0.0, 0.0), (0.0, 0.0, 0.0)), ((1.9, 0.4, 0.1), (-1.0, 0.0, 0.0))):
            spec = tree_spec(parents=[-1], kinds=["free"], mass=[100.0], inertia=[[40.0, 50.0, 60.0]],
                             q=[list(x) + [1.0, 0.0, 0.0, 0.0]], qd=[list(v) + [0.0, 0.0, 2.0]], field="ball")
            e = w.spawn(*spec.components(0, -1))
            w.spawn(point_facet(e, radius=1.0, material="steel"))
        w.add_system(FacetContact())
        w.add_system(MultibodyDynamics("rk4", substeps=1))
        w.compile(samples=2, backend=backend)
        f = w.run(t_end=0.3, dt=0.005, final=("joint_q", "joint_qd")).finals
        ev, cnt = w.events.to_host()
        res[backend] = (np.concatenate([f["joint_q"].reshape(-1), f["joint_qd"].reshape(-1)]),
                        cnt.tolist(), ev["contact_time"][:, :2].tolist(), ev["contact_change"][:, :2].tolist())
    c, g = res["cpu"], res["gpu"]
    print(json.dumps({"gpu_vs_cpu": float(np.max(np.abs(g[0] - c[0]))), "same_events": c[1:] == g[1:],
                      "changes": c[3]}))
    """
)


def test_facet_contact_between_links_on_the_gpu_backend_matches_the_cpu_under_the_simulator():
    """FacetContact with its facets on links (the multibody solve's sample term, kernels copied with
    the swap) launched through the CUDA twins under numba's CUDA simulator: two spinning spheres on
    free links in an oblique, damped, frictional contact; final joint states identical to the CPU
    backend and the same contact start and end events."""
    out = run_simulated(LINK_CONTACT_SCRIPT)
    assert out["gpu_vs_cpu"] == 0.0 and out["same_events"] and out["changes"] == [[1, 2], [1, 2]], out


JOINT_LAW_SCRIPT = textwrap.dedent(
    """
    import json, numpy as np
    from scenes.examples.joint_servo import build, tracking_error

    res = {}
    for backend in ("cpu", "gpu"):
        sc = build(kp=8.0, kd=1.2, rate=0.5, t_end=2.0)
        link = sc.world.entity("arm.link0")
        sc.world.compile(samples=2, backend=backend, overrides={(link, "servo_kp"): np.array([8.0, 5.0])})
        res[backend] = sc.world.run(t_end=2.0, dt=0.01, final=("joint_q",)).finals["joint_q"].reshape(2, -1)[:, 0]
    closed = [1.0 - float(tracking_error(2.0, kp=k, kd=1.2, rate=0.5)) for k in (8.0, 5.0)]
    print(json.dumps({"gpu_vs_cpu": float(np.max(np.abs(res["gpu"] - res["cpu"]))),
                      "vs_closed_form": float(np.max(np.abs(res["gpu"] - closed)))}))
    """
)


def test_a_user_joint_law_on_the_gpu_backend_matches_the_cpu_under_the_simulator():
    """The rate servo of scenes/examples/joint_servo.py (an ecs.terms.JointLaw, a user's njit kernel)
    launched through the multibody kernels' CUDA twins under numba's CUDA simulator, two samples
    with their own gains: final joint angles identical to the CPU backend, and each on its closed
    form (1e-10 rad)."""
    out = run_simulated(JOINT_LAW_SCRIPT)
    assert out["gpu_vs_cpu"] == 0.0 and out["vs_closed_form"] < 1e-10, out
