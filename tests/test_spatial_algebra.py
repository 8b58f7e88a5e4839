"""The spatial algebra of ``systems.multibody.spatial`` that the articulated-body solve builds on,
against the dense 6×6 matrices of R. Featherstone, *Rigid Body Dynamics Algorithms* (2008), §2
(numpy products, an independent evaluation): the Plücker transform of a joint placement
``X = [[Rᵀ, 0], [−Rᵀ[p×], Rᵀ]]`` (eq. 2.24), its congruence ``Xᵀ A X`` of a symmetric matrix,
``X m`` of a motion vector and ``Xᵀ f`` of a force, and the motion cross product ``v ×m m`` (eq. 2.31).

Tolerance 1e-12 relative to the largest entry: the block forms and the dense products sum the same
terms in different orders (a few ulps of entries of order |A| |p|²); an entry in the wrong place is
an O(1) error."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from systems.multibody.spatial import congruence_rt_add, congruence_rt_add_sym, cross_motion, force_out, motion_in

RTOL = 1e-12


def _skew(p):
    return np.array([[0.0, -p[2], p[1]], [p[2], 0.0, -p[0]], [-p[1], p[0], 0.0]])


def _placement(rng):
    """W (a joint placement as the kernels keep it: R link → parent, p the link origin in parent
    axes) and the dense X of eq. 2.24 that it stands for."""
    R = Rotation.random(random_state=rng).as_matrix()
    p = rng.uniform(-3.0, 3.0, 3)
    W = np.zeros((6, 6))
    W[:3, :3] = R
    W[:3, 3] = p
    X = np.zeros((6, 6))
    X[:3, :3] = R.T
    X[3:, 3:] = R.T
    X[3:, :3] = -R.T @ _skew(p)
    return W, X


def _symmetric(rng):
    B = rng.normal(size=(6, 6))
    return B @ B.T + 6.0 * np.eye(6)


@pytest.mark.parametrize("seed", range(5))
def test_congruence_adds_xt_a_x_of_a_symmetric_matrix(seed):
    """Both entry points: the matrix one (multi-DOF joints, the CRBA) and the one that takes the
    upper triangle as scalars (the 1-DOF step of ABA pass 2); ``out`` is added to, not overwritten."""
    rng = np.random.default_rng(seed)
    W, X = _placement(rng)
    A = _symmetric(rng)
    base = rng.normal(size=(6, 6))
    expected = base + X.T @ A @ X
    tri = [A[i, j] for i in range(6) for j in range(i, 6)]
    out_sym = base.copy()
    congruence_rt_add_sym.cpu(W, *tri, out_sym)
    out_mat = base.copy()
    congruence_rt_add.cpu(W, A, out_mat)
    scale = np.max(np.abs(expected))
    assert np.max(np.abs(out_sym - expected)) <= RTOL * scale
    assert np.max(np.abs(out_mat - expected)) <= RTOL * scale


@pytest.mark.parametrize("seed", range(5))
def test_motion_and_force_transforms_and_the_cross_product(seed):
    rng = np.random.default_rng(seed)
    W, X = _placement(rng)
    m, f, v = rng.normal(size=6), rng.normal(size=6), rng.normal(size=6)
    assert np.allclose(motion_in.cpu(W, *m), X @ m, rtol=0.0, atol=RTOL * 10.0)
    assert np.allclose(force_out.cpu(W, *f), X.T @ f, rtol=0.0, atol=RTOL * 10.0)
    crm = np.zeros((6, 6))                               # v ×m = [[ω×, 0], [v_O×, ω×]]
    crm[:3, :3] = crm[3:, 3:] = _skew(v[:3])
    crm[3:, :3] = _skew(v[3:])
    assert np.allclose(cross_motion.cpu(*v, *m), crm @ m, rtol=0.0, atol=RTOL * 10.0)

