"""GUNNS' single rigid-body validation case against JEOD (seed 003, "Validation").

The case: a body of ``m = 1e6`` kg at rest at the origin, Euler angles and rates zero, inertia
``Ixx = 1e7, Ixy = −2e4, Ixz = −3e4, Iyy = 4e7, Iyz = −5e4, Izz = 6e7`` kg m², a single force
``{3000, 0, 0}`` N applied at ``{1, 1, 1}`` m in the body reference frame, Trick's Euler
integrator at 0.01 s, output Euler angles in the 1-2-3 sequence. This scene also offers the same
body with its centre of mass offset from the reference point (``com``, e.g. ``{0.5, −0.2, 0.1}``
m), where the 6×6 mass matrix couples translation and rotation (seed 003 "Advantages").

Sign convention of the products of inertia. GUNNS names ``mIxy`` etc. "product of inertia"
(``GunnsDynSingleRigidMassProps.hh``) but puts them *unchanged* into the inertia tensor
(``GunnsDynSingleRigidStateDeriv::buildAdmittanceMatrix``: ``[Icm] = [[Ixx, Ixy, Ixz], [Ixy,
Iyy, Iyz], [Ixz, Iyz, Izz]]``, and the angular momentum ``H = [Icm] ω`` in ``buildSourceVector``);
JEOD likewise takes the full tensor. So the seed's numbers are the tensor's off-diagonal
entries: the tensor here is ``[[1e7, −2e4, −3e4], [−2e4, 4e7, −5e4], [−3e4, −5e4, 6e7]]``, i.e.
in seed 002's convention (Eq. 1.13, off-diagonal = −∫xy dm) the products ∫xy dm are +2e4, +3e4,
+5e4 kg m². :func:`gunns_inertia` does this conversion.

The seed's inertia is not that of any real body: its principal moments (≈ 1.0e7, 4.0e7, 6.0e7)
violate the triangle inequality (6e7 > 1e7 + 4e7), which :func:`components.rigid.rigid_body`
rejects. The equations of motion only need a symmetric positive-definite tensor, so this scene
builds the body with ``allow_nonphysical_inertia=True`` (:func:`scenes._common.body_components`).

Note on the CoM-offset case (read from nasa/gunns ``GunnsDynSingleRigidStateDeriv.cpp`` at commit
df5122a): GUNNS' rotational rows use the torque about the CoM and the gyroscopic term
``ω × (I_cm ω)`` with the mass matrix about the reference point. The equations of
:mod:`systems.dynamics.rigid_body` use the moment about the reference point and ``ω × (I_P ω)``; the two
right-hand sides differ by ``c × (F − m ω×(ω×c))`` whenever ``c ≠ 0``. tumble's form is the one
that agrees with the CoM Newton–Euler equations (the independent reference of the tests); the
published GUNNS/JEOD comparison has ``c = 0``, where both coincide.

Scene parameters (keyword-only): ``method`` (``"euler"``, as Trick's in the seed), ``dt`` [s]
(0.01), ``t_end`` [s] (100), ``record_every`` [frames] (100), ``euler_mode`` (False), ``com`` [m]
(``(0, 0, 0)``), ``force`` [N] (``(3000, 0, 0)``, body frame), ``force_point`` [m] (``(1, 1, 1)``,
body frame, from the reference point). Use :func:`euler_123` for the seed's output angles.
"""

from __future__ import annotations

import numpy as np

from components.loads import AppliedLoad, LoadFrame, LoadKind
from ecs import InputError
from scenes._common import RIGID_COLUMNS, rigid_scene
from ecs.attitude import quat_to_euler
from systems.dynamics.loads import ApplyLoads

DESCRIPTION = "NASA GUNNS rigid-body validation case: 1e6 kg body, 3 kN force at an offset point (seed 003)"

MASS = 1.0e6
#: (Ixx, Ixy, Ixz, Iyy, Iyz, Izz) of the seed [kg m²], GUNNS' ``GunnsDynSingleRigidMassProps`` fields.
INERTIA_FIELDS = (1.0e7, -2.0e4, -3.0e4, 4.0e7, -5.0e4, 6.0e7)


def gunns_inertia(ixx, ixy, ixz, iyy, iyz, izz) -> np.ndarray:
    """The inertia tensor GUNNS builds from its mass-property fields (off-diagonals taken as given)."""
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]], float)


def euler_123(attitude) -> np.ndarray:
    """GUNNS' output angles (1-2-3 sequence) from ``body_attitude``, shape [..., 4] -> [..., 3] rad.

    GUNNS stores the inertial→body transformation quaternion (``mQuaternion4 (inrtl to body)``);
    ``GunnsDynEuler123::computeQuatSeq`` builds it from the angles as
    ``(c1c2c3 − s1s2s3, −(s1c2c3 + c1s2s3), −(c1s2c3 − s1c2s3), −(c1c2s3 + s1s2c3))``, the
    conjugate of ``q_x(φ) ⊗ q_y(θ) ⊗ q_z(ψ)``. That product is this project's ``body_attitude``
    for the intrinsic "123" angles (body reached from inertial by x, then the new y, then the new
    z), so GUNNS' angles are :func:`ecs.attitude.quat_to_euler` ``(body_attitude, "123")``.
    """
    return quat_to_euler(np.asarray(attitude, float), "123")


def build(*, method: str = "euler", dt: float = 0.01, t_end: float = 100.0, record_every: int | None = 100,
          euler_mode: bool = False, com=(0.0, 0.0, 0.0), force=(3000.0, 0.0, 0.0), force_point=(1.0, 1.0, 1.0)):
    """The GUNNS validation scene (see the module docstring for the parameters)."""
    f = np.asarray(force, float)
    p = np.asarray(force_point, float)
    for name, v in (("force", f), ("force_point", p)):
        if v.shape != (3,) or not np.all(np.isfinite(v)):
            raise InputError(name, np.asarray(v).tolist(), "must be 3 finite numbers (body frame)")

    def load(body):
        return (AppliedLoad(body=body, kind=int(LoadKind.FORCE), frame=int(LoadFrame.BODY), point=p, vector=f),)

    params = dict(method=method, dt=dt, t_end=t_end, record_every=record_every, euler_mode=bool(euler_mode),
                  com=list(map(float, com)), force=f.tolist(), force_point=p.tolist())
    return rigid_scene("gunns", DESCRIPTION,
                       body=dict(mass=MASS, inertia=gunns_inertia(*INERTIA_FIELDS), com=com),
                       method=method, dt=dt, t_end=t_end, record_every=record_every, euler_mode=euler_mode,
                       systems=[ApplyLoads()], loads=[load], record=RIGID_COLUMNS, final=RIGID_COLUMNS,
                       params=params, allow_nonphysical_inertia=True)
