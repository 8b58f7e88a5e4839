"""A runnable scene: an authored world plus how to run it and what to record.

A scene file (built-in under ``scenes/`` or any user file) exposes ``build(**params) -> Scene``.
Dispersions declare per-sample draws; the batch runner draws them from each sample's own
``SeedSequence(base_seed, spawn_key=(sample,))`` stream in declaration order, so a sample's inputs
never depend on block size, worker count or order, and stores every draw under ``inputs/``.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .errors import InputError
from .world import World, check_run_times


@dataclass
class Dispersion:
    """One dispersed parameter: ``column`` of ``entity`` drawn per sample by ``draw(rng) -> value``.

    Attributes:
        entity: entity id (or name) the value applies to.
        column: full column name (``body_velocity``).
        draw: ``draw(rng: numpy.random.Generator) -> value`` with the column's per-row shape.
        name: name under ``inputs/`` (default ``"<column>.<entity name>"``).
        unit: unit stored with the input (default: the column's unit).
        derive: ``{other column: fn(drawn value) -> its value}``: columns of the same entity that
            follow the drawn value (a probe's inertia follows its drawn shape). Not stored under
            ``inputs/``: they are functions of what is.
    """

    entity: int | str
    column: str
    draw: Callable[[np.random.Generator], Any]
    name: str | None = None
    unit: str | None = None
    derive: dict[str, Callable[[Any], Any]] = field(default_factory=dict)


def normal(mean, sigma3) -> Callable[[np.random.Generator], np.ndarray]:
    """Gaussian draw given the mean and the per-axis 3-sigma spread."""
    mean = np.asarray(mean, float)
    sigma = np.asarray(sigma3, float) / 3.0
    return lambda rng: mean + sigma * rng.standard_normal(mean.shape)


def lognormal(median, sigma) -> Callable[[np.random.Generator], np.ndarray]:
    """Log-normal draw: ``median * exp(sigma * N(0, 1))`` (per axis; ``sigma`` of the logarithm)."""
    median = np.asarray(median, float)
    sigma = np.asarray(sigma, float)
    return lambda rng: median * np.exp(sigma * rng.standard_normal(np.broadcast(median, sigma).shape))


def uniform(low, high) -> Callable[[np.random.Generator], np.ndarray]:
    """Uniform draw on [low, high) (per axis)."""
    low, high = np.asarray(low, float), np.asarray(high, float)
    return lambda rng: low + (high - low) * rng.random(np.broadcast(low, high).shape)


def uniform_quaternion() -> Callable[[np.random.Generator], np.ndarray]:
    """Uniformly distributed random attitude (Shoemake), scalar-first, w >= 0."""

    def draw(rng):
        u1, u2, u3 = rng.random(3)
        a, b = np.sqrt(1 - u1), np.sqrt(u1)
        q = np.array([b * np.cos(2 * np.pi * u3), a * np.sin(2 * np.pi * u2), a * np.cos(2 * np.pi * u2),
                      b * np.sin(2 * np.pi * u3)])
        return q if q[0] >= 0 else -q

    return draw


@dataclass
class Scene:
    """Everything the batch runner needs.

    Attributes:
        name: scene name (``tumble run NAME``).
        description: one line for ``tumble scenes``.
        world: the authored world with its systems.
        t_end: end time [s].
        dt: frame length [s].
        record_every: trajectory decimation in frames (``None``: no trajectories).
        record: columns sampled into ``trajectories/``.
        final: columns saved into ``final/``.
        dispersions: per-sample draws.
        params: the parameters ``build`` was called with (stored in the store's attributes).
        default_samples: samples a run takes when not told (``tumble run`` without ``-n``); default
            :data:`DEFAULT_SAMPLES` for a scene with dispersions (a Monte-Carlo study), 1 without
            (every sample would be the same).
    """

    name: str
    description: str
    world: World
    t_end: float
    dt: float
    record_every: int | None = None
    record: tuple[str, ...] = ()
    final: tuple[str, ...] = ()
    dispersions: list[Dispersion] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    default_samples: int | None = None

    def __post_init__(self) -> None:
        # a bad end time, frame or recording interval is refused where the scene is made: before a
        # batch creates its store (ecs.world.check_run_times)
        check_run_times(self.t_end, self.dt, self.record_every)
        n = self.default_samples
        if n is not None and (isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1):
            raise InputError("Scene.default_samples", n, "must be an integer >= 1 (or None)")

    @property
    def samples_when_not_told(self) -> int:
        """:attr:`default_samples`, else :data:`DEFAULT_SAMPLES` with dispersions and 1 without."""
        if self.default_samples is not None:
            return int(self.default_samples)
        return DEFAULT_SAMPLES if self.dispersions else 1


#: samples of a run of a dispersed scene when none are asked for: enough for a first look at the
#: spread (a 5-95 % band from 100 samples is good to about ±2 percentile points)
DEFAULT_SAMPLES = 100

_EMPTY = inspect.Parameter.empty
_NUMBER_WORDS = {"float": "a number", "int": "an integer", "bool": "true or false", "str": "a string"}


def coerce_params(builder: Callable[..., Any], params: dict[str, Any], where: str = "scene") -> dict[str, Any]:
    """Check and convert ``build(**params)`` keyword values against the builder's signature.

    The type a parameter expects is its annotation when that is a plain ``float``, ``int``,
    ``bool`` or ``str`` (optionally ``| None``), else the type of its default. An ``int`` is
    accepted for a ``float``; a ``float`` that is a whole number for an ``int``; a string is
    converted when it spells a number (``-p t_end=1e4``). Parameters with no known type pass as
    they are (the builder checks them).

    Raises:
        InputError: an unknown parameter (naming the accepted ones) or a value of the wrong type,
            naming the parameter, the value and the expected type with its default.
    """
    try:
        sig = inspect.signature(builder)
    except (TypeError, ValueError):
        return dict(params)
    ps = sig.parameters
    var_kw = any(p.kind is p.VAR_KEYWORD for p in ps.values())
    names = [n for n, p in ps.items() if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]
    out = {}
    for key, value in params.items():
        if key not in ps or ps[key].kind not in (ps[key].KEYWORD_ONLY, ps[key].POSITIONAL_OR_KEYWORD):
            if var_kw:
                out[key] = value
                continue
            raise InputError(f"{where} parameter {key}", value,
                             f"is not a parameter of this scene (it takes: {', '.join(names) or 'none'})")
        p = ps[key]
        want, optional = _expected_type(p)
        out[key] = _convert(key, value, want, optional, p.default, where)
    return out


def _expected_type(p) -> tuple[str | None, bool]:
    ann = p.annotation
    if ann is not p.empty:
        text = ann if isinstance(ann, str) else getattr(ann, "__name__", str(ann))
        parts = [t.strip() for t in text.replace("Optional[", "").rstrip("]").split("|")]
        optional = "None" in parts
        kinds = [t for t in parts if t != "None"]
        if len(kinds) == 1 and kinds[0] in _NUMBER_WORDS:
            return kinds[0], optional
        if kinds:
            return None, optional
    d = p.default
    if d is p.empty or d is None:
        return None, True
    for t in (bool, int, float, str):
        if type(d) is t:
            return t.__name__, False
    return None, False


def _convert(key: str, value: Any, want: str | None, optional: bool, default: Any, where: str) -> Any:
    if want is None or (value is None and optional):
        return value
    rule = f"must be {_NUMBER_WORDS[want]}" + ("" if default is _EMPTY else f" (default {default!r})")
    if want == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise InputError(f"{where} parameter {key}", value, rule)
    if want == "str":
        if isinstance(value, str):
            return value
        raise InputError(f"{where} parameter {key}", value, rule)
    v = value
    if isinstance(v, str):
        try:
            v = float(v) if want == "float" else (int(v) if v.strip().lstrip("+-").isdigit() else float(v))
        except ValueError:
            raise InputError(f"{where} parameter {key}", value, rule) from None
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise InputError(f"{where} parameter {key}", value, rule)
    if want == "int":
        if not (np.isfinite(float(v)) and float(v) == int(v)):
            raise InputError(f"{where} parameter {key}", value, rule)
        return int(v)
    return float(v)
