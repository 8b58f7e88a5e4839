"""Batch runner: a Monte-Carlo batch of one scene into one Zarr store (docs/design.md §6).

Samples are split into blocks; each block is compiled (``World.compile(samples=len(block),
sample_offset=start, overrides=...)``), run and written to its region of the store, then its
``final/done`` flags are set. Sample ``s`` draws its dispersions, in declaration order, from
``numpy.random.default_rng(numpy.random.SeedSequence(seed, spawn_key=(s,)))``, so results do not
depend on the block size, on the number of workers or on the order blocks run in.

Executors:

* in-process (default): blocks of any size run one after another (sequential writes into one
  shard are safe in one process); one block's results live in memory at a time. Default block:
  whole shards, up to :data:`DEFAULT_BLOCK_SAMPLES` samples.

Streaming active set (seed 004 §2.7.3): a world that can stream (``World.can_stream``: deployment)
keeps only ``active`` sample slots (:data:`DEFAULT_ACTIVE_ROWS`) of a block in its tables; the
block's other samples wait in a pool of packed rows, a slot whose sample has finished is refilled
with the next one, and finished samples leave in bulk (``World.run``'s ``on_samples``): each range
is written and its done flags set while the block runs. Memory is then flat in the sample count;
the stored bytes do not depend on ``active`` (a sample's frames, records and results are those of
the frame-synchronous run: tests/test_stream.py).
* Dask (``workers=N`` starts a ``LocalCluster`` of N single-threaded worker processes with
  ``NUMBA_NUM_THREADS`` = cores // N; ``scheduler="tcp://host:port"`` uses an existing cluster,
  whose workers must see the store path): blocks are rounded up to whole shards and each task
  writes only its own shards; by default a task holds few enough shards that every worker gets
  :data:`TASKS_PER_WORKER` tasks (a store has at least ``ecs.store.MIN_SHARDS`` shards). A script
  that calls :func:`run_batch` with ``workers`` must guard its entry point with
  ``if __name__ == "__main__":`` (worker processes re-import the main module). Tasks receive the scene by name/path (or a picklable builder) and
  build it themselves.

Failures: a sample whose rows end FAILED is just a status in ``final/status``. When ``World.run``
(or compile) raises for a block, every sample of that block is re-run on its own so that only the
samples that really raise are marked FAILED (with NaN / -1 data) — the same outcome for every
block size; the batch goes on, and the count and first message are recorded in the root
attribute ``run`` and in the returned path's summary (see :func:`last_summary`).

Safety: a run holds the store's writer lock (:class:`ecs.store.StoreLock`) from before it looks
at the path until the store is consolidated: a second writer is refused. Before the store is
created, every sample's dispersion draws are checked (:meth:`ecs.store.Layout.check_inputs`) and
the memory a block needs is compared with what is available (:func:`check_memory`).

Resume: ``resume=True`` re-opens an existing store written for the same scene, parameters, seed,
sample count, backend and tumble version, deletes writer temporaries, and recomputes exactly the
samples whose done flag is not set (as contiguous runs inside the usual blocks; with Dask inside
the usual shard-aligned tasks), since a sample's result does not depend on its neighbours. Before
that it verifies every shard that holds a finished sample (:func:`ecs.store.repair_store`: CRC-32C
checksums, missing or truncated shards) and recomputes the samples of damaged ones, so the shard is
rewritten whole. An existing path without ``resume``/``overwrite`` is refused before any work.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import math
import os
import pathlib
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from numba.core.errors import NumbaError

from . import store as zstore
from ._cache import versioned_cache_is_empty
from .kernels import gc_frozen
from .errors import InputError, TumbleError
from .scene import Scene
from .system import check_derivatives, check_events
from .world import STREAM_WINDOW
from .warm import (WARM_HELPER_START_EARLY, WARM_HELPER_START_FIRST, WarmStart, _SceneSource, _usable_cpus,
                   warm_kernels, warm_processes)

#: progress(done_samples: float, total_samples: int) -> None; it may also have a method
#: ``stage(what: str, done: int, total: int)``, called during long preparations (the input checks
#: of a large batch) so that minutes of preparation are not silent
ProgressFn = Callable[[float, int], None]
#: samples from which the input checks report their progress (about a second of drawing)
STAGE_REPORT_SAMPLES = 50_000

_SUMMARY: dict[str, Any] = {}


@dataclass
class BlockReport:
    """What one block (or Dask task) reports back."""

    start: int
    stop: int
    raised: int = 0
    first_error: str | None = None
    status_counts: dict[int, int] = field(default_factory=dict)


def last_summary() -> dict[str, Any]:
    """Summary of the last :func:`run_batch` of this process (samples run, raised, first error, seconds)."""
    return dict(_SUMMARY)


def _scene_params(scene: Scene, params: dict[str, Any]) -> dict[str, Any]:
    return dict(scene.params) if scene.params else dict(params)


# ---------------------------------------------------------------------- one block
class _BlockRunner:
    """Runs blocks of one scene: draws inputs, compiles, runs, writes, sets done."""

    def __init__(self, source: _SceneSource, layout: zstore.Layout, *, seed: int, backend: str, path: str,
                 scene: Scene | None = None, active: int = 0):
        self.source = source
        self.layout = layout
        self.seed = seed
        self.backend = backend
        self.active = active or default_active(backend)
        self.scene = scene if scene is not None else source.build()
        self.writer = zstore.StoreWriter(path)

    def _fresh(self) -> None:
        if self.source.rebuildable:
            self.scene = self.source.build()

    def _simulate(self, start: int, stop: int, inputs, on_frame=None, on_samples=None):
        scene = self.scene
        world = scene.world
        before = set(world.entities())
        world.compile(samples=stop - start, backend=self.backend, sample_offset=start,
                      overrides=self.layout.overrides(inputs), active=self.active)
        res = world.run(t_end=scene.t_end, dt=scene.dt, record_every=scene.record_every,
                        record=self.layout.record, final=self.layout.final, on_frame=on_frame,
                        on_samples=on_samples)
        if set(world.entities()) != before:  # structural changes while running must not leak into the next block
            if not self.source.rebuildable:
                raise InputError("scene", scene.name, "spawned or deleted entities while running; pass a builder (or "
                                 "a scene name/path) instead of a built Scene so each block starts from a fresh world")
            self._fresh()
        return res

    def run_block(self, start: int, stop: int, on_frame=None) -> BlockReport:
        """Run samples ``start:stop`` and write them (data first, then done flags).

        Results leave the world in bulk as its finished samples do (``World.run``'s
        ``on_samples``: a streaming active set lets them out while the block runs), each range
        written and then flagged done."""
        report = BlockReport(start, stop)
        inputs = self.layout.draw_inputs(self.seed, start, stop)
        written = [start]           # samples start:written[0] are written and flagged done

        def write(a: int, b: int, res) -> None:
            try:
                arrays = self.layout.block_arrays(res, {k: v[a:b] for k, v in inputs.items()}, start + a, start + b)
                self.writer.write(start + a, arrays)
                self.writer.mark_done(start + a, start + b)
            except Exception as exc:  # noqa: BLE001 - a store failure is not a sample's: never isolated
                raise _WriteFailed() from exc
            _count(report, arrays["final/status"])
            written[0] = start + b
            trim_heap()

        err = None
        try:
            self._simulate(start, stop, inputs, on_frame, write)
        except (KeyboardInterrupt, SystemExit):
            raise
        except _WriteFailed as exc:
            raise exc.__cause__ from None
        except NumbaError:      # a kernel that does not compile fails every sample: the code's error
            raise
        except TumbleError as exc:
            if not _is_run_failure(exc):
                raise
            err = exc
        except Exception as exc:  # noqa: BLE001 - isolate the block; retried sample by sample below
            err = exc
        if err is not None:
            self._fresh()
            for s in range(written[0], stop):  # only the samples that really raise become FAILED
                one = {k: v[s - start:s - start + 1] for k, v in inputs.items()}
                try:
                    if stop - start == 1:
                        raise err
                    r1 = self._simulate(s, s + 1, one)
                    arrays = self.layout.block_arrays(r1, one, s, s + 1)
                except (KeyboardInterrupt, SystemExit):
                    raise
                except Exception as exc1:  # noqa: BLE001
                    if isinstance(exc1, TumbleError) and not _is_run_failure(exc1):
                        raise
                    report.raised += 1
                    if report.first_error is None:
                        report.first_error = f"sample {s}: {type(exc1).__name__}: {exc1}"
                    arrays = self.layout.failed_arrays(one, s, s + 1, f"{type(exc1).__name__}: {exc1}")
                    self._fresh()
                self.writer.write(s, arrays)
                _count(report, arrays["final/status"])
            self.writer.mark_done(written[0], stop)
        return report


def _libc(name: str):
    try:
        import ctypes

        return getattr(ctypes.CDLL("libc.so.6"), name)
    except (OSError, AttributeError):      # not glibc
        return None


_MALLOC_TRIM = _libc("malloc_trim") if sys.platform.startswith("linux") else None
_MALLOPT = _libc("mallopt") if sys.platform.startswith("linux") else None
#: glibc's ``mallopt`` parameter M_ARENA_MAX, and the arenas a batch process keeps (:func:`limit_arenas`).
_M_ARENA_MAX, BATCH_ARENAS = -8, 2


def limit_arenas() -> None:
    """Cap glibc's malloc arenas at :data:`BATCH_ARENAS` for the rest of the process (unless the
    user set ``MALLOC_ARENA_MAX``), called when a batch starts, before its worker threads exist.

    glibc gives each thread that allocates an arena of its own, up to 8 per core; zarr's encode
    threads each fill one with buffers whose freed pages stay resident, so a batch's peak RSS grew
    with the number of bulk writes, i.e. with N: deploy-cube 258 MB at 10⁴ samples and 284-290 MB
    at 10⁵ (measured). With two arenas: 254 MB and 273 MB. The kernels allocate nothing, so the
    threads that share an arena do not contend for it."""
    if _MALLOPT is not None and "MALLOC_ARENA_MAX" not in os.environ:
        _MALLOPT(_M_ARENA_MAX, BATCH_ARENAS)


def trim_heap() -> None:
    """Give the C heap's free pages back to the system (glibc ``malloc_trim``; nothing elsewhere).

    Writing a store allocates and frees encode buffers in zarr's worker threads, each with its own
    glibc arena; without a trim their freed pages stay resident and a long batch's memory creeps
    up with the number of writes (measured: +20 MB over a 10⁴-sample deploy-cube run). Called
    after every bulk write (the same remedy as Dask's worker memory trim)."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


class _WriteFailed(Exception):
    """Writing a block's results failed (the cause is the store's error)."""


def _is_run_failure(exc: TumbleError) -> bool:
    """TumbleErrors that describe a sample's run (isolated) rather than the batch's set-up (fatal)."""
    return not isinstance(exc, (InputError, zstore.StoreError))


def _count(report: BlockReport, status: np.ndarray) -> None:
    for code, c in zip(*np.unique(status, return_counts=True)):
        report.status_counts[int(code)] = report.status_counts.get(int(code), 0) + int(c)


# ---------------------------------------------------------------------- Dask task
_TASK_LOCK = threading.Lock()
_TASK_CACHE: dict[Any, _BlockRunner] = {}


def _dask_block(payload, params, loader, event_capacity, path: str, shard_samples: int, samples: int, seed: int, backend: str,
                runs: list[tuple[int, int]], active: int = 0) -> list[BlockReport]:
    """One Dask task: build (or reuse) the scene in this worker, run the not-done runs of one
    shard-aligned block (all inside the block's own shards) and write them."""
    with _TASK_LOCK:  # esper's current world is process-global: one block at a time per worker process
        key = (repr(payload), repr(sorted(params.items())), event_capacity, path, seed, backend, active)
        runner = _TASK_CACHE.get(key)
        if runner is None:
            _TASK_CACHE.clear()
            source = _SceneSource(payload, params, loader, event_capacity)
            scene = source.build()
            scene.world.compile(samples=1, backend=backend, layout_only=True)
            layout = zstore.Layout.from_world(scene, scene.world, samples, shard_samples)
            runner = _BlockRunner(source, layout, seed=seed, backend=backend, path=path, scene=scene, active=active)
            _TASK_CACHE[key] = runner
        return [runner.run_block(a, b) for a, b in runs]


# ---------------------------------------------------------------------- driver
def _differences(a: Any, b: Any, prefix: str = "", skip: tuple[str, ...] = ()) -> list[tuple[str, Any, Any]]:
    """``[(dotted key, a value, b value)]`` where two JSON-like dicts differ (leaves only)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            key = f"{prefix}.{k}" if prefix else str(k)
            if key in skip:
                continue
            out += _differences(a.get(k, "<absent>"), b.get(k, "<absent>"), key, skip)
        return out
    return [] if a == b else [(prefix, a, b)]


def _check_int(name: str, v, lo: int, allow_none: bool = False) -> None:
    if v is None and allow_none:
        return
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
        raise InputError(name, v, f"must be an integer >= {lo}")


#: In-process default block: whole shards up to about this many samples (the unit of compile, resume
#: bookkeeping and failure isolation; a world that streams keeps only its active set in memory).
DEFAULT_BLOCK_SAMPLES = 4096
#: Default streaming active set (``active`` of :func:`run_batch`, ``tumble run --active``): sample
#: slots a world that can stream (``World.can_stream``: deployment) keeps in its tables; the rest of
#: a block waits in the pool and finished samples leave in bulk (seed 004 §2.7.3), so memory stays
#: flat in the sample count. A slot of deploy-cube costs ~30 kB (event log 13 kB, contact scratch
#: 15 kB, work 2 kB) and its output window 2 x 14 kB; 512 slots give each of 16 threads 32 rows
#: to share (measured on deploy-cube: 4.5 phase launches per trajectory against 1.7 with all
#: 2,048 samples of a block in the tables).
DEFAULT_ACTIVE_ROWS = 512
#: The GPU backend's defaults: a block of 262,144 samples, 65,536 of them as slots on the device.
#: A launch then has up to 65,536 threads, about a quarter of the threads an H100 keeps resident
#: (132 SMs x 2,048), and the slots take ~2 GB of device memory at deploy-cube's ~30 kB. A first
#: choice, not yet tuned on a device (``tumble bench deploy --backend gpu`` measures it).
DEFAULT_GPU_BLOCK_SAMPLES = 262_144
DEFAULT_GPU_ACTIVE_ROWS = 65_536


def default_active(backend: str) -> int:
    """The default streaming active set of ``backend`` (slots)."""
    return DEFAULT_GPU_ACTIVE_ROWS if backend == "gpu" else DEFAULT_ACTIVE_ROWS
#: Dask default block: whole shards, at least this many tasks per worker when the shards allow it.
TASKS_PER_WORKER = 2


def _default_block(layout: zstore.Layout, samples: int, block: int | None, distributed: bool, workers: int,
                   backend: str = "cpu") -> int:
    """Samples per block: ``block`` (rounded up to whole shards with Dask), else whole shards —
    up to :data:`DEFAULT_BLOCK_SAMPLES` in-process (:data:`DEFAULT_GPU_BLOCK_SAMPLES` on the GPU
    backend), and with Dask few enough shards per task that every worker gets
    :data:`TASKS_PER_WORKER` tasks when the store has that many shards."""
    shard = layout.shard_samples
    if distributed:
        if block is not None:
            return -(-block // shard) * shard
        shards = -(-samples // shard)
        return shard * max(1, -(-shards // (TASKS_PER_WORKER * max(1, workers))))
    most = DEFAULT_GPU_BLOCK_SAMPLES if backend == "gpu" else DEFAULT_BLOCK_SAMPLES
    return block or shard * max(1, most // shard)


def check_memory(world, layout: zstore.Layout, samples: int, block: int, concurrent_blocks: int = 1,
                 active: int | None = None) -> None:
    """Refuse a batch whose driver and blocks would not fit in this machine's available memory.

    Estimate: per sample of a block, 4x the bytes of its packed table rows (systems keep work
    arrays of about the state's size) plus 2x its store arrays (results and write buffers), times
    the blocks that run at once on this machine; plus 16 bytes per sample of the whole batch held
    by the driver (done flags, block lists). A world that streams (``active`` slots, fewer than a
    block) holds that per slot, plus the packed rows of the block's pool and 2x the store arrays
    of its window of finished samples (``ecs.world.STREAM_WINDOW`` x the slots).

    Raises:
        InputError: naming ``samples``, the estimate and what is available.
    """
    rows = sum(int(a.nbytes) for t in world.tables for a in t.columns.values()) // max(1, world.samples)
    store = sum(s.sample_bytes for s in layout.specs.values())
    per_sample = 4 * rows + 2 * store
    b = min(block, samples)
    if active is not None and active < b and world.can_stream():
        per_block = b * rows + active * 4 * rows + min(b, STREAM_WINDOW * active) * 2 * store
    else:
        per_block = b * per_sample
    need = 16 * samples + per_block * max(1, concurrent_blocks)
    avail = available_memory()
    if avail is not None and need > avail:
        raise InputError("samples", samples, f"needs about {need / 2**30:.3g} GiB of memory ({per_block / 1e6:.3g} MB "
                                             f"per {min(block, samples)}-sample block), this machine has "
                                             f"{avail / 2**30:.3g} GiB available: run fewer samples or a smaller "
                                             f"--block")


def available_memory() -> int | None:
    """Bytes of memory available to new work (``MemAvailable`` of /proc/meminfo), or ``None``."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _blocks(samples: int, block: int) -> list[tuple[int, int]]:
    return [(a, min(samples, a + block)) for a in range(0, samples, block)]


def _not_done_runs(done: np.ndarray, a: int, b: int) -> list[tuple[int, int]]:
    """Contiguous runs ``(start, stop)`` of not-done samples within ``a:b``."""
    runs, s = [], None
    for i in range(a, b):
        if not done[i] and s is None:
            s = i
        elif done[i] and s is not None:
            runs.append((s, i))
            s = None
    if s is not None:
        runs.append((s, b))
    return runs


def run_batch(scene_or_builder, *, samples: int | None = None, out, seed: int = 0, backend: str = "cpu", block: int | None = None,
              resume: bool = False, overwrite: bool = False, workers: int | None = None, scheduler: str | None = None,
              progress: ProgressFn | None = None, command_line: str | list[str] | None = None,
              params: dict[str, Any] | None = None, shard_samples: int | None = None,
              loader: Callable[..., Scene] | None = None, event_capacity: int | None = None,
              active: int | None = None) -> pathlib.Path:
    """Run ``samples`` samples of a scene into the Zarr store ``out``.

    Args:
        scene_or_builder: a scene name or a ``.py`` path (built by ``loader``), a builder
            ``build(**params) -> Scene``, or a built :class:`~ecs.scene.Scene` (in-process only).
        samples: number of samples (>= 1); ``None``: the scene's
            (:attr:`ecs.scene.Scene.samples_when_not_told`: 100 with dispersions, 1 without).
        out: store path (a directory).
        seed: base seed (>= 0); sample ``s`` uses ``SeedSequence(seed, spawn_key=(s,))``.
        backend: ``"cpu"`` or ``"gpu"``.
        block: samples per block (default: one shard). With Dask, rounded up to whole shards.
        resume: continue a killed run in ``out`` (skips samples whose done flag is set).
        overwrite: delete an existing store at ``out`` first.
        workers: start a Dask ``LocalCluster`` with this many worker processes.
        scheduler: address of an existing Dask scheduler (``tcp://host:port``).
        progress: ``progress(done_samples, total)`` called as samples complete (fractional within a block);
            its optional ``stage(what, done, total)`` reports the input checks of a large batch.
        command_line: stored in the root attribute ``run`` (default: ``sys.argv``).
        params: keyword arguments for the scene builder.
        shard_samples: samples per shard, a power of two (default: chosen from the sample count and
            the per-sample sizes, see :func:`ecs.store.choose_shard_samples`). Part of the store's
            identity: runs compared byte for byte must use the same value.
        event_capacity: events kept per sample (the event log's slots; default: the scene's,
            64 unless it sets another). A sample with more keeps the first ones and is flagged in
            ``events/event_overflow`` (counted by ``tumble run`` and ``tumble inspect``).
        active: streaming active set: sample slots kept in a world that can stream (deployment),
            default :func:`default_active` (512 on the CPU, 65,536 on the GPU); the stored bytes do not depend on it.
        loader: ``loader(name_or_path, **params) -> Scene`` for a scene given by name or path
            (``tumble.run_batch`` passes ``scenes.registry.load_scene``: the engine does not import
            the scene layer above it). Must be importable by Dask workers.

    Returns:
        The store path.

    Raises:
        InputError: bad arguments, an existing ``out`` without ``resume``/``overwrite``, or a
            ``resume`` of a store written for another scene, seed or sample count.
        BackendError: ``backend="gpu"`` on a machine that cannot run it.
    """
    t0 = time.perf_counter()
    params = dict(params or {})
    _check_int("samples", samples, 1, allow_none=True)
    _check_int("seed", seed, 0)
    _check_int("block", block, 1, allow_none=True)
    _check_int("workers", workers, 1, allow_none=True)
    _check_int("shard_samples", shard_samples, 1, allow_none=True)
    _check_int("event_capacity", event_capacity, 1, allow_none=True)
    _check_int("active", active, 1, allow_none=True)
    if shard_samples is not None and shard_samples & (shard_samples - 1):
        raise InputError("shard_samples", shard_samples, "must be a power of two")
    if backend not in ("cpu", "gpu"):
        raise InputError("backend", backend, "must be 'cpu' or 'gpu'")
    if resume and overwrite:
        raise InputError("--resume/--overwrite", "both", "choose one: --resume continues a run, --overwrite replaces it")
    if workers is not None and scheduler is not None:
        raise InputError("--workers/--scheduler", (workers, scheduler), "choose one: --workers starts a local "
                                                                        "cluster, --scheduler uses an existing one")
    path = pathlib.Path(out)
    limit_arenas()
    if command_line is None:
        command_line = list(sys.argv)
    cmd = command_line if isinstance(command_line, str) else " ".join(map(str, command_line))
    # one writer at a time, from before the store is looked at until it is consolidated
    # a helper process started early (:class:`WarmStart`) does not outlive an error raised before
    # the batch uses it
    with zstore.StoreLock(path, cmd) as lock, WarmStart() as warm_start:
        return _drive(scene_or_builder, samples=samples, path=path, seed=seed, backend=backend, block=block,
                      resume=resume, overwrite=overwrite, workers=workers, scheduler=scheduler, progress=progress,
                      command_line=cmd, params=params, shard_samples=shard_samples, t0=t0, lock=lock,
                      loader=loader, event_capacity=event_capacity, active=active or default_active(backend),
                      warm_start=warm_start)


def _drive(scene_or_builder, *, samples: int | None, path: pathlib.Path, seed: int, backend: str, block: int | None,
           resume: bool, overwrite: bool, workers: int | None, scheduler: str | None, progress, command_line: str,
           params: dict[str, Any], shard_samples: int | None, t0: float, lock: zstore.StoreLock,
           loader: Callable[..., Scene] | None, event_capacity: int | None, active: int,
           warm_start: WarmStart) -> pathlib.Path:
    """:func:`run_batch` under the store's writer lock."""
    exists = path.exists()
    if exists and not (resume or overwrite):
        raise InputError("out", os.fspath(path), "already exists: pass --resume to continue it or --overwrite to "
                                                 "replace it")
    if resume and not exists:
        raise InputError("--resume", os.fspath(path), "no store at this path to resume")
    if exists and overwrite and path.is_dir() and not zstore.is_tumble_store(path) and any(path.iterdir()):
        raise InputError("out", os.fspath(path), "exists and is not a tumble store; refusing to delete it with "
                                                 "--overwrite")
    if exists and path.is_dir():
        lock.hold_store()       # a writer whose lock file was deleted still holds the store itself
    if backend == "gpu":
        from .errors import BackendError
        from .kernels import gpu_backend_error

        why = gpu_backend_error()
        if why:
            raise BackendError(why)

    processes = warm_processes()       # checked before any work, used once the store is ready
    source = _SceneSource(scene_or_builder, params, loader, event_capacity)
    if workers is not None or scheduler is not None:
        source.task_payload()  # a built Scene cannot travel to workers: refuse before any work
    distributed = workers is not None or scheduler is not None
    # a new run compiles the kernels its blocks will launch on two cores (a resume may have nothing
    # left to run, and Dask's workers compile their own). On the first run of this code (numba's
    # cache for it empty: every kernel is cold) the helper starts now and builds its scene while
    # this process builds its own; otherwise it starts once the scene shows which kernels are cold
    early = not resume and not distributed and backend == "cpu"
    spawned = (early and processes >= 2 and _usable_cpus() >= 2 and source.rebuildable
               and versioned_cache_is_empty() and warm_start.spawn(source))
    scene = source.build()
    if samples is None:
        samples = scene.samples_when_not_told
    scene.world.compile(samples=1, backend=backend, layout_only=True)  # schema probe: tables, entity dims, event fields
    # schedule errors once, here, not as every sample failing with 'raised' after the store exists
    check_derivatives(scene.world, scene.world.systems)
    check_events(scene.world, scene.world.systems)
    if early:     # before the input checks and the store, so that the helper works meanwhile
        warm_start.start(scene.world, source, processes=processes,
                         helper_start=WARM_HELPER_START_FIRST if spawned else WARM_HELPER_START_EARLY)
    layout = zstore.Layout.from_world(scene, scene.world, samples, shard_samples)
    check_memory(scene.world, layout, samples,
                 _default_block(layout, samples, block, distributed, workers or 1, backend), workers or 1,
                 active=active)
    # every sample's draws, each column's rule and each system's input checks: before any work
    stage = getattr(progress, "stage", None) if samples >= STAGE_REPORT_SAMPLES else None
    layout.check_inputs(scene.world, seed, samples,
                        on_chunk=(lambda done: stage("checking every sample's inputs", done, samples)) if stage else None)

    from . import __version__

    stable_attrs = {
        "tumble": {"format": zstore.STORE_FORMAT, "version": __version__},
        "scene": {"name": scene.name, "description": scene.description, "source": source.source,
                  **source.file_identity(),
                  "params": _scene_params(scene, params)},
        "seed": int(seed),
        "seed_rule": "sample s draws its dispersions, in declaration order, from numpy.random.default_rng("
                     "numpy.random.SeedSequence(seed, spawn_key=(s,)))",
        "samples": int(samples),
        "shard_samples": int(layout.shard_samples),
        "backend": backend,
        "t_end": float(scene.t_end),
        "dt": float(scene.dt),
        "record_every": scene.record_every,
        "record": list(layout.record),
        "final": list(layout.final),
        "event_capacity": int(layout.event_capacity),
        "dispersions": [{"name": d.name, "entity": d.entity, "column": d.column} for d in layout.dispersions],
        "status_legend": {k: int(v) for k, v in zstore.STATUS_LEGEND.items()},
        "Conventions": "CF-1.10",
        "code": zstore.code_revision(),
        **zstore.describe_world(scene.world),
        "reproducibility": f"every array and attribute is identical for the same scene, params, seed and samples "
                           f"(any block size, worker count, kill and resume) except the root attribute "
                           f"'{zstore.RUN_ATTR}'",
    }
    run_history: list[dict[str, Any]] = []
    rewritten: list[str] = []
    if resume:
        attrs = zstore.read_attrs(path)
        if not zstore.is_complete(attrs):     # its root attributes come last: killed while being created
            raise InputError("--resume", os.fspath(path), "the store is incomplete (killed while being created); "
                                                          "use --overwrite")
        zstore.refuse_unrepairable(path)       # metadata or driver-written arrays damaged: name them, stop
        theirs = {k: attrs.get(k) for k in ("tumble", "scene", "seed", "samples", "backend", "t_end", "dt", "code")}
        mine = zstore.jsonable({k: stable_attrs[k] for k in theirs})
        diffs = _differences(theirs, mine, skip=("scene.description", "scene.source", "scene.file", "code.modified"))
        if diffs:
            shown = "; ".join(f"{k}: store {a!r}, this run {b!r}" for k, a, b in diffs[:5])
            more = f" (and {len(diffs) - 5} more)" if len(diffs) > 5 else ""
            raise InputError("--resume", os.fspath(path), f"this run differs from the store in {shown}{more}; use "
                                                          f"the store's values, --overwrite or another --out")
        zstore.check_layout(path, layout)
        rewritten = zstore.repair_driver_arrays(path, layout)     # coordinates, record times, scene/
        if shard_samples is not None and shard_samples != attrs.get("shard_samples"):
            raise InputError("--resume", os.fspath(path), f"the store has {attrs.get('shard_samples')} samples per "
                                                          f"shard, this run asks for {shard_samples}")
        layout.shard_samples = int(attrs["shard_samples"])
        zstore.remove_partial_files(path)
        run_history = list((attrs.get(zstore.RUN_ATTR) or {}).get("invocations", []))

    repaired: list[zstore.Damage] = []
    with (_dask_client(workers, scheduler) if distributed else contextlib.nullcontext()) as client:
        # a cluster is up (or its scheduler answered) before the store is created or changed
        if not resume:
            if exists:
                zstore.remove_store(path)
            zstore.create_store(path, layout, stable_attrs)
            lock.hold_store()
        n_workers = workers or (len(client.scheduler_info().get("workers", {})) if scheduler else 1) or 1
        blk = _default_block(layout, samples, block, distributed, n_workers, backend)
        done = zstore.read_done(path) if resume else np.zeros(samples, bool)
        if resume:  # shards of finished samples that are missing or fail their checksums are recomputed
            repaired = zstore.repair_store(path, done)
        # per block, the runs of samples whose done flag is not set (per-sample results do not depend on
        # how samples are grouped, so finished samples are never recomputed)
        todo = [runs for runs in (_not_done_runs(done, a, b) for a, b in _blocks(samples, blk)) if runs]
        already = int(done.sum())
        # a cold start compiles the kernels the blocks will launch first, on two cores (not for a
        # resume with nothing left to run, nor for Dask, whose workers compile their own)
        warm = (warm_start.finish() if early else warm_kernels(scene.world, source, processes=processes)
                if todo and not distributed and backend == "cpu" else None)
        invocation = {"command_line": command_line,
                      "block": int(blk), "active": int(active), "executor": (f"dask LocalCluster, {workers} workers" if workers else
                                                      f"dask scheduler {scheduler}" if scheduler else "in-process"),
                      "resumed": bool(resume), "blocks_run": sum(len(r) for r in todo), "complete": False,
                      "repaired_shards": [f"{d.array} shard {d.shard} (samples {d.start}:{d.stop}): {d.problem}"
                                          for d in repaired],
                      "rewritten_arrays": rewritten}
        if lock.took_over:
            invocation["stale_lock"] = lock.took_over
        run_history.append(invocation)
        zstore.set_run_attr(path, {"invocations": run_history})

        if progress is not None:
            progress(float(already), samples)
        reports: list[BlockReport] = []
        if distributed:
            reports = _run_dask(client, source, path, layout, samples, seed, backend, todo, progress, already, active)
        else:
            # the blocks' full garbage collections skip what exists now (the imports, the scene,
            # numba's compiled state: 0.2-0.3 s a walk after a cold compile, docs/design.md §8.28)
            with gc_frozen():
                runner = _BlockRunner(source, layout, seed=seed, backend=backend, path=os.fspath(path), scene=scene,
                                      active=active)
                finished = float(already)
                for a, b in (run for runs in todo for run in runs):
                    n = b - a
                    on_frame = None
                    if progress is not None:
                        def on_frame(i, nf, _base=finished, _n=n, _last=[0.0]):
                            # i of nf: frames, or (streaming) samples finished; ~50 updates per block
                            if nf and (i == nf or i - _last[0] >= nf / 50):
                                _last[0] = i
                                progress(_base + _n * i / nf, samples)
                    reports.append(runner.run_block(a, b, on_frame))
                    finished += n
                    if progress is not None:
                        progress(finished, samples)

    raised = sum(r.raised for r in reports)
    first = next((r.first_error for r in reports if r.first_error), None)
    invocation.update({"complete": True, "samples_run": int(sum(r.stop - r.start for r in reports)),
                       "samples_raised": int(raised), "first_error": first})
    zstore.set_run_attr(path, {"invocations": run_history})
    zstore.consolidate(path)
    _SUMMARY.clear()
    _SUMMARY.update({"path": os.fspath(path), "samples": samples, "samples_run": invocation["samples_run"],
                     "samples_skipped": int(already), "samples_raised": int(raised), "first_error": first,
                     "seconds": time.perf_counter() - t0, "block": int(blk), "repaired": len(repaired),
                     "rewritten": rewritten, "stale_lock": lock.took_over, "warm": warm,
                     "idle_workers": _idle_workers(distributed, n_workers, todo, layout.shard_samples)})
    return path


def _idle_workers(distributed: bool, workers: int, todo: list, shard_samples: int) -> dict[str, int] | None:
    """With Dask, fewer blocks than workers leave workers without a task (a task is a block of
    whole shards, so a store of fewer shards than workers always does): ``{"workers", "tasks",
    "shard_samples"}`` for the run's report, else ``None``."""
    tasks = len(todo)
    if not distributed or tasks >= workers:
        return None
    return {"workers": int(workers), "tasks": int(tasks), "shard_samples": int(shard_samples)}


@contextlib.contextmanager
def _sigint(action: str):
    """SIGINT handled as ``action`` says while the block runs (main thread only; a SIGINT that is
    already ignored stays ignored):

    * ``"ignore"``: ignored; processes started meanwhile inherit it (Dask's worker processes);
    * ``"raise"``: Python's ``KeyboardInterrupt``, whatever handler the caller installed. The
      ``tumble`` script answers SIGINT by exiting at once (:mod:`tumble.entry`), which would leave
      a Dask cluster to die unclosed."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        yield
        return
    previous = signal.signal(signal.SIGINT, {"ignore": signal.SIG_IGN, "raise": signal.default_int_handler}[action])
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def _dask_client(workers: int | None, scheduler: str | None):
    """A Dask client: a fresh LocalCluster of ``workers`` processes, or one connected to ``scheduler``.

    While it is open a Ctrl-C raises ``KeyboardInterrupt`` (:func:`_sigint`), which closes it."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise InputError("--workers/--scheduler", workers or scheduler,
                         "needs dask[distributed] (pip install 'tumble[distributed]')") from exc
    with _sigint("raise"):
        if workers is not None:
            import logging

            # single-threaded worker processes; numba's threads split the cores between them
            threads = max(1, (os.cpu_count() or 1) // workers)
            # no dashboard, and the scheduler's own HTTP endpoint (health, metrics: distributed starts it
            # even without a dashboard, on 8787 unless told) on an ephemeral loopback port
            # worker processes start with SIGINT ignored (inherited through exec): a Ctrl-C at the terminal
            # reaches the whole process group, and only the driver answers it, in one line; the workers
            # end with the driver (distributed's processes exit when their parent's pipe closes). Their
            # logs are silenced below CRITICAL: a worker whose heartbeat outlives the scheduler at such an
            # end logged a traceback at ERROR (seen under load); what a task raises reaches the driver,
            # which reports it per sample, and a lost worker reaches it as an exception
            with _sigint("ignore"):
                cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                                       scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
                                       silence_logs=logging.CRITICAL, env={"NUMBA_NUM_THREADS": str(threads)})
            with cluster, Client(cluster) as client:
                yield client
        else:
            try:
                client = Client(scheduler, timeout="10s")
            except Exception as exc:  # noqa: BLE001
                raise InputError("--scheduler", scheduler, f"cannot connect: {exc}") from exc
            try:
                yield client
            finally:
                client.close()


def _run_dask(client, source: _SceneSource, path: pathlib.Path, layout: zstore.Layout, samples: int, seed: int,
              backend: str, todo, progress, already, active: int = 0) -> list[BlockReport]:
    """Submit one task per shard-aligned block; each writes only its own shards."""
    from dask.distributed import as_completed

    payload, params, loader, event_capacity = source.task_payload()
    reports: list[BlockReport] = []
    errors: list[Exception] = []
    futures = [client.submit(_dask_block, payload, params, loader, event_capacity, os.fspath(path), layout.shard_samples, samples, seed,
                             backend, runs, active, key=f"tumble-block-{runs[0][0]}-{runs[-1][1]}-{os.getpid()}",
                             pure=False)
               for runs in todo]
    finished = float(already)
    for fut in as_completed(futures):
        try:
            reps = fut.result()
        except Exception as exc:  # noqa: BLE001 - a lost worker etc.: report after the others finish
            errors.append(exc)
            continue
        reports.extend(reps)
        finished += sum(r.stop - r.start for r in reps)
        if progress is not None:
            progress(finished, samples)
    fatal = [e for e in errors if isinstance(e, (InputError, zstore.StoreError))]
    if fatal:
        raise fatal[0]
    if errors:
        e = errors[0]
        raise TumbleError(f"{len(errors)} of {len(todo)} blocks did not complete ({type(e).__name__}: {e}); the "
                          f"others are written: rerun with --resume")
    return reports


#: State columns a dense rerun records when the scene records none (those the world has).
DENSE_COLUMNS = ("body_position", "body_velocity", "body_attitude", "body_omega", "probe_phase")


def rerun_sample(path, sample: int, *, loader: Callable[..., Scene], every: float | None = None,
                 record: tuple[str, ...] | None = None, trace: int | None = None) -> dict[str, Any]:
    """Run sample ``sample`` of a store again, alone, exactly as the batch ran it, and compare
    every array of that sample with the store, bit for bit.

    ``every`` [s] asks for a dense trajectory (``record`` columns, default the scene's, else
    :data:`DENSE_COLUMNS`): in a world whose stepping system records by dense output
    (``System.dense_output``: deployment) at any interval, otherwise only at a multiple of the
    scene's frame (there the frame is the step, and a finer one would change the physics). The
    finals are still compared with the store. ``trace`` keeps every accepted step (up to that many
    per row) of the systems that can trace them (``enable_trace``: deployment); in other worlds
    the frame is the step and ``every`` = the frame is the per-step record.

    The scene is rebuilt from the store's root attributes (``scene.source`` by ``loader`` with
    ``scene.params``), the sample's dispersions are drawn again from its own seed, and it runs as a
    block of one (a sample's results do not depend on its block). A sample whose run raised raises
    again here, with its traceback: the way to debug it.

    Returns:
        ``{"sample", "arrays": {path: value of this run}, "differs": [paths whose bits differ],
        "status", "failure_code", "failure_message"}``; with ``every`` also ``"times"`` [s] and
        ``"trajectory"`` {column: [time, entity, *shape]}; with ``trace`` also ``"trace"`` (the
        tracing system's :meth:`step_trace`).
    """
    attrs = zstore.read_attrs(path)
    if not zstore.is_complete(attrs):
        raise InputError("store", os.fspath(path), "is incomplete (killed while being created)")
    n = int(attrs["samples"])
    if isinstance(sample, bool) or not isinstance(sample, (int, np.integer)) or not 0 <= sample < n:
        raise InputError("sample", sample, f"must be an integer in [0, {n - 1}] (the store has {n} samples)")
    sc = attrs["scene"]
    source = sc.get("source", "")
    if sc.get("file"):
        # the scene file the store was written from, by its resolved path (not whatever file of that
        # name the current directory holds), unchanged since: rerun executes it
        f = pathlib.Path(sc["file"])
        if not f.is_file():
            raise InputError("store scene file", str(f), "does not exist any more: rerun runs the scene file the "
                                                         "store was written from")
        digest = hashlib.sha256(f.read_bytes()).hexdigest()
        if digest != sc.get("sha256"):
            raise InputError("store scene file", str(f), f"has changed since the run (sha256 {digest[:16]}..., the "
                                                         f"store's {str(sc.get('sha256'))[:16]}...): rerun would not "
                                                         "run the same scene")
        source = str(f)
    try:
        scene = loader(source, **dict(sc.get("params") or {}))
    except InputError as exc:
        raise InputError("store scene", source, f"cannot be rebuilt ({exc.rule}): rerun needs a built-in scene "
                                                f"name or a .py path, as the store was written from") from None
    world = scene.world
    backend = attrs.get("backend", "cpu")
    world.compile(samples=1, backend=backend, layout_only=True)
    layout = zstore.Layout.from_world(scene, world, n, int(attrs["shard_samples"]))
    seed = int(attrs["seed"])
    inputs = layout.draw_inputs(seed, sample, sample + 1)
    world.compile(samples=1, backend=backend, sample_offset=sample, overrides=layout.overrides(inputs))
    tracer = None
    if trace is not None:
        tracer = next((s for s in world.systems if hasattr(s, "enable_trace")), None)
        if tracer is None:
            raise InputError("trace", trace, "no system of this world traces its steps (deployment does); here "
                                             "the frame is the integration step: use every = the frame")
        tracer.enable_trace(trace)
    dense = None
    if every is not None:
        dense = _dense_plan(scene, world, float(every), record)
        res = world.run(t_end=scene.t_end, dt=dense["dt"], record_every=dense["record_every"],
                        record=dense["record"], final=layout.final)
        res_store = dataclasses.replace(res, times=np.zeros(0), trajectories={})
        arrays = layout.block_arrays(res_store, inputs, sample, sample + 1)
        arrays = {p: a for p, a in arrays.items() if not p.startswith("trajectories/")}
    else:
        res = world.run(t_end=scene.t_end, dt=scene.dt, record_every=scene.record_every, record=layout.record,
                        final=layout.final)
        arrays = layout.block_arrays(res, inputs, sample, sample + 1)
    root = zstore.open_root(path)
    differs = []
    for p, a in arrays.items():
        stored = np.asarray(root[p][sample:sample + 1])
        same = stored.shape == a.shape and (stored.tobytes() == np.ascontiguousarray(a, stored.dtype).tobytes()
                                            if stored.dtype.kind not in "OUT" else
                                            [str(x) for x in stored.ravel()] == [str(x) for x in a.ravel()])
        if not same:
            differs.append(p)
    out = {"sample": int(sample), "arrays": {p: a[0] for p, a in arrays.items()}, "differs": differs,
           "status": int(arrays["final/status"][0]), "failure_code": int(arrays["final/failure_code"][0]),
           "failure_message": str(arrays["final/failure_message"][0])}
    if tracer is not None:
        out["trace"] = tracer.step_trace()
    if dense is not None:
        out["times"] = res.times
        out["trajectory"] = {c: a[0] for c, a in res.trajectories.items()}
    return out


def _dense_plan(scene: Scene, world, every: float, record) -> dict:
    """Frame, decimation and columns of a dense rerun (:func:`rerun_sample`)."""
    if not (math.isfinite(every) and every > 0):
        raise InputError("every", every, "must be a positive time [s]")
    cols = tuple(record or scene.record or [c for c in DENSE_COLUMNS if (world.column_spec(c) is not None)])
    if not cols:
        raise InputError("record", record, "name the columns to record (the scene records none)")
    for c in cols:
        if not (world.column_spec(c) is not None):
            raise InputError("record", c, "is not a column of the scene's world")
    if any(getattr(s, "dense_output", False) for s in world.systems):
        return {"dt": every, "record_every": 1, "record": cols}
    k = every / scene.dt
    if abs(k - round(k)) > 1e-9 * max(1.0, k) or round(k) < 1:
        raise InputError("every", every, f"must be a multiple of the scene's frame {scene.dt:g} s: in this world "
                                         "the frame is the integration step, so a finer one would change the physics")
    return {"dt": scene.dt, "record_every": int(round(k)), "record": cols}
