"""The mode loop (systems.modes): user modes and EVENT systems take part in a deployment.

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
from systems.modes import Mode

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
    from systems.integration import Integrator

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
