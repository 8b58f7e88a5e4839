"""Broadphase (bounding spheres and boxes, sort-and-sweep) against JEOD's all-pairs loop.

The broadphase may only drop pairs whose bounding spheres are apart, so both modes must find the
same contacts at every evaluation (equal exact-test counts) and give the same motion up to the
order in which contact forces are summed (round-off).
"""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.bench_facets import build_docking, hull_facets
from components.contact import (PairInteractions, SpringInteraction, contact_surface, line_facet, point_facet)
from components.rigid import rigid_body
from ecs import World
from systems.facets.broadphase import body_bounding_spheres
from systems.facets.contact import FacetContact
from systems.dynamics.integration import Integrator


def _run(world, fc, t_end, dt=0.01, samples=1, overrides=None):
    world.compile(samples=samples, overrides=overrides)
    r = world.run(t_end=t_end, dt=dt, final=("body_position", "body_velocity", "body_attitude", "body_omega"))
    return r, fc


def _cloud(broadphase, seed=11, bodies=4, facets=25):
    """Bodies carrying random point and line facets, thrown at each other with random spins."""
    rng = np.random.default_rng(seed)
    w = World("cloud")
    w.add_resource(PairInteractions()).register("steel", "steel", SpringInteraction(k=2000.0, c=20.0, mu=0.3))
    for b in range(bodies):
        ang = 2 * np.pi * b / bodies
        pos = 1.6 * np.array([np.cos(ang), np.sin(ang), 0.2 * rng.standard_normal()])
        e = w.spawn(*rigid_body(mass=10.0, inertia=[2.0, 2.5, 3.0], position=pos, velocity=-0.4 * pos,
                                omega=tuple(rng.standard_normal(3))), contact_surface(tree=7 if b >= 2 else -1))
        for _ in range(facets):
            p = rng.uniform(-0.6, 0.6, 3)
            if rng.random() < 0.5:
                w.spawn(point_facet(e, radius=rng.uniform(0.05, 0.25), point=p, material="steel"))
            else:
                w.spawn(line_facet(e, radius=rng.uniform(0.05, 0.2), length=rng.uniform(0.1, 0.6), point=p,
                                   axis=rng.standard_normal(3), material="steel"))
    fc = w.add_system(FacetContact(broadphase=broadphase))
    w.add_system(Integrator("rk4"))
    return w, fc


@pytest.mark.parametrize("make, t_end", [(lambda bp: _cloud(bp), 4.0),
                                         (lambda bp: build_docking(facets=96, broadphase=bp), 1.5)],
                         ids=["tumbling-cloud", "docking"])
def test_broadphase_finds_the_all_pairs_contacts(make, t_end):
    a, fa = _run(*make(True), t_end)
    b, fb = _run(*make(False), t_end)
    assert fa.total_narrowphase_tests.sum() == fb.total_narrowphase_tests.sum() > 0
    assert fa.total_pair_candidates.sum() < fb.total_pair_candidates.sum()
    for c in a.finals:
        np.testing.assert_allclose(a.finals[c], b.finals[c], rtol=0, atol=1e-9)  # summation order only
    v = a.finals["body_velocity"][0]
    assert np.abs(v).max() > 0.0


def test_body_bounding_spheres_enclose_their_facets():
    rng = np.random.default_rng(2)
    fb = rng.integers(0, 5, 200)
    fb[:3] = [0, 1, 2]
    fp = rng.normal(size=(200, 3))
    fr = rng.uniform(0.1, 0.5, 200)
    fl = rng.uniform(0.0, 1.0, 200)
    c, r = body_bounding_spheres(fb, fp, fr, fl, 6)
    assert r[5] == -1.0  # no facets
    reach = np.linalg.norm(fp - c[fb], axis=1) + fr + 0.5 * fl
    assert np.all(reach <= r[fb] + 1e-12)
    for b in range(5):  # tight: one facet touches the sphere
        assert np.isclose(reach[fb == b].max(), r[b])


def test_hull_facets_count_and_kinds():
    f = hull_facets(1000)
    assert len(f) == 1000 and {k for k, _, _ in f} == {"point", "line"}
    assert np.allclose([np.abs(p).max() for _, p, _ in f], 1.0)  # all on the cube's faces
