"""An ISS-like station with a 7-joint arm holding a payload, in low Earth orbit (seed 001: a
multibody vehicle in orbit; its V&V compares the single rigid body, the locked chain and the free
chain of one vehicle).

The vehicle is one articulated tree of 10 links:

* **link 0, the station** on a free joint: 400,000 kg, CoM at (−3, −1.5, 4) m from its structural
  origin, inertia about the CoM in structural axes
  ``[[1.02e8, −6.96e6, −5.48e6], [−6.96e6, 0.91e8, 5.90e5], [−5.48e6, 5.90e5, 1.64e8]]`` kg m²:
  the ISS mass properties of NASA JEOD's dynamics-comparison verification simulation (JEOD v5,
  ``verif/SIM_dyncomp/Modified_data/mass.py``, ``set_mass_iss``; docs/references.md). The
  structural axes are held in LVLH: x along the velocity, z to nadir.
* **links 1–8, the arm**, SSRMS (Canadarm2) booms B1–B8: B1 fixed to the station at ``arm_base``
  (structural axes, rotated 180° about x as the arm's base frame), then the seven revolute joints
  shoulder roll (x), shoulder yaw (z), shoulder pitch (y), elbow pitch (y), wrist pitch (y), wrist
  yaw (z), wrist roll (x), with the link masses, inertias and joint offsets of Nguyen & Hughes
  (1994, Fig. 13) as transcribed in the SSRMS model of the TraceableRobotModels collection
  (docs/references.md: a secondary transcription; the link CoMs sit at the link frames, as
  there). The booms B4 and B5 are 7.11 m; the arm is 16.9 m from B1 to the tip; its links sum to
  1,505 kg (the Canadian Space Agency gives 1,497 kg).
* **link 9, the payload**, a uniform cylinder grappled at one end, fixed to B8's tip 1.3589 m out
  along its x axis: by default 16,500 kg, 9.8 m long, 4.4 m across (the size of JAXA's HTV cargo
  vehicle at berthing; ``payload_mass=0`` leaves it off).

Configurations (``config``), seed 001's three:

* ``"free"``: every arm joint free; the three pitch joints run a bang-bang slew (torques
  ``slew_torque · (+1, −2, +1)`` N m for ``slew_time / 2``, then reversed; zero after), each sample
  with its own command scale (3σ ``command_spread``, relative) and its own initial joint angles
  (3σ ``joint_spread`` [deg] about the pose ``shoulder_pitch``, ``elbow_pitch``, ``wrist_pitch``);
* ``"locked"``: the same tree with every arm joint locked (the slew commands are not applied: a
  locked joint takes no torque, and a command that does nothing is not added);
* ``"rigid"``: one free link with the locked chain's composite mass properties
  (:func:`systems.multibody.dynamics.rigid_equivalent`), same CoM state, same cross-section.

Orbit: circular, ``altitude`` (420 km) and ``inclination`` (51.6°), the system CoM on the inertial
x axis at t = 0, the station turning with LVLH. Environment (``environment``): ``"full"`` — EGM2008
to degree and order 20 in the Earth frame: its rotation angle from ``epoch`` (IERS 2010 eq 5.15, at
its own rate) about the pole as IAU 2006/2000A precession-nutation moves it
(:class:`components.environment.CelestialPole`, through pyerfa; polar motion left out), each link's gravity-gradient torque, DE421 Sun and Moon, Vallado's
exponential atmosphere turning with the Earth and cannonball solar radiation pressure with the
cylindrical shadow, each link as if independent (seed 001) — needs the ``orbit`` extra;
``"gravity"`` — the same Earth field (EGM2008 d20, turning, precessing), nothing else; or
``"central"`` — the point-mass Earth only. Cross-sections (``Cannonball``): the station
``station_area`` (1,400 m², the reference area of the ISS model of NASA's 6-DoF check cases,
NASA/TM-2015-218675), each boom 0.35 m × its length, the payload its length × diameter.

Points of interest: ``station.imu`` at the station's CoM (its non-gravitational acceleration is what
an accelerometer there reads: drag, radiation pressure, the arm's reaction) and ``arm.tip`` at the
end effector. ``station.centre`` (:class:`components.multibody.TreeCentre`) records the system CoM,
its velocity, the angular momentum about it and the kinetic energy.

Scene parameters (keyword-only): ``config`` (``"free"``), ``environment`` (``"full"``),
``altitude`` [m], ``inclination`` [deg], ``epoch`` (TDB Julian date, 2460676.5 = 2025-01-01; the
Earth's rotation angle takes it as UT1, 69 s apart), ``t_end`` [s] (one orbit), ``dt`` [s] (10),
``substeps`` (5), ``record_every`` [frames] (6), ``method`` (``"rk4"``), ``shoulder_pitch``,
``elbow_pitch``, ``wrist_pitch`` [deg] (30, −60, 30), ``joint_spread`` [deg, 3σ] (1),
``slew_torque`` [N m] (20), ``slew_time`` [s] (600), ``command_spread`` (0.1), ``payload_mass``
[kg], ``payload_length`` [m], ``payload_radius`` [m], ``station_area`` [m²], ``arm_base`` — the
B1 mount point as ``"x,y,z"`` [m], structural axes (``"0,4,-3"``: on the truss, zenith side).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from components.environment import ERA_RATE, Cannonball, CelestialPole, earth_rotation_angle
from components.ephemeris import Ephemeris
from components.gravity import PointMass, SphericalHarmonics
from components.loads import LoadSeries
from components.multibody import NV, REVOLUTE, JointCommand, PointOfInterest, TreeCentre, spawn_tree, tree_spec
from ecs import InputError, Scene, World
from ecs.attitude import dcm_to_quat
from ecs.scene import Dispersion, normal
from scenes._common import check_spread, positive
from scenes.assets import EGM2008_GFC
from scenes.dumbbell import MU_EARTH, R_EARTH
from systems.forces.drag import AtmosphericDrag
from systems.gravity.fields import GravitySystem
from systems.multibody.dynamics import JointCommands, MultibodyDynamics, rigid_equivalent, tree_poses
from systems.multibody.spatial import new_scratch
from systems.multibody.algorithms import crba
from systems.forces.solar_pressure import SolarRadiationPressure
from systems.gravity.third_body import ThirdBodyGravity

DESCRIPTION = "ISS-like station, 7-joint arm and payload in LEO: rigid, locked or free chain (seed 001)"

#: ``tumble scenes station``: each parameter's unit and meaning.
PARAMETERS = {
    "config": "free (servo-held joints, a slew), locked (every arm joint locked) or rigid (one body)",
    "environment": "full (EGM2008 d20, Sun/Moon, drag, SRP; orbit extra), gravity (the EGM2008 d20 Earth only) "
                   "or central (point-mass Earth)",
    "altitude": "[m] of the circular orbit", "inclination": "[deg] of the orbit",
    "epoch": "[TDB Julian date] of t = 0 (Earth rotation angle, ephemeris)",
    "t_end": "[s] (default one orbit)", "dt": "[s] frame", "substeps": "RK steps per frame",
    "record_every": "[frames] between trajectory records", "method": "rk4, euler or kuo_nguyen",
    "shoulder_pitch": "[deg] start pose", "elbow_pitch": "[deg] start pose", "wrist_pitch": "[deg] start pose",
    "joint_spread": "[deg] 3-sigma of every arm joint's start angle (free only; 1)",
    "servo_period": "[s] natural period of the joint servos (free only; 60)",
    "slew_torque": "[N m] bang-bang torque scale on the pitch joints (free only; 20)",
    "slew_time": "[s] slew duration (free only; 600)",
    "command_spread": "relative 3-sigma of each slew command (free only; 0.1)", "payload_mass": "[kg] (0: no payload)",
    "payload_length": "[m]", "payload_radius": "[m]", "station_area": "[m^2] station cross-section",
    "arm_base": "[m] 'x,y,z' of the arm's base on the station, structural axes",
}

CONFIGS = ("free", "locked", "rigid")
#: The free arm's parameters when not given (only config="free" takes them).
#: the station's cross-section for drag and solar pressure [m²] (NASA's 6-DoF check cases' ISS model)
STATION_AREA = 1400.0
FREE_ARM_DEFAULTS = {"joint_spread": 1.0, "servo_period": 60.0, "slew_torque": 20.0, "slew_time": 600.0,
                     "command_spread": 0.1}
ENVIRONMENTS = ("full", "gravity", "central")

#: JEOD v5 SIM_dyncomp ``set_mass_iss``: mass [kg], CoM in structural axes [m], inertia about it [kg m²].
STATION_MASS = 400000.0
STATION_COM = (-3.0, -1.5, 4.0)
STATION_INERTIA = ((1.02e8, -6.96e6, -5.48e6), (-6.96e6, 0.91e8, 5.90e5), (-5.48e6, 5.90e5, 1.64e8))

#: SSRMS booms B1..B8 (Nguyen & Hughes 1994 as transcribed): mass [kg], inertia [kg m²] about the
#: link frame (CoM there), the joint that connects each to its parent (kind, axis, offset [m] in
#: the parent link's frame) and the joint names.
ARM_MASS = (243.66, 105.98, 105.98, 314.88, 279.2, 105.98, 105.98, 243.66)
ARM_INERTIA = (((9.336, 0, 0), (0, 44.413, 0), (0, 0, 44.413)),
               ((12.19, 0, 0), (0, 12.13, 0), (0, 0, 3.061)),
               ((8.088, 0, 0), (0, 3.061, 0), (0, 0, 8.446)),
               ((15.41, 49.52, 0), (49.52, 2094.71, 0), (0, 0, 2103.19)),
               ((9.522, -39.95, 0), (-39.95, 1966.28, 0), (0, 0, 1966.28)),
               ((8.305, 0, 0), (0, 3.061, 0), (0, 0, 8.0386)),
               ((12.13, 0, 0), (0, 12.13, 0), (0, 0, 3.061)),
               ((9.336, 0, 0), (0, 44.41, 0), (0, 0, 44.41)))
ARM_JOINTS = ("shoulder_roll", "shoulder_yaw", "shoulder_pitch", "elbow_pitch", "wrist_pitch", "wrist_yaw", "wrist_roll")
ARM_AXIS = ((1, 0, 0), (0, 0, 1), (0, 1, 0), (0, 1, 0), (0, 1, 0), (0, 0, 1), (1, 0, 0))
ARM_OFFSET = ((1.3589, 0, 0), (0, 0, 0.7026), (0, -0.5692, 0), (7.11, -0.475, 0), (7.11, 0, 0), (0, -0.5692, 0),
              (0, 0, -0.7026))
#: The end effector on B8 [m], B8 axes; each boom's length for its cross-section [m] (0.35 m across).
ARM_TIP = (1.3589, 0.0, 0.0)
ARM_LENGTH = (1.3589, 0.7026, 0.5692, 7.11, 7.11, 0.5692, 0.7026, 1.3589)
ARM_DIAMETER = 0.35
#: The slew's torque pattern on the three pitch joints (shoulder, elbow, wrist), times slew_torque.
SLEW_PATTERN = {"shoulder_pitch": 1.0, "elbow_pitch": -2.0, "wrist_pitch": 1.0}


def _vector3(name: str, text) -> np.ndarray:
    try:
        v = np.array([float(x) for x in str(text).split(",")]) if isinstance(text, str) else np.asarray(text, float)
    except ValueError:
        v = np.zeros(0)
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise InputError(name, text, "must be three finite numbers 'x,y,z' [m]")
    return v


def arm_joint_names(n: int) -> list | None:
    """Joint names of :func:`station_tree`'s links: the arm's seven revolute joints (links 2–8) by
    :data:`ARM_JOINTS`, the others after their link; ``None`` for a tree that is not the chain (the
    rigid equivalent)."""
    if n < 2 + len(ARM_JOINTS):
        return None
    return [None, None, *ARM_JOINTS] + [None] * (n - 2 - len(ARM_JOINTS))


def arm_pose(shoulder_pitch: float, elbow_pitch: float, wrist_pitch: float) -> list[float]:
    """The seven arm joint angles [deg] of a start pose (roll and yaw joints at 0), each checked
    against the SSRMS's ±270° range."""
    pose = [0.0, 0.0, shoulder_pitch, elbow_pitch, wrist_pitch, 0.0, 0.0]
    for name, v in zip(ARM_JOINTS, pose):
        if not (math.isfinite(v) and abs(v) <= 270.0):
            raise InputError(name, v, "must be a joint angle within the SSRMS's ±270 deg")
    return pose


