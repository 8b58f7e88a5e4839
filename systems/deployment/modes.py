"""The mode loop: rows that each follow their own mode, launched over index lists (seed 004 §2.7.3).

A **mode** is one way a row is advanced: flight, a pending collision, contact motion — or a mode
a user writes (a harpoon anchor, a tether, a hop). Every row of a mode loop's table carries its
mode in one integer column (:attr:`ModeLoop.mode_column`). Within a frame ``[t, t + dt]`` the loop
repeats *passes* until every running row has reached its frame end:

1. for every mode in order, select the running rows in it (:func:`select_rows`, one pass, no
   numpy mask chain) and launch the mode over that index list — never over all rows with a branch
   on the mode inside a kernel (the seed's GPU design, which keeps warps uniform; rows in other
   modes cost nothing);
2. the **event mode** is not stepped but resolved: its rows have an event pending at their
   ``row_time``. The world's EVENT systems see them first, in the world's order (each may take
   rows: switch their mode or end them), then the loop's own resolver takes the rest;
3. the loop's end system ends rows (settled, escaped, timed out) and returns those still pending.

A mode's launch returns after a bounded amount of work, so one stiff row cannot hold a pass and a
row can change mode several times within a frame. On the CPU the running rows are dealt into one
group per numba thread, and each group runs the passes on its own; a worker that runs out of rows
takes over half of another's pending rows (:class:`RowShare`). On the GPU backend the passes run
over index lists built on the device, and rows never leave it within a frame
(:meth:`ModeLoop._device_passes`, :class:`DeviceLists`).

**Adding a mode** (no engine change): a :class:`Mode` system with a ``code`` of its own and an
:meth:`Mode.advance` that steps its rows, added with ``world.add_system``; an EVENT system with a
``resolve(ctx, rows)`` that moves rows into it. A mode steps each row to its frame end
``t_end[row]`` exactly, or less (and it may end rows: ``row_status``); only the loop's own modes
keep dense output and step past a frame end (docs/design.md §8.2). The loop refuses a mode whose
code is taken, and an EVENT system without ``resolve``. Example: ``scenes/examples/deploy_harpoon.py``.

:class:`systems.deployment.loop.DeploymentLoop` is the mode loop of probe deployment.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from time import perf_counter_ns as time_ns
from typing import Callable

import numba
import numpy as np

from components.status import Reason, Status
from ecs import InputError, Phase, System
from ecs.kernels import CompileUnit, DeviceRows, compact_rows, cpu_jit, device_array, dual, listed, to_host

__all__ = ["DeviceLists", "KernelMode", "Mode", "ModeLoop", "RowShare", "in_mode", "select_rows"]

_RUNNING = int(Status.RUNNING)
_FAILED = int(Status.FAILED)
_PASS_GUARD = int(Reason.PASS_GUARD)


#: ``TUMBLE_GPU_TIMING=1``: the device loop synchronises around each mode's launches and adds their
#: time to :attr:`ModeLoop.timings` (off by default: a synchronisation per launch costs time).
GPU_TIMING = os.environ.get("TUMBLE_GPU_TIMING", "0") == "1"


def _device_clock() -> int:
    """With :data:`GPU_TIMING`, the clock [ns] after every launch so far has finished; else 0."""
    if not GPU_TIMING:
        return 0
    from numba import cuda

    cuda.synchronize()
    return time_ns()


def _in_mode(i, status, mode, time, which, t_lim):
    """Row ``i`` is running, in mode ``which`` and behind ``t_lim[i]``: the test that puts a row
    on its mode's index list."""
    return status[i] == _RUNNING and mode[i] == which and time[i] < t_lim[i]


in_mode = dual(_in_mode)
_in = in_mode.cpu


def _running(i, status):
    """Row ``i`` is running."""
    return status[i] == _RUNNING


running_row = dual(_running)


def _stop_stuck(i, status, reason, time, t_lim):
    """Flag row ``i`` FAILED (PASS_GUARD) when it is running and still behind ``t_lim[i]``; puts
    no row on a list (the pass guard of :meth:`ModeLoop._device_passes`)."""
    if status[i] == _RUNNING and time[i] < t_lim[i]:
        status[i] = _FAILED
        reason[i] = _PASS_GUARD
    return False


stop_stuck = dual(_stop_stuck)


