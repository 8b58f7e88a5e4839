"""Gravity: uniform gravity (:mod:`.uniform`), the gravity system over the field kinds of
:mod:`components.gravity` (:mod:`.fields`), the field of each source at a point (:mod:`.sources`:
point mass, spherical harmonics, polyhedron, voxel, ...) and their dispatch and bulk evaluation
(:mod:`.kernels`) and third-body gravity from an ephemeris
(:mod:`.third_body`). A new gravity source is a kernel in :mod:`.sources`, a kind in the
dispatch of :mod:`.kernels` and a kind in :mod:`components.gravity`."""
