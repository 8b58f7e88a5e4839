"""Articulated multibody trees (seed 001): links, their joints, joint state and friction — data and
validation only; the dynamics are in :mod:`systems.multibody.kernels`.

A tree is a list of **links**, one entity each. Every link is a rigid body together with the joint
that connects it to its parent link (Featherstone's numbering, *Rigid Body Dynamics Algorithms*,
2008, §4.1.2): link ``k``'s parent index ``parents[k]`` is ``-1`` for a root (jointed to the
inertial frame) or an index ``< k`` (parents before children), so any tree or forest is a parent
array. All links of a tree live in one table (one component set), in parent-first order.

Frames and conventions (the same as Pinocchio's, so that tests can build the identical model):

* **Parent frame**: the parent link's body frame (for a root: the inertial frame).
* **Joint frame**: fixed in the parent, at ``joint_offset`` (parent axes) [m], rotated by
  ``joint_rotation``, a scalar-first unit quaternion rotating joint-frame components into
  parent-frame components.
* **Body frame** (link frame): the joint frame moved by the joint. ``body_com`` is the CoM in body
  axes, ``body_inertia`` the inertia tensor about the CoM in body axes, ``body_mass`` the mass
  (:class:`components.rigid.MassProps`, the columns of any rigid body).
* Joint kinds, generalised positions ``joint_q`` (7 slots) and velocities ``joint_qd`` (6 slots);
  unused slots are zero:

  ============  ==========================================  =============================================
  kind          ``q``                                        ``qd``
  ============  ==========================================  =============================================
  ``fixed``     —                                            —
  ``revolute``  angle about ``joint_axis`` [rad]             rate [rad/s]
  ``prismatic`` displacement along ``joint_axis`` [m]        rate [m/s]
  ``spherical`` unit quaternion (w, x, y, z), body→joint     angular velocity rel. to parent, body axes
  ``free``      position of the body origin (3, joint axes)  its velocity (3, joint axes), then angular
                then unit quaternion (4, body→joint)         velocity rel. to parent (3, body axes)
  ============  ==========================================  =============================================

  ``joint_axis`` (joint axes, unit) is used by revolute and prismatic joints. A free root with the
  default identity placement therefore carries exactly a rigid body's state
  (:class:`components.rigid.RigidState`: inertial position and velocity, attitude, body rate).
* ``joint_tau``: applied generalised force (revolute: torque [N m]; prismatic: force [N];
  spherical: torque, body axes; free: force in joint axes then torque in body axes), summed by
  actuator systems.
* ``joint_locked``: a locked joint is treated as fixed at run time: its ``q`` is frozen and its
  ``qd`` set to zero at the next step (a kinematic lock: the relative motion it had is dropped, so
  locking a moving joint does not conserve momentum; an impulsive, momentum-conserving capture is
  not modelled). A system may lock and unlock joints between frames; an unlocked joint starts
  from rest relative to its parent.
* Joint laws, per joint: friction (:class:`JointFriction`), spring-damper (:class:`JointSpring`)
  and end stops (:class:`JointLimit`); the last two act on revolute and prismatic joints.
* ``link_force``/``link_torque``: external force on the link, inertial axes, with its line of action
  through the link's CoM, and external torque about the CoM, body axes (gravity, loads, contact).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from components.rigid import MassProps, validate_mass_properties
from ecs import column, column_spec, component, record
from ecs.component import ENTITY
from ecs.errors import InputError
from ecs.rules import QUATERNION_TOL, Rule, nonnegative, positive, unit_quaternion

#: Joint kind codes (``joint_kind``).
FIXED, REVOLUTE, PRISMATIC, SPHERICAL, FREE = 0, 1, 2, 3, 4
JOINT_KINDS = {"fixed": FIXED, "revolute": REVOLUTE, "prismatic": PRISMATIC, "spherical": SPHERICAL, "free": FREE}
KIND_NAMES = {v: k for k, v in JOINT_KINDS.items()}
#: Number of position coordinates (``nq``) and velocity coordinates (``nv``) per kind code.
NQ = (0, 1, 1, 4, 7)
NV = (0, 1, 1, 3, 6)
#: Slots of the ``joint_q`` and ``joint_qd`` columns.
Q_SLOTS, QD_SLOTS = 7, 6
#: The joint-law parameters, in the order of the kernels' ``law`` array (columns ``joint_<name>``).
LAW_FIELDS = ("viscous", "coulomb", "slip", "stiffness", "damping", "rest", "lower", "upper", "limit_stiffness",
              "limit_damping")
#: Allowed | |a| - 1 | of a joint axis after it was normalised by :func:`tree_spec`.
AXIS_TOL = 1e-12


def _kind_rule() -> Rule:
    return Rule(f"must be a joint kind code in {sorted(JOINT_KINDS.values())} ({JOINT_KINDS})",
                lambda v: ~np.isin(v, list(JOINT_KINDS.values())), "joint_kind")


def _unit_axis_rule() -> Rule:
    return Rule(f"must be a unit vector: | |a| - 1 | <= {AXIS_TOL:g}",
                lambda v: ~(np.abs(np.linalg.norm(v.reshape(v.shape[0], 3), axis=1) - 1.0) <= AXIS_TOL),
                "unit_axis")


@component("link")
class Link:
    """A link of an articulated tree: its parent link. Its mass properties are a rigid body's
    (:class:`components.rigid.MassProps`: ``body_mass``, ``body_com`` from the link origin in link
    axes, ``body_inertia`` about the CoM in link axes): one schema for every rigid body, so that
    the environment's row terms (:mod:`ecs.terms`) read a link as they read any body."""

    parent: int = column("1", dtype=ENTITY, doc="parent link entity (-1: jointed to the inertial frame)")


