"""The gravity system (DERIVATIVE phase): a gravity source evaluated at every row's centre of mass.

For each row with mass, at every integrator stage:

1. the centre of mass in the field frame, ``x = p + R(q) c`` (:data:`com_field_position`);
2. the source's acceleration g(x) through the one dispatch over every source kind,
   :data:`systems.gravity.kernels.gravity_at` (point mass, homogeneous ellipsoid,
   Werner–Scheeres polyhedron, voxel grid, linearised field — seed 004 §2.4, eqs 2.40–2.43 — and
   spherical harmonics, Montenbruck & Gill 2000 §3.2), the
   same the deployment kernels call;
3. the weight ``m g`` added to ``body_force`` and ``c × (m g_B)`` to ``body_torque`` through the very
   same row kernel as :class:`systems.gravity.uniform.UniformGravity` (:data:`systems.gravity.uniform.add_weight`),
   via :data:`add_field_weight`.

The field frame turns about the inertial z axis by ``θ = angle0 + spin · t`` (a planet's body-fixed
frame; ``spin = angle0 = 0``, the default, makes it the inertial frame), or, given a ``pole``
(:class:`components.environment.CelestialPole`: the Earth's precession and nutation, IAU
2006/2000A), about that pole: ``x_field = Rz(−θ) Q(t) x`` (IERS Conventions 2010 §5.4.4's
``R3(ERA) Q`` without polar motion). Steps 1 and 3 are the only places that know it:
:data:`com_field_position` (inertial → field) and :data:`field_to_inertial` (field → inertial),
with t each row's stage time (``row_time``, set by the integrator before every stage).

Kernels follow the dual pattern (:func:`ecs.kernels.dual`): one Python source per row function,
compiled for the CPU (hand-written ``prange`` drivers) and the GPU (``launch_rows``). The field is
evaluated at the CoM as a point; ``gradient_torque=True`` adds the gravity-gradient torque of the
whole field about each body's CoM (:func:`_field_gradient_torque`: the field's gradient from
:data:`systems.gravity.kernels.gravity_gradient_at` in body axes; for a point mass it is seed 001's
MBGravityTorque, :data:`systems.gravity.kernels.gradient_torque`).

As a row term (:meth:`GravitySystem.term`, :func:`gravity_term`) the same dispatch and the same
frame turn run inside a pipeline's right-hand side at the stage time it passes: the multibody
solve applies it to every link at the link's own CoM (seed 001).
"""

from __future__ import annotations

import math

import numpy as np

from numba import prange

from components.environment import CelestialPole
from components.gravity import GravitySource
from ecs import InputError, Phase, System
from ecs.kernels import RowDriver, cpu_jit, cpu_parallel, dual, launch_rows, to_backend
from ecs.attitude import quat_rotate, quat_rotate_inverse
from ecs.terms import Term, specialise
from systems.gravity.uniform import add_weight
from systems.gravity.kernels import (GRAVITY_KINDS, GravityArgs, gravity_args, gravity_at, gravity_at_for, gravity_gradient_at,
                                     tensor_gradient_torque)

_rot = quat_rotate.cpu
_rot_inv = quat_rotate_inverse.cpu
_weight = add_weight.cpu
_grav = gravity_at.cpu
_grad_at = gravity_gradient_at.cpu
_tgt = tensor_gradient_torque.cpu


