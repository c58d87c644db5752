"""FastStream's OpenTelemetry and Prometheus middlewares on a broker of the session cluster: a
publish, its consume and a request, as spans with RocketMQ's attributes and as FastStream's
Prometheus metrics labelled with the topic."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from rocketmq_actors.consumer.push import ConsumeFrom
from rocketmq_actors.faststream import RocketMQBroker, RocketMQMessage
from rocketmq_actors.faststream.prometheus import RocketMQPrometheusMiddleware

from .test_broker_real import Collected, make_topics
from .test_middlewares import Telemetry, sample

pytestmark = [pytest.mark.integration, pytest.mark.once]

FIRST = {"consume_from": ConsumeFrom.FIRST_OFFSET}


async def test_spans_and_metrics_of_a_publish_a_consume_and_a_request(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    rpc = f"{unique_topic}_rpc"
    await make_topics(rocketmq_namesrv, unique_topic, rpc)
    telemetry, registry = Telemetry(), CollectorRegistry()
    broker = RocketMQBroker(rocketmq_namesrv, middlewares=[
        telemetry.middleware(), RocketMQPrometheusMiddleware(registry=registry),
    ])  # fmt: skip
    got = Collected()

    @broker.subscriber(unique_topic, group=unique_group, tags="paid", consumer_options=FIRST)
    async def bill(body: str, message: RocketMQMessage) -> None:
        got.add(message.message_id)

    @broker.subscriber(rpc, group=f"{unique_group}_rpc", consumer_options=FIRST)
    async def double(body: int) -> int:
        return body * 2

    async with broker:
        await broker.start()
        sent = await broker.publish("o-1", unique_topic, tags="paid", correlation_id="c-1")
        (msg_id,) = await got.wait(1)
        assert msg_id == sent.msg_id
        reply = await broker.request(21, rpc, timeout=30)
        assert await reply.decode() == 42

    (publish,) = telemetry.spans(f"{unique_topic} publish")
    (process,) = telemetry.spans(f"{unique_topic} process")
    assert publish.context is not None and process.context is not None
    assert process.context.trace_id == publish.context.trace_id  # across the real broker
    assert process.attributes is not None
    want = {
        "messaging.system": "rocketmq",
        "messaging.destination.name": unique_topic,
        "messaging.consumer.group.name": unique_group,
        "messaging.message.id": sent.msg_id,
        "messaging.message.conversation_id": "c-1",
        "messaging.rocketmq.message.tag": "paid",
    }
    assert {k: process.attributes.get(k) for k in want} == want
    (served,) = telemetry.spans(f"{rpc} process")
    assert served.attributes is not None
    assert served.attributes["messaging.consumer.group.name"] == f"{unique_group}_rpc"

    assert sample(registry, "faststream_received_messages_total", handler=unique_topic) == 1
    assert sample(registry, "faststream_received_processed_messages_total",
                  handler=unique_topic, status="acked") == 1  # fmt: skip
    assert sample(registry, "faststream_published_messages_total", destination=unique_topic,
                  status="success") == 1  # fmt: skip
    assert (
        sample(registry, "faststream_published_messages_total", destination=rpc, status="success")
        == 1
    )  # the request (its reply is not counted: FastStream's)
