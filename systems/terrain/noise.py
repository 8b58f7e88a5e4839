"""fBm value noise (seed 004 eqs 2.24–2.32) and procedurally seeded rocks (eqs 2.34–2.39): the
relief and rock texture :mod:`systems.terrain.sdf` adds to a base shape."""

from __future__ import annotations

import math

from ecs.kernels import dual


# ==================================================================================================
# fBm value noise (eqs 2.24–2.32) and procedurally seeded rocks (eqs 2.34–2.39)
# ==================================================================================================


def _wrap(i, n):
    """``i mod n`` in [0, n) for any integer-valued float i (negative too)."""
    return int(i - n * math.floor(i / n))


wrap = dual(_wrap)
_c_wrap = wrap.cpu


def _periodic_cell(n, u, v, w):
    """The cell of a periodic lattice of ``n`` nodes per side that holds (u, v, w) [nodes]: its
    corner indices ``(i0, i1, j0, j1, k0, k1)`` (wrapped) and the weights ``(tu, tv, tw)`` in [0, 1)."""
    fu = math.floor(u)
    fv = math.floor(v)
    fw = math.floor(w)
    i0 = _c_wrap(fu, n)
    j0 = _c_wrap(fv, n)
    k0 = _c_wrap(fw, n)
    i1 = i0 + 1 if i0 + 1 < n else 0
    j1 = j0 + 1 if j0 + 1 < n else 0
    k1 = k0 + 1 if k0 + 1 < n else 0
    return i0, i1, j0, j1, k0, k1, u - fu, v - fv, w - fw


periodic_cell = dual(_periodic_cell)
_pcell = periodic_cell.cpu


def _trilinear_cell(a, b, c, d, e, f, g, h, tu, tv, tw):
    """Trilinear blend of one cell's corner values (a, b, c, d, e, f, g, h at (0,0,0), (1,0,0),
    (0,1,0), (1,1,0), (0,0,1), (1,0,1), (0,1,1), (1,1,1)) at weights (tu, tv, tw) in [0, 1]: the
    value, its derivatives along u, v, w and the mixed coefficients k4..k7 (seed 004 eqs 2.17–2.20;
    the SDF grid, fBm value noise and the rock texture all blend this way).
    Returns ``(value, ∂u, ∂v, ∂w, k4, k5, k6, k7)``."""
    k1 = b - a
    k2 = c - a
    k3 = e - a
    k4 = a - b - c + d
    k5 = a - c - e + g
    k6 = a - b - e + f
    k7 = -a + b + c + e - d - g - f + h
    val = a + k1 * tu + k2 * tv + k3 * tw + k4 * tu * tv + k5 * tv * tw + k6 * tu * tw + k7 * tu * tv * tw
    gu = k1 + k4 * tv + k6 * tw + k7 * tv * tw
    gv = k2 + k5 * tw + k4 * tu + k7 * tu * tw
    gw = k3 + k6 * tu + k5 * tv + k7 * tu * tv
    return val, gu, gv, gw, k4, k5, k6, k7


trilinear_cell = dual(_trilinear_cell)
_cell = trilinear_cell.cpu


def _value_noise(lat, u, v, w):
    """Quintic-smoothed trilinear value noise of a periodic lattice (eq 2.24 in 3-D).

    Coordinates in lattice cells. Returns ``(value, du, dv, dw)`` (derivatives per cell).
    """
    i0, i1, j0, j1, k0, k1, tu, tv, tw = _pcell(lat.shape[0], u, v, w)
    # quintic smoother t_q = t³ (t (6t - 15) + 10) and its derivative 30 t² (t - 1)²
    su = tu * tu * tu * (tu * (6.0 * tu - 15.0) + 10.0)
    sv = tv * tv * tv * (tv * (6.0 * tv - 15.0) + 10.0)
    sw = tw * tw * tw * (tw * (6.0 * tw - 15.0) + 10.0)
    du = 30.0 * tu * tu * (tu - 1.0) * (tu - 1.0)
    dv = 30.0 * tv * tv * (tv - 1.0) * (tv - 1.0)
    dw = 30.0 * tw * tw * (tw - 1.0) * (tw - 1.0)
    val, cu, cv, cw, _, _, _, _ = _cell(lat[i0, j0, k0], lat[i1, j0, k0], lat[i0, j1, k0], lat[i1, j1, k0],
                                        lat[i0, j0, k1], lat[i1, j0, k1], lat[i0, j1, k1], lat[i1, j1, k1], su, sv, sw)
    gu = du * cu
    gv = dv * cv
    gw = dw * cw
    return val, gu, gv, gw


