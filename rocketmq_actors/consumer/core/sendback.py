"""A failed message goes back to the broker, as the Java push consumer sends it.

First CONSUMER_SEND_MSG_BACK to the broker that stored it: the broker redelivers it later
through ``%RETRY%<group>`` (or dead-letters it past ``max_reconsume_times``, or at once with
:data:`DLQ_NOW`). When that broker cannot be asked or refuses (its master is down, it is
read-only while being drained), a copy is produced to ``%RETRY%<group>`` on another writable
broker, as ``DefaultMQPushConsumerImpl.sendMessageBack`` does: the message's properties, its
original id (ORIGIN_MESSAGE_ID), topic (RETRY_TOPIC), reconsume count plus one and delay level
3 + reconsume count; the broker dead-letters it when the count passes the maximum. Only when
both fail does the consumer keep the message and consume it again itself.
"""

from __future__ import annotations

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.errors import BrokerError, RocketMQError, broker_error
from rocketmq_actors.logs import get_logger
from rocketmq_actors.names import wrap
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.headers import (
    ConsumerSendMsgBackRequestHeader,
    SendMessageRequestHeader,
)
from rocketmq_actors.protocol.messages import MessageSysFlag, Property, encode_properties
from rocketmq_actors.protocol.records import MessageExt

__all__ = ["DLQ_NOW", "send_back"]

log = get_logger("rocketmq_actors.consumer")

DLQ_NOW = -1  # CONSUMER_SEND_MSG_BACK delay level that dead-letters at once
INNER_PRODUCER_GROUP = "CLIENT_INNER_PRODUCER"  # Java's MixAll.CLIENT_INNER_PRODUCER_GROUP


async def send_back(
    instance: ClientInstance,
    group: str,
    message: MessageExt,
    delay_level: int,
    max_reconsume_times: int,
    *,
    namespace: str | None = None,
) -> bool:
    """Send ``message`` back (or its copy to ``%RETRY%<group>``); False when neither could
    be done and the caller must consume it again itself."""
    topic = wrap(namespace, message.topic)  # (the application saw it without its namespace)
    try:
        await _send_msg_back(instance, group, message, topic, delay_level=delay_level,
                             max_reconsume_times=max_reconsume_times)  # fmt: skip
        return True
    except RocketMQError as exc:
        log.warning("consumer.send_back_failed", msg_id=message.msg_id, error=str(exc))
    try:
        await _retry_copy(instance, group, message, topic, delay_level=delay_level,
                          max_reconsume_times=max_reconsume_times)  # fmt: skip
    except RocketMQError as exc:
        log.warning("consumer.retry_copy_failed", msg_id=message.msg_id, error=str(exc))
        return False
    log.info("consumer.retry_copy_sent", msg_id=message.msg_id, group=group)
    return True


async def _send_msg_back(
    instance: ClientInstance, group: str, message: MessageExt, topic: str, *, delay_level: int,
    max_reconsume_times: int,
) -> None:  # fmt: skip
    queue = MessageQueue(topic, message.broker_name, message.queue_id)
    addr = await instance.routes.broker_addr(queue, master_only=True)
    header = ConsumerSendMsgBackRequestHeader(
        offset=message.commit_log_offset,
        group=group,
        delay_level=delay_level,
        origin_msg_id=message.msg_id,
        origin_topic=topic,
        max_reconsume_times=max_reconsume_times,
        broker_name=message.broker_name,
    )
    reply = await instance.request(
        addr, RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, header.to_ext())
    )
    if reply.code != ResponseCode.SUCCESS:
        raise broker_error(addr, reply.code, reply.remark)


async def _retry_copy(
    instance: ClientInstance, group: str, message: MessageExt, topic: str, *, delay_level: int,
    max_reconsume_times: int,
) -> None:  # fmt: skip
    retry_topic = f"%RETRY%{group}"
    route = await instance.routes.get(retry_topic)
    queues = sorted(route.publish_queues, key=lambda q: q.broker_name == message.broker_name)
    if not queues:
        raise BrokerError(
            "-", ResponseCode.SERVICE_NOT_AVAILABLE, f"no writable queue of {retry_topic}"
        )
    queue = queues[0]  # another broker than the one that failed, when there is one
    addr = await instance.routes.broker_addr(queue, master_only=True)
    properties = dict(message.properties)
    for name in (Property.TRAN_MSG, Property.MIN_OFFSET, Property.MAX_OFFSET):
        properties.pop(name, None)
    properties[Property.ORIGIN_MESSAGE_ID] = (
        properties.get(Property.ORIGIN_MESSAGE_ID) or message.msg_id
    )
    properties[Property.RETRY_TOPIC] = topic
    properties[Property.DELAY] = str(3 + message.reconsume_times)
    header = SendMessageRequestHeader(
        producer_group=INNER_PRODUCER_GROUP, topic=retry_topic, queue_id=queue.queue_id,
        born_timestamp=message.born_timestamp, flag=message.flag,
        # a body that could not be decoded goes as stored, its compression bits with it
        sys_flag=message.sys_flag & (MessageSysFlag.COMPRESSED | MessageSysFlag.COMPRESSION_MASK),
        properties=encode_properties(properties), reconsume_times=message.reconsume_times + 1,
        # past the maximum (or dead-lettered at once) the broker sends it to %DLQ%<group>
        max_reconsume_times=message.reconsume_times if delay_level == DLQ_NOW
        else max_reconsume_times,
        broker_name=queue.broker_name,
    )  # fmt: skip
    reply = await instance.request(
        addr, RemotingCommand.request(RequestCode.SEND_MESSAGE, header.to_ext(), body=message.body)
    )
    if reply.code != ResponseCode.SUCCESS:
        raise broker_error(addr, reply.code, reply.remark)
