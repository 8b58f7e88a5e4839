"""``ecs._numba_speed``: each patch of numba's compiler decides what numba's own function decides."""

import itertools
import math
import operator
import os
import subprocess
import sys
import textwrap

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
    compile would then be slower, not wrong): ``APPLIED`` names all seven."""
    assert ecs is not None
    markup = not os.environ.get("NUMBA_COLOR_SCHEME") and not os.environ.get("NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING")
    want = (["flags_values", "array_operator", "list_vars", "call_types", "callee_wrappers", "abi_sizes"]
            + ["plain_messages"] * markup)
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


# ------------------------------------------------------------------ list_vars
def _statements(fn):
    """Every statement of ``fn``'s numba IR, before and after SSA reconstruction (phi nodes)."""
    from numba.core import compiler
    from numba.core.ssa import reconstruct_ssa

    fir = compiler.run_frontend(fn)
    out = [st for blk in fir.blocks.values() for st in blk.body]
    fir = reconstruct_ssa(fir)
    out += [st for blk in fir.blocks.values() for st in blk.body]
    return out


def _kwargs_and_containers(a, b, *rest, k=2.0):
    t = (a, b, [a, b])
    d = {"x": a, "y": b}
    s = {a, b}
    c = a if b > 0 else b
    for i in range(len(rest)):
        c += rest[i] * k
    try:
        c += max(a, b, key=abs)
    except ValueError:
        c -= 1.0
    x = np.array([a, b, c])
    x[0:2] = [b, a]
    del d["x"]
    return t, d, s, c, sorted(rest, reverse=True), x[1:]


@_off
def test_statement_variables_are_numbas_in_content_and_order():
    """Every statement of three functions' IR (the deployment's contact force law, a kernel of
    the event locator and a function of calls with keywords, containers, slices, deletes and a
    ``try``), before and after SSA reconstruction: the patched walk gives the very variables
    numba's gives, in the same order."""
    from numba.core import ir

    from systems.deployment.events import _hermite_root
    from systems.probe_contact.contact_motion import _contact_forces_row

    original = speed.ORIGINAL["rec_list_vars"]
    n = 0
    for fn in (_contact_forces_row, _hermite_root, _kwargs_and_containers):
        for st in _statements(fn):
            got = st.list_vars()
            try:
                ir.Inst._rec_list_vars = original
                want = st.list_vars()
            finally:
                ir.Inst._rec_list_vars = speed._rec_list_vars
            assert len(got) == len(want) and all(a is b for a, b in zip(got, want)), st
            n += bool(want)
    assert n > 1000


# ------------------------------------------------------------------ call types
@_off
def test_call_types_are_numbas_and_failures_raise_again():
    """Built-in and ``@overload`` functions typed on scalar, literal, array and tuple arguments:
    each answer, first and again, is numba's own; a call numba cannot type raises every time."""
    from numba.core.registry import cpu_target as target

    ctx = target.typing_context
    ctx.refresh()
    original = speed.ORIGINAL["call_type"]
    args = [types.int64, types.float64, types.IntegerLiteral(3), types.Array(types.float64, 1, "C"),
            types.UniTuple(types.float64, 2), types.boolean]
    fns = [operator.add, operator.mul, operator.truediv, operator.lt, operator.getitem, min, max, abs,
           math.sqrt, math.atan2, np.sqrt]
    typed = failed = 0
    for fn in fns:
        fnty = ctx.resolve_value_type(fn)
        for ab in list(itertools.product(args, repeat=2)) + [(a,) for a in args]:
            try:
                want = original(fnty, ctx, ab, {})
            except Exception as exc:  # numba cannot type it: neither may the patch, twice
                for _ in range(2):
                    with pytest.raises(type(exc)):
                        fnty.get_call_type(ctx, ab, {})
                failed += 1
                continue
            for _ in range(2):
                assert fnty.get_call_type(ctx, ab, {}) == want, (fn, ab)
            typed += 1
    assert typed > 100 and failed > 100


