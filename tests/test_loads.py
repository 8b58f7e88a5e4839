"""Applied loads (issue "6-DoF rigid bodies", item 2; seed 002's RbTimeVectorSum, seed 003's
applied force/torque containers) against closed forms.

A load's vector is ``load_scale · (load_vector + series(t) + function(t))``; the series is linearly
interpolated and zero outside its span; a force at body point r adds r × F to the torque.

Why RK4 can be exact here: for ``v̇ = a(t)`` alone, RK4's stages reduce to Simpson's rule
(k2 = k3 = a(t + h/2)), exact for a polynomial of degree <= 3 on the step, and its position update
``h v0 + h²(a0 + 2 a_mid)/6`` is exact for a linear ``a``. So a piecewise-linear series whose knots
lie on frame boundaries is integrated to round-off; a knot inside a frame costs at most
``|Δslope| h²/24`` in velocity (Simpson on a kink).
"""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest
from scipy.spatial.transform import Rotation
from scipy.special import fresnel

from components.loads import AppliedLoad, LoadFrame, LoadFunctions, LoadKind, LoadSeries
from components.rigid import rigid_body
from ecs import InputError, World
from systems.dynamics.integration import Integrator
from systems.dynamics.loads import ApplyLoads

COLS = ("body_position", "body_velocity", "body_attitude", "body_omega")


def _world(name="loads"):
    w = World(name)
    series, functions = LoadSeries(), LoadFunctions()
    w.add_resource(series)
    w.add_resource(functions)
    return w, series, functions


def _finish(w, *, t_end, dt, record_every=1, samples=1, overrides=None, method="rk4"):
    w.add_system(ApplyLoads())
    w.add_system(Integrator(method))
    w.compile(samples=samples, overrides=overrides)
    return w.run(t_end=t_end, dt=dt, record_every=record_every, record=COLS, final=COLS)


def _load(body, *, kind=LoadKind.FORCE, frame=LoadFrame.BODY, point=(0.0, 0.0, 0.0), vector=(0.0, 0.0, 0.0),
          series=-1, function=-1, scale=1.0):
    return AppliedLoad(body=body, kind=int(kind), frame=int(frame), point=np.asarray(point, float),
                       vector=np.asarray(vector, float), series=series, function=function, scale=scale)


# ------------------------------------------------------------------------------------------------
def test_constant_body_force_at_offset_point_fresnel():
    """F_B = (0, F, 0) at r = (L, 0, 0) on a body at rest: τ = (0, 0, L F) about a principal axis.

    ω = τ t/Iz about z, θ = k t² with k = τ/(2 Iz), and the force turns with the body:
    v = F/m (−∫sin(k s²) ds, ∫cos(k s²) ds, 0) — Fresnel integrals — and
    x = ∫(t − s)(…) ds = t·I(t) − (sin k t², 1 − cos k t²)/(2k) per axis.
    RK4 at 0.01 s over 2 s (θ reaches 2 rad, θ̇ <= 2 rad/s): error ~(h θ̇)⁴ ~ 1e-7 relative per unit
    time; observed ~1e-10. Bound 1e-8 (ω is linear in t: exact to round-off).
    """
    m, iz, length, f = 2.0, 4.0, 0.5, 8.0
    w, _, _ = _world()
    b = w.spawn(*rigid_body(mass=m, inertia=(2.0, 3.0, iz)))
    w.spawn(_load(b, point=(length, 0, 0), vector=(0, f, 0)))
    res = _finish(w, t_end=2.0, dt=0.01, record_every=10)
    t = res.times
    k = length * f / (2 * iz)
    z = t * math.sqrt(2 * k / math.pi)
    s_int, c_int = fresnel(z)
    scale = math.sqrt(math.pi / (2 * k))
    i_sin, i_cos = scale * s_int, scale * c_int
    v_ref = np.stack([-f / m * i_sin, f / m * i_cos, 0 * t], axis=1)
    x_ref = np.stack([-f / m * (t * i_sin - (1 - np.cos(k * t * t)) / (2 * k)),
                      f / m * (t * i_cos - np.sin(k * t * t) / (2 * k)), 0 * t], axis=1)
    tr = {c: res.trajectories[c][0, :, 0] for c in COLS}
    np.testing.assert_allclose(tr["body_omega"], np.outer(2 * k * t, [0, 0, 1]), rtol=0, atol=1e-12)
    q_ref = np.stack([np.cos(k * t * t / 2), 0 * t, 0 * t, np.sin(k * t * t / 2)], axis=1)
    np.testing.assert_allclose(tr["body_attitude"], q_ref, rtol=0, atol=1e-8)
    np.testing.assert_allclose(tr["body_velocity"], v_ref, rtol=0, atol=1e-8)
    np.testing.assert_allclose(tr["body_position"], x_ref, rtol=0, atol=1e-8)


