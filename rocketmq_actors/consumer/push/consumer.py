"""PushConsumer: a consumer group member that pulls its share of queues and calls a handler.

    async def handle(message: ReceivedMessage[bytes]) -> None:
        ...                          # raising means "consume later" (retry)

    async with PushConsumer(namesrv="127.0.0.1:9876", group="billing",
                            subscriptions={"orders": "paid || refunded"}, handler=handle):
        await anyio.sleep_forever()

or, without a handler, iterate (a message counts as consumed when the loop asks for the next,
unless it was settled before with ``message.ack()`` / ``message.nack(delay=...)``, see
:mod:`.settlement`; ``value_deserializer`` makes ``message.value``, see :mod:`.message`):

    async with PushConsumer(namesrv=..., group="billing", subscriptions={"orders": "*"}) as c:
        async for message in c:
            ...

The consumer is a supervisor of actors, each in its own module:

* ``mailbox`` (:mod:`.requests`, :mod:`.push_requests`): the broker's requests for the group -
  rebalance now (40), reset offsets (220), consumer status (221), running info (307), consume
  one message directly (309);
* ``rebalancer`` (:mod:`.rebalancer`): which queues this member owns, every
  ``rebalance_interval`` and when the broker says the group changed;
* ``queues`` (:mod:`.queues`): one supervised actor per owned queue, registered by queue,
  pulling into its process queue under flow control;
* ``consume`` (:mod:`.concurrent` or :mod:`.orderly`): the handlers, and what a failure means;
* ``offsets``: the offset persister, every ``persist_interval`` (and on release and stop);
* ``locks`` (orderly, clustering): the broker-side queue locks, renewed every ``lock_interval``.

Each is restarted by its supervisor after an unexpected error; one that keeps failing stops the
consumer with :class:`~rocketmq_actors.errors.SupervisorGaveUp`, which ``async with`` raises.

Stopping takes at most ``shutdown_timeout``: pulling stops, handlers in flight get what is left
of it less the time reserved to persist offsets, then the offsets are persisted, orderly locks
released and the group unregistered. What a handler's outcome means: :mod:`.handlers`.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, Generic, cast

import anyio
from anyio.abc import TaskGroup, TaskStatus

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.cluster.member import MEMBER_POLICY, GroupMember
from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.consumer.core.brokercalls import check_subscription, max_offset
from rocketmq_actors.consumer.core.dispatch import BatchHandler, Dispatcher, Handler, async_handlers
from rocketmq_actors.consumer.core.lag import ConsumerLag
from rocketmq_actors.consumer.core.message import ReceivedMessage, T, deserialize
from rocketmq_actors.consumer.core.offsets import LocalOffsetStore, OffsetStore, RemoteOffsetStore
from rocketmq_actors.consumer.core.options import ConsumeFrom, MessageModel, check_push_options
from rocketmq_actors.consumer.core.options import max_reconsume_times as default_max_reconsume
from rocketmq_actors.consumer.core.process_queue import ProcessQueue
from rocketmq_actors.consumer.core.queues import QueueActor, QueueTable
from rocketmq_actors.consumer.core.rebalance import Strategy
from rocketmq_actors.consumer.core.rebalancer import Rebalancer
from rocketmq_actors.consumer.core.sendback import send_back
from rocketmq_actors.consumer.core.settlement import Delay
from rocketmq_actors.consumer.core.strategies import StrategyOption
from rocketmq_actors.consumer.core.subscriptions import (
    MessageSelector,
    Subscription,
    subscription_table,
)
from rocketmq_actors.consumer.push import requests as push_requests
from rocketmq_actors.consumer.push.concurrent import ConcurrentConsumeService
from rocketmq_actors.consumer.push.orderly import OrderlyConsumeService
from rocketmq_actors.consumer.push.ownership import Ownership
from rocketmq_actors.errors import ConfigError, TopicNotFound
from rocketmq_actors.logs import get_logger
from rocketmq_actors.names import wrap
from rocketmq_actors.producer.tracesend import trace_sender
from rocketmq_actors.protocol.acl import AclCredentials
from rocketmq_actors.protocol.bodies import ConsumerData, MessageQueue
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.runtime.signal import Signal
from rocketmq_actors.runtime.supervisor import ChildSpec, DynamicSupervisor, Restart
from rocketmq_actors.runtime.tree import Node
from rocketmq_actors.trace import hooks as rmq_trace
from rocketmq_actors.tracing import Tracing

__all__ = ["BatchHandler", "ConsumeFrom", "Handler", "MessageModel", "PushConsumer"]

log = get_logger("rocketmq_actors.consumer")


class PushConsumer(GroupMember, Generic[T]):
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
        strategy: StrategyOption = Strategy.AVG,
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
        instance_name: str | None = None,
        request_timeout: float = 3.0,
        ssl_context: ssl.SSLContext | None = None,
        credentials: AclCredentials | None = None,
        on_rebalance: Callable[[list[MessageQueue]], None] | None = None,
        tracing: bool = False,
        trace: bool = False,
        trace_topic: str | None = None,
        on_error: Callable[[BaseException], object] | None = None,
        value_deserializer: Callable[[bytes], T] | None = None,
    ) -> None:
        check_push_options(locals())
        handler, batch_handler = async_handlers(handler, batch_handler, sync=sync_handler,
                                                concurrency=concurrency)  # fmt: skip
        super().__init__(
            kind="push-consumer", group=wrap(namespace, group), namesrv=namesrv, instance=instance,
            client=ClientOptions(ssl_context=ssl_context, credentials=credentials,
                                 instance_name=instance_name, shutdown_timeout=shutdown_timeout,
                                 on_error=on_error),
        )  # fmt: skip
        if consume_from is ConsumeFrom.TIMESTAMP and consume_timestamp_ms is None:
            consume_timestamp_ms = int((time.time() - 1800) * 1000)  # Java: 30 minutes ago
        self.model, self.orderly, self.strategy = model, orderly, strategy
        self.handler, self.batch_handler = handler, batch_handler
        self.consume_from, self.consume_timestamp_ms = consume_from, consume_timestamp_ms
        self.concurrency, self.consume_batch_size = concurrency, consume_batch_size
        self.pull_batch_size, self.pull_suspend = pull_batch_size, pull_suspend
        self.max_cached_messages, self.max_cached_bytes = max_cached_messages, max_cached_bytes
        self.max_cached_messages_per_topic = max_cached_messages_per_topic
        self.max_cached_bytes_per_topic = max_cached_bytes_per_topic
        self.max_span = max_span
        self.max_reconsume_times = default_max_reconsume(max_reconsume_times, orderly)
        self.retry_delay_level, self.local_retry_delay = retry_delay_level, local_retry_delay
        self.suspend_delay, self.consume_timeout = suspend_delay, consume_timeout
        self.rebalance_interval, self.lock_interval = rebalance_interval, lock_interval
        self.persist_interval, self.request_timeout = persist_interval, request_timeout
        self.on_rebalance = on_rebalance
        self.value_deserializer = value_deserializer
        self._subscriptions = subscription_table(namespace, subscriptions)
        self.namespace = namespace
        self.retry_topic = f"%RETRY%{self.group}"
        if model is MessageModel.CLUSTERING:
            self._subscriptions[self.retry_topic] = Subscription.parse(self.retry_topic)
        self._sub_version = time.time_ns() // 1_000_000
        local_dir = offset_dir or Path.home() / ".rocketmq_actors" / "offsets"
        self.offsets: OffsetStore = (
            RemoteOffsetStore(self._instance, self.group)
            if model is MessageModel.CLUSTERING
            else LocalOffsetStore(local_dir, self._instance.client_id, self.group)
        )
        self.dispatcher = Dispatcher(
            self.group, handler=handler, batch_handler=batch_handler,
            consume_timeout=consume_timeout, fail=self._fail,
            tracing=Tracing(self.group, namespace=namespace, client_id=self._instance.client_id,
                            model=model.value.lower()) if tracing else None,
            namespace=namespace,
            msg_trace=rmq_trace.for_consumer(self._instance, self.group, namespace, trace,
                                             trace_topic, sender=trace_sender),
        )  # fmt: skip
        self.queues: QueueTable[QueueActor] = QueueTable(
            "queues", shutdown_timeout=shutdown_timeout
        )
        self.ownership = Ownership(self)
        self.lag = ConsumerLag(self, lambda q: max_offset(self._instance, q),
                               timeout=request_timeout)  # fmt: skip
        self.rebalancer = Rebalancer(
            self._instance, self.group, strategy=strategy,
            broadcasting=model is MessageModel.BROADCASTING, interval=rebalance_interval,
            topics=lambda: list(self._subscriptions), owned=lambda: list(self.queues),
            apply=self.ownership.apply,
        )  # fmt: skip
        self.service: ConcurrentConsumeService | OrderlyConsumeService = (
            OrderlyConsumeService(
                self, self.dispatcher, concurrency=concurrency,
                consume_batch_size=consume_batch_size, suspend_delay=suspend_delay,
                max_reconsume_times=self.max_reconsume_times, lock_interval=lock_interval,
                rebalance_lock=self.rebalancer.lock,
            ) if orderly else ConcurrentConsumeService(
                self, self.dispatcher, concurrency=concurrency,
                consume_batch_size=consume_batch_size, consume_timeout=consume_timeout,
                local_retry_delay=local_retry_delay,
            )
        )  # fmt: skip
        self._supervisor = DynamicSupervisor(
            f"push-consumer:{self.group}", MEMBER_POLICY, shutdown_timeout=shutdown_timeout
        )
        self._flow = Signal()
        self._stopping = False
        self._tg: TaskGroup | None = None
        self.started_ms = 0

    # ---- what the actors read ---------------------------------------------------------------

    @property
    def clustering(self) -> bool:
        return self.model is MessageModel.CLUSTERING

    @property
    def locking(self) -> bool:
        return self.orderly and self.model is MessageModel.CLUSTERING

    @property
    def stopping(self) -> bool:
        return self._stopping

    @property
    def sub_version(self) -> int:
        return self._sub_version

    @property
    def consumed(self) -> int:
        return self.dispatcher.consumed

    @property
    def failed(self) -> int:
        return self.dispatcher.failed

    def subscription(self, topic: str) -> Subscription:
        return self._subscriptions[topic]

    def subscriptions(self) -> list[Subscription]:
        return list(self._subscriptions.values())

    def assigned(self) -> list[MessageQueue]:
        """The queues this member consumes now."""
        return sorted(self.queues)

    def owned_queues(self) -> dict[MessageQueue, ProcessQueue]:
        return {actor.queue: actor.pq for actor in self.queues.actors()}

    def rebalance_now(self) -> None:
        self.rebalancer.trigger()

    def over_limits(self, pq: ProcessQueue) -> bool:
        max_count, max_bytes = self.max_cached_messages, self.max_cached_bytes
        per_count, per_bytes = self.max_cached_messages_per_topic, self.max_cached_bytes_per_topic
        if per_count is not None or per_bytes is not None:  # Java: topic limit / owned queues
            share = max(1, sum(1 for q in self.queues if q.topic == pq.queue.topic))
            if per_count is not None:
                max_count = min(max_count, max(1, per_count // share))
            if per_bytes is not None:
                max_bytes = min(max_bytes, max(1, per_bytes // share))
        return (
            pq.count >= max_count
            or pq.cached_bytes >= max_bytes
            or (not self.orderly and pq.span > self.max_span)
        )

    async def wait_flow(self) -> None:
        """Until a handler finished (or a second passed): room may have been made."""
        with anyio.move_on_after(1.0):
            await self._flow.wait()

    def flow_changed(self) -> None:
        self._flow.set()

    def deserialize(self, messages: Sequence[MessageExt]) -> None:
        if self.value_deserializer is not None:
            deserialize(messages, self.value_deserializer, self.group)

    async def accept(self, pq: ProcessQueue, fresh: list[MessageExt]) -> None:
        assert isinstance(self.service, ConcurrentConsumeService)
        await self.service.accept(pq, fresh)

    async def consume_orderly(self, pq: ProcessQueue) -> None:
        assert isinstance(self.service, OrderlyConsumeService)
        await self.service.consume(pq)

    async def send_back(self, message: MessageExt, delay_level: int) -> bool:
        ok = await send_back(self._instance, self.group, message, delay_level,
                             self.max_reconsume_times, namespace=self.namespace)  # fmt: skip
        if ok and self.clustering and not any(q.topic == self.retry_topic for q in self.queues):
            self.rebalancer.trigger()  # the broker has just created %RETRY%<group>: pull it
        return ok

    def offset_moved(self, queue: MessageQueue, next_offset: int) -> None:
        self.spawn(self.ownership.move, {queue: next_offset})

    def spawn(self, func: Callable[..., Coroutine[Any, Any, object]], *args: object) -> None:
        """Run a one-off task of the consumer's (a queue moved to another offset)."""
        if self._tg is not None and not self._stopping:
            self._tg.start_soon(func, *args)

    # ---- lifecycle ----------------------------------------------------------------------

    async def _open(self, stack: AsyncExitStack) -> None:
        self._stopping = False
        self.started_ms = time.time_ns() // 1_000_000
        await self._join(
            stack,
            lambda: self._instance.register_consumer(self.group, self.mailbox, self._consumer_data),
            self._instance.unregister_consumer,
        )
        if self.locking:  # runs after the offsets are persisted
            stack.push_async_callback(self.ownership.unlock_held)
        stack.push_async_callback(self.offsets.persist_on_close)  # after every handler stopped
        stack.callback(self.lag.forget)  # once the queue actors (which record lag) stopped
        if self.dispatcher.deliveries is not None:
            stack.callback(self.dispatcher.deliveries.dispose)
        if isinstance(self.service, ConcurrentConsumeService):
            stack.callback(self.service.close)  # once its workers are gone
        await stack.enter_async_context(self.queues.supervisor)
        supervisor = await stack.enter_async_context(self._supervisor)
        self._tg = await stack.enter_async_context(anyio.create_task_group())  # one-off tasks
        stack.callback(self._tg.cancel_scope.cancel)
        server = push_requests.server(self)
        await supervisor.start_child(ChildSpec("mailbox", server.run, Restart.PERMANENT,
                                               kind="mailbox"))  # fmt: skip
        if (msg_trace := self.dispatcher.msg_trace) is not None:  # message trace records
            await supervisor.start_child(msg_trace.dispatcher.child_spec())
        if isinstance(self.service, ConcurrentConsumeService):
            await supervisor.start_child(ChildSpec("consume", self.service.run, Restart.PERMANENT,
                                                   kind="consume-service"))  # fmt: skip
        for topic, subscription in self._subscriptions.items():
            try:
                await self._instance.routes.get(topic)
            except TopicNotFound:
                log.info("consumer.topic_not_found", topic=topic, group=self.group)
                continue
            await check_subscription(self._instance, self.group, subscription.wire(0))
        await self._instance.heartbeat.beat()  # the brokers know the group before we pull
        await self.rebalancer.rebalance()
        await supervisor.start_child(ChildSpec("rebalancer", self.rebalancer.run,
                                               Restart.PERMANENT, kind="rebalancer"))  # fmt: skip
        await supervisor.start_child(ChildSpec("offsets", self._persist, Restart.PERMANENT,
                                               kind="offset-persister"))  # fmt: skip
        if isinstance(self.service, OrderlyConsumeService) and self.locking:
            keeper = self.service.lock_keeper
            await supervisor.start_child(ChildSpec("locks", keeper.run, Restart.PERMANENT,
                                                   kind="lock-keeper"))  # fmt: skip
        log.info("consumer.started", group=self.group, model=self.model.value,
                 orderly=self.orderly, queues=len(self.queues))  # fmt: skip

    async def _closing(self) -> None:
        """Stop pulling, then wait (bounded) for handlers in flight; their offsets are kept and
        persisted once the actors have stopped."""
        self._stopping = True
        if self.dispatcher.msg_trace is not None:  # the trace so far (while the actors run)
            await self.dispatcher.msg_trace.dispatcher.flush(self._time_left() * 0.3)
        self.rebalancer.stop()
        self.ownership.held = list(self.queues)  # their locks go back once the actors stopped
        for actor in self.queues.actors():
            actor.stop_pulling()
        self.lag.forget()  # (and again once the actors are gone: _open)
        if self.dispatcher.deliveries is not None:  # what ``async for`` did not finish stays
            self.dispatcher.deliveries.close()
        # handlers in flight get the stop deadline, less what persisting the offsets needs
        reserve = min(self.request_timeout, self._time_left() / 2)
        with anyio.move_on_after(max(0.0, self._time_left() - reserve)) as scope:
            await self.dispatcher.wait_idle()
        if scope.cancelled_caught:
            log.warning("consumer.drain_timeout", group=self.group,
                        in_flight=self.dispatcher.in_flight)  # fmt: skip
        if self.dispatcher.msg_trace is not None:  # the last handlers' (if any: no wait else)
            await self.dispatcher.msg_trace.dispatcher.flush(max(0.0, self._time_left() - reserve))
        log.info("consumer.stopping", group=self.group, consumed=self.consumed,
                 failed=self.failed)  # fmt: skip

    async def _persist(self, *, task_status: TaskStatus[None]) -> None:
        """The offset persister actor."""
        task_status.started()
        while True:
            await anyio.sleep(self.persist_interval)
            await self.offsets.persist(list(self.queues))
            await self.lag.refresh()  # an idle consumer's lag gauge too: lag.py

    def _consumer_data(self) -> ConsumerData:
        return ConsumerData(
            group=self.group,
            consume_type="CONSUME_PASSIVELY",
            message_model=self.model.value,
            consume_from_where=self.consume_from.value,
            subscriptions=tuple(s.wire(self._sub_version) for s in self._subscriptions.values()),
        )

    # ---- iteration ----------------------------------------------------------------------

    def __aiter__(self) -> PushConsumer[T]:
        if self.dispatcher.deliveries is None:
            raise TypeError("this consumer has a handler (iterate a consumer created without one)")
        return self

    async def __anext__(self) -> ReceivedMessage[T]:
        """The next message; the previous one counts as consumed now (unless it was settled:
        ``ack``, ``nack``, :meth:`reconsume_later`)."""
        self._check_running()
        assert self.dispatcher.deliveries is not None
        return cast("ReceivedMessage[T]", await self.dispatcher.deliveries.next())

    def reconsume_later(self, message: MessageExt, delay: Delay | None = None) -> None:
        """Hand the message ``async for`` is on back: ``message.nack(delay)`` (see
        :mod:`.settlement` for ``delay``; None: ``retry_delay_level``)."""
        if self.dispatcher.deliveries is None:
            raise ConfigError("reconsume_later is for async for (a handler raises, or nacks)")
        self.dispatcher.deliveries.reconsume_later(message, delay)

    # ---- inspection ---------------------------------------------------------------------

    def describe(self) -> Node:
        children = list(self._supervisor.describe().children)
        children.append(self.queues.describe())
        children.append(self._instance.describe())
        return Node(name=self._describe(), kind="push-consumer", state=self.state.value,
                    last_error=repr(self.error) if self.error else None,
                    children=tuple(children))  # fmt: skip
