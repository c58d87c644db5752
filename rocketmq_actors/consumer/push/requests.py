"""What a push consumer answers the broker (served by its mailbox actor, :mod:`.requests`).

| event | answer |
|---|---|
| ConsumerIdsChanged (40) | rebalance now |
| ResetOffsets (220) | restart the topic's owned queues at the given offsets, commit them |
| ConsumerStatusQuery (221) | this member's offsets of the topic |
| RunningInfoQuery (307) | subscriptions, queues, properties (and the live tree of actors) |
| ConsumeDirectly (309) | run the handler on the one message, report how it went |
"""

from __future__ import annotations

import time
from typing import Any

from rocketmq_actors.cluster.requests import RequestServer
from rocketmq_actors.consumer.core.message import received
from rocketmq_actors.consumer.core.running_info import member_properties
from rocketmq_actors.consumer.push.ports import RequestsPort
from rocketmq_actors.logs import get_logger
from rocketmq_actors.protocol.bodies import (
    MessageQueue,
    encode_consume_directly_result,
    encode_consumer_status,
    encode_running_info,
)
from rocketmq_actors.protocol.codes import ResponseCode
from rocketmq_actors.protocol.events import (
    ConsumeDirectly,
    ConsumerIdsChanged,
    ConsumerStatusQuery,
    ResetOffsets,
    RunningInfoQuery,
)
from rocketmq_actors.runtime.router import Inbound

__all__ = ["server"]

log = get_logger("rocketmq_actors.consumer")


def server(consumer: RequestsPort) -> RequestServer:
    async def ids_changed(inbound: Inbound) -> None:
        log.info("consumer.ids_changed", group=consumer.group)
        consumer.rebalance_now()

    async def reset(inbound: Inbound) -> None:
        event = inbound.event
        assert isinstance(event, ResetOffsets)
        moved = await consumer.move_offsets(event.offsets)
        log.info("consumer.offsets_reset", topic=event.topic, queues=len(moved))

    def status(inbound: Inbound) -> None:
        event = inbound.event
        assert isinstance(event, ConsumerStatusQuery)
        inbound.reply(body=encode_consumer_status(_offsets_of(consumer, event.topic)))

    def running(inbound: Inbound) -> None:
        inbound.reply(body=running_info(consumer))

    async def directly(inbound: Inbound) -> None:
        await consume_directly(consumer, inbound)

    return RequestServer(
        consumer.group,
        consumer.mailbox,
        {
            ConsumerIdsChanged: ids_changed,
            ResetOffsets: reset,
            ConsumerStatusQuery: status,
            RunningInfoQuery: running,
            ConsumeDirectly: directly,
        },
    )


def _offsets_of(consumer: RequestsPort, topic: str) -> dict[MessageQueue, int]:
    out = {}
    for queue in consumer.owned_queues():
        offset = consumer.offsets.read(queue)
        if queue.topic == topic and offset is not None:
            out[queue] = offset
    return out


def running_info(consumer: RequestsPort) -> bytes:
    now = time.monotonic()
    queues: dict[MessageQueue, dict[str, Any]] = {}
    for queue, pq in sorted(consumer.owned_queues().items()):
        lowest = pq.lowest
        queues[queue] = {
            "commitOffset": consumer.offsets.read(queue) or 0,
            "cachedMsgMinOffset": lowest if lowest is not None else 0,
            "cachedMsgMaxOffset": pq.highest if lowest is not None else 0,
            "cachedMsgCount": pq.count,
            "cachedMsgSizeInMiB": pq.cached_bytes // (1024 * 1024),
            "locked": pq.locked,
            "lastLockTimestamp": _wall_ms(pq.lock_time, now) if pq.lock_time else 0,
            "droped": pq.dropped,
            "lastPullTimestamp": _wall_ms(pq.last_pull, now),
            "lastConsumeTimestamp": _wall_ms(pq.last_consume, now) if pq.last_consume else 0,
        }
    properties = member_properties(
        consumer, namesrv=consumer.instance.namesrv.addrs, consume_type="CONSUME_PASSIVELY",
        started_ms=consumer.started_ms,
    )  # fmt: skip
    options = consumer.options
    properties.update({
        # (Java's ConsumerRunningInfo.PROP_CONSUME_ORDERLY is the string "PROP_CONSUMEORDERLY")
        "PROP_CONSUMEORDERLY": str(options.orderly).lower(),
        "PROP_THREADPOOL_CORE_SIZE": str(options.concurrency),
        "messageModel": options.model.value,
        "consumeFromWhere": options.consume_from.value,
        "consumed": str(consumer.consumed),
        "failed": str(consumer.failed),
        "inFlight": str(consumer.dispatcher.in_flight),
    })  # fmt: skip
    return encode_running_info(
        properties=properties,
        subscriptions=[s.wire(consumer.sub_version) for s in consumer.subscriptions()],
        queue_offsets=queues,
    )


async def consume_directly(consumer: RequestsPort, inbound: Inbound) -> None:
    """CONSUME_MESSAGE_DIRECTLY (309): run the handler on one message the broker sends,
    outside the queues (no offset is committed), and report how it went."""
    event = inbound.event
    assert isinstance(event, ConsumeDirectly)
    if not consumer.dispatcher.has_handler:
        inbound.reply(ResponseCode.SYSTEM_ERROR, remark="this consumer has no handler")
        return
    if event.message is None:
        inbound.reply(ResponseCode.SYSTEM_ERROR, remark="expected exactly one message")
        return
    message = received(event.message)
    consumer.deserialize([message])  # (one it rejects fails: CR_THROW_EXCEPTION)
    began = time.monotonic()
    ok = await consumer.dispatcher.invoke([message])
    spent = int((time.monotonic() - began) * 1000)
    result = "CR_SUCCESS" if ok else "CR_THROW_EXCEPTION"
    log.info("consumer.consumed_directly", msg_id=event.message.msg_id, result=result)
    inbound.reply(body=encode_consume_directly_result(
        result=result, remark="" if ok else "handler failed", spent_ms=spent,
        order=consumer.options.orderly,
    ))  # fmt: skip


def _wall_ms(monotonic: float, now: float) -> int:
    return int((time.time() - (now - monotonic)) * 1000)
