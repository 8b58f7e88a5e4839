"""The records the deployment's phase kernels take (built with :func:`ecs.record`; a kernel reads
each by name in its first lines), built by :class:`systems.deployment.loop.DeployContext`:

* :data:`Probes` — the probe rows' columns the phase kernels and the end rules read and write
  (state, mass properties, shape, contact pair, bookkeeping and finals) and the inverse inertia;
* :data:`Shapes` — the probes' shapes (vertex tables) the phase kernels read;
* :data:`ContactScratch` — contact motion's per-row scratch (``cs``): the force law's inputs and outputs;
* :data:`ProbeBody` — one probe row's mass properties and shape, as its equations of motion read them;
* :data:`Target` — the target: its gravity and terrain arguments and its rotation rate;
* :data:`Limits` — the deployment settings the kernels use (tolerances, step limits, thresholds);
* :data:`Output` — dense output (record interval, snapshot ring, save area) and the step trace;
* :data:`CollideScratch` and :data:`EventLog` — the collision kernel's per-row scratch and the
  per-sample event log it appends to, whose :data:`CollisionEvents` are generated from the event
  fields' declaration :data:`COLLISION_EVENT_FIELDS`;
* the layouts of the blocks a deployment work row holds (:func:`ecs.row_layout`): the probe's state
  :data:`PROBE_STATE` (``S_V``, ``S_Q``, ``S_W``), its attitude part :data:`ATTITUDE_STATE` and a
  flight's attitude sub-step state :data:`RKMK_STATE`.
"""

from __future__ import annotations

import numpy as np

from components.contact_params import PAIR_FIELD_COUNT
from components.deploy import ProbeContact, ProbePhase, ProbeRecord
from components.probe import ProbeShape, VertexType
from components.rigid import MassProps, RigidState
from ecs import column_spec, record, row_layout
from ecs.table import ENGINE_COLUMNS

#: The probe's state, as every 13-number block of the deployment's work row holds it
#: (systems.deployment.physics.DEPLOY_ROW: Y0, Y1, YS, AUX) and its derivative (each stage K_j) in
#: the same order. Within a 3-vector the x, y, z components follow at +0, +1, +2 (the
#: quaternion's q0 … q3 at +0 … +3).
PROBE_STATE = row_layout("probe state", (
    ("X", 3, "CoM position [m], target frame"),
    ("V", 3, "CoM velocity [m/s], target frame"),
    ("Q", 4, "attitude, body -> target, scalar-first"),
    ("W", 3, "body rate ω_S/T [rad/s], body axes")))
S_X, S_V, S_Q, S_W = PROBE_STATE.offsets("X V Q W")
#: The attitude part of that state, a block starting at S_Q (what
#: :data:`systems.deployment.physics.attitude_rates` reads).
ATTITUDE_STATE = row_layout("probe attitude state", (
    ("Q", 4, "attitude, body -> target, scalar-first"), ("W", 3, "body rate [rad/s], body axes")))
(A_W,) = ATTITUDE_STATE.offsets("W")
#: A flight's attitude sub-step state (R0, R1, RS and each RK_j): the rotation vector from the
#: sub-step's start and the inertial body rate (:data:`systems.deployment.physics.rkmk_rates`); 7 slots, 6 used.
RKMK_STATE = row_layout("RKMK attitude state", (
    ("THETA", 3, "rotation vector θ from the sub-step's start [rad], body axes"),
    ("W", 3, "body rate ω_S/N [rad/s], body axes")), size=7)
(M_W,) = RKMK_STATE.offsets("W")

Probes = record("Probes", __name__, {
    "status": ENGINE_COLUMNS["row_status"], "reason": ENGINE_COLUMNS["row_reason"],
    "phase": column_spec(ProbePhase, "phase"), "time": ENGINE_COLUMNS["row_time"],
    "step": column_spec(ProbePhase, "step"), "sample": ENGINE_COLUMNS["row_sample"],
    "position": column_spec(RigidState, "position"), "velocity": column_spec(RigidState, "velocity"),
    "attitude": column_spec(RigidState, "attitude"), "omega": column_spec(RigidState, "omega"),
    "mass": column_spec(MassProps, "mass"), "inertia": column_spec(MassProps, "inertia"),
    "jinv": "inverse inertia tensor per row [rows, 3, 3] [1/(kg m^2)], body axes (kept with body_inertia)",
    "shape": column_spec(ProbeShape, "shape"),
    "pair": column_spec(ProbeContact, "terrain_pair"),
    "rolling_radius": column_spec(ProbeContact, "rolling_radius"),
    "distance": column_spec(ProbeRecord, "distance"),
    "max_penetration": column_spec(ProbeRecord, "max_penetration"),
    "rest_since": column_spec(ProbeRecord, "rest_since"),
    "first_impact": column_spec(ProbeRecord, "first_impact_time"),
    "collisions": column_spec(ProbeRecord, "collisions"),
    "bounces": column_spec(ProbeRecord, "bounces"),
    "settle_time": column_spec(ProbeRecord, "settle_time"),
    "end_time": column_spec(ProbeRecord, "end_time"),
    "latitude": column_spec(ProbeRecord, "latitude"),
    "longitude": column_spec(ProbeRecord, "longitude"),
    "slope": column_spec(ProbeRecord, "slope")},
    "The probe rows a phase kernel advances (target frame: the probe's state in the rotating target frame).")