def _pole_turn(pole, t, x, y, z, back):
    """``Q(t) x`` (``back``: ``Q(t)ᵀ x``) with Q the celestial-to-intermediate matrix tabulated in
    ``pole`` (:class:`components.environment.CelestialPole`, rows ``(t, Q row-major)`` evenly
    spaced), linear between nodes; NaN beyond the table (the row then fails, loudly). A one-row
    ``pole`` whose time is NaN is no table: x as it is, bit for bit."""
    t0 = pole[0, 0]
    if t0 != t0:
        return x, y, z
    k = pole.shape[0]
    dt = pole[1, 0] - t0
    u = (t - t0) / dt
    if not (u >= 0.0 and u <= (k - 1) * (1.0 + 1e-12)):
        return math.nan, math.nan, math.nan
    j = min(int(u), k - 2)
    w = u - j
    v = 1.0 - w                      # scalars, no array: the kernel allocates nothing (CPU and CUDA)
    m0 = v * pole[j, 1] + w * pole[j + 1, 1]
    m1 = v * pole[j, 2] + w * pole[j + 1, 2]
    m2 = v * pole[j, 3] + w * pole[j + 1, 3]
    m3 = v * pole[j, 4] + w * pole[j + 1, 4]
    m4 = v * pole[j, 5] + w * pole[j + 1, 5]
    m5 = v * pole[j, 6] + w * pole[j + 1, 6]
    m6 = v * pole[j, 7] + w * pole[j + 1, 7]
    m7 = v * pole[j, 8] + w * pole[j + 1, 8]
    m8 = v * pole[j, 9] + w * pole[j + 1, 9]
    if back:
        return m0 * x + m3 * y + m6 * z, m1 * x + m4 * y + m7 * z, m2 * x + m5 * y + m8 * z
    return m0 * x + m1 * y + m2 * z, m3 * x + m4 * y + m5 * z, m6 * x + m7 * y + m8 * z


pole_turn = dual(_pole_turn)
_pturn = pole_turn.cpu


def _inertial_to_field(t, x, y, z, spin, angle0, pole):
    """An inertial vector in the field frame: ``Rz(−θ) Q(t) x``, θ = angle0 + spin · t (θ = 0
    without a pole table leaves it untouched, bit for bit)."""
    x, y, z = _pturn(pole, t, x, y, z, False)
    if spin == 0.0 and angle0 == 0.0:
        return x, y, z
    th = angle0 + spin * t
    c = math.cos(th)
    s = math.sin(th)
    return c * x + s * y, -s * x + c * y, z


inertial_to_field = dual(_inertial_to_field)
_i2f = inertial_to_field.cpu


def _com_field_position(i, pos, att, com, time, spin, angle0, pole):
    """Centre of mass of row i in the field frame [m]: ``Rz(−θ) Q(t) (p + R(q) c)`` with
    ``θ = angle0 + spin · row_time`` (the field frame turns about the pole by θ) and Q the pole's
    precession and nutation (:func:`_pole_turn`), through :func:`_inertial_to_field`."""
    cx, cy, cz = _rot(att[i, 0], att[i, 1], att[i, 2], att[i, 3], com[i, 0], com[i, 1], com[i, 2])
    return _i2f(time[i], pos[i, 0] + cx, pos[i, 1] + cy, pos[i, 2] + cz, spin, angle0, pole)


def _field_to_inertial(t, gx, gy, gz, spin, angle0, pole):
    """A field-frame vector turned back to the inertial frame: ``Q(t)ᵀ Rz(θ) g``."""
    if spin != 0.0 or angle0 != 0.0:
        th = angle0 + spin * t
        c = math.cos(th)
        s = math.sin(th)
        gx, gy = c * gx - s * gy, s * gx + c * gy
    return _pturn(pole, t, gx, gy, gz, True)


field_to_inertial = dual(_field_to_inertial)
_f2i = field_to_inertial.cpu


def _add_field_weight(i, status, gx, gy, gz, mass, com, att, force, torque, time, spin, angle0, pole):
    """Add the weight of row i for the field-frame acceleration g, turned back to the inertial
    frame (:func:`_field_to_inertial`)."""
    gx, gy, gz = _f2i(time[i], gx, gy, gz, spin, angle0, pole)
    _weight(i, status, gx, gy, gz, mass, com, att, force, torque)


