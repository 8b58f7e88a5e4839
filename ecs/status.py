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


class Reason(enum.IntEnum):
    """Why a row (or a sample) ended FAILED, stored as int8 in ``row_reason`` and
    ``final/failure_code``; 0 for rows that did not fail.

    The kernel that sets a row FAILED writes the reason next to it. A row some system set FAILED
    without one (a user kernel, say) reads UNSPECIFIED. A sample's reason is that of its first
    failed row; RAISED marks a sample whose run raised a Python exception (its message is kept in
    ``final/failure_message``).
    """

    NONE = 0                #: not failed
    UNSPECIFIED = 1         #: set FAILED by a system that gave no reason
    NONFINITE_STATE = 2     #: the state became NaN or infinite
    STEP_UNDERFLOW = 3      #: the adaptive step fell below its minimum (round-off of the time)
    STEP_LIMIT = 4          #: the integrator took more steps in one frame than allowed
    IMPACT_STEP_LIMIT = 5   #: a Stronge impact's slip integration exceeded its step cap
    PASS_GUARD = 6          #: the deployment loop's pass guard: the row made no progress to the frame end
    CONTACT_OVERFLOW = 7    #: more facet contacts than the contact buffer holds
    RAISED = 8              #: the sample's run raised a Python exception


#: One-line explanation of each reason (``final/failure_code`` attributes, ``inspect``, ``run``).
REASON_MESSAGES = {
    Reason.NONE: "",
    Reason.UNSPECIFIED: "a system set the row FAILED without giving a reason",
    Reason.NONFINITE_STATE: "the state became NaN or infinite",
    Reason.STEP_UNDERFLOW: "the adaptive step size fell below its minimum",
    Reason.STEP_LIMIT: "more integrator steps in one frame than max_steps allows",
    Reason.IMPACT_STEP_LIMIT: "a Stronge impact's slip integration exceeded its step cap",
    Reason.PASS_GUARD: "the deployment loop's pass guard tripped: the row made no progress to the frame end",
    Reason.CONTACT_OVERFLOW: "more facet contacts than the contact buffer (max_contacts) holds",
    Reason.RAISED: "the sample's run raised an exception",
}
