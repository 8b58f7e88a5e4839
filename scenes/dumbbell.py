"""A two-body dumbbell in a circular low Earth orbit (seed 001: multibody vehicles in orbit, each
body under its own gravity): the in-plane pitch libration of a gravity-gradient-stabilised body.

Two equal spheres (mass ``mass``, radius ``radius``) are the two links of one tree: link 0 is
jointed to the inertial frame by a free joint, link 1 to link 0 by a fixed joint ``length`` along
link 0's x axis. The system CoM starts on a circular orbit of altitude ``altitude`` in the
inertial x-y plane (radius r, mean motion n = sqrt(μ/r³)); the dumbbell axis lies in the orbit plane
at ``pitch0`` [rad] from the local vertical and turns with the orbit (rate n about z), so the
pitch angle θ (axis vs. radial, in the orbit plane) starts at rest at ``pitch0``.

Each link feels the point-mass gravity of the Earth at its own CoM (and its own
gravity-gradient torque, zero for a sphere): the torque that makes the dumbbell librate is the
difference of the two spheres' gravity, nothing is linearised. Closed form (small amplitude,
circular orbit; e.g. P. C. Hughes, *Spacecraft Attitude Dynamics*, Wiley, 1986, §9.3): with A the
moment of inertia about the dumbbell axis and C = B the transverse moment about the system CoM,
``C θ̈ = −3 n² (C − A) sin θ cos θ``, so θ oscillates at

    ω_lib = n sqrt(3 (C − A) / C)     (→ sqrt(3) n for point masses)

(:func:`libration_frequency`). Finite size corrections are O(length / r) ~ 1e-6 and the
amplitude correction O(pitch0²).

A point of interest on the far sphere's surface, on the dumbbell axis, records its acceleration
minus the dumbbell's gravity at its CoM (seed 001's NonGravAccels): for the dumbbell at rest in
the orbiting frame, the centripetal ``n² (length/2 + radius)`` ≈ 1.4e-5 m/s² towards the Earth.

Scene parameters (keyword-only): ``altitude`` [m] (400 km), ``mu`` [m³/s²] (Earth, 3.986004418e14),
``earth_radius`` [m] (6378137), ``mass`` [kg] (500 per sphere), ``radius`` [m] (0.5), ``length``
[m] (20, centre to centre), ``pitch0`` [rad] (0.05), ``dt`` [s] (5), ``t_end`` [s] (two libration
periods), ``record_every`` [frames] (1), ``substeps`` (1), ``method`` (``"rk4"``; or ``"euler"``,
``"kuo_nguyen"``) and ``gravity`` (``"full"``; or ``"differential"``, ``"linearized"``) of
:class:`systems.multibody.dynamics.MultibodyDynamics`.
"""

from __future__ import annotations

import math

import numpy as np

from components.gravity import PointMass
from components.multibody import PointOfInterest, spawn_tree, tree_spec
from ecs import InputError, Scene, World
from scenes._common import positive
from systems.multibody.dynamics import MultibodyDynamics

DESCRIPTION = "two-sphere dumbbell in a circular LEO: pitch libration at n sqrt(3 (C - A)/C) (seed 001)"

MU_EARTH = 3.986004418e14      # m³/s², EGM96/WGS 84 GM
R_EARTH = 6378137.0            # m, WGS 84 equatorial radius


def moments(*, mass: float, radius: float, length: float) -> tuple[float, float]:
    """(A, C): the dumbbell's moments of inertia about its axis and about a transverse axis
    through the system CoM [kg m²] (two uniform spheres, centres ``length`` apart)."""
    i_s = 0.4 * mass * radius * radius
    return 2.0 * i_s, 2.0 * i_s + 2.0 * mass * (0.5 * length) ** 2


def libration_frequency(*, mu: float, r: float, mass: float, radius: float, length: float) -> float:
    """Small-amplitude in-plane pitch libration frequency n sqrt(3 (C − A)/C) [rad/s]."""
    A, C = moments(mass=mass, radius=radius, length=length)
    return math.sqrt(mu / r ** 3) * math.sqrt(3.0 * (C - A) / C)


