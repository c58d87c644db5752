"""Two masters, one killed while sending: sends move to the survivor, nothing acknowledged is
lost."""

from __future__ import annotations

import time

import anyio
import pytest
import structlog

from rocketmq_actors.errors import SendFailed
from rocketmq_actors.producer import Message, Producer, ProducerOptions, SendResult, create_topic
from rocketmq_actors.testing.cluster import FRESH_BROKER_TIMEOUT, LocalCluster

from .pull import pull

# what the client does when a broker dies: the same whatever its version
pytestmark = [pytest.mark.integration, pytest.mark.once]

TOTAL = 600
KILL_AFTER = 200


async def test_kill_one_master_while_sending(
    rocketmq_two_masters: LocalCluster, unique_topic: str
) -> None:
    cluster = rocketmq_two_masters
    acked: list[SendResult] = []
    failed: list[SendFailed] = []
    async with Producer(
        namesrv=cluster.namesrv_addr,
        group="G_failover",
        options=ProducerOptions(latency_fault_tolerance=True),
    ) as producer:
        hosts = await create_topic(
            producer.instance, unique_topic, queues=4, timeout=FRESH_BROKER_TIMEOUT
        )
        assert len(hosts) == 2
        for i in range(TOTAL):
            if i == KILL_AFTER:
                await anyio.to_thread.run_sync(cluster.kill_broker, "broker-b")
            try:
                acked.append(
                    await producer.send(Message(topic=unique_topic, body=f"m{i}".encode()))
                )
            except SendFailed as exc:
                failed.append(exc)
        before, after = acked[:KILL_AFTER], acked[KILL_AFTER:]
        assert {r.queue.broker_name for r in before} == {"broker-a", "broker-b"}
        # every send after the kill that was acknowledged went to the survivor
        assert {r.queue.broker_name for r in after} == {"broker-a"}
        assert len(failed) <= 5, [str(f) for f in failed]  # in-flight at the kill, at most
        assert all(f.outcome_unknown or f.retriable for f in failed)

        await anyio.to_thread.run_sync(cluster.restart_broker, "broker-b")
        received: set[str] = set()
        for queue in sorted({r.queue for r in acked}):
            expect = sum(1 for r in acked if r.queue == queue)
            got = await pull(producer.instance, queue, expect=expect, timeout=30)
            received |= {m.msg_id for m in got}
        missing = {r.msg_id for r in acked} - received
        assert missing == set(), f"{len(missing)} acknowledged messages lost"
    assert len(acked) + len(failed) == TOTAL


async def test_a_dead_master_never_pauses_sends_to_the_live_one(
    rocketmq_two_masters: LocalCluster, unique_topic: str
) -> None:
    """Four senders; one of two masters killed: a send whose broker is gone fails over at once
    (before: every send stalled about 3 s on the reconnect, those to the live master too).
    The longest gap between successful sends after the kill stays under two send_timeouts: on
    a quiet machine it is a small part of one, and CI, with three sessions and their brokers
    on two cores, has paused every send for about one send_timeout at the kill."""
    cluster = rocketmq_two_masters
    send_timeout = 1.0
    successes: list[tuple[float, str]] = []
    killed_at = 0.0
    stop, warmed_up = anyio.Event(), anyio.Event()
    async with Producer(
        namesrv=cluster.namesrv_addr,
        group="G_failover_gap",
        options=ProducerOptions(send_timeout=send_timeout),
    ) as producer:
        hosts = await create_topic(
            producer.instance, unique_topic, queues=4, timeout=FRESH_BROKER_TIMEOUT
        )
        assert len(hosts) == 2

        async def sender(n: int) -> None:
            i = 0
            while not stop.is_set():
                i += 1
                try:
                    result = await producer.send(
                        Message(topic=unique_topic, body=f"{n}-{i}".encode())
                    )
                except SendFailed:
                    continue
                successes.append((time.monotonic(), result.queue.broker_name))
                if len(successes) >= 200:
                    warmed_up.set()

        async with anyio.create_task_group() as tg:
            for n in range(4):
                tg.start_soon(sender, n)
            with anyio.fail_after(30):
                await warmed_up.wait()
            killed_at = time.monotonic()
            await anyio.to_thread.run_sync(cluster.kill_broker, "broker-b")
            await anyio.sleep(5.0)  # five seconds of sending with one master dead
            stop.set()
    after = [t for t, broker in successes if t > killed_at and broker == "broker-a"]
    gaps = [b - a for a, b in zip([killed_at, *after], after, strict=False)]
    longest = max(gaps)
    structlog.get_logger("tests.producer").info(
        "failover.longest_gap", seconds=round(longest, 3), sends_after_kill=len(after)
    )
    assert len(after) > 100
    assert longest < 2 * send_timeout, longest
