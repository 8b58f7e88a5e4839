"""The records the facet-contact kernels take (built with :func:`ecs.record`):

* :data:`ContactBuffer` — the contacts found in one evaluation, ``cap`` per sample: which facets
  and bodies touch, through which interaction, how deep, where, how fast, and the force on each
  (written by :func:`systems.facets.find._record`, read by :mod:`systems.facets.forces` and the
  start/end events of :mod:`systems.facets.events`).

:class:`systems.facets.contact.FacetContact` builds it once per bind and passes it to every launch.
"""

from __future__ import annotations

from ecs import record

ContactBuffer = record("ContactBuffer", __name__, {
    "facet_a": "first facet's row per contact [samples, cap] (a ground patch g: -1 - g)",
    "facet_b": "second facet's row per contact [samples, cap]",
    "body_a": "body row of facet_a per contact [samples, cap] (-1: the ground)",
    "body_b": "body row of facet_b per contact [samples, cap]",
    "interaction": "interaction (contact law and parameters) per contact [samples, cap]",
    "penetration": "penetration x >= 0 per contact [samples, cap] [m]",
    "distance": "separation of the facets' cores per contact [samples, cap] [m]: r_a + r_b - x between two "
                "facets, the sphere centre's distance to the ground for a ground patch (the spring's mode 2 "
                "acts on it)",
    "normal": "unit contact normal, from a to b per contact [samples, cap, 3] (inertial)",
    "point": "contact point per contact [samples, cap, 3] [m] (inertial)",
    "velocity": "velocity of b relative to a at the contact point per contact [samples, cap, 3] [m/s] (inertial)",
    "radius_a": "facet a's radius of curvature at the contact per contact [samples, cap] [m]",
    "radius_b": "facet b's radius of curvature at the contact per contact [samples, cap] [m]",
    "force": "force on b (-force on a) per contact [samples, cap, 3] [N] (inertial; user laws write it first)"},
    "The contacts found in one evaluation of facet contact, cap per sample.")
