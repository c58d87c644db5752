"""FastStream's OpenTelemetry and Prometheus middlewares for RocketMQ, in memory: spans with
RocketMQ's attributes (one trace from the publish to the handler), FastStream's metric names
with the labels ``broker="rocketmq"`` and the topic, and the extras they need."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import pytest
from faststream.exceptions import NackMessage
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from prometheus_client import CollectorRegistry

from rocketmq_actors.extras import MissingExtra
from rocketmq_actors.faststream import RocketMQBroker, RocketMQMessage, TestRocketMQBroker
from rocketmq_actors.faststream.opentelemetry import RocketMQTelemetryMiddleware
from rocketmq_actors.faststream.prometheus import RocketMQPrometheusMiddleware


class Telemetry:
    """A tracer provider and a meter provider of one test, with their in-memory exporters."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def middleware(self) -> RocketMQTelemetryMiddleware:
        return RocketMQTelemetryMiddleware(
            tracer_provider=self.tracer_provider, meter_provider=self.meter_provider
        )

    def spans(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans() if s.name == name]

    def points(self, metric: str) -> list[Any]:
        data = self.reader.get_metrics_data()
        assert data is not None
        return [
            point
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for m in scope.metrics
            if m.name == metric
            for point in m.data.data_points
        ]


async def test_telemetry_spans_carry_rocketmqs_attributes_in_one_trace() -> None:
    telemetry = Telemetry()
    broker = RocketMQBroker("127.0.0.1:9876", middlewares=[telemetry.middleware()])
    ids: list[str] = []

    @broker.subscriber("orders", group="billing", tags="paid")
    async def bill(body: str, message: RocketMQMessage) -> None:
        ids.append(message.message_id)

    async with TestRocketMQBroker(broker) as br:
        await br.publish("o-1", "orders", tags="paid", keys=["o-1"], correlation_id="c-1",
                         sharding_key="user-1")  # fmt: skip

    (publish,) = telemetry.spans("orders publish")
    assert publish.kind is SpanKind.PRODUCER
    assert publish.attributes is not None
    want_publish = {
        "messaging.system": "rocketmq",
        "messaging.destination.name": "orders",
        "messaging.message.conversation_id": "c-1",
        "messaging.rocketmq.message.tag": "paid",
        "messaging.rocketmq.message.keys": ("o-1",),
        "messaging.rocketmq.message.type": "fifo",
        "messaging.rocketmq.message.group": "user-1",
    }
    assert {k: publish.attributes.get(k) for k in want_publish} == want_publish

    (process,) = telemetry.spans("orders process")
    assert process.kind is SpanKind.CONSUMER and process.attributes is not None
    want_process = {
        "messaging.system": "rocketmq",
        "messaging.destination.name": "orders",
        "messaging.destination_publish.name": "orders",
        "messaging.consumer.group.name": "billing",
        "messaging.message.id": ids[0],
        "messaging.message.conversation_id": "c-1",
        "messaging.message.body.size": 3,
        "messaging.rocketmq.message.tag": "paid",
        "messaging.rocketmq.message.keys": ("o-1",),
        "messaging.operation": "process",
    }
    assert {k: process.attributes.get(k) for k in want_process} == want_process
    # the handler's span continues the publisher's trace (traceparent in the properties)
    assert publish.context is not None and process.context is not None
    assert process.context.trace_id == publish.context.trace_id

    (duration,) = telemetry.points("messaging.process.duration")
    assert dict(duration.attributes) == {
        "messaging.system": "rocketmq",
        "messaging.destination_publish.name": "orders",
    }
    assert sum(p.value for p in telemetry.points("messaging.publish.messages")) == 1


