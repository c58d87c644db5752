"""Waiting for a route the broker created on its own (retry and dead-letter topics), and
reading the dead letters."""

from __future__ import annotations

import anyio

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.cluster.routes import TopicRoute
from rocketmq_actors.consumer.pull import PullConsumer, PullStatus
from rocketmq_actors.errors import TopicNotFound
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import MessageExt


async def registered_route(
    instance: ClientInstance, topic: str, within: float = 45.0
) -> TopicRoute:
    """The route of ``topic`` once the NameServer has it. A broker creates a %DLQ% topic at
    once, but a 4.9 broker tells the NameServer only at its next registration (every 30 s):
    ask until the route exists."""
    with anyio.fail_after(within):
        while True:
            try:
                return await instance.routes.refresh(topic)
            except TopicNotFound:
                await anyio.sleep(0.5)


async def dead_letters(
    namesrv: str, group: str, count: int, within: float = 40.0
) -> list[MessageExt]:
    """The first ``count`` messages of ``%DLQ%<group>`` (its one queue, on broker-a), read
    without joining ``group``."""
    topic = f"%DLQ%{group}"
    found: list[MessageExt] = []
    async with PullConsumer(namesrv=namesrv, group=group + "_dlq") as reader:
        await registered_route(reader.instance, topic)
        queue = MessageQueue(topic, "broker-a", 0)
        with anyio.fail_after(within):
            while len(found) < count:
                result = await reader.pull(queue, len(found), wait=5)
                if result.status is PullStatus.FOUND:
                    found.extend(result.messages)
    return found
