"""health() / ready against the real cluster: after start, after stop, with a broker killed."""

from __future__ import annotations

import json
from collections.abc import Callable

import anyio
import pytest

from rocketmq_actors.cluster.health import BrokerHealth, Health
from rocketmq_actors.consumer.pull import PullConsumer
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.testing.cluster import FRESH_BROKER_TIMEOUT, LocalCluster

pytestmark = pytest.mark.integration


async def test_ready_after_start_and_not_after_stop(
    rocketmq_namesrv: str, rocketmq_cluster: LocalCluster, unique_group: str, unique_topic: str
) -> None:
    producer = Producer(namesrv=rocketmq_namesrv, group=unique_group, topics=[unique_topic])
    assert not producer.ready
    assert producer.health().reasons == ("the client is new",)
    async with producer:
        await producer.send(Message(topic=unique_topic, body=b"x"))
        health = producer.health()
        assert producer.ready and health.ready and health.reasons == ()
        assert (health.kind, health.group, health.state) == ("producer", unique_group, "running")
        assert health.namesrv.reachable and health.namesrv.current == rocketmq_namesrv
        assert health.namesrv.last_ok_seconds_ago is not None
        (route,) = [r for r in health.routes if r.topic == unique_topic]
        assert route.writable_queues > 0 and 0 <= route.age_seconds < 30
        masters = [b for b in health.brokers if b.master]
        assert masters and all(b.connected for b in masters)
        expected = "V" + rocketmq_cluster.spec.version.replace(".", "_")  # e.g. V5_5_0
        assert {b.version for b in masters} == {expected}  # (heard from the heartbeat at start)
        as_json = json.loads(json.dumps(health.as_dict()))
        assert as_json["ready"] is True and as_json["brokers"][0]["state"] == "connected"
    health = producer.health()
    assert not producer.ready and health.state == "stopped"
    assert health.reasons == ("the client is stopped",)


async def test_a_consumer_has_health_too(rocketmq_namesrv: str, unique_group: str) -> None:
    async with PullConsumer(namesrv=rocketmq_namesrv, group=unique_group) as consumer:
        health = consumer.health()
        assert consumer.ready and health.kind == "pull-consumer" and health.namesrv.reachable


async def _until(producer: Producer, check: Callable[[Health], bool]) -> Health:
    """The producer's health once ``check`` holds (polled: the connection supervisor notices
    a dead broker on its own schedule), within 30 s."""
    with anyio.fail_after(30):
        while not check(health := producer.health()):  # noqa: ASYNC110 - a broker process dies
            await anyio.sleep(0.05)
    return health


def _broker(health: Health, name: str) -> BrokerHealth:
    (broker,) = [b for b in health.brokers if b.name == name and b.master]
    return broker


async def test_a_killed_broker_shows_as_not_connected(
    rocketmq_two_masters: LocalCluster, unique_topic: str
) -> None:
    cluster = rocketmq_two_masters
    async with Producer(namesrv=cluster.namesrv_addr, group="G_health") as producer:
        hosts = await create_topic(
            producer.instance, unique_topic, queues=2, timeout=FRESH_BROKER_TIMEOUT
        )
        assert len(hosts) == 2
        await producer.instance.routes.refresh(unique_topic)
        await producer.instance.heartbeat.beat()  # connects to both masters
        health = producer.health()
        assert health.ready and _broker(health, "broker-b").connected
        await anyio.to_thread.run_sync(cluster.kill_broker, "broker-b")
        health = await _until(producer, lambda h: not _broker(h, "broker-b").connected)
        assert _broker(health, "broker-b").state in {"reconnecting", "not_connected"}
        assert health.ready and _broker(health, "broker-a").connected  # broker-a takes sends
        await anyio.to_thread.run_sync(cluster.kill_broker, "broker-a")
        health = await _until(producer, lambda h: not h.ready)
        assert any(unique_topic in reason for reason in health.reasons)
        assert not producer.ready
