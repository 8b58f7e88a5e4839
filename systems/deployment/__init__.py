"""Probe deployment (seed 004 §2.7): the mode loop (:mod:`.modes`), the deployment loop and its
end states (:mod:`.loop`), the rotating-frame equations, stepper and events of its phases
(:mod:`.physics`), and one module per phase kernel (:mod:`.fly`, :mod:`.collide`,
:mod:`.contact`). A new lander mode (an anchor, a hop) is a :class:`.modes.Mode` in your file."""
