"""Shared pieces of the single-rigid-body scenes (seed 002 §2.4, seed 003 validation case).

Every built-in rigid-body scene (:mod:`scenes.precession`, :mod:`scenes.cubesat`,
:mod:`scenes.free_fall`, :mod:`scenes.parabola`, :mod:`scenes.gunns`) is one body, an optional
field or applied load, and an :class:`systems.dynamics.integration.Integrator`. :func:`rigid_scene`
assembles that world and its :class:`ecs.scene.Scene`, so the scene files hold only their physics
and parameters.

Also here: :func:`thesis_mse`, the error measure of seed 002 §2.5 (Tables 1–3) exactly as its
Appendix A scripts compute it, used by the benchmark and by anyone reproducing the tables.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

import numpy as np

from components.rigid import rigid_body
from ecs import InputError, Scene, World
from ecs.errors import positive_number
from ecs.scene import Dispersion
from systems.dynamics.integration import ALIASES, TABLEAUX, Integrator

#: The state columns of a rigid body, recorded by default.
RIGID_COLUMNS: tuple[str, ...] = ("body_position", "body_velocity", "body_attitude", "body_omega")


def attitude_columns(euler_mode: bool) -> tuple[str, ...]:
    """Columns to record for a rotating body: attitude and rate, plus ``body_euler`` in Euler mode.

    In the Euler mode the integrated state is ``body_euler``; ``body_attitude`` is derived from it
    at every integrator stage, so its t = 0 record shows the authored quaternion even when
    ``body_euler`` was dispersed (see the engine note in the scene docs): record both.
    """
    return ("body_attitude", "body_omega") + (("body_euler",) if euler_mode else ())


def positive(name: str, value, unit: str) -> float:
    """``value`` as a finite float > 0, or an :class:`InputError` naming ``name``
    (:func:`ecs.errors.positive_number` with the scenes' argument order)."""
    return positive_number(value, name, unit)


def check_spread(name: str, value) -> float:
    """A 3-sigma spread: finite and >= 0 (0 turns its dispersion off), or an :class:`InputError`."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise InputError(name, value, "must be a finite 3-sigma spread >= 0") from None
    if not (math.isfinite(x) and x >= 0.0):
        raise InputError(name, value, "must be a finite 3-sigma spread >= 0")
    return x


#: g [m/s²] of seed 002's analytic solutions (Eq. 1.42–1.45); its scripts simulate 9.81.
G_THESIS_ANALYTIC = 9.8


def method_name(method: str) -> str:
    """Canonical integrator name (aliases resolved), or an :class:`InputError` listing the choices."""
    name = ALIASES.get(str(method).lower(), str(method).lower())
    if name not in TABLEAUX:
        raise InputError("integrator method", method, f"must be one of {sorted(TABLEAUX)}")
    return name


def body_components(body: dict[str, Any], *, euler_mode: bool = False, field: str = "body",
                    allow_nonphysical_inertia: bool = False) -> tuple:
    """Components of one rigid body: :func:`components.rigid.rigid_body` with all its checks.

    ``allow_nonphysical_inertia=True`` keeps every check except the triangle inequality of the
    principal moments: the tensor must still be finite, symmetric and positive definite (what the
    equations of motion need), but need not belong to a real mass distribution. Seed 003's
    GUNNS/JEOD validation body needs this: ``Izz = 6e7 > Ixx + Iyy = 5e7`` kg m² is impossible
    for matter (``I1 + I2 − I3 = 2∫r3² dm >= 0``), yet harmless to the equations, and neither
    GUNNS nor JEOD checks it.
    """
    if not allow_nonphysical_inertia:
        return rigid_body(euler_mode=bool(euler_mode), field=field, **body)
    kw = dict(body)
    inertia = np.array(kw.pop("inertia"), dtype=float)
    if inertia.shape == (3,):
        inertia = np.diag(inertia)
    if inertia.shape != (3, 3) or not np.all(np.isfinite(inertia)):
        raise InputError(f"{field}.inertia", np.asarray(inertia).tolist(), "must be a finite (3, 3) tensor [kg m^2]")
    scale = float(np.max(np.abs(inertia)))
    if float(np.max(np.abs(inertia - inertia.T))) > 1e-9 * scale:
        raise InputError(f"{field}.inertia", inertia.tolist(), "must be symmetric")
    moments = np.linalg.eigvalsh(0.5 * (inertia + inertia.T))
    if not moments[0] > 16 * np.finfo(float).eps * moments[2]:
        raise InputError(f"{field}.inertia", inertia.tolist(), f"must be positive definite (principal moments "
                                                               f"{moments.tolist()})")
    comps = rigid_body(euler_mode=bool(euler_mode), field=field, inertia=np.full(3, moments[2]), **kw)
    comps[1].inertia = 0.5 * (inertia + inertia.T)  # the MassProps component
    return comps


def adaptive_tolerances(method: str, *, rtol: float | None, atol: float | None,
                        default: tuple[float, float] = (1e-10, 1e-12)) -> tuple[float, float]:
    """A scene's ``rtol``/``atol``: ``default`` when not given; refused when given for a fixed-step
    ``method`` (only an adaptive one reads them, :attr:`systems.dynamics.integration.Integrator.adaptive`)."""
    if not Integrator(method).adaptive:
        for name, v in (("rtol", rtol), ("atol", atol)):
            if v is not None:
                raise InputError(name, v, f"does nothing with method={method!r} (a fixed-step method): leave it "
                                          "out, or choose an adaptive method")
    return (default[0] if rtol is None else rtol), (default[1] if atol is None else atol)


def rigid_scene(name: str, description: str, *, body: dict[str, Any], method: str, dt: float, t_end: float,
                record_every: int | None, euler_mode: bool = False, systems: Iterable = (),
                loads: Sequence = (), dispersions: Sequence[Dispersion] = (), rtol: float = 1e-10,
                atol: float = 1e-12, record: Sequence[str] = RIGID_COLUMNS, final: Sequence[str] = RIGID_COLUMNS,
                params: dict[str, Any] | None = None, body_name: str = "body",
                allow_nonphysical_inertia: bool = False) -> Scene:
    """A one-body scene: ``rigid_body(**body)``, extra DERIVATIVE systems, loads and an integrator.

    Args:
        name, description: the scene's name and one-line description.
        body: keyword arguments of :func:`components.rigid.rigid_body` (mass, inertia, position, ...).
        method: integrator method (see :class:`systems.dynamics.integration.Integrator`).
        dt: frame length [s]; t_end: end time [s]; record_every: trajectory decimation [frames].
        euler_mode: integrate 3-2-1 Euler angles instead of the quaternion (seed 002 Eq. 1.21).
        systems: extra systems (gravity, :class:`systems.dynamics.loads.ApplyLoads`, ...).
        loads: callables ``load(body_entity) -> component tuple`` spawned as load entities.
        dispersions: per-sample draws; an entity given as ``None`` means the body.
        rtol, atol: tolerances of the adaptive methods.
        record, final: columns sampled into trajectories / saved at the end.
        params: the build parameters (stored with the run).
        body_name: the body's entity name.
        allow_nonphysical_inertia: accept a symmetric positive-definite inertia that violates the
            triangle inequality (see :func:`body_components`).
    """
    method = method_name(method)
    positive("dt", dt, "s")
    if not (math.isfinite(float(t_end)) and float(t_end) >= 0.0):
        raise InputError("t_end", t_end, "must be a non-negative finite time [s]")
    if record_every is not None and (int(record_every) != record_every or record_every < 1):
        raise InputError("record_every", record_every, "must be a whole number of frames >= 1 (or None)")
    world = World(name)
    if allow_nonphysical_inertia:
        world.waive_rule("body_inertia", "triangle_inequality")
    b = world.spawn(*body_components(body, euler_mode=euler_mode, field=body_name,
                                     allow_nonphysical_inertia=allow_nonphysical_inertia), name=body_name)
    for k, make in enumerate(loads):
        world.spawn(*make(b), name=f"load{k}")
    for s in systems:
        world.add_system(s)
    world.add_system(Integrator(method, rtol=rtol, atol=atol))
    disp = [Dispersion(b if d.entity is None else d.entity, d.column, d.draw, d.name, d.unit) for d in dispersions]
    return Scene(name=name, description=description, world=world, t_end=float(t_end), dt=float(dt),
                 record_every=None if record_every is None else int(record_every), record=tuple(record),
                 final=tuple(final), dispersions=disp, params=dict(params or {}))


def thesis_mse(simulated: np.ndarray, analytic_fn, t_end: float) -> float:
    """Mean squared error as seed 002 §2.5 computes it (Appendix A, Scripts 2-3 and 2-4).

    The scripts evaluate the analytic solution on ``t = linspace(0, t_end, length(simu.time))`` —
    *not* on the solver's own output times — and compare it with the simulated ``N × 3`` matrix
    element by element; MATLAB's ``immse`` is the mean over all ``3N`` squared differences. With a
    uniform output grid (fixed step, or ``MaxStep`` binding) both grids coincide.

    Args:
        simulated: simulated values at the output times, shape [N, 3].
        analytic_fn: ``analytic_fn(t) -> [N, 3]`` closed form at the times ``t`` [s].
        t_end: end of the span [s].

    Returns:
        ``mean((simulated − analytic(linspace(0, t_end, N)))²)`` over all elements.
    """
    sim = np.asarray(simulated, float)
    t = np.linspace(0.0, float(t_end), sim.shape[0])
    return float(np.mean((sim - np.asarray(analytic_fn(t), float)) ** 2))
