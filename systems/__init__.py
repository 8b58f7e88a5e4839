"""Systems: what happens to the components each frame, one sub-package per role.

* :mod:`systems.dynamics` — rigid-body equations of motion, integrators, loads, row terms;
* :mod:`systems.gravity` — uniform gravity, the gravity system and its field kernels, third bodies;
* :mod:`systems.forces` — environment forces (drag, solar radiation pressure);
* :mod:`systems.terrain` — signed-distance terrain kernels and rocks;
* :mod:`systems.probe_contact` — Stronge collisions and contact motion of rigid probes;
* :mod:`systems.facets` — JEOD facet contact between vehicles and with the ground;
* :mod:`systems.multibody` — articulated trees and their spatial-algebra kernels;
* :mod:`systems.deployment` — probe deployment: mode loop, deployment loop, phase kernels.

Each sub-package's docstring says what a new force, gravity source, contact law, joint or
integrator adds there.
"""
