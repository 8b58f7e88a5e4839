"""Conservation laws of a free-floating articulated tree (systems/multibody/kernels.py), integrated
with the classical RK4 tableau of ecs/stepping.py.

* No gravity, no joint forces: kinetic energy, linear momentum and angular momentum about the
  inertial origin are invariants of the exact motion. Over 100 s at h = 1 ms (joint rates ~0.1-0.3
  rad/s, so ω h ~ 3e-4) RK4's truncation error is below round-off; measured worst relative
  changes (E, P, L) were 3.4e-15, 1.7e-14, 5.2e-14 (tolerances: 1e-10, 1e-12, 1e-12, those of
  the issue). With the compensated state update of ``rk_step`` switched off they were 3.4e-14,
  1.0e-13, 3.1e-13 (and 1.8e-12 for L on another random 6-link tree), so the round-off of 10⁵
  steps, not truncation, is what these tolerances bound.
* With regularised viscous + Coulomb joint friction (internal forces): momentum is still
  conserved, and energy never rises from one step to the next (dE/dt = −Σ qd·τ_f ≤ 0); a rise of
  more than the round-off of evaluating E (16 ε E) fails the test, and so does friction that does
  not dissipate (E must fall below 3/4 of its start; measured 0.49 after 30 s)."""

from __future__ import annotations

import numpy as np
import pytest

from components.multibody import tree_spec
from ecs.stepping import TABLEAUX
from ecs.terms import no_terms_args
from systems.multibody.spatial import new_scratch
from systems.multibody.algorithms import energy_momentum
from systems.multibody.kernels import STATE, rk_step
from systems.multibody.records import Loads, Scratch
from systems.multibody.records import Stepper as StepRecord

RK4 = TABLEAUX["rk4"]
EPS = np.finfo(float).eps


def free_tree(friction: bool):
    """Six links: a free root, revolute, spherical, prismatic and locked-revolute branches."""
    rng = np.random.default_rng(11)
    n = 6
    parents = [-1, 0, 1, 0, 3, 0]
    kinds = ["free", "revolute", "spherical", "prismatic", "revolute", "revolute"]
    q = np.zeros((n, 7))
    qd = np.zeros((n, 6))
    q[0, :3] = (1.0, -2.0, 0.5)
    w = rng.normal(size=4)
    q[0, 3:] = w / np.linalg.norm(w)
    qd[0] = 0.1 * rng.normal(size=6)
    q[1, 0], qd[1, 0] = 0.4, 0.3
    w = rng.normal(size=4)
    q[2, :4] = w / np.linalg.norm(w)
    qd[2, :3] = (0.2, -0.1, 0.25)
    q[3, 0], qd[3, 0] = 0.1, 0.05
    q[4, 0], qd[4, 0] = -0.3, -0.2
    q[5, 0], qd[5, 0] = 0.7, 0.0
    moments = rng.uniform(1.0, 2.0, (n, 3))
    return tree_spec(parents=parents, kinds=kinds, mass=rng.uniform(1.0, 5.0, n), inertia=moments,
                     com=rng.normal(scale=0.2, size=(n, 3)), axis=rng.normal(size=(n, 3)),
                     offset=rng.normal(scale=0.8, size=(n, 3)), q=q, qd=qd,
                     locked=[False, False, False, False, False, True],
                     viscous=[0.0, 0.5, 0.3, 2.0, 0.4, 0.0] if friction else None,
                     coulomb=[0.0, 0.02, 0.01, 0.05, 0.02, 0.0] if friction else None)


