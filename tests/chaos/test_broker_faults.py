"""Chaos 1 and 5 on a dedicated two-master cluster: ``kill -9`` a master during produce and
consume, and ``SIGSTOP`` a broker for 10 s."""

from __future__ import annotations

import time

import anyio
import pytest
import structlog

from rocketmq_actors.cluster.routes import TopicRoute
from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.errors import SendFailed
from rocketmq_actors.producer import Message, Producer, ProducerOptions, create_topic, select_by_key
from rocketmq_actors.testing.cluster import LocalCluster
from rocketmq_actors.testing.faults import QueueChecker
from tests.slack import slack

from .conftest import ChaosReport
from .workload import Receipts, produce

pytestmark = [pytest.mark.integration, pytest.mark.chaos, pytest.mark.slow]


@pytest.fixture
def two_masters(rocketmq_two_masters: LocalCluster) -> LocalCluster:
    return rocketmq_two_masters  # (each broker running again after each test)


async def test_kill_9_one_master_during_produce_and_consume(
    two_masters: LocalCluster, unique_topic: str, unique_group: str, chaos_report: ChaosReport
) -> None:
    count = 20_000
    checker = QueueChecker()
    receipts = Receipts(checker)
    namesrv = two_masters.namesrv_addr
    halfway = anyio.Event()
    options = ProducerOptions(send_timeout=3.0, latency_fault_tolerance=True)
    async with (
        Producer(namesrv=namesrv, options=options) as producer,
        PushConsumer(
            group=unique_group,
            subscriptions={unique_topic: "*"},
            handler=receipts.handle,
            namesrv=namesrv,
            options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET, persist_interval=1.0),
        ),
        anyio.create_task_group() as tg,
    ):  # fmt: skip
        await create_topic(producer.instance, unique_topic, queues=4)
        tg.start_soon(
            lambda: produce(
                producer, unique_topic, range(count), checker, progress=halfway,
                progress_at=count // 3,
            )
        )  # fmt: skip
        await halfway.wait()
        await anyio.to_thread.run_sync(two_masters.kill_broker, "broker-b")
        killed_at = time.monotonic()
        await anyio.to_thread.run_sync(two_masters.restart_broker, "broker-b")
        restarted_in = time.monotonic() - killed_at
        # the produce task finishes inside the task group; then consumption must catch up
    async with PushConsumer(
        group=unique_group,
        subscriptions={unique_topic: "*"},
        handler=receipts.handle,
        namesrv=namesrv,
        options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
    ):  # fmt: skip
        await receipts.wait_for_all_acknowledged(timeout=90)
    result = checker.check()
    chaos_report.record(
        "kill -9 one of two masters, restart it", result, recover_s=restarted_in,
        note="recovered: the killed master restarted and registered",
    )  # fmt: skip
    structlog.get_logger("tests.chaos").info(
        "chaos.kill_master.result", sent=result.sent, received=result.received,
        duplicates=result.duplicates, lost=len(result.lost), restart_s=round(restarted_in, 1),
    )  # fmt: skip
    assert sum(result.sent.values()) == count  # every send has a typed outcome
    assert result.sent["ok"] >= count * 0.9, result.sent
    assert result.lost == (), f"{len(result.lost)} acknowledged sends never received"
    assert result.unexpected == ()
    assert restarted_in < 60


async def _route_of_both(producer: Producer, topic: str) -> TopicRoute:
    """The topic's route once both masters registered it: a key's queue is a hash over the
    route's queues, so a route that grew later (broker-b registering after broker-a) would
    move a key chosen for broker-a to broker-b in the middle of the test. The NameServer is
    another process: it is asked again until it says so (bounded)."""
    with anyio.fail_after(30):
        while True:
            route = await producer.instance.routes.refresh(topic)
            if {q.broker_name for q in route.publish_queues} == {"broker-a", "broker-b"}:
                return route
            await anyio.sleep(0.1)


async def test_sigstop_broker_for_10_s(two_masters: LocalCluster, unique_topic: str) -> None:
    timeout = 2.0
    async with Producer(
        namesrv=two_masters.namesrv_addr, options=ProducerOptions(send_timeout=timeout)
    ) as producer:
        await create_topic(producer.instance, unique_topic, queues=2)
        route = await _route_of_both(producer, unique_topic)
        message = Message(topic=unique_topic, body=b"x")
        key_on_a = next(  # an ordered send never leaves its queue: it must wait for broker-a
            f"k{i}"
            for i in range(100)
            if select_by_key(route.publish_queues, message, f"k{i}").broker_name == "broker-a"
        )
        before = await producer.send(message, sharding_key=key_on_a)
        assert before.queue.broker_name == "broker-a"  # the key's queue, before the pause
        await anyio.to_thread.run_sync(two_masters.pause_broker, "broker-a")
        paused_at = time.monotonic()
        try:
            outcomes = []
            while time.monotonic() - paused_at < 10:
                began = time.monotonic()
                with pytest.raises(SendFailed) as info:
                    await producer.send(message, sharding_key=key_on_a)
                took = time.monotonic() - began
                outcomes.append((took - slack(began), info.value.outcome_unknown))
        finally:
            await anyio.to_thread.run_sync(two_masters.resume_broker, "broker-a")
        # each within its timeout (what each took, less the machine's scheduling slack)
        assert outcomes and all(waited < timeout for waited, _ in outcomes), outcomes
        assert all(unknown for _, unknown in outcomes)  # a stalled peer: maybe stored
        with anyio.fail_after(30):
            result = await producer.send(message, sharding_key=key_on_a)
        assert result.queue.broker_name == "broker-a"
