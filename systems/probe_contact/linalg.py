"""Small dense linear algebra of probe contact, as device kernels (one source, CPU and GPU): the
symmetric 3 x 3 inverse and product and the coupling matrix of seed 004 eqs 2.55–2.56 (collisions
and contact motion); for contact motion's force solve, on a row's work array, Cholesky with a
provable conditioning test, a symmetric pseudo-inverse by Jacobi sweeps for the rank-deficient
cases, and the low-rank solve through the 6 x 6 Gram matrix (which deflates a null vector the caller
knows, an edge contact's, so that Cholesky serves).
:mod:`systems.probe_contact.contact_motion` documents where each is used."""

from __future__ import annotations

import math

import numpy as np

from ecs.attitude import cross_call
from ecs.kernels import dual_call

_cross = cross_call.cpu


def _inverse_sym3(a00, a01, a02, a11, a12, a22):
    """Inverse of a symmetric 3×3 matrix; returns its 6 unique entries (00, 01, 02, 11, 12, 22)."""
    c00 = a11 * a22 - a12 * a12
    c01 = a02 * a12 - a01 * a22
    c02 = a01 * a12 - a02 * a11
    c11 = a00 * a22 - a02 * a02
    c12 = a01 * a02 - a00 * a12
    c22 = a00 * a11 - a01 * a01
    det = a00 * c00 + a01 * c01 + a02 * c02
    inv = 1.0 / det
    return (c00 * inv, c01 * inv, c02 * inv, c11 * inv, c12 * inv, c22 * inv)


def _sym3_apply(j00, j01, j02, j11, j12, j22, x, y, z):
    """``J x`` for a symmetric J given by its 6 unique entries."""
    return (j00 * x + j01 * y + j02 * z, j01 * x + j11 * y + j12 * z, j02 * x + j12 * y + j22 * z)


inverse_sym3 = dual_call(_inverse_sym3)
sym3_apply = dual_call(_sym3_apply)
_inv3 = inverse_sym3.cpu
_japply = sym3_apply.cpu


def _apply_coupling(minv, j00, j01, j02, j11, j12, j22, rix, riy, riz, rjx, rjy, rjz, x, y, z):
    """Seed eq 2.56: ``[M_ij] x = x/m − r_i × (I⁻¹ (r_j × x))`` — the velocity change of body point
    ``r_i`` for a unit impulse ``x`` at body point ``r_j`` (all vectors in one frame, from the CoM;
    ``j..`` the inverse inertia in that frame). With ``r_i = r_j = r`` this is ``[M]`` of eq 2.55."""
    cx, cy, cz = _cross(rjx, rjy, rjz, x, y, z)
    jx, jy, jz = _japply(j00, j01, j02, j11, j12, j22, cx, cy, cz)
    tx, ty, tz = _cross(rix, riy, riz, jx, jy, jz)
    return (minv * x - tx, minv * y - ty, minv * z - tz)


apply_coupling = dual_call(_apply_coupling)
_mcouple = apply_coupling.cpu


def _chol_factor(a, off, l_off, n, tol):
    """Cholesky factor L (row-major lower at ``a[l_off:]``) of the symmetric n×n A at ``a[off:]``
    (left intact), column by column; stops at the first column whose pivot is not above ``tol``
    and returns its index (n: A = L Lᵀ complete). Columns before it are final, and so is that
    column's row of L left of the diagonal."""
    for j in range(n):
        d = a[off + j * n + j]
        for k in range(j):
            d -= a[l_off + j * n + k] * a[l_off + j * n + k]
        if not (d > tol):
            return j
        ljj = math.sqrt(d)
        a[l_off + j * n + j] = ljj
        for i in range(j + 1, n):
            s = a[off + i * n + j]
            for k in range(j):
                s -= a[l_off + i * n + k] * a[l_off + j * n + k]
            a[l_off + i * n + j] = s / ljj
    return n


chol_factor = dual_call(_chol_factor)
_cholfac = chol_factor.cpu