def _field_gradient_torque(ga, t, x, y, z, q0, q1, q2, q3, inertia, r, spin, angle0, pole):
    """Gravity-gradient torque [N·m, body axes] about the CoM of a body at (x, y, z) in the field
    frame with attitude q (body → inertial) at time t: the field's gradient Γ_F
    (:data:`systems.gravity.kernels.gravity_gradient_at`, every term of the field) turned into
    body axes, Γ_B = Bᵀ Γ_F B with B's columns the body axes in field components, then
    :data:`systems.gravity.kernels.tensor_gradient_torque`."""
    gxx, gyy, gzz, gxy, gxz, gyz = _grad_at(ga, x, y, z)
    ax, ay, az = _rot(q0, q1, q2, q3, 1.0, 0.0, 0.0)
    bx, by, bz = _rot(q0, q1, q2, q3, 0.0, 1.0, 0.0)
    cx, cy, cz = _rot(q0, q1, q2, q3, 0.0, 0.0, 1.0)
    ax, ay, az = _i2f(t, ax, ay, az, spin, angle0, pole)
    bx, by, bz = _i2f(t, bx, by, bz, spin, angle0, pole)
    cx, cy, cz = _i2f(t, cx, cy, cz, spin, angle0, pole)
    # Γ_F times each body axis, then the body axes' components of those
    pax, pay, paz = gxx * ax + gxy * ay + gxz * az, gxy * ax + gyy * ay + gyz * az, gxz * ax + gyz * ay + gzz * az
    pbx, pby, pbz = gxx * bx + gxy * by + gxz * bz, gxy * bx + gyy * by + gyz * bz, gxz * bx + gyz * by + gzz * bz
    pcx, pcy, pcz = gxx * cx + gxy * cy + gxz * cz, gxy * cx + gyy * cy + gyz * cz, gxz * cx + gyz * cy + gzz * cz
    return _tgt(inertia, r, ax * pax + ay * pay + az * paz, bx * pbx + by * pby + bz * pbz,
                cx * pcx + cy * pcy + cz * pcz, ax * pbx + ay * pby + az * pbz, ax * pcx + ay * pcy + az * pcz,
                bx * pcx + by * pcy + bz * pcz)


com_field_position = dual(_com_field_position)
add_field_weight = dual(_add_field_weight)
field_gradient_torque = dual(_field_gradient_torque, inline=False)
_fgt = field_gradient_torque.cpu
_com_pos = com_field_position.cpu
_add_fw = add_field_weight.cpu


# ------------------------------------------------------------------------------------------------
# one row kernel for every source kind: the one dispatch, systems.gravity.kernels.gravity_at
# ------------------------------------------------------------------------------------------------


def _add_gravity(i, status, pos, att, mass, com, inertia, force, torque, ga, time, spin, angle0, pole, gg):
    """Add the weight of row i in the field of the source packed in ``ga`` (:func:`gravity_args`),
    whose frame is turned by ``angle0 + spin · time[i]`` about the pole (``pole``: its precession
    and nutation, :func:`_pole_turn`); and, when ``gg`` is set, the gravity-gradient torque of the
    whole field about the row's CoM (:func:`_field_gradient_torque`)."""
    if status[i] != 0:
        return
    x, y, z = _com_pos(i, pos, att, com, time, spin, angle0, pole)
    _, gx, gy, gz = _grav(ga, x, y, z)
    _add_fw(i, status, gx, gy, gz, mass, com, att, force, torque, time, spin, angle0, pole)
    if gg:
        t0, t1, t2 = _fgt(ga, time[i], x, y, z, att[i, 0], att[i, 1], att[i, 2], att[i, 3], inertia, i, spin,
                          angle0, pole)
        torque[i, 0] += t0
        torque[i, 1] += t1
        torque[i, 2] += t2


add_gravity = dual(_add_gravity)
_k_grav = add_gravity.cpu


@cpu_parallel
def add_gravity_rows(n, status, pos, att, mass, com, inertia, force, torque, ga, time, spin, angle0, pole, gg):
    for i in prange(n):
        _k_grav(i, status, pos, att, mass, com, inertia, force, torque, ga, time, spin, angle0, pole, gg)


