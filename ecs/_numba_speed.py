"""numba's compiler without seven of its measured wastes (docs/design.md §8.27, §8.31, §8.34).

A cold ``deploy-cube`` contact kernel spends most of its compile in numba's own Python (typing and
lowering), not in LLVM. Profiles of that compile (numba 0.68.1) found seven pieces of pure
overhead, each of which this module removes without changing what numba decides:

* **Flags compared key by key** (:func:`_flags_values`). Every lookup in an ``@overload`` template's
  implementation cache hashes and compares the compile's ``Flags``; ``TargetConfig.values`` builds
  the comparison dict through one property call per option (22 for numba's compile flags): 3.8
  million calls for one kernel. The replacement builds the same dict (same keys, order and values)
  from the class's defaults and the options set; it is installed only where it gives what numba's
  own gives on numba's flags.
* **Scalar operators typed as NumPy ufuncs** (:func:`_array_operator_generic`). numba tries its
  array-operator template on every ``a + b``, runs NumPy's ufunc loop matching, and only then
  rejects a match with no array among the arguments. The replacement rejects those first, before
  the matching (an ``Optional`` array counts as an array, as the matching sees it).
* **Error-message markup** (:func:`_plain_markup`). Typing raises and catches thousands of errors
  as control flow (a failed template, a value that is not a literal); the markup of each message
  re-initialised colorama (80,000 stream wrappers for one kernel). With numba's default scheme
  (``no_color``: bold only) messages are now plain text. A ``NUMBA_COLOR_SCHEME`` the user set is
  left alone.
* **The same call typed again at every site** (:func:`_call_type`). Typing resolves each call of a
  built-in or ``@overload`` function (``a + b``, ``w[k]``, ``math.sqrt``, ``min``) by trying the
  function's templates in turn, and numba keeps no memory of the answer: 16,892 resolutions for
  the contact kernel's call tree, of 238 distinct (function, argument types, target) triples. The
  first resolution of a triple now serves the others: numba's own answer for the same function
  object and the same argument types (literal values are part of their types) on the same
  target. Failures are not kept (typing uses them as control flow, and they raise again as
  before). The kernels' LLVM IR is the same but for numba's numbering of function versions.
* **The variables of an IR statement listed by a generic walk** (:func:`_rec_list_vars`). numba's
  analyses (use-def chains, SSA reconstruction, dead-variable patching) ask every statement for
  the variables it reads and writes, and ``Inst._rec_list_vars`` finds them by walking the
  statement's attributes with four ``isinstance`` tests per value: 2.4 million calls for the
  contact kernel's tree. The replacement walks the same values in the same order, deciding the
  common kinds (a variable, a list, a tuple, a dict, a source location, a plain constant) by
  exact type, and anything else as numba does; it returns the same variables in the same order.
* **Python wrappers of functions only kernels call** (:func:`_compile`, :func:`_callee_flags`,
  :func:`_add_overload`). numba gives every compiled function a CPython wrapper (unboxing each
  argument from a Python object, boxing the result) and a C wrapper, lowers them, optimises them
  and emits their machine code, although a function compiled while another is typed is reached
  only by native calls (the 4 kernels of ``deploy-cube``: 72 wrappers, 4 of them for Python).
  Such a nested compile now gets numba's own ``no_cpython_wrapper`` and ``no_cfunc_wrapper``
  flags; its overload serves native callers and is kept out of the dispatcher's table for Python
  calls. A Python call of that signature later (a test calling an inner kernel, or the overload
  loaded from numba's disk cache without its wrapper) compiles it again with the wrappers, and
  that version replaces the cached one. The function's own code is unchanged (same bits).
* **The size of the same LLVM type computed again at every variable** (:func:`_abi_sizeof`).
  Lowering asks ``BaseContext.get_abi_sizeof`` for the size of every user variable it allocates or
  stores (for the debug information, which is off), and llvmlite answers each call by printing a
  module that holds a global of the type and parsing it with LLVM: 2,576 calls and 1.75 s of a
  cold ``deploy-cube`` compile of ~65 s (timed around the calls, docs/design.md §8.34). The size
  of a type depends only on the type and the data layout, so the first answer for a (layout, type)
  pair now serves the others. A type that names an identified struct (``%"name"``, whose body the name does
  not describe) is asked of llvmlite every time, as before.

Each patch applies only where numba's internals are as described (``APPLIED`` lists those that
did); ``TUMBLE_NUMBA_SPEEDUPS=0`` applies none. ``tests/test_numba_speed.py`` checks each against
numba's own function.
"""

from __future__ import annotations

import contextlib
import os
import threading

from numba.core import types as _types

from .errors import InputError

#: The patches applied in this process, by name.
APPLIED: list[str] = []
#: numba's original functions, kept for the equivalence tests.
ORIGINAL: dict[str, object] = {}


def _flags_values(self):
    """``TargetConfig.values``: ``{option: value}`` in the options' order, a set value or its default."""
    cls = type(self)
    defaults = cls.__dict__.get("_tumble_defaults")
    if defaults is None:
        defaults = {name: option.default for name, option in cls.options.items()}
        cls._tumble_defaults = defaults
    out = dict(defaults)
    out.update(self._values)
    return out


