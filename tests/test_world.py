"""Engine core: world isolation, packing, per-sample overrides, scheduler order and errors."""

from __future__ import annotations

import numpy as np
import pytest

from components.rigid import MassProps, RigidState, Wrench
from components.status import Status
from ecs import InputError, Phase, ScheduleError, System, World, column, component


@component("probe")
class Tag:
    """A small test component with a scalar, a vector and an integer column."""

    value: float = column("m", doc="a scalar")
    vec: np.ndarray = column("m/s", shape=3, frame="inertial")
    code: int = column(dtype=np.int32, default=7)


@component("probe")
class Link:
    target: int = column(dtype="entity")


class _S(System):
    """Configurable do-nothing system for scheduler tests."""

    def __init__(self, name, phase=Phase.SCHEDULED, reads=(), writes=(), accumulates=(), after=()):
        self._name, self.phase, self.reads, self.writes = name, phase, tuple(reads), tuple(writes)
        self.accumulates, self.after = tuple(accumulates), tuple(after)

    @property
    def name(self):
        return self._name

    def process(self, frame):
        frame.world.log.append(self._name)


def test_worlds_are_isolated():
    a, b = World("a"), World("b")
    ea = a.spawn(Tag(value=1.0))
    a.spawn(Tag(value=2.0))
    b.spawn(Tag(value=3.0))
    assert len(a.entities()) == 2 and len(b.entities()) == 1
    assert [c.value for _, (c,) in b.query(Tag)] == [3.0]
    a.add_system(_S("only-in-a"))
    assert b.systems == [] and len(a.systems) == 1
    seen = []
    a.set_handler("ping", lambda: seen.append("a"))
    b.dispatch("ping")  # b has no handler: a's handler must not fire
    assert seen == []
    a.dispatch("ping")
    assert seen == ["a"]
    assert a.component(ea, Tag).value == 1.0


@pytest.mark.parametrize("samples", [1, 5])
def test_pack_unpack_round_trip(samples):
    w = World()
    e1 = w.spawn(Tag(value=1.5, vec=np.array([1.0, 2.0, 3.0]), code=3))
    e2 = w.spawn(Tag(value=-2.0), Link(target=e1))
    e3 = w.spawn(Tag(value=4.0))
    tables = w.compile(samples=samples)
    assert len(tables) == 2  # {Tag} and {Tag, Link}
    t_tag = [t for t in tables if "probe_target" not in t][0]
    t_link = w.table_with("probe_target")
    assert t_tag.row_count == 2 * samples and t_link.row_count == samples
    for s in range(samples):
        (tag,) = t_tag.unpack(e1, s)
        assert tag.value == 1.5 and tag.code == 3 and np.array_equal(tag.vec, [1.0, 2.0, 3.0])
        (tag3,) = t_tag.unpack(e3, s)
        assert tag3.value == 4.0 and tag3.code == 7
        link, tag2 = sorted(t_link.unpack(e2, s), key=lambda c: type(c).__name__)
        assert link.target == e1 and tag2.value == -2.0
        # the packed reference is the row of e1 in the same sample
        assert t_link["probe_target"][s] == t_tag.row(e1, s)
    assert t_tag["probe_vec"].dtype == np.float64 and t_tag["probe_code"].dtype == np.int32
    assert np.array_equal(t_tag["row_sample"], np.repeat(np.arange(samples), 2))
    assert (t_tag["row_status"] == Status.RUNNING).all()


def test_per_sample_overrides_applied_at_pack_time():
    w = World()
    e = w.spawn(Tag(value=1.0))
    other = w.spawn(Tag(value=9.0))
    vals = np.array([10.0, 20.0, 30.0])
    w.compile(samples=3, overrides={(e, "probe_value"): vals})
    t = w.tables[0]
    assert [t.unpack(e, s)[0].value for s in range(3)] == [10.0, 20.0, 30.0]
    assert [t.unpack(other, s)[0].value for s in range(3)] == [9.0, 9.0, 9.0]
    with pytest.raises(InputError, match="leading axis"):
        w.compile(samples=2, overrides={(e, "probe_value"): vals})
    with pytest.raises(InputError, match="no such column"):
        w.compile(samples=3, overrides={(e, "body_mass"): vals})


