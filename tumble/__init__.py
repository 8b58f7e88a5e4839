"""tumble's public API: declare a scene, run a batch, read the store.

``import tumble`` gives what a scene file and a study script need, from the layers below
(``ecs`` ← ``components`` ← ``systems`` ← ``scenes``), which stay importable on their own::

    import tumble

    scene = tumble.load_scene("deploy-cube", level=1)           # or your own build(**params)
    path = tumble.run_batch("deploy-cube", samples=100, out="runs/cube.zarr", params={"level": 1})

This package sits on top of every layer (like the command line, :mod:`tumble.cli`): nothing
below imports it.
"""

from __future__ import annotations

import importlib
from typing import Any

#: public name -> (module, attribute): imported on first use (PEP 562), so that ``import tumble``
#: and the command line start without loading numba, the scenes or the kernels they compile,
#: and a Ctrl-C while the command line starts up can be answered in one line (:mod:`tumble.cli`)
_LAZY = {
    "Reason": ("components.status", "Reason"), "Status": ("components.status", "Status"),
    **{n: ("ecs", n) for n in ("BackendError", "Dispersion", "InputError", "Phase", "Scene", "System",
                              "TumbleError", "World", "__version__", "column", "component")},
    "last_summary": ("ecs.batch", "last_summary"),
    **{n: ("ecs.scene", n) for n in ("lognormal", "normal", "uniform", "uniform_quaternion")},
    "summarize": ("ecs.store", "summarize"), "verify_store": ("ecs.store", "verify_store"),
    **{n: ("scenes.mission", n) for n in ("box_probe", "deployment", "mesh_probe", "release_above", "small_body",
                                          "solid_probe")},
    **{n: ("scenes.registry", n) for n in ("describe_scenes", "load_scene", "scene_names")},
}

__all__ = sorted([*_LAZY, "run_batch"])


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        mod, attr = _LAZY[name]
        value = getattr(importlib.import_module(mod), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tumble' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def run_batch(scene_or_builder, **kwargs: Any):
    """:func:`ecs.batch.run_batch` with scene names and ``.py`` paths resolved by
    :func:`scenes.registry.load_scene` (same arguments; returns the store path).

    See :func:`ecs.batch.run_batch` for every argument."""
    from ecs.batch import run_batch as _run_batch
    from scenes.registry import load_scene

    kwargs.setdefault("loader", load_scene)
    return _run_batch(scene_or_builder, **kwargs)
