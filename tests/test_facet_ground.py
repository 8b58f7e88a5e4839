"""Ground contact (JEOD SIM_ground_contact, seed 000 §4.3.3): a dropped vehicle comes to rest at the
static penetration of its spring, ``x = m g / k`` (force balance ``k x = m g`` once the velocity and
therefore the damping force vanish), on a plane, a spherical and an ellipsoidal planet, and on a
terrain given as a user's compiled signed-distance function.

Settling time: with damping ratio ζ the motion decays as ``exp(−ζ ω_n t)``; the fast variants use
ζ = 0.7 (``ω_n = √(k/m) ≈ 5.9 rad/s``), so after 6 s the residual is ``e^{-25} ≈ 1e-11`` of the
initial ~1 m: the static penetration is checked to 1e-6 m (the sphere planet's distance is
``|p − C| − R`` with ``|p − C| ≈ 6.4e6 m``, resolved to ~1e-9 m by float64).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from numba import njit

from components.contact import (EllipsoidGround, Grounds, PairInteractions, PlaneGround, SdfGround, SphereGround,
                                SpringInteraction, contact_surface, line_facet, point_facet)
from components.rigid import rigid_body
from ecs import InputError, Phase, System, World
from scenes import jeod
from systems.facets.contact import FacetContact
from systems.gravity.uniform import UniformGravity
from systems.dynamics.integration import Integrator

K = jeod.STEEL_K
G = 9.81
M = 100.0


def _drop(ground, *, facet="point", start=(0.0, 0.0, 1.5), attitude=(1.0, 0.0, 0.0, 0.0), zeta=0.7, mu=0.3,
          t_end=6.0, register=True, record=None):
    w = World("drop")
    c = 2.0 * zeta * math.sqrt(K * M)
    if register:
        w.add_resource(PairInteractions()).register("steel", ground.material, SpringInteraction(k=K, c=c, mu=mu))
    w.add_resource(Grounds()).add(ground)
    b = w.spawn(*rigid_body(mass=M, inertia=[40.0, 40.0, 40.0], position=start, attitude=attitude),
                contact_surface())
    if facet == "point":
        w.spawn(point_facet(b, radius=1.0, material="steel"))
    else:
        w.spawn(line_facet(b, radius=0.5, length=2.0, axis=(0.0, 0.0, 1.0), material="steel"))
    fc = w.add_system(FacetContact())
    w.add_system(UniformGravity((0.0, 0.0, -G)))
    w.add_system(Integrator("rk4"))
    w.compile()
    cols = ("body_position", "body_velocity", "body_omega", "body_attitude")
    r = w.run(t_end=t_end, dt=0.01, record_every=1 if record else None, record=cols if record else (), final=cols)
    return r, fc


X_STATIC = M * G / K


@pytest.mark.parametrize("ground, surface_z", [
    (PlaneGround(point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0), material="dirt"), 0.0),
    (SphereGround(center=(0.0, 0.0, -jeod.EARTH_RADIUS), radius=jeod.EARTH_RADIUS, material="dirt"), 0.0),
    (EllipsoidGround(center=(0.0, 0.0, -6356752.314245), material="dirt"), 0.0),  # WGS-84, at the pole
])
def test_dropped_sphere_rests_at_static_penetration(ground, surface_z):
    r, fc = _drop(ground)
    z = r.finals["body_position"][0, 0, 2]
    assert abs((1.0 - (z - surface_z)) - X_STATIC) < 1e-6
    assert np.abs(r.finals["body_velocity"][0]).max() < 1e-6
    assert np.abs(r.finals["body_position"][0, 0, :2]).max() < 1e-9  # straight down: no lateral motion
    c = fc.contacts(0)
    assert list(c["body_a"]) == [-1] and c["facet_a"][0] == -1  # a ground contact (ground 0)
    assert c["force"][0] == pytest.approx([0.0, 0.0, M * G], abs=1e-3)
    # the contact is at the facet's lowest point, on its surface
    assert c["point"][0] == pytest.approx([0.0, 0.0, z - 1.0], abs=1e-9)


def test_standing_line_facet_rests_on_its_lower_end():
    r, fc = _drop(PlaneGround(material="dirt"), facet="line", start=(0.0, 0.0, 2.0))
    z = r.finals["body_position"][0, 0, 2]
    assert abs((0.5 - (z - 1.0)) - X_STATIC) < 1e-6  # lower end at z − L/2, radius 0.5
    assert fc.contacts(0)["point"][0][2] == pytest.approx(z - 1.5, abs=1e-9)


def test_unmatched_ground_material_never_touches():
    r, fc = _drop(PlaneGround(material="ice"), register=False, t_end=1.0)
    assert r.finals["body_position"][0, 0, 2] < -1.0  # fell through: no steel/ice interaction
    assert int(fc.contact_count[0]) == 0


@njit(cache=True)
def _tilted_plane_sdf(data, x, y, z):
    """Signed distance to the plane through data[0:3] with unit normal data[3:6]."""
    d = (x - data[0]) * data[3] + (y - data[1]) * data[4] + (z - data[2]) * data[5]
    return d, data[3], data[4], data[5]


def test_sdf_ground_matches_the_builtin_plane():
    """A terrain given as a compiled SDF (the interface of terrain grids) behaves like the same plane built in."""
    n = np.array([0.1, -0.2, 1.0])
    n /= np.linalg.norm(n)
    q = (math.cos(0.3), math.sin(0.3), 0.0, 0.0)  # a tilted capsule: it lands on one end, then rocks
    kw = dict(facet="line", start=(0.0, 0.0, 2.5), attitude=q, zeta=0.2, t_end=3.0, record=True)
    a, _ = _drop(PlaneGround(point=(0.0, 0.0, 0.2), normal=tuple(n), material="dirt"), **kw)
    b, fcb = _drop(SdfGround(_tilted_plane_sdf, np.r_[0.0, 0.0, 0.2, n], material="dirt"), **kw)
    assert np.abs(a.trajectories["body_omega"]).max() > 0.1  # it did tumble on contact
    for c in a.trajectories:
        np.testing.assert_allclose(b.trajectories[c], a.trajectories[c], rtol=0, atol=1e-9)


def test_ground_inputs_are_checked():
    with pytest.raises(InputError, match="njit"):
        SdfGround(lambda d, x, y, z: (z, 0.0, 0.0, 1.0))
    with pytest.raises(InputError, match="ground"):
        Grounds().add("a plane")
    with pytest.raises(InputError, match="radius"):
        Grounds().add(SphereGround(radius=-1.0))
    with pytest.raises(InputError, match="semi_axes"):
        Grounds().add(EllipsoidGround(semi_axes=(1.0, 0.0, 1.0)))


class _GroundProbe(System):
    phase = Phase.DERIVATIVE
    reads = ("contact_force",)
    after = (FacetContact,)

    def __init__(self, fc):
        self.fc, self.worst, self.pair_evals = fc, 0.0, 0

    def bind(self, world):
        self.t = world.table_with("contact_force")

    def process(self, frame):
        c = self.fc.contacts(0)
        ground = c["force"][c["body_a"] < 0].sum(axis=0)
        total = self.t.by_sample("contact_force")[0].sum(axis=0)
        self.worst = max(self.worst, float(np.abs(total - ground).max()))  # vehicle pair: equal and opposite
        self.pair_evals += int((c["body_a"] >= 0).sum())


def test_jeod_ground_run_stacks_the_vehicles():
    sc = jeod.build_ground()
    fc = next(s for s in sc.world.systems if isinstance(s, FacetContact))
    probe = sc.world.add_system(_GroundProbe(fc))
    sc.world.compile()
    r = sc.world.run(t_end=sc.t_end, dt=sc.dt, record_every=10, record=("body_position",), final=sc.final)
    x = r.trajectories["body_position"][0, :, :, 0] - jeod.EARTH_RADIUS
    assert x[0, 0] == 0.0 and x[-1, 0] > 0.5  # vehicle 1 starts 2 m deep and is pushed out
    assert probe.pair_evals > 0 and probe.worst <= 1e-9  # vehicle 2 landed on vehicle 1
    assert np.abs(r.trajectories["body_position"][0, :, :, 1:]).max() == 0.0  # all along the local vertical


@pytest.mark.slow
def test_jeod_ground_run_settles_to_the_static_stack():
    """400 s of the JEOD ground run: ground penetration (m₁+m₂)g/k_dirt, pair compression m₂g/k_steel."""
    sc = jeod.build_ground(t_end=400.0, record_every=None)
    sc.world.compile()
    r = sc.world.run(t_end=sc.t_end, dt=sc.dt, final=sc.final)
    g = jeod.EARTH_GM / jeod.EARTH_RADIUS**2
    p = r.finals["body_position"][0, :, 0] - jeod.EARTH_RADIUS
    assert abs((2.0 - p[0]) - 400.0 * g / jeod.DIRT_K) < 1e-5  # measured residual 2e-7 m at 400 s
    assert abs((p[0] + 2.0 + 1.0 - p[1]) - 200.0 * g / jeod.STEEL_K) < 1e-5


def test_terrain_sdf_ground_matches_the_builtin_plane():
    """The terrain kernels of systems.terrain.sdf (an analytic plane terrain) through the SDF-ground interface."""
    from components.terrain import TerrainSDF, sdf_plane
    from systems.facets.terrain import terrain_ground

    n = np.array([0.1, -0.2, 1.0])
    n /= np.linalg.norm(n)
    kw = dict(facet="line", start=(0.0, 0.0, 2.5), attitude=(math.cos(0.3), math.sin(0.3), 0.0, 0.0), zeta=0.2,
              t_end=3.0, record=True)
    a, _ = _drop(PlaneGround(point=tuple(0.2 * n), normal=tuple(n), material="dirt"), **kw)
    b, _ = _drop(terrain_ground(TerrainSDF(base=sdf_plane(normal=n, offset=0.2)), material="dirt"), **kw)
    assert np.abs(a.trajectories["body_omega"]).max() > 0.1
    for c in a.trajectories:
        np.testing.assert_allclose(b.trajectories[c], a.trajectories[c], rtol=0, atol=1e-9)
