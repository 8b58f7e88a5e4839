"""Kernels with a large body are called by symbol, not linked into every caller
(ecs.kernels.call_boundary, docs/design.md §8.26), and stay right across processes and numba's
disk cache."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]

CHAIN = textwrap.dedent('''
    """top and top2 call mid, mid calls big (tests/test_call_boundary.py)."""
    import math

    from ecs.kernels import cpu_jit


    @cpu_jit
    def big(a, n):
        s = 0.0
        for k in range(n):
            x = a[k % a.shape[0]]
            if x > 0.5:
                s += math.sin(x) * math.exp(-x) + math.sqrt(x)
            else:
                s -= math.cos(x) / (1.0 + x * x)
        return s


    @cpu_jit
    def mid(a, n):
        return big(a, n) + 1.0


    @cpu_jit
    def top(a, n):
        return 2.0 * mid(a, n)


    @cpu_jit
    def top2(a, n):
        return mid(a, n) - 1.0
''')

#: What each process prints: the kernels' values, then for each kernel compiled in the process
#: whether its module declares big's symbol, whether it defines big's function, and its lines of
#: LLVM IR.
RUN = textwrap.dedent('''
    import sys
    import numpy as np
    import bnd_chain as b
    a = np.linspace(0.0, 1.0, 7)
    for name in sys.argv[1:]:
        print(name, repr(getattr(b, name)(a, 20)))
    for f in (b.mid, b.top, b.top2):
        for cres in f.overloads.values():
            mod = cres.library._final_module
            fns = list(mod.functions)
            if not any(not x.is_declaration for x in fns):
                continue               # loaded from the cache: no module to look at
            declares = any(x.is_declaration and x.name.startswith("tumble$") for x in fns)
            defines_big = any(not x.is_declaration and "3big" in x.name for x in fns)
            print("module", f.py_func.__name__, declares, defines_big, str(mod).count("\\n"))
''')


def _reference(n: int = 20) -> float:
    """``big`` in NumPy: the independent value each kernel is checked against."""
    a = np.linspace(0.0, 1.0, 7)
    x = a[np.arange(n) % a.size]
    return float(np.sum(np.where(x > 0.5, np.sin(x) * np.exp(-x) + np.sqrt(x), -np.cos(x) / (1.0 + x * x))))


def _run(tmp_path: Path, *names: str, boundary: str = "60", cache: str = "cache") -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / cache), TUMBLE_CALL_BOUNDARY=boundary,
               PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
    out = subprocess.run([sys.executable, "-c", RUN, *names], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    values, modules = {}, {}
    for line in out.stdout.splitlines():
        w = line.split()
        if w[0] == "module":
            modules[w[1]] = (w[2] == "True", w[3] == "True", int(w[4]))
        else:
            values[w[0]] = float(w[1])
    return {"values": values, "modules": modules}


@pytest.fixture()
def chain(tmp_path):
    (tmp_path / "bnd_chain.py").write_text(CHAIN)
    return tmp_path


def test_a_large_callee_is_called_by_symbol_and_not_compiled_into_its_callers(chain):
    """big's body (~90 lines of LLVM IR) is above a boundary of 60: mid calls it by symbol, and
    neither mid's module nor top's (which links mid) holds a copy of it. With the boundary at 0
    (numba's own linking) top's module holds big again (LLVM inlines it into mid and mid into top)
    and is larger by most of big's body."""
    r = _run(chain, "top")
    ref = _reference()
    assert r["values"]["top"] == pytest.approx(2.0 * (ref + 1.0), rel=1e-14, abs=1e-14)
    assert r["modules"]["mid"][:2] == (True, False)
    assert r["modules"]["top"][:2] == (True, False)
    r0 = _run(chain, "top", boundary="0", cache="cache0")
    assert r0["values"]["top"] == r["values"]["top"]              # the same machine code, the same bits
    assert not r0["modules"]["top"][0]
    assert r0["modules"]["top"][2] > r["modules"]["top"][2] + 30     # 58 lines more, measured
    assert _run(chain, "top", boundary="0")["values"] == r["values"]   # boundary callers cached, loaded at 0


def test_cached_callers_load_their_callees_first_in_a_new_process(chain):
    """Process 1 compiles top (caching big, mid, top). Process 2 compiles top2 on mid loaded from
    the cache. Process 3 calls top2 and top first, both from the cache, before anything loaded
    big: each must load big itself (numba's reload steps), including top2, which inherits the
    step from the cached mid it links (ecs.kernels._keep_reload_steps; without it process 3
    aborts with 'Symbol not found')."""
    ref = _reference()
    r1 = _run(chain, "top")
    r2 = _run(chain, "top2")
    assert "mid" not in r2["modules"]                 # loaded from the cache, not compiled
    assert r2["modules"]["top2"][:2] == (True, False)
    r3 = _run(chain, "top2", "top")
    assert r3["modules"] == {}                       # all from the cache
    assert r3["values"]["top2"] == pytest.approx(ref, rel=1e-14, abs=1e-14)
    assert r3["values"]["top"] == r1["values"]["top"]
    assert r2["values"]["top2"] == r3["values"]["top2"]


def test_a_bad_boundary_setting_is_refused_by_name():
    env = dict(os.environ, TUMBLE_CALL_BOUNDARY="many")
    out = subprocess.run([sys.executable, "-c", "import ecs.kernels"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode != 0
    assert "TUMBLE_CALL_BOUNDARY = 'many'" in out.stderr and "integer >= 0" in out.stderr
