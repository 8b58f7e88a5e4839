"""Facet contact between vehicles and with the ground (JEOD v5.0 Contact Model, seed 000).

:class:`FacetContact` is a DERIVATIVE system: at every integrator stage it finds the facet pairs
(and facet–ground pairs) in contact, evaluates their pair interaction and adds the resulting
equal and opposite forces to the bodies. Per evaluation, per sample (one thread per sample, a fixed
order of pairs, so results never depend on the thread count):

1. **find** (:func:`find_contacts`, JEOD ``Contact::check_contact`` and ``ContactPair::in_contact``,
   §3.4.2–3.4.3): facet segments to inertial; candidate pairs from the broadphase
   (:mod:`systems.facets.broadphase`) or from JEOD's static pair list (all matched, non-excluded
   pairs, built once at bind); exclusion of facets on one body or one multibody tree
   (requirement Contact_4); the pair's interaction from the unordered material pair (a pair with
   no registered interaction never exists, §3.4.2, §3.4.7); exact capsule geometry
   (:mod:`systems.facets.geometry`); every contact is written to a per-sample contact buffer
   (penetration, normal, contact point, relative velocity, radii). Built-in grounds (plane, sphere,
   ellipsoid planet) are tested in the same pass, terrain SDF grounds in a CPU pass that calls
   the user's compiled distance function.
2. **user interactions**: one CPU pass per registered user function fills the force of its
   contacts (the function is a first-class argument of a kernel specialised on it).
3. **apply** (:func:`apply_contacts`, JEOD ``SpringPairInteraction::calculate_forces`` and
   ``ContactSurface::collect_forces_torques``, §3.4.4, §3.4.8, §4.2.1): the built-in spring
   force of each remaining contact; force ``+F`` on body *b* and ``−F`` on body *a*, at the common
   contact point (law ``momentum``) or at each body's own surface point (law ``jeod``, below);
   ``contact_force`` (inertial) and ``contact_torque`` (body axes, about the reference point,
   ``r × F`` with ``r`` from the reference point to the point where the force acts) per body;
   both added into ``body_force``/``body_torque``.

The built-in spring (eq. 3.1, ``F = −k x − c v``) with ``n`` the unit normal from facet *a* to
facet *b*, ``x`` the penetration and ``v`` the velocity of *b*'s material point relative to *a*'s
(``v_n = v·n``, ``ẋ = −v_n``). Eq. 3.1 as printed reads as if ``v`` were the whole relative
velocity; JEOD damps only its normal component (``SpringPairInteraction::calculate_forces``
scales the normal by ``c v·n``) and adds a friction force that the document does not print —
both are taken from JEOD v5.0's ``SpringPairInteraction`` here:

* normal force on *b*: ``f_n = k x − c v_n`` (mode ``jeod``: may be negative — damping pulls
  while the facets separate, as JEOD); ``max(0, ·)`` in mode ``clamp``; in mode ``latch`` the
  spring's sign is reversed about the latch point, ``f_n = −k d − c v_n`` with ``d`` the distance
  between the facets' cores, so overlapping facets are pulled together (§3.4.8: "a sign reversal
  could invert this behavior making the spring forces applicable to simulations requiring
  latching"). Reversing ``−k x`` literally would pull hardest at full overlap and flip direction
  as the cores cross; reversing about ``d = 0`` gives the same capture well depth ``k (ra+rb)²/2``
  with a smooth bottom. The latch releases when the cores separate beyond ``ra + rb``.
* friction ``F_t = −μ |f_n| v_t/|v_t|`` (Coulomb; optional regularisation below a slip speed) or,
  JEOD's, ``F_t = −μ |f_n| v_t/|v|``: JEOD normalises the whole relative velocity, ``v̂ = v/|v|``,
  and projects it on the tangent plane, ``n × (v̂ × n) = v_t/|v|``, so its friction is Coulomb's
  scaled by the sine of the angle between ``v`` and the normal (``|f_n|`` is the magnitude of the
  spring-damper force, ``μ`` times it the friction magnitude for a purely tangential ``v``).

Two laws (``SpringInteraction(law=...)``, :class:`components.contact.ContactLaw`):

* ``momentum`` (default): ``±F`` at ONE point, the midpoint ``p`` of the two facets' surface points
  (:mod:`systems.facets.geometry`), ``v`` evaluated at ``p``. The pair exchanges a pure force at
  one point: linear and angular momentum are both conserved exactly. Friction Coulomb by default.
* ``jeod`` (JEOD-compatible, JEOD's ``PointContactPair::in_contact`` + ``calculate_forces``): each
  body's force acts at its OWN surface point, ``s_a = p + (x/2) n`` on *a* (JEOD's subject, the
  facet spawned first; JEOD makes the line the subject of a line–point pair, so spawn the line
  first to match) and ``s_b = p − (x/2) n`` on *b* (JEOD's target); friction JEOD's. JEOD
  takes the relative velocity as ``ω_rel × c_s − v_rel`` (``c_s = r_a n`` the subject's contact
  point, ``v_rel`` the target's vehicle-point velocity relative to the subject, observed in the
  subject's frame): that is the velocity of *a*'s material point relative to *b*'s at the single
  point ``P = q_b − r_a n`` (``q_b`` *b*'s facet core point; *b*'s surface point when the radii
  are equal), and it is evaluated there: ``v(P) = v(p) + (ω_b − ω_a) × (P − p)``. The two points
  of application are ``x n`` apart, so the pair exerts a net moment ``−x n × F_t`` about any point
  and angular momentum is not conserved (JEOD's behaviour; linear momentum still is).
  Against ground (§4.3.3) the facet's surface point is already the contact point and JEOD's
  ground interaction uses the facet's velocity there, so only the friction law differs.
  Not reproduced (JEOD defects): JEOD crosses ``ω_rel``, expressed in the target's frame, with
  ``c_s``, expressed in the subject's (tumble uses one frame; the two agree whenever the facets'
  frames are parallel or their relative rate vanishes, as in the point runs); and JEOD's
  ``LineContactFacet::calculate_contact_point`` places a side contact of a line facet at the
  segment's middle instead of at the closest point and builds an end-cap point from a direction
  minus a position, so its line-facet torques differ from the exact surface points used here
  (aligned line runs, whose contacts lie on the axes, are unaffected).

Integrators: contact couples the bodies of a sample, so their rows must advance in lockstep. The
system says so (``couples_sample_rows``) and every integrator honours it: fixed-step methods
step all rows together anyway; the adaptive ones (``bs32``, ``dp54``) then take one error norm
over all the sample's bodies, accept or reject the step for all of them, and give them one step
size (:mod:`systems.dynamics.integration`), so a sample's bodies are always at the same time. Exact
Coulomb friction (``slip_velocity = 0``) reverses its direction at stick, a discontinuity in the
state that an error-controlled step chases without end (measured: dp54 stuck at h ≈ 3e-9 s on the
off-centre run); bind refuses it under an adaptive method — give the interaction a
``slip_velocity`` (regularised, Lipschitz friction). JEOD's friction ``v_t/|v|`` is continuous
while the facets approach or separate and is accepted.

Rows whose ``row_status`` is not RUNNING are skipped: their facets neither touch nor get touched.
A sample whose contacts overflow the buffer (``max_contacts``) has its body rows set FAILED.

Grounds: :class:`components.contact.PlaneGround`, :class:`~components.contact.SphereGround` and
:class:`~components.contact.EllipsoidGround` (planets) are built in; a terrain is an
:class:`~components.contact.SdfGround` — any compiled ``fn(data, x, y, z) -> (d, gx, gy, gz)`` —
and :func:`systems.facets.terrain.terrain_ground` wraps the terrain kernels of :mod:`systems.terrain.sdf`.

Backends: the find/apply kernels are dual (CPU and CUDA; the heavy ones compiled with
``dual(..., inline=False)``). User interactions and SDF grounds call a user's numba function and
run on the CPU backend only (refused on ``gpu`` at bind).

Facets on links (:mod:`components.multibody`): the contact couples the links of a sample's trees
inside the multibody solve, so :class:`FacetContact` hands :class:`systems.multibody.dynamics.MultibodyDynamics`
a sample term (:meth:`FacetContact.sample_term`, :func:`link_contacts`) instead of acting in
:meth:`~FacetContact.process`: the same find and wrench kernels, evaluated at every stage of the
solve from the links' own poses and velocities, events logged at every accepted state. The links
of one tree never touch (Contact_4; trees from ``link_parent``). User interactions and SDF grounds
are refused there.

Inspection: :meth:`FacetContact.contacts` returns the contacts of the last evaluation (facets,
bodies, penetration, normal, point, relative velocity, force); the per-sample counters
``narrowphase_tests`` and ``pair_candidates`` measure the broadphase.
"""