def _chol_solve(a, off, l_off, t_off, n, b_off, rcond):
    """b <- A⁻¹ b by Cholesky (L at a[l_off:], row-major lower) if A is SPD with every eigenvalue
    provably above ``rcond·λ_max`` (see :data:`sym_pinv_solve`); returns False (b untouched)
    otherwise."""
    tr = 0.0
    for j in range(n):
        tr += a[off + j * n + j]
    if not (tr > 0.0):
        return False
    if _cholfac(a, off, l_off, n, 0.0) < n:
        return False
    # ‖L⁻¹‖²_F, one column of L⁻¹ at a time (forward substitution of e_c)
    fro = 0.0
    for c in range(n):
        for i in range(n):
            if i < c:
                a[t_off + i] = 0.0
                continue
            s = 1.0 if i == c else 0.0
            for k in range(c, i):
                s -= a[l_off + i * n + k] * a[t_off + k]
            a[t_off + i] = s / a[l_off + i * n + i]
            fro += a[t_off + i] * a[t_off + i]
    if not (1.0 / fro > rcond * tr):
        return False
    _cholsubst(a, l_off, n, b_off)
    return True


def _chol_substitute(a, l_off, n, b_off):
    """b <- (L Lᵀ)⁻¹ b with the Cholesky factor L at ``a[l_off:]`` (row-major lower, n×n): the
    forward and the back substitution of :func:`_chol_solve`."""
    for i in range(n):            # L y = b
        s = a[b_off + i]
        for k in range(i):
            s -= a[l_off + i * n + k] * a[b_off + k]
        a[b_off + i] = s / a[l_off + i * n + i]
    for i in range(n - 1, -1, -1):  # Lᵀ x = y
        s = a[b_off + i]
        for k in range(i + 1, n):
            s -= a[l_off + k * n + i] * a[b_off + k]
        a[b_off + i] = s / a[l_off + i * n + i]


chol_substitute = dual_call(_chol_substitute)
_cholsubst = chol_substitute.cpu
chol_solve = dual_call(_chol_solve)
_cholsolve = chol_solve.cpu


def _null_vector(a, off, l_off, z_off, n, tol):
    """A unit vector z of the (near) null space of the symmetric positive semi-definite n×n A
    (row-major at ``a[off:]``, left intact), found by Cholesky (L at ``a[l_off:]``): at the first
    column j whose pivot is ≤ ``tol``, column j of A depends on the columns before it,
    ``A₁₁ y = a₁ⱼ`` with ``y = L₁₁⁻ᵀ L[j, :j]ᵀ``, and ``z ∝ (−y, 1, 0…)`` has ``zᵀAz`` = that pivot
    / ‖(y, 1)‖² ≤ tol. Written at ``a[z_off:]`` (n numbers); returns False when every pivot is above
    ``tol`` (no such column)."""
    j = _cholfac(a, off, l_off, n, tol)
    if j == n:
        return False
    nrm = 1.0
    for i in range(j - 1, -1, -1):        # L₁₁ᵀ y = L[j, :j]ᵀ
        s = a[l_off + j * n + i]
        for k in range(i + 1, j):
            s -= a[l_off + k * n + i] * a[z_off + k]
        a[z_off + i] = s / a[l_off + i * n + i]
        nrm += a[z_off + i] * a[z_off + i]
    nrm = 1.0 / math.sqrt(nrm)
    for i in range(j):
        a[z_off + i] = -a[z_off + i] * nrm
    a[z_off + j] = nrm
    for i in range(j + 1, n):
        a[z_off + i] = 0.0
    return True


null_vector = dual_call(_null_vector)
_nullvec = null_vector.cpu


