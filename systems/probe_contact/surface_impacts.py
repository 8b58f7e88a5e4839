"""Stronge collisions from numpy and as a system: :func:`resolve_impacts` resolves one impact per row
(contact point, normal, velocities, restitution, friction and rolling resistance given as arrays)
with the kernels of :mod:`systems.probe_contact.collision` and returns an :class:`ImpactResult`;
:func:`kinetic_energy` is the check every impact passes (ΔT ≤ 0); :class:`ResolveSurfaceImpacts`
resolves the touching vertices of rigid bodies on a flat surface at each frame (the multi-vertex
policy of :data:`systems.probe_contact.collision.vertex_impacts_row`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from components.contact_params import PAIR_FIELD_COUNT
from ecs import InputError, Phase, System
from ecs.kernels import launch_rows, to_backend, to_host
from systems.probe_contact.collision import WORK_SIZE, impact_row, impact_rows, vertex_impacts_rows


@dataclass
class ImpactResult:
    """Outcome of a batch of single-vertex impacts (arrays with the batch's leading axis n).

    Attributes:
        velocity: post-impact CoM velocity [m/s], [n, 3], target frame.
        omega: post-impact angular velocity [rad/s], [n, 3], body axes.
        impulse: total contact impulse P [N s], [n, 3], target frame (friction + normal).
        normal_impulse: final normal impulse p [N s], [n] (>= 0).
        compression_work: work of the normal impulse during compression W_c [J], [n] (<= 0).
        status: IMPACT_* code per impact, [n] int8.
        flags: FLAG_* bit set per impact, [n] int8.
        steps: slip integration steps taken, [n] int32.
    """

    velocity: np.ndarray
    omega: np.ndarray
    impulse: np.ndarray
    normal_impulse: np.ndarray
    compression_work: np.ndarray
    status: np.ndarray
    flags: np.ndarray
    steps: np.ndarray


def _as(a, shape_tail, n, name):
    arr = np.asarray(a, dtype=np.float64)
    if arr.shape == shape_tail:
        arr = np.broadcast_to(arr, (n,) + shape_tail)
    if arr.shape != (n,) + shape_tail:
        raise InputError(name, arr.shape, f"must have shape {shape_tail} or ({n}, {', '.join(map(str, shape_tail))})"
                                          .replace(", )", ")"))
    if not np.all(np.isfinite(arr)):
        raise InputError(name, "NaN/inf", "must be finite")
    return np.array(arr, dtype=np.float64, order="C")  # writable copy: one compiled signature


def resolve_impacts(*, mass, inertia, contact_point, normal, velocity, omega, restitution, friction,
                    attitude=None, rolling=None, wstar: float = 1e-3, rtol: float = 1e-10,
                    max_steps: int = 10_000, backend: str = "cpu") -> ImpactResult:
    """Resolve a batch of independent single-vertex impacts on a static surface (Stronge's model).

    Every argument may be given per impact (leading axis n) or once for all (broadcast).

    Args:
        mass: body mass [kg], [n] or scalar, > 0.
        inertia: inertia about the CoM [kg m²], body axes, [n, 3, 3] or [3, 3] (or 3 principal moments).
        contact_point: contact point relative to the CoM [m], body axes, [n, 3].
        normal: unit surface normal pointing toward the body [1], target frame, [n, 3].
        velocity: CoM velocity [m/s], target frame, [n, 3].
        omega: angular velocity [rad/s], body axes, [n, 3].
        restitution: energetic coefficient of restitution e in [0, 1], [n] or scalar.
        friction: Coulomb coefficient f >= 0, [n] or scalar.
        attitude: body → target unit quaternion (scalar-first), [n, 4]; default identity (then
            every vector is in one frame).
        rolling: ``C_RR · R`` per body axis [m], [n, 3] or [3] (default none).
        wstar: rolling regularisation rate ω* [rad/s] (eq 2.87).
        rtol: relative tolerance of the slip integration.
        max_steps: cap on slip integration steps per impact (status IMPACT_STEP_LIMIT beyond).
        backend: "cpu" or "gpu".

    Returns:
        :class:`ImpactResult`.

    Raises:
        InputError: bad shapes, non-finite values, mass <= 0, e outside [0, 1], f < 0, a zero normal.
    """
    pts = np.asarray(contact_point, dtype=np.float64)
    n = 1 if pts.ndim == 1 else pts.shape[0]
    m = _as(mass, (), n, "mass")
    if np.any(m <= 0):
        raise InputError("mass", float(m.min()), "must be > 0 kg")
    I = np.asarray(inertia, dtype=np.float64)
    if I.shape[-1:] == (3,) and I.ndim in (1, 2) and I.shape != (3, 3):
        I = np.einsum("...i,ij->...ij", I, np.eye(3))
    I = _as(I, (3, 3), n, "inertia")
    scale = np.abs(I).max(axis=(1, 2), keepdims=True)
    if np.any(np.abs(I - np.swapaxes(I, -1, -2)) > 1e-10 * scale):
        raise InputError("inertia", "asymmetric", "must be a symmetric tensor")
    I = np.ascontiguousarray(0.5 * (I + np.swapaxes(I, -1, -2)))
    if np.any(np.linalg.eigvalsh(I) <= 0):
        raise InputError("inertia", "not positive definite", "must be positive definite")
    r = _as(contact_point, (3,), n, "contact_point")
    N = _as(normal, (3,), n, "normal")
    nn = np.linalg.norm(N, axis=1)
    if np.any(nn <= 0):
        raise InputError("normal", "zero vector", "must be a non-zero vector (unit)")
    v = _as(velocity, (3,), n, "velocity")
    w = _as(omega, (3,), n, "omega")
    e = _as(restitution, (), n, "restitution")
    if np.any((e < 0) | (e > 1)):
        raise InputError("restitution", float(e[(e < 0) | (e > 1)][0]), "must be in [0, 1]")
    f = _as(friction, (), n, "friction")
    if np.any(f < 0):
        raise InputError("friction", float(f.min()), "must be >= 0")
    q = _as((1.0, 0.0, 0.0, 0.0) if attitude is None else attitude, (4,), n, "attitude")
    if np.any(np.abs(np.linalg.norm(q, axis=1) - 1.0) > 1e-6):
        raise InputError("attitude", "non-unit quaternion", "must be unit quaternions (scalar-first)")
    rr = _as((0.0, 0.0, 0.0) if rolling is None else rolling, (3,), n, "rolling")
    if np.any(rr < 0):
        raise InputError("rolling", float(rr.min()), "must be >= 0 (C_RR · R per body axis, m)")
    if not (rtol > 0 and math.isfinite(rtol)):
        raise InputError("rtol", rtol, "must be a positive finite tolerance")
    if not (wstar >= 0 and math.isfinite(wstar)):
        raise InputError("wstar", wstar, "must be >= 0 rad/s")
    if int(max_steps) < 1:
        raise InputError("max_steps", max_steps, "must be >= 1")
    if backend not in ("cpu", "gpu"):
        raise InputError("backend", backend, "must be 'cpu' or 'gpu'")
    out = ImpactResult(np.empty((n, 3)), np.empty((n, 3)), np.empty((n, 3)), np.empty(n), np.empty(n),
                       np.empty(n, np.int8), np.empty(n, np.int8), np.empty(n, np.int32))
    work = np.zeros((n, WORK_SIZE))
    args = (work, m, I, q, r, N, v, w, e, f, rr, (float(wstar), float(rtol), int(max_steps)),
            (out.velocity, out.omega, out.impulse, out.normal_impulse, out.compression_work, out.status, out.flags,
             out.steps))
    if backend == "gpu":      # device copies (or the simulator's), the outputs copied back
        dargs = to_backend("gpu", args)
        launch_rows("gpu", impact_rows, impact_row, n, *dargs)
        for a, d in zip(args[-1], dargs[-1]):
            a[...] = to_host(d)
    else:
        launch_rows("cpu", impact_rows, impact_row, n, *args)
    return out


def kinetic_energy(mass, inertia, velocity, omega) -> np.ndarray:
    """``½ m |v|² + ½ ωᵀ I ω`` [J] of CoM velocity (any frame) and body-axes ω / inertia; [n]."""
    m = np.asarray(mass, float)
    I = np.asarray(inertia, float)
    v = np.asarray(velocity, float)
    w = np.asarray(omega, float)
    return 0.5 * m * np.einsum("...i,...i->...", v, v) + 0.5 * np.einsum("...i,...ij,...j->...", w, I, w)


# ===================================================================================== EVENT system
class ResolveSurfaceImpacts(System):
    """EVENT phase: resolve the impacts of every body's touching vertices on an analytic surface.

    A building block for the deployment phases (a later issue): when an integrator localises a
    touchdown it calls ``frame.run_events()``; this system then finds the body's vertices within
    ``contact_distance`` of the surface (or below it) and applies the multi-vertex policy with
    Stronge impacts (see the module docstring). The body's shape is given here as its vertex list;
    the probe components of the terrain issue will replace these arguments.

    Args:
        surface: an analytic surface from :mod:`systems.probe_contact.contact_motion` (PlaneSurface, SphereSurface).
        vertices: [K, 3] vertex positions relative to the body reference point [m], body axes.
        vertex_types: [K] VERTEX_CORNER/EDGE/FACE (default: all corners).
        vertex_dirs: [K, 3] edge direction or outward face normal per vertex, body axes.
        params: the material pair's :class:`~components.contact_params.ContactParams`.
        rolling_mask, rolling_radius: axes the body rolls about and its rolling radius [m].
        contact_distance: a vertex touches when its signed distance is <= this [m].
        max_iter, approach_tol: multi-vertex policy cap and approach tolerance [m/s].
    """

    phase = Phase.EVENT
    reads = ("body_position", "body_attitude", "body_mass", "body_inertia", "body_com")
    writes = ("body_velocity", "body_omega")

    def __init__(self, surface, vertices, *, params, vertex_types=None, vertex_dirs=None,
                 rolling_mask=(1.0, 1.0, 1.0), rolling_radius: float = 0.0, contact_distance: float = 1e-9,
                 wstar: float = 1e-3, rtol: float = 1e-10, max_steps: int = 10_000, max_iter: int = 100,
                 approach_tol: float = 1e-9):
        from components.contact_params import ContactParams

        self.surface = surface
        self.vertices = np.ascontiguousarray(np.asarray(vertices, float).reshape(-1, 3))
        k = self.vertices.shape[0]
        if k == 0 or not np.all(np.isfinite(self.vertices)):
            raise InputError("vertices", np.asarray(vertices).shape, "must be a finite [K, 3] array with K >= 1")
        self.vertex_types = np.zeros(k, np.int8) if vertex_types is None else np.asarray(vertex_types, np.int8)
        self.vertex_dirs = np.zeros((k, 3)) if vertex_dirs is None else np.asarray(vertex_dirs, float)
        if self.vertex_types.shape != (k,) or np.any((self.vertex_types < 0) | (self.vertex_types > 2)):
            raise InputError("vertex_types", self.vertex_types.tolist(), f"must be {k} codes in {{0, 1, 2}}")
        if self.vertex_dirs.shape != (k, 3):
            raise InputError("vertex_dirs", self.vertex_dirs.shape, f"must have shape ({k}, 3)")
        if not isinstance(params, ContactParams):
            raise InputError("params", params, "must be a ContactParams")
        if params.law is not None:
            raise InputError("params.law", params.law.name, "is linked by the deployment only: this system resolves "
                             "impacts with the constant or the regolith restitution")
        self.pair_row = params.row()
        self.rolling_mask = np.asarray(rolling_mask, float)
        self.rolling_radius = float(rolling_radius)
        self.contact_distance = float(contact_distance)
        self.wstar, self.rtol, self.max_steps = float(wstar), float(rtol), int(max_steps)
        self.max_iter, self.approach_tol = int(max_iter), float(approach_tol)
        self.last_status = None
        self.last_count = None

    def bind(self, world) -> None:
        self.tables = world.tables_with("body_position", "body_velocity", "body_attitude", "body_omega",
                                        "body_mass", "body_inertia", "body_com")

    def process(self, frame) -> None:
        from ecs.attitude import quat_rotate as qrot

        for t in self.tables:
            n = t.row_count
            K = self.vertices.shape[0]
            att = t["body_attitude"]
            att = np.ascontiguousarray(att / np.linalg.norm(att, axis=1, keepdims=True))
            com = t["body_com"]
            w = t["body_omega"]
            # vertex positions (target frame), surface distance and normal
            pos = t["body_position"][:, None, :] + qrot(att[:, None, :], np.broadcast_to(self.vertices, (n, K, 3)))
            d, grad, _ = self.surface.evaluate(pos.reshape(-1, 3))
            sn = np.ascontiguousarray((grad / np.linalg.norm(grad, axis=1, keepdims=True)).reshape(n, K, 3))
            touching = (d.reshape(n, K) <= self.contact_distance).astype(np.int8)
            touching[t["row_status"] != 0] = 0
            # the kernel works at the CoM: vertices from the CoM, CoM velocity (target frame)
            if n and not np.all(com == com[:1]):
                raise InputError("body_com", "differs between rows", "ResolveSurfaceImpacts needs one CoM offset")
            verts = np.ascontiguousarray(self.vertices - (com[0] if n else 0.0))
            vcom = np.ascontiguousarray(t["body_velocity"] + qrot(att, np.cross(w, com)))
            pair = np.ascontiguousarray(np.broadcast_to(self.pair_row, (n, PAIR_FIELD_COUNT)))
            status = np.zeros(n, np.int8)
            count = np.zeros(n, np.int32)
            work = np.zeros((n, WORK_SIZE))
            vertex_impacts_rows(n, work, np.ascontiguousarray(t["body_mass"]), np.ascontiguousarray(t["body_inertia"]),
                                att, vcom, w, (verts, self.vertex_types, self.vertex_dirs), sn, touching, pair,
                                (self.rolling_mask, self.rolling_radius),
                                (self.wstar, self.rtol, self.max_steps, self.max_iter, self.approach_tol),
                                (status, count))
            t["body_velocity"][...] = vcom - qrot(att, np.cross(w, com))
            self.last_status, self.last_count = status, count
