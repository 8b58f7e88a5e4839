"""Articulated-tree dynamics (systems/multibody/kernels.py) against Pinocchio, an independent
implementation of the same algorithms (Carpentier et al., 2019): forward dynamics (ABA), the
joint-space mass matrix (CRBA) and inverse dynamics (RNEA) for chains and branched trees of 1-20
links with revolute (aligned and unaligned), prismatic, spherical, fixed and free joints, random
kinematics, states, joint forces and external link forces (fixed seeds).

Tolerance 1e-12 relative (max-norm of the difference over the max-norm of Pinocchio's result):
both codes evaluate the same O(n) recursions in float64 in different orders, so they agree to a
few hundred ulps times the conditioning of the tree; the measured worst case is printed by
``test_pinocchio_agreement_report`` (-s)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from components.multibody import FIXED, FREE, NV, PRISMATIC, REVOLUTE, SPHERICAL, tree_spec
from systems.multibody.spatial import new_scratch
from systems.multibody.algorithms import aba, crba, rnea

pin = pytest.importorskip("pinocchio", reason="pinocchio (pip package 'pin', the 'test' extra) is not installed")

RTOL = 1e-12


def _random_inertia(rng):
    moments = rng.uniform(1.0, 2.0, 3)                   # any three in [1, 2] obey I3 <= I1 + I2
    R = Rotation.random(random_state=rng).as_matrix()
    return R @ np.diag(moments) @ R.T


def _random_quat(rng):
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def _depth_first(parents):
    """The same tree renumbered in depth-first pre-order. Pinocchio's CRBA assumes every joint's
    subtree occupies a contiguous range of velocity indices (``nvSubtree``); for a parent-first
    order that is not depth-first (parents [-1, 0, 0, 1]) it returns a wrong mass matrix, so the
    comparisons use depth-first trees (our kernels only need parents before children)."""
    children = {k: [] for k in range(-1, len(parents))}
    for k, p in enumerate(parents):
        children[p].append(k)
    order, stack = [], list(reversed(children[-1]))
    while stack:
        k = stack.pop()
        order.append(k)
        stack.extend(reversed(children[k]))
    new = {old: i for i, old in enumerate(order)}
    return [-1 if parents[old] < 0 else new[parents[old]] for old in order]


def random_tree(rng, n, *, chain=False, kinds=None, root="free", fixed_share=0.1):
    """A random tree of n links: parents, kinds, placements, mass properties, states, forces."""
    parents = [-1] + [(k - 1 if chain else int(rng.integers(0, k))) for k in range(1, n)]
    parents = _depth_first(parents)
    if kinds is None:
        pool = [REVOLUTE, REVOLUTE, PRISMATIC, SPHERICAL, FREE]
        kinds = [root] + [FIXED if rng.random() < fixed_share else pool[int(rng.integers(0, len(pool)))]
                          for _ in range(1, n)]
    kinds = [{"free": FREE, "fixed": FIXED, "revolute": REVOLUTE, "spherical": SPHERICAL,
              "prismatic": PRISMATIC}.get(k, k) for k in kinds]
    axis = np.zeros((n, 3))
    for k in range(n):
        if rng.random() < 0.4:                          # aligned axes take Pinocchio's RX/RY/RZ path
            axis[k, int(rng.integers(0, 3))] = 1.0
        else:
            axis[k] = rng.normal(size=3)
    q = np.zeros((n, 7))
    qd = np.zeros((n, 6))
    tau = np.zeros((n, 6))
    for k, kk in enumerate(kinds):
        if kk in (REVOLUTE, PRISMATIC):
            q[k, 0] = rng.uniform(-np.pi, np.pi)
            qd[k, 0] = rng.normal()
            tau[k, 0] = rng.normal()
        elif kk == SPHERICAL:
            q[k, :4] = _random_quat(rng)
            qd[k, :3] = rng.normal(size=3)
            tau[k, :3] = rng.normal(size=3)
        elif kk == FREE:
            q[k, :3] = rng.normal(size=3)
            q[k, 3:] = _random_quat(rng)
            qd[k] = rng.normal(size=6)
            tau[k] = rng.normal(size=6)
    inertia = np.array([_random_inertia(rng) for _ in range(n)])
    com = rng.normal(scale=0.3, size=(n, 3))
    offset = rng.normal(scale=0.5, size=(n, 3))
    rotation = np.array([_random_quat(rng) for _ in range(n)])
    rotation[rng.random(n) < 0.3] = [1.0, 0.0, 0.0, 0.0]   # joint frames along the parent's: the kernels' shortcut
    spec = tree_spec(parents=parents, kinds=kinds, mass=rng.uniform(0.5, 3.0, n), inertia=inertia, com=com,
                     axis=axis, offset=offset, rotation=rotation, q=q, qd=qd)
    fext = rng.normal(size=(n, 6))
    return spec, tau, fext


# ------------------------------------------------------------------------------ the Pinocchio twin
def _se3(quat_wxyz, p):
    w, x, y, z = quat_wxyz
    return pin.SE3(pin.Quaternion(w, x, y, z).matrix(), np.asarray(p, float))


def _free_R(spec, k):
    w, x, y, z = spec.q[k, 3:7]
    return pin.Quaternion(w, x, y, z).matrix()


def pinocchio_model(spec, gravity=(0.0, 0.0, 0.0)):
    """The same tree in Pinocchio; fixed links are merged into their parent joint's body."""
    model = pin.Model()
    model.gravity = pin.Motion(np.asarray(gravity, float), np.zeros(3))
    jid = []
    place = []                     # placement of link k's body frame in the frame of joint jid[k]
    for k in range(spec.n):
        p = int(spec.parents[k])
        pj, pplace = (0, pin.SE3.Identity()) if p < 0 else (jid[p], place[p])
        M = pplace * _se3(spec.rotation[k], spec.offset[k])
        kk = int(spec.kind[k])
        if kk == FIXED:
            jid.append(pj)
            place.append(M)
        else:
            a = spec.axis[k]
            aligned = [i for i in range(3) if abs(a[i]) == 1.0 and a[i] > 0]
            if kk == REVOLUTE:
                jm = ([pin.JointModelRX, pin.JointModelRY, pin.JointModelRZ][aligned[0]]() if aligned
                      else pin.JointModelRevoluteUnaligned(a))
            elif kk == PRISMATIC:
                jm = ([pin.JointModelPX, pin.JointModelPY, pin.JointModelPZ][aligned[0]]() if aligned
                      else pin.JointModelPrismaticUnaligned(a))
            elif kk == SPHERICAL:
                jm = pin.JointModelSpherical()
            else:
                jm = pin.JointModelFreeFlyer()
            jid.append(model.addJoint(pj, jm, M, f"j{k}"))
            place.append(pin.SE3.Identity())
        model.appendBodyToJoint(jid[k], pin.Inertia(float(spec.mass[k]), spec.com[k].copy(), spec.inertia[k].copy()),
                                place[k])
    return model, jid, place


