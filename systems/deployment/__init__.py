"""Probe deployment (seed 004 §2.7): the mode loop (:mod:`.modes`), the deployment loop and its
end states (:mod:`.loop`), the rotating-frame equations and the stepper of its phases
(:mod:`.physics`), where the probe meets the terrain (:mod:`.geometry`: terrain query,
vertices, clearance, contact normal), what happens at a step's edges (:mod:`.events`: event functions and their
location, the lift out of the terrain, snapshots), and one module per phase kernel (:mod:`.fly`,
:mod:`.collide`, :mod:`.contact`). A new lander mode (an anchor, a hop) is a :class:`.modes.Mode`
in your file."""
