"""Facet contact (JEOD Contact Model, seed 000): the verification runs against closed forms and invariants.

References used here, all independent of the code under test:

* the linear spring–damper impact of two free bodies (reduced mass μ = m₁m₂/(m₁+m₂)):
  ``μ ẍ + c ẋ + k x = 0`` from ``x = 0``, ``ẋ = v₀`` gives, with ``ω_n = √(k/μ)``,
  ``ζ = c / (2√(kμ))``, ``ω_d = ω_n √(1−ζ²)``: contact duration ``t_c = π/ω_d`` (JEOD mode: the
  force acts until ``x`` returns to 0), coefficient of restitution ``e = exp(−ζπ/√(1−ζ²))``,
  maximum penetration ``x_max = (v₀/ω_n) exp(−ζ arccos ζ / √(1−ζ²))``, final velocities from
  momentum and ``e``; checked against scipy's ``solve_ivp`` in :func:`test_closed_form_is_right`;
* linear and angular momentum of the two-body system (no external load);
* the geometric first-contact time of the arbitrary run from scipy's bounded minimiser of the
  segment distance (the facets fly freely before contact) and scipy's ``Rotation``.

RK4 tolerance: the spring–damper force jumps by ``c·v`` when contact starts (``x = 0⁺``,
``ẋ = v₀``) and, in JEOD mode, again when it ends. A jump inside a step of length ``h`` is
integrated by RK4's stage weights (1/6, 1/3, 1/3, 1/6 at c = 0, ½, ½, 1) instead of exactly: the
velocity increment of that step is off by at most ``h·Δa/3`` (``Δa = Δf/μ``). With both jumps,
``|Δ(relative velocity)| ≤ (h/3)(c/μ)(1 + e) v₀``, i.e. ``|e_sim − e| ≤ (h/3)(c/μ)(1 + e)``; the
smooth part of the motion is integrated with local error ``O((ω h)⁵)`` ≈ 10⁻⁸, negligible. The
error therefore shrinks linearly with ``h`` (checked over several phases of the step grid).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.optimize import brentq, minimize
from scipy.special import beta
from scipy.spatial.transform import Rotation

from components.contact import (LBF_PER_IN, LBF_S_PER_IN, PairInteractions, SpringInteraction, contact_surface,
                                point_facet)
from components.rigid import rigid_body
from ecs import InputError, Phase, System, World
from scenes import jeod
from systems.facets.contact import FacetContact
from systems.dynamics.integration import Integrator

K, C, MU = 20 * LBF_PER_IN, 0.4 * LBF_S_PER_IN, 0.05


class Probe(System):
    """Records, at every derivative evaluation, the stage time, the body states and the contact sums."""

    phase = Phase.DERIVATIVE
    reads = ("contact_force", "contact_torque", "body_position", "body_velocity", "body_attitude", "row_time")
    after = (FacetContact,)

    def __init__(self, contact: FacetContact):
        self.contact = contact
        keys = ("time", "pos", "vel", "att", "force", "torque", "count", "x", "fn")
        self.log: dict[str, list] = {k: [] for k in keys}

    def bind(self, world):
        self.t = world.table_with("contact_force")

    def process(self, frame):
        t = self.t
        self.log["time"].append(t.by_sample("row_time")[:, 0].copy())
        self.log["pos"].append(t.by_sample("body_position").copy())
        self.log["vel"].append(t.by_sample("body_velocity").copy())
        self.log["att"].append(t.by_sample("body_attitude").copy())
        self.log["force"].append(t.by_sample("contact_force").copy())
        self.log["torque"].append(t.by_sample("contact_torque").copy())
        self.log["count"].append(self.contact.contact_count.copy())
        xs, fns = [], []
        for s in range(t.samples):
            c = self.contact.contacts(s)
            xs.append(c["penetration"].max() if len(c["penetration"]) else 0.0)
            fns.append(float(np.sum(c["force"] * c["normal"], axis=1).min()) if len(c["penetration"]) else 0.0)
        self.log["x"].append(np.array(xs))
        self.log["fn"].append(np.array(fns))

    def arrays(self) -> dict[str, np.ndarray]:
        return {k: np.array(v) for k, v in self.log.items()}


def run(scene, *, samples=1, overrides=None, probe=True):
    """Run a scene with a Probe; returns (RunResult, probe arrays or None, FacetContact)."""
    w = scene.world
    fc = next(s for s in w.systems if isinstance(s, FacetContact))
    p = w.add_system(Probe(fc)) if probe else None
    w.compile(samples=samples, overrides=overrides)
    r = w.run(t_end=scene.t_end, dt=scene.dt, record_every=1, record=scene.record, final=scene.final)
    return r, (p.arrays() if p else None), fc


def spring_damper(m1, m2, v0, k=K, c=C):
    """Closed-form impact of two free bodies on a linear spring-damper (module docstring)."""
    mu = m1 * m2 / (m1 + m2)
    wn = math.sqrt(k / mu)
    z = c / (2.0 * math.sqrt(k * mu))
    wd = wn * math.sqrt(1.0 - z * z)
    e = math.exp(-z * math.pi / math.sqrt(1.0 - z * z))
    return dict(mu=mu, e=e, t_c=math.pi / wd, x_max=v0 / wn * math.exp(-z * math.acos(z) / math.sqrt(1.0 - z * z)),
                bound_e=lambda h: h / 3.0 * (c / mu) * (1.0 + e))


def test_closed_form_is_right():
    """The closed form used below against scipy's solve_ivp with an event at x = 0."""
    ref = spring_damper(100.0, 100.0, 2.0)
    mu = ref["mu"]
    ev = lambda t, y: y[0]  # noqa: E731
    ev.terminal, ev.direction = True, -1
    sol = solve_ivp(lambda t, y: [y[1], -(K * y[0] + C * y[1]) / mu], (0, 1), [0.0, 2.0], rtol=1e-12, atol=1e-14,
                    events=ev, dense_output=True)
    assert abs(sol.t_events[0][0] - ref["t_c"]) < 1e-9
    assert abs(-sol.y_events[0][0][1] / 2.0 - ref["e"]) < 1e-9
    tt = np.linspace(0, ref["t_c"], 20001)
    assert abs(sol.sol(tt)[0].max() - ref["x_max"]) < 1e-8


