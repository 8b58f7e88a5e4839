"""Built-in scenes and scene loading (``tumble run SCENE``, ``tumble scenes``).

``SCENE`` is either a built-in name (a key of :data:`BUILTIN_SCENES`) or a path to a Python file
that exposes ``build(**params) -> Scene``. Built-in modules are imported lazily, only when their
scene is asked for, so one broken or missing scene never stops the others (or ``tumble scenes``).

A scene file is imported from its own location under a module name derived from its resolved path
(``tumble_scene_<stem>_<hash>``) and registered in ``sys.modules`` before it executes, so numba's
``cache=True`` and pickling by reference work for functions defined in it. Its folder is put on
``sys.path``, so it may import modules that lie beside it. A scene file is Python run with the
user's rights (trusted code).
"""

from __future__ import annotations

import difflib
import hashlib
import importlib
import importlib.util
import os
import pathlib
import sys
from typing import Any

from ecs.errors import InputError, TumbleError
from ecs.scene import Scene, coerce_params

#: name -> (builder, one-line description). A builder is ``"module"`` (its ``build``) or
#: ``"module:function"``; it is called as ``builder(**params) -> Scene``.
BUILTIN_SCENES: dict[str, tuple[str, str]] = {
    "precession": ("scenes.precession",
                   "torque-free rigid body: precession and nutation against Euler's closed-form solution"),
    "cubesat": ("scenes.cubesat", "tumbling CubeSat: 6-DoF rigid body with dispersed initial attitude and rates"),
    "free_fall": ("scenes.free_fall", "point mass falling in uniform gravity (analytic reference)"),
    "parabola": ("scenes.parabola", "ballistic parabola in uniform gravity (analytic reference)"),
    "gunns": ("scenes.gunns", "rigid-body dynamics reference case from NASA GUNNS (GunnsDyn)"),
    "deploy-cube": ("scenes.deploy:build_cube",
                    "5 kg cube released 200 m over an Itokawa-like asteroid (seed 004 Table 4.6): bounces, settling"),
    "deploy-sphere": ("scenes.deploy:build_sphere",
                      "5 kg sphere released over an Itokawa-like asteroid (seed 004 Tables 4.2-4.3)"),
    "mascot": ("scenes.mascot",
               "MASCOT released 41 m over Ryugu (Scholten et al. 2019): a flown landing to validate and calibrate "
               "against"),
    "hayabusa": ("scenes.hayabusa",
                 "Hayabusa's free fall from 17 m onto Itokawa's Muses Sea (Yano et al. 2006): a second flown landing"),
    "deploy": ("scenes.mission:build_mission",
               "any mission from -p: body by radii or shape file, GM, spin, release lat/lon/altitude, probe, spreads"),
    "deploy-box": ("scenes.deploy:build_box",
                   "10 kg box of 0.3 x 0.28 x 0.2 m released over an Itokawa-like asteroid (any size with -p size)"),
    "deploy-shapes": ("scenes.deploy:build_shapes",
                      "the six lander shapes of seed 004 Table 4.7 released over an Itokawa-like asteroid"),
    "dumbbell": ("scenes.dumbbell",
                 "two-sphere dumbbell in a circular LEO: pitch libration at n sqrt(3 (C - A)/C) (seed 001)"),
    "station": ("scenes.station",
                "ISS-like station, 7-joint arm and payload in LEO: rigid, locked or free chain (seed 001)"),
    "capture": ("scenes.capture",
                "a station arm snares a drifting free-flyer: facet contact between two trees in LEO (seeds 001, 000)"),
    "jeod-point": ("scenes.jeod:build_point", "JEOD RUN_point: two 100 kg spheres collide head-on at 2 m/s"),
    "jeod-point-inverse": ("scenes.jeod:build_point_inverse", "JEOD RUN_point_inverse: as jeod-point, vehicle 2 pitched 180°"),
    "jeod-point-off-center": ("scenes.jeod:build_point_off_center",
                              "JEOD RUN_point_off_center: spheres offset 0.5 m from the line of approach"),
    "jeod-line": ("scenes.jeod:build_line", "JEOD RUN_line: two 200 kg cylinders (line facets) collide end-on"),
    "jeod-line-inverse": ("scenes.jeod:build_line_inverse", "JEOD RUN_line_inverse: as jeod-line, vehicle 2 pitched 180°"),
    "jeod-line-arbitrary": ("scenes.jeod:build_line_arbitrary",
                            "JEOD RUN_line_arbitrary: cylinder 1 pitched 45°, cylinder 2 rolled 45°"),
    "jeod-line-point": ("scenes.jeod:build_line_point", "JEOD RUN_line_point: a line facet hit by a point facet"),
    "jeod-line-side-to-side": ("scenes.jeod:build_line_side_to_side",
                               "JEOD RUN_line_side_to_side: cylinder 1 pitched 90°, cylinder 2 rolled 90°"),
    "jeod-ground": ("scenes.jeod:build_ground",
                    "JEOD RUN_contact_ground: a cylinder on a spherical Earth with a vehicle dropped onto it"),
}


