"""Articulated trees as a system: :class:`MultibodyDynamics` integrates every link table's joint
states, one tree (or forest) per sample, with the O(n) articulated-body algorithm of
:mod:`systems.multibody.kernels`.

Environment (seed 001, "the JEOD model applies gravitation and environmental effects on each body
as if it was independent"), evaluated at every stage from each link's own pose, velocity and the
stage time:

* the **central field**: when the world holds a :class:`components.gravity.PointMass` resource,
  every link feels that point mass's gravity at its own CoM and its own gravity-gradient torque
  (MBGravityTorque), in the solve itself (so that the differential and linearised modes can split
  it without cancellation);
* the world's **row terms** (:mod:`ecs.terms`): every DERIVATIVE system with a
  :meth:`ecs.System.term` — :class:`systems.gravity.fields.GravitySystem` (any source: spherical
  harmonics in the turning Earth frame, ...), :class:`systems.gravity.third_body.ThirdBodyGravity`,
  :class:`systems.forces.drag.AtmosphericDrag`, :class:`systems.forces.solar_pressure.SolarRadiationPressure`
  (on links with a :class:`components.environment.Cannonball`), user terms — fused into the solve's
  right-hand side. A GravitySystem whose source is the world's PointMass resource is that central
  field (it acts on the world's rigid bodies; the links get it in the solve); one with another
  source beside a PointMass resource is refused (two central fields), except a spherical-harmonic
  model without its monopole (``SphericalHarmonics.perturbation()``): the field beyond the point
  mass, which the differential and linearised modes then split off the exact central field;
* the accumulators ``link_force``/``link_torque``, read as they stand at the start of the frame
  (held over its sub-steps): a load written by a SCHEDULED system before this one;
* the world's **sample term** (:class:`ecs.terms.SampleTerm`), a force that couples the links of a
  sample: :class:`systems.facets.contact.FacetContact` with its facets on links (contact between
  the trees of a sample, a free-flyer caught by an arm: ``scenes/capture.py``), evaluated once per
  sample at every stage after the row terms. One per world, on one link table.

A DERIVATIVE system with only a ``process`` acts on the bodies an
:class:`systems.dynamics.integration.Integrator` steps, never on links; without an Integrator in the world
it is refused (:func:`ecs.system.check_derivatives`).

Gravity ``"full"``, ``"differential"`` (seed 001, "Numerical considerations — scale": the
multibody solve sees only each link's gravity minus the system's, the system's is added to the free
root; :func:`systems.multibody.kernels._link_forces` evaluates the difference without cancellation)
or ``"linearized"`` (seed 001, "Simplifying assumptions": the difference from the gravity gradient
at the system CoM).

Joint forces: ``joint_tau`` (written by :class:`JointCommands` from :class:`components.multibody.JointCommand`
series, or by any user controller system, once per frame), friction, spring-dampers and end stops
(:class:`components.multibody.JointFriction`, ``JointSpring``, ``JointLimit``) evaluated at every stage,
then the world's **joint law** (:class:`ecs.terms.JointLaw`, from a DERIVATIVE system's ``joint_law``:
a motor, a servo, a nonlinear spring; one per world, ``scenes/examples/joint_servo.py``), also at
every stage, its parameters read from its own columns on every link.

Stepping: an explicit fixed-step tableau of :mod:`ecs.stepping` (``"rk4"`` default, ``"euler"``),
compensated state update (``rk_step``), or the Kuo–Nguyen scheme of seed 001 (``"kuo_nguyen"``);
``substeps`` steps per frame. Joints with ``joint_locked`` set keep their position (their rate is
zeroed: a kinematic lock). A sample whose state turns non-finite is set FAILED
(:class:`ecs.status.Reason` NONFINITE_STATE) with its last good state; the others go on.
After every frame (and at bind) the :class:`components.multibody.LinkPose` columns hold each link's
origin, attitude and CoM in the inertial frame, and every :class:`components.multibody.PointOfInterest`
its position, velocity, acceleration and non-gravitational acceleration (acceleration minus the
tree's gravity at its CoM; seed 001's NonGravAccels), from one more evaluation of the dynamics at
the frame-end state.

Backends: the CPU driver runs one sample per thread (``prange``); ``backend="gpu"`` runs the same
row function (:data:`systems.multibody.kernels.advance_sample`) as a CUDA kernel, one thread per
sample, through :func:`ecs.kernels.launch_rows` (checked under numba's CUDA simulator:
tests/test_multibody_gpu_sim.py; not yet on a device).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from components.gravity import PointMass
from ecs.terms import (FusedTerms, fuse_terms, joint_law_none, no_terms_args, refuse_modal, sample_terms_none,
                       specialise)
from components.loads import LoadSeries
from components.multibody import FIXED, FREE, QD_SLOTS, Poses, Tree, TreeSpec, joint_state_error, tree_spec
from ecs import InputError, Phase, System
from ecs.kernels import SampleDriver, array_module, cpu_parallel, dual, kernel_tuple, launch_rows, to_host
from ecs.stepping import TABLEAUX
from systems.dynamics.loads import series_value
from systems.multibody.spatial import new_scratch
from systems.multibody.algorithms import tree_centre, tree_centres
from systems.multibody.records import Loads, Scratch, Stepper
from systems.multibody.kernels import (ACC_WIDTH, LAW_COLUMNS, STATE, advance_sample, advance_samples,
                                       link_motion_sample, link_motion_samples, link_poses, poi_row, poi_rows)
from ecs.attitude import dcm_to_quat, quat_to_dcm

JOINT_COLUMNS = ("joint_kind", "joint_axis", "joint_offset", "joint_rotation", "joint_q", "joint_qd", "joint_tau",
                 "joint_locked") + LAW_COLUMNS
LINK_COLUMNS = ("body_mass", "body_com", "body_inertia", "link_parent", "link_force", "link_torque")
POSE_COLUMNS = ("link_position", "link_attitude", "link_com_position")
POI_COLUMNS = ("poi_link", "poi_offset", "poi_position", "poi_velocity", "poi_acceleration", "poi_nongrav_acceleration")
CENTRE_COLUMNS = ("centre_link", "centre_mass", "centre_position", "centre_velocity", "centre_angular_momentum",
                  "centre_kinetic_energy")
#: The Kuo–Nguyen integrator's method name (seed 001; :func:`systems.multibody.kernels._kuo_nguyen_step`).
KUO_NGUYEN = "kuo_nguyen"
#: Gravity modes of the multibody solve (``gmode`` of the kernels).
GRAVITY_MODES = {"full": 0, "differential": 1, "linearized": 2}


class _Work:
    """Per-table scratch of the system (numpy, or cupy on the GPU backend)."""

    def __init__(self, table, stages, xp, law_columns=LAW_COLUMNS):
        n = table.row_count
        self.table = table
        self.E = table.entity_count
        self.M, self.V = (xp.asarray(a) for a in new_scratch(n))
        self.y0, self.C = xp.zeros((n, STATE)), xp.zeros((n, STATE))
        K = np.zeros((n, stages, STATE))
        K[:, 1, :] = np.nan                     # Kuo–Nguyen: no previous acceleration yet
        self.K = xp.asarray(K)
        self.tauw, self.fext, self.qdd = xp.zeros((n, QD_SLOTS)), xp.zeros((n, 6)), xp.zeros((n, 6))
        self.Rw, self.pw = xp.zeros((n, 3, 3)), xp.zeros((n, 3))
        self.law_columns = tuple(law_columns)  # the built-in laws' columns, then the joint law's
        self.law = xp.zeros((n, len(self.law_columns)))
        self.ACC = None                         # per-link motion for points of interest (if any)
        self.tt = None                          # the row terms' argument (columns, arrays, parameters)
        self.env = xp.zeros((n, 6))             # row terms held between updates (environment_every > 1)
        self.points: list = []
        self.centres: list = []

    def refresh_law(self) -> None:
        """Joint-law parameters from their columns (another system may have changed them)."""
        for j, c in enumerate(self.law_columns):
            self.law[:, j] = self.table[c]


class MultibodyDynamics(System):
    """Integrate every articulated-tree table (module docstring).

    Args:
        method: a fixed-step tableau of :data:`ecs.stepping.TABLEAUX` (``"rk4"``, ``"euler"``) or
            ``"kuo_nguyen"`` (seed 001: third-order Taylor step for the free root's orbit with the
            jerk from a backward difference, Euler–Cromer for every other DOF).
        substeps: RK steps per frame (step = frame length / substeps).
        gravity: ``"full"`` (each link's gravity enters the multibody solve) or ``"differential"``
            (seed 001: only ``g_n − g(x_s)`` enters it, x_s the system CoM, and ``g(x_s)`` is added
            to the free root's acceleration afterwards: the same motion, without the round-off of
            solving for joint accelerations ~1e-6 of the gravity they are computed next to), or
            ``"linearized"`` (seed 001: as differential with ``g_n − g(x_s) ≈ Γ(x_s) d_n``, the
            gravity gradient at the system CoM times the link's offset, and each link's gradient
            torque from Γ(x_s): one gravity evaluation per tree).
        environment_every: seed 001's reduced environment update rate: the row terms (gravity
            sources, third bodies, drag, SRP, user terms) are evaluated at the first stage of every
            ``environment_every``-th step of the run and held, per link, until the next; the central
            point mass and the joint laws stay exact at every stage. 1 (default): every stage. The
            hold is a first-order error in the step count (tests/test_multibody_orbit.py measures it).
    """

    phase = Phase.SCHEDULED
    derivative_pipeline = "terms"       # the world's row terms act on every link, at every stage
    takes_sample_terms = True           # and its sample term (facet contact between links), per sample
    takes_joint_laws = True             # and its joint law (ecs.terms.JointLaw), per joint and stage
    reads = JOINT_COLUMNS + LINK_COLUMNS + POI_COLUMNS[:2] + CENTRE_COLUMNS[:1]
    # not row_time: the rigid-body Integrator writes it (one writer per column and phase), and a
    # world may hold both rigid bodies and trees; a link table's rows all stand at the frame end
    writes = ("joint_q", "joint_qd") + POSE_COLUMNS + POI_COLUMNS[2:] + CENTRE_COLUMNS[1:]

    def __init__(self, method: str = "rk4", *, substeps: int = 1, gravity: str = "full", environment_every: int = 1):
        m = str(method).lower()
        fixed = sorted(k for k, t in TABLEAUX.items() if t.b_err is None and k != "semi_implicit_euler")
        if m not in fixed + [KUO_NGUYEN]:
            raise InputError("MultibodyDynamics.method", method,
                             f"must be {KUO_NGUYEN!r} or one of the fixed-step tableaux {fixed}")
        if not (isinstance(substeps, (int, np.integer)) and substeps >= 1):
            raise InputError("MultibodyDynamics.substeps", substeps, "must be a whole number >= 1")
        if not (isinstance(environment_every, (int, np.integer)) and environment_every >= 1):
            raise InputError("MultibodyDynamics.environment_every", environment_every, "must be a whole number >= 1")
        self.every = int(environment_every)
        if gravity not in GRAVITY_MODES:
            raise InputError("MultibodyDynamics.gravity", gravity, f"must be one of {sorted(GRAVITY_MODES)}")
        self.method, self.substeps = m, int(substeps)
        self.tableau = TABLEAUX["euler"] if m == KUO_NGUYEN else TABLEAUX[m]   # KN: A, B unused
        self.nstages = 0 if m == KUO_NGUYEN else self.tableau.stages
        self.gravity, self.gmode = gravity, GRAVITY_MODES[gravity]
        self.work: list[_Work] = []

    def check_inputs(self, world, overrides: dict, start: int, count: int) -> None:
        """Refuse dispersed joint states that break their kind's rules (unit quaternions, unused
        slots zero: :func:`components.multibody.joint_state_error`), naming link and sample."""
        for t in world.tables_with(*JOINT_COLUMNS):
            E = t.entity_count
            kind = t["joint_kind"].reshape(-1, E)[0]
            q0, qd0 = t["joint_q"].reshape(-1, E, 7)[0], t["joint_qd"].reshape(-1, E, QD_SLOTS)[0]
            for j, e in enumerate(t.entities.tolist()):
                if (e, "joint_q") not in overrides and (e, "joint_qd") not in overrides:
                    continue
                q = np.asarray(overrides.get((e, "joint_q"), np.broadcast_to(q0[j], (count, 7))), float)
                qd = np.asarray(overrides.get((e, "joint_qd"), np.broadcast_to(qd0[j], (count, QD_SLOTS))), float)
                bad = joint_state_error(np.full(count, kind[j]), q.reshape(count, 7), qd.reshape(count, QD_SLOTS))
                if bad is not None:
                    k, what, value, rule = bad
                    raise InputError(f"joint_{what} of {world.name_of(e)} (sample {start + k})", value, rule)

    def bind(self, world) -> None:
        self.mu = 0.0
        src = world.resource(PointMass, None)
        if src is not None:
            if np.any(src.center_of_mass != 0.0):
                raise InputError("PointMass.center", src.center_of_mass.tolist(),
                                 "must be the inertial origin for MultibodyDynamics")
            self.mu = float(src.mu)
        self._bind_terms(world, src)
        self.work = []
        tables = world.tables_with(*JOINT_COLUMNS, *LINK_COLUMNS, *POSE_COLUMNS)
        if self._sample is not None and len(tables) > 1:
            raise InputError(f"{self._sample.name} (a sample term)", f"{len(tables)} link tables",
                             "needs every link in one table: its kernels are linked once and act on one table "
                             "(give every link the same components)")
        for t in tables:
            E = t.entity_count
            parent = to_host(t["link_parent"]).reshape(t.samples, E)
            local = parent - (np.arange(t.samples) * E)[:, None]
            k = np.arange(E)[None, :]
            bad = (parent >= 0) & ~((local >= 0) & (local < k))
            refs = t.entities_ref.get("link_parent")
            if (parent >= 0).any() and not np.array_equal(refs, t.entities):
                raise InputError("link_parent", [world.name_of(int(e)) for e in refs][:3],
                                 "must be links of the same table (give every link of a tree the same components)")
            if bad.any():
                s, j = map(int, np.argwhere(bad)[0])
                raise InputError(f"link_parent of {world.name_of(int(t.entities[j]))}", int(local[s, j]),
                                 f"must be an earlier link of the same tree (parent index < {j}: parents before children)")
            kind = to_host(t["joint_kind"]).reshape(t.samples, E)
            bad = joint_state_error(kind.ravel(), to_host(t["joint_q"]), to_host(t["joint_qd"]))
            if bad is not None:
                k, what, value, rule = bad
                s, j = divmod(k, E)
                raise InputError(f"joint_{what} of {world.name_of(int(t.entities[j]))} (sample {t.sample_offset + s})",
                                 value, rule)
            if self.gmode >= 1:
                if (parent[:, 1:] < 0).any() or not (kind[:, 0] == FREE).all():
                    raise InputError("MultibodyDynamics.gravity", self.gravity,
                                     f"needs one tree per sample whose first link is its only root, on a free joint "
                                     f"(table of {world.name_of(int(t.entities[0]))})")
            xp = array_module(t["joint_q"])
            for term in self.terms:
                for c in term.columns:
                    if c not in t:
                        raise InputError(f"Term {term.name}: column", c,
                                         f"must be a column of every link table (table of "
                                         f"{world.name_of(int(t.entities[0]))} lacks it: give its links the "
                                         f"component, e.g. components.environment.Cannonball)")
            law_columns = LAW_COLUMNS
            if self._law is not None:
                for c in self._law.columns:
                    if c not in t or tuple(t[c].shape) != (t.row_count,):
                        raise InputError(f"JointLaw {self._law.name}: column", c,
                                         f"must be a scalar column of every link table (table of "
                                         f"{world.name_of(int(t.entities[0]))} "
                                         f"{'lacks it' if c not in t else 'has it with shape ' + str(tuple(t[c].shape))}"
                                         f": give every link the law's component, with values that do nothing "
                                         f"where it should not act)")
                law_columns = LAW_COLUMNS + tuple(self._law.columns)
            self.work.append(_Work(t, max(self.nstages, 2), xp, law_columns))
            rows = self._fused.args(t, xp) if self._fused else no_terms_args()
            self.work[-1].tt = (rows._replace(sample=self._sample.args, links=self._sample.links)
                                if self._sample is not None else rows)
        self._w = xp.asarray(self.tableau.weights) if self.work else None
        self._a0 = xp.zeros(6) if self.work else None
        self._bind_points(world)
        self._bind_centres(world)
        for w in self.work:                    # the poses (points of interest, centres) at t = 0
            recs = self._records(world.backend, w)
            self._advance(world.backend, w, recs, 0, 0.0, 0.0)
            self._points(world.backend, w, recs, 0.0)
            self._centres(world.backend, w, recs[0])

    def _bind_points(self, world) -> None:
        """Attach every point-of-interest table to the link table its ``poi_link`` refers to."""
        for w in self.work:
            w.points = []
        for pt in world.tables_with(*POI_COLUMNS):
            w = self._work_of(world, pt, "poi_link", "every point of interest needs its link")
            if w.ACC is None:
                w.ACC = array_module(w.y0).zeros((w.table.row_count, ACC_WIDTH))
            w.points.append(pt)

    def _work_of(self, world, table, column: str, why: str) -> _Work:
        """The link table's work that ``table``'s entity column ``column`` refers to, or an
        :class:`InputError` naming the column."""
        refs = table.entities_ref.get(column)
        target = [w for w in self.work if refs is not None and np.array_equal(refs, w.table.entities)]
        if not target or (to_host(table[column]) < 0).any():
            raise InputError(column, [world.name_of(int(e)) for e in table.entities][:3],
                             f"must name a link of an articulated tree ({why})")
        return target[0]

    def _bind_centres(self, world) -> None:
        """Attach every :class:`components.multibody.TreeCentre` table to the link table its
        ``centre_link`` refers to (one centre per tree and sample)."""
        for w in self.work:
            w.centres = []
        for ct in world.tables_with(*CENTRE_COLUMNS):
            w = self._work_of(world, ct, "centre_link", "every TreeCentre needs its tree")
            trees = np.concatenate([to_host(ct["centre_link"]) // w.E] + [to_host(c["centre_link"]) // w.E for c in w.centres])
            if len(np.unique(trees)) != len(trees):
                raise InputError("centre_link", [world.name_of(int(e)) for e in ct.entities][:3],
                                 "must name each tree once: one TreeCentre per tree")
            w.centres.append(ct)

    def _bind_terms(self, world, central) -> None:
        """Fuse the world's row terms into the multibody kernels (module docstring: which ones)."""
        self.terms, self._fused, self._sample, self._law = (), None, None, None
        self._k = {"advance_samples": advance_samples, "link_motion_samples": link_motion_samples}
        terms = []
        def one(held, new, system, what):
            """The world's one ``what`` (a sample term, a joint law): ``new`` if none is held yet."""
            if new is not None and held is not None:
                raise InputError(f"{system.name} (a {what})", new.name,
                                 f"is a second {what} beside {held.name}: the multibody solve takes one "
                                 "(sum them in one kernel)")
            return held if new is None else new

        for s in world.schedule()[Phase.DERIVATIVE]:
            self._sample = one(self._sample, s.sample_term(world), s, "sample term")
            self._law = one(self._law, s.joint_law(world), s, "joint law")
            term = s.term(world)
            if term is None:
                continue
            refuse_modal((term,), self.name)
            src = term.source if term.gravity else None
            beyond = getattr(src, "kind", "") == "harmonics" and not src.central   # no monopole of its own
            if term.gravity and central is not None and not beyond:
                if src is central:
                    continue                    # the central field, evaluated in the solve
                raise InputError(f"{s.name} (a gravity term)", type(src).__name__ if src is not None else term.name,
                                 "would put a second central field on the links besides the world's PointMass "
                                 "resource: use one of them, or a field without its monopole "
                                 "(SphericalHarmonics.perturbation())")
            if term.gravity and self.gmode != 0 and not beyond:
                raise InputError("MultibodyDynamics.gravity", self.gravity,
                                 f"needs the world's PointMass resource as the links' only gravity (the "
                                 f"{s.name} term is a field the differential split cannot take); use 'full'")
            terms.append(term)
        if not terms and self.every > 1:
            raise InputError("MultibodyDynamics.environment_every", self.every,
                             "does nothing without row terms on the links (no DERIVATIVE system with a term()): "
                             "leave it at 1")
        if not terms and self._sample is None and self._law is None:
            return
        self.terms = tuple(terms)
        roots = {"advance_range": advance_samples.kernel, "link_motion_range": link_motion_samples.kernel,
                 "advance_sample": advance_sample.cpu, "link_motion_sample": link_motion_sample.cpu}
        swap = {}
        if self._sample is not None:    # copies of the kernels calling the sample term's kernel
            swap[sample_terms_none] = self._sample.kernel
        if self._law is not None:       # ... and the joint law's
            swap[joint_law_none] = self._law.kernel
        roots = specialise(roots, swap)
        if terms:
            self._fused: FusedTerms = fuse_terms(self.terms, roots)
            roots = self._fused.kernels
        self._k = {"advance_samples": SampleDriver(roots["advance_range"]), "advance_sample": roots["advance_sample"],
                   "link_motion_samples": SampleDriver(roots["link_motion_range"]),
                   "link_motion_sample": roots["link_motion_sample"]}

    def _records(self, backend, w) -> tuple:
        """The kernels' records of work ``w``: ``(tree, load, work, poses)``
        (:data:`components.multibody.Tree`, :data:`~systems.multibody.records.Loads`,
        :data:`~systems.multibody.records.Scratch`, :data:`components.multibody.Poses`), with device
        views on the GPU."""
        t = w.table
        recs = (Tree.of(t), Loads.of(t, law=w.law, mu=self.mu, gmode=self.gmode, a0=self._a0),
                Scratch(w.y0, w.C, w.K, w.tauw, w.fext, w.qdd, w.Rw, w.pw, w.M, w.V), Poses.of(t))
        return tuple(kernel_tuple(r) for r in recs) if backend == "gpu" else recs

    def _advance(self, backend, w, recs, steps, h, t0, step0=0) -> None:
        t = w.table
        w.refresh_law()
        tree, load, work, poses = recs
        launch_rows(backend, self._k["advance_samples"], self._row("advance_sample"), t.samples,
                    w.E, steps, Stepper(h, self._w, self.nstages), t["row_status"], t["row_reason"], tree,
                    load, work, poses, t0, self.every, step0, w.env, w.tt)

    def _row(self, name):
        """The row function ``name`` (a DualKernel without terms, the linked CPU copy with them)."""
        return self._k[name] if name in self._k else {"advance_sample": advance_sample,
                                                      "link_motion_sample": link_motion_sample}[name]

    def _points(self, backend, w, recs, time) -> None:
        """The motion of the points of interest on ``w``'s links, at the current state."""
        if not w.points:
            return
        t = w.table
        tree, load, work, _poses = recs
        launch_rows(backend, self._k["link_motion_samples"], self._row("link_motion_sample"),
                    t.samples, w.E, t["row_status"], tree, load, work, w.ACC, time, w.env, w.tt)
        for pt in w.points:
            launch_rows(backend, poi_rows, poi_row, pt.row_count, pt["poi_link"], pt["poi_offset"], w.Rw, w.ACC,
                        pt["poi_position"], pt["poi_velocity"], pt["poi_acceleration"],
                        pt["poi_nongrav_acceleration"])

    def _centres(self, backend, w, tree) -> None:
        """The system centre of mass and momentum of every tree of ``w`` that has a TreeCentre."""
        for ct in w.centres:
            launch_rows(backend, tree_centres, tree_centre, ct.row_count, ct["centre_link"], w.E, tree,
                        w.Rw, w.pw, w.M, w.V, ct["centre_mass"],
                        ct["centre_position"], ct["centre_velocity"], ct["centre_angular_momentum"],
                        ct["centre_kinetic_energy"])

    def process(self, frame) -> None:
        for w in self.work:
            recs = self._records(frame.backend, w)       # once per frame: the three launches share them
            self._advance(frame.backend, w, recs, self.substeps, frame.dt / self.substeps, frame.t,
                          frame.index * self.substeps)
            self._points(frame.backend, w, recs, frame.t + frame.dt)
            self._centres(frame.backend, w, recs[0])