Shapes = record("Shapes", __name__, {
    "vpos": "every shape's vertex positions [vertices, 3] [m], body axes (from the CoM)",
    "vtype": "their vertex types [vertices] (int8: corner, edge or face, for the eq 2.33 impact normal)",
    "vdir": "their vertex directions [vertices, 3], body axes (eq 2.33)",
    "shape_start": "first vertex of each shape [shapes + 1] (int64; shape s owns start[s]:start[s + 1])",
    "shape_kind": "kind of each shape [shapes] (int8: 0 a sphere, else a polyhedron)",
    "shape_radius": "bounding radius of each shape [shapes] [m] (a sphere's radius)"},
    "The probes' shapes as the phase kernels read them (components.probe.ProbeShapes, flattened).")

ContactScratch = record("ContactScratch", __name__, {
    "work": "the contact force law's work rows [rows, contact_work_size(slots)]",
    "attitude": "stage attitude per row [rows, 4] (body -> target, scalar-first)",
    "velocity": "stage CoM velocity per row [rows, 3] [m/s], target frame",
    "omega": "stage body rate per row [rows, 3] [rad/s], body axes",
    "accel": "free CoM acceleration per row [rows, 3] [m/s^2]: g + Coriolis + centrifugal + terms, target frame",
    "torque": "free torque per row [rows, 3] [N m], body axes",
    "act": "active contact slots [rows, slots] (int8)",
    "slot_vertex": "the vertex of each slot [rows, slots] (int64)",
    "points": "contact points from the CoM [rows, slots, 3] [m], body axes",
    "normals": "surface normals at the contacts [rows, slots, 3], target frame",
    "ndots": "their rates [rows, slots, 3] [1/s], target frame",
    "srad": "sphere radius per slot [rows, slots] [m] (0: a vertex)",
    "fric": "Coulomb friction coefficient per slot [rows, slots]",
    "rolling": "rolling resistance C_RR R per body axis [rows, 3] [m]",
    "out_force": "contact force per slot [rows, slots, 3] [N], target frame",
    "out_fn": "normal force per slot [rows, slots] [N]",
    "out_state": "contact state per slot [rows, slots] (int8, CONTACT_*)",
    "out_total": "total contact force (target) and torque about the CoM (body) [rows, 6]",
    "vstar": "slip regularisation speed v* [m/s]",
    "wstar": "rolling regularisation rate [rad/s]",
    "baumgarte": "constraint stabilisation rate [1/s]",
    "touch": "per-vertex scratch of the active-set choice [rows, max vertices]: which vertices touched "
             "at the step's start"},
    "Contact motion's per-row scratch: the force law's inputs and outputs "
    "(systems.probe_contact.contact_motion.contact_forces_row) and the active-set choice.")

ProbeBody = record("ProbeBody", __name__, {
    "mass": column_spec(MassProps, "mass"), "inertia": column_spec(MassProps, "inertia"),
    "jinv": "inverse inertia tensor per row [rows, 3, 3] [1/(kg m^2)], body axes",
    "vpos": "the shapes' vertex positions [vertices, 3] [m], body axes (systems.deployment.geometry)",
    "sphere_r": "this row's sphere radius [m] (0: a polyhedral probe)"},
    "What the probe's equations of motion and contact wrench read of one row's body: its mass "
    "properties (whole columns, indexed by the row) and its shape.")

Target = record("Target", __name__, {
    "ga": "the gravity field's kernel arguments (systems.deployment.physics.gravity_args)",
    "ta": "the terrain (systems.terrain.sdf.TerrainArgs, from terrain_args)",
    "ox": "target rotation rate about x [rad/s], target frame",
    "oy": "target rotation rate about y [rad/s], target frame",
    "oz": "target rotation rate about z [rad/s], target frame"},
    "The body the probes land on, as the kernels evaluate it.")

