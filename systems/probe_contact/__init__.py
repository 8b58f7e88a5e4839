"""Contact of rigid probes with a static surface (seed 004 §2.5): Stronge's impulsive collisions
(:mod:`.collision`) and contact motion (:mod:`.contact_motion`: resting, sliding, rolling; its
small dense solves in :mod:`.linalg`). A new lander contact law goes here."""
