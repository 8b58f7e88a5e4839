"""Integrators as systems: explicit Euler, semi-implicit Euler (Euler–Cromer), RK4,
Bogacki–Shampine RK3(2) (MATLAB's ode23) and Dormand–Prince RK5(4), each row independent.

An :class:`Integrator` is a SCHEDULED system that owns the stage loop of every table holding rigid
bodies (:mod:`components.rigid`). At each stage it writes the stage state into the state columns
and the stage time into ``row_time``, zeroes the ``body_force``/``body_torque`` accumulators, runs
every DERIVATIVE system of the world (gravity, applied loads, contact springs, user forces), then
evaluates the equations of motion of :mod:`systems.dynamics.rigid_body`. Derivative systems therefore see
ordinary columns and never know which method is running. A DERIVATIVE system that contributes a
row term (:mod:`ecs.terms`) instead of a ``process`` takes part too: its term is fused and applied
at every stage after the others (:mod:`systems.dynamics.rigid_terms`), so one user force serves this
pipeline and the deployment's alike.

Fixed-step methods take one step of the frame length per frame. Adaptive methods (``bs32``,
``dp54``) keep a per-row step proposal and take as many accepted steps per row as their tolerances
need to land exactly on the frame end; rows that finished their frame sit out the remaining
attempts. When a DERIVATIVE system couples the rows of a sample (``couples_sample_rows``: facet
contact between the sample's bodies), those rows step together: one error norm over all their
state components, one accept/reject and one step size per sample, so the coupled bodies always
sit at the same time. Error control: RMS over the state components of Δ/(atol + rtol·max(|y₀|, |y₁|)),
accept when ≤ 1, new step h·clamp(0.9·err^(−1/(p+1)), 0.2, 5) with p the embedded order (Hairer,
Nørsett & Wanner, *Solving ODEs I*, II.4). The higher-order solution is propagated (local
extrapolation), as ode23/ode45 do.

A row whose state turns non-finite, or whose step would fall below ``h_min``, or which exceeds
``max_steps`` attempts in one frame, is set FAILED with its last good state and stops costing work:
it never stops the batch.

Butcher tableaux: Bogacki & Shampine, Appl. Math. Lett. 2 (1989) 321–325; Dormand & Prince,
J. Comput. Appl. Math. 6 (1980) 19–26.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numba import prange

from components.rigid import RotatingFrame
from components.status import Status
from ecs import InputError, Phase, System
from ecs.system import check_derivatives
from ecs.terms import fuse_terms, refuse_modal
from ecs.kernels import PreparedRows, array_module, cpu_parallel, dual, to_backend, to_host
from ecs.stepping import TABLEAUX, Tableau, scaled_error_sq, stage_sum, step_factor  # noqa: F401  (TABLEAUX re-exported)
from ecs.attitude import euler321_to_quat, euler_to_quat, quat_derivative, quat_normalize
from systems.dynamics import rigid_terms
from systems.dynamics.rigid_body import STATE_SIZE, body_derivative, body_derivative_rows, new_mass_cache

_e2q = euler321_to_quat.cpu
_qnorm = quat_normalize.cpu
_qdot = quat_derivative.cpu
_step_factor = step_factor.cpu
_err_sq = scaled_error_sq.cpu
_ssum = stage_sum.cpu


ALIASES = {"explicit_euler": "euler", "euler_cromer": "semi_implicit_euler", "symplectic_euler": "semi_implicit_euler",
           "rk3": "bs32", "ode23": "bs32", "rk23": "bs32", "rk45": "dp54", "ode45": "dp54", "dopri5": "dp54"}


# --------------------------------------------------------------------------- row kernels
def _put_component(i, k, v, pos, vel, att, omega, euler, euler_mode):
    """Write state component k (layout of systems.dynamics.rigid_body) of row i into its column."""
    if k < 3:
        pos[i, k] = v
    elif k < 6:
        vel[i, k - 3] = v
    elif k < 10:
        att[i, k - 6] = v
    elif k < 13:
        omega[i, k - 10] = v
    elif euler_mode:
        euler[i, k - 13] = v


put_component = dual(_put_component)
_put = put_component.cpu


def _pack_state(i, active, pos, vel, att, omega, euler, euler_mode, y0):
    """y0[i] <- the row's state columns (layout of systems.dynamics.rigid_body)."""
    if not active[i]:
        return
    for k in range(3):
        y0[i, k] = pos[i, k]
        y0[i, 3 + k] = vel[i, k]
        y0[i, 10 + k] = omega[i, k]
        y0[i, 13 + k] = euler[i, k] if euler_mode else 0.0
    for k in range(4):
        y0[i, 6 + k] = att[i, k]


