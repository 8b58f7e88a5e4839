"""Equations of motion: mass properties changed at run time refresh the cached factorisation."""

from __future__ import annotations

import numpy as np

from components.loads import AppliedLoad
from components.rigid import rigid_body
from ecs import Phase, System, World
from systems.dynamics.integration import Integrator
from systems.dynamics.loads import ApplyLoads


class _DoubleInertiaAt(System):
    """Doubles every body's inertia once, at the start of the frame beginning at ``t_switch``."""

    phase = Phase.SCHEDULED
    writes = ("body_inertia",)

    def __init__(self, t_switch):
        self.t_switch = t_switch

    def bind(self, world):
        self.t = world.table_with("body_inertia")

    def process(self, frame):
        if abs(frame.t - self.t_switch) < 1e-12:
            self.t["body_inertia"][:] *= 2.0


def test_inertia_change_at_run_time_takes_effect():
    # constant body torque τ about the principal z axis from rest: ω_z = τ t / I_z, then after the
    # switch ω_z = τ t_s / I_z + τ (t - t_s) / (2 I_z). The body spins about z only (no gyroscopic
    # coupling), so RK4 integrates these linear ramps exactly up to round-off.
    tau, iz, t_s, t_end = 0.3, 1.5, 0.5, 1.0
    for com in ((0.0, 0.0, 0.0), (0.0, 0.0, 0.25)):  # uncoupled and coupled (offset along z) paths
        w = World()
        b = w.spawn(*rigid_body(mass=2.0, inertia=(1.0, 1.2, iz), com=com))
        w.spawn(AppliedLoad(body=b, kind=1, frame=0, vector=np.array([0.0, 0.0, tau])))
        w.add_system(ApplyLoads())
        w.add_system(_DoubleInertiaAt(t_s))
        w.add_system(Integrator("rk4"))
        w.compile()
        r = w.run(t_end=t_end, dt=0.1, final=("body_omega", "body_inertia"))
        expected = tau * t_s / iz + tau * (t_end - t_s) / (2 * iz)
        np.testing.assert_allclose(r.finals["body_omega"][0, 0], [0.0, 0.0, expected], rtol=0, atol=1e-13)
        assert r.finals["body_inertia"][0, 0, 2, 2] == 2 * iz
