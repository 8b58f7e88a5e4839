"""Deployment on the GPU backend under numba's CUDA simulator agrees with the CPU backend.

The scene is ``deploy-srp`` (scenes/examples/deploy_srp.py): a box probe with a user force (solar
radiation pressure, exaggerated 1000× so that it matters), so the phase kernels are the copies
linked against the generated right-hand side of the world's row terms (ecs.terms.fuse_terms).
Three samples from 0 to 3000 s: the first lands (flight, the first impact at 418 s, Stronge
collisions with the granular restitution law of components.contact_params.low_gravity_regolith,
contact motion, settling), the second and third are thrown outward at 2 and 1.5 m/s
and escape, so the index lists hold rows in different modes. The GPU run streams them through two
slots (``World.compile(active=2)``): the third sample enters the slot the second leaves, refilled
on the device (ecs.kernels.set_rows); the CPU run keeps all three in its tables.

The GPU run is the device-side loop (systems.deployment.modes.ModeLoop._device_passes): index lists built
on the device by compaction kernels, the fly, collide and contact span kernels launched over them
(one thread per listed row, :meth:`systems.deployment.loop.DeployContext.launch`), the end rules and
finals as a kernel. It runs in the simulator's strict mode (``TUMBLE_CUDASIM_STRICT=1``,
:class:`ecs.kernels.SimDeviceArray`): every column and per-row array is a device array that
host numpy and CPU kernels cannot touch, so a host step left in the loop fails here as it
would on a device. Trajectories are recorded at every frame end (dense output).

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
          "probe_collisions", "probe_bounces", "probe_phase", "row_status", "probe_settle_time", "probe_end_time",
          "probe_latitude", "probe_longitude", "probe_slope")
EVENT_FIELDS = ("time", "vertex", "velocity_after", "omega_after")

SCRIPT = textwrap.dedent(
    f"""
    import collections, json, sys
    import numpy as np
    import ecs.kernels as K
    from components.contact_params import ContactParams, low_gravity_regolith
    from scenes.examples.deploy_srp import build
    from systems.deployment.loop import DeploymentLoop

    launches = collections.Counter()
    def _spy(orig):
        def spy(row, nargs):
            py = getattr(row, "py_func", getattr(row, "py", None))
            launches[py.__name__ + "@" + py.__module__.split(".")[0].split("_")[0]] += 1
            return orig(row, nargs)
        return spy
    for name in ("gpu_row_kernel", "gpu_span_kernel", "gpu_listed_span_kernel", "gpu_compact_kernel"):
        setattr(K, name, _spy(getattr(K, name)))

    scene = build(exaggerate=1000.0, samples_spread=False)
    w = scene.world
    w.compile(samples=1)
    probe = int(w.table_with("probe_shape").entities[0])
    x0 = np.asarray(w.table_with("probe_shape")["body_position"])[0]
    up = x0 / np.linalg.norm(x0)
    active = int(sys.argv[2]) if sys.argv[2] != "0" else None
    # the granular contact law (restitution by impact speed) on the terrain: its GPU twin runs too
    pair = ContactParams(0.5, 0.6, regolith=low_gravity_regolith(restitution=0.5)).row()
    w.compile(samples=3, backend=sys.argv[1], active=active,
              overrides={{(probe, "body_velocity"): np.array([[0.0, 0.0, 0.0], 2.0 * up, 1.5 * up]),
                          (probe, "probe_terrain_pair"): np.tile(pair, (3, 1))}})
    loop = next(s for s in w.systems if isinstance(s, DeploymentLoop))
    res = w.run(t_end={T_END}, dt=scene.dt, record_every=1, record=("body_position",),
                final={FINALS!r})
    kinds = sorted({{type(v).__name__ for v in w.table_with("probe_shape").columns.values()}})
    out = {{"finals": {{c: np.asarray(v, float).ravel().tolist() for c, v in res.finals.items()}},
           "events": {{f: np.asarray(res.events[f])[0, 0].tolist() for f in {EVENT_FIELDS!r}}},
           "trajectory": np.asarray(res.trajectories["body_position"], float).ravel().tolist(),
           "launches": dict(launches), "launch_count": loop.launch_count, "columns": kinds}}
    print(json.dumps(out))
    """
)


def _run(backend: str, simulator: bool, active: int = 0) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    env.pop("TUMBLE_CUDASIM_STRICT", None)
    if simulator:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
        env["TUMBLE_CUDASIM_STRICT"] = "1"
    else:
        env.pop("NUMBA_ENABLE_CUDASIM", None)
    proc = subprocess.run([sys.executable, "-c", SCRIPT, backend, str(active)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def both():
    return _run("cpu", False), _run("gpu", True, active=2)


def test_the_gpu_path_ran_on_device_lists_with_the_generated_terms(both):
    cpu, gpu = both
    assert cpu["launches"] == {}
    assert gpu["columns"] == ["SimDeviceArray"]          # every column a device array
    names = gpu["launches"]
    # every phase's span kernel over device lists, each the copy linked against the generated term module
    for phase in ("_fly_rows", "_collide_rows", "_contact_rows"):
        assert names.get(phase + "@tumble", 0) >= 1, names
    assert not any(k.endswith("@systems") and "_rows" in k for k in names if k.split("@")[0] != "_end_row"), names
    # index lists and the end rules built on the device: the mode test, the running test, the end rules
    for test in ("_in_mode@systems", "_running@systems", "_end_row@tumble"):
        assert names.get(test, 0) >= 1, names
    count = gpu["launch_count"]
    passes = count["end"]
    assert passes > 0 and all(count[k] == 2 * passes for k in ("fly", "collide", "contact")), count


def test_cuda_simulator_matches_cpu_through_landing_and_escape(both):
    cpu, gpu = both
    f = cpu["finals"]
    assert f["row_status"] == [2.0, 3.0, 3.0] and f["probe_phase"] == [3.0] * 3  # SETTLED, ESCAPED x2, all ENDED
    assert 418.0 < f["probe_first_impact_time"][0] < 419.0 and f["probe_collisions"][0] >= 10
    assert f["probe_collisions"][1:] == [0.0, 0.0]
    for c in FINALS:
        np.testing.assert_allclose(gpu["finals"][c], f[c], rtol=1e-12, atol=1e-12, err_msg=c)
    for k in EVENT_FIELDS:       # the first collision: its time, vertex and outcome
        np.testing.assert_allclose(gpu["events"][k], cpu["events"][k], rtol=1e-12, atol=1e-12, err_msg=k)
    np.testing.assert_allclose(gpu["trajectory"], cpu["trajectory"], rtol=1e-12, atol=1e-12, equal_nan=True)


def test_strict_simulator_refuses_host_work_on_device_arrays():
    """What the strict mode refuses (the test above relies on it): host numpy on a device array or
    on what indexing it returns, a CPU kernel; and what it allows: element access, views, copies."""
    import numba

    from ecs.kernels import SimDeviceArray, copy_into, to_host

    a = np.arange(6.0).view(SimDeviceArray)
    for bad in (lambda: a == 1.0, lambda: np.flatnonzero(a), lambda: a[np.array([0, 2])].sum(),
                lambda: a[1:4] * 2.0, lambda: numba.njit(lambda x: x[0])(a), lambda: a.min()):
        with pytest.raises(TypeError):
            bad()
    assert a[2] == 2.0 and a.reshape(2, 3)[1, 0] == 3.0 and isinstance(a[1:3], SimDeviceArray)
    host = to_host(a)
    host[0] = 7.0                       # a copy: the device array is untouched
    assert type(host) is np.ndarray and a[0] == 0.0
    copy_into(a, host)
    assert a[0] == 7.0