#: The default payload's cylinder [m]: JAXA's HTV cargo vehicle, 9.8 m long, 4.4 m across.
PAYLOAD_LENGTH = 9.8
PAYLOAD_RADIUS = 2.2


def station_tree(*, pose_deg=(0.0, 0.0, 30.0, -60.0, 30.0, 0.0, 0.0), payload_mass: float = 16500.0,
                 payload_length: float = PAYLOAD_LENGTH, payload_radius: float = PAYLOAD_RADIUS, arm_base=(0.0, 4.0, -3.0),
                 locked: bool = False):
    """The station–arm–payload tree at rest in its structural frame (root at the origin, identity
    attitude, zero rates): ``(spec, names, areas)``."""
    base = np.asarray(arm_base, float)
    names = ["station"] + [f"arm.B{k + 1}" for k in range(8)]
    kinds = ["free", "fixed"] + ["revolute"] * 7
    mass = [STATION_MASS] + list(ARM_MASS)
    inertia = [STATION_INERTIA] + list(ARM_INERTIA)
    com = [STATION_COM] + [(0.0, 0.0, 0.0)] * 8
    axis = [(0, 0, 1), (0, 0, 1)] + list(ARM_AXIS)
    offset = [(0, 0, 0), tuple(base)] + list(ARM_OFFSET)
    rotation = [(1, 0, 0, 0), (0, 1, 0, 0)] + [(1, 0, 0, 0)] * 7     # B1: 180° about x (the arm's base frame)
    areas = [0.0] + [ARM_DIAMETER * L for L in ARM_LENGTH]
    q = np.zeros((9, 7))
    q[0, 3] = 1.0
    q[2:9, 0] = np.radians(pose_deg)
    if payload_mass > 0.0:
        m, L, R = payload_mass, payload_length, payload_radius
        names.append("payload")
        kinds.append("fixed")
        mass.append(m)
        it = m * (3 * R * R + L * L) / 12.0
        inertia.append(((0.5 * m * R * R, 0, 0), (0, it, 0), (0, 0, it)))
        com.append((0.5 * L, 0.0, 0.0))
        axis.append((0, 0, 1))
        offset.append(ARM_TIP)
        rotation.append((1, 0, 0, 0))
        areas.append(2.0 * R * L)
        q = np.vstack([q, np.zeros(7)])
    n = len(names)
    parents = [-1] + list(range(n - 1))
    lock = [False, False] + [bool(locked)] * 7 + [False] * (n - 9)
    spec = tree_spec(parents=parents, kinds=kinds, mass=mass, inertia=inertia, com=com, axis=axis, offset=offset,
                     rotation=rotation, q=q, locked=lock, field="station")
    return spec, names, np.array(areas)


