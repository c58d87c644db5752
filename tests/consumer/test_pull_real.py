"""PullConsumer against the real broker."""

from __future__ import annotations

import time

import pytest

from rocketmq_actors.consumer.pull import PullConsumer, PullStatus, Subscription
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import MessageExt

pytestmark = pytest.mark.integration


async def _drain(
    consumer: PullConsumer, queue: MessageQueue, expression: str = "*", expression_type: str = "TAG"
) -> list[MessageExt]:
    offset, got = 0, list[MessageExt]()
    while True:
        result = await consumer.pull(
            queue, offset, max_messages=64, expression=expression, expression_type=expression_type
        )
        if result.status is PullStatus.NO_NEW_MSG:
            return got
        got += result.messages
        offset = result.next_offset


async def _send_all(namesrv: str, topic: str, messages: list[Message]) -> None:
    async with Producer(namesrv=namesrv, group="G_pull_feed") as producer:
        await create_topic(producer.instance, topic, queues=2)
        for message in messages:
            await producer.send(message)


async def test_pull_everything_a_producer_sent(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    sent = [Message(topic=unique_topic, body=f"m{i}".encode(), keys=[f"k{i}"]) for i in range(40)]
    await _send_all(rocketmq_namesrv, unique_topic, sent)
    async with PullConsumer(namesrv=rocketmq_namesrv, group=unique_group) as consumer:
        queues = await consumer.queues(unique_topic)
        assert len(queues) == 2
        got = [m for q in queues for m in await _drain(consumer, q)]
    assert sorted(m.body for m in got) == sorted(m.body for m in sent)
    assert all(m.broker_name == "broker-a" for m in got)


async def test_tag_and_sql92_filters(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    sent = [
        Message(topic=unique_topic, body=f"{i}".encode(), tags="A" if i % 2 else "B",
                properties={"n": str(i)})
        for i in range(20)
    ]  # fmt: skip
    await _send_all(rocketmq_namesrv, unique_topic, sent)
    async with PullConsumer(namesrv=rocketmq_namesrv, group=unique_group) as consumer:
        queues = await consumer.queues(unique_topic)
        tagged = [m for q in queues for m in await _drain(consumer, q, expression="A")]
        assert sorted(int(m.body) for m in tagged) == [i for i in range(20) if i % 2]
        assert {m.tags for m in tagged} == {"A"}
        sql = [
            m for q in queues
            for m in await _drain(consumer, q, expression="n >= 15", expression_type="SQL92")
        ]  # fmt: skip
        assert sorted(int(m.body) for m in sql) == [15, 16, 17, 18, 19]


async def test_offsets_illegal_committed_and_by_time(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    before = int(time.time() * 1000)
    await _send_all(rocketmq_namesrv, unique_topic,
                    [Message(topic=unique_topic, body=b"x") for _ in range(10)])  # fmt: skip
    async with PullConsumer(namesrv=rocketmq_namesrv, group=unique_group) as consumer:
        queue = (await consumer.queues(unique_topic))[0]
        high = await consumer.max_offset(queue)
        assert high > 0 and await consumer.min_offset(queue) == 0
        moved = await consumer.pull(queue, high + 1000)
        assert moved.status is PullStatus.OFFSET_ILLEGAL and moved.next_offset == high
        assert await consumer.offset_for_time(queue, before) == 0
        assert await consumer.committed(queue) is None
        consumer.commit(queue, 0)
        assert await consumer.committed(queue) == 0  # zero is an offset, not "none"
        consumer.commit(queue, high)
    async with PullConsumer(namesrv=rocketmq_namesrv, group=unique_group) as again:
        # persisted on close (one-way): read it back from the broker
        for _ in range(50):
            if await again.offsets.fetch(queue) == high:
                break
        assert await again.offsets.fetch(queue) == high


def test_subscription_parsing() -> None:
    sub = Subscription.parse("t", " b || a ||a ")
    assert sub.tags == {"a", "b"} and sub.expression == "a || b"
    assert Subscription.parse("t", "").expression == "*"
    wire = Subscription.parse("t", "TagA").wire(1)
    assert wire.codes == (2598919,)  # Java "TagA".hashCode()
    for bad in (("t", "||", "TAG"), ("t", "*", "XPATH")):
        with pytest.raises(ValueError):
            Subscription.parse(*bad)
