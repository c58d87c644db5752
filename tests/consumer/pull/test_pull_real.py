"""PullConsumer against the real broker."""

from __future__ import annotations

import time

import pytest

from rocketmq_actors.consumer.pull import PullConsumer, PullStatus, Subscription
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.testing.cluster import LocalCluster

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
    # as Java's PullAPIWrapper: each message carries its queue's offsets at the pull
    for queue in queues:
        mine = [m for m in got if m.queue_id == queue.queue_id]
        assert {m.properties["MIN_OFFSET"] for m in mine} == {"0"}
        assert {int(m.properties["MAX_OFFSET"]) for m in mine} == {len(mine)}


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
    rocketmq_namesrv: str, rocketmq_cluster: LocalCluster, unique_topic: str, unique_group: str
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
        # every stored time gives the first offset stored at or after it (Kafka's
        # offsetsForTimes): 4.9 brokers answer the nearest one, which can be the one before
        stored = [
            m.store_timestamp for m in (await consumer.pull(queue, 0, max_messages=64)).messages
        ]
        for offset, stamp in enumerate(stored):
            first = min(i for i, s in enumerate(stored) if s >= stamp)
            assert await consumer.offset_for_time(queue, stamp) == first, (offset, stored)
            assert await consumer.offset_for_time(queue, stamp + 1) == next(
                (i for i, s in enumerate(stored) if s > stamp), len(stored)
            )
        # never committed: 5.x says so; 4.9 answers 0 while the queue's messages are in memory
        assert await consumer.committed(queue) in (
            (None, 0) if rocketmq_cluster.spec.is_4x else (None,)
        )
        await consumer.commit({queue: 0})
        assert await consumer.committed(queue) == 0  # zero is an offset, not "none"
        await consumer.commit({queue: high})  # returns once the broker has it
    async with PullConsumer(namesrv=rocketmq_namesrv, group=unique_group) as again:
        assert await again._group.offsets.fetch(queue) == high


async def test_tags_are_refiltered_by_name_when_hash_codes_collide(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    """Java's "Aa" and "BB" share the hash code 2112, so the broker's hash filter lets a "BB"
    message through to an "Aa" subscription: only the client's exact-tag check removes it."""
    sent = [Message(topic=unique_topic, body=t.encode(), tags=t) for t in ("Aa", "BB", "Aa")]
    await _send_all(rocketmq_namesrv, unique_topic, sent)
    async with PullConsumer(namesrv=rocketmq_namesrv, group=unique_group) as consumer:
        got = [
            m for q in await consumer.queues(unique_topic)
            for m in await _drain(consumer, q, expression="Aa")
        ]  # fmt: skip
    assert [m.tags for m in got] == ["Aa", "Aa"]


def test_subscription_match_is_by_exact_tag() -> None:
    from rocketmq_actors.protocol.messages import java_string_hash

    assert java_string_hash("Aa") == java_string_hash("BB") == 2112  # a real collision
    sub = Subscription.parse("t", "Aa")
    assert sub.wire(1).codes == (2112,)

    def tagged(tag: str | None) -> MessageExt:
        props = b"" if tag is None else f"TAGS\x01{tag}\x02".encode()
        return MessageExt(
            topic="t", body=b"", raw_properties=props, queue_id=0, queue_offset=0,
            commit_log_offset=0, sys_flag=0, flag=0, born_timestamp=0, born_ip=bytes(4),
            born_port=0, store_timestamp=0, store_ip=bytes(4), store_port=0, reconsume_times=0,
            prepared_transaction_offset=0, body_crc=0,
        )  # fmt: skip

    assert sub.matches(tagged("Aa")) and not sub.matches(tagged("BB"))
    assert Subscription.parse("t", "*").matches(tagged("BB"))


def test_subscription_parsing() -> None:
    sub = Subscription.parse("t", " b || a ||a ")
    assert sub.tags == {"a", "b"} and sub.expression == "a || b"
    assert Subscription.parse("t", "").expression == "*"
    wire = Subscription.parse("t", "TagA").wire(1)
    assert wire.codes == (2598919,)  # Java "TagA".hashCode()
    for bad in (("t", "||", "TAG"), ("t", "*", "XPATH")):
        with pytest.raises(ValueError):
            Subscription.parse(*bad)
