"""The broker calls of a POP consumer: POP_MESSAGE (long polling), ACK_MESSAGE,
BATCH_ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME, as Java's ``MQClientAPIImpl`` makes them
(``popMessageAsync``, ``ackMessageAsync``, ``batchAckMessageAsync``,
``changeInvisibleTimeAsync``). Every call goes to the master of the message's broker."""

from __future__ import annotations

import enum
import time

import anyio
import attrs

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.cluster.versions import is_5x, version_name
from rocketmq_actors.consumer.core.message import ReceivedMessage
from rocketmq_actors.consumer.core.subscriptions import Subscription
from rocketmq_actors.errors import BrokerError, UnsupportedByBroker, broker_error
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.messages import MAX_MESSAGE_SIZE
from rocketmq_actors.protocol.pop import (
    INIT_MODE_MAX,
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    ExtraInfo,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
    PoppedMessage,
    encode_batch_ack,
    message_handles,
)
from rocketmq_actors.protocol.records import CompressedRecord, decode_records

__all__ = [
    "PopStatus",
    "Popped",
    "ack",
    "batch_ack",
    "change_invisible_time",
    "check_pop_broker",
    "pop_once",
]

POP_CK = "POP_CK"  # MessageConst.PROPERTY_POP_CK
#: Java's popAsync waits this much longer than the poll time for the broker's answer
POLL_GRACE = 10.0


class PopStatus(enum.Enum):
    FOUND = "FOUND"
    NOT_FOUND = "NOT_FOUND"  # nothing within the poll time (POLLING_TIMEOUT, PULL_NOT_FOUND)
    POLLING_FULL = "POLLING_FULL"  # the broker holds too many polls: back off


@attrs.frozen
class Popped:
    status: PopStatus
    #: each message (its topic the one asked for, a retry's too) with its ack handle
    messages: tuple[tuple[ReceivedMessage[bytes], ExtraInfo], ...] = ()
    #: messages filtered out here (a tag set the broker did not apply): to ack at once
    unwanted: tuple[ExtraInfo, ...] = ()


_NOT_FOUND = (ResponseCode.POLLING_TIMEOUT, ResponseCode.PULL_NOT_FOUND)


def _decode(
    body: bytes, max_body: int, *, defer_compressed: bool = False
) -> list[ReceivedMessage[bytes]]:
    return decode_records(body, ReceivedMessage, strict=False, max_body=max_body,
                          defer_compressed=defer_compressed)  # fmt: skip


async def check_pop_broker(
    instance: ClientInstance, addr: str, timeout: float, feature: str = "POP consumption"
) -> None:
    """POP (or another 5.x ``feature``) needs a 5.x broker: :class:`UnsupportedByBroker` for
    a 4.x one (its version from the heartbeat answer, as the timer check learns it)."""
    version = await instance.heartbeat.version_of(addr, timeout)
    if not is_5x(version):
        raise UnsupportedByBroker(feature, addr, version_name(version))


async def master(instance: ClientInstance, topic: str, broker_name: str) -> str:
    return await instance.routes.broker_addr(MessageQueue(topic, broker_name, 0), master_only=True)


