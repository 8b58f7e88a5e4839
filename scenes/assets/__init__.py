"""Scene assets: procedural terrain, mesh io, SDF and gravity-grid builders, probe shapes, mass properties."""