def _set_stage(i, active, y0, K, W, h, t0, state, euler, euler_mode, time, wrench, stage, c):
    """Write Y = y0 + h Σ_j a[stage, j] K_j (``W``: the tableau's weights, summed by
    :data:`ecs.stepping.stage_sum`) into the state columns (``state`` = position, velocity,
    attitude, rate), row_time = t0 + c h, and clear the row's force and torque (``wrench``) for the
    stage's derivative systems to add into."""
    if not active[i]:
        return
    pos, vel, att, omega = state
    force, torque = wrench
    for k in range(3):
        force[i, k] = 0.0
        torque[i, k] = 0.0
    hi = h[i]
    for k in range(STATE_SIZE):
        _put(i, k, _ssum(y0[i, k], hi, W, stage, stage, K, i, k), pos, vel, att, omega, euler, euler_mode)
    if euler_mode:
        q0, q1, q2, q3 = _e2q(euler[i, 0], euler[i, 1], euler[i, 2])
        att[i, 0] = q0
        att[i, 1] = q1
        att[i, 2] = q2
        att[i, 3] = q3
    time[i] = t0[i] + c * hi


def _candidate_error(i, y0, K, W, nstages, hi, euler_mode, rtol, atol, adaptive, semi_implicit):
    """The step's candidate y1 of row i: (Σ over components of (Δ/sc)², component count, all finite),
    with Δ the embedded error estimate and sc = atol + rtol·max(|y0|, |y1|) (module docstring)."""
    errsq = 0.0
    ncomp = 0
    finite = True
    for k in range(STATE_SIZE):
        if euler_mode and 6 <= k < 10:
            continue
        if (not euler_mode) and k >= 13:
            continue
        y1 = _ssum(y0[i, k], hi, W, nstages, nstages, K, i, k)      # row nstages: b
        if semi_implicit:
            y1 = _si(i, k, y0, K, hi)
        if not math.isfinite(y1):
            finite = False
        if adaptive:
            e = _ssum(0.0, hi, W, nstages + 1, nstages, K, i, k)    # row nstages + 1: b − b̂
            errsq += _err_sq(e, y0[i, k], y1, rtol, atol)
            ncomp += 1
    return errsq, ncomp, finite


def _row_error(i, active, y0, K, W, nstages, h, euler_mode, rtol, atol, semi_implicit, esq, ecount, efinite):
    """Store row i's candidate error sums for :func:`_group_error` (adaptive, coupled rows)."""
    if not active[i]:
        return
    errsq, ncomp, finite = _cand_err(i, y0, K, W, nstages, h[i], euler_mode, rtol, atol, True, semi_implicit)
    esq[i] = errsq
    ecount[i] = ncomp
    efinite[i] = 1 if finite else 0


def _group_error(g, size, active, esq, ecount, efinite, g_err):
    """One error norm for the ``size`` coupled rows of group g (one sample's bodies): the RMS over
    every state component of every active row, summed in row order; -1 when any row's candidate
    is not finite (the whole sample then fails, as a single row would)."""
    total = 0.0
    count = 0
    fin = 1
    for r in range(g * size, (g + 1) * size):
        if active[r]:
            total += esq[r]
            count += ecount[r]
            if efinite[r] == 0:
                fin = 0
    err = math.sqrt(total / count) if count > 0 else 0.0
    if fin == 0:
        err = -1.0
    for r in range(g * size, (g + 1) * size):
        if active[r]:
            g_err[r] = err


