"""The push consumer's actor group: what :class:`~.consumer.PushConsumer` runs on, and what its
actors call (users never see it).

The group is a supervisor of actors, each in its own module:

* ``mailbox`` (:mod:`rocketmq_actors.cluster.requests`, :mod:`.requests`): the broker's
  requests for the group - rebalance now (40), reset offsets (220), consumer status (221),
  running info (307), consume one message directly (309);
* ``rebalancer`` (:mod:`..core.rebalancer`): which queues this member owns, every
  ``rebalance_interval`` and when the broker says the group changed; :mod:`.ownership`
  starts and releases them;
* ``queues`` (:mod:`..core.queues`): one supervised actor per owned queue, registered by
  queue, pulling into its process queue under flow control;
* ``consume`` (:mod:`.concurrent` or :mod:`.orderly`): the handlers, and what a failure means;
* ``offsets``: the offset persister, every ``persist_interval`` (and on release and stop);
* ``locks`` (orderly, clustering): the broker-side queue locks, renewed every ``lock_interval``.

Each is restarted by its supervisor after an unexpected error; one that keeps failing stops the
consumer with :class:`~rocketmq_actors.errors.SupervisorGaveUp`, which ``async with`` raises.
The collaborators receive the group as the narrow interfaces of :mod:`.ports` (and the
``*Owner`` protocols beside the consume services, the queue actors and the lag gauges).

Stopping takes at most ``shutdown_timeout``: pulling stops, handlers in flight get what is left
of it less the time reserved to persist offsets, then the offsets are persisted, orderly locks
released and the group unregistered. What a handler's outcome means: :mod:`..core.handlers`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup, TaskStatus

from rocketmq_actors.clientmetrics import client_metrics
from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.cluster.member import MEMBER_POLICY, GroupMember
from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.consumer.core.brokercalls import check_subscription, max_offset, max_offsets
from rocketmq_actors.consumer.core.dispatch import BatchHandler, Dispatcher, Handler
from rocketmq_actors.consumer.core.lag import ConsumerLag
from rocketmq_actors.consumer.core.message import deserialize
from rocketmq_actors.consumer.core.offsets import LocalOffsetStore, OffsetStore, RemoteOffsetStore
from rocketmq_actors.consumer.core.options import ConsumeFrom, MessageModel
from rocketmq_actors.consumer.core.options import max_reconsume_times as default_max_reconsume
from rocketmq_actors.consumer.core.process_queue import ProcessQueue
from rocketmq_actors.consumer.core.queues import QueueActor, QueueTable
from rocketmq_actors.consumer.core.rebalancer import Rebalancer
from rocketmq_actors.consumer.core.sendback import send_back
from rocketmq_actors.consumer.core.subscriptions import (
    MessageSelector,
    Subscription,
    subscription_table,
)
from rocketmq_actors.consumer.core.suspension import Suspension
from rocketmq_actors.consumer.push import flow
from rocketmq_actors.consumer.push import requests as push_requests
from rocketmq_actors.consumer.push.concurrent import ConcurrentConsumeService
from rocketmq_actors.consumer.push.options import PushOptions
from rocketmq_actors.consumer.push.orderly import OrderlyConsumeService
from rocketmq_actors.consumer.push.ownership import Ownership
from rocketmq_actors.consumer.push.poplane import check_broker_mode, pop_lane, pop_retry_topic
from rocketmq_actors.errors import ConfigError, TopicNotFound
from rocketmq_actors.hooks import Hooks
from rocketmq_actors.logs import get_logger
from rocketmq_actors.names import validate_topic, wrap
from rocketmq_actors.producer.tracesend import trace_sender
from rocketmq_actors.protocol.bodies import ConsumerData, MessageQueue
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.runtime.signal import Signal
from rocketmq_actors.runtime.supervisor import ChildSpec, DynamicSupervisor, Restart
from rocketmq_actors.runtime.tree import Node
from rocketmq_actors.trace import hooks as rmq_trace
from rocketmq_actors.tracing import Tracing

__all__ = ["PushGroup"]

log = get_logger("rocketmq_actors.consumer")


class PushGroup(GroupMember):
    def __init__(
        self,
        *,
        group: str,
        subscriptions: Mapping[str, str | MessageSelector],
        handler: Handler | None,
        batch_handler: BatchHandler | None,
        value_deserializer: Callable[[bytes], Any] | None,
        on_rebalance: Callable[[list[MessageQueue]], None] | None,
        namesrv: str | Sequence[str] | None,
        options: PushOptions,
        client: ClientOptions,
        instance: ClientInstance | None,
        hooks: Hooks | None = None,
    ) -> None:
        namespace = client.namespace
        super().__init__(kind="push-consumer", group=group, namesrv=namesrv,
                         instance=instance, client=client)  # fmt: skip
        self.options = options
        timestamp_ms = options.consume_timestamp_ms
        if options.consume_from is ConsumeFrom.TIMESTAMP and timestamp_ms is None:
            timestamp_ms = int((time.time() - 1800) * 1000)  # Java: 30 minutes ago
        self.consume_timestamp_ms = timestamp_ms
        # (what the queue actors and the pulls read, as the protocols they take name it)
        self.orderly = options.orderly
        self.pull_batch_size, self.pull_suspend = options.pull_batch_size, options.pull_suspend
        self.max_body_size = options.max_body_size
        self.request_timeout = client.request_timeout
        self.retry_delay_level = options.retry_delay_level
        self.max_reconsume_times = default_max_reconsume(options.max_reconsume_times,
                                                         options.orderly)  # fmt: skip
        self.on_rebalance = on_rebalance
        self.value_deserializer = value_deserializer
        self.namespace = namespace
        self._subscriptions = subscription_table(namespace, subscriptions)
        self.retry_topic = f"%RETRY%{self.group}"
        if self.clustering:
            self._subscriptions[self.retry_topic] = Subscription.parse(self.retry_topic)
        self._sub_version = time.time_ns() // 1_000_000
        local_dir = options.offset_dir or Path.home() / ".rocketmq_actors" / "offsets"
        self.offsets: OffsetStore = (
            RemoteOffsetStore(self._instance, self.group)
            if self.clustering
            else LocalOffsetStore(local_dir, self._instance.client_id, self.group)
        )
        model = options.model
        self.dispatcher = Dispatcher(
            self.group, handler=handler, batch_handler=batch_handler,
            consume_timeout=options.consume_timeout, fail=self._fail,
            tracing=Tracing(self.group, namespace=namespace, client_id=self._instance.client_id,
                            model=model.value.lower()) if client.tracing else None,
            namespace=namespace, hooks=hooks, metrics=client_metrics(client, self),
            msg_trace=rmq_trace.for_consumer(self._instance, self.group, namespace, client.trace,
                                             client.trace_topic, sender=trace_sender),
        )  # fmt: skip
        self.queues: QueueTable[QueueActor] = QueueTable(
            "queues", shutdown_timeout=self.shutdown_timeout
        )
        self.ownership = Ownership(self)
        self.lag = ConsumerLag(
            self, lambda topic, broker: max_offsets(self._instance, self.group, topic, broker),
            lambda q: max_offset(self._instance, q), timeout=self.request_timeout,
        )  # fmt: skip
        self.retry_delay: float | None = None  # (what a POP queue's retries wait: PopOwner)
        self.suspend_delay = options.suspend_delay
        self.pop_lane = pop_lane(self, options, client) if options.broker_mode else None
        self.rebalancer = Rebalancer(
            self._instance, self.group, strategy=options.strategy,
            broadcasting=model is MessageModel.BROADCASTING,
            interval=options.rebalance_interval,
            topics=lambda: list(self._subscriptions), owned=lambda: list(self.queues),
            apply=self._apply,
            allocate=self.pop_lane.allocate if self.pop_lane is not None else None,
        )  # fmt: skip
        self.service: ConcurrentConsumeService | OrderlyConsumeService = (
            OrderlyConsumeService(
                self, self.dispatcher, concurrency=options.concurrency,
                consume_batch_size=options.consume_batch_size,
                suspend_delay=options.suspend_delay, max_reconsume_times=self.max_reconsume_times,
                lock_interval=options.lock_interval, rebalance_lock=self.rebalancer.lock,
            ) if options.orderly else ConcurrentConsumeService(
                self, self.dispatcher, concurrency=options.concurrency,
                consume_batch_size=options.consume_batch_size,
                consume_timeout=options.consume_timeout,
                local_retry_delay=options.local_retry_delay,
            )
        )  # fmt: skip
        self._supervisor = DynamicSupervisor(
            f"push-consumer:{self.group}", MEMBER_POLICY, shutdown_timeout=self.shutdown_timeout
        )
        self._flow = Signal()
        self.suspension = Suspension()
        self._stopping = False
        self._subscribed_by_mode = False  # a POP retry topic (un)subscribed this round
        self._tg: TaskGroup | None = None
        self.started_ms = 0

    def _describe(self) -> str:
        return f"PushConsumer({self.group})"  # (the tree's root, as users know the client)

    # ---- what the actors read ---------------------------------------------------------------

    @property
    def clustering(self) -> bool:
        return self.options.model is MessageModel.CLUSTERING

    @property
    def locking(self) -> bool:
        return self.orderly and self.clustering

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

    @property
    def rebalance_lock(self) -> anyio.Lock:
        return self.rebalancer.lock

    def subscription(self, topic: str) -> Subscription:
        found = self._subscriptions.get(topic)
        # (a topic unsubscribed a moment ago: its queues are being released - never a crash)
        return found if found is not None else Subscription(topic)

    def subscriptions(self) -> list[Subscription]:
        return list(self._subscriptions.values())

    def assigned(self) -> list[MessageQueue]:
        popped = self.pop_lane.queues if self.pop_lane is not None else set()
        return sorted(set(self.queues) | popped)

    def owned_queues(self) -> dict[MessageQueue, ProcessQueue]:
        return {actor.queue: actor.pq for actor in self.queues.actors()}

    def rebalance_now(self) -> None:
        self.rebalancer.trigger()

    def rebalance_later(self, delay: float) -> None:
        self.rebalancer.later(delay)

    async def _apply(self, wanted: set[MessageQueue]) -> None:
        """A rebalance round's answer: the queues to pull (and, following the broker's mode,
        to pop)."""
        await self.ownership.apply(wanted)
        if self.pop_lane is not None:
            await self.pop_lane.apply(self._subscriptions)
            if self._subscribed_by_mode:  # a POP retry topic followed: tell the brokers now
                self._subscribed_by_mode = False
                self.spawn(self._instance.heartbeat.beat)
                self.rebalancer.trigger()  # (and take or release its queues)
        self._rebalanced()

    def _rebalanced(self) -> None:
        if self.on_rebalance is not None and not self._stopping:
            self.on_rebalance(self.assigned())

    def follow_subscription(self, topic: str, wanted: bool, *, of: str) -> None:
        """Subscribe ``topic`` (all its tags) or not, as the broker's mode asks for the
        subscribed topic ``of`` (``topic`` is its POP retry topic: :mod:`.poplane`); the brokers
        are told, and its queues taken or released, once the rebalance round ends."""
        if of not in self._subscriptions:  # (unsubscribed during the round: nothing to follow)
            return
        if wanted and topic not in self._subscriptions:
            self._subscriptions[topic] = Subscription.parse(topic)
        elif not wanted and self._subscriptions.pop(topic, None) is not None:
            for actor in self.queues.actors():
                if actor.queue.topic == topic:
                    actor.stop_pulling()
        else:
            return
        self._sub_version = max(self._sub_version + 1, time.time_ns() // 1_000_000)
        self._subscribed_by_mode = True

    async def move_offsets(self, targets: Mapping[MessageQueue, int]) -> list[MessageQueue]:
        return await self.ownership.move(targets)

    def over_limits(self, pq: ProcessQueue) -> bool:
        return flow.over_limits(self.options, self.queues, pq)

    def cache_room(self, pq: ProcessQueue) -> int:
        return flow.cache_room(self.options, self.queues, pq)

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

    # ---- changing what it consumes while it runs (Java's subscribe, unsubscribe) --------

    async def subscribe(self, topic: str, selector: str | MessageSelector) -> None:
        """Consume ``topic`` too (or with another expression): the brokers are told at once
        (a heartbeat) and a rebalance takes this member's share of its queues before it
        returns. An SQL92 expression a broker refuses is :class:`InvalidSubscription`, with
        nothing changed."""
        validate_topic(topic, error=ConfigError)
        name = wrap(self.namespace, topic)
        subscription = Subscription.of(name, selector)
        if name == self.retry_topic:
            raise ConfigError(f"{topic!r} is the group's retry topic, always consumed")
        self._check_running()
        await check_subscription(self._instance, self.group, subscription.wire(0))
        self._check_running()
        self._subscriptions[name] = subscription
        await self._subscriptions_changed()
        log.info("consumer.subscribed", group=self.group, topic=name,
                 expression=subscription.expression)  # fmt: skip

    async def unsubscribe(self, topic: str) -> None:
        """Consume ``topic`` no more: its queues stop pulling now, are released (their
        offsets committed) by a rebalance before it returns, and the brokers are told. A topic
        not subscribed is left as it is."""
        validate_topic(topic, error=ConfigError)
        name = wrap(self.namespace, topic)
        if name == self.retry_topic:
            raise ConfigError(f"{topic!r} is the group's retry topic, always consumed")
        self._check_running()
        if name not in self._subscriptions:
            return
        if self.pop_lane is not None:  # its POP side goes now: poppers, its POP retry topic
            self.follow_subscription(pop_retry_topic(name, self.group), False, of=name)
            self.pop_lane.drop(name)
        del self._subscriptions[name]
        for actor in self.queues.actors():
            if actor.queue.topic == name:
                actor.stop_pulling()  # (before a pull could ask for its gone subscription)
        await self._subscriptions_changed()
        log.info("consumer.unsubscribed", group=self.group, topic=name)

    async def _subscriptions_changed(self) -> None:
        """A newer subscription version, sent at once; this member's queues then follow."""
        self._sub_version = max(self._sub_version + 1, time.time_ns() // 1_000_000)
        self._subscribed_by_mode = False  # (this heartbeat and round tell and follow it)
        await self._instance.heartbeat.beat()
        if self._subscriptions:
            await self.rebalancer.rebalance()
        else:  # (nothing left to allocate: a rebalance round would keep what it owns)
            async with self.rebalancer.lock:
                await self._apply(set())

    def suspend(self) -> None:
        """Start no more pulls until :meth:`resume` (:mod:`..core.suspension`)."""
        self.suspension.suspend()
        log.info("consumer.suspended", group=self.group)

    def resume(self) -> None:
        """Pull again, and rebalance now (the group may have changed meanwhile)."""
        self.suspension.resume()
        self.rebalancer.trigger()
        log.info("consumer.resumed", group=self.group)

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
        if (metrics := self.dispatcher.metrics) is not None:
            stack.callback(metrics.forget)
        if self.dispatcher.deliveries is not None:
            stack.callback(self.dispatcher.deliveries.dispose)
        if isinstance(self.service, ConcurrentConsumeService):
            stack.callback(self.service.close)  # once its workers are gone
        if (lane := self.pop_lane) is not None:  # acks after the handlers stopped
            stack.push_async_callback(lambda: lane.flush(self._time_left()))
            stack.callback(lane.service.close)
            await stack.enter_async_context(lane.poppers)
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
        if self.pop_lane is not None:
            for spec in self.pop_lane.child_specs():
                await supervisor.start_child(spec)
        routes = []
        for topic, subscription in self._subscriptions.items():
            try:
                routes.append(await self._instance.routes.get(topic))
            except TopicNotFound:
                log.info("consumer.topic_not_found", topic=topic, group=self.group)
                continue
            await check_subscription(self._instance, self.group, subscription.wire(0))
        await self._instance.heartbeat.beat()  # the brokers know the group before we pull
        if self.pop_lane is not None:  # (their versions: known from that heartbeat's answers)
            for route in routes:
                await check_broker_mode(self._instance, route, self.request_timeout)
        await self.rebalancer.rebalance()
        await supervisor.start_child(ChildSpec("rebalancer", self.rebalancer.run,
                                               Restart.PERMANENT, kind="rebalancer"))  # fmt: skip
        await supervisor.start_child(ChildSpec("offsets", self._persist, Restart.PERMANENT,
                                               kind="offset-persister"))  # fmt: skip
        if isinstance(self.service, OrderlyConsumeService) and self.locking:
            keeper = self.service.lock_keeper
            await supervisor.start_child(ChildSpec("locks", keeper.run, Restart.PERMANENT,
                                                   kind="lock-keeper"))  # fmt: skip
        log.info("consumer.started", group=self.group, model=self.options.model.value,
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
        if self.pop_lane is not None:
            self.pop_lane.stop()
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
            await anyio.sleep(self.options.persist_interval)
            await self.offsets.persist(list(self.queues))
            await self.lag.refresh()  # an idle consumer's lag gauge too: lag.py
            if (metrics := self.dispatcher.metrics) is not None:  # the cache gauges
                metrics.cached_queues(actor.pq for actor in self.queues.actors())

    def _consumer_data(self) -> ConsumerData:
        return ConsumerData(
            group=self.group,
            consume_type="CONSUME_PASSIVELY",
            message_model=self.options.model.value,
            consume_from_where=self.options.consume_from.value,
            subscriptions=tuple(s.wire(self._sub_version) for s in self._subscriptions.values()),
        )

    # ---- inspection ---------------------------------------------------------------------

    def describe(self) -> Node:
        children = list(self._supervisor.describe().children)
        children.append(self.queues.describe())
        if self.pop_lane is not None:
            children.append(self.pop_lane.describe())
        children.append(self._instance.describe())
        return Node(name=self._describe(), kind="push-consumer", state=self.state.value,
                    last_error=repr(self.error) if self.error else None,
                    children=tuple(children))  # fmt: skip
