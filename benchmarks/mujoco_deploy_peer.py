"""MuJoCo peer of ``deploy-cube``: the same cube landings in ``mujoco.rollout``, checked for sameness
and timed against tumble (issue 37: ">= 300x MuJoCo on the same landing").

``python -m benchmarks.mujoco_deploy_peer --samples 200`` runs tumble's deploy-cube batch (seed 0,
voxel gravity, no rocks: the batch of ``tumble bench deploy``), lands the same cubes in MuJoCo,
compares the settling-time distributions (two-sample KS test) and times both, interleaved
(~1.5 min on 2 cores at 200 samples). Options select the MuJoCo configuration (``--timeconst``,
``--steps-per-timeconst``, ``--integrator``, ``--damping``, ``--mode``), so the ratio's sensitivity
to them can be measured with the same script.

What is taken from tumble (nothing is re-typed)
-----------------------------------------------
* the scene, ``scenes.registry.load_scene("deploy-cube")``, and the batch's release states by the
  batch rule (sample ``s`` draws the scene's dispersions in declaration order from
  ``default_rng(SeedSequence(seed, spawn_key=(s,)))``: :func:`benchmarks.deploy_reference.sample_states`);
* the probe: its vertices (the cube's 8 corners, edge 0.2154 m), mass and inertia (``ProbeShapes``,
  ``MassProps``), restitution e = 0.5 and friction f = 0.5 (``ProbeContact.terrain_pair``);
* the settle criterion and cap (``DeploySettings``): |v| < ``settle_speed`` (1 mm/s) and |omega| <
  ``settle_rate`` (0.01 rad/s) in contact (a corner within ``contact_gap`` = 0.1 mm of the ground)
  without interruption for ``settle_hold`` (60 s), the settling time being the start of that
  interval; ``t_cap`` (10 h) ends a sample TIMED_OUT;
* the landing itself: tumble's first collision event of each sample (``events/`` of its run: time,
  CoM position, contact point, terrain normal, velocity and angular velocity just before) and the
  release attitude. The cube's inertia is isotropic and it is released without rotation relative to
  the target, so in flight it keeps its release attitude in the target frame (checked every run:
  the event's contact point is the released attitude's corner to ~1e-14 m);
* the site's gravity: the target's field (``systems.gravity.kernels.acceleration``) plus the
  centrifugal ``-Omega x (Omega x r)`` of its spin, at each first-impact point.

The MuJoCo model (constants below, options in brackets)
-------------------------------------------------------
* **Start: the first impact.** MuJoCo has uniform gravity and no rotating frame, so it cannot fly
  the 1,100-1,350 s inverse-square descent from 200 m. Each sample starts with tumble's touching
  corner on the ground and tumble's pre-impact velocities, in a local frame whose z is the terrain
  normal there; MuJoCo's clock starts at tumble's first-impact time. First-impact times therefore
  agree by construction (their KS test is printed but tests nothing about MuJoCo).
* **Ground**: a plane normal to z; gravity ``-g z``, g = the batch median of |g + centrifugal| at
  the first-impact points (9.28e-5 m/s^2; the sites span +/-1.5 %). Dropped: the site's slope (the
  angle between the normal and the effective gravity, median 2.4 deg), Coriolis (2 Omega v reaches
  ~20 % of g in a hop, but Omega is within 10 deg of the normal there, so it turns hops sideways
  and does almost no work) and the body's shape. The shape matters: in tumble the cube travels
  20-140 m (median 73 m) across the curved Itokawa-like body, and those that go far downhill settle
  late (Spearman rho -0.64 between settling time and final altitude). A plane reproduces the median
  settling time but not those tails, and its hops are shorter (the body's surface falls away under a
  long hop): see "Sameness".
* **Cube**: one free body with tumble's mass and inertia carrying a sphere of radius
  :data:`SPHERE_RADIUS` (1 mm) centred on each corner, the plane lowered by that radius, so a corner
  touches exactly where tumble's vertex does (tumble's level-0 cube contacts at its corners only):
  sphere-plane contacts, one point per corner (a box geom would give the same corner points).
* **Contact**: ``condim=3`` (sliding friction; no torsional or rolling friction, tumble has neither
  here), ``friction`` = f, ``cone="elliptic"`` (the exact Coulomb cone, as tumble's),
  ``solver="Newton"``, soft contact ``solref = (timeconst, dampratio)`` with a constant impedance
  ``solimp = (0.99, 0.99, 0.001)``: the normal contact is a linear spring-damper in constraint space
  whose restitution does not depend on depth or speed (0.500 / 0.500 / 0.495 at 12 / 1.2 / 0.12 cm/s).
  ``timeconst`` = :data:`TIMECONST` = 0.2 s [``--timeconst``]: an impact lasts ~0.18 s and sinks ~6 mm
  at 0.12 m/s, short against the landing's hops (minutes) and the cube's rotation (at the
  landing's rates, up to ~0.4 rad/s, it turns < 0.1 rad during an impact). Settling times did not
  change between timeconst 0.05, 0.1 and 0.2 s (implicitfast, dt = timeconst/8, 200 samples:
  medians 2,955 / 3,094 / 2,995 s, pairwise KS p 0.39-0.71); the largest is the cheapest for
  MuJoCo, so it is the default. Larger ones were not tried: an impact would then take a sizable part
  of a rotation.
* **Restitution with friction.** tumble resolves rigid corner impacts with Stronge's energetic e
  and Coulomb friction; MuJoCo's soft contact gives a kinematic restitution set by the damping ratio,
  and the two part energy differently among the cube's motions. The damping ratio
  [``--damping``]: ``tuned`` (default) makes the batch mean of the mechanical energy left
  :data:`CALIBRATION_WINDOW` (10 s) after the first impact (kinetic + m g dz, over the kinetic
  energy before) equal tumble's (tumble: ``energy_after`` of its last collision in that window plus
  the potential change along g_eff; 0.316 at 200 samples); ``nominal`` makes a face-down drop of the
  cube at the batch's median first-impact speed rebound with e = 0.5 at the step used; a number
  forces it. Only MuJoCo's parameters are tuned, never tumble's (tuned 0.272 vs nominal 0.302 at the
  defaults).
* **Integrator and step** [``--integrator``, ``--steps-per-timeconst``]: implicitfast at
  ``dt = timeconst / 8`` (25 ms). The largest step at which settling times stop changing: at
  timeconst 0.1 s, dt = tc/4 / tc/8 / tc/16 / tc/32 gave medians 2,877 / 3,094 / 3,050 / 3,125 s
  (RK4 at tc/16: 3,087 s); tc/4 differs from each of the others (KS p 0.000-0.009), tc/8 agrees with
  the finer ones (p 0.47-0.92). RK4 gives the same distribution (KS p 0.71 against implicitfast at
  tc/8) at 3-4x the cost (four stages per step), so implicitfast is the default.
* **Stepping** [``--mode``, both by default]: ``fixed``: dt for the whole landing, the plain way
  to use MuJoCo. ``adaptive``: ``rollout`` is called in rounds; in each, a sample whose cube provably
  stays clear of the ground for ``FLIGHT_STEPS * dt * 2^k`` s (every corner on its parabola, with
  the centripetal acceleration bounded by |omega|^2 r_bound, or the bounding sphere on the CoM's
  parabola) takes :data:`FLIGHT_STEPS` RK4 steps of ``dt * 2^k`` (the largest such k <=
  :data:`LADDER`); the others take :data:`CHUNK` contact steps at dt. RK4 is exact for a ballistic
  CoM in uniform gravity and MuJoCo's free-joint rotation is the exact exponential for a constant
  angular velocity (isotropic inertia: no torque, no precession), so the jumps change no physics.
  This is what a flat, uniform-gravity model allows and the real scene does not (tumble integrates
  the flights in the real field with error control): the adaptive mode is a lower bound of what
  MuJoCo needs, the fixed mode the plain peer. The settle test sees every step of every call (the
  states come back from ``rollout``); a settled or timed-out sample leaves the batch.
* MuJoCo has nothing like tumble's rest certification (``rest_slide``: a certified rest is held, not
  integrated): it integrates the 60 s hold (2,400 steps at dt). Body sleeping (``mjENBL_SLEEP``) is
  left off: with its default tolerance a cube falling slowly in this gravity sleeps in mid-air.

Sameness (checked every run)
----------------------------
The settling time after the first impact (``probe_settle_time - probe_first_impact_time``) of
tumble's SETTLED samples against MuJoCo's, each mode: two-sample KS test (``scipy.stats.ks_2samp``),
medians and 5-95 %; the same for the first-impact time (equal by construction); and, sample by sample
(before the bouncing turns chaotic), the end of the first hop (first touchdown after >= :data:`HOP_MIN`
s in the air; tumble: the first collision after a bounce that flew that long). When written (200
samples, defaults): settling tumble median 3,074 s (5-95 % 1,438-4,864), MuJoCo adaptive 2,995 s
(2,037-4,492, KS p 0.39), fixed 3,024 s (2,087-4,472, p 0.22); first hop MuJoCo 12 % shorter in
the median (rho 0.60 with tumble's, KS p 0.016). The distributions agree at 0.05 but MuJoCo's is
narrower (no downhill travel on a plane); with many more samples the KS test would tell them apart.

What is timed
-------------
Wall time of the stepping only, both on ``--threads`` (2) threads, in interleaved rounds: tumble
(``World.compile`` + ``World.run`` of the whole batch, as ``tumble bench deploy``: release to
settled), tumble's descent alone (the same batch run to just before the earliest first impact: work
MuJoCo is spared; subtracted for the "landing only" ratio), MuJoCo adaptive and MuJoCo fixed (the
``rollout`` loop over the landings with its numpy bookkeeping; model building, calibration and a
warm-up call excluded; the rollout calls alone are also given). Each side is warmed up untimed:
tumble by a 2-sample batch (numba compilation / cache loading) and then the whole batch once (whose
outcome is the reference every timed run must reproduce, and whose first impacts MuJoCo starts
from), as MuJoCo by its warm-up call. In each round tumble's batch and its descent are timed
``--tumble-repeats`` (3) times back to back and their means taken: one batch of 200 lasts ~0.2 s,
against a minute of MuJoCo, so a single run would carry the machine's moment-to-moment noise. Ratios
are MuJoCo's s/trajectory over tumble's (> 1: tumble faster), mean against mean and per round.

When written (200 samples, 2 shared cores): tumble 1.5-1.9 ms per trajectory; MuJoCo fixed 179 ms
per landing (95-120x), adaptive 18 ms (9-12x). The ratio depends on MuJoCo's configuration far more
than on anything else: fixed steps on 16 landings, implicitfast with timeconst 0.1 s (dt 12.5 ms)
350 ms (235x); RK4 with timeconst 0.2 s (dt 25 ms) 553 ms (362x); RK4 with 0.1 s 1,069 ms (690x);
implicitfast with MuJoCo's default timeconst 0.02 s (dt 2.5 ms) 1,930 ms (1,158x).

Unfair to tumble: MuJoCo does not fly the descent (tumble's timed run does; see "landing only"),
its ground is a plane (sphere-plane tests, where tumble evaluates a signed-distance terrain and a
voxel gravity field) and the adaptive mode's flight jumps are exact only because of those
simplifications; the batch is 200 samples, where tumble's per-trajectory time is higher than in
its usual batch of 2,000 (the tail of long rows weighs more). Unfair to MuJoCo: it integrates the
60 s hold that tumble certifies, it has no event location (a contact takes 8 steps per timeconst
throughout), and the settle test costs numpy work on every returned step (~15 % of its time).

Results go to ``bench-results/mujoco_deploy_peer.json`` (or ``--out``) with
:func:`benchmarks._common.machine_info`.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks._common import json_safe, machine_info, save
from benchmarks.deploy_reference import polyhedral_probe

#: Soft-contact time constant [s] (MJCF ``solref[0]``).
TIMECONST = 0.2
#: Contact steps per time constant: dt = TIMECONST / this.
STEPS_PER_TIMECONST = 8
#: Constant contact impedance (solimp d0 = dwidth): a linear spring-damper in constraint space.
IMPEDANCE = 0.99
#: Radius [m] of the sphere on each corner (the plane is lowered by as much).
SPHERE_RADIUS = 1e-3
#: Steps per ``rollout`` call (the settle test sees every step; the step ladder is chosen per call).
CHUNK = 200
#: Adaptive flight: FLIGHT_STEPS RK4 steps of dt * 2^k per call, 1 <= k <= LADDER (up to ~13,000 s).
FLIGHT_STEPS = 4
LADDER = 20
#: Window [s] after the first impact over which the tuned damping matches tumble's energy loss.
CALIBRATION_WINDOW = 10.0
#: A hop: at least this long [s] with no corner on the ground (the first hop is compared sample by sample).
HOP_MIN = 1.0
#: tumble's finals read back.
FINALS = ("probe_first_impact_time", "probe_settle_time", "probe_end_time", "probe_bounces", "probe_collisions")
#: State layout of mjSTATE_FULLPHYSICS for one free body: time, qpos (3 + 4), qvel (3 + 3).
T, Z, Q, V, W = 0, 3, slice(4, 8), slice(8, 11), slice(11, 14)


# ------------------------------------------------------------------------------------------- small math
def _rotation(q) -> np.ndarray:
    """Body -> frame rotation matrices of scalar-first quaternions [..., 4] -> [..., 3, 3]."""
    q = np.asarray(q, float)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    return np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
                     np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
                     np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)], -2)


def _quaternion(rot) -> np.ndarray:
    import mujoco

    q = np.zeros(4)
    mujoco.mju_mat2Quat(q, np.ascontiguousarray(rot, float).ravel())
    return q


def _lowest_corner(states, corners) -> np.ndarray:
    """Height [m] of the lowest corner above the ground (0: touching) of states [..., 14]."""
    q = states[..., Q] / np.linalg.norm(states[..., Q], axis=-1, keepdims=True)
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    row = np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)
    return states[..., Z] + (row @ corners.T).min(-1)


# ------------------------------------------------------------------------------------------- tumble
def tumble_batch(scene, overrides, n, t_end=None):
    """``World.compile`` + ``World.run`` of the batch (as ``tumble bench deploy``): (wall s, result)."""
    w = scene.world
    t0 = time.perf_counter()
    w.compile(samples=n, overrides=overrides)
    res = w.run(t_end=scene.t_end if t_end is None else t_end, dt=scene.dt, final=FINALS)
    return time.perf_counter() - t0, res


@dataclass
class Probe:
    """What MuJoCo needs of the scene's probe and settings (read from tumble)."""

    corners: np.ndarray     # [8, 3] body axes, about the CoM [m]
    mass: float
    inertia: np.ndarray     # [3, 3]
    restitution: float
    friction: float
    settle_speed: float
    settle_rate: float
    settle_hold: float
    contact_gap: float
    t_cap: float

    @property
    def bounding_radius(self) -> float:
        return float(np.linalg.norm(self.corners, axis=1).max())

    @classmethod
    def from_scene(cls, scene) -> "Probe":
        from components.contact_params import PAIR_CRR, PAIR_E, PAIR_F, PAIR_REGOLITH
        from components.deploy import DeploySettings, ProbeContact
        from components.rigid import MassProps

        w = scene.world
        pid, shapes, sid, a, b = polyhedral_probe(w, "the peer")
        pair = np.asarray(w.component(pid, ProbeContact).terrain_pair, float)
        if pair[PAIR_REGOLITH] != 0.0 or pair[PAIR_CRR] != 0.0:
            raise NotImplementedError("the peer covers constant restitution without rolling resistance")
        pm = w.component(pid, MassProps)
        st = w.resource(DeploySettings, None) or DeploySettings()
        return cls(corners=np.array(shapes.vertex_position[a:b], float), mass=float(pm.mass),
                   inertia=np.asarray(pm.inertia, float).reshape(3, 3), restitution=float(pair[PAIR_E]),
                   friction=float(pair[PAIR_F]), settle_speed=st.settle_speed, settle_rate=st.settle_rate,
                   settle_hold=st.settle_hold, contact_gap=st.contact_gap, t_cap=st.t_cap)