@cpu_jit(nogil=True)
def select_rows(rows, status, mode, time, which, t_lim, out):
    """out[:k] <- the running rows ``i`` of ``rows`` in mode ``which`` with time < t_lim[i]; returns k.

    The index list a mode is launched over (seed §2.7.3), built in one pass instead of a chain of
    numpy masks: the loop builds one per mode per pass, for groups of ~100 rows. On the GPU
    backend the same test (:data:`in_mode`) builds the list on the device
    (:func:`ecs.kernels.compact_rows`)."""
    k = 0
    for j in range(rows.shape[0]):
        i = rows[j]
        if _in(i, status, mode, time, which, t_lim):
            out[k] = i
            k += 1
    return k


class DeviceLists:
    """A mode loop's index lists on the GPU backend, kept on the device for a table of ``n`` rows
    (seed 004 §2.7.3: kernels over index lists built on the device): the rows still pending in a
    frame and the next pass's (swapped after every pass), the rows of the mode being launched,
    every row, and "no time limit" / "no frame end" per row."""

    def __init__(self, n: int):
        def rows() -> DeviceRows:
            return DeviceRows(device_array(np.zeros(max(n, 1), np.int64)), device_array(np.zeros(1, np.int64)), 0)

        self.n = int(n)
        self.pending, self.next, self.mode = rows(), rows(), rows()
        self.every = device_array(np.arange(max(n, 1), dtype=np.int64))
        self.no_lim = device_array(np.full(max(n, 1), np.inf))
        self.no_end = device_array(np.full(max(n, 1), -np.inf))

    @staticmethod
    def read(rows: DeviceRows) -> int:
        """Read ``rows``' count from the device (a synchronisation) and make it the list's bound."""
        rows.bound = int(to_host(rows.count)[0])
        return rows.bound


class Mode(System):
    """One mode of a :class:`ModeLoop` (module docstring): advances the rows in it.

    Subclasses set :attr:`code` and implement :meth:`advance`; a world's Mode systems join its mode
    loop after the loop's own modes, in registration order. Modes are exclusive per row, so two
    modes may write the same columns.
    """

    phase = Phase.MODE
    #: the value of the loop's mode column for rows in this mode
    code: int = -1
    #: the mode's key in :attr:`ModeLoop.timings` (default: the system's name)
    key: str = ""
    #: steps rows past their frame end and shows them there by dense output (the loop's own modes);
    #: a mode without it stops each row at its frame end ``t_end[row]`` or before
    dense_output: bool = False

    def advance(self, ctx, rows: np.ndarray, t_end: np.ndarray) -> None:  # pragma: no cover - abstract
        """Advance ``rows`` (indices of running rows in this mode, behind their frame end) towards
        their frame ends ``t_end[row]`` [s]. ``ctx``: the loop's context
        (:class:`systems.deployment.loop.DeployContext` for a deployment: ``ctx.table``, ``ctx.settings``)."""
        raise NotImplementedError

    def bind_context(self, ctx) -> None:
        """Called by the loop at bind with its context (size per-row scratch here). Default: nothing."""

    def process(self, frame) -> None:  # pragma: no cover - launched by its mode loop
        raise RuntimeError(f"{self.name} is a mode: its mode loop launches it over the rows in it")


class KernelMode(Mode):
    """A mode stepped by one span kernel that the loop's context launches by this mode's key,
    ``ctx.launch(key, rows, *args)`` (the deployment's fly and contact phases,
    :meth:`systems.deployment.loop.DeployContext.launch`): a subclass gives the kernel's arguments after
    its row span (:meth:`launch_args`), which :meth:`advance` and the kernel's compile unit
    (:meth:`ecs.system.System.compile_units`) both use. Runs on both backends: on the GPU ``rows``
    is an index list on the device (:class:`ecs.kernels.DeviceRows`)."""

    def advance(self, ctx, rows, t_end) -> None:
        """Run this mode's kernel over ``rows``, each up to its frame end ``t_end[row]`` [s] (an
        array over the table's rows: rows of a streaming active set entered at different frames)."""
        if len(rows):
            ctx.launch(self.key, rows, *self.launch_args(ctx, listed(rows), t_end))

    @staticmethod
    def launch_args(ctx, rows: np.ndarray, t_end) -> tuple:  # pragma: no cover - abstract
        """The kernel's arguments after its row span, for ``rows`` and frame ends ``t_end``."""
        raise NotImplementedError


