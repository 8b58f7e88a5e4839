"""Frames run as one (ecs.system.System.frame_span, ecs.world.Frame.span; docs/design.md §8.36).

A SCHEDULED system whose results do not depend on where frames end may cover several frames in one
``process`` call; the world merges frames only up to what every scheduled system allows, never past
a recorded frame's end or the run's end. The deployment's mode loop takes an hour of simulated time
per call on the CPU: its stores must be the bytes of one call per frame, with and without recorded
trajectories, with and without a streaming active set.
"""

from __future__ import annotations

import numpy as np
import pytest

import tumble
from ecs import Phase, System, World, column, component
from scenes.registry import load_scene
from systems.deployment.modes import ModeLoop
from tests.store_helpers import store_files


@component("probe")
class Tick:
    value: float = column("1", doc="a scalar")


class Spy(System):
    """Records each call's (first frame, frames covered, start [s], length [s], recorded)."""

    phase = Phase.SCHEDULED

    def __init__(self, span, name="spy"):
        self.span, self._name, self.seen, self.ends = span, name, [], []

    @property
    def name(self):
        return self._name

    def frame_span(self, step):
        return self.span

    def process(self, frame):
        self.seen.append((frame.index, frame.span, frame.t, frame.dt, frame.recorded))
        self.ends.append(float(frame.row_ends(frame.world.tables[0])[0]))


def _world(*systems):
    w = World()
    w.spawn(Tick(value=1.0))
    for s in systems:
        w.add_system(s)
    w.compile()
    return w


def test_frames_are_merged_up_to_the_span_a_recorded_frame_and_the_run_end():
    spy = Spy(4)
    w = _world(spy)
    r = w.run(t_end=0.95, dt=0.1, record_every=3, record=("probe_value",))      # 10 frames, the last 0.05 s
    assert [(i, k, rec) for i, k, _, _, rec in spy.seen] == [(0, 3, True), (3, 3, True), (6, 3, True), (9, 1, False)]
    assert [t for _, _, t, _, _ in spy.seen] == [0.0, 0.30000000000000004, 0.6000000000000001, 0.9]
    ends = [t + dt for _, _, t, dt, _ in spy.seen]
    assert ends == pytest.approx([0.3, 0.6, 0.9, 0.95], abs=1e-15)
    assert r.times.tolist() == pytest.approx([0.0, 0.3, 0.6, 0.9])
    spy.seen.clear()
    w.compile()
    w.run(t_end=0.95, dt=0.1)                                                   # nothing recorded
    assert [(i, k) for i, k, *_ in spy.seen] == [(0, 4), (4, 4), (8, 2)]
    assert spy.seen[-1][2] + spy.seen[-1][3] == pytest.approx(0.95, abs=1e-15)
    # a merged call's rows end where the last frame it covers ends when run alone, to the bit
    one = Spy(1)
    _world(one).run(t_end=0.95, dt=0.1)
    assert spy.ends[-3:] == [one.ends[3], one.ends[7], one.ends[9]]
    assert spy.ends[:4] == [one.ends[2], one.ends[5], one.ends[8], one.ends[9]]


def test_one_system_that_needs_every_frame_keeps_them_all():
    """The fewest frames any scheduled system allows wins: a default system (1) keeps every frame,
    each exactly ``dt`` long (a fixed-step integrator's step), the last one shorter."""
    spy, plain = Spy(12), Spy(1, name="plain")
    _world(spy, plain).run(t_end=0.45, dt=0.1)
    for s in (spy, plain):
        assert [(i, k) for i, k, *_ in s.seen] == [(i, 1) for i in range(5)]
        assert [dt for *_, dt, _ in s.seen] == [0.1, 0.1, 0.1, 0.1, 0.45 - 0.4]


def test_the_deployment_loop_covers_an_hour_per_call_on_the_cpu():
    scene = load_scene("deploy-cube")
    scene.world.compile(samples=1)
    loop = next(s for s in scene.world.systems if isinstance(s, ModeLoop))
    assert scene.dt == 300.0 and loop.frame_span(scene.dt) == 12
    assert loop.frame_span(7200.0) == 1 and loop.frame_span(60.0) == 60


def _deploy(tmp_path, name, monkeypatch, sync, **kw):
    monkeypatch.setattr(ModeLoop, "sync_interval", sync)
    out = tmp_path / f"{name}.zarr"
    tumble.run_batch("deploy-cube", samples=60, out=out, seed=4, command_line="pytest test_frame_span", **kw)
    return store_files(out)


@pytest.mark.parametrize("kw", [
    {"active": 60},                                          # every sample in the tables
    {"active": 60, "params": {"frame": 60.0, "record_every": 7, "t_cap": 2000.0}},   # and recorded
    {"active": 16},                                          # a streaming active set
    {"active": 16, "params": {"frame": 60.0, "record_every": 7, "t_cap": 2000.0}},   # records, samples cut at t_cap
], ids=["all-rows", "all-rows-recorded", "streaming", "streaming-recorded"])
def test_deployment_stores_are_the_bytes_of_one_call_per_frame(tmp_path, monkeypatch, kw):
    """60 dispersed deploy-cube landings: the loop at one frame per call (``sync_interval`` 0) and at
    its default hour give the same store, file by file. (A run stopped before the samples' end
    states, whose rows end at a frame end inside a merged call, is
    tests/test_stream.py::test_streaming_keeps_trajectories_and_done_rows.)"""
    ref = _deploy(tmp_path, "per-frame", monkeypatch, 0.0, **kw)
    got = _deploy(tmp_path, "merged", monkeypatch, 3600.0, **kw)
    assert sorted(ref) == sorted(got)
    assert any(k.startswith("events/") for k in ref)
    if "params" in kw:
        assert any(k.startswith("trajectories/") for k in ref)
    assert [k for k in ref if ref[k] != got[k]] == []