def _array_operator_generic(self, args, kws):
    """``NumpyRulesArrayOperator.generic``: None at once when no argument is an array."""
    if not kws and not any(isinstance(a.type if isinstance(a, _types.Optional) else a, _types.ArrayCompatible)
                           for a in args):
        return None
    return ORIGINAL["array_operator"](self, args, kws)


def _plain_markup(msg, color=None, style=None):
    """numba's ``HighlightColorScheme._markup`` without the terminal codes (and without colorama)."""
    return msg


_DEPTH = threading.local()


def _depth() -> int:
    """How many ``Dispatcher.compile`` calls are running in this thread (numba compiles a callee
    inside its caller's typing, under its compiler lock)."""
    return getattr(_DEPTH, "n", 0)


def _wrapperless(cres) -> bool:
    """True when the compiled function ``cres`` has no CPython wrapper in its own code library
    (fresh or loaded from numba's disk cache): Python cannot call it."""
    lib = cres.library
    mod = lib._shared_module if lib._shared_module is not None else lib._final_module
    try:
        fn = mod.get_function(cres.fndesc.llvm_cpython_wrapper_name)
    except NameError:
        return True
    return fn.is_declaration


def _collect_vars(val, out) -> None:
    """Append the IR variables in ``val`` to ``out``, in the order of numba's walk."""
    t = type(val)
    if t is _IR_VAR:
        out.append(val)
    elif t is list or t is tuple:
        for v in val:
            _collect_vars(v, out)
    elif t is dict:
        for v in val.values():
            _collect_vars(v, out)
    elif t in _IR_LEAVES:
        pass
    elif isinstance(val, _IR_VAR):
        out.append(val)
    elif isinstance(val, _IR_INST):
        out.extend(val.list_vars())
    elif isinstance(val, (list, tuple)):
        for v in val:
            _collect_vars(v, out)
    elif isinstance(val, dict):
        for v in val.values():
            _collect_vars(v, out)


def _rec_list_vars(self, val):
    """``Inst._rec_list_vars``: the variables in ``val`` (numba's walk, common kinds by exact type)."""
    out: list = []
    _collect_vars(val, out)
    return out


_IR_VAR = _IR_INST = None
_IR_LEAVES: tuple = ()

#: Typing of calls already resolved: (function type, target, typing context, argument types,
#: keyword types) → signature.
_CALL_TYPES: dict = {}


def _call_type(self, context, args, kws):
    """``BaseFunction.get_call_type``: numba's answer, kept for the next site asking the same."""
    from numba.core.target_extension import get_local_target

    try:
        key = (self, get_local_target(context), context, tuple(args), tuple(sorted(kws.items())) if kws else ())
        sig = _CALL_TYPES.get(key)
    except TypeError:           # an unhashable argument type: resolve as numba does
        return ORIGINAL["call_type"](self, context, args, kws)
    if sig is None:
        sig = ORIGINAL["call_type"](self, context, args, kws)
        if sig is not None:
            _CALL_TYPES[key] = sig
    return sig


#: ABI sizes already computed: (id of the data layout, LLVM type) → bytes. The layouts are kept
#: in :data:`_ABI_LAYOUTS`, so an id in a key is never reused by another object.
_ABI_SIZES: dict = {}
_ABI_LAYOUTS: dict = {}


def _abi_sizeof(self, ty):
    """``BaseContext.get_abi_sizeof``: numba's answer, kept for the next request of the same type
    on the same data layout (a type naming an identified struct is not kept)."""
    td = self.target_data
    key = (id(td), ty)
    try:
        size = _ABI_SIZES.get(key)
    except TypeError:           # an unhashable type: ask as numba does
        return ORIGINAL["abi_sizeof"](self, ty)
    if size is None:
        size = ORIGINAL["abi_sizeof"](self, ty)
        if "%" not in str(ty):
            _ABI_LAYOUTS.setdefault(id(td), td)
            _ABI_SIZES[key] = size
    return size


@contextlib.contextmanager
def native_only():
    """A block whose compiles serve native callers only (as if nested in a caller's compile): a
    kernel loaded from the disk cache to be called by symbol needs no wrapper."""
    _DEPTH.n = _depth() + 1
    try:
        yield
    finally:
        _DEPTH.n -= 1


class _CacheWithoutLoad:
    """A dispatcher's disk cache that finds nothing and saves as the cache does (the recompile of
    an overload whose cached copy has no wrapper)."""

    def __init__(self, cache):
        self._cache = cache

    def load_overload(self, *args, **kwargs):
        return None

    def __getattr__(self, name):
        return getattr(self._cache, name)


def _callee_flags(self, flags):
    """``_FunctionCompiler._customize_flags``: no wrappers for a compile nested in another's."""
    flags = ORIGINAL["customize_flags"](self, flags)
    if _depth() > 1:
        flags.no_cpython_wrapper = True
        flags.no_cfunc_wrapper = True
    return flags


