"""Gravity-gradient torque on rigid bodies (GravitySystem(gradient_torque=True)): the kernel the
multibody links use (systems.gravity_kernels.gradient_torque, seed 001 MBGravityTorque).

References: the torque of a point-mass field summed over a cloud of point masses with the body's
mass properties (exact to O((size/r)²)); and the small-amplitude pitch libration of a body in a
circular orbit, ω = n √(3 (B − A)/C) (Wie, *Space Vehicle Dynamics and Control*, §6.3; the
frequency seed 001's dumbbell shows for a multibody tree).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from components.gravity import PointMass
from components.rigid import rigid_body
from ecs import World
from ecs.attitude import quat_normalize, quat_rotate, quat_rotate_inverse, quat_to_dcm
from systems.gravity_fields import GravitySystem, add_gravity_rows
from systems.gravity_kernels import gravity_args
from systems.integration import Integrator

MU = 3.986004415e14


def test_the_torque_is_the_sum_over_a_point_mass_cloud():
    """8 point masses m/8 at (±a, ±b, ±c) in body axes have the inertia diag(m(b²+c²), ...) about
    their centre; the exact torque of the field about the centre, Σ ρ_i × m_i g(x + ρ_i), equals
    3μ/r⁵ r_b × (I r_b) up to the next order, (size/r)² ≈ 1e-12 here: 1e-8 relative is asserted
    (float64 cancellation in the 8-term sum costs ~1e-9: measured 2e-10 to 1.3e-9)."""
    rng = np.random.default_rng(5)
    src = PointMass(mu=MU)
    for _ in range(5):
        a, b, c, m = 3.0, 1.5, 0.7, 400.0
        pts = np.array([[sa * a, sb * b, sc * c] for sa in (-1, 1) for sb in (-1, 1) for sc in (-1, 1)])
        inertia = np.diag([m * (b * b + c * c), m * (a * a + c * c), m * (a * a + b * b)])
        q = quat_normalize(rng.normal(size=4))
        x = rng.normal(size=3)
        x *= rng.uniform(6.7e6, 4.2e7) / np.linalg.norm(x)
        world_pts = x + quat_rotate(q, pts)
        g = -MU * world_pts / np.linalg.norm(world_pts, axis=1)[:, None] ** 3
        exact = quat_rotate_inverse(q, np.sum(np.cross(world_pts - x, (m / 8) * g), axis=0))
        force, torque = np.zeros((1, 3)), np.zeros((1, 3))
        add_gravity_rows(1, np.zeros(1, np.int8), x[None], q[None], np.array([m]), np.zeros((1, 3)), inertia[None],
                         force, torque, gravity_args(src), np.zeros(1), 0.0, 0.0, np.full((1, 10), np.nan), MU, 0.0, 0.0,
                         0.0)
        assert np.linalg.norm(exact) > 1e-6                          # a real torque, not 0 = 0
        np.testing.assert_allclose(torque[0], exact, rtol=0, atol=1e-8 * np.linalg.norm(exact))
        np.testing.assert_allclose(force[0], m * (-MU * x / np.linalg.norm(x) ** 3), rtol=1e-15)


def test_pitch_libration_in_a_circular_orbit():
    """I = diag(A, B, C) = (100, 300, 350) kg·m², circular orbit at 7000 km in the xy plane, body z
    along the orbit normal, body x (the smallest moment) 0.05 rad off the radial, spinning with the
    orbit: the pitch angle librates at n √(3 (B − A)/C) = 1.309 n. Measured over 3 orbits from the
    zero crossings of the pitch angle (400 samples per orbit): 6.2e-4 below it (the amplitude's
    nonlinear shift alone is θ0²/16 ≈ 2e-4); 2e-3 is asserted, while a lost factor 3 is off by 40 %.
    Without the gradient torque the body just turns with the orbit (no libration)."""
    r0 = 7.0e6
    n = math.sqrt(MU / r0 ** 3)
    inertia = np.diag([100.0, 300.0, 350.0])
    th0 = 0.05
    q0 = np.array([math.cos(th0 / 2), 0.0, 0.0, math.sin(th0 / 2)])
    period = 2 * math.pi / n

    def pitch(gradient: bool):
        w = World("libration")
        w.spawn(*rigid_body(mass=500.0, inertia=inertia, position=(r0, 0.0, 0.0), velocity=(0.0, r0 * n, 0.0),
                            attitude=q0, omega=(0.0, 0.0, n)))
        w.add_system(GravitySystem(PointMass(mu=MU), gradient_torque=gradient))
        w.add_system(Integrator("dp54", rtol=1e-11, atol=1e-9))
        res = w.run(t_end=3 * period, dt=period / 400, record_every=1, record=("body_position", "body_attitude"))
        p = res.trajectories["body_position"][0, :, 0]
        xb = quat_to_dcm(res.trajectories["body_attitude"][0, :, 0])[:, :, 0]   # body x in inertial axes
        radial = p / np.linalg.norm(p, axis=1)[:, None]
        return np.arctan2(np.cross(radial, xb)[:, 2], np.sum(radial * xb, axis=1)), p

    th, _ = pitch(True)
    t = np.arange(len(th)) * period / 400
    s = np.flatnonzero(np.sign(th[1:]) != np.sign(th[:-1]))
    tz = t[s] - th[s] * (t[s + 1] - t[s]) / (th[s + 1] - th[s])     # linear interpolation of each crossing
    measured = math.pi / np.mean(np.diff(tz))
    expect = n * math.sqrt(3 * (300.0 - 100.0) / 350.0)
    assert len(tz) >= 6 and abs(np.max(np.abs(th)) - th0) < 2e-3
    assert measured == pytest.approx(expect, rel=2e-3)
    th_free, _ = pitch(False)
    assert np.ptp(th_free) < 1e-6          # no gradient torque: the body turns with the orbit, θ stays θ0
