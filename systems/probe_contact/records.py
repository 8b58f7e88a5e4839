"""The records the probe-contact kernels take (built with :func:`ecs.record`; a kernel reads each by
name):

* :data:`ContactSet` — the contact force law's per-row inputs and outputs
  (:data:`systems.probe_contact.contact_motion.contact_forces_row`).
"""

from __future__ import annotations

from ecs import record

#: The contact force kernel's per-row inputs and outputs
#: (:data:`systems.probe_contact.contact_motion.contact_forces_row`), read by name:
#: any record with these fields serves (the deployment's ``ContactScratch`` adds its own).
ContactSet = record("ContactSet", __name__, {
    "work": "[n, contact_work_size(K)] scratch",
    "attitude": "[n, 4] attitude (body -> the surface's frame, scalar-first)",
    "velocity": "[n, 3] CoM velocity [m/s], surface frame",
    "omega": "[n, 3] body rate [rad/s], body axes",
    "accel": "[n, 3] free CoM acceleration g + C [m/s^2], surface frame",
    "torque": "[n, 3] external torque about the CoM [N m], body axes",
    "act": "[n, K] int8: contact k touches",
    "points": "[n, K, 3] contact points from the CoM [m], body axes",
    "normals": "[n, K, 3] unit surface normals, surface frame",
    "ndots": "[n, K, 3] their rates [1/s], surface frame",
    "srad": "[n, K] 0 for a body vertex, rho for the contact point of a sphere of radius rho [m]",
    "fric": "[n, K] Coulomb friction f per contact",
    "rolling": "[n, 3] C_RR,k R per body axis [m]",
    "vstar": "slip regularisation speed v* [m/s]",
    "wstar": "rolling regularisation rate [rad/s]",
    "baumgarte": "constraint stabilisation rate [1/s] (0: eq 2.92 as printed)",
    "out_force": "[n, K, 3] contact force per contact [N], surface frame",
    "out_fn": "[n, K] normal force [N]",
    "out_state": "[n, K] int8 CONTACT_*",
    "out_total": "[n, 6] total force incl. rolling [N] (surface frame) and torque about the CoM [N m] (body)"},
    "The contact force law's inputs and outputs per body row (systems.probe_contact.contact_motion).")