from __future__ import annotations

import numpy as np

from components.contact import (GROUND_PARAM_SIZE, PARAM_SIZE, FacetKind, Grounds, InteractionKind,
                                PairInteractions, SdfGround, SpringInteraction, material_id, material_name)
from ecs import InputError, Phase, System
from ecs.terms import SampleTerm
from ecs.kernels import PreparedRows, array_module, dual, to_host
from systems.facets.broadphase import body_bounding_spheres
from systems.facets.events import (CONTACT_EVENT_FIELDS, CONTACT_SUMMARIES, log_contact_changes,
                                   log_contact_changes_samples)
from systems.facets.find import find_contacts, find_contacts_samples, find_sdf_ground_contacts
from systems.facets.records import ContactBuffer
from systems.facets.forces import (apply_contacts, apply_contacts_samples, contact_wrenches, eval_user_contacts,
                                   spring_force)

_find_contacts_cpu = find_contacts.cpu
_cwrenches = contact_wrenches.cpu
_log_changes_cpu = log_contact_changes.cpu


# --------------------------------------------------------------------------- contact between links
def _link_contacts(b, n, stage, time, Rw, fext, args):
    """Facet contact among the links of one sample (rows b .. b + n − 1) inside the multibody
    solve: the :class:`ecs.terms.SampleTerm` of :class:`FacetContact` when its facets sit on links
    (:func:`systems.multibody.kernels._derivative` calls it at every stage, after the row terms).

    The solve has written the links' poses and velocities into the body arrays the find and wrench
    kernels read (the term's ``links``), the sample's contacts are found and their wrenches (:func:`_contact_wrenches`: force inertial,
    torque body axes about the link origin) added into ``fext`` (body axes, about the link origin:
    ``[torque; Rᵀ force]``). At stage 0 (an accepted state) the starts and ends of contact are
    logged (:func:`_log_contact_changes`) with the stage time."""
    (F, use_bp, npairs, pairs, fac, bod, grd, scr, cap, counters, buf, inter, rows, log) = args
    status, pos, vel, att, omega, tree, sph_c, sph_r = bod
    i_kind, i_params = inter
    st, reason, cforce, ctorque = rows
    events, ltime, prev, prev_count, prev_time, ev, ev_count, ev_overflow = log
    s = b // n
    _find_contacts_cpu(s, F, n, use_bp, npairs, pairs, fac, bod, grd, scr, cap, counters, buf)
    count, _, _, _, _ = counters          # contacts per sample (find.py: _find_contacts)
    _cwrenches(s, n, cap, count, buf, inter, st, reason, pos, att, omega, cforce, ctorque)
    for k in range(n):
        r = b + k
        f0, f1, f2 = cforce[r, 0], cforce[r, 1], cforce[r, 2]
        fext[r, 0] += ctorque[r, 0]
        fext[r, 1] += ctorque[r, 1]
        fext[r, 2] += ctorque[r, 2]
        fext[r, 3] += Rw[r, 0, 0] * f0 + Rw[r, 1, 0] * f1 + Rw[r, 2, 0] * f2
        fext[r, 4] += Rw[r, 0, 1] * f0 + Rw[r, 1, 1] * f1 + Rw[r, 2, 1] * f2
        fext[r, 5] += Rw[r, 0, 2] * f0 + Rw[r, 1, 2] * f1 + Rw[r, 2, 2] * f2
    if events and stage == 0:
        ltime[b] = time
        _log_changes_cpu(s, n, F, cap, st, ltime, count, buf, prev, prev_count, prev_time, ev, ev_count, ev_overflow)


