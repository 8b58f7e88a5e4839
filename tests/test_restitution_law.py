"""A user-written restitution law (components.contact_params.RestitutionLaw) in the deployment: the
Hunt–Crossley law of scenes/examples/lander_restitution.py against its closed form at every impact
of a sphere, its GPU twin under the CUDA simulator, and the refusals."""

from __future__ import annotations

import numpy as np
import pytest
from sim_helpers import scene_finals_cpu_and_gpu

from components.contact_params import ContactParams, RestitutionLaw, low_gravity_regolith
from ecs.errors import InputError
from scenes.examples.lander_restitution import ALPHA, LAW, build, hunt_crossley


def test_every_impact_rebounds_as_the_law_says(tmp_path):
    """A sphere's impacts are central (the contact point's normal velocity is its centre's), so
    Stronge's energetic restitution is the kinematic one: at every logged impact the normal
    rebound speed (of every bounce: not of the final plastic collision that enters contact motion) is
    e'(v_n) |v_n| with e' = e · max(0, 1 − (2/3) α |v_n|), to 1e-12 of it
    (measured 1.3e-15). The law is not the constant e: the first impact's e' is 0.48, not 0.6."""
    from tumble import run_batch
    from tumble.calibrate import open_store_groups

    st = open_store_groups(run_batch(build(), samples=2, out=tmp_path / "s.zarr"))
    ev = st["events"]
    t, kind = np.asarray(ev["time"].values), np.asarray(ev["kind"].values)
    vb, va, n = (np.asarray(ev[k].values) for k in ("velocity_before", "velocity_after", "normal"))
    k = np.isfinite(t) & (kind == 0)        # bounces (kind 1: the plastic entry into contact motion, e = 0)
    assert k.sum() >= 10
    vnb = np.einsum("ij,ij->i", vb[k], n[k])
    vna = np.einsum("ij,ij->i", va[k], n[k])
    law = 0.6 * np.maximum(0.0, 1.0 - 2.0 / 3.0 * ALPHA * np.abs(vnb))
    err = float(np.max(np.abs(-vna / vnb - law)))
    print(f"\nmax |rebound ratio - law| = {err:.1e} over {k.sum()} impacts")
    assert err <= 1e-12
    assert abs(-vna[0] / vnb[0] - 0.6) > 0.1
    from ecs.status import Status

    assert np.all(np.asarray(st["final"]["status"].values) == Status.SETTLED)




def test_the_law_on_the_gpu_backend_matches_the_cpu_under_the_simulator():
    """The collision kernel's CUDA twin linked against the user's law (strict CUDA simulator):
    the CPU's final state after the first bounces, bit for bit."""
    out = scene_finals_cpu_and_gpu("scenes.examples.lander_restitution:build", 1800.0,
                                   ("body_position", "body_velocity", "probe_collisions"))
    assert out["cpu"]["probe_collisions"][0] >= 2, out["cpu"]
    for c, v in out["cpu"].items():
        assert v == out["gpu"][c], (c, v, out["gpu"][c])


def test_refusals():
    with pytest.raises(InputError, match="parameter count.*must take 3: e, vn, speed"):
        RestitutionLaw(__import__("numba").njit(lambda e, vn: e))
    with pytest.raises(InputError, match="must be a numba.njit function"):
        RestitutionLaw(lambda e, vn, speed: e)
    with pytest.raises(InputError, match="give one of law and regolith"):
        ContactParams(0.5, 0.5, regolith=low_gravity_regolith(), law=LAW)
    assert ContactParams(0.5, 0.5, law=LAW).row()[3] == 2.0
    assert hunt_crossley(0.6, -1.0, 1.0) == 0.0           # never below zero
    from systems.probe_contact.surface_impacts import ResolveSurfaceImpacts

    with pytest.raises(InputError, match="params.law.*deployment only"):
        ResolveSurfaceImpacts(None, [[0.0, 0.0, -0.1]], params=ContactParams(0.5, 0.5, law=LAW))


def _sphere_landing(law):
    from scenes.mission import deployment, release_above, small_body, solid_probe

    body = small_body("sphere", radii=(200.0, 200.0, 200.0), gm=5.0, period_h=100.0, gravity="point_mass",
                      resolution=24)
    return deployment("refused", body, solid_probe("sphere", mass=5.0, density=500.0),
                      release_above(body, latitude=20.0, longitude=0.0, altitude=30.0), restitution=0.6,
                      restitution_law=law)


def test_a_law_no_pair_names_is_refused_and_a_pair_without_the_law_too():
    """The law as a world resource with pair rows that do not name it would do nothing; a pair row
    that names a law the world lacks would fail every impact: both are refused before the run."""
    scene = _sphere_landing(None)
    scene.world.add_resource(LAW)
    with pytest.raises(InputError, match="RestitutionLaw hunt_crossley.*does nothing"):
        scene.world.run(t_end=10.0, dt=scene.dt)

    scene = _sphere_landing(LAW)
    del scene.world._resources[RestitutionLaw]       # a world built by hand without the law
    with pytest.raises(InputError, match="needs the world's RestitutionLaw resource"):
        scene.world.run(t_end=10.0, dt=scene.dt)