# --------------------------------------------------------------------------- the JEOD runs
#: run -> (masses, contact separation of the reference points along x for aligned runs [m])
ALIGNED = {
    "jeod-point": ((100.0, 100.0), 2.0),          # two r = 1 spheres
    "jeod-point-inverse": ((100.0, 100.0), 2.0),
    "jeod-line": ((200.0, 200.0), 4.0),           # cap tips at ±(L/2 + r) = ±2 m
    "jeod-line-inverse": ((200.0, 200.0), 4.0),
    "jeod-line-point": ((200.0, 200.0), 3.0),     # cap tip at 2 m + sphere radius 1 m
    "jeod-line-side-to-side": ((200.0, 200.0), 3.0),  # v1's side at x = 1 m, v2's cap tip 2 m ahead of it
}


def _momentum(vel, masses):
    return np.einsum("...bk,b->...k", vel, np.asarray(masses))


@pytest.fixture(scope="module")
def aligned_runs():
    return {name: run(jeod.RUNS[name]()) for name in ALIGNED}


@pytest.mark.parametrize("name", sorted(ALIGNED))
def test_aligned_run_invariants_and_contact_onset(aligned_runs, name):
    masses, sep = ALIGNED[name]
    r, p, fc = aligned_runs[name]
    # equal and opposite contact forces at every evaluation (the kernel adds +F and -F to zeroed sums)
    fmax = np.abs(p["force"]).max()
    assert fmax > 100.0  # contact happened
    assert np.abs(p["force"].sum(axis=2)).max() <= 1e-12 * fmax
    # linear momentum conserved to 1e-12 (relative) at every frame
    P = _momentum(r.trajectories["body_velocity"][0], masses)
    assert np.abs(P - P[0]).max() <= 1e-12 * np.linalg.norm(P[0])
    # contact exactly while the reference points are closer than the contact separation
    d = p["pos"][:, 0, 1, 0] - p["pos"][:, 0, 0, 0]
    in_contact = p["count"][:, 0] > 0
    clear = np.abs(d - sep) > 1e-9
    assert np.array_equal(in_contact[clear], (d < sep)[clear])
    first = int(np.argmax(in_contact))
    # the first contact evaluation is within one half-step of travel past the contact separation
    assert 0.0 < sep - d[first] <= 2.0 * 0.01 / 2 + 1e-12
    # the vehicles separate: no contact at the end, opening at the closing speed times e
    assert p["count"][-1, 0] == 0
    v = r.finals["body_velocity"][0]
    assert v[1, 0] - v[0, 0] > 0.5
    # nothing leaves the x axis, nothing spins (aligned: the force passes through both reference points)
    assert np.abs(r.trajectories["body_position"][0, :, :, 1:]).max() < 1e-12
    assert np.abs(r.trajectories["body_omega"][0]).max() < 1e-12


