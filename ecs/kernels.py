"""One kernel source, two targets (docs/design.md §2).

Every per-row physics body is written once as a plain Python function on scalars and element
indexing (``math.*``, no allocation, no ``raise``) and compiled twice:

* ``cpu``: ``numba.njit(inline="always", cache=True)`` — called from a ``prange`` driver;
* ``gpu``: ``numba.cuda.jit(device=True)`` — called from a ``@cuda.jit`` driver with ``cuda.grid(1)``.

``dual(fn)`` returns both as a :class:`DualKernel`. The GPU compile is lazy: importing a system
never touches CUDA, so the CPU backend works on machines without a driver, and the CUDA simulator
(``NUMBA_ENABLE_CUDASIM=1``) can run the very same sources in CI. With ``TUMBLE_CUDASIM_STRICT=1``
the simulator's device arrays refuse host work as a device's do (:class:`SimDeviceArray`).

Measured pitfall (numba 0.68), beyond docs/design.md §2: a ``for ... break`` loop inside an inlined
kernel that is called from a ``prange`` body gave wrong results (~1e-10 relative in Carlson's
integrals) while the serial build was right; write such loops as ``while`` loops.

Fastmath: none. ``fastmath=True`` deletes ``np.isnan`` checks; the "safe" subset
(``nsz, arcp, contract, afn``) keeps them but lets LLVM contract and rewrite arithmetic depending
on the code a kernel is inlined into, so the serial and the ``prange`` build of one row driver gave
different bits (measured on probe deployment: 24 trajectories, final positions 4.6e-5 m apart after
chaotic bounces). Without fast-math flags both builds are bitwise identical (measured), so a driver
may pick either by row count and results still do not depend on block size or thread count
(docs/design.md §2, determinism); the cost was ~10 % on the deployment kernels. ``reassoc`` in
particular must never come back: per-sample work stays in one thread.
"""

from __future__ import annotations

import contextlib
import gc
import os
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

import numba
import numpy as np

from ._numba_speed import native_only

#: Fast-math flags of every kernel: none (module docstring: determinism across drivers).
FASTMATH: set[str] = set()

#: numba's error model of every CPU kernel: "numpy", IEEE arithmetic as on the GPU, where a
#: division by zero gives ±inf or NaN (which the kernels' finite-state checks flag, so the row
#: fails with a reason and the batch goes on) instead of raising ZeroDivisionError out of a
#: launch (numba's default, "python", tests every divisor and keeps an exception path from each).
ERROR_MODEL = "numpy"

#: Compile kernels without numba's reference-counting runtime (``_nrt=False``; kernels allocate
#: nothing, docs/design.md §2). With it, every array view a kernel takes (``M[r, slot]``) and every
#: array passed to a non-inlined callee costs an atomic increment and decrement of the buffer's
#: reference count: the articulated-body solve of an 8-link arm took 4.06 µs with them and 2.08 µs
#: without (measured, numba 0.68). A kernel that allocates fails to compile and says so; it passes
#: ``nrt=True``. ``prange`` builds keep the runtime (:func:`cpu_jit`).
NRT = False

#: Threads per block for GPU drivers.
GPU_BLOCK = 128

#: How device functions reach the GPU (``TUMBLE_GPU_INLINE``, read at import). Default ``""``: a
#: kernel that is a plain call on the CPU (``dual(..., inline=False)``, e.g. every ``dual_call``)
#: stays a call on the GPU (LLVM ``noinline``), so NVVM and ptxas compile it once rather than once
#: per call site; the small ones (``inline=True``) are inlined. ``"all"``: NVVM inlines everything
#: (the build before issue 33: 2.7 MB of PTX for the flight kernel, minutes of ptxas for the
#: collision kernel), kept to compare the two on a device (docs/design.md §8.11).
GPU_INLINE = os.environ.get("TUMBLE_GPU_INLINE", "")