@cpu_jit
def gravity_term(s, data, params):
    """Row term (:mod:`ecs.terms`) of the source packed in ``(params.gkind, data.gs, …, data.gpfn)``
    (:func:`systems.gravity.kernels.gravity_args`) at the CoM (s.x, s.y, s.z), whose field frame is
    turned by ``θ = angle0 + spin · t`` about the pole (``data.pole``: :func:`_pole_turn`): the
    weight ``m g`` (inertial), and when ``params.gg`` is set the gravity-gradient torque of the whole
    field (body axes, ``data.body_inertia``), as :data:`add_gravity` does."""
    t, spin, angle0, pole = s.t, params.spin, params.angle0, data.pole
    xf, yf, zf = _i2f(t, s.x, s.y, s.z, spin, angle0, pole)
    ga = GravityArgs(np.int64(params.gkind), data.gs, data.gvox, data.gpv, data.gpe, data.gped, data.gpel, data.gpf,
                     data.gpfn)
    _, gfx, gfy, gfz = _grav(ga, xf, yf, zf)
    gx, gy, gz = _f2i(t, gfx, gfy, gfz, spin, angle0, pole)
    tx = 0.0
    ty = 0.0
    tz = 0.0
    if params.gg:
        tx, ty, tz = _fgt(ga, t, xf, yf, zf, s.q0, s.q1, s.q2, s.q3, data.body_inertia, s.i, spin, angle0, pole)
    return s.mass * gx, s.mass * gy, s.mass * gz, tx, ty, tz


#: Source kinds whose gravity gradient is known analytically (systems.gravity.kernels.gravity_gradient_at).
GRADIENT_KINDS = ("point_mass", "ellipsoid", "polyhedron", "linearized", "harmonics")

#: A polyhedron row costs ~n_faces × 50 ns, so even a handful of rows is worth a parallel launch.
ALWAYS_PARALLEL = ("polyhedron",)

COLUMNS = ("body_position", "body_attitude", "body_mass", "body_com", "body_inertia", "body_force", "body_torque",
           "row_time")


