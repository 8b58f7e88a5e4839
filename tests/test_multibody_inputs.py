"""Bad articulated-tree input is refused before any work, in one line naming the field (and link),
the value and the rule (components/multibody.py), both through ``tree_spec`` and through the
column rules that ``World.compile`` applies to every packed row."""

from __future__ import annotations

import numpy as np
import pytest

from components.multibody import Joint, Link, LinkWrench, spawn_tree, tree_spec
from components.rigid import MassProps
from ecs import World
from ecs.errors import InputError

GOOD = dict(parents=[-1, 0, 1], kinds=["free", "revolute", "spherical"], mass=[2.0, 1.0, 1.0],
            inertia=[[1.0, 1.0, 1.5]] * 3)


def _spec(**change):
    return tree_spec(**{**GOOD, **change})


CASES = [
    ({"mass": [2.0, -1.0, 1.0]}, "tree.mass[1]", "> 0"),
    ({"mass": [2.0, np.nan, 1.0]}, "tree.mass[1]", "> 0"),
    ({"inertia": [[1.0, 1.0, 1.5], [1.0, 1.0, -1.0], [1.0, 1.0, 1.0]]}, "tree.link[1].inertia", "positive definite"),
    ({"inertia": [[1.0, 1.0, 1.5], [1.0, 1.0, 3.0], [1.0, 1.0, 1.0]]}, "tree.link[1].inertia", "triangle"),
    ({"parents": [-1, 2, 1]}, "tree.parents[1]", "parents before children"),
    ({"parents": [-1, 0, 0.5]}, "tree.parents[2]", "integer"),
    ({"parents": [0, 0, 1]}, "tree.parents[0]", "parents before children"),
    ({"kinds": ["free", "hinge", "spherical"]}, "tree.kinds[1]", "must be one of"),
    ({"kinds": ["free", "revolute"]}, "tree.kinds", "one per link"),
    ({"axis": [[0, 0, 1], [0, 0, 0], [0, 0, 1]]}, "tree.axis[1]", "non-zero"),
    ({"rotation": [[1, 0, 0, 0], [1, 0, 0, 0], [1.1, 0, 0, 0]]}, "tree.rotation[2]", "unit quaternion"),
    ({"q": [[0, 0, 0, 1, 0, 0, 0], [0.1, 0, 0, 0, 0, 0, 0], [0.9, 0, 0, 0, 0, 0, 0]]}, "tree.q[2]", "q[0:4] of a spherical joint must be a unit quaternion"),
    ({"q": [[0, 0, 0, 2, 0, 0, 0], [0.1, 0, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0, 0]]}, "tree.q[0]", "q[3:7] of a free joint must be a unit quaternion"),
    ({"q": [[0, 0, 0, 1, 0, 0, 0], [0.1, 0.2, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0, 0]]}, "tree.q[1]", "must be 0"),
    ({"qd": [[0] * 6, [0.1, 0.3, 0, 0, 0, 0], [0] * 6]}, "tree.qd[1]", "must be 0"),
    ({"com": [[0, 0, 0], [0, 0]]}, "tree.com", "3 vectors of 3 numbers"),
    ({"viscous": [0.0, -1.0, 0.0]}, "tree.viscous[1]", ">= 0"),
    ({"slip": [1e-3, 0.0, 1e-3]}, "tree.slip[1]", "> 0"),
    ({"locked": [True, False]}, "tree.locked", "one per link"),
]


@pytest.mark.parametrize("change,field,rule", CASES, ids=[c[1] + ":" + c[2] for c in CASES])
def test_tree_spec_refuses(change, field, rule):
    with pytest.raises(InputError) as e:
        _spec(**change)
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(field + " = "), msg
    assert rule in msg, msg


