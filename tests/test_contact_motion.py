"""Contact motion (systems.probe_contact.contact_motion) against closed forms and independent computations.

References: Coulomb statics and dynamics of a block on an incline (rest iff f >= tan θ, otherwise
a = g (sin θ − f cos θ)), the rolling-resistance deceleration of a sphere derived here from the
seed's eqs 2.107–2.110, the seed's single-contact equations 2.93 and 2.99 evaluated with numpy,
finite differences of the surface normal for eq 2.104, and free fall for a contact that is left.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from components.contact_params import ContactParams
from components.rigid import rigid_body
from ecs import InputError, World
from systems.probe_contact.contact_motion import (CONTACT_ACTIVE, ContactTransition, PlaneSurface, SphereSurface,
                                    ContactSet, SurfaceContactMotion, contact_entry, contact_exit, contact_forces_rows,
                                    contact_work_size, enter_contact, normal_rate)
from systems.gravity.uniform import UniformGravity
from systems.dynamics.integration import Integrator
from sim_helpers import run_on_device, run_simulated

ROOT = Path(__file__).resolve().parents[1]
G = 9.81


def _cube_vertices(a):
    return np.array([[sx, sy, sz] for sx in (-a / 2, a / 2) for sy in (-a / 2, a / 2) for sz in (-a / 2, a / 2)])


def _cube_on_incline(theta_deg, f, *, azimuth_deg=0.0, t_end=1.0, dt=1e-3, v0=0.0):
    """A 5 kg, 0.2 m cube resting on a face on an incline of angle θ (plane through the origin)."""
    a, m = 0.2, 5.0
    th = np.radians(theta_deg)
    Az = Rotation.from_euler("z", azimuth_deg, degrees=True)
    tilt = Az * Rotation.from_rotvec([0.0, -th, 0.0])
    n = tilt.apply([0.0, 0.0, 1.0])
    down = tilt.apply([-1.0, 0.0, 0.0])          # down the slope, in the plane
    assert down @ [0, 0, 1] < 0
    w = World()
    w.spawn(*rigid_body(mass=m, inertia=np.full(3, m * a * a / 6), position=(a / 2) * n, velocity=v0 * down,
                        attitude=tilt.as_quat(scalar_first=True)))
    w.add_system(UniformGravity((0.0, 0.0, -G)))
    # v* = 1 cm/s: the regularisation λ_F = |v_T|/v* makes the tangential dynamics stiff with rate
    # f F_N/(m v*) (<= ~1200 1/s here); RK4 at 1 ms needs that rate times dt below ~2.8
    w.add_system(SurfaceContactMotion(PlaneSurface((0, 0, 0), tuple(n)), params=ContactParams(0.5, f),
                                      vertices=_cube_vertices(a), vstar=1e-2))
    w.add_system(Integrator("rk4"))
    r = w.run(t_end=t_end, dt=dt, final=("body_position", "body_velocity", "body_omega"))
    return r, n, down, (a / 2) * n


@pytest.mark.parametrize("theta,f,azimuth", [(20.0, np.tan(np.radians(20.0)) * 1.001, 0.0), (20.0, 0.8, 37.0),
                                             (35.0, 1.2, -110.0)])
def test_cube_on_incline_stays_at_rest(theta, f, azimuth):
    """f >= tan θ: the cube stays at rest (four corners share the load; aggregate friction cone)."""
    r, n, down, x0 = _cube_on_incline(theta, f, azimuth_deg=azimuth)
    v = r.finals["body_velocity"][0, 0]
    x = r.finals["body_position"][0, 0]
    # tolerance: the pseudo-inverse drops eigenvalues below 1e-10; residual accelerations are at the
    # round-off level of the 49 N forces (~1e-14 m/s² measured), integrated over 1 s
    assert np.abs(v).max() < 1e-12
    assert np.abs(x - x0).max() < 1e-12
    assert np.abs(r.finals["body_omega"][0, 0]).max() < 1e-12


@pytest.mark.parametrize("theta,f,azimuth,v0", [(20.0, 0.3, 0.0, 0.0), (30.0, 0.1, 63.0, 0.0),
                                                (25.0, 0.0, -20.0, 0.3)])
def test_cube_on_incline_slides(theta, f, azimuth, v0):
    """f < tan θ: the cube slides straight down with a = g (sin θ − f cos θ), without tipping."""
    t_end = 0.5
    r, n, down, x0 = _cube_on_incline(theta, f, azimuth_deg=azimuth, t_end=t_end, v0=v0)
    th = np.radians(theta)
    acc = G * (np.sin(th) - f * np.cos(th))
    v = r.finals["body_velocity"][0, 0]
    x = r.finals["body_position"][0, 0]
    # constant acceleration: RK4 is exact; tolerance = round-off accumulated over 500 steps
    np.testing.assert_allclose(v @ down, v0 + acc * t_end, rtol=1e-12)
    np.testing.assert_allclose(x - x0, (v0 * t_end + 0.5 * acc * t_end ** 2) * down, rtol=0, atol=1e-12)
    assert abs(v @ n) < 1e-12
    assert np.abs(r.finals["body_omega"][0, 0]).max() < 1e-12


def test_sphere_rolling_resistance_deceleration():
    """A rolling sphere with C_RR: L = −C_RR R F_N ω̂ (eq 2.107) plus F_RR = m r̃ I⁻¹ L (eq 2.110) at the
    CoM. Derivation: F_RR/m + (I⁻¹L) × r = 0 keeps the contact point at rest, stick needs no friction
    on a level plane (F_N = mg), so the CoM decelerates at |F_RR|/m = C_RR m g R²/I (= 2.5 C_RR g for a
    solid sphere; a torque-only model would give C_RR g/(1 + I/mR²) — C_RR is model-specific) and
    keeps rolling. RK4 is exact for the linear speed law."""
    R, m, j, C, v0 = 0.125, 5.0, 0.4, 0.035, 0.5
    I = j * m * R * R
    w = World()
    w.spawn(*rigid_body(mass=m, inertia=[I, I, I], position=(0, 0, R), velocity=(v0, 0, 0), omega=(0, v0 / R, 0)))
    w.add_system(UniformGravity((0, 0, -G)))
    w.add_system(SurfaceContactMotion(PlaneSurface(), params=ContactParams(0.5, 0.8, C), sphere_radius=R, vstar=5e-2))
    w.add_system(Integrator("rk4"))
    r = w.run(t_end=0.4, dt=1e-3, record_every=50, record=("body_velocity", "body_omega", "body_position"))
    a = C * m * G * R * R / I
    v = r.trajectories["body_velocity"][0, :, 0]
    om = r.trajectories["body_omega"][0, :, 0]
    np.testing.assert_allclose(v[:, 0], v0 - a * r.times, rtol=0, atol=1e-13)
    np.testing.assert_allclose(om[:, 1] * R, v[:, 0], rtol=0, atol=1e-13)   # still rolling
    assert np.abs(r.trajectories["body_position"][0, :, 0, 2] - R).max() < 1e-12


def test_sphere_rolls_in_a_bowl_on_the_surface():
    """Sphere of radius ρ inside a spherical bowl of radius R_b: the normal constraint uses the
    Hessian term v·Ṅ (eq 2.104), so the CoM stays on the sphere of radius R_b − ρ; energy is
    conserved when rolling without slip (f large, no rolling resistance)."""
    rho, m, Rb = 0.1, 2.0, 1.0
    I = 0.4 * m * rho * rho
    th0 = np.radians(30)
    x0 = (Rb - rho) * np.array([np.sin(th0), 0.0, -np.cos(th0)])
    w = World()
    w.spawn(*rigid_body(mass=m, inertia=[I, I, I], position=x0))
    w.add_system(UniformGravity((0, 0, -G)))
    # f = 1 rolls without slip (needs ~0.2 at 30°); v* = 5 cm/s keeps the regularisation rate
    # f F_N M_tt / v* (M_tt = 3.5/m for a rolling sphere) ~ 600 1/s well inside RK4's stability at 1 ms
    w.add_system(SurfaceContactMotion(SphereSurface((0, 0, 0), Rb, inside=True), params=ContactParams(0.5, 1.0),
                                      sphere_radius=rho, vstar=5e-2))
    w.add_system(Integrator("rk4"))
    r = w.run(t_end=0.5, dt=1e-3, record_every=10, record=("body_position", "body_velocity", "body_omega"))
    x = r.trajectories["body_position"][0, :, 0]
    v = r.trajectories["body_velocity"][0, :, 0]
    om = r.trajectories["body_omega"][0, :, 0]
    dist = np.linalg.norm(x, axis=1)
    # RK4 at 1 ms on a pendulum-like motion: local truncation ~1e-14 per step
    assert np.abs(dist - (Rb - rho)).max() < 1e-9
    E = 0.5 * m * (v ** 2).sum(1) + 0.5 * I * (om ** 2).sum(1) + m * G * x[:, 2]
    assert np.abs(E - E[0]).max() < 1e-9 * m * G * Rb
    assert x[-1, 0] < x[0, 0]   # it rolled down


def _single_contact(rng, vt_scale):
    """One vertex of a random body on a surface with random N, Ṅ and contact velocity."""
    m = rng.uniform(1, 5)
    A = rng.normal(size=(3, 3))
    I = A @ A.T + np.eye(3)
    q = Rotation.random(random_state=int(rng.integers(1 << 30))).as_quat(scalar_first=True)
    r = rng.normal(size=3) * 0.3
    N = rng.normal(size=3)
    N /= np.linalg.norm(N)
    Nd = np.cross(rng.normal(size=3), N)
    w = rng.normal(size=3)
    R = Rotation.from_quat(q, scalar_first=True)
    vt = np.cross(N, rng.normal(size=3))
    vt *= vt_scale / np.linalg.norm(vt)
    v = vt - R.apply(np.cross(w, r))          # contact-point velocity purely tangential
    acc = rng.normal(size=3) * 5
    tau = rng.normal(size=3)
    return m, I, q, r, N, Nd, w, v, acc, tau


def _run_kernel(m, I, q, r, N, Nd, w, v, acc, tau, f, vstar, baumgarte=0.0, total=False):
    K = 1
    out_force, out_fn = np.zeros((1, K, 3)), np.zeros((1, K))
    out_state, out_total = np.zeros((1, K), np.int8), np.zeros((1, 6))
    c = ContactSet(work=np.zeros((1, contact_work_size(K))), attitude=q[None], velocity=v[None], omega=w[None],
                   accel=acc[None], torque=tau[None], act=np.ones((1, K), np.int8), points=r[None, None],
                   normals=N[None, None], ndots=Nd[None, None], srad=np.zeros((1, K)), fric=np.full((1, K), f),
                   rolling=np.zeros((1, 3)), vstar=vstar, wstar=1e-3, baumgarte=baumgarte, out_force=out_force,
                   out_fn=out_fn, out_state=out_state, out_total=out_total)
    contact_forces_rows(1, np.array([m]), I[None], c)
    if total:
        return out_total[0], out_state[0, 0]
    return out_force[0, 0], out_state[0, 0]


def _seed_forces(m, I, q, r, N, Nd, w, v, acc, tau, f):
    """Eqs 2.55, 2.93 and 2.99 in the target frame, written with numpy."""
    R = Rotation.from_quat(q, scalar_first=True).as_matrix()
    IT = R @ I @ R.T
    J = np.linalg.inv(IT)
    rT, wT = R @ r, R @ w
    rx = np.array([[0, -rT[2], rT[1]], [rT[2], 0, -rT[0]], [-rT[1], rT[0], 0]])
    M = np.eye(3) / m - rx @ J @ rx
    alpha0 = J @ (R @ tau - np.cross(wT, IT @ wT))
    W = np.cross(alpha0, rT) + np.cross(wT, np.cross(wT, rT))
    u = v + np.cross(wT, rT)
    F_stick = -np.linalg.solve(M, acc + W + N * (u @ Nd))
    uT = u - (u @ N) * N
    that = uT / np.linalg.norm(uT)
    FN = -(u @ Nd + (acc + W) @ N) / ((M @ (N - f * that)) @ N)
    F_slip = FN * (N - f * that)
    return F_stick, F_slip


def test_single_contact_reduces_to_the_seed_equations():
    """K = 1: the kernel's forces are eq 2.93 (stick), eq 2.99 (slip) and their blend eq 2.106."""
    rng = np.random.default_rng(3)
    checked = 0
    for _ in range(60):
        vstar = 0.01
        # fast slip (λ_F = 1): the slip force of eq 2.99 (when it pushes)
        args = _single_contact(rng, vt_scale=0.5)
        f = rng.uniform(0.1, 0.8)
        F_stick, F_slip = _seed_forces(*args, f)
        F, state = _run_kernel(*args, f, vstar)
        if (F_slip @ args[4]) > 0:
            np.testing.assert_allclose(F, F_slip, rtol=1e-10, atol=1e-10 * np.linalg.norm(F_slip))
            checked += 1
        # creeping (|v_T| = v*/4) inside the friction cone: 3/4 stick + 1/4 slip (eq 2.106)
        args = _single_contact(rng, vt_scale=vstar / 4)
        f = 50.0
        F_stick, F_slip = _seed_forces(*args, f)
        FN = F_stick @ args[4]
        if FN > 0 and np.linalg.norm(F_stick - FN * args[4]) <= f * FN and F_slip @ args[4] > 0:
            F, state = _run_kernel(*args, f, vstar)
            expected = 0.25 * F_slip + 0.75 * F_stick
            np.testing.assert_allclose(F, expected, rtol=1e-10, atol=1e-10 * np.linalg.norm(expected))
            checked += 1
    assert checked > 40


