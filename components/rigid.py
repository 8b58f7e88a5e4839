"""Rigid-body components: state, mass properties, force/torque accumulators, Euler-angle mode, and
the check of a mass and inertia tensor (:func:`validate_mass_properties`).

Conventions, fixed here for the whole project:

* **One schema for every rigid body**: a free body, a deployed probe (with a
  :class:`components.probe.ProbeShape`) and a multibody link (:class:`MassProps` only: its state is
  its joint's) carry these columns. The state is in the world's **integration frame**
  (``World.integration_frame``, the column frame ``"integration"``): inertial for the rigid-body
  integrator and the multibody solve; the uniformly rotating target frame for a deployment
  (seed 004 eq 2.1, :mod:`components.deploy`). Below, "inertial" means that frame.

* **Quaternions are scalar-first** ``q = (w, x, y, z)``. ``body_attitude`` rotates body-frame
  components into inertial components: ``v_I = q ⊗ (0, v_B) ⊗ q*`` (``q_inertial_from_body``).
* ``body_omega`` is the angular velocity of the body w.r.t. the inertial frame, in body axes.
* The state is carried at the body **reference point** (seed 003, GUNNS): ``body_position`` and
  ``body_velocity`` are the inertial position and velocity of that point. ``body_com`` is the CoM
  offset from the reference point in body axes; zero makes the reference point the CoM.
* ``body_force`` is the resultant applied force, inertial frame, with its line of action through
  the reference point; ``body_torque`` is the resultant moment about the reference point, in body
  axes (a force F_B at body point r adds ``r × F_B``). Systems *accumulate* into both; the
  integrator zeroes them before each stage.
"""

from __future__ import annotations

import math

import numpy as np

from ecs import column, component
from ecs.attitude import check_quaternion, dcm_to_euler, quat_to_dcm
from ecs.errors import InputError
from ecs.rules import INERTIA_RTOL, physical_inertia, positive, unit_quaternion

#: A principal moment below this multiple of machine epsilon times the largest one is numerically
#: zero (eigvalsh is accurate to about eps * |I|), so the tensor is not positive definite.
_PD_EPS_FACTOR = 16.0


@component("body")
class RigidState:
    """6-DoF state of a rigid body at its reference point."""

    position: np.ndarray = column("m", shape=3, frame="integration", doc="reference-point position")
    velocity: np.ndarray = column("m/s", shape=3, frame="integration", doc="reference-point velocity")
    attitude: np.ndarray = column("1", shape=4, frame="body->integration", default=[1.0, 0.0, 0.0, 0.0],
                                  doc="unit quaternion, scalar-first, rotating body components into the "
                                      "integration frame", check=unit_quaternion())
    omega: np.ndarray = column("rad/s", shape=3, frame="body",
                               doc="angular velocity w.r.t. the integration frame, body axes")


@component("body")
class MassProps:
    """Mass properties; may change at run time (the integrator refactors its mass matrix then)."""

    mass: float = column("kg", default=1.0, doc="mass", check=positive("kg"))
    com: np.ndarray = column("m", shape=3, frame="body", doc="centre of mass relative to the reference point")
    inertia: np.ndarray = column("kg m^2", shape=(3, 3), frame="body", default=np.eye(3),
                                 doc="inertia tensor about the CoM (off-diagonals = -products of inertia)",
                                 check=physical_inertia())


@component("body")
class Wrench:
    """Force and torque accumulators, summed by DERIVATIVE systems at every integrator stage."""

    force: np.ndarray = column("N", shape=3, frame="inertial", doc="resultant force through the reference point")
    torque: np.ndarray = column("N m", shape=3, frame="body", doc="resultant moment about the reference point")


@component("body")
class EulerAttitude:
    """Integrate attitude as 3-2-1 Euler angles (seed 002 Eq. 1.21) instead of a quaternion.

    The angles are roll φ, pitch θ, yaw ψ of the ZYX (yaw-pitch-roll) sequence: the body frame is
    the inertial frame rotated by ψ about z, then θ about the new y, then φ about the new x.
    ``body_attitude`` is recomputed from them at every stage. Eq. 1.21 is singular at θ = ±90°:
    this mode exists so users can see that singularity; quaternions are the default.
    """

    euler: np.ndarray = column("rad", shape=3, frame="body->inertial", doc="(roll φ, pitch θ, yaw ψ), 3-2-1 sequence")