def on_circular_orbit(spec, *, altitude: float, inclination: float):
    """``spec`` moved so that its system CoM is on a circular orbit (inertial x axis, inclination
    [rad]) with the root's structural axes in LVLH (x along the velocity, z to nadir) turning at
    the orbital rate. Returns the new spec."""
    r = R_EARTH + altitude
    n = math.sqrt(MU_EARTH / r ** 3)
    rh = np.array([1.0, 0.0, 0.0])
    vh = np.array([0.0, math.cos(inclination), math.sin(inclination)])
    C = np.column_stack([vh, -np.cross(rh, vh), -rh])           # structural -> inertial
    q = spec.q.copy()
    q[0, 3:7] = dcm_to_quat(C)
    qd = spec.qd.copy()
    qd[0, 3:6] = (0.0, -n, 0.0)                                  # ω = n ĥ = −n y_body
    s = dataclasses.replace(spec, q=q, qd=qd)
    _, _, cp = tree_poses(s)
    c = (s.mass[:, None] * cp).sum(0) / s.mass.sum()
    q[0, :3] = r * rh - c                                        # root origin so that the CoM sits at r x̂
    w = C @ qd[0, 3:6]
    qd[0, :3] = math.sqrt(MU_EARTH / r) * vh + np.cross(w, q[0, :3] - r * rh)
    return dataclasses.replace(spec, q=q, qd=qd)