def build(*, altitude: float = 400e3, mu: float = MU_EARTH, earth_radius: float = R_EARTH, mass: float = 500.0,
          radius: float = 0.5, length: float = 20.0, pitch0: float = 0.05, dt: float = 5.0,
          t_end: float | None = None, record_every: int | None = 1, substeps: int = 1, method: str = "rk4",
          gravity: str = "full") -> Scene:
    """The dumbbell scene (module docstring)."""
    for name, v, unit in (("altitude", altitude, "m"), ("mu", mu, "m^3/s^2"), ("earth_radius", earth_radius, "m"),
                          ("mass", mass, "kg"), ("radius", radius, "m"), ("length", length, "m"), ("dt", dt, "s")):
        positive(name, v, unit)
    if not (math.isfinite(pitch0) and abs(pitch0) < 0.5 * math.pi):
        raise InputError("pitch0", pitch0, "must be a finite angle with |pitch0| < pi/2 [rad]")
    if not length > 2.0 * radius:
        raise InputError("length", length, f"must exceed the sphere diameter 2 * radius = {2 * radius} [m]")
    r = earth_radius + altitude
    n = math.sqrt(mu / r ** 3)
    w_lib = libration_frequency(mu=mu, r=r, mass=mass, radius=radius, length=length)
    if t_end is None:
        t_end = 2.0 * (2.0 * math.pi / w_lib)
    # system CoM on the circular orbit, dumbbell axis at pitch0 from the radial direction
    axis = np.array([math.cos(pitch0), math.sin(pitch0), 0.0])
    com = np.array([r, 0.0, 0.0])
    v_com = np.array([0.0, math.sqrt(mu / r), 0.0])
    w = np.array([0.0, 0.0, n])
    p0 = com - 0.5 * length * axis                       # link 0's origin (its sphere centre)
    v0 = v_com + np.cross(w, p0 - com)
    q = np.zeros((2, 7))
    q[0, :3] = p0
    q[0, 3:] = (math.cos(0.5 * pitch0), 0.0, 0.0, math.sin(0.5 * pitch0))
    qd = np.zeros((2, 6))
    qd[0, :3] = v0
    qd[0, 3:] = w                                         # body rate (about z: body z = orbit normal)
    i_s = 0.4 * mass * radius * radius
    spec = tree_spec(parents=[-1, 0], kinds=["free", "fixed"], mass=[mass, mass], inertia=[[i_s] * 3] * 2,
                     offset=[[0.0, 0.0, 0.0], [length, 0.0, 0.0]], q=q, qd=qd, field="dumbbell")
    world = World("dumbbell")
    world.add_resource(PointMass(mu=mu))
    links = spawn_tree(world, spec, name="dumbbell")
    # an accelerometer on the far sphere's surface, on the dumbbell axis (seed 001 NonGravAccels)
    world.spawn(PointOfInterest(link=links[1], offset=(radius, 0.0, 0.0)), name="dumbbell.sensor")
    world.add_system(MultibodyDynamics(method, substeps=substeps, gravity=gravity))
    params = dict(altitude=altitude, mu=mu, earth_radius=earth_radius, mass=mass, radius=radius, length=length,
                  pitch0=pitch0, dt=dt, t_end=t_end, record_every=record_every, substeps=substeps, method=method,
                  gravity=gravity)
    cols = ("link_com_position", "link_attitude", "joint_q", "joint_qd", "poi_position", "poi_nongrav_acceleration")
    return Scene(name="dumbbell", description=DESCRIPTION, world=world, t_end=float(t_end), dt=float(dt),
                 record_every=record_every, record=cols, final=cols, params=params)


def pitch_angle(com_positions: np.ndarray) -> np.ndarray:
    """In-plane pitch θ [rad] of the dumbbell axis from the local vertical, from the two links'
    CoM positions ``[..., 2, 3]`` (inertial): angle from r̂ (system CoM direction) to the axis
    (link 0 → link 1), positive about the orbit normal +z."""
    x = np.asarray(com_positions, float)
    a = x[..., 1, :] - x[..., 0, :]
    c = 0.5 * (x[..., 0, :] + x[..., 1, :])
    s = np.cross(c, a)[..., 2]
    return np.arctan2(s, np.sum(c * a, axis=-1))
