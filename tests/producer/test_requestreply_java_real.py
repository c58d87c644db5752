"""Request-reply across clients against the real broker: a Java requester with a Python
responder, and a Python requester with a Java responder (tests/java/JavaRequestReply.java)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.producer.requestreply import reply
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.testing.java import java_argv, java_scratch, run_java

pytestmark = pytest.mark.integration

SOURCE = Path(__file__).resolve().parents[1] / "java" / "JavaRequestReply.java"


@pytest.mark.xfail(
    reason="the Java 5.3.3 requester's request() throws RequestTimeoutException (10006) within "
    "10-600 ms of a 20 s timeout, before any reply - with a Java responder too (JavaRequestReply "
    "request + respond, tried once by hand): a Java-side or environment problem, see STATUS.md",
    strict=False,
)
async def test_a_python_responder_answers_a_java_requester(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    consumer: PushConsumer | None = None

    async def respond(message: MessageExt) -> None:
        assert consumer is not None
        if "CORRELATION_ID" in message.properties:  # (not the warm-up message)
            await reply(consumer, message, b"re:" + message.body)

    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_admin") as admin:
        await create_topic(admin.instance, unique_topic, queues=2)
    consumer = PushConsumer(
        namesrv=rocketmq_namesrv, group=unique_group, subscriptions={unique_topic: "*"},
        handler=respond, consume_from=ConsumeFrom.FIRST_OFFSET,
    )  # fmt: skip
    async with consumer:
        args = ("request", rocketmq_namesrv, unique_topic, f"{unique_group}_java", 3, 20000)
        with anyio.fail_after(180):
            lines = await anyio.to_thread.run_sync(
                lambda: run_java(SOURCE, *args, timeout=170), abandon_on_cancel=True
            )
    answers = [line for line in lines if "i" in line]
    assert answers == [{"i": i, "reply": f"re:q{i}", "type": "reply"} for i in range(3)]


async def _read(stream: Any, lines: list[dict[str, Any]], ready: anyio.Event) -> None:
    buffer = b""
    async for chunk in stream:
        buffer += chunk
        *complete, buffer = buffer.split(b"\n")
        for line in complete:
            if line.startswith(b"{"):
                record = json.loads(line)
                lines.append(record)
                if record.get("ready"):
                    ready.set()


async def test_a_java_responder_answers_a_python_requester(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_req") as requester:
        await create_topic(requester.instance, unique_topic, queues=2)
        lines: list[dict[str, Any]] = []
        with java_scratch() as scratch:
            argv = java_argv(SOURCE, "respond", rocketmq_namesrv, unique_topic, unique_group, 3,
                             120, scratch=scratch)  # fmt: skip
            async with await anyio.open_process(argv) as process, anyio.create_task_group() as tg:
                ready = anyio.Event()
                tg.start_soon(_read, process.stdout, lines, ready)
                with anyio.fail_after(150):
                    await ready.wait()
                    answers = [
                        await requester.request(Message(topic=unique_topic, body=b"p%d" % i), 30)
                        for i in range(3)
                    ]
                    await process.wait()
    assert [a.body for a in answers] == [b"re:p0", b"re:p1", b"re:p2"]
    assert all(a.properties["MSG_TYPE"] == "reply" for a in answers)
    assert sorted(line["replied"] for line in lines if "replied" in line) == ["p0", "p1", "p2"]
    assert len(requester.replies) == 0
