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

Tag expressions are filtered by the broker on tag hash codes and again here on the exact tag, as
hash codes can collide; SQL92 expressions are evaluated by the broker.
"""

from __future__ import annotations

import enum
import ssl
import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AsyncExitStack
from typing import Protocol

import anyio
import attrs
from anyio.abc import TaskGroup

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.cluster.member import GroupMember
from rocketmq_actors.errors import ConfigError, RocketMQError, broker_error
from rocketmq_actors.logs import get_logger
from rocketmq_actors.producer.prepare import validate_group, validate_topic, wrap
from rocketmq_actors.protocol.acl import AclCredentials
from rocketmq_actors.protocol.bodies import (
    ConsumerData,
    MessageQueue,
    SubscriptionData,
)
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.headers import (
    GetMaxOffsetRequestHeader,
    GetMinOffsetRequestHeader,
    OffsetResponseHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    SearchOffsetRequestHeader,
)
from rocketmq_actors.protocol.messages import PullSysFlag, java_string_hash
from rocketmq_actors.protocol.records import MessageExt, decode_messages
from rocketmq_actors.runtime.checks import check_int, check_timeout

from .assignment import allocated
from .offsets import RemoteOffsetStore
from .rebalance import Strategy

__all__ = [
    "OffsetReset",
    "PullConsumer",
    "PullResult",
    "PullStatus",
    "RebalanceListener",
    "Subscription",
]

log = get_logger("rocketmq_actors.consumer")


class PullStatus(enum.Enum):
    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"  # nothing past the offset (after the long poll)
    NO_MATCHED_MSG = "NO_MATCHED_MSG"  # messages exist, none matched the filter
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"  # outside [min, max]: continue at next_offset


@attrs.frozen
class PullResult:
    status: PullStatus
    next_offset: int
    min_offset: int
    max_offset: int
    messages: tuple[MessageExt, ...] = ()


@attrs.frozen
class MessageSelector:
    """What a subscription keeps: ``MessageSelector.by_tag("a || b")`` (the default form, also
    given as a plain string) or ``MessageSelector.by_sql("region = 'eu' AND amount > 10")``, a
    SQL92 expression over message properties evaluated by the broker (the broker needs
    ``enablePropertyFilter=true``)."""

    expression: str
    expression_type: str = "TAG"

    @classmethod
    def by_tag(cls, expression: str = "*") -> MessageSelector:
        return cls(expression, "TAG")

    @classmethod
    def by_sql(cls, expression: str) -> MessageSelector:
        if not expression.strip():
            raise ValueError("a SQL92 selector needs an expression")
        return cls(expression, "SQL92")


@attrs.frozen
class Subscription:
    """A parsed subscription expression: ``*``, ``a || b`` (tags), or SQL92."""

    topic: str
    expression: str = "*"
    expression_type: str = "TAG"
    tags: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, topic: str, expression: str = "*", expression_type: str = "TAG") -> Subscription:
        expression_type = expression_type.upper()
        if expression_type not in ("TAG", "SQL92"):
            raise ValueError(f"expression type {expression_type!r} is not TAG or SQL92")
        expression = expression.strip() or "*"
        if expression_type == "SQL92" or expression == "*":
            return cls(topic, expression, expression_type)
        tags = frozenset(t.strip() for t in expression.split("||") if t.strip())
        if not tags:
            raise ValueError(f"tag expression {expression!r} names no tag")
        return cls(topic, " || ".join(sorted(tags)), "TAG", tags)

    @classmethod
    def of(cls, topic: str, selector: str | MessageSelector) -> Subscription:
        if isinstance(selector, MessageSelector):
            return cls.parse(topic, selector.expression, selector.expression_type)
        return cls.parse(topic, selector)

    def wire(self, sub_version: int) -> SubscriptionData:
        return SubscriptionData(
            topic=self.topic,
            sub_string=self.expression,
            tags=tuple(sorted(self.tags)),
            codes=tuple(java_string_hash(t) for t in sorted(self.tags)),
            sub_version=sub_version,
            expression_type=self.expression_type,
        )

    def matches(self, message: MessageExt) -> bool:
        return not self.tags or message.tags in self.tags


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


@attrs.define(eq=False)
class _Fetch:
    """One assigned queue: what the user has been given up to (``position``), what the fetcher
    pulls next, and the records pulled but not yet returned."""

    queue: MessageQueue
    position: int
    fetch_offset: int
    scope: anyio.CancelScope
    records: deque[MessageExt] = attrs.field(factory=deque)
    paused: bool = False


class PullConsumer(GroupMember):
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
        strategy: Strategy = Strategy.AVG,
        listener: RebalanceListener | None = None,
        pull_batch_size: int = 32,
        max_buffered: int = 1000,
        pull_suspend: float = 5.0,
        rebalance_interval: float = 20.0,
        request_timeout: float = 3.0,
        ssl_context: ssl.SSLContext | None = None,
        credentials: AclCredentials | None = None,
        shutdown_timeout: float = 10.0,
    ) -> None:
        validate_group(group)
        check_int("pull_batch_size", pull_batch_size)
        check_int("max_buffered", max_buffered)
        check_timeout("auto_commit_interval", auto_commit_interval)
        check_timeout("pull_suspend", pull_suspend)
        check_timeout("rebalance_interval", rebalance_interval)
        check_timeout("request_timeout", request_timeout)
        try:
            auto_offset_reset = OffsetReset(auto_offset_reset)
        except ValueError:
            raise ConfigError(
                f"auto_offset_reset must be 'earliest' or 'latest', not {auto_offset_reset!r}"
            ) from None
        super().__init__(
            kind="pull-consumer", group=wrap(namespace, group), namesrv=namesrv, instance=instance,
            ssl_context=ssl_context, credentials=credentials, shutdown_timeout=shutdown_timeout,
        )  # fmt: skip
        self.namespace = namespace
        self.auto_commit = auto_commit
        self.auto_commit_interval = auto_commit_interval
        self.auto_offset_reset = OffsetReset(auto_offset_reset)
        self.strategy = strategy
        self.listener = listener
        self.pull_batch_size = pull_batch_size
        self.max_buffered = max_buffered
        self.pull_suspend = pull_suspend
        self.rebalance_interval = rebalance_interval
        self.request_timeout = request_timeout
        self._subscriptions: dict[str, Subscription] = {}
        self._subscribed: set[str] = set()  # topics whose queues the group rebalances
        self._sub_version = time.time_ns() // 1_000_000
        self.offsets = RemoteOffsetStore(self._instance, self.group)
        self._fetches: dict[MessageQueue, _Fetch] = {}
        self._arrived = anyio.Event()  # records were buffered
        self._space = anyio.Event()  # records were taken, or a queue resumed
        self._rebalance_now = anyio.Event()
        self._rebalance_lock = anyio.Lock()
        self._tg: TaskGroup | None = None

    async def _open(self, stack: AsyncExitStack) -> None:
        await self._join(
            stack,
            lambda: self._instance.register_consumer(self.group, self.mailbox, self._consumer_data),
            self._instance.unregister_consumer,
        )
        stack.push_async_callback(self.offsets.persist_on_close)
        self._tg = tg = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(tg.cancel_scope.cancel)
        tg.start_soon(self._serve_mailbox)
        tg.start_soon(self._rebalance_loop)
        if self.auto_commit:
            tg.start_soon(self._auto_commit_loop)

    async def _closing(self) -> None:
        if self.auto_commit:
            self._record_positions()  # persisted by the stack, after the fetchers stopped
        for fetch in self._fetches.values():
            fetch.scope.cancel()

    async def _serve_mailbox(self) -> None:
        """NOTIFY_CONSUMER_IDS_CHANGED rebalances the subscribed topics; the two-way requests
        a pull consumer has no answer for get SYSTEM_ERROR (as the Java client answers)."""
        async for inbound in self.mailbox:
            if inbound.command.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED:
                self._rebalance_now.set()
            else:
                inbound.reply(ResponseCode.SYSTEM_ERROR, remark="not supported by a pull consumer")

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
            self._subscriptions[topic] = subscription
            self._sub_version = time.time_ns() // 1_000_000
            await self._instance.routes.get(topic)
            await self._instance.heartbeat.beat()  # the brokers learn the group now
        return subscription

    async def queues(self, topic: str) -> list[MessageQueue]:
        """The topic's readable queues, in Java's order (namespace-wrapped topic)."""
        self._check_running()
        validate_topic(topic)
        wire_topic = wrap(self.namespace, topic)
        await self._subscribe(wire_topic, "*", "TAG")
        route = await self._instance.routes.get(wire_topic)
        return list(route.subscribe_queues)

    # ---- assignment -------------------------------------------------------------------

    async def subscribe(
        self, topic: str, expression: str = "*", *, expression_type: str = "TAG"
    ) -> None:
        """Consume ``topic`` as a member of the group: its queues are shared with the group's
        other members and rebalanced as members come and go."""
        self._check_running()
        validate_topic(topic)
        if self._fetches and not self._subscribed:
            raise RuntimeError("this consumer has queues assigned by hand: subscribe or assign")
        wire_topic = wrap(self.namespace, topic)
        await self._subscribe(wire_topic, expression, expression_type)
        self._subscribed.add(wire_topic)
        await self._rebalance()

    async def assign(self, queues: Iterable[MessageQueue]) -> None:
        """Consume exactly ``queues`` (no group rebalancing), from their committed offsets."""
        self._check_running()
        if self._subscribed:
            raise RuntimeError("this consumer subscribed to topics: subscribe or assign")
        wanted = set(queues)
        for topic in {q.topic for q in wanted}:
            if topic not in self._subscriptions:
                await self._subscribe(topic, "*", "TAG")
        async with self._rebalance_lock:
            await self._change(wanted)

    def assignment(self) -> set[MessageQueue]:
        return set(self._fetches)

    async def _rebalance_loop(self) -> None:
        while True:
            with anyio.move_on_after(self.rebalance_interval):
                await self._rebalance_now.wait()
            self._rebalance_now = anyio.Event()
            if self._subscribed:
                await self._rebalance()

    async def _rebalance(self) -> None:
        async with self._rebalance_lock:
            wanted: set[MessageQueue] = set()
            for topic in sorted(self._subscribed):
                try:
                    wanted |= set(await allocated(self._instance, self.group, topic,
                                                  self.strategy, broadcasting=False))  # fmt: skip
                except RocketMQError as exc:
                    log.info("consumer.rebalance_skipped", topic=topic, error=str(exc))
                    wanted |= {q for q in self._fetches if q.topic == topic}
            await self._change(wanted)

    async def _change(self, wanted: set[MessageQueue]) -> None:
        revoked = set(self._fetches) - wanted
        if revoked:
            if self.auto_commit:
                await self.commit({q: self._fetches[q].position for q in revoked})
            if self.listener is not None:
                await self.listener.on_queues_revoked(revoked)
            for queue in revoked:
                self._fetches.pop(queue).scope.cancel()
                self.offsets.remove(queue)
        added = wanted - set(self._fetches)
        for queue in sorted(added):
            committed = await self.offsets.fetch(queue)
            if committed is None or committed < 0:
                committed = await (
                    min_offset if self.auto_offset_reset is OffsetReset.EARLIEST else max_offset
                )(self._instance, queue)
            self._start_fetch(queue, committed)
        if added and self.listener is not None:
            await self.listener.on_queues_assigned(added)
        if revoked or added:
            log.info("consumer.assignment_changed", group=self.group, queues=len(self._fetches),
                     added=len(added), revoked=len(revoked))  # fmt: skip

    # ---- fetching ---------------------------------------------------------------------

    def _start_fetch(self, queue: MessageQueue, offset: int) -> None:
        assert self._tg is not None
        old = self._fetches.get(queue)
        if old is not None:
            old.scope.cancel()
        fetch = _Fetch(queue, offset, offset, anyio.CancelScope(),
                       paused=old.paused if old else False)  # fmt: skip
        self._fetches[queue] = fetch
        self._tg.start_soon(self._fetch_loop, fetch)

    async def _fetch_loop(self, fetch: _Fetch) -> None:
        subscription = self._subscriptions[fetch.queue.topic]
        with fetch.scope:
            while True:
                if fetch.paused or len(fetch.records) >= self.max_buffered:
                    if self._space.is_set():
                        self._space = anyio.Event()
                    await self._space.wait()
                    continue
                result = await pull_or_back_off(self, fetch.queue, fetch.fetch_offset,
                                                subscription)  # fmt: skip
                if result is None:
                    continue
                if result.status is PullStatus.OFFSET_ILLEGAL:
                    log.warning("consumer.offset_moved", queue=str(fetch.queue),
                                offset=fetch.fetch_offset, next=result.next_offset)  # fmt: skip
                    fetch.records.clear()
                    fetch.position = result.next_offset
                fetch.fetch_offset = result.next_offset
                if result.messages:
                    fetch.records.extend(result.messages)
                    self._arrived.set()
                elif not fetch.records:  # all given out, or filtered away: move past them
                    fetch.position = max(fetch.position, fetch.fetch_offset)

    def _take(
        self, queues: Sequence[MessageQueue], limit: int
    ) -> dict[MessageQueue, list[MessageExt]]:
        out: dict[MessageQueue, list[MessageExt]] = {}
        pending = [f for q in queues if (f := self._fetches.get(q)) and f.records and not f.paused]
        while limit > 0 and pending:  # round robin: one busy queue does not starve the rest
            share = max(1, limit // len(pending))
            for fetch in list(pending):
                got = [
                    fetch.records.popleft() for _ in range(min(share, len(fetch.records), limit))
                ]
                if got:
                    out.setdefault(fetch.queue, []).extend(got)
                    limit -= len(got)
                    fetch.position = got[-1].queue_offset + 1
                if not fetch.records:
                    fetch.position = max(fetch.position, fetch.fetch_offset)
                    pending.remove(fetch)
                if limit <= 0:
                    break
        if out:
            self._space.set()
        return out

    async def getmany(
        self, *queues: MessageQueue, max_records: int | None = None, timeout: float = 0.0
    ) -> dict[MessageQueue, list[MessageExt]]:
        """Buffered records by queue (of ``queues``, or of every assigned queue), waiting up to
        ``timeout`` seconds for the first; an empty dict when none came."""
        self._check_running()
        limit = max_records if max_records is not None else 1 << 30
        if limit < 1 or timeout < 0:
            raise ValueError("max_records >= 1 and timeout >= 0 are required")
        with anyio.move_on_after(timeout):
            while True:
                out = self._take(list(queues) or list(self._fetches), limit)
                if out:
                    return out
                if self._arrived.is_set():
                    self._arrived = anyio.Event()
                    continue
                await self._arrived.wait()
        return {}

    async def getone(self, *queues: MessageQueue) -> MessageExt:
        """The next record (of ``queues``, or of every assigned queue), waiting for it."""
        while True:
            out = await self.getmany(*queues, max_records=1, timeout=3600.0)
            for records in out.values():
                return records[0]

    def __aiter__(self) -> PullConsumer:
        return self

    async def __anext__(self) -> MessageExt:
        if not self.running:
            raise StopAsyncIteration
        return await self.getone()

    # ---- positions --------------------------------------------------------------------

    def _fetch(self, queue: MessageQueue) -> _Fetch:
        try:
            return self._fetches[queue]
        except KeyError:
            raise ValueError(f"{queue} is not assigned to this consumer") from None

    def position(self, queue: MessageQueue) -> int:
        """The offset of the next record :meth:`getmany` returns for ``queue``."""
        return self._fetch(queue).position

    def seek(self, queue: MessageQueue, offset: int) -> None:
        """Continue ``queue`` at ``offset`` (buffered records are dropped)."""
        self._check_running()
        if offset < 0:
            raise ValueError("offset must be >= 0")
        self._fetch(queue)
        self._start_fetch(queue, offset)

    async def seek_to_beginning(self, *queues: MessageQueue) -> None:
        for queue in queues or tuple(self._fetches):
            self.seek(queue, await min_offset(self._instance, queue))

    async def seek_to_end(self, *queues: MessageQueue) -> None:
        for queue in queues or tuple(self._fetches):
            self.seek(queue, await max_offset(self._instance, queue))

    async def offsets_for_times(
        self, timestamps: Mapping[MessageQueue, int]
    ) -> dict[MessageQueue, int]:
        """For each queue, the first offset stored at or after its timestamp (ms)."""
        return {q: await offset_for_time(self._instance, q, ts) for q, ts in timestamps.items()}

    def pause(self, *queues: MessageQueue) -> None:
        """Stop fetching and returning ``queues`` until :meth:`resume`."""
        for queue in queues:
            self._fetch(queue).paused = True

    def resume(self, *queues: MessageQueue) -> None:
        for queue in queues:
            self._fetch(queue).paused = False
        self._space.set()

    def paused(self) -> set[MessageQueue]:
        return {q for q, f in self._fetches.items() if f.paused}

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
        self._check_running()
        if offset < 0 or max_messages < 1 or wait < 0:
            raise ValueError("offset >= 0, max_messages >= 1 and wait >= 0 are required")
        subscription = await self._subscribe(queue.topic, expression, expression_type)
        return await pull_once(
            self._instance, self.group, queue, offset, subscription=subscription,
            sub_version=self._sub_version, max_messages=max_messages, wait=wait,
            request_timeout=self.request_timeout,
        )  # fmt: skip

    # ---- offsets ----------------------------------------------------------------------

    def _record_positions(self) -> None:
        for queue, fetch in self._fetches.items():
            self.offsets.update(queue, fetch.position)

    async def commit(self, offsets: Mapping[MessageQueue, int] | None = None) -> None:
        """Commit ``offsets`` (next offset to consume, by queue), or the current position of
        every assigned queue; returns once the brokers have them."""
        self._check_running()
        if offsets is None:
            self._record_positions()
            targets = list(self._fetches)
        else:
            for queue, offset in offsets.items():
                if offset < 0:
                    raise ValueError(f"offset for {queue} must be >= 0")
                self.offsets.update(queue, offset, increase_only=False)
            targets = list(offsets)
        await self.offsets.persist(targets, confirmed=True)

    async def _auto_commit_loop(self) -> None:
        while True:
            await anyio.sleep(self.auto_commit_interval)
            self._record_positions()
            await self.offsets.persist(list(self._fetches))

    async def committed(self, queue: MessageQueue) -> int | None:
        """This group's committed offset for ``queue``: in memory, else from the broker."""
        offset = self.offsets.read(queue)  # 0 is an offset: no truthiness test here
        return offset if offset is not None else await self.offsets.fetch(queue)

    async def persist(self) -> None:
        await self.offsets.persist()

    async def min_offset(self, queue: MessageQueue) -> int:
        return await min_offset(self._instance, queue)

    async def max_offset(self, queue: MessageQueue) -> int:
        """The offset the next message will get (one past the last stored)."""
        return await max_offset(self._instance, queue)

    async def offset_for_time(self, queue: MessageQueue, timestamp_ms: int) -> int:
        """The first offset stored at or after ``timestamp_ms``."""
        return await offset_for_time(self._instance, queue, timestamp_ms)


