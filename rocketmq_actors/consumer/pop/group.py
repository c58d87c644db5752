"""The actor group behind a :class:`~.consumer.PopConsumer` (users never see it): the
supervisor of ``mailbox`` (the broker's requests for the group, :mod:`.requests`), ``brokers``
(which (topic, broker) pairs to pop from, every ``route_interval``), one ``popper`` per pair,
``consume`` (the workers, :mod:`.service`) and ``acks`` (:mod:`.acks`); and the ports those
collaborators call (:class:`~.service.PopOwner`, :class:`~.requests.PopMember`).

POP needs 5.x brokers: starting against a 4.x broker raises
:class:`~rocketmq_actors.errors.UnsupportedByBroker`.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from typing import Any

import anyio
from anyio.abc import TaskStatus

from rocketmq_actors.clientmetrics import client_metrics
from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.cluster.member import MEMBER_POLICY, GroupMember
from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.consumer.core.delivery import Deliveries
from rocketmq_actors.consumer.core.dispatch import BatchHandler, Dispatcher, Handler
from rocketmq_actors.consumer.core.message import ReceivedMessage
from rocketmq_actors.consumer.core.options import max_reconsume_times as default_max_reconsume
from rocketmq_actors.consumer.core.sendback import send_back
from rocketmq_actors.consumer.core.subscriptions import (
    MessageSelector,
    Subscription,
    subscription_table,
)
from rocketmq_actors.consumer.pop import calls as pop_calls
from rocketmq_actors.consumer.pop.acks import Acker
from rocketmq_actors.consumer.pop.options import PopOptions
from rocketmq_actors.consumer.pop.popper import Popper, PopSettings, init_mode
from rocketmq_actors.consumer.pop.requests import server
from rocketmq_actors.consumer.pop.service import PopConsumeService
from rocketmq_actors.errors import (
    ConfigError,
    RocketMQError,
    TopicNotFound,
    UnsupportedByBroker,
)
from rocketmq_actors.hooks import Hooks
from rocketmq_actors.logs import get_logger
from rocketmq_actors.producer.tracesend import trace_sender
from rocketmq_actors.protocol.bodies import ConsumerData
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.runtime.signal import Signal
from rocketmq_actors.runtime.supervisor import ChildSpec, DynamicSupervisor, Restart
from rocketmq_actors.runtime.tree import Node
from rocketmq_actors.trace import hooks as rmq_trace
from rocketmq_actors.tracing import Tracing

__all__ = ["NO_ITERATION", "PopGroup"]

log = get_logger("rocketmq_actors.consumer")

Target = tuple[str, str]  # (topic, broker name)

NO_ITERATION = "this consumer has a handler (iterate a consumer created without one)"


class PopGroup(GroupMember):
    def __init__(
        self,
        *,
        group: str,
        subscriptions: Mapping[str, str | MessageSelector],
        handler: Handler | None,
        batch_handler: BatchHandler | None,
        value_deserializer: Callable[[bytes], Any] | None,
        namesrv: str | Sequence[str] | None,
        options: PopOptions,
        client: ClientOptions,
        instance: ClientInstance | None,
        hooks: Hooks | None = None,
    ) -> None:
        namespace = client.namespace
        super().__init__(kind="pop-consumer", group=group, namesrv=namesrv,
                         instance=instance, client=client)  # fmt: skip
        self.options = options
        self.max_reconsume_times = default_max_reconsume(options.max_reconsume_times,
                                                         options.orderly)  # fmt: skip
        self.retry_delay, self.suspend_delay = options.retry_delay, options.suspend_delay
        self.invisible_time = float(options.invisible_time)
        self.poll_time = float(options.poll_time)
        self.request_timeout = client.request_timeout
        self.value_deserializer = value_deserializer
        self.namespace = namespace
        self._subscriptions = subscription_table(namespace, subscriptions)
        tracing = None
        if client.tracing:  # OpenTelemetry spans of each handler call
            tracing = Tracing(self.group, namespace=namespace, client_id=self._instance.client_id,
                              model="clustering")  # fmt: skip
        self.dispatcher = Dispatcher(
            self.group, handler=handler, batch_handler=batch_handler,
            consume_timeout=options.consume_timeout, fail=self._fail, tracing=tracing,
            namespace=namespace, hooks=hooks, metrics=client_metrics(client, self),
            msg_trace=rmq_trace.for_consumer(self._instance, self.group, namespace, client.trace,
                                             client.trace_topic, sender=trace_sender),
        )  # fmt: skip
        self.acker = Acker(self._instance, self.group, batch_size=options.ack_batch_size,
                           interval=options.ack_interval)  # fmt: skip
        self.service = PopConsumeService(
            self, self.dispatcher, self.acker, concurrency=options.concurrency,
            consume_batch_size=options.consume_batch_size, orderly=options.orderly,
        )  # fmt: skip
        self._supervisor = DynamicSupervisor(
            f"pop-consumer:{self.group}", MEMBER_POLICY, shutdown_timeout=client.shutdown_timeout
        )
        self.targets: set[Target] = set()
        self.popper = Popper(
            self, PopSettings(batch_size=options.pop_batch_size,
                              max_cached=options.max_cached_messages,
                              invisible_time=self.invisible_time, poll_time=self.poll_time,
                              orderly=options.orderly, request_timeout=self.request_timeout,
                              init_mode=init_mode(options.consume_from),
                              max_body=options.max_body_size),
            self.service, self.acker, value_deserializer,
        )  # fmt: skip
        self._flow = Signal()
        self._stopping = False
        self._sub_version = time.time_ns() // 1_000_000
        self.started_ms = 0

    # ---- the ports the actors call ----------------------------------------------------------

    @property
    def stopping(self) -> bool:
        return self._stopping

    def subscriptions(self) -> list[Subscription]:
        return list(self._subscriptions.values())

    def subscription(self, topic: str) -> Subscription:
        return self._subscriptions[topic]

    def flow_changed(self) -> None:
        self._flow.set()

    async def wait_flow(self) -> None:
        """Until a handler finished (or a second passed): room may have been made."""
        with anyio.move_on_after(1.0):
            await self._flow.wait()

    async def send_back(self, message: MessageExt, delay_level: int) -> bool:
        return await send_back(self._instance, self.group, message, delay_level,
                               self.max_reconsume_times, namespace=self.namespace)  # fmt: skip

    def deliveries(self, refusal: str) -> Deliveries:
        """What ``async for`` reads: only a consumer created without a handler has it (else a
        :class:`ConfigError` saying ``refusal``)."""
        if self.dispatcher.deliveries is None:
            raise ConfigError(refusal)
        return self.dispatcher.deliveries

    async def next_delivery(self) -> ReceivedMessage[Any]:
        self._check_running()
        return await self.deliveries(NO_ITERATION).next()

    # ---- lifecycle ----------------------------------------------------------------------

    async def _open(self, stack: AsyncExitStack) -> None:
        self._stopping = False
        self.started_ms = time.time_ns() // 1_000_000
        await self._join(
            stack,
            lambda: self._instance.register_consumer(self.group, self.mailbox, self._consumer_data),
            self._instance.unregister_consumer,
        )
        stack.push_async_callback(self._flush_acks)  # once every handler has stopped
        if self.dispatcher.deliveries is not None:
            stack.callback(self.dispatcher.deliveries.dispose)
        stack.callback(self.service.close)
        supervisor = await stack.enter_async_context(self._supervisor)
        if (msg_trace := self.dispatcher.msg_trace) is not None:  # message trace records
            await supervisor.start_child(msg_trace.dispatcher.child_spec())
        await supervisor.start_child(ChildSpec("mailbox", server(self).run, Restart.PERMANENT,
                                               kind="mailbox"))  # fmt: skip
        await supervisor.start_child(ChildSpec("consume", self.service.run, Restart.PERMANENT,
                                               kind="consume-service"))  # fmt: skip
        await supervisor.start_child(ChildSpec("acks", self.acker.run, Restart.PERMANENT,
                                               kind="pop-acker"))  # fmt: skip
        await self._instance.heartbeat.beat()  # the brokers know the group before we pop
        await self._follow_routes(strict=True)
        await supervisor.start_child(ChildSpec("brokers", self._watch, Restart.PERMANENT,
                                               kind="pop-brokers"))  # fmt: skip
        log.info("consumer.pop.started", group=self.group, orderly=self.options.orderly,
                 brokers=len(self.targets))  # fmt: skip

    async def _closing(self) -> None:
        """Stop popping, then wait (bounded) for the handlers in flight; what they acked is
        acked to the brokers once they stopped (:meth:`_flush_acks`)."""
        self._stopping = True
        for target in list(self.targets):
            self._supervisor.terminate_child(_key(target))
        if self.dispatcher.deliveries is not None:
            self.dispatcher.deliveries.close()
        reserve = min(self.request_timeout, self._time_left() / 2)  # for the last acks
        with anyio.move_on_after(max(0.0, self._time_left() - reserve)) as scope:
            await self.dispatcher.wait_idle()
        if scope.cancelled_caught:
            log.warning("consumer.drain_timeout", group=self.group,
                        in_flight=self.dispatcher.in_flight)  # fmt: skip
        if self.dispatcher.msg_trace is not None:  # while its actor still runs
            await self.dispatcher.msg_trace.dispatcher.flush(max(0.0, self._time_left() - reserve))
        log.info("consumer.stopping", group=self.group, consumed=self.dispatcher.consumed,
                 failed=self.dispatcher.failed)  # fmt: skip

    async def _flush_acks(self) -> None:
        with anyio.CancelScope(shield=True), anyio.move_on_after(max(0.0, self._time_left())):
            await self.acker.flush()

    def _consumer_data(self) -> ConsumerData:
        return ConsumerData(
            group=self.group,
            consume_type="CONSUME_PASSIVELY",  # as Java's push consumer in pop mode says
            message_model="CLUSTERING",  # POP is clustering only (PopMessageProcessor)
            consume_from_where=self.options.consume_from.value,
            subscriptions=tuple(s.wire(self._sub_version) for s in self._subscriptions.values()),
        )

    # ---- which brokers to pop from ----------------------------------------------------------

    async def _watch(self, *, task_status: TaskStatus[None]) -> None:
        """The ``brokers`` actor: follow the subscribed topics' routes."""
        task_status.started()
        interval = self.options.route_interval
        while True:
            # a topic without a route yet (auto-created by a first send) is looked up again
            # within a second, the others every route_interval
            missing = {t for t, _ in self.targets} != set(self._subscriptions)
            await anyio.sleep(min(interval, 1.0) if missing else interval)
            await self._follow_routes(strict=False)

    async def _follow_routes(self, *, strict: bool) -> None:
        """Start a popper for each (topic, broker) the routes name, stop those they no longer
        name. ``strict`` (the start): a 4.x broker raises :class:`UnsupportedByBroker`; later
        one is logged and left out."""
        wanted: set[Target] = set()
        for topic in self._subscriptions:
            try:
                route = await self._instance.routes.refresh(topic)
            except TopicNotFound:
                log.info("consumer.topic_not_found", topic=topic, group=self.group)
                continue
            except RocketMQError as exc:
                log.info("consumer.pop.route_failed", topic=topic, error=str(exc))
                wanted |= {t for t in self.targets if t[0] == topic}
                continue
            for broker in {q.broker_name for q in route.subscribe_queues}:
                if route.master_addr(broker) is not None:
                    wanted.add((topic, broker))
        for target in sorted(self.targets - wanted):
            self._supervisor.terminate_child(_key(target))
            self.targets.discard(target)
            log.info("consumer.pop.broker_removed", topic=target[0], broker=target[1])
        for target in sorted(wanted - self.targets):
            if self._stopping:
                return
            addr = self._instance.routes.master_addr(target[1])
            try:
                if addr is not None:
                    await pop_calls.check_pop_broker(self._instance, addr, self.request_timeout)
            except UnsupportedByBroker:
                if strict:
                    raise
                log.error("consumer.pop.unsupported_broker", broker=target[1], addr=addr)
                continue
            except RocketMQError as exc:  # its popper will meet the error and back off
                log.info("consumer.pop.version_unknown", broker=target[1], error=str(exc))
            self.targets.add(target)
            start = functools.partial(self.popper.run, *target)
            await self._supervisor.start_child(ChildSpec(_key(target), start, Restart.PERMANENT,
                                                         kind="popper"))  # fmt: skip

    # ---- inspection ---------------------------------------------------------------------

    def statistics(self) -> dict[str, Any]:
        return {
            "consumed": self.dispatcher.consumed, "failed": self.dispatcher.failed,
            "cached": self.service.cached, "acked": self.acker.acked,
            "ack_refused": self.acker.refused, "retried": self.service.retried,
            "dead": self.service.dead, "expired": self.service.expired, "pops": self.popper.pops,
            "pop_errors": self.popper.errors,
            "brokers": sorted(f"{t}@{b}" for t, b in self.targets),
        }  # fmt: skip

    def _describe(self) -> str:
        return f"PopConsumer({self.group})"  # (the tree's root: the public client's name)

    def describe(self) -> Node:
        children = list(self._supervisor.describe().children)
        children.append(self._instance.describe())
        return Node(name=self._describe(), kind="pop-consumer", state=self.state.value,
                    last_error=repr(self.error) if self.error else None,
                    children=tuple(children))  # fmt: skip


def _key(target: Target) -> str:
    return f"popper:{target[0]}@{target[1]}"