def joint_servo(spec, *, period: float, damping_ratio: float = 0.7):
    """``spec`` with every unlocked revolute joint held at its present angle by a spring-damper
    servo (:class:`components.multibody.JointSpring`: rest = the present angle) of natural period
    ``period`` [s] and the given damping ratio, scaled to the inertia the joint drives while every
    other degree of freedom is free, ``I_j = 1 / (H⁻¹)_jj`` with H the joint-space mass matrix at the
    present pose (composite-rigid-body algorithm, :data:`systems.multibody.algorithms.crba`; the free
    root included): ``k = I_j ω²``, ``c = 2 ζ I_j ω``, ``ω = 2π / period``. The coupled modes then
    lie within a few times ω (checked for the station's default pose: 0.04–0.18 rad/s at
    ω = 0.052)."""
    n = spec.n
    nv = [0 if spec.locked[j] else NV[int(spec.kind[j])] for j in range(n)]
    N = sum(nv)
    H = np.zeros((N, N))
    M, V = new_scratch(n)
    crba.cpu(0, n, spec.record(), H, M, V)
    inv_diag = np.diag(np.linalg.inv(H))
    w = 2.0 * math.pi / period
    k, c, rest = spec.stiffness.copy(), spec.damping.copy(), spec.rest.copy()
    dof = 0
    for j in range(n):
        if nv[j] == 1 and int(spec.kind[j]) == REVOLUTE:
            inertia = 1.0 / inv_diag[dof]
            k[j], c[j], rest[j] = inertia * w * w, 2.0 * damping_ratio * inertia * w, spec.q[j, 0]
        dof += nv[j]
    return dataclasses.replace(spec, stiffness=k, damping=c, rest=rest)


