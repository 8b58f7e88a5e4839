"""A catalogue of bad inputs: each is refused before the store exists, with one line naming the
field, the value and the rule, and no traceback (``tumble run`` without ``--debug``).

Each case is run through the real command line (typer's CliRunner, in-process for speed) and
checked for: exit status 1, exactly one stderr line ``error: <field> = <value>: <rule>`` containing
the expected field, value and rule fragments, no traceback, and no store (nor lock file) left at
``--out``. Cases that need a scene of their own write a small scene file first.
"""

import pathlib
import textwrap

import pytest
import zarr
from typer.testing import CliRunner

from tumble import run_batch
from tumble.cli import app
from ecs.errors import InputError

ROOT = pathlib.Path(__file__).resolve().parents[1]
DRIFT = str(ROOT / "tests" / "scenes_for_tests" / "drift.py")

RIGID = """
import numpy as np
from components.rigid import MassProps, RigidState, Wrench
from ecs import Dispersion, Scene, World
from systems.dynamics.integration import Integrator

def build():
    w = World("bad")
    craft = w.spawn(RigidState(attitude=np.array({attitude})), MassProps(mass={mass}, inertia=np.diag({inertia})),
                    Wrench(), name="craft")
    w.add_system(Integrator("rk4"))
    disp = [{dispersion}]
    return Scene("bad", "bad input", w, 1.0, 0.1, final=("body_position",), dispersions=[d for d in disp if d])
"""

DEPLOY = """
import numpy as np
from components.contact_params import ContactParams
from ecs import Dispersion
from scenes.assets.probes import platonic, probe_mass_properties
from scenes.deploy import deployment_scene, itokawa_target

def build():
    geom = platonic("cube", mass=5.0, density=500.0)
    scene = deployment_scene("bad-deploy", "bad input", target=itokawa_target(gravity="point_mass"), shapes=[geom],
                             shape_mass=[probe_mass_properties(geom, mass=5.0)],
                             contact=ContactParams(restitution=0.5, friction=0.5), position={position},
                             position_sigma3={spread}, velocity=(0, 0, -0.05), velocity_sigma3=(0, 0, 0))
    {extra}
    return scene
"""


def rigid_file(tmp, *, mass="1.0", inertia="[1.0, 1.0, 1.0]", attitude="[1.0, 0, 0, 0]", dispersion="None"):
    f = tmp / "rigid_scene.py"
    f.write_text(RIGID.format(mass=mass, inertia=inertia, attitude=attitude, dispersion=dispersion))
    return str(f)


def deploy_file(tmp, *, position="(0, 0, 200)", spread="(0, 0, 0)", extra=""):
    f = tmp / "deploy_scene.py"
    f.write_text(DEPLOY.format(position=position, spread=spread, extra=extra))
    return str(f)


LANDER = """
import tumble

def build():
    body = tumble.small_body("sphere", radii=(100, 100, 100), gm=5.0, period_h=10.0, gravity="point_mass")
    probe = tumble.box_probe((0.3, 0.28, 0.2), mass=10.0)
    release = tumble.release_above(body, latitude=0.0, longitude=0.0, altitude=20.0)
    return tumble.deployment("bad-lander", body, probe, release, {contact})
"""


MESH_LANDER = """
import trimesh
import tumble

def build():
    shape = trimesh.creation.icosphere(subdivisions=2, radius=0.2)      # a 200 m body, in km
    body = tumble.small_body(mesh=shape, {units}gm=5.0, period_h=10.0, gravity="point_mass")
    probe = tumble.box_probe((0.3, 0.28, 0.2), mass=10.0)
    release = tumble.release_above(body, latitude=0.0, longitude=0.0, altitude=20.0)
    return tumble.deployment("bad-mesh-lander", body, probe, release)
"""


NO_INTEGRATOR = """
import numpy as np
from components.loads import AppliedLoad
from components.rigid import rigid_body
from ecs import Scene, World
from systems.dynamics.loads import ApplyLoads

def build():
    w = World("no-integrator")
    craft = w.spawn(*rigid_body(mass=1.0, inertia=[1.0, 1.0, 1.0]), name="craft")
    w.spawn(AppliedLoad(body=craft, kind=0, frame=0, vector=np.array([1.0, 0.0, 0.0])))
    w.add_system(ApplyLoads())                   # a force, and nothing that integrates it
    return Scene("no-integrator", "bad schedule", w, 1.0, 0.1, final=("body_position",))
"""


