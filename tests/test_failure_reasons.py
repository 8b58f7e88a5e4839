"""Every failed sample carries a reason: a code in final/failure_code (CF flags), a one-line
message in final/failure_message, counted by reason in `tumble run` and `tumble inspect`, and
`tumble run` exits with status 3 when it finished with failed samples."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import xarray as xr

from components.status import Reason, Status
from tumble import run_batch

ROOT = pathlib.Path(__file__).resolve().parents[1]
DRIFT = str(ROOT / "tests" / "scenes_for_tests" / "drift.py")

# A rigid body whose force jumps after a given time (a user force gone bad): to infinity under RK4
# (the state turns non-finite), or to 1e12 N under DP5(4) limited to two step attempts per frame
# (the step controller needs more to cross the jump at rtol 1e-12: the step limit).
FAILING = '''
import numpy as np
from numba import njit
from components.rigid import rigid_body
from ecs import Phase, Scene, System, World, column, component
from ecs.scene import Dispersion
from systems.dynamics.integration import Integrator

@component("bad")
class BadTime:
    time: float = column("s", doc="time after which the force is infinite")

@njit(cache=True)
def push(status, t, t_bad, bad, force):
    for i in range(force.shape[0]):
        if status[i] == 0:
            force[i, 0] += bad if t[i] > t_bad[i] else 1.0

class BadForce(System):
    def __init__(self, bad):
        self.bad = bad
    phase = Phase.DERIVATIVE
    reads = ("body_mass",)
    accumulates = ("body_force",)
    def bind(self, world):
        self.t = world.table_with("body_force")
    def process(self, frame):
        t = self.t
        push(t["row_status"], t["row_time"], t["bad_time"], self.bad, t["body_force"])

def build(method="rk4", max_steps=1000000, bad=float("inf")):
    w = World("failing")
    w.spawn(*rigid_body(mass=1.0, inertia=[1.0, 1.0, 1.0]), BadTime(), name="craft")
    w.add_system(BadForce(float(bad)))
    w.add_system(Integrator(method, max_steps=max_steps, rtol=1e-12, atol=1e-14))
    # the force goes bad after the end (t = 1 s) for about half the samples
    bad = Dispersion("craft", "bad_time", lambda rng: rng.uniform(0.2, 2.0), name="t_bad")
    return Scene("failing", "a force that goes bad", w, 1.0, 0.1, final=("body_position",), dispersions=[bad])
'''


def test_reasons_of_integrator_failures(tmp_path):
    f = tmp_path / "failing.py"
    f.write_text(FAILING)
    out = run_batch(str(f), samples=12, out=tmp_path / "rk4.zarr", seed=1)
    ds = xr.open_zarr(out, group="final")
    t_bad = xr.open_zarr(out, group="inputs")["t_bad"].values
    failed = ds.status.values == Status.FAILED
    assert failed.any() and (~failed).any()
    assert np.array_equal(failed, t_bad < 1.0)                     # exactly the samples whose force went bad
    assert set(ds.failure_code.values[failed]) == {Reason.NONFINITE_STATE}
    assert set(ds.failure_code.values[~failed]) == {Reason.NONE}
    assert all(m == "the state became NaN or infinite" for m in ds.failure_message.values[failed])
    assert all(m == "" for m in ds.failure_message.values[~failed])
    # the code is decoded by CF attributes, without tumble
    attrs = ds.failure_code.attrs
    meanings = dict(zip(attrs["flag_values"], attrs["flag_meanings"].split()))
    assert meanings[int(Reason.NONFINITE_STATE)] == "nonfinite_state"

    out = run_batch(str(f), samples=12, out=tmp_path / "dp54.zarr", seed=1, params={"method": "dp54", "max_steps": 2,
                                                                                     "bad": 1e12})
    ds = xr.open_zarr(out, group="final")
    failed = ds.status.values == Status.FAILED     # a bad step is retried smaller until the limit
    assert np.array_equal(failed, t_bad < 1.0)
    assert set(ds.failure_code.values[failed]) == {Reason.STEP_LIMIT}


def test_reasons_of_raised_and_unexplained_failures_in_cli_and_store(tmp_path):
    out = tmp_path / "drift.zarr"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    r = subprocess.run([sys.executable, "-m", "tumble.cli", "run", DRIFT, "--samples", "24", "--block", "6", "--out",
                        str(out), "--no-progress", "-p", "fail_above=0.8", "-p", "raise_above=0.95"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 3, (r.stdout, r.stderr)                 # finished, with failed samples
    ds = xr.open_zarr(out, group="final")
    codes = ds.failure_code.values
    status = ds.status.values
    raised = codes == Reason.RAISED
    assert raised.any() and (codes == Reason.UNSPECIFIED).any()
    assert ((status == Status.FAILED) == (codes != Reason.NONE)).all()
    assert all("RuntimeError: drag above 0.95" in m for m in ds.failure_message.values[raised])
    n_failed = int((status == Status.FAILED).sum())
    assert f"failed   {n_failed} samples by reason:" in r.stdout
    assert f"raised {int(raised.sum())}" in r.stdout and "unspecified" in r.stdout
    insp = subprocess.run([sys.executable, "-m", "tumble.cli", "inspect", str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert insp.returncode == 0 and f"failed   {n_failed} samples by reason:" in insp.stdout


def test_a_kernel_division_by_zero_gives_ieee_values_not_an_exception():
    """Every CPU kernel is compiled with numba's "numpy" error model (ecs.kernels.ERROR_MODEL): a
    division by zero gives ±inf or NaN, as the GPU twin does, which a row's finite-state check then
    flags (NONFINITE_STATE), instead of raising ZeroDivisionError out of the launch of a whole
    group of rows (numba's default). Both kernel decorators, dual and cpu_jit."""
    import math

    from ecs.kernels import cpu_jit, dual

    def ratio(a, b):
        return a / b

    def remainder(a, b):
        return a % b

    for make in (dual(ratio).cpu, cpu_jit(ratio)):
        assert make(1.0, 0.0) == math.inf
        assert make(-1.0, 0.0) == -math.inf
        assert math.isnan(make(0.0, 0.0))
    assert math.isnan(cpu_jit(remainder)(1.0, 0.0))
