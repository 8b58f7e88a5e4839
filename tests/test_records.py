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


# ------------------------------------------------------------------ work-row layouts (ecs.row_layout)
def _layouts():
    from systems.deployment.physics import DEPLOY_ROW
    from systems.gravity import kernels as gk
    from systems.probe_contact.contact_motion import PLANE_ROW, SPHERE_ROW
    from systems.deployment.records import ATTITUDE_STATE, PROBE_STATE, RKMK_STATE
    from systems.probe_contact.impulse import IMPULSE_ROW, IMPULSE_STATE
    return (DEPLOY_ROW, IMPULSE_ROW, PLANE_ROW, SPHERE_ROW, gk.POINT_MASS_SCALARS, gk.ELLIPSOID_SCALARS,
            gk.POLYHEDRON_SCALARS, gk.VOXEL_SCALARS, gk.LINEARIZED_SCALARS, gk.HARMONICS_SCALARS,
            PROBE_STATE, ATTITUDE_STATE, RKMK_STATE, IMPULSE_STATE)


def test_every_work_row_layout_gives_each_field_its_own_slots_inside_the_row():
    for lay in _layouts():
        used = np.zeros(lay.size, int)
        for field, (offset, width, doc) in lay.slots.items():
            assert doc, (lay.name, field)
            used[offset:offset + width] += 1
            assert lay.offset(field) == offset and lay.end(field) == offset + width
            assert isinstance(lay.offset(field), np.int64)      # never a Python-int literal (ecs.kernels.dual_call)
        assert used.max() == 1, lay.name


def test_the_deployment_rows_stage_blocks_are_contiguous_as_its_kernels_index_them():
    from systems.deployment.physics import DEPLOY_ROW, K0, KFSAL, RK, RKFSAL, STATE
    from systems.deployment.records import A_W, ATTITUDE_STATE, PROBE_STATE, RKMK_STATE, S_Q, S_W
    assert KFSAL == K0 + 6 * STATE and RKFSAL == RK + 6 * RKMK_STATE.size   # K_j at K0 + 13 j, j = 0 ... 6
    assert DEPLOY_ROW.end("CONTACT_ATTEMPTS") == DEPLOY_ROW.size
    # the attitude part the attitude rates read is the probe state's tail, from S_Q
    assert S_Q + A_W == S_W and S_Q + ATTITUDE_STATE.size == PROBE_STATE.size == STATE


def test_a_bad_layout_declaration_is_refused_by_name():
    from ecs import row_layout
    with pytest.raises(ValueError, match="field 'A' declared twice"):
        row_layout("t", (("A", 1, "a"), ("A", 2, "a")))
    with pytest.raises(ValueError, match="field 'B' has width 0"):
        row_layout("t", (("B", 0, "b"),))
    with pytest.raises(ValueError, match="size 2 is shorter than its fields"):
        row_layout("t", (("A", 3, "a"),), size=2)
    with pytest.raises(KeyError, match="t has no field 'C'"):
        row_layout("t", (("A", 3, "a"),)).offsets("A C")


# ------------------------------------------------------------------ the stepper family (ecs.stepping)
@pytest.mark.parametrize("name, taylor_terms", [("rk4", 5), ("bs32", 4), ("euler", 2)])
def test_the_shared_stage_sum_takes_a_linear_step_by_the_tableaus_stability_polynomial(name, taylor_terms):
    """One step of y' = λy from y = 1 formed with ``stage_sum`` over the tableau's weights must be the
    method's stability polynomial, for these tableaux (s stages of order s ≤ 4, or BS3(2) whose
    fourth stage has b = 0) the Taylor polynomial of e^z of degree p: an analytic result, to
    round-off (1e-14 relative at |z| ≤ 0.5)."""
    import math

    from ecs.stepping import TABLEAUX, row_weighted_sum, stage_sum
    tab = TABLEAUX[name]
    W, s = tab.weights, tab.stages
    for z in (-0.5, -0.1, 0.3):
        h, lam = 0.25, z / 0.25
        K = np.zeros((1, s, 1))
        for st in range(s):
            K[0, st, 0] = lam * stage_sum.cpu(1.0, h, W, st, st, K, 0, 0)
        y1 = stage_sum.cpu(1.0, h, W, tab.solution_row, s, K, 0, 0)
        exact = sum(z ** k / math.factorial(k) for k in range(taylor_terms))
        assert abs(y1 - exact) <= 1e-14 * abs(exact)
        # the flat-row form (stages in one row, h outside the sum) takes the same step
        flat = np.ascontiguousarray(K[0, :, 0])
        assert abs(1.0 + h * row_weighted_sum.cpu(flat, 0, 1, 0, W, tab.solution_row, s) - exact) <= 1e-14 * abs(exact)
        err = stage_sum.cpu(0.0, h, W, tab.error_row, s, K, 0, 0)
        assert (err == 0.0) == (tab.b_err is None)


def test_the_analytic_surfaces_share_their_point_slots():
    """The contact kernels read a plane's point and a sphere's centre at the same SURF_X, SURF_Y, SURF_Z."""
    from systems.probe_contact.contact_motion import PLANE_ROW, SPHERE_ROW, SURF_X, SURF_Y, SURF_Z
    assert PLANE_ROW.offsets("X Y Z") == SPHERE_ROW.offsets("X Y Z") == (SURF_X, SURF_Y, SURF_Z)
