"""A force that acts in one mode only: a hold-down thruster that fires while the lander is in contact.

Philae carried a cold-gas thruster (its Active Descent System) to press it onto the comet at
touchdown, against the rebound of a weak-gravity landing (Biele et al., *Science* 349, 2015,
aaa9816). Here a thruster of that kind: while the probe is in contact motion it pushes it towards
the target's centre of mass with ``thrust`` [N]; in flight it is off. A term restricted to modes
(``ecs.terms.Term(modes=...)``) is fused only into those modes' kernels: flight runs the same code
as without the thruster (its first impacts are the same bytes), and the collision kernel's
contact-entry test (would the probe stay pressed on the surface?) counts the thrust, as contact
motion does. On a flat surface it raises the normal force from ``m g`` to ``m g + thrust``, so
friction stops a sliding probe ``(g + thrust/m) / g`` times sooner.

Run it: ``tumble run scenes/examples/deploy_holddown.py -n 20`` (``-p thrust=0``: without it).
"""

import math

from numba import njit

from components.deploy import DeployPhase
from ecs import InputError, Phase, System
from ecs.terms import Term
from scenes.mission import box_probe, deployment, release_above, small_body


@njit(cache=True)
def holddown_force(s, data, params):
    """``params.thrust`` [N] towards the target's centre of mass (integration frame); no torque."""
    x, y, z = s.x, s.y, s.z
    r = math.sqrt(x * x + y * y + z * z)
    if r == 0.0:
        return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    f = -params.thrust / r
    return f * x, f * y, f * z, 0.0, 0.0, 0.0


class HoldDownThruster(System):
    """DERIVATIVE: ``thrust`` [N] towards the target's centre of mass, in contact motion only."""

    phase = Phase.DERIVATIVE

    def __init__(self, *, thrust: float):
        if not (math.isfinite(thrust) and thrust >= 0.0):
            raise InputError("HoldDownThruster.thrust", thrust, "must be a finite force >= 0 [N]")
        self.thrust = float(thrust)

    def term(self, world) -> Term:
        return Term("holddown", holddown_force, params={"thrust": self.thrust}, modes=(int(DeployPhase.CONTACT),))


def build(*, thrust: float = 0.002):
    """A 10 kg box probe released 40 m above a spinning-top body (point-mass gravity, 4.8e-4 m/s²
    at its surface: the probe weighs 4.8 mN) with a hold-down thruster of ``thrust`` [N]."""
    body = small_body("spinning-top", radii=(250, 250, 220), gm=30.0, period_h=7.6, gravity="point_mass",
                      resolution=48)
    probe = box_probe((0.3, 0.28, 0.2), mass=10.0, level=0)
    release = release_above(body, latitude=-22.0, longitude=0.0, altitude=40.0, position_sigma3=2.0)
    scene = deployment("deploy-holddown", body, probe, release, restitution=0.5, friction=0.6,
                       description="box probe pressed down by a thruster in contact (a mode-restricted term)")
    if thrust > 0.0:
        scene.world.add_system(HoldDownThruster(thrust=float(thrust)))
    return scene