@pytest.mark.parametrize("name", sorted(ALIGNED))
def test_aligned_run_matches_closed_form(aligned_runs, name):
    (m1, m2), _ = ALIGNED[name]
    r, p, fc = aligned_runs[name]
    h = 0.01
    ref = spring_damper(m1, m2, 2.0)
    v = r.finals["body_velocity"][0][:, 0]
    e_sim = (v[1] - v[0]) / 2.0
    assert abs(e_sim - ref["e"]) <= ref["bound_e"](h)
    # final velocities: momentum (−2·m2) and restitution give v1 = −m2 (1+e) 2/(m1+m2), v2 = v1 + 2e
    v1 = -2.0 * m2 * (1.0 + ref["e"]) / (m1 + m2)
    assert abs(v[0] - v1) <= 2.0 * m2 / (m1 + m2) * 2.0 * ref["bound_e"](h)
    assert abs(v[1] - (v1 + 2.0 * ref["e"])) <= 2.0 * 2.0 * ref["bound_e"](h)
    # contact duration from the first to the last evaluation in contact (stages are h/2 apart: ±h/2 each end)
    t = p["time"][:, 0]
    on = np.flatnonzero(p["count"][:, 0] > 0)
    assert abs((t[on[-1]] - t[on[0]]) - ref["t_c"]) <= h
    # maximum penetration: velocity error ≤ (h/3)(c v0/μ) integrated over ≈ t_c/2, plus sampling ½ a_max (h/2)²
    tol = h / 3 * C * 2.0 / ref["mu"] * ref["t_c"] / 2 + 0.5 * K * ref["x_max"] / ref["mu"] * (h / 2) ** 2
    assert abs(p["x"][:, 0].max() - ref["x_max"]) <= tol
    # JEOD mode: the damping pulls at the end of contact (f_n < 0 before x returns to 0)
    assert p["fn"][:, 0].min() < -10.0


def test_point_converges_to_closed_form_as_step_shrinks():
    """max over 4 phases of the step grid of |e_sim − e| within the RK4 bound, shrinking with h."""
    ref = spring_damper(100.0, 100.0, 2.0)
    errs = {}
    for h in (0.01, 0.0025):
        sc = jeod.build_point(dt=h, t_end=5.6, record_every=None)
        veh2 = sc.world.entity("veh2")
        x0 = np.array([[12.0 - 2.0 * h * j / 4, 0.0, 0.0] for j in range(4)])
        r, _, _ = run(sc, samples=4, overrides={(veh2, "body_position"): x0}, probe=False)
        v = r.finals["body_velocity"][:, :, 0]
        errs[h] = np.abs((v[:, 1] - v[:, 0]) / 2.0 - ref["e"]).max()
        assert errs[h] <= ref["bound_e"](h)
    assert errs[0.0025] <= 0.5 * errs[0.01]


def test_clamp_mode_never_pulls():
    r, p, _ = run(jeod.build_point(mode="clamp", t_end=5.6))
    assert p["fn"][:, 0].min() >= 0.0
    # with no pull the vehicles separate faster than in JEOD mode (energy is not taken back by damping)
    v = r.finals["body_velocity"][0][:, 0]
    assert (v[1] - v[0]) / 2.0 > spring_damper(100.0, 100.0, 2.0)["e"]


def _angular_momentum(r, masses, inertias):
    pos, vel = r.trajectories["body_position"][0], r.trajectories["body_velocity"][0]
    att, om = r.trajectories["body_attitude"][0], r.trajectories["body_omega"][0]
    L = np.zeros((pos.shape[0], 3))
    for b, (m, I) in enumerate(zip(masses, inertias)):
        R = Rotation.from_quat(att[:, b], scalar_first=True)
        L += m * np.cross(pos[:, b], vel[:, b]) + R.apply(om[:, b] * np.asarray(I))
    return L


#: RK4 conserves linear invariants (momentum) exactly but the quadratic r × p only to its
#: truncation error; the friction force switches on with a jump (μ c v₀ ≈ 7 N), an O(h²)
#: position error on a ≈ 1 m lever arm: |ΔL|/|L| ~ (μ c v₀/m) h² · 1 m / (100 kg m²/s) ≈ 1e-7.
L_DRIFT = 1e-6
#: Net contact moment about the origin: ±F at one common point cancel exactly, up to round-off
#: (relative 1e-12 of |F|·|x|) and to the attitude used at RK4's stages: a stage quaternion is
#: not unit (|q|² − 1 = ε, measured from the probe), and the kernel rotates r and F into body axes
#: with it as it is while scipy normalises it to map the torque back, a relative error ≤ 2ε on
#: the moment |r × F| of each body (lever arm |r| ≤ 2 m, the facet reach).


def _moment_tol(p, reach=2.0):
    eps = np.abs(np.sum(p["att"] ** 2, axis=-1) - 1.0).max()
    f = np.abs(p["force"]).max()
    return 1e-12 * f * np.abs(p["pos"]).max() + 2.0 * 2.0 * eps * f * reach


def _net_moment(p):
    """|Σ_b (x_b × F_b + R_b τ_b)| per evaluation: the contact moment about the origin."""
    pos, att, f, tq = p["pos"][:, 0], p["att"][:, 0], p["force"][:, 0], p["torque"][:, 0]
    m = np.zeros((pos.shape[0], 3))
    for b in range(pos.shape[1]):
        m += np.cross(pos[:, b], f[:, b]) + Rotation.from_quat(att[:, b], scalar_first=True).apply(tq[:, b])
    return np.linalg.norm(m, axis=1)


