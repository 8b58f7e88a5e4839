"""A runnable scene: an authored world plus how to run it and what to record.

A scene file (built-in under ``scenes/`` or any user file) exposes ``build(**params) -> Scene``.
Dispersions declare per-sample draws; the batch runner draws them from each sample's own
``SeedSequence(base_seed, spawn_key=(sample,))`` stream in declaration order, so a sample's inputs
never depend on block size, worker count or order, and stores every draw under ``inputs/``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .world import World


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
