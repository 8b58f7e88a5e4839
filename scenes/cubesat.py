"""Free rotation of an asymmetric top: the tumbling 3U CubeSat (seed 002 §2.4.2, Eq. 1.35–1.39;
Appendix A Scripts 2-2 and 3-2).

Inertia: a 10 × 10 × 34 cm, 3 kg prism and two 1.6 mm × 82 mm × 329 mm, 132 g panels on ±Y
(box formulas Eq. 1.37–1.39 and the parallel-axis theorem), computed by
:func:`scenes.assets.mass_properties.cubesat_3u`: ``diag(0.036115, 0.033781, 0.0073342)`` kg m²
(printed 0.0361, 0.0338, 0.0073).

Initial rate: ``ω_x0 = 0`` and ``ω_y0, ω_z0`` solve the angular-momentum ellipsoid
``Σ I_i² ω_i² = H²`` (Eq. 1.35) and the energy ellipsoid ``Σ I_i ω_i² = 2E`` (Eq. 1.36) — a
linear system in ``ω_y², ω_z²`` (Script 2-2's ``linsolve``), see :func:`initial_rate`. For
H = 1 J s and E = 20 J this gives ``[0, 28.12, 42.55]`` rad/s (Script 3-2 line 1855; the text's
``[0, 24.04, 52.81]`` is a misprint, see seeds/README.md). The condition
``2E I_3 < H² < 2E I_1`` (here 0.293 < 1 < 1.44 J² s²) guarantees that the ellipsoids intersect.

What a run shows: |H| and E conserved, the body rate on the intersection curve of the two
ellipsoids (periodic in the body), the inertial rate never closing a cycle.

Scene parameters (keyword-only): ``method`` (``"rk4"``), ``dt`` [s] (0.001, Script 3-2's
``MaxStep``), ``t_end`` [s] (1, as Script 2-2), ``record_every`` [frames] (1), ``euler_mode``
(False; the 3-2-1 angles pass their singularity while tumbling, so expect the Euler mode to lose
accuracy), ``angular_momentum`` H [J s] (1), ``energy`` E [J] (20), ``disperse_attitude`` (True:
each sample starts at a uniformly random attitude, which leaves H and E unchanged; in the Euler
mode the draw is written to ``body_euler``, the integrated state, and ``body_euler`` is recorded
too because the engine derives ``body_attitude`` from it only from the first integrator stage on,
so the t = 0 record of ``body_attitude`` still shows the authored identity),
``omega_spread`` — per-axis 3σ spread of the initial rate [rad/s] (0: off, keeps H and E exact),
``rtol``/``atol``.
"""

from __future__ import annotations

import math

import numpy as np

from ecs import InputError
from ecs.scene import Dispersion, normal, uniform_quaternion
from scenes._common import RIGID_COLUMNS, adaptive_tolerances, attitude_columns, check_spread, positive, rigid_scene
from scenes.assets.mass_properties import cubesat_3u
from ecs.attitude import quat_to_euler

DESCRIPTION = "tumbling 3U CubeSat (asymmetric top): H and E conserved, rate on the ellipsoids' intersection"


def initial_rate(inertia, *, angular_momentum: float = 1.0, energy: float = 20.0) -> np.ndarray:
    """``ω₀ = [0, ω_y, ω_z]`` on both ellipsoids (seed 002 Eq. 1.35–1.36, Script 2-2).

    Args:
        inertia: principal moments [kg m²], shape [3] (or a diagonal (3, 3) tensor).
        angular_momentum: |H| [J s]; energy: rotational kinetic energy E [J].

    Returns:
        Body rate [rad/s], shape [3].

    Raises:
        InputError: when no real solution with ω_x = 0 exists (H² outside (2E I_z, 2E I_y) or
            the reverse ordering).
    """
    i = np.asarray(inertia, float)
    if i.shape == (3, 3):
        i = np.diag(i)
    h = positive("angular_momentum", angular_momentum, "J s")
    e = positive("energy", energy, "J")
    a = np.array([[i[1] ** 2, i[2] ** 2], [i[1], i[2]]])
    sq = np.linalg.solve(a, np.array([h * h, 2.0 * e]))
    if not np.all(sq > 0):
        raise InputError("angular_momentum", angular_momentum,
                         f"with energy = {energy!r} J there is no rate with ω_x = 0 on both ellipsoids "
                         f"(need H² between 2E·I_y = {2 * e * i[1]:.4g} and 2E·I_z = {2 * e * i[2]:.4g} J² s²)")
    return np.array([0.0, math.sqrt(sq[0]), math.sqrt(sq[1])])


def _euler_draw(draw_q):
    """A uniform-attitude draw expressed as this project's Euler-mode angles (roll, pitch, yaw)."""

    def draw(rng):
        yaw, pitch, roll = quat_to_euler(draw_q(rng), "321")
        return np.array([roll, pitch, yaw])

    return draw


def build(*, method: str = "rk4", dt: float = 0.001, t_end: float = 1.0, record_every: int | None = 1,
          euler_mode: bool = False, angular_momentum: float = 1.0, energy: float = 20.0,
          disperse_attitude: bool = True, omega_spread: float = 0.0, rtol: float | None = None,
          atol: float | None = None):
    """The tumbling-CubeSat scene (see the module docstring for the parameters)."""
    rtol, atol = adaptive_tolerances(method, rtol=rtol, atol=atol)
    mp = cubesat_3u()
    omega0 = initial_rate(mp.inertia, angular_momentum=angular_momentum, energy=energy)
    spread = check_spread("omega_spread", omega_spread)
    disp = []
    if disperse_attitude:
        if euler_mode:  # the Euler angles are the integrated state: disperse them, consistently
            disp.append(Dispersion(None, "body_euler", _euler_draw(uniform_quaternion()), name="attitude0"))
        else:
            disp.append(Dispersion(None, "body_attitude", uniform_quaternion(), name="attitude0"))
    if spread > 0:
        disp.append(Dispersion(None, "body_omega", normal(omega0, [spread] * 3), name="omega0"))
    params = dict(method=method, dt=dt, t_end=t_end, record_every=record_every, euler_mode=bool(euler_mode),
                  angular_momentum=angular_momentum, energy=energy, disperse_attitude=bool(disperse_attitude),
                  omega_spread=spread, rtol=rtol, atol=atol)
    return rigid_scene("cubesat", DESCRIPTION, body=dict(mass=mp.mass, inertia=mp.inertia, omega=omega0),
                       method=method, dt=dt, t_end=t_end, record_every=record_every, euler_mode=euler_mode,
                       dispersions=disp, rtol=rtol, atol=atol, record=attitude_columns(euler_mode),
                       final=RIGID_COLUMNS, params=params)
