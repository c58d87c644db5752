"""The RocketMQ 5.x clients' metrics (ClientOptions(client_metrics=True)): their names, units,
buckets and labels in the Prometheus export and through the OpenTelemetry metrics API, and the
queries a dashboard built for the Java client runs on them."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from rocketmq_actors import ClientOptions, Message, Producer, ProducerOptions
from rocketmq_actors.clientmetrics import ClientMetrics
from rocketmq_actors.consumer.core.message import ReceivedMessage, received
from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.errors import InvalidMessage
from rocketmq_actors.hooks import ConsumeContext, SendContext
from rocketmq_actors.metrics import METRICS, Metrics
from rocketmq_actors.producer import create_topic

from .consumer.core.test_process_queue import _msg


def _scrape(metrics: Metrics) -> dict[str, list[Any]]:
    """The exposition as a dashboard's Prometheus reads it: sample name -> samples."""
    registry = CollectorRegistry()
    registry.register(metrics.prometheus_collector())
    samples: dict[str, list[Any]] = {}
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append(sample)
    return samples


def _where(samples: list[Any], **labels: str) -> list[Any]:
    return [s for s in samples if labels.items() <= s.labels.items()]


def test_a_send_refused_before_any_io_counts_as_a_failure() -> None:
    producer = Producer(namesrv="127.0.0.1:1", options=ProducerOptions(max_message_size=1024),
                        client=ClientOptions(client_metrics=True, instance_name="cm1"))  # fmt: skip
    client_id = producer.instance.client_id
    before = METRICS.count("rocketmq_send_cost_time", topic="TCm", client_id=client_id,
                           invocation_status="failure")  # fmt: skip

    async def send() -> None:
        with pytest.raises(InvalidMessage):
            await producer.send(Message(topic="TCm", body=bytes(2048)))

    anyio.run(send)
    after = METRICS.count("rocketmq_send_cost_time", topic="TCm", client_id=client_id,
                          invocation_status="failure")  # fmt: skip
    assert after == before + 1


def test_the_java_clients_buckets_in_milliseconds() -> None:
    metrics = Metrics()
    hook = ClientMetrics("10.0.0.1@1", metrics=metrics)
    context = SendContext("G", Message(topic="T", body=b"x"), "sync")
    context.elapsed = 0.0042  # 4.2 ms
    hook.after_send(context)
    buckets = _where(_scrape(metrics)["rocketmq_send_cost_time_bucket"], topic="T",
                     client_id="10.0.0.1@1", invocation_status="success")  # fmt: skip
    counts = {s.labels["le"]: s.value for s in buckets}
    assert counts == {"1.0": 0, "5.0": 1, "10.0": 1, "20.0": 1, "50.0": 1, "200.0": 1,
                      "500.0": 1, "+Inf": 1}  # fmt: skip


def test_a_handler_call_records_await_delivery_and_process_time() -> None:
    metrics = Metrics()
    hook = ClientMetrics("c@1", group="G", metrics=metrics)
    now = time.time_ns() // 1_000_000
    messages: list[ReceivedMessage[Any]] = []
    for offset in (1, 2):
        message = received(_msg(offset))
        message.arrived_ms, message.store_timestamp = now - 30, now - 130
        messages.append(message)
    context = ConsumeContext("G", messages, None)
    hook.before_consume(context)
    context.success, context.elapsed = False, 0.002
    hook.after_consume(context)
    labels = {"topic": "t", "consumer_group": "G", "client_id": "c@1"}
    assert metrics.count("rocketmq_await_time", **labels) == 1  # (the call's first message)
    assert metrics.count("rocketmq_delivery_latency", **labels) == 1
    assert metrics.count("rocketmq_process_time", invocation_status="failure", **labels) == 2
    samples = _scrape(metrics)
    (delivery,) = _where(samples["rocketmq_delivery_latency_sum"], **labels)
    assert delivery.value == 100  # arrived 100 ms after the broker stored it
    (waited,) = _where(samples["rocketmq_await_time_sum"], **labels)
    assert 30 <= waited.value < 30 + 10_000  # at least the 30 ms since it arrived
    hook.cached({"t": (3, 300)})
    assert metrics.value("rocketmq_consumer_cached_messages", **labels) == 3
    assert metrics.value("rocketmq_consumer_cached_bytes", **labels) == 300
    hook.cached({})  # (its queues released: the topic's gauges go)
    assert "rocketmq_consumer_cached_messages" not in metrics.snapshot()
    assert "rocketmq_consumer_cached_bytes" not in metrics.snapshot()


