"""numba's compiler without three of its measured wastes (docs/design.md §8.27).

A cold ``deploy-cube`` contact kernel spends most of its compile in numba's own Python (typing and
lowering), not in LLVM. A profile of that compile (numba 0.68.1) found three pieces of pure
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

Each patch applies only where numba's internals are as described (``APPLIED`` lists those that
did); ``TUMBLE_NUMBA_SPEEDUPS=0`` applies none. ``tests/test_numba_speed.py`` checks each against
numba's own function.
"""

from __future__ import annotations

import os

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
    scheme = errors.termcolor() if callable(getattr(errors, "termcolor", None)) else None
    if not os.environ.get("NUMBA_COLOR_SCHEME") and callable(getattr(scheme, "_markup", None)):
        ORIGINAL["markup"] = scheme._markup
        scheme._markup = _plain_markup     # the one instance numba's modules hold (errors.termcolor())
        APPLIED.append("plain_messages")
    return APPLIED
