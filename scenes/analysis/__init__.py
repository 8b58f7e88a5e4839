"""Analyses of a target body that need no simulation: lift-off velocity maps and surface curvature."""