SEPARATION_COLUMNS = ("separation_a", "separation_b", "separation_reach", "separation_distance", "separation_within",
                      "separation_first_within")


class SeparationSensor(System):
    """Distance between the two points of interest of every :class:`components.multibody.Separation`
    after every frame (and at bind), whether it is within reach, and the first frame end at which it
    was: array code on the points' stored positions (NumPy, or CuPy on the GPU backend)."""

    phase = Phase.SCHEDULED
    reads = ("separation_a", "separation_b", "separation_reach", "poi_position")
    writes = ("separation_distance", "separation_within", "separation_first_within")

    def bind(self, world) -> None:
        self.pairs = []
        points = world.tables_with(*POI_COLUMNS)
        for st in world.tables_with(*SEPARATION_COLUMNS):
            found = []
            for col in ("separation_a", "separation_b"):
                refs = st.entities_ref.get(col)
                pt = next((p for p in points if refs is not None and np.array_equal(refs, p.entities)), None)
                if pt is None or (to_host(st[col]) < 0).any():
                    raise InputError(col, [world.name_of(int(e)) for e in st.entities][:3],
                                     "must name a PointOfInterest entity")
                found.append(pt)
            self.pairs.append((st, *found))
        if not self.pairs:
            raise InputError("SeparationSensor", "no Separation entity",
                             "the world needs at least one components.multibody.Separation for this sensor")
        self._measure(None)

    def _measure(self, t) -> None:
        for st, pa, pb in self.pairs:
            xp = array_module(st["separation_distance"])
            d = xp.sqrt(xp.sum((pa["poi_position"][st["separation_a"]] - pb["poi_position"][st["separation_b"]]) ** 2,
                               axis=1))
            st["separation_distance"][:] = d
            inside = d <= st["separation_reach"]
            st["separation_within"][:] = inside.astype(np.int8)
            if t is not None:
                first = st["separation_first_within"]
                first[:] = xp.where(inside & xp.isnan(first), t, first)

    def process(self, frame) -> None:
        self._measure(frame.t + frame.dt)


