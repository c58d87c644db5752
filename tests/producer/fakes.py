"""Fake brokers and set-ups the producer's tests share (fakes for what a real broker cannot
be made to do on demand: hold a send's answer, or never give it)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Protocol

import anyio

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.producer import Producer, ProducerOptions, SendFuture
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.testing.fakeserver import FakePeer, FakeServer, route_body


class Calls:
    """A send callback that keeps the futures it was called with, and a wait for ``count``
    of them (callbacks run soon after their sends end, not by the time ``flush`` returns)."""

    def __init__(self) -> None:
        self.futures: list[SendFuture] = []
        self.done_when_called: list[bool] = []  # (asserted by the tests: not in here, where
        self._changed = anyio.Event()  # an AssertionError would only be logged)

    def __call__(self, future: SendFuture) -> None:
        self.done_when_called.append(future.done())
        self.futures.append(future)
        self._changed.set()
        self._changed = anyio.Event()

    async def until(self, count: int, *, within: float = 10.0) -> None:
        with anyio.fail_after(within):  # (a contract: sends that end call back soon)
            while len(self.futures) < count:
                await self._changed.wait()


class FakeCluster:
    """Answers as NameServer (route of any topic: one broker, itself) and as that broker."""

    def __init__(self, send_answer: str) -> None:
        self.send_answer = send_answer
        self.sends = 0
        self.batches = 0  # SEND_BATCH_MESSAGE requests (answered as sends are)
        self.received = anyio.Event()  # (set by the first send or batch)
        self.addr = ""

    async def __call__(self, peer: FakePeer, cmd: RemotingCommand) -> None:
        if cmd.code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
            await peer.reply(cmd, body=route_body(("fake", self.addr)))
        elif cmd.code in (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE):
            if cmd.code == RequestCode.SEND_BATCH_MESSAGE:
                self.batches += 1
            else:
                self.sends += 1
            self.received.set()
            if self.send_answer == "busy":
                await peer.reply(cmd, ResponseCode.SYSTEM_BUSY, remark="busy")
            elif self.send_answer == "illegal":
                await peer.reply(cmd, ResponseCode.MESSAGE_ILLEGAL, remark="no")
            elif self.send_answer == "ok":  # stored (a batch's ids: none, as a broker may)
                await peer.reply(cmd, ext_fields={"msgId": "", "queueId": "0", "queueOffset": "0"})
            else:  # stall
                await anyio.sleep_forever()
        else:
            await peer.reply(cmd)


class GatedCluster:
    """NameServer (the route of any topic: one broker, itself) and that broker; route
    lookups of topic T wait for ``routes_open``, sends for ``sends_open``."""

    def __init__(self) -> None:
        self.addr = ""
        self.routes_open = anyio.Event()
        self.sends_open = anyio.Event()
        self.sends = 0
        self.arrived = anyio.Event()

    async def __call__(self, peer: FakePeer, cmd: RemotingCommand) -> None:
        if cmd.code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
            if cmd.ext_fields.get("topic") == "T":
                await self.routes_open.wait()
            await peer.reply(cmd, body=route_body(("fake", self.addr)))
        elif cmd.code == RequestCode.SEND_MESSAGE_V2:
            self.sends += 1
            self.arrived.set()
            self.arrived = anyio.Event()
            await self.sends_open.wait()
            ext = {"msgId": "AB", "queueId": cmd.ext_fields.get("e", "0"), "queueOffset": "1"}
            await peer.reply(cmd, ext_fields=ext)
        else:
            await peer.reply(cmd)

    async def wait_sends(self, count: int) -> None:
        while self.sends < count:
            await self.arrived.wait()


class _Fake(Protocol):
    addr: str

    async def __call__(self, peer: FakePeer, cmd: RemotingCommand) -> None: ...


@asynccontextmanager
async def on_shared_instance(fake: _Fake) -> AsyncIterator[Producer]:
    """A started producer (group G, send_timeout 30 s, shutdown_timeout 0.5 s) on a client
    instance of its own against ``fake``. The instance's connection stays open when the
    producer stops (another client may use it), so no connection loss ends its sends."""
    async with FakeServer(fake) as server:
        fake.addr = server.addr
        async with ClientInstance(server.addr) as instance:
            producer = Producer(
                group="G",
                options=ProducerOptions(send_timeout=30.0),
                client=ClientOptions(shutdown_timeout=0.5),
                instance=instance,
            )
            await producer.start()
            try:
                yield producer
            finally:
                await producer.stop()  # (idempotent: most tests stop it themselves)
