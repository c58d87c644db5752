"""Timeouts are deadlines, and hostile routes fail one topic, never the producer (fake peers:
a broker cannot be told to go silent, stop reading or announce nonsense routes)."""

from __future__ import annotations

import math
import socket
import time
import tracemalloc
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
import pytest

from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.errors import (
    ConfigError,
    NameServerUnavailable,
    SendFailed,
    WriteTimeout,
)
from rocketmq_actors.producer import Message, Producer, ProducerOptions
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.testing.fakeserver import FakePeer, FakeServer, route_body
from tests.slack import slack


class NameServer:
    """Answers the start-up probe (TBW102: no such topic) and routes from ``routes``; a topic
    it has no route for is never answered (a silent NameServer)."""

    def __init__(self, routes: dict[str, bytes] | None = None) -> None:
        self.routes = routes if routes is not None else {}

    async def __call__(self, peer: FakePeer, cmd: RemotingCommand) -> None:
        if cmd.code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
            topic = cmd.ext_fields.get("topic", "")
            if topic == "TBW102":
                await peer.reply(cmd, ResponseCode.TOPIC_NOT_EXIST)
            elif topic in self.routes:
                await peer.reply(cmd, body=self.routes[topic])
            else:
                await anyio.sleep_forever()  # silent
        else:
            await peer.reply(cmd)