def test_off_center_run_stays_in_plane_and_spins_about_one_axis():
    """The default momentum-exact law (one common contact point) on the off-centre run.

    The scene itself uses JEOD's law (tests/test_facet_jeod_law.py); ``law="momentum"`` runs it
    with tumble's default, which conserves linear and angular momentum exactly.
    """
    r, p, _ = run(jeod.build_point_off_center(law="momentum"))
    masses = (100.0, 100.0)
    fmax = np.abs(p["force"]).max()
    assert np.abs(p["force"].sum(axis=2)).max() <= 1e-12 * fmax
    P = _momentum(r.trajectories["body_velocity"][0], masses)
    assert np.abs(P - P[0]).max() <= 1e-12 * np.linalg.norm(P[0])
    # contact starts at a centre distance of 2 m (sum of radii)
    d = np.linalg.norm(p["pos"][:, 0, 1] - p["pos"][:, 0, 0], axis=1)
    first = int(np.argmax(p["count"][:, 0] > 0))
    assert 0.0 < 2.0 - d[first] <= 0.01 and np.all(d[:first] >= 2.0)
    # planar motion: z and the in-plane angular velocity components stay zero
    assert np.abs(r.trajectories["body_position"][0, :, :, 2]).max() < 1e-12
    om = r.trajectories["body_omega"][0]
    assert np.abs(om[:, :, :2]).max() < 1e-12
    # both spin about z, the same way and (equal inertia, common contact point) at the same rate
    wz = r.finals["body_omega"][0][:, 2]
    assert wz[0] > 0.05 and abs(wz[1] - wz[0]) <= 1e-9 * abs(wz[0])
    # angular momentum: the contact forces exert no net moment about the origin at any evaluation
    # (both bodies get ±F at one common point), and the integrated L drifts only by RK4's error
    assert _net_moment(p).max() <= _moment_tol(p)
    L = _angular_momentum(r, masses, ((40.0,) * 3,) * 2)
    assert np.abs(L - L[0]).max() <= L_DRIFT * np.abs(L).max()
    assert p["count"][-1, 0] == 0


def _segment_distance(c1, h1, c2, h2):
    """Distance of segments c ± h by scipy's bounded minimiser (convex quadratic in (s, t))."""
    f = lambda st: np.sum((c1 + st[0] * h1 - c2 - st[1] * h2) ** 2)  # noqa: E731
    best = min((minimize(f, x0, bounds=[(-1, 1), (-1, 1)], method="L-BFGS-B", tol=1e-14)
                for x0 in ([0.0, 0.0], [1.0, -1.0], [-1.0, 1.0])), key=lambda o: o.fun)
    return math.sqrt(max(best.fun, 0.0))


def test_arbitrary_run_first_contact_and_momentum():
    sc = jeod.build_line_arbitrary(law="momentum")  # the momentum-exact law: no net contact moment
    r, p, _ = run(sc)
    masses = (200.0, 200.0)
    P = _momentum(r.trajectories["body_velocity"][0], masses)
    assert np.abs(P - P[0]).max() <= 1e-12 * np.linalg.norm(P[0])
    assert _net_moment(p).max() <= _moment_tol(p)
    L = _angular_momentum(r, masses, (jeod.CYLINDER_INERTIA,) * 2)
    assert np.abs(L - L[0]).max() <= L_DRIFT * max(np.abs(L).max(), 1.0)
    fmax = np.abs(p["force"]).max()
    assert fmax > 100.0 and np.abs(p["force"].sum(axis=2)).max() <= 1e-12 * fmax
    # geometric first contact: free flight until then; capsules of radius 1 touch at segment distance 2
    q1 = Rotation.from_euler("ZYX", [0.0, 45.0, 0.0], degrees=True)
    q2 = Rotation.from_euler("ZYX", [0.0, 0.0, 45.0], degrees=True)
    h1, h2 = q1.apply([1.0, 0.0, 0.0]), q2.apply([1.0, 0.0, 0.0])
    gap = lambda t: _segment_distance(np.zeros(3), h1, np.array([12.0 - 2.0 * t, 0, 0]), h2) - 2.0  # noqa: E731
    t_first = brentq(gap, 0.0, 5.0, xtol=1e-12)
    t = p["time"][:, 0]
    touching = p["count"][:, 0] > 0
    assert not touching[t < t_first - 1e-9].any()
    assert touching[t >= t_first + 0.01].any() and t[np.argmax(touching)] <= t_first + 0.01
    # the off-axis hit spins both cylinders about the inertial y axis (normal and lever arm lie in x-z;
    # the rolled cylinder is axisymmetric): other components only from round-off of the 45° attitudes
    # accumulated over 1000 steps (measured ~1e-10 rad/s; a physical leak would be ≳ 1e-3 of ω)
    w_inertial = [Rotation.from_quat(r.finals["body_attitude"][0, b], scalar_first=True).apply(
        r.finals["body_omega"][0, b]) for b in range(2)]
    for w in w_inertial:
        assert abs(w[1]) > 0.01 and np.hypot(w[0], w[2]) < 1e-7 * abs(w[1])
    assert p["count"][-1, 0] == 0