def test_inertial_force_and_torques_in_both_frames():
    """Three bodies, one sample:

    * an inertial force at the reference point of a spinning body: v = F t/m (exact), no torque;
    * a body-frame torque about principal z from rest: ω_z = τ t/Iz (exact);
    * an inertial torque about inertial x on a body turned +90° about z: it acts about body −y, and
      ω in the inertial frame stays along inertial x with magnitude τ t/Iy (exact: ω × Iω = 0).
    """
    w, _, _ = _world()
    spin = np.array([0.3, -0.4, 0.2])
    b1 = w.spawn(*rigid_body(mass=4.0, inertia=(1.0, 1.5, 2.0), omega=spin))
    w.spawn(_load(b1, frame=LoadFrame.INERTIAL, vector=(2.0, -1.0, 0.5)))
    b2 = w.spawn(*rigid_body(mass=1.0, inertia=(1.0, 1.5, 2.0)))
    w.spawn(_load(b2, kind=LoadKind.TORQUE, vector=(0.0, 0.0, 0.6)))
    q90 = np.array([math.cos(math.pi / 4), 0.0, 0.0, math.sin(math.pi / 4)])
    b3 = w.spawn(*rigid_body(mass=1.0, inertia=(1.0, 1.5, 2.0), attitude=q90))
    w.spawn(_load(b3, kind=LoadKind.TORQUE, frame=LoadFrame.INERTIAL, vector=(0.9, 0.0, 0.0)))
    res = _finish(w, t_end=1.0, dt=0.01, record_every=10)
    t = res.times
    tr = {c: res.trajectories[c][0] for c in COLS}  # [time, body, ...] in spawn order
    # exact up to round-off: the kernel rotates the inertial vector into body axes and back (1e-16
    # per stage, 400 stages)
    np.testing.assert_allclose(tr["body_velocity"][:, 0], np.outer(t, [0.5, -0.25, 0.125]), rtol=0, atol=1e-12)
    np.testing.assert_allclose(tr["body_omega"][:, 1], np.outer(t, [0, 0, 0.3]), rtol=0, atol=1e-13)
    # body 3: the inertial torque is rotated into body axes with the stage attitude, whose RK4 error
    # (~(h θ̇)⁴ per unit time, θ̇ <= 0.6 rad/s) leaks ~1e-12 rad/s into the other axes; bound 1e-10
    np.testing.assert_allclose(tr["body_omega"][:, 2], np.outer(t, [0, -0.6, 0]), rtol=0, atol=1e-10)
    q = tr["body_attitude"][:, 2]
    w_body = tr["body_omega"][:, 2]
    w_inertial = Rotation.from_quat(q, scalar_first=True).apply(w_body)
    np.testing.assert_allclose(w_inertial, np.outer(t, [0.6, 0, 0]), rtol=0, atol=1e-10)
    # body 1 spins freely (asymmetric: ω is not constant): its ω equals that of the same body
    # without any load (the force passes through the reference point = CoM: no torque)
    w2 = World("free")
    w2.spawn(*rigid_body(mass=4.0, inertia=(1.0, 1.5, 2.0), omega=spin))
    w2.add_system(Integrator("rk4"))
    w2.compile()
    free = w2.run(t_end=1.0, dt=0.01, record_every=10, record=("body_omega",))
    np.testing.assert_array_equal(tr["body_omega"][:, 0], free.trajectories["body_omega"][0, :, 0])