@dataclass
class Landings:
    """tumble's first impacts as MuJoCo initial states (module docstring)."""

    samples: np.ndarray          # sample indices with a first impact
    state: np.ndarray            # [k, 14] MuJoCo FULLPHYSICS states (time = tumble's first-impact time)
    first_impact: np.ndarray     # [k] s
    gravity: float               # |g_eff| used by MuJoCo [m/s^2]
    site_gravity: np.ndarray     # [k] |g_eff| at each first-impact point
    site_slope_deg: np.ndarray   # [k] angle between the normal and g_eff (dropped)
    energy_ratio: np.ndarray     # [k] tumble: mechanical energy CALIBRATION_WINDOW after / kinetic before
    attitude_error: float        # largest |contact point - CoM - R(q0) corner| [m]
    normal_speed: np.ndarray     # [k] approach speed of the first impact [m/s]
    first_hop_end: np.ndarray    # [k] tumble: first collision after a bounce that flew >= HOP_MIN s [s]


def landings(scene, states, result, probe: Probe, window: float = CALIBRATION_WINDOW) -> Landings:
    from components.deploy import DeployTarget
    from systems.gravity.kernels import acceleration

    target = scene.world.resource(DeployTarget)
    ev, count = result.events, np.asarray(result.event_count).ravel()
    idx = np.flatnonzero(count > 0)
    if len(idx) == 0:
        raise RuntimeError("no sample of tumble's batch reached the ground")
    t0 = ev["time"][idx, 0]
    pos, point = ev["position"][idx, 0], ev["point"][idx, 0]
    nrm = ev["normal"][idx, 0] / np.linalg.norm(ev["normal"][idx, 0], axis=1)[:, None]
    vel, om = ev["velocity_before"][idx, 0], ev["omega_before"][idx, 0]
    vert = ev["vertex"][idx, 0]
    q0 = np.stack([states[s]["attitude"] for s in idx])
    rot = _rotation(q0)
    err = float(np.abs(point - pos - np.einsum("nij,nj->ni", rot, probe.corners[vert])).max())
    if err > 1e-6 or float(np.abs(om).max()) > 1e-9:
        raise NotImplementedError(f"the probe turned in flight (corner mismatch {err:.1e} m, |omega| "
                                  f"{float(np.abs(om).max()):.1e} rad/s): its attitude at first impact is unknown")
    omega = np.asarray(target.rotation, float)
    g = np.asarray(acceleration(target.gravity, np.ascontiguousarray(pos)), float).reshape(-1, 3)
    g = g - np.cross(omega, np.cross(omega, pos))
    gm = np.linalg.norm(g, axis=1)
    slope = np.degrees(np.arccos(np.clip(-np.einsum("ij,ij->i", g, nrm) / gm, -1.0, 1.0)))
    # local frames: z = normal, x, y any completion
    a = np.where(np.abs(nrm[:, :1]) < 0.9, np.array([[1.0, 0.0, 0.0]]), np.array([[0.0, 1.0, 0.0]]))
    ex = np.cross(a, nrm)
    ex /= np.linalg.norm(ex, axis=1)[:, None]
    ey = np.cross(nrm, ex)
    frame = np.stack([ex, ey, nrm], 1)                              # target -> local
    st = np.zeros((len(idx), 14))
    st[:, T] = t0
    st[:, Z] = np.einsum("ij,ij->i", pos - point, nrm)
    st[:, Q] = np.stack([_quaternion(f @ r) for f, r in zip(frame, rot)])
    st[:, V] = np.einsum("nij,nj->ni", frame, vel)
    st[:, W] = om
    # tumble's energy left after the first impact cluster (last collision within the window)
    e0 = ev["energy_before"][idx, 0]
    ratio = np.empty(len(idx))
    for k, s in enumerate(idx):
        j = int(np.flatnonzero(ev["time"][s, :count[s]] <= t0[k] + window).max())
        du = -probe.mass * float(g[k] @ (ev["position"][s, j] - pos[k]))
        ratio[k] = (ev["energy_after"][s, j] + du) / e0[k]
    hop = np.full(len(idx), math.nan)
    for k, s in enumerate(idx):
        tt, kind = ev["time"][s, :count[s]], ev["kind"][s, :count[s]]
        j = np.flatnonzero((kind[:-1] == 0) & (np.diff(tt) >= HOP_MIN))
        if len(j):
            hop[k] = tt[j[0] + 1]
    return Landings(samples=idx, state=st, first_impact=t0, gravity=float(np.median(gm)), site_gravity=gm,
                    site_slope_deg=slope, energy_ratio=ratio, attitude_error=err,
                    normal_speed=-np.einsum("ij,ij->i", vel, nrm), first_hop_end=hop)


