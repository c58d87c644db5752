"""The pull consumer (Java's lite pull, aiokafka's shape): topics or a pattern, ``subscribe`` /
``unsubscribe`` / ``assign``, ``getone`` / ``getmany``, ``seek``, commits; its options
(:class:`PullOptions`)."""

from rocketmq_actors.consumer.core.brokercalls import (
    PullResult,
    PullStatus,
    max_offset,
    min_offset,
    offset_for_time,
)
from rocketmq_actors.consumer.core.subscriptions import MessageSelector, Subscription

from .consumer import PullConsumer
from .options import OffsetReset, PullOptions
from .subscription import RebalanceListener

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