def test_good_tree_is_normalised():
    s = _spec(axis=[[0, 0, 1], [0, 3.0, 0], [0, 0, 1]], q=[[1, 2, 3, 1 + 1e-8, 0, 0, 0], [0.2] + [0] * 6,
                                                          [1, 0, 0, 0, 0, 0, 0]])
    assert np.allclose(s.axis[1], [0, 1, 0]) and abs(np.linalg.norm(s.q[0, 3:]) - 1.0) < 1e-15
    assert list(s.nv) == [6, 1, 3]


@pytest.mark.parametrize("comp,column,rule", [
    (lambda: Joint(kind=7), "joint_kind", "joint kind code"),
    (lambda: Joint(kind=1, axis=[0.0, 0.0, 2.0]), "joint_axis", "unit vector"),
    (lambda: Joint(rotation=[0.5, 0.0, 0.0, 0.0]), "joint_rotation", "unit quaternion"),
    (lambda: MassProps(mass=0.0), "body_mass", "> 0"),
    (lambda: MassProps(inertia=np.diag([1.0, 1.0, 3.0])), "body_inertia", "I3 <= I1 + I2"),
])
def test_columns_are_checked_at_compile(comp, column, rule):
    """Components built by hand (not through tree_spec) meet the same rules when packed."""
    w = World("mb")
    c = comp()
    parts = {Joint: Joint(kind=4, q=[0, 0, 0, 1, 0, 0, 0]), Link: Link(), MassProps: MassProps(),
             LinkWrench: LinkWrench()}
    parts[type(c)] = c
    w.spawn(*parts.values(), name="arm")
    with pytest.raises(InputError) as e:
        w.compile()
    msg = str(e.value)
    assert msg.startswith(f"{column} of arm (sample 0) = "), msg
    assert rule in msg, msg


def test_spawn_tree_links_parents_to_rows():
    w = World("mb")
    spec = tree_spec(parents=[-1, 0, 0, 2], kinds=["free", "revolute", "prismatic", "fixed"], mass=[1, 2, 3, 4],
                     inertia=[[1.0, 1.0, 1.0]] * 4)
    ents = spawn_tree(w, spec, name="arm")
    (t,) = w.compile(samples=3)
    rows = t["link_parent"].reshape(3, 4)
    assert rows.tolist() == [[-1, 0, 0, 2], [-1, 4, 4, 6], [-1, 8, 8, 10]]
    assert t.entities.tolist() == ents and w.name_of(ents[3]) == "arm.link3"


def test_hand_built_or_dispersed_joint_states_are_checked():
    """States that do not come through tree_spec (components built by hand, per-sample draws)
    meet the same rules when the multibody system binds or the batch runner checks its inputs."""
    from systems.multibody.dynamics import MultibodyDynamics

    w = World("mb")
    w.spawn(Link(), MassProps(), LinkWrench(), *tree_spec(parents=[-1], kinds=["spherical"], mass=[1.0],
                                                          inertia=[[1.0, 1.0, 1.0]]).components(0)[3:], name="ball")
    sysm = w.add_system(MultibodyDynamics())
    e = w.entity("ball")
    good = np.array([[1.0, 0, 0, 0, 0, 0, 0], [0.6, 0.8, 0, 0, 0, 0, 0]])
    w.compile(samples=2, overrides={(e, "joint_q"): good})
    bad = np.array([[1.0, 0, 0, 0, 0, 0, 0], [0.6, 0.6, 0, 0, 0, 0, 0]])
    with pytest.raises(InputError) as err:
        w.compile(samples=2, overrides={(e, "joint_q"): bad})
    assert str(err.value).startswith("joint_q of ball (sample 1) = [0.6, 0.6"), str(err.value)
    with pytest.raises(InputError) as err:
        sysm.check_inputs(w, {(e, "joint_qd"): np.array([[0.1, 0, 0, 0, 0, 0], [0, 0, 0, 0.2, 0, 0]])}, 10, 2)
    assert str(err.value).startswith("joint_qd of ball (sample 11) = ") and "slots 3..5 must be 0" in str(err.value)
