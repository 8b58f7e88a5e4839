"""Facet contact data (JEOD v5.0 Contact Model, seed 000): facets, contact surfaces, materials,
pair interactions and grounds.

What JEOD calls a class hierarchy is data here (seed 000 §3.4):

* **ContactParams** (§3.4.6) is only a name used to match facets with a pair interaction: here a
  *material name*, stored in ``facet_material`` as :func:`material_id` (a stable 63-bit hash, so
  no world is needed to author a facet and the id never depends on registration order).
* **ContactFacet** (§3.4.5) — a vehicle point on one dynamic body plus a shape — is the
  :class:`Facet` component, one entity per facet, attached to its body through the entity
  reference ``facet_body``. Two kinds (:class:`FacetKind`), built with :func:`point_facet` and
  :func:`line_facet`:

  - *point* (JEOD ``PointContactFacet`` on a ``FlatPlateCircular``): a sphere of radius ``r``
    about the body point ``facet_point``;
  - *line* (JEOD ``LineContactFacet`` on a ``Cylinder``): a capsule — the segment of length ``L``
    centred on ``facet_point`` along the body axis ``facet_axis`` (JEOD puts the end points at
    ``±L/2`` along the facet's normal), swept by radius ``r`` (hemispherical ends).

  Both kinds live in one table (one component type with a ``facet_kind`` column), so one kernel
  loops over every facet pair of a sample. A new facet kind adds a :class:`FacetKind` value and
  its pair geometry in :mod:`systems.facets.geometry` (seed 000 §4.3.2).
* **ContactSurface** (§3.4.4) — the per-body sum of its facets' forces and torques — is the
  optional :class:`ContactSurface` component on the body (``contact_force``, ``contact_torque``,
  logged like JEOD's ``contact_surface.contact_force``). Its ``contact_tree`` column carries the
  multibody tree id used for exclusion (requirement Contact_4): facets on one body, or on bodies
  with the same tree id ``>= 0``, never interact.
* **PairInteraction** (§3.4.7) — the force law registered for an unordered pair of material names
  — is an entry of the :class:`PairInteractions` resource: the built-in
  :class:`SpringInteraction` (eq. 3.1, §3.4.8) or a :class:`UserInteraction` wrapping a compiled
  (``numba.njit``) function written in a scene file. A facet pair exists only when an interaction
  matches its two materials (§3.4.2).
* **Ground** (§4.3.3, ``SIM_ground_contact``): the :class:`Grounds` resource holds fixed
  surfaces — :class:`PlaneGround`, :class:`SphereGround`, :class:`EllipsoidGround` (a planet) and
  :class:`SdfGround` (a terrain given as a compiled signed-distance function) — each with its own
  material, matched with facet materials through the same :class:`PairInteractions`.

Units SI throughout; JEOD's verification inputs are in lbf/in and lbf·s/in: :data:`LBF_PER_IN`
and :data:`LBF_S_PER_IN` convert them exactly (1 lbf = 0.45359237 kg × 9.80665 m/s², 1 in =
0.0254 m).
"""

from __future__ import annotations

import enum
import hashlib
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ecs import InputError, column, component
from ecs.attitude import check_quaternion
from ecs.errors import positive_number
from ecs.rules import nonnegative, positive

#: 1 lbf/in in N/m (exact: 0.45359237 × 9.80665 / 0.0254).
LBF_PER_IN = 0.45359237 * 9.80665 / 0.0254
#: 1 lbf·s/in in N·s/m (exact).
LBF_S_PER_IN = LBF_PER_IN

#: Length of a pair interaction's parameter row (built-in and user interactions alike).
PARAM_SIZE = 8


class FacetKind(enum.IntEnum):
    """Facet shapes (closed category; a new kind needs its pair geometry in systems.facets.geometry)."""

    POINT = 0  #: sphere of radius r about facet_point
    LINE = 1   #: capsule: segment of length L centred on facet_point along facet_axis, radius r


