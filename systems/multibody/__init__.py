"""Articulated trees (seed 001): the system that steps them (:mod:`.dynamics`) and its kernels:
spatial algebra and scratch (:mod:`.spatial`), the joint model (:mod:`.joints`: a new joint kind
goes here), RNEA, CRBA, ABA, poses and momentum (:mod:`.algorithms`), and the external forces,
joint laws, state derivative and steppers (:mod:`.kernels`: a new joint law goes here)."""