def pin_state(spec, qd=None):
    """Pinocchio's q and v (free joints: quaternion x, y, z, w; velocity in body axes)."""
    qd = spec.qd if qd is None else qd
    qs, vs = [], []
    for k in range(spec.n):
        kk = int(spec.kind[k])
        if kk in (REVOLUTE, PRISMATIC):
            qs.append(spec.q[k, :1])
            vs.append(qd[k, :1])
        elif kk == SPHERICAL:
            qs.append(spec.q[k, [1, 2, 3, 0]])
            vs.append(qd[k, :3])
        elif kk == FREE:
            qs.append(np.concatenate([spec.q[k, :3], spec.q[k, [4, 5, 6, 3]]]))
            vs.append(np.concatenate([_free_R(spec, k).T @ qd[k, :3], qd[k, 3:]]))
    return (np.concatenate(qs), np.concatenate(vs)) if qs else (np.zeros(0), np.zeros(0))


def to_pin_v(spec, x):
    """A per-link generalised force (or velocity-like) array [n, 6] in state units → Pinocchio's
    vector: a free joint's first three components go from joint axes to body axes."""
    out = []
    for k in range(spec.n):
        kk = int(spec.kind[k])
        if kk in (REVOLUTE, PRISMATIC):
            out.append(x[k, :1])
        elif kk == SPHERICAL:
            out.append(x[k, :3])
        elif kk == FREE:
            out.append(np.concatenate([_free_R(spec, k).T @ x[k, :3], x[k, 3:]]))
    return np.concatenate(out)


def pin_fext(spec, model, jid, place, fext):
    """Our link forces [n; f] (body axes, link origin) as Pinocchio's per-joint local forces."""
    out = [pin.Force.Zero() for _ in range(model.njoints)]
    for k in range(spec.n):
        f = pin.Force(fext[k, 3:].copy(), fext[k, :3].copy())
        out[jid[k]] = out[jid[k]] + place[k].act(f)
    return out