async def pop_once(
    instance: ClientInstance,
    group: str,
    topic: str,
    broker_name: str,
    *,
    subscription: Subscription,
    max_messages: int,
    invisible_time: float,
    poll_time: float,
    order: bool,
    request_timeout: float,
    init_mode: int = INIT_MODE_MAX,
    max_body: int = MAX_MESSAGE_SIZE,
    queue_id: int = -1,
) -> Popped:
    """One POP_MESSAGE of every queue of ``topic`` on ``broker_name`` (queue id -1: the
    broker chooses) or of ``queue_id``, held by the broker up to ``poll_time`` when it has
    nothing."""
    addr = await master(instance, topic, broker_name)
    header = PopMessageRequestHeader(
        consumer_group=group, topic=topic, queue_id=queue_id, max_msg_nums=max_messages,
        invisible_time=int(invisible_time * 1000), poll_time=int(poll_time * 1000),
        born_time=time.time_ns() // 1_000_000, init_mode=init_mode,
        exp_type=subscription.expression_type, exp=subscription.expression, order=order,
        broker_name=broker_name,
    )  # fmt: skip
    reply = await instance.request(
        addr,
        RemotingCommand.request(RequestCode.POP_MESSAGE, header.to_ext()),
        timeout=request_timeout + poll_time + POLL_GRACE,
        slot=True,
    )
    if reply.code in _NOT_FOUND:
        return Popped(PopStatus.NOT_FOUND)
    if reply.code == ResponseCode.POLLING_FULL:
        return Popped(PopStatus.POLLING_FULL)
    if reply.code != ResponseCode.SUCCESS:
        raise broker_error(addr, reply.code, reply.remark)
    response = PopMessageResponseHeader.from_ext(reply.ext_fields)
    try:  # (inflating off the event loop, as a pull's: brokercalls.decode_pull_off_loop)
        decoded = _decode(reply.body, max_body, defer_compressed=True)
    except CompressedRecord:
        decoded = await anyio.to_thread.run_sync(_decode, reply.body, max_body)
    stored = [PoppedMessage(m.topic, m.queue_id, m.queue_offset, m.reconsume_times,
                            m.properties.get(POP_CK)) for m in decoded]  # fmt: skip
    handles = message_handles(stored, response, broker_name=broker_name, order=order)
    wanted: list[tuple[ReceivedMessage[bytes], ExtraInfo]] = []
    unwanted: list[ExtraInfo] = []
    arrived = time.time_ns() // 1_000_000
    for message, (handle, count) in zip(decoded, handles, strict=True):
        message.broker_name = broker_name
        message.arrived_ms = arrived
        message.topic = topic  # a retry too (Java's processPopResponse)
        if count:
            message.reconsume_times = count
        if message.decode_error is None and not subscription.matches(message):
            unwanted.append(handle)
        else:
            wanted.append((message, handle))
    return Popped(PopStatus.FOUND, tuple(wanted), tuple(unwanted))


async def ack(instance: ClientInstance, group: str, topic: str, handle: ExtraInfo) -> bool:
    """ACK_MESSAGE for one message; False when the broker no longer knows the handle (its
    invisible time passed: it was or will be delivered again)."""
    addr = await master(instance, topic, handle.broker_name)
    header = AckMessageRequestHeader(
        consumer_group=group, topic=handle.real_topic(topic, group), queue_id=handle.queue_id,
        extra_info=handle.encode(), offset=handle.offset, broker_name=handle.broker_name,
    )  # fmt: skip
    reply = await instance.request(
        addr, RemotingCommand.request(RequestCode.ACK_MESSAGE, header.to_ext())
    )
    return reply.code == ResponseCode.SUCCESS


async def batch_ack(
    instance: ClientInstance, group: str, topic: str, handles: list[ExtraInfo]
) -> bool:
    """BATCH_ACK_MESSAGE for handles of one broker; raises :class:`BrokerError` when the broker
    does not know the request (the caller acks one by one then)."""
    addr = await master(instance, topic, handles[0].broker_name)
    body = encode_batch_ack(group, topic, handles)
    reply = await instance.request(
        addr, RemotingCommand.request(RequestCode.BATCH_ACK_MESSAGE, {}, body=body)
    )
    if reply.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
        raise BrokerError(addr, reply.code, reply.remark or "BATCH_ACK_MESSAGE")
    return reply.code == ResponseCode.SUCCESS


async def change_invisible_time(
    instance: ClientInstance, group: str, topic: str, handle: ExtraInfo, seconds: float
) -> ExtraInfo | None:
    """CHANGE_MESSAGE_INVISIBLETIME: the message becomes visible again ``seconds`` from now
    (through the pop retry topic, its reconsume count one more). The new handle, or None when
    the broker no longer knows this one."""
    addr = await master(instance, topic, handle.broker_name)
    header = ChangeInvisibleTimeRequestHeader(
        consumer_group=group, topic=handle.real_topic(topic, group), queue_id=handle.queue_id,
        extra_info=handle.encode(), offset=handle.offset, invisible_time=int(seconds * 1000),
        broker_name=handle.broker_name,
    )  # fmt: skip
    reply = await instance.request(
        addr, RemotingCommand.request(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, header.to_ext())
    )
    if reply.code != ResponseCode.SUCCESS:
        return None
    response = ChangeInvisibleTimeResponseHeader.from_ext(reply.ext_fields)
    return attrs.evolve(handle, pop_time=response.pop_time,
                        invisible_time=response.invisible_time,
                        revive_qid=response.revive_qid, ck_queue_offset=handle.offset)  # fmt: skip
