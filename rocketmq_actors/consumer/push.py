"""PushConsumer: a consumer group member that pulls its share of queues and calls a handler.

    async def handle(message: MessageExt) -> None:
        ...                          # raising means "consume later" (retry)

    async with PushConsumer(namesrv="127.0.0.1:9876", group="billing",
                            subscriptions={"orders": "paid || refunded"}, handler=handle):
        await anyio.sleep_forever()

or, without a handler, iterate (a message counts as consumed when the loop asks for the next):

    async with PushConsumer(namesrv=..., group="billing", subscriptions={"orders": "*"}) as c:
        async for message in c:
            ...

The actors under it (all in the consumer's task group):

* a rebalancer - every ``rebalance_interval`` and at once when the broker sends
  NOTIFY_CONSUMER_IDS_CHANGED to the mailbox - allocates queues (clustering: with the group's
  strategy over the group's client ids; broadcasting: all of them) and starts or releases them;
* one pull loop per owned queue: long polling, flow control per queue (cached messages, bytes,
  offset span) and per topic, messages into the process queue;
* concurrent mode: ``concurrency`` workers taking batches of up to ``consume_batch_size``
  messages off one work channel; a success moves the queue's offset to the smallest offset not
  yet consumed;
* orderly mode: one consume loop per queue, taking messages in offset order while the broker's
  lock on the queue is held (LOCK_BATCH_MQ before the queue is started, renewed every
  ``lock_interval``, released with UNLOCK_BATCH_MQ after the last handler on it returned); at
  most ``concurrency`` handlers run at once over all queues;
* an offset persister every ``persist_interval`` (and on release and close);
* the mailbox server answering the broker: rebalance now (40), reset offsets (220), consumer
  status (221), running info (307) and consume directly (309).

A handler failure in clustering mode sends the message back to the broker
(CONSUMER_SEND_MSG_BACK), which redelivers it through ``%RETRY%<group>`` with growing delays and
moves it to ``%DLQ%<group>`` after ``max_reconsume_times`` (16). If the send-back itself fails,
the message is consumed again locally after ``local_retry_delay``: never dropped. In
broadcasting mode a failed message is logged and skipped, as the Java client does. In orderly
mode a failure suspends the queue for ``suspend_delay`` and the same messages are consumed again,
in order; after ``max_reconsume_times`` (unbounded by default, as in Java) they go to the DLQ.

Stopping (``stop()``, leaving ``async with``, or a cancellation of the scope around it) takes
at most ``shutdown_timeout``: pulling stops, handlers in flight get what is left of it less the
time reserved to persist offsets, then the offsets are persisted, orderly locks released and
the group unregistered. What a handler's outcome means (an exception, a stray
``CancelledError``, ``KeyboardInterrupt``): see :mod:`rocketmq_actors.consumer.handlers`.
"""

from __future__ import annotations

import enum
import math
import os
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import attrs
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.cluster.member import GroupMember
from rocketmq_actors.errors import ConfigError, RocketMQError, TopicNotFound
from rocketmq_actors.logs import get_logger
from rocketmq_actors.metrics import METRICS, SeriesKeys
from rocketmq_actors.producer.prepare import validate_group, validate_topic, wrap
from rocketmq_actors.protocol.acl import AclCredentials
from rocketmq_actors.protocol.bodies import (
    ConsumerData,
    MessageQueue,
    decode_offset_table,
    encode_consume_directly_result,
    encode_consumer_status,
    encode_running_info,
)
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.errors import ProtocolError
from rocketmq_actors.protocol.headers import (
    ConsumerSendMsgBackRequestHeader,
    GetConsumerStatusRequestHeader,
    ResetOffsetRequestHeader,
)
from rocketmq_actors.protocol.messages import Property
from rocketmq_actors.protocol.records import MessageExt, decode_messages
from rocketmq_actors.runtime.checks import check_int, check_timeout
from rocketmq_actors.runtime.router import Inbound
from rocketmq_actors.runtime.workqueue import WorkQueue
from rocketmq_actors.tracing import Tracing

from .assignment import allocated
from .handlers import FailureLog, as_async_handler, describe
from .locks import LOCK_MAX_LIVE, lock_queues, unlock_queues
from .offsets import LocalOffsetStore, OffsetStore, RemoteOffsetStore
from .process_queue import ProcessQueue
from .pull import (
    MessageSelector,
    PullStatus,
    Subscription,
    max_offset,
    offset_for_time,
    pull_or_back_off,
)
from .rebalance import Strategy

__all__ = ["BatchHandler", "ConsumeFrom", "Handler", "MessageModel", "PushConsumer"]

log = get_logger("rocketmq_actors.consumer")

Handler = Callable[[MessageExt], Awaitable[None]]
BatchHandler = Callable[[list[MessageExt]], Awaitable[None]]

_DLQ_NOW = -1  # CONSUMER_SEND_MSG_BACK delay level that dead-letters at once


class MessageModel(enum.Enum):
    CLUSTERING = "CLUSTERING"
    BROADCASTING = "BROADCASTING"


class ConsumeFrom(enum.Enum):
    """Where a group with no committed offset starts."""

    LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


class _ReconsumeLater(Exception):
    """An iterated message was handed back with :meth:`PushConsumer.reconsume_later`."""


