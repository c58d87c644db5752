"""BlockingProducer: the async client from synchronous code."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from functools import partial

import pytest

from rocketmq_actors.blocking import BlockingProducer
from rocketmq_actors.consumer.pull import PullConsumer
from rocketmq_actors.errors import ClientClosed, InvalidMessage
from rocketmq_actors.producer import Message, create_topic
from rocketmq_actors.protocol.bodies import MessageQueue
from tests.broker_state import until

pytestmark = pytest.mark.integration


async def test_works_inside_a_running_event_loop_like_a_notebook(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    # this test body runs in an event loop, as a Jupyter cell does; the calls below block it
    with BlockingProducer(namesrv=rocketmq_namesrv, group=f"{unique_group}_producer") as producer:
        # ordered messages need the topic's real route (not one guessed for a new topic)
        producer._portal.call(partial(create_topic, producer.producer.instance, unique_topic))
        first = producer.send(Message(topic=unique_topic, body=b"one"))
        summary = producer.send_many(
            [(Message(topic=unique_topic, body=b"m%d" % i, keys=[f"k{i}"]), "same-key")
             for i in range(300)] + [(Message(topic="bad topic!", body=b"x"), None)],
            chunk_size=32, max_chunks=2,
        )  # fmt: skip
    assert summary.sent == 300 and summary.failed == 1
    assert "bad topic!" in summary.errors[0] or "InvalidMessage" in summary.errors[0]
    with pytest.raises(ClientClosed, match="closed"):
        producer.send(Message(topic=unique_topic, body=b"late"))
    queue = MessageQueue(unique_topic, first.queue.broker_name, first.queue.queue_id)
    async with PullConsumer(namesrv=rocketmq_namesrv, group=unique_group) as reader:
        queues = await reader.queues(unique_topic)

        async def stored() -> int:  # (on a loaded 4.9 broker the consume queue lags the reply)
            return sum([await reader.max_offset(q) for q in queues])

        await until(stored, lambda count: count >= 301)
        assert await reader.max_offset(queue) >= 1
        ordered: list[bytes] = []
        for q in queues:  # one sharding key: one queue, in order
            offset = 0
            while True:
                result = await reader.pull(q, offset, max_messages=64)
                if not result.messages:
                    break
                ordered += [m.body for m in result.messages if m.body != b"one"]
                offset = result.next_offset
    assert ordered == [b"m%d" % i for i in range(300)], ordered[:40]


def test_refuses_bad_messages_before_sending(rocketmq_namesrv: str) -> None:
    with BlockingProducer(namesrv=rocketmq_namesrv) as producer, pytest.raises(InvalidMessage):
        producer.send(Message(topic="T_ok", body=b""))  # empty body


def test_health_and_ready_from_a_thread(rocketmq_namesrv: str, unique_topic: str) -> None:
    producer = BlockingProducer(namesrv=rocketmq_namesrv)
    with producer:
        producer.send(Message(topic=unique_topic, body=b"x"))
        health = producer.health()
        assert producer.ready and health.state == "running"
        assert any(r.topic == unique_topic for r in health.routes)
    assert not producer.ready and producer.health().reasons == ("the client is stopped",)


def test_a_producer_left_open_is_closed_at_exit(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    script = textwrap.dedent(f"""
        import logging
        logging.basicConfig(level=logging.INFO)  # (the library is silent otherwise)
        from rocketmq_actors.blocking import BlockingProducer
        from rocketmq_actors.producer import Message, create_topic
        producer = BlockingProducer(namesrv={rocketmq_namesrv!r}, group={unique_group!r})
        producer.send(Message(topic={unique_topic!r}, body=b"x"))
        print("sent")
    """)  # never closed: the atexit hook must stop the loop thread, or exit would hang
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "sent" in done.stdout
    assert "instance.stopped" in done.stdout + done.stderr
