"""Free-flyer capture: the ISS-like station's 7-joint arm snares a drifting free-flyer, with facet
contact between the arm's end effector and the flyer (seed 001: a multibody vehicle in orbit;
seed 000: JEOD facet contact, its latching spring, §3.4.8).

One world, two trees per sample, stepped together by :class:`systems.multibody.dynamics.MultibodyDynamics`
(the contact couples them: :class:`systems.facets.contact.FacetContact` with its facets on links
runs inside the multibody solve, at every stage):

* **the station and its arm** (:func:`scenes.station.station_tree` without a payload: JEOD's ISS
  mass properties, the SSRMS-like arm), on a circular orbit with its structural axes in LVLH, the
  arm joints held at the start pose by spring-damper servos (:func:`scenes.station.joint_servo`,
  natural period ``servo_period``);
* **the free-flyer**, a uniform cylinder (``flyer_mass``, ``flyer_length``, ``flyer_radius``;
  default the size of JAXA's HTV, 16.5 t, 9.8 m × 4.4 m), its axis along the end effector's
  pointing direction (B8's x axis), its grapple fixture on that axis ``fixture_standoff`` beyond
  its near end, placed ``gap`` short of touching the end effector's snare (and ``offset`` aside)
  and drifting towards it
  at ``approach_speed`` relative to the station's rigid motion (its rate is the station's).

Facets and interactions (materials):

* ``snare`` — a point facet of radius ``snare_radius`` at the end effector (B8's tip) — against
  ``fixture`` — a point facet of radius ``fixture_radius`` at the flyer's grapple fixture: a
  **latching** spring (``latch_stiffness``, ``latch_damping``; mode ``"latch"``: the spring's sign
  is reversed about the facets' cores, so once the spheres overlap they are pulled together; the
  latch lets go only if the cores separate beyond the sum of the radii): a capture;
* ``boom`` — B8 as a line facet (its length, 0.175 m radius) — against ``hull`` — the flyer's
  cylinder as a capsule — a clamped spring-damper with Coulomb friction (``bumper_stiffness``,
  ``bumper_damping``, μ = 0.3, regularised below 1 mm/s): a miss that bumps.

The links of one tree never touch each other (seed 000 Contact_4; trees are read from the links'
parents). Every start and end of a facet pair's contact is an event in the store
(``events/contact_*``: time, facets, point, normal, normal speed).

Each sample draws the flyer's start position (3σ ``miss_spread`` [m] per inertial axis) and
velocity (3σ ``speed_spread`` [m/s] per axis) about the nominal approach. A sample is captured
when, at the end, the fixture sits within ``snare_radius + fixture_radius`` of the snare: the
store's ``final/separation_within`` (1: captured, 0: missed; a
:class:`components.multibody.Separation` of ``arm.tip`` and ``flyer.fixture`` named ``capture``),
with ``final/separation_distance`` and ``final/separation_first_within`` (the first frame end
within reach); the latch's start event gives the exact capture time.

Environment (``environment``): ``"central"`` (default, the point-mass Earth) or ``"full"``
(:func:`scenes.station` 's: EGM2008 d20, Sun/Moon, drag, SRP; the ``orbit`` extra).

Scene parameters (keyword-only): ``environment``, ``altitude`` [m], ``inclination`` [deg], ``epoch``
(TDB Julian date), ``t_end`` [s] (120), ``dt`` [s] (1), ``substeps`` (10), ``record_every``
[frames] (5), ``shoulder_pitch``, ``elbow_pitch``, ``wrist_pitch`` [deg] (start pose),
``servo_period`` [s] (60), ``flyer_mass`` [kg], ``flyer_length``, ``flyer_radius``,
``fixture_standoff`` (0.5), ``gap`` (0.5), ``offset`` (0) [m], ``approach_speed`` [m/s] (0.02),
``miss_spread`` [m] (0.3), ``speed_spread`` [m/s] (0.005), ``snare_radius`` (0.15),
``fixture_radius`` (0.05) [m], ``latch_stiffness`` [N/m] (500), ``latch_damping`` [N s/m] (800),
``bumper_stiffness`` [N/m] (2e4), ``bumper_damping`` [N s/m] (2000).

Tuning, a decision of this scene: the latch's capture well is ``k (r_s + r_f)²/2`` deep (10 J by
default). A deeper well snaps the fixture in fast enough to overshoot the snare and bump the hull
on the boom (measured with 0.3 m + 0.1 m spheres at 2000 N/m: 7 of 8 captures bumped); the damping
is near critical for the end effector's few hundred kilograms of effective mass.
"""

