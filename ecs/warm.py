"""The cold start: a run's kernels compiled on two cores before its first frame, and where a
run's scene comes from (docs/design.md §2 "Compile on two cores when the cache is cold", §8.28,
§8.32).

numba compiles one function at a time per process. When numba's disk cache lacks the kernels a
run will launch, :func:`warm_kernels` (and :class:`WarmStart`, the same in steps, which
:func:`ecs.batch.run_batch` uses) starts one helper process that rebuilds the scene
(:class:`_SceneSource`) and compiles its share into the same cache while this process compiles the
rest. The helper imports this module, not :mod:`ecs.batch`, so it does not load the store's
libraries (zarr: ~0.2 s of its start, on the cold start's critical path).
"""

from __future__ import annotations

import gc
import hashlib
import math
import os
import pathlib
import sys
import time
from typing import Any, Callable

from .errors import InputError
from .scene import Scene, coerce_params


class _SceneSource:
    """Where a scene comes from; rebuilds it when a world must be fresh again."""

    def __init__(self, scene_or_builder, params: dict[str, Any], loader: Callable[..., Scene] | None = None,
                 event_capacity: int | None = None):
        self.params = dict(params)
        self.loader = loader
        self.event_capacity = event_capacity
        self.ref: str | None = None
        self.builder: Callable[..., Scene] | None = None
        self.fixed: Scene | None = None
        if isinstance(scene_or_builder, Scene):
            if params:
                raise InputError("params", params, "cannot be applied to an already built Scene; pass its builder")
            self.fixed = scene_or_builder
        elif isinstance(scene_or_builder, (str, os.PathLike)):
            if loader is None:
                raise InputError("scene", os.fspath(scene_or_builder), "a scene name or .py path needs a scene loader: "
                                 "call tumble.run_batch, or pass loader=scenes.registry.load_scene")
            self.ref = os.fspath(scene_or_builder)
        elif callable(scene_or_builder):
            self.builder = scene_or_builder
        else:
            raise InputError("scene", type(scene_or_builder).__name__,
                             "must be a Scene, a builder function, a built-in scene name or a .py path")

    @property
    def rebuildable(self) -> bool:
        return self.fixed is None

    @property
    def source(self) -> str:
        if self.ref is not None:
            return self.ref
        if self.builder is not None:
            return f"{getattr(self.builder, '__module__', '?')}.{getattr(self.builder, '__qualname__', '?')}"
        return "<Scene object>"

    def file_identity(self) -> dict[str, str]:
        """``{"file": resolved path, "sha256": content hash}`` of a scene given as a ``.py`` file
        (stored in the root attributes: :func:`ecs.batch.rerun_sample` runs that very file, unchanged, or
        refuses); empty for a built-in name or a builder."""
        if self.ref is None or not self.ref.endswith(".py") or not os.path.isfile(self.ref):
            return {}
        f = pathlib.Path(self.ref).resolve()
        return {"file": str(f), "sha256": hashlib.sha256(f.read_bytes()).hexdigest()}

    def build(self) -> Scene:
        if self.fixed is not None:
            scene = self.fixed
        elif self.ref is not None:
            scene = self.loader(self.ref, **self.params)
        else:
            scene = self.builder(**coerce_params(self.builder, self.params, where="scene builder"))
            if not isinstance(scene, Scene):
                raise InputError("scene builder", self.source, "must return an ecs.Scene")
        if self.event_capacity is not None:       # --event-capacity: the event log's slots per sample
            scene.world.events.capacity = int(self.event_capacity)
        return scene

    def task_payload(self):
        """What a Dask task needs to rebuild the scene."""
        if self.fixed is not None:
            raise InputError("scene", "<Scene object>", "with workers/scheduler pass a scene name, a .py path or a "
                                                        "picklable builder function (workers build their own world)")
        return (self.ref if self.ref is not None else self.builder, self.params, self.loader, self.event_capacity)


