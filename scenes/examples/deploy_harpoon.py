"""Add your own mode to a deployment without touching the engine: an anchoring harpoon.

Philae's anchoring system (Biele et al., *Science* 349, 2015, aaa9816) was to fire two harpoons at
touchdown and reel the lander onto the comet with a tether, so that it could not bounce off the
weak-gravity surface. Here a simplified anchor of that kind: at the probe's **first touchdown**
the harpoon fires; its tether brake absorbs the probe's kinetic energy relative to the surface,
``½ m |v|² + ½ ωᵀ I ω``, up to ``energy`` [J]. If the energy is within that capacity the probe is
held where it touched down, at rest relative to the surface (mode ANCHORED), and it is SETTLED
once it has been held for ``DeploySettings.settle_hold``; its settling time is the touchdown time.
Otherwise the tether breaks, the probe bounces as without an anchor (Stronge's impact), and the
spent harpoon never fires again. The catch is not a collision: no Stronge impact, no collision
event, ``probe_collisions`` stays 0 for a probe anchored at once.

Two systems, both in this file (:mod:`systems.deployment.modes`):

1. :class:`FireHarpoon`, an EVENT system: the deployment's mode loop hands it every row with a
   touchdown pending (mode COLLIDE) before its own Stronge resolver; it takes the rows it anchors
   (mode ANCHORED) and leaves the others to the resolver;
2. :class:`Anchored`, a :class:`systems.deployment.modes.Mode` with a code of its own: the loop launches it
   over the anchored rows at every pass; it holds them and advances their time to the frame end
   (never past it: it keeps no dense output), ending them when the hold is complete (at that
   time exactly, so the settling time and the end time do not depend on the frame length).

Run it: ``tumble run scenes/examples/deploy_harpoon.py -n 20`` (``-p energy=0`` disables the
anchor: the same samples as the plain scene).
"""

import math

import numpy as np

from components.status import Status
from ecs import InputError, Phase, System
from scenes.mission import box_probe, deployment, release_above, small_body
from systems.deployment.modes import Mode

#: ``probe_phase`` of an anchored probe (any code the deployment's own modes do not use).
ANCHORED = 16


class FireHarpoon(System):
    """EVENT: at a probe's first touchdown, anchor it if its kinetic energy relative to the surface
    is within the tether brake's capacity ``energy`` [J] (module docstring)."""

    phase = Phase.EVENT
    reads = ("body_mass", "body_inertia", "probe_collisions")
    writes = ("body_velocity", "body_omega", "probe_first_impact_time", "probe_rest_since")

    def __init__(self, *, energy: float):
        if not (math.isfinite(energy) and energy >= 0.0):
            raise InputError("FireHarpoon.energy", energy, "must be a finite energy >= 0 [J]")
        self.energy = float(energy)

    def resolve(self, ctx, rows: np.ndarray) -> None:
        """``rows``: running probe rows with a touchdown pending at their row_time."""
        t = ctx.table
        first = rows[t["probe_collisions"][rows] == 0]     # the harpoon fires once, at the first touchdown
        if not len(first):
            return
        v, w = t["body_velocity"][first], t["body_omega"][first]   # relative to the target; ω body axes
        ke = 0.5 * t["body_mass"][first] * np.einsum("ij,ij->i", v, v) + 0.5 * np.einsum(
            "ij,ijk,ik->i", w, t["body_inertia"][first], w)
        held = first[ke <= self.energy]
        now = t["row_time"][held]
        t["body_velocity"][held] = 0.0
        t["body_omega"][held] = 0.0
        t["probe_first_impact_time"][held] = now
        t["probe_rest_since"][held] = now
        t["probe_phase"][held] = ANCHORED


class Anchored(Mode):
    """The ANCHORED mode: held at rest where the harpoon caught the probe; SETTLED after
    ``DeploySettings.settle_hold`` [s] held (module docstring)."""

    code = ANCHORED
    writes = ("row_time", "row_status", "probe_settle_time")

    def advance(self, ctx, rows: np.ndarray, t_end: np.ndarray) -> None:
        t, st = ctx.table, ctx.settings
        since = t["probe_rest_since"][rows]
        done_at = np.minimum(since + st.settle_hold, st.t_cap)
        now = np.minimum(t_end[rows], done_at)
        t["row_time"][rows] = now
        held = now >= since + st.settle_hold
        settled = rows[held]
        t["row_status"][settled] = Status.SETTLED
        t["probe_settle_time"][settled] = since[held]
        t["row_status"][rows[~held & (now >= done_at)]] = Status.TIMED_OUT     # the time cap came first


def build(*, energy: float = 0.25, descent_speed: float = 0.1, descent_sigma3: float = 0.1,
          frame: float | None = None):
    """A 10 kg box probe released 40 m above a spinning-top body with an anchoring harpoon of
    ``energy`` [J] (0: no anchor; module docstring); release speed ``descent_speed`` ±
    ``descent_sigma3`` (3σ per axis) [m/s]; ``frame``: the recording interval [s] (default the
    deployment's)."""
    body = small_body("spinning-top", radii=(250, 250, 220), gm=30.0, period_h=7.6, gravity="point_mass",
                      resolution=48)
    probe = box_probe((0.3, 0.28, 0.2), mass=10.0, level=0)
    release = release_above(body, latitude=-22.0, longitude=0.0, altitude=40.0, descent_speed=descent_speed,
                            position_sigma3=2.0, velocity_sigma3=descent_sigma3)
    scene = deployment("deploy-harpoon", body, probe, release, restitution=0.5, friction=0.6, frame=frame,
                       description="box probe with an anchoring harpoon (a user mode)")
    if energy > 0.0:
        scene.world.add_system(FireHarpoon(energy=energy))
        scene.world.add_system(Anchored())
    return scene

