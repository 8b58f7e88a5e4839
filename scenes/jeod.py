"""JEOD Contact Model verification runs (seed 000 §5.2, Tests Contact_1–7, and SIM_ground_contact).

Every run is two vehicles in empty space (``SIM_contact``) or on the Earth (``SIM_ground_contact``)
with JEOD's inputs converted exactly to SI:

* material ``"steel"``: ``SpringPairInteraction`` k = 20 lbf/in = 3502.54 N/m,
  c = 0.4 lbf·s/in = 70.0507 N·s/m, μ = 0.05 (``Contact_Modified_data/contact/pair_interaction.py``,
  §4.1.2);
* spheres (``veh_mass.py``): 100 kg, inertia 40 kg·m² about every axis, one point facet of radius
  1 m at the body origin; cylinders (``veh_mass_line.py``): 200 kg, inertia
  diag(100, 116.6667, 116.6667) kg·m² (a 1 m × 2 m solid cylinder along body x), one line facet
  of radius 1 m and length 2 m along body x centred on the origin (``line_facet.py``);
* vehicle 1 at rest at the origin, vehicle 2 at (12, 0, 0) m (off-centre run: (12, 0.5, 0) m)
  closing at (−2, 0, 0) m/s; attitudes from yaw-pitch-roll Euler angles (JEOD
  ``Orientation::Yaw_Pitch_Roll``, our sequence ``"321"`` with angles (yaw, pitch, roll));
* RK4 at 0.01 s for 10 s.

``jeod-ground`` follows ``SIM_ground_contact/RUN_contact_ground``: a cylinder (line facet along
the local vertical) standing at the surface of a spherical Earth of radius 6378137 m and a second
200 kg vehicle with a point facet dropped from 10 m above it; ground material ``"dirt"`` with
k = 10 lbf/in, c = 0.2 lbf·s/in, μ = 0.5 against ``"steel"``. JEOD's run uses the Earth's
spherical gravity; both vehicles stay on the x axis, where that field points exactly along −x and
changes by 2h/R ≈ 3·10⁻⁶ over the 10 m of the run, so a uniform field g = GM/R² is used here.

Scene names → builders: ``jeod-point`` :func:`build_point`, ``jeod-point-inverse``
:func:`build_point_inverse`, ``jeod-point-off-center`` :func:`build_point_off_center`,
``jeod-line`` :func:`build_line`, ``jeod-line-inverse`` :func:`build_line_inverse`,
``jeod-line-arbitrary`` :func:`build_line_arbitrary`, ``jeod-line-point`` :func:`build_line_point`,
``jeod-line-side-to-side`` :func:`build_line_side_to_side`, ``jeod-ground`` :func:`build_ground`;
:func:`build` takes ``run=<name>``.

Contact law: these scenes reproduce JEOD's own runs, so their steel and dirt interactions use the
JEOD-compatible law ``SpringInteraction(law="jeod")`` (:mod:`systems.facets.contact`): each
vehicle's force acts at its own facet surface point and the friction is JEOD's
``μ|F_N| v_t/|v|``. That law does not conserve angular momentum (the two points of application are
the penetration depth apart). Everywhere else in tumble the default is the momentum-exact law
(``law="momentum"``: ±F at one common contact point, Coulomb friction); ``law="momentum"`` here
runs the same scenes with it. The laws differ only through friction and spin: in the aligned runs
(no tangential velocity, forces through both reference points) they give identical results; in
the off-centre run the final spin differs by ~0.08 rad/s. For line facets JEOD's own contact
point construction has defects that are not reproduced (see :mod:`systems.facets.contact`), so
``jeod-line-arbitrary`` follows JEOD's force law at the exact surface points.

Facet contact couples the two vehicles: with an adaptive method (``method="dp54"``) both step
together, one error norm and one step size per sample (:mod:`systems.dynamics.integration`); exact
Coulomb friction is then refused (regularise it with ``slip_velocity``), JEOD's friction is not.
Every start and end of contact is an event (``contact_*`` fields of ``events/``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from components.contact import (LBF_PER_IN, LBF_S_PER_IN, Grounds, PairInteractions, SphereGround,
                                SpringInteraction, contact_surface, line_facet, point_facet)
from components.rigid import rigid_body
from ecs import InputError, Scene, World
from scenes._common import method_name, positive
from ecs.attitude import euler_to_quat
from systems.facets.contact import FacetContact
from systems.gravity.uniform import UniformGravity
from systems.dynamics.integration import Integrator

#: JEOD steel-on-steel spring (pair_interaction.py): k [N/m], c [N s/m], μ.
STEEL_K = 20.0 * LBF_PER_IN
STEEL_C = 0.4 * LBF_S_PER_IN
STEEL_MU = 0.05
#: JEOD steel-on-dirt ground spring (SIM_ground_contact pair_interaction.py).
DIRT_K = 10.0 * LBF_PER_IN
DIRT_C = 0.2 * LBF_S_PER_IN
DIRT_MU = 0.5
#: Spheres (veh_mass.py) and cylinders (veh_mass_line.py).
SPHERE_MASS, SPHERE_INERTIA, SPHERE_RADIUS = 100.0, (40.0, 40.0, 40.0), 1.0
CYLINDER_MASS, CYLINDER_INERTIA = 200.0, (100.0, 116.6667, 116.6667)
LINE_RADIUS, LINE_LENGTH = 1.0, 2.0
#: Earth radius used by JEOD's terrain (m) and GM (m^3/s^2, JEOD's default Earth).
EARTH_RADIUS = 6378137.0
EARTH_GM = 3.986004415e14

STATE_COLUMNS = ("body_position", "body_velocity", "body_attitude", "body_omega", "contact_force", "contact_torque")

DESCRIPTIONS = {
    "jeod-point": "JEOD RUN_point: two 100 kg spheres (point facets) collide head-on at 2 m/s",
    "jeod-point-inverse": "JEOD RUN_point_inverse: as jeod-point with vehicle 2 pitched 180 deg",
    "jeod-point-off-center": "JEOD RUN_point_off_center: spheres offset 0.5 m from the line of approach",
    "jeod-line": "JEOD RUN_line: two 200 kg cylinders (line facets) collide end-on at 2 m/s",
    "jeod-line-inverse": "JEOD RUN_line_inverse: as jeod-line with vehicle 2 pitched 180 deg",
    "jeod-line-arbitrary": "JEOD RUN_line_arbitrary: cylinder 1 pitched 45 deg, cylinder 2 rolled 45 deg",
    "jeod-line-point": "JEOD RUN_line_point: a cylinder (line facet) hit by a point facet at 2 m/s",
    "jeod-line-side-to-side": "JEOD RUN_line_side_to_side: cylinder 1 pitched 90 deg, cylinder 2 rolled 90 deg",
    "jeod-ground": "JEOD RUN_contact_ground: a cylinder on a spherical Earth and a vehicle dropped onto it",
}


def _attitude(ypr_deg) -> np.ndarray:
    """body_attitude of JEOD yaw-pitch-roll Euler angles [deg] (intrinsic z-y-x)."""
    return euler_to_quat(np.radians(np.asarray(ypr_deg, float)), "321")


def _vehicle(world: World, name: str, shape: str, *, position, velocity=(0.0, 0.0, 0.0), ypr_deg=(0.0, 0.0, 0.0),
             facet: str | None = None) -> int:
    """Spawn a JEOD verification vehicle: ``shape`` sets the mass properties, ``facet`` the facet kind."""
    mass, inertia = (SPHERE_MASS, SPHERE_INERTIA) if shape == "sphere" else (CYLINDER_MASS, CYLINDER_INERTIA)
    b = world.spawn(*rigid_body(mass=mass, inertia=inertia, position=position, velocity=velocity,
                                attitude=_attitude(ypr_deg), field=name), contact_surface(), name=name)
    facet = facet or ("point" if shape == "sphere" else "line")
    if facet == "point":
        world.spawn(point_facet(b, radius=SPHERE_RADIUS, material="steel"), name=f"{name}_facet")
    else:
        world.spawn(line_facet(b, radius=LINE_RADIUS, length=LINE_LENGTH, axis=(1.0, 0.0, 0.0), material="steel"),
                    name=f"{name}_facet")
    return b


def _check_common(t_end, dt, record_every, mode, law):
    positive("dt", dt, "s")
    if not (math.isfinite(float(t_end)) and float(t_end) >= 0.0):
        raise InputError("t_end", t_end, "must be a non-negative finite time [s]")
    if record_every is not None and (int(record_every) != record_every or record_every < 1):
        raise InputError("record_every", record_every, "must be a whole number of frames >= 1 (or None)")
    if str(mode).lower() not in ("jeod", "clamp"):
        raise InputError("mode", mode, "must be 'jeod' (damping may pull, as JEOD) or 'clamp'")
    if str(law).lower() not in ("jeod", "momentum"):
        raise InputError("law", law, "must be 'jeod' (JEOD's force law, these runs' default) or 'momentum' "
                         "(tumble's momentum-exact law)")


def _two_vehicles(name: str, *, shapes: tuple[str, str], facets: tuple[str | None, str | None] = (None, None),
                  position2=(12.0, 0.0, 0.0), ypr1=(0.0, 0.0, 0.0), ypr2=(0.0, 0.0, 0.0), t_end=10.0, dt=0.01,
                  record_every=1, mode="jeod", law="jeod", broadphase=True, method="rk4",
                  params: dict[str, Any]) -> Scene:
    _check_common(t_end, dt, record_every, mode, law)
    world = World(name)
    world.add_resource(PairInteractions()).register(
        "steel", "steel", SpringInteraction(k=STEEL_K, c=STEEL_C, mu=STEEL_MU, mode=str(mode).lower(),
                                           law=str(law).lower()))
    _vehicle(world, "veh1", shapes[0], position=(0.0, 0.0, 0.0), ypr_deg=ypr1, facet=facets[0])
    _vehicle(world, "veh2", shapes[1], position=position2, velocity=(-2.0, 0.0, 0.0), ypr_deg=ypr2, facet=facets[1])
    world.add_system(FacetContact(broadphase=bool(broadphase)))
    world.add_system(Integrator(method_name(method)))
    return Scene(name=name, description=DESCRIPTIONS[name], world=world, t_end=float(t_end), dt=float(dt),
                 record_every=None if record_every is None else int(record_every), record=STATE_COLUMNS,
                 final=STATE_COLUMNS, params=dict(params))


def build_point(*, t_end=10.0, dt=0.01, record_every=1, mode="jeod", law="jeod", broadphase=True,
                method="rk4") -> Scene:
    """RUN_point (Test Contact_1): aligned spheres."""
    kw = dict(locals())
    return _two_vehicles("jeod-point", shapes=("sphere", "sphere"), params=kw, **kw)


def build_point_inverse(*, t_end=10.0, dt=0.01, record_every=1, mode="jeod", law="jeod", broadphase=True,
                        method="rk4") -> Scene:
    """RUN_point_inverse (Test Contact_2): vehicle 2 turned 180° in pitch."""
    kw = dict(locals())
    return _two_vehicles("jeod-point-inverse", shapes=("sphere", "sphere"), ypr2=(0.0, 180.0, 0.0), params=kw, **kw)


def build_point_off_center(*, t_end=10.0, dt=0.01, record_every=1, mode="jeod", law="jeod", broadphase=True,
                           method="rk4") -> Scene:
    """RUN_point_off_center (Test Contact_3): vehicle 2 offset 0.5 m in y."""
    kw = dict(locals())
    return _two_vehicles("jeod-point-off-center", shapes=("sphere", "sphere"), position2=(12.0, 0.5, 0.0), params=kw,
                         **kw)


def build_line(*, t_end=10.0, dt=0.01, record_every=1, mode="jeod", law="jeod", broadphase=True,
               method="rk4") -> Scene:
    """RUN_line (Test Contact_4): aligned cylinders."""
    kw = dict(locals())
    return _two_vehicles("jeod-line", shapes=("cylinder", "cylinder"), params=kw, **kw)


def build_line_inverse(*, t_end=10.0, dt=0.01, record_every=1, mode="jeod", law="jeod", broadphase=True,
                       method="rk4") -> Scene:
    """RUN_line_inverse (Test Contact_5): vehicle 2 turned 180° in pitch."""
    kw = dict(locals())
    return _two_vehicles("jeod-line-inverse", shapes=("cylinder", "cylinder"), ypr2=(0.0, 180.0, 0.0), params=kw, **kw)


def build_line_arbitrary(*, t_end=10.0, dt=0.01, record_every=1, mode="jeod", law="jeod", broadphase=True,
                         method="rk4") -> Scene:
    """RUN_line_arbitrary (Test Contact_6): vehicle 1 pitched 45°, vehicle 2 rolled 45°."""
    kw = dict(locals())
    return _two_vehicles("jeod-line-arbitrary", shapes=("cylinder", "cylinder"), ypr1=(0.0, 45.0, 0.0),
                         ypr2=(0.0, 0.0, 45.0), params=kw, **kw)


def build_line_point(*, t_end=10.0, dt=0.01, record_every=1, mode="jeod", law="jeod", broadphase=True,
                     method="rk4") -> Scene:
    """RUN_line_point (Test Contact_7): two cylinders' mass properties; vehicle 1 a line, vehicle 2 a point facet."""
    kw = dict(locals())
    return _two_vehicles("jeod-line-point", shapes=("cylinder", "cylinder"), facets=("line", "point"), params=kw, **kw)


