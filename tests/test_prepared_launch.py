"""ecs.kernels.PreparedRows and PreparedSpan: a launch whose arguments are gathered once (or keep
their types) runs the compiled build's entry point, gives what launch_rows / launch_span give, and
refuses (in the suite's check mode) an argument whose type differs from the one it was resolved for."""

from __future__ import annotations

import numpy as np
import pytest
from numba import prange

import ecs.kernels as K
from ecs.kernels import PreparedRows, PreparedSpan, cpu_jit, cpu_parallel, dual, launch_rows, launch_span


def _axpy(i, x, y, out, a):
    out[i] = a * x[i] + y[i]


axpy = dual(_axpy)
_axpy_cpu = axpy.cpu


@cpu_parallel
def axpy_rows(n, x, y, out, a):
    for i in prange(n):
        _axpy_cpu(i, x, y, out, a)


def test_prepared_launch_matches_launch_rows_and_goes_to_the_entry_point():
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal(50), rng.standard_normal(50)
    out, ref = np.zeros(50), np.zeros(50)
    launch = PreparedRows("cpu", axpy_rows, axpy, x, y, out)
    for a in (2.5, -0.75, 1e-3):
        launch(50, a)
        launch_rows("cpu", axpy_rows, axpy, 50, x, y, ref, a)
        assert np.array_equal(out, ref)
        assert np.array_equal(out, a * x + y)        # the closed form
    assert len(launch._entry) == 1                    # resolved once, then called directly
    launch(0, 9.0)                                    # no rows: nothing runs
    assert np.array_equal(out, ref)


def test_a_changed_argument_type_is_refused_in_check_mode(monkeypatch):
    monkeypatch.setattr(K, "CHECK_LAUNCHES", True)
    x, y, out = np.ones(4), np.ones(4), np.zeros(4)
    launch = PreparedRows("cpu", axpy_rows, axpy, x, y, out)
    launch(4, 2.0)
    assert np.array_equal(out, np.full(4, 3.0))
    with pytest.raises(TypeError, match="argument types changed"):
        launch(4, np.int8(2))                          # int8 where the launch was resolved for float64


@cpu_jit
def axpy_span(j0, j1, x, y, out, a):
    for i in range(j0, j1):
        _axpy_cpu(i, x, y, out, a)


def test_prepared_span_matches_launch_span_and_goes_to_the_entry_point():
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal(40), rng.standard_normal(40)
    out, ref = np.zeros(40), np.zeros(40)
    launch = PreparedSpan("cpu", axpy_span)
    for a in (1.5, -2.0, 7e-4):
        launch(40, x, y, out, a)
        launch_span("cpu", axpy_span, 40, x, y, ref, a)
        assert np.array_equal(out, ref)
        assert np.array_equal(out, a * x + y)        # the closed form
    assert launch._entry is not axpy_span             # resolved once, then the entry point is called
    launch(0, x, y, out, 9.0)                         # no rows: nothing runs
    assert np.array_equal(out, ref)


def test_a_span_launch_with_a_changed_argument_type_is_refused_in_check_mode(monkeypatch):
    monkeypatch.setattr(K, "CHECK_LAUNCHES", True)
    x, y, out = np.ones(4), np.ones(4), np.zeros(4)
    launch = PreparedSpan("cpu", axpy_span)
    launch(4, x, y, out, 2.0)
    assert np.array_equal(out, np.full(4, 3.0))
    launch(4, x, y, out, 3.0)                          # same types: accepted
    assert np.array_equal(out, np.full(4, 4.0))
    with pytest.raises(TypeError, match="argument types changed"):
        launch(4, x, y, np.zeros(4, np.float32), 2.0)   # a float32 array where it was resolved for float64
