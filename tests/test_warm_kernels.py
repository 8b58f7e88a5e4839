"""A cold start compiles the kernels a world lists before its first frame, sharing them with one
helper process (ecs.warm.warm_kernels, docs/design.md §2 "Compile on two cores")."""

from __future__ import annotations

import importlib
import inspect
import pathlib
import sys
import time
import uuid

import numpy as np
import pytest

from ecs import InputError, Phase, System, World
import ecs.batch as batch
from ecs.warm import (WARM_HELPER_START, WarmStart, _SceneSource, _claim, _heads_and_pool, _split_units,
                      _usable_cpus, warm_kernels)
from ecs.kernels import CompileUnit
from ecs.scene import Scene

#: three kernels in a module written per test: a fresh module is a cold numba cache
KERNELS = '''
import numba


@numba.njit(cache=True)
def k0(x):
    return x[0] + 1.0


@numba.njit(cache=True)
def k1(x):
    return x[1] * 2.0


@numba.njit(cache=True)
def k2(x):
    return x[2] - 3.0
'''


class ListsCompiles(System):
    """A system that only lists compile units (three kernels of ``module``, cost 10 each)."""

    phase = Phase.SCHEDULED

    def __init__(self, module: str):
        self.module = module

    def compile_units(self) -> list:
        m = importlib.import_module(self.module)
        x = np.zeros(3)
        return [CompileUnit(f"k{j}", getattr(m, f"k{j}"), (x,), cost=10.0) for j in range(3)]

    def process(self, frame) -> None:
        pass


class RefusesInputs(ListsCompiles):
    """The same, refusing every sample's inputs (an input error raised after the scene is built)."""

    def check_inputs(self, world, overrides: dict, start: int, count: int) -> None:
        raise InputError("release", start, "refused by this test")


def warm_scene(module: str, fail_in_helper: bool = False, refuse: bool = False, helper_delay: float = 0.0) -> Scene:
    """The scene builder the helper process rebuilds (by name: it is importable there);
    ``helper_delay`` [s]: the helper's build takes that much longer."""
    # the helper process builds the scene inside ecs.warm._warm_helper (a test process of
    # pytest-xdist also runs as `python -c`, so the command line cannot tell them apart)
    in_helper = any(f.function == "_warm_helper" for f in inspect.stack())
    if fail_in_helper and in_helper:
        raise RuntimeError("this builder refuses to run in the helper")
    if in_helper:
        time.sleep(helper_delay)
    world = World()
    world.add_system((RefusesInputs if refuse else ListsCompiles)(module))
    return Scene(name="warm", description="compile units only", world=world, t_end=1.0, dt=1.0)


@pytest.fixture
def cold_module(tmp_path, monkeypatch):
    name = "warm_kernels_" + uuid.uuid4().hex[:12]
    (tmp_path / f"{name}.py").write_text(KERNELS)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def _compiled_world(source: _SceneSource):
    scene = source.build()
    scene.world.compile(samples=1)
    return scene.world


def test_the_split_ends_soonest():
    units = [CompileUnit(n, None, (), cost=c) for n, c in (("contact", 29.0), ("collide", 20.0), ("fly", 19.0))]
    here, helper = _split_units(units, 6.0)
    assert [u.name for u in helper] == ["contact"] and [u.name for u in here] == ["collide", "fly"]
    # not worth a helper: two short compiles end sooner here than one after the helper's start
    short = [CompileUnit(n, None, (), cost=2.0) for n in "ab"]
    assert _split_units(short, 6.0) == (short, [])


@pytest.mark.skipif(_usable_cpus() < 2, reason="the helper process needs a second core")
def test_a_cold_start_compiles_one_share_in_a_helper_process(cold_module):
    source = _SceneSource(warm_scene, {"module": cold_module})
    world = _compiled_world(source)
    report = warm_kernels(world, source, processes=2)
    # 3 units of cost 10, the helper starting WARM_HELPER_START later: one unit goes to it
    assert WARM_HELPER_START < 10.0
    assert report["compiled"] == 3 and report["helper_error"] is None
    assert len(report["helper"]) == 1 and sorted(report["here"] + report["helper"]) == ["k0", "k1", "k2"]
    m = importlib.import_module(cold_module)
    for u in world.compile_units():
        stats = u.dispatcher.stats
        if u.name in report["helper"]:   # compiled by the helper: loaded here from numba's disk cache
            assert sum(stats.cache_hits.values()) == 1 and not stats.cache_misses
        else:                            # compiled here
            assert sum(stats.cache_misses.values()) == 1
        assert u.signature() in u.dispatcher.overloads
    assert (m.k0(np.zeros(3)), m.k1(np.ones(3)), m.k2(np.zeros(3))) == (1.0, 2.0, -3.0)
    again = warm_kernels(world, source, processes=2)
    assert again["compiled"] == 0 and again["helper"] == []