def _sym_pinv_solve(a, off, v_off, t_off, n, b_off, rcond):
    """Minimum-norm solution of A x = b for a symmetric positive semi-definite n×n A (row-major at
    ``a[off:]``, destroyed): ``x = Σ_{λ > rcond λ_max} (vᵀb/λ) v`` over A's eigenpairs; b at
    ``a[b_off:]`` becomes x. Eigen-components below the cut are dropped, so round-off in b along the
    null space (statically indeterminate contact distributions) is not amplified. Returns the
    number of kept eigenvalues.

    Fast path: when A's Cholesky factor L (at ``a[v_off:]``) exists and proves every eigenvalue
    above the cut — λ_min ≥ 1/‖L⁻¹‖²_F and λ_max ≤ tr A, so ``1/‖L⁻¹‖²_F > rcond·tr A`` suffices —
    nothing is dropped and x = A⁻¹b is solved with L (A left intact, ``n`` scratch at
    ``a[t_off:]``).

    Rank-deficient A (a face of contacts sliding: the slip system of four coplanar contacts has
    rank 3): each null direction z that Cholesky meets (:func:`_null_vector`, a pivot ≤ rcond times
    A's largest diagonal, so below the eigen path's cut rcond·λ_max)
    is deflated, ``A ← A + σ zzᵀ``, ``b ← b − z zᵀb`` (σ = tr A / n: z's eigenvalue 0 becomes σ,
    and b keeps no part along it, so the solution is unchanged), until the Cholesky fast path
    serves; it returns n less the directions deflated. What even that leaves ill-conditioned goes to
    cyclic Jacobi eigen-decomposition (eigenvectors at ``a[v_off:]``, scratch at ``a[t_off:]``).
    """
    if _cholsolve(a, off, v_off, t_off, n, b_off, rcond):
        return n
    tr = 0.0
    dmax = 0.0
    for j in range(n):
        tr += a[off + j * n + j]
        dmax = max(dmax, a[off + j * n + j])
    sig = tr / n
    deflated = 0
    # a pivot ≤ rcond · max diagonal ≤ rcond · λ_max bounds an eigenvalue below the eigen path's cut
    while deflated < n - 1 and _nullvec(a, off, v_off, t_off, n, rcond * dmax):
        zb = 0.0
        for r in range(n):
            zb += a[t_off + r] * a[b_off + r]
        for r in range(n):
            a[b_off + r] -= zb * a[t_off + r]
            for c in range(n):
                a[off + r * n + c] += sig * a[t_off + r] * a[t_off + c]
        deflated += 1
        if _cholsolve(a, off, v_off, t_off, n, b_off, rcond):
            return n - deflated
    for r in range(n):
        for c in range(n):
            a[v_off + r * n + c] = 1.0 if r == c else 0.0
    for _sweep in range(60):
        offd = 0.0
        diag = 0.0
        for r in range(n):
            diag += a[off + r * n + r] * a[off + r * n + r]
            for c in range(r + 1, n):
                offd += a[off + r * n + c] * a[off + r * n + c]
        if not (offd > 1e-30 * diag):
            break
        for p in range(n - 1):
            for q in range(p + 1, n):
                apq = a[off + p * n + q]
                if apq == 0.0:
                    continue
                theta = (a[off + q * n + q] - a[off + p * n + p]) / (2.0 * apq)
                t = 1.0 / (abs(theta) + math.sqrt(theta * theta + 1.0))
                if theta < 0.0:
                    t = -t
                c = 1.0 / math.sqrt(t * t + 1.0)
                s = t * c
                for k in range(n):
                    akp = a[off + k * n + p]
                    akq = a[off + k * n + q]
                    a[off + k * n + p] = c * akp - s * akq
                    a[off + k * n + q] = s * akp + c * akq
                for k in range(n):
                    apk = a[off + p * n + k]
                    aqk = a[off + q * n + k]
                    a[off + p * n + k] = c * apk - s * aqk
                    a[off + q * n + k] = s * apk + c * aqk
                for k in range(n):
                    vkp = a[v_off + k * n + p]
                    vkq = a[v_off + k * n + q]
                    a[v_off + k * n + p] = c * vkp - s * vkq
                    a[v_off + k * n + q] = s * vkp + c * vkq
    lmax = 0.0
    for j in range(n):
        lmax = max(lmax, abs(a[off + j * n + j]))
    kept = 0
    for j in range(n):
        lam = a[off + j * n + j]
        s = 0.0
        if lam > rcond * lmax:
            for k in range(n):
                s += a[v_off + k * n + j] * a[b_off + k]
            s /= lam
            kept += 1
        a[t_off + j] = s
    for k in range(n):
        s = 0.0
        for j in range(n):
            s += a[v_off + k * n + j] * a[t_off + j]
        a[b_off + k] = s
    return kept - deflated


sym_pinv_solve = dual_call(_sym_pinv_solve)
_pinv = sym_pinv_solve.cpu