#: Estimated start-up of the helper process of :func:`warm_kernels` (interpreter, imports, scene
#: build from cached kernels, bind), in the units of :attr:`ecs.kernels.CompileUnit.cost` (seconds
#: of a cold compile on the machine the costs were measured on): 1.5 s measured for deploy-cube
#: (2 cores, 2026-11-30), plus the start of the process and its pickled scene.
WARM_HELPER_START = 2.0
#: The same when :func:`ecs.batch.run_batch` starts the helper before its input checks and store
#: (:class:`WarmStart`): the helper's start-up less the batch's own work before its first compile
#: (deploy-cube, 300 samples, cold: the helper compiled 1.45 s after it was spawned, the batch
#: 1.3 s after; 2026-12-01), with a margin.
WARM_HELPER_START_EARLY = 0.5
#: The same when the helper is started before the batch builds its scene (the first run of the
#: code, :func:`ecs._cache.versioned_cache_is_empty`): it starts compiling first, while the batch
#: checks its inputs and creates the store (deploy-cube, 300 samples: the helper compiled from
#: 1.7 s, the batch from 2.7 s, in two cold runs of 2026-12-01 evening).
WARM_HELPER_START_FIRST = -1.0
#: Seconds the batch waits for the helper after its own share before it compiles the rest itself.
WARM_HELPER_TIMEOUT = 600.0


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