@pytest.mark.parametrize("baumgarte", [0.0, 0.5, 3.0])
@pytest.mark.parametrize("vt_scale", [1e-6, 1.0])
def test_constraint_stabilisation_sets_the_normal_acceleration(baumgarte, vt_scale):
    """With a normal velocity u_n at the contact, the contact point's normal acceleration is the
    stabilised constraint's, N·a_p = −u·Ṅ − β u_n, in stick (slow) and in slip (fast): rigid-body
    kinematics a_p = a + R(α × r + ω × (ω × r)) from the kernel's total force and torque."""
    rng = np.random.default_rng(11)
    for _ in range(20):
        m, I, q, r, N, Nd, w, v, acc, tau = _single_contact(rng, vt_scale)
        acc = acc - 10.0 * N * abs(acc @ N)          # pressed onto the surface: the contact carries a load
        un = rng.uniform(-1e-3, 1e-3)
        v = v + un * N
        tot, state = _run_kernel(m, I, q, r, N, Nd, w, v, acc, tau, 0.5, 1e-4, baumgarte, total=True)
        assert state == 1
        R = Rotation.from_quat(q, scalar_first=True)
        a = acc + tot[:3] / m
        alpha = np.linalg.solve(I, tau + tot[3:] - np.cross(w, I @ w))
        ap = a + R.apply(np.cross(alpha, r) + np.cross(w, np.cross(w, r)))
        u = v + R.apply(np.cross(w, r))
        scale = np.abs(acc).max() + abs(u @ Nd) + baumgarte * abs(un)
        assert abs(N @ ap + u @ Nd + baumgarte * (u @ N)) < 1e-10 * scale