def _finish_step(i, active, status, reason, y0, K, tab, ctrl, state, euler, euler_mode, time, rule, g_err,
                 t_target):
    """Combine the stages, control the error, accept or reject, and write the row back.

    ``tab = (W, nstages)``: the tableau's weights (:attr:`ecs.stepping.Tableau.weights`) and
    stages; ``ctrl = (h, h_prop, t0, attempts)``: the rows' step, proposed step, step start [s]
    and attempt count; ``state = (pos, vel, att, omega)``: the body columns; ``rule = (rtol, atol,
    adaptive, semi_implicit, error_order, h_min, max_steps, grouped)``: the integrator's settings.
    ``grouped``: the error and finiteness are the row's group's (:func:`_group_error`), so coupled
    rows accept, reject and size their steps together."""
    if not active[i]:
        return
    W, nstages = tab
    h, h_prop, t0, attempts = ctrl
    pos, vel, att, omega = state
    rtol, atol, adaptive, semi_implicit, error_order, h_min, max_steps, grouped = rule
    hi = h[i]
    if grouped:  # the sample's bodies step together: its error, or -1 if a candidate is not finite (group_error)
        err = g_err[i]
        finite = err >= 0.0
    else:
        errsq, ncomp, finite = _cand_err(i, y0, K, W, nstages, hi, euler_mode, rtol, atol, adaptive, semi_implicit)
        err = math.sqrt(errsq / ncomp) if adaptive else 0.0
    accept = True
    fac = 1.0
    if adaptive:
        if not math.isfinite(err):
            accept = False
            fac = 0.2
        else:
            accept = err <= 1.0
            fac = _step_factor(err, -1.0 / (error_order + 1))
    if not finite and not adaptive:
        accept = False
    attempts[i] += 1
    if accept and finite:
        for k in range(STATE_SIZE):
            if semi_implicit:
                v = _si(i, k, y0, K, hi)
            else:
                v = _ssum(y0[i, k], hi, W, nstages, nstages, K, i, k)
            _put(i, k, v, pos, vel, att, omega, euler, euler_mode)
        if euler_mode:
            q0, q1, q2, q3 = _e2q(euler[i, 0], euler[i, 1], euler[i, 2])
        elif semi_implicit:
            # Euler–Cromer: q1 = q0 + h q̇(q0, ω1), then renormalise
            d0, d1, d2, d3 = _qdot(y0[i, 6], y0[i, 7], y0[i, 8], y0[i, 9], omega[i, 0], omega[i, 1], omega[i, 2])
            q0, q1, q2, q3 = _qnorm(y0[i, 6] + hi * d0, y0[i, 7] + hi * d1, y0[i, 8] + hi * d2, y0[i, 9] + hi * d3)
        else:
            q0, q1, q2, q3 = _qnorm(att[i, 0], att[i, 1], att[i, 2], att[i, 3])
        att[i, 0] = q0
        att[i, 1] = q1
        att[i, 2] = q2
        att[i, 3] = q3
        tn = t0[i] + hi
        remaining = t_target - tn
        if remaining <= 1e-12 * max(1.0, abs(t_target)):
            time[i] = t_target
            active[i] = False
        else:
            time[i] = tn
            t0[i] = tn
            for k in range(STATE_SIZE):  # the accepted state is the next step's start
                if k < 3:
                    y0[i, k] = pos[i, k]
                elif k < 6:
                    y0[i, k] = vel[i, k - 3]
                elif k < 10:
                    y0[i, k] = att[i, k - 6]
                elif k < 13:
                    y0[i, k] = omega[i, k - 10]
                elif euler_mode:
                    y0[i, k] = euler[i, k - 13]
        if adaptive:
            h_prop[i] = hi * fac
            h[i] = min(h_prop[i], max(t_target - time[i], 0.0))
    else:
        # restore the step's start state into the columns
        for k in range(3):
            pos[i, k] = y0[i, k]
            vel[i, k] = y0[i, 3 + k]
            omega[i, k] = y0[i, 10 + k]
            if euler_mode:
                euler[i, k] = y0[i, 13 + k]
        for k in range(4):
            att[i, k] = y0[i, 6 + k]
        time[i] = t0[i]
        if adaptive and finite:
            h_prop[i] = hi * fac
            h[i] = min(h_prop[i], t_target - t0[i])
            if h[i] < h_min:
                status[i] = 9  # Status.FAILED
                reason[i] = 3  # Reason.STEP_UNDERFLOW
                active[i] = False
        else:
            status[i] = 9  # Status.FAILED
            reason[i] = 2  # Reason.NONFINITE_STATE
            active[i] = False
    if active[i] and attempts[i] >= max_steps:
        status[i] = 9  # Status.FAILED
        reason[i] = 4  # Reason.STEP_LIMIT
        active[i] = False