@component("link")
class LinkWrench:
    """External force and torque on a link, summed by environment systems at every stage."""

    force: np.ndarray = column("N", shape=3, frame="inertial", doc="resultant force, line of action through the CoM")
    torque: np.ndarray = column("N m", shape=3, frame="link", doc="resultant torque about the CoM, link body axes")


@component("link")
class LinkPose:
    """Where a link is: written by :class:`systems.multibody.dynamics.MultibodyDynamics` after every frame
    (and at bind time), for output and for systems that need link poses."""

    position: np.ndarray = column("m", shape=3, frame="inertial", doc="link origin")
    attitude: np.ndarray = column("1", shape=4, frame="link->inertial", default=[1.0, 0.0, 0.0, 0.0],
                                  doc="unit quaternion, scalar-first, rotating link-body into inertial components")
    com_position: np.ndarray = column("m", shape=3, frame="inertial", doc="link centre of mass")


@component("joint")
class Joint:
    """The joint connecting a link to its parent, with its state (module docstring: conventions)."""

    kind: int = column("1", dtype=np.int8, default=FIXED, doc="joint kind code (components.multibody.JOINT_KINDS)",
                       check=_kind_rule(), flags=JOINT_KINDS)
    axis: np.ndarray = column("1", shape=3, frame="joint", default=[0.0, 0.0, 1.0],
                              doc="unit axis of a revolute or prismatic joint, joint axes", check=_unit_axis_rule())
    offset: np.ndarray = column("m", shape=3, frame="parent", doc="joint-frame origin in the parent frame")
    rotation: np.ndarray = column("1", shape=4, frame="joint->parent", default=[1.0, 0.0, 0.0, 0.0],
                                  doc="unit quaternion, scalar-first, rotating joint-frame into parent-frame components",
                                  check=unit_quaternion())
    q: np.ndarray = column("1", shape=Q_SLOTS, dims=("q_slot",),
                           doc="generalised position, packed by kind: revolute rad / prismatic m in slot 0; "
                               "spherical quaternion w x y z in 0-3; free position m in 0-2 and quaternion in 3-6; "
                               "unused slots 0 (joint_angle, joint_displacement: the named views)")
    qd: np.ndarray = column("1", shape=QD_SLOTS, dims=("qd_slot",),
                            doc="generalised velocity, packed by kind: revolute rad/s / prismatic m/s in slot 0; "
                                "spherical body rate rad/s in 0-2; free velocity m/s in 0-2 and rate rad/s in 3-5; "
                                "unused slots 0 (joint_rate, joint_speed: the named views)")
    tau: np.ndarray = column("1", shape=QD_SLOTS, dims=("qd_slot",),
                             doc="applied generalised force, packed as joint_qd: N m for rotations, N for translations")
    locked: bool = column("1", dtype=np.bool_, default=False, doc="treated as fixed at run time (q frozen)")