# ------------------------------------------------------------------------------ rigid equivalent
def tree_poses(spec: TreeSpec) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Forward kinematics of one tree at its state: ``(R, origin, com)``, each link's rotation
    link → inertial [n, 3, 3], origin [n, 3] and CoM [n, 3], inertial (the kernels' own pass)."""
    n = spec.n
    M, V = new_scratch(n)
    Rw, pw = np.zeros((n, 3, 3)), np.zeros((n, 3))
    pos, att, cp = np.zeros((n, 3)), np.zeros((n, 4)), np.zeros((n, 3))
    link_poses.cpu(0, n, spec.record(), M, V, Rw, pw, Poses(pos, att, cp))
    return Rw, pos, cp


def rigid_equivalent(spec: TreeSpec, *, field: str = "tree") -> tuple[TreeSpec, dict]:
    """The single free link that moves as ``spec``'s tree does while its joints stay locked: its
    composite mass, CoM (the new link's origin), inertia about the CoM in the root link's axes,
    the CoM velocity and the root's attitude and body rate (seed 001's V&V comparison 1, "single
    rigid body" against "locked chain"). Returns the spec and ``{"to_body": (R0, c)}`` so that a
    point x of the tree (inertial) sits at ``R0ᵀ (x − c)`` in the equivalent body.

    Raises:
        InputError: when the tree is not one rigid body: its first link must be its only root, on
            a free joint, and every other joint fixed or locked.
    """
    kind, locked = np.asarray(spec.kind), np.asarray(spec.locked, bool)
    loose = [k for k in range(1, spec.n) if kind[k] != FIXED and not locked[k]]
    if kind[0] != FREE or (np.asarray(spec.parents)[1:] < 0).any() or loose:
        raise InputError(f"{field} (rigid equivalent)", f"kinds {kind.tolist()}, locked {locked.tolist()}",
                         "must be one tree on a free root whose other joints are all fixed or locked"
                         + (f" (joint {loose[0]} is free)" if loose else ""))
    Rw, origin, cp = tree_poses(spec)
    m = float(spec.mass.sum())
    c = (spec.mass[:, None] * cp).sum(0) / m
    inertia = np.zeros((3, 3))
    for k in range(spec.n):
        d = cp[k] - c
        inertia += Rw[k] @ spec.inertia[k] @ Rw[k].T + spec.mass[k] * (d @ d * np.eye(3) - np.outer(d, d))
    R0 = Rw[0]
    w_body = spec.qd[0, 3:6]
    v_root = quat_to_dcm(spec.rotation[0]) @ spec.qd[0, :3]          # the free joint's velocity is in joint axes
    v_c = v_root + np.cross(R0 @ w_body, c - origin[0])
    q0 = np.array(dcm_to_quat(R0))
    one = tree_spec(parents=[-1], kinds=["free"], mass=[m], inertia=[R0.T @ inertia @ R0],
                    q=[list(c) + list(q0)], qd=[list(v_c) + list(w_body)], field=f"{field} (rigid equivalent)")
    return one, {"to_body": (R0, c)}


# ------------------------------------------------------------------------------ joint commands
_series = series_value.cpu

COMMAND_COLUMNS = ("command_joint", "command_series", "command_series_upper", "command_scale", "command_bias")


def _command_row(i, joint, series, series_upper, scale, bias, times, values, off, t, tau):
    """joint_tau of command i's joint <- scale · (bias + series(t), series_upper(t))."""
    r = joint[i]
    x0 = x1 = x2 = y0 = y1 = y2 = 0.0
    if series[i] >= 0:
        x0, x1, x2 = _series(times, values, off, series[i], t)
    if series_upper[i] >= 0:
        y0, y1, y2 = _series(times, values, off, series_upper[i], t)
    s = scale[i]
    tau[r, 0] = s * (bias[i, 0] + x0)
    tau[r, 1] = s * (bias[i, 1] + x1)
    tau[r, 2] = s * (bias[i, 2] + x2)
    tau[r, 3] = s * (bias[i, 3] + y0)
    tau[r, 4] = s * (bias[i, 4] + y1)
    tau[r, 5] = s * (bias[i, 5] + y2)


command_row = dual(_command_row)
_command = command_row.cpu


@cpu_parallel
def command_rows(n, joint, series, series_upper, scale, bias, times, values, off, t, tau):
    """CPU driver of :data:`command_row` (one command per joint: no two rows write one joint)."""
    for i in prange(n):
        _command(i, joint, series, series_upper, scale, bias, times, values, off, t, tau)


class JointCommands(System):
    """Write every :class:`components.multibody.JointCommand` into its joint's ``joint_tau`` at the
    start of each frame (SCHEDULED, before :class:`MultibodyDynamics`, which reads ``joint_tau``).
    A user controller is any SCHEDULED system that writes ``joint_tau`` the same way."""

    phase = Phase.SCHEDULED
    reads = COMMAND_COLUMNS
    writes = ("joint_tau",)

    def bind(self, world) -> None:
        self.tables = []
        for ct in world.tables_with(*COMMAND_COLUMNS):
            joint = to_host(ct["command_joint"])
            refs = ct.entities_ref.get("command_joint")
            links = [t for t in world.tables_with("joint_tau", "link_parent")
                     if refs is not None and np.array_equal(refs, t.entities)]
            if not links or (joint < 0).any():
                raise InputError("command_joint", [world.name_of(int(e)) for e in ct.entities][:3],
                                 "must name a link of an articulated tree")
            uniq, counts = np.unique(joint, return_counts=True)
            if (counts > 1).any():
                e = int(links[0].entities[int(uniq[counts > 1][0]) % links[0].entity_count])
                raise InputError("command_joint", world.name_of(e), "is commanded twice: one command per joint")
            series = world.resource(LoadSeries, None)
            used = np.concatenate([to_host(ct["command_series"]), to_host(ct["command_series_upper"])])
            n_series = 0 if series is None else len(series.times)
            if (used >= n_series).any():
                raise InputError("command_series", int(used.max()),
                                 f"must index a series of the LoadSeries resource (it has {n_series}) or be -1")
            xp = array_module(ct["command_scale"])
            packed = (series or LoadSeries()).packed()
            self.tables.append((ct, links[0], tuple(xp.asarray(a) for a in packed)))

    def process(self, frame) -> None:
        for ct, lt, (times, values, off) in self.tables:
            launch_rows(frame.backend, command_rows, command_row, ct.row_count, ct["command_joint"],
                        ct["command_series"], ct["command_series_upper"], ct["command_scale"], ct["command_bias"],
                        times, values, off, frame.t, lt["joint_tau"])
