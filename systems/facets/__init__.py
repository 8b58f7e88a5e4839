"""Facet contact between vehicles and with the ground (JEOD's contact model, seed 000): the
contact system (:mod:`.contact`), facet geometry (:mod:`.geometry`), the broadphase over facets
(:mod:`.broadphase`) and facets against a procedural terrain (:mod:`.terrain`)."""
