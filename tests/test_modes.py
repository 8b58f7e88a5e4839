"""The mode loop (systems.deployment.modes): user modes and EVENT systems take part in a deployment.

The example is scenes/examples/deploy_harpoon.py (an anchoring harpoon: an EVENT system that takes
touchdowns before the Stronge resolver and a user mode that holds the anchored probe). Its
reference is the same scene without the harpoon: until a probe's first touchdown the two runs are
the same computation, so the anchored probes must settle exactly where and when the plain run's
first collision happened (the event log's CoM position and time), and every probe the anchor
cannot hold must end with the plain run's bytes.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytest
import xarray as xr

import tumble
from components.status import Status
from ecs import Phase, System
from ecs.errors import ScheduleError
from scenes.registry import import_scene_file
from systems.deployment.modes import Mode

ROOT = pathlib.Path(__file__).resolve().parents[1]
SAMPLES = 16


def _harpoon():
    return import_scene_file(ROOT / "scenes/examples/deploy_harpoon.py")


def _run(tmp_path, name, **params):
    out = tmp_path / name
    tumble.run_batch(_harpoon().build, samples=SAMPLES, out=out, seed=3, params=params)
    return xr.open_zarr(out, group="final"), xr.open_zarr(out, group="events")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("harpoon")
    return {"plain": _run(tmp, "plain.zarr", energy=0.0), "harpoon": _run(tmp, "harpoon.zarr"),
            "fine": _run(tmp, "fine.zarr", frame=20.0)}


def test_the_harpoon_anchors_exactly_the_touchdowns_within_its_energy(runs):
    plain, ev = runs["plain"]
    hp, _ = runs["harpoon"]
    energy = _harpoon().build.__kwdefaults__["energy"]
    ke = ev["energy_before"].values[:, 0]          # the first collision's kinetic energy (target frame)
    held = ke <= energy
    assert 0 < held.sum() < SAMPLES, "the example must show both outcomes"
    assert np.all(hp["status"].values == Status.SETTLED)
    # anchored: at rest where and when the plain run first touched down, settled after the hold
    np.testing.assert_array_equal(hp["probe_settle_time"].values[held, 0], ev["time"].values[held, 0])
    np.testing.assert_array_equal(hp["probe_first_impact_time"].values[held, 0], ev["time"].values[held, 0])
    np.testing.assert_array_equal(hp["body_position"].values[held, 0], ev["position"].values[held, 0])
    assert np.all(hp["body_velocity"].values[held] == 0.0) and np.all(hp["body_omega"].values[held] == 0.0)
    np.testing.assert_allclose(hp["probe_end_time"].values[held, 0] - ev["time"].values[held, 0], 60.0,
                               rtol=1e-12)   # DeploySettings.settle_hold
    assert np.all(hp["probe_collisions"].values[held] == 0)
    # the others: the tether broke, the probe bounced as without the harpoon, to the same bytes
    for k in plain.data_vars:
        np.testing.assert_array_equal(hp[k].values[~held], plain[k].values[~held], err_msg=k)


def test_a_user_mode_keeps_the_recording_interval_out_of_the_physics(runs):
    """20 s frames instead of 300 s: the anchored mode stops rows at every frame end, and still
    every final array is the same bytes."""
    a, _ = runs["harpoon"]
    b, _ = runs["fine"]
    for k in a.data_vars:
        np.testing.assert_array_equal(a[k].values, b[k].values, err_msg=k)


def _deploy_world(*systems):
    scene = _harpoon().build(energy=0.0)
    for s in systems:
        scene.world.add_system(s)
    return scene.world


class _Hold(Mode):
    code = 16

    def advance(self, ctx, rows, t_end):
        ctx.table["row_time"][rows] = t_end[rows] + 1.0     # past the frame end: refused


class _Catch(System):
    phase = Phase.EVENT

    def resolve(self, ctx, rows):
        ctx.table["probe_phase"][rows] = 16


def test_a_mode_whose_code_is_taken_is_refused():
    class Clash(_Hold):
        code = 2        # DeployPhase.CONTACT

    w = _deploy_world(Clash())
    with pytest.raises(tumble.InputError, match=r"Clash.code.*taken by ContactProbes"):
        w.run(t_end=10.0, dt=10.0)


def test_an_event_system_without_resolve_is_refused_in_a_mode_loop():
    class NoResolve(System):
        phase = Phase.EVENT

        def process(self, frame):
            pass

    w = _deploy_world(NoResolve())
    with pytest.raises(tumble.InputError, match="NoResolve.*resolve"):
        w.run(t_end=10.0, dt=10.0)


def test_event_and_mode_systems_no_system_runs_are_refused():
    from components.rigid import rigid_body
    from systems.dynamics.integration import Integrator

    for extra in (_Catch(), _Hold()):
        w = tumble.World("no-loop")
        w.spawn(*rigid_body(mass=1.0, inertia=[1.0, 1.0, 1.0]), name="b")
        w.add_system(Integrator())
        w.add_system(extra)
        w.compile()
        with pytest.raises(ScheduleError, match=f"{extra.name} .*would never run"):
            w.run(t_end=1.0, dt=1.0)


def test_a_mode_that_steps_past_the_frame_end_is_an_error():
    """A mode without dense output that left a row past its frame end would record a later state
    as the frame end's."""
    w = _deploy_world(_Catch(), _Hold())
    w.compile(samples=2)
    with pytest.raises(RuntimeError, match="mode _Hold advanced row .* past its frame end"):
        w.run(t_end=3000.0, dt=300.0)