@component("joint")
class JointFriction:
    """Regularised viscous + Coulomb friction on every velocity coordinate of a joint:
    ``tau_f = -viscous qd - coulomb tanh(qd / slip)``, which never adds energy."""

    viscous: float = column("1", default=0.0, doc="viscous coefficient (N m s/rad or N s/m)", check=nonnegative())
    coulomb: float = column("1", default=0.0, doc="Coulomb level (N m or N)", check=nonnegative())
    slip: float = column("1", default=1e-3, doc="regularisation velocity of the Coulomb term (rad/s or m/s)",
                         check=positive())


@component("joint")
class JointSpring:
    """Spring-damper of a revolute or prismatic joint (flexibility): ``tau = −k (q − rest) − c qd``."""

    stiffness: float = column("1", default=0.0, doc="k (N m/rad or N/m)", check=nonnegative())
    damping: float = column("1", default=0.0, doc="c (N m s/rad or N s/m)", check=nonnegative())
    rest: float = column("1", default=0.0, doc="rest position (rad or m)")


@component("joint")
class JointLimit:
    """End stops of a revolute or prismatic joint as a stiff penalty spring-damper, active below
    ``lower`` and above ``upper`` when ``limit_stiffness > 0``."""

    lower: float = column("1", default=0.0, doc="lower stop (rad or m)")
    upper: float = column("1", default=0.0, doc="upper stop (rad or m)")
    limit_stiffness: float = column("1", default=0.0, doc="penalty stiffness (N m/rad or N/m); 0: no stops",
                                    check=nonnegative())
    limit_damping: float = column("1", default=0.0, doc="penalty damping while past a stop", check=nonnegative())


@component("poi")
class PointOfInterest:
    """A point fixed on a link whose motion is written out after every frame (seed 001's points of
    interest and NonGravAccels: what an accelerometer or a docking target on the link sees).
    ``nongrav_acceleration`` is the acceleration minus the gravity of the whole tree at its CoM."""

    link: int = column("1", dtype=ENTITY, doc="the link entity the point is fixed on")
    offset: np.ndarray = column("m", shape=3, frame="link", doc="the point, link body axes, from the link origin")
    position: np.ndarray = column("m", shape=3, frame="inertial", doc="output: position")
    velocity: np.ndarray = column("m/s", shape=3, frame="inertial", doc="output: velocity")
    acceleration: np.ndarray = column("m/s^2", shape=3, frame="inertial", doc="output: acceleration")
    nongrav_acceleration: np.ndarray = column("m/s^2", shape=3, frame="inertial",
                                              doc="output: acceleration minus the tree's gravity at its CoM")


@component("separation")
class Separation:
    """Two points of interest and whether they are together: a capture, docking or berthing check
    written after every frame by :class:`systems.multibody.dynamics.SeparationSensor`. ``within`` at the end
    and ``first_within`` are the outcome a Monte-Carlo study of a capture counts."""

    a: int = column("1", dtype=ENTITY, doc="first point of interest (a PointOfInterest entity)")
    b: int = column("1", dtype=ENTITY, doc="second point of interest")
    reach: float = column("m", doc="distance at or below which the points count as together", check=nonnegative())
    distance: float = column("m", doc="output: distance between the two points at the frame end")
    within: int = column("1", dtype=np.int8, doc="output: 1 when distance <= reach at the frame end",
                         flags={"apart": 0, "within": 1})
    first_within: float = column("s", default=math.nan,
                                 doc="output: first frame end at which distance <= reach (NaN: never)")


@component("centre")
class TreeCentre:
    """The system centre of mass and momentum of one sample's articulated tree (or forest), written
    by :class:`systems.multibody.dynamics.MultibodyDynamics` at bind time and after every frame (seed 001:
    the system CoM its V&V compares). ``link`` names any link of the tree; the centre covers every
    link of that link's table in the sample. One centre per tree."""

    link: int = column("1", dtype=ENTITY, doc="a link of the tree (any one)")
    mass: float = column("kg", doc="output: total mass of the tree")
    position: np.ndarray = column("m", shape=3, frame="inertial", doc="output: system centre of mass")
    velocity: np.ndarray = column("m/s", shape=3, frame="inertial", doc="output: velocity of the system centre of mass")
    angular_momentum: np.ndarray = column("kg m^2/s", shape=3, frame="inertial",
                                          doc="output: angular momentum about the system centre of mass")
    kinetic_energy: float = column("J", doc="output: kinetic energy (inertial frame)")


