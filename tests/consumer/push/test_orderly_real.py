"""Orderly PushConsumer against the real broker: queue locks, order across a rebalance."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence

import anyio
import pytest

from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.consumer.push.orderly import OrderlyConsumeService
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import MessageExt

from ..routes import registered_route

pytestmark = pytest.mark.integration

KEYS = [f"k{i}" for i in range(8)]
PER_KEY = 40


async def test_per_key_order_holds_across_a_rebalance(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_producer") as producer:
        await create_topic(producer.instance, unique_topic, queues=4)
        for seq in range(PER_KEY):
            for key in KEYS:
                await producer.send(Message(topic=unique_topic, body=f"{key}:{seq}".encode(),
                                            keys=[key]), sharding_key=key)  # fmt: skip
    log: list[tuple[int, str, int]] = []  # (member, key, seq) in the order handlers ran
    progressed = anyio.Event()
    running: dict[str, int] = defaultdict(int)  # handlers running at once, per key
    overlaps = 0

    def handler(member: int):  # type: ignore[no-untyped-def]
        async def handle(message: MessageExt) -> None:
            nonlocal progressed, overlaps
            key, seq = message.body.decode().split(":")
            running[key] += 1
            overlaps += running[key] > 1  # two consumers on one queue would show up here
            await anyio.sleep(0.003)  # a handler that takes a little time
            running[key] -= 1
            log.append((member, key, int(seq)))
            progressed.set()
            progressed = anyio.Event()

        return handle

    def member(i: int) -> PushConsumer:
        return PushConsumer(
            group=unique_group,
            subscriptions={unique_topic: "*"},
            handler=handler(i),
            namesrv=rocketmq_namesrv,
            options=PushOptions(orderly=True, consume_from=ConsumeFrom.FIRST_OFFSET,
                                rebalance_interval=2, pull_batch_size=4),
        )  # fmt: skip

    async def until(count: int, timeout: float) -> None:
        with anyio.fail_after(timeout):
            while len(log) < count:
                await progressed.wait()

    async with member(0) as first:
        await until(60, 30)
        async with member(1) as second:
            with anyio.fail_after(30):  # the second member takes half the queues
                while len(second.assigned()) < 2 or len(first.assigned()) > 3:
                    await progressed.wait()
            await until(len(KEYS) * PER_KEY, 60)
    by_key: dict[str, list[int]] = defaultdict(list)
    for _, key, seq in log:
        by_key[key].append(seq)
    for key in KEYS:
        assert by_key[key] == list(range(PER_KEY)), key  # in order, each exactly once
    assert {m for m, _, _ in log} == {0, 1}  # both members consumed
    assert overlaps == 0


async def test_a_failure_suspends_the_queue_and_retries_in_order(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_producer") as producer:
        await create_topic(producer.instance, unique_topic, queues=1)
        for i in range(5):
            await producer.send(Message(topic=unique_topic, body=b"m%d" % i), sharding_key="k")
    seen: list[tuple[bytes, int]] = []
    done = anyio.Event()

    async def handle(message: MessageExt) -> None:
        seen.append((message.body, message.reconsume_times))
        if message.body == b"m2" and message.reconsume_times < 2:
            raise RuntimeError("not yet")
        if message.body == b"m4":
            done.set()

    async with PushConsumer(
        group=unique_group,
        subscriptions={unique_topic: "*"},
        handler=handle,
        namesrv=rocketmq_namesrv,
        options=PushOptions(orderly=True, consume_from=ConsumeFrom.FIRST_OFFSET, suspend_delay=0.1),
    ) as consumer:  # fmt: skip
        with anyio.fail_after(30):
            await done.wait()
        assert consumer.failed == 2
    assert seen == [(b"m0", 0), (b"m1", 0), (b"m2", 0), (b"m2", 1), (b"m2", 2), (b"m3", 0),
                    (b"m4", 0)]  # fmt: skip


async def test_past_max_reconsume_times_an_orderly_message_is_dead_lettered(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_producer") as producer:
        await create_topic(producer.instance, unique_topic, queues=1)
        for body in (b"poison", b"after"):
            await producer.send(Message(topic=unique_topic, body=body), sharding_key="k")
    seen: list[bytes] = []
    done = anyio.Event()

    async def handle(message: MessageExt) -> None:
        seen.append(message.body)
        if message.body == b"poison":
            raise RuntimeError("never")
        done.set()

    async with PushConsumer(
        group=unique_group,
        subscriptions={unique_topic: "*"},
        handler=handle,
        namesrv=rocketmq_namesrv,
        options=PushOptions(orderly=True, consume_from=ConsumeFrom.FIRST_OFFSET, suspend_delay=0.1,
                            max_reconsume_times=2),
    ) as consumer:  # fmt: skip
        with anyio.fail_after(30):
            await done.wait()
        route = await registered_route(consumer.instance, f"%DLQ%{unique_group}")
        assert route.subscribe_queues  # the broker created the DLQ topic for the message
    assert seen == [b"poison"] * 3 + [b"after"]  # tried 1 + 2 times, then the queue moved on


def _to_queue(queues: Sequence[MessageQueue], message: Message, arg: object) -> MessageQueue:
    return next(q for q in queues if q.queue_id == arg)


async def test_a_long_handler_on_a_released_queue_blocks_neither_renewals_nor_the_new_owner(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    """Java's RebalancePushImpl tries a released orderly queue's consume lock briefly and keeps
    the queue (dropped) if a handler is running; RebalanceImpl asks for another round 500 ms
    after a refused lock (``rebalanceLater(500)``). Before: the release waited for the handler
    while holding the rebalance lock - lock renewals of the kept queues stopped - and the new
    member, refused the locks, waited for its next 20 s round."""
    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_producer") as producer:
        await create_topic(producer.instance, unique_topic, queues=4)
        for queue_id in range(4):
            await producer.send(Message(topic=unique_topic, body=b"slow"), selector=_to_queue,
                                arg=queue_id)  # fmt: skip
    finish = anyio.Event()
    started: set[int] = set()
    all_started = anyio.Event()
    changed = anyio.Event()  # a member's round ended, or the first member renewed its locks

    def change(*_: object) -> None:
        nonlocal changed
        changed.set()
        changed = anyio.Event()

    async def until(condition: Callable[[], bool], timeout: float) -> None:
        with anyio.fail_after(timeout):
            while not condition():
                await changed.wait()

    async def slow(message: MessageExt) -> None:
        started.add(message.queue_id)
        if len(started) == 4:
            all_started.set()
        await finish.wait()  # every queue's handler runs until the test lets it end

    async def idle(message: MessageExt) -> None:
        pass

    def member(handler: Callable[[MessageExt], Awaitable[None]]) -> PushConsumer:
        return PushConsumer(
            group=unique_group,
            subscriptions={unique_topic: "*"},
            handler=handler,
            on_rebalance=change,
            namesrv=rocketmq_namesrv,
            options=PushOptions(orderly=True, consume_from=ConsumeFrom.FIRST_OFFSET,
                                lock_interval=0.5, concurrency=4),
        )  # fmt: skip

    def topic_queues(consumer: PushConsumer) -> list[MessageQueue]:
        return [q for q in consumer.assigned() if q.topic == unique_topic]

    renewals = 0

    async with member(slow) as first:
        service = first._group.service
        assert isinstance(service, OrderlyConsumeService)
        renew = service.renew

        async def renew_and_count() -> None:  # (the lock keeper calls service.renew)
            nonlocal renewals
            await renew()
            renewals += 1
            change()

        service.renew = renew_and_count  # type: ignore[method-assign]
        with anyio.fail_after(30):
            await all_started.wait()
        async with member(idle) as second:
            # the first member gives two queues up: their handlers run on, so it defers
            owned = first._group.owned_queues
            await until(lambda: sum(pq.release_deferred for pq in owned().values()) == 2, 30)
            deferred_at, before = anyio.current_time(), renewals
            await until(lambda: renewals >= before + 3, 10)  # its locks are renewed meanwhile
            assert topic_queues(second) == []  # refused: the first member holds the locks
            finish.set()
            await until(lambda: len(topic_queues(second)) == 2 == len(topic_queues(first)), 5)
            assert anyio.current_time() - deferred_at < 10  # not the 20 s rebalance interval
            assert set(topic_queues(first)).isdisjoint(topic_queues(second))