@component("facet")
class Facet:
    """A contact facet on one body (JEOD ContactFacet). Build with :func:`point_facet` / :func:`line_facet`."""

    body: int = column(dtype="entity", doc="the body carrying the facet")
    kind: int = column(dtype=np.int8, doc="FacetKind: 0 point (sphere), 1 line (capsule)")
    material: int = column(dtype=np.int64, doc="material_id of the facet's contact-parameter (material) name")
    point: np.ndarray = column("m", shape=3, frame="body",
                               doc="facet centre relative to the body reference point (segment midpoint for lines)")
    axis: np.ndarray = column("1", shape=3, frame="body", default=[1.0, 0.0, 0.0],
                              doc="unit direction of a line facet's segment (unused by point facets)")
    radius: float = column("m", default=1.0, doc="sphere / capsule radius", check=positive("m"))
    length: float = column("m", doc="segment length of a line facet (0 for point facets)", check=nonnegative("m"))


@component("contact")
class ContactSurface:
    """Per-body contact sums (JEOD ContactSurface) and the multibody tree id for exclusion."""

    force: np.ndarray = column("N", shape=3, frame="inertial",
                               doc="sum of the contact forces on the body at the last evaluation")
    torque: np.ndarray = column("N m", shape=3, frame="body",
                                doc="sum of the contact torques about the reference point at the last evaluation")
    tree: int = column(dtype=np.int64, default=-1,
                       doc="multibody tree id: bodies with one id >= 0 never contact each other (-1: own tree)")


# --------------------------------------------------------------------------- materials
_MATERIAL_NAMES: dict[int, str] = {}


def material_id(name: str) -> int:
    """Stable integer id of a material (contact-parameter) name: a 63-bit BLAKE2b hash.

    The id is what ``facet_material`` stores; it does not depend on registration order, on the
    process or on the machine, so per-sample overrides and stores stay reproducible.

    Raises:
        InputError: ``name`` is not a non-empty string.
    """
    if not isinstance(name, str) or not name.strip():
        raise InputError("material", name, "must be a non-empty string (a contact-parameter name such as 'steel')")
    h = int.from_bytes(hashlib.blake2b(name.encode("utf-8"), digest_size=8).digest(), "little") & (2**63 - 1)
    _MATERIAL_NAMES[h] = name
    return h


def material_name(mid: int) -> str:
    """The name behind a :func:`material_id` seen in this process (or ``'#<id>'``)."""
    return _MATERIAL_NAMES.get(int(mid), f"#{int(mid)}")


# --------------------------------------------------------------------------- facets
def _vec3(name: str, v) -> np.ndarray:
    a = np.asarray(v, dtype=float)
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise InputError(name, np.asarray(v).tolist(), "must be a finite vector of 3 numbers")
    return a




def _body_ref(body) -> int:
    if isinstance(body, (bool, np.bool_)) or not isinstance(body, (int, np.integer)) or int(body) < 0:
        raise InputError("facet body", body, "must be the entity id of a rigid body (world.spawn's return value)")
    return int(body)


def point_facet(body: int, *, radius: float, point=(0.0, 0.0, 0.0), material: str = "default") -> Facet:
    """A point facet (JEOD PointContactFacet): a sphere of ``radius`` [m] about the body point ``point``.

    Args:
        body: entity id of the body carrying the facet.
        radius: sphere radius [m], > 0.
        point: sphere centre relative to the body reference point, body axes [m].
        material: contact-parameter (material) name matched by :class:`PairInteractions`.

    Raises:
        InputError: bad body id, radius, point or material.
    """
    return Facet(body=_body_ref(body), kind=int(FacetKind.POINT), material=material_id(material),
                 point=_vec3("facet point", point), axis=np.array([1.0, 0.0, 0.0]),
                 radius=positive_number(radius, "facet radius", "m"), length=0.0)


def line_facet(body: int, *, radius: float, length: float, point=(0.0, 0.0, 0.0), axis=(1.0, 0.0, 0.0),
               material: str = "default") -> Facet:
    """A line facet (JEOD LineContactFacet): a capsule of ``radius`` about a segment of ``length``.

    The segment runs from ``point − L/2·axis`` to ``point + L/2·axis`` (body axes), as JEOD places
    the end points at ``±length/2`` along the facet normal.

    Args:
        body: entity id of the body carrying the facet.
        radius: capsule radius [m], > 0.
        length: segment length [m], > 0 (use :func:`point_facet` for a sphere).
        point: segment midpoint relative to the body reference point, body axes [m].
        axis: segment direction, body axes (normalised here; must not be zero).
        material: contact-parameter (material) name.

    Raises:
        InputError: bad body id, radius, length, point, axis or material.
    """
    a = _vec3("facet axis", axis)
    n = float(np.linalg.norm(a))
    if not n > 0.0:
        raise InputError("facet axis", a.tolist(), "must be a non-zero direction")
    return Facet(body=_body_ref(body), kind=int(FacetKind.LINE), material=material_id(material),
                 point=_vec3("facet point", point), axis=a / n, radius=positive_number(radius, "facet radius", "m"),
                 length=positive_number(length, "facet length", "m"))