def test_the_same_series_go_through_the_opentelemetry_metrics_api() -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from rocketmq_actors.clientmetrics import _OtelInstruments

    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    hook = ClientMetrics("c@2", metrics=Metrics())
    hook._otel = _OtelInstruments(provider.get_meter("rocketmq_actors"))  # (not the global)
    context = SendContext("G", Message(topic="T", body=b"x"), "sync")
    context.elapsed = 0.012
    hook.after_send(context)
    data = reader.get_metrics_data()
    assert data is not None
    found = {m.name: m for rm in data.resource_metrics for sm in rm.scope_metrics
             for m in sm.metrics}  # fmt: skip
    point: Any = found["rocketmq_send_cost_time"].data.data_points[0]
    assert found["rocketmq_send_cost_time"].unit == "ms"
    assert list(point.explicit_bounds) == [1.0, 5.0, 10.0, 20.0, 50.0, 200.0, 500.0]
    assert point.sum == pytest.approx(12.0)
    assert dict(point.attributes) == {
        "topic": "T", "client_id": "c@2", "invocation_status": "success"
    }  # fmt: skip


@pytest.mark.integration
async def test_a_java_client_dashboards_queries_find_our_series(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    """The queries of a dashboard built for the 5.x Java client (send rate and latency
    quantiles by topic, failures by invocation_status, process and await time by group, the
    cache gauge) find our series with the labels they select on."""
    client = ClientOptions(namesrv=rocketmq_namesrv, client_metrics=True)
    done = anyio.Event()
    cached: list[float] = []

    async def handle(message: ReceivedMessage[bytes]) -> None:
        done.set()

    async with Producer(group=f"{unique_group}_p", client=client) as producer:
        await create_topic(producer.instance, unique_topic, queues=1)
        for i in range(3):
            await producer.send(Message(topic=unique_topic, body=b"m%d" % i))
        producer_id = producer.instance.client_id
        async with PushConsumer(
            group=unique_group, subscriptions={unique_topic: "*"}, handler=handle, client=client,
            options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET, persist_interval=0.2),
        ) as consumer:  # fmt: skip
            with anyio.fail_after(30):
                await done.wait()
            consumer_id = consumer.instance.client_id
            labels = {"topic": unique_topic, "consumer_group": unique_group,
                      "client_id": consumer_id}  # fmt: skip
            cached_bytes: list[float] = []
            with anyio.fail_after(30):  # (the gauges are set every persist_interval)
                while not (cached == [0] and cached_bytes == [0]):  # (the message consumed)
                    live = _scrape(METRICS)
                    cached = [s.value for s in _where(
                        live.get("rocketmq_consumer_cached_messages", []), **labels)]  # fmt: skip
                    cached_bytes = [s.value for s in _where(
                        live.get("rocketmq_consumer_cached_bytes", []), **labels)]  # fmt: skip
                    await anyio.sleep(0.1)
        # a stopped consumer reports no cache (a gauge left behind would read as one)
        assert not _where(_scrape(METRICS).get("rocketmq_consumer_cached_messages", []),
                          **labels)  # fmt: skip
    samples = _scrape(METRICS)
    send = {"topic": unique_topic, "client_id": producer_id}
    # rate(rocketmq_send_cost_time_count{invocation_status="success"}[1m]) by topic
    (count,) = _where(samples["rocketmq_send_cost_time_count"], invocation_status="success", **send)
    assert count.value == 3
    # histogram_quantile(0.95, rate(rocketmq_send_cost_time_bucket[5m])): every le, +Inf last
    bounds = [s.labels["le"] for s in _where(samples["rocketmq_send_cost_time_bucket"], **send)]
    assert bounds == ["1.0", "5.0", "10.0", "20.0", "50.0", "200.0", "500.0", "+Inf"]
    group = {"topic": unique_topic, "consumer_group": unique_group, "client_id": consumer_id}
    for name in ("rocketmq_process_time_count", "rocketmq_await_time_count",
                 "rocketmq_delivery_latency_count"):  # fmt: skip
        assert sum(s.value for s in _where(samples[name], **group)) == 3, name
    assert _where(samples["rocketmq_process_time_count"], invocation_status="success", **group)


def test_the_opentelemetry_cache_gauges_fall_to_zero_when_the_consumer_stops() -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from rocketmq_actors.clientmetrics import _OtelInstruments

    reader = InMemoryMetricReader()
    hook = ClientMetrics("c@3", group="G", metrics=Metrics())
    hook._otel = _OtelInstruments(MeterProvider(metric_readers=[reader]).get_meter("t"))

    def cached() -> dict[str, float]:
        data = reader.get_metrics_data()
        assert data is not None
        points: dict[str, Any] = {m.name: m.data.data_points[0] for rm in data.resource_metrics
                                  for sm in rm.scope_metrics for m in sm.metrics}  # fmt: skip
        return {name: point.value for name, point in points.items()}

    hook.cached({"t": (3, 300)})
    assert cached() == {"rocketmq_consumer_cached_messages": 3,
                        "rocketmq_consumer_cached_bytes": 300}  # fmt: skip
    hook.forget()  # (a gauge keeps its last value: a stopped consumer's must not read 3)
    assert cached() == {"rocketmq_consumer_cached_messages": 0,
                        "rocketmq_consumer_cached_bytes": 0}  # fmt: skip