@component("command")
class JointCommand:
    """A commanded generalised force on one joint (a motor), written into its ``joint_tau`` at the
    start of every frame and held over it (a digital command, zero-order hold):
    ``tau = scale · (bias + [series(t), series_upper(t)])``, ``series`` and ``series_upper`` being
    indices of 3-component time series in the :class:`components.loads.LoadSeries` resource
    (linear interpolation, zero outside their span; ``-1``: none) that drive slots 0-2 and 3-5."""

    joint: int = column("1", dtype=ENTITY, doc="the link entity whose joint is commanded")
    series: int = column("1", dtype=np.int64, default=-1, doc="LoadSeries index driving joint_tau slots 0-2")
    series_upper: int = column("1", dtype=np.int64, default=-1, doc="LoadSeries index driving joint_tau slots 3-5")
    scale: float = column("1", default=1.0, doc="multiplies the whole command")
    bias: np.ndarray = column("1", shape=QD_SLOTS, doc="constant part of the command (units by joint kind)")


#: The model and state of the links a multibody kernel steps, as one argument (``tree``): the
#: kernels of :mod:`systems.multibody` unpack it by name. Built from a link table by ``Tree.of(table)``.
Tree = record("Tree", __name__, {
    "parent": column_spec(Link, "parent"), "kind": column_spec(Joint, "kind"), "axis": column_spec(Joint, "axis"),
    "offset": column_spec(Joint, "offset"), "rotation": column_spec(Joint, "rotation"),
    "q": column_spec(Joint, "q"), "qd": column_spec(Joint, "qd"), "locked": column_spec(Joint, "locked"),
    "mass": column_spec(MassProps, "mass"), "com": column_spec(MassProps, "com"),
    "inertia": column_spec(MassProps, "inertia")},
    "The links of articulated trees, parent-first (rows b .. b + n - 1 are one tree): joint model, joint "
    "state and mass properties, one array per column.")


#: Where the links are, as written after each frame: one argument (``poses``) of the kernels.
Poses = record("Poses", __name__, {"position": column_spec(LinkPose, "position"),
                                   "attitude": column_spec(LinkPose, "attitude"),
                                   "com_position": column_spec(LinkPose, "com_position")},
               "The link poses a multibody step writes for output.")


# ------------------------------------------------------------------------------ tree description
@dataclass(frozen=True)
class TreeSpec:
    """A validated articulated tree (or forest) as per-link arrays, parents before children.

    Attributes (``n`` links): parents [n] int64; kind [n] int8; axis [n, 3]; offset [n, 3];
    rotation [n, 4]; mass [n]; com [n, 3]; inertia [n, 3, 3]; q [n, 7]; qd [n, 6]; locked [n] bool;
    viscous, coulomb, slip [n] (joint friction); stiffness, damping, rest [n] (joint springs);
    lower, upper, limit_stiffness, limit_damping [n] (end stops).
    """

    parents: np.ndarray
    kind: np.ndarray
    axis: np.ndarray
    offset: np.ndarray
    rotation: np.ndarray
    mass: np.ndarray
    com: np.ndarray
    inertia: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    locked: np.ndarray
    viscous: np.ndarray
    coulomb: np.ndarray
    slip: np.ndarray
    stiffness: np.ndarray
    damping: np.ndarray
    rest: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    limit_stiffness: np.ndarray
    limit_damping: np.ndarray

    @property
    def n(self) -> int:
        return len(self.parents)

    @property
    def law(self) -> np.ndarray:
        """The joint-law parameters [n, len(LAW_FIELDS)] (friction, springs, end stops)."""
        return np.stack([getattr(self, f) for f in LAW_FIELDS], axis=1)

    @property
    def nv(self) -> np.ndarray:
        """Velocity coordinates per link (0 for fixed joints; locked joints keep theirs)."""
        return np.array([NV[k] for k in self.kind], np.int64)

    def record(self, q=None, qd=None) -> Tree:
        """This tree as the kernels' :data:`Tree` record, with joint state ``q``, ``qd`` (default its own)."""
        return Tree(self.parents, self.kind, self.axis, self.offset, self.rotation, self.q if q is None else q,
                    self.qd if qd is None else qd, self.locked, self.mass, self.com, self.inertia)

    def components(self, k: int, parent_entity: int = -1) -> tuple:
        """Components of link ``k`` for ``world.spawn``; ``parent_entity``: its parent's entity id."""
        return (Link(parent=int(parent_entity)),
                MassProps(mass=float(self.mass[k]), com=self.com[k].copy(), inertia=self.inertia[k].copy()),
                LinkWrench(),
                LinkPose(),
                Joint(kind=int(self.kind[k]), axis=self.axis[k].copy(), offset=self.offset[k].copy(),
                      rotation=self.rotation[k].copy(), q=self.q[k].copy(), qd=self.qd[k].copy(),
                      locked=bool(self.locked[k])),
                JointFriction(viscous=float(self.viscous[k]), coulomb=float(self.coulomb[k]),
                              slip=float(self.slip[k])),
                JointSpring(stiffness=float(self.stiffness[k]), damping=float(self.damping[k]),
                            rest=float(self.rest[k])),
                JointLimit(lower=float(self.lower[k]), upper=float(self.upper[k]),
                           limit_stiffness=float(self.limit_stiffness[k]), limit_damping=float(self.limit_damping[k])))