def test_scene_names_and_inputs():
    assert sorted(jeod.RUNS) == sorted(jeod.DESCRIPTIONS)
    for name, b in jeod.RUNS.items():
        sc = b()
        assert sc.name == name and sc.dt == 0.01 and sc.t_end == 10.0
    assert jeod.STEEL_K == pytest.approx(3502.5367, rel=1e-7)  # 20 lbf/in
    assert jeod.STEEL_C == pytest.approx(70.050734, rel=1e-7)  # 0.4 lbf s/in
    with pytest.raises(InputError, match="run"):
        jeod.build(run="jeod-nope")
    with pytest.raises(InputError, match="mode"):
        jeod.build_point(mode="soft")


class RowTimes(System):
    """Records every body's row_time at every derivative evaluation (coupled bodies stay together)."""

    phase = Phase.DERIVATIVE
    reads = ("row_time",)

    def bind(self, world):
        self.t, self.log = world.table_with("contact_force"), []

    def process(self, frame):
        self.log.append(self.t.by_sample("row_time").copy())


#: dp54 tolerances of the adaptive runs below (the Integrator's defaults).
RTOL, ATOL = 1e-10, 1e-12


@pytest.mark.parametrize("method", ["dp54", "bs32"])
@pytest.mark.parametrize("name", ["jeod-point", "jeod-line", "jeod-line-point"])
def test_adaptive_steps_match_closed_form(name, method):
    """Facet contact with an adaptive method: the sample's two bodies step together (one error
    norm, one step: every evaluation sees both at the same time) and the impact matches the closed
    form. Bound: each accepted step's local error is held below atol + rtol·|y| (≈ 2e-10 m/s on
    velocities of ≤ 2 m/s), so after N attempted steps the relative velocity is off by at most
    N·(atol + rtol·2v₀) per body — the usual accumulated-tolerance bound of error-per-step
    control (Hairer, Nørsett & Wanner II.4), which holds across the force jumps at contact start
    and end because the controller rejects every step whose embedded estimate exceeds it. The
    fixed-step RK4 runs above are held to (h/3)(c/μ)(1+e) ≈ 1e-3; these land orders below it.
    """
    (m1, m2), _ = ALIGNED[name]
    sc = jeod.RUNS[name](method=method)
    rt = sc.world.add_system(RowTimes())
    r, p, fc = run(sc)
    times = np.array(rt.log)[:, 0]
    assert np.array_equal(times[:, 0], times[:, 1])            # the bodies never part in time
    n_steps = len(rt.log) / (7 if method == "dp54" else 4)     # attempted steps (stages per step)
    ref = spring_damper(m1, m2, 2.0)
    v = r.finals["body_velocity"][0][:, 0]
    bound = 2.0 * n_steps * (ATOL + RTOL * 2.0 * 2.0)
    assert abs((v[1] - v[0]) / 2.0 - ref["e"]) <= bound < 1e-3 * ref["bound_e"](0.01)
    v1 = -2.0 * m2 * (1.0 + ref["e"]) / (m1 + m2)
    assert abs(v[0] - v1) <= bound and abs(v[1] - (v1 + 2.0 * ref["e"])) <= bound
    P = _momentum(r.trajectories["body_velocity"][0], (m1, m2))
    assert np.abs(P - P[0]).max() <= 1e-12 * np.linalg.norm(P[0])
    # more evaluations where the force changes fast: steps shrink in contact, not in free flight
    on = p["count"][:, 0] > 0
    t_on = np.ptp(p["time"][on, 0])
    assert on.sum() / t_on > 2.0 * (~on).sum() / (np.ptp(p["time"][:, 0]) - t_on)


def _regularised(scene, slip=1e-3):
    """The scene with its steel/steel interaction's Coulomb friction regularised below ``slip`` m/s."""
    inter = scene.world.resource(PairInteractions)
    n1, n2, it = inter.entries[0]
    inter.entries[0] = (n1, n2, SpringInteraction(k=it.k, c=it.c, mu=it.mu, mode=it.mode, law=it.law,
                                                  slip_velocity=slip))
    return scene


def test_adaptive_refuses_exact_coulomb_friction():
    sc = jeod.build_point_off_center(law="momentum", method="dp54")
    with pytest.raises(InputError, match="slip_velocity of steel/steel.*chattering"):
        sc.world.compile()
    _regularised(sc).world.compile()            # regularised: accepted
    jeod.build_point_off_center(method="dp54").world.compile()  # JEOD's friction: continuous, accepted


def test_adaptive_off_center_conserves_momentum():
    """dp54 on the off-centre run with the momentum-exact law (friction regularised below 1 mm/s):
    linear momentum to 1e-12, no net contact moment, angular momentum to the accumulated step
    tolerance (far below RK4's L_DRIFT)."""
    r, p, _ = run(_regularised(jeod.build_point_off_center(law="momentum", method="dp54")))
    masses = (100.0, 100.0)
    P = _momentum(r.trajectories["body_velocity"][0], masses)
    assert np.abs(P - P[0]).max() <= 1e-12 * np.linalg.norm(P[0])
    assert _net_moment(p).max() <= _moment_tol(p)
    L = _angular_momentum(r, masses, ((40.0,) * 3,) * 2)
    assert np.abs(L - L[0]).max() <= 1e-3 * L_DRIFT * np.abs(L).max()
    wz = r.finals["body_omega"][0][:, 2]
    assert wz[0] > 0.05 and abs(wz[1] - wz[0]) <= 1e-9 * abs(wz[0])


