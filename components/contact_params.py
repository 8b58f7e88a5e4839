"""Contact parameters per material pair: restitution, friction, rolling resistance, regolith.

Seed 004 §2.5–2.6. The impact and contact-motion systems (:mod:`systems.probe_contact.collision`,
:mod:`systems.probe_contact.contact_motion`) take, for every touching vertex, the parameters of the *pair* of
materials in contact (probe skin on terrain, probe skin on a rock, ...), so terrain and rocks can
behave differently. In the spirit of JEOD's named pair interactions (seed 000, the facet-contact
issue, :mod:`components.contact`), the parameters are registered once per **unordered** pair of
material names in a :class:`ContactPairs` registry, under the same stable material ids as the
facets (:func:`material`, a hash of the name). A scene looks a pair's row up there and writes it
into the probe rows (:class:`components.deploy.ProbeContact`, column ``probe_terrain_pair``), which
is what the kernels read; nothing reads the registry while a world runs.

Parameters of one pair (:class:`ContactParams`):

* ``restitution`` — Stronge's *energetic* coefficient of restitution ``e`` ∈ [0, 1] (seed eq 2.60:
  the restitution work is ``−e²`` times the compression work). For central impacts it equals the
  kinematic (Newton) coefficient; for eccentric ones it does not (eq 2.61) and never adds energy.
* ``friction`` — Coulomb coefficient ``f`` ≥ 0 (eqs 2.65, 2.97).
* ``rolling_resistance`` — the coefficient ``C_RR`` ≥ 0 of eqs 2.85 and 2.107. The seed's matrix
  ``[C_RR]`` is this coefficient times a per-probe diagonal mask of the axes about which the probe
  rolls (a sphere rolls about all three, a cylinder about its axis only): the mask and the rolling
  radius ``R`` are properties of the probe, not of the pair, and are given to the systems.
* ``regolith`` — optional :class:`Regolith` restitution law for a granular surface. ``e`` is then
  replaced by

      e(v, θ) = s(v_n) · [e₁ + min(θ, θ_c)/θ_c · (e₀ − e₁)],   s(v_n) = min(1, (v_ref/|v_n|)^α)

  with ``θ = arcsin(−v·N/|v|)`` the impact angle of the contact-point velocity ``v`` above the
  surface plane (0 for a grazing impact, 90° for a normal one) and ``v_n = v·N`` its normal part.
  The bracket is the seed's modulation by impact angle (eqs 2.111–2.113): ``e₁`` in the grazing
  limit, ``e₀`` (the floor set by a hard layer under a thin regolith blanket, as for Philae) for every
  impact steeper than the critical angle ``θ_c``. The factor ``s`` is ours, from microgravity impact
  experiments into regolith simulants (:func:`low_gravity_regolith`): restitution falls with the
  normal impact speed above ``v_ref`` as a power ``α``. ``α = 0`` (the default) is the seed's law
  unchanged; ``e₀ = e₁`` switches the angle modulation off.

Eq 2.112 (Nishida et al.'s critical angle) as reconstructed from the OCR'd seed:
``θ_c = 210° · (ρ_t/ρ_p)^(1/2) · (D_t/D_p)^(2/3)`` with ``ρ_t, D_t`` the bulk density and grain
diameter of the granular target and ``ρ_p, D_p`` those of the projectile; we clip it to (0°, 90°].
Eq 2.113 as printed (``e = e₁ + min(θ, θ_c)/θ_c (e₀ − e₁)``) matches the text around it
(``e = e₀`` whenever ``θ > θ_c``, rising to ``e₁`` at ``θ = 0``) and is used unchanged.

Kernels read one float64 row of :data:`PAIR_FIELDS` per contact (:meth:`ContactPairs.rows`);
unregistered pairs hold NaN, which the kernels flag instead of guessing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ecs import InputError

#: Field order of one row of :meth:`ContactPairs.table` (the kernels index it by these constants).
PAIR_FIELDS = ("restitution", "friction", "rolling_resistance", "regolith", "e_floor", "e_max", "critical_angle",
               "reference_speed", "speed_exponent")
(PAIR_E, PAIR_F, PAIR_CRR, PAIR_REGOLITH, PAIR_E0, PAIR_E1, PAIR_THETA_C, PAIR_VREF,
 PAIR_ALPHA) = range(len(PAIR_FIELDS))
PAIR_FIELD_COUNT = len(PAIR_FIELDS)
#: Values of a pair row's ``regolith`` field: the restitution law that acts at an impact: the
#: constant ``restitution``, the :class:`Regolith` law, or the world's :class:`RestitutionLaw`.
LAW_CONSTANT, LAW_REGOLITH, LAW_USER = 0.0, 1.0, 2.0

#: Default rate β [1/s] of the contacts' velocity-level constraint stabilisation,
#: N·v̇ + v·Ṅ = −β N·v (:mod:`systems.probe_contact.contact_motion`).
BAUMGARTE_RATE = 0.5


def _finite_in(value, name: str, lo: float, hi: float = math.inf, unit: str = "") -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(name, value, "must be a number") from None
    if not math.isfinite(v) or not (lo <= v <= hi):
        rng = f">= {lo}" if hi == math.inf else f"in [{lo}, {hi}]"
        raise InputError(name, value, f"must be finite and {rng}{(' ' + unit) if unit else ''}")
    return v


@dataclass(frozen=True)
class Regolith:
    """Restitution of impacts into a granular surface by impact angle and normal speed.

    ``e(v, θ) = s(v_n) · [e₁ + min(θ, θ_c)/θ_c · (e₀ − e₁)]``, ``s = min(1, (v_ref/|v_n|)^α)``
    (module docstring; the bracket is seed eq 2.113).

    Attributes:
        e_floor: ``e₀``, the restitution of impacts steeper than the critical angle [1], in [0, 1]
            (at normal speeds up to ``reference_speed`` when the speed law is on).
        e_max: ``e₁``, the restitution of a grazing impact (θ = 0) [1], in [0, 1].
        critical_angle: ``θ_c`` [rad], in (0, π/2].
        reference_speed: ``v_ref`` [m/s] >= 0, the normal impact speed above which restitution falls.
        speed_exponent: ``α`` [1] >= 0, how fast it falls (0: no speed dependence, the seed's law).
    """

    e_floor: float
    e_max: float
    critical_angle: float
    reference_speed: float = 0.0
    speed_exponent: float = 0.0

    def __post_init__(self):
        _finite_in(self.e_floor, "regolith e_floor (e0)", 0.0, 1.0)
        _finite_in(self.e_max, "regolith e_max (e1)", 0.0, 1.0)
        th = _finite_in(self.critical_angle, "regolith critical_angle", 0.0, math.pi / 2, "rad")
        if th <= 0.0:
            raise InputError("regolith critical_angle", self.critical_angle, "must be > 0 rad")
        _finite_in(self.reference_speed, "regolith reference_speed", 0.0, unit="m/s")
        _finite_in(self.speed_exponent, "regolith speed_exponent", 0.0)
        if self.speed_exponent > 0.0 and self.reference_speed <= 0.0:
            raise InputError("regolith reference_speed", self.reference_speed,
                             "must be > 0 m/s when speed_exponent > 0 (the speed law needs its reference speed)")

    @staticmethod
    def critical_angle_from_grains(*, grain_density: float, grain_diameter: float, probe_density: float,
                                   probe_diameter: float) -> float:
        """Nishida et al.'s critical impact angle (seed eq 2.112) [rad], clipped to (0, π/2].

        Args:
            grain_density: bulk density of the granular layer ρ_t [kg/m³].
            grain_diameter: grain diameter D_t [m].
            probe_density: bulk density of the projectile ρ_p [kg/m³].
            probe_diameter: projectile diameter D_p [m].
        """
        rt = _finite_in(grain_density, "grain_density", 0.0, unit="kg/m^3")
        dt = _finite_in(grain_diameter, "grain_diameter", 0.0, unit="m")
        rp = _finite_in(probe_density, "probe_density", 0.0, unit="kg/m^3")
        dp = _finite_in(probe_diameter, "probe_diameter", 0.0, unit="m")
        for name, v in (("grain_density", rt), ("grain_diameter", dt), ("probe_density", rp),
                        ("probe_diameter", dp)):
            if v <= 0.0:
                raise InputError(name, v, "must be > 0")
        theta = math.radians(210.0) * math.sqrt(rt / rp) * (dt / dp) ** (2.0 / 3.0)
        return min(theta, math.pi / 2)

    @classmethod
    def from_grains(cls, *, e_floor: float, e_max: float, grain_density: float, grain_diameter: float,
                    probe_density: float, probe_diameter: float) -> "Regolith":
        """A modulation whose critical angle follows eq 2.112 from grain and probe properties."""
        return cls(e_floor, e_max, cls.critical_angle_from_grains(
            grain_density=grain_density, grain_diameter=grain_diameter, probe_density=probe_density,
            probe_diameter=probe_diameter))

    def restitution(self, impact_angle, normal_speed=0.0):
        """``e(v, θ)`` for impact angles θ [rad] and normal impact speeds ``|v_n|`` [m/s] (numpy,
        broadcast)."""
        th = np.minimum(np.asarray(impact_angle, float), self.critical_angle)
        e = self.e_max + th / self.critical_angle * (self.e_floor - self.e_max)
        vn = np.abs(np.asarray(normal_speed, float))
        if self.speed_exponent > 0.0:
            with np.errstate(divide="ignore"):
                e = e * np.minimum(1.0, (self.reference_speed / vn) ** self.speed_exponent)
        return e


def low_gravity_regolith(restitution: float = 0.3, speed_exponent: float = 0.88,
                         reference_speed: float = 0.05) -> Regolith:
    """The restitution of a lander's impacts into fine regolith in microgravity, from experiments.

    ``e = restitution · min(1, (reference_speed/|v_n|)^speed_exponent)`` at every impact angle
    (``e₀ = e₁``: the speed law acts on the *normal* speed, so grazing impacts already rebound more,
    as Nishida et al. and Wright et al. observed). The defaults are set from microgravity
    experiments, none from a lander (docs/references.md; the table in docs/validation.md):

    * ``restitution = 0.3`` at ``reference_speed = 0.05`` m/s: the rebounds Colwell et al. saw at
      impact speeds of about 5 cm/s (as summarised in seed 004 §2.6), and the rebounds of the lowest-
      energy impacts below 10⁻⁴ g in PRIME and COLLIDE (Brisset et al. 2018).
    * ``speed_exponent = 0.88``: the law through COLLIDE's coefficients of restitution "on the order
      of 5 per cent" for impacts at 15–100 cm/s (Colwell & Taylor 1999), taken at their geometric
      mean 38.7 cm/s: ``α = ln(0.3/0.05)/ln(38.7/5) = 0.877``. The same data bound α: COLLIDE's
      e of 0.01–0.1 at that speed give α from 0.54 to 1.66, the range to draw for a prior.

    The experiments disagree about the slowest impacts: Murdoch et al. (2017) saw no rebound of a
    10 cm sphere at 2–40 cm/s in 0.2–1 m/s² effective gravity, COLLIDE-2 saw embedding below
    ~20 cm/s (Colwell 2003). ``restitution`` from 0 to 0.4 spans them.
    """
    return Regolith(e_floor=restitution, e_max=restitution, critical_angle=math.pi / 2,
                    reference_speed=reference_speed, speed_exponent=speed_exponent)


@dataclass(frozen=True)
class RestitutionLaw:
    """A restitution law written by the user: a numba ``njit`` kernel ``(e, vn, speed) -> e'``.

    At every impact of a pair whose :class:`ContactParams` name this law, Stronge's impact uses
    ``e'`` instead of the pair's constant restitution. The kernel receives the pair's
    ``restitution`` ``e`` (drawn per sample like any pair field), the normal velocity of the contact
    point ``vn`` [m/s] (negative: approaching) and its speed ``|v|`` [m/s]. Its own constants are
    module globals of its file (numba freezes them; an edit recompiles). The deployment links its
    kernels against this one (:func:`ecs.terms.specialise`), on the CPU and on the GPU. One law per
    world: :func:`scenes.mission.deployment` adds it as a resource (``restitution_law=``).

    Attributes:
        kernel: the law (above).
        name: a label for messages.
    """

    kernel: object
    name: str = "user"

    def __post_init__(self):
        import inspect

        import numba

        if not isinstance(self.kernel, numba.core.registry.CPUDispatcher):
            raise InputError(f"RestitutionLaw {self.name}: kernel", getattr(self.kernel, "__name__", self.kernel),
                             "must be a numba.njit function kernel(e, vn, speed) -> e'")
        n = len(inspect.signature(self.kernel.py_func).parameters)
        if n != 3:
            raise InputError(f"RestitutionLaw {self.name}: parameter count of kernel {self.kernel.py_func.__name__}",
                             n, "must take 3: e, vn, speed")


@dataclass(frozen=True)
class ContactParams:
    """Impact and contact parameters of one pair of materials.

    Attributes:
        restitution: energetic coefficient of restitution e [1], in [0, 1] (eq 2.60).
        friction: Coulomb friction coefficient f [1], >= 0 (eqs 2.65, 2.97).
        rolling_resistance: rolling-resistance coefficient C_RR [1], >= 0 (eqs 2.85, 2.107).
        regolith: optional restitution law of a granular surface, by impact angle (eqs 2.111–2.113)
            and normal speed (:class:`Regolith`); it replaces ``restitution`` at every impact.
        law: optional :class:`RestitutionLaw` of the user's, which replaces ``restitution`` at every
            impact instead (not with ``regolith``).
    """

    restitution: float = 0.5
    friction: float = 0.5
    rolling_resistance: float = 0.0
    regolith: Regolith | None = None
    law: RestitutionLaw | None = None

    def __post_init__(self):
        _finite_in(self.restitution, "restitution", 0.0, 1.0)
        _finite_in(self.friction, "friction", 0.0)
        _finite_in(self.rolling_resistance, "rolling_resistance", 0.0)
        if self.regolith is not None and not isinstance(self.regolith, Regolith):
            raise InputError("regolith", self.regolith, "must be a Regolith or None")
        if self.law is not None and not isinstance(self.law, RestitutionLaw):
            raise InputError("law", self.law, "must be a RestitutionLaw or None")
        if self.law is not None and self.regolith is not None:
            raise InputError("law", self.law.name, "cannot act with a regolith law: give one of law and regolith")

    def row(self) -> np.ndarray:
        """The kernel row of :data:`PAIR_FIELDS`, float64 [PAIR_FIELD_COUNT]."""
        r = self.regolith
        return np.array([self.restitution, self.friction, self.rolling_resistance,
                         LAW_USER if self.law is not None else LAW_CONSTANT if r is None else LAW_REGOLITH,
                         self.restitution if r is None else r.e_floor,
                         self.restitution if r is None else r.e_max,
                         math.pi / 2 if r is None else r.critical_angle,
                         0.0 if r is None else r.reference_speed,
                         0.0 if r is None else r.speed_exponent], dtype=np.float64)


def material(name: str) -> int:
    """The id of a material name: the same stable 63-bit hash the facet contact uses
    (:func:`components.contact.material_id`), so one name means one material project-wide and ids
    never depend on registration order."""
    from components.contact import material_id

    return material_id(name)


@dataclass
class ContactPairs:
    """Registry: contact parameters per unordered pair of material names, for building probe rows.

    ``register("aluminium", "regolith", ContactParams(...))`` also serves ``("regolith",
    "aluminium")``. Materials are identified by :func:`material` ids; :meth:`rows` looks up the
    parameter rows of many pairs at once, to be written into the probe rows' ``terrain_pair``.

    Attributes:
        default: parameters used for pairs that were not registered; ``None`` (the default) makes
            an unregistered pair an error in :meth:`params` and a NaN row in :meth:`rows`.
    """

    default: ContactParams | None = None
    _names: dict[int, str] = field(default_factory=dict)
    _pairs: dict[tuple[int, int], ContactParams] = field(default_factory=dict)

    def material(self, name: str) -> int:
        """The id of material ``name`` (remembered for messages)."""
        mid = material(name)
        self._names[mid] = name
        return mid

    def _id(self, m) -> int:
        if isinstance(m, str):
            return self.material(m)
        if isinstance(m, (int, np.integer)):
            return int(m)
        raise InputError("material", m, "must be a material name or a material id")

    def _key(self, a, b) -> tuple[int, int]:
        ia, ib = self._id(a), self._id(b)
        return (ia, ib) if ia <= ib else (ib, ia)

    def register(self, a, b, params: ContactParams | None = None, **fields) -> ContactParams:
        """Register (or replace) the parameters of the unordered pair ``{a, b}`` (names or ids).

        Either pass a :class:`ContactParams` or its fields as keywords
        (``register("cube", "rock", restitution=0.3, friction=0.8)``).
        """
        if params is None:
            params = ContactParams(**fields)
        elif fields:
            raise InputError("register", sorted(fields), "pass either a ContactParams or keyword fields, not both")
        if not isinstance(params, ContactParams):
            raise InputError(f"contact params of ({a!r}, {b!r})", params, "must be a ContactParams")
        self._pairs[self._key(a, b)] = params
        return params

    def params(self, a, b) -> ContactParams:
        """Parameters of the pair ``{a, b}`` (names or ids; the default when unregistered, if set)."""
        key = self._key(a, b)
        if key in self._pairs:
            return self._pairs[key]
        if self.default is not None:
            return self.default
        names = tuple(self._names.get(k, f"#{k}") for k in key)
        raise InputError("material pair", names, "has no registered contact parameters (ContactPairs.register)")

    def rows(self, ids_a, ids_b) -> np.ndarray:
        """Kernel rows (:data:`PAIR_FIELDS`) of many pairs: float64 ``[n, PAIR_FIELD_COUNT]``.

        Unregistered pairs get the default's row, or NaN (which the kernels flag) without one.
        """
        a = np.asarray(ids_a, dtype=np.int64).reshape(-1)
        b = np.asarray(ids_b, dtype=np.int64).reshape(-1)
        if a.shape != b.shape:
            raise InputError("material ids", (a.shape, b.shape), "must have the same length")
        fill = np.full(PAIR_FIELD_COUNT, np.nan) if self.default is None else self.default.row()
        out = np.empty((a.size, PAIR_FIELD_COUNT))
        cache: dict[tuple[int, int], np.ndarray] = {}
        for k, (ia, ib) in enumerate(zip(a.tolist(), b.tolist())):
            key = (ia, ib) if ia <= ib else (ib, ia)
            row = cache.get(key)
            if row is None:
                p = self._pairs.get(key)
                row = cache[key] = fill if p is None else p.row()
            out[k] = row
        return out