class Broker:
    """A broker that answers sends (``answer``: "ok"), drops the connection on them ("drop"),
    or never answers ("stall")."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.sends = 0

    async def __call__(self, peer: FakePeer, cmd: RemotingCommand) -> None:
        if cmd.code != RequestCode.SEND_MESSAGE_V2:
            await peer.reply(cmd)
            return
        self.sends += 1
        if self.answer == "ok":
            ext = {"msgId": "AB", "queueId": cmd.ext_fields.get("e", "0"), "queueOffset": "1"}
            await peer.reply(cmd, ext_fields=ext)
        elif self.answer == "drop":
            await peer.close()
        else:
            await anyio.sleep_forever()


@asynccontextmanager
async def _serving(handler: Callable[..., Any]) -> AsyncIterator[FakeServer]:
    async with FakeServer(handler) as server:
        yield server


async def _sends_all_on(producer: Producer, broker: str, count: int, within: float) -> None:
    """``count`` sends to topic T, each of which must end on ``broker`` within ``within``
    seconds (plus the slack of the machine's scheduling delay meanwhile)."""
    for i in range(count):
        began = time.monotonic()
        result = await producer.send(Message(topic="T", body=b"%d" % i))
        took = time.monotonic() - began
        assert took < within + slack(began), (i, took)
        assert result.queue.broker_name == broker


async def test_send_timeout_bounds_a_route_lookup_on_silent_nameservers() -> None:
    """Before: 1.0 s and two silent NameServers gave 6.0 s (3 s a NameServer)."""
    async with (
        _serving(NameServer()) as ns1,
        _serving(NameServer()) as ns2,
        Producer(
            namesrv=[ns1.addr, ns2.addr], group="G", options=ProducerOptions(send_timeout=1.0)
        ) as p,
    ):
        for _ in range(3):
            began = time.monotonic()
            with pytest.raises(SendFailed) as info:
                await p.send(Message(topic="T", body=b"x"))
            took = time.monotonic() - began
            assert took < 1.0 + slack(began), took
            assert isinstance(info.value.attempts[-1], NameServerUnavailable)
            assert not info.value.outcome_unknown  # nothing reached a broker


async def test_a_dropped_connection_fails_over_at_once_and_the_deadline_holds() -> None:
    """Before: a send whose broker was reconnecting waited for the reconnect (2.0 s gave up to
    4.8 s); now it fails over to the other broker at once."""
    dropping, serving = Broker("drop"), Broker("ok")
    async with _serving(dropping) as bad, _serving(serving) as good:
        routes = {"T": route_body(("broker-a", bad.addr), ("broker-b", good.addr))}
        async with (
            _serving(NameServer(routes)) as ns,
            Producer(
                namesrv=ns.addr, group="G", options=ProducerOptions(send_timeout=2.0)
            ) as producer,
        ):
            # never waits for broker-a's reconnect (the bug waited up to 4.8 s): well within
            # the send timeout (2.0 s), each send goes to broker-b
            await _sends_all_on(producer, "broker-b", 20, within=0.5)
            assert dropping.sends >= 1  # it was tried, and dropped the connection
        async with (
            _serving(NameServer({"T": route_body(("broker-a", bad.addr))})) as ns,
            Producer(
                namesrv=ns.addr, group="G", options=ProducerOptions(send_timeout=2.0)
            ) as alone,
        ):
            outcomes = []
            for _ in range(3):  # no broker to fail over to: it waits for the reconnect
                began = time.monotonic()  # (within the deadline), and the next one too
                with pytest.raises(SendFailed) as info:
                    await alone.send(Message(topic="T", body=b"x"))
                assert time.monotonic() - began < 2.0 + slack(began)
                outcomes.append(info.value.outcome_unknown)
            assert outcomes[0]  # the first attempt was written, then dropped


@contextmanager
def never_reading() -> Iterator[str]:
    """The address of a peer that stops reading: a listening socket nobody accepts on (the
    kernel completes connections and buffers a few MiB, then takes nothing more)."""
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        yield f"127.0.0.1:{listening.getsockname()[1]}"


async def test_send_oneway_to_a_broker_that_stops_reading_has_a_write_deadline() -> None:
    """Before: send_oneway waited for ever on a broker that stopped reading."""
    with never_reading() as broker:
        async with (
            _serving(NameServer({"T": route_body(("broker-a", broker))})) as ns,
            Producer(
                namesrv=ns.addr,
                group="G",
                options=ProducerOptions(send_timeout=1.0, compress_threshold=8 * 1024 * 1024),
            ) as producer,
        ):
            body = b"z" * (1024 * 1024)
            with anyio.fail_after(60):
                for _ in range(200):  # the kernel takes a few MiB, then nothing more
                    began = time.monotonic()
                    try:
                        await producer.send_oneway(Message(topic="T", body=body))
                    except SendFailed as exc:
                        assert isinstance(exc.attempts[-1], WriteTimeout)
                        assert not exc.outcome_unknown  # it was not written
                        assert time.monotonic() - began < 1.0 + slack(began)
                        break
                else:  # pragma: no cover
                    pytest.fail("200 MiB were taken by a peer that reads nothing")


@pytest.mark.parametrize("bad", [math.nan, math.inf, -1.0, 0.0])
async def test_nan_infinite_or_negative_timeouts_are_refused(bad: float) -> None:
    with pytest.raises(ConfigError, match="send_timeout"):
        Producer(namesrv="127.0.0.1:1", options=ProducerOptions(send_timeout=bad))
    with pytest.raises(ConfigError, match="shutdown_timeout"):
        Producer(namesrv="127.0.0.1:1", client=ClientOptions(shutdown_timeout=bad))
    async with _serving(NameServer()) as ns, Producer(namesrv=ns.addr) as producer:
        with pytest.raises(ConfigError, match="timeout"):
            await producer.send(Message(topic="T", body=b"x"), timeout=bad)


async def test_hostile_routes_fail_their_topic_never_the_producer() -> None:
    """Before: a broker address such as ``x:99999`` made send() raise a raw ValueError and,
    about 30 s later, the heartbeat crash the producer; a route announcing 2^31-1 queues
    blocked the loop while memory passed 2 GiB."""
    serving = Broker("ok")
    async with _serving(serving) as good:
        routes = {
            "bad-address": route_body(("broker-x", "x:99999")),
            "huge": route_body(("broker-a", good.addr), queues=2**31 - 1),
            "fine": route_body(("broker-a", good.addr)),
        }
        async with (
            _serving(NameServer(routes)) as ns,
            Producer(
                namesrv=ns.addr, group="G", options=ProducerOptions(send_timeout=2.0)
            ) as producer,
        ):
            tracemalloc.start()
            try:
                for topic in ("bad-address", "huge"):
                    began = time.monotonic()
                    with pytest.raises(SendFailed) as info:
                        await producer.send(Message(topic=topic, body=b"x"))
                    assert time.monotonic() - began < 0.5 + slack(began)  # refused, not timed out
                    assert "bad" in str(info.value) and not info.value.retriable
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            assert peak < 20 * 1024 * 1024, peak  # bounded: the routes were refused whole
            result = await producer.send(Message(topic="fine", body=b"x"))
            assert result.queue.broker_name == "broker-a"
            await producer.instance.heartbeat.beat()  # the refused routes are not in its way
            assert producer.running and producer.instance.running


async def test_attempt_timeout_gives_a_silent_broker_up_and_sends_elsewhere() -> None:
    """broker-a takes sends and never answers. By default an attempt there may use the whole
    send_timeout (Java's rule), so the send fails, outcome unknown; with attempt_timeout each
    attempt is bounded and the send goes on to broker-b within it."""
    silent, serving = Broker("stall"), Broker("ok")
    async with _serving(silent) as bad, _serving(serving) as good:
        routes = {"T": route_body(("broker-a", bad.addr), ("broker-b", good.addr))}
        async with _serving(NameServer(routes)) as ns:
            async with Producer(
                namesrv=ns.addr, group="G", options=ProducerOptions(send_timeout=1.0)
            ) as java_like:
                failed = []
                for i in range(4):  # two of the four queues are broker-a's
                    try:
                        await java_like.send(Message(topic="T", body=b"%d" % i))
                    except SendFailed as exc:
                        failed.append(exc)
                assert failed and all(exc.outcome_unknown for exc in failed)
            tried = silent.sends
            # each send within one attempt's bound, not the send timeout (an attempt's bound
            # leaves broker-b time to answer on a busy machine: 1.0 s, not 0.3 s)
            async with Producer(
                namesrv=ns.addr,
                group="G",
                options=ProducerOptions(send_timeout=5.0, attempt_timeout=1.0),
            ) as bounded:
                await _sends_all_on(bounded, "broker-b", 8, within=1.0)
                assert silent.sends > tried  # broker-a was tried, and given up on


@pytest.mark.parametrize("attempt", [0.0, -1.0, math.nan, 2.5])
async def test_attempt_timeout_must_be_positive_and_within_send_timeout(attempt: float) -> None:
    with pytest.raises(ConfigError, match="attempt_timeout"):
        Producer(
            namesrv="127.0.0.1:9876",
            options=ProducerOptions(send_timeout=2.0, attempt_timeout=attempt),
        )
