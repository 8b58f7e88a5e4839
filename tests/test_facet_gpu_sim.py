"""CPU ↔ GPU: the facet-contact kernels run through numba's CUDA simulator and agree with the CPU path.

The simulator must be enabled before numba.cuda is first imported, so the comparison runs in a
subprocess with NUMBA_ENABLE_CUDASIM=1 (as tests/test_gpu_sim.py does).
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
    from components.contact import (Grounds, PairInteractions, PlaneGround, SphereGround, SpringInteraction,
                                    contact_surface, line_facet, point_facet)
    from components.rigid import rigid_body
    from ecs import World
    from systems.facets.contact import FacetContact
    from systems.gravity.uniform import UniformGravity
    from systems.dynamics.integration import Integrator

    def run(backend, broadphase, law="momentum", method="rk4"):
        w = World()
        inter = w.add_resource(PairInteractions())
        inter.register("steel", "steel", SpringInteraction(k=3000.0, c=50.0, mu=0.3, law=law))
        inter.register("steel", "dirt", SpringInteraction(k=5000.0, c=80.0, mu=0.5, mode="clamp", law=law))
        g = w.add_resource(Grounds())
        g.add(PlaneGround(point=(0.0, 0.0, -0.8), normal=(0.0, 0.0, 1.0), material="dirt"))
        g.add(SphereGround(center=(0.0, 0.0, -1001.0), radius=1000.0, material="dirt"))
        a = w.spawn(*rigid_body(mass=50.0, inertia=[10.0, 12.0, 14.0], omega=(0.1, 0.5, -0.2)), contact_surface())
        b = w.spawn(*rigid_body(mass=80.0, inertia=[20.0, 20.0, 30.0], position=(1.7, 0.3, 0.1),
                                velocity=(-1.5, 0.0, 0.2), omega=(0.0, 0.3, 0.4)), contact_surface())
        w.spawn(line_facet(a, radius=0.4, length=1.2, axis=(1.0, 0.2, 0.0), material="steel"))
        w.spawn(point_facet(a, radius=0.3, point=(0.0, 0.5, 0.0), material="steel"))
        w.spawn(point_facet(b, radius=0.6, material="steel"))
        w.add_system(FacetContact(broadphase=broadphase))
        w.add_system(UniformGravity((0.0, 0.0, -9.81)))
        # dp54 at rtol 1e-4: the branch and the coupled error norm are what is compared; at the
        # default tolerance the simulator took 111 s for this run (13 s now, measured)
        w.add_system(Integrator(method, rtol=1e-4, atol=1e-6) if method == "dp54" else Integrator(method))
        v2 = np.array([[-1.5, 0.0, 0.2], [-2.5, 0.1, 0.0]])
        w.compile(samples=2, backend=backend, overrides={(b, "body_velocity"): v2})
        r = w.run(t_end=0.3, dt=0.01, final=("body_position", "body_velocity", "body_attitude", "body_omega",
                                              "contact_force"))
        out = {c: v.tolist() for c, v in r.finals.items()}
        out["contact_time"] = np.nan_to_num(r.events["contact_time"], nan=-1.0).tolist()
        out["event_count"] = r.event_count.tolist()
        return out

    out = {}
    for bp in (True, False):
        cpu, gpu = run("cpu", bp), run("gpu", bp)
        out[str(bp)] = max(float(np.max(np.abs(np.array(cpu[c]) - np.array(gpu[c])))) for c in cpu)
        out["force" + str(bp)] = float(np.abs(np.array(cpu["contact_force"])).max())
    # the JEOD-compatible law's own branch, under adaptive steps with the sample's bodies coupled
    # (one error norm per sample), and the contact events
    cpu, gpu = run("cpu", True, "jeod", "dp54"), run("gpu", True, "jeod", "dp54")
    out["dp54"] = max(float(np.max(np.abs(np.array(cpu[c]) - np.array(gpu[c])))) for c in cpu)
    out["forcejeod"] = float(np.abs(np.array(cpu["contact_force"])).max())
    out["events"] = [cpu["event_count"], gpu["event_count"]]
    print(json.dumps(out))
    """
)


def test_cuda_simulator_matches_cpu():
    out = run_simulated(SCRIPT, timeout=900)
    assert out["forceTrue"] > 10.0 and out["forceFalse"] > 10.0  # contacts happened
    # same sources, same order of operations; the simulator runs them as Python floats (no FMA, no
    # fastmath contraction): measured 1e-10 on forces of ~1e3 N, i.e. 1e-13 relative
    assert out["True"] < 1e-9 and out["False"] < 1e-9
    # the JEOD law with dp54 (coupled rows, grouped error norm) and the contact start/end events: same on both
    assert out["forcejeod"] > 10.0 and out["dp54"] < 1e-9 and out["events"][0] == out["events"][1] and min(out["events"][0]) > 0


@pytest.mark.gpu
def test_real_gpu_matches_cpu():  # pragma: no cover - needs a device
    out = run_on_device(SCRIPT, timeout=900)
    assert out["True"] < 1e-8 and out["False"] < 1e-8  # device FMA and libm differ by ulps, over 30 steps
    # adaptive steps may choose other step sizes from ulp-level differences: agreement to about the
    # local error tolerance (rtol 1e-4 of O(1) states), not to round-off (a bound set from the
    # tolerance, not yet measured on a device)
    assert out["dp54"] < 1e-3 and out["events"][0] == out["events"][1]