async def test_telemetry_covers_a_request_and_its_reply() -> None:
    telemetry = Telemetry()
    broker = RocketMQBroker("127.0.0.1:9876", middlewares=[telemetry.middleware()])

    @broker.subscriber("rpc", group="server")
    async def serve(body: int) -> int:
        return body * 2

    async with TestRocketMQBroker(broker) as br:
        reply = await br.request(21, "rpc")
        assert await reply.decode() == 42

    assert len(telemetry.spans("rpc publish")) == 1
    (process,) = telemetry.spans("rpc process")
    assert process.attributes is not None
    assert process.attributes["messaging.consumer.group.name"] == "server"
    (answer,) = [s for s in telemetry.exporter.get_finished_spans() if s.name.endswith("publish")
                 and s.name != "rpc publish"]  # fmt: skip
    assert answer.name == "memory_REPLY_TOPIC publish"  # the reply, in the handler's trace
    assert answer.context is not None and process.context is not None
    assert answer.context.trace_id == process.context.trace_id


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, {"app_name": "faststream", "broker": "rocketmq",
                                            **labels})  # fmt: skip


async def test_prometheus_metrics_have_faststreams_names_and_rocketmqs_labels() -> None:
    registry = CollectorRegistry()
    broker = RocketMQBroker(
        "127.0.0.1:9876", middlewares=[RocketMQPrometheusMiddleware(registry=registry)]
    )

    @broker.subscriber("orders", group="billing")
    async def bill(body: str) -> None:
        if body == "later":
            raise NackMessage()

    async with TestRocketMQBroker(broker) as br:
        await br.publish("now", "orders")
        await br.publish("later", "orders")

    handler = {"handler": "orders"}
    assert sample(registry, "faststream_received_messages_total", **handler) == 2
    assert sample(registry, "faststream_received_messages_size_bytes_sum", **handler) == 8
    assert sample(registry, "faststream_received_processed_messages_total", **handler,
                  status="acked") == 1  # fmt: skip
    assert sample(registry, "faststream_received_processed_messages_total", **handler,
                  status="nacked") == 1  # fmt: skip
    assert sample(registry, "faststream_received_messages_in_process", **handler) == 0
    assert sample(registry, "faststream_received_processed_messages_duration_seconds_count",
                  **handler) == 2  # fmt: skip
    assert sample(registry, "faststream_published_messages_total", destination="orders",
                  status="success") == 2  # fmt: skip


async def test_prometheus_counts_a_failed_publish_and_takes_custom_labels() -> None:
    registry = CollectorRegistry()
    middleware = RocketMQPrometheusMiddleware(
        registry=registry, app_name="shop", metrics_prefix="svc", custom_labels={"env": "test"}
    )
    broker = RocketMQBroker("127.0.0.1:9876", middlewares=[middleware])
    async with TestRocketMQBroker(broker) as br:
        with pytest.raises(Exception, match="TAGS"):
            await br.publish("x", "orders", headers={"TAGS": "no"})  # refused: a client property
    labels = {"app_name": "shop", "broker": "rocketmq", "destination": "orders", "env": "test"}
    failed = {**labels, "exception_type": "InvalidMessage"}
    assert registry.get_sample_value("svc_published_messages_exceptions_total", failed) == 1
    assert (
        registry.get_sample_value("svc_published_messages_total", labels | {"status": "error"}) == 1
    )


@pytest.mark.parametrize(
    ("module", "missing", "extra"),
    [
        ("rocketmq_actors.faststream.prometheus", "prometheus_client", "prometheus"),
        ("rocketmq_actors.faststream.opentelemetry", "opentelemetry.semconv", "otel"),
    ],
)
def test_without_their_packages_the_middlewares_name_the_extra(
    monkeypatch: pytest.MonkeyPatch, module: str, missing: str, extra: str
) -> None:
    for name in list(sys.modules):
        if name.startswith((module, missing, f"faststream.{missing.partition('.')[0]}")):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, missing, None)  # as if not installed
    with pytest.raises(MissingExtra) as caught:
        importlib.import_module(module)
    assert caught.value.extra == extra
    assert f"pip install 'rocketmq-actors[{extra}]'" in str(caught.value)
