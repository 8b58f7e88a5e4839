"""Terrain geometry: signed distance kernels (:mod:`.sdf`: grids, analytic shapes, fBm noise,
seeded and polyhedral rocks) and the spatial hashing their rock broadphase uses
(:mod:`.broadphase`)."""
