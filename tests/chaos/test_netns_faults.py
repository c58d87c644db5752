"""Network partitions with real kernels: ``broker-b`` of a two-master cluster runs in a network
namespace (``topology``: :mod:`tests.chaos.netns_cluster`), reached over two veth pairs - one
the client dials (``brokerIP1``), one the broker reaches the NameServer over - so either path
can be cut alone while the other keeps working.

* client <-> broker-b, silent (a blackhole route: nothing comes back) and refused (an
  unreachable route: the client is told), while the NameServer still lists broker-b;
* broker-b <-> NameServer: the NameServer drops broker-b after its scan, the client's route
  follows, sends go on through broker-a;
* client <-> NameServer (a one-broker cluster whose NameServer runs in a namespace): sends go
  on from cached routes, the routes are fetched again after the heal.

A degraded path instead of a cut one (loss, delay, jitter, netem) is test_netns_loss.py's.
Every namespace, veth pair and route is the test's own, on 10.231.X.0/30, and is removed at
the end even when a test fails (the fixtures assert nothing of ours is left).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import anyio
import pytest
import structlog

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.producer import Producer, ProducerOptions, create_topic
from rocketmq_actors.testing.cluster import ClusterSpec, LocalCluster
from rocketmq_actors.testing.faults import QueueChecker
from rocketmq_actors.testing.serverconf import NetnsPlacement

from .conftest import ChaosReport
from .netns import Namespace, VethLink, leftovers
from .netns_cluster import Topology, namespace_or_skip
from .workload import Receipts, SendTimeline, produce_until

pytestmark = [pytest.mark.integration, pytest.mark.chaos, pytest.mark.slow, pytest.mark.chaos_full]

SEND_TIMEOUT = 2.0
FAULT = 15.0  # how long each partition lasts
HEAL_LIMIT = 30.0  # the bound for recovery after a fault heals (route refresh)


async def _partition_under_load(
    topo: Topology,
    topic: str,
    group: str,
    cut: Callable[[], None],
    heal: Callable[[], None],
    *,
    latency_fault_tolerance: bool = False,
    attempt_timeout: float | None = None,
) -> tuple[SendTimeline, QueueChecker, float, float]:
    """Sends under load; ``cut`` for FAULT seconds, then ``heal``; every acknowledged send
    consumed afterwards. Returns the timeline, the checker, and the cut and heal times."""
    checker, timeline, stop = QueueChecker(), SendTimeline(), anyio.Event()
    namesrv = topo.cluster.namesrv_addr
    async with (
        Producer(
            namesrv=namesrv,
            options=ProducerOptions(
                send_timeout=SEND_TIMEOUT,
                attempt_timeout=attempt_timeout,
                latency_fault_tolerance=latency_fault_tolerance,
            ),
        ) as producer,
        anyio.create_task_group() as tg,
    ):
        await create_topic(producer.instance, topic, queues=4)
        await _both_brokers(producer, topic)
        tg.start_soon(lambda: produce_until(producer, topic, checker, timeline, stop))
        await timeline.wait_oks_since(0.0, 50, timeout=30, broker="broker-b")
        cut_at = time.monotonic()
        cut()
        try:
            with anyio.move_on_after(FAULT):
                await stop.wait()  # the fault lasts FAULT seconds under load
        finally:
            healed_at = time.monotonic()
            heal()
        await timeline.wait_oks_since(healed_at, 20, timeout=HEAL_LIMIT + 10, broker="broker-b")
        stop.set()
    receipts = Receipts(checker)
    async with PushConsumer(
        group=group,
        subscriptions={topic: "*"},
        handler=receipts.handle,
        namesrv=namesrv,
        options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
    ):  # fmt: skip
        await receipts.wait_for_all_acknowledged(timeout=90)
    return timeline, checker, cut_at, healed_at


async def _both_brokers(producer: Producer, topic: str) -> None:
    """Until the topic's route has both masters (the NameServer is another process)."""
    with anyio.fail_after(30):
        while True:
            route = await producer.instance.routes.refresh(topic)
            if {q.broker_name for q in route.publish_queues} == {"broker-a", "broker-b"}:
                return
            await anyio.sleep(0.2)


def _record(
    report: ChaosReport,
    scenario: str,
    timeline: SendTimeline,
    checker: QueueChecker,
    cut_at: float,
    healed_at: float,
) -> tuple[float, float]:
    result = checker.check()
    outage = timeline.longest_gap(cut_at)
    recover = timeline.first_ok_since(healed_at, "broker-b")
    assert recover is not None
    row = report.record(scenario, result, outage_s=outage, recover_s=recover)
    structlog.get_logger("tests.chaos").info("chaos.netns.result", **row)
    assert result.lost == (), f"{len(result.lost)} acknowledged sends never consumed"
    assert result.unexpected == ()
    return outage, recover


# a quarter of the send timeout: a stalled attempt leaves time for the retries elsewhere
ATTEMPT_TIMEOUT = SEND_TIMEOUT / 4

SILENT_MODES = {
    "attempt-timeout": (False, ATTEMPT_TIMEOUT),
    "latency-fault-tolerance": (True, None),
    "default": (False, None),
}