def _claim(claims: str, k: int) -> bool:
    """Claim unit ``k`` of the shared pool of :class:`WarmStart` for the calling process: True for
    the first process to ask (an exclusive create of the claim file), False for any other."""
    try:
        os.close(os.open(os.path.join(claims, str(k)), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def _heads_and_pool(here: list, helper: list) -> tuple[list, list, list]:
    """``(head here, head helper, pool)`` of a split (:func:`_split_units`): each process starts on
    the costliest unit of its share, and the rest go to a pool, costliest first, that whichever
    process is free first takes from (:class:`WarmStart`). The estimated costs fix the heads only;
    how long each compile really takes on this machine decides the rest."""
    if not helper:
        return list(here), [], []
    a = max(here, key=lambda u: u.cost) if here else None
    b = max(helper, key=lambda u: u.cost)
    pool = sorted((u for u in here + helper if u is not a and u is not b), key=lambda u: -u.cost)
    return ([a] if a is not None else []), [b], pool


def _split_units(units: list, start: float) -> tuple[list, list]:
    """``(here, helper)``: the split of ``units`` that ends soonest when the helper begins
    ``start`` later (exhaustive over the few units a world lists; ties keep more here)."""
    best, best_mask = math.inf, 0
    n = len(units)
    for mask in range(1 << n):
        here = sum(u.cost for k, u in enumerate(units) if not mask >> k & 1)
        there = sum(u.cost for k, u in enumerate(units) if mask >> k & 1)
        end = max(here, start + there if there else 0.0)
        if end < best:
            best, best_mask = end, mask
    return ([u for k, u in enumerate(units) if not best_mask >> k & 1],
            [u for k, u in enumerate(units) if best_mask >> k & 1])


def warm_processes() -> int:
    """``TUMBLE_WARM_PROCESSES`` (default 2): 1 compiles in this process only, 2 or more lets
    :func:`warm_kernels` start one helper process on a cold cache."""
    raw = os.environ.get("TUMBLE_WARM_PROCESSES", "2")
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < 1:
        raise InputError("TUMBLE_WARM_PROCESSES", raw, "must be an integer >= 1 (1: compile in this process "
                                                       "only; 2 or more: one helper process on a cold cache)")
    return n


def warm_kernels(world, source: _SceneSource | None = None, *, processes: int | None = None) -> dict[str, Any]:
    """Compile the kernels the compiled ``world`` will launch (:meth:`ecs.world.World.compile_units`)
    before its first frame, and on a cold numba cache share them with a helper process.

    numba compiles one function at a time per process (its compiler lock, and Python's), and a
    deployment's four kernels take ~32 s of compile cold on a 2-core machine. When two or more of
    the listed compiles are missing from the disk cache, at least two cores are free, ``processes``
    allows it (default: :func:`warm_processes`) and the scene can be rebuilt (``source``), one
    helper process rebuilds the world and compiles its share into the same disk cache while this
    process compiles the rest (:func:`_split_units`); this process then loads the helper's kernels
    from the cache. The machine code is the same wherever it was compiled, so results are too. A
    helper that fails costs time only: its share is compiled here and its error is reported
    (``helper_error``). :class:`WarmStart` does the same in two steps (the helper starts before
    the batch checks its inputs and creates its store).

    Returns a report: units listed, compiled (cold), ``here`` and ``helper`` (unit names),
    ``helper_error`` and the wall ``seconds``.
    """
    with WarmStart() as warm:
        warm.start(world, source, processes=processes)
        return warm.finish()


class WarmStart:
    """:func:`warm_kernels` in steps, so that the helper process builds its scene while this
    process builds its own, checks every sample's inputs and creates the store (:func:`ecs.batch.run_batch`;
    2.5 s of a cold deploy-cube run, during which the second core was idle).

    :meth:`spawn` starts the helper before this process has built the scene (it builds its own and
    then waits for its share); :meth:`start` finds the cold units, decides the split, and sends the
    helper its share (starting the helper now if :meth:`spawn` did not); :meth:`finish` compiles
    this process's share, waits for the helper and loads its kernels, and returns
    :func:`warm_kernels`' report. Leaving the context (or :meth:`close`) kills a helper that is
    still running, so an input error raised between the steps leaves no process behind.

    The split (:func:`_split_units`, on estimated costs) fixes only the unit each process starts
    with; the others form a pool that each process, once its first unit is compiled, takes from,
    costliest first, one claim at a time (:func:`_claim`: a unit is compiled by exactly one of
    them). How the compiles divide then follows what they cost on this machine: on a 2-core machine
    that ran 1.5-1.8x slower than the one the costs were measured on, the fixed split left the
    batch compiling up to 6.4 s (median 2.6) after the helper had finished in six cold deploy-cube
    runs; with the pool the two ended within 0.9 s of each other (docs/design.md §8.32).
    """

    def __init__(self) -> None:
        self.here: list = []
        self.helper: list = []
        self.pool: list = []
        self.report: dict[str, Any] | None = None
        self._proc = None
        self._out = None
        self._claims: str | None = None
        self._t0 = 0.0

    def spawn(self, source: _SceneSource) -> bool:
        """Start the helper on ``source`` now, before this process builds the scene; False (and no
        process) when the scene cannot travel to it."""
        import pickle

        try:
            payload = pickle.dumps(source.task_payload())
        except Exception:   # a builder pickle cannot name: start() reports it
            return False
        self._popen(payload)
        return True

    def _popen(self, payload: bytes) -> None:
        import pickle
        import subprocess
        import tempfile

        self._out = tempfile.TemporaryFile()
        boot = ("import sys, pickle; path, blob = pickle.load(sys.stdin.buffer); "
                "sys.path[:0] = [p for p in path if p not in sys.path]; "
                "from ecs.warm import _warm_helper; _warm_helper(blob, sys.stdin.buffer)")
        self._proc = subprocess.Popen([sys.executable, "-c", boot], stdin=subprocess.PIPE, stdout=self._out,
                                      stderr=subprocess.STDOUT)
        pickle.dump((list(sys.path), payload), self._proc.stdin)
        self._proc.stdin.flush()

    def _send(self, head: list[str], pool: list[str]) -> None:
        """The helper's first unit, the shared pool (names) and the directory of the pool's claims."""
        import pickle

        try:
            pickle.dump({"head": head, "pool": pool, "claims": self._claims}, self._proc.stdin)
            self._proc.stdin.close()
        except OSError:     # it ended already (its scene build failed): finish() reports its exit
            pass

    def start(self, world, source: _SceneSource | None = None, *, processes: int | None = None,
              helper_start: float = WARM_HELPER_START) -> "WarmStart":
        """Find the cold units and give the helper its share. ``helper_start``: how much later than
        this process's first compile the helper starts compiling (cost units; negative when it
        starts first)."""
        import pickle

        self._t0 = time.perf_counter()
        if processes is None:
            processes = warm_processes()
        units = world.compile_units()
        cold = [u for u in units if not u.ready()]
        here, helper = cold, []
        if len(cold) >= 2 and processes >= 2 and _usable_cpus() >= 2 and source is not None and source.rebuildable:
            here, helper = _split_units(cold, helper_start)
        report: dict[str, Any] = {"units": len(units), "compiled": len(cold), "here": [u.name for u in here],
                                  "helper": [u.name for u in helper], "helper_error": None}
        if helper and self._proc is None:
            try:
                self._popen(pickle.dumps(source.task_payload()))
            except Exception as exc:   # a builder pickle cannot name (a lambda, a local function): no helper
                report["helper_error"] = f"the scene cannot be sent to a helper process: {exc}"
                report["helper"] = []        # its share is compiled here, after this process's
        pool: list = []
        if self._proc is not None:
            if helper:
                import tempfile

                here, helper, pool = _heads_and_pool(here, helper)
                self._claims = tempfile.mkdtemp(prefix="tumble-warm-")
                self._send([u.name for u in helper], [u.name for u in pool])
                report["here"], report["helper"] = [u.name for u in here], [u.name for u in helper]
            else:                     # spawned, but nothing to share: not waited for
                self.close()
        self.here, self.helper, self.pool, self.report = here, helper, pool, report
        return self

    def finish(self) -> dict[str, Any]:
        """Compile this process's share, wait for the helper, load (or compile) its share."""
        import subprocess

        report, proc = self.report, self._proc
        if report is None:
            raise RuntimeError("WarmStart.finish() before start()")
        try:
            for u in self.here:
                u.compile()
            for k, u in enumerate(self.pool):     # what the helper has not taken yet, costliest first
                if _claim(self._claims, k):
                    u.compile()
                    report["here"].append(u.name)
                else:
                    self.helper.append(u)
                    report["helper"].append(u.name)
            if proc is not None:
                try:
                    rc = proc.wait(timeout=WARM_HELPER_TIMEOUT)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    rc = proc.wait()
                    report["helper_error"] = f"no answer within {WARM_HELPER_TIMEOUT:.0f} s (killed)"
                if rc != 0 and report["helper_error"] is None:
                    self._out.seek(0)
                    lines = self._out.read().decode(errors="replace").strip().splitlines()
                    report["helper_error"] = f"exit {rc}: {lines[-1] if lines else 'no output'}"
            for u in self.helper:         # loads what the helper compiled; compiles what it did not
                if not u.ready():
                    u.compile()
                    report["here"].append(u.name)
        finally:
            self.close()
        report["seconds"] = time.perf_counter() - self._t0
        return report

    def close(self) -> None:
        """Kill the helper if it is still running and release its output file."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        if self._out is not None:
            self._out.close()
            self._out = None
        if self._claims is not None:
            import shutil

            shutil.rmtree(self._claims, ignore_errors=True)
            self._claims = None

    def __enter__(self) -> "WarmStart":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _warm_helper(blob: bytes, stream) -> None:
    """The helper process of :class:`WarmStart`: rebuild the scene, read its share from ``stream``
    (its first unit, the shared pool and the pool's claims), compile its first unit, then each
    unit of the pool it claims before the batch does."""
    import pickle

    scene = _SceneSource(*pickle.loads(blob)).build()
    scene.world.compile(samples=1, backend="cpu", layout_only=True)
    units = {u.name: u for u in scene.world.compile_units()}
    share = pickle.load(stream)
    missing = [n for n in share["head"] + share["pool"] if n not in units]
    if missing:
        raise SystemExit(f"the rebuilt world lists no compile units {missing}")
    for n in share["head"]:
        units[n].compile()
    for k, n in enumerate(share["pool"]):
        if _claim(share["claims"], k):
            units[n].compile()
    # the batch waits for this process to end: its interpreter's last garbage collection walked every
    # object numba's compile left (0.3 s), for nothing (docs/design.md §8.28)
    gc.freeze()
