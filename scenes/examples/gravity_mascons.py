"""Add your own gravity field without touching the engine: a mascon model.

A mascon model represents a body's gravity as point masses ("mass concentrations") at fixed
positions of the body frame. Examples are the lumps a gravity-science team fits under a lander's
site, or the two lobes of a contact binary. Each mascon k at ``r_k`` with ``μ_k = G m_k`` adds::

    U += μ_k / |r − r_k|,        g += −μ_k (r − r_k) / |r − r_k|³

The pattern for any field (a fitted model, a tabulated field with your own interpolation):

1. **A kernel.** A numba kernel ``(p, x, y, z) -> (U, gx, gy, gz)`` reads its parameters from the
   float64 array ``p`` (:func:`mascon_field`).
2. **A source.** A :class:`components.gravity.UserField` holds the kernel, the parameters and the
   field's GM (:func:`mascons`).
3. **Use it like any source.**
   - Give it to a deployment's target (``dataclasses.replace(body, gravity=mascons(...))``).
   - Give it to a :class:`systems.gravity.fields.GravitySystem` for rigid bodies and, as a row term,
     for the links of articulated trees.
   - Evaluate it with :func:`systems.gravity.kernels.evaluate`.

   Each pipeline links its kernels against yours, on the CPU and on the GPU. The field has no
   gradient, so a ``gradient_torque`` asks for a built-in source.

``tests/test_user_gravity.py`` checks the field in each pipeline against a closed form: a circular
orbit between two mascons, and a radial fall onto a sphere.

Run it: ``tumble run scenes/examples/gravity_mascons.py -n 20``. A box lands on a 250 m sphere
whose gravity is a central mascon plus a buried one under the landing site.
"""

import dataclasses
import math

import numpy as np
from numba import njit

from components.gravity import G, UserField
from scenes.mission import box_probe, deployment, release_above, small_body


@njit(cache=True)
def mascon_field(p, x, y, z):
    """U [m²/s²] and g [m/s²] at (x, y, z) of the mascons ``p = (x_k, y_k, z_k, μ_k)`` per k, flattened."""
    u = 0.0
    gx = 0.0
    gy = 0.0
    gz = 0.0
    for k in range(p.shape[0] // 4):
        dx = x - p[4 * k]
        dy = y - p[4 * k + 1]
        dz = z - p[4 * k + 2]
        r2 = dx * dx + dy * dy + dz * dz
        r = math.sqrt(r2)
        mu = p[4 * k + 3]
        u += mu / r
        f = mu / (r2 * r)
        gx -= f * dx
        gy -= f * dy
        gz -= f * dz
    return u, gx, gy, gz


def mascons(positions, mu, *, name: str = "mascons") -> UserField:
    """A :class:`UserField` of point masses at ``positions`` [m] (n × 3, field frame) with GM ``mu``
    [m³/s²] (n values); its centre of mass is the GM-weighted mean position."""
    pos = np.asarray(positions, dtype=float).reshape(-1, 3)
    m = np.asarray(mu, dtype=float).ravel()
    if m.shape != (pos.shape[0],) or not np.all(m > 0.0):
        from ecs import InputError

        raise InputError("mascons.mu", np.asarray(mu).tolist(), f"must be {pos.shape[0]} positive GM values [m^3/s^2]")
    params = np.column_stack([pos, m]).ravel()
    return UserField(mascon_field, params, mu=float(m.sum()), center=(m[:, None] * pos).sum(0) / m.sum(), name=name)


def build(*, radius: float = 250.0, density: float = 2000.0, buried: float = 0.1, depth: float = 60.0,
          altitude: float = 40.0):
    """A box lander released over a sphere of ``radius`` [m] and bulk ``density`` [kg/m³], whose
    gravity is a central mascon plus a ``buried`` fraction of its mass ``depth`` [m] below the
    landing site (latitude 0, longitude 0)."""
    mu = G * density * 4.0 / 3.0 * math.pi * radius ** 3
    body = small_body("sphere", radii=(radius, radius, radius), gm=mu, period_h=6.0, gravity="point_mass",
                      resolution=48)
    field = mascons([[0.0, 0.0, 0.0], [radius - depth, 0.0, 0.0]], [mu * (1.0 - buried), mu * buried])
    body = dataclasses.replace(body, gravity=field)
    probe = box_probe((0.3, 0.28, 0.2), mass=10.0, level=0)
    release = release_above(body, latitude=0.0, longitude=0.0, altitude=altitude, position_sigma3=3.0)
    return deployment("gravity-mascons", body, probe, release, restitution=0.5, friction=0.6,
                      description="box lander over a sphere with a buried mascon (a user gravity field)",
                      params=dict(radius=radius, density=density, buried=buried, depth=depth, altitude=altitude))
