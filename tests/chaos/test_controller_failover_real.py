"""Automatic failover (5.x controller mode): ``kill -9`` the master of a two-node broker set
under load; the controller promotes the standby, the producer follows the route to it, and
with synchronous replication to the SyncStateSet every acknowledged send is consumed after.

The cluster: the controller embedded in the NameServer, ``broker-a`` as two nodes with
``enableControllerMode`` and ``allAckInSyncStateSet`` (``ClusterSpec(controller=True)``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import anyio
import pytest
import structlog

from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.producer import Producer, ProducerOptions, create_topic
from rocketmq_actors.testing import probe
from rocketmq_actors.testing.cluster import LocalCluster
from rocketmq_actors.testing.faults import QueueChecker

from ..controller_set import controller_set
from .conftest import ChaosReport
from .workload import Receipts, SendTimeline, produce_until

pytestmark = [pytest.mark.integration, pytest.mark.chaos, pytest.mark.slow, pytest.mark.chaos_full]

SEND_TIMEOUT = 3.0
# the promotion (the controller sees the master's channel close, elects the standby, which
# registers as id 0) plus the client's stale-route refresh; a bound, not a measurement
FOLLOW_LIMIT = 30.0


@pytest.fixture
def controller_cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    yield from controller_set(request, "controller mode (automatic failover)")


def _poll(check: Callable[[], bool], what: str, limit: float) -> None:
    """Ask the controller or NameServer (other processes: nothing to wait on) until
    ``check()`` is true, every 200 ms, failing after ``limit`` seconds."""
    deadline = time.monotonic() + limit
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {limit:.0f}s: {what}")
        time.sleep(0.2)


def in_sync(cluster: LocalCluster) -> bool:
    try:
        info = probe.replica_info(cluster.controller_addr, "broker-a")
    except probe.ProbeError:
        return False
    return info.master_addr is not None and len(info.sync_state_set) == 2


def master_in_route(namesrv: str, topic: str) -> str | None:
    try:
        route = probe.topic_route(namesrv, topic)
    except probe.ProbeError:
        return None
    for broker in route.broker_datas:
        if broker.broker_name == "broker-a":
            return broker.broker_addrs.get(0)
    return None


@pytest.mark.parametrize("attempt_timeout", [None, SEND_TIMEOUT / 4], ids=["default", "attempt"])
async def test_kill_9_master_the_standby_takes_over_without_loss(
    controller_cluster: LocalCluster,
    unique_topic: str,
    unique_group: str,
    chaos_report: ChaosReport,
    attempt_timeout: float | None,
) -> None:
    cluster = controller_cluster
    old_master = cluster.broker("broker-a").addr
    standby = cluster.broker("broker-a-s").addr
    # both nodes in the SyncStateSet: only then is an acknowledged send on both
    await anyio.to_thread.run_sync(
        lambda: _poll(lambda: in_sync(cluster), "broker-a's SyncStateSet has both nodes", 60)
    )
    checker, timeline, stop = QueueChecker(), SendTimeline(), anyio.Event()
    async with (
        Producer(
            namesrv=cluster.namesrv_addr,
            options=ProducerOptions(send_timeout=SEND_TIMEOUT, attempt_timeout=attempt_timeout),
        ) as producer,
        anyio.create_task_group() as tg,
    ):
        await create_topic(producer.instance, unique_topic, queues=4)
        tg.start_soon(lambda: produce_until(producer, unique_topic, checker, timeline, stop))
        await timeline.wait_oks_since(0.0, 300, timeout=60)
        killed_at = time.monotonic()
        await anyio.to_thread.run_sync(cluster.kill_broker, "broker-a")
        await anyio.to_thread.run_sync(
            lambda: _poll(
                lambda: master_in_route(cluster.namesrv_addr, unique_topic) == standby,
                "the NameServer names the standby broker-a's master",
                FOLLOW_LIMIT,
            )
        )
        promoted_in = time.monotonic() - killed_at
        await timeline.wait_oks_since(killed_at, 300, timeout=60)  # sends keep going
        stop.set()
    # (an acknowledgement may still arrive from the old master just after the kill began)
    gap_began, gap_ended = timeline.longest_gap_span(killed_at)
    outage, resumed_in = gap_ended - gap_began, gap_ended - killed_at
    receipts = Receipts(checker)
    async with PushConsumer(
        group=unique_group,
        subscriptions={unique_topic: "*"},
        handler=receipts.handle,
        namesrv=cluster.namesrv_addr,
        options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
    ):  # fmt: skip
        await receipts.wait_for_all_acknowledged(timeout=90)
    result = checker.check()
    scenario = "controller failover: kill -9 the master"
    row = chaos_report.record(
        scenario + (", attempt_timeout" if attempt_timeout else ""), result, recover_s=resumed_in,
        outage_s=outage, note=f"standby promoted and in the route after {promoted_in:.1f} s",
    )  # fmt: skip
    structlog.get_logger("tests.chaos").info("chaos.controller_failover.result", **row)
    assert old_master != standby
    assert result.lost == (), f"{len(result.lost)} acknowledged sends never consumed"
    assert result.unexpected == ()
    assert result.sent["ok"] >= 600
    assert resumed_in < FOLLOW_LIMIT
    # once the NameServer names the new master, the client follows within its stale-route
    # spacing (1 s) and one send timeout
    assert resumed_in - promoted_in < 1.0 + SEND_TIMEOUT + 1.0
