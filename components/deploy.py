"""Components and resources of probe deployment to a small body (seed 004 §2.1, §2.7, ch. 4).

A deployed probe is a rigid body — :class:`components.rigid.RigidState` and
:class:`components.rigid.MassProps`, the ``body_*`` columns of every rigid body — with a shape
(:class:`components.probe.ProbeShape`), integrated in the **uniformly rotating target frame T**
(seed eq 2.1), the deployment's integration frame: ``body_position``/``body_velocity`` are the CoM
position and velocity in T, ``body_attitude`` rotates body into T components and ``body_omega`` is
the angular velocity of the body relative to T in body axes. At rest on the surface all four are
constant and the two rates are zero, whatever the location (the seed's reason for this choice).
The reference point is the CoM (``body_com`` must be zero: the probe's vertices and inertia are
given about its CoM). Quaternions are scalar-first, as everywhere in the project.

Every probe row is in one **phase** (:class:`DeployPhase`): FLY (ballistic), COLLIDE (an impulsive
collision is pending at the current time) or CONTACT (sliding, rolling or resting on the surface),
each advanced by its own system (seed §2.7.3: rows in different phases never share a kernel).
End states are written to ``row_status``: SETTLED, ESCAPED, TIMED_OUT, FAILED
(:class:`components.status.Status`).

Resources: :class:`DeployTarget` (rotation, gravity source, terrain) and :class:`DeploySettings`
(tolerances, thresholds, caps). Column groups besides the rigid body's: :class:`ProbePhase`,
:class:`ProbeContact`, :class:`ProbeInertial` (inertial views for output) and :class:`ProbeRecord`
(per-sample finals that the systems accumulate while running); the probe's geometry is
:class:`components.probe.ProbeShape`.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field

import numpy as np

from components.contact_params import BAUMGARTE_RATE, PAIR_FIELD_COUNT, PAIR_FIELDS
from components.gravity import GravitySource
from components.terrain import TerrainSDF
from ecs import column, component
from ecs.errors import InputError
from ecs.rules import elementwise, nonnegative

__all__ = ["DeployPhase", "DeploySettings", "DeployTarget", "ProbeContact", "ProbePhase", "ProbeInertial",
           "ProbeRecord"]


class DeployPhase(enum.IntEnum):
    """Which system advances a probe row (``probe_phase``)."""

    FLY = 0       #: ballistic flight above the surface (:mod:`systems.deployment.fly`)
    COLLIDE = 1   #: a collision is pending at ``row_time`` (:mod:`systems.deployment.collide`)
    CONTACT = 2   #: continued contact motion (:mod:`systems.deployment.contact`)
    ENDED = 3     #: the row has an end state in ``row_status`` (settled, escaped, timed out, failed)


@component("probe")
class ProbePhase:
    """Phase and integrator memory of a probe row."""

    phase: int = column("1", dtype=np.int8, default=0, doc="DeployPhase code", flags=DeployPhase)
    step: float = column("s", default=0.0, doc="adaptive step proposal (0: choose one)")


@component("probe")
class ProbeContact:
    """Contact parameters of the probe against the terrain (a row of PAIR_FIELDS).

    Per row so that any of them can be dispersed; a scene fills it from its
    :class:`components.contact_params.ContactPairs` registry (pair probe–terrain).
    """

    terrain_pair: np.ndarray = column("1", shape=PAIR_FIELD_COUNT, dims=("pair_field",),
                                      labels={"pair_field": PAIR_FIELDS},
                                      doc="restitution, friction, rolling_resistance, regolith, e_floor, e_max, "
                                          "critical_angle, reference_speed, speed_exponent "
                                          "(components.contact_params.PAIR_FIELDS)",
                                      check=elementwise({0: (0.0, 1.0), 1: (0.0, np.inf), 2: (0.0, np.inf),
                                                         4: (0.0, 1.0), 5: (0.0, 1.0), 7: (0.0, np.inf),
                                                         8: (0.0, np.inf)}, PAIR_FIELDS))
    rolling_radius: float = column("m", default=0.0, doc="R of the rolling-resistance torque (0: no rolling "
                                                         "resistance)", check=nonnegative("m"))


@component("probe")
class ProbeInertial:
    """Inertial views of the probe state, refreshed at every frame end for output (frame N).

    The target's attitude is ``q_T/N(t) = exp(½ Ω t)`` (uniform rotation from the identity at t = 0).
    """

    position_inertial: np.ndarray = column("m", shape=3, frame="inertial", doc="CoM position")
    velocity_inertial: np.ndarray = column("m/s", shape=3, frame="inertial", doc="CoM velocity")
    attitude_inertial: np.ndarray = column("1", shape=4, frame="body->inertial", default=[1.0, 0.0, 0.0, 0.0],
                                           doc="unit quaternion, scalar-first")
    target_attitude: np.ndarray = column("1", shape=4, frame="target->inertial", default=[1.0, 0.0, 0.0, 0.0],
                                         doc="attitude of the target, unit quaternion, scalar-first")


@component("probe")
class ProbeRecord:
    """What a run accumulates per probe; saved under ``final/`` (NaN: never happened)."""

    first_impact_time: float = column("s", default=math.nan, doc="time of the first collision")
    settle_time: float = column("s", default=math.nan, doc="time the probe came to rest (start of the hold)")
    rest_since: float = column("s", default=math.nan, doc="start of the current at-rest interval")
    bounces: int = column("1", dtype=np.int32, default=0, doc="collisions after which the probe flew again")
    collisions: int = column("1", dtype=np.int32, default=0, doc="collisions resolved (each may span vertices)")
    distance: float = column("m", default=0.0, doc="path length of the CoM in the target frame")
    end_time: float = column("s", default=math.nan, doc="time the row reached its end state")
    max_penetration: float = column("m", default=0.0, doc="deepest vertex penetration seen at an event or a "
                                                          "contact step (0: never below the surface)")
    latitude: float = column("deg", default=math.nan, doc="latitude of the CoM at the end (target frame)")
    longitude: float = column("deg", default=math.nan, doc="longitude of the CoM at the end (target frame)")
    slope: float = column("deg", default=math.nan, doc="settling slope: angle between the surface normal and "
                                                       "the net (gravity + centrifugal) acceleration (seed §4.1)")


def _positive(value, name, unit) -> float:
    v = float(value)
    if not (v > 0 and math.isfinite(v)):
        raise InputError(name, value, f"must be a positive finite number [{unit}]")
    return v


@dataclass(eq=False)
class DeployTarget:
    """The target body: uniform rotation, gravity and terrain (a resource).

    Attributes:
        gravity: a :mod:`components.gravity` source (point mass, ellipsoid, polyhedron, voxel field),
            target frame.
        terrain: the :class:`components.terrain.TerrainSDF` the probe touches, target frame.
        rotation: angular velocity Ω_T/N of the target [rad/s], shape (3,), target frame (constant:
            the seed's uniform rotation, Ω̇ = 0).
        name: a label stored with the run.
        shape_vertices, shape_faces: optional shape model (vertices [m], triangles) written to the
            store's ``scene/`` group, so a store can draw its target without the scene's code.
    """

    gravity: GravitySource
    terrain: TerrainSDF
    rotation: np.ndarray = field(default_factory=lambda: np.zeros(3))
    name: str = "target"
    shape_vertices: np.ndarray | None = None
    shape_faces: np.ndarray | None = None

    def store_arrays(self) -> dict:
        """The target's shape model for the store's ``scene/`` group (plots draw it under results)."""
        if self.shape_vertices is None or self.shape_faces is None:
            return {}
        return {"target_vertices": (np.asarray(self.shape_vertices, np.float64), ("target_vertex", "xyz"), "m",
                                    "shape-model vertices of the target, target frame (centred on its CoM)"),
                "target_faces": (np.asarray(self.shape_faces, np.int64), ("target_face", "corner"), "1",
                                 "shape-model triangles (vertex indices, counter-clockwise seen from outside)")}

    def __post_init__(self):
        if not isinstance(self.gravity, GravitySource):
            raise InputError("DeployTarget.gravity", type(self.gravity).__name__, "must be a components.gravity source")
        if not isinstance(self.terrain, TerrainSDF):
            raise InputError("DeployTarget.terrain", type(self.terrain).__name__, "must be a TerrainSDF")
        w = np.asarray(self.rotation, dtype=np.float64)
        if w.shape != (3,) or not np.all(np.isfinite(w)):
            raise InputError("DeployTarget.rotation", self.rotation, "must be 3 finite numbers [rad/s]")
        self.rotation = w

    @staticmethod
    def spin_about_z(period_hours: float) -> np.ndarray:
        """Ω [rad/s] for a uniform rotation about +z with the given period [h]."""
        return np.array([0.0, 0.0, 2.0 * math.pi / (_positive(period_hours, "rotation period", "h") * 3600.0)])


@dataclass
class DeploySettings:
    """Tolerances, thresholds and caps of a deployment run (a resource; defaults as documented).

    Attributes:
        rtol, atol: DP5(4) relative / absolute tolerance of flight (seed §2.7.1: relative 1e-10).
            atol applies to positions [m], velocities [m/s], quaternion components and rates
            [rad/s] alike.
        event_tol: time tolerance of event location [s] (seed: Δt_e; default 1e-6 s).
        h_max: largest integration step [s].
        t_cap: simulated-time cap [s] (default 10 h, as for the seed's KW4 runs): TIMED_OUT.
        contact_speed: collisions whose largest normal approach speed is below this enter contact
            motion through a final e = 0 collision, when the surface must keep pushing [m/s].
        contact_gap: a vertex within this gap of the surface carries contact forces [m].
        settle_speed, settle_rate: at-rest thresholds on |v| [m/s] and |ω| [rad/s] (relative to T).
        settle_hold: time the probe must stay at rest, in contact, to be SETTLED [s].
        rest_slide: end the hold as soon as the rest is certain — a static equilibrium on at
            least three contacts with margins to sliding and tipping, no row term acting, and a
            kinetic energy that friction's spare capacity dissipates within this distance [m]
            (:func:`systems.deployment.contact._rest_certain`) — holding the probe there, at zero
            velocity, to the hold's end; 0 integrates the whole hold step by step.
        escape_radius: beyond this distance from the target CoM [m] a probe with positive
            two-body energy moving outwards is ESCAPED (0: 4 × the terrain's bounding radius).
        contact_rtol, contact_atol, contact_h_max, contact_h_min: DP5(4) tolerances and largest
            and smallest step [s] of contact motion (its right-hand side is only piecewise smooth:
            regularised friction, active-set changes; a step of contact_h_min is always accepted).
        vstar, wstar: stick/slip and rolling regularisation (eqs 2.105, 2.87) [m/s], [rad/s].
        contact_baumgarte: β [1/s] of the contacts' velocity-level constraint stabilisation,
            N·v̇ + v·Ṅ = −β N·v (:mod:`systems.probe_contact.contact_motion`; 0: eq 2.92 as printed).
        max_collision_iterations: cap of the multi-vertex collision policy.
        steps_per_launch: integration steps a fly/contact kernel takes per row before returning
            (the seed's k_fly / k_contact).
    """

    rtol: float = 1e-10
    atol: float = 1e-12
    event_tol: float = 1e-6
    h_max: float = 60.0
    t_cap: float = 36000.0
    contact_speed: float = 2e-3
    contact_gap: float = 1e-4
    settle_speed: float = 1e-3
    settle_rate: float = 1e-2
    settle_hold: float = 60.0
    rest_slide: float = 1e-4
    escape_radius: float = 0.0
    contact_rtol: float = 1e-5
    contact_atol: float = 1e-7
    contact_h_max: float = 5.0
    contact_h_min: float = 1e-3
    vstar: float = 1e-4
    wstar: float = 1e-3
    contact_baumgarte: float = BAUMGARTE_RATE
    max_collision_iterations: int = 1000
    steps_per_launch: int = 256

    def __post_init__(self):
        for name in ("rtol", "atol", "event_tol", "h_max", "t_cap", "contact_speed", "contact_gap", "settle_speed",
                     "settle_rate", "settle_hold", "contact_rtol", "contact_atol", "contact_h_max", "contact_h_min", "vstar", "wstar"):
            _positive(getattr(self, name), f"DeploySettings.{name}", "SI")
        if not (self.contact_baumgarte >= 0 and math.isfinite(self.contact_baumgarte)):
            raise InputError("DeploySettings.contact_baumgarte", self.contact_baumgarte, "must be a finite rate >= 0 1/s")
        if not (self.escape_radius >= 0 and math.isfinite(self.escape_radius)):
            raise InputError("DeploySettings.escape_radius", self.escape_radius, "must be >= 0 m (0: automatic)")
        if not (self.rest_slide >= 0 and math.isfinite(self.rest_slide)):
            raise InputError("DeploySettings.rest_slide", self.rest_slide, "must be a finite distance >= 0 m (0: integrate the hold)")
        for name in ("max_collision_iterations", "steps_per_launch"):
            if int(getattr(self, name)) < 1:
                raise InputError(f"DeploySettings.{name}", getattr(self, name), "must be >= 1")

