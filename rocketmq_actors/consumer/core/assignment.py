"""Which of a topic's queues this client takes in its group (the I/O half of a rebalance; the
pure allocation strategies are in :mod:`.rebalance`)."""

from __future__ import annotations

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.consumer.core.strategies import Allocator, allocate_checked
from rocketmq_actors.errors import RocketMQError, broker_error
from rocketmq_actors.protocol.assignment import (
    Assignment,
    decode_assignments,
    encode_query_assignment,
)
from rocketmq_actors.protocol.bodies import MessageQueue, decode_consumer_list
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.headers import GetConsumerListByGroupRequestHeader

__all__ = ["allocated", "consumer_ids", "queried"]


async def consumer_ids(instance: ClientInstance, group: str, topic: str) -> list[str]:
    """The group's online client ids, as the first broker hosting ``topic`` knows them: its
    master, or a slave when the master is gone (Java's findBrokerAddrByTopic; consumers send
    their heartbeats to slaves too)."""
    route = instance.routes.cached(topic) or await instance.routes.get(topic)
    header = GetConsumerListByGroupRequestHeader(consumer_group=group)
    for name in sorted(route.brokers):
        addr = route.node_addr(name, master_only=False)
        if addr is None:
            continue
        reply = await instance.request(
            addr, RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, header.to_ext())
        )
        if reply.code == ResponseCode.SUCCESS:
            return list(decode_consumer_list(reply.body))
    return []


async def allocated(
    instance: ClientInstance, group: str, topic: str, strategy: Allocator, *, broadcasting: bool
) -> list[MessageQueue]:
    """This client's share of ``topic`` (all of it when broadcasting). Raises
    :class:`~rocketmq_actors.errors.RocketMQError` (TopicNotFound among them; AllocationFailed
    when the strategy fails) to mean "keep what you have and try again later"."""
    route = await instance.routes.get(topic)
    if broadcasting:
        return list(route.subscribe_queues)
    ids = await consumer_ids(instance, group, topic)
    if instance.client_id not in ids:  # a broker new to us: register there first
        await instance.heartbeat.beat()
        ids = await consumer_ids(instance, group, topic)
    return allocate_checked(strategy, group, instance.client_id, route.subscribe_queues, ids)


async def queried(
    instance: ClientInstance, group: str, topic: str, strategy: str, model: str
) -> list[Assignment]:
    """This client's queues of ``topic`` as a 5.x broker assigns them, each with the group's
    request mode (QUERY_ASSIGNMENT, Java's ``getRebalanceResultFromBroker``): asked of the
    first broker hosting the topic that answers (its master, else a slave: they all know the
    group from its heartbeats). Raises :class:`~rocketmq_actors.errors.RocketMQError` to mean
    "keep what you have": a broker's refusal as :class:`~rocketmq_actors.errors.BrokerError`
    (REQUEST_CODE_NOT_SUPPORTED from a 4.x broker)."""
    route = instance.routes.cached(topic) or await instance.routes.get(topic)
    body = encode_query_assignment(topic, group, instance.client_id, strategy, model)
    error: RocketMQError | None = None
    for name in sorted(route.brokers):
        addr = route.node_addr(name, master_only=False)
        if addr is None:
            continue
        try:
            reply = await instance.request(
                addr, RemotingCommand.request(RequestCode.QUERY_ASSIGNMENT, body=body)
            )
        except RocketMQError as exc:  # (another broker may answer)
            error = exc
            continue
        if reply.code != ResponseCode.SUCCESS:
            raise broker_error(addr, reply.code, reply.remark)
        found = decode_assignments(reply.body)
        if found is None:  # (the broker has no route or no member list for it yet)
            raise RocketMQError(f"{name} has no assignment of {topic} for {group} yet")
        return found
    raise error or RocketMQError(f"no broker of {topic} to ask for an assignment")