def test_each_process_starts_on_its_costliest_unit_and_the_rest_are_pooled(tmp_path):
    units = {n: CompileUnit(n, None, (), cost=c) for n, c in
             (("collide", 10.0), ("fly", 4.7), ("end", 1.0), ("contact", 16.0))}
    here, helper = _split_units(list(units.values()), -1.0)
    assert [u.name for u in helper] == ["contact"]
    a, b, pool = _heads_and_pool(here, helper)
    assert [u.name for u in a] == ["collide"] and [u.name for u in b] == ["contact"]
    assert [u.name for u in pool] == ["fly", "end"]                 # costliest first
    assert _heads_and_pool(here, []) == (here, [], [])               # no helper: no pool
    # a pool unit goes to the first process that claims it, and to no other
    assert _claim(str(tmp_path), 0) and not _claim(str(tmp_path), 0) and _claim(str(tmp_path), 1)


def _assert_compiled_once(world, report):
    """Every unit compiled in exactly one process: here (a cache miss) or in the helper (loaded
    here from numba's disk cache)."""
    assert sorted(report["here"] + report["helper"]) == ["k0", "k1", "k2"]
    for u in world.compile_units():
        stats = u.dispatcher.stats
        if u.name in report["helper"]:
            assert sum(stats.cache_hits.values()) == 1 and not stats.cache_misses
        else:
            assert sum(stats.cache_misses.values()) == 1 and not stats.cache_hits
        assert u.signature() in u.dispatcher.overloads


@pytest.mark.skipif(_usable_cpus() < 2, reason="the helper process needs a second core")
def test_a_helper_started_before_the_build_gets_its_share_once_the_split_is_known(cold_module):
    """WarmStart.spawn starts the helper on the scene alone (the first run of the code); it builds
    its own scene, then compiles the unit start() sends it and claims from the pool what this
    process has not taken yet."""
    source = _SceneSource(warm_scene, {"module": cold_module})
    with WarmStart() as warm:
        assert warm.spawn(source)
        world = _compiled_world(source)
        report = warm.start(world, source, processes=2, helper_start=-0.5).finish()
    assert report["helper_error"] is None and len(report["helper"]) in (1, 2)
    _assert_compiled_once(world, report)


@pytest.mark.skipif(_usable_cpus() < 2, reason="the helper process needs a second core")
@pytest.mark.parametrize("busy", ["here", "helper"])
def test_the_pool_goes_to_the_process_that_is_free(cold_module, monkeypatch, busy):
    """Three units of one cost, the helper starting first: each process gets one, and the third
    (the pool) goes to whichever process is free first. The busy one is held long enough for the
    other to claim the pool's unit, so the outcome is certain."""
    # held here: until the helper has claimed the pool's unit; held in the helper: its build takes
    # 5 s longer, while this process's compile of a one-line kernel takes a fraction of a second
    source = _SceneSource(warm_scene, {"module": cold_module, "helper_delay": 5.0 if busy == "helper" else 0.0})
    with WarmStart() as warm:
        assert warm.spawn(source)
        world = _compiled_world(source)
        warm.start(world, source, processes=2, helper_start=-0.5)
        assert len(warm.here) == 1 and len(warm.helper) == 1 and len(warm.pool) == 1
        claims = pathlib.Path(warm._claims)
        original = CompileUnit.compile

        def held(unit):
            if busy == "here" and unit is warm.here[0]:        # until the helper has claimed the pool's unit
                deadline = time.monotonic() + 120.0
                while not any(claims.iterdir()) and time.monotonic() < deadline:
                    time.sleep(0.02)
            return original(unit)

        monkeypatch.setattr(CompileUnit, "compile", held)
        pool = warm.pool[0].name
        report = warm.finish()
    assert report["helper_error"] is None
    assert (pool in report["helper"]) == (busy == "here")
    _assert_compiled_once(world, report)


