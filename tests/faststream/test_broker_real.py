"""The FastStream broker against the session cluster: round trip through a publisher, ack /
nack (with delay) / reject as consume success, reconsume later and dead letter, orderly
subscribers, SQL92 selectors, the FastStream app's lifespan, and TestRocketMQBroker's
with_real mode."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from faststream import FastStream
from faststream.exceptions import NackMessage, RejectMessage
from pydantic import BaseModel

from rocketmq_actors.consumer.push import ConsumeFrom
from rocketmq_actors.faststream import RocketMQBroker, RocketMQMessage, TestRocketMQBroker
from rocketmq_actors.faststream.testing import subscribers_of
from rocketmq_actors.producer import Producer, SendResult, create_topic

from ..consumer.routes import dead_letters

# once: the FastStream layer is client-side (the client under it runs on every version)
pytestmark = [pytest.mark.integration, pytest.mark.once]

FIRST = {"consume_from": ConsumeFrom.FIRST_OFFSET}


class Order(BaseModel):
    order_id: str
    amount_cents: int


class Collected:
    """What handlers saw; ``wait(n)`` returns once ``n`` items arrived (or fails)."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self._changed = anyio.Event()

    def add(self, item: Any) -> None:
        self.items.append(item)
        self._changed.set()
        self._changed = anyio.Event()

    async def wait(self, n: int, timeout: float = 40.0) -> list[Any]:
        with anyio.fail_after(timeout):
            while len(self.items) < n:
                await self._changed.wait()
        return self.items


async def make_topics(namesrv: str, *topics: str, queues: int = 4) -> None:
    async with Producer(namesrv=namesrv, group="G_faststream_topics") as producer:
        for topic in topics:
            await create_topic(producer.instance, topic, queues=queues)


