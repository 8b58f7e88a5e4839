"""Scene assets: procedural terrain, mesh io, SDF and gravity-grid builders, probe shapes, mass properties."""

from pathlib import Path as _Path

#: EGM2008 to degree and order 36, ICGEM format (provenance in the file's header):
#: ``components.gravity.SphericalHarmonics.from_gfc(EGM2008_GFC, degree=20)``.
EGM2008_GFC = _Path(__file__).with_name("data") / "egm2008_36.gfc"
