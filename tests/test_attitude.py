"""Tests of ecs/attitude.py: quaternions, DCMs, Euler sequences, attitude kinematics.

Reference: ``scipy.spatial.transform.Rotation`` (an independent implementation: it extracts Euler
angles from quaternions by Bernardes & Viollet's method, we go through the DCM), plus seed 002's
printed equations (Eq. 1.18, 1.21, 1.23, 1.24) and finite differences of exact rotations.

Tolerances:
* ``TOL_ROUNDOFF = 1e-12``: O(1) quantities (unit quaternions, DCM entries, angles in [−π, π])
  after a few dozen floating-point operations carry errors of a few ulp (~1e-15); 1e-12 leaves
  ~1000× margin yet catches any sign, axis or ordering mistake (those give O(1) errors). Euler
  angles are tested away from gimbal lock (middle angle ≥ 0.2 rad from the singularity), where
  the first/third angles' condition number is ≤ 1/sin(0.2) ≈ 5.
* Finite differences: see each test (truncation ~h², round-off ~eps/h).
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from ecs.errors import InputError
from ecs.kernels import cuda_available, cuda_simulated
from ecs import attitude as att

ROOT = pathlib.Path(__file__).resolve().parents[1]
TOL_ROUNDOFF = 1e-12

TAIT_BRYAN = ("123", "132", "213", "231", "312", "321")
PROPER = ("121", "131", "212", "232", "313", "323")
AERO = {"RPY": "123", "RYP": "132", "PYR": "231", "PRY": "213", "YRP": "312", "YPR": "321"}


def scipy_letters(seq: str) -> str:
    """Canonical digit sequence → scipy's intrinsic (uppercase) axis letters."""
    return seq.translate(str.maketrans("123", "XYZ"))


def wrap(angle):
    """Angle difference wrapped to (−π, π] (first/third angles live on a circle)."""
    return np.angle(np.exp(1j * np.asarray(angle)))


def sign_free_error(q, r):
    """max |q − r| up to the sign ambiguity q ≡ −q, per row."""
    q, r = np.asarray(q), np.asarray(r)
    return np.minimum(np.abs(q - r).max(axis=-1), np.abs(q + r).max(axis=-1))


def random_angles(seq: str, n: int, rng, margin: float = 0.2) -> np.ndarray:
    """Angles for ``seq`` with the middle angle ≥ ``margin`` rad from gimbal lock."""
    a = rng.uniform(-np.pi, np.pi, size=(n, 3))
    if seq[0] == seq[2]:
        a[:, 1] = rng.uniform(margin, np.pi - margin, n)
    else:
        a[:, 1] = rng.uniform(-np.pi / 2 + margin, np.pi / 2 - margin, n)
    return a


def random_quats(n: int, seed: int) -> np.ndarray:
    return Rotation.random(n, rng=seed).as_quat(scalar_first=True)


# ------------------------------------------------------------------------------------------------
# Sequence names
# ------------------------------------------------------------------------------------------------


def test_sequence_tables():
    assert att.EULER_SEQUENCES == TAIT_BRYAN + PROPER
    assert att.AERODYNAMIC_SEQUENCES == AERO


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [
        ("123", "123"), ("1-2-3", "123"), ("1_2_3", "123"), (" 3 2 1 ", "321"), (321, "321"),
        ("XYZ", "123"), ("xyz", "123"), ("Z-Y-X", "321"), ("zxz", "313"), ("YXY", "212"),
        ("RPY", "123"), ("rpy", "123"), ("RYP", "132"), ("PYR", "231"), ("PRY", "213"),
        ("YRP", "312"), ("YPR", "321"), ("Y-P-R", "321"),
    ],
)  # fmt: skip
def test_normalize_sequence_spellings(spelling, canonical):
    assert att.normalize_sequence(spelling) == canonical


@pytest.mark.parametrize("bad", ["abc", "112", "1234", "12", "", "RPR", "XXY", "124", 124, 1.5, None])
def test_bad_sequence_names_field_value_and_accepted_list(bad):
    with pytest.raises(InputError) as info:
        att.normalize_sequence(bad)
    msg = str(info.value)
    assert info.value.field == "euler sequence"
    assert msg.startswith(f"euler sequence = {bad!r}")
    assert "321" in msg and "313" in msg and "YPR" in msg  # the accepted ones are listed


