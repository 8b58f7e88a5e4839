"""Add your own force to a deployment without touching the engine: solar radiation pressure.

A cannonball model (Montenbruck & Gill, *Satellite Orbits*, 2000, §3.4): the Sun pushes the probe
away from itself with ``F = P · C_R · A`` [N], ``P`` the solar pressure at the body's distance
(4.56e-6 N/m² at 1 au), ``C_R`` the reflectivity coefficient (1: absorbing, 2: mirror), ``A`` the
probe's cross-section [m²]. The Sun's direction ``s`` is fixed in the inertial frame N; the
deployment integrates in the rotating target frame T, so the force is ``−F R_T/N(t)ᵀ s``: the
target turns at Ω (the world's ``components.rigid.RotatingFrame``, which a deployment scene declares
with the target's rate; T components, q_T/N = identity at t = 0). The term reads that frame from the
world, so the same system acts in whatever frame a pipeline integrates in (none: inertial).

The pattern for any force, sensor-free controller or torque on a lander:

1. a numba row kernel ``(s, data, params)`` that reads the row's stage state ``s`` (``s.t``,
   ``s.x``, ``s.mass``, …: :data:`ecs.terms.RowState`), your columns and arrays (``data.<name>``) and
   your parameters (``params.<name>``) by name, returning force (integration frame) and torque
   (body axes);
2. a DERIVATIVE :class:`ecs.System` whose :meth:`term` returns an :class:`ecs.terms.Term`;
3. ``scene.world.add_system(...)``: the deployment fuses it into its right-hand side in flight,
   contact motion and collision set-up. ``attitude=False, torque=False`` (this force depends on
   position and time only) keeps flight's fast multirate attitude split. The same system, unchanged,
   pushes a free rigid body integrated by :class:`systems.dynamics.integration.Integrator` (it applies row
   terms at every stage: :mod:`systems.dynamics.rigid_terms`) — one user force for every pipeline.

Run it: ``tumble run scenes/examples/deploy_srp.py -n 20`` (``-p exaggerate=1000`` makes the
effect visible at plot scale).
"""

import math

import numpy as np
from numba import njit

from components.rigid import RotatingFrame
from ecs import InputError, Phase, System
from ecs.terms import Term
from scenes.mission import box_probe, deployment, release_above, small_body

#: Solar radiation pressure at 1 au [N/m²] (Montenbruck & Gill 2000, eq 3.69).
P_1AU = 4.56e-6


@njit(cache=True)
def srp_force(s, data, params):
    """Cannonball SRP force [N] in the target frame at stage time s.t; no torque."""
    t, p = s.t, params
    f = p.pressure * p.cr * p.area
    sx, sy, sz, ox, oy, oz = p.sx, p.sy, p.sz, p.ox, p.oy, p.oz
    w = math.sqrt(ox * ox + oy * oy + oz * oz)
    ux, uy, uz = sx, sy, sz
    if w > 0.0:            # s in T: s_N turned by −|Ω| t about Ω (Rodrigues)
        kx, ky, kz = ox / w, oy / w, oz / w
        c = math.cos(-w * t)
        sn = math.sin(-w * t)
        kd = kx * sx + ky * sy + kz * sz
        cx, cy, cz = ky * sz - kz * sy, kz * sx - kx * sz, kx * sy - ky * sx
        ux = sx * c + cx * sn + kx * kd * (1.0 - c)
        uy = sy * c + cy * sn + ky * kd * (1.0 - c)
        uz = sz * c + cz * sn + kz * kd * (1.0 - c)
    return -f * ux, -f * uy, -f * uz, 0.0, 0.0, 0.0


class SolarPressure(System):
    """Cannonball solar radiation pressure on every probe (module docstring).

    Args:
        area: cross-section A [m²]; cr: reflectivity C_R; pressure: P [N/m²];
        sun: direction to the Sun in the inertial frame (normalised here).

    The frame the force is expressed in turns at the world's ``RotatingFrame`` rate (the target's
    in a deployment), read when the pipeline links the term.
    """

    phase = Phase.DERIVATIVE

    def __init__(self, *, area: float, cr: float = 1.3, pressure: float = P_1AU, sun=(1.0, 0.0, 0.0)):
        s = np.asarray(sun, float)
        if s.shape != (3,) or not np.linalg.norm(s) > 0:
            raise InputError("SolarPressure.sun", sun, "must be a non-zero 3-vector (inertial frame)")
        for name, v in (("area", area), ("cr", cr), ("pressure", pressure)):
            if not (math.isfinite(v) and v >= 0):
                raise InputError(f"SolarPressure.{name}", v, "must be a finite number >= 0")
        self.sun = s / np.linalg.norm(s)
        self.params = dict(pressure=float(pressure), cr=float(cr), area=float(area))

    def term(self, world) -> Term:
        sx, sy, sz = self.sun
        frame = world.resource(RotatingFrame, None) if world is not None else None
        ox, oy, oz = (float(v) for v in frame.rate) if frame is not None else (0.0, 0.0, 0.0)
        return Term("solar_pressure", srp_force,
                    params=dict(self.params, sx=sx, sy=sy, sz=sz, ox=ox, oy=oy, oz=oz))


def build(*, area: float = 0.06, cr: float = 1.3, exaggerate: float = 1.0, sun_longitude: float = 0.0,
          period_h: float = 7.6, samples_spread: bool = True):
    """A 10 kg box probe released 40 m above a spinning-top body, pushed by sunlight.

    ``exaggerate`` multiplies the solar pressure (1: the real thing at 1 au).
    """
    body = small_body("spinning-top", radii=(250, 250, 220), gm=30.0, period_h=period_h, gravity="point_mass",
                      resolution=48)
    probe = box_probe((0.3, 0.28, 0.2), mass=10.0, level=0)
    release = release_above(body, latitude=-22.0, longitude=0.0, altitude=40.0,
                            position_sigma3=2.0 if samples_spread else 0.0)
    scene = deployment("deploy-srp", body, probe, release, restitution=0.5, friction=0.6,
                       description="box probe pushed by solar radiation pressure (a user force)")
    lon = math.radians(float(sun_longitude))
    scene.world.add_system(SolarPressure(area=area, cr=cr, pressure=P_1AU * float(exaggerate),
                                         sun=(math.cos(lon), math.sin(lon), 0.0)))
    return scene