def our_qdd_as_pin(spec, qdd):
    """Our accelerations (free: p̈ in joint axes) as Pinocchio's (free: body-axes twist rate)."""
    out = []
    for k in range(spec.n):
        kk = int(spec.kind[k])
        if kk in (REVOLUTE, PRISMATIC):
            out.append(qdd[k, :1])
        elif kk == SPHERICAL:
            out.append(qdd[k, :3])
        elif kk == FREE:
            R = _free_R(spec, k)
            u = R.T @ spec.qd[k, :3]
            w = spec.qd[k, 3:]
            out.append(np.concatenate([R.T @ qdd[k, :3] - np.cross(w, u), qdd[k, 3:]]))
    return np.concatenate(out)


def pin_qdd_as_ours(spec, a):
    """Pinocchio's acceleration vector as our per-link [n, 6] array."""
    out = np.zeros((spec.n, 6))
    i = 0
    for k in range(spec.n):
        kk = int(spec.kind[k])
        nv = NV[kk]
        x = a[i:i + nv]
        if kk == FREE:
            R = _free_R(spec, k)
            u = R.T @ spec.qd[k, :3]
            w = spec.qd[k, 3:]
            out[k, :3] = R @ (x[:3] + np.cross(w, u))
            out[k, 3:] = x[3:]
        else:
            out[k, :nv] = x
        i += nv
    return out


def free_T(spec):
    """T with u_pinocchio = T qd_ours (block R_Jᵀ on each free joint's linear velocity)."""
    blocks = []
    for k in range(spec.n):
        kk = int(spec.kind[k])
        nv = NV[kk]
        B = np.eye(nv)
        if kk == FREE:
            B[:3, :3] = _free_R(spec, k).T
        blocks.append(B)
    N = sum(b.shape[0] for b in blocks)
    T = np.zeros((N, N))
    i = 0
    for B in blocks:
        T[i:i + B.shape[0], i:i + B.shape[0]] = B
        i += B.shape[0]
    return T


# ------------------------------------------------------------------------------ our kernels on one tree
def ours_aba(spec, tau, fext, a0=np.zeros(6)):
    M, V = new_scratch(spec.n)
    qdd = np.zeros((spec.n, 6))
    aba.cpu(0, spec.n, spec.record(), tau, fext, a0, qdd, M, V)
    return qdd


def ours_crba(spec):
    M, V = new_scratch(spec.n)
    N = int(sum(spec.nv[~spec.locked]))
    H = np.zeros((max(N, 1), max(N, 1)))
    crba.cpu(0, spec.n, spec.record(), H, M, V)
    return H[:N, :N]


def ours_rnea(spec, qdd, fext, a0=np.zeros(6)):
    M, V = new_scratch(spec.n)
    tau = np.zeros((spec.n, 6))
    rnea.cpu(0, spec.n, spec.record(), qdd, fext, a0, tau, M, V)
    return tau


