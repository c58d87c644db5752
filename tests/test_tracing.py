"""OpenTelemetry: a send span and a process span in one trace, context in the properties."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.protocol.records import MessageExt

pytestmark = pytest.mark.integration

_EXPORTER = InMemorySpanExporter()


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    # the global provider can be set once per process: set it on first use, clear per test
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()


async def test_send_and_process_spans_share_a_trace(
    spans: InMemorySpanExporter, rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    got: list[MessageExt] = []
    done = anyio.Event()

    async def handle(message: MessageExt) -> None:
        got.append(message)
        if len(got) == 2:
            done.set()

    async with Producer(namesrv=rocketmq_namesrv, group="G_traced", tracing=True) as producer:
        await create_topic(producer.instance, unique_topic, queues=1)
        first = await producer.send(Message(topic=unique_topic, body=b"a", tags="t", keys=["k1"]))
        future = await producer.send_nowait(Message(topic=unique_topic, body=b"b"),
                                            sharding_key="s")  # fmt: skip
        second = await future
    async with PushConsumer(
        namesrv=rocketmq_namesrv, group=unique_group, subscriptions={unique_topic: "*"},
        handler=handle, consume_from=ConsumeFrom.FIRST_OFFSET, tracing=True,
    ):  # fmt: skip
        with anyio.fail_after(30):
            await done.wait()
    finished = spans.get_finished_spans()
    sends = [s for s in finished if s.kind is SpanKind.PRODUCER]
    processes = [s for s in finished if s.kind is SpanKind.CONSUMER]
    assert [s.name for s in sends] == [f"send {unique_topic}"] * 2
    assert sends[0].attributes is not None and sends[1].attributes is not None
    assert sends[0].attributes["messaging.system"] == "rocketmq"
    assert sends[0].attributes["messaging.message.id"] == first.msg_id
    assert sends[0].attributes["messaging.rocketmq.message.tag"] == "t"
    assert sends[1].attributes["messaging.message.id"] == second.msg_id
    assert sends[1].attributes["messaging.rocketmq.message.type"] == "fifo"
    assert "traceparent" in got[0].properties  # the context travelled in the message
    assert len(processes) == 2
    for send, process in zip(sends, processes, strict=True):
        assert process.context.trace_id == send.context.trace_id  # one trace, send -> handler
        assert process.parent is not None and process.parent.span_id == send.context.span_id
        assert process.attributes is not None
        assert process.attributes["messaging.consumer.group.name"] == unique_group


async def test_a_failed_send_ends_its_span_with_an_error(
    spans: InMemorySpanExporter, rocketmq_namesrv: str
) -> None:
    async with Producer(namesrv=rocketmq_namesrv, group="G_traced", tracing=True) as producer:
        with pytest.raises(ValueError, match="body"):
            await producer.send(Message(topic="T_traced_bad", body=b""))
    (span,) = spans.get_finished_spans()
    assert not span.status.is_ok and span.status.description == "InvalidMessage"
