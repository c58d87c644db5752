"""NameServer failover and route caching against fake NameServers (faults on demand)."""

from __future__ import annotations

import json

import anyio
import pytest

from rocketmq_actors.cluster.namesrv import NameServerClient, parse_namesrv
from rocketmq_actors.cluster.routes import RouteTable, TopicRoute
from rocketmq_actors.errors import BrokerError, NameServerUnavailable, TopicNotFound
from rocketmq_actors.protocol.bodies import MessageQueue, TopicRouteData
from rocketmq_actors.protocol.codes import ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.runtime.pool import ConnectionPool
from rocketmq_actors.runtime.supervisor import RestartPolicy
from rocketmq_actors.testing.fakeserver import FakePeer, FakeServer, Handler

FAST = RestartPolicy(max_restarts=1, period=10, backoff_initial=0.01, backoff_max=0.02)


def _route_body(*brokers: tuple[str, int, int]) -> bytes:
    """brokers: (name, write queues, perm)."""
    return json.dumps(
        {
            "brokerDatas": [
                {"brokerName": n, "cluster": "C", "brokerAddrs": {"0": f"10.0.0.{i}:10911"}}
                for i, (n, _, _) in enumerate(brokers)
            ],
            "queueDatas": [
                {"brokerName": n, "readQueueNums": q, "writeQueueNums": q, "perm": p}
                for n, q, p in brokers
            ],
        }
    ).encode()


class FakeNameServer:
    def __init__(self, name: str) -> None:
        self.name = name
        self.calls = 0
        self.up = True
        self.missing = {"missing"}

    async def __call__(self, peer: FakePeer, cmd: RemotingCommand) -> None:
        self.calls += 1
        if not self.up:
            await peer.close()
            return
        topic = cmd.ext_fields.get("topic", "")
        if topic in self.missing:
            await peer.reply(cmd, ResponseCode.TOPIC_NOT_EXIST, remark="no route")
        else:
            await peer.reply(cmd, ResponseCode.SUCCESS, body=_route_body((self.name, 4, 6)))


def test_parse_namesrv() -> None:
    assert parse_namesrv("a:1; b:2;") == ("a:1", "b:2")
    assert parse_namesrv(["a:1"]) == ("a:1",)
    for bad in ("", ";", "a", "a:b", "a:70000"):
        with pytest.raises(ValueError):
            parse_namesrv(bad)


async def test_sticky_failover_and_cooldown() -> None:
    now = [0.0]
    one, two = FakeNameServer("one"), FakeNameServer("two")
    async with FakeServer(one) as s1, FakeServer(two) as s2, ConnectionPool(policy=FAST) as pool:
        client = NameServerClient(pool, [s1.addr, s2.addr], timeout=2, cooldown=10,
                                  clock=lambda: now[0])  # fmt: skip
        client._current = 0
        for _ in range(3):
            assert (await client.topic_route("t")).broker_datas[0].broker_name == "one"
        assert (one.calls, two.calls) == (3, 0)  # sticky
        one.up = False
        assert (await client.topic_route("t")).broker_datas[0].broker_name == "two"
        one.up = True
        await client.topic_route("t")
        assert client.current == s2.addr  # stays on the one that answered
        two.up = False
        now[0] = 5.0  # s1 still cooling down, but it is the last resort and answers
        assert (await client.topic_route("t")).broker_datas[0].broker_name == "one"


async def test_all_down_is_name_server_unavailable() -> None:
    down = FakeNameServer("x")
    down.up = False
    async with FakeServer(down) as s1, ConnectionPool(policy=FAST, connect_timeout=1) as pool:
        client = NameServerClient(pool, f"{s1.addr};127.0.0.1:1", timeout=1)
        with pytest.raises(NameServerUnavailable) as info:
            await client.topic_route("t")
        assert info.value.retriable


async def test_route_table_serves_cached_routes_while_name_servers_are_down() -> None:
    ns = FakeNameServer("b")
    async with FakeServer(ns) as server, ConnectionPool(policy=FAST) as pool:
        routes = RouteTable(NameServerClient(pool, server.addr, timeout=1))
        first = await routes.get("t")
        ns.up = False
        assert await routes.refresh("t") is first  # the NameServer is gone: cached route
        assert await routes.get("t") is first
        with pytest.raises(NameServerUnavailable):
            await routes.get("never-seen")
        ns.up = True
        with pytest.raises(TopicNotFound):
            await routes.get("missing")


async def test_a_missing_topic_without_a_template_is_named_not_the_template() -> None:
    ns = FakeNameServer("b")
    async with FakeServer(ns) as server, ConnectionPool(policy=FAST) as pool:
        routes = RouteTable(NameServerClient(pool, server.addr, timeout=1))
        ns.missing = {"orders", "TBW102"}  # (a broker with autoCreateTopicEnable off)
        with pytest.raises(TopicNotFound) as info:
            await routes.get("orders", template="TBW102")
        assert info.value.topic == "orders"
        assert str(info.value).startswith("no route for topic 'orders', nor for 'TBW102'")