def test_bad_sequence_rejected_by_every_conversion():
    q = np.array([1.0, 0.0, 0.0, 0.0])
    for call in (
        lambda: att.euler_to_quat([0.1, 0.2, 0.3], "XYX Z"),
        lambda: att.euler_to_dcm([0.1, 0.2, 0.3], "QRS"),
        lambda: att.quat_to_euler(q, "3-3-1"),
        lambda: att.dcm_to_euler(np.eye(3), "yy"),
    ):
        with pytest.raises(InputError, match="euler sequence"):
            call()


# ------------------------------------------------------------------------------------------------
# Euler conversions vs scipy (all 12 sequences + 6 aerodynamic names)
# ------------------------------------------------------------------------------------------------

ALL_NAMES = list(att.EULER_SEQUENCES) + list(AERO)


@pytest.mark.parametrize("name", ALL_NAMES)
def test_euler_to_quat_and_dcm_match_scipy(name):
    seq = att.normalize_sequence(name)
    rng = np.random.default_rng(int(seq) + len(name))
    angles = random_angles(seq, 200, rng)
    ref = Rotation.from_euler(scipy_letters(seq), angles)

    q = att.euler_to_quat(angles, name)
    assert q.shape == (200, 4)
    assert np.all(q[:, 0] >= 0.0)  # sign-canonical
    assert sign_free_error(q, ref.as_quat(scalar_first=True)).max() <= TOL_ROUNDOFF
    assert np.abs(att.euler_to_dcm(angles, name) - ref.as_matrix()).max() <= TOL_ROUNDOFF


@pytest.mark.parametrize("name", ALL_NAMES)
def test_quat_and_dcm_to_euler_match_scipy_and_round_trip(name):
    seq = att.normalize_sequence(name)
    rng = np.random.default_rng(1000 + int(seq) + len(name))
    angles = random_angles(seq, 200, rng)
    ref = Rotation.from_euler(scipy_letters(seq), angles)
    ref_angles = ref.as_euler(scipy_letters(seq))

    from_q = att.quat_to_euler(ref.as_quat(scalar_first=True), name)
    from_c = att.dcm_to_euler(ref.as_matrix(), name)
    for out in (from_q, from_c):
        assert np.abs(wrap(out - ref_angles)).max() <= TOL_ROUNDOFF
        assert np.abs(wrap(out - angles)).max() <= TOL_ROUNDOFF  # unique away from lock
    # ranges: middle angle of Tait–Bryan in [−π/2, π/2], of proper sequences in [0, π]
    mid = from_q[:, 1]
    if seq[0] == seq[2]:
        assert np.all((mid >= 0.0) & (mid <= np.pi))
    else:
        assert np.all(np.abs(mid) <= np.pi / 2)
    assert np.all(np.abs(from_q[:, [0, 2]]) <= np.pi)


@pytest.mark.parametrize("seq", att.EULER_SEQUENCES)
def test_round_trips_on_uniform_random_rotations(seq):
    # Uniform rotations (no margin from lock): the *rotation* must survive q → angles → q and
    # C → angles → C even where individual angles are ill-conditioned.
    q = att.quat_canonical(random_quats(500, seed=int(seq)))
    q_back = att.euler_to_quat(att.quat_to_euler(q, seq), seq)
    assert np.abs(q_back - q).max() <= TOL_ROUNDOFF  # both sign-canonical: no ± needed
    c = att.quat_to_dcm(q)
    assert np.abs(att.euler_to_dcm(att.dcm_to_euler(c, seq), seq) - c).max() <= TOL_ROUNDOFF


def test_batch_axes_are_preserved():
    rng = np.random.default_rng(7)
    angles = rng.uniform(-1.0, 1.0, size=(2, 5, 3))
    q = att.euler_to_quat(angles, "YPR")
    assert q.shape == (2, 5, 4)
    assert att.quat_to_dcm(q).shape == (2, 5, 3, 3)
    assert att.quat_to_euler(q, "321").shape == (2, 5, 3)
    assert att.dcm_to_quat(att.quat_to_dcm(q)).shape == (2, 5, 4)
    assert np.abs(att.quat_to_euler(q, "321") - angles).max() <= TOL_ROUNDOFF
    # single rows work too
    assert att.euler_to_quat([0.1, 0.2, 0.3], "123").shape == (4,)


# ------------------------------------------------------------------------------------------------
# Gimbal lock
# ------------------------------------------------------------------------------------------------


