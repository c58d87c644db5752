"""Waiting for a route the broker created on its own (retry and dead-letter topics)."""

from __future__ import annotations

import anyio

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.cluster.routes import TopicRoute
from rocketmq_actors.errors import TopicNotFound


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
