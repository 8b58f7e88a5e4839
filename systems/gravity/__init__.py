"""Gravity: uniform gravity (:mod:`.uniform`), the gravity system over the field kinds of
:mod:`components.gravity` (:mod:`.fields`), their per-point kernels (:mod:`.kernels`: point mass,
spherical harmonics, polyhedron, voxel, ...) and third-body gravity from an ephemeris
(:mod:`.third_body`). A new gravity source is a kernel in :mod:`.kernels` and a kind in
:mod:`components.gravity`."""