def build_line_side_to_side(*, t_end=10.0, dt=0.01, record_every=1, mode="jeod", law="jeod", broadphase=True,
                            method="rk4") -> Scene:
    """RUN_line_side_to_side: vehicle 1 pitched 90°, vehicle 2 rolled 90°."""
    kw = dict(locals())
    return _two_vehicles("jeod-line-side-to-side", shapes=("cylinder", "cylinder"), ypr1=(0.0, 90.0, 0.0),
                         ypr2=(0.0, 0.0, 90.0), params=kw, **kw)


def build_ground(*, t_end=10.0, dt=0.01, record_every=1, mode="jeod", law="jeod", broadphase=True, method="rk4",
                 drop_height=10.0) -> Scene:
    """RUN_contact_ground: a cylinder at the Earth's surface and a vehicle dropped from ``drop_height`` above it.

    Args:
        drop_height: altitude of vehicle 2's reference point above vehicle 1's [m] (JEOD: 10).
    """
    params = dict(locals())
    _check_common(t_end, dt, record_every, mode, law)
    positive("drop_height", drop_height, "m")
    world = World("jeod-ground")
    inter = world.add_resource(PairInteractions())
    m, lw = str(mode).lower(), str(law).lower()
    inter.register("steel", "steel", SpringInteraction(k=STEEL_K, c=STEEL_C, mu=STEEL_MU, mode=m, law=lw))
    inter.register("steel", "dirt", SpringInteraction(k=DIRT_K, c=DIRT_C, mu=DIRT_MU, mode=m, law=lw))
    world.add_resource(Grounds()).add(SphereGround(center=(0.0, 0.0, 0.0), radius=EARTH_RADIUS, material="dirt"))
    _vehicle(world, "veh1", "cylinder", position=(EARTH_RADIUS, 0.0, 0.0), facet="line")
    _vehicle(world, "veh2", "cylinder", position=(EARTH_RADIUS + float(drop_height), 0.0, 0.0), facet="point")
    world.add_system(UniformGravity((-EARTH_GM / EARTH_RADIUS**2, 0.0, 0.0)))
    world.add_system(FacetContact(broadphase=bool(broadphase)))
    world.add_system(Integrator(method_name(method)))
    return Scene(name="jeod-ground", description=DESCRIPTIONS["jeod-ground"], world=world, t_end=float(t_end),
                 dt=float(dt), record_every=None if record_every is None else int(record_every),
                 record=STATE_COLUMNS, final=STATE_COLUMNS, params=params)


#: Scene name -> builder (the lead registers these names).
RUNS = {
    "jeod-point": build_point,
    "jeod-point-inverse": build_point_inverse,
    "jeod-point-off-center": build_point_off_center,
    "jeod-line": build_line,
    "jeod-line-inverse": build_line_inverse,
    "jeod-line-arbitrary": build_line_arbitrary,
    "jeod-line-point": build_line_point,
    "jeod-line-side-to-side": build_line_side_to_side,
    "jeod-ground": build_ground,
}


def build(*, run: str = "jeod-point", **params) -> Scene:
    """Any JEOD verification run by name (``run`` one of :data:`RUNS`); ``params`` go to its builder."""
    if run not in RUNS:
        raise InputError("run", run, f"must be one of {sorted(RUNS)}")
    return RUNS[run](**params)
