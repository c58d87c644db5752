"""submit's typed future, flush(), and value_serializer against the real broker."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from rocketmq_actors.blocking import BlockingProducer
from rocketmq_actors.errors import InvalidMessage
from rocketmq_actors.producer import (
    FlushResult,
    Message,
    Producer,
    ProducerOptions,
    SendFuture,
    SendResult,
    SendStatus,
)

from .fakes import Calls
from .pull import pull

pytestmark = pytest.mark.integration


def _json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True).encode()


async def test_flush_waits_for_every_submit(
    rocketmq_namesrv: str, unique_group: str, unique_topic: str
) -> None:
    async with Producer(
        namesrv=rocketmq_namesrv, group=unique_group, options=ProducerOptions(max_pending=64)
    ) as producer:
        futures: list[SendFuture] = [
            await producer.submit(Message(topic=unique_topic, body=b"m%d" % i)) for i in range(300)
        ]
        assert not all(f.done() for f in futures)  # (else flush would have nothing to wait for)
        flushed = await producer.flush(timeout=30)
        # what was still unresolved when flush began: every one of them sent
        assert 0 < flushed.sent <= len(futures) and (flushed.failed, flushed.pending) == (0, 0)
        assert all(f.done() for f in futures)
        # typed: mypy --strict checks these annotations against SendFuture's
        first: SendResult = await futures[0]
        last: SendResult = futures[-1].result()
        assert first.status is SendStatus.SEND_OK and futures[0].exception() is None
        assert last.msg_id != first.msg_id
        # nothing admitted since: a second flush has nothing to wait for
        assert await producer.flush() == FlushResult(0, 0, 0)


async def test_flush_counts_failures_and_a_timeout_leaves_pending(
    rocketmq_namesrv: str, unique_group: str, unique_topic: str
) -> None:
    async with Producer(namesrv=rocketmq_namesrv, group=unique_group) as producer:
        done = anyio.Event()
        seen: list[SendFuture] = []

        def callback(future: SendFuture) -> None:
            seen.append(future)
            done.set()

        future = await producer.submit(Message(topic=unique_topic, body=b"cb"))
        future.add_done_callback(callback)
        flushed = await producer.flush()
        assert flushed.sent + flushed.failed <= 1 and flushed.pending == 0
        with anyio.fail_after(5):
            await done.wait()
        assert seen == [future]
        # a flush cancelled from outside cancels none of the sends it waited for
        pending = [
            await producer.submit(Message(topic=unique_topic, body=b"c%d" % i)) for i in range(50)
        ]
        with anyio.move_on_after(0):
            await producer.flush()
        result = await producer.flush(timeout=30)
        assert result.failed == 0 and result.pending == 0
        assert all(f.done() and f.exception() is None for f in pending)


async def test_send_callbacks_are_called_once_each_as_javas_send_callback(
    rocketmq_namesrv: str, unique_group: str, unique_topic: str
) -> None:
    calls = Calls()
    async with Producer(
        namesrv=rocketmq_namesrv, group=unique_group, options=ProducerOptions(max_pending=64)
    ) as producer:
        futures = [
            await producer.submit(
                Message(topic=unique_topic, body=b"m%d" % i),
                sharding_key="k" if i % 10 == 0 else None,  # (some through the sender tasks)
                callback=calls,
            )
            for i in range(300)
        ]
        await calls.until(300, within=30)
        ended = calls.futures
        assert sorted(map(id, ended)) == sorted(map(id, futures))
        results = [future.result() for future in ended]
        assert all(result.status is SendStatus.SEND_OK for result in results)
        assert len({result.msg_id for result in results}) == 300
        await producer.flush()
        await anyio.wait_all_tasks_blocked()
        assert len(ended) == 300  # none called back twice


async def test_value_serializer_round_trip(
    rocketmq_namesrv: str, unique_group: str, unique_topic: str
) -> None:
    async with Producer(
        namesrv=rocketmq_namesrv, group=unique_group, value_serializer=_json
    ) as producer:
        one = await producer.send(Message(topic=unique_topic, value={"id": 1}, keys="o-1"))
        nowait = await (await producer.submit(Message(topic=unique_topic, value=[2])))
        batch = await producer.send_batch(
            [Message(topic=unique_topic, value={"id": 3}), Message(topic=unique_topic, body=b"4")]
        )
        with pytest.raises(InvalidMessage, match="value_serializer failed"):
            await producer.send(Message(topic=unique_topic, value={1, 2}))  # a set: not JSON
        for result, body in [(one, b'{"id": 1}'), (nowait, b"[2]"), (batch[0], b'{"id": 3}'),
                             (batch[1], b"4")]:  # fmt: skip
            got = await pull(producer.instance, result.queue, expect=1,
                             offset=result.queue_offset)  # fmt: skip
            assert got[0].body == body


def test_blocking_producer_passes_the_serializer_through(
    rocketmq_namesrv: str, unique_group: str, unique_topic: str
) -> None:
    with BlockingProducer(
        namesrv=rocketmq_namesrv, group=unique_group, value_serializer=_json
    ) as producer:
        result = producer.send(Message(topic=unique_topic, value={"sync": True}))
        assert result.status is SendStatus.SEND_OK
        with pytest.raises(InvalidMessage, match="value_serializer failed"):
            producer.send(Message(topic=unique_topic, value=object()))