link_contacts = dual(_link_contacts, inline=False)


def _link_trees(parent: np.ndarray) -> np.ndarray:
    """The root row of every link row (global rows; ``parent`` -1 at a root, parents before children)."""
    root = np.arange(parent.size, dtype=np.int64)
    for r in range(parent.size):
        if parent[r] >= 0:
            root[r] = root[parent[r]]
    return root


def static_pairs(f_body0: np.ndarray, f_matd0: np.ndarray, tree0: np.ndarray, pair_table: np.ndarray):
    """JEOD's pair list (§3.4.2): every facet pair i < j with a matched interaction, not on one body or tree.

    Args:
        f_body0: body index (within the sample) of each facet, shape [F].
        f_matd0: dense material index of each facet, shape [F].
        tree0: tree id of each body, shape [B].
        pair_table: interaction index by dense material pair (-1: none), shape [M, M].

    Returns:
        ``(a [P], b [P], interaction [P])`` int64, in row-major (i, j) order.
    """
    F = f_body0.size
    aa, bb, ii = [], [], []
    for i in range(F - 1):
        j = np.arange(i + 1, F)
        inter = pair_table[f_matd0[i], f_matd0[j]]
        bi, bj = f_body0[i], f_body0[j]
        same = (bj == bi) | ((tree0[bi] >= 0) & (tree0[bj] == tree0[bi]))
        keep = (inter >= 0) & ~same
        aa.append(np.full(int(keep.sum()), i, np.int64))
        bb.append(j[keep].astype(np.int64))
        ii.append(inter[keep].astype(np.int64))
    if not aa:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(aa), np.concatenate(bb), np.concatenate(ii)


def _check_facets(world, ft) -> None:
    """Facet columns as packed (per-sample overrides included): radius > 0, kind known, lengths, unit axes."""
    rad, ln = to_host(ft["facet_radius"]), to_host(ft["facet_length"])
    kind, ax = to_host(ft["facet_kind"]), to_host(ft["facet_axis"])

    def name(row):
        return world.name_of(int(ft.entities[row % ft.entity_count]))

    checks = (
        (~(np.isfinite(rad) & (rad > 0.0)), "facet_radius", rad, "must be a finite radius > 0 [m]"),
        (~np.isin(kind, [int(k) for k in FacetKind]), "facet_kind", kind,
         f"must be one of {[int(k) for k in FacetKind]} (FacetKind)"),
        ((kind == FacetKind.POINT) & (ln != 0.0), "facet_length", ln, "must be 0 for a point facet"),
        ((kind == FacetKind.LINE) & ~(np.isfinite(ln) & (ln > 0.0)), "facet_length", ln,
         "must be a finite length > 0 [m] for a line facet"),
        (np.abs(np.linalg.norm(ax, axis=1) - 1.0) > 1e-9, "facet_axis", ax, "must be a unit vector"),
    )
    for bad, col, values, rule in checks:
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            v = values[row]
            raise InputError(f"{col} of {name(row)} (sample {row // ft.entity_count})",
                             v.tolist() if hasattr(v, "tolist") else v, rule)


