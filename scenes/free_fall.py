"""Free fall of a 70 kg skydiver from 4 km (seed 002 §2.4.3, Eq. 1.40–1.43; Appendix A Script 2-3).

No drag, constant weight. Script 2-3 starts the body at ``[4000, 4000, 4000]`` m with a constant
force ``F = −9.81 · 70 · [1, 1, 1]`` N on all three axes ("to test the independence of the vector
components") for ``t ∈ [0, 28.55]`` s, the time to the ground of Eq. 1.41. Here that force is a
:class:`systems.gravity.uniform.UniformGravity` field ``g · axes`` (the body never rotates, so body and
inertial frames coincide as in the script).

The analytic solution the thesis compares with (:func:`analytic`, Eq. 1.42–1.43) uses
``g = 9.8`` m/s² while the script simulates ``g = 9.81``: the MSEs of §2.5 Table 2 (≈ 3.3221 m²
and 2.7171e-2 m²/s²) measure that mismatch, not integration error. :func:`scenes._common.thesis_mse`
computes them exactly as the script does.

Scene parameters (keyword-only): ``method`` (``"rk4"``), ``dt`` [s] (0.001, the step of §2.5),
``t_end`` [s] (28.55), ``record_every`` [frames] (1: every step, as the thesis's MSE needs),
``euler_mode`` (False), ``mass`` [kg] (70), ``height`` [m] (4000, on every axis in ``axes``),
``g`` [m/s²] (9.81, the script's value), ``axes`` (``(1, 1, 1)``: the field is ``−g · axes``).
"""

from __future__ import annotations

import numpy as np

from ecs import InputError
from scenes._common import G_THESIS_ANALYTIC, positive, rigid_scene
from systems.gravity.uniform import UniformGravity

DESCRIPTION = "70 kg skydiver falling 4 km in uniform gravity on all three axes (seed 002 §2.4.3)"

#: g of the thesis's analytic solution [m/s²]; the script simulates 9.81.
G_ANALYTIC = G_THESIS_ANALYTIC


def analytic(t, *, height: float = 4000.0, g: float = G_ANALYTIC, axes=(1.0, 1.0, 1.0)) -> dict[str, np.ndarray]:
    """Eq. 1.42–1.43 on every axis: ``r = h − g t²/2``, ``v = −g t`` → ``{"position", "velocity"}`` [T, 3]."""
    t = np.atleast_1d(np.asarray(t, float))[:, None]
    a = np.asarray(axes, float)
    return {"position": height * a - 0.5 * g * t * t * a, "velocity": -g * t * a}


def build(*, method: str = "rk4", dt: float = 0.001, t_end: float = 28.55, record_every: int | None = 1,
          euler_mode: bool = False, mass: float = 70.0, height: float = 4000.0, g: float = 9.81,
          axes=(1.0, 1.0, 1.0)):
    """The free-fall scene (see the module docstring for the parameters)."""
    a = np.asarray(axes, float)
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise InputError("axes", axes, "must be 3 finite numbers (the field is -g * axes)")
    g = positive("g", g, "m/s^2")
    params = dict(method=method, dt=dt, t_end=t_end, record_every=record_every, euler_mode=bool(euler_mode),
                  mass=mass, height=height, g=g, axes=a.tolist())
    return rigid_scene("free_fall", DESCRIPTION,
                       body=dict(mass=mass, inertia=(1.0, 1.0, 1.0), position=float(height) * a),
                       method=method, dt=dt, t_end=t_end, record_every=record_every, euler_mode=euler_mode,
                       systems=[UniformGravity(-g * a)], record=("body_position", "body_velocity"),
                       final=("body_position", "body_velocity"), params=params)


def reference(params: dict, inputs: dict, t) -> dict[str, np.ndarray]:
    """Closed-form values of the recorded columns (``tumble plot ... validation``), with the g the
    scene simulated (the thesis's own comparison used 9.8 against 9.81: docs/references.md)."""
    a = analytic(t, height=float(params["height"]), g=float(params["g"]), axes=params["axes"])
    return {"body_position": a["position"][:, None, :], "body_velocity": a["velocity"][:, None, :]}