# ------------------------------------------------------------------------------------------------
KNOTS = np.array([0.25, 0.5, 1.0, 1.5, 2.0])            # dyadic: exact in binary, on 1/8 s frames
SERIES_X = np.array([0.0, 2.0, -1.0, 3.0, 0.0])         # zero at both ends: continuous, no jump
SERIES_Y = np.array([0.0, -1.0, 0.5, 0.5, 0.0])


def _piecewise_linear_integrals(t, knots, values):
    """∫0^t f and ∫0^t ∫0^s f of the piecewise-linear f (zero outside [knots[0], knots[-1]])."""
    v = np.zeros_like(t)
    x = np.zeros_like(t)
    for a, b, fa, fb in zip(knots[:-1], knots[1:], values[:-1], values[1:]):
        slope = (fb - fa) / (b - a)
        for i, ti in enumerate(t):
            # contribution of segment [a, b] up to ti: ∫_a^min(ti,b) f, and ∫∫ via (ti - s) weight
            u = min(max(ti, a), b) - a
            v[i] += fa * u + slope * u * u / 2
            # ∫_a^{a+u} (ti - s) f(s) ds with s = a + r: ∫0^u (ti - a - r)(fa + slope r) dr
            c = ti - a
            x[i] += c * (fa * u + slope * u * u / 2) - (fa * u * u / 2 + slope * u ** 3 / 3)
    return v, x


def test_time_series_force_is_integrated_exactly_when_frames_hit_the_knots():
    """A piecewise-linear force on a point mass, frames of 1/8 s on the knots: v and x are the
    closed-form integrals to round-off (1e-13), including zero before and after the span."""
    m = 0.5
    w, series, _ = _world()
    k = series.add(KNOTS, np.stack([SERIES_X, SERIES_Y, 0 * KNOTS], axis=1))
    b = w.spawn(*rigid_body(mass=m, inertia=(1, 1, 1)))
    w.spawn(_load(b, frame=LoadFrame.INERTIAL, series=k))
    res = _finish(w, t_end=2.5, dt=0.125)
    t = res.times
    vx, xx = _piecewise_linear_integrals(t, KNOTS, SERIES_X)
    vy, xy = _piecewise_linear_integrals(t, KNOTS, SERIES_Y)
    vel = res.trajectories["body_velocity"][0, :, 0]
    pos = res.trajectories["body_position"][0, :, 0]
    np.testing.assert_allclose(vel[:, 0], vx / m, rtol=0, atol=1e-13)
    np.testing.assert_allclose(vel[:, 1], vy / m, rtol=0, atol=1e-13)
    np.testing.assert_allclose(pos[:, 0], xx / m, rtol=0, atol=1e-13)
    np.testing.assert_allclose(pos[:, 1], xy / m, rtol=0, atol=1e-13)
    assert np.all(vel[t <= 0.25] == 0.0) and np.all(pos[t <= 0.25] == 0.0)
    assert np.all(vel[t >= 2.0] == vel[-1])           # zero after the span: velocity constant
    # ∫f_x by trapezoids: 0.25·(0+2)/2 + 0.5·(2-1)/2 + 0.5·(-1+3)/2 + 0.5·(3+0)/2 = 1.75
    assert abs(vel[-1, 0] - 1.75 / m) < 1e-13