class GravitySystem(System):
    """Gravity of one source acting at the centre of mass of every row with mass.

    Args:
        source: a :class:`components.gravity.GravitySource` (point mass, ellipsoid, polyhedron,
            voxel field, linearised field, spherical harmonics). Default: the world's gravity resource
            (``world.add_resource(source)``), looked up at bind time.
        spin: rate [rad/s] at which the source's field frame turns about the inertial z axis (a
            planet's rotation: 7.292115e-5 rad/s for the Earth; 0: the field frame is inertial).
        angle0: the turn [rad] of the field frame at t = 0 (e.g. the Earth rotation angle at the
            epoch).
        pole: the precession and nutation of the axis the field frame turns about, a
            :class:`components.environment.CelestialPole` (the Earth's, IAU 2006/2000A: the frame
            is then ``R3(θ) Q(t)`` of the celestial one); ``None`` (default): the inertial z axis.
            A run past the pole table's span is refused (and a stage past it is NaN).
        gradient_torque: add each body's gravity-gradient torque about its CoM from the whole
            field's gradient Γ at the CoM, ``τ = −ε_ijk (I Γ_B)_jk`` (for a point mass
            ``3μ/|r|⁵ r_b × (I r_b)``, seed 001 MBGravityTorque; with spherical harmonics every
            degree's gradient, not only the central term's). A voxel field has no gradient and is
            refused. Off by default: the field then acts at the CoM as on a point.
    """

    phase = Phase.DERIVATIVE
    reads = ("body_position", "body_attitude", "body_mass", "body_com")
    accumulates = ("body_force", "body_torque")

    def __init__(self, source: GravitySource | None = None, *, spin: float = 0.0, angle0: float = 0.0,
                 gradient_torque: bool = False, pole: CelestialPole | None = None):
        if source is not None and not isinstance(source, GravitySource):
            raise InputError("GravitySystem.source", type(source).__name__,
                             "must be a components.gravity source (PointMass, Ellipsoid, Polyhedron, VoxelField, "
                             "LinearizedGravity, SphericalHarmonics)")
        self._source = source
        self.source: GravitySource | None = source
        for name, v in (("spin", spin), ("angle0", angle0)):
            if not math.isfinite(float(v)):
                raise InputError(f"GravitySystem.{name}", v, "must be a finite number (rad/s, rad)")
        self.spin, self.angle0 = float(spin), float(angle0)
        self.gradient_torque = bool(gradient_torque)
        if pole is not None and not isinstance(pole, CelestialPole):
            raise InputError("GravitySystem.pole", type(pole).__name__,
                             "must be a components.environment.CelestialPole (CelestialPole.iau2006(...)) or None")
        self.pole = pole
        self._pole = pole.table if pole is not None else np.full((1, 10), np.nan)

    def _resolve(self, world) -> GravitySource:
        src = self._source
        if src is None:
            src = world.resource(GravitySource, None)
            if src is None:
                raise InputError("GravitySystem.source", None,
                                 "no gravity source: pass one to GravitySystem(...) or world.add_resource(source)")
        if src.kind not in GRAVITY_KINDS:
            raise InputError("GravitySystem.source", type(src).__name__, f"kind {src.kind!r} has no field kernel")
        if self.gradient_torque and src.kind not in GRADIENT_KINDS:
            raise InputError("GravitySystem.gradient_torque", True,
                             f"needs a source with a gravity gradient ({', '.join(GRADIENT_KINDS)}); a "
                             f"{src.kind} source interpolates U and g only")
        return src

    def bind(self, world) -> None:
        src = self.source = self._resolve(world)
        self._driver = add_gravity_rows.parallel if src.kind in ALWAYS_PARALLEL else add_gravity_rows
        self._row = add_gravity
        if src.kind == "user":          # copies of the kernels linked against the user's field
            k = specialise({**add_gravity_rows.roots("add_gravity_rows"), "add_gravity": add_gravity.cpu},
                           {gravity_at.cpu: gravity_at_for(src)})
            self._driver, self._row = RowDriver.linked(k, "add_gravity_rows"), k["add_gravity"]
        self.tables = world.tables_with(*COLUMNS)
        self._params = to_backend(world.backend, (gravity_args(src),))[0]
        self._pole_dev = to_backend(world.backend, (self._pole,))[0]
        self._gg = 1.0 if self.gradient_torque else 0.0

    def process(self, frame) -> None:
        if self.pole is not None and frame.t + frame.dt > self.pole.span * (1.0 + 1e-12):
            raise InputError("GravitySystem.pole", f"frame end {frame.t + frame.dt} s",
                             f"must be within the pole table, span = {self.pole.span} s (CelestialPole.iau2006's span)")
        for t in self.tables:
            launch_rows(frame.backend, self._driver, self._row, t.row_count, t["row_status"], t["body_position"],
                        t["body_attitude"], t["body_mass"], t["body_com"], t["body_inertia"], t["body_force"],
                        t["body_torque"], self._params, t["row_time"], self.spin, self.angle0, self._pole_dev,
                        self._gg)

    def term(self, world) -> Term:
        """This field as a row term (:func:`gravity_term`): the multibody links feel it at their own
        CoM, with the gradient torque when ``gradient_torque`` is set."""
        src = self._resolve(world)
        ga = gravity_args(src)
        kernel = gravity_term if src.kind != "user" else \
            specialise({"gravity_term": gravity_term}, {gravity_at.cpu: gravity_at_for(src)})["gravity_term"]
        return Term("gravity", kernel, columns=("body_inertia",), torque=self.gradient_torque,
                    attitude=self.gradient_torque, gravity=True,
                    arrays={**dict(zip(("gs", "gvox", "gpv", "gpe", "gped", "gpel", "gpf", "gpfn"), ga[1:])),
                            "pole": self._pole},
                    params={"gkind": float(ga.kind), "spin": self.spin, "angle0": self.angle0,
                            "gg": 1.0 if self.gradient_torque else 0.0},
                    source=src,
                    turning_refusal=None if self.spin == 0.0 else (
                        f"{self.name}.spin", self.spin, "must be 0 in the turning frame {frame!r} (a field fixed in "
                        "that frame turns with it; the spin would turn it a second time)"))