# ------------------------------------------------------------------ ABI sizes
@_off
def test_abi_sizes_are_llvms_and_named_structs_are_asked_each_time():
    """The sizes of scalar, pointer, vector, array and (nested, packed) struct types, and of the
    data models of arrays and tuples that lowering allocates, first and again, are the sizes
    llvmlite computes; an identified struct (its name does not describe its body) is asked of
    llvmlite each time and never kept."""
    from llvmlite import ir as llir

    ctx = cpu_target.target_context
    original = speed.ORIGINAL["abi_sizeof"]
    d, i8, i32, i64 = llir.DoubleType(), llir.IntType(8), llir.IntType(32), llir.IntType(64)
    lit = [d, i8, i32, i64, i8.as_pointer(), llir.VectorType(d, 4), llir.ArrayType(i32, 7),
           llir.LiteralStructType([i8, d, i32]), llir.LiteralStructType([i8, d, i32], packed=True),
           llir.LiteralStructType([llir.LiteralStructType([i8, i64]), llir.ArrayType(d, 3), i8.as_pointer()])]
    lit += [ctx.get_value_type(t) for t in (types.float64, types.Array(types.float64, 3, "C"),
                                            types.UniTuple(types.Array(types.int8, 1, "C"), 5),
                                            types.Tuple((types.float64, types.int64, types.Array(types.float64, 2, "A"))))]
    sizes = {8, 1, 4, 32, 28, 24, 13}
    for ty in lit:
        want = original(ctx, ty)
        for _ in range(2):
            assert ctx.get_abi_sizeof(ty) == want, ty
        sizes.discard(want)
    assert not sizes                               # the expected sizes were among the answers
    named = llir.global_context.get_identified_type("tumble_test_abi_named")
    named.set_body(i8)
    assert ctx.get_abi_sizeof(named) == original(ctx, named) == 1
    assert (id(ctx.target_data), named) not in speed._ABI_SIZES


# ------------------------------------------------------------------ callee wrappers
CACHED = textwrap.dedent('''
    import math
    import numba

    @numba.njit(cache=True)
    def norm(a, b):
        return math.sqrt(a * a + b * b)

    @numba.njit(cache=True)
    def caller(a, b):
        return 2.0 * norm(a, b)
''')

def test_a_callee_compiled_for_a_kernel_is_still_callable_from_python():
    """``norm`` compiled for ``caller`` has no Python wrapper (nothing Python could call); a
    Python call of the same signature afterwards compiles it with one, and both give numpy's
    value."""
    ns: dict = {}
    exec(CACHED.replace("cache=True", "cache=False"), ns)
    norm, caller = ns["norm"], ns["caller"]
    assert caller(3.0, 4.0) == 10.0
    (cres,) = norm.overloads.values()
    if speed.APPLIED:
        assert speed._wrapperless(cres)
    assert norm(3.0, 4.0) == float(np.hypot(3.0, 4.0))
    (cres,) = norm.overloads.values()
    assert not speed._wrapperless(cres)
    assert caller(6.0, 8.0) == 20.0


RUN = textwrap.dedent('''
    import sys
    import ecs
    import wrap_mod as m
    from ecs import _numba_speed as speed
    for name in sys.argv[1:]:
        print(name, repr(getattr(m, name)(3.0, 4.0)))
    for f in (m.norm, m.caller):
        for cres in f.overloads.values():
            print("state", f.py_func.__name__, speed._wrapperless(cres), sum(f._cache_hits.values()),
                  sum(f._cache_misses.values()))
''')


def _run_cached(tmp_path, *names):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
    out = subprocess.run([sys.executable, "-c", RUN, *names], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = [ln.split() for ln in out.stdout.splitlines()]
    values = {w[0]: float(w[1]) for w in lines if w[0] != "state"}
    state = {w[1]: (w[2] == "True", int(w[3]), int(w[4])) for w in lines if w[0] == "state"}
    return values, state


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@_off
def test_a_callee_cached_without_its_wrapper_is_compiled_again_for_python(tmp_path):
    """Process 1 compiles ``caller``: ``norm`` goes to numba's disk cache without a wrapper.
    Process 2 calls ``norm`` from Python: it finds that copy, compiles ``norm`` again with its
    wrapper (a miss) and caches that; process 3 loads it (a hit, no compile). A segfault or a
    wrong value in process 2 is what the patch must never give."""
    (tmp_path / "wrap_mod.py").write_text(CACHED)
    v1, s1 = _run_cached(tmp_path, "caller")
    assert v1 == {"caller": 10.0}
    assert s1["norm"] == (True, 0, 1) and s1["caller"] == (False, 0, 1)
    v2, s2 = _run_cached(tmp_path, "norm")
    assert v2 == {"norm": 5.0}
    assert s2["norm"] == (False, 1, 1)
    v3, s3 = _run_cached(tmp_path, "norm", "caller")
    assert v3 == {"norm": 5.0, "caller": 10.0}
    assert s3["norm"] == (False, 1, 0) and s3["caller"] == (False, 1, 0)