class _Abandoned(Exception):
    """The consumer closed while a message waited for (or was in) ``async for``: it is left
    unconsumed (its offset is not committed), so it is delivered again later."""


@attrs.define(eq=False)
class _Delivery:
    message: MessageExt
    done: anyio.Event = attrs.field(factory=anyio.Event)
    failed: bool = False
    abandoned: bool = False


@attrs.define(eq=False)
class _Worker:
    scope: anyio.CancelScope | None = None
    started: float = 0.0
    busy: bool = False


@attrs.define
class _Owned:
    pq: ProcessQueue
    pull_scope: anyio.CancelScope


class PushConsumer(GroupMember):
    def __init__(
        self,
        *,
        namesrv: str | Sequence[str] | None = None,
        group: str,
        subscriptions: Mapping[str, str | MessageSelector],
        handler: Handler | None = None,
        batch_handler: BatchHandler | None = None,
        instance: ClientInstance | None = None,
        namespace: str | None = None,
        model: MessageModel = MessageModel.CLUSTERING,
        orderly: bool = False,
        consume_from: ConsumeFrom = ConsumeFrom.LAST_OFFSET,
        consume_timestamp_ms: int | None = None,
        strategy: Strategy = Strategy.AVG,
        concurrency: int = 20,
        consume_batch_size: int = 1,
        pull_batch_size: int = 32,
        max_cached_messages: int = 1000,
        max_cached_bytes: int = 100 * 1024 * 1024,
        max_cached_messages_per_topic: int | None = None,
        max_cached_bytes_per_topic: int | None = None,
        max_span: int = 2000,
        max_reconsume_times: int | None = None,
        retry_delay_level: int = 0,
        local_retry_delay: float = 5.0,
        suspend_delay: float = 1.0,
        consume_timeout: float | None = 15 * 60.0,
        sync_handler: bool = False,
        shutdown_timeout: float = 10.0,
        rebalance_interval: float = 20.0,
        lock_interval: float = 20.0,
        persist_interval: float = 5.0,
        pull_suspend: float = 15.0,
        offset_dir: Path | str | None = None,
        request_timeout: float = 3.0,
        ssl_context: ssl.SSLContext | None = None,
        credentials: AclCredentials | None = None,
        on_rebalance: Callable[[list[MessageQueue]], None] | None = None,
        tracing: bool = False,
    ) -> None:
        validate_group(group)
        if not isinstance(subscriptions, Mapping) or not subscriptions:
            raise ConfigError("subscriptions must map at least one topic to an expression")
        for topic in subscriptions:
            validate_topic(topic)
        if handler is not None and batch_handler is not None:
            raise ConfigError("give handler or batch_handler, not both")
        if consume_batch_size > 1 and batch_handler is None:
            raise ConfigError("consume_batch_size > 1 needs a batch_handler")
        counts = {
            "concurrency": concurrency,
            "pull_batch_size": pull_batch_size,
            "max_cached_messages": max_cached_messages,
            "consume_batch_size": consume_batch_size,
            "max_cached_bytes": max_cached_bytes,
            "max_span": max_span,
        }
        for name, value in counts.items():
            check_int(name, value)
        check_int("retry_delay_level", retry_delay_level, minimum=-1, maximum=18)
        if max_reconsume_times is not None:
            check_int("max_reconsume_times", max_reconsume_times, minimum=0)
        if consume_timeout is not None:
            check_timeout("consume_timeout", consume_timeout)
        periods = {
            "local_retry_delay": local_retry_delay,
            "suspend_delay": suspend_delay,
            "pull_suspend": pull_suspend,
            "rebalance_interval": rebalance_interval,
            "lock_interval": lock_interval,
            "persist_interval": persist_interval,
            "request_timeout": request_timeout,
        }
        for name, seconds in periods.items():
            check_timeout(name, seconds)
        self._handler_limiter = anyio.CapacityLimiter(concurrency) if sync_handler else None
        if handler is not None:
            handler = as_async_handler(
                handler, name="handler", sync=sync_handler, limiter=self._handler_limiter
            )
        if batch_handler is not None:
            batch_handler = as_async_handler(
                batch_handler, name="batch_handler", sync=sync_handler,
                limiter=self._handler_limiter,
            )  # fmt: skip
        if sync_handler and handler is None and batch_handler is None:
            raise ConfigError("sync_handler=True needs a handler or a batch_handler")
        super().__init__(
            kind="push-consumer", group=wrap(namespace, group), namesrv=namesrv, instance=instance,
            ssl_context=ssl_context, credentials=credentials, shutdown_timeout=shutdown_timeout,
        )  # fmt: skip
        if consume_from is ConsumeFrom.TIMESTAMP and consume_timestamp_ms is None:
            consume_timestamp_ms = int((time.time() - 1800) * 1000)  # Java: 30 minutes ago
        self.model = model
        self.orderly = orderly
        self.handler = handler
        self.batch_handler = batch_handler
        self.consume_from = consume_from
        self.consume_timestamp_ms = consume_timestamp_ms
        self.strategy = strategy
        self.concurrency = concurrency
        self.consume_batch_size = consume_batch_size
        self.pull_batch_size = pull_batch_size
        self.max_cached_messages = max_cached_messages
        self.max_cached_bytes = max_cached_bytes
        self.max_cached_messages_per_topic = max_cached_messages_per_topic
        self.max_cached_bytes_per_topic = max_cached_bytes_per_topic
        self.max_span = max_span
        # Java: 16 in concurrent mode, unbounded (Integer.MAX_VALUE) in orderly mode
        if max_reconsume_times is None:
            max_reconsume_times = 2**31 - 1 if orderly else 16
        self.max_reconsume_times = max_reconsume_times
        self.retry_delay_level = retry_delay_level
        self.local_retry_delay = local_retry_delay
        self.suspend_delay = suspend_delay
        self.consume_timeout = consume_timeout
        self.rebalance_interval = rebalance_interval
        self.lock_interval = lock_interval
        self.persist_interval = persist_interval
        self.pull_suspend = pull_suspend
        self.request_timeout = request_timeout
        self.on_rebalance = on_rebalance
        self._subscriptions = {
            wrap(namespace, t): Subscription.of(wrap(namespace, t), e)
            for t, e in subscriptions.items()
        }
        self.retry_topic = f"%RETRY%{self.group}"
        if model is MessageModel.CLUSTERING:
            self._subscriptions[self.retry_topic] = Subscription.parse(self.retry_topic)
        self._sub_version = time.time_ns() // 1_000_000
        self.offsets: OffsetStore = (
            RemoteOffsetStore(self._instance, self.group)
            if model is MessageModel.CLUSTERING
            else LocalOffsetStore(
                offset_dir or Path.home() / ".rocketmq_actors" / "offsets", self.group
            )
        )
        self._queues: dict[MessageQueue, _Owned] = {}
        self._missing: set[str] = set()  # subscribed topics with no route yet
        self._rebalance_now = anyio.Event()
        self._rebalance_lock = anyio.Lock()
        self._flow = anyio.Event()
        self._tg: TaskGroup | None = None
        self._work: WorkQueue[tuple[ProcessQueue, list[MessageExt]]] | None = None
        self._workers: list[_Worker] = []
        self._slots = anyio.Semaphore(concurrency)  # orderly: handlers running at once
        self._stopping = False
        self._in_flight = 0
        self._idle = anyio.Event()
        self._started_ms = 0
        # iteration mode (no handler): deliveries pass one at a time to ``async for``
        self._deliveries: tuple[MemoryObjectSendStream[_Delivery],
                                MemoryObjectReceiveStream[_Delivery]] | None = None  # fmt: skip
        self._current: _Delivery | None = None
        self._tracing = Tracing(self.group) if tracing else None
        self.consumed = 0
        self.failed = 0
        self._failure_log = FailureLog()
        self._ok_series = SeriesKeys(  # topic -> (messages consumed, handler seconds)
            lambda topic: (
                METRICS.key("rocketmq_consume_total", group=self.group, topic=topic, result="ok"),
                METRICS.key("rocketmq_consume_seconds", group=self.group, topic=topic),
            )
        )

    @property
    def _locking(self) -> bool:
        return self.orderly and self.model is MessageModel.CLUSTERING

    def assigned(self) -> list[MessageQueue]:
        """The queues this member consumes now."""
        return sorted(self._queues)

    # ---- lifecycle ----------------------------------------------------------------------

    async def _open(self, stack: AsyncExitStack) -> None:
        self._stopping = False
        self._started_ms = time.time_ns() // 1_000_000
        await self._join(
            stack,
            lambda: self._instance.register_consumer(self.group, self.mailbox, self._consumer_data),
            self._instance.unregister_consumer,
        )
        if self._locking:  # runs after the offsets are persisted
            stack.push_async_callback(self._unlock_all)
        stack.push_async_callback(self.offsets.persist_on_close)  # after every handler has stopped
        if self.handler is None and self.batch_handler is None:
            self._deliveries = anyio.create_memory_object_stream[_Delivery](0)
            stack.callback(self._deliveries[0].close)
            stack.callback(self._deliveries[1].close)
        self._work = work = WorkQueue[tuple[ProcessQueue, list[MessageExt]]](self.concurrency * 2)
        stack.callback(work.close)
        self._tg = tg = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(tg.cancel_scope.cancel)
        if not self.orderly:
            self._workers = []
            for _ in range(self.concurrency):
                tg.start_soon(self._worker, work)
            if self.consume_timeout is not None:
                tg.start_soon(self._sweep_timeouts, self.consume_timeout)
        tg.start_soon(self._serve_mailbox)
        for topic in self._subscriptions:
            try:
                await self._instance.routes.get(topic)
            except TopicNotFound:
                log.info("consumer.topic_not_found", topic=topic, group=self.group)
        await self._instance.heartbeat.beat()  # the brokers know the group before we pull
        await self._rebalance()
        tg.start_soon(self._rebalance_loop)
        tg.start_soon(self._persist_loop)
        if self._locking:
            tg.start_soon(self._lock_loop)
        log.info("consumer.started", group=self.group, model=self.model.value,
                 orderly=self.orderly, queues=len(self._queues))  # fmt: skip

    async def _closing(self) -> None:
        """Stop pulling, then wait (bounded) for handlers in flight; their offsets are kept and
        persisted once the task group has stopped."""
        self._stopping = True
        for owned in self._queues.values():
            owned.pull_scope.cancel()
            owned.pq.wake()
        if self._deliveries is not None:  # what ``async for`` did not finish stays unconsumed
            self._deliveries[1].close()
            if self._current is not None:
                self._current.abandoned = True
                self._current.done.set()
                self._current = None
        # handlers in flight get the stop deadline, less what persisting the offsets needs
        reserve = min(self.request_timeout, self._time_left() / 2)
        with anyio.move_on_after(max(0.0, self._time_left() - reserve)) as scope:
            while self._in_flight:
                self._idle = anyio.Event()
                await self._idle.wait()
        if scope.cancelled_caught:
            log.warning("consumer.drain_timeout", group=self.group, in_flight=self._in_flight)
        log.info("consumer.stopping", group=self.group, consumed=self.consumed,
                 failed=self.failed)  # fmt: skip

    async def _unlock_all(self) -> None:
        if self._queues:
            await unlock_queues(self._instance, self.group, list(self._queues))

    def _consumer_data(self) -> ConsumerData:
        return ConsumerData(
            group=self.group,
            consume_type="CONSUME_PASSIVELY",
            message_model=self.model.value,
            consume_from_where=self.consume_from.value,
            subscriptions=tuple(s.wire(self._sub_version) for s in self._subscriptions.values()),
        )

    # ---- iteration ----------------------------------------------------------------------

    def __aiter__(self) -> PushConsumer:
        if self._deliveries is None:
            raise TypeError("this consumer has a handler (iterate a consumer created without one)")
        return self

    async def __anext__(self) -> MessageExt:
        """The next message; the previous one counts as consumed now (unless it was handed to
        :meth:`reconsume_later`)."""
        self._check_running()
        assert self._deliveries is not None
        if self._current is not None:
            self._current.done.set()
            self._current = None
        try:
            delivery = await self._deliveries[1].receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None
        self._current = delivery
        return delivery.message

    def reconsume_later(self, message: MessageExt) -> None:
        """Hand the message ``async for`` is on back: it is retried as a handler failure is."""
        if self._current is None or self._current.message is not message:
            raise ValueError("only the message the iteration is on can be handed back")
        self._current.failed = True
        self._current.done.set()
        self._current = None

    async def _deliver(self, messages: list[MessageExt]) -> None:
        assert self._deliveries is not None
        for message in messages:
            delivery = _Delivery(message)
            try:
                await self._deliveries[0].send(delivery)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                raise _Abandoned from None
            await delivery.done.wait()
            if delivery.abandoned:
                raise _Abandoned
            if delivery.failed:
                raise _ReconsumeLater

    # ---- rebalance ----------------------------------------------------------------------

    async def _rebalance_loop(self) -> None:
        # a subscribed topic without a route yet (created after we started, or %RETRY% before
        # the first failure) is looked up again after 1, 2, 4 ... s, up to the interval
        missing_wait = 1.0
        while True:
            wait = self.rebalance_interval
            if self._missing:
                wait, missing_wait = min(wait, missing_wait), missing_wait * 2
            else:
                missing_wait = 1.0
            with anyio.move_on_after(wait):
                await self._rebalance_now.wait()
            self._rebalance_now = anyio.Event()
            await self._rebalance()

    async def _rebalance(self) -> None:
        async with self._rebalance_lock:
            if self._stopping:
                return
            wanted: set[MessageQueue] = set()
            for topic in self._subscriptions:
                try:
                    mine = await allocated(
                        self._instance, self.group, topic, self.strategy,
                        broadcasting=self.model is MessageModel.BROADCASTING,
                    )  # fmt: skip
                except RocketMQError as exc:  # try again at the next rebalance
                    if isinstance(exc, TopicNotFound):
                        self._missing.add(topic)
                    log.info("consumer.rebalance_skipped", topic=topic, error=str(exc))
                    wanted |= {q for q in self._queues if q.topic == topic}
                    continue
                self._missing.discard(topic)
                wanted |= set(mine)
            for queue in [q for q in self._queues if q not in wanted]:
                await self._release(queue)
            new = sorted(wanted - set(self._queues))
            if new and self._locking:  # orderly: a queue is started only once it is locked
                locked = await lock_queues(self._instance, self.group, new)
                for queue in new:
                    if queue not in locked:
                        log.info("consumer.lock_not_granted", queue=str(queue))
                new = [q for q in new if q in locked]
            for queue in new:
                try:
                    start = await self._start_offset(queue)
                except RocketMQError as exc:
                    log.info("consumer.start_offset_failed", queue=str(queue), error=str(exc))
                    if self._locking:
                        await unlock_queues(self._instance, self.group, [queue])
                    continue
                self._start(queue, start, locked=self._locking)
            if new:
                log.info("consumer.rebalanced", group=self.group, queues=len(self._queues))
            if self.on_rebalance is not None:
                self.on_rebalance(self.assigned())

    async def _start_offset(self, queue: MessageQueue) -> int:
        committed = await self.offsets.fetch(queue)
        if committed is not None and committed >= 0:
            return committed
        retry = queue.topic.startswith("%RETRY%")
        if self.consume_from is ConsumeFrom.FIRST_OFFSET or (
            retry and self.consume_from is ConsumeFrom.LAST_OFFSET
        ):
            return 0
        if self.consume_from is ConsumeFrom.TIMESTAMP and not retry:
            assert self.consume_timestamp_ms is not None
            return await offset_for_time(self._instance, queue, self.consume_timestamp_ms)
        return await max_offset(self._instance, queue)

    def _start(self, queue: MessageQueue, offset: int, *, locked: bool) -> ProcessQueue:
        assert self._tg is not None
        pq = ProcessQueue(queue, offset)
        if locked:
            pq.locked, pq.lock_time = True, time.monotonic()
        scope = anyio.CancelScope()
        self._queues[queue] = _Owned(pq, scope)
        self._tg.start_soon(self._pull_loop, pq, scope)
        if self.orderly:
            self._tg.start_soon(self._consume_orderly, pq)
        return pq

    async def _stop(self, queue: MessageQueue) -> ProcessQueue:
        """Stop pulling and consuming ``queue``; once this returns, no handler runs on it."""
        owned = self._queues.pop(queue)
        owned.pq.dropped = True
        owned.pull_scope.cancel()
        owned.pq.wake()
        if self.orderly:  # wait for the handler in flight, so that the next owner comes after
            async with owned.pq.consume_lock:
                pass
        return owned.pq

    async def _release(self, queue: MessageQueue) -> None:
        await self._stop(queue)
        await self.offsets.persist([queue], confirmed=True)
        self.offsets.remove(queue)
        if self._locking:
            await unlock_queues(self._instance, self.group, [queue])
        log.info("consumer.queue_released", queue=str(queue))

    async def _lock_loop(self) -> None:
        """Renew the locks of the queues this member consumes in order."""
        while True:
            await anyio.sleep(self.lock_interval)
            await self._renew_locks()

    async def _renew_locks(self) -> None:
        async with self._rebalance_lock:  # never renews a lock a release is giving back
            owned = dict(self._queues)
            if not owned or self._stopping:
                return
            granted = await lock_queues(self._instance, self.group, owned)
        now = time.monotonic()
        for queue, entry in owned.items():
            if queue in granted:
                entry.pq.locked, entry.pq.lock_time = True, now
                entry.pq.wake()
            elif entry.pq.locked:
                entry.pq.locked = False
                log.warning("consumer.lock_lost", queue=str(queue))

    # ---- pulling ------------------------------------------------------------------------

    def _over_limits(self, pq: ProcessQueue) -> bool:
        max_count, max_bytes = self.max_cached_messages, self.max_cached_bytes
        topic_count, topic_bytes = (
            self.max_cached_messages_per_topic,
            self.max_cached_bytes_per_topic,
        )
        if topic_count is not None or topic_bytes is not None:
            share = max(1, self._owned_of(pq.queue.topic))  # Java: topic limit / owned queues
            if topic_count is not None:
                max_count = min(max_count, max(1, topic_count // share))
            if topic_bytes is not None:
                max_bytes = min(max_bytes, max(1, topic_bytes // share))
        return (
            pq.count >= max_count
            or pq.cached_bytes >= max_bytes
            or (not self.orderly and pq.span > self.max_span)
        )

    async def _pull_loop(self, pq: ProcessQueue, scope: anyio.CancelScope) -> None:
        assert self._work is not None
        subscription = self._subscriptions[pq.queue.topic]
        with scope:
            while not pq.dropped:
                if self._over_limits(pq) or (self._locking and not pq.locked):
                    # flow control (or an orderly queue whose lock lapsed): wait, look again
                    if self._flow.is_set():
                        self._flow = anyio.Event()
                    with anyio.move_on_after(1.0):
                        await self._flow.wait()
                    continue
                result = await pull_or_back_off(self, pq.queue, pq.next_offset, subscription)
                if result is None:
                    continue
                pq.last_pull = time.monotonic()
                committed = self.offsets.read(pq.queue)
                behind = result.max_offset - (pq.next_offset if committed is None else committed)
                METRICS.set("rocketmq_consumer_lag", behind, group=self.group,
                            topic=pq.queue.topic, broker=pq.queue.broker_name,
                            queue=pq.queue.queue_id)  # fmt: skip
                if result.status is PullStatus.OFFSET_ILLEGAL:
                    # out of range, or reset on the broker (5.x server-side reset): start over
                    # there with a fresh process queue (Java drops the queue the same way)
                    log.warning("consumer.offset_moved", queue=str(pq.queue),
                                offset=pq.next_offset, next=result.next_offset)  # fmt: skip
                    assert self._tg is not None
                    self._tg.start_soon(self._move, {pq.queue: result.next_offset})
                    return
                pq.next_offset = result.next_offset
                if result.status is not PullStatus.FOUND:
                    if pq.count == 0:  # nothing in flight: the queue is consumed up to here
                        self.offsets.update(pq.queue, result.next_offset)
                    continue
                fresh = pq.put(list(result.messages))
                if not self.orderly:
                    work, size = self._work, self.consume_batch_size
                    for i in range(0, len(fresh), size):
                        item = (pq, fresh[i : i + size])
                        if not work.offer(item):
                            await work.put(item)

    # ---- consuming ----------------------------------------------------------------------

    def _present(self, message: MessageExt) -> MessageExt:
        """Retried messages come from ``%RETRY%<group>``: show them under their topic."""
        if message.topic.startswith("%RETRY%"):  # (properties are parsed only then)
            original = message.properties.get(Property.RETRY_TOPIC)
            if original:
                message.topic = original
        return message

    async def _invoke(self, messages: list[MessageExt], *, timed: bool = True) -> bool | None:
        """Run the handler (or hand the messages to ``async for``); True when consumed, False
        when it failed, None when left unconsumed by a closing ``async for``. ``timed``: bound
        it by ``consume_timeout`` here (the concurrent workers are bounded by the sweeper)."""
        self._in_flight += 1
        began = time.monotonic()
        try:
            if timed and self.consume_timeout is not None:
                with anyio.fail_after(self.consume_timeout):
                    await self._call_handler(messages)
            else:
                await self._call_handler(messages)
            self.consumed += len(messages)
            topic = messages[0].topic
            series = self._ok_series.get(topic) or self._ok_series.add(topic)
            METRICS.count_and_observe(*series, time.monotonic() - began, len(messages))
            return True
        except _Abandoned:
            return None
        except Exception as exc:
            self._failed(messages, exc)
            return False
        except anyio.get_cancelled_exc_class() as exc:
            if anyio.current_effective_deadline() == -math.inf:
                raise  # cancelled for real: the consumer stops, or the handler timed out
            self._failed(messages, exc)  # a stray cancellation from the handler's own code
            return False
        except (KeyboardInterrupt, SystemExit) as exc:
            log.warning("consumer.handler_interrupted", group=self.group, error=repr(exc),
                        **describe(messages[0]))  # fmt: skip
            self._fail(exc)  # the consumer stops and raises it; these stay unconsumed
            return None
        finally:
            self._in_flight -= 1
            if not self._in_flight:
                self._idle.set()

    def _call_handler(self, messages: list[MessageExt]) -> Awaitable[None]:
        # Plain functions that return the handler's own awaitable: a message passes through
        # no coroutine frames of ours between the worker's and the handler's.
        presented = [self._present(m) for m in messages]
        if self._tracing is not None:
            return self._traced(presented)
        return self._dispatch(presented)

    async def _traced(self, presented: list[MessageExt]) -> None:
        tracing = self._tracing
        assert tracing is not None
        with tracing.process(presented[0]):  # a span per call, child of the first sender's
            await self._dispatch(presented)

    def _dispatch(self, presented: list[MessageExt]) -> Awaitable[None]:
        if self.batch_handler is not None:
            return self.batch_handler(presented)
        if self.handler is not None:
            # one message per call: a consume_batch_size above 1 needs a batch_handler (checked
            # when the consumer is built), so a per-message handler never gets more
            (message,) = presented
            return self.handler(message)
        return self._deliver(presented)

    def _failed(self, messages: list[MessageExt], exc: BaseException) -> None:
        self.failed += len(messages)
        first = messages[0]
        METRICS.inc("rocketmq_consume_total", len(messages), group=self.group,
                    topic=first.topic, result="failed")  # fmt: skip
        suppressed = self._failure_log.admit((first.topic, first.broker_name, first.queue_id))
        if suppressed is not None:
            log.warning("consumer.handler_failed", group=self.group, count=len(messages),
                        error=repr(exc), suppressed=suppressed, exc_info=exc,
                        **describe(first))  # fmt: skip

    async def _worker(self, work: WorkQueue[tuple[ProcessQueue, list[MessageExt]]]) -> None:
        """Consume batches off the work channel. A handler running past ``consume_timeout`` is
        cancelled by the sweeper through this worker's cancel scope (one scope per worker, not
        one per message: a scope per message costs a third of the throughput)."""
        me = _Worker()
        self._workers.append(me)
        while True:
            current: tuple[ProcessQueue, list[MessageExt]] | None = None
            with anyio.CancelScope() as me.scope:
                while True:
                    try:
                        pq, messages = await work.get()
                    except anyio.EndOfStream:
                        return
                    if pq.dropped or self._stopping:
                        continue
                    current = (pq, messages)
                    me.started, me.busy = time.monotonic(), True
                    outcome = await self._invoke(messages, timed=False)
                    me.busy = False
                    await self._settle(pq, messages, outcome)
                    current = None
            me.busy = False  # cancelled by the sweeper: the handler timed out
            if current is not None:
                self._failed(current[1], TimeoutError("consume_timeout"))
                await self._settle(*current, False)

    async def _sweep_timeouts(self, timeout: float) -> None:
        """Cancel handlers that have run longer than ``timeout`` (checked every
        min(1 s, timeout / 4))."""
        while True:
            await anyio.sleep(min(1.0, timeout / 4))
            now = time.monotonic()
            for worker in self._workers:
                if worker.busy and now - worker.started > timeout and worker.scope is not None:
                    worker.scope.cancel()

    async def _settle(
        self, pq: ProcessQueue, messages: list[MessageExt], outcome: bool | None
    ) -> None:
        """After a handler: commit (success), send back or keep to retry here (failure)."""
        if outcome is None:  # left in the process queue: the offset stays before them
            return
        done = messages
        if not outcome and self.model is MessageModel.CLUSTERING:
            sent = [await self._send_back(m, self.retry_delay_level) for m in messages]
            done = [m for m, ok in zip(messages, sent, strict=True) if ok]
            kept = [m for m, ok in zip(messages, sent, strict=True) if not ok]
            if kept:  # they hold the offset back, and are consumed again here, later
                assert self._tg is not None
                self._tg.start_soon(self._retry_locally, pq, kept)
        if done:
            for message in done:
                offset = pq.remove(message)  # (the offset safe to commit after the last)
        else:
            offset = pq.commit_offset()
        if not pq.dropped:
            self.offsets.update(pq.queue, offset)
        self._flow.set()

    async def _retry_locally(self, pq: ProcessQueue, messages: list[MessageExt]) -> None:
        await anyio.sleep(self.local_retry_delay)
        if not pq.dropped and not self._stopping and self._work is not None:
            await self._work.put((pq, messages))

    async def _consume_orderly(self, pq: ProcessQueue) -> None:
        """One queue, in offset order: take a batch, consume it under the queue's consume lock,
        commit it or suspend the queue and consume the same batch again."""
        while not pq.dropped and not self._stopping:
            if self._locking and (not pq.locked or time.monotonic() - pq.lock_time > LOCK_MAX_LIVE):
                with anyio.move_on_after(self.suspend_delay):
                    await pq.wait_arrival()  # woken by a renewal, a new message or a stop
                continue
            async with self._slots, pq.consume_lock:
                if pq.dropped or self._stopping:
                    return
                batch = pq.take(self.consume_batch_size)
                if not batch:
                    pq.rollback_taken()
                else:
                    ok = await self._invoke(batch)
                    if ok is False:
                        ok = await self._give_up_on(batch)
                    if ok:
                        self.offsets.update(pq.queue, pq.commit_taken())
                        pq.last_consume = time.monotonic()
                        self._flow.set()
                        continue
                    pq.rollback_taken()
            with anyio.move_on_after(self.suspend_delay if batch else None):
                await pq.wait_arrival()

    async def _give_up_on(self, batch: list[MessageExt]) -> bool:
        """Orderly failure: messages past ``max_reconsume_times`` go to the DLQ; True when the
        batch may be committed (Java's checkReconsumeTimes)."""
        suspend = False
        for message in batch:
            if message.reconsume_times >= self.max_reconsume_times and (
                self.model is MessageModel.BROADCASTING or await self._send_back(message, _DLQ_NOW)
            ):
                continue
            suspend = True
            message.reconsume_times += 1
        return not suspend

    async def _send_back(self, message: MessageExt, delay_level: int) -> bool:
        """CONSUMER_SEND_MSG_BACK: the broker redelivers later (or dead-letters)."""
        queue = MessageQueue(message.topic, message.broker_name, message.queue_id)
        try:
            addr = await self._instance.routes.broker_addr(queue, master_only=True)
            header = ConsumerSendMsgBackRequestHeader(
                offset=message.commit_log_offset,
                group=self.group,
                delay_level=delay_level,
                origin_msg_id=message.msg_id,
                origin_topic=message.topic,
                max_reconsume_times=self.max_reconsume_times,
                broker_name=message.broker_name,
            )
            reply = await self._instance.request(
                addr, RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, header.to_ext())
            )
        except RocketMQError as exc:
            log.warning("consumer.send_back_failed", msg_id=message.msg_id, error=str(exc))
            return False
        if reply.code != ResponseCode.SUCCESS:
            log.warning("consumer.send_back_refused", msg_id=message.msg_id, code=reply.code,
                        remark=reply.remark)  # fmt: skip
            return False
        if self.model is MessageModel.CLUSTERING and not self._owned_of(self.retry_topic):
            self._rebalance_now.set()  # the broker has just created %RETRY%<group>: pull it
        return True

    def _owned_of(self, topic: str) -> int:
        """How many of ``topic``'s queues this member consumes now."""
        return sum(1 for queue in self._queues if queue.topic == topic)

    async def _persist_loop(self) -> None:
        while True:
            await anyio.sleep(self.persist_interval)
            await self.offsets.persist(list(self._queues))

    # ---- broker requests ----------------------------------------------------------------

    async def _serve_mailbox(self) -> None:
        assert self._tg is not None
        async for inbound in self.mailbox:
            code = inbound.command.code
            try:
                if code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED:
                    log.info("consumer.ids_changed", group=self.group)
                    self._rebalance_now.set()
                elif code == RequestCode.RESET_CONSUMER_CLIENT_OFFSET:
                    # one-way: a bad request is logged (the except below), never answered
                    topic = ResetOffsetRequestHeader.from_ext(inbound.command.ext_fields).topic
                    table = decode_offset_table(inbound.command.body)
                    self._tg.start_soon(self._reset_offsets, topic, table)
                elif code == RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT:
                    ext = inbound.command.ext_fields
                    topic = GetConsumerStatusRequestHeader.from_ext(ext).topic
                    inbound.reply(body=encode_consumer_status(self._offsets_of(topic)))
                elif code == RequestCode.GET_CONSUMER_RUNNING_INFO:
                    inbound.reply(body=self._running_info())
                elif code == RequestCode.CONSUME_MESSAGE_DIRECTLY:
                    self._tg.start_soon(self._consume_directly, inbound)
                else:
                    inbound.reply(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, remark=f"code {code}")
            except (ProtocolError, ValueError) as exc:
                log.warning("consumer.bad_broker_request", code=code, error=str(exc))
                inbound.reply(ResponseCode.SYSTEM_ERROR, remark=f"bad request: {exc}")

    def _offsets_of(self, topic: str) -> dict[MessageQueue, int]:
        out = {}
        for queue in self._queues:
            offset = self.offsets.read(queue)
            if queue.topic == topic and offset is not None:
                out[queue] = offset
        return out

    async def _reset_offsets(self, topic: str, table: Mapping[MessageQueue, int]) -> None:
        """RESET_CONSUMER_CLIENT_OFFSET (220): restart the topic's owned queues at the offsets
        the broker computed (e.g. by timestamp), and commit them."""
        moved = await self._move({q: o for q, o in table.items() if q.topic == topic})
        log.info("consumer.offsets_reset", topic=topic, queues=len(moved))

    async def _move(self, targets: Mapping[MessageQueue, int]) -> list[MessageQueue]:
        """Restart the owned queues among ``targets`` at the given offsets (fresh process
        queues, orderly locks kept) and commit those offsets."""
        async with self._rebalance_lock:
            if self._stopping:
                return []
            moved = []
            for queue, offset in sorted(targets.items()):
                if queue not in self._queues:
                    continue
                old = await self._stop(queue)
                self.offsets.update(queue, offset, increase_only=False)
                pq = self._start(queue, offset, locked=old.locked)
                pq.lock_time = old.lock_time
                moved.append(queue)
            await self.offsets.persist(moved, confirmed=True)
            return moved

    def _running_info(self) -> bytes:
        now = time.monotonic()
        queues: dict[MessageQueue, dict[str, Any]] = {}
        for queue, owned in sorted(self._queues.items()):
            pq = owned.pq
            lowest = pq.lowest
            queues[queue] = {
                "commitOffset": self.offsets.read(queue) or 0,
                "cachedMsgMinOffset": lowest if lowest is not None else 0,
                "cachedMsgMaxOffset": pq.highest if lowest is not None else 0,
                "cachedMsgCount": pq.count,
                "cachedMsgSizeInMiB": pq.cached_bytes // (1024 * 1024),
                "locked": pq.locked,
                "lastLockTimestamp": _wall_ms(pq.lock_time, now) if pq.lock_time else 0,
                "droped": pq.dropped,
                "lastPullTimestamp": _wall_ms(pq.last_pull, now),
                "lastConsumeTimestamp": _wall_ms(pq.last_consume, now) if pq.last_consume else 0,
            }
        properties = {
            "PROP_NAMESERVER_ADDR": ";".join(self._instance.namesrv.addrs),
            "PROP_CONSUME_TYPE": "CONSUME_PASSIVELY",
            "PROP_CONSUME_ORDERLY": str(self.orderly).lower(),
            "PROP_THREADPOOL_CORE_SIZE": str(self.concurrency),
            "PROP_CONSUMER_START_TIMESTAMP": str(self._started_ms),
            "messageModel": self.model.value,
            "consumeFromWhere": self.consume_from.value,
            "consumed": str(self.consumed),
            "failed": str(self.failed),
            "inFlight": str(self._in_flight),
            "clientVersion": "rocketmq-actors",
            "pid": str(os.getpid()),
        }
        return encode_running_info(
            properties=properties,
            subscriptions=[s.wire(self._sub_version) for s in self._subscriptions.values()],
            queue_offsets=queues,
        )

    async def _consume_directly(self, inbound: Inbound) -> None:
        """CONSUME_MESSAGE_DIRECTLY (309): run the handler on one message the broker sends,
        outside the queues (no offset is committed), and report how it went."""
        if self.handler is None and self.batch_handler is None:
            inbound.reply(ResponseCode.SYSTEM_ERROR, remark="this consumer has no handler")
            return
        try:
            messages = decode_messages(inbound.command.body)
        except ProtocolError as exc:
            inbound.reply(ResponseCode.SYSTEM_ERROR, remark=f"bad message: {exc}")
            return
        if len(messages) != 1:
            inbound.reply(ResponseCode.SYSTEM_ERROR, remark="expected exactly one message")
            return
        message = messages[0]
        message.broker_name = inbound.command.ext_fields.get("brokerName", "")
        began = time.monotonic()
        ok = await self._invoke([message])
        spent = int((time.monotonic() - began) * 1000)
        result = "CR_SUCCESS" if ok else "CR_THROW_EXCEPTION"
        log.info("consumer.consumed_directly", msg_id=message.msg_id, result=result)
        inbound.reply(body=encode_consume_directly_result(
            result=result, remark="" if ok else "handler failed", spent_ms=spent,
            order=self.orderly,
        ))  # fmt: skip


def _wall_ms(monotonic: float, now: float) -> int:
    return int((time.time() - (now - monotonic)) * 1000)
