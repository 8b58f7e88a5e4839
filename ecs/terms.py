"""Row terms: the force and torque a DERIVATIVE system adds to a row, composed into one kernel.

A pipeline that steps rows on their own (per-row adaptive steps, event location, modes: probe
deployment) cannot call a system's ``process`` at every stage of every row. What composes there is
the *row function*: a DERIVATIVE system returns a :class:`Term` from :meth:`ecs.System.term`, and
the pipeline calls the fused sum of all terms inside its right-hand side (docs/design.md §8).

The term kernel (a numba ``njit`` function, ``cache=True``) takes three records and reads them by
name::

    kernel(s, data, params) -> (fx, fy, fz, tx, ty, tz)

* ``s``, a :data:`RowState`: ``s.i`` the row, ``s.t`` [s] the stage time; ``s.x, s.y, s.z`` [m],
  ``s.vx, s.vy, s.vz`` [m/s]: CoM position and velocity in the frame the pipeline integrates in
  (deployment: the rotating target frame T, velocity relative to T); ``s.q0 … s.q3`` the attitude
  body → that frame (scalar-first), ``s.wx, s.wy, s.wz`` [rad/s] the body's rate relative to that
  frame in body axes, ``s.mass`` [kg];
* ``data``: the term's declared per-row ``columns`` (whole arrays: index them with ``s.i``), its
  ``optional_columns`` (columns a table may lack, passed as zeros of their declared shape there:
  a body without :class:`components.environment.Plates` has no plate area) and its resource
  ``arrays`` (a coefficient table, an ephemeris), by their declared names: ``data.body_area[s.i]``;
* ``params``: the term's named scalars: ``params.thrust``;
* returns the force [N] in the integration frame and the torque [N·m] about the CoM in body axes.

``data`` and ``params`` are records of :func:`term_record` (namedtuples named by their fields, so
a kernel may hand them on to its own ``cache=True`` helpers: numba's disk cache finds their class
in any process).

A term that declares ``attitude=False`` and ``torque=False`` lets flight keep the multirate split
(the translation's step decides, the torque-free attitude follows on its own sub-steps): it is then
called with NaN attitude and rate, so a term that reads them anyway fails its rows loudly
(``nonfinite_state``) instead of using a stale attitude.

:func:`fuse_terms` writes one ``.py`` module per distinct term set, named by a hash of the term
sources, the declarations and the engine kernels it is linked into; the module builds each term's
records. :func:`ecs.kernels.relink` then copies the pipeline's kernels with the fused function in
place of the pipeline's default (no terms). numba's disk cache stays valid across
processes because every generated function lives in a real file whose name changes with any of its
inputs.
"""

from __future__ import annotations

import collections
import hashlib
import importlib.util
import inspect
import keyword
import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numba
import numpy as np

from ._cache import cache_dir
from .errors import InputError
from .kernels import reachable_kernels, relink

__all__ = ["Term", "SampleTerm", "JointLaw", "joint_law_none", "FusedTerms", "fuse_terms", "refuse_modal", "specialise", "generated_dir", "TERM_ARGS", "RowState",
           "TermArgs", "term_record", "NO_TERMS", "row_terms_none", "terms_active_none", "terms_couple_attitude_none",
           "sample_terms_none"]

#: The arguments of every term kernel (module docstring).
TERM_ARGS = ("s", "data", "params")

#: The stage state of one row a term kernel reads (its first argument): the row ``i`` (int), the
#: stage time ``t`` [s], the CoM position ``x, y, z`` [m] and velocity ``vx, vy, vz`` [m/s] in the
#: integration frame, the attitude ``q0…q3`` body → that frame (scalar-first), the rate
#: ``wx, wy, wz`` [rad/s] relative to that frame in body axes and the ``mass`` [kg].
RowState = collections.namedtuple("RowState", ("i", "t", "x", "y", "z", "vx", "vy", "vz", "q0", "q1", "q2", "q3",
                                               "wx", "wy", "wz", "mass"))