@pytest.mark.parametrize("mode", list(SILENT_MODES))
async def test_client_broker_partition_silent(
    topology: Topology,
    unique_topic: str,
    unique_group: str,
    chaos_report: ChaosReport,
    mode: str,
) -> None:
    """broker-b's answers to the client vanish (the NameServer still lists it): sends on it
    end as outcome unknown within their timeout, the others succeed on broker-a. With
    latency_fault_tolerance the first timeout isolates broker-b; but until then every send
    in flight may sit on broker-b for a whole send timeout, so the send loop goes about one
    send timeout without an acknowledgement (and broker-b stays isolated for a while after
    the heal). With attempt_timeout instead, a stalled attempt is given up early and the
    send retried on broker-a: the target, less than one send timeout without an
    acknowledgement, is met, and broker-b takes sends again as soon as it answers. Without
    either (the default, as in Java) every other send still goes to broker-b and waits out
    its timeout."""
    isolate, attempt_timeout = SILENT_MODES[mode]
    ns, link = topology.ns, topology.to_client
    timeline, checker, cut_at, healed_at = await _partition_under_load(
        topology, unique_topic, unique_group,
        lambda: ns.blackhole(link), lambda: ns.unblackhole(link),
        latency_fault_tolerance=isolate, attempt_timeout=attempt_timeout,
    )  # fmt: skip
    label = {
        "attempt-timeout": "attempt_timeout",
        "latency-fault-tolerance": "latency_fault_tolerance",
        "default": "default producer",
    }[mode]
    outage, recover = _record(
        chaos_report, f"client-broker partition, silent (netns blackhole), {label}", timeline,
        checker, cut_at, healed_at,
    )  # fmt: skip
    assert timeline.oks_since(cut_at, "broker-a") > 0
    if attempt_timeout is not None:
        assert outage < SEND_TIMEOUT  # the target
    elif isolate:
        assert outage <= SEND_TIMEOUT + 0.5  # a healthy broker kept taking sends
    assert recover < HEAL_LIMIT


@pytest.mark.parametrize("bounded", [False, True], ids=["default", "attempt-timeout"])
async def test_client_broker_partition_refused(
    topology: Topology,
    unique_topic: str,
    unique_group: str,
    chaos_report: ChaosReport,
    bounded: bool,
) -> None:
    """The client's kernel refuses broker-b (an unreachable route): a new connection fails at
    once and the send retries on broker-a; requests already on the open connection get no
    answer (its segments cannot leave) and end as unknown within their timeout - or, with
    attempt_timeout, are given up early and sent on broker-a. The client goes back to
    broker-b soon after the route is healed."""
    ns, link = topology.ns, topology.to_client
    timeline, checker, cut_at, healed_at = await _partition_under_load(
        topology, unique_topic, unique_group,
        lambda: ns.unreachable(link), lambda: ns.reachable(link),
        attempt_timeout=ATTEMPT_TIMEOUT if bounded else None,
    )  # fmt: skip
    label = ", attempt_timeout" if bounded else ""
    outage, recover = _record(
        chaos_report, f"client-broker partition, refused (unreachable route){label}", timeline,
        checker, cut_at, healed_at,
    )  # fmt: skip
    assert outage < SEND_TIMEOUT if bounded else outage <= SEND_TIMEOUT + 0.5
    assert recover < HEAL_LIMIT


async def test_broker_namesrv_partition_drops_the_broker_from_routes(
    topology: Topology, unique_topic: str, unique_group: str, chaos_report: ChaosReport
) -> None:
    """broker-b cannot reach the NameServer: after its heartbeat timeout and the NameServer's
    scan the route loses broker-b; the client (routes refreshed every 5 s) follows, and every
    send succeeds throughout (broker-b still answers the client until then)."""
    ns, link = topology.ns, topology.to_namesrv
    checker, timeline, stop = QueueChecker(), SendTimeline(), anyio.Event()
    instance = ClientInstance(topology.cluster.namesrv_addr, route_refresh_interval=5)
    async with (
        instance,
        Producer(options=ProducerOptions(send_timeout=SEND_TIMEOUT), instance=instance) as producer,
        anyio.create_task_group() as tg,
    ):
        await create_topic(instance, unique_topic, queues=4)
        await _both_brokers(producer, unique_topic)
        tg.start_soon(lambda: produce_until(producer, unique_topic, checker, timeline, stop))
        await timeline.wait_oks_since(0.0, 50, timeout=30, broker="broker-b")
        cut_at = time.monotonic()
        ns.blackhole(link)
        try:
            await _until(lambda: "broker-b" not in _brokers(instance, unique_topic), 60)
            dropped_in = time.monotonic() - cut_at
        finally:
            healed_at = time.monotonic()
            ns.unblackhole(link)
        await _until(lambda: "broker-b" in _brokers(instance, unique_topic), HEAL_LIMIT + 10)
        back_in = time.monotonic() - healed_at
        await timeline.wait_oks_since(healed_at, 20, timeout=HEAL_LIMIT, broker="broker-b")
        stop.set()
    receipts = Receipts(checker)
    async with PushConsumer(
        group=unique_group,
        subscriptions={unique_topic: "*"},
        handler=receipts.handle,
        namesrv=topology.cluster.namesrv_addr,
        options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
    ):  # fmt: skip
        await receipts.wait_for_all_acknowledged(timeout=90)
    result = checker.check()
    row = chaos_report.record(
        "broker-NameServer partition (netns blackhole)", result, outage_s=timeline.longest_gap(
            cut_at), recover_s=back_in,
        note=f"the client's route dropped broker-b after {dropped_in:.1f} s",
    )  # fmt: skip
    structlog.get_logger("tests.chaos").info("chaos.netns.result", **row)
    assert result.sent["failed"] == result.sent["unknown"] == 0
    assert result.lost == () and result.unexpected == ()
    assert dropped_in < 10 + 5 + 5 + 10  # timeout, scan, client refresh, slack
    assert back_in < HEAL_LIMIT


