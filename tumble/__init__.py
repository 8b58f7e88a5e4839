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

from typing import Any

from components.status import Reason, Status
from ecs import (BackendError, Dispersion, InputError, Phase, Scene, System, TumbleError, World, __version__, column,
                 component)
from ecs.batch import last_summary
from ecs.batch import run_batch as _run_batch
from ecs.scene import lognormal, normal, uniform, uniform_quaternion
from ecs.store import summarize, verify_store
from scenes.mission import box_probe, deployment, mesh_probe, release_above, small_body, solid_probe
from scenes.registry import describe_scenes, load_scene, scene_names

__all__ = ["BackendError", "Dispersion", "InputError", "Phase", "Reason", "Scene", "Status", "System", "TumbleError",
           "World", "__version__", "box_probe", "column", "component", "deployment", "describe_scenes", "last_summary",
           "load_scene", "lognormal", "mesh_probe", "normal", "release_above", "run_batch", "scene_names", "small_body",
           "solid_probe", "summarize", "uniform", "uniform_quaternion", "verify_store"]


def run_batch(scene_or_builder, **kwargs: Any):
    """:func:`ecs.batch.run_batch` with scene names and ``.py`` paths resolved by
    :func:`scenes.registry.load_scene` (same arguments; returns the store path)."""
    kwargs.setdefault("loader", load_scene)
    return _run_batch(scene_or_builder, **kwargs)


run_batch.__doc__ = (run_batch.__doc__ or "") + "\n\n" + (_run_batch.__doc__ or "")
