"""Facets against a procedural terrain: :class:`components.terrain.TerrainSDF` as a contact ground.

The terrain kernels (:mod:`systems.terrain.sdf`, seed 004 §2.2.3–2.3: SDF grid with trilinear
interpolation, analytic shapes, fBm noise, seeded rocks, explicit polyhedral rocks) plug into facet contact
(:mod:`systems.facets.contact`, seed 000 §4.3.3) through the generic
:class:`components.contact.SdfGround` interface ``fn(data, x, y, z) -> (d, gx, gy, gz)``:
``data`` is the tuple of :func:`systems.terrain.sdf.terrain_args` and ``fn`` unpacks it for
:data:`systems.terrain.sdf.eval_terrain_point`. The gradient is normalised by the contact kernel.
CPU backend only (the ground function is passed to a CPU kernel as a first-class function).
"""

from __future__ import annotations

import math

from numba import njit

from components.contact import SdfGround
from systems.terrain.sdf import eval_terrain_point, terrain_args

_eval = eval_terrain_point.cpu


@njit(cache=True)
def terrain_distance(args, x, y, z):
    """Signed distance [m] and gradient of the terrain whose :func:`terrain_args` tuple is ``args``."""
    return _eval(args, x, y, z)


def terrain_ground(terrain, *, material: str = "ground", curvature_radius_m: float = math.inf) -> SdfGround:
    """An :class:`~components.contact.SdfGround` for a :class:`components.terrain.TerrainSDF`.

    The terrain's frame must be the inertial frame (a non-rotating target).

    Args:
        terrain: the terrain (base grid or analytic shape, optional noise and rocks).
        material: its contact-parameter name.
        curvature_radius_m: radius handed to user interactions as ``ra`` (default inf).
    """
    return SdfGround(terrain_distance, terrain_args(terrain), material=material,
                     curvature_radius_m=curvature_radius_m)