def test_normal_rate_matches_finite_differences():
    """Eq 2.104: Ṅ = |∇d|⁻¹ [T] ∇∇d v against a central difference of N along a straight path."""
    rng = np.random.default_rng(4)
    for surf in (SphereSurface((0.1, -0.2, 0.3), 2.0), SphereSurface((0, 0, 0), 1.5, inside=True),
                 PlaneSurface((1, 2, 3), (1, 1, 1))):
        x = rng.normal(size=(20, 3))
        v = rng.normal(size=(20, 3))
        d, g, H = surf.evaluate(x)
        Nd = normal_rate(g, H, v)
        h = 1e-6
        _, gp, _ = surf.evaluate(x + h * v)
        _, gm, _ = surf.evaluate(x - h * v)
        fd = (gp / np.linalg.norm(gp, axis=1, keepdims=True) - gm / np.linalg.norm(gm, axis=1, keepdims=True)) / (2 * h)
        np.testing.assert_allclose(Nd, fd, rtol=0, atol=1e-8)   # central difference error ~h²


def test_entering_and_leaving_contact():
    """Entering: a slow approach with inward free acceleration settles (e = 0 collision, after which
    the normal contact velocity is zero); a fast one, or one pulled outward, bounces. Leaving: a
    resting body whose free acceleration points away from the surface gets no normal force and
    falls away freely, z(t) = z₀ + ½ g t²."""
    assert contact_entry(-0.001, -9.81, threshold=0.01) is ContactTransition.SETTLE
    assert contact_entry(-0.1, -9.81, threshold=0.01) is ContactTransition.BOUNCE
    assert contact_entry(-0.001, +0.5, threshold=0.01) is ContactTransition.BOUNCE
    np.testing.assert_array_equal(contact_entry([-0.001, -0.5], [-1.0, -1.0], threshold=0.01), [1, 0])
    with pytest.raises(InputError, match="threshold"):
        contact_entry(-0.1, -1.0, threshold=0.0)
    assert contact_exit(-1e-3) and not contact_exit(2.0)
    # the final e = 0 collision of an eccentric vertex
    I = np.diag([0.2, 0.3, 0.4])
    q = Rotation.from_euler("xyz", [20, -30, 50], degrees=True).as_quat(scalar_first=True)
    r = np.array([0.2, -0.1, -0.25])
    out = enter_contact(mass=2.0, inertia=I, contact_point=r, normal=[0, 0, 1], velocity=[0.004, 0.0, -0.005],
                        omega=[0.01, 0.02, -0.01], friction=0.6, attitude=q)
    vc = out.velocity[0] + Rotation.from_quat(q, scalar_first=True).apply(np.cross(out.omega[0], r))
    assert abs(vc[2]) < 1e-14
    # leaving
    R, m = 0.1, 1.0
    I = 0.4 * m * R * R
    w = World()
    w.spawn(*rigid_body(mass=m, inertia=[I, I, I], position=(0, 0, R)))
    w.add_system(UniformGravity((0, 0, +2.0)))
    w.add_system(SurfaceContactMotion(PlaneSurface(), params=ContactParams(0.5, 0.5), sphere_radius=R))
    w.add_system(Integrator("rk4"))
    res = w.run(t_end=0.1, dt=1e-3, final=("body_position",))
    np.testing.assert_allclose(res.finals["body_position"][0, 0, 2], R + 0.5 * 2.0 * 0.1 ** 2, rtol=1e-12)


