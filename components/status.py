"""Row and sample status codes and failure reasons: defined in the bottom layer (:mod:`ecs.status`,
the engine writes them) and re-exported here, where components and systems have always read them."""

from ecs.status import REASON_MESSAGES, STATUS_LEGEND, Reason, Status

__all__ = ["REASON_MESSAGES", "STATUS_LEGEND", "Reason", "Status"]