value_noise = dual(_value_noise)
_c_value_noise = value_noise.cpu


def _eval_fbm(lat, a0, f0, lacunarity, gain, octaves, x, y, z):
    """fBm noise ``Σ_{i<octaves} A_i u(f_i x)`` [m] and its gradient (eqs 2.26–2.27).

    ``A_i = a0 gain^i`` (gain = L^{-H}), ``f_i = f0 L^i``; ``u`` is :func:`_value_noise`.
    """
    n = 0.0
    gx = 0.0
    gy = 0.0
    gz = 0.0
    amp = a0
    freq = f0
    for _ in range(octaves):
        v, du, dv, dw = _c_value_noise(lat, freq * x, freq * y, freq * z)
        n += amp * v
        gx += amp * freq * du
        gy += amp * freq * dv
        gz += amp * freq * dw
        amp *= gain
        freq *= lacunarity
    return n, gx, gy, gz


eval_fbm = dual(_eval_fbm)
_fbm = eval_fbm.cpu


def _periodic_trilinear(tex, u, v, w):
    """Plain trilinear sample of a periodic texture at (u, v, w) [texture nodes]; value + gradient."""
    i0, i1, j0, j1, k0, k1, tu, tv, tw = _pcell(tex.shape[0], u, v, w)
    val, gu, gv, gw, _, _, _, _ = _cell(tex[i0, j0, k0], tex[i1, j0, k0], tex[i0, j1, k0], tex[i1, j1, k0],
                                        tex[i0, j0, k1], tex[i1, j0, k1], tex[i0, j1, k1], tex[i1, j1, k1], tu, tv, tw)
    return val, gu, gv, gw


periodic_trilinear = dual(_periodic_trilinear)
_c_periodic_trilinear = periodic_trilinear.cpu


def _psr_tiling(tex, period, kf, x, y, z):
    """Texture sample of tiling k (eqs 2.38–2.39): ``T(C(k) (x/P + o_k))`` and its x-gradient."""
    c = math.cos(kf)
    s = math.sin(kf)
    ux = x / period + math.sin(3.0 * kf)
    uy = y / period + math.sin(5.0 * kf)
    uz = z / period + math.sin(7.0 * kf)
    # C(k) = C_z(k) C_x(k) = [[c, s c, s s], [-s, c c, c s], [0, -s, c]]
    vx = c * ux + s * c * uy + s * s * uz
    vy = -s * ux + c * c * uy + c * s * uz
    vz = -s * uy + c * uz
    N = tex.shape[0]
    val, gu, gv, gw = _c_periodic_trilinear(tex, vx * N, vy * N, vz * N)
    # ∂/∂x = (N / P) C(k)ᵀ ∇_v
    sc = N / period
    gx = sc * (c * gu - s * gv)
    gy = sc * (s * c * gu + c * c * gv - s * gw)
    gz = sc * (s * s * gu + c * s * gv + c * gw)
    return val, gx, gy, gz


psr_tiling = dual(_psr_tiling)
_c_psr_tiling = psr_tiling.cpu


def _eval_psr(tex, period, index, index_cell, x, y, z):
    """Procedurally seeded rocks (§2.3.3): aperiodic blend of tilings k and k + 1; value <= 0 [m]."""
    iv, iu, ivv, iw = _c_periodic_trilinear(index, x / index_cell, y / index_cell, z / index_cell)
    kf = math.floor(iv)
    c = iv - kf
    a, ax, ay, az = _c_psr_tiling(tex, period, kf, x, y, z)
    b, bx, by, bz = _c_psr_tiling(tex, period, kf + 1.0, x, y, z)
    # smoothstep(0.2, 0.8, c)
    t = min(max((c - 0.2) / 0.6, 0.0), 1.0)
    w = t * t * (3.0 - 2.0 * t)
    dw = 6.0 * t * (1.0 - t) / 0.6 if (c > 0.2 and c < 0.8) else 0.0
    d = a + w * (b - a)
    gx = ax + w * (bx - ax) + (b - a) * dw * iu / index_cell
    gy = ay + w * (by - ay) + (b - a) * dw * ivv / index_cell
    gz = az + w * (bz - az) + (b - a) * dw * iw / index_cell
    return d, gx, gy, gz


eval_psr = dual(_eval_psr, inline=False)
_psr = eval_psr.cpu
