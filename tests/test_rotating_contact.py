"""Contact motion on a rotating target (issue 15 acceptance): the engine against an independent scipy solution.

A sphere probe (radius ρ = 0.125 m, 5 kg, J = 0.4 m ρ²) rolls without slipping on the 200 m sphere
of tests/test_deploy.py (point-mass gravity μ = 2.5 m³/s², target rate Ω = 1.5e-4 rad/s about z),
started in the CONTACT phase at latitude 30° rolling north-east at 2 cm/s and spinning 0.05 rad/s
about the local vertical: its rate ω_S/T is far from parallel to Ω (the angle stays above 30°),
so eq 2.5's ``−ω_S/N × ω`` term turns ω relative to the target at a rate ~Ω|ω|.

Reference (written here, independent of the engine): the constrained equations of a rolling
sphere derived directly in the target frame T (components in T):

* translation (eq 2.2): ``v̇ = g(x) + F/m − 2Ω × v − Ω × (Ω × x)``;
* rotation: ``J d/dt(ω_S/N)|_N = (−ρN) × F`` with ``ω_S/N = ω + Ω`` and Ω constant, so
  ``d/dt(ω)|_T = −(ρ/J) N × F − Ω × ω`` (eq 2.5 for an isotropic body: in body axes
  ``ω̇ = L/J − ω_S/N × ω``, and ``ω × ω = 0``);
* rolling without slip: the contact material point ``u = v − ρ ω × N`` stays at rest, ``u̇ = 0``:
  ``v̇ − ρ(ω̇ × N + ω × Ṅ) = 0`` with ``N = x/|x|``, ``Ṅ = (v − (v·N)N)/|x|``. With
  ``b = g − 2Ω×v − Ω×(Ω×x) + ρ (Ω×ω) × N − ρ ω × Ṅ`` it is linear in F:
  ``F/m + (ρ²/J) F_T = −b``, so ``F_N = −m b·N`` and ``F_T = −b_T / (1/m + ρ²/J)``.

It is integrated by ``solve_ivp`` (DOP853, rtol 1e-12). The engine solves the same contact with
its stick/slip force law (eqs 2.93–2.99, regularised, Baumgarte-stabilised) inside its own DP5(4)
at ``contact_rtol`` 1e-10; the reference confirms the probe sticks (|F_T| < f F_N with margin) and
stays pressed on (F_N > 0), so the engine's regularised law is in its stick branch throughout.

Tolerances: the engine's global error at rtol 1e-10 over this 300 s run is measured at 3.5e-10 m
in position, 1.8e-12 m/s in velocity, 4e-11 rad/s in ω and 2.6e-9 in the quaternion; the bounds
below are ~100× those (position 3e-8 m, velocity 1e-10 m/s, ω 5e-9 rad/s, quaternion 3e-7), so
round-off differences between platforms cannot reach them. Flipping the sign of eq 2.5's
``−ω_S/N × ω`` term moves the end state far outside them (measured, fresh numba cache):

* in the contact-phase rates (``deploy_physics._attitude_rates``): position 2.7e-2 m, velocity
  1.8e-4 m/s, ω 1.3e-3 rad/s, quaternion 0.12;
* in the torque given to the contact force law (``deploy_physics._contact_wrench``, which makes the
  stick force aim at the wrong angular acceleration): position 1.8e-4 m, velocity 6e-7 m/s,
  ω 1.1e-5 rad/s, quaternion 6.9e-4 (≥ 2000× each bound);
* in both: as the first.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.spatial.transform import Rotation

from components.contact_params import ContactParams
from components.deploy import DeployPhase, DeploySettings, DeployTarget
from components.gravity import PointMass
from components.status import Status
from components.terrain import TerrainSDF, sdf_sphere
from scenes.assets.mass_properties import MassProperties
from scenes.assets.probes import sphere_probe
from scenes.deploy import deployment_scene

MU = 2.5            # m^3/s^2
R_BODY = 200.0      # m
OMEGA = np.array([0.0, 0.0, 1.5e-4])   # rad/s, target rate in T
RHO, MASS = 0.125, 5.0
J = 0.4 * MASS * RHO**2
FRICTION = 0.5
T_END = 300.0
FRAMES = 10

LAT = math.radians(30.0)
N0 = np.array([math.cos(LAT), 0.0, math.sin(LAT)])
EAST = np.array([0.0, 1.0, 0.0])
NORTH = np.array([-math.sin(LAT), 0.0, math.cos(LAT)])
X0 = (R_BODY + RHO) * N0
V0 = 0.02 * (EAST + NORTH) / math.sqrt(2.0)
W0 = np.cross(N0, V0) / RHO + 0.05 * N0        # rolling (v = ρ ω × N) plus a spin about the normal


# --------------------------------------------------------------------------- the reference
def _constraint_force(x, v, w):
    r = np.linalg.norm(x)
    n = x / r
    g = -MU * x / r**3
    ndot = (v - (v @ n) * n) / r
    b = (g - 2.0 * np.cross(OMEGA, v) - np.cross(OMEGA, np.cross(OMEGA, x))
         + RHO * np.cross(np.cross(OMEGA, w), n) - RHO * np.cross(w, ndot))
    fn = -MASS * (b @ n)
    ft = -(b - (b @ n) * n) / (1.0 / MASS + RHO**2 / J)
    return fn, ft, n, g


def _rhs(t, y):
    x, v, w, q = y[0:3], y[3:6], y[6:9], y[9:13]
    fn, ft, n, g = _constraint_force(x, v, w)
    f = fn * n + ft
    a = g + f / MASS - 2.0 * np.cross(OMEGA, v) - np.cross(OMEGA, np.cross(OMEGA, x))
    alpha = -(RHO / J) * np.cross(n, f) - np.cross(OMEGA, w)
    q0, q1, q2, q3 = q
    wx, wy, wz = w                                  # q̇ = ½ (0, ω_T) ⊗ q  (q: body → T)
    qd = 0.5 * np.array([-wx * q1 - wy * q2 - wz * q3, wx * q0 + wy * q3 - wz * q2,
                         wy * q0 + wz * q1 - wx * q3, wz * q0 + wx * q2 - wy * q1])
    return np.concatenate([v, a, alpha, qd])


@pytest.fixture(scope="module")
def reference():
    t_out = np.linspace(0.0, T_END, FRAMES + 1)
    sol = solve_ivp(_rhs, (0.0, T_END), np.concatenate([X0, V0, W0, [1.0, 0.0, 0.0, 0.0]]), method="DOP853",
                    rtol=1e-12, atol=1e-14, t_eval=t_out, dense_output=True)
    assert sol.success
    return sol


def _engine():
    target = DeployTarget(gravity=PointMass(mu=MU), terrain=TerrainSDF(base=sdf_sphere(R_BODY)), rotation=OMEGA)
    mp = MassProperties(mass=MASS, com=np.zeros(3), inertia=J * np.eye(3))
    st = DeploySettings(t_cap=T_END, settle_hold=1e9, contact_rtol=1e-10, contact_atol=1e-12)
    sc = deployment_scene("rolling", "sphere rolling on a rotating sphere", target=target, shapes=[sphere_probe(RHO)],
                          shape_mass=[mp], contact=ContactParams(restitution=0.5, friction=FRICTION), position=X0,
                          position_sigma3=[0, 0, 0], velocity=V0, velocity_sigma3=[0, 0, 0], random_attitude=False,
                          omega=W0, settings=st, frame=T_END / FRAMES, record_every=1)
    w = sc.world
    pid = w.entity("probe")
    w.compile(samples=1, overrides={(pid, "probe_phase"): np.full(1, int(DeployPhase.CONTACT), np.int8)})
    return w.run(t_end=sc.t_end, dt=sc.dt, record_every=1, record=("body_position", "probe_phase"),
                 final=("body_position", "body_velocity", "body_attitude", "body_omega", "probe_collisions"))


@pytest.fixture(scope="module")
def engine():
    return _engine()


def test_reference_rolls_in_the_stick_regime_with_omega_not_along_the_target_rate(reference):
    """The reference's own invariants, and the conditions under which the engine's law is the same."""
    tt = np.linspace(0.0, T_END, 3001)
    ys = reference.sol(tt)
    worst_cone, angles = 0.0, []
    for y in ys.T:
        x, v, w = y[0:3], y[3:6], y[6:9]
        fn, ft, n, _ = _constraint_force(x, v, w)
        assert fn > 0.0                                                  # pressed on the surface
        worst_cone = max(worst_cone, np.linalg.norm(ft) / (FRICTION * fn))
        assert abs(np.linalg.norm(x) - (R_BODY + RHO)) < 1e-9            # on the surface
        assert np.linalg.norm(v - RHO * np.cross(w, n)) < 1e-12          # rolling without slip
        angles.append(math.degrees(math.acos(abs(w @ OMEGA) / (np.linalg.norm(w) * np.linalg.norm(OMEGA)))))
    assert worst_cone < 0.5             # friction well inside the cone: stick throughout
    assert min(angles) > 30.0           # ω far from parallel to Ω
    # the target-rotation term matters: ω turned by ~Ω|ω|t relative to its start (0.01 rad/s here)
    assert np.linalg.norm(ys[6:9, -1] - W0) > 5e-3


def test_engine_stays_in_contact_motion(engine):
    res = engine
    assert int(res.finals["probe_collisions"][0, 0]) == 0
    ph = res.trajectories["probe_phase"][0, :, 0]
    assert np.all(ph[:-1] == DeployPhase.CONTACT)
    assert res.status[0] == Status.TIMED_OUT


def test_rolling_on_rotating_target_matches_reference(engine, reference):
    res = engine
    f = res.finals
    y = reference.y[:, -1]
    q = y[9:13] / np.linalg.norm(y[9:13])
    w_body = Rotation.from_quat(q, scalar_first=True).inv().apply(y[6:9])   # ω_S/T in body axes
    q_eng = f["body_attitude"][0, 0]
    assert np.abs(f["body_position"][0, 0] - y[0:3]).max() < 3e-8
    assert np.abs(f["body_velocity"][0, 0] - y[3:6]).max() < 1e-10
    assert np.abs(f["body_omega"][0, 0] - w_body).max() < 5e-9
    assert min(np.abs(q_eng - q).max(), np.abs(q_eng + q).max()) < 3e-7
    # the path along the way (frame ends), not only the end point
    assert np.allclose(res.times, reference.t, rtol=0, atol=1e-9)
    pos = res.trajectories["body_position"][0, :, 0]
    assert np.abs(pos[:FRAMES + 1] - reference.y[0:3].T).max() < 3e-8
