"""Ctrl-C at any moment gives one line and exit status 130: while the command line starts up
(imports), while it runs, and with Dask worker processes, which end with the driver.

A terminal's Ctrl-C sends SIGINT to the whole foreground process group; the tests do the same
(``os.killpg``) on a run started in its own session.
"""

import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
DRIFT = str(ROOT / "tests" / "scenes_for_tests" / "drift.py")
ENTRY = "from tumble.entry import main; main()"          # what the installed `tumble` script runs


def _start(args, cwd):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    return subprocess.Popen([sys.executable, "-c", ENTRY, *args], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=_as_from_a_terminal)


def _as_from_a_terminal():
    """SIGINT's default disposition in the child, as a shell gives it (a pytest-xdist worker
    ignores SIGINT, and an ignored signal stays ignored across exec)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _ctrl_c(proc):
    os.killpg(proc.pid, signal.SIGINT)


def _one_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


@pytest.mark.parametrize("delay", [0.15, 0.4, 0.8, 1.5, 3.0])
def test_ctrl_c_while_starting_up_or_running_is_one_line(tmp_path, delay):
    """Interrupted at delays that fall in the imports, the scene build and the run itself."""
    proc = _start(["run", DRIFT, "--samples", "8", "--out", str(tmp_path / "s.zarr"), "--no-progress",
                   "-p", "spin=200000"], tmp_path)
    time.sleep(delay)
    _ctrl_c(proc)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (delay, proc.returncode, err)
    assert "interrupted" in _one_line(err)


def test_ctrl_c_with_dask_workers_is_one_line_and_ends_the_workers(tmp_path):
    psutil = pytest.importorskip("psutil")
    pytest.importorskip("distributed")
    out = tmp_path / "w.zarr"
    proc = _start(["run", DRIFT, "--samples", "16", "--out", str(out), "--workers", "2", "--block", "2",
                   "--no-progress", "-p", "spin=400000"], tmp_path)
    deadline = time.monotonic() + 120
    kids = []
    while time.monotonic() < deadline and proc.poll() is None:
        kids = [k for k in psutil.Process(proc.pid).children(recursive=True) if "python" in k.name().lower()]
        meta = out / "zarr.json"
        if len(kids) >= 2 and meta.is_file() and '"run"' in meta.read_text():
            break
        time.sleep(0.1)
    assert proc.poll() is None and len(kids) >= 2, "the workers never started"
    time.sleep(1.0)
    _ctrl_c(proc)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (proc.returncode, err)
    assert "interrupted" in _one_line(err)
    gone, alive = psutil.wait_procs(kids, timeout=30)
    assert alive == [], [(p.pid, p.name()) for p in alive]



_CALLBACK = """
import os, signal, sys, time, weakref
if sys.argv[1] != "python":
    from tumble.entry import keep_ctrl_c
    keep_ctrl_c(["run"])
    if sys.argv[1] == "dask":       # what ecs.batch._sigint("raise") does while a Dask cluster is up
        signal.signal(signal.SIGINT, signal.default_int_handler)
class A:
    pass
a = A()
def callback(_):                     # like importlib's module-lock callback: exceptions cannot leave it
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(1.0)
ref = weakref.ref(a, callback)
try:
    del a
    for _ in range(200):
        time.sleep(0.01)
    print("lost")
except KeyboardInterrupt:
    print("delivered")
"""


@pytest.mark.parametrize("mode, rc, out", [("python", 0, "lost"), ("script", 130, ""), ("dask", 0, "delivered")])
def test_ctrl_c_that_lands_in_a_callback_is_not_lost(tmp_path, mode, rc, out):
    """The CI failure this guards against: a Ctrl-C during the imports landed in importlib's
    module-lock weakref callback, Python printed "Exception ignored" and the run went on to exit 0.

    * ``python``: Python's own handling loses it (the control case: the test can fail);
    * ``script``: the ``tumble`` script's handler exits at once, one line, status 130;
    * ``dask``: with ``KeyboardInterrupt`` put back (a Dask cluster up), the swallowed interrupt is
      raised again in the main thread."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    res = subprocess.run([sys.executable, "-c", _CALLBACK, mode], env=env, capture_output=True, text=True,
                         timeout=60, preexec_fn=_as_from_a_terminal)
    assert (res.returncode, res.stdout.strip()) == (rc, out), (res.stdout, res.stderr)
    if mode == "script":
        assert _one_line(res.stderr) == "error: interrupted (a run continues with --resume)"
    else:
        assert ("Exception ignored" in res.stderr) == (mode == "python"), res.stderr
