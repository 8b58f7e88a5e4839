"""Shared test set-up: the repository root on sys.path (tests also run from a source tree)."""

import os
import pathlib
import sys

# every prepared kernel launch checks its argument types at every call (ecs.kernels.PreparedRows)
os.environ.setdefault("TUMBLE_CHECK_LAUNCHES", "1")

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
