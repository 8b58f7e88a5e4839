"""Where a probe meets the terrain (seed 004 §2.2–2.3): the terrain query the deployment kernels
inline, the target-frame position and terrain distance of a vertex, the probe's clearance (the
flight event function, with its coarse broadphase) and the contact normal with its rate along the
point's velocity (eq 2.104).

Every kernel is written once for the CPU and the GPU (:func:`ecs.kernels.dual_call`); the phase
kernels (:mod:`systems.deployment.fly`, :mod:`systems.deployment.contact`,
:mod:`systems.deployment.collide`), their edges (:mod:`systems.deployment.events`) and the contact
wrench (:mod:`systems.deployment.physics`) call them. ``ta`` is always
:func:`systems.terrain.sdf.terrain_args` (a :data:`~systems.terrain.sdf.TerrainArgs` record, read by
name); a state is read at ``w[ys:]`` of a row's work array (the layout of
:mod:`systems.deployment.physics`).
"""

from __future__ import annotations

import math

from ecs.attitude import quat_rotate_call
from ecs.kernels import dual, dual_call
from systems.terrain.sdf import eval_terrain_point, sample_sdf_grid, sample_sdf_grid_full, sample_sdf_grid_value
from systems.deployment.records import S_Q

_rot = quat_rotate_call.cpu
_terrain = eval_terrain_point.cpu
_grid = sample_sdf_grid.cpu
_grid_full = sample_sdf_grid_full.cpu
_grid_value = sample_sdf_grid_value.cpu


# ------------------------------------------------------------------------------------ terrain and vertices
def _terrain_at_any(ta, x, y, z):
    """Terrain distance and gradient at (x, y, z), any terrain; ``ta`` is systems.terrain.sdf.terrain_args."""
    return _terrain(ta, x, y, z)


terrain_at_any = dual_call(_terrain_at_any)
_tat_any = terrain_at_any.cpu


def _terrain_at(ta, x, y, z):
    """Terrain distance and gradient at (x, y, z); ``ta`` is systems.terrain.sdf.terrain_args (a
    TerrainArgs record).

    Inlined where it is called: a bare grid (no fBm, seeded rocks or rock field) is sampled by one
    call of :data:`systems.terrain.sdf.sample_sdf_grid` (the grid and nine numbers); any other terrain goes
    through one call of :data:`terrain_at_any`. Calling the whole terrain evaluation as a function
    cost ~200 ns per query in passing its 25 arguments (three queries of a grid: 640 ns as calls,
    160 ns inlined, measured), and the contact and event kernels make several queries per vertex.
    (Inlining the grid sampler too cost 5.7 s of cold compile time, at 17 call sites, for no
    measurable run time.)
    """
    if ta.base_kind == 0 and ta.fbm_octaves == 0 and ta.psr_on == 0 and ta.rock_on == 0:
        return _grid(ta.grid, ta.ox, ta.oy, ta.oz, ta.hx, ta.hy, ta.hz, x, y, z)
    return _tat_any(ta, x, y, z)


terrain_at = dual(_terrain_at)
_tat = terrain_at.cpu


def _terrain_at_grid(ta, x, y, z):
    """:data:`terrain_at` of a bare grid terrain (:func:`systems.terrain.sdf.is_bare_grid`): the grid
    sampler alone. A deployment on such a terrain swaps it in for :data:`terrain_at`
    (:func:`ecs.terms.specialise`), so that its kernels do not compile the general terrain
    evaluation they would never run."""
    return _grid(ta.grid, ta.ox, ta.oy, ta.oz, ta.hx, ta.hy, ta.hz, x, y, z)


terrain_at_grid = dual(_terrain_at_grid)


def _terrain_distance(ta, x, y, z):
    """Terrain distance [m] at (x, y, z): :data:`terrain_at`'s first number to the bit. A bare grid
    is sampled without the gradient (:data:`systems.terrain.sdf.sample_sdf_grid_value`: 17.6
    against 28.8 ns a query), what the clearances of flight and contact motion ask of every vertex."""
    if ta.base_kind == 0 and ta.fbm_octaves == 0 and ta.psr_on == 0 and ta.rock_on == 0:
        return _grid_value(ta.grid, ta.ox, ta.oy, ta.oz, ta.hx, ta.hy, ta.hz, x, y, z)
    return _tat_any(ta, x, y, z)[0]


terrain_distance = dual(_terrain_distance)
_tdist = terrain_distance.cpu


def _terrain_distance_grid(ta, x, y, z):
    """:data:`terrain_distance` of a bare grid terrain, swapped in as :data:`terrain_at_grid` is."""
    return _grid_value(ta.grid, ta.ox, ta.oy, ta.oz, ta.hx, ta.hy, ta.hz, x, y, z)


terrain_distance_grid = dual(_terrain_distance_grid)


def _vertex_world(w, ys, vpos, v):
    """Target-frame position of vertex v (body frame about the CoM) at the state w[ys:]."""
    q0, q1, q2, q3 = w[ys + S_Q], w[ys + S_Q + 1], w[ys + S_Q + 2], w[ys + S_Q + 3]
    s = 1.0 / math.sqrt(q0 * q0 + q1 * q1 + q2 * q2 + q3 * q3)
    rx, ry, rz = _rot(q0 * s, q1 * s, q2 * s, q3 * s, vpos[v, 0], vpos[v, 1], vpos[v, 2])
    return w[ys] + rx, w[ys + 1] + ry, w[ys + 2] + rz