def _link_table(world, ref_entities):
    """The articulated-tree link table whose entities ``ref_entities`` are, or None."""
    if ref_entities is None:
        return None
    return next((t for t in world.tables_with("link_parent", "joint_q") if np.array_equal(t.entities, ref_entities)),
                None)


def _check_link_mode(world, lt) -> None:
    """Facets on links: a system must step the trees and evaluate them (the multibody solve), and
    trees come from link_parent."""
    if not any(getattr(s, "takes_sample_terms", False) for s in world.systems):
        raise InputError("facet_body", world.name_of(int(lt.entities[0])),
                         "names a link: facets on links need a system that steps the trees and evaluates them "
                         "(systems.multibody.dynamics.MultibodyDynamics)")
    if "contact_tree" in lt and (to_host(lt["contact_tree"]) >= 0).any():
        row = int(np.flatnonzero(to_host(lt["contact_tree"]) >= 0)[0])
        raise InputError(f"contact_tree of {world.name_of(int(lt.entities[row % lt.entity_count]))}",
                         int(to_host(lt["contact_tree"])[row]),
                         "must be -1 on links: links are grouped by their tree (link_parent) and the links of one "
                         "tree never contact each other (seed 000 Contact_4)")


def _check_adaptive_friction(world, inter) -> None:
    """Refuse exact Coulomb friction under an adaptive integrator (module docstring, Integrators)."""
    adaptive = [s for s in world.systems if s.derivative_pipeline and getattr(s, "adaptive", False)]
    if not adaptive:
        return
    for n1, n2, it in inter.entries:
        if (isinstance(it, SpringInteraction) and it.mu > 0.0 and it.friction_model == "coulomb"
                and it.slip_velocity == 0.0):
            raise InputError(f"spring interaction slip_velocity of {n1}/{n2}", it.slip_velocity,
                             f"must be > 0 under the adaptive integrator of {adaptive[0].name}: exact Coulomb "
                             "friction reverses at stick and the step shrinks without end (chattering); set "
                             "slip_velocity (e.g. 1e-3 m/s) or use a fixed-step method such as 'rk4'")


