"""Per-message settlement and value deserializers against the real broker."""

from __future__ import annotations

import json
import time
from typing import Any

import anyio
import pytest

from rocketmq_actors.consumer.core.message import ReceivedMessage, RecordDeserializationError
from rocketmq_actors.consumer.core.settlement import (
    DelayLevel,
    MessageAlreadySettled,
    SettlementNotSupported,
)
from rocketmq_actors.consumer.pull import PullConsumer, PullOptions
from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.protocol.bodies import MessageQueue

from ..routes import dead_letters

pytestmark = pytest.mark.integration


async def _produce(namesrv: str, topic: str, bodies: list[bytes]) -> None:
    async with Producer(namesrv=namesrv, group="G_settle_feed") as producer:
        await create_topic(producer.instance, topic, queues=1)
        for body in bodies:
            await producer.send(Message(topic=topic, body=body))


class _Values:
    """A handler that keeps each message's value and sets ``done`` at the ``n``-th."""

    def __init__(self, n: int) -> None:
        self.values: list[Any] = []
        self.done = anyio.Event()
        self._n = n

    async def __call__(self, message: ReceivedMessage[Any]) -> None:
        self.values.append(message.value)
        if len(self.values) == self._n:
            self.done.set()


def _values_until(n: int) -> tuple[list[Any], anyio.Event, _Values]:
    handler = _Values(n)
    return handler.values, handler.done, handler


class Seen:
    """What a handler saw: (body, reconsume_times, when); wakes a waiter at ``count``."""

    def __init__(self, count: int) -> None:
        self.items: list[tuple[bytes, int, float]] = []
        self.count = count
        self.done = anyio.Event()

    def add(self, message: ReceivedMessage[Any]) -> None:
        self.items.append((message.body, message.reconsume_times, time.monotonic()))
        if len(self.items) >= self.count:
            self.done.set()

    async def wait(self, timeout: float = 40) -> None:
        with anyio.fail_after(timeout):
            await self.done.wait()