class Stepper:
    """The RK4 step and the energy/momentum evaluation of one tree, scratch allocated once."""

    def __init__(self, spec):
        n = spec.n
        self.s = spec
        self.q, self.qd = spec.q.copy(), spec.qd.copy()
        self.M, self.V = new_scratch(n)
        self.y0, self.C = np.zeros((n, STATE)), np.zeros((n, STATE))
        self.K = np.zeros((n, RK4.stages, STATE))
        self.tauw, self.fext, self.qdd = np.zeros((n, 6)), np.zeros((n, 6)), np.zeros((n, 6))
        self.Rw, self.pw = np.zeros((n, 3, 3)), np.zeros((n, 3))
        self.zeros3, self.zeros6 = np.zeros((n, 3)), np.zeros((n, 6))
        self.out = np.zeros(7)

    def step(self, h):
        s = self.s
        rk_step.cpu(0, s.n, StepRecord(h, RK4.weights, RK4.stages), s.record(self.q, self.qd),
                    Loads(self.zeros6, s.law, self.zeros3, self.zeros3, 0.0, 0, np.zeros(6)),
                    Scratch(self.y0, self.C, self.K, self.tauw, self.fext, self.qdd, self.Rw, self.pw, self.M, self.V),
                    0.0, 0, np.zeros((s.n, 6)), no_terms_args())

    def invariants(self):
        s = self.s
        energy_momentum.cpu(0, s.n, s.record(self.q, self.qd), self.Rw, self.pw, self.M, self.V, self.out)
        return self.out[0], self.out[1:4].copy(), self.out[4:7].copy()


def _rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def test_free_tree_conserves_energy_and_momentum():
    st = Stepper(free_tree(friction=False))
    E0, P0, L0 = st.invariants()
    h, steps = 1e-3, 100_000
    worst = np.zeros(3)
    for i in range(steps):
        st.step(h)
        if i % 10 == 9:
            E, P, L = st.invariants()
            worst = np.maximum(worst, [abs(E - E0) / E0, _rel(P, P0), _rel(L, L0)])
    print(f"\n100 s, h = {h}: worst relative change E {worst[0]:.2e}, P {worst[1]:.2e}, L {worst[2]:.2e}")
    assert worst[0] <= 1e-10
    assert worst[1] <= 1e-12
    assert worst[2] <= 1e-12
    assert st.q[5, 0] == 0.7, "a locked joint's state must stay frozen"
    assert abs(st.q[1, 0] - 0.4) > 0.1, "the unlocked joints must have moved"


def test_joint_friction_never_adds_energy():
    st = Stepper(free_tree(friction=True))
    E0, P0, L0 = st.invariants()
    E_prev = E0
    worst_rise = -np.inf
    h, steps = 1e-3, 30_000
    worst_p = worst_l = 0.0
    for _ in range(steps):
        st.step(h)
        E, P, L = st.invariants()
        worst_rise = max(worst_rise, (E - E_prev) / E0)
        worst_p, worst_l = max(worst_p, _rel(P, P0)), max(worst_l, _rel(L, L0))
        E_prev = E
    print(f"\nfriction, 30 s: E/E0 = {E / E0:.3g}, largest one-step change {worst_rise:.2e} E0, "
          f"momentum drift P {worst_p:.2e}, L {worst_l:.2e}")
    assert worst_rise <= 16 * EPS, f"energy rose by {worst_rise:.3g} E0 in one step"
    assert E < 0.75 * E0, "friction must dissipate"
    assert worst_p <= 1e-12 and worst_l <= 1e-12, "joint friction is internal: momentum must be conserved"


@pytest.mark.parametrize("h", [0.4, 0.2])
def test_rk4_converges_at_fourth_order(h):
    """The tree's joint state after 20 s against a 5 ms reference: error ∝ h⁴ (ratio 16 per
    halving, accepted within [12, 20])."""
    errs = []
    ref = Stepper(free_tree(friction=False))
    for _ in range(4000):
        ref.step(5e-3)
    for hh in (h, h / 2):
        st = Stepper(free_tree(friction=False))
        for _ in range(int(round(20.0 / hh))):
            st.step(hh)
        errs.append(max(np.max(np.abs(st.q - ref.q)), np.max(np.abs(st.qd - ref.qd))))
    ratio = errs[0] / errs[1]
    assert 12.0 <= ratio <= 20.0, f"error ratio {ratio:.3g} for h {h} -> {h / 2} (errors {errs})"