def test_contact_state_and_forces_of_a_resting_cube():
    """A cube resting flat on a level plane: the four lower corners are active and carry mg together;
    the upper ones are inactive."""
    a, m = 0.2, 5.0
    w = World()
    w.spawn(*rigid_body(mass=m, inertia=np.full(3, m * a * a / 6), position=(0, 0, a / 2)))
    w.add_system(UniformGravity((0, 0, -G)))
    s = w.add_system(SurfaceContactMotion(PlaneSurface(), params=ContactParams(0.5, 0.5),
                                          vertices=_cube_vertices(a), vstar=1e-2))
    w.add_system(Integrator("rk4"))
    w.run(t_end=0.01, dt=1e-3)
    low = _cube_vertices(a)[:, 2] < 0
    assert np.all(s.last["state"][0, low] == CONTACT_ACTIVE) and np.all(s.last["state"][0, ~low] == 0)
    np.testing.assert_allclose(s.last["normal_force"][0, low], m * G / 4, rtol=1e-12)


def test_bad_input_is_refused():
    with pytest.raises(InputError, match="shape"):
        SurfaceContactMotion(PlaneSurface(), params=ContactParams())
    with pytest.raises(InputError, match="vertices"):
        SurfaceContactMotion(PlaneSurface(), params=ContactParams(), vertices=np.zeros((3, 2)))
    with pytest.raises(InputError, match="vstar"):
        SurfaceContactMotion(PlaneSurface(), params=ContactParams(), sphere_radius=0.1, vstar=0.0)
    with pytest.raises(InputError, match="normal"):
        PlaneSurface((0, 0, 0), (0, 0, 0))
    with pytest.raises(InputError, match="radius"):
        SphereSurface((0, 0, 0), -1.0)
    with pytest.raises(InputError, match="surface"):
        SurfaceContactMotion(object(), params=ContactParams(), sphere_radius=0.1)


