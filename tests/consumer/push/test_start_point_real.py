"""Where a new group starts, as the Java client 5.3.3 decides it: it asks the broker for the
committed offset leaving ``setZeroIfNotFound`` unset, and a 5.x broker answers 0 for a queue
whose first message is still in memory (a young queue), so a new group with
CONSUME_FROM_LAST_OFFSET consumes that queue from its start (RemoteBrokerOffsetStore,
RebalancePushImpl.computePullFromWhereWithException; 4.x brokers always answer so)."""

from __future__ import annotations

import anyio
import pytest

from rocketmq_actors.consumer.pull import PullConsumer, PullOptions
from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.testing.cluster import LocalCluster

from ...java_client import java

pytestmark = pytest.mark.integration

KEYS = [f"early-{i}" for i in range(6)]


async def test_a_new_group_on_a_young_queue_starts_at_its_first_message_as_java_does(
    rocketmq_namesrv: str, rocketmq_cluster: LocalCluster, unique_topic: str, unique_group: str
) -> None:
    async with Producer(namesrv=rocketmq_namesrv, group="G_start_feed") as producer:
        await create_topic(producer.instance, unique_topic, queues=1)
        for key in KEYS:
            await producer.send(Message(topic=unique_topic, body=key.encode(), keys=key))
    # the Java client, a new group, CONSUME_FROM_LAST_OFFSET: the six earlier messages
    seen = await java("consume", rocketmq_namesrv, unique_topic, unique_group + "_java",
                      len(KEYS), 30, "LAST")  # fmt: skip
    assert sorted(m["key"] for m in seen if "key" in m) == KEYS
    # ours, push: the same
    got: list[str] = []
    done = anyio.Event()

    async def handle(message: MessageExt) -> None:
        got.append(message.keys[0])
        if len(got) == len(KEYS):
            done.set()

    async with PushConsumer(
        group=unique_group + "_push",
        subscriptions={unique_topic: "*"},
        handler=handle,
        namesrv=rocketmq_namesrv,
        options=PushOptions(consume_from=ConsumeFrom.LAST_OFFSET),
    ):  # fmt: skip
        with anyio.fail_after(30):
            await done.wait()
    assert sorted(got) == KEYS
    # ours, lite pull with auto_offset_reset="latest": the same; nothing committed yet
    queue = MessageQueue(unique_topic, "broker-a", 0)
    async with PullConsumer(
        group=unique_group + "_pull", namesrv=rocketmq_namesrv,
        options=PullOptions(auto_offset_reset="latest", auto_commit=False),
    ) as consumer:  # fmt: skip
        await consumer.assign([queue])
        assert consumer.position(queue) == 0
        # a 4.x broker has no setZeroIfNotFound: it says 0 when asked for the committed offset
        assert await consumer.committed(queue) == (0 if rocketmq_cluster.spec.is_4x else None)
        records = await consumer.getmany(timeout=10)
        assert sorted(m.keys[0] for m in records[queue]) == KEYS