def test_time_series_force_with_knots_inside_frames_is_second_order():
    """Frames of 0.1 s miss the knots: each kink costs at most |Δslope|·h²/24 in velocity (Simpson
    on a kink), so the error is bounded by Σ|Δslope|·h²/24 — and it is really there (not exact)."""
    w, series, _ = _world()
    k = series.add(KNOTS, np.stack([SERIES_X, 0 * KNOTS, 0 * KNOTS], axis=1))
    b = w.spawn(*rigid_body(mass=1.0, inertia=(1, 1, 1)))
    w.spawn(_load(b, frame=LoadFrame.INERTIAL, series=k))
    h = 0.1
    res = _finish(w, t_end=2.5, dt=h)
    vx, _ = _piecewise_linear_integrals(res.times, KNOTS, SERIES_X)
    err = np.abs(res.trajectories["body_velocity"][0, :, 0, 0] - vx).max()
    slopes = np.diff(SERIES_X) / np.diff(KNOTS)
    kinks = np.abs(np.diff(np.concatenate([[0.0], slopes, [0.0]])))
    assert 1e-6 < err <= kinks.sum() * h * h / 24 + 1e-13, err


def test_series_is_zero_outside_its_span_even_with_jumps():
    """A 2 N pulse on [0.5, 1.0] (jumps at both ends), frames of 1/8 s: the velocity is exactly 0
    up to the frame before the pulse and exactly constant from the frame after it. RK4 samples
    the closed span's end values at the frame boundaries t = 0.5 and t = 1.0 (one stage each,
    weight h/6), so the total is 1 + (2 + 2)·h/6 exactly — an O(h) effect of the jumps, which
    vanishes with h."""
    h = 0.125
    w, series, _ = _world()
    k = series.add([0.5, 1.0], [[2.0, 0.0, 0.0], [2.0, 0.0, 0.0]])
    b = w.spawn(*rigid_body(mass=1.0, inertia=(1, 1, 1)))
    w.spawn(_load(b, frame=LoadFrame.INERTIAL, series=k))
    res = _finish(w, t_end=2.0, dt=h)
    t, v = res.times, res.trajectories["body_velocity"][0, :, 0, 0]
    assert np.all(v[t <= 0.5 - h] == 0.0)
    assert np.all(v[t >= 1.0 + h] == v[-1])
    assert v[-1] == pytest.approx(1.0 + 4.0 * h / 6, abs=1e-14)


# ------------------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _sine_force(t):
    return math.sin(t), 0.0, 0.0


@numba.njit(cache=True)
def _ramp_force(t):
    return 0.0, 0.0, 2.0 * t


def test_compiled_function_of_time():
    """f(t) = (sin t, 0, 0) on a unit point mass: v = 1 − cos t, x = t − sin t.

    RK4 at 0.01 s over 6 s: global error ~h⁴/… ~ 1e-10; bound 1e-9.
    A second body with f(t) = (0, 0, 2t) (a different function in the same world): v_z = t² and
    z = t³/3, exact to round-off (Simpson is exact for polynomials of degree <= 3).
    """
    w, _, functions = _world()
    k_sin, k_ramp = functions.add(_sine_force), functions.add(_ramp_force)
    b1 = w.spawn(*rigid_body(mass=1.0, inertia=(1, 1, 1)))
    w.spawn(_load(b1, frame=LoadFrame.INERTIAL, function=k_sin))
    b2 = w.spawn(*rigid_body(mass=1.0, inertia=(1, 1, 1)))
    w.spawn(_load(b2, frame=LoadFrame.BODY, function=k_ramp))
    res = _finish(w, t_end=6.0, dt=0.01, record_every=25)
    t = res.times
    v, x = res.trajectories["body_velocity"][0], res.trajectories["body_position"][0]
    np.testing.assert_allclose(v[:, 0, 0], 1 - np.cos(t), rtol=0, atol=1e-9)
    np.testing.assert_allclose(x[:, 0, 0], t - np.sin(t), rtol=0, atol=1e-9)
    assert np.all(v[:, 0, 1:] == 0.0)
    np.testing.assert_allclose(v[:, 1, 2], t * t, rtol=0, atol=1e-12)
    np.testing.assert_allclose(x[:, 1, 2], t ** 3 / 3, rtol=0, atol=1e-12)


