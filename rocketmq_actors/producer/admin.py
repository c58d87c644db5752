"""Administration helpers: create or update a topic on every master of a cluster."""

from __future__ import annotations

import contextlib

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.errors import RocketMQError, broker_error
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.headers import CreateTopicRequestHeader

__all__ = ["create_topic"]


async def create_topic(
    instance: ClientInstance,
    topic: str,
    *,
    queues: int = 4,
    cluster: str | None = None,
    order: bool = False,
    attributes: dict[str, str] | None = None,
    timeout: float | None = None,
) -> list[str]:
    """UPDATE_AND_CREATE_TOPIC on every master of ``cluster`` (all clusters when None); returns
    the broker addresses that now host the topic, and refreshes the instance's cached route of
    the topic, if it has one. ``attributes`` such as
    ``{"message.type": "FIFO"}`` are 5.x topic attributes. ``timeout`` bounds each broker's
    answer (default: the instance's request timeout); a broker answers only after registering
    the topic with the NameServers, which it may wait ``registerBrokerTimeoutMills`` for."""
    info = await instance.namesrv.cluster_info()
    names = (
        info.clusters.get(cluster, ())
        if cluster is not None
        else tuple(n for members in info.clusters.values() for n in members)
    )
    header = CreateTopicRequestHeader(
        topic=topic,
        read_queue_nums=queues,
        write_queue_nums=queues,
        order=order,
        attributes=",".join(f"+{k}={v}" for k, v in attributes.items()) if attributes else None,
    )
    done: list[str] = []
    for name in sorted(names):
        addr = info.brokers[name].master_addr if name in info.brokers else None
        if addr is None:
            continue
        reply = await instance.request(
            addr,
            RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext()),
            timeout,
        )
        if reply.code != ResponseCode.SUCCESS:
            raise broker_error(addr, reply.code, reply.remark)
        done.append(addr)
    if instance.routes.cached(topic) is not None:
        # a route cached before (possibly derived from TBW102 with other queue counts) would
        # send to queues the new topic does not have
        with contextlib.suppress(RocketMQError):
            await instance.routes.refresh(topic)
    return done