def cuda_simulated() -> bool:
    """True when numba's CUDA simulator is active (``NUMBA_ENABLE_CUDASIM=1``)."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") == "1"


def cuda_available() -> bool:
    """True when a CUDA device (or the CUDA simulator) can run kernels."""
    try:
        from numba import cuda

        return bool(cuda.is_available())
    except Exception:  # pragma: no cover - depends on the machine
        return False


def cuda_import_error() -> str | None:
    """Why ``numba.cuda`` does not import here, in one line, or ``None`` when it does. The common
    case gets its cause named: numba-cuda 0.30 registers an overload of ``np.row_stack``, which
    numpy 2.5 removed, so it fails at import under numpy >= 2.5."""
    try:
        from numba import cuda  # noqa: F401
    except Exception as exc:  # pragma: no cover - depends on the machine
        try:
            from importlib.metadata import version

            nc = version("numba-cuda")
        except Exception:
            nc = "not installed"
        if "row_stack" in str(exc):
            return (f"numba-cuda {nc} does not import with numpy {np.__version__} (np.row_stack was removed in "
                    "numpy 2.5): install numpy<2.5, e.g. pip install 'tumble[gpu]'")
        return f"numba.cuda does not import (numba-cuda {nc}, numpy {np.__version__}): {type(exc).__name__}: {exc}"
    return None


def gpu_backend_error() -> str | None:
    """Why ``backend="gpu"`` cannot run here, in one line, or ``None`` when it can."""
    why = cuda_import_error()
    if why:
        return "backend 'gpu': " + why
    if not cuda_available():
        return ("backend 'gpu' needs a CUDA device: none was found (install the 'gpu' extra, or 'gpu-cuda12' for a "
                "CUDA 12 driver, on a machine with an NVIDIA driver)")
    if cuda_simulated():
        return None
    try:
        import cupy  # noqa: F401
    except Exception:
        return "backend 'gpu' needs CuPy: install the 'gpu' extra (pip install 'tumble[gpu]')"
    return None


# ------------------------------------------------------------------ call boundaries (CPU)
def _call_boundary_setting() -> int:
    raw = os.environ.get("TUMBLE_CALL_BOUNDARY", "400")
    try:
        n = int(raw)
    except ValueError:
        n = -1
    if n < 0:
        from ecs.errors import InputError

        raise InputError("TUMBLE_CALL_BOUNDARY", raw, "must be an integer >= 0: the lines of LLVM IR from which a "
                                                      "callee is called by symbol (0: never)")
    return n


#: A kernel whose optimised body holds at least this many lines of LLVM IR is called by symbol
#: from other kernels instead of being linked into each of them (``TUMBLE_CALL_BOUNDARY``, read at
#: import; 0: link everything, as numba does). numba links every callee's module into each caller's
#: and optimises and emits it again there, so a leaf eight calls deep was compiled eight times;
#: LLVM inlines nothing this large (at ``-O3`` it stops near 250), so a call stays a call and only
#: the repeated compile goes (docs/design.md §8.26).
CALL_BOUNDARY = _call_boundary_setting()

#: Kernels that may be called by symbol, by :func:`_boundary_key`: what a kernel loaded from the
#: disk cache names when it needs its callee loaded first (:func:`_load_boundary`).
_BOUNDARY_KERNELS: dict[str, Any] = {}
#: Symbols defined in this process: name → address.
_BOUNDARY_SYMBOLS: dict[str, int] = {}


def _boundary_key(dispatcher) -> str | None:
    """Where the kernel's source is, as a string the same in every process: its file, qualified
    name and bytecode. ``None`` for a function defined inside another (not unique by name)."""
    py = dispatcher.py_func
    if "<locals>" in py.__qualname__:
        return None
    import hashlib

    code = hashlib.sha1(py.__code__.co_code).hexdigest()[:16]
    return f"{py.__code__.co_filename}:{py.__qualname__}:{code}"


def call_boundary(dispatcher):
    """Let callers reach the CPU ``dispatcher`` by symbol where its optimised body is large
    (:data:`CALL_BOUNDARY`). Returns the dispatcher.

    numba's own call links the callee's LLVM module into the caller's, where it is optimised and
    turned into machine code again, once per caller and per level of the call tree. Here, once an
    overload of the kernel is compiled or loaded (numba's ``add_overload``) and its body holds at
    least :data:`CALL_BOUNDARY` lines of LLVM IR, the process gets a symbol for it (``tumble$`` and a
    digest of :func:`_boundary_key` and the signature, the same in every process) and numba's
    lowering of a call to it becomes a call of that symbol, with no module linked. A caller saved
    in numba's disk cache keeps the symbol's name, and a reload step (numba's ``reload_init``)
    that loads the callee before the caller's machine code is linked (:func:`_load_boundary`), so
    a cached caller never runs before its callee is in the process. The machine code of each
    function is what numba compiled (same arithmetic, same bits); only the caller's copy of a
    callee LLVM would not have inlined is gone.
    """
    if not _is_dispatcher(dispatcher):
        return dispatcher
    key = _boundary_key(dispatcher)
    if key is None:
        return dispatcher
    _keep_reload_steps()                 # also at a setting of 0: cached callers may call it by symbol
    _BOUNDARY_KERNELS[key] = dispatcher
    dispatcher._tumble_boundary = key
    if CALL_BOUNDARY > 0:
        dispatcher.add_overload = _BoundOverload(dispatcher)
    return dispatcher


class _BoundOverload:
    """``dispatcher.add_overload`` (numba's, then :func:`_define_boundary` for a large body)."""

    def __init__(self, dispatcher):
        self.dispatcher = dispatcher

    def __call__(self, cres) -> None:
        d = self.dispatcher
        type(d).add_overload(d, cres)
        if not cres.objectmode and _body_size(cres) >= CALL_BOUNDARY:
            _define_boundary(d, cres)


def _body_size(cres) -> int:
    """Lines of LLVM IR of the compiled function itself, after numba's optimisation: its
    instructions, its block labels and its signature. Printed in one call: walking the
    instructions one by one through llvmlite took 0.8 s per warm start (measured)."""
    lib = cres.library
    mod = lib._shared_module if lib._shared_module is not None else lib._final_module
    try:
        fn = mod.get_function(cres.fndesc.llvm_func_name)
    except NameError:
        return 0
    return str(fn).count("\n")


def _boundary_symbol(key: str, args: tuple) -> str:
    import hashlib

    return "tumble$" + hashlib.sha1(f"{key}|{args}".encode()).hexdigest()[:32]


def _define_symbol(name: str, cres) -> bool:
    """Make ``name`` resolve to the compiled function of ``cres`` in this process."""
    import llvmlite.binding as ll

    addr = cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)
    if not addr:         # pragma: no cover - numba defines every function it compiled or loaded
        return False
    if _BOUNDARY_SYMBOLS.get(name) != addr:
        ll.add_symbol(name, addr)
        _BOUNDARY_SYMBOLS[name] = addr
    return True


def _define_boundary(d, cres) -> None:
    """Name the compiled function ``cres`` of ``d`` by its symbol and make numba's lowering of a
    call to it call that symbol (no linking), recording the reload step in each caller. The step
    carries the symbol's name as the caller's machine code has it."""
    import copy
    import functools

    from numba.core.base import user_function

    args = tuple(cres.signature.args)
    name = _boundary_symbol(d._tumble_boundary, args)
    if not _define_symbol(name, cres):
        return
    fd = copy.copy(cres.fndesc)
    fd.mangled_name = name
    call = user_function(fd, ())
    reload = functools.partial(_load_boundary, d._tumble_boundary, args, name)

    def lower_call(context, builder, sig, call_args):
        context.active_code_library._reload_init.add(reload)
        return call(context, builder, sig, call_args)

    lower_call.signature = call.signature
    lower_call.libs = ()
    ctx = d.targetctx
    ctx.remove_user_function(cres.entry_point)
    ctx._defns[cres.entry_point].append(lower_call, lower_call.signature)


def _keep_reload_steps() -> None:
    """Give a kernel loaded from numba's disk cache the reload steps of its compile.

    numba runs a cached kernel's reload steps (``reload_init``) when it loads it, but leaves them
    off the loaded code library, and a kernel compiled later inherits the steps of the libraries
    it links from those libraries. A kernel that links a cached one calling a callee by symbol
    would then be saved without the step that loads that callee, and abort (LLVM: symbol not
    found) when loaded from the cache in a later process. Installed once, with the first
    :func:`call_boundary`."""
    from numba.core.compiler import CompileResult

    if getattr(CompileResult._rebuild, "_tumble", False):
        return
    base = CompileResult._rebuild.__func__

    def _rebuild(cls, *args, **kwargs):
        cres = base(cls, *args, **kwargs)
        if cres.reload_init:
            cres.library._reload_init.update(cres.reload_init)
        return cres

    _rebuild._tumble = True
    CompileResult._rebuild = classmethod(_rebuild)


def _load_boundary(key: str, args: tuple, name: str) -> None:
    """numba's reload step of a cached kernel that calls ``key`` by the symbol ``name``: compile or
    load that callee for ``args`` and define ``name``, before the caller's machine code is linked
    (whatever this process's setting, and whatever name it would give the callee itself)."""
    d = _BOUNDARY_KERNELS.get(key)
    if d is None:
        raise RuntimeError(f"a cached kernel calls {key} by symbol, but no such kernel was created in this "
                           "process; clear numba's cache (TUMBLE_CACHE_DIR) and report this")
    cres = d.overloads.get(args)
    if cres is None:
        with native_only():         # called by symbol: no Python wrapper needed (ecs._numba_speed)
            d.compile(args)
        cres = d.overloads[args]
    _define_symbol(name, cres)


def cpu_jit(fn: Callable | None = None, *, nrt: bool | None = None, **options: Any):
    """``njit`` with the project defaults (cache, no fast-math, no reference counting: :data:`NRT`,
    no C entry point: numba's cfunc wrapper serves a kernel passed as a function value, which none
    is, and costs compile time, docs/design.md §8.25; large kernels called by symbol,
    :func:`call_boundary`). Usable bare or with options. A ``parallel=True`` build keeps the
    runtime: numba's ``prange`` lowering allocates (reduction arrays) and needs it."""
    if nrt is None:
        nrt = NRT or bool(options.get("parallel", False))
    opts = {"cache": True, "fastmath": FASTMATH, "_nrt": nrt, "no_cfunc_wrapper": True, "error_model": ERROR_MODEL}
    opts.update(options)
    if fn is None:
        return lambda f: call_boundary(numba.njit(**opts)(f))
    return call_boundary(numba.njit(**opts)(fn))


#: Below this many rows a CPU driver runs its serial twin: a parallel launch costs ~10-50 µs.
PARALLEL_MIN_ROWS = 4096


class RowDriver:
    """A CPU row driver compiled twice (``prange`` parallel and serial) from one source.

    ``driver(n, *args)`` runs the serial build for ``n < PARALLEL_MIN_ROWS`` and the parallel one
    otherwise. Results are identical: every row (or sample) is computed by one thread either way.
    """

    def __init__(self, fn: Callable, **options: Any):
        self.py = fn
        self.parallel = cpu_jit(fn, parallel=True, **options)
        # numba's disk cache is keyed by qualname, line and signature, not by `parallel`: compiled
        # from `fn` itself, the serial twin would load the parallel machine code from the cache
        # (one OpenMP region per launch, threads spinning). A renamed twin gets its own entry.
        import types

        twin = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
        twin.__qualname__ = fn.__qualname__ + "_serial"
        self.serial = cpu_jit(twin, **options)
        self.__doc__ = fn.__doc__
        self.__name__ = fn.__name__

    def __call__(self, n, *args):
        return (self.parallel if n >= PARALLEL_MIN_ROWS else self.serial)(n, *args)

    def roots(self, name: str) -> dict:
        """Both builds as :func:`relink` roots, ``{name + ".parallel": ..., name + ".serial": ...}``."""
        return {name + ".parallel": self.parallel, name + ".serial": self.serial}

    @classmethod
    def linked(cls, kernels: dict, name: str) -> "RowDriver":
        """The driver made of the two relinked builds of :meth:`roots` (nothing compiled here)."""
        d = cls.__new__(cls)
        d.parallel, d.serial = kernels[name + ".parallel"], kernels[name + ".serial"]
        d.py, d.__name__ = d.parallel.py_func, name
        return d


class SampleDriver:
    """CPU driver of a heavy row function (one tree sample: thousands of flops per step) over ``n``
    rows: one contiguous block of rows per numba thread, each run by ``kernel(start, stop, *args)``
    — a serial loop compiled ``nogil`` — in its own Python thread, the calling thread taking the
    first block. Unlike a ``prange`` build it accepts tuple arguments (a row term's columns and
    arrays; numba's parfors pass tuples to its gufunc as scalars and refuse them), and unlike
    :class:`RowDriver` it goes parallel from two rows on. Results are those of the serial loop:
    each row is computed by one thread either way.
    """

    #: one worker pool for every SampleDriver of the process (drivers are made per bind: a pool
    #: each would leave idle threads behind block after block)
    _pool = None
    _pool_lock = threading.Lock()

    def __init__(self, kernel: Callable):
        self.kernel = kernel

    @classmethod
    def pool(cls, workers: int):
        """The shared pool, grown to at least ``workers`` threads."""
        with cls._pool_lock:
            if cls._pool is None or cls._pool._max_workers < workers:
                from concurrent.futures import ThreadPoolExecutor

                old, cls._pool = cls._pool, ThreadPoolExecutor(workers, thread_name_prefix="tumble-samples")
                if old is not None:
                    old.shutdown(wait=False)
            return cls._pool

    def __call__(self, n, *args):
        k = min(numba.get_num_threads(), int(n))
        if k <= 1:
            return self.kernel(0, n, *args)
        pool = self.pool(k - 1)
        bounds = [n * j // k for j in range(k + 1)]
        futures = [pool.submit(self.kernel, bounds[j], bounds[j + 1], *args) for j in range(1, k)]
        self.kernel(bounds[0], bounds[1], *args)
        for f in futures:
            f.result()


class PointsDriver(RowDriver):
    """A :class:`RowDriver` whose size is its first argument's leading axis: ``driver(points, ...)``.

    For numpy-facing evaluators over a batch of points (gravity at many points, ...): a call with a
    handful of points runs the serial build instead of waking every thread (measured: 8 ms for
    one voxel lookup on a busy 2-core machine through the parallel build, 9 µs serial).
    """

    def __init__(self, fn: Callable, *, min_rows: int = PARALLEL_MIN_ROWS, **options: Any):
        super().__init__(fn, **options)
        self.min_rows = int(min_rows)

    def __call__(self, points, *args):
        return (self.parallel if points.shape[0] >= self.min_rows else self.serial)(points, *args)


def cpu_parallel_points(fn: Callable | None = None, *, min_rows: int = PARALLEL_MIN_ROWS, **options: Any):
    """Points driver ``fn(points, *args)`` looping ``prange(points.shape[0])``: see :class:`PointsDriver`."""
    if fn is None:
        return lambda f: PointsDriver(f, min_rows=min_rows, **options)
    return PointsDriver(fn, min_rows=min_rows, **options)


def cpu_parallel(fn: Callable | None = None, **options: Any):
    """Row driver ``fn(n, *args)`` looping ``prange(n)``: see :class:`RowDriver`."""
    if fn is None:
        return lambda f: RowDriver(f, **options)
    return RowDriver(fn, **options)


_DUAL_BY_CPU: dict[int, "DualKernel"] = {}


@dataclass
class DualKernel:
    """A device function compiled for the CPU now and for the GPU on first use.

    Callees: inside a kernel source, call other kernels through module globals bound to their CPU
    twins (``_rot = quat_rotate.cpu``). The GPU build recompiles the same code object with every
    such global swapped for the callee's GPU twin, so one source serves both targets.
    """

    py: Callable
    cpu: Callable
    _gpu: Callable | None = field(default=None, repr=False)
    gpu_inline: bool = True

    @property
    def gpu(self) -> Callable:
        if self._gpu is None:
            self._gpu = _device_function(self.py, inline=self.gpu_inline)
        return self._gpu


#: GPU twins of plain ``njit`` functions a kernel calls (term kernels, relinked copies), by id.
_GPU_BY_CPU: dict[int, Callable] = {}
#: constants made by :func:`gpu_literal`: id → (the np.int64 object, its Python int)
_GPU_LITERALS: dict[int, tuple] = {}


def gpu_literal(value: int) -> np.int64:
    """An integer constant a kernel passes to a callee (a stage, a mode, a code), typed for each
    target: ``np.int64`` on the CPU, so numba compiles the callee once for every value (a Python
    literal compiles one specialisation per value, and of all its callees); the Python ``int`` on
    the GPU, whose twin (:func:`_device_function`) then specialises on it and NVVM folds it into the
    callee's code. Measured (docs/design.md, "Compile time"): as literals on both targets, station's
    derivative compiled three times on the CPU (63.1 against 79.0 s cold); as ``np.int64`` on both,
    sm_90 spilled more (station's ``_advance_sample`` 1280/2348 B against 500/332 B) and facet
    contact's ``_log_contact_changes`` took 210 registers instead of 128."""
    v = np.int64(value)
    _GPU_LITERALS[id(v)] = (v, int(value))
    return v


def _device_min(a, b):
    """``min(a, b)`` with Python's (and numba's CPU) semantics: ``b if b < a else a``."""
    return b if b < a else a


def _device_max(a, b):
    """``max(a, b)`` with Python's (and numba's CPU) semantics: ``b if b > a else a``."""
    return b if b > a else a


def _device_function(py: Callable, inline: bool = True) -> Callable:
    """The CUDA device function of the kernel source ``py``, its callees swapped for GPU twins.

    Every global the source calls that is the CPU twin of a :class:`DualKernel` becomes that
    kernel's GPU twin; any other ``njit`` function (a term kernel, a :func:`relink` copy, a
    generated fused term) becomes a device function compiled the same way from its own source, so
    a kernel family relinked on the CPU has a GPU twin too. Two-argument ``min``/``max`` become
    device functions with the CPU semantics: numba >= 0.66 cannot compile the builtins on the
    CUDA target (numba issue #10753, "two-argument max/min fail on CUDA"; measured on 0.68.1).
    A constant made by :func:`gpu_literal` becomes its Python ``int``.
    """
    import builtins
    import types

    from numba import cuda

    g = dict(py.__globals__)
    for name in py.__code__.co_names:  # only the globals this source calls
        v = g.get(name)
        if v is None and name in ("min", "max") and name in vars(builtins):
            g[name] = _device_builtin(name)
            continue
        callee = _DUAL_BY_CPU.get(id(v))
        literal = _GPU_LITERALS.get(id(v))
        if callee is not None and callee.cpu is v:
            g[name] = callee.gpu
        elif _is_dispatcher(v):
            g[name] = _gpu_twin(v)
        elif literal is not None and literal[0] is v:
            g[name] = literal[1]
    fn = types.FunctionType(py.__code__, g, py.__name__, py.__defaults__, py.__closure__)
    if not inline and GPU_INLINE != "all":
        fn._tumble_noinline = True
        _install_noinline_hook()
    return cuda.jit(device=True)(fn)


_NOINLINE_HOOK: list = []


def _install_noinline_hook() -> None:
    """Make NVVM keep the device functions marked ``_tumble_noinline`` as calls (LLVM's
    ``noinline`` attribute, which numba-cuda itself sets on every function of a debug build)."""
    if _NOINLINE_HOOK or cuda_simulated():
        return
    try:
        from numba.cuda.lowering import CUDALower      # numba-cuda (the gpu extra)
    except ImportError:  # pragma: no cover - numba's own, deprecated CUDA target lowers with the core class
        from numba.core.lowering import Lower as CUDALower

    base = CUDALower.pre_lower

    def pre_lower(self):
        base(self)
        if getattr(self.func_ir.func_id.func, "_tumble_noinline", False):
            attrs = self.builder.function.attributes
            if "alwaysinline" not in attrs:
                attrs.add("noinline")

    CUDALower.pre_lower = pre_lower
    _NOINLINE_HOOK.append(base)


_DEVICE_BUILTINS: dict[str, Callable] = {}


def _device_builtin(name: str) -> Callable:
    k = _DEVICE_BUILTINS.get(name)
    if k is None:
        from numba import cuda

        k = _DEVICE_BUILTINS[name] = cuda.jit(device=True)(_device_min if name == "min" else _device_max)
    return k


def _gpu_twin(dispatcher) -> Callable:
    """The device function of a plain ``njit`` dispatcher (:func:`_device_function`), built once."""
    k = _GPU_BY_CPU.get(id(dispatcher))
    if k is None:
        py = dispatcher.py_func      # a relinked copy of a dual kernel keeps its GPU choice (relink copies it)
        inline = getattr(py, "_tumble_gpu_inline", dispatcher.targetoptions.get("inline", "never") == "always")
        k = _GPU_BY_CPU[id(dispatcher)] = _device_function(dispatcher.py_func, inline=inline)
    return k


def gpu_function(kernel) -> Callable:
    """The CUDA device function of a :class:`DualKernel` or of any ``njit`` kernel (its callees
    swapped for their GPU twins, :func:`_device_function`)."""
    if isinstance(kernel, DualKernel):
        return kernel.gpu
    dual_of = _DUAL_BY_CPU.get(id(kernel))
    if dual_of is not None and dual_of.cpu is kernel:
        return dual_of.gpu
    if _is_dispatcher(kernel):
        return _gpu_twin(kernel)
    raise TypeError(f"{kernel!r} is neither a DualKernel nor an njit function")


def dual(fn: Callable, *, inline: bool = True, nogil: bool = False, gpu_inline: bool | None = None) -> DualKernel:
    """Compile ``fn`` as a CPU device function; its GPU twin compiles lazily.

    ``inline=False`` keeps the CPU twin a regular cached call: for the few large, branchy kernels
    whose inlining into every caller multiplies compile time (an ellipsoid root find: 21 s vs
    3.8 s compile for one caller, measured) for little run-time gain. ``nogil=True``: a span
    kernel that CPU worker threads call from Python (:func:`launch_span`). ``gpu_inline`` (default:
    as ``inline``) decides the same for the GPU twin (:data:`GPU_INLINE`): ``False`` for a kernel
    the CPU inlines with profit but NVVM would compile once per call site (the deployment's contact
    wrench). A large kernel with one call site is not inlined on the CPU either: numba deep-copies
    its IR block by block at the site, its whole scope once per block, and its own pipeline costs
    less (the rest certificate, event location, snapshots; docs/design.md §8.27). An inlined body's arguments are locals: a ``None``
    mode argument prunes nothing in it (docs/design.md §2), so a kernel that relies on that pruning
    stays a call (:func:`dual_call`).
    """
    opts = {"inline": "always"} if inline else {}
    if nogil:
        opts["nogil"] = True
    gpu_inline = inline if gpu_inline is None else gpu_inline
    fn._tumble_gpu_inline = gpu_inline       # read by the GPU twin of a relinked copy (:func:`_gpu_twin`)
    k = DualKernel(py=fn, cpu=call_boundary(numba.njit(cache=True, fastmath=FASTMATH, _nrt=NRT, no_cfunc_wrapper=True,
                                                       error_model=ERROR_MODEL, **opts)(fn)),
                   gpu_inline=gpu_inline)
    _DUAL_BY_CPU[id(k.cpu)] = k
    return k


def dual_call(fn: Callable) -> DualKernel:
    """:func:`ecs.kernels.dual` with ``inline=False``: the CPU twin is a plain cached call.

    Inlining at numba-IR level (``dual``'s default) the impact integrator (a Dormand–Prince step
    calling the right-hand side seven times, called from event location and the phase loop)
    multiplied the IR and took > 10 minutes and 15 GB to compile; LLVM still inlines these calls
    where it pays.

    Second pitfall (numba 0.68): a call from a jitted function with a Python-int *constant*
    argument compiles a separate specialisation of the callee per distinct literal (and of all its
    callees); the offsets and codes passed between these kernels are therefore ``np.int64``.
    """
    return dual(fn, inline=False)


_GC_FROZEN = 0
_GC_LOCK = threading.Lock()


@contextlib.contextmanager
def gc_frozen():
    """Python's cyclic garbage collector ignores the objects that exist when the block starts, until
    the outermost such block ends (``gc.freeze``, then ``gc.unfreeze``). A full collection walks
    every object the process holds; after a numba compile that is millions (its registries, types
    and compiled functions), and a batch run triggered several walks of 0.2-0.3 s while it wrote
    its results (docs/design.md §8.28). Objects made inside the block are collected as usual;
    garbage that existed at its start is collected after it. Nested blocks freeze what was made
    since, and only the outermost unfreezes."""
    global _GC_FROZEN
    with _GC_LOCK:
        gc.freeze()
        _GC_FROZEN += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _GC_FROZEN -= 1
            if _GC_FROZEN == 0:
                gc.unfreeze()


class _FreezeEachCompile(numba.core.event.Listener):
    """A ``numba:compile`` listener that freezes the collector's objects (``gc.freeze``) as each
    function's compile starts, inside a :func:`gc_frozen` block: a full collection then walks only
    what the function being compiled has made. Garbage caught by a freeze waits for the block's end
    (peak memory of a cold deploy-cube process 298-335 MB -> 346-394 MB, docs/design.md §8.28)."""

    def on_start(self, event) -> None:
        gc.freeze()

    def on_end(self, event) -> None:
        pass


@dataclass(frozen=True)
class CompileUnit:
    """One CPU kernel compile a bound system knows it will need: ``kernel`` (an ``njit``
    dispatcher or a :class:`DualKernel`) called with arguments of the types of ``args`` (example
    values: only their numba types matter). ``cost`` weighs units against each other when a cold
    start shares them between processes (:func:`ecs.warm.warm_kernels`): a relative guess, not a
    time."""

    name: str
    kernel: Any
    args: tuple
    cost: float = 1.0

    @property
    def dispatcher(self):
        return self.kernel.cpu if isinstance(self.kernel, DualKernel) else self.kernel

    def signature(self) -> tuple:
        """The argument types a call with :attr:`args` compiles for (numba's own ``typeof``)."""
        d = self.dispatcher
        return tuple(d.typeof_pyval(a) for a in self.args)

    def ready(self) -> bool:
        """True when the call needs no compile: compiled in this process or in numba's disk cache.
        A unit found on disk is loaded now (milliseconds)."""
        d = self.dispatcher
        sig = self.signature()
        if sig in d.overloads:
            return True
        try:
            cres = d._cache.load_overload(sig, d.targetctx)   # numba's own cache lookup (None: a miss)
        except Exception:  # pragma: no cover - a numba without this internal: treat as a miss
            return False
        if cres is None:
            return False
        d.compile(sig)          # installs it as numba does on a cache hit
        return True

    def compile(self) -> None:
        """Compile (or load from the disk cache) the kernel for :meth:`signature`.

        Python's cyclic garbage collector ignores the objects that exist when the compile starts,
        and those that exist when each function it reaches starts compiling (:func:`gc_frozen`,
        :class:`_FreezeEachCompile`): numba's compile makes millions of objects, and each full
        collection it triggers traversed every object of the process again (numba's registries,
        the imports, the scene, the functions compiled so far): 15 such passes of 0.1-0.25 s each
        in a cold deploy-cube run's batch, as many in its helper (docs/design.md §8.28)."""
        sig = self.signature()
        with gc_frozen(), numba.core.event.install_listener("numba:compile", _FreezeEachCompile()):
            self.dispatcher.compile(sig)


def gpu_grid(n: int) -> tuple[int, int]:
    """(blocks, threads) covering ``n`` rows (threads a multiple of the 32-lane warp)."""
    threads = min(GPU_BLOCK, 32 * max(1, (n + 31) // 32))
    return (max(1, (n + threads - 1) // threads), threads)


def array_module(a):
    """numpy or cupy, whichever owns ``a``; for a :class:`SimDeviceArray` the simulator's stand-in
    for CuPy (:data:`SIM_XP`): array code written against the module this returns runs on the
    device, as CuPy's ufuncs and reductions do."""
    if isinstance(a, SimDeviceArray):
        return SIM_XP
    mod = type(a).__module__
    if mod.startswith("cupy"):
        import cupy

        return cupy
    return np


#: Under the CUDA simulator, make device arrays :class:`SimDeviceArray` (``TUMBLE_CUDASIM_STRICT=1``):
#: host code that touches them other than through kernels and explicit copies then fails, as it
#: does on a device. Read when an array is made (:func:`device_array`).
def sim_strict() -> bool:
    return cuda_simulated() and os.environ.get("TUMBLE_CUDASIM_STRICT", "0") == "1"


class SimDeviceArray(np.ndarray):
    """A device array as the CUDA simulator's strict mode keeps it (:func:`sim_strict`): a numpy
    array that only kernels and explicit copies may touch, as on a device.

    Refused with ``TypeError``: numpy ufuncs and functions on it (``col == 1``, ``np.flatnonzero``;
    also on what indexing it returns) and a CPU (``njit``) kernel taking it: what fails on a CuPy
    array. Allowed: CUDA kernel launches (the simulator copies each array in and back with
    ``np.copy``/``np.copyto``), indexing (what a kernel body does, at numpy's speed: no Python-level
    check per element), attributes and views (``shape``, ``reshape``), :meth:`get` (a host copy,
    like CuPy's) and :meth:`set`. A CuPy array allows more (its own ufuncs run on the device), so
    code that passes here runs on a device too.
    """

    #: leave numba's fast typeof path, which would take a subclass for a plain array
    __numba_array_subtype_dispatch__ = True

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        raise TypeError(f"numpy ufunc {ufunc.__name__} on a device array: launch a kernel or copy it to the host "
                        f"(ecs.kernels.to_host)")

    def __array_function__(self, func, types, args, kwargs):
        if func is np.copyto or func is np.copy:        # the simulator's own transfers
            args = tuple(a.view(np.ndarray) if isinstance(a, SimDeviceArray) else a for a in args)
            return func(*args, **kwargs)
        raise TypeError(f"np.{func.__name__} on a device array: launch a kernel or copy it to the host "
                        f"(ecs.kernels.to_host)")

    def get(self) -> np.ndarray:
        """A host copy (CuPy's ``get``)."""
        return np.array(self.view(np.ndarray))

    def set(self, host) -> None:
        """Copy the host array ``host`` (same shape) into this one (CuPy's ``set``)."""
        np.copyto(self.view(np.ndarray), host)


class _SimArrayModule:
    """CuPy as the strict simulator sees it (:func:`array_module` of a :class:`SimDeviceArray`):
    ``SIM_XP.f(...)`` runs ``numpy.f`` on the arrays' memory and returns device arrays, as a CuPy
    function returns CuPy arrays — work the device does. Host numpy on a device array stays
    refused (:class:`SimDeviceArray`): array code must name the array module it runs on."""

    def __getattr__(self, name):
        f = getattr(np, name)
        if not callable(f) or isinstance(f, type):
            return f

        def on_device(*args, **kwargs):
            out = f(*_host_views(args), **{k: _host_views((v,))[0] for k, v in kwargs.items()})
            return out.view(SimDeviceArray) if isinstance(out, np.ndarray) else out

        on_device.__name__ = name
        return on_device


def _host_views(items) -> tuple:
    return tuple(a.view(np.ndarray) if isinstance(a, SimDeviceArray) else a for a in items)


#: The strict simulator's stand-in for CuPy (:func:`array_module`).
SIM_XP = _SimArrayModule()


def _refuse_in_njit():
    from numba.core.typing.typeof import typeof_impl

    @typeof_impl.register(SimDeviceArray)
    def _typeof(val, c):
        raise TypeError("a CPU (njit) kernel was given a device array: launch its GPU twin")


_refuse_in_njit()


def device_array(a):
    """A copy of host array ``a`` on the GPU backend's device: a CuPy array on a device; under the
    CUDA simulator a writable numpy copy (it writes every array argument back after a launch), or
    a :class:`SimDeviceArray` in strict mode."""
    a = np.asarray(a)
    if not cuda_simulated():
        import cupy

        return cupy.asarray(a)
    if sim_strict():
        return np.array(a).view(SimDeviceArray)
    return np.array(a)


def copy_into(dst, host) -> None:
    """Copy host array ``host`` into ``dst`` (numpy, CuPy or simulated device array; same shape)."""
    if isinstance(dst, np.ndarray) and not isinstance(dst, SimDeviceArray):
        dst[...] = host
    else:
        dst.set(np.ascontiguousarray(host, dtype=dst.dtype))


def to_backend(backend: str, args: tuple) -> tuple:
    """The arrays among ``args`` as a kernel launch on ``backend`` takes them, copied once at bind:
    unchanged on the CPU, device copies on the GPU backend (:func:`device_array`); a tuple among
    them is copied element by element and made a kernel tuple (:func:`kernel_tuple`; a record stays one of
    its class)."""
    if backend != "gpu":
        return tuple(args)
    return tuple(device_array(a) if isinstance(a, np.ndarray) else kernel_tuple(_same_kind(a, to_backend(backend, a)))
                 if isinstance(a, tuple) else a for a in args)


def _same_kind(like: tuple, items: tuple) -> tuple:
    """``items`` as a record of ``like``'s class when ``like`` is a record (a namedtuple), else as they are."""
    return type(like)(*items) if hasattr(type(like), "_fields") else items


def kernel_tuple(items) -> tuple:
    """``items`` (device arrays, numbers, nested tuples) as one tuple argument of a CUDA kernel.

    On a device, each CuPy array becomes a numba view of the same memory
    (``numba.cuda.as_cuda_array``): numba's CUDA dispatcher accepts a CuPy array as an argument of
    its own (through ``__cuda_array_interface__``) but types a tuple's members with the CPU rules,
    which know only numba's device arrays. Under the simulator: the items as they are.
    A record (:func:`ecs.component.record`, a namedtuple) stays one of its class.
    """
    rec = type(items) if isinstance(items, tuple) and hasattr(type(items), "_fields") else None
    if cuda_simulated():
        return items if rec is not None else tuple(items)
    from numba import cuda

    def view(a):
        if isinstance(a, tuple):
            return kernel_tuple(a)
        if cuda.is_cuda_array(a) and not cuda.devicearray.is_cuda_ndarray(a):
            return cuda.as_cuda_array(a)
        return a

    views = [view(a) for a in items]
    return rec(*views) if rec is not None else tuple(views)


def kernel_args(backend: str, items) -> tuple:
    """``items`` as one tuple argument of a row kernel launched on ``backend``: the tuple itself on
    the CPU (a record stays one of its class), :func:`kernel_tuple` of it on the GPU (CuPy arrays
    as numba device views)."""
    if backend == "gpu":
        return kernel_tuple(items)
    return items if isinstance(items, tuple) else tuple(items)


def to_host(a):
    """A numpy copy of a numpy, CuPy or simulated device array (no copy for numpy)."""
    if isinstance(a, SimDeviceArray) or (hasattr(a, "get") and not isinstance(a, np.ndarray)):
        return a.get()
    if hasattr(a, "copy_to_host"):
        return a.copy_to_host()
    return np.asarray(a)


def set_rows(dst, rows, value) -> None:
    """``dst[rows] = value`` on either backend: ``rows`` a host index array, ``value`` a number or a
    host array of ``len(rows)`` rows. On the host, numpy's assignment; on the device one kernel
    (one thread per element; the rows and the values are copied in), so a streaming active set
    refills rows without copying whole tables (:meth:`ecs.world.World._load_slots`)."""
    if isinstance(dst, np.ndarray) and not isinstance(dst, SimDeviceArray):
        dst[rows] = value
        return
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    k = len(rows)
    if not k:
        return
    m = int(np.prod(dst.shape[1:], dtype=np.int64))
    flat = dst.reshape(dst.shape[0], m)
    blocks, threads = gpu_grid(k * m)
    if np.ndim(value) == 0:
        _row_kernels()[0][blocks, threads](device_array(rows), flat, dst.dtype.type(value), k, m)
    else:
        src = np.ascontiguousarray(np.broadcast_to(value, (k,) + tuple(dst.shape[1:])), dtype=dst.dtype)
        _row_kernels()[1][blocks, threads](device_array(rows), flat, device_array(src.reshape(k, m)), k, m)


_ROW_KERNELS: list = []


def _row_kernels() -> tuple:
    """The CUDA kernels of :func:`set_rows` (built once, lazily): fill and scatter."""
    if not _ROW_KERNELS:
        from numba import cuda

        ns = {"cuda": cuda}     # a global of the kernels: the simulator swaps it for its own module
        exec("def fill(rows, dst, v, k, m):\n"  # noqa: S102 - fixed source
             "    t = cuda.grid(1)\n"
             "    if t < k * m:\n"
             "        dst[rows[t // m], t % m] = v\n"
             "def scatter(rows, dst, src, k, m):\n"
             "    t = cuda.grid(1)\n"
             "    if t < k * m:\n"
             "        dst[rows[t // m], t % m] = src[t // m, t % m]\n", ns)
        _ROW_KERNELS.extend((cuda.jit(ns["fill"]), cuda.jit(ns["scatter"])))
    return tuple(_ROW_KERNELS)


@dataclass
class DeviceRows:
    """An index list built on the device (seed 004 §2.7.3): the rows ``ids[:count[0]]``, whose
    number only the device knows; ``bound`` (known on the host) is at least that number and sizes
    a launch over them (:func:`launch_span`): threads past ``count[0]`` return at once, so no
    launch waits for the host to read a count."""

    ids: Any
    count: Any
    bound: int

    def __len__(self) -> int:
        return self.bound


def listed(rows):
    """The index array of ``rows``: an index array itself, or a :class:`DeviceRows`'s ``ids``."""
    return rows.ids if isinstance(rows, DeviceRows) else rows


#: Generated CUDA drivers by (kernel, argument count, call form).
_GPU_DRIVERS: dict = {}


def _gpu_driver(kernel, nargs: int, lead: str, bound: str = "n"):
    """A ``@cuda.jit`` driver calling ``kernel``'s GPU twin as ``fn({lead}a0, a1, ...)`` in thread
    ``i < {bound}`` (built once, lazily)."""
    names = ", ".join(f"a{j}" for j in range(nargs))
    return _generated(kernel, (nargs, lead, bound), f"def _driver(n, {names}):\n"
                                                    f"    i = cuda.grid(1)\n"
                                                    f"    if i < {bound}:\n"
                                                    f"        fn({lead}{names})\n")


def _generated(kernel, key: tuple, src: str):
    """The ``@cuda.jit`` kernel ``_driver`` defined by ``src``, in which ``fn`` is ``kernel``'s GPU
    twin (built once per kernel and ``key``; cached on disk on a device, :func:`_driver_file`)."""
    key = (id(kernel), *key)
    k = _GPU_DRIVERS.get(key)
    if k is None:
        from numba import cuda

        ns = {"cuda": cuda, "fn": gpu_function(kernel)}
        path = None if cuda_simulated() else _driver_file(kernel, src)
        if path is not None:
            src = path.read_text()
        code = compile(src, str(path) if path else "<tumble generated driver>", "exec")
        exec(code, ns)  # noqa: S102 - generated driver, source fully determined by the caller
        opts = {"cache": path is not None}
        if GPU_MAX_REGISTERS:
            opts["max_registers"] = GPU_MAX_REGISTERS
        k = cuda.jit(**opts)(ns["_driver"])
        _GPU_DRIVERS[key] = k
    return k


#: ``max_registers`` of every generated GPU driver (``TUMBLE_GPU_MAX_REGISTERS``; 0: ptxas decides).
#: Read at import: a study of occupancy against spills sets it per process (docs/design.md §8.11).
GPU_MAX_REGISTERS = int(os.environ.get("TUMBLE_GPU_MAX_REGISTERS", "0") or 0)


def _driver_file(kernel, src: str):
    """A real file holding the driver ``src`` of ``kernel``, so that numba-cuda's disk cache
    (``cache=True``: the cubin per compute capability, loaded in milliseconds by the next process)
    can key it; ``None`` when no cache directory is writable.

    numba keys a cached kernel by its own file's name and time stamp only, not by its callees. So
    the file is named by a hash of the driver source, of the kernel's name and of every source
    file the kernel reaches (``reachable_kernels``: the engine's files, a user's term file, the
    generated module of a relinked family), of numba's and numba-cuda's versions and of the
    inlining switches: any change to any of them writes a new file and compiles afresh, as
    ``ecs._cache`` does for the CPU (docs/design.md §2). The cache itself lives in numba's cache
    directory (``ecs._cache.use_versioned_numba_cache``), which numba-cuda reads from its own
    config module: both are pointed at it here."""
    import hashlib

    from . import _cache

    d = _cache.cache_dir("gpu")
    if d is None:
        return None
    try:
        import numba.cuda.core.config as cuda_config   # numba-cuda reads its own copy of the setting
    except ImportError:  # pragma: no cover - numba's own CUDA target reads numba.config
        cuda_config = None
    if cuda_config is not None and numba.config.CACHE_DIR and not cuda_config.CACHE_DIR:
        cuda_config.CACHE_DIR = numba.config.CACHE_DIR
    py = kernel.py if isinstance(kernel, DualKernel) else kernel.py_func
    cpu = kernel.cpu if isinstance(kernel, DualKernel) else kernel
    h = hashlib.sha256(src.encode())
    h.update(f"{py.__module__}.{py.__qualname__}:{py.__code__.co_filename}".encode())
    try:
        import numba_cuda

        h.update(f"numba {numba.__version__} numba-cuda {numba_cuda.__version__}".encode())
    except ImportError:  # pragma: no cover - the gpu extra provides it
        h.update(numba.__version__.encode())
    h.update(f"inline {GPU_INLINE!r} maxreg {GPU_MAX_REGISTERS}".encode())
    for f in sorted({getattr(k.py_func.__code__, "co_filename", "") for k in reachable_kernels(cpu)}):
        h.update(f.encode())
        try:
            with open(f, "rb") as fh:
                h.update(fh.read())
        except OSError:
            pass
    path = d / f"driver_{h.hexdigest()[:24]}.py"
    if not path.exists():
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(f"# generated GPU driver of {py.__module__}.{py.__qualname__} (ecs.kernels._driver_file)\n"
                       + src)
        os.replace(tmp, path)
    return path


def gpu_row_kernel(row, nargs: int):
    """A ``@cuda.jit`` driver running ``row``'s GPU twin ``(i, *args)`` for ``i < n`` (built once,
    lazily); ``row`` is a :class:`DualKernel` or an ``njit`` row function (:func:`gpu_function`).

    The CPU twin of such a driver is written by hand next to each row function as an
    ``njit(parallel=True, cache=True)`` loop over ``prange(n)``: hand-written drivers hit numba's
    disk cache, generated ones (closures, dispatcher arguments) never do (docs/design.md §2).
    """
    return _gpu_driver(row, nargs, "i, ")


def gpu_span_kernel(span, nargs: int):
    """A ``@cuda.jit`` driver running ``span``'s GPU twin ``(i, i + 1, *args)`` for ``i < n``: one
    thread per listed row (built once, lazily; :func:`launch_span`)."""
    return _gpu_driver(span, nargs, "i, i + 1, ")


def gpu_listed_span_kernel(span, nargs: int):
    """:func:`gpu_span_kernel` over a :class:`DeviceRows` list: the driver's ``n`` is the list's
    device count (a one-element array), read by every thread."""
    return _gpu_driver(span, nargs, "i, i + 1, ", "n[0]")


def gpu_compact_kernel(test, nargs: int):
    """A ``@cuda.jit`` driver ``(n, rows, out, count, a0, ...)``: thread ``j < n`` runs ``test``'s
    GPU twin on row ``i = rows[j]`` as ``test(i, a0, ...)`` and, when it returns true, appends
    ``i`` to ``out`` (``count[0]`` counts them; set it to 0 before). The order of ``out`` follows
    the threads' atomics, not ``rows``: what runs over the list next must treat every row on its
    own, so that no result depends on it (every deployment kernel does: one thread per row)."""
    names = ", ".join(f"a{j}" for j in range(nargs))
    return _generated(test, (nargs, "compact"), f"def _driver(n, rows, out, count, {names}):\n"
                                                f"    j = cuda.grid(1)\n"
                                                f"    if j < n:\n"
                                                f"        i = rows[j]\n"
                                                f"        if fn(i, {names}):\n"
                                                f"            out[cuda.atomic.add(count, 0, 1)] = i\n")


def compact_rows(test, n: int, rows, out: DeviceRows, *args) -> None:
    """On the device: ``out`` <- the rows ``i`` among ``rows[:n]`` for which ``test(i, *args)``
    (a :class:`DualKernel` or ``njit`` function) is true (:func:`gpu_compact_kernel`); ``out.count``
    is reset first. The host learns nothing until it reads ``out.count``."""
    out.count.fill(0)
    out.bound = int(n)
    if n:
        blocks, threads = gpu_grid(n)
        gpu_compact_kernel(test, len(args))[blocks, threads](n, rows, out.ids, out.count, *args)


def launch_span(backend: str, span, n, *args) -> None:
    """Run a *span kernel* ``span(j0, j1, *args)`` (it handles the listed items ``j0 <= j < j1``)
    over ``n`` items: one call ``span(0, n, *args)`` on the CPU (``span`` a CPU dispatcher or a
    :class:`DualKernel`), or one CUDA thread per item calling its GPU twin with ``(j, j + 1)``.
    On the GPU ``n`` may be a :class:`DeviceRows` list: ``n.bound`` threads, of which those past
    the list's device count return at once.

    A span kernel is one compiled function where a row function and a CPU loop driver over it
    would be two: numba compiles every dispatcher into its own module with all its callees, so a
    driver repeats its row function's whole optimisation and code generation (measured on the
    deployment's three phase kernels: 8.7 s of a cold start).
    """
    if isinstance(n, DeviceRows):       # an index list built on the device: as many threads as it may hold
        if n.bound:
            blocks, threads = gpu_grid(n.bound)
            gpu_listed_span_kernel(span, len(args))[blocks, threads](n.count, *args)
        return
    if n == 0:
        return
    if backend == "gpu":
        blocks, threads = gpu_grid(n)
        gpu_span_kernel(span, len(args))[blocks, threads](n, *args)
    else:
        (span.cpu if isinstance(span, DualKernel) else span)(0, n, *args)


def launch_rows(backend: str, cpu_driver, row: DualKernel, n: int, *args) -> None:
    """Run a row function over ``n`` rows: ``cpu_driver(n, *args)`` or its CUDA twin."""
    if n == 0:
        return
    if backend == "gpu":
        blocks, threads = gpu_grid(n)
        gpu_row_kernel(row, len(args))[blocks, threads](n, *args)
    else:
        cpu_driver(n, *args)


#: ``TUMBLE_CHECK_LAUNCHES=1`` (the test suite sets it): every :class:`PreparedRows` call checks
#: the numba types of its changing arguments against those it was resolved for.
CHECK_LAUNCHES = os.environ.get("TUMBLE_CHECK_LAUNCHES", "0") == "1"


class PreparedRows:
    """A row launch whose arguments a system gathers once, at bind: ``launch(n, *tail)`` runs
    ``launch_rows(backend, cpu_driver, row, n, *fixed, *tail)``.

    On the CPU the call goes straight to the compiled build's entry point once the dispatcher has
    resolved it (first call): numba's dispatcher types every argument at every call, which for a
    kernel taking ~60 arrays in tuples costs ~2 µs of the ~3 µs a launch costs on a small scene
    (measured: facet contact's find kernel, 2 × 250 facets, 3.15 µs dispatcher against 1.2 µs
    entry point with no rows). ``fixed`` must keep its types for the life of the launch (a
    system's columns and scratch, whose objects live from bind to the end of the run); the
    ``tail`` (a stage index, a time) must keep its numba types from call to call, which
    :data:`CHECK_LAUNCHES` verifies at every call in the test suite. On the GPU backend it is
    :func:`launch_rows`.
    """

    __slots__ = ("backend", "driver", "row", "fixed", "_entry")

    def __init__(self, backend: str, cpu_driver, row, *fixed):
        self.backend, self.driver, self.row, self.fixed = backend, cpu_driver, row, fixed
        self._entry: dict = {}

    def __call__(self, n: int, *tail) -> None:
        if n == 0:
            return
        if self.backend == "gpu":
            launch_rows(self.backend, self.driver, self.row, n, *self.fixed, *tail)
            return
        d = self.driver
        if isinstance(d, RowDriver):
            d = d.parallel if n >= PARALLEL_MIN_ROWS else d.serial
        entry = self._entry.get(id(d))
        if entry is None:
            d(n, *self.fixed, *tail)                 # compiles or loads, checks every argument's type
            self._entry[id(d)] = self._resolve(d, n, tail)
            return
        if CHECK_LAUNCHES:
            self._check(d, n, tail)
        entry[0](n, *self.fixed, *tail)

    @staticmethod
    def _changing(d, n, tail) -> tuple:
        """The numba types of what may change from call to call: the row count and the tail."""
        return tuple(d.typeof_pyval(a) for a in (n, *tail))

    def _resolve(self, d, n, tail) -> tuple:
        sig = tuple(d.typeof_pyval(a) for a in (n, *self.fixed, *tail))
        cres = d.overloads.get(sig)
        if cres is None:       # a signature the dispatcher matched by conversion: keep dispatching
            return (lambda *args: d(*args), self._changing(d, n, tail))
        return (cres.entry_point, self._changing(d, n, tail))

    def _check(self, d, n, tail) -> None:
        sig = self._changing(d, n, tail)
        if sig != self._entry[id(d)][1]:
            raise TypeError(f"PreparedRows({getattr(self.driver, '__name__', self.driver)!r}): argument types "
                            f"changed since the launch was resolved: {sig} != {self._entry[id(d)][1]}")


class PreparedSpan:
    """:func:`launch_span` of one span kernel for the life of a bind: on the CPU the call goes
    straight to the compiled build's entry point once the dispatcher has resolved it (first call),
    as :class:`PreparedRows` does for row launches. numba's dispatcher types every argument at
    every call, and a deployment phase kernel's records (tuples of arrays in named tuples) cost it
    13.3–18.2 µs a launch against 2.1–2.2 µs through the entry point (each phase kernel, no rows;
    ~3,100 launches per 2,000 ``deploy-cube`` landings). Every argument must keep its numba type from call to call (the
    caller's records, and index and time arrays built by the same code at every launch), which
    :data:`CHECK_LAUNCHES` verifies at every call in the test suite. On the GPU backend, or with a
    :class:`DeviceRows` list, it is :func:`launch_span`.
    """

    __slots__ = ("backend", "span", "_entry", "_types")

    def __init__(self, backend: str, span):
        self.backend, self.span = backend, span
        self._entry = None
        self._types: tuple = ()

    def __call__(self, n, *args) -> None:
        if self.backend == "gpu" or isinstance(n, DeviceRows):
            launch_span(self.backend, self.span, n, *args)
            return
        if n == 0:
            return
        d = self.span.cpu if isinstance(self.span, DualKernel) else self.span
        entry = self._entry
        if entry is None:
            d(0, n, *args)                           # compiles or loads, checks every argument's type
            sig = tuple(d.typeof_pyval(a) for a in (0, n, *args))
            cres = d.overloads.get(sig)
            self._types = sig
            self._entry = d if cres is None else cres.entry_point   # matched by conversion: keep dispatching
            return
        if CHECK_LAUNCHES:
            sig = tuple(d.typeof_pyval(a) for a in (0, n, *args))
            if sig != self._types:
                raise TypeError(f"PreparedSpan({getattr(d, '__name__', d)!r}): argument types changed since the "
                                f"launch was resolved: {sig} != {self._types}")
        entry(0, n, *args)


# ------------------------------------------------------------------ relinking a kernel family
def _is_dispatcher(v) -> bool:
    return isinstance(v, numba.core.registry.CPUDispatcher)


def reachable_kernels(*roots) -> list:
    """Every CPU dispatcher reachable from ``roots`` through the globals their sources call."""
    seen: dict[int, object] = {}
    stack = list(roots)
    while stack:
        d = stack.pop()
        if id(d) in seen:
            continue
        seen[id(d)] = d
        py = d.py_func
        for name in py.__code__.co_names:
            v = py.__globals__.get(name)
            if _is_dispatcher(v) and id(v) not in seen:
                stack.append(v)
    return list(seen.values())


def relink(roots: dict, swap: dict, filename: str) -> dict:
    """Copies of the kernels ``roots`` (name → CPU dispatcher) in which every callee ``old`` of
    ``swap`` (old dispatcher → new dispatcher) is replaced, however deep it is called.

    Each kernel on a path from a root to a swapped callee is recompiled from its own source with
    the swapped globals, its code object re-homed to ``filename`` (a real generated ``.py`` file
    whose name hashes everything the copies depend on), so numba's disk cache keys the copies by
    that file and never hands one term set's machine code to another (docs/design.md §2: a
    ``cache=True`` function goes stale silently when a callee in another file changes). Kernels
    that reach no swapped callee are shared, not copied.

    A copy that is not a root is only ever called from compiled code (nothing outside holds it),
    so it is compiled without numba's CPython and C entry points (``no_cpython_wrapper``,
    ``no_cfunc_wrapper``): each was compiled, optimised and turned into machine code once per
    copy, for nothing. They were 8.7 k of the 104 k LLVM instructions a cold ``deploy-cube`` contact
    kernel compiles (docs/design.md §8.25). A root keeps its CPython entry point.
    """
    import types

    memo: dict[int, object] = {id(k): v for k, v in swap.items()}
    active: set[int] = set()
    root_ids = {id(d) for d in roots.values()}

    def visit(d):
        key = id(d)
        if key in memo:
            return memo[key]
        if key in active:        # recursion in the call graph (none today): keep the original
            return d
        active.add(key)
        py = d.py_func
        g = None
        for name in py.__code__.co_names:
            v = py.__globals__.get(name)
            if _is_dispatcher(v):
                nv = visit(v)
                if nv is not v:
                    if g is None:
                        g = dict(py.__globals__)
                    g[name] = nv
        active.discard(key)
        if g is None:
            memo[key] = d
            return d
        code = py.__code__.replace(co_filename=filename)
        fn = types.FunctionType(code, g, py.__name__, py.__defaults__, py.__closure__)
        fn.__qualname__ = py.__qualname__
        fn.__module__ = os.path.splitext(os.path.basename(filename))[0]
        fn.__doc__ = py.__doc__
        if hasattr(py, "_tumble_gpu_inline"):
            fn._tumble_gpu_inline = py._tumble_gpu_inline
        opts = {k: v for k, v in d.targetoptions.items() if k != "nopython"}   # njit implies it
        if key in root_ids:
            opts.pop("no_cpython_wrapper", None)
        else:
            opts["no_cpython_wrapper"] = opts["no_cfunc_wrapper"] = True
        new = call_boundary(numba.njit(cache=True, **opts)(fn))
        memo[key] = new
        return new

    return {name: visit(d) for name, d in roots.items()}
