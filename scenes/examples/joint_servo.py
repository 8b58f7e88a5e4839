"""Add your own joint law without touching the engine: a servo that drives a joint at a constant rate.

A rate servo on a revolute or prismatic joint tracks the ramp ``q_ref(t) = q0 + Ω t`` with a
proportional–derivative law evaluated at every stage of the multibody solve::

    τ = k_p (q_ref(t) − q) + k_d (Ω − q̇)

The built-in spring-damper (:class:`components.multibody.JointSpring`) cannot do this: its rest
position does not move. With the link's moment of inertia ``I`` about the axis and nothing else
acting, the tracking error ``e = q_ref − q`` obeys ``I ë + k_d ė + k_p e = 0``. From rest at the ramp's
start (``e(0) = 0``, ``ė(0) = Ω``) it is ``e(t) = Ω/ω_d · exp(−ζ ω_n t) sin(ω_d t)`` when
underdamped, with ``ω_n = √(k_p/I)``, ``ζ = k_d / (2 √(k_p I))`` and ``ω_d = ω_n √(1 − ζ²)``
(``tests/test_joint_law.py`` checks the solve against it).

The pattern for any joint law (a motor curve, a friction model, a nonlinear spring):

1. **A component.** Its columns are the law's parameters per joint (:class:`ServoGains`). Give it
   to every link of the tree, with zero gains where the law should not act. The batch runner can
   disperse its columns per sample like any other column.
2. **A kernel.** A numba kernel ``(kind, q, qd, time, p, tau)`` adds its generalised force into
   ``tau`` (:class:`ecs.terms.JointLaw`: ``p`` holds the joint's column values in the order
   declared).
3. **A system.** A DERIVATIVE :class:`ecs.System` whose :meth:`joint_law` returns the
   :class:`ecs.terms.JointLaw`; ``world.add_system(...)`` next to
   :class:`systems.multibody.dynamics.MultibodyDynamics`. The solve calls the law at every stage
   after the built-in laws, on the CPU and on the GPU.

Run it: ``tumble run scenes/examples/joint_servo.py -n 4``.
"""

import math

import numpy as np
from numba import njit

from components.multibody import PRISMATIC, REVOLUTE, spawn_tree, tree_spec
from ecs import Phase, Scene, System, World, column, component
from ecs.scene import Dispersion, uniform
from ecs.terms import JointLaw
from systems.multibody.dynamics import MultibodyDynamics


@component("servo")
class ServoGains:
    """A rate servo's gains and ramp on a revolute or prismatic joint (module docstring)."""

    kp: float = column("N*m/rad", default=0.0, doc="k_p (N/m on a prismatic joint); 0: no servo")
    kd: float = column("N*m*s/rad", default=0.0, doc="k_d (N*s/m on a prismatic joint)")
    rate: float = column("rad/s", default=0.0, doc="Ω, the ramp's slope (m/s on a prismatic joint)")
    start: float = column("rad", default=0.0, doc="q0, the ramp's value at t = 0 (m on a prismatic joint)")


@njit(cache=True)
def servo_torque(kind, q, qd, time, p, tau):
    """τ += k_p (q0 + Ω t − q) + k_d (Ω − q̇) on slot 0 of a 1-DOF joint (p = kp, kd, rate, start)."""
    if kind == REVOLUTE or kind == PRISMATIC:
        kp, kd, rate, start = p[0], p[1], p[2], p[3]
        tau[0] += kp * (start + rate * time - q[0]) + kd * (rate - qd[0])


class RateServo(System):
    """Every joint with :class:`ServoGains` tracks its ramp (module docstring)."""

    phase = Phase.DERIVATIVE

    def joint_law(self, world) -> JointLaw:
        return JointLaw("rate_servo", servo_torque,
                        columns=("servo_kp", "servo_kd", "servo_rate", "servo_start"))


#: The example's link: a 2 kg bar 0.4 m from a vertical revolute axis; I about the axis [kg m²].
MASS, ARM, IZZ = 2.0, 0.4, 0.5
INERTIA = IZZ + MASS * ARM * ARM


def build(*, kp: float = 8.0, kd: float = 1.2, rate: float = 0.5, kp_range=None, t_end: float = 10.0) -> Scene:
    """One link on a revolute joint to the inertial frame, no gravity, driven by the rate servo;
    ``kp_range`` = [low, high] draws k_p uniformly per sample."""
    w = World("joint-servo")
    spec = tree_spec(parents=[-1], kinds=["revolute"], mass=[MASS], inertia=[[0.3, 0.4, IZZ]],
                     com=[[ARM, 0.0, 0.0]], axis=[[0, 0, 1]])
    (link,) = spawn_tree(w, spec, name="arm", extra=lambda k: (ServoGains(kp=kp, kd=kd, rate=rate),))
    w.add_system(MultibodyDynamics(substeps=10))
    w.add_system(RateServo())
    disp = [] if kp_range is None else [Dispersion(link, "servo_kp", uniform(float(kp_range[0]), float(kp_range[1])))]
    cols = ("joint_q", "joint_qd")
    return Scene("joint-servo", "a revolute joint driven by a user-written rate servo (a joint law)", w, t_end,
                 0.01, 1, cols, cols + ("servo_kp",), dispersions=disp,
                 params=dict(kp=kp, kd=kd, rate=rate, kp_range=kp_range, t_end=t_end))


def tracking_error(t, *, kp: float, kd: float, rate: float, inertia: float = INERTIA):
    """The closed-form tracking error e(t) = q_ref − q [rad] of the underdamped servo from rest at the
    ramp's start (module docstring); ``t`` [s], a number or an array."""
    wn = math.sqrt(kp / inertia)
    z = kd / (2.0 * math.sqrt(kp * inertia))
    if not z < 1.0:
        raise ValueError(f"the closed form here is the underdamped one: zeta = {z:.3g} >= 1")
    wd = wn * math.sqrt(1.0 - z * z)
    return rate / wd * np.exp(-z * wn * np.asarray(t, float)) * np.sin(wd * np.asarray(t, float))