# ------------------------------------------------------------------------------------------- MuJoCo
def mjcf(probe: Probe, *, gravity: float, dt: float, timeconst: float, damping: float,
         integrator: str = "RK4") -> str:
    """The landing's MJCF (module docstring)."""
    def num(*xs) -> str:
        return " ".join(repr(float(x)) for x in xs)

    r = SPHERE_RADIUS
    i = probe.inertia
    spheres = "\n".join(f'      <geom type="sphere" size="{num(r)}" pos="{num(*c)}"/>' for c in probe.corners)
    return f"""<mujoco model="deploy-cube landing">
  <option timestep="{num(dt)}" integrator="{integrator}" gravity="0 0 {num(-gravity)}" cone="elliptic"
          solver="Newton"/>
  <default>
    <geom condim="3" friction="{num(probe.friction)} 0 0" solref="{num(timeconst, damping)}"
          solimp="{num(IMPEDANCE, IMPEDANCE)} 0.001" margin="0"/>
  </default>
  <worldbody>
    <geom name="ground" type="plane" size="0 0 1" pos="0 0 {num(-r)}"/>
    <body name="cube">
      <freejoint/>
      <inertial pos="0 0 0" mass="{num(probe.mass)}"
                fullinertia="{num(i[0, 0], i[1, 1], i[2, 2], i[0, 1], i[0, 2], i[1, 2])}"/>
{spheres}
    </body>
  </worldbody>
</mujoco>"""