def _semi_implicit_component(i, k, y0, K, h):
    """Euler–Cromer update of component k: velocities first, positions with the new velocities."""
    if k < 3:
        return y0[i, k] + h * (y0[i, 3 + k] + h * K[i, 0, 3 + k])
    if 6 <= k < 10:
        return y0[i, k] + h * K[i, 0, k]  # replaced by the q̇(q0, ω1) update in the caller
    if k >= 13:
        return y0[i, k] + h * K[i, 0, k]
    return y0[i, k] + h * K[i, 0, k]


semi_implicit_component = dual(_semi_implicit_component)
_si = semi_implicit_component.cpu
candidate_error = dual(_candidate_error)
_cand_err = candidate_error.cpu
row_error = dual(_row_error)
group_error = dual(_group_error)
_row_error_cpu = row_error.cpu
_group_error_cpu = group_error.cpu
pack_state = dual(_pack_state)
set_stage = dual(_set_stage)
finish_step = dual(_finish_step)
_pack_state_cpu = pack_state.cpu
_set_stage_cpu = set_stage.cpu
_finish_step_cpu = finish_step.cpu


@cpu_parallel
def pack_state_rows(n, active, pos, vel, att, omega, euler, euler_mode, y0):
    for i in prange(n):
        _pack_state_cpu(i, active, pos, vel, att, omega, euler, euler_mode, y0)


@cpu_parallel
def set_stage_rows(n, active, y0, K, W, h, t0, state, euler, euler_mode, time, wrench, stage, c):
    for i in prange(n):
        _set_stage_cpu(i, active, y0, K, W, h, t0, state, euler, euler_mode, time, wrench, stage, c)


# Without the reference-counting runtime: each array unpacked from a tuple argument inside the prange
# body costs an atomic incref/decref per row with it (DP5(4) attempts 4-5 % slower, measured); the
# driver allocates nothing.
@cpu_parallel(nrt=False)
def finish_step_rows(n, active, status, reason, y0, K, tab, ctrl, state, euler, euler_mode, time, rule, g_err,
                     t_target):
    for i in prange(n):
        _finish_step_cpu(i, active, status, reason, y0, K, tab, ctrl, state, euler, euler_mode, time, rule, g_err,
                         t_target)


@cpu_parallel
def row_error_rows(n, active, y0, K, W, nstages, h, euler_mode, rtol, atol, semi_implicit, esq, ecount, efinite):
    for i in prange(n):
        _row_error_cpu(i, active, y0, K, W, nstages, h, euler_mode, rtol, atol, semi_implicit, esq, ecount, efinite)


@cpu_parallel
def group_error_rows(n, size, active, esq, ecount, efinite, g_err):
    for g in prange(n):
        _group_error_cpu(g, size, active, esq, ecount, efinite, g_err)


# --------------------------------------------------------------------------- the system
STATE_COLUMNS = ("body_position", "body_velocity", "body_attitude", "body_omega")


@dataclass
class _Work:
    """Per-table integrator scratch (system-owned, not part of the schema)."""

    table: object
    y0: np.ndarray
    K: np.ndarray
    active: np.ndarray
    h: np.ndarray
    h_prop: np.ndarray
    t0: np.ndarray
    attempts: np.ndarray
    key: np.ndarray
    L: np.ndarray
    euler: np.ndarray
    euler_mode: bool
    group: int            # rows stepped together (one sample's bodies when a system couples them), 1 otherwise
    esq: np.ndarray       # per-row error sums, norms and finiteness of the grouped error control
    ecount: np.ndarray
    efinite: np.ndarray
    g_err: np.ndarray
    launch: dict = field(default_factory=dict)   # name -> PreparedRows (Integrator._prepare)


