"""Broker-side queue locks for orderly consumption (LOCK_BATCH_MQ 41, UNLOCK_BATCH_MQ 42).

A broker grants a queue's lock to one client of a group at a time and lets it expire after 60 s
without renewal; a client treats its lock as valid for :data:`LOCK_MAX_LIVE` after the last
renewal (30 s, as the Java client) and renews every 20 s.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.errors import RocketMQError
from rocketmq_actors.logs import get_logger
from rocketmq_actors.protocol.bodies import (
    MessageQueue,
    decode_lock_batch_response,
    encode_lock_batch,
)
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand

__all__ = ["LOCK_MAX_LIVE", "lock_queues", "unlock_queues"]

log = get_logger("rocketmq_actors.consumer")

LOCK_MAX_LIVE = 30.0


async def _by_broker(
    instance: ClientInstance, queues: Iterable[MessageQueue]
) -> dict[str, list[MessageQueue]]:
    grouped: dict[str, list[MessageQueue]] = defaultdict(list)
    for queue in queues:
        try:
            grouped[await instance.routes.broker_addr(queue, master_only=True)].append(queue)
        except RocketMQError as exc:
            log.info("consumer.lock_no_broker", queue=str(queue), error=str(exc))
    return grouped


async def lock_queues(
    instance: ClientInstance, group: str, queues: Iterable[MessageQueue]
) -> set[MessageQueue]:
    """Lock (or renew) ``queues`` for this client; returns the ones the brokers granted."""
    granted: set[MessageQueue] = set()
    for addr, batch in (await _by_broker(instance, queues)).items():
        body = encode_lock_batch(group, instance.client_id, batch)
        try:
            reply = await instance.request(
                addr, RemotingCommand.request(RequestCode.LOCK_BATCH_MQ, body=body)
            )
            if reply.code != ResponseCode.SUCCESS:
                log.info("consumer.lock_refused", addr=addr, code=reply.code, remark=reply.remark)
                continue
            granted |= decode_lock_batch_response(reply.body) & set(batch)
        except RocketMQError as exc:
            log.info("consumer.lock_failed", addr=addr, error=str(exc))
    return granted


async def unlock_queues(
    instance: ClientInstance, group: str, queues: Iterable[MessageQueue]
) -> None:
    """Give the locks back so that another member can take the queues at once (otherwise they
    expire on the broker after 60 s)."""
    for addr, batch in (await _by_broker(instance, queues)).items():
        body = encode_lock_batch(group, instance.client_id, batch)
        try:
            await instance.request(
                addr, RemotingCommand.request(RequestCode.UNLOCK_BATCH_MQ, body=body), timeout=1.0
            )
            log.info("consumer.unlocked", addr=addr, queues=len(batch))
        except RocketMQError as exc:
            log.info("consumer.unlock_failed", addr=addr, error=str(exc))