def _locked_cases():
    for seq in att.EULER_SEQUENCES:
        middles = (0.0, np.pi) if seq[0] == seq[2] else (np.pi / 2, -np.pi / 2)
        for b in middles:
            yield seq, b


@pytest.mark.parametrize(("seq", "middle"), list(_locked_cases()))
def test_gimbal_lock_third_angle_zero_like_scipy(seq, middle):
    a, c = 0.7, -1.9
    q = att.euler_to_quat([a, middle, c], seq)
    out = att.quat_to_euler(q, seq)
    assert out[2] == 0.0  # exactly zero, by rule
    assert abs(out[1] - middle) <= 1e-7  # middle angle is well conditioned even at lock
    # the first angle carries the whole rotation about the locked axis (a ± c), as in scipy
    ref = Rotation.from_quat(q, scalar_first=True).as_euler(scipy_letters(seq), suppress_warnings=True)
    assert ref[2] == 0.0
    assert abs(wrap(out[0] - ref[0])) <= TOL_ROUNDOFF
    # still the same rotation
    assert sign_free_error(att.euler_to_quat(out, seq), q) <= TOL_ROUNDOFF


def test_gimbal_lock_first_angle_is_sum_or_difference():
    # proper 313 at b = 0: R_z(a) R_x(0) R_z(c) = R_z(a + c); at b = π: R_z(a) R_x(π) R_z(c) =
    # R_z(a − c) R_x(π). Analytic, no reference library needed.
    a, c = 0.7, -1.9
    out0 = att.quat_to_euler(att.euler_to_quat([a, 0.0, c], "313"), "313")
    outpi = att.quat_to_euler(att.euler_to_quat([a, np.pi, c], "313"), "313")
    assert abs(wrap(out0[0] - (a + c))) <= TOL_ROUNDOFF and out0[2] == 0.0
    assert abs(wrap(outpi[0] - (a - c))) <= TOL_ROUNDOFF and outpi[2] == 0.0


def test_near_lock_outside_threshold_keeps_third_angle():
    # 1e-5 rad from lock (100× the 1e-7 threshold): all three angles are returned; their
    # conditioning is eps/1e-5 ~ 2e-11, hence the looser 1e-9 bound on the angles.
    angles = np.array([0.4, np.pi / 2 - 1e-5, -0.9])
    out = att.quat_to_euler(att.euler_to_quat(angles, "321"), "321")
    assert np.abs(out - angles).max() <= 1e-9
    assert out[2] != 0.0


# ------------------------------------------------------------------------------------------------
# Quaternion ↔ DCM, algebra
# ------------------------------------------------------------------------------------------------


def test_quat_to_dcm_matches_scipy_and_normalises():
    q = random_quats(1000, seed=11)
    ref = Rotation.from_quat(q, scalar_first=True).as_matrix()
    assert np.abs(att.quat_to_dcm(q) - ref).max() <= TOL_ROUNDOFF
    # only the direction matters (scale and sign)
    assert np.abs(att.quat_to_dcm(-3.0 * q) - ref).max() <= TOL_ROUNDOFF


def test_dcm_is_transpose_of_seed002_eq_1_23():
    # Seed 002 Eq. 1.23: R_e^b (inertial → body) of MATLAB quat2dcm, for the same quaternion.
    q0, q1, q2, q3 = random_quats(1, seed=12)[0]
    r_eb = np.array(
        [
            [q0**2 + q1**2 - q2**2 - q3**2, 2 * (q1 * q2 + q0 * q3), 2 * (q1 * q3 - q0 * q2)],
            [2 * (q1 * q2 - q0 * q3), q0**2 - q1**2 + q2**2 - q3**2, 2 * (q2 * q3 + q0 * q1)],
            [2 * (q1 * q3 + q0 * q2), 2 * (q2 * q3 - q0 * q1), q0**2 - q1**2 - q2**2 + q3**2],
        ]
    )
    assert np.abs(att.quat_to_dcm([q0, q1, q2, q3]) - r_eb.T).max() <= TOL_ROUNDOFF


