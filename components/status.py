"""Row and sample status codes (closed category, stored as int8 in ``row_status`` and ``final/status``)."""

from __future__ import annotations

import enum


class Status(enum.IntEnum):
    """What became of a row (one entity in one sample) or of a whole sample.

    A sample's status is the largest code over its rows, so FAILED wins over everything.
    """

    RUNNING = 0   #: still being integrated
    DONE = 1      #: reached the end time or a terminating condition
    SETTLED = 2   #: came to rest (deployment scenes)
    ESCAPED = 3   #: left on a trajectory that cannot return (deployment scenes)
    TIMED_OUT = 4 #: hit the simulated-time cap before settling (deployment scenes)
    FAILED = 9    #: non-finite state or solver failure; isolated, never stops the batch


#: Codes written to ``final/status`` attributes so a store documents itself.
STATUS_LEGEND = {s.name.lower(): int(s) for s in Status}