async def test_concurrent_nack_with_level_1_redelivers_after_a_second(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    await _produce(rocketmq_namesrv, unique_topic, [b"later"])
    seen = Seen(2)
    nacked_at: list[float] = []

    async def handle(message: ReceivedMessage[bytes]) -> None:
        seen.add(message)
        if message.reconsume_times == 0:
            nacked_at.append(time.monotonic())
            message.nack(delay=1)  # then return: reconsume later, in 1 s (delay level 1)

    async with PushConsumer(
        group=unique_group,
        subscriptions={unique_topic: "*"},
        handler=handle,
        namesrv=rocketmq_namesrv,
        options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
    ) as consumer:  # fmt: skip
        await seen.wait()
        assert consumer.failed == 1 and consumer.consumed >= 1
    (first, second) = seen.items[:2]
    assert (first[:2], second[:2]) == ((b"later", 0), (b"later", 1))
    waited = second[2] - nacked_at[0]
    # level 1, not the broker's default for a failure (level 3 + reconsume times: 10 s)
    assert 1.0 <= waited < 9.0


async def test_a_batch_handler_nacking_one_message_has_only_that_one_redelivered(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    await _produce(rocketmq_namesrv, unique_topic, [b"m0", b"m1", b"m2"])
    batches: list[list[tuple[bytes, int]]] = []
    again = anyio.Event()

    async def handle(messages: list[ReceivedMessage[bytes]]) -> None:
        batches.append([(m.body, m.reconsume_times) for m in messages])
        if any(m.reconsume_times for m in messages):
            again.set()
        elif len(batches) == 1:
            messages[2].nack(delay=DelayLevel(1))  # then return: m0 and m1 are consumed

    async with PushConsumer(
        group=unique_group,
        subscriptions={unique_topic: "*"},
        batch_handler=handle,
        namesrv=rocketmq_namesrv,
        options=PushOptions(consume_batch_size=3, concurrency=1, retry_delay_level=1,
                            consume_from=ConsumeFrom.FIRST_OFFSET),
    ) as consumer:  # fmt: skip
        with anyio.fail_after(40):
            await again.wait()
        assert (consumer.consumed, consumer.failed) == (3, 1)
    # anything sent back with m2 (same level, sent before it) would have come with or before it
    assert batches == [[(b"m0", 0), (b"m1", 0), (b"m2", 0)], [(b"m2", 1)]]


async def test_process_with_an_exception_in_async_for_redelivers(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    await _produce(rocketmq_namesrv, unique_topic, [b"fails-once", b"fine"])
    got: list[tuple[bytes, int]] = []
    async with PushConsumer(
        group=unique_group,
        subscriptions={unique_topic: "*"},
        namesrv=rocketmq_namesrv,
        options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
    ) as consumer:  # fmt: skip
        with anyio.fail_after(40):
            async for message in consumer:
                got.append((message.body, message.reconsume_times))
                try:
                    async with message.process(delay=1):
                        if message.body == b"fails-once" and message.reconsume_times == 0:
                            raise ValueError("not now")
                except ValueError:
                    pass  # process() nacked it and let the exception go on, as aio-pika's
                if len(got) == 3:
                    break
        assert consumer.failed == 1
    assert got == [(b"fails-once", 0), (b"fine", 0), (b"fails-once", 1)]


async def test_orderly_nack_suspends_and_redelivers_the_same_message_first(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    await _produce(rocketmq_namesrv, unique_topic, [b"m0", b"m1", b"m2"])
    seen = Seen(4)

    async def handle(message: ReceivedMessage[bytes]) -> None:
        seen.add(message)
        if message.body == b"m0" and message.reconsume_times == 0:
            message.nack(delay=0.5)  # suspend the queue half a second

    async with PushConsumer(
        group=unique_group,
        subscriptions={unique_topic: "*"},
        handler=handle,
        namesrv=rocketmq_namesrv,
        options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET, orderly=True),
    ):  # fmt: skip
        await seen.wait()
    assert [(b, n) for b, n, _ in seen.items[:4]] == [
        (b"m0", 0), (b"m0", 1), (b"m1", 0), (b"m2", 0),
    ]  # fmt: skip
    assert seen.items[1][2] - seen.items[0][2] >= 0.5


async def test_double_settlement_raises_and_the_first_holds(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    await _produce(rocketmq_namesrv, unique_topic, [b"once", b"next"])
    got: list[tuple[bytes, int]] = []
    errors: list[BaseException] = []
    async with PushConsumer(
        group=unique_group,
        subscriptions={unique_topic: "*"},
        namesrv=rocketmq_namesrv,
        options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET, retry_delay_level=1),
    ) as consumer:  # fmt: skip
        with anyio.fail_after(40):
            async for message in consumer:
                got.append((message.body, message.reconsume_times))
                if message.body == b"once":
                    message.ack()
                    with pytest.raises(MessageAlreadySettled) as caught:
                        message.nack(delay=1)
                    errors.append(caught.value)
                    with pytest.raises(MessageAlreadySettled):
                        consumer.reconsume_later(message)
                if message.body == b"next":
                    break
        assert consumer.failed == 0
    assert got == [(b"once", 0), (b"next", 0)] and len(errors) == 1  # the ack held


async def test_json_deserializer_gives_dicts_push_and_pull(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    await _produce(
        rocketmq_namesrv, unique_topic, [json.dumps({"n": i}).encode() for i in range(3)]
    )
    values, done, handle = _values_until(3)

    async with PushConsumer(
        group=unique_group,
        subscriptions={unique_topic: "*"},
        handler=handle,
        value_deserializer=json.loads,
        namesrv=rocketmq_namesrv,
        options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
    ):  # fmt: skip
        with anyio.fail_after(30):
            await done.wait()
    assert sorted(v["n"] for v in values) == [0, 1, 2]
    async with PullConsumer(
        group=unique_group + "_pull", value_deserializer=json.loads, namesrv=rocketmq_namesrv,
        options=PullOptions(auto_offset_reset="earliest"),
    ) as pull:  # fmt: skip
        await pull.assign([MessageQueue(unique_topic, "broker-a", 0)])
        with anyio.fail_after(30):
            pulled = [(await pull.getone()).value for _ in range(3)]
    assert pulled == [{"n": 0}, {"n": 1}, {"n": 2}]


@pytest.mark.parametrize("orderly", [False, True], ids=["concurrent", "orderly"])
async def test_a_body_the_deserializer_rejects_goes_to_the_dlq_and_the_rest_is_consumed(
    orderly: bool, rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    bodies = [b'{"n": 0}', b"not json", b'{"n": 2}', b'{"n": 3}']
    await _produce(rocketmq_namesrv, unique_topic, bodies)
    values, done, handle = _values_until(3)

    async with PushConsumer(
        group=unique_group,
        subscriptions={unique_topic: "*"},
        handler=handle,
        value_deserializer=json.loads,
        namesrv=rocketmq_namesrv,
        options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET, orderly=orderly,
                            max_reconsume_times=None if orderly else 0),
    ) as consumer:  # fmt: skip
        with anyio.fail_after(30):
            await done.wait()
        assert consumer.failed >= 1 and consumer.running
    assert sorted(v["n"] for v in values) == [0, 2, 3]
    (dead,) = await dead_letters(rocketmq_namesrv, unique_group, 1)
    assert dead.body == b"not json"


async def test_pull_consumer_raises_for_a_rejected_body_after_the_records_before_it(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    await _produce(rocketmq_namesrv, unique_topic, [b"[0]", b"oops", b"[2]"])
    queue = MessageQueue(unique_topic, "broker-a", 0)
    async with PullConsumer(
        group=unique_group, value_deserializer=json.loads, namesrv=rocketmq_namesrv,
        options=PullOptions(auto_offset_reset="earliest"),
    ) as pull:  # fmt: skip
        await pull.assign([queue])
        with anyio.fail_after(30):
            first = await pull.getone()
            assert first.value == [0]
            for _ in range(2):  # again and again, until seeked past
                with pytest.raises(RecordDeserializationError) as caught:
                    await pull.getmany(timeout=10)
                assert (caught.value.queue, caught.value.offset) == (queue, 1)
                assert pull.position(queue) == 1
            pull.seek(queue, caught.value.offset + 1)
            last = await pull.getone()
        assert last.value == [2]
        with pytest.raises(SettlementNotSupported, match="commit"):
            last.ack()
