"""Consumer-group administration through a broker (what ``mqadmin`` does): the broker forwards
these to the group's online clients and relays their answers.

* :func:`reset_offsets_by_time` - INVOKE_BROKER_TO_RESET_OFFSET (222); the broker computes each
  queue's offset for the timestamp and sends RESET_CONSUMER_CLIENT_OFFSET (220) to the clients;
* :func:`consumer_status` - INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223), answered by each client
  through GET_CONSUMER_STATUS_FROM_CLIENT (221);
* :func:`consumer_running_info` - GET_CONSUMER_RUNNING_INFO (307) for one client id;
* :func:`consume_message_directly` - CONSUME_MESSAGE_DIRECTLY (309): one stored message (by its
  offset message id) is handed to one client's handler.
"""

from __future__ import annotations

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.errors import broker_error
from rocketmq_actors.protocol.bodies import (
    ConsumeDirectlyResult,
    MessageQueue,
    RunningInfo,
    decode_consumer_status,
    decode_offset_table,
)
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.headers import (
    ConsumeMessageDirectlyRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
    ResetOffsetRequestHeader,
)

__all__ = [
    "consume_message_directly",
    "consumer_running_info",
    "consumer_status",
    "reset_offsets_by_time",
]


async def _masters(instance: ClientInstance, topic: str) -> list[tuple[str, str]]:
    return (await instance.routes.get(topic)).masters()


async def _call(
    instance: ClientInstance, addr: str, code: int, ext: dict[str, str], timeout: float = 15.0
) -> RemotingCommand:
    reply = await instance.request(addr, RemotingCommand.request(code, ext), timeout=timeout)
    if reply.code != ResponseCode.SUCCESS:
        raise broker_error(addr, reply.code, reply.remark)
    return reply


async def reset_offsets_by_time(
    instance: ClientInstance, topic: str, group: str, timestamp_ms: int, *, force: bool = True
) -> dict[MessageQueue, int]:
    """Move ``group`` on ``topic`` to the first message stored at or after ``timestamp_ms``
    (``-1``: the end) on every master; the group must be online and have committed offsets.
    Without ``force`` an offset only moves back. Returns the new offsets."""
    header = ResetOffsetRequestHeader(topic=topic, group=group, timestamp=timestamp_ms,
                                      is_force=force)  # fmt: skip
    offsets: dict[MessageQueue, int] = {}
    for _, addr in await _masters(instance, topic):
        reply = await _call(instance, addr, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
                            header.to_ext())  # fmt: skip
        offsets.update(decode_offset_table(reply.body))
    return offsets


async def consumer_status(
    instance: ClientInstance, topic: str, group: str
) -> dict[str, dict[MessageQueue, int]]:
    """Each online client's in-memory offsets for ``topic``, by client id."""
    header = GetConsumerStatusRequestHeader(topic=topic, group=group)
    merged: dict[str, dict[MessageQueue, int]] = {}
    for _, addr in await _masters(instance, topic):
        reply = await _call(instance, addr, RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS,
                            header.to_ext())  # fmt: skip
        for client, queues in decode_consumer_status(reply.body).items():
            merged.setdefault(client, {}).update(queues)
    return merged


async def consumer_running_info(
    instance: ClientInstance, topic: str, group: str, client_id: str
) -> RunningInfo:
    """One client's running info, asked through a master hosting ``topic``."""
    header = GetConsumerRunningInfoRequestHeader(consumer_group=group, client_id=client_id)
    _, addr = (await _masters(instance, topic))[0]
    reply = await _call(instance, addr, RequestCode.GET_CONSUMER_RUNNING_INFO, header.to_ext())
    return RunningInfo.decode(reply.body)


async def consume_message_directly(
    instance: ClientInstance, group: str, client_id: str, offset_msg_id: str, broker_addr: str
) -> ConsumeDirectlyResult:
    """Hand the message stored under ``offset_msg_id`` (on ``broker_addr``) to one client."""
    header = ConsumeMessageDirectlyRequestHeader(
        consumer_group=group, client_id=client_id, msg_id=offset_msg_id
    )
    reply = await _call(instance, broker_addr, RequestCode.CONSUME_MESSAGE_DIRECTLY,
                        header.to_ext())  # fmt: skip
    return ConsumeDirectlyResult.decode(reply.body)
