"""The records the rigid-body kernels take (built with :func:`ecs.record`; a kernel unpacks each
by name in its first lines):

* :data:`BodyState` — the integrated state of a body row (the columns of
  :class:`components.rigid.RigidState`, and the 3-2-1 angles when they are the attitude state);
* :data:`BodyMass` — its mass properties (:class:`components.rigid.MassProps`) and the cached
  Cholesky factor of its 6×6 mass matrix (:mod:`systems.dynamics.rigid_body`);
* :data:`StepWork` — the integrator's per-row work: the step's start, its stage derivatives, the
  step sizes and attempt counts;
* :data:`StepRule` — the method: the tableau's weights, tolerances and step limits.

:class:`systems.dynamics.integration.Integrator` builds them once per bind (their arrays live as
long as the bound system) and passes them to every launch.
"""

from __future__ import annotations

from components.rigid import MassProps, RigidState
from ecs import column_spec, record

BodyState = record("BodyState", __name__, {
    "position": column_spec(RigidState, "position"),
    "velocity": column_spec(RigidState, "velocity"),
    "attitude": column_spec(RigidState, "attitude"),
    "omega": column_spec(RigidState, "omega"),
    "euler": "3-2-1 angles (roll, pitch, yaw) [rad] per row [rows, 3], the column body_euler in the Euler "
             "attitude mode (components.rigid.EulerAttitude), else zeros",
    "euler_mode": "True: the attitude is integrated as 3-2-1 angles (seed 002 eq 1.21) and the quaternion "
                  "follows them"},
    "The integrated state of the body rows of one table (layout of systems.dynamics.rigid_body).")

BodyMass = record("BodyMass", __name__, {
    "mass": column_spec(MassProps, "mass"),
    "com": column_spec(MassProps, "com"),
    "inertia": column_spec(MassProps, "inertia"),
    "key": "the 13 numbers (m, c, I_c) the cached factor came from per row [rows, 13] (NaN: none yet)",
    "L": "Cholesky factor (lower) of the 6x6 mass matrix at the reference point per row [rows, 6, 6]"},
    "The mass properties of the body rows and their mass matrix's cached factor.")

StepWork = record("StepWork", __name__, {
    "active": "rows still stepping in this frame [rows] (bool)",
    "y0": "state at the step's start per row [rows, 16]",
    "K": "stage derivatives per row [rows, stages, 16]",
    "h": "step being taken per row [rows] [s]",
    "h_prop": "step the controller proposes next per row [rows] [s] (NaN before the first)",
    "t0": "time at the step's start per row [rows] [s]",
    "attempts": "step attempts in this frame per row [rows]",
    "g_err": "error norm of the row's group (coupled rows), -1 when a candidate is not finite [rows]"},
    "The integrator's per-row work of one table.")

StepRule = record("StepRule", __name__, {
    "b": "weights of the tableau (ecs.stepping) [stages]",
    "b_err": "b minus the embedded weights (adaptive), else b [stages]",
    "nstages": "stages of the tableau",
    "rtol": "relative tolerance of the error control",
    "atol": "absolute tolerance of the error control",
    "adaptive": "True: error-controlled steps",
    "semi_implicit": "True: Euler-Cromer (semi-implicit Euler) instead of the tableau's sum",
    "error_order": "order of the embedded solution (the controller's exponent 1/(order + 1))",
    "h_min": "smallest step before a row fails (STEP_UNDERFLOW) [s]",
    "max_steps": "step attempts per frame before a row fails (STEP_LIMIT)",
    "grouped": "True: the rows of a group (one sample's bodies) accept and size their steps together"},
    "How the integrator steps: the method and its limits.")
