"""Timer delivery is refused, before anything is written, when the broker runs 4.x."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from rocketmq_actors.cluster.routes import TopicRoute
from rocketmq_actors.errors import ConnectError, InvalidMessage, UnsupportedByBroker
from rocketmq_actors.producer import Message, Producer
from rocketmq_actors.producer.prepare import prepare
from rocketmq_actors.producer.selector import LatencyFaultTolerance
from rocketmq_actors.producer.sendloop import ROUND_ROBIN, Routing, SendLoop
from rocketmq_actors.protocol.bodies import MessageQueue, TopicRouteData
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.messages import UniqueIdGenerator
from rocketmq_actors.protocol.sendframe import SendFrameEncoder
from rocketmq_actors.testing.fakeserver import FakePeer, FakeServer, route_body


class _Heartbeat:
    """Each broker address's version (``versions``, else ``version``; None: unreachable)."""

    def __init__(self, version: int, versions: dict[str, int | None] | None = None) -> None:
        self.version = version
        self.versions = versions or {}
        self.asked: list[str] = []

    async def version_of(self, addr: str, timeout: float) -> int:
        self.asked.append(addr)
        version = self.versions.get(addr, self.version)
        if version is None:
            raise ConnectError(addr, "refused")
        return version


class _Instance:
    def __init__(self, version: int, versions: dict[str, int | None] | None = None) -> None:
        self.heartbeat = _Heartbeat(version, versions)


def _loop(
    version: int, versions: dict[str, int | None] | None = None
) -> tuple[SendLoop, _Heartbeat]:
    instance: Any = _Instance(version, versions)
    loop = SendLoop(instance, SendFrameEncoder("G"), send_timeout=3.0, retry_times=0,
                    faults=LatencyFaultTolerance(enabled=False))  # fmt: skip
    return loop, instance.heartbeat


async def test_a_4x_broker_is_refused_with_its_version() -> None:
    loop, heartbeat = _loop(407)
    with pytest.raises(UnsupportedByBroker, match=r"needs a RocketMQ 5.x broker; b:1 runs V4_9_7"):
        await loop.check_timer("b:1", 3.0)
    assert heartbeat.asked == ["b:1"]
    assert issubclass(UnsupportedByBroker, InvalidMessage)


async def test_a_5x_broker_takes_timer_messages() -> None:
    loop, _ = _loop(479)
    await loop.check_timer("b:1", 3.0)  # no error


@pytest.mark.parametrize(
    ("fields", "timer"),
    [({"delay_ms": 5}, True), ({"deliver_at_ms": 1}, True), ({"delay_level": 3}, False),
     ({}, False)],
)  # fmt: skip
def test_only_timer_fields_ask_for_the_check(fields: dict[str, Any], timer: bool) -> None:
    msg = Message(topic="T", body=b"x", **fields)
    prepared = prepare(msg, ids=UniqueIdGenerator(), namespace=None, max_size=1000,
                       compress_threshold=0, compress_level=5)  # fmt: skip
    assert prepared.timer is timer


V4, V5 = 407, 479  # V4_9_7, V5_3_3


def _route(*brokers: str) -> TopicRoute:
    """Brokers named ``a``, ``b``, ... whose masters are at ``a:1``, ``b:1``, ..., 2 queues each."""
    body = route_body(*((name, f"{name}:1") for name in brokers))
    return TopicRoute.from_data("T", TopicRouteData.decode(body))


async def test_a_timer_message_goes_to_a_5x_master_of_a_mixed_cluster() -> None:
    """Before: the send failed at once with UnsupportedByBroker when round robin picked the
    4.x master, although b runs 5.x."""
    loop, heartbeat = _loop(V4, {"b:1": V5})
    route = _route("a", "c", "b")
    chosen = [await loop.timer_queue(route, ROUND_ROBIN, q, 3.0) for q in route.publish_queues]
    assert {q.broker_name for q in chosen} == {"b"}
    assert {q.queue_id for q in chosen} == {0, 1}  # round robin among b's queues
    assert set(heartbeat.asked) == {"a:1", "b:1", "c:1"}


async def test_a_5x_master_keeps_its_queue() -> None:
    loop, heartbeat = _loop(V5)
    route = _route("a", "b")
    queue = MessageQueue("T", "a", 1)
    assert await loop.timer_queue(route, ROUND_ROBIN, queue, 3.0) is queue
    assert heartbeat.asked == ["a:1"]  # no other broker is asked


@pytest.mark.parametrize(
    "versions",
    [{"b:1": V4}, {"b:1": None}, {}],
    ids=["all 4.x", "the 5.x candidate unreachable", "one broker"],
)
async def test_refused_when_no_writable_master_runs_5x(versions: dict[str, int | None]) -> None:
    loop, _ = _loop(V4, versions)
    route = _route("a", "b") if versions else _route("a")
    with pytest.raises(UnsupportedByBroker, match="a:1 runs V4_9_7"):
        await loop.timer_queue(route, ROUND_ROBIN, MessageQueue("T", "a", 0), 3.0)


async def test_an_ordered_timer_message_keeps_its_queue_and_is_refused() -> None:
    loop, heartbeat = _loop(V4, {"b:1": V5})
    ordered = Routing(Message(topic="T", body=b"x", delay_ms=5), sharding_key="k")
    with pytest.raises(UnsupportedByBroker):
        await loop.timer_queue(_route("a", "b"), ordered, MessageQueue("T", "a", 0), 3.0)
    assert heartbeat.asked == ["a:1"]  # its key fixes the queue: no other broker can take it


class _FakeBroker:
    """A broker answering heartbeats as ``version`` and sends with SEND_OK."""

    def __init__(self, version: int) -> None:
        self.version = version
        self.sends = 0

    async def __call__(self, peer: FakePeer, cmd: RemotingCommand) -> None:
        if cmd.code == RequestCode.SEND_MESSAGE_V2:
            self.sends += 1
            ext = {"msgId": "AB", "queueId": cmd.ext_fields.get("e", "0"), "queueOffset": "1"}
            reply = cmd.response(ResponseCode.SUCCESS, ext_fields=ext)
        else:
            reply = cmd.response(ResponseCode.SUCCESS)
        reply.version = self.version
        await peer.send(reply)


async def test_timer_sends_through_the_producer_avoid_the_4x_master() -> None:
    """End to end against fake servers: NameServer, a 4.x master "a" and a 5.x master "b"."""
    old, new = _FakeBroker(V4), _FakeBroker(V5)
    async with FakeServer(old) as a, FakeServer(new) as b:
        body = route_body(("a", a.addr), ("b", b.addr))

        async def namesrv(peer: FakePeer, cmd: RemotingCommand) -> None:
            await peer.reply(cmd, body=body)

        async with FakeServer(namesrv) as ns, Producer(namesrv=ns.addr, group="G") as producer:
            with anyio.fail_after(10):
                for _ in range(4):
                    result = await producer.send(Message(topic="T", body=b"x", delay_ms=1000))
                    assert result.queue.broker_name == "b"
                    future = await producer.submit(Message(topic="T", body=b"y", delay_ms=1))
                    assert (await future).queue.broker_name == "b"
                await producer.send_oneway(Message(topic="T", body=b"z", delay_ms=1))
    assert old.sends == 0 and new.sends >= 8  # (the oneway may not have been read yet)