def validate_mass_properties(mass, inertia, *, field: str = "mass_properties") -> tuple[float, np.ndarray]:
    """Check that a mass and an inertia tensor describe a physical rigid body.

    Rules: mass finite and > 0; inertia a finite (3, 3) matrix, symmetric to a relative tolerance of
    :data:`ecs.rules.INERTIA_RTOL` (1e-9 of its largest entry), positive definite, and its principal moments
    obey the triangle inequality ``I3 <= I1 + I2`` (each moment at most the sum of the other two,
    relative tolerance 1e-9 of the largest) which every real mass distribution satisfies because
    ``I1 + I2 - I3 = 2 ∫ r3² dm >= 0``.

    Args:
        mass: total mass [kg].
        inertia: inertia tensor about the CoM [kg m^2], shape (3, 3).
        field: name of the quantity in error messages (``"body_inertia of entity 3"``).

    Returns:
        ``(mass, inertia)`` as a float and a symmetrised float64 (3, 3) array.

    Raises:
        InputError: naming ``field.mass`` or ``field.inertia``, the value and the broken rule.
    """
    try:
        m = float(mass)
    except (TypeError, ValueError):
        raise InputError(f"{field}.mass", mass, "must be a finite number > 0 [kg]") from None
    if not math.isfinite(m) or m <= 0.0:
        raise InputError(f"{field}.mass", mass, "must be a finite number > 0 [kg]")
    try:
        inertia_arr = np.array(inertia, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{field}.inertia", inertia, "must be a (3, 3) matrix of numbers [kg m^2]") from None
    if inertia_arr.shape != (3, 3):
        raise InputError(f"{field}.inertia", inertia, "must be a (3, 3) matrix [kg m^2]")
    if not np.all(np.isfinite(inertia_arr)):
        raise InputError(f"{field}.inertia", inertia_arr.tolist(), "must be finite (no NaN or inf)")
    scale = float(np.max(np.abs(inertia_arr)))
    asym = float(np.max(np.abs(inertia_arr - inertia_arr.T)))
    if asym > INERTIA_RTOL * scale:
        raise InputError(
            f"{field}.inertia",
            inertia_arr.tolist(),
            f"must be symmetric (max |I - I^T| = {asym:.3g} > {INERTIA_RTOL:g} * max |I|)",
        )
    sym = 0.5 * (inertia_arr + inertia_arr.T)
    moments = np.linalg.eigvalsh(sym)
    if moments[2] <= 0.0 or moments[0] <= _PD_EPS_FACTOR * np.finfo(np.float64).eps * moments[2]:
        raise InputError(
            f"{field}.inertia",
            sym.tolist(),
            f"must be positive definite (principal moments {moments.tolist()})",
        )
    if moments[2] - (moments[0] + moments[1]) > INERTIA_RTOL * moments[2]:
        raise InputError(
            f"{field}.inertia",
            sym.tolist(),
            f"principal moments {moments.tolist()} violate the triangle inequality "
            f"(each must be <= the sum of the other two, rel tol {INERTIA_RTOL:g})",
        )
    return m, sym


class RotatingFrame:
    """Resource: integrate the world's rigid bodies in a frame turning uniformly at ``rate`` about
    the inertial origin (seed 004 eq 2.1: the rotating frame of a small body). The two frames agree
    at t = 0; ``body_position``/``body_velocity`` are then relative to the turning frame, in its
    axes, ``body_attitude`` rotates body into frame components and ``body_omega`` is the body's rate
    relative to the frame (body axes), and the rigid-body integrator adds the Coriolis, centrifugal
    and ``ω × Ω`` terms of seed 004 eqs 2.2–2.5 (at the reference point; Ω̇ = 0). Forces
    (``body_force``) are in frame axes. A deployment integrates its probes in its target's frame
    (``components.deploy.DeployTarget.rotation``) the same way.

    Args:
        rate: Ω [rad/s], shape (3,), in the frame's (and, constant, the inertial) axes.
        name: the frame's name, written to the store's ``frame`` attributes (default ``"rotating"``).
    """

    def __init__(self, rate, *, name: str = "rotating"):
        w = np.asarray(rate, dtype=np.float64)
        if w.shape != (3,) or not np.all(np.isfinite(w)):
            raise InputError("RotatingFrame.rate", rate, "must be 3 finite numbers [rad/s]")
        if not (isinstance(name, str) and name.isidentifier()):
            raise InputError("RotatingFrame.name", name, "must be a name (letters, digits, _)")
        self.rate, self.name = w, name


def rigid_body(*, mass: float, inertia, position=(0.0, 0.0, 0.0), velocity=(0.0, 0.0, 0.0),
               attitude=(1.0, 0.0, 0.0, 0.0), omega=(0.0, 0.0, 0.0), com=(0.0, 0.0, 0.0),
               euler_mode: bool = False, field: str = "body") -> tuple:
    """Validated components of one rigid body, ready for ``world.spawn(*rigid_body(...))``.

    Args:
        mass: mass [kg], > 0.
        inertia: inertia about the CoM [kg m^2], a (3, 3) tensor or the 3 principal moments.
        position, velocity: reference-point state, inertial frame [m], [m/s].
        attitude: unit quaternion, scalar-first, body -> inertial.
        omega: angular velocity, body axes [rad/s].
        com: CoM offset from the reference point, body axes [m].
        euler_mode: integrate 3-2-1 Euler angles (seed 002) instead of the quaternion.
        field: name used in error messages.

    Raises:
        InputError: non-positive mass, bad inertia (asymmetric, not positive definite, violating
            the triangle inequality), non-unit quaternion, NaN anywhere.
    """
    inertia = np.asarray(inertia, dtype=float)
    if inertia.shape == (3,):
        inertia = np.diag(inertia)
    validate_mass_properties(mass, inertia, field=field)
    for name, v, n in (("position", position, 3), ("velocity", velocity, 3), ("omega", omega, 3), ("com", com, 3)):
        a = np.asarray(v, dtype=float)
        if a.shape != (n,):
            raise InputError(f"{field}.{name}", np.asarray(v).tolist(), f"must be a vector of {n} numbers")
        if not np.all(np.isfinite(a)):
            raise InputError(f"{field}.{name}", a.tolist(), "must be finite (no NaN or inf)")
    q = np.asarray(attitude, dtype=float)
    check_quaternion(q, field=f"{field}.attitude")
    q = q / np.linalg.norm(q)
    comps = [RigidState(position=np.array(position, float), velocity=np.array(velocity, float), attitude=q,
                        omega=np.array(omega, float)),
             MassProps(mass=float(mass), com=np.array(com, float), inertia=inertia), Wrench()]
    if euler_mode:
        yaw, pitch, roll = dcm_to_euler(quat_to_dcm(q), "321")
        comps.append(EulerAttitude(euler=np.array([roll, pitch, yaw])))
    return tuple(comps)