# ------------------------------------------------------------------ terms restricted to modes
def _holddown():
    return import_scene_file(ROOT / "scenes/examples/deploy_holddown.py")


def _slide(thrust: float, drop: float = 0.0):
    """A cube on a face on top of a non-rotating 10 km sphere (g = 1e-3 m/s² at its surface),
    started in contact motion sliding at 2 cm/s with friction 0.5 (or released ``drop`` [m] above
    the surface, in flight), with a hold-down thruster of ``thrust`` [N] (none at 0). Returns
    (distance of the final position from the axis [m], the run's result)."""
    from components.contact_params import ContactParams
    from components.deploy import DeployPhase, DeploySettings, DeployTarget
    from components.gravity import PointMass
    from components.terrain import TerrainSDF, sdf_sphere
    from scenes.assets.probes import platonic, probe_mass_properties
    from scenes.deploy import deployment_scene

    radius, g = 1e4, 1e-3
    target = DeployTarget(gravity=PointMass(mu=g * radius ** 2), terrain=TerrainSDF(base=sdf_sphere(radius)),
                          rotation=np.zeros(3))
    shape = platonic("cube", mass=5.0, density=500.0)
    mp = probe_mass_properties(shape, mass=5.0)
    low = -float(np.min(shape.vertices[:, 2]))
    x0 = np.array([0.0, 0.0, radius + low + drop])
    sc = deployment_scene("slide", "slide", target=target, shapes=[shape], shape_mass=[mp],
                          contact=ContactParams(restitution=0.0, friction=0.5), position=x0,
                          position_sigma3=[0, 0, 0], velocity=[0.02, 0.0, 0.0], velocity_sigma3=[0, 0, 0],
                          random_attitude=False, settings=DeploySettings(t_cap=2000.0), frame=100.0)
    if thrust:
        sc.world.add_system(_holddown().HoldDownThruster(thrust=thrust))
    pid = sc.world.entity("probe")
    phase = np.full(1, int(DeployPhase.FLY if drop else DeployPhase.CONTACT), np.int8)
    sc.world.compile(samples=1, overrides={(pid, "probe_phase"): phase})
    res = sc.world.run(t_end=sc.t_end, dt=sc.dt, final=("body_position", "probe_settle_time"))
    assert res.status[0] == Status.SETTLED
    x = res.finals["body_position"][0, 0]
    return float(np.linalg.norm(x[:2])), res


def test_a_contact_only_thruster_presses_the_probe_as_the_closed_form_says():
    """Coulomb friction stops a probe sliding at v0 on a flat surface after v0²/(2 μ a_n), a_n
    the normal acceleration: g alone, g + T/m with the hold-down thruster (T = m g here, so half
    the distance). The closed form for the plain slide, 0.4 m, checks the contact law; the
    ratio checks the term. Tolerances: 1e-3 for the distance (on the 10 km sphere gravity tilts by
    s/R along the slide, ≤ 4e-5 of the friction deceleration; the friction is regularised below
    vstar = 1e-4 m/s, a relative (vstar/v0)² = 2.5e-5; measured 8e-5), 2e-4 for the ratio, where
    both largely cancel (measured 2.2e-5). Without the term in contact motion the ratio is 1.
    """
    d0, _ = _slide(0.0)
    d1, _ = _slide(5.0 * 1e-3)
    assert d0 == pytest.approx(0.02 ** 2 / (2 * 0.5 * 1e-3), rel=1e-3)
    assert d1 / d0 == pytest.approx(0.5, rel=2e-4)


def test_a_contact_only_term_leaves_flight_to_the_same_bytes():
    """Until the probe first touches down, the runs with and without the thruster are the same
    computation (the flight kernel is the plain one): the first collision's time and state are the
    same bytes; after it they differ (the thrust acts in contact motion)."""
    _, a = _slide(0.0, drop=0.05)
    _, b = _slide(5.0 * 1e-3, drop=0.05)
    for f in ("time", "position", "velocity_before", "omega_before"):
        np.testing.assert_array_equal(a.events[f][0, 0], b.events[f][0, 0], err_msg=f)
    assert not np.array_equal(a.finals["body_position"], b.finals["body_position"])
    scene = _holddown().build()        # the example as a user runs it: the thruster is in its world
    assert [s.name for s in scene.world.systems if s.name == "HoldDownThruster"] == ["HoldDownThruster"]


def test_terms_restricted_to_modes_are_refused_where_they_cannot_act():
    from components.rigid import rigid_body
    from ecs.terms import Term
    from systems.dynamics.integration import Integrator

    mod = _holddown()

    class Collide(System):
        phase = Phase.DERIVATIVE

        def term(self, world):
            return Term("on_collide", mod.holddown_force, params={"thrust": 1.0}, modes=(1,))

    w = _deploy_world(Collide())
    with pytest.raises(tumble.InputError, match=r"on_collide: modes.*FLY \(0\) or CONTACT \(2\)"):
        w.compile(samples=1)
    w = tumble.World("rigid")
    w.spawn(*rigid_body(mass=1.0, inertia=[1.0, 1.0, 1.0], position=(1.0, 0.0, 0.0)), name="b")
    w.add_system(mod.HoldDownThruster(thrust=1.0))
    w.add_system(Integrator())
    with pytest.raises(tumble.InputError, match=r"holddown: modes.*must be empty in Integrator"):
        w.compile()
    with pytest.raises(tumble.InputError, match="modes"):
        Term("bad", mod.holddown_force, params={"thrust": 1.0}, modes=[2])
