"""tumble's engine: world, components, tables, systems and phases, kernels, output, batches, CLI."""

from . import _numba_speed
from ._cache import use_versioned_numba_cache

_numba_speed.apply()          # numba's compiler without six measured overheads (docs/design.md §8.27, §8.31)
use_versioned_numba_cache()   # before any kernel is defined: numba's cache keyed by tumble's sources

from .component import ColumnSpec, RowLayout, column, column_spec, component, record, row_layout
from .errors import BackendError, InputError, ScheduleError, TumbleError
from .scene import Dispersion, Scene
from .system import Phase, System
from .table import Table
from .world import Frame, RunResult, World

__all__ = ["BackendError", "ColumnSpec", "Dispersion", "Frame", "InputError", "Phase", "RowLayout", "RunResult",
           "Scene", "ScheduleError", "System", "Table", "TumbleError", "World", "column", "column_spec", "component",
           "record", "row_layout"]

try:  # the installed distribution's version
    from importlib.metadata import version as _v

    __version__ = _v("tumble")
except Exception:  # pragma: no cover - running from a source tree
    __version__ = "0.1.0"