def test_euler321_dcm_is_transpose_of_seed002_eq_1_24_and_eq_1_25_is_a_misprint():
    phi, theta, psi = 0.3, -0.5, 1.1
    c, s = np.cos, np.sin
    r1 = np.array([[1, 0, 0], [0, c(phi), s(phi)], [0, -s(phi), c(phi)]])
    r2 = np.array([[c(theta), 0, -s(theta)], [0, 1, 0], [s(theta), 0, c(theta)]])
    r3 = np.array([[c(psi), s(psi), 0], [-s(psi), c(psi), 0], [0, 0, 1]])
    r_eb = r1 @ r2 @ r3  # Eq. 1.24
    dcm = att.euler_to_dcm([psi, theta, phi], "321")
    assert np.abs(dcm - r_eb.T).max() <= TOL_ROUNDOFF
    # Eq. 1.25 as printed: its middle factor is not orthogonal (det = cos 2θ ≠ 1)
    m2 = np.array([[-c(theta), 0, -s(theta)], [0, 1, 0], [-s(theta), 0, -c(theta)]])
    assert abs(np.linalg.det(m2) - np.cos(2 * theta)) <= TOL_ROUNDOFF
    assert abs(np.linalg.det(m2) - 1.0) > 0.1


def test_dcm_to_quat_matches_scipy_canonical():
    rot = Rotation.random(2000, rng=13)
    q = att.dcm_to_quat(rot.as_matrix())
    ref = rot.as_quat(scalar_first=True, canonical=True)
    assert np.abs(q - ref).max() <= TOL_ROUNDOFF
    assert np.all(q[:, 0] >= 0.0)
    assert np.abs(np.linalg.norm(q, axis=-1) - 1.0).max() <= TOL_ROUNDOFF


@pytest.mark.parametrize(
    "rotvec",
    [
        [0.0, 0.0, 0.0],
        [np.pi, 0.0, 0.0],  # w = 0: every pivot but x degenerates
        [0.0, np.pi, 0.0],
        [0.0, 0.0, np.pi],
        [np.pi / np.sqrt(2), -np.pi / np.sqrt(2), 0.0],
        [0.0, 0.0, np.pi - 1e-9],  # near π: trace ≈ −1
        [1e-12, -2e-12, 3e-12],  # near identity
    ],
)
def test_dcm_to_quat_special_rotations(rotvec):
    rot = Rotation.from_rotvec(rotvec)
    q = att.dcm_to_quat(rot.as_matrix())
    assert np.abs(q - rot.as_quat(scalar_first=True, canonical=True)).max() <= TOL_ROUNDOFF
    # canonical sign: first non-zero component positive
    nz = q[np.abs(q) > 0]
    assert nz[0] > 0.0


def test_array_algebra_matches_scipy():
    a, b = random_quats(300, seed=14), random_quats(300, seed=15)
    v = np.random.default_rng(16).normal(size=(300, 3))
    ra = Rotation.from_quat(a, scalar_first=True)
    rb = Rotation.from_quat(b, scalar_first=True)
    # a ⊗ b applies b first, then a: scipy's ra * rb
    product = att.quat_multiply(a, b)
    assert sign_free_error(product, (ra * rb).as_quat(scalar_first=True)).max() <= TOL_ROUNDOFF
    assert np.abs(att.quat_rotate(a, v) - ra.apply(v)).max() <= TOL_ROUNDOFF * 10  # |v| ~ 3
    assert np.abs(att.quat_rotate_inverse(a, v) - ra.inv().apply(v)).max() <= TOL_ROUNDOFF * 10
    assert sign_free_error(att.quat_conjugate(a), ra.inv().as_quat(scalar_first=True)).max() <= TOL_ROUNDOFF
    # broadcasting one attitude over many vectors
    assert np.abs(att.quat_rotate(a[0], v) - ra[0].apply(v)).max() <= TOL_ROUNDOFF * 10
    n = att.quat_normalize(2.5 * a)
    assert np.abs(n - a).max() <= TOL_ROUNDOFF
    assert np.all(np.isnan(att.quat_normalize(np.zeros(4))))


# ------------------------------------------------------------------------------------------------
# Scalar CPU kernels
# ------------------------------------------------------------------------------------------------