GPU_SCRIPT = textwrap.dedent(
    """
    import json, numpy as np
    from scipy.spatial.transform import Rotation
    from ecs.kernels import launch_rows, to_backend, to_host
    from systems.probe_contact.contact_motion import ContactSet, contact_forces_row, contact_forces_rows, contact_work_size
    rng = np.random.default_rng(8)
    n, K = 6, 4
    A = rng.normal(size=(n, 3, 3)); I = A @ A.transpose(0, 2, 1) + np.eye(3)
    args = [np.zeros((n, contact_work_size(K))), rng.uniform(1, 5, n), I,
            Rotation.random(n, random_state=1).as_quat(scalar_first=True), rng.normal(size=(n, 3)),
            rng.normal(size=(n, 3)), rng.normal(size=(n, 3)) * 5, rng.normal(size=(n, 3)),
            (rng.random((n, K)) < 0.8).astype(np.int8), rng.normal(size=(n, K, 3)) * 0.3,
            np.tile([0.0, 0.0, 1.0], (n, K, 1)), np.zeros((n, K, 3)), np.zeros((n, K)), np.full((n, K), 0.5),
            np.full((n, 3), 0.01), 1e-2, 1e-3, 0.5]
    outs = lambda: [np.zeros((n, K, 3)), np.zeros((n, K)), np.zeros((n, K), np.int8), np.zeros((n, 6))]
    oc = outs()
    launch_rows("cpu", contact_forces_rows, contact_forces_row, n, args[1], args[2], ContactSet(args[0], *args[3:], *oc))
    dev = to_backend("gpu", (args[1], args[2], ContactSet(np.zeros_like(args[0]), *args[3:], *outs())))
    launch_rows("gpu", contact_forces_rows, contact_forces_row, n, *dev)
    c = dev[2]
    og = [to_host(a) for a in (c.out_force, c.out_fn, c.out_state, c.out_total)]
    print(json.dumps({"d": float(max(np.abs(a - b).max() for a, b in zip(oc, og))),
                      "scale": float(np.abs(oc[3]).max())}))
    """
)


