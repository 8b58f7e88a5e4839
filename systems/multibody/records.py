"""The records the multibody kernels take besides :data:`components.multibody.Tree` (built with
:func:`ecs.record`; a kernel unpacks each by name in its first lines):

* :data:`Loads` — what acts on the links: applied joint forces, the joint laws' parameters, the
  accumulated link wrenches, the central gravity and the roots' frame acceleration;
* :data:`Scratch` — the per-row work arrays of a step (stage state, stage derivatives, joint forces,
  external forces, accelerations, poses and the spatial scratch of :mod:`systems.multibody.spatial`);
* :data:`Stepper` — the step and the Runge–Kutta tableau (``nstages == 0``: Kuo–Nguyen).

:class:`systems.multibody.dynamics.MultibodyDynamics` builds them once per bind (their arrays live
as long as the bound system) and passes them to every launch.
"""

from __future__ import annotations

from components.multibody import Joint, LinkWrench
from ecs import column_spec, record

Loads = record("Loads", __name__, {
    "tau": column_spec(Joint, "tau"),
    "law": "joint-law parameters per link row [rows, N_LAW + the world's joint law's], "
           "systems.multibody.kernels.LAW_COLUMNS then ecs.terms.JointLaw's",
    "force": column_spec(LinkWrench, "force"),
    "torque": column_spec(LinkWrench, "torque"),
    "mu": "GM of the central body [m^3/s^2] felt by every link (0: none)",
    "gmode": "how the links feel it: 0 full, 1 differential, 2 linearised (systems.multibody.kernels._link_forces)",
    "a0": "spatial acceleration of the inertial frame [6] (roots' parent; [0, 0, 0, -g] for uniform gravity)"},
    "What acts on the links of a tree during a step.")

Scratch = record("Scratch", __name__, {
    "y0": "state at the step's start per link row [rows, 13] (q 7 slots, qd 6)",
    "C": "Kuo-Nguyen's stage state per link row [rows, 13]",
    "K": "stage derivatives per link row [rows, stages, 13]",
    "tauw": "generalised joint forces with the joint laws per link row [rows, 6]",
    "fext": "external spatial force per link row [rows, 6] (link axes, about the link origin)",
    "qdd": "joint accelerations per link row [rows, 6]",
    "Rw": "link-to-inertial rotation per link row [rows, 3, 3]",
    "pw": "link origin relative to the tree's root per link row [rows, 3] [m]",
    "M": "matrix scratch per link row [rows, M_SLOTS, 6, 6] (systems.multibody.spatial)",
    "V": "vector scratch per link row [rows, V_SLOTS, 6] (systems.multibody.spatial)"},
    "The work arrays of one multibody step, one row per link row.")

Stepper = record("Stepper", __name__, {
    "h": "step [s]",
    "W": "the tableau's weights (ecs.stepping.Tableau.weights: the rows of A, then b, then b - b_hat)",
    "nstages": "stages of the tableau (0: the Kuo-Nguyen step instead)"},
    "The step of a multibody integration and its tableau.")
