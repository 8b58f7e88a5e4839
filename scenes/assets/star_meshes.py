"""Star-shaped procedural test bodies: closed genus-0 meshes from a radial function on an icosphere.

Every vertex of trimesh's icosphere is moved along its direction u to radius r(u); as long as
r > 0 the result is a watertight, outward-wound two-manifold (star-shaped about the origin), so
it passes Euler's criterion by construction. These are the gravity tests' and benchmarks' bodies
(the procedural small bodies of the scenes are built elsewhere):

* :func:`sphere_mesh` — r = R (the 20,480-facet icosphere at ``subdivisions=5``);
* :func:`ellipsoid_mesh` — vertices on an ellipsoid (inscribed polyhedron);
* :func:`bumpy_mesh` — random Gaussian bumps and dents of both signs: non-convex;
* :func:`two_lobed_mesh` — the union of two overlapping ellipsoids (a contact binary), whose
  boundary radius along u is the larger of the two ray–ellipsoid exit distances.
"""

from __future__ import annotations

import numpy as np

from ecs.errors import InputError

__all__ = ["bumpy_mesh", "ellipsoid_mesh", "radial_mesh", "sphere_mesh", "two_lobed_mesh"]


def _unit_icosphere(subdivisions: int) -> tuple[np.ndarray, np.ndarray]:
    import trimesh

    if not isinstance(subdivisions, (int, np.integer)) or not 0 <= subdivisions <= 7:
        raise InputError("subdivisions", subdivisions, "must be an integer in [0, 7] (20 * 4^s facets)")
    m = trimesh.creation.icosphere(subdivisions=int(subdivisions), radius=1.0)
    u = np.asarray(m.vertices, dtype=np.float64)
    u /= np.linalg.norm(u, axis=1)[:, None]
    return u, np.asarray(m.faces, dtype=np.int64)


def radial_mesh(radius_fn, *, subdivisions: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Vertices ``r(u) u`` [m] and faces of the icosphere of ``subdivisions`` (20·4^s facets).

    Args:
        radius_fn: ``r(u) -> radii`` [m] for unit directions u of shape (n, 3); must be > 0.
    """
    u, f = _unit_icosphere(subdivisions)
    r = np.asarray(radius_fn(u), dtype=np.float64)
    if r.shape != (u.shape[0],) or not np.all(np.isfinite(r)) or np.any(r <= 0):
        raise InputError("radius_fn", "returned radii", "must give one finite radius > 0 [m] per direction")
    return u * r[:, None], f


def sphere_mesh(radius: float = 1.0, *, subdivisions: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Icosphere with vertices on the sphere of ``radius`` [m]."""
    return radial_mesh(lambda u: np.full(u.shape[0], float(radius)), subdivisions=subdivisions)


def ellipsoid_mesh(a: float, b: float, c: float, *, subdivisions: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Polyhedron inscribed in the ellipsoid of semi-axes (a, b, c) [m] (icosphere vertices scaled)."""
    u, f = _unit_icosphere(subdivisions)
    return u * np.array([a, b, c], dtype=np.float64), f


def bumpy_mesh(radius: float = 1.0, *, seed: int = 0, bumps: int = 12, amplitude: float = 0.25,
               width: float = 0.45, subdivisions: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """A random non-convex body: ``r(u) = R (1 + Σ_k a_k exp(−|u − d_k|²/w²))``, a_k of both signs.

    Args:
        radius: mean radius R [m].
        seed: random seed of the bump directions d_k and amplitudes a_k ∈ ±[amplitude/2, amplitude].
        bumps: number of bumps and dents.
        amplitude: largest relative bump height (< 1 keeps r > 0 for few overlapping dents).
        width: angular width w of each bump (chord length on the unit sphere).
    """
    rng = np.random.default_rng(seed)
    d = rng.normal(size=(bumps, 3))
    d /= np.linalg.norm(d, axis=1)[:, None]
    a = rng.uniform(0.5, 1.0, bumps) * amplitude * rng.choice([-1.0, 1.0], bumps)

    def r(u):
        d2 = np.sum((u[:, None, :] - d[None, :, :]) ** 2, axis=2)
        return radius * np.maximum(1.0 + np.exp(-d2 / width**2) @ a, 0.2)

    return radial_mesh(r, subdivisions=subdivisions)


def _ray_exit(u: np.ndarray, center: np.ndarray, axes: np.ndarray) -> np.ndarray:
    """Distance along unit rays u from the origin to where they leave the ellipsoid (center, axes).

    Solves |(t u − c)/s|² = 1 for its larger root; the origin must lie inside the ellipsoid.
    """
    us = u / axes
    cs = center / axes
    qa = np.sum(us * us, axis=1)
    qb = -2.0 * us @ cs
    qc = float(cs @ cs) - 1.0
    return (-qb + np.sqrt(qb * qb - 4.0 * qa * qc)) / (2.0 * qa)


def two_lobed_mesh(*, lobe_axes=(1.0, 0.8, 0.7), second_axes=(0.8, 0.65, 0.6), separation: float = 1.3,
                   subdivisions: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Contact binary: union of two ellipsoids on the x axis, star-shaped about the origin.

    The first lobe is centred at (−s₁, 0, 0), the second at (+s₂, 0, 0), with s₁ + s₂ =
    ``separation`` split so that the origin lies inside both (required for a star shape).

    Args:
        lobe_axes, second_axes: semi-axes of the two lobes [m].
        separation: distance between the lobe centres [m]; < (a₁ + a₂) so that they overlap.
    """
    a1 = np.array(lobe_axes, dtype=np.float64)
    a2 = np.array(second_axes, dtype=np.float64)
    if separation >= a1[0] + a2[0]:
        raise InputError("separation", separation, f"must be < {a1[0] + a2[0]} so that the lobes overlap [m]")
    s1 = separation * a1[0] / (a1[0] + a2[0])
    c1 = np.array([-s1, 0.0, 0.0])
    c2 = np.array([separation - s1, 0.0, 0.0])
    return radial_mesh(lambda u: np.maximum(_ray_exit(u, c1, a1), _ray_exit(u, c2, a2)), subdivisions=subdivisions)
