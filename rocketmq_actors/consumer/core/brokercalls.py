"""The broker calls both consumers make: pull, offsets by position or time, send-back."""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from functools import partial
from typing import NotRequired, Protocol, TypedDict, Unpack

import anyio
import attrs

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.consumer.core.message import ReceivedMessage
from rocketmq_actors.consumer.core.subscriptions import Subscription
from rocketmq_actors.errors import BrokerError, InvalidSubscription, RocketMQError, broker_error
from rocketmq_actors.logs import get_logger
from rocketmq_actors.protocol.admin_bodies import ConsumeStats
from rocketmq_actors.protocol.bodies import MessageQueue, SubscriptionData, encode_check_client
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.headers import (
    GetConsumeStatsRequestHeader,
    GetMaxOffsetRequestHeader,
    GetMinOffsetRequestHeader,
    OffsetResponseHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    SearchOffsetRequestHeader,
)
from rocketmq_actors.protocol.messages import MAX_MESSAGE_SIZE, PullSysFlag
from rocketmq_actors.protocol.records import (
    CompressedRecord,
    InflationDeferred,
    MessageExt,
    decode_records,
)
from rocketmq_actors.runtime.backoff import Backoff

__all__ = [
    "PullCounter",
    "PullOptions",
    "PullResult",
    "PullStatus",
    "Puller",
    "RawPull",
    "check_subscription",
    "decode_pull",
    "decode_pull_off_loop",
    "first_offset_at",
    "max_offset",
    "max_offsets",
    "min_offset",
    "offset_for_time",
    "pull_once",
    "pull_or_back_off",
    "pull_raw",
]

log = get_logger("rocketmq_actors.consumer")

#: a pull the broker refused with FLOW_CONTROL is made again after this long (Java's
#: PULL_TIME_DELAY_MILLS_WHEN_BROKER_FLOW_CONTROL, push and lite pull alike)
BROKER_FLOW_CONTROL_DELAY = 0.02


class PullStatus(enum.Enum):
    """What a pull found (Java's ``PullStatus``)."""

    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"  # nothing past the offset (after the long poll)
    NO_MATCHED_MSG = "NO_MATCHED_MSG"  # messages exist, none matched the filter
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"  # outside [min, max]: continue at next_offset


@attrs.frozen
class PullResult:
    """A pull's answer: its status, where the next pull starts, the queue's bounds and the
    messages (Java's ``PullResult``)."""

    status: PullStatus
    next_offset: int
    min_offset: int
    max_offset: int
    messages: tuple[MessageExt, ...] = ()
    #: the node the broker suggests for the next pull of this queue (0: the master; a slave
    #: when the master's memory is busy, or when it is gone): Java's updatePullFromWhichNode
    suggested_broker_id: int = 0


_STATUS: dict[int, PullStatus] = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}


@attrs.frozen
class RawPull:
    """A pull's answer with its records undecoded (``body``: stored-message records, empty
    unless FOUND)."""

    status: PullStatus
    next_offset: int
    min_offset: int
    max_offset: int
    body: bytes = b""
    suggested_broker_id: int = 0


class PullOptions(TypedDict):
    """:func:`pull_raw`'s keyword arguments, as :func:`pull_once` passes them on."""

    subscription: Subscription
    sub_version: int
    max_messages: int
    wait: float
    request_timeout: float
    broker_id: NotRequired[int]


async def pull_once(
    instance: ClientInstance,
    group: str,
    queue: MessageQueue,
    offset: int,
    max_body: int = MAX_MESSAGE_SIZE,
    *,
    room: Callable[[], int] | None = None,
    **options: Unpack[PullOptions],
) -> PullResult:
    """One PULL_MESSAGE (shared by the pull and push consumers), its records decoded and
    filtered by the subscription's tags (see :func:`pull_raw` for the arguments, and
    :func:`decode_pull_off_loop` for ``room``)."""
    raw = await pull_raw(instance, group, queue, offset, **options)
    return await decode_pull_off_loop(raw, queue, options["subscription"], max_body, room)