#: The term argument every pipeline kernel takes and hands to the fused terms
#: (:meth:`FusedTerms.args`): ``columns`` (the terms' columns, then their resource arrays),
#: ``params`` (their parameters, one vector), ``sample`` (a sample term's own argument,
#: :attr:`SampleTerm.args`) and ``links`` (the link states written for it, :attr:`SampleTerm.links`;
#: ``()`` where a pipeline has no sample term: a deployment).
TermArgs = collections.namedtuple("TermArgs", ("columns", "params", "sample", "links"))

_RECORD_PREFIX = "TermRecord_"


def term_record(fields) -> type:
    """The record class (a namedtuple) with ``fields`` (identifiers not starting with ``_``), one
    per distinct field list and process, bound in this module under a name that spells its fields
    (``TermRecord_9_body_area_6_thrust``): numba's disk cache pickles a record type by that name,
    and this module rebuilds the class from the name alone in any process (:func:`__getattr__`)."""
    fields = tuple(fields)
    name = _RECORD_PREFIX + "_".join(f"{len(f)}_{f}" for f in fields)
    cls = globals().get(name)
    if cls is None:
        cls = collections.namedtuple(name, fields, module=__name__)
        cls.__doc__ = f"A term's record of {', '.join(fields) or 'nothing'} (ecs.terms.term_record)."
        globals()[name] = cls
    return cls


def __getattr__(name: str):
    """Rebuild a :func:`term_record` class from its name (numba's cache unpickles it by name)."""
    if not name.startswith(_RECORD_PREFIX):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    rest, fields = name[len(_RECORD_PREFIX):], []
    while rest:
        n, _, rest = rest.partition("_")
        if not n.isdigit():
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        fields.append(rest[: int(n)])
        rest = rest[int(n) + 1:]
    return term_record(fields)