def drop_restitution(probe: Probe, *, gravity, dt, timeconst, damping, speed, integrator="RK4") -> float:
    """Rebound / approach speed of the cube dropped face-down at ``speed`` (one mj_step at a time)."""
    import mujoco

    m = mujoco.MjModel.from_xml_string(mjcf(probe, gravity=gravity, dt=dt, timeconst=timeconst, damping=damping,
                                            integrator=integrator))
    d = mujoco.MjData(m)
    h = float(probe.corners[:, 2].max())
    d.qpos[:7] = [0.0, 0.0, h + 1e-9, 1.0, 0.0, 0.0, 0.0]
    d.qvel[2] = -speed
    for _ in range(1_000_000):
        mujoco.mj_step(m, d)
        if d.qvel[2] > 0 and d.ncon == 0:
            break
    return float(d.qvel[2] / speed)


def _bisect(f, target, lo, hi, tol, decreasing=True):
    """Root of f(x) = target on [lo, hi] for a monotone f."""
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if (f(mid) > target) == decreasing:
            lo = mid
        else:
            hi = mid
        if hi - lo < tol:
            break
    return 0.5 * (lo + hi)


def nominal_damping(probe: Probe, *, speed, **kw) -> float:
    """The dampratio for which the cube dropped face-down at ``speed`` rebounds with tumble's e."""
    return _bisect(lambda z: drop_restitution(probe, damping=z, speed=speed, **kw), probe.restitution, 0.02, 0.95,
                   1e-4)


def first_impact_energy(probe: Probe, land: "Landings", *, damping, threads=2, window=CALIBRATION_WINDOW,
                        **kw) -> np.ndarray:
    """MuJoCo's mechanical energy ``window`` s after each first impact over the kinetic energy before
    (fixed steps from the landing states)."""
    init = land.state.copy()
    init[:, T] = 0.0
    m = MuJoCoLanding(probe, damping=damping, threads=threads, ladder=1, **kw)
    try:
        f = m.short(init, window)
    finally:
        m.close()

    def kinetic(x):
        return 0.5 * probe.mass * np.sum(x[:, V] ** 2, 1) + 0.5 * np.einsum("ni,ij,nj->n", x[:, W], probe.inertia,
                                                                            x[:, W])
    return (kinetic(f) + probe.mass * land.gravity * (f[:, Z] - init[:, Z])) / kinetic(init)


def tuned_damping(probe: Probe, land: "Landings", *, threads=2, **kw) -> float:
    """The dampratio whose batch-mean first-impact energy ratio equals tumble's."""
    target = float(np.mean(land.energy_ratio))
    return _bisect(lambda z: float(np.mean(first_impact_energy(probe, land, damping=z, threads=threads, **kw))),
                   target, 0.05, 0.9, 2e-3)


