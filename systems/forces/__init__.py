"""Environment forces on bodies and links, as row terms every pipeline fuses: atmospheric drag
(:mod:`.drag`) and solar radiation pressure (:mod:`.solar_pressure`). A new force goes here (or in
your own file: ``scenes/examples/custom_force.py``)."""