def test_cuda_simulator_matches_cpu():
    """The contact-force kernel through numba's CUDA simulator agrees with the CPU build."""
    res = run_simulated(GPU_SCRIPT, strict=False)
    # same source in double precision; the Jacobi eigen-solver may take a different number of
    # sweeps on FMA-level differences: agreement at round-off relative to the force scale
    assert res["d"] < 1e-10 * res["scale"], res


@pytest.mark.gpu
def test_real_gpu_matches_cpu():  # pragma: no cover - needs a device
    res = run_on_device(GPU_SCRIPT)
    assert res["d"] < 1e-9 * res["scale"], res


@pytest.mark.parametrize("rows, rank", [(3, 3), (6, 6), (12, 6), (24, 6), (12, 4), (24, 5)])
def test_stick_solve_is_numpy_pinv(rows, rank):
    """The stick system's minimum-norm solve through the 6×6 Gram matrix (and its Cholesky fast
    path) equals numpy's ``pinv(C Cᵀ) b`` (SVD, same relative cut 1e-10) for full-rank and
    rank-deficient factors C — 12 rows of rank 6 is a face of four contacts; rank 4 and 5 model
    collinear or coincident contacts, where the eigen-decomposition path must take over."""
    from systems.probe_contact.contact_motion import low_rank_pinv_solve

    rng = np.random.default_rng(rows * 10 + rank)
    c = rng.normal(size=(rows, rank)) @ rng.normal(size=(rank, 6))
    b = rng.normal(size=rows)
    o_c, o_b = 0, 6 * rows
    o_s, o_v, o_t, o_u = o_b + rows, o_b + rows + 36, o_b + rows + 72, o_b + rows + 78
    w = np.zeros(o_u + 6)
    w[o_c:o_b] = c.ravel()
    w[o_b:o_b + rows] = b
    kept = low_rank_pinv_solve.cpu(w, np.int64(o_c), np.int64(rows), np.int64(o_b), np.int64(o_s), np.int64(o_v),
                                   np.int64(o_t), np.int64(o_u), 1e-10, False)
    ref = np.linalg.pinv(c @ c.T, rcond=1e-10, hermitian=True) @ b
    assert kept == min(rank, rows)
    # condition numbers of these random factors stay below ~1e4: 1e-9 relative is round-off
    np.testing.assert_allclose(w[o_b:o_b + rows], ref, rtol=0, atol=1e-9 * np.abs(ref).max())


