"""A Java consumer (rocketmq-client 5.3.3, DefaultMQPushConsumer) and ours in one group on a
16-queue topic: both allocate with the same strategy over the same member list, so once the
group settles no queue is consumed by both, and when either member leaves the other takes
its queues and nothing is lost."""

from __future__ import annotations

import anyio
import pytest

from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.protocol.records import MessageExt

from ...java_client import JavaMember, java_member

# once: allocation is the clients' (every broker version lists the group's members the same way)
pytestmark = [pytest.mark.integration, pytest.mark.once]

QUEUES = 16


async def _send(namesrv: str, topic: str, prefix: str, count: int) -> set[str]:
    keys = {f"{prefix}{i}" for i in range(count)}
    async with Producer(namesrv=namesrv, group="G_mixed_feed") as producer:
        await create_topic(producer.instance, topic, queues=QUEUES)
        for key in sorted(keys):
            await producer.send(Message(topic=topic, body=key.encode(), keys=key))
    return keys


async def test_java_and_python_members_share_a_group(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    ours: dict[str, int] = {}  # key -> queue id, as our member consumed it
    changed = anyio.Event()

    def change(*_: object) -> None:
        nonlocal changed
        changed.set()
        changed = anyio.Event()

    async def handle(message: MessageExt) -> None:
        ours[message.keys[0]] = message.queue_id
        change()

    def java_keys(member: JavaMember, prefix: str) -> dict[str, int]:
        return {m["key"]: m["queue"] for m in member.messages if m["key"].startswith(prefix)}

    async def until(condition: object, member: JavaMember | None, timeout: float = 60) -> None:
        with anyio.fail_after(timeout):
            while not condition():  # type: ignore[operator]
                with anyio.move_on_after(1):  # (the Java member's lines wake us too)
                    await (member.arrived.wait() if member else changed.wait())

    first = await _send(rocketmq_namesrv, unique_topic, "a", 64)
    async with PushConsumer(
        group=unique_group,
        subscriptions={unique_topic: "*"},
        handler=handle,
        on_rebalance=change,
        namesrv=rocketmq_namesrv,
        options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
    ) as consumer:  # fmt: skip

        def mine() -> set[int]:
            return {q.queue_id for q in consumer.assigned() if q.topic == unique_topic}

        async with java_member(rocketmq_namesrv, unique_topic, unique_group) as member:
            await until(lambda: len(mine()) == QUEUES // 2, None)  # the group settled
            second = await _send(rocketmq_namesrv, unique_topic, "b", 160)
            await until(lambda: second <= set(ours) | set(java_keys(member, "b")), member)
            java_b, ours_b = java_keys(member, "b"), {k: q for k, q in ours.items() if k[0] == "b"}
            assert not set(java_b) & set(ours_b)  # no message of the settled group twice
            assert not set(java_b.values()) & set(ours_b.values())  # no queue shared
            assert set(ours_b.values()) == mine() and len(set(java_b.values())) == QUEUES // 2
        java_seen = {m["key"] for m in member.messages}  # all it consumed until it left
        # the Java member left: ours takes every queue, and loses nothing
        await until(lambda: len(mine()) == QUEUES, None)
        third = await _send(rocketmq_namesrv, unique_topic, "c", 64)
        await until(lambda: third <= set(ours), None)
    assert first | second <= set(ours) | java_seen
    # and the other way round: ours joins a Java member, leaves, and the Java member takes over
    async with java_member(rocketmq_namesrv, unique_topic, unique_group) as member:
        async with PushConsumer(
            namesrv=rocketmq_namesrv, group=unique_group, subscriptions={unique_topic: "*"},
            handler=handle, on_rebalance=change,
        ) as consumer:  # fmt: skip
            await until(lambda: len(mine()) == QUEUES // 2, None)
        fourth = await _send(rocketmq_namesrv, unique_topic, "d", 64)
        await until(lambda: fourth <= set(java_keys(member, "d")), member)
