"""Rigid-body dynamics: the equations of motion (:mod:`.rigid_body`; the turning frame's terms that
every rigid body and every deployment probe shares, :mod:`.rotating_frame`), the integrators
(:mod:`.integration`: explicit Euler to DP5(4) and RKMK over one Butcher tableau), applied loads
(:mod:`.loads`) and the row terms that put a force into every pipeline (:mod:`.rigid_terms`).
A new integrator goes in :mod:`.integration`."""