class RowShare:
    """Rows handed from busy workers to idle ones within one frame (:meth:`ModeLoop.process`).

    A worker with no pending row calls :meth:`wait`; a worker between two passes calls
    :meth:`offer` with its pending rows and, if some worker is waiting, keeps the first half and
    hands the second half over. The frame ends for everybody when all workers wait at once.
    """

    def __init__(self, workers: int):
        self.workers = workers
        self.waiting = 0          # workers waiting and not yet promised rows
        self.gifts: list[np.ndarray] = []
        self.done = False
        self._cond = threading.Condition()

    def offer(self, rows: np.ndarray) -> np.ndarray:
        """The rows the calling worker keeps (all of them unless a worker is waiting)."""
        if self.waiting == 0 or len(rows) < 2:      # the common case, read without the lock
            return rows
        with self._cond:
            if self.waiting == 0:
                return rows
            keep = (len(rows) + 1) // 2
            self.gifts.append(rows[keep:].copy())
            self.waiting -= 1
            self._cond.notify()
        return rows[:keep]

    def wait(self) -> np.ndarray | None:
        """Rows handed over to the calling worker, or None when every worker is out of rows."""
        with self._cond:
            self.waiting += 1
            if self.waiting == self.workers:
                self.done = True
                self._cond.notify_all()
            while not self.gifts and not self.done:
                self._cond.wait()
            return self.gifts.pop() if self.gifts else None

    def abort(self) -> None:
        """End the frame for every worker (one of them failed)."""
        with self._cond:
            self.done = True
            self._cond.notify_all()


