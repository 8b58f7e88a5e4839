"""Terrain geometry: signed distance kernels. :mod:`.sdf` holds the SDF grids, the terrain
composition a contact system samples (:data:`.sdf.eval_terrain_point`), the CPU drivers and the
numpy API; :mod:`.shapes` the analytic shapes, :mod:`.noise` fBm relief and seeded rocks,
:mod:`.rocks` polyhedral rocks, with the spatial hashing of their broadphase in
:mod:`.broadphase`. A new terrain feature is a kernel in one of these and a term of
:data:`.sdf.eval_terrain_point`."""
