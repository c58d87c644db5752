"""Chaos 6: cut, stall and delay between the client and the broker (through the fault proxy).
No request waits past its timeout, everything recovers, and the task and file-descriptor
counts return to their baselines."""

from __future__ import annotations

import time

import pytest

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.errors import RocketMQError, SendFailed
from rocketmq_actors.producer import Message, Producer, ProducerOptions, create_topic
from rocketmq_actors.testing.cluster import LocalCluster
from rocketmq_actors.testing.faults import FaultProxy
from tests.slack import slack

from .workload import fds_now, tasks_now

pytestmark = [pytest.mark.integration, pytest.mark.chaos, pytest.mark.slow]

TIMEOUT = 1.5


async def test_cut_stall_and_delay(rocketmq_cluster: LocalCluster, unique_topic: str) -> None:
    broker = rocketmq_cluster.broker("broker-a").addr
    baseline_tasks, baseline_fds = tasks_now(), fds_now()
    async with FaultProxy(rocketmq_cluster.namesrv_addr) as ns_proxy, FaultProxy(broker) as proxy:
        instance = ClientInstance(ns_proxy.addr, address_map={broker: proxy.addr})
        async with (
            instance,
            Producer(options=ProducerOptions(send_timeout=TIMEOUT), instance=instance) as producer,
        ):
            await create_topic(instance, unique_topic, queues=4)
            message = Message(topic=unique_topic, body=b"x")
            await producer.send(message)
            assert proxy.connections == 1  # the broker connection really goes through it

            # stall: the send ends as "outcome unknown" within its timeout, never hangs
            proxy.stall()
            began = time.monotonic()
            with pytest.raises(SendFailed) as info:
                await producer.send(message)
            assert time.monotonic() - began < TIMEOUT + slack(began)
            assert info.value.outcome_unknown
            proxy.resume()
            await producer.send(message)

            # cut with 100 sends in flight: every one settles, ok or typed, within its timeout
            futures = [await producer.submit(message) for _ in range(100)]
            proxy.cut()
            began = time.monotonic()
            settled = {"ok": 0, "error": 0}
            for future in futures:
                try:
                    await future
                    settled["ok"] += 1
                except RocketMQError:
                    settled["error"] += 1
            assert sum(settled.values()) == 100
            assert time.monotonic() - began < TIMEOUT + slack(began, wakeups=10)
            result = await producer.send(message)  # reconnected
            assert result.queue_offset >= 0

            # delay: slower, still correct
            proxy.set_delay(0.2)
            began = time.monotonic()
            await producer.send(message)
            assert 0.4 <= time.monotonic() - began < TIMEOUT
            proxy.set_delay(0)
    assert tasks_now() == baseline_tasks  # nothing outlives the client's task groups
    assert fds_now() <= baseline_fds