def contact_surface(*, tree: int = -1) -> ContactSurface:
    """The :class:`ContactSurface` of a body; ``tree`` >= 0 groups bodies attached in one multibody tree."""
    if isinstance(tree, (bool, np.bool_)) or not isinstance(tree, (int, np.integer)) or int(tree) < -1:
        raise InputError("contact tree", tree, "must be an integer >= -1 (-1: the body is its own tree)")
    return ContactSurface(tree=int(tree))


# --------------------------------------------------------------------------- interactions
class InteractionKind(enum.IntEnum):
    """How a pair interaction computes its force (values >= USER index the user functions)."""

    SPRING = 0  #: built-in spring-damper with Coulomb friction (eq. 3.1)
    USER = 1    #: first user function; user function j has kind USER + j


class SpringMode(enum.IntEnum):
    """Normal-force variants of the built-in spring (eq. 3.1, §3.4.8)."""

    JEOD = 0   #: f_n = k x + c ẋ, may pull while separating (as JEOD's SpringPairInteraction)
    CLAMP = 1  #: f_n = max(0, k x + c ẋ): contact never pulls
    LATCH = 2  #: sign reversed about the latch point: f_n = −k d + c ẋ (d: core distance), pulls together


class FrictionModel(enum.IntEnum):
    COULOMB = 0  #: |F_t| = μ|F_N| against the tangential slip velocity
    JEOD = 1     #: |F_t| = μ|F_N| |v_t|/|v| (JEOD projects the *unit* relative velocity on the tangent plane)


class ContactLaw(enum.IntEnum):
    """Where the pair's force acts and which relative velocity it sees (:mod:`systems.facets.contact`)."""

    MOMENTUM = 0  #: ±F at one common contact point (the midpoint): momentum and angular momentum exact
    JEOD = 1      #: JEOD's SpringPairInteraction: each body's force at its own surface point, JEOD friction


