"""Records of columns (ecs.record): one kernel argument read by name, built from the declarations."""

import numba
import numpy as np
import pytest

from components.multibody import Joint, Tree, tree_spec
from components.rigid import MassProps
from ecs import column_spec, record


def test_a_record_names_its_columns_and_documents_them_from_the_declarations():
    assert Tree._fields[:3] == ("parent", "kind", "axis")
    assert Tree.columns == ("link_parent", "joint_kind", "joint_axis", "joint_offset", "joint_rotation", "joint_q",
                            "joint_qd", "joint_locked", "body_mass", "body_com", "body_inertia")
    assert "``mass``: column ``body_mass`` [kg]" in Tree.__doc__
    assert "frame joint->parent" in Tree.__doc__
    table = {c: np.full(2, k, float) for k, c in enumerate(Tree.columns)}
    tree = Tree.of(table)
    assert tree.mass is table["body_mass"] and tree.parent is table["link_parent"]


def test_an_unknown_field_is_refused_by_name():
    with pytest.raises(KeyError, match="Joint has no field 'angle'"):
        column_spec(Joint, "angle")


def test_a_kernel_reads_a_record_by_name_and_writes_through_it():
    Pair = record("Pair", __name__, {"mass": column_spec(MassProps, "mass"), "q": column_spec(Joint, "q")}, "test")

    @numba.njit
    def kernel(rec):
        rec.q[0, 0] = 2.0 * rec.mass[0]
        return rec.q[0, 0]

    rec = Pair(np.array([3.0]), np.zeros((1, 7)))
    assert kernel(rec) == 6.0 and rec.q[0, 0] == 6.0


def test_a_tree_spec_gives_its_record_with_the_state_it_is_told():
    spec = tree_spec(parents=[-1, 0], kinds=["free", "revolute"], mass=[2.0, 1.0], inertia=[[1.0, 1.0, 1.0]] * 2)
    q = spec.q.copy()
    rec = spec.record(q=q)
    assert rec.q is q and rec.qd is spec.qd and rec.mass is spec.mass