class MuJoCoLanding:
    """The landings in ``mujoco.rollout`` on ``threads`` threads (module docstring).

    Contact steps: ``integrator`` at ``dt``, :data:`CHUNK` steps per call. Adaptive flight (``run(...,
    adaptive=True)``): a sample whose cube provably stays clear of the ground for
    ``flight_steps * dt * 2^k`` seconds takes ``flight_steps`` RK4 steps of ``dt * 2^k`` (the largest
    such k <= ``ladder``) in a second call of the same round; RK4 is exact for a ballistic CoM in
    uniform gravity and MuJoCo's free-joint rotation is the exact exponential for a constant angular
    velocity (an isotropic inertia), so the jump changes no physics.
    """

    def __init__(self, probe: Probe, *, gravity, timeconst, damping, dt, threads=2, chunk=CHUNK,
                 integrator="RK4", flight_steps=FLIGHT_STEPS, ladder=LADDER):
        import mujoco
        from mujoco import rollout

        self.probe, self.gravity, self.dt, self.chunk = probe, float(gravity), float(dt), int(chunk)
        self.flight_steps = int(flight_steps)

        def model(step, integ):
            return mujoco.MjModel.from_xml_string(mjcf(probe, gravity=gravity, dt=step, timeconst=timeconst,
                                                       damping=damping, integrator=integ))
        self.contact_model = model(dt, integrator)
        self.flight_models = [model(dt * 2 ** k, "RK4") for k in range(1, ladder + 1)]
        self.flight_span = self.flight_steps * dt * 2.0 ** np.arange(1, ladder + 1)
        self.datas = [mujoco.MjData(self.contact_model) for _ in range(max(1, threads))]
        self.pool = rollout.Rollout(nthread=threads)
        self.corners = probe.corners

    def close(self):
        self.pool.close()

    def short(self, initial, seconds) -> np.ndarray:
        """States after ``seconds`` of contact-integrator steps at dt (calibration)."""
        n = max(1, int(round(seconds / self.dt)))
        out, _ = self.pool.rollout(self.contact_model, self.datas, np.ascontiguousarray(initial), nstep=n)
        return out[:, -1].copy()

    def free_time(self, s) -> np.ndarray:
        """Lower bound [s] of the time each state's cube stays > contact_gap above the ground in
        ballistic flight with constant angular velocity: each corner's height on its parabola with
        the centripetal acceleration bounded by |omega|^2 r_bound, or the bounding sphere's."""
        g, gap, rb = self.gravity, self.probe.contact_gap, self.probe.bounding_radius
        rot = _rotation(s[:, Q])
        r = np.einsum("nij,kj->nki", rot, self.corners)            # corner offsets, ground frame
        w = np.einsum("nij,nj->ni", rot, s[:, W])                   # angular velocity, ground frame
        h = s[:, Z, None] + r[..., 2] - gap
        rate = s[:, None, 10] + np.cross(w[:, None, :], r)[..., 2]  # corner vertical speeds
        acc = g + np.sum(w * w, 1)[:, None] * rb
        t_corner = np.where(h <= 0, 0.0, (rate + np.sqrt(rate * rate + 2 * acc * np.maximum(h, 0))) / acc).min(1)
        hb = s[:, Z] - rb - gap
        vz = s[:, 10]
        t_sphere = np.where(hb <= 0, 0.0, (vz + np.sqrt(np.maximum(vz * vz + 2 * g * hb, 0.0))) / g)
        return np.maximum(t_corner, t_sphere)

    def run(self, initial, *, adaptive=True) -> dict:
        """Every landing from ``initial`` [k, 14] until settled or t_cap. Returns settling and
        first-contact times [s, absolute], status codes, step counts and wall times."""
        from components.status import Status

        p = self.probe
        n = len(initial)
        self._state = np.array(initial, float)
        self._active = np.ones(n, bool)
        self._settle = np.full(n, math.nan)
        self._contact = np.full(n, math.nan)
        self._rest_since = np.full(n, math.nan)
        self._air_since = np.full(n, math.nan)
        self._hop_end = np.full(n, math.nan)
        self._status = np.full(n, int(Status.RUNNING), np.int8)
        self._steps = np.zeros(n, np.int64)          # steps until settled / timed out
        self._fine = np.zeros(n, np.int64)           # of which contact steps at dt
        bufs = {self.chunk: np.empty((n, self.chunk, 14)), self.flight_steps: np.empty((n, self.flight_steps, 14))}
        calls = 0
        rollout_s = 0.0
        t_start = time.perf_counter()
        while self._active.any():
            idx = np.flatnonzero(self._active)
            if adaptive:
                s = self._state[idx]
                free = np.minimum(self.free_time(s), p.t_cap - s[:, T])
                k = np.searchsorted(self.flight_span, free, side="right") - 1     # -1: no flight step fits
            else:
                k = np.full(len(idx), -1)
            for group, nstep, model, fine in (
                    (idx[k < 0], self.chunk, self.contact_model, True),
                    (idx[k >= 0], self.flight_steps, [self.flight_models[j] for j in k[k >= 0]], False)):
                if not len(group):
                    continue
                out = (bufs[self.chunk] if fine else bufs[self.flight_steps])[:len(group)]
                r0 = time.perf_counter()
                self.pool.rollout(model, self.datas, np.ascontiguousarray(self._state[group]), nstep=nstep, state=out)
                rollout_s += time.perf_counter() - r0
                calls += 1
                self._absorb(group, out, fine=fine)
        return {"wall_s": time.perf_counter() - t_start, "rollout_s": rollout_s, "calls": calls,
                "settle_time": self._settle, "first_contact": self._contact, "first_hop_end": self._hop_end,
                "status": self._status,
                "steps": self._steps, "fine_steps": self._fine}

    def _first_hop(self, idx, t, low):
        """End of the first hop: the first touchdown after the first contact that follows at least
        :data:`HOP_MIN` s with every corner above the ground (tumble: the first collision after a
        bounce that flew that long)."""
        look = np.isnan(self._hop_end[idx]) & np.isfinite(self._contact[idx])
        if not look.any():
            return
        i = idx[look]
        t, low = t[look], low[look]
        nstep = t.shape[1]
        ok = t >= self._contact[i][:, None]
        air = ok & (low > 0)
        ground = ok & ~air
        last_ground = np.maximum.accumulate(np.where(~air, np.arange(nstep), -1), axis=1)
        carried = np.where(np.isnan(self._air_since[i]), t[:, 0], self._air_since[i])
        start = np.where(last_ground >= 0, np.take_along_axis(t, np.minimum(last_ground + 1, nstep - 1), 1),
                         carried[:, None])
        prev_air = np.concatenate([np.isfinite(self._air_since[i])[:, None], air[:, :-1]], 1)
        prev_start = np.concatenate([carried[:, None], start[:, :-1]], 1)
        land = ground & prev_air & (t - prev_start >= HOP_MIN)
        hit = land.any(1)
        self._hop_end[i[hit]] = t[hit, np.argmax(land[hit], 1)]
        self._air_since[i] = np.where(air[:, -1], start[:, -1], math.nan)

    def _absorb(self, idx, out, *, fine):
        """The settle test at every step of a call's states ``out`` [len(idx), nstep, 14]."""
        from components.status import Status

        p = self.probe
        nstep = out.shape[1]
        t = out[..., T]
        low = _lowest_corner(out, self.corners)
        first = np.isnan(self._contact[idx]) & (low < 0).any(1)
        if first.any():
            self._contact[idx[first]] = t[first, np.argmax(low[first] < 0, 1)]
        self._first_hop(idx, t, low)
        rest = ((np.linalg.norm(out[..., V], axis=-1) < p.settle_speed)
                & (np.linalg.norm(out[..., W], axis=-1) < p.settle_rate) & (low <= p.contact_gap))
        last_moving = np.maximum.accumulate(np.where(~rest, np.arange(nstep), -1), axis=1)
        carried = np.where(np.isnan(self._rest_since[idx]), t[:, 0], self._rest_since[idx])
        run_start = np.where(last_moving >= 0, np.take_along_axis(t, np.minimum(last_moving + 1, nstep - 1), 1),
                             carried[:, None])
        held = rest & (t - run_start >= p.settle_hold)
        done = held.any(1)
        at = np.argmax(held, 1)
        j = np.flatnonzero(done)
        self._settle[idx[j]] = run_start[j, at[j]]
        self._status[idx[j]] = int(Status.SETTLED)
        self._steps[idx[j]] += at[j] + 1
        if fine:
            self._fine[idx[j]] += at[j] + 1
        self._active[idx[j]] = False
        j = np.flatnonzero(~done)
        self._steps[idx[j]] += nstep
        if fine:
            self._fine[idx[j]] += nstep
        self._rest_since[idx[j]] = np.where(rest[j, -1], run_start[j, -1], math.nan)
        self._state[idx[j]] = out[j, -1]
        capped = j[out[j, -1, T] >= p.t_cap]
        self._status[idx[capped]] = int(Status.TIMED_OUT)
        self._active[idx[capped]] = False


