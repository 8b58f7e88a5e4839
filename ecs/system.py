"""Systems, phases and the scheduler.

A :class:`System` is an ``esper.Processor`` that declares the columns it ``reads``, ``writes`` and
``accumulates`` (adds into, like forces that several systems sum) and the :class:`Phase` it runs in
(Trick's job classes, as used by the JEOD seeds):

* ``DERIVATIVE`` — at every integrator stage (gravity, contact springs, applied loads, drag);
* ``SCHEDULED``  — once per frame, in dependency order (broadphase, the integrator, settling);
* ``EVENT``      — when a pipeline localises an event (impulsive collision, phase switch): a
  mode loop (:mod:`systems.deployment.modes`) hands each EVENT system the rows with an event pending;
* ``MODE``       — a per-row mode of a mode loop (flight, contact motion, a user's anchor): the
  loop launches it over the rows in it.

A world refuses to run an EVENT or MODE system that no system of it runs (:func:`check_events`).

A DERIVATIVE system takes part in a pipeline in one of two ways, and a world refuses to run one
that no pipeline of it can call (:func:`check_derivatives`):

* **launch** — its ``process`` adds into whole columns (``body_force``) at every stage of a
  pipeline that steps all rows together (:class:`systems.dynamics.integration.Integrator`);
* **row term** — its :meth:`System.term` returns an :class:`ecs.terms.Term`, a row kernel that a
  pipeline stepping each row on its own (per-row adaptive steps, events, modes: probe deployment)
  calls inside its right-hand side, and that the Integrator applies at every stage after the
  launching systems (:mod:`systems.dynamics.rigid_terms`). A term-only system therefore takes part in
  every pipeline; a ``process``-only one in the Integrator's only.

Within a phase the scheduler orders systems so that every writer of a column runs before its
readers (accumulators: all adders before any reader), keeping registration order otherwise. It
refuses, naming both systems, a read-before-write cycle and two systems that both ``write`` (not
accumulate) one column in one phase.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Sequence

import esper

from .errors import ScheduleError

if TYPE_CHECKING:  # pragma: no cover
    from .terms import JointLaw, SampleTerm, Term
    from .world import Frame


class Phase(enum.IntEnum):
    """When a system runs within a frame."""

    DERIVATIVE = 0
    SCHEDULED = 1
    EVENT = 2
    MODE = 3


class System(esper.Processor):
    """Base class of every system.

    Subclasses set the class attributes and implement :meth:`process`. ``bind`` is called once
    after ``World.compile`` so a system can look up its tables and compile what it needs.

    Attributes:
        phase: when the system runs.
        reads: columns read.
        writes: columns overwritten (one writer per column per phase).
        accumulates: columns added into (any number of accumulating systems per column).
        after: systems (types or names) that must run before this one, besides data dependencies.
    """

    phase: Phase = Phase.SCHEDULED
    #: how this system calls the world's DERIVATIVE systems, if it does: "launch" (their
    #: ``process`` at every stage) or "terms" (their :meth:`term` fused into its row kernels)
    derivative_pipeline: str | None = None
    #: runs the world's EVENT and MODE systems (a mode loop, :mod:`systems.deployment.modes`)
    runs_events: bool = False
    #: a "terms" pipeline that refuses every DERIVATIVE system without a term (probe deployment:
    #: its rows are the world's only bodies); otherwise a process-only system is accepted when a
    #: "launch" pipeline of the world calls it (it acts on the bodies that pipeline steps)
    terms_only: bool = False
    #: a DERIVATIVE system whose forces couple the rows of one sample (facet contact between the
    #: sample's bodies): integrators must then step those rows together (one step size, one error
    #: norm, one accept/reject per sample)
    couples_sample_rows: bool = False
    #: a "terms" pipeline that steps a sample's rows together and calls the world's sample terms
    #: (:meth:`sample_term`, :class:`ecs.terms.SampleTerm`) at every stage (the multibody solve)
    takes_sample_terms: bool = False
    #: a "terms" pipeline that steps the joints of articulated trees and calls the world's joint
    #: laws (:meth:`joint_law`, :class:`ecs.terms.JointLaw`) at every stage (the multibody solve)
    takes_joint_laws: bool = False
    #: this system can run a *streaming active set* (:meth:`ecs.world.World.compile` with
    #: ``active``): it keeps per-row state only in table columns or resets it in :meth:`refill`,
    #: and steps each row to its own frame end (:meth:`ecs.world.Frame.row_ends`)
    streams: bool = False
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    accumulates: tuple[str, ...] = ()
    after: tuple = ()

    @property
    def name(self) -> str:
        return type(self).__name__

    def bind(self, world) -> None:
        """Called after compile; look up tables/resources here. Default: nothing."""

    def declare_events(self, events) -> None:
        """Declare this system's event fields on the world's :class:`ecs.events.EventLog`
        (``events.declare``); called by ``World.compile`` before the log is allocated. Default: none."""

    def check_inputs(self, world, overrides: dict, start: int, count: int) -> None:
        """Refuse per-sample inputs this system cannot run (before a batch creates its store).

        Called by the batch runner with the compiled schema probe ``world`` and the dispersed
        values ``overrides[(entity, column)]`` (shape ``[count, *column shape]``) of samples
        ``start:start + count``; columns not dispersed keep their authored value (read them from
        ``world``). Raise :class:`~ecs.errors.InputError` naming the sample. Default: nothing.
        """

    def refill(self, world, slots) -> None:
        """Rows of the sample slots ``slots`` (index array) now hold new samples (streaming active
        set, ``streams = True``): their columns are the new samples' packed values and their engine
        columns are reset; reset whatever per-row state this system keeps outside the columns.
        Default: nothing."""

    def frame_span(self, step: float) -> int:
        """How many frames of ``step`` [s] this SCHEDULED system may take in one :meth:`process`
        call (``frame.span`` of them, ``frame.dt`` their length; default 1).

        A system whose results do not depend on where frames end (rows stepped with dense output,
        such as the deployment's mode loop) may return more: the world then runs such frames as
        one whenever every SCHEDULED system allows it, no frame inside is recorded and, in a
        streaming active set, no slot is refilled inside (:meth:`ecs.world.World.run`). Fewer
        frames mean fewer synchronisations of the loop's workers (docs/design.md §8.36)."""
        return 1

    def term(self, world) -> "Term | None":
        """The row term this DERIVATIVE system adds in per-row pipelines (:mod:`ecs.terms`), or
        ``None`` (default: it only takes part through :meth:`process`)."""
        return None

    def sample_term(self, world) -> "SampleTerm | None":
        """The sample term (:class:`ecs.terms.SampleTerm`) this DERIVATIVE system adds in pipelines
        that step a sample's rows together and take one (``takes_sample_terms``), or ``None``
        (default)."""
        return None

    def joint_law(self, world) -> "JointLaw | None":
        """The joint law (:class:`ecs.terms.JointLaw`) this DERIVATIVE system adds at the joints
        of articulated trees, in pipelines that step joints (``takes_joint_laws``), or ``None``
        (default)."""
        return None

    def compile_units(self) -> list:
        """The CPU kernel compiles this bound system will need (:class:`ecs.kernels.CompileUnit`):
        a cold start compiles them before the first frame, shared between processes
        (:func:`ecs.warm.warm_kernels`); a kernel not listed compiles on its first launch as
        before. Default: none."""
        return []

    def process(self, frame: "Frame") -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def launches(self) -> bool:
        """True when this system implements :meth:`process` (not only a row term)."""
        return type(self).process is not System.process


def check_derivatives(world, systems: Sequence[System]) -> None:
    """Refuse DERIVATIVE systems that no pipeline of the world would call (module docstring).

    Raises:
        ScheduleError: naming the system and what it lacks, in one line.
    """
    derivs = [s for s in systems if s.phase == Phase.DERIVATIVE]
    if not derivs:
        return
    pipes = [s for s in systems if s.derivative_pipeline]
    if not pipes:
        raise ScheduleError(
            f"system {derivs[0].name} (phase DERIVATIVE) would never run: no system of world {world.name!r} "
            f"integrates (add an integrator, e.g. systems.dynamics.integration.Integrator, or a deployment loop)")
    launching = [p for p in pipes if p.derivative_pipeline == "launch"]
    for s in derivs:
        has_term = s.term(world) is not None
        has_sample_term = s.sample_term(world) is not None
        if s.joint_law(world) is not None:
            for p in pipes:
                if not p.takes_joint_laws:
                    raise ScheduleError(
                        f"system {s.name} (phase DERIVATIVE) cannot take part in {p.name}: it is a joint law "
                        f"(ecs.terms.JointLaw), and {p.name} steps no joints (use "
                        f"systems.multibody.dynamics.MultibodyDynamics)")
            continue
        for p in pipes:
            if p.derivative_pipeline == "terms" and has_sample_term and not p.takes_sample_terms:
                raise ScheduleError(
                    f"system {s.name} (phase DERIVATIVE) cannot take part in {p.name}: it couples the rows of a "
                    f"sample (a sample term), and {p.name} steps each row on its own")
            if (p.derivative_pipeline == "terms" and not has_term and not has_sample_term
                    and (p.terms_only or not launching)):
                raise ScheduleError(
                    f"system {s.name} (phase DERIVATIVE) cannot take part in {p.name}: it steps each row on its "
                    f"own and adds DERIVATIVE systems as row terms; give {s.name} a term() returning an "
                    f"ecs.terms.Term (example: scenes/examples/deploy_srp.py)")
            if p.derivative_pipeline == "launch" and not s.launches and not has_term:
                raise ScheduleError(
                    f"system {s.name} (phase DERIVATIVE) cannot take part in {p.name}: it has neither a "
                    f"process() adding into body_force/body_torque nor a term() (ecs.terms.Term)")


def check_events(world, systems: Sequence[System]) -> None:
    """Refuse EVENT and MODE systems when no system of the world runs them (``runs_events``: a
    mode loop). Raises :class:`ScheduleError` naming the first such system, in one line."""
    if any(s.runs_events for s in systems):
        return
    for s in systems:
        if s.phase in (Phase.EVENT, Phase.MODE):
            raise ScheduleError(
                f"system {s.name} (phase {s.phase.name}) would never run: no system of world {world.name!r} runs "
                f"events and modes (a mode loop, e.g. systems.deployment.loop.DeploymentLoop)")


def _matches(ref, system: System) -> bool:
    return (isinstance(ref, type) and isinstance(system, ref)) or ref == system.name


def order_systems(systems: Sequence[System]) -> list[System]:
    """Order the systems of one phase by data dependencies (stable w.r.t. registration order).

    Raises:
        ScheduleError: write-write conflict or a dependency cycle, naming both systems.
    """
    systems = list(systems)
    n = len(systems)
    writer: dict[str, int] = {}
    for i, s in enumerate(systems):
        for col in s.writes:
            if col in writer:
                raise ScheduleError(
                    f"write-write conflict: systems {systems[writer[col]].name} and {s.name} both write "
                    f"column '{col}' in phase {s.phase.name}; let one of them write it, or declare both "
                    f"as 'accumulates' if they add into it")
            writer[col] = i
    for i, s in enumerate(systems):
        for col in s.accumulates:
            if col in writer:
                raise ScheduleError(
                    f"write-write conflict: system {systems[writer[col]].name} writes column '{col}' "
                    f"that system {s.name} accumulates into, in phase {s.phase.name}")
    producers: dict[str, list[int]] = {}
    for i, s in enumerate(systems):
        for col in tuple(s.writes) + tuple(s.accumulates):
            producers.setdefault(col, []).append(i)
    edges: list[set[int]] = [set() for _ in range(n)]  # i -> j: i before j
    why: dict[tuple[int, int], str] = {}
    for j, s in enumerate(systems):
        for col in s.reads:
            for i in producers.get(col, ()):
                if i != j:
                    edges[i].add(j)
                    why.setdefault((i, j), f"{systems[j].name} reads '{col}' that {systems[i].name} writes")
        for ref in s.after:
            for i, o in enumerate(systems):
                if i != j and _matches(ref, o):
                    edges[i].add(j)
                    why.setdefault((i, j), f"{s.name} declares after={o.name}")
    indeg = [0] * n
    for i in range(n):
        for j in edges[i]:
            indeg[j] += 1
    ready = [i for i in range(n) if indeg[i] == 0]
    out: list[int] = []
    while ready:
        ready.sort()
        i = ready.pop(0)
        out.append(i)
        for j in sorted(edges[i]):
            indeg[j] -= 1
            if indeg[j] == 0:
                ready.append(j)
    if len(out) < n:
        left = [i for i in range(n) if i not in out]
        # find one edge inside the cycle to name both systems
        for i in left:
            for j in edges[i]:
                if j in left:
                    raise ScheduleError(
                        f"dependency cycle between systems {systems[i].name} and {systems[j].name}: "
                        f"{why[(i, j)]}, and the reverse dependency also holds")
        raise ScheduleError("dependency cycle among systems " + ", ".join(systems[i].name for i in left))
    return [systems[i] for i in out]


def schedule(systems: Sequence[System]) -> dict[Phase, list[System]]:
    """Group systems by phase and order each phase (see :func:`order_systems`); MODE systems keep
    their registration order and may write the same columns (each row is in one mode)."""
    return {ph: ([s for s in systems if s.phase == ph] if ph == Phase.MODE
                 else order_systems([s for s in systems if s.phase == ph])) for ph in Phase}
