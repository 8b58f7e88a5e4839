"""Articulated trees (seed 001): the system that steps them (:mod:`.dynamics`) and the spatial
algebra kernels (:mod:`.kernels`: kinematics, RNEA, CRBA, ABA, joint laws). A new joint or joint
law goes in :mod:`.kernels`."""