def test_scalar_cpu_kernels_match_scipy():
    qs = random_quats(20, seed=21)
    ps = random_quats(20, seed=22)
    vs = np.random.default_rng(23).normal(size=(20, 3))
    for q, p, v in zip(qs, ps, vs):
        rq = Rotation.from_quat(q, scalar_first=True)
        rp = Rotation.from_quat(p, scalar_first=True)
        assert np.abs(np.array(att.quat_rotate.cpu(*q, *v)) - rq.apply(v)).max() <= TOL_ROUNDOFF * 10
        back = np.array(att.quat_rotate_inverse.cpu(*q, *v))
        assert np.abs(back - rq.inv().apply(v)).max() <= TOL_ROUNDOFF * 10
        prod = np.array(att.quat_multiply.cpu(*q, *p))
        assert sign_free_error(prod, (rq * rp).as_quat(scalar_first=True)) <= TOL_ROUNDOFF
        assert np.abs(np.array(att.quat_normalize.cpu(*(4.0 * q))) - q).max() <= TOL_ROUNDOFF
        assert np.abs(np.array(att.cross.cpu(*v, *q[1:])) - np.cross(v, q[1:])).max() <= TOL_ROUNDOFF
        assert abs(att.dot3.cpu(*v, *q[1:]) - np.dot(v, q[1:])) <= TOL_ROUNDOFF
    assert all(np.isnan(att.quat_normalize.cpu(0.0, 0.0, 0.0, 0.0)))  # no raise, NaN flag


def test_euler321_to_quat_kernel_is_seed002_zyx_order():
    rng = np.random.default_rng(24)
    for phi, theta, psi in zip(rng.uniform(-3, 3, 20), rng.uniform(-1.5, 1.5, 20), rng.uniform(-3, 3, 20)):
        q = np.array(att.euler321_to_quat.cpu(phi, theta, psi))
        ref = Rotation.from_euler("ZYX", [psi, theta, phi]).as_quat(scalar_first=True)
        assert sign_free_error(q, ref) <= TOL_ROUNDOFF
        assert sign_free_error(q, att.euler_to_quat([psi, theta, phi], "YPR")) <= TOL_ROUNDOFF


_rotate_cpu = att.quat_rotate.cpu
_derivative_cpu = att.quat_derivative.cpu


@numba.njit(parallel=True, cache=False)
def _rotate_and_derive_rows(q, w, v, out_v, out_qd):
    """A prange driver: the scalar kernels inline into a parallel loop over rows."""
    for i in numba.prange(q.shape[0]):
        x, y, z = _rotate_cpu(q[i, 0], q[i, 1], q[i, 2], q[i, 3], v[i, 0], v[i, 1], v[i, 2])
        out_v[i, 0] = x
        out_v[i, 1] = y
        out_v[i, 2] = z
        d0, d1, d2, d3 = _derivative_cpu(q[i, 0], q[i, 1], q[i, 2], q[i, 3], w[i, 0], w[i, 1], w[i, 2])
        out_qd[i, 0] = d0
        out_qd[i, 1] = d1
        out_qd[i, 2] = d2
        out_qd[i, 3] = d3


def test_kernels_inline_in_prange_driver():
    n = 1000
    q = random_quats(n, seed=25)
    rng = np.random.default_rng(26)
    w, v = rng.normal(size=(n, 3)), rng.normal(size=(n, 3))
    out_v, out_qd = np.empty((n, 3)), np.empty((n, 4))
    _rotate_and_derive_rows(q, w, v, out_v, out_qd)
    assert np.abs(out_v - Rotation.from_quat(q, scalar_first=True).apply(v)).max() <= TOL_ROUNDOFF * 10
    # seed 002 Eq. 1.18 written out as the printed 4×4 matrix
    omega = np.zeros((n, 4, 4))
    wx, wy, wz = w[:, 0], w[:, 1], w[:, 2]
    omega[:, 0, 1:] = -w
    omega[:, 1, 0], omega[:, 1, 2], omega[:, 1, 3] = wx, wz, -wy
    omega[:, 2, 0], omega[:, 2, 1], omega[:, 2, 3] = wy, -wz, wx
    omega[:, 3, 0], omega[:, 3, 1], omega[:, 3, 2] = wz, wy, -wx
    eq_1_18 = 0.5 * np.einsum("nij,nj->ni", omega, q)
    assert np.abs(out_qd - eq_1_18).max() <= TOL_ROUNDOFF * 10
    assert np.abs(att.quat_derivative(q, w) - eq_1_18).max() <= TOL_ROUNDOFF * 10


# ------------------------------------------------------------------------------------------------
# Kinematics vs finite differences of an exact rotation
# ------------------------------------------------------------------------------------------------


def _exact_attitude(q0, omega_body, t):
    """q(t) = q0 ⊗ exp(ω t / 2) for constant body rate ω (scipy builds the exponential)."""
    r = Rotation.from_quat(q0, scalar_first=True) * Rotation.from_rotvec(np.asarray(omega_body) * t)
    q = r.as_quat(scalar_first=True)
    return q if np.dot(q, q0) >= 0.0 else -q  # the continuous branch through q0


