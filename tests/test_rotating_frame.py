"""Rigid bodies integrated in a uniformly turning frame (components.rigid.RotatingFrame, seed 004
eqs 2.2-2.5 at a reference point): the same motion as in the inertial frame under a field that
turns with the frame, seen from the turning frame; the Jacobi integral; the refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from components.gravity import Ellipsoid
from components.rigid import RotatingFrame, rigid_body
from ecs import World
from ecs.errors import InputError
from systems.gravity.fields import GravitySystem
from systems.dynamics.integration import Integrator

OMEGA = 2.0 * math.pi / (12.13 * 3600.0)       # Itokawa's spin [rad/s], about z
FIELD = Ellipsoid(270.0, 147.0, 105.0, density=1900.0)
STATE = dict(position=(420.0, 130.0, 60.0), velocity=(0.011, 0.062, 0.018),
             attitude=tuple(Rotation.from_rotvec([0.4, -0.3, 0.8]).as_quat(scalar_first=True)),
             omega=(2e-3, -1e-3, 3e-3))
BODY = dict(mass=50.0, inertia=[[3.0, 0.2, 0.0], [0.2, 4.0, -0.1], [0.0, -0.1, 5.0]], com=(0.2, -0.1, 0.3))


def _run(state, *, turning: bool, t_end: float, dt: float, cols=("body_position", "body_velocity", "body_attitude",
                                                                   "body_omega")):
    w = World("turning" if turning else "inertial")
    if turning:
        w.add_resource(RotatingFrame((0.0, 0.0, OMEGA), name="target"))
    w.spawn(*rigid_body(**BODY, **state))
    w.add_system(GravitySystem(FIELD, spin=0.0 if turning else OMEGA, gradient_torque=True))
    w.add_system(Integrator("dp54", rtol=1e-12, atol=1e-14))
    res = w.run(t_end=t_end, dt=dt, record_every=1, record=cols)
    return res, w


def test_motion_in_the_turning_frame_is_the_inertial_motion_seen_from_it():
    """A tumbling 50 kg body with its CoM 0.37 m off its reference point, orbiting an Itokawa-sized
    ellipsoid for 6 h with the gravity-gradient torque: integrated in the inertial frame under the
    field turning at Itokawa's rate (GravitySystem spin), and in the frame turning with the field
    (RotatingFrame, spin 0) from the same state seen in that frame (v − Ω × p, ω − Rᵀ Ω). Mapped back
    (p_I = R_z(Ωt) p, v_I = R_z(Ωt)(v + Ω × p), q_I = q_z(Ωt) ⊗ q, ω_I = ω + Rᵀ Ω) the two agree to
    the integrators' tolerance: measured 3.7e-12, 1.1e-10, 7.3e-9 rad and 5.4e-9 relative for
    position, velocity, attitude and rate (limits 1e-7, dp54 at rtol 1e-12 over 36 frames). With the
    sign of the Coriolis term flipped they part by 1.6 (position, relative); with that of ω × Ω_B by
    1.4 rad in attitude (both measured)."""
    T, dt = 6 * 3600.0, 600.0
    res_i, _ = _run(STATE, turning=False, t_end=T, dt=dt)
    W = np.array([0.0, 0.0, OMEGA])
    q0 = Rotation.from_quat(STATE["attitude"], scalar_first=True)
    rel = dict(STATE, velocity=tuple(np.asarray(STATE["velocity"]) - np.cross(W, STATE["position"])),
               omega=tuple(np.asarray(STATE["omega"]) - q0.inv().apply(W)))
    res_r, world = _run(rel, turning=True, t_end=T, dt=dt)
    assert world.integration_frame == "target"
    ti, tr = res_i.trajectories, res_r.trajectories
    t = res_r.times
    Rz = Rotation.from_rotvec(np.outer(OMEGA * t, [0.0, 0.0, 1.0]))
    p, v = tr["body_position"][0, :, 0], tr["body_velocity"][0, :, 0]
    q = Rotation.from_quat(tr["body_attitude"][0, :, 0], scalar_first=True)
    p_i = Rz.apply(p)
    v_i = Rz.apply(v + np.cross(W, p))
    q_i = Rz * q
    w_i = tr["body_omega"][0, :, 0] + q.inv().apply(W)
    ep = np.linalg.norm(p_i - ti["body_position"][0, :, 0], axis=1).max() / np.linalg.norm(STATE["position"])
    ev = np.linalg.norm(v_i - ti["body_velocity"][0, :, 0], axis=1).max() / np.linalg.norm(STATE["velocity"])
    eq = (q_i * Rotation.from_quat(ti["body_attitude"][0, :, 0], scalar_first=True).inv()).magnitude().max()
    ew = np.linalg.norm(w_i - ti["body_omega"][0, :, 0], axis=1).max() / np.linalg.norm(STATE["omega"])
    moved = np.linalg.norm(ti["body_position"][0, -1, 0] - ti["body_position"][0, 0, 0])
    print(f"\nturning vs inertial frame, 6 h: position {ep:.1e}, velocity {ev:.1e}, attitude {eq:.1e} rad, "
          f"rate {ew:.1e} (relative); the body moved {moved:.0f} m")
    assert moved > 100.0
    assert ep <= 1e-7 and ev <= 1e-7 and eq <= 1e-7 and ew <= 1e-7


def test_jacobi_integral_of_a_point_body_in_the_turning_field():
    """The CoM of a body in a field fixed in the uniformly turning frame keeps the Jacobi integral
    J = ½|v|² − ½|Ω × p|² + U(p) (U = −potential from the ellipsoid's closed form; the body at its
    CoM, no torque coupling): measured 1.6e-13 of |U| over 6 h (limit 1e-9), while its energy in
    that frame, ½|v|² + U, changes by 7.8 |U| (so the check can tell the two apart)."""
    from systems.gravity.kernels import potential

    body = dict(BODY, com=(0.0, 0.0, 0.0))
    w = World("jacobi")
    w.add_resource(RotatingFrame((0.0, 0.0, OMEGA)))
    w.spawn(*rigid_body(**body, **STATE))
    w.add_system(GravitySystem(FIELD))
    w.add_system(Integrator("dp54", rtol=1e-12, atol=1e-14))
    res = w.run(t_end=6 * 3600.0, dt=600.0, record_every=1, record=("body_position", "body_velocity"))
    p, v = res.trajectories["body_position"][0, :, 0], res.trajectories["body_velocity"][0, :, 0]
    U = -np.asarray(potential(FIELD, p)).reshape(-1)
    W = np.array([0.0, 0.0, OMEGA])
    J = 0.5 * (v * v).sum(1) - 0.5 * (np.cross(W, p) ** 2).sum(1) + U
    E = 0.5 * (v * v).sum(1) + U
    dJ, dE = np.abs(J - J[0]).max() / abs(U[0]), np.abs(E - E[0]).max() / abs(U[0])
    print(f"\nJacobi integral drift {dJ:.1e} of |U|; energy in the turning frame moved {dE:.1e}")
    assert dJ <= 1e-9 and dE > 1e-4


def test_inertial_only_systems_are_refused_in_a_turning_frame():
    w = World("bad")
    w.add_resource(RotatingFrame((0.0, 0.0, OMEGA)))
    w.spawn(*rigid_body(**BODY, **STATE))
    w.add_system(GravitySystem(FIELD, spin=OMEGA))
    w.add_system(Integrator("rk4"))
    with pytest.raises(InputError, match="spin.*must be 0 in the turning frame"):
        w.compile()
    with pytest.raises(InputError, match="RotatingFrame.rate"):
        RotatingFrame((0.0, math.nan, 1.0))


def test_a_deployment_integrates_in_the_worlds_rotating_frame():
    """A deployment scene declares its target's frame as the world's RotatingFrame (a term reads
    it from there: the SRP example); a frame turning at another rate is refused, since the
    terrain and gravity field are fixed in the target's frame."""
    from scenes.mission import box_probe, deployment, release_above, small_body

    body = small_body("ellipsoid", radii=(270, 147, 105), gm=2.3, period_h=12.13, gravity="point_mass", resolution=24)
    scene = deployment("frame", body, box_probe((0.2, 0.2, 0.2), mass=1.0, level=0),
                       release_above(body, latitude=0.0, longitude=0.0, altitude=10.0))
    frame = scene.world.resource(RotatingFrame)
    assert frame.name == "target" and np.array_equal(frame.rate, body.rotation)
    scene.world.add_resource(RotatingFrame(2.0 * np.asarray(body.rotation), name="target"))
    with pytest.raises(InputError, match=r"RotatingFrame.rate.*must equal DeployTarget.rotation"):
        scene.world.compile(samples=1)


