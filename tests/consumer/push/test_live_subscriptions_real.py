"""Changing what a running push consumer consumes, against the real broker: ``subscribe`` /
``unsubscribe`` (the brokers are told at once, the queues follow before the call returns) and
``suspend`` / ``resume`` (no pull starts while suspended), as the Java client's."""

from __future__ import annotations

import anyio
import pytest

from rocketmq_actors.admin import consumer_connection
from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.errors import ClientStateError, ConfigError
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.runtime.tree import Node

pytestmark = pytest.mark.integration


class Seen:
    """(topic, body) of every message handled, and a wake-up per message."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, bytes]] = []
        self._changed = anyio.Event()

    async def handle(self, message: MessageExt) -> None:
        self.messages.append((message.topic, message.body))
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_for(self, topic: str, body: bytes, timeout: float = 30) -> None:
        with anyio.fail_after(timeout):
            while (topic, body) not in self.messages:
                await self._changed.wait()

    async def nothing_within(self, seconds: float) -> bool:
        """True if no message was handled within ``seconds`` (a bound on an absence)."""
        count = len(self.messages)
        with anyio.move_on_after(seconds):
            await self._changed.wait()
        return len(self.messages) == count


def _queue_nodes(node: Node) -> list[Node]:
    found = [node] if node.kind == "queue" else []
    for child in node.children:
        found += _queue_nodes(child)
    return found


@pytest.fixture
def topics(unique_topic: str) -> tuple[str, str]:
    return f"{unique_topic}_a", f"{unique_topic}_b"


def _options() -> PushOptions:
    return PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET, pull_suspend=1.0)


async def test_subscribe_and_unsubscribe_take_effect_before_they_return(
    rocketmq_namesrv: str, unique_group: str, topics: tuple[str, str]
) -> None:
    a, b = topics
    seen = Seen()
    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_p") as producer:
        for topic in topics:
            await create_topic(producer.instance, topic, queues=2)
        async with PushConsumer(group=unique_group, subscriptions={a: "*"},
                                handler=seen.handle, namesrv=rocketmq_namesrv,
                                options=_options()) as consumer:  # fmt: skip
            await producer.send(Message(topic=a, body=b"a1"))
            await seen.wait_for(a, b"a1")
            retry = f"%RETRY%{unique_group}"  # (owned too once the broker has created it)
            assert {q.topic for q in consumer.assigned()} - {retry} == {a}

            await consumer.subscribe(b, "*")
            assert {q.queue_id for q in consumer.assigned() if q.topic == b} == {0, 1}
            known = await consumer_connection(producer.instance, unique_group)
            assert known is not None and b in known.subscriptions  # a heartbeat went at once
            await producer.send(Message(topic=b, body=b"b1"))
            await seen.wait_for(b, b"b1")

            await consumer.unsubscribe(a)
            assert not [q for q in consumer.assigned() if q.topic == a]
            assert a not in {s.topic for s in consumer.subscriptions()}
            known = await consumer_connection(producer.instance, unique_group)
            assert known is not None and a not in known.subscriptions
            await consumer.unsubscribe(a)  # (again: nothing to do)


async def test_subscribing_again_replaces_the_expression(
    rocketmq_namesrv: str, unique_group: str, unique_topic: str
) -> None:
    seen = Seen()
    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_p") as producer:
        await create_topic(producer.instance, unique_topic, queues=1)
        async with PushConsumer(group=unique_group, subscriptions={unique_topic: "*"},
                                handler=seen.handle, namesrv=rocketmq_namesrv,
                                options=_options()) as consumer:  # fmt: skip
            await consumer.subscribe(unique_topic, "paid")
            # one queue, in order: had "refunded" passed the new filter, it came first
            await producer.send(Message(topic=unique_topic, body=b"r", tags="refunded"))
            await producer.send(Message(topic=unique_topic, body=b"p", tags="paid"))
            await seen.wait_for(unique_topic, b"p")
    assert seen.messages == [(unique_topic, b"p")]


async def test_no_pull_starts_while_suspended_and_resume_delivers_the_rest(
    rocketmq_namesrv: str, unique_group: str, unique_topic: str
) -> None:
    seen = Seen()
    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_p") as producer:
        await create_topic(producer.instance, unique_topic, queues=2)
        async with PushConsumer(group=unique_group, subscriptions={unique_topic: "*"},
                                handler=seen.handle, namesrv=rocketmq_namesrv,
                                options=_options()) as consumer:  # fmt: skip
            await producer.send(Message(topic=unique_topic, body=b"before"))
            await seen.wait_for(unique_topic, b"before")
            consumer.suspend()
            assert consumer.suspended
            # every queue parks once its long poll (pull_suspend 1 s) has ended
            with anyio.fail_after(30):
                await consumer._group.suspension.wait_parked(len(consumer.assigned()))
            assert all(n.info.get("suspended") for n in _queue_nodes(consumer.tree()))
            for i in range(5):
                await producer.send(Message(topic=unique_topic, body=b"held%d" % i))
            assert await seen.nothing_within(2.0)  # stored, and not pulled
            consumer.resume()
            for i in range(5):
                await seen.wait_for(unique_topic, b"held%d" % i)
            assert not consumer.suspended


async def test_bad_changes_are_refused_before_any_io(
    rocketmq_namesrv: str, unique_group: str, unique_topic: str
) -> None:
    consumer = PushConsumer(group=unique_group, subscriptions={unique_topic: "*"},
                            handler=Seen().handle, namesrv=rocketmq_namesrv)  # fmt: skip
    with pytest.raises(ClientStateError):
        await consumer.subscribe(unique_topic, "*")  # not started
    async with consumer:
        with pytest.raises(ConfigError):
            await consumer.subscribe("no spaces allowed", "*")
        with pytest.raises(ConfigError):
            await consumer.subscribe(unique_topic, "||")  # (names no tag)
        with pytest.raises(ConfigError):
            await consumer.unsubscribe(f"%RETRY%{unique_group}")
        assert unique_topic in {s.topic for s in consumer.subscriptions()}