async def decode_pull_off_loop(
    raw: RawPull, queue: MessageQueue, subscription: Subscription, max_body: int,
    room: Callable[[], int] | None = None,
) -> PullResult:  # fmt: skip
    """:func:`decode_pull`, in a worker thread when a record is compressed: inflating up to
    ``max_body`` bytes a record (zlib, LZ4 and zstd let other threads run meanwhile) must not
    hold the event loop, whose other queues, heartbeats and handlers go on. ``room()``: the
    bytes they may inflate to (:func:`decode_pull`'s ``inflate_budget``), asked only then."""
    try:  # (no scan first: the decoding itself stops at a compressed record)
        return decode_pull(raw, queue, subscription, max_body, defer_compressed=True)
    except CompressedRecord:
        inflate = partial(decode_pull, inflate_budget=None if room is None else room())
        return await anyio.to_thread.run_sync(inflate, raw, queue, subscription, max_body)


def decode_pull(
    raw: RawPull,
    queue: MessageQueue,
    subscription: Subscription,
    max_body: int,
    *,
    defer_compressed: bool = False,
    inflate_budget: int | None = None,
) -> PullResult:
    """``raw``'s records decoded (as the broker names ``queue``; a compressed body inflating
    past ``max_body`` bytes does not decode) and filtered by the subscription's tags. With
    ``inflate_budget`` (a push consumer's room in its cache for the queue), compressed bodies
    inflate to that much in all, the first one aside: the records from the one that would
    go past it are left for the next pull, which starts there (the result's next offset)."""
    messages: tuple[MessageExt, ...] = ()
    next_offset = raw.next_offset
    if raw.status is PullStatus.FOUND:
        # a record that does not decode comes back marked (decode_error), never as an error
        # for the whole pull: the consumer sends it on to the DLQ and the queue moves on
        try:
            decoded = decode_records(raw.body, ReceivedMessage, strict=False,
                                     max_body=max_body, defer_compressed=defer_compressed,
                                     inflate_budget=inflate_budget)  # fmt: skip
        except InflationDeferred as deferred:
            decoded, next_offset = deferred.records, deferred.queue_offset
        offsets = (raw.min_offset, raw.max_offset)
        arrived = time.time_ns() // 1_000_000
        broker = queue.broker_name
        for message in decoded:
            message.broker_name = broker
            message.set_pull_offsets(offsets)
            message.arrived_ms = arrived
        if subscription.tags:  # (every message matches a subscription without tags)
            messages = tuple(m for m in decoded if subscription.matches(m))
        else:
            messages = tuple(decoded)
    return PullResult(raw.status, next_offset, raw.min_offset, raw.max_offset, messages,
                      raw.suggested_broker_id)  # fmt: skip


async def pull_raw(
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
    broker_id: int = 0,
) -> RawPull:
    """One PULL_MESSAGE, to node ``broker_id`` of the queue's broker when it has one (the
    last pull's suggestion), else as
    :meth:`~rocketmq_actors.cluster.routes.RouteTable.broker_addr` picks; its records left
    undecoded (nor filtered by tag on this side: what the broker's filter let through)."""
    addr = await instance.routes.broker_addr(queue, master_only=False, broker_id=broker_id)
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
        slot=True,
    )
    status = _STATUS.get(reply.code)
    if status is None:
        raise broker_error(addr, reply.code, reply.remark)
    response = PullMessageResponseHeader.from_ext(reply.ext_fields)
    return RawPull(
        status,
        response.next_begin_offset,
        response.min_offset,
        response.max_offset,
        reply.body if status is PullStatus.FOUND else b"",
        response.suggest_which_broker_id,
    )


async def _master_call(
    instance: ClientInstance, queue: MessageQueue, code: int, ext: dict[str, str]
) -> RemotingCommand:
    """A request to the master of ``queue``'s broker; its reply, or the broker's error."""
    addr = await instance.routes.broker_addr(queue, master_only=True)
    reply = await instance.request(addr, RemotingCommand.request(code, ext))
    if reply.code != ResponseCode.SUCCESS:
        raise broker_error(addr, reply.code, reply.remark)
    return reply


