"""A user-written contact law from a scene file: Hertz (Hunt–Crossley) spheres, JEOD's extension point.

JEOD extends ``PairInteraction`` in C++ (seed 000 §3.4.7, §4.3.1); here a scene registers a
compiled function for a pair of material names. Hertz's normal force between elastic spheres is
``f_n = K x^{3/2}`` with ``K = (4/3) E* √R*`` (``1/E* = (1−ν₁²)/E₁ + (1−ν₂²)/E₂``,
``1/R* = 1/r₁ + 1/r₂``); Hunt & Crossley add ``λ x^{3/2} ẋ`` damping (here λ = 0: elastic).
"""

import math

import numpy as np
from numba import njit

from components.contact import PairInteractions, UserInteraction, contact_surface, point_facet
from components.rigid import rigid_body
from ecs import Scene, World
from systems.facets.contact import FacetContact
from systems.dynamics.integration import Integrator


@njit(cache=True)
def hertz_force(params, x, nx, ny, nz, vx, vy, vz, ra, rb):
    """Force on facet b [N]: (E* [Pa], λ [s/m]) -> f_n = K x^1.5 (1 + λ ẋ), K = 4/3 E* sqrt(R*)."""
    e_star, lam = params[0], params[1]
    r_star = ra * rb / (ra + rb)
    k = 4.0 / 3.0 * e_star * math.sqrt(r_star)
    xdot = -(vx * nx + vy * ny + vz * nz)
    fn = k * x**1.5 * (1.0 + lam * xdot)
    if fn < 0.0:
        fn = 0.0
    return fn * nx, fn * ny, fn * nz


def build(*, e_star=2.0e5, damping=0.0, radius=0.5, mass=10.0, speed=1.0, t_end=1.0, dt=1e-3):
    world = World("hertz_contact")
    world.add_resource(PairInteractions()).register(
        "rubber", "rubber", UserInteraction(hertz_force, (e_star, damping), name="hertz"))
    inertia = np.full(3, 0.4 * mass * radius**2)
    a = world.spawn(*rigid_body(mass=mass, inertia=inertia), contact_surface(), name="ball_a")
    b = world.spawn(*rigid_body(mass=mass, inertia=inertia, position=(2 * radius + 0.5 * speed, 0, 0),
                                velocity=(-speed, 0, 0)), contact_surface(), name="ball_b")
    world.spawn(point_facet(a, radius=radius, material="rubber"))
    world.spawn(point_facet(b, radius=radius, material="rubber"))
    world.add_system(FacetContact())
    world.add_system(Integrator("rk4"))
    cols = ("body_position", "body_velocity", "contact_force")
    return Scene("hertz_contact", "two rubber balls colliding under a user-registered Hertz law", world, t_end, dt,
                 1, cols, cols, params=dict(e_star=e_star, damping=damping, radius=radius, mass=mass, speed=speed))
