"""``hayabusa``: the first touchdown of the spacecraft Hayabusa on asteroid (25143) Itokawa, an
unplanned free fall, two bounces and half an hour at rest on the regolith of the Muses Sea.

The second flown landing to compare with (README "Does it match reality?", docs/validation.md);
the first is :mod:`scenes.mascot`.

What was observed, 19 November 2005 UTC (20 November in Japan). Yano et al. (2006) chose the
smooth terrain of the Muses Sea for the touchdowns. It is "a regolith field densely filled with
size-sorted, millimeter- to centimeter-sized grains". JAXA's press release of 23 November 2005
(JAXA 2005) and the reports of the same data (Lakdawalla 2005, Matsuura's weblog in translation)
give what the spacecraft did:

* it detected an obstacle just below 17 m, could not take off, and went on in free fall;
* it touched down at about 10 cm/s, "around 6:10" JST;
* after a bounce it touched down again "around 6:30", and "another small bounce brought the
  spacecraft into rest", about 6:35;
* it rested for about 30 minutes until the commanded take-off at 6:58.

:data:`OBSERVED` holds these as our observables:

* about 1,320 s from the first contact to rest (6:10 to 6:32);
* a longest flight of about 1,200 s (6:10 to 6:30, the first bounce);
* two hops (:data:`tumble.calibrate.OBSERVABLES` ``hops``): the range finder and attitude data
  showed these two, and what they resolve is not published, so they are compared with the flights
  a reconstruction at MASCOT's accuracy (0.1 m) resolves (:mod:`scenes.mascot`).

The times are quoted to "around" a minute and the start of the rest to a few, so the uncertainties
are ours: 300 s on each duration, one hop.

What the scene takes from other sources (not fitted to the touchdown):

* Itokawa: mass 3.51 × 10¹⁰ kg (Fujiwara et al. 2006), so GM = 2.34 m³/s²; rotation period
  12.132 h, retrograde (Fujiwara et al. 2006). The shape is the Itokawa-like two-lobed body of
  :mod:`scenes.assets.bodies` (seed 004 Table 4.1's 268 × 147 × 105 m envelope), not the shape
  model, which is not bundled.
* Touchdown site: the Muses Sea lies in the neck between Itokawa's body and head. Our analogue is
  the neck of the Itokawa-like body at latitude 0°, longitude 45°. There the local slope against
  the effective gravity (gravity and centrifugal, 8.2 × 10⁻⁵ m/s²) is 2.1°, the flattest point of
  the neck (measured on a 5° grid of the voxel field).
* Hayabusa: its main body, a box of 1.0 × 1.6 × 1.1 m (JAXA). The two solar paddles (5.7 m span)
  and the sampler horn are left out, although the spacecraft rested on the horn and an edge of the
  body or a paddle. Its mass, about 500 kg, does not change the outcome: a rigid body's impacts
  depend on its shape and its mass distribution, not on its mass.
* Fall: released 17 m above the surface, straight down (radially). The release speed of
  0.085 m/s makes the touchdown speed the reported 10 cm/s under the site's gravity. The attitude
  at release is uniform (unknown: "the orientation of the spacecraft was too steep").
* Contact: as :mod:`scenes.mascot`, the seed's rigid Stronge model with e 0.6 and f 0.65 unless
  ``contact='regolith'`` (:func:`components.contact_params.low_gravity_regolith`).

References (docs/references.md):

* Yano, H. et al. (2006), Touchdown of the Hayabusa spacecraft at the Muses Sea on Itokawa,
  *Science* 312, 1350–1353, doi:10.1126/science.1126164.
* Fujiwara, A. et al. (2006), The rubble-pile asteroid Itokawa as observed by Hayabusa, *Science*
  312, 1330–1334, doi:10.1126/science.1125841.
* JAXA (2005), press release of 23 November 2005 on the first touchdown.
* Lakdawalla, E. (2005), "Big news for Hayabusa: it wasn't hovering, it landed!!", The Planetary
  Society, 23 November 2005.
"""

from __future__ import annotations

from ecs import Scene
from scenes.mission import flown_landing

#: The Itokawa-like body's semi-axes [m] (seed 004 Table 4.1), GM [m³/s²] and rotation period [h].
ITOKAWA_RADII = (268.0, 147.0, 105.0)
ITOKAWA_GM = 2.34
ITOKAWA_PERIOD_H = 12.132

#: The Muses Sea analogue: planetocentric latitude and longitude [deg] of the touchdown site.
SITE = (0.0, 45.0)

#: Hayabusa's main body [m] and mass [kg]; release altitude [m] and speed [m/s] (touchdown at 10 cm/s).
HAYABUSA_SIZE = (1.0, 1.6, 1.1)
HAYABUSA_MASS = 500.0
RELEASE_ALTITUDE = 17.0
RELEASE_SPEED = 0.085

#: The flown touchdown: observable (tumble.calibrate.OBSERVABLES) -> (value, the uncertainty we
#: allow a simulation), module docstring.
OBSERVED = {"bounce_time": (1320.0, 300.0), "longest_flight": (1200.0, 300.0), "hops": (2.0, 1.0)}


def build(*, contact: str = "rigid", restitution: float | None = None, friction: float | None = None,
          restitution_range=None, friction_range=None, speed_exponent: float | None = None,
          speed_exponent_range=None, level: int = 1, gravity: str = "voxel", latitude: float = SITE[0],
          longitude: float = SITE[1], t_cap: float = 36000.0, frame: float | None = None,
          record_every: int | None = None) -> Scene:
    """Hayabusa's first touchdown on Itokawa (module docstring). ``contact='rigid'`` (e 0.6 unless
    given) or ``'regolith'``; the ranges draw those parameters uniformly per sample."""
    return flown_landing(
        "hayabusa", "Hayabusa's free fall from 17 m onto Itokawa's Muses Sea (Yano et al. 2006): bounces, rest",
        body="itokawa", radii=ITOKAWA_RADII, gm=ITOKAWA_GM, period_h=ITOKAWA_PERIOD_H, latitude=latitude,
        longitude=longitude, altitude=RELEASE_ALTITUDE, descent_speed=RELEASE_SPEED, size=HAYABUSA_SIZE,
        mass=HAYABUSA_MASS, gravity=gravity, level=level, contact_args=locals(), t_cap=t_cap, frame=frame,
        record_every=record_every)
