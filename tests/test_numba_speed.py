"""``ecs._numba_speed``: each patch of numba's compiler decides what numba's own function decides."""

import itertools
import os

import numba
import numpy as np
import pytest
from numba.core import errors, types
from numba.core.compiler import Flags
from numba.core.registry import cpu_target
from numba.core.typing import npydecl

import ecs
from ecs import _numba_speed as speed
from ecs.errors import InputError


def test_every_patch_applies_on_the_installed_numba():
    """Fails when numba's internals moved so that a patch no longer finds what it replaces (the
    compile would then be slower, not wrong): ``APPLIED`` names all three."""
    assert ecs is not None
    markup = not os.environ.get("NUMBA_COLOR_SCHEME") and not os.environ.get("NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING")
    want = ["flags_values", "array_operator"] + ["plain_messages"] * markup
    assert speed.APPLIED == (want if os.environ.get("TUMBLE_NUMBA_SPEEDUPS", "1") == "1" else [])


def _flags():
    out = [Flags()]
    f = Flags()
    f.nrt = True
    f.no_cpython_wrapper = True
    f.error_model = "numpy"
    out.append(f)
    g = Flags()
    g.fastmath = {"contract"}
    g.boundscheck = True
    g.inline = "always"
    out.append(g)
    h = g.copy()
    h.boundscheck = False
    out.append(h)
    return out


_off = pytest.mark.skipif(not speed.APPLIED, reason="TUMBLE_NUMBA_SPEEDUPS=0: no patch to compare")


@_off
def test_flags_values_are_numbas_in_content_and_order():
    original = speed.ORIGINAL["flags_values"]
    flags = _flags()
    for f in flags:
        assert list(f.values().items()) == list(original(f).items())
    # equality and hashing follow the values, as numba's implementation cache needs
    for a, b in itertools.product(flags, repeat=2):
        assert (a == b) == (original(a) == original(b))
        if a == b:
            assert hash(a) == hash(b)
    assert flags[2] != flags[3] and flags[2] == flags[2].copy()


_ARGS = [types.int64, types.float64, types.boolean, types.Optional(types.float64),
         types.Array(types.float64, 1, "C"), types.Optional(types.Array(types.float64, 2, "C")),
         types.Array(types.int32, 2, "A"), types.UniTuple(types.float64, 3)]


def _typed(fn, template, args):
    try:
        return ("sig", fn(template, args, {}))
    except Exception as exc:  # the same exception type must come out of both
        return ("raise", type(exc))


@_off
def test_array_operators_type_every_argument_pair_as_numba_does():
    """Every binary array-operator template of numba (add … not_equal, and the in-place ones,
    whose own ``generic`` calls the patched one), on scalar, optional, array and tuple arguments:
    with the patch, each gives the signature, ``None`` or exception type it gives with numba's own
    ``generic``. It fails when the early rejection ignores an ``Optional`` array (numba's matching
    strips the ``Optional``)."""
    ctx = cpu_target.typing_context
    base = npydecl.NumpyRulesArrayOperator
    patched, original = base.generic, speed.ORIGINAL["array_operator"]
    templates = [c for c in base.__subclasses__() if "_op_map" not in c.__dict__]
    templates += npydecl.NumpyRulesInplaceArrayOperator.__subclasses__()
    assert len(templates) >= 30
    pairs = list(itertools.product(_ARGS, repeat=2))
    try:
        base.generic = original
        want = [[_typed(cls.generic, cls(ctx), ab) for ab in pairs] for cls in templates]
    finally:
        base.generic = patched
    got = [[_typed(cls.generic, cls(ctx), ab) for ab in pairs] for cls in templates]
    for cls, w, g in zip(templates, want, got):
        for ab, wi, gi in zip(pairs, w, g):
            assert gi == wi, (cls.__name__, ab)
    flat = [x for row in got for x in row]
    assert sum(x[0] == "sig" and x[1] is not None for x in flat) > 100
    assert sum(x == ("sig", None) for x in flat) > 100


def test_inplace_operators_on_arrays_still_compile():
    @numba.njit
    def f(a, b):
        a += b
        a -= 2.0 * b
        return a.sum() + (b > 0.5).sum() + (-a)[0]

    a, b = np.arange(4.0), np.linspace(0, 1, 4)
    want = (a + b - 2 * b).sum() + (b > 0.5).sum() - (a + b - 2 * b)[0]
    assert f(a.copy(), b) == want


@_off
def test_typing_errors_are_plain_text_and_still_raised():
    @numba.njit
    def bad(x):
        return x.no_such_attribute

    with pytest.raises(errors.TypingError) as info:
        bad(1.0)
    assert "no_such_attribute" in str(info.value)
    assert "\x1b[" not in str(info.value)


def test_a_bad_setting_is_refused_by_name(monkeypatch):
    monkeypatch.setenv("TUMBLE_NUMBA_SPEEDUPS", "yes")
    with pytest.raises(InputError, match="TUMBLE_NUMBA_SPEEDUPS"):
        speed.enabled()
    monkeypatch.setenv("TUMBLE_NUMBA_SPEEDUPS", "0")
    assert speed.enabled() is False
