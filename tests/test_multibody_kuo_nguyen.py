"""The Kuo–Nguyen integrator (seed 001, "Numerical considerations — integration";
systems/multibody/kernels.py ``_kuo_nguyen_step``, ``MultibodyDynamics("kuo_nguyen")``).

Seed 001's formulas, for the root's orbital DOFs (jerk from a backward difference)

    x(t+h) = x + ẋ h + [2/3 ẍ(t) − 1/6 ẍ(t−h)] h²,    ẋ(t+h) = ẋ + 3/2 ẍ(t) h − 1/2 ẍ(t−h) h

and Euler–Cromer for every other DOF. Checked: (1) the system flies exactly these recursions
(evaluated here in numpy from the slide) for a point-mass orbit; (2) the local error of the orbit
step is O(h⁴) (a third-order Taylor step, ratio 16 per halving), while the velocity recursion is
Adams–Bashforth 2 so the global orbit error is O(h²) (ratio 4): both measured; (3) the multibody
DOFs converge at first order (Euler–Cromer, ratio 2)."""

from __future__ import annotations

import math

import numpy as np

from components.gravity import PointMass
from components.multibody import spawn_tree, tree_spec
from ecs import World
from scenes.dumbbell import MU_EARTH, R_EARTH
from systems.multibody.dynamics import MultibodyDynamics
from ecs.terms import no_terms_args
from systems.multibody.spatial import new_scratch
from systems.multibody.kernels import STATE, kuo_nguyen_step
from systems.multibody.records import Loads, Scratch

R = R_EARTH + 400e3
V = math.sqrt(MU_EARTH / R)
PERIOD = 2.0 * math.pi * math.sqrt(R ** 3 / MU_EARTH)


def _g(x):
    return -MU_EARTH * x / np.linalg.norm(x) ** 3


def _point(q0, qd0):
    return tree_spec(parents=[-1], kinds=["free"], mass=[10.0], inertia=[[2.0, 2.0, 2.0]], q=[q0], qd=[qd0])


def _fly(spec, steps, T):
    w = World("kn")
    w.add_resource(PointMass(mu=MU_EARTH))
    spawn_tree(w, spec)
    w.add_system(MultibodyDynamics("kuo_nguyen"))
    return w.run(t_end=T, dt=T / steps, record_every=1, record=("link_position",)).trajectories["link_position"][0, :, 0]


def test_the_system_flies_the_slides_recursion():
    """A non-rotating sphere on a circular orbit, 1120 steps of 5 s: the system's positions against
    the seed's two formulas iterated in numpy (first step with ẍ(t−h) = ẍ(t)): equal to 1e-6 m
    (round-off of 7e6 m coordinates over 1120 steps; measured printed)."""
    steps = 1120
    h = PERIOD / steps
    xs = _fly(_point([R, 0, 0, 1, 0, 0, 0], [0, V, 0, 0, 0, 0]), steps, PERIOD)
    x, v = np.array([R, 0.0, 0.0]), np.array([0.0, V, 0.0])
    a_prev = None
    worst = 0.0
    for k in range(steps):
        a = _g(x)
        ap = a if a_prev is None else a_prev
        x, v = x + v * h + (2.0 / 3.0 * a - 1.0 / 6.0 * ap) * h * h, v + 1.5 * a * h - 0.5 * ap * h
        a_prev = a
        worst = max(worst, float(np.linalg.norm(xs[k + 1] - x)))
    print(f"\nKuo–Nguyen system vs the slide's recursion: {worst:.2e} m over one orbit")
    assert worst <= 1e-6


def test_orbit_step_is_third_order_locally_and_second_order_globally():
    # local: one step from the exact circular state at t = h with the exact ẍ(0)
    n = V / R
    exact = lambda t: np.array([R * math.cos(n * t), R * math.sin(n * t), 0.0])          # noqa: E731
    exact_v = lambda t: np.array([-V * math.sin(n * t), V * math.cos(n * t), 0.0])        # noqa: E731
    local = []
    for h in (40.0, 20.0, 10.0):
        spec = _point(list(exact(h)) + [1, 0, 0, 0], list(exact_v(h)) + [0, 0, 0])
        M, Vs = new_scratch(1)
        K = np.zeros((1, 2, STATE))
        K[0, 1, 7:10] = _g(exact(0.0))
        q, qd = spec.q.copy(), spec.qd.copy()
        z3, z6 = np.zeros((1, 3)), np.zeros((1, 6))
        kuo_nguyen_step.cpu(0, 1, h, spec.record(q, qd), Loads(z6, spec.law, z3, z3, MU_EARTH, 0, np.zeros(6)),
                            Scratch(np.zeros((1, STATE)), np.zeros((1, STATE)), K, z6.copy(), z6.copy(), z6.copy(),
                                    np.zeros((1, 3, 3)), np.zeros((1, 3)), M, Vs),
                            0.0, 0, np.zeros((1, 6)), no_terms_args())
        local.append(float(np.linalg.norm(q[0, :3] - exact(2 * h))))
    # global: one orbit
    glob = []
    for steps in (2240, 4480):
        xs = _fly(_point([R, 0, 0, 1, 0, 0, 0], [0, V, 0, 0, 0, 0]), steps, PERIOD)
        glob.append(float(np.linalg.norm(xs[-1] - [R, 0.0, 0.0])))
    rl = (local[0] / local[1], local[1] / local[2])
    rg = glob[0] / glob[1]
    print(f"\nlocal errors {local} (ratios {rl[0]:.2f}, {rl[1]:.2f}); global errors {glob} (ratio {rg:.2f})")
    assert all(14.0 <= x <= 18.0 for x in rl), "local error must be O(h^4): a third-order step"
    assert 3.6 <= rg <= 4.4, "global orbit error O(h^2): the velocity recursion is Adams-Bashforth 2"


def test_multibody_dofs_converge_at_first_order():
    """A free three-link chain (revolute, spherical) without gravity, 20 s: joint coordinates
    against an RK4 solution at 1 ms; error ratio 2 per halving (Euler–Cromer), within [1.9, 2.1]."""
    spec = tree_spec(parents=[-1, 0, 1], kinds=["free", "revolute", "spherical"], mass=[5.0, 2.0, 1.0],
                     inertia=[[1.0, 1.5, 2.0]] * 3, axis=[[0, 0, 1], [0, 1, 0], [0, 0, 1]],
                     offset=[[0, 0, 0], [1.0, 0.2, 0], [1.0, 0, 0]],
                     qd=[[0.1, 0, 0, 0.1, 0.2, 0.3], [0.5, 0, 0, 0, 0, 0], [0.2, -0.1, 0.3, 0, 0, 0]])

    def run(method, steps):
        w = World(method)
        spawn_tree(w, spec)
        w.add_system(MultibodyDynamics(method))
        return w.run(t_end=20.0, dt=20.0 / steps, final=("joint_q",)).finals["joint_q"][0]

    ref = run("rk4", 20000)
    e = [float(np.max(np.abs(run("kuo_nguyen", s)[1:] - ref[1:]))) for s in (2000, 4000, 8000)]
    print(f"\nmultibody DOF errors {e}")
    assert all(1.9 <= e[i] / e[i + 1] <= 2.1 for i in range(2))