def test_adaptive_samples_step_independently():
    """Each sample has its own step sequence: a sample's result in a batch of samples with other
    approach speeds is bit-identical to the same sample run alone."""
    speeds = np.array([-1.0, -1.7, -2.3, -3.1])

    def go(idx):
        sc = _regularised(jeod.build_point_off_center(law="momentum", method="dp54", t_end=1.5, record_every=None))
        veh2 = sc.world.entity("veh2")
        pos = np.tile([2.2, 0.5, 0.0], (idx.size, 1))
        vel = np.stack([speeds[idx], np.zeros(idx.size), np.zeros(idx.size)], axis=1)
        sc.world.compile(samples=idx.size, overrides={(veh2, "body_position"): pos, (veh2, "body_velocity"): vel})
        return sc.world.run(t_end=sc.t_end, dt=sc.dt, final=("body_velocity", "body_omega")).finals

    every = go(np.arange(4))
    alone = go(np.array([2]))
    assert np.abs(every["body_omega"][2]).max() > 0.0
    for c in every:
        assert np.array_equal(every[c][2], alone[c][0])
        assert not np.array_equal(every[c][2], every[c][1])


@pytest.mark.parametrize("method", ["rk4", "dp54"])
def test_contact_start_and_end_are_events(method):
    """RUN_point logs one start and one end event, bracketing the closed-form times: contact starts
    when the centres are 2 m apart, t = (12 − 2)/2 = 5 s, and lasts t_c = π/ω_d (JEOD mode: until
    the penetration returns to 0). Each event lies in (contact_time_before, contact_time], a bracket
    one step long (dt = 0.01 s for RK4; the adaptive step there for dp54). At t = 5 s exactly the
    spheres touch with zero penetration: not a contact yet, so the start bracket may begin there."""
    sc = jeod.build_point(method=method, record_every=None)
    sc.world.compile()
    r = sc.world.run(t_end=sc.t_end, dt=sc.dt, final=("body_velocity",))
    ev, n = r.events, int(r.event_count[0])
    assert n == 2 and not r.events["event_overflow"][0]
    change, t, t0 = ev["contact_change"][0, :n], ev["contact_time"][0, :n], ev["contact_time_before"][0, :n]
    assert change.tolist() == [1, 2]
    ref = spring_damper(100.0, 100.0, 2.0)
    truth = np.array([5.0, 5.0 + ref["t_c"]])
    assert np.all(t0 <= truth) and np.all(truth <= t) and np.all(t - t0 <= 0.01 + 1e-12)
    assert ev["contact_facet_a"][0, :n].tolist() == [0, 0] and ev["contact_facet_b"][0, :n].tolist() == [1, 1]
    assert ev["contact_body_a"][0, :n].tolist() == [0, 0] and ev["contact_body_b"][0, :n].tolist() == [1, 1]
    np.testing.assert_allclose(ev["contact_normal"][0, :n], [[1.0, 0, 0]] * 2, atol=1e-12)
    # first seen within one step of closing at 2 m/s: penetration ≤ 2 m/s × bracket, speed ≈ −2 m/s
    vn = ev["contact_normal_speed"][0, :n]
    assert 0.0 < ev["contact_penetration"][0, 0] <= 2.0 * (t[0] - t0[0])
    assert abs(vn[0] + 2.0) < 0.05 and abs(vn[1] - 2.0 * ref["e"]) < 0.05
    np.testing.assert_allclose(ev["contact_point"][0, 0], [1.0, 0, 0], atol=2.0 * (t[0] - t0[0]))


def test_contact_events_off_and_initial_contact():
    """events=False declares no fields; a pair touching at t = 0 is logged as a start with no bracket."""
    w, fc, (b1, b2), _ = _pair_world(positions=[(0, 0, 0), (1.5, 0, 0)])
    w.compile()
    w.run(t_end=0.02, dt=0.01)
    ev, cnt = w.events.to_host()
    assert cnt[0] >= 1 and ev["contact_change"][0, 0] == 1 and np.isnan(ev["contact_time_before"][0, 0])
    assert ev["contact_time"][0, 0] == 0.0
    w2 = World("quiet")
    w2.add_system(FacetContact(events=False))
    assert "contact_time" not in w2.events.fields
    with pytest.raises(InputError, match="events"):
        FacetContact(events="yes")