@dataclass(frozen=True)
class Term:
    """What a DERIVATIVE system adds to every row's wrench (module docstring for the kernel's
    signature, frames and units).

    Attributes:
        name: shown in errors and in the generated module (a Python identifier).
        kernel: the numba ``njit`` row kernel.
        columns: per-row columns passed to the kernel after ``mass`` (whole arrays).
        optional_columns: ``{name: per-row shape}``, passed after ``columns``: a table without the
            column passes zeros of ``(rows, *shape)``.
        arrays: named resource arrays passed after the columns (float64 or int64 numpy arrays of
            any shape: a gravity model's coefficients, an ephemeris' Chebyshev records).
        params: named float scalars passed after the arrays, e.g. ``{"thrust": 2.0}``.
        torque: the kernel may return a non-zero torque.
        attitude: the kernel reads the attitude or the angular rate.
        gravity: the term is a gravitational field (force ``m g(x)``, plus perhaps its gradient
            torque). A pipeline that evaluates its own gravity source (probe deployment; the
            multibody solve's central field) refuses it rather than count gravity twice.
        inertial: the kernel takes the integration frame to be inertial (Earth-centred, ICRF axes,
            time = TDB seconds since the ephemeris epoch: the orbital environment). A pipeline that
            integrates in a rotating frame (probe deployment) refuses it.
        turning_refusal: ``(field, value, rule)`` when the term cannot be evaluated in a turning
            integration frame for a reason of its own (a field that turns relative to the inertial
            frame at its own rate): a pipeline integrating in a turning frame raises
            :class:`InputError` with these, ``{frame}`` in the rule naming that frame.
        source: the model the term evaluates (a gravity source), for a pipeline that must tell
            one field from another (the multibody solve's central field); ``None`` otherwise.
        modes: the modes of a mode loop the term acts in (values of its mode column, e.g.
            ``DeployPhase.CONTACT``: a hold-down thruster that fires in contact only); empty (the
            default): every mode. A pipeline without modes refuses a term that names some
            (:func:`refuse_modal`), and a mode loop one that names a mode it cannot apply terms in.
    """

    name: str
    kernel: Callable
    columns: tuple[str, ...] = ()
    params: dict[str, float] = field(default_factory=dict)
    torque: bool = False
    attitude: bool = False
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    gravity: bool = False
    inertial: bool = False
    optional_columns: dict[str, tuple] = field(default_factory=dict)
    modes: tuple[int, ...] = ()
    turning_refusal: tuple | None = None
    source: Any = field(default=None, compare=False)

    def __post_init__(self):
        if not self.name.isidentifier() or keyword.iskeyword(self.name):
            raise InputError("Term.name", self.name, "must be a Python identifier")
        if not isinstance(self.kernel, numba.core.registry.CPUDispatcher):
            raise InputError(f"Term {self.name}: kernel", self.kernel,
                             "must be a numba njit function (numba.njit(cache=True) or ecs.kernels.cpu_jit)")
        mod = self.kernel.py_func.__module__
        if mod not in sys.modules:
            raise InputError(f"Term {self.name}: module of kernel {self.kernel.py_func.__name__}", mod,
                             "must be importable (in sys.modules): numba's disk cache rebuilds the kernel's "
                             "globals from it; load scene files with tumble.load_scene")

        def name_error(what, k):
            if not str(k).isidentifier() or keyword.iskeyword(k) or str(k).startswith("_"):
                raise InputError(f"Term {self.name}: {what}", k,
                                 "must be a Python identifier not starting with '_' (a field of the kernel's record)")

        for c in self.columns:
            name_error("column", c)
        for c in self.optional_columns:
            name_error("optional column", c)
        for k, v in self.arrays.items():
            name_error("array", k)
            a = np.asarray(v)
            if a.dtype not in (np.float64, np.int64) or a.size == 0:
                raise InputError(f"Term {self.name}: array {k}", f"{a.dtype}{list(a.shape)}",
                                 "must be a non-empty float64 or int64 array")
        data = (*self.columns, *self.optional_columns, *self.arrays)
        for k in set(data):
            if data.count(k) > 1:
                raise InputError(f"Term {self.name}: data field", k,
                                 "must be declared once among the columns, optional columns and arrays "
                                 "(each is a field of the kernel's data record)")
        for k, v in self.params.items():
            name_error("parameter", k)
            if not math.isfinite(float(v)):
                raise InputError(f"Term {self.name}: parameter {k}", v, "must be a finite number")
        if not isinstance(self.modes, tuple) or not all(
                isinstance(m, (int, np.integer)) and not isinstance(m, bool) for m in self.modes):
            raise InputError(f"Term {self.name}: modes", self.modes, "must be a tuple of mode codes (ints)")
        try:
            sig = inspect.signature(self.kernel.py_func)
        except (TypeError, ValueError):  # pragma: no cover - a builtin
            return
        if len(sig.parameters) != len(TERM_ARGS):
            raise InputError(f"Term {self.name}: parameter count of kernel {self.kernel.py_func.__name__}",
                             len(sig.parameters),
                             f"must take {len(TERM_ARGS)}: {', '.join(TERM_ARGS)} (the row's RowState, the "
                             "record of its columns and arrays, the record of its parameters: ecs.terms)")

    @property
    def data_fields(self) -> tuple[str, ...]:
        """The fields of the kernel's ``data`` record, in order: columns, optional columns, arrays."""
        return (*self.columns, *self.optional_columns, *self.arrays)

    @property
    def couples_attitude(self) -> bool:
        """True when flight must step the attitude together with the translation."""
        return bool(self.torque or self.attitude)


@dataclass(frozen=True)
class SampleTerm:
    """A force on the coupled rows of one sample that no row can compute on its own — facet contact
    between the links of a sample's trees — returned by :meth:`ecs.System.sample_term`.

    A pipeline that steps a sample's rows together (:class:`systems.multibody.dynamics.MultibodyDynamics`)
    calls ``kernel`` once per sample and stage, after its row terms and before its solve, in place
    of :func:`sample_terms_none` (its kernels are copied with the swap: :func:`specialise`)::

        kernel(b, n, stage, time, Rw, fext, args)

    ``b`` the sample's first row, ``n`` its rows, ``stage`` the stage of the step (0: an accepted
    state), ``time`` [s] the stage time; ``Rw[r]`` the link rotation matrices (link axes →
    inertial); the kernel adds each row's spatial force, body axes, about the link origin, into
    ``fext[r, 6]`` (``[torque; force]``). ``args`` is the system's own argument tuple (arrays it
    keeps, the tables' columns it reads and writes). Before the call the pipeline writes the
    links' state into the term's ``links`` arrays: origin position (inertial) [m], attitude (link →
    inertial, scalar-first), body rate (link axes) [rad/s], origin velocity (inertial) [m/s], so a
    sample term never reads the solve's own work arrays.

    Attributes:
        name: shown in errors.
        kernel: the numba ``njit`` sample kernel (above).
        args: its last argument.
        links: ``(position [rows, 3], attitude [rows, 4], omega [rows, 3], velocity [rows, 3])``,
            written by the pipeline before each call (above).
    """

    name: str
    kernel: Callable
    args: tuple
    links: tuple