@dataclass(frozen=True)
class SpringInteraction:
    """JEOD's default interaction (seed 000 eq. 3.1, §3.4.8, JEOD ``SpringPairInteraction``).

    Normal force along the penetration direction ``k·x + c·ẋ`` (``x`` penetration [m], ``ẋ`` its
    rate: the damping acts on the normal relative velocity only), a friction force ``μ|F_N|``
    against the tangential relative velocity, equal and opposite on the two bodies.

    Two laws (``law``), which differ only when there is friction or the facets spin:

    * ``"momentum"`` (default): ``+F`` on one body and ``−F`` on the other at ONE common contact
      point, the midpoint of the two surface points, so the pair conserves linear and angular
      momentum exactly; friction ``"coulomb"`` (default) or ``"jeod"`` (below).
    * ``"jeod"``: JEOD-compatible, as JEOD v5.0's ``SpringPairInteraction`` computes it: each
      body's force acts at its OWN facet surface point (the points are ``x·n`` apart, so the pair
      exerts a net moment ``x n × F_t`` and angular momentum is not conserved), JEOD's friction
      ``−μ|F_N| v_t/|v|`` with the relative velocity taken where JEOD takes it
      (:mod:`systems.facets.contact`). Use it to reproduce JEOD's runs (the ``jeod-*`` scenes).

    Args:
        k: spring constant [N/m], >= 0.
        c: damping coefficient [N s/m], >= 0.
        mu: friction coefficient [-], >= 0.
        mode: ``"jeod"`` (damping may pull, as JEOD), ``"clamp"`` (normal force clamped at 0) or
            ``"latch"`` (spring sign reversed: pulls overlapping facets together, §3.4.8).
        friction: ``"coulomb"`` (``μ|F_N| v_t/|v_t|``) or ``"jeod"`` (JEOD's ``μ|F_N| v_t/|v|``);
            ``None`` (default): the law's own, Coulomb for ``"momentum"`` and JEOD's for ``"jeod"``
            (the only one that law accepts).
        slip_velocity: regularisation of Coulomb friction [m/s]: below it the friction force grows
            linearly with the slip speed (0: the exact sign law). Coulomb friction only.
        law: ``"momentum"`` (default) or ``"jeod"``.
    """

    k: float
    c: float = 0.0
    mu: float = 0.0
    mode: str = "jeod"
    friction: str | None = None
    slip_velocity: float = 0.0
    law: str = "momentum"

    def __post_init__(self):
        for name in ("k", "c", "mu", "slip_velocity"):
            v = getattr(self, name)
            try:
                x = float(v)
            except (TypeError, ValueError):
                raise InputError(f"spring interaction {name}", v, "must be a finite number >= 0") from None
            if not (math.isfinite(x) and x >= 0.0):
                raise InputError(f"spring interaction {name}", v, "must be a finite number >= 0")
        if str(self.mode).lower() not in ("jeod", "clamp", "latch"):
            raise InputError("spring interaction mode", self.mode, "must be 'jeod', 'clamp' or 'latch'")
        if str(self.law).lower() not in ("momentum", "jeod"):
            raise InputError("spring interaction law", self.law,
                             "must be 'momentum' (one common contact point, momentum-exact) or 'jeod' "
                             "(JEOD's SpringPairInteraction)")
        if self.friction is not None and str(self.friction).lower() not in ("coulomb", "jeod"):
            raise InputError("spring interaction friction", self.friction, "must be 'coulomb' or 'jeod'")
        if str(self.law).lower() == "jeod":
            if self.friction is not None and str(self.friction).lower() != "jeod":
                raise InputError("spring interaction friction", self.friction,
                                 "law 'jeod' is JEOD's SpringPairInteraction, whose friction is μ|F_N| v_t/|v|: "
                                 "leave friction unset (or 'jeod'), or use law='momentum' for Coulomb friction")
            if float(self.slip_velocity) != 0.0:
                raise InputError("spring interaction slip_velocity", self.slip_velocity,
                                 "must be 0 with law 'jeod' (JEOD's friction has no regularisation)")

    @property
    def kind(self) -> int:
        return int(InteractionKind.SPRING)

    @property
    def friction_model(self) -> str:
        """The friction actually used: ``friction``, or the law's own when it is ``None``."""
        if self.friction is not None:
            return str(self.friction).lower()
        return "jeod" if str(self.law).lower() == "jeod" else "coulomb"

    def params(self) -> np.ndarray:
        """Parameter row [k, c, μ, mode, friction, slip_velocity, law, 0]."""
        p = np.zeros(PARAM_SIZE)
        p[:7] = (self.k, self.c, self.mu, int(SpringMode[self.mode.upper()]),
                 int(FrictionModel[self.friction_model.upper()]), self.slip_velocity,
                 int(ContactLaw[str(self.law).upper()]))
        return p


@dataclass(frozen=True)
class UserInteraction:
    """A force law written by the user as a compiled function (JEOD ``PairInteraction`` subclass).

    ``fn(params, x, nx, ny, nz, vx, vy, vz, ra, rb) -> (fx, fy, fz)`` must be ``numba.njit``
    compiled. It receives the interaction's ``params`` (float64 array of :data:`PARAM_SIZE`), the
    penetration ``x`` [m] > 0, the unit normal ``n`` pointing from facet *a* to facet *b*
    (inertial), the velocity ``v`` of *b*'s material point at the contact point relative to
    *a*'s [m/s] (inertial), and the radii ``ra``, ``rb`` [m] (``ra`` is ``inf`` for a plane
    ground and the planet radius for a sphere ground). It returns the force on *b* [N], inertial;
    *a* receives the opposite. The function is called from a CPU kernel specialised on it.

    Args:
        fn: the compiled force law.
        params: up to :data:`PARAM_SIZE` floats passed to ``fn``.
        name: label used in messages.
    """

    fn: Callable
    params: tuple = ()
    name: str = "user"

    def __post_init__(self):
        if not hasattr(self.fn, "py_func"):
            raise InputError(f"user interaction {self.name}", getattr(self.fn, "__name__", self.fn),
                             "must be a numba.njit-compiled function fn(params, x, nx, ny, nz, vx, vy, vz, ra, rb) "
                             "-> (fx, fy, fz)")
        p = np.asarray(self.params, dtype=float).ravel()
        if p.size > PARAM_SIZE or not np.all(np.isfinite(p)):
            raise InputError(f"user interaction {self.name} params", p.tolist(),
                             f"must be at most {PARAM_SIZE} finite numbers")

    def params_row(self) -> np.ndarray:
        p = np.zeros(PARAM_SIZE)
        v = np.asarray(self.params, dtype=float).ravel()
        p[: v.size] = v
        return p


