"""PullConsumer: lite pull, aiokafka-style - you ask for records, the consumer fetches them.

    async with PullConsumer(group="reports", topics={"orders": "paid || refunded"},
                            namesrv="127.0.0.1:9876") as consumer:
        async for message in consumer:                  # or getmany(timeout=1.0)
            ...

Topics given to the constructor (a list of names, or topic -> tag expression or
:class:`MessageSelector`), or a ``pattern`` over topic names, are consumed as a member of the
group from the start: their queues are shared with the group's other members and rebalanced
every ``rebalance_interval`` and when the broker says the group changed (a
:class:`RebalanceListener` hears about it). ``subscribe()`` replaces that subscription, before
or after start; ``unsubscribe()`` drops it; ``assign()`` takes exactly the queues given instead
(topics, a pattern and an assignment exclude each other, as in aiokafka). A pattern is matched
against the NameServer's topic list at start and before every rebalance round, so a topic
created later is consumed once it appears.

One fetcher per queue long-polls the broker into a buffer of at most ``max_buffered`` records;
``getmany``/``getone``/``async for`` return buffered records and advance the queue's
*position*. With ``auto_commit`` the positions are committed every ``auto_commit_interval``,
before queues are revoked, and on close - so a record counts as consumed once a later
``getmany`` was called (at-least-once if you process records before asking for more).
``commit()`` commits now and waits for the brokers. ``seek``, ``seek_to_beginning``,
``seek_to_end``, ``offsets_for_times``, ``pause`` and ``resume`` work on assigned queues, and
``pull`` reads any queue at any offset, outside the assignment.

With a ``value_deserializer`` each record's ``value`` is what it made of the body (the body
itself without one). A body it rejects (or a record that could not be decoded) makes
``getmany``/``getone``/``async for`` raise
:class:`~rocketmq_actors.consumer.message.RecordDeserializationError`, as aiokafka raises the
deserializer's error from ``getmany``. As Kafka's ``poll``, the records before it are
returned first; the call that would start with it raises, its queue's position stays on it
(no record is lost, the other queues' records stay buffered), and the same error comes again
until you ``seek(error.queue, error.offset + 1)`` past it. Records are settled by offsets here:
``message.ack()``/``nack()`` raise
:class:`~rocketmq_actors.consumer.settlement.SettlementNotSupported`.

Tag expressions are filtered by the broker on tag hash codes and again here on the exact tag, as
hash codes can collide; SQL92 expressions are evaluated by the broker.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Generic, cast

from rocketmq_actors.cluster.client import Client
from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.consumer.core.brokercalls import (
    PullResult,
    first_offset_at,
    max_offset,
    min_offset,
)
from rocketmq_actors.consumer.core.message import ReceivedMessage, T
from rocketmq_actors.errors import ConfigError
from rocketmq_actors.logs import get_logger
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import MessageExt

from .fetcher import Fetcher, deserialize_taken
from .group import PullGroup
from .options import PullOptions
from .queuewatch import QueueChangeListener
from .subscription import RebalanceListener, Topics, compile_pattern, parse_topics

__all__ = ["PullConsumer"]


log = get_logger("rocketmq_actors.consumer")


class PullConsumer(Client[PullGroup], Generic[T]):
    """A lite pull consumer (see the module docs): ``group``, what it consumes (``topics`` or
    ``pattern``, with a ``listener``; or nothing until ``subscribe()`` / ``assign()``), a
    ``value_deserializer``, then ``options`` (:class:`PullOptions`) and what every client
    shares (``namesrv``, ``client``: :class:`~rocketmq_actors.cluster.options.ClientOptions`,
    or a shared ``instance``)."""

    def __init__(
        self,
        *,
        group: str,
        topics: Topics = (),
        pattern: str | re.Pattern[str] | None = None,
        listener: RebalanceListener | None = None,
        value_deserializer: Callable[[bytes], T] | None = None,
        namesrv: str | Sequence[str] | None = None,
        options: PullOptions = PullOptions(),
        client: ClientOptions = ClientOptions(),
        instance: ClientInstance | None = None,
    ) -> None:
        for name, value, kind in (("options", options, PullOptions),
                                  ("client", client, ClientOptions)):  # fmt: skip
            if not isinstance(value, kind):
                raise ConfigError(f"{name} must be a {kind.__name__}, not {type(value).__name__}")
        table = parse_topics(topics, client.namespace)
        if table and pattern is not None:
            raise ConfigError("give topics or a pattern, not both")
        if listener is not None and not table and pattern is None:
            raise ConfigError("listener goes with topics or a pattern (or give it to subscribe)")
        self._group = PullGroup(group=group, namesrv=namesrv, instance=instance,
                                options=options, client=client,
                                value_deserializer=value_deserializer)  # fmt: skip
        if table or pattern is not None:
            compiled = None if pattern is None else compile_pattern(pattern)
            self._group.subs.take(table, compiled, listener)

    # ---- what it consumes ---------------------------------------------------------------

    async def watch_queues(self, topic: str, listener: QueueChangeListener) -> set[MessageQueue]:
        """Call ``listener(topic, queues)`` whenever the readable queues of ``topic`` change
        (Java's ``registerTopicMessageQueueChangeListener``; looked at every
        ``topic_metadata_check_interval``), a plain function or a coroutine function; its
        queues now. Another listener for the topic replaces this one."""
        return await self._group.watch_queues(topic, listener)

    async def subscribe(
        self, topics: Topics = (), *, pattern: str | re.Pattern[str] | None = None,
        listener: RebalanceListener | None = None,
    ) -> None:  # fmt: skip
        """Consume ``topics`` (a list of names, or topic -> tag expression or
        :class:`MessageSelector`) or every topic whose name ``pattern`` matches in full,
        instead of what was subscribed before (not incremental), as a member of the group;
        ``listener`` replaces the previous one. Before start it is what the consumer starts
        with; while it runs, the queues move at once (one rebalance round, before this
        returns). A :class:`~rocketmq_actors.errors.ClientStateError` after ``assign()`` (or
        for topics after a pattern, or the reverse) until ``unsubscribe()``;
        :class:`~rocketmq_actors.errors.InvalidSubscription` for an SQL92 expression the
        broker cannot evaluate."""
        table = parse_topics(topics, self._group.namespace)
        if bool(table) == (pattern is not None):
            raise ConfigError("subscribe takes topics or a pattern (one of them)")
        compiled = None if pattern is None else compile_pattern(pattern)
        await self._group.subscribe(table, compiled, listener)

    async def unsubscribe(self) -> None:
        """Consume nothing: the subscription (or the assignment) and the listener are dropped,
        and every queue is revoked, its position committed first with ``auto_commit``. Then
        ``subscribe()`` or ``assign()`` again."""
        await self._group.unsubscribe()

    def subscription(self) -> frozenset[str]:
        """The topics consumed: those subscribed, those the pattern matches now, or those of
        the queues assigned."""
        return self._group.subs.names()

    async def assign(self, queues: Iterable[MessageQueue]) -> None:
        """Consume exactly ``queues`` (no group rebalancing), from their committed offsets (or
        as ``auto_offset_reset`` says), instead of those assigned before; before start, from
        the start. A :class:`~rocketmq_actors.errors.ClientStateError` after ``subscribe()``
        until ``unsubscribe()``."""
        await self._group.assign(queues)

    def assignment(self) -> set[MessageQueue]:
        """The queues this consumer fetches now (its share of the subscribed topics, or those
        assigned)."""
        return self._group.ns.app_set(self._group.fetchers)

    async def queues(self, topic: str) -> list[MessageQueue]:
        """The topic's readable queues, in Java's order: what :meth:`assign` and :meth:`pull`
        take."""
        return await self._group.queues(topic)

    # ---- records ------------------------------------------------------------------------

    async def getmany(
        self, *queues: MessageQueue, max_records: int | None = None, timeout: float = 0.0
    ) -> dict[MessageQueue, list[ReceivedMessage[T]]]:
        """Buffered records by queue (of ``queues``, or of every assigned queue), waiting up to
        ``timeout`` seconds for the first; an empty dict when none came. A record that could
        not be decoded comes as stored, with ``decode_error`` saying why (with a
        ``value_deserializer``: :class:`RecordDeserializationError`, see the module docs)."""
        group = self._group
        group._check_running()
        limit = max_records if max_records is not None else 1 << 30
        if limit < 1 or timeout < 0:
            raise ConfigError("max_records >= 1 and timeout >= 0 are required")
        started_ns = time.time_ns() if group.tracing is not None else 0
        taken = await group.buffer.take(group.fetchers, group.ns.wire_all(queues), limit, timeout)
        if group.value_deserializer is not None:  # (raises RecordDeserializationError)
            taken = deserialize_taken(group.fetchers, taken, group.value_deserializer,
                                      group.ns.app)  # fmt: skip
        records = group.ns.app_records(taken)
        if group.trace is not None:
            for polled in records.values():
                group.trace.polled(polled)
        if group.tracing is not None and records:  # a receive span per topic
            by_topic: dict[str, list[MessageExt]] = {}
            for queue, polled in records.items():
                by_topic.setdefault(queue.topic, []).extend(polled)
            for messages in by_topic.values():
                try:
                    group.tracing.received(messages, started_ns)
                except Exception:  # (the records are taken: a tracer's fault must not lose them)
                    log.exception("consumer.span_failed", group=group.group)
        return cast("dict[MessageQueue, list[ReceivedMessage[T]]]", records)

    async def getone(self, *queues: MessageQueue) -> ReceivedMessage[T]:
        """The next record (of ``queues``, or of every assigned queue), waiting for it."""
        while True:
            out = await self.getmany(*queues, max_records=1, timeout=3600.0)
            for records in out.values():
                return records[0]

    def __aiter__(self) -> PullConsumer[T]:
        """``async for message in consumer``: :meth:`getone` until the consumer stops."""
        return self

    async def __anext__(self) -> ReceivedMessage[T]:
        if not self.running:
            raise StopAsyncIteration
        return await self.getone()

    # ---- positions ----------------------------------------------------------------------

    def _fetcher(self, queue: MessageQueue) -> Fetcher:
        fetcher = self._group.fetchers.lookup(self._group.ns.wire(queue))
        if fetcher is None:
            raise ConfigError(f"{queue} is not assigned to this consumer")
        return fetcher

    def position(self, queue: MessageQueue) -> int:
        """The offset of the next record :meth:`getmany` returns for ``queue``."""
        return self._fetcher(queue).position

    def seek(self, queue: MessageQueue, offset: int) -> None:
        """Continue ``queue`` at ``offset`` (buffered records are dropped)."""
        self._group._check_running()
        if offset < 0:
            raise ConfigError("offset must be >= 0")
        self._fetcher(queue).seek(offset)
        self._group.buffer.freed()

    async def seek_to_beginning(self, *queues: MessageQueue) -> None:
        """Continue ``queues`` (every assigned queue without any) at their first offset."""
        for queue in queues or tuple(self.assignment()):
            self.seek(queue, await self.min_offset(queue))

    async def seek_to_end(self, *queues: MessageQueue) -> None:
        """Continue ``queues`` (every assigned queue without any) past their last message."""
        for queue in queues or tuple(self.assignment()):
            self.seek(queue, await self.max_offset(queue))

    def pause(self, *queues: MessageQueue) -> None:
        """Stop fetching and returning ``queues`` until :meth:`resume`."""
        for queue in queues:
            self._fetcher(queue).paused = True

    def resume(self, *queues: MessageQueue) -> None:
        """Fetch and return paused ``queues`` again."""
        for queue in queues:
            self._fetcher(queue).paused = False
        self._group.buffer.freed()

    def paused(self) -> set[MessageQueue]:
        """The queues :meth:`pause` stopped."""
        return self._group.ns.app_set(f.queue for f in self._group.fetchers.actors() if f.paused)

    # ---- offsets ------------------------------------------------------------------------

    async def commit(self, offsets: Mapping[MessageQueue, int] | None = None) -> None:
        """Commit ``offsets`` (next offset to consume, by queue), or the current position of
        every assigned queue; returns once the brokers have them."""
        group = self._group
        group._check_running()
        await group.committer.commit(None if offsets is None else group.ns.wire_keys(offsets))

    async def committed(self, queue: MessageQueue) -> int | None:
        """This group's committed offset for ``queue``: in memory, else from the broker (None
        when it never committed one)."""
        return await self._group.committer.committed(self._group.ns.wire(queue))

    async def min_offset(self, queue: MessageQueue) -> int:
        """The first offset still stored in ``queue``."""
        return await min_offset(self._group.instance, self._group.ns.wire(queue))

    async def max_offset(self, queue: MessageQueue) -> int:
        """The offset the next message will get (one past the last stored)."""
        return await max_offset(self._group.instance, self._group.ns.wire(queue))

    async def offset_for_time(self, queue: MessageQueue, timestamp_ms: int) -> int:
        """The first offset stored at or after ``timestamp_ms`` (on 4.x brokers too, whose own
        answer is the nearest: see :func:`~.brokercalls.first_offset_at`)."""
        group = self._group
        return await first_offset_at(group.instance, group.group, group.ns.wire(queue),
                                     timestamp_ms)  # fmt: skip

    async def offsets_for_times(
        self, timestamps: Mapping[MessageQueue, int]
    ) -> dict[MessageQueue, int]:
        """For each queue, the first offset stored at or after its timestamp (ms)."""
        return {q: await self.offset_for_time(q, ts) for q, ts in timestamps.items()}

    # ---- pulling by hand ----------------------------------------------------------------

    async def pull(
        self, queue: MessageQueue, offset: int, *, max_messages: int = 32, expression: str = "*",
        expression_type: str = "TAG", wait: float = 0.0,
    ) -> PullResult:  # fmt: skip
        """One pull of up to ``max_messages`` from ``offset``, outside any assignment, keeping
        ``expression`` (tags, or SQL92 with ``expression_type="SQL92"``); with ``wait`` > 0
        the broker holds the request up to that long for new messages."""
        return await self._group.pull(queue, offset, max_messages=max_messages,
                                      expression=expression, expression_type=expression_type,
                                      wait=wait)  # fmt: skip