class FacetContact(System):
    """Facet–facet and facet–ground contact forces (DERIVATIVE phase), JEOD Contact Model.

    Needs the :class:`components.contact.PairInteractions` resource (and optionally
    :class:`components.contact.Grounds`), facets (:class:`components.contact.Facet`) on rigid
    bodies and an integrator (fixed-step or adaptive: the sample's bodies step together), or
    facets on the links of articulated trees and :class:`systems.multibody.dynamics.MultibodyDynamics`
    (module docstring).

    Args:
        events: ``True`` (default): log every start and end of a facet pair's contact as an event
            (:data:`CONTACT_EVENT_FIELDS`): compared at every accepted step, so the change lies
            between ``contact_time_before`` and ``contact_time``; contacts present at the run's
            start are logged as starts with ``contact_time_before`` NaN.
        broadphase: ``True`` (default): bounding spheres and sort-and-sweep find candidate pairs
            each evaluation; ``False``: JEOD's static list of every matched pair, each checked
            (bounding sphere, then exact test) at every evaluation.
        max_contacts: contact buffer capacity per sample; a sample with more simultaneous contacts
            has its rows set FAILED. Default: the number of matched pairs plus facets × grounds,
            capped at 4096.

    Attributes (after bind; per sample, host or device arrays, valid after each evaluation):
        contact_count: contacts found at the last evaluation, shape [samples].
        narrowphase_tests: exact capsule tests at the last evaluation, shape [samples].
        pair_candidates: facet pairs examined at the last evaluation, shape [samples].
        total_narrowphase_tests, total_pair_candidates: running totals over every evaluation,
            summed inside the find kernel (no host copy per evaluation), per sample.
        evaluations: evaluations by :meth:`process` (facets on rigid bodies; on links the
            multibody solve evaluates contact inside its compiled step and does not count them).
    """

    phase = Phase.DERIVATIVE
    couples_sample_rows = True   # the sample's bodies step together (systems.dynamics.integration, adaptive methods)
    reads = ("facet_body", "facet_kind", "facet_material", "facet_point", "facet_axis", "facet_radius",
             "facet_length", "body_position", "body_velocity", "body_attitude", "body_omega", "contact_tree")
    writes = ("contact_force", "contact_torque")
    accumulates = ("body_force", "body_torque")

    def __init__(self, *, broadphase: bool = True, max_contacts: int | None = None, events: bool = True):
        if not isinstance(broadphase, (bool, np.bool_)):
            raise InputError("facet contact broadphase", broadphase, "must be True or False")
        if not isinstance(events, (bool, np.bool_)):
            raise InputError("facet contact events", events, "must be True or False")
        self.events = bool(events)
        if max_contacts is not None and (isinstance(max_contacts, bool)
                                         or not isinstance(max_contacts, (int, np.integer)) or max_contacts < 1):
            raise InputError("facet contact max_contacts", max_contacts, "must be a whole number >= 1 (or None)")
        self.broadphase = bool(broadphase)
        self.max_contacts = max_contacts
        self.facets = None
        self.on_links = False
        self._link_bound = (None, None)
        self._link_args = None

    def declare_events(self, events) -> None:
        """Declare :data:`CONTACT_EVENT_FIELDS` (when ``events``) before the world allocates its log."""
        if self.events:
            for name, (shape, dtype, unit, doc, *flags) in CONTACT_EVENT_FIELDS.items():
                events.declare(name, shape=shape, dtype=dtype, unit=unit, doc=doc, flags=flags[0] if flags else None)
            for name, (field, reduce, where, doc) in CONTACT_SUMMARIES.items():
                events.summarize(name, field, reduce, where=where, doc=doc)

    # ------------------------------------------------------------------ bind
    def bind(self, world) -> None:
        self.world = world
        tables = world.tables_with("facet_body")
        self.facets = None
        self.evaluations = 0
        if not tables:
            return
        if len(tables) > 1:
            raise InputError("facets", f"{len(tables)} tables",
                             "every facet entity must carry exactly the same components (one facet table)")
        ft = tables[0]
        ref_entities = ft.entities_ref.get("facet_body")
        fb_host = to_host(ft["facet_body"])
        if (fb_host < 0).any():
            bad = int(ft.entities[int(np.flatnonzero(fb_host < 0)[0]) % ft.entity_count])
            raise InputError(f"facet_body of {world.name_of(bad)}", -1, "every facet must be attached to a body")
        bt = next((t for t in world.tables_with("body_position", "body_force")
                   if ref_entities is not None and np.array_equal(t.entities, ref_entities)), None)
        lt = None if bt is not None else _link_table(world, ref_entities)
        if bt is None and lt is None:
            raise InputError("facet_body", "entities without body_position/body_force or link_parent",
                             "facets must be attached to rigid bodies (components.rigid.rigid_body) or to the links "
                             "of one articulated tree table (components.multibody)")
        if lt is not None and self._link_bound[0] is ft and self._link_bound[1] is lt:
            self.facets = ft        # bound for these tables already (by MultibodyDynamics, via sample_term)
            return
        self._link_bound = (None, None)
        self._link_args = None
        if lt is not None:
            _check_link_mode(world, lt)
            bt = lt
        self.facets, self.bodies, self.on_links = ft, bt, lt is not None
        S, F, B = ft.samples, ft.entity_count, bt.entity_count
        _check_facets(world, ft)
        xp = array_module(bt["row_status"])
        backend = world.backend

        # materials and interactions
        inter = world.resource(PairInteractions, PairInteractions())
        _check_adaptive_friction(world, inter)
        grounds = world.resource(Grounds, Grounds()).items
        mat_f = to_host(ft["facet_material"]).astype(np.int64)
        mats = set(int(m) for m in np.unique(mat_f))
        for n1, n2, _ in inter.entries:
            mats.update((material_id(n1), material_id(n2)))
        for g in grounds:
            mats.add(material_id(g.material))
        mats = np.array(sorted(mats), dtype=np.int64)
        M = mats.size
        f_matd = np.searchsorted(mats, mat_f).astype(np.int64)
        pair_table = np.full((M, M), -1, np.int64)
        for k, (n1, n2, _) in enumerate(inter.entries):
            a, b = np.searchsorted(mats, [material_id(n1), material_id(n2)])
            pair_table[a, b] = pair_table[b, a] = k
        i_kind, i_params = inter.packed()
        if i_kind.size == 0:
            i_kind, i_params = np.zeros(1, np.int64), np.zeros((1, PARAM_SIZE))
        self.user_fns = inter.user_functions()

        # grounds
        G = len(grounds)
        g_kind = np.array([int(g.kind) for g in grounds] or [0], np.int64)
        g_params = np.array([g.params() for g in grounds] or [np.zeros(GROUND_PARAM_SIZE)])
        g_curv = np.array([g.curvature_radius() for g in grounds] or [0.0])
        g_pair = np.full((max(G, 1), M), -1, np.int64)
        for gi, g in enumerate(grounds):
            for k, (n1, n2, _) in enumerate(inter.entries):
                ids = (material_id(n1), material_id(n2))
                if material_id(g.material) in ids:
                    other = ids[1] if ids[0] == material_id(g.material) else ids[0]
                    g_pair[gi, int(np.searchsorted(mats, other))] = k
        self.sdf_grounds = [(gi, g) for gi, g in enumerate(grounds) if isinstance(g, SdfGround)]
        self._sdf_data = {gi: g.packed_data() for gi, g in self.sdf_grounds}
        if backend == "gpu" and (self.user_fns or self.sdf_grounds):
            raise InputError("facet contact backend", "gpu",
                             "user interactions and SDF grounds call user numba functions and run on the CPU "
                             "backend only")
        if self.on_links and (self.user_fns or self.sdf_grounds):
            raise InputError("facet contact on links", "user interaction" if self.user_fns else "SDF ground",
                             "is not supported between links: the multibody solve evaluates contact inside its "
                             "compiled step, where user numba functions are not linked; use spring interactions "
                             "and built-in grounds")
        self.G = G

        # trees, bounding spheres, static pairs
        if self.on_links:           # the links of one tree never touch (seed 000 Contact_4): tree = its root row
            tree = _link_trees(to_host(bt["link_parent"]).astype(np.int64))
        elif "contact_tree" in bt:
            tree = to_host(bt["contact_tree"]).astype(np.int64)
        else:
            tree = np.full(S * B, -1, np.int64)
        sph_c, sph_r = body_bounding_spheres(fb_host, to_host(ft["facet_point"]), to_host(ft["facet_radius"]),
                                             to_host(ft["facet_length"]), S * B)
        pa = pb = pi = np.zeros(0, np.int64)
        if not self.broadphase:
            local_body = (fb_host.reshape(S, F) - (np.arange(S) * B)[:, None])
            m2 = f_matd.reshape(S, F)
            t2 = tree.reshape(S, B)
            if not (np.all(local_body == local_body[0]) and np.all(m2 == m2[0]) and np.all(t2 == t2[0])):
                raise InputError("facet_body / facet_material / contact_tree", "differ between samples",
                                 "the all-pairs mode (broadphase=False) builds one pair list for every sample; "
                                 "use broadphase=True to disperse them")
            pa, pb, pi = static_pairs(local_body[0], m2[0], t2[0], pair_table)
        self.static_pair_count = int(pa.size)
        if self.max_contacts is not None:
            cap = int(self.max_contacts)
        else:
            n_match = int(pa.size) if not self.broadphase else F * (F - 1) // 2
            cap = int(max(1, min(4096, n_match + F * G)))
        self.capacity = cap

        def dev(a):
            return xp.asarray(a)

        self._args_static = dict(
            pair_a=dev(pa if pa.size else np.zeros(1, np.int64)), pair_b=dev(pb if pb.size else np.zeros(1, np.int64)),
            pair_i=dev(pi if pi.size else np.zeros(1, np.int64)), f_matd=dev(f_matd), tree=dev(tree),
            sph_c=dev(sph_c), sph_r=dev(sph_r), pair_table=dev(pair_table), g_kind=dev(g_kind),
            g_params=dev(g_params), g_pair=dev(g_pair), g_curv=dev(g_curv), i_kind=dev(i_kind), i_params=dev(i_params))
        self._host_g_pair, self._host_g_curv = g_pair, g_curv
        # scratch
        nf = S * F
        self.wc, self.wh = xp.zeros((nf, 3)), xp.zeros((nf, 3))
        self.wbr, self.live, self.act = xp.zeros(nf), xp.zeros(nf, np.int8), xp.zeros(nf, np.int8)
        self.near, self.wbc, self.box = xp.zeros(S * B, np.int8), xp.zeros((S * B, 3)), xp.zeros((S * B, 6))
        self.order = xp.asarray(np.tile(np.arange(F, dtype=np.int64), (S, 1)))
        self.axis = xp.full(S, -1, np.int64)
        self.lo, self.hi = xp.zeros(nf), xp.zeros(nf)
        self.contact_count = xp.zeros(S, np.int64)
        self.narrowphase_tests = xp.zeros(S, np.int64)
        self.pair_candidates = xp.zeros(S, np.int64)
        self._tot_test, self._tot_cand = xp.zeros(S, np.int64), xp.zeros(S, np.int64)
        self._counters = (self.contact_count, self.narrowphase_tests, self.pair_candidates, self._tot_test,
                          self._tot_cand)
        self.c_fa, self.c_fb = xp.zeros((S, cap), np.int64), xp.zeros((S, cap), np.int64)
        self.c_ba, self.c_bb = xp.zeros((S, cap), np.int64), xp.zeros((S, cap), np.int64)
        self.c_int = xp.zeros((S, cap), np.int64)
        self.c_x, self.c_d = xp.zeros((S, cap)), xp.zeros((S, cap))
        self.c_n, self.c_p, self.c_v, self.c_f = (xp.zeros((S, cap, 3)) for _ in range(4))
        self.c_ra, self.c_rb = xp.zeros((S, cap)), xp.zeros((S, cap))
        # the contacts at the previous accepted state, for the start/end events
        self.p_fa, self.p_fb = xp.zeros((S, cap), np.int64), xp.zeros((S, cap), np.int64)
        self.p_ba, self.p_bb = xp.zeros((S, cap), np.int64), xp.zeros((S, cap), np.int64)
        self.p_x = xp.zeros((S, cap))
        self.p_n, self.p_p, self.p_v = (xp.zeros((S, cap, 3)) for _ in range(3))
        self.prev_count, self.prev_time = xp.zeros(S, np.int64), xp.full(S, np.nan)
        if self.events:
            evl = world.events
            self._ev = tuple(evl.arrays[k] for k in CONTACT_EVENT_FIELDS)
        if "contact_force" in bt:
            self.cforce, self.ctorque = bt["contact_force"], bt["contact_torque"]
        else:
            self.cforce, self.ctorque = xp.zeros((S * B, 3)), xp.zeros((S * B, 3))
        if self.on_links:
            self._bind_links(world, xp)
            self._link_bound = (ft, bt)
        else:
            self._bind_rigid(world)

    def _contact_buffer(self) -> ContactBuffer:
        """The contact buffer's arrays as the record the kernels take."""
        return ContactBuffer(self.c_fa, self.c_fb, self.c_ba, self.c_bb, self.c_int, self.c_x, self.c_d, self.c_n,
                             self.c_p, self.c_v, self.c_ra, self.c_rb, self.c_f)

    def _bind_rigid(self, world) -> None:
        """The launch arguments of :meth:`process` (facets on rigid bodies), built once: the tables'
        columns and the scratch arrays keep their identity from bind to the end of the run. Gathering
        ~60 arrays into tuples at every evaluation and numba's typing of them cost as much as the
        find kernel on a small scene (measured at 2 × 250 facets: 13.5 µs per evaluation before,
        8.5 µs with the tuples gathered once, then ~2 µs less per launch through
        :class:`ecs.kernels.PreparedRows`)."""
        ft, bt, a = self.facets, self.bodies, self._args_static
        st = bt["row_status"]
        self._fac = (ft["facet_body"], a["f_matd"], ft["facet_point"], ft["facet_axis"], ft["facet_radius"],
                     ft["facet_length"])
        self._bod = (st, bt["body_position"], bt["body_velocity"], bt["body_attitude"], bt["body_omega"], a["tree"],
                     a["sph_c"], a["sph_r"])
        self._scr = (self.wc, self.wh, self.wbr, self.live, self.act, self.near, self.wbc, self.box, self.order,
                     self.axis, self.lo, self.hi)
        self._buf = self._contact_buffer()
        S, F, B = ft.samples, ft.entity_count, bt.entity_count
        self._find_args = (F, B, self.broadphase, self.static_pair_count,
                           (a["pair_a"], a["pair_b"], a["pair_i"], a["pair_table"]), self._fac, self._bod,
                           (self.G, a["g_kind"], a["g_params"], a["g_pair"], a["g_curv"]), self._scr, self.capacity,
                           self._counters, self._buf)
        self._apply_args = (B, self.capacity, self.contact_count, self._buf, (a["i_kind"], a["i_params"]), st,
                            bt["row_reason"], bt["body_position"], bt["body_attitude"], bt["body_omega"],
                            bt["body_force"], bt["body_torque"], self.cforce, self.ctorque)
        backend = world.backend
        self._find = PreparedRows(backend, find_contacts_samples, find_contacts, *self._find_args)
        self._apply = PreparedRows(backend, apply_contacts_samples, apply_contacts, *self._apply_args)
        self._log = None
        if self.events:
            evl = world.events
            self._log = PreparedRows(backend, log_contact_changes_samples, log_contact_changes, B, F, self.capacity,
                                     st, bt["row_time"], self.contact_count, self._buf,
                                     (self.p_fa, self.p_fb, self.p_ba, self.p_bb, self.p_x, self.p_n, self.p_p,
                                      self.p_v), self.prev_count, self.prev_time, self._ev, evl.count, evl.overflow)

    @property
    def total_narrowphase_tests(self) -> np.ndarray:
        """Exact capsule tests summed over every evaluation since bind, per sample (host copy)."""
        return to_host(self._tot_test).copy()

    @property
    def total_pair_candidates(self) -> np.ndarray:
        """Facet pairs examined summed over every evaluation since bind, per sample (host copy)."""
        return to_host(self._tot_cand).copy()

    def _bind_links(self, world, xp) -> None:
        """The argument of :func:`link_contacts` (facets on links): the links' poses are written
        into scratch body arrays at every evaluation; events (or stand-ins of their types) as the
        rigid path logs them."""
        ft, lt, a = self.facets, self.bodies, self._args_static
        S, F, B = ft.samples, ft.entity_count, lt.entity_count
        n = S * B
        self._lpos, self._lvel, self._lomg = xp.zeros((n, 3)), xp.zeros((n, 3)), xp.zeros((n, 3))
        self._latt = xp.zeros((n, 4))
        self._latt[:, 0] = 1.0
        self._ltime = xp.full(n, np.nan)
        if self.events:
            ev, ev_count, ev_overflow = self._ev, world.events.count, world.events.overflow
        else:                       # never written (events off), typed as the log's arrays
            ev = tuple(xp.zeros((S, 1) + ((shape,) if isinstance(shape, int) else shape), dtype)
                       for shape, dtype, _, _ in CONTACT_EVENT_FIELDS.values())
            ev_count, ev_overflow = xp.zeros(S, np.int32), xp.zeros(S, np.int8)
        st = lt["row_status"]
        self._link_args = (
            F, self.broadphase, self.static_pair_count, (a["pair_a"], a["pair_b"], a["pair_i"], a["pair_table"]),
            (ft["facet_body"], a["f_matd"], ft["facet_point"], ft["facet_axis"], ft["facet_radius"], ft["facet_length"]),
            (st, self._lpos, self._lvel, self._latt, self._lomg, a["tree"], a["sph_c"], a["sph_r"]),
            (self.G, a["g_kind"], a["g_params"], a["g_pair"], a["g_curv"]),
            (self.wc, self.wh, self.wbr, self.live, self.act, self.near, self.wbc, self.box, self.order, self.axis,
             self.lo, self.hi),
            self.capacity, self._counters, self._contact_buffer(),
            (a["i_kind"], a["i_params"]), (st, lt["row_reason"], self.cforce, self.ctorque),
            (self.events, self._ltime, (self.p_fa, self.p_fb, self.p_ba, self.p_bb, self.p_x, self.p_n, self.p_p,
                                        self.p_v), self.prev_count, self.prev_time, ev, ev_count, ev_overflow))

    def sample_term(self, world) -> SampleTerm | None:
        """With facets on links: contact evaluated inside the multibody solve, per sample and stage
        (:func:`link_contacts`); ``None`` with facets on rigid bodies (an integrator calls
        :meth:`process`)."""
        tables = world.tables_with("facet_body")
        if len(tables) != 1 or _link_table(world, tables[0].entities_ref.get("facet_body")) is None:
            return None
        if self._link_args is None or self.facets is not tables[0]:
            self.bind(world)
        return SampleTerm("facet_contact", link_contacts.cpu, self._link_args,
                          links=(self._lpos, self._latt, self._lomg, self._lvel))

    # ------------------------------------------------------------------ process
    def process(self, frame) -> None:
        if self.facets is None or self.on_links:      # on links: the multibody solve evaluates it
            return
        S = self.facets.samples
        self._find(S)
        if self.sdf_grounds or self.user_fns:
            F = self.facets.entity_count
            for gi, g in self.sdf_grounds:
                find_sdf_ground_contacts(g.fn, self._sdf_data[gi], gi, float(self._host_g_curv[gi]), S, F, self._fac,
                                         self._bod, self._scr, self._args_static["g_pair"], self.capacity,
                                         self.contact_count, self._buf)
            for j, fn in enumerate(self.user_fns):
                eval_user_contacts(fn, int(InteractionKind.USER) + j, S, self.capacity, self.contact_count,
                                   self.c_int, self._args_static["i_kind"], self._args_static["i_params"], self.c_x,
                                   self.c_n, self.c_v, self.c_ra, self.c_rb, self.c_f)
        self._apply(S)
        if self._log is not None and frame.stage == 0:  # an accepted state: log contacts that started or ended
            self._log(S)
        self.evaluations += 1

    # ------------------------------------------------------------------ inspection
    def contacts(self, sample: int = 0) -> dict[str, np.ndarray]:
        """The contacts of ``sample`` at the last evaluation (host copies), for logging and tests.

        Keys: ``facet_a`` / ``facet_b`` (facet rows; ``facet_a = -1 - g`` for ground g), ``body_a`` /
        ``body_b`` (body rows, -1 for the ground), ``interaction``, ``penetration`` [m],
        ``distance`` (core distance) [m], ``normal`` (a→b, inertial), ``point`` (the common contact
        point p, the midpoint of the surface points) [m], ``velocity`` (b relative to a at p,
        [m/s]; the ``jeod`` law's friction sees it moved to JEOD's point, module docstring),
        ``force`` (on b, [N], inertial; law ``jeod``: acting at b's surface point ``p − (x/2) n``,
        its opposite at a's ``p + (x/2) n``).
        """
        n = min(int(to_host(self.contact_count)[sample]), self.capacity)
        h = {k: to_host(getattr(self, "c_" + k))[sample, :n].copy()
             for k in ("fa", "fb", "ba", "bb", "int", "x", "d", "n", "p", "v", "f")}
        return {"facet_a": h["fa"], "facet_b": h["fb"], "body_a": h["ba"], "body_b": h["bb"],
                "interaction": h["int"], "penetration": h["x"], "distance": h["d"], "normal": h["n"],
                "point": h["p"], "velocity": h["v"], "force": h["f"]}

    def describe_pairs(self) -> list[tuple[str, str, str]]:
        """JEOD-style listing of the static pairs (all-pairs mode): (facet a, facet b, materials)."""
        if self.facets is None or self.broadphase:
            return []
        ft = self.facets
        a = to_host(self._args_static["pair_a"])[: self.static_pair_count]
        b = to_host(self._args_static["pair_b"])[: self.static_pair_count]
        mat = to_host(ft["facet_material"])
        return [(self.world.name_of(int(ft.entities[i])), self.world.name_of(int(ft.entities[j])),
                 f"{material_name(mat[i])}/{material_name(mat[j])}") for i, j in zip(a, b)]


__all__ = ["CONTACT_EVENT_FIELDS", "CONTACT_SUMMARIES", "FacetContact", "apply_contacts", "find_contacts", "spring_force", "static_pairs"]