def test_constant_series_and_function_sum_in_one_load_scaled_per_sample_and_per_body():
    """One world, two bodies, four samples.

    Body A carries one load with all three parts, ``scale · (c + series(t) + sin t)``, and a
    second constant load; the first load's ``load_scale`` is overridden per sample with
    ``World.compile(overrides=...)``. Body B carries its own load, unaffected by A's.
    Over 2 s with 1/8 s frames (knots on frame boundaries):
    v_A = s·(c t + ∫series + (1 − cos t)·e_x) + d t,  v_B = e t  (point masses, m = 1).
    """
    scales = np.array([0.0, 1.0, -0.5, 2.5])
    c, d, e = np.array([1.0, -2.0, 0.5]), np.array([0.0, 0.25, 0.0]), np.array([0.0, 0.0, -3.0])
    w, series, functions = _world()
    ks = series.add(KNOTS, np.stack([SERIES_X, SERIES_Y, 0 * KNOTS], axis=1))
    kf = functions.add(_sine_force)
    a = w.spawn(*rigid_body(mass=1.0, inertia=(1, 1, 1)), name="A")
    b = w.spawn(*rigid_body(mass=1.0, inertia=(1, 1, 1)), name="B")
    la = w.spawn(_load(a, frame=LoadFrame.INERTIAL, vector=c, series=ks, function=kf), name="all-three")
    w.spawn(_load(a, frame=LoadFrame.INERTIAL, vector=d), name="constant")
    w.spawn(_load(b, frame=LoadFrame.INERTIAL, vector=e), name="other-body")
    res = _finish(w, t_end=2.0, dt=0.125, samples=4, overrides={(la, "load_scale"): scales})
    t = res.times
    vx, _ = _piecewise_linear_integrals(t, KNOTS, SERIES_X)
    vy, _ = _piecewise_linear_integrals(t, KNOTS, SERIES_Y)
    base = np.outer(t, c) + np.stack([vx, vy, 0 * t], axis=1)
    # sin with 1/8 s frames: RK4 error ~h⁴ t/… ~ 2e-5 rel; compare it against RK4's own error
    # bound 1e-5 (the scale multiplies it); the other parts are exact
    sine = np.stack([1 - np.cos(t), 0 * t, 0 * t], axis=1)
    vel = res.trajectories["body_velocity"]  # [sample, time, body, 3]
    for s, sc in enumerate(scales):
        np.testing.assert_allclose(vel[s, :, 0], sc * (base + sine) + np.outer(t, d), rtol=0, atol=1e-5 * max(sc, 1))
        np.testing.assert_allclose(vel[s, :, 1], np.outer(t, e), rtol=0, atol=1e-13)
    # the per-sample scale is linear: sample 3 − 2.5 × sample 1 removes everything but the constant load
    np.testing.assert_allclose(vel[3, :, 0] - 2.5 * vel[1, :, 0], np.outer(t, d) * (1 - 2.5), rtol=0, atol=1e-12)
    np.testing.assert_allclose(vel[0, :, 0], np.outer(t, d), rtol=0, atol=1e-15)  # scale 0: only the other load


# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("times,values,field", [
    ([0.0, 1.0, 1.0], np.zeros((3, 3)), "load series times"),
    ([0.0], np.zeros((1, 3)), "load series times"),
    ([0.0, 1.0], np.zeros((2, 2)), "load series values"),
    ([0.0, 1.0], [[0.0, 0.0, 0.0], [np.nan, 0.0, 0.0]], "load series"),
])
def test_load_series_rejects_bad_input(times, values, field):
    with pytest.raises(InputError) as exc:
        LoadSeries().add(times, values)
    assert str(exc.value).startswith(field), str(exc.value)


def test_load_function_must_be_compiled():
    def plain(t):
        return t, 0.0, 0.0

    with pytest.raises(InputError) as exc:
        LoadFunctions().add(plain)
    assert str(exc.value).startswith("load function = 'plain'"), str(exc.value)