class ModeLoop(System):
    """The generic mode loop (module docstring): one SCHEDULED system that owns its modes.

    A subclass sets :attr:`mode_column` and :attr:`event_mode`, passes its own modes, event
    resolver and end system to ``__init__``, builds its context ``self.ctx`` (with ``table`` and
    ``backend``) in ``bind`` and calls :meth:`join` there; it may override :meth:`frame_start` and
    :meth:`frame_end`.

    Args:
        modes: the loop's own modes (:class:`Mode`), in launch order; the event mode is launched
            after the first of them (flight, then its collisions, then contact motion).
        resolver: the EVENT system that resolves every event the world's EVENT systems leave
            (``resolve(ctx, rows)``).
        end: the end system: ``check(ctx, rows, t_lim)`` ends rows and returns those still pending.
        max_passes: passes per frame before a row that still has not reached the frame end is
            flagged FAILED (a guard: no row can hang the batch); a call that covers several
            frames (``frame.span``) allows as many times more.
    """

    phase = Phase.SCHEDULED
    #: runs the world's EVENT systems (:func:`ecs.system.check_events`) and Mode systems
    runs_events = True
    #: the integer column holding each row's mode
    mode_column: str = ""
    #: the mode of rows with an event pending at their row_time (resolved, not stepped)
    event_mode: int = -1
    #: the column value of ended rows (no mode)
    ended_mode: int = -1

    #: [s] of simulated time the CPU loop may run between two synchronisations of its workers when
    #: no frame end is needed sooner (:meth:`frame_span`). Every synchronisation waits for the
    #: slowest worker and restarts every row's launch: deploy-cube (2,000 samples, 2 threads, 300 s
    #: frames) ran 1.17x as fast in the median of 5 interleaved pairs against one synchronisation
    #: per frame, with the same steps and the same bytes (docs/design.md §8.36).
    sync_interval: float = 3600.0

    def __init__(self, modes: tuple, resolver: System, end: System, *, max_passes: int = 10_000):
        self.own_modes = tuple(modes)
        self.resolver = resolver
        self.end = end
        self.max_passes = int(max_passes)
        self._pass_limit = self.max_passes     # this call's: max_passes x the frames it covers
        self.user_modes: tuple[Mode, ...] = ()
        self.handlers: tuple[System, ...] = ()
        self.ctx = None
        #: time [s] spent in each mode, the events and the end system since bind, summed over the
        #: worker threads (thread-seconds); keys: the modes' keys, "collide", "end"
        self.timings: dict[str, float] = {}
        self._order: list[tuple[str, int, bool, Callable]] = []
        self._pool: ThreadPoolExecutor | None = None
        self._pool_size = 0
        self._lock = threading.Lock()
        self._no_lim = np.zeros(0)  # "no time limit" for every row (event rows are selected at any time)

    def compile_units(self) -> list:
        """The row selection every pass of the loop runs (:func:`select_rows`) on this table's
        columns (:meth:`ecs.system.System.compile_units`): compiled cold with the rest, in whichever
        process is free, instead of at the first frame (0.15-0.2 s on 2 cores). A subclass adds
        its modes' kernels."""
        ctx = self.ctx
        if ctx is None or getattr(ctx, "backend", "cpu") != "cpu":
            return []
        t, rows = ctx.table, np.zeros(0, np.int64)
        return [CompileUnit("modes.select_rows", select_rows,
                            (rows, t["row_status"], t[self.mode_column], t["row_time"], 0, np.zeros(0), rows),
                            cost=0.2)]

    @property
    def systems(self) -> tuple[System, ...]:
        """The loop's modes, event resolvers and end system, in launch order."""
        own = self.own_modes
        return own[:1] + tuple(self.handlers) + (self.resolver,) + own[1:] + tuple(self.user_modes) + (self.end,)

    def join(self, world) -> None:
        """Take the world's Mode and EVENT systems into the loop (module docstring); refuse a mode
        whose code is taken or an EVENT system that cannot resolve the loop's events."""
        taken = {int(m.code): m.name for m in self.own_modes}
        taken[int(self.event_mode)] = f"{type(self).__name__}'s event mode"
        taken[int(self.ended_mode)] = f"{type(self).__name__}'s ended rows"
        users = list(world.schedule()[Phase.MODE])
        dtype = self.ctx.table[self.mode_column].dtype
        for m in users:
            code = m.code
            if not isinstance(code, (int, np.integer)) or isinstance(code, bool):
                raise InputError(f"{m.name}.code", code, f"must be an int: the value of {self.mode_column} for its rows")
            info = np.iinfo(dtype)
            if not info.min <= int(code) <= info.max:
                raise InputError(f"{m.name}.code", code,
                                 f"must fit {self.mode_column} ({dtype}: {info.min}..{info.max})")
            if int(code) in taken:
                raise InputError(f"{m.name}.code", int(code), f"is taken by {taken[int(code)]}: give the mode a "
                                 f"code of its own")
            taken[int(code)] = m.name
            if not callable(getattr(m, "advance", None)) or type(m).advance is Mode.advance:
                raise InputError(f"system {m.name}", "Mode", "must implement advance(ctx, rows, t_end)")
        handlers = list(world.schedule()[Phase.EVENT])
        for h in handlers:
            if not callable(getattr(h, "resolve", None)):
                raise InputError(f"system {h.name}", "phase EVENT",
                                 f"cannot take part in {type(self).__name__}: its EVENT systems resolve the rows with "
                                 f"a pending event through resolve(ctx, rows) (example: "
                                 f"scenes/examples/deploy_harpoon.py)")
        if (users or handlers) and self.ctx.backend != "cpu":
            raise InputError(f"system {(users + handlers)[0].name}", self.ctx.backend,
                             "the world's modes and EVENT systems run on the CPU backend only (their launches are "
                             "Python-level); use backend='cpu'")
        self.user_modes = tuple(users)
        self.handlers = tuple(handlers)
        for s in self.user_modes + self.handlers:
            if hasattr(s, "bind_context"):
                s.bind_context(self.ctx)
        first, rest = self.own_modes[:1], self.own_modes[1:]
        self._order = ([((m.key or m.name), int(m.code), True, m.advance) for m in first]
                       + [("collide", int(self.event_mode), False, self._resolve_events)]
                       + [((m.key or m.name), int(m.code), True, m.advance) for m in rest]
                       + [((m.key or m.name), int(m.code), True, self._bounded(m)) for m in self.user_modes])
        self.timings = {k: 0.0 for k, _, _, _ in self._order}
        self.timings["end"] = 0.0
        self.launch_count = dict.fromkeys(self.timings, 0)
        if self.ctx.backend == "gpu":
            self.ctx.lists = DeviceLists(self.ctx.table.row_count)

    def _bounded(self, mode: Mode) -> Callable:
        """``mode.advance``, checked to leave every row at or before its frame end (a mode without
        dense output that stepped past it would show a later state as the frame end's)."""
        if mode.dense_output:
            return mode.advance

        def advance(ctx, rows, t_end):
            mode.advance(ctx, rows, t_end)
            time = ctx.table["row_time"]
            over = rows[time[rows] > t_end[rows]]
            if len(over):
                i = int(over[0])
                raise RuntimeError(f"mode {mode.name} advanced row {i} to t = {time[i]!r} s, past its frame end "
                                   f"{t_end[i]!r} s: a mode without dense output stops each row at its frame end")
        return advance

    def _resolve_events(self, ctx, rows: np.ndarray, t_end: np.ndarray) -> None:
        """The event mode's rows: the world's EVENT systems first (each sees the rows still in the
        event mode), then the loop's resolver."""
        if self.handlers and len(rows):
            t = ctx.table
            status, mode, time = t["row_status"], t[self.mode_column], t["row_time"]
            sel = np.empty(len(rows), np.int64)
            for h in self.handlers:
                h.resolve(ctx, rows)
                k = select_rows(rows, status, mode, time, int(self.event_mode), self._no_lim, sel)
                rows = sel[:k].copy()
                if not k:
                    return
        self.resolver.resolve(ctx, rows)

    def refill(self, world, slots: np.ndarray) -> None:
        """New samples in sample slots ``slots`` (streaming active set): the world's modes and EVENT
        systems reset what they keep per row."""
        for s in self.user_modes + self.handlers:
            s.refill(world, slots)

    def frame_start(self, frame) -> tuple:
        """Called first in every frame; returns ``(t_end, t_end less round-off)`` per row (on the
        device on the GPU backend)."""
        t_end = frame.row_ends(self.ctx.table)
        ends = (t_end, t_end - 1e-12 * np.maximum(1.0, np.abs(t_end)))
        if self.ctx.backend == "gpu":
            return tuple(device_array(e) for e in ends)
        return ends

    def frame_end(self, frame, t_end: tuple) -> None:
        """Called last in every frame, after every running row reached its frame end."""

    def frame_span(self, step: float) -> int:
        """Frames of ``step`` [s] one call may cover (:meth:`ecs.system.System.frame_span`): as
        many as fit in :attr:`sync_interval` on the CPU, so the workers wait for each other about
        once per simulated hour. Every row's steps stay the same: the modes step past frame ends
        with dense output, and a mode a user adds steps each row to its own frame end, wherever
        that is. The GPU backend keeps one frame per call (its device loop's refills and
        synchronisations have not been measured on a device with longer frames)."""
        if self.ctx is None or self.ctx.backend == "gpu" or not (step > 0.0):
            return 1
        return max(1, int(self.sync_interval // step))

    def process(self, frame) -> None:
        """Advance every running row to its frame end (module docstring).

        The running rows are dealt round-robin into one group per numba thread, and each group runs
        its own passes in a worker thread (the calling thread runs the first) on the serial builds
        of the kernels (compiled ``nogil``): groups never wait for each other within the frame. A
        worker whose rows have all reached the frame end takes over half of the rows another worker
        still has pending, at that worker's next pass (:class:`RowShare`): without it the frame
        waited for the group that happened to hold the frame's bouncing rows (measured on 200
        ``deploy-cube`` trajectories: the sum over frames of the slower group's time was 17 % above
        half the thread-seconds). A frame-synchronous loop over all rows with ``prange`` launches
        instead waited, at every pass and in every mode, for the slowest row of that launch
        (measured: 2 threads no faster than 1). Every row's arithmetic is the same whichever worker
        runs it, and a row changes hands only between two launches, where its state is in the table.
        """
        ctx = self.ctx
        self._pass_limit = self.max_passes * max(1, int(getattr(frame, "span", 1)))
        t_end = self.frame_start(frame)
        if ctx.backend == "gpu":
            self._device_passes(t_end)
            self.frame_end(frame, t_end)
            return
        if self._no_lim.shape[0] != ctx.table.row_count:
            self._no_lim = np.full(ctx.table.row_count, np.inf)
        running = np.flatnonzero(ctx.table["row_status"] == Status.RUNNING)
        groups = min(numba.get_num_threads(), len(running)) if ctx.backend == "cpu" else 1
        if groups <= 1:
            self._advance(running, t_end)
        else:
            if self._pool is None or self._pool_size != groups - 1:
                if self._pool is not None:
                    self._pool.shutdown()
                self._pool = ThreadPoolExecutor(groups - 1, thread_name_prefix="tumble-modes")
                self._pool_size = groups - 1
            share = RowShare(groups)
            futures = [self._pool.submit(self._advance, running[g::groups], t_end, share) for g in range(1, groups)]
            self._advance(running[0::groups], t_end, share)       # the calling thread is worker 0
            for f in futures:
                f.result()
        self.frame_end(frame, t_end)

    def _advance(self, rows: np.ndarray, t_end: tuple, share: RowShare | None = None) -> None:
        """The passes of one worker over its rows (index array) up to their frame ends
        ``t_end = (ends, ends less round-off)`` (arrays over the table's rows) [s].

        After every pass the worker keeps only its rows still pending (the others are at the frame
        end or ended) and, when another worker is idle, hands half of them over (``share``). When
        none is left it waits for rows from another worker, until every worker is idle.
        ``max_passes`` (x the frames the call covers) counts this worker's passes in the frame, gifts
        included.
        """
        tm = dict.fromkeys(self.timings, 0.0)
        try:
            self._loop(rows, t_end, tm, share)
        except BaseException:
            if share is not None:
                share.abort()           # the other workers must not wait for rows from this one
            raise
        finally:
            with self._lock:
                for k, v in tm.items():
                    self.timings[k] += v

    def _loop(self, rows: np.ndarray, t_end: tuple, tm: dict, share: RowShare | None) -> None:
        """:meth:`_advance`'s passes; adds the thread-seconds of each mode to ``tm``."""
        ctx = self.ctx
        t = ctx.table
        status, mode, time = t["row_status"], t[self.mode_column], t["row_time"]
        t_end, lim = t_end
        no_lim = self._no_lim
        order = self._order
        end = self.end
        passes = 0
        while rows is not None:
            rows = np.ascontiguousarray(rows, dtype=np.int64)
            sel = np.empty(len(rows), np.int64)
            while len(rows):
                if passes == self._pass_limit:
                    stuck = rows[(status[rows] == Status.RUNNING) & (time[rows] < lim[rows])]
                    status[stuck] = Status.FAILED
                    t["row_reason"][stuck] = Reason.PASS_GUARD
                    end.check(ctx, rows)
                    break
                passes += 1
                c0 = time_ns()
                for key, code, timed, run in order:
                    k = select_rows(rows, status, mode, time, code, lim if timed else no_lim, sel)
                    run(ctx, sel[:k], t_end)
                    c1 = time_ns()
                    tm[key] += (c1 - c0) * 1e-9
                    c0 = c1
                rows = end.check(ctx, rows, lim)
                tm["end"] += (time_ns() - c0) * 1e-9
                if share is not None:
                    rows = share.offer(rows)
            rows = share.wait() if share is not None else None

    def _device_passes(self, t_end: tuple) -> None:
        """The passes of one frame on the GPU backend (module docstring; seed 004 §2.7.3): every
        index list is built on the device (:func:`ecs.kernels.compact_rows` with :data:`in_mode`),
        each mode is launched over its list with as many threads as rows are pending
        (:class:`ecs.kernels.DeviceRows`: threads past the list's device count return at once),
        and the end system writes the next pass's pending list on the device. The host reads one
        number per pass, how many rows are still pending; rows never leave the device. A pass
        costs two launches per mode and one for the end rules (:attr:`launch_count`).

        The lists' order follows the device's atomics and varies between runs; every kernel
        launched over them treats each row on its own, so no result depends on it (the CPU
        backend's worker groups rely on the same).
        """
        ctx = self.ctx
        t, lists = ctx.table, ctx.lists
        status, mode, time = t["row_status"], t[self.mode_column], t["row_time"]
        ends, lim = t_end
        compact_rows(running_row, lists.n, lists.every, lists.pending, status)
        n = lists.read(lists.pending)
        passes = 0
        launches = self.launch_count
        while n:
            pending = lists.pending
            if passes == self._pass_limit:
                compact_rows(stop_stuck, n, pending.ids, lists.mode, status, t["row_reason"], time, lim)
                self.end.check(ctx, pending, lists.no_end, out=lists.next)
                break
            passes += 1
            for key, code, timed, run in self._order:
                c0 = _device_clock()
                compact_rows(in_mode, n, pending.ids, lists.mode, status, mode, time, code,
                             lim if timed else lists.no_lim)
                run(ctx, lists.mode, ends)
                launches[key] += 2
                if c0:
                    self.timings[key] += (_device_clock() - c0) * 1e-9
            c0 = _device_clock()
            self.end.check(ctx, pending, lim, out=lists.next)
            launches["end"] += 1
            if c0:
                self.timings["end"] += (_device_clock() - c0) * 1e-9
            lists.pending, lists.next = lists.next, lists.pending
            n = lists.read(lists.pending)