async def _offset_request(
    instance: ClientInstance, queue: MessageQueue, code: int, ext: dict[str, str]
) -> int:
    reply = await _master_call(instance, queue, code, ext)
    return OffsetResponseHeader.from_ext(reply.ext_fields).offset


async def min_offset(instance: ClientInstance, queue: MessageQueue) -> int:
    """The lowest offset ``queue`` still holds (its master's answer)."""
    header = GetMinOffsetRequestHeader(topic=queue.topic, queue_id=queue.queue_id)
    return await _offset_request(instance, queue, RequestCode.GET_MIN_OFFSET, header.to_ext())


async def max_offset(instance: ClientInstance, queue: MessageQueue) -> int:
    """One past the highest offset of ``queue`` (where a new message will be stored)."""
    header = GetMaxOffsetRequestHeader(topic=queue.topic, queue_id=queue.queue_id)
    return await _offset_request(instance, queue, RequestCode.GET_MAX_OFFSET, header.to_ext())


async def max_offsets(
    instance: ClientInstance, group: str, topic: str, broker_name: str
) -> dict[MessageQueue, int]:
    """The max offset of every queue ``broker_name`` holds of ``topic``, in one request:
    GET_CONSUME_STATS for ``group`` (as ``mqadmin consumerProgress`` reads it). A queue the
    broker leaves out (a topic outside the group's subscriptions) is not in the result."""
    header = GetConsumeStatsRequestHeader(consumer_group=group, topic=topic)
    reply = await _master_call(
        instance, MessageQueue(topic, broker_name, 0), RequestCode.GET_CONSUME_STATS,
        header.to_ext(),
    )  # fmt: skip
    stats = ConsumeStats.decode(reply.body)
    return {
        queue: row.broker_offset
        for queue, row in stats.offsets.items()
        if queue.topic == topic and queue.broker_name == broker_name
    }


async def offset_for_time(instance: ClientInstance, queue: MessageQueue, timestamp_ms: int) -> int:
    """The offset of the first message of ``queue`` stored at or after ``timestamp_ms``
    (epoch milliseconds), as the broker's index finds it."""
    header = SearchOffsetRequestHeader(
        topic=queue.topic, queue_id=queue.queue_id, timestamp=timestamp_ms
    )
    return await _offset_request(
        instance, queue, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, header.to_ext()
    )


async def _stored_at(
    instance: ClientInstance, group: str, queue: MessageQueue, offset: int
) -> int | None:
    """The store time (ms) of the message at ``offset``, None if there is none."""
    result = await pull_once(
        instance, group, queue, offset, subscription=Subscription(queue.topic), sub_version=0,
        max_messages=1, wait=0, request_timeout=instance.request_timeout,
    )  # fmt: skip
    found = result.status is PullStatus.FOUND and result.messages
    return result.messages[0].store_timestamp if found else None


async def first_offset_at(
    instance: ClientInstance, group: str, queue: MessageQueue, timestamp_ms: int
) -> int:
    """The first offset of ``queue`` stored at or after ``timestamp_ms``, as Kafka's
    ``offsetsForTimes``. The broker's answer (SEARCH_OFFSET_BY_TIMESTAMP) is the starting
    point: 4.x brokers answer the offset whose store time is nearest
    (ConsumeQueue.getOffsetInQueueByTime), which may be the one before, and messages stored
    in the same millisecond may put it past the first of them; one-message pulls settle it."""
    offset = await offset_for_time(instance, queue, timestamp_ms)
    low, high = await min_offset(instance, queue), await max_offset(instance, queue)
    offset = min(max(offset, low), high)
    while offset > low:
        before = await _stored_at(instance, group, queue, offset - 1)
        if before is None or before < timestamp_ms:
            break
        offset -= 1
    while offset < high:
        at = await _stored_at(instance, group, queue, offset)
        if at is None or at >= timestamp_ms:
            break
        offset += 1
    return offset