def test_determinism_across_threads_and_batch_size(monkeypatch):
    """Per-sample results do not depend on the thread count nor on the other samples of the batch.

    The drivers switch to their parallel build at ``PARALLEL_MIN_ROWS`` rows (samples for the
    contact kernels); it is lowered here so that a small batch runs the parallel builds.
    """
    import numba

    import ecs.kernels

    monkeypatch.setattr(ecs.kernels, "PARALLEL_MIN_ROWS", 16)
    S = 64
    speeds = -1.0 - np.linspace(0.0, 2.0, S)

    def go(samples, threads, idx):
        sc = jeod.build_point_off_center(t_end=0.2, record_every=None)
        veh2 = sc.world.entity("veh2")
        pos = np.tile([2.2, 0.5, 0.0], (samples, 1))
        vel = np.stack([speeds[idx], np.zeros(samples), np.zeros(samples)], axis=1)
        sc.world.compile(samples=samples, overrides={(veh2, "body_position"): pos, (veh2, "body_velocity"): vel})
        old = numba.get_num_threads()
        numba.set_num_threads(threads)
        try:
            res = sc.world.run(t_end=sc.t_end, dt=sc.dt, final=("body_velocity", "body_omega"))
        finally:
            numba.set_num_threads(old)
        return res.finals

    idx = np.arange(S)
    a = go(S, 1, idx)
    b = go(S, min(2, numba.config.NUMBA_NUM_THREADS), idx)
    one = go(1, 1, np.array([37]))  # one sample: serial builds
    for c in a:
        assert np.array_equal(a[c], b[c])
        assert np.array_equal(a[c][37], one[c][0])
    assert np.abs(a["body_omega"]).max() > 0.0  # the contact did happen


# --------------------------------------------------------------------------- small worlds
def _pair_world(*, positions, materials=("steel", "steel"), trees=(-1, -1), same_body=False, mode="jeod",
                register=(("steel", "steel"),), velocity2=(0.0, 0.0, 0.0), mu=MU, broadphase=True):
    w = World("pair")
    inter = w.add_resource(PairInteractions())
    for a, b in register:
        inter.register(a, b, SpringInteraction(k=K, c=C, mu=mu, mode=mode))
    b1 = w.spawn(*rigid_body(mass=100.0, inertia=[40.0] * 3, position=positions[0]), contact_surface(tree=trees[0]))
    b2 = w.spawn(*rigid_body(mass=100.0, inertia=[40.0] * 3, position=positions[1], velocity=velocity2),
                 contact_surface(tree=trees[1]))
    f1 = w.spawn(point_facet(b1, radius=1.0, material=materials[0]))
    f2 = w.spawn(point_facet(b1 if same_body else b2, radius=1.0, point=(0.5, 0, 0) if same_body else (0, 0, 0),
                             material=materials[1]))
    fc = w.add_system(FacetContact(broadphase=broadphase))
    w.add_system(Integrator("rk4"))
    return w, fc, (b1, b2), (f1, f2)


@pytest.mark.parametrize("broadphase", [True, False])
@pytest.mark.parametrize("case, expect", [
    ("overlapping", True),
    ("same_body", False),
    ("attached", False),
    ("other_tree", True),
    ("unmatched", False),
    ("matched_pair", True),
])
def test_exclusion_and_pair_matching(case, expect, broadphase):
    """Requirement Contact_4 (same body, one tree) and §3.4.2 (no pair without a registered interaction)."""
    kw = dict(positions=((0, 0, 0), (1.5, 0, 0)), broadphase=broadphase)
    if case == "same_body":
        kw["same_body"] = True
    if case == "attached":
        kw["trees"] = (3, 3)
    if case == "other_tree":
        kw["trees"] = (3, 4)
    if case == "unmatched":
        kw["materials"] = ("steel", "rubber")
    if case == "matched_pair":
        kw["materials"] = ("steel", "rubber")
        kw["register"] = (("steel", "steel"), ("rubber", "steel"))
    w, fc, bodies, _ = _pair_world(**kw)
    w.compile()
    w.run(t_end=0.01, dt=0.01)
    t = w.table_with("contact_force")
    assert (int(fc.contact_count[0]) > 0) == expect
    assert (np.abs(t["contact_force"]).max() > 0.0) == expect
    if not broadphase:
        assert fc.static_pair_count == (1 if expect else 0)
        assert len(fc.describe_pairs()) == fc.static_pair_count


def test_latch_holds_two_facets_together():
    """§3.4.8: with the spring's sign reversed the facets, once touching, are pulled together and stay."""
    def go(mode):
        w, fc, (b1, b2), _ = _pair_world(positions=((0, 0, 0), (2.5, 0, 0)), velocity2=(-0.2, 0, 0), mode=mode, mu=0.0)
        probe = w.add_system(Probe(fc))
        w.compile()
        r = w.run(t_end=10.0, dt=0.01, record_every=1, record=("body_position", "body_velocity"),
                  final=("body_velocity",))
        return r, probe.arrays()

    r, p = go("latch")
    pos, vel = r.trajectories["body_position"][0], r.trajectories["body_velocity"][0]
    d = np.linalg.norm(pos[:, 1] - pos[:, 0], axis=1)
    caught = int(np.argmax(d < 2.0))
    assert caught > 0 and np.all(d[caught:] < 2.0)  # never released once caught
    assert p["fn"][:, 0].min() < 0.0  # the normal force pulls
    dv = np.abs(vel[:, 1, 0] - vel[:, 0, 0])
    # the latch oscillation is damped (ζ ≈ 0.084, ω ≈ 8.4 rad/s: amplitude × e^{-0.7 t})
    assert dv[-100:].max() < 0.05 * dv[caught:caught + 100].max()
    assert d[-100:].max() < 0.05 * d[caught]
    assert abs(vel[-1, :, 0].sum() - (-0.2)) < 1e-12  # momentum kept (equal masses)
    r, _ = go("jeod")  # the ordinary spring bounces them apart
    v = r.finals["body_velocity"][0][:, 0]
    assert v[1] - v[0] > 0.1