def _vectors(value, n: int, width: int, field: str, default) -> np.ndarray:
    if value is None:
        return np.tile(np.asarray(default, float), (n, 1))
    try:
        a = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise InputError(field, value, f"must be {n} vectors of {width} numbers") from None
    if a.shape == (width,):
        a = np.tile(a, (n, 1))
    if a.shape != (n, width):
        raise InputError(field, np.asarray(value).tolist(), f"must have shape ({n}, {width}), one row per link")
    bad = np.flatnonzero(~np.all(np.isfinite(a), axis=1))
    if bad.size:
        raise InputError(f"{field}[{bad[0]}]", a[bad[0]].tolist(), "must be finite (no NaN or inf)")
    return a


def _scalars(value, n: int, field: str, default, *, rule: str, ok) -> np.ndarray:
    a = np.full(n, float(default)) if value is None else np.array(value, dtype=float)
    if a.shape == ():
        a = np.full(n, float(a))
    if a.shape != (n,):
        raise InputError(field, np.asarray(value).tolist(), f"must have {n} values, one per link")
    for k in range(n):
        if not (math.isfinite(a[k]) and ok(a[k])):
            raise InputError(f"{field}[{k}]", float(a[k]), rule)
    return a


def tree_spec(*, parents, kinds, mass, inertia, com=None, axis=None, offset=None, rotation=None, q=None, qd=None,
              locked=None, viscous=None, coulomb=None, slip=None, stiffness=None, damping=None, rest=None,
              lower=None, upper=None, limit_stiffness=None, limit_damping=None, field: str = "tree") -> TreeSpec:
    """Validate an articulated tree given as per-link arrays (module docstring: conventions).

    Args:
        parents: parent index per link, ``-1`` for a root, otherwise ``< k`` (parents first).
        kinds: joint kind per link: a name of :data:`JOINT_KINDS` or its code.
        mass: [n] kg, > 0. inertia: [n, 3, 3] (or [n, 3] principal moments) kg m², about the CoM,
            body axes, symmetric positive definite and obeying the triangle inequality.
        com: [n, 3] CoM in body axes [m] (default 0).
        axis: [n, 3] joint axes (joint frame), non-zero; normalised here (default z).
        offset: [n, 3] joint-frame origins in the parent frame [m] (default 0).
        rotation: [n, 4] unit quaternions joint→parent, scalar-first (default identity).
        q, qd: [n, 7] and [n, 6] joint states (default: zero, identity quaternions); the quaternion
            slots of spherical and free joints must be unit to 1e-6 and are normalised here.
        locked: [n] bool (default False).
        viscous, coulomb, slip: [n] joint friction (defaults 0, 0, 1e-3).
        stiffness, damping, rest: [n] joint spring-dampers (default 0: none).
        lower, upper, limit_stiffness, limit_damping: [n] end stops (default stiffness 0: none).
        Springs and stops act on revolute and prismatic joints only.
        field: name used in error messages.

    Raises:
        InputError: naming the field, the link, the value and the broken rule.
    """
    try:
        par = np.array(parents, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{field}.parents", parents, "must be a list of integer parent indices") from None
    if par.ndim != 1 or par.size == 0:
        raise InputError(f"{field}.parents", np.asarray(parents).tolist(), "must be a non-empty 1-D list of indices")
    n = par.size
    for k in range(n):
        p = par[k]
        if not (math.isfinite(p) and p == int(p)):
            raise InputError(f"{field}.parents[{k}]", p, "must be an integer")
        if not (-1 <= p < k):
            raise InputError(f"{field}.parents[{k}]", int(p),
                             f"must be -1 (root) or the index of an earlier link (0 <= parent < {k}): parents before children")
    par = par.astype(np.int64)
    kl = list(kinds) if not isinstance(kinds, str) else [kinds] * n
    if len(kl) != n:
        raise InputError(f"{field}.kinds", kl, f"must have {n} entries, one per link")
    kind = np.zeros(n, np.int8)
    for k, v in enumerate(kl):
        if isinstance(v, str):
            if v not in JOINT_KINDS:
                raise InputError(f"{field}.kinds[{k}]", v, f"must be one of {sorted(JOINT_KINDS)}")
            kind[k] = JOINT_KINDS[v]
        elif isinstance(v, (int, np.integer)) and int(v) in KIND_NAMES:
            kind[k] = int(v)
        else:
            raise InputError(f"{field}.kinds[{k}]", v, f"must be one of {sorted(JOINT_KINDS)} or its code")
    m = _scalars(mass, n, f"{field}.mass", 1.0, rule="must be a finite number > 0 [kg]", ok=lambda x: x > 0)
    inert = np.array(inertia, dtype=float) if inertia is not None else np.tile(np.eye(3), (n, 1, 1))
    if inert.shape == (n, 3):
        inert = np.array([np.diag(r) for r in inert])
    if inert.shape != (n, 3, 3):
        raise InputError(f"{field}.inertia", np.asarray(inertia).tolist(), f"must have shape ({n}, 3, 3) or ({n}, 3)")
    for k in range(n):
        _, inert[k] = validate_mass_properties(m[k], inert[k], field=f"{field}.link[{k}]")
    c = _vectors(com, n, 3, f"{field}.com", (0.0, 0.0, 0.0))
    ax = _vectors(axis, n, 3, f"{field}.axis", (0.0, 0.0, 1.0))
    for k in range(n):
        na = float(np.linalg.norm(ax[k]))
        if kind[k] in (REVOLUTE, PRISMATIC) and not na > 1e-12:
            raise InputError(f"{field}.axis[{k}]", ax[k].tolist(),
                             f"must be a non-zero vector (the axis of {KIND_NAMES[int(kind[k])]} joint {k})")
        ax[k] = ax[k] / na if na > 1e-12 else np.array([0.0, 0.0, 1.0])
    off = _vectors(offset, n, 3, f"{field}.offset", (0.0, 0.0, 0.0))
    rot = _vectors(rotation, n, 4, f"{field}.rotation", (1.0, 0.0, 0.0, 0.0))
    for k in range(n):
        rot[k] = _unit(rot[k], f"{field}.rotation[{k}]")
    qq = np.zeros((n, Q_SLOTS))
    qq[kind == SPHERICAL, 0] = 1.0
    qq[kind == FREE, 3] = 1.0
    if q is not None:
        qq = _vectors(q, n, Q_SLOTS, f"{field}.q", None)
    vv = _vectors(qd, n, QD_SLOTS, f"{field}.qd", (0.0,) * QD_SLOTS)
    bad = joint_state_error(kind, qq, vv)
    if bad is not None:
        k, what, value, rule = bad
        raise InputError(f"{field}.{what}[{k}]", value, rule)
    for k in range(n):
        o = {SPHERICAL: 0, FREE: 3}.get(int(kind[k]))
        if o is not None:
            qq[k, o:o + 4] /= np.linalg.norm(qq[k, o:o + 4])
    lk = np.zeros(n, np.bool_) if locked is None else np.array(locked, dtype=np.bool_)
    if lk.shape == ():
        lk = np.full(n, bool(lk))
    if lk.shape != (n,):
        raise InputError(f"{field}.locked", np.asarray(locked).tolist(), f"must have {n} flags, one per link")
    vis = _scalars(viscous, n, f"{field}.viscous", 0.0, rule="must be a finite number >= 0", ok=lambda x: x >= 0)
    cou = _scalars(coulomb, n, f"{field}.coulomb", 0.0, rule="must be a finite number >= 0", ok=lambda x: x >= 0)
    sl = _scalars(slip, n, f"{field}.slip", 1e-3, rule="must be a finite number > 0", ok=lambda x: x > 0)
    nonneg = dict(rule="must be a finite number >= 0", ok=lambda x: x >= 0)
    anyv = dict(rule="must be a finite number", ok=lambda x: True)
    law = {name: _scalars(v, n, f"{field}.{name}", 0.0, **rule) for name, v, rule in (
        ("stiffness", stiffness, nonneg), ("damping", damping, nonneg), ("rest", rest, anyv),
        ("lower", lower, anyv), ("upper", upper, anyv), ("limit_stiffness", limit_stiffness, nonneg),
        ("limit_damping", limit_damping, nonneg))}
    for k in range(n):
        one_dof = int(kind[k]) in (REVOLUTE, PRISMATIC)
        for name in ("stiffness", "damping", "limit_stiffness"):
            if law[name][k] != 0.0 and not one_dof:
                raise InputError(f"{field}.{name}[{k}]", float(law[name][k]),
                                 f"must be 0 for a {KIND_NAMES[int(kind[k])]} joint (springs and stops act on "
                                 f"revolute and prismatic joints)")
        if law["limit_stiffness"][k] > 0.0 and not law["lower"][k] <= law["upper"][k]:
            raise InputError(f"{field}.lower[{k}]", float(law["lower"][k]),
                             f"must be <= upper = {law['upper'][k]!r} when the end stops are on")
    return TreeSpec(parents=par, kind=kind, axis=ax, offset=off, rotation=rot, mass=m, com=c, inertia=inert,
                    q=qq, qd=vv, locked=lk, viscous=vis, coulomb=cou, slip=sl, **law)


def joint_state_error(kind, q, qd):
    """The first joint whose state breaks a rule of its kind, as ``(row, "q" or "qd", value, rule)``,
    or ``None``. Rules: the quaternion slots of a spherical joint (q[0:4]) and of a free joint
    (q[3:7]) are unit to :data:`ecs.rules.QUATERNION_TOL`; the slots beyond a kind's ``nq``/``nv``
    are zero. Vectorised over rows ``kind [n]``, ``q [n, 7]``, ``qd [n, 6]`` (used by
    :func:`tree_spec` and, for dispersed or hand-built states, by the multibody system)."""
    kind = np.asarray(kind)
    q = np.asarray(q, float).reshape(-1, Q_SLOTS)
    qd = np.asarray(qd, float).reshape(-1, QD_SLOTS)
    nq = np.asarray(NQ)[kind]
    nv = np.asarray(NV)[kind]
    bad_q = np.zeros(len(kind), bool)
    for kk, o in ((SPHERICAL, 0), (FREE, 3)):
        sel = kind == kk
        bad_q |= sel & ~(np.abs(np.linalg.norm(q[:, o:o + 4], axis=1) - 1.0) <= QUATERNION_TOL)
    slots_q = (q != 0.0) & (np.arange(Q_SLOTS)[None, :] >= nq[:, None])
    slots_v = (qd != 0.0) & (np.arange(QD_SLOTS)[None, :] >= nv[:, None])
    for k in range(len(kind)):
        name = KIND_NAMES[int(kind[k])]
        if bad_q[k]:
            where = "q[0:4]" if kind[k] == SPHERICAL else "q[3:7]"
            return (k, "q", q[k].tolist(), f"{where} of a {name} joint must be a unit quaternion (w, x, y, z): "
                                           f"| |q| - 1 | <= {QUATERNION_TOL:g}")
        if slots_q[k].any():
            return (k, "q", q[k].tolist(), f"slots {nq[k]}..6 must be 0 (a {name} joint has {nq[k]} position coordinates)")
        if slots_v[k].any():
            return (k, "qd", qd[k].tolist(),
                    f"slots {nv[k]}..5 must be 0 (a {name} joint has {nv[k]} velocity coordinates)")
    return None


def _unit(qv: np.ndarray, field: str) -> np.ndarray:
    nrm = float(np.linalg.norm(qv))
    if not abs(nrm - 1.0) <= QUATERNION_TOL:
        raise InputError(field, qv.tolist(), f"must be a unit quaternion (w, x, y, z): | |q| - 1 | <= {QUATERNION_TOL:g}")
    return qv / nrm


@dataclass
class JointNames:
    """World resource: the name of each link's joint (entity id → name), which the store uses to
    write the joints by name: ``joint_angle`` [rad] and ``joint_rate`` [rad/s] over the dimension
    ``joint`` (revolute joints), ``joint_displacement`` [m] and ``joint_speed`` [m/s] over
    ``prismatic_joint``, each a :class:`ecs.store.ColumnView` of the packed ``joint_q``/``joint_qd``
    columns (which stay as the solver keeps them, slot by kind: module docstring). So
    ``final.joint_angle.sel(joint="elbow_pitch")`` is one joint's angle in every sample.
    :func:`spawn_tree` fills it (a link's joint is named after the link unless told otherwise)."""

    names: dict

    #: (kinds, view name, column, units, long name, dimension)
    VIEWS = (((REVOLUTE,), "joint_angle", "joint_q", "rad", "joint angle (revolute joints, about joint_axis)", "joint"),
             ((REVOLUTE,), "joint_rate", "joint_qd", "rad/s", "joint rate (revolute joints)", "joint"),
             ((PRISMATIC,), "joint_displacement", "joint_q", "m", "joint displacement (prismatic joints, along "
                                                                   "joint_axis)", "prismatic_joint"),
             ((PRISMATIC,), "joint_speed", "joint_qd", "m/s", "joint speed (prismatic joints)", "prismatic_joint"))

    def store_views(self, world) -> list:
        from ecs.kernels import to_host
        from ecs.store import ColumnView

        views = []
        tables = world.tables_with("joint_kind", "joint_q", "joint_qd")
        for k, t in enumerate(tables):
            ents = [int(e) for e in t.entities]
            kind = to_host(t["joint_kind"])[:len(ents)]     # a device column on the GPU backend
            tag = f"_{k}" if len(tables) > 1 else ""     # trees in several tables: one set of views each
            for kinds, vname, col, units, doc, dim in self.VIEWS:
                sel = [e for e, kd in zip(ents, kind) if int(kd) in kinds and e in self.names]
                if sel:
                    views.append(ColumnView(vname + tag, col, tuple(sel), 0, dim + tag,
                                            tuple(self.names[e] for e in sel), units, doc))
        return views


def spawn_tree(world, spec: TreeSpec, *, name: str = "tree", names=None, joint_names=None, extra=None) -> list[int]:
    """Spawn the links of ``spec`` into ``world`` in parent-first order; returns their entity ids.
    Link ``k`` is named ``names[k]`` (default ``f"{name}.link{k}"``), its joint ``joint_names[k]``
    (default: the link's name; ``None`` entries too), recorded in the world's :class:`JointNames`
    so the store writes joint angles by joint name, and also gets the components ``extra(k)``
    returns (e.g. a :class:`components.environment.Cannonball` per link)."""
    if joint_names is not None and len(joint_names) != spec.n:
        raise InputError("spawn_tree.joint_names", list(joint_names), f"must have {spec.n} entries, one per link")
    ents: list[int] = []
    jn = world.resource(JointNames, None) or world.add_resource(JointNames({}))
    taken = set(jn.names.values())
    for k in range(spec.n):
        p = int(spec.parents[k])
        more = tuple(extra(k)) if extra is not None else ()
        link = names[k] if names is not None else f"{name}.link{k}"
        ents.append(world.spawn(*spec.components(k, ents[p] if p >= 0 else -1), *more, name=link))
        joint = joint_names[k] if joint_names is not None and joint_names[k] is not None else link
        if joint in taken:
            raise InputError(f"spawn_tree.joint_names[{k}]", joint, "must be a joint name not used before in this world")
        taken.add(joint)
        jn.names[ents[-1]] = str(joint)
    return ents