def scene_names() -> list[str]:
    """Names of the built-in scenes, sorted."""
    return sorted(BUILTIN_SCENES)


def describe_scenes() -> list[tuple[str, str]]:
    """``[(name, one-line description), ...]`` of the built-in scenes, sorted by name."""
    return [(n, BUILTIN_SCENES[n][1]) for n in scene_names()]


def closest_names(name: str, n: int = 3) -> list[str]:
    """Built-in scene names closest to ``name`` (difflib), best first."""
    close = difflib.get_close_matches(name, scene_names(), n=n, cutoff=0.4)
    if not close:  # still offer something: prefix / substring matches
        close = [s for s in scene_names() if s.startswith(name[:3]) or name in s][:n]
    return close


def unknown_scene_error(name: str) -> InputError:
    """The error for an unknown scene: names the closest built-in names."""
    close = closest_names(name)
    hint = f"closest: {', '.join(close)}" if close else f"built-in scenes: {', '.join(scene_names())}"
    return InputError("scene", name, f"is neither a built-in scene nor a .py file ({hint}; "
                                     f"`tumble scenes` lists them all)")


def is_scene_path(name_or_path: str | os.PathLike) -> bool:
    """True when ``name_or_path`` names a file rather than a built-in scene."""
    s = os.fspath(name_or_path)
    return s.endswith(".py") or os.sep in s or "/" in s or os.path.isfile(s)


def _module_name_for(path: pathlib.Path) -> str:
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    stem = "".join(ch if ch.isalnum() else "_" for ch in path.stem)
    return f"tumble_scene_{stem}_{digest}"


def _package_module(path: pathlib.Path):
    """The module of ``path`` imported by its package name (``scenes.examples.deploy_srp``) when it
    lies in a package that imports (from ``sys.path`` or an editable install) as that file, else None."""
    parts, d = [path.stem], path.parent
    while (d / "__init__.py").is_file():
        parts.insert(0, d.name)
        d = d.parent
    if len(parts) == 1 or not all(x.isidentifier() for x in parts):
        return None
    try:
        module = importlib.import_module(".".join(parts))
    except ImportError:
        return None
    f = getattr(module, "__file__", None)
    return module if f and pathlib.Path(f).resolve() == path else None


