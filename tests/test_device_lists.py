"""The GPU backend's index lists, built on the device (ecs.kernels.compact_rows, DeviceRows), under
numba's CUDA simulator in strict mode (ecs.kernels.SimDeviceArray: host numpy cannot touch them).

Checked against plain numpy on the same random table: the rows a mode is launched over
(``systems.deployment.modes.in_mode``), the running rows, the pass guard's FAILED flags, and a span kernel
launched over a device list, whose threads past the list's device count must do nothing. The
list's order follows the device's atomics, so lists are compared as sets (and for duplicates).
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from sim_helpers import run_simulated

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent(
    """
    import json
    import numpy as np
    import numba
    from ecs.kernels import DeviceRows, DualKernel, compact_rows, device_array, launch_span, to_host
    from systems.deployment.modes import DeviceLists, in_mode, running_row, stop_stuck

    rng = np.random.default_rng(7)
    n = 300
    status = rng.integers(0, 3, n).astype(np.int8)          # 0 RUNNING, others ended
    mode = rng.integers(0, 4, n).astype(np.int8)
    time = rng.uniform(0.0, 10.0, n)
    lim = rng.uniform(0.0, 10.0, n)
    rows = rng.permutation(n)[:200].astype(np.int64)         # a pending list: 200 of the rows
    d = {k: device_array(v) for k, v in dict(status=status, mode=mode, time=time, lim=lim, rows=rows).items()}
    out = {"types": sorted({type(v).__name__ for v in d.values()})}
    lists = DeviceLists(n)

    compact_rows(in_mode, len(rows), d["rows"], lists.mode, d["status"], d["mode"], d["time"], np.int64(2), d["lim"])
    k = lists.read(lists.mode)
    out["in_mode"] = sorted(to_host(lists.mode.ids)[:k].tolist())
    out["in_mode_count"] = k

    compact_rows(running_row, n, lists.every, lists.pending, d["status"])
    k = lists.read(lists.pending)
    out["running"] = to_host(lists.pending.ids)[:k].tolist()

    def _bump(j0, j1, rows, x):
        for j in range(j0, j1):
            x[rows[j]] += 1.0
    bump = DualKernel(py=_bump, cpu=numba.njit(_bump))      # a script has no file for numba's cache
    x = device_array(np.zeros(n))
    short = DeviceRows(lists.mode.ids, lists.mode.count, bound=len(rows))   # 200 threads, fewer rows listed
    launch_span("gpu", bump, short, lists.mode.ids, x)
    out["bumped"] = to_host(x).tolist()

    reason = device_array(np.zeros(n, np.int8))
    compact_rows(stop_stuck, len(rows), d["rows"], lists.next, d["status"], reason, d["time"], d["lim"])
    out["guard_count"] = lists.read(lists.next)
    out["status_after"] = to_host(d["status"]).tolist()
    out["reason_after"] = to_host(reason).tolist()
    print(json.dumps(out))
    """
)


def test_index_lists_built_on_the_device_match_numpy():
    out = run_simulated(SCRIPT)
    assert out["types"] == ["SimDeviceArray"]

    import numpy as np

    rng = np.random.default_rng(7)
    n = 300
    status = rng.integers(0, 3, n).astype(np.int8)
    mode = rng.integers(0, 4, n).astype(np.int8)
    time = rng.uniform(0.0, 10.0, n)
    lim = rng.uniform(0.0, 10.0, n)
    rows = rng.permutation(n)[:200].astype(np.int64)

    want = rows[(status[rows] == 0) & (mode[rows] == 2) & (time[rows] < lim[rows])]
    assert 0 < len(want) < len(rows)
    assert out["in_mode"] == sorted(want.tolist()) and out["in_mode_count"] == len(want)
    running = out["running"]
    assert len(running) == len(set(running)) and sorted(running) == np.flatnonzero(status == 0).tolist()
    bumped = np.zeros(n)
    bumped[want] = 1.0                   # the listed rows once each; the 200 - k spare threads nothing
    np.testing.assert_array_equal(out["bumped"], bumped)
    from components.status import Reason, Status

    stuck = rows[(status[rows] == 0) & (time[rows] < lim[rows])]
    after = status.copy()
    after[stuck] = int(Status.FAILED)
    reason = np.zeros(n, np.int8)
    reason[stuck] = int(Reason.PASS_GUARD)
    assert out["guard_count"] == 0       # the guard lists no row
    np.testing.assert_array_equal(out["status_after"], after)
    np.testing.assert_array_equal(out["reason_after"], reason)