def test_stick_solve_of_an_edge_deflates_its_known_null_space():
    """Two contacts of a rigid body (an edge) make the 6×6 stick matrix C Cᵀ of rank 5: equal and
    opposite forces along the edge move nothing. Given that null vector, the solve takes the
    Cholesky path on C Cᵀ + σ zzᵀ and still equals numpy's minimum-norm ``pinv(C Cᵀ) b`` (SVD, cut
    1e-10) for any b, consistent or not; it reports rank 5."""
    from systems.probe_contact.contact_motion import low_rank_pinv_solve

    rng = np.random.default_rng(5)
    m, inertia = 3.0, np.diag([0.4, 0.7, 0.9])
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    inertia = q @ inertia @ q.T
    l_rot = np.linalg.cholesky(np.linalg.inv(inertia))
    r = rng.normal(size=(2, 3)) * 0.3
    c = np.zeros((6, 6))
    for k in range(2):
        c[3 * k:3 * k + 3, :3] = np.eye(3) / np.sqrt(m)
        c[3 * k:3 * k + 3, 3:] = -np.cross(r[k], l_rot.T).T          # −[r]× L
    e = (r[1] - r[0]) / np.linalg.norm(r[1] - r[0])
    z = np.concatenate([e, -e]) / np.sqrt(2.0)
    assert np.linalg.norm(c.T @ z) < 1e-14
    for b in (c @ rng.normal(size=6), rng.normal(size=6)):
        o_c, o_b = 0, 36
        o_s, o_v, o_t, o_u = 42, 78, 114, 120
        w = np.zeros(o_u + 6)
        w[o_c:o_b] = c.ravel()
        w[o_b:o_b + 6] = b
        w[o_u:o_u + 6] = z
        kept = low_rank_pinv_solve.cpu(w, np.int64(o_c), np.int64(6), np.int64(o_b), np.int64(o_s), np.int64(o_v),
                                       np.int64(o_t), np.int64(o_u), 1e-10, True)
        ref = np.linalg.pinv(c @ c.T, rcond=1e-10, hermitian=True) @ b
        assert kept == 5
        np.testing.assert_allclose(w[o_b:o_b + 6], ref, rtol=0, atol=1e-12 * np.abs(ref).max())