Limits = record("Limits", __name__, {
    "rtol": "relative tolerance of flight (DeploySettings.rtol)",
    "atol": "absolute tolerance of flight [m, m/s, 1, rad/s] (DeploySettings.atol)",
    "h_max": "largest flight step [s]",
    "contact_rtol": "relative tolerance of contact motion",
    "contact_atol": "absolute tolerance of contact motion",
    "contact_h_max": "largest contact-motion step [s]",
    "contact_h_min": "smallest contact-motion step [s]",
    "event_tol": "event location tolerance [s]",
    "contact_gap": "distance within which a vertex touches [m]",
    "contact_speed": "normal approach speed below which a collision starts contact motion [m/s]",
    "wstar": "rolling-resistance regularisation rate [rad/s]",
    "max_iter": "collision iterations per event (DeploySettings.max_collision_iterations)",
    "inv_lip": "1 / Lipschitz constant of the terrain's distance field",
    "max_steps": "step attempts per row and launch (DeploySettings.steps_per_launch)",
    "t_cap": "time cap of a row [s]",
    "settle_speed": "speed below which a probe is at rest [m/s]",
    "settle_rate": "rate below which a probe is at rest [rad/s]",
    "settle_hold": "rest interval that settles a probe [s]",
    "rest_slide": "slide bound of the rest certificate [m] (0: integrate the hold)",
    "escape_radius": "distance from the centre of mass beyond which a probe escapes [m] (0: none)",
    "mu": "GM of the target [m^3/s^2]"},
    "The deployment settings the phase kernels read (components.deploy.DeploySettings).")

Output = record("Output", __name__, {
    "rec_dt": "record interval [s] (0: not recording)",
    "snap": "per-row ring of dense-output snapshots [rows, slots, 16]",
    "save": "trial steps' save area [rows, n]",
    "trace": "per-step trace [rows, capacity, 16] (t, h, phase, state)",
    "trace_n": "steps traced per row [rows]"},
    "What the fly and contact kernels record besides the state: dense output and the step trace.")

CollideScratch = record("CollideScratch", __name__, {
    "touch": "touching-vertex flags per row [rows, max vertices] (int8)",
    "normal": "their impact normals per row [rows, max vertices, 3], target frame",
    "cpair": f"the contact pair row of the collision per row [rows, {PAIR_FIELD_COUNT}]",
    "sphere_vert": "a sphere's contact point per row [rows, 1, 3] [m], body axes",
    "sphere_type": "its vertex type [1] (a corner)",
    "sphere_dir": "its vertex direction [1, 3]",
    "surface_type": "vertex types of the surface impacts [max vertices] (corners: eq 2.33 takes the surface normal)",
    "ones3": "[1, 1, 1]: the rolling-resistance axis mask",
    "status": "multi-vertex resolution status per row",
    "count": "single impacts of the resolution per row"},
    "The collision kernel's per-row scratch (systems.deployment.collide.CollideProbes).")

#: Event kinds (``events/kind``).
EVENT_BOUNCE = 0         #: a collision after which the probe flies on
EVENT_CONTACT_ENTRY = 1  #: a final e = 0 collision that starts contact motion

#: Collision event fields: name -> (shape, dtype, unit, doc[, flags of a code field]).
COLLISION_EVENT_FIELDS = {
    "time": ((), np.float64, "s", "time of the collision"),
    "kind": ((), np.int8, "1", "0 bounce, 1 contact entry (final e = 0 collision)",
             {"unused": -1, "bounce": EVENT_BOUNCE, "contact_entry": EVENT_CONTACT_ENTRY}),
    "vertex": ((), np.int32, "1", "most-approaching vertex (index in the probe shape; -1 sphere)"),
    "vertex_type": ((), np.int8, "1", "VertexType of that vertex (0 corner, 1 edge, 2 face)",
                    {"unused": -1, **{t.name.lower(): int(t) for t in VertexType}}),
    "position": (3, np.float64, "m", "probe CoM, target frame"),
    "point": (3, np.float64, "m", "contact point (that vertex), target frame"),
    "normal": (3, np.float64, "1", "terrain normal at the contact point, target frame"),
    "impact_angle": ((), np.float64, "deg", "angle of the contact-point velocity above the surface plane"),
    "velocity_before": (3, np.float64, "m/s", "CoM velocity before, target frame"),
    "velocity_after": (3, np.float64, "m/s", "CoM velocity after, target frame"),
    "omega_before": (3, np.float64, "rad/s", "angular velocity relative to the target before, body axes"),
    "omega_after": (3, np.float64, "rad/s", "angular velocity relative to the target after, body axes"),
    "energy_before": ((), np.float64, "J", "kinetic energy relative to the target frame before"),
    "energy_after": ((), np.float64, "J", "kinetic energy relative to the target frame after"),
    "vertices_resolved": ((), np.int32, "1", "single-vertex impacts of the multi-vertex policy"),
}

#: The collision event fields' arrays, one field per :data:`COLLISION_EVENT_FIELDS` entry, by its name.
CollisionEvents = record("CollisionEvents", __name__, {
    name: f"``events/{name}`` [{unit}] per sample and event [samples, capacity{'' if shape == () else ', 3'}]: {doc}"
    for name, (shape, _, unit, doc, *_flags) in COLLISION_EVENT_FIELDS.items()},
    "The per-sample collision records a collision appends to, one array per event field.")

EventLog = record("EventLog", __name__, {
    "fields": "the collision event fields' arrays (:data:`CollisionEvents`)",
    "count": "events logged per sample", "overflow": "per sample: events beyond the capacity"},
    "The per-sample event log a collision appends to.")