def rel(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


CASES = [(n, chain, seed) for n in (1, 2, 3, 5, 8, 13, 20) for chain in (True, False) for seed in (0, 1)
         if not (n == 1 and not chain)]


def _compare(n, chain, seed, gravity=(0.0, 0.0, 0.0), root="free"):
    rng = np.random.default_rng(1000 * n + 10 * seed + int(chain))
    spec, tau, fext = random_tree(rng, n, chain=chain, root=root)
    model, jid, place = pinocchio_model(spec, gravity)
    data = model.createData()
    q, v = pin_state(spec)
    a0 = np.concatenate([np.zeros(3), -np.asarray(gravity, float)])
    fx = pin_fext(spec, model, jid, place, fext)
    errs = {}
    if model.nv:
        a_pin = pin.aba(model, data, q, v, to_pin_v(spec, tau), fx)
        qdd = ours_aba(spec, tau, fext, a0)
        errs["aba"] = rel(our_qdd_as_pin(spec, qdd), a_pin)
        H_pin = pin.crba(model, data, q)
        H_pin = np.triu(H_pin) + np.triu(H_pin, 1).T
        T = free_T(spec)
        errs["crba"] = rel(ours_crba(spec), T.T @ H_pin @ T)
        a_rand = rng.normal(size=model.nv)
        tau_pin = pin.rnea(model, data, q, v, a_rand, fx)
        tau_ours = ours_rnea(spec, pin_qdd_as_ours(spec, a_rand), fext, a0)
        errs["rnea"] = rel(to_pin_v(spec, tau_ours), tau_pin)
    return errs


@pytest.mark.parametrize("n,chain,seed", CASES)
def test_against_pinocchio(n, chain, seed):
    errs = _compare(n, chain, seed)
    for name, e in errs.items():
        assert e <= RTOL, f"{name}: relative difference {e:.3g} > {RTOL:g} (n={n}, chain={chain}, seed={seed})"


@pytest.mark.parametrize("root", ["fixed", "revolute", "spherical", "prismatic"])
def test_against_pinocchio_fixed_base_with_gravity(root):
    """Roots jointed to the inertial frame in a uniform field: our a0 = [0; −g] vs model.gravity."""
    for n, chain in ((1, True), (6, True), (12, False)):
        errs = _compare(n, chain, 7, gravity=(0.3, -1.2, -9.81), root=root)
        for name, e in errs.items():
            assert e <= RTOL, f"{name}: relative difference {e:.3g} > {RTOL:g} (root {root}, n={n})"


def test_pinocchio_agreement_report():
    worst = {}
    for n, chain, seed in CASES:
        for name, e in _compare(n, chain, seed).items():
            worst[name] = max(worst.get(name, 0.0), e)
    print("\nworst relative difference vs Pinocchio over", len(CASES), "trees:",
          {k: f"{v:.2e}" for k, v in worst.items()})
    assert all(v <= RTOL for v in worst.values())


def _locked_as_fixed(spec):
    """The tree with every locked joint replaced by a fixed one at the locked position (its joint
    motion folded into the placement) — the model Pinocchio gets."""
    kind = spec.kind.copy()
    rot, off = spec.rotation.copy(), spec.offset.copy()
    q, qd = spec.q.copy(), spec.qd.copy()
    for k in np.flatnonzero(spec.locked):
        kk = int(kind[k])
        RT = Rotation.from_quat(spec.rotation[k, [1, 2, 3, 0]]).as_matrix()
        RJ, pJ = np.eye(3), np.zeros(3)
        if kk == REVOLUTE:
            RJ = Rotation.from_rotvec(spec.axis[k] * spec.q[k, 0]).as_matrix()
        elif kk == PRISMATIC:
            pJ = spec.axis[k] * spec.q[k, 0]
        elif kk == SPHERICAL:
            RJ = Rotation.from_quat(spec.q[k, [1, 2, 3, 0]]).as_matrix()
        elif kk == FREE:
            RJ, pJ = Rotation.from_quat(spec.q[k, [4, 5, 6, 3]]).as_matrix(), spec.q[k, :3]
        rot[k] = Rotation.from_matrix(RT @ RJ).as_quat()[[3, 0, 1, 2]]
        off[k] = spec.offset[k] + RT @ pJ
        kind[k] = FIXED
        q[k], qd[k] = 0.0, 0.0
    return tree_spec(parents=spec.parents, kinds=kind, mass=spec.mass, inertia=spec.inertia, com=spec.com,
                     axis=spec.axis, offset=off, rotation=rot, q=q, qd=qd)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_locked_joints_are_fixed_joints(seed):
    """Locked joints (with non-zero stored rates, which must be ignored) against Pinocchio's model
    of the same tree with those joints fixed at their locked positions."""
    import dataclasses

    rng = np.random.default_rng(500 + seed)
    spec, tau, fext = random_tree(rng, 12, fixed_share=0.0)
    locked = rng.random(spec.n) < 0.4
    locked[0] = seed == 2                         # one case locks the free root to the inertial frame
    spec = dataclasses.replace(spec, locked=locked)
    ref = _locked_as_fixed(spec)
    model, jid, place = pinocchio_model(ref)
    q, v = pin_state(ref)
    a_pin = pin.aba(model, model.createData(), q, v, to_pin_v(ref, tau), pin_fext(ref, model, jid, place, fext))
    qdd = ours_aba(spec, tau, fext)
    assert np.all(qdd[locked] == 0.0)
    assert rel(our_qdd_as_pin(ref, qdd), a_pin) <= RTOL
    H_pin = pin.crba(model, model.createData(), q)
    T = free_T(ref)
    assert rel(ours_crba(spec), T.T @ (np.triu(H_pin) + np.triu(H_pin, 1).T) @ T) <= RTOL
