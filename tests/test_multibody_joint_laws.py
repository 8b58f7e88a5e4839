"""Joint spring-dampers and end stops (components.multibody.JointSpring, JointLimit) against the
closed forms of a one-degree-of-freedom oscillator: a single link on a revolute or prismatic joint
to the inertial frame (no gravity), I θ̈ = −k (θ − θ0) − c θ̇ with I the link's moment of inertia
about the joint axis (or its mass for a prismatic joint)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from components.multibody import spawn_tree, tree_spec
from ecs import World
from ecs.errors import InputError
from systems.multibody.dynamics import MultibodyDynamics


def _oscillator(kind, k, c=0.0, rest=0.0, q0=0.3, **law):
    m, d = 2.0, 0.4
    Izz = 0.5
    spec = tree_spec(parents=[-1], kinds=[kind], mass=[m], inertia=[[0.3, 0.4, Izz]], com=[[d, 0.0, 0.0]],
                     axis=[[0, 0, 1]], q=[[q0] + [0] * 6], stiffness=[k], damping=[c], rest=[rest], **law)
    inertia = Izz + m * d * d if kind == "revolute" else m
    return spec, inertia


def _run(spec, T, dt, substeps=10):
    w = World("osc")
    spawn_tree(w, spec)
    w.add_system(MultibodyDynamics(substeps=substeps))
    r = w.run(t_end=T, dt=dt, record_every=1, record=("joint_q", "joint_qd"))
    return r.times, r.trajectories["joint_q"][0, :, 0, 0], r.trajectories["joint_qd"][0, :, 0, 0]


@pytest.mark.parametrize("kind", ["revolute", "prismatic"])
def test_damped_spring_matches_the_closed_form(kind):
    """x(t) = x0 e^{−ζ ω t} (cos ω_d t + ζ/sqrt(1 − ζ²) sin ω_d t) about the rest position;
    RK4 at 1 ms: agreement to 1e-9 of the amplitude over 10 s (measured 5.0e-12 revolute, 1.2e-12
    prismatic)."""
    k, c, rest, q0 = 8.0, 0.3, 0.1, 0.4
    spec, I = _oscillator(kind, k, c, rest, q0)
    t, q, _ = _run(spec, 10.0, 0.01)
    wn = math.sqrt(k / I)
    z = c / (2.0 * math.sqrt(k * I))
    wd = wn * math.sqrt(1.0 - z * z)
    x0 = q0 - rest
    closed = rest + x0 * np.exp(-z * wn * t) * (np.cos(wd * t) + z / math.sqrt(1 - z * z) * np.sin(wd * t))
    err = float(np.max(np.abs(q - closed))) / x0
    print(f"\n{kind}: max |q - closed form| / amplitude = {err:.2e}")
    assert err <= 1e-9
    assert abs(q[-1] - rest) < 0.5 * x0, "the damper must have taken energy out"


def test_undamped_spring_conserves_energy():
    k = 5.0
    spec, I = _oscillator("revolute", k, q0=0.5)
    t, q, qd = _run(spec, 20.0, 0.01)
    E = 0.5 * I * qd ** 2 + 0.5 * k * q ** 2
    assert np.max(np.abs(E - E[0])) / E[0] <= 1e-10


def test_end_stop_holds_a_driven_joint_at_its_static_deflection():
    """A constant torque τ drives the joint into its upper stop (penalty k_l, damping c_l): it comes
    to rest at upper + τ/k_l (static equilibrium) — to 1e-9 rad after 30 s."""
    tau, kl, upper = 0.8, 400.0, 0.25
    spec, I = _oscillator("revolute", 0.0, q0=0.0, lower=[-0.25], upper=[upper], limit_stiffness=[kl],
                          limit_damping=[12.0])
    w = World("stop")
    spawn_tree(w, spec)
    w.add_system(MultibodyDynamics(substeps=20))
    (t,) = w.compile()
    t["joint_tau"][0, 0] = tau
    r = w.run(t_end=30.0, dt=0.1, record_every=1, record=("joint_q",))
    q = r.trajectories["joint_q"][0, :, 0, 0]
    assert q.max() > upper, "the joint must have reached the stop"
    assert abs(q[-1] - (upper + tau / kl)) <= 1e-9


@pytest.mark.parametrize("change,field,rule", [
    (dict(kinds=["spherical"], stiffness=[1.0]), "tree.stiffness[0]", "must be 0 for a spherical joint"),
    (dict(kinds=["revolute"], lower=[0.5], upper=[0.1], limit_stiffness=[10.0]), "tree.lower[0]", "<= upper"),
    (dict(kinds=["revolute"], damping=[-1.0]), "tree.damping[0]", ">= 0"),
])
def test_bad_joint_laws_are_refused(change, field, rule):
    with pytest.raises(InputError) as e:
        tree_spec(**{"parents": [-1], "mass": [1.0], "inertia": [[1.0, 1.0, 1.0]], **change})
    assert str(e.value).startswith(field + " = ") and rule in str(e.value), str(e.value)


def test_commanded_torque_series_drives_a_joint_with_zero_order_hold():
    """A motor command (JointCommand + JointCommands) from a torque ramp 0 → 2 N m over 10 s on a
    link's revolute joint to the inertial frame: sampled at each frame start and held (a digital
    command). Within a frame the acceleration is constant, so the exact motion is the recursion
    θ ← θ + ω h + τ_k h²/(2I), ω ← ω + τ_k h/I with τ_k the ramp at the frame start; RK4 is exact
    on quadratics: agreement to 1e-12 rad."""
    from components.loads import LoadSeries
    from components.multibody import JointCommand
    from systems.multibody.dynamics import JointCommands

    spec, I = _oscillator("revolute", 0.0, q0=0.0)
    w = World("motor")
    (link,) = spawn_tree(w, spec)
    k = w.add_resource(LoadSeries()).add([0.0, 10.0], [[0.0, 0, 0], [2.0, 0, 0]])
    w.spawn(JointCommand(joint=link, series=k, bias=[0.1, 0, 0, 0, 0, 0]), name="motor")
    w.add_system(MultibodyDynamics())
    w.add_system(JointCommands())
    h = 0.5
    r = w.run(t_end=12.0, dt=h, record_every=1, record=("joint_q", "joint_qd"))
    th, om = 0.0, 0.0
    ref = [0.0]
    for kk in range(24):
        t = kk * h
        tau = 0.1 + (0.2 * t if t <= 10.0 else 0.0)
        th, om = th + om * h + tau * h * h / (2 * I), om + tau * h / I
        ref.append(th)
    assert np.max(np.abs(r.trajectories["joint_q"][0, :, 0, 0] - ref)) <= 1e-12


def test_a_joint_commanded_twice_is_refused():
    from components.multibody import JointCommand
    from systems.multibody.dynamics import JointCommands

    spec, _ = _oscillator("revolute", 0.0)
    w = World("twice")
    (link,) = spawn_tree(w, spec)
    w.spawn(JointCommand(joint=link), name="a")
    w.spawn(JointCommand(joint=link), name="b")
    w.add_system(MultibodyDynamics())
    w.add_system(JointCommands())
    with pytest.raises(InputError, match="commanded twice"):
        w.compile()