async def test_round_trip_through_a_typed_handler_and_its_publisher(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    results = f"{unique_topic}_results"
    await make_topics(rocketmq_namesrv, unique_topic, results)
    broker = RocketMQBroker(rocketmq_namesrv)
    got = Collected()

    @broker.subscriber(unique_topic, group=unique_group, tags="paid", consumer_options=FIRST)
    @broker.publisher(results, tags="receipt")
    async def bill(order: Order, message: RocketMQMessage) -> dict[str, Any]:
        assert message.raw_message.keys == [order.order_id]
        return {"order_id": order.order_id, "cents": order.amount_cents}

    @broker.subscriber(results, group=f"{unique_group}_mail", consumer_options=FIRST)
    async def mail(receipt: dict[str, Any], message: RocketMQMessage) -> None:
        got.add((receipt, message.raw_message.tags, message.correlation_id))

    async with broker:
        await broker.start()
        sent = await broker.publish(
            Order(order_id="o-1", amount_cents=120), unique_topic, tags="paid", keys="o-1",
            correlation_id="corr-1",
        )  # fmt: skip
        assert isinstance(sent, SendResult)
        await broker.publish({"order_id": "o-2", "amount_cents": 1}, unique_topic, tags="other")
        (item,) = await got.wait(1)
        assert item == ({"order_id": "o-1", "cents": 120}, "receipt", "corr-1")
        producer = broker.producer
        assert producer is not None
        consumers = [sub.consumer for sub in subscribers_of(broker)]
        assert all(c is not None and c.instance is producer.instance for c in consumers)
    assert not producer.instance.running  # the shared instance stopped with the broker
    assert broker.producer is None  # stopped


async def test_nack_with_delay_reconsumes_and_reject_dead_letters(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    await make_topics(rocketmq_namesrv, unique_topic, queues=1)
    broker = RocketMQBroker(rocketmq_namesrv)
    seen = Collected()

    @broker.subscriber(unique_topic, group=unique_group, consumer_options=FIRST)
    async def handle(body: str, message: RocketMQMessage) -> None:
        seen.add((body, message.raw_message.reconsume_times))
        if body == "later" and message.raw_message.reconsume_times == 0:
            raise NackMessage(delay=1)  # delay level 1: again in a second
        if body == "poison":
            raise RejectMessage()

    async with broker:
        await broker.start()
        await broker.publish("later", unique_topic)
        await broker.publish("poison", unique_topic)
        items = await seen.wait(3)
        assert sorted(items) == [("later", 0), ("later", 1), ("poison", 0)]
        (dead,) = await dead_letters(rocketmq_namesrv, unique_group, 1)
        assert dead.body == b"poison"


async def test_a_failing_handler_is_reconsumed_later(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    await make_topics(rocketmq_namesrv, unique_topic, queues=1)
    broker = RocketMQBroker(rocketmq_namesrv)
    seen = Collected()
    options = {**FIRST, "retry_delay_level": 1}

    @broker.subscriber(unique_topic, group=unique_group, consumer_options=options)
    async def handle(body: str, message: RocketMQMessage) -> None:
        seen.add(message.raw_message.reconsume_times)
        if message.raw_message.reconsume_times == 0:
            raise ValueError("first time fails")  # NACK_ON_ERROR: reconsume later

    async with broker:
        await broker.start()
        await broker.publish("x", unique_topic)
        assert await seen.wait(2) == [0, 1]


async def test_orderly_subscriber_keeps_a_sharding_keys_order(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    await make_topics(rocketmq_namesrv, unique_topic, queues=4)
    broker = RocketMQBroker(rocketmq_namesrv)
    seen = Collected()

    @broker.subscriber(unique_topic, group=unique_group, orderly=True, consumer_options=FIRST)
    async def handle(item: dict[str, int]) -> None:
        seen.add((item["key"], item["n"]))

    async with broker:
        await broker.start()
        for n in range(10):
            for key in (1, 2):
                await broker.publish({"key": key, "n": n}, unique_topic, sharding_key=str(key))
        items = await seen.wait(20)
        for key in (1, 2):
            assert [n for k, n in items if k == key] == list(range(10))


async def test_sql_selector_filters_on_the_broker(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    await make_topics(rocketmq_namesrv, unique_topic, queues=1)
    broker = RocketMQBroker(rocketmq_namesrv)
    seen = Collected()

    @broker.subscriber(
        unique_topic, group=unique_group, sql="region = 'eu'", consumer_options=FIRST
    )
    async def handle(body: str) -> None:
        seen.add(body)

    async with broker:
        await broker.start()
        await broker.publish("us", unique_topic, headers={"region": "us"})
        await broker.publish("eu", unique_topic, headers={"region": "eu"})
        await broker.publish("eu2", unique_topic, headers={"region": "eu"})
        assert await seen.wait(2) == ["eu", "eu2"]


async def test_faststream_app_lifespan_starts_and_stops_the_broker(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    await make_topics(rocketmq_namesrv, unique_topic, queues=1)
    broker = RocketMQBroker(rocketmq_namesrv)
    app = FastStream(broker)
    seen = Collected()
    hooks: list[str] = []

    @broker.subscriber(unique_topic, group=unique_group, consumer_options=FIRST)
    async def handle(body: str) -> None:
        seen.add(body)

    @app.after_startup
    async def announce() -> None:
        hooks.append("up")
        await broker.publish("hello", unique_topic)

    @app.on_shutdown
    async def bye() -> None:
        hooks.append("down")

    await app.start()  # what `faststream run` does (hooks, then the broker), without signals
    try:
        assert await broker.ping()
        assert await seen.wait(1) == ["hello"]
    finally:
        await app.stop()
    assert hooks == ["up", "down"]
    assert not await broker.ping() and broker.producer is None


async def test_test_broker_with_real_runs_against_the_cluster(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    await make_topics(rocketmq_namesrv, unique_topic, queues=1)
    broker = RocketMQBroker(rocketmq_namesrv)
    done = anyio.Event()

    @broker.subscriber(unique_topic, group=unique_group, consumer_options=FIRST)
    async def handle(order: Order) -> None:
        done.set()

    async with TestRocketMQBroker(broker, with_real=True) as br:
        await br.publish(Order(order_id="o-9", amount_cents=9), unique_topic)
        with anyio.fail_after(40):
            await done.wait()
        handle.mock.assert_called_once_with({"order_id": "o-9", "amount_cents": 9})


async def test_get_one_and_async_for_without_a_handler(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    await make_topics(rocketmq_namesrv, unique_topic, queues=1)
    broker = RocketMQBroker(rocketmq_namesrv)
    subscriber = broker.subscriber(unique_topic, group=unique_group, consumer_options=FIRST)
    async with broker:
        await broker.start()
        for n in range(3):
            await broker.publish({"n": n}, unique_topic)
        first = await subscriber.get_one(timeout=40)
        assert first is not None and await first.decode() == {"n": 0}
        await first.ack()
        assert first.raw_message.settled
        rest = []
        with anyio.fail_after(40):
            async for message in subscriber:
                rest.append(await message.decode())
                if len(rest) == 2:
                    break
        assert rest == [{"n": 1}, {"n": 2}]


async def test_orderly_nack_suspends_the_queue_and_delivers_the_same_message_again(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    await make_topics(rocketmq_namesrv, unique_topic, queues=2)
    broker = RocketMQBroker(rocketmq_namesrv)
    seen = Collected()

    @broker.subscriber(unique_topic, group=unique_group, orderly=True, consumer_options=FIRST)
    async def handle(body: str) -> None:
        seen.add(body)
        if body == "a" and seen.items.count("a") == 1:
            raise NackMessage(delay=0.5)  # the queue waits half a second, then "a" again

    async with broker:
        await broker.start()
        for body in ("a", "b", "c"):
            await broker.publish(body, unique_topic, sharding_key="one-queue")
        assert await seen.wait(4) == ["a", "a", "b", "c"]


async def test_the_access_log_is_silent_until_logging_is_configured(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str,
    capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    await make_topics(rocketmq_namesrv, unique_topic)
    broker = RocketMQBroker(rocketmq_namesrv)
    got = Collected()

    @broker.subscriber(unique_topic, group=unique_group, consumer_options=FIRST)
    async def handle(body: str) -> None:
        got.add(body)

    async with broker:
        await broker.start()
        await broker.publish("one", unique_topic)
        await got.wait(1)
        # FastStream's other brokers print their access log to stdout by default
        assert capfd.readouterr().out == ""
        with caplog.at_level("INFO", logger="faststream.access.rocketmq"):
            await broker.publish("two", unique_topic)
            await got.wait(2)
            with anyio.fail_after(10):  # the "Processed" line follows the handler's return
                while not any(r.getMessage() == "Processed" for r in caplog.records):  # noqa: ASYNC110
                    await anyio.sleep(0.01)
    lines = [r for r in caplog.records if r.name == "faststream.access.rocketmq"]
    assert {getattr(r, "topic", None) for r in lines} == {unique_topic}
    assert capfd.readouterr().out == ""


async def test_stop_consume_stops_the_subscriber_and_leaves_the_message_unconsumed(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    from faststream.exceptions import StopConsume

    await make_topics(rocketmq_namesrv, unique_topic, queues=1)
    broker = RocketMQBroker(rocketmq_namesrv)
    got = Collected()

    @broker.subscriber(unique_topic, group=unique_group, consumer_options=FIRST)
    async def handle(body: str) -> None:
        got.add(body)
        raise StopConsume

    async with broker:
        await broker.start()
        await broker.publish("first", unique_topic)
        assert await got.wait(1) == ["first"]
        (subscriber,) = list(subscribers_of(broker))
        with anyio.fail_after(20):  # its consumer stops beside the handler
            while subscriber.consumer is not None or subscriber._stopping:  # noqa: ASYNC110
                await anyio.sleep(0.05)
        assert not subscriber.running
    # not consumed: the group's next member gets it again (sent back, or - the consumer
    # stopping while it was handled - its offset never committed)
    again = Collected()
    second = RocketMQBroker(rocketmq_namesrv)

    @second.subscriber(unique_topic, group=unique_group, consumer_options=FIRST)
    async def resume(body: str, message: RocketMQMessage) -> None:
        again.add((body, message.raw_message.reconsume_times))

    async with second:
        await second.start()
        assert (await again.wait(1))[0][0] == "first"
