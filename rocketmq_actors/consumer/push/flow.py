"""A push consumer's flow control: how much one owned queue may cache before its actor stops
pulling (Java's ``pullThresholdForQueue`` / ``pullThresholdSizeForQueue``, the per-topic
thresholds shared out over the topic's owned queues, and ``consumeConcurrentlyMaxSpan``)."""

from __future__ import annotations

from collections.abc import Iterable

from rocketmq_actors.consumer.core.process_queue import ProcessQueue
from rocketmq_actors.consumer.push.options import PushOptions
from rocketmq_actors.protocol.bodies import MessageQueue

__all__ = ["cache_room", "over_limits"]


def limits(
    options: PushOptions, owned: Iterable[MessageQueue], pq: ProcessQueue
) -> tuple[int, int]:
    """The messages and bytes ``pq`` may cache (``owned``: the consumer's queues)."""
    o = options
    max_count, max_bytes = o.max_cached_messages, o.max_cached_bytes
    per_count, per_bytes = o.max_cached_messages_per_topic, o.max_cached_bytes_per_topic
    if per_count is not None or per_bytes is not None:  # Java: topic limit / owned queues
        share = max(1, sum(1 for q in owned if q.topic == pq.queue.topic))
        if per_count is not None:
            max_count = min(max_count, max(1, per_count // share))
        if per_bytes is not None:
            max_bytes = min(max_bytes, max(1, per_bytes // share))
    return max_count, max_bytes


def over_limits(options: PushOptions, owned: Iterable[MessageQueue], pq: ProcessQueue) -> bool:
    """Whether ``pq`` may pull no more for now."""
    max_count, max_bytes = limits(options, owned, pq)
    return (
        pq.count >= max_count
        or pq.cached_bytes >= max_bytes
        or (not options.orderly and pq.span > options.max_span)
    )


def cache_room(options: PushOptions, owned: Iterable[MessageQueue], pq: ProcessQueue) -> int:
    """The bytes ``pq``'s cache has room for: what the bodies a pull inflates may take."""
    return limits(options, owned, pq)[1] - pq.cached_bytes
