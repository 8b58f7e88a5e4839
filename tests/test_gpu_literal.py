"""ecs.kernels.gpu_literal: an integer constant passed between kernels is an int64 on the CPU, so
numba compiles the callee once whatever its value (a Python literal compiles one specialisation
per value), and a Python int in the kernel's GPU twin, which NVVM folds."""

from __future__ import annotations

import numba
import numpy as np
import pytest

import ecs.kernels as K
from ecs.kernels import dual, gpu_literal

FIRST = gpu_literal(0)
SECOND = gpu_literal(2)


def _pick(x, k):
    return x[k]


pick = dual(_pick, inline=False)
_pick_cpu = pick.cpu


def _both(x):
    return _pick_cpu(x, FIRST) + _pick_cpu(x, SECOND)


def _both_literal(x):
    return _pick_cpu(x, 0) + _pick_cpu(x, 2)


def test_the_cpu_compiles_the_callee_once_for_every_value():
    assert type(FIRST) is np.int64 and numba.typeof(FIRST) == numba.int64
    x = np.array([1.0, 10.0, 100.0])
    assert numba.njit(_both)(x) == 101.0
    assert len(pick.cpu.signatures) == 1, pick.cpu.signatures
    # the same call with Python literals: two more specialisations (what gpu_literal avoids)
    assert numba.njit(_both_literal)(x) == 101.0
    assert len(pick.cpu.signatures) == 3, pick.cpu.signatures


def test_the_gpu_twin_reads_the_python_int():
    pytest.importorskip("numba.cuda")
    twin = K._device_function(_both)
    g = twin.py_func.__globals__
    assert type(g["FIRST"]) is int and g["FIRST"] == 0
    assert type(g["SECOND"]) is int and g["SECOND"] == 2
    assert g["_pick_cpu"] is pick.gpu
    # the CPU source keeps its np.int64
    assert _both.__globals__["FIRST"] is FIRST
