"""The README is part of the interface: its two commands, CI, and its example scene."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _blocks(lang):
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def _setup_block() -> str:
    """The README's setup block: the one bash block that installs (others show a workflow)."""
    (setup,) = [b for b in _blocks("bash") if "pip install" in b]
    return setup


def test_readme_has_exactly_two_setup_commands_and_ci_runs_the_second():
    setup = _setup_block()
    commands = [line for line in setup.strip().splitlines() if line.strip()]
    assert len(commands) == 2
    assert commands[0].startswith("pip install -e . && tumble run ")
    ci = (ROOT / ".ci" / "run").read_text()
    assert commands[1] in ci.splitlines()


def test_readme_scene_builds_and_runs(tmp_path):
    src = next(b for b in _blocks("python") if "def build" in b)
    assert len(src.strip().splitlines()) <= 20
    path = tmp_path / "kick.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("readme_kick", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    scene = mod.build(t_end=1.0)
    scene.world.compile()
    r = scene.world.run(t_end=scene.t_end, dt=scene.dt, final=scene.final)
    # 0.5 N along body x at body point (0, 0.1, 0): torque (0, 0, -0.05) N m about the principal
    # z axis (I_z = 0.3), so the spin stays about z: ω_z = 0.2 - (0.05/0.3) t and the yaw angle is
    # θ = 0.2 t - (0.05/0.6) t². dp54 at rtol 1e-10 holds these to ~1e-10.
    t = 1.0
    assert r.status.tolist() == [1]
    np.testing.assert_allclose(r.finals["body_omega"][0, 0], [0.0, 0.0, 0.2 - 0.05 / 0.3 * t], atol=1e-10)
    theta = 0.2 * t - 0.05 / 0.6 * t**2
    q = r.finals["body_attitude"][0, 0] * np.sign(r.finals["body_attitude"][0, 0, 0])
    np.testing.assert_allclose(q, [np.cos(theta / 2), 0.0, 0.0, np.sin(theta / 2)], atol=1e-10)


def test_readme_results_snippet_runs_verbatim_after_command_one(tmp_path, monkeypatch):
    """README command 1's run (its `tumble run ...` part, in a fresh directory), then the 'Open the
    results' snippet exactly as printed: it must run and write its figure."""
    import os
    import subprocess
    import sys

    setup = _setup_block()
    run = setup.strip().splitlines()[0].split("&&", 1)[1].split()
    assert run[:2] == ["tumble", "run"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    r = subprocess.run([sys.executable, "-m", "tumble.cli", *run[1:], "--no-progress"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    snippet = next(b for b in _blocks("python") if "open_zarr" in b)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    exec(compile(snippet, "README.md", "exec"), {"__name__": "readme_snippet"})
    png = tmp_path / "deploy-cube.png"
    assert png.is_file() and png.stat().st_size > 10_000
