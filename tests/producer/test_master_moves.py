"""A broker set's master moves (controller-mode failover): the producer follows the route to
the promoted node as soon as the NameServer names it, not at the next 30 s refresh."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.cluster.routes import STALE_REFRESH_SPACING
from rocketmq_actors.errors import SendFailed
from rocketmq_actors.producer import Message, Producer, ProducerOptions
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.testing.fakeserver import FakePeer, FakeServer
from tests.slack import slack

MESSAGE = Message(topic="T", body=b"x")


class MovingRoute:
    """A NameServer whose route of every topic is broker set ``b`` with ``nodes`` (id ->
    address); ``lookups`` counts route requests."""

    def __init__(self) -> None:
        self.nodes: dict[str, str] = {}
        self.lookups = 0
        self.looked_up = anyio.Event()  # set (and replaced) at every lookup

    async def __call__(self, peer: FakePeer, cmd: RemotingCommand) -> None:
        if cmd.code != RequestCode.GET_ROUTEINFO_BY_TOPIC:
            await peer.reply(cmd)
            return
        self.lookups += 1
        self.looked_up.set()
        self.looked_up = anyio.Event()
        body = {
            "brokerDatas": [{"brokerName": "b", "cluster": "C", "brokerAddrs": self.nodes}],
            "queueDatas": [{"brokerName": "b", "readQueueNums": 2, "writeQueueNums": 2, "perm": 6}],
        }  # fmt: skip
        await peer.reply(cmd, body=json.dumps(body).encode())


class Node:
    """A broker node: stores sends while it is master, answers SERVICE_NOT_AVAILABLE (what a
    slave answers to a write) otherwise."""

    def __init__(self, *, master: bool) -> None:
        self.master = master
        self.dying = False  # close every connection a send arrives on
        self.stored = 0

    async def __call__(self, peer: FakePeer, cmd: RemotingCommand) -> None:
        if cmd.code != RequestCode.SEND_MESSAGE_V2:
            await peer.reply(cmd)
        elif self.dying:
            await peer.close()
        elif not self.master:
            await peer.reply(cmd, ResponseCode.SERVICE_NOT_AVAILABLE, remark="slave")
        else:
            self.stored += 1
            ext = {"msgId": "AB", "queueId": cmd.ext_fields.get("e", "0"), "queueOffset": "1"}
            await peer.reply(cmd, ext_fields=ext)


async def _until_sent(producer: Producer, message: Message, within: float) -> float:
    """Send until one is stored; the seconds that took (failures count as downtime)."""
    began = time.monotonic()
    with anyio.fail_after(within):
        while True:
            try:
                await producer.send(message)
                return time.monotonic() - began
            except SendFailed:
                await anyio.sleep(0.05)  # the send loop of a client under load, paced


async def test_promoted_slave_takes_the_sends_within_seconds() -> None:
    namesrv, old, new = MovingRoute(), Node(master=True), Node(master=False)
    message = Message(topic="T", body=b"x")
    async with FakeServer(namesrv) as ns, FakeServer(old) as a, FakeServer(new) as b:
        namesrv.nodes = {"0": a.addr, "1": b.addr}
        # the periodic refresh is an hour away: only a marked-stale route can move in time
        instance = ClientInstance(ns.addr, route_refresh_interval=3600)
        async with (
            instance,
            Producer(options=ProducerOptions(send_timeout=1.0), instance=instance) as producer,
        ):
            await producer.send(message)
            assert old.stored == 1
            # the master dies: the NameServer drops it at once (its channel closed) ...
            old.master = False
            namesrv.nodes = {"1": b.addr}
            with pytest.raises(SendFailed):
                await producer.send(message)  # refused: the route is marked stale
            # ... and names the promoted node a moment later
            new.master = True
            namesrv.nodes = {"0": b.addr}
            began = time.monotonic()
            took = await _until_sent(producer, message, within=5 + 10)
            assert new.stored == 1
            assert took < 2 * STALE_REFRESH_SPACING + 1.0 + slack(began, floor=0.0), took
            assert instance.routes.cached("T") is not None
            assert instance.routes.cached("T").master_addr("b") == b.addr  # type: ignore[union-attr]


@asynccontextmanager
async def _one_master(send_timeout: float) -> AsyncIterator[tuple[MovingRoute, Node, Producer]]:
    """A NameServer routing T to one master node, and a producer that has sent to it once
    (the periodic route refresh an hour away)."""
    namesrv, node = MovingRoute(), Node(master=True)
    async with FakeServer(namesrv) as ns, FakeServer(node) as a:
        namesrv.nodes = {"0": a.addr}
        instance = ClientInstance(ns.addr, route_refresh_interval=3600)
        async with (
            instance,
            Producer(
                options=ProducerOptions(send_timeout=send_timeout), instance=instance
            ) as producer,
        ):
            await producer.send(MESSAGE)
            yield namesrv, node, producer


async def test_a_master_missing_from_the_route_is_looked_up_again_spaced() -> None:
    """Every failing send marks the route stale; the NameServer is asked at most once per
    STALE_REFRESH_SPACING, not once per send."""
    async with _one_master(send_timeout=1.0) as (namesrv, node, producer):
        message, instance = MESSAGE, producer.instance
        namesrv.nodes = {"1": namesrv.nodes["0"]}  # no master: the route still names one
        node.master = False
        lookups = namesrv.lookups
        began = time.monotonic()
        failures = 0
        while time.monotonic() - began < 2.5 * STALE_REFRESH_SPACING:
            with pytest.raises(SendFailed):
                await producer.send(message)
            failures += 1
            await anyio.sleep(0.01)  # pacing of the failing send loop
        assert instance.routes.cached("T").master_addr("b") is None  # type: ignore[union-attr]
        looked_up = namesrv.lookups - lookups
        assert 1 <= looked_up <= 4
        assert failures > looked_up  # (not a lookup per failing send)


async def test_a_lost_connection_marks_the_route_stale() -> None:
    """The master's connection dies under a send (its process killed): the route is looked
    up again at once, not at the next interval."""
    async with _one_master(send_timeout=1.0) as (namesrv, node, producer):
        message = MESSAGE
        next_lookup = namesrv.looked_up
        node.dying = True
        with pytest.raises(SendFailed):
            await producer.send(message)
        with anyio.fail_after(3):  # an hour before the periodic refresh
            await next_lookup.wait()


async def test_a_written_attempt_then_no_master_is_outcome_unknown() -> None:
    """The master dies under a send it may have stored (and replicated), and the route looked
    up again names no master yet: the send fails listing both attempts, outcome unknown, not
    "not stored" (the controller-failover chaos run received 15 such sends)."""
    async with _one_master(send_timeout=2.0) as (namesrv, node, producer):
        message = MESSAGE
        node.dying = True  # written, then the connection is gone: it may be stored
        namesrv.nodes = {"1": namesrv.nodes["0"]}  # and the standby is not master yet
        with pytest.raises(SendFailed) as info:
            await producer.send(message)
        attempts = info.value.attempts
        assert len(attempts) >= 2, attempts
        assert attempts[0].outcome_unknown and not attempts[-1].outcome_unknown
        assert "no writable queue" in str(attempts[-1])  # a route without a master
        assert info.value.outcome_unknown
        with pytest.raises(SendFailed) as again:  # nothing was written this time
            await producer.send(message)
        assert not again.value.outcome_unknown and len(again.value.attempts) == 1