def import_scene_file(path: str | os.PathLike):
    """Import a scene file from its location (once per process) and return the module.

    A file in an importable package (the repository's ``scenes/examples/``) is imported by its
    package name, any other under a name derived from its path: one name per file, whichever way
    it is loaded. numba's disk cache imports a cached function's module by the name it was
    compiled under, so a kernel cached under one name cannot be loaded where the file has another.
    """
    p = pathlib.Path(path).expanduser().resolve()
    if not p.is_file():
        raise InputError("scene", os.fspath(path), "no such file (a scene file is a .py file exposing build())")
    module = _package_module(p)
    if module is not None:
        return module
    mod_name = _module_name_for(p)
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    spec = importlib.util.spec_from_file_location(mod_name, p)
    if spec is None or spec.loader is None:
        raise InputError("scene", os.fspath(path), "cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    if str(p.parent) not in sys.path:   # the scene may import modules that lie beside it
        sys.path.insert(0, str(p.parent))
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(mod_name, None)
        raise
    return module


def scene_module(name_or_path: str | os.PathLike):
    """The module of a built-in scene or a scene file (not yet built)."""
    s = os.fspath(name_or_path)
    if s in BUILTIN_SCENES:
        mod_path = BUILTIN_SCENES[s][0].partition(":")[0]
        try:
            return importlib.import_module(mod_path)
        except ModuleNotFoundError as exc:
            if exc.name and (mod_path == exc.name or mod_path.startswith(exc.name + ".")):
                raise TumbleError(f"built-in scene {s!r} is registered but its module {mod_path} is not "
                                  f"installed") from exc
            raise
    if is_scene_path(s):
        return import_scene_file(s)
    raise unknown_scene_error(s)


def load_scene(name_or_path: str | os.PathLike, **params: Any) -> Scene:
    """Build a scene by built-in name or from a ``.py`` file exposing ``build(**params)``.

    Raises:
        InputError: unknown name (the message names the closest built-in names), missing file,
            a module without ``build``, or ``build`` not returning a :class:`~ecs.scene.Scene`.
    """
    module = scene_module(name_or_path)
    key = os.fspath(name_or_path)
    fn_name = BUILTIN_SCENES[key][0].partition(":")[2] if key in BUILTIN_SCENES else ""
    build = getattr(module, fn_name or "build", None)
    if not callable(build):
        raise InputError("scene", os.fspath(name_or_path), "must expose a function build(**params) -> Scene")
    params = coerce_params(build, params, where=f"scene {os.fspath(name_or_path)}")
    try:
        scene = build(**params)
    except TypeError as exc:
        if params and "argument" in str(exc):
            raise InputError("scene parameters", params, f"not accepted by build(): {exc}") from exc
        raise
    if not isinstance(scene, Scene):
        raise InputError(f"build() of {os.fspath(name_or_path)}", type(scene).__name__, "must return an ecs.Scene")
    return scene


def scene_parameters(name_or_path: str | os.PathLike) -> tuple[str, list[dict[str, str]]]:
    """``(description, [{name, default, type, doc}, ...])`` of a scene's ``build`` parameters.

    ``doc`` comes from the scene module's ``PARAMETERS`` dict (``{name: "[unit] what it is"}``)
    when it has one, else is empty; ``type`` from the annotation or the default's type.
    """
    import inspect

    module = scene_module(name_or_path)
    key = os.fspath(name_or_path)
    fn_name = BUILTIN_SCENES[key][0].partition(":")[2] if key in BUILTIN_SCENES else ""
    build = getattr(module, fn_name or "build", None)
    if not callable(build):
        raise InputError("scene", key, "must expose a function build(**params) -> Scene")
    desc = BUILTIN_SCENES[key][1] if key in BUILTIN_SCENES else ((build.__doc__ or module.__doc__ or "").strip()
                                                                  .splitlines() or [""])[0]
    docs = getattr(module, "PARAMETERS", {})
    out = []
    for n, p in inspect.signature(build).parameters.items():
        if p.kind not in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD):
            continue
        ann = p.annotation if p.annotation is not p.empty else (type(p.default).__name__ if p.default is not p.empty
                                                                 and p.default is not None else "")
        out.append({"name": n, "default": "(required)" if p.default is p.empty else repr(p.default),
                    "type": ann if isinstance(ann, str) else getattr(ann, "__name__", str(ann)),
                    "doc": docs.get(n, "")})
    return desc, out