#: t = 0 of the orbital scenes [TDB Julian date] (2025-01-01 00:00 TDB) when not given
EPOCH = 2460676.5


def check_epoch(epoch: float | None, environment: str) -> float:
    """A scene's ``epoch``: :data:`EPOCH` when not given; refused with ``environment='central'``,
    the point-mass Earth, which has no ephemeris or pole for it to date."""
    if epoch is not None and environment == "central":
        raise InputError("epoch", epoch, "does nothing with environment='central' (a point-mass Earth has no "
                                         "ephemeris or pole to date): leave it out, or use environment='full'")
    return EPOCH if epoch is None else float(epoch)


def _environment(world: World, environment: str, *, epoch: float, t_end: float) -> None:
    if environment == "central":
        world.add_resource(PointMass(mu=MU_EARTH))
        return
    try:
        pole = CelestialPole.iau2006(epoch, t_end)
        eph = Ephemeris.de421(epoch, t_end) if environment == "full" else None
    except InputError as exc:
        raise InputError("environment", environment,
                         f"needs the orbit extra ({exc}); or run with -p environment=central") from None
    earth = SphericalHarmonics.from_gfc(EGM2008_GFC, degree=20)
    world.add_system(GravitySystem(earth, spin=ERA_RATE, angle0=earth_rotation_angle(epoch), gradient_torque=True,
                                   pole=pole))
    if eph is None:
        return
    world.add_resource(eph)
    for s in (ThirdBodyGravity(), AtmosphericDrag(), SolarRadiationPressure()):
        world.add_system(s)