def _add_overload(self, cres):
    """``Dispatcher.add_overload``: a function without a wrapper is kept for native callers only
    (numba's table of Python-callable signatures would call its missing wrapper)."""
    if cres.objectmode or not _wrapperless(cres):
        return ORIGINAL["add_overload"](self, cres)
    self.overloads[tuple(cres.signature.args)] = cres


def _compile(self, sig):
    """``Dispatcher.compile`` counting the nesting; at the top (a call from Python), an overload
    without its wrapper (compiled as a callee, or loaded so from the disk cache) is compiled again
    with it."""
    top = _depth() == 0
    _DEPTH.n = _depth() + 1
    try:
        entry = ORIGINAL["compile"](self, sig)
        if top:
            from numba.core import sigutils

            args = tuple(sigutils.normalize_signature(sig)[0])
            cres = self.overloads.get(args)
            if cres is not None and not cres.objectmode and self._can_compile and _wrapperless(cres):
                del self.overloads[args]
                cache = self._cache
                self._cache = _CacheWithoutLoad(cache)
                try:
                    entry = ORIGINAL["compile"](self, sig)
                finally:
                    self._cache = cache
        return entry
    finally:
        _DEPTH.n -= 1


def _same_flags_values(values) -> bool:
    """The replacement gives what ``values`` gives on numba's compile flags, default and set."""
    try:
        from numba.core.compiler import Flags

        a, b = Flags(), Flags()
        b.nrt = True
        b.error_model = "numpy"
        return all(list(_flags_values(f).items()) == list(values(f).items()) for f in (a, b))
    except Exception:   # a numba whose flags are built otherwise: leave it as it is
        return False


def enabled() -> bool:
    raw = os.environ.get("TUMBLE_NUMBA_SPEEDUPS", "1")
    if raw not in ("0", "1"):
        raise InputError("TUMBLE_NUMBA_SPEEDUPS", raw, "must be 1 (default: numba's compile without the "
                                                       "overheads docs/design.md §8.27 names) or 0 (numba as is)")
    return raw == "1"


def apply() -> list[str]:
    """Apply the patches once per process (see the module docstring); returns :data:`APPLIED`."""
    if APPLIED or not enabled():
        return APPLIED
    from numba.core import errors, targetconfig
    from numba.core.typing import npydecl

    values = targetconfig.TargetConfig.__dict__.get("values")
    if callable(values) and _same_flags_values(values):
        ORIGINAL["flags_values"] = values
        targetconfig.TargetConfig.values = _flags_values
        APPLIED.append("flags_values")
    generic = getattr(npydecl, "NumpyRulesArrayOperator", None)
    generic = generic.__dict__.get("generic") if generic is not None else None
    if callable(generic):
        ORIGINAL["array_operator"] = generic
        npydecl.NumpyRulesArrayOperator.generic = _array_operator_generic
        APPLIED.append("array_operator")
    from numba.core import dispatcher, ir
    from numba.core.types import functions

    global _IR_VAR, _IR_INST, _IR_LEAVES
    walk = ir.Inst.__dict__.get("_rec_list_vars")
    if callable(walk) and isinstance(getattr(ir, "Loc", None), type):
        _IR_VAR, _IR_INST = ir.Var, ir.Inst
        _IR_LEAVES = (ir.Loc, str, int, float, bool, type(None))
        ORIGINAL["rec_list_vars"] = walk
        ir.Inst._rec_list_vars = _rec_list_vars
        APPLIED.append("list_vars")

    call_type = functions.BaseFunction.__dict__.get("get_call_type")
    if callable(call_type) and "_impl_keys" in call_type.__code__.co_names:
        ORIGINAL["call_type"] = call_type
        functions.BaseFunction.get_call_type = _call_type
        APPLIED.append("call_types")
    compile_, add, custom = (dispatcher.Dispatcher.__dict__.get("compile"),
                             getattr(dispatcher.Dispatcher, "add_overload", None),
                             dispatcher._FunctionCompiler.__dict__.get("_customize_flags"))
    if (callable(compile_) and callable(add) and callable(custom)
            and {"_cache", "load_overload", "overloads"} <= set(compile_.__code__.co_names)):
        ORIGINAL.update(compile=compile_, add_overload=add, customize_flags=custom)
        dispatcher.Dispatcher.compile = _compile
        dispatcher.Dispatcher.add_overload = _add_overload
        dispatcher._FunctionCompiler._customize_flags = _callee_flags
        APPLIED.append("callee_wrappers")
    from numba.core import base

    abi = base.BaseContext.__dict__.get("get_abi_sizeof")
    if callable(abi) and "get_abi_size" in abi.__code__.co_names:
        ORIGINAL["abi_sizeof"] = abi
        base.BaseContext.get_abi_sizeof = _abi_sizeof
        APPLIED.append("abi_sizes")
    scheme = errors.termcolor() if callable(getattr(errors, "termcolor", None)) else None
    if not os.environ.get("NUMBA_COLOR_SCHEME") and callable(getattr(scheme, "_markup", None)):
        ORIGINAL["markup"] = scheme._markup
        scheme._markup = _plain_markup     # the one instance numba's modules hold (errors.termcolor())
        APPLIED.append("plain_messages")
    return APPLIED