TREE = """
import numpy as np
from components.multibody import PointOfInterest, Separation, spawn_tree, tree_spec
from ecs import Scene, World
from systems.multibody.dynamics import MultibodyDynamics, SeparationSensor

def build():
    w = World("tree")
    spec = tree_spec(parents=[-1, 0], kinds=["free", "revolute"], mass=[10.0, 1.0], inertia=[[1, 1, 1], [0.1, 0.1, 0.1]],
                     offset=[[0, 0, 0], [1.0, 0, 0]])
    links = spawn_tree(w, spec, names=["base", "arm"], joint_names={joint_names})
    a = w.spawn(PointOfInterest(link=links[0], offset=(0.0, 0.0, 0.0)), name="a")
    b = w.spawn(PointOfInterest(link=links[1], offset=(0.5, 0.0, 0.0)), name="b")
    w.spawn(Separation(a=a, b=b, reach={reach}), name="gap")
    w.add_system(MultibodyDynamics("rk4"))
    w.add_system(SeparationSensor())
    return Scene("tree", "bad input", w, 1.0, 0.1, final=("joint_q", "separation_distance"))
"""


def tree_file(tmp, *, joint_names="None", reach="0.1"):
    return scene_file(tmp, "tree_scene.py", TREE.format(joint_names=joint_names, reach=reach))


def readme_block(marker: str) -> str:
    """The README's Python block that contains ``marker``, verbatim."""
    import re

    text = (ROOT / "README.md").read_text()
    return next(b for b in re.findall(r"```python\n(.*?)```", text, flags=re.S) if marker in b)


def scene_file(tmp, name: str, text: str) -> str:
    """A scene file ``name`` holding ``text`` in ``tmp``."""
    f = tmp / name
    f.write_text(text)
    return str(f)


