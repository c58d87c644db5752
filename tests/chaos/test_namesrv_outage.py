"""Chaos 4: every NameServer unreachable for 60 s (behind the fault proxy: connections cut,
new ones refused). Producers and consumers keep working on cached routes, and recover when
it returns."""

from __future__ import annotations

import time

import anyio
import pytest

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.producer import Producer, create_topic
from rocketmq_actors.testing.cluster import LocalCluster
from rocketmq_actors.testing.faults import FaultProxy, QueueChecker

from .conftest import ChaosReport
from .workload import Receipts, produce

pytestmark = [pytest.mark.integration, pytest.mark.chaos, pytest.mark.slow]

OUTAGE = 60.0


async def test_sixty_seconds_without_a_nameserver(
    rocketmq_cluster: LocalCluster,
    unique_topic: str,
    unique_group: str,
    chaos_report: ChaosReport,
) -> None:
    checker = QueueChecker()
    receipts = Receipts(checker)
    async with FaultProxy(rocketmq_cluster.namesrv_addr) as ns:
        # short refresh and heartbeat intervals: the outage spans many refresh attempts
        instance = ClientInstance(ns.addr, route_refresh_interval=5, heartbeat_interval=5)
        async with (
            instance,
            Producer(instance=instance) as producer,
            PushConsumer(
                group=unique_group,
                subscriptions={unique_topic: "*"},
                handler=receipts.handle,
                options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
                instance=instance,
            ),
        ):  # fmt: skip
            await create_topic(instance, unique_topic, queues=4)
            await produce(producer, unique_topic, range(0, 500), checker)
            ns.refuse()
            ns.cut()
            down_since = time.monotonic()
            batch = 0
            while time.monotonic() - down_since < OUTAGE:
                start = 1000 * (batch + 1)
                await produce(producer, unique_topic, range(start, start + 200), checker)
                batch += 1
                await anyio.sleep(5)  # pacing across the outage, not synchronization
            assert ns.accepted > 0  # the client did try the NameServer during the outage
            await receipts.wait_for_all_acknowledged(timeout=30)
            during = checker.check()
            ns.refuse(False)
            await produce(producer, unique_topic, range(100_000, 100_200), checker)
            route = await instance.routes.refresh(unique_topic)  # the NameServer answers again
            assert route.publish_queues
            await receipts.wait_for_all_acknowledged(timeout=30)
    result = checker.check()
    chaos_report.record(
        "every NameServer unreachable for 60 s (fault proxy)", result,
        note="sends served from cached routes",
    )  # fmt: skip
    assert during.sent["failed"] == during.sent["unknown"] == 0  # cached routes served every send
    assert result.lost == () and result.sent["ok"] == 500 + 200 * batch + 200
    assert batch >= 10