# ------------------------------------------------------------------------------------------- statistics
def _pct(x) -> dict:
    x = np.asarray(x, float)
    x = x[np.isfinite(x)]
    if not len(x):
        return {"n": 0}
    p5, p50, p95 = np.percentile(x, [5, 50, 95])
    return {"n": int(len(x)), "median": float(p50), "p5": float(p5), "p95": float(p95)}


def _ks(a, b) -> dict:
    from scipy.stats import ks_2samp

    a, b = np.asarray(a, float), np.asarray(b, float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if len(a) < 2 or len(b) < 2:
        return {"statistic": math.nan, "p": math.nan}
    r = ks_2samp(a, b)
    return {"statistic": float(r.statistic), "p": float(r.pvalue)}


def _status_counts(codes) -> dict:
    from components.status import Status

    out: dict[str, int] = {}
    for c in np.asarray(codes).ravel():
        name = Status(int(c)).name.lower()
        out[name] = out.get(name, 0) + 1
    return out


def _fmt_pct(d) -> str:
    return (f"median {d['median']:,.0f} s, 5-95 % {d['p5']:,.0f}-{d['p95']:,.0f} s (n {d['n']})" if d.get("n")
            else "none")


# ------------------------------------------------------------------------------------------- main
def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.mujoco_deploy_peer", description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--samples", type=int, default=200, help="landings in both batches (default 200)")
    ap.add_argument("--seed", type=int, default=0, help="base seed of the batch (default 0)")
    ap.add_argument("--gravity", default="voxel", choices=("voxel", "polyhedron", "point_mass"),
                    help="deploy-cube's gravity field (default voxel)")
    ap.add_argument("--threads", type=int, default=2, help="threads of both (numba, rollout; default 2)")
    ap.add_argument("--rounds", type=int, default=2, help="interleaved rounds (default 2)")
    ap.add_argument("--tumble-repeats", type=int, default=3,
                    help="tumble batches timed back to back in each round, their mean taken (default 3)")
    ap.add_argument("--mode", default="both", choices=("both", "adaptive", "fixed"),
                    help="MuJoCo stepping: fixed dt, adaptive flight jumps, or both (default; each is KS-tested)")
    ap.add_argument("--fixed-samples", type=int, default=None,
                    help="landings run in fixed-step mode per round (default: all)")
    ap.add_argument("--timeconst", type=float, default=TIMECONST, help=f"solref timeconst [s] (default {TIMECONST})")
    ap.add_argument("--steps-per-timeconst", type=int, default=STEPS_PER_TIMECONST,
                    help=f"contact step dt = timeconst / this (default {STEPS_PER_TIMECONST})")
    ap.add_argument("--integrator", default="implicitfast", choices=("implicitfast", "RK4", "Euler"),
                    help="MuJoCo integrator of contact steps (default implicitfast; flight jumps are RK4)")
    ap.add_argument("--damping", default="tuned",
                    help="solref dampratio: 'tuned' (match tumble's first-impact energy loss; default), 'nominal' "
                         "(face-down drop rebounds with tumble's e) or a number")
    ap.add_argument("--chunk", type=int, default=CHUNK, help=f"steps per rollout call (default {CHUNK})")
    ap.add_argument("--out", type=Path, default=None, help="JSON path (default bench-results/mujoco_deploy_peer.json)")
    args = ap.parse_args(argv)
    if args.samples < 2 or args.rounds < 1 or args.threads < 1 or args.tumble_repeats < 1:
        ap.error("--samples must be >= 2, --rounds, --threads and --tumble-repeats >= 1")

    import mujoco
    import numba

    from benchmarks.deploy_reference import sample_states
    from components.status import Status
    from scenes.registry import load_scene

    threads = max(1, min(args.threads, numba.config.NUMBA_NUM_THREADS))
    numba.set_num_threads(threads)
    info = machine_info()
    info["mujoco"] = mujoco.__version__
    print(f"machine: {info.get('cpu_model', info['processor'])}, {info['cpu_count']} cpus ({info['cpus_available']} "
          f"available), numba {info['numba']} on {threads} threads, MuJoCo {mujoco.__version__} rollout on {threads} "
          f"threads, numpy {info['numpy']}, python {info['python']}, {info['platform']}")
    print(f"load average before: {'/'.join(f'{v:.2f}' for v in os.getloadavg())}")

    t0 = time.perf_counter()
    scene = load_scene("deploy-cube", gravity=args.gravity)
    n = args.samples
    states = sample_states(scene, range(n), seed=args.seed)
    pid = scene.world.entity("probe")
    ov = {(pid, c): np.stack([s["drawn"][c] for s in states]) for c in states[0]["drawn"]}
    probe = Probe.from_scene(scene)
    print(f"deploy-cube built in {time.perf_counter() - t0:.1f} s; probe: {len(probe.corners)} corners, "
          f"{probe.mass:g} kg, e {probe.restitution:g}, f {probe.friction:g}; settle |v| < {probe.settle_speed:g} m/s, "
          f"|w| < {probe.settle_rate:g} rad/s for {probe.settle_hold:g} s in contact (gap {probe.contact_gap:g} m), "
          f"cap {probe.t_cap:g} s")

    warm_s, _ = tumble_batch(scene, {c: v[:2] for c, v in ov.items()}, 2)
    print(f"tumble warm-up (2 samples, numba compile / cache load, untimed): {warm_s:.1f} s")

    def tumble_outcome(res):
        status = np.asarray(res.status).reshape(n).copy()
        fin = {c: np.asarray(res.finals[c], float).reshape(n, -1)[:, 0].copy() for c in FINALS}
        return status, fin

    # the whole batch once, untimed, as MuJoCo's warm-up call: a process's first batch of this size
    # pays its one-time costs (the event log's and work rows' first pages, the worker threads' start)
    full_s, res = tumble_batch(scene, ov, n)
    tumble_ref = tumble_outcome(res)
    land = landings(scene, states, res, probe)
    t_desc = 0.999 * float(np.min(land.first_impact))
    print(f"tumble warm-up ({n} samples, its reference outcome, untimed): {full_s:.3f} s")

    rounds = []
    lander = None
    mj_adapt = mj_fixed = None
    damping = math.nan
    nominal = math.nan
    fixed_k = 0
    for rnd in range(args.rounds):
        row: dict = {"tumble_runs_s": [], "tumble_descent_runs_s": []}
        same = True
        for _ in range(args.tumble_repeats):
            wall, res = tumble_batch(scene, ov, n)
            row["tumble_runs_s"].append(wall)
            status, fin = tumble_outcome(res)
            same &= bool(np.array_equal(status, tumble_ref[0]) and np.array_equal(
                fin["probe_settle_time"], tumble_ref[1]["probe_settle_time"], equal_nan=True))
            row["tumble_descent_runs_s"].append(tumble_batch(scene, ov, n, t_end=t_desc)[0])
        row["tumble_same_as_first"] = same
        row["tumble_s"] = statistics.fmean(row["tumble_runs_s"])
        row["tumble_descent_s"] = statistics.fmean(row["tumble_descent_runs_s"])
        if lander is None:       # untimed: models, damping, warm-up
            dt = args.timeconst / args.steps_per_timeconst
            kw = dict(gravity=land.gravity, dt=dt, timeconst=args.timeconst, integrator=args.integrator)
            c0 = time.perf_counter()
            v_med = float(np.median(land.normal_speed))
            nominal = nominal_damping(probe, speed=v_med, **kw)
            e_check = [drop_restitution(probe, damping=nominal, speed=v, **kw)
                       for v in (v_med, 0.1 * v_med, 0.01 * v_med)]
            target = float(np.mean(land.energy_ratio))
            if args.damping == "tuned":
                damping = tuned_damping(probe, land, threads=threads, **kw)
            elif args.damping == "nominal":
                damping = nominal
            else:
                try:
                    damping = float(args.damping)
                except ValueError:
                    ap.error(f"--damping {args.damping!r}: must be 'tuned', 'nominal' or a number")
            mj_ratio = float(np.mean(first_impact_energy(probe, land, damping=damping, threads=threads, **kw)))
            lander = MuJoCoLanding(probe, damping=damping, threads=threads, chunk=args.chunk, **kw)
            lander.run(land.state[:2], adaptive=True)     # warm-up (thread pool, first calls)
            setup_s = time.perf_counter() - c0
            fixed_k = 0 if args.mode == "adaptive" else len(land.state) if args.fixed_samples is None else min(
                args.fixed_samples, len(land.state))
            print(f"first impacts: {len(land.samples)} of {n} samples; site |g + centrifugal| median "
                  f"{land.gravity:.4e} m/s^2 (range {land.site_gravity.min():.4e}-{land.site_gravity.max():.4e}); "
                  f"site slope median {np.median(land.site_slope_deg):.1f} deg (dropped: plane normal to g); "
                  f"approach speed median {v_med:.4f} m/s; attitude check {land.attitude_error:.1e} m")
            print(f"MuJoCo model: plane + 8 corner spheres (r {SPHERE_RADIUS:g} m), {args.integrator}, dt {dt:g} s "
                  f"in contact "
                  f"(timeconst {args.timeconst:g} s / {args.steps_per_timeconst}), elliptic cone, Newton, solimp "
                  f"{IMPEDANCE}; dampratio nominal {nominal:.4f} (face-down e at {v_med:.3f} / {0.1 * v_med:.4f} / "
                  f"{0.01 * v_med:.5f} m/s: {', '.join(f'{e:.3f}' for e in e_check)}); used {damping:.4f} "
                  f"({args.damping}); energy left {CALIBRATION_WINDOW:g} s after the first impact, batch mean: "
                  f"tumble {target:.4f}, MuJoCo {mj_ratio:.4f}  [setup {setup_s:.1f} s, untimed]")
        if args.mode in ("both", "adaptive"):
            r = lander.run(land.state, adaptive=True)
            row["mujoco_adaptive_s"] = r["wall_s"]
            row["mujoco_adaptive_rollout_s"] = r["rollout_s"]
            if mj_adapt is None:
                mj_adapt = r
            else:
                row["mujoco_adaptive_same_as_first"] = bool(np.array_equal(r["settle_time"], mj_adapt["settle_time"],
                                                                           equal_nan=True))
        if fixed_k:
            r = lander.run(land.state[:fixed_k], adaptive=False)
            row["mujoco_fixed_s"] = r["wall_s"]
            row["mujoco_fixed_rollout_s"] = r["rollout_s"]
            if mj_fixed is None:
                mj_fixed = r
        row["load_average"] = list(os.getloadavg())
        rounds.append(row)
        line = (f"round {rnd + 1}: tumble {row['tumble_s']:.3f} s ({n} trajectories, the mean of "
                f"{'/'.join(f'{x:.3f}' for x in row['tumble_runs_s'])}; descent only {row['tumble_descent_s']:.3f} s"
                f"{'' if row['tumble_same_as_first'] else '; OUTCOME DIFFERS from the warm-up'})")
        if "mujoco_adaptive_s" in row:
            line += f" | MuJoCo adaptive {row['mujoco_adaptive_s']:.2f} s ({len(land.state)} landings)"
        if "mujoco_fixed_s" in row:
            line += f" | MuJoCo fixed {row['mujoco_fixed_s']:.2f} s ({fixed_k} landings)"
        print(line + f" | load {'/'.join(f'{v:.2f}' for v in row['load_average'])}")
    lander.close()

    # ---------------------------------------------------------------- sameness
    from scipy.stats import spearmanr

    status, fin = tumble_ref
    fi_t = fin["probe_first_impact_time"]
    t_settle = np.where(status == Status.SETTLED, fin["probe_settle_time"] - fi_t, math.nan)
    print(f"\nsameness (tumble: {n} samples; MuJoCo: the same landings):")
    print(f"  tumble status {_status_counts(status)}; settling time after first impact {_fmt_pct(_pct(t_settle))}")
    same: dict = {"tumble_status": _status_counts(status), "tumble_settle_after_first_impact": _pct(t_settle),
                  "tumble_first_impact": _pct(fi_t)}
    per_sample = {"sample": land.samples, "tumble_settle_after_first_impact": t_settle[land.samples]}
    for mode, res_ in (("adaptive", mj_adapt), ("fixed", mj_fixed)):
        if res_ is None:
            continue
        k = len(res_["settle_time"])
        t0 = land.first_impact[:k]
        m_settle = np.where(res_["status"] == Status.SETTLED, res_["settle_time"] - t0, math.nan)
        ks_settle = _ks(t_settle, m_settle)
        ks_first = _ks(fi_t, res_["first_contact"])
        hop_t = land.first_hop_end[:k] - t0
        hop_m = res_["first_hop_end"] - t0
        both = np.isfinite(hop_t) & np.isfinite(hop_m)
        rho = float(spearmanr(hop_t[both], hop_m[both]).statistic) if both.sum() > 2 else math.nan
        rel = hop_m[both] / hop_t[both] - 1.0
        hop = {"ks": _ks(hop_t, hop_m), "tumble": _pct(hop_t), "mujoco": _pct(hop_m), "paired": int(both.sum()),
               "spearman": rho, "relative_difference_median": float(np.median(rel)) if len(rel) else math.nan,
               "within_25_percent": float(np.mean(np.abs(rel) <= 0.25)) if len(rel) else math.nan}
        print(f"  MuJoCo {mode} ({k} landings): status {_status_counts(res_['status'])}")
        print(f"    settling time after first impact: {_fmt_pct(_pct(m_settle))} -> KS (against tumble's {n}) D "
              f"{ks_settle['statistic']:.3f}, p {ks_settle['p']:.3g} ({'agree' if ks_settle['p'] > 0.05 else 'DIFFER'}"
              " at 0.05)")
        print(f"    first-impact time: {_fmt_pct(_pct(res_['first_contact']))} (tumble {_fmt_pct(_pct(fi_t))}) -> KS D "
              f"{ks_first['statistic']:.3f}, p {ks_first['p']:.3g} (the same by construction: MuJoCo starts at the "
              "impact)")
        print(f"    end of the first hop after the first impact (touchdown after >= {HOP_MIN:g} s in the air), "
              f"{_fmt_pct(_pct(hop_m))} (tumble {_fmt_pct(_pct(hop_t))}); sample by sample ({both.sum()} pairs, "
              f"not yet chaotic): Spearman rho {rho:.2f}, MuJoCo/tumble - 1 median "
              f"{hop['relative_difference_median']:+.2f}, {100 * hop['within_25_percent']:.0f} % within +/-25 %; KS p "
              f"{hop['ks']['p']:.3g}")
        same[mode] = {"landings": k, "status": _status_counts(res_["status"]),
                      "ks_settle_after_first_impact": ks_settle, "settle_after_first_impact": _pct(m_settle),
                      "ks_first_impact": ks_first, "first_contact": _pct(res_["first_contact"]), "first_hop": hop}
        per_sample[f"mujoco_{mode}_settle_after_first_impact"] = m_settle

    # ---------------------------------------------------------------- timing
    k_land = len(land.state)
    tum = [r["tumble_s"] / n for r in rounds]
    desc = [r["tumble_descent_s"] / n for r in rounds]
    landing_only = [a - b for a, b in zip(tum, desc)]
    out: dict = {}
    print(f"\ntiming ({threads} threads each, {len(rounds)} interleaved rounds; wall time of the stepping):")
    walls = ", ".join(f"{r['tumble_s']:.3f}" for r in rounds)
    print(f"  tumble: {walls} s per {n} trajectories -> "
          f"{1 / statistics.fmean(tum):,.1f} trajectories/s ({statistics.fmean(tum) * 1e3:.3f} ms each); descent "
          f"alone {statistics.fmean(desc) * 1e3:.3f} ms -> landing only {statistics.fmean(landing_only) * 1e3:.3f} ms")
    for mode, key, cnt, res_ in (("adaptive", "mujoco_adaptive_s", k_land, mj_adapt),
                                 ("fixed", "mujoco_fixed_s", fixed_k, mj_fixed)):
        if res_ is None:
            continue
        per = [r[key] / cnt for r in rounds]
        ratios = [m / t for m, t in zip(per, tum)]
        ratio = statistics.fmean(per) / statistics.fmean(tum)
        ratio_land = statistics.fmean(per) / statistics.fmean(landing_only)
        roll = statistics.fmean([r[key.replace("_s", "_rollout_s")] for r in rounds]) / statistics.fmean(
            [r[key] for r in rounds])
        ok = res_["status"] == Status.SETTLED
        steps = float(res_["steps"][ok].mean()) if ok.any() else math.nan
        fine = float(res_["fine_steps"][ok].mean()) if ok.any() else math.nan
        hold = probe.settle_hold / lander.dt
        print(f"  MuJoCo {mode}: {', '.join(f'{r[key]:.2f}' for r in rounds)} s per {cnt} landings -> "
              f"{1 / statistics.fmean(per):,.2f} trajectories/s ({statistics.fmean(per) * 1e3:.1f} ms each; rollout "
              f"calls {100 * roll:.0f} % of it, {res_['calls']} calls); steps per landing {steps:,.0f} (at dt "
              f"{fine:,.0f}, of which the hold {hold:,.0f})")
        print(f"    ratio MuJoCo / tumble per trajectory: {ratio:,.0f}x mean vs mean (rounds "
              f"{', '.join(f'{x:,.0f}' for x in ratios)}); against tumble's landing only {ratio_land:,.0f}x; "
              f"MuJoCo's rollout calls alone against tumble {ratio * roll:,.0f}x")
        out[mode] = {"landings": cnt, "wall_s": [r[key] for r in rounds], "s_per_trajectory": statistics.fmean(per),
                     "trajectories_per_s": 1 / statistics.fmean(per), "ratio_mean_vs_mean": ratio,
                     "ratio_rounds": ratios, "ratio_vs_tumble_landing_only": ratio_land,
                     "rollout_share": roll, "rollout_calls": res_["calls"], "steps_per_landing": steps,
                     "steps_at_dt_per_landing": fine, "hold_steps": hold}

    payload = {
        "scene": "deploy-cube", "gravity": args.gravity, "seed": args.seed, "samples": n, "threads": threads,
        "rounds": rounds, "tumble_warmup_s": warm_s, "tumble_full_warmup_s": full_s,
        "tumble_repeats": args.tumble_repeats,
        "tumble_s_per_trajectory": statistics.fmean(tum), "tumble_trajectories_per_s": 1 / statistics.fmean(tum),
        "tumble_descent_s_per_trajectory": statistics.fmean(desc),
        "tumble_landing_only_s_per_trajectory": statistics.fmean(landing_only),
        "mujoco": out,
        "model": {"timeconst": args.timeconst, "dt": lander.dt, "steps_per_timeconst": args.steps_per_timeconst,
                  "integrator": args.integrator, "damping_mode": args.damping, "dampratio": damping,
                  "dampratio_nominal": nominal, "impedance": IMPEDANCE, "sphere_radius": SPHERE_RADIUS,
                  "gravity": land.gravity, "chunk": args.chunk, "ladder": LADDER,
                  "site_slope_deg_median": float(np.median(land.site_slope_deg)),
                  "tumble_first_impact_energy_ratio_mean": float(np.mean(land.energy_ratio))},
        "sameness": same,
        "per_sample": per_sample,
    }
    path = save("mujoco_deploy_peer", json_safe(payload), path=args.out, machine=info)
    print(f"saved {path}")
    return payload


if __name__ == "__main__":  # pragma: no cover
    main()
