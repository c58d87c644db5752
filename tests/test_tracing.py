"""OpenTelemetry: a send span and a process span in one trace, context in the properties."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.consumer.pop import PopConsumer, PopOptions
from rocketmq_actors.consumer.pull import PullConsumer, PullOptions
from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.testing.cluster import LocalCluster

pytestmark = pytest.mark.integration

_EXPORTER = InMemorySpanExporter()
_ADDED: list[TracerProvider] = []  # the provider _EXPORTER was added to

# The attributes the messaging semantic conventions define for RocketMQ spans: semconv 1.44.0
# (opentelemetry-semantic-conventions 0.66b2), the table of
# https://github.com/open-telemetry/semantic-conventions/blob/main/docs/messaging/rocketmq.md
# (https://opentelemetry.io/docs/specs/semconv/messaging/rocketmq/) plus messaging.system, and
# messaging.rocketmq.client_group: deprecated in the registry, "no replacement for producer
# spans", so send spans keep it for the producer group.
SEMCONV_ROCKETMQ = frozenset({
    "messaging.system", "messaging.consumer.group.name", "messaging.operation.name",
    "messaging.destination.name", "messaging.operation.type", "server.address", "server.port",
    "messaging.rocketmq.namespace", "error.type", "messaging.batch.message_count",
    "messaging.rocketmq.message.delay_time_level", "messaging.rocketmq.message.delivery_timestamp",
    "messaging.rocketmq.message.group", "messaging.client.id", "messaging.message.id",
    "messaging.rocketmq.consumption_model", "messaging.rocketmq.message.keys",
    "messaging.rocketmq.message.tag", "messaging.rocketmq.message.type",
    "messaging.message.body.size", "messaging.rocketmq.client_group",
})  # fmt: skip
# Required on every span (messaging.consumer.group.name: on consumer spans, below)
REQUIRED = frozenset({"messaging.system", "messaging.operation.name",
                      "messaging.rocketmq.namespace"})  # fmt: skip


def check_semconv(span: ReadableSpan) -> dict[str, Any]:
    """The span's attributes, after checking each is the convention's and the required are
    there (the conditionally required ones: the tests assert them where the condition holds)."""
    attributes = dict(span.attributes or {})
    assert set(attributes) <= SEMCONV_ROCKETMQ, set(attributes) - SEMCONV_ROCKETMQ
    assert set(attributes) >= REQUIRED, REQUIRED - set(attributes)
    assert attributes["messaging.system"] == "rocketmq"
    if span.kind is SpanKind.CONSUMER:
        assert "messaging.consumer.group.name" in attributes
    if not span.status.is_ok:
        assert "error.type" in attributes  # if and only if the operation failed
    else:
        assert "error.type" not in attributes
    if attributes.get("messaging.rocketmq.message.type") == "fifo":
        assert "messaging.rocketmq.message.group" in attributes
    if attributes.get("messaging.rocketmq.message.type") == "delay":
        assert ("messaging.rocketmq.message.delay_time_level" in attributes
                or "messaging.rocketmq.message.delivery_timestamp" in attributes)  # fmt: skip
    return attributes


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    # the global provider can be set once per process: set it on first use (or use the one
    # another test module set), add this module's exporter once, clear it per test
    if not _ADDED:
        provider = trace.get_tracer_provider()
        if not isinstance(provider, TracerProvider):
            provider = TracerProvider()
            trace.set_tracer_provider(provider)
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        _ADDED.append(provider)
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

    async with Producer(
        namesrv=rocketmq_namesrv,
        group=f"{unique_group}_producer",
        client=ClientOptions(tracing=True),
    ) as producer:
        await create_topic(producer.instance, unique_topic, queues=1)
        first = await producer.send(Message(topic=unique_topic, body=b"a", tags="t", keys=["k1"]))
        future = await producer.submit(Message(topic=unique_topic, body=b"b"),
                                            sharding_key="s")  # fmt: skip
        second = await future
    async with PushConsumer(
        group=unique_group,
        subscriptions={unique_topic: "*"},
        handler=handle,
        namesrv=rocketmq_namesrv,
        options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
        client=ClientOptions(tracing=True),
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
    assert sends[1].attributes["messaging.rocketmq.message.group"] == "s"
    for span in finished:
        attributes = check_semconv(span)
        assert attributes["messaging.rocketmq.namespace"] == ""
        assert isinstance(attributes["server.port"], int) and attributes["server.address"]
    assert "traceparent" in got[0].properties  # the context travelled in the message
    assert len(processes) == 2
    for send, process in zip(sends, processes, strict=True):
        assert process.context.trace_id == send.context.trace_id  # one trace, send -> handler
        assert process.parent is not None and process.parent.span_id == send.context.span_id
        assert process.attributes is not None
        assert process.attributes["messaging.consumer.group.name"] == unique_group
        assert process.attributes["messaging.rocketmq.consumption_model"] == "clustering"
        sent_id = dict(send.attributes or {})["messaging.message.id"]
        assert process.attributes["messaging.message.id"] == sent_id


async def test_a_failed_send_ends_its_span_with_an_error(
    spans: InMemorySpanExporter, rocketmq_namesrv: str
) -> None:
    async with Producer(
        namesrv=rocketmq_namesrv, group="G_traced", client=ClientOptions(tracing=True)
    ) as producer:
        with pytest.raises(ValueError, match="body"):
            await producer.send(Message(topic="T_traced_bad", body=b""))
    (span,) = spans.get_finished_spans()
    assert not span.status.is_ok and span.status.description == "InvalidMessage"
    attributes = check_semconv(span)
    assert attributes["error.type"] == "rocketmq_actors.errors.InvalidMessage"


async def test_batch_and_delay_sends_have_their_attributes_and_a_handler_error_its_type(
    spans: InMemorySpanExporter, rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    failed = anyio.Event()

    async def handle(message: MessageExt) -> None:
        failed.set()
        raise KeyError("handler says no")  # reconsumed later: the process span fails

    async with Producer(
        namesrv=rocketmq_namesrv,
        group=f"{unique_group}_producer",
        client=ClientOptions(namespace="ns1", tracing=True),
    ) as producer:
        await create_topic(producer.instance, f"ns1%{unique_topic}", queues=1)
        results = await producer.send_batch(
            [Message(topic=unique_topic, body=b"%d" % i) for i in range(3)]
        )
        await producer.send(Message(topic=unique_topic, body=b"d", delay_level=1))
    (batch, delayed) = spans.get_finished_spans()
    batch_attributes = check_semconv(batch)
    assert batch.name == f"send {unique_topic}"
    assert batch_attributes["messaging.batch.message_count"] == 3
    assert "messaging.message.id" not in batch_attributes  # a batch is not one message
    assert batch_attributes["messaging.rocketmq.namespace"] == "ns1"
    assert batch_attributes["messaging.client.id"] == producer.instance.client_id
    delay_attributes = check_semconv(delayed)
    assert delay_attributes["messaging.rocketmq.message.type"] == "delay"
    assert delay_attributes["messaging.rocketmq.message.delay_time_level"] == 1
    spans.clear()
    async with PushConsumer(
        group=unique_group,
        subscriptions={unique_topic: "*"},
        handler=handle,
        namesrv=rocketmq_namesrv,
        options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
        client=ClientOptions(namespace="ns1", tracing=True),
    ):  # fmt: skip
        with anyio.fail_after(30):
            await failed.wait()
    process = next(s for s in spans.get_finished_spans() if s.kind is SpanKind.CONSUMER)
    attributes = check_semconv(process)
    assert attributes["error.type"] == "builtins.KeyError"
    assert attributes["messaging.consumer.group.name"] == unique_group  # without namespace
    assert attributes["messaging.destination.name"] == unique_topic
    assert process.parent is not None and process.parent.span_id == batch.context.span_id
    assert attributes["messaging.message.id"] in {r.msg_id for r in results}


async def test_a_pop_consumer_traces_each_handler_call_when_its_client_options_say(
    spans: InMemorySpanExporter, rocketmq_namesrv: str, rocketmq_cluster: LocalCluster,
    unique_topic: str, unique_group: str,
) -> None:  # fmt: skip
    if rocketmq_cluster.spec.is_4x:
        pytest.skip("POP needs a 5.x broker")
    done = anyio.Event()

    async def handle(message: MessageExt) -> None:
        done.set()

    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_p") as producer:
        await create_topic(producer.instance, unique_topic, queues=1)
        sent = await producer.send(Message(topic=unique_topic, body=b"popped"))
    async with PopConsumer(
        namesrv=rocketmq_namesrv, group=unique_group, subscriptions={unique_topic: "*"},
        handler=handle, options=PopOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
        client=ClientOptions(tracing=True),
    ):  # fmt: skip
        with anyio.fail_after(30):
            await done.wait()
    (process,) = [s for s in spans.get_finished_spans() if s.kind is SpanKind.CONSUMER]
    attributes = check_semconv(process)
    assert attributes["messaging.consumer.group.name"] == unique_group
    assert attributes["messaging.message.id"] == sent.msg_id
    assert attributes["messaging.rocketmq.consumption_model"] == "clustering"


async def test_a_oneway_send_has_a_span_and_carries_its_context(
    spans: InMemorySpanExporter, rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    """Issue 45: ``send_oneway`` made no span and carried no ``traceparent``. Its span ends
    once the request is written (no result: the message id is ours), and the handler's
    process span is its child. Send and process spans give the body's size."""
    got: list[MessageExt] = []
    done = anyio.Event()

    async def handle(message: MessageExt) -> None:
        got.append(message)
        done.set()

    async with Producer(
        namesrv=rocketmq_namesrv,
        group=f"{unique_topic}_producer",
        client=ClientOptions(tracing=True),
    ) as producer:
        await create_topic(producer.instance, unique_topic, queues=1)
        await producer.send_oneway(Message(topic=unique_topic, body=b"oneway", keys=["o"]))
    async with PushConsumer(
        group=unique_group, subscriptions={unique_topic: "*"}, handler=handle,
        namesrv=rocketmq_namesrv, options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
        client=ClientOptions(tracing=True),
    ):  # fmt: skip
        with anyio.fail_after(30):
            await done.wait()
    finished = spans.get_finished_spans()
    (send,) = [s for s in finished if s.kind is SpanKind.PRODUCER]
    (process,) = [s for s in finished if s.kind is SpanKind.CONSUMER]
    sent, processed = check_semconv(send), check_semconv(process)
    assert sent["messaging.message.id"] == got[0].msg_id == processed["messaging.message.id"]
    assert sent["messaging.message.body.size"] == processed["messaging.message.body.size"] == 6
    assert "traceparent" in got[0].properties
    assert process.parent is not None and process.parent.span_id == send.context.span_id