vertex_world = dual_call(_vertex_world)
_vworld = vertex_world.cpu


def _vertex_distance(w, ys, ta, vpos, v):
    """Terrain distance [m] of vertex v at the state w[ys:]."""
    px, py, pz = _vworld(w, ys, vpos, v)
    return _tdist(ta, px, py, pz)


vertex_distance = dual_call(_vertex_distance)
_vdist = vertex_distance.cpu


def _clearance(w, ys, ta, vpos, v0, v1, sphere_r, bound_r):
    """Event function: smallest terrain distance of the probe [m] at the state w[ys:], and the
    terrain distance of its CoM [m] (flight's step limit, :data:`systems.deployment.fly.flight_reach`).

    Broadphase (seed §2.2.2's coarse test): while the CoM's distance exceeds twice the bounding
    radius plus 1 m, the first number is ``d(CoM) − r_bound`` — a lower bound of every vertex's
    distance for a distance field (1-Lipschitz), never zero there — without touching the vertices.
    A sphere probe (``sphere_r > 0``) is its centre's distance minus its radius.
    """
    dc = _tdist(ta, w[ys], w[ys + 1], w[ys + 2])
    if sphere_r > 0.0:
        return dc - sphere_r, dc
    if dc > 2.0 * bound_r + 1.0:
        return dc - bound_r, dc
    best = math.inf
    v = v0
    while v < v1:
        best = min(best, _vdist(w, ys, ta, vpos, v))
        v += 1
    return best, dc


clearance = dual_call(_clearance)



# ------------------------------------------------------------------------------------ contact normal
def _grad_at(ta, x, y, z):
    _, nx, ny, nz = _tat(ta, x, y, z)
    return nx, ny, nz


grad_at = dual(_grad_at)
_gradf = grad_at.cpu

#: Step of the central difference that gives the normal's rate Ṅ = |∇d|⁻¹ [T] (∇∇d v) (eq 2.104)
#: from two gradients along v [m]: one source for analytic shapes, noise, rocks and grids under them
#: (a bare grid has its Hessian in closed form: :data:`normal_and_rate_grid`).
NORMAL_RATE_STEP = 1e-3


def _normal_and_rate(ta, px, py, pz, vx, vy, vz):
    """Unit normal N = ∇d/|∇d| at p and its rate Ṅ along the point velocity v (eq 2.104)."""
    gx, gy, gz = _gradf(ta, px, py, pz)
    gn = math.sqrt(gx * gx + gy * gy + gz * gz)
    nx, ny, nz = gx / gn, gy / gn, gz / gn
    sp = math.sqrt(vx * vx + vy * vy + vz * vz)
    if sp == 0.0:
        return nx, ny, nz, 0.0, 0.0, 0.0
    e = NORMAL_RATE_STEP / sp
    ax, ay, az = _gradf(ta, px + e * vx, py + e * vy, pz + e * vz)
    bx, by, bz = _gradf(ta, px - e * vx, py - e * vy, pz - e * vz)
    k = 0.5 / (e * gn)           # (∇d(p + εv̂) − ∇d(p − εv̂)) |v| / (2ε |∇d|)
    hx, hy, hz = (ax - bx) * k, (ay - by) * k, (az - bz) * k
    dn = hx * nx + hy * ny + hz * nz
    return nx, ny, nz, hx - dn * nx, hy - dn * ny, hz - dn * nz


normal_and_rate = dual_call(_normal_and_rate)
_nrate = normal_and_rate.cpu


def _normal_and_rate_grid(ta, px, py, pz, vx, vy, vz):
    """:data:`normal_and_rate` of a bare grid terrain (:func:`systems.terrain.sdf.is_bare_grid`),
    from the one query that gives the normal: Ṅ = |∇d|⁻¹ [I − N Nᵀ] (∇∇d v) (eq 2.104) with the
    trilinear field's own Hessian (eq 2.20). Inside a cell the general kernel's central difference
    is exact too (the trilinear gradient is quadratic along a line), so the two agree to round-off
    there; this one makes one grid query instead of three. A deployment on such a terrain swaps it
    in (:func:`ecs.terms.specialise`), as it does :data:`terrain_at_grid`."""
    _, gx, gy, gz, hxx, hyy, hzz, hxy, hxz, hyz = _grid_full(ta.grid, ta.ox, ta.oy, ta.oz, ta.hx, ta.hy, ta.hz,
                                                             px, py, pz)
    gn = math.sqrt(gx * gx + gy * gy + gz * gz)
    nx, ny, nz = gx / gn, gy / gn, gz / gn
    hx = (hxx * vx + hxy * vy + hxz * vz) / gn
    hy = (hxy * vx + hyy * vy + hyz * vz) / gn
    hz = (hxz * vx + hyz * vy + hzz * vz) / gn
    dn = hx * nx + hy * ny + hz * nz
    return nx, ny, nz, hx - dn * nx, hy - dn * ny, hz - dn * nz


normal_and_rate_grid = dual_call(_normal_and_rate_grid)
