"""A user-written joint law (ecs.terms.JointLaw) in the multibody solve: the rate servo of
scenes/examples/joint_servo.py against the closed form of its tracking error, per-sample parameters,
and the refusals of a law that cannot take part."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from components.multibody import spawn_tree, tree_spec
from ecs import World
from ecs.errors import InputError, ScheduleError
from ecs.terms import JointLaw
from scenes.examples.joint_servo import RateServo, ServoGains, build, tracking_error
from systems.multibody.dynamics import MultibodyDynamics


def test_servo_tracks_its_ramp_as_the_closed_form_says():
    """q(t) = Ω t − e(t) with e the damped oscillator's response (module docstring of the example);
    RK4 at 1 ms: agreement to 1e-10 rad over 10 s. The law reads the stage time (the ramp moves
    within a step): a law evaluated at the step's start time would be off by ~Ω h = 5e-4 rad."""
    kp, kd, rate = 8.0, 1.2, 0.5
    r = build(kp=kp, kd=kd, rate=rate).world.run(t_end=10.0, dt=0.01, record_every=1, record=("joint_q",))
    t = r.times
    q = r.trajectories["joint_q"][0, :, 0, 0]
    closed = rate * t - tracking_error(t, kp=kp, kd=kd, rate=rate)
    err = float(np.max(np.abs(q - closed)))
    print(f"\nmax |q - closed form| = {err:.2e} rad")
    assert err <= 1e-10
    assert abs(q[-1] - rate * t[-1]) < 1e-3, "the servo must have caught up with its ramp"


def test_law_parameters_are_columns_drawn_per_sample(tmp_path):
    """k_p drawn per sample (a Dispersion of the law's column): each sample follows its own closed
    form at t_end, to 1e-9 rad."""
    from tumble import run_batch
    from tumble.calibrate import open_store_groups

    st = open_store_groups(run_batch("scenes/examples/joint_servo.py", samples=4, out=tmp_path / "s.zarr",
                                     params={"kp_range": [4.0, 12.0], "t_end": 3.0}))
    kp = np.asarray(st["final"]["servo_kp"].values).reshape(4)
    q = np.asarray(st["final"]["joint_q"].values).reshape(4, -1)[:, 0]
    assert np.unique(kp).size == 4 and kp.min() >= 4.0 and kp.max() <= 12.0
    closed = np.array([0.5 * 3.0 - tracking_error(3.0, kp=k, kd=1.2, rate=0.5) for k in kp])
    assert np.max(np.abs(q - closed)) <= 1e-9, (q, closed)


def test_no_law_and_zero_gains_leave_the_joint_alone():
    """The default solve (no joint law) and the law with zero gains give the same state to the bit:
    a free link keeps its initial rate."""
    spec = tree_spec(parents=[-1], kinds=["revolute"], mass=[2.0], inertia=[[0.3, 0.4, 0.5]], com=[[0.4, 0, 0]],
                     axis=[[0, 0, 1]], qd=[[0.7, 0, 0, 0, 0, 0]])
    out = []
    for law in (False, True):
        w = World("free")
        spawn_tree(w, spec, extra=(lambda k: (ServoGains(),)) if law else None)
        w.add_system(MultibodyDynamics())
        if law:
            w.add_system(RateServo())
        out.append(w.run(t_end=1.0, dt=0.01, record_every=1, record=("joint_q",)).trajectories["joint_q"])
    assert np.array_equal(out[0], out[1])
    assert out[1][0, -1, 0, 0] == pytest.approx(0.7, rel=1e-12)


def _servo_world(extra=True):
    w = World("servo")
    spec = tree_spec(parents=[-1], kinds=["revolute"], mass=[2.0], inertia=[[0.3, 0.4, 0.5]], axis=[[0, 0, 1]])
    spawn_tree(w, spec, extra=(lambda k: (ServoGains(kp=1.0),)) if extra else None)
    return w


def test_a_link_table_without_the_law_columns_is_refused():
    w = _servo_world(extra=False)
    w.add_system(MultibodyDynamics())
    w.add_system(RateServo())
    with pytest.raises(InputError, match="JointLaw rate_servo: column.*servo_kp.*lacks it"):
        w.run(t_end=0.1, dt=0.01)


def test_a_second_joint_law_is_refused():
    class Second(RateServo):
        pass

    w = _servo_world()
    w.add_system(MultibodyDynamics())
    w.add_system(RateServo())
    w.add_system(Second())
    with pytest.raises(InputError, match="second joint law"):
        w.run(t_end=0.1, dt=0.01)


def test_a_joint_law_where_no_pipeline_steps_joints_is_refused():
    from components.rigid import rigid_body
    from systems.dynamics.integration import Integrator

    w = World("rigid")
    w.spawn(*rigid_body(mass=1.0, inertia=np.ones(3)), name="ball")
    w.add_system(Integrator("rk4"))
    w.add_system(RateServo())
    with pytest.raises(ScheduleError, match="RateServo.*joint law.*steps no joints"):
        w.run(t_end=0.1, dt=0.01)


@njit(cache=True)
def _three_args(kind, q, qd):
    return


def test_a_kernel_with_the_wrong_signature_is_refused():
    with pytest.raises(InputError, match="parameter count.*must take 6: kind, q, qd, time, p, tau"):
        JointLaw("bad", _three_args)
    with pytest.raises(InputError, match="must be a numba njit function"):
        JointLaw("bad", lambda kind, q, qd, time, p, tau: None)