from __future__ import annotations

import math

import numpy as np

from components.contact import PairInteractions, SpringInteraction, line_facet, point_facet
from components.environment import Cannonball
from components.multibody import PointOfInterest, Separation, TreeCentre, spawn_tree, tree_spec
from ecs import InputError, Scene, World
from ecs.attitude import dcm_to_quat
from ecs.scene import Dispersion, normal
from scenes._common import check_spread, positive
from scenes.station import (ARM_DIAMETER, ARM_LENGTH, ARM_TIP, _environment, arm_joint_names, arm_pose, check_epoch,
                            joint_servo, on_circular_orbit, station_tree)
from systems.facets.contact import FacetContact
from systems.multibody.dynamics import MultibodyDynamics, SeparationSensor, tree_poses

DESCRIPTION = "A station arm snares a drifting free-flyer: facet contact between two trees in LEO (seeds 001, 000)"

PARAMETERS = {
    "environment": "central (point-mass Earth) or full (EGM2008 d20, Sun/Moon, drag, SRP; orbit extra)",
    "altitude": "[m] of the circular orbit", "inclination": "[deg] of the orbit",
    "epoch": "[TDB Julian date] of t = 0", "t_end": "[s]", "dt": "[s] frame", "substeps": "RK4 steps per frame",
    "record_every": "[frames] between trajectory records",
    "shoulder_pitch": "[deg] start pose", "elbow_pitch": "[deg] start pose", "wrist_pitch": "[deg] start pose",
    "servo_period": "[s] natural period of the joint servos", "flyer_mass": "[kg]", "flyer_length": "[m]",
    "flyer_radius": "[m]", "fixture_standoff": "[m] grapple fixture beyond the flyer's near end",
    "gap": "[m] between snare and fixture spheres at t = 0", "approach_speed": "[m/s] towards the snare",
    "offset": "[m] nominal miss: the flyer's start aside along the end effector's y axis",
    "miss_spread": "[m] 3-sigma of the flyer's start position, per axis",
    "speed_spread": "[m/s] 3-sigma of the flyer's start velocity, per axis",
    "snare_radius": "[m]", "fixture_radius": "[m]", "latch_stiffness": "[N/m]", "latch_damping": "[N s/m]",
    "bumper_stiffness": "[N/m] boom against hull", "bumper_damping": "[N s/m] boom against hull",
}

ENVIRONMENTS = ("central", "full")
#: The boom's capsule radius [m] (half the arm's 0.35 m boom diameter).
BOOM_RADIUS = 0.5 * ARM_DIAMETER
#: Friction between the boom and the hull, and its regularisation [m/s].
BUMPER_MU, BUMPER_SLIP = 0.3, 1e-3


def flyer_start(chain, *, gap: float, standoff: float, length: float, reach: float, approach_speed: float,
                offset: float = 0.0):
    """The flyer's free-joint state ``(q [7], qd [6])`` for the station tree ``chain`` at its start:
    axes those of the end effector (B8), its fixture ``reach + gap`` beyond the tip on B8's x axis
    and ``offset`` aside along B8's y axis, moving with the station's rigid motion minus
    ``approach_speed`` along B8's x axis."""
    Rw, origin, _ = tree_poses(chain)
    R8 = Rw[8]
    u = R8[:, 0]
    tip = origin[8] + R8 @ np.asarray(ARM_TIP)
    centre = tip + u * (reach + gap + standoff + 0.5 * length) + offset * R8[:, 1]
    w = Rw[0] @ chain.qd[0, 3:6]                    # the station's rate, inertial (its root joint is unrotated)
    v = chain.qd[0, :3] + np.cross(w, centre - chain.q[0, :3]) - approach_speed * u
    q = np.concatenate([centre, dcm_to_quat(R8)])
    qd = np.concatenate([v, R8.T @ w])
    return q, qd