def test_the_frame_terms_against_finite_differences_of_a_turning_frame():
    """systems.dynamics.rotating_frame, the one place every rigid body and probe takes the turning
    frame's terms from (seed 004 eqs 2.2, 2.4, 2.5), against central differences of motions known in
    the inertial frame and seen from a frame turning at Ω about a tilted axis (scipy's rotations, no
    tumble code). A point with constant inertial acceleration a: its relative acceleration is
    ``frame_acceleration``'s. A body spinning at a constant inertial rate ω_I (body axes): the
    derivative of its relative rate ω = ω_I − R(q)ᵀΩ is ``body_rate_derivative(0, ω_I, ω)``.
    Measured: 1.7e-13 m/s² and 6.0e-17 rad/s² (of 9.5e-6), the five-point differences' round-off
    (positions of ~400 m over h² = 0.25 s²) and truncation (h⁴ ~ 1e-4 times fifth derivatives of
    ~1e-12); limits 1e-10 and 1e-14. A flipped Coriolis sign misses the first by 4|Ω × v| = 1.6e-3
    m/s², a flipped ω_S/N × ω the second by ~1e-5 rad/s² (computed from the inputs)."""
    from systems.dynamics.rotating_frame import body_rate_derivative, frame_acceleration, frame_rate_in_body

    W = np.array([2e-4, -3e-4, 1e-3])                       # the frame's rate Ω (frame = inertial axes at t = 0)
    turn = lambda t: Rotation.from_rotvec(W * t)           # noqa: E731  frame → inertial at t
    p, u, a = np.array([420.0, 130.0, -60.0]), np.array([0.011, 0.062, 0.018]), np.array([-3e-4, 1e-4, 2e-4])
    rel = lambda t: turn(t).inv().apply(p + u * t + 0.5 * a * t * t)   # noqa: E731
    h = 0.5
    fd = (-rel(2 * h) + 16 * rel(h) - 30 * rel(0.0) + 16 * rel(-h) - rel(-2 * h)) / (12 * h * h)
    v = u - np.cross(W, p)
    acc, fda = np.array(frame_acceleration.py(*a, *W, *p, *v)), fd
    assert np.abs(acc - fda).max() < 1e-10, (acc, fda)
    assert np.abs(np.array(frame_acceleration.cpu(*a, *W, *p, *v)) - acc).max() == 0.0

    q0 = Rotation.from_rotvec([0.4, -0.3, 0.8])             # body → inertial (= frame) at t = 0
    wi = np.array([0.02, -0.01, 0.03])                     # inertial rate, body axes, constant
    body = lambda t: turn(t).inv() * q0 * Rotation.from_rotvec(wi * t)   # noqa: E731  body → frame at t
    omega = lambda t: wi - body(t).inv().apply(W)          # noqa: E731  ω = ω_S/T in body axes
    h = 0.1
    fd = (-omega(2 * h) + 8 * omega(h) - 8 * omega(-h) + omega(-2 * h)) / (12 * h)
    w0 = omega(0.0)
    b = np.array(frame_rate_in_body.py(*(2.0 * q0.as_quat(scalar_first=True)), *W))   # q of any length
    assert np.abs(b - (wi - w0)).max() < 1e-15
    got = np.array(body_rate_derivative.py(0.0, 0.0, 0.0, *wi, *w0))
    print(f"\nframe terms against central differences: relative acceleration {np.abs(acc - fda).max():.1e} m/s², "
          f"rate derivative {np.abs(got - fd).max():.1e} rad/s² (of {np.abs(fd).max():.1e})")
    assert np.abs(got - fd).max() < 1e-14, (got, fd)
