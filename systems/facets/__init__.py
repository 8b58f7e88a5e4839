"""Facet contact between vehicles and with the ground (JEOD's contact model, seed 000): the
contact system (:mod:`.contact`), finding the contacts of a sample (:mod:`.find`) and their forces
(:mod:`.forces`: a new facet contact law goes there), contact start and end events
(:mod:`.events`), facet geometry (:mod:`.geometry`), the broadphase over facets
(:mod:`.broadphase`) and facets against a procedural terrain (:mod:`.terrain`)."""