async def test_concurrent_gets_share_one_lookup() -> None:
    ns = FakeNameServer("b")
    async with FakeServer(ns) as server, ConnectionPool(policy=FAST) as pool:
        routes = RouteTable(NameServerClient(pool, server.addr, timeout=2))
        async with anyio.create_task_group() as tg:
            for _ in range(10):
                tg.start_soon(routes.get, "t")
        assert ns.calls == 1


def test_queue_views_follow_the_java_client() -> None:
    data = TopicRouteData.decode(_route_body(("b", 2, 6), ("a", 3, 6), ("ro", 2, 4)))
    route = TopicRoute.from_data("t", data)
    # publish: sorted by broker name, writable brokers with a master only
    assert route.publish_queues == tuple(
        [MessageQueue("t", "a", i) for i in range(3)]
        + [MessageQueue("t", "b", i) for i in range(2)]
    )
    assert len(route.subscribe_queues) == 7 and route.subscribe_queues == tuple(
        sorted(route.subscribe_queues)
    )
    ordered = TopicRouteData.decode(
        json.dumps({"orderTopicConf": "b:2;a:1", "queueDatas": [], "brokerDatas": []}).encode()
    )
    assert TopicRoute.from_data("t", ordered).publish_queues == (
        MessageQueue("t", "b", 0),
        MessageQueue("t", "b", 1),
        MessageQueue("t", "a", 0),
    )


def _nodes(addrs: dict[str, str]) -> Handler:
    """A NameServer whose every route is broker ``b`` with these nodes (id -> address)."""

    async def answer(peer: FakePeer, cmd: RemotingCommand) -> None:
        body = {
            "brokerDatas": [{"brokerName": "b", "cluster": "C", "brokerAddrs": addrs}],
            "queueDatas": [{"brokerName": "b", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6}],
        }  # fmt: skip
        await peer.reply(cmd, ResponseCode.SUCCESS, body=json.dumps(body).encode())

    return answer


async def test_broker_addr_falls_back_to_a_slave_only_for_pulls() -> None:
    """Master gone: pulls may go to a slave, offsets and send-backs must not."""

    slave_only = _nodes({"1": "10.0.0.9:10911", "2": "10.0.0.8:10911"})
    async with FakeServer(slave_only) as server, ConnectionPool(policy=FAST) as pool:
        routes = RouteTable(NameServerClient(pool, server.addr, timeout=2))
        queue = MessageQueue("t", "b", 0)
        assert await routes.broker_addr(queue, master_only=False) == "10.0.0.9:10911"
        with pytest.raises(BrokerError, match="no master"):
            await routes.broker_addr(queue, master_only=True)


async def test_broker_addr_follows_the_node_a_pull_was_told_to_use() -> None:
    """suggestWhichBrokerId (Java's updatePullFromWhichNode): the suggested node when it
    exists, else the master, else a slave; never for what must go to the master."""

    master_and_slave = _nodes({"0": "10.0.0.1:10911", "1": "10.0.0.9:10911"})
    async with FakeServer(master_and_slave) as server, ConnectionPool(policy=FAST) as pool:
        routes = RouteTable(NameServerClient(pool, server.addr, timeout=2))
        queue = MessageQueue("t", "b", 0)
        assert await routes.broker_addr(queue, master_only=False) == "10.0.0.1:10911"
        assert await routes.broker_addr(queue, master_only=False, broker_id=1) == "10.0.0.9:10911"
        assert await routes.broker_addr(queue, master_only=False, broker_id=7) == "10.0.0.1:10911"
        assert await routes.broker_addr(queue, master_only=True, broker_id=1) == "10.0.0.1:10911"


class SlowFirstAnswer:
    """Routes of ``t``: the first lookup's answer (broker ``old``) is held until ``release``
    is set; every later one answers at once with broker ``new``."""

    def __init__(self) -> None:
        self.release = anyio.Event()
        self.first_arrived = anyio.Event()
        self.lookups = 0

    async def __call__(self, peer: FakePeer, cmd: RemotingCommand) -> None:
        self.lookups += 1
        if self.lookups == 1:
            self.first_arrived.set()
            await self.release.wait()
            await peer.reply(cmd, ResponseCode.SUCCESS, body=_route_body(("old", 4, 6)))
        else:
            await peer.reply(cmd, ResponseCode.SUCCESS, body=_route_body(("new", 4, 6)))


async def test_an_older_lookup_answering_last_does_not_replace_a_newer_route() -> None:
    """The refresher's lookup and a caller's overlap; the one started first answers last
    (a busy NameServer): the route the later one brought stays."""
    ns = SlowFirstAnswer()
    async with FakeServer(ns) as server, ConnectionPool(policy=FAST) as pool:
        routes = RouteTable(NameServerClient(pool, server.addr, timeout=5))
        slow: list[TopicRoute] = []
        async with anyio.create_task_group() as tg:

            async def first() -> None:
                slow.append(await routes.refresh("t"))

            tg.start_soon(first)
            with anyio.fail_after(5):
                await ns.first_arrived.wait()
            newer = await routes.refresh("t")
            assert set(newer.brokers) == {"new"}
            ns.release.set()
        assert routes.cached("t") is newer
        assert set(slow[0].brokers) == {"new"}  # the late caller is given the newer route too
