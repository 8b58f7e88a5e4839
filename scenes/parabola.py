"""Parabolic flight of a kicked football (seed 002 §2.4.4, Eq. 1.44–1.45; Appendix A Script 2-4).

No drag. Script 2-4 kicks a 1 kg body (the simulator's default mass: the script's force
``[0, 0, −9.81]`` N is its weight) at ``28 m/s`` and 45° in the YZ plane,
``v₀ = [0, 28 cos 45°, 28 sin 45°]`` m/s, for ``t ∈ [0, 4.04]`` s, the time of flight of
Eq. 1.44. Here the weight is a :class:`systems.gravity.uniform.UniformGravity` field ``[0, 0, −g]``.

As for the free fall, the analytic solution (:func:`analytic`, Eq. 1.44–1.45) uses ``g = 9.8``
and the script ``g = 9.81``; §2.5 Table 3's MSEs (≈ 4.4416e-4 m² and 1.8137e-4 m²/s²) are the
mean over all three components of that mismatch (:func:`scenes._common.thesis_mse`).

Scene parameters (keyword-only): ``method`` (``"rk4"``), ``dt`` [s] (0.001), ``t_end`` [s]
(4.04), ``record_every`` [frames] (1), ``euler_mode`` (False), ``mass`` [kg] (1), ``speed``
[m/s] (28), ``elevation_deg`` [deg] (45), ``g`` [m/s²] (9.81).
"""

from __future__ import annotations

import math

import numpy as np

from scenes._common import G_THESIS_ANALYTIC, positive, rigid_scene
from systems.gravity.uniform import UniformGravity

DESCRIPTION = "ball kicked at 28 m/s and 45 deg: ballistic parabola in uniform gravity (seed 002 §2.4.4)"

#: g of the thesis's analytic solution [m/s²]; the script simulates 9.81.
G_ANALYTIC = G_THESIS_ANALYTIC


def launch_velocity(speed: float = 28.0, elevation_deg: float = 45.0) -> np.ndarray:
    """``[0, s cos e, s sin e]`` [m/s] (Script 2-4's ``iVelocity_b``)."""
    e = math.radians(float(elevation_deg))
    return np.array([0.0, speed * math.cos(e), speed * math.sin(e)])


def analytic(t, *, speed: float = 28.0, elevation_deg: float = 45.0, g: float = G_ANALYTIC) -> dict[str, np.ndarray]:
    """Eq. 1.44–1.45: ``r = v₀ t + a t²/2``, ``v = v₀ + a t`` with ``a = [0, 0, −g]`` → [T, 3] each."""
    t = np.atleast_1d(np.asarray(t, float))[:, None]
    v0 = launch_velocity(speed, elevation_deg)
    acc = np.array([0.0, 0.0, -g])
    return {"position": v0 * t + 0.5 * acc * t * t, "velocity": v0 + acc * t}


def build(*, method: str = "rk4", dt: float = 0.001, t_end: float = 4.04, record_every: int | None = 1,
          euler_mode: bool = False, mass: float = 1.0, speed: float = 28.0, elevation_deg: float = 45.0,
          g: float = 9.81):
    """The parabola scene (see the module docstring for the parameters)."""
    g = positive("g", g, "m/s^2")
    params = dict(method=method, dt=dt, t_end=t_end, record_every=record_every, euler_mode=bool(euler_mode),
                  mass=mass, speed=speed, elevation_deg=elevation_deg, g=g)
    return rigid_scene("parabola", DESCRIPTION,
                       body=dict(mass=mass, inertia=(1.0, 1.0, 1.0), velocity=launch_velocity(speed, elevation_deg)),
                       method=method, dt=dt, t_end=t_end, record_every=record_every, euler_mode=euler_mode,
                       systems=[UniformGravity((0.0, 0.0, -g))], record=("body_position", "body_velocity"),
                       final=("body_position", "body_velocity"), params=params)


def reference(params: dict, inputs: dict, t) -> dict[str, np.ndarray]:
    """Closed-form values of the recorded columns (``tumble plot ... validation``), with the
    simulated g."""
    a = analytic(t, speed=float(params["speed"]), elevation_deg=float(params["elevation_deg"]), g=float(params["g"]))
    return {"body_position": a["position"][:, None, :], "body_velocity": a["velocity"][:, None, :]}
