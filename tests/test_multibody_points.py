"""Points of interest on links (components.multibody.PointOfInterest; seed 001's POIs and
NonGravAccels) against the closed-form motion of a spinning rigid body in orbit."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from components.gravity import PointMass
from components.multibody import PointOfInterest, spawn_tree, tree_spec
from components.rigid import rigid_body
from ecs import World
from ecs.errors import InputError
from scenes.dumbbell import MU_EARTH, R_EARTH
from systems.multibody.dynamics import MultibodyDynamics


@pytest.mark.parametrize("gravity", ["full", "differential"])
def test_point_on_a_spinning_link_in_orbit(gravity):
    """A free link with an isotropic inertia (no gravity-gradient torque, so its rate ω stays
    constant) in LEO: a point at ρ (link axes) has acceleration g(x_c) + ω × (ω × Rρ), so its
    non-gravitational acceleration is exactly the centripetal term; its velocity is
    v_c + ω × Rρ. Checked every frame for 10 min. The link-origin acceleration is assembled in the
    spinning link frame from terms of size |ω||v_orbit| ~ 1e3 m/s², so its round-off (ε·1e3 ~ 2e-13
    m/s²) is ~1e-11 of the 0.02 m/s² centripetal term: measured 4.7e-12 (full) and 4.4e-12
    (differential); limit 1e-10. Before the velocity-product force was written without its
    ``v × m v`` term the same check was off by 7e-6 (a spurious torque, see ``_bias_add``)."""
    r = R_EARTH + 450e3
    w_b = np.array([0.05, -0.08, 0.11])
    rho = np.array([1.2, -0.4, 0.7])
    spec = tree_spec(parents=[-1], kinds=["free"], mass=[50.0], inertia=[[4.0, 4.0, 4.0]],
                     q=[[r, 0, 0, 1, 0, 0, 0]], qd=[[0, math.sqrt(MU_EARTH / r), 0, *w_b]])
    w = World("poi")
    w.add_resource(PointMass(mu=MU_EARTH))
    (link,) = spawn_tree(w, spec)
    w.spawn(PointOfInterest(link=link, offset=rho), name="sensor")
    w.add_system(MultibodyDynamics(gravity=gravity))
    res = w.run(t_end=600.0, dt=10.0, record_every=1,
                record=("poi_position", "poi_velocity", "poi_acceleration", "poi_nongrav_acceleration",
                        "link_position", "link_attitude", "joint_qd"))
    tr = res.trajectories
    R = Rotation.from_quat(tr["link_attitude"][0, :, 0][:, [1, 2, 3, 0]]).as_matrix()
    rw = np.einsum("tij,j->ti", R, rho)
    wi = np.einsum("tij,j->ti", R, w_b)
    centripetal = np.cross(wi, np.cross(wi, rw))
    scale = np.linalg.norm(w_b) ** 2 * np.linalg.norm(rho)
    e_ng = np.max(np.abs(tr["poi_nongrav_acceleration"][0, :, 0] - centripetal)) / scale
    x = tr["link_position"][0, :, 0]
    g = -MU_EARTH * x / np.linalg.norm(x, axis=1)[:, None] ** 3
    e_a = np.max(np.abs(tr["poi_acceleration"][0, :, 0] - (g + centripetal))) / scale
    v = tr["joint_qd"][0, :, 0, :3] + np.cross(wi, rw)
    e_v = np.max(np.abs(tr["poi_velocity"][0, :, 0] - v)) / np.max(np.abs(v))
    e_x = np.max(np.abs(tr["poi_position"][0, :, 0] - (x + rw)))
    print(f"\n{gravity}: non-grav {e_ng:.1e}, acceleration {e_a:.1e} (of |ω²ρ|), velocity {e_v:.1e}, position {e_x:.1e} m")
    assert e_ng <= 1e-10 and e_a <= 1e-10 and e_v <= 1e-14 and e_x <= 1e-8


def test_point_of_interest_needs_a_link():
    w = World("bad-poi")
    body = w.spawn(*rigid_body(mass=1.0, inertia=(1.0, 1.0, 1.0)), name="body")
    spawn_tree(w, tree_spec(parents=[-1], kinds=["free"], mass=[1.0], inertia=[[1.0, 1.0, 1.0]]))
    w.spawn(PointOfInterest(link=body), name="p")
    w.add_system(MultibodyDynamics())
    with pytest.raises(InputError, match="poi_link"):
        w.compile()