class Integrator(System):
    """Integrate every rigid-body table with one method.

    Args:
        method: ``"euler"``, ``"semi_implicit_euler"``, ``"rk4"``, ``"bs32"`` or ``"dp54"``
            (aliases: ``euler_cromer``, ``ode23``, ``rk45``, ``ode45``, ...).
        rtol, atol: tolerances of the adaptive methods (per state component).
        h0: first step of the adaptive methods [s] (default: the frame length).
        h_min: smallest adaptive step before a row is failed [s].
        max_steps: most step attempts per row per frame before the row is failed.
    """

    phase = Phase.SCHEDULED
    derivative_pipeline = "launch"     # calls every DERIVATIVE system's process at each stage
    reads = STATE_COLUMNS + ("body_mass", "body_com", "body_inertia", "body_force", "body_torque")
    writes = STATE_COLUMNS + ("body_euler", "row_time")

    def __init__(self, method: str = "rk4", *, rtol: float = 1e-10, atol: float = 1e-12, h0: float | None = None,
                 h_min: float = 1e-12, max_steps: int = 1_000_000):
        name = ALIASES.get(method.lower(), method.lower())
        if name not in TABLEAUX:
            raise InputError("integrator method", method, f"must be one of {sorted(TABLEAUX)}")
        for fname, v in (("rtol", rtol), ("atol", atol)):
            if not (v > 0 and math.isfinite(v)):
                raise InputError(fname, v, "must be a positive finite tolerance")
        self.method = name
        self.tableau = TABLEAUX[name]
        self.rtol, self.atol, self.h0, self.h_min, self.max_steps = rtol, atol, h0, h_min, max_steps
        self.work: list[_Work] = []

    @property
    def adaptive(self) -> bool:
        return self.tableau.b_err is not None

    def bind(self, world) -> None:
        self.world = world
        self.work = []
        s = self.tableau.stages
        # A DERIVATIVE system that couples the bodies of a sample (facet contact) makes the adaptive
        # methods step each sample's rows together: one error norm, one step (module docstring).
        self.coupled_by = [type(x).__name__ for x in world.systems
                           if x.phase == Phase.DERIVATIVE and getattr(x, "couples_sample_rows", False)]
        self._link_terms(world)
        self._bind_frame(world)
        for t in world.tables_with(*STATE_COLUMNS, "body_mass", "body_force"):
            n = t.row_count
            group = t.entity_count if (self.coupled_by and self.adaptive) else 1
            xp = array_module(t["body_position"])
            key, L = (xp.asarray(a) for a in new_mass_cache(n))
            euler_mode = "body_euler" in t
            euler = t["body_euler"] if euler_mode else xp.zeros((n, 3))
            if euler_mode:  # the angles are the state: the attitude column follows them from t = 0
                e = np.asarray(to_host(euler))
                t["body_attitude"][:] = xp.asarray(euler_to_quat(e[:, ::-1], "321"))
            self.work.append(_Work(t, xp.zeros((n, STATE_SIZE)), xp.zeros((n, s, STATE_SIZE)), xp.zeros(n, np.bool_),
                                   xp.zeros(n), xp.full(n, np.nan), xp.zeros(n), xp.zeros(n, np.int64), key, L,
                                   euler, euler_mode, group, xp.zeros(n), xp.zeros(n, np.int64),
                                   xp.zeros(n, np.int8), xp.zeros(n)))
        for w in self.work:
            for term in self.terms:
                for c in term.columns:
                    if c not in w.table:
                        raise InputError(f"Term {term.name}: column", c,
                                         f"must be a column of every rigid-body table (table {w.table.prefix} "
                                         "lacks it)")
        self._term_args = {id(w): self._fused.args(w.table) for w in self.work} if self.terms else {}
        xp = np if not self.work else array_module(self.work[0].y0)
        self._w, self._c = xp.asarray(self.tableau.weights), self.tableau.c
        for w in self.work:
            self._prepare(world.backend, w)

    def _prepare(self, backend: str, w: _Work) -> None:
        """The launches of one table's step, their arguments gathered once (:class:`ecs.kernels.PreparedRows`);
        what changes from call to call (stage, its node, the frame's end time) goes last."""
        t, tab = w.table, self.tableau
        state = (t["body_position"], t["body_velocity"], t["body_attitude"], t["body_omega"])
        semi = self.method == "semi_implicit_euler"
        w.launch = {
            "pack": PreparedRows(backend, pack_state_rows, pack_state, w.active, *state, w.euler, w.euler_mode, w.y0),
            "stage": PreparedRows(backend, set_stage_rows, set_stage, w.active, w.y0, w.K, self._w, w.h, w.t0, state,
                                  w.euler, w.euler_mode, t["row_time"], (t["body_force"], t["body_torque"])),
            "derivative": PreparedRows(backend, body_derivative_rows, body_derivative, w.active, state, w.euler,
                                       w.euler_mode, t["body_mass"], t["body_com"], t["body_inertia"],
                                       (t["body_force"], t["body_torque"]), self._frame_rate, w.key, w.L, w.K),
            "row_error": PreparedRows(backend, row_error_rows, row_error, w.active, w.y0, w.K, self._w, tab.stages,
                                      w.h, w.euler_mode, self.rtol, self.atol, semi, w.esq, w.ecount,
                                      w.efinite),
            "group_error": PreparedRows(backend, group_error_rows, group_error, w.group, w.active, w.esq, w.ecount,
                                        w.efinite, w.g_err),
            "finish": PreparedRows(backend, finish_step_rows, finish_step, w.active, t["row_status"], t["row_reason"],
                                   w.y0, w.K, (self._w, tab.stages), (w.h, w.h_prop, w.t0, w.attempts),
                                   state, w.euler, w.euler_mode, t["row_time"],
                                   (self.rtol, self.atol, self.adaptive, semi, tab.error_order, self.h_min,
                                    self.max_steps, w.group > 1), w.g_err),
        }
        if self.terms:
            w.launch["terms"] = PreparedRows("cpu", self._add_terms, None, w.active, t["row_time"], *state,
                                             t["body_mass"], t["body_com"], t["body_force"], t["body_torque"],
                                             self._term_args[id(w)])

    def _bind_frame(self, world) -> None:
        """The integration frame: inertial, or the world's :class:`components.rigid.RotatingFrame`.
        In a turning frame the systems that take the frame to be inertial are refused by name: a
        row term that says so (third bodies, drag, radiation pressure: ``Term.inertial``) and a
        field that turns relative to the inertial frame (a term's ``turning_refusal``:
        ``GravitySystem(spin=...)``; a field fixed in the turning frame takes ``spin=0``)."""
        frame = world.resource(RotatingFrame, None)
        rate = np.zeros(3) if frame is None else np.asarray(frame.rate, np.float64)
        if rate.any():
            for s in world.schedule()[Phase.DERIVATIVE]:
                term = s.term(world) if hasattr(s, "term") else None
                if term is not None and term.turning_refusal:
                    what, value, rule = term.turning_refusal
                    raise InputError(what, value, rule.format(frame=frame.name))
                if term is not None and term.inertial:
                    raise InputError(s.name, f"in the turning frame {frame.name!r}",
                                     "acts in an inertial frame only (Term.inertial): integrate these bodies "
                                     "in the inertial frame")
            world.integration_frame = frame.name
        self._frame_rate = to_backend(world.backend, (rate,))[0]

    def _link_terms(self, world) -> None:
        """Fuse the row terms of the DERIVATIVE systems that have no ``process`` (:mod:`systems.dynamics.rigid_terms`)."""
        check_derivatives(world, world.systems)
        self.terms = tuple(s.term(world) for s in world.schedule()[Phase.DERIVATIVE] if not s.launches)
        refuse_modal(self.terms, self.name)
        self._fused = None
        if not self.terms:
            return
        if world.backend == "gpu":
            raise InputError("backend", "gpu", f"row terms ({', '.join(t.name for t in self.terms)}) run on the CPU "
                                               "backend only: their fused kernels have no GPU build yet")
        self._fused = fuse_terms(self.terms, rigid_terms.ROOTS)
        self._add_terms = self._fused.kernels["add_row_terms_rows"]

    def process(self, frame) -> None:
        tab = self.tableau
        t_target = frame.t + frame.dt
        for w in self.work:
            t = w.table
            st = t["row_status"]
            array_module(st).equal(st, int(Status.RUNNING), out=w.active)
            w.attempts[:] = 0
            w.t0[:] = t["row_time"]
            xp = array_module(w.h)               # device work on the GPU backend (CuPy)
            if self.adaptive:
                xp.copyto(w.h_prop, self.h0 if self.h0 else frame.dt, where=xp.isnan(w.h_prop))
                xp.minimum(w.h_prop, xp.subtract(t_target, w.t0), out=w.h)
            else:
                xp.subtract(t_target, w.t0, out=w.h)
            w.launch["pack"](t.row_count)
        while any(bool(array_module(w.active).any(w.active)) for w in self.work):
            for stage in range(tab.stages):
                c = float(self._c[stage])
                for w in self.work:
                    w.launch["stage"](w.table.row_count, stage, c)
                frame.stage = stage
                frame.run_derivatives()
                for w in self.work if self.terms else ():
                    w.launch["terms"](w.table.row_count)
                for w in self.work:
                    w.launch["derivative"](w.table.row_count, stage)
            for w in self.work:
                n = w.table.row_count
                if w.group > 1:
                    w.launch["row_error"](n)
                    w.launch["group_error"](n // w.group)
                w.launch["finish"](n, float(t_target))
            if not self.adaptive:
                break
