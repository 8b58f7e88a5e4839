"""numba's disk cache, keyed by the engine's own sources (docs/design.md §2).

numba invalidates a cached kernel only when *its own* file changes; a caller in an unchanged file
keeps the machine code of a callee that has since changed (measured this project: a mutation of
``systems/deployment/physics.py`` "passed" a test in 2 s on stale kernels of ``deploy_contact.py``;
after the layers move, stale entries raised ``ModuleNotFoundError: systems.attitude``). So, unless
the user chose ``NUMBA_CACHE_DIR`` themselves, every kernel of tumble is cached under
``$TUMBLE_CACHE_DIR/numba/<digest>`` (default ``~/.cache/tumble``), the digest hashing every source
file of the packages that hold kernels (``ecs``, ``components``, ``systems``, ``scenes``) and
numba's version: any change to them — an upgrade, a ``git pull``, an edit — compiles afresh
instead of running stale code. Directories of older digests are left in place (delete
``~/.cache/tumble/numba`` to reclaim them).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import numba

#: The packages whose sources key the cache (every one that defines kernels).
KERNEL_PACKAGES = ("ecs", "components", "systems", "scenes")


def source_digest(root: Path | None = None) -> str:
    """SHA-256 (20 hex digits) of the kernel packages' ``.py`` files under ``root`` and numba's version."""
    root = Path(root) if root is not None else Path(__file__).resolve().parent.parent
    h = hashlib.sha256(numba.__version__.encode())
    for pkg in KERNEL_PACKAGES:
        for f in sorted((root / pkg).rglob("*.py")):
            h.update(str(f.relative_to(root)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:20]


def trusted_private_dir(d: Path) -> bool:
    """True when ``d`` is a directory owned by this user that no one else may write to: the only
    kind of shared-location directory whose pickled numba indexes and generated modules tumble
    loads (another user who could write there could make this process run their code)."""
    try:
        st = os.lstat(d)
    except OSError:
        return False
    import stat

    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not (st.st_mode & 0o022)


def cache_dir(name: str) -> Path | None:
    """The writable directory ``$TUMBLE_CACHE_DIR/<name>`` (default ``~/.cache/tumble``), else the
    same under the per-user temporary directory ``tumble-<uid>``, which is created with mode 0700
    and used only when it is this user's and writable by no one else (:func:`trusted_private_dir`:
    the temporary directory is shared); ``None`` when neither can be used."""
    root = os.environ.get("TUMBLE_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "tumble")
    private = Path(tempfile.gettempdir()) / f"tumble-{os.getuid()}"
    for base in (Path(root), private):
        if base is private:
            try:
                private.mkdir(mode=0o700, exist_ok=True)
            except OSError:
                continue
            if not trusted_private_dir(private):
                continue
        d = base / name
        try:
            d.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(d, os.W_OK):
            return d
    return None


def use_versioned_numba_cache() -> str | None:
    """Point numba's cache at the directory of this source digest (module docstring); returns it,
    or ``None`` when ``NUMBA_CACHE_DIR`` is set by the user or no directory is writable (numba's
    own default then applies)."""
    global _VERSIONED_DIR
    if os.environ.get("NUMBA_CACHE_DIR"):
        return None
    d = cache_dir(os.path.join("numba", source_digest()))
    if d is not None:
        numba.config.CACHE_DIR = _VERSIONED_DIR = str(d)
        return str(d)
    return None


_VERSIONED_DIR: str | None = None


def versioned_cache_is_empty() -> bool:
    """True when tumble's numba cache for these sources (:func:`use_versioned_numba_cache`) holds
    nothing yet: the first run of this code on this machine, whose every kernel compiles. False
    when it holds anything, or when numba caches elsewhere (the user's ``NUMBA_CACHE_DIR``, or
    numba's own default: tumble cannot tell what is cold there)."""
    if _VERSIONED_DIR is None or numba.config.CACHE_DIR != _VERSIONED_DIR:
        return False
    # numba makes a module's folder when a cached kernel is defined, and its files when one compiles
    for _, _, files in os.walk(_VERSIONED_DIR):
        if files:
            return False
    return True
