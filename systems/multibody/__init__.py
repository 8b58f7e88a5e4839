"""Articulated trees (seed 001): the system that steps them (:mod:`.dynamics`) and its kernels:
spatial algebra and scratch (:mod:`.spatial`), the joint model (:mod:`.joints`: a new joint kind
goes here), RNEA, CRBA, ABA, poses and momentum (:mod:`.algorithms`), and the external forces,
built-in joint laws, state derivative and steppers (:mod:`.kernels`; a user's own joint law is an
:class:`ecs.terms.JointLaw` in the user's file, ``scenes/examples/joint_servo.py``)."""
