"""User forces in a deployment: DERIVATIVE systems contribute row terms (ecs.terms) that act in
flight, contact motion and collision set-up; a system that cannot take part is refused.

References: closed forms (a force cancelling gravity gives a straight line at constant velocity;
a constant body torque on a probe with isotropic inertia gives ω(t) = ω₀ + L t / I; a constant
inertial force adds ½ a t² and a t, up to the gravity gradient's share Γ t²/12 and Γ t²/6).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import pickle
from pathlib import Path

import numpy as np
import pytest
from numba import njit

import tumble
from components.deploy import DeployTarget
from ecs import Phase, ScheduleError, System
from ecs.terms import Term
from scenes.registry import import_scene_file

ROOT = Path(__file__).resolve().parents[1]
MU = 5.0          # GM of the test body [m³/s²]
COLS = ("body_position", "body_velocity", "body_omega", "probe_phase")


@njit(cache=True)
def cancel_gravity(s, data, params):
    """F = −m g(x) of a point mass mu at the origin (reads the mass from its column)."""
    x, y, z = s.x, s.y, s.z
    r = math.sqrt(x * x + y * y + z * z)
    k = data.body_mass[s.i] * params.mu / (r * r * r)
    return k * x, k * y, k * z, 0.0, 0.0, 0.0


@njit(cache=True)
def body_torque(s, data, params):
    """A constant torque [N m] in body axes."""
    return 0.0, 0.0, 0.0, params.lx, params.ly, params.lz


class CancelGravity(System):
    phase = Phase.DERIVATIVE

    def term(self, world):
        return Term("cancel_gravity", cancel_gravity, columns=("body_mass",), params={"mu": MU})


class BodyTorque(System):
    phase = Phase.DERIVATIVE

    def __init__(self, torque):
        self.torque = torque

    def term(self, world):
        lx, ly, lz = self.torque
        return Term("body_torque", body_torque, params={"lx": lx, "ly": ly, "lz": lz}, torque=True)


class LaunchOnlyDrag(System):
    """The rigid-body pattern (scenes/examples/custom_force.py): a process, no row term."""

    phase = Phase.DERIVATIVE
    accumulates = ("body_force",)

    def process(self, frame):  # pragma: no cover - must never be called
        raise AssertionError("called")


def _world(*systems, velocity=(0.3, -0.2, -0.1), omega=(0.0, 0.0, 0.0), rotating=False):
    """A cube probe released 40 m above a 100 m sphere (point-mass gravity), identity attitude."""
    body = tumble.small_body("sphere", radii=(100, 100, 100), gm=MU, period_h=4.0, gravity="point_mass",
                             resolution=32)
    if not rotating:
        body = dataclasses.replace(body, rotation=np.zeros(3))
    probe = tumble.box_probe((0.3, 0.3, 0.3), mass=10.0, level=0)
    release = tumble.release_above(body, latitude=10.0, longitude=20.0, altitude=40.0)
    scene = tumble.deployment("terms", body, probe, dataclasses.replace(release, velocity=np.asarray(velocity)),
                              random_attitude=False)
    world = scene.world
    for s in systems:
        world.add_system(s)
    world.compile(samples=1)
    world.tables[0]["body_omega"][:] = omega
    return world, release


def test_a_force_cancelling_gravity_makes_the_probe_fly_a_straight_line():
    world, release = _world(CancelGravity())
    res = world.run(t_end=150.0, dt=10.0, record_every=1, record=COLS)
    x = res.trajectories["body_position"][0, :, 0]
    v = res.trajectories["body_velocity"][0, :, 0]
    fly = res.trajectories["probe_phase"][0, :, 0] == 0
    assert fly.sum() >= 10
    t = res.times[fly]
    exact = release.position + np.outer(t, (0.3, -0.2, -0.1))
    # closed form: g + F/m = 0 up to round-off (|g| ~ 2e-4 m/s², relative 1e-16), steps at rtol 1e-10
    assert np.max(np.abs(x[fly] - exact)) < 1e-9
    assert np.max(np.abs(v[fly] - (0.3, -0.2, -0.1))) < 1e-12


def test_probe_state_is_a_rigid_body_state_in_the_target_frame():
    """One schema: a probe's state columns are the rigid body's (``body_*``), in the deployment's
    integration frame, the rotating target frame, which the world (and so the store) names."""
    world, _ = _world()
    assert world.integration_frame == "target"
    assert {"body_position", "body_velocity", "body_attitude", "body_omega", "body_mass", "body_inertia",
            "body_com"} <= set(world.tables[0].specs)
    assert not any(c.startswith("probe_") and c[6:] in ("position", "velocity", "attitude", "omega", "mass", "inertia")
                   for c in world.tables[0].specs)
    rigid, _ = _rigid_world()
    assert rigid.integration_frame == "inertial"


def test_without_the_term_the_same_release_falls():
    """The check above can fail: without the term, gravity bends the path by ½ g t² ≈ 2 m at 150 s."""
    world, release = _world()
    res = world.run(t_end=150.0, dt=10.0, record_every=1, record=COLS)
    x = res.trajectories["body_position"][0, -1, 0]
    assert np.linalg.norm(x - (release.position + 150.0 * np.array([0.3, -0.2, -0.1]))) > 0.5


def test_a_body_torque_spins_up_an_isotropic_probe_linearly():
    """Flight with a torque term steps the attitude with the translation (no multirate split):
    ω̇ = I⁻¹(L − ω × Iω) = L / I for I = k·1 (a cube), so ω(t) = ω₀ + L t / I in body axes; the
    frame does not rotate, so the recorded rate relative to T is the inertial one."""
    L = np.array([2e-4, -1e-4, 3e-4])
    w0 = np.array([0.01, 0.02, -0.01])
    world, _ = _world(CancelGravity(), BodyTorque(L), omega=w0)
    inertia = world.tables[0]["body_inertia"][0]
    k = inertia[0, 0]
    assert np.allclose(inertia, k * np.eye(3), rtol=0, atol=1e-15 * k)
    res = world.run(t_end=100.0, dt=10.0, record_every=1, record=COLS)
    w = res.trajectories["body_omega"][0, :, 0]
    fly = res.trajectories["probe_phase"][0, :, 0] == 0
    exact = w0 + np.outer(res.times, L / k)
    # rtol 1e-10 per step on |ω| ~ 0.3 rad/s over ~100 steps
    assert np.max(np.abs(w[fly] - exact[fly])) < 1e-8
    # and the translation is still a straight line
    x = res.trajectories["body_position"][0, :, 0]
    v = res.trajectories["body_velocity"][0, :, 0]
    assert np.max(np.abs(v[fly] - (0.3, -0.2, -0.1))) < 1e-12


def test_a_derivative_system_without_a_term_is_refused_by_name():
    with pytest.raises(ScheduleError, match=r"LaunchOnlyDrag \(phase DERIVATIVE\) cannot take part in DeploymentLoop"):
        _world(LaunchOnlyDrag())


def test_deployment_refuses_orbital_environment_terms():
    """The environment systems' terms assume an Earth-centred inertial frame and a gravity field
    the deployment does not evaluate: each is refused by name, not applied in the target frame."""
    from components.environment import ExponentialAtmosphere
    from components.gravity import PointMass
    from ecs.errors import InputError
    from systems.forces.drag import AtmosphericDrag
    from systems.gravity.fields import GravitySystem

    with pytest.raises(InputError, match=r"Term gravity = 'gravity_term': cannot take part in the deployment: "
                                         r"it is a gravity field"):
        _world(GravitySystem(PointMass(mu=1.0)))
    with pytest.raises(InputError, match=r"Term drag = 'drag_term': .* Earth-centred inertial"):
        _world(AtmosphericDrag(ExponentialAtmosphere()))


def test_a_derivative_system_no_pipeline_calls_is_refused():
    w = tumble.World("lonely")
    w.add_system(CancelGravity())
    w.compile(samples=1)
    with pytest.raises(ScheduleError, match="CancelGravity .* would never run"):
        w.run(t_end=1.0, dt=1.0)


@njit(cache=True)
def _old_convention(i, t, x, y, z, vx, vy, vz, q0, q1, q2, q3, wx, wy, wz, mass, lx):
    return 0.0, 0.0, 0.0, lx, 0.0, 0.0


def test_a_term_kernel_with_the_wrong_arity_is_refused():
    with pytest.raises(tumble.InputError, match=r"parameter count .* 17.*must take 3: s, data, params"):
        Term("bad", _old_convention, params={"lx": 1.0})


def test_a_term_declaring_a_data_field_twice_or_a_private_name_is_refused():
    with pytest.raises(tumble.InputError, match=r"data field = 'body_mass'.*declared once"):
        Term("twice", cancel_gravity, columns=("body_mass",), arrays={"body_mass": np.ones(2)}, params={"mu": 1.0})
    with pytest.raises(tumble.InputError, match=r"parameter = '_mu'.*not starting with '_'"):
        Term("private", cancel_gravity, columns=("body_mass",), params={"_mu": 1.0})


def test_term_records_are_rebuilt_from_their_names_in_a_fresh_process():
    """numba's disk cache pickles a record type by reference: a process that never built the record
    must get the same class back from its name alone (ecs.terms.__getattr__)."""
    import subprocess
    import sys

    from ecs.terms import term_record

    cls = term_record(("body_area", "a_b", "x9"))
    assert cls is term_record(["body_area", "a_b", "x9"])
    blob = pickle.dumps(cls(np.zeros(2), 1.0, 2.0))
    code = ("import pickle, sys; r = pickle.loads(sys.stdin.buffer.read()); "
            "print(type(r).__module__, type(r).__name__, r._fields, r.a_b, r.x9)")
    out = subprocess.run([sys.executable, "-c", code], input=blob, capture_output=True, check=True, cwd=ROOT)
    assert out.stdout.decode().split() == ["ecs.terms", cls.__name__, "('body_area',", "'a_b',", "'x9')", "1.0",
                                           "2.0"]
    assert term_record(()) is term_record([])


def test_a_term_column_the_probe_table_lacks_is_refused():
    class Missing(System):
        phase = Phase.DERIVATIVE

        def term(self, world):
            return Term("missing", cancel_gravity, columns=("srp_area",), params={"mu": 1.0})

    with pytest.raises(tumble.InputError, match="srp_area"):
        _world(Missing())


def _example():
    return import_scene_file(ROOT / "scenes/examples/deploy_srp.py")


def test_a_scene_file_in_a_package_loads_under_its_package_name():
    """numba's disk cache imports a cached kernel's module by the name it was compiled under: the
    SRP example's term kernel cached by ``tumble run scenes/examples/deploy_srp.py`` under a
    path-derived name failed to load (ModuleNotFoundError) in a process that imported the example
    as ``scenes.examples.deploy_srp``. A file in an importable package has one name either way."""
    assert _example() is importlib.import_module("scenes.examples.deploy_srp")


def test_a_term_kernel_from_a_module_that_cannot_be_imported_is_refused():
    """numba's disk cache re-imports a kernel's module by name: a module loaded without registering
    it (spec_from_file_location alone) would poison the cache for the next process."""
    spec = importlib.util.spec_from_file_location("not_registered", ROOT / "scenes/examples/deploy_srp.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(tumble.InputError, match="must be importable"):
        mod.SolarPressure(area=1.0).term(None)


def test_the_srp_example_moves_the_first_arc_as_its_closed_form_dv_predicts():
    """scenes/examples/deploy_srp.py against the closed form of a constant inertial force.

    In N the perturbation of a constant acceleration a is δx = ½ a t², δv = a t, corrected by the
    gravity gradient Γ (|Γ| ≤ 2μ/r³ = 2.4e-6 s⁻² at r ≥ 290 m) by a relative Γt²/12 and Γt²/6:
    ≤ 0.4 % at t ≤ 100 s. The target frame turns (7.6 h period), so the force's direction in T
    is the term's own computation, checked here through δx_T = R(t)ᵀ δx_N and
    δv_T = R(t)ᵀ δv_N − Ω × δx_T. Tolerance 1 % (2.5× the bound).
    """
    mod = _example()
    runs = {}
    for e in (0.0, 1000.0):
        scene = mod.build(exaggerate=e, samples_spread=False, sun_longitude=60.0)
        world = scene.world
        world.compile(samples=1)
        runs[e] = world.run(t_end=100.0, dt=10.0, record_every=1, record=COLS)
        if e:
            target = world.resource(DeployTarget)
            m = float(world.tables[0]["body_mass"][0])
    assert np.all(runs[1000.0].trajectories["probe_phase"][0, :, 0] == 0)
    t = runs[0.0].times
    a = 1000.0 * mod.P_1AU * 1.3 * 0.06 / m
    s = np.array([math.cos(math.radians(60.0)), math.sin(math.radians(60.0)), 0.0])
    om = np.asarray(target.rotation)
    wn = np.linalg.norm(om)
    dx_n = -0.5 * a * t[:, None] ** 2 * s
    dv_n = -a * t[:, None] * s
    k = om / wn

    def to_t(v, tt):   # R(t)ᵀ v: turn by −|Ω| t about Ω (Rodrigues)
        c, sn = np.cos(-wn * tt)[:, None], np.sin(-wn * tt)[:, None]
        return v * c + np.cross(k, v) * sn + np.outer(v @ k, k) * (1 - c)

    dx_t = to_t(dx_n, t)
    dv_t = to_t(dv_n, t) - np.cross(om, dx_t)
    dx = runs[1000.0].trajectories["body_position"][0, :, 0] - runs[0.0].trajectories["body_position"][0, :, 0]
    dv = runs[1000.0].trajectories["body_velocity"][0, :, 0] - runs[0.0].trajectories["body_velocity"][0, :, 0]
    late = t >= 20.0
    assert np.all(np.linalg.norm(dx[late] - dx_t[late], axis=1) < 1e-2 * np.linalg.norm(dx_t[late], axis=1))
    assert np.all(np.linalg.norm(dv[late] - dv_t[late], axis=1) < 1e-2 * np.linalg.norm(dv_t[late], axis=1))
    # the frame's rotation is resolved: read as T components, δx_N is off by more than the tolerance
    assert np.linalg.norm(dx[-1] - dx_n[-1]) > 1e-2 * np.linalg.norm(dx_n[-1])


# --------------------------------------------------------------------------- the rigid-body pipeline
def _rigid_world(*systems, com=(0.2, -0.1, 0.05), attitude=(1.0, 0.0, 0.0, 0.0), method="rk4"):
    """One free rigid body (no gravity) with a CoM offset, integrated by the Integrator."""
    from components.rigid import rigid_body
    from systems.dynamics.integration import Integrator

    w = tumble.World("rigid-terms")
    b = w.spawn(*rigid_body(mass=4.0, inertia=[2.0, 2.0, 2.0], position=(1.0, 2.0, 3.0), velocity=(0.1, 0.0, -0.2),
                            attitude=attitude, com=com), name="body")
    for s in systems:
        w.add_system(s)
    w.add_system(Integrator(method))
    w.compile(samples=1)
    return w, b


def _com(res, com):
    from scipy.spatial.transform import Rotation

    p, q = res.trajectories["body_position"][0, :, 0], res.trajectories["body_attitude"][0, :, 0]
    return p + Rotation.from_quat(q, scalar_first=True).apply(com)


def test_the_srp_example_term_pushes_a_rigid_body_as_its_closed_form_says():
    """The deployment example's user force, unchanged, in the rigid-body pipeline: a constant force
    −P C_R A ŝ (no target rotation) through the CoM. The CoM moves on x₀ + v₀t + ½(F/m)t² — RK4 is
    exact on a quadratic, so to round-off (1e-12 relative) — and the body does not turn (ω = 0 to
    round-off: the force acts at the CoM, its moment about the offset reference point is balanced)."""
    srp = _example()
    push = srp.SolarPressure(area=2.0, cr=1.5, pressure=0.25, sun=(0.0, 0.6, 0.8))
    com = np.array([0.2, -0.1, 0.05])
    w, _ = _rigid_world(push, com=com, attitude=(math.cos(0.3), math.sin(0.3), 0.0, 0.0))
    res = w.run(t_end=20.0, dt=0.5, record_every=1, record=("body_position", "body_attitude", "body_omega"))
    f = -0.25 * 1.5 * 2.0 * np.array([0.0, 0.6, 0.8])
    t = res.times[:, None]
    c0 = _com(res, com)[0]
    expect = c0 + np.array([0.1, 0.0, -0.2]) * t + 0.5 * f / 4.0 * t ** 2
    assert np.abs(_com(res, com) - expect).max() <= 1e-12 * np.abs(expect).max()
    # α = 0 up to the round-off of the coupled 6×6 solve (the force's moment c × F about the reference
    # point cancels m c × a): ≲ 1e-15 of |c||F|/I ≈ 1e-16 rad/s² per step, 40 steps
    assert np.abs(res.trajectories["body_omega"]).max() <= 1e-14


def test_a_body_torque_term_spins_a_rigid_body_about_its_com():
    """A constant body-axis torque L about the CoM of an isotropic body (I = 2 kg m²): ω(t) = L t / I
    (RK4 exact on a linear function: 1e-12) and the CoM keeps its straight line at constant velocity
    while the reference point, 0.23 m away, swings around it."""
    com = np.array([0.2, -0.1, 0.05])
    w, _ = _rigid_world(BodyTorque((0.3, -0.1, 0.2)), com=com)
    res = w.run(t_end=10.0, dt=0.01, record_every=100, record=("body_position", "body_attitude", "body_omega"))
    om = res.trajectories["body_omega"][0, :, 0]
    expect = np.array([0.3, -0.1, 0.2])[None, :] * res.times[:, None] / 2.0
    assert np.abs(om - expect).max() <= 1e-12 * np.abs(expect).max()
    c = _com(res, com)
    line = c[0] + np.array([0.1, 0.0, -0.2]) * res.times[:, None]
    # the CoM path: RK4's error on the rotation of c (|c| ω² h⁴ terms) over 1000 steps, ≪ 1e-9 m
    assert np.abs(c - line).max() < 1e-9
    assert np.abs(res.trajectories["body_position"][0, :, 0] - line).max() > 0.1


class ReadsRollingRadius(System):
    """A term reading a probe-only column (the probe's rolling-resistance radius)."""

    phase = Phase.DERIVATIVE

    def term(self, world):
        return Term("reads_rolling_radius", cancel_gravity, columns=("probe_rolling_radius",), params={"mu": MU})


def test_a_term_column_the_rigid_table_lacks_is_refused():
    with pytest.raises(tumble.InputError, match="probe_rolling_radius.*every rigid-body table"):
        _rigid_world(ReadsRollingRadius())


def test_one_term_reads_the_mass_of_a_probe_and_of_a_rigid_body():
    """One schema: the probe test's gravity-cancelling term, which reads ``body_mass`` from its
    column, acts unchanged on a free rigid body in the same point-mass field (a GravitySystem):
    the two forces cancel and the CoM flies its straight line (RK4, 1e-12 relative)."""
    from components.gravity import PointMass
    from systems.gravity.fields import GravitySystem

    com = np.array([0.2, -0.1, 0.05])
    w, _ = _rigid_world(GravitySystem(PointMass(mu=MU)), CancelGravity(), com=com)
    res = w.run(t_end=20.0, dt=0.5, record_every=1, record=("body_position", "body_attitude"))
    c = _com(res, com)
    line = c[0] + np.array([0.1, 0.0, -0.2]) * res.times[:, None]
    assert np.abs(c - line).max() <= 1e-12 * np.abs(line).max()


def test_a_derivative_system_with_neither_process_nor_term_is_refused():
    class Nothing(System):
        phase = Phase.DERIVATIVE

    with pytest.raises(ScheduleError, match=r"Nothing \(phase DERIVATIVE\) cannot take part in Integrator"):
        _rigid_world(Nothing())


# ------------------------------------------------------------------ specialise: compile only what a scene uses
@njit(cache=True)
def _wide(kind, x):
    """A general kernel: dispatches over kinds at run time."""
    if kind == 0:
        return x + 1.0
    return 10.0 * x


@njit(cache=True)
def _narrow(kind, x):
    """The kernel of kind 1 alone."""
    return 10.0 * x


@njit(cache=True)
def _middle(kind, x):
    return 2.0 * _wide(kind, x)


@njit(cache=True)
def _root(kind, x):
    return _middle(kind, x) + 0.5


@njit(cache=True)
def _unrelated(x):
    return x


def test_specialise_relinks_the_callers_of_a_swapped_kernel_and_no_others():
    import inspect

    from ecs.kernels import reachable_kernels
    from ecs.terms import specialise

    roots = {"root": _root, "other": _unrelated}
    spec = specialise(roots, {_wide: _narrow})
    assert spec["other"] is _unrelated                     # reaches nothing swapped: shared, not copied
    assert spec["root"] is not _root
    names = {d.py_func.__qualname__ for d in reachable_kernels(spec["root"])}
    assert "_narrow" in names and "_wide" not in names     # the copy (and its copied caller) call the narrow one
    assert _root(0, 1.0) == 4.5                            # the original still dispatches: 2 (1 + 1) + 0.5
    assert spec["root"](0, 1.0) == 20.5                    # the copy runs kind 1's kernel: 2 (10) + 0.5
    middle = next(d for d in reachable_kernels(spec["root"]) if d.py_func.__qualname__ == "_middle")
    assert middle is not _middle                           # copied: it calls the narrow kernel
    assert middle.targetoptions["no_cpython_wrapper"] and middle.targetoptions["no_cfunc_wrapper"]  # only compiled code calls it
    assert not spec["root"].targetoptions.get("no_cpython_wrapper", False)   # a root keeps its Python entry (called above)
    assert specialise(roots, {_wide: _narrow}) == spec     # one copy per swap set and process
    home = Path(inspect.getsourcefile(spec["root"].py_func))
    assert home.name.startswith("tumble_spec_") and "_wide -> " in home.read_text()
    assert specialise(roots, {}) == roots


def test_a_deployment_compiles_its_own_gravity_source_and_terrain_only():
    """deploy-cube (voxel gravity, bare grid terrain): the phase kernels call the voxel field and
    the grid sampler, not the dispatch over every source and terrain (checked on what the kernels
    reach, before anything is compiled)."""
    from ecs.kernels import reachable_kernels
    from scenes.registry import load_scene
    from systems.deployment.loop import DeploymentLoop

    for rocks, general_terrain in ((False, False), ("psr", True)):
        scene = load_scene("deploy-cube", rocks=rocks)
        w = scene.world
        w.compile(samples=1)
        loop = next(s for s in w.systems if isinstance(s, DeploymentLoop))
        names = {d.py_func.__qualname__ for d in reachable_kernels(*loop.ctx.kernels.values())}
        assert "_voxel_gravity" in names and "_gravity_at" not in names and "_polyhedron_gravity" not in names
        assert ("_terrain_at_any" in names) == general_terrain
        assert ("_terrain_at_grid" in names) != general_terrain