# (id, scene (a callable of tmp_path for scene files), extra CLI args, fragments the line must contain)
CASES = [
    # scene parameters from -p: converted against build()'s signature
    ("param-not-a-number", DRIFT, ["-p", "t_end=abc"], ["t_end", "'abc'", "must be a number"]),
    ("param-not-an-integer", DRIFT, ["-p", "record_every=0.5"], ["record_every", "0.5", "must be an integer"]),
    ("param-unknown", DRIFT, ["-p", "t_endd=3"], ["t_endd", "is not a parameter", "t_end"]),
    ("param-bad-form", DRIFT, ["-p", "t_end"], ["--param", "'t_end'", "KEY=VALUE"]),
    ("param-bad-key", DRIFT, ["-p", "1x=3"], ["--param", "'1x=3'", "identifier"]),
    ("param-level-text", "deploy-cube", ["-p", "level=x"], ["level", "'x'", "must be an integer"]),
    ("param-restitution-range", "deploy-cube", ["-p", "restitution=1.5"], ["restitution", "1.5", "in [0.0, 1.0]"]),
    ("param-friction-negative", "deploy-cube", ["-p", "friction=-1"], ["friction", "-1", ">= 0"]),
    ("param-mass-negative", "deploy-cube", ["-p", "mass=-5"], ["mass", "-5", "> 0"]),
    ("param-frame-zero", "deploy-cube", ["-p", "frame=0"], ["frame", "0", "> 0"]),
    ("param-t-cap-negative", "deploy-cube", ["-p", "t_cap=-1"], ["t_cap", "-1", "> 0"]),
    ("param-gravity-unknown", "deploy-cube", ["-p", "gravity=banana"], ["gravity", "'banana'", "voxel"]),
    ("param-station-config", "station", ["-p", "config=floppy"], ["config", "'floppy'", "'locked'"]),
    ("param-station-joint-range", "station", ["-p", "elbow_pitch=300"], ["elbow_pitch", "300", "270"]),
    ("param-station-arm-base", "station", ["-p", "arm_base=1,2"], ["arm_base", "'1,2'", "three finite numbers"]),
    ("param-station-ignored", "station", ["-p", "config=locked", "-p", "slew_torque=50"],
     ["slew_torque", "50", "does nothing with config='locked'"]),
    ("param-capture-flyer-length", "capture", ["-p", "flyer_length=4"], ["flyer_length", "4", "diameter 4.4 m"]),
    ("param-capture-offset", "capture", ["-p", "offset=nan"], ["offset", "nan", "finite distance"]),
    ("param-capture-environment", "capture", ["-p", "environment=vacuum"], ["environment", "'vacuum'", "'central'"]),
    ("param-station-environment", "station", ["-p", "environment=moon"], ["environment", "'moon'", "'gravity'"]),
    # multibody trees: joint names and separation checks
    ("tree-joint-names-length", lambda t: tree_file(t, joint_names="['one']"), [],
     ["spawn_tree.joint_names", "['one']", "must have 2 entries"]),
    ("tree-joint-names-repeated", lambda t: tree_file(t, joint_names="['j', 'j']"), [],
     ["spawn_tree.joint_names[1]", "'j'", "not used before"]),
    ("tree-separation-reach-negative", lambda t: tree_file(t, reach="-0.5"), [],
     ["separation_reach of gap", "-0.5", ">= 0"]),
    # the scene's times and recording, refused where the scene is made (ecs.world.check_run_times)
    ("scene-t-end-negative", DRIFT, ["-p", "t_end=-1"], ["t_end", "-1", "non-negative finite time"]),
    ("scene-dt-zero", DRIFT, ["-p", "dt=0"], ["dt", "0", "positive finite time step"]),
    ("scene-dt-nan", DRIFT, ["-p", "dt=nan"], ["dt", "nan", "positive finite time step"]),
    ("scene-record-every-zero", DRIFT, ["-p", "record_every=0"], ["record_every", "0", ">= 1"]),
    ("scene-absurd-frames", DRIFT, ["-p", "t_end=1e12"], ["t_end / dt", "1e+12 s / 0.01 s", "frames"]),
    ("deploy-record-every-zero", "deploy-cube", ["-p", "record_every=0"], ["record_every", "0", ">= 1"]),
    ("deploy-frame-tiny", "deploy-cube", ["-p", "frame=1e-9"], ["t_end / dt", "frames"]),
    # contact ranges and dispersions are refused, never clipped (issue 36/38: half the samples at e = 1.0)
    ("deploy-restitution-range-above-1", "deploy", ["-p", "restitution_range=[0,2]"],
     ["restitution_range", "2", "<= high <= 1.0"]),
    ("deploy-friction-range-negative", "deploy", ["-p", "friction_range=[-1,0.5]"],
     ["friction_range", "-1", "0.0 <= low"]),
    ("deploy-restitution-range-scalar", "deploy", ["-p", "restitution_range=0.4"],
     ["restitution_range", "0.4", "[low, high]"]),
    ("lander-restitution-dispersion-above-1", lambda t: scene_file(t, "lander.py", LANDER.format(contact="restitution=tumble.uniform(0.8, 1.3)")), [],
     ["restitution (dispersed)", "must lie in [0.0, 1.0]", "not clipped"]),
    # shape models: the unit is required, and a volume that GM makes implausibly dense names the mistake
    ("mesh-without-units", lambda t: scene_file(t, "mesh_lander.py", MESH_LANDER.format(units="")), [], ["mesh_units", "None", "is required with a mesh"]),
    ("mesh-in-km-read-as-metres", lambda t: scene_file(t, "mesh_lander.py", MESH_LANDER.format(units="mesh_units='m', ")), [],
     ["mesh", "bulk density", "likely in km (mesh_units='km')"]),
    # a schedule that cannot work: refused once, before the store, not as every sample 'raised'
    ("derivative-without-integrator", lambda t: scene_file(t, "no_integrator.py", NO_INTEGRATOR), [], ["ApplyLoads", "would never run", "integrator"]),
    # the batch itself
    ("samples-beyond-memory", DRIFT, ["--samples", "1000000000000"], ["samples", "1000000000000", "memory"]),
    ("unknown-scene", "deploy-cub", [], ["scene", "'deploy-cub'", "deploy-cube"]),
    ("missing-scene-file", "no_such_scene.py", [], ["scene", "no_such_scene.py", "no such file"]),
    ("resume-and-overwrite", DRIFT, ["--resume", "--overwrite"], ["--resume/--overwrite", "choose one"]),
    ("workers-and-scheduler", DRIFT, ["--workers", "1", "--scheduler", "tcp://127.0.0.1:1"],
     ["--workers/--scheduler", "choose one"]),
    ("resume-without-store", DRIFT, ["--resume"], ["--resume", "no store"]),
    # components built by hand, refused at compile whatever way they were built
    ("raw-mass-negative", lambda t: rigid_file(t, mass="-1.0"), [], ["body_mass of craft (sample 0)", "-1.0", "> 0"]),
    ("raw-inertia-triangle", lambda t: rigid_file(t, inertia="[1.0, 1.0, 5.0]"), [],
     ["body_inertia of craft (sample 0)", "5.0", "I3 <= I1 + I2"]),
    ("raw-inertia-not-pd", lambda t: rigid_file(t, inertia="[1.0, -1.0, 1.0]"), [],
     ["body_inertia of craft", "-1.0", "positive-definite"]),
    ("raw-quaternion-not-unit", lambda t: rigid_file(t, attitude="[2.0, 0, 0, 0]"), [],
     ["body_attitude of craft", "2.0", "unit quaternion"]),
    # every sample's dispersion draws, checked before the store is created
    ("dispersion-negative-mass", lambda t: rigid_file(t, dispersion="Dispersion('craft', 'body_mass', lambda rng: "
                                                                    "1.0 + 3.0 * rng.standard_normal(), name='m')"),
     [], ["dispersion m of craft (sample", "> 0 [kg]"]),
    ("dispersion-quaternion-norm-5", lambda t: rigid_file(t, dispersion="Dispersion('craft', 'body_attitude', "
                                                                        "lambda rng: [5.0, 0, 0, 0], name='q')"),
     [], ["dispersion q of craft (sample 0)", "5.0", "unit quaternion"]),
    ("dispersion-shape-later-sample", lambda t: rigid_file(
        t, dispersion="Dispersion('craft', 'body_position', lambda rng: [1.0, 2.0] if rng.random() > 0.9 else "
                      "[0.0, 0.0, 0.0], name='p')"),
     [], ["dispersion p (sample", "[1.0, 2.0]", "shape (3,)"]),
    ("dispersion-nan", lambda t: rigid_file(t, dispersion="Dispersion('craft', 'body_velocity', lambda rng: "
                                                          "[float('nan'), 0.0, 0.0], name='v')"),
     [], ["dispersion v (sample 0)", "nan", "finite"]),
    ("dispersion-inertia-derived", lambda t: rigid_file(
        t, dispersion="Dispersion('craft', 'body_mass', lambda rng: 2.0, name='m2', derive={'body_inertia': "
                      "lambda m: np.diag([1.0, 1.0, 3.0 * m])})"),
     [], ["dispersion m2 (derived body_inertia) of craft (sample 0)", "6.0", "I3 <= I1 + I2"]),
    # deployment: the release point and the contact parameters of every sample
    ("release-inside-target", lambda t: deploy_file(t, position="(0, 0, 0)"), [],
     ["body_position of probe (sample 0)", "[0.0, 0.0, 0.0]", "m inside the target's surface"]),
    ("release-spread-inside", lambda t: deploy_file(t, position="(0, 0, 60)", spread="(0, 0, 150)"), [],
     ["body_position of probe (sample", "m inside the target's surface"]),
    ("probe-com-offset", lambda t: deploy_file(
        t, extra="from components.rigid import MassProps; "
                 "scene.world.component(scene.world.entity('probe'), MassProps).com[:] = (0.1, 0.0, 0.0)"), [],
     ["body_com of probe", "0.1", "must be 0 for a deployed probe"]),
    ("deployment-beside-integrator", lambda t: deploy_file(
        t, extra="from systems.dynamics.integration import Integrator; scene.world.add_system(Integrator('rk4'))"), [],
     ["write-write conflict", "DeploymentLoop and Integrator", "body_position"]),
    # the batch's own options: refused by tumble's one line (field, value, rule), not typer's usage box
    ("samples-zero", DRIFT, ["--samples", "0"], ["samples", "0", ">= 1"]),
    ("samples-negative", DRIFT, ["--samples", "-5"], ["samples", "-5", ">= 1"]),
    ("seed-negative", DRIFT, ["--seed", "-1"], ["seed", "-1", ">= 0"]),
    ("block-zero", DRIFT, ["--block", "0"], ["block", "0", ">= 1"]),
    ("active-zero", DRIFT, ["--active", "0"], ["active", "0", ">= 1"]),
    ("workers-zero", DRIFT, ["--workers", "0"], ["workers", "0", ">= 1"]),
    ("event-capacity-zero", DRIFT, ["--event-capacity", "0"], ["event_capacity", "0", ">= 1"]),
    ("event-capacity-negative", DRIFT, ["--event-capacity", "-3"], ["event_capacity", "-3", ">= 1"]),
    # scene times through -p
    ("scene-t-end-inf", DRIFT, ["-p", "t_end=inf"], ["t_end", "inf", "finite time"]),
    ("scene-t-end-nan", DRIFT, ["-p", "t_end=nan"], ["t_end", "nan", "finite time"]),
    ("scene-dt-negative", DRIFT, ["-p", "dt=-0.1"], ["dt", "-0.1", "positive finite time step"]),
    ("scene-record-every-negative", DRIFT, ["-p", "record_every=-1"], ["record_every", "-1", ">= 1"]),
    ("param-list-for-a-number", DRIFT, ["-p", "t_end=[1,2]"], ["t_end", "[1, 2]", "must be a number"]),
    # the README's thruster kick, through its own build(t_end, dt)
    ("readme-kick-t-end-negative", lambda t: scene_file(t, "kick.py", readme_block("def build")), ["-p", "t_end=-1"],
     ["t_end", "-1", "non-negative finite time"]),
    ("readme-kick-dt-zero", lambda t: scene_file(t, "kick.py", readme_block("def build")), ["-p", "dt=0"],
     ["dt", "0", "positive finite time step"]),
    # deploy-cube
    ("cube-level-negative", "deploy-cube", ["-p", "level=-1"], ["level", "-1", ">= 0"]),
    ("cube-level-absurd", "deploy-cube", ["-p", "level=9"], ["level", "9", "1,582,092 surface points", "level <= 6"]),
    ("cube-restitution-negative", "deploy-cube", ["-p", "restitution=-0.1"], ["restitution", "-0.1", "[0.0, 1.0]"]),
    ("cube-restitution-nan", "deploy-cube", ["-p", "restitution=nan"], ["restitution", "nan", "finite"]),
    ("cube-friction-nan", "deploy-cube", ["-p", "friction=nan"], ["friction", "nan", "finite"]),
    ("cube-mass-zero", "deploy-cube", ["-p", "mass=0"], ["mass", "0", "> 0 [kg]"]),
    ("cube-density-negative", "deploy-cube", ["-p", "density=-1"], ["density", "-1", "> 0 [kg/m^3]"]),
    ("cube-rocks-unknown", "deploy-cube", ["-p", "rocks=granite"], ["rocks", "'granite'", "'polyhedral'"]),
    ("cube-restitution-spread-negative", "deploy-cube", ["-p", "restitution_sigma3=-0.1"],
     ["restitution_sigma3", "-0.1", "spread >= 0"]),
    ("cube-rock-density-negative", "deploy-cube", ["-p", "rocks=polyhedral", "-p", "rocks_per_m2=-1"],
     ["rocks_per_m2", "-1", "> 0 [1/m^2]"]),
    ("cube-rock-region-zero", "deploy-cube", ["-p", "rocks=polyhedral", "-p", "rock_region=0"],
     ["rock_region", "0", "> 0 [m]"]),
    ("cube-t-cap-nan", "deploy-cube", ["-p", "t_cap=nan"], ["t_cap", "nan", "> 0 [s]"]),
    ("cube-frame-inf", "deploy-cube", ["-p", "frame=inf"], ["frame", "inf", "finite"]),
    # deploy (any mission from -p)
    ("mission-latitude-out-of-range", "deploy", ["-p", "latitude=100"], ["latitude", "100", "[-90, 90]"]),
    ("mission-latitude-nan", "deploy", ["-p", "latitude=nan"], ["latitude", "nan", "[-90, 90]"]),
    ("mission-longitude-inf", "deploy", ["-p", "longitude=inf"], ["longitude", "inf", "finite angle"]),
    ("mission-altitude-negative", "deploy", ["-p", "altitude=-10"], ["altitude", "-10", "above the surface"]),
    ("mission-friction-range-reversed", "deploy", ["-p", "friction_range=[0.8,0.4]"],
     ["friction_range", "[0.8, 0.4]", "low <= high"]),
    ("mission-restitution-range-one-value", "deploy", ["-p", "restitution_range=[0.5]"],
     ["restitution_range", "[0.5]", "[low, high]"]),
    ("mission-body-unknown", "deploy", ["-p", "body=banana"], ["'banana'", "spinning-top"]),
    ("mission-radii-two", "deploy", ["-p", "radii=[1,2]"], ["radii", "[1, 2]", "three semi-axes"]),
    ("mission-radii-negative", "deploy", ["-p", "radii=[-100,100,100]"], ["radii[0]", "-100", "> 0 [m]"]),
    ("mission-gm-zero", "deploy", ["-p", "gm=0"], ["gm", "0", "> 0 [m^3/s^2]"]),
    ("mission-period-zero", "deploy", ["-p", "period_h=0"], ["period_h", "0", "> 0 [h]"]),
    ("mission-probe-unknown", "deploy", ["-p", "probe=cylinder"], ["'cylinder'", "dodecahedron"]),
    ("mission-size-two", "deploy", ["-p", "size=[0.3,0.2]"], ["size", "[0.3, 0.2]", "three edge lengths"]),
    ("mission-size-negative", "deploy", ["-p", "size=[0.3,-0.2,0.1]"], ["size.b", "-0.2", "> 0 [m]"]),
    ("mission-mesh-missing", "deploy", ["-p", "mesh=/nonexistent.obj", "-p", "mesh_units=m"],
     ["mesh file", "/nonexistent.obj", "does not exist"]),
    ("mission-mesh-units-without-mesh", "deploy", ["-p", "mesh_units=furlong"],
     ["mesh_units", "'furlong'", "does nothing without mesh"]),
    ("mission-resolution-coarse", "deploy", ["-p", "resolution=2"], ["resolution", "2", ">= 8"]),
    ("mission-rolling-resistance-negative", "deploy", ["-p", "rolling_resistance=-1"],
     ["rolling_resistance", "-1", ">= 0"]),
    ("station-epoch-without-ephemeris", "station", ["-p", "environment=central", "-p", "epoch=2460000.5"],
     ["epoch", "2460000.5", "does nothing with environment='central'"]),
    ("capture-epoch-without-ephemeris", "capture", ["-p", "epoch=2460000.5"],
     ["epoch", "2460000.5", "does nothing with environment='central'"]),
    ("cubesat-tolerance-with-rk4", "cubesat", ["-p", "rtol=1e-8"], ["rtol", "1e-08", "does nothing with method='rk4'"]),
    ("station-area-without-drag", "station", ["-p", "environment=central", "-p", "station_area=900"],
     ["station_area", "900", "does nothing with environment='central'"]),
    ("station-slew-time-without-slew", "station", ["-p", "slew_torque=0", "-p", "slew_time=300"],
     ["slew_time", "300", "does nothing with slew_torque=0"]),
    ("mission-density-of-a-box", "deploy", ["-p", "density=800"], ["density", "800", "does nothing with probe='box'"]),
    ("mission-radii-of-a-mesh", "deploy", ["-p", "mesh=/nonexistent.obj", "-p", "mesh_units=m", "-p", "radii=[1,1,1]"],
     ["radii", "[1, 1, 1]", "does nothing with mesh="]),
    ("mission-body-of-a-mesh", "deploy", ["-p", "mesh=/nonexistent.obj", "-p", "mesh_units=m", "-p", "body=sphere"],
     ["body", "'sphere'", "does nothing with mesh="]),
    ("cube-rocks-per-m2-without-rocks", "deploy-cube", ["-p", "rocks_per_m2=5"],
     ["rocks_per_m2", "5", "does nothing with rocks=False"]),
    ("shapes-rock-region-with-psr-rocks", "deploy-shapes", ["-p", "rocks=psr", "-p", "rock_region=10"],
     ["rock_region", "10", "does nothing with rocks='psr'"]),
    ("precession-tolerance-with-rk4", "precession", ["-p", "atol=1e-9"],
     ["atol", "1e-09", "does nothing with method='rk4'"]),
    ("station-payload-size-without-payload", "station", ["-p", "payload_mass=0", "-p", "payload_length=5"],
     ["payload_length", "5", "does nothing with payload_mass=0"]),
    ("mission-size-of-a-solid", "deploy", ["-p", "probe=cube", "-p", "size=[1,1,1]"],
     ["size", "[1, 1, 1]", "does nothing with probe='cube'"]),
    ("mission-rolling-resistance-on-a-box", "deploy", ["-p", "rolling_resistance=0.035"],
     ["rolling_resistance", "0.035", "a box probe does not roll"]),
    ("mission-restitution-and-its-range", "deploy", ["-p", "restitution=0.6", "-p", "restitution_range=[0.5,0.7]"],
     ["restitution = 0.6", "restitution_range = [0.5, 0.7]", "give one of the two"]),
    ("mascot-friction-and-its-range", "mascot", ["-p", "friction=0.6", "-p", "friction_range=[0.5,0.8]"],
     ["friction = 0.6", "friction_range = [0.5, 0.8]", "give one of the two"]),
    ("mission-position-spread-negative", "deploy", ["-p", "position_sigma3=-1"],
     ["position_sigma3", "-1", "spread >= 0"]),
    ("mission-velocity-spread-negative", "deploy", ["-p", "velocity_sigma3=-1"],
     ["velocity_sigma3", "-1", "spread >= 0"]),
    ("mission-polyhedral-rocks", "deploy", ["-p", "rocks=polyhedral"], ["rocks", "'polyhedral'", "itokawa_target"]),
    # station and capture
    ("station-t-end-negative", "station", ["-p", "t_end=-1"], ["t_end", "-1", "> 0 [s]"]),
    ("station-payload-mass-negative", "station", ["-p", "payload_mass=-1"], ["payload_mass", "-1", ">= 0"]),
    ("station-altitude-negative", "station", ["-p", "altitude=-100"], ["altitude", "-100", "> 0 [m]"]),
    ("station-inclination", "station", ["-p", "inclination=200"], ["inclination", "200", "[-180, 180]"]),
    ("station-servo-period-zero", "station", ["-p", "servo_period=0"], ["servo_period", "0", "> 0 [s]"]),
    ("station-method-unknown", "station", ["-p", "method=euler2"], ["method", "'euler2'", "'kuo_nguyen'"]),
    ("station-substeps-zero", "station", ["-p", "substeps=0"], ["substeps", "0", ">= 1"]),
    ("station-joint-spread-negative", "station", ["-p", "joint_spread=-1"], ["joint_spread", "-1", "spread >= 0"]),
    ("capture-miss-spread-negative", "capture", ["-p", "miss_spread=-1"], ["miss_spread", "-1", "spread >= 0"]),
    ("capture-latch-stiffness-negative", "capture", ["-p", "latch_stiffness=-1"],
     ["latch_stiffness", "-1", "> 0 [N/m]"]),
    ("capture-snare-radius-zero", "capture", ["-p", "snare_radius=0"], ["snare_radius", "0", "> 0 [m]"]),
    ("capture-flyer-mass-zero", "capture", ["-p", "flyer_mass=0"], ["flyer_mass", "0", "> 0 [kg]"]),
    ("capture-gap-negative", "capture", ["-p", "gap=-1"], ["gap", "-1", ">= 0"]),
    # facet contact and rigid-body validation scenes
    ("jeod-method-unknown", "jeod-point", ["-p", "method=euler2"], ["method", "'euler2'", "'dp54'"]),
    ("jeod-law-unknown", "jeod-point", ["-p", "law=hooke"], ["law", "'hooke'", "'momentum'"]),
    ("jeod-mode-unknown", "jeod-point", ["-p", "mode=x"], ["mode", "'x'", "'clamp'"]),
    ("precession-inertia-negative", "precession", ["-p", "i_axial=-1"], ["i_axial", "-1", "> 0 [kg m^2]"]),
    ("precession-rtol-zero", "precession", ["-p", "method=dp54", "-p", "rtol=0"], ["rtol", "0", "positive finite tolerance"]),
    ("precession-period-zero", "precession", ["-p", "period=0"], ["period", "0", "> 0 [s]"]),
    ("restitution-dispersion-out-of-range", lambda t: deploy_file(
        t, extra="scene.dispersions.append(Dispersion('probe', 'probe_terrain_pair', lambda rng: [1.5, 0.5, 0, 0, "
                  "1.5, 1.5, 1.5, 0, 0], name='pair'))"),
     [], ["dispersion pair of probe (sample 0)", "1.5", "0 <= restitution <= 1"]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_refused_before_the_store_exists(tmp_path, case):
    _, scene, extra, fragments = case
    scene = scene(tmp_path) if callable(scene) else scene
    out = tmp_path / "out.zarr"
    if "--resume" in extra and "--overwrite" not in extra:
        args = ["run", scene, "--out", str(out), "--no-progress", *extra]
    else:
        args = ["run", scene, "--samples", "20", "--out", str(out), "--no-progress", *extra]
    if "--samples" in extra:
        args = ["run", scene, "--out", str(out), "--no-progress", *extra]
    r = CliRunner().invoke(app, args)
    lines = r.stderr.strip().splitlines()
    assert r.exit_code == 1, (r.exit_code, r.stdout, r.stderr)
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert "Traceback (most recent call last)" not in r.output, r.stderr
    assert "--debug shows the traceback" not in lines[0], r.stderr      # an InputError, not a crash
    for frag in fragments:
        assert frag in lines[0], (frag, lines[0])
    assert not out.exists(), "refused input must not create the store"
    assert not pathlib.Path(str(out) + ".lock").exists()


def test_the_catalogue_is_large_enough():
    assert len(CASES) >= 100 and len({c[0] for c in CASES}) == len(CASES)


def test_resume_with_a_changed_parameter_names_that_key_only(tmp_path):
    out = tmp_path / "r.zarr"
    run_batch(DRIFT, samples=4, out=out, params={"sigma": 0.3})
    before = sorted(p.name for p in out.rglob("*"))
    r = CliRunner().invoke(app, ["run", DRIFT, "--out", str(out), "--resume", "--no-progress", "-p", "sigma=0.5"])
    assert r.exit_code == 1
    line = r.stderr.strip()
    assert "scene.params.sigma: store 0.3, this run 0.5" in line, line
    assert "fail_above" not in line and len(line) < 300, line   # only the differing key
    assert sorted(p.name for p in out.rglob("*")) == before


def test_api_arguments_are_checked_too(tmp_path):
    for kw, frag in (({"samples": 0}, "samples = 0"), ({"samples": 2, "seed": -1}, "seed = -1"),
                     ({"samples": 2, "block": 0}, "block = 0"), ({"samples": 2, "backend": "tpu"}, "backend = 'tpu'"),
                     ({"samples": 2, "shard_samples": 3}, "shard_samples = 3")):
        with pytest.raises(InputError, match=frag.replace("(", r"\(")):
            run_batch(DRIFT, out=tmp_path / "x.zarr", **kw)
        assert not (tmp_path / "x.zarr").exists()
    assert zarr is not None


def test_the_input_checks_of_a_large_batch_report_progress(tmp_path):
    """A batch of >= STAGE_REPORT_SAMPLES samples reports its input checks (every sample's draws,
    before the store) through progress.stage, chunk by chunk, so minutes of checking are not silent;
    a small batch does not."""
    from ecs.batch import STAGE_REPORT_SAMPLES

    class Stop(Exception):
        pass

    class Progress:
        def __init__(self):
            self.stages = []

        def __call__(self, done, total):
            pass

        def stage(self, what, done, total):
            self.stages.append((what, done, total))
            if len(self.stages) == 3:
                raise Stop

    p = Progress()
    with pytest.raises(Stop):
        run_batch(DRIFT, samples=STAGE_REPORT_SAMPLES, out=tmp_path / "big.zarr", progress=p)
    assert [d for _, d, _ in p.stages] == [4096, 8192, 12288]
    assert all(t == STAGE_REPORT_SAMPLES and "inputs" in w for w, _, t in p.stages)
    assert not (tmp_path / "big.zarr").exists()
    small = Progress()
    run_batch(DRIFT, samples=8, out=tmp_path / "small.zarr", progress=small)
    assert small.stages == []


def test_a_shape_or_radii_with_a_mesh_are_refused():
    """small_body(mesh=...) with a built-in shape's name or semi-axes: the mesh is the shape and size."""
    import trimesh

    from scenes.mission import small_body

    mesh = trimesh.creation.icosphere(subdivisions=2, radius=0.2)     # km: a 400 m body
    for kw, name in (({"radii": (200.0,) * 3}, "radii"), ({"shape": "sphere"}, "shape")):
        with pytest.raises(InputError, match=f"{name}.*does nothing with mesh="):
            small_body(mesh=mesh, mesh_units="km", gm=5.0, period_h=8.0, gravity="point_mass", **kw)


def test_a_voxel_spacing_without_the_voxel_field_is_refused():
    """small_body(voxel_spacing=...) with another gravity model: the spacing would do nothing."""
    from scenes.mission import small_body

    with pytest.raises(InputError, match="voxel_spacing.*does nothing with gravity='point_mass'"):
        small_body("sphere", radii=(200.0,) * 3, gm=5.0, period_h=8.0, gravity="point_mass", voxel_spacing=10.0)
