"""PushConsumer against the real broker."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from rocketmq_actors.consumer.pull import PullConsumer, PullStatus
from rocketmq_actors.consumer.push import ConsumeFrom, MessageModel, PushConsumer
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import MessageExt

pytestmark = pytest.mark.integration


class Inbox:
    """Collects what a handler saw; wakes waiters on every message."""

    def __init__(self, fail: Callable[[MessageExt], bool] = lambda m: False) -> None:
        self.bodies: list[bytes] = []
        self.seen: list[MessageExt] = []
        self._fail = fail
        self._changed = anyio.Event()

    async def handle(self, message: MessageExt) -> None:
        self.seen.append(message)
        self._changed.set()
        self._changed = anyio.Event()
        if self._fail(message):
            raise RuntimeError("handler failure")
        self.bodies.append(message.body)

    async def wait_for(self, count: int, timeout: float = 30) -> None:
        with anyio.fail_after(timeout):
            while len(self.bodies) < count:
                await self._changed.wait()


async def _produce(namesrv: str, topic: str, bodies: list[bytes], queues: int = 4) -> None:
    async with Producer(namesrv=namesrv, group="G_push_feed") as producer:
        await create_topic(producer.instance, topic, queues=queues)
        for body in bodies:
            await producer.send(Message(topic=topic, body=body))


async def test_consumes_everything_then_resumes_from_the_committed_offset(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    first = [f"a{i}".encode() for i in range(100)]
    await _produce(rocketmq_namesrv, unique_topic, first)
    inbox = Inbox()
    async with PushConsumer(
        namesrv=rocketmq_namesrv, group=unique_group, subscriptions={unique_topic: "*"},
        handler=inbox.handle, consume_from=ConsumeFrom.FIRST_OFFSET, persist_interval=0.2,
    ):  # fmt: skip
        await inbox.wait_for(100)
    assert sorted(inbox.bodies) == sorted(first)
    later = [f"b{i}".encode() for i in range(10)]
    await _produce(rocketmq_namesrv, unique_topic, later)
    again = Inbox()
    async with PushConsumer(
        namesrv=rocketmq_namesrv, group=unique_group, subscriptions={unique_topic: "*"},
        handler=again.handle, consume_from=ConsumeFrom.FIRST_OFFSET,
    ):  # fmt: skip
        await again.wait_for(10)
    # a clean restart resumes at the committed offsets: nothing redelivered, nothing skipped
    assert sorted(again.bodies) == sorted(later)


async def test_three_members_share_then_two_take_over(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    await _produce(rocketmq_namesrv, unique_topic, [b"warm-up"], queues=6)
    inbox = Inbox()
    changed = anyio.Event()
    shares: dict[int, list[MessageQueue]] = {}

    def listener(member: int) -> Callable[[list[MessageQueue]], None]:
        def on_rebalance(queues: list[MessageQueue]) -> None:
            nonlocal changed
            shares[member] = [q for q in queues if q.topic == unique_topic]
            changed.set()
            changed = anyio.Event()

        return on_rebalance

    async def until(predicate: Callable[[], bool], timeout: float) -> float:
        started = time.monotonic()
        with anyio.fail_after(timeout):
            while not predicate():
                await changed.wait()
        return time.monotonic() - started

    def consumer(member: int) -> PushConsumer:
        return PushConsumer(
            namesrv=rocketmq_namesrv, group=unique_group, subscriptions={unique_topic: "*"},
            handler=inbox.handle, consume_from=ConsumeFrom.FIRST_OFFSET,
            on_rebalance=listener(member), rebalance_interval=20,
        )  # fmt: skip

    async with consumer(0), consumer(1):
        async with consumer(2):
            await until(lambda: sorted(len(shares.get(m, [])) for m in range(3)) == [2, 2, 2], 40)
            batch = [f"x{i}".encode() for i in range(300)]
            await _produce(rocketmq_namesrv, unique_topic, batch, queues=6)
            await inbox.wait_for(301)
        took = await until(lambda: len(shares[0]) + len(shares[1]) == 6, 25)
        assert took <= 25
        more = [f"y{i}".encode() for i in range(300)]
        await _produce(rocketmq_namesrv, unique_topic, more, queues=6)
        await inbox.wait_for(601)
    assert set(inbox.bodies) >= {b"warm-up", *batch, *more}  # every message at least once


async def test_failures_are_retried_then_dead_lettered(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    inbox = Inbox(fail=lambda m: m.body == b"poison")
    async with PushConsumer(
        namesrv=rocketmq_namesrv, group=unique_group, subscriptions={unique_topic: "*"},
        handler=inbox.handle, consume_from=ConsumeFrom.FIRST_OFFSET,
        max_reconsume_times=1, retry_delay_level=1,
    ):  # fmt: skip
        await _produce(rocketmq_namesrv, unique_topic, [b"fine", b"poison"], queues=1)
        await inbox.wait_for(1)
        with anyio.fail_after(40):
            while len([m for m in inbox.seen if m.body == b"poison"]) < 2:
                await inbox._changed.wait()
    attempts = [m for m in inbox.seen if m.body == b"poison"]
    assert [m.reconsume_times for m in attempts] == [0, 1]
    assert attempts[1].topic == unique_topic  # retried under its own topic, not %RETRY%
    async with PullConsumer(namesrv=rocketmq_namesrv, group=unique_group + "_dlq") as reader:
        dlq = MessageQueue(f"%DLQ%{unique_group}", "broker-a", 0)
        with anyio.fail_after(30):
            while True:
                result = await reader.pull(dlq, 0, wait=5)
                if result.status is PullStatus.FOUND:
                    break
        assert [m.body for m in result.messages] == [b"poison"]


async def test_broadcasting_every_member_gets_everything_and_offsets_survive(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str, tmp_path: Path
) -> None:
    await _produce(rocketmq_namesrv, unique_topic, [b"seed"], queues=2)
    inboxes = [Inbox(), Inbox()]

    def member(i: int, inbox: Inbox) -> PushConsumer:
        return PushConsumer(
            namesrv=rocketmq_namesrv, group=unique_group, subscriptions={unique_topic: "*"},
            handler=inbox.handle, model=MessageModel.BROADCASTING,
            consume_from=ConsumeFrom.FIRST_OFFSET, offset_dir=tmp_path / f"m{i}",
        )  # fmt: skip

    async with member(0, inboxes[0]), member(1, inboxes[1]):
        bodies = [f"b{i}".encode() for i in range(50)]
        await _produce(rocketmq_namesrv, unique_topic, bodies, queues=2)
        for inbox in inboxes:
            await inbox.wait_for(51)
    for inbox in inboxes:
        assert sorted(inbox.bodies) == sorted([b"seed", *bodies])
    restarted = Inbox()
    async with member(0, restarted):
        await _produce(rocketmq_namesrv, unique_topic, [b"after"], queues=2)
        await restarted.wait_for(1)
    assert restarted.bodies == [b"after"]  # its local offsets survived the restart