def test_bad_component_values_are_refused_at_pack_time():
    w = World()
    w.spawn(Tag(value=float("nan")), name="bad")
    with pytest.raises(InputError, match=r"probe_value of bad.*finite"):
        w.compile()
    w2 = World()
    w2.spawn(Tag(vec=np.array([1.0, 2.0])), name="short")
    with pytest.raises(InputError, match=r"probe_vec of short.*shape"):
        w2.compile()


def test_structural_changes_are_deferred_while_running():
    class Spawner(System):
        reads = ("probe_value",)

        def process(self, frame):
            if frame.index == 0:
                frame.world.spawn(Tag(value=42.0))

    w = World()
    w.spawn(Tag(value=1.0))
    w.add_system(Spawner())
    w.compile()
    w.run(t_end=0.3, dt=0.1)
    assert len(w.tables[0].entities) == 1  # the tables did not change under the running frame loop
    assert sorted(c.value for _, (c,) in w.query(Tag)) == [1.0, 42.0]  # applied after the run


def test_scheduler_orders_writers_before_readers():
    w = World()
    w.log = []
    w.spawn(Tag())
    # registered in reverse dependency order
    w.add_system(_S("reader", reads=("probe_vec",)))
    w.add_system(_S("middle", reads=("probe_value",), writes=("probe_vec",)))
    w.add_system(_S("writer", writes=("probe_value",)))
    w.add_system(_S("independent"))
    order = [s.name for s in w.schedule()[Phase.SCHEDULED]]
    assert order.index("writer") < order.index("middle") < order.index("reader")
    w.compile()
    w.run(t_end=0.1, dt=0.1)
    assert w.log == order


def test_accumulators_run_before_their_readers_and_may_share_a_column():
    w = World()
    sched = [_S("integrator", reads=("body_force",)), _S("gravity", accumulates=("body_force",)),
             _S("drag", accumulates=("body_force",))]
    for s in sched:
        w.add_system(s)
    order = [s.name for s in w.schedule()[Phase.SCHEDULED]]
    assert order == ["gravity", "drag", "integrator"]


def test_scheduler_cycle_names_both_systems():
    w = World()
    w.add_system(_S("alpha", reads=("probe_vec",), writes=("probe_value",)))
    with pytest.raises(ScheduleError, match=r"cycle between systems (alpha and beta|beta and alpha)"):
        w.add_system(_S("beta", reads=("probe_value",), writes=("probe_vec",)))


def test_scheduler_write_write_conflict_names_both_systems():
    w = World()
    w.add_system(_S("first", writes=("body_position",)))
    with pytest.raises(ScheduleError, match=r"first and second both write column 'body_position'"):
        w.add_system(_S("second", writes=("body_position",)))
    # the same column written in different phases is not a conflict
    w2 = World()
    w2.add_system(_S("a", writes=("body_position",)))
    w2.add_system(_S("b", phase=Phase.EVENT, writes=("body_position",)))


def test_failed_rows_are_isolated_and_runs_end_with_done():
    """A row that goes non-finite is FAILED; the other samples finish normally."""
    from systems.dynamics.integration import Integrator

    w = World()
    e = w.spawn(RigidState(velocity=np.array([1.0, 0.0, 0.0])), MassProps(mass=1.0), Wrench())
    w.add_system(Integrator("rk4"))
    vel = np.array([[1.0, 0, 0], [np.nan, 0, 0], [2.0, 0, 0]])  # sample 1 is poisoned after validation
    w.compile(samples=3, overrides={(e, "body_velocity"): vel})
    r = w.run(t_end=1.0, dt=0.25, final=("body_position",))
    assert r.status.tolist() == [Status.DONE, Status.FAILED, Status.DONE]
    np.testing.assert_allclose(r.finals["body_position"][[0, 2], 0, 0], [1.0, 2.0], rtol=0, atol=1e-14)
