"""Auto-batching against the real broker: single sends joined into batch frames, each message
stored as sent and answered with its own result."""

from __future__ import annotations

import anyio
import pytest

from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.metrics import METRICS
from rocketmq_actors.producer import (
    Message,
    Producer,
    ProducerOptions,
    SendResult,
    create_topic,
)
from rocketmq_actors.protocol.bodies import MessageQueue

from .pull import pull

pytestmark = pytest.mark.integration


def _counts(topic: str) -> tuple[float, float]:
    return (
        METRICS.value("rocketmq_client_auto_batches_total", topic=topic),
        METRICS.value("rocketmq_client_auto_batched_total", topic=topic),
    )


def _message(topic: str, index: int) -> Message:
    if index % 3 == 0:
        return Message(topic=topic, body=b"plain-%d" % index)
    return Message(topic=topic, body=b"rich-%d" % index, tags=f"t{index % 5}",
                   keys=[f"k{index}"], properties={"n": str(index)})  # fmt: skip


async def test_single_sends_are_joined_and_each_is_stored_as_sent(
    rocketmq_namesrv: str, unique_group: str, unique_topic: str
) -> None:
    options = ProducerOptions(auto_batch=True, max_pending=1000)
    async with Producer(namesrv=rocketmq_namesrv, group=unique_group, options=options) as producer:
        await create_topic(producer.instance, unique_topic, queues=1)
        messages = [_message(unique_topic, i) for i in range(300)]
        futures = [producer.send_nowait(m) for m in messages]  # (in one turn of the loop)
        with anyio.fail_after(60):
            flushed = await producer.flush()
        assert (flushed.sent, flushed.failed) == (300, 0)
        results: list[SendResult] = [f.result() for f in futures]
        batches, batched = _counts(unique_topic)
        assert batched == 300 and 1 <= batches <= 300 // 25  # 32 KiB batches of ~30-byte bodies
        assert len({r.msg_id for r in results}) == 300
        assert sorted(r.queue_offset for r in results) == list(range(300))
        queue = MessageQueue(unique_topic, results[0].queue.broker_name, 0)
        stored = await pull(producer.instance, queue, expect=300, group=unique_group)
    by_offset = {m.queue_offset: m for m in stored}
    assert len(by_offset) == 300
    for message, result in zip(messages, results, strict=True):
        got = by_offset[result.queue_offset]  # the result names where its own message is
        assert got.body == message.body and got.msg_id == result.msg_id
        assert got.tags == message.tags and got.keys == list(message.keys)
        assert got.properties.get("n") == message.properties.get("n")


async def test_sync_sends_from_many_tasks_share_frames(
    rocketmq_namesrv: str, unique_group: str, unique_topic: str
) -> None:
    options = ProducerOptions(auto_batch=True)
    results: list[SendResult] = []
    async with Producer(namesrv=rocketmq_namesrv, group=unique_group, options=options) as producer:
        await create_topic(producer.instance, unique_topic, queues=2)

        async def one(index: int) -> None:
            results.append(await producer.send(Message(topic=unique_topic, body=b"%d" % index)))

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for index in range(64):
                    tg.start_soon(one, index)
    batches, batched = _counts(unique_topic)
    assert len(results) == 64 and batched == 64 and batches < 64
    assert len({(r.queue.queue_id, r.queue_offset) for r in results}) == 64


async def test_what_cannot_join_a_batch_is_sent_alone(
    rocketmq_namesrv: str, unique_group: str, unique_topic: str
) -> None:
    options = ProducerOptions(auto_batch=True, compress_threshold=1024)
    async with Producer(namesrv=rocketmq_namesrv, group=unique_group, options=options) as producer:
        await create_topic(producer.instance, unique_topic, queues=2)
        alone = [
            await producer.send(Message(topic=unique_topic, body=b"z" * 2048)),  # compressed
            await producer.send(Message(topic=unique_topic, body=b"k"), sharding_key="user-1"),
            await producer.send(Message(topic=unique_topic, body=b"w", wait_store=False)),
        ]
        joined = await producer.send(Message(topic=unique_topic, body=b"j"))
    assert all(r.msg_id for r in alone) and joined.msg_id
    assert _counts(unique_topic) == (1.0, 1.0)  # only the last one went through a batch


async def test_a_stop_sends_what_waits_in_a_batch_without_waiting_out_its_delay(
    rocketmq_namesrv: str, unique_group: str, unique_topic: str
) -> None:
    options = ProducerOptions(auto_batch=True, batch_max_delay=30.0)
    async with Producer(namesrv=rocketmq_namesrv, group=unique_group, options=options,
                        client=ClientOptions(shutdown_timeout=20.0)) as producer:  # fmt: skip
        await create_topic(producer.instance, unique_topic, queues=1)
        await producer.send_oneway(Message(topic=unique_topic, body=b"route"))  # (route known)
        futures = [
            await producer.submit(Message(topic=unique_topic, body=b"%d" % i)) for i in range(10)
        ]
        assert not any(f.done() for f in futures)  # held by the 30 s delay
        with anyio.fail_after(15):  # (a contract: the stop lets the batch leave at once)
            await producer.stop()
    assert all(f.result().msg_id for f in futures)
    assert _counts(unique_topic) == (1.0, 10.0)
