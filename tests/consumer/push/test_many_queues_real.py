"""A push consumer of 10,000 queues starts, consumes and stops (issue 43; how its cost grows
is in benchmarks/scale.py). It once never finished starting: each queue's held pull took one
of its connection's 4,096 slots, and what came after them (the start-offset lookups of the
other queues, heartbeats) waited for a slot, one held pull's hold at a time."""

from __future__ import annotations

import anyio
import pytest

from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import MessageExt

pytestmark = [pytest.mark.integration, pytest.mark.once]

QUEUES = 10_000
SAMPLED = 10
#: a contract with slack: benchmarks/scale.py measures the start (two brokers, idle machine)
START_BOUND_S = 90


async def test_a_consumer_of_ten_thousand_queues_starts_consumes_and_stops(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    async with Producer(namesrv=rocketmq_namesrv, group="G_many_queues_feed") as producer:
        await create_topic(producer.instance, unique_topic, queues=QUEUES, timeout=60)
        route = await producer.instance.routes.refresh(unique_topic)
        assert len(route.subscribe_queues) == QUEUES
        sample = route.subscribe_queues[:: QUEUES // SAMPLED]
        for target in sample:
            await producer.send(
                Message(topic=unique_topic, body=str(target.queue_id).encode()),
                selector=lambda queues, message, arg: arg,
                arg=target,
            )
    owned = anyio.Event()
    consumed: set[int] = set()
    all_consumed = anyio.Event()

    def on_rebalance(assigned: list[MessageQueue]) -> None:
        if sum(1 for queue in assigned if queue.topic == unique_topic) == QUEUES:
            owned.set()

    async def handle(message: MessageExt) -> None:
        consumed.add(message.queue_id)
        if len(consumed) == len(sample):
            all_consumed.set()

    with anyio.fail_after(START_BOUND_S * 2):
        async with PushConsumer(
            group=unique_group,
            subscriptions={unique_topic: "*"},
            handler=handle,
            namesrv=rocketmq_namesrv,
            on_rebalance=on_rebalance,
            options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
        ):  # fmt: skip
            with anyio.fail_after(START_BOUND_S):
                await owned.wait()
                await all_consumed.wait()
    assert consumed == {queue.queue_id for queue in sample}