def build(*, environment: str = "central", altitude: float = 420e3, inclination: float = 51.6,
          epoch: float | None = None, t_end: float = 120.0, dt: float = 1.0, substeps: int = 10,
          record_every: int | None = 5, shoulder_pitch: float = 30.0, elbow_pitch: float = -60.0,
          wrist_pitch: float = 30.0, servo_period: float = 60.0, flyer_mass: float = 16500.0,
          flyer_length: float = 9.8, flyer_radius: float = 2.2, fixture_standoff: float = 0.5, gap: float = 0.5, offset: float = 0.0,
          approach_speed: float = 0.02, miss_spread: float = 0.3, speed_spread: float = 0.005,
          snare_radius: float = 0.15, fixture_radius: float = 0.05, latch_stiffness: float = 500.0,
          latch_damping: float = 800.0, bumper_stiffness: float = 2e4, bumper_damping: float = 2000.0) -> Scene:
    """The capture scene (module docstring)."""
    if environment not in ENVIRONMENTS:
        raise InputError("environment", environment, f"must be one of {list(ENVIRONMENTS)}")
    epoch = check_epoch(epoch, environment)
    for name, v, unit in (("altitude", altitude, "m"), ("t_end", t_end, "s"), ("dt", dt, "s"),
                          ("servo_period", servo_period, "s"), ("flyer_mass", flyer_mass, "kg"),
                          ("flyer_length", flyer_length, "m"), ("flyer_radius", flyer_radius, "m"),
                          ("snare_radius", snare_radius, "m"), ("fixture_radius", fixture_radius, "m"),
                          ("latch_stiffness", latch_stiffness, "N/m"), ("bumper_stiffness", bumper_stiffness, "N/m")):
        positive(name, v, unit)
    if not math.isfinite(offset):
        raise InputError("offset", offset, "must be a finite distance [m]")
    for name, v in (("fixture_standoff", fixture_standoff), ("gap", gap), ("approach_speed", approach_speed),
                    ("latch_damping", latch_damping), ("bumper_damping", bumper_damping)):
        if not (math.isfinite(v) and v >= 0.0):
            raise InputError(name, v, "must be a finite number >= 0")
    if flyer_length <= 2.0 * flyer_radius:
        raise InputError("flyer_length", flyer_length,
                         f"must exceed the flyer's diameter {2.0 * flyer_radius:g} m (its hull is a capsule)")
    if not (math.isfinite(inclination) and -180.0 <= inclination <= 180.0):
        raise InputError("inclination", inclination, "must be an angle in [-180, 180] deg")
    pose = arm_pose(shoulder_pitch, elbow_pitch, wrist_pitch)
    m_spread = check_spread("miss_spread", miss_spread)
    v_spread = check_spread("speed_spread", speed_spread)

    chain, names, areas = station_tree(pose_deg=pose, payload_mass=0.0)
    chain = on_circular_orbit(chain, altitude=altitude, inclination=math.radians(inclination))
    chain = joint_servo(chain, period=servo_period)
    reach = snare_radius + fixture_radius
    q_f, qd_f = flyer_start(chain, gap=gap, standoff=fixture_standoff, length=flyer_length, reach=reach,
                            approach_speed=approach_speed, offset=offset)
    m, L, R = flyer_mass, flyer_length, flyer_radius
    it = m * (3 * R * R + L * L) / 12.0
    flyer = tree_spec(parents=[-1], kinds=["free"], mass=[m], inertia=[[[0.5 * m * R * R, 0, 0], [0, it, 0], [0, 0, it]]],
                      q=[q_f], qd=[qd_f], field="flyer")

    world = World("capture")
    _environment(world, environment, epoch=epoch, t_end=float(t_end))
    links = spawn_tree(world, chain, names=names, joint_names=arm_joint_names(chain.n),
                       extra=lambda k: (Cannonball(area=float(areas[k])),))
    fly = world.spawn(*flyer.components(0, -1), Cannonball(area=2.0 * R * L), name="flyer")

    inter = world.add_resource(PairInteractions())
    inter.register("snare", "fixture", SpringInteraction(k=latch_stiffness, c=latch_damping, mode="latch"))
    inter.register("boom", "hull", SpringInteraction(k=bumper_stiffness, c=bumper_damping, mu=BUMPER_MU,
                                                     mode="clamp", slip_velocity=BUMPER_SLIP))
    fixture_at = (-(0.5 * L + fixture_standoff), 0.0, 0.0)
    world.spawn(point_facet(links[8], radius=snare_radius, point=ARM_TIP, material="snare"), name="arm.snare")
    world.spawn(line_facet(links[8], radius=BOOM_RADIUS, length=ARM_LENGTH[7], point=(0.5 * ARM_LENGTH[7], 0, 0),
                           material="boom"), name="arm.B8.boom")
    world.spawn(point_facet(fly, radius=fixture_radius, point=fixture_at, material="fixture"), name="flyer.fixture")
    world.spawn(line_facet(fly, radius=R, length=L - 2.0 * R, material="hull"), name="flyer.hull")

    tip = world.spawn(PointOfInterest(link=links[8], offset=ARM_TIP), name="arm.tip")
    fixture = world.spawn(PointOfInterest(link=fly, offset=fixture_at), name="flyer.fixture")
    world.spawn(TreeCentre(link=links[0]), name="system.centre")
    world.spawn(Separation(a=tip, b=fixture, reach=reach), name="capture")
    world.add_system(FacetContact())
    world.add_system(MultibodyDynamics("rk4", substeps=substeps))
    world.add_system(SeparationSensor())

    dispersions = []
    if m_spread > 0.0:
        dispersions.append(Dispersion(fly, "joint_q", normal(q_f, [m_spread] * 3 + [0.0] * 4), name="flyer_position"))
    if v_spread > 0.0:
        dispersions.append(Dispersion(fly, "joint_qd", normal(qd_f, [v_spread] * 3 + [0.0] * 3), name="flyer_velocity"))
    params = dict(environment=environment, altitude=altitude, inclination=inclination, epoch=epoch,
                  t_end=float(t_end), dt=dt, substeps=substeps, record_every=record_every,
                  shoulder_pitch=shoulder_pitch, elbow_pitch=elbow_pitch, wrist_pitch=wrist_pitch,
                  servo_period=servo_period, flyer_mass=flyer_mass, flyer_length=flyer_length,
                  flyer_radius=flyer_radius, fixture_standoff=fixture_standoff, gap=gap, offset=offset,
                  approach_speed=approach_speed, miss_spread=m_spread, speed_spread=v_spread,
                  snare_radius=snare_radius, fixture_radius=fixture_radius, latch_stiffness=latch_stiffness,
                  latch_damping=latch_damping, bumper_stiffness=bumper_stiffness, bumper_damping=bumper_damping)
    record = ("joint_q", "link_position", "link_attitude", "poi_position", "centre_position")
    final = record + ("joint_qd", "poi_velocity", "centre_velocity", "centre_angular_momentum", "centre_kinetic_energy",
                      "separation_distance", "separation_within", "separation_first_within")
    return Scene(name="capture", description=DESCRIPTION, world=world, t_end=float(t_end), dt=float(dt),
                 record_every=record_every, record=record, final=final, dispersions=dispersions, params=params)


__all__ = ["build", "flyer_start", "DESCRIPTION", "PARAMETERS"]
