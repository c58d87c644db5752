"""A pull consumer's actor group (internal): the supervisor and its actors (mailbox, rebalancer,
auto-commit, trace dispatcher, one fetcher per queue), the subscription and what it puts on the
wire, and the ports its collaborators call (:class:`~.assignment.AssignmentOwner`,
:class:`~.fetcher.FetchOwner`). :class:`~.consumer.PullConsumer` is its public face; the Spark
reader pulls through it directly (:meth:`PullGroup.pull_raw`).

A subscription (topics or a pattern) or an assignment given before start is applied when the
group starts; one given while it runs, at once. ``_changing`` serializes those changes; a
rebalance round runs under the rebalancer's lock, as every move of queues does.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import AsyncExitStack
from pathlib import Path

import anyio

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.cluster.member import MEMBER_POLICY, GroupMember
from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.cluster.requests import RequestServer
from rocketmq_actors.consumer.core.brokercalls import (
    PullResult,
    RawPull,
    check_subscription,
    decode_pull_off_loop,
    pull_raw,
)
from rocketmq_actors.consumer.core.message import deserialize_record
from rocketmq_actors.consumer.core.namespaced import Namespace
from rocketmq_actors.consumer.core.offsets import LocalOffsetStore, OffsetStore, RemoteOffsetStore
from rocketmq_actors.consumer.core.options import MessageModel, check_deserializer
from rocketmq_actors.consumer.core.queues import QueueTable
from rocketmq_actors.consumer.core.rebalancer import Rebalancer
from rocketmq_actors.consumer.core.subscriptions import Subscription, matching_topics
from rocketmq_actors.errors import (
    BrokerError,
    ConfigError,
    ConnectError,
    ConnectionLost,
    RocketMQError,
    TopicNotFound,
)
from rocketmq_actors.logs import get_logger
from rocketmq_actors.names import validate_group, validate_topic, wrap
from rocketmq_actors.producer.tracesend import trace_sender
from rocketmq_actors.protocol.bodies import ConsumerData, MessageQueue
from rocketmq_actors.runtime.supervisor import ChildSpec, DynamicSupervisor, Restart
from rocketmq_actors.runtime.tree import Node
from rocketmq_actors.trace import hooks as rmq_trace
from rocketmq_actors.tracing import Tracing

from .assignment import change, request_handlers
from .commits import Committer
from .fetcher import Fetcher, RecordBuffer
from .options import OffsetReset, PullOptions
from .queuewatch import QueueChangeListener, QueueWatch
from .subscription import Mode, RebalanceListener, SubscriptionState

__all__ = ["PullGroup"]

log = get_logger("rocketmq_actors.consumer")


class PullGroup(GroupMember):
    def __init__(
        self,
        *,
        group: str,
        namesrv: str | Sequence[str] | None = None,
        instance: ClientInstance | None = None,
        options: PullOptions = PullOptions(),
        client: ClientOptions = ClientOptions(),
        value_deserializer: Callable[[bytes], object] | None = None,
    ) -> None:
        validate_group(group)
        check_deserializer(value_deserializer)
        super().__init__(kind="pull-consumer", group=group,
                         namesrv=namesrv, instance=instance, client=client)  # fmt: skip
        self.options = options
        self.namespace = client.namespace
        self.ns = Namespace(client.namespace)
        self.subs = SubscriptionState(client.namespace)
        # what the fetchers read (FetchOwner)
        self.pull_batch_size = options.pull_batch_size
        self.max_buffered = options.max_buffered
        self.pull_suspend = options.pull_suspend
        self.max_body_size = options.max_body_size
        self.request_timeout = client.request_timeout
        self.buffer = RecordBuffer()
        self.value_deserializer = value_deserializer
        self.broadcasting = options.model is MessageModel.BROADCASTING
        local_dir = options.offset_dir or Path.home() / ".rocketmq_actors" / "offsets"
        self.offsets: OffsetStore = (
            LocalOffsetStore(local_dir, self._instance.client_id, self.group)
            if self.broadcasting
            else RemoteOffsetStore(self._instance, self.group)
        )
        self.fetchers: QueueTable[Fetcher] = QueueTable(
            "fetchers", shutdown_timeout=client.shutdown_timeout, kind="fetcher"
        )
        self.rebalancer = Rebalancer(
            self._instance, self.group, strategy=options.strategy, broadcasting=self.broadcasting,
            interval=options.rebalance_interval, topics=lambda: sorted(self.subs.rebalanced),
            owned=lambda: list(self.fetchers), apply=lambda wanted: change(self, wanted),
            refresh=self._follow_pattern,
        )  # fmt: skip
        self._supervisor = DynamicSupervisor(
            f"pull-consumer:{self.group}", MEMBER_POLICY, shutdown_timeout=client.shutdown_timeout
        )
        self.committer = Committer(self.fetchers, self.offsets,
                                   interval=options.auto_commit_interval)  # fmt: skip
        self.queue_watch = QueueWatch(self._instance.routes.refresh, self.ns,
                                      interval=options.topic_metadata_check_interval)  # fmt: skip
        self.started_ms = 0
        self._live = False  # the actors run: a change of subscription is applied at once
        self._changing = anyio.Lock()
        #: OpenTelemetry: a receive span per poll that returns messages (tracing.py)
        self.tracing = (
            Tracing(self.group, namespace=client.namespace, client_id=self._instance.client_id)
            if client.tracing
            else None
        )
        # message trace (as the Java lite pull consumer's: SubBefore + SubAfter when polled)
        self.trace = rmq_trace.for_consumer(self._instance, self.group, client.namespace,
                                            client.trace, client.trace_topic,
                                            sender=trace_sender)  # fmt: skip

    def _describe(self) -> str:
        return f"PullConsumer({self.group})"

    @property
    def sub_version(self) -> int:
        return self.subs.version

    def subscription(self, topic: str) -> Subscription:
        return self.subs.subscription(topic)

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
        if self.options.auto_commit:
            spec: ChildSpec[None] = ChildSpec(
                "offsets", self.committer.run, Restart.PERMANENT, kind="offset-persister"
            )
            await supervisor.start_child(spec)
        if self.trace is not None:
            await supervisor.start_child(self.trace.dispatcher.child_spec())
        await supervisor.start_child(ChildSpec("queue-watch", self.queue_watch.run,
                                               Restart.PERMANENT, kind="queue-watch"))  # fmt: skip
        async with self._changing:  # what was subscribed or assigned before start
            self._live = True
            subs = self.subs
            if subs.mode is Mode.TOPICS:
                await self._check(subs.topics)
                await self._apply(subs.topics)
            elif subs.mode is Mode.PATTERN and subs.pattern is not None:
                await self._apply(await self._matching(subs.pattern))
            elif subs.mode is Mode.ASSIGNED:
                await self._assign(subs.assigned)

    async def _closing(self) -> None:
        self._live = False
        if self.trace is not None:  # the polled records' trace (while the actors run)
            await self.trace.dispatcher.flush(self._time_left() * 0.5)
        self.rebalancer.stop()
        if self.options.auto_commit:
            self.committer.record_positions()  # persisted by the stack, after fetchers stop

    def _consumer_data(self) -> ConsumerData:
        return ConsumerData(
            group=self.group,
            consume_type="CONSUME_ACTIVELY",
            message_model=self.options.model.value,
            consume_from_where="CONSUME_FROM_LAST_OFFSET"
            if self.options.auto_offset_reset is OffsetReset.LATEST
            else "CONSUME_FROM_FIRST_OFFSET",
            subscriptions=tuple(s.wire(self.subs.version) for s in self.subs.table.values()),
        )

    # ---- subscription -------------------------------------------------------------------

    async def subscribe(
        self, topics: dict[str, Subscription], pattern: re.Pattern[str] | None,
        listener: RebalanceListener | None,
    ) -> None:  # fmt: skip
        """Consume ``topics`` (by wire name) or the topics ``pattern`` matches instead of what
        was subscribed; at once when running (one rebalance round), else from the start."""
        async with self._changing:
            self.subs.require(Mode.TOPICS if pattern is None else Mode.PATTERN)
            table = topics
            if self._live:
                if pattern is not None:
                    table = await self._matching(pattern)
                await self._check(table)  # (a refused expression changes nothing)
            self.subs.take(topics, pattern, listener)
            if self._live:
                await self._apply(table)

    async def unsubscribe(self) -> None:
        """Consume nothing: every queue revoked (positions committed first, with auto-commit)
        and every subscription dropped."""
        async with self._changing:
            self.subs.rebalanced = set()  # no more rounds
            if self._live:
                async with self.rebalancer.lock:
                    await change(self, set())
            self.subs.clear()
            if self.subs.table:
                self.subs.table.clear()
                self.subs.changed()
                if self._live:
                    await self._instance.heartbeat.beat()

    async def assign(self, queues: Iterable[MessageQueue]) -> None:
        """Consume exactly ``queues`` (application names), from their committed offsets."""
        wanted = set(self.ns.wire_all(queues))
        async with self._changing:
            self.subs.require(Mode.ASSIGNED)
            self.subs.mode, self.subs.assigned = Mode.ASSIGNED, wanted
            if self._live:
                await self._assign(wanted)

    async def _check(self, table: dict[str, Subscription]) -> None:
        """CHECK_CLIENT_CONFIG for each new expression that is not a tag expression: an
        :class:`~rocketmq_actors.errors.InvalidSubscription` if a broker cannot evaluate it."""
        for subscription in table.values():
            if self.subs.table.get(subscription.topic) != subscription:
                await check_subscription(self._instance, self.group, subscription.wire(0))

    async def _apply(self, table: dict[str, Subscription], *, now: bool = True) -> None:
        """``table`` becomes the topics the group rebalances: new or changed ones registered
        with the brokers, then (``now``) a round; the topics left are dropped from the
        heartbeats once their queues are revoked."""
        subs = self.subs
        dropped = subs.rebalanced - set(table)
        fresh = {t: s for t, s in table.items() if subs.table.get(t) != s}
        subs.table.update(table)
        subs.rebalanced = set(table)
        if fresh:
            subs.changed()
            await self._register(fresh)
        if now and table:
            await self.rebalancer.rebalance()
        elif now:  # (a round over no topic keeps what it has: revoke here)
            async with self.rebalancer.lock:
                await change(self, set())
        for topic in dropped:
            subs.table.pop(topic, None)
        if dropped:
            subs.changed()
            await self._instance.heartbeat.beat()

    async def _assign(self, wanted: set[MessageQueue]) -> None:
        fresh = {t: Subscription(t) for t in {q.topic for q in wanted} if t not in self.subs.table}
        if fresh:
            self.subs.table.update(fresh)
            self.subs.changed()
            await self._register(fresh)
        async with self.rebalancer.lock:
            await change(self, wanted)

    async def _register(self, fresh: dict[str, Subscription]) -> None:
        """The brokers of the new topics learn the group now (a topic with no route yet is
        looked for again by the rebalancer)."""
        for topic in fresh:
            try:
                await self._instance.routes.get(topic)
            except TopicNotFound:
                log.info("consumer.topic_not_found", topic=topic, group=self.group)
        await self._instance.heartbeat.beat()

    async def _matching(self, pattern: re.Pattern[str]) -> dict[str, Subscription]:
        """The topics ``pattern`` matches now (GET_ALL_TOPIC_LIST_FROM_NAMESERVER)."""
        names = await self._instance.namesrv.topic_list()
        return {t: Subscription(t) for t in matching_topics(names, pattern, self.namespace)}

    async def _follow_pattern(self) -> None:
        """Before each rebalance round: the pattern's topics as they are now (a topic created
        since is taken, one deleted dropped); the round follows."""
        pattern = self.subs.pattern
        if self.subs.mode is not Mode.PATTERN or pattern is None:
            return
        try:
            table = await self._matching(pattern)
            async with self._changing:
                if self.subs.pattern is not pattern or set(table) == self.subs.rebalanced:
                    return
                log.info("consumer.pattern_matched", group=self.group,
                         topics=sorted(set(table) - self.subs.rebalanced),
                         gone=sorted(self.subs.rebalanced - set(table)))  # fmt: skip
                await self._apply(table, now=False)
        except RocketMQError as exc:  # (the NameServer, say): looked at again next round
            log.info("consumer.pattern_not_followed", group=self.group, error=str(exc))

    async def watch_queues(self, topic: str, listener: QueueChangeListener) -> set[MessageQueue]:
        self._check_running()
        return await self.queue_watch.watch(topic, listener)

    # ---- pulling by hand ----------------------------------------------------------------

    async def queues(self, topic: str) -> list[MessageQueue]:
        """The topic's readable queues, in Java's order (application names)."""
        self._check_running()
        validate_topic(topic, error=ConfigError)
        wire_topic = wrap(self.namespace, topic)
        await self._pin(Subscription(wire_topic))
        route = await self._instance.routes.get(wire_topic)
        return [self.ns.app(q) for q in route.subscribe_queues]

    async def pull(
        self, queue: MessageQueue, offset: int, *, max_messages: int = 32, expression: str = "*",
        expression_type: str = "TAG", wait: float = 0.0,
    ) -> PullResult:  # fmt: skip
        """:meth:`~.consumer.PullConsumer.pull`: decoded, deserialized, named for the
        application."""
        queue, subscription, raw = await self._pull(
            queue, offset, max_messages, expression, expression_type, wait
        )
        result = await decode_pull_off_loop(raw, queue, subscription, self.max_body_size)
        if self.value_deserializer is not None:  # (raises for the first it rejects)
            for message in result.messages:
                deserialize_record(message, self.value_deserializer, self.ns.app(queue))
        self.ns.app_messages(result.messages)
        return result

    async def pull_raw(
        self, queue: MessageQueue, offset: int, *, max_messages: int = 32
    ) -> RawPull:
        """One pull of every message from ``offset`` (no filter, no wait) whose records are left
        undecoded: for readers that copy them into columns
        (:func:`~rocketmq_actors.protocol.recordcolumns.decode_columns`), such as the Spark
        source. No deserializer is applied and the records carry the topic as stored."""
        return (await self._pull(queue, offset, max_messages, "*", "TAG", 0.0))[2]

    async def _pull(  # noqa: PLR0917
        self, queue: MessageQueue, offset: int, max_messages: int, expression: str,
        expression_type: str, wait: float,
    ) -> tuple[MessageQueue, Subscription, RawPull]:  # fmt: skip
        """A pull by hand: the queue as the broker names it, the subscription and the answer."""
        self._check_running()
        if offset < 0 or max_messages < 1 or wait < 0:
            raise ConfigError("offset >= 0, max_messages >= 1 and wait >= 0 are required")
        queue = self.ns.wire(queue)
        subscription = Subscription.parse(queue.topic, expression, expression_type)
        await self._pin(subscription)
        try:
            raw = await pull_raw(
                self._instance, self.group, queue, offset, subscription=subscription,
                sub_version=self.subs.version, max_messages=max_messages, wait=wait,
                request_timeout=self.request_timeout,
            )  # fmt: skip
        except (ConnectError, ConnectionLost, BrokerError) as exc:
            if exc.retriable:  # the broker died or left the route: look again before a retry
                self._instance.routes.mark_stale(queue.topic)
            raise
        return queue, subscription, raw

    async def _pin(self, subscription: Subscription) -> None:
        """A topic read by hand in the heartbeats (a subscribed topic's entry stays as it is:
        its fetchers pull with it)."""
        topic = subscription.topic
        if topic in self.subs.rebalanced or self.subs.table.get(topic) == subscription:
            return
        await check_subscription(self._instance, self.group, subscription.wire(0))
        self.subs.table[topic] = subscription
        self.subs.changed()
        await self._instance.routes.get(topic)
        await self._instance.heartbeat.beat()  # the brokers learn the group now

    # ---- inspection ---------------------------------------------------------------------

    def describe(self) -> Node:
        children = list(self._supervisor.describe().children)
        children.append(self.fetchers.supervisor.describe(kind="fetcher-supervisor"))
        children.append(self._instance.describe())
        return Node(name=self._describe(), kind="pull-consumer", state=self.state.value,
                    last_error=repr(self.error) if self.error else None,
                    children=tuple(children))  # fmt: skip
