"""Probe deployment to small bodies (seed 004 ch. 4): ``deploy-sphere``, ``deploy-cube``, ``deploy-shapes``.

:func:`deployment_scene` assembles any deployment: a target (:class:`components.deploy.DeployTarget`:
rotation, gravity, terrain), one probe entity per sample with its shape, mass properties and
contact parameters, the :class:`systems.deployment.loop.DeploymentLoop`, and the dispersions of the
release state (position and velocity with per-axis 3σ, a uniformly random attitude, angular
velocity) and of any contact parameter. Every drawn value is stored under ``inputs/``.

Built-in scenes (parameters are keyword-only; ``tumble run NAME --param key=value``):

* ``deploy-sphere`` — Tables 4.2–4.3: 5 kg sphere, R = 0.125 m, j = 0.4, e = 0.65, f = 1.0,
  C_RR = 0.035, released at low altitude ([0, 0, 200] m ± 15 m, [0, 0, −0.05] m/s ± 0.01 m/s) or
  high altitude (``altitude="high"``: [500, 0, 0] m ± 30 m, [−0.03, 0, 0] m/s ± 0.01 m/s).
* ``deploy-cube`` — Table 4.6: 5 kg cube of 500 kg/m³, e = f = 0.5, release [0, 0, 200] m ± 15 m,
  [0, 0, −0.05] m/s ± 0.01 m/s, random attitude. The README's main job.
* Every scene takes ``contact``: ``'rigid'`` (the seed's Stronge impacts with a constant e, the
  default) or ``'regolith'`` (:func:`components.contact_params.low_gravity_regolith`: e falls with
  the normal impact speed; ``restitution`` is then its e at speeds up to 5 cm/s, 0.3 by default;
  docs/validation.md).
* Every scene takes ``restitution_sigma3`` / ``friction_sigma3`` (3σ of a normal draw per sample,
  truncated to [0, 1] / [0, ∞) by drawing again, stored as ``inputs/contact_terrain``), ``t_cap`` [s], ``frame`` [s]
  (default :data:`DEFAULT_FRAME`) and ``record_every`` [frames] (trajectories; default: finals and
  events only).
* ``deploy-shapes`` — the six shapes of Table 4.7 (sphere and the five platonic solids, 5 kg,
  500 kg/m³, solid), one drawn uniformly per sample (``inputs/probe_shape``), release as deploy-cube;
  ``shapes="cube,tetrahedron"`` runs a subset, ``level`` tessellates the polyhedra (Fig 2.26).
  Contact is e = f = 0.5 without rolling resistance (Table 4.6), so a sphere that starts rolling
  rolls on until the time cap: give it ``deploy-sphere``'s rolling resistance to study it.
* ``deploy-box`` — a solid box (default 10 kg, 0.3 × 0.28 × 0.2 m; ``-p size=[a,b,c]``, ``mass``,
  ``level``), release as deploy-cube.

The target of all four is the Itokawa-like body of :mod:`scenes.assets.bodies` (inside the
268 × 147 × 105 m envelope of Table 4.1), re-centred on its centre of mass, with μ = 2.341 m³/s²
and a 12.132 h rotation about +z. ``gravity`` selects the field: ``"voxel"`` (default, the seed's
voxelised polyhedron, built once and cached), ``"polyhedron"`` (exact, slower) or
``"point_mass"``. ``rocks`` (every scene): ``False`` (default) a bare terrain; ``True`` or ``"psr"``
the seed's procedurally seeded rock texture (§2.3.3) added to the terrain; ``"polyhedral"`` explicit
polyhedral rocks (§2.3.1: deformed icosahedra, power-law sizes, K = ``rocks_per_m2`` rocks/m² of
5–50 cm, default 14) over a ``rock_region`` = 30 m region under the release point, united with the
terrain (``min`` of the distances, each rock behind a bounding sphere and a hash-grid broadphase;
:func:`itokawa_target` documents the population). Rocks use the same contact parameters as the
terrain, as in Table 4.2's note. ``fbm=true`` (every scene) adds the seed's fBm relief to the
terrain (§2.3.2: features up to 4.8 m, 5 octaves).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from components.contact_params import ContactParams, Regolith, low_gravity_regolith
from components.deploy import (DeploySettings, DeployTarget, ProbeContact, ProbeInertial, ProbePhase, ProbeRecord)
from components.rigid import MassProps, RigidState, RotatingFrame
from components.gravity import PointMass, Polyhedron
from components.probe import ProbeShape, ProbeShapes
from components.terrain import SDFGrid, TerrainSDF
from ecs import InputError, Scene, World
from ecs.scene import Dispersion, normal, uniform_quaternion
from scenes._common import check_spread, positive
from scenes.assets.probes import add_probe_shape, box, platonic, probe_mass_properties, sphere_probe
from systems.deployment.collide import declare_collision_events
from systems.deployment.loop import DeploymentLoop
from systems.terrain.sdf import eval_terrain

#: Itokawa (Table 4.1).
ITOKAWA_MU = 2.341
ITOKAWA_PERIOD_H = 12.132
#: fBm terrain noise on the Itokawa-like body (§2.3.2): features up to 4.8 m (3 x the 1.6 m shape
#: model resolution) high and wide, 5 octaves (the smallest 0.3 m).
FBM_MAX_HEIGHT = 4.8
FBM_OCTAVES = 5
#: deploy-box default: a 10 kg box of 0.3 x 0.28 x 0.2 m (edge lengths along body x, y, z).
BOX_SIZE = (0.3, 0.28, 0.2)

#: The deployment scenes' parameters (``tumble scenes NAME`` lists them with their defaults).
PARAMETERS = {
    "gravity": "field: 'voxel' (voxelised polyhedron), 'polyhedron' (exact) or 'point_mass'",
    "rocks": "false; 'psr' (procedurally seeded rock texture, §2.3.3); 'polyhedral' (explicit rocks, §2.3.1)",
    "fbm": "add fBm relief to the terrain (§2.3.2: up to 4.8 m, 5 octaves)",
    "t_cap": "[s] simulated-time cap: a probe not settled by then ends TIMED_OUT",
    "frame": "[s] trajectory sampling (changes no step: dense output)",
    "record_every": "[frames] trajectory decimation (default: finals and events only)",
    "contact": "'rigid' (Stronge, constant e; default) or 'regolith' (e falls with the normal impact speed, "
               "components.contact_params.low_gravity_regolith; docs/validation.md)",
    "restitution": "[1] probe-terrain restitution e in [0, 1] (regolith: e at normal impact speeds up to 5 cm/s, "
                   "default 0.3)",
    "friction": "[1] probe-terrain friction coefficient f >= 0",
    "rolling_resistance": "[1] rolling-resistance coefficient C_RR >= 0",
    "restitution_sigma3": "[1] 3-sigma of a per-sample normal spread of e (truncated to [0, 1]: redrawn, never clipped)",
    "friction_sigma3": "[1] 3-sigma of a per-sample normal spread of f (truncated to >= 0: redrawn, never clipped)",
    "mass": "[kg] probe mass",
    "density": "[kg/m^3] probe density (sets a solid's size, eq 4.8)",
    "level": "tessellation level of the probe's polyhedra (0: corners only; N = 2^level segments per edge)",
    "size": "[m] box edge lengths [a, b, c] along body x, y, z",
    "radius": "[m] sphere radius",
    "j": "[1] reduced moment of inertia I / (m R^2) of the sphere, in [0, 2/3]",
    "altitude": "release: 'low' ([0, 0, 200] m) or 'high' ([500, 0, 0] m), Table 4.3",
    "shapes": "'all' or a comma-separated subset of the six shapes of Table 4.7",
    "rocks_per_m2": "[1/m^2] polyhedral rocks: K, rocks of 5-50 cm per m^2 (14; rocks='polyhedral' only)",
    "rock_region": "[m] polyhedral rocks: radius of the rock region under the release point (30; rocks='polyhedral' only)",
}

#: Columns saved under ``final/`` by every deployment scene.
FINAL_COLUMNS = ("body_position", "body_velocity", "body_attitude", "body_omega", "probe_first_impact_time",
                 "probe_settle_time", "probe_end_time", "probe_latitude", "probe_longitude", "probe_slope",
                 "probe_bounces", "probe_collisions", "probe_distance", "probe_max_penetration", "probe_shape",
                 "probe_position_inertial", "probe_velocity_inertial", "probe_attitude_inertial", "probe_target_attitude")
#: Columns recorded into ``trajectories/`` when ``record_every`` is given.
TRAJECTORY_COLUMNS = ("body_position", "body_velocity", "body_attitude", "body_omega", "probe_phase",
                      "probe_position_inertial", "probe_target_attitude")

#: Default frame length [s] of the deployment scenes: the trajectory sampling (with
#: ``record_every``). A frame changes no step (dense output) and no byte of the results. The phase
#: loop's workers synchronise at recorded frames and otherwise about once per simulated hour on the
#: CPU, whatever the frame (:attr:`systems.deployment.modes.ModeLoop.sync_interval`, §8.36 of
#: docs/design.md); when recorded, each row takes one extra trial step per record. Pass ``frame=``
#: for finer trajectories: the results stay the same bytes.
DEFAULT_FRAME = 300.0
#: Event-log slots of a deployment (one per collision): 64 overflowed in 16 % of the README's
#: 12-line lander (100 samples: median 36 collisions, 95 % below 94, the most 158) and in 1 of 200
#: deploy-cube samples; a sample with more still keeps the first ones and is flagged
#: (``events/event_overflow``; ``--event-capacity`` keeps more).
DEPLOY_EVENT_CAPACITY = 256


#: ``rocks`` values: no rocks, the seed's procedurally seeded rock texture (§2.3.3; ``True`` keeps
#: meaning this), or explicit polyhedral rocks (§2.3.1).
ROCKS = (False, True, "none", "psr", "polyhedral")


def _rock_kind(rocks) -> str:
    if rocks is None or rocks is False or rocks == "none":
        return "none"
    if rocks is True or rocks == "psr":
        return "psr"
    if rocks == "polyhedral":
        return "polyhedral"
    raise InputError("rocks", rocks, "must be False/'none', True/'psr' (seeded rock texture) or 'polyhedral'")


#: The default voxel gravity spacing of the Itokawa-like target [m]: its field is shipped
#: (:mod:`scenes.assets.voxel`, "Shipped fields").
ITOKAWA_VOXEL_SPACING = 12.0


def _itokawa_body(resolution: int):
    """The Itokawa-like small body, its polyhedron about its centre of mass, and that centre [m]."""
    from scenes.assets.bodies import small_body

    body = small_body("itokawa", resolution=int(resolution))
    com = Polyhedron(body.vertices, body.faces, mu=ITOKAWA_MU).center_of_mass
    return body, Polyhedron(body.vertices - com, body.faces, mu=ITOKAWA_MU), com


def itokawa_polyhedron(resolution: int = 48) -> Polyhedron:
    """The gravity polyhedron of :func:`itokawa_target` (centred on its centre of mass)."""
    return _itokawa_body(resolution)[1]


#: Polyhedral rocks' defaults: K rocks larger than 5 cm per m² (seed 004 §4.1's nominal 14) over a
#: region of this radius [m] under the release point.
ROCKS_PER_M2 = 14.0
ROCK_REGION = 30.0


def itokawa_target(*, gravity: str = "voxel", rocks: bool | str = False, resolution: int = 48,
                   voxel_spacing: float = ITOKAWA_VOXEL_SPACING, rock_centre=(0.0, 0.0, 200.0),
                   rock_region: float = ROCK_REGION, rocks_per_m2: float = ROCKS_PER_M2, rock_seed: int = 0,
                   fbm: bool = False) -> DeployTarget:
    """The Itokawa-like target (module docstring), centred on its centre of mass.

    Args:
        gravity: ``"voxel"``, ``"polyhedron"`` or ``"point_mass"``.
        rocks: ``False`` / ``"none"``; ``True`` / ``"psr"``: the procedurally seeded rock texture
            (§2.3.3) added to the terrain; ``"polyhedral"``: explicit polyhedral rocks (§2.3.1,
            :func:`scenes.assets.noise.terrain_rocks`) united with the terrain.
        resolution: SDF grid nodes along the longest axis.
        voxel_spacing: voxel gravity grid spacing [m].
        rock_centre: polyhedral rocks: the rock region is centred where the segment from this point
            [m] (target frame) to the centre of mass meets the surface (default: the low-altitude
            release point of Table 4.3, so the region lies under it, where probes land and bounce).
        rock_region: polyhedral rocks: radius of the region [m] (default 30 m: the 3σ release spread
            of 15 m plus the first bounces; ~40,000 rocks at K = 14, built in ~2 s).
        rocks_per_m2: polyhedral rocks: K, rocks larger than s_min = 5 cm per m² of surface (§4.1's
            nominal 14; sizes 5–50 cm, α = 2.8, σ = 0.1, sink ratio in [-0.4, 0.25], Table 4.2).
        rock_seed: polyhedral rocks: the generator's seed (the same rocks in every sample).
        fbm: add fBm noise to the terrain (eqs 2.24–2.32) with the seed's Itokawa figures (§2.3.2):
            features up to h_max = :data:`FBM_MAX_HEIGHT` = 4.8 m high and 1/f0 = 4.8 m wide (three
            times the 1.6 m shape-model resolution), :data:`FBM_OCTAVES` octaves (down to 0.3 m).
    """
    from scenes.assets.voxel import build_voxel_field

    if gravity not in ("voxel", "polyhedron", "point_mass"):
        raise InputError("gravity", gravity, "must be 'voxel', 'polyhedron' or 'point_mass'")
    kind = _rock_kind(rocks)
    body, poly, com = _itokawa_body(resolution)
    grid = SDFGrid(values=body.grid.values, origin=body.grid.origin - com, spacing=body.grid.spacing)
    if gravity == "voxel":
        field = build_voxel_field(poly, positive("voxel_spacing", voxel_spacing, "m"))
    elif gravity == "polyhedron":
        field = poly
    else:
        field = PointMass(mu=ITOKAWA_MU)
    psr = None
    if kind == "psr":
        from scenes.assets.noise import psr_field

        psr = psr_field()
    noise = None
    if fbm:
        from scenes.assets.noise import fbm_noise

        noise = fbm_noise(max_height=FBM_MAX_HEIGHT, frequency=1.0 / FBM_MAX_HEIGHT, octaves=FBM_OCTAVES, seed=0)
    terrain = TerrainSDF(base=grid, fbm=noise, psr=psr)
    if kind == "polyhedral":
        from scenes.assets.noise import terrain_rocks

        rf = terrain_rocks(terrain, centre=_surface_toward_com(terrain, _vec3("rock_centre", rock_centre)),
                           region_radius=positive("rock_region", rock_region, "m"),
                           rocks_per_m2=positive("rocks_per_m2", rocks_per_m2, "1/m^2"), seed=int(rock_seed))
        terrain = TerrainSDF(base=grid, fbm=noise, rocks=rf)
    return DeployTarget(gravity=field, terrain=terrain, rotation=DeployTarget.spin_about_z(ITOKAWA_PERIOD_H),
                        name="itokawa-like", shape_vertices=poly.vertices, shape_faces=poly.faces)


def _surface_toward_com(terrain, point) -> np.ndarray:
    """Where the segment from ``point`` [m] to the origin (the CoM) first meets the terrain surface:
    sphere tracing along it (the distance bounds each step), then a few bisection steps."""
    L = float(np.linalg.norm(point))
    if L == 0.0:
        raise InputError("rock_centre", point.tolist(), "must not be the centre of mass")
    u = -point / L
    t = 0.0
    d = float(eval_terrain(terrain, point)[0][0])
    if d <= 0.0:
        raise InputError("rock_centre", point.tolist(), "must lie outside the body")
    for _ in range(500):
        if d <= 1e-6 or t >= L:
            break
        t = min(t + d, L)
        d = float(eval_terrain(terrain, point + t * u)[0][0])
    return point + t * u


def deployment_scene(name: str, description: str, *, target: DeployTarget, shapes: list, shape_mass: list,
                     contact: ContactParams, position, position_sigma3, velocity, velocity_sigma3,
                     random_attitude: bool = True, omega=(0.0, 0.0, 0.0), omega_sigma3: float = 0.0,
                     rolling_radius: float = 0.0, contact_dispersions: dict | None = None,
                     settings: DeploySettings | None = None, frame: float = DEFAULT_FRAME,
                     record_every: int | None = None, params: dict[str, Any] | None = None) -> Scene:
    """A deployment scene (module docstring).

    Args:
        target: the target body.
        shapes: probe geometries (:mod:`scenes.assets.probes`); several: one is drawn per sample.
        shape_mass: their :class:`scenes.assets.mass_properties.MassProperties` (CoM at the origin).
        contact: probe–terrain :class:`ContactParams`.
        position, velocity: release state (target frame) [m], [m/s]; ``*_sigma3`` per-axis 3σ.
        random_attitude: draw a uniformly random attitude per sample (else the identity).
        omega, omega_sigma3: release angular velocity relative to the target (body) [rad/s], 3σ.
        rolling_radius: R of rolling resistance [m] (0: none).
        contact_dispersions: ``{field: draw}`` with ``field`` one of ``restitution``, ``friction``,
            ``rolling_resistance`` and ``draw(rng) -> value``.
        settings: :class:`DeploySettings` (defaults otherwise).
        frame: frame length [s]: the output sampling of trajectories (dense output: it changes no
            step or result) and the phase loop's sync
            (:data:`DEFAULT_FRAME`).
        record_every: trajectory decimation in frames (None: finals and events only).
    """
    settings = settings or DeploySettings()
    frame = positive("frame", frame, "s")
    pos = _vec3("position", position)
    vel = _vec3("velocity", velocity)
    om = _vec3("omega", omega)
    for g, m in zip(shapes, shape_mass):
        if np.linalg.norm(m.com) > 1e-9 * max(1.0, g.radius):
            raise InputError("probe mass properties", m.com.tolist(), "the CoM must be at the shape origin")
    rolls = contact.rolling_resistance != 0.0 or "rolling_resistance" in (contact_dispersions or {})
    if rolls and not float(rolling_radius) > 0.0:   # the torque is C_RR · R · F_N: R = 0 would silently drop it
        raise InputError("rolling_radius", rolling_radius, "must be > 0 m (the probe's radius in the direction of "
                         "rolling, seed 004 eq 2.85) when a rolling resistance is given")
    rf = getattr(target.terrain, "rocks", None)
    if rf is not None:
        for g in shapes:  # a sphere's contact test reads its centre's distance: it must be in the exact range
            if float(g.radius) >= rf.reach:
                raise InputError("probe bounding radius", float(g.radius),
                                 f"must be < RockField.reach = {rf.reach} m (the terrain distance is exact "
                                 "below reach)")
    world = World(name)
    if contact.law is not None:
        world.add_resource(contact.law)      # the deployment links its kernels against it
    res = ProbeShapes()
    ids = [add_probe_shape(res, g) for g in shapes]
    world.add_resource(res)
    world.add_resource(target)
    world.add_resource(RotatingFrame(target.rotation, name="target"))   # the probes' integration frame
    world.add_resource(settings)
    declare_collision_events(world.events)
    world.events.capacity = DEPLOY_EVENT_CAPACITY
    probe = world.spawn(RigidState(position=pos, velocity=vel, omega=om),
                        MassProps(mass=float(shape_mass[0].mass), inertia=np.asarray(shape_mass[0].inertia, float)),
                        ProbeShape(shape=ids[0], bounding_radius=float(res.shape_radius[ids[0]])),
                        ProbePhase(), ProbeContact(terrain_pair=contact.row(), rolling_radius=float(rolling_radius)),
                        ProbeRecord(), ProbeInertial(), name="probe")
    world.add_system(DeploymentLoop())
    disp = []
    for spread_name, spread in (("position_sigma3", position_sigma3), ("velocity_sigma3", velocity_sigma3)):
        for v in np.ravel(np.asarray(spread, dtype=object)):      # every axis: a negative one is refused
            check_spread(spread_name, v)
    if np.max(position_sigma3) > 0:
        disp.append(Dispersion(probe, "body_position", normal(pos, position_sigma3), name="release_position"))
    if np.max(velocity_sigma3) > 0:
        disp.append(Dispersion(probe, "body_velocity", normal(vel, velocity_sigma3), name="release_velocity"))
    if random_attitude:
        disp.append(Dispersion(probe, "body_attitude", uniform_quaternion(), name="release_attitude"))
    if check_spread("omega_sigma3", omega_sigma3) > 0:
        disp.append(Dispersion(probe, "body_omega", normal(om, [omega_sigma3] * 3), name="release_omega"))
    if len(shapes) > 1:
        inertias = [np.asarray(m.inertia, float) for m in shape_mass]
        masses = [float(m.mass) for m in shape_mass]
        radii = [float(res.shape_radius[k]) for k in ids]
        k_ids = np.asarray(ids, np.int64)
        disp.append(Dispersion(probe, "probe_shape", lambda rng: k_ids[rng.integers(len(k_ids))],
                               name="probe_shape",
                               derive={"body_inertia": lambda s: inertias[int(np.flatnonzero(k_ids == s)[0])],
                                       "body_mass": lambda s: masses[int(np.flatnonzero(k_ids == s)[0])],
                                       "probe_bounding_radius": lambda s: radii[int(np.flatnonzero(k_ids == s)[0])]}))
    if contact_dispersions:
        disp.append(_contact_dispersion(probe, contact, contact_dispersions))
    return Scene(name=name, description=description, world=world, t_end=settings.t_cap, dt=frame,
                 record_every=record_every, record=TRAJECTORY_COLUMNS if record_every else (), final=FINAL_COLUMNS,
                 dispersions=disp, params=params or {})


#: Contact laws a deployment scene's ``contact`` parameter selects.
CONTACT_LAWS = ("rigid", "regolith")


def terrain_contact_law(contact: str, restitution: float | None, *,
                        rigid_restitution: float) -> tuple[Regolith | None, float]:
    """``(regolith law or None, restitution)`` of a scene's ``contact`` and ``restitution``
    parameters: ``'rigid'`` is Stronge with a constant ``restitution`` (``rigid_restitution`` when
    not given); ``'regolith'`` is :func:`components.contact_params.low_gravity_regolith` with its
    ``e₀ = e₁`` set to ``restitution`` (its default 0.3 when not given)."""
    if contact not in CONTACT_LAWS:
        raise InputError("contact", contact, "must be 'rigid' (Stronge, constant e) or 'regolith' (e by the normal "
                                             "impact speed, docs/validation.md)")
    if contact == "rigid":
        return None, rigid_restitution if restitution is None else restitution
    reg = low_gravity_regolith()
    e = reg.e_floor if restitution is None else restitution
    return dataclasses.replace(reg, e_floor=e, e_max=e), e


def _law_params(contact: str) -> dict:
    """``contact`` among a scene's stored parameters only when it is not the default (so stores of
    the defaults keep their earlier parameters)."""
    return {} if contact == "rigid" else {"contact": contact}


def _contact_dispersion(probe, contact: ContactParams, draws: dict) -> Dispersion:
    """Draw the probe–terrain pair row per sample: ``restitution`` (the regolith law's ``e₀ = e₁``
    when ``contact.regolith`` is set), ``friction``, ``rolling_resistance`` or, with a regolith
    speed law, ``speed_exponent``."""
    from components.contact_params import PAIR_FIELDS

    reg = contact.regolith
    allowed = ("restitution", "friction", "rolling_resistance") + (("speed_exponent",) if reg is not None else ())
    idx = {}
    for k in draws:
        if k not in allowed:
            raise InputError("contact dispersion", k, "must be one of " + ", ".join(allowed))
        idx[k] = PAIR_FIELDS.index(k)
    if reg is not None and "restitution" in draws and reg.e_floor != reg.e_max:
        raise InputError("contact dispersion", "restitution", "cannot be drawn for a regolith law whose e_floor "
                         f"({reg.e_floor}) and e_max ({reg.e_max}) differ: it would not reach the impacts")
    if reg is not None and "speed_exponent" in draws and reg.reference_speed <= 0.0:
        raise InputError("contact dispersion", "speed_exponent", "needs the regolith law's reference_speed > 0")
    base = contact.row()
    i_e, i_e0, i_e1 = idx.get("restitution", 0), PAIR_FIELDS.index("e_floor"), PAIR_FIELDS.index("e_max")

    def draw(rng):
        row = base.copy()
        for k, d in draws.items():     # not clipped: a draw outside its rule is refused per sample, before work
            row[idx[k]] = float(d(rng))
        if reg is None or "restitution" in draws:
            row[i_e0] = row[i_e1] = row[i_e]
        return row

    return Dispersion(probe, "probe_terrain_pair", draw, name="contact_terrain")


def _vec3(name, v) -> np.ndarray:
    a = np.asarray(v, float)
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise InputError(name, v, "must be 3 finite numbers")
    return a


def _release(altitude: str):
    if altitude == "low":
        return [0.0, 0.0, 200.0], [15.0] * 3, [0.0, 0.0, -0.05], [0.01] * 3
    if altitude == "high":
        return [500.0, 0.0, 0.0], [30.0] * 3, [-0.03, 0.0, 0.0], [0.01] * 3
    raise InputError("altitude", altitude, "must be 'low' or 'high' (Table 4.3)")


def build_sphere(*, altitude: str = "low", gravity: str = "voxel", rocks: bool | str = False, t_cap: float = 36000.0,
                 frame: float = DEFAULT_FRAME, record_every: int | None = None, contact: str = "rigid",
                 restitution: float | None = None, friction: float = 1.0, rolling_resistance: float = 0.035,
                 radius: float = 0.125, mass: float = 5.0,
                 j: float = 0.4, restitution_sigma3: float = 0.0, friction_sigma3: float = 0.0,
                 rocks_per_m2: float | None = None, rock_region: float | None = None, fbm: bool = False) -> Scene:
    """``deploy-sphere`` (Tables 4.2–4.3; e 0.65 unless ``restitution`` or ``contact`` says otherwise)."""
    from scenes.assets.mass_properties import MassProperties

    regolith, restitution = terrain_contact_law(contact, restitution, rigid_restitution=0.65)
    r = positive("radius", radius, "m")
    m = positive("mass", mass, "kg")
    if not (0.0 <= j <= 2.0 / 3.0):
        raise InputError("j", j, "reduced inertia must be in [0, 2/3] for a spherically symmetric probe (eq 4.1)")
    p, ps, v, vs = _release(altitude)
    mp = MassProperties(mass=m, com=np.zeros(3), inertia=j * m * r * r * np.eye(3))
    params = dict(altitude=altitude, gravity=gravity, rocks=rocks, t_cap=t_cap, frame=frame, record_every=record_every,
                  restitution=restitution, friction=friction, rolling_resistance=rolling_resistance, radius=r, mass=m,
                  j=j, restitution_sigma3=restitution_sigma3, friction_sigma3=friction_sigma3,
                  **_rock_params(rocks, rocks_per_m2, rock_region), **_optional(fbm=fbm), **_law_params(contact))
    return deployment_scene("deploy-sphere", DESCRIPTIONS["deploy-sphere"], target=itokawa_target(gravity=gravity,
                            rocks=rocks, rock_centre=p, rocks_per_m2=params.get("rocks_per_m2", ROCKS_PER_M2),
                            rock_region=params.get("rock_region", ROCK_REGION),
                            fbm=bool(fbm)),
                            shapes=[sphere_probe(r)], shape_mass=[mp],
                            contact=ContactParams(restitution=restitution, friction=friction,
                                                  rolling_resistance=rolling_resistance, regolith=regolith),
                            position=p, position_sigma3=ps, velocity=v, velocity_sigma3=vs, random_attitude=True,
                            rolling_radius=r, settings=DeploySettings(t_cap=positive("t_cap", t_cap, "s")),
                            contact_dispersions=_contact_spreads(restitution, restitution_sigma3, friction,
                                                                 friction_sigma3),
                            frame=frame, record_every=record_every, params=params)


def build_cube(*, gravity: str = "voxel", rocks: bool | str = False, t_cap: float = 36000.0,
               frame: float = DEFAULT_FRAME, record_every: int | None = None, contact: str = "rigid",
               restitution: float | None = None, friction: float = 0.5, mass: float = 5.0, density: float = 500.0,
               level: int = 0, restitution_sigma3: float = 0.0, friction_sigma3: float = 0.0,
               rocks_per_m2: float | None = None, rock_region: float | None = None, fbm: bool = False) -> Scene:
    """``deploy-cube`` (Table 4.6; e 0.5 unless ``restitution`` or ``contact`` says otherwise)."""
    geom = platonic("cube", mass=mass, density=density, level=level)
    _, restitution = terrain_contact_law(contact, restitution, rigid_restitution=0.5)
    params = dict(gravity=gravity, rocks=rocks, t_cap=t_cap, frame=frame, record_every=record_every,
                  restitution=restitution, friction=friction, mass=mass, density=density, level=level,
                  restitution_sigma3=restitution_sigma3, friction_sigma3=friction_sigma3,
                  **_rock_params(rocks, rocks_per_m2, rock_region), **_optional(fbm=fbm), **_law_params(contact))
    return _one_shape_scene("deploy-cube", geom, mass, params)


def _one_shape_scene(name: str, geom, mass: float, params: dict) -> Scene:
    """A deployment of one probe shape released as deploy-cube (Table 4.6: low-altitude release,
    random attitude), on the Itokawa-like target, with the contact and target options in ``params``
    (the builder's stored parameters)."""
    g = params.get
    p, ps, v, vs = _release("low")
    regolith, e = terrain_contact_law(g("contact", "rigid"), g("restitution"), rigid_restitution=0.5)
    f = g("friction")
    return deployment_scene(name, DESCRIPTIONS[name],
                            target=itokawa_target(gravity=g("gravity"), rocks=g("rocks"), rock_centre=p,
                                                  rocks_per_m2=g("rocks_per_m2", ROCKS_PER_M2),
                                                  rock_region=g("rock_region", ROCK_REGION), fbm=bool(g("fbm", False))),
                            shapes=[geom], shape_mass=[probe_mass_properties(geom, mass=positive("mass", mass, "kg"))],
                            contact=ContactParams(restitution=e, friction=f, regolith=regolith),
                            position=p, position_sigma3=ps, velocity=v, velocity_sigma3=vs,
                            settings=DeploySettings(t_cap=positive("t_cap", g("t_cap"), "s")), frame=g("frame"),
                            contact_dispersions=_contact_spreads(e, g("restitution_sigma3"), f, g("friction_sigma3")),
                            record_every=g("record_every"), params=params)


def _optional(**kw) -> dict:
    """Parameters stored only when set (so stores of the defaults keep their earlier parameters)."""
    return {k: v for k, v in kw.items() if v}


def build_box(*, size=BOX_SIZE, mass: float = 10.0, level: int = 0, gravity: str = "voxel",
              rocks: bool | str = False, fbm: bool = False, t_cap: float = 36000.0, frame: float = DEFAULT_FRAME,
              record_every: int | None = None, contact: str = "rigid", restitution: float | None = None,
              friction: float = 0.5, restitution_sigma3: float = 0.0, friction_sigma3: float = 0.0,
              rocks_per_m2: float | None = None, rock_region: float | None = None) -> Scene:
    """``deploy-box``: a solid box of edge lengths ``size`` [m] (body x, y, z) and ``mass`` [kg],
    tessellated to ``level``, released as deploy-cube (Table 4.6)."""
    geom = box(size, level=level)
    _, restitution = terrain_contact_law(contact, restitution, rigid_restitution=0.5)
    params = dict(size=[float(x) for x in size], mass=mass, level=level, gravity=gravity, rocks=rocks, t_cap=t_cap,
                  frame=frame, record_every=record_every, restitution=restitution, friction=friction,
                  restitution_sigma3=restitution_sigma3, friction_sigma3=friction_sigma3,
                  **_rock_params(rocks, rocks_per_m2, rock_region), **_optional(fbm=fbm), **_law_params(contact))
    return _one_shape_scene("deploy-box", geom, mass, params)


def _rock_params(rocks, rocks_per_m2, rock_region) -> dict:
    """The polyhedral population's parameters (defaults :data:`ROCKS_PER_M2`, :data:`ROCK_REGION`),
    recorded with the scene's only when they are used; given without polyhedral rocks, refused."""
    if _rock_kind(rocks) != "polyhedral":
        for name, v in (("rocks_per_m2", rocks_per_m2), ("rock_region", rock_region)):
            if v is not None:
                raise InputError(name, v, f"does nothing with rocks={rocks!r} (only rocks='polyhedral' places "
                                          "rocks): leave it out")
        return {}
    return dict(rocks_per_m2=ROCKS_PER_M2 if rocks_per_m2 is None else rocks_per_m2,
                rock_region=ROCK_REGION if rock_region is None else rock_region)


def _contact_spreads(e, e_sigma3, f, f_sigma3) -> dict:
    """Normal draws of e and f (3σ spreads; 0: not dispersed) truncated to their valid ranges: a
    draw outside is drawn again, so no probability piles up at a bound (clipping put every draw
    beyond e = 1 at exactly 1). A user's own dispersion is refused when it leaves the range."""
    out = {}
    if check_spread("restitution_sigma3", e_sigma3) > 0:
        out["restitution"] = _truncated("restitution_sigma3", normal(e, e_sigma3), 1.0)
    if check_spread("friction_sigma3", f_sigma3) > 0:
        out["friction"] = _truncated("friction_sigma3", normal(f, f_sigma3), math.inf)
    return out


#: Draws a truncated normal may take before its spread is refused (the mean lies in the range, so
#: at least about a quarter of the draws land inside: 200 misses in a row have probability < 1e-24).
TRUNCATION_TRIES = 200


def _truncated(name: str, draw, top: float):
    """``draw(rng)`` truncated to [0, top] by rejection (the truncated normal)."""

    def truncated(rng):
        for _ in range(TRUNCATION_TRIES):
            v = float(draw(rng))
            if 0.0 <= v <= top:
                return v
        raise InputError(name, "(its draws)", f"leave [0, {top:g}] {TRUNCATION_TRIES} times in a row: the mean "
                                              f"must lie in the range")
    return truncated


#: Table 4.7's shapes, in its order.
SHAPES = ("sphere", "dodecahedron", "icosahedron", "cube", "octahedron", "tetrahedron")


def build_shapes(*, gravity: str = "voxel", rocks: bool | str = False, t_cap: float = 36000.0,
                 frame: float = DEFAULT_FRAME, record_every: int | None = None, contact: str = "rigid",
                 restitution: float | None = None, friction: float = 0.5, mass: float = 5.0, density: float = 500.0,
                 shapes: str = "all",
                 rocks_per_m2: float | None = None, rock_region: float | None = None, level: int = 0, fbm: bool = False,
                 restitution_sigma3: float = 0.0, friction_sigma3: float = 0.0) -> Scene:
    """``deploy-shapes`` (Table 4.7): one of the six shapes drawn per sample (``shapes``: 'all' or a
    comma-separated subset; ``level``: tessellation of the polyhedra, the sphere has no vertices)."""
    regolith, restitution = terrain_contact_law(contact, restitution, rigid_restitution=0.5)
    names = SHAPES if shapes == "all" else tuple(s.strip() for s in str(shapes).split(","))
    geoms, mps = [], []
    for s in names:
        if s == "sphere":
            r = (3.0 * mass / (4.0 * math.pi * density)) ** (1.0 / 3.0)
            g = sphere_probe(r)
        elif s in SHAPES:
            g = platonic(s, mass=mass, density=density, level=level)
        else:
            raise InputError("shapes", s, f"must be 'all' or names from {', '.join(SHAPES)}")
        geoms.append(g)
        mps.append(probe_mass_properties(g, mass=mass))
    p, ps, v, vs = _release("low")
    params = dict(gravity=gravity, rocks=rocks, t_cap=t_cap, frame=frame, record_every=record_every,
                  restitution=restitution, friction=friction, mass=mass, density=density, shapes=",".join(names),
                  **_rock_params(rocks, rocks_per_m2, rock_region),
                  **_optional(fbm=fbm, level=level, restitution_sigma3=restitution_sigma3,
                              friction_sigma3=friction_sigma3), **_law_params(contact))
    return deployment_scene("deploy-shapes", DESCRIPTIONS["deploy-shapes"],
                            target=itokawa_target(gravity=gravity, rocks=rocks, rock_centre=p,
                                                  rocks_per_m2=params.get("rocks_per_m2", ROCKS_PER_M2),
                                                  rock_region=params.get("rock_region", ROCK_REGION), fbm=bool(fbm)),
                            shapes=geoms, shape_mass=mps,
                            contact=ContactParams(restitution=restitution, friction=friction, regolith=regolith),
                            position=p, position_sigma3=ps, velocity=v, velocity_sigma3=vs,
                            settings=DeploySettings(t_cap=positive("t_cap", t_cap, "s")), frame=frame,
                            contact_dispersions=_contact_spreads(restitution, restitution_sigma3, friction,
                                                                 friction_sigma3),
                            record_every=record_every, params=params)


DESCRIPTIONS = {
    "deploy-sphere": "5 kg sphere released over an Itokawa-like asteroid (seed 004 Tables 4.2-4.3): bounces, settling",
    "deploy-cube": "5 kg cube released 200 m over an Itokawa-like asteroid (seed 004 Table 4.6): bounces, settling",
    "deploy-shapes": "the six lander shapes of seed 004 Table 4.7 released over an Itokawa-like asteroid",
    "deploy-box": "10 kg box of 0.3 x 0.28 x 0.2 m released over an Itokawa-like asteroid (any size with -p size)",
}
