"""The null broker of ``benchmarks.nullbroker`` serves our client: one send and the pulls of a
small backlog go through it, so the client-bound benchmark cannot rot unnoticed."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from typing import Any

import anyio
import pytest

from benchmarks.nullbroker import NullBroker, null_broker, pin_layout
from benchmarks.producer import nowait_window
from rocketmq_actors.consumer.pull import OffsetReset, PullConsumer, PullOptions
from rocketmq_actors.producer import Message, Producer, ProducerOptions
from rocketmq_actors.producer.result import SendStatus

# needs Java and the cached jars, not the session cluster; the same on every broker version
pytestmark = [pytest.mark.integration, pytest.mark.once]

QUEUES = 2
BACKLOG = 5  # messages per queue


async def _send_and_pull(addr: str) -> tuple[Any, Any, dict[int, list[int]]]:
    async with Producer(namesrv=addr, group="null_broker_test") as producer:
        single = await producer.send(Message(topic="null_broker_topic", body=b"hello"))
        batch = await producer.send_batch(
            [Message(topic="null_broker_topic", body=b"x") for _ in range(3)]
        )
    async with Producer(
        namesrv=addr, group="null_broker_nowait", options=ProducerOptions(max_pending=8)
    ) as producer:
        # path b_pipelined_nowait_1k's driver: submit with max_pending as the window
        sent, seconds, latencies, failed = await nowait_window(producer, "null_broker_topic", 0.2)
        assert sent > 8 and failed == 0 and len(latencies) == sent and seconds >= 0.2
        # kept where a run of the garbage collector does not visit each one, in the measured
        # process (benchmarks.producer.Latencies): at most the array's type is visited
        assert len(gc.get_referents(latencies)) <= 1 < len(latencies)
        assert producer._group.senders.pending == 0  # (every future settled before it returned)
    offsets: dict[int, list[int]] = {}
    async with PullConsumer(
        group="null_broker_test_pull", topics=["null_broker_topic"], namesrv=addr,
        options=PullOptions(auto_offset_reset=OffsetReset.EARLIEST),
    ) as consumer:  # fmt: skip
        with anyio.fail_after(30):
            while sum(map(len, offsets.values())) < QUEUES * BACKLOG:
                for queue, records in (await consumer.getmany(timeout=1.0)).items():
                    for record in records:
                        assert record.body == b"x" * 1024
                        assert record.topic == "null_broker_topic"
                        offsets.setdefault(queue.queue_id, []).append(record.queue_offset)
    return single, batch, offsets


def test_one_send_a_batch_and_the_pulls_of_a_backlog_go_through_our_client() -> None:
    with NullBroker(queues=QUEUES, backlog=BACKLOG, pull_batch=4, hold_ms=100) as broker:
        single, batch, offsets = anyio.run(_send_and_pull, broker.addr)
        served = broker.stats()
    assert single.status is SendStatus.SEND_OK
    assert len(single.offset_msg_id) == 32
    assert len(batch) == 3
    assert len({result.offset_msg_id for result in batch}) == 3
    # every queue's backlog, each offset once, in order (pulls of 4, then 1)
    assert offsets == {queue: list(range(BACKLOG)) for queue in range(QUEUES)}
    assert {"105", "310", "320", "11"} <= set(served["requests"])
    assert served["unknown"] == {}


def _affinities(pid: int) -> set[frozenset[int]]:
    """The cores each thread of process ``pid`` may run on (threads that ended meanwhile
    left out)."""
    found = set()
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            found.add(frozenset(os.sched_getaffinity(int(tid))))
        except ProcessLookupError:
            continue
    return found


@pytest.mark.skipif(
    pin_layout(required=False) is None, reason="--pin needs sched_setaffinity and two cores"
)
def test_pinned_the_null_broker_has_a_core_and_the_clients_the_other() -> None:
    clients, broker_core = layout = pin_layout()
    assert clients != broker_core
    before = os.sched_getaffinity(0)
    with null_broker(layout, queues=1, backlog=1) as broker:
        assert broker.pid is not None
        assert os.sched_getaffinity(0) == {clients}
        assert len(os.listdir(f"/proc/{broker.pid}/task")) > 1  # (a JVM: many threads)
        assert _affinities(broker.pid) == {frozenset({broker_core})}
        # a process started now (as the Java client is) runs on the clients' core
        child = subprocess.run(
            [sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        assert child.stdout.strip() == str([clients])
        served = anyio.run(_one_send, broker.addr)
    assert served.status is SendStatus.SEND_OK
    assert os.sched_getaffinity(0) == before


async def _one_send(addr: str) -> Any:
    async with Producer(namesrv=addr, group="null_broker_pinned") as producer:
        return await producer.send(Message(topic="null_broker_topic", body=b"pinned"))