@pytest.mark.parametrize("kind", ["regular", "singular", "ill-conditioned"])
def test_sym_pinv_solve_fast_deflated_and_eigen_paths(kind):
    """``sym_pinv_solve`` gives numpy's minimum-norm ``pinv(A) b`` (SVD, cut 1e-10) on each of its
    paths: Cholesky (well-conditioned A: left in place), Cholesky after deflating the null space
    that the factorisation meets (rank 3 of 5), and Jacobi sweeps where neither proves anything
    (an eigenvalue 2e-10, above the cut but below what the Cholesky test can certify: the sweeps
    leave A diagonal)."""
    from systems.probe_contact.contact_motion import sym_pinv_solve

    n = 5
    rng = np.random.default_rng(7)
    if kind == "ill-conditioned":
        q, _ = np.linalg.qr(rng.normal(size=(n, n)))
        a = q @ np.diag([1.0, 0.9, 0.8, 0.7, 2e-10]) @ q.T
    else:
        g = rng.normal(size=(n, 3 if kind == "singular" else n + 2))
        a = g @ g.T
    b = rng.normal(size=n)
    w = np.zeros(2 * n * n + 2 * n)
    w[:n * n] = a.ravel()
    w[2 * n * n + n:] = b
    kept = sym_pinv_solve.cpu(w, np.int64(0), np.int64(n * n), np.int64(2 * n * n), np.int64(n),
                              np.int64(2 * n * n + n), 1e-10)
    assert kept == (3 if kind == "singular" else n)
    out = w[:n * n].reshape(n, n)
    if kind == "regular":
        assert np.array_equal(out, a)
    elif kind == "ill-conditioned":
        assert np.max(np.abs(out - np.diag(np.diag(out)))) < 1e-12
    else:       # deflated: A + σ zzᵀ, still symmetric, now of full rank
        assert np.linalg.matrix_rank(out) == n and np.allclose(out, out.T)
    ref = np.linalg.pinv(a, rcond=1e-10, hermitian=True) @ b
    # round-off times the condition number: 5e9 × 1e-16 ~ 1e-6 for the ill-conditioned A (both SVD and
    # the sweeps resolve its weak direction only that well), below 1e-12 otherwise
    tol = 1e-5 if kind == "ill-conditioned" else 1e-10
    np.testing.assert_allclose(w[2 * n * n + n:], ref, rtol=0, atol=tol * np.abs(ref).max())


def test_grid_normal_rate_matches_central_differences_of_an_independent_trilinear_field():
    """The bare-grid normal rate (one query, the trilinear field's Hessian, eq 2.20) against scipy's
    trilinear interpolation of the same nodes: N from central differences of d (exact for d linear
    along an axis inside a cell, round-off ~1e-16/1e-6 of d), Ṅ from a central difference of N along
    v (error O(ε²) for ε = 1e-4 m of a field varying on the cell scale, ~1e-8 of |Ṅ|). Points keep
    5 % of a cell (≥ 2.5 cm) from every face, so no difference (1e-4 m here, the general kernel's
    1e-3 m) crosses one. The general kernel (three gradient queries) agrees to round-off inside a
    cell (its central difference is exact for a quadratic)."""
    from scipy.interpolate import RegularGridInterpolator

    from components.terrain import SDFGrid, TerrainSDF
    from systems.deployment.geometry import normal_and_rate, normal_and_rate_grid
    from systems.terrain.sdf import terrain_args

    rng = np.random.default_rng(21)
    origin, spacing = np.array([-1.0, 0.5, -2.0]), np.array([0.7, 0.5, 0.9])
    values = rng.normal(size=(6, 5, 4)) + np.arange(4)[None, None, :] * 0.9   # a "surface" rising along z
    ta = terrain_args(TerrainSDF(SDFGrid(origin=origin, spacing=spacing, values=values)))
    axes = [origin[k] + spacing[k] * np.arange(values.shape[k]) for k in range(3)]
    rgi = RegularGridInterpolator(axes, values, method="linear")

    def normal(p):
        h = 1e-6
        g = np.array([(rgi(p + h * e)[0] - rgi(p - h * e)[0]) / (2 * h) for e in np.eye(3)])
        return g / np.linalg.norm(g)

    grid_k, general_k = normal_and_rate_grid.cpu, normal_and_rate.cpu
    for _ in range(40):
        cell = rng.integers(0, np.array(values.shape) - 1)
        frac = rng.uniform(0.05, 0.95, 3)
        p = origin + spacing * (cell + frac)
        v = rng.normal(size=3) * 0.01
        got = np.array(grid_k(ta, *p, *v))
        eps = 1e-4 / np.linalg.norm(v)
        nd = (normal(p + eps * v) - normal(p - eps * v)) / (2 * eps)
        np.testing.assert_allclose(got[:3], normal(p), rtol=0, atol=1e-8)
        np.testing.assert_allclose(got[3:], nd, rtol=0, atol=1e-7 * max(1.0, np.abs(nd).max()))
        np.testing.assert_allclose(got, general_k(ta, *p, *v), rtol=0, atol=1e-10)
    # at rest the rate is zero, as the general kernel's
    assert grid_k(ta, *p, 0.0, 0.0, 0.0)[3:] == (0.0, 0.0, 0.0)