async def _until(check: Callable[[], bool], limit: float) -> None:
    """Until ``check()`` (the route refresher is another task: its table is polled)."""
    with anyio.fail_after(limit):
        while True:
            if check():
                return
            await anyio.sleep(0.2)


def _brokers(instance: ClientInstance, topic: str) -> set[str]:
    route = instance.routes.cached(topic)
    return set() if route is None else {q.broker_name for q in route.publish_queues}


@pytest.fixture
def namesrv_in_netns(
    request: pytest.FixtureRequest,
) -> Iterator[tuple[LocalCluster, str, Namespace, VethLink]]:
    """A one-broker cluster whose NameServer runs in a namespace with two veth pairs: the
    broker and the launcher dial it over one, the client over the other (so the client's
    path alone can be cut). Yields the cluster, the client's NameServer address, the
    namespace and the client's link."""
    ns = namespace_or_skip()
    try:
        to_servers, to_client = ns.add_link(), ns.add_link()
        spec = ClusterSpec(
            version=request.config.getoption("--rocketmq-version"),
            netns={"namesrv": NetnsPlacement(netns=ns.name, listen_ip=to_servers.ns_ip)},
        )
        cluster = LocalCluster(spec)
        cluster.start()
        try:
            port = cluster.servers["namesrv"].port
            yield cluster, f"{to_client.ns_ip}:{port}", ns, to_client
        finally:
            cluster.stop(graceful=False)
    finally:
        ns.close()
        assert leftovers([ns.name]) == [], "network namespaces or links left behind"


async def test_client_namesrv_partition_sends_go_on_from_cached_routes(
    namesrv_in_netns: tuple[LocalCluster, str, Namespace, VethLink],
    unique_topic: str,
    unique_group: str,
    chaos_report: ChaosReport,
) -> None:
    """The NameServer's answers to the client vanish (the broker still registers): every
    send succeeds on the cached route, the route refreshes (every 5 s) fail quietly, and the
    first refresh after the heal fetches the route again."""
    _, namesrv, ns, link = namesrv_in_netns
    checker, timeline, stop = QueueChecker(), SendTimeline(), anyio.Event()
    instance = ClientInstance(namesrv, route_refresh_interval=5)
    async with (
        instance,
        Producer(options=ProducerOptions(send_timeout=SEND_TIMEOUT), instance=instance) as producer,
        anyio.create_task_group() as tg,
    ):
        await create_topic(instance, unique_topic, queues=4)
        await instance.routes.refresh(unique_topic)
        tg.start_soon(lambda: produce_until(producer, unique_topic, checker, timeline, stop))
        await timeline.wait_oks_since(0.0, 50, timeout=30)
        cut_at = time.monotonic()
        ns.blackhole(link)
        try:
            with anyio.move_on_after(FAULT):
                await stop.wait()  # the fault lasts FAULT seconds under load
            stale_for = instance.routes.age(unique_topic) or 0.0
        finally:
            healed_at = time.monotonic()
            ns.unblackhole(link)
        await _until(lambda: (instance.routes.age(unique_topic) or 0.0) < 1.0, HEAL_LIMIT + 10)
        refreshed_in = time.monotonic() - healed_at
        stop.set()
    receipts = Receipts(checker)
    async with PushConsumer(
        group=unique_group,
        subscriptions={unique_topic: "*"},
        handler=receipts.handle,
        namesrv=namesrv,
        options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
    ):  # fmt: skip
        await receipts.wait_for_all_acknowledged(timeout=90)
    result = checker.check()
    row = chaos_report.record(
        "client-NameServer partition (netns blackhole)", result,
        outage_s=timeline.longest_gap(cut_at), recover_s=refreshed_in,
        note=f"routes served from the cache, {stale_for:.0f} s old at the heal",
    )  # fmt: skip
    structlog.get_logger("tests.chaos").info("chaos.netns.result", **row)
    assert stale_for > 5 + 5  # the refreshes during the partition did fail
    assert result.sent["failed"] == result.sent["unknown"] == 0
    assert result.lost == () and result.unexpected == ()
    assert timeline.longest_gap(cut_at) < SEND_TIMEOUT
    assert refreshed_in < HEAL_LIMIT, refreshed_in