def test_hertz_user_interaction_from_scene_file():
    """A scene file registers a compiled Hertz law; elastic impact against Hertz's closed form."""
    from pathlib import Path

    from scenes.registry import load_scene

    path = Path(__file__).resolve().parents[1] / "scenes" / "examples" / "hertz_contact.py"
    sc = load_scene(path)
    r, p, fc = run(sc)
    prm = sc.params
    m = prm["mass"]
    mu = m * m / (2 * m)
    r_star = prm["radius"] / 2
    k_h = 4.0 / 3.0 * prm["e_star"] * math.sqrt(r_star)
    v0 = prm["speed"]
    # Hertz impact (Johnson, Contact Mechanics §11.4): v² = v0² − (4K/5μ) x^{5/2}, so
    # x_max = (5 μ v0² / 4K)^{2/5} and
    # t_c = 2 (x_max/v0) ∫₀¹ (1 − u^{5/2})^{-1/2} du = 2 (x_max/v0)(2/5) B(2/5, 1/2)
    x_max = (5.0 * mu * v0**2 / (4.0 * k_h)) ** 0.4
    t_c = 2.0 * x_max / v0 * 0.4 * beta(0.4, 0.5)
    v = r.finals["body_velocity"][0][:, 0]
    # elastic: restitution 1; RK4 at h = 1 ms over the ~50 ms contact, no force jump (f ∝ x^1.5): error ≪ 1e-4
    assert abs((v[1] - v[0]) / v0 - 1.0) < 1e-4  # b arrived at −v0 onto a at rest
    t = p["time"][:, 0]
    on = np.flatnonzero(p["count"][:, 0] > 0)
    assert abs(t[on[-1]] - t[on[0]] - t_c) <= sc.dt  # stages h/2 apart: ±h/2 at each end
    assert abs(p["x"][:, 0].max() - x_max) <= 1e-3 * x_max  # sampling at h/2: ½ a (h/2)² / x_max ≈ 5e-4
    assert np.abs(p["force"].sum(axis=2)).max() <= 1e-12 * np.abs(p["force"]).max()


def test_contact_buffer_overflow_fails_the_sample():
    w = World()
    w.add_resource(PairInteractions()).register("steel", "steel", SpringInteraction(k=K, c=C))
    b1 = w.spawn(*rigid_body(mass=1.0, inertia=[1.0] * 3), contact_surface())
    b2 = w.spawn(*rigid_body(mass=1.0, inertia=[1.0] * 3, position=(1.0, 0, 0)), contact_surface())
    for y in (0.0, 0.3):
        w.spawn(point_facet(b1, radius=1.0, point=(0, y, 0), material="steel"))
        w.spawn(point_facet(b2, radius=1.0, point=(0, y, 0), material="steel"))
    w.add_system(FacetContact(max_contacts=2))
    w.add_system(Integrator("rk4"))
    w.compile(samples=2)
    r = w.run(t_end=0.02, dt=0.01)
    assert list(r.status) == [9, 9]  # Status.FAILED: 4 contacts in a buffer of 2


def test_bodies_without_contact_surface_and_bad_overrides():
    """ContactSurface is optional (no tree, sums kept internally); dispersed facet values are checked."""
    w = World()
    w.add_resource(PairInteractions()).register("steel", "steel", SpringInteraction(k=K, c=C))
    b1 = w.spawn(*rigid_body(mass=100.0, inertia=[40.0] * 3))
    b2 = w.spawn(*rigid_body(mass=100.0, inertia=[40.0] * 3, position=(2.5, 0, 0), velocity=(-1.0, 0, 0)))
    w.spawn(point_facet(b1, radius=1.0, material="steel"))
    f2 = w.spawn(point_facet(b2, radius=1.0, material="steel"))
    w.add_system(FacetContact())
    w.add_system(Integrator("rk4"))
    w.compile()
    r = w.run(t_end=2.0, dt=0.01, final=("body_velocity",))
    v = r.finals["body_velocity"][0][:, 0]
    assert v[0] < -0.5 and v.sum() == pytest.approx(-1.0, abs=1e-12)  # they bounced, momentum kept
    with pytest.raises(InputError, match="facet_radius"):
        w.compile(samples=2, overrides={(f2, "facet_radius"): np.array([1.0, -0.5])})
    with pytest.raises(InputError, match="facet_length"):
        w.compile(samples=1, overrides={(f2, "facet_length"): np.array([0.3])})