async def test_a_pull_consumers_poll_has_a_receive_span_linked_to_the_sends(
    spans: InMemorySpanExporter, rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    """Issue 45: ``PullConsumer`` made no span. A ``getmany`` that returns messages makes one
    ``receive`` span per topic, linked to each message's send span."""
    async with Producer(
        namesrv=rocketmq_namesrv,
        group=f"{unique_topic}_producer",
        client=ClientOptions(tracing=True),
    ) as producer:
        await create_topic(producer.instance, unique_topic, queues=1)
        for body in (b"p1", b"p2"):
            await producer.send(Message(topic=unique_topic, body=body))
    got: list[MessageExt] = []
    async with PullConsumer(
        group=unique_group, topics=[unique_topic], namesrv=rocketmq_namesrv,
        options=PullOptions(auto_offset_reset="earliest"), client=ClientOptions(tracing=True),
    ) as consumer:  # fmt: skip
        with anyio.fail_after(30):
            while len(got) < 2:
                for records in (await consumer.getmany(timeout=5)).values():
                    got.extend(records)
    finished = spans.get_finished_spans()
    sends = [s for s in finished if s.kind is SpanKind.PRODUCER]
    receives = [s for s in finished if s.kind is SpanKind.CONSUMER]
    assert receives and all(s.name == f"receive {unique_topic}" for s in receives)
    linked = {link.context.span_id for s in receives for link in s.links}
    assert linked == {s.context.span_id for s in sends}  # each message's send
    for span in receives:
        attributes = check_semconv(span)
        assert attributes["messaging.operation.type"] == "receive"
        assert attributes["messaging.consumer.group.name"] == unique_group
        assert span.end_time is not None and span.start_time is not None
        assert span.end_time >= span.start_time
    counts = [dict(s.attributes or {}).get("messaging.batch.message_count", 1) for s in receives]
    assert sum(c for c in counts if isinstance(c, int)) == 2
