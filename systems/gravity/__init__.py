"""Gravity: uniform gravity (:mod:`.uniform`), the gravity system over the field kinds of
:mod:`components.gravity` (:mod:`.fields`), the field of each source at a point (:mod:`.sources`:
point mass, spherical harmonics, polyhedron, voxel, ...) and their dispatch and bulk evaluation
(:mod:`.kernels`) and third-body gravity from an ephemeris
(:mod:`.third_body`). A new built-in gravity source is a kernel in :mod:`.sources`, a kind in the
dispatch of :mod:`.kernels` and a kind in :mod:`components.gravity`; a user's own field is a
:class:`components.gravity.UserField` in the user's file (``scenes/examples/gravity_mascons.py``),
which every pipeline links against (:func:`.kernels.gravity_at_for`)."""