def test_quat_derivative_matches_finite_difference_of_exact_rotation():
    # Central difference, h = 1e-4 s: truncation h²/6·|q'''| ≤ 1e-8/6·(|ω|/2)³ ≈ 2e-9 for
    # |ω| ≤ 3 rad/s; round-off ~ eps/h ≈ 1e-12. Bound 1e-8.
    h = 1e-4
    rng = np.random.default_rng(31)
    for q0, w in zip(random_quats(10, seed=32), rng.uniform(-1.5, 1.5, size=(10, 3))):
        fd = (_exact_attitude(q0, w, h) - _exact_attitude(q0, w, -h)) / (2 * h)
        qd = np.array(att.quat_derivative.cpu(*q0, *w))
        assert np.abs(qd - fd).max() <= 1e-8
        assert abs(np.dot(qd, q0)) <= TOL_ROUNDOFF  # invariant: d|q|²/dt = 2 q·q̇ = 0


def test_euler321_rates_match_finite_difference_of_exact_rotation():
    # Seed 002 Eq. 1.21 vs central differences of quat_to_euler(q(t), "321") = (ψ, θ, φ) along
    # the exact motion. h = 1e-5 s: truncation ~h²·(rates³ · sec³θ) ≲ 1e-9, round-off
    # ~eps/h ≈ 2e-11. Bound 1e-7. Angles kept away from ±π wrap and from |θ| = π/2.
    h = 1e-5
    rng = np.random.default_rng(41)
    for _ in range(10):
        psi, theta, phi = rng.uniform(-2.5, 2.5), rng.uniform(-1.0, 1.0), rng.uniform(-2.5, 2.5)
        w = rng.uniform(-1.0, 1.0, 3)
        q0 = att.euler_to_quat([psi, theta, phi], "321")
        ahead = att.quat_to_euler(_exact_attitude(q0, w, h), "321")
        behind = att.quat_to_euler(_exact_attitude(q0, w, -h), "321")
        psi_dot, theta_dot, phi_dot = (ahead - behind) / (2 * h)
        rates = np.array(att.euler321_rates.cpu(phi, theta, psi, *w))
        assert np.abs(rates - [phi_dot, theta_dot, psi_dot]).max() <= 1e-7


# ------------------------------------------------------------------------------------------------
# Validation
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("q", "words"),
    [
        ([np.nan, 0.0, 0.0, 1.0], "finite"),
        ([1.0, np.inf, 0.0, 0.0], "finite"),
        ([0.0, 0.0, 0.0, 0.0], "non-zero norm"),
        ([1.0, 0.1, 0.0, 0.0], "norm = 1.004987562112089"),
        ([0.5, 0.5, 0.5, 0.49], "norm = 0.99503768"),
    ],
)
def test_check_quaternion_rejects_bad_values(q, words):
    with pytest.raises(InputError) as info:
        att.check_quaternion(q, field="body_attitude of entity 3")
    msg = str(info.value)
    assert msg.startswith("body_attitude of entity 3 = ")
    assert repr([float(x) for x in q]) in msg  # the value
    assert words in msg


def test_check_quaternion_batch_names_first_bad_row_and_accepts_good():
    q = att.quat_canonical(random_quats(6, seed=51)).reshape(2, 3, 4)
    assert att.check_quaternion(q, field="body_attitude") is not None
    q[1, 2] *= 1.1
    with pytest.raises(InputError, match=r"body_attitude\[1, 2\] = .*norm = 1\.1"):
        att.check_quaternion(q, field="body_attitude")
    # tolerance is honoured both ways
    near = np.array([1.0 + 1e-7, 0.0, 0.0, 0.0])
    assert np.array_equal(att.check_quaternion(near, field="q"), near)
    with pytest.raises(InputError, match="tol = 1e-08"):
        att.check_quaternion(near, field="q", tol=1e-8)
    with pytest.raises(InputError, match=r"shape \[\.\.\., 4\]"):
        att.check_quaternion([1.0, 0.0, 0.0], field="q")


# ------------------------------------------------------------------------------------------------
# CPU ↔ GPU (CUDA simulator in a subprocess; real device under the `gpu` marker)
# ------------------------------------------------------------------------------------------------

