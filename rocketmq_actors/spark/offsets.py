"""Offsets of the ``rocketmq`` source, planned on the driver.

A source offset is ``{"topic": {"broker-a:0": 42, ...}}``: for every queue, the next offset to
read. Spark stores these in the query's checkpoint (the offset log), so a restarted query
resumes at the last planned batch, whatever the consumer group says: the source commits
nothing to the broker, as Spark's Kafka source commits nothing to Kafka.

The planning steps are pure functions (:func:`rate_limit`, :func:`split`, :func:`ranges`) tested
without a broker; :class:`OffsetPlanner` asks the cluster for queues and offsets.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Iterable, Mapping

import attrs
from pyspark.sql.datasource import InputPartition

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.consumer.core.brokercalls import first_offset_at, max_offset, min_offset
from rocketmq_actors.consumer.core.subscriptions import matching_topics
from rocketmq_actors.errors import (
    BrokerError,
    ConnectError,
    ConnectionLost,
    NameServerUnavailable,
    RequestTimeout,
    RocketMQError,
    TopicNotFound,
)
from rocketmq_actors.logs import get_logger
from rocketmq_actors.names import wrap
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.codes import ResponseCode

from .source_options import EARLIEST, LATEST, QueueSpec, SourceOptions, queue_key

__all__ = [
    "UNCAPPED",
    "DataLost",
    "OffsetPlanner",
    "Offsets",
    "PackedRanges",
    "QueueRange",
    "pack",
    "rate_limit",
    "split",
]

log = get_logger("rocketmq_actors.spark")

#: ``{"topic": {"broker:queue": next offset}}`` (wire topic names)
Offsets = dict[str, dict[str, int]]
#: an AvailableNow target for a queue whose broker did not answer when the run began
UNCAPPED = 1 << 62


def _unreachable(exc: RocketMQError) -> bool:
    """Did the request fail because its broker cannot be reached (no connection, no answer,
    no address in the route), rather than for its queue or topic?"""
    if isinstance(exc, BrokerError):
        return exc.code == ResponseCode.SERVICE_NOT_AVAILABLE
    return isinstance(exc, ConnectError | ConnectionLost | RequestTimeout | NameServerUnavailable)


#: a request for one queue's offset (:func:`min_offset`, :func:`max_offset`)
OffsetCall = Callable[[ClientInstance, MessageQueue], Awaitable[int]]


class DataLost(RocketMQError):
    """Offsets the query had still to read were deleted by the broker's retention (the
    ``failOnDataLoss`` option decides between this error and a warning)."""


@attrs.frozen
class QueueRange(InputPartition):
    """One Spark partition: offsets ``[start, end)`` of one queue."""

    topic: str
    broker_name: str
    queue_id: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


def _queue(topic: str, key: str) -> MessageQueue:
    broker, _, queue = key.rpartition(":")
    return MessageQueue(topic, broker, int(queue))


def flat(offsets: Mapping[str, Mapping[str, int]]) -> dict[MessageQueue, int]:
    return {_queue(t, k): v for t, queues in offsets.items() for k, v in queues.items()}


def nest(offsets: Mapping[MessageQueue, int]) -> Offsets:
    nested: Offsets = {}
    for queue in sorted(offsets, key=lambda q: (q.topic, q.broker_name, q.queue_id)):
        key = queue_key(queue.broker_name, queue.queue_id)
        nested.setdefault(queue.topic, {})[key] = offsets[queue]
    return nested


def rate_limit(
    start: Mapping[MessageQueue, int], latest: Mapping[MessageQueue, int], limit: int
) -> dict[MessageQueue, int]:
    """At most ``limit`` offsets past ``start`` in all, shared among the queues in proportion to
    their backlog (as Kafka's ``maxOffsetsPerTrigger``); the rounding remainder goes to the
    largest backlogs, so a batch always moves when there is a backlog."""
    backlog = {q: max(latest[q] - start.get(q, latest[q]), 0) for q in latest}
    total = sum(backlog.values())
    if total <= limit:
        return dict(latest)
    shares = {q: math.floor(limit * b / total) for q, b in backlog.items()}
    left = limit - sum(shares.values())
    for queue in sorted(backlog, key=lambda q: (-(backlog[q] - shares[q]), str(q))):
        if left == 0:
            break
        if shares[queue] < backlog[queue]:
            shares[queue] += 1
            left -= 1
    return {q: start.get(q, latest[q]) + shares[q] for q in latest}


def split(ranges: list[QueueRange], min_partitions: int | None) -> list[QueueRange]:
    """``ranges`` cut into at least ``min_partitions`` pieces (when there are that many offsets),
    each range into pieces in proportion to its size, as Kafka's ``minPartitions``."""
    if not min_partitions or len(ranges) >= min_partitions:
        return ranges
    total = sum(r.size for r in ranges)
    pieces: list[QueueRange] = []
    for r in ranges:
        parts = min(max(1, math.ceil(min_partitions * r.size / total)), r.size)
        step, extra = divmod(r.size, parts)
        begin = r.start
        for i in range(parts):
            end = begin + step + (1 if i < extra else 0)
            pieces.append(attrs.evolve(r, start=begin, end=end))
            begin = end
    return pieces


@attrs.frozen
class PackedRanges(InputPartition):
    """One Spark partition of several small queue ranges, read one after another."""

    ranges: tuple[QueueRange, ...]

    @property
    def size(self) -> int:
        return sum(r.size for r in self.ranges)


def pack(
    ranges: list[QueueRange], min_offsets: int, cores: int | None
) -> list[QueueRange | PackedRanges]:
    """``ranges`` as Spark partitions, small ones sharing: a PySpark Python data source task
    costs tens of milliseconds before its first row (benchmarks/spark.py, ``spark_task_overhead``),
    so ranges of fewer than ``min_offsets`` offsets are read in fewer tasks, as Spark packs
    small files. A range that large is a partition of its own. The small ones are shared out,
    largest first, each to the partition holding the fewest offsets so far, among as many
    partitions as their offsets fill to ``min_offsets``, rounded up to a multiple of
    ``cores`` (the session's default parallelism: every core gets as many; a cluster of many
    cores keeps its tasks), at most one per range. No packing when ``min_offsets`` is 0 or
    ``cores`` is not known."""
    if min_offsets <= 0 or not cores:
        return list(ranges)
    alone: list[QueueRange | PackedRanges] = [r for r in ranges if r.size >= min_offsets]
    small = sorted((r for r in ranges if r.size < min_offsets), key=lambda r: (-r.size, _at(r)))
    wanted = math.ceil(sum(r.size for r in small) / min_offsets)
    count = min(math.ceil(wanted / cores) * cores, len(small))  # (0 without small ranges)
    bins: list[list[QueueRange]] = [[] for _ in range(count)]
    held = [0] * count
    for r in small:
        fewest = held.index(min(held))  # (the first such: deterministic)
        bins[fewest].append(r)
        held[fewest] += r.size
    alone += (b[0] if len(b) == 1 else PackedRanges(tuple(b)) for b in bins)
    # (in queue order, whatever the order of the plan)
    return sorted(alone, key=lambda p: _at(p if isinstance(p, QueueRange) else p.ranges[0]))


def _at(r: QueueRange) -> tuple[str, str, int, int]:
    return (r.topic, r.broker_name, r.queue_id, r.start)


def ranges(start: Mapping[MessageQueue, int], end: Mapping[MessageQueue, int]) -> list[QueueRange]:
    return [
        QueueRange(q.topic, q.broker_name, q.queue_id, start[q], end[q])
        for q in sorted(end, key=lambda q: (q.topic, q.broker_name, q.queue_id))
        if q in start and end[q] > start[q]
    ]


class OffsetPlanner:
    """Asks the cluster for the source's queues and their offsets (driver side)."""

    def __init__(self, instance: ClientInstance, options: SourceOptions) -> None:
        self.instance = instance
        self.options = options
        self._seen: dict[MessageQueue, int] | None = None  # what the last next_end found
        self._first: dict[MessageQueue, int] = {}  # new queues' first offsets, as next_end saw

    async def reported_latest(self) -> dict[MessageQueue, int]:
        """Every queue's latest offset for Spark's progress report: what the trigger's
        next_end found (Spark calls reportLatestOffset right after latestOffset), else
        asked now."""
        seen, self._seen = self._seen, None
        return seen if seen is not None else await self.answered(await self.queues(), max_offset)

    def _wire(self, topic: str) -> str:
        return wrap(self.options.namespace, topic)

    async def topics(self) -> list[str]:
        """The wire names of the topics read: as given, or the pattern's current matches."""
        pattern = self.options.pattern
        if pattern is None:
            return [self._wire(t) for t in self.options.topics]
        names = await self.instance.namesrv.topic_list()
        return matching_topics(names, pattern, self.options.namespace)

    async def queues(self) -> list[MessageQueue]:
        """Every readable queue of the topics, from a fresh route (new queues and brokers);
        with ``assign``, those it names."""
        queues = await self.route_queues()
        assigned = self.options.assigned
        if assigned is None:
            return queues
        wire = {self._wire(topic): keys for topic, keys in assigned.items()}
        return [q for q in queues if queue_key(q.broker_name, q.queue_id) in wire[q.topic]]

    async def route_queues(self) -> list[MessageQueue]:
        queues: list[MessageQueue] = []
        for topic in await self.topics():
            try:
                route = await self.instance.routes.refresh(topic)
            except TopicNotFound:
                if self.options.pattern is not None:
                    continue  # deleted since it was listed
                raise
            queues.extend(route.subscribe_queues)
        return queues

    async def answered(
        self, queues: Iterable[MessageQueue], ask: OffsetCall
    ) -> dict[MessageQueue, int]:
        """``ask`` of each queue whose broker answers (``spark.offsets_unavailable`` for the
        others). A broker that cannot be reached for one queue (no connection, no answer,
        gone from the route) is not asked about its others in this call: one broker down, or
        stopped, costs one failed request, not one per queue."""
        found: dict[MessageQueue, int] = {}
        down: set[str] = set()
        for queue in queues:
            if queue.broker_name in down:
                continue
            try:
                found[queue] = await ask(self.instance, queue)
            except RocketMQError as exc:
                if _unreachable(exc):  # (else only this queue is left out: its topic's error)
                    down.add(queue.broker_name)
                log.warning("spark.offsets_unavailable", topic=queue.topic,
                            broker=queue.broker_name, error=repr(exc))  # fmt: skip
        return found

    async def available(
        self, queues: Iterable[MessageQueue], fallback: Mapping[MessageQueue, int]
    ) -> dict[MessageQueue, int]:
        """Each queue's latest offset. A queue whose broker does not answer keeps its
        ``fallback`` offset for this trigger, or is left out when it has none, so that one
        broker down does not stop a query reading the others."""
        queues = list(queues)
        found = await self.answered(queues, max_offset)
        return {q: found[q] if q in found else fallback[q]
                for q in queues if q in found or q in fallback}  # fmt: skip

    async def next_end(
        self,
        begin: Mapping[MessageQueue, int],
        target: Mapping[MessageQueue, int] | None,
        max_rows: int | None,
    ) -> dict[MessageQueue, int]:
        """A streaming query's next end offsets from ``begin``: every queue's latest, capped
        at ``target`` (Trigger.AvailableNow) and to ``max_rows`` in all (a read limit). A
        queue gone from the route keeps its offset; a new one counts from its first stored
        offset; a queue whose broker now has fewer offsets than were read (recreated,
        replaced) is :class:`DataLost`, or goes on from its first stored offset."""
        latest = await self.available(await self.queues(), begin)
        first = {**begin, **await self.answered((q for q in latest if q not in begin), min_offset)}
        latest = {q: v for q, v in latest.items() if q in first}  # (a new queue's broker died)
        self._seen = dict(latest)
        self._first.update((q, first[q]) for q in latest if q not in begin)
        reset: dict[MessageQueue, int] = {}
        for queue, offset in latest.items():
            if offset < first[queue]:
                where = f"{queue.topic} {queue_key(queue.broker_name, queue.queue_id)}"
                what = f"{where}: the broker's offsets went back from {first[queue]} to {offset}"
                if self.options.fail_on_data_loss:
                    raise DataLost(what + " (the queue was recreated or replaced)")
                log.warning("spark.offsets_reset", topic=queue.topic, broker=queue.broker_name,
                            queue_id=queue.queue_id, read=first[queue], latest=offset)  # fmt: skip
                reset[queue] = await min_offset(self.instance, queue)
        if target is not None:  # nothing stored after AvailableNow began
            latest = {q: min(v, target.get(q, first[q])) for q, v in latest.items()}
        if max_rows is not None:
            # offsets retention deleted do not count against the limit
            moved = (q for q in latest if q not in reset and latest[q] > first[q])
            stored = await self.answered(moved, min_offset)  # (a broker down: counted as read)
            counted = {q: max(first[q], stored.get(q, first[q])) for q in latest}
            latest = rate_limit(counted, latest, max_rows)
        return {**begin, **latest, **reset}

    async def _resolve(self, queue: MessageQueue, value: int) -> int:
        if value == EARLIEST:
            return await min_offset(self.instance, queue)
        if value == LATEST:
            return await max_offset(self.instance, queue)
        return value

    async def starting(self, queues: list[MessageQueue]) -> dict[MessageQueue, int]:
        """Where each queue starts, by the ``starting*`` options."""
        start = self.options.start
        if start.kind in ("earliest", "latest"):
            mode = EARLIEST if start.kind == "earliest" else LATEST
            return {q: await self._resolve(q, mode) for q in queues}
        if start.kind == "timestamp":
            return {q: await self.at_or_after(q, start.timestamp) for q in queues}
        named = self._named(start.offsets)
        default = LATEST if self.options.streaming else EARLIEST  # queues the JSON leaves out
        result = {}
        for q in queues:
            value = named.get(q)
            if value is None:
                result[q] = await self._resolve(q, default)
            elif start.kind == "timestamps":
                result[q] = await self.at_or_after(q, value)
            else:
                result[q] = await self._resolve(q, value)
        return result

    async def at_or_after(self, queue: MessageQueue, timestamp: int) -> int:
        group = wrap(self.options.namespace, self.options.group)  # as the executors name it
        return await first_offset_at(self.instance, group, queue, timestamp)

    def _named(self, spec: QueueSpec) -> dict[MessageQueue, int]:
        return {
            _queue(self._wire(t), k): v for t, queues in spec.items() for k, v in queues.items()
        }

    async def ending(self, queues: list[MessageQueue]) -> dict[MessageQueue, int]:
        """Batch reads: where each queue ends (exclusive), by ``endingOffsets``, or before its
        first message stored at or after ``endingTimestamp`` / ``endingOffsetsByTimestamp``
        (queues that JSON leaves out end at the latest)."""
        end = self.options.end
        if end.kind == "timestamp":
            return {q: await self.at_or_after(q, end.timestamp) for q in queues}
        named = self._named(end.offsets)
        if end.kind == "timestamps":
            return {
                q: await (self.at_or_after(q, named[q]) if q in named else
                          self._resolve(q, LATEST))
                for q in queues
            }  # fmt: skip
        return {q: await self._resolve(q, named.get(q, LATEST)) for q in queues}

    async def check_loss(self, start: dict[MessageQueue, int]) -> dict[MessageQueue, int]:
        """``start`` with every offset the broker no longer has moved up to its first stored
        one; :class:`DataLost` instead when ``failOnDataLoss`` is set. A queue whose broker
        does not answer is left as it is: its executor's pulls wait for the broker and find
        a loss themselves (:mod:`.pulling`)."""
        checked = dict(start)
        for queue, low in (await self.answered(start, min_offset)).items():
            if start[queue] < low:
                lost(queue, start[queue], low, fail=self.options.fail_on_data_loss)
                checked[queue] = low
        return checked

    async def first_of_new(self, queues: Iterable[MessageQueue]) -> dict[MessageQueue, int]:
        """Where queues new in a planned batch start: their first stored offset, or, when
        their broker does not answer, what the trigger that found them saw, else 0 (their
        first offset ever: the executor's pulls report what retention deleted)."""
        queues = list(queues)
        found = await self.answered(queues, min_offset)
        return {q: found.get(q, self._first.get(q, 0)) for q in queues}


def lost(queue: MessageQueue, first: int, available: int, *, fail: bool) -> None:
    """Offsets ``[first, available)`` of ``queue`` are gone: raise or warn."""
    where = f"{queue.topic} {queue_key(queue.broker_name, queue.queue_id)}"
    what = f"offsets {first}-{available - 1} of {where} were deleted before the query read them"
    if fail:
        raise DataLost(what + " (set failOnDataLoss=false to go on from the first stored offset)")
    log.warning("spark.data_lost", topic=queue.topic, broker=queue.broker_name,
                queue_id=queue.queue_id, first=first, available=available)  # fmt: skip