class PullCounter:
    """One queue's pulls as its actor makes them: counted, backed off after a failure, and
    sent to the node the broker suggested last (:attr:`PullResult.suggested_broker_id`)."""

    __slots__ = ("backoff", "errors", "node", "pulls")

    def __init__(self, error_delay: float) -> None:
        self.backoff = Backoff.constant(error_delay)
        self.pulls = 0
        self.errors = 0
        self.node = 0  # the master, until a pull suggests another

    async def pull(
        self, owner: Puller, queue: MessageQueue, offset: int,
        room: Callable[[], int] | None = None,
    ) -> PullResult | None:  # fmt: skip
        result = await pull_or_back_off(owner, queue, offset, self.backoff, self.node,
                                        room=room)  # fmt: skip
        if result is None:
            self.errors += 1
        else:
            self.pulls += 1
            self.node = result.suggested_broker_id
        return result


class Puller(Protocol):
    """What a pulling actor (a push consumer's queue, a pull consumer's fetcher) reads from
    its consumer."""

    group: str
    pull_batch_size: int
    pull_suspend: float
    request_timeout: float
    max_body_size: int

    @property
    def instance(self) -> ClientInstance: ...
    @property
    def sub_version(self) -> int: ...
    def subscription(self, topic: str) -> Subscription: ...


async def check_subscription(
    instance: ClientInstance, group: str, subscription: SubscriptionData
) -> None:
    """CHECK_CLIENT_CONFIG for a subscription that is not a tag expression, to a master of its
    topic, as Java's ``MQClientInstance.checkClientInBroker`` does at start: the broker
    compiles the expression. Raises :class:`InvalidSubscription` if it refuses (it would
    otherwise deliver every message unfiltered, or nothing). A topic without a route yet, or
    a broker that cannot be asked, is logged and passed: its pulls will tell (Java fails
    the start then)."""
    if subscription.expression_type == "TAG":
        return
    try:
        route = await instance.routes.get(subscription.topic)
        masters = route.masters()
        if not masters:
            return
        body = encode_check_client(instance.client_id, group, subscription)
        reply = await instance.request(
            masters[0][1], RemotingCommand.request(RequestCode.CHECK_CLIENT_CONFIG, body=body)
        )
    except RocketMQError as exc:
        log.warning("consumer.subscription_not_checked", topic=subscription.topic,
                    group=group, error=str(exc))  # fmt: skip
        return
    if reply.code != ResponseCode.SUCCESS:
        raise InvalidSubscription(
            f"the broker refused {subscription.expression_type} expression "
            f"{subscription.sub_string!r} on topic {subscription.topic!r}: "
            f"{reply.remark or ResponseCode(reply.code).name}"
        )


async def pull_or_back_off(
    owner: Puller, queue: MessageQueue, offset: int, backoff: Backoff, broker_id: int = 0,
    *, room: Callable[[], int] | None = None,
) -> PullResult | None:  # fmt: skip
    """One long-polling pull for a pulling actor; on a client or broker error, log it, wait
    the back-off and return None (the actor goes on: errors of the network are not crashes)."""
    try:
        return await pull_once(
            owner.instance, owner.group, queue, offset, owner.max_body_size, room=room,
            subscription=owner.subscription(queue.topic), sub_version=owner.sub_version,
            max_messages=owner.pull_batch_size, wait=owner.pull_suspend,
            request_timeout=owner.request_timeout, broker_id=broker_id,
        )  # fmt: skip
    except RocketMQError as exc:
        if isinstance(exc, BrokerError) and exc.code == ResponseCode.FLOW_CONTROL:
            # the broker is shedding load: look again soon, as Java does, without logging
            await anyio.sleep(BROKER_FLOW_CONTROL_DELAY)
            return None
        log.info("consumer.pull_failed", queue=str(queue), error=str(exc))
        await backoff.sleep()
        return None