_STATUS: dict[int, PullStatus] = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}


async def pull_once(
    instance: ClientInstance,
    group: str,
    queue: MessageQueue,
    offset: int,
    *,
    subscription: Subscription,
    sub_version: int,
    max_messages: int,
    wait: float,
    request_timeout: float,
) -> PullResult:
    """One PULL_MESSAGE (shared by the pull and push consumers)."""
    addr = await instance.routes.broker_addr(queue, master_only=False)
    header = PullMessageRequestHeader(
        consumer_group=group,
        topic=queue.topic,
        queue_id=queue.queue_id,
        queue_offset=offset,
        max_msg_nums=max_messages,
        sys_flag=PullSysFlag.build(commit_offset=False, suspend=wait > 0, subscription=True),
        suspend_timeout_millis=int(wait * 1000),
        subscription=subscription.expression,
        sub_version=sub_version,
        expression_type=subscription.expression_type,
        broker_name=queue.broker_name,
    )
    # the broker's hold service answers up to ~5 s after the suspend time
    reply = await instance.request(
        addr,
        RemotingCommand.request(RequestCode.PULL_MESSAGE, header.to_ext()),
        timeout=request_timeout + (wait + 5 if wait > 0 else 0),
    )
    status = _STATUS.get(reply.code)
    if status is None:
        raise broker_error(addr, reply.code, reply.remark)
    response = PullMessageResponseHeader.from_ext(reply.ext_fields)
    messages: tuple[MessageExt, ...] = ()
    if status is PullStatus.FOUND:
        decoded = decode_messages(reply.body)
        for message in decoded:
            message.broker_name = queue.broker_name
        messages = tuple(m for m in decoded if subscription.matches(m))
    return PullResult(
        status, response.next_begin_offset, response.min_offset, response.max_offset, messages
    )