@pytest.mark.skipif(_usable_cpus() < 2, reason="the helper process needs a second core")
def test_an_input_error_leaves_no_helper_started_before_the_build(cold_module, tmp_path, monkeypatch):
    """run_batch on an empty numba cache starts the helper before it builds the scene; an input
    error raised after that (every sample's checks) kills it, and no store is written."""
    from tumble import run_batch

    started = []
    popen = WarmStart._popen

    def record(self, payload):
        popen(self, payload)
        started.append(self._proc)

    monkeypatch.setattr(WarmStart, "_popen", record)
    monkeypatch.setattr(batch, "versioned_cache_is_empty", lambda: True)
    with pytest.raises(InputError, match="refused by this test"):
        run_batch(warm_scene, params={"module": cold_module, "refuse": True}, samples=2, out=tmp_path / "s.zarr")
    assert len(started) == 1 and started[0].poll() is not None
    assert not (tmp_path / "s.zarr").exists()


def test_an_empty_versioned_cache_is_told_from_one_with_a_kernel(tmp_path, monkeypatch):
    """numba makes a module's folder when a cached kernel is defined: only files mean compiles."""
    import numba

    from ecs import _cache

    d = tmp_path / "numba" / "digest"
    (d / "ecs_module").mkdir(parents=True)
    monkeypatch.setattr(_cache, "_VERSIONED_DIR", str(d))
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(d))
    assert _cache.versioned_cache_is_empty()
    (d / "ecs_module" / "k.nbi").write_bytes(b"")
    assert not _cache.versioned_cache_is_empty()
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path / "elsewhere"))   # the user's NUMBA_CACHE_DIR
    (d / "ecs_module" / "k.nbi").unlink()
    assert not _cache.versioned_cache_is_empty()


@pytest.mark.skipif(_usable_cpus() < 2, reason="the helper process needs a second core")
def test_a_failing_helper_costs_time_only(cold_module):
    source = _SceneSource(warm_scene, {"module": cold_module, "fail_in_helper": True})
    world = _compiled_world(source)
    report = warm_kernels(world, source, processes=2)
    assert "this builder refuses to run in the helper" in report["helper_error"]
    assert sorted(report["here"]) == ["k0", "k1", "k2"]       # the helper's share was compiled here
    assert all(u.signature() in u.dispatcher.overloads for u in world.compile_units())


@pytest.mark.skipif(_usable_cpus() < 2, reason="the helper process needs a second core")
def test_a_scene_that_cannot_travel_is_compiled_here_and_says_why(cold_module):
    source = _SceneSource(lambda: warm_scene(cold_module), {})     # a lambda does not pickle
    world = _compiled_world(source)
    report = warm_kernels(world, source, processes=2)
    assert "cannot be sent to a helper process" in report["helper_error"]
    assert report["helper"] == [] and sorted(report["here"]) == ["k0", "k1", "k2"]
    assert all(u.signature() in u.dispatcher.overloads for u in world.compile_units())


def test_one_process_when_asked_and_a_clear_error_for_a_bad_setting(cold_module, monkeypatch):
    source = _SceneSource(warm_scene, {"module": cold_module})
    world = _compiled_world(source)
    monkeypatch.setenv("TUMBLE_WARM_PROCESSES", "two")
    with pytest.raises(InputError, match="TUMBLE_WARM_PROCESSES.*two.*integer >= 1"):
        warm_kernels(world, source)
    monkeypatch.setenv("TUMBLE_WARM_PROCESSES", "1")
    report = warm_kernels(world, source)
    assert report["compiled"] == 3 and report["helper"] == [] and sorted(report["here"]) == ["k0", "k1", "k2"]


def test_the_deployment_lists_the_kernels_its_launches_use():
    """DeploymentLoop.compile_units names the mode loop's row selection, each phase kernel and the
    end rules with the argument types of their real launches: after warm_kernels, running the
    deployment compiles nothing more."""
    from scenes.registry import load_scene

    scene = load_scene("deploy-cube", gravity="point_mass")
    world = scene.world
    world.compile(samples=4)
    report = warm_kernels(world, None)
    units = world.compile_units()
    assert [u.name for u in units] == ["modes.select_rows", "deployment.contact", "deployment.collide",
                                       "deployment.fly", "deployment.end"]
    assert report["units"] == 5
    before = {u.name: set(u.dispatcher.overloads) for u in units}
    world.run(t_end=scene.t_end, dt=scene.dt)
    assert {u.name: set(u.dispatcher.overloads) for u in units} == before
    assert np.all(world.table_with("probe_phase")["row_status"] != 0)       # every sample ran to an end state


