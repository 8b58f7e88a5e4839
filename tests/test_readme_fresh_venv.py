"""Slow (``pytest -m slow tests/test_readme_fresh_venv.py``): the README works on a fresh machine.

A new virtual environment, the README's first command as printed (its `pip install -e .` in the
checkout, its `tumble run ...` in a scratch folder so the checkout stays clean), then every Python
snippet of the README that reads the store, run verbatim with that environment's interpreter.
Needs the package index (PyPI) the first command installs from.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_readme_command_one_and_snippets_in_a_fresh_venv(tmp_path):
    (setup,) = re.findall(r"```bash\n(.*?)```", README, flags=re.S)
    first = setup.strip().splitlines()[0]
    install, run = (part.strip() for part in first.split("&&", 1))
    assert install == "pip install -e ."
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = dict(os.environ, PATH=f"{venv / 'bin'}:{os.environ['PATH']}", VIRTUAL_ENV=str(venv), MPLBACKEND="Agg")
    env.pop("PYTHONPATH", None)
    work = tmp_path / "work"
    work.mkdir()
    r = subprocess.run(["bash", "-c", f"cd {ROOT} && {install} && cd {work} && {run}"], env=env,
                       capture_output=True, text=True, timeout=3000)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "wrote runs/deploy-cube-0.zarr" in r.stdout
    snippets = [b for b in re.findall(r"```python\n(.*?)```", README, flags=re.S) if "open_zarr" in b]
    assert snippets
    for k, src in enumerate(snippets):
        f = work / f"snippet{k}.py"
        f.write_text(src)
        r = subprocess.run([str(venv / "bin" / "python"), str(f)], cwd=work, env=env, capture_output=True,
                           text=True, timeout=600)
        assert r.returncode == 0, (src, r.stderr[-3000:])
