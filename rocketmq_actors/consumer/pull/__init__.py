"""The pull consumer (Java's lite pull, aiokafka's shape): topics or a pattern, ``subscribe`` /
``unsubscribe`` / ``assign``, ``getone`` / ``getmany``, ``seek``, commits; its options
(:class:`PullOptions`)."""

from .consumer import (
    MessageSelector,
    OffsetReset,
    PullConsumer,
    PullOptions,
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
    "PullOptions",
    "PullResult",
    "PullStatus",
    "RebalanceListener",
    "Subscription",
    "max_offset",
    "min_offset",
    "offset_for_time",
]
