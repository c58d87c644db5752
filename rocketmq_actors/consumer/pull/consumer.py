"""PullConsumer: lite pull, aiokafka-style - you ask for records, the consumer fetches them.

    async with PullConsumer(namesrv="127.0.0.1:9876", group="reports") as consumer:
        await consumer.subscribe("orders", "paid || refunded")   # group-balanced queues
        async for message in consumer:                           # or getmany(timeout=1.0)
            ...

``subscribe`` shares the topic's queues with the group's other members (rebalanced every
``rebalance_interval`` and when the broker says the group changed; a :class:`RebalanceListener`
hears about it); ``assign`` takes exactly the queues given. One fetcher per queue long-polls the
broker into a buffer of at most ``max_buffered`` records; ``getmany``/``getone``/``async for``
return buffered records and advance the queue's *position*. With ``auto_commit`` the positions
are committed every ``auto_commit_interval``, before queues are revoked, and on close - so a
record counts as consumed once a later ``getmany`` was called (at-least-once if you process
records before asking for more). ``commit()`` commits now and waits for the brokers. ``seek``,
``seek_to_beginning``, ``seek_to_end``, ``offsets_for_times``, ``pause`` and ``resume`` work on
assigned queues, and ``pull`` reads any queue at any offset, outside the assignment.

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

import enum
import ssl
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack
from typing import Generic, Protocol, cast

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.cluster.member import MEMBER_POLICY, GroupMember
from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.cluster.requests import RequestServer
from rocketmq_actors.consumer.core.brokercalls import (
    PullResult,
    PullStatus,
    RawPull,
    check_subscription,
    decode_pull,
    first_offset_at,
    max_offset,
    min_offset,
    offset_for_time,
    pull_raw,
)
from rocketmq_actors.consumer.core.message import ReceivedMessage, T, deserialize_record
from rocketmq_actors.consumer.core.namespaced import Namespace
from rocketmq_actors.consumer.core.offsets import RemoteOffsetStore
from rocketmq_actors.consumer.core.options import check_deserializer
from rocketmq_actors.consumer.core.queues import QueueTable
from rocketmq_actors.consumer.core.rebalance import Strategy
from rocketmq_actors.consumer.core.rebalancer import Rebalancer
from rocketmq_actors.consumer.core.strategies import StrategyOption, as_allocator
from rocketmq_actors.consumer.core.subscriptions import MessageSelector, Subscription
from rocketmq_actors.consumer.pull.assignment import change, request_handlers
from rocketmq_actors.consumer.pull.commits import Committer
from rocketmq_actors.consumer.pull.fetcher import Fetcher, RecordBuffer, deserialize_taken
from rocketmq_actors.errors import ClientStateError, ConfigError
from rocketmq_actors.logs import get_logger
from rocketmq_actors.names import validate_group, validate_topic, wrap
from rocketmq_actors.producer.tracesend import trace_sender
from rocketmq_actors.protocol.acl import AclCredentials
from rocketmq_actors.protocol.bodies import (
    ConsumerData,
    MessageQueue,
)
from rocketmq_actors.runtime.checks import check_int, check_timeout
from rocketmq_actors.runtime.supervisor import ChildSpec, DynamicSupervisor, Restart
from rocketmq_actors.runtime.tree import Node
from rocketmq_actors.trace import hooks as rmq_trace

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

log = get_logger("rocketmq_actors.consumer")


class RebalanceListener(Protocol):
    """Told when :meth:`PullConsumer.subscribe` moves queues (aiokafka's listener): revoked
    queues after their positions were committed (with auto-commit), assigned queues once their
    starting positions are known."""

    async def on_queues_revoked(self, revoked: set[MessageQueue]) -> None: ...

    async def on_queues_assigned(self, assigned: set[MessageQueue]) -> None: ...


class OffsetReset(enum.Enum):
    """Where a queue with no committed offset starts."""

    EARLIEST = "earliest"
    LATEST = "latest"


def _check_timeouts(**timeouts: float) -> None:
    for name, seconds in timeouts.items():
        check_timeout(name, seconds)


def _offset_reset(value: OffsetReset | str) -> OffsetReset:
    try:
        return OffsetReset(value)
    except ValueError:
        raise ConfigError(
            f"auto_offset_reset must be 'earliest' or 'latest', not {value!r}"
        ) from None


class PullConsumer(GroupMember, Generic[T]):
    def __init__(
        self,
        *,
        namesrv: str | Sequence[str] | None = None,
        group: str,
        instance: ClientInstance | None = None,
        namespace: str | None = None,
        auto_commit: bool = True,
        auto_commit_interval: float = 5.0,
        auto_offset_reset: OffsetReset | str = OffsetReset.LATEST,
        strategy: StrategyOption = Strategy.AVG,
        listener: RebalanceListener | None = None,
        pull_batch_size: int = 32,
        max_buffered: int = 1000,
        pull_suspend: float = 5.0,
        rebalance_interval: float = 20.0,
        request_timeout: float = 3.0,
        ssl_context: ssl.SSLContext | None = None,
        credentials: AclCredentials | None = None,
        trace: bool = False,
        trace_topic: str | None = None,
        shutdown_timeout: float = 10.0,
        on_error: Callable[[BaseException], object] | None = None,
        value_deserializer: Callable[[bytes], T] | None = None,
    ) -> None:
        validate_group(group)
        check_deserializer(value_deserializer)
        check_int("pull_batch_size", pull_batch_size)
        check_int("max_buffered", max_buffered)
        as_allocator(strategy)  # a Strategy or a callable (.strategies)
        _check_timeouts(
            auto_commit_interval=auto_commit_interval,
            pull_suspend=pull_suspend,
            rebalance_interval=rebalance_interval,
            request_timeout=request_timeout,
        )
        auto_offset_reset = _offset_reset(auto_offset_reset)
        super().__init__(
            kind="pull-consumer", group=wrap(namespace, group), namesrv=namesrv, instance=instance,
            client=ClientOptions(ssl_context=ssl_context, credentials=credentials,
                                 shutdown_timeout=shutdown_timeout, on_error=on_error),
        )  # fmt: skip
        self.namespace = namespace
        self._ns = Namespace(namespace)
        self.auto_commit = auto_commit
        self.auto_commit_interval = auto_commit_interval
        self.auto_offset_reset = auto_offset_reset
        self.strategy = strategy
        self.listener = listener
        self.pull_batch_size = pull_batch_size
        self.max_buffered = max_buffered
        self.pull_suspend = pull_suspend
        self.rebalance_interval = rebalance_interval
        self.request_timeout = request_timeout
        self.value_deserializer = value_deserializer
        self._subscriptions: dict[str, Subscription] = {}
        self._subscribed: set[str] = set()  # topics whose queues the group rebalances
        self._sub_version = time.time_ns() // 1_000_000
        self.offsets = RemoteOffsetStore(self._instance, self.group)
        self.fetchers: QueueTable[Fetcher] = QueueTable(
            "fetchers", shutdown_timeout=shutdown_timeout, kind="fetcher"
        )
        self.rebalancer = Rebalancer(
            self._instance, self.group, strategy=strategy, broadcasting=False,
            interval=rebalance_interval, topics=lambda: sorted(self._subscribed),
            owned=lambda: list(self.fetchers), apply=lambda wanted: change(self, wanted),
        )  # fmt: skip
        self._supervisor = DynamicSupervisor(
            f"pull-consumer:{self.group}", MEMBER_POLICY, shutdown_timeout=shutdown_timeout
        )
        self.buffer = RecordBuffer()
        self.committer = Committer(self.fetchers, self.offsets, interval=auto_commit_interval)
        self.started_ms = 0
        # message trace (as the Java lite pull consumer's: SubBefore + SubAfter when polled)
        self.trace = rmq_trace.for_consumer(self._instance, self.group, namespace, trace,
                                            trace_topic, sender=trace_sender)  # fmt: skip

    # ---- what the fetchers read -----------------------------------------------------------

    @property
    def sub_version(self) -> int:
        return self._sub_version

    def subscription(self, topic: str) -> Subscription:
        return self._subscriptions[topic]

    def subscriptions(self) -> list[Subscription]:
        return list(self._subscriptions.values())

    # ---- lifecycle ----------------------------------------------------------------------

    async def _open(self, stack: AsyncExitStack) -> None:
        self.started_ms = time.time_ns() // 1_000_000
        await self._join(
            stack,
            lambda: self._instance.register_consumer(self.group, self.mailbox, self._consumer_data),
            self._instance.unregister_consumer,
        )
        stack.push_async_callback(self.offsets.persist_on_close)
        await stack.enter_async_context(self.fetchers.supervisor)
        supervisor = await stack.enter_async_context(self._supervisor)
        server = RequestServer(self.group, self.mailbox, request_handlers(self))
        await supervisor.start_child(ChildSpec("mailbox", server.run, Restart.PERMANENT,
                                               kind="mailbox"))  # fmt: skip
        await supervisor.start_child(ChildSpec("rebalancer", self.rebalancer.run,
                                               Restart.PERMANENT, kind="rebalancer"))  # fmt: skip
        if self.auto_commit:
            spec: ChildSpec[None] = ChildSpec(
                "offsets", self.committer.run, Restart.PERMANENT, kind="offset-persister"
            )
            await supervisor.start_child(spec)
        if self.trace is not None:
            await supervisor.start_child(self.trace.dispatcher.child_spec())

    async def _closing(self) -> None:
        if self.trace is not None:  # the polled records' trace (while the actors run)
            await self.trace.dispatcher.flush(self._time_left() * 0.5)
        self.rebalancer.stop()
        if self.auto_commit:
            self.committer.record_positions()  # persisted by the stack, after fetchers stop

    def _consumer_data(self) -> ConsumerData:
        return ConsumerData(
            group=self.group,
            consume_type="CONSUME_ACTIVELY",
            message_model="CLUSTERING",
            consume_from_where="CONSUME_FROM_LAST_OFFSET"
            if self.auto_offset_reset is OffsetReset.LATEST
            else "CONSUME_FROM_FIRST_OFFSET",
            subscriptions=tuple(s.wire(self._sub_version) for s in self._subscriptions.values()),
        )

    async def _subscribe(self, topic: str, expression: str, expression_type: str) -> Subscription:
        subscription = Subscription.parse(topic, expression, expression_type)
        if self._subscriptions.get(topic) != subscription:
            await check_subscription(self._instance, self.group, subscription.wire(0))
            self._subscriptions[topic] = subscription
            self._sub_version = time.time_ns() // 1_000_000
            await self._instance.routes.get(topic)
            await self._instance.heartbeat.beat()  # the brokers learn the group now
        return subscription

    async def queues(self, topic: str) -> list[MessageQueue]:
        """The topic's readable queues, in Java's order (named without the namespace, as
        every queue this consumer takes or gives)."""
        self._check_running()
        validate_topic(topic, error=ConfigError)
        wire_topic = wrap(self.namespace, topic)
        await self._subscribe(wire_topic, "*", "TAG")
        route = await self._instance.routes.get(wire_topic)
        return [self._ns.app(q) for q in route.subscribe_queues]

    # ---- assignment -------------------------------------------------------------------

    async def subscribe(
        self, topic: str, expression: str = "*", *, expression_type: str = "TAG"
    ) -> None:
        """Consume ``topic`` as a member of the group: its queues are shared with the group's
        other members and rebalanced as members come and go."""
        self._check_running()
        validate_topic(topic, error=ConfigError)
        if len(self.fetchers) and not self._subscribed:
            raise ClientStateError("this consumer has queues assigned by hand: subscribe or assign")
        wire_topic = wrap(self.namespace, topic)
        await self._subscribe(wire_topic, expression, expression_type)
        self._subscribed.add(wire_topic)
        await self.rebalancer.rebalance()

    async def assign(self, queues: Iterable[MessageQueue]) -> None:
        """Consume exactly ``queues`` (no group rebalancing), from their committed offsets."""
        self._check_running()
        if self._subscribed:
            raise ClientStateError("this consumer subscribed to topics: subscribe or assign")
        wanted = set(self._ns.wire_all(queues))
        for topic in {q.topic for q in wanted}:
            if topic not in self._subscriptions:
                await self._subscribe(topic, "*", "TAG")
        async with self.rebalancer.lock:
            await change(self, wanted)

    def assignment(self) -> set[MessageQueue]:
        return self._ns.app_set(self.fetchers)

    def app_queues(self, queues: Iterable[MessageQueue]) -> set[MessageQueue]:
        """``queues`` as the application names them (without the namespace)."""
        return self._ns.app_set(queues)

    # ---- records ----------------------------------------------------------------------

    async def getmany(
        self, *queues: MessageQueue, max_records: int | None = None, timeout: float = 0.0
    ) -> dict[MessageQueue, list[ReceivedMessage[T]]]:
        """Buffered records by queue (of ``queues``, or of every assigned queue), waiting up to
        ``timeout`` seconds for the first; an empty dict when none came. A record that could
        not be decoded comes as stored, with ``decode_error`` saying why (with a
        ``value_deserializer``: :class:`RecordDeserializationError`, see the module docs)."""
        self._check_running()
        limit = max_records if max_records is not None else 1 << 30
        if limit < 1 or timeout < 0:
            raise ConfigError("max_records >= 1 and timeout >= 0 are required")
        taken = await self.buffer.take(self.fetchers, self._ns.wire_all(queues), limit, timeout)
        if self.value_deserializer is not None:  # (raises RecordDeserializationError)
            taken = deserialize_taken(self.fetchers, taken, self.value_deserializer, self._ns.app)
        records = self._ns.app_records(taken)
        if self.trace is not None:
            for polled in records.values():
                self.trace.polled(polled)
        return cast("dict[MessageQueue, list[ReceivedMessage[T]]]", records)

    async def getone(self, *queues: MessageQueue) -> ReceivedMessage[T]:
        """The next record (of ``queues``, or of every assigned queue), waiting for it."""
        while True:
            out = await self.getmany(*queues, max_records=1, timeout=3600.0)
            for records in out.values():
                return records[0]

    def __aiter__(self) -> PullConsumer[T]:
        return self

    async def __anext__(self) -> ReceivedMessage[T]:
        if not self.running:
            raise StopAsyncIteration
        return await self.getone()

    # ---- positions --------------------------------------------------------------------

    def _fetcher(self, queue: MessageQueue) -> Fetcher:
        fetcher = self.fetchers.lookup(self._ns.wire(queue))
        if fetcher is None:
            raise ConfigError(f"{queue} is not assigned to this consumer")
        return fetcher

    def position(self, queue: MessageQueue) -> int:
        """The offset of the next record :meth:`getmany` returns for ``queue``."""
        return self._fetcher(queue).position

    def seek(self, queue: MessageQueue, offset: int) -> None:
        """Continue ``queue`` at ``offset`` (buffered records are dropped)."""
        self._check_running()
        if offset < 0:
            raise ConfigError("offset must be >= 0")
        self._fetcher(queue).seek(offset)
        self.buffer.freed()

    async def seek_to_beginning(self, *queues: MessageQueue) -> None:
        for queue in queues or tuple(self.assignment()):
            self.seek(queue, await self.min_offset(queue))

    async def seek_to_end(self, *queues: MessageQueue) -> None:
        for queue in queues or tuple(self.assignment()):
            self.seek(queue, await self.max_offset(queue))

    async def offsets_for_times(
        self, timestamps: Mapping[MessageQueue, int]
    ) -> dict[MessageQueue, int]:
        """For each queue, the first offset stored at or after its timestamp (ms)."""
        return {q: await self.offset_for_time(q, ts) for q, ts in timestamps.items()}

    def pause(self, *queues: MessageQueue) -> None:
        """Stop fetching and returning ``queues`` until :meth:`resume`."""
        for queue in queues:
            self._fetcher(queue).paused = True

    def resume(self, *queues: MessageQueue) -> None:
        for queue in queues:
            self._fetcher(queue).paused = False
        self.buffer.freed()

    def paused(self) -> set[MessageQueue]:
        return self._ns.app_set(f.queue for f in self.fetchers.actors() if f.paused)

    # ---- pulling by hand ----------------------------------------------------------------

    async def pull(
        self,
        queue: MessageQueue,
        offset: int,
        *,
        max_messages: int = 32,
        expression: str = "*",
        expression_type: str = "TAG",
        wait: float = 0.0,
    ) -> PullResult:
        """One pull of up to ``max_messages`` from ``offset``, outside any assignment; with
        ``wait`` > 0 the broker holds the request up to that long for new messages."""
        queue, subscription, raw = await self._pull(
            queue, offset, max_messages, expression, expression_type, wait
        )
        result = decode_pull(raw, queue, subscription)
        if self.value_deserializer is not None:  # (raises for the first it rejects)
            for message in result.messages:
                deserialize_record(message, self.value_deserializer, self._ns.app(queue))
        self._ns.app_messages(result.messages)
        return result

    async def pull_raw(
        self, queue: MessageQueue, offset: int, *, max_messages: int = 32
    ) -> RawPull:
        """One pull of every message from ``offset`` (no filter, no wait) whose records are left
        undecoded: for readers that copy them into columns
        (:func:`~rocketmq_actors.protocol.recordcolumns.decode_columns`), such as the Spark
        source.
        No deserializer is applied and the records carry the topic as stored (namespaced)."""
        return (await self._pull(queue, offset, max_messages, "*", "TAG", 0.0))[2]

    async def _pull(  # noqa: PLR0917
        self, queue: MessageQueue, offset: int, max_messages: int, expression: str,
        expression_type: str, wait: float,
    ) -> tuple[MessageQueue, Subscription, RawPull]:  # fmt: skip
        """A pull by hand: the queue as the broker names it, the subscription and the answer."""
        self._check_running()
        if offset < 0 or max_messages < 1 or wait < 0:
            raise ConfigError("offset >= 0, max_messages >= 1 and wait >= 0 are required")
        queue = self._ns.wire(queue)
        subscription = await self._subscribe(queue.topic, expression, expression_type)
        raw = await pull_raw(
            self._instance, self.group, queue, offset, subscription=subscription,
            sub_version=self._sub_version, max_messages=max_messages, wait=wait,
            request_timeout=self.request_timeout,
        )  # fmt: skip
        return queue, subscription, raw

    # ---- offsets ----------------------------------------------------------------------

    async def commit(self, offsets: Mapping[MessageQueue, int] | None = None) -> None:
        """Commit ``offsets`` (next offset to consume, by queue), or the current position of
        every assigned queue; returns once the brokers have them."""
        self._check_running()
        await self.committer.commit(None if offsets is None else self._ns.wire_keys(offsets))

    async def committed(self, queue: MessageQueue) -> int | None:
        """This group's committed offset for ``queue``: in memory, else from the broker."""
        return await self.committer.committed(self._ns.wire(queue))

    async def persist(self) -> None:
        await self.offsets.persist()

    async def min_offset(self, queue: MessageQueue) -> int:
        return await min_offset(self._instance, self._ns.wire(queue))

    async def max_offset(self, queue: MessageQueue) -> int:
        """The offset the next message will get (one past the last stored)."""
        return await max_offset(self._instance, self._ns.wire(queue))

    async def offset_for_time(self, queue: MessageQueue, timestamp_ms: int) -> int:
        """The first offset stored at or after ``timestamp_ms`` (on 4.x brokers too, whose own
        answer is the nearest: see :func:`~.brokercalls.first_offset_at`)."""
        return await first_offset_at(self._instance, self.group, self._ns.wire(queue),
                                     timestamp_ms)  # fmt: skip

    # ---- inspection ---------------------------------------------------------------------

    def describe(self) -> Node:
        children = list(self._supervisor.describe().children)
        children.append(self.fetchers.supervisor.describe(kind="fetcher-supervisor"))
        children.append(self._instance.describe())
        return Node(name=self._describe(), kind="pull-consumer", state=self.state.value,
                    last_error=repr(self.error) if self.error else None,
                    children=tuple(children))  # fmt: skip
