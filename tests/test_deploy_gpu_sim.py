"""Deployment on the GPU backend under numba's CUDA simulator agrees with the CPU backend.

The sample is ``deploy-srp`` (scenes/examples/deploy_srp.py): a box probe with a user force (solar
radiation pressure, exaggerated 1000× so that it matters), so the phase kernels are the copies
linked against the generated right-hand side of the world's row terms (ecs.terms.fuse_terms).
The GPU run launches the CUDA twins of the fly, collide and contact span kernels (one thread per
listed row, :meth:`systems.deployment.DeployContext.launch`) from 0 to 3000 s: flight, the first
impact at 418 s, 30 Stronge collisions, contact motion and settling.

Expected agreement: bit-identical. The simulator runs the very same Python sources in double
precision; the CPU build has no fast-math flags (ecs.kernels: no contraction into FMAs, no
reassociation) and its ``math`` calls reach the same libm as Python's. A 1e-12 bound is asserted
on every final value and on the first collision (measured: 0.0 everywhere). The bounce sequence
is chaotic, so a single wrongly translated operation anywhere in the three kernels shows at the
end as an O(1) difference, not a small one.

A separate check compiles the same GPU twins to PTX with NVVM (no device needed): see
tests/test_gpu_compile.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
T_END = 3000.0
FINALS = ("body_position", "body_velocity", "body_attitude", "body_omega", "probe_first_impact_time",
          "probe_collisions", "probe_bounces", "probe_phase", "row_status", "probe_settle_time")
EVENT_FIELDS = ("time", "vertex", "velocity_after", "omega_after")

SCRIPT = textwrap.dedent(
    f"""
    import collections, json, sys
    import numpy as np
    import ecs.kernels as K
    from scenes.examples.deploy_srp import build

    launches = collections.Counter()
    def _spy(orig):
        def spy(row, nargs):
            py = getattr(row, "py_func", getattr(row, "py", None))
            launches[py.__name__ + "@" + py.__module__.split(".")[0].split("_")[0]] += 1
            return orig(row, nargs)
        return spy
    K.gpu_row_kernel = _spy(K.gpu_row_kernel)
    K.gpu_span_kernel = _spy(K.gpu_span_kernel)

    scene = build(exaggerate=1000.0, samples_spread=False)
    w = scene.world
    w.compile(samples=1, backend=sys.argv[1])
    res = w.run(t_end={T_END}, dt=scene.dt, final={FINALS!r})
    out = {{"finals": {{c: np.asarray(v, float).ravel().tolist() for c, v in res.finals.items()}},
           "events": {{f: np.asarray(res.events[f])[0, 0].tolist() for f in {EVENT_FIELDS!r}}},
           "launches": dict(launches)}}
    print(json.dumps(out))
    """
)


def _run(backend: str, simulator: bool) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if simulator:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    else:
        env.pop("NUMBA_ENABLE_CUDASIM", None)
    proc = subprocess.run([sys.executable, "-c", SCRIPT, backend], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def both():
    return _run("cpu", False), _run("gpu", True)


def test_the_gpu_path_ran_every_phase_kernel_with_the_generated_terms(both):
    cpu, gpu = both
    assert cpu["launches"] == {}
    names = gpu["launches"]
    # every phase's span kernel, each the copy linked against the generated term module
    for phase in ("_fly_rows", "_collide_rows", "_contact_rows"):
        assert names.get(phase + "@tumble", 0) >= 1, names
    assert not any(k.endswith("@systems") for k in names), names      # no unlinked default kernel


def test_cuda_simulator_matches_cpu_through_landing(both):
    cpu, gpu = both
    f = cpu["finals"]
    assert f["row_status"] == [2.0] and f["probe_phase"] == [3.0]     # SETTLED, ENDED: every phase ran
    assert 418.0 < f["probe_first_impact_time"][0] < 419.0 and f["probe_collisions"][0] >= 10
    for c in FINALS:
        np.testing.assert_allclose(gpu["finals"][c], f[c], rtol=1e-12, atol=1e-12, err_msg=c)
    for k in EVENT_FIELDS:       # the first collision: its time, vertex and outcome
        np.testing.assert_allclose(gpu["events"][k], cpu["events"][k], rtol=1e-12, atol=1e-12, err_msg=k)


def test_a_deployment_on_a_cuda_device_is_refused_until_its_loop_runs_there(monkeypatch):
    """Outside the simulator, the deployment loop refuses backend='gpu' by name when it binds,
    before any work (no silent CPU fallback): its row selection and end states still run on the
    host. (This machine has no device, so the world is compiled on the CPU and the loop is bound
    as if it had one.)"""
    import systems.deployment as deployment
    from ecs import InputError
    from scenes.examples.deploy_srp import build

    w = build().world
    w.compile(samples=1)
    loop = next(s for s in w.systems if isinstance(s, deployment.DeploymentLoop))
    monkeypatch.setattr(deployment, "cuda_simulated", lambda: False)
    monkeypatch.setattr(w, "backend", "gpu")
    with pytest.raises(InputError, match="backend.*CUDA simulator only"):
        loop.bind(w)
