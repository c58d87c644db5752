"""PullConsumer: pull from queues you choose, at offsets you choose (assign mode).

    async with PullConsumer(namesrv="127.0.0.1:9876", group="reports") as consumer:
        for queue in await consumer.queues("orders"):
            offset = await consumer.committed(queue) or 0
            result = await consumer.pull(queue, offset, expression="paid || refunded")
            for message in result.messages: ...
            consumer.commit(queue, result.next_offset)
        await consumer.persist()     # also done on close

The group is registered with the brokers (CONSUME_ACTIVELY) so they accept its offsets. Tag
expressions are filtered by the broker on tag hash codes and again here on the exact tag, as
hash codes can collide; SQL92 expressions are evaluated by the broker.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack

import anyio
import attrs
import structlog

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.cluster.member import GroupMember
from rocketmq_actors.errors import BrokerError
from rocketmq_actors.producer.prepare import validate_group, validate_topic, wrap
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

from .offsets import RemoteOffsetStore

__all__ = ["PullConsumer", "PullResult", "PullStatus", "Subscription"]

log = structlog.get_logger("rocketmq_actors.consumer")


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


class PullConsumer(GroupMember):
    def __init__(
        self,
        *,
        namesrv: str | Sequence[str] | None = None,
        group: str,
        instance: ClientInstance | None = None,
        namespace: str | None = None,
        request_timeout: float = 3.0,
    ) -> None:
        validate_group(group)
        super().__init__(
            kind="pull-consumer", group=wrap(namespace, group), namesrv=namesrv, instance=instance
        )
        self.namespace = namespace
        self.request_timeout = request_timeout
        self._subscriptions: dict[str, Subscription] = {}
        self._sub_version = time.time_ns() // 1_000_000
        self.offsets = RemoteOffsetStore(self._instance, self.group)

    async def _open(self, stack: AsyncExitStack) -> None:
        await self._join(
            stack,
            lambda: self._instance.register_consumer(self.group, self.mailbox, self._consumer_data),
            self._instance.unregister_consumer,
        )
        stack.push_async_callback(self.offsets.persist)
        tg = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(tg.cancel_scope.cancel)
        tg.start_soon(self._serve_mailbox)

    async def _serve_mailbox(self) -> None:
        """A pull consumer has no rebalance to trigger nor a consume service to report on:
        answer the broker's two-way requests at once (SYSTEM_ERROR is the Java answer for an
        unsupported running-info request), and drop the one-way notifications."""
        async for inbound in self.mailbox:
            inbound.reply(ResponseCode.SYSTEM_ERROR, remark="not supported by a pull consumer")

    def _consumer_data(self) -> ConsumerData:
        return ConsumerData(
            group=self.group,
            consume_type="CONSUME_ACTIVELY",
            message_model="CLUSTERING",
            consume_from_where="CONSUME_FROM_LAST_OFFSET",
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
        """Up to ``max_messages`` from ``offset``; with ``wait`` > 0 the broker holds the
        request up to that long for new messages (long polling)."""
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

    def commit(self, queue: MessageQueue, next_offset: int) -> None:
        """Record that everything before ``next_offset`` is consumed (persisted by
        :meth:`persist`, and on close)."""
        self.offsets.update(queue, next_offset)

    async def committed(self, queue: MessageQueue) -> int | None:
        """This group's offset for ``queue``: in memory, else from the broker."""
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
        raise BrokerError(addr, reply.code, reply.remark)
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


async def _offset_request(
    instance: ClientInstance, queue: MessageQueue, code: int, ext: dict[str, str]
) -> int:
    addr = await instance.routes.broker_addr(queue, master_only=True)
    reply = await instance.request(addr, RemotingCommand.request(code, ext))
    if reply.code != ResponseCode.SUCCESS:
        raise BrokerError(addr, reply.code, reply.remark)
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