_GPU_SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np
    from numba import cuda
    from ecs.attitude import euler321_rates, quat_derivative, quat_multiply, quat_rotate

    rotate = quat_rotate.gpu        # bind device functions to globals before the kernel
    derivative = quat_derivative.gpu
    multiply = quat_multiply.gpu
    rates = euler321_rates.gpu

    @cuda.jit
    def kernel(q, p, w, v, out_v, out_qd, out_qp, out_rates):
        i = cuda.grid(1)
        if i < q.shape[0]:
            x, y, z = rotate(q[i, 0], q[i, 1], q[i, 2], q[i, 3], v[i, 0], v[i, 1], v[i, 2])
            out_v[i, 0] = x
            out_v[i, 1] = y
            out_v[i, 2] = z
            d0, d1, d2, d3 = derivative(q[i, 0], q[i, 1], q[i, 2], q[i, 3], w[i, 0], w[i, 1], w[i, 2])
            out_qd[i, 0] = d0
            out_qd[i, 1] = d1
            out_qd[i, 2] = d2
            out_qd[i, 3] = d3
            m0, m1, m2, m3 = multiply(q[i, 0], q[i, 1], q[i, 2], q[i, 3], p[i, 0], p[i, 1], p[i, 2], p[i, 3])
            out_qp[i, 0] = m0
            out_qp[i, 1] = m1
            out_qp[i, 2] = m2
            out_qp[i, 3] = m3
            r0, r1, r2 = rates(v[i, 0], v[i, 1], v[i, 2], w[i, 0], w[i, 1], w[i, 2])
            out_rates[i, 0] = r0
            out_rates[i, 1] = r1
            out_rates[i, 2] = r2

    data = np.load(sys.argv[1])
    q, p, w, v = data["q"], data["p"], data["w"], data["v"]
    n = q.shape[0]
    out = {"v": np.zeros((n, 3)), "qd": np.zeros((n, 4)), "qp": np.zeros((n, 4)), "rates": np.zeros((n, 3))}
    kernel[(n + 31) // 32, 32](q, p, w, v, out["v"], out["qd"], out["qp"], out["rates"])
    np.savez(sys.argv[2], **out)
    """
)


def _run_gpu_script(tmp_path, *, simulate: bool) -> None:
    n = 40
    rng = np.random.default_rng(61)
    data = {
        "q": random_quats(n, seed=62),
        "p": random_quats(n, seed=63),
        "w": rng.normal(size=(n, 3)),
        "v": rng.uniform(-1.2, 1.2, size=(n, 3)),  # also used as (φ, θ, ψ): |θ| < π/2
    }
    inputs, outputs, script = tmp_path / "in.npz", tmp_path / "out.npz", tmp_path / "kernel.py"
    np.savez(inputs, **data)
    script.write_text(_GPU_SCRIPT)
    env = dict(os.environ)
    env["NUMBA_ENABLE_CUDASIM"] = "1" if simulate else "0"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, str(script), str(inputs), str(outputs)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    gpu = np.load(outputs)

    # CPU path in this process. 1e-14: same formulas; the only difference allowed is FMA
    # contraction / operation order on O(1) values (a few ulp ≈ 1e-16).
    for i in range(n):
        q, p, w, v = data["q"][i], data["p"][i], data["w"][i], data["v"][i]
        assert np.abs(gpu["v"][i] - att.quat_rotate.cpu(*q, *v)).max() <= 1e-14
        assert np.abs(gpu["qd"][i] - att.quat_derivative.cpu(*q, *w)).max() <= 1e-14
        assert np.abs(gpu["qp"][i] - att.quat_multiply.cpu(*q, *p)).max() <= 1e-14
        assert np.abs(gpu["rates"][i] - att.euler321_rates.cpu(*v, *w)).max() <= 1e-14 * 10  # sec θ ≤ 3
    # and the kernels did something: the GPU rotation matches the independent reference
    assert np.abs(gpu["v"] - Rotation.from_quat(data["q"], scalar_first=True).apply(data["v"])).max() <= 1e-12


def test_gpu_kernels_in_cuda_simulator_match_cpu(tmp_path):
    _run_gpu_script(tmp_path, simulate=True)


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_available() or cuda_simulated(), reason="needs a real CUDA device")
def test_gpu_kernels_on_device_match_cpu(tmp_path):
    _run_gpu_script(tmp_path, simulate=False)
