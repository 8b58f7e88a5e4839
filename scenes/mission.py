"""Set up a deployment mission from a few facts: the body, the probe, where and how it is released.

The building blocks of a user's scene file (exposed as ``tumble.small_body``, ``tumble.box_probe``,
``tumble.release_above`` and ``tumble.deployment``); the built-in ``deploy`` scene is the same
set-up driven by ``-p`` parameters. A 30-line mission::

    import tumble

    def build():
        body = tumble.small_body("spinning-top", radii=(250, 250, 220), gm=30.0, period_h=7.6,
                                 retrograde=True)
        probe = tumble.box_probe((0.3, 0.28, 0.2), mass=10.0)
        release = tumble.release_above(body, latitude=-22.0, longitude=0.0, altitude=40.0)
        return tumble.deployment("my-lander", body, probe, release,
                                 restitution=tumble.uniform(0.4, 0.6), friction=tumble.uniform(0.4, 0.8))

Conventions: the target frame is centred on the body's centre of mass with z along its spin axis;
latitude and longitude are planetocentric [deg] in that frame; a retrograde spin turns about −z.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from components.contact_params import ContactParams, Regolith, RestitutionLaw
from components.deploy import DeploySettings, DeployTarget
from components.gravity import G, PointMass, Polyhedron
from components.probe import ShapeKind
from components.terrain import TerrainSDF
from ecs import InputError, Scene
from scenes._common import positive
from scenes.assets.probes import box, platonic, probe_mass_properties, sphere_probe
from systems.terrain.sdf import eval_terrain

#: Shapes :func:`small_body` stretches to given radii: name -> built-in body of
#: :mod:`scenes.assets.bodies`.
BODY_SHAPES = {"sphere": "sphere", "ellipsoid": "ellipsoid", "spinning-top": "kw4", "itokawa": "itokawa"}


#: Bulk densities [kg/m³] a small body's shape model and GM may imply: comets (~500) to metal-rich
#: asteroids (~8,000), with room on both sides. Outside, the shape's unit (or GM) is likely wrong.
DENSITY_RANGE = (50.0, 25_000.0)


def _check_density(mu: float, volume: float, units: str) -> None:
    """Refuse a shape model whose volume [m³] and GM [m³/s²] imply an implausible bulk density,
    naming the likely mistake (the shape's unit: a factor 1e9 in density between m and km)."""
    rho = mu / G / volume
    lo, hi = DENSITY_RANGE
    if lo <= rho <= hi:
        return
    if units == "m" and lo <= rho * 1e-9 <= hi:
        hint = ": the model is likely in km (mesh_units='km')"
    elif units == "km" and lo <= rho * 1e9 <= hi:
        hint = ": the model is likely in metres (mesh_units='m')"
    else:
        hint = ": check GM [m^3/s^2] and the model's unit"
    raise InputError("mesh", f"volume {volume:.4g} m^3 with GM {mu:g} m^3/s^2",
                     f"implies a bulk density of {rho:.3g} kg/m^3, outside [{lo:g}, {hi:g}]{hint}")


def small_body(shape: str | None = None, *, radii=None, mesh=None, mesh_units: str | None = None,
               gm: float, period_h: float, retrograde: bool = False, gravity: str = "voxel",
               resolution: int = 64, gravity_resolution: int = 24, voxel_spacing: float | None = None,
               rocks: bool | str = False, fbm: bool = False) -> DeployTarget:
    """A small body to land on: shape, gravity and spin.

    Args:
        shape: ``"sphere"``, ``"ellipsoid"`` (the default), ``"spinning-top"`` (oblate, equatorial
            ridge) or ``"itokawa"``, scaled to ``radii``; refused with ``mesh`` (the mesh is the shape).
        radii: semi-axes (a, b, c) [m] along the target x, y, z (z: the spin axis). A body of
            500 × 440 m is ``radii=(250, 250, 220)``. Refused with ``mesh`` (the mesh sets the size).
        mesh: a shape-model file (OBJ, PLY, STL, TetGen, plain vertex/face tables), or a mesh in
            memory (``trimesh.Trimesh``), instead of a shape; ``mesh_units``: its coordinates' unit,
            'm' or 'km', required with a mesh (shape models are published in either). A mesh whose
            volume and GM imply a bulk density outside :data:`DENSITY_RANGE` is refused, naming
            the likely unit mistake.
        gm: gravitational parameter GM [m³/s²] (the body's density follows from its volume).
        period_h: rotation period [h]; ``retrograde``: spin about −z instead of +z.
        gravity: ``"voxel"`` (the polyhedron's field tabulated once and cached: seed 004 §2.4.2),
            ``"polyhedron"`` (exact constant-density field, slower per evaluation) or ``"point_mass"``.
        resolution: grid nodes along the longest axis of the contact surface's mesh and SDF.
        gravity_resolution: the same for the (coarser) gravity polyhedron of a built-in shape: its
            face count drives the cost of the field (24: ~12,000 faces, a voxel field in ~15 s).
        voxel_spacing: voxel size [m] (default: the longest semi-axis / 12).
        rocks, fbm: terrain texture as in :func:`scenes.deploy.itokawa_target`.
    """
    if voxel_spacing is not None and gravity != "voxel":
        raise InputError("voxel_spacing", voxel_spacing, f"does nothing with gravity={gravity!r} (only the voxel "
                                                         "field has cells): leave it out, or use gravity='voxel'")
    from scenes.assets.bodies import small_body as small_body_mesh
    from scenes.assets.sdf_build import sdf_from_mesh

    mu = positive("gm", gm, "m^3/s^2")
    if gravity not in ("polyhedron", "voxel", "point_mass"):
        raise InputError("gravity", gravity, "must be 'polyhedron', 'voxel' or 'point_mass'")
    if mesh is None and mesh_units is not None:            # a parameter that would do nothing
        raise InputError("mesh_units", mesh_units, "does nothing without mesh= (a shape-model file or trimesh.Trimesh)")
    if mesh is not None:
        for name, v, why in (("shape", shape, "the mesh is the shape"), ("radii", radii, "the mesh sets the size")):
            if v is not None:
                raise InputError(name, v, f"does nothing with mesh= ({why}): leave it out")
    if mesh is not None:
        from scenes.assets.mesh_io import load_mesh

        if mesh_units is None:
            raise InputError("mesh_units", None, "is required with a mesh: 'm' or 'km' (a model in km read as metres "
                                                 "is a body a thousand times too small)")
        m = load_mesh(mesh, units=mesh_units)
        verts, faces = np.asarray(m.vertices, float), np.asarray(m.faces, np.int64)
        poly = Polyhedron(verts, faces, mu=mu)
        _check_density(mu, poly.volume, mesh_units)
        verts = verts - poly.center_of_mass
        gverts, gfaces = verts, faces
        name = str(mesh) if isinstance(mesh, (str, os.PathLike)) else "mesh"
    else:
        shape = "ellipsoid" if shape is None else shape
        if shape not in BODY_SHAPES:
            raise InputError("shape", shape, f"must be one of {', '.join(BODY_SHAPES)} (or give mesh=)")
        base = BODY_SHAPES[shape]
        if radii is None:
            raise InputError("radii", None, "give the body's semi-axes (a, b, c) [m]")
        r = np.array([positive(f"radii[{k}]", x, "m") for k, x in enumerate(np.ravel(radii))])
        if r.shape != (3,):
            raise InputError("radii", radii, "must be three semi-axes (a, b, c) [m]")
        meshes = []
        for res in (int(resolution), int(gravity_resolution)):
            body = small_body_mesh(base, resolution=res, **({"semi_axes": tuple(r)} if base == "ellipsoid" else {}))
            half = 0.5 * (body.vertices.max(axis=0) - body.vertices.min(axis=0))
            meshes.append((body.vertices * (r / half), body.faces))     # the shape stretched to the radii
        (verts, faces), (gverts, gfaces) = meshes
        com = Polyhedron(gverts, gfaces, mu=mu).center_of_mass
        verts, gverts = verts - com, gverts - com
        name = f"{shape} {2 * r[0]:.0f} x {2 * r[1]:.0f} x {2 * r[2]:.0f} m"
    # the contact surface: the exact distance to the (scaled, re-centred) mesh, so that contact and
    # polyhedron gravity see one body (a non-uniformly scaled distance field is no distance field)
    grid = sdf_from_mesh(verts, faces, resolution=int(resolution))
    poly = Polyhedron(gverts, gfaces, mu=mu)
    if gravity == "voxel":
        from scenes.assets.voxel import build_voxel_field

        field = build_voxel_field(poly, voxel_spacing or float(np.abs(verts).max()) / 12.0)
    elif gravity == "polyhedron":
        field = poly
    else:
        field = PointMass(mu=mu)
    psr = noise = None
    if rocks in (True, "psr"):
        from scenes.assets.noise import psr_field

        psr = psr_field()
    elif rocks not in (False, None, "none", "false"):
        raise InputError("rocks", rocks, "must be false or 'psr' (polyhedral rocks: use scenes.deploy.itokawa_target)")
    if fbm:
        from scenes.assets.noise import fbm_noise

        h = min(4.8, 0.02 * float(np.abs(verts).max()))
        noise = fbm_noise(max_height=h, frequency=1.0 / h, octaves=5, seed=0)
    spin = DeployTarget.spin_about_z(positive("period_h", period_h, "h"))
    return DeployTarget(gravity=field, terrain=TerrainSDF(base=grid, fbm=noise, psr=psr),
                        rotation=-spin if retrograde else spin, name=name, shape_vertices=gverts, shape_faces=gfaces)


def box_probe(size, *, mass: float, level: int = 1):
    """A solid box probe of edge lengths ``size`` (a, b, c) [m] and ``mass`` [kg], tessellated to
    ``level`` (1 by default: corners, edge midpoints and face centres touch the ground)."""
    g = box(size, level=level)
    return g, probe_mass_properties(g, mass=positive("mass", mass, "kg"))


def mesh_probe(vertices, faces, *, mass: float, level: int = 1, units: str = "m"):
    """A solid probe of any closed triangle mesh (``vertices`` [units] about any origin; re-centred
    on its CoM) and ``mass`` [kg], tessellated to ``level``; or ``vertices`` = a shape file path
    (OBJ, STL, PLY, ...) with ``faces=None``."""
    from scenes.assets.mass_properties import solid_mesh
    from scenes.assets.probes import mesh_probe as probe_from_mesh

    if faces is None:
        from scenes.assets.mesh_io import load_mesh

        m = load_mesh(vertices, units=units)
        vertices, faces = m.vertices, m.faces
    v = np.asarray(vertices, float)
    f = np.asarray(faces, np.int64)
    com = solid_mesh(v, f, mass=positive("mass", mass, "kg")).com
    g = probe_from_mesh(v - com, f, level=level)
    return g, probe_mass_properties(g, mass=mass)


def solid_probe(name: str, *, mass: float, density: float, level: int = 1):
    """A platonic solid (or ``"sphere"``) probe of ``mass`` [kg] and ``density`` [kg/m³]."""
    if name == "sphere":
        r = (3.0 * mass / (4.0 * math.pi * density)) ** (1.0 / 3.0)
        g = sphere_probe(r)
    else:
        g = platonic(name, mass=mass, density=density, level=level)
    return g, probe_mass_properties(g, mass=positive("mass", mass, "kg"))


@dataclass
class Release:
    """Where and how a probe is let go (target frame): position [m], velocity [m/s] and their
    per-axis 3σ spreads, the surface point below and the local up direction."""

    position: np.ndarray
    velocity: np.ndarray
    position_sigma3: np.ndarray
    velocity_sigma3: np.ndarray
    surface_point: np.ndarray
    up: np.ndarray


def release_above(target: DeployTarget, *, latitude: float, longitude: float, altitude: float,
                  descent_speed: float = 0.0, position_sigma3: float = 0.0,
                  velocity_sigma3: float = 0.0) -> Release:
    """The release point ``altitude`` [m] above the surface (its distance to the nearest surface
    point) along the radial direction at planetocentric ``latitude``, ``longitude`` [deg], moving
    at ``descent_speed`` [m/s] towards the body along that direction, at rest otherwise in the
    rotating target frame. Spreads are per-axis 3σ [m], [m/s]."""
    lat, lon = math.radians(float(latitude)), math.radians(float(longitude))
    if not -90.0 <= float(latitude) <= 90.0:
        raise InputError("latitude", latitude, "must be in [-90, 90] deg")
    if not math.isfinite(float(longitude)):
        raise InputError("longitude", longitude, "must be a finite angle [deg]")
    alt = float(altitude)
    if not (math.isfinite(alt) and alt > 0.0):
        raise InputError("altitude", altitude, "must be > 0 [m] (above the surface)")
    u = np.array([math.cos(lat) * math.cos(lon), math.cos(lat) * math.sin(lon), math.sin(lat)])
    dist = lambda t: float(eval_terrain(target.terrain, np.array([t * u]))[0][0])  # noqa: E731
    hi = 1.0
    while dist(hi) < alt:      # bracket: outside at distance >= altitude
        hi *= 2.0
        if hi > 1e9:
            raise InputError("target", target.name, "has no surface along that direction")
    lo = 0.0                   # the CoM is inside (distance < 0 < altitude)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if dist(mid) < alt else (lo, mid)
        if hi - lo < 1e-9 * hi:
            break
    pos = hi * u
    lo, hi = 0.0, hi
    for _ in range(200):       # the surface point on the same ray (distance 0)
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if dist(mid) < 0.0 else (lo, mid)
        if hi - lo < 1e-9 * hi:
            break
    vel = -float(descent_speed) * u
    return Release(pos, vel, np.full(3, float(position_sigma3)), np.full(3, float(velocity_sigma3)), hi * u, u)


def deployment(name: str, target: DeployTarget, probe, release: Release, *, restitution=0.5, friction=0.5,
               rolling_resistance: float = 0.0, regolith: Regolith | None = None, speed_exponent=None,
               restitution_law: RestitutionLaw | None = None,
               t_cap: float = 36000.0, frame: float | None = None, record_every: int | None = None,
               random_attitude: bool = True, description: str = "", params: dict[str, Any] | None = None) -> Scene:
    """A deployment scene: ``probe`` (from :func:`box_probe` / :func:`solid_probe`) released at
    ``release`` over ``target``. ``restitution`` and ``friction`` are numbers or dispersions
    (``tumble.uniform(lo, hi)``, ``tumble.normal``, ``tumble.lognormal`` or any ``draw(rng)``);
    a dispersed one is drawn per sample and stored under ``inputs/contact_terrain``.

    ``regolith`` (a :class:`components.contact_params.Regolith`, e.g.
    :func:`components.contact_params.low_gravity_regolith`) makes the terrain granular: its law
    replaces the constant restitution at every impact; ``restitution`` then sets its ``e₀ = e₁``
    when the law has no angle modulation (``e₀ = e₁``), and ``speed_exponent`` (number or
    dispersion) its ``α``. ``restitution_law`` (a :class:`components.contact_params.RestitutionLaw`)
    replaces the constant restitution by the user's law at every impact instead (its ``e`` is
    ``restitution``, drawn or not)."""
    from scenes.deploy import DEFAULT_FRAME, deployment_scene

    geom, mp = probe
    # seed 004 eq 2.85: R is the probe's radius in the direction of rolling, and C_RR is zero where
    # the shape does not roll naturally. A sphere rolls about every axis (R its radius); a polyhedron
    # tips over its edges instead, so a rolling resistance on one would do nothing: refused
    rolling_radius = 0.0
    if float(rolling_resistance) > 0.0:      # a negative one is refused by ContactParams, by its rule
        if geom.kind != ShapeKind.SPHERE:
            raise InputError("rolling_resistance", rolling_resistance,
                             f"applies to a rolling (sphere) probe; a {geom.name} probe does not roll (seed 004 "
                             "eq 2.85: C_RR is zero where the shape does not roll): leave it at 0")
        rolling_radius = float(geom.radius)
    draws: dict[str, Callable] = {}
    nominal = {}
    if speed_exponent is not None and regolith is None:
        raise InputError("speed_exponent", speed_exponent, "applies to a regolith contact law only (regolith=...)")
    for key, v in (("restitution", restitution), ("friction", friction), ("speed_exponent", speed_exponent)):
        if v is None:
            continue
        if callable(v):      # dispersed: drawn per sample; the authored value is one draw
            draws[key] = v
            first = float(v(np.random.default_rng(0)))
            top = 1.0 if key == "restitution" else math.inf
            if not 0.0 <= first <= top:     # refused, never clipped (every sample's draw is checked too)
                raise InputError(f"{key} (dispersed)", first, f"every draw must lie in [0.0, {top}]: this one does "
                                                              "not (a draw outside is refused, not clipped)")
            nominal[key] = first
        else:
            nominal[key] = float(v)
    if regolith is not None and regolith.e_floor == regolith.e_max:     # e₀ = e₁: restitution sets both
        regolith = dataclasses.replace(regolith, e_floor=nominal["restitution"], e_max=nominal["restitution"])
    if regolith is not None and "speed_exponent" in nominal:            # α, with or without the angle law
        regolith = dataclasses.replace(regolith, speed_exponent=nominal["speed_exponent"])
    contact = ContactParams(restitution=nominal["restitution"], friction=nominal["friction"],
                            rolling_resistance=float(rolling_resistance), regolith=regolith, law=restitution_law)
    return deployment_scene(name, description or f"{geom.name} probe released over {target.name}", target=target,
                            shapes=[geom], shape_mass=[mp], contact=contact, position=release.position,
                            position_sigma3=release.position_sigma3, velocity=release.velocity,
                            velocity_sigma3=release.velocity_sigma3, random_attitude=random_attitude,
                            contact_dispersions=draws or None, rolling_radius=rolling_radius,
                            settings=DeploySettings(t_cap=positive("t_cap", t_cap, "s")),
                            frame=DEFAULT_FRAME if frame is None else frame, record_every=record_every,
                            params=params)


def build_mission(*, body: str | None = None, radii=None, mesh: str | None = None,
                  mesh_units: str | None = None, gm: float = 30.0, period_h: float = 7.6, retrograde: bool = True,
                  gravity: str = "voxel", resolution: int = 64, rocks: bool | str = False, fbm: bool = False,
                  latitude: float = -22.0, longitude: float = 0.0, altitude: float = 40.0, descent_speed: float = 0.0,
                  position_sigma3: float = 0.0, velocity_sigma3: float = 0.0, probe: str = "box",
                  size=None, mass: float = 10.0, density: float | None = None, level: int | None = None,
                  contact: str = "rigid", restitution: float | None = None, friction: float | None = None,
                  restitution_range=None, friction_range=None, speed_exponent: float | None = None,
                  speed_exponent_range=None, rolling_resistance: float = 0.0, t_cap: float = 36000.0,
                  frame: float | None = None, record_every: int | None = None) -> Scene:
    """``deploy``: any mission from ``-p`` (defaults: a 10 kg 0.3 × 0.28 × 0.2 m box 40 m above a
    500 × 440 m spinning-top body at latitude −22°, GM 30 m³/s², 7.6 h retrograde spin, rigid
    contact with e 0.5).
    ``restitution_range`` / ``friction_range`` = [low, high] draw them uniformly per sample.
    ``size`` (default 0.3 × 0.28 × 0.2 m) is the box's, ``density`` (default 500 kg/m³) a solid's and
    ``level`` (default 1) any probe's but the sphere's; ``body`` (default ``"spinning-top"``) and
    ``radii`` (default 250 × 250 × 220 m) are the built-in shape's, not a ``mesh``'s: given where
    they cannot act, they are refused."""
    for name, value, acts, where in (("size", size, probe == "box", f"probe={probe!r}"),
                                     ("density", density, probe != "box", f"probe={probe!r}"),
                                     ("level", level, probe != "sphere", f"probe={probe!r}"),
                                     ("body", body, mesh is None, "mesh= (the mesh is the body's shape)"),
                                     ("radii", radii, mesh is None, "mesh= (the mesh sets the size)")):
        if value is not None and not acts:
            raise InputError(name, value, f"does nothing with {where}: leave it out")
    if mesh is None:
        body = "spinning-top" if body is None else body
        radii = (250.0, 250.0, 220.0) if radii is None else radii
    size = (0.3, 0.28, 0.2) if size is None else size
    density = 500.0 if density is None else density
    level = 1 if level is None else level
    params = {k: v for k, v in locals().items() if k in _MISSION_PARAMS}
    return mission_scene("deploy", "a mission set up from -p (tumble scenes deploy lists them)", **params)


def mission_scene(name: str, description: str, *, body, radii, mesh, mesh_units, gm, period_h, retrograde, gravity,
                  resolution, rocks, fbm, latitude, longitude, altitude, descent_speed, position_sigma3,
                  velocity_sigma3, probe, size, mass, density, level, contact, restitution, friction,
                  restitution_range, friction_range, speed_exponent, speed_exponent_range, rolling_resistance, t_cap,
                  frame, record_every, rigid_restitution: float = 0.5, default_friction: float = 0.5) -> Scene:
    """The scene of :func:`build_mission` under another name (a named mission such as
    :mod:`scenes.mascot`); every argument as there. ``contact`` is ``'rigid'`` (Stronge with a
    constant ``restitution``, ``rigid_restitution`` when not given) or ``'regolith'``
    (:func:`components.contact_params.low_gravity_regolith`: ``restitution`` is its restitution at
    5 cm/s, 0.3 when not given, and ``speed_exponent`` its α, 0.88 when not given). ``friction`` is
    ``default_friction`` when not given. A value and its ``*_range`` together are refused: the range
    draws the parameter per sample, so the value would do nothing."""
    from ecs.scene import uniform

    for key, value, rng in (("restitution", restitution, restitution_range), ("friction", friction, friction_range),
                            ("speed_exponent", speed_exponent, speed_exponent_range)):
        if value is not None and rng is not None:
            raise InputError(key, value, f"is given with {key}_range = {rng!r}, which draws it per sample and would "
                                         "leave it unused: give one of the two")
    if friction is None:
        friction = default_friction

    def spread(name, rng_range, value, top):
        if rng_range is None:
            return value
        rule = f"must be [low, high] with {0.0} <= low <= high" + (f" <= {top}" if top is not None else "")
        try:
            lo, hi = (float(x) for x in rng_range)
        except (TypeError, ValueError):
            raise InputError(name, rng_range, rule) from None
        if not (0.0 <= lo <= hi and (top is None or hi <= top)):     # refused, never clipped
            raise InputError(name, rng_range, rule)
        return uniform(lo, hi)

    from scenes.deploy import terrain_contact_law

    regolith, restitution = terrain_contact_law(contact, restitution, rigid_restitution=rigid_restitution)
    if regolith is None and (speed_exponent is not None or speed_exponent_range is not None):
        raise InputError("speed_exponent" if speed_exponent is not None else "speed_exponent_range",
                         speed_exponent if speed_exponent is not None else speed_exponent_range,
                         "applies to contact='regolith' only")
    if regolith is not None and speed_exponent is None:
        speed_exponent = regolith.speed_exponent
    e_draw = spread("restitution_range", restitution_range, restitution, 1.0)    # before the slow part
    f_draw = spread("friction_range", friction_range, friction, None)
    a_draw = spread("speed_exponent_range", speed_exponent_range, speed_exponent, None)
    target = small_body(body, radii=radii, mesh=mesh, mesh_units=mesh_units, gm=gm, period_h=period_h,
                        retrograde=retrograde, gravity=gravity, resolution=resolution, rocks=rocks, fbm=fbm)
    if probe == "box":
        pr = box_probe(size, mass=mass, level=level)
    else:
        pr = solid_probe(probe, mass=mass, density=density, level=level)
    rel = release_above(target, latitude=latitude, longitude=longitude, altitude=altitude,
                        descent_speed=descent_speed, position_sigma3=position_sigma3,
                        velocity_sigma3=velocity_sigma3)
    params = {k: v for k, v in locals().items() if k in _MISSION_PARAMS}
    return deployment(name, target, pr, rel, restitution=e_draw, friction=f_draw, regolith=regolith,
                      speed_exponent=a_draw, rolling_resistance=rolling_resistance, t_cap=t_cap, frame=frame, record_every=record_every,
                      description=description, params=params)


#: The contact arguments of a flown landing's scene (:func:`flown_landing`), by name.
LANDING_CONTACT_ARGS = ("contact", "restitution", "friction", "restitution_range", "friction_range", "speed_exponent",
                        "speed_exponent_range")


#: Coulomb friction of a flown landing's box on the surface when the scene is not told (seed 004's
#: Itokawa studies draw 0.5–0.8; this is their middle)
LANDING_FRICTION = 0.65


def flown_landing(name: str, description: str, *, body: str, radii, gm: float, period_h: float, latitude: float,
                  longitude: float, altitude: float, descent_speed: float, size, mass: float, gravity: str, level: int,
                  contact_args: dict, t_cap: float, frame, record_every) -> Scene:
    """The scene of a flown landing (:mod:`scenes.mascot`, :mod:`scenes.hayabusa`): a box lander
    released straight down over a retrograde built-in body with no spread but its attitude, on a
    smooth surface, the seed's rigid Stronge contact at e 0.6 and f :data:`LANDING_FRICTION` unless ``contact_args`` (the scene's
    :data:`LANDING_CONTACT_ARGS`, e.g. the scene's ``locals()``) says otherwise."""
    return mission_scene(
        name, description, body=body, radii=radii, mesh=None, mesh_units=None, gm=gm, period_h=period_h,
        retrograde=True, gravity=gravity, resolution=64, rocks=False, fbm=False, latitude=latitude, longitude=longitude,
        altitude=altitude, descent_speed=descent_speed, position_sigma3=0.0, velocity_sigma3=0.0, probe="box",
        size=size, mass=mass, density=500.0, level=level, rolling_resistance=0.0, rigid_restitution=0.6,
        default_friction=LANDING_FRICTION, t_cap=t_cap,
        frame=frame, record_every=record_every, **{k: contact_args[k] for k in LANDING_CONTACT_ARGS})


_MISSION_PARAMS = ("body", "radii", "mesh", "mesh_units", "gm", "period_h", "retrograde", "gravity", "resolution",
                   "rocks", "fbm", "latitude", "longitude", "altitude", "descent_speed", "position_sigma3",
                   "velocity_sigma3", "probe", "size", "mass", "density", "level", "contact", "restitution", "friction",
                   "restitution_range", "friction_range", "speed_exponent", "speed_exponent_range",
                   "rolling_resistance", "t_cap", "frame", "record_every")

#: ``tumble scenes deploy`` lists these with the defaults.
PARAMETERS = {
    "body": "'sphere', 'ellipsoid', 'spinning-top' or 'itokawa', stretched to radii (or give mesh)",
    "radii": "[m] semi-axes [a, b, c] along x, y, z (z: spin axis)",
    "mesh": "a shape-model file (OBJ, PLY, STL, TetGen, plain) instead of body/radii",
    "mesh_units": "the shape model's unit: 'm' or 'km' (required with mesh)",
    "gm": "[m^3/s^2] gravitational parameter GM",
    "period_h": "[h] rotation period", "retrograde": "spin about -z instead of +z",
    "gravity": "'voxel' (tabulated once, cached), 'polyhedron' (exact, slower) or 'point_mass'",
    "resolution": "[nodes] SDF grid and mesh resolution along the longest axis",
    "rocks": "false or 'psr' (rock texture)", "fbm": "add fBm relief",
    "latitude": "[deg] release latitude (planetocentric, target frame)", "longitude": "[deg] release longitude",
    "altitude": "[m] release height above the local surface", "descent_speed": "[m/s] initial speed towards the body",
    "position_sigma3": "[m] 3-sigma release position spread per axis",
    "velocity_sigma3": "[m/s] 3-sigma release velocity spread per axis",
    "probe": "'box' or a solid: sphere, tetrahedron, cube, octahedron, dodecahedron, icosahedron",
    "size": "[m] box edge lengths [a, b, c] (box only; default [0.3, 0.28, 0.2])", "mass": "[kg] probe mass",
    "density": "[kg/m^3] solid probe density (solids only; default 500)",
    "level": "probe tessellation level (not for the sphere; default 1)",
    "contact": "'rigid' (Stronge, constant e) or 'regolith' (e falls with impact speed; docs/validation.md)",
    "restitution": "[1] e (regolith: e at normal impact speeds up to 5 cm/s; default 0.5 rigid, 0.3 regolith; "
                   "not with restitution_range)",
    "friction": "[1] f (default 0.5; not with friction_range)",
    "speed_exponent": "[1] regolith: alpha of e = restitution * min(1, (0.05 m/s / |v_n|)^alpha) (default 0.88)",
    "speed_exponent_range": "[1] [low, high]: regolith alpha uniform per sample",
    "restitution_range": "[1] [low, high]: e uniform per sample", "friction_range": "[1] [low, high]: f uniform per sample",
    "rolling_resistance": "[1] C_RR", "t_cap": "[s] simulated-time cap", "frame": "[s] frame (trajectory sampling)",
    "record_every": "[frames] trajectory decimation",
}