def build(*, config: str = "free", environment: str = "full", altitude: float = 420e3, inclination: float = 51.6,
          epoch: float | None = None, t_end: float | None = None, dt: float = 10.0, substeps: int = 5,
          record_every: int | None = 6, method: str = "rk4", shoulder_pitch: float = 30.0, elbow_pitch: float = -60.0,
          wrist_pitch: float = 30.0, joint_spread: float | None = None, servo_period: float | None = None,
          slew_torque: float | None = None, slew_time: float | None = None,
          command_spread: float | None = None, payload_mass: float = 16500.0, payload_length: float | None = None,
          payload_radius: float | None = None, station_area: float | None = None, arm_base: str = "0,4,-3") -> Scene:
    """The station scene (module docstring)."""
    if payload_mass == 0.0:                        # no payload: its size would do nothing
        for name, v in (("payload_length", payload_length), ("payload_radius", payload_radius)):
            if v is not None:
                raise InputError(name, v, "does nothing with payload_mass=0 (no payload): leave it out, or give a "
                                          "payload_mass > 0")
    payload_length = PAYLOAD_LENGTH if payload_length is None else payload_length
    payload_radius = PAYLOAD_RADIUS if payload_radius is None else payload_radius
    if config not in CONFIGS:
        raise InputError("config", config, f"must be one of {list(CONFIGS)}")
    arm = dict(joint_spread=joint_spread, servo_period=servo_period, slew_torque=slew_torque, slew_time=slew_time,
               command_spread=command_spread)
    for name, v in arm.items():                  # the free arm's parameters: nothing else reads them
        if v is not None and config != "free":
            raise InputError(name, v, f"does nothing with config={config!r} (the arm's joints are not free): "
                                      f"leave it out, or use config='free'")
        if v is None:
            arm[name] = FREE_ARM_DEFAULTS[name]
    if config == "free" and float(arm["slew_torque"]) == 0.0:
        for name, v in (("slew_time", slew_time), ("command_spread", command_spread)):   # they shape the slew
            if v is not None:
                raise InputError(name, v, "does nothing with slew_torque=0 (no slew is commanded): leave it out, "
                                          "or give a slew_torque > 0")
    joint_spread, servo_period, slew_torque, slew_time, command_spread = (
        float(arm[k]) for k in ("joint_spread", "servo_period", "slew_torque", "slew_time", "command_spread"))
    if environment not in ENVIRONMENTS:
        raise InputError("environment", environment, f"must be one of {list(ENVIRONMENTS)}")
    epoch = check_epoch(epoch, environment)
    if station_area is not None and environment != "full":       # only drag and radiation pressure read it
        raise InputError("station_area", station_area, f"does nothing with environment={environment!r} (only the "
                                                       "'full' environment's drag and solar pressure use it): leave "
                                                       "it out, or use environment='full'")
    station_area = STATION_AREA if station_area is None else station_area
    for name, v, unit in (("altitude", altitude, "m"), ("dt", dt, "s"), ("payload_length", payload_length, "m"),
                          ("payload_radius", payload_radius, "m"), ("slew_time", slew_time, "s"),
                          ("servo_period", servo_period, "s")):
        positive(name, v, unit)
    if not (math.isfinite(inclination) and -180.0 <= inclination <= 180.0):
        raise InputError("inclination", inclination, "must be an angle in [-180, 180] deg")
    for name, v in (("payload_mass", payload_mass), ("station_area", station_area), ("slew_torque", slew_torque)):
        if not (math.isfinite(v) and v >= 0.0):
            raise InputError(name, v, "must be a finite number >= 0")
    pose = arm_pose(shoulder_pitch, elbow_pitch, wrist_pitch)
    j_spread = check_spread("joint_spread", joint_spread)
    c_spread = check_spread("command_spread", command_spread)
    base = _vector3("arm_base", arm_base)
    r = R_EARTH + altitude
    period = 2.0 * math.pi * math.sqrt(r ** 3 / MU_EARTH)
    if t_end is None:
        t_end = period
    positive("t_end", t_end, "s")

    chain, names, areas = station_tree(pose_deg=pose, payload_mass=payload_mass, payload_length=payload_length,
                                       payload_radius=payload_radius, arm_base=base, locked=config != "free")
    chain = on_circular_orbit(chain, altitude=altitude, inclination=math.radians(inclination))
    if config == "free":
        chain = joint_servo(chain, period=servo_period)
    areas[0] = station_area
    # the points of interest in the chain: the station CoM (link 0) and the end effector (link 8)
    imu_link, imu_at = 0, np.array(STATION_COM)
    tip_link, tip_at = 8, np.array(ARM_TIP)
    if config == "rigid":
        spec, info = rigid_equivalent(chain, field="station")
        R0, c = info["to_body"]
        Rw, origin, _ = tree_poses(chain)
        imu_at = R0.T @ (origin[0] + Rw[0] @ imu_at - c)
        tip_at = R0.T @ (origin[8] + Rw[8] @ tip_at - c)
        imu_link = tip_link = 0
        names, areas = ["station"], np.array([areas.sum()])
    else:
        spec = chain

    world = World("station")
    _environment(world, environment, epoch=epoch, t_end=float(t_end))
    links = spawn_tree(world, spec, names=names, joint_names=arm_joint_names(spec.n),
                       extra=lambda k: (Cannonball(area=float(areas[k])),))
    world.spawn(PointOfInterest(link=links[imu_link], offset=tuple(imu_at)), name="station.imu")
    world.spawn(PointOfInterest(link=links[tip_link], offset=tuple(tip_at)), name="arm.tip")
    world.spawn(TreeCentre(link=links[0]), name="station.centre")

    dispersions = []
    if config == "free":
        if slew_torque > 0.0:
            half, eps = 0.5 * slew_time, 1e-6 * slew_time      # knots: the series is linear between them
            times = np.array([0.0, half - eps, half, slew_time - eps, slew_time])
            values = np.zeros((5, 3))
            values[:2, 0], values[2:4, 0] = slew_torque, -slew_torque
            series = LoadSeries()
            k = series.add(times, values)
            world.add_resource(series)
            for jn, w in SLEW_PATTERN.items():
                j = ARM_JOINTS.index(jn) + 2
                e = world.spawn(JointCommand(joint=links[j], series=k, scale=w), name=f"arm.{jn}.command")
                if c_spread > 0.0:
                    dispersions.append(Dispersion(e, "command_scale", normal(w, abs(w) * c_spread),
                                                  name=f"command_scale.{jn}"))
            world.add_system(JointCommands())
        if j_spread > 0.0:
            for j, jn in enumerate(ARM_JOINTS):
                q0 = spec.q[j + 2].copy()
                sig = np.zeros(7)
                sig[0] = math.radians(j_spread)
                dispersions.append(Dispersion(links[j + 2], "joint_q", normal(q0, sig), name=f"joint_q.{jn}"))
    world.add_system(MultibodyDynamics(method, substeps=substeps))

    params = dict(config=config, environment=environment, altitude=altitude, inclination=inclination, epoch=epoch,
                  t_end=float(t_end), dt=dt, substeps=substeps, record_every=record_every, method=method,
                  shoulder_pitch=shoulder_pitch, elbow_pitch=elbow_pitch, wrist_pitch=wrist_pitch, payload_mass=payload_mass, payload_length=payload_length, payload_radius=payload_radius,
                  station_area=station_area, arm_base=",".join(f"{x:g}" for x in base))
    if config == "free":
        params.update(joint_spread=j_spread, servo_period=servo_period, slew_torque=slew_torque, slew_time=slew_time,
                      command_spread=c_spread)
    record = ("joint_q", "joint_qd", "link_position", "link_attitude", "poi_position", "poi_nongrav_acceleration",
              "centre_position", "centre_velocity")
    final = record + ("link_com_position", "centre_angular_momentum", "centre_kinetic_energy", "centre_mass")
    return Scene(name="station", description=DESCRIPTION, world=world, t_end=float(t_end), dt=float(dt),
                 record_every=record_every, record=record, final=final, dispersions=dispersions, params=params)