def _gram6(w, o_c, n3, o_s):
    """w[o_s:] <- S = CᵀC (6×6, row-major) of C = w[o_c:] (n3×6, row-major).

    ``m`` is 6 (w holds S's 36 entries, so it is longer), written as a bound LLVM cannot see: a
    literal 6 unrolled the 21 entries' loop into ~4,900 instructions, which a cold contact kernel
    compiled again in each of six libraries (docs/design.md §8.25); now 489. Each entry is a dot
    product over the rows, summed in a register."""
    m = min(6, w.shape[0])
    for a in range(m):
        for b in range(a, m):
            s = 0.0
            for r in range(n3):
                s += w[o_c + 6 * r + a] * w[o_c + 6 * r + b]
            w[o_s + 6 * a + b] = s
            w[o_s + 6 * b + a] = s


gram6 = dual_call(_gram6)
_SIX = np.int64(6)  # an int64, not a literal (a literal argument compiles a callee per value)
_g6 = gram6.cpu


def _low_rank_pinv_solve(w, o_c, n3, o_b, o_s, o_v, o_t, o_u, rcond, null):
    """Minimum-norm solution of (C Cᵀ) x = b for C = w[o_c:] (n3×6, row-major), b at w[o_b:]
    (n3 numbers, becomes x), through the 6×6 S = CᵀC: with C = UΣVᵀ, (CCᵀ)⁺ = UΣ⁻²Uᵀ = C (S⁺)² Cᵀ.

    The same solution as :data:`sym_pinv_solve` on the n3×n3 matrix CCᵀ (its non-zero eigenvalues
    are S's, and the same ``rcond`` relative cut applies), at the cost of two 6×6 solves instead of
    one n3×n3 one; when S is well conditioned (its Cholesky factor proves it), one factorisation
    serves both. Scratch: 36 at o_s and o_v, 6 at o_t and o_u. Returns the number of
    kept eigenvalues. With n3 ≤ 6 rows, CCᵀ itself is the smaller matrix and is solved directly.

    ``null`` True (n3 ≤ 6 only): w[o_u:o_u + n3] holds a unit vector z of CCᵀ's null space that the
    caller knows (two contacts on an edge: equal and opposite forces along it). Then
    ``(CCᵀ)⁺ b = (CCᵀ + σ zzᵀ)⁻¹ (b − z zᵀb)`` (σ = tr CCᵀ / n3: z becomes an eigenvector of a
    well-conditioned matrix), which the Cholesky fast path solves without eigen-sweeps; the
    rank-deficient solve of an edge contact took ~5 Jacobi sweeps (122 per ``deploy-cube``
    landing)."""
    if n3 <= 6:
        tr = 0.0
        for a in range(n3):
            for b in range(n3):
                s = 0.0
                for j in range(6):
                    s += w[o_c + 6 * a + j] * w[o_c + 6 * b + j]
                w[o_s + n3 * a + b] = s
            tr += w[o_s + n3 * a + a]
        if null:
            zb = 0.0
            for a in range(n3):
                zb += w[o_u + a] * w[o_b + a]
            sig = tr / n3
            for a in range(n3):
                w[o_b + a] -= zb * w[o_u + a]
                for b in range(n3):
                    w[o_s + n3 * a + b] += sig * w[o_u + a] * w[o_u + b]
            return _pinv(w, o_s, o_v, o_t, n3, o_b, rcond) - 1
        return _pinv(w, o_s, o_v, o_t, n3, o_b, rcond)
    for j in range(6):
        s = 0.0
        for r in range(n3):
            s += w[o_c + 6 * r + j] * w[o_b + r]
        w[o_u + j] = s
    _g6(w, o_c, n3, o_s)
    if _cholsolve(w, o_s, o_v, o_t, _SIX, o_u, rcond):  # u <- S⁻¹ Cᵀ b: S well conditioned, L at o_v
        _cholsubst(w, o_v, _SIX, o_u)                    # u <- S⁻² Cᵀ b with the same factor
        kept = _SIX
    else:
        kept = _pinv(w, o_s, o_v, o_t, _SIX, o_u, rcond)   # u <- S⁺ Cᵀ b (S destroyed)
        _g6(w, o_c, n3, o_s)
        _pinv(w, o_s, o_v, o_t, _SIX, o_u, rcond)        # u <- (S⁺)² Cᵀ b
    for r in range(n3):
        s = 0.0
        for j in range(6):
            s += w[o_c + 6 * r + j] * w[o_u + j]
        w[o_b + r] = s
    return kept


low_rank_pinv_solve = dual_call(_low_rank_pinv_solve)
_lr_pinv = low_rank_pinv_solve.cpu