#: The arguments of a joint law's kernel (:class:`JointLaw`), in order.
JOINT_LAW_ARGS = ("kind", "q", "qd", "time", "p", "tau")


@dataclass(frozen=True)
class JointLaw:
    """A generalised force at the joints of articulated trees, returned by a DERIVATIVE system's
    :meth:`ecs.System.joint_law`: a joint motor, a servo, a nonlinear spring, a friction model.

    A pipeline that steps joints (``takes_joint_laws``:
    :class:`systems.multibody.dynamics.MultibodyDynamics`) calls ``kernel`` at every stage, for every
    joint that is neither fixed nor locked, after the built-in laws (joint friction, spring-damper,
    end stops) and before the articulated-body solve. Its kernels are copied with ``kernel`` in
    place of :func:`joint_law_none` (:func:`specialise`)::

        kernel(kind, q, qd, time, p, tau)

    * ``kind`` the joint's kind code (``components.multibody.REVOLUTE``, ``PRISMATIC``,
      ``SPHERICAL``, ``FREE``);
    * ``q`` the joint's 7 position slots, ``qd`` its 6 rate slots (a revolute or prismatic joint
      uses slot 0: angle [rad] or displacement [m], rate [rad/s] or [m/s]);
    * ``time`` [s] the stage time;
    * ``p`` the joint's values of ``columns``, in order (float64);
    * ``tau`` the joint's 6 generalised-force slots (N·m about, or N along, the joint axis for
      slot 0 of a 1-DOF joint): the kernel **adds** its force into them and returns nothing.

    Attributes:
        name: shown in errors (a Python identifier).
        kernel: the numba ``njit`` kernel (above).
        columns: the per-link float columns the law reads (a user component's, declared with
            :func:`ecs.column`); every link table the pipeline steps must have them.
    """

    name: str
    kernel: Callable
    columns: tuple[str, ...] = ()

    def __post_init__(self):
        if not self.name.isidentifier() or keyword.iskeyword(self.name):
            raise InputError("JointLaw.name", self.name, "must be a Python identifier")
        if not isinstance(self.kernel, numba.core.registry.CPUDispatcher):
            raise InputError(f"JointLaw {self.name}: kernel", self.kernel,
                             "must be a numba njit function (numba.njit(cache=True))")
        for c in self.columns:
            if not str(c).isidentifier():
                raise InputError(f"JointLaw {self.name}: column", c, "must be a column name (an identifier)")
        try:
            sig = inspect.signature(self.kernel.py_func)
        except (TypeError, ValueError):  # pragma: no cover - a builtin
            return
        if len(sig.parameters) != len(JOINT_LAW_ARGS):
            raise InputError(f"JointLaw {self.name}: parameter count of kernel {self.kernel.py_func.__name__}",
                             len(sig.parameters), f"must take {len(JOINT_LAW_ARGS)}: {', '.join(JOINT_LAW_ARGS)}")


def refuse_modal(terms, pipeline: str) -> None:
    """Refuse, naming it, a term restricted to modes (:attr:`Term.modes`) in ``pipeline``, which
    has none: it would act everywhere or nowhere, either silently."""
    for t in terms:
        if t is not None and t.modes:
            raise InputError(f"Term {t.name}: modes", list(t.modes),
                             f"must be empty in {pipeline}: it has no modes (a mode loop, e.g. a deployment, "
                             "applies terms per mode)")


def generated_dir() -> Path:
    """Where generated kernel modules are written: ``$TUMBLE_CACHE_DIR/generated`` (default
    ``~/.cache/tumble/generated``, else a per-user temporary directory when that is not writable;
    numba's ``__pycache__`` of them sits beside)."""
    d = cache_dir("generated")
    if d is None:
        raise InputError("TUMBLE_CACHE_DIR", os.environ.get("TUMBLE_CACHE_DIR", "~/.cache/tumble"),
                         "must be a writable directory (generated kernels are written there)")
    return d


