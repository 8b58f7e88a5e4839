"""Regression: tessellated probes never sink a vertex more than 1 mm into noisy, rocky terrain.

``final/probe_max_penetration`` is the deepest vertex seen at a flight event, a collision's
projection or contact drift. Before the fix, ``deploy-box`` at tessellation level 1 on fBm relief
plus the seeded rock texture (2,000 samples, seed 0) went up to 64 mm deep; after it the deepest of
the 2,000 is 0.100 mm (the contact gap). Three of the formerly deepest samples, one per mechanism
(``tumble rerun``-style: the sample's own dispersion draws, the scene as the batch builds it):

* sample 1563 (31.0 mm before): the collision lifted only its deepest vertex, by its depth along
  the unit normal, leaving another 0.19 mm deep; contact motion then started with its event
  function below zero, never located an event, and a vertex sank 31 mm in one phase.
* sample 418 (64.2 mm before): in a crease of the rock texture, lifting the deepest vertex off one
  flank pushed the vertex on the facing flank deeper (−35 mm became −63 mm), and collide → fly
  rounds ratcheted it down.
* sample 584 (3.3 mm before): a face vertex slid into the flank of a texture bump at 17 mm/s;
  the bounce, along the face normal (eq 2.33), resolved nothing, flight carried the vertex 0.1 mm
  deeper each 11 ms, and a projection that could not lift it let the depth ratchet.

The first test checks :data:`systems.deployment.events.lift_out` against the closed-form answer on a
V-shaped groove of two planes.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from components.status import Status
from components.terrain import TerrainSDF, sdf_plane
from ecs import store as zstore
from scenes.deploy import build_box
from systems.deployment.physics import WORK_SIZE, Y0
from systems.deployment.events import LIFT_TOL, lift_out
from systems.deployment.loop import DeploymentLoop
from systems.terrain.sdf import eval_terrain, terrain_args

#: Acceptance bound of issue 19 [m] (the contact gap is 0.1 mm).
MAX_PENETRATION = 1e-3


def test_lift_out_leaves_a_groove_along_its_bisector():
    """Two vertices, one on each flank of a V groove whose flanks rise at 60°, both 0.3 mm deep:
    lifting one along its own normal would push the other deeper (the normals are 120° apart, so
    by 0.3 cos 120° = −0.15 mm more); the smallest translation that clears both flanks is straight up
    the bisector by 0.3 mm / cos 60° (each flank's distance grows at cos 60° per metre up)."""
    th = math.radians(60.0)
    n1 = np.array([-math.sin(th), 0.0, math.cos(th)])
    n2 = np.array([math.sin(th), 0.0, math.cos(th)])
    terrain = TerrainSDF(base=sdf_plane(n1).union(sdf_plane(n2)))
    ta = terrain_args(terrain)
    a = 0.1                                      # the vertices at x = ±a about the CoM
    vpos = np.array([[-a, 0.0, 0.0], [a, 0.0, 0.0]])
    depth = 3e-4
    # vertex x = +a lies against flank 1 (n1·p = -depth), x = -a against flank 2, by symmetry
    z0 = (-depth + math.sin(th) * a) / math.cos(th)
    w = np.zeros(WORK_SIZE)
    w[Y0 + 2] = z0
    w[Y0 + 6] = 1.0                              # identity attitude
    d, _ = eval_terrain(terrain, vpos + w[Y0:Y0 + 3])
    np.testing.assert_allclose(d, [-depth, -depth], rtol=1e-9)
    # the old rule: lift the deepest vertex (either) by its depth along its normal
    p = vpos + w[Y0:Y0 + 3] + depth * n1
    d_old, _ = eval_terrain(terrain, p)
    assert d_old.min() < -depth * 1.4              # the other one sinks, to -0.45 mm
    act = np.zeros((1, 2), np.int8)
    slot = np.zeros((1, 2), np.int64)
    pen = lift_out.cpu(w, Y0, ta, vpos, np.int64(0), np.int64(2), 0.0, act, slot, np.int64(0), False)
    assert pen == pytest.approx(depth, rel=1e-9)
    np.testing.assert_allclose(w[Y0:Y0 + 3], [0.0, 0.0, z0 + depth / math.cos(th)], rtol=0, atol=1e-12)
    d, _ = eval_terrain(terrain, vpos + w[Y0:Y0 + 3])
    assert d.min() >= -LIFT_TOL


SAMPLES = {1563: 31.0e-3, 418: 64.2e-3, 584: 3.3e-3}   # sample: max penetration before the fix [m]


@pytest.mark.parametrize("sample", list(SAMPLES))
def test_formerly_deep_sample_stays_within_a_millimetre(sample):
    """The sample runs to rest and its deepest vertex stays within 1 mm (before: SAMPLES [m])."""
    scene = build_box(level=1, rocks="psr", fbm=True)
    world = scene.world
    world.compile(samples=1)
    layout = zstore.Layout.from_world(scene, world, 2000)
    inputs = layout.draw_inputs(0, sample, sample + 1)
    world.compile(samples=1, sample_offset=sample, overrides=layout.overrides(inputs))
    res = world.run(t_end=scene.t_end, dt=scene.dt, final=("probe_max_penetration",))
    loop = next(s for s in world.systems if isinstance(s, DeploymentLoop))
    pen = float(loop.ctx.table["probe_max_penetration"][0])
    assert res.status[0] == Status.SETTLED
    assert pen <= MAX_PENETRATION
