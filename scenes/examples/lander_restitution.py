"""Add your own lander restitution law without touching the engine: restitution that falls with impact speed.

Hunt & Crossley (1975) read the coefficient of restitution of a viscoelastic contact as damping:
for a contact force ``K x^n (1 + α ẋ)`` the restitution falls linearly with the normal impact speed,
``e ≈ 1 − (2/3) α |v_n|`` for small ``α |v_n|``. This law scales the pair's restitution by that
factor (never below zero):

    e' = e · max(0, 1 − (2/3) α |v_n|)

Here ``α`` = :data:`ALPHA` [s/m] is a constant of this file, and ``e`` is the pair's restitution,
which a scene may draw per sample. The built-in laws cannot express it: the rigid model keeps ``e``
constant, and the regolith law is a power of the speed.

The pattern for any restitution law (a lab fit, a structure in series with the ground):

1. **A kernel.** A numba kernel ``(e, vn, speed) -> e'``: the pair's restitution, the contact
   point's normal velocity [m/s] (negative: approaching) and its speed [m/s].
2. **A law.** A :class:`components.contact_params.RestitutionLaw` holding it.
3. **A deployment.** ``scenes.mission.deployment(..., restitution_law=law)``. The deployment's
   collision kernels are linked against the law on the CPU and the GPU, and every impact of the
   probe on the terrain uses it (Stronge's impact with ``e'``).

``tests/test_restitution_law.py`` checks the rebound of a sphere against ``e'(v) · v``.

Run it: ``tumble run scenes/examples/lander_restitution.py -n 20``.

Reference: K. H. Hunt, F. R. E. Crossley, "Coefficient of restitution interpreted as damping in
vibroimpact", *Journal of Applied Mechanics* 42(2), 440–445, 1975.
"""

from numba import njit

from components.contact_params import RestitutionLaw
from scenes.mission import deployment, release_above, small_body, solid_probe

#: α of the contact's damping [s/m] (a value for the example, not a measured material's).
ALPHA = 4.0


@njit(cache=True)
def hunt_crossley(e, vn, speed):
    """e' = e · max(0, 1 − (2/3) α |v_n|) (module docstring)."""
    f = 1.0 - 2.0 / 3.0 * ALPHA * abs(vn)
    return e * f if f > 0.0 else 0.0


#: The law, for :func:`scenes.mission.deployment`.
LAW = RestitutionLaw(hunt_crossley, name="hunt_crossley")


def build(*, restitution: float = 0.6, altitude: float = 30.0, radius: float = 200.0, gm: float = 5.0,
          period_h: float = 100.0):
    """A 5 kg sphere released ``altitude`` [m] over a slowly turning sphere of ``radius`` [m], GM
    ``gm`` [m³/s²] and rotation period ``period_h`` [h], bouncing with the Hunt–Crossley
    restitution law and rolling to rest with seed 004's rolling resistance C_RR 0.035 (its
    sphere's)."""
    body = small_body("sphere", radii=(radius, radius, radius), gm=gm, period_h=period_h, gravity="point_mass",
                      resolution=48)
    probe = solid_probe("sphere", mass=5.0, density=500.0)
    release = release_above(body, latitude=20.0, longitude=0.0, altitude=altitude, position_sigma3=2.0)
    return deployment("lander-restitution", body, probe, release, restitution=restitution, friction=0.5,
                      rolling_resistance=0.035, restitution_law=LAW,
                      description="sphere lander with a user-written restitution law (Hunt & Crossley 1975)",
                      params=dict(restitution=restitution, altitude=altitude, radius=radius, gm=gm,
                                  period_h=period_h))
