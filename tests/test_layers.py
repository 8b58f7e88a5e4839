"""The layers stay strict: ``ecs`` ← ``components`` ← ``systems`` ← ``scenes`` ← ``tumble`` : ``benchmarks``.

A lower layer never imports a higher one, not even inside a function. The contract is the
``[tool.importlinter]`` table of pyproject.toml; import-linter (the ``test`` extra) reads every
import statement of the six packages, function-level ones included.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _lint_imports() -> str:
    here = pathlib.Path(sys.executable).parent / "lint-imports"
    exe = str(here) if here.exists() else shutil.which("lint-imports")
    assert exe, "lint-imports not found: install the test extra (pip install -e '.[test]')"
    return exe


def test_lower_layers_never_import_higher_ones():
    # cwd = the checkout, first on the path: the packages analysed are this tree's, whatever is installed
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    proc = subprocess.run([_lint_imports(), "--no-cache"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, f"lint-imports failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    assert "1 kept, 0 broken" in proc.stdout, proc.stdout