DRIFT = str(__import__("pathlib").Path(__file__).resolve().parent / "scenes_for_tests" / "drift.py")


def test_a_bad_setting_is_refused_before_the_store_exists(tmp_path, monkeypatch):
    from tumble import run_batch

    monkeypatch.setenv("TUMBLE_WARM_PROCESSES", "0")
    with pytest.raises(InputError, match="TUMBLE_WARM_PROCESSES"):
        run_batch(DRIFT, samples=4, out=tmp_path / "s.zarr")
    assert not (tmp_path / "s.zarr").exists()


def test_a_resume_with_nothing_left_warms_nothing(tmp_path):
    from ecs.batch import last_summary
    from tumble import run_batch

    run_batch(DRIFT, samples=4, out=tmp_path / "s.zarr")
    assert last_summary()["warm"]["units"] == 0          # drift lists no compile units; it was asked
    run_batch(DRIFT, samples=4, out=tmp_path / "s.zarr", resume=True)
    assert last_summary()["warm"] is None                # nothing to run: nothing compiled


class BindsWork(System):
    """Counts the binds that ran work over the rows (what a deployment's end check is)."""

    phase = Phase.SCHEDULED

    def __init__(self):
        self.worked = 0

    def bind(self, world) -> None:
        if not world.layout_only:
            self.worked += 1

    def process(self, frame) -> None:
        pass


def test_a_layout_only_compile_skips_bind_work_and_is_not_run():
    """The schema probe and the helper compile with ``layout_only`` (ecs.world.World.compile): a
    system's bind skips its work over the rows there, so a cold start's first compile is the shared
    one of warm_kernels; such a world refuses to run until compiled again."""
    world = World()
    s = world.add_system(BindsWork())
    world.spawn()
    world.compile(samples=2, layout_only=True)
    assert s.worked == 0 and not world.layout_only       # the flag holds only while binding
    with pytest.raises(InputError, match="layout_only"):
        world.run(t_end=1.0, dt=1.0)
    world.compile(samples=2)
    assert s.worked == 1
    world.run(t_end=1.0, dt=1.0)


class _Node:
    def __init__(self):
        self.me = self          # a reference cycle: only the cyclic collector frees it


def test_gc_frozen_skips_what_existed_nests_and_leaves_the_collector_as_it_was():
    """ecs.kernels.gc_frozen: garbage made inside the block is collected inside it; garbage that
    existed before waits for the block's end; an inner block does not unfreeze the outer's objects."""
    import gc
    import weakref

    from ecs.kernels import gc_frozen

    assert gc.get_freeze_count() == 0
    before = _Node()
    old = weakref.ref(before)
    del before
    with gc_frozen():
        frozen = gc.get_freeze_count()
        assert frozen > 0
        with gc_frozen():
            inside = _Node()
            new = weakref.ref(inside)
            del inside
        assert gc.get_freeze_count() >= frozen          # still frozen after the inner block
        gc.collect()
        assert old() is not None                         # frozen: not collected inside the block
        assert new() is None                             # made inside the block: collected as usual
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert old() is None


NESTED = '''
import numba


@numba.njit(cache=True)
def inner(x):
    return x[0] * 2.0


@numba.njit(cache=True)
def outer(x):
    return inner(x) + 1.0
'''


def test_a_unit_compile_freezes_the_collector_at_each_function_and_unfreezes_after(tmp_path, monkeypatch):
    """CompileUnit.compile: a function numba compiles inside the unit starts with what its caller
    made so far frozen (a full collection walks only its own objects); afterwards nothing is."""
    import gc

    from numba.core import event

    name = "nested_" + uuid.uuid4().hex[:12]
    (tmp_path / f"{name}.py").write_text(NESTED)
    monkeypatch.syspath_prepend(str(tmp_path))
    m = importlib.import_module(name)
    seen = {}

    class Counts(event.Listener):
        def on_start(self, ev):
            seen.setdefault(ev.data["dispatcher"].py_func.__name__ + " start", gc.get_freeze_count())

        def on_end(self, ev):
            seen.setdefault(ev.data["dispatcher"].py_func.__name__ + " end", gc.get_freeze_count())

    with event.install_listener("numba:compile", Counts()):
        CompileUnit("outer", m.outer, (np.ones(1),)).compile()
    assert seen["outer start"] > 0                         # the unit's own freeze
    assert seen["inner end"] > seen["outer start"]         # frozen again when inner started
    assert gc.get_freeze_count() == 0
    assert m.outer(np.ones(1)) == 3.0
