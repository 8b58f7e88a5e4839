"""Rolling resistance of a sphere lander in the deployment pipeline (seed 004 eqs 2.85, 2.107–2.110).

The bug these tests hold down: ``scenes.mission.deployment(..., rolling_resistance=0.035)`` passed a
rolling radius of 0 to the engine, so the torque ``C_RR R F_N`` was zero and the parameter did
nothing. A sphere on a body that turns in 8 h then rolled toward the equator and back for good
(still 0.013 m/s after 20,000 s, 38 contact changes).

Reference (independent of the kernels): the work of rolling resistance on a sphere that rolls
without slip. With ``L = −C_RR ρ F_N ω̂`` (eq 2.107, R = ρ) and ``F_RR = m r̃ I⁻¹ L`` at the centre
(eq 2.110, contact point ``r = −ρN``), ``v = ρ ω × N`` gives the power
``L·ω + F_RR·v = −C_RR F_N v (1 + 1/j)``, ``j = I/(mρ²)``. So the mechanical energy (kinetic, both
parts, plus the gravitational potential) drops by ``(1 + 1/j) C_RR F_N s`` over a path of length s.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from components.contact_params import ContactParams
from components.status import Status
from ecs.errors import InputError
from scenes.mission import box_probe, deployment, release_above, small_body, solid_probe

GM, RADIUS, C_RR = 5.0, 200.0, 0.035


def _sphere_on_sphere(period_h, *, velocity=None, altitude=30.0, latitude=20.0, restitution=0.6, t_cap=6000.0,
                      rolling_resistance=C_RR, **recording):
    body = small_body("sphere", radii=(RADIUS,) * 3, gm=GM, period_h=period_h, gravity="point_mass", resolution=48)
    release = release_above(body, latitude=latitude, longitude=0.0, altitude=altitude)
    if velocity is not None:
        release = dataclasses.replace(release, velocity=np.asarray(velocity, float))
    return deployment("rolling", body, solid_probe("sphere", mass=5.0, density=500.0), release,
                      restitution=restitution, friction=0.5, rolling_resistance=rolling_resistance, t_cap=t_cap,
                      random_attitude=False, **recording)


def test_rolling_resistance_takes_the_energy_the_closed_form_says(tmp_path):
    """A 5 kg sphere (ρ 0.134 m, j 0.4) set down 1 mm above a non-rotating 200 m sphere (GM 5) at
    4 mm/s sideways, e = 0: it slides, rolls within ~20 s (at 5/7 of that speed), and rolls to rest.
    From 40 s to 200 s (2.7 to 0.9 mm/s, above the lock regime ω < ω* = 1e-3 rad/s where eq 2.86
    takes over) the mechanical energy it loses must be (1 + 1/j) C_RR m g s (module docstring).
    Measured: within 1e-6 of it.
    Tolerance 1e-3: F_N = m g leaves out the centripetal term v²/(R g) ≤ 6.4e-4 (the faceted body's
    planar faces make it smaller), and the recorded path is a chord sum every 5 s (< 1e-7).
    Before the fix nothing was lost (ratio ≈ 0)."""
    from tumble import run_batch

    scene = _sphere_on_sphere(1e9, velocity=(0.0, 0.0, 0.004), altitude=1e-3, latitude=0.0, restitution=0.0,
                              t_cap=400.0, frame=5.0, record_every=1)
    import xarray as xr

    path = run_batch(scene, samples=1, out=tmp_path / "s.zarr")
    fin = xr.open_zarr(path, group="final")
    assert int(fin["status"].values[0]) == Status.SETTLED, fin["status"].values
    tr = xr.open_zarr(path, group="trajectories")
    t = np.asarray(tr["time"].values)
    x = np.asarray(tr["body_position"].values)[0, :, 0]
    v = np.asarray(tr["body_velocity"].values)[0, :, 0]
    w = np.asarray(tr["body_omega"].values)[0, :, 0]
    m, rho = 5.0, (3.0 * 5.0 / (4.0 * np.pi * 500.0)) ** (1.0 / 3.0)
    j = 0.4
    i1, i2 = np.searchsorted(t, 40.0), np.searchsorted(t, 200.0)
    r = np.linalg.norm(x, axis=1)
    energy = 0.5 * m * np.sum(v * v, 1) + 0.5 * j * m * rho * rho * np.sum(w * w, 1) - GM * m / r
    path = float(np.sum(np.linalg.norm(np.diff(x[i1:i2 + 1], axis=0), axis=1)))
    f_n = m * float(np.mean(GM / r[i1:i2 + 1] ** 2))
    lost = energy[i1] - energy[i2]
    expected = (1.0 + 1.0 / j) * C_RR * f_n * path
    print(f"\nenergy lost {lost:.6e} J, closed form {expected:.6e} J over {path:.3f} m")
    assert path > 0.2
    assert abs(lost / expected - 1.0) < 1e-3


def test_a_sphere_rolling_on_a_fast_rotator_comes_to_rest(tmp_path):
    """The case that showed the bug: released 30 m above latitude 20° of a 200 m sphere turning in
    8 h. With rolling resistance acting it settles within 6,000 s (measured: ~2,860 s); without, it
    was still rolling at 0.013 m/s at 20,000 s."""
    from tumble import run_batch
    from tumble.calibrate import open_store_groups

    st = open_store_groups(run_batch(_sphere_on_sphere(8.0), samples=2, out=tmp_path / "s.zarr"))
    status = np.asarray(st["final"]["status"].values)
    assert np.all(status == Status.SETTLED), status


def test_rolling_resistance_on_a_probe_that_does_not_roll_is_refused():
    body = small_body("sphere", radii=(RADIUS,) * 3, gm=GM, period_h=8.0, gravity="point_mass", resolution=24)
    with pytest.raises(InputError, match="rolling_resistance.*does not roll"):
        deployment("box", body, box_probe((1.0, 1.0, 1.0), mass=10.0), release_above(body, latitude=0.0,
                   longitude=0.0, altitude=10.0), rolling_resistance=C_RR)
    from scenes.deploy import deployment_scene
    from scenes.assets.probes import sphere_probe
    from scenes.assets.mass_properties import MassProperties

    with pytest.raises(InputError, match="rolling_radius.*when a rolling resistance is given"):
        deployment_scene("s", "", target=body, shapes=[sphere_probe(0.1)],
                         shape_mass=[MassProperties(mass=1.0, com=np.zeros(3), inertia=0.004 * np.eye(3))],
                         contact=ContactParams(0.5, 0.5, C_RR), position=(300.0, 0, 0), position_sigma3=np.zeros(3),
                         velocity=(0, 0, 0), velocity_sigma3=np.zeros(3), rolling_radius=0.0)


def test_speed_exponent_sets_alpha_of_an_angle_modulated_regolith_law_too():
    """``deployment(..., regolith=Regolith(angle law), speed_exponent=α)`` used to drop α unless the
    law had e₀ = e₁ (it was applied only together with the restitution)."""
    from components.contact_params import PAIR_FIELDS, Regolith

    body = small_body("sphere", radii=(RADIUS,) * 3, gm=GM, period_h=8.0, gravity="point_mass", resolution=24)
    law = Regolith(e_floor=0.1, e_max=0.4, critical_angle=0.5, reference_speed=0.05, speed_exponent=0.88)
    scene = deployment("alpha", body, box_probe((1.0, 1.0, 1.0), mass=10.0),
                       release_above(body, latitude=0.0, longitude=0.0, altitude=10.0), regolith=law,
                       speed_exponent=1.3)
    scene.world.compile()
    row = np.asarray(scene.world.table_with("probe_terrain_pair")["probe_terrain_pair"])[0]
    assert row[PAIR_FIELDS.index("speed_exponent")] == 1.3
    assert (row[PAIR_FIELDS.index("e_floor")], row[PAIR_FIELDS.index("e_max")]) == (0.1, 0.4)
