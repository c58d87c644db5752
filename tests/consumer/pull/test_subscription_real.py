"""PullConsumer's subscriptions as aiokafka's consumer has them, against the real broker: topics
given to the constructor are consumed with no ``subscribe()`` call; ``subscribe()`` before start,
several topics at once, a pattern that picks up a topic created after start, ``unsubscribe()``."""

from __future__ import annotations

import re

import anyio
import pytest

from rocketmq_actors.consumer.pull import MessageSelector, PullConsumer, PullOptions
from rocketmq_actors.errors import ClientStateError
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.protocol.bodies import MessageQueue

from .test_lite_pull_real import _collect

pytestmark = pytest.mark.integration

EARLIEST = PullOptions(auto_offset_reset="earliest")


async def _send(namesrv: str, topic: str, bodies: list[bytes], *, tags: str | None = None) -> None:
    async with Producer(namesrv=namesrv, group="G_subscription_feed") as producer:
        await create_topic(producer.instance, topic, queues=2)
        for body in bodies:
            await producer.send(Message(topic=topic, body=body, tags=tags))


class Assigned:
    """A listener that keeps every queue it was given and wakes whoever waits for a topic."""

    def __init__(self) -> None:
        self.queues: set[MessageQueue] = set()
        self.revoked: set[MessageQueue] = set()
        self._changed = anyio.Event()

    async def on_queues_revoked(self, revoked: set[MessageQueue]) -> None:
        self.revoked |= revoked

    async def on_queues_assigned(self, assigned: set[MessageQueue]) -> None:
        self.queues |= assigned
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_for(self, topic: str) -> None:
        while not any(q.topic == topic for q in self.queues):
            await self._changed.wait()


async def test_the_constructors_topics_are_consumed_without_a_subscribe_call(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    await _send(rocketmq_namesrv, unique_topic, [b"a", b"b", b"c"])
    async with PullConsumer(
        group=unique_group, topics=[unique_topic], namesrv=rocketmq_namesrv, options=EARLIEST
    ) as consumer:
        assert consumer.subscription() == {unique_topic}
        assert len(consumer.assignment()) == 2  # the start waited for its first round
        got = await _collect(consumer, 3)
    assert sorted(m.body for m in got) == [b"a", b"b", b"c"]


async def test_subscribe_before_start_with_several_topics_and_expressions(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    first, second = unique_topic + "_1", unique_topic + "_2"
    await _send(rocketmq_namesrv, first, [b"f1", b"f2"])
    await _send(rocketmq_namesrv, second, [b"kept"], tags="keep")
    await _send(rocketmq_namesrv, second, [b"dropped"], tags="drop")
    consumer = PullConsumer(group=unique_group, namesrv=rocketmq_namesrv, options=EARLIEST)
    await consumer.subscribe({first: "*", second: MessageSelector.by_tag("keep")})
    assert consumer.subscription() == {first, second}
    async with consumer:
        assert {q.topic for q in consumer.assignment()} == {first, second}
        got = await _collect(consumer, 3)
        assert sorted(m.body for m in got) == [b"f1", b"f2", b"kept"]
        assert await consumer.getmany(timeout=1.0) == {}  # "dropped" was filtered away


async def test_subscribe_replaces_the_topics_while_running(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    first, second = unique_topic + "_1", unique_topic + "_2"
    await _send(rocketmq_namesrv, first, [b"f"])
    await _send(rocketmq_namesrv, second, [b"s"])
    listener = Assigned()
    async with PullConsumer(
        group=unique_group, topics=[first], listener=listener, namesrv=rocketmq_namesrv,
        options=EARLIEST,
    ) as consumer:  # fmt: skip
        assert [m.body for m in await _collect(consumer, 1)] == [b"f"]
        await consumer.subscribe([second], listener=listener)  # not incremental
        assert consumer.subscription() == {second}
        assert {q.topic for q in consumer.assignment()} == {second}
        assert {q.topic for q in listener.revoked} == {first}
        assert [m.body for m in await _collect(consumer, 1)] == [b"s"]
        # the first topic's position was committed when its queues were revoked
        assert sum([await consumer.committed(MessageQueue(first, "broker-a", i)) or 0
                    for i in range(2)]) == 1  # fmt: skip


async def test_a_pattern_picks_up_a_topic_created_after_start(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    before, after = unique_topic + "_a", unique_topic + "_b"
    await _send(rocketmq_namesrv, before, [b"before"])
    await _send(rocketmq_namesrv, unique_topic + "X_c", [b"not matched"])
    listener = Assigned()
    async with PullConsumer(
        group=unique_group, pattern=re.escape(unique_topic) + "_.", listener=listener,
        namesrv=rocketmq_namesrv, options=EARLIEST.evolve(rebalance_interval=0.5),
    ) as consumer:  # fmt: skip
        assert consumer.subscription() == {before}
        assert [m.body for m in await _collect(consumer, 1)] == [b"before"]
        await _send(rocketmq_namesrv, after, [b"after"])
        with anyio.fail_after(30):
            await listener.wait_for(after)
        assert consumer.subscription() == {before, after}
        assert [m.body for m in await _collect(consumer, 1)] == [b"after"]


async def test_unsubscribe_revokes_every_queue_after_committing_it(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    await _send(rocketmq_namesrv, unique_topic, [b"x", b"y"])
    listener = Assigned()
    async with PullConsumer(
        group=unique_group, topics=[unique_topic], listener=listener, namesrv=rocketmq_namesrv,
        options=EARLIEST,
    ) as consumer:  # fmt: skip
        await _collect(consumer, 2)
        queues = consumer.assignment()
        await consumer.unsubscribe()
        assert consumer.assignment() == set() and consumer.subscription() == frozenset()
        assert listener.revoked == queues
        assert sum([await consumer.committed(q) or 0 for q in queues]) == 2  # committed first
        assert await consumer.getmany(timeout=0.5) == {}
        # nothing subscribed any more: assigning by hand is allowed now, subscribing after not
        await consumer.assign([MessageQueue(unique_topic, "broker-a", 0)])
        with pytest.raises(ClientStateError, match="unsubscribe"):
            await consumer.subscribe([unique_topic])


async def test_queues_assigned_before_start_are_fetched_from_the_start(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    await _send(rocketmq_namesrv, unique_topic, [b"p", b"q", b"r", b"s"])
    queue = MessageQueue(unique_topic, "broker-a", 1)
    consumer = PullConsumer(group=unique_group, namesrv=rocketmq_namesrv, options=EARLIEST)
    await consumer.assign([queue])
    async with consumer:
        assert consumer.assignment() == {queue} and consumer.subscription() == {unique_topic}
        got = await _collect(consumer, 1)
        assert {m.queue_id for m in got} == {1}
