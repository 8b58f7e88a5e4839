"""Contact of rigid probes with a static surface (seed 004 §2.5): Stronge's impulsive collisions
(:mod:`.collision`: set-up, phases and the restitution laws, where a new lander contact law goes;
:mod:`.impulse`: the integration in the impulse; :mod:`.surface_impacts`: the numpy API and the
system for bodies on a flat surface) and contact motion (:mod:`.contact_motion`: resting, sliding,
rolling; the small dense solves of both in :mod:`.linalg`)."""
