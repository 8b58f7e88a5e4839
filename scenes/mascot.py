"""``mascot``: the Hayabusa2 lander MASCOT's descent and bouncing on asteroid (162173) Ryugu.

A flown landing to compare with and to calibrate against (README "Does it match reality?").

What was observed (:data:`OBSERVED`), from the reconstruction of the descent and bouncing path
from on-board data and images (Scholten et al. 2019): MASCOT was released about 41 m above the
surface, fell for 350 s to its first contact (Ho et al. 2021: 5 min 51 s), and bounced for 663 s,
"after four intermediate surface contacts" reaching its first settlement point about 17 m from its
first contact (DLR, 2019). The published path is accurate to about 0.1 m (1σ): it resolves a hop
whose path leaves the ground by more than that, so the contacts are compared as ``hops``, the
flights whose sagitta is at least 0.1 m (:data:`tumble.calibrate.HOP_RESOLUTION`). First contact,
four intermediate contacts and the settlement point are five such flights (four if the last leg
was not a flight; both lie inside the simulated bands, docs/validation.md). The other
uncertainties in :data:`OBSERVED` are ours, far above the path's accuracy: they state how closely a
simulation is asked to match (timing 10 s for the fall, 10 % of the bouncing time, 3 m of
distance, one hop).

What the scene takes from other sources (not fitted to the landing):

* Ryugu: mass (4.50 ± 0.06) × 10¹¹ kg, so GM = 30.0 m³/s²; rotation period 7.63262 h, retrograde
  (Watanabe et al. 2019); a spinning-top shape of equatorial radius 502 m and polar radius 438 m,
  our approximation of its ~1.0 × 0.88 km size (mean radius 448 ± 2 m in Watanabe et al. 2019).
* MASCOT: a 10 kg box (DLR, 2019) of 0.30 × 0.28 × 0.20 m (the seed's box lander), released
  41 m above the surface straight down at latitude −22°.

Fitted to the landing: the release speed, which we found no source for. DLR's "drop speed 0.4 km/h"
is the mean over the descent (41 m in 350 s is 0.42 km/h), not the speed at release; 0.098 m/s makes
the simulated fall take 350 s. So the fall time checks nothing here; the bouncing does.
* Contact: the seed's rigid Stronge model with its parameter ranges, e 0.5–0.7 and f 0.5–0.8
  (seed 004), as the defaults' centre: ``restitution=0.6``, ``friction=0.65``. Draw them with
  ``restitution_range`` / ``friction_range`` for a prior to calibrate (:mod:`tumble.calibrate`).

The shape is a smooth spinning top, not Ryugu's shape model (which is not bundled): boulders, slopes
and the local terrain at the landing site are not represented.

References (docs/references.md): Scholten, F. et al. (2019), The descent and bouncing path of the
Hayabusa2 lander MASCOT at asteroid (162173) Ryugu, *A&A*, doi:10.1051/0004-6361/201936757;
Ho, T.-M. et al. (2021), The MASCOT lander aboard Hayabusa2: the in-flight operations, *Planet.
Space Sci.* 200, 105200; Watanabe, S. et al. (2019), Hayabusa2 arrives at the carbonaceous
asteroid 162173 Ryugu, *Science* 364, 268–272, doi:10.1126/science.aav8032; DLR (2019), image
release "MASCOT's descent and bouncing path on Ryugu" (release at 41 m, drop speed 0.4 km/h,
17 m from first contact to rest).
"""

from __future__ import annotations

from ecs import Scene
from scenes.mission import flown_landing

#: Ryugu's semi-axes [m] (a, b, c; c along the spin axis), GM [m³/s²] and rotation period [h].
RYUGU_RADII = (502.0, 502.0, 438.0)
RYUGU_GM = 30.0
RYUGU_PERIOD_H = 7.63262

#: MASCOT's box [m] and mass [kg]; release altitude [m] and speed [m/s] (fitted to the fall time).
MASCOT_SIZE = (0.30, 0.28, 0.20)
MASCOT_MASS = 10.0
RELEASE_ALTITUDE = 41.0
RELEASE_SPEED = 0.098

#: The flown landing: observable (tumble.calibrate.OBSERVABLES) -> (value, the uncertainty we
#: allow a simulation), module docstring.
OBSERVED = {"fall_time": (350.0, 10.0), "bounce_time": (663.0, 66.0), "displacement": (17.0, 3.0),
            "hops": (5.0, 1.0)}


def build(*, contact: str = "rigid", restitution: float | None = None, friction: float | None = None,
          restitution_range=None, friction_range=None, speed_exponent: float | None = None,
          speed_exponent_range=None, level: int = 1, gravity: str = "voxel", latitude: float = -22.0, t_cap: float = 36000.0,
          frame: float | None = None, record_every: int | None = None) -> Scene:
    """MASCOT on Ryugu (module docstring). ``contact='rigid'`` (e 0.6 unless given) or
    ``'regolith'`` (:func:`components.contact_params.low_gravity_regolith`); ``restitution_range`` /
    ``friction_range`` / ``speed_exponent_range`` = [low, high] draw those parameters uniformly per
    sample."""
    return flown_landing(
        "mascot", "MASCOT released 41 m over Ryugu (Scholten et al. 2019): descent, bouncing, rest",
        body="spinning-top", radii=RYUGU_RADII, gm=RYUGU_GM, period_h=RYUGU_PERIOD_H, latitude=latitude, longitude=0.0,
        altitude=RELEASE_ALTITUDE, descent_speed=RELEASE_SPEED, size=MASCOT_SIZE, mass=MASCOT_MASS, gravity=gravity,
        level=level, contact_args=locals(), t_cap=t_cap, frame=frame, record_every=record_every)
