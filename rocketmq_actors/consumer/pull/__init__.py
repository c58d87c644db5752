"""The pull consumer (Java's lite pull, aiokafka's shape): ``getone`` / ``getmany``, ``assign``,
``seek``, commits."""

from .consumer import (
    MessageSelector,
    OffsetReset,
    PullConsumer,
    PullResult,
    PullStatus,
    RebalanceListener,
    Subscription,
    max_offset,
    min_offset,
    offset_for_time,
)

__all__ = [
    "MessageSelector",
    "OffsetReset",
    "PullConsumer",
    "PullResult",
    "PullStatus",
    "RebalanceListener",
    "Subscription",
    "max_offset",
    "min_offset",
    "offset_for_time",
]