#: Term kernels of generated modules, by module name (read once by the module at import).
_TERM_KERNELS: dict[str, tuple] = {}


def _hash_sources(h, kernels) -> None:
    """Feed ``h`` every source file the kernels reach (path and bytes) and numba's version."""
    files = sorted({inspect.getsourcefile(d.py_func) or "" for d in reachable_kernels(*kernels)})
    for f in files:
        h.update(f.encode())
        try:
            h.update(Path(f).read_bytes())
        except OSError:
            pass
    h.update(numba.__version__.encode())


def _write_generated(module: str, src: str) -> Path:
    """Write ``src`` as generated module ``module`` (atomically; unchanged files are not touched)."""
    path = generated_dir() / f"{module}.py"
    if not path.exists() or path.read_text() != src:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(src)
        os.replace(tmp, path)        # atomic: concurrent workers see a whole file or none
    return path


def _import_generated(module: str, path: Path):
    """Import generated module ``module`` from ``path`` and register it in ``sys.modules`` (before
    running it, docs/design.md §2): numba's disk cache imports a cached function's module by name."""
    spec = importlib.util.spec_from_file_location(module, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[module] = mod
    spec.loader.exec_module(mod)
    return mod


#: Specialised kernel families by generated module name (one per swap set and process).
_SPECIALISED: dict[str, dict] = {}


def specialise(roots: dict, swap: dict) -> dict:
    """Copies of the pipeline kernels ``roots`` (name → CPU dispatcher) with the callees of
    ``swap`` (general dispatcher → the one a scene needs) replaced: compile only what a scene uses.

    A general kernel dispatches at run time over every kind it serves (every terrain composition,
    every gravity source), so numba compiles all of them into every kernel that calls it. A
    pipeline that knows at bind what its scene uses swaps in the narrower kernel instead; the
    copies (:func:`ecs.kernels.relink`) live in a generated module named by a hash of the swap and
    of every source they reach, so numba's disk cache keys them apart from the general build and
    from other swaps. ``swap`` empty: ``roots`` as they are. Combine with :func:`fuse_terms` by
    passing it the specialised roots.
    """
    if not swap:
        return dict(roots)
    h = hashlib.sha256()
    names = sorted((f"{o.py_func.__module__}.{o.py_func.__qualname__}", f"{n.py_func.__module__}.{n.py_func.__qualname__}")
                   for o, n in swap.items())
    h.update(repr((names, sorted(roots))).encode())
    _hash_sources(h, [*roots.values(), *swap.values()])
    module = "tumble_spec_" + h.hexdigest()[:20]
    kernels = _SPECIALISED.get(module)
    if kernels is None:
        lines = ['"""Generated by ecs.terms.specialise: the home file of kernel copies with these callees swapped.',
                 "Do not edit: the file name hashes its inputs, a change writes a new file.", ""]
        lines += [f"{o} -> {n}" for o, n in names]
        path = _write_generated(module, "\n".join(lines) + '\n"""\n')
        _import_generated(module, path)     # the copies' module: numba's cache imports it by name
        kernels = relink(roots, swap, str(path))
        _SPECIALISED[module] = kernels
    return dict(kernels)


def _source_of(fn) -> str:
    """The whole source file a function comes from (its callees there included), or its code."""
    try:
        return Path(inspect.getsourcefile(fn)).read_text()
    except (TypeError, OSError):
        return repr(fn.__code__.co_code)


@dataclass
class FusedTerms:
    """One term set fused into a generated module, and the pipeline kernels linked against it.

    Attributes:
        terms: the terms, in order.
        kernels: the pipeline's kernels (name → dispatcher) calling the fused function.
        columns: the distinct columns passed, in the order of :meth:`args`.
        params: the terms' parameter values, in order (an argument: new values compile nothing).
        couples_attitude: any term reads the attitude or applies a torque.
        module: the generated module's name.
    """

    terms: tuple[Term, ...]
    kernels: dict
    columns: tuple[str, ...]
    params: np.ndarray
    couples_attitude: bool
    module: str

    def args(self, table, xp=np) -> "TermArgs":
        """The :data:`TermArgs` the kernels take as their term argument, for ``table``: the columns,
        then every term's resource arrays (copied to ``xp``'s device), in one tuple; the
        parameters; a pipeline's sample term's argument and link states (:class:`SampleTerm`;
        stand-ins here, which :func:`sample_terms_none` ignores)."""
        arrays = tuple(_readonly(xp.asarray(a)) for t in self.terms for a in t.arrays.values())
        shapes = {c: shape for t in self.terms for c, shape in t.optional_columns.items()}
        cols = tuple(table[c] if c in table else xp.zeros((table.row_count, *shapes[c])) for c in self.columns) + arrays
        return TermArgs(cols or (np.zeros(1),), self.params, NO_SAMPLE_TERM, NO_LINK_STATES)


def _readonly(a):
    """A read-only view of a numpy array (others as they are): numba types read-only arrays apart,
    so every resource array reaches the kernels read-only, and one term set compiles once however
    its resources were built."""
    if isinstance(a, np.ndarray) and a.flags.writeable:
        a = a.view()
        a.flags.writeable = False
    return a


def _fused_source(terms: tuple[Term, ...], module: str, columns: tuple[str, ...]) -> str:
    names = ", ".join(t.name for t in terms)
    lines = [f'"""Generated by ecs.terms: the row terms {names} fused into one function. Do not edit:',
             'the file name hashes its inputs, a change writes a new file."""', "",
             "import math", "", "from numba import njit", "", "from ecs.terms import _TERM_KERNELS, term_record", "",
             f"_kernels = _TERM_KERNELS[{module!r}]"]
    for k, t in enumerate(terms):
        lines += [f"term_{k}_{t.name} = _kernels[{k}]",
                  f"Data_{k} = term_record({t.data_fields!r})",
                  f"Params_{k} = term_record({tuple(t.params)!r})"]
    lines += ["", "", "@njit(cache=True)", "def row_terms(s, columns, params):",
              '    """Sum of the terms\' force [N] (integration frame) and torque [N·m] (body axes) at the row\'s',
              '    stage state s (ecs.terms.RowState)."""']
    for j, c in enumerate(columns):
        lines.append(f"    col_{c} = columns[{j}]")
    j = len(columns)
    for k, t in enumerate(terms):
        for name in t.arrays:
            lines.append(f"    a{k}_{name} = columns[{j}]")
            j += 1
    p = 0
    for k, t in enumerate(terms):
        for name in t.params:
            lines.append(f"    p{k}_{name} = params[{p}]")
            p += 1
    lines.append("    fx = fy = fz = tx = ty = tz = 0.0")
    for k, t in enumerate(terms):
        data = [f"col_{c}" for c in (*t.columns, *t.optional_columns)] + [f"a{k}_{n}" for n in t.arrays]
        pars = [f"p{k}_{n}" for n in t.params]
        lines += [f"    r = term_{k}_{t.name}(s, Data_{k}({', '.join(data)}), Params_{k}({', '.join(pars)}))",
                  "    fx += r[0]", "    fy += r[1]", "    fz += r[2]"]
        if t.torque:
            lines += ["    tx += r[3]", "    ty += r[4]", "    tz += r[5]"]
    lines += ["    return fx, fy, fz, tx, ty, tz", "", "",
              "@njit(cache=True, inline=\"always\")", "def terms_active():",
              '    """The world has row terms."""', "    return True", "", "",
              "@njit(cache=True, inline=\"always\")", "def terms_couple_attitude():",
              '    """Flight steps the attitude with the translation (a term reads it or applies a torque)."""',
              f"    return {any(t.couples_attitude for t in terms)}", ""]
    return "\n".join(lines)


#: Linked kernels by generated module name (one link per term set and process).
_LINKED: dict[str, dict] = {}


def fuse_terms(terms, roots: dict, defaults: dict | None = None) -> FusedTerms:
    """Generate the fused term function of ``terms`` and link ``roots`` against it.

    Args:
        terms: the :class:`Term` list, in system order.
        roots: the pipeline's kernels (name → CPU dispatcher) to copy.
        defaults: ``{"row_terms": d, "terms_couple_attitude": d, "terms_active": d}``: the
            no-term dispatchers the generated ones replace (:data:`NO_TERMS`, default).
    """
    defaults = NO_TERMS if defaults is None else defaults
    terms = tuple(terms)
    seen: set[str] = set()
    for t in terms:
        if t.name in seen:
            raise InputError("Term.name", t.name, "must be unique among a world's terms")
        seen.add(t.name)
    columns = tuple(dict.fromkeys(c for t in terms for c in (*t.columns, *t.optional_columns)))
    h = hashlib.sha256()
    for t in terms:
        # the kernel's module by name: numba's cache of the fused function imports it by that name, so
        # a scene file loaded under another module name must link a module of its own
        h.update(repr((t.name, t.kernel.py_func.__module__, t.kernel.py_func.__qualname__, t.columns, tuple(t.params), t.torque,
                       t.attitude, tuple((k, np.asarray(a).dtype.str, np.asarray(a).ndim) for k, a in t.arrays.items()),
                       tuple(t.optional_columns.items()))).encode())
        h.update(_source_of(t.kernel.py_func).encode())
    h.update(repr(sorted(roots)).encode())     # a subset of a pipeline's kernels links apart
    _hash_sources(h, roots.values())
    module = "tumble_terms_" + h.hexdigest()[:20]
    params = np.array([float(v) for t in terms for v in t.params.values()] or [0.0], dtype=np.float64)
    linked = _LINKED.get(module)
    if linked is not None:      # the same term set again (other parameter values are arguments)
        return FusedTerms(terms, linked, columns, params, any(t.couples_attitude for t in terms), module)
    path = _write_generated(module, _fused_source(terms, module, columns))
    _TERM_KERNELS[module] = tuple(t.kernel for t in terms)
    mod = _import_generated(module, path)
    swap = {defaults["row_terms"]: mod.row_terms, defaults["terms_couple_attitude"]: mod.terms_couple_attitude,
            defaults["terms_active"]: mod.terms_active}
    kernels = relink(roots, swap, str(path))
    _LINKED[module] = kernels
    return FusedTerms(terms, kernels, columns, params, any(t.couples_attitude for t in terms), module)


# What a pipeline's kernels call when the world has no terms; :func:`fuse_terms` links copies of
# them against the generated functions instead (``defaults`` = :data:`NO_TERMS`).
@numba.njit(cache=True, inline="always")
def row_terms_none(s, columns, params):
    """No terms: zero force and torque (``s`` the row's :data:`RowState`)."""
    return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0


@numba.njit(cache=True, inline="always")
def sample_terms_none(b, n, stage, time, Rw, fext, args):
    """No sample term: the coupled rows' wrenches stay as the row terms left them."""
    return


@numba.njit(cache=True, inline="always")
def joint_law_none(kind, q, qd, time, p, tau):
    """No joint law beyond the built-in ones (:class:`JointLaw`): the joint's forces stay as they are."""
    return


@numba.njit(cache=True, inline="always")
def terms_couple_attitude_none():
    """No terms: flight keeps the multirate attitude split."""
    return False


@numba.njit(cache=True, inline="always")
def terms_active_none():
    """No terms: the right-hand sides skip the term call (a constant, folded where it is inlined)."""
    return False


#: The no-term defaults every pipeline's kernels call, by the name :func:`fuse_terms` replaces.
NO_TERMS = {"row_terms": row_terms_none, "terms_active": terms_active_none,
            "terms_couple_attitude": terms_couple_attitude_none}


#: The sample-term slot of a term argument when the world has no sample term.
NO_SAMPLE_TERM = (np.zeros(1),)

#: :attr:`SampleTerm.links` when the world has no sample term (empty: nothing is written).
NO_LINK_STATES = (np.zeros((0, 3)), np.zeros((0, 4)), np.zeros((0, 3)), np.zeros((0, 3)))


def no_terms_args() -> "TermArgs":
    """The term argument of a pipeline without terms (the default kernels ignore it)."""
    return TermArgs((np.zeros(1),), np.zeros(1), NO_SAMPLE_TERM, NO_LINK_STATES)
