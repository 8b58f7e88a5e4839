"""tumble's kernels are cached under a directory keyed by the engine's sources (ecs/_cache.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numba

from ecs._cache import KERNEL_PACKAGES, source_digest

ROOT = Path(__file__).resolve().parents[1]


def test_the_cache_directory_is_keyed_by_the_sources():
    if os.environ.get("NUMBA_CACHE_DIR"):
        return  # the user chose the directory; tumble leaves it alone
    assert Path(numba.config.CACHE_DIR).name == source_digest()


def test_any_source_change_gives_a_new_digest(tmp_path):
    for pkg in KERNEL_PACKAGES:
        shutil.copytree(ROOT / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    before = source_digest(tmp_path)
    assert before == source_digest(ROOT)
    f = tmp_path / "systems" / "deployment" / "physics.py"     # a file of a sub-package counts too
    f.write_text(f.read_text() + "\n# an edit\n")
    assert source_digest(tmp_path) != before


def test_a_user_chosen_numba_cache_dir_is_respected(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", "import ecs, numba; print(numba.config.CACHE_DIR)"], cwd=ROOT,
                         env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert out == str(tmp_path)


def test_the_shared_fallback_cache_directory_must_be_private(tmp_path):
    """The fallback cache lives in the shared temporary directory: tumble loads pickled numba
    indexes and generated modules from it only when it is this user's and writable by no one else."""
    from ecs._cache import trusted_private_dir

    d = tmp_path / "tumble-cache"
    d.mkdir(mode=0o700)
    os.chmod(d, 0o700)
    assert trusted_private_dir(d)
    os.chmod(d, 0o777)                          # anyone may write: refused
    assert not trusted_private_dir(d)
    os.chmod(d, 0o720)                          # the group may write: refused
    assert not trusted_private_dir(d)
    os.chmod(d, 0o700)
    (tmp_path / "link").symlink_to(d)           # a link planted in its place is not the directory
    assert not trusted_private_dir(tmp_path / "link")
    if os.getuid() == 0:                        # owned by another user: refused
        os.chown(d, 12345, 12345)
        assert not trusted_private_dir(d)
