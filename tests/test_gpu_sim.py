"""CPU ↔ GPU: the same kernel sources run through numba's CUDA simulator agree with the CPU path.

The simulator must be enabled before numba.cuda is first imported, so the comparison runs in a
subprocess with NUMBA_ENABLE_CUDASIM=1. Real-device tests carry the ``gpu`` marker.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from sim_helpers import run_on_device, run_simulated

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent(
    """
    import json, numpy as np
    from components.loads import AppliedLoad, LoadSeries
    from components.rigid import rigid_body
    from ecs import World
    from systems.gravity.uniform import UniformGravity
    from systems.dynamics.integration import Integrator
    from systems.dynamics.loads import ApplyLoads

    def run(backend, method, euler_mode):
        w = World()
        b = w.spawn(*rigid_body(mass=3.0, inertia=[[2.0, 0.1, 0.0], [0.1, 3.0, 0.2], [0.0, 0.2, 4.0]],
                                velocity=(1.0, 0.5, 0.0), omega=(0.3, -0.2, 1.0), com=(0.1, -0.2, 0.05),
                                euler_mode=euler_mode))
        k = w.add_resource(LoadSeries()).add([0.0, 0.05, 0.1], [[0, 0, 0], [1.0, 2.0, 0.0], [0, 0, 3.0]])
        w.spawn(AppliedLoad(body=b, kind=0, frame=0, point=np.array([0.3, 0.0, 0.1]),
                            vector=np.array([0.0, 1.0, 0.0]), series=k))
        w.spawn(AppliedLoad(body=b, kind=1, frame=1, vector=np.array([0.0, 0.0, 0.2])))
        w.add_system(ApplyLoads())
        w.add_system(UniformGravity((0.0, 0.0, -1.6)))
        w.add_system(Integrator(method, rtol=1e-8, atol=1e-10))
        w.compile(samples=2, backend=backend, overrides={(b, "body_mass"): np.array([3.0, 5.0])})
        r = w.run(t_end=0.1, dt=0.05, final=("body_position", "body_velocity", "body_attitude", "body_omega"))
        return {c: v.tolist() for c, v in r.finals.items()}

    out = {}
    for method, euler_mode in (("rk4", False), ("dp54", False), ("semi_implicit_euler", True)):
        cpu, gpu = run("cpu", method, euler_mode), run("gpu", method, euler_mode)
        out[method] = max(float(np.max(np.abs(np.array(cpu[c]) - np.array(gpu[c])))) for c in cpu)
    print(json.dumps(out))
    """
)


def test_cuda_simulator_matches_cpu():
    diffs = run_simulated(SCRIPT)
    # The simulator runs the very same Python sources in double precision; the only differences
    # allowed are fused-multiply-add/ordering effects of the compiled CPU build: a few ulps of O(1).
    for method, d in diffs.items():
        assert d < 1e-12, (method, d)


@pytest.mark.gpu
def test_real_gpu_matches_cpu():  # pragma: no cover - needs a device
    for method, d in run_on_device(SCRIPT).items():
        assert d < 1e-10, (method, d)