@dataclass
class PairInteractions:
    """Resource: pair interactions registered by unordered pair of material names (JEOD Contact).

    ``register("steel", "steel", SpringInteraction(...))``. A facet pair (or a facet-ground pair)
    exists only when an interaction is registered for its two materials (§3.4.2).
    """

    entries: list = field(default_factory=list)  # [(name_a, name_b, interaction)]

    def register(self, material_1: str, material_2: str, interaction) -> int:
        """Register ``interaction`` for the unordered pair; returns its index.

        Raises:
            InputError: bad names, an interaction of unknown type, or a pair registered twice.
        """
        a, b = material_id(material_1), material_id(material_2)
        if not isinstance(interaction, (SpringInteraction, UserInteraction)):
            raise InputError(f"interaction for ({material_1}, {material_2})", type(interaction).__name__,
                             "must be a SpringInteraction or a UserInteraction")
        for n1, n2, _ in self.entries:
            if {material_id(n1), material_id(n2)} == {a, b}:
                raise InputError("pair interaction", (material_1, material_2),
                                 "is already registered (one interaction per unordered material pair)")
        self.entries.append((material_1, material_2, interaction))
        return len(self.entries) - 1

    def find(self, material_1: str, material_2: str):
        """The interaction registered for the unordered pair, or ``None``."""
        key = sorted((material_id(material_1), material_id(material_2)))
        for n1, n2, it in self.entries:
            if sorted((material_id(n1), material_id(n2))) == key:
                return it
        return None

    def user_functions(self) -> list:
        """The distinct user functions, in registration order (kind USER + j calls the j-th)."""
        fns = []
        for _, _, it in self.entries:
            if isinstance(it, UserInteraction) and not any(it.fn is f for f in fns):
                fns.append(it.fn)
        return fns

    def packed(self) -> tuple[np.ndarray, np.ndarray]:
        """(kinds [I] int64, params [I, PARAM_SIZE]) in registration order."""
        fns = self.user_functions()
        kinds, params = [], []
        for _, _, it in self.entries:
            if isinstance(it, SpringInteraction):
                kinds.append(int(InteractionKind.SPRING))
                params.append(it.params())
            else:
                j = next(j for j, f in enumerate(fns) if f is it.fn)
                kinds.append(int(InteractionKind.USER) + j)
                params.append(it.params_row())
        if not kinds:
            return np.zeros(0, np.int64), np.zeros((0, PARAM_SIZE))
        return np.array(kinds, np.int64), np.array(params)


# --------------------------------------------------------------------------- grounds
class GroundKind(enum.IntEnum):
    PLANE = 0
    SPHERE = 1
    ELLIPSOID = 2
    SDF = 3


#: Length of a ground's parameter row.
GROUND_PARAM_SIZE = 12


@dataclass(frozen=True)
class PlaneGround:
    """A fixed plane through ``point`` with outward unit ``normal`` (inertial) [m]."""

    point: tuple = (0.0, 0.0, 0.0)
    normal: tuple = (0.0, 0.0, 1.0)
    material: str = "ground"

    kind = GroundKind.PLANE

    def params(self) -> np.ndarray:
        p = np.zeros(GROUND_PARAM_SIZE)
        n = _vec3("plane ground normal", self.normal)
        nn = float(np.linalg.norm(n))
        if not nn > 0:
            raise InputError("plane ground normal", n.tolist(), "must be a non-zero direction")
        p[:3] = _vec3("plane ground point", self.point)
        p[3:6] = n / nn
        return p

    def curvature_radius(self) -> float:
        return math.inf


