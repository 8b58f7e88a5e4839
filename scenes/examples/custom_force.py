"""Add your own force without touching the engine: linear drag F = −b·v as a user system."""
import numpy as np
from numba import njit, prange
from components.rigid import rigid_body
from ecs import Phase, Scene, System, World
from systems.dynamics.integration import Integrator

@njit(parallel=True, cache=True)
def add_drag(status, b, velocity, force):
    for i in prange(velocity.shape[0]):
        if status[i] == 0:  # Status.RUNNING: finished or failed rows cost nothing
            for k in range(3):
                force[i, k] -= b * velocity[i, k]


class LinearDrag(System):
    """F = −b v [N], b in N·s/m, evaluated at every integrator stage."""

    phase = Phase.DERIVATIVE
    reads = ("body_velocity",)
    accumulates = ("body_force",)

    def __init__(self, b: float):
        self.b = b

    def bind(self, world):
        self.tables = world.tables_with("body_velocity", "body_force")

    def process(self, frame):
        for t in self.tables:
            add_drag(t["row_status"], self.b, t["body_velocity"], t["body_force"])

def build(*, b=0.5, mass=2.0, v0=(3.0, 0.0, -1.0), t_end=5.0, dt=0.01):
    world = World("custom_force")
    world.spawn(*rigid_body(mass=mass, inertia=np.ones(3), velocity=v0), name="ball")
    world.add_system(LinearDrag(b))
    world.add_system(Integrator("rk4"))
    cols = ("body_position", "body_velocity")
    return Scene("custom_force", "a ball slowed by linear drag", world, t_end, dt, 10, cols, cols)
