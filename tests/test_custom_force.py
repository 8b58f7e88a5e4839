"""The extensibility example: a user-written drag system against the closed form."""

import numpy as np

from scenes.examples import custom_force


def test_linear_drag_matches_closed_form():
    b, m, v0 = 0.5, 2.0, np.array([3.0, 0.0, -1.0])
    scene = custom_force.build(b=b, mass=m, v0=tuple(v0), t_end=5.0, dt=0.01)
    scene.world.compile()
    r = scene.world.run(t_end=scene.t_end, dt=scene.dt, record_every=scene.record_every, record=scene.record,
                        final=scene.final)
    t = r.times
    k = b / m
    v_exact = v0[None, :] * np.exp(-k * t)[:, None]
    x_exact = v0[None, :] * (1 - np.exp(-k * t))[:, None] / k
    # RK4 at h = 0.01 s on a linear ODE: local error ~ (k h)^5 / 120 ~ 1e-15; global ~ 1e-12 over 500 steps
    np.testing.assert_allclose(r.trajectories["body_velocity"][0, :, 0], v_exact, rtol=0, atol=1e-11)
    np.testing.assert_allclose(r.trajectories["body_position"][0, :, 0], x_exact, rtol=0, atol=1e-11)
    assert abs(r.finals["body_velocity"][0, 0, 0] - 3.0 * np.exp(-k * 5.0)) < 1e-11