@dataclass(frozen=True)
class SphereGround:
    """A spherical planet of ``radius`` [m] centred at ``center`` (inertial, non-rotating)."""

    center: tuple = (0.0, 0.0, 0.0)
    radius: float = 6378137.0
    material: str = "ground"

    kind = GroundKind.SPHERE

    def params(self) -> np.ndarray:
        p = np.zeros(GROUND_PARAM_SIZE)
        p[:3] = _vec3("sphere ground center", self.center)
        p[3] = positive_number(self.radius, "sphere ground radius", "m")
        return p

    def curvature_radius(self) -> float:
        return float(self.radius)


@dataclass(frozen=True)
class EllipsoidGround:
    """An ellipsoidal planet: semi-axes ``(a, b, c)`` [m] along its own axes, centred at ``center``.

    ``attitude`` is the scalar-first unit quaternion rotating ellipsoid-frame components into
    inertial ones (non-rotating planet). Earth (WGS-84): ``(6378137, 6378137, 6356752.314245)``.
    """

    center: tuple = (0.0, 0.0, 0.0)
    semi_axes: tuple = (6378137.0, 6378137.0, 6356752.314245)
    attitude: tuple = (1.0, 0.0, 0.0, 0.0)
    material: str = "ground"

    kind = GroundKind.ELLIPSOID

    def params(self) -> np.ndarray:
        p = np.zeros(GROUND_PARAM_SIZE)
        p[:3] = _vec3("ellipsoid ground center", self.center)
        ax = _vec3("ellipsoid ground semi_axes", self.semi_axes)
        if not np.all(ax > 0):
            raise InputError("ellipsoid ground semi_axes", ax.tolist(), "must all be > 0 [m]")
        p[3:6] = ax
        q = np.asarray(self.attitude, float)
        check_quaternion(q, field="ellipsoid ground attitude")
        p[6:10] = q / np.linalg.norm(q)
        return p

    def curvature_radius(self) -> float:
        return float(min(self.semi_axes))


@dataclass(frozen=True)
class SdfGround:
    """A terrain given as a compiled signed-distance function (e.g. an SDF grid sampler).

    ``fn(data, x, y, z) -> (d, gx, gy, gz)`` must be ``numba.njit`` compiled: ``d`` the signed
    distance [m] of the inertial point (x, y, z) to the terrain (> 0 outside), ``g`` its gradient
    (the outward normal; normalised by the contact kernel, so a trilinear grid's approximate
    gradient is fine). ``data`` is passed through unchanged — a float64 array, or a tuple of
    arrays and numbers such as :func:`systems.terrain.sdf.terrain_args` (see
    :func:`systems.facets.contact.terrain_ground`) — so one compiled sampler serves many terrains.
    The facet's lowest point is found by a golden-section search of ``d`` along its segment (exact
    for convex terrain, a local minimum otherwise; the end points are always checked).

    Args:
        fn: the compiled signed-distance function.
        data: what ``fn`` receives first (float64 array or tuple; ``None``: a dummy array).
        material: contact-parameter name of the terrain.
        curvature_radius_m: radius passed to user interactions as ``ra`` (default inf).
    """

    fn: Any
    data: Any = None
    material: str = "ground"
    curvature_radius_m: float = math.inf

    kind = GroundKind.SDF

    def __post_init__(self):
        if not hasattr(self.fn, "py_func"):
            raise InputError("sdf ground fn", getattr(self.fn, "__name__", self.fn),
                             "must be a numba.njit-compiled function fn(data, x, y, z) -> (d, nx, ny, nz)")

    def params(self) -> np.ndarray:
        return np.zeros(GROUND_PARAM_SIZE)

    def packed_data(self):
        if isinstance(self.data, tuple):
            return self.data
        d = np.zeros(1) if self.data is None else np.ascontiguousarray(np.asarray(self.data, dtype=np.float64))
        return d.ravel() if d.ndim != 1 else d

    def curvature_radius(self) -> float:
        return float(self.curvature_radius_m)


@dataclass
class Grounds:
    """Resource: the fixed ground surfaces facets may touch (JEOD ``ContactGround`` extension)."""

    items: list = field(default_factory=list)

    def add(self, ground) -> int:
        """Add a ground; returns its index."""
        if not isinstance(ground, (PlaneGround, SphereGround, EllipsoidGround, SdfGround)):
            raise InputError("ground", type(ground).__name__,
                             "must be a PlaneGround, SphereGround, EllipsoidGround or SdfGround")
        ground.params()  # validate now, before any work
        material_id(ground.material)
        self.items.append(ground)
        return len(self.items) - 1