class _Puller(Protocol):
    """What :func:`pull_or_back_off` reads from a consumer."""

    @property
    def instance(self) -> ClientInstance: ...

    group: str
    pull_batch_size: int
    pull_suspend: float
    request_timeout: float
    _sub_version: int


async def pull_or_back_off(
    consumer: _Puller, queue: MessageQueue, offset: int, subscription: Subscription
) -> PullResult | None:
    """One long-polling pull for a consumer's pull loop; on a client or broker error, log it,
    wait a second (Java's pullTimeDelayMillsWhenException) and return None."""
    try:
        return await pull_once(
            consumer.instance, consumer.group, queue, offset, subscription=subscription,
            sub_version=consumer._sub_version, max_messages=consumer.pull_batch_size,
            wait=consumer.pull_suspend, request_timeout=consumer.request_timeout,
        )  # fmt: skip
    except RocketMQError as exc:
        log.info("consumer.pull_failed", queue=str(queue), error=str(exc))
        await anyio.sleep(1.0)
        return None


async def _offset_request(
    instance: ClientInstance, queue: MessageQueue, code: int, ext: dict[str, str]
) -> int:
    addr = await instance.routes.broker_addr(queue, master_only=True)
    reply = await instance.request(addr, RemotingCommand.request(code, ext))
    if reply.code != ResponseCode.SUCCESS:
        raise broker_error(addr, reply.code, reply.remark)
    return OffsetResponseHeader.from_ext(reply.ext_fields).offset


async def min_offset(instance: ClientInstance, queue: MessageQueue) -> int:
    header = GetMinOffsetRequestHeader(topic=queue.topic, queue_id=queue.queue_id)
    return await _offset_request(instance, queue, RequestCode.GET_MIN_OFFSET, header.to_ext())


async def max_offset(instance: ClientInstance, queue: MessageQueue) -> int:
    header = GetMaxOffsetRequestHeader(topic=queue.topic, queue_id=queue.queue_id)
    return await _offset_request(instance, queue, RequestCode.GET_MAX_OFFSET, header.to_ext())


async def offset_for_time(instance: ClientInstance, queue: MessageQueue, timestamp_ms: int) -> int:
    header = SearchOffsetRequestHeader(
        topic=queue.topic, queue_id=queue.queue_id, timestamp=timestamp_ms
    )
    return await _offset_request(
        instance, queue, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, header.to_ext()
    )
